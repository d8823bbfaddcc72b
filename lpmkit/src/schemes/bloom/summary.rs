//! The /32 *summary* (beyond the paper; IPv6): the level hint of `hint.rs` grown into an
//! answer. Per listed /32 it holds, in one cache-line bucket, the answer of every route
//! of length 1…32 (the longest one covering the /32), the levels above /32 that hold a
//! key under it, and which of its sixteen /36s those keys lie in. A lookup whose /32 is
//! listed and whose /36 holds no longer route is answered by that one line: no filter,
//! no table. On bart IPv6 that is 91 % of the `v6match` keys (32 % of them have a /32
//! with longer routes, but only 9 % a /36 with one).
//!
//! **What a lookup does** ([`Summary::probe`]). The address's /32 is looked up:
//! * listed, its /36's bit clear: probe no level; the answer is the /32's (0: none, then
//!   the default route);
//! * listed, its /36's bit set: probe the levels the /32 names (only levels whose band
//!   lies above /32 — and the level that straddles /32 when it holds a /33… key under
//!   it), longest first as always; without a hit, the /32's answer;
//! * not listed: probe the levels whose band reaches /32 or below (`always`), as the
//!   level hint does; without a hit, the default route.
//!
//! **Invariants** (build and every patch keep them).
//! 1. A /32 under which a route longer than /32 lies is listed; its level bits include
//!    that route's level and its /36 bits every /36 the route meets.
//! 2. A listed /32's answer is the next hop of the longest route of length 1…32 covering
//!    it (0 if none).
//! 3. Every /32 under a route of length `lo..=32` is listed (`lo`: the shortest length
//!    expanded, chosen at build so that the listed /32s stay within `summary_max`; 1 for
//!    bart and LINX). /32s are never unlisted and bits never cleared (a stale bit costs a
//!    probe, never an answer); a listed /32 is answered exactly by (2), so listing more
//!    than (1) and (3) require is harmless.
//!
//! With (1), a /32 that is not listed has no key in the levels above /32 and the
//! `always` levels answer it exactly; with (1) and (2), a listed one is answered by its
//! levels above /32 and then its own answer, which is what the levels at or below /32
//! would have given.
//!
//! **Layout.** `buckets` lines of 64 bytes: four slots, each two 64-bit words — `A` =
//! `/32 << 32 | answer`, `B` = `/36 bits | level bits << 16 | LISTED` (bit 62); the last
//! slot's `B` carries the bucket's overflow flag (bit 63: a /32 whose home is this bucket
//! or an earlier one lies further on). A /32's home is a multiplicative hash scaled to
//! the bucket count; a full bucket sends it on to the next. At most half the slots are
//! used at build, three quarters before an update rebuilds instead.
//!
//! **Updates under readers.** Each word is written by one atomic store. A new slot's `A`
//! is stored first, then its `B` with `LISTED` (release; readers load `B` with acquire,
//! then `A`): a reader that sees the slot listed sees its answer. A /32 is listed with
//! the answer the table gave it before the patch (the `always` levels'), so listing
//! changes no answer; its answer then changes by one store in the patch's order (`Op::
//! Answer` in `writer.rs`: as a level below every level). Level and /36 bits are set
//! before any key of the patch is published, as the level hint's are.

use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::mem::TableBuf;

use crate::prefix::{Address, Prefix};
use crate::schemes::common::published;

/// Bits of the address a slot is keyed by.
pub(crate) const TOP_BITS: u8 = 32;
/// Bits below the /32 that select a slot's sub-block bit (16 /36s).
const SUB_BITS: u32 = 4;
/// Slots per bucket.
const SLOTS: usize = 4;
/// `B`: the slot holds a /32.
const LISTED: u64 = 1 << 62;
/// The last slot's `B`: the bucket overflowed.
const OVERFLOW: u64 = 1 << 63;
/// `B`: where the level bits start.
const LEVEL_SHIFT: u32 = 16;

/// One bucket: `A` words of the four slots, then their `B` words.
#[repr(align(64))]
struct Line([AtomicU64; 2 * SLOTS]);

/// What a listed /32 holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The next hop of the longest route of length 1…32 covering it (0: none).
    pub answer: u32,
    /// Levels above /32 (bit `i`: the table's level `i` in lookup order) with a key under it.
    pub levels: u32,
    /// Its /36s (bit `j`: the `j`-th) that such a key lies in.
    pub subs: u16,
}

impl Entry {
    fn b(self) -> u64 {
        self.subs as u64 | (self.levels as u64) << LEVEL_SHIFT | LISTED
    }
}

/// See the module docs.
pub(crate) struct Summary {
    /// The memory of the lines (huge pages when large: a lookup reads a random line, and
    /// in 4 KiB pages it would miss the TLB as well), reached only through `lines`.
    _buf: TableBuf<u64>,
    /// `buckets` lines, 64-byte aligned, zero-initialised, read and written atomically.
    lines: NonNull<Line>,
    buckets: u64,
    /// Levels probed for a /32 that is not listed.
    pub(crate) always: u32,
    /// Slots in use (written by the writer only).
    used: AtomicUsize,
}

// SAFETY: a `Summary` owns its lines (like a `Box<[Line]>`), and every access to them is
// atomic.
unsafe impl Send for Summary {}
// SAFETY: as above: shared access only loads and stores atomics.
unsafe impl Sync for Summary {}

impl core::fmt::Debug for Summary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Summary")
            .field("buckets", &self.buckets)
            .field("used", &self.len())
            .field("always", &format_args!("{:#x}", self.always))
            .finish()
    }
}

/// Bit `j` set if slot `j`'s `A` word names `top` (each word loaded atomically, then
/// compared four at a time: SSE2, part of x86-64). The loads only pick the candidate slot
/// (`Relaxed`); the caller reads its `B` with acquire and then its `A` again.
#[inline(always)]
fn matches(w: &[AtomicU64; 2 * SLOTS], top: u32) -> u32 {
    let a: [u64; SLOTS] = core::array::from_fn(|j| w[j].load(Ordering::Relaxed));
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; the intrinsics only work on
        // registers.
        unsafe {
            let lo = _mm_set_epi64x(a[1] as i64, a[0] as i64);
            let hi = _mm_set_epi64x(a[3] as i64, a[2] as i64);
            // The high halves (the /32s): lanes 1 and 3 of each.
            let tops = _mm_shuffle_ps::<0b11_01_11_01>(_mm_castsi128_ps(lo), _mm_castsi128_ps(hi));
            let eq = _mm_cmpeq_epi32(_mm_castps_si128(tops), _mm_set1_epi32(top as i32));
            _mm_movemask_ps(_mm_castsi128_ps(eq)) as u32
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        (0..SLOTS).fold(0, |m, j| m | (((a[j] >> 32) as u32 == top) as u32) << j)
    }
}

/// The /32 of `a` (IPv6).
#[inline(always)]
pub(crate) fn top_of<A: Address>(a: A) -> u32 {
    (a.to_u128() >> (A::BITS - TOP_BITS)) as u32
}

/// The /36 bits (of its /32) that a route longer than /32 meets.
pub(crate) fn subs_of<A: Address>(p: &Prefix<A>) -> u16 {
    debug_assert!(p.len() > TOP_BITS);
    let shift = A::BITS as u32 - TOP_BITS as u32 - SUB_BITS;
    let sub = |a: A| ((a.to_u128() >> shift) & ((1 << SUB_BITS) - 1)) as u32;
    let (f, l) = (sub(p.first()), sub(p.last()));
    // Bits f..=l.
    ((u32::MAX >> (31 - l)) & !((1u32 << f) - 1)) as u16
}

impl Summary {
    /// A summary of `entries` (`(/32, entry)`, /32s unique) at most half full, with the
    /// `always` levels.
    pub(crate) fn new(entries: &[(u32, Entry)], always: u32) -> Self {
        let buckets = (entries.len().div_ceil(SLOTS / 2)).max(1) as u64;
        let mut buf = TableBuf::<u64>::zeroed(buckets as usize * 2 * SLOTS);
        let lines = NonNull::new(buf.as_mut_ptr().cast::<Line>()).expect("a table buffer");
        let s = Summary {
            _buf: buf,
            lines,
            buckets,
            always,
            used: AtomicUsize::new(0),
        };
        for &(top, e) in entries {
            let ok = s.list(top, e);
            debug_assert!(ok, "a summary at most half full");
        }
        s
    }

    /// Listed /32s.
    pub(crate) fn len(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Buckets (cache lines).
    pub(crate) fn buckets(&self) -> u64 {
        self.buckets
    }

    /// The bucket where `top`'s search starts.
    #[inline(always)]
    pub(crate) fn home(&self, top: u32) -> usize {
        let h = (top as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32;
        ((h * self.buckets) >> 32) as usize
    }

    /// Bucket `b`'s line.
    #[inline(always)]
    fn line(&self, b: usize) -> &[AtomicU64; 2 * SLOTS] {
        assert!(b < self.buckets as usize);
        // SAFETY: `b < buckets`; the buffer holds `buckets` lines of 64 bytes, 64-byte
        // aligned (`TableBuf`), zeroed (a valid `Line`: atomics of 0), owned by `self`
        // and only ever accessed atomically.
        unsafe { &(*self.lines.as_ptr().add(b)).0 }
    }

    #[inline(always)]
    fn next(&self, b: usize) -> usize {
        if b + 1 == self.buckets as usize {
            0
        } else {
            b + 1
        }
    }

    /// Prefetches the home bucket of `top` (a /32).
    #[inline(always)]
    pub(crate) fn prefetch(&self, top: u32) {
        self.prefetch_bucket(self.home(top));
    }

    /// Prefetches bucket `b`.
    #[inline(always)]
    pub(crate) fn prefetch_bucket(&self, b: usize) {
        crate::simd::prefetch(self.lines.as_ptr().wrapping_add(b).cast_const());
    }

    /// For the first 64 address bits `key`: the levels to probe and the answer without
    /// a hit in them (0: the default route). The four slots of a bucket are compared at
    /// once ([`matches`]): which slot holds a /32 is unpredictable, and branches on it
    /// (what the compiler makes of a scalar compare-and-select loop) mispredict.
    #[inline(always)]
    pub(crate) fn probe(&self, key: u64) -> (u32, u32) {
        self.probe_from(self.home((key >> 32) as u32), key)
    }

    /// [`probe`](Self::probe) with the home bucket of `key`'s /32 already computed.
    #[inline(always)]
    pub(crate) fn probe_from(&self, home: usize, key: u64) -> (u32, u32) {
        let top = (key >> 32) as u32;
        let sub = (key >> (32 - SUB_BITS)) as u32 & ((1 << SUB_BITS) - 1);
        let mut b = home;
        loop {
            let w = self.line(b);
            let m = matches(w, top);
            if m != 0 {
                let j = m.trailing_zeros() as usize;
                // `B` (acquire), then `A` again: a listed slot's `A` was stored before
                // its `B`.
                let bw = w[SLOTS + j].load(Ordering::Acquire);
                if bw & LISTED != 0 {
                    // Ordered after the acquire load of `B`.
                    let aw = w[j].load(Ordering::Relaxed);
                    let levels = if bw >> sub & 1 != 0 {
                        (bw >> LEVEL_SHIFT) as u32
                    } else {
                        0
                    };
                    return (levels, aw as u32);
                }
                // A slot being listed (its `A` written, its `B` not yet): `top` is not
                // listed yet, and is nowhere else.
                return (self.always, 0);
            }
            if w[2 * SLOTS - 1].load(Ordering::Acquire) & OVERFLOW == 0 {
                return (self.always, 0);
            }
            b = self.next(b);
        }
    }

    /// The slot of `top`, if listed (the writer's, or a check's, read).
    pub(crate) fn find(&self, top: u32) -> Option<usize> {
        let mut b = self.home(top);
        loop {
            let w = self.line(b);
            for j in 0..SLOTS {
                let bw = w[SLOTS + j].load(Ordering::Acquire);
                if bw & LISTED != 0 && (w[j].load(Ordering::Relaxed) >> 32) as u32 == top {
                    return Some(b * SLOTS + j);
                }
            }
            if w[2 * SLOTS - 1].load(Ordering::Relaxed) & OVERFLOW == 0 {
                return None;
            }
            b = self.next(b);
        }
    }

    fn words(&self, slot: usize) -> (&AtomicU64, &AtomicU64) {
        let w = self.line(slot / SLOTS);
        (&w[slot % SLOTS], &w[SLOTS + slot % SLOTS])
    }

    /// What slot `slot` holds.
    pub(crate) fn entry(&self, slot: usize) -> Entry {
        let (a, b) = self.words(slot);
        let (a, b) = (a.load(Ordering::Acquire), b.load(Ordering::Acquire));
        Entry {
            answer: a as u32,
            levels: (b >> LEVEL_SHIFT) as u32,
            subs: b as u16,
        }
    }

    /// True if `more` /32s can still be listed (three quarters of the slots at most).
    pub(crate) fn has_room(&self, more: usize) -> bool {
        (self.len() + more) * 4 <= self.buckets as usize * SLOTS * 3
    }

    /// Lists `top` (not listed yet) with `e`; false if that passes three quarters of the
    /// slots (the caller rebuilds). The one writer only.
    pub(crate) fn list(&self, top: u32, e: Entry) -> bool {
        debug_assert!(self.find(top).is_none());
        if !self.has_room(1) {
            return false;
        }
        let mut b = self.home(top);
        loop {
            let w = self.line(b);
            if let Some(j) =
                (0..SLOTS).find(|&j| w[SLOTS + j].load(Ordering::Relaxed) & LISTED == 0)
            {
                self.used.store(self.len() + 1, Ordering::Relaxed);
                w[j].store((top as u64) << 32 | e.answer as u64, Ordering::Relaxed);
                let keep = w[SLOTS + j].load(Ordering::Relaxed) & OVERFLOW;
                // The switch: `LISTED` after `A` (release).
                w[SLOTS + j].store(e.b() | keep, Ordering::Release);
                published();
                return true;
            }
            // Full: flag it (before the entry is stored further on, so that a reader
            // that can see the entry can reach it).
            let last = &w[2 * SLOTS - 1];
            let v = last.load(Ordering::Relaxed);
            if v & OVERFLOW == 0 {
                last.store(v | OVERFLOW, Ordering::Release);
            }
            b = self.next(b);
        }
    }

    /// Adds level and /36 bits to slot `slot`. The one writer only.
    pub(crate) fn add_bits(&self, slot: usize, levels: u32, subs: u16) {
        let (_, b) = self.words(slot);
        let v = b.load(Ordering::Relaxed);
        let n = v | subs as u64 | (levels as u64) << LEVEL_SHIFT;
        if n != v {
            b.store(n, Ordering::Release);
            published();
        }
    }

    /// Sets slot `slot`'s answer: one store. The one writer only.
    pub(crate) fn set_answer(&self, slot: usize, answer: u32) {
        let (a, _) = self.words(slot);
        let v = a.load(Ordering::Relaxed);
        a.store(v & !(u32::MAX as u64) | answer as u64, Ordering::Release);
        published();
    }

    /// Every listed `(/32, entry)` (for checks).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn entries(&self) -> Vec<(u32, Entry)> {
        (0..self.buckets as usize * SLOTS)
            .filter(|&s| self.words(s).1.load(Ordering::Relaxed) & LISTED != 0)
            .map(|s| {
                (
                    (self.words(s).0.load(Ordering::Relaxed) >> 32) as u32,
                    self.entry(s),
                )
            })
            .collect()
    }

    /// Bytes lookups may touch.
    pub(crate) fn bytes(&self) -> usize {
        self.buckets as usize * core::mem::size_of::<Line>()
    }
}

/// The answers (invariant 2) of `tops` (ascending /32s) under `window` (a route of length
/// ≤ 32, or `::/0` for all): `base` is the answer of the routes covering `window` from
/// above (0: none), `routes` the routes inside `window` in the `Rib`'s order.
pub(crate) fn answers<A: Address>(
    base: u32,
    routes: impl IntoIterator<Item = (Prefix<A>, u32)>,
    tops: impl IntoIterator<Item = u32>,
) -> Vec<u32> {
    // Routes come in (address, length) order: each nests in the ones still on the stack.
    let mut stack: Vec<(u32, u32, u32)> = Vec::new();
    let mut routes = routes
        .into_iter()
        .filter(|(p, _)| (1..=TOP_BITS).contains(&p.len()))
        .map(|(p, nh)| (top_of(p.first()), top_of(p.last()), nh))
        .peekable();
    let mut out = Vec::new();
    for t in tops {
        while let Some(&(f, l, nh)) = routes.peek() {
            if f > t {
                break;
            }
            while stack.last().is_some_and(|s| s.1 < f) {
                stack.pop();
            }
            stack.push((f, l, nh));
            routes.next();
        }
        while stack.last().is_some_and(|s| s.1 < t) {
            stack.pop();
        }
        out.push(stack.last().map_or(base, |s| s.2));
    }
    out
}

/// The writer's side of the summary (kept beside the table by `BloomWriter`).
#[derive(Debug)]
pub(crate) struct SummaryWriter {
    /// The /32s listed.
    pub(crate) listed: std::collections::BTreeSet<u32>,
    /// Every /32 under a route of lengths `lo..=32` is listed (invariant 3).
    pub(crate) lo: u8,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::Ipv6;

    fn e(answer: u32, levels: u32, subs: u16) -> Entry {
        Entry {
            answer,
            levels,
            subs,
        }
    }

    #[test]
    fn list_probe_and_update() {
        let s = Summary::new(&[(7, e(3, 0b100, 1)), (0, e(0, 0, 0))], 0b1_0000);
        assert_eq!(s.buckets(), 1);
        // /36 0 of /32 7: its levels; /36 1: none; answer 3 either way.
        assert_eq!(s.probe(7 << 32), (0b100, 3));
        assert_eq!(s.probe(7 << 32 | 1 << 28), (0, 3));
        // ::/32 listed with nothing: no level, no answer (not the `always` levels).
        assert_eq!(s.probe(5), (0, 0));
        assert_eq!(s.probe(8 << 32), (0b1_0000, 0), "not listed");
        assert!(s.has_room(1) && !s.has_room(2), "three quarters of 4 slots");
        assert!(s.list(9, e(1, 0, 0)));
        assert!(!s.list(10, e(1, 0, 0)), "full");
        let slot = s.find(7).unwrap();
        s.add_bits(slot, 0b10, 0b10);
        s.set_answer(slot, 4);
        assert_eq!(s.probe(7 << 32 | 1 << 28), (0b110, 4));
        assert_eq!(s.entry(slot), e(4, 0b110, 0b11));
        // Overflow: many buckets, every /32 found again.
        let entries: Vec<(u32, Entry)> = (0..1000u32).map(|t| (t * 77, e(t, 1, 1))).collect();
        let s = Summary::new(&entries, 0);
        for &(t, en) in &entries {
            assert_eq!(s.probe((t as u64) << 32), (1, en.answer));
        }
        for t in 1000..3000u32 {
            if s.find(t * 77).is_none() && s.has_room(1) {
                assert!(s.list(t * 77, e(t, 2, 2)));
            }
        }
        for t in 0..3000u32 {
            if let Some(slot) = s.find(t * 77) {
                assert_eq!(s.entry(slot).answer, t);
            }
        }
        assert_eq!(s.entries().len(), s.len());
    }

    #[test]
    fn sub_blocks_and_answers() {
        let p = |s: &str| s.parse::<Prefix<Ipv6>>().unwrap();
        assert_eq!(subs_of(&p("2001:db8::/48")), 1);
        assert_eq!(subs_of(&p("2001:db8:f000::/36")), 1 << 15);
        assert_eq!(subs_of(&p("2001:db8:8000::/33")), 0xff00);
        assert_eq!(subs_of(&p("2001:db8:4000::/34")), 0x0f0);
        let routes = [
            (p("2000::/3"), 1),
            (p("2001:db8::/32"), 2),
            (p("2001:db8::/48"), 9),
            (p("2001:db9::/32"), 3),
            (p("2a00::/16"), 4),
        ];
        let tops = [
            0x2001_0db7,
            0x2001_0db8,
            0x2001_0db9,
            0x2001_0dba,
            0x2a00_0001,
            0x4000_0000,
        ];
        assert_eq!(answers(0, routes, tops), vec![1, 2, 3, 1, 4, 0]);
    }
}

//! The lookup path (§3.3): one key, a batch of keys with interleaved branch-free binary
//! searches, and the paper's own search loop (which counts its steps for Table 3).
//!
//! Short and long chunks are searched by the same code: an entry `i` of a chunk at byte
//! offset `off` is the 32 bits at `off + (i << es)` masked to the entry width (`es` = 1 and
//! mask `0xffff` for 16-bit entries, `es` = 2 and no mask for 32-bit ones), compared with
//! the key's low bits shaped like an entry whose next-hop bits are all ones. Then "the
//! range starts at or below the key" is a single unsigned `entry <= key'`.

use super::{DxrTable, BATCH};
use crate::simd::prefetch;

/// How many blocks ahead of the search stage the lookup-table entries are prefetched.
const LT_AHEAD: usize = 3;

/// The state of one binary search over a chunk.
#[derive(Clone, Copy, Default)]
pub(super) struct Search {
    /// Byte offset of the chunk in the range table.
    pub(super) off: usize,
    /// Entries still in play (`base .. base + len`).
    pub(super) len: u32,
    /// First entry in play.
    pub(super) base: u32,
    /// log2 of the entry size in bytes.
    pub(super) es: u32,
    /// Mask of the entry width.
    pub(super) mask: u32,
    /// Mask of the next-hop bits of an entry.
    pub(super) nh_mask: u32,
    /// The key's low bits, shaped like an entry with all next-hop bits set.
    pub(super) kc: u32,
}

/// The searches of one block of keys in flight: stage 2 records the key, the lookup-table
/// entry and the key's position of each search in `keys`, `entries` and `slots` (with
/// room for a full vector store past the last one); the scalar stage 3 expands them into
/// search states in `lanes`.
pub(super) struct Pipeline {
    /// Searches in use.
    pub(super) n: usize,
    /// Key of each search.
    pub(super) keys: [u32; BATCH + 8],
    /// Lookup-table entry of each search.
    pub(super) entries: [u32; BATCH + 8],
    /// Position of each search's key in the block.
    pub(super) slots: [u32; BATCH + 8],
    /// Search states (the scalar stage 3).
    pub(super) lanes: [Search; BATCH],
}

impl Default for Pipeline {
    fn default() -> Self {
        Pipeline {
            n: 0,
            keys: [0; BATCH + 8],
            entries: [0; BATCH + 8],
            slots: [0; BATCH + 8],
            lanes: [Search::default(); BATCH],
        }
    }
}

/// Stages 2 and 3 of the batched lookup.
pub(super) trait Stages {
    /// Stage 2: reads the lookup-table entries of `keys` (a block), writes the answers of
    /// direct chunks into `out` and sets up the searches of the others in `p`.
    ///
    /// # Safety
    /// The CPU must support the instructions the implementation uses (none beyond the
    /// baseline for [`Lockstep`]; AVX2 and POPCNT for the AVX2 stages).
    unsafe fn start(p: &mut Pipeline, t: &DxrTable, keys: &[u32], out: &mut [u32]);

    /// Stage 3: runs the searches of `p` and writes their local ids into `out` (the
    /// block's results).
    ///
    /// # Safety
    /// As [`start`](Self::start).
    unsafe fn finish(p: &mut Pipeline, t: &DxrTable, out: &mut [u32]);
}

/// The scalar stages: a branch-free stage 2, and branch-free halving steps in stage 3, all
/// searches of the block in lock step (a finished one, `len == 1`, steps in place:
/// `half = 0` rereads its `base`), so that the loads of different searches overlap and
/// the loop count is the same for all of them.
pub(super) struct Lockstep;

impl Stages for Lockstep {
    /// Reads the lookup-table entries, writes every key's direct answer, prefetches the
    /// chunk start, and appends `(key, entry, position)` to the block's searches without a
    /// branch (the count advances only for chunks that need a search).
    #[inline(always)]
    unsafe fn start(p: &mut Pipeline, t: &DxrTable, keys: &[u32], out: &mut [u32]) {
        let rt = t.rt.as_ptr() as *const u8;
        let scale = t.pos_shift + 2;
        let (pos_field, size_mask) = (t.fmt.pos_field(), t.fmt.size_mask());
        let mut n = 0;
        for (i, (&a, o)) in keys.iter().zip(out.iter_mut()).enumerate() {
            let e = t.entry_of(a);
            *o = e >> pos_field;
            prefetch(rt.wrapping_add(((e >> pos_field) as usize) << scale));
            p.keys[n] = a;
            p.entries[n] = e;
            p.slots[n] = i as u32;
            n += (e & size_mask != 0) as usize;
        }
        p.n = n;
    }

    #[inline(always)]
    unsafe fn finish(p: &mut Pipeline, t: &DxrTable, out: &mut [u32]) {
        let n = p.n;
        let mut rounds = 0;
        for j in 0..n {
            let s = t.search(p.entries[j], p.keys[j]);
            rounds = rounds.max(32 - (s.len - 1).leading_zeros());
            p.lanes[j] = s;
        }
        for _ in 0..rounds {
            for s in &mut p.lanes[..n] {
                t.step(s);
            }
        }
        for (s, &i) in p.lanes[..n].iter().zip(&p.slots[..n]) {
            out[i as usize] = t.entry_at(s, s.base) & s.nh_mask;
        }
    }
}

/// `if v <= kc { a } else { b }` as a conditional move.
///
/// LLVM's x86 cmov-conversion pass turns every branch-free formulation of the search step
/// (`if`, a mask from `(v <= kc) as u32`, a mask from a subtraction's borrow) back into a
/// jump inside the search loop, and that jump mispredicts half of the time; the few
/// instructions here pin the `cmov`.
#[inline(always)]
fn select_le(v: u32, kc: u32, a: u32, b: u32) -> u32 {
    // Miri does not run inline assembly; it checks the portable form.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        let mut r = b;
        // SAFETY: a register compare and a conditional move: no memory access, no stack
        // use, and the flags it clobbers are declared clobbered by `asm!`'s default.
        unsafe {
            core::arch::asm!(
                "cmp {v:e}, {kc:e}",
                "cmovbe {r:e}, {a:e}",
                v = in(reg) v,
                kc = in(reg) kc,
                a = in(reg) a,
                r = inout(reg) r,
                options(pure, nomem, nostack),
            );
        }
        r
    }
    #[cfg(any(not(target_arch = "x86_64"), miri))]
    {
        if v <= kc {
            a
        } else {
            b
        }
    }
}

impl DxrTable {
    /// The lookup-table entry of `key`.
    #[inline(always)]
    pub(super) fn entry_of(&self, key: u32) -> u32 {
        self.lt((key >> (32 - self.k)) as usize)
    }

    /// The search of `key` in the (non-direct) chunk of entry `e`.
    #[inline(always)]
    pub(super) fn search(&self, e: u32, key: u32) -> Search {
        let off = ((e >> self.fmt.pos_field()) as usize) << (self.pos_shift + 2);
        let len = (e & self.fmt.size_mask()) << self.size_shift;
        // The address bits below the k indexed ones (at most 16 since k >= 16).
        let low = key & (u32::MAX >> self.k);
        if e & self.fmt.long_bit() != 0 {
            Search {
                off,
                len,
                base: 0,
                es: 2,
                mask: u32::MAX,
                nh_mask: 0xffff,
                kc: (low << 16) | 0xffff,
            }
        } else {
            Search {
                off,
                len,
                base: 0,
                es: 1,
                mask: 0xffff,
                nh_mask: 0xff,
                kc: low | 0xff,
            }
        }
    }

    /// The 32 bits at byte offset `off` of the range table.
    #[inline(always)]
    fn read(&self, off: usize) -> u32 {
        debug_assert!(
            off + 4 <= self.rt.committed() * 4,
            "read at byte {off} of {}",
            self.rt.committed() * 4
        );
        // SAFETY: the writer publishes only lookup-table entries whose chunk lies below
        // its top, searches only read entries `0..len` of a chunk, and the `PAD_WORDS`
        // committed after the top keep a 4-byte read of the last 2-byte entry inside the
        // arena. (Those 2 extra bytes may belong to a block the writer is filling; they
        // are masked off and never reach the result.) `read_unaligned` allows any
        // alignment.
        unsafe {
            (self.rt.as_ptr() as *const u8)
                .add(off)
                .cast::<u32>()
                .read_unaligned()
        }
    }

    /// Entry `i` of the chunk searched by `s`.
    #[inline(always)]
    pub(super) fn entry_at(&self, s: &Search, i: u32) -> u32 {
        self.read(s.off + ((i as usize) << s.es)) & s.mask
    }

    /// One branch-free halving step.
    #[inline(always)]
    pub(super) fn step(&self, s: &mut Search) {
        let half = s.len / 2;
        let v = self.entry_at(s, s.base + half);
        s.base = select_le(v, s.kc, s.base + half, s.base);
        s.len -= half;
    }

    /// Runs a search to the end; returns the local next hop.
    #[inline(always)]
    fn finish(&self, mut s: Search) -> u32 {
        while s.len > 1 {
            self.step(&mut s);
        }
        self.entry_at(&s, s.base) & s.nh_mask
    }

    /// The local next-hop id of `key`.
    #[inline]
    pub(super) fn lookup_local(&self, key: u32) -> u32 {
        let e = self.entry_of(key);
        if e & self.fmt.size_mask() == 0 {
            return e >> self.fmt.pos_field();
        }
        self.finish(self.search(e, key))
    }

    /// Bulk lookup, software-pipelined over blocks of [`BATCH`] keys: while block `b` is
    /// searched, the chunks of block `b + 1` are being fetched and the lookup-table entries
    /// of block `b + 2` are on their way (see [`Pipeline`]).
    pub(super) fn lookup_batch_scalar<const REMAP: bool>(&self, keys: &[u32], out: &mut [u32]) {
        // SAFETY: `Lockstep` uses baseline instructions only.
        unsafe { self.lookup_pipeline::<REMAP, Lockstep>(keys, out) }
    }

    /// The pipeline with stage 3 `F`.
    ///
    /// # Safety
    /// As [`Stages::start`] of `F`.
    #[inline(always)]
    pub(super) unsafe fn lookup_pipeline<const REMAP: bool, F: Stages>(
        &self,
        keys: &[u32],
        out: &mut [u32],
    ) {
        debug_assert_eq!(keys.len(), out.len());
        let blocks = keys.len().div_ceil(BATCH);
        let range = |b: usize| b * BATCH..keys.len().min((b + 1) * BATCH);
        let mut stage = [Pipeline::default(), Pipeline::default()];
        for b in 0..blocks.min(LT_AHEAD) {
            self.prefetch_entries(&keys[range(b)]);
        }
        if blocks > 0 {
            let r = range(0);
            // SAFETY: passed on from the caller.
            unsafe { F::start(&mut stage[0], self, &keys[r.clone()], &mut out[r]) };
        }
        for b in 0..blocks {
            if b + LT_AHEAD < blocks {
                self.prefetch_entries(&keys[range(b + LT_AHEAD)]);
            }
            if b + 1 < blocks {
                let r = range(b + 1);
                // SAFETY: passed on from the caller.
                unsafe { F::start(&mut stage[(b + 1) & 1], self, &keys[r.clone()], &mut out[r]) };
            }
            let r = range(b);
            // SAFETY: passed on from the caller.
            unsafe { F::finish(&mut stage[b & 1], self, &mut out[r]) };
            if REMAP {
                for o in &mut out[range(b)] {
                    *o = self.map(*o);
                }
            }
        }
    }

    /// Stage 1: prefetch the lookup-table entries of `keys`.
    #[inline(always)]
    fn prefetch_entries(&self, keys: &[u32]) {
        let lt = self.lt.as_ptr();
        let shift = 32 - self.k;
        for &a in keys {
            prefetch(lt.wrapping_add((a >> shift) as usize));
        }
    }

    /// The paper's lookup loop (`dxr_lookup` of the authors' code: a three-way comparison
    /// that stops when the key's range is found); returns the local next hop and the
    /// number of steps (0 for a direct chunk).
    pub(super) fn lookup_counting(&self, key: u32) -> (u32, usize) {
        let e = self.entry_of(key);
        if e & self.fmt.size_mask() == 0 {
            return (e >> self.fmt.pos_field(), 0);
        }
        let s = self.search(e, key);
        // `entry > kc` is "the key is below the range's start".
        let below = |i: u32| self.entry_at(&s, i) > s.kc;
        let mut lower = 0u32;
        let mut upper = s.len - 1;
        let mut middle = upper / 2;
        let mut steps = 0;
        loop {
            steps += 1;
            if below(middle) {
                upper = middle;
                middle = (middle + lower) / 2;
            } else {
                debug_assert!(middle < s.len - 1);
                if below(middle + 1) {
                    lower = middle;
                    break;
                }
                lower = middle + 1;
                middle = (upper + middle).div_ceil(2);
            }
            if upper == lower {
                break;
            }
        }
        (self.entry_at(&s, lower) & s.nh_mask, steps)
    }
}

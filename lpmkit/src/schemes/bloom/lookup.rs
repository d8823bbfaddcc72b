//! Lookups: one key (Algorithm 2 with the CPE levels), batches, and the multithreaded
//! bulk lookup (§4.3.1).
//!
//! * [`BloomTable::lookup_one`] walks the levels longest first: the key of a level is the
//!   address's first `len` bits; a filter that answers "no" is skipped; one that answers
//!   "maybe" is confirmed in its table; the first hit is the answer (for the gate: the
//!   range's next hop, if not 0). Below the levels: the summary's answer (IPv6, beyond the
//!   paper: `summary.rs`), the DLA entry (IPv4 CPE) or the default route. With a level
//!   hint or a summary, only the levels it names are probed.
//! * [`BloomTable::batch`]: with double hashing (Bloomfwd), the software-pipelined match
//!   vectors of `pipeline.rs`; otherwise (Naïve, Baseline: positions computed lazily, up
//!   to the first clear bit) up to 64 keys at a time, level by level over the keys still
//!   unresolved: filters probed, the table heads of the keys that passed prefetched,
//!   read, their blocks prefetched and scanned, so that the cache misses of different
//!   keys overlap.
//! * [`BloomTable::lookup_bulk`] hands chunks of 4,096 keys to `threads` threads as they
//!   ask for them (the paper's OpenMP `dynamic` schedule).

use core::mem::MaybeUninit;
use std::sync::Mutex;

use super::cpe::{key_bits, top_key};
use super::gate;
use super::hash::{crand, crand_seed, hash, HashKind};
use super::kernel::hash_keys;
use super::{BloomTable, Level, DLA_BITS};
use crate::prefix::Address;
use crate::simd::Kernels;

/// Keys per chunk of [`BloomTable::batch`].
pub(crate) const CHUNK: usize = 64;
/// Keys a batch hands to the summary at a time (`batch_summary`).
pub(crate) const FRONT: usize = 512;
/// How many keys ahead the summary's lines are prefetched.
pub(crate) const AHEAD: usize = 24;
/// The ring of home buckets in flight (a power of two above [`AHEAD`]).
const RING: usize = 32;
const _: () = assert!(RING > AHEAD && RING.is_power_of_two());
/// Keys per chunk handed to a thread by [`BloomTable::lookup_bulk`].
pub(crate) const BULK_CHUNK: usize = 4096;
/// Smallest `lookup_batch` that the `threads` setting spreads over threads.
pub(crate) const PARALLEL_MIN: usize = 1 << 16;

/// True if level `li` is not among the `allowed` ones (the level hint or the summary;
/// levels past the 32nd are never skipped, a table with either has no more).
#[inline(always)]
pub(crate) fn skipped(allowed: u32, li: usize) -> bool {
    li < 32 && allowed >> li & 1 == 0
}

impl<A: Address> BloomTable<A> {
    /// Prefetches what [`bottom`](Self::bottom) reads for `top`.
    #[inline(always)]
    pub(crate) fn prefetch_bottom(&self, top: u64) {
        if let Some(d) = &self.dla {
            let i = (top >> (key_bits::<A>() - DLA_BITS)) as usize;
            crate::simd::prefetch(d.as_ptr().wrapping_add(i));
        }
    }

    /// The answer below the levels: the DLA entry, or the default route.
    #[inline(always)]
    pub(crate) fn bottom(&self, top: u64) -> u32 {
        match &self.dla {
            // SAFETY: the index has DLA_BITS bits: committed at build.
            Some(d) => unsafe { d.load_acquire((top >> (key_bits::<A>() - DLA_BITS)) as usize) },
            // SAFETY: word 0, committed at build.
            None => unsafe { self.default.load_acquire(0) },
        }
    }

    /// The answer the levels whose band reaches /32 or below give the /32 `top` (0:
    /// none): what a /32 the summary does not list is answered (`summary.rs`). The
    /// writer's read, before it lists `top`.
    pub(crate) fn band_answer(&self, top: u32) -> u32 {
        let Some(s) = &self.summary else { return 0 };
        let key = (top as u64) << 32;
        let hs = &self.hashing;
        for (li, level) in self.levels.iter().enumerate() {
            if skipped(s.always, li) {
                continue;
            }
            let k = key & level.mask;
            let th = if hs.reuses() {
                hs.filter_hash(k, 0)
            } else {
                hs.table_hash(k)
            };
            if let Some(v) = level.table.get(k, th) {
                return v;
            }
        }
        0
    }

    /// The filter test of a level without double hashing (positions computed lazily);
    /// on success, the key's table hash.
    #[inline(always)]
    fn filter_lazy(&self, level: &Level, key: u64) -> Option<u32> {
        let hs = &self.hashing;
        let mut first = 0u32;
        let pass = if hs.kind == HashKind::CRand {
            let words = crand_seed(super::hash::fold(key));
            level.filter.contains_with(|i| {
                let h = crand(&words, i);
                if i == 0 {
                    first = h;
                }
                h
            })
        } else {
            level.filter.contains_with(|i| {
                let h = hash(hs.kind, key, i);
                if i == 0 {
                    first = h;
                }
                h
            })
        };
        pass.then(|| {
            if hs.reuses() {
                first
            } else {
                hs.table_hash(key)
            }
        })
    }

    /// The answer of a level's value `v` for `addr`: the next hop, or (the gate) the
    /// range's next hop, 0 if no long route covers `addr`.
    #[inline(always)]
    pub(crate) fn resolve(&self, level: &Level, v: u32, addr: A) -> u32 {
        if level.gate {
            let ranges = self.ranges.as_ref().expect("a gate has ranges");
            gate::search(ranges, v, addr.to_u128() as u64)
        } else {
            v
        }
    }

    /// One lookup (0: no route).
    #[inline]
    pub(crate) fn lookup_one(&self, addr: A) -> u32 {
        self.lookup_stalled(addr, || {})
    }

    /// [`lookup_one`](Self::lookup_one), running `stall` once: after the first table head
    /// it reads (before the block it names), or before the bottom if it reads none.
    #[inline]
    pub(crate) fn lookup_stalled(&self, addr: A, stall: impl FnOnce()) -> u32 {
        let mut stall = Some(stall);
        let top = top_key(addr);
        let hs = &self.hashing;
        let (mut h1, mut h2, mut t) = (0u32, 0u32, 0u32);
        let mut hashed = u8::MAX;
        let (allowed, fallback) = self.probe(top);
        for (li, level) in self.levels.iter().enumerate() {
            if skipped(allowed, li) {
                continue;
            }
            let key = top & level.mask;
            let th = if hs.double_hashing {
                if level.len != hashed {
                    h1 = hash(hs.kind, key, 0);
                    h2 = if hs.k > 1 { hash(hs.kind, key, 1) } else { 0 };
                    t = if hs.reuses() { h1 } else { hs.table_hash(key) };
                    hashed = level.len;
                }
                level.filter.contains_km(h1, h2).then_some(t)
            } else {
                self.filter_lazy(level, key)
            };
            let Some(th) = th else { continue };
            let head = level.table.head(level.table.bucket(th));
            if let Some(s) = stall.take() {
                s();
            }
            if head == 0 {
                continue;
            }
            if let Some(v) = level.table.scan(head, key) {
                let nh = self.resolve(level, v, addr);
                if nh != 0 {
                    return nh;
                }
            }
        }
        if let Some(s) = stall.take() {
            s();
        }
        if fallback != 0 {
            return fallback;
        }
        self.bottom(top)
    }

    /// Looks up `addrs` (`out[i]` = next hop id or 0), hashing with AVX-512 or AVX2 if `simd` holds the token
    /// given; `out` has the length of `addrs`.
    pub(crate) fn batch(&self, addrs: &[A], out: &mut [u32], simd: Kernels) {
        if self.summary.is_some() {
            for (a, o) in addrs.chunks(FRONT).zip(out.chunks_mut(FRONT)) {
                self.batch_summary(a, o, simd);
            }
        } else {
            self.batch_levels(addrs, out, simd);
        }
    }

    /// Up to [`FRONT`] keys through the summary first (`summary.rs`): each key's line is
    /// read ([`AHEAD`] keys after its prefetch); a key whose line names no level is
    /// answered by it, the others go through the levels together
    /// ([`batch_levels`](Self::batch_levels), which reads their lines again, cached).
    fn batch_summary(&self, addrs: &[A], out: &mut [u32], simd: Kernels) {
        let n = addrs.len();
        debug_assert!(n <= FRONT && out.len() == n);
        let s = self.summary.as_ref().expect("a summary");
        let mut slow = [0u16; FRONT];
        let mut ns = 0usize;
        // The home buckets of the keys prefetched, computed once.
        let mut homes = [0usize; RING];
        for (i, a) in addrs[..n.min(AHEAD)].iter().enumerate() {
            homes[i] = s.home((top_key(*a) >> 32) as u32);
            s.prefetch_bucket(homes[i]);
        }
        for i in 0..n {
            if i + AHEAD < n {
                let h = s.home((top_key(addrs[i + AHEAD]) >> 32) as u32);
                s.prefetch_bucket(h);
                homes[(i + AHEAD) % RING] = h;
            }
            let top = top_key(addrs[i]);
            let (levels, fallback) = s.probe_from(homes[i % RING], top);
            if levels == 0 {
                out[i] = match fallback {
                    0 => self.bottom(top),
                    f => f,
                };
            } else {
                slow[ns] = i as u16;
                ns += 1;
            }
        }
        if ns == 0 {
            return;
        }
        // The slow keys, gathered (buffers left uninitialised: a batch of 256 keys sends
        // a few dozen, and zeroing 10 KiB per call cost more than their lookups' stores).
        let mut keys = [const { MaybeUninit::<A>::uninit() }; FRONT];
        let mut answers = [const { MaybeUninit::<u32>::uninit() }; FRONT];
        for ((k, a), &i) in keys.iter_mut().zip(&mut answers).zip(&slow[..ns]) {
            k.write(addrs[i as usize]);
            a.write(0);
        }
        // SAFETY: the first `ns` keys and answers were just written.
        let (keys, answers) = unsafe {
            (
                core::slice::from_raw_parts(keys.as_ptr().cast::<A>(), ns),
                core::slice::from_raw_parts_mut(answers.as_mut_ptr().cast::<u32>(), ns),
            )
        };
        self.batch_levels(keys, answers, simd);
        for (&i, &v) in slow[..ns].iter().zip(answers.iter()) {
            out[i as usize] = v;
        }
    }

    /// [`batch`](Self::batch) through the levels (and the hint or summary, per key).
    fn batch_levels(&self, addrs: &[A], out: &mut [u32], simd: Kernels) {
        use super::pipeline::{GROUP, GROUP_FEW};
        if self.hashing.double_hashing {
            match self.levels.len() {
                0..=2 => return self.batch_km::<{ 2 * GROUP_FEW }, GROUP_FEW>(addrs, out, simd),
                3..=8 => return self.batch_km::<{ 8 * GROUP }, GROUP>(addrs, out, simd),
                9..=16 => return self.batch_km::<{ 16 * GROUP }, GROUP>(addrs, out, simd),
                _ => {}
            }
        }
        for (a, o) in addrs.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            self.chunk(a, o, simd);
        }
    }

    fn chunk(&self, addrs: &[A], out: &mut [u32], simd: Kernels) {
        let n = addrs.len();
        debug_assert!(n <= CHUNK && out.len() == n);
        let mut top = [0u64; CHUNK];
        let mut act = [0u8; CHUNK];
        for (i, &a) in addrs.iter().enumerate() {
            top[i] = top_key(a);
            act[i] = i as u8;
        }
        if let Some(d) = &self.dla {
            let shift = key_bits::<A>() - DLA_BITS;
            for &tk in &top[..n] {
                crate::simd::prefetch(d.as_ptr().wrapping_add((tk >> shift) as usize));
            }
        }
        let mut allow = [u32::MAX; CHUNK];
        let mut fallback = [0u32; CHUNK];
        if self.guided() {
            for ((a, f), &tk) in allow.iter_mut().zip(&mut fallback).zip(&top[..n]) {
                (*a, *f) = self.probe(tk);
            }
        }
        let hs = &self.hashing;
        let km = hs.double_hashing;
        let mut na = n;
        let mut keys = [0u64; CHUNK];
        let (mut h1, mut h2, mut t) = ([0u32; CHUNK], [0u32; CHUNK], [0u32; CHUNK]);
        let mut hashed = u8::MAX;
        let mut pos = [0u8; CHUNK];
        let mut bk = [0u32; CHUNK];
        let mut hd = [0u32; CHUNK];
        for (li, level) in self.levels.iter().enumerate() {
            if na == 0 {
                break;
            }
            for j in 0..na {
                keys[j] = top[act[j] as usize] & level.mask;
            }
            if km && level.len != hashed {
                hash_keys(
                    simd,
                    hs,
                    &keys[..na],
                    &mut h1[..na],
                    &mut h2[..na],
                    &mut t[..na],
                );
                hashed = level.len;
            }
            // Filters: the keys that pass, their buckets' heads prefetched.
            let mut np = 0;
            for j in 0..na {
                if skipped(allow[act[j] as usize], li) {
                    continue;
                }
                let th = if km {
                    level.filter.contains_km(h1[j], h2[j]).then_some(t[j])
                } else {
                    self.filter_lazy(level, keys[j])
                };
                if let Some(th) = th {
                    let b = level.table.bucket(th);
                    level.table.prefetch_head(b);
                    pos[np] = j as u8;
                    bk[np] = b as u32;
                    np += 1;
                }
            }
            if np == 0 {
                continue;
            }
            // Heads; their blocks prefetched.
            for q in 0..np {
                hd[q] = level.table.head(bk[q] as usize);
                if hd[q] != 0 {
                    level.table.prefetch_block(hd[q]);
                }
            }
            // Blocks.
            let mut done = 0u64;
            for q in 0..np {
                if hd[q] == 0 {
                    continue;
                }
                let j = pos[q] as usize;
                if let Some(v) = level.table.scan(hd[q], keys[j]) {
                    let i = act[j] as usize;
                    let nh = self.resolve(level, v, addrs[i]);
                    if nh != 0 {
                        out[i] = nh;
                        done |= 1 << j;
                    }
                }
            }
            if done != 0 {
                let mut w = 0;
                for j in 0..na {
                    if done >> j & 1 == 0 {
                        act[w] = act[j];
                        h1[w] = h1[j];
                        h2[w] = h2[j];
                        t[w] = t[j];
                        w += 1;
                    }
                }
                na = w;
            }
        }
        for &i in &act[..na] {
            let i = i as usize;
            out[i] = match fallback[i] {
                0 => self.bottom(top[i]),
                f => f,
            };
        }
    }

    /// Looks up `addrs` with `threads` threads; see the module docs.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub(crate) fn lookup_bulk(&self, addrs: &[A], out: &mut [u32], threads: usize) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        if threads <= 1 || addrs.len() <= BULK_CHUNK {
            self.batch(addrs, out, self.kernels());
            return;
        }
        let work = Mutex::new(addrs.chunks(BULK_CHUNK).zip(out.chunks_mut(BULK_CHUNK)));
        let run = || loop {
            let next = work.lock().unwrap_or_else(|e| e.into_inner()).next();
            match next {
                Some((a, o)) => self.batch(a, o, self.kernels()),
                None => break,
            }
        };
        // No more threads than chunks of work.
        let threads = threads.min(addrs.len().div_ceil(BULK_CHUNK));
        std::thread::scope(|s| {
            for _ in 1..threads {
                s.spawn(run);
            }
            run();
        });
    }
}

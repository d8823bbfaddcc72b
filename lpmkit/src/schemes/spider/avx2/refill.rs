//! The lane-refilling AVX2 kernel ([`SpiderConfig::refill`](super::super::SpiderConfig::refill)).
//!
//! The lockstep kernels (`lockstep.rs`) keep a block's lanes together until the deepest lane
//! is done: a lane that finishes at the direct pointing table (about 61% of random IPv4
//! keys on the bart tier-1 table) still takes a gather and a prefetch slot, reading
//! End-of-Lookup, at every level its block descends. This kernel gives every slot to a
//! lookup that is not finished, after Polychroniou, Raghavan and Ross, "Rethinking SIMD
//! Vectorization for In-Memory Databases" (SIGMOD 2015, §4–5: *selective stores* compact
//! the lanes that go on, so that each vector is full of live keys).
//!
//! A call is cut into chunks of [`CHUNK`] keys, and a chunk is looked up level by level:
//!
//! 1. **Direct pointing pass.** Sixteen (or eight) keys at a time: the 16-bit elements
//!    are read by scalar loads (the table is in L2), decoded in a register, and the next
//!    hops written to `out` at once — for most keys this is the final answer. Lanes whose
//!    element names a row are *left-packed* (a `movemask` of the lanes that go on indexes
//!    a table of `permutevar8x32` permutations) into the chunk's pending list: key index,
//!    the 32-bit word being read, and the index of the element to read next. If that
//!    level is cold (see [`CACHED_LEVEL_BYTES_V4`](super::super::CACHED_LEVEL_BYTES_V4))
//!    the element is prefetched as it is packed.
//! 2. **One pass per octet** over the pending list: eight (sixteen) pending lookups per
//!    gather, results stored to `out` at their keys' own indices (a scalar scatter; a lane
//!    that goes on writes a 0 that its final level overwrites), and the lanes that go on
//!    are left-packed again, in place, with their next element prefetched if its level is
//!    cold. IPv6 reloads the word every four octets with one gather from the keys.
//!    A level few of whose elements name a row (under 1 in
//!    [`SCALAR_PASS_INVERSE_SHARE`](super::super::SCALAR_PASS_INVERSE_SHARE), as the third
//!    octet of every real IPv4 table: a pass is then nearly the lookups' last) is passed by a
//!    scalar loop instead — one load per lookup, its next hop stored, and a branch, which
//!    is predicted, to push the rare lookup that goes on.
//!
//! Every lane of every gather is thus a live lookup, and the time between an element's
//! prefetch and its gather is the rest of a pass. The chunks of one call are pipelined:
//! the direct pointing pass of a chunk runs before the octet passes of the chunk before
//! it, so the elements prefetched for a chunk's first octet pass also have a whole direct
//! pointing pass to arrive (a prefetch brings the element's line into L1). Because all
//! pending lookups of a pass are at the same octet, the octet extraction and the IPv6
//! word reload are the same for every lane (a lane-by-lane refill would need per-lane
//! shifts). Pending lists shorter than a vector, and chunk tails, are stepped by scalar
//! code. A scalar pass reads the word of a lookup that goes on from its key, so the pass
//! before it packs no words.
//!
//! Elements are leaf-pushed (see the module docs), so a lookup's answer is the next hop
//! of the last element it reads and no result register is carried between levels.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::ops::{octet_mask, Family, Simd};
use crate::schemes::spider::{Elements, LookupParams, DP_FIRST_ROW, KEYS_AHEAD, ROW};
use crate::simd::prefetch_keys_ahead;

/// Keys per chunk: the pending list of a chunk (12 bytes per key) stays in L1, and a pass
/// is long enough to hide the latency of the prefetches made in the pass before.
pub(super) const CHUNK: usize = 256;

/// Lanes per vector.
const L: usize = 8;

/// `PACK[m]`: byte `k` is the lane of the `k`-th set bit of `m`, then the clear lanes in
/// order (so the lanes after the packed ones hold finished lookups, whose next element is
/// in row 0: prefetching them is harmless).
static PACK: [u64; 256] = pack_table();

const fn pack_table() -> [u64; 256] {
    let mut t = [0u64; 256];
    let mut m = 0;
    while m < 256 {
        let mut v = 0u64;
        let mut k = 0;
        let mut pass = 0;
        while pass < 2 {
            let mut l = 0;
            while l < 8 {
                if (m >> l & 1) != pass {
                    v |= (l as u64) << (8 * k);
                    k += 1;
                }
                l += 1;
            }
            pass += 1;
        }
        t[m] = v;
        m += 1;
    }
    t
}

/// The lookups of a chunk that go on past the current level (structure of arrays, with
/// room for a full vector store after the last entry).
struct Pending {
    /// Index of the key in the chunk.
    idx: [MaybeUninit<u32>; CHUNK + L],
    /// The 32-bit word of the key the next octet comes from.
    word: [MaybeUninit<u32>; CHUNK + L],
    /// Index of the element to read next.
    next: [MaybeUninit<u32>; CHUNK + L],
}

/// What every pass needs.
struct Ctx<'a, C: Simd, F: Family> {
    tp: *const C::E,
    split: u32,
    dec: C::Dec,
    #[cfg(debug_assertions)]
    len: usize,
    cold_octets: u32,
    scalar_passes: u32,
    p: &'a mut Pending,
    _f: core::marker::PhantomData<F>,
}

impl<C: Simd, F: Family> Ctx<'_, C, F> {
    /// The scalar element at `i`, decoded: (next-row index, next hop).
    ///
    /// # Safety
    /// `i` is an element index of the table.
    #[inline(always)]
    unsafe fn element(&self, i: usize) -> (usize, u32) {
        #[cfg(debug_assertions)]
        debug_assert!(
            i < self.len,
            "element {i} outside the table of {}",
            self.len
        );
        // SAFETY: the contract.
        C::decode(unsafe { *self.tp.add(i) }, self.split)
    }

    /// Prefetches (into L2, as the pipelined kernels) the elements named by lanes `0..n`
    /// of `next` (n ≤ 8): the low four always, the high four only when `n > 4`.
    ///
    /// # Safety
    /// AVX2.
    #[inline(always)]
    unsafe fn prefetch(&self, next: __m256i, n: u32) {
        // SAFETY: register operations; a prefetch never faults.
        unsafe {
            let pf = |x: __m128i| {
                let a = _mm_cvtsi128_si64(x) as u64;
                let b = _mm_extract_epi64::<1>(x) as u64;
                for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                    _mm_prefetch::<_MM_HINT_T0>(self.tp.wrapping_add(i as usize) as *const i8);
                }
            };
            pf(_mm256_castsi256_si128(next));
            if n > 4 {
                pf(_mm256_extracti128_si256::<1>(next));
            }
        }
    }

    /// Left-packs the lanes of `keep` (a `movemask`) of `idx`, `word` and `next` to pending
    /// entry `at` for the pass reading the rows of octet `pass`: their elements prefetched
    /// if that level is cold, and `word` left out if that pass is scalar (it reads the
    /// word from the key); returns the next free entry.
    ///
    /// # Safety
    /// AVX2; `at + 8 <= CHUNK + 8`.
    #[inline(always)]
    unsafe fn pack(
        &mut self,
        at: usize,
        keep: u32,
        idx: __m256i,
        word: __m256i,
        next: __m256i,
        pass: usize,
    ) -> usize {
        debug_assert!(at <= CHUNK && keep < 256);
        let (prefetch, with_word) = (self.cold(pass), !self.scalar_pass(pass));
        // SAFETY: the arrays hold `CHUNK + 8` entries; register operations.
        unsafe {
            let perm = _mm256_cvtepu8_epi32(_mm_loadl_epi64(
                PACK.as_ptr().add(keep as usize) as *const __m128i
            ));
            let next = _mm256_permutevar8x32_epi32(next, perm);
            let p = &mut *self.p;
            let st = |a: &mut [MaybeUninit<u32>; CHUNK + L], v: __m256i| {
                _mm256_storeu_si256(a.as_mut_ptr().add(at) as *mut __m256i, v)
            };
            st(&mut p.idx, _mm256_permutevar8x32_epi32(idx, perm));
            if with_word {
                st(&mut p.word, _mm256_permutevar8x32_epi32(word, perm));
            }
            st(&mut p.next, next);
            let n = keep.count_ones();
            if prefetch {
                self.prefetch(next, n);
            }
            at + n as usize
        }
    }

    /// Adds a pending entry from scalar code; returns the next free entry.
    #[inline(always)]
    fn push(&mut self, at: usize, idx: u32, word: u32, next: usize, prefetch: bool) -> usize {
        debug_assert!(at < CHUNK);
        self.p.idx[at] = MaybeUninit::new(idx);
        self.p.word[at] = MaybeUninit::new(word);
        self.p.next[at] = MaybeUninit::new(next as u32);
        if prefetch {
            // SAFETY: a prefetch never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(self.tp.wrapping_add(next) as *const i8) };
        }
        at + 1
    }

    /// Whether the rows read at `octet` are prefetched.
    #[inline(always)]
    fn cold(&self, octet: usize) -> bool {
        self.cold_octets & (1 << octet) != 0
    }

    /// Whether the pass reading the rows of `octet` runs scalar code (few of their
    /// elements name a row, see [`LookupParams::scalar_passes`]).
    #[inline(always)]
    fn scalar_pass(&self, octet: usize) -> bool {
        self.scalar_passes & (1 << octet) != 0
    }

    /// The direct pointing pass over the chunk `keys`/`out`; returns the pending count.
    ///
    /// # Safety
    /// AVX2; `out.len() >= keys.len()`, `keys.len() <= CHUNK`.
    #[inline(always)]
    unsafe fn dp_pass<const FUSED: bool>(&mut self, keys: &[F::Key], out: &mut [u32]) -> usize {
        let n = keys.len();
        debug_assert!(n <= CHUNK && out.len() >= n);
        let g = if FUSED { 2 * L } else { L };
        let pf = self.cold(2);
        let kw = keys.as_ptr() as *const u32;
        let op = out.as_mut_ptr();
        let mut np = 0;
        let mut i = 0;
        // SAFETY: AVX2 (the contract); vectors read keys `i..i + g < n` and write as many
        // results; direct-pointing indices are inside rows 1–256; `np <= i`, so the
        // pending stores stay inside `CHUNK + 8` entries.
        unsafe {
            let zero = _mm256_setzero_si256();
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let octet2 = octet_mask(1);
            while i + g <= n {
                let mut buf = [0u32; 2 * L];
                for (j, b) in buf.iter_mut().enumerate().take(g) {
                    let w = *kw.add((i + j) * F::WORDS + F::FIRST_WORD);
                    let ix = (w >> 16) as usize + DP_FIRST_ROW * ROW;
                    *b = if core::mem::size_of::<C::E>() == 2 {
                        *(self.tp as *const u16).add(ix) as u32
                    } else {
                        *(self.tp as *const u32).add(ix)
                    };
                }
                for h in 0..g / L {
                    let j = i + h * L;
                    let e = _mm256_loadu_si256(buf.as_ptr().add(h * L) as *const __m256i);
                    let (base, res) = C::step(&self.dec, e, zero);
                    _mm256_storeu_si256(op.add(j) as *mut __m256i, C::finish(res));
                    let w = F::word_in_order(keys.as_ptr().add(j), F::FIRST_WORD);
                    let next = _mm256_add_epi32(base, _mm256_shuffle_epi8(w, octet2));
                    let keep =
                        !_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(base, zero)))
                            as u32
                            & 0xff;
                    let idx = _mm256_add_epi32(_mm256_set1_epi32(j as i32), lane);
                    np = self.pack(np, keep, idx, w, next, 2);
                }
                i += g;
            }
            while i < n {
                let w = *kw.add(i * F::WORDS + F::FIRST_WORD);
                let (base, nh) = self.element(DP_FIRST_ROW * ROW + (w >> 16) as usize);
                *op.add(i) = nh;
                if base != 0 {
                    np = self.push(np, i as u32, w, base + (w >> 8 & 0xff) as usize, pf);
                }
                i += 1;
            }
        }
        np
    }

    /// The octet passes of a chunk whose direct pointing pass left `np` pending lookups
    /// in the current pending list, until none goes on.
    ///
    /// # Safety
    /// AVX2; the pending entries come from the direct pointing pass of the same
    /// `keys` and `out`.
    #[inline(always)]
    unsafe fn octet_passes<const FUSED: bool>(
        &mut self,
        mut np: usize,
        keys: &[F::Key],
        out: &mut [u32],
    ) {
        let mut octet = 2;
        while np > 0 {
            // SAFETY: as this function's; each pass's entries come from the pass before.
            np = unsafe { self.octet_pass::<FUSED>(octet, np, keys, out) };
            octet += 1;
        }
    }

    /// The pass that reads the elements of octet `o` for the `np` pending lookups, writes
    /// their next hops and packs those that go on; returns their count.
    ///
    /// # Safety
    /// AVX2; the pending entries come from the pass before on the same `keys` and `out`.
    #[inline(always)]
    unsafe fn octet_pass<const FUSED: bool>(
        &mut self,
        o: usize,
        np: usize,
        keys: &[F::Key],
        out: &mut [u32],
    ) -> usize {
        debug_assert!(o >= 2 && o < F::OCTETS, "a row below the last octet");
        let g = if FUSED { 2 * L } else { L };
        let on = o + 1;
        let reload = on.is_multiple_of(4);
        let wn = F::FIRST_WORD.wrapping_sub(on / 4);
        let shift = 24 - 8 * (on % 4) as u32;
        let pf = self.cold(on);
        let kw = keys.as_ptr() as *const u32;
        let op = out.as_mut_ptr();
        let (mut rp, mut wp) = (0, 0);
        // SAFETY: AVX2 (the contract); entries `rp..rp + g <= np` were written by the pass
        // before; `wp <= rp`, so the in-place packed stores (8 entries at `wp`) never
        // overwrite an entry not yet read; key indices are below `keys.len()`; element
        // indices come from elements, which name allocated rows (or End-of-Lookup).
        unsafe {
            let zero = _mm256_setzero_si256();
            let om = octet_mask(3 - (on % 4) as i8);
            let vector_end = if self.scalar_pass(o) { 0 } else { np };
            while rp + g <= vector_end {
                for h in 0..g / L {
                    let r = rp + h * L;
                    let p = &*self.p;
                    let ld = |a: &[MaybeUninit<u32>; CHUNK + L]| {
                        _mm256_loadu_si256(a.as_ptr().add(r) as *const __m256i)
                    };
                    let (idx, next) = (ld(&p.idx), ld(&p.next));
                    let mut word = ld(&p.word);
                    let (base, res) = C::step(&self.dec, C::gather(self.tp, next), zero);
                    let mut nh = [0u32; L];
                    _mm256_storeu_si256(nh.as_mut_ptr() as *mut __m256i, C::finish(res));
                    for (l, &v) in nh.iter().enumerate() {
                        let k = p.idx[r + l].assume_init() as usize;
                        debug_assert!(k < keys.len());
                        *op.add(k) = v;
                    }
                    let keep =
                        !_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(base, zero)))
                            as u32
                            & 0xff;
                    debug_assert!(keep == 0 || on < F::OCTETS, "a row below the last octet");
                    if reload && on < F::OCTETS {
                        {
                            debug_assert!(F::WORDS == 4);
                            let wi = _mm256_add_epi32(
                                _mm256_slli_epi32::<2>(idx),
                                _mm256_set1_epi32(wn as i32),
                            );
                            word = _mm256_mask_i32gather_epi32::<4>(
                                zero,
                                kw as *const i32,
                                wi,
                                _mm256_cmpeq_epi32(_mm256_cmpeq_epi32(base, zero), zero),
                            );
                        }
                    }
                    let next = _mm256_add_epi32(base, _mm256_shuffle_epi8(word, om));
                    wp = self.pack(wp, keep, idx, word, next, on);
                }
                rp += g;
            }
            while rp < np {
                let p = &*self.p;
                let (k, next) = (p.idx[rp].assume_init(), p.next[rp].assume_init());
                let (base, nh) = self.element(next as usize);
                *op.add(k as usize) = nh;
                if base != 0 {
                    debug_assert!(on < F::OCTETS, "a row below the last octet");
                    // The word holding the next octet, from the key (a scalar pass's
                    // entries carry no word: the pass before did not pack it).
                    let w = *kw.add(k as usize * F::WORDS + wn);
                    wp = self.push(wp, k, w, base + (w >> shift & 0xff) as usize, pf);
                }
                rp += 1;
            }
        }
        wp
    }
}

/// Looks up `keys` into `out` chunk by chunk.
///
/// # Safety
/// AVX2; `out.len() >= keys.len()`; `t` and `split` come from one build.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn lookup<C: Simd, F: Family, const FUSED: bool>(
    t: &Elements<C::E>,
    split: u32,
    params: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(out.len() >= keys.len());
    let new = || Pending {
        idx: [MaybeUninit::uninit(); CHUNK + L],
        word: [MaybeUninit::uninit(); CHUNK + L],
        next: [MaybeUninit::uninit(); CHUNK + L],
    };
    let (mut pending, mut behind) = (new(), new());
    // SAFETY: AVX2 is enabled (this function's target feature); `split` decodes `t`.
    unsafe {
        let mut ctx = Ctx::<C, F> {
            tp: t.as_ptr(),
            split,
            dec: C::decoder(split),
            #[cfg(debug_assertions)]
            len: t.as_slice().len(),
            cold_octets: params.cold_octets,
            scalar_passes: params.scalar_passes,
            p: &mut pending,
            _f: core::marker::PhantomData,
        };
        // The chunks are pipelined: the direct pointing pass of a chunk runs before the
        // octet passes of the chunk before it, so that the elements prefetched for a
        // chunk's first octet pass have a whole pass to arrive. Two pending lists take
        // turns (`ctx.p` and `other`).
        let mut other = &mut behind;
        let mut prev = None;
        for (c, (k, o)) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)).enumerate() {
            prefetch_keys_ahead(keys, c * CHUNK, CHUNK, KEYS_AHEAD);
            let np = ctx.dp_pass::<FUSED>(k, o);
            core::mem::swap(&mut ctx.p, &mut other);
            if let Some((k, o, np)) = prev.take() {
                ctx.octet_passes::<FUSED>(np, k, o);
            }
            prev = Some((k, o, np));
        }
        core::mem::swap(&mut ctx.p, &mut other);
        if let Some((k, o, np)) = prev {
            ctx.octet_passes::<FUSED>(np, k, o);
        }
    }
}

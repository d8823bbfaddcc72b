//! The lane-refilling kernel on sixteen AVX-512 lanes (the AVX2 kernel's design,
//! `avx2/refill.rs`, with one 16-lane register where it has two 8-lane ones).
//!
//! A call is cut into chunks of [`CHUNK`] keys, and a chunk is looked up level by level:
//! a direct pointing pass over the keys, sixteen at a time, writes every next hop to
//! `out` (final for most keys) and packs the lookups that go on into the chunk's pending
//! list; then one pass per octet over the pending list gathers sixteen pending lookups at
//! a time, writes their next hops at their keys' own indices and packs those that go on
//! again, in place. What AVX-512 changes:
//!
//! * the lanes that go on are a mask register written by the decoding compare, and the
//!   packing is `vpcompressd` under that mask (the AVX2 kernel builds a `movemask`, looks
//!   a permutation up in a table and permutes each array);
//! * the last, partial vector of a pass or a chunk is a masked load, gather and store
//!   instead of a scalar loop;
//! * the next hops of a pass go to their keys' indices by one `vpscatterdd`.
//!
//! A level few of whose elements name a row is still passed by the scalar loop (see
//! [`LookupParams::scalar_passes`](super::super::LookupParams)), and the prefetching
//! rule and the pipelining of chunks are the AVX2 kernel's.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::ops::{dp_index, lanes_below, octet, prefetch_lanes, Family512, Simd512};
use crate::schemes::spider::{Elements, LookupParams, DP_FIRST_ROW, KEYS_AHEAD, ROW};
use crate::simd::prefetch_keys_ahead;

/// Keys per chunk (as the AVX2 kernel).
pub(super) const CHUNK: usize = 256;

/// Lanes per vector.
const L: usize = 16;

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
struct Ctx<'a, C: Simd512, F: Family512> {
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

impl<C: Simd512, F: Family512> Ctx<'_, C, F> {
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

    /// Whether the rows read at `octet` are prefetched.
    #[inline(always)]
    fn cold(&self, octet: usize) -> bool {
        self.cold_octets & (1 << octet) != 0
    }

    /// Whether the pass reading the rows of `octet` runs scalar code.
    #[inline(always)]
    fn scalar_pass(&self, octet: usize) -> bool {
        self.scalar_passes & (1 << octet) != 0
    }

    /// Packs the lanes of `keep` of `idx`, `word` and `next` to pending entry `at`
    /// (`vpcompressd`) for the pass reading the rows of octet `pass`: their elements
    /// prefetched if that level is cold, and `word` left out if that pass is scalar (it
    /// reads the word from the key); returns the next free entry.
    ///
    /// # Safety
    /// AVX-512F and POPCNT; `at <= CHUNK`.
    #[inline(always)]
    unsafe fn pack(
        &mut self,
        at: usize,
        keep: __mmask16,
        idx: __m512i,
        word: __m512i,
        next: __m512i,
        pass: usize,
    ) -> usize {
        let (prefetch, with_word) = (self.cold(pass), !self.scalar_pass(pass));
        debug_assert!(at <= CHUNK);
        // SAFETY: the arrays hold `CHUNK + 16` entries, so 16 lanes at `at <= CHUNK` fit;
        // register operations; a prefetch never faults.
        unsafe {
            let p = &mut *self.p;
            let st = |a: &mut [MaybeUninit<u32>; CHUNK + L], v: __m512i| {
                _mm512_storeu_si512(a.as_mut_ptr().add(at) as *mut __m512i, v)
            };
            // Compressed in a register and stored whole: `vpcompressd` to memory, and
            // masked stores in general, cost several times as much (measured on Zen 5).
            let next = _mm512_maskz_compress_epi32(keep, next);
            st(&mut p.idx, _mm512_maskz_compress_epi32(keep, idx));
            if with_word {
                st(&mut p.word, _mm512_maskz_compress_epi32(keep, word));
            }
            st(&mut p.next, next);
            let n = keep.count_ones();
            if prefetch {
                // The packed lanes `0..n` (the lanes after them are 0: row 0).
                prefetch_lanes(self.tp, next, n > 8);
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

    /// The direct-pointing elements of the sixteen keys at `k`, by sixteen scalar loads
    /// (the 128 KiB `Compact16` direct pointing table stays in L2; see `SCALAR_DP`) put
    /// into four 128-bit rows that are joined, so that no insert waits for the twelve
    /// before it.
    ///
    /// # Safety
    /// AVX-512F; `k` holds 16 keys.
    #[inline(always)]
    unsafe fn dp_scalar(&self, k: *const F::Key) -> __m512i {
        let kw = k as *const u32;
        // SAFETY: the keys are 16 × `WORDS` words; the index is inside rows 1–256.
        unsafe {
            let e = |j: usize| -> i32 {
                let w = *kw.add(j * F::WORDS + F::FIRST_WORD);
                let ix = (w >> 16) as usize + DP_FIRST_ROW * ROW;
                (if core::mem::size_of::<C::E>() == 2 {
                    *(self.tp as *const u16).add(ix) as u32
                } else {
                    *(self.tp as *const u32).add(ix)
                }) as i32
            };
            // Four independent 128-bit rows of four elements, joined.
            let q = |j: usize| _mm_setr_epi32(e(j), e(j + 1), e(j + 2), e(j + 3));
            let lo = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q(0)), q(4));
            let hi = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q(8)), q(12));
            _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
        }
    }

    /// The direct pointing pass over the chunk `keys`/`out`; returns the pending count.
    ///
    /// # Safety
    /// AVX-512F and POPCNT; `out.len() >= keys.len()`, `keys.len() <= CHUNK`.
    #[inline(always)]
    unsafe fn dp_pass(&mut self, keys: &[F::Key], out: &mut [u32]) -> usize {
        let n = keys.len();
        debug_assert!(n <= CHUNK && out.len() >= n);
        let op = out.as_mut_ptr();
        let mut np = 0;
        let mut i = 0;
        // SAFETY: AVX-512 (the contract); vectors read keys `i..i + 16 <= n` (or the
        // masked `i..n`) and write as many results; direct-pointing indices are inside
        // rows 1–256; `np <= i`, so the packed stores stay inside `CHUNK + 16` entries.
        unsafe {
            let zero = _mm512_setzero_si512();
            let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            while i < n {
                let kp = keys.as_ptr().add(i);
                let idx = _mm512_add_epi32(_mm512_set1_epi32(i as i32), lane);
                let (w, e, m) = if i + L <= n {
                    let w = F::word(kp, F::FIRST_WORD);
                    let e = if SCALAR_DP {
                        self.dp_scalar(kp)
                    } else {
                        C::gather(self.tp, dp_index(w))
                    };
                    (w, e, !0)
                } else {
                    let m = lanes_below(n - i);
                    let w = F::word_partial(kp, F::FIRST_WORD, n - i);
                    (w, C::gather_masked(self.tp, dp_index(w), m), m)
                };
                let (base, res, row) = C::step(&self.dec, e, zero);
                if m == !0 {
                    _mm512_storeu_si512(op.add(i) as *mut __m512i, C::finish(res));
                } else {
                    _mm512_mask_storeu_epi32(op.add(i) as *mut i32, m, C::finish(res));
                }
                let next = _mm512_add_epi32(base, octet(w, 1));
                np = self.pack(np, row & m, idx, w, next, 2);
                i += L;
            }
        }
        np
    }

    /// The octet passes of a chunk whose direct pointing pass left `np` pending lookups
    /// in the current pending list, until none goes on.
    ///
    /// # Safety
    /// AVX-512F and POPCNT; the pending entries come from the direct pointing pass of the same
    /// `keys` and `out`.
    #[inline(always)]
    unsafe fn octet_passes(&mut self, mut np: usize, keys: &[F::Key], out: &mut [u32]) {
        let mut octet = 2;
        while np > 0 {
            // SAFETY: as this function's; each pass's entries come from the pass before.
            np = unsafe { self.octet_pass(octet, np, keys, out) };
            octet += 1;
        }
    }

    /// The pass that reads the elements of octet `o` for the `np` pending lookups, writes
    /// their next hops and packs those that go on; returns their count.
    ///
    /// # Safety
    /// AVX-512F and POPCNT; the pending entries come from the pass before on the same
    /// `keys` and `out`.
    #[inline(always)]
    unsafe fn octet_pass(
        &mut self,
        o: usize,
        np: usize,
        keys: &[F::Key],
        out: &mut [u32],
    ) -> usize {
        debug_assert!(o >= 2 && o < F::OCTETS, "a row below the last octet");
        let on = o + 1;
        let reload = on.is_multiple_of(4) && on < F::OCTETS;
        let wn = F::FIRST_WORD.wrapping_sub(on / 4);
        let byte = 3 - (on % 4) as u32;
        let pf = self.cold(on);
        let kw = keys.as_ptr() as *const u32;
        let op = out.as_mut_ptr();
        let (mut rp, mut wp) = (0, 0);
        // SAFETY: AVX-512 (the contract); entries `rp..np` were written by the pass
        // before, and the masked loads read no entry at or past `np`; `wp <= rp`, so the
        // in-place packed stores (16 entries at `wp`) never overwrite an entry not yet
        // read; key indices are below `keys.len()`; element indices come from elements,
        // which name allocated rows (or End-of-Lookup).
        unsafe {
            if self.scalar_pass(o) {
                let shift = 8 * byte;
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
                return wp;
            }
            let zero = _mm512_setzero_si512();
            while rp < np {
                let full = rp + L <= np;
                let m = if full { !0 } else { lanes_below(np - rp) };
                let p = &*self.p;
                let ld = |a: &[MaybeUninit<u32>; CHUNK + L]| {
                    let a = a.as_ptr().add(rp);
                    if full {
                        _mm512_loadu_si512(a as *const __m512i)
                    } else {
                        _mm512_maskz_loadu_epi32(m, a as *const i32)
                    }
                };
                let (idx, next) = (ld(&p.idx), ld(&p.next));
                let mut word = ld(&p.word);
                let e = if full {
                    C::gather(self.tp, next)
                } else {
                    C::gather_masked(self.tp, next, m)
                };
                let (base, res, row) = C::step(&self.dec, e, zero);
                let row = row & m;
                debug_assert!(row == 0 || on < F::OCTETS, "a row below the last octet");
                _mm512_mask_i32scatter_epi32::<4>(op as *mut i32, m, idx, C::finish(res));
                if reload {
                    let wi =
                        _mm512_add_epi32(_mm512_slli_epi32::<2>(idx), _mm512_set1_epi32(wn as i32));
                    word = _mm512_mask_i32gather_epi32::<4>(zero, row, wi, kw as *const i32);
                }
                let next = _mm512_add_epi32(base, octet(word, byte));
                wp = self.pack(wp, row, idx, word, next, on);
                rp += L;
            }
        }
        wp
    }
}

/// Whether the direct pointing pass reads its elements by scalar loads instead of a
/// gather.
const SCALAR_DP: bool = true;

/// Looks up `keys` into `out` chunk by chunk.
///
/// # Safety
/// AVX-512F/BW/DQ/VL and POPCNT; `out.len() >= keys.len()`; `t` and `split` come from
/// one build.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
pub(super) unsafe fn lookup<C: Simd512, F: Family512>(
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
    // SAFETY: AVX-512 is enabled (this function's target features); `split` decodes `t`.
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
            let np = ctx.dp_pass(k, o);
            core::mem::swap(&mut ctx.p, &mut other);
            if let Some((k, o, np)) = prev.take() {
                ctx.octet_passes(np, k, o);
            }
            prev = Some((k, o, np));
        }
        core::mem::swap(&mut ctx.p, &mut other);
        if let Some((k, o, np)) = prev {
            ctx.octet_passes(np, k, o);
        }
    }
}

//! The lockstep AVX2 kernels for Spider: Algorithm 1 (IPv4) and Algorithm 2 (IPv6) with
//! loop fusion.
//!
//! One kernel serves both families and every degree of parallelism; `const` switches
//! shape it:
//!
//! * `FUSED`: two 8-lane streams per block (more than 8 ways), the paper's loop fusion;
//! * `PARTIAL`: lanes masked off (any `ways` but 8 and 16): masked loads and stores, and a
//!   masked direct-pointing gather that leaves idle lanes at 0, which is End-of-Lookup;
//! * `K`: blocks in flight. `K = 1` is the paper's loop exactly: the direct-pointing gather,
//!   then one gather per octet until every lane is at End-of-Lookup, then the next block.
//!   With `K > 1` the kernel keeps `K` blocks at different depths and visits them in turn;
//!   a visit steps its block until the block reaches a level where it *yields*, and the
//!   other `K − 1` blocks are visited before it is stepped again. A finished block is
//!   stored and its slot takes the next block at once. Two modes (see
//!   [`LookupParams::lockstep_blocks`](super::super::LookupParams::lockstep_blocks)):
//!   * *pipelined* ([`IN_FLIGHT`] blocks), when some level is too large to stay cached: a
//!     block yields before such a level after prefetching the element every lane of it
//!     reads there, which arrives while the other blocks are visited ("asynchronous memory
//!     access chaining", Kocberber et al., VLDB 2015, applied to Spider's lockstep blocks:
//!     the gathers then mostly hit L1/L2 instead of waiting for memory one level at a
//!     time);
//!   * *interleaved* ([`INTERLEAVE`] blocks), when every level stays cached: a block yields
//!     at every level and nothing is prefetched, so the gathers of two blocks are in
//!     flight together (the paper's loop fusion, carried across blocks) instead of each
//!     level waiting for the last.
//!
//! The entry points (`avx2/mod.rs`) hand the tail (fewer than `ways` addresses) to the
//! scalar twin.

use core::arch::x86_64::*;

use super::ops::{all_zero, dp_index, octet_mask, Family, Masks, Simd};
use crate::schemes::spider::{Elements, DP_FIRST_ROW, INTERLEAVE, IN_FLIGHT, KEYS_AHEAD, ROW};
use crate::simd::prefetch_keys_ahead;

/// A block in flight: its lanes' next-row bases, results and current words, and the octet
/// it reads next.
#[derive(Clone, Copy)]
struct Slot {
    block: usize,
    octet: usize,
    base: [__m256i; 2],
    res: [__m256i; 2],
    dst: [__m256i; 2],
}

/// What every visit needs.
struct Ctx<C: Simd, F: Family> {
    tp: *const C::E,
    dec: C::Dec,
    keys: *const F::Key,
    out: *mut u32,
    ways: usize,
    blocks: usize,
    masks: [Masks; 2],
    octets: [__m256i; 4],
    /// Bit `o` set: a visit returns when its block is about to read octet `o` (`K > 1`).
    yield_octets: u32,
    /// Bit `o` set: the rows read at octet `o` are too many to stay cached, so a block
    /// yielding there prefetches them first.
    cold_octets: u32,
}

impl<C: Simd, F: Family> Ctx<C, F> {
    /// Stores a finished block.
    ///
    /// # Safety
    /// AVX2; `block < self.blocks`.
    #[inline(always)]
    unsafe fn store<const FUSED: bool, const PARTIAL: bool>(
        &self,
        block: usize,
        res: [__m256i; 2],
    ) {
        // SAFETY: block `block` has `ways` output slots: 8 per stream, or the masked lanes.
        unsafe {
            let o = self.out.add(block * self.ways);
            F::store::<PARTIAL>(o, C::finish(res[0]), &self.masks[0]);
            if FUSED {
                F::store::<PARTIAL>(o.add(8), C::finish(res[1]), &self.masks[1]);
            }
        }
    }

    /// The direct-pointing elements of the block at `k` (8 lanes, or 16 if `FUSED`) by
    /// scalar loads instead of the `vpgatherdd` of Algorithm 1, line 5: the 128 KiB
    /// (`Compact16`) direct pointing table stays in L2, and where a gather is microcoded
    /// at about one load per cycle scalar loads issue up to three per cycle (IPv4 only:
    /// IPv6 lanes are in unpack order, and the permute it would need costs what it
    /// gains, so IPv6 keeps the gather).
    ///
    /// # Safety
    /// AVX2; `k` holds the block's keys (no masked lanes).
    #[inline(always)]
    unsafe fn dp_scalar<const FUSED: bool>(&self, k: *const F::Key) -> (__m256i, __m256i) {
        let stride = core::mem::size_of::<F::Key>() / 4;
        let kw = k as *const u32;
        let mut buf = [0u32; 16];
        let n = if FUSED { 16 } else { 8 };
        // SAFETY: the block holds `n` keys of `stride` words; the index is inside rows
        // 1–256 (16 bits plus row 1).
        unsafe {
            for (i, b) in buf.iter_mut().enumerate().take(n) {
                let w = *kw.add(i * stride + F::FIRST_WORD);
                let ix = (w >> 16) as usize + DP_FIRST_ROW * ROW;
                *b = if core::mem::size_of::<C::E>() == 2 {
                    *(self.tp as *const u16).add(ix) as u32
                } else {
                    *(self.tp as *const u32).add(ix)
                };
            }
            (
                _mm256_loadu_si256(buf.as_ptr() as *const __m256i),
                _mm256_loadu_si256(buf.as_ptr().add(8) as *const __m256i),
            )
        }
    }

    /// Prefetches the element each lane of `s` reads next.
    ///
    /// # Safety
    /// AVX2.
    #[inline(always)]
    unsafe fn prefetch<const FUSED: bool>(&self, s: &Slot) {
        let m = self.octets[3 - s.octet % 4];
        // SAFETY: AVX2 register operations; a prefetch is a hint and never faults (the
        // index is in the table anyway).
        unsafe {
            // The indices leave the register by `vmovq`/`vpextrq` (two lanes each) rather
            // than a store and eight reloads: fewer load-port µops, which the gathers and
            // prefetches compete for.
            let pf = |v: __m256i| {
                for x in [_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v)] {
                    let a = _mm_cvtsi128_si64(x) as u64;
                    let b = _mm_extract_epi64::<1>(x) as u64;
                    for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                        let p = self.tp.wrapping_add(i as usize) as *const i8;
                        // Into L1, as the refilling kernels' prefetches: the element is
                        // read at the block's next visit.
                        _mm_prefetch::<_MM_HINT_T0>(p);
                    }
                }
            };
            pf(_mm256_add_epi32(
                s.base[0],
                _mm256_shuffle_epi8(s.dst[0], m),
            ));
            if FUSED {
                pf(_mm256_add_epi32(
                    s.base[1],
                    _mm256_shuffle_epi8(s.dst[1], m),
                ));
            }
        }
    }

    /// Whether a visit returns before its block reads `octet` (with `K = 1`, the paper's
    /// loop, it never does).
    #[inline(always)]
    fn yields<const K: usize>(&self, octet: usize) -> bool {
        K > 1 && self.yield_octets & (1 << octet) != 0
    }

    /// One visit of slot `s`: if `fresh`, takes the next block (the direct-pointing
    /// gathers, Algorithm 1 lines 1–8), else steps its block by one octet (lines 11–17);
    /// continues while the next level is cached, and returns once it is cold, after
    /// prefetching it. Finished blocks are stored and replaced. Returns false when no
    /// blocks are left.
    ///
    /// # Safety
    /// AVX2; unless `fresh`, `s` holds a block from an earlier visit.
    #[inline(always)]
    unsafe fn visit<const FUSED: bool, const PARTIAL: bool, const K: usize>(
        &self,
        next: &mut usize,
        s: &mut Slot,
        mut fresh: bool,
    ) -> bool {
        // SAFETY: AVX2 (the contract). `keys` holds `ways · blocks` keys; block `block <
        // blocks` holds `ways` keys (8 per stream unless masked); direct-pointing indices
        // are inside rows 1–256; row bases come from elements, which name allocated rows
        // (or EoL).
        unsafe {
            let zero = _mm256_setzero_si256();
            let m = &self.masks;
            loop {
                if fresh {
                    if *next == self.blocks {
                        return false;
                    }
                    let block = *next;
                    *next += 1;
                    if K > 1 {
                        let keys = core::slice::from_raw_parts(self.keys, self.ways * self.blocks);
                        prefetch_keys_ahead(keys, self.ways * block, self.ways, KEYS_AHEAD);
                    }
                    let k = self.keys.add(block * self.ways);
                    let da = F::word::<PARTIAL>(k, F::FIRST_WORD, &m[0]);
                    let db = if FUSED {
                        F::word::<PARTIAL>(k.add(8), F::FIRST_WORD, &m[1])
                    } else {
                        zero
                    };
                    let (va, vb) = if F::SCALAR_DP && !PARTIAL && K > 1 {
                        self.dp_scalar::<FUSED>(k)
                    } else {
                        let g = |d: __m256i, m: &Masks| {
                            if PARTIAL {
                                C::gather_masked(self.tp, dp_index(d), m.lanes)
                            } else {
                                C::gather(self.tp, dp_index(d))
                            }
                        };
                        (g(da, &m[0]), if FUSED { g(db, &m[1]) } else { zero })
                    };
                    let (ba, ra) = C::step(&self.dec, va, zero);
                    let (mut bb, mut rb) = (zero, zero);
                    if FUSED {
                        (bb, rb) = C::step(&self.dec, vb, zero);
                    }
                    if all_zero(_mm256_or_si256(ba, bb)) {
                        self.store::<FUSED, PARTIAL>(block, [ra, rb]);
                        continue;
                    }
                    *s = Slot {
                        block,
                        octet: 2,
                        base: [ba, bb],
                        res: [ra, rb],
                        dst: [da, db],
                    };
                    fresh = false;
                } else {
                    let o = self.octets[3 - s.octet % 4];
                    let ia = _mm256_add_epi32(s.base[0], _mm256_shuffle_epi8(s.dst[0], o));
                    (s.base[0], s.res[0]) = C::step(&self.dec, C::gather(self.tp, ia), s.res[0]);
                    if FUSED {
                        let ib = _mm256_add_epi32(s.base[1], _mm256_shuffle_epi8(s.dst[1], o));
                        (s.base[1], s.res[1]) =
                            C::step(&self.dec, C::gather(self.tp, ib), s.res[1]);
                    }
                    s.octet += 1;
                    if all_zero(_mm256_or_si256(s.base[0], s.base[1])) {
                        self.store::<FUSED, PARTIAL>(s.block, s.res);
                        fresh = true;
                        continue;
                    }
                    debug_assert!(s.octet < F::OCTETS, "a row below the last octet");
                    if s.octet.is_multiple_of(4) {
                        // Refill with the next 32 bits (Algorithm 2, lines 25–34).
                        let k = self.keys.add(s.block * self.ways);
                        let w = F::FIRST_WORD - s.octet / 4;
                        s.dst[0] = F::word::<PARTIAL>(k, w, &m[0]);
                        if FUSED {
                            s.dst[1] = F::word::<PARTIAL>(k.add(8), w, &m[1]);
                        }
                    }
                }
                if self.yields::<K>(s.octet) {
                    if self.cold_octets & (1 << s.octet) != 0 {
                        self.prefetch::<FUSED>(s);
                    }
                    return true;
                }
            }
        }
    }
}

/// # Safety
/// AVX2; `keys.len()` is a multiple of `ways` and at most `out.len()`; `ways` is 16 if
/// `FUSED && !PARTIAL`, 8 if `!FUSED && !PARTIAL`, 9…15 if `FUSED && PARTIAL` and 1…7
/// otherwise; `t` and `split` come from one build.
#[target_feature(enable = "avx2")]
unsafe fn kernel<C: Simd, F: Family, const FUSED: bool, const PARTIAL: bool, const K: usize>(
    t: &Elements<C::E>,
    split: u32,
    yield_octets: u32,
    cold_octets: u32,
    ways: usize,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(keys.len() % ways == 0 && out.len() >= keys.len());
    debug_assert!(ways == if FUSED { 16 } else { 8 } || PARTIAL);
    debug_assert!(ways > 8 || !FUSED);
    // SAFETY: AVX2 is enabled (this function's target feature); the contract gives `ctx`'s
    // invariants: `blocks` blocks of `ways` keys and output slots.
    unsafe {
        let (na, nb) = if PARTIAL {
            (ways.min(8), ways.saturating_sub(8))
        } else {
            (8, 8)
        };
        let ctx = Ctx::<C, F> {
            tp: t.as_ptr(),
            dec: C::decoder(split),
            keys: keys.as_ptr(),
            out: out.as_mut_ptr(),
            ways,
            blocks: keys.len() / ways,
            masks: [F::masks(na), F::masks(nb)],
            octets: [octet_mask(0), octet_mask(1), octet_mask(2), octet_mask(3)],
            yield_octets,
            cold_octets,
        };
        let zero = _mm256_setzero_si256();
        let mut slots = [Slot {
            block: 0,
            octet: 0,
            base: [zero; 2],
            res: [zero; 2],
            dst: [zero; 2],
        }; K];
        let mut live = [false; K];
        let mut n_live = 0;
        let mut next = 0;
        for (s, l) in slots.iter_mut().zip(&mut live) {
            *l = ctx.visit::<FUSED, PARTIAL, K>(&mut next, s, true);
            n_live += *l as usize;
        }
        while n_live > 0 {
            for (s, l) in slots.iter_mut().zip(&mut live) {
                if *l && !ctx.visit::<FUSED, PARTIAL, K>(&mut next, s, false) {
                    *l = false;
                    n_live -= 1;
                }
            }
        }
    }
}

/// Runs the kernel of one shape with `blocks` blocks in flight: 1 (the paper's loop),
/// [`INTERLEAVE`] (yield at every level, no prefetching) or [`IN_FLIGHT`] (yield and
/// prefetch before the levels of `cold_octets`).
///
/// # Safety
/// As for [`kernel`]; `blocks` is one of the three.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn shape<C: Simd, F: Family, const FUSED: bool, const PARTIAL: bool>(
    t: &Elements<C::E>,
    split: u32,
    blocks: usize,
    cold_octets: u32,
    ways: usize,
    keys: &[F::Key],
    out: &mut [u32],
) {
    // SAFETY: the contract.
    unsafe {
        match blocks {
            IN_FLIGHT => kernel::<C, F, FUSED, PARTIAL, IN_FLIGHT>(
                t,
                split,
                cold_octets,
                cold_octets,
                ways,
                keys,
                out,
            ),
            INTERLEAVE => {
                kernel::<C, F, FUSED, PARTIAL, INTERLEAVE>(t, split, !0, 0, ways, keys, out)
            }
            _ => kernel::<C, F, FUSED, PARTIAL, 1>(t, split, 0, 0, ways, keys, out),
        }
    }
}

//! The AVX-512 primitives of the Spider kernels, on sixteen 32-bit lanes: per element
//! layout ([`Simd512`]: gathers and the decoding of gathered elements into a next-row
//! vector and a mask of the lanes that go on), per address family ([`Family512`]: one
//! 32-bit word of sixteen addresses, in address order), and the octet extraction both
//! kernels use. Where the AVX2 primitives (`avx2/ops.rs`) blend on vector masks, these
//! keep lane predicates in mask registers (`k0`–`k7`): compares write masks, and masked
//! moves and zeroing replace the blends.

use core::arch::x86_64::*;

use crate::schemes::spider::codec::{Codec, Compact16, Paper32, Wide32};
use crate::schemes::spider::{DP_FIRST_ROW, FIRST_STRIDE_ROW, ROW};

/// The element operations of one layout on sixteen lanes.
///
/// All functions are `#[inline(always)]` and only called from kernels compiled with
/// `#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]`.
pub(in crate::schemes::spider) trait Simd512: Codec {
    /// Per-table decoding constants.
    type Dec: Copy;

    /// The constants for a table with the codec parameter `split`.
    ///
    /// # Safety
    /// AVX-512F.
    unsafe fn decoder(split: u32) -> Self::Dec;

    /// `vpgatherdd` of the sixteen elements at element indices `idx`.
    ///
    /// # Safety
    /// AVX-512F; every index is an element index of the table at `t` (the padding after
    /// the last row covers the 4-byte read of a 2-byte element).
    unsafe fn gather(t: *const Self::E, idx: __m512i) -> __m512i;

    /// As [`gather`](Self::gather) for the lanes set in `k`; the others read nothing and
    /// are 0.
    ///
    /// # Safety
    /// As `gather`, for the lanes set in `k`.
    unsafe fn gather_masked(t: *const Self::E, idx: __m512i, k: __mmask16) -> __m512i;

    /// Decodes gathered elements: the index of each lane's next row element 0 (`row ×
    /// 256`; 0 = End-of-Lookup), `res` with the next hops the elements set, and the mask
    /// of the lanes whose element names a row.
    ///
    /// # Safety
    /// AVX-512F.
    unsafe fn step(d: &Self::Dec, val: __m512i, res: __m512i) -> (__m512i, __m512i, __mmask16);

    /// The next-hop ids from the accumulated `res`.
    ///
    /// # Safety
    /// AVX-512F.
    unsafe fn finish(res: __m512i) -> __m512i;
}

/// Constants of the `Compact16` decoder.
#[derive(Clone, Copy)]
pub(in crate::schemes::spider) struct SplitDec {
    /// 0xffff: the element is the low half of the gathered dword.
    low16: __m512i,
    /// `split − 1`: values above it name rows.
    last_nh: __m512i,
    /// `FIRST_STRIDE_ROW − split`: added to a row value, gives the row index.
    to_row: __m512i,
}

impl Simd512 for Compact16 {
    type Dec = SplitDec;
    #[inline(always)]
    unsafe fn decoder(split: u32) -> SplitDec {
        // SAFETY: AVX-512F register operations (the caller's).
        unsafe {
            SplitDec {
                low16: _mm512_set1_epi32(0xffff),
                last_nh: _mm512_set1_epi32(split as i32 - 1),
                to_row: _mm512_set1_epi32(FIRST_STRIDE_ROW as i32 - split as i32),
            }
        }
    }
    #[inline(always)]
    unsafe fn gather(t: *const u16, idx: __m512i) -> __m512i {
        // SAFETY: see the trait; scale 2 reads the element and the one after it (or the
        // padding), masked off in `step`.
        unsafe { _mm512_i32gather_epi32::<2>(idx, t as *const i32) }
    }
    #[inline(always)]
    unsafe fn gather_masked(t: *const u16, idx: __m512i, k: __mmask16) -> __m512i {
        // SAFETY: see the trait.
        unsafe { _mm512_mask_i32gather_epi32::<2>(_mm512_setzero_si512(), k, idx, t as *const i32) }
    }
    #[inline(always)]
    unsafe fn step(d: &SplitDec, val: __m512i, res: __m512i) -> (__m512i, __m512i, __mmask16) {
        // SAFETY: AVX-512F register operations.
        unsafe {
            let v = _mm512_and_si512(val, d.low16);
            let row = _mm512_cmpgt_epu32_mask(v, d.last_nh);
            let base = _mm512_maskz_slli_epi32::<8>(row, _mm512_add_epi32(v, d.to_row));
            // Leaf-pushed elements (see the module docs): a lane meets at most one
            // non-zero next hop, so `or` under the leaf mask is the paper's blend.
            (base, _mm512_mask_or_epi32(res, !row, res, v), row)
        }
    }
    #[inline(always)]
    unsafe fn finish(res: __m512i) -> __m512i {
        res
    }
}

impl Simd512 for Paper32 {
    type Dec = ();
    #[inline(always)]
    unsafe fn decoder(_: u32) {}
    #[inline(always)]
    unsafe fn gather(t: *const u32, idx: __m512i) -> __m512i {
        // SAFETY: see the trait.
        unsafe { _mm512_i32gather_epi32::<4>(idx, t as *const i32) }
    }
    #[inline(always)]
    unsafe fn gather_masked(t: *const u32, idx: __m512i, k: __mmask16) -> __m512i {
        // SAFETY: see the trait.
        unsafe { _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), k, idx, t as *const i32) }
    }
    /// Algorithm 1, lines 14–17, with a mask register for `maskbl`: the lanes whose
    /// next-hop field is non-zero take it; the row field moved up by one byte is `row ×
    /// 256`.
    #[inline(always)]
    unsafe fn step(_: &(), val: __m512i, res: __m512i) -> (__m512i, __m512i, __mmask16) {
        // SAFETY: AVX-512F register operations.
        unsafe {
            let nhi = _mm512_and_si512(val, _mm512_set1_epi32(0xffff));
            let set = _mm512_test_epi32_mask(nhi, nhi);
            let base = _mm512_srli_epi32::<8>(_mm512_andnot_si512(_mm512_set1_epi32(0xffff), val));
            let row = _mm512_test_epi32_mask(base, base);
            (base, _mm512_mask_mov_epi32(res, set, nhi), row)
        }
    }
    #[inline(always)]
    unsafe fn finish(res: __m512i) -> __m512i {
        res
    }
}

impl Simd512 for Wide32 {
    type Dec = ();
    #[inline(always)]
    unsafe fn decoder(_: u32) {}
    #[inline(always)]
    unsafe fn gather(t: *const u32, idx: __m512i) -> __m512i {
        // SAFETY: see the trait.
        unsafe { _mm512_i32gather_epi32::<4>(idx, t as *const i32) }
    }
    #[inline(always)]
    unsafe fn gather_masked(t: *const u32, idx: __m512i, k: __mmask16) -> __m512i {
        // SAFETY: see the trait.
        unsafe { _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), k, idx, t as *const i32) }
    }
    /// The tag is the sign bit: `vpmovd2m` makes it a mask.
    #[inline(always)]
    unsafe fn step(_: &(), val: __m512i, res: __m512i) -> (__m512i, __m512i, __mmask16) {
        // SAFETY: AVX-512F/DQ register operations.
        unsafe {
            let leaf = _mm512_movepi32_mask(val);
            let base = _mm512_maskz_mov_epi32(!leaf, val);
            let row = _mm512_test_epi32_mask(base, base);
            (base, _mm512_mask_mov_epi32(res, leaf, val), row)
        }
    }
    #[inline(always)]
    unsafe fn finish(res: __m512i) -> __m512i {
        // SAFETY: AVX-512F register operations.
        unsafe { _mm512_and_si512(res, _mm512_set1_epi32(0x7fff_ffff)) }
    }
}

/// Byte `b` (0 = lowest) of every 32-bit lane, zero-extended: octet `3 − b` of the word.
#[inline(always)]
pub(super) unsafe fn octet(w: __m512i, b: u32) -> __m512i {
    // SAFETY: AVX-512F register operations.
    unsafe {
        _mm512_and_si512(
            _mm512_srl_epi32(w, _mm_cvtsi32_si128((8 * b) as i32)),
            _mm512_set1_epi32(0xff),
        )
    }
}

/// The direct-pointing index of every lane: the top 16 bits of the word plus row 1.
#[inline(always)]
pub(super) unsafe fn dp_index(w: __m512i) -> __m512i {
    // SAFETY: AVX-512F register operations.
    unsafe {
        _mm512_add_epi32(
            _mm512_srli_epi32::<16>(w),
            _mm512_set1_epi32((DP_FIRST_ROW * ROW) as i32),
        )
    }
}

/// Prefetches (into L2) the elements at the indices of lanes 0–7 of `idx`, and of lanes
/// 8–15 if `high`. The indices leave the register by `vextracti32x4` and
/// `vmovq`/`vpextrq`, two lanes each (a store and reloads would wait for the store to
/// forward). Lanes not in use hold indices into the table anyway (End-of-Lookup, or
/// copies), so prefetching them is harmless, and cheaper than a branch per group of
/// lanes: how many lanes are in use is data-dependent, so such branches mispredict.
///
/// # Safety
/// AVX-512F.
#[inline(always)]
pub(super) unsafe fn prefetch_lanes<E>(tp: *const E, idx: __m512i, high: bool) {
    // SAFETY: register operations; a prefetch is a hint and never faults.
    unsafe {
        let pf = |x: __m128i| {
            let a = _mm_cvtsi128_si64(x) as u64;
            let b = _mm_extract_epi64::<1>(x) as u64;
            for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                _mm_prefetch::<_MM_HINT_T0>(tp.wrapping_add(i as usize) as *const i8);
            }
        };
        pf(_mm512_castsi512_si128(idx));
        pf(_mm512_extracti32x4_epi32::<1>(idx));
        if high {
            pf(_mm512_extracti32x4_epi32::<2>(idx));
            pf(_mm512_extracti32x4_epi32::<3>(idx));
        }
    }
}

/// Lanes `0..n` set (n ≤ 16).
#[inline(always)]
pub(super) fn lanes_below(n: usize) -> __mmask16 {
    debug_assert!(n <= 16);
    ((1u32 << n) - 1) as __mmask16
}

/// An address family as sixteen lanes of one 32-bit word each, in address order.
pub(super) trait Family512 {
    type Key: Copy;
    /// The word holding the first 32 bits.
    const FIRST_WORD: usize;
    /// Octets in an address.
    const OCTETS: usize;
    /// 32-bit words in an address.
    const WORDS: usize;

    /// Word `w` of the sixteen addresses at `p`; lane `i` holds address `i`.
    ///
    /// # Safety
    /// AVX-512F; `p` holds 16 addresses.
    unsafe fn word(p: *const Self::Key, w: usize) -> __m512i;

    /// Word `w` of the first `n < 16` addresses at `p` (the other lanes 0); the
    /// addresses after them are not read.
    ///
    /// # Safety
    /// AVX-512F; `p` holds `n` addresses.
    unsafe fn word_partial(p: *const Self::Key, w: usize, n: usize) -> __m512i;
}

/// IPv4: the address is the word.
pub(super) struct V4;

impl Family512 for V4 {
    type Key = u32;
    const FIRST_WORD: usize = 0;
    const OCTETS: usize = 4;
    const WORDS: usize = 1;
    #[inline(always)]
    unsafe fn word(p: *const u32, _w: usize) -> __m512i {
        // SAFETY: the contract: 16 keys, an unaligned 64-byte load.
        unsafe { _mm512_loadu_si512(p as *const __m512i) }
    }
    #[inline(always)]
    unsafe fn word_partial(p: *const u32, _w: usize, n: usize) -> __m512i {
        // SAFETY: the contract; masked-off lanes are not read.
        unsafe { _mm512_maskz_loadu_epi32(lanes_below(n), p as *const i32) }
    }
}

/// IPv6: four loads of four addresses each; two `vpermt2d` pick word `w` of eight
/// addresses each, and one `vshufi64x2` joins their halves, in address order (Algorithm 2
/// needs three unpacks and a final permute for eight lanes; 512-bit two-source permutes
/// keep the order).
pub(super) struct V6;

/// The `vpermt2d` indices that pick dword `w` of each of the eight `u128`s of two
/// registers, into lanes 0–7.
#[inline(always)]
unsafe fn pick_dword(w: usize) -> __m512i {
    let w = w as i32;
    // SAFETY: AVX-512F register operation.
    unsafe {
        _mm512_setr_epi32(
            w,
            4 + w,
            8 + w,
            12 + w,
            16 + w,
            20 + w,
            24 + w,
            28 + w,
            w,
            4 + w,
            8 + w,
            12 + w,
            16 + w,
            20 + w,
            24 + w,
            28 + w,
        )
    }
}

impl Family512 for V6 {
    type Key = u128;
    /// Host-order `u128`: the first 32 bits are the high dword.
    const FIRST_WORD: usize = 3;
    const OCTETS: usize = 16;
    const WORDS: usize = 4;
    #[inline(always)]
    unsafe fn word(p: *const u128, w: usize) -> __m512i {
        // SAFETY: the contract: 16 addresses, four unaligned 64-byte loads.
        unsafe {
            let ld = |r: usize| _mm512_loadu_si512(p.add(4 * r) as *const __m512i);
            let idx = pick_dword(w);
            let lo = _mm512_permutex2var_epi32(ld(0), idx, ld(1));
            let hi = _mm512_permutex2var_epi32(ld(2), idx, ld(3));
            // Lanes 0–7 of `lo`, then lanes 0–7 of `hi`.
            _mm512_shuffle_i64x2::<0b01_00_01_00>(lo, hi)
        }
    }
    #[inline(always)]
    unsafe fn word_partial(p: *const u128, w: usize, n: usize) -> __m512i {
        debug_assert!(n < 16);
        // SAFETY: the contract; each load reads only the qwords of its addresses below
        // `n` (two per address), the rest are masked off and 0.
        unsafe {
            let ld = |r: usize| {
                let have = n.saturating_sub(4 * r).min(4);
                let k = ((1u32 << (2 * have)) - 1) as __mmask8;
                // `wrapping_add`: past the last address the pointer is not dereferenced.
                _mm512_maskz_loadu_epi64(k, p.wrapping_add(4 * r) as *const i64)
            };
            let idx = pick_dword(w);
            let lo = _mm512_permutex2var_epi32(ld(0), idx, ld(1));
            let hi = _mm512_permutex2var_epi32(ld(2), idx, ld(3));
            _mm512_shuffle_i64x2::<0b01_00_01_00>(lo, hi)
        }
    }
}

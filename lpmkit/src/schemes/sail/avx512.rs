//! AVX-512 kernel of SAIL_L for IPv4 (pivots 16, 24, 32): the software pipeline of the
//! AVX2 kernel (`avx2.rs`) with sixteen keys per stage step, each level's entries read by
//! one `vpgatherdd`. The lanes that go on to the next level are a mask register (an
//! unsigned compare against the chunk-ID limit), which zeroes the indices of the resolved
//! lanes and merges the gathered entries by a masked move instead of a blend.
//!
//! The scalar pipeline is the twin: the same stages, the same prefetches, the same
//! answers (the differential tests and `verify` run it, the AVX2 kernel and this one).

use core::arch::x86_64::*;

use super::entry::Entry;
use super::pivot::{pipeline3, Pivots};
use crate::schemes::common::Width;
use crate::simd::Avx512;

/// Keys per pipeline block (as the scalar twin).
const PIPE: usize = 64;

/// Looks up `keys` into `out` (same length); blocks of [`PIPE`] keys by AVX-512, the
/// tail by the scalar lookup.
pub(super) fn lookup_batch_v4<E: Entry>(
    _token: Avx512,
    t: &Pivots<E>,
    keys: &[u32],
    out: &mut [u32],
) {
    debug_assert_eq!(t.pivots, [16, 24, 32]);
    debug_assert_eq!(keys.len(), out.len());
    let n = keys.len() / PIPE * PIPE;
    // SAFETY: holding an `Avx512` token proves the CPU supports AVX-512F/BW/DQ/VL; `n` is
    // a multiple of `PIPE` within both slices.
    unsafe { blocks(t, &keys[..n], &mut out[..n]) };
    for (o, &a) in out[n..].iter_mut().zip(&keys[n..]) {
        *o = t.lookup_one(a);
    }
}

/// Sixteen entries of `arr` at `idx` (each below the committed length), zero-extended.
///
/// 16-bit entries are read as the aligned 32-bit word holding them and shifted out, so
/// no lane reads past the array (every level's length is even), as in the AVX2 kernel.
///
/// # Safety
/// AVX-512F; every lane of `idx` below the committed length of `arr`, whose byte length
/// fits a signed 32-bit offset.
#[inline(always)]
unsafe fn gather<E: Entry>(arr: *const E, idx: __m512i) -> __m512i {
    // SAFETY: (for both arms) the caller's bounds; each lane is one aligned 32-bit load,
    // which x86 performs as a single access, so an entry the writer stores to meanwhile
    // is read old or new, never torn (the scalar path's atomic load).
    unsafe {
        if E::WIDTH == Width::U16 {
            let one = _mm512_set1_epi32(1);
            let pair = _mm512_andnot_si512(one, idx);
            let w = _mm512_i32gather_epi32::<2>(pair, arr as *const i32);
            let shift = _mm512_slli_epi32::<4>(_mm512_and_si512(idx, one));
            _mm512_and_si512(_mm512_srlv_epi32(w, shift), _mm512_set1_epi32(0xffff))
        } else {
            _mm512_i32gather_epi32::<4>(idx, arr as *const i32)
        }
    }
}

/// Prefetches the sixteen entries `idx` names (the indices leave the register by
/// `vextracti32x4` and `vmovq`/`vpextrq`, two lanes each).
///
/// # Safety
/// AVX-512F.
#[inline(always)]
unsafe fn prefetch16<E>(arr: *const E, idx: __m512i) {
    // SAFETY: register operations; a prefetch never faults.
    unsafe {
        let pf = |x: __m128i| {
            let a = _mm_cvtsi128_si64(x) as u64;
            let b = _mm_extract_epi64::<1>(x) as u64;
            for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                _mm_prefetch::<_MM_HINT_T0>(arr.wrapping_add(i as usize) as *const i8);
            }
        };
        pf(_mm512_castsi512_si128(idx));
        pf(_mm512_extracti32x4_epi32::<1>(idx));
        pf(_mm512_extracti32x4_epi32::<2>(idx));
        pf(_mm512_extracti32x4_epi32::<3>(idx));
    }
}

/// # Safety
/// AVX-512F/BW/DQ/VL; `keys.len() == out.len()`, a multiple of [`PIPE`].
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn blocks<E: Entry>(t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
    debug_assert!(keys.len().is_multiple_of(PIPE) && out.len() == keys.len());
    debug_assert!(t.arrays.iter().all(|a| a.committed() % 2 == 0));
    let (t16, t24, t32) = (
        t.arrays[0].as_ptr(),
        t.arrays[1].as_ptr(),
        t.arrays[2].as_ptr(),
    );
    let lim = _mm512_set1_epi32(t.lim as i32);
    let low8 = _mm512_set1_epi32(0xff);
    let blocks = keys.len() / PIPE;
    // The index into the next level of the lanes of `go`, 0 for the others: entry 0 of a
    // level is committed at creation and cached.
    let next_index = |go: __mmask16, e: __m512i, byte: __m512i| {
        _mm512_maskz_or_epi32(
            go,
            _mm512_slli_epi32::<8>(_mm512_sub_epi32(e, lim)),
            _mm512_and_si512(byte, low8),
        )
    };
    // SAFETY (all three stages): indices are the top 16 bits of a key (< 2^16, the
    // committed level-16 array), or chunk indices `c << 8 | byte` of chunks whose IDs
    // were read from published entries (committed, complete before the ID's store, not
    // reused before every reader moved on), or 0; level byte lengths are below 2^31
    // (16-bit entries: < 2^16 chunks; 32-bit: < 2^20 chunks of 256). Loads and stores of
    // `keys`, `out`, `i24`, `i32_` are 16 lanes at `b * PIPE + j`, `j + 16 <= PIPE`.
    let stage_a = |b: usize, i24: &mut [u32; PIPE], out: &mut [u32]| unsafe {
        for j in (0..PIPE).step_by(16) {
            let a = _mm512_loadu_si512(keys.as_ptr().add(b * PIPE + j) as *const __m512i);
            let e = gather(t16, _mm512_srli_epi32::<16>(a));
            _mm512_storeu_si512(out.as_mut_ptr().add(b * PIPE + j) as *mut __m512i, e);
            let i = next_index(
                _mm512_cmpge_epu32_mask(e, lim),
                e,
                _mm512_srli_epi32::<8>(a),
            );
            prefetch16(t24, i);
            _mm512_storeu_si512(i24.as_mut_ptr().add(j) as *mut __m512i, i);
        }
    };
    let stage_b = |b: usize, i24: &[u32; PIPE], i32_: &mut [u32; PIPE], out: &mut [u32]| unsafe {
        for j in (0..PIPE).step_by(16) {
            let i = _mm512_loadu_si512(i24.as_ptr().add(j) as *const __m512i);
            let o = out.as_mut_ptr().add(b * PIPE + j) as *mut __m512i;
            let prev = _mm512_loadu_si512(o);
            // Lanes that went on: a chunk index (nonzero) or chunk 0's entry 0 (the
            // previous entry was a chunk ID).
            let go = _mm512_cmpge_epu32_mask(prev, lim);
            let e = _mm512_mask_mov_epi32(prev, go, gather(t24, i));
            _mm512_storeu_si512(o, e);
            let a = _mm512_loadu_si512(keys.as_ptr().add(b * PIPE + j) as *const __m512i);
            let i = next_index(_mm512_cmpge_epu32_mask(e, lim), e, a);
            prefetch16(t32, i);
            _mm512_storeu_si512(i32_.as_mut_ptr().add(j) as *mut __m512i, i);
        }
    };
    let stage_c = |b: usize, i32_: &[u32; PIPE], out: &mut [u32]| unsafe {
        for j in (0..PIPE).step_by(16) {
            let i = _mm512_loadu_si512(i32_.as_ptr().add(j) as *const __m512i);
            let o = out.as_mut_ptr().add(b * PIPE + j) as *mut __m512i;
            let prev = _mm512_loadu_si512(o);
            let go = _mm512_cmpge_epu32_mask(prev, lim);
            _mm512_storeu_si512(o, _mm512_mask_mov_epi32(prev, go, gather(t32, i)));
        }
    };
    pipeline3(blocks, keys, out, stage_a, stage_b, stage_c);
}

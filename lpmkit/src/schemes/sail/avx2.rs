//! AVX2 kernel of SAIL_L for IPv4 (pivots 16, 24, 32): the software pipeline of
//! [`Pivots::lookup_batch_v4`](super::pivot::Pivots) with every stage done eight keys at
//! a time, each level's entries read by one `vpgatherdd` (the SAIL paper's lookup is one
//! indexed read per level, the access a gather does for eight keys at once).
//!
//! The scalar pipeline is the twin: the same stages, the same prefetches, the same
//! answers (the differential tests and `verify` run both).

use core::arch::x86_64::*;

use super::entry::Entry;
use super::pivot::{pipeline3, Pivots};
use crate::schemes::common::Width;
use crate::simd::{prefetch, Avx2};

/// Keys per pipeline block (as the scalar twin).
const PIPE: usize = 64;

/// Looks up `keys` into `out` (same length); blocks of [`PIPE`] keys by AVX2, the tail
/// by the scalar lookup.
pub(super) fn lookup_batch_v4<E: Entry>(
    _token: Avx2,
    t: &Pivots<E>,
    keys: &[u32],
    out: &mut [u32],
) {
    debug_assert_eq!(t.pivots, [16, 24, 32]);
    debug_assert_eq!(keys.len(), out.len());
    let n = keys.len() / PIPE * PIPE;
    // SAFETY: holding an `Avx2` token proves the CPU supports AVX2; `n` is a multiple of
    // `PIPE` within both slices.
    unsafe { blocks(t, &keys[..n], &mut out[..n]) };
    for (o, &a) in out[n..].iter_mut().zip(&keys[n..]) {
        *o = t.lookup_one(a);
    }
}

/// Eight entries of `arr` at `idx` (each below the committed length), zero-extended.
///
/// 16-bit entries are read as the aligned 32-bit word holding them (the entry and its
/// even/odd neighbour) and shifted out, so no lane reads past the array: every level's
/// length is even (2^16 entries, chunks of 256).
///
/// # Safety
/// AVX2; every lane of `idx` below the committed length of `arr`, whose byte length
/// fits a signed 32-bit offset.
#[inline(always)]
unsafe fn gather<E: Entry>(arr: *const E, idx: __m256i) -> __m256i {
    // SAFETY: (for both arms) the caller's bounds; each lane is one aligned 32-bit load,
    // which x86 performs as a single access, so an entry the writer stores to meanwhile
    // is read old or new, never torn (the scalar path's atomic load).
    unsafe {
        if E::WIDTH == Width::U16 {
            let pair = _mm256_andnot_si256(_mm256_set1_epi32(1), idx);
            let w = _mm256_i32gather_epi32::<2>(arr as *const i32, pair);
            let shift = _mm256_slli_epi32(_mm256_and_si256(idx, _mm256_set1_epi32(1)), 4);
            _mm256_and_si256(_mm256_srlv_epi32(w, shift), _mm256_set1_epi32(0xffff))
        } else {
            _mm256_i32gather_epi32::<4>(arr as *const i32, idx)
        }
    }
}

/// `e >= lim` per lane, unsigned (all ones where true).
#[inline(always)]
unsafe fn at_least(e: __m256i, lim: __m256i) -> __m256i {
    // SAFETY: AVX2 (the caller's).
    unsafe { _mm256_cmpeq_epi32(_mm256_max_epu32(e, lim), e) }
}

/// Prefetches the eight entries `idx` names.
#[inline(always)]
unsafe fn prefetch8<E>(arr: *const E, idx: __m256i) {
    let mut i = [0u32; 8];
    // SAFETY: `i` holds 8 u32; unaligned store.
    unsafe { _mm256_storeu_si256(i.as_mut_ptr() as *mut __m256i, idx) };
    for x in i {
        prefetch(arr.wrapping_add(x as usize));
    }
}

/// # Safety
/// AVX2; `keys.len() == out.len()`, a multiple of [`PIPE`].
#[target_feature(enable = "avx2")]
unsafe fn blocks<E: Entry>(t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
    debug_assert!(keys.len().is_multiple_of(PIPE) && out.len() == keys.len());
    debug_assert!(t.arrays.iter().all(|a| a.committed() % 2 == 0));
    let (t16, t24, t32) = (
        t.arrays[0].as_ptr(),
        t.arrays[1].as_ptr(),
        t.arrays[2].as_ptr(),
    );
    let lim = _mm256_set1_epi32(t.lim as i32);
    let low8 = _mm256_set1_epi32(0xff);
    let blocks = keys.len() / PIPE;
    // Indices handed between stages are 0 once a key is resolved: entry 0 of a level is
    // committed at creation and cached.
    // SAFETY (all three stages): indices are the top 16 bits of a key (< 2^16, the
    // committed level-16 array), or chunk indices `c << 8 | byte` of chunks whose IDs
    // were read from published entries (committed, complete before the ID's store, not
    // reused before every reader moved on), or 0; level byte lengths are below 2^31
    // (16-bit entries: < 2^16 chunks; 32-bit: < 2^20 chunks of 256). Loads and stores of
    // `keys`, `out`, `i24`, `i32_` are 8 lanes at `b * PIPE + j`, `j + 8 <= PIPE`.
    let stage_a = |b: usize, i24: &mut [u32; PIPE], out: &mut [u32]| unsafe {
        for j in (0..PIPE).step_by(8) {
            let a = _mm256_loadu_si256(keys.as_ptr().add(b * PIPE + j) as *const __m256i);
            let e = gather(t16, _mm256_srli_epi32(a, 16));
            _mm256_storeu_si256(out.as_mut_ptr().add(b * PIPE + j) as *mut __m256i, e);
            let go = at_least(e, lim);
            let i = _mm256_and_si256(
                go,
                _mm256_or_si256(
                    _mm256_slli_epi32(_mm256_sub_epi32(e, lim), 8),
                    _mm256_and_si256(_mm256_srli_epi32(a, 8), low8),
                ),
            );
            prefetch8(t24, i);
            _mm256_storeu_si256(i24.as_mut_ptr().add(j) as *mut __m256i, i);
        }
    };
    let stage_b = |b: usize, i24: &[u32; PIPE], i32_: &mut [u32; PIPE], out: &mut [u32]| unsafe {
        for j in (0..PIPE).step_by(8) {
            let i = _mm256_loadu_si256(i24.as_ptr().add(j) as *const __m256i);
            let o = out.as_mut_ptr().add(b * PIPE + j) as *mut __m256i;
            let prev = _mm256_loadu_si256(o);
            // Lanes that went on: a chunk index (nonzero) or chunk 0's entry 0 (the
            // previous entry was a chunk ID).
            let go = at_least(prev, lim);
            let e = _mm256_blendv_epi8(prev, gather(t24, i), go);
            _mm256_storeu_si256(o, e);
            let a = _mm256_loadu_si256(keys.as_ptr().add(b * PIPE + j) as *const __m256i);
            let go = at_least(e, lim);
            let i = _mm256_and_si256(
                go,
                _mm256_or_si256(
                    _mm256_slli_epi32(_mm256_sub_epi32(e, lim), 8),
                    _mm256_and_si256(a, low8),
                ),
            );
            prefetch8(t32, i);
            _mm256_storeu_si256(i32_.as_mut_ptr().add(j) as *mut __m256i, i);
        }
    };
    let stage_c = |b: usize, i32_: &[u32; PIPE], out: &mut [u32]| unsafe {
        for j in (0..PIPE).step_by(8) {
            let i = _mm256_loadu_si256(i32_.as_ptr().add(j) as *const __m256i);
            let o = out.as_mut_ptr().add(b * PIPE + j) as *mut __m256i;
            let prev = _mm256_loadu_si256(o);
            let go = at_least(prev, lim);
            _mm256_storeu_si256(o, _mm256_blendv_epi8(prev, gather(t32, i), go));
        }
    };
    pipeline3(blocks, keys, out, stage_a, stage_b, stage_c);
}

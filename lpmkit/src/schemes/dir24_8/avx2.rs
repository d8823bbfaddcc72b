//! AVX2 kernels for DIR-24-8: the first-table probe of eight keys is one `vpgatherdd`.

use core::arch::x86_64::*;

use super::{Tables, BATCH};
use crate::schemes::common::Word;
use crate::simd::Avx2;

/// Bulk lookup with AVX2; the tail that does not fill a block goes to the scalar twin.
pub(super) fn lookup_batch<E: Word>(_token: Avx2, t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    let whole = addrs.len() / BATCH * BATCH;
    // SAFETY: holding an `Avx2` token proves the CPU supports AVX2.
    unsafe { lookup_blocks(t, &addrs[..whole], &mut out[..whole]) };
    t.lookup_batch_scalar(&addrs[whole..], &mut out[whole..]);
}

/// # Safety
/// The CPU must support AVX2; `addrs.len()` must be a multiple of `BATCH` and at most
/// `out.len()`.
#[target_feature(enable = "avx2")]
unsafe fn lookup_blocks<E: Word>(t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    debug_assert!(addrs.len().is_multiple_of(BATCH) && out.len() >= addrs.len());
    let scale_narrow = E::WIDTH == crate::schemes::common::Width::U16;
    let tbl24 = t.tbl24.as_ptr() as *const i32;
    let tbl8 = t.tbl8.as_ptr() as *const i32;
    let entry_mask = _mm256_set1_epi32(if scale_narrow { 0xffff } else { -1 });
    let low8 = _mm256_set1_epi32(0xff);
    let one = _mm256_set1_epi32(1);
    for (keys, res) in addrs.chunks_exact(BATCH).zip(out.chunks_exact_mut(BATCH)) {
        // Pass 1: prefetch every first-table entry of the block.
        for &a in keys {
            crate::simd::prefetch(t.tbl24.as_ptr().wrapping_add((a >> 8) as usize));
        }
        // Pass 2: gather eight first-table entries at a time; resolve extended lanes with
        // a masked gather into the groups.
        for (k8, r8) in keys.chunks_exact(8).zip(res.chunks_exact_mut(8)) {
            // SAFETY: `k8` holds 8 u32 (32 bytes); unaligned load.
            let a = unsafe { _mm256_loadu_si256(k8.as_ptr() as *const __m256i) };
            let idx = _mm256_srli_epi32(a, 8);
            // SAFETY: every index is < 2^24; the table has 2^24 + 2 entries, so a 32-bit
            // read at a 16-bit entry (scale 2) stays inside it, and byte offsets < 2^26 fit.
            let e = unsafe {
                if scale_narrow {
                    _mm256_and_si256(_mm256_i32gather_epi32::<2>(tbl24, idx), entry_mask)
                } else {
                    _mm256_i32gather_epi32::<4>(tbl24, idx)
                }
            };
            let ext = _mm256_cmpeq_epi32(_mm256_and_si256(e, one), one);
            let e = if _mm256_movemask_epi8(ext) == 0 {
                e
            } else {
                let gidx = _mm256_or_si256(
                    _mm256_slli_epi32(_mm256_srli_epi32(e, 1), 8),
                    _mm256_and_si256(a, low8),
                );
                // SAFETY: extended entries name allocated groups, so masked-in indices are
                // < groups * 256 < 2^31 and the 2 entries of padding cover the 32-bit read
                // of a 16-bit entry; masked-out lanes are not read.
                let g = unsafe {
                    if scale_narrow {
                        _mm256_and_si256(
                            _mm256_mask_i32gather_epi32::<2>(e, tbl8, gidx, ext),
                            entry_mask,
                        )
                    } else {
                        _mm256_mask_i32gather_epi32::<4>(e, tbl8, gidx, ext)
                    }
                };
                _mm256_blendv_epi8(e, g, ext)
            };
            // SAFETY: `r8` holds 8 u32; unaligned store.
            unsafe {
                _mm256_storeu_si256(r8.as_mut_ptr() as *mut __m256i, _mm256_srli_epi32(e, 1))
            };
        }
    }
}

//! AVX-512 kernel for DIR-24-8: the first-table probe of sixteen keys is one `vpgatherdd`
//! (as DPDK's `dir24_8_avx512.c`), and the extended lanes are a mask register that masks
//! the gather into the groups, which merges their entries in place of a blend.

use core::arch::x86_64::*;

use super::{Tables, BATCH};
use crate::schemes::common::Word;
use crate::simd::Avx512;

/// Bulk lookup with AVX-512; the tail that does not fill a block goes to the scalar twin.
pub(super) fn lookup_batch<E: Word>(_token: Avx512, t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    let whole = addrs.len() / BATCH * BATCH;
    // SAFETY: holding an `Avx512` token proves the CPU supports AVX-512F/BW/DQ/VL.
    unsafe { lookup_blocks(t, &addrs[..whole], &mut out[..whole]) };
    t.lookup_batch_scalar(&addrs[whole..], &mut out[whole..]);
}

/// # Safety
/// The CPU must support AVX-512F/BW/DQ/VL; `addrs.len()` must be a multiple of `BATCH`
/// (itself a multiple of 16) and at most `out.len()`.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn lookup_blocks<E: Word>(t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    debug_assert!(
        addrs.len().is_multiple_of(BATCH) && BATCH.is_multiple_of(16) && out.len() >= addrs.len()
    );
    let narrow = E::WIDTH == crate::schemes::common::Width::U16;
    let tbl24 = t.tbl24.as_ptr() as *const i32;
    let tbl8 = t.tbl8.as_ptr() as *const i32;
    let entry_mask = _mm512_set1_epi32(if narrow { 0xffff } else { -1 });
    let low8 = _mm512_set1_epi32(0xff);
    let one = _mm512_set1_epi32(1);
    for (keys, res) in addrs.chunks_exact(BATCH).zip(out.chunks_exact_mut(BATCH)) {
        // Pass 1: prefetch every first-table entry of the block.
        for &a in keys {
            crate::simd::prefetch(t.tbl24.as_ptr().wrapping_add((a >> 8) as usize));
        }
        // Pass 2: sixteen first-table entries per gather; the extended lanes gather
        // their group entries over them.
        for (k16, r16) in keys.chunks_exact(16).zip(res.chunks_exact_mut(16)) {
            // SAFETY: `k16` holds 16 u32 (64 bytes); unaligned load.
            let a = unsafe { _mm512_loadu_si512(k16.as_ptr() as *const __m512i) };
            let idx = _mm512_srli_epi32::<8>(a);
            // SAFETY: every index is < 2^24; the table has 2^24 + 2 entries, so a 32-bit
            // read at a 16-bit entry (scale 2) stays inside it, and byte offsets < 2^26 fit.
            let e = unsafe {
                if narrow {
                    _mm512_and_si512(_mm512_i32gather_epi32::<2>(idx, tbl24), entry_mask)
                } else {
                    _mm512_i32gather_epi32::<4>(idx, tbl24)
                }
            };
            let ext = _mm512_test_epi32_mask(e, one);
            let e = if ext == 0 {
                e
            } else {
                let gidx = _mm512_or_si512(
                    _mm512_slli_epi32::<8>(_mm512_srli_epi32::<1>(e)),
                    _mm512_and_si512(a, low8),
                );
                // SAFETY: extended entries name allocated groups, so masked-in indices are
                // < groups * 256 < 2^31 and the 2 entries of padding cover the 32-bit read
                // of a 16-bit entry; masked-out lanes are not read and keep `e`.
                unsafe {
                    if narrow {
                        _mm512_and_si512(
                            _mm512_mask_i32gather_epi32::<2>(e, ext, gidx, tbl8),
                            entry_mask,
                        )
                    } else {
                        _mm512_mask_i32gather_epi32::<4>(e, ext, gidx, tbl8)
                    }
                }
            };
            // SAFETY: `r16` holds 16 u32; unaligned (unmasked) store.
            unsafe {
                _mm512_storeu_si512(r16.as_mut_ptr() as *mut __m512i, _mm512_srli_epi32::<1>(e))
            };
        }
    }
}

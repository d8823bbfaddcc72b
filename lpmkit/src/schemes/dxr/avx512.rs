//! The AVX-512 stages of DXR's batched lookup (the AVX2 stages, `avx2.rs`, on one
//! 512-bit register).
//!
//! * **Stage 2**: a block's sixteen keys at a time (a block is [`BATCH`] = 16 keys): one
//!   `vpgatherdd` reads their lookup-table entries, the next hops of all sixteen are
//!   stored (right for direct chunks, overwritten for the others in stage 3), the keys
//!   whose chunk needs a search are a mask register (a `vptestmd` of the entries' size
//!   field) and are packed into the block's list of searches by `vpcompressd`, and their
//!   chunk starts are prefetched.
//! * **Stage 3**: a search is halved (branch-free scalar steps) until its entries fit one
//!   64-byte window — 32 short or 16 long entries, one register — and is then finished in
//!   one step: one unsigned compare of the window with the key writes a mask of the
//!   entries at or below the key (`vpcmpuw`/`vpcmpud`, where AVX2 needs a `min`, a compare
//!   and a `movemask` per half), the lanes past the search are masked off, and the count
//!   of the rest is the index of the key's range plus one.
//!
//! The scalar twin is [`Lockstep`](super::scalar::Lockstep); the differential tests run
//! it, the AVX2 stages and these.

use core::arch::x86_64::*;

use super::scalar::{Pipeline, Stages};
use super::{DxrTable, BATCH};
use crate::simd::Avx512;

/// Bulk lookup with the AVX-512 stages.
pub(super) fn lookup_batch<const REMAP: bool>(
    _token: Avx512,
    t: &DxrTable,
    keys: &[u32],
    out: &mut [u32],
) {
    // SAFETY: holding an `Avx512` token proves the CPU supports AVX-512F/BW/DQ/VL and
    // POPCNT.
    unsafe { kernel::<REMAP>(t, keys, out) }
}

/// # Safety
/// The CPU must support AVX-512F/BW/DQ/VL and POPCNT.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
unsafe fn kernel<const REMAP: bool>(t: &DxrTable, keys: &[u32], out: &mut [u32]) {
    // SAFETY: `Window512` needs AVX-512 and POPCNT, which the caller guarantees.
    unsafe { t.lookup_pipeline::<REMAP, Window512>(keys, out) }
}

/// Stages 2 and 3 with AVX-512.
pub(super) struct Window512;

const _: () = assert!(BATCH == 16, "stage 2 packs one 16-lane register per block");

impl Stages for Window512 {
    #[inline(always)]
    unsafe fn start(p: &mut Pipeline, t: &DxrTable, keys: &[u32], out: &mut [u32]) {
        debug_assert!(keys.len() <= BATCH && out.len() == keys.len());
        let lt = t.lt.as_ptr() as *const i32;
        let rt = t.rt.as_ptr() as *const u8;
        // SAFETY (whole block): AVX-512 is guaranteed by the caller. The loads and stores
        // of `keys` and `out` cover `keys.len()` lanes (masked when fewer than 16); the
        // gather indices are `key >> (32 - k) < 2^k`, the lookup table's length, and their
        // byte offsets (< 2^26) fit the gather's signed 32-bit index; the packed stores
        // write 16 lanes at 0 into arrays of `BATCH + 8 >= 16`. Lookup-table entries are
        // switch words the writer may store to meanwhile: each gathered lane is an aligned
        // 32-bit load, which x86 performs as one access (the old or the new entry, never a
        // mix), and a new entry's chunk was complete before its store.
        unsafe {
            let n = keys.len();
            let full = n == BATCH;
            let m: __mmask16 = if full {
                !0
            } else {
                ((1u32 << n) - 1) as __mmask16
            };
            let k = if full {
                _mm512_loadu_si512(keys.as_ptr() as *const __m512i)
            } else {
                _mm512_maskz_loadu_epi32(m, keys.as_ptr() as *const i32)
            };
            let idx = _mm512_srl_epi32(k, _mm_cvtsi32_si128((32 - t.k) as i32));
            let e = _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), m, idx, lt);
            let pos_field = _mm_cvtsi32_si128(t.fmt.pos_field() as i32);
            let nh = _mm512_srl_epi32(e, pos_field);
            if full {
                _mm512_storeu_si512(out.as_mut_ptr() as *mut __m512i, nh);
            } else {
                _mm512_mask_storeu_epi32(out.as_mut_ptr() as *mut i32, m, nh);
            }
            let search = _mm512_test_epi32_mask(e, _mm512_set1_epi32(t.fmt.size_mask() as i32)) & m;
            let slots = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            let pe = _mm512_maskz_compress_epi32(search, e);
            _mm512_storeu_si512(
                p.keys.as_mut_ptr() as *mut __m512i,
                _mm512_maskz_compress_epi32(search, k),
            );
            _mm512_storeu_si512(p.entries.as_mut_ptr() as *mut __m512i, pe);
            _mm512_storeu_si512(
                p.slots.as_mut_ptr() as *mut __m512i,
                _mm512_maskz_compress_epi32(search, slots),
            );
            // Prefetch the chunk starts of the packed lanes: the low eight always, the
            // high eight only if more than eight search (lanes past the packed ones hold
            // 0, the range table's first word: harmless).
            let pos_scale = _mm_cvtsi32_si128((t.pos_shift + 2) as i32);
            let off = _mm512_sll_epi32(_mm512_srl_epi32(pe, pos_field), pos_scale);
            let count = search.count_ones() as usize;
            let pf = |x: __m128i| {
                let a = _mm_cvtsi128_si64(x) as u64;
                let b = _mm_extract_epi64::<1>(x) as u64;
                for o in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                    crate::simd::prefetch(rt.wrapping_add(o as usize));
                }
            };
            pf(_mm512_castsi512_si128(off));
            pf(_mm512_extracti32x4_epi32::<1>(off));
            if count > 8 {
                pf(_mm512_extracti32x4_epi32::<2>(off));
                pf(_mm512_extracti32x4_epi32::<3>(off));
            }
            p.n = count;
        }
    }

    #[inline(always)]
    unsafe fn finish(p: &mut Pipeline, t: &DxrTable, out: &mut [u32]) {
        let rt = t.rt.as_ptr() as *const u8;
        for j in 0..p.n {
            let mut s = t.search(p.entries[j], p.keys[j]);
            let short = s.es == 1;
            let cap = if short { 32 } else { 16 };
            while s.len > cap {
                t.step(&mut s);
            }
            let at = s.off + ((s.base as usize) << s.es);
            debug_assert!(at + 64 <= t.rt.committed() * 4);
            // SAFETY: the search's entries `base .. base + len` lie inside the range
            // table and the window starts at `base`; `PAD_WORDS` (64 bytes) are always
            // committed past the top, so the 64 bytes from `at` are readable. (Bytes past
            // the chunk may belong to a block the writer is filling: the lanes past the
            // search are masked off, so their values never reach the result.)
            // AVX-512 is guaranteed by the caller; the load is unaligned.
            let count = unsafe {
                let w = _mm512_loadu_si512(rt.add(at) as *const __m512i);
                if short {
                    let kc = _mm512_set1_epi16(s.kc as u16 as i16);
                    // One bit per 16-bit entry; `len` is 1..=32.
                    let le = _mm512_cmple_epu16_mask(w, kc) & (u32::MAX >> (32 - s.len));
                    le.count_ones()
                } else {
                    let kc = _mm512_set1_epi32(s.kc as i32);
                    // One bit per 32-bit entry; `len` is 1..=16.
                    let le = _mm512_cmple_epu32_mask(w, kc) as u32 & (u32::MAX >> (32 - s.len));
                    le.count_ones()
                }
            };
            debug_assert!(count >= 1, "the first entry starts at or below the key");
            out[p.slots[j] as usize] = t.entry_at(&s, s.base + count - 1) & s.nh_mask;
        }
    }
}

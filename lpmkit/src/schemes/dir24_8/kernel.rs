//! The SIMD kernel of DIR-24-8 for IPv4, written once over [`Lanes`] and instantiated for
//! AVX2 ([`avx2`]: eight keys per `vpgatherdd`) and AVX-512 ([`avx512`]: sixteen, as DPDK's
//! `dir24_8_avx512.c`). The extended lanes are a mask that masks the gather into the
//! groups, which merges their entries over the first-table ones; the out-of-order core
//! overlaps the gathers of a block's keys as DPDK's kernel does, without the scalar twin's
//! prefetch pass. The tail that does not fill a block goes to the scalar twin.

use core::arch::x86_64::{__m256i, __m512i};

use super::{Tables, BATCH};
use crate::schemes::common::{Width, Word};
use crate::simd::lanes::{LaneMask, Lanes};
use crate::simd::{Avx2, Avx512};

/// Bulk lookup, the AVX2 instance.
pub(super) fn avx2<E: Word>(_: Avx2, t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run<E: Word>(t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
        // SAFETY: this function's target features are `__m256i`'s.
        unsafe { lookup::<__m256i, E>(t, addrs, out) }
    }
    // SAFETY: the token proves AVX2 and POPCNT.
    unsafe { run(t, addrs, out) }
}

/// Bulk lookup, the AVX-512 instance.
pub(super) fn avx512<E: Word>(_: Avx512, t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
    unsafe fn run<E: Word>(t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
        // SAFETY: this function's target features are `__m512i`'s.
        unsafe { lookup::<__m512i, E>(t, addrs, out) }
    }
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT.
    unsafe { run(t, addrs, out) }
}

/// Whole blocks of [`BATCH`] keys by `V`, the tail by the scalar twin.
///
/// # Safety
/// `V`'s instruction set; `out.len() >= addrs.len()`.
#[inline(always)]
unsafe fn lookup<V: Lanes, E: Word>(t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    const { assert!(BATCH.is_multiple_of(16)) };
    let whole = addrs.len() / BATCH * BATCH;
    // SAFETY: the caller's instruction set; `whole` keys and outputs.
    unsafe { blocks::<V, E>(t, &addrs[..whole], &mut out[..whole]) };
    t.lookup_batch_scalar(&addrs[whole..], &mut out[whole..]);
}

/// # Safety
/// `V`'s instruction set; `addrs.len()` is a multiple of [`BATCH`] and at most
/// `out.len()`.
#[inline(always)]
unsafe fn blocks<V: Lanes, E: Word>(t: &Tables<E>, addrs: &[u32], out: &mut [u32]) {
    debug_assert!(addrs.len().is_multiple_of(BATCH) && out.len() >= addrs.len());
    let narrow = E::WIDTH == Width::U16;
    let tbl24 = t.tbl24.as_ptr() as *const u8;
    let tbl8 = t.tbl8.as_ptr() as *const u8;
    // SAFETY (whole function): the caller's instruction set. Loads and stores are whole
    // vectors inside `addrs` and `out` (`BATCH` is a multiple of the lanes). Every
    // first-table index is below 2^24; the table has 2^24 + 2 entries, so a 32-bit read at
    // a 16-bit entry (scale 2) stays inside it, and byte offsets below 2^26 fit. Extended
    // entries name allocated groups, so their indices are below groups · 256 < 2^31, and
    // the 2 entries of padding cover the 32-bit read of a 16-bit entry; the lanes not
    // extended are not read and keep their first-table entry.
    unsafe {
        let entry_mask = V::splat(if narrow { 0xffff } else { !0 });
        let (low8, one) = (V::splat(0xff), V::splat(1));
        for (keys, res) in addrs.chunks_exact(BATCH).zip(out.chunks_exact_mut(BATCH)) {
            // One gather of first-table entries per vector of keys; the extended lanes
            // gather their group entries over them. No prefetch pass ahead of the gathers
            // (the scalar twin's first pass): the gathers' own loads overlap as many misses,
            // and on the Xeon of docs/simd.md the pass cost 15-18 % at 1-8 M routes.
            let lanes = keys
                .chunks_exact(V::LANES)
                .zip(res.chunks_exact_mut(V::LANES));
            for (k, r) in lanes {
                let a = V::load(k.as_ptr());
                let e = if narrow {
                    V::gather::<2>(tbl24, a.shr::<8>()).and(entry_mask)
                } else {
                    V::gather::<4>(tbl24, a.shr::<8>())
                };
                let ext = e.test(one);
                let e = if !ext.any() {
                    e
                } else {
                    let g = e.shr::<1>().shl::<8>().or(a.and(low8));
                    if narrow {
                        e.gather_masked::<2>(tbl8, g, ext).and(entry_mask)
                    } else {
                        e.gather_masked::<4>(tbl8, g, ext)
                    }
                };
                e.shr::<1>().store(r.as_mut_ptr());
            }
        }
    }
}

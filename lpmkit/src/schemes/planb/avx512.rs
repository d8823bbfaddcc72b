//! AVX-512 node search, the paper's (§3: one 512-bit compare per node): a node's keys
//! against the search key in one 512-bit compare into a mask register (sixteen 32-bit or
//! eight 64-bit keys; a 32-byte node or leaf in one 256-bit compare), counted by
//! `popcnt`. Keys are stored biased (top bit flipped), so the signed compares order them
//! as unsigned numbers. The stage of the /32 lines is the AVX2 one (`avx2.rs`).
//!
//! The lookup runs this kernel only when asked for (see the scheme's docs).

use core::arch::x86_64::*;

use super::avx2;
use super::batch;
use super::front::LineFront;
use super::tree::{Key, Layout};
use super::walk::{NodeSearch, View};
use crate::prefix::Address;
use crate::simd::Avx512;

/// Node search with AVX-512 compares.
pub(crate) struct Avx512Search;

impl NodeSearch for Avx512Search {
    #[inline(always)]
    unsafe fn count_masked<K: Key>(p: *const K, x: K, n: usize, mask: u32) -> u32 {
        // SAFETY: the caller guarantees AVX-512 F/BW/DQ/VL, 32-byte alignment and `n`
        // readable keys (a multiple of 8 for 32-bit keys, of 4 for 64-bit keys); the
        // loads cover `n` keys in whole vectors.
        unsafe {
            let mut m = 0u32;
            let mut c = 0;
            if K::BITS == 32 {
                let xv = _mm512_set1_epi32(x.raw() as i32);
                while c + 16 <= n {
                    let k = _mm512_load_si512(p.add(c) as *const __m512i);
                    m |= (_mm512_cmplt_epi32_mask(k, xv) as u32) << c;
                    c += 16;
                }
                if c < n {
                    let k = _mm256_load_si256(p.add(c) as *const __m256i);
                    let lt = _mm256_cmplt_epi32_mask(k, _mm512_castsi512_si256(xv));
                    m |= (lt as u32) << c;
                }
            } else {
                let xv = _mm512_set1_epi64(x.raw() as i64);
                while c + 8 <= n {
                    let k = _mm512_load_si512(p.add(c) as *const __m512i);
                    m |= (_mm512_cmplt_epi64_mask(k, xv) as u32) << c;
                    c += 8;
                }
                if c < n {
                    let k = _mm256_load_si256(p.add(c) as *const __m256i);
                    let lt = _mm256_cmplt_epi64_mask(k, _mm512_castsi512_si256(xv));
                    m |= (lt as u32) << c;
                }
            }
            (m & mask).count_ones()
        }
    }

    #[inline(always)]
    unsafe fn line_values<A: Address>(
        f: &LineFront,
        keys: &[A],
        res: &mut [u32],
        child: &mut [u64],
    ) {
        // SAFETY: as this function's (AVX-512 CPUs have AVX2).
        unsafe { avx2::line_values::<A, Self>(f, keys, res, child) }
    }
}

/// The batched lookup with AVX-512 node search.
pub(crate) fn lookup_batch<A: Address, L: Layout>(
    _avx512: Avx512,
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT; `v` views a built table.
    unsafe {
        if v.lines() {
            kernel::<A, L, true>(v, batch, addrs, out)
        } else {
            kernel::<A, L, false>(v, batch, addrs, out)
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
unsafe fn kernel<A: Address, L: Layout, const LINES: bool>(
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: as `lookup_batch`'s; this function enables the features `Avx512Search`
    // uses.
    unsafe { batch::lookup::<A, L, Avx512Search, LINES>(v, batch, addrs, out) }
}

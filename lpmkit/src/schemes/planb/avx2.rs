//! AVX2 node search: one node's keys against the search key in 256-bit compares (a
//! 64-byte node of eight 64-bit or sixteen 32-bit keys is two compares, a 32-byte node
//! one), the compare masks gathered by `movemask` and counted by `popcnt`.
//!
//! Keys are stored biased (top bit flipped), so the signed `vpcmpgtq`/`vpcmpgtd` order
//! them as unsigned numbers.

use core::arch::x86_64::*;

use super::batch::{self, NodeSearch, View};
use super::tree::{Key, Layout};
use crate::prefix::Address;
use crate::simd::{Avx2, Popcnt};

/// Node search with AVX2 compares.
pub(crate) struct Avx2Search;

impl NodeSearch for Avx2Search {
    #[inline(always)]
    unsafe fn count_masked<K: Key>(p: *const K, x: K, n: usize, mask: u32) -> u32 {
        // SAFETY: the caller guarantees AVX2 and POPCNT, 32-byte alignment and `n`
        // readable keys; the loops read `n` keys in whole vectors (`n` a multiple of the
        // lanes).
        unsafe {
            let mut m = 0u32;
            if K::BITS == 32 {
                let xv = _mm256_set1_epi32(x.raw() as i32);
                for c in 0..n / 8 {
                    let k = _mm256_load_si256(p.add(c * 8) as *const __m256i);
                    let lt = _mm256_cmpgt_epi32(xv, k);
                    m |= (_mm256_movemask_ps(_mm256_castsi256_ps(lt)) as u32) << (8 * c);
                }
            } else {
                let xv = _mm256_set1_epi64x(x.raw() as i64);
                for c in 0..n / 4 {
                    let k = _mm256_load_si256(p.add(c * 4) as *const __m256i);
                    let lt = _mm256_cmpgt_epi64(xv, k);
                    m |= (_mm256_movemask_pd(_mm256_castsi256_pd(lt)) as u32) << (4 * c);
                }
            }
            (m & mask).count_ones()
        }
    }
}

/// The batched lookup with AVX2 node search.
pub(crate) fn lookup_batch<A: Address, L: Layout>(
    _avx2: Avx2,
    _popcnt: Popcnt,
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: the tokens prove AVX2 and POPCNT; `v` views a built table.
    unsafe {
        if v.lines() {
            kernel::<A, L, true>(v, batch, addrs, out)
        } else {
            kernel::<A, L, false>(v, batch, addrs, out)
        }
    }
}

#[target_feature(enable = "avx2,popcnt")]
unsafe fn kernel<A: Address, L: Layout, const LINES: bool>(
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: as `lookup_batch`'s; this function enables the features `Avx2Search` uses.
    unsafe { batch::lookup::<A, L, Avx2Search, LINES>(v, batch, addrs, out) }
}

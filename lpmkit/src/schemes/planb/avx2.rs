//! AVX2 node search and stage of the /32 lines. The node search is the paper's (§3);
//! the line stage is an lpmkit extension.
//!
//! * **Node search**: one node's keys against the search key in 256-bit compares (a
//!   64-byte node of eight 64-bit or sixteen 32-bit keys is two compares, a 32-byte node
//!   one), the compare masks gathered by `movemask` and counted by `popcnt`. Keys are
//!   stored biased (top bit flipped), so the signed `vpcmpgtq`/`vpcmpgtd` order them as
//!   unsigned numbers.
//! * **The /32 lines** ([`line_values_v6`], also the AVX-512 kernel's): a group's /32s
//!   hashed eight at a time in 32-bit lanes, every line prefetched, then every line
//!   searched in one 256-bit compare.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::batch;
use super::front::{LineFront, KB, KL, LINE_WORDS};
use super::tree::{Key, Layout};
use super::walk::{self, NodeSearch, View, MAX_BATCH};
use crate::prefix::Address;
use crate::simd::{prefetch, Avx2, Popcnt};

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

    #[inline(always)]
    unsafe fn line_values<A: Address>(
        f: &LineFront,
        keys: &[A],
        res: &mut [u32],
        child: &mut [u64],
    ) {
        // SAFETY: as this function's.
        unsafe { line_values::<A, Self>(f, keys, res, child) }
    }
}

/// [`NodeSearch::line_values`] for the SIMD searches `S` (AVX2, and AVX-512 CPUs, which
/// have AVX2): [`line_values_v6`] for IPv6 keys.
///
/// # Safety
/// As [`NodeSearch::line_values`]'s; the CPU has AVX2 and POPCNT.
#[inline(always)]
pub(crate) unsafe fn line_values<A: Address, S: NodeSearch>(
    f: &LineFront,
    keys: &[A],
    res: &mut [u32],
    child: &mut [u64],
) {
    match walk::v6_keys(keys) {
        // SAFETY: as this function's.
        Some(k) => unsafe { line_values_v6(f, k, res, child) },
        // The lines are an IPv6 front: not reached.
        // SAFETY: as this function's.
        None => unsafe { walk::line_values_with::<A, S>(f, keys, res, child) },
    }
}

/// [`NodeSearch::line_values`] for a group of IPv6 keys (the AVX2 and AVX-512 kernels'):
/// every key's line is found and prefetched, then every key's line is searched.
///
/// * Eight keys at a time, their bits 32–63 and /32s are taken from four 256-bit loads
///   by shuffles, and the perfect hash (`front.rs`) runs in 32-bit lanes up to the pilot:
///   the bucket (`vpmulld`, a shift) and the line hash. Then, key by key, the bucket's
///   pilot is read (one load from a table that stays in the first-level cache; a
///   gather of eight is slower on the CPUs measured), the line found by the
///   multiply-shift reduction, its address kept and the line prefetched.
/// * Each key's line is searched ([`walk::line_value`]: one 256-bit compare, counted
///   by `movemask` and `popcnt`). The values' top bits (child values and misses) are
///   gathered eight at a time by `movemask`.
///
/// # Safety
/// `f` is a built front; `keys.len()` ≤ [`MAX_BATCH`], ≤ `res.len()` and ≤
/// `64 · child.len()`; the CPU has AVX2 and POPCNT.
#[inline(always)]
pub(crate) unsafe fn line_values_v6(
    f: &LineFront,
    keys: &[u128],
    res: &mut [u32],
    child: &mut [u64],
) {
    let n = keys.len();
    debug_assert!(n <= MAX_BATCH && res.len() >= n && child.len() * 64 >= n);
    const { assert!(MAX_BATCH.is_multiple_of(8) && LINE_WORDS == 16) };
    // Per key: its bucket and line hash, then its line's address; its bits 32–63
    // (biased) and its /32.
    let mut bucket = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut hl = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut at = [MaybeUninit::<*const u32>::uninit(); MAX_BATCH];
    let mut xs = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut tags = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut tail = [0u128; 8];
    // SAFETY: the caller's features; the loads read keys `g..g + 8` below `n` (or a copy
    // of the last ones); the stores write entries `g..g + 8` ≤ `MAX_BATCH`.
    unsafe {
        let seed = _mm256_set1_epi32(f.seed as i32);
        let kb = _mm256_set1_epi32(KB as i32);
        let kl = _mm256_set1_epi32(KL as i32);
        let shift = _mm_cvtsi32_si128(f.shift as i32);
        let bias = _mm256_set1_epi32(i32::MIN);
        // The keys' order from the shuffles' (keys 0, 2, 4, 6, 1, 3, 5, 7).
        let order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        for g in (0..n).step_by(8) {
            let live = (n - g).min(8);
            let kp = if live == 8 {
                keys.as_ptr().add(g)
            } else {
                tail[..live].copy_from_slice(&keys[g..]);
                tail.as_ptr()
            } as *const __m256i;
            // Two keys per register; dwords 2 (bits 32–63) and 3 (the /32) of each.
            let s0 = _mm256_shuffle_ps::<0xee>(
                _mm256_castsi256_ps(_mm256_loadu_si256(kp)),
                _mm256_castsi256_ps(_mm256_loadu_si256(kp.add(1))),
            );
            let s1 = _mm256_shuffle_ps::<0xee>(
                _mm256_castsi256_ps(_mm256_loadu_si256(kp.add(2))),
                _mm256_castsi256_ps(_mm256_loadu_si256(kp.add(3))),
            );
            let x = _mm256_castps_si256(_mm256_shuffle_ps::<0x88>(s0, s1));
            let tag = _mm256_castps_si256(_mm256_shuffle_ps::<0xdd>(s0, s1));
            let x = _mm256_xor_si256(_mm256_permutevar8x32_epi32(x, order), bias);
            let tag = _mm256_permutevar8x32_epi32(tag, order);
            _mm256_storeu_si256(xs.as_mut_ptr().add(g) as *mut __m256i, x);
            _mm256_storeu_si256(tags.as_mut_ptr().add(g) as *mut __m256i, tag);
            // t = tag ^ seed; bucket = t·KB >> shift; line hash = t·KL.
            let t = _mm256_xor_si256(tag, seed);
            let b = _mm256_srl_epi32(_mm256_mullo_epi32(t, kb), shift);
            _mm256_storeu_si256(bucket.as_mut_ptr().add(g) as *mut __m256i, b);
            let h = _mm256_mullo_epi32(t, kl);
            _mm256_storeu_si256(hl.as_mut_ptr().add(g) as *mut __m256i, h);
        }
    }
    let (lines, pilots) = (f.lines.as_ptr(), f.pilots.as_ptr());
    let staged = bucket[..n].iter().zip(&hl[..n]).zip(&mut at[..n]);
    for ((b, h), at) in staged {
        // SAFETY: entries `0..n` were written above; a bucket is below `r` (a 32-bit hash
        // shifted right by `32 − log2 r`), the pilots' length; a line index is below `m`
        // (a reduction to `m`), so the address is a line of the table.
        unsafe {
            let p = *pilots.add(b.assume_init() as usize);
            let line = ((h.assume_init() ^ p) as u64 * f.m as u64) >> 32;
            let a = lines.add(line as usize * LINE_WORDS);
            at.write(a);
            prefetch(a);
        }
    }
    let staged = at[..n].iter().zip(xs[..n].iter().zip(&tags[..n]));
    for (r, (line, (x, tag))) in res[..n].iter_mut().zip(staged) {
        // SAFETY: entries `0..n` were written above; a line is a line of the table (64-byte
        // aligned: seven keys, a tag and eight values); the caller's features.
        *r = unsafe {
            walk::line_value::<Avx2Search>(line.assume_init(), x.assume_init(), tag.assume_init())
        };
    }
    for g in (0..n).step_by(8) {
        let bits = if n - g >= 8 {
            // SAFETY: results `g..g + 8` are written; the caller's features.
            unsafe {
                let v = _mm256_loadu_si256(res.as_ptr().add(g) as *const __m256i);
                _mm256_movemask_ps(_mm256_castsi256_ps(v)) as u64
            }
        } else {
            let top = |(i, &r): (usize, &u32)| ((r >> 31) as u64) << i;
            res[g..n].iter().enumerate().map(top).fold(0, |b, t| b | t)
        };
        child[g / 64] |= bits << (g % 64);
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

//! PlanB's SIMD node search and stage of the /32 lines, written once over [`Lanes`] and
//! instantiated for AVX2 ([`avx2`]) and AVX-512 ([`avx512`]). The node search is the
//! paper's (§3: one 512-bit compare per node); the line stage is an lpmkit extension.
//!
//! * **Node search** ([`Search`]): one node's keys against the search key in whole-vector
//!   compares — a 64-byte node of eight 64-bit or sixteen 32-bit keys is one 512-bit
//!   compare into a mask register, or two 256-bit ones gathered by `movemask`; a 32-byte
//!   node is one 256-bit compare on either width — counted by `popcnt`. Keys are
//!   stored biased (top bit flipped), so the signed compares order them as unsigned
//!   numbers.
//! * **The /32 lines** ([`line_values_v6`]): a group's /32s hashed eight at a time in
//!   32-bit lanes, every line prefetched, then every line searched in one 256-bit compare,
//!   on both widths (sixteen lanes measured slower on AVX-512).

use core::arch::x86_64::{__m256i, __m512i};
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use super::batch;
use super::front::{LineFront, KB, KL, LINE_WORDS};
use super::tree::{Key, Layout};
use super::walk::{self, NodeSearch, View, MAX_BATCH};
use crate::prefix::Address;
use crate::simd::lanes::{LaneMask, Lanes};
use crate::simd::{prefetch, Avx2, Avx512};

/// The batched lookup, the AVX2 instance.
pub(crate) fn avx2<A: Address, L: Layout>(
    _: Avx2,
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run<A: Address, L: Layout, const LINES: bool>(
        v: &View<'_, L>,
        batch: usize,
        addrs: &[A],
        out: &mut [u32],
    ) {
        // SAFETY: this function's target features are `__m256i`'s; `v` views a built
        // table.
        unsafe { batch::lookup::<A, L, Search<__m256i>, LINES>(v, batch, addrs, out) }
    }
    // SAFETY: the token proves AVX2 and POPCNT.
    unsafe {
        if v.lines() {
            run::<A, L, true>(v, batch, addrs, out)
        } else {
            run::<A, L, false>(v, batch, addrs, out)
        }
    }
}

/// The batched lookup, the AVX-512 instance.
pub(crate) fn avx512<A: Address, L: Layout>(
    _: Avx512,
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
    unsafe fn run<A: Address, L: Layout, const LINES: bool>(
        v: &View<'_, L>,
        batch: usize,
        addrs: &[A],
        out: &mut [u32],
    ) {
        // SAFETY: this function's target features are `__m512i`'s; `v` views a built
        // table.
        unsafe { batch::lookup::<A, L, Search<__m512i>, LINES>(v, batch, addrs, out) }
    }
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT.
    unsafe {
        if v.lines() {
            run::<A, L, true>(v, batch, addrs, out)
        } else {
            run::<A, L, false>(v, batch, addrs, out)
        }
    }
}

/// Node search by compares on the vectors `V`.
pub(crate) struct Search<V>(PhantomData<V>);

impl<V: Lanes> NodeSearch for Search<V> {
    #[inline(always)]
    unsafe fn count_masked<K: Key>(p: *const K, x: K, n: usize, mask: u32) -> u32 {
        debug_assert!(n <= 32 && (n * K::BITS as usize / 8).is_multiple_of(32));
        // Whole vectors, then (a 32-byte node or remainder on AVX-512) one 256-bit
        // vector: nodes are whole multiples of 32 bytes.
        let lanes = V::LANES * 32 / K::BITS as usize;
        let whole = n / lanes * lanes;
        // SAFETY: the caller guarantees `V`'s instruction set and `n` readable keys, which
        // the whole vectors and the 256-bit rest cover exactly; `V`'s instruction set
        // includes AVX2 (AVX-512F implies it).
        unsafe {
            let mut m = less_than::<V, K>(p, x, whole);
            if whole < n {
                m |= less_than::<__m256i, K>(p.add(whole), x, n - whole) << whole;
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
        match crate::prefix::v6_keys(keys) {
            // Eight lanes on either width: the stage's sixteen-lane instance measured slower
            // than its eight-lane one on AVX-512 (docs/simd.md).
            // SAFETY: as this function's; `V`'s instruction set includes AVX2 (AVX-512F
            // implies it).
            Some(k) => unsafe { line_values_v6::<__m256i>(f, k, res, child) },
            // The lines are an IPv6 front: not reached.
            // SAFETY: as this function's.
            None => unsafe { walk::line_values_with::<A, Self>(f, keys, res, child) },
        }
    }
}

/// The bit mask of the keys below `x` among the `n` keys at `p`, in whole vectors `V`.
///
/// # Safety
/// `V`'s instruction set; `n` keys readable at `p`, a multiple of `V`'s keys per vector.
#[inline(always)]
unsafe fn less_than<V: Lanes, K: Key>(p: *const K, x: K, n: usize) -> u32 {
    let mut m = 0u32;
    let p = p as *const u32;
    // SAFETY: as this function's: each load reads one whole vector of the `n` keys.
    unsafe {
        if K::BITS == 32 {
            let xv = V::splat(x.raw() as u32);
            for c in (0..n).step_by(V::LANES) {
                m |= xv.gt_i32(V::load(p.add(c))).bits() << c;
            }
        } else {
            let xv = V::splat_u64(x.raw());
            for c in (0..n).step_by(V::LANES / 2) {
                m |= V::load(p.add(2 * c)).lt_i64_bits(xv) << c;
            }
        }
    }
    m
}

/// [`NodeSearch::line_values`] for a group of IPv6 keys: every key's line is found and
/// prefetched, then every key's line is searched.
///
/// * A vector of keys at a time, their bits 32–63 and /32s are taken from the keys by
///   shuffles (`Lanes::u128_dword`), and the perfect hash (`front.rs`) runs in 32-bit
///   lanes up to the pilot: the bucket (`vpmulld`, a shift) and the line hash. Then, key
///   by key, the bucket's pilot is read (one load from a table that stays in the
///   first-level cache; a gather is slower on the CPUs measured), the line found by the
///   multiply-shift reduction, its address kept and the line prefetched.
/// * Each key's line is searched ([`walk::line_value`]: one compare, counted by
///   `popcnt`). The values' top bits (child values and misses) are gathered a vector at a
///   time.
///
/// # Safety
/// `f` is a built front; `keys.len()` ≤ [`MAX_BATCH`], ≤ `res.len()` and ≤
/// `64 · child.len()`; `V`'s instruction set.
#[inline(always)]
unsafe fn line_values_v6<V: Lanes>(
    f: &LineFront,
    keys: &[u128],
    res: &mut [u32],
    child: &mut [u64],
) {
    let n = keys.len();
    debug_assert!(n <= MAX_BATCH && res.len() >= n && child.len() * 64 >= n);
    const { assert!(MAX_BATCH.is_multiple_of(16) && LINE_WORDS == 16) };
    // Per key: its bucket and line hash, then its line's address; its bits 32–63
    // (biased) and its /32.
    let mut bucket = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut hl = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut at = [MaybeUninit::<*const u32>::uninit(); MAX_BATCH];
    let mut xs = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut tags = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    let mut tail = [0u128; 16];
    // SAFETY: the caller's instruction set; the loads read keys `g..g + V::LANES` below
    // `n` (or a copy of the last ones); the stores write entries `g..g + V::LANES` ≤
    // `MAX_BATCH`.
    unsafe {
        let (seed, kb, kl) = (V::splat(f.seed), V::splat(KB), V::splat(KL));
        let bias = V::splat(1 << 31);
        for g in (0..n).step_by(V::LANES) {
            let live = (n - g).min(V::LANES);
            let kp = if live == V::LANES {
                keys.as_ptr().add(g)
            } else {
                tail[..live].copy_from_slice(&keys[g..]);
                tail.as_ptr()
            };
            let x = V::u128_dword(kp, 2).in_key_order().xor(bias);
            let tag = V::u128_dword(kp, 3).in_key_order();
            x.store(xs.as_mut_ptr().add(g) as *mut u32);
            tag.store(tags.as_mut_ptr().add(g) as *mut u32);
            // t = tag ^ seed; bucket = t·KB >> shift; line hash = t·KL.
            let t = tag.xor(seed);
            t.mul_lo(kb)
                .shr_by(f.shift)
                .store(bucket.as_mut_ptr().add(g) as *mut u32);
            t.mul_lo(kl).store(hl.as_mut_ptr().add(g) as *mut u32);
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
        // aligned: seven keys, a tag and eight values); the caller's instruction set.
        *r = unsafe {
            walk::line_value::<Search<V>>(line.assume_init(), x.assume_init(), tag.assume_init())
        };
    }
    for g in (0..n).step_by(V::LANES) {
        let bits = if n - g >= V::LANES {
            // SAFETY: results `g..g + V::LANES` are written; the caller's instruction set.
            unsafe { V::load(res.as_ptr().add(g)).sign().bits() as u64 }
        } else {
            let top = |(i, &r): (usize, &u32)| ((r >> 31) as u64) << i;
            res[g..n].iter().enumerate().map(top).fold(0, |b, t| b | t)
        };
        child[g / 64] |= bits << (g % 64);
    }
}

//! The SIMD kernel of SAIL_L for IPv4 (pivots 16, 24, 32), written once over [`Lanes`]
//! and instantiated for AVX2 ([`avx2`]: eight keys per stage step) and AVX-512
//! ([`avx512`]: sixteen): the software pipeline of
//! [`Pivots::lookup_batch_v4`](super::pivot::Pivots) with every stage done a vector of keys
//! at a time, each level's entries read by one `vpgatherdd` (the SAIL paper's lookup is one
//! indexed read per level, the access a gather does for a vector of keys at once). The
//! lanes that go on to the next level are a mask (an unsigned compare against the
//! chunk-ID limit), which zeroes the indices of the resolved lanes and merges the
//! gathered entries.
//!
//! The scalar pipeline is the twin: the same stages, the same prefetches, the same
//! answers (the differential tests and `verify` run it and both instances).

use core::arch::x86_64::{__m256i, __m512i};

use super::entry::Entry;
use super::pivot::{pipeline3, Pivots};
use crate::schemes::common::Width;
use crate::simd::lanes::Lanes;
use crate::simd::{Avx2, Avx512};

/// Keys per pipeline block (as the scalar twin).
const PIPE: usize = 64;

/// Looks up `keys` into `out` (same length), the AVX2 instance.
pub(super) fn avx2<E: Entry>(_: Avx2, t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run<E: Entry>(t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
        // SAFETY: this function's target features are `__m256i`'s.
        unsafe { lookup::<__m256i, E>(t, keys, out) }
    }
    // SAFETY: the token proves AVX2 and POPCNT.
    unsafe { run(t, keys, out) }
}

/// Looks up `keys` into `out` (same length), the AVX-512 instance.
pub(super) fn avx512<E: Entry>(_: Avx512, t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
    unsafe fn run<E: Entry>(t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
        // SAFETY: this function's target features are `__m512i`'s.
        unsafe { lookup::<__m512i, E>(t, keys, out) }
    }
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT.
    unsafe { run(t, keys, out) }
}

/// Blocks of [`PIPE`] keys by `V`, the tail by the scalar lookup.
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
unsafe fn lookup<V: Lanes, E: Entry>(t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
    debug_assert_eq!(t.pivots, [16, 24, 32]);
    debug_assert_eq!(keys.len(), out.len());
    let n = keys.len() / PIPE * PIPE;
    // SAFETY: the caller's instruction set; `n` is a multiple of `PIPE` within both
    // slices.
    unsafe { blocks::<V, E>(t, &keys[..n], &mut out[..n]) };
    for (o, &a) in out[n..].iter_mut().zip(&keys[n..]) {
        *o = t.lookup_one(a);
    }
}

/// The entries of `arr` at `idx` (each below the committed length), zero-extended.
///
/// 16-bit entries are read as the aligned 32-bit word holding them (the entry and its
/// even/odd neighbour) and shifted out, so no lane reads past the array: every level's
/// length is even (2^16 entries, chunks of 256).
///
/// # Safety
/// `V`'s instruction set; every lane of `idx` below the committed length of `arr`, whose
/// byte length fits a signed 32-bit offset.
#[inline(always)]
unsafe fn gather<V: Lanes, E: Entry>(arr: *const E, idx: V) -> V {
    // SAFETY: (for both arms) the caller's bounds; each lane is one aligned 32-bit load,
    // which x86 performs as a single access, so an entry the writer stores to meanwhile
    // is read old or new, never torn (the scalar path's atomic load).
    unsafe {
        if E::WIDTH == Width::U16 {
            let one = V::splat(1);
            let w = V::gather::<2>(arr as *const u8, idx.and_not(one));
            w.shr_var(idx.and(one).shl::<4>()).and(V::splat(0xffff))
        } else {
            V::gather::<4>(arr as *const u8, idx)
        }
    }
}

/// # Safety
/// `V`'s instruction set; `keys.len() == out.len()`, a multiple of [`PIPE`].
#[inline(always)]
unsafe fn blocks<V: Lanes, E: Entry>(t: &Pivots<E>, keys: &[u32], out: &mut [u32]) {
    debug_assert!(keys.len().is_multiple_of(PIPE) && out.len() == keys.len());
    debug_assert!(t.arrays.iter().all(|a| a.committed() % 2 == 0));
    let (t16, t24, t32) = (
        t.arrays[0].as_ptr(),
        t.arrays[1].as_ptr(),
        t.arrays[2].as_ptr(),
    );
    // SAFETY (this block, the closures and the three stages): the caller's instruction
    // set. Indices are the top 16 bits of a key (< 2^16, the committed level-16 array), or
    // chunk indices `c << 8 | byte` of chunks whose IDs were read from published entries
    // (committed, complete before the ID's store, not reused before every reader moved
    // on), or 0; level byte lengths are below 2^31 (16-bit entries: < 2^16 chunks; 32-bit:
    // < 2^20 chunks of 256). Loads and stores of `keys`, `out`, `i24`, `i32_` are whole
    // vectors at `b * PIPE + j`, `j + V::LANES <= PIPE`.
    unsafe {
        let lim = V::splat(t.lim);
        let low8 = V::splat(0xff);
        let blocks = keys.len() / PIPE;
        // The index into the next level of the lanes that go on (an entry at or above
        // `lim` is a chunk ID), 0 for the others: entry 0 of a level is committed at
        // creation and cached.
        let next_index = |e: V, byte: V| {
            let go = e.ge_u32(lim);
            e.sub(lim).shl::<8>().or(byte.and(low8)).keep(go)
        };
        let stage_a = |b: usize, i24: &mut [u32; PIPE], out: &mut [u32]| {
            for j in (0..PIPE).step_by(V::LANES) {
                let a = V::load(keys.as_ptr().add(b * PIPE + j));
                let e = gather::<V, E>(t16, a.shr::<16>());
                e.store(out.as_mut_ptr().add(b * PIPE + j));
                let i = next_index(e, a.shr::<8>());
                i.prefetch_lanes(t24, V::LANES);
                i.store(i24.as_mut_ptr().add(j));
            }
        };
        let stage_b = |b: usize, i24: &[u32; PIPE], i32_: &mut [u32; PIPE], out: &mut [u32]| {
            for j in (0..PIPE).step_by(V::LANES) {
                let i = V::load(i24.as_ptr().add(j));
                let o = out.as_mut_ptr().add(b * PIPE + j);
                let prev = V::load(o);
                // Lanes that went on: a chunk index (nonzero) or chunk 0's entry 0 (the
                // previous entry was a chunk ID).
                let e = V::select(prev.ge_u32(lim), gather::<V, E>(t24, i), prev);
                e.store(o);
                let i = next_index(e, V::load(keys.as_ptr().add(b * PIPE + j)));
                i.prefetch_lanes(t32, V::LANES);
                i.store(i32_.as_mut_ptr().add(j));
            }
        };
        let stage_c = |b: usize, i32_: &[u32; PIPE], out: &mut [u32]| {
            for j in (0..PIPE).step_by(V::LANES) {
                let i = V::load(i32_.as_ptr().add(j));
                let o = out.as_mut_ptr().add(b * PIPE + j);
                let prev = V::load(o);
                V::select(prev.ge_u32(lim), gather::<V, E>(t32, i), prev).store(o);
            }
        };
        pipeline3(blocks, keys, out, stage_a, stage_b, stage_c);
    }
}

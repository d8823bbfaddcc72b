//! The SIMD kernels for Spider, written once over [`Lanes`], and their instances: AVX2
//! ([`avx2`]: eight lanes per register, `spider16w`'s sixteen addresses two fused
//! streams) and AVX-512 ([`avx512`]: sixteen lanes, one register per block).
//!
//! * `ops.rs`: the primitives — per element layout ([`Decode`]), per address family
//!   ([`Family`]: [`V4`], [`V6`]), the octet extraction;
//! * `lockstep.rs`: Algorithm 1 (IPv4) and Algorithm 2 (IPv6) with loop fusion, in
//!   lockstep blocks (the paper's loop, pipelined or interleaved);
//! * `refill.rs`: the lane-refilling kernel, level by level over chunks of keys.
//!
//! `lockstep` and `refill` use `ops`; `ops` uses neither. [`dispatch`] picks the kernel
//! for [`LookupParams`] and hands the tail (fewer than `ways` addresses) to the refilling
//! kernel, whose last vector is masked; each kernel instance is a function of its own,
//! compiled for its instruction set ([`Width`]). The AVX-512 instance serves 16 ways; the
//! other degrees of parallelism run the AVX2 one (a table built with them reports
//! `avx2`).

mod lockstep;
mod ops;
mod refill;

use core::arch::x86_64::{__m256i, __m512i};

pub(super) use ops::{Decode, Family, V4, V6};

use super::{Elements, LookupParams, INTERLEAVE, IN_FLIGHT, IN_FLIGHT_16W, MAX_WAYS};
use crate::simd::lanes::Lanes;
use crate::simd::{Avx2, Avx512};

/// Bulk lookup, the AVX2 instance.
pub(super) fn avx2<C: Decode, F: Family>(
    _: Avx2,
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
) {
    // SAFETY: the token proves AVX2 and POPCNT, `__m256i`'s instruction set.
    unsafe { dispatch::<__m256i, C, F>(t, split, p, keys, out) }
}

/// Bulk lookup, the AVX-512 instance (16 ways).
pub(super) fn avx512<C: Decode, F: Family>(
    _: Avx512,
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert_eq!(p.ways, MAX_WAYS);
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT, `__m512i`'s instruction set.
    unsafe { dispatch::<__m512i, C, F>(t, split, p, keys, out) }
}

/// The kernels of one width, each instance a function compiled with the width's
/// instruction set (`#[target_feature]`), so that every operation of `Lanes` inlines into
/// it as that instruction set's instructions.
///
/// # Safety
/// Every function needs the instruction set of `Self`, and the contract of the kernel it
/// runs.
pub(super) trait Width: Lanes {
    /// [`lockstep::kernel`] on `Self`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn lockstep<C: Decode, F: Family, const S: usize, const PARTIAL: bool, const K: usize>(
        t: &Elements<C::E>,
        split: u32,
        yield_octets: u32,
        cold_octets: u32,
        ways: usize,
        keys: &[F::Key],
        out: &mut [u32],
    );

    /// [`refill::lookup`] on `Self`.
    unsafe fn refill<C: Decode, F: Family>(
        t: &Elements<C::E>,
        split: u32,
        p: &LookupParams,
        keys: &[F::Key],
        out: &mut [u32],
    );
}

/// Implements [`Width`] for a vector type and its instruction set.
macro_rules! width {
    ($V:ty, $features:literal) => {
        impl Width for $V {
            #[inline(always)]
            unsafe fn lockstep<
                C: Decode,
                F: Family,
                const S: usize,
                const PARTIAL: bool,
                const K: usize,
            >(
                t: &Elements<C::E>,
                split: u32,
                yield_octets: u32,
                cold_octets: u32,
                ways: usize,
                keys: &[F::Key],
                out: &mut [u32],
            ) {
                #[target_feature(enable = $features)]
                #[allow(clippy::too_many_arguments)]
                unsafe fn run<
                    C: Decode,
                    F: Family,
                    const S: usize,
                    const PARTIAL: bool,
                    const K: usize,
                >(
                    t: &Elements<C::E>,
                    split: u32,
                    y: u32,
                    c: u32,
                    ways: usize,
                    keys: &[F::Key],
                    out: &mut [u32],
                ) {
                    // SAFETY: this function's target features are the width's; the rest is
                    // the caller's.
                    unsafe {
                        lockstep::kernel::<$V, C, F, S, PARTIAL, K>(t, split, y, c, ways, keys, out)
                    }
                }
                // SAFETY: the caller's.
                unsafe {
                    run::<C, F, S, PARTIAL, K>(t, split, yield_octets, cold_octets, ways, keys, out)
                }
            }

            #[inline(always)]
            unsafe fn refill<C: Decode, F: Family>(
                t: &Elements<C::E>,
                split: u32,
                p: &LookupParams,
                keys: &[F::Key],
                out: &mut [u32],
            ) {
                #[target_feature(enable = $features)]
                unsafe fn run<C: Decode, F: Family>(
                    t: &Elements<C::E>,
                    split: u32,
                    p: &LookupParams,
                    keys: &[F::Key],
                    out: &mut [u32],
                ) {
                    // SAFETY: this function's target features are the width's; the rest is
                    // the caller's.
                    unsafe { refill::lookup::<$V, C, F>(t, split, p, keys, out) }
                }
                // SAFETY: the caller's.
                unsafe { run::<C, F>(t, split, p, keys, out) }
            }
        }
    };
}

width!(__m256i, "avx2,popcnt");
width!(__m512i, "avx512f,avx512bw,avx512dq,avx512vl,popcnt");

/// Runs the kernel for `p.ways`, `p.pipeline` and `p.refill`; the tail of fewer than
/// `ways` addresses goes to the refilling kernel.
///
/// # Safety
/// `V`'s instruction set; `out.len() >= keys.len()`; `t` and `split` come from one build;
/// `p.ways` is at most two vectors.
#[inline(always)]
unsafe fn dispatch<V: Width, C: Decode, F: Family>(
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
) {
    let ways = p.ways;
    debug_assert!((1..=2 * V::LANES).contains(&ways) && out.len() >= keys.len());
    if p.refill && (ways == 8 || ways == 16) {
        // SAFETY: the caller's.
        unsafe { V::refill::<C, F>(t, split, p, keys, out) };
        return;
    }
    let whole = keys.len() / ways * ways;
    let (keys, tail) = keys.split_at(whole);
    let (res, res_tail) = out.split_at_mut(whole);
    // One block cannot overlap with anything: the paper's loop.
    let blocks = if keys.len() > ways {
        p.lockstep_blocks()
    } else {
        1
    };
    let l = V::LANES;
    // SAFETY: the caller's; `keys.len()` is a multiple of `ways`, `res` is as long, and the
    // shape matches `ways`.
    unsafe {
        let run = (t, split, blocks, p.cold_octets, ways, keys, res);
        if l == MAX_WAYS {
            // The AVX-512 instance serves a vector's ways only.
            debug_assert_eq!(ways, l);
            shape::<V, C, F, 1, false>(run)
        } else if ways == 2 * l {
            shape::<V, C, F, 2, false>(run)
        } else if ways > l {
            shape::<V, C, F, 2, true>(run)
        } else if ways == l {
            shape::<V, C, F, 1, false>(run)
        } else {
            shape::<V, C, F, 1, true>(run)
        }
        if !tail.is_empty() {
            V::refill::<C, F>(t, split, p, tail, res_tail);
        }
    }
}

/// What a lockstep kernel runs on: the table, `split`, the blocks in flight, the cold
/// octets, `ways`, the keys and their results.
type Run<'a, C, F> = (
    &'a Elements<<C as crate::schemes::spider::codec::Codec>::E>,
    u32,
    usize,
    u32,
    usize,
    &'a [<F as Family>::Key],
    &'a mut [u32],
);

/// Runs the lockstep kernel of one shape with `blocks` blocks in flight: 1 (the paper's
/// loop), [`INTERLEAVE`] (yield at every level, no prefetching) or [`IN_FLIGHT`] or
/// [`IN_FLIGHT_16W`] (yield and prefetch before the levels of `cold_octets`).
///
/// # Safety
/// As [`lockstep::kernel`]'s; `blocks` is one of the four.
#[inline(always)]
unsafe fn shape<V: Width, C: Decode, F: Family, const S: usize, const PARTIAL: bool>(
    (t, split, blocks, cold, ways, keys, out): Run<'_, C, F>,
) {
    // SAFETY: the contract.
    unsafe {
        match blocks {
            IN_FLIGHT => {
                V::lockstep::<C, F, S, PARTIAL, IN_FLIGHT>(t, split, cold, cold, ways, keys, out)
            }
            IN_FLIGHT_16W => V::lockstep::<C, F, S, PARTIAL, IN_FLIGHT_16W>(
                t, split, cold, cold, ways, keys, out,
            ),
            INTERLEAVE => {
                V::lockstep::<C, F, S, PARTIAL, INTERLEAVE>(t, split, !0, 0, ways, keys, out)
            }
            _ => V::lockstep::<C, F, S, PARTIAL, 1>(t, split, 0, 0, ways, keys, out),
        }
    }
}

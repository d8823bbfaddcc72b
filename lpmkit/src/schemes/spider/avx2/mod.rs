//! AVX2 kernels for Spider, and their entry points [`lookup_v4`] and [`lookup_v6`].
//!
//! * `ops.rs`: the primitives — per element layout ([`Simd`]), per address family
//!   ([`Family`]: [`V4`], [`V6`]), shuffle masks and lane tests;
//! * `lockstep.rs`: Algorithm 1 (IPv4) and Algorithm 2 (IPv6) with loop fusion, in
//!   lockstep blocks (the paper's loop, pipelined or interleaved);
//! * `refill.rs`: the lane-refilling kernel, level by level over chunks of keys.
//!
//! `lockstep` and `refill` use `ops`; `ops` uses neither. [`dispatch`] picks the kernel
//! for [`LookupParams`] and hands the tail (fewer than `ways` addresses) to the scalar
//! twin.

mod lockstep;
mod ops;
mod refill;

use lockstep::shape;
use ops::{Family, Simd, V4, V6};

use super::{scalar, Elements, LookupParams};
use crate::simd::Avx2;

/// The scalar twin that takes the tail.
type TailFn<E, K> = fn(&Elements<E>, u32, &[K], &mut [u32]);

/// Runs the kernel shape for `p.ways` and `p.pipeline`; the tail goes to the scalar twin.
#[inline(always)]
fn dispatch<C: Simd, F: Family>(
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
    tail_fn: TailFn<C::E, F::Key>,
) {
    let ways = p.ways;
    if p.refill && (ways == 8 || ways == 16) {
        // SAFETY: the callers hold an `Avx2` token; `out` is as long as `keys`.
        unsafe {
            if ways == 16 {
                refill::lookup::<C, F, true>(t, split, p, keys, out)
            } else {
                refill::lookup::<C, F, false>(t, split, p, keys, out)
            }
        }
        return;
    }
    debug_assert!((1..=16).contains(&ways) && out.len() >= keys.len());
    let whole = keys.len() / ways * ways;
    let (keys, tail) = keys.split_at(whole);
    let (res, res_tail) = out.split_at_mut(whole);
    // One block cannot overlap with anything: the paper's loop.
    let blocks = if keys.len() > ways {
        p.lockstep_blocks()
    } else {
        1
    };
    // SAFETY: the callers hold an `Avx2` token, which proves the CPU supports AVX2;
    // `keys.len()` is a multiple of `ways`, `res` is as long, and the shape matches `ways`.
    unsafe {
        match ways {
            16 => shape::<C, F, true, false>(t, split, blocks, p.cold_octets, 16, keys, res),
            8 => shape::<C, F, false, false>(t, split, blocks, p.cold_octets, 8, keys, res),
            w if w > 8 => shape::<C, F, true, true>(t, split, blocks, p.cold_octets, w, keys, res),
            w => shape::<C, F, false, true>(t, split, blocks, p.cold_octets, w, keys, res),
        }
    }
    tail_fn(t, split, tail, res_tail);
}

/// Bulk IPv4 lookup.
pub(super) fn lookup_v4<C: Simd>(
    _token: Avx2,
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    addrs: &[u32],
    out: &mut [u32],
) {
    dispatch::<C, V4>(t, split, p, addrs, out, scalar::lockstep::<u32, C>)
}

/// Bulk IPv6 lookup.
pub(super) fn lookup_v6<C: Simd>(
    _token: Avx2,
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    addrs: &[u128],
    out: &mut [u32],
) {
    dispatch::<C, V6>(t, split, p, addrs, out, scalar::lockstep::<u128, C>)
}

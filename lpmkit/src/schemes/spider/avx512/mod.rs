//! AVX-512 kernels for Spider, and their entry points [`lookup_v4`] and [`lookup_v6`]:
//! sixteen lanes per register, so `spider16w`'s sixteen addresses are one register
//! instead of the AVX2 kernels' two fused 8-lane streams.
//!
//! * `ops.rs`: the primitives — per element layout ([`Simd512`](ops::Simd512)), per
//!   address family ([`Family512`](ops::Family512): [`V4`], [`V6`]);
//! * `lockstep.rs`: Algorithm 1 and 2 in lockstep blocks of sixteen lanes (the paper's
//!   loop, pipelined or interleaved), the walking lanes in a mask register;
//! * `refill.rs`: the lane-refilling kernel (`vpcompressd` packs the lookups that go on).
//!
//! They serve 16 ways; the other degrees of parallelism run the AVX2 kernels (a table
//! built with them reports `avx2`). [`dispatch`] picks the kernel for [`LookupParams`];
//! the lockstep kernel hands a tail of fewer than sixteen addresses to the refilling
//! kernel, whose last vector is masked.

mod lockstep;
mod ops;
mod refill;

use ops::{Family512, Simd512, V4, V6};

use super::{Elements, LookupParams};
use crate::simd::Avx512;

/// The ways the AVX-512 kernels serve.
pub(super) const WAYS: usize = 16;

/// Runs the kernel for `p.pipeline` and `p.refill`.
#[inline(always)]
fn dispatch<C: Simd512, F: Family512>(
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(p.ways == WAYS && out.len() >= keys.len());
    if p.refill {
        // SAFETY: the callers hold an `Avx512` token (AVX-512F/BW/DQ/VL and POPCNT);
        // `out` is at least as long as `keys`.
        unsafe { refill::lookup::<C, F>(t, split, p, keys, out) };
        return;
    }
    let whole = keys.len() / WAYS * WAYS;
    let (keys, tail) = keys.split_at(whole);
    let (res, res_tail) = out.split_at_mut(whole);
    // One block cannot overlap with anything: the paper's loop.
    let blocks = if keys.len() > WAYS {
        p.lockstep_blocks()
    } else {
        1
    };
    // SAFETY: as above; `keys.len()` is a multiple of 16 and `res` is as long.
    unsafe {
        lockstep::shape::<C, F>(t, split, blocks, p.cold_octets, keys, res);
        if !tail.is_empty() {
            refill::lookup::<C, F>(t, split, p, tail, res_tail);
        }
    }
}

/// Bulk IPv4 lookup (16 ways).
pub(super) fn lookup_v4<C: Simd512>(
    _token: Avx512,
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    addrs: &[u32],
    out: &mut [u32],
) {
    dispatch::<C, V4>(t, split, p, addrs, out)
}

/// Bulk IPv6 lookup (16 ways).
pub(super) fn lookup_v6<C: Simd512>(
    _token: Avx512,
    t: &Elements<C::E>,
    split: u32,
    p: &LookupParams,
    addrs: &[u128],
    out: &mut [u32],
) {
    dispatch::<C, V6>(t, split, p, addrs, out)
}

//! The scalar twin of the Spider kernels, and `spider1w`.
//!
//! [`lookup_one`] is Algorithm 1 for a single address: the direct pointing element of the
//! first 16 bits, then one element per octet while the element names a next row.
//! [`lookup_batch`] steps `ways` addresses in lockstep exactly as the SIMD kernels do —
//! finished lanes keep reading the End-of-Lookup row until every lane is done — so with
//! `ways = 1` it is the paper's 1-way Spider and with more lanes it gives the scalar
//! fallback the same memory-level parallelism as the vector code.

use super::codec::Codec;
use super::{Elements, DP_FIRST_ROW, MAX_WAYS, ROW};
use crate::prefix::Address;

/// The element at `i`.
#[inline(always)]
fn element<C: Codec>(t: &[C::E], i: usize) -> C::E {
    debug_assert!(i < t.len(), "element {i} outside the table of {}", t.len());
    // SAFETY: `i` is either `DP_FIRST_ROW * 256 + (16-bit value)`, inside the direct
    // pointing table, or `row * 256 + (octet)` for a row index read from an element; the
    // builder writes only row indices of rows it allocated (and 0, End-of-Lookup).
    unsafe { *t.get_unchecked(i) }
}

/// Looks up one address.
#[inline]
pub(super) fn lookup_one<A: Address, C: Codec>(t: &Elements<C::E>, split: u32, addr: A) -> u32 {
    lookup_counting::<A, C>(t, split, addr).0
}

/// Looks up one address; also returns how many elements it read after the direct
/// pointing element (its depth below the first level).
#[inline(always)]
pub(super) fn lookup_counting<A: Address, C: Codec>(
    t: &Elements<C::E>,
    split: u32,
    addr: A,
) -> (u32, usize) {
    let t = t.as_slice();
    let (mut base, mut res) = C::decode(
        element::<C>(t, DP_FIRST_ROW * ROW + addr.bits_at(0, 16) as usize),
        split,
    );
    let mut offset = 16;
    let mut levels = 0;
    while base != 0 {
        debug_assert!(offset < A::BITS, "a row below the last octet");
        let (b, nh) = C::decode(
            element::<C>(t, base + addr.bits_at(offset, 8) as usize),
            split,
        );
        if nh != 0 {
            res = nh;
        }
        base = b;
        offset += 8;
        levels += 1;
    }
    (res, levels)
}

/// Looks up `addrs` in groups of `ways` lanes stepped in lockstep; the last group may be
/// shorter.
pub(super) fn lookup_batch<A: Address, C: Codec>(
    t: &Elements<C::E>,
    split: u32,
    ways: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    debug_assert!((1..=MAX_WAYS).contains(&ways) && out.len() >= addrs.len());
    if ways == 1 {
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = lookup_one::<A, C>(t, split, a);
        }
        return;
    }
    for (keys, res) in addrs.chunks(ways).zip(out.chunks_mut(ways)) {
        lockstep::<A, C>(t, split, keys, res);
    }
}

/// Algorithm 1 on up to 16 lanes at once, lane by lane: the twin of the AVX2 kernels.
pub(super) fn lockstep<A: Address, C: Codec>(
    t: &Elements<C::E>,
    split: u32,
    keys: &[A],
    out: &mut [u32],
) {
    let n = keys.len();
    debug_assert!(n <= MAX_WAYS && out.len() >= n);
    let t = t.as_slice();
    let mut base = [0usize; MAX_WAYS];
    let mut res = [0u32; MAX_WAYS];
    for i in 0..n {
        let dp = DP_FIRST_ROW * ROW + keys[i].bits_at(0, 16) as usize;
        let (b, nh) = C::decode(element::<C>(t, dp), split);
        base[i] = b;
        res[i] = nh;
    }
    let mut offset = 16;
    while base[..n].iter().any(|&b| b != 0) {
        debug_assert!(offset < A::BITS, "a row below the last octet");
        for i in 0..n {
            // Finished lanes read row 0 (End-of-Lookup), which keeps them there.
            let i8 = base[i] + keys[i].bits_at(offset, 8) as usize;
            let (b, nh) = C::decode(element::<C>(t, i8), split);
            if nh != 0 {
                res[i] = nh;
            }
            base[i] = b;
        }
        offset += 8;
    }
    out[..n].copy_from_slice(&res[..n]);
}

//! The primitives of the Spider kernels over [`Lanes`]: per element layout ([`Decode`]:
//! gathers, and the decoding of gathered elements into a next-row vector, the next hops
//! and a mask of the lanes that go on), per address family ([`Family`]: one 32-bit word of
//! a vector of addresses, and their order), and the octet extraction both kernels use.
//! The lockstep kernels (`lockstep.rs`) and the lane-refilling kernel (`refill.rs`) are
//! built from these; this module uses neither.

use crate::schemes::spider::codec::{Codec, Compact16, Paper32, Wide32};
use crate::schemes::spider::{DP_FIRST_ROW, FIRST_STRIDE_ROW, ROW};
use crate::simd::lanes::{LaneMask, Lanes};

/// The element operations of one layout, on any vector width.
///
/// # Safety
/// Every function needs the instruction set of `V`.
pub(in crate::schemes::spider) trait Decode: Codec {
    /// Per-table decoding constants.
    type Dec<V: Lanes>: Copy;

    /// The constants for a table with the codec parameter `split`.
    unsafe fn decoder<V: Lanes>(split: u32) -> Self::Dec<V>;

    /// `vpgatherdd` of the elements at element indices `idx`.
    ///
    /// # Safety
    /// Every index is an element index of the table at `t` (the padding after the last
    /// row covers the 4-byte read of a 2-byte element).
    unsafe fn gather<V: Lanes>(t: *const Self::E, idx: V) -> V;

    /// As [`gather`](Self::gather) for the lanes of `m`; the others read nothing and are
    /// 0.
    ///
    /// # Safety
    /// As `gather`, for the lanes of `m`.
    unsafe fn gather_masked<V: Lanes>(t: *const Self::E, idx: V, m: V::Mask) -> V;

    /// Decodes gathered elements: the index of each lane's next row element 0 (`row ×
    /// 256`; 0 = End-of-Lookup), `res` with the next hops the elements set, and the mask
    /// of the lanes whose element names a row.
    unsafe fn step<V: Lanes>(d: &Self::Dec<V>, val: V, res: V) -> (V, V, V::Mask);

    /// The next-hop ids from the accumulated `res`.
    unsafe fn finish<V: Lanes>(res: V) -> V;
}

/// Constants of the `Compact16` decoder.
#[derive(Clone, Copy)]
pub(in crate::schemes::spider) struct SplitDec<V> {
    /// 0xffff: the element is the low half of the gathered dword.
    low16: V,
    /// `split − 1`: values above it name rows.
    last_nh: V,
    /// `FIRST_STRIDE_ROW − split`: added to a row value, gives the row index.
    to_row: V,
}

impl Decode for Compact16 {
    type Dec<V: Lanes> = SplitDec<V>;
    #[inline(always)]
    unsafe fn decoder<V: Lanes>(split: u32) -> SplitDec<V> {
        // SAFETY: `V`'s instruction set (the caller's).
        unsafe {
            SplitDec {
                low16: V::splat(0xffff),
                last_nh: V::splat(split.wrapping_sub(1)),
                to_row: V::splat((FIRST_STRIDE_ROW as u32).wrapping_sub(split)),
            }
        }
    }
    #[inline(always)]
    unsafe fn gather<V: Lanes>(t: *const u16, idx: V) -> V {
        // SAFETY: see the trait; scale 2 reads the element and the one after it (or the
        // padding), masked off in `step`.
        unsafe { V::gather::<2>(t as *const u8, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked<V: Lanes>(t: *const u16, idx: V, m: V::Mask) -> V {
        // SAFETY: see the trait.
        unsafe { V::zero().gather_masked::<2>(t as *const u8, idx, m) }
    }
    #[inline(always)]
    unsafe fn step<V: Lanes>(d: &SplitDec<V>, val: V, res: V) -> (V, V, V::Mask) {
        // SAFETY: `V`'s instruction set.
        unsafe {
            let v = val.and(d.low16);
            // `v` and `split − 1` are below 2^16: a signed compare orders them.
            let row = v.gt_i32(d.last_nh);
            let base = v.add(d.to_row).shl::<8>().keep(row);
            // Algorithm 1 keeps a lane's result where the next hop is 0 (`cmpeq32` +
            // `blend32`). Elements are leaf-pushed (see the module docs): a lane meets at
            // most one non-zero next hop, its final one, and reads only zeros after it
            // (End-of-Lookup), so `or` gives the same result in one µop instead of two.
            (base, res.or(v.clear(row)), row)
        }
    }
    #[inline(always)]
    unsafe fn finish<V: Lanes>(res: V) -> V {
        res
    }
}

impl Decode for Paper32 {
    type Dec<V: Lanes> = ();
    #[inline(always)]
    unsafe fn decoder<V: Lanes>(_: u32) {}
    #[inline(always)]
    unsafe fn gather<V: Lanes>(t: *const u32, idx: V) -> V {
        // SAFETY: see the trait.
        unsafe { V::gather::<4>(t as *const u8, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked<V: Lanes>(t: *const u32, idx: V, m: V::Mask) -> V {
        // SAFETY: see the trait.
        unsafe { V::zero().gather_masked::<4>(t as *const u8, idx, m) }
    }
    /// Algorithm 1, lines 14–17: `nhi = shuffle8(val, masknhi)`, `maskbl = cmpeq32(nhi,
    /// 0)`, `res = blend32(maskbl, res, nhi)`, `nri = shuffle8(val, masknri)`: the lanes
    /// whose next-hop field is non-zero take it; the row field moved down by one byte is
    /// `row × 256`, ready for `add32`.
    #[inline(always)]
    unsafe fn step<V: Lanes>(_: &(), val: V, res: V) -> (V, V, V::Mask) {
        // SAFETY: `V`'s instruction set.
        unsafe {
            let low16 = V::splat(0xffff);
            let nhi = val.and(low16);
            let base = val.and_not(low16).shr::<8>();
            (base, V::select(nhi.nonzero(), nhi, res), base.nonzero())
        }
    }
    #[inline(always)]
    unsafe fn finish<V: Lanes>(res: V) -> V {
        res
    }
}

impl Decode for Wide32 {
    type Dec<V: Lanes> = ();
    #[inline(always)]
    unsafe fn decoder<V: Lanes>(_: u32) {}
    #[inline(always)]
    unsafe fn gather<V: Lanes>(t: *const u32, idx: V) -> V {
        // SAFETY: see the trait.
        unsafe { V::gather::<4>(t as *const u8, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked<V: Lanes>(t: *const u32, idx: V, m: V::Mask) -> V {
        // SAFETY: see the trait.
        unsafe { V::zero().gather_masked::<4>(t as *const u8, idx, m) }
    }
    /// The tag is the sign bit.
    #[inline(always)]
    unsafe fn step<V: Lanes>(_: &(), val: V, res: V) -> (V, V, V::Mask) {
        // SAFETY: `V`'s instruction set.
        unsafe {
            let leaf = val.sign();
            let base = val.clear(leaf);
            (base, V::select(leaf, val, res), base.nonzero())
        }
    }
    #[inline(always)]
    unsafe fn finish<V: Lanes>(res: V) -> V {
        // SAFETY: `V`'s instruction set.
        unsafe { res.and(V::splat(0x7fff_ffff)) }
    }
}

/// The `shuffle8` control `maskd8` that moves byte `b` (0 = lowest) of every 32-bit lane to
/// its byte 0 and zeroes the rest: octet `3 − b` of the word.
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
pub(super) unsafe fn octet_ctl<V: Lanes>(b: u32) -> V {
    // SAFETY: `V`'s instruction set. Lane `i` is bytes `4 (i mod 4) + b` of its 16-byte
    // group, then three zeroing bytes.
    unsafe { V::from_fn(|i| (b + 4 * (i as u32 % 4)) | 0x8080_8000) }
}

/// The direct-pointing index of every lane: the top 16 bits of the word (the first two
/// octets) plus row 1 (Algorithm 1, lines 3–4).
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
pub(super) unsafe fn dp_index<V: Lanes>(w: V) -> V {
    // SAFETY: `V`'s instruction set.
    unsafe { w.shr::<16>().add(V::splat((DP_FIRST_ROW * ROW) as u32)) }
}

/// The direct-pointing element of the address whose first 32 bits are `w`, by one scalar
/// load.
///
/// # Safety
/// `tp` is the table (its direct pointing table: rows 1–256).
#[inline(always)]
pub(super) unsafe fn dp_element<E: Copy>(tp: *const E, w: u32) -> u32 {
    let ix = (w >> 16) as usize + DP_FIRST_ROW * ROW;
    // SAFETY: the index is inside rows 1–256 (16 bits plus row 1).
    unsafe {
        if core::mem::size_of::<E>() == 2 {
            *(tp as *const u16).add(ix) as u32
        } else {
            *(tp as *const u32).add(ix)
        }
    }
}

/// An address family as lanes of one 32-bit word each.
pub(in crate::schemes::spider) trait Family {
    type Key: Copy;
    /// The word holding the first 32 bits.
    const FIRST_WORD: usize;
    /// Octets in an address.
    const OCTETS: usize;
    /// 32-bit words in an address.
    const WORDS: usize;

    /// Word `w` of the `V::LANES` addresses at `p`, one per lane, in `V`'s order for the
    /// family ([`to_key_order`](Self::to_key_order) undoes it); if `PARTIAL`, of the first
    /// `n` only, the others not read and 0.
    ///
    /// # Safety
    /// `V`'s instruction set; `p` holds `V::LANES` addresses (`n` if `PARTIAL`).
    unsafe fn word<V: Lanes, const PARTIAL: bool>(p: *const Self::Key, w: usize, n: usize) -> V;

    /// The lanes of a [`word`](Self::word) in address order (lane `i`: address `i`).
    ///
    /// # Safety
    /// `V`'s instruction set.
    unsafe fn to_key_order<V: Lanes>(v: V) -> V;

    /// Whether [`word`](Self::word) leaves its lanes in address order on `V`.
    fn in_order<V: Lanes>() -> bool;

    /// The lanes of a [`word`](Self::word) that hold one of the first `n` addresses.
    ///
    /// # Safety
    /// `V`'s instruction set.
    #[inline(always)]
    unsafe fn lanes_below<V: Lanes>(n: usize) -> V::Mask {
        // SAFETY: `V`'s instruction set.
        unsafe {
            if Self::in_order::<V>() {
                V::Mask::first(n)
            } else {
                // Keys of 128 bits whose word 0 is their index, in the lanes' order.
                let at: [u128; 16] = core::array::from_fn(|i| i as u128);
                V::splat(n as u32).gt_i32(V::u128_dword(at.as_ptr(), 0))
            }
        }
    }
}

/// IPv4: the address is the word (Algorithm 1).
pub(in crate::schemes::spider) struct V4;

impl Family for V4 {
    type Key = u32;
    const FIRST_WORD: usize = 0;
    const OCTETS: usize = 4;
    const WORDS: usize = 1;
    #[inline(always)]
    unsafe fn word<V: Lanes, const PARTIAL: bool>(p: *const u32, _w: usize, n: usize) -> V {
        // SAFETY: the contract; a masked load reads only the first `n` keys.
        unsafe {
            if PARTIAL {
                V::load_masked(p, V::Mask::first(n))
            } else {
                V::load(p)
            }
        }
    }
    #[inline(always)]
    unsafe fn to_key_order<V: Lanes>(v: V) -> V {
        v
    }
    #[inline(always)]
    fn in_order<V: Lanes>() -> bool {
        true
    }
}

/// IPv6: one 32-bit word of each address (Algorithm 2: four loads and three unpacks of
/// eight addresses on AVX2, the lanes in the order 0, 2, 4, 6, 1, 3, 5, 7 that a final
/// `permute32` restores; two two-source permutes of sixteen on AVX-512, in order).
/// Host-order `u128`: the first 32 bits are the high dword. The paper shifts the four
/// registers right by four bytes per refill; re-reading them from the input (in L1) needs
/// no live registers between refills.
pub(in crate::schemes::spider) struct V6;

impl Family for V6 {
    type Key = u128;
    const FIRST_WORD: usize = 3;
    const OCTETS: usize = 16;
    const WORDS: usize = 4;
    #[inline(always)]
    unsafe fn word<V: Lanes, const PARTIAL: bool>(p: *const u128, w: usize, n: usize) -> V {
        // SAFETY: the contract.
        unsafe {
            if PARTIAL {
                V::u128_dword_first(p, w, n)
            } else {
                V::u128_dword(p, w)
            }
        }
    }
    #[inline(always)]
    unsafe fn to_key_order<V: Lanes>(v: V) -> V {
        // SAFETY: `V`'s instruction set.
        unsafe { v.in_key_order() }
    }
    #[inline(always)]
    fn in_order<V: Lanes>() -> bool {
        V::U128_IN_ORDER
    }
}

//! The AVX2 primitives of the Spider kernels, on eight 32-bit lanes: per element layout
//! ([`Simd`]: gathers and the decoding of gathered elements), per address family
//! ([`Family`]: loading one 32-bit word of eight addresses, storing eight results), and
//! the shuffle masks and lane tests both kernels use. The lockstep kernels
//! (`lockstep.rs`) and the lane-refilling kernel (`refill.rs`) are built from these; this
//! module uses neither.

use core::arch::x86_64::*;

use crate::schemes::spider::codec::{Codec, Compact16, Paper32, Wide32};
use crate::schemes::spider::{DP_FIRST_ROW, FIRST_STRIDE_ROW, ROW};

/// The element operations of one layout, as AVX2 code on eight lanes.
///
/// All functions are `#[inline(always)]` and only called from `#[target_feature(enable =
/// "avx2")]` kernels, so they compile to AVX2 instructions there.
pub(in crate::schemes::spider) trait Simd: Codec {
    /// Per-table decoding constants.
    type Dec: Copy;

    /// The constants for a table with the codec parameter `split`.
    ///
    /// # Safety
    /// AVX2.
    unsafe fn decoder(split: u32) -> Self::Dec;

    /// `vpgatherdd` of the elements at element indices `idx`.
    ///
    /// # Safety
    /// AVX2; every index is an element index of `t`'s table (the padding after the last
    /// row covers the 4-byte read of a 2-byte element).
    unsafe fn gather(t: *const Self::E, idx: __m256i) -> __m256i;

    /// As [`gather`](Self::gather) for the lanes set in `mask`; the others read nothing
    /// and are 0.
    ///
    /// # Safety
    /// As `gather`, for the lanes set in `mask`.
    unsafe fn gather_masked(t: *const Self::E, idx: __m256i, mask: __m256i) -> __m256i;

    /// Decodes gathered elements: returns the index of each lane's next row element 0
    /// (`row × 256`; 0 = End-of-Lookup) and `res` with the next hops the elements set.
    ///
    /// # Safety
    /// AVX2.
    unsafe fn step(d: &Self::Dec, val: __m256i, res: __m256i) -> (__m256i, __m256i);

    /// The next-hop ids from the accumulated `res`.
    ///
    /// # Safety
    /// AVX2.
    unsafe fn finish(res: __m256i) -> __m256i;
}

/// `blendv` on the sign bit of `mask`: `b` where it is set, else `a`.
#[inline(always)]
unsafe fn select_on_sign(a: __m256i, b: __m256i, mask: __m256i) -> __m256i {
    // SAFETY: AVX (the caller has AVX2); pure register operations.
    unsafe {
        _mm256_castps_si256(_mm256_blendv_ps(
            _mm256_castsi256_ps(a),
            _mm256_castsi256_ps(b),
            _mm256_castsi256_ps(mask),
        ))
    }
}

/// Constants of the `Compact16` decoder.
#[derive(Clone, Copy)]
pub(in crate::schemes::spider) struct SplitDec {
    /// 0xffff: the element is the low half of the gathered dword.
    low16: __m256i,
    /// `split − 1`: values above it name rows.
    last_nh: __m256i,
    /// `FIRST_STRIDE_ROW − split`: added to a row value, gives the row index.
    to_row: __m256i,
}

impl Simd for Compact16 {
    type Dec = SplitDec;
    #[inline(always)]
    unsafe fn decoder(split: u32) -> SplitDec {
        // SAFETY: AVX register operations.
        unsafe {
            SplitDec {
                low16: _mm256_set1_epi32(0xffff),
                last_nh: _mm256_set1_epi32(split as i32 - 1),
                to_row: _mm256_set1_epi32(FIRST_STRIDE_ROW as i32 - split as i32),
            }
        }
    }
    #[inline(always)]
    unsafe fn gather(t: *const u16, idx: __m256i) -> __m256i {
        // SAFETY: see the trait; scale 2 reads the element and the one after it (or the
        // padding), masked off in `step`.
        unsafe { _mm256_i32gather_epi32::<2>(t as *const i32, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked(t: *const u16, idx: __m256i, mask: __m256i) -> __m256i {
        // SAFETY: see the trait.
        unsafe {
            _mm256_mask_i32gather_epi32::<2>(_mm256_setzero_si256(), t as *const i32, idx, mask)
        }
    }
    #[inline(always)]
    unsafe fn step(d: &SplitDec, val: __m256i, res: __m256i) -> (__m256i, __m256i) {
        // SAFETY: AVX2 register operations.
        unsafe {
            let v = _mm256_and_si256(val, d.low16);
            let is_row = _mm256_cmpgt_epi32(v, d.last_nh);
            let base = _mm256_and_si256(
                is_row,
                _mm256_slli_epi32::<8>(_mm256_add_epi32(v, d.to_row)),
            );
            // Algorithm 1 keeps a lane's result where the next hop is 0 (`cmpeq32` +
            // `blend32`). Elements are leaf-pushed (see the module docs): a lane meets at
            // most one non-zero next hop, its final one, and reads only zeros after it
            // (End-of-Lookup), so `or` gives the same result in one µop instead of two.
            (base, _mm256_or_si256(_mm256_andnot_si256(is_row, v), res))
        }
    }
    #[inline(always)]
    unsafe fn finish(res: __m256i) -> __m256i {
        res
    }
}

impl Simd for Paper32 {
    type Dec = ();
    #[inline(always)]
    unsafe fn decoder(_: u32) {}
    #[inline(always)]
    unsafe fn gather(t: *const u32, idx: __m256i) -> __m256i {
        // SAFETY: see the trait.
        unsafe { _mm256_i32gather_epi32::<4>(t as *const i32, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked(t: *const u32, idx: __m256i, mask: __m256i) -> __m256i {
        // SAFETY: see the trait.
        unsafe {
            _mm256_mask_i32gather_epi32::<4>(_mm256_setzero_si256(), t as *const i32, idx, mask)
        }
    }
    /// Algorithm 1, lines 14–17: `nhi = shuffle8(val, masknhi)`, `maskbl = cmpeq32(nhi,
    /// 0)`, `res = blend32(maskbl, res, nhi)`, `nri = shuffle8(val, masknri)`. The
    /// `masknri` shuffle moves the 16-bit row index up by one byte, so it is `row × 256`,
    /// ready for `add32`.
    #[inline(always)]
    unsafe fn step(_: &(), val: __m256i, res: __m256i) -> (__m256i, __m256i) {
        const Z: i8 = -128;
        // SAFETY: AVX2 register operations.
        unsafe {
            let mask_nhi = _mm256_setr_epi8(
                0, 1, Z, Z, 4, 5, Z, Z, 8, 9, Z, Z, 12, 13, Z, Z, 0, 1, Z, Z, 4, 5, Z, Z, 8, 9, Z,
                Z, 12, 13, Z, Z,
            );
            let mask_nri = _mm256_setr_epi8(
                Z, 2, 3, Z, Z, 6, 7, Z, Z, 10, 11, Z, Z, 14, 15, Z, Z, 2, 3, Z, Z, 6, 7, Z, Z, 10,
                11, Z, Z, 14, 15, Z,
            );
            let nhi = _mm256_shuffle_epi8(val, mask_nhi);
            let keep = _mm256_cmpeq_epi32(nhi, _mm256_setzero_si256());
            let res = _mm256_blendv_epi8(nhi, res, keep);
            (_mm256_shuffle_epi8(val, mask_nri), res)
        }
    }
    #[inline(always)]
    unsafe fn finish(res: __m256i) -> __m256i {
        res
    }
}

impl Simd for Wide32 {
    type Dec = ();
    #[inline(always)]
    unsafe fn decoder(_: u32) {}
    #[inline(always)]
    unsafe fn gather(t: *const u32, idx: __m256i) -> __m256i {
        // SAFETY: see the trait.
        unsafe { _mm256_i32gather_epi32::<4>(t as *const i32, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked(t: *const u32, idx: __m256i, mask: __m256i) -> __m256i {
        // SAFETY: see the trait.
        unsafe {
            _mm256_mask_i32gather_epi32::<4>(_mm256_setzero_si256(), t as *const i32, idx, mask)
        }
    }
    #[inline(always)]
    unsafe fn step(_: &(), val: __m256i, res: __m256i) -> (__m256i, __m256i) {
        // SAFETY: AVX2 register operations.
        unsafe {
            let leaf = _mm256_srai_epi32::<31>(val);
            (
                _mm256_andnot_si256(leaf, val),
                select_on_sign(res, val, val),
            )
        }
    }
    #[inline(always)]
    unsafe fn finish(res: __m256i) -> __m256i {
        // SAFETY: AVX2 register operations.
        unsafe { _mm256_and_si256(res, _mm256_set1_epi32(0x7fff_ffff)) }
    }
}

/// `shuffle8` mask `maskd8` that moves byte `b` of every dword to byte 0 and zeroes the
/// rest.
#[inline(always)]
pub(super) unsafe fn octet_mask(b: i8) -> __m256i {
    const Z: i8 = -128;
    let (b0, b1, b2, b3) = (b, b + 4, b + 8, b + 12);
    // SAFETY: AVX register operation.
    unsafe {
        _mm256_setr_epi8(
            b0, Z, Z, Z, b1, Z, Z, Z, b2, Z, Z, Z, b3, Z, Z, Z, b0, Z, Z, Z, b1, Z, Z, Z, b2, Z, Z,
            Z, b3, Z, Z, Z,
        )
    }
}

/// The direct-pointing index of every lane: `shuffle8(dst, maskd16) + 256` (Algorithm 1,
/// lines 3–4): the top two bytes of the dword (the first two octets), plus row 1.
#[inline(always)]
pub(super) unsafe fn dp_index(dst: __m256i) -> __m256i {
    const Z: i8 = -128;
    // SAFETY: AVX2 register operations.
    unsafe {
        let maskd16 = _mm256_setr_epi8(
            2, 3, Z, Z, 6, 7, Z, Z, 10, 11, Z, Z, 14, 15, Z, Z, 2, 3, Z, Z, 6, 7, Z, Z, 10, 11, Z,
            Z, 14, 15, Z, Z,
        );
        _mm256_add_epi32(
            _mm256_shuffle_epi8(dst, maskd16),
            _mm256_set1_epi32((DP_FIRST_ROW * ROW) as i32),
        )
    }
}

/// Lanes `0..n` set (n ≤ 8), as a 32-bit lane mask.
#[inline(always)]
unsafe fn lanes_below(n: usize) -> __m256i {
    // SAFETY: AVX2 register operations.
    unsafe {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }
}

#[inline(always)]
pub(super) unsafe fn all_zero(v: __m256i) -> bool {
    // SAFETY: AVX register operation.
    unsafe { _mm256_testz_si256(v, v) != 0 }
}

// ---------------------------------------------------------------------------------------
// The two families as eight lanes.
// ---------------------------------------------------------------------------------------

/// Masks of one 8-lane stream that holds `n ≤ 8` addresses.
#[derive(Clone, Copy)]
pub(super) struct Masks {
    /// Per load: IPv4 uses `load[0]` (dword lanes), IPv6 the four qword masks.
    load: [__m256i; 4],
    /// Active lanes in register order (the DP gather).
    pub(super) lanes: __m256i,
    /// Active addresses in output order (the store).
    store: __m256i,
}

/// An address family as eight SIMD lanes of one 32-bit word each.
pub(super) trait Family {
    type Key: Copy;
    /// The word holding the first 32 bits.
    const FIRST_WORD: usize;
    /// Octets in an address.
    const OCTETS: usize;
    /// 32-bit words in an address.
    const WORDS: usize;
    /// Whether the pipelined kernels read the direct pointing table by scalar loads
    /// (see `Ctx::dp_scalar`); lanes must then be in address order.
    const SCALAR_DP: bool;
    /// The masks for a stream of `n` addresses.
    unsafe fn masks(n: usize) -> Masks;
    /// Word `w` of the eight addresses at `p`, one per lane.
    unsafe fn word<const PARTIAL: bool>(p: *const Self::Key, w: usize, m: &Masks) -> __m256i;
    /// Stores eight results to `o`, in address order.
    unsafe fn store<const PARTIAL: bool>(o: *mut u32, res: __m256i, m: &Masks);
    /// Word `w` of the eight addresses at `p`, in address order (lane `i` holds address
    /// `i`), for the refill kernel.
    ///
    /// # Safety
    /// AVX2; `p` holds 8 addresses.
    #[inline(always)]
    unsafe fn word_in_order(p: *const Self::Key, w: usize) -> __m256i {
        // SAFETY: the contract; the V6 permute is the one `store` applies.
        unsafe {
            let v = Self::word::<false>(p, w, &Self::masks(8));
            if Self::WORDS == 1 {
                v
            } else {
                _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7))
            }
        }
    }
}

/// IPv4: the address is the word (Algorithm 1).
pub(super) struct V4;

impl Family for V4 {
    type Key = u32;
    const FIRST_WORD: usize = 0;
    const SCALAR_DP: bool = true;
    const OCTETS: usize = 4;
    const WORDS: usize = 1;
    #[inline(always)]
    unsafe fn masks(n: usize) -> Masks {
        // SAFETY: AVX2 register operations.
        let l = unsafe { lanes_below(n) };
        Masks {
            load: [l; 4],
            lanes: l,
            store: l,
        }
    }
    /// # Safety
    /// AVX2; `p` holds 8 keys, or `PARTIAL` and the lanes outside the mask are not read.
    #[inline(always)]
    unsafe fn word<const PARTIAL: bool>(p: *const u32, _w: usize, m: &Masks) -> __m256i {
        // SAFETY: see the contract.
        unsafe {
            if PARTIAL {
                _mm256_maskload_epi32(p as *const i32, m.load[0])
            } else {
                _mm256_loadu_si256(p as *const __m256i)
            }
        }
    }
    /// # Safety
    /// AVX2; `o` holds 8 slots, or `PARTIAL` and the lanes outside the mask are not written.
    #[inline(always)]
    unsafe fn store<const PARTIAL: bool>(o: *mut u32, res: __m256i, m: &Masks) {
        // SAFETY: see the contract.
        unsafe {
            if PARTIAL {
                _mm256_maskstore_epi32(o as *mut i32, m.store, res)
            } else {
                _mm256_storeu_si256(o as *mut __m256i, res)
            }
        }
    }
}

/// IPv6: four loads and three unpacks pick one 32-bit word of eight addresses
/// (Algorithm 2); the lanes hold addresses 0, 2, 4, 6, 1, 3, 5, 7.
pub(super) struct V6;

impl Family for V6 {
    type Key = u128;
    /// Host-order `u128`: the first 32 bits are the high dword.
    const FIRST_WORD: usize = 3;
    const SCALAR_DP: bool = false;
    const OCTETS: usize = 16;
    const WORDS: usize = 4;
    #[inline(always)]
    unsafe fn masks(n: usize) -> Masks {
        let q = |i: usize| if i < n { -1i64 } else { 0 };
        // SAFETY: AVX2 register operations.
        unsafe {
            // Register `r` holds addresses 2r and 2r + 1. (Built element by element:
            // `[_; 4].map` is a call the kernel need not make.)
            let load = |r: usize| {
                let (a, b) = (q(2 * r), q(2 * r + 1));
                _mm256_setr_epi64x(a, a, b, b)
            };
            Masks {
                load: [load(0), load(1), load(2), load(3)],
                lanes: _mm256_cmpgt_epi32(
                    _mm256_set1_epi32(n as i32),
                    _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7),
                ),
                store: lanes_below(n),
            }
        }
    }
    /// Lines 1–8 (and the refill of lines 28–34): `unpackhi` pairs for dwords 3 and 2,
    /// `unpacklo` pairs for 1 and 0, because the addresses are host-order `u128`s. The
    /// paper shifts the four registers right by four bytes per refill; re-reading them from
    /// the input (in L1) needs no live registers between refills.
    ///
    /// # Safety
    /// AVX2; `p` holds 8 addresses, or `PARTIAL` and those outside the masks are not read.
    #[inline(always)]
    unsafe fn word<const PARTIAL: bool>(p: *const u128, w: usize, m: &Masks) -> __m256i {
        // SAFETY: see the contract.
        unsafe {
            let ld = |r: usize| {
                let q = p.add(2 * r) as *const __m256i;
                if PARTIAL {
                    _mm256_maskload_epi64(q as *const i64, m.load[r])
                } else {
                    _mm256_loadu_si256(q)
                }
            };
            let (d1, d2, d3, d4) = (ld(0), ld(1), ld(2), ld(3));
            // d1 = [a0.w0 a0.w1 a0.w2 a0.w3 | a1.w0 …], d2 = a2, a3; d3 = a4, a5; d4 = a6, a7.
            if w >= 2 {
                let u1 = _mm256_unpackhi_epi32(d1, d3); // a0.w2 a4.w2 a0.w3 a4.w3 | a1 a5
                let u2 = _mm256_unpackhi_epi32(d2, d4); // a2.w2 a6.w2 a2.w3 a6.w3 | a3 a7
                if w == 3 {
                    _mm256_unpackhi_epi32(u1, u2)
                } else {
                    _mm256_unpacklo_epi32(u1, u2)
                }
            } else {
                let l1 = _mm256_unpacklo_epi32(d1, d3);
                let l2 = _mm256_unpacklo_epi32(d2, d4);
                if w == 1 {
                    _mm256_unpackhi_epi32(l1, l2)
                } else {
                    _mm256_unpacklo_epi32(l1, l2)
                }
            }
        }
    }
    /// Line 38: `permute32` back to address order, then the store.
    ///
    /// # Safety
    /// As for [`V4::store`].
    #[inline(always)]
    unsafe fn store<const PARTIAL: bool>(o: *mut u32, res: __m256i, m: &Masks) {
        // SAFETY: see the contract.
        unsafe {
            let res = _mm256_permutevar8x32_epi32(res, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
            V4::store::<PARTIAL>(o, res, m)
        }
    }
}

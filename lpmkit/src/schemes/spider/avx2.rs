//! AVX2 kernels for Spider: Algorithm 1 (IPv4) and Algorithm 2 (IPv6) with loop fusion.
//!
//! One kernel serves both families and every degree of parallelism; `const` switches
//! shape it:
//!
//! * `FUSED`: two 8-lane streams per block (more than 8 ways), the paper's loop fusion;
//! * `PARTIAL`: lanes masked off (any `ways` but 8 and 16): masked loads and stores, and a
//!   masked direct-pointing gather that leaves idle lanes at 0, which is End-of-Lookup;
//! * `K`: blocks in flight. `K = 1` is the paper's loop exactly: the direct-pointing gather,
//!   then one gather per octet until every lane is at End-of-Lookup, then the next block.
//!   With `K > 1` the kernel keeps `K` blocks at different depths and visits them in turn;
//!   a visit steps its block until the block reaches a level where it *yields*, and the
//!   other `K − 1` blocks are visited before it is stepped again. A finished block is
//!   stored and its slot takes the next block at once. Two modes (see
//!   [`LookupParams::lockstep_blocks`](super::LookupParams::lockstep_blocks)):
//!   * *pipelined* ([`IN_FLIGHT`](super::IN_FLIGHT) blocks), when some level is too large
//!     to stay cached: a block yields before such a level after prefetching the element
//!     every lane of it reads there, which arrives while the other blocks are visited
//!     ("asynchronous memory access chaining", Kocberber et al., VLDB 2015, applied to
//!     Spider's lockstep blocks: the gathers then mostly hit L1/L2 instead of waiting for
//!     memory one level at a time);
//!   * *interleaved* ([`INTERLEAVE`](super::INTERLEAVE) blocks), when every level stays
//!     cached: a block yields at every level and nothing is prefetched, so the gathers of
//!     two blocks are in flight together (the paper's loop fusion, carried across blocks)
//!     instead of each level waiting for the last.
//!
//! The entry points hand the tail (fewer than `ways` addresses) to the scalar twin.

use core::arch::x86_64::*;

use super::{
    scalar, Codec, Compact16, Elements, LookupParams, Paper32, Wide32, DP_FIRST_ROW, INTERLEAVE,
    IN_FLIGHT, ROW,
};
use crate::simd::Avx2;

/// The element operations of one layout, as AVX2 code on eight lanes.
///
/// All functions are `#[inline(always)]` and only called from `#[target_feature(enable =
/// "avx2")]` kernels, so they compile to AVX2 instructions there.
pub(super) trait Simd: Codec {
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
pub(super) struct SplitDec {
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
                to_row: _mm256_set1_epi32(super::FIRST_STRIDE_ROW as i32 - split as i32),
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
unsafe fn dp_index(dst: __m256i) -> __m256i {
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
unsafe fn all_zero(v: __m256i) -> bool {
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
    lanes: __m256i,
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
            Masks {
                load: [0, 1, 2, 3].map(|r| {
                    let (a, b) = (q(2 * r), q(2 * r + 1));
                    _mm256_setr_epi64x(a, a, b, b)
                }),
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

// ---------------------------------------------------------------------------------------
// The kernel.
// ---------------------------------------------------------------------------------------

/// A block in flight: its lanes' next-row bases, results and current words, and the octet
/// it reads next.
#[derive(Clone, Copy)]
struct Slot {
    block: usize,
    octet: usize,
    base: [__m256i; 2],
    res: [__m256i; 2],
    dst: [__m256i; 2],
}

/// What every visit needs.
struct Ctx<C: Simd, F: Family> {
    tp: *const C::E,
    dec: C::Dec,
    keys: *const F::Key,
    out: *mut u32,
    ways: usize,
    blocks: usize,
    masks: [Masks; 2],
    octets: [__m256i; 4],
    /// Bit `o` set: a visit returns when its block is about to read octet `o` (`K > 1`).
    yield_octets: u32,
    /// Bit `o` set: the rows read at octet `o` are too many to stay cached, so a block
    /// yielding there prefetches them first.
    cold_octets: u32,
}

impl<C: Simd, F: Family> Ctx<C, F> {
    /// Stores a finished block.
    ///
    /// # Safety
    /// AVX2; `block < self.blocks`.
    #[inline(always)]
    unsafe fn store<const FUSED: bool, const PARTIAL: bool>(
        &self,
        block: usize,
        res: [__m256i; 2],
    ) {
        // SAFETY: block `block` has `ways` output slots: 8 per stream, or the masked lanes.
        unsafe {
            let o = self.out.add(block * self.ways);
            F::store::<PARTIAL>(o, C::finish(res[0]), &self.masks[0]);
            if FUSED {
                F::store::<PARTIAL>(o.add(8), C::finish(res[1]), &self.masks[1]);
            }
        }
    }

    /// The direct-pointing elements of the block at `k` (8 lanes, or 16 if `FUSED`) by
    /// scalar loads instead of the `vpgatherdd` of Algorithm 1, line 5: the 128 KiB
    /// (`Compact16`) direct pointing table stays in L2, and on Zen 4 a gather is
    /// microcoded at about one load per cycle while scalar loads issue three per cycle
    /// (measured +4–5% on IPv4; IPv6 lanes are in unpack order, and the permute it would
    /// need ate the gain, so IPv6 keeps the gather).
    ///
    /// # Safety
    /// AVX2; `k` holds the block's keys (no masked lanes).
    #[inline(always)]
    unsafe fn dp_scalar<const FUSED: bool>(&self, k: *const F::Key) -> (__m256i, __m256i) {
        let stride = core::mem::size_of::<F::Key>() / 4;
        let kw = k as *const u32;
        let mut buf = [0u32; 16];
        let n = if FUSED { 16 } else { 8 };
        // SAFETY: the block holds `n` keys of `stride` words; the index is inside rows
        // 1–256 (16 bits plus row 1).
        unsafe {
            for (i, b) in buf.iter_mut().enumerate().take(n) {
                let w = *kw.add(i * stride + F::FIRST_WORD);
                let ix = (w >> 16) as usize + DP_FIRST_ROW * ROW;
                *b = if core::mem::size_of::<C::E>() == 2 {
                    *(self.tp as *const u16).add(ix) as u32
                } else {
                    *(self.tp as *const u32).add(ix)
                };
            }
            (
                _mm256_loadu_si256(buf.as_ptr() as *const __m256i),
                _mm256_loadu_si256(buf.as_ptr().add(8) as *const __m256i),
            )
        }
    }

    /// Prefetches the element each lane of `s` reads next.
    ///
    /// # Safety
    /// AVX2.
    #[inline(always)]
    unsafe fn prefetch<const FUSED: bool>(&self, s: &Slot) {
        let m = self.octets[3 - s.octet % 4];
        // SAFETY: AVX2 register operations; a prefetch is a hint and never faults (the
        // index is in the table anyway).
        unsafe {
            // The indices leave the register by `vmovq`/`vpextrq` (two lanes each) rather
            // than a store and eight reloads: fewer load-port µops, which the gathers and
            // prefetches compete for (measured +3–6% on the bart tables).
            let pf = |v: __m256i| {
                for x in [_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v)] {
                    let a = _mm_cvtsi128_si64(x) as u64;
                    let b = _mm_extract_epi64::<1>(x) as u64;
                    for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                        let p = self.tp.wrapping_add(i as usize) as *const i8;
                        // T1 (into L2, not L1): the data is needed a few hundred cycles
                        // later, and L2 holds far more outstanding misses than L1
                        // (measured: +25% on a 900K-route IPv4 table).
                        _mm_prefetch::<_MM_HINT_T1>(p);
                    }
                }
            };
            pf(_mm256_add_epi32(
                s.base[0],
                _mm256_shuffle_epi8(s.dst[0], m),
            ));
            if FUSED {
                pf(_mm256_add_epi32(
                    s.base[1],
                    _mm256_shuffle_epi8(s.dst[1], m),
                ));
            }
        }
    }

    /// Whether a visit returns before its block reads `octet` (with `K = 1`, the paper's
    /// loop, it never does).
    #[inline(always)]
    fn yields<const K: usize>(&self, octet: usize) -> bool {
        K > 1 && self.yield_octets & (1 << octet) != 0
    }

    /// One visit of slot `s`: if `fresh`, takes the next block (the direct-pointing
    /// gathers, Algorithm 1 lines 1–8), else steps its block by one octet (lines 11–17);
    /// continues while the next level is cached, and returns once it is cold, after
    /// prefetching it. Finished blocks are stored and replaced. Returns false when no
    /// blocks are left.
    ///
    /// # Safety
    /// AVX2; unless `fresh`, `s` holds a block from an earlier visit.
    #[inline(always)]
    unsafe fn visit<const FUSED: bool, const PARTIAL: bool, const K: usize>(
        &self,
        next: &mut usize,
        s: &mut Slot,
        mut fresh: bool,
    ) -> bool {
        // SAFETY: AVX2 (the contract). Block `block < blocks` holds `ways` keys (8 per
        // stream unless masked); direct-pointing indices are inside rows 1–256; row bases
        // come from elements, which name allocated rows (or EoL).
        unsafe {
            let zero = _mm256_setzero_si256();
            let m = &self.masks;
            loop {
                if fresh {
                    if *next == self.blocks {
                        return false;
                    }
                    let block = *next;
                    *next += 1;
                    let k = self.keys.add(block * self.ways);
                    let da = F::word::<PARTIAL>(k, F::FIRST_WORD, &m[0]);
                    let db = if FUSED {
                        F::word::<PARTIAL>(k.add(8), F::FIRST_WORD, &m[1])
                    } else {
                        zero
                    };
                    let (va, vb) = if F::SCALAR_DP && !PARTIAL && K > 1 {
                        self.dp_scalar::<FUSED>(k)
                    } else {
                        let g = |d: __m256i, m: &Masks| {
                            if PARTIAL {
                                C::gather_masked(self.tp, dp_index(d), m.lanes)
                            } else {
                                C::gather(self.tp, dp_index(d))
                            }
                        };
                        (g(da, &m[0]), if FUSED { g(db, &m[1]) } else { zero })
                    };
                    let (ba, ra) = C::step(&self.dec, va, zero);
                    let (mut bb, mut rb) = (zero, zero);
                    if FUSED {
                        (bb, rb) = C::step(&self.dec, vb, zero);
                    }
                    if all_zero(_mm256_or_si256(ba, bb)) {
                        self.store::<FUSED, PARTIAL>(block, [ra, rb]);
                        continue;
                    }
                    *s = Slot {
                        block,
                        octet: 2,
                        base: [ba, bb],
                        res: [ra, rb],
                        dst: [da, db],
                    };
                    fresh = false;
                } else {
                    let o = self.octets[3 - s.octet % 4];
                    let ia = _mm256_add_epi32(s.base[0], _mm256_shuffle_epi8(s.dst[0], o));
                    (s.base[0], s.res[0]) = C::step(&self.dec, C::gather(self.tp, ia), s.res[0]);
                    if FUSED {
                        let ib = _mm256_add_epi32(s.base[1], _mm256_shuffle_epi8(s.dst[1], o));
                        (s.base[1], s.res[1]) =
                            C::step(&self.dec, C::gather(self.tp, ib), s.res[1]);
                    }
                    s.octet += 1;
                    if all_zero(_mm256_or_si256(s.base[0], s.base[1])) {
                        self.store::<FUSED, PARTIAL>(s.block, s.res);
                        fresh = true;
                        continue;
                    }
                    debug_assert!(s.octet < F::OCTETS, "a row below the last octet");
                    if s.octet % 4 == 0 {
                        // Refill with the next 32 bits (Algorithm 2, lines 25–34).
                        let k = self.keys.add(s.block * self.ways);
                        let w = F::FIRST_WORD - s.octet / 4;
                        s.dst[0] = F::word::<PARTIAL>(k, w, &m[0]);
                        if FUSED {
                            s.dst[1] = F::word::<PARTIAL>(k.add(8), w, &m[1]);
                        }
                    }
                }
                if self.yields::<K>(s.octet) {
                    if self.cold_octets & (1 << s.octet) != 0 {
                        self.prefetch::<FUSED>(s);
                    }
                    return true;
                }
            }
        }
    }
}

/// # Safety
/// AVX2; `keys.len()` is a multiple of `ways` and at most `out.len()`; `ways` is 16 if
/// `FUSED && !PARTIAL`, 8 if `!FUSED && !PARTIAL`, 9…15 if `FUSED && PARTIAL` and 1…7
/// otherwise; `t` and `split` come from one build.
#[target_feature(enable = "avx2")]
unsafe fn kernel<C: Simd, F: Family, const FUSED: bool, const PARTIAL: bool, const K: usize>(
    t: &Elements<C::E>,
    split: u32,
    yield_octets: u32,
    cold_octets: u32,
    ways: usize,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(keys.len() % ways == 0 && out.len() >= keys.len());
    debug_assert!(ways == if FUSED { 16 } else { 8 } || PARTIAL);
    debug_assert!(ways > 8 || !FUSED);
    // SAFETY: AVX2 is enabled (this function's target feature); the contract gives `ctx`'s
    // invariants: `blocks` blocks of `ways` keys and output slots.
    unsafe {
        let (na, nb) = if PARTIAL {
            (ways.min(8), ways.saturating_sub(8))
        } else {
            (8, 8)
        };
        let ctx = Ctx::<C, F> {
            tp: t.as_ptr(),
            dec: C::decoder(split),
            keys: keys.as_ptr(),
            out: out.as_mut_ptr(),
            ways,
            blocks: keys.len() / ways,
            masks: [F::masks(na), F::masks(nb)],
            octets: [octet_mask(0), octet_mask(1), octet_mask(2), octet_mask(3)],
            yield_octets,
            cold_octets,
        };
        let zero = _mm256_setzero_si256();
        let mut slots = [Slot {
            block: 0,
            octet: 0,
            base: [zero; 2],
            res: [zero; 2],
            dst: [zero; 2],
        }; K];
        let mut live = [false; K];
        let mut n_live = 0;
        let mut next = 0;
        for (s, l) in slots.iter_mut().zip(&mut live) {
            *l = ctx.visit::<FUSED, PARTIAL, K>(&mut next, s, true);
            n_live += *l as usize;
        }
        while n_live > 0 {
            for (s, l) in slots.iter_mut().zip(&mut live) {
                if *l && !ctx.visit::<FUSED, PARTIAL, K>(&mut next, s, false) {
                    *l = false;
                    n_live -= 1;
                }
            }
        }
    }
}

/// Runs the kernel of one shape with `blocks` blocks in flight: 1 (the paper's loop),
/// [`INTERLEAVE`] (yield at every level, no prefetching) or [`IN_FLIGHT`] (yield and
/// prefetch before the levels of `cold_octets`).
///
/// # Safety
/// As for [`kernel`]; `blocks` is one of the three.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn shape<C: Simd, F: Family, const FUSED: bool, const PARTIAL: bool>(
    t: &Elements<C::E>,
    split: u32,
    blocks: usize,
    cold_octets: u32,
    ways: usize,
    keys: &[F::Key],
    out: &mut [u32],
) {
    // SAFETY: the contract.
    unsafe {
        match blocks {
            IN_FLIGHT => kernel::<C, F, FUSED, PARTIAL, IN_FLIGHT>(
                t,
                split,
                cold_octets,
                cold_octets,
                ways,
                keys,
                out,
            ),
            INTERLEAVE => {
                kernel::<C, F, FUSED, PARTIAL, INTERLEAVE>(t, split, !0, 0, ways, keys, out)
            }
            _ => kernel::<C, F, FUSED, PARTIAL, 1>(t, split, 0, 0, ways, keys, out),
        }
    }
}

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
                super::refill::lookup::<C, F, true>(t, split, p, keys, out)
            } else {
                super::refill::lookup::<C, F, false>(t, split, p, keys, out)
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

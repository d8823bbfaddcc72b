//! [`Lanes`] on AVX2: eight lanes in a `__m256i`, lane predicates in a vector ([`Mask`]).
//!
//! Every method's contract is AVX2 (the trait's), so each `unsafe` block below rests on it
//! and, for memory operations, on the method's own contract.

use core::arch::x86_64::*;

use super::{LaneMask, Lanes};
use crate::simd::LEFT_PACK;

/// Lane predicates of a `__m256i`: each lane all ones (set) or all zeros (clear).
#[derive(Clone, Copy)]
pub(crate) struct Mask(__m256i);

impl LaneMask for Mask {
    #[inline(always)]
    unsafe fn first(n: usize) -> Mask {
        // SAFETY: AVX2 (the trait's contract).
        unsafe {
            Mask(_mm256_cmpgt_epi32(
                _mm256_set1_epi32(n as i32),
                __m256i::iota(),
            ))
        }
    }
    #[inline(always)]
    unsafe fn all() -> Mask {
        // SAFETY: AVX2.
        unsafe { Mask(_mm256_set1_epi32(-1)) }
    }
    #[inline(always)]
    unsafe fn bits(self) -> u32 {
        // SAFETY: AVX2.
        unsafe { _mm256_movemask_ps(_mm256_castsi256_ps(self.0)) as u32 }
    }
    #[inline(always)]
    unsafe fn any(self) -> bool {
        // SAFETY: AVX2.
        unsafe { _mm256_testz_si256(self.0, self.0) == 0 }
    }
    #[inline(always)]
    unsafe fn and(self, other: Mask) -> Mask {
        // SAFETY: AVX2.
        unsafe { Mask(_mm256_and_si256(self.0, other.0)) }
    }
}

/// The `vpermd` indices that left-pack the lanes of a movemask (from [`LEFT_PACK`]).
#[inline(always)]
unsafe fn left_pack(bits: u32) -> __m256i {
    // SAFETY: AVX2; `bits` < 256 indexes the table.
    unsafe { _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(LEFT_PACK[bits as usize & 0xff] as i64)) }
}

impl Lanes for __m256i {
    const LANES: usize = 8;
    /// The three unpacks leave the keys in the order 0, 2, 4, 6, 1, 3, 5, 7.
    const U128_IN_ORDER: bool = false;
    const MASK_REGISTERS: bool = false;
    type Mask = Mask;
    type Packer = __m256i;

    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_set1_epi32(x as i32) }
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_setzero_si256() }
    }
    #[inline(always)]
    unsafe fn iota() -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7) }
    }
    #[inline(always)]
    unsafe fn from_fn(mut f: impl FnMut(usize) -> u32) -> Self {
        let mut l = [0i32; 8];
        for (i, x) in l.iter_mut().enumerate() {
            *x = f(i) as i32;
        }
        // SAFETY: AVX2.
        unsafe { _mm256_setr_epi32(l[0], l[1], l[2], l[3], l[4], l[5], l[6], l[7]) }
    }

    #[inline(always)]
    unsafe fn load(p: *const u32) -> Self {
        // SAFETY: AVX2; the caller's 8 readable lanes.
        unsafe { _mm256_loadu_si256(p as *const __m256i) }
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const u32, m: Mask) -> Self {
        // SAFETY: AVX2; `vpmaskmovd` reads only the lanes of `m`.
        unsafe { _mm256_maskload_epi32(p as *const i32, m.0) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u32) {
        // SAFETY: AVX2; the caller's 8 writable lanes.
        unsafe { _mm256_storeu_si256(p as *mut __m256i, self) }
    }
    #[inline(always)]
    unsafe fn store_masked(self, p: *mut u32, m: Mask) {
        // SAFETY: AVX2; `vpmaskmovd` writes only the lanes of `m`.
        unsafe { _mm256_maskstore_epi32(p as *mut i32, m.0, self) }
    }
    #[inline(always)]
    unsafe fn gather<const SCALE: i32>(base: *const u8, idx: Self) -> Self {
        // SAFETY: AVX2; the caller's readable lanes.
        unsafe { _mm256_i32gather_epi32::<SCALE>(base as *const i32, idx) }
    }
    #[inline(always)]
    unsafe fn gather_masked<const SCALE: i32>(self, base: *const u8, idx: Self, m: Mask) -> Self {
        // SAFETY: AVX2; the caller's readable lanes of `m`, the others not read.
        unsafe { _mm256_mask_i32gather_epi32::<SCALE>(self, base as *const i32, idx, m.0) }
    }
    #[inline(always)]
    unsafe fn scatter(self, base: *mut u32, idx: Self, m: Mask) {
        // AVX2 has no scatter: the lanes leave the registers through the stack.
        let (mut v, mut i) = ([0u32; 8], [0u32; 8]);
        // SAFETY: AVX2; the arrays hold 8 lanes; the caller's writable `base[idx[l]]` for
        // the lanes of `m`.
        unsafe {
            self.store(v.as_mut_ptr());
            idx.store(i.as_mut_ptr());
            let bits = m.bits();
            for l in 0..8 {
                if bits >> l & 1 != 0 {
                    *base.add(i[l] as usize) = v[l];
                }
            }
        }
    }
    #[inline(always)]
    unsafe fn prefetch_lanes<T>(self, base: *const T, n: usize) {
        // SAFETY: AVX2 register operations; a prefetch is a hint and never faults. The
        // indices leave the register by `vmovq`/`vpextrq`, two lanes each (a store and
        // reloads would wait for the store to forward).
        unsafe {
            let pf = |x: __m128i| {
                let a = _mm_cvtsi128_si64(x) as u64;
                let b = _mm_extract_epi64::<1>(x) as u64;
                for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                    _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(i as usize) as *const i8);
                }
            };
            pf(_mm256_castsi256_si128(self));
            if n > 4 {
                pf(_mm256_extracti128_si256::<1>(self));
            }
        }
    }

    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_add_epi32(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_sub_epi32(self, b) }
    }
    #[inline(always)]
    unsafe fn mul_lo(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_mullo_epi32(self, b) }
    }
    #[inline(always)]
    unsafe fn mul_hi(self, b: Self) -> Self {
        // SAFETY: AVX2. `vpmuludq` multiplies the even lanes into 64 bits; the odd lanes
        // are shifted down to be multiplied, and the two high halves are blended.
        unsafe {
            let even = _mm256_srli_epi64::<32>(_mm256_mul_epu32(self, b));
            let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(self), _mm256_srli_epi64::<32>(b));
            _mm256_blend_epi32::<0b1010_1010>(even, odd)
        }
    }
    #[inline(always)]
    unsafe fn and(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_and_si256(self, b) }
    }
    #[inline(always)]
    unsafe fn or(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_or_si256(self, b) }
    }
    #[inline(always)]
    unsafe fn xor(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_xor_si256(self, b) }
    }
    #[inline(always)]
    unsafe fn and_not(self, b: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_andnot_si256(b, self) }
    }

    #[inline(always)]
    unsafe fn shr<const N: i32>(self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_srli_epi32::<N>(self) }
    }
    #[inline(always)]
    unsafe fn shl<const N: i32>(self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_slli_epi32::<N>(self) }
    }
    #[inline(always)]
    unsafe fn shr_by(self, n: u32) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_srl_epi32(self, _mm_cvtsi32_si128(n as i32)) }
    }
    #[inline(always)]
    unsafe fn shl_by(self, n: u32) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_sll_epi32(self, _mm_cvtsi32_si128(n as i32)) }
    }
    #[inline(always)]
    unsafe fn shr_var(self, n: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_srlv_epi32(self, n) }
    }
    #[inline(always)]
    unsafe fn shl_var(self, n: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_sllv_epi32(self, n) }
    }
    #[inline(always)]
    unsafe fn rotl<const R: i32, const L: i32>(self) -> Self {
        debug_assert!(R + L == 32);
        // SAFETY: AVX2.
        unsafe { _mm256_or_si256(_mm256_slli_epi32::<R>(self), _mm256_srli_epi32::<L>(self)) }
    }

    #[inline(always)]
    unsafe fn shuffle_bytes(self, ctl: Self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_shuffle_epi8(self, ctl) }
    }

    #[inline(always)]
    unsafe fn gt_i32(self, b: Self) -> Mask {
        // SAFETY: AVX2.
        unsafe { Mask(_mm256_cmpgt_epi32(self, b)) }
    }
    #[inline(always)]
    unsafe fn ge_u32(self, b: Self) -> Mask {
        // SAFETY: AVX2. `max(a, b) == a` is `a >= b`.
        unsafe { Mask(_mm256_cmpeq_epi32(_mm256_max_epu32(self, b), self)) }
    }
    #[inline(always)]
    unsafe fn test(self, b: Self) -> Mask {
        // SAFETY: AVX2.
        unsafe {
            let zero = _mm256_cmpeq_epi32(_mm256_and_si256(self, b), _mm256_setzero_si256());
            Mask(_mm256_xor_si256(zero, _mm256_set1_epi32(-1)))
        }
    }
    #[inline(always)]
    unsafe fn any_nonzero(self) -> bool {
        // SAFETY: AVX2.
        unsafe { _mm256_testz_si256(self, self) == 0 }
    }
    #[inline(always)]
    unsafe fn sign(self) -> Mask {
        // SAFETY: AVX2.
        unsafe { Mask(_mm256_srai_epi32::<31>(self)) }
    }

    #[inline(always)]
    unsafe fn select(m: Mask, t: Self, f: Self) -> Self {
        // SAFETY: AVX2. Every byte of a mask lane is its top bit.
        unsafe { _mm256_blendv_epi8(f, t, m.0) }
    }
    #[inline(always)]
    unsafe fn keep(self, m: Mask) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_and_si256(m.0, self) }
    }
    #[inline(always)]
    unsafe fn clear(self, m: Mask) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_andnot_si256(m.0, self) }
    }
    #[inline(always)]
    unsafe fn packer(m: Mask) -> __m256i {
        // SAFETY: AVX2.
        unsafe { left_pack(m.bits()) }
    }
    #[inline(always)]
    unsafe fn pack(self, p: __m256i) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_permutevar8x32_epi32(self, p) }
    }

    /// Algorithm 2 of the Spider paper: four loads of two keys each, and three unpacks.
    #[inline(always)]
    unsafe fn u128_dword(p: *const u128, w: usize) -> Self {
        // SAFETY: AVX2; the caller's 8 readable keys (four 32-byte loads).
        unsafe { unpack_dword(|r| _mm256_loadu_si256(p.add(2 * r) as *const __m256i), w) }
    }
    #[inline(always)]
    unsafe fn u128_dword_first(p: *const u128, w: usize, n: usize) -> Self {
        let q = |i: usize| if i < n { -1i64 } else { 0 };
        // SAFETY: AVX2; each masked load reads only the qwords of the keys below `n`
        // (`wrapping_add`: past the last key the pointer is not dereferenced).
        unsafe {
            let ld = |r: usize| {
                let (a, b) = (q(2 * r), q(2 * r + 1));
                let m = _mm256_setr_epi64x(a, a, b, b);
                _mm256_maskload_epi64(p.wrapping_add(2 * r) as *const i64, m)
            };
            unpack_dword(ld, w)
        }
    }
    #[inline(always)]
    unsafe fn in_key_order(self) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_permutevar8x32_epi32(self, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)) }
    }
    #[inline(always)]
    unsafe fn u64_halves(p: *const u64) -> (Self, Self) {
        // SAFETY: AVX2; the caller's 8 readable keys (two 32-byte loads).
        unsafe {
            let split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
            // [lo0..lo3, hi0..hi3] and [lo4..lo7, hi4..hi7] → lo0..lo7, hi0..hi7.
            let a = _mm256_permutevar8x32_epi32(Self::load(p as *const u32), split);
            let b = _mm256_permutevar8x32_epi32(Self::load(p.add(4) as *const u32), split);
            (
                _mm256_permute2x128_si256::<0x20>(a, b),
                _mm256_permute2x128_si256::<0x31>(a, b),
            )
        }
    }
    #[inline(always)]
    unsafe fn lt_i64_bits(self, b: Self) -> u32 {
        // SAFETY: AVX2.
        unsafe { _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(b, self))) as u32 }
    }
    #[inline(always)]
    unsafe fn splat_u64(x: u64) -> Self {
        // SAFETY: AVX2.
        unsafe { _mm256_set1_epi64x(x as i64) }
    }
}

/// Dword `w` of eight `u128`s, two per register of `ld(0..4)`, by three unpacks: lanes in
/// the order 0, 2, 4, 6, 1, 3, 5, 7 (the keys are host-order `u128`s: dwords 3 and 2 are
/// `unpackhi` pairs, 1 and 0 `unpacklo`).
#[inline(always)]
unsafe fn unpack_dword(ld: impl Fn(usize) -> __m256i, w: usize) -> __m256i {
    let (d1, d2, d3, d4) = (ld(0), ld(1), ld(2), ld(3));
    // SAFETY: AVX2 register operations.
    unsafe {
        // d1 = [a0.w0 a0.w1 a0.w2 a0.w3 | a1.w0 …], d2 = a2, a3; d3 = a4, a5; d4 = a6, a7.
        let (u1, u2) = if w >= 2 {
            (_mm256_unpackhi_epi32(d1, d3), _mm256_unpackhi_epi32(d2, d4))
        } else {
            (_mm256_unpacklo_epi32(d1, d3), _mm256_unpacklo_epi32(d2, d4))
        };
        if w % 2 == 1 {
            _mm256_unpackhi_epi32(u1, u2)
        } else {
            _mm256_unpacklo_epi32(u1, u2)
        }
    }
}

//! [`Lanes`] on AVX-512: sixteen lanes in a `__m512i`, lane predicates in a mask register
//! (`__mmask16`): compares write masks, and masked moves, loads, stores and gathers use
//! them directly where AVX2 blends.
//!
//! Every method's contract is AVX-512 F, BW, DQ and VL (the trait's), so each `unsafe`
//! block below rests on it and, for memory operations, on the method's own contract.

use core::arch::x86_64::*;

use super::{LaneMask, Lanes};

impl LaneMask for __mmask16 {
    #[inline(always)]
    unsafe fn first(n: usize) -> Self {
        debug_assert!(n <= 16);
        ((1u32 << n) - 1) as __mmask16
    }
    #[inline(always)]
    unsafe fn all() -> Self {
        !0
    }
    #[inline(always)]
    unsafe fn bits(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    unsafe fn any(self) -> bool {
        self != 0
    }
    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        self & other
    }
}

/// The `vpermt2d` indices that pick dword `w` of each of the eight `u128`s of two
/// registers, into lanes 0–7 (and again 8–15).
#[inline(always)]
unsafe fn pick_dword(w: usize) -> __m512i {
    // SAFETY: AVX-512F register operations.
    unsafe {
        _mm512_add_epi32(
            _mm512_slli_epi32::<2>(__m512i::iota()),
            _mm512_set1_epi32(w as i32),
        )
    }
}

/// Dword `w` of sixteen `u128`s, four per register of `ld(0..4)`: two `vpermt2d` pick it
/// from two registers each, and one `vshufi64x2` joins their halves, in key order.
#[inline(always)]
unsafe fn permute_dword(ld: impl Fn(usize) -> __m512i, w: usize) -> __m512i {
    // SAFETY: AVX-512F register operations.
    unsafe {
        let idx = pick_dword(w);
        let lo = _mm512_permutex2var_epi32(ld(0), idx, ld(1));
        let hi = _mm512_permutex2var_epi32(ld(2), idx, ld(3));
        // Lanes 0–7 of `lo`, then lanes 0–7 of `hi`.
        _mm512_shuffle_i64x2::<0b01_00_01_00>(lo, hi)
    }
}

impl Lanes for __m512i {
    const LANES: usize = 16;
    const U128_IN_ORDER: bool = true;
    const MASK_REGISTERS: bool = true;
    type Mask = __mmask16;
    type Packer = __mmask16;

    #[inline(always)]
    unsafe fn splat(x: u32) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_set1_epi32(x as i32) }
    }
    #[inline(always)]
    unsafe fn zero() -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_setzero_si512() }
    }
    #[inline(always)]
    unsafe fn iota() -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) }
    }
    #[inline(always)]
    unsafe fn from_fn(mut f: impl FnMut(usize) -> u32) -> Self {
        let mut l = [0i32; 16];
        for (i, x) in l.iter_mut().enumerate() {
            *x = f(i) as i32;
        }
        // SAFETY: AVX-512F. Four independent 128-bit rows of four lanes, joined, so that
        // no insert waits for the twelve before it.
        unsafe {
            let q = |j: usize| _mm_setr_epi32(l[j], l[j + 1], l[j + 2], l[j + 3]);
            let lo = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q(0)), q(4));
            let hi = _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(q(8)), q(12));
            _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi)
        }
    }

    #[inline(always)]
    unsafe fn load(p: *const u32) -> Self {
        // SAFETY: AVX-512F; the caller's 16 readable lanes.
        unsafe { _mm512_loadu_si512(p as *const __m512i) }
    }
    #[inline(always)]
    unsafe fn load_masked(p: *const u32, m: __mmask16) -> Self {
        // SAFETY: AVX-512F; a masked load reads only the lanes of `m`.
        unsafe { _mm512_maskz_loadu_epi32(m, p as *const i32) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut u32) {
        // SAFETY: AVX-512F; the caller's 16 writable lanes.
        unsafe { _mm512_storeu_si512(p as *mut __m512i, self) }
    }
    #[inline(always)]
    unsafe fn store_masked(self, p: *mut u32, m: __mmask16) {
        // SAFETY: AVX-512F; a masked store writes only the lanes of `m`.
        unsafe { _mm512_mask_storeu_epi32(p as *mut i32, m, self) }
    }
    #[inline(always)]
    unsafe fn gather<const SCALE: i32>(base: *const u8, idx: Self) -> Self {
        // SAFETY: AVX-512F; the caller's readable lanes.
        unsafe { _mm512_i32gather_epi32::<SCALE>(idx, base as *const i32) }
    }
    #[inline(always)]
    unsafe fn gather_masked<const SCALE: i32>(
        self,
        base: *const u8,
        idx: Self,
        m: __mmask16,
    ) -> Self {
        // SAFETY: AVX-512F; the caller's readable lanes of `m`, the others not read.
        unsafe { _mm512_mask_i32gather_epi32::<SCALE>(self, m, idx, base as *const i32) }
    }
    #[inline(always)]
    unsafe fn scatter(self, base: *mut u32, idx: Self, m: __mmask16) {
        // SAFETY: AVX-512F; the caller's writable `base[idx[l]]` for the lanes of `m`.
        unsafe { _mm512_mask_i32scatter_epi32::<4>(base as *mut i32, m, idx, self) }
    }
    #[inline(always)]
    unsafe fn prefetch_lanes<T>(self, base: *const T, n: usize) {
        // SAFETY: AVX-512F register operations; a prefetch is a hint and never faults.
        // The indices leave the register by `vextracti32x4` and `vmovq`/`vpextrq`, two
        // lanes each; the low eight always (a branch per group of four lanes would
        // mispredict where the count is data-dependent), the high eight when needed.
        unsafe {
            let pf = |x: __m128i| {
                let a = _mm_cvtsi128_si64(x) as u64;
                let b = _mm_extract_epi64::<1>(x) as u64;
                for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                    _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(i as usize) as *const i8);
                }
            };
            pf(_mm512_castsi512_si128(self));
            pf(_mm512_extracti32x4_epi32::<1>(self));
            if n > 8 {
                pf(_mm512_extracti32x4_epi32::<2>(self));
                pf(_mm512_extracti32x4_epi32::<3>(self));
            }
        }
    }

    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_add_epi32(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_sub_epi32(self, b) }
    }
    #[inline(always)]
    unsafe fn mul_lo(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_mullo_epi32(self, b) }
    }
    #[inline(always)]
    unsafe fn mul_hi(self, b: Self) -> Self {
        // SAFETY: AVX-512F. As on AVX2: even and odd lanes multiplied into 64 bits, the
        // high halves blended.
        unsafe {
            let even = _mm512_srli_epi64::<32>(_mm512_mul_epu32(self, b));
            let odd = _mm512_mul_epu32(_mm512_srli_epi64::<32>(self), _mm512_srli_epi64::<32>(b));
            _mm512_mask_blend_epi32(0b1010_1010_1010_1010, even, odd)
        }
    }
    #[inline(always)]
    unsafe fn and(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_and_si512(self, b) }
    }
    #[inline(always)]
    unsafe fn or(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_or_si512(self, b) }
    }
    #[inline(always)]
    unsafe fn xor(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_xor_si512(self, b) }
    }
    #[inline(always)]
    unsafe fn and_not(self, b: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_andnot_si512(b, self) }
    }

    #[inline(always)]
    unsafe fn shr<const N: i32>(self) -> Self {
        // SAFETY: AVX-512F. (A shift by a constant splat is `vpsrld` by an immediate; the
        // immediate form's count is a `u32`, this trait's an `i32`.)
        unsafe { _mm512_srlv_epi32(self, _mm512_set1_epi32(N)) }
    }
    #[inline(always)]
    unsafe fn shl<const N: i32>(self) -> Self {
        // SAFETY: AVX-512F (as `shr`).
        unsafe { _mm512_sllv_epi32(self, _mm512_set1_epi32(N)) }
    }
    #[inline(always)]
    unsafe fn shr_by(self, n: u32) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_srl_epi32(self, _mm_cvtsi32_si128(n as i32)) }
    }
    #[inline(always)]
    unsafe fn shl_by(self, n: u32) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_sll_epi32(self, _mm_cvtsi32_si128(n as i32)) }
    }
    #[inline(always)]
    unsafe fn shr_var(self, n: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_srlv_epi32(self, n) }
    }
    #[inline(always)]
    unsafe fn shl_var(self, n: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_sllv_epi32(self, n) }
    }
    #[inline(always)]
    unsafe fn rotl<const R: i32, const L: i32>(self) -> Self {
        debug_assert!(R + L == 32);
        // SAFETY: AVX-512F: one `vprold`.
        unsafe { _mm512_rol_epi32::<R>(self) }
    }

    #[inline(always)]
    unsafe fn shuffle_bytes(self, ctl: Self) -> Self {
        // SAFETY: AVX-512BW.
        unsafe { _mm512_shuffle_epi8(self, ctl) }
    }

    #[inline(always)]
    unsafe fn gt_i32(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F.
        unsafe { _mm512_cmpgt_epi32_mask(self, b) }
    }
    #[inline(always)]
    unsafe fn ge_u32(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F.
        unsafe { _mm512_cmpge_epu32_mask(self, b) }
    }
    #[inline(always)]
    unsafe fn test(self, b: Self) -> __mmask16 {
        // SAFETY: AVX-512F.
        unsafe { _mm512_test_epi32_mask(self, b) }
    }
    #[inline(always)]
    unsafe fn any_nonzero(self) -> bool {
        // SAFETY: AVX-512F.
        unsafe { _mm512_test_epi32_mask(self, self) != 0 }
    }
    #[inline(always)]
    unsafe fn sign(self) -> __mmask16 {
        // SAFETY: AVX-512DQ.
        unsafe { _mm512_movepi32_mask(self) }
    }

    #[inline(always)]
    unsafe fn select(m: __mmask16, t: Self, f: Self) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_mask_mov_epi32(f, m, t) }
    }
    #[inline(always)]
    unsafe fn keep(self, m: __mmask16) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_maskz_mov_epi32(m, self) }
    }
    #[inline(always)]
    unsafe fn clear(self, m: __mmask16) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_maskz_mov_epi32(!m, self) }
    }
    #[inline(always)]
    unsafe fn packer(m: __mmask16) -> __mmask16 {
        m
    }
    #[inline(always)]
    unsafe fn pack(self, p: __mmask16) -> Self {
        // SAFETY: AVX-512F. Compressed in a register (to be stored whole): `vpcompressd`
        // to memory, and masked stores in general, cost several times as much.
        unsafe { _mm512_maskz_compress_epi32(p, self) }
    }

    #[inline(always)]
    unsafe fn u128_dword(p: *const u128, w: usize) -> Self {
        // SAFETY: AVX-512F; the caller's 16 readable keys (four 64-byte loads).
        unsafe { permute_dword(|r| _mm512_loadu_si512(p.add(4 * r) as *const __m512i), w) }
    }
    #[inline(always)]
    unsafe fn u128_dword_first(p: *const u128, w: usize, n: usize) -> Self {
        debug_assert!(n <= 16);
        // SAFETY: AVX-512F; each masked load reads only the qwords of its keys below `n`
        // (two per key; `wrapping_add`: past the last key the pointer is not
        // dereferenced).
        unsafe {
            let ld = |r: usize| {
                let have = n.saturating_sub(4 * r).min(4);
                let k = ((1u32 << (2 * have)) - 1) as __mmask8;
                _mm512_maskz_loadu_epi64(k, p.wrapping_add(4 * r) as *const i64)
            };
            permute_dword(ld, w)
        }
    }
    #[inline(always)]
    unsafe fn in_key_order(self) -> Self {
        self
    }
    #[inline(always)]
    unsafe fn u64_halves(p: *const u64) -> (Self, Self) {
        // SAFETY: AVX-512F; the caller's 16 readable keys (two 64-byte loads).
        unsafe {
            let (a, b) = (
                Self::load(p as *const u32),
                Self::load(p.add(8) as *const u32),
            );
            let even = _mm512_slli_epi32::<1>(Self::iota());
            let odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
            (
                _mm512_permutex2var_epi32(a, even, b),
                _mm512_permutex2var_epi32(a, odd, b),
            )
        }
    }
    #[inline(always)]
    unsafe fn lt_i64_bits(self, b: Self) -> u32 {
        // SAFETY: AVX-512F.
        unsafe { _mm512_cmplt_epi64_mask(self, b) as u32 }
    }
    #[inline(always)]
    unsafe fn splat_u64(x: u64) -> Self {
        // SAFETY: AVX-512F.
        unsafe { _mm512_set1_epi64(x as i64) }
    }
}

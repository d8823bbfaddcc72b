//! Vectors of 32-bit lanes, one trait over AVX2 and AVX-512: the layer every SIMD kernel
//! of the schemes is written over once.
//!
//! [`Lanes`] is implemented for `__m256i` (eight lanes, `avx2.rs`) and `__m512i` (sixteen
//! lanes, `avx512.rs`), with the lane predicates as an associated type ([`Lanes::Mask`]): a
//! vector whose lanes are all ones or all zeros on AVX2, a mask register (`__mmask16`) on
//! AVX-512. A kernel is an `#[inline(always)]` function generic over `V: Lanes`, and each
//! instruction set gets a thin `#[target_feature]` entry point that instantiates it (the
//! habit of `memchr`'s `Vector` trait and `arch/generic/`): the operations are
//! `#[inline(always)]`, so inside the entry point every one of them compiles to that
//! instruction set's instructions. What the instruction sets do differently hides behind
//! one operation — a masked gather merges on AVX2 and AVX-512 alike, a left-pack is
//! `vpcompressd` on AVX-512 and a permutation from a table on AVX2, a scatter is
//! `vpscatterdd` or a store and a loop — so a kernel reads the same on both, and a scheme
//! keeps its own per-width method only where the instruction sets really differ (DXR's
//! window search).
//!
//! Every operation is an `unsafe fn` whose contract is the instruction set of the
//! implementing type (AVX2 for `__m256i`; AVX-512 F, BW, DQ and VL for `__m512i`), plus
//! what a memory operation states. The unit tests (`tests.rs`) check each operation of
//! both widths against a scalar model of its lanes.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(all(test, target_arch = "x86_64"))]
mod tests;

/// Lane predicates of a [`Lanes`] vector: lane `i` of the mask is bit `i` of
/// [`bits`](LaneMask::bits).
///
/// # Safety
/// Every method needs the instruction set of the vector type the mask belongs to.
pub(crate) trait LaneMask: Copy {
    /// Lanes `0..n` (`n` ≤ the vector's lanes).
    unsafe fn first(n: usize) -> Self;
    /// Every lane.
    unsafe fn all() -> Self;
    /// The lanes as bits: bit `i` is lane `i`.
    unsafe fn bits(self) -> u32;
    /// Whether any lane is set.
    unsafe fn any(self) -> bool;
    /// The lanes set in both.
    unsafe fn and(self, other: Self) -> Self;

    /// How many lanes are set.
    #[inline(always)]
    unsafe fn count(self) -> u32 {
        // SAFETY: the caller's instruction set.
        unsafe { self.bits().count_ones() }
    }
}

/// A vector of [`LANES`](Lanes::LANES) 32-bit lanes (`u32` unless an operation says it
/// reads them as signed), with the operations the lookup kernels use.
///
/// Lane `i` is the `i`-th `u32` in memory order. Results are given as what every lane
/// holds; "lanes of `m`" are the lanes set in a mask `m`.
///
/// # Safety
/// Every method needs the instruction set of the implementing type (see the module docs)
/// and is meant to be inlined into a function compiled with it; memory operations state
/// what they read or write.
pub(crate) trait Lanes: Copy {
    /// Lanes per vector.
    const LANES: usize;
    /// Whether [`u128_dword`](Lanes::u128_dword) leaves its lanes in key order (else
    /// [`in_key_order`](Lanes::in_key_order) restores it).
    const U128_IN_ORDER: bool;
    /// Whether the lane predicates live in mask registers (AVX-512), where an operation
    /// on the lanes of a mask costs what one on every lane does. Where they do not (AVX2:
    /// a vector of all-ones lanes), a kernel runs its whole vectors apart from the masked
    /// tail: a mask that is a compare's result alone becomes one `vmovmskps`, while one
    /// merged with a tail's mask in the same code costs packs and an `and` per vector.
    const MASK_REGISTERS: bool;
    /// The lane predicates.
    type Mask: LaneMask;
    /// A left-packing of some lanes, made once by [`packer`](Lanes::packer) and applied
    /// to several vectors by [`pack`](Lanes::pack).
    type Packer: Copy;

    // Making vectors.

    /// Every lane `x`.
    unsafe fn splat(x: u32) -> Self;
    /// Every lane 0.
    unsafe fn zero() -> Self;
    /// Lane `i` holds `i`.
    unsafe fn iota() -> Self;
    /// Lane `i` holds `f(i)` (built in registers, lane by lane).
    unsafe fn from_fn(f: impl FnMut(usize) -> u32) -> Self;

    // Memory.

    /// The lanes at `p` (unaligned).
    ///
    /// # Safety
    /// `LANES` `u32` are readable at `p`.
    unsafe fn load(p: *const u32) -> Self;
    /// The lanes of `m` from `p`, the others 0 (unaligned).
    ///
    /// # Safety
    /// The `u32` of the lanes of `m` are readable at `p`; the others are not read.
    unsafe fn load_masked(p: *const u32, m: Self::Mask) -> Self;
    /// Stores the lanes to `p` (unaligned).
    ///
    /// # Safety
    /// `LANES` `u32` are writable at `p`.
    unsafe fn store(self, p: *mut u32);
    /// Stores the lanes of `m` to `p` (unaligned); the others are not written.
    ///
    /// # Safety
    /// The `u32` of the lanes of `m` are writable at `p`.
    unsafe fn store_masked(self, p: *mut u32, m: Self::Mask);
    /// The 32-bit words at the byte offsets `SCALE · idx` from `base` (`idx` signed):
    /// `vpgatherdd`. `SCALE` is 1, 2, 4 or 8.
    ///
    /// # Safety
    /// Every lane's 4 bytes are readable at its offset.
    unsafe fn gather<const SCALE: i32>(base: *const u8, idx: Self) -> Self;
    /// [`gather`](Lanes::gather) for the lanes of `m`; the others keep `self` and read
    /// nothing.
    ///
    /// # Safety
    /// As `gather`, for the lanes of `m`.
    unsafe fn gather_masked<const SCALE: i32>(
        self,
        base: *const u8,
        idx: Self,
        m: Self::Mask,
    ) -> Self;
    /// Stores lane `i` of `self` to `base[idx[i]]` for the lanes of `m`, in lane order
    /// (the highest lane wins where two indices are equal).
    ///
    /// # Safety
    /// `base[idx[i]]` is writable for the lanes of `m`.
    unsafe fn scatter(self, base: *mut u32, idx: Self, m: Self::Mask);
    /// Prefetches (into every cache level) `base.wrapping_add(self[i])` for the lanes
    /// `0..n`, and possibly a few lanes after them (the instruction set's group of lanes
    /// that leave the register together). Never faults.
    unsafe fn prefetch_lanes<T>(self, base: *const T, n: usize);

    // Arithmetic and logic.

    /// `self + b`, wrapping.
    unsafe fn add(self, b: Self) -> Self;
    /// `self − b`, wrapping.
    unsafe fn sub(self, b: Self) -> Self;
    /// The low 32 bits of `self · b`.
    unsafe fn mul_lo(self, b: Self) -> Self;
    /// The high 32 bits of `self · b` (unsigned).
    unsafe fn mul_hi(self, b: Self) -> Self;
    /// `self & b`.
    unsafe fn and(self, b: Self) -> Self;
    /// `self | b`.
    unsafe fn or(self, b: Self) -> Self;
    /// `self ^ b`.
    unsafe fn xor(self, b: Self) -> Self;
    /// `self & !b`.
    unsafe fn and_not(self, b: Self) -> Self;

    // Shifts.

    /// `self >> N` (logical; `N` < 32).
    unsafe fn shr<const N: i32>(self) -> Self;
    /// `self << N` (`N` < 32).
    unsafe fn shl<const N: i32>(self) -> Self;
    /// `self >> n` for every lane (logical; `n` ≥ 32 gives 0).
    unsafe fn shr_by(self, n: u32) -> Self;
    /// `self << n` for every lane (`n` ≥ 32 gives 0).
    unsafe fn shl_by(self, n: u32) -> Self;
    /// `self[i] >> n[i]` per lane (logical; a count ≥ 32 gives 0).
    unsafe fn shr_var(self, n: Self) -> Self;
    /// `self[i] << n[i]` per lane (a count ≥ 32 gives 0).
    unsafe fn shl_var(self, n: Self) -> Self;
    /// `self.rotate_left(R)`; `L` is `32 − R` (`0 < R < 32`).
    unsafe fn rotl<const R: i32, const L: i32>(self) -> Self;

    // Moving lanes and bytes.

    /// Within every 16-byte group, byte `j` becomes the byte of the group that byte `j`
    /// of `ctl` names (its low four bits), or 0 where that byte of `ctl` has its top bit
    /// set (`vpshufb`).
    unsafe fn shuffle_bytes(self, ctl: Self) -> Self;

    // Compares.

    /// Lanes where `self > b` as signed numbers.
    unsafe fn gt_i32(self, b: Self) -> Self::Mask;
    /// Lanes where `self >= b` as unsigned numbers.
    unsafe fn ge_u32(self, b: Self) -> Self::Mask;
    /// Lanes where `self & b != 0`.
    unsafe fn test(self, b: Self) -> Self::Mask;
    /// Lanes whose top bit is set.
    unsafe fn sign(self) -> Self::Mask;

    /// Lanes where `self != 0`.
    #[inline(always)]
    unsafe fn nonzero(self) -> Self::Mask {
        // SAFETY: the caller's instruction set.
        unsafe { self.test(self) }
    }
    /// Whether any lane is not 0 (`vptest` on AVX2: no mask is made).
    unsafe fn any_nonzero(self) -> bool;

    // Selecting lanes.

    /// `t` in the lanes of `m`, `f` in the others.
    unsafe fn select(m: Self::Mask, t: Self, f: Self) -> Self;
    /// `self` in the lanes of `m`, 0 in the others.
    unsafe fn keep(self, m: Self::Mask) -> Self;
    /// 0 in the lanes of `m`, `self` in the others.
    unsafe fn clear(self, m: Self::Mask) -> Self;
    /// The packing of the lanes of `m` to the front.
    unsafe fn packer(m: Self::Mask) -> Self::Packer;
    /// The lanes `p` packs, in order, in lanes `0..count`; the lanes after them hold
    /// unspecified values of `self` or 0.
    unsafe fn pack(self, p: Self::Packer) -> Self;

    // Keys wider than a lane.

    /// 32-bit word `w` (0 = least significant) of the `LANES` `u128`s at `p`, one per
    /// lane: in key order if [`U128_IN_ORDER`](Lanes::U128_IN_ORDER), else in an order
    /// [`in_key_order`](Lanes::in_key_order) undoes.
    ///
    /// # Safety
    /// `LANES` `u128` are readable at `p`; `w` < 4.
    unsafe fn u128_dword(p: *const u128, w: usize) -> Self;
    /// As [`u128_dword`](Lanes::u128_dword) for the first `n` keys at `p` (`n` ≤
    /// `LANES`); the keys after them are not read and their lanes are 0.
    ///
    /// # Safety
    /// `n` `u128` are readable at `p`; `w` < 4.
    unsafe fn u128_dword_first(p: *const u128, w: usize, n: usize) -> Self;
    /// The lanes of a [`u128_dword`](Lanes::u128_dword) in key order.
    unsafe fn in_key_order(self) -> Self;
    /// The low and the high 32-bit halves of the `LANES` `u64`s at `p`, each in key order.
    ///
    /// # Safety
    /// `LANES` `u64` are readable at `p`.
    unsafe fn u64_halves(p: *const u64) -> (Self, Self);
    /// Bit `j` set where 64-bit lane `j` of `self` (`LANES / 2` of them) is below that of
    /// `b`, as signed numbers.
    unsafe fn lt_i64_bits(self, b: Self) -> u32;
    /// Every 64-bit lane `x`.
    unsafe fn splat_u64(x: u64) -> Self;
}

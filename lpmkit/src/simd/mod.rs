//! Run-time CPU-feature dispatch shared by the schemes.
//!
//! A scheme that has SIMD kernels asks for an [`Avx2`] token once, when it is built, and
//! keeps it (or `None`) beside its tables; the kernels take the token as a parameter, so
//! holding one is the proof that the CPU supports AVX2 (the habit of `memchr`'s
//! `avx2::One::new`). Every kernel has a scalar twin that produces the same answers and is
//! used when the token is absent: on other CPUs, on other architectures, and when the user
//! forces scalar code with `LPMKIT_FORCE_SCALAR=1` (DPDK's "maximum SIMD width") or a
//! scheme's own option.

use std::sync::OnceLock;

/// True if the environment variable `LPMKIT_FORCE_SCALAR` is set to a non-empty value
/// other than `0`. Read once per process.
pub fn force_scalar_env() -> bool {
    static FORCE: OnceLock<bool> = OnceLock::new();
    *FORCE.get_or_init(|| {
        std::env::var_os("LPMKIT_FORCE_SCALAR").is_some_and(|v| !v.is_empty() && v != "0")
    })
}

/// Proof that AVX2 instructions may be executed on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Avx2 {
    _private: (),
}

impl Avx2 {
    /// The token, if the CPU has AVX2 and scalar code is not forced.
    pub fn new() -> Option<Avx2> {
        if force_scalar_env() {
            return None;
        }
        Self::detect()
    }

    /// The token if the CPU has AVX2, ignoring `LPMKIT_FORCE_SCALAR`.
    pub fn detect() -> Option<Avx2> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                return Some(Avx2 { _private: () });
            }
        }
        None
    }

    /// The token unless `force_scalar`; a convenience for scheme configs.
    pub fn unless(force_scalar: bool) -> Option<Avx2> {
        if force_scalar {
            None
        } else {
            Self::new()
        }
    }
}

/// Proof that the `popcnt` instruction may be executed on this CPU (Poptrie's and DXR's
/// population counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Popcnt {
    _private: (),
}

impl Popcnt {
    /// The token, if the CPU has `popcnt` and scalar code is not forced.
    pub fn new() -> Option<Popcnt> {
        if force_scalar_env() {
            return None;
        }
        Self::detect()
    }

    /// The token if the CPU has `popcnt`, ignoring `LPMKIT_FORCE_SCALAR`.
    pub fn detect() -> Option<Popcnt> {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("popcnt") {
                return Some(Popcnt { _private: () });
            }
        }
        None
    }

    /// The token unless `force_scalar`; a convenience for scheme configs.
    pub fn unless(force_scalar: bool) -> Option<Popcnt> {
        if force_scalar {
            None
        } else {
            Self::new()
        }
    }
}

/// For each 8-bit lane mask, the indices of its set lanes in order (then zeros), one byte
/// each: the `vpermd` indices that left-pack those lanes of a 256-bit vector of 32-bit
/// lanes (DXR's and Spider's compaction of the lanes that go on).
pub(crate) static LEFT_PACK: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut m = 0;
    while m < 256 {
        let (mut v, mut n, mut lane) = (0u64, 0, 0);
        while lane < 8 {
            if m & (1 << lane) != 0 {
                v |= (lane as u64) << (8 * n);
                n += 1;
            }
            lane += 1;
        }
        t[m] = v;
        m += 1;
    }
    t
};

/// Hints the CPU to bring the cache line holding `*p` into all cache levels.
///
/// A no-op on architectures without a prefetch intrinsic. Never faults, whatever `p` is.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, even on an invalid address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

//! Which kernels a table's lookups run ([`Kernels`]), and hashing a batch of keys with
//! them: the AVX-512 kernel, else the AVX2 kernel, else their scalar twin
//! ([`hash_keys_scalar`]).

use super::hash::{hash_keys_scalar, Hashing};
use crate::simd::{Avx2, Avx512};

/// The SIMD tokens a table holds (none: scalar code).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Kernels {
    /// AVX2 hashing and filter probes.
    pub(crate) avx2: Option<Avx2>,
    /// AVX-512 hashing and filter probes (16 lanes).
    pub(crate) avx512: Option<Avx512>,
}

/// [`hash_keys_scalar`], with AVX-512 or AVX2 when `k` holds the token.
#[inline]
pub(crate) fn hash_keys(
    k: Kernels,
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = k.avx512 {
        super::avx512::hash_keys(token, hashing, keys, h1, h2, t);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = k.avx2 {
        super::avx2::hash_keys(token, hashing, keys, h1, h2, t);
        return;
    }
    let _ = k;
    hash_keys_scalar(hashing, keys, h1, h2, t)
}

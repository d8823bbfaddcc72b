//! Hashing a batch of keys: the AVX2 kernel when the table holds the token, else its
//! scalar twin ([`hash_keys_scalar`]).

use super::hash::{hash_keys_scalar, Hashing};
use crate::simd::Avx2;

/// [`hash_keys_scalar`], with AVX2 when `avx2` is given.
#[inline]
pub(crate) fn hash_keys(
    avx2: Option<Avx2>,
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = avx2 {
        super::avx2::hash_keys(token, hashing, keys, h1, h2, t);
        return;
    }
    let _ = avx2;
    hash_keys_scalar(hashing, keys, h1, h2, t)
}

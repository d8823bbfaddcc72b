//! AVX2 hashing of 8 keys at a time (§4.3.2: the paper vectorizes the hash computations,
//! the most compute-intensive stage, with 16 lanes on the Xeon Phi; AVX2 has 8 lanes of
//! 32 bits). Every kind but C `rand()` has a kernel: H2, MurmurHash3 over 4 and 8 bytes,
//! and Knuth's multiplication are all 32-bit multiplies, xors, shifts and rotations
//! (`vpmulld`, `vpxor`, `vpsrld`/`vpslld`). The 64-bit keys of 8 lanes are split into
//! their low and high words with two permutes. The tail of fewer than 8 keys, and every
//! table without the token, runs the scalar twin (`hash::hash_keys_scalar`), which the
//! tests compare with these kernels on every kind.

use core::arch::x86_64::*;

use super::filter::Filter;
use super::hash::{hash_keys_scalar, HashKind, Hashing, KNUTH, SEEDS};
use crate::simd::Avx2;

/// `h1`, `h2` and the table hash of `keys` (see `hash::hash_keys_scalar`), 8 at a time.
pub(crate) fn hash_keys(
    _token: Avx2,
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    let whole = keys.len() / 8 * 8;
    if hashing.kind.vectorized() && (hashing.reuses() || hashing.table_kind.vectorized()) {
        // SAFETY: holding an `Avx2` token proves the CPU supports AVX2; the slices hold at
        // least `whole` elements (`whole <= keys.len()`, the outputs as long as `keys`).
        unsafe { hash_blocks(hashing, &keys[..whole], h1, h2, t) };
    } else {
        hash_keys_scalar(hashing, &keys[..whole], h1, h2, t);
    }
    hash_keys_scalar(
        hashing,
        &keys[whole..],
        &mut h1[whole..],
        &mut h2[whole..],
        &mut t[whole..],
    );
}

/// # Safety
/// The CPU must support AVX2; `keys.len()` must be a multiple of 8 and the outputs at
/// least as long; every kind used must be vectorized.
#[target_feature(enable = "avx2")]
unsafe fn hash_blocks(
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    debug_assert!(keys.len().is_multiple_of(8) && h1.len() >= keys.len());
    debug_assert!(h2.len() >= keys.len() && t.len() >= keys.len());
    let second = hashing.k > 1;
    let reuse = hashing.reuses();
    let split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    for (i, k8) in keys.chunks_exact(8).enumerate() {
        // SAFETY: `k8` holds 8 u64 (64 bytes): two unaligned 32-byte loads.
        let (a, b) = unsafe {
            (
                _mm256_loadu_si256(k8.as_ptr() as *const __m256i),
                _mm256_loadu_si256(k8.as_ptr().add(4) as *const __m256i),
            )
        };
        // [lo0..lo3, hi0..hi3] and [lo4..lo7, hi4..hi7] → lo0..lo7, hi0..hi7.
        let a = _mm256_permutevar8x32_epi32(a, split);
        let b = _mm256_permutevar8x32_epi32(b, split);
        let lo = _mm256_permute2x128_si256::<0x20>(a, b);
        let hi = _mm256_permute2x128_si256::<0x31>(a, b);
        let v1 = hash8(hashing.kind, lo, hi, 0);
        let at = i * 8;
        // SAFETY: `at + 8 <= keys.len() <= len` of every output: unaligned 32-byte stores.
        unsafe {
            _mm256_storeu_si256(h1.as_mut_ptr().add(at) as *mut __m256i, v1);
            if second {
                let v2 = hash8(hashing.kind, lo, hi, 1);
                _mm256_storeu_si256(h2.as_mut_ptr().add(at) as *mut __m256i, v2);
            }
            let vt = if reuse {
                v1
            } else {
                hash8(hashing.table_kind, lo, hi, 0)
            };
            _mm256_storeu_si256(t.as_mut_ptr().add(at) as *mut __m256i, vt);
        }
    }
}

/// Sets bit `level` of `mask[i]` for each of the first `n` keys whose filter bits (double
/// hashing from `h1[i]`, `h2[i]`) are all set: 8 keys at a time, positions reduced `mod
/// m` with [`DivMagic`] (exactly as the scalar [`Filter::contains_km_all`]), the words
/// gathered.
pub(crate) fn filter_mask(
    _token: Avx2,
    f: &Filter,
    h1: &[u32],
    h2: &[u32],
    n: usize,
    mask: &mut [u16],
    level: usize,
) {
    let whole = n / 8 * 8;
    // SAFETY: holding an `Avx2` token proves the CPU supports AVX2; the slices hold `n`
    // elements at least.
    unsafe { filter_blocks(f, &h1[..whole], &h2[..whole], &mut mask[..whole], level) };
    for i in whole..n {
        mask[i] |= (f.contains_km_all(h1[i], h2[i]) as u16) << level;
    }
}

/// # Safety
/// The CPU must support AVX2; the slices have the same length, a multiple of 8.
#[target_feature(enable = "avx2")]
unsafe fn filter_blocks(f: &Filter, h1: &[u32], h2: &[u32], mask: &mut [u16], level: usize) {
    debug_assert!(h1.len().is_multiple_of(8) && h2.len() == h1.len() && mask.len() == h1.len());
    let g = f.magic;
    let d = _mm256_set1_epi32(g.d as i32);
    let m = _mm256_set1_epi32(g.m as i32);
    let sh1 = _mm_cvtsi32_si128(g.sh1 as i32);
    let sh2 = _mm_cvtsi32_si128(g.sh2 as i32);
    let low5 = _mm256_set1_epi32(31);
    let words = f.words_ptr() as *const i32;
    for (c, ((a, b), out)) in h1
        .chunks_exact(8)
        .zip(h2.chunks_exact(8))
        .zip(mask.chunks_exact_mut(8))
        .enumerate()
    {
        let _ = c;
        // SAFETY: 8 u32 each: unaligned 32-byte loads.
        let (mut pos, step) = unsafe {
            (
                _mm256_loadu_si256(a.as_ptr() as *const __m256i),
                _mm256_loadu_si256(b.as_ptr() as *const __m256i),
            )
        };
        let mut acc = _mm256_set1_epi32(-1);
        for _ in 0..f.k() {
            // p = pos mod m (Granlund–Montgomery): t = mulhi(pos, m).
            let even = _mm256_srli_epi64::<32>(_mm256_mul_epu32(pos, m));
            let odd = _mm256_mul_epu32(_mm256_srli_epi64::<32>(pos), m);
            let t = _mm256_blend_epi32::<0b1010_1010>(even, odd);
            let q = _mm256_srl_epi32(
                _mm256_add_epi32(t, _mm256_srl_epi32(_mm256_sub_epi32(pos, t), sh1)),
                sh2,
            );
            let p = _mm256_sub_epi32(pos, _mm256_mullo_epi32(q, d));
            // SAFETY: p < m, so every word index p / 32 is below ⌈m/32⌉, committed at
            // creation; the words are switch words the writer changes with atomic
            // read-modify-writes, and each gathered element is one aligned 32-bit read
            // (as DXR's gathers of its lookup table).
            let w = unsafe { _mm256_i32gather_epi32::<4>(words, _mm256_srli_epi32::<5>(p)) };
            acc = _mm256_and_si256(acc, _mm256_srlv_epi32(w, _mm256_and_si256(p, low5)));
            pos = _mm256_add_epi32(pos, step);
        }
        let bits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_slli_epi32::<31>(acc))) as u32;
        for (j, o) in out.iter_mut().enumerate() {
            *o |= ((bits >> j & 1) as u16) << level;
        }
    }
}

/// The `i`-th function of `kind` on 8 keys given as low and high words.
#[inline]
#[target_feature(enable = "avx2")]
fn hash8(kind: HashKind, lo: __m256i, hi: __m256i, i: usize) -> __m256i {
    match kind {
        HashKind::H2 => h2_x8(_mm256_xor_si256(lo, _mm256_set1_epi32(SEEDS[i] as i32))),
        HashKind::Murmur32 => fmix(_mm256_xor_si256(
            block(_mm256_set1_epi32(SEEDS[i] as i32), lo),
            _mm256_set1_epi32(4),
        )),
        HashKind::Murmur64 => {
            let h = block(_mm256_set1_epi32(SEEDS[i] as i32), lo);
            fmix(_mm256_xor_si256(block(h, hi), _mm256_set1_epi32(8)))
        }
        HashKind::Knuth => {
            _mm256_mullo_epi32(_mm256_xor_si256(lo, hi), _mm256_set1_epi32(KNUTH[i] as i32))
        }
        HashKind::CRand => unreachable!("C rand() is not vectorized"),
    }
}

/// `x ^ (x >> s)`.
#[inline]
#[target_feature(enable = "avx2")]
fn xorshift<const S: i32>(x: __m256i) -> __m256i {
    _mm256_xor_si256(x, _mm256_srli_epi32::<S>(x))
}

/// H2 (Algorithm 3).
#[inline]
#[target_feature(enable = "avx2")]
fn h2_x8(x: __m256i) -> __m256i {
    let c = _mm256_set1_epi32(0x045d_9f3b);
    let x = _mm256_mullo_epi32(xorshift::<16>(x), c);
    let x = _mm256_mullo_epi32(xorshift::<16>(x), c);
    xorshift::<16>(x)
}

/// `x.rotate_left(R)` (`L` = 32 − R).
#[inline]
#[target_feature(enable = "avx2")]
fn rotl<const R: i32, const L: i32>(x: __m256i) -> __m256i {
    _mm256_or_si256(_mm256_slli_epi32::<R>(x), _mm256_srli_epi32::<L>(x))
}

/// One 4-byte block of MurmurHash3_x86_32.
#[inline]
#[target_feature(enable = "avx2")]
fn block(h: __m256i, k: __m256i) -> __m256i {
    let k = _mm256_mullo_epi32(k, _mm256_set1_epi32(0xcc9e_2d51_u32 as i32));
    let k = rotl::<15, 17>(k);
    let k = _mm256_mullo_epi32(k, _mm256_set1_epi32(0x1b87_3593));
    let h = rotl::<13, 19>(_mm256_xor_si256(h, k));
    _mm256_add_epi32(
        _mm256_mullo_epi32(h, _mm256_set1_epi32(5)),
        _mm256_set1_epi32(0xe654_6b64_u32 as i32),
    )
}

/// MurmurHash3's finalizer.
#[inline]
#[target_feature(enable = "avx2")]
fn fmix(h: __m256i) -> __m256i {
    let h = _mm256_mullo_epi32(xorshift::<16>(h), _mm256_set1_epi32(0x85eb_ca6b_u32 as i32));
    let h = _mm256_mullo_epi32(xorshift::<13>(h), _mm256_set1_epi32(0xc2b2_ae35_u32 as i32));
    xorshift::<16>(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn filter_probes_match_the_scalar_twin() {
        let Some(token) = Avx2::detect() else {
            return;
        };
        let mut rng = SplitMix64::new(12);
        for (m, k) in [
            (64u64, 1u32),
            (1000, 2),
            (1 << 20, 4),
            (2_434_631, 7),
            (33, 3),
        ] {
            let f = Filter::new(m.max(64), k).unwrap();
            // Half the bits set, at random.
            let hashing = Hashing {
                kind: HashKind::Murmur32,
                table_kind: HashKind::Murmur32,
                double_hashing: true,
                reuse: true,
                k: 1,
            };
            let mut c = super::super::filter::Counters::new(m.max(64));
            for key in 0..m / 2 {
                // SAFETY: no readers; the one writer.
                unsafe { c.add(&f, &hashing, key * 7 + 1) };
            }
            for n in [0usize, 5, 8, 13, 64] {
                let h1: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
                let mut h2: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
                if n > 1 {
                    h2[0] = 0;
                    h2[1] = u32::MAX;
                }
                let mut v = vec![0u16; n];
                filter_mask(token, &f, &h1, &h2, n, &mut v, 3);
                let s: Vec<u16> = (0..n)
                    .map(|i| (f.contains_km_all(h1[i], h2[i]) as u16) << 3)
                    .collect();
                assert_eq!(v, s, "m {m}, k {k}, n {n}");
            }
        }
    }

    #[test]
    fn kernels_match_the_scalar_twin() {
        let Some(token) = Avx2::detect() else {
            eprintln!("note: no AVX2 on this CPU; kernels not run");
            return;
        };
        let mut rng = SplitMix64::new(11);
        for n in [0usize, 1, 7, 8, 9, 16, 63, 64] {
            let mut keys: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            if n > 2 {
                keys[0] = 0;
                keys[1] = u64::MAX;
            }
            for kind in HashKind::ALL.into_iter().filter(|k| k.vectorized()) {
                for (table_kind, reuse, k) in [
                    (kind, true, 2),
                    (kind, false, 1),
                    (HashKind::Knuth, true, 7),
                    (HashKind::Murmur64, false, 3),
                    (HashKind::CRand, false, 2),
                ] {
                    let hashing = Hashing {
                        kind,
                        table_kind,
                        double_hashing: true,
                        reuse,
                        k,
                    };
                    let keys: Vec<u64> = if kind.takes_64_bit_keys() {
                        keys.clone()
                    } else {
                        keys.iter().map(|&k| k as u32 as u64).collect()
                    };
                    let mut v = [vec![0u32; n], vec![0u32; n], vec![0u32; n]];
                    let mut s = v.clone();
                    let [a, b, c] = &mut v;
                    hash_keys(token, &hashing, &keys, a, b, c);
                    let [a, b, c] = &mut s;
                    hash_keys_scalar(&hashing, &keys, a, b, c);
                    assert_eq!(v, s, "{kind} / {table_kind}, n = {n}");
                }
            }
        }
    }
}

//! AVX-512 hashing of 16 keys at a time: the paper's 16 lanes (§4.3.2 vectorizes the hash
//! computations with 16 lanes on the Xeon Phi), the AVX2 kernels (`avx2.rs`) on one
//! 512-bit register. Every kind but C `rand()` has a kernel; rotations are one `vprold`
//! (AVX2 needs two shifts and an `or`), the low and high words of sixteen 64-bit keys
//! are two `vpermt2d`, and a filter probe's bit test writes a mask register directly.
//! The tail of fewer than 16 keys runs the AVX2 kernels, which the CPU has, and the
//! scalar twin (`hash::hash_keys_scalar`) checks every kind in the tests.

use core::arch::x86_64::*;

use super::filter::Filter;
use super::hash::{HashKind, Hashing, KNUTH, SEEDS};
use crate::simd::Avx512;

/// `h1`, `h2` and the table hash of `keys` (see `hash::hash_keys_scalar`), 16 at a time.
pub(crate) fn hash_keys(
    token: Avx512,
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    if !(hashing.kind.vectorized() && (hashing.reuses() || hashing.table_kind.vectorized())) {
        // A kind without a kernel: the AVX2 entry point runs the scalar twin.
        return super::avx2::hash_keys(token.avx2(), hashing, keys, h1, h2, t);
    }
    let whole = keys.len() / 16 * 16;
    // SAFETY: holding an `Avx512` token proves the CPU supports AVX-512F/BW/DQ/VL; the
    // slices hold at least `whole` elements (`whole <= keys.len()`, the outputs as long
    // as `keys`).
    unsafe { hash_blocks(hashing, &keys[..whole], h1, h2, t) };
    // The tail of fewer than 16 keys by the AVX2 kernels (and their twin).
    super::avx2::hash_keys(
        token.avx2(),
        hashing,
        &keys[whole..],
        &mut h1[whole..],
        &mut h2[whole..],
        &mut t[whole..],
    );
}

/// # Safety
/// The CPU must support AVX-512F/BW/DQ/VL; `keys.len()` must be a multiple of 16 and the
/// outputs at least as long; every kind used must be vectorized.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn hash_blocks(
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    debug_assert!(keys.len().is_multiple_of(16) && h1.len() >= keys.len());
    debug_assert!(h2.len() >= keys.len() && t.len() >= keys.len());
    let second = hashing.k > 1;
    let reuse = hashing.reuses();
    let even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (i, k16) in keys.chunks_exact(16).enumerate() {
        // SAFETY: `k16` holds 16 u64 (128 bytes): two unaligned 64-byte loads.
        let (a, b) = unsafe {
            (
                _mm512_loadu_si512(k16.as_ptr() as *const __m512i),
                _mm512_loadu_si512(k16.as_ptr().add(8) as *const __m512i),
            )
        };
        let lo = _mm512_permutex2var_epi32(a, even, b);
        let hi = _mm512_permutex2var_epi32(a, odd, b);
        let v1 = hash16(hashing.kind, lo, hi, 0);
        let at = i * 16;
        // SAFETY: `at + 16 <= keys.len() <= len` of every output: unaligned 64-byte stores.
        unsafe {
            _mm512_storeu_si512(h1.as_mut_ptr().add(at) as *mut __m512i, v1);
            if second {
                let v2 = hash16(hashing.kind, lo, hi, 1);
                _mm512_storeu_si512(h2.as_mut_ptr().add(at) as *mut __m512i, v2);
            }
            let vt = if reuse {
                v1
            } else {
                hash16(hashing.table_kind, lo, hi, 0)
            };
            _mm512_storeu_si512(t.as_mut_ptr().add(at) as *mut __m512i, vt);
        }
    }
}

/// Sets bit `level` of `mask[i]` for each of the first `n` keys whose filter bits (double
/// hashing from `h1[i]`, `h2[i]`) are all set: 16 keys at a time, positions reduced `mod
/// m` with `DivMagic` (exactly as the scalar `Filter::contains_km_all`), the words
/// gathered, each bit test a mask register.
pub(crate) fn filter_mask(
    token: Avx512,
    f: &Filter,
    h1: &[u32],
    h2: &[u32],
    n: usize,
    mask: &mut [u16],
    level: usize,
) {
    let whole = n / 16 * 16;
    // SAFETY: holding an `Avx512` token proves the CPU supports AVX-512F/BW/DQ/VL; the
    // slices hold `n` elements at least.
    unsafe { filter_blocks(f, &h1[..whole], &h2[..whole], &mut mask[..whole], level) };
    super::avx2::filter_mask(
        token.avx2(),
        f,
        &h1[whole..],
        &h2[whole..],
        n - whole,
        &mut mask[whole..],
        level,
    );
}

/// # Safety
/// The CPU must support AVX-512F/BW/DQ/VL; the slices have the same length, a multiple of
/// 16.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
unsafe fn filter_blocks(f: &Filter, h1: &[u32], h2: &[u32], mask: &mut [u16], level: usize) {
    debug_assert!(h1.len().is_multiple_of(16) && h2.len() == h1.len() && mask.len() == h1.len());
    let g = f.magic;
    let d = _mm512_set1_epi32(g.d as i32);
    let m = _mm512_set1_epi32(g.m as i32);
    let sh1 = _mm_cvtsi32_si128(g.sh1 as i32);
    let sh2 = _mm_cvtsi32_si128(g.sh2 as i32);
    let low5 = _mm512_set1_epi32(31);
    let one = _mm512_set1_epi32(1);
    let words = f.words_ptr() as *const i32;
    for ((a, b), out) in h1
        .chunks_exact(16)
        .zip(h2.chunks_exact(16))
        .zip(mask.chunks_exact_mut(16))
    {
        // SAFETY: 16 u32 each: unaligned 64-byte loads.
        let (mut pos, step) = unsafe {
            (
                _mm512_loadu_si512(a.as_ptr() as *const __m512i),
                _mm512_loadu_si512(b.as_ptr() as *const __m512i),
            )
        };
        let mut all: __mmask16 = !0;
        for _ in 0..f.k() {
            // p = pos mod m (Granlund–Montgomery): t = mulhi(pos, m).
            let lo = _mm512_srli_epi64::<32>(_mm512_mul_epu32(pos, m));
            let hi = _mm512_mul_epu32(_mm512_srli_epi64::<32>(pos), m);
            let t = _mm512_mask_blend_epi32(0b1010_1010_1010_1010, lo, hi);
            let q = _mm512_srl_epi32(
                _mm512_add_epi32(t, _mm512_srl_epi32(_mm512_sub_epi32(pos, t), sh1)),
                sh2,
            );
            let p = _mm512_sub_epi32(pos, _mm512_mullo_epi32(q, d));
            // SAFETY: p < m, so every word index p / 32 is below ⌈m/32⌉, committed at
            // creation; the words are switch words the writer changes with atomic
            // read-modify-writes, and each gathered element is one aligned 32-bit read.
            // Lanes already out are not gathered.
            let w = unsafe {
                _mm512_mask_i32gather_epi32::<4>(
                    _mm512_setzero_si512(),
                    all,
                    _mm512_srli_epi32::<5>(p),
                    words,
                )
            };
            all &= _mm512_test_epi32_mask(_mm512_srlv_epi32(w, _mm512_and_si512(p, low5)), one);
            pos = _mm512_add_epi32(pos, step);
        }
        let bits = all as u32;
        for (j, o) in out.iter_mut().enumerate() {
            *o |= ((bits >> j & 1) as u16) << level;
        }
    }
}

/// The `i`-th function of `kind` on 16 keys given as low and high words.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
fn hash16(kind: HashKind, lo: __m512i, hi: __m512i, i: usize) -> __m512i {
    match kind {
        HashKind::H2 => h2_x16(_mm512_xor_si512(lo, _mm512_set1_epi32(SEEDS[i] as i32))),
        HashKind::Murmur32 => fmix(_mm512_xor_si512(
            block(_mm512_set1_epi32(SEEDS[i] as i32), lo),
            _mm512_set1_epi32(4),
        )),
        HashKind::Murmur64 => {
            let h = block(_mm512_set1_epi32(SEEDS[i] as i32), lo);
            fmix(_mm512_xor_si512(block(h, hi), _mm512_set1_epi32(8)))
        }
        HashKind::Knuth => {
            _mm512_mullo_epi32(_mm512_xor_si512(lo, hi), _mm512_set1_epi32(KNUTH[i] as i32))
        }
        HashKind::CRand => unreachable!("C rand() is not vectorized"),
    }
}

/// `x ^ (x >> s)`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
fn xorshift<const S: u32>(x: __m512i) -> __m512i {
    _mm512_xor_si512(x, _mm512_srli_epi32::<S>(x))
}

/// H2 (Algorithm 3).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
fn h2_x16(x: __m512i) -> __m512i {
    let c = _mm512_set1_epi32(0x045d_9f3b);
    let x = _mm512_mullo_epi32(xorshift::<16>(x), c);
    let x = _mm512_mullo_epi32(xorshift::<16>(x), c);
    xorshift::<16>(x)
}

/// One 4-byte block of MurmurHash3_x86_32 (`vprold` rotations).
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
fn block(h: __m512i, k: __m512i) -> __m512i {
    let k = _mm512_mullo_epi32(k, _mm512_set1_epi32(0xcc9e_2d51_u32 as i32));
    let k = _mm512_rol_epi32::<15>(k);
    let k = _mm512_mullo_epi32(k, _mm512_set1_epi32(0x1b87_3593));
    let h = _mm512_rol_epi32::<13>(_mm512_xor_si512(h, k));
    _mm512_add_epi32(
        _mm512_mullo_epi32(h, _mm512_set1_epi32(5)),
        _mm512_set1_epi32(0xe654_6b64_u32 as i32),
    )
}

/// MurmurHash3's finalizer.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl")]
fn fmix(h: __m512i) -> __m512i {
    let h = _mm512_mullo_epi32(xorshift::<16>(h), _mm512_set1_epi32(0x85eb_ca6b_u32 as i32));
    let h = _mm512_mullo_epi32(xorshift::<13>(h), _mm512_set1_epi32(0xc2b2_ae35_u32 as i32));
    xorshift::<16>(h)
}

#[cfg(test)]
mod tests {
    use super::super::hash::hash_keys_scalar;
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn filter_probes_match_the_scalar_twin() {
        let Some(token) = Avx512::detect() else {
            eprintln!("note: no AVX-512 on this CPU; the AVX-512 filter probes are not checked");
            return;
        };
        let mut rng = SplitMix64::new(13);
        for (m, k) in [
            (64u64, 1u32),
            (1000, 2),
            (1 << 20, 4),
            (2_434_631, 7),
            (33, 3),
        ] {
            let f = Filter::new(m.max(64), k).unwrap();
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
            for n in [0usize, 5, 15, 16, 17, 40, 64] {
                let h1: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
                let mut h2: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
                if n > 1 {
                    h2[0] = 0;
                    h2[1] = u32::MAX;
                }
                let mut v = vec![0u16; n];
                filter_mask(token, &f, &h1, &h2, n, &mut v, 5);
                let s: Vec<u16> = (0..n)
                    .map(|i| (f.contains_km_all(h1[i], h2[i]) as u16) << 5)
                    .collect();
                assert_eq!(v, s, "m {m}, k {k}, n {n}");
            }
        }
    }

    #[test]
    fn kernels_match_the_scalar_twin() {
        let Some(token) = Avx512::detect() else {
            eprintln!("note: no AVX-512 on this CPU; the AVX-512 hash kernels are not checked");
            return;
        };
        let mut rng = SplitMix64::new(17);
        for n in [0usize, 1, 15, 16, 17, 31, 32, 63, 64, 100] {
            let mut keys: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            if n > 2 {
                keys[0] = 0;
                keys[1] = u64::MAX;
            }
            for kind in HashKind::ALL {
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

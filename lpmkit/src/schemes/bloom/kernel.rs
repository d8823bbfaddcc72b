//! The SIMD kernels of the lookups — hashing a batch of keys and probing a filter with
//! it — written once over [`Lanes`] and instantiated for AVX2 (eight keys at a time) and
//! AVX-512 (sixteen, the paper's lanes: §4.3.2 vectorizes the hash computations, the most
//! compute-intensive stage, with 16 lanes on the Xeon Phi); and which of them a table's
//! lookups run ([`hash_keys`], [`filter_mask`]: the AVX-512 instance, else the AVX2 one,
//! else the scalar twin).
//!
//! Every kind but C `rand()` has a kernel: H2, MurmurHash3 over 4 and 8 bytes and Knuth's
//! multiplication are 32-bit multiplies, xors, shifts and rotations (a rotation is one
//! `vprold` on AVX-512, two shifts and an `or` on AVX2); the low and high words of 64-bit
//! keys are split by permutes. A filter probe reduces its positions `mod m` exactly as the
//! scalar [`Filter::contains_km_all`] (Granlund–Montgomery, [`DivMagic`]), gathers the
//! filter words of the keys still in and tests their bits into a mask. The tail of a
//! batch that does not fill a vector is hashed and probed in a zero-padded vector; the
//! tests compare every kind with the scalar twin ([`hash_keys_scalar`]).
//!
//! [`DivMagic`]: super::hash::DivMagic

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{__m256i, __m512i};

use super::filter::Filter;
use super::hash::{hash_keys_scalar, HashKind, Hashing, KNUTH, SEEDS};
use crate::simd::lanes::{LaneMask, Lanes};
use crate::simd::Kernels;

/// `h1`, `h2` and the table hash `t` of `keys` (see [`hash_keys_scalar`]) with the
/// kernels `k` holds.
#[inline]
pub(crate) fn hash_keys(
    k: Kernels,
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    let vectorized =
        hashing.kind.vectorized() && (hashing.reuses() || hashing.table_kind.vectorized());
    #[cfg(target_arch = "x86_64")]
    if vectorized && (k.avx512.is_some() || k.avx2.is_some()) {
        #[target_feature(enable = "avx2,popcnt")]
        unsafe fn avx2(h: &Hashing, keys: &[u64], h1: &mut [u32], h2: &mut [u32], t: &mut [u32]) {
            // SAFETY: this function's target features are `__m256i`'s.
            unsafe { hash_all::<__m256i>(h, keys, h1, h2, t) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
        unsafe fn avx512(h: &Hashing, keys: &[u64], h1: &mut [u32], h2: &mut [u32], t: &mut [u32]) {
            // SAFETY: this function's target features are `__m512i`'s.
            unsafe { hash_all::<__m512i>(h, keys, h1, h2, t) }
        }
        // SAFETY: the token proves the instruction set; every kind used is vectorized.
        unsafe {
            if k.avx512.is_some() {
                avx512(hashing, keys, h1, h2, t)
            } else {
                avx2(hashing, keys, h1, h2, t)
            }
        }
        return;
    }
    let _ = (k, vectorized);
    hash_keys_scalar(hashing, keys, h1, h2, t)
}

/// Sets bit `level` of `mask[i]` for each of the first `n` keys whose filter bits (double
/// hashing from `h1[i]`, `h2[i]`) are all set, with the kernels `k` holds.
#[inline]
pub(crate) fn filter_mask(
    k: Kernels,
    f: &Filter,
    h1: &[u32],
    h2: &[u32],
    n: usize,
    mask: &mut [u16],
    level: usize,
) {
    let (h1, h2, mask) = (&h1[..n], &h2[..n], &mut mask[..n]);
    #[cfg(target_arch = "x86_64")]
    if k.avx512.is_some() || k.avx2.is_some() {
        #[target_feature(enable = "avx2,popcnt")]
        unsafe fn avx2(f: &Filter, h1: &[u32], h2: &[u32], mask: &mut [u16], level: usize) {
            // SAFETY: this function's target features are `__m256i`'s.
            unsafe { probe_all::<__m256i>(f, h1, h2, mask, level) }
        }
        #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
        unsafe fn avx512(f: &Filter, h1: &[u32], h2: &[u32], mask: &mut [u16], level: usize) {
            // SAFETY: this function's target features are `__m512i`'s.
            unsafe { probe_all::<__m512i>(f, h1, h2, mask, level) }
        }
        // SAFETY: the token proves the instruction set; the slices have `n` elements.
        unsafe {
            if k.avx512.is_some() {
                avx512(f, h1, h2, mask, level)
            } else {
                avx2(f, h1, h2, mask, level)
            }
        }
        return;
    }
    let _ = k;
    for ((m, &a), &b) in mask.iter_mut().zip(h1).zip(h2) {
        *m |= (f.contains_km_all(a, b) as u16) << level;
    }
}

/// Lanes per vector at most (the padded tail's size).
const MAX_LANES: usize = 16;

/// [`hash_keys`] on `V`: whole vectors, then the tail in a zero-padded one.
///
/// # Safety
/// `V`'s instruction set; the outputs at least as long as `keys`; every kind used is
/// vectorized.
#[inline(always)]
unsafe fn hash_all<V: Lanes>(
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    let whole = keys.len() / V::LANES * V::LANES;
    // SAFETY: the caller's; `whole` keys and outputs.
    unsafe { hash_blocks::<V>(hashing, &keys[..whole], h1, h2, t) };
    let n = keys.len() - whole;
    if n > 0 {
        let mut k = [0u64; MAX_LANES];
        k[..n].copy_from_slice(&keys[whole..]);
        let mut o = [[0u32; MAX_LANES]; 3];
        let [a, b, c] = &mut o;
        // SAFETY: the caller's instruction set; one vector of keys and outputs.
        unsafe { hash_blocks::<V>(hashing, &k[..V::LANES], a, b, c) };
        h1[whole..keys.len()].copy_from_slice(&a[..n]);
        h2[whole..keys.len()].copy_from_slice(&b[..n]);
        t[whole..keys.len()].copy_from_slice(&c[..n]);
    }
}

/// # Safety
/// `V`'s instruction set; `keys.len()` a multiple of the lanes and the outputs at least
/// as long; every kind used is vectorized.
#[inline(always)]
unsafe fn hash_blocks<V: Lanes>(
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    debug_assert!(keys.len().is_multiple_of(V::LANES) && h1.len() >= keys.len());
    debug_assert!(h2.len() >= keys.len() && t.len() >= keys.len());
    let second = hashing.k > 1;
    let reuse = hashing.reuses();
    for (i, k) in keys.chunks_exact(V::LANES).enumerate() {
        let at = i * V::LANES;
        // SAFETY: the caller's instruction set; `k` holds a vector of keys, and `at +
        // V::LANES <= keys.len()` outputs of each kind.
        unsafe {
            let (lo, hi) = V::u64_halves(k.as_ptr());
            let v1 = hash::<V>(hashing.kind, lo, hi, 0);
            v1.store(h1.as_mut_ptr().add(at));
            if second {
                hash::<V>(hashing.kind, lo, hi, 1).store(h2.as_mut_ptr().add(at));
            }
            let vt = if reuse {
                v1
            } else {
                hash::<V>(hashing.table_kind, lo, hi, 0)
            };
            vt.store(t.as_mut_ptr().add(at));
        }
    }
}

/// The `i`-th function of `kind` on keys given as low and high words.
///
/// # Safety
/// `V`'s instruction set; `kind` is vectorized.
#[inline(always)]
unsafe fn hash<V: Lanes>(kind: HashKind, lo: V, hi: V, i: usize) -> V {
    // SAFETY: the caller's instruction set.
    unsafe {
        match kind {
            HashKind::H2 => h2(lo.xor(V::splat(SEEDS[i]))),
            HashKind::Murmur32 => fmix(block(V::splat(SEEDS[i]), lo).xor(V::splat(4))),
            HashKind::Murmur64 => {
                let h = block(V::splat(SEEDS[i]), lo);
                fmix(block(h, hi).xor(V::splat(8)))
            }
            HashKind::Knuth => lo.xor(hi).mul_lo(V::splat(KNUTH[i])),
            HashKind::CRand => unreachable!("C rand() is not vectorized"),
        }
    }
}

/// `x ^ (x >> S)`.
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
unsafe fn xorshift<V: Lanes, const S: i32>(x: V) -> V {
    // SAFETY: the caller's instruction set.
    unsafe { x.xor(x.shr::<S>()) }
}

/// H2 (Algorithm 3).
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
unsafe fn h2<V: Lanes>(x: V) -> V {
    // SAFETY: the caller's instruction set.
    unsafe {
        let c = V::splat(0x045d_9f3b);
        let x = xorshift::<V, 16>(x).mul_lo(c);
        let x = xorshift::<V, 16>(x).mul_lo(c);
        xorshift::<V, 16>(x)
    }
}

/// One 4-byte block of MurmurHash3_x86_32.
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
unsafe fn block<V: Lanes>(h: V, k: V) -> V {
    // SAFETY: the caller's instruction set.
    unsafe {
        let k = k.mul_lo(V::splat(0xcc9e_2d51)).rotl::<15, 17>();
        let k = k.mul_lo(V::splat(0x1b87_3593));
        let h = h.xor(k).rotl::<13, 19>();
        h.mul_lo(V::splat(5)).add(V::splat(0xe654_6b64))
    }
}

/// MurmurHash3's finalizer.
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
unsafe fn fmix<V: Lanes>(h: V) -> V {
    // SAFETY: the caller's instruction set.
    unsafe {
        let h = xorshift::<V, 16>(h).mul_lo(V::splat(0x85eb_ca6b));
        let h = xorshift::<V, 13>(h).mul_lo(V::splat(0xc2b2_ae35));
        xorshift::<V, 16>(h)
    }
}

/// [`filter_mask`] on `V`: whole vectors, then the tail in a zero-padded one.
///
/// # Safety
/// `V`'s instruction set; the slices have the same length.
#[inline(always)]
unsafe fn probe_all<V: Lanes>(f: &Filter, h1: &[u32], h2: &[u32], mask: &mut [u16], level: usize) {
    let n = h1.len();
    let whole = n / V::LANES * V::LANES;
    // SAFETY: the caller's; `whole` elements of each.
    unsafe { probe_blocks::<V>(f, &h1[..whole], &h2[..whole], &mut mask[..whole], level) };
    if whole < n {
        let (mut a, mut b, mut m) = ([0u32; MAX_LANES], [0u32; MAX_LANES], [0u16; MAX_LANES]);
        a[..n - whole].copy_from_slice(&h1[whole..]);
        b[..n - whole].copy_from_slice(&h2[whole..]);
        // SAFETY: the caller's instruction set; one vector of each.
        unsafe { probe_blocks::<V>(f, &a[..V::LANES], &b[..V::LANES], &mut m[..V::LANES], level) };
        for (o, &x) in mask[whole..].iter_mut().zip(&m) {
            *o |= x;
        }
    }
}

/// # Safety
/// `V`'s instruction set; the slices have the same length, a multiple of the lanes.
#[inline(always)]
unsafe fn probe_blocks<V: Lanes>(
    f: &Filter,
    h1: &[u32],
    h2: &[u32],
    mask: &mut [u16],
    level: usize,
) {
    debug_assert!(h1.len().is_multiple_of(V::LANES));
    debug_assert!(h2.len() == h1.len() && mask.len() == h1.len());
    let g = f.magic;
    let words = f.words_ptr() as *const u8;
    let blocks = h1.chunks_exact(V::LANES).zip(h2.chunks_exact(V::LANES));
    for ((a, b), out) in blocks.zip(mask.chunks_exact_mut(V::LANES)) {
        // SAFETY: the caller's instruction set; `a` and `b` hold a vector each. Every
        // position is reduced below `m`, so every word index `p / 32` is below ⌈m/32⌉,
        // committed at creation; the words are switch words the writer changes with
        // atomic read-modify-writes, and each gathered element is one aligned 32-bit
        // read (as DXR's gathers of its lookup table). The keys already out are not
        // gathered.
        let bits = unsafe {
            let (d, m, low5) = (V::splat(g.d), V::splat(g.m), V::splat(31));
            let (mut pos, step) = (V::load(a.as_ptr()), V::load(b.as_ptr()));
            // The sign bit of a lane: its key is still in (every bit probed so far set).
            let mut acc = V::splat(!0);
            for _ in 0..f.k() {
                // p = pos mod m (Granlund–Montgomery): t = mulhi(pos, m).
                let t = pos.mul_hi(m);
                let q = t.add(pos.sub(t).shr_by(g.sh1)).shr_by(g.sh2);
                let p = pos.sub(q.mul_lo(d));
                let w = V::zero().gather_masked::<4>(words, p.shr::<5>(), acc.sign());
                // Bit `p mod 32` of the word to the sign bit: a left shift by `31 − p mod
                // 32`, which is `31 & !p`.
                acc = acc.and(w.shl_var(low5.and_not(p)));
                pos = pos.add(step);
            }
            acc.sign().bits()
        };
        for (j, o) in out.iter_mut().enumerate() {
            *o |= ((bits >> j & 1) as u16) << level;
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use crate::simd::{Avx2, Avx512};

    /// The instances this CPU runs, one at a time.
    fn instances() -> Vec<Kernels> {
        let mut k = Vec::new();
        if let Some(t) = Avx512::detect() {
            k.push(Kernels {
                avx512: Some(t),
                ..Kernels::default()
            });
        }
        if let Some(t) = Avx2::detect() {
            k.push(Kernels {
                avx2: Some(t),
                ..Kernels::default()
            });
        }
        if k.is_empty() {
            eprintln!("note: no AVX2 on this CPU; the kernels are not checked");
        }
        k
    }

    #[test]
    fn filter_probes_match_the_scalar_twin() {
        let mut rng = SplitMix64::new(12);
        for k in instances() {
            for (m, fk) in [
                (64u64, 1u32),
                (1000, 2),
                (1 << 20, 4),
                (2_434_631, 7),
                (33, 3),
            ] {
                let f = Filter::new(m.max(64), fk).unwrap();
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
                for n in [0usize, 5, 8, 13, 15, 16, 17, 40, 64] {
                    let h1: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
                    let mut h2: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
                    if n > 1 {
                        h2[0] = 0;
                        h2[1] = u32::MAX;
                    }
                    let mut v = vec![0u16; n];
                    filter_mask(k, &f, &h1, &h2, n, &mut v, 3);
                    let s: Vec<u16> = (0..n)
                        .map(|i| (f.contains_km_all(h1[i], h2[i]) as u16) << 3)
                        .collect();
                    assert_eq!(v, s, "{k:?}: m {m}, k {fk}, n {n}");
                }
            }
        }
    }

    #[test]
    fn kernels_match_the_scalar_twin() {
        let mut rng = SplitMix64::new(11);
        for simd in instances() {
            for n in [0usize, 1, 7, 8, 9, 15, 16, 17, 31, 32, 63, 64, 100] {
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
                        hash_keys(simd, &hashing, &keys, a, b, c);
                        let [a, b, c] = &mut s;
                        hash_keys_scalar(&hashing, &keys, a, b, c);
                        assert_eq!(v, s, "{simd:?}: {kind} / {table_kind}, n = {n}");
                    }
                }
            }
        }
    }
}

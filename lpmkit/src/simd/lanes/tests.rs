//! Every operation of [`Lanes`] and [`LaneMask`], on both widths the CPU has, against a
//! scalar model of its lanes: random lanes mixed with the edge values (0, 1, the sign bit,
//! all ones). Miri runs them (`miri_` names) on the operations whose intrinsics it
//! executes.

use core::arch::x86_64::{__m256i, __m512i};

use super::{LaneMask, Lanes};
use crate::rng::SplitMix64;
use crate::simd::{Avx2, Avx512};

/// Inputs per operation (fewer under Miri, which interprets every lane).
const ROUNDS: usize = if cfg!(miri) { 3 } else { 200 };

/// The lanes of `v`.
fn get<V: Lanes>(v: V) -> Vec<u32> {
    let mut o = vec![0u32; V::LANES];
    // SAFETY: the width's instruction set (checked by the callers); `o` holds the lanes.
    unsafe { v.store(o.as_mut_ptr()) };
    o
}

/// A vector of the lanes `x`.
fn put<V: Lanes>(x: &[u32]) -> V {
    assert_eq!(x.len(), V::LANES);
    // SAFETY: as `get`; `x` holds the lanes.
    unsafe { V::load(x.as_ptr()) }
}

/// The lanes of a mask as booleans.
fn set<V: Lanes>(m: V::Mask) -> Vec<bool> {
    // SAFETY: as `get`.
    let b = unsafe { m.bits() };
    assert_eq!(b >> V::LANES, 0, "bits past the lanes");
    (0..V::LANES).map(|i| b >> i & 1 != 0).collect()
}

/// A mask of the lanes `x`.
fn mask_of<V: Lanes>(x: &[bool]) -> V::Mask {
    let ones: Vec<u32> = x.iter().map(|&b| if b { 1 } else { 0 }).collect();
    // SAFETY: as `get`.
    unsafe { put::<V>(&ones).nonzero() }
}

/// Random lanes, one in four an edge value.
fn random(rng: &mut SplitMix64, n: usize) -> Vec<u32> {
    const EDGES: [u32; 5] = [0, 1, 0x8000_0000, 0x7fff_ffff, u32::MAX];
    (0..n)
        .map(|_| {
            let r = rng.next();
            if r.is_multiple_of(4) {
                EDGES[(r >> 8) as usize % EDGES.len()]
            } else {
                (r >> 32) as u32
            }
        })
        .collect()
}

/// `f` applied lane by lane.
fn each(a: &[u32], b: &[u32], f: impl Fn(u32, u32) -> u32) -> Vec<u32> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

/// `f` lane by lane, as predicates.
fn pred(a: &[u32], b: &[u32], f: impl Fn(u32, u32) -> bool) -> Vec<bool> {
    a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
}

/// Making vectors, the masks, arithmetic, logic, shifts, compares and selection: register
/// operations only (Miri executes them on both widths).
fn registers<V: Lanes>(seed: u64) {
    let n = V::LANES;
    let mut rng = SplitMix64::new(seed);
    // SAFETY (every block of this function): the width's instruction set, which the
    // caller checked.
    unsafe {
        assert_eq!(get(V::splat(7)), vec![7; n]);
        assert_eq!(get(V::zero()), vec![0; n]);
        assert_eq!(get(V::iota()), (0..n as u32).collect::<Vec<_>>());
        assert_eq!(
            get(V::from_fn(|i| 3 * i as u32 + 1)),
            (0..n as u32).map(|i| 3 * i + 1).collect::<Vec<_>>()
        );
        for k in 0..=n {
            let first = set::<V>(V::Mask::first(k));
            assert_eq!(first, (0..n).map(|i| i < k).collect::<Vec<_>>());
            assert_eq!(V::Mask::first(k).count(), k as u32);
            assert_eq!(V::Mask::first(k).any(), k > 0);
        }
        assert_eq!(set::<V>(V::Mask::all()), vec![true; n]);
    }
    for _ in 0..ROUNDS {
        let (a, b) = (random(&mut rng, n), random(&mut rng, n));
        let (va, vb) = (put::<V>(&a), put::<V>(&b));
        let counts: Vec<u32> = (0..n).map(|_| (rng.next() % 40) as u32).collect();
        let s = (rng.next() % 40) as u32;
        // SAFETY: as above.
        unsafe {
            assert_eq!(get(va.add(vb)), each(&a, &b, u32::wrapping_add));
            assert_eq!(get(va.sub(vb)), each(&a, &b, u32::wrapping_sub));
            assert_eq!(get(va.mul_lo(vb)), each(&a, &b, u32::wrapping_mul));
            let hi = |x: u32, y: u32| ((x as u64 * y as u64) >> 32) as u32;
            assert_eq!(get(va.mul_hi(vb)), each(&a, &b, hi));
            assert_eq!(get(va.and(vb)), each(&a, &b, |x, y| x & y));
            assert_eq!(get(va.or(vb)), each(&a, &b, |x, y| x | y));
            assert_eq!(get(va.xor(vb)), each(&a, &b, |x, y| x ^ y));
            assert_eq!(get(va.and_not(vb)), each(&a, &b, |x, y| x & !y));

            assert_eq!(get(va.shr::<0>()), a);
            assert_eq!(get(va.shr::<8>()), each(&a, &a, |x, _| x >> 8));
            assert_eq!(get(va.shr::<31>()), each(&a, &a, |x, _| x >> 31));
            assert_eq!(get(va.shl::<8>()), each(&a, &a, |x, _| x << 8));
            assert_eq!(get(va.shl::<31>()), each(&a, &a, |x, _| x << 31));
            let by = |x: u32, c: u32| x.checked_shr(c).unwrap_or(0);
            assert_eq!(get(va.shr_by(s)), each(&a, &a, |x, _| by(x, s)));
            let shl = |x: u32, c: u32| x.checked_shl(c).unwrap_or(0);
            assert_eq!(get(va.shl_by(s)), each(&a, &a, |x, _| shl(x, s)));
            assert_eq!(get(va.shr_var(put(&counts))), each(&a, &counts, by));
            assert_eq!(get(va.shl_var(put(&counts))), each(&a, &counts, shl));
            assert_eq!(
                get(va.rotl::<13, 19>()),
                each(&a, &a, |x, _| x.rotate_left(13))
            );
            assert_eq!(
                get(va.rotl::<1, 31>()),
                each(&a, &a, |x, _| x.rotate_left(1))
            );

            // Control bytes: some with the top bit set (zero), the others any index.
            let ctl = random(&mut rng, n);
            let model: Vec<u32> = (0..n)
                .map(|i| {
                    let group = i / 4 * 4;
                    (0..4).fold(0, |w, byte| {
                        let c = (ctl[i] >> (8 * byte)) as u8;
                        let v = if c & 0x80 != 0 {
                            0
                        } else {
                            let j = (c & 15) as usize;
                            (a[group + j / 4] >> (8 * (j % 4))) as u8
                        };
                        w | (v as u32) << (8 * byte)
                    })
                })
                .collect();
            assert_eq!(get(va.shuffle_bytes(put(&ctl))), model);

            assert_eq!(
                set::<V>(va.gt_i32(vb)),
                pred(&a, &b, |x, y| x as i32 > y as i32)
            );
            assert_eq!(set::<V>(va.ge_u32(vb)), pred(&a, &b, |x, y| x >= y));
            assert_eq!(set::<V>(va.ge_u32(va)), vec![true; n]);
            assert_eq!(set::<V>(va.test(vb)), pred(&a, &b, |x, y| x & y != 0));
            assert_eq!(set::<V>(va.sign()), pred(&a, &a, |x, _| x >> 31 != 0));
            assert_eq!(set::<V>(va.nonzero()), pred(&a, &a, |x, _| x != 0));
            assert_eq!(va.any_nonzero(), a.iter().any(|&x| x != 0));
            assert!(!V::zero().any_nonzero());
            let last: Vec<u32> = (0..n).map(|i| (i + 1 == n) as u32).collect();
            assert!(put::<V>(&last).any_nonzero());

            let mb: Vec<bool> = (0..n).map(|_| rng.next().is_multiple_of(2)).collect();
            let mc: Vec<bool> = (0..n).map(|_| rng.next().is_multiple_of(3)).collect();
            let (m, mm) = (mask_of::<V>(&mb), mask_of::<V>(&mc));
            let pick = |t: &[u32], f: &[u32]| -> Vec<u32> {
                (0..n).map(|i| if mb[i] { t[i] } else { f[i] }).collect()
            };
            assert_eq!(get(V::select(m, va, vb)), pick(&a, &b));
            assert_eq!(get(va.keep(m)), pick(&a, &vec![0; n]));
            assert_eq!(get(va.clear(m)), pick(&vec![0; n], &a));
            let both = |f: fn(bool, bool) -> bool| -> Vec<bool> {
                (0..n).map(|i| f(mb[i], mc[i])).collect()
            };
            assert_eq!(set::<V>(m.and(mm)), both(|x, y| x && y));
            assert_eq!(m.count() as usize, mb.iter().filter(|&&x| x).count());
            assert_eq!(m.any(), mb.contains(&true));

            let packed: Vec<u32> = (0..n).filter(|&i| mb[i]).map(|i| a[i]).collect();
            let p = V::packer(m);
            assert_eq!(get(va.pack(p))[..packed.len()], packed[..]);
            // One packer serves several vectors.
            let packed_b: Vec<u32> = (0..n).filter(|&i| mb[i]).map(|i| b[i]).collect();
            assert_eq!(get(vb.pack(p))[..packed_b.len()], packed_b[..]);

            // 64-bit lanes.
            let wide = |x: &[u32]| -> Vec<i64> {
                x.chunks(2)
                    .map(|c| (c[0] as u64 | (c[1] as u64) << 32) as i64)
                    .collect()
            };
            let (wa, wb) = (wide(&a), wide(&b));
            let lt = (0..n / 2).fold(0, |m, j| m | ((wa[j] < wb[j]) as u32) << j);
            assert_eq!(va.lt_i64_bits(vb), lt);
            let x = rng.next();
            assert_eq!(wide(&get(V::splat_u64(x))), vec![x as i64; n / 2]);
        }
    }
}

/// Loads, stores, gathers, scatters, prefetches and the keys wider than a lane.
fn memory<V: Lanes>(seed: u64) {
    let n = V::LANES;
    let mut rng = SplitMix64::new(seed);
    let table = random(&mut rng, 300);
    for _ in 0..ROUNDS {
        let a = random(&mut rng, n);
        let k = (rng.next() % (n as u64 + 1)) as usize;
        let mb: Vec<bool> = (0..n).map(|_| rng.next().is_multiple_of(2)).collect();
        let m = mask_of::<V>(&mb);
        let idx: Vec<u32> = (0..n).map(|_| (rng.next() % 290) as u32).collect();
        // SAFETY (the whole block): the width's instruction set, which the caller checked;
        // every access is inside the arrays it names (the masked ones read or write only
        // the lanes of their masks: `exact` holds only those).
        unsafe {
            let exact = a[..k].to_vec();
            let got = get(V::load_masked(exact.as_ptr(), V::Mask::first(k)));
            assert_eq!(
                got,
                (0..n)
                    .map(|i| if i < k { a[i] } else { 0 })
                    .collect::<Vec<_>>()
            );
            let mut out = vec![9u32; k];
            put::<V>(&a).store_masked(out.as_mut_ptr(), V::Mask::first(k));
            assert_eq!(out, exact);
            let mut out = vec![9u32; n];
            put::<V>(&a).store_masked(out.as_mut_ptr(), m);
            assert_eq!(
                out,
                (0..n)
                    .map(|i| if mb[i] { a[i] } else { 9 })
                    .collect::<Vec<_>>()
            );

            let base = table.as_ptr() as *const u8;
            let vi = put::<V>(&idx);
            let words: Vec<u32> = idx.iter().map(|&i| table[i as usize]).collect();
            assert_eq!(get(V::gather::<4>(base, vi)), words);
            let halves: Vec<u32> = idx
                .iter()
                .map(|&i| (base.add(2 * i as usize) as *const u32).read_unaligned())
                .collect();
            assert_eq!(get(V::gather::<2>(base, vi)), halves);
            let src = put::<V>(&a);
            let merged: Vec<u32> = (0..n)
                .map(|i| if mb[i] { words[i] } else { a[i] })
                .collect();
            assert_eq!(get(src.gather_masked::<4>(base, vi, m)), merged);

            let mut model = vec![0u32; 300];
            let mut out = model.clone();
            for i in (0..n).filter(|&i| mb[i]) {
                model[idx[i] as usize] = a[i];
            }
            put::<V>(&a).scatter(out.as_mut_ptr(), vi, m);
            assert_eq!(out, model);

            for k in [0, 1, n / 2, n] {
                vi.prefetch_lanes(table.as_ptr(), k);
            }
        }
        // Keys of 128 and 64 bits.
        let keys: Vec<u128> = (0..n)
            .map(|_| (rng.next() as u128) << 64 | rng.next() as u128)
            .collect();
        let k = (rng.next() % (n as u64 + 1)) as usize;
        for w in 0..4 {
            let want: Vec<u32> = keys.iter().map(|&x| (x >> (32 * w)) as u32).collect();
            // SAFETY: as above; `exact` holds the `k` keys `u128_dword_first` reads.
            unsafe {
                let v = V::u128_dword(keys.as_ptr(), w);
                assert_eq!(get(v.in_key_order()), want, "dword {w}");
                if V::U128_IN_ORDER {
                    assert_eq!(get(v), want);
                }
                let exact = keys[..k].to_vec();
                let v = V::u128_dword_first(exact.as_ptr(), w, k);
                let first: Vec<u32> = (0..n).map(|i| if i < k { want[i] } else { 0 }).collect();
                assert_eq!(get(v.in_key_order()), first, "dword {w} of {k} keys");
            }
        }
        let keys: Vec<u64> = keys.iter().map(|&x| x as u64).collect();
        // SAFETY: as above.
        let (lo, hi) = unsafe { V::u64_halves(keys.as_ptr()) };
        assert_eq!(get(lo), keys.iter().map(|&x| x as u32).collect::<Vec<_>>());
        assert_eq!(
            get(hi),
            keys.iter().map(|&x| (x >> 32) as u32).collect::<Vec<_>>()
        );
    }
}

#[test]
fn miri_lanes_avx2_match_their_scalar_model() {
    let Some(_) = Avx2::detect() else {
        eprintln!("note: no AVX2 on this CPU; the AVX2 lanes are not checked");
        return;
    };
    registers::<__m256i>(1);
    memory::<__m256i>(2);
}

#[test]
fn miri_lanes_avx512_match_their_scalar_model() {
    let Some(_) = Avx512::detect() else {
        eprintln!("note: no AVX-512 on this CPU; the AVX-512 lanes are not checked");
        return;
    };
    registers::<__m512i>(3);
    // Miri does not execute AVX-512 gathers, scatters and two-source permutes.
    if !cfg!(miri) {
        memory::<__m512i>(4);
    }
}

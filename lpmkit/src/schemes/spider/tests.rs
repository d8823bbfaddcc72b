//! Unit tests: the paper's examples, the table's structure, layouts, every kernel shape.

use super::codec::{Codec, Compact16};
use super::*;
use crate::prefix::Prefix;
use crate::rng::SplitMix64;
use crate::test_support::{nh, rib};
use crate::BuildOptions;

/// Keys at every prefix boundary (first, last, ±1) plus the ends of the address space.
fn boundary_keys<A: Address>(rib: &Rib<A>) -> Vec<A> {
    let mut keys = vec![
        A::ZERO,
        A::MAX,
        A::from_u128(1),
        A::MAX.checked_dec().unwrap(),
    ];
    for (p, _) in rib.iter() {
        for a in [p.first(), p.last()] {
            keys.push(a);
            keys.extend(a.checked_inc());
            keys.extend(a.checked_dec());
        }
    }
    keys
}

/// Every layout that holds `rib`, every ISA path the CPU has (AVX-512 and AVX2:
/// lane-refilling, pipelined, the paper's loop; scalar), and the given ways.
fn configs<A: Address>(rib: &Rib<A>, ways: &[usize]) -> Vec<SpiderConfig> {
    let mut v = vec![];
    for layout in ElementLayout::ALL {
        for &w in ways {
            for isa in crate::simd::test_levels() {
                let shapes: &[(bool, Option<bool>)] = if isa == crate::simd::Isa::Scalar {
                    &[(true, None)]
                } else {
                    &[
                        (true, Some(true)),
                        (true, Some(false)),
                        (false, Some(false)),
                    ]
                };
                for &(pipeline, refill) in shapes {
                    let cfg = SpiderConfig {
                        ways: w,
                        force_scalar: false,
                        isa: Some(isa),
                        layout: Some(layout),
                        pipeline,
                        refill,
                    };
                    if Spider::build(rib, &cfg).is_ok() {
                        v.push(cfg);
                    }
                }
            }
        }
    }
    v
}

fn check_keys<A: Address>(fib: &dyn Fib<A>, rib: &Rib<A>, keys: &[A], what: &str) {
    let mut out = vec![u32::MAX; keys.len()];
    fib.lookup_batch(keys, &mut out);
    for (&k, &o) in keys.iter().zip(&out) {
        let want = NextHop::raw(rib.lookup(k));
        assert_eq!(NextHop::raw(fib.lookup(k)), want, "{what}: lookup {k:x}");
        assert_eq!(o, want, "{what}: lookup_batch {k:x}");
    }
}

fn check_all<A: Address>(rib: &Rib<A>, ways: &[usize])
where
    Spider<A>: Fib<A>,
{
    let keys = boundary_keys(rib);
    for cfg in configs(rib, ways) {
        let fib = Spider::build(rib, &cfg).unwrap();
        check_keys(&fib, rib, &keys, &format!("{cfg:?}"));
    }
}

#[test]
fn fig4_example() {
    // Fig. 4: 10.64.128.192/26 via .1, 192.168.0.0/16 via .2, 192.168.64.0/24 via .3.
    let r = rib::<Ipv4>(&[
        ("10.64.128.192/26", 1),
        ("192.168.0.0/16", 2),
        ("192.168.64.0/24", 3),
    ]);
    let fib = Spider::build(&r, &SpiderConfig::default()).unwrap();
    assert_eq!(fib.lookup(0xc0a8_4001), Some(nh(3)), "192.168.64.1");
    assert_eq!(fib.lookup(0xc0a8_4101), Some(nh(2)), "192.168.65.1");
    assert_eq!(fib.lookup(0x0a40_80c8), Some(nh(1)), "10.64.128.200");
    assert_eq!(fib.lookup(0x0a40_80bf), None, "10.64.128.191");
    // Rows: one for 10.64 and one for 192.168 (third octet), one for 10.64.128 (fourth).
    assert_eq!(fib.rows_per_level(), &[2, 1]);
    assert_eq!(fib.rows(), 1 + 256 + 3);
    check_all(&r, &[1, 3, 8, 16]);
}

#[test]
fn fig5_aggregation() {
    // Fig. 5: the node for 192.168.10.0/24 is omitted (its /32 has the /16's next hop) and
    // the node for 192.168.64.0/24 collapses (all 256 /32s share one next hop).
    let mut routes = vec![
        ("10.64.128.192/26".to_string(), 1),
        ("192.168.0.0/16".to_string(), 2),
        ("192.168.10.10/32".to_string(), 2),
    ];
    for i in 0..256 {
        routes.push((format!("192.168.64.{i}/32"), 3));
    }
    let r: Rib<Ipv4> = routes
        .iter()
        .map(|(p, h)| (p.parse().unwrap(), nh(*h)))
        .collect();
    let fib = Spider::build(&r, &SpiderConfig::default()).unwrap();
    assert_eq!(fib.trie_nodes_per_level(), &[2, 3]);
    assert_eq!(fib.rows_per_level(), &[2, 1]);
    assert_eq!(
        fib.stats().get("aggregated_away"),
        Some(&StatValue::Count(2))
    );
    // The 192.168 row holds the collapsed node's next hop in element 64.
    let Elems::Compact16(t) = &fib.table.elems else {
        panic!("small tables use compact elements")
    };
    let split = fib.table.split;
    let dp = t.as_slice()[DP_FIRST_ROW * ROW + 0xc0a8];
    let (row, _) = Compact16::decode(dp, split);
    assert!(row >= FIRST_STRIDE_ROW * ROW);
    assert_eq!(Compact16::decode(t.as_slice()[row + 64], split), (0, 3));
    assert_eq!(Compact16::decode(t.as_slice()[row + 10], split), (0, 2));
    check_all(&r, &[16]);
}

#[test]
fn table_structure() {
    let r = rib::<Ipv4>(&[("0.0.0.0/0", 5), ("10.1.2.0/23", 6), ("10.1.2.128/25", 7)]);
    for layout in ElementLayout::ALL {
        let cfg = SpiderConfig {
            layout: Some(layout),
            ..Default::default()
        };
        let fib = Spider::build(&r, &cfg).unwrap();
        assert_eq!(fib.layout(), layout);
        let split = fib.table.split;
        with_table!(fib.table, |t, C| {
            let s = t.as_slice();
            let dec = |e| C::decode(e, split);
            assert_eq!(s.len(), fib.rows() * ROW);
            // Row 0 is End-of-Lookup: all zero, decoding to "row 0, keep the result".
            assert!(s[..ROW].iter().all(|&e| dec(e) == (0, 0)));
            // The direct pointing table: /0 everywhere but 10.1, which points to a row.
            assert_eq!(dec(s[ROW]), (0, 5));
            let (row, _) = dec(s[ROW + 0x0a01]);
            assert_eq!(row, FIRST_STRIDE_ROW * ROW);
            assert_eq!(dec(s[row + 1]), (0, 5));
            assert_eq!(dec(s[row + 3]), (0, 6));
            assert_eq!(dec(s[row + 4]), (0, 5));
            let (row2, _) = dec(s[row + 2]);
            assert_eq!(dec(s[row2 + 0x7f]), (0, 6));
            assert_eq!(dec(s[row2 + 0x80]), (0, 7));
            assert_eq!(row2, (FIRST_STRIDE_ROW + 1) * ROW);
        });
        assert_eq!(fib.rows_per_level(), &[1, 1]);
    }
}

#[test]
fn empty_default_and_host_routes() {
    check_all(&Rib::<Ipv4>::new(), &[1, 8, 16]);
    check_all(&Rib::<Ipv6>::new(), &[1, 8, 16]);
    let r4 = rib::<Ipv4>(&[
        ("0.0.0.0/0", 1),
        ("0.0.0.0/32", 2),
        ("255.255.255.255/32", 3),
        ("128.0.0.0/1", 4),
        ("10.0.0.1/32", 1),
    ]);
    check_all(&r4, &[1, 5, 8, 13, 16]);
    let r6 = rib::<Ipv6>(&[
        ("::/0", 1),
        ("::/128", 2),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 3),
        ("2001:db8::/32", 4),
        ("2001:db8:1:2:3:4:5:6/127", 5),
        ("2001:db8:0:1::/64", 6),
    ]);
    check_all(&r6, &[1, 5, 8, 13, 16]);
}

#[test]
fn layouts_widen_and_refuse() {
    // Next hops up to 65,535 fit the 16-bit layouts.
    let mut r = rib::<Ipv4>(&[("10.0.0.0/8", 40_000)]);
    let fib = Spider::build(&r, &SpiderConfig::default()).unwrap();
    assert_eq!(fib.layout(), ElementLayout::Compact16);
    r.insert("11.0.0.0/8".parse().unwrap(), nh(70_000));
    let fib = Spider::build(&r, &SpiderConfig::default()).unwrap();
    assert_eq!(fib.layout(), ElementLayout::Wide32);
    check_all(&r, &[16]);
    for forced in [ElementLayout::Compact16, ElementLayout::Paper32] {
        let err = Spider::build(
            &r,
            &SpiderConfig {
                layout: Some(forced),
                ..Default::default()
            },
        )
        .err()
        .unwrap();
        assert!(
            matches!(
                err,
                BuildError::NextHopOverflow {
                    max: 65535,
                    requested: 70000,
                    ..
                }
            ),
            "{err}"
        );
    }
    r.insert("12.0.0.0/8".parse().unwrap(), nh(1 << 31));
    assert!(matches!(
        Spider::build(&r, &SpiderConfig::default()),
        Err(BuildError::NextHopOverflow { .. })
    ));
}

#[test]
fn rows_widen_the_layout() {
    // 40,000 /24s, each in its own /16 block: 40,000 rows. With next hops up to 30,000,
    // next hops + rows exceed the 16-bit value space, so the paper's element is used.
    let mut r = Rib::<Ipv4>::new();
    for i in 0..40_000u32 {
        let a = (i / 256 + 1) << 24 | (i % 256) << 16 | 0x0100;
        r.insert(Prefix::new(a, 24).unwrap(), nh(1 + i % 30_000));
    }
    let fib = Spider::build(&r, &SpiderConfig::default()).unwrap();
    assert_eq!(fib.stride_rows(), 40_000);
    assert_eq!(fib.layout(), ElementLayout::Paper32);
    let err = Spider::build(
        &r,
        &SpiderConfig {
            layout: Some(ElementLayout::Compact16),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            err,
            BuildError::CapacityExceeded {
                max: 65535,
                requested: 70_000,
                ..
            }
        ),
        "{err}"
    );
    check_all(&r, &[16, 7]);
    // 70,000 /25s in distinct /24s: more than 65,535 rows, so the wide element.
    let mut r = Rib::<Ipv4>::new();
    for i in 0..70_000u32 {
        r.insert(
            Prefix::new(0x0100_0000 + (i << 8), 25).unwrap(),
            nh(1 + i % 7),
        );
    }
    let fib = Spider::build(&r, &SpiderConfig::default()).unwrap();
    assert_eq!(fib.rows_per_level(), &[274, 70_000]);
    assert_eq!(fib.layout(), ElementLayout::Wide32);
    let err = Spider::build(&r, &SpiderConfig::paper()).err().unwrap();
    assert!(
        matches!(
            err,
            BuildError::CapacityExceeded {
                max: 65535,
                requested: 70_530,
                ..
            }
        ),
        "{err}"
    );
    check_all(&r, &[16, 1]);
}

#[test]
fn bad_ways() {
    for w in [0, 17] {
        let cfg = SpiderConfig {
            ways: w,
            ..Default::default()
        };
        assert!(matches!(
            Spider::build(&Rib::<Ipv4>::new(), &cfg),
            Err(BuildError::InvalidConfig { .. })
        ));
    }
}

/// Random prefixes clustered so they nest, with few next hops so aggregation happens.
fn random_rib<A: Address>(seed: u64, n: usize) -> Rib<A> {
    let mut rng = SplitMix64::new(seed);
    let mut r = Rib::new();
    let hubs: Vec<A> = (0..8).map(|_| A::from_u128(rng.next_u128())).collect();
    for _ in 0..n {
        let hub = hubs[rng.below(hubs.len() as u64) as usize];
        let len = rng.below(A::BITS as u64 + 1) as u8;
        // Flip a few random low bits of the hub so prefixes share long stems.
        let noise = A::from_u128(rng.next_u128() >> rng.below(128) as u32);
        let addr = A::from_u128(hub.to_u128() ^ noise.to_u128());
        r.insert(
            Prefix::new_truncating(addr, len),
            nh(1 + rng.below(4) as u32),
        );
    }
    r
}

#[test]
fn random_tables_every_shape() {
    let ways: Vec<usize> = (1..=16).collect();
    for seed in 0..4 {
        let r4 = random_rib::<Ipv4>(seed, 300);
        check_all(&r4, &ways);
        let r6 = random_rib::<Ipv6>(seed, 300);
        check_all(&r6, &ways);
    }
}

#[test]
fn batch_lengths_and_registry() {
    let r = random_rib::<Ipv6>(9, 200);
    let mut keys = boundary_keys(&r);
    keys.truncate(70);
    for info in
        crate::registry::schemes_for(crate::Family::V6).filter(|s| s.name.starts_with("spider"))
    {
        for ways in [None, Some(5), Some(12)] {
            let opts = BuildOptions {
                ways,
                ..Default::default()
            };
            let fib = info.build(&r, &opts).unwrap();
            for n in 0..=keys.len() {
                check_keys(fib.as_ref(), &r, &keys[..n], info.name);
            }
        }
    }
}

#[test]
fn names_and_stats() {
    let r = random_rib::<Ipv4>(3, 100);
    let fib = Spider::build(&r, &SpiderConfig::w8()).unwrap();
    assert_eq!(fib.name(), "spider8w");
    let s = fib.stats();
    assert_eq!(s.get("ways"), Some(&StatValue::Count(8)));
    assert_eq!(s.get("layout"), Some(&StatValue::Text("compact16".into())));
    assert_eq!(s.get("rows"), Some(&StatValue::Count(fib.rows() as u64)));
    assert!(fib.memory_bytes() >= fib.rows() * ROW * 2);
    let w1 = Spider::build(&r, &SpiderConfig::w1()).unwrap();
    assert_eq!(w1.implementation(), Implementation::Scalar);
}

#[test]
fn lockstep_kernels_pipelined_and_interleaved() {
    // Small tables have no cold level, so the lockstep kernels interleave two blocks;
    // force every level cold as well to run the pipelined kernel's ring, prefetches and
    // refills on deep random tables, and run the refilling kernel's passes both ways
    // whatever the table's shares. Every SIMD level the CPU has (AVX-512 serves 16 ways).
    let levels: Vec<_> = crate::simd::test_levels()
        .into_iter()
        .filter(|&i| i > crate::simd::Isa::Scalar)
        .collect();
    for seed in 0..3 {
        let r4 = random_rib::<Ipv4>(seed, 400);
        let r6 = random_rib::<Ipv6>(seed, 400);
        let (k4, k6) = (boundary_keys(&r4), boundary_keys(&r6));
        for layout in ElementLayout::ALL {
            for (isa, ways, refill) in levels.iter().flat_map(|&isa| {
                (1..=16)
                    .map(move |w| (isa, w, Some(false)))
                    .chain([(isa, 8, Some(true)), (isa, 16, Some(true))])
            }) {
                let cfg = SpiderConfig {
                    ways,
                    isa: Some(isa),
                    layout: Some(layout),
                    refill,
                    ..SpiderConfig::w16()
                };
                // Pipelined with the refilling kernel's passes all scalar, all vector,
                // alternating (a scalar pass after a vector one and the other way round:
                // a vector pass packs no key words for a scalar pass); interleaved.
                for (cold, scalar_passes) in [
                    (u32::MAX, u32::MAX),
                    (u32::MAX, 0),
                    (u32::MAX, 0x5555_5555),
                    (u32::MAX, 0xaaaa_aaaa),
                    (0, 0),
                ] {
                    let what = format!("cold {cold:#x}, scalar passes {scalar_passes:#x}, {cfg:?}");
                    let mut f4 = Spider::build(&r4, &cfg).unwrap();
                    f4.params.cold_octets = cold;
                    f4.params.scalar_passes = scalar_passes;
                    check_keys(&f4, &r4, &k4, &format!("v4 {what}"));
                    let mut f6 = Spider::build(&r6, &cfg).unwrap();
                    f6.params.cold_octets = cold;
                    f6.params.scalar_passes = scalar_passes;
                    check_keys(&f6, &r6, &k6, &format!("v6 {what}"));
                }
            }
        }
    }
}

/// Whether every address of `block` has the same answer in `rib`.
fn constant_over<A: Address>(rib: &Rib<A>, block: &Prefix<A>) -> bool {
    let mut ranges = 0;
    rib.for_each_range_in(block, |_, _, _| ranges += 1);
    ranges == 1
}

/// The depth of a lookup (elements read after the direct pointing element), derived from
/// the Rib alone: aggregation is exact, so the lookup reads an element at octet `o`
/// (`o` ≥ 3) exactly when the answer is not constant over the key's block of its first
/// `8 · (o − 1)` bits.
fn expected_depth<A: Address>(rib: &Rib<A>, key: A) -> usize {
    (16..A::BITS)
        .step_by(8)
        .take_while(|&len| !constant_over(rib, &Prefix::new_truncating(key, len)))
        .count()
}

#[test]
fn depth_histogram_follows_aggregation() {
    fn check<A: Address>(rib: &Rib<A>, keys: &[A])
    where
        Spider<A>: Fib<A>,
    {
        let fib = Spider::build(rib, &SpiderConfig::w16()).unwrap();
        let mut want = vec![0u64; 1];
        for &k in keys {
            let d = expected_depth(rib, k);
            if d >= want.len() {
                want.resize(d + 1, 0);
            }
            want[d] += 1;
            assert_eq!(fib.depth_histogram(&[k]).iter().sum::<u64>(), 1);
            let mut one = vec![0u64; d + 1];
            one[d] = 1;
            assert_eq!(fib.depth_histogram(&[k]), one, "key {k:?}");
        }
        assert_eq!(fib.depth_histogram(keys), want);
    }
    let r4: Rib<Ipv4> = rib(&[
        ("10.0.0.0/8", 1),
        ("10.0.1.0/24", 2),
        ("10.0.1.128/25", 3),
        ("10.0.2.0/24", 1), // same as its cover: aggregated away
        ("192.168.0.0/16", 4),
        ("192.168.7.7/32", 5),
    ]);
    check(&r4, &boundary_keys(&r4));
    for seed in 0..3 {
        let r4 = random_rib::<Ipv4>(seed, 300);
        check(&r4, &boundary_keys(&r4));
        let r6 = random_rib::<Ipv6>(seed, 300);
        check(&r6, &boundary_keys(&r6));
    }
    let empty = Rib::<Ipv6>::new();
    check(&empty, &[0, u128::MAX]);
    let fib = Spider::build(&empty, &SpiderConfig::w16()).unwrap();
    assert_eq!(fib.depth_histogram(&[]), [0]);
    assert!(
        fib.prefetched_octets().is_empty(),
        "a tiny table stays cached"
    );
}

/// Every AVX2 kernel shape on a small table, sized for Miri: run as
/// `RUSTFLAGS="-C target-feature=+avx2" cargo +nightly miri test -p lpmkit --lib miri_`
/// so that Miri executes the intrinsics (gathers included) and checks every table and key
/// read for bounds and initialisation. Elsewhere it is a quick differential test.
///
/// The table depends on the element layout alone, so it is built once per layout (a build
/// is most of a Miri run's time) and each kernel shape runs on it with the lookup
/// parameters a build with that shape's configuration sets; outside Miri the test builds
/// each shape too and checks that its parameters are those.
#[test]
fn miri_every_kernel_shape_on_a_small_table() {
    fn run<A: Address>(rib: &Rib<A>, keys: &[A])
    where
        Spider<A>: Fib<A>,
    {
        for layout in ElementLayout::ALL {
            let base = SpiderConfig {
                isa: Some(crate::simd::Isa::Avx2),
                layout: Some(layout),
                ..SpiderConfig::w16()
            };
            let Ok(mut fib) = Spider::build(rib, &base) else {
                continue;
            };
            let built = fib.params;
            for (ways, pipeline, refill) in [
                (16, true, true),
                (8, true, true),
                (16, true, false),
                (8, false, false),
                (13, true, false),
                (5, true, false),
            ] {
                let cfg = SpiderConfig {
                    ways,
                    pipeline,
                    refill: Some(refill),
                    ..base.clone()
                };
                fib.params = LookupParams {
                    ways,
                    pipeline,
                    refill,
                    ..built
                };
                if !cfg!(miri) {
                    let own = Spider::build(rib, &cfg).unwrap();
                    assert_eq!(format!("{:?}", own.params), format!("{:?}", fib.params));
                    assert_eq!(own.implementation(), fib.implementation(), "{cfg:?}");
                }
                if cfg!(target_feature = "avx2") {
                    // Compiled with AVX2 (as for the Miri run): the kernels are the ones run.
                    assert_eq!(fib.implementation(), Implementation::Avx2);
                }
                // Cold levels make the pipelined kernels yield and prefetch, none makes
                // them interleave; both pass kinds of the refilling kernel run.
                for (cold, scalar_passes) in [(u32::MAX, 0), (u32::MAX, u32::MAX), (0, 0)] {
                    fib.params.cold_octets = cold;
                    fib.params.scalar_passes = scalar_passes;
                    let what = format!("{cfg:?} cold {cold:#x} scalar {scalar_passes:#x}");
                    check_keys(&fib, rib, keys, &what);
                }
            }
        }
    }
    let r4: Rib<Ipv4> = rib(&[
        ("0.0.0.0/0", 1),
        ("10.0.0.0/8", 2),
        ("10.1.0.0/16", 3),
        ("10.1.2.0/24", 4),
        ("10.1.2.128/25", 5),
        ("10.1.2.200/32", 6),
        ("10.1.3.0/24", 2),
        ("192.168.0.0/16", 7),
        ("192.168.7.0/24", 8),
        ("255.255.255.255/32", 9),
    ]);
    let mut k4 = boundary_keys(&r4);
    k4.truncate(40);
    run(&r4, &k4);
    let r6: Rib<Ipv6> = rib(&[
        ("2001:db8::/32", 1),
        ("2001:db8:1::/48", 2),
        ("2001:db8:1:2::/64", 3),
        ("2001:db8:1:2::1/128", 4),
        ("2001:db8:ff00::/40", 5),
        ("ffff::/16", 6),
    ]);
    let mut k6 = boundary_keys(&r6);
    k6.truncate(40);
    run(&r6, &k6);
}

//! Poptrie against the `Rib`: real tables, synthetic tables, edge routes, the real update
//! traces replayed incrementally, and random update sequences (proptest).

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::schemes::poptrie::{Poptrie, PoptrieConfig};
use lpmkit::schemes::Width;
use lpmkit::traffic::boundary_keys;
use lpmkit::{registry, Address, BuildOptions, Change, Fib, IncrementalFib, NextHop, Prefix, Rib};
use proptest::prelude::*;

use common::{prefix_strategy, push_boundaries, Op, Tier};

/// Both registry variants, with and without the `popcnt` kernel.
fn check_registry<A: Address>(rib: &Rib<A>, keys: &[A], label: &str) {
    let want = common::reference(rib, keys);
    for name in ["poptrie16", "poptrie18"] {
        let info = registry::find(name).unwrap();
        assert!(info.incremental);
        for isa in common::isa_levels() {
            let fib = info.build(rib, &common::isa_options(isa)).unwrap();
            assert_eq!(fib.name(), name);
            common::assert_lookups(
                &*fib,
                keys,
                &want,
                &format!("{label} {name} {}", fib.implementation()),
            );
        }
    }
}

#[test]
fn real_tables_v4() {
    real_tables_v4_in(Tier::Default);
}

#[test]
#[ignore = "long tier: the other real IPv4 tables"]
fn other_real_tables_v4() {
    real_tables_v4_in(Tier::Long);
}

fn real_tables_v4_in(tier: Tier) {
    for path in common::tier_tables("ipv4-", tier) {
        let rib = common::load_table::<u32>(&path).rib;
        let mut keys = boundary_keys(&rib);
        let mut rng = SplitMix64::new(1);
        keys.extend((0..1 << 20).map(|_| rng.next() as u32));
        check_registry(&rib, &keys, &path.display().to_string());
    }
}

#[test]
fn real_tables_v6() {
    for path in common::data_files("fib", "ipv6-") {
        let rib = common::load_table::<u128>(&path).rib;
        let mut keys = boundary_keys(&rib);
        // Spider-paper matching keys, keys deep inside random prefixes, and uniform keys.
        keys.extend(common::v6_route_keys(&rib, 1 << 18, 2));
        check_registry(&rib, &keys, &path.display().to_string());
    }
}

fn check_configs<A: Address>(rib: &Rib<A>, keys: &[A], label: &str) {
    let want = common::reference(rib, keys);
    for s in [0, 1, 6, 12, 16, 18, 24] {
        for leaf_width in [None, Some(Width::U32)] {
            for isa in common::isa_levels() {
                let cfg = PoptrieConfig {
                    direct_bits: s,
                    leaf_width,
                    force_scalar: false,
                    isa: Some(isa),
                };
                let fib = Poptrie::build(rib, &cfg).unwrap();
                common::assert_lookups(&fib, keys, &want, &format!("{label} {cfg:?}"));
            }
        }
    }
}

#[test]
fn synthetic_tables_every_config() {
    synthetic_tables_every_config_seeds(0..1);
}

#[test]
#[ignore = "long tier: three more seeds"]
fn more_synthetic_tables_every_config() {
    synthetic_tables_every_config_seeds(1..4);
}

fn synthetic_tables_every_config_seeds(seeds: std::ops::Range<u64>) {
    for seed in seeds {
        for (routes, hops) in [(50, 3), (2000, 5), (20_000, 70_000)] {
            let rib = common::synthetic::<u32>(seed, routes, hops, 20);
            let mut keys = boundary_keys(&rib);
            let mut rng = SplitMix64::new(seed);
            keys.extend((0..20_000).map(|_| rng.next() as u32));
            check_configs(&rib, &keys, &format!("v4 seed {seed} routes {routes}"));
            let rib = common::synthetic::<u128>(seed, routes, hops, 20);
            let mut keys = boundary_keys(&rib);
            keys.extend((0..20_000).map(|_| rng.next_u128()));
            check_configs(&rib, &keys, &format!("v6 seed {seed} routes {routes}"));
        }
    }
}

#[test]
fn edge_routes() {
    fn rib<A: Address>(routes: &[(&str, u32)]) -> Rib<A> {
        routes
            .iter()
            .map(|&(p, h)| (p.parse().unwrap(), NextHop::new(h).unwrap()))
            .collect()
    }
    // Only the default route; default plus host routes at both ends; a chain of nested
    // prefixes at every length (the worst case for depth).
    let mut chain4 = vec![("0.0.0.0/0", 1)];
    let mut chain6 = vec![("::/0", 1)];
    let v4: Vec<String> = (1..=32)
        .map(|l| {
            format!(
                "{}/{l}",
                std::net::Ipv4Addr::from(u32::netmask(l) & 0x5555_5555)
            )
        })
        .collect();
    let v6: Vec<String> = (1..=128)
        .map(|l| {
            format!(
                "{}/{l}",
                std::net::Ipv6Addr::from(u128::netmask(l) & (u128::MAX / 3))
            )
        })
        .collect();
    for (i, p) in v4.iter().enumerate() {
        chain4.push((p, 2 + (i as u32 % 3)));
    }
    for (i, p) in v6.iter().enumerate() {
        chain6.push((p, 2 + (i as u32 % 3)));
    }
    for r in [
        rib::<u32>(&[("0.0.0.0/0", 7)]),
        rib::<u32>(&[
            ("0.0.0.0/0", 7),
            ("0.0.0.0/32", 8),
            ("255.255.255.255/32", 9),
        ]),
        rib::<u32>(&chain4),
        Rib::new(),
    ] {
        let keys = boundary_keys(&r);
        check_configs(&r, &keys, "edge v4");
    }
    for r in [
        rib::<u128>(&[("::/0", 7)]),
        rib::<u128>(&[
            ("::/0", 7),
            ("::/128", 8),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 9),
        ]),
        rib::<u128>(&chain6),
        Rib::new(),
    ] {
        let keys = boundary_keys(&r);
        check_configs(&r, &keys, "edge v6");
    }
}

/// Checks the keys around `p` (its boundaries ±1 and a few inside).
fn check_prefix<A: Address, F: Fib<A> + ?Sized>(
    fib: &F,
    rib: &Rib<A>,
    p: &Prefix<A>,
    rng: &mut SplitMix64,
) {
    let mut keys = Vec::with_capacity(24);
    push_boundaries(p, &mut keys);
    for _ in 0..4 {
        keys.push(
            p.first()
                .or(A::from_u128(rng.next_u128()).and(A::hostmask(p.len()))),
        );
    }
    let want = common::reference(rib, &keys);
    let mut out = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    for ((&k, &w), &o) in keys.iter().zip(&want).zip(&out) {
        assert_eq!(o, w, "after change of {p}: lookup_batch {k:x}");
        assert_eq!(
            NextHop::raw(fib.lookup(k)),
            w,
            "after change of {p}: lookup {k:x}"
        );
    }
}

fn replay<A: Address>(base: &str, trace: &std::path::Path) {
    let Some(base) = common::data_files("fib", base).into_iter().next() else {
        return;
    };
    let mut table = common::load_table::<A>(&base);
    let changes = common::load_updates::<A>(trace, &mut table.next_hops);
    let rib = table.rib;
    for (s, name) in [(16u64, "poptrie16"), (18, "poptrie18")] {
        let mut rib = rib.clone();
        let mut fib = registry::find(name)
            .unwrap()
            .build_incremental(&rib, &BuildOptions::default())
            .unwrap();
        let mut rng = SplitMix64::new(s);
        let batch = if s == 16 { 1 } else { 7 };
        for (i, c) in changes.iter().enumerate() {
            c.apply_to(&mut rib);
            // poptrie16 gets the changes one at a time, poptrie18 seven per call.
            if i % batch == batch - 1 || i + 1 == changes.len() {
                let from = i - i % batch;
                fib.apply(&rib, &changes[from..=i]).unwrap();
                for c in &changes[from..=i] {
                    check_prefix(&*fib, &rib, &c.prefix(), &mut rng);
                }
            }
            if i % 5000 == 4999 {
                let sample: Vec<A> = (0..20_000).map(|_| A::from_u128(rng.next_u128())).collect();
                let want = common::reference(&rib, &sample);
                let mut out = vec![0; sample.len()];
                fib.lookup_batch(&sample, &mut out);
                assert_eq!(out, want, "{}: random keys after {i}", trace.display());
            }
        }
        // The end state equals the Rib at every boundary, and a fresh build.
        let keys = boundary_keys(&rib);
        let want = common::reference(&rib, &keys);
        common::assert_lookups(
            &*fib,
            &keys,
            &want,
            &format!("{} {name} final", trace.display()),
        );
        let fresh = registry::find(name)
            .unwrap()
            .build(&rib, &BuildOptions::default())
            .unwrap();
        common::assert_lookups(&*fresh, &keys, &want, "fresh build");
        assert!(fib.stats().get("updates").is_some());
    }
}

#[test]
fn replay_update_traces() {
    for trace in common::data_files("updates", "ipv4-") {
        replay::<u32>("ipv4-ris-rrc06", &trace);
    }
    for trace in common::data_files("updates", "ipv6-") {
        replay::<u128>("ipv6-ris-rrc01-linx", &trace);
    }
}

/// Building the table route by route from empty, then withdrawing every route, leaves no
/// node or leaf allocated: the allocator gets everything back.
fn grow_and_drain<A: Address>(seed: u64) {
    let target = common::synthetic::<A>(seed, 3000, 4, 20);
    let mut rib = Rib::new();
    let mut fib = Poptrie::build(&rib, &PoptrieConfig::poptrie16()).unwrap();
    let mut rng = SplitMix64::new(seed);
    let routes: Vec<_> = target.iter().collect();
    for &(p, nh) in &routes {
        let c = Change::Announce(p, nh);
        c.apply_to(&mut rib);
        fib.apply(&rib, &[c]).unwrap();
        check_prefix(&fib, &rib, &p, &mut rng);
    }
    let keys = boundary_keys(&rib);
    common::assert_lookups(&fib, &keys, &common::reference(&rib, &keys), "grown");
    for &(p, _) in routes.iter().rev() {
        let c = Change::Withdraw(p);
        c.apply_to(&mut rib);
        fib.apply(&rib, &[c]).unwrap();
        check_prefix(&fib, &rib, &p, &mut rng);
    }
    let st = fib.stats();
    assert_eq!(st.get("internal_nodes"), Some(&lpmkit::StatValue::Count(0)));
    assert_eq!(st.get("leaves"), Some(&lpmkit::StatValue::Count(0)));
}

#[test]
fn grow_and_drain_frees_everything() {
    grow_and_drain::<u32>(5);
    grow_and_drain::<u128>(6);
}

fn run_sequence<A: Address>(ops: &[Op], s: u8) -> Result<(), TestCaseError> {
    let cfg = PoptrieConfig {
        direct_bits: s,
        ..Default::default()
    };
    let mut fib = Poptrie::build(&Rib::<A>::new(), &cfg).unwrap();
    common::replay_ops(&mut fib, Rib::new(), ops, 1, &cfg)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_updates_v4(
        ops in prop::collection::vec((prefix_strategy(32), 1u32..6, prop::bool::weighted(0.7)), 1..60),
        s in prop::sample::select(vec![0u8, 6, 16, 18]),
    ) {
        run_sequence::<u32>(&ops, s)?;
    }

    #[test]
    fn random_updates_v6(
        ops in prop::collection::vec((prefix_strategy(128), 1u32..6, prop::bool::weighted(0.7)), 1..60),
        s in prop::sample::select(vec![0u8, 16, 18]),
    ) {
        run_sequence::<u128>(&ops, s)?;
    }
}

//! SAIL_B, SAIL_U, SAIL_L (IPv4) and SAIL's IPv6 form against the `Rib`: real tables,
//! synthetic tables, edge routes, both entry widths, the real update traces replayed
//! incrementally, and random update sequences (proptest).

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::{registry, Address, BuildOptions, Fib, NextHop, Prefix, Rib};
use proptest::prelude::*;

use common::{
    data_files, load_table, load_updates, prefix_strategy, push_boundaries, reference, Op,
};
use lpmkit::traffic::boundary_keys;

const V4: [&str; 3] = ["sail-b", "sail-u", "sail-l"];

fn compare<A: Address>(fib: &dyn Fib<A>, keys: &[A], want: &[u32], what: &str) {
    let mut out = vec![u32::MAX; keys.len()];
    fib.lookup_batch(keys, &mut out);
    for (i, (&k, &w)) in keys.iter().zip(want).enumerate() {
        assert_eq!(out[i], w, "{what}: lookup_batch {k:x}");
        assert_eq!(NextHop::raw(fib.lookup(k)), w, "{what}: lookup {k:x}");
    }
    for n in [0, 1, 15, 16, 17, 33, 200] {
        let n = n.min(keys.len());
        let mut out = vec![u32::MAX; n];
        fib.lookup_batch(&keys[..n], &mut out);
        assert_eq!(&out[..], &want[..n], "{what}: lookup_batch of {n}");
    }
}

fn check<A: Address>(names: &[&str], rib: &Rib<A>, keys: &[A], label: &str, widths: bool) {
    let want = reference(rib, keys);
    for name in names {
        let settings: &[&str] = if widths { &["", "width=32"] } else { &[""] };
        for s in settings {
            // Every code path: SAIL_L's SIMD kernels (where the CPU has them) and its twin.
            for isa in common::isa_levels() {
                let mut o = BuildOptions::default().with_settings(s).unwrap();
                o.isa = Some(isa);
                let fib = registry::find(name).unwrap().build(rib, &o).unwrap();
                compare(
                    &*fib,
                    keys,
                    &want,
                    &format!("{label} {name} {s} {}", fib.implementation()),
                );
            }
        }
    }
}

#[test]
fn real_tables() {
    for path in data_files("fib", "ipv4-") {
        let rib = load_table::<u32>(&path).rib;
        let mut keys = boundary_keys(&rib);
        let mut rng = SplitMix64::new(1);
        keys.extend((0..1 << 18).map(|_| rng.next() as u32));
        check(&V4, &rib, &keys, &path.display().to_string(), false);
    }
    for path in data_files("fib", "ipv6-") {
        let rib = load_table::<u128>(&path).rib;
        let mut keys = common::keys_for(&rib, 1 << 18, 4);
        keys.extend(boundary_keys(&rib));
        check(&["sail-m"], &rib, &keys, &path.display().to_string(), false);
    }
}

#[test]
fn synthetic_tables() {
    synthetic_tables_seeds(0..1);
    let t = lpmkit::synth::default_v4();
    check(&V4, &t.rib, &boundary_keys(&t.rib), "synth v4", false);
    let t = lpmkit::synth::default_v6();
    check(
        &["sail-m"],
        &t.rib,
        &boundary_keys(&t.rib),
        "synth v6",
        false,
    );
}

#[test]
#[ignore = "long tier: more seeds of the synthetic tables"]
fn more_synthetic_tables() {
    synthetic_tables_seeds(1..3);
}

/// Synthetic tables from each of `seeds`, each size.
fn synthetic_tables_seeds(seeds: std::ops::Range<u64>) {
    for seed in seeds {
        for (routes, hops) in [(50, 3), (3000, 5), (20_000, 70_000)] {
            let rib = common::synthetic::<u32>(seed, routes, hops, 12);
            let mut keys = boundary_keys(&rib);
            let mut rng = SplitMix64::new(seed);
            keys.extend((0..20_000).map(|_| rng.next() as u32));
            check(&V4, &rib, &keys, &format!("v4 seed {seed} {routes}"), true);
            let rib = common::synthetic::<u128>(seed, routes, hops, 12);
            let mut keys = boundary_keys(&rib);
            keys.extend((0..20_000).map(|_| rng.next_u128()));
            check(
                &["sail-m"],
                &rib,
                &keys,
                &format!("v6 seed {seed} {routes}"),
                true,
            );
        }
    }
}

#[test]
fn edge_routes_and_settings() {
    fn rib<A: Address>(routes: &[(&str, u32)]) -> Rib<A> {
        routes
            .iter()
            .map(|&(p, h)| (p.parse().unwrap(), NextHop::new(h).unwrap()))
            .collect()
    }
    let chain: Vec<(String, u32)> = (0..=32u8)
        .map(|l| {
            let a = u32::netmask(l) & 0x5555_5555;
            (
                format!("{}/{l}", std::net::Ipv4Addr::from(a)),
                1 + l as u32 % 3,
            )
        })
        .collect();
    let chain: Vec<(&str, u32)> = chain.iter().map(|(p, h)| (p.as_str(), *h)).collect();
    for r in [
        rib::<u32>(&[("0.0.0.0/0", 7)]),
        rib::<u32>(&[
            ("0.0.0.0/0", 7),
            ("0.0.0.0/32", 8),
            ("255.255.255.255/32", 9),
        ]),
        rib::<u32>(&chain),
        rib::<u32>(&[("10.0.0.0/8", 300_000), ("10.1.2.3/32", 2)]),
        Rib::new(),
    ] {
        check(&V4, &r, &boundary_keys(&r), "edge v4", true);
    }
    for r in [
        rib::<u128>(&[
            ("::/0", 7),
            ("::/128", 8),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 9),
        ]),
        rib::<u128>(&[
            ("2001:db8::/32", 1),
            ("2001:db8::1/128", 2),
            ("2001:db8:1::/48", 3),
        ]),
        Rib::new(),
    ] {
        check(&["sail-m"], &r, &boundary_keys(&r), "edge v6", true);
    }
    // Other pivot levels, and refusals.
    let r = common::synthetic::<u128>(9, 3000, 4, 12);
    let keys = boundary_keys(&r);
    let want = reference(&r, &keys);
    for p in ["16:32:48:64:80:96:112:128", "24:40:48:56:64:128"] {
        let o = BuildOptions::default()
            .with_settings(&format!("pivots={p}"))
            .unwrap();
        match registry::find("sail-m").unwrap().build(&r, &o) {
            Ok(fib) => compare(&*fib, &keys, &want, p),
            Err(e) => assert!(p.contains("64:128"), "{p}: {e}"),
        }
    }
    let o = BuildOptions::default().with_settings("width=16").unwrap();
    let big = rib::<u32>(&[("10.0.0.0/8", 300_000)]);
    assert!(registry::find("sail-l").unwrap().build(&big, &o).is_err());
}

fn check_prefix<A: Address>(fib: &dyn Fib<A>, rib: &Rib<A>, p: &Prefix<A>, rng: &mut SplitMix64) {
    let mut keys = Vec::new();
    push_boundaries(p, &mut keys);
    for _ in 0..4 {
        keys.push(
            p.first()
                .or(A::from_u128(rng.next_u128()).and(A::hostmask(p.len()))),
        );
    }
    let want = reference(rib, &keys);
    let mut out = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    assert_eq!(out, want, "after change of {p}");
}

fn replay<A: Address>(base: &str, names: &[&str], limit: usize) {
    let Some(base) = data_files("fib", base).into_iter().next() else {
        return;
    };
    let family = if A::BITS == 32 { "ipv4-" } else { "ipv6-" };
    for trace in data_files("updates", family) {
        let mut table = load_table::<A>(&base);
        let changes = load_updates::<A>(&trace, &mut table.next_hops);
        for name in names {
            let mut rib = table.rib.clone();
            let mut fib = registry::find(name)
                .unwrap()
                .build_incremental(&rib, &BuildOptions::default())
                .unwrap();
            let mut rng = SplitMix64::new(3);
            let n = changes.len().min(limit);
            for group in changes[..n].chunks(5) {
                for c in group {
                    c.apply_to(&mut rib);
                }
                fib.apply(&rib, group).unwrap();
                for c in group {
                    check_prefix(&*fib, &rib, &c.prefix(), &mut rng);
                }
            }
            let keys = boundary_keys(&rib);
            compare(
                &*fib,
                &keys,
                &reference(&rib, &keys),
                &format!("{name} final"),
            );
            eprintln!("{name} {}: {}", trace.display(), fib.stats());
        }
    }
}

#[test]
fn replay_update_traces() {
    replay::<u32>("ipv4-ris-rrc06", &V4, 8_000);
    replay::<u128>("ipv6-ris-rrc01-linx", &["sail-m"], 8_000);
}

#[test]
#[ignore = "long tier: 30,000 changes of every trace"]
fn replay_update_traces_long() {
    replay::<u32>("ipv4-ris-rrc06", &V4, 30_000);
    replay::<u128>("ipv6-ris-rrc01-linx", &["sail-m"], 30_000);
}

fn run_sequence<A: Address>(name: &str, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut fib = registry::find(name)
        .unwrap()
        .build_incremental(&Rib::<A>::new(), &BuildOptions::default())
        .unwrap();
    // Odd steps apply the last two changes in one call.
    common::replay_ops(&mut *fib, Rib::new(), ops, 2, &name)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_updates_v4(
        ops in prop::collection::vec((prefix_strategy(32), 1u32..6, prop::bool::weighted(0.7)), 1..60),
        name in prop::sample::select(V4.to_vec()),
    ) {
        run_sequence::<u32>(name, &ops)?;
    }

    #[test]
    fn random_updates_v6(
        ops in prop::collection::vec((prefix_strategy(128), 1u32..6, prop::bool::weighted(0.7)), 1..60),
    ) {
        run_sequence::<u128>("sail-m", &ops)?;
    }
}

//! Every registered scheme against the reference `Rib`: on every real table in
//! `../shared/data/fib/`, on synthetic tables, on worst-case nestings, and on random small
//! tables after random update sequences (proptest). Each scheme is checked on its default
//! code path under every instruction-set ceiling the CPU has (AVX-512, AVX2, scalar; a
//! path a scheme lacks is checked once), through both `lookup` and `lookup_batch`.
//! `LPMKIT_DIFFERENTIAL_SCHEMES=a,b` limits a run to those schemes (CI's DPDK stage runs
//! `dpdk-fib` alone; the workspace run checks every scheme).

mod common;

use lpmkit::registry;
use lpmkit::{synth, Address, AnyTable, Family, NextHop, Prefix, Rib, Table};
use proptest::prelude::*;

/// Builds every scheme of the family on each of its code paths and compares it with the
/// Rib.
fn check_all_schemes<A: Address>(rib: &Rib<A>, keys: &[A], what: &str) {
    let want = common::reference(rib, keys);
    let levels = common::isa_levels();
    for info in registry::schemes_for(A::FAMILY) {
        if !common::selected("LPMKIT_DIFFERENTIAL_SCHEMES", info.name) {
            continue;
        }
        let mut seen = Vec::new();
        for &isa in &levels {
            let fib = info
                .build(rib, &common::isa_options(isa))
                .unwrap_or_else(|e| panic!("{what}: building {}: {e}", info.name));
            if seen.contains(&fib.implementation()) {
                continue; // the same path as under a higher ceiling
            }
            seen.push(fib.implementation());
            let label = format!("{what}: {} [{}]", info.name, fib.implementation());
            common::assert_agrees(&*fib, rib, keys, &want, &label);
        }
    }
}

fn check_table<A: Address>(t: &Table<A>, random_keys: usize) {
    let keys = common::keys_for(&t.rib, random_keys, 42);
    check_all_schemes(&t.rib, &keys, &t.name);
}

/// Every real table, on as many threads as the machine has (each thread takes the next
/// table; a panic in one fails the test).
#[test]
fn real_tables() {
    let tables = common::fib_tables();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(tables.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(path) = tables.get(i) else { break };
                let t0 = std::time::Instant::now();
                match common::load(path) {
                    AnyTable::V4(t) => check_table(&t, 2_000_000),
                    AnyTable::V6(t) => check_table(&t, 1_000_000),
                }
                eprintln!(
                    "{}: all schemes agree ({:.1} s)",
                    path.display(),
                    t0.elapsed().as_secs_f64()
                );
            });
        }
    });
}

#[test]
fn synthetic_tables() {
    for seed in [1, 2] {
        let mut cfg = synth::SynthConfig::ipv4_default();
        cfg.routes = 200_000;
        cfg.seed = seed;
        check_table(&synth::generate::<u32>(&cfg), 500_000);
        let mut cfg = synth::SynthConfig::ipv6_default();
        cfg.routes = 50_000;
        cfg.seed = seed;
        check_table(&synth::generate::<u128>(&cfg), 500_000);
    }
}

fn nh(v: u32) -> NextHop {
    NextHop::new(v).unwrap()
}

/// A supernet at every depth over one address, each with its own next hop, plus the
/// default route and host routes at both ends of the address space (DPDK's test_fib
/// `check_fib` pattern and bart's nested chains).
fn nested_chain<A: Address>(addr: A) -> Rib<A> {
    let mut rib = Rib::new();
    for len in 0..=A::BITS {
        rib.insert(Prefix::new_truncating(addr, len), nh(len as u32 + 1));
    }
    rib.insert(Prefix::host(A::ZERO), nh(300));
    rib.insert(Prefix::host(A::MAX), nh(301));
    rib
}

#[test]
fn nested_chains() {
    for addr in [0x0a0b_0c0du32, 0, u32::MAX, 0x8000_0000] {
        let rib = nested_chain(addr);
        check_all_schemes(&rib, &common::keys_for(&rib, 10_000, 3), "v4 chain");
        // Every other depth removed: lookups fall through to the next shorter one.
        let mut sparse = rib.clone();
        for len in (1..=32).step_by(2) {
            sparse.remove(&Prefix::new_truncating(addr, len));
        }
        check_all_schemes(
            &sparse,
            &common::keys_for(&sparse, 10_000, 4),
            "v4 sparse chain",
        );
    }
    for addr in [0x2001_0db8_0000_0000_0000_0000_0000_0001u128, 0, u128::MAX] {
        let rib = nested_chain(addr);
        check_all_schemes(&rib, &common::keys_for(&rib, 10_000, 5), "v6 chain");
    }
}

#[test]
fn empty_and_default_only() {
    for rib in [
        Rib::<u32>::new(),
        [(Prefix::DEFAULT, nh(9))].into_iter().collect(),
    ] {
        check_all_schemes(&rib, &common::keys_for(&rib, 1000, 1), "v4 trivial");
    }
    for rib in [
        Rib::<u128>::new(),
        [(Prefix::DEFAULT, nh(9))].into_iter().collect(),
    ] {
        check_all_schemes(&rib, &common::keys_for(&rib, 1000, 1), "v6 trivial");
    }
}

/// A random prefix concentrated in a few regions so prefixes nest and collide.
fn arb_prefix<A: Address>() -> impl Strategy<Value = Prefix<A>> {
    (0u8..4, any::<u64>(), 0..=A::BITS).prop_map(|(region, bits, len)| {
        let top = A::from_u128((region as u128) << (A::BITS - 2));
        let mid = A::from_u128((bits as u128) << (A::BITS.saturating_sub(40)));
        Prefix::new_truncating(top.or(mid), len)
    })
}

fn arb_changes<A: Address>() -> impl Strategy<Value = Vec<(bool, Prefix<A>, u32)>> {
    prop::collection::vec((any::<bool>(), arb_prefix::<A>(), 1u32..6), 1..60)
}

fn run_changes<A: Address>(changes: &[(bool, Prefix<A>, u32)]) {
    let mut rib = Rib::<A>::new();
    for (i, &(insert, p, h)) in changes.iter().enumerate() {
        if insert {
            rib.insert(p, nh(h));
        } else {
            rib.remove(&p);
        }
        // Rebuild every few changes (and at the end) and compare.
        if i % 7 == 6 || i + 1 == changes.len() {
            let keys = common::keys_for(&rib, 256, i as u64);
            check_all_schemes(&rib, &keys, "proptest");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_updates_v4(changes in arb_changes::<u32>()) {
        run_changes(&changes);
    }

    #[test]
    fn random_updates_v6(changes in arb_changes::<u128>()) {
        run_changes(&changes);
    }
}

#[test]
fn registry_covers_both_families() {
    assert!(registry::schemes_for(Family::V4).count() >= 2);
    assert!(registry::schemes_for(Family::V6).count() >= 1);
}

/// A run limited by `LPMKIT_DIFFERENTIAL_SCHEMES` names registered schemes only: a typo (or a
/// scheme whose feature is not built) fails here instead of checking nothing.
#[test]
fn selected_schemes_exist() {
    if let Ok(list) = std::env::var("LPMKIT_DIFFERENTIAL_SCHEMES") {
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            assert!(
                registry::find(name).is_some(),
                "LPMKIT_DIFFERENTIAL_SCHEMES names {name}, which is not a registered scheme"
            );
        }
    }
}

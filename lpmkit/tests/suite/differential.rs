//! Every registered scheme against the reference `Rib`: on every real table in
//! `$LPMKIT_DATA/fib/`, on synthetic tables, on worst-case nestings, and on random small
//! tables after random update sequences (proptest). Each scheme is checked on each of its
//! code paths ([`code_paths`]: its default under every instruction-set ceiling the CPU has —
//! AVX-512, AVX2, scalar — a path a scheme lacks checked once), through both `lookup` and
//! `lookup_batch`.
//!
//! On the real tables the default tier looks up a sample of random keys plus every prefix
//! boundary (and its neighbours); the long tier (`-- --ignored`) a million random keys per
//! table on each scheme's widest path and a quarter million on the others (with the
//! boundaries, several million keys on the large tables), and 128 random update
//! sequences per family (new ones at every run: proptest draws its seed), each check on the
//! next code path in turn. `LPMKIT_DIFFERENTIAL_SCHEMES=a,b` limits a run to those schemes
//! (CI's DPDK stage runs `dpdk-fib` alone; the workspace run checks every scheme).

use crate::common;

use lpmkit::registry::{self, BuildOptions};
use lpmkit::{synth, Address, AnyTable, Family, NextHop, Prefix, Rib, Table};
use proptest::prelude::*;

/// The code paths every scheme is checked on, by label: its default (the widest kernels
/// the CPU offers) under each instruction-set ceiling the CPU supports (AVX-512, AVX2,
/// scalar; the levels it lacks are named on stderr as skipped). Another path a scheme can
/// be built for is one more row here.
fn code_paths() -> Vec<(String, BuildOptions)> {
    common::isa_levels()
        .into_iter()
        .map(|isa| (format!("ceiling {isa}"), common::isa_options(isa)))
        .collect()
}

/// Builds every scheme of the family on every code path and compares it with the Rib (a
/// path that equals one under a higher ceiling is checked once).
fn check_all_schemes<A: Address>(rib: &Rib<A>, keys: &[A], what: &str) {
    check_schemes_on(rib, keys, what, &code_paths());
}

/// Builds every scheme of the family on each of `paths` and compares it with the Rib.
fn check_schemes_on<A: Address>(
    rib: &Rib<A>,
    keys: &[A],
    what: &str,
    paths: &[(String, BuildOptions)],
) {
    let want = common::reference(rib, keys);
    for info in registry::schemes_for(A::FAMILY) {
        if !common::selected("LPMKIT_DIFFERENTIAL_SCHEMES", info.name) {
            continue;
        }
        let mut seen = Vec::new();
        for (path, opts) in paths {
            let fib = info
                .build(rib, opts)
                .unwrap_or_else(|e| panic!("{what}: building {} ({path}): {e}", info.name));
            if seen.contains(&fib.implementation()) {
                continue; // the same path as under a higher ceiling
            }
            seen.push(fib.implementation());
            let label = format!("{what}: {} ({path}) [{}]", info.name, fib.implementation());
            common::assert_agrees(&*fib, rib, keys, &want, &label);
        }
    }
}

fn check_table<A: Address>(t: &Table<A>, keys: Keys) {
    match keys {
        Keys::Sampled => check_with_keys(t, SAMPLED_KEYS),
        Keys::Long => {
            // The widest path on all of them, the lower ceilings on a quarter (each path
            // still on every prefix boundary).
            let paths = code_paths();
            let (widest, lower) = paths.split_at(1);
            let keys = common::keys_for(&t.rib, LONG_TIER_KEYS, 42);
            check_schemes_on(&t.rib, &keys, &t.name, widest);
            drop(keys);
            let keys = common::keys_for(&t.rib, LONG_TIER_KEYS / 4, 43);
            check_schemes_on(&t.rib, &keys, &t.name, lower);
        }
    }
}

/// Every scheme on every code path with `random_keys` random keys (and every prefix
/// boundary).
fn check_with_keys<A: Address>(t: &Table<A>, random_keys: usize) {
    let keys = common::keys_for(&t.rib, random_keys, 42);
    check_all_schemes(&t.rib, &keys, &t.name);
}

/// How many random keys a real table is checked on.
#[derive(Clone, Copy)]
enum Keys {
    /// The default tier: [`SAMPLED_KEYS`] on every code path.
    Sampled,
    /// The long tier: [`LONG_TIER_KEYS`] on the widest code path, a quarter as many on the
    /// others.
    Long,
}

/// Random keys per real table in the default tier, beside every prefix boundary.
const SAMPLED_KEYS: usize = 1 << 16;

/// Random keys per real table in the long tier (on the widest code path).
const LONG_TIER_KEYS: usize = 1_000_000;

/// Every real table with `keys` random keys (IPv6: half of them matching table
/// prefixes) plus every prefix boundary, on as many threads as the machine has (each
/// thread takes the next table; a panic in one fails the test).
fn real_tables_with(keys: Keys) {
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
                    AnyTable::V4(t) => check_table(&t, keys),
                    AnyTable::V6(t) => check_table(&t, keys),
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
fn real_tables() {
    real_tables_with(Keys::Sampled);
}

#[test]
#[ignore = "long tier: a million random keys per real table"]
fn real_tables_millions_of_keys() {
    real_tables_with(Keys::Long);
}

/// Synthetic tables of `routes` IPv4 and a quarter as many IPv6 routes from `seeds`,
/// `keys` random keys each (plus every prefix boundary).
fn synthetic_tables_with(seeds: &[u64], routes: usize, keys: usize) {
    for &seed in seeds {
        let mut cfg = synth::SynthConfig::ipv4_default();
        cfg.routes = routes;
        cfg.seed = seed;
        check_with_keys(&synth::generate::<u32>(&cfg), keys);
        let mut cfg = synth::SynthConfig::ipv6_default();
        cfg.routes = routes / 4;
        cfg.seed = seed;
        check_with_keys(&synth::generate::<u128>(&cfg), keys);
    }
}

#[test]
fn synthetic_tables() {
    synthetic_tables_with(&[1], 50_000, SAMPLED_KEYS);
}

#[test]
#[ignore = "long tier: larger synthetic tables (200,000 routes), 500,000 random keys each"]
fn synthetic_tables_more_keys() {
    synthetic_tables_with(&[1, 2, 3], 200_000, 500_000);
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

/// How many code paths a check of a random update sequence builds.
#[derive(Clone, Copy)]
enum Paths {
    /// Every scheme on every code path at every check.
    All,
    /// Every scheme on one code path per check, the next path at the next check (the long
    /// tier's many sequences: about 600 checks per family, each path still checked some
    /// 200 times per family and run, at a third of the builds).
    Rotating,
}

fn run_changes<A: Address>(changes: &[(bool, Prefix<A>, u32)], paths: Paths) {
    let all = code_paths();
    let mut rib = Rib::<A>::new();
    let mut checks = 0usize;
    for (i, &(insert, p, h)) in changes.iter().enumerate() {
        if insert {
            rib.insert(p, nh(h));
        } else {
            rib.remove(&p);
        }
        // Rebuild every few changes (and at the end) and compare.
        if i % 7 == 6 || i + 1 == changes.len() {
            let keys = common::keys_for(&rib, 256, i as u64);
            match paths {
                Paths::All => check_schemes_on(&rib, &keys, "proptest", &all),
                Paths::Rotating => {
                    // Start each sequence on a path of its own, so short sequences cover
                    // every path too.
                    let at = (checks + changes.len()) % all.len();
                    check_schemes_on(&rib, &keys, "proptest", &all[at..=at]);
                }
            }
            checks += 1;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn random_updates_v4(changes in arb_changes::<u32>()) {
        run_changes(&changes, Paths::All);
    }

    #[test]
    fn random_updates_v6(changes in arb_changes::<u128>()) {
        run_changes(&changes, Paths::All);
    }
}

// The same properties, many more cases, each check on one code path in turn.
proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    #[ignore = "long tier: 128 random update sequences per family"]
    fn random_updates_v4_many(changes in arb_changes::<u32>()) {
        run_changes(&changes, Paths::Rotating);
    }

    #[test]
    #[ignore = "long tier: 128 random update sequences per family"]
    fn random_updates_v6_many(changes in arb_changes::<u128>()) {
        run_changes(&changes, Paths::Rotating);
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

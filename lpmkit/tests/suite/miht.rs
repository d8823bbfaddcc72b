//! MIHT against the `Rib`: the real tables under several (k, m), the B+ tree and
//! priority-trie invariants on them, the real update traces replayed incrementally, and
//! random update sequences (proptest).

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::schemes::miht::{Miht, MihtConfig};
use lpmkit::{registry, Address, BuildOptions, Fib, IncrementalFib, Prefix, Rib};
use proptest::prelude::*;

use common::{
    data_files, load_table, load_updates, prefix_strategy, push_boundaries, tier_tables, Op, Tier,
};
use lpmkit::traffic::boundary_keys;

fn configs(v6: bool) -> Vec<MihtConfig> {
    let kms: &[(u8, usize)] = if v6 {
        &[(32, 32), (16, 16), (24, 8)]
    } else {
        &[(16, 16), (8, 4), (20, 32), (24, 64)]
    };
    kms.iter()
        .map(|&(k, m)| MihtConfig {
            k: Some(k),
            m: Some(m),
        })
        .collect()
}

fn check_table<A: Address>(path: &std::path::Path) {
    let rib = load_table::<A>(path).rib;
    let mut keys: Vec<A> = boundary_keys(&rib).into_iter().step_by(7).collect();
    keys.extend(common::keys_for(&rib, 100_000, 3).into_iter().take(100_000));
    let want = common::reference(&rib, &keys);
    for cfg in configs(A::BITS > 32) {
        let fib = Miht::build(&rib, &cfg).unwrap();
        fib.check_against(&rib)
            .unwrap_or_else(|e| panic!("{} {cfg:?}: {e}", path.display()));
        common::assert_agrees(
            &fib,
            &rib,
            &keys,
            &want,
            &format!("{} {cfg:?}", path.display()),
        );
        let s = fib.miht_stats().unwrap();
        assert!(s.trie_nodes == rib.len() as u64, "one trie node per route");
    }
}

fn real_tables_in(tier: Tier) {
    for path in tier_tables("ipv4-", tier) {
        check_table::<u32>(&path);
    }
    for path in tier_tables("ipv6-", tier) {
        check_table::<u128>(&path);
    }
}

#[test]
fn real_tables() {
    real_tables_in(Tier::Default);
}

#[test]
#[ignore = "long tier: every configuration on the other real tables"]
fn other_real_tables() {
    real_tables_in(Tier::Long);
}

fn check_prefix<A: Address, F: Fib<A> + ?Sized>(fib: &F, rib: &Rib<A>, p: &Prefix<A>) {
    let mut keys = Vec::with_capacity(8);
    push_boundaries(p, &mut keys);
    let want = common::reference(rib, &keys);
    let mut out = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    assert_eq!(out, want, "after change of {p}");
}

fn replay<A: Address>(base: &str, trace: &std::path::Path) {
    let Some(base) = data_files("fib", base).into_iter().next() else {
        return;
    };
    let mut table = load_table::<A>(&base);
    let changes = load_updates::<A>(trace, &mut table.next_hops);
    for batch in [1usize, 9] {
        let mut rib = table.rib.clone();
        let mut fib = registry::find("miht")
            .unwrap()
            .build_incremental(&rib, &BuildOptions::default())
            .unwrap();
        let mut rng = SplitMix64::new(batch as u64);
        for (i, c) in changes.iter().enumerate() {
            c.apply_to(&mut rib);
            if i % batch == batch - 1 || i + 1 == changes.len() {
                let from = i - i % batch;
                fib.apply(&rib, &changes[from..=i]).unwrap();
                for c in &changes[from..=i] {
                    check_prefix(&*fib, &rib, &c.prefix());
                }
            }
            if i % 20_000 == 19_999 {
                let sample: Vec<A> = (0..20_000).map(|_| A::from_u128(rng.next_u128())).collect();
                let want = common::reference(&rib, &sample);
                let mut out = vec![0; sample.len()];
                fib.lookup_batch(&sample, &mut out);
                assert_eq!(out, want, "{}: random keys after {i}", trace.display());
            }
        }
        let keys: Vec<A> = boundary_keys(&rib).into_iter().step_by(3).collect();
        let want = common::reference(&rib, &keys);
        common::assert_agrees(
            &*fib,
            &rib,
            &keys,
            &want,
            &format!("{} final", trace.display()),
        );
    }
}

#[test]
fn replay_update_traces() {
    for trace in data_files("updates", "ipv4-") {
        replay::<u32>("ipv4-ris-rrc06", &trace);
    }
    for trace in data_files("updates", "ipv6-") {
        replay::<u128>("ipv6-ris-rrc01-linx", &trace);
    }
}

/// After a trace the structure holds exactly the Rib's routes, its invariants intact.
#[test]
fn structure_after_a_trace() {
    let Some(trace) = data_files("updates", "ipv4-ris-rrc01-linx-2024")
        .into_iter()
        .next()
    else {
        return;
    };
    let Some(base) = data_files("fib", "ipv4-ris-rrc06").into_iter().next() else {
        return;
    };
    let mut table = load_table::<u32>(&base);
    let changes = load_updates::<u32>(&trace, &mut table.next_hops);
    let mut rib = table.rib;
    let mut fib = Miht::build(&rib, &MihtConfig::default()).unwrap();
    for c in changes.chunks(40) {
        for ch in c {
            ch.apply_to(&mut rib);
        }
        fib.apply(&rib, c).unwrap();
    }
    fib.check_against(&rib).unwrap();
}

fn run_sequence<A: Address>(ops: &[Op], cfg: &MihtConfig) -> Result<(), TestCaseError> {
    let mut fib = Miht::build(&Rib::<A>::new(), cfg).unwrap();
    let rib = common::replay_ops(&mut fib, Rib::new(), ops, 1, cfg)?;
    prop_assert_eq!(fib.check_against(&rib), Ok(()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_updates_v4(
        ops in prop::collection::vec((prefix_strategy(32), 1u32..6, prop::bool::weighted(0.7)), 1..60),
        km in prop::sample::select(vec![(16u8, 16usize), (4, 3), (30, 5)]),
    ) {
        run_sequence::<u32>(&ops, &MihtConfig { k: Some(km.0), m: Some(km.1) })?;
    }

    #[test]
    fn random_updates_v6(
        ops in prop::collection::vec((prefix_strategy(128), 1u32..6, prop::bool::weighted(0.7)), 1..60),
        km in prop::sample::select(vec![(32u8, 32usize), (8, 3), (31, 4)]),
    ) {
        run_sequence::<u128>(&ops, &MihtConfig { k: Some(km.0), m: Some(km.1) })?;
    }
}

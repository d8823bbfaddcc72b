//! OBMA (B, L, S, S⁻, the Table IV groupings) against the `Rib`: every real table of both
//! families, synthetic tables, edge routes, both entry widths, the real update traces
//! replayed incrementally, and random update sequences (proptest).

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::schemes::obma::{BisSearch, Grouping, Obma, ObmaConfig};
use lpmkit::schemes::Width;
use lpmkit::{Address, Change, Fib, IncrementalFib, Rib};
use proptest::prelude::*;

use common::{
    assert_agrees, data_files, keys_for, load, load_table, load_updates, reference, Op, Tier,
};
use lpmkit::traffic::boundary_keys;

/// Every variant, and the switches the paper's tables and figures turn.
fn configs() -> Vec<(&'static str, ObmaConfig)> {
    vec![
        ("b", ObmaConfig::b()),
        ("l", ObmaConfig::l()),
        ("s", ObmaConfig::s()),
        (
            "s-minus",
            ObmaConfig {
                sparse_k: 0,
                ..ObmaConfig::s()
            },
        ),
        (
            "b-303",
            ObmaConfig {
                grouping: Grouping::Fixed(3),
                ..ObmaConfig::b()
            },
        ),
        (
            "s-optimal-32",
            ObmaConfig {
                bis: BisSearch::Optimal,
                entry_width: Some(Width::U32),
                ..ObmaConfig::s()
            },
        ),
    ]
}

fn check_all<A: Address>(rib: &Rib<A>, keys: &[A], label: &str) {
    let want = reference(rib, keys);
    for (name, cfg) in configs() {
        match Obma::build(rib, &cfg) {
            Ok(fib) => assert_agrees(&fib, rib, keys, &want, &format!("{label} obma-{name}")),
            // A forced 16-bit width the table does not fit is refused, never truncated.
            Err(e) => assert!(cfg.entry_width == Some(Width::U16), "{label} {name}: {e}"),
        }
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

fn real_tables_in(tier: Tier) {
    for path in common::tier_tables("", tier) {
        match load(&path) {
            lpmkit::AnyTable::V4(t) => {
                let keys = keys_for(&t.rib, 1 << 18, 5);
                check_all(&t.rib, &keys, &path.display().to_string());
            }
            lpmkit::AnyTable::V6(t) => {
                let keys = keys_for(&t.rib, 1 << 17, 5);
                check_all(&t.rib, &keys, &path.display().to_string());
            }
        }
    }
}

#[test]
fn synthetic_tables() {
    synthetic_tables_seeds(0..1);
    let t = lpmkit::synth::default_v4();
    check_all(&t.rib, &boundary_keys(&t.rib), "synth v4");
    let t = lpmkit::synth::default_v6();
    check_all(&t.rib, &boundary_keys(&t.rib), "synth v6");
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
            let mut rng = SplitMix64::new(!seed);
            let mut keys = boundary_keys(&rib);
            keys.extend((0..20_000).map(|_| rng.next() as u32));
            check_all(&rib, &keys, &format!("seed {seed} routes {routes}"));
        }
    }
}

#[test]
fn edge_routes() {
    let rib = common::rib_of::<u32>;
    // One route of every length along one path, /0 to /32.
    let chain = common::v4_chain();
    let chain: Vec<(&str, u32)> = chain.iter().map(|(p, h)| (p.as_str(), *h)).collect();
    for r in [
        Rib::new(),
        rib(&[("0.0.0.0/0", 7)]),
        rib(&[
            ("0.0.0.0/0", 7),
            ("0.0.0.0/32", 8),
            ("255.255.255.255/32", 9),
        ]),
        rib(&chain),
        // Prefixes on every layer boundary (/18, /24) and just past them.
        rib(&[
            ("10.0.0.0/18", 1),
            ("10.0.64.0/19", 2),
            ("10.0.0.0/24", 3),
            ("10.0.0.0/25", 4),
            ("10.0.1.1/32", 5),
        ]),
        // Next hops past 16-bit entries.
        rib(&[
            ("10.0.0.0/8", 300_000),
            ("10.1.2.0/24", 2),
            ("10.1.2.7/32", 3),
        ]),
    ] {
        let keys = boundary_keys(&r);
        check_all(&r, &keys, "edge");
    }
    let big = rib(&[("10.0.0.0/8", 300_000)]);
    let forced = ObmaConfig {
        entry_width: Some(Width::U16),
        ..ObmaConfig::b()
    };
    assert!(Obma::build(&big, &forced).is_err());
}

/// Applies `changes` to `rib` and, `batch` per `apply`, to `fib`; checks the boundaries
/// of the changed prefixes against the `Rib` whenever more than `every` have gathered,
/// and `2^16` keys (seed `seed`) at the end.
fn apply_checked<A: Address>(
    fib: &mut Obma<A>,
    rib: &mut Rib<A>,
    changes: &[Change<A>],
    batch: usize,
    every: usize,
    seed: u64,
    label: &str,
) {
    let mut probe = Vec::new();
    for group in changes.chunks(batch) {
        for c in group {
            c.apply_to(rib);
            common::push_boundaries(&c.prefix(), &mut probe);
        }
        fib.apply(rib, group).unwrap();
        if probe.len() > every {
            let mut out = vec![0; probe.len()];
            fib.lookup_batch(&probe, &mut out);
            assert_eq!(out, reference(rib, &probe), "{label}");
            probe.clear();
        }
    }
    let keys = keys_for(rib, 1 << 16, seed);
    assert_agrees(
        &*fib,
        rib,
        &keys,
        &reference(rib, &keys),
        &format!("{label}, final"),
    );
}

fn replay<A: Address>(table: &str, trace_prefix: &str, limit: usize, batch: usize) {
    let Some(base) = data_files("fib", table).into_iter().next() else {
        return;
    };
    for trace in data_files("updates", trace_prefix) {
        for (name, cfg) in configs().into_iter().take(3) {
            let mut t = load_table::<A>(&base);
            let changes = load_updates::<A>(&trace, &mut t.next_hops);
            let mut rib = t.rib;
            let mut fib = Obma::build(&rib, &cfg).unwrap();
            let n = changes.len().min(limit);
            let label = format!("{} obma-{name}, batches of {batch}", trace.display());
            apply_checked(&mut fib, &mut rib, &changes[..n], batch, 4096, 9, &label);
            let st = fib.stats();
            eprintln!("{} obma-{name}: {st}", trace.display());
        }
    }
}

#[test]
fn replay_update_traces_v4() {
    replay::<u32>("ipv4-ris-rrc06", "ipv4-", 60_000, 7);
}

#[test]
fn replay_update_traces_v6() {
    replay::<u128>("ipv6-ris-rrc01-linx", "ipv6-", 60_000, 7);
}

/// One change per `apply`: the single-change paths (presence bits instead of `Rib`
/// walks, the chunk's default as the covering route).
#[test]
fn replay_update_traces_one_change_at_a_time() {
    replay::<u32>("ipv4-ris-rrc06", "ipv4-", 10_000, 1);
    replay::<u128>("ipv6-ris-rrc01-linx", "ipv6-", 10_000, 1);
}

#[test]
#[ignore = "long tier: 60,000 changes of every trace, one per apply, on three tables"]
fn replay_update_traces_one_change_at_a_time_long() {
    replay::<u32>("ipv4-ris-rrc06", "ipv4-", 60_000, 1);
    replay::<u32>("ipv4-bart", "ipv4-", 60_000, 1);
    replay::<u128>("ipv6-ris-rrc01-linx", "ipv6-", 60_000, 1);
}

fn prefix_strategy() -> impl Strategy<Value = (u128, u8)> {
    (0u32..4, any::<u32>(), 0u8..=32, 0u8..3).prop_map(|(hi, r, len, kind)| {
        let noise = match kind {
            0 => r & 0xff_ffff,
            1 => r >> 2,
            _ => r & 0xffff,
        };
        (((hi << 30) | noise) as u128, len)
    })
}

/// Prefixes crowded into four /24s (lengths 22..=32): chunks below the DPA with routes
/// nested inside routes at every depth, so that a withdrawal's covering route is found
/// inside its chunk by the presence bits (down to the deepest levels of a stride-8
/// chunk) or, fully covered, in the `Rib`.
fn nested_prefix_strategy() -> impl Strategy<Value = (u128, u8)> {
    (0u32..4, any::<u8>(), 22u8..=32)
        .prop_map(|(net, low, len)| ((0x0a00_0000 | net << 8 | low as u32) as u128, len))
}

fn run_sequence(ops: &[Op], cfg: &ObmaConfig) -> Result<(), TestCaseError> {
    run_sequence_batched(ops, cfg, 2)
}

/// [`run_sequence`] applying the changes `batch` at a time (1: the paths of a change
/// alone in its batch).
fn run_sequence_batched(ops: &[Op], cfg: &ObmaConfig, batch: usize) -> Result<(), TestCaseError> {
    let mut fib = Obma::build(&Rib::<u32>::new(), cfg).unwrap();
    common::replay_ops(&mut fib, Rib::new(), ops, batch, cfg)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_updates(
        ops in prop::collection::vec((prefix_strategy(), 1u32..6, prop::bool::weighted(0.7)), 1..80),
        which in 0usize..6,
        small_thresholds in any::<bool>(),
    ) {
        let (_, mut cfg) = configs().swap_remove(which);
        if small_thresholds {
            if let Grouping::Adaptive { .. } = cfg.grouping {
                cfg.grouping = Grouping::Adaptive { f0: 1, beta: 2, decay_updates: 7 };
            }
        }
        run_sequence(&ops, &cfg)?;
    }

    #[test]
    fn random_nested_updates_one_at_a_time(
        ops in prop::collection::vec((nested_prefix_strategy(), 1u32..6, prop::bool::weighted(0.6)), 1..160),
        which in 0usize..6,
    ) {
        let (_, cfg) = configs().swap_remove(which);
        run_sequence_batched(&ops, &cfg, 1)?;
    }
}

/// The origin-AS table (51,788 next hops, 55,015 layer-2 chunks) in 16 bits: the DPA
/// names its next hops through a dictionary of its own. Changes that bring the DPA new
/// next hops (new slots) and new chunks, one per `apply` and in batches, agree with the
/// `Rib` throughout; enough new next hops fill the dictionary, and the table is rebuilt.
#[test]
fn dpa_dictionary_updates() {
    let Some(t) = common::fib_table::<u32>("ipv4-routeviews-2015-11-01-originas.txt.xz") else {
        return;
    };
    let max_hop = t.next_hops.len() as u32;
    for (name, cfg) in configs().into_iter().take(3) {
        for (batch, n, seed) in [(1usize, 6_000usize, 1u64), (7, 30_000, 2)] {
            let mut rib = t.rib.clone();
            let mut fib = Obma::build(&rib, &cfg).unwrap();
            assert_eq!(fib.entry_width(), Width::U16, "obma-{name}");
            let slots = fib.dpa_dictionary().expect("a DPA dictionary");
            let changes = common::dpa_churn(n, max_hop, seed);
            let label = format!("obma-{name} dict, batches of {batch}");
            apply_checked(&mut fib, &mut rib, &changes, batch, 2048, 3, &label);
            let st = fib.stats();
            eprintln!("obma-{name}, batches of {batch}, dictionary of {slots}: {st}");
        }
    }
}

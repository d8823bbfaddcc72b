//! Lulea against the `Rib`: real tables, synthetic tables, edge routes, both pointer
//! widths and the SWAR/scalar sparse-chunk search, the real update traces replayed
//! incrementally, and random update sequences (proptest).

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::schemes::lulea::{Lulea, LuleaConfig};
use lpmkit::schemes::Width;
use lpmkit::{Address, Fib, IncrementalFib, NextHop, Prefix, Rib};
use proptest::prelude::*;

use common::{data_files, load_table, load_updates, push_boundaries, reference, Op};
use lpmkit::traffic::boundary_keys;

/// `lookup`, `lookup_batch` at several lengths, and the scalar twin.
fn compare(fib: &Lulea, keys: &[u32], want: &[u32], what: &str) {
    let mut out = vec![u32::MAX; keys.len()];
    fib.lookup_batch(keys, &mut out);
    let mut scalar = vec![u32::MAX; keys.len()];
    fib.lookup_batch_scalar(keys, &mut scalar);
    for (i, (&k, &w)) in keys.iter().zip(want).enumerate() {
        assert_eq!(out[i], w, "{what}: lookup_batch {k:x}");
        assert_eq!(scalar[i], w, "{what}: scalar {k:x}");
        assert_eq!(NextHop::raw(fib.lookup(k)), w, "{what}: lookup {k:x}");
    }
    for n in [0, 1, 15, 16, 17, 33, 200] {
        let n = n.min(keys.len());
        let mut out = vec![u32::MAX; n];
        fib.lookup_batch(&keys[..n], &mut out);
        assert_eq!(&out[..], &want[..n], "{what}: lookup_batch of {n}");
    }
}

fn check_widths(rib: &Rib<u32>, keys: &[u32], label: &str) {
    let want = reference(rib, keys);
    for pointer_width in [None, Some(Width::U32)] {
        for force_scalar in [false, true] {
            let cfg = LuleaConfig {
                pointer_width,
                force_scalar,
            };
            let fib = Lulea::build(rib, &cfg).unwrap();
            compare(&fib, keys, &want, &format!("{label} {cfg:?}"));
        }
    }
}

#[test]
fn real_tables() {
    for path in data_files("fib", "ipv4-") {
        let rib = load_table::<u32>(&path).rib;
        let mut keys = boundary_keys(&rib);
        let mut rng = SplitMix64::new(1);
        keys.extend((0..1 << 19).map(|_| rng.next() as u32));
        let want = reference(&rib, &keys);
        let fib = Lulea::build(&rib, &LuleaConfig::default()).unwrap();
        compare(&fib, &keys, &want, &path.display().to_string());
        eprintln!("{}: {}", path.display(), fib.stats());
    }
}

#[test]
fn synthetic_tables() {
    synthetic_tables_seeds(0..1);
    // lpmkit's Internet-like generator.
    let t = lpmkit::synth::default_v4();
    let keys = boundary_keys(&t.rib);
    check_widths(&t.rib, &keys, "synth");
}

#[test]
#[ignore = "long tier: more seeds of the synthetic tables"]
fn more_synthetic_tables() {
    synthetic_tables_seeds(1..4);
}

/// Synthetic tables from each of `seeds`, each size.
fn synthetic_tables_seeds(seeds: std::ops::Range<u64>) {
    for seed in seeds {
        for (routes, hops) in [(50, 3), (2000, 5), (30_000, 70_000)] {
            let rib = common::synthetic::<u32>(seed, routes, hops, 12);
            let mut keys = boundary_keys(&rib);
            let mut rng = SplitMix64::new(seed);
            keys.extend((0..20_000).map(|_| rng.next() as u32));
            check_widths(&rib, &keys, &format!("seed {seed} routes {routes}"));
        }
    }
}

#[test]
fn edge_routes() {
    let rib = common::rib_of::<u32>;
    let chain = common::v4_chain();
    let chain: Vec<(&str, u32)> = chain.iter().map(|(p, h)| (p.as_str(), *h)).collect();
    // Next hops past the direct codewords (22,207) and past 16-bit pointers.
    for r in [
        rib(&[("0.0.0.0/0", 7)]),
        rib(&[
            ("0.0.0.0/0", 7),
            ("0.0.0.0/32", 8),
            ("255.255.255.255/32", 9),
        ]),
        rib(&chain),
        rib(&[
            ("10.0.0.0/8", 30_000),
            ("10.1.0.0/16", 2),
            ("11.0.0.0/11", 40_000),
        ]),
        rib(&[("10.0.0.0/8", 300_000), ("10.1.2.0/24", 2)]),
        Rib::new(),
    ] {
        let keys = boundary_keys(&r);
        check_widths(&r, &keys, "edge");
    }
    let big = rib(&[("10.0.0.0/8", 300_000)]);
    assert!(Lulea::build(
        &big,
        &LuleaConfig {
            pointer_width: Some(Width::U16),
            ..Default::default()
        }
    )
    .is_err());
}

fn check_prefix(fib: &Lulea, rib: &Rib<u32>, p: &Prefix<u32>, rng: &mut SplitMix64) {
    let mut keys = Vec::new();
    push_boundaries(p, &mut keys);
    for _ in 0..4 {
        keys.push(p.first() | (rng.next() as u32 & u32::hostmask(p.len())));
    }
    let want = reference(rib, &keys);
    let mut out = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    assert_eq!(out, want, "after change of {p}");
}

#[test]
fn replay_update_traces() {
    let Some(base) = data_files("fib", "ipv4-ris-rrc06").into_iter().next() else {
        return;
    };
    for trace in data_files("updates", "ipv4-") {
        let mut table = load_table::<u32>(&base);
        let changes = load_updates::<u32>(&trace, &mut table.next_hops);
        let mut rib = table.rib;
        let mut fib = Lulea::build(&rib, &LuleaConfig::default()).unwrap();
        let mut rng = SplitMix64::new(3);
        // The 2024 trace is long: its first 30,000 changes, 10 per call.
        let n = changes.len().min(30_000);
        for (i, group) in changes[..n].chunks(10).enumerate() {
            for c in group {
                c.apply_to(&mut rib);
            }
            fib.apply(&rib, group).unwrap();
            for c in group {
                check_prefix(&fib, &rib, &c.prefix(), &mut rng);
            }
            if i % 500 == 499 {
                let sample: Vec<u32> = (0..20_000).map(|_| rng.next() as u32).collect();
                let mut out = vec![0; sample.len()];
                fib.lookup_batch(&sample, &mut out);
                assert_eq!(out, reference(&rib, &sample), "{}", trace.display());
            }
        }
        let keys = boundary_keys(&rib);
        compare(&fib, &keys, &reference(&rib, &keys), "final");
        eprintln!("{}: {}", trace.display(), fib.stats());
    }
}

fn prefix_strategy() -> impl Strategy<Value = (u128, u8)> {
    (0u32..4, any::<u32>(), 0u8..=32, 0u8..3).prop_map(|(hi, r, len, kind)| {
        let noise = match kind {
            0 => r & 0xff_ffff,
            1 => r >> 2,
            _ => 0,
        };
        (((hi << 30) | noise) as u128, len)
    })
}

fn run_sequence(ops: &[Op], width: Option<Width>) -> Result<(), TestCaseError> {
    let cfg = LuleaConfig {
        pointer_width: width,
        ..Default::default()
    };
    let mut fib = Lulea::build(&Rib::<u32>::new(), &cfg).unwrap();
    // Odd steps apply the last two changes in one call.
    common::replay_ops(&mut fib, Rib::new(), ops, 2, &cfg)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_updates(
        ops in prop::collection::vec((prefix_strategy(), 1u32..6, prop::bool::weighted(0.7)), 1..60),
        width in prop::sample::select(vec![None, Some(Width::U32)]),
    ) {
        run_sequence(&ops, width)?;
    }
}

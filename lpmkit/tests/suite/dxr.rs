//! Differential tests of DXR (`d16r` … `d24r`) against the `Rib`: every real IPv4 table
//! in `../shared/data/fib/` for every k, synthetic tables, the update traces of
//! `../shared/data/updates/` replayed change by change, random update sequences
//! (proptest), and the layout's limits.
//!
//! Real data is read from `../shared/data` by the shared harness (`common`): when it is
//! absent the tests that need it print a note and pass, unless `LPMKIT_REQUIRE_DATA` is
//! set.

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::schemes::dxr::{Dxr, DxrConfig, NextHopMode};
use lpmkit::traffic::{boundary_keys, uniform};
use lpmkit::{BuildError, Change, Fib, IncrementalFib, Ipv4, NextHop, Prefix, Rib, Table};
use proptest::prelude::*;

use common::{push_boundaries, Tier};

// ---------------------------------------------------------------------------------------
// Checking.

/// Compares `lookup`, `lookup_batch` and the paper's search loop with the expected ids.
fn compare(d: &Dxr, keys: &[u32], want: &[u32], what: &str) {
    let mut out = vec![u32::MAX; keys.len()];
    d.lookup_batch(keys, &mut out);
    let mut bad = 0;
    for (i, (&k, &w)) in keys.iter().zip(want).enumerate() {
        let one = NextHop::raw(d.lookup(k));
        let paper = NextHop::raw(d.lookup_paper_loop(k));
        if out[i] != w || one != w || paper != w {
            if bad < 5 {
                eprintln!(
                    "{what}: {}: key {k:#010x} want {w} batch {} lookup {one} paper {paper}",
                    d.name(),
                    out[i]
                );
            }
            bad += 1;
        }
    }
    assert_eq!(bad, 0, "{what}: {} mismatches of {}", bad, keys.len());
}

/// Builds every k and compares on prefix boundaries, chunk boundaries and random keys.
fn check_all_k(rib: &Rib<Ipv4>, label: &str, extra: &[DxrConfig]) {
    let mut keys = boundary_keys(rib);
    // Chunk boundaries: all of them for k = 20 (which include those of k < 20), a sample
    // for k > 20.
    for c in 0..1u32 << 20 {
        keys.extend([c << 12, (c << 12) | 0xfff]);
    }
    let mut rng = SplitMix64::new(3);
    for _ in 0..1 << 18 {
        let c = rng.next() as u32 & 0xffff_ff00;
        keys.extend([c, c | 0xff, c.wrapping_sub(1), c.wrapping_add(0x100)]);
    }
    keys.extend(uniform::<u32>(1 << 20, 4));
    let want = common::reference(rib, &keys);
    // Every k on the best path; the lower paths the CPU has on k = 16, 18, 24.
    let lower: Vec<DxrConfig> = common::isa_levels()
        .into_iter()
        .skip(1)
        .flat_map(|isa| [16, 18, 24].map(|k| DxrConfig::with_k(k).isa(isa)))
        .collect();
    let configs = (16..=24)
        .map(DxrConfig::with_k)
        .chain(lower)
        .chain(extra.iter().cloned());
    for cfg in configs {
        let d = Dxr::build(rib, &cfg).unwrap_or_else(|e| panic!("{label} {}: {e}", cfg.name()));
        d.check_invariants().unwrap();
        compare(
            &d,
            &keys,
            &want,
            &format!("{label} [{}]", d.implementation()),
        );
        let s = d.dxr_stats();
        eprintln!(
            "{label} {}: {} B ({:.2} B/prefix), {} full chunks, {} short + {} long ranges, \
             build {:.0} ms",
            d.name(),
            s.total_bytes(),
            s.total_bytes() as f64 / rib.len().max(1) as f64,
            s.full_chunks,
            s.short_ranges,
            s.long_ranges,
            s.build_ms
        );
    }
}

// ---------------------------------------------------------------------------------------
// Real tables.

#[test]
fn real_tables_every_k() {
    real_tables_every_k_in(Tier::Default);
}

#[test]
#[ignore = "long tier: every k on the other real tables (the descriptor table forced on those with many next hops)"]
fn other_real_tables_every_k() {
    real_tables_every_k_in(Tier::Long);
}

fn real_tables_every_k_in(tier: Tier) {
    for path in common::tier_tables("ipv4-", tier) {
        let Table {
            rib,
            next_hops: hops,
            ..
        } = common::load_table::<Ipv4>(&path);
        let label = path.file_name().unwrap().to_string_lossy().to_string();
        // The descriptor table, forced, on the tables with many next hops.
        let extra: Vec<DxrConfig> = if hops.len() > 255 {
            [16, 18]
                .map(|k| DxrConfig::with_k(k).remap_next_hops(Some(true)))
                .to_vec()
        } else {
            vec![]
        };
        check_all_k(&rib, &label, &extra);
        if hops.len() > 255 {
            let id = Dxr::build(&rib, &DxrConfig::d16r()).unwrap().dxr_stats();
            let re = Dxr::build(&rib, &extra[0]).unwrap().dxr_stats();
            assert_eq!(re.next_hop_mode, Some(NextHopMode::Remapped));
            assert!(
                re.short_ranges >= id.short_ranges,
                "most used ids fit 8 bits"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Synthetic tables.

/// Random prefixes of every length, clustered (so that they nest and share chunks), with
/// `hops` next hops starting at `base`.
fn synthetic(seed: u64, n: usize, hops: u32, base: u32) -> Rib<Ipv4> {
    let mut rng = SplitMix64::new(seed);
    let mut rib = Rib::new();
    let clusters: Vec<u32> = (0..16).map(|_| rng.next() as u32).collect();
    for _ in 0..n {
        let len = match rng.below(10) {
            0 => rng.below(33) as u8,
            1..=5 => 24,
            6 => 16 + rng.below(8) as u8,
            7 => 25 + rng.below(8) as u8,
            _ => 8 + rng.below(24) as u8,
        };
        let c = clusters[rng.below(16) as usize];
        let a = c ^ (rng.next() as u32 >> (8 + rng.below(16)));
        let nh = NextHop::new(base + rng.below(hops as u64) as u32).unwrap();
        rib.insert(Prefix::new_truncating(a, len), nh);
    }
    rib
}

#[test]
fn synthetic_tables_every_k() {
    synthetic_cases(&[
        (1, 20_000, 4, 1),          // few next hops: merging, short chunks
        (4, 30_000, 1000, 100_000), // ids beyond 16 bits: descriptor table
        (5, 200, 3, 1),             // tiny
    ]);
}

#[test]
#[ignore = "long tier: more synthetic tables for every k"]
fn more_synthetic_tables_every_k() {
    synthetic_cases(&[
        (2, 50_000, 300, 1),     // next hops beyond 8 bits: long chunks
        (3, 30_000, 50, 60_000), // ids close to the 16-bit limit
    ]);
}

/// Synthetic tables `(seed, routes, next hops, first next hop id)` for every k (seed 5
/// with a default route).
fn synthetic_cases(cases: &[(u64, usize, u32, u32)]) {
    for &(seed, n, hops, base) in cases {
        let mut rib = synthetic(seed, n, hops, base);
        if seed == 5 {
            rib.insert(Prefix::DEFAULT, NextHop::new(9).unwrap());
        }
        check_all_k(&rib, &format!("synthetic seed {seed}"), &[]);
    }
}

// ---------------------------------------------------------------------------------------
// Update traces.

/// Keys to check after a change of `p`: its boundaries, the boundaries of the chunks it
/// starts and ends in, keys inside it and random keys.
fn touched_keys(p: Prefix<Ipv4>, k: u32, rng: &mut SplitMix64, keys: &mut Vec<u32>) {
    push_boundaries(&p, keys);
    let cmask = u32::MAX >> k;
    for a in [p.first(), p.last()] {
        keys.extend([a & !cmask, a | cmask, (a & !cmask).wrapping_sub(1)]);
        keys.push((a | cmask).wrapping_add(1));
    }
    let host = !(u32::MAX.checked_shl(32 - p.len() as u32).unwrap_or(0));
    for _ in 0..8 {
        keys.push(p.first() | (rng.next() as u32 & host));
        keys.push(rng.next() as u32);
    }
}

fn replay_checked(
    base: &Rib<Ipv4>,
    changes: &[Change<Ipv4>],
    cfg: &DxrConfig,
    batch: usize,
    label: &str,
) {
    let mut rib = base.clone();
    let mut d = Dxr::build(&rib, cfg).unwrap();
    let k = d.k();
    let mut rng = SplitMix64::new(11);
    let mut keys = Vec::new();
    let mut rebuilt = 0;
    for group in changes.chunks(batch) {
        for c in group {
            c.apply_to(&mut rib);
        }
        rebuilt += d.apply(&rib, group).unwrap().units_rebuilt;
        keys.clear();
        for c in group {
            touched_keys(c.prefix(), k, &mut rng, &mut keys);
        }
        compare(&d, &keys, &common::reference(&rib, &keys), label);
    }
    d.check_invariants().unwrap();
    let keys = uniform::<u32>(1 << 18, 99);
    compare(&d, &keys, &common::reference(&rib, &keys), label);
    let s = d.dxr_stats();
    eprintln!(
        "{label} {} batch {batch}: {} changes, {rebuilt} chunk rewrites, {} compactions, \
         {} full rebuilds, {:.0} updates/s",
        d.name(),
        changes.len(),
        s.compactions,
        s.full_rebuilds,
        changes.len() as f64 / s.update_seconds
    );
}

#[test]
fn update_traces() {
    update_traces_matching("ipv4-ris-rrc01-linx-2014");
}

#[test]
#[ignore = "long tier: every IPv4 trace"]
fn every_update_trace() {
    update_traces_matching("ipv4-");
}

/// Replays the IPv4 traces whose names start with `prefix` on the rrc06 table: change by
/// change for k = 16, 18 and 20, in batches for d24r and d18r.
fn update_traces_matching(prefix: &str) {
    let Some(Table {
        rib: base,
        next_hops: mut hops,
        ..
    }) = common::fib_table::<Ipv4>("ipv4-ris-rrc06-2010-07-01-fib.txt.xz")
    else {
        return;
    };
    for path in common::data_files("updates", prefix) {
        let changes = common::load_updates::<Ipv4>(&path, &mut hops);
        let label = path.file_name().unwrap().to_string_lossy().to_string();
        for k in [16, 18, 20] {
            replay_checked(&base, &changes, &DxrConfig::with_k(k), 1, &label);
        }
        replay_checked(&base, &changes, &DxrConfig::with_k(24), 8, &label);
        replay_checked(&base, &changes, &DxrConfig::d18r(), 64, &label);
    }
}

// ---------------------------------------------------------------------------------------
// Random update sequences.

fn prefix_strategy() -> impl Strategy<Value = Prefix<Ipv4>> {
    // A few top bytes, so prefixes nest and collide; every length.
    (0u32..4, any::<u32>(), 0u8..=32).prop_map(|(top, low, len)| {
        let a = ((10 + top) << 24) | (low & 0x000f_0f03);
        Prefix::new_truncating(a, len)
    })
}

#[derive(Clone, Debug)]
enum Op {
    Announce(Prefix<Ipv4>, u32),
    Withdraw(usize),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (prefix_strategy(), prop_oneof![1u32..4, 1u32..400, 65_000u32..70_000])
            .prop_map(|(p, h)| Op::Announce(p, h)),
        2 => any::<usize>().prop_map(Op::Withdraw),
    ]
}

/// Random changes applied `batch` per `apply` to an empty DXR of `k` bits: after every
/// apply the invariants hold and every prefix boundary agrees with the `Rib`; at the end
/// the table equals a fresh build.
fn random_updates_case(k: u8, batch: usize, ops: &[Op]) -> Result<(), TestCaseError> {
    let cfg = DxrConfig::with_k(k).compact_threshold(0.2);
    let mut rib = Rib::<Ipv4>::new();
    let mut d = Dxr::build(&rib, &cfg).unwrap();
    let mut live: Vec<Prefix<Ipv4>> = vec![];
    let changes: Vec<Change<Ipv4>> = ops
        .iter()
        .map(|op| match *op {
            Op::Announce(p, h) => {
                live.push(p);
                Change::Announce(p, NextHop::new(h).unwrap())
            }
            Op::Withdraw(i) if !live.is_empty() => Change::Withdraw(live[i % live.len()]),
            Op::Withdraw(_) => Change::Withdraw(Prefix::DEFAULT),
        })
        .collect();
    for group in changes.chunks(batch) {
        for c in group {
            c.apply_to(&mut rib);
        }
        d.apply(&rib, group).unwrap();
        d.check_invariants().map_err(TestCaseError::fail)?;
        let mut keys = boundary_keys(&rib);
        for c in group {
            push_boundaries(&c.prefix(), &mut keys);
        }
        let want = common::reference(&rib, &keys);
        let mut out = vec![0; keys.len()];
        d.lookup_batch(&keys, &mut out);
        for (i, &key) in keys.iter().enumerate() {
            prop_assert_eq!(out[i], want[i], "batch {:#010x}", key);
            prop_assert_eq!(NextHop::raw(d.lookup(key)), want[i], "lookup {:#010x}", key);
        }
    }
    // The result equals a fresh build.
    let fresh = Dxr::build(&rib, &cfg).unwrap();
    let keys = uniform::<u32>(4096, 5);
    let (mut a, mut b) = (vec![0; keys.len()], vec![0; keys.len()]);
    d.lookup_batch(&keys, &mut a);
    fresh.lookup_batch(&keys, &mut b);
    prop_assert_eq!(a, b);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn random_updates_match_the_rib(
        k in 16u8..=24,
        batch in 1usize..6,
        ops in proptest::collection::vec(op_strategy(), 1..120),
    ) {
        random_updates_case(k, batch, &ops)?;
    }
}

// The same property, many more cases: 128 in two tests of 64 (the test threads run them
// side by side), new ones at every run (proptest draws its seed), so each of the 45
// (k, batch) pairs is met about three times per run on average.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    #[ignore = "long tier: 128 random update sequences"]
    fn random_updates_match_the_rib_many(
        k in 16u8..=24,
        batch in 1usize..6,
        ops in proptest::collection::vec(op_strategy(), 1..120),
    ) {
        random_updates_case(k, batch, &ops)?;
    }

    #[test]
    #[ignore = "long tier: 128 random update sequences"]
    fn random_updates_match_the_rib_many_more(
        k in 16u8..=24,
        batch in 1usize..6,
        ops in proptest::collection::vec(op_strategy(), 1..120),
    ) {
        random_updates_case(k, batch, &ops)?;
    }
}

// ---------------------------------------------------------------------------------------
// Limits.

/// 600,000 /25s with alternating next hops: 600,000 long ranges, more than the 2^19 words
/// the paper's 19-bit position field addresses.
#[test]
fn range_table_position_limit() {
    let mut rib = Rib::new();
    for i in 0..300_000u32 {
        let a = 0x0100_0000 + (i << 8);
        rib.insert(Prefix::new_truncating(a, 25), NextHop::new(1).unwrap());
        rib.insert(
            Prefix::new_truncating(a | 0x80, 25),
            NextHop::new(2).unwrap(),
        );
    }
    let err = Dxr::build(&rib, &DxrConfig::d16r().widen(false))
        .err()
        .unwrap();
    match err {
        BuildError::CapacityExceeded {
            what,
            max,
            requested,
            ..
        } => {
            assert_eq!(what, "range table words");
            assert_eq!(max, 1 << 19);
            assert!(requested > 1 << 19);
        }
        e => panic!("unexpected {e}"),
    }
    let d = Dxr::build(&rib, &DxrConfig::d16r()).unwrap();
    assert_eq!(d.dxr_stats().position_shift, 1);
    d.check_invariants().unwrap();
    let mut keys = vec![];
    for (p, _) in rib.iter().step_by(7) {
        push_boundaries(&p, &mut keys);
    }
    compare(&d, &keys, &common::reference(&rib, &keys), "position limit");
    // Updates keep working past the paper's limit.
    let mut d = d;
    let ch = Change::Announce("1.0.0.0/26".parse().unwrap(), NextHop::new(3).unwrap());
    ch.apply_to(&mut rib);
    d.apply(&rib, &[ch]).unwrap();
    compare(
        &d,
        &[0x0100_0000, 0x0100_0040, 0x0100_0080],
        &[3, 1, 2],
        "after update",
    );
}

/// 65,536 chunks of 17 long ranges each (8 /24s split into alternating /25s): the paper's
/// split needs a position shift of 2 (every chunk padded to 20 words), the re-split entry
/// (5 size bits) holds the 17 words of each chunk unpadded, so the build takes it; lookups
/// and updates past its size field (a layout rebuild) stay right.
#[test]
fn many_small_chunks_take_the_resplit_entry() {
    let mut rib = Rib::new();
    for c in 0..1u32 << 16 {
        for j in 0..8u32 {
            let a = (c << 16) | (j << 8);
            rib.insert(Prefix::new_truncating(a, 25), NextHop::new(1).unwrap());
            rib.insert(
                Prefix::new_truncating(a | 0x80, 25),
                NextHop::new(2).unwrap(),
            );
        }
    }
    let d = Dxr::build(&rib, &DxrConfig::d16r()).unwrap();
    let st = d.dxr_stats();
    assert_eq!(
        (st.position_shift, st.size_shift, st.entry_size_bits),
        (0, 0, 5),
        "{st:?}"
    );
    // 17 words per chunk, unpadded, and the 16 words after the last entry.
    assert_eq!(st.range_table_bytes, ((4 * 17) << 16) + 4 * 16);
    d.check_invariants().unwrap();
    let mut keys = vec![];
    for (p, _) in rib.iter().step_by(5) {
        push_boundaries(&p, &mut keys);
    }
    compare(&d, &keys, &common::reference(&rib, &keys), "re-split entry");
    // 16 more ranges in one chunk: past the 5-bit size field, a layout rebuild.
    let mut d = d;
    let mut changes = vec![];
    for j in 8..16u32 {
        let a = 0x0a0b_0000 | (j << 8);
        changes.push(Change::Announce(
            Prefix::new_truncating(a, 25),
            NextHop::new(3).unwrap(),
        ));
        changes.push(Change::Announce(
            Prefix::new_truncating(a | 0x80, 25),
            NextHop::new(4).unwrap(),
        ));
    }
    for ch in &changes {
        ch.apply_to(&mut rib);
    }
    d.apply(&rib, &changes).unwrap();
    d.check_invariants().unwrap();
    assert!(d.dxr_stats().entry_size_bits >= 6, "{:?}", d.dxr_stats());
    let keys: Vec<u32> = (0..1u32 << 12).map(|i| 0x0a0b_0000 | (i << 4)).collect();
    compare(
        &d,
        &keys,
        &common::reference(&rib, &keys),
        "after the layout rebuild",
    );
}

/// A table just under the position field (s = 0) that updates push over it: the update
/// compacts, then rebuilds once with a wider position shift, and stays correct.
#[test]
fn position_overflow_during_updates() {
    let nh = |v| NextHop::new(v).unwrap();
    let mut rib = Rib::new();
    // 240,000 /24s split into two /25s: 480,000 long ranges (words).
    for i in 0..240_000u32 {
        let a = 0x0100_0000 + (i << 8);
        rib.insert(Prefix::new_truncating(a, 25), nh(1));
        rib.insert(Prefix::new_truncating(a | 0x80, 25), nh(2));
    }
    let mut d = Dxr::build(&rib, &DxrConfig::d16r()).unwrap();
    assert_eq!(d.dxr_stats().position_shift, 0);
    let changes: Vec<Change<Ipv4>> = (240_000..280_000u32)
        .flat_map(|i| {
            let a = 0x0100_0000 + (i << 8);
            [
                Change::Announce(Prefix::new_truncating(a, 25), nh(1)),
                Change::Announce(Prefix::new_truncating(a | 0x80, 25), nh(2)),
            ]
        })
        .collect();
    let mut full = 0;
    for group in changes.chunks(1000) {
        for c in group {
            c.apply_to(&mut rib);
        }
        full += d.apply(&rib, group).unwrap().full_rebuild as u32;
    }
    let s = d.dxr_stats();
    assert_eq!((full, s.full_rebuilds, s.position_shift), (1, 1, 1));
    d.check_invariants().unwrap();
    let mut keys = uniform::<u32>(1 << 16, 8);
    for c in changes.iter().step_by(13) {
        push_boundaries(&c.prefix(), &mut keys);
    }
    compare(
        &d,
        &keys,
        &common::reference(&rib, &keys),
        "position overflow",
    );
    // Without widening the same updates are an error.
    let mut rib2: Rib<Ipv4> = rib
        .iter()
        .filter(|(p, _)| p.addr() < 0x0100_0000 + (240_000 << 8))
        .collect();
    let mut d2 = Dxr::build(&rib2, &DxrConfig::d16r().widen(false)).unwrap();
    let mut err = None;
    for group in changes.chunks(1000) {
        for c in group {
            c.apply_to(&mut rib2);
        }
        if let Err(e) = d2.apply(&rib2, group) {
            err = Some(e);
            break;
        }
    }
    assert!(
        matches!(
            err,
            Some(BuildError::CapacityExceeded {
                what: "range table words",
                ..
            })
        ),
        "{err:?}"
    );
}

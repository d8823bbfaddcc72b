//! Spider against the reference `Rib`: every variant (16/8/1 ways and every degree of
//! parallelism 1…16, AVX2 and scalar, lane-refilling, pipelined and the paper's loop, every
//! element layout that holds the table), IPv4 and IPv6, on every real table in
//! `../shared/data/fib/` and on synthetic ones.
//!
//! Real tables are read from `../shared/data` by the shared harness (`common`): when
//! absent the tests say so and skip them, unless `LPMKIT_REQUIRE_DATA` is set.

use crate::common;

use lpmkit::rng::{mix64, SplitMix64};
use lpmkit::schemes::spider::{ElementLayout, Spider, SpiderConfig};
use lpmkit::{registry, Address, BuildOptions, Fib, Implementation, NextHop};
use lpmkit::{Ipv4, Ipv6, Prefix, Rib};
use proptest::prelude::*;

// ---------------------------------------------------------------------------------------
// Keys.
// ---------------------------------------------------------------------------------------

/// Uniform random addresses and, for IPv6, the paper's "matching" keys (§V-A): the first
/// 32 bits of a prefix of the table, 32 random bits, then `::1`; plus random addresses
/// inside random prefixes of the table.
fn random_keys<A: Address>(rib: &Rib<A>, n: usize, seed: u64) -> Vec<A> {
    let mut rng = SplitMix64::new(seed);
    let prefixes: Vec<Prefix<A>> = rib.iter().map(|(p, _)| p).collect();
    let mut keys = Vec::with_capacity(n);
    for i in 0..n {
        let r = A::from_u128(rng.next_u128());
        let key = match (i % 3, prefixes.is_empty()) {
            (_, true) | (0, _) => r,
            (1, _) => {
                let p = prefixes[rng.below(prefixes.len() as u64) as usize];
                p.addr().or(r.and(A::hostmask(p.len())))
            }
            _ if A::BITS == 128 => {
                let p = prefixes[rng.below(prefixes.len() as u64) as usize];
                let top = p.addr().to_u128() >> 96;
                A::from_u128(top << 96 | (rng.next() as u32 as u128) << 64 | 1)
            }
            _ => {
                let p = prefixes[rng.below(prefixes.len() as u64) as usize];
                p.addr().or(r.and(A::hostmask(p.len())))
            }
        };
        keys.push(key);
    }
    keys
}

// ---------------------------------------------------------------------------------------
// The harness.
// ---------------------------------------------------------------------------------------

/// Every variant of Spider on `rib`: the registry rows, every degree of parallelism with
/// AVX2 (when present) and scalar, the paper's loop, and every layout that fits.
fn check_table<A: Address>(name: &str, rib: &Rib<A>, seed: u64)
where
    Spider<A>: Fib<A>,
{
    check_table_with(name, rib, seed, 300_000);
}

/// [`check_table`] with `n` random keys (at least 20,011) beside the boundaries.
fn check_table_with<A: Address>(name: &str, rib: &Rib<A>, seed: u64, n: usize)
where
    Spider<A>: Fib<A>,
{
    let t0 = std::time::Instant::now();
    let boundary = lpmkit::traffic::boundary_keys(rib);
    let random = random_keys(rib, n, seed);
    let (want_b, want_r) = (
        common::reference(rib, &boundary),
        common::reference(rib, &random),
    );
    // Registry rows, all keys.
    for info in registry::schemes_for(A::FAMILY).filter(|s| s.name.starts_with("spider")) {
        for isa in common::isa_levels() {
            let fib = info.build(rib, &common::isa_options(isa)).unwrap();
            let what = format!("{name} {} {:?}", info.name, fib.implementation());
            assert_eq!(fib.name(), info.name);
            common::assert_lookups(fib.as_ref(), &boundary, &want_b, &what);
            common::assert_lookups(fib.as_ref(), &random, &want_r, &what);
        }
    }
    // Every degree of parallelism, every ISA path, pipelined or not, on a sample.
    let (keys, want) = (&random[..20_011], &want_r[..20_011]);
    let mut shapes = Vec::new();
    for isa in common::isa_levels() {
        if isa == lpmkit::simd::Isa::Scalar {
            shapes.push((isa, true, None));
        } else {
            shapes.extend([
                (isa, true, Some(false)),
                (isa, true, Some(true)),
                (isa, false, Some(false)),
            ]);
        }
    }
    for ways in 1..=16 {
        for &(isa, pipeline, refill) in &shapes {
            let cfg = SpiderConfig {
                ways,
                isa: Some(isa),
                pipeline,
                refill,
                ..SpiderConfig::w16()
            };
            let fib = Spider::build(rib, &cfg).unwrap();
            common::assert_lookups(&fib, keys, want, &format!("{name} {cfg:?}"));
        }
    }
    // Every layout that holds the table, including the paper's element.
    let auto = Spider::build(rib, &SpiderConfig::w16()).unwrap().layout();
    for (layout, refill) in ElementLayout::ALL
        .into_iter()
        .flat_map(|l| [(l, Some(false)), (l, Some(true))])
    {
        let cfg = SpiderConfig {
            layout: Some(layout),
            refill,
            ..SpiderConfig::w16()
        };
        match Spider::build(rib, &cfg) {
            Ok(fib) => {
                let what = format!("{name} {layout} refill {refill:?}");
                common::assert_lookups(&fib, &boundary, &want_b, &what);
                common::assert_lookups(&fib, &random, &want_r, &what);
            }
            Err(e) => assert!(
                ElementLayout::ALL.iter().position(|&l| l == layout)
                    < ElementLayout::ALL.iter().position(|&l| l == auto),
                "{name}: {layout} refused although the build chose {auto}: {e}"
            ),
        }
    }
    eprintln!(
        "{name}: {} routes, {} keys, auto layout {auto}, {:.1} s",
        rib.len(),
        boundary.len() + random.len(),
        t0.elapsed().as_secs_f64()
    );
}

/// Batches of every length 0…64 at several offsets, for every registry row, and for the
/// refilling and the lockstep kernels in every layout that holds the table.
fn check_batch_lengths<A: Address>(name: &str, rib: &Rib<A>)
where
    Spider<A>: Fib<A>,
{
    let keys = random_keys(rib, 4096, 99);
    let want = common::reference(rib, &keys);
    for layout in ElementLayout::ALL {
        for ways in [8, 16] {
            for refill in [Some(true), Some(false)] {
                let cfg = SpiderConfig {
                    ways,
                    layout: Some(layout),
                    refill,
                    ..SpiderConfig::w16()
                };
                let Ok(fib) = Spider::build(rib, &cfg) else {
                    continue; // the table does not fit the layout (checked in check_table)
                };
                for len in 0..=64 {
                    for start in [0, 1, 17, 1000] {
                        let what = format!("{name} {cfg:?} len {len} at {start}");
                        let range = start..start + len;
                        common::assert_lookups(&fib, &keys[range.clone()], &want[range], &what);
                    }
                }
            }
        }
    }
    for info in registry::schemes_for(A::FAMILY).filter(|s| s.name.starts_with("spider")) {
        for ways in [None, Some(3), Some(11)] {
            let mut opts = BuildOptions::default();
            opts.ways = ways;
            let fib = info.build(rib, &opts).unwrap();
            for len in 0..=64 {
                for start in [0, 1, 17, 1000] {
                    let what = format!("{name} {} ways {ways:?} len {len} at {start}", info.name);
                    common::assert_lookups(
                        fib.as_ref(),
                        &keys[start..start + len],
                        &want[start..start + len],
                        &what,
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Real tables.
// ---------------------------------------------------------------------------------------

/// The routes of the table `fib/{name}`, if the data is there.
fn load<A: Address>(name: &str) -> Option<Rib<A>> {
    common::fib_table::<A>(name).map(|t| t.rib)
}

/// The same prefixes with next hops hashed from the prefix, mod `n` (1…n).
fn with_hashed_next_hops<A: Address>(rib: &Rib<A>, n: u64) -> Rib<A> {
    rib.iter()
        .map(|(p, _)| {
            let a = p.addr().to_u128();
            let h = mix64((a as u64) ^ mix64((a >> 64) as u64) ^ p.len() as u64);
            (p, NextHop::new(1 + (h % n) as u32).unwrap())
        })
        .collect()
}

#[test]
#[ignore = "long tier: every Spider variant on the bart IPv4 table"]
fn ipv4_bart_tier1() {
    let Some(rib) = load::<Ipv4>("ipv4-bart-tier1-prefixes.txt.xz") else {
        return;
    };
    check_table("ipv4-bart", &rib, 1);
    check_batch_lengths("ipv4-bart", &rib);
}

#[test]
fn ipv4_rrc06() {
    let Some(mut rib) = load::<Ipv4>("ipv4-ris-rrc06-2010-07-01-fib.txt.xz") else {
        return;
    };
    check_table("ipv4-rrc06", &rib, 2);
    check_batch_lengths("ipv4-rrc06", &rib);
    // Plus a default route and host routes at both ends of the space.
    rib.insert(Prefix::DEFAULT, NextHop::new(100).unwrap());
    rib.insert(Prefix::host(0), NextHop::new(101).unwrap());
    rib.insert(Prefix::host(u32::MAX), NextHop::new(102).unwrap());
    check_table("ipv4-rrc06+default+hosts", &rib, 3);
}

#[test]
fn ipv4_originas_wider_layout() {
    // 51,788 next hops: more than the 16-bit value space holds beside the rows.
    let Some(rib) = load::<Ipv4>("ipv4-routeviews-2015-11-01-originas.txt.xz") else {
        return;
    };
    let fib = Spider::build(&rib, &SpiderConfig::w16()).unwrap();
    assert_ne!(fib.layout(), ElementLayout::Compact16);
    check_table("ipv4-originas", &rib, 4);
    check_batch_lengths("ipv4-originas", &rib);
}

#[test]
#[ignore = "long tier: every Spider variant on the bart IPv6 table"]
fn ipv6_bart_tier1() {
    let Some(rib) = load::<Ipv6>("ipv6-bart-tier1-prefixes.txt.xz") else {
        return;
    };
    check_table("ipv6-bart", &rib, 5);
    check_batch_lengths("ipv6-bart", &rib);
}

#[test]
fn ipv6_bart_tier1_many_next_hops_is_wide() {
    // The same prefixes with 70,000 next hops: only the wide element holds them.
    let Some(rib) = load::<Ipv6>("ipv6-bart-tier1-prefixes.txt.xz") else {
        return;
    };
    let rib = with_hashed_next_hops(&rib, 70_000);
    let fib = Spider::build(&rib, &SpiderConfig::w16()).unwrap();
    assert_eq!(fib.layout(), ElementLayout::Wide32);
    check_table("ipv6-bart-70k-next-hops", &rib, 6);
    check_batch_lengths("ipv6-bart-70k-next-hops", &rib);
}

#[test]
fn ipv6_linx() {
    let Some(rib) = load::<Ipv6>("ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz") else {
        return;
    };
    assert!(rib.contains(&Prefix::DEFAULT), "this table has ::/0");
    check_table("ipv6-linx", &rib, 7);
    check_batch_lengths("ipv6-linx", &rib);
}

#[test]
fn ipv6_originas() {
    let Some(rib) = load::<Ipv6>("ipv6-routeviews-2015-11-01-originas.txt.xz") else {
        return;
    };
    check_table("ipv6-originas", &rib, 8);
    check_batch_lengths("ipv6-originas", &rib);
}

// ---------------------------------------------------------------------------------------
// Synthetic tables.
// ---------------------------------------------------------------------------------------

/// Random prefixes around a few hubs (so they nest), with `hops` next hops.
fn synthetic<A: Address>(seed: u64, n: usize, hops: u64) -> Rib<A> {
    let mut rng = SplitMix64::new(seed);
    let hubs: Vec<u128> = (0..16).map(|_| rng.next_u128()).collect();
    let mut rib = Rib::new();
    for _ in 0..n {
        let hub = hubs[rng.below(16) as usize];
        let noise = rng.next_u128() >> rng.below(128);
        let len = rng.below(A::BITS as u64 + 1) as u8;
        let p = Prefix::new_truncating(A::from_u128(hub ^ noise), len);
        rib.insert(p, NextHop::new(1 + rng.below(hops) as u32).unwrap());
    }
    rib
}

#[test]
fn synthetic_tables() {
    check_table_with(
        "synthetic-v4",
        &synthetic::<Ipv4>(0, 20_000, 50),
        0,
        1 << 16,
    );
    check_table_with(
        "synthetic-v6",
        &synthetic::<Ipv6>(0, 20_000, 50),
        0,
        1 << 16,
    );
    // Host routes only, and /0 only.
    let mut hosts = Rib::<Ipv4>::new();
    let mut rng = SplitMix64::new(42);
    for _ in 0..5000 {
        hosts.insert(
            Prefix::host(rng.next() as u32),
            NextHop::new(1 + rng.below(9) as u32).unwrap(),
        );
    }
    check_table("hosts-v4", &hosts, 9);
    let mut default = Rib::<Ipv6>::new();
    default.insert(Prefix::DEFAULT, NextHop::new(3).unwrap());
    check_table("default-v6", &default, 10);
    check_table("empty-v6", &Rib::<Ipv6>::new(), 11);
}

#[test]
#[ignore = "long tier: more synthetic tables, 300,000 random keys each"]
fn more_synthetic_tables() {
    for seed in 0..3 {
        check_table("synthetic-v4", &synthetic::<Ipv4>(seed, 20_000, 50), seed);
        check_table("synthetic-v6", &synthetic::<Ipv6>(seed, 20_000, 50), seed);
    }
}

#[test]
fn the_best_kernel_is_used_when_present() {
    use lpmkit::simd::{Avx2, Avx512, Isa};
    let rib = synthetic::<Ipv4>(5, 100, 5);
    // 16 ways: AVX-512 where the CPU has it, else AVX2, else scalar.
    let fib = Spider::build(&rib, &SpiderConfig::w16()).unwrap();
    let best = if Avx512::new().is_some() {
        Implementation::Avx512
    } else if Avx2::new().is_some() {
        Implementation::Avx2
    } else {
        Implementation::Scalar
    };
    assert_eq!(fib.implementation(), best);
    // Under an AVX2 ceiling, and with 8 ways (which the AVX-512 kernels do not serve).
    let avx2 = if Avx2::new().is_some() {
        Implementation::Avx2
    } else {
        Implementation::Scalar
    };
    let capped = SpiderConfig {
        isa: Some(Isa::Avx2),
        ..SpiderConfig::w16()
    };
    assert_eq!(Spider::build(&rib, &capped).unwrap().implementation(), avx2);
    let w8 = Spider::build(&rib, &SpiderConfig::w8()).unwrap();
    assert_eq!(w8.implementation(), avx2);
    let w1 = Spider::build(&rib, &SpiderConfig::w1()).unwrap();
    assert_eq!(w1.implementation(), Implementation::Scalar);
    // IPv6 as IPv4, by default and when asked for.
    let rib6 = synthetic::<Ipv6>(5, 100, 5);
    let v6 = Spider::build(&rib6, &SpiderConfig::w16()).unwrap();
    assert_eq!(v6.implementation(), best);
    let asked = SpiderConfig {
        isa: Some(Isa::Avx512),
        ..SpiderConfig::w16()
    };
    assert_eq!(Spider::build(&rib6, &asked).unwrap().implementation(), best);
}

#[test]
fn batch_rebuild_through_the_publisher() {
    // Spider plugs into the generic RCU handle: changes go to the Rib, a rebuild is
    // published with one pointer swap, and readers see the new table.
    use lpmkit::sync::{Publisher, PublisherConfig};
    use lpmkit::Change;
    let base = synthetic::<Ipv4>(21, 5_000, 20);
    let build = |rib: &Rib<Ipv4>| Spider::build(rib, &SpiderConfig::w16());
    let config = PublisherConfig {
        hold_time: std::time::Duration::from_secs(3600),
    };
    let mut publisher = Publisher::new(base, build, config).unwrap();
    let mut reader = publisher.reader();
    let mut rng = SplitMix64::new(5);
    for round in 0..5 {
        for _ in 0..200 {
            let p = Prefix::new_truncating(rng.next() as u32, 8 + rng.below(25) as u8);
            let change = if rng.below(4) == 0 {
                Change::Withdraw(p)
            } else {
                Change::Announce(p, NextHop::new(1 + rng.below(30) as u32).unwrap())
            };
            publisher.apply(&[change]).unwrap();
        }
        let info = publisher.publish().unwrap();
        assert_eq!(info.generation, round + 1);
        let keys = random_keys(publisher.rib(), 50_000, round);
        let want = common::reference(publisher.rib(), &keys);
        let mut out = vec![0; keys.len()];
        assert_eq!(reader.lookup_batch(&keys, &mut out), round + 1);
        assert_eq!(out, want, "round {round}");
    }
}

// ---------------------------------------------------------------------------------------
// Property test: random updates, then rebuild.
// ---------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Insert(u128, u8, u32),
    Remove(u128, u8),
}

fn ops(bits: u8) -> impl Strategy<Value = Vec<Op>> {
    // Addresses from a few stems so that prefixes nest and collide.
    let addr = (0u8..4, any::<u128>(), 0u32..128).prop_map(|(stem, r, shift)| {
        let stems = [0u128, u128::MAX, 0x2001_0db8 << 96, 0x0a00_0000 << 96];
        stems[stem as usize] ^ (r >> shift.min(127))
    });
    let op = prop_oneof![
        3 => (addr.clone(), 0..=bits, 1u32..6).prop_map(|(a, l, h)| Op::Insert(a, l, h)),
        1 => (addr, 0..=bits).prop_map(|(a, l)| Op::Remove(a, l)),
    ];
    proptest::collection::vec(op, 1..120)
}

fn run_ops<A: Address>(ops: &[Op]) -> Result<(), TestCaseError>
where
    Spider<A>: Fib<A>,
{
    let mut rib = Rib::<A>::new();
    let shift = 128 - A::BITS as u32;
    for (i, op) in ops.iter().enumerate() {
        match *op {
            Op::Insert(a, l, h) => {
                let p = Prefix::new_truncating(A::from_u128(a >> shift), l);
                rib.insert(p, NextHop::new(h).unwrap());
            }
            Op::Remove(a, l) => {
                let p = Prefix::new_truncating(A::from_u128(a >> shift), l);
                rib.remove(&p);
            }
        }
        if i % 10 != 9 && i + 1 != ops.len() {
            continue;
        }
        // Rebuild (the batch-update model) and compare.
        let mut keys = lpmkit::traffic::boundary_keys(&rib);
        keys.extend(random_keys(&rib, 64, i as u64));
        let want = common::reference(&rib, &keys);
        for cfg in [
            SpiderConfig::w16(),
            SpiderConfig {
                ways: 5,
                ..SpiderConfig::w16()
            },
            SpiderConfig {
                refill: Some(true),
                ..SpiderConfig::w8()
            },
            SpiderConfig {
                refill: Some(false),
                ..SpiderConfig::w16()
            },
            SpiderConfig::paper(),
            SpiderConfig::w1(),
        ] {
            let fib = Spider::build(&rib, &cfg).unwrap();
            let mut out = vec![0; keys.len()];
            fib.lookup_batch(&keys, &mut out);
            prop_assert_eq!(&out, &want, "{:?} after {} ops", cfg, i + 1);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn updates_then_rebuild_v4(ops in ops(32)) {
        run_ops::<Ipv4>(&ops)?;
    }

    #[test]
    fn updates_then_rebuild_v6(ops in ops(128)) {
        run_ops::<Ipv6>(&ops)?;
    }
}

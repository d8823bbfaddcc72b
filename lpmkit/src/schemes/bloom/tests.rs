use super::*;
use crate::fib::{BuildError, Change, IncrementalFib};
use crate::prefix::{Family, Ipv4, Ipv6, Prefix};
use crate::rib::Rib;
use crate::rng::SplitMix64;
use crate::test_support::{nh, rib};

/// Every route boundary ±1, plus `extra`, through `lookup`, `lookup_batch` (both hashing
/// paths) and the stalled lookup.
fn check<A: Address>(rib: &Rib<A>, fib: &Bloom<A>, extra: &[A]) {
    let mut keys: Vec<A> = vec![A::ZERO, A::MAX];
    keys.extend_from_slice(extra);
    keys.extend(crate::traffic::boundary_keys(rib));
    let mut out = vec![0; keys.len()];
    let mut scalar = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    fib.lookup_batch_scalar(&keys, &mut scalar);
    for (i, &k) in keys.iter().enumerate() {
        let want = NextHop::raw(rib.lookup(k));
        assert_eq!(NextHop::raw(fib.lookup(k)), want, "lookup {k:x}");
        assert_eq!(out[i], want, "lookup_batch {k:x}");
        assert_eq!(scalar[i], want, "lookup_batch_scalar {k:x}");
        assert_eq!(
            fib.table().stalled_lookup(k, &mut || {}),
            want,
            "stalled {k:x}"
        );
    }
    fib.check_against(rib).unwrap();
}

/// Bloomfwd with a summary that lists few /32s: only those of the routes longer than /32
/// and of the longest routes up to /32.
fn small_summary() -> BloomConfig {
    let mut c = BloomConfig::bloomfwd();
    c.summary_max = 4;
    c
}

fn configs() -> Vec<BloomConfig> {
    let mut v = vec![
        BloomConfig::naive(),
        BloomConfig::baseline(),
        BloomConfig::bloomfwd(),
        BloomConfig::bloomfwd().force_scalar(true),
        BloomConfig::bloomfwd().isa(crate::simd::Isa::Avx2),
        BloomConfig::bloomfwd()
            .isa(crate::simd::Isa::Avx2)
            .summary(false),
        BloomConfig::bloomfwd().fpr(0.01),
        BloomConfig::bloomfwd().fpr(0.9),
        BloomConfig::bloomfwd().levels(Levels::Present),
        BloomConfig::bloomfwd().level_hint(false),
        BloomConfig::bloomfwd().summary(false),
        BloomConfig::bloomfwd().force_scalar(true).summary(false),
        small_summary(),
        BloomConfig::baseline().level_hint(true),
        BloomConfig::baseline().level_hint(true).summary(false),
        BloomConfig::bloomfwd()
            .level_hint(true)
            .levels(Levels::Present)
            .force_scalar(true),
    ];
    for h in [HashKind::Murmur64, HashKind::Knuth, HashKind::CRand] {
        v.push(BloomConfig::bloomfwd().hash(h));
        v.push(BloomConfig::bloomfwd().table_hash(h));
    }
    let mut plain = BloomConfig::bloomfwd();
    plain.double_hashing = Some(false);
    plain.reuse_hash = Some(false);
    v.push(plain);
    v
}

const V4: &[(&str, u32)] = &[
    ("0.0.0.0/0", 1),
    ("10.0.0.0/8", 2),
    ("10.1.0.0/20", 3),
    ("10.1.8.0/21", 9),
    ("10.1.1.0/24", 4),
    ("10.1.2.0/23", 8),
    ("10.1.1.128/25", 5),
    ("10.1.1.7/32", 6),
    ("255.255.255.255/32", 7),
    ("0.0.0.0/32", 10),
    ("192.168.0.0/16", 2),
    ("192.168.3.252/30", 11),
];

const V6: &[(&str, u32)] = &[
    ("::/0", 1),
    ("2001:db8::/32", 2),
    ("2001:db8:1::/48", 3),
    ("2001:db8:1::/64", 4),
    ("2001:db8:1::1/128", 5),
    ("2001:db8:1::100/120", 6),
    ("2001:db8:1:0:8000::/65", 7),
    ("2001:db8:2::/47", 8),
    ("2a00::/12", 9),
    ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 10),
    ("::/128", 11),
];

#[test]
fn small_tables_every_config() {
    let r4 = rib::<Ipv4>(V4);
    let r6 = rib::<Ipv6>(V6);
    for cfg in configs() {
        check(&r4, &Bloom::build(&r4, &cfg).unwrap(), &[0x0a01_0101]);
        if cfg.resolve::<Ipv6>().is_ok() {
            check(&r6, &Bloom::build(&r6, &cfg).unwrap(), &[]);
        }
    }
    for levels in [
        Levels::Dpcpe {
            n: 2,
            optimal: false,
        },
        Levels::Dpcpe {
            n: 3,
            optimal: true,
        },
        Levels::Explicit(vec![16, 48, 64]),
        Levels::Every,
    ] {
        let cfg = BloomConfig::bloomfwd().levels(levels);
        check(&r6, &Bloom::build(&r6, &cfg).unwrap(), &[]);
    }
    let cfg = BloomConfig::bloomfwd().levels(Levels::Dpcpe {
        n: 3,
        optimal: false,
    });
    check(&r4, &Bloom::build(&r4, &cfg).unwrap(), &[]);
    for empty in [Rib::<Ipv4>::new(), rib(&[("0.0.0.0/0", 3)])] {
        check(
            &empty,
            &Bloom::build(&empty, &BloomConfig::bloomfwd()).unwrap(),
            &[],
        );
    }
}

#[test]
fn expansion_limit_is_an_error() {
    let r = rib::<Ipv6>(&[("2000::/3", 1)]);
    let cfg = BloomConfig::bloomfwd().levels(Levels::Explicit(vec![64]));
    assert!(matches!(
        Bloom::build(&r, &cfg),
        Err(BuildError::CapacityExceeded {
            what: "expanded prefixes",
            ..
        })
    ));
}

/// Random changes, applied one batch at a time, each checked against the Rib.
fn random_updates<A: Address>(cfg: &BloomConfig, seed: u64, steps: usize, batch: usize) {
    let mut rng = SplitMix64::new(seed);
    let mut r = Rib::<A>::new();
    let mut fib = Bloom::build(&r, cfg).unwrap();
    let bits = A::BITS as u64;
    let mut pending = Vec::new();
    for step in 0..steps {
        let len = match rng.below(4) {
            0 => rng.below(bits + 1),
            1 => 16 + rng.below(9),
            _ => bits.min(64) - rng.below(12),
        } as u8;
        let region = A::from_u128((rng.below(3) as u128) << (A::BITS - 3));
        let bits_in = A::from_u128(rng.next_u128() >> (128 - A::BITS as u32 + 6));
        let p = Prefix::new_truncating(region.or(bits_in), len);
        let c = if rng.below(3) == 0 {
            Change::Withdraw(p)
        } else {
            Change::Announce(p, nh(1 + rng.below(5) as u32))
        };
        c.apply_to(&mut r);
        pending.push(c);
        if pending.len() >= batch || step + 1 == steps {
            fib.apply(&r, &pending).unwrap();
            pending.clear();
            if step % (4 * batch) == 0 || step + 1 == steps {
                check(&r, &fib, &[]);
            }
        }
    }
    check(&r, &fib, &[]);
}

#[test]
fn updates_follow_the_rib() {
    updates_follow_the_rib_in(&[(Family::V4, 1), (Family::V6, 9)]);
}

#[test]
#[ignore = "long tier: the other family for each batch size"]
fn updates_follow_the_rib_other_batches() {
    updates_follow_the_rib_in(&[(Family::V4, 9), (Family::V6, 1)]);
}

/// Random update sequences for every variant, in each `(family, batch size)` of `runs`.
fn updates_follow_the_rib_in(runs: &[(Family, usize)]) {
    // C rand() costs ~350 steps per hash: fewer steps for the variants that use it.
    for (i, (cfg, steps)) in [
        (BloomConfig::bloomfwd(), 400),
        (BloomConfig::bloomfwd().fpr(0.05), 400),
        (BloomConfig::bloomfwd().levels(Levels::Present), 200),
        (BloomConfig::bloomfwd().summary(false), 200),
        (small_summary(), 200),
        (BloomConfig::baseline(), 100),
        (BloomConfig::baseline().level_hint(true), 100),
        (BloomConfig::naive(), 100),
    ]
    .into_iter()
    .enumerate()
    {
        let i = i as u64;
        for &(family, batch) in runs {
            // The seeds of the runs: 0.. (IPv4, one change per apply), 10.. (IPv4, nine),
            // 20.. (IPv6, one), 30.. (IPv6, nine).
            let seed = i + if batch == 1 { 0 } else { 10 };
            match family {
                Family::V4 => random_updates::<Ipv4>(&cfg, seed, steps, batch),
                Family::V6 => random_updates::<Ipv6>(&cfg, 20 + seed, steps, batch),
            }
        }
    }
}

#[test]
fn a_full_filter_rebuilds() {
    let mut r = Rib::<Ipv4>::new();
    for i in 0..100u32 {
        r.insert(Prefix::new_truncating(0x0a00_0000 | i << 8, 24), nh(1));
    }
    let mut fib = Bloom::build(&r, &BloomConfig::bloomfwd()).unwrap();
    let mut rebuilt = false;
    for i in 100..300u32 {
        let c = Change::Announce(Prefix::new_truncating(0x0a00_0000 | i << 8, 24), nh(2));
        c.apply_to(&mut r);
        rebuilt |= fib.apply(&r, &[c]).unwrap().full_rebuild;
    }
    assert!(rebuilt, "growing G1 threefold passes the FPR bound");
    check(&r, &fib, &[]);
    let s = fib.bloom_stats();
    assert!(s.rebuilds >= 1);
    for l in &s.levels {
        assert!(l.fpr_predicted <= 0.36 + 1e-9, "{l:?}");
    }
}

#[test]
fn a_filter_past_its_target_at_build_does_not_rebuild_at_every_update() {
    // k = ⌈lg(1/0.9)⌉ = 1 and m = n·0.152/ln 2: the paper's sizing gives ~99 % at build.
    let mut r = Rib::<Ipv4>::new();
    for i in 0..1000u32 {
        r.insert(Prefix::new_truncating(0x0a00_0000 | i << 8, 24), nh(1));
    }
    let mut fib = Bloom::build(&r, &BloomConfig::bloomfwd().fpr(0.9)).unwrap();
    for i in 1000..1010u32 {
        let c = Change::Announce(Prefix::new_truncating(0x0a00_0000 | i << 8, 24), nh(2));
        c.apply_to(&mut r);
        assert!(!fib.apply(&r, &[c]).unwrap().full_rebuild);
    }
    check(&r, &fib, &[]);
}

#[test]
fn stats_report_levels() {
    let r = rib::<Ipv6>(V6);
    let fib = Bloom::build(&r, &BloomConfig::bloomfwd()).unwrap();
    let s = fib.bloom_stats();
    assert!(s.levels[0].gate);
    assert_eq!(s.levels[0].keys, 3, "three /64s hold longer routes");
    assert_eq!(s.levels[1].len, 64);
    let text = fib.stats().to_string();
    assert!(text.contains("gate"), "{text}");
    let v4 = rib::<Ipv4>(V4);
    let fib = Bloom::build(&v4, &BloomConfig::baseline()).unwrap();
    let s = fib.bloom_stats();
    assert_eq!(s.dla_entries, 1 << 20);
    assert_eq!(
        s.levels.iter().map(|l| (l.lo, l.len)).collect::<Vec<_>>(),
        vec![(25, 32), (21, 24)]
    );
    // 10.1.1.128/25 → 128 /32s, 10.1.1.7/32 captures one, 255.255.255.255, 0.0.0.0,
    // 192.168.3.252/30 → 4.
    assert_eq!(s.levels[0].keys, 128 + 1 + 1 + 1 + 4);
}

#[test]
fn bulk_lookup_with_threads() {
    let r = rib::<Ipv4>(V4);
    let fib = Bloom::build(&r, &BloomConfig::bloomfwd()).unwrap();
    let keys: Vec<u32> = crate::traffic::uniform(100_000, 3);
    let want: Vec<u32> = keys.iter().map(|&k| NextHop::raw(r.lookup(k))).collect();
    let mut out = vec![0; keys.len()];
    fib.lookup_bulk(&keys, &mut out, 3);
    assert_eq!(out, want);
    let mut cfg = BloomConfig::bloomfwd();
    cfg.threads = 2;
    let fib = Bloom::build(&r, &cfg).unwrap();
    out.fill(0);
    fib.lookup_batch(&keys, &mut out);
    assert_eq!(out, want);
}

#[test]
fn a_full_level_hint_rebuilds() {
    // Each /48 under a /32 of its own: every announcement lists one more /32.
    let p48 = |i: u128| {
        Prefix::<Ipv6>::new_truncating(0x2001_0000_0000_u128 << 80 | i << 96 | 7 << 80, 48)
    };
    let mut r = Rib::<Ipv6>::new();
    r.insert("2000::/3".parse().unwrap(), nh(1));
    for i in 0..10u128 {
        r.insert(p48(i), nh(2));
    }
    let mut fib = Bloom::build(&r, &BloomConfig::bloomfwd().summary(false)).unwrap();
    assert!(fib.table().hint.is_some());
    let mut rebuilt = false;
    for i in 10..400u128 {
        let c = Change::Announce(p48(i), nh(3));
        c.apply_to(&mut r);
        rebuilt |= fib.apply(&r, &[c]).unwrap().full_rebuild;
    }
    assert!(rebuilt, "the hint fills up");
    check(&r, &fib, &[0x2001_0005_0007_0000_0000_0000_0000_0001]);
    // Withdrawals leave the hint's bits; answers stay exact.
    for i in 0..400u128 {
        let c = Change::Withdraw(p48(i));
        c.apply_to(&mut r);
        fib.apply(&r, &[c]).unwrap();
    }
    check(&r, &fib, &[0x2001_0005_0007_0000_0000_0000_0000_0001]);
}

#[test]
fn a_full_summary_rebuilds() {
    // As above, through the summary: each /48 lists one more /32; the /32s under the
    // 2001::/16 are all listed (lo = 16).
    let p48 = |i: u128| {
        Prefix::<Ipv6>::new_truncating(0x2002_0000_0000_u128 << 80 | i << 96 | 7 << 80, 48)
    };
    let mut r = Rib::<Ipv6>::new();
    r.insert("2000::/3".parse().unwrap(), nh(1));
    r.insert("2001::/16".parse().unwrap(), nh(4));
    for i in 0..10u128 {
        r.insert(p48(i), nh(2));
    }
    let mut fib = Bloom::build(&r, &BloomConfig::bloomfwd()).unwrap();
    assert!(fib.table().summary.is_some() && fib.table().hint.is_none());
    assert_eq!(
        fib.bloom_stats().summary.map(|s| (s.0, s.2)),
        Some((10 + 65536, 4))
    );
    let mut rebuilt = false;
    for i in 10..40_000u128 {
        let c = Change::Announce(p48(i), nh(3));
        c.apply_to(&mut r);
        rebuilt |= fib.apply(&r, &[c]).unwrap().full_rebuild;
        if rebuilt {
            break;
        }
    }
    assert!(rebuilt, "the summary fills up");
    let key = 0x2002_0005_0007_0000_0000_0000_0000_0001;
    check(&r, &fib, &[key, 0x2001_1234_0000_0000_0000_0000_0000_0001]);
    // A shorter route changes the answer of every /32 under it, listed or not.
    for c in [
        Change::Announce("2002::/15".parse().unwrap(), nh(5)),
        Change::Announce("2001:8000::/17".parse().unwrap(), nh(6)),
        Change::Withdraw("2001::/16".parse().unwrap()),
        Change::Withdraw(p48(5)),
    ] {
        c.apply_to(&mut r);
        fib.apply(&r, &[c]).unwrap();
        check(&r, &fib, &[key, 0x2001_1234_0000_0000_0000_0000_0000_0001]);
    }
}

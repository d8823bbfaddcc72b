//! Tests of `lpmkit::synth` (calibration targets, determinism, knobs); the key streams of
//! `lpmkit::traffic`: `tests/traffic.rs`.
//!
//! The statistics here are computed by the tests themselves from the generated `Rib`
//! (independently of `synth::Shape`, which is checked against them), and compared with
//! the targets stated in the `synth` module docs. Where the shared data set is present,
//! the synthetic length mix is also compared with the real bart tables.

use crate::common;

use std::collections::HashMap;

use lpmkit::rng::mix64;
use lpmkit::synth::{self, Shape, SynthConfig, SynthError};
use lpmkit::{Address, Ipv4, Ipv6, NextHop, Prefix, Rib, Table};

// ---------------------------------------------------------------------------------------
// Helpers

/// A checksum over the iterated routes and the next-hop names, in iteration order.
fn checksum<A: Address>(t: &Table<A>) -> u64 {
    let mut h = mix64(t.rib.len() as u64);
    for (p, nh) in t.rib.iter() {
        let v = p.addr().to_u128();
        h = mix64(h ^ v as u64);
        h = mix64(h ^ (v >> 64) as u64);
        h = mix64(h ^ ((p.len() as u64) << 32 | nh.get() as u64));
    }
    for (id, name) in t.next_hops.iter() {
        for b in name.bytes() {
            h = mix64(h ^ b as u64 ^ (id.get() as u64) << 8);
        }
    }
    h
}

/// Independently computed structure: (nested routes, same next hop as closest cover,
/// share of the address space under top-level routes, routes per next hop).
struct Measured {
    nested: usize,
    same_as_cover: usize,
    covered: f64,
    per_nh: HashMap<u32, usize>,
    non_default: usize,
}

fn measure<A: Address>(rib: &Rib<A>) -> Measured {
    // Routes come in (address, length) order; keep the chain of open covers.
    let mut open: Vec<(Prefix<A>, NextHop)> = Vec::new();
    let mut m = Measured {
        nested: 0,
        same_as_cover: 0,
        covered: 0.0,
        per_nh: HashMap::new(),
        non_default: 0,
    };
    for (p, nh) in rib.iter() {
        *m.per_nh.entry(nh.get()).or_default() += 1;
        if p.is_empty() {
            continue;
        }
        m.non_default += 1;
        while let Some((q, _)) = open.last() {
            if q.covers(&p) {
                break;
            }
            open.pop();
        }
        match open.last() {
            Some(&(_, cover_nh)) => {
                m.nested += 1;
                m.same_as_cover += (cover_nh == nh) as usize;
            }
            None => m.covered += p.size() as f64 / 2f64.powi(A::BITS as i32),
        }
        open.push((p, nh));
    }
    m
}

fn share(hist: &[usize], len: usize, total: usize) -> f64 {
    hist[len] as f64 / total as f64
}

fn assert_near(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got:.4}, expected {want:.4} ± {tol}"
    );
}

fn assert_within(what: &str, got: f64, lo: f64, hi: f64) {
    assert!(
        (lo..=hi).contains(&got),
        "{what}: {got:.4}, expected {lo}..={hi}"
    );
}

// ---------------------------------------------------------------------------------------
// synth: calibration of the defaults

#[test]
fn default_v4_meets_the_calibration_targets() {
    let t = synth::default_v4();
    let rib = &t.rib;
    assert_eq!(t.name, "synthetic-ipv4-1000000-seed1");
    assert_eq!(rib.len(), 1_000_000, "exactly the requested routes");
    assert_eq!(t.next_hops.len(), 200);

    let hist = rib.length_histogram();
    let n = rib.len();
    assert_near("/24 share", share(&hist, 24, n), 0.5962, 0.005);
    assert_near("/22 share", share(&hist, 22, n), 0.1204, 0.005);
    assert_near("/23 share", share(&hist, 23, n), 0.1070, 0.005);
    // Above the reference size, /8–/16 keep the reference counts (13,490 /16s).
    assert_near("/16 share", share(&hist, 16, n), 0.01349, 0.002);
    assert_eq!(hist[16], 13_490);
    let longer: usize = hist[25..].iter().sum();
    assert_within(
        "share longer than /24",
        longer as f64 / n as f64,
        0.0005,
        0.003,
    );
    assert_eq!(
        hist[..8].iter().sum::<usize>(),
        0,
        "nothing shorter than /8"
    );

    let m = measure(rib);
    assert_within("nested share", m.nested as f64 / n as f64, 0.48, 0.62);
    assert_near("covered space", m.covered, 0.713, 0.02);
    let dominant = *m.per_nh.values().max().unwrap() as f64 / n as f64;
    assert_near("dominant next hop", dominant, 0.70, 0.03);
    assert_eq!(m.per_nh.len(), 200, "every next hop is used");
    assert_eq!(*m.per_nh.iter().max_by_key(|e| e.1).unwrap().0, 1);
    let same = m.same_as_cover as f64 / m.nested as f64;
    assert_within("same next hop as cover", same, 0.70, 0.80);

    // Every route lies in 1.0.0.0–223.255.255.255 and avoids 10/8, 127/8 and the
    // reserved blocks.
    let reserved: Vec<Prefix<Ipv4>> = [
        "0.0.0.0/8",
        "10.0.0.0/8",
        "127.0.0.0/8",
        "224.0.0.0/3",
        "100.64.0.0/10",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    for (p, _) in rib.iter() {
        for r in &reserved {
            assert!(!r.covers(&p) && !p.covers(r), "{p} overlaps reserved {r}");
        }
    }

    // Shape measures the same figures.
    let s = Shape::of(rib);
    assert_eq!(s.nested(), m.nested);
    assert_eq!(s.same_as_cover, m.same_as_cover);
    assert_eq!(s.histogram, hist);
    assert!((s.covered_fraction - m.covered).abs() < 1e-9);
    assert_within("sibling share", s.sibling_share(), 0.60, 0.80);
    assert_within(
        "boundaries per route",
        s.boundaries as f64 / n as f64,
        1.0,
        1.35,
    );
    println!("default_v4: {s}");
}

#[test]
fn default_v6_meets_the_calibration_targets() {
    let t = synth::default_v6();
    let rib = &t.rib;
    assert_eq!(t.name, "synthetic-ipv6-200000-seed1");
    assert_eq!(rib.len(), 200_000);
    assert_eq!(t.next_hops.len(), 100);

    let hist = rib.length_histogram();
    let n = rib.len();
    assert_near("/48 share", share(&hist, 48, n), 0.4714, 0.005);
    assert_near("/32 share", share(&hist, 32, n), 0.1408, 0.005);
    assert_near("/44 share", share(&hist, 44, n), 0.0897, 0.005);
    assert_near("/40 share", share(&hist, 40, n), 0.0838, 0.005);
    let longer: usize = hist[49..].iter().sum();
    assert_within(
        "share longer than /48",
        longer as f64 / n as f64,
        0.001,
        0.005,
    );
    assert_eq!(hist[0], 0, "no default route unless asked");

    let m = measure(rib);
    assert_near("nested share", m.nested as f64 / n as f64, 0.569, 0.05);
    let dominant = *m.per_nh.values().max().unwrap() as f64 / n as f64;
    assert_near("dominant next hop", dominant, 0.70, 0.03);
    let same = m.same_as_cover as f64 / m.nested as f64;
    assert_within("same next hop as cover", same, 0.70, 0.80);

    let global: Prefix<Ipv6> = "2000::/3".parse().unwrap();
    let doc: Prefix<Ipv6> = "2001:db8::/32".parse().unwrap();
    for (p, _) in rib.iter() {
        assert!(global.covers(&p), "{p} outside 2000::/3");
        assert!(!doc.covers(&p) && !p.covers(&doc), "{p} overlaps {doc}");
    }
    // RIR-like regions: the routes spread over several /12s, most in 2400::/12.
    let mut per12: HashMap<u128, usize> = HashMap::new();
    for (p, _) in rib.iter() {
        *per12.entry(p.addr() >> 116).or_default() += 1;
    }
    assert!(per12.len() >= 8, "{} /12s used", per12.len());
    let top = per12.iter().max_by_key(|e| e.1).unwrap();
    assert_eq!(*top.0, 0x240, "APNIC's 2400::/12 holds the most routes");

    let s = Shape::of(rib);
    assert_eq!(s.nested(), m.nested);
    assert_within("sibling share", s.sibling_share(), 0.45, 0.70);
    println!("default_v6: {s}");
}

#[test]
fn length_mix_matches_the_real_tables() {
    fn compare<A: Address>(real: &Table<A>, synthetic: &Table<A>) {
        let h_real = real.rib.length_histogram();
        let h_syn = synthetic.rib.length_histogram();
        for len in 0..h_real.len() {
            let a = share(&h_real, len, real.rib.len());
            let b = share(&h_syn, len, synthetic.rib.len());
            assert!(
                (a - b).abs() < 0.005,
                "/{len}: real {a:.4}, synthetic {b:.4}"
            );
        }
    }
    let Some(v4) = common::fib_table::<Ipv4>("ipv4-bart-tier1-prefixes.txt.xz") else {
        return;
    };
    let cfg = SynthConfig {
        routes: v4.rib.len(),
        ..SynthConfig::ipv4_default()
    };
    compare(&v4, &synth::generate::<Ipv4>(&cfg));
    let Some(v6) = common::fib_table::<Ipv6>("ipv6-bart-tier1-prefixes.txt.xz") else {
        return;
    };
    compare(&v6, &synth::default_v6());
}

// ---------------------------------------------------------------------------------------
// synth: determinism and knobs

#[test]
fn same_seed_same_table_other_seed_other_table() {
    let v4 = SynthConfig {
        routes: 50_000,
        seed: 9,
        ..SynthConfig::ipv4_default()
    };
    let a = checksum(&synth::generate::<Ipv4>(&v4));
    assert_eq!(a, checksum(&synth::generate::<Ipv4>(&v4)));
    let b = checksum(&synth::generate::<Ipv4>(&SynthConfig { seed: 10, ..v4 }));
    assert_ne!(a, b);

    let v6 = SynthConfig {
        routes: 20_000,
        seed: 9,
        ..SynthConfig::ipv6_default()
    };
    let a = checksum(&synth::generate::<Ipv6>(&v6));
    assert_eq!(a, checksum(&synth::generate::<Ipv6>(&v6)));
    let b = checksum(&synth::generate::<Ipv6>(&SynthConfig { seed: 10, ..v6 }));
    assert_ne!(a, b);
}

/// Golden checksums of small tables, recorded once: a change here means every seed now
/// generates a different table (bump them only on purpose, and say so in the commit).
#[test]
fn golden_checksums() {
    let v4 = synth::generate::<Ipv4>(&SynthConfig {
        routes: 3_000,
        seed: 42,
        ..SynthConfig::ipv4_default()
    });
    let v6 = synth::generate::<Ipv6>(&SynthConfig {
        routes: 3_000,
        seed: 42,
        default_route: true,
        ..SynthConfig::ipv6_default()
    });
    let got = (checksum(&v4), checksum(&v6));
    println!("golden checksums: {:#018x} {:#018x}", got.0, got.1);
    assert_eq!(got, (GOLDEN_V4, GOLDEN_V6));
}

const GOLDEN_V4: u64 = 0x90bb_c559_9a0a_a39e;
const GOLDEN_V6: u64 = 0x1bb9_a29c_6fee_cccf;

#[test]
fn exact_counts_for_any_size() {
    for routes in [0, 1, 2, 17, 1000, 65_537] {
        let t = synth::generate::<Ipv4>(&SynthConfig {
            routes,
            seed: routes as u64,
            ..SynthConfig::ipv4_default()
        });
        assert_eq!(t.rib.len(), routes);
        let t = synth::generate::<Ipv6>(&SynthConfig {
            routes,
            seed: routes as u64,
            default_route: true,
            ..SynthConfig::ipv6_default()
        });
        assert_eq!(t.rib.len(), routes);
        if routes > 0 {
            assert_eq!(
                t.rib.get(&Prefix::DEFAULT),
                NextHop::new(1),
                "the default route has the dominant next hop"
            );
        }
    }
}

#[test]
fn larger_ipv4_tables_grow_by_more_specifics() {
    let t = synth::generate::<Ipv4>(&SynthConfig {
        routes: 2_500_000,
        ..SynthConfig::ipv4_default()
    });
    assert_eq!(t.rib.len(), 2_500_000);
    let m = measure(&t.rib);
    assert!(
        m.covered <= 0.72,
        "coverage held at the real table's: {}",
        m.covered
    );
    assert!(m.nested as f64 / 2_500_000.0 > 0.6);
    let hist = t.rib.length_histogram();
    assert_near("/24 share", share(&hist, 24, t.rib.len()), 0.5962, 0.01);
}

#[test]
fn knobs() {
    // A custom histogram: only /24s and /16s.
    let mut h = vec![0u64; 33];
    h[24] = 3;
    h[16] = 1;
    let t = synth::generate::<Ipv4>(&SynthConfig {
        routes: 4000,
        histogram: Some(h),
        ..SynthConfig::ipv4_default()
    });
    let hist = t.rib.length_histogram();
    assert_eq!((hist[16], hist[24]), (1000, 3000));

    // One next hop: every route uses it.
    let t = synth::generate::<Ipv6>(&SynthConfig {
        routes: 2000,
        next_hops: 1,
        ..SynthConfig::ipv6_default()
    });
    assert!(t.rib.iter().all(|(_, nh)| nh.get() == 1));
    assert_eq!(
        t.next_hops.value(NextHop::new(1).unwrap()).unwrap(),
        "2001:db8::1"
    );

    // Full inheritance: every more-specific has its cover's next hop.
    let t = synth::generate::<Ipv4>(&SynthConfig {
        routes: 20_000,
        inherit_share: 1.0,
        ..SynthConfig::ipv4_default()
    });
    let m = measure(&t.rib);
    assert!(m.nested > 0);
    assert_eq!(m.same_as_cover, m.nested);

    // Dominance follows the knob.
    let t = synth::generate::<Ipv4>(&SynthConfig {
        routes: 20_000,
        dominant_share: 0.9,
        ..SynthConfig::ipv4_default()
    });
    let m = measure(&t.rib);
    assert_near("dominant", m.per_nh[&1] as f64 / 20_000.0, 0.9, 0.02);
}

#[test]
fn bad_configurations_are_refused() {
    let err = |cfg: SynthConfig| synth::try_generate::<Ipv4>(&cfg).unwrap_err();
    let base = SynthConfig::ipv4_default;
    let e = err(SynthConfig {
        next_hops: 0,
        ..base()
    });
    assert_eq!(
        e.to_string(),
        "synthetic table: next_hops = 0, expected 1 to 131071 for IPv4"
    );
    assert!(matches!(
        err(SynthConfig {
            routes: synth::MAX_ROUTES + 1,
            ..base()
        }),
        SynthError::TooManyRoutes { .. }
    ));
    let e = err(SynthConfig {
        dominant_share: 1.5,
        ..base()
    });
    assert_eq!(
        e.to_string(),
        "synthetic table: dominant_share = 1.5, expected a number from 0 to 1"
    );
    let e = err(SynthConfig {
        tail_exponent: f64::NAN,
        ..base()
    });
    assert!(e.to_string().contains("tail_exponent = NaN"), "{e}");
    let e = err(SynthConfig {
        histogram: Some(vec![5]),
        routes: 10,
        ..base()
    });
    assert!(e.to_string().contains("histogram"), "{e}");
    let e = err(SynthConfig {
        histogram: Some(vec![0; 40].into_iter().chain([1]).collect()),
        ..base()
    });
    assert!(e.to_string().contains("histogram"), "{e}");
    // Lengths with no room move to the next longer one: /1s cannot be placed (the
    // regions are /8s), so they become /8s.
    let mut h = vec![0u64; 33];
    h[1] = 1;
    let t = synth::generate::<Ipv4>(&SynthConfig {
        routes: 5,
        histogram: Some(h),
        ..base()
    });
    assert_eq!(t.rib.length_histogram()[8], 5);
}

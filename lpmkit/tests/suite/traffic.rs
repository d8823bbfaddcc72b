//! Tests of `lpmkit::traffic`: ranges, structure and determinism of every key stream,
//! on small synthetic tables.

use std::collections::HashMap;

use lpmkit::synth::{self, SynthConfig};
use lpmkit::traffic::{self, Lcg, Pattern};
use lpmkit::{Address, Ipv4, Ipv6, NextHop, Prefix, Rib};

fn assert_near(what: &str, got: f64, want: f64, tol: f64) {
    assert!(
        (got - want).abs() <= tol,
        "{what}: {got:.4}, expected {want:.4} ± {tol}"
    );
}

fn small_v4_table() -> Rib<Ipv4> {
    synth::generate::<Ipv4>(&SynthConfig {
        routes: 5_000,
        seed: 3,
        ..SynthConfig::ipv4_default()
    })
    .rib
}

fn small_v6_table() -> Rib<Ipv6> {
    synth::generate::<Ipv6>(&SynthConfig {
        routes: 5_000,
        seed: 3,
        ..SynthConfig::ipv6_default()
    })
    .rib
}

#[test]
fn generators_are_deterministic() {
    let v4 = small_v4_table();
    let v6 = small_v6_table();
    assert_eq!(
        traffic::uniform::<u32>(999, 5),
        traffic::uniform::<u32>(999, 5)
    );
    assert_ne!(
        traffic::uniform::<u32>(999, 5),
        traffic::uniform::<u32>(999, 6)
    );
    assert_eq!(
        traffic::uniform::<u128>(99, 5),
        traffic::uniform::<u128>(99, 5)
    );
    assert_eq!(
        traffic::uniform_routable_v4(999, 5),
        traffic::uniform_routable_v4(999, 5)
    );
    assert_ne!(
        traffic::uniform_routable_v4(999, 5),
        traffic::uniform_routable_v4(999, 6)
    );
    assert_eq!(
        traffic::v6_matching(&v6, 999, 5),
        traffic::v6_matching(&v6, 999, 5)
    );
    assert_ne!(
        traffic::v6_matching(&v6, 999, 5),
        traffic::v6_matching(&v6, 999, 6)
    );
    assert_eq!(
        traffic::zipf(&v4, 999, 1.0, 5),
        traffic::zipf(&v4, 999, 1.0, 5)
    );
    assert_ne!(
        traffic::zipf(&v4, 999, 1.0, 5),
        traffic::zipf(&v4, 999, 1.0, 6)
    );
    // Odd lengths: the IPv4 generator makes two keys per draw.
    assert_eq!(traffic::uniform::<u32>(7, 1).len(), 7);
    assert_eq!(
        traffic::uniform::<u32>(7, 1)[..6],
        traffic::uniform::<u32>(8, 1)[..6]
    );
}

#[test]
fn uniform_covers_the_space() {
    let keys = traffic::uniform::<u32>(1 << 16, 1);
    let mut per_octet = [0usize; 256];
    for k in &keys {
        per_octet[(k >> 24) as usize] += 1;
    }
    // 256 expected per first octet.
    assert!(per_octet.iter().all(|&c| (150..400).contains(&c)));
    let keys = traffic::uniform::<u128>(1 << 12, 1);
    let high = keys.iter().filter(|&&k| k >> 127 == 1).count();
    let low = keys.iter().filter(|&&k| k & 1 == 1).count();
    assert!((1800..2300).contains(&high) && (1800..2300).contains(&low));
}

#[test]
fn routable_keys_avoid_the_excluded_blocks() {
    let n = 1 << 20;
    let keys = traffic::uniform_routable_v4(n, 11);
    let mut per_octet = [0usize; 256];
    for &k in &keys {
        per_octet[(k >> 24) as usize] += 1;
    }
    for (octet, &c) in per_octet.iter().enumerate() {
        if octet == 0 || octet == 127 || octet >= 224 {
            assert_eq!(c, 0, "{octet}/8 must be excluded");
        } else {
            // n / 222 ≈ 4723 per /8.
            assert!((4300..5150).contains(&c), "{octet}/8: {c}");
        }
    }
    // The low 24 bits are uniform too.
    let odd = keys.iter().filter(|&&k| k & 1 == 1).count();
    assert!((n / 2 - 3000..n / 2 + 3000).contains(&odd));
}

#[test]
fn routable_v6_keys_are_global_unicast_and_uniform_below() {
    let n = 1 << 16;
    let keys = traffic::uniform_global_unicast_v6(n, 3);
    assert!(keys.iter().all(|&k| k >> 125 == 0b001), "inside 2000::/3");
    assert_eq!(
        keys,
        traffic::uniform_global_unicast_v6(n, 3),
        "deterministic"
    );
    // Bit 124 (the first free bit) and bit 0 are each set in about half the keys.
    for bit in [124, 0] {
        let set = keys.iter().filter(|&&k| k >> bit & 1 == 1).count();
        assert!(
            (n / 2 - 800..n / 2 + 800).contains(&set),
            "bit {bit}: {set}"
        );
    }
}

#[test]
fn v6_matching_keys() {
    let rib = small_v6_table();
    let patterns = traffic::v6_patterns(&rib);
    assert!(
        patterns.windows(2).all(|w| w[0] < w[1]),
        "sorted, deduplicated"
    );
    let keys = traffic::v6_matching(&rib, 50_000, 2);
    let mut lcg_keys = vec![0u128; 50_000];
    Lcg::new(2).fill_v6_matching(&patterns, &mut lcg_keys);
    for k in keys.iter().chain(&lcg_keys) {
        assert_eq!(*k as u64, 1, "host part ::1");
        assert!(patterns.binary_search(&((k >> 96) as u32)).is_ok());
    }
    // Every pattern gets drawn with a few patterns only.
    let few: Rib<Ipv6> = ["2001:db8::/32", "2400::/12", "2a00:1::/32"]
        .iter()
        .map(|s| (s.parse().unwrap(), NextHop::new(1).unwrap()))
        .collect();
    assert_eq!(
        traffic::v6_patterns(&few),
        [0x2001_0db8, 0x2400_0000, 0x2a00_0001]
    );
    // With only /32s and shorter, every matching key matches a route.
    let short: Rib<Ipv6> = rib.iter().filter(|(p, _)| p.len() <= 32).collect();
    assert!(short.len() > 100);
    for k in traffic::v6_matching(&short, 20_000, 4) {
        assert!(short.lookup(k).is_some(), "{k:#x} matches nothing");
    }
    let mut out = vec![0u128; 20_000];
    Lcg::new(4).fill_v6_matching(&traffic::v6_patterns(&short), &mut out);
    assert!(out.iter().all(|&k| short.lookup(k).is_some()));
    // An empty table: pattern 0.
    let empty = Rib::<Ipv6>::new();
    assert!(traffic::v6_matching(&empty, 10, 1)
        .iter()
        .all(|&k| k >> 96 == 0 && k as u64 == 1));
    Lcg::new(1).fill_v6_matching(&[], &mut out[..10]);
    assert!(out[..10].iter().all(|&k| k >> 96 == 0));
}

#[test]
fn lcg_streams() {
    let mut a = Lcg::new(77);
    let mut keys = vec![0u32; 1000];
    a.fill_v4(&mut keys);
    let mut b = Lcg::new(77);
    assert!(keys.iter().all(|&k| k == b.next_u32()));
    // Not degenerate: many distinct values, both halves of the space.
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert!(sorted.len() > 990);
    assert!(keys.iter().any(|&k| k >> 31 == 1) && keys.iter().any(|&k| k >> 31 == 0));
}

#[test]
fn rep_structure() {
    let keys = traffic::uniform_routable_v4(100, 1);
    let rep = traffic::repeated(&keys, traffic::REP_TIMES);
    assert_eq!(rep.len(), 1600);
    for (i, chunk) in rep.chunks(16).enumerate() {
        assert!(chunk.iter().all(|&k| k == keys[i]));
    }
    assert!(traffic::repeated(&keys, 0).is_empty());
    let rib = Rib::<Ipv4>::new();
    let k: Vec<u32> = traffic::keys(&Pattern::Rep, &rib, 100, 1).unwrap();
    assert_eq!(k.len(), 100);
    assert!(k.chunks(16).all(|c| c.iter().all(|&x| x == c[0])));
    assert_ne!(k[0], k[16]);
}

#[test]
fn zipf_is_skewed_and_stays_inside_prefixes() {
    // 1000 disjoint /16s: the drawn prefix is the matched one.
    let rib: Rib<Ipv4> = (0..1000u32)
        .map(|i| {
            (
                Prefix::new((i + 256) << 16, 16).unwrap(),
                NextHop::new(1).unwrap(),
            )
        })
        .collect();
    let n = 200_000;
    let keys = traffic::zipf(&rib, n, 1.2, 8);
    let mut hits: HashMap<Prefix<Ipv4>, usize> = HashMap::new();
    for &k in &keys {
        let (p, _) = rib.lookup_prefix(k).expect("inside a prefix");
        *hits.entry(p).or_default() += 1;
    }
    let mut counts: Vec<usize> = hits.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    // Rank 1 draws 1 / Σ r^-1.2 (r ≤ 1000) ≈ 0.236 of the keys.
    let top = counts[0] as f64 / n as f64;
    assert_near("top prefix share", top, 0.236, 0.01);
    assert_near(
        "second prefix share",
        counts[1] as f64 / n as f64,
        0.236 / 2f64.powf(1.2),
        0.01,
    );
    // The most popular prefix is not simply the first one.
    let most = hits.iter().max_by_key(|e| e.1).unwrap().0;
    let other = traffic::zipf(&rib, 20_000, 1.2, 9);
    let mut h2: HashMap<Prefix<Ipv4>, usize> = HashMap::new();
    for &k in &other {
        *h2.entry(rib.lookup_prefix(k).unwrap().0).or_default() += 1;
    }
    assert_ne!(
        most,
        h2.iter().max_by_key(|e| e.1).unwrap().0,
        "seeded ranking"
    );
    // Exponent 0: uniform over prefixes.
    let flat = traffic::zipf(&rib, 100_000, 0.0, 1);
    let mut h0: HashMap<Prefix<Ipv4>, usize> = HashMap::new();
    for &k in &flat {
        *h0.entry(rib.lookup_prefix(k).unwrap().0).or_default() += 1;
    }
    assert!(h0.values().all(|&c| c < 200), "about 100 per prefix");
    // IPv6, with prefixes up to /128.
    let v6 = small_v6_table();
    for k in traffic::zipf(&v6, 10_000, 1.0, 2) {
        assert!(v6.lookup(k).is_some());
    }
    // An empty table: uniform keys.
    assert_eq!(
        traffic::zipf(&Rib::<Ipv4>::new(), 10, 1.0, 3),
        traffic::uniform::<u32>(10, 3)
    );
}

#[test]
fn boundary_keys_cover_extremes_without_overflow() {
    let nh = NextHop::new(1).unwrap();
    let rib: Rib<Ipv4> = [
        "0.0.0.0/0",
        "255.255.255.255/32",
        "0.0.0.0/32",
        "10.0.0.0/8",
    ]
    .iter()
    .map(|s| (s.parse().unwrap(), nh))
    .collect();
    let keys = traffic::boundary_keys(&rib);
    assert_eq!(
        keys,
        [
            0,
            1,
            0x09ff_ffff,
            0x0a00_0000,
            0x0a00_0001,
            0x0aff_fffe,
            0x0aff_ffff,
            0x0b00_0000,
            0xffff_fffe,
            u32::MAX
        ]
    );
    let rib: Rib<Ipv6> = [
        "::/0",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
        "2001:db8::/32",
    ]
    .iter()
    .map(|s| (s.parse().unwrap(), nh))
    .collect();
    let keys = traffic::boundary_keys(&rib);
    assert_eq!(keys.first(), Some(&0));
    assert_eq!(keys.last(), Some(&u128::MAX));
    assert!(keys.contains(&(u128::MAX - 1)));
    assert!(keys.contains(&(0x2001_0db8u128 << 96)));
    assert!(keys.contains(&((0x2001_0db9u128 << 96) - 1)));
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
    // A generated table: every prefix's first and last address and their neighbours.
    let t = small_v4_table();
    let keys = traffic::boundary_keys(&t);
    for (p, _) in t.iter() {
        for a in [p.first(), p.last()] {
            for b in [Some(a), a.checked_dec(), a.checked_inc()]
                .into_iter()
                .flatten()
            {
                assert!(keys.binary_search(&b).is_ok(), "{b:#x} of {p} missing");
            }
        }
    }
    assert!(traffic::boundary_keys(&Rib::<Ipv4>::new()) == [0, u32::MAX]);
}

#[test]
fn seq_key_keeps_the_key() {
    for prev in [0, 1, 7, u32::MAX] {
        assert_eq!(traffic::seq_key(0x0a00_0001u32, prev), 0x0a00_0001);
        assert_eq!(traffic::seq_key(5u128 << 100, prev), 5u128 << 100);
    }
    assert_eq!(traffic::seq_mask(), 0);
}

#[test]
fn patterns_parse() {
    for (s, p) in [
        ("rnd", Pattern::Rnd),
        ("Routable", Pattern::Routable),
        ("RND", Pattern::Rnd),
        (" rep ", Pattern::Rep),
        ("Seq", Pattern::Seq),
        ("zipf", Pattern::Zipf),
        ("v6match", Pattern::V6Match),
        ("match:80%", Pattern::Matching(8000)),
        ("MATCH: 12.5", Pattern::Matching(1250)),
        ("trace:/tmp/k.txt", Pattern::Trace("/tmp/k.txt".into())),
        ("TRACE:a:b", Pattern::Trace("a:b".into())),
    ] {
        assert_eq!(s.parse::<Pattern>().unwrap(), p, "{s}");
        assert_eq!(p.to_string().parse::<Pattern>().unwrap(), p, "round trip");
    }
    for (s, msg) in [
        (
            "random",
            "unknown key pattern `random`: expected one of rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE",
        ),
        (
            "trace:",
            "missing file name in key pattern `trace:`: expected one of rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE",
        ),
        (
            "trace",
            "missing file name in key pattern `trace`: expected one of rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE",
        ),
        ("", "unknown key pattern ``: expected one of rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE"),
        ("traceé", "unknown key pattern `traceé`: expected one of rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE"),
    ] {
        assert_eq!(s.parse::<Pattern>().unwrap_err().to_string(), msg);
    }
}

#[test]
fn keys_for_every_pattern() {
    let v4 = small_v4_table();
    let v6 = small_v6_table();
    for p in [
        Pattern::Rnd,
        Pattern::Routable,
        Pattern::Rep,
        Pattern::Seq,
        Pattern::Zipf,
    ] {
        let k: Vec<u32> = traffic::keys(&p, &v4, 1000, 1).unwrap();
        assert_eq!(k.len(), 1000, "{p}");
        let k: Vec<u128> = traffic::keys(&p, &v6, 1000, 1).unwrap();
        assert_eq!(k.len(), 1000, "{p}");
    }
    assert_eq!(
        traffic::keys::<u32>(&Pattern::Rnd, &v4, 100, 1).unwrap(),
        traffic::uniform::<u32>(100, 1)
    );
    assert_eq!(
        traffic::keys::<u32>(&Pattern::Routable, &v4, 100, 1).unwrap(),
        traffic::uniform_routable_v4(100, 1)
    );
    assert_eq!(
        traffic::keys::<u128>(&Pattern::Routable, &v6, 100, 1).unwrap(),
        traffic::uniform_global_unicast_v6(100, 1)
    );
    assert_eq!(
        traffic::keys::<u128>(&Pattern::V6Match, &v6, 100, 1).unwrap(),
        traffic::v6_matching(&v6, 100, 1)
    );
    let e = traffic::keys::<u32>(&Pattern::V6Match, &v4, 1, 1).unwrap_err();
    assert_eq!(
        e.to_string(),
        "key pattern `v6match` is not defined for ipv4"
    );
    assert!(traffic::keys::<u32>(&Pattern::Trace("x".into()), &v4, 1, 1).is_err());
}

#[test]
fn matching_ratio_keys() {
    // Bloomfwd's Fig. 3: exactly the share asked for matches a prefix other than /0, on
    // both families; the others are routable.
    let mut v4 = small_v4_table();
    v4.insert(Prefix::DEFAULT, NextHop::new(9).unwrap());
    let v6 = small_v6_table();
    for pct in [0u32, 20, 50, 80, 100] {
        let p: Pattern = format!("match:{pct}").parse().unwrap();
        assert_eq!(p, Pattern::Matching(pct * 100));
        let k4 = traffic::keys(&p, &v4, 10_000, 3).unwrap();
        let k6 = traffic::keys(&p, &v6, 10_000, 3).unwrap();
        let hits4 = k4
            .iter()
            .filter(|&&k| v4.lookup_prefix(k).is_some_and(|(q, _)| !q.is_empty()))
            .count();
        let hits6 = k6.iter().filter(|&&k| v6.lookup(k).is_some()).count();
        assert_eq!(
            (hits4, hits6),
            (pct as usize * 100, pct as usize * 100),
            "{p}"
        );
        assert!(k4
            .iter()
            .all(|&k| k >> 24 != 0 && k >> 24 != 127 && k >> 28 < 14));
        // Deterministic, and a different seed gives other keys.
        assert_eq!(k4, traffic::keys(&p, &v4, 10_000, 3).unwrap());
        assert_ne!(k4, traffic::keys(&p, &v4, 10_000, 4).unwrap());
    }
    // Bad input: a percentage outside 0..=100, a table with nothing to match or miss.
    for bad in ["match:101", "match:-1", "match:x", "match:"] {
        let e = bad.parse::<Pattern>().unwrap_err().to_string();
        assert!(e.contains("percentage"), "{bad}: {e}");
    }
    let mut only_default = Rib::<Ipv4>::new();
    only_default.insert(Prefix::DEFAULT, NextHop::new(1).unwrap());
    let e = traffic::matching(&only_default, 10, 0.5, 1).unwrap_err();
    assert!(e.to_string().contains("longer than /0"), "{e}");
    let mut everything = Rib::<Ipv4>::new();
    everything.insert("0.0.0.0/1".parse().unwrap(), NextHop::new(1).unwrap());
    everything.insert("128.0.0.0/1".parse().unwrap(), NextHop::new(2).unwrap());
    let e = traffic::matching(&everything, 10, 0.5, 1).unwrap_err();
    assert!(e.to_string().contains("outside"), "{e}");
}

//! Unit tests: every layout, front and batch size against the `Rib`, on nested tables,
//! routes longer than /64 and /32, tables whose trees are several levels deep, and the
//! settings.

use super::*;
use crate::prefix::Prefix;
use crate::rng::SplitMix64;
use crate::test_support::{nh, rib};
use crate::{BuildOptions, Ipv4, Ipv6};

/// Every prefix's first and last address and their neighbours, the ends of the space,
/// and random keys: uniform, inside random prefixes, and (IPv6) a prefix's /32 with
/// random bits below it.
fn keys<A: Address>(rib: &Rib<A>, random: usize, seed: u64) -> Vec<A> {
    let mut k = vec![
        A::ZERO,
        A::MAX,
        A::from_u128(1),
        A::MAX.checked_dec().unwrap(),
    ];
    let prefixes: Vec<Prefix<A>> = rib.iter().map(|(p, _)| p).collect();
    for p in &prefixes {
        for a in [p.first(), p.last()] {
            k.push(a);
            k.extend(a.checked_inc());
            k.extend(a.checked_dec());
        }
    }
    let mut rng = SplitMix64::new(seed);
    for i in 0..random {
        let r = A::from_u128(rng.next_u128());
        k.push(match (i % 3, prefixes.is_empty()) {
            (0, _) | (_, true) => r,
            (1, _) => {
                let p = prefixes[rng.below(prefixes.len() as u64) as usize];
                p.addr().or(r.and(A::hostmask(p.len())))
            }
            _ => {
                let p = prefixes[rng.below(prefixes.len() as u64) as usize];
                let l = p.len().min(32);
                p.addr().and(A::netmask(l)).or(r.and(A::hostmask(l)))
            }
        });
    }
    k
}

/// Every configuration the family offers: layouts, fronts, a few batch sizes, scalar and
/// (when the CPU has it) AVX2.
fn configs<A: Address>() -> Vec<PlanbConfig> {
    let mut layouts: Vec<(Option<u32>, Option<u32>)> = vec![(Some(32), None)];
    if A::BITS == 128 {
        layouts.extend([(None, None), (Some(64), Some(5))]);
    }
    let fronts: &[u32] = if A::BITS == 128 {
        &[0, 8, 16, HASHED_FRONT]
    } else {
        &[0, 8, 16, 20]
    };
    let mut v = Vec::new();
    for &(key_bits, fanout) in &layouts {
        for &front in fronts {
            if front == HASHED_FRONT && key_bits != Some(32) {
                continue; // the lines hold 32-bit keys
            }
            // Every instruction-set level this CPU runs, at a few batch sizes (a group of
            // 7 or 13 leaves a partial block of eight keys in the SIMD line stage; 64 is
            // the lines' default, 128 the most).
            for isa in crate::simd::test_levels() {
                for batch in [1, 7, 13, 32, 64, 128] {
                    v.push(PlanbConfig {
                        key_bits,
                        fanout,
                        front,
                        batch,
                        force_scalar: false,
                        isa: Some(isa),
                    });
                }
            }
            v.push(PlanbConfig {
                key_bits,
                fanout,
                front,
                batch: 32,
                force_scalar: true,
                isa: None,
            });
        }
    }
    v
}

fn check_with<A: Address>(rib: &Rib<A>, keys: &[A], cfg: &PlanbConfig)
where
    Planb<A>: Fib<A>,
{
    let fib = Planb::build(rib, cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    let mut out = vec![u32::MAX; keys.len()];
    fib.lookup_batch(keys, &mut out);
    for (&k, &o) in keys.iter().zip(&out) {
        let want = NextHop::raw(rib.lookup(k));
        assert_eq!(
            NextHop::raw(fib.lookup(k)),
            want,
            "{cfg:?} lookup {k:x} ({})",
            fib.implementation()
        );
        assert_eq!(
            o,
            want,
            "{cfg:?} lookup_batch {k:x} ({})",
            fib.implementation()
        );
    }
}

fn check_all<A: Address>(rib: &Rib<A>, random: usize)
where
    Planb<A>: Fib<A>,
{
    let keys = keys(rib, random, 7);
    for cfg in configs::<A>() {
        check_with(rib, &keys, &cfg);
    }
}

#[test]
fn small_tables() {
    check_all::<Ipv4>(&Rib::new(), 100);
    check_all::<Ipv6>(&Rib::new(), 100);
    check_all::<Ipv4>(&rib(&[("0.0.0.0/0", 3)]), 100);
    check_all::<Ipv4>(
        &rib(&[
            ("10.0.0.0/8", 1),
            ("10.1.0.0/16", 2),
            ("10.1.2.0/24", 3),
            ("10.1.2.3/32", 4),
            ("255.255.255.255/32", 5),
            ("0.0.0.0/32", 6),
        ]),
        1000,
    );
    check_all::<Ipv6>(
        &rib(&[
            ("::/0", 9),
            ("2001:db8::/32", 1),
            ("2001:db8:1::/48", 2),
            ("2001:db8:1::1:0:0/96", 3),
            ("2001:db8:1::1:0:7/128", 4),
            ("2001:db8:1:0:8000::/65", 5),
            ("2001:db8:ffff:ffff::/64", 6),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 7),
            ("::/128", 8),
            ("2001:dba::/31", 10),
        ]),
        1000,
    );
}

/// A route at every length over one address, and every other one removed.
#[test]
fn nested_chains() {
    for addr in [0x2001_0db8_0000_0000_0000_0000_0000_0001u128, 0, u128::MAX] {
        let mut r = Rib::<Ipv6>::new();
        for len in 0..=128u8 {
            r.insert(Prefix::new_truncating(addr, len), nh(len as u32 + 1));
        }
        check_all(&r, 300);
        for len in (1..=128u8).step_by(2) {
            r.remove(&Prefix::new_truncating(addr, len));
        }
        check_all(&r, 300);
    }
    let mut r = Rib::<Ipv4>::new();
    for len in 0..=32u8 {
        r.insert(Prefix::new_truncating(0x0a0b_0c0d, len), nh(len as u32 + 1));
    }
    check_all(&r, 300);
}

/// Random tables large enough for trees of three and more levels in every chunk, with
/// routes past /64 under the same /32s and /64s.
fn random_rib<A: Address>(routes: usize, seed: u64) -> Rib<A> {
    let mut rng = SplitMix64::new(seed);
    let mut r = Rib::<A>::new();
    let bases: Vec<A> = (0..24).map(|_| A::from_u128(rng.next_u128())).collect();
    for _ in 0..routes {
        let base = bases[rng.below(bases.len() as u64) as usize];
        let len = if A::BITS == 128 {
            [24, 32, 40, 48, 56, 64, 80, 96, 127, 128][rng.below(10) as usize]
        } else {
            [8, 16, 20, 24, 28, 32][rng.below(6) as usize]
        };
        // Share the first bits with the base, random below.
        let keep = (len / 2).max(8).min(len);
        let a = base
            .and(A::netmask(keep))
            .or(A::from_u128(rng.next_u128()).and(A::hostmask(keep)));
        r.insert(Prefix::new_truncating(a, len), nh(1 + rng.below(50) as u32));
    }
    r
}

#[test]
fn random_tables() {
    for seed in 0..3 {
        check_all::<Ipv6>(&random_rib(6000, seed), 3000);
        check_all::<Ipv4>(&random_rib(6000, seed), 3000);
    }
}

/// The main tree is several levels deep with either layout (so the lockstep descent
/// runs), and routes past /64 make second trees.
#[test]
fn deep_trees_and_second_chunks() {
    let r = random_rib::<Ipv6>(20_000, 11);
    let fib = Planb::build(&r, &PlanbConfig::paper()).unwrap();
    assert!(fib.depth() >= 3, "depth {}", fib.depth());
    let s = fib.stats();
    assert!(matches!(s.get("trees_chunk1"), Some(StatValue::Count(n)) if *n > 0));
    let fib = Planb::build(&r, &PlanbConfig::front_v6()).unwrap();
    let s = fib.stats();
    assert!(matches!(s.get("trees_chunk3"), Some(StatValue::Count(n)) if *n > 0));
    assert!(matches!(s.get("front_listed"), Some(StatValue::Count(n)) if *n > 0));
}

/// Keys whose /32 the front does not list fall back to the main tree; a /32 of
/// more than eight intervals sends its keys on to a group's tree.
#[test]
fn front_lines_and_misses() {
    let mut r = rib::<Ipv6>(&[
        ("2000::/16", 1),
        ("2001:db8::/32", 2),
        ("2001:db8:1::/48", 3),
    ]);
    let key = |s: &str| u128::from(s.parse::<std::net::Ipv6Addr>().unwrap());
    let keys: Vec<u128> = [
        "2000:1::1",
        "2001:db8:1::1",
        "2001:db8:2::",
        "2001:db9::1",
        "3::",
    ]
    .iter()
    .map(|s| key(s))
    .collect();
    let fib = Planb::build(&r, &PlanbConfig::front_v6()).unwrap();
    let p = fib.profile(&keys);
    // 2000::/16 and 3::/16 have no boundary inside: the summary answers their keys.
    assert_eq!(p.get("front.summary"), Some(&StatValue::Ratio(0.4)));
    // 2001:db9::/32 is not listed, but its /16 has a listed /32: the main tree answers.
    assert_eq!(p.get("front.miss"), Some(&StatValue::Ratio(0.2)));
    // 2001:db8::/32 has three intervals: its line answers both of its keys.
    assert_eq!(p.get("front.answered"), Some(&StatValue::Ratio(0.4)));
    check_with(&r, &keys, &PlanbConfig::front_v6());
    // Forty /48s under 2001:db8::/32: its line names group trees.
    for i in 0..40u32 {
        let p = format!("2001:db8:{:x}::/48", i * 2 + 5);
        r.insert(p.parse().unwrap(), nh(10 + i % 3));
    }
    let fib = Planb::build(&r, &PlanbConfig::front_v6()).unwrap();
    assert!(matches!(
        fib.stats().get("front_lines_grouped"),
        Some(StatValue::Count(1))
    ));
    let keys: Vec<u128> = (0..100u128)
        .map(|i| key("2001:db8::") | i << 80 | i)
        .collect();
    let p = fib.profile(&keys);
    assert!(
        matches!(p.get("front.tree"), Some(StatValue::Ratio(s)) if *s > 0.5),
        "{p}"
    );
    check_all(&r, 2000);
}

#[test]
fn settings() {
    let read = |text: &str| {
        let o = BuildOptions::default().with_settings(text).unwrap();
        PlanbConfig::from_settings::<Ipv6>(&Settings::new("planb", &o))
    };
    assert_eq!(read("").unwrap(), PlanbConfig::paper());
    assert_eq!(
        read("key_bits=32,front=on").unwrap(),
        PlanbConfig::front_v6()
    );
    let o = BuildOptions::default()
        .with_settings("key_bits=32,front=on")
        .unwrap();
    assert_eq!(
        PlanbConfig::from_settings::<Ipv4>(&Settings::new("planb", &o)).unwrap(),
        PlanbConfig::front_v4()
    );
    let c = read("fanout=5,batch=8,front=12").unwrap();
    assert_eq!((c.fanout, c.batch, c.front), (Some(5), 8, 12));
    let r = rib::<Ipv6>(&[("2001:db8::/32", 1)]);
    for (bad, what) in [
        ("fanout=17", "fanout 17"),
        ("key_bits=16", "key_bits"),
        ("batch=0", "batch"),
        ("batch=129", "batch"),
        ("front=25", "front"),
        ("key_bits=32,fanout=9", "fanout 9"),
        ("front=32", "32-bit keys"),
    ] {
        let err = Planb::build(&r, &read(bad).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains(what), "{bad}: {err}");
    }
    let r4 = rib::<Ipv4>(&[("10.0.0.0/8", 1)]);
    for bad in ["key_bits=64", "front=32"] {
        let o = BuildOptions::default().with_settings(bad).unwrap();
        let c = PlanbConfig::from_settings::<Ipv4>(&Settings::new("planb", &o)).unwrap();
        assert!(Planb::build(&r4, &c).is_err(), "{bad}");
    }
}

#[test]
fn next_hops_past_the_value_space_are_refused() {
    let r = rib::<Ipv4>(&[("10.0.0.0/8", tree::CHILD)]);
    let err = Planb::build(&r, &PlanbConfig::paper()).unwrap_err();
    assert!(matches!(err, BuildError::NextHopOverflow { .. }), "{err}");
    let r = rib::<Ipv4>(&[("10.0.0.0/8", tree::MAX_NEXT_HOP)]);
    check_all(&r, 100);
}

#[test]
fn stats_and_profile() {
    let r = random_rib::<Ipv6>(3000, 5);
    for cfg in [PlanbConfig::paper(), PlanbConfig::front_v6()] {
        let fib = Planb::build(&r, &cfg).unwrap();
        let s = fib.stats();
        for key in [
            "intervals",
            "depth",
            "bytes",
            "bytes_per_prefix",
            "layout",
            "front",
        ] {
            assert!(s.get(key).is_some(), "{key} in {s}");
        }
        assert_eq!(
            s.get("intervals"),
            Some(&StatValue::Count(r.project(|_, _| {}).ranges.len() as u64))
        );
        let p = fib.profile(&keys(&r, 1000, 3));
        assert!(
            p.get("nodes_mean").is_some() && p.get("trees_mean").is_some(),
            "{p}"
        );
        assert!(fib.memory_bytes() > 0);
    }
}

#[test]
fn kernel_choice() {
    use crate::simd::{Avx2, Avx512, Isa, Popcnt};
    let r = rib::<Ipv6>(&[("2001:db8::/32", 1), ("2001:db8:1::/48", 2)]);
    let built = |isa: Option<Isa>, force_scalar: bool| {
        let cfg = PlanbConfig {
            isa,
            force_scalar,
            ..PlanbConfig::front_v6()
        };
        Planb::build(&r, &cfg).unwrap().implementation()
    };
    let avx2 = |ceiling: Isa| {
        if Avx2::within(ceiling).is_some() && Popcnt::within(ceiling).is_some() {
            Implementation::Avx2
        } else {
            Implementation::Scalar
        }
    };
    // The AVX-512 kernel where the CPU and the environment allow it, by default and when
    // asked for; else the AVX2 one (or scalar).
    let best = if Avx512::new().is_some() {
        Implementation::Avx512
    } else {
        avx2(Isa::Avx512)
    };
    assert_eq!(built(None, false), best);
    assert_eq!(built(Some(Isa::Avx512), false), best);
    assert_eq!(built(Some(Isa::Avx2), false), avx2(Isa::Avx2));
    // Scalar code forced wins over any ceiling.
    assert_eq!(built(Some(Isa::Avx512), true), Implementation::Scalar);
    assert_eq!(built(Some(Isa::Scalar), false), Implementation::Scalar);
    // The setting reaches the config.
    let o = BuildOptions {
        isa: Some(Isa::Avx512),
        ..BuildOptions::default()
    };
    let c = PlanbConfig::from_settings::<Ipv6>(&Settings::new("planb", &o)).unwrap();
    assert_eq!(c.isa, Some(Isa::Avx512));
}

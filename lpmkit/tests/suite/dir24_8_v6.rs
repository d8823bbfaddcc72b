//! The IPv6 DIR-24-8 table (`dir24-8` for IPv6) against the `Rib`: every real IPv6 table,
//! synthetic tables, and the default, host and nested-chain routes.

use crate::common;

use lpmkit::rng::SplitMix64;
use lpmkit::schemes::{
    dir24_8::{Dir24_8Config, Dir24_8V6},
    Width,
};
use lpmkit::traffic::boundary_keys;
use lpmkit::{registry, Address, Fib, NextHop, Prefix, Rib};

/// The registry's `dir24-8` for IPv6 against the `Rib` on `keys`; returns the answers.
fn check(rib: &Rib<u128>, keys: &[u128], label: &str) -> Vec<u32> {
    let fib = registry::find("dir24-8")
        .unwrap()
        .build(rib, &Default::default())
        .unwrap();
    assert_eq!(fib.name(), "dir24-8");
    let want = common::reference(rib, keys);
    common::assert_lookups(&*fib, keys, &want, label);
    want
}

#[test]
fn real_tables() {
    for path in common::data_files("fib", "ipv6-") {
        let rib = common::load_table::<u128>(&path).rib;
        let mut keys = boundary_keys(&rib);
        keys.extend(common::v6_route_keys(&rib, 1 << 18, 9));
        let want = check(&rib, &keys, &path.display().to_string());
        // Both entry widths where the narrow one fits.
        for width in [Width::U16, Width::U32] {
            let Ok(t) = Dir24_8V6::build(
                &rib,
                &Dir24_8Config {
                    entry_width: Some(width),
                    ..Default::default()
                },
            ) else {
                assert_eq!(width, Width::U16, "the wide layout always fits");
                continue;
            };
            let mut out = vec![0; keys.len()];
            t.lookup_batch(&keys, &mut out);
            assert!(out == want, "{} {width:?}", path.display());
        }
    }
}

#[test]
fn synthetic_and_edge_tables() {
    let mut rng = SplitMix64::new(4);
    for routes in [0usize, 1, 30, 3000, 30_000] {
        let mut rib = Rib::<u128>::new();
        for _ in 0..routes {
            let len = rng.below(129) as u8;
            let hi = (rng.below(4) as u128) << 126;
            let noise = match rng.below(3) {
                0 => rng.next_u128(),
                1 => rng.next_u128() & 0xffff,
                _ => rng.next_u128() >> 90,
            };
            let p = Prefix::new_truncating(hi | noise, len);
            rib.insert(p, NextHop::new(1 + rng.below(7) as u32).unwrap());
        }
        let mut keys = boundary_keys(&rib);
        keys.extend((0..10_000).map(|_| rng.next_u128()));
        check(&rib, &keys, &format!("synthetic {routes}"));
    }
    // Default route plus both host-route extremes; a chain of nested prefixes /1../128.
    let mut rib = Rib::<u128>::new();
    rib.insert(Prefix::DEFAULT, NextHop::new(1).unwrap());
    rib.insert(Prefix::host(0), NextHop::new(2).unwrap());
    rib.insert(Prefix::host(u128::MAX), NextHop::new(3).unwrap());
    check(&rib, &boundary_keys(&rib), "default and hosts");
    for l in 1..=128u8 {
        let p = Prefix::new_truncating(u128::MAX / 3, l);
        rib.insert(p, NextHop::new(4 + l as u32 % 3).unwrap());
    }
    check(&rib, &boundary_keys(&rib), "nested chain");
    let t = Dir24_8V6::build(&rib, &Dir24_8Config::default()).unwrap();
    assert!(t.groups() > 13);
    assert!(t.memory_bytes() >= 2 << 24);
    let _ = u128::netmask(3);
}

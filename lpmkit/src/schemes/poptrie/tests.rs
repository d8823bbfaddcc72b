use super::*;
use crate::fib::IncrementalFib;
use crate::prefix::{Ipv4, Ipv6};
use crate::test_support::{nh, rib};

fn check<A: Key>(rib: &Rib<A>, fib: &Poptrie<A>, extra: &[A]) {
    let mut keys: Vec<A> = vec![A::ZERO, A::MAX];
    keys.extend_from_slice(extra);
    for (p, _) in rib.iter() {
        for a in [p.first(), p.last()] {
            keys.push(a);
            keys.extend(a.checked_inc());
            keys.extend(a.checked_dec());
        }
    }
    let mut out = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    for (&k, &o) in keys.iter().zip(&out) {
        let want = NextHop::raw(rib.lookup(k));
        assert_eq!(NextHop::raw(fib.lookup(k)), want, "lookup {k:x}");
        assert_eq!(o, want, "lookup_batch {k:x}");
    }
}

/// Checks `r` with every direct-pointing width of `direct_bits`, both leaf widths, on
/// the SIMD and the scalar path.
fn check_configs(r: &Rib<Ipv4>, direct_bits: &[u8]) {
    for &s in direct_bits {
        for isa in crate::simd::test_levels() {
            for leaf_width in [None, Some(Width::U32)] {
                let cfg = PoptrieConfig {
                    direct_bits: s,
                    leaf_width,
                    force_scalar: false,
                    isa: Some(isa),
                };
                check(r, &Poptrie::build(r, &cfg).unwrap(), &[]);
            }
        }
    }
}

#[test]
fn small_v4() {
    let r = rib::<Ipv4>(&[
        ("0.0.0.0/0", 1),
        ("10.0.0.0/8", 2),
        ("10.1.1.0/24", 3),
        ("10.1.1.128/25", 4),
        ("10.1.1.7/32", 5),
        ("255.255.255.255/32", 6),
        ("0.0.0.0/32", 7),
        ("192.168.0.0/16", 1),
        ("192.168.3.252/30", 9),
    ]);
    check_configs(&r, &[0, 1, 6, 16, 18, 24]);
    check(
        &Rib::new(),
        &Poptrie::build(&Rib::<Ipv4>::new(), &Default::default()).unwrap(),
        &[],
    );
}

/// Sized for Miri (direct tables of at most 2^12 entries): with
/// `RUSTFLAGS="-C target-feature=+avx2,+popcnt,+bmi1,+bmi2" cargo +nightly miri test
/// -p lpmkit --lib miri_` it checks the popcount paths and the scalar twin.
#[test]
fn miri_small_direct_bits() {
    let r = rib::<Ipv4>(&[
        ("0.0.0.0/0", 1),
        ("10.0.0.0/8", 2),
        ("10.1.1.0/24", 3),
        ("10.1.1.128/25", 4),
        ("10.1.1.7/32", 5),
        ("255.255.255.255/32", 6),
        ("192.168.3.252/30", 9),
    ]);
    check_configs(&r, &[0, 6, 12]);
}

#[test]
fn small_v6() {
    let r = rib::<Ipv6>(&[
        ("::/0", 1),
        ("2001:db8::/32", 2),
        ("2001:db8:1::/48", 3),
        ("2001:db8:1::1/128", 4),
        ("2001:db8:1::/127", 6),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 5),
        ("::/128", 7),
    ]);
    for s in [0, 16, 18] {
        let cfg = PoptrieConfig {
            direct_bits: s,
            ..Default::default()
        };
        check(&r, &Poptrie::build(&r, &cfg).unwrap(), &[]);
    }
}

#[test]
fn widens_and_refuses() {
    let big = rib::<Ipv4>(&[("10.0.0.0/8", 70_000)]);
    let t = Poptrie::build(&big, &Default::default()).unwrap();
    assert_eq!(t.leaf_width(), Width::U32);
    check(&big, &t, &[]);
    let cfg = PoptrieConfig {
        leaf_width: Some(Width::U16),
        ..Default::default()
    };
    assert!(matches!(
        Poptrie::build(&big, &cfg),
        Err(BuildError::NextHopOverflow {
            max: 65535,
            requested: 70000,
            ..
        })
    ));
    let huge = rib::<Ipv4>(&[("10.0.0.0/8", 1 << 31)]);
    assert!(Poptrie::build(&huge, &Default::default()).is_err());
    // An update past 16 bits widens the leaves.
    let mut r = rib::<Ipv4>(&[("10.0.0.0/8", 1)]);
    let mut t = Poptrie::build(&r, &Default::default()).unwrap();
    let c = Change::Announce("10.1.0.0/24".parse().unwrap(), nh(100_000));
    c.apply_to(&mut r);
    assert!(t.apply(&r, &[c]).unwrap().full_rebuild);
    assert_eq!(t.leaf_width(), Width::U32);
    check(&r, &t, &[]);
    // A large next hop hidden under more-specifics still sets the width: withdrawing
    // the more-specifics exposes it.
    let mut r = rib::<Ipv4>(&[
        ("10.0.0.0/8", 70_000),
        ("10.0.0.0/9", 1),
        ("10.128.0.0/9", 1),
    ]);
    let mut t = Poptrie::build(&r, &PoptrieConfig::poptrie16()).unwrap();
    assert_eq!(t.leaf_width(), Width::U32);
    for p in ["10.0.0.0/9", "10.128.0.0/9"] {
        let c = Change::Withdraw(p.parse().unwrap());
        c.apply_to(&mut r);
        assert!(!t.apply(&r, &[c]).unwrap().full_rebuild);
    }
    assert_eq!(t.lookup(0x0a00_0001), Some(nh(70_000)));
    check(&r, &t, &[]);
}

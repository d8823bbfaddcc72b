use super::*;

fn rib(routes: &[(&str, u32)]) -> Rib<Ipv4> {
    crate::test_support::rib(routes)
}

fn check(rib: &Rib<Ipv4>, cfg: &Dir24_8Config) -> Dir24_8 {
    let t = Dir24_8::build(rib, cfg).unwrap();
    let mut keys: Vec<u32> = vec![0, 1, u32::MAX, u32::MAX - 1];
    for (p, _) in rib.iter() {
        for a in [p.first(), p.last()] {
            keys.extend([a, a.wrapping_add(1), a.wrapping_sub(1)]);
        }
    }
    let mut out = vec![0; keys.len()];
    t.lookup_batch(&keys, &mut out);
    for (&k, &o) in keys.iter().zip(&out) {
        let want = NextHop::raw(rib.lookup(k));
        assert_eq!(NextHop::raw(t.lookup(k)), want, "lookup {k:#x}");
        assert_eq!(o, want, "lookup_batch {k:#x}");
    }
    t
}

#[test]
fn small_tables() {
    let r = rib(&[
        ("0.0.0.0/0", 1),
        ("10.0.0.0/8", 2),
        ("10.1.1.0/24", 3),
        ("10.1.1.128/25", 4),
        ("10.1.1.7/32", 5),
        ("255.255.255.255/32", 6),
        ("0.0.0.0/32", 7),
        ("192.168.0.0/16", 1),
    ]);
    for isa in crate::simd::test_levels() {
        for w in [None, Some(Width::U16), Some(Width::U32)] {
            let t = check(
                &r,
                &Dir24_8Config {
                    entry_width: w,
                    force_scalar: false,
                    isa: Some(isa),
                },
            );
            assert_eq!(t.groups(), 3);
        }
    }
    assert!(check(&Rib::new(), &Dir24_8Config::default())
        .lookup(5)
        .is_none());
}

#[test]
fn aggregation_saves_groups() {
    // A /25 with its /24's next hop changes nothing: no group.
    let r = rib(&[("10.0.0.0/24", 1), ("10.0.0.0/25", 1)]);
    assert_eq!(check(&r, &Dir24_8Config::default()).groups(), 0);
}

#[test]
fn widens_and_refuses() {
    let big = rib(&[("10.0.0.0/8", 40_000)]);
    let t = check(&big, &Dir24_8Config::default());
    assert_eq!(t.entry_width(), Width::U32);
    let err = Dir24_8::build(
        &big,
        &Dir24_8Config {
            entry_width: Some(Width::U16),
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(matches!(
        err,
        BuildError::NextHopOverflow {
            max: 32767,
            requested: 40000,
            ..
        }
    ));
    let huge = rib(&[("10.0.0.0/8", 1 << 31)]);
    assert!(Dir24_8::build(&huge, &Dir24_8Config::default()).is_err());
}

#[test]
fn batch_lengths() {
    let r = rib(&[("10.0.0.0/8", 2), ("10.1.1.128/25", 4)]);
    let t = Dir24_8::build(&r, &Dir24_8Config::default()).unwrap();
    let keys: Vec<u32> = (0..100u32).map(|i| 0x0a01_0100 + i * 3).collect();
    for n in 0..keys.len() {
        let mut out = vec![u32::MAX; n];
        t.lookup_batch(&keys[..n], &mut out);
        for (k, o) in keys[..n].iter().zip(&out) {
            assert_eq!(*o, NextHop::raw(r.lookup(*k)));
        }
    }
}

/// The tables filled in two parts on two threads equal those filled in one pass (a table
/// large enough to split, with routes across the middle of the address space).
#[test]
fn fill_in_two_parts_equals_one_pass() {
    let mut rng = crate::rng::SplitMix64::new(24);
    let mut rib = Rib::<Ipv4>::new();
    for i in 0..120_000u32 {
        let len = [8u8, 16, 20, 22, 24, 24, 25, 28, 32][i as usize % 9];
        let p = crate::prefix::Prefix::new_truncating(rng.next() as u32, len);
        rib.insert(p, NextHop::new(1 + rng.below(40) as u32).unwrap());
    }
    rib.insert(
        "127.255.255.0/24".parse().unwrap(),
        NextHop::new(3).unwrap(),
    );
    rib.insert("128.0.0.0/23".parse().unwrap(), NextHop::new(4).unwrap());
    let ranges = rib.project(|_, _| {}).ranges;
    // Large enough to split, and with a range starting on a /24 boundary in the upper
    // half (where the split goes).
    assert!(ranges.len() >= build::PARALLEL_FROM);
    assert!(ranges.iter().any(|r| r.0 >= 1 << 31 && r.0 & 0xff == 0));
    let groups = build::count_groups(&ranges);
    let (one, d1) = build::fill_on::<u32>(&ranges, groups, 1);
    let (two, d2) = build::fill_on::<u32>(&ranges, groups, 2);
    assert_eq!(d1, d2);
    assert!(one.tbl24[..] == two.tbl24[..]);
    assert!(one.tbl8[..] == two.tbl8[..]);
    check(&rib, &Dir24_8Config::default());
}

//! Unit tests of OBMA against the `Rib` (the differential suite covers the real tables).

use super::*;
use crate::fib::Change;
use crate::fib::IncrementalFib;
use crate::prefix::{Ipv4, Ipv6, Prefix};
use crate::rib::Rib;
use crate::test_support::nh;

fn configs() -> Vec<ObmaConfig> {
    let mut v = vec![ObmaConfig::b(), ObmaConfig::l(), ObmaConfig::s()];
    v.push(ObmaConfig {
        sparse_k: 0,
        ..ObmaConfig::s()
    });
    for w in 0..4 {
        v.push(ObmaConfig {
            grouping: Grouping::Fixed(w),
            ..ObmaConfig::b()
        });
    }
    v.push(ObmaConfig {
        level24: false,
        ..ObmaConfig::b()
    });
    v.push(ObmaConfig {
        bis: BisSearch::Optimal,
        ..ObmaConfig::s()
    });
    v.push(ObmaConfig {
        grouping: Grouping::Adaptive {
            f0: 2,
            beta: 2,
            decay_updates: 50,
        },
        ..ObmaConfig::b()
    });
    v.push(ObmaConfig {
        grouping: Grouping::Adaptive {
            f0: 2,
            beta: 2,
            decay_updates: 50,
        },
        ..ObmaConfig::s()
    });
    v.push(ObmaConfig {
        entry_width: Some(Width::U32),
        ..ObmaConfig::s()
    });
    v
}

fn check<A: Address>(fib: &Obma<A>, rib: &Rib<A>, keys: &[A]) {
    let mut out = vec![0u32; keys.len()];
    fib.lookup_batch(keys, &mut out);
    for (&k, &o) in keys.iter().zip(&out) {
        let want = rib.lookup(k);
        assert_eq!(
            fib.lookup(k),
            want,
            "lookup {k:?} ({:?})",
            fib.writer().config
        );
        assert_eq!(
            o,
            NextHop::raw(want),
            "lookup_batch {k:?} ({:?})",
            fib.writer().config
        );
    }
}

fn keys_of<A: Address>(rib: &Rib<A>, extra: &[A]) -> Vec<A> {
    let mut keys: Vec<A> = extra.to_vec();
    for (p, _) in rib.iter() {
        keys.push(p.first());
        keys.push(p.last());
        keys.extend(p.first().checked_dec());
        keys.extend(p.last().checked_inc());
    }
    keys
}

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 11
    }
}

/// Random prefixes clustered in a few /16s, lengths weighted to /16../32.
fn random_change(r: &mut Lcg) -> Change<Ipv4> {
    let hi = [0x0a01u32, 0x0a02, 0xc0a8, 0x0000, 0xffff][(r.next() % 5) as usize];
    let addr = hi << 16 | (r.next() as u32 & 0xffff);
    let len = [
        0u8, 8, 12, 16, 17, 18, 19, 20, 22, 23, 24, 24, 24, 25, 26, 28, 30, 32,
    ][(r.next() % 18) as usize];
    let p = Prefix::new_truncating(addr, len);
    if r.next().is_multiple_of(3) {
        Change::Withdraw(p)
    } else {
        Change::Announce(p, nh(1 + (r.next() % 6) as u32))
    }
}

#[test]
fn random_updates_agree_with_the_rib_v4() {
    for config in configs() {
        let mut r = Lcg(7);
        let mut rib = Rib::<Ipv4>::new();
        for _ in 0..300 {
            random_change(&mut r).apply_to(&mut rib);
        }
        let mut fib = Obma::build(&rib, &config).unwrap();
        check(&fib, &rib, &keys_of(&rib, &[0, u32::MAX]));
        for step in 0..1500 {
            let c = random_change(&mut r);
            if c.apply_to(&mut rib) {
                fib.apply(&rib, &[c]).unwrap();
            }
            if step % 100 == 99 {
                check(&fib, &rib, &keys_of(&rib, &[0, u32::MAX]));
                let rebuilt = Obma::build(&rib, &config).unwrap();
                check(&rebuilt, &rib, &keys_of(&rib, &[]));
            }
        }
        assert!(fib.writer().counters.updates > 0);
    }
}

#[test]
fn random_updates_agree_with_the_rib_v6() {
    for config in [ObmaConfig::b(), ObmaConfig::l(), ObmaConfig::s()] {
        let mut r = Lcg(11);
        let mut rib = Rib::<Ipv6>::new();
        let mut fib = Obma::build(&rib, &config).unwrap();
        for step in 0..800 {
            let hi = [0x2001_0db8u128, 0x2a00_1450, 0x2001_0db9][(r.next() % 3) as usize];
            let addr = hi << 96 | (r.next() as u128) << 40 | r.next() as u128;
            let len = [0u8, 16, 24, 29, 32, 40, 44, 48, 56, 64, 127, 128][(r.next() % 12) as usize];
            let p = Prefix::new_truncating(addr, len);
            let c = if r.next().is_multiple_of(3) {
                Change::Withdraw(p)
            } else {
                Change::Announce(p, nh(1 + (r.next() % 5) as u32))
            };
            if c.apply_to(&mut rib) {
                fib.apply(&rib, &[c]).unwrap();
            }
            if step % 100 == 99 {
                check(&fib, &rib, &keys_of(&rib, &[0, u128::MAX]));
            }
        }
    }
}

#[test]
fn level24_transforms_and_adaptive_grouping_run() {
    let mut rib = Rib::<Ipv4>::new();
    rib.insert("10.0.0.0/8".parse().unwrap(), nh(1));
    rib.insert("10.1.0.0/20".parse().unwrap(), nh(2));
    let mut fib = Obma::build(&rib, &ObmaConfig::b()).unwrap();
    for i in 0..200u32 {
        let p: Prefix<Ipv4> = Prefix::new_truncating(0x0a01_0000 | (i % 16) << 8, 24);
        let c = Change::Announce(p, nh(3 + (i / 16) % 4));
        c.apply_to(&mut rib);
        fib.apply(&rib, &[c]).unwrap();
    }
    check(&fib, &rib, &keys_of(&rib, &[]));
    let c = fib.writer().counters;
    assert!(c.splices > 100, "{c:?}");
    assert!(c.regroups >= 1, "{c:?}");
    assert_eq!(c.full_rebuilds, 0);
}

#[test]
fn new_next_hop_beyond_the_split_rebuilds() {
    let mut rib = Rib::<Ipv4>::new();
    rib.insert("10.1.2.0/24".parse().unwrap(), nh(1));
    rib.insert("10.1.2.0/25".parse().unwrap(), nh(2));
    let mut fib = Obma::build(&rib, &ObmaConfig::b()).unwrap();
    let c = Change::Announce("10.1.3.0/24".parse().unwrap(), nh(40_000));
    c.apply_to(&mut rib);
    let st = fib.apply(&rib, &[c]).unwrap();
    assert!(st.full_rebuild);
    check(&fib, &rib, &keys_of(&rib, &[]));
    // Too many next hops for 16-bit entries: 32-bit ones.
    let c = Change::Announce("10.1.4.0/24".parse().unwrap(), nh(70_000));
    c.apply_to(&mut rib);
    fib.apply(&rib, &[c]).unwrap();
    assert_eq!(fib.entry_width(), Width::U32);
    check(&fib, &rib, &keys_of(&rib, &[]));
    let forced = ObmaConfig {
        entry_width: Some(Width::U16),
        ..ObmaConfig::b()
    };
    assert!(matches!(
        Obma::build(&rib, &forced),
        Err(BuildError::NextHopOverflow { .. })
    ));
}

#[test]
fn bad_partition_is_an_error() {
    let rib = Rib::<Ipv4>::new();
    let c = ObmaConfig {
        geometry: Some(Geometry {
            dpa_bits: 16,
            strides: vec![8, 4],
        }),
        ..ObmaConfig::b()
    };
    assert!(matches!(
        Obma::build(&rib, &c),
        Err(BuildError::InvalidConfig { .. })
    ));
}

/// The in-place update path — groups patched in one word, new groups written and copied
/// into the arena, chunks built and retired, published and reused — on a partition small
/// enough for Miri (the CI's Miri set runs every `miri_` test), then checked against the
/// `Rib`.
#[test]
fn miri_small_partition_updates() {
    let geometry = Geometry {
        dpa_bits: 8,
        strides: vec![6, 6, 6, 6],
    };
    let steps = if cfg!(miri) { 80 } else { 3_000 };
    for config in [ObmaConfig::b(), ObmaConfig::l(), ObmaConfig::s()] {
        let config = ObmaConfig {
            geometry: Some(geometry.clone()),
            ..config
        };
        let mut r = Lcg(11);
        let mut rib = Rib::<Ipv4>::new();
        for _ in 0..40 {
            random_change(&mut r).apply_to(&mut rib);
        }
        let mut fib = Obma::build(&rib, &config).unwrap();
        for _ in 0..steps {
            let c = random_change(&mut r);
            if c.apply_to(&mut rib) {
                fib.apply(&rib, &[c]).unwrap();
            }
        }
        check(&fib, &rib, &keys_of(&rib, &[0, u32::MAX]));
        assert!(fib.writer().counters.updates > 0);
    }
}

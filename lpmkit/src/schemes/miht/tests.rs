use super::*;
use crate::fib::{Change, IncrementalFib};
use crate::prefix::{Ipv4, Ipv6, Prefix};
use crate::rib::Rib;
use crate::rng::SplitMix64;
use crate::test_support::nh;

fn check<A: Address>(rib: &Rib<A>, fib: &Miht<A>) {
    let mut keys = crate::traffic::boundary_keys(rib);
    keys.extend([A::ZERO, A::MAX]);
    let mut out = vec![0; keys.len()];
    fib.lookup_batch(&keys, &mut out);
    for (i, &k) in keys.iter().enumerate() {
        let want = NextHop::raw(rib.lookup(k));
        assert_eq!(NextHop::raw(fib.lookup(k)), want, "lookup {k:x}");
        assert_eq!(out[i], want, "lookup_batch {k:x}");
        assert_eq!(fib.table().stalled_lookup(k, &mut || {}), want);
    }
    fib.check_against(rib).unwrap();
}

fn configs() -> Vec<MihtConfig> {
    let mut v = vec![MihtConfig::default()];
    for (k, m) in [(1, 3), (8, 4), (16, 5), (20, 16), (24, 64), (32, 32)] {
        v.push(MihtConfig {
            k: Some(k),
            m: Some(m),
        });
    }
    v
}

#[test]
fn small_tables() {
    let r4: Rib<Ipv4> = [
        ("0.0.0.0/0", 1),
        ("10.0.0.0/8", 2),
        ("10.1.0.0/16", 3),
        ("10.1.2.0/24", 4),
        ("10.1.2.128/25", 5),
        ("10.1.2.7/32", 6),
        ("255.255.255.255/32", 7),
        ("0.0.0.0/32", 8),
        ("192.168.0.0/15", 9),
    ]
    .iter()
    .map(|&(p, h)| (p.parse::<Prefix<Ipv4>>().unwrap(), nh(h)))
    .collect();
    for cfg in configs() {
        check(&r4, &Miht::build(&r4, &cfg).unwrap());
        check(
            &Rib::new(),
            &Miht::build(&Rib::<Ipv4>::new(), &cfg).unwrap(),
        );
    }
    let r6: Rib<Ipv6> = [
        ("::/0", 1),
        ("2001:db8::/32", 2),
        ("2001:db8:1::/48", 3),
        ("2001:db8:1::1/128", 4),
        ("2001:db8::/31", 5),
        ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 6),
    ]
    .iter()
    .map(|&(p, h)| (p.parse::<Prefix<Ipv6>>().unwrap(), nh(h)))
    .collect();
    for cfg in configs() {
        check(&r6, &Miht::build(&r6, &cfg).unwrap());
    }
    assert!(Miht::build(
        &r4,
        &MihtConfig {
            k: Some(33),
            m: None
        }
    )
    .is_err());
    assert!(Miht::build(
        &r4,
        &MihtConfig {
            k: None,
            m: Some(2)
        }
    )
    .is_err());
}

fn random_updates<A: Address>(cfg: &MihtConfig, seed: u64, batch: usize) {
    let mut rng = SplitMix64::new(seed);
    let mut rib = Rib::<A>::new();
    let mut fib = Miht::build(&rib, cfg).unwrap();
    let mut pending = Vec::new();
    for step in 0..600 {
        let len = rng.below(A::BITS as u64 + 1) as u8;
        let top = A::from_u128((rng.below(4) as u128) << (A::BITS - 2));
        let mid = A::from_u128(rng.next_u128() >> (128 - A::BITS as u32 + rng.below(20) as u32));
        let p = Prefix::new_truncating(top.or(mid), len);
        let c = if rng.below(3) == 0 {
            let existing = rib.iter().nth(rng.below(rib.len().max(1) as u64) as usize);
            Change::Withdraw(existing.map_or(p, |r| r.0))
        } else {
            Change::Announce(p, nh(1 + rng.below(5) as u32))
        };
        c.apply_to(&mut rib);
        pending.push(c);
        if pending.len() >= batch {
            fib.apply(&rib, &pending).unwrap();
            pending.clear();
            if step % 10 == 0 {
                check(&rib, &fib);
            }
        }
    }
    fib.apply(&rib, &pending).unwrap();
    check(&rib, &fib);
}

#[test]
fn updates_follow_the_rib() {
    for (i, cfg) in configs().iter().enumerate() {
        random_updates::<Ipv4>(cfg, i as u64, 1);
        random_updates::<Ipv4>(cfg, 10 + i as u64, 8);
        random_updates::<Ipv6>(cfg, 20 + i as u64, 1);
        random_updates::<Ipv6>(cfg, 30 + i as u64, 8);
    }
}

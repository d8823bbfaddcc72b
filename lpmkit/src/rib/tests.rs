//! The `Rib` against the oracle (the plain trie of `oracle.rs`): random operation sequences
//! and the real update traces, with the answers about the touched prefix compared after
//! every operation and the whole tables compared periodically.

use super::oracle::Oracle;
use super::*;
use crate::prefix::{Ipv4, Ipv6};
use crate::rng::SplitMix64;

fn nh(v: u32) -> NextHop {
    NextHop::new(v).unwrap()
}

/// Every question about `p` has the same answer from both.
fn same_about<A: Address>(rib: &Rib<A>, oracle: &Oracle<A>, p: &Prefix<A>, rng: &mut SplitMix64) {
    assert_eq!(rib.get(p), oracle.get(p), "get {p}");
    assert_eq!(rib.contains(p), oracle.contains(p), "contains {p}");
    assert_eq!(
        rib.covering_route(p),
        oracle.covering_route(p),
        "covering_route {p}"
    );
    assert_eq!(
        rib.covering_next_hop(p),
        oracle.covering_next_hop(p),
        "covering_next_hop {p}"
    );
    assert_eq!(rib.has_longer(p), oracle.has_longer(p), "has_longer {p}");
    let inside = p
        .first()
        .or(A::from_u128(rng.next_u128()).and(A::hostmask(p.len())));
    for a in [p.first(), p.last(), inside] {
        assert_eq!(
            rib.lookup_prefix(a),
            oracle.lookup_prefix(a),
            "lookup {a:x}"
        );
        assert_eq!(rib.lookup(a), oracle.lookup(a), "lookup {a:x}");
    }
    // A bounded look at the routes inside (a short prefix covers the whole table).
    assert!(
        rib.covered(p).take(8).eq(oracle.covered(p).take(8)),
        "covered {p}"
    );
    if let Some(up) = p.parent() {
        assert_eq!(
            rib.has_longer(&up),
            oracle.has_longer(&up),
            "has_longer {up}"
        );
        assert_eq!(
            rib.covering_next_hop(&up),
            oracle.covering_next_hop(&up),
            "covering_next_hop {up}"
        );
    }
    if p.len() >= 8 {
        let depth = (p.len() + rng.below(6) as u8).min(A::BITS);
        let (mut got, mut want) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
        let got_cov = rib.walk_window(p, depth, |q, h| got.0.push((q, h)), |q| got.1.push(q));
        let want_cov = oracle.walk_window(p, depth, |q, h| want.0.push((q, h)), |q| want.1.push(q));
        assert_eq!(got_cov, want_cov, "walk_window covering {p}");
        assert_eq!(got, want, "walk_window {p} to /{depth}");
    }
}

/// The whole tables are equal, the `Rib`'s structure is sound, and its range projection
/// agrees with its lookups.
fn same_tables<A: Address>(rib: &Rib<A>, oracle: &Oracle<A>, rng: &mut SplitMix64) {
    assert_eq!(rib.len(), oracle.len());
    assert!(rib.iter().eq(oracle.iter()), "iteration");
    let mut hist = vec![0; A::BITS as usize + 1];
    for (p, _) in oracle.iter() {
        hist[p.len() as usize] += 1;
    }
    assert_eq!(rib.length_histogram(), hist);
    rib.check_invariants();
    check_ranges(rib, rng);
}

fn check_ranges<A: Address>(rib: &Rib<A>, rng: &mut SplitMix64) {
    let len = rng.below(A::BITS as u64 / 2) as u8;
    let some = Prefix::new_truncating(A::from_u128(rng.next_u128()), len);
    for window in [Prefix::DEFAULT, some] {
        let mut ranges: Vec<(A, A, Option<NextHop>)> = Vec::new();
        rib.for_each_range_in(&window, |f, l, h| ranges.push((f, l, h)));
        assert_eq!(ranges[0].0, window.first());
        assert_eq!(ranges.last().unwrap().1, window.last());
        for w in ranges.windows(2) {
            assert_eq!(w[0].1.checked_inc(), Some(w[1].0), "contiguous");
            assert_ne!(w[0].2, w[1].2, "merged");
        }
        for &(f, l, h) in &ranges {
            assert!(f <= l);
            assert_eq!(rib.lookup(f), h);
            assert_eq!(rib.lookup(l), h);
        }
    }
}

/// A random prefix of a small, nested space: a few blocks of the first 16 bits (some
/// shorter prefixes covering many blocks), and below them address bits drawn from a
/// few patterns, so that prefixes nest, collide and recur.
fn random_prefix<A: Address>(rng: &mut SplitMix64) -> Prefix<A> {
    const BLOCKS: [u128; 6] = [0x0000, 0x0a01, 0x0a02, 0x7fff, 0xc0a8, 0xffff];
    let bits = A::BITS as u64;
    let len = match rng.below(16) {
        0 => rng.below(17),
        1..=3 => 16 + rng.below(9),
        _ => 16 + rng.below((bits - 16).min(40) + 1),
    } as u8;
    let mut a = BLOCKS[rng.below(6) as usize] << (A::BITS - 16);
    // Below the block, nibble by nibble from four patterns (a fresh random one sometimes).
    let mut shift = A::BITS as i32 - 20;
    while shift >= 0 {
        let nib = match rng.below(8) {
            0..=3 => 0,
            4 | 5 => 0xf,
            6 => 0x8,
            _ => rng.below(16) as u128,
        };
        a |= nib << shift;
        shift -= 4;
    }
    Prefix::new_truncating(A::from_u128(a), len)
}

/// `ops` random operations on a `Rib` keeping a jump table from `jump_from` routes and on
/// the oracle, each followed by the questions about its prefix; the whole tables
/// compared every `full` operations. The table grows toward `target` routes.
fn random_ops<A: Address>(seed: u64, ops: usize, jump_from: usize, target: usize, full: usize) {
    random_ops_each::<A>(seed, ops, jump_from, target, full, false);
}

/// [`random_ops`]; with `every_route`, also every route of the two compared after every
/// operation.
fn random_ops_each<A: Address>(
    seed: u64,
    ops: usize,
    jump_from: usize,
    target: usize,
    full: usize,
    every_route: bool,
) {
    let mut rng = SplitMix64::new(seed);
    let mut rib = Rib::<A>::with_jump_from(jump_from);
    let mut oracle = Oracle::<A>::new();
    // Prefixes seen, so that removals and re-announcements hit routes.
    let mut pool: Vec<Prefix<A>> = Vec::new();
    for step in 0..ops {
        let from_pool = |rng: &mut SplitMix64, pool: &Vec<Prefix<A>>| {
            if pool.is_empty() {
                random_prefix::<A>(rng)
            } else {
                pool[rng.below(pool.len() as u64) as usize]
            }
        };
        let grow = rib.len() < target;
        let p = match rng.below(100) {
            0..=34 => {
                let p = random_prefix::<A>(&mut rng);
                let h = nh(1 + rng.below(6) as u32);
                assert_eq!(
                    rib.insert(p, h),
                    oracle.insert(p, h),
                    "insert {p} at {step}"
                );
                if pool.len() < 8192 {
                    pool.push(p);
                } else {
                    let i = rng.below(pool.len() as u64) as usize;
                    pool[i] = p;
                }
                p
            }
            35..=59 => {
                let p = from_pool(&mut rng, &pool);
                let h = nh(1 + rng.below(6) as u32);
                assert_eq!(
                    rib.insert(p, h),
                    oracle.insert(p, h),
                    "re-insert {p} at {step}"
                );
                p
            }
            60..=89 if !grow || rng.below(3) == 0 => {
                let p = from_pool(&mut rng, &pool);
                assert_eq!(rib.remove(&p), oracle.remove(&p), "remove {p} at {step}");
                p
            }
            60..=94 => {
                let p = random_prefix::<A>(&mut rng);
                assert_eq!(rib.remove(&p), oracle.remove(&p), "remove {p} at {step}");
                p
            }
            _ => random_prefix::<A>(&mut rng),
        };
        assert_eq!(rib.len(), oracle.len(), "len at {step}");
        same_about(&rib, &oracle, &p, &mut rng);
        if every_route {
            assert!(rib.iter().eq(oracle.iter()), "routes at {step}");
        }
        if step % full == full - 1 {
            same_tables(&rib, &oracle, &mut rng);
        }
    }
    same_tables(&rib, &oracle, &mut rng);
    // Removing everything leaves no node, index entry or block behind.
    for (p, h) in oracle.iter() {
        assert_eq!(rib.remove(&p), Some(h));
    }
    assert!(rib.is_empty());
    assert_eq!(rib.root, NIL);
    rib.check_invariants();
    assert!(rib.jump.iter().all(|&j| j == [NIL, NIL]) || rib.jump.is_empty());
}

/// Random batches of changes applied with `apply_each` (each change checked against the
/// oracle as `then` sees the table after it) and `apply_changes` (the count of changes
/// that altered the table, and the whole tables afterwards); an error from `then` stops
/// the batch right after the change it saw.
fn random_batches<A: Address>(seed: u64, jump_from: usize) {
    let mut rng = SplitMix64::new(seed);
    let mut rib = Rib::<A>::with_jump_from(jump_from);
    let mut oracle = Oracle::<A>::new();
    let mut pool: Vec<Prefix<A>> = Vec::new();
    for round in 0..60 {
        let len = rng.below(400) as usize;
        let changes: Vec<Change<A>> = (0..len)
            .map(|_| {
                let p = if pool.is_empty() || rng.below(3) == 0 {
                    let p = random_prefix::<A>(&mut rng);
                    pool.push(p);
                    p
                } else {
                    pool[rng.below(pool.len() as u64) as usize]
                };
                if rng.below(3) == 0 {
                    Change::Withdraw(p)
                } else {
                    Change::Announce(p, nh(1 + rng.below(4) as u32))
                }
            })
            .collect();
        let apply = |oracle: &mut Oracle<A>, c: &Change<A>| match *c {
            Change::Announce(p, h) => oracle.insert(p, h) != Some(h),
            Change::Withdraw(p) => oracle.remove(&p).is_some(),
        };
        match round % 3 {
            0 => {
                let mut seen = 0;
                let done: Result<(), ()> = rib.apply_each(&changes, |rib, k, changed| {
                    assert_eq!(k, seen, "changes in order");
                    seen += 1;
                    assert_eq!(changed, apply(&mut oracle, &changes[k]), "change {k}");
                    let mut rng = SplitMix64::new(k as u64);
                    same_about(rib, &oracle, &changes[k].prefix(), &mut rng);
                    Ok(())
                });
                assert_eq!(done, Ok(()));
                assert_eq!(seen, changes.len());
            }
            1 => {
                let want = changes.iter().filter(|c| apply(&mut oracle, c)).count();
                assert_eq!(rib.apply_changes(&changes), want, "round {round}");
            }
            _ => {
                let stop = rng.below(len as u64 + 1) as usize;
                let done =
                    rib.apply_each(&changes, |_, k, _| if k == stop { Err(k) } else { Ok(()) });
                let applied = if stop < len {
                    assert_eq!(done, Err(stop));
                    stop + 1
                } else {
                    assert_eq!(done, Ok(()));
                    len
                };
                for c in &changes[..applied] {
                    apply(&mut oracle, c);
                }
            }
        }
        same_tables(&rib, &oracle, &mut rng);
    }
}

#[test]
fn batches_agree_with_the_oracle() {
    for (seed, jump_from) in [(1, 0), (2, 1 << 12), (3, usize::MAX), (4, 300)] {
        random_batches::<Ipv4>(seed, jump_from);
        random_batches::<Ipv6>(seed + 10, jump_from);
    }
}

/// Prefetching any prefix (of a table empty, small or with a jump table) changes nothing.
#[test]
fn prefetch_changes_nothing() {
    let mut rng = SplitMix64::new(9);
    for jump_from in [0, usize::MAX] {
        let mut rib = Rib::<Ipv4>::with_jump_from(jump_from);
        let mut oracle = Oracle::<Ipv4>::new();
        for step in 0..2000 {
            let p = random_prefix::<Ipv4>(&mut rng);
            rib.prefetch(&p);
            rib.prefetch(&Prefix::new_truncating(0, 0));
            if step % 2 == 0 {
                assert_eq!(rib.insert(p, nh(3)), oracle.insert(p, nh(3)));
            }
        }
        same_tables(&rib, &oracle, &mut rng);
    }
}

/// Random operations over the three walks (jump table from the start, from 4096 routes
/// on, never), the whole tables compared every 5,000.
#[test]
fn random_operations_agree_with_the_oracle() {
    for (seed, jump_from) in [(1, 0), (2, JUMP_FROM), (3, usize::MAX)] {
        random_ops::<Ipv4>(seed, 50_000, jump_from, 6000, 5000);
        random_ops::<Ipv6>(seed, 20_000, jump_from, 3000, 5000);
    }
}

/// 10^6 random operations, the whole tables compared every 50,000 (a few seconds in a
/// release build).
#[test]
fn million_random_operations_agree_with_the_oracle() {
    random_ops::<Ipv4>(11, 700_000, JUMP_FROM, 8000, 50_000);
    random_ops::<Ipv6>(12, 300_000, JUMP_FROM, 8000, 50_000);
}

/// 10^6 random operations on tables of about a thousand routes, every route compared
/// after every one (and the structure's invariants and range projection every 1,000), in
/// four tests the test threads run side by side: 700,000 on IPv4 and 300,000 on IPv6, each
/// in two seeds (an IPv6 operation here costs several times an IPv4 one).
#[test]
#[ignore = "long tier: 10^6 operations, every route compared after each"]
fn million_random_operations_every_route_after_each() {
    random_ops_each::<Ipv4>(21, 350_000, 0, 1000, 1000, true);
}

#[test]
#[ignore = "long tier: 10^6 operations, every route compared after each"]
fn million_random_operations_every_route_after_each_v4_more() {
    random_ops_each::<Ipv4>(23, 350_000, 0, 1000, 1000, true);
}

#[test]
#[ignore = "long tier: 10^6 operations, every route compared after each"]
fn million_random_operations_every_route_after_each_v6() {
    random_ops_each::<Ipv6>(22, 150_000, 0, 1000, 1000, true);
}

#[test]
#[ignore = "long tier: 10^6 operations, every route compared after each"]
fn million_random_operations_every_route_after_each_v6_more() {
    random_ops_each::<Ipv6>(24, 150_000, 0, 1000, 1000, true);
}

/// Small tables with few prefixes: many structural edge cases per operation, the whole
/// tables compared after every one.
#[test]
fn tiny_tables_agree_after_every_operation() {
    for seed in 0..6 {
        random_ops::<Ipv4>(
            100 + seed,
            3000,
            [0, 8, usize::MAX][seed as usize % 3],
            40,
            1,
        );
        random_ops::<Ipv6>(
            200 + seed,
            2000,
            [0, 8, usize::MAX][seed as usize % 3],
            40,
            1,
        );
    }
}

/// Tables loaded in (address, length) order — the path that places each route by
/// walking up from the last one and indexes it with the next batch — with withdrawals,
/// re-announcements and lookups mixed in, and a clone half way.
#[test]
fn ordered_loads_agree_with_the_oracle() {
    fn load<A: Address>(seed: u64, jump_from: usize) {
        let mut rng = SplitMix64::new(seed);
        let mut prefixes: Vec<Prefix<A>> = (0..6000).map(|_| random_prefix(&mut rng)).collect();
        prefixes.sort();
        prefixes.dedup();
        let mut rib = Rib::<A>::with_jump_from(jump_from);
        let mut oracle = Oracle::<A>::new();
        for (k, p) in prefixes.iter().enumerate() {
            let h = nh(1 + rng.below(4) as u32);
            assert_eq!(rib.insert(*p, h), oracle.insert(*p, h), "insert {p}");
            same_about(&rib, &oracle, p, &mut rng);
            // Now and then a change behind the front: the walk-up's node may go.
            if rng.below(8) == 0 {
                let q = prefixes[rng.below(k as u64 + 1) as usize];
                if rng.below(2) == 0 {
                    assert_eq!(rib.remove(&q), oracle.remove(&q), "remove {q}");
                } else {
                    assert_eq!(rib.insert(q, h), oracle.insert(q, h), "insert {q}");
                }
                same_about(&rib, &oracle, &q, &mut rng);
            }
            if k == prefixes.len() / 2 {
                rib = rib.clone();
            }
            if k % 500 == 0 {
                same_tables(&rib, &oracle, &mut rng);
            }
        }
        same_tables(&rib, &oracle, &mut rng);
    }
    for (seed, jump_from) in [(1, 0), (2, 1000), (3, usize::MAX)] {
        load::<Ipv4>(seed, jump_from);
        load::<Ipv6>(seed, jump_from);
    }
}

/// A table loaded in order and changed only in its next hops iterates (and projects) by a
/// scan of the node array; the first change behind the front or withdrawal returns it to
/// the walk, and both agree with the oracle throughout.
#[test]
fn in_order_tables_iterate_by_scan() {
    fn load<A: Address>(seed: u64, jump_from: usize) {
        let mut rng = SplitMix64::new(seed);
        let mut prefixes: Vec<Prefix<A>> = (0..4000).map(|_| random_prefix(&mut rng)).collect();
        prefixes.sort();
        prefixes.dedup();
        let mut rib = Rib::<A>::with_jump_from(jump_from);
        let mut oracle = Oracle::<A>::new();
        for (k, p) in prefixes.iter().enumerate() {
            let h = nh(1 + rng.below(4) as u32);
            assert_eq!(rib.insert(*p, h), oracle.insert(*p, h), "insert {p}");
            // Next-hop changes behind the front keep the order.
            let q = prefixes[rng.below(k as u64 + 1) as usize];
            assert_eq!(rib.insert(q, h), oracle.insert(q, h), "insert {q}");
            if k % 700 == 0 {
                assert!(rib.in_order);
                same_tables(&rib, &oracle, &mut rng);
            }
        }
        assert!(rib.in_order);
        let copy = rib.clone();
        assert!(copy.in_order && copy.iter().eq(oracle.iter()));
        same_tables(&rib, &oracle, &mut rng);
        let q = prefixes[prefixes.len() / 3];
        assert_eq!(rib.remove(&q), oracle.remove(&q));
        assert!(!rib.in_order);
        same_tables(&rib, &oracle, &mut rng);
        // A new prefix behind the front (if one is free) also ends the scan.
        let mut other = copy;
        if let Some(p) = (0..100)
            .map(|_| random_prefix::<A>(&mut rng))
            .find(|p| other.get(p).is_none() && p < prefixes.last().unwrap())
        {
            let mut oracle: Oracle<A> = Oracle::new();
            for (q, h) in other.iter() {
                oracle.insert(q, h);
            }
            other.insert(p, nh(9));
            oracle.insert(p, nh(9));
            assert!(!other.in_order);
            same_tables(&other, &oracle, &mut rng);
        }
    }
    for (seed, jump_from) in [(4, 0), (5, usize::MAX)] {
        load::<Ipv4>(seed, jump_from);
        load::<Ipv6>(seed, jump_from);
    }
}

#[test]
fn default_and_host_routes() {
    for jump_from in [0, usize::MAX] {
        let mut rib = Rib::<Ipv4>::with_jump_from(jump_from);
        assert_eq!(rib.lookup(0), None);
        rib.insert(Prefix::DEFAULT, nh(1));
        rib.insert(Prefix::host(u32::MAX), nh(2));
        rib.insert(Prefix::host(0), nh(3));
        assert_eq!(rib.lookup(0), Some(nh(3)));
        assert_eq!(rib.lookup(1), Some(nh(1)));
        assert_eq!(rib.lookup(u32::MAX), Some(nh(2)));
        assert_eq!(rib.lookup(u32::MAX - 1), Some(nh(1)));
        let mut r = vec![];
        rib.for_each_range(|f, l, h| r.push((f, l, h.map(|h| h.get()))));
        assert_eq!(
            r,
            vec![
                (0, 0, Some(3)),
                (1, u32::MAX - 1, Some(1)),
                (u32::MAX, u32::MAX, Some(2))
            ]
        );
        assert_eq!(rib.remove(&Prefix::DEFAULT), Some(nh(1)));
        assert_eq!(rib.lookup(1), None);
        assert_eq!(rib.len(), 2);
        rib.check_invariants();
    }
}

#[test]
fn replace_returns_old() {
    let mut rib = Rib::<Ipv6>::new();
    let p: Prefix<Ipv6> = "2001:db8::/32".parse().unwrap();
    assert_eq!(rib.insert(p, nh(1)), None);
    assert_eq!(rib.insert(p, nh(2)), Some(nh(1)));
    assert_eq!(rib.len(), 1);
    assert_eq!(rib.remove(&p), Some(nh(2)));
    assert_eq!(rib.remove(&p), None);
}

#[test]
fn empty_ranges() {
    let rib = Rib::<Ipv4>::new();
    let mut r = vec![];
    rib.for_each_range(|f, l, h| r.push((f, l, h)));
    assert_eq!(r, vec![(0, u32::MAX, None)]);
}

/// A glue node becoming a route and back, the jump table built on the way, `clear`,
/// `sample`, `Extend` and the histogram.
#[test]
fn glue_jump_and_whole_table_operations() {
    let p = |s: &str| s.parse::<Prefix<Ipv4>>().unwrap();
    let mut rib = Rib::<Ipv4>::with_jump_from(3);
    rib.insert(p("10.1.0.0/24"), nh(1));
    rib.insert(p("10.1.1.0/24"), nh(2));
    // 10.1.0.0/23 is now a glue node: not a route.
    assert_eq!(rib.get(&p("10.1.0.0/23")), None);
    assert!(rib.jump.is_empty());
    assert_eq!(rib.insert(p("10.1.0.0/23"), nh(3)), None);
    assert!(!rib.jump.is_empty(), "built at the third route");
    assert_eq!(rib.covering_next_hop(&p("10.1.0.128/25")), Some(nh(1)));
    rib.insert(p("10.0.0.0/8"), nh(4));
    assert_eq!(rib.lookup(0x0a02_0000), Some(nh(4)));
    assert_eq!(
        rib.lookup_prefix(0x0a01_0080),
        Some((p("10.1.0.0/24"), nh(1)))
    );
    assert_eq!(rib.length_histogram()[24], 2);
    rib.check_invariants();
    assert_eq!(rib.remove(&p("10.1.0.0/23")), Some(nh(3)));
    assert_eq!(rib.remove(&p("10.0.0.0/8")), Some(nh(4)));
    assert_eq!(rib.lookup(0x0a02_0000), None);
    rib.check_invariants();
    let copy: Rib<Ipv4> = rib.iter().collect();
    assert!(copy.iter().eq(rib.iter()));
    assert_eq!(rib.sample(1.0, 1).len(), 2);
    assert!(rib.memory_bytes() > 0);
    rib.clear();
    assert!(rib.is_empty() && rib.iter().next().is_none());
    assert_eq!(rib.length_histogram(), vec![0; 33]);
    rib.check_invariants();
}

/// Every update trace of the data set replayed on every table of its family, the
/// `Rib` against the oracle after every change (each change's prefix) and in whole at the
/// end.
/// Every real trace of a family replayed on the smallest real table of that family with
/// real next hops, the answers about each change's prefix compared after it and the whole
/// tables after each trace.
#[cfg(feature = "compression")]
#[test]
fn real_traces_agree_with_the_oracle() {
    real_traces(|name| SMALL_TABLES.contains(&name));
}

/// [`real_traces_agree_with_the_oracle`] on every other real table.
#[cfg(feature = "compression")]
#[test]
#[ignore = "long tier: every real trace on the large real tables"]
fn real_traces_on_large_tables_agree_with_the_oracle() {
    real_traces(|name| !SMALL_TABLES.contains(&name));
}

/// The tables the default tier replays the traces on.
#[cfg(feature = "compression")]
const SMALL_TABLES: [&str; 2] = [
    "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
    "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
];

/// Every real trace replayed on each real table whose file name `take` accepts.
#[cfg(feature = "compression")]
fn real_traces(take: impl Fn(&str) -> bool) {
    let Some(dir) = crate::test_data::dir() else {
        return;
    };
    let files = |sub: &str| {
        let mut v: Vec<_> = std::fs::read_dir(dir.join(sub))
            .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        v.sort();
        v
    };
    let (tables, traces) = (files("fib"), files("updates"));
    assert!(
        !tables.is_empty() && !traces.is_empty(),
        "{}",
        dir.display()
    );
    for family in ["ipv4-", "ipv6-"] {
        let named = |v: &Vec<std::path::PathBuf>| -> Vec<std::path::PathBuf> {
            v.iter()
                .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(family))
                .cloned()
                .collect()
        };
        let taken = named(&tables)
            .into_iter()
            .filter(|p| take(&p.file_name().unwrap().to_string_lossy()));
        for table in taken {
            if family == "ipv4-" {
                replay::<Ipv4>(&table, &named(&traces));
            } else {
                replay::<Ipv6>(&table, &named(&traces));
            }
        }
    }
}

#[cfg(feature = "compression")]
fn replay<A: Address>(table: &std::path::Path, traces: &[std::path::PathBuf]) {
    let opts = crate::io::TableOptions::default();
    let loaded = crate::io::read_table_as::<A>(table, &opts).unwrap();
    let mut oracle0 = Oracle::<A>::new();
    for (p, h) in loaded.rib.iter() {
        oracle0.insert(p, h);
    }
    let mut rng = SplitMix64::new(5);
    same_tables(&loaded.rib, &oracle0, &mut rng);
    for trace in traces {
        let mut t = loaded.clone();
        let updates = crate::io::read_updates::<A>(trace, &mut t.next_hops).unwrap();
        let mut batched = t.rib.clone();
        let (mut rib, mut oracle) = (t.rib, oracle0.clone());
        let mut altered = 0;
        for (i, u) in updates.iter().enumerate() {
            let p = u.change.prefix();
            let (got, want) = match u.change {
                crate::fib::Change::Announce(p, h) => {
                    altered += (oracle.get(&p) != Some(h)) as usize;
                    (rib.insert(p, h), oracle.insert(p, h))
                }
                crate::fib::Change::Withdraw(p) => {
                    altered += oracle.contains(&p) as usize;
                    (rib.remove(&p), oracle.remove(&p))
                }
            };
            assert_eq!(got, want, "{} change {i} ({p})", trace.display());
            same_about(&rib, &oracle, &p, &mut rng);
        }
        same_tables(&rib, &oracle, &mut rng);
        // The same trace as one batch (prefetching ahead) ends in the same table.
        let changes: Vec<_> = updates.iter().map(|u| u.change).collect();
        assert_eq!(
            batched.apply_changes(&changes),
            altered,
            "{}",
            trace.display()
        );
        same_tables(&batched, &oracle, &mut rng);
        eprintln!(
            "{} on {}: {} changes, {} routes after, equal",
            trace.display(),
            table.display(),
            updates.len(),
            rib.len()
        );
    }
}

/// `sample_keys` draws keys inside the routes, the same ones for a seed, from the node array
/// and, once most nodes were freed, by a walk; an empty table gives none.
#[test]
fn sampled_keys_lie_inside_routes() {
    let mut rib = Rib::<Ipv4>::new();
    assert!(rib.sample_keys(10, 1).is_empty());
    let mut rng = SplitMix64::new(5);
    let mut routes = Vec::new();
    for _ in 0..5000 {
        let p = random_prefix::<Ipv4>(&mut rng);
        rib.insert(p, nh(1));
        routes.push(p);
    }
    let check = |rib: &Rib<Ipv4>| {
        let keys = rib.sample_keys(4000, 9);
        assert_eq!(keys.len(), 4000);
        assert_eq!(keys, rib.sample_keys(4000, 9));
        assert!(keys.iter().all(|&k| rib.lookup(k).is_some()));
        // Drawn from many routes, not a few.
        let matched: std::collections::HashSet<_> = keys
            .iter()
            .map(|&k| rib.lookup_prefix(k).unwrap().0)
            .collect();
        assert!(matched.len() > rib.len().min(4000) / 4, "{}", matched.len());
    };
    check(&rib);
    // Most route nodes freed: the walk.
    for p in &routes[..4900] {
        rib.remove(p);
    }
    assert!(rib.len() * 4 < rib.nodes.len());
    check(&rib);
}

//! Lookups concurrent with updates, through the C API: one thread runs
//! `rte_fib_lookup_bulk` / `rte_fib6_lookup_bulk` without pause while another replays a
//! real BGP update trace with `rte_fib_add` / `rte_fib_delete`, change by change, on the
//! same handle, loaded first with a real table. Every answer must be the reference trie's
//! answer for its key at one of the generations the lookup call spanned: never a value
//! no version of the table had.
//!
//! With `auto`, the replay's first change is also the one that moves the table from the
//! scheme it had while only looked up to one updated in place, under the lookups.
//!
//! The writer counts generations: `started` before it applies change `g`, `visible` once
//! lookups are sure to see it (when `rte_fib_add` returns for a scheme updated in place;
//! after `lpmkit_rte_fib_sync` for a rebuilt one, which publishes on its own thread in
//! between, so a lookup may see any generation from the last sync on). The history of
//! each probe key's answer over the generations is computed beforehand on a `Rib`.
//! Probes: the first, last and a middle address of every prefix the trace touches, and
//! random addresses.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use common::api::{conf, Fib};
use lpmkit::io::read_updates;
use lpmkit::{Address, Change, NextHopTable, Prefix, Rib};

/// The answer where no route matches.
const DEFAULT_NH: u64 = 0xdefa_u64;
/// Trace next hops are this plus their id (the base table's: their id).
const TRACE_NH: u64 = 100_000;

/// A u64 value per next-hop id of the `Rib` (0 = no route).
fn value(id: u32, trace: bool) -> u64 {
    match (id, trace) {
        (0, _) => DEFAULT_NH,
        (i, false) => u64::from(i),
        (i, true) => TRACE_NH + u64::from(i),
    }
}

/// Each probe's answers over the generations: `(generation, value)`, from 0 on.
fn history<A: Address>(
    rib: &Rib<A>,
    probes: &[A],
    changes: &[(Change<A>, u64)],
) -> Vec<Vec<(u64, u64)>> {
    let mut rib = rib.clone();
    let mut h: Vec<Vec<(u64, u64)>> = probes
        .iter()
        .map(|&k| {
            vec![(
                0,
                rib.lookup(k)
                    .map_or(DEFAULT_NH, |nh| value(nh.get(), false)),
            )]
        })
        .collect();
    // The trace's values are tracked apart from the Rib's ids: a prefix's value is the
    // last one announced for it (base routes keep theirs until the trace touches them).
    let mut values: std::collections::HashMap<Prefix<A>, u64> = rib
        .iter()
        .map(|(p, nh)| (p, value(nh.get(), false)))
        .collect();
    for (g, &(c, v)) in changes.iter().enumerate() {
        let g = g as u64 + 1;
        let p = c.prefix();
        match c {
            Change::Announce(..) => {
                rib.insert(p, lpmkit::NextHop::new(1).unwrap());
                values.insert(p, v);
            }
            Change::Withdraw(_) => {
                rib.remove(&p);
                values.remove(&p);
            }
        }
        let from = probes.partition_point(|&a| a < p.first());
        let to = probes.partition_point(|&a| a <= p.last());
        for i in from..to {
            let now = rib
                .lookup_prefix(probes[i])
                .map_or(DEFAULT_NH, |(q, _)| values[&q]);
            if h[i].last().unwrap().1 != now {
                h[i].push((g, now));
            }
        }
    }
    h
}

/// True if `answer` is probe `i`'s at a generation of `first..=last`.
fn allowed(h: &[(u64, u64)], first: u64, last: u64, answer: u64) -> bool {
    let at_first = h.partition_point(|&(g, _)| g <= first) - 1;
    h[at_first..]
        .iter()
        .take_while(|&&(g, _)| g <= last)
        .any(|&(_, v)| v == answer)
}

fn replay<A: Fib>(table: &str, trace: &str, changes_max: usize, scheme: Option<&str>) {
    let (Some(base), Some(trace)) = (common::rib::<A>(table), common::data(trace)) else {
        return;
    };
    let mut hops = NextHopTable::new();
    let changes: Vec<(Change<A>, u64)> = read_updates::<A>(&trace, &mut hops)
        .unwrap()
        .into_iter()
        .take(changes_max)
        .map(|u| {
            let v = match u.change {
                Change::Announce(_, nh) => value(nh.get(), true),
                Change::Withdraw(_) => 0,
            };
            (u.change, v)
        })
        .collect();
    let mut probes: Vec<A> = lpmkit::traffic::uniform(20_000, 7);
    for (c, _) in &changes {
        let p = c.prefix();
        probes.extend([
            p.first(),
            p.last(),
            A::from_u128((p.first().to_u128() + p.last().to_u128()) / 2),
        ]);
    }
    probes.sort_unstable();
    probes.dedup();
    let hist = history(&base, &probes, &changes);

    let name = format!("conc-{}-{}", A::FAMILY, scheme.unwrap_or("auto"));
    let fib = A::create(&name, conf(DEFAULT_NH, 1 << 21, 3), scheme, 1);
    assert_ne!(fib, 0);
    for (p, nh) in base.iter() {
        assert_eq!(A::add(fib, p, value(nh.get(), false)), 0);
    }
    let name = A::scheme(fib); // built here, before the replay
    let rebuilt = scheme.is_some_and(|s| s == "dir24-8" || s.starts_with("spider"));
    eprintln!(
        "{} {}: {} probes, {} changes, scheme {name}",
        A::FAMILY,
        trace.display(),
        probes.len(),
        changes.len()
    );
    if let Some(s) = scheme {
        assert_eq!(name, s);
    }

    let started = AtomicU64::new(0);
    let visible = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let (calls, spans) = std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let mut out = vec![0u64; 256];
            let (mut calls, mut spans) = (0u64, 0u64);
            let mut at = 0;
            while !done.load(Ordering::Acquire) || calls == 0 {
                let keys = &probes[at..(at + 256).min(probes.len())];
                let first = visible.load(Ordering::Acquire);
                assert_eq!(A::lookup(fib, keys, &mut out[..keys.len()]), 0);
                let last = started.load(Ordering::Acquire);
                for (j, &a) in out[..keys.len()].iter().enumerate() {
                    let i = at + j;
                    assert!(
                        allowed(&hist[i], first, last, a),
                        "{} {name}: key {} answered {a}, not its answer at any generation of \
                         {first}..={last}: {:?}",
                        A::FAMILY,
                        lpmkit::prefix::format_addr(probes[i]),
                        hist[i]
                    );
                }
                calls += 1;
                spans += last - first;
                at = if at + 256 >= probes.len() {
                    0
                } else {
                    at + 256
                };
            }
            (calls, spans)
        });
        for (g, &(c, v)) in changes.iter().enumerate() {
            let g = g as u64 + 1;
            started.store(g, Ordering::Release);
            let rc = match c {
                Change::Announce(p, _) => A::add(fib, p, v),
                Change::Withdraw(p) => A::delete(fib, p),
            };
            assert!(rc == 0 || rc == -libc::ENOENT, "change {g}: {rc}");
            if !rebuilt {
                visible.store(g, Ordering::Release);
            } else if g.is_multiple_of(512) || g as usize == changes.len() {
                assert_eq!(A::sync(fib), 0);
                visible.store(g, Ordering::Release);
            }
        }
        done.store(true, Ordering::Release);
        reader.join().unwrap()
    });
    eprintln!(
        "  {calls} lookup calls checked, {:.1} generations spanned per call",
        spans as f64 / calls as f64
    );
    assert!(calls > 10, "the reader ran {calls} calls only");
    if scheme.is_none() {
        // The first change moved the table to a scheme updated in place.
        let now = A::scheme(fib);
        eprintln!("  auto: {name} while only looked up, {now} once changed");
        assert_ne!(now, name);
    }
    A::free(fib);
}

const V4_TABLE: &str = "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz";
const V4_TRACE: &str = "updates/ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz";
const V6_TABLE: &str = "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz";
const V6_TRACE: &str = "updates/ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz";

#[test]
fn ipv4_updates_in_place_under_lookups() {
    replay::<u32>(V4_TABLE, V4_TRACE, 30_000, None);
}

#[test]
fn ipv6_updates_in_place_under_lookups() {
    replay::<u128>(V6_TABLE, V6_TRACE, 30_000, None);
}

#[test]
fn ipv4_rebuilds_under_lookups() {
    replay::<u32>(V4_TABLE, V4_TRACE, 6_000, Some("dir24-8"));
}

#[test]
fn ipv6_rebuilds_under_lookups() {
    replay::<u128>(V6_TABLE, V6_TRACE, 6_000, Some("spider16w"));
}

//! Dumps that race changes: a flood of 200,000 `ip route replace/del` while syncs dump
//! the table — the first dump, the re-dump after lost notifications (a tiny buffer, and
//! a sync not read for 1.2 s), reconciliations. Once the flood is over, each equals a
//! fresh dump prefix by prefix (every route: no ghost behind a best route, none missing)
//! and the kernel's own answers.

use std::time::{Duration, Instant};

use lpmkit::netlink::{KernelSync, RouteQuery, SyncOptions};
use lpmkit::rng::SplitMix64;
use lpmkit::{traffic, Ipv4};

use super::check;
use super::ns::netns;

/// The flood: `n` changes over 30,000 /24s, most replacing the route (a gateway, or a
/// blackhole), some deleting it (a delete of an absent route fails, `-force` goes on).
fn flood(n: usize, seed: u64) -> String {
    let mut rng = SplitMix64::new(seed);
    let mut s = String::with_capacity(n * 48);
    for _ in 0..n {
        let p = rng.below(30_000);
        let prefix = format!("{}.{}.{}.0/24", 10 + (p >> 16), (p >> 8) & 255, p & 255);
        let line = match rng.below(10) {
            0..=5 => format!(
                "route replace {prefix} via 192.0.2.{} dev v0 onlink\n",
                rng.below(250) + 1
            ),
            6..=8 => format!("route del {prefix}\n"),
            _ => format!("route replace blackhole {prefix}\n"),
        };
        s.push_str(&line);
    }
    s
}

/// Reads `sync` until nothing came for 300 ms.
fn settle(sync: &mut KernelSync<Ipv4>) {
    while !sync
        .poll(Some(Duration::from_millis(300)))
        .unwrap()
        .is_empty()
    {}
}

#[test]
fn dumps_that_race_a_flood_converge() {
    let Some(ns) = netns("race") else { return };
    let t0 = Instant::now();
    // (Its deletes of absent routes fail.)
    ns.batch(&flood(40_000, 1));
    let opts = SyncOptions {
        netns: Some(ns.0.clone()),
        ..Default::default()
    };
    // A sync that loses notifications all along, and one left unread for a second.
    let mut lossy = KernelSync::<Ipv4>::open(&SyncOptions {
        recv_buffer: 64 << 10,
        ..opts.clone()
    })
    .unwrap();
    let mut unread = KernelSync::<Ipv4>::open(&opts).unwrap();
    let mut reconciled = KernelSync::<Ipv4>::open(&opts).unwrap();

    let lines = flood(200_000, 2);
    let flooding = std::thread::scope(|s| {
        let started = Instant::now();
        let writer = s.spawn(|| ns.batch(&lines));
        std::thread::sleep(Duration::from_millis(300));
        // The first dump races the flood.
        let mut first = KernelSync::<Ipv4>::open(&opts).unwrap();
        let mut reconciliations = 0;
        let mut last = Instant::now();
        let mut unread_read = false;
        while !writer.is_finished() {
            lossy.poll(Some(Duration::from_millis(20))).unwrap();
            first.poll(Some(Duration::ZERO)).unwrap();
            reconciled.poll(Some(Duration::ZERO)).unwrap();
            if last.elapsed() > Duration::from_millis(400) {
                reconciled.reconcile().unwrap();
                reconciliations += 1;
                last = Instant::now();
            }
            if started.elapsed() > Duration::from_millis(1200) && !unread_read {
                // Read at last: its buffer overflowed, and its re-dump races the flood.
                unread.poll(Some(Duration::ZERO)).unwrap();
                unread_read = true;
            }
        }
        writer.join().unwrap();
        (first, reconciliations)
    });
    let (mut first, reconciliations) = flooding;
    let flood_s = t0.elapsed().as_secs_f64();

    let fresh = KernelSync::<Ipv4>::open(&opts).unwrap();
    let mut query = RouteQuery::open(Some(&ns.0)).unwrap();
    for (what, sync) in [
        ("first dump during the flood", &mut first),
        ("re-dumps of a tiny buffer", &mut lossy),
        ("re-dump of a sync left unread", &mut unread),
        ("reconciliations during the flood", &mut reconciled),
    ] {
        settle(sync);
        let d = sync.routes().differences(fresh.routes());
        assert!(d.is_empty(), "{what}: {d}: {:?}", d.examples);
        let d = sync.compare_with_dump().unwrap().differences;
        let d = d.expect("no notification lost once quiet");
        assert!(d.is_empty(), "{what}: {d}: {:?}", d.examples);
        let keys = traffic::in_routes(sync.rib(), 20_000, 7);
        check(what, sync, &mut [], &mut query, &keys);
        eprintln!(
            "{what}: {} prefixes equal a fresh dump's ({} re-dumps, {} reconciliations found {} differences)",
            sync.rib().len(),
            sync.stats().resyncs,
            sync.stats().reconciliations,
            sync.stats().reconcile_differences
        );
    }
    assert!(lossy.stats().resyncs >= 1, "{:?}", lossy.stats());
    assert!(unread.stats().resyncs >= 1, "{:?}", unread.stats());
    assert!(reconciliations >= 1);
    assert_eq!(
        reconciled.stats().reconcile_differences,
        0,
        "following during the flood was exact"
    );
    eprintln!(
        "races: flood of 200,000 changes over {flood_s:.1} s; {:.1} s in all",
        t0.elapsed().as_secs_f64()
    );
}

//! The real tables followed: rrc06 IPv4 and LINX IPv6 loaded into a namespace, slices of
//! their update traces replayed, every scheme checked after each burst; a sync with a tiny
//! buffer loses notifications and re-dumps.

use std::time::{Duration, Instant};

use lpmkit::netlink::{KernelSync, RouteQuery, RouteTarget, SyncOptions};
use lpmkit::{traffic, Address, AnyTable, Change, NextHop, Table};

use super::common;
use super::ns::netns;
use super::{check, followers};

/// The `ip` command for route `i` of the table: most go via their gateway, some are
/// multipath, blackhole, unreachable or prohibit, some get a second, worse route.
fn route_line(prefix: &str, gw: &str, gw2: &str, i: usize) -> String {
    let mut s = match i % 97 {
        1 => format!("route add blackhole {prefix}\n"),
        2 => format!("route add unreachable {prefix}\n"),
        3 => format!("route add prohibit {prefix}\n"),
        4 if gw != gw2 => format!(
            "route add {prefix} nexthop via {gw} dev v0 onlink nexthop via {gw2} dev v0 onlink\n"
        ),
        _ => format!("route add {prefix} via {gw} dev v0 onlink\n"),
    };
    if i % 211 == 5 {
        s.push_str(&format!(
            "route add {prefix} via {gw2} dev v0 onlink metric 5000\n"
        ));
    }
    s
}

fn follow_table<A: Address>(tag: &str, table: &str, trace: &str) {
    let (Some(table_path), Some(trace_path)) = (common::data_file(table), common::data_file(trace))
    else {
        return;
    };
    let Some(ns) = netns(tag) else { return };
    let t0 = Instant::now();
    let mut t: Table<A> = match common::load(&table_path) {
        AnyTable::V4(t) => *(Box::new(t) as Box<dyn std::any::Any>).downcast().unwrap(),
        AnyTable::V6(t) => *(Box::new(t) as Box<dyn std::any::Any>).downcast().unwrap(),
    };
    let hop = |nh: NextHop, hops: &lpmkit::NextHopTable<String>| hops.value(nh).unwrap().clone();
    let mut lines = String::new();
    let names: Vec<String> = t.next_hops.iter().map(|(_, v)| v.clone()).collect();
    for (i, (p, nh)) in t.rib.iter().enumerate() {
        let gw = hop(nh, &t.next_hops);
        let gw2 = &names[(i / 7) % names.len()];
        lines.push_str(&route_line(&p.to_string(), &gw, gw2, i));
    }
    if A::FAMILY == lpmkit::Family::V4 {
        // A TOS route: lpmkit cannot represent it, and must say so.
        lines.push_str(&format!(
            "route add 198.18.0.0/24 tos 0x10 via {} dev v0 onlink\n",
            names[0]
        ));
    }
    let failed = ns.batch(&lines);
    assert_eq!(failed, 0, "loading the table into the kernel");
    eprintln!(
        "{tag}: {} routes loaded into namespace {} in {:.1} s",
        t.rib.len(),
        ns.0,
        t0.elapsed().as_secs_f64()
    );

    // The sync, and a second one with a tiny buffer that will overflow (ENOBUFS).
    let opts = SyncOptions {
        netns: Some(ns.0.clone()),
        ..Default::default()
    };
    let t1 = Instant::now();
    let mut sync = KernelSync::<A>::open(&opts).expect("open the sync");
    eprintln!(
        "{tag}: dumped {} prefixes ({} routes) in {:.0} ms",
        sync.rib().len(),
        sync.routes().route_count(),
        t1.elapsed().as_secs_f64() * 1e3
    );
    assert!(
        sync.rib().len() >= t.rib.len(),
        "every loaded prefix is followed"
    );
    if A::FAMILY == lpmkit::Family::V4 {
        let unrep = sync.unrepresentable();
        assert_eq!(unrep.len(), 1, "the TOS route is counted: {unrep:?}");
    }
    let mut lossy = KernelSync::<A>::open(&SyncOptions {
        recv_buffer: 4096,
        ..opts.clone()
    })
    .expect("open the lossy sync");
    let mut followers = followers(sync.rib());
    let mut query = RouteQuery::open(Some(&ns.0)).unwrap();

    let updates = lpmkit::io::read_updates::<A>(&trace_path, &mut t.next_hops).expect("trace");
    let pattern = match A::FAMILY {
        lpmkit::Family::V4 => traffic::Pattern::Rnd,
        lpmkit::Family::V6 => traffic::Pattern::V6Match,
    };
    let random = traffic::keys::<A>(&pattern, sync.rib(), 40_000, 11).unwrap();
    let bursts = 5;
    let per_burst = 500;
    for b in 0..bursts {
        let slice = &updates[b * 7919 % (updates.len() - per_burst)..][..per_burst];
        let mut lines = String::new();
        for u in slice {
            match u.change {
                Change::Announce(p, nh) => lines.push_str(&format!(
                    "route replace {p} via {} dev v0 onlink\n",
                    hop(nh, &t.next_hops)
                )),
                Change::Withdraw(p) => lines.push_str(&format!("route del {p}\n")),
            }
        }
        ns.batch(&lines);
        let received = sync.poll(Some(Duration::from_millis(100))).unwrap();
        let changes: Vec<_> = received.iter().map(|r| r.change).collect();
        for f in &mut followers {
            f.apply(&changes).unwrap();
            f.flush().unwrap();
        }
        // 10,000 addresses: half in the prefixes the burst touched (first, last, middle),
        // half random over the table.
        let mut keys: Vec<A> = Vec::with_capacity(10_000);
        for u in slice.iter().cycle() {
            let p = u.change.prefix();
            keys.extend([p.first(), p.last()]);
            if keys.len() >= 5_000 {
                break;
            }
        }
        keys.extend(random[b * 5_000..][..10_000 - keys.len()].iter().copied());
        check(
            &format!("{tag} burst {b} ({} changes)", changes.len()),
            &sync,
            &mut followers,
            &mut query,
            &keys,
        );
    }
    // The lossy sync lost notifications, re-dumped, and follows the same routes.
    let _ = lossy.poll(Some(Duration::ZERO)).unwrap();
    assert!(
        lossy.stats().resyncs >= 1,
        "the 4 KiB buffer overflowed: {:?}",
        lossy.stats()
    );
    let targets = |s: &KernelSync<A>| -> Vec<(String, RouteTarget)> {
        s.rib()
            .iter()
            .map(|(p, nh)| (p.to_string(), s.target(nh).unwrap().clone()))
            .collect()
    };
    assert!(
        targets(&lossy) == targets(&sync),
        "the re-dumped table equals the followed one"
    );
    eprintln!(
        "{tag}: lossy sync re-dumped {} time(s) and equals the followed table; {:.1} s in all",
        lossy.stats().resyncs,
        t0.elapsed().as_secs_f64()
    );
}

#[test]
fn follows_rrc06_ipv4() {
    follow_table::<lpmkit::Ipv4>(
        "v4",
        "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "updates/ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    );
}

#[test]
fn follows_linx_ipv6() {
    follow_table::<lpmkit::Ipv6>(
        "v6",
        "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "updates/ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    );
}

//! What the kernel changes without route notifications, scripted on synthetic tables.

use std::time::Instant;

use lpmkit::{Address, Table};

use super::harness::Follow;
use super::ns::netns;

/// The gateway of synthetic next hop `nh`: three interfaces, addresses per family.
fn via(family: lpmkit::Family, nh: u32) -> String {
    let dev = ["v0", "v2", "v4"][nh as usize % 3];
    match family {
        lpmkit::Family::V4 => format!("via 192.0.2.{} dev {dev} onlink", nh % 250 + 1),
        lpmkit::Family::V6 => format!("via fe80::{:x} dev {dev}", nh + 1),
    }
}

/// `ip` lines loading `table`: mostly gateway routes over v0, v2 and v4; some multipath
/// across two interfaces, blackhole and unreachable; some with a second, worse route.
fn scenario_lines<A: Address>(table: &Table<A>) -> String {
    let f = A::FAMILY;
    let mut s = String::new();
    for (i, (p, nh)) in table.rib.iter().enumerate() {
        let nh = nh.get();
        let line = match i % 53 {
            1 => format!("route add blackhole {p}\n"),
            2 => format!("route add unreachable {p}\n"),
            3 => format!(
                "route add {p} nexthop {} nexthop {}\n",
                via(f, nh),
                via(f, nh + 1)
            ),
            _ => format!("route add {p} {}\n", via(f, nh)),
        };
        s.push_str(&line);
        if i % 101 == 7 {
            s.push_str(&format!(
                "route append {p} {} metric 4000\n",
                via(f, nh + 2)
            ));
        }
    }
    s
}

/// 2,000 random edits of the followed routes (add, delete, replace), as `ip` lines.
fn random_edits<A: Address>(table: &Table<A>, seed: u64) -> String {
    let f = A::FAMILY;
    let prefixes: Vec<_> = table.rib.iter().map(|(p, _)| p).collect();
    let mut rng = lpmkit::rng::SplitMix64::new(seed);
    let mut s = String::new();
    for _ in 0..2_000 {
        let p = prefixes[rng.below(prefixes.len() as u64) as usize];
        let nh = rng.below(200) as u32 + 1;
        let line = match rng.below(6) {
            0 => format!("route del {p}\n"),
            1 => format!(
                "route add {p} {} metric {}\n",
                via(f, nh),
                rng.below(3) * 10
            ),
            2 => format!("route replace blackhole {p}\n"),
            3 => format!(
                "route replace {p} nexthop {} nexthop {}\n",
                via(f, nh),
                via(f, nh + 1)
            ),
            _ => format!("route replace {p} {}\n", via(f, nh)),
        };
        s.push_str(&line);
    }
    s
}

fn synthetic<A: Address>(routes: usize, seed: u64) -> Table<A> {
    let mut cfg = match A::FAMILY {
        lpmkit::Family::V4 => lpmkit::synth::SynthConfig::ipv4_default(),
        lpmkit::Family::V6 => lpmkit::synth::SynthConfig::ipv6_default(),
    };
    cfg.routes = routes;
    cfg.seed = seed;
    lpmkit::synth::generate(&cfg)
}

/// The scenario of the kernel's own changes, on both families and a second table:
/// bulk load, random edits, interface deleted, down and up, carrier lost, nexthop
/// objects (single, groups, blackhole) created and deleted, IPv6 routes of one prefix on
/// two interfaces, multipath, another table id, flush. After each phase, once quiet,
/// every scheme equals the kernel on 10,000 addresses per family, the followed routes
/// equal a fresh dump's, and reconciliation finds nothing to repair.
#[test]
fn kernel_changes_without_route_notifications() {
    let Some(ns) = netns("scn") else { return };
    let t0 = Instant::now();
    ns.veths_and_ipv6_forwarding(&[("v2", "v3"), ("v4", "v5")]);
    let t4: Table<lpmkit::Ipv4> = synthetic(20_000, 3);
    let t6: Table<lpmkit::Ipv6> = synthetic(6_000, 3);
    let mut v4 = Follow::<lpmkit::Ipv4>::open("ipv4", &ns, 254);
    let mut v6 = Follow::<lpmkit::Ipv6>::open("ipv6", &ns, 254);
    let mut t100 = Follow::<lpmkit::Ipv4>::open("ipv4 table 100", &ns, 100);
    t100.space = Some("198.18.0.0/15".parse().unwrap());
    let mut seed = 100;
    let mut verify_all = |phase: &str,
                          v4: &mut Follow<lpmkit::Ipv4>,
                          v6: &mut Follow<lpmkit::Ipv6>,
                          t100: &mut Follow<lpmkit::Ipv4>| {
        seed += 10;
        v4.verify(phase, seed);
        v6.verify(phase, seed);
        t100.verify(phase, seed);
    };
    // Every command of a scripted phase must succeed.
    let batch = |lines: &str| assert_eq!(ns.batch(lines), 0, "{lines}");

    // 1. Bulk load.
    let mut lines = scenario_lines(&t4);
    lines.push_str(&scenario_lines(&t6));
    assert_eq!(ns.batch(&lines), 0, "loading the tables");
    verify_all("bulk load", &mut v4, &mut v6, &mut t100);

    // 2. 2,000 random edits per family (some refused by the kernel: deletes of absent
    // routes, adds of present ones).
    let mut lines = random_edits(&t4, 1);
    lines.push_str(&random_edits(&t6, 2));
    ns.batch(&lines);
    verify_all("2,000 random edits", &mut v4, &mut v6, &mut t100);

    // 3. Multipath across interfaces and IPv6 routes of one prefix on two interfaces; a
    // scope-host route out of an interface without an address (the kernel's own lookup
    // refuses it, EINVAL, where a forwarded packet takes it: not comparable).
    batch(
        "route add 198.51.100.0/24 nexthop via 192.0.2.1 dev v0 onlink nexthop via 192.0.2.4 dev v4 onlink\n\
         route add 2001:db8:5::/48 nexthop via fe80::1 dev v0 nexthop via fe80::4 dev v4\n\
         route add 2001:db8:77::/48 dev v2\n\
         route append 2001:db8:77::/48 dev v4\n\
         route add 2001:db8:78::/48 dev v4\n\
         route append 2001:db8:78::/48 dev v2\n\
         route add unreachable 203.0.113.0/24\n\
         route add 6.0.0.0/12 dev v1 scope host\n\
         route add blackhole 2001:db8:66::/48\n",
    );
    verify_all(
        "multipath, same prefix on two interfaces",
        &mut v4,
        &mut v6,
        &mut t100,
    );

    // 4. Nexthop objects: single, groups (weighted), blackhole; routes of both families
    // through them.
    batch(
        "nexthop add id 10 via 192.0.2.10 dev v0 onlink\n\
         nexthop add id 12 via 192.0.2.12 dev v2 onlink\n\
         nexthop add id 14 via 192.0.2.14 dev v4 onlink\n\
         nexthop add id 20 group 10/12\n\
         nexthop add id 22 group 10,3/14\n\
         nexthop add id 30 blackhole\n\
         nexthop add id 16 via fe80::16 dev v0\n\
         nexthop add id 17 via fe80::17 dev v4\n\
         nexthop add id 26 group 16/17\n\
         route add 100.64.10.0/24 nhid 10\n\
         route add 100.64.20.0/24 nhid 20\n\
         route add 100.64.22.0/24 nhid 22\n\
         route add 100.64.30.0/24 nhid 30\n\
         route add 100.64.21.0/24 nhid 12\n\
         route add 2001:db8:16::/48 nhid 16\n\
         route add 2001:db8:26::/48 nhid 26\n\
         route add 2001:db8:17::/48 nhid 17\n",
    );
    verify_all("nexthop objects", &mut v4, &mut v6, &mut t100);
    // Deleting a member: its route goes (no route notification for IPv4), its groups
    // shrink.
    batch("nexthop del id 10\n");
    verify_all("nexthop object deleted", &mut v4, &mut v6, &mut t100);
    // Replacing one: the routes through it and its groups follow.
    batch("nexthop replace id 12 via 192.0.2.99 dev v2 onlink\n");
    verify_all("nexthop object replaced", &mut v4, &mut v6, &mut t100);

    // 5. Another table id, looked up first by a rule for its own space (which it
    // covers with routes that forward: the kernel's answer for a route that drops does
    // not name its table).
    batch(
        "rule add pref 100 to 198.18.0.0/15 lookup 100\n\
         route add 198.18.0.0/15 via 192.0.2.6 dev v0 onlink table 100\n\
         route add 198.18.0.0/16 via 192.0.2.7 dev v0 onlink table 100\n\
         route add 198.19.0.0/16 table 100 nexthop via 192.0.2.7 dev v0 onlink nexthop via 192.0.2.8 dev v4 onlink\n\
         route add 198.18.128.0/17 nhid 14 table 100\n\
         route add 198.19.128.0/17 via 192.0.2.9 dev v2 onlink table 100\n",
    );
    verify_all("another table id", &mut v4, &mut v6, &mut t100);

    // 6. Carrier lost on v4 (its peer v5 down): routes stay, its nexthop objects go
    // (with groups 22 and the IPv6 group 26's member 17).
    ns.ip(&["link", "set", "v5", "down"]).unwrap();
    verify_all("carrier lost on v4", &mut v4, &mut v6, &mut t100);
    ns.ip(&["link", "set", "v5", "up"]).unwrap();
    verify_all("carrier back on v4", &mut v4, &mut v6, &mut t100);

    // 7. Link down and up: routes through v4 go without notification (IPv4), multipath
    // routes keep a dead path, which comes back with the link.
    ns.ip(&["link", "set", "v4", "down"]).unwrap();
    verify_all("v4 down", &mut v4, &mut v6, &mut t100);
    ns.ip(&["link", "set", "v4", "up"]).unwrap();
    verify_all("v4 up", &mut v4, &mut v6, &mut t100);

    // 8. Interface deleted: its routes go, IPv4 multipath routes through it entirely,
    // IPv6 ones lose the path.
    ns.ip(&["link", "del", "v2"]).unwrap();
    verify_all("v2 deleted", &mut v4, &mut v6, &mut t100);

    // 9. Flush: the nexthop objects (their routes go with them), then the tables.
    batch("nexthop flush\n");
    verify_all("nexthop objects flushed", &mut v4, &mut v6, &mut t100);
    batch("route flush table main\nroute flush table 100\n");
    ns.ip(&["-6", "route", "flush", "table", "main"]).unwrap();
    verify_all("flush", &mut v4, &mut v6, &mut t100);

    let total = v4.reconciled + v6.reconciled + t100.reconciled;
    let links: u64 = [v4.sync.stats(), t100.sync.stats()]
        .iter()
        .chain([v6.sync.stats()].iter())
        .map(|s| s.link_events)
        .sum();
    eprintln!(
        "scenario: 16 phases in {:.1} s; reconciliation found {total} differences over {} reconciliations; {links} link events followed",
        t0.elapsed().as_secs_f64(),
        v4.sync.stats().reconciliations
            + v6.sync.stats().reconciliations
            + t100.sync.stats().reconciliations
    );
    assert_eq!(total, 0);
}

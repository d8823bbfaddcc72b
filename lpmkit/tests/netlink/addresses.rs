//! Addresses removed and flushed: the kernel removes IPv4 routes without a route
//! notification when an interface loses its last address (every route through it, scope
//! `host` ones too; multipath routes keep their other paths, marked dead) and when an
//! address used as a route's `src` stops being the host's (table `main` only). IPv6
//! routes stay. After each step every scheme equals the kernel, the followed routes equal
//! a fresh dump's and reconciliation repairs nothing.

use lpmkit::{Ipv4, Ipv6};

use super::harness::Follow;
use super::ns::netns;

#[test]
fn addresses_removed_and_flushed() {
    let Some(ns) = netns("addr") else { return };
    ns.veths_and_ipv6_forwarding(&[("v2", "v3")]);
    let batch = |lines: &str| assert_eq!(ns.batch(lines), 0, "{lines}");
    batch(
        "addr add 192.0.2.10/24 dev v0\n\
         addr add 198.51.100.10/24 dev v0\n\
         addr add 203.0.113.10/24 dev v2\n\
         addr add 2001:db8:1::10/64 dev v0 nodad\n",
    );
    let mut v4 = Follow::<Ipv4>::open("ipv4", &ns, 254);
    let mut v6 = Follow::<Ipv6>::open("ipv6", &ns, 254);
    let mut t100 = Follow::<Ipv4>::open("ipv4 table 100", &ns, 100);
    t100.space = Some("198.18.0.0/15".parse().unwrap());
    let mut seed = 500;
    let mut verify =
        |phase: &str, v4: &mut Follow<Ipv4>, v6: &mut Follow<Ipv6>, t100: &mut Follow<Ipv4>| {
            seed += 10;
            v4.verify(phase, seed);
            v6.verify(phase, seed);
            t100.verify(phase, seed);
        };

    // 222 routes through v0's gateway (the connected route of its first address), a
    // multipath route over v0 and v2, a scope-host route out of v0, routes naming v0's
    // addresses as their source, one of them with a worse fallback; table 100 through v0,
    // and with a source; IPv6 routes through v0.
    let mut lines = String::new();
    for x in (1..=223).filter(|x| ![10, 100, 127, 192, 198, 203].contains(x)) {
        lines.push_str(&format!("route add {x}.0.0.0/8 via 192.0.2.1 dev v0\n"));
    }
    lines.push_str(
        "route add 100.64.0.0/16 nexthop via 192.0.2.1 dev v0 nexthop via 203.0.113.1 dev v2\n\
         route add 100.65.0.0/16 dev v0 scope host\n\
         route add 100.66.0.0/16 via 203.0.113.1 dev v2 src 198.51.100.10\n\
         route add 100.67.0.0/16 via 203.0.113.1 dev v2 src 192.0.2.10\n\
         route add 100.68.0.0/16 via 203.0.113.1 dev v2 src 198.51.100.10 metric 10\n\
         route add 100.68.0.0/16 via 203.0.113.2 dev v2 metric 20\n\
         rule add pref 100 to 198.18.0.0/15 lookup 100\n\
         route add 198.18.0.0/15 via 203.0.113.1 dev v2 table 100\n\
         route add 198.18.0.0/16 via 192.0.2.1 dev v0 table 100\n\
         route add 198.19.0.0/16 via 203.0.113.1 dev v2 src 198.51.100.10 table 100\n\
         route add 2001:db8:a::/48 via 2001:db8:1::1 dev v0\n\
         route add 2001:db8:b::/48 dev v0\n\
         route add 2001:db8:c::/48 via fe80::1 dev v0 src 2001:db8:1::10\n",
    );
    batch(&lines);
    verify("routes through the addresses", &mut v4, &mut v6, &mut t100);
    let routes = v4.sync.routes().route_count();

    // The address used as a source goes (v0 keeps another): the routes naming it go in
    // table main (with the kernel's connected route of its subnet), the fallback of
    // 100.68/16 takes over; table 100 keeps its route.
    ns.ip(&["addr", "del", "198.51.100.10/24", "dev", "v0"])
        .unwrap();
    verify("source address removed", &mut v4, &mut v6, &mut t100);
    assert_eq!(v4.sync.routes().route_count(), routes - 3);

    // v0's last IPv4 address goes: every route through v0 goes, scope host included;
    // the multipath route keeps its path through v2.
    ns.ip(&["addr", "del", "192.0.2.10/24", "dev", "v0"])
        .unwrap();
    verify("last address removed", &mut v4, &mut v6, &mut t100);
    assert!(
        v4.sync.routes().route_count() < 20,
        "the 222 routes are gone"
    );
    assert!(v4.sync.stats().address_events >= 2, "{:?}", v4.sync.stats());

    // An address comes back: the multipath route's dead path lives again.
    ns.ip(&["addr", "add", "192.0.2.10/24", "dev", "v0"])
        .unwrap();
    verify("address back", &mut v4, &mut v6, &mut t100);

    // Routes again, a secondary address as a source, then every address flushed (IPv4
    // and IPv6 alike; IPv6 routes stay).
    let mut lines = String::new();
    for x in 1..=50 {
        lines.push_str(&format!("route add {x}.0.0.0/8 via 192.0.2.1 dev v0\n"));
    }
    lines.push_str(
        "addr add 192.0.2.11/24 dev v0\n\
         route add 100.69.0.0/16 via 203.0.113.1 dev v2 src 192.0.2.11\n\
         route add 198.18.0.0/16 via 192.0.2.1 dev v0 table 100\n",
    );
    batch(&lines);
    verify(
        "routes again, a secondary address",
        &mut v4,
        &mut v6,
        &mut t100,
    );
    ns.ip(&["addr", "flush", "dev", "v0"]).unwrap();
    verify("addresses flushed", &mut v4, &mut v6, &mut t100);
    assert!(v6.sync.rib().len() >= 3, "IPv6 routes stay");

    let total = v4.reconciled + v6.reconciled + t100.reconciled;
    assert_eq!(total, 0);
}

use super::super::route::Path;
use super::*;
use crate::prefix::{Ipv4, Ipv6};
use std::net::IpAddr;

fn via(g: &str) -> RouteTarget {
    RouteTarget::via(g.parse::<IpAddr>().unwrap(), 2)
}

fn route<A: Address>(p: &str, metric: u32, t: RouteTarget) -> KernelRoute<A> {
    let siblings = A::FAMILY == Family::V6
        && matches!(&t, RouteTarget::Unicast(ps) if ps.iter().all(|p| p.gateway.is_some()));
    KernelRoute {
        prefix: p.parse().unwrap(),
        metric,
        tos: 0,
        src_len: 0,
        target: Ok(t),
        oif: 0,
        host_scope: false,
        siblings,
        src: None,
    }
}

const ADD: RouteOp = RouteOp::New {
    replace: false,
    append: false,
};

#[test]
fn lowest_metric_wins_and_the_next_comes_back() {
    let mut k = KernelRoutes::<Ipv4>::new();
    let a = route("10.0.0.0/8", 100, via("192.0.2.1"));
    let b = route("10.0.0.0/8", 50, via("192.0.2.2"));
    let ca = k.apply(ADD, &a).unwrap();
    assert!(matches!(ca, Change::Announce(_, nh) if k.target(nh) == Some(&via("192.0.2.1"))));
    let cb = k.apply(ADD, &b).unwrap();
    assert!(matches!(cb, Change::Announce(_, nh) if k.target(nh) == Some(&via("192.0.2.2"))));
    // Adding a worse route changes nothing visible.
    assert_eq!(
        k.apply(ADD, &route("10.0.0.0/8", 200, RouteTarget::Blackhole)),
        None
    );
    let back = k.apply(RouteOp::Del, &b).unwrap();
    assert!(matches!(back, Change::Announce(_, nh) if k.target(nh) == Some(&via("192.0.2.1"))));
    assert_eq!(k.route_count(), 2);
    k.apply(RouteOp::Del, &a);
    assert_eq!(
        k.rib().lookup(0x0a00_0001).and_then(|n| k.target(n)),
        Some(&RouteTarget::Blackhole)
    );
    let gone = k.apply(
        RouteOp::Del,
        &route("10.0.0.0/8", 200, RouteTarget::Blackhole),
    );
    assert!(matches!(gone, Some(Change::Withdraw(_))));
    assert!(k.rib().is_empty());
}

#[test]
fn replace_append_and_duplicates() {
    let mut k = KernelRoutes::<Ipv4>::new();
    let a = route("10.0.0.0/8", 0, via("192.0.2.1"));
    k.apply(ADD, &a);
    // A duplicate (dump racing a notification) is a no-op.
    assert_eq!(k.apply(ADD, &a), None);
    assert_eq!(k.route_count(), 1);
    // Append goes after: invisible.
    let app = RouteOp::New {
        replace: false,
        append: true,
    };
    assert_eq!(
        k.apply(app, &route("10.0.0.0/8", 0, via("192.0.2.9"))),
        None
    );
    // Replace swaps the first of the metric.
    let rep = RouteOp::New {
        replace: true,
        append: false,
    };
    let c = k
        .apply(rep, &route("10.0.0.0/8", 0, RouteTarget::Prohibit))
        .unwrap();
    assert!(matches!(c, Change::Announce(_, nh) if k.target(nh) == Some(&RouteTarget::Prohibit)));
    assert_eq!(k.route_count(), 2);
}

#[test]
fn ipv6_multipath_paths_leave_one_at_a_time() {
    let mut k = KernelRoutes::<Ipv6>::new();
    let p = |g: &str| Path {
        gateway: Some(g.parse().unwrap()),
        ifindex: 2,
        weight: 1,
        dead: false,
    };
    let both = RouteTarget::Unicast(vec![p("fe80::1"), p("fe80::2")]);
    k.apply(ADD, &route("2001:db8::/32", 1024, both));
    let c = k
        .apply(
            RouteOp::Del,
            &route(
                "2001:db8::/32",
                1024,
                RouteTarget::Unicast(vec![p("fe80::1")]),
            ),
        )
        .unwrap();
    assert!(matches!(c, Change::Announce(_, nh)
        if k.target(nh) == Some(&RouteTarget::Unicast(vec![p("fe80::2")]))));
    let c = k
        .apply(
            RouteOp::Del,
            &route(
                "2001:db8::/32",
                1024,
                RouteTarget::Unicast(vec![p("fe80::2")]),
            ),
        )
        .unwrap();
    assert!(matches!(c, Change::Withdraw(_)));
}

#[test]
fn unrepresentable_routes_are_counted_not_dropped() {
    let mut k = KernelRoutes::<Ipv4>::new();
    let mut r = route("10.0.0.0/8", 0, via("192.0.2.1"));
    r.tos = 4;
    r.target = Err(Unrepresentable::Tos);
    assert_eq!(k.apply(ADD, &r), None);
    assert_eq!(k.unrepresentable(), vec![(Unrepresentable::Tos, 1)]);
    k.apply(RouteOp::Del, &r);
    assert!(k.unrepresentable().is_empty());
}

#[test]
fn resync_diff_keeps_ids() {
    let mut k = KernelRoutes::<Ipv4>::new();
    k.apply(ADD, &route("10.0.0.0/8", 0, via("192.0.2.1")));
    k.apply(ADD, &route("11.0.0.0/8", 0, via("192.0.2.2")));
    let mut fresh = KernelRoutes::with_next_hops(k.take_next_hops());
    fresh.apply(ADD, &route("11.0.0.0/8", 0, via("192.0.2.1")));
    fresh.apply(ADD, &route("12.0.0.0/8", 0, via("192.0.2.2")));
    let id1 = k.next_hops().id(&via("192.0.2.1")).unwrap();
    let changes = k.replace_with(fresh);
    assert_eq!(changes.len(), 3);
    assert_eq!(k.next_hops().id(&via("192.0.2.1")), Some(id1));
    assert_eq!(k.rib().len(), 2);
}

fn path(g: Option<&str>, ifindex: u32) -> Path {
    Path {
        gateway: g.map(|g| g.parse().unwrap()),
        ifindex,
        weight: 1,
        dead: false,
    }
}

fn unicast(paths: &[(Option<&str>, u32)]) -> RouteTarget {
    let mut v: Vec<Path> = paths.iter().map(|&(g, i)| path(g, i)).collect();
    v.sort();
    RouteTarget::Unicast(v)
}

/// The best route's target of the prefix holding `addr`.
fn best<A: Address>(k: &KernelRoutes<A>, addr: A) -> Option<RouteTarget> {
    k.rib().lookup(addr).and_then(|n| k.target(n)).cloned()
}

#[test]
fn ipv4_link_down_up_and_delete() {
    let mut k = KernelRoutes::<Ipv4>::new();
    // 10.2/16 via dev 3; 10.9/16 multipath over dev 2 and 3; 10.7/16 via dev 3
    // (metric 10) and dev 2 (metric 20); a blackhole; a host-scope route on dev 3.
    k.apply(
        ADD,
        &route("10.2.0.0/16", 0, unicast(&[(Some("192.0.2.2"), 3)])),
    );
    let mp = unicast(&[(Some("192.0.2.1"), 2), (Some("192.0.2.2"), 3)]);
    k.apply(ADD, &route("10.9.0.0/16", 0, mp.clone()));
    k.apply(
        ADD,
        &route("10.7.0.0/16", 10, unicast(&[(Some("192.0.2.2"), 3)])),
    );
    k.apply(
        ADD,
        &route("10.7.0.0/16", 20, unicast(&[(Some("192.0.2.1"), 2)])),
    );
    k.apply(ADD, &route("10.66.0.0/16", 0, RouteTarget::Blackhole));
    let mut host = route("10.5.0.0/16", 0, unicast(&[(None, 3)]));
    host.host_scope = true;
    k.apply(ADD, &host);
    assert_eq!(k.route_count(), 6);

    let changes = k.link_down(3);
    // 10.2 gone, 10.9 loses a path, 10.7 falls back to metric 20.
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert_eq!(best(&k, 0x0a02_0001), None);
    let dead = best(&k, 0x0a09_0001).unwrap();
    assert_eq!(
        dead.live_paths().cloned().collect::<Vec<_>>(),
        vec![path(Some("192.0.2.1"), 2)]
    );
    assert!(
        dead.same_route(&mp) && dead != mp,
        "the path is marked dead"
    );
    assert_eq!(
        best(&k, 0x0a07_0001),
        Some(unicast(&[(Some("192.0.2.1"), 2)]))
    );
    assert_eq!(best(&k, 0x0a42_0001), Some(RouteTarget::Blackhole));
    assert_eq!(best(&k, 0x0a05_0001), Some(unicast(&[(None, 3)])));
    assert_eq!(k.route_count(), 4);

    // Up: the dead path lives again; the removed routes do not come back.
    let changes = k.link_up(3);
    assert_eq!(changes.len(), 1);
    assert_eq!(best(&k, 0x0a09_0001), Some(mp.clone()));
    assert_eq!(best(&k, 0x0a02_0001), None);

    // Deleting the interface removes the whole multipath route (IPv4) and the host
    // route.
    k.link_removed(3);
    assert_eq!(best(&k, 0x0a09_0001), None);
    assert_eq!(best(&k, 0x0a05_0001), None);
    assert_eq!(k.route_count(), 2);
    // A delete notification the kernel sends afterwards is a no-op.
    assert_eq!(k.apply(RouteOp::Del, &route("10.9.0.0/16", 0, mp)), None);
}

#[test]
fn notifications_taken_again_over_a_dump_that_holds_them() {
    // The kernel's sequence: 10/8 via .1 added, then replaced by via .2.
    let add = route("10.0.0.0/8", 0, via("192.0.2.1"));
    let rep = route("10.0.0.0/8", 0, via("192.0.2.2"));
    let replace = RouteOp::New {
        replace: true,
        append: false,
    };
    let append = RouteOp::New {
        replace: false,
        append: true,
    };
    // Taken again over a dump that holds both, one, or neither: the same end.
    for dumped in [vec![&rep], vec![&add], vec![]] {
        let mut k = KernelRoutes::<Ipv4>::new();
        for r in dumped {
            k.apply(append, r);
        }
        k.apply(ADD, &add);
        k.apply(replace, &rep);
        assert_eq!(k.route_count(), 1);
        assert_eq!(best(&k, 0x0a00_0001), Some(via("192.0.2.2")));
    }
    // Two routes of one metric: one appended after the other, taken again.
    let mut k = KernelRoutes::<Ipv4>::new();
    k.apply(ADD, &add);
    k.apply(append, &rep);
    k.apply(append, &rep);
    k.apply(ADD, &add);
    assert_eq!(
        k.describe("10.0.0.0/8".parse().unwrap()),
        "metric 0: via 192.0.2.1 dev #2; metric 0: via 192.0.2.2 dev #2"
    );
}

#[test]
fn ipv4_last_address_and_source_gone() {
    let mut k = KernelRoutes::<Ipv4>::new();
    let mp = unicast(&[(Some("192.0.2.1"), 2), (Some("192.0.2.2"), 3)]);
    k.apply(ADD, &route("10.9.0.0/16", 0, mp.clone()));
    k.apply(
        ADD,
        &route("10.2.0.0/16", 0, unicast(&[(Some("192.0.2.2"), 3)])),
    );
    let mut host = route("10.5.0.0/16", 0, unicast(&[(None, 3)]));
    host.host_scope = true;
    k.apply(ADD, &host);
    // Two routes of one prefix and metric that differ by their source only.
    let src = |a: &str| Some(a.parse::<IpAddr>().unwrap());
    let mut s1 = route("10.8.0.0/16", 0, unicast(&[(Some("192.0.2.1"), 2)]));
    s1.src = src("192.0.2.10");
    let mut s2 = s1.clone();
    s2.src = src("192.0.2.11");
    k.apply(ADD, &s1);
    k.apply(ADD, &s2);
    // A message seen twice is one route; the other source is another route.
    k.apply(ADD, &s2);
    assert_eq!(k.route_count(), 5);

    // Dev 3 loses its last address: as down, but the host-scope route goes too.
    let changes = k.addresses_gone(3);
    assert_eq!(changes.len(), 3, "{changes:?}");
    assert_eq!(best(&k, 0x0a05_0001), None);
    assert_eq!(best(&k, 0x0a02_0001), None);
    assert_eq!(
        best(&k, 0x0a09_0001).unwrap().live_paths().count(),
        1,
        "the multipath route keeps its other path"
    );
    // An address comes back: the dead path lives again.
    assert_eq!(k.link_up(3).len(), 1);
    assert_eq!(best(&k, 0x0a09_0001), Some(mp));

    // 192.0.2.11 is no longer the host's: the route naming it as source goes, the
    // other stays (and is the best now).
    let before = k.describe("10.8.0.0/16".parse().unwrap());
    assert!(before.contains("src 192.0.2.11"), "{before}");
    assert_eq!(k.source_gone("192.0.2.11".parse().unwrap()), Vec::new());
    assert_eq!(k.route_count(), 2);
    let after = k.describe("10.8.0.0/16".parse().unwrap());
    assert!(
        !after.contains("192.0.2.11") && after.contains("192.0.2.10"),
        "{after}"
    );
    let gone = k.source_gone("192.0.2.10".parse().unwrap());
    assert!(matches!(gone[..], [Change::Withdraw(_)]), "{gone:?}");
}

#[test]
fn differences_count_every_route_of_a_prefix() {
    let mut a = KernelRoutes::<Ipv4>::new();
    a.apply(ADD, &route("10.0.0.0/8", 10, via("192.0.2.1")));
    a.apply(ADD, &route("10.0.0.0/8", 20, via("192.0.2.2")));
    a.apply(ADD, &route("11.0.0.0/8", 0, RouteTarget::Blackhole));
    let mut b = KernelRoutes::<Ipv4>::with_next_hops(a.take_next_hops());
    assert_eq!(
        a.differences(&a.clone()),
        Differences {
            prefixes: 2,
            ..Differences::default()
        }
    );
    b.apply(ADD, &route("10.0.0.0/8", 10, via("192.0.2.1")));
    b.apply(ADD, &route("12.0.0.0/8", 0, RouteTarget::Blackhole));
    // 10/8 lacks its second route (best unchanged), 11/8 is missing, 12/8 extra.
    let d = a.differences(&b);
    assert_eq!(d.prefixes, 3);
    assert_eq!(
        d.differ,
        ["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8"].map(|p| p.parse().unwrap())
    );
    assert_eq!(d.best_differ, 2);
    assert!(!d.is_empty());
    assert_eq!(
        d.examples[1],
        "11.0.0.0/8: «metric 0: blackhole» here, no route there"
    );
    // A dump sets a prefix's routes from nothing.
    b.clear_prefix("10.0.0.0/8".parse().unwrap());
    assert_eq!(b.route_count(), 1);
    assert_eq!(best(&b, 0x0a00_0001), None);
}

#[test]
fn ipv6_same_prefix_on_two_interfaces_and_siblings() {
    let mut k = KernelRoutes::<Ipv6>::new();
    let append = RouteOp::New {
        replace: false,
        append: true,
    };
    // Two device routes of one prefix and metric: two routes, the first used.
    k.apply(ADD, &route("2001:db8:7::/48", 1024, unicast(&[(None, 2)])));
    k.apply(
        append,
        &route("2001:db8:7::/48", 1024, unicast(&[(None, 3)])),
    );
    assert_eq!(k.route_count(), 2);
    let a: u128 = 0x2001_0db8_0007_0000_0000_0000_0000_0001;
    assert_eq!(best(&k, a), Some(unicast(&[(None, 2)])));
    // Deleting one device's route keeps the other.
    let c = k.apply(
        RouteOp::Del,
        &route("2001:db8:7::/48", 1024, unicast(&[(None, 2)])),
    );
    assert!(c.is_some());
    assert_eq!(best(&k, a), Some(unicast(&[(None, 3)])));
    // Gone with its interface, the other one too.
    k.apply(
        append,
        &route("2001:db8:7::/48", 1024, unicast(&[(None, 2)])),
    );
    k.link_removed(3);
    assert_eq!(best(&k, a), Some(unicast(&[(None, 2)])));
    assert_eq!(k.route_count(), 1);

    // Gateway routes of one metric join as one multipath route; the kernel announces
    // an added sibling with the whole group.
    let b: u128 = 0x2001_0db8_0005_0000_0000_0000_0000_0001;
    k.apply(
        ADD,
        &route("2001:db8:5::/48", 1024, unicast(&[(Some("fe80::5"), 4)])),
    );
    let both = unicast(&[(Some("fe80::5"), 4), (Some("fe80::6"), 3)]);
    k.apply(append, &route("2001:db8:5::/48", 1024, both.clone()));
    // A device route of the same metric goes after the group.
    k.apply(
        append,
        &route("2001:db8:5::/48", 1024, unicast(&[(None, 2)])),
    );
    assert_eq!(best(&k, b), Some(both.clone()));
    assert_eq!(k.route_count(), 3);
    // Interface 3 down: its sibling is dead, not gone (the kernel notifies nothing).
    k.link_down(3);
    let t = best(&k, b).unwrap();
    assert_eq!(t.live_paths().count(), 1);
    k.link_up(3);
    assert_eq!(best(&k, b), Some(both.clone()));
    // Replace: the group (first of its kind) by one path.
    let rep = RouteOp::New {
        replace: true,
        append: false,
    };
    k.apply(
        rep,
        &route("2001:db8:5::/48", 1024, unicast(&[(Some("fe80::7"), 2)])),
    );
    assert_eq!(best(&k, b), Some(unicast(&[(Some("fe80::7"), 2)])));
    assert_eq!(k.route_count(), 3);
    // Deleting the interface of a sibling removes just that path.
    k.apply(
        append,
        &route("2001:db8:5::/48", 1024, unicast(&[(Some("fe80::8"), 4)])),
    );
    assert_eq!(
        best(&k, b),
        Some(unicast(&[(Some("fe80::7"), 2), (Some("fe80::8"), 4)]))
    );
    k.link_removed(4);
    assert_eq!(best(&k, b), Some(unicast(&[(Some("fe80::7"), 2)])));
}

fn nh(id: u32, kind: Nexthop) -> NexthopObject {
    NexthopObject { id, kind }
}

#[test]
fn nexthop_objects_resolve_follow_and_go() {
    let mut k = KernelRoutes::<Ipv4>::new();
    k.nexthop_set(nh(10, Nexthop::Single(path(Some("192.0.2.1"), 2))));
    k.nexthop_set(nh(12, Nexthop::Single(path(Some("192.0.2.2"), 3))));
    k.nexthop_set(nh(14, Nexthop::Single(path(Some("192.0.2.4"), 4))));
    k.nexthop_set(nh(20, Nexthop::Group(vec![(10, 1), (12, 1)])));
    k.nexthop_set(nh(22, Nexthop::Group(vec![(10, 3), (14, 1)])));
    k.nexthop_set(nh(30, Nexthop::Blackhole));
    for (p, id) in [
        ("10.10.0.0/16", 10),
        ("10.20.0.0/16", 20),
        ("10.22.0.0/16", 22),
        ("10.30.0.0/16", 30),
        ("10.99.0.0/16", 99),
    ] {
        k.apply(ADD, &route(p, 0, RouteTarget::NexthopObject(id)));
    }
    assert_eq!(
        best(&k, 0x0a14_0001),
        Some(unicast(&[(Some("192.0.2.1"), 2), (Some("192.0.2.2"), 3)]))
    );
    let weighted = best(&k, 0x0a16_0001).unwrap();
    let RouteTarget::Unicast(ps) = &weighted else {
        panic!("{weighted:?}")
    };
    assert_eq!(ps.iter().map(|p| p.weight).collect::<Vec<_>>(), vec![3, 1]);
    assert_eq!(best(&k, 0x0a1e_0001), Some(RouteTarget::Blackhole));
    // An object nobody announced: unresolved, and says so.
    assert_eq!(best(&k, 0x0a63_0001), Some(RouteTarget::NexthopObject(99)));

    // Replacing object 12 moves the routes through group 20 with it.
    let c = k.nexthop_set(nh(12, Nexthop::Single(path(Some("192.0.2.9"), 3))));
    assert_eq!(c.len(), 1);
    // Deleting object 10: its route goes, the groups shrink.
    let c = k.nexthop_removed(10);
    assert_eq!(c.len(), 3, "{c:?}");
    assert_eq!(best(&k, 0x0a0a_0001), None);
    assert_eq!(
        best(&k, 0x0a14_0001),
        Some(unicast(&[(Some("192.0.2.9"), 3)]))
    );
    // Carrier lost on interface 4: object 14 is flushed, group 22 left empty goes,
    // and its route with it.
    let c = k.carrier_lost(4);
    assert_eq!(c.len(), 1);
    assert_eq!(best(&k, 0x0a16_0001), None);
    assert!(k.nexthop(22).is_none() && k.nexthop(14).is_none());
    // Interface 3 down: object 12 and group 20 go, and the route through them.
    k.link_down(3);
    assert_eq!(best(&k, 0x0a14_0001), None);
    // The blackhole object stays.
    assert_eq!(best(&k, 0x0a1e_0001), Some(RouteTarget::Blackhole));
    assert_eq!(k.nexthops().count(), 1);
    assert_eq!(k.route_count(), 2);
}

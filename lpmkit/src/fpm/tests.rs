use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::frame::frame;
use super::session::{FpmSession, SessionOptions};
use super::wire;
use super::FrameErrorKind;
use crate::fib::Change;
use crate::netlink::{Nexthop, Path, RouteTarget};
use crate::prefix::{Ipv4, Ipv6, Prefix};

/// What zebra 8.4 sent for a few static routes, then for six edits of them (see
/// `lpmkit/tests/fpm-captures/README.md`).
const WALK_AND_UPDATES: &[u8] =
    include_bytes!("../../tests/fpm-captures/zebra-8.4-walk-and-updates.fpm");
/// Where the table walk in it ends and the updates begin.
const WALK_LEN: usize = 1372;
/// What zebra sent when it connected again.
const RECONNECT: &[u8] = include_bytes!("../../tests/fpm-captures/zebra-8.4-reconnect.fpm");

fn path(gw: Option<&str>) -> Path {
    Path {
        gateway: gw.map(|g| g.parse::<IpAddr>().unwrap()),
        ifindex: 2,
        weight: 1,
        dead: false,
    }
}

fn via(gws: &[&str]) -> RouteTarget {
    let mut p: Vec<Path> = gws.iter().map(|g| path(Some(g))).collect();
    p.sort();
    RouteTarget::Unicast(p)
}

fn dev() -> RouteTarget {
    RouteTarget::Unicast(vec![path(None)])
}

/// The session's routes of family `A`, prefix → target, as text.
fn table<A: super::FpmFamily>(s: &FpmSession) -> BTreeMap<String, RouteTarget> {
    let r = s.routes::<A>();
    r.rib()
        .iter()
        .map(|(p, nh)| (p.to_string(), r.target(nh).unwrap().clone()))
        .collect()
}

fn expect(pairs: &[(&str, RouteTarget)]) -> BTreeMap<String, RouteTarget> {
    pairs
        .iter()
        .map(|(p, t)| (p.to_string(), t.clone()))
        .collect()
}

/// The table after the captured walk and updates.
fn final_tables() -> (BTreeMap<String, RouteTarget>, BTreeMap<String, RouteTarget>) {
    (
        expect(&[
            ("0.0.0.0/0", via(&["10.0.0.9"])),
            ("10.0.0.0/16", dev()),
            ("100.64.0.0/10", RouteTarget::Unreachable),
            ("172.16.0.0/12", via(&["10.0.0.7"])),
            ("192.0.2.0/24", via(&["10.0.0.2", "10.0.0.5"])),
            ("203.0.113.0/24", via(&["10.0.0.3"])),
        ]),
        expect(&[
            ("2001:db8:1::/48", via(&["fd00::2", "fd00::5"])),
            ("2001:db8:3::/48", via(&["fd00::3", "fd00::4"])),
            ("fd00::/64", dev()),
            ("fe80::/64", dev()),
        ]),
    )
}

#[test]
fn zebra_capture_in_pieces_of_any_size() {
    for piece in [1, 2, 3, 7, 64, 1000, WALK_AND_UPDATES.len()] {
        let mut s = FpmSession::new(SessionOptions::default());
        s.connect(Instant::now());
        for chunk in WALK_AND_UPDATES.chunks(piece) {
            s.feed(chunk, Instant::now()).unwrap();
        }
        assert_eq!(s.disconnect(), Ok(()));
        let (v4, v6) = final_tables();
        assert_eq!(table::<Ipv4>(&s), v4, "pieces of {piece}");
        assert_eq!(table::<Ipv6>(&s), v6, "pieces of {piece}");
        let st = s.stats();
        assert_eq!((st.undecodable, st.other_tables, st.dropped), (0, 0, 0));
        assert_eq!(st.route_messages, 11 + 9);
        assert_eq!(st.nexthop_messages, 14 + 9);
    }
}

#[test]
fn the_walk_then_the_updates_as_changes() {
    let mut s = FpmSession::new(SessionOptions::default());
    s.connect(Instant::now());
    s.feed(&WALK_AND_UPDATES[..WALK_LEN], Instant::now())
        .unwrap();
    let walk = s.take::<Ipv4>();
    assert_eq!(walk.len(), 6);
    assert!(walk
        .iter()
        .all(|r| matches!(r.change, Change::Announce(..))));
    assert_eq!(s.take::<Ipv6>().len(), 5);
    // zebra sends each update as a delete and an add in one frame: one change each.
    s.feed(&WALK_AND_UPDATES[WALK_LEN..], Instant::now())
        .unwrap();
    let v4: Vec<String> = s
        .take::<Ipv4>()
        .iter()
        .map(|r| match r.change {
            Change::Announce(p, _) => format!("A {p}"),
            Change::Withdraw(p) => format!("W {p}"),
        })
        .collect();
    assert_eq!(
        v4,
        [
            "A 192.0.2.0/24",
            "A 203.0.113.0/24",
            "W 198.51.100.0/24",
            "A 172.16.0.0/12"
        ]
    );
    let v6 = s.take::<Ipv6>();
    assert_eq!(v6.len(), 2);
    assert!(s.take::<Ipv4>().is_empty());
}

#[test]
fn a_reconnection_sweeps_what_zebra_did_not_send_again() {
    let opts = SessionOptions {
        sweep_quiet: Duration::from_millis(500),
        ..SessionOptions::default()
    };
    let mut s = FpmSession::new(opts);
    let t0 = Instant::now();
    s.connect(t0);
    s.feed(WALK_AND_UPDATES, t0).unwrap();
    // A route zebra will not send again (it deleted it while disconnected), and one whose
    // nexthop object it will not send again.
    let gone: Prefix<Ipv4> = "10.99.0.0/16".parse().unwrap();
    let mut extra = wire::new_nexthop(
        900,
        &Nexthop::Single(Path {
            gateway: Some("10.0.0.99".parse().unwrap()),
            ..path(None)
        }),
    )
    .unwrap();
    extra.extend(wire::new_route(gone, 254, &RouteTarget::NexthopObject(900)).unwrap());
    s.feed(&frame(&extra).unwrap(), t0).unwrap();
    assert_eq!(s.routes::<Ipv4>().rib().len(), 7);
    s.take::<Ipv4>();
    s.take::<Ipv6>();
    s.disconnect().unwrap();
    // No sweep while disconnected: the routes keep forwarding.
    assert_eq!(s.sweep_due(), None);
    let t1 = t0 + Duration::from_secs(10);
    s.connect(t1);
    assert_eq!(s.routes::<Ipv4>().stale(), (7, 16));
    s.feed(RECONNECT, t1).unwrap();
    // What was sent again is fresh and changed nothing.
    assert_eq!(s.routes::<Ipv4>().stale().0, 1);
    assert!(s.take::<Ipv4>().is_empty());
    assert!(s.take::<Ipv6>().is_empty());
    // The sweep waits for a quiet stream (and never waits past sweep_max).
    let due = s.sweep_due().unwrap();
    assert_eq!(due, t1 + Duration::from_millis(500));
    assert_eq!(s.sweep_if_due(t1 + Duration::from_millis(499)), None);
    let later = t1 + Duration::from_millis(400);
    s.feed(&[], later).unwrap();
    assert_eq!(s.sweep_due(), Some(later + Duration::from_millis(500)));
    assert_eq!(
        s.sweep_if_due(later + Duration::from_millis(500)),
        Some((1, 0))
    );
    let w = s.take::<Ipv4>();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].change, Change::Withdraw(gone));
    assert!(s.routes::<Ipv4>().nexthop(900).is_none());
    let (v4, v6) = final_tables();
    assert_eq!((table::<Ipv4>(&s), table::<Ipv6>(&s)), (v4, v6));
    let st = s.stats();
    assert_eq!((st.connections, st.sweeps, st.swept_routes), (2, 1, 1));
    assert!(st.swept_nexthops >= 1);
    assert_eq!(s.sweep_due(), None);
}

#[test]
fn groups_resolve_and_follow_their_members() {
    let mut s = FpmSession::new(SessionOptions::default());
    let at = Instant::now();
    s.connect(at);
    let p: Prefix<Ipv4> = "10.1.0.0/16".parse().unwrap();
    let single = |g: &str| {
        Nexthop::Single(Path {
            gateway: Some(g.parse().unwrap()),
            ..path(None)
        })
    };
    let mut m = Vec::new();
    m.extend(wire::new_nexthop(1, &single("10.0.0.11")).unwrap());
    m.extend(wire::new_nexthop(2, &single("10.0.0.12")).unwrap());
    m.extend(wire::new_nexthop(3, &Nexthop::Group(vec![(1, 1), (2, 3)])).unwrap());
    m.extend(wire::new_route(p, 254, &RouteTarget::NexthopObject(3)).unwrap());
    s.feed(&frame(&m).unwrap(), at).unwrap();
    let target = |s: &FpmSession| {
        let r = s.routes::<Ipv4>();
        r.target(r.rib().get(&p).unwrap()).unwrap().clone()
    };
    let weighted = |g: &str, w: u16| Path {
        gateway: Some(g.parse().unwrap()),
        weight: w,
        ..path(None)
    };
    assert_eq!(
        target(&s),
        RouteTarget::Unicast(vec![weighted("10.0.0.11", 1), weighted("10.0.0.12", 3)])
    );
    s.take::<Ipv4>();
    // A member changes: the route through the group follows.
    s.feed(
        &frame(&wire::new_nexthop(2, &single("10.0.0.13")).unwrap()).unwrap(),
        at,
    )
    .unwrap();
    assert_eq!(
        target(&s),
        RouteTarget::Unicast(vec![weighted("10.0.0.11", 1), weighted("10.0.0.13", 3)])
    );
    assert_eq!(s.take::<Ipv4>().len(), 1);
    // The group changes members.
    s.feed(
        &frame(&wire::new_nexthop(3, &Nexthop::Group(vec![(1, 1)])).unwrap()).unwrap(),
        at,
    )
    .unwrap();
    assert_eq!(target(&s), via(&["10.0.0.11"]));
    // An object announced again unchanged changes nothing.
    s.feed(
        &frame(&wire::new_nexthop(3, &Nexthop::Group(vec![(1, 1)])).unwrap()).unwrap(),
        at,
    )
    .unwrap();
    assert_eq!(s.take::<Ipv4>().len(), 1);
    // Deleting an object a route still names leaves the route unresolved.
    s.feed(&frame(&wire::del_nexthop(3)).unwrap(), at).unwrap();
    assert_eq!(target(&s), RouteTarget::NexthopObject(3));
    // A blackhole object.
    s.feed(
        &frame(&wire::new_nexthop(3, &Nexthop::Blackhole).unwrap()).unwrap(),
        at,
    )
    .unwrap();
    assert_eq!(target(&s), RouteTarget::Blackhole);
}

#[test]
fn every_kind_of_route_and_the_followed_table_only() {
    fn check<A: super::FpmFamily>(p: &str, gws: [&str; 2]) {
        let mut s = FpmSession::new(SessionOptions {
            table: 1000,
            ..SessionOptions::default()
        });
        let at = Instant::now();
        s.connect(at);
        let p: Prefix<A> = p.parse().unwrap();
        let kinds = [
            via(&gws[..1]),
            via(&gws),
            RouteTarget::Blackhole,
            RouteTarget::Unreachable,
            RouteTarget::Prohibit,
        ];
        for t in &kinds {
            // Another table's route for the prefix changes nothing.
            let mut m = wire::new_route(p, 254, &via(&gws[1..])).unwrap();
            m.extend(wire::new_route(p, 1000, t).unwrap());
            s.feed(&frame(&m).unwrap(), at).unwrap();
            let r = s.routes::<A>();
            assert_eq!(r.target(r.rib().get(&p).unwrap()), Some(t));
        }
        let changes = s.take::<A>();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(matches!(changes[0].change, Change::Announce(q, _) if q == p));
        s.feed(&frame(&wire::del_route(p, 254)).unwrap(), at)
            .unwrap();
        assert_eq!(s.routes::<A>().rib().len(), 1);
        s.feed(&frame(&wire::del_route(p, 1000)).unwrap(), at)
            .unwrap();
        assert!(s.routes::<A>().rib().is_empty());
        // Deleting what is not there changes nothing.
        s.feed(&frame(&wire::del_route(p, 1000)).unwrap(), at)
            .unwrap();
        let changes = s.take::<A>();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert!(matches!(changes[0].change, Change::Withdraw(q) if q == p));
        let st = s.stats();
        assert_eq!((st.route_messages, st.other_tables), (7, 6));
    }
    check::<Ipv4>("10.2.0.0/16", ["10.0.0.1", "10.0.0.2"]);
    check::<Ipv6>("2001:db8:9::/48", ["fd00::1", "fd00::2"]);
}

#[test]
fn bad_input_is_skipped_or_ends_the_stream_with_the_table_unchanged() {
    let mut s = FpmSession::new(SessionOptions::default());
    let at = Instant::now();
    s.connect(at);
    s.feed(&WALK_AND_UPDATES[..WALK_LEN], at).unwrap();
    s.take::<Ipv4>();
    s.take::<Ipv6>();
    let before = (table::<Ipv4>(&s), table::<Ipv6>(&s));
    // Garbage inside well-formed frames: skipped and counted, the stream goes on.
    let route = wire::new_route(
        "10.3.0.0/16".parse::<Prefix<Ipv4>>().unwrap(),
        254,
        &via(&["10.0.0.3"]),
    )
    .unwrap();
    let mut overlong = route.clone();
    overlong[0] = 200; // a netlink length past the frame's end
    let mut short_attr = route.clone();
    short_attr[28] = 2; // an attribute shorter than its header
                        // A nexthop message without an id.
    let mut no_id = wire::del_nexthop(7);
    no_id.truncate(24);
    no_id[0] = 24;
    let mut offset = WALK_LEN as u64;
    for payload in [vec![0xff; 40], vec![1, 2, 3], overlong, short_attr, no_id] {
        let f = frame(&payload).unwrap();
        offset += f.len() as u64;
        s.feed(&f, at).unwrap();
    }
    assert_eq!(s.stats().undecodable, 5);
    assert_eq!((table::<Ipv4>(&s), table::<Ipv6>(&s)), before.clone());
    assert!(s.take::<Ipv4>().is_empty());
    // A bad header ends the stream; nothing of that frame, or after it, is applied.
    let mut bad = frame(&route).unwrap();
    bad[0] = 3;
    let mut stream = bad.clone();
    stream.extend(frame(&route).unwrap());
    let e = s.feed(&stream, at).unwrap_err();
    assert_eq!(e.kind, FrameErrorKind::Version(3));
    assert_eq!(e.offset, offset);
    assert_eq!((table::<Ipv4>(&s), table::<Ipv6>(&s)), before);
    assert_eq!(s.stats().dropped, 1);
}

//! The FPM server over real TCP, fed what zebra 8.4 sent (the captures in
//! `lpmkit/tests/fpm-captures/`) and hostile input: garbage inside well-formed frames (the
//! longest frame, a netlink message longer than its frame: skipped, the connection kept),
//! a bad version, another type, a length shorter than the header, random bytes, a frame
//! that claims the longest length and never ends (the connection dropped or closed,
//! reported). After each, a scheme following the server (in place, d18r) answers as
//! before, and a reconnection that sends the table again sweeps what was not sent.
#![cfg(all(feature = "fpm", target_os = "linux"))]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use lpmkit::fpm::{frame, FpmEvent, FpmOptions, FpmServer, FrameErrorKind, SessionOptions};
use lpmkit::netlink::Follower;
use lpmkit::{registry, BuildOptions, Ipv4, NextHop, Rib};

const WALK_AND_UPDATES: &[u8] = include_bytes!("../fpm-captures/zebra-8.4-walk-and-updates.fpm");
const RECONNECT: &[u8] = include_bytes!("../fpm-captures/zebra-8.4-reconnect.fpm");

/// The server and an in-place scheme following its IPv4 routes.
struct Rig {
    server: FpmServer,
    fib: Follower<Ipv4>,
}

impl Rig {
    fn new() -> Self {
        let options = FpmOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            session: SessionOptions {
                sweep_quiet: Duration::from_millis(300),
                ..SessionOptions::default()
            },
            ..FpmOptions::default()
        };
        let server = FpmServer::bind(&options).expect("listen on loopback");
        let info = registry::find("d18r").unwrap();
        let fib = Follower::new(info, Rib::new(), &BuildOptions::default(), Duration::ZERO)
            .expect("d18r builds");
        Rig { server, fib }
    }

    fn connect(&self) -> TcpStream {
        TcpStream::connect(self.server.local_addr().unwrap()).unwrap()
    }

    /// Polls for `d`, handing every change to the scheme; returns the events.
    fn run(&mut self, d: Duration) -> Vec<FpmEvent> {
        let end = Instant::now() + d;
        let mut events = Vec::new();
        while Instant::now() < end {
            self.server
                .poll(Some(end.saturating_duration_since(Instant::now())))
                .unwrap();
            let changes: Vec<_> = self
                .server
                .take::<Ipv4>()
                .iter()
                .map(|r| r.change)
                .collect();
            self.fib.apply(&changes).unwrap();
            events.extend(self.server.events());
        }
        events
    }

    /// What readers of the scheme answer for every prefix's first and last address.
    fn answers(&self) -> Vec<(String, Option<String>)> {
        let routes = self.server.session().routes::<Ipv4>();
        let mut keys = Vec::new();
        for (p, _) in routes.rib().iter() {
            keys.push(p.addr());
            keys.push(p.last());
        }
        // And a few addresses no route covers but the default.
        keys.extend([0x0b00_0001, 0xc000_0201, 0xdead_beef]);
        let mut out = vec![0u32; keys.len()];
        self.fib.reader().lookup_batch(&keys, &mut out);
        keys.iter()
            .zip(&out)
            .map(|(&k, &nh)| {
                (
                    lpmkit::prefix::format_addr(k),
                    NextHop::new(nh)
                        .and_then(|nh| routes.target(nh))
                        .map(|t| t.to_string()),
                )
            })
            .collect()
    }
}

/// Reads until the server closes the connection (or 2 s pass); true if it did.
fn closed_by_server(mut s: TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0) | Err(_))
}

#[test]
fn zebra_stream_and_hostile_input_over_tcp() {
    let mut rig = Rig::new();
    let mut zebra = rig.connect();
    zebra.write_all(WALK_AND_UPDATES).unwrap();
    let events = rig.run(Duration::from_millis(400));
    assert!(
        matches!(events.as_slice(), [FpmEvent::Connected(_), ..]),
        "{events:?}"
    );
    let good = rig.answers();
    assert_eq!(rig.server.session().routes::<Ipv4>().rib().len(), 6);
    assert!(good.iter().all(|(_, a)| a.is_some()), "{good:?}");
    let stats = rig.server.session().stats();
    assert_eq!((stats.route_messages, stats.undecodable), (20, 0));

    // Garbage inside well-formed frames: skipped and counted; the connection stays. The
    // longest frame there is, and a route message whose netlink length runs past its
    // frame (oversized for it), among them.
    let route = lpmkit::fpm::wire::new_route(
        "10.98.0.0/16".parse::<lpmkit::Prefix<Ipv4>>().unwrap(),
        254,
        &lpmkit::netlink::RouteTarget::Blackhole,
    )
    .unwrap();
    let mut overlong = route.clone();
    overlong[..4].copy_from_slice(&60_000u32.to_ne_bytes());
    let mut garbage = Vec::new();
    for payload in [
        vec![0xffu8; 64],
        vec![0; 65531],
        vec![7; 5],
        b"not netlink".to_vec(),
        overlong,
    ] {
        garbage.extend(frame(&payload).unwrap());
    }
    assert!(
        frame(&[0; 65532]).is_none(),
        "no frame is longer than 65,535 bytes"
    );
    zebra.write_all(&garbage).unwrap();
    let events = rig.run(Duration::from_millis(300));
    assert!(events.is_empty(), "{events:?}");
    assert!(rig.server.peer().is_some(), "the connection is kept");
    assert_eq!(rig.server.session().stats().undecodable, 5);
    assert_eq!(rig.answers(), good);

    // A bad header: the connection is dropped, the rest of the stream never read.
    let mut bad = frame(&[0; 32]).unwrap();
    bad[0] = 2;
    bad.extend(frame(&[1; 32]).unwrap());
    zebra.write_all(&bad).unwrap();
    let events = rig.run(Duration::from_millis(300));
    assert!(
        matches!(&events[..], [FpmEvent::Dropped(_, e)] if e.kind == FrameErrorKind::Version(2)),
        "{events:?}"
    );
    assert!(closed_by_server(zebra));
    assert_eq!(rig.server.peer(), None);
    assert_eq!(rig.answers(), good);

    // Random bytes from a new connection: dropped at the first header.
    let mut noise = rig.connect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let bytes: Vec<u8> = (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    noise.write_all(&bytes).unwrap();
    let events = rig.run(Duration::from_millis(300));
    assert!(
        matches!(&events[..], [FpmEvent::Connected(_), FpmEvent::Dropped(_, e)] if e.offset == 0),
        "{events:?}"
    );
    assert!(closed_by_server(noise));
    assert_eq!(rig.answers(), good);

    // Another frame type (zebra's protobuf encoding), and a length shorter than the
    // header: dropped at that frame, after the good frame before it was applied.
    for (header, kind) in [
        ([1u8, 2, 0, 8], FrameErrorKind::Type(2)),
        ([1u8, 1, 0, 3], FrameErrorKind::Length(3)),
    ] {
        let mut conn = rig.connect();
        let good_frame = frame(&lpmkit::fpm::wire::del_nexthop(4242)).unwrap();
        let mut bytes = good_frame.clone();
        bytes.extend(header);
        bytes.extend(frame(&route).unwrap());
        conn.write_all(&bytes).unwrap();
        let events = rig.run(Duration::from_millis(300));
        assert!(
            matches!(&events[..], [FpmEvent::Connected(_), FpmEvent::Dropped(_, e)]
                if e.kind == kind && e.offset == good_frame.len() as u64),
            "{events:?}"
        );
        assert!(closed_by_server(conn));
        assert_eq!(
            rig.answers(),
            good,
            "10.98.0.0/16 after the bad frame is not applied"
        );
    }

    // A frame that claims the longest length, then the connection closes: truncated.
    let mut cut = rig.connect();
    let mut claim = vec![1u8, 1, 0xff, 0xff];
    claim.extend([0u8; 100]);
    cut.write_all(&claim).unwrap();
    cut.shutdown(Shutdown::Write).unwrap();
    let events = rig.run(Duration::from_millis(300));
    assert!(
        matches!(&events[..], [FpmEvent::Connected(_), FpmEvent::Closed(_, Some(e))]
            if e.kind == FrameErrorKind::Truncated { length: 65535, have: 104 }),
        "{events:?}"
    );
    // These connections ended before a sweep was due (it needs the connection up and
    // the stream quiet): the routes stay.
    assert_eq!(rig.answers(), good);

    // zebra connects again and sends its table: a route it no longer has is swept.
    let extra = lpmkit::fpm::wire::new_route(
        "10.99.0.0/16".parse::<lpmkit::Prefix<Ipv4>>().unwrap(),
        254,
        &lpmkit::netlink::RouteTarget::Blackhole,
    )
    .unwrap();
    let mut first = rig.connect();
    first.write_all(RECONNECT).unwrap();
    first.write_all(&frame(&extra).unwrap()).unwrap();
    let events = rig.run(Duration::from_millis(500));
    assert!(events.contains(&FpmEvent::Swept(0, 0)), "{events:?}");
    assert_eq!(rig.server.session().routes::<Ipv4>().rib().len(), 7);
    drop(first);
    let mut again = rig.connect();
    again.write_all(RECONNECT).unwrap();
    let events = rig.run(Duration::from_millis(800));
    assert!(
        events.contains(&FpmEvent::Swept(1, 0)),
        "the sweep removes the one route not sent again: {events:?}"
    );
    assert_eq!(rig.server.session().routes::<Ipv4>().rib().len(), 6);
    assert_eq!(rig.answers(), good);
    assert_eq!(rig.fib.rib().len(), 6);
    let s = rig.server.session().stats();
    assert_eq!((s.connections, s.dropped, s.sweeps), (7, 4, 3));
}

//! lpmkit fed by a real routing suite: FRR's zebra (with `dplane_fpm_nl`) streams its
//! selected routes to lpmkit's FPM server; staticd holds a handful of static routes (IPv4,
//! IPv6, blackhole, unreachable, ECMP); bgpd holds an eBGP session with gobgpd in another
//! network namespace, which announces a full table — rrc06 (IPv4, 323,487 prefixes) and
//! bart's tier-1 table (IPv6, 160,147 prefixes) — then replays the update trace
//! `ipv4-ris-rrc01-linx-2024-10-01-0055-updates` as announcements and withdrawals.
//!
//! After the load, after the replay, after the speaker's session is reset (every route
//! withdrawn, then learned again) and after a zebra crash and restart (a reconnection,
//! with routes withdrawn while zebra was down swept), lpmkit's table equals zebra's: the
//! prefix count, and 10,000 addresses per family looked up in an in-place scheme and a
//! rebuilt one at once, every answer compared with zebra's own (`show ip route A json`).
//! It prints the convergence (session established → lpmkit holds the full IPv4 table,
//! beside the kernel, where zebra installs the same routes) and the publication latency
//! of the replay per update model.
//!
//! Root, FRR (Debian `frr`), gobgpd (`gobgpd`) and Python's grpcio (`python3-grpcio`,
//! which `tests/frr/gobgp_feed.py` uses to feed gobgpd's RIB) are needed: without them
//! the test says why and skips — unless `LPMKIT_REQUIRE_FRR=1` (CI), where that fails.
#![cfg(all(feature = "fpm", target_os = "linux"))]

mod common;
#[path = "frr/lab.rs"]
mod lab;
#[path = "frr/track.rs"]
mod track;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lab::{Lab, FPM_PORT};
use lpmkit::fpm::{
    compare, FpmEvent, FpmFamily, FpmOptions, FpmServer, SessionOptions, ZebraQuery,
};
use lpmkit::netlink::{KernelSync, SyncOptions, Verdict};
use lpmkit::sync::UpdateModel;
use lpmkit::{traffic, Address, Change, Family, Ipv4, Ipv6, NextHop, Prefix, Rib, Table};
use track::{quantile, Track};

const V4_TABLE: &str = "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz";
const V6_TABLE: &str = "fib/ipv6-bart-tier1-prefixes.txt.xz";
const TRACE: &str = "updates/ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz";

/// staticd's routes: IPv4 and IPv6, ECMP, blackhole, unreachable.
const STATICS: &[&str] = &[
    "ip route 192.0.2.0/24 10.0.0.7",
    "ip route 198.51.100.0/24 blackhole",
    "ip route 203.0.113.0/24 10.0.0.3",
    "ip route 203.0.113.0/24 10.0.0.4",
    "ip route 100.64.0.0/10 reject",
    "ipv6 route 2001:db8:1::/48 fd00::3",
    "ipv6 route 2001:db8:1::/48 fd00::4",
    "ipv6 route 2001:db8:2::/48 blackhole",
];
/// Their prefixes, with the connected ones (zebra sends both).
const V4_OTHERS: &[&str] = &[
    "192.0.2.0/24",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "100.64.0.0/10",
    "10.0.0.0/16",
];
const V6_OTHERS: &[&str] = &[
    "2001:db8:1::/48",
    "2001:db8:2::/48",
    "fd00::/64",
    "fe80::/64",
];

/// Addresses checked per family at each checkpoint.
const CHECK_KEYS: usize = 10_000;
/// Hold time of the rebuilt schemes.
const HOLD: Duration = Duration::from_millis(50);

/// The lab, or `None` after saying why not (a failure under `LPMKIT_REQUIRE_FRR`).
fn lab() -> Option<Lab> {
    let why = match lab::missing() {
        None => match Lab::new(STATICS) {
            Ok(l) => return Some(l),
            Err(e) => e,
        },
        Some(why) => why,
    };
    if std::env::var_os("LPMKIT_REQUIRE_FRR").is_some() {
        panic!("LPMKIT_REQUIRE_FRR is set but the FRR lab cannot run: {why}");
    }
    eprintln!("note: skipping the FRR test: {why}");
    None
}

/// The gateway a next-hop id of the data maps to on the router's link.
fn gateway<A: Address>(nh: NextHop) -> String {
    let i = nh.get();
    match A::FAMILY {
        Family::V4 => format!("10.0.{}.{}", 1 + i / 256, i % 256),
        Family::V6 => format!("fd00::{:x}", 0x100 + i),
    }
}

/// Feeder lines announcing every route of `rib`.
fn announce_all<A: Address>(rib: &Rib<A>, out: &mut String) {
    for (p, nh) in rib.iter() {
        let _ = writeln!(out, "A {p} {}", gateway::<A>(nh));
    }
}

/// The prefixes zebra should hold: `bgp`'s with the static and connected ones.
fn expected<A: Address>(bgp: &Rib<A>, others: &[&str]) -> usize {
    let mut all = bgp.clone();
    for p in others {
        all.insert(p.parse().unwrap(), NextHop::new(1).unwrap());
    }
    all.len()
}

/// One family's schemes.
struct Schemes<A: Address> {
    tracks: Vec<Track<A>>,
}

/// Everything the test drives.
struct Rig {
    lab: Lab,
    server: FpmServer,
    v4: Schemes<Ipv4>,
    v6: Schemes<Ipv6>,
    kernel: Option<KernelSync<Ipv4>>,
    /// (when, IPv4 prefixes followed) at each change of the count.
    fpm_timeline: Vec<(Instant, usize)>,
    kernel_timeline: Vec<(Instant, usize)>,
    events: Vec<FpmEvent>,
    /// The least IPv4 count since the last reset of it.
    low_v4: usize,
}

impl Rig {
    /// Polls zebra's stream (and the kernel's notifications) until `done` or `limit`.
    fn drive(&mut self, what: &str, limit: Duration, mut done: impl FnMut(&Rig) -> bool) {
        let end = Instant::now() + limit;
        while !done(self) {
            assert!(
                Instant::now() < end,
                "{what}: not done after {limit:?}: lpmkit holds {} IPv4 and {} IPv6 prefixes; events {:?}",
                self.count::<Ipv4>(),
                self.count::<Ipv6>(),
                self.events
            );
            self.step(Duration::from_millis(5));
        }
    }

    fn step(&mut self, wait: Duration) {
        self.server.poll(Some(wait)).expect("the FPM server");
        let v4 = self.server.take::<Ipv4>();
        let v6 = self.server.take::<Ipv6>();
        if !v4.is_empty() {
            let n = self.count::<Ipv4>();
            self.fpm_timeline.push((v4[v4.len() - 1].at, n));
            self.low_v4 = self.low_v4.min(n);
            let r: Arc<[_]> = v4.into();
            self.v4.tracks.iter().for_each(|t| t.apply(&r));
        }
        if !v6.is_empty() {
            let r: Arc<[_]> = v6.into();
            self.v6.tracks.iter().for_each(|t| t.apply(&r));
        }
        self.events.extend(self.server.events());
        if let Some(k) = self.kernel.as_mut() {
            let got = k
                .poll(Some(Duration::ZERO))
                .expect("the kernel's notifications");
            if let Some(last) = got.last() {
                self.kernel_timeline.push((last.at, k.rib().len()));
            }
        }
    }

    /// Drives until the stream has been quiet for `quiet`.
    fn settle(&mut self, quiet: Duration) {
        let mut bytes = self.server.session().stats().bytes;
        let mut since = Instant::now();
        while since.elapsed() < quiet {
            self.step(Duration::from_millis(20));
            let b = self.server.session().stats().bytes;
            if b != bytes {
                bytes = b;
                since = Instant::now();
            }
        }
        self.v4.tracks.iter().for_each(Track::flush);
        self.v6.tracks.iter().for_each(Track::flush);
    }

    fn count<A: FpmFamily>(&self) -> usize {
        self.server.session().routes::<A>().rib().len()
    }

    /// The checkpoint: zebra's FIB counts, then `CHECK_KEYS` addresses per family in every
    /// scheme against zebra's answers.
    fn checkpoint(&mut self, what: &str, v4_keys: &[Ipv4], v6_keys: &[Ipv6]) {
        self.settle(Duration::from_millis(1500));
        let (z4, z6) = (
            self.lab.fib_count("ip").unwrap(),
            self.lab.fib_count("ipv6").unwrap(),
        );
        let (l4, l6) = (self.count::<Ipv4>(), self.count::<Ipv6>());
        assert_eq!(
            (l4, l6),
            (z4, z6),
            "{what}: lpmkit's prefixes (IPv4, IPv6) against zebra's FIB"
        );
        for t in &self.v4.tracks {
            assert_eq!(t.visible(), l4, "{what}: {} (IPv4)", t.name);
        }
        for t in &self.v6.tracks {
            assert_eq!(t.visible(), l6, "{what}: {} (IPv6)", t.name);
        }
        let query = ZebraQuery::new(&self.lab.vtysh_command(), None);
        let t0 = Instant::now();
        let c4 = check(what, &self.server, &mut self.v4.tracks, &query, v4_keys);
        let c6 = check(what, &self.server, &mut self.v6.tracks, &query, v6_keys);
        eprintln!(
            "{what}: {l4} IPv4 and {l6} IPv6 prefixes, as zebra's FIB; {} IPv4 and {} IPv6 addresses, every answer of {} equal to zebra's ({} + {} routes zebra streams only at connection, skipped) [{:.1} s]",
            v4_keys.len(),
            v6_keys.len(),
            self.v4
                .tracks
                .iter()
                .map(|t| t.name)
                .chain(self.v6.tracks.iter().map(|t| t.name))
                .collect::<Vec<_>>()
                .join(", "),
            c4,
            c6,
            t0.elapsed().as_secs_f64()
        );
    }
}

/// Looks `keys` up in every track and compares each answer with zebra's; panics on a
/// difference. Returns the answers skipped (connected routes lpmkit answered otherwise).
fn check<A: FpmFamily>(
    what: &str,
    server: &FpmServer,
    tracks: &mut [Track<A>],
    query: &ZebraQuery,
    keys: &[A],
) -> usize {
    let answers = query.get_many(keys).expect("zebra's answers");
    let routes = server.session().routes::<A>();
    let mut out = vec![0u32; keys.len()];
    let mut skipped = 0;
    for t in tracks {
        t.lookup_batch(keys, &mut out);
        let mut bad = Vec::new();
        for ((&k, &o), a) in keys.iter().zip(&out).zip(&answers) {
            let ours = NextHop::new(o).and_then(|nh| routes.target(nh));
            match compare(a, ours) {
                Verdict::Agree => {}
                Verdict::Skip => skipped += 1,
                Verdict::Differ => bad.push(format!(
                    "{}: zebra {a:?}, lpmkit {ours:?}",
                    lpmkit::prefix::format_addr(k)
                )),
            }
        }
        assert!(
            bad.is_empty(),
            "{what}: {} ({}) differs from zebra on {} of {} addresses:\n{}",
            t.name,
            A::FAMILY,
            bad.len(),
            keys.len(),
            bad[..bad.len().min(8)].join("\n")
        );
    }
    skipped
}

/// Check addresses: half uniform, half inside `rib`'s routes (so that a route lpmkit
/// holds wrong is looked up).
fn keys<A: Address>(rib: &Rib<A>, seed: u64) -> Vec<A> {
    let mut k: Vec<A> = traffic::uniform(CHECK_KEYS / 2, seed);
    let routes: Vec<Prefix<A>> = rib.iter().map(|(p, _)| p).collect();
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while k.len() < CHECK_KEYS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let p = routes[(x % routes.len() as u64) as usize];
        let span = p.last().to_u128() - p.first().to_u128();
        let off = ((x as u128) << 64 | x.rotate_left(17) as u128) % span.saturating_add(1).max(1);
        k.push(A::from_u128(p.first().to_u128() + off));
    }
    k
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The latency percentiles of `t` as a report line.
fn latency_line<A: Address>(t: &Track<A>) -> String {
    let l = t.latencies();
    format!(
        "{:<10} {:<8} {:>7} changes  p50 {:>8.3} ms  p90 {:>8.3} ms  p99 {:>8.3} ms  max {:>8.3} ms",
        t.name,
        match t.model {
            UpdateModel::InPlace => "in place",
            UpdateModel::Twins => "twins",
            UpdateModel::Rebuild { .. } => "rebuild",
        },
        l.len(),
        quantile(&l, 0.5),
        quantile(&l, 0.9),
        quantile(&l, 0.99),
        quantile(&l, 1.0)
    )
}

#[test]
fn zebra_over_fpm_full_table_and_trace() {
    let (Some(v4_path), Some(v6_path), Some(trace_path)) = (
        common::data_file(V4_TABLE),
        common::data_file(V6_TABLE),
        common::data_file(TRACE),
    ) else {
        return;
    };
    let Some(lab) = lab() else { return };
    let t_test = Instant::now();
    let mut t4: Table<Ipv4> = common::load_table(&v4_path);
    let t6: Table<Ipv6> = common::load_table(&v6_path);
    let trace: Vec<Change<Ipv4>> = common::load_updates(&trace_path, &mut t4.next_hops);

    // lpmkit listens in the router's namespace before zebra starts; a kernel follower there
    // times the kernel's copy of the same routes.
    let server = FpmServer::bind(&FpmOptions {
        listen: format!("127.0.0.1:{FPM_PORT}").parse().unwrap(),
        netns: Some(lab.router.clone()),
        session: SessionOptions::default(),
    })
    .expect("the FPM server listens in the router's namespace");
    let kernel = KernelSync::<Ipv4>::open(&SyncOptions {
        netns: Some(lab.router.clone()),
        ..SyncOptions::default()
    })
    .expect("the kernel follower");
    let mut rig = Rig {
        lab,
        server,
        v4: Schemes {
            tracks: vec![
                Track::new("d18r", Rib::new(), HOLD),
                Track::new("spider16w", Rib::new(), HOLD),
            ],
        },
        v6: Schemes {
            tracks: vec![
                Track::new("obma-b", Rib::new(), HOLD),
                Track::new("spider16w", Rib::new(), HOLD),
            ],
        },
        kernel: Some(kernel),
        fpm_timeline: Vec::new(),
        kernel_timeline: Vec::new(),
        events: Vec::new(),
        low_v4: usize::MAX,
    };
    // gobgpd takes the full table (the session is down) while FRR starts.
    rig.lab.start_gobgpd().unwrap();
    let mut feeder = rig.lab.feeder().unwrap();
    let mut lines = String::new();
    announce_all(&t4.rib, &mut lines);
    announce_all(&t6.rib, &mut lines);
    let t0 = Instant::now();
    let sent = feeder.send(lines);
    for d in ["zebra", "staticd", "bgpd"] {
        rig.lab.start(d).unwrap();
    }
    let (n4, n6) = (expected(&t4.rib, V4_OTHERS), expected(&t6.rib, V6_OTHERS));
    let statics = (V4_OTHERS.len(), V6_OTHERS.len());
    rig.drive("zebra's first walk", Duration::from_secs(60), |r| {
        (r.count::<Ipv4>(), r.count::<Ipv6>()) == statics
    });
    eprintln!(
        "zebra connected and sent its static and connected routes ({} IPv4, {} IPv6) in {:.1} s",
        statics.0,
        statics.1,
        t_test.elapsed().as_secs_f64()
    );
    let (taken, _) = feeder.wait(sent).unwrap();
    assert_eq!(taken as usize, t4.rib.len() + t6.rib.len());
    eprintln!(
        "gobgpd holds the full table: {} IPv4 and {} IPv6 routes, fed in {:.1} s",
        t4.rib.len(),
        t6.rib.len(),
        t0.elapsed().as_secs_f64()
    );
    for t in &rig.v4.tracks {
        t.watch(n4);
    }
    rig.fpm_timeline.clear();
    rig.kernel_timeline.clear();
    rig.lab
        .vtysh(&[
            "configure terminal",
            "router bgp 65001",
            &format!("no neighbor {} shutdown", lab::SPEAKER_V4),
        ])
        .unwrap();
    let t_up = Instant::now();
    let mut asked = Instant::now();
    let established = loop {
        rig.step(Duration::from_millis(5));
        if asked.elapsed() >= Duration::from_millis(50) {
            asked = Instant::now();
            if rig.lab.session().unwrap() == "Established" {
                break asked;
            }
        }
        assert!(t_up.elapsed() < Duration::from_secs(60), "no BGP session");
    };
    rig.drive("the full table", Duration::from_secs(600), |r| {
        r.count::<Ipv4>() == n4 && r.count::<Ipv6>() == n6
    });
    let t_fpm6 = Instant::now();
    // The kernel's copy, and the schemes' publications.
    rig.drive("the kernel's copy", Duration::from_secs(120), |r| {
        r.kernel.as_ref().unwrap().rib().len() >= n4
            && r.v4.tracks.iter().all(|t| t.reached().is_some())
    });
    let fpm4 = rig
        .fpm_timeline
        .iter()
        .find(|(_, n)| *n == n4)
        .map(|(t, _)| *t)
        .unwrap();
    let kern4 = rig
        .kernel_timeline
        .iter()
        .find(|(_, n)| *n >= n4)
        .map(|(t, _)| *t)
        .unwrap();
    let secs = |t: Instant| t.saturating_duration_since(established).as_secs_f64();
    eprintln!(
        "convergence (IPv4, {n4} prefixes; session established {:.1} s after `no neighbor shutdown`, seen within 50 ms):",
        established.saturating_duration_since(t_up).as_secs_f64()
    );
    eprintln!(
        "  lpmkit's FPM session holds it {:.2} s after establishment ({:.0} routes/s)",
        secs(fpm4),
        n4 as f64 / secs(fpm4)
    );
    for t in &rig.v4.tracks {
        let at = t.reached().unwrap();
        eprintln!(
            "  {} readers see it {:.2} s after ({:.0} routes/s)",
            t.name,
            secs(at),
            n4 as f64 / secs(at)
        );
    }
    let ahead =
        ms(kern4.saturating_duration_since(fpm4)) - ms(fpm4.saturating_duration_since(kern4));
    eprintln!(
        "  the kernel holds it {:.2} s after ({:.0} routes/s): lpmkit's FPM session {} by {:.0} ms",
        secs(kern4),
        n4 as f64 / secs(kern4),
        if ahead >= 0.0 { "ahead" } else { "behind" },
        ahead.abs()
    );
    eprintln!(
        "  IPv6 ({n6} prefixes) complete in lpmkit {:.2} s after establishment",
        secs(t_fpm6)
    );
    rig.kernel = None;
    let v4_keys = keys(&t4.rib, 1);
    let v6_keys = keys(&t6.rib, 2);
    rig.checkpoint("after the load", &v4_keys, &v6_keys);

    // The trace, as fast as gobgpd takes it; latencies recorded per scheme.
    let mut bgp4 = t4.rib.clone();
    let mut lines = String::new();
    for c in &trace {
        match *c {
            Change::Announce(p, nh) => {
                bgp4.insert(p, nh);
                let _ = writeln!(lines, "A {p} {}", gateway::<Ipv4>(nh));
            }
            Change::Withdraw(p) => {
                bgp4.remove(&p);
                let _ = writeln!(lines, "W {p}");
            }
        }
    }
    let n4_after = expected(&bgp4, V4_OTHERS);
    rig.v4.tracks.iter().for_each(|t| t.record(true));
    let messages = rig.server.session().stats().route_messages;
    let t0 = Instant::now();
    let sent = feeder.send(lines);
    let mut sent = Some(sent);
    rig.drive("the trace", Duration::from_secs(600), |r| {
        r.count::<Ipv4>() == n4_after
    });
    feeder.wait(sent.take().unwrap()).unwrap();
    rig.settle(Duration::from_millis(1500));
    rig.v4.tracks.iter().for_each(|t| t.record(false));
    eprintln!(
        "the trace: {} updates fed, {} route messages from zebra, in {:.1} s; publication latency (zebra's frame received by the kernel → visible to lookups):",
        trace.len(),
        rig.server.session().stats().route_messages - messages,
        t0.elapsed().as_secs_f64()
    );
    for t in &rig.v4.tracks {
        eprintln!("  {}", latency_line(t));
    }
    rig.checkpoint("after the trace", &v4_keys, &v6_keys);

    // The speaker's session down (every BGP route withdrawn), then up again.
    rig.low_v4 = usize::MAX;
    rig.lab
        .gobgp(&["neighbor", lab::ROUTER_V4, "disable"])
        .unwrap();
    rig.drive("the session's withdrawal", Duration::from_secs(300), |r| {
        (r.count::<Ipv4>(), r.count::<Ipv6>()) == statics
    });
    eprintln!(
        "session reset: every BGP route withdrawn ({} IPv4, {} IPv6 static and connected left)",
        statics.0, statics.1
    );
    rig.lab
        .gobgp(&["neighbor", lab::ROUTER_V4, "enable"])
        .unwrap();
    rig.drive("the session's return", Duration::from_secs(600), |r| {
        r.count::<Ipv4>() == n4_after && r.count::<Ipv6>() == n6
    });
    rig.checkpoint("after the session reset", &v4_keys, &v6_keys);

    // zebra's FPM connection down; meanwhile gobgpd withdraws 1,000 IPv4 prefixes, which
    // zebra deletes without telling lpmkit. zebra connects again — without nexthop
    // objects this time (`no fpm use-next-hop-groups`: routes name their gateways) — and
    // sends its table: lpmkit sweeps exactly those prefixes, and the objects.
    let gone: Vec<Prefix<Ipv4>> = bgp4
        .iter()
        .map(|(p, _)| p)
        .filter(|p| !V4_OTHERS.contains(&p.to_string().as_str()))
        .step_by(bgp4.len() / 1000)
        .take(1000)
        .collect();
    let swept_before = rig.server.session().stats().swept_routes;
    let nexthops_before = rig.server.session().stats().swept_nexthops;
    rig.events.clear();
    rig.lab
        .vtysh(&["configure terminal", "no fpm address"])
        .unwrap();
    rig.drive(
        "zebra's FPM connection closing",
        Duration::from_secs(30),
        |r| r.events.iter().any(|e| matches!(e, FpmEvent::Closed(..))),
    );
    let mut lines = String::new();
    for p in &gone {
        bgp4.remove(p);
        let _ = writeln!(lines, "W {p}");
    }
    let n4_final = expected(&bgp4, V4_OTHERS);
    let sent = feeder.send(lines);
    feeder.wait(sent).unwrap();
    let mut asked = Instant::now();
    rig.drive("zebra's deletes", Duration::from_secs(120), |r| {
        if asked.elapsed() < Duration::from_millis(200) {
            return false;
        }
        asked = Instant::now();
        r.lab.fib_count("ip").unwrap() == n4_final
    });
    assert_eq!(
        rig.count::<Ipv4>(),
        n4_after,
        "lpmkit keeps its routes while disconnected"
    );
    let t0 = Instant::now();
    rig.lab
        .vtysh(&[
            "configure terminal",
            "no fpm use-next-hop-groups",
            &format!("fpm address 127.0.0.1 port {FPM_PORT}"),
        ])
        .unwrap();
    rig.drive("the reconnection's sweep", Duration::from_secs(120), |r| {
        r.events.iter().any(|e| matches!(e, FpmEvent::Swept(..)))
    });
    let stats = rig.server.session().stats();
    let swept = stats.swept_routes - swept_before;
    eprintln!(
        "FPM reconnection without nexthop objects: table sent again and swept in {:.1} s: {swept} routes and {} nexthop objects removed",
        t0.elapsed().as_secs_f64(),
        stats.swept_nexthops - nexthops_before
    );
    assert_eq!(
        swept,
        gone.len() as u64,
        "exactly the prefixes zebra deleted meanwhile"
    );
    assert_eq!(rig.count::<Ipv4>(), n4_final);
    assert_eq!(rig.server.session().routes::<Ipv4>().nexthop_count(), 0);
    rig.checkpoint("after the FPM reconnection", &v4_keys, &v6_keys);

    // zebra crashes and is restarted as watchfrr restarts it, with staticd and bgpd (bgpd
    // does not send its routes again to a new zebra), on a kernel table cleared of the
    // dead zebra's routes. lpmkit keeps forwarding meanwhile; after the reconnection it
    // equals the new zebra.
    rig.events.clear();
    for d in ["zebra", "bgpd", "staticd"] {
        rig.lab.kill(d);
    }
    rig.drive("zebra's connection closing", Duration::from_secs(30), |r| {
        r.events.iter().any(|e| matches!(e, FpmEvent::Closed(..)))
    });
    assert_eq!(
        rig.count::<Ipv4>(),
        n4_final,
        "lpmkit keeps its routes while zebra is down"
    );
    rig.lab.flush_zebra_routes().unwrap();
    let t0 = Instant::now();
    let swept_before = rig.server.session().stats().sweeps;
    rig.lab.bgpd_conf(false).unwrap();
    for d in ["zebra", "staticd", "bgpd"] {
        rig.lab.start(d).unwrap();
    }
    rig.drive("zebra's restart", Duration::from_secs(600), |r| {
        r.server.session().stats().sweeps > swept_before
            && r.count::<Ipv4>() == n4_final
            && r.count::<Ipv6>() == n6
    });
    eprintln!(
        "zebra restarted (with staticd and bgpd): lpmkit equal to the new zebra's table {:.1} s later",
        t0.elapsed().as_secs_f64()
    );
    rig.checkpoint("after the zebra restart", &v4_keys, &v6_keys);
    eprintln!("FRR test done in {:.0} s", t_test.elapsed().as_secs_f64());
}

//! Kernel route sync against a real kernel: in a network namespace of its own, the test
//! loads the rrc06 IPv4 table and the LINX IPv6 table with `ip -batch`, follows the
//! `main` table with every registered scheme, replays slices of the update traces as
//! `ip route replace/del`, and after each burst compares every scheme's answers with the
//! kernel's own (`RTM_GETROUTE`) on 10,000 addresses. It manages routes only: no packet
//! is sent.
//!
//! `kernel_changes_without_route_notifications` scripts what the kernel changes without
//! a route notification — interfaces deleted, down and up, carrier lost, nexthop objects
//! and groups created, replaced and deleted — besides bulk loads, random edits,
//! multipath, IPv6 routes of one prefix on two interfaces, another table id and a flush,
//! on synthetic tables (no data needed); after each phase every scheme equals the
//! kernel, the followed routes equal a fresh dump's and reconciliation repairs nothing.
//!
//! Where a namespace cannot be made (no root, no `ip`), it says why and skips — unless
//! `LPMKIT_REQUIRE_NETNS=1` (CI), where that is a failure.
#![cfg(all(feature = "netlink", target_os = "linux"))]

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use lpmkit::netlink::{compare, KernelSync, RouteQuery, SyncOptions, Verdict};
use lpmkit::netlink::{Follower, RouteTarget};
use lpmkit::{registry, traffic, Address, AnyTable, BuildOptions, Change, NextHop, Table};

/// A network namespace, deleted on drop.
struct Netns(String);

impl Netns {
    /// Makes a namespace with `lo` up and a veth pair `v0`/`v1`, or says why it cannot.
    fn new(tag: &str) -> Result<Netns, String> {
        let name = format!("lpmkit-{tag}-{}", std::process::id());
        run(&["ip", "netns", "add", &name])?;
        let ns = Netns(name);
        ns.ip(&["link", "set", "lo", "up"])?;
        ns.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"])?;
        ns.ip(&["link", "set", "v0", "up"])?;
        ns.ip(&["link", "set", "v1", "up"])?;
        Ok(ns)
    }

    fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["ip", "-n", &self.0];
        all.extend_from_slice(args);
        run(&all)
    }

    /// Runs `ip -force -batch -` on `lines`; returns the number of failed commands.
    fn batch(&self, lines: &str) -> usize {
        let mut child = Command::new("ip")
            .args(["-n", &self.0, "-force", "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ip runs");
        // Written from a thread of its own: `ip` reports failed commands on stderr while
        // it reads, and a full stderr pipe would stop it reading.
        let mut stdin = child.stdin.take().unwrap();
        let input = lines.to_string();
        let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().unwrap();
        if let Err(e) = writer.join().unwrap() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(6).collect();
            panic!(
                "`ip -batch` stopped reading ({e}; {}): {tail:?}",
                out.status
            );
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let mut failed = err
            .lines()
            .filter(|l| l.starts_with("Command failed"))
            .count();
        if !out.status.success() && failed == 0 {
            // A line `ip` could not parse ends the batch there.
            failed = 1;
        }
        if failed > 0 {
            let first: Vec<&str> = err.lines().take(4).collect();
            eprintln!("ip -batch: {failed} commands failed, first: {first:?}");
        }
        failed
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run(&["ip", "netns", "del", &self.0]);
    }
}

fn run(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// A namespace, or `None` after saying why (a failure under `LPMKIT_REQUIRE_NETNS`).
fn netns(tag: &str) -> Option<Netns> {
    match Netns::new(tag) {
        Ok(ns) => Some(ns),
        Err(why) => {
            if std::env::var_os("LPMKIT_REQUIRE_NETNS").is_some() {
                panic!("LPMKIT_REQUIRE_NETNS is set but no network namespace: {why}");
            }
            eprintln!(
                "note: skipping the kernel sync test: cannot make a network namespace ({why})"
            );
            None
        }
    }
}

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

/// Every scheme of the family, following the kernel from `rib`.
fn followers<A: Address>(rib: &lpmkit::Rib<A>) -> Vec<Follower<A>> {
    registry::schemes_for(A::FAMILY)
        .map(|info| {
            Follower::new(info, rib.clone(), &BuildOptions::default(), Duration::ZERO)
                .unwrap_or_else(|e| panic!("{}: {e}", info.name))
        })
        .collect()
}

/// Compares every follower, and the sync's own `Rib`, with the kernel on `keys`: every
/// answer (routes through nexthop objects resolved), nine in ten at least comparable
/// (the others answered by another table).
fn check<A: Address>(
    what: &str,
    sync: &KernelSync<A>,
    followers: &mut [Follower<A>],
    query: &mut RouteQuery,
    keys: &[A],
) {
    let answers = query.get_many(keys).expect("RTM_GETROUTE");
    let table = sync.options().table;
    let mut compared = 0;
    let mut skipped = 0;
    let mut bad = Vec::new();
    for (i, (&k, a)) in keys.iter().zip(&answers).enumerate() {
        let ours = sync.rib().lookup(k).and_then(|nh| sync.target(nh));
        match compare(a, ours, table) {
            Verdict::Agree => compared += 1,
            Verdict::Skip => skipped += 1,
            Verdict::Differ => bad.push(format!(
                "key {i} {}: kernel {a:?}, sync {ours:?}",
                lpmkit::prefix::format_addr(k)
            )),
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: the synced Rib differs from the kernel on {} of {} keys:\n{}",
        bad.len(),
        keys.len(),
        bad[..bad.len().min(8)].join("\n")
    );
    assert!(
        compared > keys.len() * 9 / 10,
        "{what}: only {compared} comparable ({skipped} skipped)"
    );
    let mut out = vec![0u32; keys.len()];
    for f in followers.iter_mut() {
        f.reader().lookup_batch(keys, &mut out);
        let mut wrong = 0;
        for ((&k, &o), a) in keys.iter().zip(&out).zip(&answers) {
            let ours = NextHop::new(o).and_then(|nh| sync.target(nh));
            if compare(a, ours, table) == Verdict::Differ {
                wrong += 1;
                if wrong <= 4 {
                    eprintln!(
                        "{what}: {} on {}: kernel {a:?}, scheme {ours:?}",
                        f.name(),
                        lpmkit::prefix::format_addr(k)
                    );
                }
            }
        }
        assert_eq!(
            wrong,
            0,
            "{what}: {} differs from the kernel on {wrong} keys",
            f.name()
        );
    }
    eprintln!(
        "{what}: {} schemes and the synced Rib equal the kernel on {compared} addresses ({skipped} answered by another table)",
        followers.len()
    );
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

// ---------------------------------------------------------------------------------------
// The scenario: what the kernel does without route notifications.

/// Everything following one table of one family: the sync, every scheme of the family,
/// and a query socket.
struct Follow<A: Address> {
    what: String,
    sync: KernelSync<A>,
    followers: Vec<Follower<A>>,
    query: RouteQuery,
    /// Prefixes followed before the current phase (their addresses are checked too: a
    /// route that should be gone must be gone).
    before: lpmkit::Rib<A>,
    /// Differences reconciliation found, over all phases.
    reconciled: usize,
    /// Where the random addresses are drawn (`None`: anywhere): a table the policy rules
    /// consult for one space only is compared there.
    space: Option<lpmkit::Prefix<A>>,
}

impl<A: Address> Follow<A> {
    fn open(what: &str, ns: &Netns, table: u32) -> Self {
        let sync = KernelSync::<A>::open(&SyncOptions {
            netns: Some(ns.0.clone()),
            table,
            ..Default::default()
        })
        .expect("open the sync");
        Follow {
            what: what.to_string(),
            before: sync.rib().clone(),
            followers: Vec::new(),
            query: RouteQuery::open(Some(&ns.0)).unwrap(),
            sync,
            reconciled: 0,
            space: None,
        }
    }

    /// Reads notifications until none came for 300 ms, applies them to every scheme and
    /// publishes.
    fn settle(&mut self) {
        let mut changes: Vec<Change<A>> = Vec::new();
        // The kernel applies a carrier change up to a second after it happened (the
        // link watch's delay): after a link event, quiet means a second and more.
        let mut quiet = Duration::from_millis(300);
        loop {
            let links = self.sync.stats().link_messages;
            let r = self.sync.poll(Some(quiet)).unwrap();
            let link_seen = self.sync.stats().link_messages > links;
            if link_seen {
                quiet = Duration::from_millis(1200);
            }
            if r.is_empty() && !link_seen {
                break;
            }
            changes.extend(r.iter().map(|r| r.change));
        }
        for f in &mut self.followers {
            f.apply(&changes).unwrap();
            f.flush().unwrap();
        }
        if self.followers.is_empty() {
            // Built once the bulk load is followed (an in-place build of a whole table
            // change by change is not what this test measures).
            self.followers = followers(self.sync.rib());
        }
    }

    /// Once quiet: every scheme equals the kernel on 10,000 addresses, the followed
    /// routes equal a fresh dump's (prefix count and every route), and reconciliation
    /// finds nothing to repair.
    fn verify(&mut self, phase: &str, seed: u64) {
        self.settle();
        let what = format!("{} {phase}", self.what);
        let rib = self.sync.rib();
        let mut keys: Vec<A> = traffic::in_routes(rib, 4_000, seed);
        keys.extend(traffic::in_routes(&self.before, 4_000, seed + 1));
        let space = self.space;
        keys.extend(
            traffic::uniform::<A>(10_000 - keys.len(), seed + 2)
                .into_iter()
                .map(|k| match space {
                    Some(p) => A::from_u128(
                        p.first().to_u128()
                            + k.to_u128() % (p.last().to_u128() - p.first().to_u128() + 1),
                    ),
                    None => k,
                }),
        );
        check(
            &what,
            &self.sync,
            &mut self.followers,
            &mut self.query,
            &keys,
        );
        // A fresh dump holds the same routes, in the same order per prefix.
        let fresh = KernelSync::<A>::open(self.sync.options()).expect("a fresh dump");
        assert_eq!(
            fresh.rib().len(),
            self.sync.rib().len(),
            "{what}: prefixes followed vs a fresh dump"
        );
        let routes = |s: &KernelSync<A>| -> HashMap<String, Vec<(u32, RouteTarget)>> {
            let mut m: HashMap<String, Vec<(u32, RouteTarget)>> = HashMap::new();
            for (p, metric, t) in s.routes().iter() {
                m.entry(p.to_string())
                    .or_default()
                    .push((metric, t.clone()));
            }
            m
        };
        let (ours, theirs) = (routes(&self.sync), routes(&fresh));
        let mut bad: Vec<String> = ours
            .iter()
            .filter(|(p, v)| theirs.get(*p) != Some(v))
            .map(|(p, v)| format!("{p}: followed {v:?}, dump {:?}", theirs.get(p)))
            .collect();
        bad.extend(
            theirs
                .iter()
                .filter(|(p, _)| !ours.contains_key(*p))
                .map(|(p, v)| format!("{p}: not followed, dump {v:?}")),
        );
        bad.sort();
        assert!(
            bad.is_empty(),
            "{what}: {} prefixes differ from a fresh dump:\n{}",
            bad.len(),
            bad[..bad.len().min(8)].join("\n")
        );
        let targets = |s: &KernelSync<A>| -> Vec<(String, RouteTarget)> {
            let mut v: Vec<_> = s
                .rib()
                .iter()
                .map(|(p, nh)| (p.to_string(), s.target(nh).unwrap().clone()))
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        assert!(
            targets(&self.sync) == targets(&fresh),
            "{what}: best routes"
        );
        // Reconciliation: a re-dump finds nothing to repair.
        let found = self.sync.reconcile().unwrap();
        self.reconciled += found.len();
        assert!(
            found.is_empty(),
            "{what}: reconciliation found {} prefixes followed wrong: {:?}",
            found.len(),
            &found[..found.len().min(5)]
        );
        eprintln!(
            "{what}: {} prefixes, {} routes, {} nexthop objects; equal to a fresh dump; reconciliation found 0 differences",
            self.sync.rib().len(),
            self.sync.routes().route_count(),
            self.sync.routes().nexthops().count()
        );
        self.before = self.sync.rib().clone();
    }
}

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
    ns.ip(&["link", "add", "v2", "type", "veth", "peer", "name", "v3"])
        .unwrap();
    ns.ip(&["link", "add", "v4", "type", "veth", "peer", "name", "v5"])
        .unwrap();
    for d in ["v2", "v3", "v4", "v5"] {
        ns.ip(&["link", "set", d, "up"]).unwrap();
    }
    // Deterministic IPv6 lookups (no reachability probing of gateways).
    run(&[
        "ip",
        "netns",
        "exec",
        &ns.0,
        "sysctl",
        "-qw",
        "net.ipv6.conf.all.forwarding=1",
    ])
    .unwrap();
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

    // 3. Multipath across interfaces and IPv6 routes of one prefix on two interfaces.
    batch(
        "route add 198.51.100.0/24 nexthop via 192.0.2.1 dev v0 onlink nexthop via 192.0.2.4 dev v4 onlink\n\
         route add 2001:db8:5::/48 nexthop via fe80::1 dev v0 nexthop via fe80::4 dev v4\n\
         route add 2001:db8:77::/48 dev v2\n\
         route append 2001:db8:77::/48 dev v4\n\
         route add 2001:db8:78::/48 dev v4\n\
         route append 2001:db8:78::/48 dev v2\n\
         route add unreachable 203.0.113.0/24\n\
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

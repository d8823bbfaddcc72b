//! Kernel route sync against a real kernel: in a network namespace of its own, the test
//! loads the rrc06 IPv4 table and the LINX IPv6 table with `ip -batch`, follows the
//! `main` table with every registered scheme, replays slices of the update traces as
//! `ip route replace/del`, and after each burst compares every scheme's answers with the
//! kernel's own (`RTM_GETROUTE`) on 10,000 addresses. It manages routes only: no packet
//! is sent.
//!
//! Where a namespace cannot be made (no root, no `ip`), it says why and skips — unless
//! `LPMKIT_REQUIRE_NETNS=1` (CI), where that is a failure.
#![cfg(all(feature = "netlink", target_os = "linux"))]

mod common;

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
        child
            .stdin
            .take()
            .unwrap()
            .write_all(lines.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| l.starts_with("Command failed"))
            .count()
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

/// Compares every follower, and the sync's own `Rib`, with the kernel on `keys`.
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

//! `lpmkit follow` against a real kernel, in network namespaces of its own: what the
//! kernel changes without a route notification when addresses go (an interface's last
//! address, a flush, an address used as a route's source), and a flood of changes while
//! the follower is stopped (`SIGSTOP`) for 3 s (on a slow machine, until its socket has
//! dropped notifications). After each, a check of 50,000 addresses drawn inside the
//! followed routes (and 12,500 uniform ones) agrees with the kernel's answers, and the
//! end-of-run comparison with a fresh dump counts 0 differences. Also: IPv6 routes
//! checked the same way after their interfaces' addresses go; a check with no comparable
//! answer fails; a slow `--churn` ends at once (at `--duration` and at Ctrl-C).
//!
//! Where a namespace cannot be made (no root, no `ip`), it says why and skips — unless
//! `LPMKIT_REQUIRE_NETNS=1` (CI), where that is a failure.
#![cfg(target_os = "linux")]

#[allow(dead_code)]
#[path = "../../lpmkit/tests/netlink/ns.rs"]
mod ns;

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ns::{netns, Netns};

/// The longest a follower may take to reach a line the test waits for.
const PATIENCE: Duration = Duration::from_secs(120);

/// `lpmkit follow` running in the background, its standard output collected by line.
struct Following {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    reader: std::thread::JoinHandle<()>,
}

impl Following {
    /// `lpmkit follow --netns NS` with `args`.
    fn start(ns: &Netns, args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
            .args(["follow", "--netns", &ns.0])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the lpmkit binary runs");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let out = BufReader::new(child.stdout.take().unwrap());
        let sink = Arc::clone(&lines);
        let reader = std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Following {
            child,
            lines,
            reader,
        }
    }

    fn pid(&self) -> libc::pid_t {
        self.child.id() as libc::pid_t
    }

    /// Lines starting with `prefix` so far.
    fn count(&self, prefix: &str) -> usize {
        let lines = self.lines.lock().unwrap();
        lines.iter().filter(|l| l.starts_with(prefix)).count()
    }

    /// Waits until `n` lines start with `prefix`.
    fn wait_for(&self, prefix: &str, n: usize) {
        let t0 = Instant::now();
        while self.count(prefix) < n {
            assert!(
                t0.elapsed() < PATIENCE,
                "no {n} lines {prefix:?} after {PATIENCE:?}: {:#?}",
                self.lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until a line printed so far satisfies `pred`.
    fn wait_for_line(&self, pred: impl Fn(&str) -> bool) {
        let t0 = Instant::now();
        while !self.lines.lock().unwrap().iter().any(|l| pred(l)) {
            assert!(
                t0.elapsed() < PATIENCE,
                "no line awaited after {PATIENCE:?}: {:#?}",
                self.lines.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Ctrl-C; the exit status and every line printed.
    fn stop(self) -> (ExitStatus, Vec<String>) {
        signal(self.pid(), libc::SIGINT);
        self.finish()
    }

    /// Waits for the end; the exit status and every line printed.
    fn finish(mut self) -> (ExitStatus, Vec<String>) {
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if t0.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!("follow did not end: {:#?}", self.lines.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.reader.join().unwrap();
        let lines = std::mem::take(&mut *self.lines.lock().unwrap());
        (status, lines)
    }
}

fn signal(pid: libc::pid_t, sig: libc::c_int) {
    // SAFETY: kill(2) on the child this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// The number in `line` just before `word` (`"… 3 re-dumps"`, `word` = `"re-dumps"`).
fn number_before(line: &str, word: &str) -> Option<u64> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_end_matches([',', ';']) == word)?;
    words.get(at.checked_sub(1)?)?.parse().ok()
}

/// A run that agreed with the kernel: exit status 0, every check's answers equal (50,000
/// addresses inside the routes each), at least `checks` checks, the table equal to a
/// fresh dump.
fn assert_exact(what: &str, status: ExitStatus, lines: &[String], checks: usize) {
    let all = lines.join("\n");
    assert!(status.success(), "{what}: {status}\n{all}");
    let check_lines: Vec<&String> = lines.iter().filter(|l| l.starts_with("check ")).collect();
    assert!(check_lines.len() >= checks, "{what}: {all}");
    for l in &check_lines {
        assert!(
            l.contains("(50000 inside the followed routes, 12500 uniform)")
                && l.ends_with(", 0 differ")
                && number_before(l, "of").is_some_and(|agree| agree > 50_000),
            "{what}: {l}"
        );
    }
    let summary = lines
        .iter()
        .find(|l| l.starts_with("checks against the kernel:"))
        .unwrap_or_else(|| panic!("{what}: no summary\n{all}"));
    assert!(
        summary.contains(", 0 mismatching answers"),
        "{what}: {summary}"
    );
    let dump = lines
        .iter()
        .find(|l| l.starts_with("compared with a fresh dump of table"))
        .unwrap_or_else(|| panic!("{what}: no comparison with a dump\n{all}"));
    assert!(
        dump.contains(" 0 differ (0 in their best route), 0 nexthop objects differ"),
        "{what}: {dump}"
    );
    eprintln!("{what}: {} checks agree; {dump}", check_lines.len());
    for l in &check_lines {
        eprintln!("  {l}");
    }
}

/// Schemes followed: one updated in place, one rebuilt.
const SCHEMES: &str = "d18r,dir24-8";

/// A follower checking 50,000 addresses inside the routes after each burst.
fn checking(ns: &Netns) -> Following {
    Following::start(
        ns,
        &["-s", SCHEMES, "--check", "50000", "--quiet-ms", "300"],
    )
}

/// Runs `change` once the follower has checked the table, waits for the check after it,
/// stops the follower and asserts that it agreed with the kernel throughout.
fn follow_through(what: &str, ns: &Netns, change: impl FnOnce()) {
    let f = checking(ns);
    f.wait_for("check ", 2);
    change();
    f.wait_for("check ", 4);
    let (status, lines) = f.stop();
    assert_exact(what, status, &lines, 4);
}

/// The /8s the address tests route (not the ones of their interfaces' addresses).
fn slash8s() -> impl Iterator<Item = u32> {
    (1..=223).filter(|x| ![10, 100, 127, 192, 198, 203].contains(x))
}

/// 221 routes via the gateway of v0's first address, the reproduction; and, what
/// the address events leave alone, an interface v2 with an address of its own and 64
/// routes through it.
fn routes_via_v0(ns: &Netns) -> String {
    ns.veths_and_ipv6_forwarding(&[("v2", "v3")]);
    let mut lines = String::from("addr add 203.0.113.10/24 dev v2\n");
    for x in slash8s() {
        lines.push_str(&format!("route add {x}.0.0.0/8 via 192.0.2.1 dev v0\n"));
    }
    for i in 0..64 {
        lines.push_str(&format!(
            "route add 100.{}.0.0/16 via 203.0.113.1 dev v2\n",
            64 + i
        ));
    }
    lines
}

#[test]
fn last_address_removed() {
    let Some(ns) = netns("flast") else { return };
    let mut lines = String::from("addr add 192.0.2.10/24 dev v0\n");
    lines.push_str(&routes_via_v0(&ns));
    // The kernel's own lookup refuses a scope-host route out of an interface without an
    // address (EINVAL); not comparable, never a difference.
    lines.push_str("route add 10.0.0.0/12 dev v1 scope host\n");
    assert_eq!(ns.batch(&lines), 0);
    follow_through("last address removed", &ns, || {
        ns.ip(&["addr", "del", "192.0.2.10/24", "dev", "v0"])
            .unwrap();
    });
}

#[test]
fn address_flush() {
    let Some(ns) = netns("fflush") else { return };
    let mut lines = String::from(
        "addr add 192.0.2.10/24 dev v0\n\
         addr add 192.0.2.11/24 dev v0\n\
         addr add 198.51.100.10/24 dev v0\n\
         route add 198.18.0.0/15 via 198.51.100.1 dev v0\n",
    );
    lines.push_str(&routes_via_v0(&ns));
    assert_eq!(ns.batch(&lines), 0);
    follow_through("address flush", &ns, || {
        ns.ip(&["addr", "flush", "dev", "v0"]).unwrap();
    });
}

#[test]
fn source_address_removed() {
    let Some(ns) = netns("fsrc") else { return };
    ns.veths_and_ipv6_forwarding(&[("v2", "v3")]);
    let mut lines = String::from(
        "addr add 192.0.2.10/24 dev v0\n\
         addr add 192.0.2.11/24 dev v0\n\
         addr add 203.0.113.10/24 dev v2\n",
    );
    // Every other route names the secondary address as its source.
    for x in slash8s() {
        let src = if x % 2 == 0 { " src 192.0.2.11" } else { "" };
        lines.push_str(&format!(
            "route add {x}.0.0.0/8 via 203.0.113.1 dev v2{src}\n"
        ));
    }
    assert_eq!(ns.batch(&lines), 0);
    follow_through("source address removed", &ns, || {
        ns.ip(&["addr", "del", "192.0.2.11/24", "dev", "v0"])
            .unwrap();
    });
}

#[test]
fn ipv6_addresses_removed() {
    let Some(ns) = netns("fv6") else { return };
    ns.veths_and_ipv6_forwarding(&[("v2", "v3")]);
    let mut lines = String::from(
        "addr add 2001:db8:1::10/64 dev v0 nodad\n\
         addr add 2001:db8:2::10/64 dev v2 nodad\n",
    );
    // Routes through both interfaces, with and without a gateway or a source; blackholes.
    for i in 0..200 {
        let prefix = format!("2001:db8:{:x}::/48", 0x100 + i);
        lines.push_str(&match i % 4 {
            0 => format!("route add {prefix} via 2001:db8:1::1 dev v0\n"),
            1 => format!("route add {prefix} via 2001:db8:2::1 dev v2 src 2001:db8:2::10\n"),
            2 => format!("route add {prefix} dev v0\n"),
            _ => format!("route add blackhole {prefix}\n"),
        });
    }
    assert_eq!(ns.batch(&lines), 0);
    let f = Following::start(
        &ns,
        &[
            "--family",
            "v6",
            "-s",
            "poptrie16,dir24-8",
            "--check",
            "50000",
            "--quiet-ms",
            "300",
        ],
    );
    f.wait_for("check ", 2);
    ns.ip(&["addr", "flush", "dev", "v2"]).unwrap();
    ns.ip(&["addr", "del", "2001:db8:1::10/64", "dev", "v0"])
        .unwrap();
    f.wait_for("check ", 4);
    let (status, lines) = f.stop();
    assert_exact("IPv6 addresses removed", status, &lines, 4);
}

/// A flood of `n` changes over 30,000 /24s: most replace the route (a gateway, or a
/// blackhole), some delete it (`-force` goes past deletes of absent routes).
fn flood(n: usize, seed: u64) -> String {
    let mut x = seed;
    let mut next = move |below: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % below
    };
    let mut s = String::with_capacity(n * 48);
    for _ in 0..n {
        let p = next(30_000);
        let prefix = format!("{}.{}.{}.0/24", 10 + (p >> 16), (p >> 8) & 255, p & 255);
        let line = match next(10) {
            0..=5 => format!(
                "route replace {prefix} via 192.0.2.{} dev v0 onlink\n",
                next(250) + 1
            ),
            6..=8 => format!("route del {prefix}\n"),
            _ => format!("route replace blackhole {prefix}\n"),
        };
        s.push_str(&line);
    }
    s
}

/// Notifications the kernel dropped on the route sockets of `ns` (their buffers full):
/// the `Drops` column of its `/proc/net/netlink`.
fn netlink_drops(ns: &Netns) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", &ns.0, "cat", "/proc/net/netlink"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode; Eth 0: NETLINK_ROUTE.
            (f.len() >= 10 && f[1] == "0").then(|| f[8].parse::<u64>().unwrap_or(0))
        })
        .sum()
}

#[test]
fn flood_with_the_follower_stopped() {
    let Some(ns) = netns("fstop") else { return };
    ns.batch(&flood(40_000, 1));
    let f = checking(&ns);
    f.wait_for("check ", 2);
    let lines = flood(600_000, 2);
    let t0 = Instant::now();
    let (stopped_s, dropped) = std::thread::scope(|s| {
        let writer = s.spawn(|| ns.batch(&lines));
        // Stopped during the flood (3 s, and on a slow machine until its socket's buffer
        // overflowed): the re-dump after it races what remains of the flood.
        std::thread::sleep(Duration::from_secs(1));
        signal(f.pid(), libc::SIGSTOP);
        std::thread::sleep(Duration::from_secs(3));
        let stopped = Instant::now();
        while netlink_drops(&ns) == 0 && !writer.is_finished() && stopped.elapsed() < PATIENCE {
            std::thread::sleep(Duration::from_millis(100));
        }
        let dropped = netlink_drops(&ns);
        signal(f.pid(), libc::SIGCONT);
        writer.join().unwrap();
        (3.0 + stopped.elapsed().as_secs_f64(), dropped)
    });
    let flood_s = t0.elapsed().as_secs_f64();
    f.wait_for("check ", 4);
    let (status, lines) = f.stop();
    assert_exact("flood, the follower stopped", status, &lines, 4);
    let summary = lines
        .iter()
        .find(|l| l.starts_with("followed "))
        .expect("the summary");
    let redumps = number_before(summary, "re-dumps").unwrap();
    assert!(redumps >= 1, "notifications were lost: {summary}");
    eprintln!(
        "flood of 600,000 changes in {flood_s:.1} s, the follower stopped {stopped_s:.1} s \
         ({dropped} notifications dropped); {summary}"
    );
}

#[test]
fn a_check_with_no_comparable_answer_fails() {
    let Some(ns) = netns("fvac") else { return };
    // Table 100 has routes, but no rule sends an address to it: main's default route
    // answers every one.
    assert_eq!(
        ns.batch(
            "route add default via 192.0.2.1 dev v0 onlink\n\
             route add 198.18.0.0/15 via 192.0.2.2 dev v0 onlink table 100\n"
        ),
        0
    );
    let f = Following::start(
        &ns,
        &[
            "-s",
            "d18r",
            "--table-id",
            "100",
            "--check",
            "1000",
            "--duration",
            "2",
        ],
    );
    let (status, lines) = f.finish();
    let all = lines.join("\n");
    assert_eq!(status.code(), Some(1), "{all}");
    assert!(
        all.contains("no answer was comparable") && all.contains("1 with no comparable answer"),
        "{all}"
    );
}

#[test]
fn a_slow_churn_ends_with_the_run() {
    let Some(ns) = netns("fchurn") else { return };
    let dir = std::env::temp_dir().join(format!("lpmkit-follow-churn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.txt");
    std::fs::write(
        &trace,
        "1 A 10.0.0.0/8 192.0.2.1\n2 A 11.0.0.0/8 192.0.2.2\n3 W 10.0.0.0/8 -\n",
    )
    .unwrap();
    // One change every 50 s, the run 1 s long: it ends at once. Without --changes it
    // plans memory for the trace's 3 changes, well under an address-space limit.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lpmkit"));
    cmd.args(["follow", "--netns", &ns.0, "-s", "d18r", "--churn"])
        .arg(&trace)
        .args(["--rate", "0.02", "--duration", "1"]);
    // SAFETY: between fork and exec only setrlimit runs (async-signal-safe).
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1 << 30,
                rlim_max: 1 << 30,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let t0 = Instant::now();
    let out = cmd.output().unwrap();
    let took = t0.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("churn: 1 changes sent"), "{text}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    // A run of 100 s ends at Ctrl-C as soon, once it is following (its first line of
    // the second).
    let f = Following::start(
        &ns,
        &["-s", "d18r", "--churn", trace.to_str().unwrap()]
            .into_iter()
            .chain(["--rate", "0.02", "--duration", "100"])
            .collect::<Vec<_>>(),
    );
    f.wait_for_line(|l| l.contains(" s  +"));
    let t0 = Instant::now();
    let (status, lines) = f.stop();
    let took = t0.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    let all = lines.join("\n");
    assert!(status.success(), "{status}: {all}");
    assert!(all.contains("churn: 1 changes sent"), "{all}");
    assert!(
        took < Duration::from_secs(5),
        "Ctrl-C took {took:?} to end it"
    );
    eprintln!("a churn of one change per 50 s: --duration 1 ended it, Ctrl-C after {took:.1?}");
}

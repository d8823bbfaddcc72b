//! `lpmkit follow --fpm`: fed zebra's captured stream over TCP by the test (no FRR needed),
//! with a bad frame that drops the connection and a reconnection that sweeps; and, as
//! root with FRR installed, against a real zebra and staticd in a network namespace,
//! checked against zebra's own answers (`--check`, through vtysh). Where FRR cannot run
//! it says why and skips that part — unless `LPMKIT_REQUIRE_FRR=1` (CI).
#![cfg(target_os = "linux")]

#[allow(dead_code)]
#[path = "../../lpmkit/tests/frr/lab.rs"]
mod lab;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const WALK_AND_UPDATES: &[u8] =
    include_bytes!("../../lpmkit/tests/fpm-captures/zebra-8.4-walk-and-updates.fpm");
const RECONNECT: &[u8] = include_bytes!("../../lpmkit/tests/fpm-captures/zebra-8.4-reconnect.fpm");

/// `lpmkit follow` with `args`, its standard output read line by line.
struct Following {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Following {
    fn start(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
            .arg("follow")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("lpmkit runs");
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines().map_while(Result::ok) {
                eprintln!("follow: {l}");
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Following {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line containing `text`; returns it.
    fn wait_for(&mut self, text: &str) -> String {
        loop {
            match self.lines.recv_timeout(Duration::from_secs(60)) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(text) {
                        return l;
                    }
                }
                Err(_) => panic!("no line with {text:?}; lines: {:#?}", self.seen),
            }
        }
    }

    /// Waits for the end; its exit code and every line printed.
    fn finish(mut self) -> (i32, Vec<String>) {
        let status = self.child.wait().unwrap();
        self.seen.extend(self.lines.iter());
        (status.code().unwrap_or(-1), self.seen)
    }
}

#[test]
fn follow_fpm_over_tcp() {
    let mut f = Following::start(&[
        "--fpm",
        "127.0.0.1:0",
        "-s",
        "d18r,spider16w",
        "--sweep-ms",
        "300",
        "--duration",
        "5",
    ]);
    let first = f.wait_for("listening for zebra's FPM connection on ");
    let addr = first
        .split("connection on ")
        .nth(1)
        .and_then(|r| {
            r.split(':')
                .nth(1)
                .map(|p| p.split_whitespace().next().unwrap())
        })
        .map(|port| format!("127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("no address in {first:?}"));
    let mut zebra = TcpStream::connect(&addr).unwrap();
    zebra.write_all(WALK_AND_UPDATES).unwrap();
    f.wait_for("zebra connected from");
    // A frame of version 3: the connection is dropped, the routes stay.
    zebra.write_all(&[3, 1, 0, 8, 0, 0, 0, 0]).unwrap();
    let dropped = f.wait_for("dropped zebra's connection");
    assert!(dropped.contains("offset 2284"), "{dropped}");
    // zebra connects again and sends its table.
    let mut again = TcpStream::connect(&addr).unwrap();
    again.write_all(RECONNECT).unwrap();
    f.wait_for("swept 0 IPv4 and 0 IPv6 routes");
    let (code, lines) = f.finish();
    assert_eq!(code, 0, "{lines:#?}");
    let summary = lines
        .iter()
        .find(|l| l.starts_with("followed zebra"))
        .unwrap_or_else(|| panic!("no summary: {lines:#?}"));
    assert!(
        summary.contains("2 connections (1 dropped for bad input)")
            && summary.ends_with("; 6 prefixes"),
        "{summary}"
    );
    for scheme in ["d18r", "spider16w"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(scheme) && l.contains("publications")),
            "{scheme}: {lines:#?}"
        );
    }
}

/// zebra and staticd in a namespace, or `None` after saying why not.
fn lab_with_zebra() -> Option<lab::Lab> {
    let why = match lab::missing() {
        None => match lab::Lab::new(&[
            "ip route 192.0.2.0/24 10.0.0.7",
            "ip route 203.0.113.0/24 10.0.0.3",
            "ip route 203.0.113.0/24 10.0.0.4",
            "ip route 198.51.100.0/24 blackhole",
            "ip route 100.64.0.0/10 reject",
            "ipv6 route 2001:db8:1::/48 fd00::3",
            "ipv6 route 2001:db8:1::/48 fd00::4",
            "ipv6 route 2001:db8:2::/48 blackhole",
        ]) {
            Ok(l) => return Some(l),
            Err(e) => e,
        },
        Some(why) => why,
    };
    if std::env::var_os("LPMKIT_REQUIRE_FRR").is_some() {
        panic!("LPMKIT_REQUIRE_FRR is set but zebra cannot run: {why}");
    }
    eprintln!("note: skipping follow --fpm against zebra: {why}");
    None
}

#[test]
fn follow_fpm_against_zebra() {
    let Some(mut lab) = lab_with_zebra() else {
        return;
    };
    let vtysh = lab.vtysh_command().join(" ");
    for family in ["v4", "v6"] {
        let port = format!("127.0.0.1:{}", lab::FPM_PORT);
        let mut f = Following::start(&[
            "--fpm",
            &port,
            "--netns",
            &lab.router,
            "--family",
            family,
            "-s",
            "obma-b,spider16w",
            "--check",
            "2000",
            "--quiet-ms",
            "1000",
            "--vtysh",
            &vtysh,
            "--duration",
            "12",
        ]);
        f.wait_for("listening for zebra's FPM connection");
        if family == "v4" {
            lab.start("zebra").unwrap();
            lab.start("staticd").unwrap();
        } else {
            // zebra connects again 3 s after losing its connection.
        }
        f.wait_for("zebra connected from");
        let check = f.wait_for("check obma-b:");
        assert!(check.ends_with(" 0 differ"), "{check}");
        let (code, lines) = f.finish();
        assert_eq!(code, 0, "{family}: {lines:#?}");
        let checks = lines
            .iter()
            .find(|l| l.starts_with("checks against zebra:"))
            .unwrap_or_else(|| panic!("{lines:#?}"));
        assert!(checks.contains(" 0 mismatching answers"), "{checks}");
        let compared = lines
            .iter()
            .find(|l| l.starts_with("compared with zebra's FIB"))
            .unwrap_or_else(|| panic!("{lines:#?}"));
        let want = if family == "v4" {
            "5 prefixes followed, 5 in"
        } else {
            "4 prefixes followed, 4 in"
        };
        assert!(compared.contains(want), "{compared}");
    }
}

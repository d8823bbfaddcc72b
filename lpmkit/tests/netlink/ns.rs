//! Network namespaces for the kernel tests, and `ip` run in them.

use std::io::Write;
use std::process::{Command, Stdio};

/// A network namespace, deleted on drop.
pub struct Netns(pub String);

impl Netns {
    /// Makes a namespace with `lo` up and a veth pair `v0`/`v1`, or says why it cannot.
    pub fn new(tag: &str) -> Result<Netns, String> {
        let name = format!("lpmkit-{tag}-{}", std::process::id());
        run(&["ip", "netns", "add", &name])?;
        let ns = Netns(name);
        ns.ip(&["link", "set", "lo", "up"])?;
        ns.ip(&["link", "add", "v0", "type", "veth", "peer", "name", "v1"])?;
        ns.ip(&["link", "set", "v0", "up"])?;
        ns.ip(&["link", "set", "v1", "up"])?;
        Ok(ns)
    }

    /// Adds veth pairs (`a` with peer `b`) and sets every end up; turns IPv6
    /// forwarding on, for deterministic IPv6 lookups (no reachability probing of
    /// gateways).
    pub fn veths_and_ipv6_forwarding(&self, pairs: &[(&str, &str)]) {
        for (a, b) in pairs {
            self.ip(&["link", "add", a, "type", "veth", "peer", "name", b])
                .unwrap();
            for d in [a, b] {
                self.ip(&["link", "set", d, "up"]).unwrap();
            }
        }
        run(&[
            "ip",
            "netns",
            "exec",
            &self.0,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.forwarding=1",
        ])
        .unwrap();
    }

    pub fn ip(&self, args: &[&str]) -> Result<(), String> {
        let mut all = vec!["ip", "-n", &self.0];
        all.extend_from_slice(args);
        run(&all)
    }

    /// Runs `ip -force -batch -` on `lines`; returns the number of failed commands.
    pub fn batch(&self, lines: &str) -> usize {
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

pub fn run(args: &[&str]) -> Result<(), String> {
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
pub fn netns(tag: &str) -> Option<Netns> {
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

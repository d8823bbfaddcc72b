//! The routing lab of the FRR test: two network namespaces joined by a veth pair — the
//! router (zebra with `dplane_fpm_nl`, staticd, bgpd) and the speaker (gobgpd) — with FRR
//! in a path space of its own (`-N`), so that nothing of the machine's FRR is touched.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The router's addresses and the speaker's on their link.
pub const ROUTER_V4: &str = "10.0.0.1";
pub const SPEAKER_V4: &str = "10.0.0.2";
/// The port lpmkit's FPM server listens on in the router's namespace (zebra's default).
pub const FPM_PORT: u16 = 2620;

/// What the lab needs that a machine may lack, or `None`.
pub fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    for bin in [
        "/usr/lib/frr/zebra",
        "/usr/lib/frr/staticd",
        "/usr/lib/frr/bgpd",
        "/usr/bin/vtysh",
        "/usr/bin/gobgpd",
        "/usr/bin/gobgp",
        "/usr/bin/python3",
    ] {
        if !Path::new(bin).exists() {
            return Some(format!("no {bin} (Debian packages frr, gobgpd, python3)"));
        }
    }
    let grpc = Command::new("/usr/bin/python3")
        .args(["-c", "import grpc"])
        .output();
    if !grpc.is_ok_and(|o| o.status.success()) {
        return Some("no grpcio for /usr/bin/python3 (Debian package python3-grpcio)".into());
    }
    if !Command::new("id")
        .arg("frr")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some("no user frr".into());
    }
    None
}

/// Runs a command; its standard output, or why it failed.
pub fn run(args: &[&str]) -> Result<String, String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("cannot run {}: {e}", args[0]))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The lab; everything it started is stopped and removed on drop.
pub struct Lab {
    /// The router's namespace (zebra, bgpd, staticd, lpmkit's FPM server).
    pub router: String,
    /// The speaker's namespace (gobgpd).
    pub speaker: String,
    /// FRR's path space, and its directory under /var/run/frr.
    pub name: String,
    pub dir: PathBuf,
    daemons: Vec<(&'static str, Child)>,
}

impl Lab {
    /// The namespaces, their link and FRR's directory with the configurations; no daemon
    /// runs yet. `statics` are staticd's configuration lines.
    pub fn new(statics: &[&str]) -> Result<Lab, String> {
        let id = std::process::id();
        let lab = Lab {
            router: format!("lpmkit-frr-r{id}"),
            speaker: format!("lpmkit-frr-s{id}"),
            name: format!("lpmkit-frr-{id}"),
            dir: PathBuf::from(format!("/var/run/frr/lpmkit-frr-{id}")),
            daemons: Vec::new(),
        };
        run(&["ip", "netns", "add", &lab.router])?;
        run(&["ip", "netns", "add", &lab.speaker])?;
        for ns in [&lab.router, &lab.speaker] {
            run(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        }
        run(&[
            "ip",
            "link",
            "add",
            "r0",
            "netns",
            &lab.router,
            "type",
            "veth",
            "peer",
            "name",
            "s0",
            "netns",
            &lab.speaker,
        ])?;
        for (ns, dev, v4, v6) in [
            (&lab.router, "r0", ROUTER_V4, "fd00::1"),
            (&lab.speaker, "s0", SPEAKER_V4, "fd00::2"),
        ] {
            run(&["ip", "-n", ns, "link", "set", dev, "up"])?;
            run(&[
                "ip",
                "-n",
                ns,
                "addr",
                "add",
                &format!("{v4}/16"),
                "dev",
                dev,
            ])?;
            run(&[
                "ip",
                "-n",
                ns,
                "addr",
                "add",
                &format!("{v6}/64"),
                "dev",
                dev,
                "nodad",
            ])?;
        }
        std::fs::create_dir_all(&lab.dir).map_err(|e| format!("{}: {e}", lab.dir.display()))?;
        let log = |d: &str| format!("log file {}/{d}.log\n", lab.dir.display());
        let mut staticd = log("staticd");
        for s in statics {
            staticd.push_str(s);
            staticd.push('\n');
        }
        let files = [
            (
                "zebra.conf",
                format!("{}fpm address 127.0.0.1 port {FPM_PORT}\n", log("zebra")),
            ),
            ("staticd.conf", staticd),
            (
                "gobgpd.toml",
                format!(
                    "[global.config]\n  as = 65002\n  router-id = \"{SPEAKER_V4}\"\n\
                     [[neighbors]]\n  [neighbors.config]\n    neighbor-address = \"{ROUTER_V4}\"\n\
                     peer-as = 65001\n  [neighbors.timers.config]\n    connect-retry = 1\n\
                     [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n\
                     afi-safi-name = \"ipv4-unicast\"\n  [[neighbors.afi-safis]]\n\
                     [neighbors.afi-safis.config]\n      afi-safi-name = \"ipv6-unicast\"\n"
                ),
            ),
        ];
        for (f, text) in files {
            std::fs::write(lab.dir.join(f), text).map_err(|e| format!("{f}: {e}"))?;
        }
        lab.bgpd_conf(true)?;
        run(&["chown", "-R", "frr:frr", &lab.dir.display().to_string()])?;
        Ok(lab)
    }

    /// Writes bgpd's configuration: the eBGP session with gobgpd (administratively down
    /// with `shutdown`), nothing advertised back to it.
    pub fn bgpd_conf(&self, shutdown: bool) -> Result<(), String> {
        let text = format!(
            "log file {}/bgpd.log\n\
             route-map NONE deny 10\n\
             router bgp 65001\n bgp router-id {ROUTER_V4}\n no bgp ebgp-requires-policy\n\
             no bgp network import-check\n neighbor {SPEAKER_V4} remote-as 65002\n\
             neighbor {SPEAKER_V4} timers connect 1\n{}\
             address-family ipv4 unicast\n  neighbor {SPEAKER_V4} route-map NONE out\n\
             exit-address-family\n address-family ipv6 unicast\n\
             neighbor {SPEAKER_V4} activate\n  neighbor {SPEAKER_V4} route-map NONE out\n\
             exit-address-family\n",
            self.dir.display(),
            if shutdown {
                format!(" neighbor {SPEAKER_V4} shutdown\n")
            } else {
                String::new()
            }
        );
        let path = self.dir.join("bgpd.conf");
        std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        run(&["chown", "frr:frr", &path.display().to_string()]).map(|_| ())
    }

    fn conf(&self, f: &str) -> String {
        self.dir.join(f).display().to_string()
    }

    /// Starts an FRR daemon in the router's namespace, in the foreground (its pid is the
    /// child's: `ip netns exec` execs it).
    pub fn start(&mut self, daemon: &'static str) -> Result<(), String> {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.router])
            .arg(format!("/usr/lib/frr/{daemon}"))
            .args(["-N", &self.name, "-u", "frr", "-g", "frr"])
            .args(["-f", &self.conf(&format!("{daemon}.conf"))])
            .args(["-i", &self.conf(&format!("{daemon}.pid"))]);
        if daemon == "zebra" {
            cmd.args(["-M", "dplane_fpm_nl"]);
        }
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {daemon}: {e}"))?;
        self.daemons.push((daemon, child));
        Ok(())
    }

    /// Starts gobgpd in the speaker's namespace.
    pub fn start_gobgpd(&mut self) -> Result<(), String> {
        let child = Command::new("ip")
            .args(["netns", "exec", &self.speaker, "/usr/bin/gobgpd"])
            .args(["-f", &self.conf("gobgpd.toml"), "-l", "error"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start gobgpd: {e}"))?;
        self.daemons.push(("gobgpd", child));
        Ok(())
    }

    /// Kills `daemon` (SIGKILL: a crash) and reaps it.
    pub fn kill(&mut self, daemon: &str) {
        if let Some(i) = self.daemons.iter().position(|(d, _)| *d == daemon) {
            let (_, mut child) = self.daemons.remove(i);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Runs vtysh commands against this lab's daemons; their output.
    pub fn vtysh(&self, commands: &[&str]) -> Result<String, String> {
        let mut args = vec!["vtysh", "-N", &self.name];
        for c in commands {
            args.extend(["-c", c]);
        }
        run(&args)
    }

    /// Removes from the router's kernel tables what a dead zebra left there (its routes
    /// and nexthop objects), so that a new zebra starts from the connected routes alone.
    pub fn flush_zebra_routes(&self) -> Result<(), String> {
        // The nexthop objects first: deleting one deletes the routes through it. Then the
        // routes without one (blackholes); `ip route flush` fails when nothing is left.
        run(&["ip", "-n", &self.router, "nexthop", "flush"])?;
        for family in ["-4", "-6"] {
            for proto in ["bgp", "static"] {
                let _ = run(&[
                    "ip",
                    family,
                    "-n",
                    &self.router,
                    "route",
                    "flush",
                    "proto",
                    proto,
                ]);
                let left = run(&[
                    "ip",
                    family,
                    "-n",
                    &self.router,
                    "route",
                    "show",
                    "proto",
                    proto,
                ])?;
                if !left.trim().is_empty() {
                    return Err(format!("routes of proto {proto} left: {left}"));
                }
            }
        }
        Ok(())
    }

    /// vtysh's command line for [`lpmkit::fpm::ZebraQuery`].
    pub fn vtysh_command(&self) -> Vec<String> {
        vec!["vtysh".into(), "-N".into(), self.name.clone()]
    }

    /// Runs `gobgp` against gobgpd.
    pub fn gobgp(&self, args: &[&str]) -> Result<String, String> {
        let mut all = vec!["ip", "netns", "exec", &self.speaker, "/usr/bin/gobgp"];
        all.extend_from_slice(args);
        run(&all)
    }

    /// A JSON command's answer.
    pub fn vtysh_json(&self, command: &str) -> Result<serde_json::Value, String> {
        let text = self.vtysh(&[command])?;
        serde_json::from_str(&text).map_err(|e| format!("{command}: {e}: {text}"))
    }

    /// The BGP session's state (`Established`, `Idle`, …).
    pub fn session(&self) -> Result<String, String> {
        let v = self.vtysh_json(&format!("show bgp neighbors {SPEAKER_V4} json"))?;
        Ok(v[SPEAKER_V4]["bgpState"].as_str().unwrap_or("").to_string())
    }

    /// zebra's count of routes in its FIB for `ip` (`ip` or `ipv6`), every protocol.
    pub fn fib_count(&self, ip: &str) -> Result<usize, String> {
        let v = self.vtysh_json(&format!("show {ip} route summary json"))?;
        v["routesTotalFib"]
            .as_u64()
            .map(|n| n as usize)
            .ok_or_else(|| format!("no routesTotalFib in {v}"))
    }

    /// The feeder of gobgpd's RIB (`gobgp_feed.py`).
    pub fn feeder(&self) -> Result<Feeder, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/frr/gobgp_feed.py");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &self.speaker, "/usr/bin/python3"])
            .arg(&script)
            .arg("127.0.0.1:50051")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the feeder: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().map(BufReader::new);
        Ok(Feeder {
            child,
            stdin,
            stdout,
        })
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for (_, c) in &mut self.daemons {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = run(&["ip", "netns", "del", &self.router]);
        let _ = run(&["ip", "netns", "del", &self.speaker]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// gobgp_feed.py, fed lines `A PREFIX NEXTHOP` / `W PREFIX` (see the script).
pub struct Feeder {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Option<BufReader<ChildStdout>>,
}

impl Feeder {
    /// Sends `lines` from a thread of its own (the caller keeps reading zebra meanwhile),
    /// then a `sync`; [`wait`](Self::wait) for gobgpd to have taken them.
    pub fn send(&mut self, lines: String) -> std::thread::JoinHandle<std::io::Result<ChildStdin>> {
        let mut stdin = self.stdin.take().expect("one send at a time");
        std::thread::spawn(move || {
            stdin.write_all(lines.as_bytes())?;
            stdin.write_all(b"sync\n")?;
            stdin.flush()?;
            Ok(stdin)
        })
    }

    /// Waits for the `sync` after a [`send`](Self::send) (taking its stdin back); returns
    /// the lines gobgpd has taken in all, and how long it waited.
    pub fn wait(
        &mut self,
        sent: std::thread::JoinHandle<std::io::Result<ChildStdin>>,
    ) -> Result<(u64, Duration), String> {
        let t0 = Instant::now();
        let stdin = sent
            .join()
            .map_err(|_| "the feeding thread panicked".to_string())?
            .map_err(|e| format!("feeding gobgpd: {e}"))?;
        self.stdin = Some(stdin);
        let mut line = String::new();
        let out = self.stdout.as_mut().expect("stdout");
        out.read_line(&mut line)
            .map_err(|e| format!("the feeder: {e}"))?;
        let n = line
            .trim()
            .strip_prefix("synced ")
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("the feeder said {line:?}"))?;
        Ok((n, t0.elapsed()))
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

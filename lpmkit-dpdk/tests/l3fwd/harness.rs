#![allow(dead_code)] // shared with the forwarding-rate example, which uses other parts
//! Running DPDK's l3fwd: its binary (built by `lpmkit-dpdk/scripts/build-l3fwd.sh`, named
//! by `LPMKIT_L3FWD`), rule files made from lpmkit tables with ports assigned by next hop,
//! the library l3fwd's `rte_fib` calls reach (DPDK's own, lpmkit's preloaded, or lpmkit's
//! in place of `librte_fib.so.23`), and a run from start to a clean stop.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lpmkit::{Address, Rib};

/// Ports of every l3fwd run (`-p 0xf`).
pub const PORTS: u16 = 4;

/// l3fwd's binary: `LPMKIT_L3FWD`, or `None` after saying how to build it (a failure
/// under `LPMKIT_REQUIRE_L3FWD`).
pub fn l3fwd() -> Option<PathBuf> {
    match std::env::var_os("LPMKIT_L3FWD") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        other => {
            let why = match other {
                Some(p) => format!("LPMKIT_L3FWD={} is not a file", Path::new(&p).display()),
                None => "LPMKIT_L3FWD is not set (build l3fwd with \
                         lpmkit-dpdk/scripts/build-l3fwd.sh DIR and set it to DIR/l3fwd)"
                    .to_string(),
            };
            assert!(
                std::env::var_os("LPMKIT_REQUIRE_L3FWD").is_none(),
                "LPMKIT_REQUIRE_L3FWD is set but {why}"
            );
            eprintln!("note: {why}; skipping");
            None
        }
    }
}

/// The port a next hop id goes out of: ids 1, 2, 3, … round-robin over `ports`
/// (`first`, `first + 1`, …).
pub fn port_of(nh: u32, first: u16, ports: u16) -> u16 {
    first + ((nh - 1) % u32::from(ports)) as u16
}

/// A family's routes, as lpmkit reads them.
pub struct Routes<A: Address> {
    pub rib: Rib<A>,
    pub name: String,
}

/// Reads the table `rel` of the data set (`None`: missing, said).
pub fn routes<A: Address>(rel: &str) -> Option<Routes<A>> {
    Some(Routes {
        rib: crate::common::rib(rel)?,
        name: rel.to_string(),
    })
}

/// Writes l3fwd's rule file for `rib` (`R<prefix>/<len> <port>` per route).
pub fn rule_file<A: Address>(rib: &Rib<A>, path: &Path, first: u16, ports: u16) {
    let mut s = String::with_capacity(rib.len() * 24);
    for (p, nh) in rib.iter() {
        s += &format!("R{p} {}\n", port_of(nh.get(), first, ports));
    }
    std::fs::write(path, s).unwrap();
}

/// Which library serves l3fwd's `rte_fib` calls.
#[derive(Clone, Debug)]
pub enum Lib {
    /// DPDK's own `librte_fib`.
    Dpdk,
    /// lpmkit's, by `LD_PRELOAD`, with the scheme variables given (`None`: auto).
    Preload {
        scheme4: Option<String>,
        scheme6: Option<String>,
    },
    /// lpmkit's as `librte_fib.so.23`, found first through `LD_LIBRARY_PATH`.
    InPlace,
}

impl Lib {
    pub fn lpmkit(&self) -> bool {
        !matches!(self, Lib::Dpdk)
    }

    /// A short name for reports.
    pub fn label(&self) -> String {
        match self {
            Lib::Dpdk => "DPDK librte_fib".into(),
            Lib::Preload { scheme4, scheme6 } => match (scheme4, scheme6) {
                (None, None) => "lpmkit (auto)".into(),
                (a, b) => format!(
                    "lpmkit ({} / {})",
                    a.as_deref().unwrap_or("auto"),
                    b.as_deref().unwrap_or("auto")
                ),
            },
            Lib::InPlace => "lpmkit as librte_fib.so.23".into(),
        }
    }
}

/// One l3fwd run's settings.
pub struct Setup<'a> {
    pub l3fwd: &'a Path,
    pub lib: Lib,
    /// The `--vdev` arguments, one per port.
    pub vdevs: Vec<String>,
    /// Ports with an RX queue (in `--config`), all on `lcore`.
    pub rx_ports: Vec<u16>,
    pub lcore: u32,
    pub rules: (PathBuf, PathBuf),
    /// Where l3fwd's output goes.
    pub log: PathBuf,
    /// `ip netns exec NS` before the command.
    pub netns: Option<String>,
    /// Extra EAL arguments.
    pub eal: Vec<String>,
}

/// A running l3fwd.
pub struct Running {
    child: Child,
    pub log: PathBuf,
    started: Instant,
    /// The EAL's `--file-prefix` (its telemetry socket's directory).
    pub prefix: String,
}

/// The directory with `librte_fib.so.23` → lpmkit's library, for [`Lib::InPlace`].
fn in_place_dir() -> PathBuf {
    let dir = crate::common::target_dir().join("lpmkit-as-librte_fib");
    std::fs::create_dir_all(&dir).unwrap();
    let link = dir.join("librte_fib.so.23");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(crate::common::cdylib(), &link).unwrap();
    dir
}

impl Setup<'_> {
    pub fn start(&self) -> Running {
        let mut cmd = match &self.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns]).arg(self.l3fwd);
                c
            }
            None => Command::new(self.l3fwd),
        };
        static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let prefix = format!("lpmkit-l3fwd-{}-{n}", std::process::id());
        cmd.arg("-l")
            .arg(self.lcore.to_string())
            .args(["--no-huge", "-m", "3072", "--no-pci", "--no-shconf"])
            .arg(format!("--file-prefix={prefix}"))
            .args(["--log-level=lib.lpmkit:info"])
            .args(&self.eal);
        for v in &self.vdevs {
            cmd.arg(format!("--vdev={v}"));
        }
        let config: Vec<String> = self
            .rx_ports
            .iter()
            .map(|p| format!("({p},0,{})", self.lcore))
            .collect();
        let mask = (1u32 << self.vdevs.len()) - 1;
        cmd.args([
            "--",
            "-p",
            &format!("{mask:#x}"),
            "-P",
            "--lookup=fib",
            "--parse-ptype",
        ])
        .arg(format!("--config={}", config.join(",")))
        .arg(format!("--rule_ipv4={}", self.rules.0.display()))
        .arg(format!("--rule_ipv6={}", self.rules.1.display()));
        cmd.env_remove("LD_PRELOAD")
            .env_remove("LPMKIT_FIB_SCHEME")
            .env_remove("LPMKIT_FIB6_SCHEME");
        match &self.lib {
            Lib::Dpdk => {}
            Lib::Preload { scheme4, scheme6 } => {
                cmd.env("LD_PRELOAD", crate::common::cdylib());
                if let Some(s) = scheme4 {
                    cmd.env("LPMKIT_FIB_SCHEME", s);
                }
                if let Some(s) = scheme6 {
                    cmd.env("LPMKIT_FIB6_SCHEME", s);
                }
            }
            Lib::InPlace => {
                cmd.env("LD_LIBRARY_PATH", in_place_dir());
            }
        }
        let log = std::fs::File::create(&self.log).unwrap();
        cmd.stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        let child = cmd.spawn().expect("l3fwd starts");
        Running {
            child,
            log: self.log.clone(),
            started: Instant::now(),
            prefix,
        }
    }
}

/// The text of a log file (empty if unreadable).
pub fn read_log(path: &Path) -> String {
    let mut s = String::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.read_to_string(&mut s);
    }
    s
}

impl Running {
    /// Waits until l3fwd forwards (its lcore entered the main loop); panics with its log
    /// if it exits or takes longer than `limit`.
    pub fn wait_forwarding(&mut self, limit: Duration) {
        loop {
            let log = read_log(&self.log);
            if log.contains("entering main loop") {
                return;
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("l3fwd exited ({status}) before forwarding:\n{}", tail(&log));
            }
            assert!(
                self.started.elapsed() < limit,
                "l3fwd does not forward after {limit:?}:\n{}",
                tail(&log)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process id (l3fwd's, when run outside a namespace).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops l3fwd as its user would (SIGINT: it stops and closes its ports, which
    /// flushes their output) and returns its log; panics if it does not stop cleanly.
    pub fn stop(mut self) -> String {
        // SAFETY: `kill` with a pid of our own child.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGINT) };
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "l3fwd did not stop on SIGINT:\n{}",
                    tail(&read_log(&self.log))
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let log = read_log(&self.log);
        assert!(
            status.success(),
            "l3fwd exited with {status}:\n{}",
            tail(&log)
        );
        log
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The last lines of a log, without l3fwd's line per route.
pub fn tail(log: &str) -> String {
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| !l.starts_with("FIB: Adding route"))
        .collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// Checks from the log which library served l3fwd's tables: lpmkit logs one line per
/// table at its first lookup (here, of the families `looked_up`: IPv4, IPv6); DPDK's
/// library, none.
pub fn check_served_by(log: &str, lib: &Lib, looked_up: (bool, bool)) {
    let lpmkit4 = log.contains("lpmkit: rte_fib \"IPV4_L3FWD_FIB_");
    let lpmkit6 = log.contains("lpmkit: rte_fib6 \"IPV6_L3FWD_FIB_");
    if lib.lpmkit() {
        assert!(
            (lpmkit4, lpmkit6) == looked_up,
            "lpmkit did not serve the tables looked up {looked_up:?}:\n{}",
            tail(log)
        );
    } else {
        assert!(!lpmkit4 && !lpmkit6, "lpmkit served a table of DPDK's run");
    }
}

/// lpmkit's log lines (which scheme serves each table).
pub fn lpmkit_lines(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.starts_with("lpmkit: ")).collect()
}

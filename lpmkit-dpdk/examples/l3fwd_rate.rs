//! DPDK's l3fwd forwarding rate with DPDK's own `librte_fib` and with lpmkit's
//! (`LD_PRELOAD`): its default (`auto`, which serves a table only looked up with
//! `dir24-8` / `spider16w`), and the schemes updated in place `auto` moves a table to at
//! its first change under lookups (named with `LPMKIT_FIB_SCHEME`: `d18r` or `d16r` by
//! size, `poptrie16`), memory-fed and on one lcore: `net_pcap` replays a capture held in memory (`infinite_rx=1`) into port 0, and
//! every frame has a route to one of three `net_null` ports, which drop what they are
//! given. The rate is the frames l3fwd sent in a measured window (DPDK's telemetry
//! socket: the ports' `opackets`), after a warm-up; the libraries alternate from run to
//! run, and each figure is the median of the runs.
//!
//! ```sh
//! L3FWD=$(lpmkit-dpdk/scripts/build-l3fwd.sh /tmp/l3fwd)
//! cargo run --release -p lpmkit-dpdk --example l3fwd_rate -- $L3FWD --runs 5 --perf
//! ```
//!
//! Options: `--runs N` (5), `--seconds S` per window (4), `--lcore C` (1; the harness
//! itself runs on another CPU), `--frames N` distinct frames in the capture (4096: the
//! capture's frames stay in l3fwd's memory pool, 8,448 mbufs for four ports), `--also
//! V4SCHEME/V6SCHEME` (a fourth column of named schemes), `--perf`: one more run per cell under `perf record -e cpu-clock` on l3fwd's process,
//! and the share of its samples in the lookup library (`librte_fib.so.23` or
//! `liblpmkit_rte_fib.so`) — the lookup's part of a frame's cost.
//! `LPMKIT_DATA` as for the tests.

#[path = "../tests/common/mod.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/l3fwd/frames.rs"]
mod frames;
#[path = "../tests/l3fwd/harness.rs"]
mod harness;
#[path = "../tests/l3fwd/telemetry.rs"]
mod telemetry;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use harness::{Lib, Setup};
use lpmkit::{Address, Rib};

struct Args {
    l3fwd: PathBuf,
    runs: usize,
    seconds: f64,
    lcore: u32,
    frames: usize,
    also: Option<(String, String)>,
    perf: bool,
}

fn args() -> Args {
    let mut a = Args {
        l3fwd: PathBuf::new(),
        runs: 5,
        seconds: 4.0,
        lcore: 1,
        frames: 4096,
        also: None,
        perf: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--runs" => a.runs = value().parse().unwrap_or_else(|_| usage("--runs N")),
            "--seconds" => a.seconds = value().parse().unwrap_or_else(|_| usage("--seconds S")),
            "--lcore" => a.lcore = value().parse().unwrap_or_else(|_| usage("--lcore C")),
            "--frames" => a.frames = value().parse().unwrap_or_else(|_| usage("--frames N")),
            "--also" => {
                let v = value();
                let (v4, v6) = v.split_once('/').unwrap_or_else(|| usage("--also V4/V6"));
                a.also = Some((v4.to_string(), v6.to_string()));
            }
            "--perf" => a.perf = true,
            s if !s.starts_with('-') && a.l3fwd.as_os_str().is_empty() => a.l3fwd = s.into(),
            s => usage(&format!("unknown argument {s}")),
        }
    }
    if !a.l3fwd.is_file() {
        usage("the l3fwd binary (scripts/build-l3fwd.sh prints its path)");
    }
    a
}

fn usage(why: &str) -> ! {
    eprintln!(
        "l3fwd_rate: {why}\nusage: l3fwd_rate L3FWD [--runs N] [--seconds S] [--lcore C] \
         [--frames N] [--also V4SCHEME/V6SCHEME] [--perf]"
    );
    std::process::exit(2)
}

/// One measured cell: the tables, the family of the frames, and the schemes updated in
/// place `auto` moves these tables to once they change.
struct Workload {
    label: &'static str,
    v4: &'static str,
    v6: &'static str,
    ipv6: bool,
    in_place: (&'static str, &'static str),
}

const WORKLOADS: [Workload; 3] = [
    Workload {
        label: "bart IPv4",
        v4: "fib/ipv4-bart-tier1-prefixes.txt.xz",
        v6: "fib/ipv6-bart-tier1-prefixes.txt.xz",
        ipv6: false,
        in_place: ("d18r", "poptrie16"),
    },
    Workload {
        label: "bart IPv6",
        v4: "fib/ipv4-bart-tier1-prefixes.txt.xz",
        v6: "fib/ipv6-bart-tier1-prefixes.txt.xz",
        ipv6: true,
        in_place: ("d18r", "poptrie16"),
    },
    Workload {
        label: "rrc06 IPv4",
        v4: "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        v6: "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        ipv6: false,
        in_place: ("d16r", "poptrie16"),
    },
];

/// Frames to destinations inside random routes of `rib`.
fn frames_to<A: Address>(
    rib: &Rib<A>,
    n: usize,
    frame: impl Fn(A, u32) -> Vec<u8>,
) -> Vec<Vec<u8>> {
    lpmkit::traffic::in_routes(rib, n, 42)
        .into_iter()
        .enumerate()
        .map(|(i, a)| frame(a, i as u32))
        .collect()
}

/// The CPU as `/proc/cpuinfo` names it, with family and model.
fn cpu() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |k: &str| {
        info.lines()
            .find_map(|l| l.split_once(':').filter(|(a, _)| a.trim() == k))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    format!(
        "{} (family {}, model {})",
        field("model name"),
        field("cpu family"),
        field("model")
    )
}

/// Pins the calling process to CPU `cpu`.
fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET and sched_setaffinity on it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

struct Measured {
    /// Frames sent per second of the window.
    mpps: f64,
    /// Frames sent per second the forwarding thread ran: on a machine shared with other
    /// work, what the lcore forwards while it has the CPU.
    mpps_cpu: f64,
    /// The share of the window the forwarding thread ran.
    cpu_share: f64,
    /// With `--perf`: the share of l3fwd's samples in the lookup library, and the top
    /// symbols.
    lookup_share: Option<(f64, String)>,
}

fn measure(
    a: &Args,
    w: &Workload,
    lib: &Lib,
    dir: &Path,
    rules: &(PathBuf, PathBuf),
    perf: bool,
) -> Measured {
    let setup = Setup {
        l3fwd: &a.l3fwd,
        lib: lib.clone(),
        vdevs: vec![
            format!(
                "net_pcap0,rx_pcap={},infinite_rx=1,tx_pcap=/dev/null",
                dir.join("frames.pcap").display()
            ),
            "net_null1,no-rx=1".into(),
            "net_null2,no-rx=1".into(),
            "net_null3,no-rx=1".into(),
        ],
        rx_ports: vec![0],
        lcore: a.lcore,
        rules: rules.clone(),
        log: dir.join("l3fwd.log"),
        netns: None,
        eal: Vec::new(),
    };
    let mut run = setup.start();
    run.wait_forwarding(Duration::from_secs(300));
    let tel = {
        let t0 = Instant::now();
        loop {
            match telemetry::Telemetry::connect(&run.prefix) {
                Ok(t) => break t,
                Err(e) if t0.elapsed() > Duration::from_secs(10) => panic!("telemetry: {e}"),
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            }
        }
    };
    let sent = || -> u64 {
        (1..4)
            .map(|p| tel.port_counter(p, "opackets").unwrap())
            .sum()
    };
    std::thread::sleep(Duration::from_secs(2)); // the table built, caches warm
    let record = perf.then(|| {
        let file = dir.join("perf.data");
        Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock", "-F", "4999", "-p"])
            .arg(run.pid().to_string())
            .arg("-o")
            .arg(&file)
            .args(["--", "sleep"])
            .arg(format!("{}", a.seconds))
            .spawn()
            .expect("perf runs")
    });
    let pid = run.pid();
    let (c0, t0, cpu0) = (sent(), Instant::now(), cpu_ns(pid));
    std::thread::sleep(Duration::from_secs_f64(a.seconds));
    let (c1, t1, cpu1) = (sent(), Instant::now(), cpu_ns(pid));
    let lookup_share = record.map(|mut p| {
        p.wait().unwrap();
        perf_share(&dir.join("perf.data"), lib.lpmkit())
    });
    let log = run.stop();
    harness::check_served_by(&log, lib, (!w.ipv6, w.ipv6));
    let wall = (t1 - t0).as_secs_f64();
    let cpu = (cpu1 - cpu0) as f64 / 1e9;
    Measured {
        mpps: (c1 - c0) as f64 / wall / 1e6,
        mpps_cpu: (c1 - c0) as f64 / cpu / 1e6,
        cpu_share: cpu / wall,
        lookup_share,
    }
}

/// Nanoseconds the main thread of process `pid` (l3fwd's forwarding lcore) has run
/// (`/proc/PID/task/PID/schedstat`).
fn cpu_ns(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/schedstat"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("schedstat of l3fwd's main thread")
}

/// The lookup library's share of the samples in `data`, and its top symbols.
fn perf_share(data: &Path, lpmkit: bool) -> (f64, String) {
    let o = Command::new("perf")
        .args(["report", "--stdio", "-q", "--sort", "dso,symbol", "-i"])
        .arg(data)
        .output()
        .expect("perf report runs");
    let text = String::from_utf8_lossy(&o.stdout);
    let lib = if lpmkit {
        "liblpmkit_rte_fib.so"
    } else {
        "librte_fib.so"
    };
    let mut share = 0.0;
    let mut top = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let (Some(pct), Some(dso)) = (f.next(), f.next()) else {
            continue;
        };
        let Ok(p) = pct.trim_end_matches('%').parse::<f64>() else {
            continue;
        };
        if dso.starts_with(lib) {
            share += p;
            let sym: Vec<&str> = f.skip(1).collect();
            if top.len() < 3 {
                top.push(format!("{} {p:.1}%", short(&sym.join(" "))));
            }
        }
    }
    (share, top.join(", "))
}

/// A Rust symbol without its path and hash.
fn short(sym: &str) -> String {
    let s = sym.split("::h").next().unwrap_or(sym);
    let parts: Vec<&str> = s.split("::").collect();
    parts[parts.len().saturating_sub(2)..].join("::")
}

/// The median of each library's runs, and its ratio to the first (DPDK's).
fn cells(runs: &mut [Vec<f64>]) -> Vec<String> {
    let dpdk = median(&mut runs[0]);
    runs.iter_mut()
        .enumerate()
        .map(|(i, v)| {
            let m = median(v);
            if i == 0 {
                format!("{m:.2}")
            } else {
                format!("{m:.2} ({:.2}×)", m / dpdk)
            }
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let a = args();
    if std::thread::available_parallelism().map_or(1, |n| n.get()) > 1 {
        pin(if a.lcore == 0 { 1 } else { 0 });
    }
    let named = |v4: &str, v6: &str| Lib::Preload {
        scheme4: Some(v4.to_string()),
        scheme6: Some(v6.to_string()),
    };
    let libs_of = |w: &Workload| {
        let mut libs = vec![
            Lib::Dpdk,
            Lib::Preload {
                scheme4: None,
                scheme6: None,
            },
            named(w.in_place.0, w.in_place.1),
        ];
        if let Some((v4, v6)) = &a.also {
            libs.push(named(v4, v6));
        }
        libs
    };
    println!(
        "CPU: {}; l3fwd on lcore {}, {} frames, {} runs of {} s, median",
        cpu(),
        a.lcore,
        a.frames,
        a.runs,
        a.seconds
    );
    let header = format!(
        "| workload | DPDK librte_fib | lpmkit (auto) | lpmkit (auto's in-place scheme) |{}\n\
         |---|---:|---:|---:|{}",
        if a.also.is_some() {
            " lpmkit (--also) |"
        } else {
            ""
        },
        if a.also.is_some() { "---:|" } else { "" },
    );
    println!();
    println!("{header}");
    let mut shares = Vec::new();
    let mut cpu_rows = Vec::new();
    for w in &WORKLOADS {
        let libs = libs_of(w);
        let dir = common::scratch(&format!("rate-{}", w.label.replace(' ', "-")));
        let (Some(v4), Some(v6)) = (harness::routes::<u32>(w.v4), harness::routes::<u128>(w.v6))
        else {
            continue;
        };
        let rules = (dir.join("rules_v4.txt"), dir.join("rules_v6.txt"));
        harness::rule_file(&v4.rib, &rules.0, 1, 3);
        harness::rule_file(&v6.rib, &rules.1, 1, 3);
        let frames = if w.ipv6 {
            frames_to(&v6.rib, a.frames, frames::ipv6)
        } else {
            frames_to(&v4.rib, a.frames, frames::ipv4)
        };
        frames::write_pcap(&dir.join("frames.pcap"), frames.iter().map(|f| &f[..]));
        let mut mpps = vec![Vec::new(); libs.len()];
        let mut cpu_mpps = vec![Vec::new(); libs.len()];
        for r in 0..a.runs {
            for (i, lib) in libs.iter().enumerate() {
                let m = measure(&a, w, lib, &dir, &rules, false);
                eprintln!(
                    "{} run {r} {}: {:.3} Mpps ({:.3} Mpps of its CPU time; it ran {:.0}% of \
                     the window)",
                    w.label,
                    lib.label(),
                    m.mpps,
                    m.mpps_cpu,
                    m.cpu_share * 100.0
                );
                mpps[i].push(m.mpps);
                cpu_mpps[i].push(m.mpps_cpu);
            }
        }
        let named: Vec<String> = libs[2..].iter().map(Lib::label).collect();
        println!("| {} | {} |", w.label, cells(&mut mpps).join(" | "));
        cpu_rows.push(format!(
            "| {} | {} |",
            w.label,
            cells(&mut cpu_mpps).join(" | ")
        ));
        eprintln!("{}: named columns {}", w.label, named.join(", "));
        if a.perf {
            for lib in &libs {
                let m = measure(&a, w, lib, &dir, &rules, true);
                let (share, top) = m.lookup_share.unwrap();
                shares.push((w.label, lib.label(), m.mpps_cpu, share, top));
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    println!();
    println!("Per second of the forwarding thread's CPU time (the same runs):");
    println!();
    println!("{header}");
    for row in cpu_rows {
        println!("{row}");
    }
    if a.perf {
        println!();
        println!(
            "| workload | library | Mpps (CPU time, under perf) | ns per frame | lookup's share \
             | lookup ns per frame | top lookup symbols |"
        );
        println!("|---|---|---:|---:|---:|---:|---|");
        for (w, lib, mpps, share, top) in shares {
            let ns = 1e3 / mpps;
            println!(
                "| {w} | {lib} | {mpps:.2} | {ns:.1} | {share:.1}% | {:.1} | {top} |",
                ns * share / 100.0
            );
        }
    }
}

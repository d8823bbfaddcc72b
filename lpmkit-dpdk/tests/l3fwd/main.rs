//! lpmkit inside DPDK's own l3fwd (`--lookup=fib`, EAL without huge pages), unmodified
//! on its lookup path (`scripts/build-l3fwd.sh` builds it; `LPMKIT_L3FWD` names the
//! binary):
//!
//! * `pcap_output_is_byte_identical_to_dpdks`: four `net_pcap` ports read frames to
//!   destinations inside and outside the routes (IPv4 and IPv6) and write what l3fwd
//!   forwards; the rule files are the bart tables (IPv4 and IPv6) and rrc06 with the LINX
//!   IPv6 table, ports assigned by next hop. The output pcaps with DPDK's `librte_fib`,
//!   with lpmkit preloaded (its default, and the in-place schemes its default moves to
//!   once a table changes) and with lpmkit in place of `librte_fib.so.23` are compared
//!   with `cmp` (after zeroing the capture timestamps `net_pcap` takes from the clock),
//!   and every frame must be on the port the reference trie names (its input port where
//!   no route matches: l3fwd's default).
//! * `frames_cross_namespaces_over_af_packet`: l3fwd with lpmkit preloaded in a network
//!   namespace, its four ports `net_af_packet` devices on veth pairs whose other ends are
//!   in a second namespace; thousands of frames of both families sent there by the kernel
//!   (packet sockets) must each arrive once, on the port the reference trie names, and
//!   nowhere else.
//!
//! Without l3fwd the tests say so and skip, unless `LPMKIT_REQUIRE_L3FWD` (CI).

#[path = "../common/mod.rs"]
mod common;
mod frames;
mod harness;
mod netns;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use frames::Dst;
use harness::{Lib, Routes, Setup, PORTS};
use lpmkit::{Address, Rib};

/// The tables of one run: an IPv4 and an IPv6 rule file (l3fwd takes both).
struct Tables {
    v4: Routes<u32>,
    v6: Routes<u128>,
}

impl Tables {
    fn load(v4: &str, v6: &str) -> Option<Tables> {
        Some(Tables {
            v4: harness::routes(v4)?,
            v6: harness::routes(v6)?,
        })
    }

    fn label(&self) -> String {
        let short = |s: &str| {
            let f = s.rsplit('/').next().unwrap_or(s);
            f.trim_end_matches(".txt.xz").to_string()
        };
        format!("{} + {}", short(&self.v4.name), short(&self.v6.name))
    }

    /// Writes the rule files (ports `first..first + ports` by next hop) into `dir`.
    fn rules(&self, dir: &Path, first: u16, ports: u16) -> (PathBuf, PathBuf) {
        let r = (dir.join("rules_v4.txt"), dir.join("rules_v6.txt"));
        harness::rule_file(&self.v4.rib, &r.0, first, ports);
        harness::rule_file(&self.v6.rib, &r.1, first, ports);
        r
    }

    /// The port the reference trie sends `dst` to, arriving on `input`.
    fn port(&self, dst: Dst, input: u16, first: u16, ports: u16) -> u16 {
        let nh = match dst {
            Dst::V4(a) => self.v4.rib.lookup(a),
            Dst::V6(a) => self.v6.rib.lookup(a),
        };
        nh.map_or(input, |nh| harness::port_of(nh.get(), first, ports))
    }
}

/// `n` destinations: half inside random routes, half uniform (mostly outside).
fn destinations<A: Address>(rib: &Rib<A>, n: usize, seed: u64) -> Vec<A> {
    let mut d = lpmkit::traffic::in_routes(rib, n / 2, seed);
    d.extend(lpmkit::traffic::uniform::<A>(n - n / 2, seed + 1));
    d
}

/// Frames by input port; and each frame's input port and destination, by sequence number.
struct Traffic {
    inputs: Vec<Vec<Vec<u8>>>,
    meta: Vec<(u16, Dst)>,
}

/// The test frames: for each input port, IPv4 and IPv6 frames to destinations inside and
/// outside the routes, mixed.
fn traffic(t: &Tables, per_port: usize, seed: u64) -> Traffic {
    let d4 = destinations(&t.v4.rib, per_port / 2 * PORTS as usize, seed);
    let d6 = destinations(&t.v6.rib, per_port / 2 * PORTS as usize, seed + 7);
    let mut inputs = vec![Vec::new(); PORTS as usize];
    let mut meta = Vec::new();
    // Interleave so each port gets both families and both halves (inside, outside).
    let all = d4
        .iter()
        .map(|&a| Dst::V4(a))
        .zip(d6.iter().map(|&a| Dst::V6(a)))
        .flat_map(|(a, b)| [a, b]);
    let mut shuffled: Vec<Dst> = all.collect();
    // A fixed permutation: inside and outside destinations mixed in every port's input.
    let n = shuffled.len();
    for i in (1..n).rev() {
        let j = (i.wrapping_mul(2_654_435_761) ^ (seed as usize)) % (i + 1);
        shuffled.swap(i, j);
    }
    for (i, dst) in shuffled.into_iter().enumerate() {
        let port = (i % PORTS as usize) as u16;
        let seq = meta.len() as u32;
        inputs[port as usize].push(frames::frame(dst, seq));
        meta.push((port, dst));
    }
    Traffic { inputs, meta }
}

/// Runs l3fwd once on the prepared pcaps in `dir` and stops it when every frame is out.
fn pcap_run(
    l3fwd: &Path,
    lib: &Lib,
    dir: &Path,
    rules: &(PathBuf, PathBuf),
    frames: usize,
) -> (Vec<PathBuf>, String, f64) {
    let out: Vec<PathBuf> = (0..PORTS)
        .map(|p| dir.join(format!("out{p}-{}.pcap", lib_tag(lib))))
        .collect();
    let vdevs = (0..PORTS)
        .map(|p| {
            format!(
                "net_pcap{p},rx_pcap={},tx_pcap={}",
                dir.join(format!("in{p}.pcap")).display(),
                out[p as usize].display()
            )
        })
        .collect();
    let setup = Setup {
        l3fwd,
        lib: lib.clone(),
        vdevs,
        rx_ports: (0..PORTS).collect(),
        lcore: 1,
        rules: rules.clone(),
        log: dir.join(format!("l3fwd-{}.log", lib_tag(lib))),
        netns: None,
        eal: Vec::new(),
    };
    let t0 = Instant::now();
    let mut run = setup.start();
    run.wait_forwarding(Duration::from_secs(300));
    let ready = t0.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n: usize = out.iter().map(|p| frames::read_pcap(p).len()).sum();
        if n >= frames || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = run.stop();
    harness::check_served_by(&log, lib, (true, true));
    (out, log, ready)
}

fn lib_tag(lib: &Lib) -> String {
    match lib {
        Lib::Dpdk => "dpdk".into(),
        Lib::Preload {
            scheme4: None,
            scheme6: None,
        } => "lpmkit".into(),
        Lib::Preload { scheme4, scheme6 } => format!(
            "lpmkit-{}-{}",
            scheme4.as_deref().unwrap_or("auto"),
            scheme6.as_deref().unwrap_or("auto")
        ),
        Lib::InPlace => "inplace".into(),
    }
}

fn pcap_set(l3fwd: &Path, v4: &str, v6: &str, libs: &[Lib], per_port: usize) {
    let Some(t) = Tables::load(v4, v6) else {
        return;
    };
    let dir = common::scratch(&format!("l3fwd-pcap-{}", t.v4.rib.len()));
    let rules = t.rules(&dir, 0, PORTS);
    let Traffic { inputs, meta } = traffic(&t, per_port, 1);
    for (p, frames) in inputs.iter().enumerate() {
        frames::write_pcap(
            &dir.join(format!("in{p}.pcap")),
            frames.iter().map(|f| &f[..]),
        );
    }
    let total = meta.len();
    let mut outputs = Vec::new();
    for lib in libs {
        let (out, log, ready) = pcap_run(l3fwd, lib, &dir, &rules, total);
        // Every frame on the port the reference trie names, once.
        let mut seen = vec![0u8; total];
        let mut per_port = [0usize; PORTS as usize];
        let (mut n4, mut n6) = (0, 0);
        for (port, path) in out.iter().enumerate() {
            for f in frames::read_pcap(path) {
                let seq = frames::sequence(&f).expect("a test frame") as usize;
                let (input, dst) = meta[seq];
                let want = t.port(dst, input, 0, PORTS);
                assert_eq!(
                    port as u16,
                    want,
                    "{}: frame {seq} to {dst:?} from port {input}",
                    lib.label()
                );
                seen[seq] += 1;
                per_port[port] += 1;
                match dst {
                    Dst::V4(_) => n4 += 1,
                    Dst::V6(_) => n6 += 1,
                }
            }
        }
        let lost = seen.iter().filter(|&&s| s != 1).count();
        assert_eq!(
            lost,
            0,
            "{}: {lost} frames not forwarded exactly once",
            lib.label()
        );
        eprintln!(
            "l3fwd pcap {} | {}: {n4} IPv4 + {n6} IPv6 frames out, per port {per_port:?}; \
             forwarding after {ready:.1} s; {}",
            t.label(),
            lib.label(),
            harness::lpmkit_lines(&log).join(" / ")
        );
        outputs.push((lib.label(), out));
    }
    // Byte for byte, each lpmkit run's output against DPDK's.
    let (reference, dpdk) = &outputs[0];
    for (label, out) in &outputs[1..] {
        for (a, b) in dpdk.iter().zip(out) {
            let (na, nb) = (a.with_extension("cmp"), b.with_extension("cmp"));
            std::fs::write(&na, frames::without_timestamps(a)).unwrap();
            std::fs::write(&nb, frames::without_timestamps(b)).unwrap();
            let o = Command::new("cmp")
                .arg(&na)
                .arg(&nb)
                .output()
                .expect("cmp runs");
            assert!(
                o.status.success(),
                "{label} and {reference} differ: {}",
                String::from_utf8_lossy(&o.stdout)
            );
            eprintln!(
                "  cmp {} {}: identical ({} bytes)",
                na.file_name().unwrap().to_string_lossy(),
                nb.file_name().unwrap().to_string_lossy(),
                std::fs::metadata(&na).unwrap().len()
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// lpmkit with the schemes named (`auto`'s choices for these tables once they change).
fn named(v4: &str, v6: &str) -> Lib {
    Lib::Preload {
        scheme4: Some(v4.into()),
        scheme6: Some(v6.into()),
    }
}

#[test]
fn pcap_output_is_byte_identical_to_dpdks() {
    let Some(l3fwd) = harness::l3fwd() else {
        return;
    };
    let auto = Lib::Preload {
        scheme4: None,
        scheme6: None,
    };
    pcap_set(
        &l3fwd,
        "fib/ipv4-bart-tier1-prefixes.txt.xz",
        "fib/ipv6-bart-tier1-prefixes.txt.xz",
        &[
            Lib::Dpdk,
            auto.clone(),
            Lib::InPlace,
            named("d18r", "poptrie16"),
        ],
        5000,
    );
    pcap_set(
        &l3fwd,
        "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        &[Lib::Dpdk, auto, named("d16r", "poptrie16")],
        5000,
    );
}

#[test]
fn frames_cross_namespaces_over_af_packet() {
    let Some(l3fwd) = harness::l3fwd() else {
        return;
    };
    let Some(t) = Tables::load(
        "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
    ) else {
        return;
    };
    let Some(pair) = netns::Pair::new(PORTS) else {
        return;
    };
    let dir = common::scratch("l3fwd-netns");
    let rules = t.rules(&dir, 0, PORTS);
    let lib = Lib::Preload {
        scheme4: None,
        scheme6: None,
    };
    let setup = Setup {
        l3fwd: &l3fwd,
        lib: lib.clone(),
        vdevs: (0..PORTS)
            .map(|p| format!("net_af_packet{p},iface={}", pair.dut_if(p)))
            .collect(),
        rx_ports: (0..PORTS).collect(),
        lcore: 1,
        rules,
        log: dir.join("l3fwd.log"),
        netns: Some(pair.dut.clone()),
        eal: Vec::new(),
    };
    let Traffic { inputs, meta } = traffic(&t, 2000, 3);
    let mut run = setup.start();
    run.wait_forwarding(Duration::from_secs(120));
    let got = pair.send_and_capture(&inputs, meta.len(), Duration::from_secs(20));
    let log = run.stop();
    harness::check_served_by(&log, &lib, (true, true));

    let mut per_port: HashMap<u16, (usize, usize)> = HashMap::new();
    let mut seen = vec![0u32; meta.len()];
    for (port, seq) in got {
        let (input, dst) = meta[seq as usize];
        let want = t.port(dst, input, 0, PORTS);
        assert_eq!(
            port, want,
            "frame {seq} to {dst:?} from port {input} arrived on port {port}"
        );
        seen[seq as usize] += 1;
        let e = per_port.entry(port).or_default();
        match dst {
            Dst::V4(_) => e.0 += 1,
            Dst::V6(_) => e.1 += 1,
        }
    }
    let missing = seen.iter().filter(|&&s| s == 0).count();
    let twice = seen.iter().filter(|&&s| s > 1).count();
    let mut ports: Vec<_> = per_port.into_iter().collect();
    ports.sort_unstable();
    eprintln!(
        "l3fwd af_packet {} | {}: {} frames sent, arrived per port (IPv4, IPv6) {ports:?}, \
         missing {missing}, twice {twice}; {}",
        t.label(),
        lib.label(),
        meta.len(),
        harness::lpmkit_lines(&log).join(" / ")
    );
    assert_eq!((missing, twice), (0, 0));
    let _ = std::fs::remove_dir_all(&dir);
}

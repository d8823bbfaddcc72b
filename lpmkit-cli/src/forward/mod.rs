//! `lpmkit forward`: a forwarding benchmark in the spirit of the Spider paper's `lptest`
//! (§V-C, Fig. 7–8) that puts no packet on any interface.
//!
//! Real Ethernet/IPv4/IPv6 frames (random destinations inside the loaded table's routes,
//! 64-byte or IMIX sizes) arrive in an RX descriptor ring over a buffer pool, as a NIC
//! hands them over; run-to-completion worker threads (one ring each, as RSS queues) take
//! a batch, parse the headers, look the destinations up with a registered scheme through
//! `lookup_batch` (via the same RCU/in-place reader a kernel-synced table would use),
//! rewrite the MACs per next hop, decrement the TTL / hop limit with the RFC 1624
//! incremental checksum update, drop what has no route or an expired TTL, and place the
//! frames on per-port TX rings. The batch-size sweep with a default-route-only table and
//! the full table gives Fig. 8's four series; `--breakdown` counts TSC ticks per phase
//! (NIC emulation, parse, lookup, rewrite, enqueue); every run first checks a sample of
//! frames against a slow reference forwarder.
//!
//! Deliberate differences from `lptest`: no NIC (the emulated NIC's RX refill copies a
//! frame's first 64 bytes into its buffer, work a real NIC does by DMA, and is reported
//! as its own phase); next hops map to 4 ports by id.

mod engine;
mod packet;
mod pcap;
mod reference;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Args, ValueEnum};
use lpmkit::registry::SchemeInfo;
use lpmkit::sync::{LookupHandle, PublisherConfig};
use lpmkit::{Address, AnyTable, BuildOptions, Family, NextHop, Prefix, Rib};

use crate::bounds;
use crate::input::{self, TableArgs};
use crate::output::outln;
use crate::output::OutputFile;
use engine::{Counters, Neighbours, Phases, Wire, Worker};
use packet::HEADROOM;

/// Frame sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Sizes {
    /// 64 bytes on the wire (IPv6: 78, its smallest UDP frame with room for the header).
    #[value(name = "64")]
    Min,
    /// The simple IMIX: 64, 594 and 1518 bytes, 7:4:1.
    Imix,
}

/// The largest batch (the RX ring's size).
const MAX_BATCH: u64 = 1024;
/// The most frames on the wire.
const MAX_FRAMES: u64 = 1 << 26;

#[derive(Args, Debug)]
pub struct ForwardArgs {
    #[command(flatten)]
    table: TableArgs,

    /// Schemes (comma-separated names or prefixes).
    #[arg(long, short = 's', default_value = "spider16w,poptrie18")]
    schemes: String,

    /// Batch sizes to sweep. Range: 1 to 1024.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64",
          value_parser = bounds::int::<usize>(1, MAX_BATCH))]
    batches: Vec<usize>,

    /// Worker threads (each with its own RX ring), comma-separated counts.
    /// Range: 1 to 1024.
    #[arg(long, value_delimiter = ',', default_value = "1",
          value_parser = bounds::int::<usize>(1, crate::bench::MAX_THREADS))]
    threads: Vec<usize>,

    /// Frame sizes.
    #[arg(long, value_enum, default_value = "64")]
    sizes: Sizes,

    /// Frames on the wire (cycled; each has its own random destination).
    /// Range: 1 to 67108864.
    #[arg(long, default_value_t = 1 << 20, value_parser = bounds::int::<usize>(1, MAX_FRAMES))]
    frames: usize,

    /// Output ports. Range: 1 to 256.
    #[arg(long, default_value_t = 4, value_parser = bounds::int::<usize>(1, 256))]
    ports: usize,

    /// Seconds per measurement. Range: above 0 and at most 3600.
    #[arg(long, default_value_t = 0.4, value_parser = bounds::float(0.0, 3600.0, true))]
    seconds: f64,

    /// Runs per point (median; the series alternate within each run). Range: 1 to 1000.
    #[arg(long, default_value_t = 3, value_parser = bounds::int::<usize>(1, 1000))]
    runs: usize,

    /// Tables: `full` (the loaded one), `default` (one default route), or both.
    #[arg(long, value_delimiter = ',', default_value = "default,full")]
    tables: Vec<String>,

    /// Also count TSC ticks per phase (NIC emulation, parse, lookup, rewrite, enqueue)
    /// at these batch sizes. Range: 1 to 1024.
    #[arg(long, value_delimiter = ',', value_name = "BATCHES",
          value_parser = bounds::int::<usize>(1, MAX_BATCH))]
    breakdown: Vec<usize>,

    /// Frames checked against the reference forwarder before measuring (per series).
    /// Range: 0 to 67108864.
    #[arg(long, default_value_t = 100_000, value_parser = bounds::int::<usize>(0, MAX_FRAMES))]
    check: usize,

    /// Use the frames of this pcap file as the wire instead of generating them (at most
    /// 67108864 frames).
    #[arg(long, value_name = "FILE")]
    read_pcap: Option<PathBuf>,

    /// Write the first 1,000 generated frames to this pcap file.
    #[arg(long, value_name = "FILE")]
    pcap_in: Option<PathBuf>,

    /// Write the first 1,000 forwarded frames of the first series' check to this pcap
    /// file.
    #[arg(long, value_name = "FILE")]
    pcap_out: Option<PathBuf>,

    /// Seed of the destinations (any 64-bit value).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: ForwardArgs) -> anyhow::Result<ExitCode> {
    let mut out = Outputs {
        pcap_in: OutputFile::create_opt("--pcap-in", args.pcap_in.as_deref())?,
        pcap_out: OutputFile::create_opt("--pcap-out", args.pcap_out.as_deref())?,
    };
    match input::load(&args.table)? {
        AnyTable::V4(t) => bench(t.rib, &args, &mut out),
        AnyTable::V6(t) => bench(t.rib, &args, &mut out),
    }
}

/// The output files, opened before the work.
struct Outputs {
    pcap_in: Option<OutputFile>,
    /// Taken by the first series' check.
    pcap_out: Option<OutputFile>,
}

/// Random destinations inside random routes of `rib` (so every frame has a route in the
/// full table), 1 frame in 1024 with TTL 1 (dropped as expired).
fn make_wire<A: Address>(
    rib: &Rib<A>,
    args: &ForwardArgs,
    out: &mut Outputs,
) -> anyhow::Result<Wire> {
    if let Some(path) = &args.read_pcap {
        let file = std::fs::File::open(path)
            .with_context(|| format!("--read-pcap: cannot open {}", path.display()))?;
        let mut w = Wire {
            headers: Vec::new(),
            lens: Vec::new(),
        };
        pcap::read_each(std::io::BufReader::new(file), MAX_FRAMES as usize, |f| {
            let mut h = [0u8; HEADROOM];
            let n = f.len().min(HEADROOM);
            h[..n].copy_from_slice(&f[..n]);
            w.headers.push(h);
            w.lens.push(f.len().min(u16::MAX as usize) as u16);
        })
        .with_context(|| format!("--read-pcap: cannot read {}", path.display()))?;
        anyhow::ensure!(
            !w.lens.is_empty(),
            "--read-pcap: {} holds no frames",
            path.display()
        );
        return Ok(w);
    }
    anyhow::ensure!(!rib.is_empty(), "the table is empty");
    let dsts = lpmkit::traffic::in_routes(rib, args.frames, args.seed);
    let mut w = Wire {
        headers: Vec::with_capacity(args.frames),
        lens: Vec::with_capacity(args.frames),
    };
    let mut buf = vec![0u8; 1600];
    let src = A::from_u128(match A::FAMILY {
        Family::V4 => 0xc612_0001,                // 198.18.0.1
        Family::V6 => 0x2001_0db8_u128 << 96 | 1, // 2001:db8::1
    });
    for (i, &dst) in dsts.iter().enumerate() {
        let len = match args.sizes {
            Sizes::Min => packet::min_frame(A::FAMILY),
            Sizes::Imix => packet::imix_len(i, A::FAMILY),
        };
        let ttl = if i % 1024 == 1023 { 1 } else { 64 };
        packet::build(&mut buf, len, src, dst, ttl, i as u16);
        let mut h = [0u8; HEADROOM];
        h.copy_from_slice(&buf[..HEADROOM]);
        w.headers.push(h);
        w.lens.push(len as u16);
    }
    if let Some(path) = &args.pcap_in {
        let frames: Vec<Vec<u8>> = (0..w.lens.len().min(1000))
            .map(|i| {
                let mut f = vec![0u8; w.lens[i] as usize];
                let n = HEADROOM.min(f.len());
                f[..n].copy_from_slice(&w.headers[i][..n]);
                f
            })
            .collect();
        let file = out.pcap_in.take().expect("opened with --pcap-in");
        let what = file.context();
        pcap::write(file.into_writer(), frames.iter().map(|f| f.as_slice())).context(what)?;
        eprintln!("wrote 1,000 generated frames to {}", path.display());
    }
    Ok(w)
}

/// What keeps a table's writer alive.
type Keep = Box<dyn std::any::Any>;

/// A lookup handle on `rib` built by `info`, through the update model a kernel-synced
/// table uses (the best the scheme offers: in place, or a rebuild published after the
/// default hold time); the first value keeps the writer.
fn handle<A: Address>(
    info: &'static SchemeInfo,
    rib: &Rib<A>,
) -> anyhow::Result<(Keep, Box<dyn LookupHandle<A>>)> {
    let model = info.best_model(A::FAMILY, PublisherConfig::default().hold_time);
    let u = info.updater(rib.clone(), &BuildOptions::default(), model)?;
    let r = u.reader();
    Ok((Box::new(u), r))
}

/// One series: a scheme on a table.
struct Series<A: Address> {
    label: String,
    rib: Rib<A>,
    _keep: Keep,
    handle: Box<dyn LookupHandle<A>>,
}

fn bench<A: Address>(
    full: Rib<A>,
    args: &ForwardArgs,
    out: &mut Outputs,
) -> anyhow::Result<ExitCode> {
    let threads = args.threads.iter().copied().max().unwrap_or(1) as u128;
    bounds::check_memory(&[
        bounds::Need::items(
            "--frames",
            if args.read_pcap.is_some() {
                0
            } else {
                args.frames as u128
            },
            // Header copy, length, destination.
            (HEADROOM + 2 + core::mem::size_of::<A>()) as u128,
            "frames",
        ),
        bounds::Need::items(
            "--threads",
            threads,
            engine::worker_bytes(args.ports) as u128 + crate::bench::THREAD_BYTES,
            "workers (buffer pool and stack)",
        ),
    ])?;
    let wire = make_wire(&full, args, out)?;
    let mut default_only = Rib::<A>::new();
    default_only.insert(Prefix::DEFAULT, NextHop::new(1).unwrap());
    let max_nh = full.iter().map(|(_, nh)| nh.get()).max().unwrap_or(1) as usize;
    let nbr = Neighbours::new(max_nh, args.ports.clamp(1, 256));
    let mut series = Vec::new();
    for info in input::schemes(&args.schemes, A::FAMILY)? {
        for t in &args.tables {
            let rib = match t.as_str() {
                "full" => full.clone(),
                "default" => default_only.clone(),
                other => anyhow::bail!("--tables: unknown table {other:?} (full, default)"),
            };
            let (keep, handle) = handle(info, &rib)?;
            series.push(Series {
                label: format!("{} {}", info.name, t),
                rib,
                _keep: keep,
                handle,
            });
        }
    }
    // Check the fast path against the reference forwarder.
    let mut failed = false;
    for s in &mut series {
        failed |= !check(s, &wire, &nbr, args, out)?;
    }
    let mean_len = wire.lens.iter().map(|&l| l as f64 + 4.0).sum::<f64>() / wire.lens.len() as f64;
    outln!(
        "{} frames of {} ({:.0} bytes on the wire on average), destinations in {} routes; {} ports",
        wire.lens.len(),
        A::FAMILY,
        mean_len,
        full.len(),
        nbr.ports
    );
    for &threads in &args.threads {
        outln!(
            "\nMpps by batch size, {threads} worker thread(s), median of {} runs of {} s:",
            args.runs,
            args.seconds
        );
        let mut head = format!("{:>6}", "batch");
        for s in &series {
            head.push_str(&format!(" {:>20}", s.label));
        }
        outln!("{head}");
        for &b in &args.batches {
            let mut samples = vec![Vec::new(); series.len()];
            for _ in 0..args.runs.max(1) {
                for (i, s) in series.iter().enumerate() {
                    let (c, secs, _) = measure(s, &wire, &nbr, b, threads, args.seconds, false);
                    samples[i].push(c.received as f64 / secs / 1e6);
                }
            }
            let mut row = format!("{b:>6}");
            for v in &mut samples {
                v.sort_by(|a, b| a.total_cmp(b));
                row.push_str(&format!(" {:>20.2}", v[v.len() / 2]));
            }
            outln!("{row}");
        }
    }
    if !args.breakdown.is_empty() {
        breakdown(&series, &wire, &nbr, args);
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Runs `threads` workers at batch size `batch` for `seconds`; returns the counters, the
/// seconds and (if `timed`) the phases.
fn measure<A: Address>(
    s: &Series<A>,
    wire: &Wire,
    nbr: &Neighbours,
    batch: usize,
    threads: usize,
    seconds: f64,
    timed: bool,
) -> (Counters, f64, Phases) {
    let barrier = Barrier::new(threads.max(1));
    let dur = Duration::from_secs_f64(seconds);
    let results: Vec<(Counters, f64, Phases)> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|t| {
                let mut h = s.handle.boxed_clone();
                let barrier = &barrier;
                sc.spawn(move || {
                    let mut w =
                        Worker::<A>::new(wire, nbr, t * (wire.lens.len() / threads.max(1) + 7));
                    // Warm up: one pass over the RX ring.
                    for _ in 0..(2048 / batch.max(1)).max(8) {
                        w.step(batch, &mut *h, false, None);
                    }
                    w.counters = Counters::default();
                    barrier.wait();
                    let t0 = Instant::now();
                    let mut steps = 0u64;
                    loop {
                        for _ in 0..64 {
                            w.step(batch, &mut *h, timed, None);
                        }
                        steps += 64;
                        if steps.is_multiple_of(1024) && t0.elapsed() >= dur {
                            break;
                        }
                    }
                    w.flush();
                    (w.counters, t0.elapsed().as_secs_f64(), w.phases)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut c = Counters::default();
    let mut p = Phases::default();
    let mut secs = 0f64;
    for (rc, rs, rp) in &results {
        c.add(rc);
        p.add(rp);
        secs = secs.max(*rs);
    }
    (c, secs, p)
}

/// Checks `args.check` frames of the fast path against the reference forwarder: the
/// port, the whole rewritten header (MACs, TTL, checksum), and the drops.
fn check<A: Address>(
    s: &mut Series<A>,
    wire: &Wire,
    nbr: &Neighbours,
    args: &ForwardArgs,
    out: &mut Outputs,
) -> anyhow::Result<bool> {
    let n = args.check.min(wire.lens.len());
    let mut got: Vec<Option<(usize, Vec<u8>)>> = vec![None; n];
    let mut w = Worker::<A>::new(wire, nbr, 0);
    let mut tap = |i: u32, port: usize, f: &[u8]| {
        if (i as usize) < n {
            got[i as usize] = Some((port, f.to_vec()));
        }
    };
    let mut done = 0u64;
    while done < n as u64 {
        w.step(16, &mut *s.handle, false, Some(&mut tap));
        done = w.counters.received;
    }
    w.flush();
    let mut bad = 0usize;
    let mut forwarded = 0usize;
    let mut out_frames = Vec::new();
    for (i, g) in got.iter().enumerate() {
        let len = (wire.lens[i] as usize).min(HEADROOM);
        let want = reference::forward::<A>(&wire.headers[i][..len], &s.rib, nbr);
        let ok = match (g, &want) {
            (None, None) => true,
            (Some((p, f)), Some((wp, wf))) => p == wp && f == wf,
            _ => false,
        };
        if let Some((_, f)) = g {
            forwarded += 1;
            if out_frames.len() < 1000 {
                let mut full = f.clone();
                full.resize(wire.lens[i] as usize, 0);
                out_frames.push(full);
            }
            if A::FAMILY == Family::V4
                && packet::ones_sum(&f[packet::ETH..packet::ETH + 20]) != 0xffff
            {
                bad += 1;
                continue;
            }
        }
        if !ok {
            bad += 1;
            if bad <= 3 {
                eprintln!(
                    "{}: frame {i}: fast path {:?}, reference {:?}",
                    s.label, g, want
                );
            }
        }
    }
    outln!(
        "{}: {n} frames checked against the reference forwarder (port, MACs, TTL, checksum): {forwarded} forwarded, {} dropped, {bad} differ",
        s.label,
        n - forwarded
    );
    if let Some(file) = out.pcap_out.take() {
        let what = file.context();
        pcap::write(file.into_writer(), out_frames.iter().map(|f| f.as_slice())).context(what)?;
    }
    Ok(bad == 0)
}

/// Where the time goes per frame: TSC ticks per phase, as ns per frame.
fn breakdown<A: Address>(series: &[Series<A>], wire: &Wire, nbr: &Neighbours, args: &ForwardArgs) {
    // TSC ticks per ns.
    let (t0, i0) = (crate::tsc::ticks(), Instant::now());
    std::thread::sleep(Duration::from_millis(100));
    let per_ns = (crate::tsc::ticks() - t0) as f64 / i0.elapsed().as_nanos() as f64;
    outln!("\nWhere the time goes, ns per frame (1 thread, TSC at {:.2} GHz; timing adds a few ns per batch):", per_ns);
    outln!(
        "{:<22} {:>5} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "series",
        "batch",
        "nic-rx",
        "parse",
        "lookup",
        "rewrite",
        "enqueue",
        "total",
        "Mpps"
    );
    for s in series {
        for &b in &args.breakdown {
            let (c, secs, p) = measure(s, wire, nbr, b, 1, args.seconds, true);
            let f = c.received.max(1) as f64 * per_ns;
            outln!(
                "{:<22} {:>5} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>8.1} {:>7.2}",
                s.label,
                b,
                p.rx as f64 / f,
                p.parse as f64 / f,
                p.lookup as f64 / f,
                p.rewrite as f64 / f,
                p.tx as f64 / f,
                p.total() as f64 / f,
                c.received as f64 / secs / 1e6
            );
        }
    }
}

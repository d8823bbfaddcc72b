//! `lpmkit info`: table statistics and per-scheme build figures.
//!
//! Each scheme's figures are also one record (`--json FILE`, and [`records_from_args`] for
//! `lpmkit experiment`): `build_ms`, `memory_bytes`, `stats.*` (the scheme's own figures:
//! OBMA's `stats.fig13_ones_overlay`, Bloomfwd's `stats.expanded`, …) and, for DXR,
//! `search_steps.N` (the share of lookups taking N binary-search steps; the DXR paper's
//! Table 3), for Spider `depth.N`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use lpmkit::{Address, AnyTable, Table};
use serde_json::{Map, Value};

use crate::input::{self, TableArgs};
use crate::progress;

#[derive(Args, Debug)]
pub struct InfoArgs {
    #[command(flatten)]
    table: TableArgs,

    #[command(flatten)]
    settings: input::SettingsArgs,

    /// Schemes to build (comma-separated names, name prefixes, or `all`).
    #[arg(long, short = 's', default_value = "all")]
    schemes: String,

    #[command(flatten)]
    isa: input::IsaArgs,

    /// For DXR schemes: the share of lookups needing n binary-search steps (the DXR
    /// paper's Table 3) over this many uniform random keys; 0 turns it off.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    search_steps: usize,

    /// For Spider schemes: how deep lookups go (the share of lookups by elements read
    /// after the direct pointing table, and the reads per lookup from levels too large to
    /// stay cached) over this many keys of `bench`'s default pattern (`rnd` for IPv4,
    /// `v6match` for IPv6); 0 turns it off.
    #[arg(long, value_name = "N", default_value_t = 1_000_000)]
    spider_depth: usize,

    /// Also write one JSON record per scheme (every figure printed) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// One scheme's figures, as `--json` writes them.
pub type Record = Map<String, Value>;

pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let records = records(&args)?;
    if let Some(path) = &args.json {
        crate::updates::write_json(path, &records)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `lpmkit info ARGS…` (the words after `info`) run in this process: its records.
pub fn records_from_args(argv: &[String]) -> anyhow::Result<Vec<Record>> {
    #[derive(clap::Parser)]
    #[command(name = "info")]
    struct One {
        #[command(flatten)]
        args: InfoArgs,
    }
    let words = std::iter::once("info".to_string()).chain(argv.iter().cloned());
    records(&<One as clap::Parser>::try_parse_from(words)?.args)
}

fn records(args: &InfoArgs) -> anyhow::Result<Vec<Record>> {
    match input::load(&args.table)? {
        AnyTable::V4(t) => info(&t, args),
        AnyTable::V6(t) => info(&t, args),
    }
}

/// A histogram's shares as a record field: `{"0": share, "1": share, …}`.
fn shares_field(h: &[u64]) -> Value {
    let total = h.iter().sum::<u64>().max(1) as f64;
    let m: Map<String, Value> = h
        .iter()
        .enumerate()
        .map(|(i, &c)| (i.to_string(), (c as f64 / total).into()))
        .collect();
    Value::Object(m)
}

fn info<A: Address>(table: &Table<A>, args: &InfoArgs) -> anyhow::Result<Vec<Record>> {
    let rib = &table.rib;
    println!("table        {}", table.name);
    println!("family       {}", A::FAMILY);
    println!("routes       {}", rib.len());
    println!("next hops    {}", table.next_hops.len());
    println!("prefix lengths (length: routes, share):");
    let hist = rib.length_histogram();
    let total = rib.len().max(1) as f64;
    let cells: Vec<String> = hist
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(len, &n)| format!("/{len:<3} {n:>8} {:>6.2}%", n as f64 * 100.0 / total))
        .collect();
    for row in cells.chunks(4) {
        println!("  {}", row.join("   "));
    }
    let schemes = input::schemes(&args.schemes, A::FAMILY)?;
    args.settings.check(&schemes)?;
    println!();
    println!(
        "{:<12} {:>10} {:>14} {:>10} {:>7}  stats",
        "scheme", "build ms", "memory bytes", "B/prefix", "code"
    );
    let mut records = Vec::new();
    for info in &schemes {
        let opts = args.settings.apply(info, args.isa.options());
        let pb = progress::spinner(format!("building {}", info.name));
        let t0 = Instant::now();
        let built = info.build(rib, &opts);
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        pb.finish_and_clear();
        match built {
            Ok(fib) => {
                let mem = fib.memory_bytes();
                println!(
                    "{:<12} {:>10.1} {:>14} {:>10.2} {:>7}  {}",
                    info.name,
                    ms,
                    mem,
                    mem as f64 / rib.len().max(1) as f64,
                    fib.implementation().to_string(),
                    fib.stats()
                );
                let stats: Map<String, Value> = fib
                    .stats()
                    .iter()
                    .map(|(k, v)| {
                        let v = v.as_f64().map_or_else(|| v.to_string().into(), Value::from);
                        (k.to_string(), v)
                    })
                    .collect();
                let mut r = Record::new();
                r.insert("scheme".into(), info.name.into());
                r.insert(
                    "implementation".into(),
                    fib.implementation().to_string().into(),
                );
                r.insert("family".into(), A::FAMILY.as_str().into());
                r.insert("table".into(), table.name.clone().into());
                r.insert("routes".into(), rib.len().into());
                r.insert("next_hops".into(), table.next_hops.len().into());
                r.insert("build_ms".into(), ms.into());
                r.insert("memory_bytes".into(), mem.into());
                r.insert("stats".into(), stats.into());
                records.push(r);
            }
            Err(e) => println!("{:<12} build failed: {e}", info.name),
        }
    }
    if args.search_steps > 0 {
        let rib4 = (rib as &dyn std::any::Any).downcast_ref::<lpmkit::Rib<u32>>();
        let dxr: Vec<u8> = schemes.iter().filter_map(|s| dxr_k(s.name)).collect();
        if let (Some(rib4), false) = (rib4, dxr.is_empty()) {
            for (k, h) in search_steps(rib4, &dxr, args)? {
                let name = format!("d{k}r");
                if let Some(r) = records.iter_mut().find(|r| r["scheme"] == name.as_str()) {
                    r.insert("search_steps_mean".into(), summarize(&h).0.into());
                    r.insert("search_steps".into(), shares_field(&h));
                }
            }
        }
    }
    if args.spider_depth > 0 && schemes.iter().any(|s| s.name.starts_with("spider")) {
        let h = spider_depth(rib, args.spider_depth)?;
        for r in &mut records {
            if r["scheme"]
                .as_str()
                .is_some_and(|s| s.starts_with("spider"))
            {
                r.insert("depth_mean".into(), summarize(&h).0.into());
                r.insert("depth".into(), shares_field(&h));
            }
        }
    }
    Ok(records)
}

/// How deep Spider lookups go, and how many of their reads leave the cache: the figure
/// that bounds Spider's rate against DIR-24-8's one uncached read per lookup.
fn spider_depth<A: Address>(rib: &lpmkit::Rib<A>, n: usize) -> anyhow::Result<Vec<u64>> {
    use lpmkit::schemes::spider::{Spider, SpiderConfig};
    use lpmkit::traffic::{self, Pattern};
    let pattern = match A::FAMILY {
        lpmkit::Family::V4 => Pattern::Rnd,
        lpmkit::Family::V6 => Pattern::V6Match,
    };
    let keys = traffic::keys(&pattern, rib, n, 1)?;
    // The table (and so the depth) is the same for every `ways`.
    let fib = Spider::build(rib, &SpiderConfig::w16())?;
    let h = fib.depth_histogram(&keys);
    let (mean, shares) = summarize(&h);
    let total = h.iter().sum::<u64>().max(1) as f64;
    // A lookup of depth d reads one element at each of octets 3 ..= d + 2.
    let cold = fib.prefetched_octets();
    let cold_reads = h
        .iter()
        .enumerate()
        .map(|(d, &c)| (3..d + 3).filter(|o| cold.contains(o)).count() as f64 * c as f64)
        .sum::<f64>()
        / total;
    let level_bytes = |o: usize| {
        fib.rows_per_level().get(o - 3).copied().unwrap_or(0)
            * lpmkit::schemes::spider::ROW
            * fib.layout().element_bytes()
    };
    let cold_desc: Vec<String> = cold
        .iter()
        .map(|&o| {
            format!(
                "octet {o}: {:.1} MiB",
                level_bytes(o) as f64 / (1 << 20) as f64
            )
        })
        .collect();
    println!();
    println!(
        "Spider lookup depth ({} {pattern} keys; share of lookups by elements read after the direct pointing table 0, 1, 2, …):",
        keys.len()
    );
    println!("  spider  mean {mean:.3}  [{shares}]");
    println!(
        "  reads per lookup from prefetched (uncached) levels: {cold_reads:.3} ({})",
        if cold_desc.is_empty() {
            "none: every level stays cached".to_string()
        } else {
            cold_desc.join(", ")
        }
    );
    Ok(h)
}

/// The mean of a histogram (`h[i]` counts of value `i`) and its shares, space-separated.
fn summarize(h: &[u64]) -> (f64, String) {
    let total = h.iter().sum::<u64>().max(1) as f64;
    let mean = h
        .iter()
        .enumerate()
        .map(|(i, &c)| i as f64 * c as f64)
        .sum::<f64>()
        / total;
    let shares: Vec<String> = h
        .iter()
        .map(|&c| format!("{:.4}", c as f64 / total))
        .collect();
    (mean, shares.join(" "))
}

/// `k` of a DXR scheme name (`d18r` → 18).
fn dxr_k(name: &str) -> Option<u8> {
    name.strip_prefix('d')?.strip_suffix('r')?.parse().ok()
}

/// The DXR paper's Table 3: share of lookups by binary-search steps; each `k`'s histogram.
fn search_steps(
    rib: &lpmkit::Rib<u32>,
    ks: &[u8],
    args: &InfoArgs,
) -> anyhow::Result<Vec<(u8, Vec<u64>)>> {
    use lpmkit::schemes::dxr::{Dxr, DxrConfig};
    let keys = lpmkit::traffic::uniform::<u32>(args.search_steps, 1);
    println!();
    println!(
        "DXR binary-search steps per lookup ({} uniform random keys; share of lookups by steps 0, 1, 2, …):",
        keys.len()
    );
    let mut out = Vec::new();
    for &k in ks {
        let fib = Dxr::build(rib, &DxrConfig::with_k(k))?;
        let h = fib.search_steps_histogram(&keys);
        let (mean, shares) = summarize(&h);
        println!("  d{k}r  mean {mean:.2}  [{shares}]");
        out.push((k, h));
    }
    Ok(out)
}

//! `lpmkit info`: table statistics and per-scheme build figures.
//!
//! Each scheme's figures are also one record (`--json FILE`, and [`records_from_args`] for
//! `lpmkit experiment`): `build_ms`, `memory_bytes`, `stats.*` (the scheme's structure
//! figures, [`lpmkit::Fib::stats`]: OBMA's `stats.fig13_ones_overlay`, Bloomfwd's
//! `stats.expanded`, …) and the scheme's lookup profile over `--profile-keys` keys
//! ([`lpmkit::Fib::profile`]): for DXR `search_steps.N` (the share of lookups taking N
//! binary-search steps; the DXR paper's Table 3), for Spider `depth.N`, each with its
//! `_mean`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use lpmkit::traffic::Pattern;
use lpmkit::{Address, AnyTable, Table};
use serde_json::{Map, Value};

use crate::bounds;
use crate::input::{self, TableArgs};
use crate::output::outln;
use crate::output::OutputFile;
use crate::progress;

/// The most keys `--profile-keys` samples.
const MAX_SAMPLE_KEYS: u64 = 100_000_000;

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

    /// Each scheme's lookup profile over this many keys of `--pattern`: how lookups go
    /// through the structure, for the schemes that report it — DXR the share of lookups by
    /// binary-search steps (the DXR paper's Table 3), Spider by elements read after the
    /// direct pointing table and the reads per lookup from levels too large to stay
    /// cached, PlanB by front answers, nodes and trees read. 0 turns it off. Range: 0 to
    /// 100000000.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1_000_000,
        alias = "search-steps",
        alias = "spider-depth",
        value_parser = bounds::int::<usize>(0, MAX_SAMPLE_KEYS)
    )]
    profile_keys: usize,

    /// Key pattern of the lookup profiles, as `bench --pattern` (rnd, routable, rep, seq,
    /// zipf, v6match, match:P, trace:FILE). Default: rnd for IPv4, v6match for IPv6.
    #[arg(long, short = 'p')]
    pattern: Option<Pattern>,

    /// Also write one JSON record per scheme (every figure printed) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// One scheme's figures, as `--json` writes them.
pub type Record = Map<String, Value>;

pub fn run(args: InfoArgs) -> anyhow::Result<ExitCode> {
    let json = OutputFile::create_opt("--json", args.json.as_deref())?;
    bounds::check_memory(&[bounds::Need::items(
        "--profile-keys",
        args.profile_keys as u128,
        24,
        "keys",
    )])?;
    let records = records(&args)?;
    if let Some(file) = json {
        crate::updates::write_json(file, &records)?;
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

fn info<A: Address>(table: &Table<A>, args: &InfoArgs) -> anyhow::Result<Vec<Record>> {
    let rib = &table.rib;
    outln!("table        {}", table.name);
    outln!("family       {}", A::FAMILY);
    outln!("routes       {}", rib.len());
    outln!("next hops    {}", table.next_hops.len());
    outln!("prefix lengths (length: routes, share):");
    let hist = rib.length_histogram();
    let total = rib.len().max(1) as f64;
    let cells: Vec<String> = hist
        .iter()
        .enumerate()
        .filter(|(_, &n)| n > 0)
        .map(|(len, &n)| format!("/{len:<3} {n:>8} {:>6.2}%", n as f64 * 100.0 / total))
        .collect();
    for row in cells.chunks(4) {
        outln!("  {}", row.join("   "));
    }
    let schemes = input::schemes(&args.schemes, A::FAMILY)?;
    args.settings.check(&schemes)?;
    outln!();
    outln!(
        "{:<12} {:>10} {:>14} {:>10} {:>7}  stats",
        "scheme",
        "build ms",
        "memory bytes",
        "B/prefix",
        "code"
    );
    let profile_keys = if args.profile_keys > 0 {
        let pattern = args.pattern.clone().unwrap_or(match A::FAMILY {
            lpmkit::Family::V4 => Pattern::Rnd,
            lpmkit::Family::V6 => Pattern::V6Match,
        });
        crate::bench::make_keys(table, &pattern, args.profile_keys, 1)?
    } else {
        Vec::new()
    };
    let mut profiles = Vec::new();
    let mut records = Vec::new();
    let mut choices = Vec::new();
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
                outln!(
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
                if let Some(c) = fib.kernel_choice() {
                    r.insert("kernel_choice".into(), c.to_string().into());
                    choices.push((info.name, fib.implementation(), c));
                }
                r.insert("family".into(), A::FAMILY.as_str().into());
                r.insert("table".into(), table.name.clone().into());
                r.insert("routes".into(), rib.len().into());
                r.insert("next_hops".into(), table.next_hops.len().into());
                r.insert("build_ms".into(), ms.into());
                r.insert("memory_bytes".into(), mem.into());
                r.insert("stats".into(), stats.into());
                // No profile without keys (`--profile-keys 0`): a scheme's shares of no
                // lookups are all zero, not a figure.
                let profile = if profile_keys.is_empty() {
                    lpmkit::Stats::default()
                } else {
                    fib.profile(&profile_keys)
                };
                if !profile.is_empty() {
                    insert_profile(&mut r, &profile);
                    profiles.push((info.name, profile));
                }
                records.push(r);
            }
            Err(e) => outln!("{:<12} build failed: {e}", info.name),
        }
    }
    if !choices.is_empty() {
        outln!();
        outln!("Kernels chosen (docs/simd.md; --force-isa or LPMKIT_FORCE_ISA overrides):");
        for (name, path, why) in &choices {
            outln!("  {name:<12} {:<7} {why}", path.to_string());
        }
    }
    if !profiles.is_empty() {
        outln!();
        outln!(
            "Lookup profiles ({} keys of the {} pattern; shares of the lookups):",
            profile_keys.len(),
            args.pattern
                .as_ref()
                .map_or("default".to_string(), |p| p.to_string())
        );
        for (name, p) in &profiles {
            outln!("  {name:<12} {p}");
        }
    }
    Ok(records)
}

/// A profile's rows as record fields: `key.sub` rows into an object `key` (`{"0": share,
/// "1": share, …}`), the others as they are.
fn insert_profile(r: &mut Record, profile: &lpmkit::Stats) {
    for (k, v) in profile.iter() {
        let v = v.as_f64().map_or_else(|| v.to_string().into(), Value::from);
        match k.split_once('.') {
            Some((group, sub)) => {
                let entry = r
                    .entry(group.to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = entry {
                    m.insert(sub.to_string(), v);
                }
            }
            None => {
                r.insert(k.to_string(), v);
            }
        }
    }
}

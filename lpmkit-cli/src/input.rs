//! Table selection shared by every command: --table FILE or the synthetic table.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, ValueEnum};
use lpmkit::io::{self, TableOptions};
use lpmkit::{synth, AnyTable, Family};

use crate::bounds;
use crate::progress;

/// Exit status when every scheme that ran did its job but some scheme refused the table
/// (a capacity limit): 1 stays "wrong answers", 2 "bad input or usage".
pub const EXIT_REFUSED: u8 = 3;

static REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reports that `scheme` refused the table and goes on; the exit status will say so. A
/// setting the scheme refuses (`--set KEY=VALUE` with a value out of its range) is not a
/// refusal of the table but a usage error: returned, for exit status 2.
pub fn refused(scheme: &str, error: &lpmkit::BuildError) -> anyhow::Result<()> {
    if matches!(error, lpmkit::BuildError::InvalidConfig { .. }) {
        anyhow::bail!("{error}");
    }
    REFUSED.store(true, std::sync::atomic::Ordering::Relaxed);
    let text = error.to_string();
    if text.starts_with(scheme) {
        eprintln!("  refused: {text}");
    } else {
        eprintln!("  refused: {scheme}: {text}");
    }
    Ok(())
}

/// Whether some scheme refused the table during this run.
pub fn any_refused() -> bool {
    REFUSED.load(std::sync::atomic::Ordering::Relaxed)
}

/// An address family on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FamilyArg {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl From<FamilyArg> for Family {
    fn from(f: FamilyArg) -> Family {
        match f {
            FamilyArg::V4 => Family::V4,
            FamilyArg::V6 => Family::V6,
        }
    }
}

/// Where the routing table comes from.
#[derive(Args, Debug, Clone)]
pub struct TableArgs {
    /// Routing table file: text lines `PREFIX/LEN [NEXTHOP]` (`#` comments; .xz/.gz read
    /// transparently) or an MRT RIB dump (TABLE_DUMP / TABLE_DUMP_V2). Without it, the
    /// deterministic synthetic table is used.
    #[arg(long, short = 't', value_name = "FILE", conflicts_with = "synthetic")]
    pub table: Option<PathBuf>,

    /// Use the synthetic Internet-like table of this family (the default, IPv4, when no
    /// --table is given).
    #[arg(long, value_name = "FAMILY")]
    pub synthetic: Option<FamilyArg>,

    /// Routes in the synthetic table [default: 1,000,000 for IPv4, 200,000 for IPv6].
    /// Range: 1 to 100000000.
    #[arg(long, value_name = "N", requires = "synthetic",
          value_parser = bounds::int::<usize>(1, MAX_SYNTH_ROUTES))]
    pub routes: Option<usize>,

    /// Seed of the synthetic table (any 64-bit value).
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    pub synth_seed: u64,

    /// For tables that list only prefixes: assign next hops deterministically from this many
    /// values (the rule keeps neighbouring prefixes' next hops correlated; see
    /// `lpmkit::io::assigned_next_hop`). Range: 1 to 4294967295.
    #[arg(long = "assign-nexthops", value_name = "N", default_value_t = 200,
          value_parser = bounds::int::<u32>(1, u32::MAX as u64))]
    pub assign_nexthops: u32,

    /// MRT dumps: build the table from this peer's routes only (default: best path over all
    /// peers).
    #[arg(long, value_name = "ADDR")]
    pub peer: Option<IpAddr>,

    /// Take this family from a file holding both (MRT dumps); default: detected.
    #[arg(long, value_name = "FAMILY")]
    pub family: Option<FamilyArg>,

    /// Clear host bits of prefixes such as 10.0.0.1/8 instead of rejecting them.
    #[arg(long)]
    pub normalize: bool,

    /// Keep only this fraction of the table's routes, chosen at random with a fixed seed
    /// (the same fraction, the same routes): smaller tables cut from a real one, as the
    /// Bloomfwd paper's Fig. 5 (`--sample 0.0625` for 1/16). Range: 0 to 1.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub sample: Option<f64>,
}

/// A fraction 0..=1 (`--sample`; `nan` and the infinities are not).
fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("`{s}` is not a fraction between 0 and 1")),
    }
}

/// The most routes `--routes` asks of the synthetic generator.
const MAX_SYNTH_ROUTES: u64 = 100_000_000;

/// Bytes a synthetic route takes while it is generated and held (its share of the
/// `Rib` and the generator's working set), for the memory check.
const SYNTH_BYTES_PER_ROUTE: u128 = 160;

impl TableArgs {
    /// The synthetic table of `family` with default settings.
    pub fn synthetic(family: FamilyArg) -> TableArgs {
        TableArgs {
            table: None,
            synthetic: Some(family),
            routes: None,
            synth_seed: 1,
            assign_nexthops: 200,
            peer: None,
            family: None,
            normalize: false,
            sample: None,
        }
    }
}

/// Tells the user what a reader left out (never silently).
pub fn print_notes(stats: &io::ReadStats) {
    for note in stats.notes() {
        eprintln!("note: {note}");
    }
}

/// Loads the table the arguments name, with a spinner and a timing line on stderr.
pub fn load(args: &TableArgs) -> anyhow::Result<AnyTable> {
    let t0 = Instant::now();
    let table = match &args.table {
        Some(path) => {
            let pb = progress::spinner(format!("reading {}", path.display()));
            let opts = TableOptions {
                normalize: args.normalize,
                assign_next_hops: args.assign_nexthops,
                peer: args.peer,
                family: args.family.map(Family::from),
            };
            let t = io::read_table_with_stats(path, &opts);
            pb.finish_and_clear();
            let (t, stats) = t.context("cannot load the table")?;
            print_notes(&stats);
            t
        }
        None => {
            let family = args.synthetic.unwrap_or(FamilyArg::V4);
            let pb = progress::spinner(format!(
                "generating synthetic {} table",
                Family::from(family)
            ));
            let mut cfg = match family {
                FamilyArg::V4 => synth::SynthConfig::ipv4_default(),
                FamilyArg::V6 => synth::SynthConfig::ipv6_default(),
            };
            if let Some(n) = args.routes {
                bounds::check_memory(&[bounds::Need::items(
                    "--routes",
                    n as u128,
                    SYNTH_BYTES_PER_ROUTE,
                    "routes",
                )])?;
                cfg.routes = n;
            }
            cfg.seed = args.synth_seed;
            let t = match family {
                FamilyArg::V4 => AnyTable::V4(synth::try_generate(&cfg)?),
                FamilyArg::V6 => AnyTable::V6(synth::try_generate(&cfg)?),
            };
            pb.finish_and_clear();
            t
        }
    };
    let mut table = table;
    let full = match &mut table {
        AnyTable::V4(t) => sample(&mut t.rib, args.sample),
        AnyTable::V6(t) => sample(&mut t.rib, args.sample),
    };
    let (routes, hops) = match &table {
        AnyTable::V4(t) => (t.rib.len(), t.next_hops.len()),
        AnyTable::V6(t) => (t.rib.len(), t.next_hops.len()),
    };
    let sampled = match (args.sample, full) {
        (Some(f), Some(n)) => format!(" (a {f} sample of its {n})"),
        _ => String::new(),
    };
    eprintln!(
        "loaded {} ({}): {} routes{sampled}, {} next hops in {:.0} ms",
        table.name(),
        table.family(),
        routes,
        hops,
        t0.elapsed().as_secs_f64() * 1e3
    );
    Ok(table)
}

/// Keeps the `--sample` fraction of `rib`; returns the count before, if it sampled.
fn sample<A: lpmkit::Address>(rib: &mut lpmkit::Rib<A>, fraction: Option<f64>) -> Option<usize> {
    let f = fraction?;
    let n = rib.len();
    *rib = rib.sample(f, 1);
    Some(n)
}

/// The instruction-set ceiling of the lookups: `--force-isa ISA`, `--force-scalar`.
#[derive(Args, Clone, Debug, Default)]
pub struct IsaArgs {
    /// Use scalar lookup code even where the CPU has SIMD support (the same as
    /// `--force-isa scalar`).
    #[arg(long)]
    pub force_scalar: bool,

    /// The highest instruction set the lookups may use: `avx2` or `scalar` (`avx512`: no
    /// cap, and the AVX-512 kernels that otherwise give way to AVX2 ones — dir24-8, sail-l,
    /// bloomfwd, IPv6 spider16w, planb — run too). Each table takes the best path the CPU has
    /// at or below it (AVX-512, AVX2, scalar). The environment variable LPMKIT_FORCE_ISA sets
    /// a ceiling for every command.
    #[arg(long, value_name = "ISA")]
    pub force_isa: Option<lpmkit::simd::Isa>,
}

impl IsaArgs {
    /// Build options with this ceiling.
    pub fn options(&self) -> lpmkit::BuildOptions {
        let mut o = lpmkit::BuildOptions::scalar(self.force_scalar);
        o.isa = self.force_isa;
        o
    }

    /// The ceiling, with the environment's.
    pub fn ceiling(&self) -> lpmkit::simd::Isa {
        lpmkit::simd::Isa::ceiling(self.force_scalar, self.force_isa)
    }

    /// What the bench and info headers print: the best level the CPU has under the
    /// ceiling, and the ceiling when it caps.
    pub fn describe(&self) -> String {
        let best = lpmkit::simd::Isa::best_supported();
        let ceiling = self.ceiling();
        if ceiling < best {
            format!("{} (cpu has {best})", best.min(ceiling))
        } else {
            best.to_string()
        }
    }
}

/// Scheme settings from the command line: `--set KEY=VALUE`, repeatable.
#[derive(Args, Clone, Debug, Default)]
pub struct SettingsArgs {
    /// A scheme setting, KEY=VALUE (repeatable; `lpmkit schemes` lists each scheme's keys),
    /// for what a preset does not fix: e.g. `-s d18r --set k=20` builds DXR with a 20-bit
    /// direct table, `-s poptrie16 --set s=12` Poptrie with 12 direct bits. A setting goes
    /// to every selected scheme that knows its key; a key none of them knows is an error.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

impl SettingsArgs {
    /// The settings as pairs; an item without `=` is an error.
    fn pairs(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.set
            .iter()
            .map(|item| {
                let (k, v) = item
                    .split_once('=')
                    .with_context(|| format!("--set {item:?}: expected KEY=VALUE"))?;
                Ok((k.trim().to_string(), v.trim().to_string()))
            })
            .collect()
    }

    /// Checks that every key is known to at least one of `schemes`.
    pub fn check(&self, schemes: &[&'static lpmkit::registry::SchemeInfo]) -> anyhow::Result<()> {
        for (k, _) in self.pairs()? {
            let known = |s: &&lpmkit::registry::SchemeInfo| {
                s.family().settings.iter().any(|(key, _)| *key == k)
            };
            if !schemes.iter().any(known) {
                let keys: Vec<String> = schemes
                    .iter()
                    .map(|s| {
                        let ks: Vec<&str> = s.family().settings.iter().map(|(k, _)| *k).collect();
                        format!(
                            "{}: {}",
                            s.name,
                            if ks.is_empty() {
                                "none".to_string()
                            } else {
                                ks.join(", ")
                            }
                        )
                    })
                    .collect();
                anyhow::bail!(
                    "--set {k}=…: no selected scheme has a setting {k:?} (their keys: {})",
                    keys.join("; ")
                );
            }
        }
        Ok(())
    }

    /// `opts` with the settings `scheme` knows added.
    pub fn apply(
        &self,
        scheme: &lpmkit::registry::SchemeInfo,
        mut opts: lpmkit::BuildOptions,
    ) -> lpmkit::BuildOptions {
        let known = scheme.family().settings;
        for (k, v) in self.pairs().unwrap_or_default() {
            if known.iter().any(|(key, _)| *key == k) {
                opts.settings.push((k, v));
            }
        }
        opts
    }
}

/// Parses a scheme list for a family, as an anyhow error.
pub fn schemes(
    list: &str,
    family: Family,
) -> anyhow::Result<Vec<&'static lpmkit::registry::SchemeInfo>> {
    lpmkit::registry::select(list, family).map_err(anyhow::Error::msg)
}

//! `lpmkit export`: the table and the keys a benchmark uses, as plain text files, for
//! programs outside lpmkit (peers measured on the same table and keys).
//!
//! * `--routes-out FILE`: one route per line, `PREFIX/LEN ID`, where ID is the route's
//!   next-hop id (the number lpmkit's lookups return). lpmkit reads the file back as a
//!   table (the ids become the next-hop names), and it is the FIB format of the PlanB
//!   reimplementation `planb-lpm`.
//! * `--keys-out FILE`: the keys of `--pattern`, one address per line, in order: what
//!   `lpmkit bench --pattern trace:FILE` replays.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lpmkit::traffic::{self, Pattern};
use lpmkit::{prefix::format_addr, Address, AnyTable, Family, Table};

use crate::input::{self, TableArgs};

#[derive(Args, Debug)]
pub struct ExportArgs {
    #[command(flatten)]
    table: TableArgs,

    /// Write the table here, one `PREFIX/LEN ID` line per route (ID: the next-hop id).
    #[arg(long, value_name = "FILE")]
    routes_out: Option<PathBuf>,

    /// Write the keys of --pattern here, one address per line.
    #[arg(long, value_name = "FILE")]
    keys_out: Option<PathBuf>,

    /// Key pattern of --keys-out, as `lpmkit bench --pattern` (except trace:FILE).
    /// Default: rnd for IPv4, v6match for IPv6.
    #[arg(long, short = 'p')]
    pattern: Option<Pattern>,

    /// Keys to write.
    #[arg(long, short = 'k', default_value_t = 1 << 24, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    keys: usize,

    /// Seed of the keys (the same seed gives `lpmkit bench` the same keys).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    if args.routes_out.is_none() && args.keys_out.is_none() {
        anyhow::bail!("nothing to export: give --routes-out FILE and/or --keys-out FILE");
    }
    match input::load(&args.table)? {
        AnyTable::V4(t) => export(&t, &args),
        AnyTable::V6(t) => export(&t, &args),
    }
}

fn create(path: &Path) -> anyhow::Result<BufWriter<std::fs::File>> {
    let f =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    Ok(BufWriter::with_capacity(1 << 20, f))
}

fn export<A: Address>(table: &Table<A>, args: &ExportArgs) -> anyhow::Result<ExitCode> {
    if let Some(path) = &args.routes_out {
        let mut w = create(path)?;
        for (p, nh) in table.rib.iter() {
            writeln!(w, "{p} {}", nh.get())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        w.flush()
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {} routes to {}", table.rib.len(), path.display());
    }
    if let Some(path) = &args.keys_out {
        let pattern = args.pattern.clone().unwrap_or(match A::FAMILY {
            Family::V4 => Pattern::Rnd,
            Family::V6 => Pattern::V6Match,
        });
        if let Pattern::Trace(_) = pattern {
            anyhow::bail!("--pattern trace:FILE: the keys are that file already");
        }
        let keys = traffic::keys(&pattern, &table.rib, args.keys, args.seed)?;
        let mut w = create(path)?;
        for &k in &keys {
            writeln!(w, "{}", format_addr(k))
                .with_context(|| format!("writing {}", path.display()))?;
        }
        w.flush()
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "wrote {} keys ({pattern}, seed {}) to {}",
            keys.len(),
            args.seed,
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

//! `lpmkit export`: the table and the keys a benchmark uses, as plain text files, for
//! programs outside lpmkit (peers measured on the same table and keys).
//!
//! * `--routes-out FILE`: one route per line, `PREFIX/LEN ID`, where ID is the route's
//!   next-hop id (the number lpmkit's lookups return). lpmkit reads the file back as a
//!   table (the ids become the next-hop names), and it is the FIB format of the PlanB
//!   reimplementation `planb-lpm`.
//! * `--keys-out FILE`: the keys of `--pattern`, one address per line, in order: what
//!   `lpmkit bench --pattern trace:FILE` replays.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lpmkit::traffic::{self, Pattern};
use lpmkit::{prefix::format_addr, Address, AnyTable, Family, Table};

use crate::bench::MAX_KEYS;
use crate::bounds;
use crate::input::{self, TableArgs};
use crate::output::OutputFile;

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

    /// Keys to write. Range: 1 to 4294967296.
    #[arg(long, short = 'k', default_value_t = 1 << 24,
          value_parser = bounds::int::<usize>(1, MAX_KEYS))]
    keys: usize,

    /// Seed of the keys (any 64-bit value; the same seed gives `lpmkit bench` the same
    /// keys).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(args: ExportArgs) -> anyhow::Result<ExitCode> {
    if args.routes_out.is_none() && args.keys_out.is_none() {
        anyhow::bail!("nothing to export: give --routes-out FILE and/or --keys-out FILE");
    }
    // The files are created before the work: a path that cannot be written fails at once.
    let routes_out = OutputFile::create_opt("--routes-out", args.routes_out.as_deref())?;
    let keys_out = OutputFile::create_opt("--keys-out", args.keys_out.as_deref())?;
    match input::load(&args.table)? {
        AnyTable::V4(t) => export(&t, &args, routes_out, keys_out),
        AnyTable::V6(t) => export(&t, &args, routes_out, keys_out),
    }
}

fn export<A: Address>(
    table: &Table<A>,
    args: &ExportArgs,
    routes_out: Option<OutputFile>,
    keys_out: Option<OutputFile>,
) -> anyhow::Result<ExitCode> {
    if let Some(file) = routes_out {
        let (path, context) = (file.path().display().to_string(), file.context());
        let mut w = file.into_writer();
        for (p, nh) in table.rib.iter() {
            writeln!(w, "{p} {}", nh.get()).with_context(|| context.clone())?;
        }
        w.flush().with_context(|| context.clone())?;
        eprintln!("wrote {} routes to {path}", table.rib.len());
    }
    if let Some(file) = keys_out {
        let pattern = args.pattern.clone().unwrap_or(match A::FAMILY {
            Family::V4 => Pattern::Rnd,
            Family::V6 => Pattern::V6Match,
        });
        if let Pattern::Trace(_) = pattern {
            anyhow::bail!("--pattern trace:FILE: the keys are that file already");
        }
        bounds::check_memory(&[bounds::Need::items(
            "--keys",
            args.keys as u128,
            core::mem::size_of::<A>() as u128,
            "keys",
        )])?;
        let keys = traffic::keys(&pattern, &table.rib, args.keys, args.seed)?;
        let (path, context) = (file.path().display().to_string(), file.context());
        let mut w = file.into_writer();
        for &k in &keys {
            writeln!(w, "{}", format_addr(k)).with_context(|| context.clone())?;
        }
        w.flush().with_context(|| context.clone())?;
        eprintln!(
            "wrote {} keys ({pattern}, seed {}) to {path}",
            keys.len(),
            args.seed
        );
    }
    Ok(ExitCode::SUCCESS)
}

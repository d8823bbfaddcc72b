//! `lpmkit lookup`: next hop and matched prefix of given addresses.

use std::io::BufRead;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lpmkit::{prefix::parse_addr, Address, AnyTable, BuildOptions, NextHop, Table};

use crate::input::{self, TableArgs};
use crate::output::outln;

#[derive(Args, Debug)]
pub struct LookupArgs {
    #[command(flatten)]
    table: TableArgs,

    #[command(flatten)]
    settings: input::SettingsArgs,

    /// The scheme that answers (its answer is checked against the reference trie, which
    /// supplies the matched prefix).
    #[arg(long, short = 's', default_value = "trie")]
    scheme: String,

    /// Addresses to look up; without any, one address per line is read from stdin.
    #[arg(value_name = "ADDR")]
    addrs: Vec<String>,
}

pub fn run(args: LookupArgs) -> anyhow::Result<ExitCode> {
    match input::load(&args.table)? {
        AnyTable::V4(t) => lookup(&t, &args),
        AnyTable::V6(t) => lookup(&t, &args),
    }
}

fn lookup<A: Address>(table: &Table<A>, args: &LookupArgs) -> anyhow::Result<ExitCode> {
    let info = lpmkit::registry::find(&args.scheme)
        .with_context(|| format!("unknown scheme {:?} (see `lpmkit schemes`)", args.scheme))?;
    args.settings.check(&[info])?;
    let fib = info.build(
        &table.rib,
        &args.settings.apply(info, BuildOptions::default()),
    )?;
    let mut inputs: Vec<(String, String)> = args
        .addrs
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("argument {}", i + 1), a.clone()))
        .collect();
    if inputs.is_empty() {
        for (i, line) in std::io::stdin().lock().lines().enumerate() {
            let line = line.context("reading stdin")?;
            let t = line.split('#').next().unwrap_or("").trim();
            if !t.is_empty() {
                inputs.push((format!("stdin line {}", i + 1), t.to_string()));
            }
        }
    }
    // Parse everything first, so bad input fails before any output.
    let parsed: Vec<(String, A)> = inputs
        .into_iter()
        .map(|(whence, text)| {
            let a = parse_addr::<A>(&text).with_context(|| {
                let shown: String = text.chars().take(60).collect();
                let cut = if shown.len() < text.len() { "…" } else { "" };
                format!("{whence}: {shown:?}{cut} is not an {} address", A::FAMILY)
            })?;
            Ok((text, a))
        })
        .collect::<anyhow::Result<_>>()?;
    let mut disagreements = 0;
    for (text, addr) in parsed {
        let got = fib.lookup(addr);
        let reference = table.rib.lookup_prefix(addr);
        match (got, reference) {
            (None, None) => outln!("{text}\tno route"),
            (Some(nh), Some((prefix, want))) if nh == want => {
                outln!("{text}\t{}\t{prefix}\t(nh {nh})", name(table, nh))
            }
            _ => {
                disagreements += 1;
                outln!(
                    "{text}\tMISMATCH: {} says {:?}, the reference trie says {:?}",
                    info.name,
                    got.map(|n| name(table, n)),
                    reference.map(|(p, n)| format!("{} via {p}", name(table, n)))
                );
            }
        }
    }
    Ok(if disagreements > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn name<A: Address>(table: &Table<A>, nh: NextHop) -> String {
    table
        .next_hops
        .value(nh)
        .cloned()
        .unwrap_or_else(|| format!("nh{nh}"))
}

//! `lpmkit lookup`: next hop and matched prefix of given addresses.

use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lpmkit::io::LineReader;
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

    /// Addresses to look up; without any, one address per line is read from stdin and
    /// answered line by line, in constant memory (a line may be at most 64 KiB; a bad
    /// line ends the run with its line number).
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
    let mut disagreements = 0;
    let mut answer = |text: &str, addr: A| {
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
    };
    let parse = |whence: &dyn std::fmt::Display, text: &str| -> anyhow::Result<A> {
        parse_addr::<A>(text).with_context(|| {
            let shown: String = text.chars().take(60).collect();
            let cut = if shown.len() < text.len() { "…" } else { "" };
            format!("{whence}: {shown:?}{cut} is not an {} address", A::FAMILY)
        })
    };
    if args.addrs.is_empty() {
        // One line at a time, in constant memory (lines of at most 64 KiB).
        let stdin = std::io::stdin().lock();
        let mut lines = LineReader::new(stdin, "stdin");
        loop {
            let no = lines.line() + 1;
            let Some(line) = lines.next_line()? else {
                break;
            };
            let t = line.split('#').next().unwrap_or("").trim();
            if !t.is_empty() {
                let a = parse(&format!("stdin line {no}"), t)?;
                answer(t, a);
            }
        }
    } else {
        // Every argument parsed first, so a bad one fails before any output.
        let parsed: Vec<A> = args
            .addrs
            .iter()
            .enumerate()
            .map(|(i, text)| parse(&format!("argument {}", i + 1), text))
            .collect::<anyhow::Result<_>>()?;
        for (text, a) in args.addrs.iter().zip(parsed) {
            answer(text, a);
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

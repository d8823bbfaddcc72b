//! `lpmkit annotate`: a stream of addresses in, CSV out (address, matched prefix, value).
//!
//! The input is read line by line and looked up in batches of [`BATCH`] lines, so memory
//! stays constant however long the stream: the table, one batch of lines and the output
//! buffer. Each batch goes through a [`RouteTable`] whose values are route indices — the
//! scheme's batch lookup answers the route, which gives both the matched prefix and the
//! table's value — so the matched prefix costs nothing extra.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use lpmkit::facade::RouteTable;
use lpmkit::io::LineReader;
use lpmkit::prefix::parse_addr;
use lpmkit::{Address, AnyTable, BuildOptions, Prefix, Table};

use crate::input::{self, TableArgs};
use crate::output::OutputFile;

/// Lines looked up together.
const BATCH: usize = 4096;

#[derive(Args, Debug)]
pub struct AnnotateArgs {
    #[command(flatten)]
    table: TableArgs,

    #[command(flatten)]
    settings: input::SettingsArgs,

    /// The scheme that answers: `auto` (see `lpmkit::facade`) or a registry name.
    #[arg(long, short = 's', default_value = "auto")]
    scheme: String,

    /// Addresses, one per line (or a CSV column, see --column); `-` or nothing reads stdin.
    /// .xz/.gz input is decompressed transparently.
    #[arg(value_name = "INPUT")]
    input: Option<PathBuf>,

    /// The input is CSV (or another delimited text): take the address from this column, a
    /// 1-based number or, with --header, a column name. Fields are split at the delimiter
    /// and surrounding double quotes removed (a quoted field containing the delimiter is
    /// not supported).
    #[arg(long, short = 'c', value_name = "N|NAME")]
    column: Option<String>,

    /// The delimiter of --column input.
    #[arg(long, short = 'd', default_value = ",", value_name = "CHAR")]
    delimiter: char,

    /// The first input line is a header (skipped; names the columns for --column).
    #[arg(long)]
    header: bool,

    /// Write the CSV here instead of stdout.
    #[arg(long, short = 'o', value_name = "FILE")]
    output: Option<PathBuf>,

    /// Lines whose address does not parse are written with an empty prefix and value and
    /// counted on stderr, instead of ending the run with an error naming the line.
    #[arg(long)]
    skip_invalid: bool,
}

pub fn run(args: AnnotateArgs) -> anyhow::Result<ExitCode> {
    if args.delimiter.len_utf8() != 1 {
        anyhow::bail!("--delimiter must be a single-byte character");
    }
    if args.column.is_none() && args.header {
        anyhow::bail!("--header needs --column (plain address lists have no header)");
    }
    let output = OutputFile::create_opt("--output", args.output.as_deref())?;
    match input::load(&args.table)? {
        AnyTable::V4(t) => annotate(t, &args, output),
        AnyTable::V6(t) => annotate(t, &args, output),
    }
}

/// Where the address is on a line.
enum Column {
    Whole,
    Field(usize),
}

fn field<'a>(line: &'a str, col: &Column, delim: char) -> Option<&'a str> {
    match col {
        Column::Whole => {
            let t = line.split('#').next().unwrap_or("").trim();
            Some(t)
        }
        Column::Field(i) => line
            .split(delim)
            .nth(*i)
            .map(|f| f.trim().trim_matches('"').trim()),
    }
}

fn annotate<A: Address>(
    table: Table<A>,
    args: &AnnotateArgs,
    output: Option<OutputFile>,
) -> anyhow::Result<ExitCode> {
    // Route index i + 1 is the value id of route i (values interned in route order).
    let routes: Vec<(Prefix<A>, String)> = table
        .rib
        .iter()
        .map(|(p, nh)| {
            let name = table
                .next_hops
                .value(nh)
                .cloned()
                .unwrap_or_else(|| format!("nh{nh}"));
            (p, name)
        })
        .collect();
    drop(table);
    let opts = match lpmkit::registry::find(&args.scheme) {
        Some(info) => {
            args.settings.check(&[info])?;
            args.settings.apply(info, BuildOptions::default())
        }
        None if args.settings.set.is_empty() => BuildOptions::default(),
        None => anyhow::bail!(
            "--set needs a named scheme (-s NAME), not {:?}",
            args.scheme
        ),
    };
    let index = RouteTable::<A, u32>::from_routes(
        routes.iter().enumerate().map(|(i, (p, _))| (*p, i as u32)),
        &args.scheme,
        &opts,
    )?;
    eprintln!(
        "annotating with {} ({} routes)",
        index.scheme(),
        routes.len()
    );
    if let Some(choice) = index.auto_choice() {
        eprintln!("{choice}");
    }

    let path = args.input.clone().unwrap_or_else(|| PathBuf::from("-"));
    let source = if path.as_os_str() == "-" {
        "stdin".to_string()
    } else {
        path.display().to_string()
    };
    let mut reader = LineReader::new(lpmkit::io::open_input(&path)?, &source);
    let (out, dest): (Box<dyn Write>, String) = match output {
        Some(f) => {
            let dest = f.context();
            (Box::new(f.into_writer()), dest)
        }
        None => (
            Box::new(std::io::stdout().lock()),
            "cannot write to standard output".to_string(),
        ),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let delim = args.delimiter;
    let mut col = match &args.column {
        None => Column::Whole,
        Some(c) => match c.parse::<usize>() {
            Ok(0) => anyhow::bail!("--column numbers start at 1"),
            Ok(n) => Column::Field(n - 1),
            Err(_) if args.header => Column::Whole, // resolved from the header below
            Err(_) => anyhow::bail!("--column {c:?} is a name: it needs --header"),
        },
    };
    if args.header {
        if let Some(head) = reader.next_line()? {
            if let (Some(name), Column::Whole) = (&args.column, &col) {
                let names: Vec<&str> = head
                    .split(delim)
                    .map(|f| f.trim().trim_matches('"'))
                    .collect();
                let i = names.iter().position(|n| n == name).with_context(|| {
                    format!(
                        "{source}:1: no column named {name:?} in the header (columns: {})",
                        names.join(", ")
                    )
                })?;
                col = Column::Field(i);
            }
        }
    }
    writeln!(out, "address,prefix,value").context(dest.clone())?;

    let mut lines: Vec<String> = Vec::with_capacity(BATCH);
    let mut keys: Vec<A> = Vec::with_capacity(BATCH);
    let mut valid: Vec<bool> = Vec::with_capacity(BATCH);
    let mut ids = vec![0u32; BATCH];
    let (mut total, mut matched, mut invalid) = (0u64, 0u64, 0u64);
    let mut done = false;
    while !done {
        lines.clear();
        keys.clear();
        valid.clear();
        while lines.len() < BATCH {
            let line_no = reader.line() + 1;
            let Some(line) = reader.next_line()? else {
                done = true;
                break;
            };
            let Some(text) = field(line, &col, delim) else {
                if args.skip_invalid {
                    invalid += 1;
                    lines.push(String::new());
                    keys.push(A::ZERO);
                    valid.push(false);
                    continue;
                }
                anyhow::bail!(
                    "{source}:{line_no}: the line has no column {}",
                    col_no(&col)
                );
            };
            if text.is_empty() && matches!(col, Column::Whole) {
                continue; // blank line or comment
            }
            match parse_addr::<A>(text) {
                Some(a) => {
                    keys.push(a);
                    valid.push(true);
                }
                None if args.skip_invalid => {
                    invalid += 1;
                    keys.push(A::ZERO);
                    valid.push(false);
                }
                None => {
                    let shown: String = text.chars().take(60).collect();
                    let cut = if shown.len() < text.len() { "…" } else { "" };
                    anyhow::bail!(
                        "{source}:{line_no}: {shown:?}{cut} is not an {} address",
                        A::FAMILY
                    );
                }
            }
            lines.push(text.to_string());
        }
        index.lookup_ids(&keys, &mut ids[..keys.len()]);
        let mut write_batch = || -> std::io::Result<()> {
            for i in 0..lines.len() {
                total += 1;
                csv_field(&mut out, &lines[i])?;
                let route = match (valid[i], ids[i]) {
                    (true, id) if id > 0 => index.value(id).map(|&r| &routes[r as usize]),
                    _ => None,
                };
                match route {
                    Some((p, v)) => {
                        matched += 1;
                        write!(out, ",{p},")?;
                        csv_field(&mut out, v)?;
                        out.write_all(b"\n")?;
                    }
                    None => out.write_all(b",,\n")?,
                }
            }
            Ok(())
        };
        write_batch().context(dest.clone())?;
    }
    out.flush().context(dest.clone())?;
    eprintln!(
        "annotated {total} addresses: {matched} matched a route, {} did not{}",
        total - matched - invalid,
        if invalid > 0 {
            format!(", {invalid} invalid (written with empty fields)")
        } else {
            String::new()
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn col_no(col: &Column) -> usize {
    match col {
        Column::Whole => 1,
        Column::Field(i) => i + 1,
    }
}

/// Reads one line into `buf` (cleared first); false at the end of the input.
fn csv_field(out: &mut impl Write, s: &str) -> std::io::Result<()> {
    if s.contains([',', '"', '\n', '\r']) {
        write!(out, "\"{}\"", s.replace('"', "\"\""))
    } else {
        out.write_all(s.as_bytes())
    }
}

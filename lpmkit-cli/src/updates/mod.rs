//! `lpmkit updates`: replay an update trace against schemes.
//!
//! Rebuild-style schemes go through [`lpmkit::sync::Publisher`]: the writer (this thread)
//! applies each change to the `Rib` and rebuilds + publishes whenever the hold time has
//! run out, while reader threads keep looking up random keys through lock-free
//! [`lpmkit::sync::Reader`]s; the report gives the update rate, the publications and their
//! build times, and the readers' lookup rate during the replay beside their rate on an idle
//! table. Incremental schemes apply every change in place and are measured in one run:
//! alone (the scheme's own `apply`, no readers), as ONE instance patched through
//! [`lpmkit::sync::InPlace`] first without readers and then while readers look up (the
//! ratio of the two compares runs that differ only in the readers), and as left-right
//! twins ([`lpmkit::sync::TwinUpdater`]), with the update rate, the readers' lookup rate
//! against their idle rate, and the peak memory held for the table against its footprint
//! when built. Before them all, the trie alone and every in-place scheme replay the same
//! changes in *lockstep* (segment by segment, in turn), so the ratios between them come
//! from one phase of the host.
//!
//! Every figure printed is also a field of one record per scheme (`--json FILE`, and
//! [`records_from_args`] for `lpmkit experiment`): `alone_updates_per_s`,
//! `structure_updates_per_s` (the scheme's replay minus the trie's), `structure_timed_updates_per_s`
//! (its `apply` timed apart from its `Rib` work), the lockstep replay's `lockstep_updates_per_s`,
//! `lockstep_vs_trie`, `lockstep_structure_updates_per_s`, `lockstep_structure_timed_updates_per_s`
//! and `lockstep_trie_updates_per_s` (the trie alone and every in-place scheme applying the
//! same `--lockstep-changes` changes in turn: ratios from one phase of the host; with
//! `lockstep_segment_changes`, and `lockstep_empty_interval_ticks`, the TSC count of an
//! empty interval taken off every timed one),
//! `in_place_no_readers_updates_per_s`, `in_place_vs_no_readers`,
//! `in_place_reader_ratio`, the interleaved segments' `interleaved_reader_ratio` and
//! `interleaved_writer_ratio` (medians of the rounds, every round's in `…_runs`),
//! `twins_updates_per_s`, the
//! scheme's per-update counts (`per_update.pointers`, …), `table_ok`.
//!
//! The 2024 RIS traces are raw per-peer BGP messages; replaying them into one table keyed by
//! prefix (as this command does) is a churn stress test, not a model of a router's FIB.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use lpmkit::registry::SchemeInfo;
use lpmkit::{traffic, Address, AnyTable, BuildOptions, Change, Rib, Table};
use serde_json::{Map, Value};

use crate::bench;
use crate::bounds;
use crate::input::{self, TableArgs};
use crate::output::outln;
use crate::output::OutputFile;
use crate::progress;

mod incremental;
mod interleave;
mod readers;
mod rebuild;
mod split;

#[derive(Args, Clone, Debug)]
pub struct UpdatesArgs {
    #[command(flatten)]
    table: TableArgs,

    #[command(flatten)]
    settings: input::SettingsArgs,

    /// The update trace: text (`TIME A PREFIX NEXTHOP [PEER]` / `TIME W PREFIX - [PEER]`) or
    /// MRT BGP4MP.
    #[arg(long, value_name = "FILE")]
    trace: PathBuf,

    /// Schemes to replay against (comma-separated names, name prefixes, or `all`).
    #[arg(long, short = 's', default_value = "all")]
    schemes: String,

    /// Reader threads looking up while the writer replays (0: measure the writer alone).
    /// Range: 0 to 1024.
    #[arg(long, default_value_t = 1, value_parser = bounds::int::<usize>(0, bench::MAX_THREADS))]
    readers: usize,

    /// Hold time in milliseconds between the first unpublished change and the rebuild.
    /// Range: 0 to 3600000.
    #[arg(long, default_value_t = 100, value_parser = bounds::int::<u64>(0, 3_600_000))]
    hold_ms: u64,

    /// Replay the trace this many times (alternating forward replays of the same changes).
    /// Range: 1 to 10000.
    #[arg(long, default_value_t = 1, value_parser = bounds::int::<usize>(1, 10_000))]
    repeat: usize,

    /// Pace the replay by the trace's timestamps, this many times faster than real time
    /// (rebuild-style schemes, and the replays of incremental schemes with readers; the
    /// writer-alone replay stays unpaced); without it the writer applies changes as fast
    /// as it can. Range: above 0 and at most 1000000000.
    #[arg(long, value_name = "FACTOR", value_parser = bounds::float(0.0, 1e9, true))]
    speedup: Option<f64>,

    /// Random keys the readers cycle through. Range: 1 to 4294967296.
    #[arg(long, default_value_t = 1 << 22, value_parser = bounds::int::<usize>(1, bench::MAX_KEYS))]
    keys: usize,

    /// Segment length of the interleaved measurement of in-place schemes with readers
    /// (readers alone, readers + writer, writer alone, in turn; milliseconds).
    /// Range: 1 to 60000.
    #[arg(long, default_value_t = 10, value_parser = bounds::int::<u64>(1, 60_000))]
    segment_ms: u64,

    /// Changes per segment of the lockstep replay, where the trie alone and every in-place
    /// scheme apply the same segment in turn (their ratios then come from one phase of
    /// the host; each segment starts with caches the others used, and its first fifth is
    /// an uncounted lead-in). Short segments weigh those cold starts on the fastest
    /// scheme; 20,000 changes are a few milliseconds of a fast scheme's work and tens of a
    /// slow one's, well inside a phase of a shared host (seconds). Range: 1 to 100000000.
    #[arg(long, default_value_t = 20_000, value_parser = bounds::int::<usize>(1, 100_000_000))]
    lockstep_changes: usize,
    /// Keys per reader `lookup_batch` call. Range: 1 to 65536.
    #[arg(long, default_value_t = 256, value_parser = bounds::int::<usize>(1, bench::MAX_BATCH))]
    batch: usize,

    /// Replay only the first N updates of the trace (before `--repeat`).
    /// Range: 1 to 1000000000000.
    #[arg(long, value_name = "N", value_parser = bounds::int::<usize>(1, 1_000_000_000_000))]
    limit: Option<usize>,

    /// Also write one JSON record per scheme (every figure printed) to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// One scheme's figures, as `--json` writes them.
pub type Record = Map<String, Value>;

pub fn run(args: UpdatesArgs) -> anyhow::Result<ExitCode> {
    let json = OutputFile::create_opt("--json", args.json.as_deref())?;
    let records = records(&args)?;
    if let Some(file) = json {
        write_json(file, &records)?;
    }
    Ok(if records.iter().any(wrong) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `lpmkit updates ARGS…` (the words after `updates`) run in this process: its records.
pub fn records_from_args(argv: &[String]) -> anyhow::Result<Vec<Record>> {
    #[derive(clap::Parser)]
    #[command(name = "updates")]
    struct One {
        #[command(flatten)]
        args: UpdatesArgs,
    }
    let words = std::iter::once("updates".to_string()).chain(argv.iter().cloned());
    records(&<One as clap::Parser>::try_parse_from(words)?.args)
}

/// The scheme's table differed from the trie after the replay.
pub fn wrong(r: &Record) -> bool {
    r.get("table_ok") == Some(&Value::Bool(false))
}

/// Writes `records` as one pretty JSON array.
pub fn write_json(mut file: OutputFile, records: &[Record]) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(records)?;
    file.write_all((text + "\n").as_bytes())?;
    eprintln!(
        "wrote {} records to {}",
        records.len(),
        file.path().display()
    );
    Ok(())
}

fn records(args: &UpdatesArgs) -> anyhow::Result<Vec<Record>> {
    if args.table.table.is_none() {
        // A synthetic table is generated after the trace is read: a trace that cannot be
        // read ends the run before the table's memory is spent.
        return match args.table.synthetic.unwrap_or(input::FamilyArg::V4) {
            input::FamilyArg::V4 => {
                let trace = Trace::<u32>::read(args)?;
                match input::load(&args.table)? {
                    AnyTable::V4(t) => replay(t, Some(trace), args),
                    AnyTable::V6(_) => unreachable!("a synthetic IPv4 table is IPv4"),
                }
            }
            input::FamilyArg::V6 => {
                let trace = Trace::<u128>::read(args)?;
                match input::load(&args.table)? {
                    AnyTable::V6(t) => replay(t, Some(trace), args),
                    AnyTable::V4(_) => unreachable!("a synthetic IPv6 table is IPv6"),
                }
            }
        };
    }
    match input::load(&args.table)? {
        AnyTable::V4(t) => replay(t, None, args),
        AnyTable::V6(t) => replay(t, None, args),
    }
}

/// An update trace read before its table exists, with the next hops it names.
struct Trace<A: Address> {
    updates: Vec<lpmkit::io::Update<A>>,
    stats: lpmkit::io::ReadStats,
    next_hops: lpmkit::NextHopTable<String>,
}

impl<A: Address> Trace<A> {
    fn read(args: &UpdatesArgs) -> anyhow::Result<Self> {
        let mut next_hops = lpmkit::NextHopTable::new();
        let pb = progress::spinner(format!("reading {}", args.trace.display()));
        let read = lpmkit::io::read_updates_with_stats::<A>(&args.trace, &mut next_hops);
        pb.finish_and_clear();
        let (updates, stats) = read.context("cannot read the update trace")?;
        Ok(Trace {
            updates,
            stats,
            next_hops,
        })
    }

    /// The updates with their next hops interned into `table`'s.
    fn into_table(
        self,
        table: &mut Table<A>,
    ) -> (Vec<lpmkit::io::Update<A>>, lpmkit::io::ReadStats) {
        let Trace {
            mut updates,
            stats,
            next_hops,
        } = self;
        for u in &mut updates {
            if let Change::Announce(p, nh) = u.change {
                if let Some(value) = next_hops.value(nh) {
                    u.change = Change::Announce(p, table.next_hops.intern(value.clone()));
                }
            }
        }
        (updates, stats)
    }
}

fn replay<A: Address>(
    mut table: Table<A>,
    trace: Option<Trace<A>>,
    args: &UpdatesArgs,
) -> anyhow::Result<Vec<Record>> {
    let (changes, offsets) = read_changes(&mut table, trace, args)?;
    // The readers' keys: uniform for IPv4, the Spider paper's matching keys for IPv6
    // (uniform IPv6 keys almost never match a route).
    let pattern = match A::FAMILY {
        lpmkit::Family::V4 => traffic::Pattern::Rnd,
        lpmkit::Family::V6 => traffic::Pattern::V6Match,
    };
    let keys = traffic::keys::<A>(&pattern, &table.rib, args.keys.max(args.batch), 7)?;
    let schemes = input::schemes(&args.schemes, A::FAMILY)?;
    args.settings.check(&schemes)?;
    let (trie_secs, trie_replays) = trie_alone(&table.rib, &changes);
    outln!(
        "{:<12} the trie alone (every scheme's Rib work; the OBMA paper's \"Trie\", the bound): {} changes in {:.3} s = {:.0} updates/s (median of {trie_replays})",
        "trie",
        changes.len(),
        trie_secs,
        changes.len() as f64 / trie_secs
    );
    let lockstep = lockstep(&table.rib, &schemes, &changes, args)?;
    let mut next_step = lockstep.as_ref().map(|l| l.schemes.iter());
    let mut records = Vec::new();
    for info in schemes {
        let mut rec = Record::new();
        if let (true, Some(l), Some(step)) = (
            info.incremental,
            lockstep.as_ref(),
            next_step.as_mut().and_then(|s| s.next()),
        ) {
            lockstep_report(info.name, l, step, &mut rec);
        }
        let mut set = |k: &str, v: Value| rec.insert(k.into(), v);
        set("scheme", info.name.into());
        set("family", A::FAMILY.as_str().into());
        set("table", table.name.clone().into());
        set("routes", table.rib.len().into());
        set("trace", args.trace.display().to_string().into());
        set("changes", changes.len().into());
        set("readers", args.readers.into());
        set(
            "trie_updates_per_s",
            (changes.len() as f64 / trie_secs).into(),
        );
        set("trie_replays", trie_replays.into());
        let timed = (&changes[..], &offsets[..]);
        let replayed = if info.incremental {
            incremental::replay_incremental(
                &table.rib, info, timed, &keys, args, trie_secs, &mut rec,
            )
        } else {
            rebuild::replay_rebuild(&table.rib, info, timed, &keys, args, &mut rec)
        };
        match replayed {
            Ok(ok) => {
                rec.insert("table_ok".into(), ok.into());
                records.push(rec);
            }
            // A scheme that cannot hold the table (or a state of it) does not stop the rest.
            Err(e) => match e.downcast_ref::<lpmkit::BuildError>() {
                Some(b) => input::refused(info.name, b)?,
                None => return Err(e),
            },
        }
    }
    Ok(records)
}

/// The changes to replay (the trace's, `--limit`ed, `--repeat`ed) and each one's offset
/// in seconds from the start of the replay, for paced replays.
fn read_changes<A: Address>(
    table: &mut Table<A>,
    trace: Option<Trace<A>>,
    args: &UpdatesArgs,
) -> anyhow::Result<(Vec<Change<A>>, Vec<f64>)> {
    let (mut updates, stats) = match trace {
        Some(trace) => trace.into_table(table),
        None => {
            let pb = progress::spinner(format!("reading {}", args.trace.display()));
            let read = lpmkit::io::read_updates_with_stats::<A>(&args.trace, &mut table.next_hops);
            pb.finish_and_clear();
            read.context("cannot read the update trace")?
        }
    };
    input::print_notes(&stats);
    if updates.is_empty() {
        anyhow::bail!("{} holds no {} updates", args.trace.display(), A::FAMILY);
    }
    if let Some(n) = args.limit {
        updates.truncate(n);
    }
    bounds::check_memory(&[
        bounds::Need::items(
            "--repeat",
            updates.len() as u128 * args.repeat as u128,
            // The change and its replay offset, plus the schemes' own logs of it.
            core::mem::size_of::<Change<A>>() as u128 * 3 + 8,
            "replayed changes",
        ),
        bounds::Need::items(
            "--keys",
            args.keys.max(args.batch) as u128,
            core::mem::size_of::<A>() as u128,
            "reader keys",
        ),
        bounds::Need::items(
            "--readers",
            args.readers as u128,
            bench::THREAD_BYTES + args.batch as u128 * 4,
            "reader threads",
        ),
    ])?;
    // Seconds from the trace's first update. A timestamp earlier than one before it (a
    // trace merged from several collectors) is replayed at once, at the latest time seen.
    let first = updates[0].time;
    let mut latest = first;
    let since_first: Vec<u64> = updates
        .iter()
        .map(|u| {
            latest = latest.max(u.time);
            latest - first
        })
        .collect();
    let span = latest - first;
    let mut offsets = Vec::new();
    let mut changes: Vec<Change<A>> = Vec::new();
    for r in 0..args.repeat.max(1) {
        for (u, &t) in updates.iter().zip(&since_first) {
            offsets.push((t as f64) + r as f64 * (span as f64 + 1.0));
            changes.push(u.change);
        }
    }
    if let Some(f) = args.speedup {
        let last = offsets.last().copied().unwrap_or(0.0) / f;
        if Duration::try_from_secs_f64(last).is_err() {
            anyhow::bail!(
                "--speedup {f}: the paced replay would last {last:.3e} s, longer than a \
                 duration can hold"
            );
        }
    }
    eprintln!(
        "replaying {} changes ({} in the trace)",
        changes.len(),
        updates.len()
    );
    Ok((changes, offsets))
}

/// Every in-place scheme and the trie alone in lockstep (their ratios in one phase of the
/// host), when more than the trie takes part.
fn lockstep<A: Address>(
    rib: &Rib<A>,
    schemes: &[&'static SchemeInfo],
    changes: &[Change<A>],
    args: &UpdatesArgs,
) -> anyhow::Result<Option<split::Lockstep>> {
    let incremental: Vec<_> = schemes
        .iter()
        .filter(|i| i.incremental)
        .map(|&i| (i, args.settings.apply(i, BuildOptions::default())))
        .collect();
    if incremental.is_empty() {
        return Ok(None);
    }
    let pb = progress::spinner(format!(
        "lockstep: the trie alone and {} in-place scheme(s)",
        incremental.len()
    ));
    let l = split::lockstep(rib, &incremental, changes, args.lockstep_changes);
    pb.finish_and_clear();
    Ok(Some(l?))
}

/// Prints a scheme's lockstep figures and adds them to its record.
fn lockstep_report(name: &str, l: &split::Lockstep, step: &split::Step, rec: &mut Record) {
    let rate = |secs: f64| l.counted as f64 / secs;
    let by_subtraction = step.total_secs - l.trie_secs;
    outln!(
        "{name:<12} lockstep ({} segments of {} changes, the trie alone and each in-place scheme in turn, each segment's first fifth uncounted, {} TSC ticks an empty interval taken off each): {:.0} updates/s with its Rib work ({:.2}x the trie alone's {:.0}); structure alone {} by subtraction, {:.0} updates/s timed apart",
        l.segments,
        l.segment,
        l.empty_ticks,
        rate(step.total_secs),
        l.trie_secs / step.total_secs,
        rate(l.trie_secs),
        if by_subtraction > 0.0 {
            format!("{:.0} updates/s", rate(by_subtraction))
        } else {
            "within the trie's noise".to_string()
        },
        rate(step.structure_secs),
    );
    rec.insert("lockstep_segment_changes".into(), l.segment.into());
    rec.insert("lockstep_empty_interval_ticks".into(), l.empty_ticks.into());
    rec.insert(
        "lockstep_trie_updates_per_s".into(),
        rate(l.trie_secs).into(),
    );
    rec.insert(
        "lockstep_updates_per_s".into(),
        rate(step.total_secs).into(),
    );
    rec.insert(
        "lockstep_vs_trie".into(),
        (l.trie_secs / step.total_secs).into(),
    );
    if by_subtraction > 0.0 {
        rec.insert(
            "lockstep_structure_updates_per_s".into(),
            rate(by_subtraction).into(),
        );
    }
    rec.insert(
        "lockstep_structure_timed_updates_per_s".into(),
        rate(step.structure_secs).into(),
    );
}

/// Replays of the trie alone: at least this many...
const TRIE_MIN_REPLAYS: usize = 3;
/// ...and more until they add up to this many seconds (a short trace replays in a
/// millisecond or two, where one interruption moves a median of three)...
const TRIE_MIN_SECS: f64 = 0.05;
/// ...but at most this many.
const TRIE_MAX_REPLAYS: usize = 99;

/// Seconds the `Rib` alone takes to apply `changes` (with [`Rib::apply_changes`], on a
/// fresh clone of `rib0` each time), the median over the replays, and their number: at
/// least [`TRIE_MIN_REPLAYS`], more until [`TRIE_MIN_SECS`] of replay, at most
/// [`TRIE_MAX_REPLAYS`]; always an odd number.
fn trie_alone<A: Address>(rib0: &Rib<A>, changes: &[Change<A>]) -> (f64, usize) {
    let mut times: Vec<f64> = Vec::new();
    while times.len() < TRIE_MIN_REPLAYS
        || times.len().is_multiple_of(2)
        || (times.iter().sum::<f64>() < TRIE_MIN_SECS && times.len() < TRIE_MAX_REPLAYS)
    {
        let mut rib = rib0.clone();
        let t0 = Instant::now();
        rib.apply_changes(changes);
        times.push(t0.elapsed().as_secs_f64());
        std::hint::black_box(&rib);
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times.len())
}

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
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Args;
use lpmkit::sync::{LookupHandle, UpdateModel, Updater};
use lpmkit::{traffic, Address, AnyTable, BuildOptions, Change, Fib, NextHop, Rib, Table};
use serde_json::{Map, Value};

use crate::bench;
use crate::bounds;
use crate::input::{self, TableArgs};
use crate::output::outln;
use crate::output::OutputFile;
use crate::progress;

mod interleave;
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
    match input::load(&args.table)? {
        AnyTable::V4(t) => replay(t, args),
        AnyTable::V6(t) => replay(t, args),
    }
}

fn replay<A: Address>(mut table: Table<A>, args: &UpdatesArgs) -> anyhow::Result<Vec<Record>> {
    let pb = progress::spinner(format!("reading {}", args.trace.display()));
    let updates = lpmkit::io::read_updates_with_stats::<A>(&args.trace, &mut table.next_hops);
    pb.finish_and_clear();
    let (mut updates, stats) = updates.context("cannot read the update trace")?;
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
    // Offsets in seconds from the start of the (repeated) trace, for paced replays.
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
    // The readers' keys: uniform for IPv4, the Spider paper's matching keys for IPv6
    // (uniform IPv6 keys almost never match a route).
    let pattern = match A::FAMILY {
        lpmkit::Family::V4 => traffic::Pattern::Rnd,
        lpmkit::Family::V6 => traffic::Pattern::V6Match,
    };
    let keys = traffic::keys::<A>(&pattern, &table.rib, args.keys.max(args.batch), 7)?;
    let mut records = Vec::new();
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
    // Every in-place scheme and the trie alone in lockstep (their ratios in one phase of
    // the host), when more than the trie takes part.
    let incremental: Vec<_> = schemes
        .iter()
        .filter(|i| i.incremental)
        .map(|&i| (i, args.settings.apply(i, BuildOptions::default())))
        .collect();
    let lockstep = if incremental.is_empty() {
        None
    } else {
        let pb = progress::spinner(format!(
            "lockstep: the trie alone and {} in-place scheme(s)",
            incremental.len()
        ));
        let l = split::lockstep(&table.rib, &incremental, &changes, args.lockstep_changes);
        pb.finish_and_clear();
        Some(l?)
    };
    let mut next_step = lockstep.as_ref().map(|l| l.schemes.iter());
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
        let replayed = if info.incremental {
            let timed = (&changes[..], &offsets[..]);
            replay_incremental(&table.rib, info, timed, &keys, args, trie_secs, &mut rec)
        } else {
            replay_rebuild(&table.rib, info, &changes, &offsets, &keys, args, &mut rec)
        };
        match replayed {
            Ok(ok) => {
                rec.insert("table_ok".into(), ok.into());
                records.push(rec);
            }
            // A scheme that cannot hold the table (or a state of it) does not stop the rest.
            Err(e) => match e.downcast_ref::<lpmkit::BuildError>() {
                Some(b) => input::refused(info.name, b),
                None => return Err(e),
            },
        }
    }
    Ok(records)
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

/// Compares `fib` with `rib` on `keys` plus the boundaries of the changed prefixes.
fn agrees<A: Address>(fib: &dyn Fib<A>, rib: &Rib<A>, keys: &[A], changes: &[Change<A>]) -> bool {
    let mut probe: Vec<A> = keys.iter().copied().take(1 << 18).collect();
    for c in changes {
        let p = c.prefix();
        probe.extend([p.first(), p.last()]);
    }
    let mut out = vec![0u32; probe.len()];
    fib.lookup_batch(&probe, &mut out);
    probe
        .iter()
        .zip(&out)
        .all(|(&k, &o)| o == NextHop::raw(rib.lookup(k)))
}

fn replay_incremental<A: Address>(
    rib0: &Rib<A>,
    info: &'static lpmkit::registry::SchemeInfo,
    (changes, offsets): (&[Change<A>], &[f64]),
    keys: &[A],
    args: &UpdatesArgs,
    trie_secs: f64,
    rec: &mut Record,
) -> anyhow::Result<bool> {
    let name = info.name;
    let opts = args.settings.apply(info, BuildOptions::default());
    // 1. The update rate alone: one change per `apply`, no readers.
    // Built first, then the `Rib` cloned: the replay starts with the clone's lines in
    // cache, as each of the trie alone's replays does (a clone made before the build
    // would start the structure's replay with its `Rib` evicted by the build).
    let mut fib = info.build_incremental(rib0, &opts)?;
    let mut rib = rib0.clone();
    let pb = progress::bar(changes.len() as u64, format!("{name}: applying"));
    let mut applied = 0usize;
    let t0 = Instant::now();
    // Changes applied as the trie alone applies them (`Rib::apply_each`, which prefetches
    // ahead), each that alters the table passed on to the scheme at once.
    rib.apply_each(changes, |rib, i, changed| {
        if changed {
            fib.apply(rib, std::slice::from_ref(&changes[i]))?;
            applied += 1;
        }
        if i % 4096 == 0 {
            pb.set_position(i as u64);
        }
        Ok::<(), lpmkit::BuildError>(())
    })?;
    let secs = t0.elapsed().as_secs_f64();
    pb.finish_and_clear();
    let ok = agrees(&*fib, &rib, keys, changes);
    // What one update did to the structure, where the scheme counts it (OBMA's Table III:
    // pointers changed, DPA elements modified, new bytes, per update).
    let stats = fib.stats();
    let per_update: Vec<String> = stats
        .iter()
        .filter(|(k, _)| k.ends_with("_per_update"))
        .map(|(k, v)| format!("{} {v}", k.trim_end_matches("_per_update")))
        .collect();
    let per_update_fields: Map<String, Value> = stats
        .iter()
        .filter_map(|(k, v)| {
            Some((
                k.strip_suffix("_per_update")?.to_string(),
                v.as_f64()?.into(),
            ))
        })
        .collect();
    drop(fib);
    // The structure's own work, two ways: this replay's time minus the trie's (measured
    // in this run), and timed change by change in a second replay (the scheme's `apply`
    // apart from the `Rib`'s, in the same phase of the host).
    let structure = secs - trie_secs;
    let split = split::replay(rib0, info, &opts, changes)?;
    outln!(
        "{name:<12} in place, alone: {} changes ({} effective) in {:.3} s = {:.0} updates/s ({:.2}x the trie alone); structure alone {} (timed apart: {:.3} s = {:.0} updates/s, its Rib work {:.3} s); table {} the trie afterwards",
        changes.len(),
        applied,
        secs,
        changes.len() as f64 / secs,
        trie_secs / secs,
        if structure > 0.0 {
            format!("{:.3} s = {:.0} updates/s", structure, changes.len() as f64 / structure)
        } else {
            "within the trie's noise".to_string()
        },
        split.structure_secs,
        changes.len() as f64 / split.structure_secs,
        split.rib_secs,
        if ok { "equals" } else { "DIFFERS FROM" }
    );
    if !per_update.is_empty() {
        outln!("{name:<12} per update: {}", per_update.join(", "));
    }
    let alone_rate = changes.len() as f64 / secs;
    rec.insert("effective".into(), applied.into());
    rec.insert("alone_updates_per_s".into(), alone_rate.into());
    rec.insert("alone_vs_trie".into(), (trie_secs / secs).into());
    if structure > 0.0 {
        let rate = changes.len() as f64 / structure;
        rec.insert("structure_updates_per_s".into(), rate.into());
    }
    let rate = changes.len() as f64 / split.structure_secs;
    rec.insert("structure_timed_updates_per_s".into(), rate.into());
    rec.insert("structure_timed_rib_secs".into(), split.rib_secs.into());
    if !per_update_fields.is_empty() {
        rec.insert("per_update".into(), per_update_fields.into());
    }
    if args.readers == 0 {
        return Ok(ok);
    }
    // 2. With reader threads looking up throughout: one instance patched in place (where
    //    the scheme offers it), then left-right twins, in the same run.
    let mut all_ok = ok;
    let mut rates = Vec::new();
    if info.updates_in_place() {
        // The same path (the in-place machinery: its Rib, undo log, generations and
        // deferred reuse) without readers first, so that "with readers ÷ without"
        // compares runs that differ only in the readers.
        let quiet = UpdatesArgs {
            readers: 0,
            ..args.clone()
        };
        let updater = info.updater(rib0.clone(), &opts, UpdateModel::InPlace)?;
        let timed = (changes, offsets);
        let (ok, quiet_rate) = replay_with_readers(
            updater,
            name,
            timed,
            keys,
            &quiet,
            rec,
            "in_place_no_readers",
        )?;
        all_ok &= ok;
        let updater = info.updater(rib0.clone(), &opts, UpdateModel::InPlace)?;
        let (ok, rate) = replay_with_readers(updater, name, timed, keys, args, rec, "in_place")?;
        all_ok &= ok;
        rates.push(rate);
        rec.insert("in_place_vs_alone".into(), (rate / alone_rate).into());
        rec.insert("in_place_vs_no_readers".into(), (rate / quiet_rate).into());
        outln!(
            "{name:<12} in place, with {} reader(s) vs without: {:.2}x the update rate",
            args.readers,
            rate / quiet_rate
        );
        // The same again in interleaved segments, whose ratios the host's phases
        // cancel out of.
        let mut updater = info.updater(rib0.clone(), &opts, UpdateModel::InPlace)?;
        let segment = Duration::from_millis(args.segment_ms);
        let m = interleave::replay(
            &mut *updater,
            changes,
            keys,
            (args.readers, args.batch),
            segment,
        )?;
        let ok = agrees_handle(&mut *updater.reader(), updater.rib(), keys);
        all_ok &= ok;
        let table = if ok { "equals" } else { "DIFFERS FROM" };
        if m.rounds == 0 {
            outln!(
                "{name:<12} in place, interleaved: {} changes are too few for one round of \
                 {} ms segments (--repeat replays the trace again); table {table} the trie",
                m.applied,
                args.segment_ms,
            );
        } else {
            outln!(
                "{name:<12} in place, interleaved ({} changes in {} rounds of {} ms segments: \
                 readers alone, readers + writer, writer alone): readers {:.2}x their rate \
                 alone ({:.1} vs {:.1} Mlps), writer {:.2}x its rate alone ({:.0} vs {:.0} \
                 updates/s), medians of the rounds; table {table} the trie",
                m.applied,
                m.rounds,
                args.segment_ms,
                m.reader_ratio,
                m.reader_busy_mlps,
                m.reader_idle_mlps,
                m.writer_ratio,
                m.writer_busy_rate,
                m.writer_alone_rate,
            );
        }
        let mut set = |k: &str, v: f64| rec.insert(format!("interleaved_{k}"), v.into());
        set("rounds", m.rounds as f64);
        set("reader_ratio", m.reader_ratio);
        set("writer_ratio", m.writer_ratio);
        set("reader_idle_mlps", m.reader_idle_mlps);
        set("reader_busy_mlps", m.reader_busy_mlps);
        set("writer_busy_updates_per_s", m.writer_busy_rate);
        set("writer_alone_updates_per_s", m.writer_alone_rate);
        // The rounds behind the two ratios' medians (their spread in plots).
        rec.insert(
            "interleaved_reader_ratio_runs".into(),
            m.reader_ratios.into(),
        );
        rec.insert(
            "interleaved_writer_ratio_runs".into(),
            m.writer_ratios.into(),
        );
    }
    let twins = info.updater(rib0.clone(), &opts, UpdateModel::Twins)?;
    let timed = (changes, offsets);
    let (ok, rate) = replay_with_readers(twins, name, timed, keys, args, rec, "twins")?;
    all_ok &= ok;
    rates.push(rate);
    rec.insert("twins_vs_alone".into(), (rate / alone_rate).into());
    if let [one, twins] = rates[..] {
        outln!(
            "{name:<12} one instance vs twins, with {} reader(s): {:.2}x the update rate",
            args.readers,
            one / twins
        );
    }
    Ok(all_ok)
}

/// Replays `changes` one per `apply` through `updater` while reader threads look up;
/// prints the rates and the memory, records them as `{mode}_…` fields, returns (table
/// equals the trie, updates/s).
fn replay_with_readers<A: Address>(
    mut updater: Box<dyn Updater<A>>,
    name: &str,
    (changes, offsets): (&[Change<A>], &[f64]),
    keys: &[A],
    args: &UpdatesArgs,
    rec: &mut Record,
    mode: &str,
) -> anyhow::Result<(bool, f64)> {
    let reader = updater.reader();
    let idle_mlps = if args.readers == 0 {
        0.0
    } else {
        reader_rate(&*reader, keys, args, Duration::from_secs(1))
    };
    let footprint = updater.memory_bytes();
    let mut peak = footprint;
    let mut max_wait_us = 0f64;
    let model = updater.model();
    let pb = progress::bar(changes.len() as u64, format!("{name}: applying, {model}"));
    let (result, secs, busy_mlps) = with_readers(&*reader, keys, args, || {
        let t0 = Instant::now();
        for (i, c) in changes.iter().enumerate() {
            if let Some(f) = args.speedup {
                // Paced: each change at its time in the trace, `f` times faster.
                let due = t0 + Duration::from_secs_f64(offsets[i] / f);
                let now = Instant::now();
                if now < due {
                    std::thread::sleep(due - now);
                }
            }
            let info = updater.apply(std::slice::from_ref(c))?;
            max_wait_us = max_wait_us.max(info.wait_us);
            if i % 64 == 0 {
                peak = peak.max(updater.memory_bytes());
            }
            if i % 4096 == 0 {
                pb.set_position(i as u64);
            }
        }
        Ok(())
    });
    pb.finish_and_clear();
    result?;
    peak = peak.max(updater.memory_bytes());
    let ok = agrees_handle(&mut *updater.reader(), updater.rib(), keys);
    let rate = changes.len() as f64 / secs;
    let model = match args.speedup {
        Some(f) => format!("{model}, paced at {f}x real time"),
        None => model.to_string(),
    };
    let readers = if args.readers == 0 {
        "no readers".to_string()
    } else {
        format!(
            "{} reader(s) at {busy_mlps:.1} Mlps (idle {idle_mlps:.1}, {:.2}x)",
            args.readers,
            busy_mlps / idle_mlps
        )
    };
    outln!(
        "{name:<12} {model}: {rate:.0} updates/s with {readers}; \
         memory {:.2} MiB built, peak {:.2} MiB ({:.2}x){}; table {} the trie",
        footprint as f64 / 1048576.0,
        peak as f64 / 1048576.0,
        peak as f64 / footprint as f64,
        if max_wait_us > 0.0 {
            format!("; longest wait for readers {max_wait_us:.0} us")
        } else {
            String::new()
        },
        if ok { "equals" } else { "DIFFERS FROM" }
    );
    let mut set = |k: &str, v: Value| rec.insert(format!("{mode}_{k}"), v);
    set("updates_per_s", rate.into());
    // A replay shorter than a reader's first batch measured no lookups: no figure.
    let busy = (busy_mlps > 0.0).then_some(busy_mlps);
    if args.readers > 0 {
        set("reader_mlps", busy.into());
        set("idle_mlps", idle_mlps.into());
        set("reader_ratio", busy.map(|b| b / idle_mlps).into());
    }
    set("memory_bytes", footprint.into());
    set("peak_bytes", peak.into());
    set("max_wait_us", max_wait_us.into());
    Ok((ok, rate))
}

/// Whether a reader's answers for (up to 2^18 of) `keys` are `rib`'s.
fn agrees_handle<A: Address>(reader: &mut dyn LookupHandle<A>, rib: &Rib<A>, keys: &[A]) -> bool {
    let keys = &keys[..keys.len().min(1 << 18)];
    let mut out = vec![0u32; keys.len()];
    reader.lookup_batch(keys, &mut out);
    keys.iter()
        .zip(&out)
        .all(|(&k, &o)| o == NextHop::raw(rib.lookup(k)))
}

/// Runs `writer` on this thread while `args.readers` threads look up `keys` through
/// `reader`; returns the writer's result, its seconds, and the readers' rate in Mlps.
fn with_readers<A: Address>(
    reader: &dyn LookupHandle<A>,
    keys: &[A],
    args: &UpdatesArgs,
    writer: impl FnOnce() -> anyhow::Result<()>,
) -> (anyhow::Result<()>, f64, f64) {
    let done = AtomicBool::new(false);
    let lookups = AtomicU64::new(0);
    let (result, secs, reader_secs) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..args.readers)
            .map(|r| {
                let mut reader = reader.boxed_clone();
                let (done, lookups) = (&done, &lookups);
                s.spawn(move || {
                    let mut out = vec![0u32; args.batch];
                    let mut n = 0u64;
                    let mut i = (r * 7919 * args.batch) % keys.len();
                    let t = Instant::now();
                    while !done.load(Ordering::Relaxed) {
                        let end = (i + args.batch).min(keys.len());
                        reader.lookup_batch(&keys[i..end], &mut out[..end - i]);
                        n += (end - i) as u64;
                        i = if end == keys.len() { 0 } else { end };
                    }
                    lookups.fetch_add(n, Ordering::Relaxed);
                    t.elapsed().as_secs_f64()
                })
            })
            .collect();
        let t0 = Instant::now();
        let result = writer();
        let secs = t0.elapsed().as_secs_f64();
        done.store(true, Ordering::Relaxed);
        let reader_secs = handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold(0.0, f64::max);
        (result, secs, reader_secs)
    });
    let mlps = lookups.load(Ordering::Relaxed) as f64 / reader_secs.max(1e-9) / 1e6;
    (result, secs, mlps)
}

fn replay_rebuild<A: Address>(
    rib0: &Rib<A>,
    info: &lpmkit::registry::SchemeInfo,
    changes: &[Change<A>],
    offsets: &[f64],
    keys: &[A],
    args: &UpdatesArgs,
    rec: &mut Record,
) -> anyhow::Result<bool> {
    let opts = args.settings.apply(info, BuildOptions::default());
    let model = UpdateModel::Rebuild {
        hold_time: Duration::from_millis(args.hold_ms),
    };
    let mut updater = info.updater(rib0.clone(), &opts, model)?;
    let reader = updater.reader();

    // The readers' rate on an idle table, for comparison.
    let idle_mlps = reader_rate(&*reader, keys, args, Duration::from_secs(1));

    // Every publication's build time.
    let mut builds = Vec::new();
    let mut published = |p: Option<lpmkit::sync::ApplyInfo>| {
        if let Some(p) = p.filter(|p| p.full_rebuild) {
            builds.push(p.work_ms);
        }
    };
    let t0 = Instant::now();
    let pb = progress::bar(changes.len() as u64, format!("{}: replaying", info.name));
    let (result, secs, busy_mlps) = with_readers(&*reader, keys, args, || {
        for (i, c) in changes.iter().enumerate() {
            if let Some(f) = args.speedup {
                // Wait for the change's time, publishing when the hold time runs out.
                let due = t0 + Duration::from_secs_f64(offsets[i] / f);
                while Instant::now() < due {
                    let wake = updater.deadline().map_or(due, |d| d.min(due));
                    std::thread::sleep(wake.saturating_duration_since(Instant::now()));
                    published(updater.poll()?);
                }
            }
            published(Some(updater.apply(std::slice::from_ref(c))?));
            if i % 4096 == 0 {
                pb.set_position(i as u64);
            }
        }
        published(updater.flush()?);
        Ok(())
    });
    pb.finish_and_clear();
    result?;
    let mean_build = builds.iter().sum::<f64>() / builds.len().max(1) as f64;
    let max_build = builds.iter().copied().fold(0.0, f64::max);
    let ok = agrees_handle(&mut *updater.reader(), updater.rib(), keys)
        && agrees_boundaries(&mut *updater.reader(), updater.rib(), changes);
    outln!(
        "{:<12} rebuild+publish (hold {} ms{}): {} changes in {:.3} s = {:.0} updates/s; {} publications, build mean {:.1} ms max {:.1} ms; {} reader(s): {:.1} Mlps during updates vs {:.1} idle; final table {} the trie",
        info.name,
        args.hold_ms,
        args.speedup.map_or(String::new(), |f| format!(", paced at {f}x real time")),
        changes.len(),
        secs,
        changes.len() as f64 / secs,
        builds.len(),
        mean_build,
        max_build,
        args.readers,
        busy_mlps,
        idle_mlps,
        if ok { "equals" } else { "DIFFERS FROM" }
    );
    let mut set = |k: &str, v: Value| rec.insert(format!("rebuild_{k}"), v);
    set("updates_per_s", (changes.len() as f64 / secs).into());
    set("publications", builds.len().into());
    set("build_ms_mean", mean_build.into());
    set("build_ms_max", max_build.into());
    let busy = (busy_mlps > 0.0).then_some(busy_mlps);
    set("reader_mlps", busy.into());
    set("idle_mlps", idle_mlps.into());
    set("reader_ratio", busy.map(|b| b / idle_mlps).into());
    Ok(ok)
}

/// Whether a reader's answers at the first and last address of every changed prefix are
/// `rib`'s.
fn agrees_boundaries<A: Address>(
    reader: &mut dyn LookupHandle<A>,
    rib: &Rib<A>,
    changes: &[Change<A>],
) -> bool {
    let probe: Vec<A> = changes
        .iter()
        .flat_map(|c| [c.prefix().first(), c.prefix().last()])
        .collect();
    let mut out = vec![0u32; probe.len()];
    reader.lookup_batch(&probe, &mut out);
    probe
        .iter()
        .zip(&out)
        .all(|(&k, &o)| o == NextHop::raw(rib.lookup(k)))
}

/// Lookup rate (Mlps, all readers together) over `dur` with no writer activity.
fn reader_rate<A: Address>(
    reader: &dyn LookupHandle<A>,
    keys: &[A],
    args: &UpdatesArgs,
    dur: Duration,
) -> f64 {
    let total = AtomicU64::new(0);
    std::thread::scope(|s| {
        for r in 0..args.readers.max(1) {
            let mut reader = reader.boxed_clone();
            let total = &total;
            s.spawn(move || {
                let mut out = vec![0u32; args.batch];
                let mut i = (r * 7919 * args.batch) % keys.len();
                let mut n = 0u64;
                let t = Instant::now();
                while t.elapsed() < dur {
                    for _ in 0..64 {
                        let end = (i + args.batch).min(keys.len());
                        reader.lookup_batch(&keys[i..end], &mut out[..end - i]);
                        n += (end - i) as u64;
                        i = if end == keys.len() { 0 } else { end };
                    }
                }
                total.fetch_add(n, Ordering::Relaxed);
            });
        }
    });
    total.load(Ordering::Relaxed) as f64 / dur.as_secs_f64() / 1e6
}

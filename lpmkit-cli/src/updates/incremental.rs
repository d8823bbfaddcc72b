//! The replays of an in-place scheme: alone (the scheme's own `apply`, no readers), then as
//! one instance patched through [`lpmkit::sync::InPlace`] without and with readers and in
//! interleaved segments, then as left-right twins ([`lpmkit::sync::TwinUpdater`]).

use std::time::{Duration, Instant};

use lpmkit::registry::SchemeInfo;
use lpmkit::sync::UpdateModel;
use lpmkit::{Address, BuildOptions, Change, Rib};
use serde_json::{Map, Value};

use super::readers::{agrees, agrees_handle, replay_with_readers};
use super::{interleave, split, Record, UpdatesArgs};
use crate::output::outln;
use crate::progress;

/// Replays `changes` against an in-place scheme in every way it offers (see the module
/// docs), recording each figure in `rec`; returns whether every replay's table equals
/// the trie's afterwards.
pub(super) fn replay_incremental<A: Address>(
    rib0: &Rib<A>,
    info: &'static SchemeInfo,
    timed: (&[Change<A>], &[f64]),
    keys: &[A],
    args: &UpdatesArgs,
    trie_secs: f64,
    rec: &mut Record,
) -> anyhow::Result<bool> {
    let opts = args.settings.apply(info, BuildOptions::default());
    let (ok, alone_rate) = replay_alone(rib0, info, &opts, timed.0, keys, trie_secs, rec)?;
    if args.readers == 0 {
        return Ok(ok);
    }
    // With reader threads looking up throughout: one instance patched in place (where the
    // scheme offers it), then left-right twins, in the same run.
    let mut all_ok = ok;
    let mut one_instance = None;
    if info.updates_in_place() {
        let (ok, rate) = replay_in_place(rib0, info, &opts, timed, keys, args, rec)?;
        rec.insert("in_place_vs_alone".into(), (rate / alone_rate).into());
        all_ok &= ok;
        all_ok &= replay_interleaved(rib0, info, &opts, timed.0, keys, args, rec)?;
        one_instance = Some(rate);
    }
    let twins = info.updater(rib0.clone(), &opts, UpdateModel::Twins)?;
    let (ok, rate) = replay_with_readers(twins, info.name, timed, keys, args, rec, "twins")?;
    all_ok &= ok;
    rec.insert("twins_vs_alone".into(), (rate / alone_rate).into());
    if let Some(one) = one_instance {
        outln!(
            "{:<12} one instance vs twins, with {} reader(s): {:.2}x the update rate",
            info.name,
            args.readers,
            one / rate
        );
    }
    Ok(all_ok)
}

/// The update rate alone: one change per `apply`, no readers; the structure's own share
/// of it two ways. Returns (table equals the trie afterwards, updates/s).
fn replay_alone<A: Address>(
    rib0: &Rib<A>,
    info: &'static SchemeInfo,
    opts: &BuildOptions,
    changes: &[Change<A>],
    keys: &[A],
    trie_secs: f64,
    rec: &mut Record,
) -> anyhow::Result<(bool, f64)> {
    let name = info.name;
    // Built first, then the `Rib` cloned: the replay starts with the clone's lines in
    // cache, as each of the trie alone's replays does (a clone made before the build
    // would start the structure's replay with its `Rib` evicted by the build).
    let mut fib = info.build_incremental(rib0, opts)?;
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
    let split = split::replay(rib0, info, opts, changes)?;
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
    Ok((ok, alone_rate))
}

/// One instance patched in place (the in-place machinery: its Rib, undo log, generations
/// and deferred reuse) without readers, then with them, so that "with readers ÷ without"
/// compares runs that differ only in the readers. Returns (both tables equal the trie,
/// updates/s with readers).
fn replay_in_place<A: Address>(
    rib0: &Rib<A>,
    info: &'static SchemeInfo,
    opts: &BuildOptions,
    timed: (&[Change<A>], &[f64]),
    keys: &[A],
    args: &UpdatesArgs,
    rec: &mut Record,
) -> anyhow::Result<(bool, f64)> {
    let name = info.name;
    let quiet = UpdatesArgs {
        readers: 0,
        ..args.clone()
    };
    let updater = info.updater(rib0.clone(), opts, UpdateModel::InPlace)?;
    let (quiet_ok, quiet_rate) = replay_with_readers(
        updater,
        name,
        timed,
        keys,
        &quiet,
        rec,
        "in_place_no_readers",
    )?;
    let updater = info.updater(rib0.clone(), opts, UpdateModel::InPlace)?;
    let (ok, rate) = replay_with_readers(updater, name, timed, keys, args, rec, "in_place")?;
    rec.insert("in_place_vs_no_readers".into(), (rate / quiet_rate).into());
    outln!(
        "{name:<12} in place, with {} reader(s) vs without: {:.2}x the update rate",
        args.readers,
        rate / quiet_rate
    );
    Ok((quiet_ok && ok, rate))
}

/// The in-place replay again in interleaved segments (readers alone, readers + writer,
/// writer alone, in turn), whose ratios the host's phases cancel out of. Returns whether
/// the table equals the trie afterwards.
fn replay_interleaved<A: Address>(
    rib0: &Rib<A>,
    info: &'static SchemeInfo,
    opts: &BuildOptions,
    changes: &[Change<A>],
    keys: &[A],
    args: &UpdatesArgs,
    rec: &mut Record,
) -> anyhow::Result<bool> {
    let name = info.name;
    let mut updater = info.updater(rib0.clone(), opts, UpdateModel::InPlace)?;
    let segment = Duration::from_millis(args.segment_ms);
    let m = interleave::replay(
        &mut *updater,
        changes,
        keys,
        (args.readers, args.batch),
        segment,
    )?;
    let ok = agrees_handle(&mut *updater.reader(), updater.rib(), keys);
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
    Ok(ok)
}

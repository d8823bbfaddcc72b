//! The replay of a rebuilt scheme: changes go to the `Rib` and the table is rebuilt and
//! published ([`lpmkit::sync::Publisher`]) whenever the hold time runs out, while readers
//! look up.

use std::time::{Duration, Instant};

use lpmkit::registry::SchemeInfo;
use lpmkit::sync::UpdateModel;
use lpmkit::{Address, BuildOptions, Change, Rib};
use serde_json::Value;

use super::readers::{agrees_boundaries, agrees_handle, reader_rate, with_readers};
use super::{Record, UpdatesArgs};
use crate::output::outln;
use crate::progress;

/// Replays `changes` (paced by `offsets` with `--speedup`) through a rebuild-and-publish
/// updater while readers look up; prints and records the figures, returns whether the
/// final table equals the trie.
pub(super) fn replay_rebuild<A: Address>(
    rib0: &Rib<A>,
    info: &SchemeInfo,
    (changes, offsets): (&[Change<A>], &[f64]),
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

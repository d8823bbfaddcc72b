//! Reader threads during a replay, and the checks of a replayed table against the trie.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lpmkit::sync::{LookupHandle, Updater};
use lpmkit::{Address, Change, Fib, NextHop, Rib};
use serde_json::Value;

use super::{Record, UpdatesArgs};
use crate::output::outln;
use crate::progress;

/// Compares `fib` with `rib` on `keys` plus the boundaries of the changed prefixes.
pub(super) fn agrees<A: Address>(
    fib: &dyn Fib<A>,
    rib: &Rib<A>,
    keys: &[A],
    changes: &[Change<A>],
) -> bool {
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

/// Replays `changes` one per `apply` through `updater` while reader threads look up;
/// prints the rates and the memory, records them as `{mode}_…` fields, returns (table
/// equals the trie, updates/s).
pub(super) fn replay_with_readers<A: Address>(
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
pub(super) fn agrees_handle<A: Address>(
    reader: &mut dyn LookupHandle<A>,
    rib: &Rib<A>,
    keys: &[A],
) -> bool {
    let keys = &keys[..keys.len().min(1 << 18)];
    let mut out = vec![0u32; keys.len()];
    reader.lookup_batch(keys, &mut out);
    keys.iter()
        .zip(&out)
        .all(|(&k, &o)| o == NextHop::raw(rib.lookup(k)))
}

/// Runs `writer` on this thread while `args.readers` threads look up `keys` through
/// `reader`; returns the writer's result, its seconds, and the readers' rate in Mlps.
pub(super) fn with_readers<A: Address>(
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

/// Whether a reader's answers at the first and last address of every changed prefix are
/// `rib`'s.
pub(super) fn agrees_boundaries<A: Address>(
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
pub(super) fn reader_rate<A: Address>(
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

//! Lookups and updates together, measured in interleaved segments (Fig. 20/21 of the OBMA
//! paper) so that the host's slow and fast phases cancel out of the ratios.
//!
//! On a shared machine a process's speed drifts by 2–3× over seconds; a reader's idle rate
//! measured for one second before a half-second replay, or a writer's rate alone measured
//! in another replay, is then compared with figures taken in a different phase. Here one
//! replay alternates short segments of the same length:
//!
//! * `R`: the reader looks up, the writer sleeps (the reader's idle rate);
//! * `RW`: the reader looks up while the writer applies the next changes (both busy);
//! * `W`: the writer applies the next changes, the reader parked (the writer alone, on
//!   the same in-place path).
//!
//! Each segment begins with an uncounted lead-in of half its length in its own mode (the
//! caches after a switch hold the previous segment's lines). Each round gives the
//! reader's `RW ÷ R` and the writer's `RW ÷ W`; the medians over the rounds are reported. The changes are the trace's, in order, one per `apply`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use lpmkit::sync::{LookupHandle, Updater};
use lpmkit::{Address, Change};

const PAUSE: u8 = 0;
const RUN: u8 = 1;
const STOP: u8 = 2;

/// What the interleaved replay measured.
#[derive(Debug, Default)]
pub struct Interleaved {
    /// Rounds of `R`, `RW`, `W` segments completed.
    pub rounds: usize,
    /// Median over rounds of the reader's rate with the writer busy ÷ its rate alone.
    pub reader_ratio: f64,
    /// Median over rounds of the writer's rate with the reader ÷ without.
    pub writer_ratio: f64,
    /// Median of the readers' rate alone (Mlps).
    pub reader_idle_mlps: f64,
    /// Median of the readers' rate with the writer busy (Mlps).
    pub reader_busy_mlps: f64,
    /// Median of the writer's rate with the readers (updates/s).
    pub writer_busy_rate: f64,
    /// Median of the writer's rate alone (updates/s).
    pub writer_alone_rate: f64,
    /// Changes applied.
    pub applied: usize,
    /// Every round's reader ratio (the spread behind `reader_ratio`).
    pub reader_ratios: Vec<f64>,
    /// Every round's writer ratio (the spread behind `writer_ratio`).
    pub writer_ratios: Vec<f64>,
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Replays `changes` through `updater` in rounds of `R`, `RW`, `W` segments of `segment`
/// each, with `readers` reader threads looking up `keys` in batches of `batch`; stops
/// when the changes run out. Returns the figures, or the writer's error.
pub fn replay<A: Address>(
    updater: &mut dyn Updater<A>,
    changes: &[Change<A>],
    keys: &[A],
    (readers, batch): (usize, usize),
    segment: Duration,
) -> anyhow::Result<Interleaved> {
    let mode = AtomicU8::new(PAUSE);
    let looked_up = AtomicU64::new(0);
    let handles: Vec<Box<dyn LookupHandle<A>>> = (0..readers).map(|_| updater.reader()).collect();
    let next = Cell::new(0usize);
    let mut rounds = Vec::new();
    let result: anyhow::Result<()> = thread::scope(|s| {
        let (mode, looked_up) = (&mode, &looked_up);
        let threads: Vec<_> = handles
            .into_iter()
            .enumerate()
            .map(|(r, mut reader)| {
                s.spawn(move || {
                    let mut out = vec![0u32; batch];
                    let mut i = (r * 7919 * batch) % keys.len();
                    loop {
                        match mode.load(Ordering::Acquire) {
                            RUN => {
                                let end = (i + batch).min(keys.len());
                                reader.lookup_batch(&keys[i..end], &mut out[..end - i]);
                                looked_up.fetch_add((end - i) as u64, Ordering::Relaxed);
                                i = if end == keys.len() { 0 } else { end };
                            }
                            STOP => break,
                            _ => {
                                // Parked, the reader holds nothing: the writer's `W`
                                // segment must not wait for it to reuse retired memory.
                                reader.offline();
                                thread::park();
                            }
                        }
                    }
                })
            })
            .collect();
        let set = |m: u8| {
            mode.store(m, Ordering::Release);
            for t in &threads {
                t.thread().unpark();
            }
        };
        // One segment: `work` runs on this thread until `segment` is over; returns the
        // readers' lookups (Mlps) and what `work` counted, per second.
        let timed = |work: &mut dyn FnMut(Instant) -> anyhow::Result<usize>| {
            // A lead-in of the same work, not counted: the threads' caches after a
            // switch of mode hold what the previous segment left, not this one's.
            work(Instant::now() + segment / 2)?;
            let n0 = looked_up.load(Ordering::Relaxed);
            let t0 = Instant::now();
            let done = work(t0 + segment)?;
            let secs = t0.elapsed().as_secs_f64();
            let n = looked_up.load(Ordering::Relaxed) - n0;
            anyhow::Ok((n as f64 / secs / 1e6, done as f64 / secs))
        };
        let mut apply_until = |until: Instant| -> anyhow::Result<usize> {
            let start = next.get();
            let mut i = start;
            while i < changes.len() {
                updater.apply(core::slice::from_ref(&changes[i]))?;
                i += 1;
                if (i - start).is_multiple_of(16) && Instant::now() >= until {
                    break;
                }
            }
            next.set(i);
            Ok(i - start)
        };
        let mut sleep_until = |until: Instant| -> anyhow::Result<usize> {
            thread::sleep(until.saturating_duration_since(Instant::now()));
            Ok(0)
        };
        let r = (|| {
            // A first reader segment warms the readers' caches; not counted.
            set(RUN);
            thread::sleep(segment);
            while next.get() < changes.len() {
                let (idle, _) = timed(&mut sleep_until)?;
                let (busy, with) = timed(&mut apply_until)?;
                set(PAUSE);
                // Let the readers see the pause before the writer's segment starts.
                thread::sleep(Duration::from_micros(200));
                let (_, alone) = timed(&mut apply_until)?;
                set(RUN);
                rounds.push((idle, busy, with, alone));
            }
            Ok(())
        })();
        set(STOP);
        r
    });
    result?;
    // A round whose changes ran out before its `W` segment has no writer ratio.
    rounds.retain(|&(_, _, with, alone)| with > 0.0 && alone > 0.0);
    let col = |f: fn(&(f64, f64, f64, f64)) -> f64| -> Vec<f64> { rounds.iter().map(f).collect() };
    Ok(Interleaved {
        rounds: rounds.len(),
        reader_ratio: median(&mut col(|r| r.1 / r.0)),
        writer_ratio: median(&mut col(|r| r.2 / r.3)),
        reader_idle_mlps: median(&mut col(|r| r.0)),
        reader_busy_mlps: median(&mut col(|r| r.1)),
        writer_busy_rate: median(&mut col(|r| r.2)),
        writer_alone_rate: median(&mut col(|r| r.3)),
        applied: next.get(),
        reader_ratios: col(|r| r.1 / r.0),
        writer_ratios: col(|r| r.2 / r.3),
    })
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn medians() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}

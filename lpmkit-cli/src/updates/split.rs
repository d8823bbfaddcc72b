//! A scheme's update replay timed change by change: the `Rib`'s work and the
//! structure's own work apart, read from the CPU's time-stamp counter around each.
//!
//! `lpmkit updates` also reports the structure's work as its replay's time minus the trie
//! alone's; that difference counts the `Rib`'s own slowdown beside the structure (its
//! lines evicted by the structure's) as structure work, and compares two replays run in
//! different phases of the host. Timing each part of each change in one replay does
//! neither. The boundaries are fenced reads ([`crate::tsc::ticks_fenced`]): with a plain
//! `rdtsc` the counter can be read while the `Rib` change's last loads are in flight (they
//! are then counted as structure work), and the structure's last ones can fall after its
//! closing read (counted nowhere, or in the next `Rib` change) — on a ~100 ns structure
//! interval, several percent either way (obma-b's structure timed apart read 5–8 % faster
//! unfenced on rrc06 + 2014). The TSC's reads are not the work: an empty interval's count
//! ([`crate::tsc::empty_interval`], measured once per replay) is taken off every interval,
//! of the trie alone's as of each scheme's (a change that leaves the `Rib` as it was has an
//! empty structure interval, and counts nothing there).
//!
//! [`lockstep`] goes further for comparisons between schemes: the trie alone and every
//! scheme replay the same changes segment by segment, in turn, so a phase of the host
//! (which moves a replay's rate 2–3× over seconds on a shared machine) falls on all of
//! them alike, and their ratios hold where two separate replays' do not.

use std::time::Instant;

use lpmkit::{Address, BuildOptions, Change, IncrementalFib, Rib};

use crate::tsc::{empty_interval, ticks, ticks_fenced};

/// A scheme's replay timed change by change: its `Rib` work and its structure work.
pub struct Split {
    /// Seconds of `Rib` changes.
    pub rib_secs: f64,
    /// Seconds of the scheme's `apply`.
    pub structure_secs: f64,
}

/// Time-stamp counts of the two parts of a replay.
#[derive(Clone, Copy)]
struct Ticks {
    rib: u64,
    structure: u64,
    /// What an empty interval counts, taken off each interval.
    empty: u64,
}

impl Ticks {
    fn new(empty: u64) -> Self {
        Ticks {
            rib: 0,
            structure: 0,
            empty,
        }
    }
}

/// Applies `changes` to `rib` and (each that changes it) to `fib`, adding the TSC counts
/// of the two parts to `t`; with no `fib` (the trie alone) only the `Rib` part, timed
/// the same way.
fn timed<A: Address>(
    rib: &mut Rib<A>,
    fib: Option<&mut Box<dyn IncrementalFib<A>>>,
    changes: &[Change<A>],
    t: &mut Ticks,
) -> anyhow::Result<()> {
    timed_after(rib, fib, changes, 0, t)
}

/// [`timed`], counting only the changes from index `lead` on (the ones before are a
/// lead-in: applied, not counted).
fn timed_after<A: Address>(
    rib: &mut Rib<A>,
    mut fib: Option<&mut Box<dyn IncrementalFib<A>>>,
    changes: &[Change<A>],
    lead: usize,
    t: &mut Ticks,
) -> anyhow::Result<()> {
    for (i, c) in changes.iter().enumerate() {
        // The prefetch of a change ahead that `Rib::apply_each` makes, outside the
        // intervals.
        if let Some(ahead) = changes.get(i + Rib::<A>::PREFETCH_AHEAD) {
            rib.prefetch(&ahead.prefix());
        }
        let counted = (i >= lead) as u64;
        let a = ticks_fenced();
        let changed = c.apply_to(rib);
        let b = ticks_fenced();
        if changed {
            if let Some(f) = fib.as_deref_mut() {
                f.apply(rib, std::slice::from_ref(c))?;
            }
        }
        let e = ticks_fenced();
        t.rib += b.wrapping_sub(a).saturating_sub(t.empty) * counted;
        t.structure += e.wrapping_sub(b).saturating_sub(t.empty) * counted;
    }
    Ok(())
}

/// Replays `changes` one per `apply` into a fresh build of `info`, reading the CPU's
/// time-stamp counter around the `Rib` change and around the scheme's `apply`; the
/// counts become seconds by the replay's wall time.
pub fn replay<A: Address>(
    rib0: &Rib<A>,
    info: &lpmkit::registry::SchemeInfo,
    opts: &BuildOptions,
    changes: &[Change<A>],
) -> anyhow::Result<Split> {
    // As in the whole replay: built first, then the `Rib` cloned (its lines in cache).
    let mut fib = info.build_incremental(rib0, opts)?;
    let mut rib = rib0.clone();
    let mut t = Ticks::new(empty_interval());
    let (t0, k0) = (Instant::now(), ticks());
    timed(&mut rib, Some(&mut fib), changes, &mut t)?;
    let secs_per_tick = t0.elapsed().as_secs_f64() / ticks().wrapping_sub(k0).max(1) as f64;
    Ok(Split {
        rib_secs: t.rib as f64 * secs_per_tick,
        structure_secs: t.structure as f64 * secs_per_tick,
    })
}

/// One scheme's share of a [`lockstep`] replay.
pub struct Step {
    /// Seconds of its `Rib` changes plus its `apply`.
    pub total_secs: f64,
    /// Seconds of its `apply` alone.
    pub structure_secs: f64,
}

/// The trie alone and every scheme replaying the same changes in lockstep.
pub struct Lockstep {
    /// Changes per segment.
    pub segment: usize,
    /// Segments replayed.
    pub segments: usize,
    /// Changes timed (each segment's first fifth is an uncounted lead-in).
    pub counted: usize,
    /// What an empty interval counted (taken off every interval), in TSC ticks.
    pub empty_ticks: u64,
    /// Seconds of the trie alone (its `Rib` changes, timed as the schemes' are).
    pub trie_secs: f64,
    /// Each scheme's figures, in the order given.
    pub schemes: Vec<Step>,
}

/// Replays `changes` into the trie alone and into a fresh build of each of `infos` (each
/// with its own `Rib`), `segment` changes at a time: every participant applies a
/// segment in turn, starting one further on each segment, timed change by change as
/// [`replay`] does. Each starts a segment with what the others evicted from the caches;
/// the first fifth of every segment is a lead-in, applied by all but not counted, so the
/// counted changes find their caches partly refilled (a cold start weighs most on the
/// fastest participant).
pub fn lockstep<A: Address>(
    rib0: &Rib<A>,
    infos: &[(&lpmkit::registry::SchemeInfo, BuildOptions)],
    changes: &[Change<A>],
    segment: usize,
) -> anyhow::Result<Lockstep> {
    let mut fibs = infos
        .iter()
        .map(|(info, opts)| info.build_incremental(rib0, opts))
        .collect::<Result<Vec<_>, _>>()?;
    // Participant 0 is the trie alone.
    let mut ribs = vec![rib0.clone(); infos.len() + 1];
    let empty = empty_interval();
    let mut t = vec![Ticks::new(empty); infos.len() + 1];
    let n = ribs.len();
    let (t0, k0) = (Instant::now(), ticks());
    let (mut segments, mut counted) = (0, 0);
    for (s, seg) in changes.chunks(segment.max(1)).enumerate() {
        let lead = seg.len() / 5;
        for k in 0..n {
            let p = (s + k) % n;
            let fib = p.checked_sub(1).map(|i| &mut fibs[i]);
            timed_after(&mut ribs[p], fib, seg, lead, &mut t[p])?;
        }
        segments += 1;
        counted += seg.len() - lead;
    }
    let secs_per_tick = t0.elapsed().as_secs_f64() / ticks().wrapping_sub(k0).max(1) as f64;
    let secs = |k: u64| k as f64 * secs_per_tick;
    Ok(Lockstep {
        segment,
        segments,
        counted,
        empty_ticks: empty,
        // Both parts, as a scheme's total: timed alike.
        trie_secs: secs(t[0].rib + t[0].structure),
        schemes: t[1..]
            .iter()
            .map(|t| Step {
                total_secs: secs(t.rib + t.structure),
                structure_secs: secs(t.structure),
            })
            .collect(),
    })
}

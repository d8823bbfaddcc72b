//! A scheme's update replay timed change by change: the `Rib`'s work and the
//! structure's own work apart, read from the CPU's time-stamp counter around each.
//!
//! `lpmkit updates` also reports the structure's work as its replay's time minus the trie
//! alone's; that difference counts the `Rib`'s own slowdown beside the structure (its
//! lines evicted by the structure's) as structure work, and compares two replays run in
//! different phases of the host. Timing each part of each change in one replay does
//! neither; the TSC's reads (a few nanoseconds each) are counted in both parts.

use std::time::Instant;

use lpmkit::{Address, BuildOptions, Change, Rib};

use crate::tsc::ticks;

/// A scheme's replay timed change by change: its `Rib` work and its structure work.
pub struct Split {
    /// Seconds of `Rib` changes.
    pub rib_secs: f64,
    /// Seconds of the scheme's `apply`.
    pub structure_secs: f64,
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
    let mut rib = rib0.clone();
    let mut fib = info.build_incremental(&rib, opts)?;
    let (mut rib_ticks, mut fib_ticks) = (0u64, 0u64);
    let (t0, k0) = (Instant::now(), ticks());
    for c in changes {
        let a = ticks();
        let changed = c.apply_to(&mut rib);
        let b = ticks();
        if changed {
            fib.apply(&rib, std::slice::from_ref(c))?;
        }
        let e = ticks();
        rib_ticks += b.wrapping_sub(a);
        fib_ticks += e.wrapping_sub(b);
    }
    let secs_per_tick = t0.elapsed().as_secs_f64() / ticks().wrapping_sub(k0).max(1) as f64;
    Ok(Split {
        rib_secs: rib_ticks as f64 * secs_per_tick,
        structure_secs: fib_ticks as f64 * secs_per_tick,
    })
}

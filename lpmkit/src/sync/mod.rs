//! Route updates while other threads look up.
//!
//! Three update models, one reader contract — readers never lock and never wait, and
//! never see an answer no version of the table gave, nor freed memory:
//!
//! * **Batch rebuild** ([`Publisher`]): for schemes whose structure is rebuilt rather than
//!   patched (DIR-24-8, Spider), as the Spider paper's §III-C describes. Changes go to the
//!   [`Rib`]; after a *hold time* (or on demand) the scheme is rebuilt on the writer's
//!   thread and replaces the old table with **one atomic pointer swap**. A [`Reader`]
//!   pins the current table for one batch (an epoch announcement, `epoch`), so a batch
//!   sees the old table or the new one, never a mixture; the old table is freed once no
//!   batch that began before the swap is still running. The full-table build time
//!   is the update latency of this model, which is why build speed is a headline figure.
//! * **In place, one instance** ([`InPlace`]): for incremental schemes
//!   ([`InPlaceWriter`]: DXR, Poptrie, Luleå, SAIL, OBMA, MIHT, the Bloom-filter schemes).
//!   One writer patches the live structure: each
//!   touched part is rebuilt beside the live one and published with one atomic store;
//!   what it replaced is reused only after a grace period (`epoch`); arrays never move
//!   under a reader. Each key sees the table before or after each change (per key, not
//!   per batch). Memory is one instance plus what waits for its grace period. Schemes
//!   whose lookup probes independent structures (the Bloom-filter schemes) opt into
//!   validated reads ([`VALIDATED_READS`]): a batch is retried if a patch began while
//!   it ran, so that each batch answers from one generation.
//! * **Left-right twins** ([`TwinUpdater`]): two instances of an [`IncrementalFib`], one
//!   visible while the other is patched, swapped with one pointer store. Each batch sees
//!   one whole version; the cost is twice the memory, every change applied twice, and a
//!   writer that waits (boundedly) for readers. It remains for schemes that cannot patch
//!   one instance, and as the comparison in `lpmkit updates`.
//!
//! Generic code (the CLI, the tests) drives any of them through [`Updater`] and looks up
//! through [`LookupHandle`], which reports the [`Generations`] a batch's answers come from.
//!
//! ```
//! use lpmkit::sync::{Publisher, PublisherConfig};
//! use lpmkit::schemes::dir24_8::{Dir24_8, Dir24_8Config};
//! use lpmkit::{Change, Fib, Ipv4, NextHop, Rib};
//! use std::time::Duration;
//!
//! let build = |rib: &Rib<Ipv4>| Dir24_8::build(rib, &Dir24_8Config::default());
//! let config = PublisherConfig { hold_time: Duration::from_secs(1) };
//! let mut publisher = Publisher::new(Rib::new(), build, config)?;
//! let mut reader = publisher.reader();           // clone and send to lookup threads
//!
//! let nh = NextHop::new(7).unwrap();
//! let info = publisher.apply(&[Change::Announce("10.0.0.0/8".parse()?, nh)])?;
//! assert_eq!(info.pending, 1);                    // held for up to a second ...
//! publisher.publish()?;                           // ... or rebuilt + swapped in now
//! assert_eq!(reader.load().lookup(0x0a00_0001), Some(nh));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`InPlaceWriter`]: crate::fib::InPlaceWriter
//! [`IncrementalFib`]: crate::fib::IncrementalFib
//! [`VALIDATED_READS`]: crate::fib::InPlaceWriter::VALIDATED_READS

mod cell;
pub(crate) mod epoch;
#[cfg(any(test, feature = "test-hooks"))]
#[doc(hidden)]
pub mod hooks;
mod inplace;
mod publisher;
mod twin;

pub use cell::Pinned;
pub use inplace::{InPlace, InPlaceReader, IntoInPlace, BATCH_ATTEMPTS};
pub use publisher::{
    PublishInfo, Published, Publisher, PublisherConfig, Reader, WriterError, WriterGone,
    WriterHandle,
};
pub use twin::{TwinConfig, TwinUpdater};

use crate::fib::{BuildError, Change};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// The generations of the table a batch's answers come from: each key's answer is the
/// table's at one generation of `first..=last` (`first == last` for the whole-table
/// models, which hand a batch one version).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[doc(hidden)]
pub struct Generations {
    /// The oldest generation an answer may come from.
    pub first: u64,
    /// The newest.
    pub last: u64,
}

/// A lookup thread's handle, whatever the update model behind it.
pub trait LookupHandle<A: Address>: Send {
    /// Looks up `addrs` in the current table (`out[i]` = next-hop id, 0 = none).
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [u32]);

    /// [`lookup_batch`](Self::lookup_batch), returning the generations the answers come
    /// from (two more loads per batch, of lines the writer stores to at every update: for
    /// tests, not for measurements).
    fn lookup_batch_traced(&mut self, addrs: &[A], out: &mut [u32]) -> Generations;

    /// A new handle on the same table, for another thread.
    fn boxed_clone(&self) -> Box<dyn LookupHandle<A>>;

    /// [`lookup_batch`](Self::lookup_batch) without the validation of validated in-place
    /// schemes: for the every-state tests, which look up on the writer's own thread in
    /// the middle of a patch, where a validated read would wait for the patch to end
    /// forever. (The answers of a validated scheme may then combine generations.)
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    fn lookup_batch_unvalidated(&mut self, addrs: &[A], out: &mut [u32]) {
        self.lookup_batch(addrs, out)
    }

    /// Says the handle is idle: until its next lookup it holds nothing, so it does not
    /// hold back the reuse of retired memory (handles that pin per batch hold nothing
    /// between batches anyway: the default does nothing).
    fn offline(&mut self) {}
}

/// What one [`Updater::apply`] (or a publication by [`Updater::poll`] and
/// [`Updater::flush`]) did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
#[doc(hidden)]
pub struct ApplyInfo {
    /// The generation readers see now.
    pub generation: u64,
    /// Changes that changed the `Rib` (the others re-announce a route unchanged or
    /// withdraw an absent one, and cost nothing).
    pub effective: usize,
    /// Changes in the `Rib` that readers do not see yet (the rebuild model with a hold
    /// time; 0 for the others, whose changes are visible when `apply` returns).
    pub pending: usize,
    /// Structure units (chunks, subtrees) rebuilt.
    pub units_rebuilt: usize,
    /// True if the structure was rebuilt whole (a layout change, or a publication of the
    /// rebuild model).
    pub full_rebuild: bool,
    /// Milliseconds the rebuild took (the rebuild model, when it published; the in-place
    /// models leave it 0: their `apply` is the patch, time the call).
    pub work_ms: f64,
    /// Microseconds the writer waited for readers (twins only; the other models never
    /// wait).
    pub wait_us: f64,
}

/// How a scheme's table follows route changes while readers look it up; a scheme declares
/// the models it offers ([`crate::registry::SchemeInfo::models`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateModel {
    /// One instance patched in place ([`InPlace`]): each change is visible when `apply`
    /// returns; each key sees the table before or after it.
    InPlace,
    /// Left-right twins ([`TwinUpdater`]): two instances, one patched while readers see
    /// the other; twice the memory, every change applied twice.
    Twins,
    /// Rebuilt from the `Rib` and published with one pointer swap ([`Publisher`]), once the
    /// first unpublished change has waited `hold_time` (`Duration::ZERO`: at every
    /// `apply`).
    Rebuild {
        /// How long changes may wait to be folded into one rebuild.
        hold_time: std::time::Duration,
    },
}

impl UpdateModel {
    /// The rebuild model that publishes at every `apply`.
    pub const REBUILD: UpdateModel = UpdateModel::Rebuild {
        hold_time: std::time::Duration::ZERO,
    };

    /// The model's name, for reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            UpdateModel::InPlace => "in place, one instance",
            UpdateModel::Twins => "left-right twins",
            UpdateModel::Rebuild { .. } => "rebuild, published with one pointer swap",
        }
    }
}

impl core::fmt::Display for UpdateModel {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The writer side of any update model, for generic code: [`InPlace`], [`TwinUpdater`]
/// and [`Publisher`] alike.
pub trait Updater<A: Address>: Send {
    /// Applies `changes` to the `Rib` and makes them visible to readers — at once, or for
    /// the rebuild model with a hold time once it runs out (see
    /// [`pending`](Self::pending)). An error leaves nothing changed (the `Rib` restored,
    /// readers on the last table), except that a failed publication of changes held from
    /// earlier calls leaves those pending: they are retried at the next publication.
    fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError>;

    /// The authoritative routes (with any pending changes).
    fn rib(&self) -> &Rib<A>;

    /// A handle for a lookup thread.
    fn reader(&self) -> Box<dyn LookupHandle<A>>;

    /// Bytes the model holds for the table (both twins; or the one instance's committed
    /// memory and what waits for reclamation).
    fn memory_bytes(&self) -> usize;

    /// The model.
    fn model(&self) -> UpdateModel;

    /// Changes in the `Rib` that readers do not see yet (0 but for the rebuild model with
    /// a hold time).
    fn pending(&self) -> usize {
        0
    }

    /// When the pending changes are due: call [`poll`](Self::poll) then. `None` if
    /// nothing is pending.
    fn deadline(&self) -> Option<std::time::Instant> {
        None
    }

    /// Publishes the pending changes if they are due; `Some` if it published.
    fn poll(&mut self) -> Result<Option<ApplyInfo>, BuildError> {
        Ok(None)
    }

    /// Publishes the pending changes now; `Some` if there were any.
    fn flush(&mut self) -> Result<Option<ApplyInfo>, BuildError> {
        Ok(None)
    }
}

/// Applies `changes` to `rib`; returns those that changed it, and logs how to undo them
/// (the prefix and its previous route, in order).
pub(crate) fn apply_logged<A: Address>(
    rib: &mut Rib<A>,
    changes: &[Change<A>],
    undo: &mut Vec<(Prefix<A>, Option<NextHop>)>,
) -> Vec<Change<A>> {
    let mut effective = Vec::with_capacity(changes.len());
    apply_logged_into(rib, changes, undo, &mut effective);
    effective
}

/// [`apply_logged`] into buffers the caller keeps from one call to the next (no
/// allocation per call once they have grown): `effective` is cleared first, `undo` is
/// appended to.
pub(crate) fn apply_logged_into<A: Address>(
    rib: &mut Rib<A>,
    changes: &[Change<A>],
    undo: &mut Vec<(Prefix<A>, Option<NextHop>)>,
    effective: &mut Vec<Change<A>>,
) {
    effective.clear();
    for &c in changes {
        let (p, old, changed) = match c {
            Change::Announce(p, nh) => {
                let old = rib.insert(p, nh);
                (p, old, old != Some(nh))
            }
            Change::Withdraw(p) => {
                let old = rib.remove(&p);
                (p, old, old.is_some())
            }
        };
        if changed {
            undo.push((p, old));
            effective.push(c);
        }
    }
}

/// Undoes what [`apply_logged`] did.
pub(crate) fn undo_all<A: Address>(rib: &mut Rib<A>, undo: Vec<(Prefix<A>, Option<NextHop>)>) {
    for (p, old) in undo.into_iter().rev() {
        match old {
            Some(nh) => {
                rib.insert(p, nh);
            }
            None => {
                rib.remove(&p);
            }
        }
    }
}

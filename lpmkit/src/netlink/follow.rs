//! [`Follower`]: any registered scheme kept up to date from a stream of changes, through
//! the [`Updater`] of the best update model the scheme offers
//! ([`SchemeInfo::best_model`]: in place, else a rebuild after a hold time).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::fib::{BuildError, BuildOptions, Change, Fib};
use crate::prefix::{Address, Prefix};
use crate::registry::SchemeInfo;
use crate::rib::Rib;
use crate::sync::{ApplyInfo, LookupHandle, Publisher, PublisherConfig, UpdateModel, Updater};

/// A build function of a rebuilt scheme.
pub type BuildBox<A> = Box<dyn FnMut(&Rib<A>) -> Result<Box<dyn Fib<A>>, BuildError> + Send>;

/// A publication: changes that became visible to readers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Visible {
    /// The generation readers see now.
    pub generation: u64,
    /// Changes it made visible.
    pub changes: usize,
    /// When it became visible.
    pub at: Instant,
    /// Milliseconds the rebuild or the patch took.
    pub work_ms: f64,
}

/// The first retry of a refused batch or a failed rebuild waits this long; each failure
/// doubles the wait, up to [`RETRY_MAX`].
const RETRY_FIRST: Duration = Duration::from_millis(100);
/// The longest wait between two retries.
const RETRY_MAX: Duration = Duration::from_secs(10);

/// One scheme following a route stream: [`apply`](Self::apply) changes as they come;
/// readers ([`reader`](Self::reader)) see them once published — at once for in-place
/// schemes, after the hold time for rebuilt ones (call [`poll`](Self::poll) by
/// [`deadline`](Self::deadline)).
///
/// **Refusals are never lost.** A scheme may refuse changes its layout cannot take (its
/// limits: next-hop ids, capacities). A rebuilt scheme with a hold time keeps the last
/// table published and every change pending; a model whose batches are all or nothing
/// (in place, twins, a rebuild without hold time) applies what it can (the refused
/// changes are isolated by splitting the batch) and keeps the refused changes. Either
/// way [`apply`](Self::apply) or [`poll`](Self::poll) returns the error,
/// [`pending`](Self::pending) counts what is not visible yet,
/// [`last_error`](Self::last_error) keeps the reason, and the follower retries at
/// [`deadline`](Self::deadline) (after 0.1 s, doubling up to 10 s while it keeps
/// failing). A later change of the same prefix supersedes a refused one.
pub struct Follower<A: Address> {
    name: &'static str,
    updater: Box<dyn Updater<A>>,
    /// Changes an all-or-nothing model refused, the latest per prefix, in arrival order.
    refused: Vec<Change<A>>,
    generation: u64,
    last_error: Option<BuildError>,
    retry_at: Option<Instant>,
    backoff: Duration,
}

impl<A: Address> core::fmt::Debug for Follower<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Follower")
            .field("scheme", &self.name)
            .field("model", &self.model())
            .field("generation", &self.generation)
            .field("pending", &self.pending())
            .field("last_error", &self.last_error)
            .finish()
    }
}

impl<A: Address> Follower<A> {
    /// Builds `info` from `rib` in the scheme's best update model
    /// ([`SchemeInfo::best_model`]): in place if the scheme offers it, else by rebuild
    /// with hold time `hold`.
    pub fn new(
        info: &'static SchemeInfo,
        rib: Rib<A>,
        options: &BuildOptions,
        hold: Duration,
    ) -> Result<Self, BuildError> {
        let model = info.best_model(A::FAMILY, hold);
        Ok(Self::with_updater(
            info.name,
            info.updater(rib, options, model)?,
        ))
    }

    /// A follower that applies changes through `updater` (any update model); `name`
    /// names it in reports.
    pub fn with_updater(name: &'static str, updater: Box<dyn Updater<A>>) -> Self {
        Follower {
            name,
            updater,
            refused: Vec::new(),
            generation: 0,
            last_error: None,
            retry_at: None,
            backoff: RETRY_FIRST,
        }
    }

    /// A follower that rebuilds with `build` from `rib` after hold time `hold`; `name`
    /// names it in reports.
    pub fn rebuilding(
        name: &'static str,
        rib: Rib<A>,
        build: BuildBox<A>,
        hold: Duration,
    ) -> Result<Self, BuildError> {
        let publisher = Publisher::new(rib, build, PublisherConfig { hold_time: hold })?;
        Ok(Self::with_updater(name, Box::new(publisher)))
    }

    /// The scheme's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The update model it follows by.
    pub fn model(&self) -> UpdateModel {
        self.updater.model()
    }

    /// True if a failed batch leaves its changes pending in the model (a rebuild with a
    /// hold time) rather than undone (every other model: all or nothing).
    fn keeps_failed_changes(&self) -> bool {
        matches!(self.model(), UpdateModel::Rebuild { hold_time } if !hold_time.is_zero())
    }

    /// The routes readers will see once everything pending is visible: the scheme's
    /// `Rib` with the refused changes applied.
    pub fn rib(&self) -> Cow<'_, Rib<A>> {
        if self.refused.is_empty() {
            return Cow::Borrowed(self.updater.rib());
        }
        let mut rib = self.updater.rib().clone();
        rib.apply_changes(&self.refused);
        Cow::Owned(rib)
    }

    /// A handle for a lookup thread.
    pub fn reader(&self) -> Box<dyn LookupHandle<A>> {
        self.updater.reader()
    }

    /// Bytes the update model holds for the table.
    pub fn memory_bytes(&self) -> usize {
        self.updater.memory_bytes()
    }

    /// Changes not yet visible: waiting for the hold time or a retry (rebuild), or
    /// refused by the scheme and waiting for a retry.
    pub fn pending(&self) -> usize {
        self.updater.pending() + self.refused.len()
    }

    /// Why the last rebuild or batch failed, while changes it left pending are not
    /// visible yet (`None` once they are).
    pub fn last_error(&self) -> Option<&BuildError> {
        self.last_error.as_ref()
    }

    /// When [`poll`](Self::poll) has work (the hold time of pending changes runs out, or a
    /// retry is due), if any.
    pub fn deadline(&self) -> Option<Instant> {
        if self.pending() == 0 {
            return None;
        }
        self.retry_at.or_else(|| self.updater.deadline())
    }

    /// Applies `changes`; returns the publication if they (or earlier ones) became
    /// visible. An error says the scheme refused some of them (or a rebuild failed):
    /// they are kept and retried, see the type's docs.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<Option<Visible>, BuildError> {
        if changes.is_empty() {
            return Ok(None);
        }
        // A later change of a prefix supersedes its refused one.
        if !self.refused.is_empty() {
            let touched: HashSet<Prefix<A>> = changes.iter().map(|c| c.prefix()).collect();
            self.refused.retain(|c| !touched.contains(&c.prefix()));
        }
        if self.keeps_failed_changes() {
            let t0 = Instant::now();
            let before = self.updater.pending();
            match self.updater.apply(changes) {
                Ok(info) => Ok(self.published(before, info.effective, info, t0)),
                Err(e) => {
                    self.fail(e.clone());
                    Err(e)
                }
            }
        } else {
            self.apply_all_or_nothing(changes)
        }
    }

    /// What the updater's call that returned `info` made visible, if anything: `before`
    /// changes were pending before it, and it added `new` (0 for a flush). A success
    /// clears the failure state once nothing refused is left.
    fn published(
        &mut self,
        before: usize,
        new: usize,
        info: ApplyInfo,
        t0: Instant,
    ) -> Option<Visible> {
        let visible = (before + new).saturating_sub(self.updater.pending());
        let at = Instant::now();
        let published = (info.generation != self.generation || visible > 0).then(|| Visible {
            generation: info.generation,
            changes: visible,
            at,
            work_ms: if info.work_ms > 0.0 {
                info.work_ms
            } else {
                (at - t0).as_secs_f64() * 1e3
            },
        });
        self.generation = info.generation;
        if self.refused.is_empty() && self.updater.pending() == 0 {
            self.last_error = None;
            self.retry_at = None;
            self.backoff = RETRY_FIRST;
        }
        published
    }

    /// Applies `changes` in a model whose batches are all or nothing; on a refusal, splits
    /// the batch until the refused changes are found, keeps them, and applies the rest.
    fn apply_all_or_nothing(
        &mut self,
        changes: &[Change<A>],
    ) -> Result<Option<Visible>, BuildError> {
        let t0 = Instant::now();
        let mut visible = 0;
        let mut generation = self.generation;
        let mut newly_refused = Vec::new();
        let mut first_error = None;
        // Work list of slices, first in order first.
        let mut todo = vec![changes];
        while let Some(batch) = todo.pop() {
            match self.updater.apply(batch) {
                Ok(info) => {
                    visible += info.effective;
                    generation = info.generation;
                }
                Err(e) => {
                    if batch.len() == 1 {
                        newly_refused.push(batch[0]);
                        first_error.get_or_insert(e);
                    } else {
                        let (a, b) = batch.split_at(batch.len() / 2);
                        todo.push(b);
                        todo.push(a);
                    }
                }
            }
        }
        // Keep the latest refused change per prefix (none superseded by a later accepted
        // change of the same batch).
        if !newly_refused.is_empty() {
            let last: HashMap<Prefix<A>, usize> = changes
                .iter()
                .enumerate()
                .map(|(i, c)| (c.prefix(), i))
                .collect();
            for c in newly_refused {
                if changes.get(last[&c.prefix()]) == Some(&c) {
                    self.refused.retain(|r| r.prefix() != c.prefix());
                    self.refused.push(c);
                }
            }
        }
        let info = ApplyInfo {
            generation,
            effective: visible,
            ..ApplyInfo::default()
        };
        let published = self.published(0, visible, info, t0);
        match first_error {
            None => Ok(published),
            Some(e) => {
                self.fail(e.clone());
                Err(e)
            }
        }
    }

    /// Records a failure and schedules the next retry.
    fn fail(&mut self, e: BuildError) {
        self.last_error = Some(e);
        self.retry_at = Some(Instant::now() + self.backoff);
        self.backoff = (self.backoff * 2).min(RETRY_MAX);
    }

    /// Publishes if the hold time has run out, or retries what was refused if a retry is
    /// due.
    pub fn poll(&mut self) -> Result<Option<Visible>, BuildError> {
        match self.deadline() {
            Some(d) if Instant::now() >= d => self.flush(),
            _ => Ok(None),
        }
    }

    /// Publishes pending changes now (retries refused ones now).
    pub fn flush(&mut self) -> Result<Option<Visible>, BuildError> {
        let mut out = None;
        let before = self.updater.pending();
        if before > 0 {
            let t0 = Instant::now();
            match self.updater.flush() {
                Ok(Some(info)) => out = self.published(before, 0, info, t0),
                Ok(None) => {}
                Err(e) => {
                    self.fail(e.clone());
                    return Err(e);
                }
            }
        }
        if !self.refused.is_empty() {
            let retry = core::mem::take(&mut self.refused);
            out = self.apply_all_or_nothing(&retry)?.or(out);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexthop::NextHop;
    use crate::prefix::Ipv4;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// The next hop the test schemes refuse until `allow` is set.
    const POISON: u32 = 99;

    fn refuses(changes: &[Change<Ipv4>], allow: &AtomicBool) -> bool {
        !allow.load(Ordering::Relaxed)
            && changes
                .iter()
                .any(|c| matches!(c, Change::Announce(_, nh) if nh.get() == POISON))
    }

    fn refusal() -> BuildError {
        BuildError::NextHopOverflow {
            scheme: "test".into(),
            max: u64::from(POISON - 1),
            requested: u64::from(POISON),
        }
    }

    /// A real in-place scheme (d18r) behind a layout that refuses next hop 99.
    struct Refusing {
        inner: Box<dyn Updater<Ipv4>>,
        allow: Arc<AtomicBool>,
    }

    impl Updater<Ipv4> for Refusing {
        fn apply(&mut self, changes: &[Change<Ipv4>]) -> Result<ApplyInfo, BuildError> {
            if refuses(changes, &self.allow) {
                return Err(refusal());
            }
            self.inner.apply(changes)
        }
        fn rib(&self) -> &Rib<Ipv4> {
            self.inner.rib()
        }
        fn reader(&self) -> Box<dyn LookupHandle<Ipv4>> {
            self.inner.reader()
        }
        fn memory_bytes(&self) -> usize {
            self.inner.memory_bytes()
        }
        fn model(&self) -> UpdateModel {
            self.inner.model()
        }
    }

    fn announce(p: &str, nh: u32) -> Change<Ipv4> {
        Change::Announce(p.parse().unwrap(), NextHop::new(nh).unwrap())
    }

    fn lookup(f: &Follower<Ipv4>, addrs: &[u32]) -> Vec<u32> {
        let mut out = vec![0; addrs.len()];
        f.reader().lookup_batch(addrs, &mut out);
        out
    }

    fn wait_for_deadline(f: &Follower<Ipv4>) {
        let d = f.deadline().expect("a retry is scheduled");
        std::thread::sleep(d.saturating_duration_since(Instant::now()));
    }

    #[test]
    fn in_place_refusals_are_kept_retried_and_superseded() {
        let info = crate::registry::find("d18r").unwrap();
        let allow = Arc::new(AtomicBool::new(false));
        let inner = info
            .build_in_place(Rib::new(), &BuildOptions::default())
            .unwrap();
        let mut f = Follower::with_updater(
            "refusing",
            Box::new(Refusing {
                inner,
                allow: Arc::clone(&allow),
            }),
        );
        let (a1, a2, a3, a4) = (0x0a01_0001, 0x0a02_0001, 0x0a03_0001, 0x0a04_0001);
        let batch = [
            announce("10.1.0.0/16", 1),
            announce("10.2.0.0/16", POISON),
            announce("10.3.0.0/16", 2),
        ];
        assert_eq!(f.apply(&batch), Err(refusal()));
        // The rest of the batch is visible, the refused change kept.
        assert_eq!(lookup(&f, &[a1, a2, a3]), vec![1, 0, 2]);
        assert_eq!(f.pending(), 1);
        assert_eq!(f.last_error(), Some(&refusal()));
        assert_eq!(
            f.rib().len(),
            3,
            "the follower's routes hold the refused change"
        );
        // Before the retry is due, nothing happens; a failed retry keeps it.
        assert_eq!(f.poll(), Ok(None));
        wait_for_deadline(&f);
        assert_eq!(f.poll(), Err(refusal()));
        assert_eq!(f.pending(), 1);
        // Once the scheme takes it, the retry publishes it.
        allow.store(true, Ordering::Relaxed);
        wait_for_deadline(&f);
        assert!(f.poll().unwrap().is_some());
        assert_eq!(lookup(&f, &[a2]), vec![POISON]);
        assert_eq!((f.pending(), f.last_error()), (0, None));
        assert_eq!(f.deadline(), None);

        // A later change of the prefix supersedes a refused one.
        allow.store(false, Ordering::Relaxed);
        assert!(f.apply(&[announce("10.4.0.0/16", POISON)]).is_err());
        assert_eq!(f.pending(), 1);
        f.apply(&[Change::Withdraw("10.4.0.0/16".parse().unwrap())])
            .unwrap();
        assert_eq!(f.pending(), 0);
        allow.store(true, Ordering::Relaxed);
        f.flush().unwrap();
        assert_eq!(lookup(&f, &[a4]), vec![0]);
        // Within one batch too: refused, then replaced in the same batch.
        allow.store(false, Ordering::Relaxed);
        f.apply(&[announce("10.4.0.0/16", POISON), announce("10.4.0.0/16", 4)])
            .unwrap_err();
        assert_eq!(f.pending(), 0);
        assert_eq!(lookup(&f, &[a4]), vec![4]);
    }

    #[test]
    fn failed_rebuilds_keep_changes_pending_and_retry() {
        let info = crate::registry::find("dir24-8").unwrap();
        let allow = Arc::new(AtomicBool::new(false));
        let gate = Arc::clone(&allow);
        let build: BuildBox<Ipv4> = Box::new(move |r: &Rib<Ipv4>| {
            let changes: Vec<_> = r.iter().map(|(p, nh)| Change::Announce(p, nh)).collect();
            if refuses(&changes, &gate) {
                return Err(refusal());
            }
            info.build(r, &BuildOptions::default())
        });
        let mut f = Follower::rebuilding("refusing", Rib::new(), build, Duration::ZERO).unwrap();
        assert!(f.apply(&[announce("10.1.0.0/16", 1)]).unwrap().is_some());
        assert_eq!(f.apply(&[announce("10.2.0.0/16", POISON)]), Err(refusal()));
        // The last table stays published; the change waits.
        assert_eq!(lookup(&f, &[0x0a01_0001, 0x0a02_0001]), vec![1, 0]);
        assert_eq!(f.pending(), 1);
        let d = f.deadline().unwrap();
        assert!(d > Instant::now(), "the retry waits (no busy loop)");
        allow.store(true, Ordering::Relaxed);
        wait_for_deadline(&f);
        assert!(f.poll().unwrap().is_some());
        assert_eq!(lookup(&f, &[0x0a02_0001]), vec![POISON]);
        assert_eq!((f.pending(), f.last_error(), f.deadline()), (0, None, None));
    }
}

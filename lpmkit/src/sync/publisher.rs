//! Batch rebuild, published RCU-style: [`Publisher`], its [`Reader`]s, and a writer
//! thread of its own ([`Publisher::spawn`]).

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::cell::{CellReader, CellSource, CellWriter, Pinned};
use super::{apply_logged, undo_all, ApplyInfo, Generations, LookupHandle, UpdateModel, Updater};
use crate::fib::{BuildError, Change, Fib};
use crate::prefix::Address;
use crate::rib::Rib;

/// Publisher settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublisherConfig {
    /// How long changes may wait before a rebuild: the first unpublished change starts the
    /// clock, and the table is rebuilt once it has run this long. Bursts of changes within
    /// the hold time cost one rebuild. `Duration::ZERO` rebuilds at the next
    /// [`Publisher::poll`]/[`Publisher::apply`].
    pub hold_time: Duration,
}

impl Default for PublisherConfig {
    fn default() -> Self {
        PublisherConfig {
            hold_time: Duration::from_millis(100),
        }
    }
}

/// The table readers see, with its generation number.
#[derive(Debug)]
#[doc(hidden)]
pub struct Published<F> {
    /// 0 for the initial build, then +1 per publication.
    pub generation: u64,
    /// The lookup structure.
    pub fib: F,
}

impl<F> core::ops::Deref for Published<F> {
    type Target = F;
    fn deref(&self) -> &F {
        &self.fib
    }
}

/// What a publication did.
#[derive(Clone, Copy, Debug, PartialEq)]
#[doc(hidden)]
pub struct PublishInfo {
    /// The generation now visible to readers.
    pub generation: u64,
    /// Changes folded into this generation.
    pub changes: usize,
    /// Time spent rebuilding, in milliseconds.
    pub build_ms: f64,
}

/// A lock-free handle for lookup threads of a [`Publisher`] or a
/// [`TwinUpdater`](super::TwinUpdater): `Send`, not `Sync`; clone it, one per thread.
///
/// Each batch *pins* the current table (one load, two stores and a fence per batch, no
/// lock, no wait) and unpins it when done; a replaced table is freed, or reused by the
/// twin writer, only once no batch that began before its replacement is still running.
/// An idle reader holds nothing.
pub struct Reader<A: Address, F> {
    cell: CellReader<Published<F>>,
    _family: PhantomData<fn(A)>,
}

impl<A: Address, F> Reader<A, F> {
    pub(super) fn of(cell: CellReader<Published<F>>) -> Self {
        Reader {
            cell,
            _family: PhantomData,
        }
    }
}

impl<A: Address, F> Clone for Reader<A, F> {
    fn clone(&self) -> Self {
        Reader::of(self.cell.clone())
    }
}

impl<A: Address, F> core::fmt::Debug for Reader<A, F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reader").finish_non_exhaustive()
    }
}

impl<A: Address, F: Fib<A>> Reader<A, F> {
    /// The current table, pinned until the guard drops. Hold it for one batch, not
    /// longer: the table it names is not freed (and a twin writer waits, boundedly, to
    /// reuse it) while it is held.
    #[inline]
    pub fn load(&mut self) -> Pinned<'_, Published<F>> {
        self.cell.pin()
    }

    /// Looks up a batch in the current table (one pin for the whole batch); returns the
    /// table's generation.
    #[inline]
    pub fn lookup_batch(&mut self, addrs: &[A], out: &mut [u32]) -> u64 {
        let g = self.cell.pin();
        g.fib.lookup_batch(addrs, out);
        g.generation
    }
}

impl<A: Address, F: Fib<A> + 'static> LookupHandle<A> for Reader<A, F> {
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [u32]) {
        Reader::lookup_batch(self, addrs, out);
    }

    fn lookup_batch_traced(&mut self, addrs: &[A], out: &mut [u32]) -> Generations {
        let g = Reader::lookup_batch(self, addrs, out);
        Generations { first: g, last: g }
    }

    fn boxed_clone(&self) -> Box<dyn LookupHandle<A>> {
        Box::new(self.clone())
    }
}

/// The writer side: owns the `Rib`, rebuilds the scheme and publishes it.
///
/// A `Publisher` lives on one writer thread (it is `Send`); use [`Publisher::spawn`] to
/// give it a thread of its own fed through a channel.
///
/// A failed build (a capacity limit) keeps the last table published and the changes
/// pending in the `Rib`: they are retried at the next publication. (Unlike the in-place
/// updaters, a publisher folds many changes into one build and cannot tell which of them
/// the layout refused.)
pub struct Publisher<A: Address, F, B> {
    rib: Rib<A>,
    build: B,
    config: PublisherConfig,
    cell: CellWriter<Published<F>>,
    generation: u64,
    pending: usize,
    pending_since: Option<Instant>,
}

impl<A: Address, F, B> core::fmt::Debug for Publisher<A, F, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Publisher")
            .field("routes", &self.rib.len())
            .field("generation", &self.generation)
            .field("pending", &self.pending)
            .field("config", &self.config)
            .finish()
    }
}

impl<A, F, B> Publisher<A, F, B>
where
    A: Address,
    F: Fib<A>,
    B: FnMut(&Rib<A>) -> Result<F, BuildError>,
{
    /// Builds the initial table from `rib` and publishes it as generation 0.
    pub fn new(rib: Rib<A>, mut build: B, config: PublisherConfig) -> Result<Self, BuildError> {
        let fib = build(&rib)?;
        Ok(Publisher {
            rib,
            build,
            config,
            cell: CellWriter::new(Box::new(Published { generation: 0, fib })),
            generation: 0,
            pending: 0,
            pending_since: None,
        })
    }

    /// A handle for lookup threads.
    pub fn reader(&self) -> Reader<A, F> {
        Reader::of(self.cell.reader())
    }

    /// The table readers see now.
    pub fn current(&self) -> &Published<F> {
        self.cell.current()
    }

    /// The authoritative routes (including unpublished changes).
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// Changes applied to the `Rib` but not yet visible to readers.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Applies `changes` to the `Rib`, then publishes if the hold time has run out (with
    /// a zero hold time: always). See [`Updater::apply`] for what an error leaves: with a
    /// zero hold time, the batch undone and the last table still published.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        let mut undo = Vec::new();
        let effective = apply_logged(&mut self.rib, changes, &mut undo).len();
        if effective > 0 {
            self.pending += effective;
            self.pending_since.get_or_insert_with(Instant::now);
        }
        let mut info = ApplyInfo {
            generation: self.generation,
            effective,
            ..Default::default()
        };
        match self.poll() {
            Ok(Some(p)) => info = Self::published(p, effective),
            Ok(None) => {}
            Err(e) if self.config.hold_time.is_zero() => {
                // Visible at once or not at all: the batch undone, the last table stays.
                undo_all(&mut self.rib, undo);
                self.pending -= effective;
                if self.pending == 0 {
                    self.pending_since = None;
                }
                return Err(e);
            }
            Err(e) => return Err(e),
        }
        info.pending = self.pending;
        Ok(info)
    }

    /// What a publication made visible, as [`ApplyInfo`].
    fn published(p: PublishInfo, effective: usize) -> ApplyInfo {
        ApplyInfo {
            generation: p.generation,
            effective,
            units_rebuilt: 1,
            full_rebuild: true,
            work_ms: p.build_ms,
            ..Default::default()
        }
    }

    /// Applies `change` to the `Rib`; starts the hold time if it changed something.
    fn record(&mut self, change: Change<A>) {
        if change.apply_to(&mut self.rib) {
            self.pending += 1;
            self.pending_since.get_or_insert_with(Instant::now);
        }
    }

    /// Publishes if changes are pending and the hold time has run out (and frees the
    /// tables replaced earlier that no reader holds any more).
    pub fn poll(&mut self) -> Result<Option<PublishInfo>, BuildError> {
        self.cell.collect();
        match self.pending_since {
            Some(t) if t.elapsed() >= self.config.hold_time => self.publish().map(Some),
            _ => Ok(None),
        }
    }

    /// When the pending changes are due, or `None` if nothing is pending.
    pub fn deadline(&self) -> Option<Instant> {
        self.pending_since.map(|t| t + self.config.hold_time)
    }

    /// Rebuilds now and publishes the new table with one pointer swap (even if nothing
    /// changed). On a build error the old table stays published and the changes stay
    /// pending: they are retried at the next publication.
    pub fn publish(&mut self) -> Result<PublishInfo, BuildError> {
        let t0 = Instant::now();
        let fib = (self.build)(&self.rib)?;
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.generation += 1;
        let old = self.cell.replace(Box::new(Published {
            generation: self.generation,
            fib,
        }));
        self.cell.retire(old);
        self.cell.collect();
        let info = PublishInfo {
            generation: self.generation,
            changes: self.pending,
            build_ms,
        };
        self.pending = 0;
        self.pending_since = None;
        Ok(info)
    }

    /// [`publish`](Self::publish), with a panicking build turned into an error.
    fn publish_caught(&mut self) -> Result<PublishInfo, BuildError> {
        match catch_unwind(AssertUnwindSafe(|| self.publish())) {
            Ok(r) => r,
            Err(payload) => Err(BuildError::Panicked {
                message: panic_message(&*payload),
            }),
        }
    }
}

impl<A, F, B> Updater<A> for Publisher<A, F, B>
where
    A: Address,
    F: Fib<A> + 'static,
    B: FnMut(&Rib<A>) -> Result<F, BuildError> + Send,
{
    fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        Publisher::apply(self, changes)
    }

    fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    fn reader(&self) -> Box<dyn LookupHandle<A>> {
        Box::new(Publisher::reader(self))
    }

    fn memory_bytes(&self) -> usize {
        let waiting: usize = self.cell.waiting().map(|t| t.fib.memory_bytes()).sum();
        self.cell.current().fib.memory_bytes() + waiting
    }

    fn model(&self) -> UpdateModel {
        UpdateModel::Rebuild {
            hold_time: self.config.hold_time,
        }
    }

    fn pending(&self) -> usize {
        self.pending
    }

    fn deadline(&self) -> Option<Instant> {
        Publisher::deadline(self)
    }

    fn poll(&mut self) -> Result<Option<ApplyInfo>, BuildError> {
        let pending = self.pending;
        Ok(Publisher::poll(self)?.map(|p| Self::published(p, pending)))
    }

    fn flush(&mut self) -> Result<Option<ApplyInfo>, BuildError> {
        self.cell.collect();
        if self.pending == 0 {
            return Ok(None);
        }
        let pending = self.pending;
        Ok(Some(Self::published(self.publish()?, pending)))
    }
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
}

/// How soon a spawned writer looks again for replaced tables it can free.
const RECLAIM_POLL: Duration = Duration::from_millis(1);

/// Messages to a spawned writer thread.
enum Command<A: Address> {
    Change(Change<A>),
    Flush(mpsc::Sender<Result<PublishInfo, BuildError>>),
}

/// The writer thread is gone (it panicked outside a build, or was stopped); what was sent
/// to it is lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriterGone;

impl core::fmt::Display for WriterGone {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the writer thread is gone")
    }
}

impl std::error::Error for WriterGone {}

/// Why [`WriterHandle::finish`] failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriterError {
    /// The writer thread is gone (it panicked outside a build).
    Gone,
    /// The last publication failed: readers keep the last table published, without the
    /// changes that were pending.
    Build(BuildError),
}

impl core::fmt::Display for WriterError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WriterError::Gone => WriterGone.fmt(f),
            WriterError::Build(e) => write!(f, "the last publication failed: {e}"),
        }
    }
}

impl std::error::Error for WriterError {}

/// A writer running on its own thread; see [`Publisher::spawn`].
pub struct WriterHandle<A: Address, F> {
    tx: Option<mpsc::Sender<Command<A>>>,
    readers: CellSource<Published<F>>,
    /// The error of the last publication, until one succeeds.
    last_error: Arc<Mutex<Option<BuildError>>>,
    thread: Option<thread::JoinHandle<Result<Vec<PublishInfo>, BuildError>>>,
}

impl<A: Address, F> core::fmt::Debug for WriterHandle<A, F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("WriterHandle")
            .field("running", &self.tx.is_some())
            .finish()
    }
}

impl<A, F, B> Publisher<A, F, B>
where
    A: Address,
    F: Fib<A> + 'static,
    B: FnMut(&Rib<A>) -> Result<F, BuildError> + Send + 'static,
{
    /// Moves the publisher to a writer thread of its own. Changes sent through the handle
    /// are applied in order and published after the hold time.
    ///
    /// A failed build (an error, or a panic, which the thread catches) keeps the old
    /// table published; it is retried when the next change arrives or at the next
    /// [`flush`](WriterHandle::flush), never in a loop on its own, and it is visible
    /// until a publication succeeds ([`WriterHandle::last_error`]). A failed last
    /// publication is [`WriterHandle::finish`]'s error.
    pub fn spawn(mut self) -> WriterHandle<A, F> {
        let (tx, rx) = mpsc::channel::<Command<A>>();
        let readers = self.cell.source();
        let last_error = Arc::new(Mutex::new(None));
        let errors = Arc::clone(&last_error);
        let thread = thread::spawn(move || {
            let mut log = Vec::new();
            // After a failed build, wait for news before building again.
            let mut failed = false;
            // Every publication's outcome: logged, or kept as the last error.
            let outcome = |r: &Result<PublishInfo, BuildError>, log: &mut Vec<PublishInfo>| {
                let mut last = errors.lock().unwrap_or_else(|e| e.into_inner());
                match r {
                    Ok(info) => {
                        log.push(*info);
                        *last = None;
                    }
                    Err(e) => *last = Some(e.clone()),
                }
                r.is_err()
            };
            loop {
                let mut deadline = if failed { None } else { self.deadline() };
                // A replaced table waits for readers' batches to end: look again soon.
                if self.cell.waiting().next().is_some() {
                    let soon = Instant::now() + RECLAIM_POLL;
                    deadline = Some(deadline.map_or(soon, |d| d.min(soon)));
                }
                let msg = match deadline {
                    None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
                };
                match msg {
                    Ok(Command::Change(c)) => {
                        self.record(c);
                        failed = false;
                    }
                    Ok(Command::Flush(reply)) => {
                        let r = self.publish_caught();
                        failed = outcome(&r, &mut log);
                        let _ = reply.send(r);
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => self.cell.collect(),
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        if self.pending > 0 {
                            self.publish_caught()?;
                        }
                        return Ok(log);
                    }
                }
                if matches!(self.pending_since, Some(t) if t.elapsed() >= self.config.hold_time) {
                    let r = self.publish_caught();
                    failed = outcome(&r, &mut log);
                }
            }
        });
        WriterHandle {
            tx: Some(tx),
            readers,
            last_error,
            thread: Some(thread),
        }
    }
}

impl<A: Address, F: Fib<A>> WriterHandle<A, F> {
    /// Queues a change; it becomes visible after the hold time (or at [`flush`](Self::flush)).
    pub fn send(&self, change: Change<A>) -> Result<(), WriterGone> {
        self.tx
            .as_ref()
            .ok_or(WriterGone)?
            .send(Command::Change(change))
            .map_err(|_| WriterGone)
    }

    /// Publishes everything sent so far and waits until readers can see it. The outer
    /// error says the writer thread is gone; the inner one that the build failed (the old
    /// table stays published).
    pub fn flush(&self) -> Result<Result<PublishInfo, BuildError>, WriterGone> {
        let (rtx, rrx) = mpsc::channel();
        self.tx
            .as_ref()
            .ok_or(WriterGone)?
            .send(Command::Flush(rtx))
            .map_err(|_| WriterGone)?;
        rrx.recv().map_err(|_| WriterGone)
    }

    /// A handle for lookup threads.
    pub fn reader(&self) -> Reader<A, F> {
        Reader::of(self.readers.reader())
    }

    /// The error of the last publication, if it failed and none has succeeded since:
    /// readers still see the table before the changes it should have published (they are
    /// retried at the next change or [`flush`](Self::flush)).
    pub fn last_error(&self) -> Option<BuildError> {
        self.last_error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stops the writer (publishing pending changes first) and returns its publication
    /// log; an error if the thread panicked, or if that last publication failed (readers
    /// then keep the table before the pending changes).
    pub fn finish(mut self) -> Result<Vec<PublishInfo>, WriterError> {
        self.tx = None;
        match self.thread.take() {
            Some(t) => match t.join() {
                Ok(r) => r.map_err(WriterError::Build),
                Err(_) => Err(WriterError::Gone),
            },
            None => Ok(Vec::new()),
        }
    }
}

/// Dropping the handle stops the writer as [`WriterHandle::finish`] does, and discards its
/// outcome: call `finish` to see whether the last publication succeeded.
impl<A: Address, F> Drop for WriterHandle<A, F> {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexthop::NextHop;
    use crate::prefix::{Ipv4, Prefix};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn nh(v: u32) -> NextHop {
        NextHop::new(v).unwrap()
    }

    #[test]
    fn hold_time_batches_changes() {
        let config = PublisherConfig {
            hold_time: Duration::from_secs(3600),
        };
        let mut p =
            Publisher::new(Rib::<Ipv4>::new(), |r: &Rib<Ipv4>| Ok(r.clone()), config).unwrap();
        let mut reader = p.reader();
        for i in 0..10u32 {
            let pre = Prefix::new(i << 24, 8).unwrap();
            let info = p.apply(&[Change::Announce(pre, nh(i + 1))]).unwrap();
            assert_eq!((info.generation, info.pending), (0, i as usize + 1));
        }
        assert_eq!(p.pending(), 10);
        assert_eq!(reader.load().lookup(5 << 24), None, "not yet published");
        let info = p.publish().unwrap();
        assert_eq!((info.generation, info.changes), (1, 10));
        assert_eq!(reader.load().lookup(5 << 24), Some(nh(6)));
        // A change that changes nothing is not pending.
        p.apply(&[Change::Announce(Prefix::new(0, 8).unwrap(), nh(1))])
            .unwrap();
        assert_eq!(p.pending(), 0);
    }

    #[test]
    fn build_error_keeps_old_table() {
        let mut fail = false;
        let build = move |r: &Rib<Ipv4>| {
            let f = fail;
            fail = true;
            if f {
                Err(BuildError::InvalidConfig {
                    scheme: "test".into(),
                    reason: "fails".into(),
                })
            } else {
                Ok(r.clone())
            }
        };
        let mut p = Publisher::new(Rib::<Ipv4>::new(), build, PublisherConfig::default()).unwrap();
        p.apply(&[Change::Announce(Prefix::DEFAULT, nh(1))])
            .unwrap();
        assert!(p.publish().is_err());
        assert_eq!(p.pending(), 1);
        assert_eq!(p.reader().load().generation, 0);
    }

    #[test]
    fn spawned_writer() {
        let config = PublisherConfig {
            hold_time: Duration::from_millis(1),
        };
        let p = Publisher::new(Rib::<Ipv4>::new(), |r: &Rib<Ipv4>| Ok(r.clone()), config).unwrap();
        let w = p.spawn();
        let mut reader = w.reader();
        w.send(Change::Announce(Prefix::DEFAULT, nh(3))).unwrap();
        let info = w.flush().unwrap().unwrap();
        assert!(info.generation >= 1);
        assert_eq!(reader.load().lookup(12345), Some(nh(3)));
        w.send(Change::Withdraw(Prefix::DEFAULT)).unwrap();
        let log = w.finish().unwrap();
        assert!(!log.is_empty());
        assert_eq!(reader.load().lookup(12345), None);
    }

    /// A writer whose builds keep failing does not retry on its own (it used to spin a
    /// core rebuilding in a loop); it retries at the next change or flush.
    #[test]
    fn failing_builds_are_not_retried_in_a_loop() {
        let builds = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&builds);
        let build = move |r: &Rib<Ipv4>| {
            if counter.fetch_add(1, Ordering::Relaxed) == 0 {
                Ok(r.clone())
            } else {
                Err(BuildError::InvalidConfig {
                    scheme: "test".into(),
                    reason: "always fails".into(),
                })
            }
        };
        let config = PublisherConfig {
            hold_time: Duration::ZERO,
        };
        let w = Publisher::new(Rib::<Ipv4>::new(), build, config)
            .unwrap()
            .spawn();
        w.send(Change::Announce(Prefix::DEFAULT, nh(1))).unwrap();
        // Until the failing build has run (slow under Miri), then a while longer.
        let t0 = Instant::now();
        while builds.load(Ordering::Relaxed) < 2 && t0.elapsed() < Duration::from_secs(30) {
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(Duration::from_millis(100));
        let after_failure = builds.load(Ordering::Relaxed);
        assert!(
            after_failure <= 3,
            "{after_failure} builds: retried in a loop"
        );
        thread::sleep(Duration::from_millis(100));
        assert_eq!(
            builds.load(Ordering::Relaxed),
            after_failure,
            "still retrying"
        );
        assert!(w.flush().unwrap().is_err(), "a flush retries and reports");
        assert_eq!(w.reader().load().generation, 0, "the old table stays");
    }

    /// A panicking build is an error for `flush`, the writer keeps running, and `send`
    /// never drops a change silently.
    #[test]
    fn panicking_build_is_an_error() {
        let mut first = true;
        let build = move |r: &Rib<Ipv4>| {
            if !first && r.get(&Prefix::DEFAULT).is_some() {
                panic!("boom");
            }
            first = false;
            Ok(r.clone())
        };
        let config = PublisherConfig {
            hold_time: Duration::from_secs(3600),
        };
        let w = Publisher::new(Rib::<Ipv4>::new(), build, config)
            .unwrap()
            .spawn();
        w.send(Change::Announce(Prefix::DEFAULT, nh(1))).unwrap();
        match w.flush().unwrap() {
            Err(BuildError::Panicked { message }) => assert!(message.contains("boom")),
            other => panic!("expected a panic error, got {other:?}"),
        }
        // The writer still runs and publishes once the route is gone.
        w.send(Change::Withdraw(Prefix::DEFAULT)).unwrap();
        let info = w.flush().unwrap().unwrap();
        assert_eq!(info.generation, 1);
        assert!(w.finish().is_ok());
    }

    /// A failed timed publication is visible until one succeeds, and a failed last
    /// publication is `finish`'s error.
    #[test]
    fn failed_publications_are_surfaced() {
        let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let failing = Arc::clone(&fail);
        let build = move |r: &Rib<Ipv4>| {
            if failing.load(Ordering::Relaxed) {
                Err(BuildError::InvalidConfig {
                    scheme: "test".into(),
                    reason: "fails".into(),
                })
            } else {
                Ok(r.clone())
            }
        };
        let config = PublisherConfig {
            hold_time: Duration::ZERO,
        };
        let w = Publisher::new(Rib::<Ipv4>::new(), build, config)
            .unwrap()
            .spawn();
        fail.store(true, Ordering::Relaxed);
        w.send(Change::Announce(Prefix::DEFAULT, nh(1))).unwrap();
        let t0 = Instant::now();
        while w.last_error().is_none() && t0.elapsed() < Duration::from_secs(30) {
            thread::sleep(Duration::from_millis(1));
        }
        assert!(
            w.last_error().is_some(),
            "the failed publication is visible"
        );
        assert_eq!(w.reader().load().generation, 0, "the old table stays");
        fail.store(false, Ordering::Relaxed);
        assert!(w.flush().unwrap().is_ok());
        assert_eq!(w.last_error(), None, "cleared by a publication");
        // The last publication fails: `finish` says so.
        fail.store(true, Ordering::Relaxed);
        w.send(Change::Withdraw(Prefix::DEFAULT)).unwrap();
        match w.finish() {
            Err(WriterError::Build(BuildError::InvalidConfig { reason, .. })) => {
                assert_eq!(reason, "fails")
            }
            other => panic!("expected the build error, got {other:?}"),
        }
    }
}

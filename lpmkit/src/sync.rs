//! Route updates while other threads look up: batch rebuild, published RCU-style.
//!
//! Schemes whose structure is rebuilt rather than patched (DIR-24-8, Spider, Poptrie in
//! bulk mode) follow route changes the way the Spider paper's §III-C describes: changes go to
//! the [`Rib`]; after a *hold time* (or on demand) the scheme is rebuilt from the `Rib` on
//! the writer's thread and the new table replaces the old one with **one atomic pointer
//! swap** ([`arc_swap::ArcSwap`]). Readers never lock and never wait: a [`Reader`] loads the
//! current table (a few atomic instructions), looks up a whole batch in it, and lets it go.
//! A batch therefore sees either the old table or the new one, never a mixture, and an old
//! table is freed only when the last reader holding it drops its guard.
//!
//! The full-table build time is the update latency of this model, which is why build speed
//! is a headline figure of every rebuild-style scheme.
//!
//! Schemes that patch themselves in place ([`IncrementalFib`]: DXR, Poptrie) go through a
//! [`TwinUpdater`] instead: it keeps two instances of the scheme (*left-right*): readers
//! see one while the writer patches the other, the patched one is published with one
//! pointer swap, and once the last reader has left the old instance it receives the same
//! changes. Reads stay lock-free and wait-free, every batch sees the table before or after
//! an update and never a half-applied one, and nothing is freed while a reader can hold it
//! — at the price of twice the memory of the (small) incremental structures.
//!
//! ```
//! use lpmkit::sync::{Publisher, PublisherConfig};
//! use lpmkit::schemes::dir24_8::{Dir24_8, Dir24_8Config};
//! use lpmkit::{Change, Fib, Ipv4, NextHop, Rib};
//! use std::time::Duration;
//!
//! let build = |rib: &Rib<Ipv4>| Dir24_8::build(rib, &Dir24_8Config::default());
//! let config = PublisherConfig { hold_time: Duration::ZERO };
//! let mut publisher = Publisher::new(Rib::new(), build, config)?;
//! let reader = publisher.reader();               // clone and send to lookup threads
//!
//! let nh = NextHop::new(7).unwrap();
//! publisher.apply(Change::Announce("10.0.0.0/8".parse()?, nh))?;
//! publisher.publish()?;                           // rebuild + one pointer swap
//! assert_eq!(reader.load().lookup(0x0a00_0001), Some(nh));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::marker::PhantomData;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use arc_swap::{ArcSwap, Guard};

use crate::fib::{BuildError, Change, Fib, IncrementalFib};
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
pub struct Published<F> {
    /// 0 for the initial build, then +1 per publication.
    pub generation: u64,
    /// The lookup structure.
    pub fib: F,
}

/// What a publication did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PublishInfo {
    /// The generation now visible to readers.
    pub generation: u64,
    /// Changes folded into this generation.
    pub changes: usize,
    /// Time spent rebuilding, in milliseconds.
    pub build_ms: f64,
}

/// A lock-free handle for lookup threads: clone it freely, one per thread.
pub struct Reader<A: Address, F> {
    shared: Arc<ArcSwap<Published<F>>>,
    _family: PhantomData<fn(A)>,
}

impl<A: Address, F> Reader<A, F> {
    fn of(shared: &Arc<ArcSwap<Published<F>>>) -> Self {
        Reader {
            shared: Arc::clone(shared),
            _family: PhantomData,
        }
    }
}

impl<A: Address, F> Clone for Reader<A, F> {
    fn clone(&self) -> Self {
        Reader::of(&self.shared)
    }
}

impl<A: Address, F: Fib<A>> Reader<A, F> {
    /// The current table. Hold the guard for the duration of a batch, not longer: an old
    /// table is freed only when its last guard is dropped.
    #[inline]
    pub fn load(&self) -> Guard<Arc<Published<F>>> {
        self.shared.load()
    }

    /// Looks up a batch in the current table (one load for the whole batch).
    #[inline]
    pub fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) -> u64 {
        let g = self.shared.load();
        g.fib.lookup_batch(addrs, out);
        g.generation
    }
}

impl<F> core::ops::Deref for Published<F> {
    type Target = F;
    fn deref(&self) -> &F {
        &self.fib
    }
}

/// The writer side: owns the `Rib`, rebuilds the scheme and publishes it.
///
/// A `Publisher` lives on one writer thread (it is `Send`); use [`Publisher::spawn`] to
/// give it a thread of its own fed through a channel.
pub struct Publisher<A: Address, F, B> {
    rib: Rib<A>,
    build: B,
    config: PublisherConfig,
    shared: Arc<ArcSwap<Published<F>>>,
    generation: u64,
    pending: usize,
    pending_since: Option<Instant>,
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
            shared: Arc::new(ArcSwap::from_pointee(Published { generation: 0, fib })),
            generation: 0,
            pending: 0,
            pending_since: None,
        })
    }

    /// A handle for lookup threads.
    pub fn reader(&self) -> Reader<A, F> {
        Reader::of(&self.shared)
    }

    /// The authoritative routes (including unpublished changes).
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// Changes applied to the `Rib` but not yet visible to readers.
    pub fn pending(&self) -> usize {
        self.pending
    }

    /// Applies one change to the `Rib`, then publishes if the hold time has run out.
    pub fn apply(&mut self, change: Change<A>) -> Result<Option<PublishInfo>, BuildError> {
        if change.apply_to(&mut self.rib) {
            self.pending += 1;
            self.pending_since.get_or_insert_with(Instant::now);
        }
        self.poll()
    }

    /// Publishes if changes are pending and the hold time has run out.
    pub fn poll(&mut self) -> Result<Option<PublishInfo>, BuildError> {
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
    /// pending.
    pub fn publish(&mut self) -> Result<PublishInfo, BuildError> {
        let t0 = Instant::now();
        let fib = (self.build)(&self.rib)?;
        let build_ms = t0.elapsed().as_secs_f64() * 1e3;
        self.generation += 1;
        self.shared.store(Arc::new(Published {
            generation: self.generation,
            fib,
        }));
        let info = PublishInfo {
            generation: self.generation,
            changes: self.pending,
            build_ms,
        };
        self.pending = 0;
        self.pending_since = None;
        Ok(info)
    }
}

/// Messages to a spawned writer thread.
enum Command<A: Address> {
    Change(Change<A>),
    Flush(mpsc::Sender<Result<PublishInfo, BuildError>>),
}

/// A writer running on its own thread; see [`Publisher::spawn`].
pub struct WriterHandle<A: Address, F> {
    tx: Option<mpsc::Sender<Command<A>>>,
    reader: Reader<A, F>,
    thread: Option<thread::JoinHandle<Vec<PublishInfo>>>,
}

impl<A, F, B> Publisher<A, F, B>
where
    A: Address,
    F: Fib<A> + 'static,
    B: FnMut(&Rib<A>) -> Result<F, BuildError> + Send + 'static,
{
    /// Moves the publisher to a writer thread of its own. Changes sent through the handle
    /// are applied in order and published after the hold time; a build error keeps the
    /// old table and is retried at the next change or flush.
    pub fn spawn(mut self) -> WriterHandle<A, F> {
        let (tx, rx) = mpsc::channel::<Command<A>>();
        let reader = self.reader();
        let thread = thread::spawn(move || {
            let mut log = Vec::new();
            loop {
                let msg = match self.deadline() {
                    None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
                };
                match msg {
                    Ok(Command::Change(c)) => {
                        if c.apply_to(&mut self.rib) {
                            self.pending += 1;
                            self.pending_since.get_or_insert_with(Instant::now);
                        }
                    }
                    Ok(Command::Flush(reply)) => {
                        let r = self.publish();
                        if let Ok(info) = &r {
                            log.push(*info);
                        }
                        let _ = reply.send(r);
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        if self.pending > 0 {
                            if let Ok(info) = self.publish() {
                                log.push(info);
                            }
                        }
                        return log;
                    }
                }
                if let Ok(Some(info)) = self.poll() {
                    log.push(info);
                }
            }
        });
        WriterHandle {
            tx: Some(tx),
            reader,
            thread: Some(thread),
        }
    }
}

impl<A: Address, F: Fib<A>> WriterHandle<A, F> {
    /// Queues a change; it becomes visible after the hold time (or at [`flush`](Self::flush)).
    pub fn send(&self, change: Change<A>) {
        if let Some(tx) = &self.tx {
            // The writer thread only exits when the sender is dropped, so this cannot fail.
            let _ = tx.send(Command::Change(change));
        }
    }

    /// Publishes everything sent so far and waits until readers can see it.
    pub fn flush(&self) -> Result<PublishInfo, BuildError> {
        let (rtx, rrx) = mpsc::channel();
        self.tx
            .as_ref()
            .expect("writer running")
            .send(Command::Flush(rtx))
            .expect("writer thread alive");
        rrx.recv().expect("writer thread alive")
    }

    /// A handle for lookup threads.
    pub fn reader(&self) -> Reader<A, F> {
        self.reader.clone()
    }

    /// Stops the writer (publishing pending changes first) and returns its publication log.
    pub fn finish(mut self) -> Vec<PublishInfo> {
        self.tx = None;
        self.thread
            .take()
            .map(|t| t.join().expect("writer thread panicked"))
            .unwrap_or_default()
    }
}

impl<A: Address, F> Drop for WriterHandle<A, F> {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a [`TwinUpdater::apply`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TwinInfo {
    /// The generation now visible to readers.
    pub generation: u64,
    /// Changes that changed the `Rib` (and so were applied to both instances).
    pub effective: usize,
    /// Time the writer waited for readers to leave the old instance, in microseconds.
    pub wait_us: f64,
}

/// In-place updates of an [`IncrementalFib`] while other threads look up (left-right).
///
/// ```
/// use lpmkit::sync::TwinUpdater;
/// use lpmkit::schemes::dxr::{Dxr, DxrConfig};
/// use lpmkit::{Change, Fib, Ipv4, NextHop, Rib};
///
/// let build = |rib: &Rib<Ipv4>| Dxr::build(rib, &DxrConfig::d18r());
/// let mut updater = TwinUpdater::new(Rib::new(), build)?;
/// let reader = updater.reader();                 // clone and send to lookup threads
/// let nh = NextHop::new(3).unwrap();
/// updater.apply(&[Change::Announce("10.0.0.0/8".parse()?, nh)])?;
/// assert_eq!(reader.load().lookup(0x0a00_0001), Some(nh));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TwinUpdater<A: Address, F, B> {
    rib: Rib<A>,
    build: B,
    shared: Arc<ArcSwap<Published<F>>>,
    /// The instance readers cannot see; `None` after a failed update until rebuilt.
    spare: Option<Arc<Published<F>>>,
    generation: u64,
}

impl<A, F, B> TwinUpdater<A, F, B>
where
    A: Address,
    F: IncrementalFib<A>,
    B: FnMut(&Rib<A>) -> Result<F, BuildError>,
{
    /// Builds both instances from `rib` and publishes one as generation 0.
    pub fn new(rib: Rib<A>, mut build: B) -> Result<Self, BuildError> {
        let visible = build(&rib)?;
        let spare = build(&rib)?;
        Ok(TwinUpdater {
            rib,
            build,
            shared: Arc::new(ArcSwap::from_pointee(Published {
                generation: 0,
                fib: visible,
            })),
            spare: Some(Arc::new(Published {
                generation: 0,
                fib: spare,
            })),
            generation: 0,
        })
    }

    /// A handle for lookup threads.
    pub fn reader(&self) -> Reader<A, F> {
        Reader::of(&self.shared)
    }

    /// The authoritative routes.
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// Applies `changes` to the `Rib`, patches the hidden instance, publishes it with one
    /// pointer swap, waits until no reader holds the other instance, and patches that one
    /// too. Readers should hold a [`Reader::load`] guard for one batch, not longer: the
    /// writer waits for the last of them. If patching fails (a capacity limit), the instance is rebuilt from the `Rib`;
    /// if that fails as well, the error is returned and readers keep the last table
    /// published.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<TwinInfo, BuildError> {
        let effective: Vec<Change<A>> = changes
            .iter()
            .copied()
            .filter(|c| c.apply_to(&mut self.rib))
            .collect();
        if effective.is_empty() && self.spare.is_some() {
            return Ok(TwinInfo {
                generation: self.generation,
                effective: 0,
                wait_us: 0.0,
            });
        }
        let mut next = match self.spare.take() {
            Some(mut spare) => {
                let s = Arc::get_mut(&mut spare).expect("the spare instance is never shared");
                self.patch(&mut s.fib, &effective)?;
                spare
            }
            None => Arc::new(Published {
                generation: 0,
                fib: (self.build)(&self.rib)?,
            }),
        };
        self.generation += 1;
        Arc::get_mut(&mut next)
            .expect("not yet published")
            .generation = self.generation;
        let mut old = self.shared.swap(next);
        // `swap` has turned every reader's claim on the old instance into a reference
        // count, so it is ours alone once the count drops to one.
        let t0 = Instant::now();
        let mut spins = 0u32;
        let wait_us;
        loop {
            if Arc::get_mut(&mut old).is_some() {
                wait_us = t0.elapsed().as_secs_f64() * 1e6;
                break;
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                thread::yield_now();
            }
        }
        let o = Arc::get_mut(&mut old).expect("checked above");
        if self.patch(&mut o.fib, &effective).is_ok() {
            self.spare = Some(old);
        }
        Ok(TwinInfo {
            generation: self.generation,
            effective: effective.len(),
            wait_us,
        })
    }

    /// Patches one instance; on failure rebuilds it from the `Rib`.
    fn patch(&mut self, fib: &mut F, changes: &[Change<A>]) -> Result<(), BuildError> {
        if changes.is_empty() {
            return Ok(());
        }
        if fib.apply(&self.rib, changes).is_err() {
            *fib = (self.build)(&self.rib)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexthop::NextHop;
    use crate::prefix::{Ipv4, Prefix};

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
        let reader = p.reader();
        for i in 0..10u32 {
            let pre = Prefix::new(i << 24, 8).unwrap();
            assert_eq!(p.apply(Change::Announce(pre, nh(i + 1))).unwrap(), None);
        }
        assert_eq!(p.pending(), 10);
        assert_eq!(reader.load().lookup(5 << 24), None, "not yet published");
        let info = p.publish().unwrap();
        assert_eq!((info.generation, info.changes), (1, 10));
        assert_eq!(reader.load().lookup(5 << 24), Some(nh(6)));
        // A change that changes nothing is not pending.
        p.apply(Change::Announce(Prefix::new(0, 8).unwrap(), nh(1)))
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
        p.apply(Change::Announce(Prefix::DEFAULT, nh(1))).unwrap();
        assert!(p.publish().is_err());
        assert_eq!(p.pending(), 1);
        assert_eq!(p.reader().load().generation, 0);
    }

    /// The `Rib` as an incremental scheme: apply is a clone of the new state.
    #[derive(Clone)]
    struct CloneFib(Rib<Ipv4>);

    impl Fib<Ipv4> for CloneFib {
        fn name(&self) -> &str {
            "clone"
        }
        fn lookup(&self, a: Ipv4) -> Option<NextHop> {
            self.0.lookup(a)
        }
        fn memory_bytes(&self) -> usize {
            0
        }
    }

    impl IncrementalFib<Ipv4> for CloneFib {
        fn apply(
            &mut self,
            rib: &Rib<Ipv4>,
            _: &[Change<Ipv4>],
        ) -> Result<crate::fib::UpdateStats, BuildError> {
            self.0 = rib.clone();
            Ok(Default::default())
        }
    }

    #[test]
    fn twin_updates_both_instances() {
        let mut t = TwinUpdater::new(Rib::new(), |r: &Rib<Ipv4>| Ok(CloneFib(r.clone()))).unwrap();
        let reader = t.reader();
        let p = Prefix::new(10 << 24, 8).unwrap();
        // A reader holds generation 0 for a while; the writer publishes generation 1 at
        // once, then waits for the reader before patching the old instance.
        let (tx, rx) = mpsc::channel();
        let r2 = reader.clone();
        let holder = thread::spawn(move || {
            let held = r2.load();
            tx.send(()).unwrap();
            thread::sleep(Duration::from_millis(50));
            (held.generation, held.lookup(10 << 24))
        });
        rx.recv().unwrap();
        let info = t.apply(&[Change::Announce(p, nh(1))]).unwrap();
        assert_eq!(info.generation, 1);
        assert!(
            info.wait_us > 1000.0,
            "waited {} us for the reader",
            info.wait_us
        );
        assert_eq!(
            holder.join().unwrap(),
            (0, None),
            "the held table never changed"
        );
        assert_eq!(reader.load().lookup(10 << 24), Some(nh(1)));
        // The second update lands on the other instance, which must have caught up.
        let q = Prefix::new(11 << 24, 8).unwrap();
        t.apply(&[Change::Announce(q, nh(2))]).unwrap();
        let g = reader.load();
        assert_eq!(
            (g.lookup(10 << 24), g.lookup(11 << 24)),
            (Some(nh(1)), Some(nh(2)))
        );
        assert_eq!(t.apply(&[Change::Announce(q, nh(2))]).unwrap().effective, 0);
    }

    #[test]
    fn spawned_writer() {
        let config = PublisherConfig {
            hold_time: Duration::from_millis(1),
        };
        let p = Publisher::new(Rib::<Ipv4>::new(), |r: &Rib<Ipv4>| Ok(r.clone()), config).unwrap();
        let w = p.spawn();
        let reader = w.reader();
        w.send(Change::Announce(Prefix::DEFAULT, nh(3)));
        let info = w.flush().unwrap();
        assert!(info.generation >= 1);
        assert_eq!(reader.load().lookup(12345), Some(nh(3)));
        w.send(Change::Withdraw(Prefix::DEFAULT));
        let log = w.finish();
        assert!(!log.is_empty());
        assert_eq!(reader.load().lookup(12345), None);
    }
}

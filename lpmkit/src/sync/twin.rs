//! Left-right twins: [`TwinUpdater`], the fallback for incremental schemes that cannot
//! patch one instance under readers, and the comparison for those that can.

use std::time::Duration;

use super::cell::CellWriter;
use super::publisher::{Published, Reader};
use super::{undo_all, ApplyInfo, LookupHandle, UpdateModel, Updater};
use crate::fib::{BuildError, Change, IncrementalFib};
use crate::prefix::Address;
use crate::rib::Rib;

/// [`TwinUpdater`] settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwinConfig {
    /// How long `apply` waits for readers to leave the instance it just unpublished.
    /// Past it the writer gives that instance up (it is freed once no reader holds it) and builds
    /// the next spare from the `Rib` instead of patching: a reader that holds a guard for
    /// long — even one on the writer's own thread — costs a rebuild, never a deadlock.
    pub max_wait: Duration,
}

impl Default for TwinConfig {
    fn default() -> Self {
        TwinConfig {
            max_wait: Duration::from_millis(20),
        }
    }
}

/// In-place updates of an [`IncrementalFib`] while other threads look up (left-right).
///
/// Two instances: readers see one while the writer patches the other, which is then
/// published with one pointer swap; once the last reader has left the old instance, it
/// receives the same changes and becomes the spare. Every batch a reader looks up sees one
/// whole generation. The cost is twice the memory and every change applied twice, and the
/// writer waits (up to [`TwinConfig::max_wait`]) for readers; schemes that can patch one
/// instance under readers use [`InPlace`](super::InPlace) instead.
///
/// A change batch the scheme cannot take (a capacity limit, even after a rebuild) is an
/// error that leaves nothing changed: the `Rib` is restored and readers keep the last
/// table published.
///
/// ```
/// use lpmkit::sync::TwinUpdater;
/// use lpmkit::schemes::dxr::{Dxr, DxrConfig};
/// use lpmkit::{Change, Fib, Ipv4, NextHop, Rib};
///
/// let build = |rib: &Rib<Ipv4>| Dxr::build(rib, &DxrConfig::d18r());
/// let mut updater = TwinUpdater::new(Rib::new(), build)?;
/// let mut reader = updater.reader();             // clone and send to lookup threads
/// let nh = NextHop::new(3).unwrap();
/// updater.apply(&[Change::Announce("10.0.0.0/8".parse()?, nh)])?;
/// assert_eq!(reader.load().lookup(0x0a00_0001), Some(nh));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct TwinUpdater<A: Address, F, B> {
    rib: Rib<A>,
    build: B,
    config: TwinConfig,
    cell: CellWriter<Published<F>>,
    /// The instance readers cannot see, equal to the visible one; `None` until rebuilt
    /// (after a failed patch, or when readers held the last one too long).
    spare: Option<Box<Published<F>>>,
    generation: u64,
}

impl<A: Address, F, B> core::fmt::Debug for TwinUpdater<A, F, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TwinUpdater")
            .field("routes", &self.rib.len())
            .field("generation", &self.generation)
            .field("spare", &self.spare.is_some())
            .field("config", &self.config)
            .finish()
    }
}

impl<A, F, B> TwinUpdater<A, F, B>
where
    A: Address,
    F: IncrementalFib<A>,
    B: FnMut(&Rib<A>) -> Result<F, BuildError>,
{
    /// Builds both instances from `rib` and publishes one as generation 0.
    pub fn new(rib: Rib<A>, build: B) -> Result<Self, BuildError> {
        Self::with_config(rib, build, TwinConfig::default())
    }

    /// [`new`](Self::new) with settings.
    pub fn with_config(rib: Rib<A>, mut build: B, config: TwinConfig) -> Result<Self, BuildError> {
        let visible = build(&rib)?;
        let spare = build(&rib)?;
        Ok(TwinUpdater {
            rib,
            build,
            config,
            cell: CellWriter::new(Box::new(Published {
                generation: 0,
                fib: visible,
            })),
            spare: Some(Box::new(Published {
                generation: 0,
                fib: spare,
            })),
            generation: 0,
        })
    }

    /// A handle for lookup threads.
    pub fn reader(&self) -> Reader<A, F> {
        Reader::of(self.cell.reader())
    }

    /// The authoritative routes.
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// Applies `changes` to the `Rib`, patches the hidden instance, publishes it with one
    /// pointer swap, waits until no reader holds the other instance (at most
    /// [`TwinConfig::max_wait`]), and patches that one too. Readers should hold a
    /// [`Reader::load`] guard for one batch, not longer. If patching fails (a capacity
    /// limit), the instance is rebuilt from the `Rib`; if that fails as well, the changes
    /// are undone and the error returned.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        let mut undo = Vec::new();
        let effective = super::apply_logged(&mut self.rib, changes, &mut undo);
        let mut info = ApplyInfo {
            generation: self.generation,
            effective: effective.len(),
            ..Default::default()
        };
        if effective.is_empty() {
            // Nothing changed: nothing to publish, and no new generation. (Without a spare
            // — given up to a reader that held it past `max_wait` — this used to rebuild
            // and publish the same table as a new generation; the next effective apply
            // builds the spare anyway.)
            return Ok(info);
        }
        let mut next = match self.spare.take() {
            Some(mut spare) => match self.patch(&mut spare.fib, &effective, &mut info) {
                Ok(()) => spare,
                Err(e) => {
                    undo_all(&mut self.rib, undo);
                    // The spare is half patched: dropped, rebuilt at the next apply.
                    return Err(e);
                }
            },
            None => match (self.build)(&self.rib) {
                Ok(fib) => {
                    info.full_rebuild = true;
                    Box::new(Published { generation: 0, fib })
                }
                Err(e) => {
                    undo_all(&mut self.rib, undo);
                    return Err(e);
                }
            },
        };
        self.generation += 1;
        info.generation = self.generation;
        next.generation = self.generation;
        // One pointer store publishes it; the old instance is ours again once every batch
        // that pinned it has ended — or, if a reader holds it past `max_wait`, it is left
        // to be freed after that reader and the spare is rebuilt at the next apply.
        let old = self.cell.replace(next);
        let t0 = std::time::Instant::now();
        let taken = self.cell.take_back(old, self.config.max_wait);
        info.wait_us = t0.elapsed().as_secs_f64() * 1e6;
        match taken {
            Ok(mut old) => {
                let mut ignored = ApplyInfo::default();
                if self.patch(&mut old.fib, &effective, &mut ignored).is_ok() {
                    self.spare = Some(old);
                }
            }
            Err(old) => self.cell.retire(old),
        }
        self.cell.collect();
        Ok(info)
    }

    /// Patches one instance; on failure rebuilds it from the `Rib`.
    fn patch(
        &mut self,
        fib: &mut F,
        changes: &[Change<A>],
        info: &mut ApplyInfo,
    ) -> Result<(), BuildError> {
        if changes.is_empty() {
            return Ok(());
        }
        match fib.apply(&self.rib, changes) {
            Ok(stats) => {
                info.units_rebuilt += stats.units_rebuilt;
                info.full_rebuild |= stats.full_rebuild;
            }
            Err(_) => {
                *fib = (self.build)(&self.rib)?;
                info.full_rebuild = true;
            }
        }
        Ok(())
    }
}

impl<A, F, B> Updater<A> for TwinUpdater<A, F, B>
where
    A: Address,
    F: IncrementalFib<A> + 'static,
    B: FnMut(&Rib<A>) -> Result<F, BuildError> + Send,
{
    fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        TwinUpdater::apply(self, changes)
    }

    fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    fn reader(&self) -> Box<dyn LookupHandle<A>> {
        Box::new(TwinUpdater::reader(self))
    }

    fn memory_bytes(&self) -> usize {
        let visible = self.cell.current().fib.memory_bytes();
        let waiting: usize = self.cell.waiting().map(|t| t.fib.memory_bytes()).sum();
        visible + waiting + self.spare.as_ref().map_or(0, |s| s.fib.memory_bytes())
    }

    fn model(&self) -> UpdateModel {
        UpdateModel::Twins
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::{Fib, UpdateStats};
    use crate::nexthop::NextHop;
    use crate::prefix::{Ipv4, Prefix};
    use std::sync::mpsc;
    use std::thread;

    fn nh(v: u32) -> NextHop {
        NextHop::new(v).unwrap()
    }

    /// The `Rib` as an incremental scheme whose updates and builds fail for next hops
    /// above `limit`.
    #[derive(Clone)]
    struct CloneFib(Rib<Ipv4>);

    const LIMIT: u32 = 100;

    fn check(rib: &Rib<Ipv4>) -> Result<(), BuildError> {
        match rib.iter().map(|(_, h)| h.get()).max() {
            Some(m) if m > LIMIT => Err(BuildError::NextHopOverflow {
                scheme: "clone".into(),
                max: LIMIT as u64,
                requested: m as u64,
            }),
            _ => Ok(()),
        }
    }

    fn build(rib: &Rib<Ipv4>) -> Result<CloneFib, BuildError> {
        check(rib)?;
        Ok(CloneFib(rib.clone()))
    }

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
        ) -> Result<UpdateStats, BuildError> {
            check(rib)?;
            self.0 = rib.clone();
            Ok(Default::default())
        }
    }

    #[test]
    fn twin_updates_both_instances() {
        let mut t = TwinUpdater::new(Rib::new(), build).unwrap();
        let mut reader = t.reader();
        let p = Prefix::new(10 << 24, 8).unwrap();
        // A reader holds generation 0 for a while; the writer publishes generation 1 at
        // once, then waits for the reader before patching the old instance.
        let (tx, rx) = mpsc::channel();
        let mut r2 = reader.clone();
        let holder = thread::spawn(move || {
            let held = r2.load();
            tx.send(()).unwrap();
            thread::sleep(Duration::from_millis(5));
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
        drop(g);
        assert_eq!(t.apply(&[Change::Announce(q, nh(2))]).unwrap().effective, 0);
    }

    /// The defect: after an apply whose patch and rebuild both failed, a later apply
    /// published a table without routes the Rib had. Now a failed apply changes nothing,
    /// and every later table equals the Rib.
    #[test]
    fn a_failed_apply_changes_nothing() {
        let mut t = TwinUpdater::new(Rib::new(), build).unwrap();
        let mut reader = t.reader();
        let a = Prefix::new(10 << 24, 8).unwrap();
        let b = Prefix::new(11 << 24, 8).unwrap();
        let c = Prefix::new(12 << 24, 8).unwrap();
        t.apply(&[Change::Announce(a, nh(1))]).unwrap();
        let err = t.apply(&[Change::Announce(b, nh(LIMIT + 1))]).unwrap_err();
        assert!(matches!(err, BuildError::NextHopOverflow { .. }));
        assert_eq!(
            t.rib().get(&b),
            None,
            "the refused change is not in the Rib"
        );
        assert_eq!(reader.load().lookup(11 << 24), None);
        for (i, p) in [c, b].into_iter().enumerate() {
            t.apply(&[Change::Announce(p, nh(2 + i as u32))]).unwrap();
            let g = reader.load();
            for addr in [10u32 << 24, 11 << 24, 12 << 24] {
                assert_eq!(g.lookup(addr), t.rib().lookup(addr), "{addr:x} after {p}");
            }
        }
    }

    /// The defect: once a reader had held the old instance past `max_wait` (no spare
    /// left), an apply that changed nothing rebuilt and published the same table as a new
    /// generation.
    #[test]
    fn an_apply_that_changes_nothing_publishes_nothing() {
        let config = TwinConfig {
            max_wait: Duration::from_millis(1),
        };
        let mut t = TwinUpdater::with_config(Rib::new(), build, config).unwrap();
        let mut reader = t.reader();
        let p = Prefix::new(10 << 24, 8).unwrap();
        let held = reader.load();
        let info = t.apply(&[Change::Announce(p, nh(1))]).unwrap();
        assert_eq!(info.generation, 1);
        drop(held);
        assert!(t.spare.is_none(), "the held instance was given up");
        let info = t.apply(&[Change::Announce(p, nh(1))]).unwrap();
        assert_eq!((info.effective, info.generation), (0, 1));
        assert_eq!(reader.load().generation, 1);
        // The next change builds the spare and publishes generation 2.
        let q = Prefix::new(11 << 24, 8).unwrap();
        assert_eq!(
            t.apply(&[Change::Announce(q, nh(2))]).unwrap().generation,
            2
        );
        let g = reader.load();
        assert_eq!(
            (g.lookup(10 << 24), g.lookup(11 << 24)),
            (Some(nh(1)), Some(nh(2)))
        );
    }

    /// A reader that keeps its guard (here: on the writer's own thread, which used to
    /// deadlock) costs the writer at most `max_wait`, then a rebuild.
    #[test]
    fn a_held_guard_does_not_block_the_writer() {
        let config = TwinConfig {
            max_wait: Duration::from_millis(5),
        };
        let mut t = TwinUpdater::with_config(Rib::new(), build, config).unwrap();
        let mut reader = t.reader();
        let held = reader.load();
        for i in 0..3u32 {
            let p = Prefix::new((10 + i) << 24, 8).unwrap();
            let info = t.apply(&[Change::Announce(p, nh(1 + i))]).unwrap();
            assert!(info.wait_us < 1e6, "waited {} us", info.wait_us);
        }
        assert_eq!((held.generation, held.lookup(10 << 24)), (0, None));
        drop(held);
        let g = reader.load();
        assert_eq!(g.generation, 3);
        assert_eq!(g.lookup(12 << 24), Some(nh(3)));
    }
}

//! One instance, patched in place while readers look it up: [`InPlace`] and its
//! [`InPlaceReader`]s.

use std::marker::PhantomData;
use std::sync::atomic::{fence, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::cell::RawBox;
use super::epoch::{Domain, ReaderSlot, Reclaimer, ADVANCE_INTERVAL};
use super::{
    apply_logged_into, undo_all, ApplyInfo, Generations, LookupHandle, UpdateModel, Updater,
};
use crate::fib::{BuildError, Change, Fib, InPlaceWriter, Patched};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::NextHop;

/// Applies between two reads of the clock while retired memory waits (see `reclaim`).
const CLOCK_EVERY: u32 = 16;

/// What the writer and the readers share.
struct Shared<T> {
    domain: Arc<Domain>,
    /// The current table (owned: from `Box::into_raw`). Replaced only when a patch
    /// cannot be made in place (a layout change). Null once the handle is poisoned
    /// ([`InPlace::is_poisoned`]).
    table: AtomicPtr<T>,
    /// Replaced tables whose grace period had not passed when the writer went away;
    /// freed with the last reader.
    orphans: Mutex<Vec<RawBox<T>>>,
    /// Generation counters, stored at every `apply`: on a line of their own, away from the
    /// table pointer every batch loads.
    gens: GenerationCounters,
    /// The writer's [`InPlaceWriter::VALIDATED_READS`]: readers validate every batch.
    validated: bool,
}

#[repr(align(64))]
struct GenerationCounters {
    /// The last generation whose patch has begun (readers may see its answers).
    begun: AtomicU64,
    /// The last generation whose patch is complete (readers see nothing older).
    done: AtomicU64,
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        let table = *self.table.get_mut();
        if !table.is_null() {
            // SAFETY: `table` came from `Box::into_raw` and is owned by `Shared`; no reader
            // is left (this is the last reference).
            drop(unsafe { Box::from_raw(table) });
        }
    }
}

/// One instance of an in-place scheme ([`InPlaceWriter`]: DXR, Poptrie, …), patched
/// while any number of reader threads look it up.
///
/// [`apply`](Self::apply) applies changes to the `Rib`, then lets the scheme rebuild the
/// touched parts beside the live ones and publish each with one atomic store; the parts
/// no longer reachable are reused only after every reader has moved past them
/// (`sync::epoch`: a grace period per `apply`, which the writer never waits
/// for). Readers ([`InPlaceReader`]) never lock and never wait.
///
/// **What a lookup sees.** Each key's answer is the answer of the table before or after
/// each `apply` that runs during the lookup — per key: two keys of one batch may straddle
/// an `apply` (one answered before it, one after), but no key ever gets an answer no
/// generation of the table gave, and no lookup reads freed or reused memory.
/// [`InPlaceReader::lookup_batch_traced`] returns the generations a batch's answers come
/// from.
///
/// **Validated schemes** ([`InPlaceWriter::VALIDATED_READS`]: the Bloom-filter schemes,
/// whose lookup probes independent structures one after the other, so that a reader
/// descheduled between two probes could combine two generations into a third answer)
/// are read seqlock-style: a batch loads `done` and `begun`, looks up, and is accepted
/// only if no patch began meanwhile (`begun` still equal to the `done` it started from);
/// otherwise it is looked up again. An accepted batch answers every key from **one**
/// generation. After [`BATCH_ATTEMPTS`] failed attempts (a writer patching back to back)
/// the batch is validated key by key — each key's window is one lookup long, far shorter
/// than the writer's work between two patches — so each key still gets the answer of one
/// generation, but two keys may come from different ones. Readers of validated schemes
/// are lock-free, not wait-free: they may retry, and while a patch is running they wait
/// for it to end. A full rebuild that the writer can decide on before storing anything
/// ([`InPlaceWriter::prepare`]) runs before the generation begins: readers keep reading
/// the old table meanwhile and wait only for the pointer swap that publishes the new one
/// (a rebuild decided mid-patch still runs inside the window). The writer never waits
/// for readers. A read that is retried may have seen a mix of
/// generations, so such a table's lookups must stay in bounds and terminate whatever they
/// read; memory stays valid as for every scheme (nothing is reused before its grace
/// period).
///
/// **Failure.** A batch the layout cannot take, even by a rebuild (the scheme's limits:
/// next-hop ids, capacities), is an error that leaves nothing changed: the `Rib` is
/// restored and the table patched back. While it ran, lookups of the keys it touched may
/// have returned the batch's answers; it counts as two generations (the batch, then the
/// restore). If patching it back fails too, a table built from the restored `Rib`
/// replaces the live one (one pointer swap); if even that build fails, the handle is
/// poisoned ([`is_poisoned`](Self::is_poisoned)): no table stays published that matches
/// no generation — readers' lookups panic and every later `apply` is an error.
///
/// ```
/// use lpmkit::sync::InPlace;
/// use lpmkit::schemes::dxr::{Dxr, DxrConfig};
/// use lpmkit::{Change, Ipv4, NextHop, Rib};
///
/// let fib = Dxr::build(&Rib::new(), &DxrConfig::d18r())?;
/// let mut updater = InPlace::new(Rib::<Ipv4>::new(), fib);
/// let mut reader = updater.reader();            // clone: one per lookup thread
/// let nh = NextHop::new(3).unwrap();
/// updater.apply(&[Change::Announce("10.0.0.0/8".parse()?, nh)])?;
/// let mut out = [0u32; 2];
/// reader.lookup_batch(&[0x0a00_0001, 0x0b00_0001], &mut out);
/// assert_eq!(out, [3, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct InPlace<A: Address, W: InPlaceWriter<A>> {
    rib: Rib<A>,
    /// The scheme's name (kept apart from the table, which a poisoned handle no longer
    /// has).
    scheme: String,
    writer: W,
    shared: Arc<Shared<W::Table>>,
    /// Blocks retired by patches of the current table.
    retired: Reclaimer<W::Retired>,
    /// Tables replaced by patches.
    retired_tables: Reclaimer<RawBox<W::Table>>,
    /// Scratch: what the current `apply` retires.
    scratch: Vec<W::Retired>,
    scratch_tables: Vec<RawBox<W::Table>>,
    generation: u64,
    /// When the epoch last moved on.
    last_advance: Instant,
    /// Applies holding retired memory since the clock was last read.
    applies_unchecked: u32,
    /// Scratch of `apply`: the undo log and the effective changes (kept: no allocation
    /// per call).
    undo: Vec<(Prefix<A>, Option<NextHop>)>,
    effective: Vec<Change<A>>,
}

impl<A: Address, W: InPlaceWriter<A>> core::fmt::Debug for InPlace<A, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InPlace")
            .field("scheme", &self.scheme)
            .field("routes", &self.rib.len())
            .field("generation", &self.generation)
            .field("retired_waiting", &self.retired.len())
            .field("readers", &self.shared.domain.readers())
            .finish()
    }
}

/// Schemes whose in-place table and writer come together as one value (`Dxr`,
/// `Poptrie`, …): [`InPlace::new`] takes them apart.
#[doc(hidden)]
pub trait IntoInPlace<A: Address> {
    /// The writer side.
    type Writer: InPlaceWriter<A>;
    /// The table and its writer.
    fn into_parts(self) -> (Box<<Self::Writer as InPlaceWriter<A>>::Table>, Self::Writer);
}

impl<A: Address, W: InPlaceWriter<A>> InPlace<A, W> {
    /// Takes over `fib` (built from `rib`) and the `Rib` it follows.
    pub fn new<F: IntoInPlace<A, Writer = W>>(rib: Rib<A>, fib: F) -> Self {
        let (table, writer) = fib.into_parts();
        Self::from_parts(rib, table, writer)
    }

    /// [`new`](Self::new) from a table and its writer.
    #[doc(hidden)]
    pub fn from_parts(rib: Rib<A>, table: Box<W::Table>, writer: W) -> Self {
        InPlace {
            rib,
            scheme: table.name().to_string(),
            writer,
            shared: Arc::new(Shared {
                domain: Domain::new(),
                table: AtomicPtr::new(Box::into_raw(table)),
                orphans: Mutex::new(Vec::new()),
                gens: GenerationCounters {
                    begun: AtomicU64::new(0),
                    done: AtomicU64::new(0),
                },
                validated: W::VALIDATED_READS,
            }),
            retired: Reclaimer::default(),
            retired_tables: Reclaimer::default(),
            scratch: Vec::new(),
            scratch_tables: Vec::new(),
            generation: 0,
            last_advance: Instant::now(),
            applies_unchecked: 0,
            undo: Vec::new(),
            effective: Vec::new(),
        }
    }

    /// A handle for one lookup thread (clone it for more).
    pub fn reader(&self) -> InPlaceReader<A, W::Table> {
        InPlaceReader::new(&self.shared)
    }

    /// The authoritative routes.
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// The generation readers see once the current `apply` returns (0 = as built).
    #[doc(hidden)]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The live table (for figures; lookups go through readers).
    ///
    /// # Panics
    /// If the handle is poisoned ([`is_poisoned`](Self::is_poisoned)).
    #[doc(hidden)]
    pub fn table(&self) -> &W::Table {
        // SAFETY: only this writer replaces the table, and it frees a replaced one only
        // after its grace period; `&self` excludes a concurrent `apply`.
        unsafe { live(self.shared.table.load(Ordering::Acquire)) }
    }

    /// True if a failed batch could be neither undone nor replaced by a rebuild: no table
    /// is published, `apply` refuses every batch, and readers' lookups panic.
    pub fn is_poisoned(&self) -> bool {
        self.shared.table.load(Ordering::Relaxed).is_null()
    }

    /// The writer side (for its figures).
    #[doc(hidden)]
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// Retired blocks and tables still waiting for their grace period.
    #[doc(hidden)]
    pub fn waiting(&self) -> (usize, usize) {
        (self.retired.len(), self.retired_tables.len())
    }

    /// Applies `changes` to the `Rib` and patches the table in place; see the type docs
    /// for what readers see and what a failure leaves.
    pub fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        if self.is_poisoned() {
            return Err(BuildError::InvalidConfig {
                scheme: self.scheme.clone(),
                reason: "the table is poisoned (an earlier failed batch could not be undone \
                         nor the table rebuilt); build a new one from the routes"
                    .into(),
            });
        }
        let (mut undo, mut effective) = (
            core::mem::take(&mut self.undo),
            core::mem::take(&mut self.effective),
        );
        undo.clear();
        apply_logged_into(&mut self.rib, changes, &mut undo, &mut effective);
        let result = self.apply_effective(&effective, &mut undo);
        (self.undo, self.effective) = (undo, effective);
        result
    }

    /// [`Self::apply`] once the `Rib` holds the batch: `effective` are the changes that
    /// changed it, `undo` the log that restores it.
    fn apply_effective(
        &mut self,
        effective: &[Change<A>],
        undo: &mut Vec<(Prefix<A>, Option<NextHop>)>,
    ) -> Result<ApplyInfo, BuildError> {
        let mut info = ApplyInfo {
            generation: self.generation,
            effective: effective.len(),
            ..Default::default()
        };
        if effective.is_empty() {
            // Nothing to patch; still a chance to reuse what readers have moved past.
            self.reclaim();
            return Ok(info);
        }
        let effective = crate::fib::patch_order(effective);
        let result = match self.prepare(&effective, &mut info) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.begin();
                let r = self.patch(&effective, &mut info);
                self.end();
                r
            }
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            // Back to the Rib before the batch, and the table with it: each prefix the
            // batch touched, as it was (its first undo entry: last in this list).
            let restore: Vec<Change<A>> = undo
                .iter()
                .rev()
                .map(|&(p, old)| match old {
                    Some(nh) => Change::Announce(p, nh),
                    None => Change::Withdraw(p),
                })
                .collect();
            undo_all(&mut self.rib, core::mem::take(undo));
            let restore = crate::fib::patch_order(&restore);
            self.begin();
            let restored = self.patch(&restore, &mut info);
            self.end();
            if let Err(again) = restored {
                // The table may hold part of the batch: never leave it published. A
                // table rebuilt from the restored Rib replaces it; if even that fails,
                // the handle is poisoned and lookups fail loudly.
                self.rebuild_or_poison(&e, &again)?;
            }
            self.reclaim();
            return Err(e);
        }
        self.reclaim();
        info.generation = self.generation;
        Ok(info)
    }

    /// After a batch failed (`first`) and undoing it failed too (`again`): builds a table
    /// from the restored `Rib` and publishes it with one pointer swap, a writer with it.
    /// If that build fails as well, no table that matches a generation can be published:
    /// the handle is poisoned ([`InPlace::is_poisoned`]), every later `apply` is an error
    /// and readers' lookups panic, rather than answer from a table in an unknown state.
    fn rebuild_or_poison(
        &mut self,
        first: &BuildError,
        again: &BuildError,
    ) -> Result<(), BuildError> {
        let rebuilt = W::build(&self.rib, self.writer.config());
        self.begin();
        let result = match rebuilt {
            Ok((table, writer)) => {
                self.writer = writer;
                let mut info = ApplyInfo::default();
                self.publish(Patched::Replaced(table, Default::default()), &mut info);
                Ok(())
            }
            Err(build) => {
                let old = self
                    .shared
                    .table
                    .swap(core::ptr::null_mut(), Ordering::AcqRel);
                // SAFETY: `old` came from `Box::into_raw`; readers may still be in it, so it
                // waits for its grace period like any replaced table.
                self.scratch_tables.push(unsafe { RawBox::from_raw(old) });
                self.scratch.clear();
                self.retired.clear();
                Err(BuildError::InvalidConfig {
                    scheme: self.scheme.clone(),
                    reason: format!(
                        "a batch failed ({first}), undoing it failed ({again}) and a table \
                         rebuilt from the routes failed too ({build}): the table is poisoned"
                    ),
                })
            }
        };
        self.end();
        result
    }

    /// Starts the next generation: readers may see its answers from now on.
    ///
    /// The release fence orders this store before every store of the patch, atomic ones
    /// with `Relaxed` ordering included: a reader whose lookup loads one of them and then
    /// runs an acquire fence synchronizes with this fence, so its next load of `begun`
    /// sees this generation (or a later one) — the validation of
    /// [`InPlaceReader::lookup_batch`] for validated schemes rests on it.
    fn begin(&mut self) {
        self.shared
            .gens
            .begun
            .store(self.generation + 1, Ordering::Release);
        fence(Ordering::Release);
    }

    /// Completes the generation begun.
    fn end(&mut self) {
        self.generation += 1;
        self.shared
            .gens
            .done
            .store(self.generation, Ordering::Release);
    }

    /// [`InPlaceWriter::prepare`]: true if it built a replacement, which is then
    /// published (the generation begun just before the pointer swap and completed just
    /// after it: readers waited for no build).
    fn prepare(&mut self, changes: &[Change<A>], info: &mut ApplyInfo) -> Result<bool, BuildError> {
        let table = self.shared.table.load(Ordering::Relaxed);
        // SAFETY: as in `patch`; `prepare` stores nothing into the table.
        let prepared = unsafe { self.writer.prepare(&*table, &self.rib, changes) }?;
        match prepared {
            None => Ok(false),
            Some(patched) => {
                debug_assert!(
                    matches!(patched, Patched::Replaced(..)),
                    "prepare returns replacements only"
                );
                self.begin();
                self.publish(patched, info);
                self.end();
                Ok(true)
            }
        }
    }

    /// One patch of the current table; a replacement is published with one pointer
    /// store.
    fn patch(&mut self, changes: &[Change<A>], info: &mut ApplyInfo) -> Result<(), BuildError> {
        let table = self.shared.table.load(Ordering::Relaxed);
        // SAFETY: `table` is the writer's current table (it was built with it or
        // returned by its last replacement), this `&mut self` is the only writer, and
        // retired blocks go back to it only after their grace period (`reclaim`).
        let patched = unsafe {
            self.writer
                .patch(&*table, &self.rib, changes, &mut self.scratch)
        }?;
        self.publish(patched, info);
        Ok(())
    }

    /// Accounts for a patch; publishes a replacement with one pointer store.
    fn publish(&mut self, patched: Patched<W::Table>, info: &mut ApplyInfo) {
        match patched {
            Patched::InPlace(stats) => {
                info.units_rebuilt += stats.units_rebuilt;
                info.full_rebuild |= stats.full_rebuild;
            }
            Patched::Replaced(new, stats) => {
                info.units_rebuilt += stats.units_rebuilt;
                info.full_rebuild = true;
                let old = self.shared.table.swap(Box::into_raw(new), Ordering::AcqRel);
                // SAFETY: `old` came from `Box::into_raw`; readers may still be in it, so
                // it waits for its grace period before it is dropped.
                self.scratch_tables.push(unsafe { RawBox::from_raw(old) });
                // Blocks retired from the old table go with it.
                self.scratch.clear();
                self.retired.clear();
            }
        }
    }

    /// Queues what this apply retired, tagged with the current epoch; every
    /// [`ADVANCE_INTERVAL`] moves the epoch on and reuses what no reader can hold.
    fn reclaim(&mut self) {
        let tag = self.shared.domain.epoch();
        for b in self.scratch.drain(..) {
            self.retired.retire(tag, b);
        }
        for t in self.scratch_tables.drain(..) {
            self.retired_tables.retire(tag, t);
        }
        if self.retired.is_empty() && self.retired_tables.is_empty() {
            return;
        }
        // The clock is read every `CLOCK_EVERY` applies that hold retired memory, not
        // on each: a clock read costs about as much as a small patch.
        self.applies_unchecked += 1;
        if self.applies_unchecked >= CLOCK_EVERY {
            self.applies_unchecked = 0;
            if self.last_advance.elapsed() >= ADVANCE_INTERVAL {
                self.reclaim_now();
            }
        }
    }

    /// Moves the epoch on and reuses every retired block and frees every replaced table
    /// that no reader can still hold — now, not at the writer's own pace (which waits
    /// `ADVANCE_INTERVAL` between moves so that readers' epoch loads stay cached). Call
    /// it when updates pause, to give memory back.
    #[doc(hidden)]
    pub fn reclaim_now(&mut self) {
        let domain = Arc::clone(&self.shared.domain);
        domain.advance();
        self.last_advance = Instant::now();
        let safe = domain.safe_before();
        let table = self.shared.table.load(Ordering::Relaxed);
        for b in self.retired.ready(safe) {
            // SAFETY: the block was retired by a patch of the current table (blocks of
            // replaced tables are dropped on replacement) and every reader has announced
            // an epoch after its unlink.
            unsafe { self.writer.reuse(&*table, b) };
        }
        self.retired_tables.ready(safe).for_each(drop);
    }

    /// Bytes held for the table: its memory (blocks waiting for their grace period
    /// included) and replaced tables not yet freed.
    pub fn memory_bytes(&self) -> usize {
        let live = if self.is_poisoned() {
            0
        } else {
            self.table().memory_bytes()
        };
        live + self
            .retired_tables
            .iter()
            .map(|t| t.get().memory_bytes())
            .sum::<usize>()
    }
}

impl<A: Address, W: InPlaceWriter<A>> Drop for InPlace<A, W> {
    fn drop(&mut self) {
        // Readers may outlive the writer: a replaced table they may still be in is freed
        // with the last of them.
        let mut orphans = self
            .shared
            .orphans
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        orphans.extend(self.scratch_tables.drain(..));
        orphans.extend(self.retired_tables.ready(u64::MAX));
    }
}

impl<A: Address, W: InPlaceWriter<A>> Updater<A> for InPlace<A, W> {
    fn apply(&mut self, changes: &[Change<A>]) -> Result<ApplyInfo, BuildError> {
        InPlace::apply(self, changes)
    }

    fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    fn reader(&self) -> Box<dyn LookupHandle<A>> {
        Box::new(InPlace::reader(self))
    }

    fn memory_bytes(&self) -> usize {
        InPlace::memory_bytes(self)
    }

    fn model(&self) -> UpdateModel {
        UpdateModel::InPlace
    }
}

/// The published table behind `p`.
///
/// # Panics
/// If `p` is null: the handle is poisoned ([`InPlace::is_poisoned`]), and a lookup fails
/// loudly rather than answer from a table in an unknown state.
///
/// # Safety
/// A non-null `p` points to a table that stays valid for `'a` (a published table, freed
/// only after a grace period the caller's epoch announcement holds back).
#[inline(always)]
unsafe fn live<'a, T>(p: *const T) -> &'a T {
    assert!(
        !p.is_null(),
        "lpmkit: the in-place table is poisoned: a failed batch could be neither undone nor \
         rebuilt (see InPlace::is_poisoned)"
    );
    // SAFETY: non-null, valid for `'a` by the caller's contract.
    unsafe { &*p }
}

/// A lookup thread's handle on an [`InPlace`] table: `Send`, not `Sync`; clone it for
/// each thread. Lookups take `&mut self`, so a table reference cannot outlive the batch
/// it was loaded for.
pub struct InPlaceReader<A: Address, T> {
    shared: Arc<Shared<T>>,
    slot: ReaderSlot,
    /// A copy of `shared.validated`, in the reader's own memory.
    validated: bool,
    _family: PhantomData<fn(A)>,
}

/// Whole-batch attempts of a validated read before it validates key by key (see
/// [`InPlace`]'s type docs).
pub const BATCH_ATTEMPTS: u32 = 2;

/// Failed attempts at one key after which a validated reader yields its CPU (the writer
/// it waits for may be waiting for a CPU, on a busy machine) instead of spinning.
const SPINS_BEFORE_YIELD: u32 = 64;

impl<A: Address, T> InPlaceReader<A, T> {
    fn new(shared: &Arc<Shared<T>>) -> Self {
        InPlaceReader {
            shared: Arc::clone(shared),
            slot: ReaderSlot::new(&shared.domain),
            validated: shared.validated,
            _family: PhantomData,
        }
    }

    /// Says this thread is idle: until its next lookup it holds nothing, so it does not
    /// hold back the reuse of retired memory. (A reader that just stops looking up does.)
    pub fn offline(&mut self) {
        self.slot.offline();
    }
}

impl<A: Address, T> Clone for InPlaceReader<A, T> {
    fn clone(&self) -> Self {
        Self::new(&self.shared)
    }
}

impl<A: Address, T> core::fmt::Debug for InPlaceReader<A, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("InPlaceReader")
            .field("generation", &self.shared.gens.done.load(Ordering::Relaxed))
            .finish()
    }
}

impl<A: Address, T: Fib<A>> InPlaceReader<A, T> {
    /// The current table, for one batch: the reference lives as long as this `&mut`
    /// borrow, and the table it names stays valid that long.
    ///
    /// Lookups made directly on it are not validated: for a validated scheme
    /// ([`InPlaceWriter::VALIDATED_READS`]) they are memory-safe but may combine two
    /// generations; use [`lookup_batch`](Self::lookup_batch).
    #[inline]
    pub fn load(&mut self) -> &T {
        self.slot.quiescent();
        // SAFETY: the table is freed only after a grace period that began after it was
        // unpublished; this reader announced an epoch before loading it, and announces
        // a later one only in its next `load` (which needs this borrow to have ended).
        unsafe { live(self.shared.table.load(Ordering::Acquire)) }
    }

    /// Looks up a batch (`out[i]` = the next hop of `addrs[i]`, 0 = none); validated for
    /// validated schemes (see [`InPlace`]'s type docs).
    #[inline]
    pub fn lookup_batch(&mut self, addrs: &[A], out: &mut [u32]) {
        if self.validated {
            self.lookup_validated(addrs, out);
        } else {
            self.load().lookup_batch(addrs, out);
        }
    }

    /// [`lookup_batch`](Self::lookup_batch), returning the generations its answers come
    /// from: each key's answer is the table's at one generation of `first..=last`
    /// (`first == last` for a validated batch accepted whole).
    #[doc(hidden)]
    pub fn lookup_batch_traced(&mut self, addrs: &[A], out: &mut [u32]) -> Generations {
        if self.validated {
            return self.lookup_validated(addrs, out);
        }
        self.slot.quiescent();
        let first = self.shared.gens.done.load(Ordering::Acquire);
        // SAFETY: as in `load`.
        let table = unsafe { live(self.shared.table.load(Ordering::Acquire)) };
        table.lookup_batch(addrs, out);
        // Every load of the lookups before the read of `begun`: a patch store they saw
        // was made after its generation began.
        fence(Ordering::Acquire);
        let last = self.shared.gens.begun.load(Ordering::Relaxed).max(first);
        Generations { first, last }
    }

    /// A validated batch: whole, [`BATCH_ATTEMPTS`] times, then key by key.
    #[inline]
    fn lookup_validated(&mut self, addrs: &[A], out: &mut [u32]) -> Generations {
        for _ in 0..BATCH_ATTEMPTS {
            if let Some(g) = self.try_validated(addrs, out) {
                return Generations { first: g, last: g };
            }
        }
        self.lookup_key_by_key(addrs, out)
    }

    /// The fallback of a batch that kept meeting patches: each key validated alone.
    #[cold]
    #[inline(never)]
    fn lookup_key_by_key(&mut self, addrs: &[A], out: &mut [u32]) -> Generations {
        let mut gens: Option<Generations> = None;
        for (a, o) in addrs.iter().zip(out.iter_mut()) {
            let mut failed = 0u32;
            let g = loop {
                let one = core::slice::from_mut(o);
                if let Some(g) = self.try_validated(core::slice::from_ref(a), one) {
                    break g;
                }
                failed += 1;
                if failed.is_multiple_of(SPINS_BEFORE_YIELD) {
                    std::thread::yield_now();
                } else {
                    core::hint::spin_loop();
                }
            };
            gens = Some(match gens {
                None => Generations { first: g, last: g },
                Some(x) => Generations {
                    first: x.first.min(g),
                    last: x.last.max(g),
                },
            });
        }
        gens.unwrap_or_else(|| {
            let g = self.shared.gens.done.load(Ordering::Acquire);
            Generations { first: g, last: g }
        })
    }

    /// One attempt of a validated read: the generation every answer of `out` comes from,
    /// or `None` if a patch began before or during it (then `out` holds anything).
    ///
    /// **Why an accepted attempt saw exactly generation `s`.** Loading `done == s` with
    /// acquire synchronizes with `end` of generation `s`: every store of patches up to
    /// `s` happens before the lookup's loads, which therefore read those values or later
    /// ones. A later one is a store of a patch that began after `s`; it follows the
    /// writer's `begun` store and release fence ([`InPlace::begin`]), so the reader's
    /// acquire fence after the lookup synchronizes with that fence and the final load of
    /// `begun` returns `s + 1` or more — the attempt is refused. An accepted attempt
    /// (`begun == s` after the lookup) read no store of a later patch and none older than
    /// `s`'s: all of generation `s`. (The first load of `begun` is only an early way out
    /// when a patch is running; `Relaxed` suffices for it.)
    #[inline(always)]
    fn try_validated(&mut self, addrs: &[A], out: &mut [u32]) -> Option<u64> {
        self.slot.quiescent();
        let gens = &self.shared.gens;
        let s = gens.done.load(Ordering::Acquire);
        if gens.begun.load(Ordering::Relaxed) != s {
            return None;
        }
        // SAFETY: as in `load`: this attempt announced its epoch above, and nothing it
        // reads is reused before this reader's next announcement. A read that mixes
        // generations still only follows published positions of blocks that are not
        // reused under it (the validated table's own contract: in bounds, bounded).
        let table = unsafe { live(self.shared.table.load(Ordering::Acquire)) };
        table.lookup_batch(addrs, out);
        fence(Ordering::Acquire);
        (gens.begun.load(Ordering::Relaxed) == s).then_some(s)
    }
}

impl<A: Address, T: Fib<A> + 'static> LookupHandle<A> for InPlaceReader<A, T> {
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [u32]) {
        InPlaceReader::lookup_batch(self, addrs, out)
    }

    fn lookup_batch_traced(&mut self, addrs: &[A], out: &mut [u32]) -> Generations {
        InPlaceReader::lookup_batch_traced(self, addrs, out)
    }

    fn boxed_clone(&self) -> Box<dyn LookupHandle<A>> {
        Box::new(self.clone())
    }

    #[cfg(any(test, feature = "test-hooks"))]
    fn lookup_batch_unvalidated(&mut self, addrs: &[A], out: &mut [u32]) {
        self.load().lookup_batch(addrs, out)
    }

    fn offline(&mut self) {
        InPlaceReader::offline(self)
    }
}

#[cfg(test)]
mod tests;

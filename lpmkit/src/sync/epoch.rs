//! Grace periods for one writer and many readers: when may memory a reader could have
//! reached be reused?
//!
//! A quiescent-state scheme (QSBR, as the Linux kernel's RCU and liburcu's `urcu-qsbr`),
//! chosen over `crossbeam-epoch` for the lookup path: a reader announces, once per batch,
//! the epoch it starts in — **one load and at most one store** (a plain `mov` each on
//! x86-64), no read-modify-write, no fence — and announces nothing when the batch ends.
//! The store is skipped when the epoch has not moved since the reader's last
//! announcement (re-announcing it tells the writer nothing), and the writer moves the
//! epoch on only every [`ADVANCE_INTERVAL`] or so, so in steady state a batch reads one
//! cached line and writes none. (A `crossbeam_epoch::pin` costs a read-modify-write or a
//! full fence per pin, and runs other threads' deferred destructors on the reader now and
//! then.)
//!
//! * [`Domain`]: the global epoch and the readers' slots.
//! * [`ReaderSlot`]: one per reader thread; [`ReaderSlot::quiescent`] starts a batch,
//!   [`ReaderSlot::offline`] (or dropping the slot) says the thread holds nothing.
//! * The writer unlinks a block (one atomic store), tags it with the epoch the unlink
//!   happened in ([`Domain::advance`] ends that epoch) and keeps it in a [`Reclaimer`]
//!   until every reader has announced a later epoch ([`Domain::safe_before`]).
//!
//! **Why it is safe.** A block retired in epoch `r` was unlinked before the global epoch
//! moved past `r`. A reader that announced `e > r` loaded the global epoch after that move
//! (acquire), so its loads of the structure see the unlink and cannot reach the block; and
//! everything it read in earlier batches happened before its announcement (release), which
//! the writer reads (acquire) before reusing anything. A reader still announcing `e <= r`
//! may hold the block: it is kept. An offline reader holds nothing; going online again is
//! the one place that needs a full fence (the writer might otherwise miss the announcement
//! and the reader miss the unlink), and a reader pays it only on its first batch after
//! going offline.
//!
//! **What a stalled reader does.** Nothing to the writer: the writer never waits. A reader
//! that stops inside a batch keeps its announcement, so blocks retired from then on are
//! not reused until it moves on — memory grows with the updates made meanwhile — but it
//! never sees freed or reused memory, and updates go on.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often, at most, a writer with retired memory waiting moves the epoch on: each move
/// costs every reader one cache miss on its next batch, so a writer applying updates
/// back to back moves it every few dozen of them rather than at each one.
pub const ADVANCE_INTERVAL: Duration = Duration::from_micros(50);

/// A reader's announcement: the epoch it may hold memory from, or [`OFFLINE`].
#[repr(align(64))]
#[derive(Debug, Default)]
struct Slot {
    epoch: AtomicU64,
}

/// A slot value: the reader holds nothing.
const OFFLINE: u64 = 0;

/// The global epoch and the readers' slots of one structure (one writer).
#[derive(Debug)]
pub struct Domain {
    /// The current epoch (starts at 1; 0 is [`OFFLINE`]).
    global: CachePadded,
    /// Every registered reader's slot (locked only to register, unregister and scan; the
    /// lookup path never takes it).
    slots: Mutex<Vec<Arc<Slot>>>,
}

/// An `AtomicU64` alone on its cache line, so readers' loads of the global epoch do not
/// share a line with anything the writer stores to often.
#[repr(align(64))]
#[derive(Debug)]
struct CachePadded(AtomicU64);

impl Domain {
    /// A new domain, in epoch 1, with no readers.
    pub fn new() -> Arc<Domain> {
        Arc::new(Domain {
            global: CachePadded(AtomicU64::new(1)),
            slots: Mutex::new(Vec::new()),
        })
    }

    /// The current epoch.
    pub fn epoch(&self) -> u64 {
        self.global.0.load(Ordering::Acquire)
    }

    /// Ends the current epoch (writer only): returns it, the tag of everything retired
    /// in it, and moves the global epoch on. Call it after the unlinks of the retired
    /// blocks are published.
    pub fn advance(&self) -> u64 {
        self.global.0.fetch_add(1, Ordering::AcqRel)
    }

    /// Blocks retired with a tag below the returned epoch can no longer be reached by any
    /// reader (writer only). `u64::MAX` when no reader is online.
    pub fn safe_before(&self) -> u64 {
        // Pairs with the fence of a reader going online (see the module docs).
        fence(Ordering::SeqCst);
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .iter()
            .map(|s| s.epoch.load(Ordering::Acquire))
            .filter(|&e| e != OFFLINE)
            .min()
            .unwrap_or(u64::MAX)
    }

    /// Readers registered (online or not).
    pub fn readers(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// A reader thread's registration in a [`Domain`]: `Send`, not `Sync` (one thread uses a
/// slot at a time); make one per thread.
#[derive(Debug)]
pub struct ReaderSlot {
    domain: Arc<Domain>,
    slot: Arc<Slot>,
    /// The epoch last announced, or [`OFFLINE`].
    announced: Cell<u64>,
}

impl ReaderSlot {
    /// Registers a reader (offline until its first [`quiescent`](Self::quiescent)).
    pub fn new(domain: &Arc<Domain>) -> Self {
        let slot = Arc::new(Slot::default());
        domain
            .slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Arc::clone(&slot));
        ReaderSlot {
            domain: Arc::clone(domain),
            slot,
            announced: Cell::new(OFFLINE),
        }
    }

    /// Announces a quiescent state: this reader holds nothing it read before this call,
    /// and may hold what it reads from now on until its next call (or
    /// [`offline`](Self::offline)). Call it at the start of every batch: one load, and a
    /// store only when the epoch has moved since the last call.
    #[inline]
    pub fn quiescent(&self) {
        let e = self.domain.global.0.load(Ordering::Acquire);
        let last = self.announced.get();
        if e == last {
            // Already announced: nothing retired since can be reused before a later one.
            return;
        }
        // Release: a writer that reads this announcement knows that every read of this
        // reader's earlier batches (before it went offline, too) is over. (The release of
        // the earlier `offline` store does not carry over to this one.)
        self.slot.epoch.store(e, Ordering::Release);
        if last == OFFLINE {
            // Going online: the writer may have scanned the slot as offline; the fences
            // make sure that either it sees this announcement or this reader sees its
            // unlinks.
            fence(Ordering::SeqCst);
        }
        self.announced.set(e);
    }

    /// Pins: like going online in [`quiescent`](Self::quiescent), always (one load, one
    /// store and a full fence). For readers that hold something only for one batch and
    /// say so with [`offline`](Self::offline) when it ends, so that an idle reader holds
    /// nothing (the pin-per-batch discipline of `crossbeam-epoch`, used where what a
    /// reader holds is a whole table).
    #[inline]
    pub fn pin(&self) {
        let e = self.domain.global.0.load(Ordering::Acquire);
        // Release, as in `quiescent`: the reads of the last pinned batch are over.
        self.slot.epoch.store(e, Ordering::Release);
        // As for going online in `quiescent`: either the writer's scan sees this
        // announcement, or this reader's loads after the fence see the writer's unlink.
        fence(Ordering::SeqCst);
        self.announced.set(e);
    }

    /// Announces that this reader holds nothing until its next
    /// [`quiescent`](Self::quiescent): an idle reader thread does not hold back
    /// reclamation.
    pub fn offline(&self) {
        self.slot.epoch.store(OFFLINE, Ordering::Release);
        self.announced.set(OFFLINE);
    }
}

impl Drop for ReaderSlot {
    fn drop(&mut self) {
        self.offline();
        let mut slots = self.domain.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|s| !Arc::ptr_eq(s, &self.slot));
    }
}

/// Retired items waiting for their grace period, oldest first (writer side).
#[derive(Debug)]
pub struct Reclaimer<T> {
    queue: VecDeque<(u64, T)>,
}

impl<T> Default for Reclaimer<T> {
    fn default() -> Self {
        Reclaimer {
            queue: VecDeque::new(),
        }
    }
}

impl<T> Reclaimer<T> {
    /// Keeps `item`, retired in epoch `tag`.
    pub fn retire(&mut self, tag: u64, item: T) {
        debug_assert!(self.queue.back().is_none_or(|&(t, _)| t <= tag));
        self.queue.push_back((tag, item));
    }

    /// Takes out the items whose grace period has passed (tag below `safe_before`).
    pub fn ready(&mut self, safe_before: u64) -> impl Iterator<Item = T> + '_ {
        let n = self.queue.partition_point(|&(t, _)| t < safe_before);
        self.queue.drain(..n).map(|(_, item)| item)
    }

    /// Items waiting.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True if nothing waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The waiting items (for accounting).
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.queue.iter().map(|(_, item)| item)
    }

    /// Drops every waiting item (the memory they belong to is going away as a whole).
    pub fn clear(&mut self) {
        self.queue.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_periods() {
        let d = Domain::new();
        let mut rec = Reclaimer::default();
        assert_eq!(d.safe_before(), u64::MAX, "no readers: everything is safe");
        let r = ReaderSlot::new(&d);
        assert_eq!(d.safe_before(), u64::MAX, "registered but offline");
        r.quiescent(); // announces epoch 1
        rec.retire(d.advance(), "a"); // retired in epoch 1
        assert_eq!(d.epoch(), 2);
        assert_eq!(
            rec.ready(d.safe_before()).count(),
            0,
            "the reader may hold it"
        );
        r.quiescent(); // announces epoch 2: it read nothing of epoch 1 since
        assert_eq!(rec.ready(d.safe_before()).collect::<Vec<_>>(), vec!["a"]);
        rec.retire(d.advance(), "b");
        assert_eq!(rec.ready(d.safe_before()).count(), 0);
        r.offline();
        assert_eq!(rec.ready(d.safe_before()).collect::<Vec<_>>(), vec!["b"]);
        r.quiescent();
        rec.retire(d.advance(), "c");
        drop(r);
        assert_eq!(d.readers(), 0);
        assert_eq!(rec.ready(d.safe_before()).collect::<Vec<_>>(), vec!["c"]);
    }

    #[test]
    fn the_slowest_reader_decides() {
        let d = Domain::new();
        let (fast, slow) = (ReaderSlot::new(&d), ReaderSlot::new(&d));
        slow.quiescent();
        let mut rec = Reclaimer::default();
        for i in 0..5 {
            fast.quiescent();
            rec.retire(d.advance(), i);
        }
        fast.quiescent();
        assert_eq!(
            rec.ready(d.safe_before()).count(),
            0,
            "the slow reader is in epoch 1"
        );
        slow.quiescent();
        assert_eq!(rec.ready(d.safe_before()).count(), 5);
    }
}

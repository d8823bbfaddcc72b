//! One value behind one pointer, replaced whole while readers use it: the cell under
//! [`Publisher`](super::Publisher) (a rebuilt table replaces the old one) and
//! [`TwinUpdater`](super::TwinUpdater) (the two instances take turns).
//!
//! A reader *pins* the cell for one batch ([`CellReader::pin`]): it announces the epoch it
//! starts in ([`epoch`](super::epoch): one store and a fence), loads the pointer, and
//! announces that it holds nothing when the batch ends (one store). A replaced value is
//! handed back to the writer ([`CellWriter::take_back`]) or freed
//! ([`CellWriter::collect`]) only after every reader pinned when it was replaced has
//! unpinned. Unlike the quiescent readers of [`InPlace`](super::InPlace), a reader that
//! stops looking up holds nothing, which matters here: what a reader holds is a whole
//! table, not a block.
//!
//! (lpmkit used `arc_swap::ArcSwap` here until a `Guard` was seen under Miri's
//! weak-memory emulation to leave the writer an unshared `Arc` it still read; the debt
//! protocol behind it has had such races reported, e.g. vorner/arc-swap#164 and #210.
//! The epoch scheme is the one [`InPlace`](super::InPlace) already relies on.)

use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::epoch::{Domain, ReaderSlot, Reclaimer};

/// A heap value owned through a raw pointer: what a replaced value is while readers may
/// still hold references into it. (A `Box` asserts that it is the only way to the value,
/// which is false until the grace period has passed.) Dropping it frees the value.
pub(super) struct RawBox<T>(NonNull<T>);

// SAFETY: a `RawBox` owns its value as a `Box` would; the references readers hold are
// shared ones, which `T: Sync` allows across threads.
unsafe impl<T: Send + Sync> Send for RawBox<T> {}
// SAFETY: as above; `&RawBox` gives only `&T`.
unsafe impl<T: Sync> Sync for RawBox<T> {}

impl<T> RawBox<T> {
    /// Takes ownership of a pointer from `Box::into_raw`.
    ///
    /// # Safety
    /// `ptr` came from `Box::into_raw` and nothing else owns it.
    pub unsafe fn from_raw(ptr: *mut T) -> Self {
        // SAFETY: `Box::into_raw` never returns null.
        RawBox(unsafe { NonNull::new_unchecked(ptr) })
    }

    /// The value, shared.
    pub fn get(&self) -> &T {
        // SAFETY: the value lives until `self` is dropped or turned into a `Box`, and is
        // only read through shared references meanwhile.
        unsafe { self.0.as_ref() }
    }

    /// The value, unique again.
    ///
    /// # Safety
    /// No reference to the value may remain (its grace period has passed).
    pub unsafe fn into_box(self) -> Box<T> {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        // SAFETY: owned (from `Box::into_raw`, see `from_raw`) and unshared (the caller).
        unsafe { Box::from_raw(p) }
    }
}

impl<T> Drop for RawBox<T> {
    fn drop(&mut self) {
        // SAFETY: owned, from `Box::into_raw`; whoever drops it has waited for the grace
        // period (or holds the last reference to the cell).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// What the writer and the readers share.
struct Shared<T> {
    domain: Arc<Domain>,
    /// The current value (owned: from `Box::into_raw`).
    current: AtomicPtr<T>,
    /// Replaced values whose grace period had not passed when the writer went away;
    /// freed with the last reader.
    orphans: Mutex<Vec<RawBox<T>>>,
}

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // SAFETY: `current` came from `Box::into_raw` and is owned here; no reader is
        // left (this is the last reference).
        drop(unsafe { Box::from_raw(*self.current.get_mut()) });
    }
}

/// The writer's side of a cell (one per cell).
pub(super) struct CellWriter<T> {
    shared: Arc<Shared<T>>,
    /// Replaced values waiting for their grace period.
    retired: Reclaimer<RawBox<T>>,
}

/// A value just replaced, which readers may still be using: neither readable nor
/// writable until [`CellWriter::take_back`] says no reader holds it.
pub(super) struct Unlinked<T> {
    value: RawBox<T>,
    /// The epoch in which it was replaced.
    tag: u64,
}

impl<T> CellWriter<T> {
    /// A cell holding `value`.
    pub fn new(value: Box<T>) -> Self {
        CellWriter {
            shared: Arc::new(Shared {
                domain: Domain::new(),
                current: AtomicPtr::new(Box::into_raw(value)),
                orphans: Mutex::new(Vec::new()),
            }),
            retired: Reclaimer::default(),
        }
    }

    /// The current value, as the writer sees it.
    pub fn current(&self) -> &T {
        // SAFETY: only this writer replaces the value, and it cannot while `&self` is
        // borrowed; the value is freed only after it is replaced.
        unsafe { &*self.shared.current.load(Ordering::Relaxed) }
    }

    /// A new reader.
    pub fn reader(&self) -> CellReader<T> {
        CellReader::new(&self.shared)
    }

    /// Something that makes readers, for other threads (`Send + Sync` when `T` is).
    pub fn source(&self) -> CellSource<T> {
        CellSource {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Publishes `value` with one pointer store (`Release`) and returns the one it
    /// replaced, still possibly in readers' hands.
    pub fn replace(&mut self, value: Box<T>) -> Unlinked<T> {
        let old = self
            .shared
            .current
            .swap(Box::into_raw(value), Ordering::AcqRel);
        // Ends the epoch of the unlink: a reader that pins in a later one loads the new
        // pointer.
        let tag = self.shared.domain.advance();
        Unlinked {
            // SAFETY: the pointer came from `Box::into_raw` (in `new` or an earlier
            // `replace`), and the cell gave up its ownership.
            value: unsafe { RawBox::from_raw(old) },
            tag,
        }
    }

    /// Waits, at most `max_wait` (spinning, then yielding), until no reader can hold
    /// `unlinked`, and gives it back to be reused; gives it back as it was if readers
    /// still held it when time ran out.
    pub fn take_back(
        &self,
        unlinked: Unlinked<T>,
        max_wait: Duration,
    ) -> Result<Box<T>, Unlinked<T>> {
        let t0 = Instant::now();
        let mut spins = 0u32;
        loop {
            if self.shared.domain.safe_before() > unlinked.tag {
                // SAFETY: every reader pinned when it was unlinked has unpinned, and
                // readers pinned since load the new pointer.
                return Ok(unsafe { unlinked.value.into_box() });
            }
            if t0.elapsed() >= max_wait {
                return Err(unlinked);
            }
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }

    /// Keeps `unlinked` until its grace period has passed ([`collect`](Self::collect)
    /// frees it then).
    pub fn retire(&mut self, unlinked: Unlinked<T>) {
        self.retired.retire(unlinked.tag, unlinked.value);
    }

    /// Frees the retired values no reader can hold any more.
    pub fn collect(&mut self) {
        let safe = self.shared.domain.safe_before();
        self.retired.ready(safe).for_each(drop);
    }

    /// The retired values still waiting.
    pub fn waiting(&self) -> impl Iterator<Item = &T> + '_ {
        self.retired.iter().map(RawBox::get)
    }
}

impl<T> Drop for CellWriter<T> {
    fn drop(&mut self) {
        // Readers may outlive the writer: what they may still hold is freed with the
        // last of them.
        let mut orphans = self
            .shared
            .orphans
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        orphans.extend(self.retired.ready(u64::MAX));
    }
}

/// Makes readers of a cell; holds no reader slot itself.
pub(super) struct CellSource<T> {
    shared: Arc<Shared<T>>,
}

impl<T> CellSource<T> {
    /// A new reader.
    pub fn reader(&self) -> CellReader<T> {
        CellReader::new(&self.shared)
    }
}

/// A lookup thread's handle on a cell: `Send`, not `Sync`; clone it for each thread.
pub(super) struct CellReader<T> {
    shared: Arc<Shared<T>>,
    slot: ReaderSlot,
}

impl<T> CellReader<T> {
    fn new(shared: &Arc<Shared<T>>) -> Self {
        CellReader {
            shared: Arc::clone(shared),
            slot: ReaderSlot::new(&shared.domain),
        }
    }

    /// Pins the current value until the guard is dropped (hold it for one batch).
    #[inline]
    pub fn pin(&mut self) -> Pinned<'_, T> {
        self.slot.pin();
        // SAFETY: the value is freed or reused only after every reader pinned in the
        // epoch of its replacement, or earlier, has unpinned; this one pinned before
        // loading the pointer and unpins when the guard (which borrows `self`) drops.
        let value = unsafe { &*self.shared.current.load(Ordering::Acquire) };
        Pinned {
            value,
            slot: &self.slot,
        }
    }
}

impl<T> Clone for CellReader<T> {
    fn clone(&self) -> Self {
        CellReader::new(&self.shared)
    }
}

/// The value a reader pinned; unpins when dropped.
#[doc(hidden)]
pub struct Pinned<'a, T> {
    value: &'a T,
    slot: &'a ReaderSlot,
}

impl<T> core::ops::Deref for Pinned<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.value
    }
}

impl<T> Drop for Pinned<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.slot.offline();
    }
}

impl<T: core::fmt::Debug> core::fmt::Debug for Pinned<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.value.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_value_is_not_given_back() {
        let mut w = CellWriter::new(Box::new(1u32));
        let mut r = w.reader();
        let pinned = r.pin();
        let old = w.replace(Box::new(2));
        let old = w
            .take_back(old, Duration::from_millis(1))
            .expect_err("a reader holds it");
        assert_eq!(*pinned, 1);
        drop(pinned);
        let old = w.take_back(old, Duration::ZERO).ok().expect("unpinned");
        assert_eq!(*old, 1);
        assert_eq!(*r.pin(), 2);
        assert_eq!(*w.current(), 2);
    }

    #[test]
    fn retired_values_are_freed_after_readers_move_on() {
        let mut w = CellWriter::new(Box::new(vec![1u8; 10]));
        let mut r = w.reader();
        let pinned = r.pin();
        let old = w.replace(Box::new(vec![2; 10]));
        w.retire(old);
        w.collect();
        assert_eq!(w.waiting().count(), 1, "kept while pinned");
        assert_eq!(pinned[0], 1);
        drop(pinned);
        w.collect();
        assert_eq!(w.waiting().count(), 0);
    }

    #[test]
    fn readers_outlive_the_writer() {
        let mut w = CellWriter::new(Box::new(String::from("a")));
        let mut r = w.reader();
        let pinned_value = {
            let p = r.pin();
            let old = w.replace(Box::new(String::from("b")));
            w.retire(old);
            p.clone()
        };
        drop(w);
        assert_eq!(pinned_value, "a");
        assert_eq!(&*r.pin(), "b");
    }

    #[test]
    fn readers_on_threads_see_whole_values() {
        let mut w = CellWriter::new(Box::new([0u64; 8]));
        let r = w.reader();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                let mut r = r.clone();
                let stop = &stop;
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let v = r.pin();
                        assert!(v.iter().all(|&x| x == v[0]), "a torn value");
                    }
                });
            }
            let rounds = if cfg!(miri) { 20 } else { 2_000 };
            for i in 1..=rounds {
                let old = w.replace(Box::new([i; 8]));
                match w.take_back(old, Duration::from_millis(1)) {
                    // Reused: written while no reader can see it.
                    Ok(mut v) => {
                        v.fill(u64::MAX);
                        drop(v);
                    }
                    Err(old) => w.retire(old),
                }
                w.collect();
            }
            stop.store(true, Ordering::Relaxed);
        });
    }
}

//! Memory for structures that one writer patches in place while readers look them up.
//!
//! * [`Arena`]: an array that grows without ever moving. Its address space is reserved
//!   once ([`crate::mem::Reservation`]) and committed as the writer needs more, so a reader
//!   holding an index (or a pointer) into it stays valid however much the writer adds.
//!   Readers read through `&Arena`; the writer writes through `&Arena` too, under the
//!   one-writer rule below, which is why every writing method is `unsafe`.
//! * [`FreeSpace`]: the free-space manager of one arena — bump allocation for bulk builds,
//!   best-fit allocation with coalescing for updates. Every incremental scheme uses it
//!   (Poptrie's node and leaf arrays, DXR's range table), with the retire-then-reuse
//!   discipline of [`crate::sync::epoch`]: a block a patch made unreachable is handed back
//!   to `FreeSpace` only once no reader can still be reading it.
//!
//! # The one-writer rule
//!
//! At any time one thread (the writer) may write an arena, and only slots that no reader
//! can reach: slots above every published index, or blocks that were retired and whose
//! grace period has passed. Words that readers may read while they change (the *switch
//! words*: a lookup-table entry, a child index) are written with one atomic store
//! ([`Arena::store_release`], [`Arena::atomic_u32`]) after the block they point to is
//! complete, and read with an atomic load. Nothing else readers can reach is ever written.
//! A reader therefore sees, for every switch word, the old or the new value, and behind
//! either a complete, unchanging block.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU32, Ordering};
use std::collections::{BTreeMap, BTreeSet};

use crate::mem::Reservation;

/// Element types an [`Arena`] holds: plain data for which all-zero bytes are a valid
/// value.
///
/// # Safety
/// The all-zero bit pattern must be a valid value, and the type must have no padding
/// that readers could observe as uninitialised and no drop glue.
pub(crate) unsafe trait Zeroable: Copy + Send + Sync + 'static {}

// SAFETY: integers: zero is valid, no padding, no drop glue.
unsafe impl Zeroable for u8 {}
// SAFETY: as above.
unsafe impl Zeroable for u16 {}
// SAFETY: as above.
unsafe impl Zeroable for u32 {}
// SAFETY: as above.
unsafe impl Zeroable for u64 {}

/// An array of up to `capacity` elements that never moves; see the module docs.
pub(crate) struct Arena<T: Zeroable> {
    mem: Reservation,
    capacity: usize,
    _elements: PhantomData<T>,
}

impl<T: Zeroable> Arena<T> {
    /// An arena that can grow to `capacity` elements (none committed yet). `None` if the
    /// address space cannot be reserved.
    pub(crate) fn new(capacity: usize) -> Option<Self> {
        let bytes = capacity.checked_mul(core::mem::size_of::<T>())?;
        let mem = Reservation::new(bytes)?;
        Some(Arena {
            capacity: mem.reserved() / core::mem::size_of::<T>(),
            mem,
            _elements: PhantomData,
        })
    }

    /// An arena of exactly `len` committed zero elements (a table of fixed size, such as
    /// a lookup table whose entries are switch words).
    pub(crate) fn zeroed(len: usize) -> Option<Self> {
        let a = Self::new(len.max(1))?;
        // SAFETY: no other thread can see the arena yet.
        unsafe { a.grow(len) }.then_some(a)
    }

    /// Elements the arena can grow to.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Elements committed (readable): indices below this are valid to read.
    #[inline(always)]
    pub(crate) fn committed(&self) -> usize {
        self.mem.committed() / core::mem::size_of::<T>()
    }

    /// Bytes committed.
    pub(crate) fn committed_bytes(&self) -> usize {
        self.mem.committed()
    }

    /// The first element.
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *const T {
        self.mem.as_ptr() as *const T
    }

    /// Element `i`.
    ///
    /// # Safety
    /// `i` must be below [`committed`](Self::committed) (a published index: the writer
    /// commits before it publishes).
    #[inline(always)]
    pub(crate) unsafe fn get(&self, i: usize) -> T {
        debug_assert!(i < self.committed(), "index {i} beyond the committed arena");
        // SAFETY: in bounds of committed memory (caller); elements are plain data, and
        // a slot readers can reach is never written except switch words, which are
        // read with `load_acquire`/`atomic_u32`.
        unsafe { self.as_ptr().add(i).read() }
    }

    /// Commits elements up to `len` (zeroed when new). False if `len` exceeds the
    /// capacity or the OS refuses.
    ///
    /// # Safety
    /// Only the writer may call it.
    pub(crate) unsafe fn grow(&self, len: usize) -> bool {
        match len.checked_mul(core::mem::size_of::<T>()) {
            // SAFETY: the caller is the one writer.
            Some(bytes) => unsafe { self.mem.commit(bytes) },
            None => false,
        }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// Only the writer may call it, `i` must be committed, and no reader may be able to
    /// reach slot `i` (it is not yet published, or was retired and its grace period has
    /// passed).
    #[inline(always)]
    pub(crate) unsafe fn write(&self, i: usize, v: T) {
        debug_assert!(i < self.committed());
        // SAFETY: in bounds (caller); no reader reads this slot concurrently (caller).
        unsafe { (self.mem.as_ptr() as *mut T).add(i).write(v) }
    }

    /// Copies `n` elements from `src` to `dst` (the ranges may not overlap).
    ///
    /// # Safety
    /// As [`write`](Self::write) for every slot of `dst..dst + n`; `src..src + n` must be
    /// committed.
    pub(crate) unsafe fn copy(&self, src: usize, dst: usize, n: usize) {
        debug_assert!(src + n <= self.committed() && dst + n <= self.committed());
        debug_assert!(src + n <= dst || dst + n <= src);
        let p = self.mem.as_ptr() as *mut T;
        // SAFETY: both ranges committed and disjoint (caller); readers may read `src`
        // concurrently, which is a read as well.
        unsafe { core::ptr::copy_nonoverlapping(p.add(src), p.add(dst), n) }
    }

    /// The committed elements `range` for exclusive use (a bulk build before anything is
    /// published).
    pub(crate) fn slice_mut(&mut self, range: core::ops::Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.committed());
        // SAFETY: in bounds; `&mut self` excludes every reader and the writer's other
        // accesses.
        unsafe {
            core::slice::from_raw_parts_mut(
                (self.mem.as_ptr() as *mut T).add(range.start),
                range.end - range.start,
            )
        }
    }

    /// The 32-bit word at byte `offset` of element `i`, for an atomic store by the writer
    /// or an atomic load by a reader (a switch word inside a larger element, such as a
    /// trie node's child index).
    ///
    /// # Safety
    /// `i` must be committed, and `offset` must be a 4-byte-aligned offset of a `u32`
    /// field of `T` (so the word lies inside element `i`).
    #[inline(always)]
    pub(crate) unsafe fn atomic_u32(&self, i: usize, offset: usize) -> &AtomicU32 {
        debug_assert!(i < self.committed());
        debug_assert!(offset.is_multiple_of(4) && offset + 4 <= core::mem::size_of::<T>());
        // SAFETY: the word lies inside committed element `i` and is 4-byte aligned
        // (caller); every concurrent access to a switch word is atomic (module docs).
        unsafe {
            AtomicU32::from_ptr(
                (self.mem.as_ptr() as *mut T)
                    .add(i)
                    .cast::<u8>()
                    .add(offset) as *mut u32,
            )
        }
    }
}

/// Element types that serve as switch words: loaded and stored atomically in place.
///
/// # Safety
/// `load_acquire` / `store_release` must be one atomic access of the whole value.
pub(crate) unsafe trait AtomicWord: Zeroable {
    /// An atomic load with `Acquire` ordering of `*p`.
    ///
    /// # Safety
    /// `p` must be valid, aligned and only ever accessed atomically while shared.
    unsafe fn load_acquire(p: *const Self) -> Self;
    /// An atomic store with `Release` ordering to `*p`.
    ///
    /// # Safety
    /// As [`load_acquire`](Self::load_acquire).
    unsafe fn store_release(p: *const Self, v: Self);
}

// SAFETY: one `AtomicU16` access.
unsafe impl AtomicWord for u16 {
    #[inline(always)]
    unsafe fn load_acquire(p: *const Self) -> Self {
        // SAFETY: the caller's contract; `AtomicU16` has `u16`'s size and alignment.
        unsafe { core::sync::atomic::AtomicU16::from_ptr(p as *mut u16) }.load(Ordering::Acquire)
    }
    #[inline(always)]
    unsafe fn store_release(p: *const Self, v: Self) {
        // SAFETY: as above.
        unsafe { core::sync::atomic::AtomicU16::from_ptr(p as *mut u16) }
            .store(v, Ordering::Release)
    }
}

// SAFETY: one `AtomicU32` access.
unsafe impl AtomicWord for u32 {
    #[inline(always)]
    unsafe fn load_acquire(p: *const Self) -> Self {
        // SAFETY: the caller's contract; `AtomicU32` has `u32`'s size and alignment.
        unsafe { AtomicU32::from_ptr(p as *mut u32) }.load(Ordering::Acquire)
    }
    #[inline(always)]
    unsafe fn store_release(p: *const Self, v: Self) {
        // SAFETY: as above.
        unsafe { AtomicU32::from_ptr(p as *mut u32) }.store(v, Ordering::Release)
    }
}

impl<T: AtomicWord> Arena<T> {
    /// Switch word `i`, read by a reader (pairs with [`store_release`](Self::store_release)).
    ///
    /// # Safety
    /// `i` must be committed.
    #[inline(always)]
    pub(crate) unsafe fn load_acquire(&self, i: usize) -> T {
        debug_assert!(i < self.committed());
        // SAFETY: `i` is committed (caller), so the element is valid and aligned.
        unsafe { T::load_acquire(self.as_ptr().add(i)) }
    }

    /// Publishes switch word `i`: one atomic store, ordered after every write of the
    /// block it points to.
    ///
    /// # Safety
    /// Only the writer may call it; `i` must be committed.
    #[inline(always)]
    pub(crate) unsafe fn store_release(&self, i: usize, v: T) {
        debug_assert!(i < self.committed());
        // SAFETY: as `load_acquire`; the one-writer rule is the caller's.
        unsafe { T::store_release(self.as_ptr().add(i), v) };
        published();
    }
}

impl<T: Zeroable> core::fmt::Debug for Arena<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Arena")
            .field("capacity", &self.capacity)
            .field("committed", &self.committed())
            .finish()
    }
}

/// The free space of one arena, in slots: bump allocation for bulk builds, best-fit
/// allocation and coalescing frees for updates. It only hands out indices; the caller
/// commits the arena up to [`top`](Self::top).
///
/// Blocks are kept by position (so neighbours coalesce, and a block that ends at the top
/// lowers it) and by size (best fit: the smallest free block that holds the request, the
/// lowest one among equals, so space is reused from the bottom and the top can shrink).
///
/// With [`quick_bins`](Self::quick_bins), small blocks skip the trees: a freed block of up
/// to `max` slots waits in a bin of its exact size and is handed out again, last in first
/// out, for a request of that size — no coalescing, O(1) both ways. For writers that
/// replace many small blocks by blocks of the same few sizes (OBMA's groups), where the
/// trees' four to six updates per change were the largest cost of an update.
#[derive(Clone, Debug, Default)]
pub(crate) struct FreeSpace {
    /// Slots at or above `top` have never been handed out (or were all given back).
    top: usize,
    /// Free blocks: position → length.
    by_pos: BTreeMap<usize, usize>,
    /// Free blocks: (length, position).
    by_len: BTreeSet<(usize, usize)>,
    /// Slots in free blocks.
    free: usize,
    /// Exact-size bins: `quick[n - 1]` holds free blocks of `n` slots (empty: off).
    quick: Vec<Vec<usize>>,
}

impl FreeSpace {
    /// Free space whose first `reserved` slots are in use.
    pub(crate) fn new(reserved: usize) -> Self {
        FreeSpace {
            top: reserved,
            ..Default::default()
        }
    }

    /// Keeps freed blocks of up to `max` slots in exact-size bins (see the type docs).
    pub(crate) fn quick_bins(mut self, max: usize) -> Self {
        self.quick = vec![Vec::new(); max];
        self
    }

    /// One past the highest slot in use: the length the arena must be committed to.
    #[inline]
    pub(crate) fn top(&self) -> usize {
        self.top
    }

    /// Free slots below [`top`](Self::top) (fragmentation).
    pub(crate) fn free_slots(&self) -> usize {
        self.free
    }

    /// Slots in use.
    pub(crate) fn used(&self) -> usize {
        self.top - self.free
    }

    /// `n` slots at the top, packed against the previous allocation (bulk builds).
    pub(crate) fn bump(&mut self, n: usize) -> usize {
        let o = self.top;
        self.top += n;
        o
    }

    /// `n` contiguous slots (`n >= 1`): the smallest free block that holds them, else
    /// the top.
    pub(crate) fn alloc(&mut self, n: usize) -> usize {
        debug_assert!(n >= 1);
        if let Some(pos) = self.quick.get_mut(n - 1).and_then(Vec::pop) {
            self.free -= n;
            return pos;
        }
        if let Some(&(len, pos)) = self.by_len.range((n, 0)..).next() {
            self.remove(pos, len);
            if len > n {
                self.insert(pos + n, len - n);
            }
            self.free -= n;
            return pos;
        }
        self.bump(n)
    }

    /// `n` contiguous slots from a free block that ends at or below `limit` (the smallest
    /// such block, the lowest among equals); `None` if there is none. Compaction moves
    /// blocks down with it.
    pub(crate) fn alloc_below(&mut self, n: usize, limit: usize) -> Option<usize> {
        let (len, pos) = self
            .by_len
            .range((n, 0)..)
            .find(|&&(_, pos)| pos + n <= limit)
            .copied()?;
        self.remove(pos, len);
        if len > n {
            self.insert(pos + n, len - n);
        }
        self.free -= n;
        Some(pos)
    }

    /// Gives back the `n` slots from `pos` (an earlier allocation, or part of one).
    pub(crate) fn free(&mut self, pos: usize, n: usize) {
        debug_assert!(n >= 1 && pos + n <= self.top);
        if let Some(bin) = self.quick.get_mut(n - 1) {
            bin.push(pos);
            self.free += n;
            return;
        }
        let (mut pos, mut len) = (pos, n);
        if let Some((&p, &l)) = self.by_pos.range(..pos).next_back() {
            debug_assert!(p + l <= pos, "double free of slots {pos}..{}", pos + n);
            if p + l == pos {
                self.remove(p, l);
                self.free -= l;
                pos = p;
                len += l;
            }
        }
        if let Some(&l) = self.by_pos.get(&(pos + len)) {
            self.remove(pos + len, l);
            self.free -= l;
            len += l;
        }
        if pos + len == self.top {
            self.top = pos;
        } else {
            self.insert(pos, len);
            self.free += len;
        }
    }

    /// The free blocks `(position, length)`: in ascending order, then those of the quick
    /// bins by size.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let binned = self.quick.iter().enumerate();
        self.by_pos
            .iter()
            .map(|(&p, &l)| (p, l))
            .chain(binned.flat_map(|(i, bin)| bin.iter().map(move |&p| (p, i + 1))))
    }

    fn insert(&mut self, pos: usize, len: usize) {
        self.by_pos.insert(pos, len);
        self.by_len.insert((len, pos));
    }

    fn remove(&mut self, pos: usize, len: usize) {
        self.by_pos.remove(&pos);
        self.by_len.remove(&(len, pos));
    }
}

/// Marks a store that publishes a writer's work (every [`Arena::store_release`], and the
/// few atomic stores a scheme makes itself): test builds run the check of
/// `sync::hooks` here; other builds nothing.
#[inline(always)]
pub(crate) fn published() {
    #[cfg(any(test, feature = "test-hooks"))]
    crate::sync::hooks::after_publish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Random allocations and frees never overlap; freeing everything gives the space
    /// back down to the reserved slot.
    #[test]
    fn free_space_never_overlaps_and_coalesces() {
        let fs = churn(FreeSpace::new(1));
        assert_eq!((fs.top(), fs.free_slots()), (1, 0));
        assert_eq!(fs.blocks().count(), 0);
    }

    #[test]
    fn quick_bins_never_overlap_and_account_every_slot() {
        let fs = churn(FreeSpace::new(1).quick_bins(16));
        // Binned blocks do not coalesce: everything is free, listed once.
        let listed: usize = fs.blocks().map(|(_, n)| n).sum();
        assert_eq!(listed, fs.free_slots());
        assert_eq!(fs.free_slots() + 1, fs.top());
        let mut slots: Vec<usize> = fs.blocks().flat_map(|(p, n)| p..p + n).collect();
        slots.sort_unstable();
        assert_eq!(slots, (1..fs.top()).collect::<Vec<_>>(), "each slot once");
    }

    /// Random allocations and frees (of 1..=64 slots); checks that no slot is handed out
    /// twice and the counts add up, frees everything, returns the space.
    fn churn(mut fs: FreeSpace) -> FreeSpace {
        let mut rng = SplitMix64::new(3);
        let mut live: Vec<(usize, usize)> = Vec::new();
        let mut owner: Vec<bool> = Vec::new();
        for step in 0..20_000 {
            if live.is_empty() || rng.below(3) != 0 {
                let n = 1 + rng.below(64) as usize;
                let o = if step < 200 { fs.bump(n) } else { fs.alloc(n) };
                if owner.len() < fs.top() {
                    owner.resize(fs.top(), false);
                }
                for (s, taken) in owner[o..o + n].iter_mut().enumerate() {
                    assert!(!*taken, "slot {} handed out twice", o + s);
                    *taken = true;
                }
                live.push((o, n));
            } else {
                let (o, n) = live.swap_remove(rng.below(live.len() as u64) as usize);
                owner[o..o + n].fill(false);
                fs.free(o, n);
            }
            let used: usize = live.iter().map(|&(_, n)| n).sum();
            assert_eq!(used + fs.free_slots() + 1, fs.top(), "step {step}");
            assert_eq!(used + 1, fs.used());
        }
        for (o, n) in live.drain(..) {
            fs.free(o, n);
        }
        fs
    }

    #[test]
    fn best_fit_reuses_the_smallest_lowest_block() {
        let mut fs = FreeSpace::new(0);
        let a = fs.alloc(8);
        let b = fs.alloc(4);
        let c = fs.alloc(8);
        let _d = fs.alloc(1);
        fs.free(a, 8);
        fs.free(c, 8);
        assert_eq!(fs.alloc(3), a, "the lowest of equal blocks");
        assert_eq!(
            fs.alloc(5),
            a + 3,
            "the remainder of the split block fits exactly"
        );
        fs.free(b, 4);
        assert_eq!(fs.blocks().collect::<Vec<_>>(), vec![(8, 12)], "coalesced");
        assert_eq!(fs.alloc_below(4, 11), None, "no block ends at or below 11");
        assert_eq!(fs.alloc_below(4, 12), Some(8));
    }

    #[test]
    fn arena_grows_without_moving() {
        let a = Arena::<u64>::new(1 << 20).unwrap();
        let p = a.as_ptr();
        // SAFETY: this thread is the only writer and there are no readers.
        unsafe {
            assert!(a.grow(3));
            a.write(2, 9);
            assert!(a.grow(100_000));
            assert_eq!(a.get(2), 9);
            assert_eq!(a.get(99_999), 0);
            a.copy(0, 10, 3);
            assert_eq!(a.get(12), 9);
            assert!(!a.grow(a.capacity() + 1));
        }
        assert_eq!(a.as_ptr(), p);
        let t = Arena::<u32>::zeroed(5).unwrap();
        // SAFETY: as above.
        unsafe {
            t.store_release(4, 7);
            assert_eq!(t.load_acquire(4), 7);
        }
    }
}

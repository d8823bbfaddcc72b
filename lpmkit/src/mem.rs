//! Lookup-table memory: zeroed, aligned, and backed by huge pages where the OS allows.
//!
//! Lookup structures of several MiB (DIR-24-8's 32–64 MiB first table, Spider's rows,
//! DXR's lookup table for large `k`) are read at random addresses. In 4 KiB pages almost
//! every such read also misses the TLB, so a scheme would be measured on page walks as much
//! as on its own design. DPDK allocates its tables from huge pages for this reason; lpmkit
//! does the same for every large table through [`TableBuf`]: allocations of 2 MiB or more
//! are anonymous mappings, 2 MiB-aligned, rounded up to whole huge pages and advised for
//! transparent huge pages (`madvise(MADV_HUGEPAGE)` on Linux) *before* they are first
//! touched, so the kernel can back them with 2 MiB pages (and zero-fills them, so nothing
//! is zeroed twice). It is advice: where the OS declines (or on another OS),
//! nothing else changes.
//!
//! `Reservation` is the other kind of table memory: address space reserved once and
//! committed as a structure grows, for the arenas of in-place updates.

use core::ops::{Deref, DerefMut};
use core::ptr::NonNull;
use std::alloc::Layout;

mod sealed {
    pub trait Sealed {}
    impl Sealed for u8 {}
    impl Sealed for u16 {}
    impl Sealed for u32 {}
    impl Sealed for u64 {}
}

/// Plain integers, for which all-zero bytes are a valid value.
pub trait Plain: Copy + Default + Send + Sync + 'static + sealed::Sealed {}
impl Plain for u8 {}
impl Plain for u16 {}
impl Plain for u32 {}
impl Plain for u64 {}

/// The size of a transparent huge page on x86-64 and most other 64-bit platforms.
pub const HUGE_PAGE: usize = 2 << 20;

/// A fixed-length, zero-initialised table of plain integers (like `Box<[T]>`), huge-page
/// backed when large.
pub struct TableBuf<T: Plain> {
    ptr: NonNull<T>,
    len: usize,
    layout: Layout,
}

// SAFETY: `TableBuf` owns its allocation like a `Box<[T]>`, and `T` is a plain integer.
unsafe impl<T: Plain> Send for TableBuf<T> {}
// SAFETY: shared access only reads (mutation needs `&mut self`).
unsafe impl<T: Plain> Sync for TableBuf<T> {}

impl<T: Plain> TableBuf<T> {
    /// `len` zeroed values.
    ///
    /// # Panics
    /// If the size overflows `isize`; aborts (like `Vec`) if the allocation fails.
    pub fn zeroed(len: usize) -> Self {
        let elem = core::mem::size_of::<T>();
        let mut bytes = len
            .checked_mul(elem)
            .expect("table size overflows")
            .max(elem);
        let huge = bytes >= HUGE_PAGE;
        if huge {
            bytes = bytes.div_ceil(HUGE_PAGE) * HUGE_PAGE;
        }
        let align = if huge { HUGE_PAGE } else { 64 };
        let layout = Layout::from_size_align(bytes, align).expect("table size overflows");
        let raw = if huge {
            alloc_huge(bytes)
        } else {
            // SAFETY: `bytes > 0`.
            unsafe { std::alloc::alloc_zeroed(layout) }
        };
        if raw.is_null() {
            std::alloc::handle_alloc_error(layout)
        }
        TableBuf {
            ptr: NonNull::new(raw as *mut T).expect("checked above"),
            len,
            layout,
        }
    }

    /// A table holding a copy of `values`.
    pub fn from_slice(values: &[T]) -> Self {
        let mut t = Self::zeroed(values.len());
        t.copy_from_slice(values);
        t
    }

    /// Bytes allocated (whole huge pages for large tables).
    pub fn allocated_bytes(&self) -> usize {
        self.layout.size()
    }
}

impl<T: Plain> Deref for TableBuf<T> {
    type Target = [T];
    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: the allocation holds at least `len` initialised (zeroed or written)
        // values of a type without invalid bit patterns.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> DerefMut for TableBuf<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and `&mut self` gives exclusive access.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Plain> Clone for TableBuf<T> {
    fn clone(&self) -> Self {
        Self::from_slice(self)
    }
}

impl<T: Plain> Drop for TableBuf<T> {
    fn drop(&mut self) {
        if self.layout.align() == HUGE_PAGE {
            free_huge(self.ptr.as_ptr() as *mut u8, self.layout);
        } else {
            // SAFETY: allocated in `zeroed` with this layout by the global allocator.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr() as *mut u8, self.layout) }
        }
    }
}

impl<T: Plain + core::fmt::Debug> core::fmt::Debug for TableBuf<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TableBuf")
            .field("len", &self.len)
            .field("allocated_bytes", &self.layout.size())
            .finish()
    }
}

/// `bytes` (a multiple of [`HUGE_PAGE`]) of zeroed memory aligned to a huge page, advised
/// for transparent huge pages; null on failure.
///
/// On Linux this is an anonymous mapping (zero-filled by the kernel, so nothing is written
/// twice) trimmed to a 2 MiB boundary, advised with `madvise(MADV_HUGEPAGE)` before any
/// page is touched.
#[cfg(all(target_os = "linux", not(miri)))]
fn alloc_huge(bytes: usize) -> *mut u8 {
    let span = bytes + HUGE_PAGE;
    // SAFETY: an anonymous private mapping of `span` bytes, owned by us from here on.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            span,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return core::ptr::null_mut();
    }
    let start = (base as usize).div_ceil(HUGE_PAGE) * HUGE_PAGE;
    let head = start - base as usize;
    let tail = span - head - bytes;
    // SAFETY: the head and tail lie inside the mapping just made and outside
    // `[start, start + bytes)`, which stays mapped; madvise only sets the paging policy.
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap((start + bytes) as *mut libc::c_void, tail);
        }
        libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
    }
    start as *mut u8
}

#[cfg(all(target_os = "linux", not(miri)))]
fn free_huge(ptr: *mut u8, layout: Layout) {
    // SAFETY: `ptr` is the start of a mapping of `layout.size()` bytes made by `alloc_huge`.
    unsafe {
        libc::munmap(ptr as *mut libc::c_void, layout.size());
    }
}

/// Elsewhere: a zeroed, aligned allocation from the global allocator.
#[cfg(not(all(target_os = "linux", not(miri))))]
fn alloc_huge(bytes: usize) -> *mut u8 {
    let layout = Layout::from_size_align(bytes, HUGE_PAGE).expect("checked by the caller");
    // SAFETY: `bytes > 0`.
    unsafe { std::alloc::alloc_zeroed(layout) }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn free_huge(ptr: *mut u8, layout: Layout) {
    // SAFETY: allocated by `alloc_huge` with this layout.
    unsafe { std::alloc::dealloc(ptr, layout) }
}

/// A range of address space reserved once and made usable (committed) from its start as
/// it is needed: memory that grows without ever moving, so readers on other threads may
/// keep using pointers into it while one writer commits more.
///
/// On Linux the range is an anonymous `PROT_NONE` mapping (no memory is charged for it);
/// [`commit`](Self::commit) makes a prefix readable and writable with `mprotect`, and the
/// kernel backs its pages, zero-filled, when they are first touched. Ranges of 2 MiB or
/// more are 2 MiB-aligned, advised for transparent huge pages, as [`TableBuf`]s are, and
/// made accessible in whole huge pages (a committed prefix that ended inside one would
/// leave that page to 4 KiB pages: a TLB miss on most random reads of a writer's arena).
/// Elsewhere (and under Miri) the whole range is one zeroed allocation up front, so
/// reservations there should be modest.
pub(crate) struct Reservation {
    ptr: NonNull<u8>,
    /// Bytes reserved.
    bytes: usize,
    /// Bytes committed (a prefix of the range); changed only by the owner's writer.
    committed: core::sync::atomic::AtomicUsize,
    /// Bytes made readable and writable (at least `committed`: whole huge pages for a
    /// huge-page reservation); changed only by the owner's writer.
    mapped: core::sync::atomic::AtomicUsize,
    /// How the range was obtained, for `Drop`.
    layout: Layout,
}

// SAFETY: the reservation owns its range like a `Box<[u8]>`; what is stored in it and who
// may write where is the business of the type built on it (`schemes::common::Arena`).
unsafe impl Send for Reservation {}
// SAFETY: as above; `commit` only grows the usable prefix and is called by one writer.
unsafe impl Sync for Reservation {}

/// The page size commits are rounded to.
const PAGE: usize = 4096;

impl Reservation {
    /// Reserves `bytes` (rounded up to whole pages; at least one page). `None` if the
    /// address space (or, off Linux, the memory) is not available.
    pub(crate) fn new(bytes: usize) -> Option<Self> {
        let mut bytes = bytes.max(PAGE).checked_next_multiple_of(PAGE)?;
        let huge = bytes >= HUGE_PAGE;
        if huge {
            bytes = bytes.checked_next_multiple_of(HUGE_PAGE)?;
        }
        let align = if huge { HUGE_PAGE } else { PAGE };
        let layout = Layout::from_size_align(bytes, align).ok()?;
        let raw = reserve_range(layout)?;
        Some(Reservation {
            ptr: raw,
            bytes,
            committed: core::sync::atomic::AtomicUsize::new(0),
            mapped: core::sync::atomic::AtomicUsize::new(0),
            layout,
        })
    }

    /// The start of the range.
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes reserved.
    pub(crate) fn reserved(&self) -> usize {
        self.bytes
    }

    /// Bytes committed (readable and writable from the start of the range).
    #[inline(always)]
    pub(crate) fn committed(&self) -> usize {
        self.committed.load(core::sync::atomic::Ordering::Relaxed)
    }

    /// Makes at least the first `bytes` usable; returns false if they exceed the
    /// reservation or the OS refuses. Committed memory stays committed until the
    /// reservation is dropped, and newly committed memory reads as zero.
    ///
    /// Commits grow geometrically (by at least half of what is committed), so a range
    /// grown one element at a time costs few system calls.
    ///
    /// # Safety
    /// Only one thread may commit at a time (the writer of the structure built on it).
    pub(crate) unsafe fn commit(&self, bytes: usize) -> bool {
        let have = self.committed();
        if bytes <= have {
            return true;
        }
        if bytes > self.bytes {
            return false;
        }
        let want = bytes
            .max(have + have / 2)
            .next_multiple_of(PAGE)
            .min(self.bytes);
        // A huge-page reservation maps whole huge pages, so each mapped extent is one the
        // kernel can back with a 2 MiB page when it is first touched (a mapping that ended
        // inside one would leave its 4 KiB pages to the TLB). What is committed (and
        // reported) stays what was asked for, rounded as before.
        let mapped = self.mapped.load(core::sync::atomic::Ordering::Relaxed);
        if want > mapped {
            let to = if self.layout.align() == HUGE_PAGE {
                want.next_multiple_of(HUGE_PAGE).min(self.bytes)
            } else {
                want
            };
            if !commit_range(self.ptr.as_ptr(), mapped, to) {
                return false;
            }
            self.mapped.store(to, core::sync::atomic::Ordering::Relaxed);
        }
        self.committed
            .store(want, core::sync::atomic::Ordering::Release);
        true
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        release_range(self.ptr.as_ptr(), self.layout);
    }
}

impl core::fmt::Debug for Reservation {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Reservation")
            .field("reserved", &self.bytes)
            .field("committed", &self.committed())
            .finish()
    }
}

/// Reserves an inaccessible range of `layout.size()` bytes aligned to `layout.align()`.
#[cfg(all(target_os = "linux", not(miri)))]
fn reserve_range(layout: Layout) -> Option<NonNull<u8>> {
    let (bytes, align) = (layout.size(), layout.align());
    let span = bytes.checked_add(align)?;
    // SAFETY: a fresh anonymous private mapping with no access, owned by us from here on;
    // MAP_NORESERVE: no swap or commit charge is taken for it.
    let base = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            span,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return None;
    }
    let start = (base as usize).next_multiple_of(align);
    let head = start - base as usize;
    let tail = span - head - bytes;
    // SAFETY: the head and tail lie inside the mapping just made and outside
    // `[start, start + bytes)`, which stays mapped; madvise only sets the paging policy.
    unsafe {
        if head > 0 {
            libc::munmap(base, head);
        }
        if tail > 0 {
            libc::munmap((start + bytes) as *mut libc::c_void, tail);
        }
        if align == HUGE_PAGE {
            libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
    }
    NonNull::new(start as *mut u8)
}

/// Makes `[from, to)` of the range at `base` readable and writable.
#[cfg(all(target_os = "linux", not(miri)))]
fn commit_range(base: *mut u8, from: usize, to: usize) -> bool {
    let from = from / PAGE * PAGE;
    // SAFETY: `[base + from, base + to)` lies inside the reservation (the caller checks
    // `to <= reserved`) and is page-aligned; mprotect changes only its access rights.
    unsafe {
        libc::mprotect(
            base.add(from) as *mut libc::c_void,
            to - from,
            libc::PROT_READ | libc::PROT_WRITE,
        ) == 0
    }
}

#[cfg(all(target_os = "linux", not(miri)))]
fn release_range(base: *mut u8, layout: Layout) {
    // SAFETY: `base` is the start of a mapping of `layout.size()` bytes made by
    // `reserve_range`.
    unsafe {
        libc::munmap(base as *mut libc::c_void, layout.size());
    }
}

/// Elsewhere: the whole range, zeroed, from the global allocator.
#[cfg(not(all(target_os = "linux", not(miri))))]
fn reserve_range(layout: Layout) -> Option<NonNull<u8>> {
    // SAFETY: `layout.size() > 0`.
    NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn commit_range(_base: *mut u8, _from: usize, _to: usize) -> bool {
    true
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn release_range(base: *mut u8, layout: Layout) {
    // SAFETY: allocated by `reserve_range` with this layout.
    unsafe { std::alloc::dealloc(base, layout) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large() {
        let t = TableBuf::<u32>::zeroed(3);
        assert_eq!(&*t, &[0, 0, 0]);
        assert_eq!(t.as_ptr() as usize % 64, 0);
        let mut big = TableBuf::<u16>::zeroed((3 << 20) + 1);
        assert_eq!(big.as_ptr() as usize % HUGE_PAGE, 0);
        assert_eq!(big.allocated_bytes() % HUGE_PAGE, 0);
        big[3 << 20] = 9;
        let c = big.clone();
        assert_eq!(c[3 << 20], 9);
        assert_eq!(TableBuf::<u8>::zeroed(0).len(), 0);
        assert_eq!(&*TableBuf::from_slice(&[1u64, 2]), &[1, 2]);
    }

    #[test]
    fn reservation_grows_in_place() {
        let r = Reservation::new(64 << 20).unwrap();
        let p = r.as_ptr();
        assert_eq!(r.committed(), 0);
        // SAFETY: this thread is the only one committing.
        unsafe {
            assert!(r.commit(10));
            assert!(r.committed() >= 10);
            assert_eq!(
                r.committed(),
                PAGE,
                "what is committed is what was asked for"
            );
            #[cfg(all(target_os = "linux", not(miri)))]
            assert_eq!(
                r.mapped.load(core::sync::atomic::Ordering::Relaxed),
                HUGE_PAGE,
                "a huge-page reservation maps whole huge pages"
            );
            *p.add(9) = 7;
            // Inside the mapped huge page: no new mapping, the committed prefix grows.
            assert!(r.commit(PAGE + 1));
            assert_eq!(r.committed(), 2 * PAGE);
            assert!(r.commit(5 << 20));
            assert_eq!(*p.add(9), 7, "committing more keeps what was written");
            assert_eq!(*p.add((5 << 20) - 1), 0, "new memory reads as zero");
            assert!(!r.commit(r.reserved() + 1));
        }
        assert_eq!(r.as_ptr(), p, "never moves");
    }
}

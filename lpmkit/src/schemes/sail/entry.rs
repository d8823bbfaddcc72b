//! Entries of SAIL's next-hop and chunk-ID arrays: 16 or 32 bits (the shared width rule),
//! each a switch word an update may store to while readers load it.
//!
//! An entry below `lim` (the next power of two above the largest next hop, at least
//! 256) is a next hop (0 = no route); `lim + c` names chunk `c` of the next level. The
//! SAIL paper keeps next hops and chunk IDs in separate arrays (`N` and `C`) or marks a
//! chunk ID by a flag bit; one split of the entry's range keeps both in one load and lets
//! a 16-bit entry name up to `65536 - lim` chunks.

use core::sync::atomic::{AtomicU16, Ordering};

use crate::schemes::common::{Arena, Width, Word};

/// An entry type with atomic access.
pub(crate) trait Entry: Word {
    /// Loads entry `i` (acquire: what it points to is complete).
    ///
    /// # Safety
    /// `i` must be committed.
    unsafe fn load(a: &Arena<Self>, i: usize) -> u32;
    /// Stores entry `i` (release: after the block it points to is complete).
    ///
    /// # Safety
    /// Only the writer; `i` committed.
    unsafe fn store(a: &Arena<Self>, i: usize, v: u32);
}

impl Entry for u16 {
    #[inline(always)]
    unsafe fn load(a: &Arena<u16>, i: usize) -> u32 {
        debug_assert!(i < a.committed());
        // SAFETY: `i` is committed (caller); a `u16` is 2-aligned in the arena; every
        // concurrent access to an entry is atomic.
        unsafe { AtomicU16::from_ptr(a.as_ptr().add(i) as *mut u16) }.load(Ordering::Acquire) as u32
    }
    #[inline(always)]
    unsafe fn store(a: &Arena<u16>, i: usize, v: u32) {
        debug_assert!(i < a.committed() && v <= 0xffff);
        // SAFETY: as above; the caller is the one writer.
        unsafe { AtomicU16::from_ptr(a.as_ptr().add(i) as *mut u16) }
            .store(v as u16, Ordering::Release);
        crate::schemes::common::published();
    }
}

impl Entry for u32 {
    #[inline(always)]
    unsafe fn load(a: &Arena<u32>, i: usize) -> u32 {
        // SAFETY: forwarded.
        unsafe { a.load_acquire(i) }
    }
    #[inline(always)]
    unsafe fn store(a: &Arena<u32>, i: usize, v: u32) {
        // SAFETY: forwarded.
        unsafe { a.store_release(i, v) }
    }
}

/// The split for a table whose largest next hop is `max`.
pub(crate) fn lim_for(max: u32) -> u32 {
    (max as u64 + 1).next_power_of_two().clamp(256, 1 << 31) as u32
}

/// Chunk ids one level holds with entries of `width` and split `lim`.
pub(crate) fn id_limit(width: Width, lim: u32) -> u32 {
    match width {
        Width::U16 => (1u32 << 16).saturating_sub(lim),
        Width::U32 => (u32::MAX - lim).min(1 << 20),
    }
}

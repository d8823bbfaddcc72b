//! The *level hint* (beyond the paper; IPv6): which long levels can hold a key under a
//! given /32, so that a lookup skips the filters — and above all the false-positive table
//! probes — of the levels that cannot.
//!
//! A level whose band lies entirely above /32 (`lo > 32`, and the gate) holds only the
//! expansions of routes longer than /32, each inside the /32 of its route. The hint maps
//! each /32 that has such routes to the bit set of their levels (bit `i` = the table's
//! level `i` in lookup order); a /32 it does not list has none. A lookup probes, of the
//! long levels, only those its /32's bits name, and every level whose band reaches /32 or
//! below (`always`) as before: the answer is unchanged, since a skipped level holds no key
//! under the address's /32.
//!
//! **Layout.** An open-addressed table of `2^b` 64-bit slots, `/32 << 32 | bits`
//! (0: empty; a listed /32 always has a bit), linear probing from a multiplicative hash,
//! at most half full at build; about 30,000 slots for a full IPv6 table, so it stays in
//! cache.
//!
//! **Updates.** An announced route longer than /32 sets its level's bit before any of its
//! keys is published (a reader that sees the key also sees the bit; one that misses the
//! bit misses the key too, and answers as before the change). Withdrawals leave bits set:
//! a stale bit costs a filter probe, never an answer. Slots are never emptied, so a
//! reader's probe sequence only grows. A /32 that would push the table past three
//! quarters full makes the update rebuild instead.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Bits of the address the hint is keyed by.
pub(crate) const HINT_BITS: u8 = 32;

/// See the module docs.
pub(crate) struct Hint {
    slots: Box<[AtomicU64]>,
    /// `64 − log2(slots)`.
    shift: u32,
    /// Levels probed whatever the hint says.
    pub(crate) always: u32,
    /// Slots in use (written by the writer only).
    used: AtomicUsize,
}

impl core::fmt::Debug for Hint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hint")
            .field("slots", &self.slots.len())
            .field("used", &self.used.load(Ordering::Relaxed))
            .field("always", &format_args!("{:#x}", self.always))
            .finish()
    }
}

impl Hint {
    /// A hint for `entries` (`(/32, level bits)`, keys may repeat), with the `always`
    /// levels.
    pub(crate) fn new(entries: &[(u32, u32)], always: u32) -> Self {
        let want = (entries.len() * 2).max(64).next_power_of_two();
        let slots: Box<[AtomicU64]> = (0..want).map(|_| AtomicU64::new(0)).collect();
        let h = Hint {
            slots,
            shift: 64 - want.trailing_zeros(),
            always,
            used: AtomicUsize::new(0),
        };
        for &(top, bits) in entries {
            let ok = h.add(top, bits);
            debug_assert!(ok, "a hint at most half full");
        }
        h
    }

    #[inline(always)]
    fn home(&self, top: u32) -> usize {
        ((top as u64 | 1 << 32).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The slot `top`'s probe starts at (to prefetch it).
    #[inline(always)]
    pub(crate) fn prefetch(&self, top: u32) {
        crate::simd::prefetch(self.slots.as_ptr().wrapping_add(self.home(top)));
    }

    /// The levels to probe for an address whose first 32 bits are `top`.
    #[inline(always)]
    pub(crate) fn levels(&self, top: u32) -> u32 {
        let mask = self.slots.len() - 1;
        let mut i = self.home(top);
        loop {
            let s = self.slots[i].load(Ordering::Acquire);
            if s == 0 {
                return self.always;
            }
            if (s >> 32) as u32 == top {
                return self.always | s as u32;
            }
            i = (i + 1) & mask;
        }
    }

    /// Adds `bits` to `top`'s levels; false if that needs a slot past three quarters of
    /// the table (the caller rebuilds). The one writer only.
    pub(crate) fn add(&self, top: u32, bits: u32) -> bool {
        debug_assert!(bits != 0);
        let mask = self.slots.len() - 1;
        let mut i = self.home(top);
        loop {
            let s = self.slots[i].load(Ordering::Relaxed);
            if s == 0 {
                let used = self.used.load(Ordering::Relaxed);
                if (used + 1) * 4 > self.slots.len() * 3 {
                    return false;
                }
                self.used.store(used + 1, Ordering::Relaxed);
                self.slots[i].store((top as u64) << 32 | bits as u64, Ordering::Release);
                return true;
            }
            if (s >> 32) as u32 == top {
                if s as u32 & bits != bits {
                    self.slots[i].store(s | bits as u64, Ordering::Release);
                }
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// True if `top`'s levels include all of `bits` (the writer's check before adding).
    pub(crate) fn has(&self, top: u32, bits: u32) -> bool {
        self.levels(top) & bits == bits
    }

    /// Bytes lookups may touch.
    pub(crate) fn bytes(&self) -> usize {
        self.slots.len() * 8
    }

    /// Slots and slots in use (for figures).
    pub(crate) fn load(&self) -> (usize, usize) {
        (self.slots.len(), self.used.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_and_probe() {
        let h = Hint::new(&[(7, 0b100), (7, 0b10), (0, 0b1000)], 0b1_0000);
        assert_eq!(h.levels(7), 0b1_0110);
        assert_eq!(h.levels(0), 0b1_1000);
        assert_eq!(h.levels(8), 0b1_0000);
        let mut added = 2;
        for top in 100..1000u32 {
            if !h.add(top, 1) {
                break;
            }
            added += 1;
        }
        assert_eq!(added, 48, "three quarters of 64 slots");
        assert!(h.add(7, 1), "a listed /32 takes more bits when full");
        assert_eq!(h.levels(7), 0b1_0111);
        assert!(h.has(150, 1) && !h.has(150, 2));
    }
}

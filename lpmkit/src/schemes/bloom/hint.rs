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
//! **Layout.** An open-addressed table of `2^b` one-cache-line buckets of seven 64-bit
//! slots, `/32 << 32 | bits` (0: empty; a listed /32 always has a bit), and an overflow
//! flag; a /32's home bucket comes from a multiplicative hash, a full bucket sends it on
//! to the next. At most half full at build (about 3,000 buckets, 200 KiB, for bart's 10,906
//! /32s with longer routes), so one lookup reads one line and compares its seven slots
//! without a branch.
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

/// Slots per bucket (one cache line); the bucket's last word is its overflow flag.
const SLOTS: usize = 7;
const BUCKET: usize = SLOTS + 1;

/// See the module docs.
pub(crate) struct Hint {
    /// Buckets of [`BUCKET`] words: [`SLOTS`] slots, then the overflow flag (non-zero:
    /// a /32 whose home is this bucket or an earlier one lies further on).
    words: Box<[Line]>,
    /// `64 − log2(buckets)`.
    shift: u32,
    /// Levels probed whatever the hint says.
    pub(crate) always: u32,
    /// Slots in use (written by the writer only).
    used: AtomicUsize,
}

/// One bucket, alone on its cache line.
#[repr(align(64))]
struct Line([AtomicU64; BUCKET]);

impl core::fmt::Debug for Hint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Hint")
            .field("buckets", &self.words.len())
            .field("used", &self.used.load(Ordering::Relaxed))
            .field("always", &format_args!("{:#x}", self.always))
            .finish()
    }
}

impl Hint {
    /// A hint for `entries` (`(/32, level bits)`, keys may repeat), with the `always`
    /// levels.
    pub(crate) fn new(entries: &[(u32, u32)], always: u32) -> Self {
        let want = (entries.len() * 2)
            .div_ceil(SLOTS)
            .max(4)
            .next_power_of_two();
        let words: Box<[Line]> = (0..want)
            .map(|_| Line(core::array::from_fn(|_| AtomicU64::new(0))))
            .collect();
        let h = Hint {
            words,
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

    /// Prefetches `top`'s home bucket.
    #[inline(always)]
    pub(crate) fn prefetch(&self, top: u32) {
        crate::simd::prefetch(self.words.as_ptr().wrapping_add(self.home(top)));
    }

    /// The levels to probe for an address whose first 32 bits are `top`: a whole bucket
    /// compared without branches (an empty slot, 0, holds no bits).
    #[inline(always)]
    pub(crate) fn levels(&self, top: u32) -> u32 {
        let mask = self.words.len() - 1;
        let mut b = self.home(top);
        loop {
            let line = &self.words[b].0;
            let mut bits = 0u32;
            for s in &line[..SLOTS] {
                let s = s.load(Ordering::Acquire);
                bits |= if (s >> 32) as u32 == top { s as u32 } else { 0 };
            }
            if bits != 0 || line[SLOTS].load(Ordering::Acquire) == 0 {
                return self.always | bits;
            }
            b = (b + 1) & mask;
        }
    }

    /// True if `top` has a slot.
    pub(crate) fn lists(&self, top: u32) -> bool {
        let mask = self.words.len() - 1;
        let mut b = self.home(top);
        loop {
            let line = &self.words[b].0;
            if line[..SLOTS].iter().any(|s| {
                let v = s.load(Ordering::Relaxed);
                v != 0 && (v >> 32) as u32 == top
            }) {
                return true;
            }
            if line[SLOTS].load(Ordering::Relaxed) == 0 {
                return false;
            }
            b = (b + 1) & mask;
        }
    }

    /// True if `more` /32s can still get a slot (three quarters of the table at most).
    pub(crate) fn has_room(&self, more: usize) -> bool {
        (self.used.load(Ordering::Relaxed) + more) * 4 <= self.words.len() * SLOTS * 3
    }

    /// Adds `bits` to `top`'s levels; false if that needs a slot past three quarters of
    /// the table (the caller rebuilds). The one writer only.
    pub(crate) fn add(&self, top: u32, bits: u32) -> bool {
        debug_assert!(bits != 0);
        let mask = self.words.len() - 1;
        let home = self.home(top);
        // Already listed: more bits.
        let mut b = home;
        loop {
            let line = &self.words[b].0;
            for s in &line[..SLOTS] {
                let v = s.load(Ordering::Relaxed);
                if v != 0 && (v >> 32) as u32 == top {
                    if v as u32 & bits != bits {
                        s.store(v | bits as u64, Ordering::Release);
                    }
                    return true;
                }
            }
            if line[SLOTS].load(Ordering::Relaxed) == 0 {
                break;
            }
            b = (b + 1) & mask;
        }
        let used = self.used.load(Ordering::Relaxed);
        if !self.has_room(1) {
            return false;
        }
        // A free slot: the first from home on; the full buckets passed get their flag
        // (before the entry is stored, so a reader that can see it can reach it).
        let mut b = home;
        loop {
            let line = &self.words[b].0;
            if let Some(s) = line[..SLOTS]
                .iter()
                .find(|s| s.load(Ordering::Relaxed) == 0)
            {
                self.used.store(used + 1, Ordering::Relaxed);
                s.store((top as u64) << 32 | bits as u64, Ordering::Release);
                return true;
            }
            line[SLOTS].store(1, Ordering::Release);
            b = (b + 1) & mask;
        }
    }

    /// True if `top`'s levels include all of `bits` (the build's check).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn has(&self, top: u32, bits: u32) -> bool {
        self.levels(top) & bits == bits
    }

    /// Bytes lookups may touch.
    pub(crate) fn bytes(&self) -> usize {
        self.words.len() * BUCKET * 8
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
        assert_eq!(added, 21, "three quarters of 4 buckets of 7 slots");
        assert!(h.add(7, 1), "a listed /32 takes more bits when full");
        assert_eq!(h.levels(7), 0b1_0111);
        assert!(h.has(100, 1) && !h.has(100, 2));
        assert!(h.lists(7) && h.lists(100) && !h.lists(5000));
        assert!(!h.has_room(1));
    }
}

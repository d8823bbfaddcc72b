//! The buddy allocator that keeps a node's children (and its leaves) contiguous.
//!
//! Poptrie finds a child by `base + popcnt - 1`, so the children of one node, and its
//! leaves, must sit side by side in the node and leaf arrays. The authors' C code manages
//! both arrays with a binary buddy allocator (`buddy.c`); this one is a buddy allocator
//! too, with two twists:
//!
//! * **Exact sizes.** An allocation of `n` slots takes an aligned block of `2^⌈log2 n⌉`
//!   slots and immediately gives back the tail `[n, 2^k)` (split into aligned
//!   power-of-two pieces), so arrays are never padded. A free of `[o, o + n)` splits the
//!   run the same way and coalesces each piece with its buddy, order by order.
//! * **Bump mode for bulk builds.** A full build packs arrays back to back from the top
//!   ([`Buddy::bump`]); only the slots freed later by incremental updates enter the free
//!   lists. The allocator only hands out indices; the caller grows its arrays to
//!   [`Buddy::top`].

use std::collections::BTreeSet;

/// Largest block order: 2^6 = 64 slots, a node's maximum number of children or leaves.
pub(crate) const MAX_ORDER: u32 = 6;

/// Free-block bookkeeping for one array (nodes or leaves).
#[derive(Clone, Debug)]
pub(crate) struct Buddy {
    /// Slots at or above `top` have never been handed out.
    top: u32,
    /// Free blocks of `2^k` slots, by aligned start offset, for `k = 0..=MAX_ORDER`.
    free: [BTreeSet<u32>; MAX_ORDER as usize + 1],
    /// Slots currently in the free lists.
    free_slots: u64,
}

impl Buddy {
    /// An allocator whose first `reserved` slots are in use.
    pub(crate) fn new(reserved: u32) -> Self {
        Buddy {
            top: reserved,
            free: Default::default(),
            free_slots: 0,
        }
    }

    /// One past the highest slot ever handed out: the array length the caller needs.
    pub(crate) fn top(&self) -> u32 {
        self.top
    }

    /// Slots below [`top`](Self::top) that are free.
    pub(crate) fn free_slots(&self) -> u64 {
        self.free_slots
    }

    /// `n` slots at the top, packed against the previous allocation (bulk builds).
    pub(crate) fn bump(&mut self, n: u32) -> u32 {
        let o = self.top;
        self.top += n;
        o
    }

    /// `n` contiguous slots (`1 <= n <= 64`), reusing freed space when possible.
    pub(crate) fn alloc(&mut self, n: u32) -> u32 {
        debug_assert!((1..=1 << MAX_ORDER).contains(&n));
        let k = ceil_log2(n);
        let found = (k..=MAX_ORDER).find_map(|j| {
            let o = self.free[j as usize].pop_first()?;
            self.free_slots -= 1 << j;
            Some((o, j))
        });
        let (o, j) = match found {
            Some(b) => b,
            None => {
                let size = 1u32 << k;
                let o = self.top.div_ceil(size) * size;
                let gap = (self.top, o - self.top);
                self.top = o + size;
                self.release(gap.0, gap.1);
                (o, k)
            }
        };
        // Split the block down to order k: the upper halves go back to the free lists.
        for jj in (k..j).rev() {
            self.insert(o + (1 << jj), jj);
        }
        // Give back the tail past `n`.
        self.release(o + n, (1 << k) - n);
        o
    }

    /// Frees `n` slots starting at `o` (an earlier allocation, or part of one).
    pub(crate) fn free(&mut self, o: u32, n: u32) {
        self.release(o, n);
    }

    fn release(&mut self, mut o: u32, mut n: u32) {
        while n > 0 {
            let k = o
                .trailing_zeros()
                .min(31 - n.leading_zeros())
                .min(MAX_ORDER);
            self.free_block(o, k);
            o += 1 << k;
            n -= 1 << k;
        }
    }

    fn free_block(&mut self, mut o: u32, mut k: u32) {
        debug_assert_eq!(o % (1 << k), 0);
        while k < MAX_ORDER {
            let buddy = o ^ (1 << k);
            if !self.free[k as usize].remove(&buddy) {
                break;
            }
            self.free_slots -= 1 << k;
            o = o.min(buddy);
            k += 1;
        }
        self.insert(o, k);
    }

    fn insert(&mut self, o: u32, k: u32) {
        let fresh = self.free[k as usize].insert(o);
        debug_assert!(fresh, "double free of block {o} order {k}");
        self.free_slots += 1 << k;
    }
}

fn ceil_log2(n: u32) -> u32 {
    32 - (n - 1).leading_zeros()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Random allocations and frees never overlap, and freeing everything coalesces the
    /// space back into maximal blocks.
    #[test]
    fn no_overlap_and_coalesces() {
        let mut rng = SplitMix64::new(3);
        let mut b = Buddy::new(1);
        let mut live: Vec<(u32, u32)> = Vec::new();
        let mut owner: Vec<bool> = Vec::new();
        for step in 0..20_000 {
            if live.is_empty() || rng.below(3) != 0 {
                let n = 1 + rng.below(64) as u32;
                let o = if step < 200 { b.bump(n) } else { b.alloc(n) };
                if owner.len() < b.top() as usize {
                    owner.resize(b.top() as usize, false);
                }
                for s in o..o + n {
                    assert!(!owner[s as usize], "slot {s} handed out twice");
                    owner[s as usize] = true;
                }
                live.push((o, n));
            } else {
                let (o, n) = live.swap_remove(rng.below(live.len() as u64) as usize);
                for s in o..o + n {
                    owner[s as usize] = false;
                }
                b.free(o, n);
            }
            let used: u64 = live.iter().map(|&(_, n)| n as u64).sum();
            assert_eq!(used + b.free_slots() + 1, b.top() as u64, "step {step}");
        }
        for (o, n) in live.drain(..) {
            b.free(o, n);
        }
        assert_eq!(b.free_slots() + 1, b.top() as u64);
        // Past the reserved slot everything merged into 64-slot blocks (except the edges).
        let small: usize = (0..MAX_ORDER as usize).map(|k| b.free[k].len()).sum();
        assert!(
            small <= 2 * MAX_ORDER as usize + 2,
            "{small} small blocks left"
        );
    }
}

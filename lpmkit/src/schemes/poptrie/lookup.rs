//! The data path: one-key lookup (the paper's Algorithm 1 / `poptrie_lookup`) and the
//! interleaved batch lookup.
//!
//! Both are written once, `#[inline(always)]`, and compiled twice: as the portable twin
//! (where `u64::count_ones` is a bit-twiddling sequence) and inside a
//! `#[target_feature(enable = "popcnt")]` kernel, where each population count is one
//! `popcnt` instruction, as the paper's name promises.

use super::{Key, Leaf, Node, Trie, LEAF_FLAG, STRIDE};
use crate::simd::prefetch;

impl<L: Leaf> Trie<L> {
    #[inline(always)]
    fn node(&self, i: u32) -> Node {
        debug_assert!((i as usize) < self.nodes.len());
        // SAFETY: node indices come from direct-pointing entries without the leaf flag or
        // from `base1 + popcnt - 1` of a set vector bit; the builder writes both only for
        // nodes it allocated, below `nodes.len()`. Index 0 is the reserved sink node.
        unsafe { *self.nodes.get_unchecked(i as usize) }
    }

    #[inline(always)]
    fn leaf(&self, i: u32) -> u32 {
        debug_assert!((i as usize) < self.leaves.len());
        // SAFETY: leaf indices are `base0 + popcnt(leafvec & ..=idx) - 1` for an index
        // whose vector bit is clear; every node's leafvec has a bit set at or before its
        // first leaf slot, and its `popcnt(leafvec)` leaves are allocated from `base0`.
        // Index 0 is the reserved (zero) leaf of the sink node.
        unsafe { self.leaves.get_unchecked(i as usize).get() }
    }

    #[inline(always)]
    fn dir_entry(&self, i: usize) -> u32 {
        debug_assert!(i < self.dir.len());
        // SAFETY: `i = key.top(s) < 2^s = dir.len()`.
        unsafe { *self.dir.get_unchecked(i) }
    }

    /// One lookup: the next-hop id (0 = no route).
    #[inline(always)]
    pub(super) fn lookup_one<A: Key>(&self, a: A) -> u32 {
        let e = self.dir_entry(a.top(self.s as u32));
        if e & LEAF_FLAG != 0 {
            return e & !LEAF_FLAG;
        }
        let mut n = self.node(e);
        let mut pos = self.s as u32;
        loop {
            let idx = a.chunk(pos);
            if (n.vector >> idx) & 1 != 0 {
                n = self.node(n.base1 + super::popcnt_le(n.vector, idx) - 1);
                pos += STRIDE;
            } else {
                return self.leaf(n.base0 + super::popcnt_le(n.leafvec, idx) - 1);
            }
        }
    }

    /// Looks up `B` keys in lockstep, without data-dependent branches.
    ///
    /// Every lane takes one step per round: a lane whose vector bit is set moves to the
    /// child; a lane at a leaf slot stays on its node, so repeating the step recomputes
    /// the same leaf index. Lanes whose direct-pointing entry is a leaf sit on the sink
    /// node 0. Rounds continue until no lane moved; the out-of-order core overlaps the
    /// `B` independent node loads of a round, and each moved lane prefetches its child.
    #[inline(always)]
    pub(super) fn lookup_block<A: Key, const B: usize>(&self, keys: &[A], out: &mut [u32]) {
        debug_assert!(keys.len() == B && out.len() == B);
        let s = self.s as u32;
        let mut cur = [0u32; B];
        let mut pos = [s; B];
        let mut leafi = [0u32; B];
        let mut dirv = [0u32; B];
        for i in 0..B {
            let e = self.dir_entry(keys[i].top(s));
            let leaf = (e >> 31).wrapping_neg(); // all ones for a leaf entry
            dirv[i] = e & leaf;
            cur[i] = e & !leaf;
            prefetch(self.nodes.as_ptr().wrapping_add(cur[i] as usize));
        }
        loop {
            let mut moved = 0u64;
            for i in 0..B {
                let n = self.node(cur[i]);
                let idx = keys[i].chunk(pos[i]);
                let bit = (n.vector >> idx) & 1;
                let child = n
                    .base1
                    .wrapping_add(super::popcnt_le(n.vector, idx))
                    .wrapping_sub(1);
                let li = n
                    .base0
                    .wrapping_add(super::popcnt_le(n.leafvec, idx))
                    .wrapping_sub(1);
                let m = (bit as u32).wrapping_neg();
                cur[i] = (child & m) | (cur[i] & !m);
                pos[i] += STRIDE & m;
                leafi[i] = (li & !m) | (leafi[i] & m);
                prefetch(self.nodes.as_ptr().wrapping_add(cur[i] as usize));
                moved |= bit;
            }
            if moved == 0 {
                break;
            }
        }
        for i in 0..B {
            let lv = self.leaf(leafi[i]);
            let d = (dirv[i] >> 31).wrapping_neg();
            out[i] = (dirv[i] & !LEAF_FLAG & d) | (lv & !d);
        }
    }

    /// The batch lookup: blocks of `B` keys, the tail one key at a time.
    #[inline(always)]
    pub(super) fn lookup_batch_impl<A: Key, const B: usize>(&self, keys: &[A], out: &mut [u32]) {
        let s = self.s as u32;
        let mut blocks = keys.chunks_exact(B);
        let mut outs = out.chunks_exact_mut(B);
        let mut next = keys.chunks_exact(B).skip(1);
        for (k, o) in (&mut blocks).zip(&mut outs) {
            // Prefetch the next block's direct-pointing entries.
            if let Some(nk) = next.next() {
                for &a in nk {
                    prefetch(self.dir.as_ptr().wrapping_add(a.top(s)));
                }
            }
            self.lookup_block::<A, B>(k, o);
        }
        for (o, &a) in outs.into_remainder().iter_mut().zip(blocks.remainder()) {
            *o = self.lookup_one(a);
        }
    }
}

/// Keys per interleaved block.
pub(super) const BLOCK: usize = 16;

/// The portable batch lookup (the scalar twin).
pub(super) fn batch_portable<A: Key, L: Leaf>(t: &Trie<L>, keys: &[A], out: &mut [u32]) {
    t.lookup_batch_impl::<A, BLOCK>(keys, out)
}

/// The batch lookup with hardware `popcnt`.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
pub(super) unsafe fn batch_popcnt<A: Key, L: Leaf>(t: &Trie<L>, keys: &[A], out: &mut [u32]) {
    t.lookup_batch_impl::<A, BLOCK>(keys, out)
}

/// One lookup with hardware `popcnt`.
///
/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
pub(super) unsafe fn one_popcnt<A: Key, L: Leaf>(t: &Trie<L>, a: A) -> u32 {
    t.lookup_one(a)
}

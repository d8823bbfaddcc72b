//! The data path: one-key lookup (the C code's `poptrie_lookup`) and the
//! interleaved batch lookup.
//!
//! Both are written once, `#[inline(always)]`, and compiled twice: as the portable twin
//! (where `u64::count_ones` is a bit-twiddling sequence) and inside a
//! `#[target_feature(enable = "popcnt")]` kernel, where each population count is one
//! `popcnt` instruction, as the paper's name promises.

use core::sync::atomic::Ordering;

use super::{Key, Node, Trie, BASE1_OFFSET, LEAF_FLAG, STRIDE};
use crate::schemes::common::Word;
use crate::simd::prefetch;
#[cfg(target_arch = "x86_64")]
use crate::simd::Popcnt;

impl<L: Word> Trie<L> {
    /// Node `i`. Its `base1` is a switch word an update may store to while this reads
    /// it: loaded atomically (acquire, pairing with the update's release store, so the
    /// children array it names is complete); the other fields never change in a live
    /// node.
    #[inline(always)]
    pub(super) fn node(&self, i: u32) -> Node {
        let p = self.nodes.as_ptr().wrapping_add(i as usize);
        // SAFETY: node indices come from direct-pointing entries without the leaf flag or
        // from `base1 + popcnt - 1` of a set vector bit; the writer publishes both only
        // for nodes it allocated and wrote, below the committed length, and reuses a
        // node's slot only after every reader has moved past it. Index 0 is the reserved
        // sink node.
        unsafe {
            Node {
                vector: core::ptr::addr_of!((*p).vector).read(),
                leafvec: core::ptr::addr_of!((*p).leafvec).read(),
                base0: core::ptr::addr_of!((*p).base0).read(),
                base1: self
                    .nodes
                    .atomic_u32(i as usize, BASE1_OFFSET)
                    .load(Ordering::Acquire),
            }
        }
    }

    #[inline(always)]
    fn leaf(&self, i: u32) -> u32 {
        // SAFETY: leaf indices are `base0 + popcnt(leafvec & ..=idx) - 1` for an index
        // whose vector bit is clear; every node's leafvec has a bit set at or before its
        // first leaf slot, and its `popcnt(leafvec)` leaves are allocated (and committed)
        // from `base0`. Index 0 is the reserved (zero) leaf of the sink node.
        unsafe { self.leaves.get(i as usize).get() }
    }

    #[inline(always)]
    fn dir_entry(&self, i: usize) -> u32 {
        debug_assert!(i < 1 << self.s);
        // SAFETY: `i = key.top(s) < 2^s`, all committed.
        unsafe { self.dir.load_acquire(i) }
    }

    /// [`lookup_one`](Self::lookup_one) with `stall` run after the first node is read.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(super) fn lookup_stalled<A: Key>(&self, a: A, stall: impl FnOnce()) -> u32 {
        let s = self.s as u32;
        let e = self.dir_entry(a.top(s));
        if e & LEAF_FLAG != 0 {
            stall();
            return e & !LEAF_FLAG;
        }
        let mut n = self.node(e);
        stall();
        let mut k = a.shl(s);
        loop {
            let idx = k.head();
            if (n.vector >> idx) & 1 != 0 {
                n = self.node(n.base1 + super::popcnt_le(n.vector, idx) - 1);
                k = k.shl(STRIDE);
            } else {
                return self.leaf(n.base0 + super::popcnt_le(n.leafvec, idx) - 1);
            }
        }
    }

    /// One lookup: the next-hop id (0 = no route).
    ///
    /// It reads a node field by field, as the C code's `poptrie_lookup` does: `vector`
    /// at every level, `base1` (the switch word, acquire) only to descend, `leafvec` and
    /// `base0` only at the last node; and it takes the node array's address once (the
    /// arena never moves), where [`node`](Self::node) would reload it after every
    /// acquire load. Reading the fields at different moments is sound because only
    /// `base1` of a live node ever changes, and its old and new values name children
    /// arrays with the same contents.
    #[inline(always)]
    pub(super) fn lookup_one<A: Key>(&self, a: A) -> u32 {
        let s = self.s as u32;
        let e = self.dir_entry(a.top(s));
        if e & LEAF_FLAG != 0 {
            return e & !LEAF_FLAG;
        }
        let nodes = self.nodes.as_ptr();
        let mut i = e;
        // The key shifted so that the current stride is its top 6 bits.
        let mut k = a.shl(s);
        loop {
            let idx = k.head();
            debug_assert!((i as usize) < self.nodes.committed());
            // `i` is a published node index, as in `node`: from a direct-pointing entry
            // without the leaf flag, or `base1 + popcnt - 1` of a set vector bit, so the
            // node is committed and not reused while this reader may hold it.
            let p = nodes.wrapping_add(i as usize);
            // SAFETY: `p` is a committed node (above); `vector` never changes in a live
            // node.
            let vector = unsafe { core::ptr::addr_of!((*p).vector).read() };
            if (vector >> idx) & 1 != 0 {
                // SAFETY: as above; `base1` is a switch word, only ever accessed
                // atomically (acquire: the children array it names is complete).
                let base1 = unsafe {
                    core::sync::atomic::AtomicU32::from_ptr(
                        core::ptr::addr_of!((*p).base1) as *mut u32
                    )
                }
                .load(Ordering::Acquire);
                i = base1 + super::popcnt_le(vector, idx) - 1;
                k = k.shl(STRIDE);
            } else {
                // SAFETY: as above; `leafvec` and `base0` never change in a live node.
                let (leafvec, base0) = unsafe {
                    (
                        core::ptr::addr_of!((*p).leafvec).read(),
                        core::ptr::addr_of!((*p).base0).read(),
                    )
                };
                return self.leaf(base0 + super::popcnt_le(leafvec, idx) - 1);
            }
        }
    }

    /// Looks up `B` keys together, without data-dependent branches.
    ///
    /// The direct-pointing stage resolves every lane and lists (branch-free compaction)
    /// the lanes that continue into a node. Each round then steps every listed lane one
    /// level: it computes both its child and its leaf index, and stays in the list only
    /// if the vector bit is set. The out-of-order core overlaps the independent node
    /// loads of a round, and every lane prefetches what it reads next (its child, or its
    /// leaf); the work is proportional to the levels each key really descends.
    #[inline(always)]
    pub(super) fn lookup_block<A: Key, const B: usize>(&self, keys: &[A], out: &mut [u32]) {
        debug_assert!(keys.len() == B && out.len() == B && B <= 256);
        let s = self.s as u32;
        let mut cur = [0u32; B];
        let mut key = [A::ZERO; B];
        let mut leafi = [0u32; B];
        let mut active = [0u8; B];
        let mut inner = [0u8; B];
        let mut n = 0usize;
        for i in 0..B {
            let e = self.dir_entry(keys[i].top(s));
            let is_node = (e >> 31) ^ 1;
            out[i] = e & !LEAF_FLAG;
            cur[i] = e & !LEAF_FLAG;
            key[i] = keys[i].shl(s);
            prefetch(self.nodes.as_ptr().wrapping_add(cur[i] as usize));
            active[n] = i as u8;
            n += is_node as usize;
        }
        let nodes_n = n;
        inner[..n].copy_from_slice(&active[..n]);
        while n > 0 {
            let mut m = 0usize;
            for j in 0..n {
                let i = active[j] as usize;
                let nd = self.node(cur[i]);
                let idx = key[i].head();
                let bit = ((nd.vector >> idx) & 1) as usize;
                // Both outcomes are computed; a lane that leaves the list never reads
                // its `cur` again, and one that stays overwrites its `leafi` later.
                let child = nd
                    .base1
                    .wrapping_add(super::popcnt_le(nd.vector, idx))
                    .wrapping_sub(1);
                let li = nd
                    .base0
                    .wrapping_add(super::popcnt_le(nd.leafvec, idx))
                    .wrapping_sub(1);
                cur[i] = child;
                leafi[i] = li;
                key[i] = key[i].shl(STRIDE);
                // Prefetch the child or the leaf, chosen without a branch.
                let pn = self.nodes.as_ptr().wrapping_add(child as usize) as usize;
                let pl = self.leaves.as_ptr().wrapping_add(li as usize) as usize;
                let sel = bit.wrapping_neg();
                prefetch(((pn & sel) | (pl & !sel)) as *const u8);
                active[m] = i as u8;
                m += bit;
            }
            n = m;
        }
        for &i in &inner[..nodes_n] {
            out[i as usize] = self.leaf(leafi[i as usize]);
        }
    }

    /// The batch lookup as a software pipeline over single lookups: the direct-pointing
    /// entry of key `i + 16` is prefetched, the first node of key `i + 8` (its entry is
    /// in cache by then) is prefetched, and key `i` is looked up by the one-key code,
    /// whose independent iterations the out-of-order core overlaps.
    #[inline(always)]
    pub(super) fn lookup_batch_pipelined<A: Key>(&self, keys: &[A], out: &mut [u32]) {
        let s = self.s as u32;
        for (i, (o, &a)) in out.iter_mut().zip(keys).enumerate() {
            if let Some(&k) = keys.get(i + 16) {
                prefetch(self.dir.as_ptr().wrapping_add(k.top(s)));
            }
            if let Some(&k) = keys.get(i + 8) {
                let e = self.dir_entry(k.top(s));
                prefetch(self.nodes.as_ptr().wrapping_add((e & !LEAF_FLAG) as usize));
            }
            *o = self.lookup_one(a);
        }
    }

    /// The batch lookup: blocks of `B` keys, the tail one key at a time.
    #[inline(always)]
    pub(super) fn lookup_batch_impl<A: Key, const B: usize>(&self, keys: &[A], out: &mut [u32]) {
        let s = self.s as u32;
        // IPv6 keys descend many levels of mostly cached nodes: the per-level bookkeeping
        // of the lane kernel costs more than the overlap it buys, so IPv6 runs the
        // software pipeline.
        if A::BITS == 128 {
            self.lookup_batch_pipelined(keys, out);
            return;
        }
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

/// Keys per interleaved block (IPv4).
pub(super) const BLOCK: usize = 64;

/// The portable batch lookup (the scalar twin).
pub(super) fn batch_portable<A: Key, L: Word>(t: &Trie<L>, keys: &[A], out: &mut [u32]) {
    t.lookup_batch_impl::<A, BLOCK>(keys, out)
}

/// The batch lookup with hardware `popcnt` (holding the token proves the CPU has it).
#[cfg(target_arch = "x86_64")]
pub(super) fn batch_popcnt<A: Key, L: Word>(_: Popcnt, t: &Trie<L>, keys: &[A], out: &mut [u32]) {
    // SAFETY: the token proves the CPU supports `popcnt`.
    unsafe { batch_popcnt_kernel(t, keys, out) }
}

/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn batch_popcnt_kernel<A: Key, L: Word>(t: &Trie<L>, keys: &[A], out: &mut [u32]) {
    t.lookup_batch_impl::<A, BLOCK>(keys, out)
}

/// One lookup with hardware `popcnt` (holding the token proves the CPU has it).
#[cfg(target_arch = "x86_64")]
pub(super) fn one_popcnt<A: Key, L: Word>(_: Popcnt, t: &Trie<L>, a: A) -> u32 {
    // SAFETY: the token proves the CPU supports `popcnt`.
    unsafe { one_popcnt_kernel(t, a) }
}

/// # Safety
/// The CPU must support `popcnt`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn one_popcnt_kernel<A: Key, L: Word>(t: &Trie<L>, a: A) -> u32 {
    t.lookup_one(a)
}

//! Incremental updates (the Poptrie paper's incremental update; `_update_subtree`/`_update_part` in the
//! authors' C code): rebuild the smallest subtree a route change touches into newly
//! allocated slots, switch one 32-bit word (a direct-pointing entry or a parent's `base1`)
//! with an atomic store, and retire the replaced slots — they are reused only after every
//! reader has moved past them.

use core::sync::atomic::Ordering;

use super::build::{Built, Exhausted, Placement};
use super::{Key, Node, RetiredBlock, Space, Trie, BASE1_OFFSET, LEAF_FLAG, STRIDE};
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::schemes::common::Word;

/// Brings the part of the trie that `p` covers in line with `rib` (which already holds
/// the change). Returns the number of subtrees rebuilt.
///
/// # Safety
/// The caller is the trie's one writer, `space` is its free space, and the blocks pushed
/// to `retire` are reused only after their grace period.
pub(super) unsafe fn update<A: Key, L: Word>(
    t: &Trie<L>,
    space: &mut Space,
    rib: &Rib<A>,
    p: &Prefix<A>,
    retire: &mut Vec<RetiredBlock>,
) -> Result<usize, Exhausted> {
    let mut w = Writer { t, space, retire };
    let s = t.s as u32;
    let len = p.len() as u32;
    let e = p.addr().top(s);
    if len <= s {
        // The prefix spans 2^(s - len) direct-pointing entries: each is rebuilt and
        // switched on its own (as `_update_dp1` does).
        let count = 1usize << (s - len);
        for i in e..e + count {
            w.rebuild_dir_entry(rib, i)?;
        }
        return Ok(count);
    }
    // Walk down while the prefix lies strictly inside an internal child.
    let mut path: Vec<(u32, u32)> = Vec::new();
    let entry = w.dir(e);
    if entry & LEAF_FLAG != 0 {
        w.rebuild_dir_entry(rib, e)?;
        return Ok(1);
    }
    let (mut cur, mut pos) = (entry, s);
    loop {
        path.push((cur, pos));
        if len <= pos + STRIDE {
            break;
        }
        let n = w.node(cur);
        let idx = p.addr().chunk(pos);
        if (n.vector >> idx) & 1 == 0 {
            break;
        }
        cur = n.base1 + super::popcnt_le(n.vector, idx) - 1;
        pos += STRIDE;
    }
    // Rebuild the deepest node of the path; if it collapses into a leaf, its parent's
    // vector changes, so rebuild the parent instead, and so on up to the entry.
    let mut rebuilt = 0;
    while let Some((cur, pos)) = path.pop() {
        rebuilt += 1;
        let window = Prefix::new_truncating(p.addr(), pos as u8);
        // SAFETY: one writer (the caller).
        let built = unsafe { w.t.build_window(w.space, rib, &window) }?;
        let Some(&(parent, _)) = path.last() else {
            w.switch_dir_entry(e, built)?;
            return Ok(rebuilt);
        };
        if let Built::Node(n) = built {
            // Same vector in the parent: copy its children array with the new node in
            // place, then switch the parent's `base1`.
            let pn = w.node(parent);
            let cnt = pn.vector.count_ones();
            let nb = w.t.alloc_nodes(w.space, cnt, Placement::BestFit)?;
            let old = w.node(cur);
            // SAFETY: `nb..nb + cnt` was just allocated (unreachable, disjoint from the
            // live array it copies); one writer.
            unsafe {
                w.t.nodes.copy(pn.base1 as usize, nb as usize, cnt as usize);
                w.t.nodes.write((nb + (cur - pn.base1)) as usize, n);
                // The switch: one atomic store, after the new array is complete.
                w.t.nodes
                    .atomic_u32(parent as usize, BASE1_OFFSET)
                    .store(nb, Ordering::Release);
            }
            crate::schemes::common::published();
            w.retire_subtree(old);
            w.retire_nodes(pn.base1, cnt);
            return Ok(rebuilt);
        }
    }
    unreachable!("the path starts at a direct-pointing entry")
}

/// The trie, its free space and the retire list of one update.
struct Writer<'a, L: Word> {
    t: &'a Trie<L>,
    space: &'a mut Space,
    retire: &'a mut Vec<RetiredBlock>,
}

impl<L: Word> Writer<'_, L> {
    fn dir(&self, e: usize) -> u32 {
        // SAFETY: `e < 2^s`, committed.
        unsafe { self.t.dir.load_acquire(e) }
    }

    fn node(&self, i: u32) -> Node {
        self.t.node(i)
    }

    /// Rebuilds direct-pointing entry `e` from `rib` and switches it.
    fn rebuild_dir_entry<A: Key>(&mut self, rib: &Rib<A>, e: usize) -> Result<(), Exhausted> {
        let addr = super::build::dir_first::<A>(e, self.t.s);
        let window = Prefix::new_truncating(addr, self.t.s);
        // SAFETY: one writer (the caller of `update`).
        let built = unsafe { self.t.build_window(self.space, rib, &window) }?;
        self.switch_dir_entry(e, built)
    }

    /// Places `built` and writes it to direct-pointing entry `e`; retires the old subtree.
    fn switch_dir_entry(&mut self, e: usize, built: Built) -> Result<(), Exhausted> {
        let new = match built {
            Built::Leaf(v) => LEAF_FLAG | v,
            Built::Node(n) => {
                let i = self.t.alloc_nodes(self.space, 1, Placement::BestFit)?;
                // SAFETY: slot `i` was just allocated: unreachable; one writer.
                unsafe { self.t.nodes.write(i as usize, n) };
                i
            }
        };
        let old = self.dir(e);
        // The switch: one atomic store.
        // SAFETY: `e < 2^s`; one writer.
        unsafe { self.t.dir.store_release(e, new) };
        if old & LEAF_FLAG == 0 {
            let n = self.node(old);
            self.retire_subtree(n);
            self.retire_nodes(old, 1);
        }
        Ok(())
    }

    /// Retires the leaves and children arrays under `n` (not `n`'s own slot).
    fn retire_subtree(&mut self, n: Node) {
        let leaves = n.leafvec.count_ones();
        if leaves > 0 {
            self.retire.push(RetiredBlock {
                leaves: true,
                pos: n.base0,
                len: leaves,
            });
        }
        let kids = n.vector.count_ones();
        if kids > 0 {
            for j in 0..kids {
                let c = self.node(n.base1 + j);
                self.retire_subtree(c);
            }
            self.retire_nodes(n.base1, kids);
        }
    }

    fn retire_nodes(&mut self, pos: u32, len: u32) {
        // The sink node 0 is never retired: it is never a child.
        debug_assert!(pos > 0);
        self.retire.push(RetiredBlock {
            leaves: false,
            pos,
            len,
        });
    }
}

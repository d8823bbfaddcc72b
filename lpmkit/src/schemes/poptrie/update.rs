//! Incremental updates (the Poptrie paper's incremental update; `_update_subtree`/`_update_part` in the
//! authors' C code): rebuild the smallest subtree a route change touches into newly
//! allocated storage, then switch one 32-bit word (a direct-pointing entry or a parent's
//! `base1`), then free the old storage.

use super::build::{Built, Placement};
use super::{Key, Leaf, Node, Trie, LEAF_FLAG, STRIDE};
use crate::prefix::Prefix;
use crate::rib::Rib;

impl<L: Leaf> Trie<L> {
    /// Brings the part of the structure that `p` covers in line with `rib` (which already
    /// holds the change). Returns the number of subtrees rebuilt.
    pub(super) fn update<A: Key>(&mut self, rib: &Rib<A>, p: &Prefix<A>) -> usize {
        let s = self.s as u32;
        let len = p.len() as u32;
        let e = p.addr().top(s);
        if len <= s {
            // The prefix spans 2^(s - len) direct-pointing entries: each is rebuilt and
            // switched on its own (as `_update_dp1` does).
            let count = 1usize << (s - len);
            for i in e..e + count {
                self.rebuild_dir_entry(rib, i);
            }
            return count;
        }
        // Walk down while the prefix lies strictly inside an internal child.
        let mut path: Vec<(u32, u32)> = Vec::new();
        let entry = self.dir[e];
        if entry & LEAF_FLAG != 0 {
            self.rebuild_dir_entry(rib, e);
            return 1;
        }
        let (mut cur, mut pos) = (entry, s);
        loop {
            path.push((cur, pos));
            if len <= pos + STRIDE {
                break;
            }
            let n = self.nodes[cur as usize];
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
            let built = self.build_window(rib, &window);
            let Some(&(parent, _)) = path.last() else {
                self.switch_dir_entry(e, built);
                return rebuilt;
            };
            if let Built::Node(n) = built {
                // Same vector in the parent: copy its children array with the new node in
                // place, then switch the parent's `base1`.
                let pn = self.nodes[parent as usize];
                let cnt = pn.vector.count_ones();
                let nb = self.alloc_nodes(cnt, Placement::Buddy);
                let (ob, nbu) = (pn.base1 as usize, nb as usize);
                self.nodes.copy_within(ob..ob + cnt as usize, nbu);
                let old = self.nodes[cur as usize];
                self.nodes[nbu + (cur - pn.base1) as usize] = n;
                self.nodes[parent as usize].base1 = nb; // the switch
                self.free_subtree(old);
                self.nodes_alloc.free(pn.base1, cnt);
                return rebuilt;
            }
        }
        unreachable!("the path starts at a direct-pointing entry")
    }

    /// Rebuilds direct-pointing entry `e` from `rib` and switches it.
    fn rebuild_dir_entry<A: Key>(&mut self, rib: &Rib<A>, e: usize) {
        let addr = super::build::dir_first::<A>(e, self.s);
        let window = Prefix::new_truncating(addr, self.s);
        let built = self.build_window(rib, &window);
        self.switch_dir_entry(e, built);
    }

    /// Places `built` and writes it to direct-pointing entry `e`; frees the old subtree.
    fn switch_dir_entry(&mut self, e: usize, built: Built) {
        let new = match built {
            Built::Leaf(v) => LEAF_FLAG | v,
            Built::Node(n) => {
                let i = self.alloc_nodes(1, Placement::Buddy);
                self.nodes[i as usize] = n;
                i
            }
        };
        let old = self.dir[e];
        self.dir[e] = new; // the switch: one aligned 32-bit store
        if old & LEAF_FLAG == 0 {
            let n = self.nodes[old as usize];
            self.free_subtree(n);
            self.nodes_alloc.free(old, 1);
        }
    }

    /// Frees the leaves and children arrays under `n` (not `n`'s own slot).
    fn free_subtree(&mut self, n: Node) {
        let leaves = n.leafvec.count_ones();
        if leaves > 0 {
            self.leaves_alloc.free(n.base0, leaves);
        }
        let kids = n.vector.count_ones();
        if kids > 0 {
            for j in 0..kids {
                let c = self.nodes[(n.base1 + j) as usize];
                self.free_subtree(c);
            }
            self.nodes_alloc.free(n.base1, kids);
        }
    }
}

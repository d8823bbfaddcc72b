//! The B+ tree of order `m` over the `k`-bit prefix keys (the i-nodes of MIHT): internal
//! nodes hold up to `m − 1` keys and `m` children, external nodes (leaves) up to `m − 1`
//! keys, each with the root of its priority trie; every node but the root holds at least
//! `⌈m/2⌉ − 1` keys; all leaves are at the same depth.
//!
//! **Layout.** Nodes are `2M` 32-bit words, `M` = `m` rounded up to a multiple of 16, in
//! an arena whose nodes all start on 64-byte boundaries (the paper aligns its nodes to 64
//! bytes so that a node's keys are one cache line for `m = 16`): word 0 is the key count
//! and the leaf flag (bit 31), words `1..=count` the keys, ascending (the C code's
//! `indices[1..]`), and words `M..` the children (`M + j`, `j = 0..=count`) or, in a leaf,
//! the trie roots (`M + i` for key `i`). A search binary-searches the keys of each node on
//! its way down.
//!
//! **Updates** are the B+ tree's own: an insert descends, adds the key to its leaf, and
//! splits full nodes on the way back up (a new root when the root splits); a delete
//! removes the key and, where a node falls below the minimum, borrows from a sibling or
//! merges with it (the root shrinks when it is left with one child). Nodes are never
//! written once reachable: each node an update changes is written anew (path copying),
//! and the caller publishes the new root.

use crate::schemes::common::{Arena, FreeSpace};

/// No node.
pub(crate) const NIL: u32 = u32::MAX;

const LEAF: u32 = 1 << 31;

/// Words per node for order `m`.
pub(crate) fn stride(m: usize) -> usize {
    2 * m.next_multiple_of(16)
}

/// A node read out of the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BNode {
    pub leaf: bool,
    pub keys: Vec<u32>,
    /// Children (internal: `keys.len() + 1`) or trie roots (leaf: `keys.len()`).
    pub ptrs: Vec<u32>,
}

/// The B+ tree's arena and geometry.
pub(crate) struct Tree {
    pub(crate) m: usize,
    /// Words per node.
    pub(crate) s: usize,
    /// Word offset of the pointers within a node.
    pub(crate) half: usize,
    pub(crate) nodes: Arena<u32>,
}

impl core::fmt::Debug for Tree {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Tree").field("m", &self.m).finish()
    }
}

/// Out of room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// The writer's side: free node slots, nodes dropped by the current update.
#[derive(Clone, Debug)]
pub(crate) struct TreeSpace {
    pub(crate) space: FreeSpace,
    pub(crate) dropped: Vec<u32>,
}

impl Tree {
    /// An empty tree of order `m` with room for `capacity` nodes.
    pub(crate) fn new(m: usize, capacity: usize) -> Option<Self> {
        let s = stride(m);
        Some(Tree {
            m,
            s,
            half: s / 2,
            nodes: Arena::new(capacity.max(1).checked_mul(s)?)?,
        })
    }

    /// Fewest keys of a node other than the root.
    pub(crate) fn min_keys(&self) -> usize {
        self.m.div_ceil(2) - 1
    }

    /// The trie root of `key` in the tree at `root` (`NIL` if absent): the lookup.
    #[inline(always)]
    pub(crate) fn find(&self, root: u32, key: u32) -> u32 {
        if root == NIL {
            return NIL;
        }
        let base = self.nodes.as_ptr();
        let mut n = root as usize;
        loop {
            // SAFETY: published nodes lie below the committed top and are never written
            // while reachable; `count <= m − 1 < half`, so every index stays in the node.
            unsafe {
                let w = base.add(n * self.s);
                let head = *w;
                let count = (head & !LEAF) as usize;
                // The number of keys <= key (keys at w[1..=count]).
                let (mut lo, mut len) = (0usize, count);
                while len > 0 {
                    let half = len / 2;
                    if *w.add(1 + lo + half) <= key {
                        lo += half + 1;
                        len -= half + 1;
                    } else {
                        len = half;
                    }
                }
                if head & LEAF != 0 {
                    return if lo >= 1 && *w.add(lo) == key {
                        *w.add(self.half + lo)
                    } else {
                        NIL
                    };
                }
                n = *w.add(self.half + lo) as usize;
            }
        }
    }

    /// Node `i`.
    pub(crate) fn read(&self, i: u32) -> BNode {
        let b = i as usize * self.s;
        // SAFETY: a node of the tree (committed; the writer reads it like a reader).
        let w = |j: usize| unsafe { self.nodes.get(b + j) };
        let head = w(0);
        let count = (head & !LEAF) as usize;
        let leaf = head & LEAF != 0;
        BNode {
            leaf,
            keys: (1..=count).map(w).collect(),
            ptrs: if leaf {
                (1..=count).map(|i| w(self.half + i)).collect()
            } else {
                (0..=count).map(|j| w(self.half + j)).collect()
            },
        }
    }

    /// Writes `n` to a new slot; returns its index.
    pub(crate) fn write(&self, sp: &mut TreeSpace, n: &BNode) -> Result<u32, Full> {
        debug_assert!(n.keys.len() < self.m && n.keys.len() < self.half);
        let i = sp.space.alloc(1);
        // SAFETY: the one writer (the caller holds the tree's space).
        if !unsafe { self.nodes.grow(sp.space.top() * self.s) } {
            sp.space.free(i, 1);
            return Err(Full);
        }
        let b = i * self.s;
        let mut words = vec![0u32; self.s];
        words[0] = n.keys.len() as u32 | if n.leaf { LEAF } else { 0 };
        words[1..=n.keys.len()].copy_from_slice(&n.keys);
        let off = if n.leaf { self.half + 1 } else { self.half };
        words[off..off + n.ptrs.len()].copy_from_slice(&n.ptrs);
        for (j, &v) in words.iter().enumerate() {
            // SAFETY: slot `i` was just allocated: committed and unreachable.
            unsafe { self.nodes.write(b + j, v) };
        }
        Ok(i as u32)
    }

    /// Bulk load of sorted, distinct `(key, trie root)`: leaves packed evenly, then the
    /// levels above. Returns the root (`NIL` if empty).
    pub(crate) fn bulk(&self, sp: &mut TreeSpace, entries: &[(u32, u32)]) -> Result<u32, Full> {
        if entries.is_empty() {
            return Ok(NIL);
        }
        // (node, smallest key below it)
        let mut level: Vec<(u32, u32)> = Vec::new();
        for part in even_parts(entries.len(), self.m - 1) {
            let e = &entries[part];
            let n = BNode {
                leaf: true,
                keys: e.iter().map(|x| x.0).collect(),
                ptrs: e.iter().map(|x| x.1).collect(),
            };
            level.push((self.write(sp, &n)?, e[0].0));
        }
        while level.len() > 1 {
            let mut up = Vec::new();
            for part in even_parts(level.len(), self.m) {
                let c = &level[part];
                let n = BNode {
                    leaf: false,
                    keys: c[1..].iter().map(|x| x.1).collect(),
                    ptrs: c.iter().map(|x| x.0).collect(),
                };
                up.push((self.write(sp, &n)?, c[0].1));
            }
            level = up;
        }
        Ok(level[0].0)
    }

    /// Inserts `key → ptr` (replacing the pointer if the key is present) into the tree at
    /// `root`; returns the new root. Replaced nodes go to `sp.dropped`.
    pub(crate) fn insert(
        &self,
        sp: &mut TreeSpace,
        root: u32,
        key: u32,
        ptr: u32,
    ) -> Result<u32, Full> {
        if root == NIL {
            return self.write(
                sp,
                &BNode {
                    leaf: true,
                    keys: vec![key],
                    ptrs: vec![ptr],
                },
            );
        }
        let (left, split) = self.insert_in(sp, root, key, ptr)?;
        match split {
            None => Ok(left),
            Some((sep, right)) => self.write(
                sp,
                &BNode {
                    leaf: false,
                    keys: vec![sep],
                    ptrs: vec![left, right],
                },
            ),
        }
    }

    fn insert_in(
        &self,
        sp: &mut TreeSpace,
        i: u32,
        key: u32,
        ptr: u32,
    ) -> Result<(u32, Option<(u32, u32)>), Full> {
        let mut n = self.read(i);
        sp.dropped.push(i);
        if n.leaf {
            let pos = n.keys.partition_point(|&k| k < key);
            if n.keys.get(pos) == Some(&key) {
                n.ptrs[pos] = ptr;
            } else {
                n.keys.insert(pos, key);
                n.ptrs.insert(pos, ptr);
            }
        } else {
            let pos = n.keys.partition_point(|&k| k <= key);
            let (c, split) = self.insert_in(sp, n.ptrs[pos], key, ptr)?;
            n.ptrs[pos] = c;
            if let Some((sep, right)) = split {
                n.keys.insert(pos, sep);
                n.ptrs.insert(pos + 1, right);
            }
        }
        if n.keys.len() < self.m {
            return Ok((self.write(sp, &n)?, None));
        }
        // Split a node that reached m keys.
        let (left, sep, right) = if n.leaf {
            let mid = n.keys.len().div_ceil(2);
            let right = BNode {
                leaf: true,
                keys: n.keys.split_off(mid),
                ptrs: n.ptrs.split_off(mid),
            };
            let sep = right.keys[0];
            (n, sep, right)
        } else {
            let mid = n.keys.len() / 2;
            let rkeys = n.keys.split_off(mid + 1);
            let sep = n.keys.pop().expect("the middle key");
            let right = BNode {
                leaf: false,
                keys: rkeys,
                ptrs: n.ptrs.split_off(mid + 1),
            };
            (n, sep, right)
        };
        Ok((self.write(sp, &left)?, Some((sep, self.write(sp, &right)?))))
    }

    /// Deletes `key` (present) from the tree at `root`; returns the new root.
    pub(crate) fn delete(&self, sp: &mut TreeSpace, root: u32, key: u32) -> Result<u32, Full> {
        let (new, n) = self.delete_in(sp, root, key)?;
        if n.leaf && n.keys.is_empty() {
            sp.dropped.push(new);
            return Ok(NIL);
        }
        if !n.leaf && n.keys.is_empty() {
            sp.dropped.push(new);
            return Ok(n.ptrs[0]);
        }
        Ok(new)
    }

    /// Deletes `key` below node `i`; returns the new node and its content (which may be
    /// below the minimum: the parent rebalances).
    fn delete_in(&self, sp: &mut TreeSpace, i: u32, key: u32) -> Result<(u32, BNode), Full> {
        let mut n = self.read(i);
        sp.dropped.push(i);
        if n.leaf {
            let pos = n.keys.partition_point(|&k| k < key);
            debug_assert_eq!(n.keys.get(pos), Some(&key), "deleting an absent key");
            if n.keys.get(pos) == Some(&key) {
                n.keys.remove(pos);
                n.ptrs.remove(pos);
            }
            return Ok((self.write(sp, &n)?, n));
        }
        let pos = n.keys.partition_point(|&k| k <= key);
        let (c, cn) = self.delete_in(sp, n.ptrs[pos], key)?;
        n.ptrs[pos] = c;
        if cn.keys.len() < self.min_keys() {
            self.rebalance(sp, &mut n, pos, cn)?;
        }
        Ok((self.write(sp, &n)?, n))
    }

    /// Child `pos` of `parent` (content `cn`, already written) fell below the minimum:
    /// borrow from a sibling or merge with it.
    fn rebalance(
        &self,
        sp: &mut TreeSpace,
        parent: &mut BNode,
        pos: usize,
        cn: BNode,
    ) -> Result<(), Full> {
        let (li, ri) = if pos > 0 {
            (pos - 1, pos)
        } else {
            (pos, pos + 1)
        };
        let (left, right) = if li == pos {
            let r = self.read(parent.ptrs[ri]);
            sp.dropped.push(parent.ptrs[ri]);
            (cn, r)
        } else {
            let l = self.read(parent.ptrs[li]);
            sp.dropped.push(parent.ptrs[li]);
            (l, cn)
        };
        // The child's new copy (already written) is replaced too.
        sp.dropped.push(parent.ptrs[pos]);
        let leaf = left.leaf;
        let (mut keys, mut ptrs) = (left.keys, left.ptrs);
        if !leaf {
            keys.push(parent.keys[li]);
        }
        keys.extend(right.keys);
        ptrs.extend(right.ptrs);
        if keys.len() < self.m {
            // Merge into one node.
            let merged = self.write(sp, &BNode { leaf, keys, ptrs })?;
            parent.keys.remove(li);
            parent.ptrs.remove(ri);
            parent.ptrs[li] = merged;
            return Ok(());
        }
        // Redistribute evenly.
        let (l, sep, r) = if leaf {
            let mid = keys.len() / 2;
            let rk = keys.split_off(mid);
            let rp = ptrs.split_off(mid);
            let sep = rk[0];
            (
                BNode { leaf, keys, ptrs },
                sep,
                BNode {
                    leaf,
                    keys: rk,
                    ptrs: rp,
                },
            )
        } else {
            let mid = keys.len() / 2;
            let rk = keys.split_off(mid + 1);
            let sep = keys.pop().expect("the middle key");
            let rp = ptrs.split_off(mid + 1);
            (
                BNode { leaf, keys, ptrs },
                sep,
                BNode {
                    leaf,
                    keys: rk,
                    ptrs: rp,
                },
            )
        };
        parent.ptrs[li] = self.write(sp, &l)?;
        parent.ptrs[ri] = self.write(sp, &r)?;
        parent.keys[li] = sep;
        Ok(())
    }

    /// Checks the B+ tree properties of the tree at `root` and returns its `(key, trie
    /// root)` pairs in order, and its height.
    pub(crate) fn check(&self, root: u32) -> Result<(Vec<(u32, u32)>, usize), String> {
        fn walk(
            t: &Tree,
            i: u32,
            is_root: bool,
            lo: Option<u32>,
            hi: Option<u32>,
            out: &mut Vec<(u32, u32)>,
        ) -> Result<usize, String> {
            let n = t.read(i);
            if n.keys.len() >= t.m || (!is_root && n.keys.len() < t.min_keys()) {
                return Err(format!("node {i}: {} keys (order {})", n.keys.len(), t.m));
            }
            if n.keys.windows(2).any(|w| w[0] >= w[1]) {
                return Err(format!("node {i}: keys out of order"));
            }
            if n.keys
                .iter()
                .any(|&k| lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h))
            {
                return Err(format!("node {i}: a key outside its parent's range"));
            }
            if n.leaf {
                out.extend(n.keys.iter().copied().zip(n.ptrs.iter().copied()));
                return Ok(1);
            }
            if is_root && n.keys.is_empty() {
                return Err("an internal root with one child".into());
            }
            let mut depth = None;
            for (j, &c) in n.ptrs.iter().enumerate() {
                let clo = if j == 0 { lo } else { Some(n.keys[j - 1]) };
                let chi = if j == n.keys.len() {
                    hi
                } else {
                    Some(n.keys[j])
                };
                let d = walk(t, c, false, clo, chi, out)?;
                if depth.is_some_and(|x| x != d) {
                    return Err(format!("node {i}: leaves at different depths"));
                }
                depth = Some(d);
            }
            Ok(depth.unwrap_or(0) + 1)
        }
        let mut out = Vec::new();
        if root == NIL {
            return Ok((out, 0));
        }
        let h = walk(self, root, true, None, None, &mut out)?;
        Ok((out, h))
    }
}

/// `0..n` cut into `⌈n / max⌉` consecutive parts whose sizes differ by at most one.
fn even_parts(n: usize, max: usize) -> impl Iterator<Item = core::ops::Range<usize>> {
    let parts = n.div_ceil(max).max(1);
    (0..parts).map(move |p| (p * n / parts)..((p + 1) * n / parts))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::collections::BTreeMap;

    #[test]
    fn random_inserts_and_deletes_keep_the_b_plus_tree() {
        for m in [3usize, 4, 5, 16, 32] {
            let t = Tree::new(m, 1 << 16).unwrap();
            let mut sp = TreeSpace {
                space: FreeSpace::new(0),
                dropped: Vec::new(),
            };
            let mut rng = SplitMix64::new(m as u64);
            let mut want: BTreeMap<u32, u32> = (0..300u32).map(|i| (i * 7, i)).collect();
            let entries: Vec<(u32, u32)> = want.iter().map(|(&k, &v)| (k, v)).collect();
            let mut root = t.bulk(&mut sp, &entries).unwrap();
            for step in 0..2000 {
                let key = rng.below(3000) as u32;
                if rng.below(2) == 0 && want.contains_key(&key) {
                    root = t.delete(&mut sp, root, key).unwrap();
                    want.remove(&key);
                } else {
                    root = t.insert(&mut sp, root, key, step).unwrap();
                    want.insert(key, step);
                }
                for i in sp.dropped.drain(..) {
                    sp.space.free(i as usize, 1);
                }
                let (got, _) = t
                    .check(root)
                    .unwrap_or_else(|e| panic!("m {m} step {step}: {e}"));
                assert_eq!(got, want.iter().map(|(&k, &v)| (k, v)).collect::<Vec<_>>());
                for _ in 0..10 {
                    let q = rng.below(3000) as u32;
                    assert_eq!(t.find(root, q), want.get(&q).copied().unwrap_or(NIL));
                }
            }
            // Down to empty and back.
            let keys: Vec<u32> = want.keys().copied().collect();
            for k in keys {
                root = t.delete(&mut sp, root, k).unwrap();
                t.check(root).unwrap();
            }
            assert_eq!(root, NIL);
        }
    }
}

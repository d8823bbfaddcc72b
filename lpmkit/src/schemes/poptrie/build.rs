//! Building Poptrie from the `Rib` (the control path): the bulk build, and the subtree
//! rebuild that incremental updates share with it.
//!
//! Both work on the table projected onto disjoint ranges ([`Rib::for_each_range_in`]):
//! a child slot of a node holds a leaf when no range starts strictly inside the addresses
//! it covers (every address has the same longest match: leaf pushing), and an internal
//! node otherwise. A subtree is therefore never deeper than the table needs, and a
//! more-specific route that does not change the answer costs nothing.

use super::alloc::Buddy;
use super::{Key, Leaf, Node, Trie, LEAF_FLAG, STRIDE};
use crate::fib::BuildError;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// Largest node or leaf index: indices must stay below [`LEAF_FLAG`].
const MAX_INDEX: u64 = LEAF_FLAG as u64 - (1 << 6);

/// What one slot (a direct-pointing entry or a node's child) resolves to.
pub(super) enum Built {
    /// Every address under the slot has this next hop (0 = none).
    Leaf(u32),
    /// An internal node, not yet placed in the node array.
    Node(Node),
}

/// How new arrays are placed: packed at the top (bulk build) or by the buddy allocator.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    Bump,
    Buddy,
}

/// Builds the whole structure from `rib` with `2^s` direct-pointing entries.
#[inline(never)]
pub(super) fn build<A: Key, L: Leaf>(starts: &[(A, u32)], s: u8) -> Result<Trie<L>, BuildError> {
    let mut t = Trie::<L>::empty(s);
    let dir_len = 1usize << s;
    let mut dir = vec![0u32; dir_len];
    let mut k = 0usize;
    let mut val = 0u32;
    let span_bits = A::BITS as u32 - s as u32;
    for (e, slot) in dir.iter_mut().enumerate() {
        let first = dir_first::<A>(e, s);
        let last = A::from_u128(first.to_u128() | low_mask(span_bits));
        while k < starts.len() && starts[k].0 <= first {
            val = starts[k].1;
            k += 1;
        }
        let mut j = k;
        while j < starts.len() && starts[j].0 <= last {
            j += 1;
        }
        if j == k {
            *slot = LEAF_FLAG | val;
            continue;
        }
        let node = t.build_node(val, &starts[k..j], first, s as u32, Placement::Bump);
        let i = t.nodes_alloc.bump(1);
        t.grow();
        t.nodes[i as usize] = node;
        *slot = i;
        val = starts[j - 1].1;
        k = j;
    }
    t.dir = dir.into_boxed_slice();
    t.shrink();
    t.check_capacity()?;
    Ok(t)
}

/// The table as range starts (as [`crate::schemes::common::range_starts`]: `(first
/// address, next hop or 0)`, ascending, equal neighbours merged, the first at address 0)
/// and the largest next hop of any route, in one walk over the routes.
pub(super) fn ranges_and_max<A: Address>(rib: &Rib<A>) -> (Vec<(A, u32)>, u32) {
    let mut starts: Vec<(A, u32)> = Vec::with_capacity(rib.len() * 2 + 1);
    starts.push((A::ZERO, 0));
    let mut max = 0u32;
    // A range of next hop `nh` starts at `first`; a later start at the same address
    // replaces it.
    fn push<A: Address>(starts: &mut Vec<(A, u32)>, first: A, nh: u32) {
        let n = starts.len();
        let last = &mut starts[n - 1];
        if last.0 == first {
            last.1 = nh;
            if n >= 2 && starts[n - 2].1 == nh {
                starts.pop();
            }
        } else if last.1 != nh {
            starts.push((first, nh));
        }
    }
    // The open prefixes: (last address, next hop), innermost on top.
    let mut stack: Vec<(A, u32)> = Vec::new();
    let close = |stack: &mut Vec<(A, u32)>, starts: &mut Vec<(A, u32)>| {
        let (last, _) = stack.pop().expect("an open prefix");
        if let Some(next) = last.checked_inc() {
            push(starts, next, stack.last().map_or(0, |t| t.1));
        }
    };
    for (p, nh) in rib.iter() {
        max = max.max(nh.get());
        while stack.last().is_some_and(|t| t.0 < p.first()) {
            close(&mut stack, &mut starts);
        }
        push(&mut starts, p.first(), nh.get());
        stack.push((p.last(), nh.get()));
    }
    while !stack.is_empty() {
        close(&mut stack, &mut starts);
    }
    (starts, max)
}

/// The first address under direct-pointing entry `e` of `2^s`.
pub(super) fn dir_first<A: Key>(e: usize, s: u8) -> A {
    let span = A::BITS as u32 - s as u32;
    A::from_u128((e as u128).checked_shl(span).unwrap_or(0))
}

/// `bits` low one bits (`bits <= 128`).
fn low_mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

impl<L: Leaf> Trie<L> {
    /// Builds the node at bit `pos` covering `2^(BITS - pos)` addresses from `base`.
    ///
    /// `first_val` is the next hop at `base`; `starts` are the ranges that start strictly
    /// inside the node's addresses (at least one, or the node would be a leaf).
    pub(super) fn build_node<A: Key>(
        &mut self,
        first_val: u32,
        starts: &[(A, u32)],
        base: A,
        pos: u32,
        placement: Placement,
    ) -> Node {
        debug_assert!(!starts.is_empty());
        let shift = A::BITS as i32 - pos as i32 - STRIDE as i32;
        let mut vector = 0u64;
        let mut leafvec = 0u64;
        let mut leaves = [0u32; 64];
        let mut nleaves = 0usize;
        // Children as (value at first address, starts range, first address).
        let mut kids: [(u32, u32, u32, A); 64] = [(0, 0, 0, A::ZERO); 64];
        let mut nkids = 0usize;
        let mut prev: Option<u32> = None;
        let mut val = first_val;
        let mut k = 0usize;
        let base128 = base.to_u128();
        for i in 0..64u32 {
            // The addresses child `i` covers. Past the end of the address (the last
            // stride may be shorter than 6 bits) the index's low bits are zero-filled by
            // the lookup, so several slots map to one address; the others repeat its leaf.
            let (first, last) = if shift >= 0 {
                let f = base128 | ((i as u128) << shift);
                (f, f | low_mask(shift as u32))
            } else {
                let f = base128 | (i as u128 >> (-shift));
                (f, f)
            };
            let (first, last) = (A::from_u128(first), A::from_u128(last));
            while k < starts.len() && starts[k].0 <= first {
                val = starts[k].1;
                k += 1;
            }
            let mut j = k;
            while j < starts.len() && starts[j].0 <= last {
                j += 1;
            }
            if j > k {
                vector |= 1 << i;
                kids[nkids] = (val, k as u32, j as u32, first);
                nkids += 1;
                val = starts[j - 1].1;
                k = j;
            } else if prev != Some(val) {
                leafvec |= 1 << i;
                leaves[nleaves] = val;
                nleaves += 1;
                prev = Some(val);
            }
        }
        let base0 = if nleaves > 0 {
            let b = self.alloc_leaves(nleaves as u32, placement);
            for (slot, &v) in self.leaves[b as usize..b as usize + nleaves]
                .iter_mut()
                .zip(&leaves[..nleaves])
            {
                *slot = L::from_u32(v);
            }
            b
        } else {
            0
        };
        let base1 = if nkids > 0 {
            let b = self.alloc_nodes(nkids as u32, placement);
            for (n, &(v, from, to, first)) in kids[..nkids].iter().enumerate() {
                let child = self.build_node(
                    v,
                    &starts[from as usize..to as usize],
                    first,
                    pos + STRIDE,
                    placement,
                );
                self.nodes[b as usize + n] = child;
            }
            b
        } else {
            0
        };
        Node {
            vector,
            leafvec,
            base0,
            base1,
        }
    }

    /// Rebuilds the subtree for the addresses of `window` (`window.len()` = the bit
    /// position of the slot's node) from `rib` into newly allocated storage.
    pub(super) fn build_window<A: Key>(&mut self, rib: &Rib<A>, window: &Prefix<A>) -> Built {
        let mut starts: Vec<(A, u32)> = Vec::new();
        rib.for_each_range_in(window, |first, _, nh| {
            starts.push((first, NextHop::raw(nh)))
        });
        debug_assert_eq!(starts[0].0, window.first());
        if starts.len() == 1 {
            return Built::Leaf(starts[0].1);
        }
        Built::Node(self.build_node(
            starts[0].1,
            &starts[1..],
            window.first(),
            window.len() as u32,
            Placement::Buddy,
        ))
    }

    fn alloc_leaves(&mut self, n: u32, placement: Placement) -> u32 {
        let b = match placement {
            Placement::Bump => self.leaves_alloc.bump(n),
            Placement::Buddy => self.leaves_alloc.alloc(n),
        };
        self.grow();
        b
    }

    pub(super) fn alloc_nodes(&mut self, n: u32, placement: Placement) -> u32 {
        let b = match placement {
            Placement::Bump => self.nodes_alloc.bump(n),
            Placement::Buddy => self.nodes_alloc.alloc(n),
        };
        self.grow();
        b
    }

    /// Grows the arrays to what the allocators handed out.
    pub(super) fn grow(&mut self) {
        // `Vec` amortizes the growth; the length is what lookups may touch.
        let n = self.nodes_alloc.top() as usize;
        if self.nodes.len() < n {
            self.nodes.resize(n, Node::default());
        }
        let l = self.leaves_alloc.top() as usize;
        if self.leaves.len() < l {
            self.leaves.resize(l, L::from_u32(0));
        }
    }

    /// Trims the arrays to their used length (after a bulk build).
    pub(super) fn shrink(&mut self) {
        self.nodes.truncate(self.nodes_alloc.top() as usize);
        self.nodes.shrink_to_fit();
        self.leaves.truncate(self.leaves_alloc.top() as usize);
        self.leaves.shrink_to_fit();
    }

    /// Errors if an index no longer fits an entry (below the leaf flag).
    pub(super) fn check_capacity(&self) -> Result<(), BuildError> {
        for (what, top) in [
            ("nodes", self.nodes_alloc.top()),
            ("leaves", self.leaves_alloc.top()),
        ] {
            if top as u64 > MAX_INDEX {
                return Err(BuildError::CapacityExceeded {
                    scheme: "poptrie".to_string(),
                    what,
                    max: MAX_INDEX,
                    requested: top as u64,
                });
            }
        }
        Ok(())
    }

    /// An empty structure: the reserved sink node 0 and leaf 0, no direct entries yet.
    pub(super) fn empty(s: u8) -> Self {
        let mut t = Trie {
            s,
            dir: Box::new([]),
            nodes: Vec::new(),
            leaves: Vec::new(),
            nodes_alloc: Buddy::new(1),
            leaves_alloc: Buddy::new(1),
        };
        t.grow();
        t.nodes[0] = Node::SINK;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    fn agrees<A: Address>(seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let mut rib = Rib::<A>::new();
        for step in 0..400 {
            let len = rng.below(A::BITS as u64 + 1) as u8;
            let hi = A::from_u128((rng.below(4) as u128) << (A::BITS - 2));
            let lo =
                A::from_u128(rng.next_u128() >> (128 - A::BITS as u32 + rng.below(8) as u32 * 4));
            let p = Prefix::new_truncating(hi.or(lo), len);
            if rng.below(4) == 0 {
                rib.remove(&p);
            } else {
                rib.insert(p, NextHop::new(1 + rng.below(4) as u32).unwrap());
            }
            let (starts, max) = ranges_and_max(&rib);
            assert_eq!(
                starts,
                crate::schemes::common::range_starts(&rib),
                "step {step}"
            );
            assert_eq!(max, crate::fib::max_next_hop(&rib));
        }
    }

    #[test]
    fn ranges_agree_with_the_rib() {
        for seed in 0..6 {
            agrees::<u32>(seed);
            agrees::<u128>(seed);
        }
    }
}

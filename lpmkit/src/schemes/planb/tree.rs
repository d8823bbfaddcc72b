//! The linearized B+-tree: node layouts, the value encoding of leaves, and the builder of
//! one tree from sorted keys.
//!
//! # Shape
//!
//! A tree over `n` sorted keys `e_0 < … < e_{n-1}` (the last addresses of the first `n`
//! of `n + 1` elementary intervals, in the block's key chunk) answers, for a key `x`, the
//! interval index `r = #{i : e_i < x}`. Its nodes are numbered breadth first as in a
//! *complete* `F`-ary tree (`F = B + 1`, `B` keys per inner node): the root is node 0, the
//! children of node `i` are `i·F + 1 … i·F + F`, so a level's first node is
//! `(F^l − 1) / (F − 1)` and no pointer is stored. The leaf level is cut after its last
//! needed node, so only the inner levels are complete (a block of a few keys is one
//! leaf). Leaf `k` holds the keys `e_{k·BL} … e_{k·BL+BL−1}` (`BL` keys per leaf), padded
//! with the largest key value, which no search key is below; inner node `i` of height
//! `h` (leaves are height 0) holds, as its `j`-th key, the last key before its child
//! `j + 1`'s first leaf, `e_{m·BL − 1}` with `m = i·F^h + (j+1)·F^(h−1)` (padding past
//! the end). The number of its keys below `x` is then the child holding leaf `⌊r / BL⌋`,
//! and at the leaf, `r = k·BL + #{keys of leaf k below x}`. There are `⌊n / BL⌋ + 1`
//! leaves, so the leaf of `r = n` exists.
//!
//! Every step is "count the keys below `x`" over one node: a compare of all its keys at
//! once and a population count, without a branch.
//!
//! # Layouts ([`Layout`])
//!
//! * [`Wide`] (`B` = 8 or 4): the paper's node: 64-bit keys, 8 per 64-byte node (one
//!   512-bit compare, two 256-bit ones) or 4 per 32-byte node (one 256-bit compare); the
//!   leaves' values sit in a separate array at the same positions (`vals[node·B + j]`).
//! * [`Compact`]: 32-bit keys, 16 per 64-byte inner node; a leaf is one 64-byte line with
//!   8 keys and their 8 values, so a leaf step reads one line.
//!
//! Keys are stored *biased* (the top bit flipped), so that the signed compares of AVX2
//! order them as unsigned numbers; search keys are biased the same way.
//!
//! # Values
//!
//! A leaf value is a next hop (top bit clear; 0 = no route) or a [`child`] block, whose
//! tree is searched with the next key chunk: its root node and depth packed in the
//! value. [`MISS`] (a child of depth 0) is what the /32 lines answer for a /32 they do
//! not list: the lookup then starts at the main tree. A child value in a /32 line may
//! carry [`SAME_CHUNK`]: its tree holds one group of the line's intervals and is
//! searched with the line's key chunk.

use crate::fib::BuildError;
use crate::mem::{Plain, TableBuf};

/// A child block's flag in a leaf value (next hops are below it).
pub(crate) const CHILD: u32 = 1 << 31;
pub(crate) const DEPTH_SHIFT: u32 = 27;
/// The largest tree depth a child value holds.
pub(crate) const MAX_DEPTH: u32 = 15;
/// The depth bits of a child value.
pub(crate) const DEPTH_MASK: u32 = MAX_DEPTH << DEPTH_SHIFT;
/// In a child value of a front line: the child tree is searched with the same key
/// chunk as the line (it is one group of the line's intervals), not the next one.
pub(crate) const SAME_CHUNK: u32 = 1 << 26;
/// The most nodes a forest holds (child values keep 26 bits of root node).
pub(crate) const MAX_NODES: usize = 1 << 26;
/// "Not listed": the front does not know the key's block; search the main tree.
pub(crate) const MISS: u32 = CHILD;
/// The largest next hop a value holds.
pub(crate) const MAX_NEXT_HOP: u32 = CHILD - 1;

/// The value naming the block whose tree has root node `root` and `depth` levels.
#[inline(always)]
pub(crate) fn child(root: u32, depth: u32) -> u32 {
    debug_assert!((1..=MAX_DEPTH).contains(&depth) && (root as usize) < MAX_NODES);
    CHILD | depth << DEPTH_SHIFT | root
}

/// The depth of a child value (0 for [`MISS`]).
#[inline(always)]
pub(crate) fn depth_of(v: u32) -> u32 {
    (v >> DEPTH_SHIFT) & MAX_DEPTH
}

/// The root node of a child value.
#[inline(always)]
pub(crate) fn root_of(v: u32) -> u32 {
    v & (MAX_NODES as u32 - 1)
}

/// A stored key type: `u32` or `u64`, kept biased (top bit flipped).
pub(crate) trait Key: Plain + Ord + core::fmt::Debug {
    /// Bits.
    const BITS: u32;
    /// The largest biased key (the unbiased all-ones value): padding no key is below.
    const PAD: Self;
    /// The biased form of the low [`BITS`](Self::BITS) bits of `chunk`.
    fn bias(chunk: u64) -> Self;
    /// Signed order of biased keys = unsigned order of the keys.
    fn below(self, x: Self) -> bool;
    /// A leaf value kept in a key slot (the inline values of [`Compact`] leaves).
    fn from_value(v: u32) -> Self;
    /// The leaf value kept in this key slot.
    fn value(self) -> u32;
    /// The stored bits.
    fn raw(self) -> u64;
}

impl Key for u32 {
    const BITS: u32 = 32;
    const PAD: u32 = i32::MAX as u32;
    #[inline(always)]
    fn bias(chunk: u64) -> u32 {
        chunk as u32 ^ 1 << 31
    }
    #[inline(always)]
    fn below(self, x: u32) -> bool {
        (self as i32) < (x as i32)
    }
    #[inline(always)]
    fn from_value(v: u32) -> u32 {
        v
    }
    #[inline(always)]
    fn value(self) -> u32 {
        self
    }
    #[inline(always)]
    fn raw(self) -> u64 {
        self as u64
    }
}

impl Key for u64 {
    const BITS: u32 = 64;
    const PAD: u64 = i64::MAX as u64;
    #[inline(always)]
    fn bias(chunk: u64) -> u64 {
        chunk ^ 1 << 63
    }
    #[inline(always)]
    fn below(self, x: u64) -> bool {
        (self as i64) < (x as i64)
    }
    #[inline(always)]
    fn from_value(v: u32) -> u64 {
        v as u64
    }
    #[inline(always)]
    fn value(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn raw(self) -> u64 {
        self
    }
}

/// A node layout (see the module docs).
pub(crate) trait Layout: Copy + Send + Sync + 'static {
    /// The key type.
    type K: Key;
    /// Keys per inner node.
    const B: usize;
    /// Keys per leaf.
    const BL: usize;
    /// Key words per node slot (a node is `WORDS` keys long in the node array).
    const WORDS: usize;
    /// Leaf values inline after the leaf's keys (else in the values array).
    const INLINE: bool;
    /// Children per inner node.
    const F: u32 = Self::B as u32 + 1;
    /// A short name for `info`.
    const NAME: &'static str;
}

/// 64-bit keys, `B` per node (8: 64-byte nodes; 4: 32-byte nodes), values apart.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wide<const B: usize>;

impl<const B: usize> Layout for Wide<B> {
    type K = u64;
    const B: usize = B;
    const BL: usize = B;
    const WORDS: usize = B;
    const INLINE: bool = false;
    const NAME: &'static str = if B == 8 { "wide64x8" } else { "wide64x4" };
}

/// 32-bit keys, 16 per inner node; leaves of 8 keys and their 8 values in one line.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Compact;

impl Layout for Compact {
    type K = u32;
    const B: usize = 16;
    const BL: usize = 8;
    const WORDS: usize = 16;
    const INLINE: bool = true;
    const NAME: &'static str = "compact32";
}

/// First node of level `l` in a complete tree of fan-out `f`: `(f^l − 1) / (f − 1)`.
#[inline(always)]
pub(crate) fn level_start(f: u32, l: u32) -> u64 {
    (0..l).fold(0u64, |s, _| s * f as u64 + 1)
}

/// Nodes of every tree of a scheme, in one array (and the values array of layouts that
/// keep values apart), as the lookups read them.
pub(crate) struct Forest<L: Layout> {
    /// `nodes × L::WORDS` keys (inline leaf values are stored as keys' bits).
    pub(crate) keys: TableBuf<L::K>,
    /// `nodes × L::BL` values for [`Wide`] layouts; empty for [`Compact`].
    pub(crate) vals: TableBuf<u32>,
}

impl<L: Layout> Forest<L> {
    /// Nodes in the forest.
    pub(crate) fn nodes(&self) -> usize {
        self.keys.len() / L::WORDS
    }

    /// Bytes of keys and values.
    pub(crate) fn bytes(&self) -> usize {
        self.keys.len() * core::mem::size_of::<L::K>() + self.vals.len() * 4
    }
}

/// What a tree built by [`ForestBuilder::tree`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TreeShape {
    /// Its root node.
    pub root: u32,
    /// Its levels (1: one leaf).
    pub depth: u32,
    /// Its nodes (inner levels complete, leaves cut after the last).
    pub nodes: u32,
}

/// Collects trees into a [`Forest`].
pub(crate) struct ForestBuilder<L: Layout> {
    keys: Vec<L::K>,
    vals: Vec<u32>,
    scheme: &'static str,
}

impl<L: Layout> ForestBuilder<L> {
    pub(crate) fn new(scheme: &'static str) -> Self {
        ForestBuilder {
            keys: Vec::new(),
            vals: Vec::new(),
            scheme,
        }
    }

    /// Nodes so far.
    pub(crate) fn nodes(&self) -> usize {
        self.keys.len() / L::WORDS
    }

    /// Appends the tree over the biased keys `ends` (ascending, distinct) whose intervals
    /// (`ends.len() + 1` of them) have the values `vals`.
    pub(crate) fn tree(&mut self, ends: &[L::K], vals: &[u32]) -> Result<TreeShape, BuildError> {
        debug_assert_eq!(vals.len(), ends.len() + 1);
        debug_assert!(ends.windows(2).all(|w| w[0].below(w[1])));
        let (b, bl, f) = (L::B as u64, L::BL as u64, L::F);
        let n = ends.len() as u64;
        let leaves = n / bl + 1;
        // The fewest levels whose complete inner levels reach `leaves` leaves.
        let mut depth = 1u32;
        let mut reach = 1u64;
        while reach < leaves {
            reach *= f as u64;
            depth += 1;
        }
        let inner = level_start(f, depth - 1);
        let nodes = inner + leaves;
        let root = self.nodes();
        if depth > MAX_DEPTH || root as u64 + nodes > MAX_NODES as u64 {
            return Err(BuildError::CapacityExceeded {
                scheme: self.scheme.to_string(),
                what: "tree nodes",
                max: MAX_NODES as u64,
                requested: root as u64 + nodes,
            });
        }
        let e = |i: u64| -> L::K {
            if i < n {
                ends[i as usize]
            } else {
                L::K::PAD
            }
        };
        let words = L::WORDS;
        self.keys
            .resize(self.keys.len() + nodes as usize * words, L::K::PAD);
        if !L::INLINE {
            self.vals
                .resize(self.vals.len() + nodes as usize * L::BL, 0);
        }
        let base = root * words;
        // Inner levels: node i of level l (height h = depth - 1 - l).
        let mut first = 0u64;
        let mut width = 1u64;
        for l in 0..depth - 1 {
            let h = depth - 1 - l;
            let span = (f as u64).pow(h); // leaves under one node of this level
            let child_span = span / f as u64;
            for i in 0..width {
                if i * span >= leaves {
                    break; // never reached: every key of its parent pointing here is padding
                }
                let at = base + ((first + i) as usize) * words;
                for j in 0..b {
                    let m = i * span + (j + 1) * child_span;
                    self.keys[at + j as usize] = e(m * bl - 1);
                }
            }
            first += width;
            width *= f as u64;
        }
        debug_assert_eq!(first, inner);
        // Leaves.
        for k in 0..leaves {
            let node = (inner + k) as usize;
            let at = base + node * words;
            for j in 0..bl {
                self.keys[at + j as usize] = e(k * bl + j);
                let r = k * bl + j;
                let v = if r <= n { vals[r as usize] } else { 0 };
                if L::INLINE {
                    self.keys[at + (bl + j) as usize] = L::K::from_value(v);
                } else {
                    self.vals[(root + node) * L::BL + j as usize] = v;
                }
            }
        }
        Ok(TreeShape {
            root: root as u32,
            depth,
            nodes: nodes as u32,
        })
    }

    /// The forest, in lookup memory (64-byte aligned, huge pages when large). It has at
    /// least one node (node 0 is read by leaf steps whose result is dropped).
    pub(crate) fn finish(self) -> Forest<L> {
        let (mut keys, mut vals) = (self.keys, self.vals);
        if keys.is_empty() {
            keys.resize(L::WORDS, L::K::PAD);
            if !L::INLINE {
                vals.resize(L::BL, 0);
            }
        }
        Forest {
            keys: TableBuf::from_slice(&keys),
            vals: TableBuf::from_slice(&vals),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Searches a built tree the plain way (the scalar kernel's walk, written again).
    fn search<L: Layout>(f: &Forest<L>, shape: TreeShape, x: u64) -> u32 {
        let xb = L::K::bias(x);
        let mut rel = 0u64;
        let count = |node: u64, n: usize| -> u32 {
            let at = node as usize * L::WORDS;
            f.keys[at..at + n].iter().filter(|k| k.below(xb)).count() as u32
        };
        for _ in 1..shape.depth {
            let c = count(shape.root as u64 + rel, L::B);
            rel = rel * L::F as u64 + 1 + c as u64;
        }
        let node = shape.root as u64 + rel;
        let c = count(node, L::BL) as usize;
        if L::INLINE {
            f.keys[node as usize * L::WORDS + L::BL + c].value()
        } else {
            f.vals[node as usize * L::BL + c]
        }
    }

    fn check<L: Layout>(n: usize, stride: u64) {
        let starts: Vec<u64> = (0..=n as u64).map(|i| i * stride).collect();
        let ends: Vec<L::K> = starts[1..].iter().map(|&s| L::K::bias(s - 1)).collect();
        let vals: Vec<u32> = (0..=n as u32).map(|i| i + 1).collect();
        let mut b = ForestBuilder::<L>::new("t");
        // A first tree, so the second does not start at node 0.
        b.tree(&[L::K::bias(5)], &[7, 8]).unwrap();
        let shape = b.tree(&ends, &vals).unwrap();
        let f = b.finish();
        for (r, &s) in starts.iter().enumerate() {
            for x in [s, s + stride / 2, s + stride - 1] {
                assert_eq!(search(&f, shape, x), r as u32 + 1, "n {n} x {x}");
            }
        }
    }

    #[test]
    fn every_size_and_shape() {
        for n in (0..300).chain([2000, 4913, 4914, 5000, 20_000]) {
            check::<Compact>(n, 10);
            check::<Wide<8>>(n, 1 << 40);
            check::<Wide<4>>(n, 3);
        }
    }

    #[test]
    fn depth_grows_with_the_fanout() {
        let mut b = ForestBuilder::<Compact>::new("t");
        let keys: Vec<u32> = (0..7).map(u32::bias).collect();
        assert_eq!(b.tree(&keys, &[0; 8]).unwrap().depth, 1);
        let keys: Vec<u32> = (0..8).map(u32::bias).collect();
        let s = b.tree(&keys, &[0; 9]).unwrap();
        assert_eq!((s.depth, s.nodes), (2, 3));
        assert_eq!(level_start(17, 2), 18);
        assert_eq!(level_start(9, 3), 91);
    }
}

//! The scalar twin: node search by plain compares (the batched lookup of `batch.rs` over
//! it), and the one-key lookup every kernel is checked against.

use super::batch;
use super::build::chunk;
use super::front::{Front, LINES, LINE_KEYS, LINE_TAG, LINE_VALS};
use super::tree::{depth_of, root_of, Forest, Key, Layout, CHILD, MISS, SAME_CHUNK};
use super::walk::{NodeSearch, View};
use crate::prefix::Address;

/// Node search by one compare per key, summed (no branch).
pub(crate) struct Scalar;

impl NodeSearch for Scalar {
    #[inline(always)]
    unsafe fn count_masked<K: Key>(p: *const K, x: K, n: usize, mask: u32) -> u32 {
        let mut c = 0;
        for j in 0..n {
            // SAFETY: the caller's `n` keys are readable at `p`.
            c += (unsafe { *p.add(j) }.below(x) as u32) & (mask >> j & 1);
        }
        c
    }
}

/// The batched lookup with the scalar node search.
pub(crate) fn lookup_batch<A: Address, L: Layout>(
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: `v` views a built table; the scalar search needs no CPU feature.
    unsafe {
        if v.lines() {
            batch::lookup::<A, L, Scalar, true>(v, batch, addrs, out)
        } else {
            batch::lookup::<A, L, Scalar, false>(v, batch, addrs, out)
        }
    }
}

/// What one lookup read (for `profile`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Walk {
    /// The answer.
    pub value: u32,
    /// What the front gave: 0 an answer, 1 a tree, 2 a miss (3: no front; 4: an answer
    /// of the lines' summary).
    pub front: u8,
    /// Tree nodes read.
    pub nodes: u32,
    /// Trees searched.
    pub trees: u32,
}

/// The value of the interval holding `x` in the tree of child value `v` (bounds-checked
/// reads), and the nodes read.
fn search<L: Layout>(f: &Forest<L>, v: u32, x: L::K) -> (u32, u32) {
    let (root, depth) = (root_of(v) as usize, depth_of(v));
    let mut rel = 0usize;
    let count = |node: usize, n: usize| -> usize {
        let at = node * L::WORDS;
        f.keys[at..at + n].iter().filter(|k| k.below(x)).count()
    };
    for _ in 1..depth {
        rel = rel * L::F as usize + 1 + count(root + rel, L::B);
    }
    let node = root + rel;
    let c = count(node, L::BL);
    let value = if L::INLINE {
        f.keys[node * L::WORDS + L::BL + c].value()
    } else {
        f.vals[node * L::BL + c]
    };
    (value, depth)
}

/// One lookup, walked by scalar code with bounds-checked reads.
pub(crate) fn walk<A: Address, L: Layout>(
    f: &Forest<L>,
    main: u32,
    front: &Front,
    front_stage: u32,
    a: A,
) -> Walk {
    let w = <L::K as Key>::BITS;
    let bits = front.bits();
    let top = || (a.to_u128() >> (A::BITS as u32 - bits)) as u32;
    let (mut val, mut stage, front_kind) = match front {
        Front::None => (main, 0, 3),
        Front::Direct { table, .. } => (table[top() as usize], front_stage, 0),
        Front::Lines(f) => {
            let line = f.line(f.line_of(top()));
            let x = <u32 as Key>::bias(chunk(a, front_stage, 32));
            // A /32 the lines do not list: its /16's summary, if not the main tree.
            let (v, kind) = if line[LINE_TAG] == top() {
                let c = line[..LINE_KEYS].iter().filter(|k| k.below(x)).count();
                (line[LINE_VALS + c], 0)
            } else {
                match f.summary_of(top()) {
                    LINES => (MISS, 0),
                    s => (s, if s == MISS { 0 } else { 4 }),
                }
            };
            let same = v & CHILD != 0 && v & SAME_CHUNK != 0;
            (v, front_stage + !same as u32, kind)
        }
    };
    let mut walk = Walk {
        front: front_kind,
        ..Walk::default()
    };
    if front_kind == 0 && val & CHILD != 0 {
        walk.front = 1;
    }
    if val == MISS {
        walk.front = 2;
        val = main;
        stage = 0;
    }
    while val & CHILD != 0 {
        let (v, nodes) = search(f, val, L::K::bias(chunk(a, stage, w)));
        walk.nodes += nodes;
        walk.trees += 1;
        val = v;
        stage += 1;
    }
    walk.value = val;
    walk
}

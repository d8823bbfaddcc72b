//! The steps every batched lookup path is made of, over the node search ([`NodeSearch`]:
//! scalar in `scalar.rs`, AVX2 and AVX-512 in `kernel.rs`): the view of a
//! table's arrays, a group's lockstep descent of the main tree ([`main_lockstep`]), the
//! *lanes* (lookups left in a tree, stepped one node per pass over a packed list:
//! [`drain`]) and the search of a /32 line ([`line_value`]). `batch.rs` puts them
//! together.

use core::mem::MaybeUninit;

use super::build::chunk;
use super::front::{Front, LineFront, LINE_KEYS, LINE_TAG, LINE_VALS, LINE_WORDS};
use super::tree::{depth_of, root_of, Key, Layout, CHILD, MISS};
use crate::prefix::Address;
use crate::simd::prefetch;

/// The most keys per group.
pub(crate) const MAX_BATCH: usize = 128;

/// One node search, per instruction set.
pub(crate) trait NodeSearch: Sized {
    /// The keys below `x` among the `n` keys at `p` (`n` a multiple of 4 for 64-bit keys,
    /// of 8 for 32-bit keys).
    ///
    /// # Safety
    /// `p` is 32-byte aligned and `n` keys are readable there; the instructions the
    /// implementation uses are supported.
    // Inlined always: an outlined copy is compiled without its caller's target features,
    // and every intrinsic in it becomes a call.
    #[inline(always)]
    unsafe fn count<K: Key>(p: *const K, x: K, n: usize) -> u32 {
        // SAFETY: as this function's.
        unsafe { Self::count_masked(p, x, n, u32::MAX) }
    }

    /// [`count`](Self::count) over the keys whose bit is set in `mask` (bit `i`: key
    /// `i`; `n` ≤ 32).
    ///
    /// # Safety
    /// As [`count`](Self::count).
    unsafe fn count_masked<K: Key>(p: *const K, x: K, n: usize, mask: u32) -> u32;

    /// The front line values of IPv6 keys: each key's value ([`MISS`] if its /32 is not
    /// listed) into `res`, and the keys whose value is a child into `child` (bit `j % 64`
    /// of word `j / 64`: key `j`). By default [`line_values_with`] over this search.
    ///
    /// # Safety
    /// `f` is a built front; `keys.len()` ≤ `res.len()`, at most [`MAX_BATCH`] and at
    /// most `64 · child.len()`; the instructions the implementation uses are supported.
    #[inline(always)]
    unsafe fn line_values<A: Address>(
        f: &LineFront,
        keys: &[A],
        res: &mut [u32],
        child: &mut [u64],
    ) {
        // SAFETY: as this function's.
        unsafe { line_values_with::<A, Self>(f, keys, res, child) }
    }
}

/// What the lookups read, as raw pointers (the table outlives every lookup).
pub(crate) struct View<'a, L: Layout> {
    pub keys: *const L::K,
    pub vals: *const u32,
    /// The main tree (a child value; 0 when the front answers every key).
    pub main: u32,
    pub front: &'a Front,
    /// The key chunk of the front's trees.
    pub front_stage: u32,
    /// The first level of the main tree too large to stay in the first-level cache: the
    /// lockstep descent prefetches the nodes of this level and the deeper ones.
    pub prefetch_from: u32,
}

/// A pending lookup.
#[derive(Clone, Copy, Default)]
pub(super) struct Lane<K: Key> {
    /// The key's index in the group.
    pub(super) i: u32,
    /// Root node of its tree.
    pub(super) root: u32,
    /// Its node, relative to the root.
    pub(super) rel: u32,
    /// Levels left, the leaf included.
    pub(super) left: u32,
    /// The key chunk searched.
    pub(super) stage: u32,
    /// The chunk, biased.
    pub(super) x: K,
}

impl<L: Layout> View<'_, L> {
    /// True if the front is the /32 lines.
    pub(crate) fn lines(&self) -> bool {
        matches!(self.front, Front::Lines(_))
    }

    /// The first key of node `n`.
    ///
    /// # Safety
    /// `n` is a node of the forest.
    #[inline(always)]
    pub(super) unsafe fn node(&self, n: u32) -> *const L::K {
        // SAFETY: the caller's node is inside the forest's key array.
        unsafe { self.keys.add(n as usize * L::WORDS) }
    }

    /// The value of the interval holding `x` in leaf node `n`.
    ///
    /// # Safety
    /// `n` is a leaf node of the forest; `S`'s instructions are supported.
    #[inline(always)]
    pub(super) unsafe fn leaf<S: NodeSearch>(&self, n: u32, x: L::K) -> u32 {
        // SAFETY: `n` is a leaf: `BL` keys, then (inline) `BL` values, or `BL` values at
        // `n · BL` in the values array.
        unsafe {
            let p = self.node(n);
            let c = S::count(p, x, L::BL) as usize;
            if L::INLINE {
                (*p.add(L::BL + c)).value()
            } else {
                *self.vals.add(n as usize * L::BL + c)
            }
        }
    }

    /// A lane for the key `a` (index `i`) in the tree of child value `v`, searched with
    /// chunk `stage` (the drain prefetches its root).
    #[inline(always)]
    pub(super) unsafe fn lane<A: Address>(&self, i: usize, v: u32, stage: u32, a: A) -> Lane<L::K> {
        let root = root_of(v);
        Lane {
            i: i as u32,
            root,
            rel: 0,
            left: depth_of(v),
            stage,
            x: L::K::bias(chunk(a, stage, <L::K as Key>::BITS)),
        }
    }
}

/// The group descends the main tree in lockstep; keys that end in a child become lanes,
/// written to `lanes` (key `j` of the group as `index(j)`). Returns how many.
#[inline(always)]
pub(super) unsafe fn main_lockstep<A: Address, L: Layout, S: NodeSearch>(
    v: &View<'_, L>,
    keys: &[A],
    res: &mut [u32],
    lanes: &mut [MaybeUninit<Lane<L::K>>],
    index: impl Fn(usize) -> usize,
) -> usize {
    let n = keys.len();
    let (root, depth) = (root_of(v.main), depth_of(v.main));
    let mut x = [<L::K as Key>::PAD; MAX_BATCH];
    let mut rel = [0u32; MAX_BATCH];
    for (xj, &a) in x.iter_mut().zip(keys) {
        *xj = L::K::bias(chunk(a, 0, <L::K as Key>::BITS));
    }
    // SAFETY: the main tree's root is a node of the forest.
    let base = unsafe { v.node(root) };
    for level in 1..depth {
        let cold = level >= v.prefetch_from;
        for (r, &xj) in rel[..n].iter_mut().zip(&x) {
            // SAFETY: `*r` is a node of the main tree's level `level - 1`; its child is a
            // node of the next level (the build's invariant).
            unsafe {
                let c = S::count(base.add(*r as usize * L::WORDS), xj, L::B);
                // Child c of node i is i·F + 1 + c.
                *r = *r * L::F + 1 + c;
                if cold {
                    prefetch(base.add(*r as usize * L::WORDS));
                }
            }
        }
    }
    let node = rel;
    let mut pending = 0;
    for j in 0..n {
        // SAFETY: `node[j]` is a leaf of the main tree.
        let val = unsafe { v.leaf::<S>(root + node[j], x[j]) };
        if val & CHILD == 0 {
            res[j] = val;
        } else {
            // SAFETY: a leaf's child value names a tree of the forest.
            lanes[pending].write(unsafe { v.lane(index(j), val, 1, keys[j]) });
            pending += 1;
        }
    }
    pending
}

/// The first `n` entries of `a`, written.
///
/// # Safety
/// Entries `0..n` of `a` are initialised.
#[inline(always)]
pub(super) unsafe fn written<T>(a: &[MaybeUninit<T>], n: usize) -> &[T] {
    debug_assert!(n <= a.len());
    // SAFETY: the caller's entries are initialised; `MaybeUninit<T>` has `T`'s layout.
    unsafe { core::slice::from_raw_parts(a.as_ptr() as *const T, n) }
}

/// The front line values of a group of IPv6 keys (the plain way, over `S`'s node search):
/// the perfect hash's lines for the whole group, prefetched, then each searched. Writes
/// each key's value ([`MISS`] if its /32 is not listed) and the keys whose value is a
/// child (bit `j % 64` of `child[j / 64]`: key `j`).
///
/// # Safety
/// `f` is a built front; `keys.len()` ≤ [`MAX_BATCH`], ≤ `res.len()` and ≤
/// `64 · child.len()`; `S`'s instructions are supported.
#[inline(always)]
pub(crate) unsafe fn line_values_with<A: Address, S: NodeSearch>(
    f: &LineFront,
    keys: &[A],
    res: &mut [u32],
    child: &mut [u64],
) {
    let lines = f.lines.as_ptr();
    let mut at = [MaybeUninit::<u32>::uninit(); MAX_BATCH];
    for (slot, &a) in at.iter_mut().zip(keys) {
        let t = (a.to_u128() >> 96) as u32;
        let line_at = f.line_of_fast(t) as u32;
        slot.write(line_at);
        // SAFETY: `line_of_fast` is a line of the table.
        prefetch(unsafe { lines.add(line_at as usize * LINE_WORDS) });
    }
    // Sixty-four keys per word of `child`, their bits gathered in a register.
    for (w, (keys, res)) in keys.chunks(64).zip(res.chunks_mut(64)).enumerate() {
        let mut bits = 0u64;
        for (j, (&a, r)) in keys.iter().zip(res.iter_mut()).enumerate() {
            let k = a.to_u128();
            // Bits 32..63, biased: the line's key chunk.
            let x = (k >> 64) as u32 ^ 1 << 31;
            // SAFETY: `at[64 w + j]` was written above: a line of the table.
            let out = unsafe {
                let line_at = at[64 * w + j].assume_init();
                line_value::<S>(
                    lines.add(line_at as usize * LINE_WORDS),
                    x,
                    (k >> 96) as u32,
                )
            };
            *r = out;
            bits |= ((out >> 31) as u64) << j;
        }
        child[w] |= bits;
    }
}

/// The value line `line` gives a key whose bits 32–63 (biased) are `x` and whose /32 is
/// `tag`: the value of the interval holding `x` among the line's seven keys (one compare
/// of the eight words, the tag's lane masked off), or [`MISS`] when the line is another
/// /32's.
///
/// # Safety
/// `line` is a line of a built front (64-byte aligned: seven keys, a tag and eight
/// values); `S`'s instructions are supported.
#[inline(always)]
pub(crate) unsafe fn line_value<S: NodeSearch>(line: *const u32, x: u32, tag: u32) -> u32 {
    // SAFETY: as this function's: the count is at most seven, a value of the line.
    unsafe {
        let c = S::count_masked(line, x, LINE_VALS, (1 << LINE_KEYS) - 1);
        let val = *line.add(LINE_VALS + c as usize);
        // All ones when the line is the key's /32's.
        let m = ((*line.add(LINE_TAG) == tag) as u32).wrapping_neg();
        val & m | MISS & !m
    }
}

/// Steps the `pending` lanes one node per pass until every one has its answer.
#[inline(always)]
pub(super) unsafe fn drain<A: Address, L: Layout, S: NodeSearch>(
    v: &View<'_, L>,
    keys: &[A],
    res: &mut [u32],
    lanes: &mut [MaybeUninit<Lane<L::K>>; MAX_BATCH],
    mut pending: usize,
) {
    // The lanes' nodes, prefetched before the first pass: a lane waits in the list while
    // later groups are looked up, so a prefetch when it was made would have left the
    // first-level cache by now.
    // SAFETY: lanes `0..pending` are written (the caller's).
    for l in unsafe { written(&lanes[..], pending) } {
        // SAFETY: a lane's node is a node of its tree.
        prefetch(unsafe { v.node(l.root + l.rel) });
    }
    while pending > 0 {
        let mut kept = 0;
        for j in 0..pending {
            // SAFETY: lanes `0..pending` are written (and `kept` ≤ `j`).
            let mut l = unsafe { lanes[j].assume_init() };
            let node = l.root + l.rel;
            // SAFETY: a lane's node is a node of its tree (inner while `left > 1`, else a
            // leaf), and a leaf's child value names a tree of the forest.
            unsafe {
                if l.left > 1 {
                    let c = S::count(v.node(node), l.x, L::B);
                    l.rel = l.rel * L::F + 1 + c;
                    l.left -= 1;
                    prefetch(v.node(l.root + l.rel));
                } else {
                    let val = v.leaf::<S>(node, l.x);
                    if val & CHILD == 0 {
                        res[l.i as usize] = val;
                        continue;
                    }
                    l = v.lane(l.i as usize, val, l.stage + 1, keys[l.i as usize]);
                }
            }
            lanes[kept].write(l);
            kept += 1;
        }
        pending = kept;
    }
}

//! The batched lookup, written once over the node search ([`NodeSearch`]: scalar in
//! `scalar.rs`, AVX2 in `avx2.rs`, AVX-512 in `avx512.rs`, which also brings its own
//! stage of the /32 lines).
//!
//! Keys are taken in groups of `batch` (the paper's `M`):
//!
//! * **Without a front** the group descends the main tree in lockstep, level by level
//!   (the paper's batching): every key of the group reads its node of a level before any
//!   reads the next level, so the group's reads of one level are independent and overlap
//!   in the memory system; each child is prefetched as soon as it is known.
//! * **With a front** every key of the group first reads its front entry: the direct
//!   table, or its /32's line (the perfect hash's pilots for the whole group, the lines
//!   prefetched, then searched), then at most one leaf, without a branch on what the
//!   front gave.
//!
//! With the /32 lines, keys the line leaves in a tree wait in [`Pending`], by the depth of
//! their tree, gathered over many groups; when [`MAX_BATCH`] could no longer wait for
//! trees of one depth they descend those trees together, level by level in lockstep, as a
//! group descends the main tree. When the lookup ends, the keys still waiting, whatever
//! their depth, are stepped together as lanes (below). Other keys left in a tree (by
//! the main tree or the direct front, or past a leaf into the next key chunk's tree:
//! routes longer than the chunk) become *lanes*, stepped one node per pass over a packed
//! list (a lane that finishes writes its answer and leaves the list), so that the reads
//! of a pass are again independent whatever depth each lane's tree has.

use core::mem::MaybeUninit;
use core::ops::Range;

use super::build::chunk;
use super::front::{Front, LineFront, LINES, LINE_KEYS, LINE_TAG, LINE_VALS, LINE_WORDS};
use super::tree::{
    depth_of, root_of, Key, Layout, CHILD, DEPTH_MASK, DEPTH_SHIFT, MISS, SAME_CHUNK,
};
use crate::prefix::Address;
use crate::simd::{prefetch, prefetch_keys_ahead};

/// The most keys per group.
pub(crate) const MAX_BATCH: usize = 128;
/// Keys per window of the lanes' indices.
const WINDOW: usize = 1 << 24;
/// How many keys ahead of the group looked up the lookup prefetches the key stream.
const KEYS_AHEAD: usize = 128;

/// One node search, per instruction set.
pub(crate) trait NodeSearch: Sized {
    /// The keys below `x` among the `n` keys at `p` (`n` a multiple of 4 for 64-bit keys,
    /// of 8 for 32-bit keys).
    ///
    /// # Safety
    /// `p` is 32-byte aligned and `n` keys are readable there; the instructions the
    /// implementation uses are supported.
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

/// `keys` as `u128`s when `A` is IPv6.
#[inline(always)]
pub(crate) fn v6_keys<A: Address>(keys: &[A]) -> Option<&[u128]> {
    if A::BITS != 128 || core::mem::size_of::<A>() != 16 {
        return None;
    }
    // SAFETY: `Address` is sealed and implemented for `u32` and `u128` only, so a 128-bit
    // `A` is `u128`: same size, alignment and validity.
    Some(unsafe { core::slice::from_raw_parts(keys.as_ptr() as *const u128, keys.len()) })
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
struct Lane<K: Key> {
    /// The key's index in the group.
    i: u32,
    /// Root node of its tree.
    root: u32,
    /// Its node, relative to the root.
    rel: u32,
    /// Levels left, the leaf included.
    left: u32,
    /// The key chunk searched.
    stage: u32,
    /// The chunk, biased.
    x: K,
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
    unsafe fn node(&self, n: u32) -> *const L::K {
        // SAFETY: the caller's node is inside the forest's key array.
        unsafe { self.keys.add(n as usize * L::WORDS) }
    }

    /// The value of the interval holding `x` in leaf node `n`.
    ///
    /// # Safety
    /// `n` is a leaf node of the forest; `S`'s instructions are supported.
    #[inline(always)]
    unsafe fn leaf<S: NodeSearch>(&self, n: u32, x: L::K) -> u32 {
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
    unsafe fn lane<A: Address>(&self, i: usize, v: u32, stage: u32, a: A) -> Lane<L::K> {
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

/// Looks up `addrs` into `out` (as long) in groups of `batch` (1 ≤ `batch` ≤ [`MAX_BATCH`]):
/// [`lookup_lines`] when `LINES` (the front is the /32 lines), else [`lookup_trees`]. Each
/// is compiled apart (the kernels call this with `LINES` known), so that neither's code
/// or stack frame shapes the other's.
///
/// # Safety
/// `v` views a table as the build made it (every child value names a tree of its forest,
/// the front's values are leaf values of it), with the /32 lines as its front if and only
/// if `LINES`; `S`'s instructions are supported.
#[inline(always)]
pub(crate) unsafe fn lookup<A: Address, L: Layout, S: NodeSearch, const LINES: bool>(
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    debug_assert!((1..=MAX_BATCH).contains(&batch) && out.len() >= addrs.len());
    debug_assert_eq!(LINES, v.lines());
    // SAFETY: as this function's.
    unsafe {
        match v.front {
            Front::Lines(f) if LINES => lookup_lines::<A, L, S>(v, f, batch, addrs, out),
            _ => lookup_trees::<A, L, S>(v, batch, addrs, out),
        }
    }
}

/// [`lookup`] without a front or with the direct one: each group descends the main tree
/// or reads its direct entries; keys left in a tree become lanes, stepped together once
/// they could fill the list.
#[inline(always)]
unsafe fn lookup_trees<A: Address, L: Layout, S: NodeSearch>(
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    let mut lanes = [MaybeUninit::<Lane<L::K>>::uninit(); MAX_BATCH];
    // Windows of keys whose indices fit a lane's `u32`.
    for (addrs, out) in addrs.chunks(WINDOW).zip(out.chunks_mut(WINDOW)) {
        let mut pending = 0;
        for start in (0..addrs.len()).step_by(batch) {
            let end = addrs.len().min(start + batch);
            let (keys, res) = (&addrs[start..end], &mut out[start..end]);
            let free = &mut lanes[pending..pending + batch];
            // SAFETY: as `lookup`'s.
            pending += unsafe {
                match v.front {
                    Front::Direct { table, bits } => {
                        direct_pass::<A, L, S>(v, table, *bits, keys, res, free, start)
                    }
                    _ => main_lockstep::<A, L, S>(v, keys, res, free, |j| start + j),
                }
            };
            // The lanes of several groups are stepped together once they could fill
            // the list, so that the passes over them are long and their reads overlap.
            if pending + batch > MAX_BATCH {
                // SAFETY: as `lookup`'s.
                unsafe { drain::<A, L, S>(v, addrs, out, &mut lanes, pending) };
                pending = 0;
            }
        }
        // SAFETY: as `lookup`'s.
        unsafe { drain::<A, L, S>(v, addrs, out, &mut lanes, pending) };
    }
}

/// [`lookup`] with the /32 lines: each group reads its lines; keys left in a tree wait in
/// [`Pending`].
#[inline(always)]
unsafe fn lookup_lines<A: Address, L: Layout, S: NodeSearch>(
    v: &View<'_, L>,
    f: &LineFront,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    let mut pending = Pending::<L::K>::new();
    // Made once: a group's keys of unlisted /32s are held here, and leave before the next
    // group's line stage.
    let mut missed = Missed::<A>::new();
    // Windows of keys whose indices fit a pending key's `u32`.
    for (addrs, out) in addrs.chunks(WINDOW).zip(out.chunks_mut(WINDOW)) {
        for start in (0..addrs.len()).step_by(batch) {
            // The key stream, `KEYS_AHEAD` keys ahead of the group looked up (the line
            // stage's misses starve the stream prefetcher; the tree descents of the other
            // fronts measured no faster with it).
            prefetch_keys_ahead(addrs, start, batch, KEYS_AHEAD);
            let group = start..addrs.len().min(start + batch);
            // SAFETY: as `lookup`'s; a group adds at most one pending key per key.
            unsafe {
                pending.make_room::<A, L, S>(v, addrs, out, group.len());
                line_pass::<A, L, S>(v, f, addrs, out, group, &mut pending, &mut missed);
            }
        }
        // SAFETY: as `lookup`'s.
        unsafe { pending.finish::<A, L, S>(v, addrs, out) };
    }
}

/// The group descends the main tree in lockstep; keys that end in a child become lanes,
/// written to `lanes` (key `j` of the group as `index(j)`). Returns how many.
#[inline(always)]
unsafe fn main_lockstep<A: Address, L: Layout, S: NodeSearch>(
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

/// Every key of the group reads its direct front entry, then one leaf step (see below);
/// the rest become lanes, written to `lanes` (key `j` of the group as `base + j`).
/// Returns how many.
#[inline(always)]
unsafe fn direct_pass<A: Address, L: Layout, S: NodeSearch>(
    v: &View<'_, L>,
    table: &[u32],
    bits: u32,
    keys: &[A],
    res: &mut [u32],
    lanes: &mut [MaybeUninit<Lane<L::K>>],
    base: usize,
) -> usize {
    let w = <L::K as Key>::BITS;
    let mut pending = 0;
    for (j, (&a, r)) in keys.iter().zip(res.iter_mut()).enumerate() {
        let val = table[(a.to_u128() >> (A::BITS as u32 - bits)) as usize];
        let x = L::K::bias(chunk(a, v.front_stage, w));
        // One leaf step for every key, without a branch on what the front gave: a child
        // of one level (one leaf line) is searched now; for any other value the step
        // reads node 0 (cached) and its result is dropped.
        let one_leaf = val & (CHILD | DEPTH_MASK) == CHILD | 1 << DEPTH_SHIFT;
        // All ones when `one_leaf`: the selections below are masks, not branches.
        let m = (one_leaf as u32).wrapping_neg();
        let node = root_of(val) & m;
        // SAFETY: `node` is a leaf of the forest (a one-level tree's root), or node 0,
        // whose line is readable as a leaf: a leaf step reads `BL` keys and a value
        // inside the node, or a value at `node · BL` in the values array, which holds
        // every node's slots.
        let found = unsafe { v.leaf::<S>(node, x) };
        let out = found & m | val & !m;
        *r = out;
        if out & CHILD != 0 {
            // SAFETY: child values name trees of the forest.
            lanes[pending].write(unsafe {
                if one_leaf {
                    v.lane(base + j, found, v.front_stage + 1, a)
                } else {
                    v.lane(base + j, val, v.front_stage, a)
                }
            });
            pending += 1;
        }
    }
    pending
}

/// The keys `group` of `keys` read their /32's front line ([`NodeSearch::line_values`]).
/// Keys the line leaves in a tree (a child value) are added to `pending`. Of the keys
/// whose /32 is not listed ([`MISS`]: no route begins in it), those whose /16 the summary
/// answers take its value; the others (their /16 holds a listed /32) descend the main
/// tree together, as the paper's lookup does, held in `missed` (empty before and after).
#[inline(always)]
unsafe fn line_pass<A: Address, L: Layout, S: NodeSearch>(
    v: &View<'_, L>,
    f: &LineFront,
    keys: &[A],
    res: &mut [u32],
    group: Range<usize>,
    pending: &mut Pending<L::K>,
    missed: &mut Missed<A>,
) {
    debug_assert!(A::BITS == 128 && <L::K as Key>::BITS == 32);
    let mut child = [0u64; MAX_BATCH / 64];
    let start = group.start;
    // SAFETY: as this function's.
    unsafe { S::line_values(f, &keys[group.clone()], &mut res[group], &mut child) };
    for (w, &bits) in child.iter().enumerate() {
        let mut bits = bits;
        while bits != 0 {
            let j = start + 64 * w + bits.trailing_zeros() as usize;
            bits &= bits - 1;
            let out = res[j];
            if out == MISS {
                let s = f.summary_of((keys[j].to_u128() >> 96) as u32);
                if s != LINES {
                    res[j] = s;
                    continue;
                }
                missed.push(j, keys[j]);
                if missed.n == MAX_BATCH {
                    // SAFETY: as this function's.
                    unsafe { missed.descend::<L, S>(v, res, pending) };
                }
                continue;
            }
            let stage = if out & SAME_CHUNK != 0 {
                v.front_stage
            } else {
                v.front_stage + 1
            };
            // SAFETY: a line's child values name trees of the forest.
            unsafe { pending.add::<A, L>(v, keys, j, out, stage) };
        }
    }
    // SAFETY: as this function's.
    unsafe { missed.descend::<L, S>(v, res, pending) };
}

/// The first `n` entries of `a`, written.
///
/// # Safety
/// Entries `0..n` of `a` are initialised.
#[inline(always)]
unsafe fn written<T>(a: &[MaybeUninit<T>], n: usize) -> &[T] {
    debug_assert!(n <= a.len());
    // SAFETY: the caller's entries are initialised; `MaybeUninit<T>` has `T`'s layout.
    unsafe { core::slice::from_raw_parts(a.as_ptr() as *const T, n) }
}

/// Keys whose /32 the front does not list, packed, to descend the main tree together
/// ([`main_lockstep`]) as soon as their group's line stage is done.
struct Missed<A> {
    keys: [MaybeUninit<A>; MAX_BATCH],
    /// Each key's index in the results.
    at: [MaybeUninit<u32>; MAX_BATCH],
    /// Keys held.
    n: usize,
}

impl<A: Address> Missed<A> {
    fn new() -> Self {
        Missed {
            keys: [MaybeUninit::uninit(); MAX_BATCH],
            at: [MaybeUninit::uninit(); MAX_BATCH],
            n: 0,
        }
    }

    /// Adds key `a`, whose result is `at` (fewer than [`MAX_BATCH`] held).
    #[inline(always)]
    fn push(&mut self, at: usize, a: A) {
        self.keys[self.n].write(a);
        self.at[self.n].write(at as u32);
        self.n += 1;
    }

    /// The held keys descend the main tree in lockstep (their values into `res` at their
    /// indices, the keys it leaves in a tree as lanes of `pending`); holds no key after.
    ///
    /// # Safety
    /// As [`main_lockstep`]'s; every held key's index is below `res.len()`, and
    /// `pending`'s lane list has room for them all.
    #[inline(always)]
    unsafe fn descend<L: Layout, S: NodeSearch>(
        &mut self,
        v: &View<'_, L>,
        res: &mut [u32],
        pending: &mut Pending<L::K>,
    ) {
        let n = core::mem::take(&mut self.n);
        if n == 0 {
            return;
        }
        // SAFETY: entries `0..n` were written by `push`.
        let (held, at) = unsafe { (written(&self.keys, n), written(&self.at, n)) };
        let mut found = [0u32; MAX_BATCH];
        // SAFETY: the caller's.
        pending.lanes_n += unsafe {
            main_lockstep::<A, L, S>(v, held, &mut found[..n], pending.free_lanes(), |m| {
                at[m] as usize
            })
        };
        for (&i, &value) in at.iter().zip(&found[..n]) {
            res[i as usize] = value;
        }
    }
}

/// Tree depths whose pending lookups are kept by depth and descend in lockstep
/// ([`Pending`]); lookups in deeper trees are lanes.
const LOCKSTEP_DEPTHS: usize = 8;

/// Pending lookups in trees of one depth, packed: each key's index, its tree's root
/// node, its key chunk (biased) and which chunk that is.
struct Bucket<K> {
    at: [MaybeUninit<u32>; MAX_BATCH],
    root: [MaybeUninit<u32>; MAX_BATCH],
    x: [MaybeUninit<K>; MAX_BATCH],
    stage: [MaybeUninit<u32>; MAX_BATCH],
}

/// The lookups the /32 lines leave in a further tree, pending.
///
/// A key whose tree has `d` ≤ [`LOCKSTEP_DEPTHS`] levels waits with the other keys of
/// depth-`d` trees, gathered over many groups; when the next group's keys might not fit
/// (and when the lookup ends) they descend their trees together, level by level in
/// lockstep as the main tree's groups do, every read of a level independent of the
/// others: the whole descent is a few tight loops, without a branch on the key. Keys
/// whose tree continues past a leaf into the next key chunk's tree (routes longer than
/// the chunk), keys of deeper trees, and the main tree's (for keys whose /32 is not
/// listed) become *lanes* instead: stepped one node per pass over a packed list
/// ([`drain`]).
pub(crate) struct Pending<K: Key> {
    /// Keys waiting, per depth.
    waiting: [usize; LOCKSTEP_DEPTHS],
    /// At least the most keys waiting for one depth.
    fullest: usize,
    buckets: [Bucket<K>; LOCKSTEP_DEPTHS],
    /// Lanes `0..lanes_n` are written.
    lanes: [MaybeUninit<Lane<K>>; MAX_BATCH],
    lanes_n: usize,
}

impl<K: Key> Pending<K> {
    fn new() -> Self {
        Pending {
            waiting: [0; LOCKSTEP_DEPTHS],
            fullest: 0,
            // SAFETY: a bucket is arrays of `MaybeUninit` only, which need no
            // initialisation (and are not written here: a lookup call makes one
            // `Pending`, so its arrays must cost nothing to make).
            buckets: unsafe { MaybeUninit::uninit().assume_init() },
            lanes: [MaybeUninit::uninit(); MAX_BATCH],
            lanes_n: 0,
        }
    }

    /// The free end of the lane list (at least as long as the room last made).
    #[inline(always)]
    fn free_lanes(&mut self) -> &mut [MaybeUninit<Lane<K>>] {
        &mut self.lanes[self.lanes_n..]
    }

    /// Makes room for `n` more [`add`](Self::add)s: the keys of every depth that could
    /// overflow descend their trees, and the lanes are stepped if they could overflow.
    ///
    /// # Safety
    /// As [`add`](Self::add)'s.
    #[inline(always)]
    unsafe fn make_room<A: Address, L: Layout<K = K>, S: NodeSearch>(
        &mut self,
        v: &View<'_, L>,
        keys: &[A],
        res: &mut [u32],
        n: usize,
    ) {
        if self.fullest + n > MAX_BATCH {
            for d in 1..=LOCKSTEP_DEPTHS {
                let waiting = self.waiting[d - 1];
                if waiting > 0 && waiting + n > MAX_BATCH {
                    // SAFETY: as this function's.
                    unsafe { self.descend::<A, L, S>(v, keys, res, d) };
                }
            }
            self.fullest = self.waiting.iter().copied().max().unwrap_or(0);
        }
        // SAFETY: as this function's.
        unsafe { self.room_for_lanes::<A, L, S>(v, keys, res, n) };
    }

    /// Makes room for `n` more lanes: the lanes are stepped if they could overflow.
    ///
    /// # Safety
    /// As [`add`](Self::add)'s.
    #[inline(always)]
    unsafe fn room_for_lanes<A: Address, L: Layout<K = K>, S: NodeSearch>(
        &mut self,
        v: &View<'_, L>,
        keys: &[A],
        res: &mut [u32],
        n: usize,
    ) {
        if self.lanes_n > 0 && self.lanes_n + n > MAX_BATCH {
            // SAFETY: as this function's.
            unsafe { drain::<A, L, S>(v, keys, res, &mut self.lanes, self.lanes_n) };
            self.lanes_n = 0;
        }
    }

    /// Key `i` of `keys` continues in the tree of child value `tree`, searched with key
    /// chunk `stage`; its answer goes to `res[i]` (before [`finish`](Self::finish) returns).
    ///
    /// # Safety
    /// `tree` names a tree of `v`'s forest; `i < keys.len() ≤ res.len()`, and every key
    /// pending is a key of `keys` (the same slices until `finish`); room was made
    /// ([`make_room`](Self::make_room)) for this key; `S`'s instructions are supported.
    #[inline(always)]
    unsafe fn add<A: Address, L: Layout<K = K>>(
        &mut self,
        v: &View<'_, L>,
        keys: &[A],
        i: usize,
        tree: u32,
        stage: u32,
    ) {
        let a = keys[i];
        let d = depth_of(tree) as usize;
        if (1..=LOCKSTEP_DEPTHS).contains(&d) {
            let (b, n) = (&mut self.buckets[d - 1], self.waiting[d - 1]);
            b.at[n].write(i as u32);
            b.root[n].write(root_of(tree));
            // Fetched now into the outer caches: the descent, many groups later, finds
            // the root there rather than in memory.
            // SAFETY: `tree` names a tree of the forest.
            prefetch(unsafe { v.node(root_of(tree)) });
            b.x[n].write(K::bias(chunk(a, stage, K::BITS)));
            b.stage[n].write(stage);
            self.waiting[d - 1] = n + 1;
            self.fullest = self.fullest.max(n + 1);
        } else {
            // SAFETY: as this function's.
            self.lanes[self.lanes_n].write(unsafe { v.lane(i, tree, stage, a) });
            self.lanes_n += 1;
        }
    }

    /// The keys waiting in trees of depth `d` descend them together, level by level.
    ///
    /// # Safety
    /// As [`add`](Self::add)'s; `1 ≤ d ≤ LOCKSTEP_DEPTHS`.
    #[inline(always)]
    unsafe fn descend<A: Address, L: Layout<K = K>, S: NodeSearch>(
        &mut self,
        v: &View<'_, L>,
        keys: &[A],
        res: &mut [u32],
        d: usize,
    ) {
        // Room for a lane per key, should each continue into a further tree.
        // SAFETY: as this function's.
        unsafe { self.room_for_lanes::<A, L, S>(v, keys, res, self.waiting[d - 1]) };
        let b = &self.buckets[d - 1];
        let n = core::mem::take(&mut self.waiting[d - 1]);
        // SAFETY: entries `0..n` were written by `add`.
        let (at, root, x, stage) = unsafe {
            (
                written(&b.at, n),
                written(&b.root, n),
                written(&b.x, n),
                written(&b.stage, n),
            )
        };
        // The keys waited while later groups were looked up: their roots are fetched
        // again, all at once.
        for &r in root {
            // SAFETY: `r` is a tree's root node.
            prefetch(unsafe { v.node(r) });
        }
        // Each key's node, and the same relative to its tree's root (kept both: the
        // descent reads the node without an add, measured faster).
        let mut node = [0u32; MAX_BATCH];
        node[..n].copy_from_slice(root);
        let mut rel = [0u32; MAX_BATCH];
        for _ in 1..d {
            let keys_roots = x.iter().zip(root);
            for ((r, nd), (&xj, &rt)) in rel[..n].iter_mut().zip(&mut node).zip(keys_roots) {
                // SAFETY: `*nd` is an inner node of a tree with levels below it; its child
                // is a node of that tree (the build's invariant).
                unsafe {
                    let c = S::count(v.node(*nd), xj, L::B);
                    *r = *r * L::F + 1 + c;
                    *nd = rt + *r;
                    prefetch(v.node(*nd));
                }
            }
        }
        let mut cont = 0;
        let mut more = [0u32; MAX_BATCH];
        for e in 0..n {
            // SAFETY: `node[e]` is a leaf of the key's tree.
            let val = unsafe { v.leaf::<S>(node[e], x[e]) };
            res[at[e] as usize] = val;
            // Rare: the interval continues in the next key chunk's tree.
            more[cont] = e as u32;
            cont += (val & CHILD != 0) as usize;
        }
        for &e in &more[..cont] {
            let (i, e) = (at[e as usize] as usize, e as usize);
            // SAFETY: a leaf's child value names a tree of the forest; the list has room
            // (made above).
            self.lanes[self.lanes_n].write(unsafe { v.lane(i, res[i], stage[e] + 1, keys[i]) });
            self.lanes_n += 1;
        }
    }

    /// Every pending key gets its answer.
    ///
    /// The keys still waiting become lanes while the list has room, so that the keys of
    /// every depth step through their trees together (a descent per depth would wait for
    /// each depth's misses in turn: at the end of a short call, a few keys per depth);
    /// a depth whose keys do not fit descends in lockstep. Then the lanes are stepped.
    ///
    /// # Safety
    /// As [`add`](Self::add)'s.
    #[inline(always)]
    unsafe fn finish<A: Address, L: Layout<K = K>, S: NodeSearch>(
        &mut self,
        v: &View<'_, L>,
        keys: &[A],
        res: &mut [u32],
    ) {
        for d in 1..=LOCKSTEP_DEPTHS {
            let n = self.waiting[d - 1];
            if n == 0 {
                continue;
            }
            if self.lanes_n + n > MAX_BATCH {
                // SAFETY: as this function's.
                unsafe { self.descend::<A, L, S>(v, keys, res, d) };
                continue;
            }
            self.waiting[d - 1] = 0;
            let b = &self.buckets[d - 1];
            // SAFETY: entries `0..n` were written by `add`.
            let (at, root, x, stage) = unsafe {
                (
                    written(&b.at, n),
                    written(&b.root, n),
                    written(&b.x, n),
                    written(&b.stage, n),
                )
            };
            let free = &mut self.lanes[self.lanes_n..self.lanes_n + n];
            let entries = at.iter().zip(root).zip(x.iter().zip(stage));
            for (lane, ((&i, &root), (&x, &stage))) in free.iter_mut().zip(entries) {
                let left = d as u32;
                lane.write(Lane {
                    i,
                    root,
                    rel: 0,
                    left,
                    stage,
                    x,
                });
            }
            self.lanes_n += n;
        }
        self.fullest = 0;
        // SAFETY: as this function's: lanes `0..lanes_n` are written.
        unsafe { drain::<A, L, S>(v, keys, res, &mut self.lanes, self.lanes_n) };
        self.lanes_n = 0;
    }
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
unsafe fn drain<A: Address, L: Layout, S: NodeSearch>(
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

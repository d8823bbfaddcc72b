//! The lookups the /32 lines leave waiting (an lpmkit extension to the paper's batching):
//! keys whose /32 is not listed, held for the main tree ([`Missed`]), and keys left in a
//! further tree, kept by the depth of their tree until enough wait to descend together
//! ([`Pending`]).

use core::mem::MaybeUninit;

use super::build::chunk;
use super::tree::{depth_of, root_of, Key, Layout, CHILD};
use super::walk::{drain, main_lockstep, written, Lane, NodeSearch, View, MAX_BATCH};
use crate::prefix::Address;
use crate::simd::prefetch;

/// Keys whose /32 the front does not list, packed, to descend the main tree together
/// ([`main_lockstep`]) as soon as their group's line stage is done.
pub(super) struct Missed<A> {
    keys: [MaybeUninit<A>; MAX_BATCH],
    /// Each key's index in the results.
    at: [MaybeUninit<u32>; MAX_BATCH],
    /// Keys held.
    pub(super) n: usize,
}

impl<A: Address> Missed<A> {
    pub(super) fn new() -> Self {
        Missed {
            keys: [MaybeUninit::uninit(); MAX_BATCH],
            at: [MaybeUninit::uninit(); MAX_BATCH],
            n: 0,
        }
    }

    /// Adds key `a`, whose result is `at` (fewer than [`MAX_BATCH`] held).
    #[inline(always)]
    pub(super) fn push(&mut self, at: usize, a: A) {
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
    pub(super) unsafe fn descend<L: Layout, S: NodeSearch>(
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
pub(super) struct Pending<K: Key> {
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
    pub(super) fn new() -> Self {
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
    pub(super) unsafe fn make_room<A: Address, L: Layout<K = K>, S: NodeSearch>(
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
    pub(super) unsafe fn add<A: Address, L: Layout<K = K>>(
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
    pub(super) unsafe fn finish<A: Address, L: Layout<K = K>, S: NodeSearch>(
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

//! The batched lookup, written once over the node search ([`NodeSearch`]: scalar in
//! `scalar.rs`, AVX2 and AVX-512 in `kernel.rs`, which also brings its own stage of the
//! /32 lines), from the steps of `walk.rs` and the waiting keys of `pending.rs`.
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
use super::front::{Front, LineFront, LINES};
use super::pending::{Missed, Pending};
use super::tree::{root_of, Key, Layout, CHILD, DEPTH_MASK, DEPTH_SHIFT, MISS, SAME_CHUNK};
use super::walk::{drain, main_lockstep, Lane, NodeSearch, View, MAX_BATCH};
use crate::prefix::Address;
use crate::simd::prefetch_keys_ahead;

/// Keys per window of the lanes' indices.
const WINDOW: usize = 1 << 24;
/// How many keys ahead of the group looked up the lookup prefetches the key stream.
const KEYS_AHEAD: usize = 128;

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

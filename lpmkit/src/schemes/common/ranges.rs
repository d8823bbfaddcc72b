//! The range projection ("leaf pushing"): a routing table as disjoint address ranges, each
//! with one longest match.
//!
//! Every scheme that resolves whole blocks of addresses at once (DIR-24-8's groups,
//! Spider's rows, Poptrie's leaves, DXR's chunks, OBMA's and SAIL's levels) needs the same
//! thing: the answer is constant over a block exactly when no range boundary falls
//! strictly inside it. This module computes the ranges once, in one walk over the routes
//! in (address, length) order with a stack of the prefixes open at a cursor, and counts
//! per trie level what the schemes size their structures by:
//!
//! * [`project_routes`]: the ranges of a window of the address space (the whole space, or
//!   the block an incremental update rebuilds), with a hook that sees every route walked;
//! * [`LevelBlocks`]: per level of a multibit trie, the blocks that hold a route longer
//!   than the level (the nodes the trie has *before* leaf pushing and aggregation);
//! * [`split_blocks_per_level`]: per level, the blocks a range boundary falls strictly
//!   inside (the nodes that survive aggregation).
//!
//! This file depends only on prefixes and next hops, so the [`Rib`](crate::Rib) itself
//! projects through it ([`Rib::for_each_range`](crate::Rib::for_each_range)).

use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};

/// Walks `routes` (the routes strictly inside `window`, in (address, length) order) and
/// calls `emit(first, next hop or 0)` for each range of `window`'s addresses, in ascending
/// order: the first starts at `window.first()`, each runs up to the next one's first
/// address (the last to `window.last()`), and neighbours always differ (equal ones are
/// merged). `base` is the next hop of the addresses no route inside the window covers (the
/// route covering the window, or 0). `on_route` sees every route walked.
pub(crate) fn project_routes<A: Address>(
    window: &Prefix<A>,
    base: u32,
    routes: impl IntoIterator<Item = (Prefix<A>, NextHop)>,
    mut on_route: impl FnMut(&Prefix<A>, u32),
    mut emit: impl FnMut(A, u32),
) {
    // The next hop of the last range emitted (`None` before the first).
    let mut last_nh: Option<u32> = None;
    let mut put = |first: A, nh: u32| {
        if last_nh != Some(nh) {
            emit(first, nh);
            last_nh = Some(nh);
        }
    };
    // Open prefixes: (last address, next hop); the window is the bottom.
    let mut stack: Vec<(A, u32)> = Vec::with_capacity(A::BITS as usize + 2);
    stack.push((window.last(), base));
    // The first address not yet emitted; `None` past the end of the address space.
    let mut cursor = Some(window.first());
    for (p, nh) in routes {
        let nh = nh.get();
        on_route(&p, nh);
        let (first, last) = (p.first(), p.last());
        // Close the prefixes that end before this one starts.
        loop {
            let &(top_last, top_nh) = stack.last().expect("the window stays");
            if top_last >= first {
                break;
            }
            if let Some(c) = cursor.filter(|&c| c <= top_last) {
                put(c, top_nh);
                cursor = top_last.checked_inc();
            }
            stack.pop();
        }
        let top_nh = stack.last().expect("the window stays").1;
        if let Some(c) = cursor.filter(|&c| c < first) {
            put(c, top_nh);
        }
        cursor = Some(first);
        stack.push((last, nh));
    }
    while let Some((top_last, top_nh)) = stack.pop() {
        if let Some(c) = cursor.filter(|&c| c <= top_last) {
            put(c, top_nh);
            cursor = top_last.checked_inc();
        }
    }
}

/// Per level of a multibit trie (levels given by the prefix length of their blocks), the
/// blocks that hold a route longer than the level: feed it every route in (address,
/// length) order through [`LevelBlocks::route`] (the `on_route` hook of
/// [`project_routes`]).
#[derive(Clone, Debug)]
pub(crate) struct LevelBlocks<A: Address> {
    lens: Vec<u8>,
    last: Vec<A>,
    counts: Vec<usize>,
}

impl<A: Address> LevelBlocks<A> {
    /// Counters for levels whose blocks are prefixes of lengths `lens` (ascending).
    pub(crate) fn new(lens: &[u8]) -> Self {
        debug_assert!(lens.windows(2).all(|w| w[0] < w[1]));
        LevelBlocks {
            lens: lens.to_vec(),
            // A::MAX is never a block of a level shorter than the address: blocks have
            // host bits zero.
            last: vec![A::MAX; lens.len()],
            counts: vec![0; lens.len()],
        }
    }

    /// Counts route `p`.
    #[inline]
    pub(crate) fn route(&mut self, p: &Prefix<A>) {
        for (l, &len) in self.lens.iter().enumerate() {
            if p.len() <= len {
                break;
            }
            let block = p.first().and(A::netmask(len));
            if block != self.last[l] {
                self.last[l] = block;
                self.counts[l] += 1;
            }
        }
    }

    /// The counts, one per level.
    pub(crate) fn into_counts(self) -> Vec<usize> {
        self.counts
    }
}

/// Per level (blocks of prefix lengths `lens`, ascending), the blocks that a range boundary
/// of `ranges` (as [`project_routes`] emits them) falls strictly inside: the nodes of a
/// leaf-pushed multibit trie that do not collapse into one answer.
pub(crate) fn split_blocks_per_level<A: Address>(ranges: &[(A, u32)], lens: &[u8]) -> Vec<usize> {
    let mut counts = vec![0usize; lens.len()];
    let mut last = vec![A::MAX; lens.len()];
    for &(b, _) in ranges.iter().skip(1) {
        for (l, &len) in lens.iter().enumerate() {
            if b.and(A::hostmask(len)) == A::ZERO {
                break; // aligned here, so aligned for every smaller block too
            }
            let block = b.and(A::netmask(len));
            if block != last[l] {
                last[l] = block;
                counts[l] += 1;
            }
        }
    }
    counts
}

//! The range projection ("leaf pushing"): a routing table as disjoint address ranges, each
//! with one longest match — the one front door every scheme builds and patches from.
//!
//! Every scheme that resolves whole blocks of addresses at once (DIR-24-8's groups,
//! Spider's rows, Poptrie's leaves, DXR's chunks, OBMA's and SAIL's levels) needs the same
//! thing: the answer is constant over a block exactly when no range boundary falls
//! strictly inside it. This module computes the ranges once, in one walk over the routes
//! in (address, length) order with a stack of the prefixes open at a cursor, and counts
//! per trie level what the schemes size their structures by:
//!
//! * [`Rib::project`]: the whole table, with a hook that sees every route walked (for
//!   per-level counts), and the largest next hop;
//! * [`Rib::project_window`]: the ranges of one block of the address space (what an
//!   incremental update rebuilds); [`Rib::for_each_range`] and
//!   [`Rib::for_each_range_in`] are the public form of the two, with each range's last
//!   address;
//! * [`project_routes`]: the same walk over any ordered list of routes (a scheme that
//!   projects a subset of the table, such as the long routes under one block);
//! * [`LevelBlocks`]: per level of a multibit trie, the blocks that hold a route longer
//!   than the level (the nodes the trie has *before* leaf pushing and aggregation);
//! * [`split_blocks_per_level`]: per level, the blocks a range boundary falls strictly
//!   inside (the nodes that survive aggregation).

use super::Rib;
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

/// Routes from which on [`Rib::project_ranges`] may use more than one thread.
const PARALLEL_FROM: usize = 1 << 16;
/// The most windows (threads) of [`Rib::project_ranges`].
const MAX_PARTS: usize = 8;

/// The whole table projected onto ranges, and what one walk over its routes learns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Projection<A> {
    /// Disjoint ranges `(first address, next hop or 0)`, ascending; the first starts at
    /// address 0, each runs to the next one's first address minus one, neighbours differ.
    pub ranges: Vec<(A, u32)>,
    /// The largest next hop of any route, even one hidden by more-specifics (a withdrawal
    /// can expose it, so layouts are sized by it).
    pub max_next_hop: u32,
}

impl<A: Address> Rib<A> {
    /// Projects the whole table; `on_route` sees every route (for per-level counts such as
    /// [`LevelBlocks`]).
    pub(crate) fn project(&self, mut on_route: impl FnMut(&Prefix<A>, u32)) -> Projection<A> {
        let mut ranges: Vec<(A, u32)> = Vec::with_capacity(self.len() + self.len() / 4 + 16);
        let mut max_next_hop = 0;
        project_routes(
            &Prefix::DEFAULT,
            0,
            self.iter(),
            |p, nh| {
                max_next_hop = max_next_hop.max(nh);
                on_route(p, nh)
            },
            |first, nh| ranges.push((first, nh)),
        );
        Projection {
            ranges,
            max_next_hop,
        }
    }

    /// [`project`](Self::project) without a hook: the table's ranges and largest next hop.
    /// A table of [`PARALLEL_FROM`] routes or more is projected on as many threads as
    /// this thread may run on (`std::thread::available_parallelism`, which honours the
    /// CPU affinity; at most [`MAX_PARTS`]): the address space is cut into that many
    /// windows (a power of two), each projected on a thread of its own, and the windows'
    /// ranges joined (a range that runs across a seam merged). The result is the same.
    pub(crate) fn project_ranges(&self) -> Projection<A> {
        self.project_ranges_with(|| (), |_, _, _| {}).0
    }

    /// [`project_ranges`](Self::project_ranges) with a hook: each window's walk makes its
    /// state with `make` and shows it every route it walks (`on_route`); the states come
    /// back in address order. Each route longer than the windows is seen once, by its
    /// window; routes of `log2(MAX_PARTS)` bits or fewer may be seen by no window or by
    /// several (hooks that count blocks of longer prefixes, such as [`LevelBlocks`] of
    /// levels longer than that, add the windows' counts).
    pub(crate) fn project_ranges_with<H: Send>(
        &self,
        make: impl Fn() -> H + Sync,
        on_route: impl Fn(&mut H, &Prefix<A>, u32) + Sync,
    ) -> (Projection<A>, Vec<H>) {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let parts = if self.len() >= PARALLEL_FROM {
            threads
        } else {
            1
        };
        self.project_parts(parts, &make, &on_route)
    }

    /// [`project_ranges_with`](Self::project_ranges_with) in up to `parts` windows
    /// (rounded down to a power of two, at most [`MAX_PARTS`]).
    pub(crate) fn project_parts<H: Send>(
        &self,
        parts: usize,
        make: &(impl Fn() -> H + Sync),
        on_route: &(impl Fn(&mut H, &Prefix<A>, u32) + Sync),
    ) -> (Projection<A>, Vec<H>) {
        let bits = parts.clamp(1, MAX_PARTS).ilog2() as u8;
        if bits == 0 {
            let mut h = make();
            let proj = self.project(|p, nh| on_route(&mut h, p, nh));
            return (proj, vec![h]);
        }
        let windows: Vec<Prefix<A>> = (0..1u128 << bits)
            .map(|i| Prefix::new_truncating(A::from_u128(i << (A::BITS - bits) as u32), bits))
            .collect();
        let share = self.len() / windows.len() + self.len() / 8 + 16;
        let one = |w: &Prefix<A>| {
            let mut h = make();
            let (ranges, max) = self.project_one_window(w, share, |p, nh| on_route(&mut h, p, nh));
            (ranges, max, h)
        };
        let mut parts = std::thread::scope(|s| {
            let threads: Vec<_> = windows[1..]
                .iter()
                .map(|w| s.spawn(move || one(w)))
                .collect();
            let mut parts = vec![one(&windows[0])];
            parts.extend(
                threads
                    .into_iter()
                    .map(|t| t.join().expect("a projection thread")),
            );
            parts
        });
        let mut ranges = Vec::with_capacity(parts.iter().map(|p| p.0.len()).sum());
        let mut max_next_hop = 0;
        for (part, max, _) in &mut parts {
            max_next_hop = max_next_hop.max(*max);
            let skip = match (ranges.last(), part.first()) {
                (Some(&(_, a)), Some(&(_, b))) => usize::from(a == b),
                _ => 0,
            };
            ranges.extend_from_slice(&part[skip..]);
        }
        let hooks = parts.into_iter().map(|p| p.2).collect();
        (
            Projection {
                ranges,
                max_next_hop,
            },
            hooks,
        )
    }

    /// The ranges of `window` (room for `capacity`), and the largest next hop of the routes
    /// inside it or covering it; `on_route` sees the routes inside it but itself.
    fn project_one_window(
        &self,
        window: &Prefix<A>,
        capacity: usize,
        mut on_route: impl FnMut(&Prefix<A>, u32),
    ) -> (Vec<(A, u32)>, u32) {
        let mut out = Vec::with_capacity(capacity);
        let mut max = self
            .covering(window)
            .iter()
            .map(|(_, nh)| nh.get())
            .max()
            .unwrap_or(0);
        self.project_in(
            window,
            |p, nh| {
                max = max.max(nh);
                on_route(p, nh)
            },
            |first, nh| out.push((first, nh)),
        );
        (out, max)
    }

    /// The ranges of `window`'s addresses (the first starts at `window.first()`; routes
    /// shorter than the window supply the answer where nothing inside it matches),
    /// appended to `out`: what an incremental update rebuilds a block from.
    pub(crate) fn project_window(&self, window: &Prefix<A>, out: &mut Vec<(A, u32)>) {
        self.project_in(window, |_, _| {}, |first, nh| out.push((first, nh)));
    }

    /// [`project_routes`] over the routes inside `window` (but itself), with the answer of
    /// the routes covering it as the base.
    fn project_in(
        &self,
        window: &Prefix<A>,
        on_route: impl FnMut(&Prefix<A>, u32),
        emit: impl FnMut(A, u32),
    ) {
        let base = NextHop::raw(self.covering_next_hop(window));
        let routes = self.covered(window).filter(|(p, _)| p != window);
        project_routes(window, base, routes, on_route, emit);
    }

    /// The table projected onto disjoint address ranges.
    ///
    /// Calls `f(first, last, next_hop)` for consecutive ranges that together cover the whole
    /// address space in ascending order; within a range every address has the same
    /// longest-prefix match, and neighbouring ranges always differ (equal ones are merged).
    #[doc(hidden)]
    pub fn for_each_range(&self, f: impl FnMut(A, A, Option<NextHop>)) {
        self.for_each_range_in(&Prefix::DEFAULT, f)
    }

    /// [`for_each_range`](Self::for_each_range) restricted to the addresses of `window`:
    /// the ranges cover exactly `window.first()..=window.last()`, the first starting at
    /// `window.first()` (routes shorter than the window supply the answer where nothing
    /// inside it matches).
    #[doc(hidden)]
    pub fn for_each_range_in(&self, window: &Prefix<A>, mut f: impl FnMut(A, A, Option<NextHop>)) {
        // The projection emits range starts; hold one back to learn where it ends.
        let mut pending: Option<(A, u32)> = None;
        self.project_in(
            window,
            |_, _| {},
            |first, nh| {
                if let Some((pf, pn)) = pending.replace((first, nh)) {
                    let last = first.checked_dec().expect("a later range starts above 0");
                    f(pf, last, NextHop::new(pn));
                }
            },
        );
        if let Some((pf, pn)) = pending {
            f(pf, window.last(), NextHop::new(pn));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The projection agrees with the Rib's own ranges, whole and by window, on random
    /// tables with nested, adjacent, default and host routes.
    fn agrees<A: Address>(seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let mut rib = Rib::<A>::new();
        for step in 0..300 {
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
            let proj = rib.project(|_, _| {});
            // Brute force: the answer at each start, and no boundary without a change.
            assert_eq!(proj.ranges[0].0, A::ZERO, "step {step}");
            for w in proj.ranges.windows(2) {
                assert!(w[0].0 < w[1].0 && w[0].1 != w[1].1, "step {step}");
            }
            for &(first, nh) in &proj.ranges {
                assert_eq!(NextHop::raw(rib.lookup(first)), nh, "step {step}");
                if let Some(prev) = first.checked_dec() {
                    assert_ne!(NextHop::raw(rib.lookup(prev)), nh, "step {step}");
                }
            }
            assert_eq!(proj.max_next_hop, crate::fib::max_next_hop(&rib));
            let window = Prefix::new_truncating(p.addr(), len.saturating_sub(3));
            let mut w = Vec::new();
            rib.project_window(&window, &mut w);
            assert_eq!(w[0].0, window.first());
            for &(first, nh) in &w {
                assert!(window.contains(first));
                assert_eq!(NextHop::raw(rib.lookup(first)), nh, "step {step} window");
            }
        }
    }

    #[test]
    fn projection_matches_lookups() {
        for seed in 0..6 {
            agrees::<u32>(seed);
            agrees::<u128>(seed);
        }
    }

    /// The projection in windows on threads equals the one walk, on tables whose routes
    /// lie in order in the node array and on changed ones (routes at the seams, /0, /1,
    /// host routes).
    fn parts_agree<A: Address>(seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let mut routes: Vec<(Prefix<A>, NextHop)> = Vec::new();
        for _ in 0..2000 {
            let len = rng.below(A::BITS as u64 + 1) as u8;
            let p = Prefix::new_truncating(A::from_u128(rng.next_u128()), len);
            routes.push((p, NextHop::new(1 + rng.below(3) as u32).unwrap()));
        }
        for len in [0u8, 1, 2, 3] {
            for i in 0..(1u128 << len) {
                if rng.below(2) == 0 {
                    let a = A::from_u128(i.checked_shl((A::BITS - len) as u32).unwrap_or(0));
                    routes.push((
                        Prefix::new_truncating(a, len),
                        NextHop::new(1 + rng.below(3) as u32).unwrap(),
                    ));
                }
            }
        }
        routes.sort();
        routes.dedup_by_key(|r| r.0);
        let mut rib: Rib<A> = routes.iter().copied().collect();
        for round in 0..3 {
            let mut blocks = LevelBlocks::new(&[4, 8, 16]);
            let one = rib.project(|p, _| blocks.route(p));
            let counts = blocks.into_counts();
            for parts in [1, 2, 3, 4, 8, 64] {
                let (proj, hooks) = rib.project_parts(
                    parts,
                    &|| LevelBlocks::new(&[4, 8, 16]),
                    &|b: &mut LevelBlocks<A>, p, _| b.route(p),
                );
                assert_eq!(proj, one, "seed {seed} round {round} parts {parts}");
                let mut sum = vec![0; 3];
                for h in hooks {
                    for (s, c) in sum.iter_mut().zip(h.into_counts()) {
                        *s += c;
                    }
                }
                assert_eq!(sum, counts, "seed {seed} round {round} parts {parts}");
            }
            // Change the table: its nodes are out of order from now on.
            for _ in 0..50 {
                let (p, _) = routes[rng.below(routes.len() as u64) as usize];
                rib.remove(&p);
            }
        }
    }

    #[test]
    fn projection_in_parts_matches_one_walk() {
        for seed in 0..4 {
            parts_agree::<u32>(seed);
            parts_agree::<u128>(seed);
        }
    }

    #[test]
    fn level_counts() {
        let rib: Rib<u32> = [
            ("10.0.0.0/8", 1),
            ("10.1.0.0/16", 2),
            ("10.1.2.0/24", 3),
            ("10.1.2.3/32", 4),
            ("11.0.0.0/24", 5),
        ]
        .iter()
        .map(|&(p, h)| (p.parse().unwrap(), NextHop::new(h).unwrap()))
        .collect();
        let mut blocks = LevelBlocks::new(&[16, 24]);
        let proj = rib.project(|p, _| blocks.route(p));
        // Blocks of /16 holding longer routes: 10.1/16, 11.0/16; of /24: 10.1.2/24.
        assert_eq!(blocks.into_counts(), vec![2, 1]);
        assert_eq!(split_blocks_per_level(&proj.ranges, &[16, 24]), vec![2, 1]);
    }
}

//! The shared layer under every scheme: what two schemes would otherwise each write again.
//!
//! * **Range projection** ([`project`], [`project_window`], and the per-level counts of
//!   `ranges`): the table as disjoint ranges with one longest match each — the leaf pushing
//!   every multibit structure is built from, in one walk of the [`Rib`].
//! * **The entry-width rule** ([`Width`], `narrowest`, `ByWidth`): the narrowest entry that
//!   holds the table; a forced width that does not fit is a [`BuildError`].
//! * **Bitmap ranks and population counts** ([`bits`]): the rank of a vector at a position,
//!   the byte table software ranks read, SWAR byte compares.
//! * **Memory for in-place updates** (`Arena`, `FreeSpace`): arrays that never move under a
//!   reader, and the one free-space manager every incremental scheme allocates from; the
//!   retire-then-reuse discipline that goes with them is `sync::epoch`.
//!
//! Schemes build on this module, never on each other.

mod arena;
pub(crate) mod bits;
pub(crate) mod ranges;
mod width;

pub(crate) use arena::{published, Arena, AtomicWord, FreeSpace, Zeroable};
pub(crate) use ranges::{project_routes, split_blocks_per_level, LevelBlocks};
pub use width::Width;
pub(crate) use width::{check_capacity, check_next_hop, narrowest, with_width, ByWidth, Word};

use crate::fib::BuildError;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

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

/// Projects the whole table; `on_route` sees every route (for per-level counts such as
/// [`LevelBlocks`]).
pub(crate) fn project<A: Address>(
    rib: &Rib<A>,
    mut on_route: impl FnMut(&Prefix<A>, u32),
) -> Projection<A> {
    let mut ranges: Vec<(A, u32)> = Vec::with_capacity(rib.len() + rib.len() / 4 + 16);
    let mut max_next_hop = 0;
    project_routes(
        &Prefix::DEFAULT,
        0,
        rib.iter(),
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

/// The ranges of `window`'s addresses (the first starts at `window.first()`), appended
/// to `out`: what an incremental update rebuilds a block from.
pub(crate) fn project_window<A: Address>(
    rib: &Rib<A>,
    window: &Prefix<A>,
    out: &mut Vec<(A, u32)>,
) {
    let base = rib.covering_route(window).map_or(0, |(_, nh)| nh.get());
    let routes = rib.covered(window).filter(|(p, _)| p != window);
    project_routes(
        window,
        base,
        routes,
        |_, _| {},
        |first, nh| out.push((first, nh)),
    );
}

/// The table as disjoint ranges `(first, next hop id or 0)` in ascending order: the first
/// starts at address 0 and each runs to the next one's first address minus one.
pub(crate) fn range_starts<A: Address>(rib: &Rib<A>) -> Vec<(A, u32)> {
    project(rib, |_, _| {}).ranges
}

/// Checks that every next-hop id in `rib` is at most `max`; returns the largest.
pub(crate) fn check_next_hops<A: Address>(
    rib: &Rib<A>,
    scheme: &str,
    max: u64,
) -> Result<u32, BuildError> {
    let m = crate::fib::max_next_hop(rib);
    check_next_hop(scheme, max, m as u64)?;
    Ok(m)
}

/// Milliseconds elapsed since `t`.
pub(crate) fn ms_since(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexthop::NextHop;
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
            let proj = project(&rib, |_, _| {});
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
            project_window(&rib, &window, &mut w);
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
        let proj = project(&rib, |p, _| blocks.route(p));
        // Blocks of /16 holding longer routes: 10.1/16, 11.0/16; of /24: 10.1.2/24.
        assert_eq!(blocks.into_counts(), vec![2, 1]);
        assert_eq!(split_blocks_per_level(&proj.ranges, &[16, 24]), vec![2, 1]);
    }
}

//! Helpers shared by several schemes (never one scheme's internals).

use crate::fib::BuildError;
use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::rib::Rib;

/// The table as disjoint ranges `(first, next hop id or 0)` in ascending order: the first
/// starts at address 0 and each runs to the next one's first address minus one.
pub fn range_starts<A: Address>(rib: &Rib<A>) -> Vec<(A, u32)> {
    let mut v = Vec::with_capacity(rib.len() * 2 + 1);
    rib.for_each_range(|first, _, nh| v.push((first, NextHop::raw(nh))));
    v
}

/// Checks that every next-hop id in `rib` is at most `max`.
pub fn check_next_hops<A: Address>(
    rib: &Rib<A>,
    scheme: &str,
    max: u64,
) -> Result<u32, BuildError> {
    let m = crate::fib::max_next_hop(rib);
    if m as u64 > max {
        return Err(BuildError::NextHopOverflow {
            scheme: scheme.to_string(),
            max,
            requested: m as u64,
        });
    }
    Ok(m)
}

/// Milliseconds elapsed since `t`.
pub fn ms_since(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

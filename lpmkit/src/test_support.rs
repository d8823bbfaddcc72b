//! What the unit tests share: next hops and small tables written as text.

use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// Next hop `v` (nonzero).
pub(crate) fn nh(v: u32) -> NextHop {
    NextHop::new(v).unwrap()
}

/// A `Rib` of the given routes (`("10.0.0.0/8", 1)`, …).
pub(crate) fn rib<A: Address>(routes: &[(&str, u32)]) -> Rib<A> {
    routes
        .iter()
        .map(|&(p, h)| (p.parse::<Prefix<A>>().unwrap(), nh(h)))
        .collect()
}

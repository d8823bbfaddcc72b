//! One route change: what the [`Rib`] applies, and what incremental schemes and update
//! models are given after it.

use super::Rib;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};

/// One route change, as applied to a [`Rib`] and then to an
/// [`IncrementalFib`](crate::fib::IncrementalFib).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change<A: Address> {
    /// Insert or replace the route for a prefix.
    Announce(Prefix<A>, NextHop),
    /// Remove the route for a prefix (a no-op if it is absent).
    Withdraw(Prefix<A>),
}

impl<A: Address> Change<A> {
    /// The prefix changed.
    pub fn prefix(&self) -> Prefix<A> {
        match *self {
            Change::Announce(p, _) | Change::Withdraw(p) => p,
        }
    }

    /// Applies the change to `rib`; returns whether the table's content changed.
    pub fn apply_to(&self, rib: &mut Rib<A>) -> bool {
        match *self {
            Change::Announce(p, nh) => rib.insert(p, nh) != Some(nh),
            Change::Withdraw(p) => rib.remove(&p).is_some(),
        }
    }
}

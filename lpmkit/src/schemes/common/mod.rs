//! The shared layer under every scheme: what two schemes would otherwise each write again.
//!
//! * **The entry-width rule** ([`Width`], `narrowest`, `narrowest_built`, `ByWidth`): the
//!   narrowest entry that holds the table (known before the build, or found by building
//!   at each width in turn: SAIL, Lulea); a forced width that does not fit is a
//!   [`BuildError`].
//! * **Bitmap ranks and population counts** ([`bits`]): the rank of a vector at a position,
//!   the byte table software ranks read, SWAR byte compares.
//! * **Memory for in-place updates** (`Arena`, `FreeSpace`): arrays that never move under a
//!   reader, and the one free-space manager every incremental scheme allocates from; the
//!   retire-then-reuse discipline that goes with them is `sync::epoch`.
//!
//! The range projection every multibit structure is built from lives below the schemes,
//! beside the [`Rib`](crate::Rib) (`crate::rib::ranges`). Schemes build on these modules,
//! never on each other.

mod arena;
pub(crate) mod bits;
mod width;

pub(crate) use arena::{published, Arena, AtomicWord, FreeSpace, Zeroable};
pub use width::Width;
pub(crate) use width::{
    check_capacity, check_next_hop, narrowest, narrowest_built, with_width, ByWidth, Word,
};

use crate::fib::BuildError;
use crate::prefix::Address;
use crate::rib::Rib;

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

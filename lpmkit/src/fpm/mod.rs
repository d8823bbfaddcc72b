//! Follow FRR's zebra over its Forwarding Plane Manager interface (feature `fpm`, Linux).
//!
//! Routers whose data plane is not the kernel take their routes from the routing suite
//! directly. FRR's zebra does it with the module `dplane_fpm_nl` (zebra started with
//! `-M dplane_fpm_nl`, configured with `fpm address A port P`): it connects to a TCP
//! server and streams every route it selects — for every protocol, both address
//! families, every VRF — as the netlink messages it would send the kernel
//! (`RTM_NEWROUTE`, `RTM_DELROUTE`, `RTM_NEWNEXTHOP`, `RTM_DELNEXTHOP`), each behind a
//! 4-byte FPM header (version 1, type 1 = netlink, the frame's length in network order).
//! This module is that server, feeding the same [`Follower`](crate::netlink::Follower)
//! and update path as the kernel follower of [`netlink`](crate::netlink):
//!
//! * [`FpmServer`] listens (in a chosen network namespace), accepts zebra's connection,
//!   and reads its frames into an [`FpmSession`]: the stream's route changes for one
//!   table, IPv4 and IPv6, with no socket in it (what the fuzz target and the tests
//!   drive).
//! * [`ZebraRoutes`] holds zebra's routes as zebra means them: one selected route per
//!   prefix, replaced by each route message and removed by a delete whatever it names;
//!   nexthop objects and groups (`nhid`, what zebra 8.4 sends by default) resolved to
//!   their paths, ECMP as one multipath value, blackhole/unreachable/prohibit routes as
//!   themselves — the [`RouteTarget`](crate::netlink::RouteTarget)s of the kernel
//!   follower, so lookups answer in the same values.
//! * zebra sends an update as a delete and an add in one frame: the changes handed to
//!   the schemes are the net change per prefix, so a route never disappears for a moment.
//! * **Reconnections.** zebra reconnects 3 s after a failure and sends its whole table
//!   again, but not what it deleted meanwhile. At every connection the routes held are
//!   marked stale; what zebra sends again is fresh; once the stream has been quiet for
//!   [`SessionOptions::sweep_quiet`] (zebra marks no end of its table walk), the stale
//!   rest is removed — lpmkit never keeps a route zebra no longer has. Until then the
//!   old routes keep forwarding.
//! * **Hostile input.** A frame with a bad version, type or length, or a stream that ends
//!   inside a frame, cannot be read on: the connection is dropped with a
//!   [`FrameError`] naming the offset, nothing of the bad frame is applied, the routes
//!   stay. A netlink message that does not decode inside a good frame is skipped and
//!   counted; the connection stays. Memory is bounded by one frame (64 KiB) per
//!   connection plus the routes.
//! * [`ZebraQuery`] asks zebra for its own answer (`show ip route A json` through
//!   `vtysh`) and [`compare`] checks a lookup's against it.
//!
//! What is not followed: MPLS LSPs, EVPN MAC entries and the routes of other tables
//! (counted in [`FpmStats`]); routes lpmkit cannot represent (source-specific,
//! encapsulations) are counted by reason. zebra itself sends the connected routes only
//! in the table walk that follows a connection (not when an address is added later),
//! and never the kernel's local routes.

mod frame;
mod routes;
mod server;
mod session;
#[cfg(test)]
mod tests;
#[doc(hidden)]
pub mod wire;
mod zebra;

pub use frame::{frame, Frame, FrameError, FrameErrorKind, FrameReader, MAX_FRAME};
pub use routes::ZebraRoutes;
pub use server::{FpmEvent, FpmOptions, FpmServer, DEFAULT_PORT};
pub use session::{FpmFamily, FpmSession, FpmStats, SessionOptions};
pub use zebra::{compare, ZebraAnswer, ZebraQuery};

//! Follow the Linux kernel's routing tables over rtnetlink (feature `netlink`, Linux).
//!
//! The Spider paper's `lptest` forwarder (Ueno et al., IEEE Access 2020, §V-C) keeps its
//! table in sync with the kernel over NETLINK, so that routes are managed with iproute2
//! and applied by batch rebuild (§III-C). This module is that wiring for any lpmkit
//! scheme:
//!
//! * [`KernelSync`] dumps one routing table (`main` or any id, in this or a named network
//!   namespace) into a [`Rib`](crate::Rib), subscribes to its changes, and turns route
//!   notifications into [`Change`](crate::Change)s for the update machinery of
//!   [`sync`](crate::sync): a [`Publisher`](crate::sync::Publisher) (batch rebuild:
//!   Spider, DIR-24-8) or an [`InPlace`](crate::sync::InPlace) updater (DXR, Poptrie).
//!   Lost notifications (`ENOBUFS`) trigger a full re-dump and a diff, never a silent
//!   drift; [`KernelSync::reconcile`] re-dumps and diffs on demand (a daemon's periodic
//!   safety net) and counts what it found; [`KernelSync::compare_with_dump`] compares
//!   what was followed with a dump, prefix by prefix. Every dump is merged with the
//!   notifications that race it so that the newest state wins (see [`KernelSync`]).
//! * What the kernel changes without a route notification is followed as the kernel does
//!   it (see [`KernelRoutes`]): an interface going down removes the routes through it
//!   (multipath routes lose the path, marked dead) and its nexthop objects, coming back
//!   up revives dead paths, a lost carrier flushes its nexthop objects, a deleted
//!   interface takes its routes; an interface losing its last IPv4 address loses its
//!   routes too (scope `host` ones included), an address gone takes the routes that name
//!   it as their source; a deleted nexthop object takes the routes through it and leaves
//!   its groups.
//! * Next-hop values are [`RouteTarget`]s: gateway and output interface, a multipath
//!   group as one value (dead paths marked), a route through a nexthop object as the
//!   paths the object resolves to, `blackhole`/`unreachable`/`prohibit`/`throw` and the
//!   local types as themselves. A prefix may hold several kernel routes (metrics; IPv6
//!   routes of one metric on different interfaces); [`KernelRoutes`] keeps them all, in
//!   the kernel's order, and follows the one the kernel uses.
//! * Routes lpmkit cannot represent (IPv4 TOS routes, IPv6 source-specific routes,
//!   lightweight-tunnel encapsulations, unknown types) are counted by
//!   [`Unrepresentable`] reason, never dropped silently.
//! * [`RouteQuery`] asks the kernel for its own answer (`RTM_GETROUTE`, what `ip route
//!   get` prints) and [`compare`] checks a lookup against it; [`RouteWriter`] sends
//!   `replace`/`del` requests (churn generators, tests).
//!
//! What is deliberately left out: policy rules (one table is followed; lookups the rules
//! send to another table are [`Verdict::Skip`] in comparisons), the route cache, and the
//! sysctls that change lookups without changing the table
//! (`net.ipv4.conf.*.ignore_routes_with_linkdown`, which makes lookups skip the paths of
//! an interface without carrier; the followed table keeps using them, as the kernel does
//! by default). A periodic [`KernelSync::reconcile`] repairs anything the model misses.

mod address;
mod dump;
mod follow;
mod mirror;
mod nexthop;
mod query;
mod route;
mod socket;
mod state;
mod sync;
mod writer;

pub use follow::{BuildBox, Follower, Visible};
pub use nexthop::{Nexthop, NexthopObject};
pub use query::{compare, KernelAnswer, RouteQuery, Verdict};
pub(crate) use route::{decode, family_of, table_of, tally};
pub use route::{KernelRoute, Path, RouteOp, RouteTarget, Unrepresentable, RT_TABLE_MAIN};
pub use socket::in_netns;
pub(crate) use socket::{parse_messages, Message};
pub(crate) use state::resolve;
pub use state::{diff, Differences, KernelRoutes};
pub use sync::{Comparison, KernelSync, Origin, Received, SyncOptions, SyncStats};
pub use writer::{ifindex, RouteEdit, RouteWriter};

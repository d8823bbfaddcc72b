//! # lpmkit — longest-prefix-match route lookup
//!
//! lpmkit answers "which next hop does this destination use?" for IPv4 and IPv6 routing
//! tables, with the lookup schemes of the LPM literature behind one API, a reference trie
//! every scheme is tested against, readers for real routing data, and updates while other
//! threads look up.
//!
//! ```
//! use lpmkit::{Fib, Ipv4, NextHopTable, Rib};
//! use lpmkit::schemes::dir24_8::{Dir24_8, Dir24_8Config};
//!
//! let mut hops = NextHopTable::new();
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, hops.intern("192.0.2.1"));
//! rib.insert("10.1.0.0/16".parse()?, hops.intern("192.0.2.2"));
//!
//! let fib = Dir24_8::build(&rib, &Dir24_8Config::default())?;
//! let nh = fib.lookup(u32::from(std::net::Ipv4Addr::new(10, 1, 2, 3))).unwrap();
//! assert_eq!(hops.value(nh), Some(&"192.0.2.2"));
//!
//! // The fast path: many keys at once; 0 means "no route".
//! let keys = [0x0a00_0001, 0x0a01_0001, 0x0b00_0001];
//! let mut out = [0u32; 3];
//! fib.lookup_batch(&keys, &mut out);
//! assert_eq!(out, [1, 2, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Layout
//!
//! * [`prefix`]: address families ([`Ipv4`] = `u32`, [`Ipv6`] = `u128`) and [`Prefix`].
//! * [`nexthop`]: [`NextHop`] ids and the [`NextHopTable`] that interns user values.
//! * [`rib`]: [`Rib`], the reference trie and the source every scheme is built from.
//! * [`fib`]: the [`Fib`] and [`IncrementalFib`] traits.
//! * [`registry`]: every scheme by name, for generic code.
//! * [`schemes`]: one module per scheme.
//! * [`table`]: a loaded [`Table`] (routes plus next-hop names).
//! * [`facade`]: [`RouteTable`](facade::RouteTable), a routing table with user values, a
//!   chosen scheme, updates under lookups and a serialised form: what the Python package,
//!   the C ABI and `lpmkit annotate` wrap.
//! * [`io`]: readers for text tables, MRT dumps, update traces and address lists.
//! * [`sync`]: route updates while other threads look up (RCU-style publication).
//!
//! The everyday types are also at the crate root, for short imports: `use lpmkit::{Fib,
//! Ipv4, NextHopTable, Prefix, Rib}`. The synthetic tables and key streams the papers
//! measure with (uniform, REP/RND/SEQ, IPv6 matching keys, Zipf, traces) are reached
//! through the `lpmkit` command (`bench --synthetic ipv4`, `--pattern`); their modules serve
//! the command and the tests and are not part of the documented API.
//!
//! ## Cargo features
//!
//! * `mrt` (default): MRT RIB dumps and BGP4MP update files, through `bgpkit-parser`.
//! * `compression` (default): transparent `.xz` and `.gz` input.
//! * `dpdk` (Linux, DPDK ≥ 22.11 installed): DPDK's `rte_fib`/`rte_fib6` as the
//!   `dpdk-fib` scheme, to measure lpmkit against in one process (`schemes::dpdk`).
//! * `serde`: `Serialize`/`Deserialize` for [`Prefix`] (its text form), [`NextHop`],
//!   [`NextHopTable`], [`Rib`] and [`Table`] (checked when read back).
//! * `ipnet`: `From` conversions between [`Prefix`] and `ipnet::Ipv4Net`/`Ipv6Net`.
//! * `netlink` (Linux): follow a kernel routing table over rtnetlink (`netlink`).
//! * `fpm` (Linux; turns on `netlink`): follow FRR's zebra over its Forwarding Plane
//!   Manager interface (`fpm`).

#![warn(missing_docs)]

pub mod facade;
pub mod fib;
#[cfg(all(feature = "fpm", target_os = "linux"))]
pub mod fpm;
mod interop;
pub mod io;
// Table memory (huge pages): the schemes' own, and the CLI's roofline stand-ins'.
#[doc(hidden)]
pub mod mem;
#[cfg(all(feature = "netlink", target_os = "linux"))]
pub mod netlink;
pub mod nexthop;
pub mod prefix;
pub mod registry;
pub mod rib;
pub mod scheme;
// The tests' random numbers; public only to lpmkit's own integration tests.
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub mod rng;
#[cfg(not(feature = "test-hooks"))]
pub(crate) mod rng;
pub mod schemes;
mod shown;
pub mod simd;
pub mod sync;
// Synthetic tables and key streams: the generators behind the CLI's `bench`, `experiment`
// and the tests; not part of the documented API.
#[doc(hidden)]
pub mod synth;
pub mod table;
#[cfg(test)]
mod test_data;
#[cfg(test)]
mod test_support;
#[doc(hidden)]
pub mod traffic;

// The everyday types, also at the crate root for short imports (`use lpmkit::{Prefix, Rib}`);
// hidden there so that the documentation shows each item once, at its module's path.
#[doc(hidden)]
pub use fib::{
    BuildError, Change, Config, Fib, Implementation, IncrementalFib, NoConfig, Settings, StatValue,
    Stats, UpdateStats, Width,
};
#[doc(hidden)]
pub use nexthop::{NextHop, NextHopTable};
#[doc(hidden)]
pub use prefix::{Address, Family, Ipv4, Ipv6, Prefix, PrefixError};
#[doc(hidden)]
pub use registry::BuildOptions;
#[doc(hidden)]
pub use rib::Rib;
#[doc(hidden)]
pub use scheme::{Patchable, Scheme};
#[doc(hidden)]
pub use table::{AnyTable, Table};

/// The cargo features this build of the library was compiled with, in the order of its
/// `Cargo.toml` (what `lpmkit --version` reports).
#[doc(hidden)]
pub fn cargo_features() -> Vec<&'static str> {
    [
        ("mrt", cfg!(feature = "mrt")),
        ("compression", cfg!(feature = "compression")),
        ("dpdk", cfg!(feature = "dpdk")),
        ("serde", cfg!(feature = "serde")),
        ("ipnet", cfg!(feature = "ipnet")),
        ("netlink", cfg!(feature = "netlink")),
        ("fpm", cfg!(feature = "fpm")),
        ("test-hooks", cfg!(feature = "test-hooks")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect()
}

/// The READMEs' examples (the repository's and the crate's), compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide's examples (`docs/`), compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/getting-started.md")]
#[doc = include_str!("../../docs/updates.md")]
#[doc = include_str!("../../docs/bindings.md")]
pub struct GuideDoctests;

/// The router guide's examples (`docs/router.md`), compiled as doc tests (not run: they
/// follow the machine's kernel routing table, or wait for zebra).
#[cfg(all(doctest, feature = "netlink", feature = "fpm"))]
#[doc = include_str!("../../docs/router.md")]
pub struct RouterGuideDoctests;

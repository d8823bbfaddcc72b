//! Conversions between [`Prefix`] and the `ipnet` crate's `Ipv4Net`/`Ipv6Net` (feature
//! `ipnet`).
//!
//! ```
//! use lpmkit::{Ipv4, Prefix};
//! let net: ipnet::Ipv4Net = "10.1.0.0/16".parse()?;
//! let p = Prefix::<Ipv4>::from(net);
//! assert_eq!(p.to_string(), "10.1.0.0/16");
//! assert_eq!(ipnet::Ipv4Net::from(p), net);
//! // Host bits are dropped, as a route's prefix has none.
//! let host_bits: ipnet::Ipv4Net = "10.1.2.3/16".parse()?;
//! assert_eq!(Prefix::<Ipv4>::from(host_bits), p);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use ipnet::{Ipv4Net, Ipv6Net};

use crate::prefix::{Ipv4, Ipv6, Prefix};

impl From<Ipv4Net> for Prefix<Ipv4> {
    /// The network of `net` (host bits cleared).
    fn from(net: Ipv4Net) -> Self {
        Prefix::new_truncating(u32::from(net.addr()), net.prefix_len())
    }
}

impl From<Prefix<Ipv4>> for Ipv4Net {
    fn from(p: Prefix<Ipv4>) -> Self {
        Ipv4Net::new(p.addr().into(), p.len()).expect("a prefix length is at most 32")
    }
}

impl From<Ipv6Net> for Prefix<Ipv6> {
    /// The network of `net` (host bits cleared).
    fn from(net: Ipv6Net) -> Self {
        Prefix::new_truncating(u128::from(net.addr()), net.prefix_len())
    }
}

impl From<Prefix<Ipv6>> for Ipv6Net {
    fn from(p: Prefix<Ipv6>) -> Self {
        Ipv6Net::new(p.addr().into(), p.len()).expect("a prefix length is at most 128")
    }
}

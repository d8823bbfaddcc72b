//! Kernel routes as lpmkit sees them: what a route message says, and the next-hop value
//! ([`RouteTarget`]) a route's prefix maps to.

use core::fmt;
use std::net::IpAddr;

use netlink_packet_core::{NLM_F_APPEND, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteNextHop, RouteNextHopFlags,
    RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::prefix::{Address, Family, Prefix};

/// The kernel's `main` routing table.
pub const RT_TABLE_MAIN: u32 = 254;

/// What a route message does to a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RouteOp {
    /// `RTM_NEWROUTE`, with its header's `NLM_F_REPLACE` / `NLM_F_APPEND` flags.
    New {
        /// Replaces the first route of the same prefix and metric.
        replace: bool,
        /// Goes after the routes of the same prefix and metric (IPv4 `ip route append`).
        append: bool,
    },
    /// `RTM_DELROUTE`.
    Del,
}

/// One path of a unicast route: a gateway (or none, for a directly connected prefix) on
/// an output interface.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path {
    /// The gateway (`via`); `None` for a route straight out of the interface.
    pub gateway: Option<IpAddr>,
    /// The output interface's index (`dev`); 0 if the kernel named none.
    pub ifindex: u32,
    /// The multipath weight (`weight`, 1 for a single path).
    pub weight: u16,
    /// The kernel marked the path dead (`RTNH_F_DEAD`: its interface went down while
    /// other paths of the route stayed up); lookups never use a dead path, and an
    /// interface coming back up revives it.
    pub dead: bool,
}

impl Path {
    /// The same next hop (gateway and interface; weight and state aside): what the
    /// kernel matches a path by.
    pub fn same_hop(&self, other: &Path) -> bool {
        self.gateway == other.gateway && self.ifindex == other.ifindex
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.gateway {
            Some(g) => write!(f, "via {g} dev #{}", self.ifindex)?,
            None => write!(f, "dev #{}", self.ifindex)?,
        }
        if self.weight != 1 {
            write!(f, " weight {}", self.weight)?;
        }
        if self.dead {
            f.write_str(" dead")?;
        }
        Ok(())
    }
}

/// What a kernel route does with a packet: the value lpmkit interns as the route's
/// next hop (one [`NextHop`](crate::NextHop) id per distinct target).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RouteTarget {
    /// A unicast route: one path, or a multipath group (paths sorted, so that the same
    /// group is one value whatever order the kernel listed it in). A route through a
    /// nexthop object (`ip route … nhid N`) is followed as the paths the object resolves
    /// to (a group's members with their weights).
    Unicast(Vec<Path>),
    /// A route through nexthop object `N` that the sync does not know (no such object
    /// was dumped or announced): a lookup answer that can match no kernel answer. In the
    /// kernel's own route messages, the object a route refers to.
    NexthopObject(u32),
    /// `blackhole`: drop silently.
    Blackhole,
    /// `unreachable`: drop, ICMP host unreachable.
    Unreachable,
    /// `prohibit`: drop, ICMP administratively prohibited.
    Prohibit,
    /// `throw`: the lookup goes on in the next table of the policy rules.
    Throw,
    /// `local`: delivered to this host.
    Local,
    /// `broadcast`.
    Broadcast,
    /// `anycast`.
    Anycast,
    /// `multicast`.
    Multicast,
}

impl RouteTarget {
    /// One gateway on one interface.
    pub fn via(gateway: IpAddr, ifindex: u32) -> Self {
        RouteTarget::Unicast(vec![Path {
            gateway: Some(gateway),
            ifindex,
            weight: 1,
            dead: false,
        }])
    }

    /// The paths a lookup may use: every path of a unicast route but the dead ones;
    /// empty for the other kinds.
    pub fn live_paths(&self) -> impl Iterator<Item = &Path> + '_ {
        let paths: &[Path] = match self {
            RouteTarget::Unicast(p) => p,
            _ => &[],
        };
        paths.iter().filter(|p| !p.dead)
    }

    /// The same route as the kernel matches routes: equal kinds, and for unicast the same
    /// paths (gateway, interface, weight), whatever their dead marks.
    pub fn same_route(&self, other: &RouteTarget) -> bool {
        match (self, other) {
            (RouteTarget::Unicast(a), RouteTarget::Unicast(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|(x, y)| x.same_hop(y) && x.weight == y.weight)
            }
            (a, b) => a == b,
        }
    }

    /// True for the routes that forward (unicast, possibly multipath).
    pub fn forwards(&self) -> bool {
        matches!(
            self,
            RouteTarget::Unicast(_) | RouteTarget::NexthopObject(_)
        )
    }
}

impl fmt::Display for RouteTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RouteTarget::Unicast(paths) if paths.len() == 1 => write!(f, "{}", paths[0]),
            RouteTarget::Unicast(paths) => {
                f.write_str("multipath[")?;
                for (i, p) in paths.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str("]")
            }
            RouteTarget::NexthopObject(id) => write!(f, "nhid {id}"),
            RouteTarget::Blackhole => f.write_str("blackhole"),
            RouteTarget::Unreachable => f.write_str("unreachable"),
            RouteTarget::Prohibit => f.write_str("prohibit"),
            RouteTarget::Throw => f.write_str("throw"),
            RouteTarget::Local => f.write_str("local"),
            RouteTarget::Broadcast => f.write_str("broadcast"),
            RouteTarget::Anycast => f.write_str("anycast"),
            RouteTarget::Multicast => f.write_str("multicast"),
        }
    }
}

/// Why a kernel route has no place in a one-table, destination-only FIB. Such routes are
/// counted ([`KernelRoutes::unrepresentable`](super::KernelRoutes::unrepresentable)),
/// never silently dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Unrepresentable {
    /// An IPv4 route that applies to one TOS value only (`ip route add … tos N`).
    Tos,
    /// An IPv6 source-specific route (`ip -6 route add … from SRC`).
    SourceSpecific,
    /// A route with a lightweight-tunnel encapsulation (MPLS, seg6, …).
    Encapsulation,
    /// A route type lpmkit does not model (`nat`, `xresolve`, unknown).
    RouteType,
    /// An address the family cannot hold (an MPLS `via`, for instance).
    Address,
}

impl Unrepresentable {
    /// A short name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Unrepresentable::Tos => "tos-specific",
            Unrepresentable::SourceSpecific => "source-specific",
            Unrepresentable::Encapsulation => "encapsulation",
            Unrepresentable::RouteType => "route type",
            Unrepresentable::Address => "address",
        }
    }
}

/// How many of `reasons` there are of each, sorted by reason (for reports).
pub(crate) fn tally(
    reasons: impl Iterator<Item = Unrepresentable>,
) -> Vec<(Unrepresentable, usize)> {
    let mut counts: std::collections::BTreeMap<Unrepresentable, usize> = Default::default();
    for r in reasons {
        *counts.entry(r).or_default() += 1;
    }
    counts.into_iter().collect()
}

impl fmt::Display for Unrepresentable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One route message of the followed table, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelRoute<A: Address> {
    /// The destination prefix.
    pub prefix: Prefix<A>,
    /// The route's metric (`metric`/`priority`; 0 if the kernel sent none).
    pub metric: u32,
    /// IPv4 TOS (routes with TOS ≠ 0 are unrepresentable).
    pub tos: u8,
    /// IPv6 source prefix length (≠ 0: unrepresentable).
    pub src_len: u8,
    /// What the route does, or why lpmkit cannot represent it. A route through a
    /// nexthop object is [`RouteTarget::NexthopObject`] here (the reference, resolved by
    /// the sync); unicast paths carry the kernel's dead marks.
    pub target: Result<RouteTarget, Unrepresentable>,
    /// The interface a route that is not unicast is bound to (`dev`; 0: none), which
    /// goes with it when the interface goes down.
    pub oif: u32,
    /// Scope `host` (IPv4): the route outlives its interface going down (not its
    /// deletion).
    pub host_scope: bool,
    /// An IPv6 gateway route that the kernel joins with the other gateway routes of the
    /// same prefix and metric into one multipath route (`rt6_qualify_for_ecmp`: a
    /// gateway, no nexthop object, not learned from a router advertisement).
    pub siblings: bool,
    /// The preferred source address of an IPv4 route (`src`, `RTA_PREFSRC`): a route of
    /// table `main` goes when its source stops being an address of the host. `None` for
    /// IPv6 routes (the kernel drops their source silently with the address, and they
    /// keep forwarding).
    pub src: Option<IpAddr>,
}

/// The routing table a message belongs to (`RTA_TABLE`, else the header's 8-bit field).
pub(crate) fn table_of(msg: &RouteMessage) -> u32 {
    msg.attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(msg.header.table as u32)
}

fn ip_of(addr: &RouteAddress) -> Option<IpAddr> {
    match addr {
        RouteAddress::Inet(a) => Some(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

/// The family of a route message, if it is IPv4 or IPv6.
pub(crate) fn family_of(msg: &RouteMessage) -> Option<Family> {
    match msg.header.address_family {
        AddressFamily::Inet => Some(Family::V4),
        AddressFamily::Inet6 => Some(Family::V6),
        _ => None,
    }
}

fn path_of(
    attrs: &[RouteAttribute],
    ifindex: u32,
    weight: u16,
    dead: bool,
) -> Result<Path, Unrepresentable> {
    let mut gateway = None;
    for a in attrs {
        match a {
            RouteAttribute::Gateway(g) => {
                gateway = Some(ip_of(g).ok_or(Unrepresentable::Address)?);
            }
            RouteAttribute::Via(_) => return Err(Unrepresentable::Address),
            RouteAttribute::Encap(_) | RouteAttribute::EncapType(_) => {
                return Err(Unrepresentable::Encapsulation)
            }
            _ => {}
        }
    }
    Ok(Path {
        gateway,
        ifindex,
        weight,
        dead,
    })
}

fn multipath(hops: &[RouteNextHop]) -> Result<RouteTarget, Unrepresentable> {
    let mut paths = hops
        .iter()
        .map(|h| {
            path_of(
                &h.attributes,
                h.interface_index,
                h.hops as u16 + 1,
                h.flags.contains(RouteNextHopFlags::Dead),
            )
        })
        .collect::<Result<Vec<_>, _>>()?;
    paths.sort();
    Ok(RouteTarget::Unicast(paths))
}

/// Decodes a route message of family `A` (`None` for cache entries and other families).
pub(crate) fn decode<A: Address>(msg: &RouteMessage) -> Option<KernelRoute<A>> {
    if family_of(msg) != Some(A::FAMILY) || msg.header.flags.contains(RouteFlags::Cloned) {
        return None;
    }
    let len = msg.header.destination_prefix_length;
    let mut dst = None;
    let mut metric = 0;
    let mut oif = 0;
    let mut nhid = None;
    let mut multi = None;
    let mut src = None;
    for a in &msg.attributes {
        match a {
            RouteAttribute::Destination(d) => dst = Some(ip_of(d)),
            RouteAttribute::PrefSource(s) => src = ip_of(s),
            RouteAttribute::Priority(p) => metric = *p,
            RouteAttribute::Oif(i) => oif = *i,
            RouteAttribute::NhId(id) => nhid = Some(*id),
            RouteAttribute::MultiPath(hops) => multi = Some(hops),
            _ => {}
        }
    }
    let addr = match dst {
        None => A::ZERO,
        Some(ip) => ip.and_then(A::from_ip)?,
    };
    let prefix = Prefix::new(addr, len).ok()?;
    let target = if msg.header.tos != 0 {
        Err(Unrepresentable::Tos)
    } else if msg.header.source_prefix_length != 0 {
        Err(Unrepresentable::SourceSpecific)
    } else {
        match msg.header.kind {
            // A route through a nexthop object (the kernel reports one through a
            // blackhole object as a blackhole route).
            RouteType::Unicast | RouteType::BlackHole if nhid.is_some() => {
                Ok(RouteTarget::NexthopObject(nhid.unwrap_or_default()))
            }
            RouteType::Unicast => match multi {
                Some(hops) => multipath(hops),
                None => path_of(
                    &msg.attributes,
                    oif,
                    1,
                    msg.header.flags.contains(RouteFlags::Dead),
                )
                .map(|p| RouteTarget::Unicast(vec![p])),
            },
            RouteType::BlackHole => Ok(RouteTarget::Blackhole),
            RouteType::Unreachable => Ok(RouteTarget::Unreachable),
            RouteType::Prohibit => Ok(RouteTarget::Prohibit),
            RouteType::Throw => Ok(RouteTarget::Throw),
            RouteType::Local => Ok(RouteTarget::Local),
            RouteType::Broadcast => Ok(RouteTarget::Broadcast),
            RouteType::Anycast => Ok(RouteTarget::Anycast),
            RouteType::Multicast => Ok(RouteTarget::Multicast),
            _ => Err(Unrepresentable::RouteType),
        }
    };
    let siblings = A::FAMILY == Family::V6
        && msg.header.protocol != RouteProtocol::Ra
        && matches!(&target, Ok(RouteTarget::Unicast(paths))
            if !paths.is_empty() && paths.iter().all(|p| p.gateway.is_some()));
    Some(KernelRoute {
        prefix,
        metric,
        tos: msg.header.tos,
        src_len: msg.header.source_prefix_length,
        target,
        oif: if matches!(msg.header.kind, RouteType::Unicast) {
            0
        } else {
            oif
        },
        host_scope: A::FAMILY == Family::V4 && msg.header.scope == RouteScope::Host,
        siblings,
        // IPv6 routes keep forwarding without their source, which the kernel drops
        // silently when the address goes (`rt6_remove_prefsrc`).
        src: src.filter(|_| A::FAMILY == Family::V4),
    })
}

/// A route message of family `A` with what it does: `RTM_NEWROUTE` (its header's
/// `NLM_F_REPLACE` and `NLM_F_APPEND` flags in `flags`) or `RTM_DELROUTE`; its table and
/// its route. `None` for other messages, other families and cache entries. What a
/// notification and an FPM frame carry alike.
pub(crate) fn route_event<A: Address>(
    flags: u16,
    msg: &RouteNetlinkMessage,
) -> Option<(RouteOp, u32, KernelRoute<A>)> {
    let (op, r) = match msg {
        RouteNetlinkMessage::NewRoute(r) => (
            RouteOp::New {
                replace: flags & NLM_F_REPLACE != 0,
                append: flags & NLM_F_APPEND != 0,
            },
            r,
        ),
        RouteNetlinkMessage::DelRoute(r) => (RouteOp::Del, r),
        _ => return None,
    };
    Some((op, table_of(r), decode::<A>(r)?))
}

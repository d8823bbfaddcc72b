//! The messages zebra's `dplane_fpm_nl` sends, written byte for byte as zebra 8.4 writes
//! them (`netlink_route_multipath_msg_encode`, `netlink_nexthop_msg_encode`): for tests,
//! fuzz seeds and FPM clients. Not part of the documented API.

use std::net::IpAddr;

use crate::netlink::{Nexthop, RouteTarget};
use crate::prefix::{Address, Family, Prefix};

const RTM_NEWROUTE: u16 = 24;
const RTM_DELROUTE: u16 = 25;
const RTM_NEWNEXTHOP: u16 = 104;
const RTM_DELNEXTHOP: u16 = 105;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_CREATE: u16 = 0x400;

const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_GATEWAY: u16 = 5;
const RTA_PRIORITY: u16 = 6;
const RTA_MULTIPATH: u16 = 9;
const RTA_TABLE: u16 = 15;
const RTA_NH_ID: u16 = 30;

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;

/// zebra's protocol numbers (`RTPROT_ZEBRA`, `RTPROT_BGP`) and route types.
const RTPROT_ZEBRA: u8 = 11;
const RTPROT_BGP: u8 = 186;
const RTN_UNICAST: u8 = 1;
const RTN_BLACKHOLE: u8 = 6;
const RTN_UNREACHABLE: u8 = 7;
const RTN_PROHIBIT: u8 = 8;

/// The metric zebra gives every route (`NL_DEFAULT_ROUTE_METRIC`).
const METRIC: u32 = 20;

fn family_byte(f: Family) -> u8 {
    match f {
        Family::V4 => libc::AF_INET as u8,
        Family::V6 => libc::AF_INET6 as u8,
    }
}

fn ip_bytes(ip: IpAddr) -> Vec<u8> {
    match ip {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// Appends an attribute (padded to 4 bytes).
fn attr(out: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    out.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(payload);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

/// A netlink message: header, then `body`.
fn message(kind: u16, flags: u16, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&((16 + body.len()) as u32).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(body);
    out
}

/// `struct rtmsg` and the attributes every route message has: destination, metric, table.
fn route_head<A: Address>(prefix: Prefix<A>, table: u32, protocol: u8, kind: u8) -> Vec<u8> {
    let mut b = vec![
        family_byte(A::FAMILY),
        prefix.len(),
        0,
        0,
        if table < 256 { table as u8 } else { 0 },
        protocol,
        0,
        kind,
    ];
    b.extend_from_slice(&0u32.to_ne_bytes());
    attr(&mut b, RTA_DST, &ip_bytes(prefix.addr().to_std().into()));
    attr(&mut b, RTA_PRIORITY, &METRIC.to_ne_bytes());
    if table >= 256 {
        attr(&mut b, RTA_TABLE, &table.to_ne_bytes());
    }
    b
}

/// zebra's `RTM_NEWROUTE` for `prefix` in `table`: a unicast route through `target`'s
/// paths (one: gateway and interface; several: `RTA_MULTIPATH`), through a nexthop
/// object (`RouteTarget::NexthopObject`), or a blackhole/unreachable/prohibit route.
/// IPv4 routes carry `NLM_F_REPLACE`, IPv6 ones do not (zebra without
/// `--v6-rr-semantics`). `None` for targets zebra does not send.
pub fn new_route<A: Address>(
    prefix: Prefix<A>,
    table: u32,
    target: &RouteTarget,
) -> Option<Vec<u8>> {
    let kind = match target {
        RouteTarget::Unicast(_) | RouteTarget::NexthopObject(_) => RTN_UNICAST,
        RouteTarget::Blackhole => RTN_BLACKHOLE,
        RouteTarget::Unreachable => RTN_UNREACHABLE,
        RouteTarget::Prohibit => RTN_PROHIBIT,
        _ => return None,
    };
    let mut b = route_head(prefix, table, RTPROT_BGP, kind);
    match target {
        RouteTarget::NexthopObject(id) => attr(&mut b, RTA_NH_ID, &id.to_ne_bytes()),
        RouteTarget::Unicast(paths) if paths.len() == 1 => {
            if let Some(g) = paths[0].gateway {
                attr(&mut b, RTA_GATEWAY, &ip_bytes(g));
            }
            attr(&mut b, RTA_OIF, &paths[0].ifindex.to_ne_bytes());
        }
        RouteTarget::Unicast(paths) => {
            let mut hops = Vec::new();
            for p in paths {
                let mut gw = Vec::new();
                if let Some(g) = p.gateway {
                    attr(&mut gw, RTA_GATEWAY, &ip_bytes(g));
                }
                // struct rtnexthop: length, flags, hops (weight - 1), ifindex.
                hops.extend_from_slice(&((8 + gw.len()) as u16).to_ne_bytes());
                hops.push(0);
                hops.push(p.weight.saturating_sub(1).min(255) as u8);
                hops.extend_from_slice(&p.ifindex.to_ne_bytes());
                hops.extend_from_slice(&gw);
            }
            attr(&mut b, RTA_MULTIPATH, &hops);
        }
        _ => {}
    }
    let flags = NLM_F_REQUEST
        | NLM_F_CREATE
        | if A::FAMILY == Family::V4 {
            NLM_F_REPLACE
        } else {
            0
        };
    Some(message(RTM_NEWROUTE, flags, &b))
}

/// zebra's `RTM_DELROUTE` for `prefix`: the prefix alone (route type 0, no nexthop).
pub fn del_route<A: Address>(prefix: Prefix<A>, table: u32) -> Vec<u8> {
    let b = route_head(prefix, table, RTPROT_BGP, 0);
    message(RTM_DELROUTE, NLM_F_REQUEST | NLM_F_CREATE, &b)
}

/// zebra's `RTM_NEWNEXTHOP` for object `id`. `None` for [`Nexthop::Other`].
pub fn new_nexthop(id: u32, nexthop: &Nexthop) -> Option<Vec<u8>> {
    // struct nhmsg: family, scope, protocol, reserved, flags.
    let family = match nexthop {
        Nexthop::Single(p) => match p.gateway {
            Some(IpAddr::V6(_)) => libc::AF_INET6 as u8,
            _ => libc::AF_INET as u8,
        },
        Nexthop::Blackhole => libc::AF_INET as u8,
        Nexthop::Group(_) => 0,
        _ => return None,
    };
    let mut b = vec![family, 0, RTPROT_ZEBRA, 0, 0, 0, 0, 0];
    attr(&mut b, NHA_ID, &id.to_ne_bytes());
    match nexthop {
        Nexthop::Single(p) => {
            if let Some(g) = p.gateway {
                attr(&mut b, NHA_GATEWAY, &ip_bytes(g));
            }
            attr(&mut b, NHA_OIF, &p.ifindex.to_ne_bytes());
        }
        Nexthop::Blackhole => attr(&mut b, NHA_BLACKHOLE, &[]),
        Nexthop::Group(members) => {
            // struct nexthop_grp: id, weight - 1 (low byte), its high byte, reserved.
            let mut g = Vec::new();
            for (m, w) in members {
                let w = w.saturating_sub(1);
                g.extend_from_slice(&m.to_ne_bytes());
                g.extend_from_slice(&w.to_le_bytes());
                g.extend_from_slice(&[0, 0]);
            }
            attr(&mut b, NHA_GROUP, &g);
        }
        _ => return None,
    }
    Some(message(
        RTM_NEWNEXTHOP,
        NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE,
        &b,
    ))
}

/// zebra's `RTM_DELNEXTHOP` for object `id`.
pub fn del_nexthop(id: u32) -> Vec<u8> {
    let mut b = vec![0u8; 8];
    attr(&mut b, NHA_ID, &id.to_ne_bytes());
    message(RTM_DELNEXTHOP, NLM_F_REQUEST | NLM_F_CREATE, &b)
}

//! Nexthop objects (`ip nexthop`, `RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP`): what routes with
//! `nhid N` forward through. The messages are decoded here from their wire format
//! (`struct nhmsg` and `NHA_*` attributes, `include/uapi/linux/nexthop.h`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::route::Path;

/// `RTM_NEWNEXTHOP`.
pub(crate) const RTM_NEWNEXTHOP: u16 = 104;
/// `RTM_DELNEXTHOP`.
pub(crate) const RTM_DELNEXTHOP: u16 = 105;
/// `RTM_GETNEXTHOP`.
pub(crate) const RTM_GETNEXTHOP: u16 = 106;
/// The rtnetlink multicast group of nexthop notifications (`RTNLGRP_NEXTHOP`).
pub(crate) const RTNLGRP_NEXTHOP: u32 = 32;

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
const NHA_ENCAP_TYPE: u16 = 7;
const NHA_ENCAP: u16 = 8;
const NHA_FDB: u16 = 11;

/// What a nexthop object does.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Nexthop {
    /// One path: a gateway on an interface, or an interface alone (weight 1).
    Single(Path),
    /// `blackhole`: drop.
    Blackhole,
    /// A group of other objects (multipath or resilient): member ids and weights.
    Group(Vec<(u32, u16)>),
    /// An object no route of a FIB can resolve through lpmkit: a bridge FDB nexthop, or
    /// one with a lightweight-tunnel encapsulation. Routes through it are followed as
    /// [`RouteTarget::NexthopObject`](super::RouteTarget::NexthopObject).
    Other,
}

impl Nexthop {
    /// The interface a single path uses (0 for the other kinds).
    pub fn ifindex(&self) -> u32 {
        match self {
            Nexthop::Single(p) => p.ifindex,
            _ => 0,
        }
    }
}

/// One nexthop object, as a message announced it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NexthopObject {
    /// Its id (`id N`).
    pub id: u32,
    /// What it does.
    pub kind: Nexthop,
}

/// The attributes of `buf`: (type without the nested/byte-order bits, payload).
fn attributes(mut buf: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    core::iter::from_fn(move || {
        if buf.len() < 4 {
            return None;
        }
        let len = u16::from_ne_bytes([buf[0], buf[1]]) as usize;
        let kind = u16::from_ne_bytes([buf[2], buf[3]]) & 0x3fff;
        if len < 4 || len > buf.len() {
            buf = &[];
            return None;
        }
        let payload = &buf[4..len];
        buf = &buf[((len + 3) & !3).min(buf.len())..];
        Some((kind, payload))
    })
}

fn u32_of(b: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(..4)?.try_into().ok()?))
}

/// Decodes the body of an `RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP` message (what follows the
/// netlink header); `None` if it is malformed or names no id.
pub(crate) fn parse(body: &[u8]) -> Option<NexthopObject> {
    // struct nhmsg: family, scope, protocol, reserved (1 byte each), flags (u32).
    let attrs = body.get(8..)?;
    let mut id = None;
    let mut gateway = None;
    let mut oif = 0;
    let mut group = None;
    let mut blackhole = false;
    let mut other = false;
    for (kind, payload) in attributes(attrs) {
        match kind {
            NHA_ID => id = u32_of(payload),
            NHA_OIF => oif = u32_of(payload)?,
            NHA_BLACKHOLE => blackhole = true,
            NHA_GATEWAY => {
                gateway = Some(match payload.len() {
                    4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(payload).ok()?)),
                    16 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(payload).ok()?)),
                    _ => return None,
                })
            }
            NHA_GROUP => {
                // struct nexthop_grp: id (u32), weight - 1 (u8), its high bits (u8),
                // reserved (u16).
                let members = payload
                    .chunks_exact(8)
                    .map(|m| {
                        let w = u16::from_le_bytes([m[4], m[5]]);
                        (u32_of(m).unwrap_or(0), w.saturating_add(1))
                    })
                    .collect();
                group = Some(members);
            }
            NHA_ENCAP_TYPE | NHA_ENCAP | NHA_FDB => other = true,
            _ => {}
        }
    }
    let kind = if other {
        Nexthop::Other
    } else if let Some(members) = group {
        Nexthop::Group(members)
    } else if blackhole {
        Nexthop::Blackhole
    } else {
        Nexthop::Single(Path {
            gateway,
            ifindex: oif,
            weight: 1,
            dead: false,
        })
    };
    Some(NexthopObject { id: id?, kind })
}

/// The body of a dump request for every nexthop object: a `struct nhmsg` of zeros.
pub(crate) fn dump_request() -> [u8; 8] {
    [0; 8]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((4 + payload.len()) as u16).to_ne_bytes());
        v.extend_from_slice(&kind.to_ne_bytes());
        v.extend_from_slice(payload);
        while v.len() % 4 != 0 {
            v.push(0);
        }
        v
    }

    fn message(attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut v = vec![2, 0, 4, 0, 0, 0, 0, 0];
        for a in attrs {
            v.extend_from_slice(a);
        }
        v
    }

    #[test]
    fn single_group_blackhole_and_malformed() {
        let single = message(&[
            attr(NHA_ID, &10u32.to_ne_bytes()),
            attr(NHA_GATEWAY, &[192, 0, 2, 1]),
            attr(NHA_OIF, &3u32.to_ne_bytes()),
        ]);
        assert_eq!(
            parse(&single),
            Some(NexthopObject {
                id: 10,
                kind: Nexthop::Single(Path {
                    gateway: Some("192.0.2.1".parse().unwrap()),
                    ifindex: 3,
                    weight: 1,
                    dead: false,
                })
            })
        );
        let mut members = Vec::new();
        members.extend_from_slice(&10u32.to_ne_bytes());
        members.extend_from_slice(&[2, 0, 0, 0]); // weight 3
        members.extend_from_slice(&14u32.to_ne_bytes());
        members.extend_from_slice(&[0xff, 0x01, 0, 0]); // weight 512
        let group = message(&[
            attr(NHA_ID, &22u32.to_ne_bytes()),
            attr(NHA_GROUP, &members),
        ]);
        assert_eq!(
            parse(&group).unwrap().kind,
            Nexthop::Group(vec![(10, 3), (14, 512)])
        );
        let bh = message(&[attr(NHA_ID, &30u32.to_ne_bytes()), attr(NHA_BLACKHOLE, &[])]);
        assert_eq!(parse(&bh).unwrap().kind, Nexthop::Blackhole);
        let fdb = message(&[attr(NHA_ID, &31u32.to_ne_bytes()), attr(NHA_FDB, &[])]);
        assert_eq!(parse(&fdb).unwrap().kind, Nexthop::Other);
        // No id, a truncated header, an attribute longer than the message.
        assert_eq!(parse(&message(&[attr(NHA_BLACKHOLE, &[])])), None);
        assert_eq!(parse(&[2, 0, 0]), None);
        let mut bad = message(&[attr(NHA_ID, &1u32.to_ne_bytes())]);
        bad[8] = 200;
        assert_eq!(parse(&bad), None);
        // A gateway of a length no family has.
        let odd = message(&[
            attr(NHA_ID, &1u32.to_ne_bytes()),
            attr(NHA_GATEWAY, &[1, 2]),
        ]);
        assert_eq!(parse(&odd), None);
    }
}

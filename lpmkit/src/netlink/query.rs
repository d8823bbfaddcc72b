//! The kernel's own answer for an address (`RTM_GETROUTE`, what `ip route get` prints),
//! and its comparison with a lookup's.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;

use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteType,
};
use netlink_packet_route::RouteNetlinkMessage;

use super::route::{table_of, Path, RouteTarget};
use super::socket::{address_family, Message, RtSocket};
use crate::prefix::Address;

/// What the kernel answers for one destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelAnswer {
    /// A route: what it does (for unicast, the one path the kernel chose) and the table
    /// that held it.
    Route {
        /// The route's action; a multipath route answers with the path chosen.
        target: RouteTarget,
        /// The table the lookup matched in (the policy rules may consult several).
        table: u32,
    },
    /// An error: `ENETUNREACH` (no route), `EINVAL` (blackhole), `EHOSTUNREACH`
    /// (unreachable), `EACCES` (prohibit), `EAGAIN` (throw), or another errno.
    Error(i32),
}

/// How a lookup's answer compares with the kernel's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The same action (for multipath: the kernel's path is one of the group's live
    /// paths).
    Agree,
    /// Different.
    Differ,
    /// Not comparable: another table answered (the `local` table, say), or the kernel's
    /// own output path could not use a route that forwards (see [`compare`]).
    Skip,
}

/// Compares the kernel's `answer` with `ours` (the target of the next hop a lookup in
/// the followed `table` returned; `None` for no route). A route through a nexthop object
/// is compared by the paths it resolves to; one lpmkit could not resolve
/// ([`RouteTarget::NexthopObject`]) never agrees.
///
/// `RTM_GETROUTE` answers as for a packet this host sends, which needs a source address:
/// for a route straight out of an interface (no gateway) of scope `host`, on an interface
/// without an address, the kernel picks the loopback address and refuses (`EINVAL`),
/// while a forwarded packet takes the route. Such an answer, against a unicast route
/// without a gateway, is [`Verdict::Skip`]; that the route is the kernel's, the
/// comparison of what was followed with a dump checks
/// ([`KernelSync::compare_with_dump`](super::KernelSync::compare_with_dump)).
pub fn compare(answer: &KernelAnswer, ours: Option<&RouteTarget>, table: u32) -> Verdict {
    let agree = |b: bool| if b { Verdict::Agree } else { Verdict::Differ };
    match answer {
        KernelAnswer::Route { table: t, .. } if *t != table => Verdict::Skip,
        // Without policy rules of its own, the kernel merges the `local` table into
        // `main` and names `main` for what `local` answered: local delivery is not a
        // route of the followed table.
        KernelAnswer::Route {
            target:
                t @ (RouteTarget::Local
                | RouteTarget::Broadcast
                | RouteTarget::Anycast
                | RouteTarget::Multicast),
            ..
        } if ours != Some(t) => Verdict::Skip,
        KernelAnswer::Route { target, .. } => match (target, ours) {
            (RouteTarget::Unicast(got), Some(ours @ RouteTarget::Unicast(_))) => {
                agree(got.first().is_some_and(|g| {
                    ours.live_paths()
                        .any(|p| p.gateway == g.gateway && p.ifindex == g.ifindex)
                }))
            }
            (t, Some(o)) => agree(t == o),
            (_, None) => Verdict::Differ,
        },
        KernelAnswer::Error(e)
            if *e == libc::EINVAL
                && matches!(ours, Some(RouteTarget::Unicast(paths))
                    if !paths.is_empty() && paths.iter().all(|p| p.gateway.is_none())) =>
        {
            Verdict::Skip
        }
        KernelAnswer::Error(e) => agree(match ours {
            None => *e == libc::ENETUNREACH,
            Some(RouteTarget::Blackhole) => *e == libc::EINVAL,
            Some(RouteTarget::Unreachable) => *e == libc::EHOSTUNREACH,
            Some(RouteTarget::Prohibit) => *e == libc::EACCES,
            Some(RouteTarget::Throw) => *e == libc::EAGAIN || *e == libc::ENETUNREACH,
            Some(_) => false,
        }),
    }
}

/// Asks the kernel (of a namespace) for its route to addresses, many requests in flight.
pub struct RouteQuery {
    socket: RtSocket,
}

impl core::fmt::Debug for RouteQuery {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RouteQuery").finish_non_exhaustive()
    }
}

/// Requests in flight at once.
const WINDOW: usize = 128;

impl RouteQuery {
    /// A query socket in `netns` (see [`in_netns`](super::in_netns)).
    pub fn open(netns: Option<&str>) -> io::Result<Self> {
        Ok(RouteQuery {
            socket: RtSocket::open(netns, &[], 8 << 20)?,
        })
    }

    /// The kernel's answer for each of `addrs`, in order.
    ///
    /// A route that drops (blackhole, unreachable, prohibit, throw) makes the kernel
    /// answer with an error, which does not say which table held the route (not even
    /// with `RTM_F_FIB_MATCH`): to compare a table other than the one such answers come
    /// from, look up addresses the policy rules send to it.
    pub fn get_many<A: Address>(&mut self, addrs: &[A]) -> io::Result<Vec<KernelAnswer>> {
        self.ask(addrs)
    }

    /// One `RTM_GETROUTE` per address, [`WINDOW`] in flight.
    fn ask<A: Address>(&mut self, addrs: &[A]) -> io::Result<Vec<KernelAnswer>> {
        let mut out = Vec::with_capacity(addrs.len());
        for window in addrs.chunks(WINDOW) {
            let mut seqs = HashMap::with_capacity(window.len());
            for (i, &a) in window.iter().enumerate() {
                let mut req = RouteMessage::default();
                req.header.address_family = address_family(A::FAMILY);
                req.header.destination_prefix_length = A::BITS;
                req.header.flags = RouteFlags::LookupTable;
                let ip: IpAddr = a.to_std().into();
                req.attributes
                    .push(RouteAttribute::Destination(RouteAddress::from(ip)));
                let seq = self.socket.send(RouteNetlinkMessage::GetRoute(req), 0)?;
                seqs.insert(seq, i);
            }
            let mut answers: Vec<Option<KernelAnswer>> = vec![None; window.len()];
            let mut left = window.len();
            let mut bad = 0;
            while left > 0 {
                let Some(msgs) = self.socket.recv(false, &mut bad)? else {
                    continue;
                };
                for m in msgs {
                    let Message::Rt(m) = m else { continue };
                    let Some(&i) = seqs.get(&m.header.sequence_number) else {
                        continue;
                    };
                    let answer = match m.payload {
                        NetlinkPayload::Error(e) => KernelAnswer::Error(-e.raw_code()),
                        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(r)) => {
                            answer_of(&r)
                        }
                        _ => continue,
                    };
                    if answers[i].is_none() {
                        answers[i] = Some(answer);
                        left -= 1;
                    }
                }
            }
            out.extend(answers.into_iter().flatten());
        }
        Ok(out)
    }
}

fn answer_of(r: &RouteMessage) -> KernelAnswer {
    let mut gateway = None;
    let mut oif = 0;
    for a in &r.attributes {
        match a {
            RouteAttribute::Gateway(RouteAddress::Inet(g)) => gateway = Some(IpAddr::V4(*g)),
            RouteAttribute::Gateway(RouteAddress::Inet6(g)) => gateway = Some(IpAddr::V6(*g)),
            RouteAttribute::Oif(i) => oif = *i,
            _ => {}
        }
    }
    let target = match r.header.kind {
        RouteType::Unicast => RouteTarget::Unicast(vec![Path {
            gateway,
            ifindex: oif,
            weight: 1,
            dead: false,
        }]),
        RouteType::Local => RouteTarget::Local,
        RouteType::Broadcast => RouteTarget::Broadcast,
        RouteType::Anycast => RouteTarget::Anycast,
        RouteType::Multicast => RouteTarget::Multicast,
        RouteType::BlackHole => RouteTarget::Blackhole,
        RouteType::Unreachable => RouteTarget::Unreachable,
        RouteType::Prohibit => RouteTarget::Prohibit,
        RouteType::Throw => RouteTarget::Throw,
        _ => return KernelAnswer::Error(0),
    };
    KernelAnswer::Route {
        target,
        table: table_of(r),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(ifindex: u32) -> RouteTarget {
        RouteTarget::Unicast(vec![Path {
            gateway: None,
            ifindex,
            weight: 1,
            dead: false,
        }])
    }

    #[test]
    fn verdicts() {
        let route = |target: RouteTarget, table| KernelAnswer::Route { target, table };
        let via = RouteTarget::via("192.0.2.1".parse().unwrap(), 2);
        assert_eq!(
            compare(&route(via.clone(), 254), Some(&via), 254),
            Verdict::Agree
        );
        assert_eq!(
            compare(&route(via.clone(), 100), Some(&via), 254),
            Verdict::Skip
        );
        assert_eq!(
            compare(&route(via.clone(), 254), None, 254),
            Verdict::Differ
        );
        let unreach = KernelAnswer::Error(libc::ENETUNREACH);
        assert_eq!(compare(&unreach, None, 254), Verdict::Agree);
        assert_eq!(compare(&unreach, Some(&via), 254), Verdict::Differ);
        // EINVAL: a blackhole, or a scope-host route out of an interface without an
        // address (not comparable); never a gateway route.
        let einval = KernelAnswer::Error(libc::EINVAL);
        assert_eq!(
            compare(&einval, Some(&RouteTarget::Blackhole), 254),
            Verdict::Agree
        );
        assert_eq!(compare(&einval, Some(&dev(3)), 254), Verdict::Skip);
        assert_eq!(compare(&einval, Some(&via), 254), Verdict::Differ);
        assert_eq!(compare(&einval, None, 254), Verdict::Differ);
    }
}

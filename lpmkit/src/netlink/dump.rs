//! A full dump merged with the notifications that race it, so that the newest state wins.
//!
//! The dump is read on the notification socket itself, where the kernel queues a dump's
//! datagrams and the notifications in the order it makes them, and makes each datagram
//! once the one before is queued. The merge builds a fresh copy of the state from nothing,
//! taking everything in that order:
//!
//! * a notification is applied to the fresh copy as it comes (for an item the dump has
//!   not reached yet it lands on nothing, and the item's datagram replaces it later);
//! * a datagram of the dump sets its items (interfaces, addresses, nexthop objects, every
//!   route of each prefix, in the kernel's order), replacing what notifications left
//!   there; then the notifications queued since the previous datagram — made while the
//!   datagram was, which it may or may not hold — are applied again to its items. Applied
//!   to what already holds it, a notification leaves it as it is (a route the prefix has
//!   where the message puts it, a deletion of a route it lacks, an interface going down
//!   twice).
//!
//! The kernel announces some changes before they are done, and the route dump does not
//! hold the lock changes take: a datagram may be older than such a notification queued
//! before it. An IPv4 route deletion is announced just before the route leaves the table,
//! and done before the next change begins: when a prefix's last notification before its
//! datagram is a deletion, the route it deleted is not taken from the datagram. An
//! interface or address event (down, up, an address gone, a nexthop object deleted) is
//! announced before its routes change: a dump that such an event raced is made again
//! (a few times at most).
//!
//! Lost notifications (`ENOBUFS`) make the copy unreliable: the merge says so and the
//! caller starts again.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::IpAddr;

use netlink_packet_core::{NetlinkPayload, NLM_F_DUMP_INTR};
use netlink_packet_route::RouteNetlinkMessage;

use super::address;
use super::mirror::{Effect, LinkState, Mirror, Notice, TableOp};
use super::route::{decode, table_of, RouteOp};
use super::socket::{DumpPart, Message, RtSocket};
use crate::prefix::{Address, Family, Prefix};

/// Attempts of one dump part the kernel reports as interrupted by changes
/// (`NLM_F_DUMP_INTR`: a walk that may have missed items) before the merge gives up.
const INTERRUPTED_MAX: u32 = 16;

/// Why a merge stopped.
#[derive(Debug)]
pub(crate) enum MergeError {
    /// Notifications were lost (`ENOBUFS`): start again.
    Lost,
    /// The socket failed, or the kernel refused a dump.
    Io(io::Error),
}

impl From<io::Error> for MergeError {
    fn from(e: io::Error) -> Self {
        if e.raw_os_error() == Some(libc::ENOBUFS) {
            MergeError::Lost
        } else {
            MergeError::Io(e)
        }
    }
}

/// The notifications since the dump began (and those just before it, when given).
struct History<A: Address> {
    notices: Vec<Notice<A>>,
    /// The last notification of a route of each prefix (an index into `notices`).
    last: HashMap<Prefix<A>, usize>,
    /// Where the notifications since the last datagram of the dump begin.
    window: usize,
    /// An event announced before it is done (see the module docs) raced the dump.
    events_raced: bool,
}

impl<A: Address> History<A> {
    fn new(before: Vec<Notice<A>>) -> Self {
        let mut h = History {
            notices: Vec::new(),
            last: HashMap::new(),
            window: 0,
            events_raced: false,
        };
        for n in before {
            h.push(n);
        }
        h.window = h.notices.len();
        h.events_raced = false;
        h
    }

    fn push(&mut self, notice: Notice<A>) {
        let i = self.notices.len();
        for e in &notice.effects {
            match e.prefix() {
                Some(p) => {
                    self.last.insert(p, i);
                }
                None => self.events_raced |= !matches!(e, Effect::NexthopSet(_)),
            }
        }
        self.notices.push(notice);
    }

    /// Corrects the items a datagram set: the routes whose deletion was announced as the
    /// last notification of their prefix before the window, then every notification of
    /// the window, in order.
    fn replay(&mut self, fresh: &mut Mirror<A>, items: &Items<A>) {
        if A::FAMILY == Family::V4 {
            for p in &items.prefixes {
                let Some(&i) = self.last.get(p) else { continue };
                if i >= self.window {
                    continue;
                }
                for e in &self.notices[i].effects {
                    if let Effect::Route(op @ RouteOp::Del, route) = e {
                        if route.prefix == *p {
                            fresh.routes.apply(*op, route);
                        }
                    }
                }
            }
        }
        for notice in &self.notices[self.window..] {
            match notice.table {
                Some(op @ TableOp::Link(index, _)) if items.links.contains(&index) => {
                    fresh.apply_table(op);
                }
                Some(op @ TableOp::Address { ifindex, addr, .. })
                    if items.addresses.contains(&(ifindex, addr)) =>
                {
                    fresh.apply_table(op)
                }
                _ => {}
            }
            if !items.prefixes.is_empty() {
                for e in &notice.effects {
                    fresh.replay_effect(e, &items.prefixes);
                }
            }
        }
        self.window = self.notices.len();
    }
}

/// The items a datagram of the dump set.
#[derive(Default)]
struct Items<A: Address> {
    links: HashSet<u32>,
    addresses: HashSet<(u32, IpAddr)>,
    prefixes: HashSet<Prefix<A>>,
}

/// Dumps interfaces, addresses, nexthop objects and routes on `socket` (which receives
/// the notifications) into `fresh` (empty but for its next-hop table), merged with the
/// notifications that arrive meanwhile; each of those is also handed to `notified`, in
/// order, with what it is. `before`: the notifications read just before (none lost
/// since). `bad` counts messages that did not decode. Returns whether an interface or
/// address event raced the dump (see the module docs: then dump again).
pub(crate) fn merged<A: Address>(
    socket: &mut RtSocket,
    fresh: &mut Mirror<A>,
    before: Vec<Notice<A>>,
    bad: &mut usize,
    mut notified: impl FnMut(&Message, &Notice<A>),
) -> Result<bool, MergeError> {
    let port = socket.port();
    let mut history = History::new(before);
    for part in [
        DumpPart::Links,
        DumpPart::Addresses,
        DumpPart::Nexthops,
        DumpPart::Routes,
    ] {
        let mut interrupted = 0;
        loop {
            let seq = socket.request_dump(part, A::FAMILY)?;
            // The prefixes this attempt has set (a prefix's routes may span datagrams).
            let mut seen: HashSet<Prefix<A>> = HashSet::new();
            let mut intr = false;
            loop {
                let Some(msgs) = socket.recv(false, bad)? else {
                    continue;
                };
                let ours = msgs.iter().any(|m| {
                    let h = m.header();
                    h.port_number == port && h.sequence_number == seq
                });
                if !ours {
                    for m in &msgs {
                        let (notice, _) = fresh.handle(m);
                        notified(m, &notice);
                        history.push(notice);
                    }
                    continue;
                }
                let mut items = Items::default();
                let mut done = false;
                for m in msgs {
                    intr |= m.header().flags & NLM_F_DUMP_INTR != 0;
                    done |= set_item(fresh, part, m, &mut seen, &mut items)?;
                }
                history.replay(fresh, &items);
                if done {
                    break;
                }
            }
            if !intr {
                break;
            }
            interrupted += 1;
            if interrupted >= INTERRUPTED_MAX {
                return Err(MergeError::Io(io::Error::other(format!(
                    "a dump was interrupted by changes {INTERRUPTED_MAX} times in a row"
                ))));
            }
        }
    }
    Ok(history.events_raced)
}

/// Sets the item a message of the dump names in `fresh`; true at the dump's end.
fn set_item<A: Address>(
    fresh: &mut Mirror<A>,
    part: DumpPart,
    m: Message,
    seen: &mut HashSet<Prefix<A>>,
    items: &mut Items<A>,
) -> Result<bool, MergeError> {
    let rt = match m {
        Message::Nexthop {
            deleted: false,
            object,
            ..
        } => {
            fresh.apply_effect(&Effect::NexthopSet(object));
            return Ok(false);
        }
        Message::Nexthop { .. } => return Ok(false),
        Message::Rt(rt) => rt,
    };
    match rt.payload {
        NetlinkPayload::Done(_) => Ok(true),
        NetlinkPayload::Error(e) if e.code.is_some() => {
            let e = e.to_io();
            // Kernels without nexthop objects refuse their dump: there are none.
            let unsupported = matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EINVAL | libc::EAFNOSUPPORT)
            );
            if part == DumpPart::Nexthops && unsupported {
                Ok(true)
            } else {
                // (`ENOBUFS`: the dump found the buffer full of notifications.)
                Err(MergeError::from(e))
            }
        }
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(l)) => {
            let index = l.header.index;
            fresh.apply_table(TableOp::Link(index, Some(LinkState::of(&l))));
            items.links.insert(index);
            Ok(false)
        }
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewAddress(a)) => {
            if let Some((ifindex, addr)) = address::decode(&a, A::FAMILY) {
                fresh.apply_table(TableOp::Address {
                    ifindex,
                    addr,
                    present: true,
                });
                items.addresses.insert((ifindex, addr));
            }
            Ok(false)
        }
        NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(r)) => {
            if table_of(&r) != fresh.table() {
                return Ok(false);
            }
            let Some(route) = decode::<A>(&r) else {
                return Ok(false);
            };
            if seen.insert(route.prefix) {
                fresh.routes.clear_prefix(route.prefix);
            }
            items.prefixes.insert(route.prefix);
            // The dump lists a prefix's routes in the kernel's order.
            let op = RouteOp::New {
                replace: false,
                append: true,
            };
            fresh.routes.apply(op, &route);
            Ok(false)
        }
        _ => Ok(false),
    }
}

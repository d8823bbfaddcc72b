//! The kernel's state as far as one followed table cares — its routes
//! ([`KernelRoutes`]), the interfaces' state and the family's addresses — and what each
//! notification does to it, route notifications and the events after which the kernel
//! changes routes without one (see [`KernelRoutes`]' event table).

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::link::{LinkFlags, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;

use super::address::{self, Addresses};
use super::nexthop::NexthopObject;
use super::route::{family_of, route_event, KernelRoute, RouteOp, RouteTarget, RT_TABLE_MAIN};
use super::socket::Message;
use super::state::KernelRoutes;
use crate::fib::Change;
use crate::nexthop::NextHopTable;
use crate::prefix::{Address, Family, Prefix};

/// The state of an interface, as far as routes care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LinkState {
    /// `IFF_UP`.
    pub(crate) up: bool,
    /// `IFF_LOWER_UP` or `IFF_RUNNING`: the carrier.
    pub(crate) carrier: bool,
}

impl LinkState {
    pub(crate) fn of(msg: &LinkMessage) -> Self {
        let f = msg.header.flags;
        LinkState {
            up: f.contains(LinkFlags::Up),
            carrier: f.intersects(LinkFlags::LowerUp | LinkFlags::Running),
        }
    }
}

/// What kind of notification a message is, for the counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A route of the followed family; `table`: of the followed table.
    Route { table: bool },
    /// An interface announced or deleted.
    Link,
    /// A nexthop object announced or deleted.
    Nexthop,
    /// An address of the followed family added or removed.
    Address,
    /// Anything else (other families, dump ends, errors).
    Other,
}

/// What a notification changes in the interface and address tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableOp {
    /// Interface `.0` is now `.1` (`None`: deleted).
    Link(u32, Option<LinkState>),
    /// Address `addr` of interface `ifindex` was added (`present`) or removed.
    Address {
        ifindex: u32,
        addr: IpAddr,
        present: bool,
    },
}

/// What a notification does to the routes and nexthop objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Effect<A: Address> {
    /// A route message of the followed table.
    Route(RouteOp, KernelRoute<A>),
    /// Interface down: [`KernelRoutes::link_down`].
    LinkDown(u32),
    /// Interface up, or an IPv4 address added on an interface that is up:
    /// [`KernelRoutes::link_up`] (`fib_sync_up`).
    LinkUp(u32),
    /// Carrier lost: [`KernelRoutes::carrier_lost`].
    CarrierLost(u32),
    /// Interface deleted: [`KernelRoutes::link_removed`].
    LinkRemoved(u32),
    /// The interface's last IPv4 address went: [`KernelRoutes::addresses_gone`].
    AddressesGone(u32),
    /// An IPv4 address is no longer the host's: [`KernelRoutes::source_gone`].
    SourceGone(IpAddr),
    /// A nexthop object announced: [`KernelRoutes::nexthop_set`].
    NexthopSet(NexthopObject),
    /// A nexthop object deleted: [`KernelRoutes::nexthop_removed`].
    NexthopRemoved(u32),
}

impl<A: Address> Effect<A> {
    /// The prefix of a route message (`None` for the events that reach any route).
    pub(crate) fn prefix(&self) -> Option<Prefix<A>> {
        match self {
            Effect::Route(_, r) => Some(r.prefix),
            _ => None,
        }
    }
}

/// One notification, interpreted against the state it arrived in.
#[derive(Clone, Debug)]
pub(crate) struct Notice<A: Address> {
    pub(crate) kind: Kind,
    pub(crate) table: Option<TableOp>,
    pub(crate) effects: Vec<Effect<A>>,
}

impl<A: Address> Notice<A> {
    fn of(kind: Kind) -> Self {
        Notice {
            kind,
            table: None,
            effects: Vec::new(),
        }
    }
}

/// The mirrored state of one kernel table of family `A`.
#[derive(Clone, Debug)]
pub(crate) struct Mirror<A: Address> {
    pub(crate) routes: KernelRoutes<A>,
    links: HashMap<u32, LinkState>,
    addresses: Addresses,
    /// The followed table's id.
    table: u32,
}

impl<A: Address> Mirror<A> {
    /// Nothing known of table `table`; next hops interned into `hops`.
    pub(crate) fn new(table: u32, hops: NextHopTable<RouteTarget>) -> Self {
        Mirror {
            routes: KernelRoutes::with_next_hops(hops),
            links: HashMap::new(),
            addresses: Addresses::default(),
            table,
        }
    }

    /// The followed table's id.
    pub(crate) fn table(&self) -> u32 {
        self.table
    }

    /// Interfaces and addresses known.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.links.len(), self.addresses.len())
    }

    /// What `m` does, given the state now (nothing is changed).
    pub(crate) fn interpret(&self, m: &Message) -> Notice<A> {
        let msg = match m {
            Message::Nexthop {
                deleted, object, ..
            } => {
                let mut n = Notice::of(Kind::Nexthop);
                n.effects.push(if *deleted {
                    Effect::NexthopRemoved(object.id)
                } else {
                    Effect::NexthopSet(object.clone())
                });
                return n;
            }
            Message::Rt(m) => m,
        };
        let NetlinkPayload::InnerMessage(inner) = &msg.payload else {
            return Notice::of(Kind::Other);
        };
        match inner {
            RouteNetlinkMessage::NewLink(l) => {
                self.link_changed(l.header.index, Some(LinkState::of(l)))
            }
            RouteNetlinkMessage::DelLink(l) => self.link_changed(l.header.index, None),
            RouteNetlinkMessage::NewAddress(a) | RouteNetlinkMessage::DelAddress(a) => {
                let added = matches!(inner, RouteNetlinkMessage::NewAddress(_));
                match address::decode(a, A::FAMILY) {
                    Some((ifindex, addr)) => self.address_changed(ifindex, addr, added),
                    None => Notice::of(Kind::Other),
                }
            }
            RouteNetlinkMessage::NewRoute(r) | RouteNetlinkMessage::DelRoute(r) => {
                if family_of(r) != Some(A::FAMILY) {
                    return Notice::of(Kind::Other);
                }
                match route_event::<A>(msg.header.flags, inner) {
                    Some((op, table, route)) if table == self.table => {
                        let mut n = Notice::of(Kind::Route { table: true });
                        n.effects.push(Effect::Route(op, route));
                        n
                    }
                    _ => Notice::of(Kind::Route { table: false }),
                }
            }
            _ => Notice::of(Kind::Other),
        }
    }

    /// Interface `index` is now `now` (`None`: deleted).
    fn link_changed(&self, index: u32, now: Option<LinkState>) -> Notice<A> {
        let mut n = Notice::of(Kind::Link);
        n.table = Some(TableOp::Link(index, now));
        let before = self.links.get(&index).copied();
        match (before, now) {
            (_, None) => {
                if before.is_some_and(|b| b.up) {
                    n.effects.push(Effect::LinkDown(index));
                }
                n.effects.push(Effect::LinkRemoved(index));
            }
            (Some(b), Some(now)) => {
                if b.up && !now.up {
                    n.effects.push(Effect::LinkDown(index));
                } else if !b.up && now.up {
                    n.effects.push(Effect::LinkUp(index));
                }
                if now.up && b.carrier && !now.carrier {
                    n.effects.push(Effect::CarrierLost(index));
                }
            }
            // A new interface (or one the dump missed): nothing of it to change.
            (None, Some(_)) => {}
        }
        n
    }

    /// Address `addr` of interface `ifindex` was added or removed (`fib_add_ifaddr`,
    /// `fib_del_ifaddr`, `fib_disable_ip`; IPv6 routes do not change with addresses).
    fn address_changed(&self, ifindex: u32, addr: IpAddr, added: bool) -> Notice<A> {
        let mut n = Notice::of(Kind::Address);
        let mut after = self.addresses.clone();
        let changed = if added {
            after.add(ifindex, addr)
        } else {
            after.remove(ifindex, addr)
        };
        if !changed {
            return n;
        }
        n.table = Some(TableOp::Address {
            ifindex,
            addr,
            present: added,
        });
        if A::FAMILY != Family::V4 {
            return n;
        }
        if added {
            if self.links.get(&ifindex).is_some_and(|l| l.up) {
                n.effects.push(Effect::LinkUp(ifindex));
            }
            return n;
        }
        if self.table == RT_TABLE_MAIN && !after.is_local(addr) {
            n.effects.push(Effect::SourceGone(addr));
        }
        if !after.any(ifindex) {
            n.effects.push(Effect::AddressesGone(ifindex));
        }
        n
    }

    /// Applies a change of the interface or address tables.
    pub(crate) fn apply_table(&mut self, op: TableOp) {
        match op {
            TableOp::Link(index, Some(state)) => {
                self.links.insert(index, state);
            }
            TableOp::Link(index, None) => {
                self.links.remove(&index);
                self.addresses.forget(index);
            }
            TableOp::Address {
                ifindex,
                addr,
                present: true,
            } => {
                self.addresses.add(ifindex, addr);
            }
            TableOp::Address {
                ifindex,
                addr,
                present: false,
            } => {
                self.addresses.remove(ifindex, addr);
            }
        }
    }

    /// Applies one effect to the routes; returns the changes to best routes.
    pub(crate) fn apply_effect(&mut self, e: &Effect<A>) -> Vec<Change<A>> {
        let r = &mut self.routes;
        match e {
            Effect::Route(op, route) => r.apply(*op, route).into_iter().collect(),
            Effect::LinkDown(i) => r.link_down(*i),
            Effect::LinkUp(i) => r.link_up(*i),
            Effect::CarrierLost(i) => r.carrier_lost(*i),
            Effect::LinkRemoved(i) => r.link_removed(*i),
            Effect::AddressesGone(i) => r.addresses_gone(*i),
            Effect::SourceGone(a) => r.source_gone(*a),
            Effect::NexthopSet(o) => r.nexthop_set(o.clone()),
            Effect::NexthopRemoved(id) => r.nexthop_removed(*id),
        }
    }

    /// Applies `e` again, to the routes of `prefixes` only (what a dump's datagram set):
    /// the effect may or may not be in what the datagram holds, and applied to routes
    /// that already hold it, it leaves them as they are. The nexthop objects and the
    /// tables are not touched (they are up to date).
    pub(crate) fn replay_effect(&mut self, e: &Effect<A>, prefixes: &HashSet<Prefix<A>>) {
        let r = &mut self.routes;
        let scope = Some(prefixes);
        match e {
            Effect::Route(op, route) => {
                if prefixes.contains(&route.prefix) {
                    r.apply(*op, route);
                }
            }
            Effect::LinkDown(i) => {
                r.paths_down(*i, false, scope);
            }
            Effect::AddressesGone(i) => {
                r.paths_down(*i, true, scope);
            }
            Effect::LinkUp(i) => {
                r.paths_up(*i, scope);
            }
            Effect::LinkRemoved(i) => {
                r.paths_removed(*i, scope);
            }
            Effect::SourceGone(a) => {
                r.sources_gone(*a, scope);
            }
            Effect::NexthopRemoved(id) => {
                r.objects_gone(*id, scope);
            }
            Effect::CarrierLost(_) | Effect::NexthopSet(_) => {}
        }
    }

    /// Interprets and applies `m`; returns what it was and the changes to best routes.
    pub(crate) fn handle(&mut self, m: &Message) -> (Notice<A>, Vec<Change<A>>) {
        let notice = self.interpret(m);
        if let Some(op) = notice.table {
            self.apply_table(op);
        }
        let changes = notice
            .effects
            .iter()
            .flat_map(|e| self.apply_effect(e))
            .collect();
        (notice, changes)
    }
}

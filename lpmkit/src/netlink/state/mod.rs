//! The kernel's routes of one table, mirrored: every route of every prefix (a prefix may
//! have several, with different metrics, and IPv6 several with the same metric on
//! different interfaces), the nexthop objects routes refer to, the best route per prefix
//! in a [`Rib`], and the [`Change`]s that route, nexthop, link and address events make to
//! it. Pure bookkeeping: no socket here.
//!
//! The kernel removes and revives routes without a route notification when an interface
//! goes down, comes up or disappears, when an interface loses its last IPv4 address or an
//! address stops being the host's, and when a nexthop object goes; these are modelled
//! here as the kernel does them (`fib_sync_down_dev`, `fib_sync_up`, `fib_disable_ip`,
//! `fib_sync_down_addr`, `fib6_ifdown`, `fib6_ifup`, `nexthop_flush_dev`,
//! `remove_nexthop`, Linux 6.x):
//!
//! | event | IPv4 routes | IPv6 routes | nexthop objects |
//! |---|---|---|---|
//! | interface down | a path through it is dead; a route whose paths are all dead is removed (scope `host` ones stay) | the same (the kernel notifies the removals) | removed (not blackholes) |
//! | interface up | its dead paths live again | the same | — |
//! | carrier lost | unchanged (`linkdown`, still used) | unchanged | removed (not blackholes) |
//! | interface deleted | every route with a path through it is removed | paths through it are removed, then routes left without one | removed |
//! | its last IPv4 address removed (`ip addr del`, `flush`) | as interface down, scope `host` routes too | unchanged | unchanged |
//! | an IPv4 address added, interface up | its dead paths live again | unchanged | — |
//! | an address no interface has any more | table `main`: the routes with it as `src` are removed | unchanged (the kernel drops their `src`) | — |
//! | object deleted | its routes are removed | the same | removed from groups; a group left empty is removed |

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use super::nexthop::{Nexthop, NexthopObject};
use super::route::{KernelRoute, Path, RouteOp, RouteTarget, Unrepresentable};
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::{Address, Family, Prefix};
use crate::rib::Rib;

/// One route of a prefix, in the kernel's order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    metric: u32,
    /// As the kernel holds it: unicast paths with their dead marks, a nexthop object by
    /// id, or a route type.
    route: RouteTarget,
    /// The interface a route that is not unicast is bound to (0: none).
    oif: u32,
    /// IPv4 scope `host`: survives its interface going down.
    host: bool,
    /// IPv6: joins the same-metric gateway routes as one multipath route.
    siblings: bool,
    /// The preferred source address (IPv4 routes go with it).
    src: Option<IpAddr>,
}

impl Entry {
    /// True if the route goes through interface `ifindex`.
    fn uses(&self, ifindex: u32) -> bool {
        match &self.route {
            RouteTarget::Unicast(paths) => paths.iter().any(|p| p.ifindex == ifindex),
            RouteTarget::NexthopObject(_) => false,
            _ => self.oif == ifindex,
        }
    }

    /// The same route as the kernel tells routes of one metric apart (IPv4: its
    /// `fib_info`, the source address included).
    fn same(&self, other: &Entry) -> bool {
        self.metric == other.metric && self.route.same_route(&other.route) && self.src == other.src
    }

    fn object(&self) -> Option<u32> {
        match self.route {
            RouteTarget::NexthopObject(id) => Some(id),
            _ => None,
        }
    }
}

/// Key of a route lpmkit cannot represent.
type OtherKey<A> = (Prefix<A>, u8, u8, u32);

/// The routes of one kernel table of family `A`, as lpmkit follows them.
///
/// The kernel may hold several routes for one prefix (different metrics; IPv4 routes
/// appended with the same metric; IPv6 routes of the same metric on different interfaces
/// — gateway routes of one metric are one multipath route); a lookup uses the first of
/// the lowest metric. This keeps all of them in the kernel's order, so that deleting the
/// best route brings the next one back, and puts the best in the [`Rib`] with its
/// [`RouteTarget`] interned as the next hop: a route through a nexthop object as the
/// paths the object resolves to now, a multipath route with its dead paths marked.
#[derive(Clone, Debug)]
pub struct KernelRoutes<A: Address> {
    routes: HashMap<Prefix<A>, Vec<Entry>>,
    other: HashMap<OtherKey<A>, Unrepresentable>,
    nexthops: HashMap<u32, Nexthop>,
    /// The prefixes with a route through each nexthop object (named by the route; the
    /// routes through a group's members are found through the group).
    users: HashMap<u32, HashSet<Prefix<A>>>,
    rib: Rib<A>,
    hops: NextHopTable<RouteTarget>,
}

impl<A: Address> Default for KernelRoutes<A> {
    fn default() -> Self {
        Self::with_next_hops(NextHopTable::new())
    }
}

/// What a route through `route` does now: the route itself, or for a nexthop object the
/// paths it resolves to (a group's members, each with its weight in the group).
pub(crate) fn resolve<'a>(
    nexthops: &HashMap<u32, Nexthop>,
    route: &'a RouteTarget,
) -> Cow<'a, RouteTarget> {
    let RouteTarget::NexthopObject(id) = route else {
        return Cow::Borrowed(route);
    };
    let resolved = match nexthops.get(id) {
        Some(Nexthop::Single(p)) => Some(RouteTarget::Unicast(vec![p.clone()])),
        Some(Nexthop::Blackhole) => Some(RouteTarget::Blackhole),
        Some(Nexthop::Group(members)) => {
            let mut paths = Vec::with_capacity(members.len());
            let mut blackhole = false;
            for (m, w) in members {
                match nexthops.get(m) {
                    Some(Nexthop::Single(p)) => paths.push(Path {
                        weight: *w,
                        ..p.clone()
                    }),
                    Some(Nexthop::Blackhole) => blackhole = true,
                    _ => {}
                }
            }
            paths.sort();
            if blackhole && paths.is_empty() {
                Some(RouteTarget::Blackhole)
            } else {
                (!paths.is_empty() && paths.len() == members.len())
                    .then_some(RouteTarget::Unicast(paths))
            }
        }
        _ => None,
    };
    resolved.map_or(Cow::Borrowed(route), Cow::Owned)
}

impl<A: Address> KernelRoutes<A> {
    /// No routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// No routes, interning next hops into `hops` (so that ids stay what they were).
    pub fn with_next_hops(hops: NextHopTable<RouteTarget>) -> Self {
        KernelRoutes {
            routes: HashMap::new(),
            other: HashMap::new(),
            nexthops: HashMap::new(),
            users: HashMap::new(),
            rib: Rib::new(),
            hops,
        }
    }

    /// The best route of every prefix.
    pub fn rib(&self) -> &Rib<A> {
        &self.rib
    }

    /// The route targets behind the `Rib`'s next-hop ids.
    pub fn next_hops(&self) -> &NextHopTable<RouteTarget> {
        &self.hops
    }

    /// The target of a next-hop id.
    pub fn target(&self, nh: NextHop) -> Option<&RouteTarget> {
        self.hops.value(nh)
    }

    /// Routes of the table lpmkit cannot represent, by reason (present now).
    pub fn unrepresentable(&self) -> Vec<(Unrepresentable, usize)> {
        super::route::tally(self.other.values().copied())
    }

    /// Every route held (all metrics; a multipath route counts once), representable or
    /// not.
    pub fn route_count(&self) -> usize {
        self.routes.values().map(Vec::len).sum::<usize>() + self.other.len()
    }

    /// Every representable route, as the kernel holds it: prefix, metric and target (a
    /// route through a nexthop object as [`RouteTarget::NexthopObject`]), the routes of a
    /// prefix in the kernel's order; prefixes in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (Prefix<A>, u32, &RouteTarget)> + '_ {
        self.routes
            .iter()
            .flat_map(|(p, list)| list.iter().map(move |e| (*p, e.metric, &e.route)))
    }

    /// The nexthop object `id`, if the kernel has it.
    pub fn nexthop(&self, id: u32) -> Option<&Nexthop> {
        self.nexthops.get(&id)
    }

    /// The nexthop objects (of both families: routes of one family may use the other's).
    pub fn nexthops(&self) -> impl Iterator<Item = (u32, &Nexthop)> + '_ {
        self.nexthops.iter().map(|(id, n)| (*id, n))
    }

    /// Applies one route message; returns the change to the best route of its prefix, if
    /// any.
    pub fn apply(&mut self, op: RouteOp, route: &KernelRoute<A>) -> Option<Change<A>> {
        let target = match &route.target {
            Ok(t) => t,
            Err(reason) => {
                let key = (route.prefix, route.tos, route.src_len, route.metric);
                match op {
                    RouteOp::New { .. } => self.other.insert(key, *reason),
                    RouteOp::Del => self.other.remove(&key),
                };
                return None;
            }
        };
        let entry = Entry {
            metric: route.metric,
            route: target.clone(),
            oif: route.oif,
            host: route.host_scope,
            siblings: route.siblings,
            src: route.src,
        };
        let v6 = A::FAMILY == Family::V6;
        self.edit(route.prefix, |list| match op {
            RouteOp::New { replace, append } => {
                if v6 {
                    insert_v6(list, entry, replace)
                } else {
                    insert_v4(list, entry, replace, append)
                }
            }
            RouteOp::Del => {
                if v6 {
                    delete_v6(list, &entry)
                } else if let Some(i) = list.iter().position(|e| e.same(&entry)) {
                    list.remove(i);
                }
            }
        })
    }

    /// Changes the routes of `prefix` by `f`, keeps the nexthop users' index, and
    /// returns the change to the prefix's best route.
    fn edit(&mut self, prefix: Prefix<A>, f: impl FnOnce(&mut Vec<Entry>)) -> Option<Change<A>> {
        let list = self.routes.entry(prefix).or_default();
        let before: Vec<u32> = list.iter().filter_map(Entry::object).collect();
        f(list);
        let after: Vec<u32> = list.iter().filter_map(Entry::object).collect();
        if list.is_empty() {
            self.routes.remove(&prefix);
        }
        for id in &before {
            if !after.contains(id) {
                if let Some(set) = self.users.get_mut(id) {
                    set.remove(&prefix);
                    if set.is_empty() {
                        self.users.remove(id);
                    }
                }
            }
        }
        for &id in &after {
            self.users.entry(id).or_default().insert(prefix);
        }
        self.settle(prefix)
    }

    /// Puts the best route of `prefix` (resolved) in the `Rib`; returns the change.
    fn settle(&mut self, prefix: Prefix<A>) -> Option<Change<A>> {
        let best = self
            .routes
            .get(&prefix)
            .and_then(|l| l.first())
            .map(|e| resolve(&self.nexthops, &e.route));
        let nh = best.map(|t| match self.hops.id(&t) {
            Some(id) => id,
            None => self.hops.intern(t.into_owned()),
        });
        if self.rib.get(&prefix) == nh {
            return None;
        }
        Some(match nh {
            Some(nh) => {
                self.rib.insert(prefix, nh);
                Change::Announce(prefix, nh)
            }
            None => {
                self.rib.remove(&prefix);
                Change::Withdraw(prefix)
            }
        })
    }

    /// Removes the nexthop objects `pick` selects (as the kernel flushes them from an
    /// interface).
    fn flush_nexthops(&mut self, pick: impl Fn(&Nexthop) -> bool) -> Vec<Change<A>> {
        let ids: Vec<u32> = self
            .nexthops
            .iter()
            .filter(|(_, n)| pick(n))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .flat_map(|id| self.nexthop_removed(id))
            .collect()
    }

    /// Forgets every route of `prefix` (a dump is about to give them all).
    pub(crate) fn clear_prefix(&mut self, prefix: Prefix<A>) {
        self.other.retain(|k, _| k.0 != prefix);
        self.edit(prefix, Vec::clear);
    }

    /// A nexthop object was announced (added, replaced, or a group's members changed):
    /// the routes through it, or through a group holding it, follow.
    pub fn nexthop_set(&mut self, object: NexthopObject) -> Vec<Change<A>> {
        let id = object.id;
        if self.nexthops.get(&id) == Some(&object.kind) {
            return Vec::new();
        }
        self.nexthops.insert(id, object.kind);
        let mut prefixes: HashSet<Prefix<A>> = self.users.get(&id).cloned().unwrap_or_default();
        for (gid, n) in &self.nexthops {
            if matches!(n, Nexthop::Group(m) if m.iter().any(|(m, _)| *m == id)) {
                if let Some(u) = self.users.get(gid) {
                    prefixes.extend(u.iter().copied());
                }
            }
        }
        prefixes
            .into_iter()
            .filter_map(|p| self.settle(p))
            .collect()
    }

    /// A nexthop object was deleted (or flushed with its interface): routes through it
    /// are removed, groups lose it as a member, and a group left empty goes too.
    pub fn nexthop_removed(&mut self, id: u32) -> Vec<Change<A>> {
        let mut changes = Vec::new();
        let mut gone = vec![id];
        let mut shrunk = Vec::new();
        while let Some(id) = gone.pop() {
            self.nexthops.remove(&id);
            for (gid, n) in self.nexthops.iter_mut() {
                if let Nexthop::Group(members) = n {
                    let before = members.len();
                    members.retain(|(m, _)| *m != id);
                    if members.len() < before {
                        if members.is_empty() {
                            gone.push(*gid);
                        } else {
                            shrunk.push(*gid);
                        }
                    }
                }
            }
            let prefixes: Vec<Prefix<A>> = self
                .users
                .get(&id)
                .map(|u| u.iter().copied().collect())
                .unwrap_or_default();
            for p in prefixes {
                changes.extend(self.edit(p, |list| {
                    list.retain(|e| e.object() != Some(id));
                }));
            }
        }
        for gid in shrunk {
            let prefixes: Vec<Prefix<A>> = self
                .users
                .get(&gid)
                .map(|u| u.iter().copied().collect())
                .unwrap_or_default();
            changes.extend(prefixes.into_iter().filter_map(|p| self.settle(p)));
        }
        changes
    }

    /// Replaces this state by `fresh` (a new dump interned into this state's next hops,
    /// see [`take_next_hops`](Self::take_next_hops)); returns the changes that turn the
    /// old `Rib` into the new one.
    pub fn replace_with(&mut self, fresh: KernelRoutes<A>) -> Vec<Change<A>> {
        let changes = diff(&self.rib, &fresh.rib);
        *self = fresh;
        changes
    }

    /// Moves the next-hop table out (to intern a fresh dump into the same ids), leaving a
    /// copy behind.
    pub fn take_next_hops(&self) -> NextHopTable<RouteTarget> {
        self.hops.clone()
    }
}

/// An IPv4 route message's route into the prefix's list (`fib_table_insert`): `replace`
/// takes the place of the first route of the same metric; otherwise the route goes
/// before the routes of its metric, or after them with `append`.
///
/// The kernel announces only a route it did not hold (it refuses an identical one,
/// without a notification). A copy the list holds already comes from a dump that raced
/// the notification, or the notification is taken again over such a dump: where the
/// message would put the route, it is left as it is; elsewhere, it is moved there (and a
/// `replace` then takes the place of the route the copy stood before).
fn insert_v4(list: &mut Vec<Entry>, new: Entry, replace: bool, append: bool) {
    let same_metric = |e: &Entry| e.metric == new.metric;
    if let Some(i) = list.iter().position(|e| e.same(&new)) {
        let first = list.iter().position(same_metric) == Some(i);
        let last = list.iter().rposition(same_metric) == Some(i);
        if (append && last) || (!append && first) {
            return;
        }
        list.remove(i);
    }
    if replace {
        if let Some(e) = list.iter_mut().find(|e| same_metric(e)) {
            *e = new;
            return;
        }
    }
    let at = if append {
        list.iter().position(|a| a.metric > new.metric)
    } else {
        list.iter().position(|a| a.metric >= new.metric)
    }
    .unwrap_or(list.len());
    list.insert(at, new);
}

/// An IPv6 route message's route into the prefix's list (`fib6_add_rt2node`): gateway
/// routes of one metric are one multipath route (a message adds its paths to it: the
/// kernel announces an added sibling with the whole group); `replace` takes the place of
/// the first route of the metric of the same kind (multipath-capable or not), else of
/// the first of the metric; a new route goes after the routes of its metric.
fn insert_v6(list: &mut Vec<Entry>, new: Entry, replace: bool) {
    let same_metric = |e: &Entry| e.metric == new.metric;
    if replace {
        let at = list
            .iter()
            .position(|e| same_metric(e) && e.siblings == new.siblings)
            .or_else(|| list.iter().position(same_metric));
        if let Some(i) = at {
            list[i] = new;
            return;
        }
    } else if new.siblings {
        if let Some(e) = list.iter_mut().find(|e| same_metric(e) && e.siblings) {
            if let (RouteTarget::Unicast(have), RouteTarget::Unicast(add)) =
                (&mut e.route, &new.route)
            {
                for p in add {
                    match have.iter_mut().find(|h| h.same_hop(p)) {
                        Some(h) => *h = p.clone(),
                        None => have.push(p.clone()),
                    }
                }
                have.sort();
                return;
            }
        }
    } else if list
        .iter()
        .any(|e| same_metric(e) && e.route.same_route(&new.route))
    {
        return;
    }
    let at = list
        .iter()
        .position(|a| a.metric > new.metric)
        .unwrap_or(list.len());
    list.insert(at, new);
}

/// An IPv6 delete message (`fib6_del`): the kernel deletes a multipath route's paths one
/// sibling at a time, or the whole group in one message; a route left without a path is
/// gone.
fn delete_v6(list: &mut Vec<Entry>, gone: &Entry) {
    let at = list.iter().position(|e| {
        e.metric == gone.metric
            && match (&e.route, &gone.route) {
                (RouteTarget::Unicast(have), RouteTarget::Unicast(del)) => {
                    del.iter().all(|d| have.iter().any(|h| h.same_hop(d)))
                        && (e.siblings || e.route.same_route(&gone.route))
                }
                (a, b) => a.same_route(b),
            }
    });
    let Some(i) = at else { return };
    if let (RouteTarget::Unicast(have), RouteTarget::Unicast(del)) =
        (&mut list[i].route, &gone.route)
    {
        have.retain(|h| !del.iter().any(|d| h.same_hop(d)));
        if !have.is_empty() {
            return;
        }
    }
    list.remove(i);
}

/// The changes that turn `old` into `new`: withdrawals first, then announcements.
pub fn diff<A: Address>(old: &Rib<A>, new: &Rib<A>) -> Vec<Change<A>> {
    let mut changes: Vec<Change<A>> = old
        .iter()
        .filter(|(p, _)| new.get(p).is_none())
        .map(|(p, _)| Change::Withdraw(p))
        .collect();
    changes.extend(
        new.iter()
            .filter(|&(p, nh)| old.get(&p) != Some(nh))
            .map(|(p, nh)| Change::Announce(p, nh)),
    );
    changes
}

mod differences;
mod events;
pub use differences::Differences;

#[cfg(test)]
mod tests;

//! [`ZebraRoutes`]: the routes zebra sent for one family and table, as zebra means them —
//! one route per prefix (its selected route), replaced by every `RTM_NEWROUTE`, removed by
//! `RTM_DELROUTE` whatever it was — with the nexthop objects they use, and the mark and
//! sweep that follows a reconnection.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use crate::fib::Change;
use crate::netlink::{resolve, tally, Nexthop, NexthopObject, RouteTarget, Unrepresentable};
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// One prefix's route.
#[derive(Clone, Debug)]
struct Route {
    /// What it does (a route through a nexthop object as
    /// [`RouteTarget::NexthopObject`], resolved when it is looked at), or why lpmkit cannot
    /// represent it.
    target: Result<RouteTarget, Unrepresentable>,
    /// Not re-sent since the last reconnection.
    stale: bool,
}

/// The routes zebra selected for one address family in one table, as its Forwarding Plane
/// Manager stream describes them, with the best of each prefix in a [`Rib`] whose next
/// hops are [`RouteTarget`]s (a route through a nexthop object or group resolved to its
/// paths).
///
/// zebra holds one route per prefix and table: a route message replaces it, a delete
/// removes it. After a reconnection zebra sends its whole table again but never what it
/// deleted meanwhile: [`mark`](Self::mark) flags every route and nexthop object as stale,
/// whatever is sent again is fresh, and [`sweep`](Self::sweep) removes the rest.
///
/// Changes to the `Rib` are collected, the net change per prefix since the last
/// [`take_changes`](Self::take_changes) — so that zebra's update of a route, a delete and
/// an add in one frame, reaches the schemes as one change and never as a moment without
/// the route.
#[derive(Clone, Debug)]
pub struct ZebraRoutes<A: Address> {
    routes: HashMap<Prefix<A>, Route>,
    /// Nexthop objects (of both families: zebra's groups are family-less).
    nexthops: HashMap<u32, Nexthop>,
    /// The nexthop objects not re-sent since the last reconnection.
    stale_nexthops: HashSet<u32>,
    /// The prefixes whose route names each nexthop object (a group's members are found
    /// through the group).
    users: HashMap<u32, HashSet<Prefix<A>>>,
    rib: Rib<A>,
    hops: NextHopTable<RouteTarget>,
    /// Prefixes changed since the last `take_changes`: their next hop before, and when
    /// the first change arrived.
    touched: HashMap<Prefix<A>, (Option<NextHop>, Instant)>,
    order: Vec<Prefix<A>>,
}

impl<A: Address> Default for ZebraRoutes<A> {
    fn default() -> Self {
        ZebraRoutes {
            routes: HashMap::new(),
            nexthops: HashMap::new(),
            stale_nexthops: HashSet::new(),
            users: HashMap::new(),
            rib: Rib::new(),
            hops: NextHopTable::new(),
            touched: HashMap::new(),
            order: Vec::new(),
        }
    }
}

impl<A: Address> ZebraRoutes<A> {
    /// No routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// The best route of every prefix (the representable ones).
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

    /// Routes held, representable or not.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// True if no route is held.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// The routes lpmkit cannot represent, by reason (held now, not followed).
    pub fn unrepresentable(&self) -> Vec<(Unrepresentable, usize)> {
        tally(
            self.routes
                .values()
                .filter_map(|r| r.target.as_ref().err().copied()),
        )
    }

    /// Every route held: prefix and target as zebra sent it (a route through a nexthop
    /// object as [`RouteTarget::NexthopObject`]), or why it is not followed.
    pub fn iter(
        &self,
    ) -> impl Iterator<Item = (Prefix<A>, Result<&RouteTarget, Unrepresentable>)> + '_ {
        self.routes
            .iter()
            .map(|(p, r)| (*p, r.target.as_ref().map_err(|e| *e)))
    }

    /// The nexthop object `id`, if zebra announced it.
    pub fn nexthop(&self, id: u32) -> Option<&Nexthop> {
        self.nexthops.get(&id)
    }

    /// The nexthop objects held.
    pub fn nexthop_count(&self) -> usize {
        self.nexthops.len()
    }

    /// Routes and nexthop objects still marked stale (not re-sent since the last
    /// reconnection).
    pub fn stale(&self) -> (usize, usize) {
        (
            self.routes.values().filter(|r| r.stale).count(),
            self.stale_nexthops.len(),
        )
    }

    /// zebra's route for `prefix` (an `RTM_NEWROUTE`): replaces the one held.
    pub fn announce(
        &mut self,
        prefix: Prefix<A>,
        target: Result<RouteTarget, Unrepresentable>,
        at: Instant,
    ) {
        let old = self.routes.insert(
            prefix,
            Route {
                target,
                stale: false,
            },
        );
        self.reindex(prefix, old.and_then(|r| object(&r.target)));
        self.settle(prefix, at);
    }

    /// zebra deleted its route for `prefix` (an `RTM_DELROUTE`).
    pub fn withdraw(&mut self, prefix: Prefix<A>, at: Instant) {
        if let Some(old) = self.routes.remove(&prefix) {
            self.reindex(prefix, object(&old.target));
            self.settle(prefix, at);
        }
    }

    /// A nexthop object announced (`RTM_NEWNEXTHOP`: new, or changed): the routes through
    /// it, or through a group that holds it, follow.
    pub fn nexthop_set(&mut self, object: NexthopObject, at: Instant) {
        let id = object.id;
        let changed = self.nexthops.get(&id) != Some(&object.kind);
        self.stale_nexthops.remove(&id);
        self.nexthops.insert(id, object.kind);
        if changed {
            self.resettle_users(id, at);
        }
    }

    /// A nexthop object deleted (`RTM_DELNEXTHOP`). zebra deletes an object once no route
    /// uses it; a route still naming it is left unresolved
    /// ([`RouteTarget::NexthopObject`]), an answer that matches none of zebra's.
    pub fn nexthop_removed(&mut self, id: u32, at: Instant) {
        self.stale_nexthops.remove(&id);
        if self.nexthops.remove(&id).is_some() {
            self.resettle_users(id, at);
        }
    }

    /// Re-resolves the routes through object `id` and through the groups that hold it.
    fn resettle_users(&mut self, id: u32, at: Instant) {
        let mut prefixes: HashSet<Prefix<A>> = self.users.get(&id).cloned().unwrap_or_default();
        for (gid, n) in &self.nexthops {
            if matches!(n, Nexthop::Group(m) if m.iter().any(|(m, _)| *m == id)) {
                if let Some(u) = self.users.get(gid) {
                    prefixes.extend(u.iter().copied());
                }
            }
        }
        for p in prefixes {
            self.settle(p, at);
        }
    }

    /// Marks every route and nexthop object stale: zebra reconnected and is about to send
    /// its table again.
    pub fn mark(&mut self) {
        for r in self.routes.values_mut() {
            r.stale = true;
        }
        self.stale_nexthops = self.nexthops.keys().copied().collect();
    }

    /// Removes what is still stale (not sent again since [`mark`](Self::mark)); returns the
    /// routes and nexthop objects removed.
    pub fn sweep(&mut self, at: Instant) -> (usize, usize) {
        let stale: Vec<Prefix<A>> = self
            .routes
            .iter()
            .filter(|(_, r)| r.stale)
            .map(|(p, _)| *p)
            .collect();
        for p in &stale {
            self.withdraw(*p, at);
        }
        let objects: Vec<u32> = self.stale_nexthops.iter().copied().collect();
        for id in &objects {
            self.nexthop_removed(*id, at);
        }
        (stale.len(), objects.len())
    }

    /// The changes to the `Rib` since the last call, one per prefix (its net change), in
    /// the order the prefixes were first changed, with the time the first change arrived.
    pub fn take_changes(&mut self) -> Vec<(Change<A>, Instant)> {
        let mut out = Vec::with_capacity(self.order.len());
        for p in self.order.drain(..) {
            let Some((before, at)) = self.touched.remove(&p) else {
                continue;
            };
            let now = self.rib.get(&p);
            if now != before {
                out.push((
                    match now {
                        Some(nh) => Change::Announce(p, nh),
                        None => Change::Withdraw(p),
                    },
                    at,
                ));
            }
        }
        self.touched.clear();
        out
    }

    /// Moves `prefix` in the nexthop users' index from object `old` to its route's now.
    fn reindex(&mut self, prefix: Prefix<A>, old: Option<u32>) {
        let new = self.routes.get(&prefix).and_then(|r| object(&r.target));
        if old == new {
            return;
        }
        if let Some(id) = old {
            if let Some(set) = self.users.get_mut(&id) {
                set.remove(&prefix);
                if set.is_empty() {
                    self.users.remove(&id);
                }
            }
        }
        if let Some(id) = new {
            self.users.entry(id).or_default().insert(prefix);
        }
    }

    /// Puts the route of `prefix` (resolved) in the `Rib`, noting the change.
    fn settle(&mut self, prefix: Prefix<A>, at: Instant) {
        let target = self
            .routes
            .get(&prefix)
            .and_then(|r| r.target.as_ref().ok())
            .map(|t| resolve(&self.nexthops, t));
        let nh = target.map(|t| match self.hops.id(&t) {
            Some(id) => id,
            None => self.hops.intern(t.into_owned()),
        });
        let before = self.rib.get(&prefix);
        if before == nh {
            return;
        }
        if let std::collections::hash_map::Entry::Vacant(e) = self.touched.entry(prefix) {
            e.insert((before, at));
            self.order.push(prefix);
        }
        match nh {
            Some(nh) => {
                self.rib.insert(prefix, nh);
            }
            None => {
                self.rib.remove(&prefix);
            }
        }
    }
}

/// The nexthop object a route goes through, if any.
fn object(target: &Result<RouteTarget, Unrepresentable>) -> Option<u32> {
    match target {
        Ok(RouteTarget::NexthopObject(id)) => Some(*id),
        _ => None,
    }
}

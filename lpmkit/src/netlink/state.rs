//! The kernel's routes of one table, mirrored: every route of every prefix (a prefix may
//! have several, with different metrics), the best one per prefix in a [`Rib`], and the
//! [`Change`]s that route messages make to it. Pure bookkeeping: no socket here.

use std::collections::HashMap;

use super::route::{KernelRoute, RouteTarget, Unrepresentable};
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::{Address, Family, Prefix};
use crate::rib::Rib;

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

/// One route of a prefix, in the kernel's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Alias {
    metric: u32,
    nh: NextHop,
}

/// Key of a route lpmkit cannot represent.
type OtherKey<A> = (Prefix<A>, u8, u8, u32);

/// The routes of one kernel table of family `A`, as lpmkit follows them.
///
/// The kernel may hold several routes for one prefix (different metrics, or IPv4 routes
/// appended with the same metric); a lookup uses the first of the lowest metric. This
/// keeps all of them, so that deleting the best route brings the next one back, and puts
/// the best in the [`Rib`] with its [`RouteTarget`] interned as the next hop.
#[derive(Clone, Debug)]
pub struct KernelRoutes<A: Address> {
    aliases: HashMap<Prefix<A>, Vec<Alias>>,
    other: HashMap<OtherKey<A>, Unrepresentable>,
    rib: Rib<A>,
    hops: NextHopTable<RouteTarget>,
}

impl<A: Address> Default for KernelRoutes<A> {
    fn default() -> Self {
        Self::with_next_hops(NextHopTable::new())
    }
}

impl<A: Address> KernelRoutes<A> {
    /// No routes.
    pub fn new() -> Self {
        Self::default()
    }

    /// No routes, interning next hops into `hops` (so that ids stay what they were).
    pub fn with_next_hops(hops: NextHopTable<RouteTarget>) -> Self {
        KernelRoutes {
            aliases: HashMap::new(),
            other: HashMap::new(),
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
        let mut counts: HashMap<Unrepresentable, usize> = HashMap::new();
        for r in self.other.values() {
            *counts.entry(*r).or_default() += 1;
        }
        let mut v: Vec<_> = counts.into_iter().collect();
        v.sort();
        v
    }

    /// Every route held (all metrics), representable or not.
    pub fn route_count(&self) -> usize {
        self.aliases.values().map(Vec::len).sum::<usize>() + self.other.len()
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
        let prefix = route.prefix;
        let before = self.best(&prefix);
        match op {
            RouteOp::New { replace, append } => {
                let nh = self.hops.intern(target.clone());
                self.insert(
                    prefix,
                    Alias {
                        metric: route.metric,
                        nh,
                    },
                    replace,
                    append,
                );
            }
            RouteOp::Del => self.delete(prefix, route.metric, target),
        }
        let after = self.best(&prefix);
        if before == after {
            return None;
        }
        Some(match after {
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

    fn best(&self, prefix: &Prefix<A>) -> Option<NextHop> {
        self.aliases
            .get(prefix)
            .and_then(|v| v.first())
            .map(|a| a.nh)
    }

    fn insert(&mut self, prefix: Prefix<A>, new: Alias, replace: bool, append: bool) {
        let list = self.aliases.entry(prefix).or_default();
        let same = |a: &Alias| a.metric == new.metric;
        // IPv6 keeps one route per (prefix, metric): multipath siblings are one route and
        // every notification carries the whole set, so a new message replaces it.
        if replace || A::FAMILY == Family::V6 {
            if let Some(a) = list.iter_mut().find(|a| same(a)) {
                *a = new;
                return;
            }
        } else if list.contains(&new) {
            // The kernel refuses a duplicate, so this is a message seen twice (a dump and
            // a notification that raced it): nothing to do.
            return;
        }
        let at = if append {
            list.iter().position(|a| a.metric > new.metric)
        } else {
            list.iter().position(|a| a.metric >= new.metric)
        }
        .unwrap_or(list.len());
        list.insert(at, new);
    }

    fn delete(&mut self, prefix: Prefix<A>, metric: u32, target: &RouteTarget) {
        let Some(list) = self.aliases.get_mut(&prefix) else {
            return;
        };
        let nh = self.hops.id(target);
        let exact = list
            .iter()
            .position(|a| a.metric == metric && Some(a.nh) == nh);
        match exact {
            Some(i) => {
                list.remove(i);
            }
            None => {
                if let Some(i) = list.iter().position(|a| a.metric == metric) {
                    // IPv6 deletes one path of a multipath route at a time: keep the rest.
                    let rest = match (self.hops.value(list[i].nh), target) {
                        (Some(RouteTarget::Unicast(have)), RouteTarget::Unicast(gone))
                            if A::FAMILY == Family::V6 =>
                        {
                            let left: Vec<_> = have
                                .iter()
                                .filter(|p| {
                                    !gone
                                        .iter()
                                        .any(|g| g.gateway == p.gateway && g.ifindex == p.ifindex)
                                })
                                .cloned()
                                .collect();
                            (left.len() < have.len() && !left.is_empty()).then_some(left)
                        }
                        _ => None,
                    };
                    match rest {
                        Some(paths) => list[i].nh = self.hops.intern(RouteTarget::Unicast(paths)),
                        None => {
                            list.remove(i);
                        }
                    }
                }
            }
        }
        if list.is_empty() {
            self.aliases.remove(&prefix);
        }
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

#[cfg(test)]
mod tests {
    use super::super::route::Path;
    use super::*;
    use crate::prefix::{Ipv4, Ipv6};
    use std::net::IpAddr;

    fn via(g: &str) -> RouteTarget {
        RouteTarget::via(g.parse::<IpAddr>().unwrap(), 2)
    }

    fn route<A: Address>(p: &str, metric: u32, t: RouteTarget) -> KernelRoute<A> {
        KernelRoute {
            prefix: p.parse().unwrap(),
            metric,
            tos: 0,
            src_len: 0,
            target: Ok(t),
        }
    }

    const ADD: RouteOp = RouteOp::New {
        replace: false,
        append: false,
    };

    #[test]
    fn lowest_metric_wins_and_the_next_comes_back() {
        let mut k = KernelRoutes::<Ipv4>::new();
        let a = route("10.0.0.0/8", 100, via("192.0.2.1"));
        let b = route("10.0.0.0/8", 50, via("192.0.2.2"));
        let ca = k.apply(ADD, &a).unwrap();
        assert!(matches!(ca, Change::Announce(_, nh) if k.target(nh) == Some(&via("192.0.2.1"))));
        let cb = k.apply(ADD, &b).unwrap();
        assert!(matches!(cb, Change::Announce(_, nh) if k.target(nh) == Some(&via("192.0.2.2"))));
        // Adding a worse route changes nothing visible.
        assert_eq!(
            k.apply(ADD, &route("10.0.0.0/8", 200, RouteTarget::Blackhole)),
            None
        );
        let back = k.apply(RouteOp::Del, &b).unwrap();
        assert!(matches!(back, Change::Announce(_, nh) if k.target(nh) == Some(&via("192.0.2.1"))));
        assert_eq!(k.route_count(), 2);
        k.apply(RouteOp::Del, &a);
        assert_eq!(
            k.rib().lookup(0x0a00_0001).and_then(|n| k.target(n)),
            Some(&RouteTarget::Blackhole)
        );
        let gone = k.apply(
            RouteOp::Del,
            &route("10.0.0.0/8", 200, RouteTarget::Blackhole),
        );
        assert!(matches!(gone, Some(Change::Withdraw(_))));
        assert!(k.rib().is_empty());
    }

    #[test]
    fn replace_append_and_duplicates() {
        let mut k = KernelRoutes::<Ipv4>::new();
        let a = route("10.0.0.0/8", 0, via("192.0.2.1"));
        k.apply(ADD, &a);
        // A duplicate (dump racing a notification) is a no-op.
        assert_eq!(k.apply(ADD, &a), None);
        assert_eq!(k.route_count(), 1);
        // Append goes after: invisible.
        let app = RouteOp::New {
            replace: false,
            append: true,
        };
        assert_eq!(
            k.apply(app, &route("10.0.0.0/8", 0, via("192.0.2.9"))),
            None
        );
        // Replace swaps the first of the metric.
        let rep = RouteOp::New {
            replace: true,
            append: false,
        };
        let c = k
            .apply(rep, &route("10.0.0.0/8", 0, RouteTarget::Prohibit))
            .unwrap();
        assert!(
            matches!(c, Change::Announce(_, nh) if k.target(nh) == Some(&RouteTarget::Prohibit))
        );
        assert_eq!(k.route_count(), 2);
    }

    #[test]
    fn ipv6_multipath_paths_leave_one_at_a_time() {
        let mut k = KernelRoutes::<Ipv6>::new();
        let p = |g: &str| Path {
            gateway: Some(g.parse().unwrap()),
            ifindex: 2,
            weight: 1,
        };
        let both = RouteTarget::Unicast(vec![p("fe80::1"), p("fe80::2")]);
        k.apply(ADD, &route("2001:db8::/32", 1024, both));
        let c = k
            .apply(
                RouteOp::Del,
                &route(
                    "2001:db8::/32",
                    1024,
                    RouteTarget::Unicast(vec![p("fe80::1")]),
                ),
            )
            .unwrap();
        assert!(matches!(c, Change::Announce(_, nh)
            if k.target(nh) == Some(&RouteTarget::Unicast(vec![p("fe80::2")]))));
        let c = k
            .apply(
                RouteOp::Del,
                &route(
                    "2001:db8::/32",
                    1024,
                    RouteTarget::Unicast(vec![p("fe80::2")]),
                ),
            )
            .unwrap();
        assert!(matches!(c, Change::Withdraw(_)));
    }

    #[test]
    fn unrepresentable_routes_are_counted_not_dropped() {
        let mut k = KernelRoutes::<Ipv4>::new();
        let mut r = route("10.0.0.0/8", 0, via("192.0.2.1"));
        r.tos = 4;
        r.target = Err(Unrepresentable::Tos);
        assert_eq!(k.apply(ADD, &r), None);
        assert_eq!(k.unrepresentable(), vec![(Unrepresentable::Tos, 1)]);
        k.apply(RouteOp::Del, &r);
        assert!(k.unrepresentable().is_empty());
    }

    #[test]
    fn resync_diff_keeps_ids() {
        let mut k = KernelRoutes::<Ipv4>::new();
        k.apply(ADD, &route("10.0.0.0/8", 0, via("192.0.2.1")));
        k.apply(ADD, &route("11.0.0.0/8", 0, via("192.0.2.2")));
        let mut fresh = KernelRoutes::with_next_hops(k.take_next_hops());
        fresh.apply(ADD, &route("11.0.0.0/8", 0, via("192.0.2.1")));
        fresh.apply(ADD, &route("12.0.0.0/8", 0, via("192.0.2.2")));
        let id1 = k.next_hops().id(&via("192.0.2.1")).unwrap();
        let changes = k.replace_with(fresh);
        assert_eq!(changes.len(), 3);
        assert_eq!(k.next_hops().id(&via("192.0.2.1")), Some(id1));
        assert_eq!(k.rib().len(), 2);
    }
}

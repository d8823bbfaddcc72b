//! What interface and address events do to the routes (the module's event table): to
//! every route, or — when a dump's datagram takes again what raced it — to the prefixes
//! the datagram set only.

use std::collections::HashSet;
use std::net::IpAddr;

use super::{Entry, KernelRoutes};
use crate::fib::Change;
use crate::netlink::nexthop::Nexthop;
use crate::netlink::route::RouteTarget;
use crate::prefix::{Address, Family, Prefix};

/// The prefixes an event reaches: every one (`None`), or those of a set.
pub(crate) type Scope<'a, A> = Option<&'a HashSet<Prefix<A>>>;

impl<A: Address> KernelRoutes<A> {
    /// The prefixes of `scope` with a route that `pick` selects.
    fn picked(&self, scope: Scope<'_, A>, pick: impl Fn(&Entry) -> bool) -> Vec<Prefix<A>> {
        let holds = |l: &Vec<Entry>| l.iter().any(&pick);
        match scope {
            None => self
                .routes
                .iter()
                .filter(|(_, l)| holds(l))
                .map(|(p, _)| *p)
                .collect(),
            Some(set) => set
                .iter()
                .filter(|p| self.routes.get(p).is_some_and(holds))
                .copied()
                .collect(),
        }
    }

    /// Edits by `f` every prefix of `scope` with a route through interface `ifindex`.
    fn edit_uses(
        &mut self,
        ifindex: u32,
        scope: Scope<'_, A>,
        f: impl Fn(&mut Vec<Entry>),
    ) -> Vec<Change<A>> {
        self.picked(scope, |e| e.uses(ifindex))
            .into_iter()
            .filter_map(|p| self.edit(p, &f))
            .collect()
    }

    /// Interface `ifindex` went down (`IFF_UP` cleared): its paths are dead, routes left
    /// without a live path are removed, its nexthop objects too.
    pub fn link_down(&mut self, ifindex: u32) -> Vec<Change<A>> {
        let mut changes =
            self.flush_nexthops(|n| matches!(n, Nexthop::Single(p) if p.ifindex == ifindex));
        changes.extend(self.paths_down(ifindex, false, None));
        changes
    }

    /// Interface `ifindex` lost its last address of the family (IPv4: `fib_disable_ip`
    /// with `force`): its paths are dead and routes left without a live path are removed,
    /// scope `host` ones too; nexthop objects stay.
    pub fn addresses_gone(&mut self, ifindex: u32) -> Vec<Change<A>> {
        self.paths_down(ifindex, true, None)
    }

    /// Marks the paths through `ifindex` dead and removes the routes left without a live
    /// one (`fib_sync_down_dev`); scope `host` routes stay unless `force`.
    pub(crate) fn paths_down(
        &mut self,
        ifindex: u32,
        force: bool,
        scope: Scope<'_, A>,
    ) -> Vec<Change<A>> {
        self.edit_uses(ifindex, scope, |list| {
            list.retain_mut(|e| {
                if (e.host && !force) || !e.uses(ifindex) {
                    return true;
                }
                match &mut e.route {
                    RouteTarget::Unicast(paths) => {
                        for p in paths.iter_mut().filter(|p| p.ifindex == ifindex) {
                            p.dead = true;
                        }
                        paths.iter().any(|p| !p.dead)
                    }
                    _ => false,
                }
            })
        })
    }

    /// Interface `ifindex` came up (or, IPv4, got an address while up): its dead paths
    /// live again.
    pub fn link_up(&mut self, ifindex: u32) -> Vec<Change<A>> {
        self.paths_up(ifindex, None)
    }

    /// Revives the dead paths through `ifindex` (`fib_sync_up`).
    pub(crate) fn paths_up(&mut self, ifindex: u32, scope: Scope<'_, A>) -> Vec<Change<A>> {
        self.edit_uses(ifindex, scope, |list| {
            for e in list.iter_mut() {
                if let RouteTarget::Unicast(paths) = &mut e.route {
                    for p in paths.iter_mut().filter(|p| p.ifindex == ifindex) {
                        p.dead = false;
                    }
                }
            }
        })
    }

    /// Interface `ifindex` lost its carrier: routes stay (`linkdown`, still used), its
    /// nexthop objects are removed.
    pub fn carrier_lost(&mut self, ifindex: u32) -> Vec<Change<A>> {
        self.flush_nexthops(|n| matches!(n, Nexthop::Single(p) if p.ifindex == ifindex))
    }

    /// Interface `ifindex` was deleted: IPv4 routes with a path through it are removed,
    /// IPv6 routes lose their paths through it; its nexthop objects are removed.
    pub fn link_removed(&mut self, ifindex: u32) -> Vec<Change<A>> {
        let mut changes =
            self.flush_nexthops(|n| matches!(n, Nexthop::Single(p) if p.ifindex == ifindex));
        changes.extend(self.paths_removed(ifindex, None));
        changes
    }

    /// Removes the paths through a deleted interface `ifindex` (IPv4: the routes).
    pub(crate) fn paths_removed(&mut self, ifindex: u32, scope: Scope<'_, A>) -> Vec<Change<A>> {
        let v6 = A::FAMILY == Family::V6;
        self.edit_uses(ifindex, scope, |list| {
            list.retain_mut(|e| {
                if !e.uses(ifindex) {
                    return true;
                }
                match &mut e.route {
                    RouteTarget::Unicast(paths) if v6 => {
                        paths.retain(|p| p.ifindex != ifindex);
                        !paths.is_empty()
                    }
                    _ => false,
                }
            })
        })
    }

    /// Address `addr` is no longer an address of the host (IPv4, table `main`:
    /// `fib_sync_down_addr`): the routes that name it as their source go.
    pub fn source_gone(&mut self, addr: IpAddr) -> Vec<Change<A>> {
        self.sources_gone(addr, None)
    }

    /// Removes the routes of `scope` whose source is `addr`.
    pub(crate) fn sources_gone(&mut self, addr: IpAddr, scope: Scope<'_, A>) -> Vec<Change<A>> {
        self.picked(scope, |e| e.src == Some(addr))
            .into_iter()
            .filter_map(|p| self.edit(p, |list| list.retain(|e| e.src != Some(addr))))
            .collect()
    }

    /// Removes the routes of `scope` through nexthop object `id`, or through an object
    /// the state no longer has (a group the removal left empty): what a deleted object
    /// took with it.
    pub(crate) fn objects_gone(&mut self, id: u32, scope: Scope<'_, A>) -> Vec<Change<A>> {
        let nexthops = &self.nexthops;
        let gone = move |e: &Entry| {
            e.object()
                .is_some_and(|o| o == id || !nexthops.contains_key(&o))
        };
        let prefixes = self.picked(scope, gone);
        let kept: HashSet<u32> = self.nexthops.keys().copied().filter(|&o| o != id).collect();
        prefixes
            .into_iter()
            .filter_map(|p| {
                self.edit(p, |list| {
                    list.retain(|e| e.object().is_none_or(|o| kept.contains(&o)))
                })
            })
            .collect()
    }
}

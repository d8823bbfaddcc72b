//! [`KernelSync`]: a kernel routing table followed over rtnetlink.

use std::io;
use std::time::{Duration, Instant};

use std::collections::{HashMap, HashSet};

use netlink_packet_core::{NetlinkPayload, NLM_F_APPEND, NLM_F_REPLACE};
use netlink_packet_route::link::{LinkFlags, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;

use super::nexthop::RTNLGRP_NEXTHOP;
use super::route::{decode, family_of, table_of, Unrepresentable};
use super::socket::{route_group, Message, RtSocket, RTNLGRP_LINK};
use super::state::{KernelRoutes, RouteOp};
use super::RouteTarget;
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// The kernel's `main` routing table.
pub const RT_TABLE_MAIN: u32 = 254;

/// What to follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncOptions {
    /// The network namespace (a name under `/run/netns` or a path); `None`: this
    /// process's.
    pub netns: Option<String>,
    /// The routing table id (254 = `main`).
    pub table: u32,
    /// Receive buffer of the notification socket, in bytes. Notifications that do not
    /// fit are lost (`ENOBUFS`), which [`KernelSync::poll`] repairs with a full re-dump.
    pub recv_buffer: usize,
}

impl Default for SyncOptions {
    fn default() -> Self {
        SyncOptions {
            netns: None,
            table: RT_TABLE_MAIN,
            recv_buffer: 32 << 20,
        }
    }
}

/// Where a change came from: the port and sequence number of the request that made it
/// (the kernel copies them into its notification), or zeros for a re-dump.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The requester's netlink port id (0: the kernel itself, or a re-dump).
    pub port: u32,
    /// The request's sequence number.
    pub seq: u32,
}

/// One change to the followed table's best routes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received<A: Address> {
    /// The change, ready for [`Updater::apply`](crate::sync::Updater::apply) or a
    /// [`Publisher`](crate::sync::Publisher).
    pub change: Change<A>,
    /// When the notification was read.
    pub at: Instant,
    /// The request behind it.
    pub origin: Origin,
}

/// Counters since [`KernelSync::open`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SyncStats {
    /// Route notifications read (all tables).
    pub messages: u64,
    /// Notifications of the followed table.
    pub table_messages: u64,
    /// Link notifications (`RTM_NEWLINK`/`RTM_DELLINK`) read.
    pub link_messages: u64,
    /// Interface events that changed routes or nexthop objects the way the kernel does
    /// without a route notification: down, up, carrier lost, deleted.
    pub link_events: u64,
    /// Nexthop object notifications (`RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP`) read.
    pub nexthop_messages: u64,
    /// Changes to best routes they all made.
    pub changes: u64,
    /// Full re-dumps after lost notifications (`ENOBUFS`).
    pub resyncs: u64,
    /// Reconciliations ([`KernelSync::reconcile`]): re-dumps compared with what was
    /// followed.
    pub reconciliations: u64,
    /// Prefixes whose best route a reconciliation found different from what was
    /// followed (0 when following was exact; changes that raced the dump not counted).
    pub reconcile_differences: u64,
    /// Messages that did not decode.
    pub undecodable: u64,
    /// Milliseconds the last dump took (read and applied).
    pub last_dump_ms: f64,
}

/// The state of an interface, as far as routes care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LinkState {
    /// `IFF_UP`.
    up: bool,
    /// `IFF_LOWER_UP` or `IFF_RUNNING`: the carrier.
    carrier: bool,
}

impl LinkState {
    fn of(msg: &LinkMessage) -> Self {
        let f = msg.header.flags;
        LinkState {
            up: f.contains(LinkFlags::Up),
            carrier: f.intersects(LinkFlags::LowerUp | LinkFlags::Running),
        }
    }
}

/// One kernel routing table of family `A`, followed over rtnetlink.
///
/// [`open`](Self::open) subscribes to route, link and nexthop-object notifications
/// first, then dumps the interfaces, the nexthop objects and the table (so that no change
/// falls between the two); [`poll`](Self::poll) reads what arrived and returns the
/// changes to the table's best routes, in order. Besides route notifications it follows
/// what the kernel does without one: routes removed or revived when an interface goes
/// down, comes up, loses its carrier or is deleted, and routes through nexthop objects
/// (resolved to the objects' paths, removed with them) — see [`KernelRoutes`].
///
/// When the kernel reports that notifications were lost (`ENOBUFS`: the socket's buffer
/// overflowed), `poll` dumps the table again and returns the difference to what was
/// followed — the table never drifts silently. [`reconcile`](Self::reconcile) does the
/// same on demand (a daemon's periodic safety net) and counts the differences it found.
///
/// ```no_run
/// use lpmkit::netlink::{KernelSync, SyncOptions};
/// use lpmkit::sync::{InPlace, Updater};
/// use lpmkit::schemes::dxr::{Dxr, DxrConfig};
/// use lpmkit::Ipv4;
///
/// let mut sync = KernelSync::<Ipv4>::open(&SyncOptions::default())?;
/// let fib = Dxr::build(sync.rib(), &DxrConfig::d18r())?;
/// let mut updater = InPlace::new(sync.rib().clone(), fib);
/// loop {
///     let changes: Vec<_> = sync.poll(None)?.iter().map(|r| r.change).collect();
///     updater.apply(&changes)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct KernelSync<A: Address> {
    options: SyncOptions,
    events: RtSocket,
    dumps: RtSocket,
    routes: KernelRoutes<A>,
    links: HashMap<u32, LinkState>,
    stats: SyncStats,
    /// While a reconciliation reads what arrived during its dump: the prefixes named.
    touched: Option<HashSet<Prefix<A>>>,
}

impl<A: Address> core::fmt::Debug for KernelSync<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelSync")
            .field("options", &self.options)
            .field("routes", &self.routes.rib().len())
            .field("stats", &self.stats)
            .finish()
    }
}

impl<A: Address> KernelSync<A> {
    /// Subscribes to the table's changes (and to link and nexthop-object events) and
    /// dumps it.
    pub fn open(options: &SyncOptions) -> io::Result<Self> {
        let netns = options.netns.as_deref();
        let events = RtSocket::open(
            netns,
            &[route_group(A::FAMILY), RTNLGRP_LINK, RTNLGRP_NEXTHOP],
            options.recv_buffer,
        )?;
        let dumps = RtSocket::open(netns, &[], 0)?;
        let mut sync = KernelSync {
            options: options.clone(),
            events,
            dumps,
            routes: KernelRoutes::new(),
            links: HashMap::new(),
            stats: SyncStats::default(),
            touched: None,
        };
        let (routes, links) = sync.dump(NextHopTable::new())?;
        sync.routes = routes;
        sync.links = links;
        Ok(sync)
    }

    /// A fresh copy of the interfaces' state, the nexthop objects and the table,
    /// interning into `hops`.
    fn dump(
        &mut self,
        hops: NextHopTable<RouteTarget>,
    ) -> io::Result<(KernelRoutes<A>, HashMap<u32, LinkState>)> {
        let t0 = Instant::now();
        let links = self
            .dumps
            .dump_links()?
            .iter()
            .map(|l| (l.header.index, LinkState::of(l)))
            .collect();
        let mut routes = KernelRoutes::with_next_hops(hops);
        for object in self.dumps.dump_nexthops()? {
            routes.nexthop_set(object);
        }
        let msgs = self.dumps.dump_routes(A::FAMILY)?;
        let op = RouteOp::New {
            replace: false,
            append: true,
        };
        for m in &msgs {
            if table_of(m) == self.options.table {
                if let Some(r) = decode::<A>(m) {
                    routes.apply(op, &r);
                }
            }
        }
        self.stats.last_dump_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok((routes, links))
    }

    /// The followed table's best routes.
    pub fn rib(&self) -> &Rib<A> {
        self.routes.rib()
    }

    /// Every route followed (all metrics), the nexthop objects and the unrepresentable
    /// routes.
    pub fn routes(&self) -> &KernelRoutes<A> {
        &self.routes
    }

    /// The route targets behind the next-hop ids.
    pub fn next_hops(&self) -> &NextHopTable<RouteTarget> {
        self.routes.next_hops()
    }

    /// The target of a next-hop id.
    pub fn target(&self, nh: NextHop) -> Option<&RouteTarget> {
        self.routes.target(nh)
    }

    /// Routes lpmkit cannot represent, by reason.
    pub fn unrepresentable(&self) -> Vec<(Unrepresentable, usize)> {
        self.routes.unrepresentable()
    }

    /// Counters.
    pub fn stats(&self) -> SyncStats {
        self.stats
    }

    /// What is followed.
    pub fn options(&self) -> &SyncOptions {
        &self.options
    }

    /// Waits up to `timeout` (`None`: until something arrives; a signal delivered to the
    /// thread ends the wait early) for notifications, then reads all that are there;
    /// returns the changes they make, in order (empty if none came, or none changed a
    /// best route).
    pub fn poll(&mut self, timeout: Option<Duration>) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        if !self.events.wait(timeout)? {
            return Ok(out);
        }
        self.read_queued(&mut out)?;
        Ok(out)
    }

    /// Reads and applies every notification queued now.
    fn read_queued(&mut self, out: &mut Vec<Received<A>>) -> io::Result<()> {
        let mut bad = 0usize;
        loop {
            let msgs = match self.events.recv(true, &mut bad) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.stats.resyncs += 1;
                    self.resync_into(out)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let at = Instant::now();
            for m in msgs {
                let h = m.header();
                let origin = Origin {
                    port: h.port_number,
                    seq: h.sequence_number,
                };
                let flags = h.flags;
                let changes = self.handle(m, flags);
                self.stats.changes += changes.len() as u64;
                if let Some(t) = self.touched.as_mut() {
                    t.extend(changes.iter().map(|c| c.prefix()));
                }
                out.extend(
                    changes
                        .into_iter()
                        .map(|change| Received { change, at, origin }),
                );
            }
        }
        self.stats.undecodable += bad as u64;
        Ok(())
    }

    /// Applies one notification; returns the changes to best routes it made.
    fn handle(&mut self, m: Message, flags: u16) -> Vec<Change<A>> {
        let msg = match m {
            Message::Nexthop {
                deleted, object, ..
            } => {
                self.stats.nexthop_messages += 1;
                return if deleted {
                    self.routes.nexthop_removed(object.id)
                } else {
                    self.routes.nexthop_set(object)
                };
            }
            Message::Rt(m) => m,
        };
        let NetlinkPayload::InnerMessage(inner) = msg.payload else {
            return Vec::new();
        };
        let (op, r) = match inner {
            RouteNetlinkMessage::NewLink(l) => {
                self.stats.link_messages += 1;
                return self.link_changed(l.header.index, Some(LinkState::of(&l)));
            }
            RouteNetlinkMessage::DelLink(l) => {
                self.stats.link_messages += 1;
                return self.link_changed(l.header.index, None);
            }
            RouteNetlinkMessage::NewRoute(r) => (
                RouteOp::New {
                    replace: flags & NLM_F_REPLACE != 0,
                    append: flags & NLM_F_APPEND != 0,
                },
                r,
            ),
            RouteNetlinkMessage::DelRoute(r) => (RouteOp::Del, r),
            _ => return Vec::new(),
        };
        if family_of(&r) != Some(A::FAMILY) {
            return Vec::new();
        }
        self.stats.messages += 1;
        if table_of(&r) != self.options.table {
            return Vec::new();
        }
        let Some(route) = decode::<A>(&r) else {
            return Vec::new();
        };
        self.stats.table_messages += 1;
        if let Some(t) = self.touched.as_mut() {
            t.insert(route.prefix);
        }
        self.routes.apply(op, &route).into_iter().collect()
    }

    /// Interface `index` is now `now` (`None`: deleted): the routes and nexthop objects
    /// that change with it.
    fn link_changed(&mut self, index: u32, now: Option<LinkState>) -> Vec<Change<A>> {
        let before = self.links.get(&index).copied();
        let mut changes = Vec::new();
        let mut event = false;
        match (before, now) {
            (_, None) => {
                self.links.remove(&index);
                if before.is_some_and(|b| b.up) {
                    changes.extend(self.routes.link_down(index));
                }
                changes.extend(self.routes.link_removed(index));
                event = true;
            }
            (Some(b), Some(n)) => {
                self.links.insert(index, n);
                if b.up && !n.up {
                    changes.extend(self.routes.link_down(index));
                    event = true;
                } else if !b.up && n.up {
                    changes.extend(self.routes.link_up(index));
                    event = true;
                }
                if n.up && b.carrier && !n.carrier {
                    changes.extend(self.routes.carrier_lost(index));
                    event = true;
                }
            }
            (None, Some(n)) => {
                // A new interface (or one the dump missed): nothing of it to change.
                self.links.insert(index, n);
            }
        }
        self.stats.link_events += u64::from(event);
        changes
    }

    /// Dumps the table again now and returns the changes from what was followed.
    pub fn resync(&mut self) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        self.stats.resyncs += 1;
        self.resync_into(&mut out)?;
        Ok(out)
    }

    /// Reconciles: applies the notifications queued now, dumps the table again, applies
    /// what arrived during the dump, and returns all the changes (the dump's difference
    /// to what was followed among them). The prefixes that differed — following got them
    /// wrong — are counted in [`SyncStats::reconcile_differences`], except those a
    /// notification that arrived during the dump names (a change racing the dump, not a
    /// drift). Costs a full dump (see [`SyncStats::last_dump_ms`]).
    pub fn reconcile(&mut self) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        self.read_queued(&mut out)?;
        let before = out.len();
        self.stats.reconciliations += 1;
        self.resync_into(&mut out)?;
        let dumped = out.len();
        self.touched = Some(HashSet::new());
        let raced = self.read_queued(&mut out);
        let touched = self.touched.take().unwrap_or_default();
        raced?;
        let drift = out[before..dumped]
            .iter()
            .filter(|r| !touched.contains(&r.change.prefix()))
            .count();
        self.stats.reconcile_differences += drift as u64;
        Ok(out)
    }

    fn resync_into(&mut self, out: &mut Vec<Received<A>>) -> io::Result<()> {
        // What is still queued is older than the dump about to be made, and some of what
        // followed it is lost: replayed after the dump it would undo newer changes.
        let mut bad = 0;
        loop {
            match self.events.recv(true, &mut bad) {
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => continue,
                Err(e) => return Err(e),
            }
        }
        let (fresh, links) = self.dump(self.routes.take_next_hops())?;
        self.links = links;
        let at = Instant::now();
        for change in self.routes.replace_with(fresh) {
            self.stats.changes += 1;
            out.push(Received {
                change,
                at,
                origin: Origin::default(),
            });
        }
        Ok(())
    }
}

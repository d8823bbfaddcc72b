//! [`KernelSync`]: a kernel routing table followed over rtnetlink.

use std::io;
use std::time::{Duration, Instant};

use netlink_packet_core::{NetlinkPayload, NLM_F_APPEND, NLM_F_REPLACE};
use netlink_packet_route::RouteNetlinkMessage;

use super::route::{decode, table_of, Unrepresentable};
use super::socket::{route_group, RtSocket};
use super::state::{KernelRoutes, RouteOp};
use super::RouteTarget;
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::Address;
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
    /// Changes to best routes they made.
    pub changes: u64,
    /// Full re-dumps after lost notifications (`ENOBUFS`).
    pub resyncs: u64,
    /// Messages that did not decode.
    pub undecodable: u64,
    /// Milliseconds the last dump took (read and applied).
    pub last_dump_ms: f64,
}

/// One kernel routing table of family `A`, followed over rtnetlink.
///
/// [`open`](Self::open) subscribes to route notifications first, then dumps the table
/// (so that no change falls between the two); [`poll`](Self::poll) reads what arrived
/// and returns the changes to the table's best routes, in order. When the kernel reports
/// that notifications were lost (`ENOBUFS`: the socket's buffer overflowed), `poll`
/// dumps the table again and returns the difference to what was followed — the table
/// never drifts silently.
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
    stats: SyncStats,
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
    /// Subscribes to the table's changes and dumps it.
    pub fn open(options: &SyncOptions) -> io::Result<Self> {
        let netns = options.netns.as_deref();
        let events = RtSocket::open(netns, &[route_group(A::FAMILY)], options.recv_buffer)?;
        let dumps = RtSocket::open(netns, &[], 0)?;
        let mut sync = KernelSync {
            options: options.clone(),
            events,
            dumps,
            routes: KernelRoutes::new(),
            stats: SyncStats::default(),
        };
        sync.routes = sync.dump(NextHopTable::new())?;
        Ok(sync)
    }

    /// A fresh copy of the table, interning into `hops`.
    fn dump(&mut self, hops: NextHopTable<RouteTarget>) -> io::Result<KernelRoutes<A>> {
        let t0 = Instant::now();
        let msgs = self.dumps.dump_routes(A::FAMILY)?;
        let mut routes = KernelRoutes::with_next_hops(hops);
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
        Ok(routes)
    }

    /// The followed table's best routes.
    pub fn rib(&self) -> &Rib<A> {
        self.routes.rib()
    }

    /// Every route followed (all metrics) and the unrepresentable ones.
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

    /// Waits up to `timeout` (`None`: until something arrives) for notifications, then
    /// reads all that are there; returns the changes they make, in order (empty if none
    /// came, or none changed a best route).
    pub fn poll(&mut self, timeout: Option<Duration>) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        if !self.events.wait(timeout)? {
            return Ok(out);
        }
        let mut bad = 0usize;
        loop {
            let msgs = match self.events.recv(true, &mut bad) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.resync_into(&mut out)?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let at = Instant::now();
            for m in msgs {
                let flags = m.header.flags;
                let origin = Origin {
                    port: m.header.port_number,
                    seq: m.header.sequence_number,
                };
                let (op, msg) = match &m.payload {
                    NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(r)) => (
                        RouteOp::New {
                            replace: flags & NLM_F_REPLACE != 0,
                            append: flags & NLM_F_APPEND != 0,
                        },
                        r,
                    ),
                    NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelRoute(r)) => {
                        (RouteOp::Del, r)
                    }
                    _ => continue,
                };
                self.stats.messages += 1;
                if table_of(msg) != self.options.table {
                    continue;
                }
                let Some(route) = decode::<A>(msg) else {
                    continue;
                };
                self.stats.table_messages += 1;
                if let Some(change) = self.routes.apply(op, &route) {
                    self.stats.changes += 1;
                    out.push(Received { change, at, origin });
                }
            }
        }
        self.stats.undecodable += bad as u64;
        Ok(out)
    }

    /// Dumps the table again now and returns the changes from what was followed.
    pub fn resync(&mut self) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        self.resync_into(&mut out)?;
        Ok(out)
    }

    fn resync_into(&mut self, out: &mut Vec<Received<A>>) -> io::Result<()> {
        self.stats.resyncs += 1;
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
        let fresh = self.dump(self.routes.take_next_hops())?;
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

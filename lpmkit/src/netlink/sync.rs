//! [`KernelSync`]: a kernel routing table followed over rtnetlink.

use std::io;
use std::time::{Duration, Instant};

use super::address::address_group;
use super::dump::{self, MergeError};
use super::mirror::{Kind, Mirror, Notice};
use super::nexthop::RTNLGRP_NEXTHOP;
use super::route::{Unrepresentable, RT_TABLE_MAIN};
use super::socket::{route_group, Message, RtSocket, RTNLGRP_LINK};
use super::state::{diff, Differences, KernelRoutes};
use super::RouteTarget;
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::Address;
use crate::rib::Rib;

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

/// What [`KernelSync::compare_with_dump`] found.
#[derive(Clone, Debug)]
pub struct Comparison<A: Address> {
    /// The changes that the notifications read meanwhile made, in order (for the
    /// caller's schemes, as from [`KernelSync::poll`]).
    pub changes: Vec<Received<A>>,
    /// How what was followed differs from the dump; `None` if notifications were lost
    /// meanwhile (what is followed was replaced by the dump then, and `changes` holds the
    /// difference: the comparison would prove nothing).
    pub differences: Option<Differences<A>>,
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
    /// Address notifications of the family (`RTM_NEWADDR`/`RTM_DELADDR`) read.
    pub address_messages: u64,
    /// Address changes that changed routes the way the kernel does without a route
    /// notification (IPv4: an interface's last address gone, a source address gone, an
    /// address added where paths were dead).
    pub address_events: u64,
    /// Changes to best routes they all made.
    pub changes: u64,
    /// Full re-dumps after lost notifications (`ENOBUFS`).
    pub resyncs: u64,
    /// Reconciliations ([`KernelSync::reconcile`]): re-dumps compared with what was
    /// followed.
    pub reconciliations: u64,
    /// Prefixes whose routes (any of them) a reconciliation found different from what
    /// was followed: 0 when following was exact (changes that raced the dump are merged
    /// into both, not counted). A reconciliation during which notifications were lost
    /// counts nothing.
    pub reconcile_differences: u64,
    /// Messages that did not decode.
    pub undecodable: u64,
    /// Milliseconds the last dump took (read and applied).
    pub last_dump_ms: f64,
}

/// One kernel routing table of family `A`, followed over rtnetlink.
///
/// [`open`](Self::open) subscribes to route, link, address and nexthop-object
/// notifications first, then dumps the interfaces, the family's addresses, the nexthop
/// objects and the table on the same socket, so that the notifications that race the
/// dump are merged with it in the order the kernel made them and the newest state wins
/// (a route changed while the dump ran is neither lost nor left behind as a ghost);
/// [`poll`](Self::poll) reads what arrived and returns the changes to the table's best
/// routes, in order. Besides route notifications it follows what the kernel does without
/// one: routes removed or revived when an interface goes down, comes up, loses its
/// carrier or is deleted, when an interface loses its last IPv4 address or an address
/// used as a route's source goes, and routes through nexthop objects (resolved to the
/// objects' paths, removed with them) — see [`KernelRoutes`].
///
/// When the kernel reports that notifications were lost (`ENOBUFS`: the socket's buffer
/// overflowed), `poll` dumps the table again (merged the same way) and returns the
/// difference to what was followed — the table never drifts silently.
/// [`reconcile`](Self::reconcile) does the same on demand (a daemon's periodic safety
/// net) and counts the differences it found; [`compare_with_dump`](Self::compare_with_dump)
/// only counts them.
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
    /// Notifications and dumps, in the order the kernel makes them.
    socket: RtSocket,
    mirror: Mirror<A>,
    stats: SyncStats,
}

impl<A: Address> core::fmt::Debug for KernelSync<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("KernelSync")
            .field("options", &self.options)
            .field("routes", &self.mirror.routes.rib().len())
            .field("stats", &self.stats)
            .finish()
    }
}

/// Dumps made again, at most, when interface or address events race them.
const DUMP_AGAIN: u32 = 3;

/// How a dump merges with what was followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Notifications that race the dump go into the dump only (what was followed is
    /// replaced by the dump).
    Replace,
    /// They also go on being followed (the dump is compared with what was followed).
    Follow,
}

impl<A: Address> KernelSync<A> {
    /// Subscribes to the table's changes (and to link, address and nexthop-object
    /// events) and dumps it.
    pub fn open(options: &SyncOptions) -> io::Result<Self> {
        let socket = RtSocket::open(
            options.netns.as_deref(),
            &[
                route_group(A::FAMILY),
                RTNLGRP_LINK,
                address_group(A::FAMILY),
                RTNLGRP_NEXTHOP,
            ],
            options.recv_buffer,
        )?;
        let mut sync = KernelSync {
            options: options.clone(),
            socket,
            mirror: Mirror::new(options.table, NextHopTable::new()),
            stats: SyncStats::default(),
        };
        let (fresh, _) = sync.dump(Mode::Replace, Vec::new(), &mut Vec::new())?;
        sync.mirror = fresh;
        Ok(sync)
    }

    /// A fresh copy of the interfaces, the addresses, the nexthop objects and the table,
    /// next hops interned into the followed table's ids, merged with the notifications
    /// that race it (see the `dump` module); `before`: the notifications read just before
    /// it. With [`Mode::Follow`] those that race it are followed too, their changes added
    /// to `out`. Starts again when notifications are lost, and (up to [`DUMP_AGAIN`]
    /// times) when an interface or address event raced it; also returns whether
    /// notifications were lost (then following them was not exact).
    fn dump(
        &mut self,
        mut mode: Mode,
        mut before: Vec<Notice<A>>,
        out: &mut Vec<Received<A>>,
    ) -> io::Result<(Mirror<A>, bool)> {
        let mut lost = false;
        let mut again = 0;
        loop {
            let t0 = Instant::now();
            let mut fresh = Mirror::new(self.options.table, self.mirror.routes.take_next_hops());
            let mut bad = 0;
            let mut seen = Vec::new();
            let (mirror, stats) = (&mut self.mirror, &mut self.stats);
            let earlier = core::mem::take(&mut before);
            let merged = dump::merged(
                &mut self.socket,
                &mut fresh,
                earlier,
                &mut bad,
                |m, notice| {
                    count(stats, notice);
                    seen.push(notice.clone());
                    if mode == Mode::Follow {
                        let at = Instant::now();
                        let origin = Origin::of(m);
                        let (_, changes) = mirror.handle(m);
                        stats.changes += changes.len() as u64;
                        out.extend(changes.into_iter().map(|change| Received {
                            change,
                            at,
                            origin,
                        }));
                    }
                },
            );
            self.stats.undecodable += bad as u64;
            match merged {
                Ok(true) if again < DUMP_AGAIN => {
                    // An event raced the dump: its routes may not all have changed yet
                    // when the dump read them.
                    again += 1;
                    before = seen;
                }
                Ok(_) => {
                    self.stats.last_dump_ms = t0.elapsed().as_secs_f64() * 1e3;
                    return Ok((fresh, lost));
                }
                Err(MergeError::Lost) => {
                    // Both copies missed changes: start again from a dump alone.
                    self.stats.resyncs += 1;
                    lost = true;
                    mode = Mode::Replace;
                    self.drain()?;
                }
                Err(MergeError::Io(e)) => return Err(e),
            }
        }
    }

    /// Discards what is queued (older than a dump about to be asked for).
    fn drain(&mut self) -> io::Result<()> {
        let mut bad = 0;
        loop {
            match self.socket.recv(true, &mut bad) {
                Ok(Some(_)) => continue,
                Ok(None) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// The followed table's best routes.
    pub fn rib(&self) -> &Rib<A> {
        self.mirror.routes.rib()
    }

    /// Every route followed (all metrics), the nexthop objects and the unrepresentable
    /// routes.
    pub fn routes(&self) -> &KernelRoutes<A> {
        &self.mirror.routes
    }

    /// The route targets behind the next-hop ids.
    pub fn next_hops(&self) -> &NextHopTable<RouteTarget> {
        self.mirror.routes.next_hops()
    }

    /// The target of a next-hop id.
    pub fn target(&self, nh: NextHop) -> Option<&RouteTarget> {
        self.mirror.routes.target(nh)
    }

    /// Routes lpmkit cannot represent, by reason.
    pub fn unrepresentable(&self) -> Vec<(Unrepresentable, usize)> {
        self.mirror.routes.unrepresentable()
    }

    /// Counters.
    pub fn stats(&self) -> SyncStats {
        self.stats
    }

    /// What is followed.
    pub fn options(&self) -> &SyncOptions {
        &self.options
    }

    /// Interfaces and addresses (of the family) followed.
    pub fn interfaces_and_addresses(&self) -> (usize, usize) {
        self.mirror.counts()
    }

    /// Waits up to `timeout` (`None`: until something arrives; a signal delivered to the
    /// thread ends the wait early) for notifications, then reads all that are there;
    /// returns the changes they make, in order (empty if none came, or none changed a
    /// best route).
    pub fn poll(&mut self, timeout: Option<Duration>) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        if !self.socket.wait(timeout)? {
            return Ok(out);
        }
        self.read_queued(&mut out, None)?;
        Ok(out)
    }

    /// Reads and applies every notification queued now; keeps them in `keep` if given
    /// (emptied when some were lost).
    fn read_queued(
        &mut self,
        out: &mut Vec<Received<A>>,
        mut keep: Option<&mut Vec<Notice<A>>>,
    ) -> io::Result<()> {
        let mut bad = 0usize;
        loop {
            let msgs = match self.socket.recv(true, &mut bad) {
                Ok(Some(m)) => m,
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.stats.resyncs += 1;
                    self.resync_into(out)?;
                    if let Some(k) = keep.as_deref_mut() {
                        k.clear();
                    }
                    continue;
                }
                Err(e) => return Err(e),
            };
            let at = Instant::now();
            for m in &msgs {
                let origin = Origin::of(m);
                let (notice, changes) = self.mirror.handle(m);
                count(&mut self.stats, &notice);
                if let Some(k) = keep.as_deref_mut() {
                    k.push(notice);
                }
                self.stats.changes += changes.len() as u64;
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

    /// Dumps the table again now and returns the changes from what was followed.
    pub fn resync(&mut self) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        self.stats.resyncs += 1;
        self.resync_into(&mut out)?;
        Ok(out)
    }

    /// Reconciles: applies the notifications queued now, dumps the table again (merged
    /// with the notifications that race the dump, which are followed meanwhile), and
    /// returns all the changes, the dump's difference to what was followed last. The
    /// prefixes that differed — following got them wrong — are counted in
    /// [`SyncStats::reconcile_differences`]. Costs a full dump (see
    /// [`SyncStats::last_dump_ms`]).
    pub fn reconcile(&mut self) -> io::Result<Vec<Received<A>>> {
        let mut out = Vec::new();
        let mut before = Vec::new();
        self.read_queued(&mut out, Some(&mut before))?;
        self.stats.reconciliations += 1;
        let (fresh, lost) = self.dump(Mode::Follow, before, &mut out)?;
        if !lost {
            let d = self.mirror.routes.differences(&fresh.routes);
            self.stats.reconcile_differences += d.differ.len() as u64;
        }
        self.replace(fresh, &mut out);
        Ok(out)
    }

    /// Compares what is followed with a fresh dump, prefix by prefix (every route, see
    /// [`KernelRoutes::differences`]), without repairing anything: applies the
    /// notifications queued now, dumps the table (merged with the notifications that race
    /// the dump, which are followed meanwhile) and compares. Costs a full dump.
    pub fn compare_with_dump(&mut self) -> io::Result<Comparison<A>> {
        let mut changes = Vec::new();
        let mut before = Vec::new();
        let resyncs = self.stats.resyncs;
        self.read_queued(&mut changes, Some(&mut before))?;
        let (fresh, lost) = self.dump(Mode::Follow, before, &mut changes)?;
        if lost || self.stats.resyncs != resyncs {
            self.replace(fresh, &mut changes);
            return Ok(Comparison {
                changes,
                differences: None,
            });
        }
        let differences = Some(self.mirror.routes.differences(&fresh.routes));
        Ok(Comparison {
            changes,
            differences,
        })
    }

    fn resync_into(&mut self, out: &mut Vec<Received<A>>) -> io::Result<()> {
        // What is still queued is older than the dump about to be made, and some of what
        // followed it is lost: replayed after the dump it would undo newer changes.
        self.drain()?;
        let (fresh, _) = self.dump(Mode::Replace, Vec::new(), out)?;
        self.replace(fresh, out);
        Ok(())
    }

    /// Replaces what is followed by `fresh`; adds the changes from one to the other.
    fn replace(&mut self, fresh: Mirror<A>, out: &mut Vec<Received<A>>) {
        let at = Instant::now();
        let changes: Vec<Change<A>> = diff(self.mirror.routes.rib(), fresh.routes.rib());
        self.mirror = fresh;
        self.stats.changes += changes.len() as u64;
        out.extend(changes.into_iter().map(|change| Received {
            change,
            at,
            origin: Origin::default(),
        }));
    }
}

impl Origin {
    /// The request behind a notification.
    fn of(m: &Message) -> Self {
        let h = m.header();
        Origin {
            port: h.port_number,
            seq: h.sequence_number,
        }
    }
}

/// Counts a notification by what it is.
fn count<A: Address>(stats: &mut SyncStats, notice: &Notice<A>) {
    let event = !notice.effects.is_empty();
    match notice.kind {
        Kind::Route { table } => {
            stats.messages += 1;
            stats.table_messages += u64::from(table);
        }
        Kind::Link => {
            stats.link_messages += 1;
            stats.link_events += u64::from(event);
        }
        Kind::Nexthop => stats.nexthop_messages += 1,
        Kind::Address => {
            stats.address_messages += 1;
            stats.address_events += u64::from(event);
        }
        Kind::Other => {}
    }
}

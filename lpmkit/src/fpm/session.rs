//! [`FpmSession`]: zebra's FPM stream turned into route changes, without a socket — the
//! frames, the netlink messages in them, the two families' [`ZebraRoutes`], and the mark
//! and sweep around reconnections.

use std::time::{Duration, Instant};

use netlink_packet_core::NetlinkPayload;
use netlink_packet_route::RouteNetlinkMessage;

use super::frame::{FrameError, FrameReader};
use super::routes::ZebraRoutes;
use crate::netlink::{
    decode, family_of, parse_messages, table_of, Message, Origin, Received, RT_TABLE_MAIN,
};
use crate::prefix::{Address, Family, Ipv4, Ipv6};

/// How a session follows zebra.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionOptions {
    /// The routing table to follow: the kernel table id zebra gives the VRF (254, `main`,
    /// for the default VRF; a VRF's `table N`).
    pub table: u32,
    /// After a reconnection, the routes zebra has not sent again are removed once the
    /// stream has been quiet this long (zebra marks no end of its table walk, and pauses
    /// it for a second when its output buffer is full).
    pub sweep_quiet: Duration,
    /// ... or at the latest this long after the reconnection, quiet or not.
    pub sweep_max: Duration,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            table: RT_TABLE_MAIN,
            sweep_quiet: Duration::from_secs(3),
            sweep_max: Duration::from_secs(60),
        }
    }
}

/// Counters since the session began.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FpmStats {
    /// Connections from zebra accepted.
    pub connections: u64,
    /// Connections dropped because their stream could not be read on (a bad frame).
    pub dropped: u64,
    /// Bytes read.
    pub bytes: u64,
    /// FPM frames read.
    pub frames: u64,
    /// Route messages (`RTM_NEWROUTE`/`RTM_DELROUTE`) of the followed table, both
    /// families.
    pub route_messages: u64,
    /// Route messages of other tables (other VRFs), not followed.
    pub other_tables: u64,
    /// Nexthop object messages (`RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP`).
    pub nexthop_messages: u64,
    /// Messages of other kinds (MPLS routes, EVPN MAC entries, …), not followed.
    pub other_messages: u64,
    /// Netlink messages in well-formed frames that did not decode (skipped).
    pub undecodable: u64,
    /// Sweeps after reconnections.
    pub sweeps: u64,
    /// Routes the sweeps removed (zebra had dropped them while disconnected).
    pub swept_routes: u64,
    /// Nexthop objects the sweeps removed.
    pub swept_nexthops: u64,
}

/// The address families zebra's stream carries, for code generic over the family.
pub trait FpmFamily: Address {
    /// The session's routes of this family.
    fn routes(session: &FpmSession) -> &ZebraRoutes<Self>;
    /// The same, mutable.
    fn routes_mut(session: &mut FpmSession) -> &mut ZebraRoutes<Self>;
}

impl FpmFamily for Ipv4 {
    fn routes(session: &FpmSession) -> &ZebraRoutes<Self> {
        &session.v4
    }
    fn routes_mut(session: &mut FpmSession) -> &mut ZebraRoutes<Self> {
        &mut session.v4
    }
}

impl FpmFamily for Ipv6 {
    fn routes(session: &FpmSession) -> &ZebraRoutes<Self> {
        &session.v6
    }
    fn routes_mut(session: &mut FpmSession) -> &mut ZebraRoutes<Self> {
        &mut session.v6
    }
}

/// zebra's FPM stream (`dplane_fpm_nl`) turned into route changes of one table, IPv4 and
/// IPv6, without a socket: [`connect`](Self::connect) at every new connection,
/// [`feed`](Self::feed) the bytes as they arrive, [`disconnect`](Self::disconnect) when the
/// stream ends, [`sweep_if_due`](Self::sweep_if_due) by [`sweep_due`](Self::sweep_due),
/// and [`take`](Self::take) the changes per family for a
/// [`Follower`](crate::netlink::Follower). [`FpmServer`](super::FpmServer) does the socket
/// part.
///
/// A bad frame (version, type, length: see [`FrameError`]) ends the stream: `feed` returns
/// the error and the connection is to be dropped; what came before it stays applied and
/// nothing of the bad frame is. A netlink message that does not decode in a good frame is
/// skipped and counted ([`FpmStats::undecodable`]); the stream goes on.
#[derive(Debug)]
pub struct FpmSession {
    options: SessionOptions,
    v4: ZebraRoutes<Ipv4>,
    v6: ZebraRoutes<Ipv6>,
    reader: FrameReader,
    stats: FpmStats,
    /// While a reconnection's sweep is pending: when the connection came, and when its
    /// last frame arrived.
    resync: Option<(Instant, Instant)>,
}

impl FpmSession {
    /// A session with no routes, not connected.
    pub fn new(options: SessionOptions) -> Self {
        FpmSession {
            options,
            v4: ZebraRoutes::new(),
            v6: ZebraRoutes::new(),
            reader: FrameReader::new(),
            stats: FpmStats::default(),
            resync: None,
        }
    }

    /// What the session follows.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// Counters.
    pub fn stats(&self) -> FpmStats {
        self.stats
    }

    /// The routes of family `A`.
    pub fn routes<A: FpmFamily>(&self) -> &ZebraRoutes<A> {
        A::routes(self)
    }

    /// The changes of family `A` since the last call, one per prefix (its net change: an
    /// update that zebra sends as a delete and an add is one change), each with the
    /// arrival time of the frame that began it.
    pub fn take<A: FpmFamily>(&mut self) -> Vec<Received<A>> {
        A::routes_mut(self)
            .take_changes()
            .into_iter()
            .map(|(change, at)| Received {
                change,
                at,
                origin: Origin::default(),
            })
            .collect()
    }

    /// A new connection from zebra, which will send its whole table again: everything
    /// held is marked stale until it is sent again, and swept once the stream is quiet.
    pub fn connect(&mut self, at: Instant) {
        self.stats.connections += 1;
        self.reader = FrameReader::new();
        self.v4.mark();
        self.v6.mark();
        self.resync = Some((at, at));
    }

    /// The connection ended: an error if it ended inside a frame. The routes stay (the
    /// data plane keeps forwarding) until zebra connects again and the sweep after it.
    pub fn disconnect(&mut self) -> Result<(), FrameError> {
        let r = self.reader.finish();
        self.reader = FrameReader::new();
        self.resync = None;
        r
    }

    /// Reads `bytes` that arrived at `at` from zebra: every whole frame in them (and in
    /// what was held before) is applied. An error means the stream cannot be read on:
    /// drop the connection (see the type's docs).
    pub fn feed(&mut self, bytes: &[u8], at: Instant) -> Result<(), FrameError> {
        self.stats.bytes += bytes.len() as u64;
        if let Some((_, last)) = &mut self.resync {
            *last = at;
        }
        self.reader.push(bytes);
        let mut bad = 0usize;
        loop {
            let messages = match self.reader.next_frame() {
                Ok(Some(frame)) => parse_messages(frame.payload, &mut bad),
                Ok(None) => break,
                Err(e) => {
                    self.stats.undecodable += bad as u64;
                    self.stats.dropped += 1;
                    return Err(e);
                }
            };
            self.stats.frames += 1;
            for m in messages {
                self.apply(m, at);
            }
        }
        self.stats.undecodable += bad as u64;
        Ok(())
    }

    /// Applies one message.
    fn apply(&mut self, m: Message, at: Instant) {
        let msg = match m {
            Message::Nexthop {
                deleted, object, ..
            } => {
                self.stats.nexthop_messages += 1;
                if deleted {
                    self.v4.nexthop_removed(object.id, at);
                    self.v6.nexthop_removed(object.id, at);
                } else {
                    self.v4.nexthop_set(object.clone(), at);
                    self.v6.nexthop_set(object, at);
                }
                return;
            }
            Message::Rt(m) => m,
        };
        let (deleted, r) = match msg.payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewRoute(r)) => (false, r),
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelRoute(r)) => (true, r),
            _ => {
                self.stats.other_messages += 1;
                return;
            }
        };
        let Some(family) = family_of(&r) else {
            self.stats.other_messages += 1;
            return;
        };
        if table_of(&r) != self.options.table {
            self.stats.other_tables += 1;
            return;
        }
        self.stats.route_messages += 1;
        match family {
            Family::V4 => route(&mut self.v4, &r, deleted, at, &mut self.stats),
            Family::V6 => route(&mut self.v6, &r, deleted, at, &mut self.stats),
        }
    }

    /// When the sweep after a reconnection is due, if one is pending.
    pub fn sweep_due(&self) -> Option<Instant> {
        self.resync.map(|(connected, last)| {
            (last + self.options.sweep_quiet).min(connected + self.options.sweep_max)
        })
    }

    /// Sweeps if it is due at `now`: the routes and nexthop objects not sent again since
    /// the reconnection are removed (their changes wait in [`take`](Self::take)). Returns
    /// the routes removed (IPv4, IPv6), or `None` if no sweep was due.
    pub fn sweep_if_due(&mut self, now: Instant) -> Option<(usize, usize)> {
        if self.sweep_due().is_none_or(|d| now < d) {
            return None;
        }
        self.resync = None;
        let (r4, n4) = self.v4.sweep(now);
        let (r6, n6) = self.v6.sweep(now);
        self.stats.sweeps += 1;
        self.stats.swept_routes += (r4 + r6) as u64;
        self.stats.swept_nexthops += n4.max(n6) as u64;
        Some((r4, r6))
    }
}

/// Applies one route message of the followed table to `routes`.
fn route<A: Address>(
    routes: &mut ZebraRoutes<A>,
    msg: &netlink_packet_route::route::RouteMessage,
    deleted: bool,
    at: Instant,
    stats: &mut FpmStats,
) {
    let Some(r) = decode::<A>(msg) else {
        stats.undecodable += 1;
        return;
    };
    if deleted {
        routes.withdraw(r.prefix, at);
    } else {
        routes.announce(r.prefix, r.target, at);
    }
}

//! Where `follow` takes its routes from — the kernel (rtnetlink: [`KernelSync`]) or FRR's
//! zebra (its Forwarding Plane Manager stream: [`FpmServer`], `--fpm`) — and who answers
//! the checks: the kernel (`RTM_GETROUTE`) or zebra (`show ip route A json` through
//! vtysh).

use std::io;
use std::marker::PhantomData;
use std::time::Duration;

use lpmkit::fpm::{self, FpmFamily, FpmServer, ZebraAnswer, ZebraQuery};
use lpmkit::netlink::{
    self, KernelAnswer, KernelSync, Received, RouteQuery, RouteTarget, Unrepresentable, Verdict,
};
use lpmkit::{Address, Family, Ipv4, Ipv6, NextHop, Rib};

use crate::output::outln;

/// The routes followed.
#[allow(clippy::large_enum_variant)] // one per run
pub(super) enum Source<A: FpmFamily> {
    Kernel(KernelSync<A>),
    Zebra(Zebra<A>),
}

/// zebra's FPM connection, followed for family `A` (the other family's changes are
/// read and dropped).
pub(super) struct Zebra<A> {
    pub server: FpmServer,
    _family: PhantomData<A>,
}

impl<A> Zebra<A> {
    pub fn new(server: FpmServer) -> Self {
        Zebra {
            server,
            _family: PhantomData,
        }
    }
}

impl<A: FpmFamily> Source<A> {
    /// Waits up to `timeout` for what the source sends and returns the changes it makes
    /// (zebra's connection events are printed as they happen).
    pub fn poll(&mut self, timeout: Option<Duration>) -> io::Result<Vec<Received<A>>> {
        match self {
            Source::Kernel(k) => k.poll(timeout),
            Source::Zebra(z) => {
                z.server.poll(timeout)?;
                for e in z.server.events() {
                    outln!("{e}");
                }
                match A::FAMILY {
                    Family::V4 => drop(z.server.take::<Ipv6>()),
                    Family::V6 => drop(z.server.take::<Ipv4>()),
                }
                Ok(z.server.take::<A>())
            }
        }
    }

    /// Messages read so far (any of them starts a burst).
    pub fn activity(&self) -> u64 {
        match self {
            Source::Kernel(k) => {
                let s = k.stats();
                s.messages + s.link_messages + s.address_messages + s.nexthop_messages + s.resyncs
            }
            Source::Zebra(z) => {
                let s = z.server.session().stats();
                s.frames + s.connections + s.dropped + s.sweeps
            }
        }
    }

    /// The followed table's best routes.
    pub fn rib(&self) -> &Rib<A> {
        match self {
            Source::Kernel(k) => k.rib(),
            Source::Zebra(z) => z.server.session().routes::<A>().rib(),
        }
    }

    /// The route target behind a next-hop id.
    pub fn target(&self, nh: NextHop) -> Option<&RouteTarget> {
        match self {
            Source::Kernel(k) => k.target(nh),
            Source::Zebra(z) => z.server.session().routes::<A>().target(nh),
        }
    }

    /// Routes lpmkit cannot represent, by reason.
    pub fn unrepresentable(&self) -> Vec<(Unrepresentable, usize)> {
        match self {
            Source::Kernel(k) => k.unrepresentable(),
            Source::Zebra(z) => z.server.session().routes::<A>().unrepresentable(),
        }
    }

    /// The kernel follower, if that is the source.
    pub fn kernel(&mut self) -> Option<&mut KernelSync<A>> {
        match self {
            Source::Kernel(k) => Some(k),
            Source::Zebra(_) => None,
        }
    }

    /// The counters of the once-a-second line.
    pub fn status(&self) -> String {
        match self {
            Source::Kernel(k) => {
                let s = k.stats();
                format!(
                    "{} msgs, {} link events, {} address events, {} resyncs",
                    s.table_messages, s.link_events, s.address_events, s.resyncs
                )
            }
            Source::Zebra(z) => {
                let s = z.server.session().stats();
                format!(
                    "{} route msgs, {} nexthop msgs, {} connections, {} sweeps",
                    s.route_messages, s.nexthop_messages, s.connections, s.sweeps
                )
            }
        }
    }
}

/// Who answers the checks.
pub(super) enum Oracle {
    Kernel(RouteQuery),
    Zebra(ZebraQuery),
}

/// An answer of the [`Oracle`].
#[derive(Debug)]
pub(super) enum Answer<A: Address> {
    Kernel(KernelAnswer),
    Zebra(ZebraAnswer<A>),
}

impl Oracle {
    /// Its answers for `keys`.
    pub fn get_many<A: Address>(&mut self, keys: &[A]) -> io::Result<Vec<Answer<A>>> {
        Ok(match self {
            Oracle::Kernel(q) => q.get_many(keys)?.into_iter().map(Answer::Kernel).collect(),
            Oracle::Zebra(q) => q.get_many(keys)?.into_iter().map(Answer::Zebra).collect(),
        })
    }

    /// Its name in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Oracle::Kernel(_) => "the kernel",
            Oracle::Zebra(_) => "zebra",
        }
    }
}

impl<A: Address> Answer<A> {
    /// How `ours` (the target of a lookup in the followed `table`) compares with it.
    pub fn compare(&self, ours: Option<&RouteTarget>, table: u32) -> Verdict {
        match self {
            Answer::Kernel(a) => netlink::compare(a, ours, table),
            Answer::Zebra(a) => fpm::compare(a, ours),
        }
    }
}

impl<A: Address> std::fmt::Display for Answer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Answer::Kernel(a) => write!(f, "{a:?}"),
            Answer::Zebra(ZebraAnswer::NoRoute) => f.write_str("no route"),
            Answer::Zebra(ZebraAnswer::Route {
                prefix,
                protocol,
                target,
            }) => write!(f, "{prefix} ({protocol}) {target}"),
        }
    }
}

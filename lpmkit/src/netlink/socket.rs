//! An rtnetlink socket in a chosen network namespace: requests, dumps, datagrams.

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::AddressMessage;
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::nexthop::{
    self, NexthopObject, RTM_DELNEXTHOP, RTM_GETNEXTHOP, RTM_NEWNEXTHOP, RTNLGRP_NEXTHOP,
};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use crate::prefix::Family;

/// rtnetlink multicast groups (`RTNLGRP_IPV4_ROUTE`, `RTNLGRP_IPV6_ROUTE`).
pub(crate) fn route_group(family: Family) -> u32 {
    match family {
        Family::V4 => 7,
        Family::V6 => 11,
    }
}

pub(crate) fn address_family(family: Family) -> AddressFamily {
    match family {
        Family::V4 => AddressFamily::Inet,
        Family::V6 => AddressFamily::Inet6,
    }
}

/// Runs `f` in network namespace `netns` (a name under `/run/netns`, as `ip netns` makes
/// them, or a path such as `/proc/PID/ns/net`); `None` runs it here. Sockets made inside
/// stay in that namespace; the calling thread's namespace never changes (a helper thread
/// enters it).
pub fn in_netns<T: Send>(
    netns: Option<&str>,
    f: impl FnOnce() -> io::Result<T> + Send,
) -> io::Result<T> {
    let Some(name) = netns else {
        return f();
    };
    let path = if name.contains('/') {
        name.to_string()
    } else {
        format!("/run/netns/{name}")
    };
    let file = std::fs::File::open(&path)
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {path}: {e}")))?;
    std::thread::scope(|s| {
        s.spawn(move || {
            // SAFETY: setns on this helper thread only, with a namespace file we hold open.
            if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot enter network namespace {path}: {e}"),
                ));
            }
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace helper thread panicked")))
    })
}

/// An rtnetlink socket and its receive buffer.
pub(crate) struct RtSocket {
    pub(crate) sock: Socket,
    seq: u32,
    buf: Vec<u8>,
}

/// One message read from the socket.
pub(crate) enum Message {
    /// Anything the route crate decodes (routes, links, errors, dump ends).
    Rt(NetlinkMessage<RouteNetlinkMessage>),
    /// A nexthop object announced (`RTM_NEWNEXTHOP`) or deleted (`RTM_DELNEXTHOP`).
    Nexthop {
        header: NetlinkHeader,
        deleted: bool,
        object: NexthopObject,
    },
}

impl Message {
    pub(crate) fn header(&self) -> &NetlinkHeader {
        match self {
            Message::Rt(m) => &m.header,
            Message::Nexthop { header, .. } => header,
        }
    }
}

/// One decoded datagram's messages.
pub(crate) type Messages = Vec<Message>;

/// The rtnetlink multicast group of link notifications (`RTNLGRP_LINK`).
pub(crate) const RTNLGRP_LINK: u32 = 1;

impl RtSocket {
    /// A socket in `netns` (see [`in_netns`]), subscribed to `groups`, with a receive
    /// buffer of `rcvbuf` bytes (0: the system default). Groups the kernel does not
    /// know (nexthop objects before Linux 5.3) are skipped.
    pub(crate) fn open(netns: Option<&str>, groups: &[u32], rcvbuf: usize) -> io::Result<Self> {
        let sock = in_netns(netns, || {
            let mut s = Socket::new(NETLINK_ROUTE)?;
            s.bind_auto()?;
            s.connect(&SocketAddr::new(0, 0))?;
            Ok(s)
        })?;
        for &g in groups {
            match sock.add_membership(g) {
                Ok(()) => {}
                Err(e) if g == RTNLGRP_NEXTHOP && e.raw_os_error() == Some(libc::EINVAL) => {}
                Err(e) => return Err(e),
            }
        }
        if rcvbuf > 0 {
            set_rcvbuf(&sock, rcvbuf)?;
        }
        Ok(RtSocket {
            sock,
            seq: 0,
            buf: vec![0; 1 << 18],
        })
    }

    /// The socket's port id (the `nlmsg_pid` of the requests it sends).
    pub(crate) fn port(&self) -> u32 {
        let mut addr = SocketAddr::new(0, 0);
        self.sock
            .get_address(&mut addr)
            .map_or(0, |_| addr.port_number())
    }

    /// Sends one request; returns its sequence number.
    pub(crate) fn send(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        self.send_seq(msg, flags, self.seq)?;
        Ok(self.seq)
    }

    /// Sends one request with a sequence number of the caller's.
    pub(crate) fn send_seq(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        seq: u32,
    ) -> io::Result<()> {
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = seq;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        packet.finalize();
        let mut out = vec![0; packet.buffer_len()];
        packet.serialize(&mut out);
        self.sock.send(&out, 0)?;
        Ok(())
    }

    /// Sends a request the route crate has no type for: message type `kind`, `body`
    /// after the netlink header. Returns its sequence number.
    pub(crate) fn send_raw(&mut self, kind: u16, flags: u16, body: &[u8]) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        let len = 16 + body.len();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(&(len as u32).to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(&(NLM_F_REQUEST | flags).to_ne_bytes());
        out.extend_from_slice(&self.seq.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes());
        out.extend_from_slice(body);
        self.sock.send(&out, 0)?;
        Ok(self.seq)
    }

    /// Waits up to `timeout` (`None`: forever) for something to read; true if there is.
    /// A signal delivered to the thread ends the wait early (false).
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r >= 0 {
            return Ok(r > 0);
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        Err(e)
    }

    /// Reads one datagram (`Ok(None)` if `nonblocking` and nothing is there) and decodes
    /// its messages. Messages that do not decode are skipped and counted in `bad`.
    pub(crate) fn recv(
        &mut self,
        nonblocking: bool,
        bad: &mut usize,
    ) -> io::Result<Option<Messages>> {
        let flags = if nonblocking { libc::MSG_DONTWAIT } else { 0 };
        let n = loop {
            match self
                .sock
                .recv(&mut &mut self.buf[..], flags | libc::MSG_TRUNC)
            {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(e),
            }
        };
        if n > self.buf.len() {
            // Truncated: grow and let the caller treat it as a lost message.
            self.buf.resize(n.next_power_of_two(), 0);
            return Err(io::Error::from_raw_os_error(libc::ENOBUFS));
        }
        Ok(Some(parse_messages(&self.buf[..n], bad)))
    }

    /// Sends the request of one dump part (see [`DumpPart`]); returns its sequence
    /// number.
    pub(crate) fn request_dump(&mut self, part: DumpPart, family: Family) -> io::Result<u32> {
        match part {
            DumpPart::Links => self.send(
                RouteNetlinkMessage::GetLink(LinkMessage::default()),
                NLM_F_DUMP,
            ),
            DumpPart::Addresses => {
                let mut req = AddressMessage::default();
                req.header.family = address_family(family);
                self.send(RouteNetlinkMessage::GetAddress(req), NLM_F_DUMP)
            }
            DumpPart::Nexthops => {
                self.send_raw(RTM_GETNEXTHOP, NLM_F_DUMP, &nexthop::dump_request())
            }
            DumpPart::Routes => {
                let mut req = RouteMessage::default();
                req.header.address_family = address_family(family);
                self.send(RouteNetlinkMessage::GetRoute(req), NLM_F_DUMP)
            }
        }
    }
}

/// What a full dump of the state a table depends on asks for, in this order: what comes
/// later depends on what came before (routes on interfaces and nexthop objects).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DumpPart {
    /// Every interface (`RTM_GETLINK`).
    Links,
    /// Every address of the family (`RTM_GETADDR`).
    Addresses,
    /// Every nexthop object (`RTM_GETNEXTHOP`; none before Linux 5.3).
    Nexthops,
    /// Every route of the family, all tables (`RTM_GETROUTE`).
    Routes,
}

/// Decodes the netlink messages of one buffer (a datagram, or an FPM frame's payload):
/// nexthop objects by [`nexthop::parse`], the rest by the route crate. Messages that do
/// not decode are skipped and counted in `bad`; a length that runs past the end ends the
/// buffer, and so do bytes too few for a header (each counted once).
pub(crate) fn parse_messages(buf: &[u8], bad: &mut usize) -> Messages {
    let n = buf.len();
    let mut out = Vec::new();
    let mut off = 0;
    while off + 16 <= n {
        let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap()) as usize;
        if len < 16 || len > n - off {
            *bad += 1;
            return out;
        }
        let raw = &buf[off..off + len];
        let kind = u16::from_ne_bytes([raw[4], raw[5]]);
        if kind == RTM_NEWNEXTHOP || kind == RTM_DELNEXTHOP {
            let mut header = NetlinkHeader::default();
            header.length = len as u32;
            header.message_type = kind;
            header.flags = u16::from_ne_bytes([raw[6], raw[7]]);
            header.sequence_number = u32::from_ne_bytes(raw[8..12].try_into().unwrap());
            header.port_number = u32::from_ne_bytes(raw[12..16].try_into().unwrap());
            match nexthop::parse(&raw[16..]) {
                Some(object) => out.push(Message::Nexthop {
                    header,
                    deleted: kind == RTM_DELNEXTHOP,
                    object,
                }),
                None => *bad += 1,
            }
        } else {
            match NetlinkMessage::<RouteNetlinkMessage>::deserialize(raw) {
                Ok(m) => out.push(Message::Rt(m)),
                Err(_) => *bad += 1,
            }
        }
        off += (len + 3) & !3;
    }
    if off < n && buf[off..].iter().any(|&b| b != 0) {
        // Bytes too few for a message header (padding aside).
        *bad += 1;
    }
    out
}

/// Sets the receive buffer: `SO_RCVBUFFORCE` (root may pass `rmem_max`), else `SO_RCVBUF`.
fn set_rcvbuf(sock: &Socket, bytes: usize) -> io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_RCVBUFFORCE, libc::SO_RCVBUF] {
        // SAFETY: a c_int option value of the right size.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&v as *const libc::c_int).cast(),
                core::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
    }
    Err(io::Error::last_os_error())
}

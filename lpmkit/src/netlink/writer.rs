//! [`RouteWriter`]: changes the kernel's routes over rtnetlink (what `ip route replace` and
//! `ip route del` send), for churn generators and tests.

use std::io;

use netlink_packet_core::{NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteHeader, RouteMessage, RouteProtocol, RouteScope,
    RouteType,
};
use netlink_packet_route::RouteNetlinkMessage;

use super::route::RouteTarget;
use super::socket::{address_family, in_netns, Message, RtSocket};
use crate::prefix::{Address, Prefix};

/// One edit of a kernel table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RouteEdit<A: Address> {
    /// `ip route replace PREFIX …`: add, or replace the route of the lowest metric.
    Replace(Prefix<A>, RouteTarget),
    /// `ip route del PREFIX`: delete the prefix's first route.
    Delete(Prefix<A>),
}

/// Sends route edits to the kernel without waiting for each answer: the kernel
/// acknowledges every request, and [`drain`](Self::drain) collects the acknowledgements
/// and counts the refusals (a delete of an absent route, say).
pub struct RouteWriter {
    socket: RtSocket,
    table: u32,
    /// Requests the kernel refused, since the writer was opened.
    pub refused: u64,
    /// Requests acknowledged.
    pub acked: u64,
}

impl core::fmt::Debug for RouteWriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RouteWriter")
            .field("table", &self.table)
            .field("acked", &self.acked)
            .field("refused", &self.refused)
            .finish()
    }
}

impl RouteWriter {
    /// A writer for table `table` of namespace `netns`.
    pub fn open(netns: Option<&str>, table: u32) -> io::Result<Self> {
        Ok(RouteWriter {
            socket: RtSocket::open(netns, &[], 8 << 20)?,
            table,
            refused: 0,
            acked: 0,
        })
    }

    /// The port id the kernel's notifications of these edits carry
    /// ([`Origin::port`](super::Origin::port)).
    pub fn port(&self) -> u32 {
        self.socket.port()
    }

    /// Sends one edit with sequence number `seq` (the notification it causes carries
    /// it). Unicast targets must have one path; a gateway is used `onlink`.
    pub fn send<A: Address>(&mut self, edit: &RouteEdit<A>, seq: u32) -> io::Result<()> {
        let mut msg = RouteMessage::default();
        let prefix = match edit {
            RouteEdit::Replace(p, _) | RouteEdit::Delete(p) => *p,
        };
        msg.header.address_family = address_family(A::FAMILY);
        msg.header.destination_prefix_length = prefix.len();
        if self.table < 256 {
            msg.header.table = self.table as u8;
        } else {
            msg.header.table = RouteHeader::RT_TABLE_UNSPEC;
            msg.attributes.push(RouteAttribute::Table(self.table));
        }
        if !prefix.is_empty() {
            let ip: std::net::IpAddr = prefix.addr().to_std().into();
            msg.attributes
                .push(RouteAttribute::Destination(RouteAddress::from(ip)));
        }
        let (request, flags) = match edit {
            RouteEdit::Delete(_) => {
                msg.header.scope = RouteScope::NoWhere;
                (RouteNetlinkMessage::DelRoute(msg), NLM_F_ACK)
            }
            RouteEdit::Replace(_, target) => {
                msg.header.protocol = RouteProtocol::Static;
                msg.header.scope = RouteScope::Universe;
                msg.header.kind = match target {
                    RouteTarget::Unicast(paths) => {
                        let [path] = paths.as_slice() else {
                            return Err(io::Error::new(
                                io::ErrorKind::Unsupported,
                                "the writer sends single-path routes only",
                            ));
                        };
                        if let Some(g) = path.gateway {
                            msg.attributes
                                .push(RouteAttribute::Gateway(RouteAddress::from(g)));
                            msg.header.flags |= RouteFlags::Onlink;
                        } else {
                            msg.header.scope = RouteScope::Link;
                        }
                        if path.ifindex != 0 {
                            msg.attributes.push(RouteAttribute::Oif(path.ifindex));
                        }
                        RouteType::Unicast
                    }
                    RouteTarget::Blackhole => RouteType::BlackHole,
                    RouteTarget::Unreachable => RouteType::Unreachable,
                    RouteTarget::Prohibit => RouteType::Prohibit,
                    other => {
                        return Err(io::Error::new(
                            io::ErrorKind::Unsupported,
                            format!("the writer does not send {other} routes"),
                        ))
                    }
                };
                (
                    RouteNetlinkMessage::NewRoute(msg),
                    NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE,
                )
            }
        };
        self.socket.send_seq(request, flags, seq)
    }

    /// Reads the acknowledgements that have arrived (without waiting).
    pub fn drain(&mut self) -> io::Result<()> {
        let mut bad = 0;
        while let Some(msgs) = self.socket.recv(true, &mut bad)? {
            for m in msgs {
                let Message::Rt(m) = m else { continue };
                if let NetlinkPayload::Error(e) = m.payload {
                    if e.code.is_some() {
                        self.refused += 1;
                    } else {
                        self.acked += 1;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The index of interface `name` in namespace `netns`.
pub fn ifindex(netns: Option<&str>, name: &str) -> io::Result<u32> {
    let c =
        std::ffi::CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    in_netns(netns, move || {
        // SAFETY: a NUL-terminated name.
        match unsafe { libc::if_nametoindex(c.as_ptr()) } {
            0 => Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {name:?}"),
            )),
            i => Ok(i),
        }
    })
}

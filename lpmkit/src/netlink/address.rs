//! The host's addresses of one family, per interface (`RTM_NEWADDR`/`RTM_DELADDR`): the
//! kernel changes IPv4 routes without a route notification when an interface loses its
//! last address or an address stops being the host's.

use std::collections::HashMap;
use std::net::IpAddr;

use netlink_packet_route::address::{AddressAttribute, AddressMessage};

use crate::prefix::Family;

/// The rtnetlink multicast group of a family's address notifications
/// (`RTNLGRP_IPV4_IFADDR`, `RTNLGRP_IPV6_IFADDR`).
pub(crate) fn address_group(family: Family) -> u32 {
    match family {
        Family::V4 => 5,
        Family::V6 => 9,
    }
}

/// The interface and the address an address message names, if it is of `family` (the
/// local address: `IFA_LOCAL`, else `IFA_ADDRESS`).
pub(crate) fn decode(msg: &AddressMessage, family: Family) -> Option<(u32, IpAddr)> {
    let local = msg.attributes.iter().find_map(|a| match a {
        AddressAttribute::Local(ip) => Some(*ip),
        _ => None,
    });
    let addr = local.or_else(|| {
        msg.attributes.iter().find_map(|a| match a {
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        })
    })?;
    let ours = match family {
        Family::V4 => addr.is_ipv4(),
        Family::V6 => addr.is_ipv6(),
    };
    ours.then_some((msg.header.index, addr))
}

/// The addresses of each interface (one family).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Addresses {
    by_interface: HashMap<u32, Vec<IpAddr>>,
}

impl Addresses {
    /// Adds `addr` to interface `ifindex`; false if it was there.
    pub(crate) fn add(&mut self, ifindex: u32, addr: IpAddr) -> bool {
        let list = self.by_interface.entry(ifindex).or_default();
        if list.contains(&addr) {
            return false;
        }
        list.push(addr);
        true
    }

    /// Removes `addr` from interface `ifindex`; false if it was not there.
    pub(crate) fn remove(&mut self, ifindex: u32, addr: IpAddr) -> bool {
        let Some(list) = self.by_interface.get_mut(&ifindex) else {
            return false;
        };
        let before = list.len();
        list.retain(|a| *a != addr);
        let removed = list.len() < before;
        if list.is_empty() {
            self.by_interface.remove(&ifindex);
        }
        removed
    }

    /// True if interface `ifindex` has an address.
    pub(crate) fn any(&self, ifindex: u32) -> bool {
        self.by_interface.contains_key(&ifindex)
    }

    /// True if some interface has `addr`.
    pub(crate) fn is_local(&self, addr: IpAddr) -> bool {
        self.by_interface.values().any(|l| l.contains(&addr))
    }

    /// Forgets interface `ifindex` (deleted).
    pub(crate) fn forget(&mut self, ifindex: u32) {
        self.by_interface.remove(&ifindex);
    }

    /// Addresses held, over every interface.
    pub(crate) fn len(&self) -> usize {
        self.by_interface.values().map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_address_and_local_addresses() {
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let mut s = Addresses::default();
        assert!(s.add(3, a) && s.add(3, b) && s.add(4, a));
        assert!(!s.add(3, a));
        assert_eq!(s.len(), 3);
        assert!(s.remove(3, a));
        assert!(s.is_local(a), "still on interface 4");
        assert!(s.any(3));
        assert!(s.remove(3, b) && !s.remove(3, b));
        assert!(!s.any(3) && !s.is_local(b));
        s.forget(4);
        assert!(!s.is_local(a) && s.len() == 0);
    }
}

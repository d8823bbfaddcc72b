//! The slow reference forwarder: the same decisions written plainly (the `Rib` for the
//! lookup, `std::net` parsing, the IPv4 checksum recomputed in full), to check the fast
//! path's frames.

use std::net::{Ipv4Addr, Ipv6Addr};

use lpmkit::{Address, Family, NextHop, Rib};

use super::engine::Neighbours;
use super::packet::{ipv4_checksum, ETH};

/// What the reference forwarder does with a frame: `Some((port, header bytes))` to
/// forward, `None` to drop.
pub fn forward<A: Address>(
    frame: &[u8],
    rib: &Rib<A>,
    nbr: &Neighbours,
) -> Option<(usize, Vec<u8>)> {
    let mut f = frame.to_vec();
    let dst: A = match A::FAMILY {
        Family::V4 => {
            if u16::from_be_bytes([f[12], f[13]]) != 0x0800 || f[ETH] != 0x45 || f[ETH + 8] <= 1 {
                return None;
            }
            let ip = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
            A::from_ip(ip.into())?
        }
        Family::V6 => {
            if u16::from_be_bytes([f[12], f[13]]) != 0x86dd || f[ETH] >> 4 != 6 || f[ETH + 7] <= 1 {
                return None;
            }
            let b: [u8; 16] = f[38..54].try_into().unwrap();
            A::from_ip(Ipv6Addr::from(b).into())?
        }
    };
    let nh = NextHop::raw(rib.lookup(dst)) as usize;
    if nh == 0 {
        return None;
    }
    let port = nh % nbr.ports;
    let n = (nh as u32).to_be_bytes();
    f[0..6].copy_from_slice(&[0x02, 0, n[0], n[1], n[2], n[3]]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xff, port as u8]);
    match A::FAMILY {
        Family::V4 => {
            f[ETH + 8] -= 1;
            let c = ipv4_checksum(&f[ETH..ETH + 20]);
            f[ETH + 10..ETH + 12].copy_from_slice(&c.to_be_bytes());
        }
        Family::V6 => f[ETH + 7] -= 1,
    }
    Some((port, f))
}

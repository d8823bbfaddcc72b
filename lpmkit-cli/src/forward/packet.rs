//! Ethernet/IPv4/IPv6 frames: building, parsing, the forwarding rewrite (MACs, TTL or
//! hop limit with the RFC 1624 incremental checksum update), and the full checksum the
//! reference forwarder recomputes.

use lpmkit::{Address, Family};

/// Ethernet header length (no VLAN tag).
pub const ETH: usize = 14;
/// Bytes of a frame the forwarder reads or writes (and the emulated NIC refreshes).
pub const HEADROOM: usize = 64;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

/// The smallest frame of a family, without the 4-byte FCS: 60 bytes for IPv4 (64 on the
/// wire); 78 for IPv6 (its 40-byte header and UDP need 62, and 78 is the usual IPv6
/// minimum in NIC benchmarks).
pub fn min_frame(family: Family) -> usize {
    match family {
        Family::V4 => 60,
        Family::V6 => 78,
    }
}

/// The simple IMIX (7:4:1 of 64, 594 and 1518 bytes on the wire), frame `i`'s size
/// without FCS (never below the family's minimum).
pub fn imix_len(i: usize, family: Family) -> usize {
    let wire = match i % 12 {
        0..=6 => 64,
        7..=10 => 594,
        _ => 1518,
    };
    (wire - 4).max(min_frame(family))
}

/// The one's-complement sum of 16-bit big-endian words, folded.
pub fn ones_sum(bytes: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in bytes.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        s += w as u32;
    }
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The IPv4 header checksum of `hdr` (its checksum field taken as zero).
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut h = [0u8; 60];
    h[..hdr.len()].copy_from_slice(hdr);
    h[10] = 0;
    h[11] = 0;
    !ones_sum(&h[..hdr.len()])
}

/// RFC 1624 eqn. 3: the checksum `hc` after a 16-bit word of the header changes from `m`
/// to `m2`: `HC' = ~(~HC + ~m + m')`.
#[inline]
pub fn checksum_update(hc: u16, m: u16, m2: u16) -> u16 {
    let mut s = (!hc as u32) + (!m as u32 & 0xffff) + m2 as u32;
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// Writes a frame of `len` bytes (headers; the payload is left as it is) to `buf`:
/// Ethernet to `dst_mac` from `src_mac`, IP from `src` to `dst` with `ttl`, UDP.
pub fn build<A: Address>(buf: &mut [u8], len: usize, src: A, dst: A, ttl: u8, id: u16) {
    buf[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0xee, 0x01]);
    buf[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0xee, 0x02]);
    let ip_len = len - ETH;
    match A::FAMILY {
        Family::V4 => {
            buf[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
            let h = &mut buf[ETH..ETH + 20];
            h[0] = 0x45;
            h[1] = 0;
            h[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
            h[4..6].copy_from_slice(&id.to_be_bytes());
            h[6..8].copy_from_slice(&[0x40, 0]); // DF
            h[8] = ttl;
            h[9] = 17;
            h[12..16].copy_from_slice(&(src.to_u128() as u32).to_be_bytes());
            h[16..20].copy_from_slice(&(dst.to_u128() as u32).to_be_bytes());
            let c = ipv4_checksum(h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            udp(&mut buf[ETH + 20..], (ip_len - 20) as u16, id);
        }
        Family::V6 => {
            buf[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
            let h = &mut buf[ETH..ETH + 40];
            h[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
            h[4..6].copy_from_slice(&((ip_len - 40) as u16).to_be_bytes());
            h[6] = 17;
            h[7] = ttl;
            h[8..24].copy_from_slice(&src.to_u128().to_be_bytes());
            h[24..40].copy_from_slice(&dst.to_u128().to_be_bytes());
            udp(&mut buf[ETH + 40..], (ip_len - 40) as u16, id);
        }
    }
}

fn udp(b: &mut [u8], len: u16, id: u16) {
    b[0..2].copy_from_slice(&(1024 + (id & 0x3fff)).to_be_bytes());
    b[2..4].copy_from_slice(&9u16.to_be_bytes()); // discard
    b[4..6].copy_from_slice(&len.to_be_bytes());
    b[6..8].copy_from_slice(&[0, 0]);
}

/// Why a frame is not forwarded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Drop {
    /// Not IPv4/IPv6 of the expected family, or a malformed header.
    Malformed,
    /// TTL or hop limit would reach 0.
    Expired,
}

/// The fast-path parse: the destination of a well-formed frame of family `A` with TTL
/// above 1, else why it is dropped.
#[inline]
pub fn parse<A: Address>(f: &[u8]) -> Result<A, Drop> {
    if f.len() < HEADROOM.min(min_frame(A::FAMILY)) {
        return Err(Drop::Malformed);
    }
    let et = u16::from_be_bytes([f[12], f[13]]);
    match A::FAMILY {
        Family::V4 => {
            if et != ETHERTYPE_IPV4 || f[ETH] != 0x45 {
                return Err(Drop::Malformed);
            }
            if f[ETH + 8] <= 1 {
                return Err(Drop::Expired);
            }
            let d = u32::from_be_bytes([f[30], f[31], f[32], f[33]]);
            Ok(A::from_u128(d as u128))
        }
        Family::V6 => {
            if et != ETHERTYPE_IPV6 || f[ETH] >> 4 != 6 {
                return Err(Drop::Malformed);
            }
            if f[ETH + 7] <= 1 {
                return Err(Drop::Expired);
            }
            let mut d = [0u8; 16];
            d.copy_from_slice(&f[38..54]);
            Ok(A::from_u128(u128::from_be_bytes(d)))
        }
    }
}

/// The fast-path rewrite of a parsed frame: MACs (`macs` = destination then source),
/// TTL − 1 with the RFC 1624 checksum update (IPv4) or hop limit − 1 (IPv6).
#[inline]
pub fn rewrite(f: &mut [u8], macs: &[u8; 12], family: Family) {
    f[..12].copy_from_slice(macs);
    match family {
        Family::V4 => {
            let ttl = f[ETH + 8];
            let proto = f[ETH + 9];
            let old = u16::from_be_bytes([ttl, proto]);
            let new = u16::from_be_bytes([ttl - 1, proto]);
            let hc = u16::from_be_bytes([f[ETH + 10], f[ETH + 11]]);
            f[ETH + 8] = ttl - 1;
            f[ETH + 10..ETH + 12].copy_from_slice(&checksum_update(hc, old, new).to_be_bytes());
        }
        Family::V6 => f[ETH + 7] -= 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1624_update_equals_recomputation() {
        let mut f = vec![0u8; 60];
        for (i, ttl) in [(1u16, 64u8), (2, 2), (0xffff, 255), (77, 128)] {
            build::<u32>(
                &mut f,
                60,
                0xc612_0001,
                0x0a00_0000 + i as u32 * 977,
                ttl,
                i,
            );
            assert_eq!(ones_sum(&f[ETH..ETH + 20]), 0xffff, "valid before");
            rewrite(&mut f, &[1; 12], Family::V4);
            assert_eq!(f[ETH + 8], ttl - 1);
            assert_eq!(ones_sum(&f[ETH..ETH + 20]), 0xffff, "valid after");
            let c = u16::from_be_bytes([f[ETH + 10], f[ETH + 11]]);
            assert_eq!(c, ipv4_checksum(&f[ETH..ETH + 20]), "same as recomputed");
        }
        // RFC 1624's own example: HC = 0xdd2f, m = 0x5555 -> m' = 0x3285 gives 0x0000.
        assert_eq!(checksum_update(0xdd2f, 0x5555, 0x3285), 0x0000);
    }

    #[test]
    fn parse_both_families_and_drops() {
        let mut f = vec![0u8; 78];
        build::<u128>(&mut f, 78, 1, 0x2001_0db8 << 96 | 5, 64, 3);
        assert_eq!(parse::<u128>(&f), Ok(0x2001_0db8 << 96 | 5));
        assert_eq!(parse::<u32>(&f), Err(Drop::Malformed));
        build::<u32>(&mut f, 60, 1, 0x0a01_0203, 1, 3);
        assert_eq!(parse::<u32>(&f), Err(Drop::Expired));
        build::<u32>(&mut f, 60, 1, 0x0a01_0203, 2, 3);
        assert_eq!(parse::<u32>(&f), Ok(0x0a01_0203));
    }

    #[test]
    fn imix_sizes() {
        let n: Vec<usize> = (0..12).map(|i| imix_len(i, Family::V4)).collect();
        assert_eq!(n.iter().filter(|&&l| l == 60).count(), 7);
        assert_eq!(n.iter().filter(|&&l| l == 590).count(), 4);
        assert_eq!(n.iter().filter(|&&l| l == 1514).count(), 1);
    }
}

//! Test frames and pcap files: Ethernet/IPv4/UDP and Ethernet/IPv6/UDP frames to chosen
//! destinations, each carrying a marker and its sequence number in its payload, written
//! to and read from classic pcap files.

use std::path::Path;

/// The first bytes of every test frame's UDP payload.
pub const MARKER: &[u8; 8] = b"lpmkit-f";
/// Source and destination MAC addresses of the frames sent (l3fwd rewrites both).
const SRC_MAC: [u8; 6] = [0x02, 0x6c, 0x70, 0x6d, 0x00, 0x01];
const DST_MAC: [u8; 6] = [0x02, 0x6c, 0x70, 0x6d, 0x00, 0x02];
/// UDP ports of the test frames.
const SPORT: u16 = 40000;
const DPORT: u16 = 9;

/// A frame's destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dst {
    V4(u32),
    V6(u128),
}

fn csum(data: &[u8], mut sum: u32) -> u16 {
    for c in data.chunks(2) {
        let w = if c.len() == 2 {
            u16::from_be_bytes([c[0], c[1]])
        } else {
            u16::from_be_bytes([c[0], 0])
        };
        sum += u32::from(w);
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn payload(seq: u32) -> [u8; 16] {
    let mut p = [0u8; 16];
    p[..8].copy_from_slice(MARKER);
    p[8..12].copy_from_slice(&seq.to_be_bytes());
    p[12..].copy_from_slice(&(!seq).to_be_bytes());
    p
}

/// An Ethernet/IPv4/UDP frame to `dst` with sequence number `seq` (62 bytes).
pub fn ipv4(dst: u32, seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(62);
    f.extend_from_slice(&DST_MAC);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let src = 0xc633_6400u32 | (seq & 0xff); // 198.51.100.x
    let total = 20 + 8 + 20u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&src.to_be_bytes());
    ip[16..20].copy_from_slice(&dst.to_be_bytes());
    let c = csum(&ip, 0);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&SPORT.to_be_bytes());
    f.extend_from_slice(&DPORT.to_be_bytes());
    f.extend_from_slice(&(8 + 20u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]); // no UDP checksum (allowed for IPv4)
    f.extend_from_slice(&payload(seq));
    f.extend_from_slice(&[0; 4]); // to 62 bytes: no frame shorter than Ethernet's 60
    f
}

/// An Ethernet/IPv6/UDP frame to `dst` with sequence number `seq` (78 bytes).
pub fn ipv6(dst: u128, seq: u32) -> Vec<u8> {
    let mut f = Vec::with_capacity(78);
    f.extend_from_slice(&DST_MAC);
    f.extend_from_slice(&SRC_MAC);
    f.extend_from_slice(&0x86ddu16.to_be_bytes());
    let src = 0x2001_0db8_0000_0000_0000_0000_0000_0000u128 | u128::from(seq);
    let len = 8 + 16u16;
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&len.to_be_bytes());
    f.push(17);
    f.push(64);
    f.extend_from_slice(&src.to_be_bytes());
    f.extend_from_slice(&dst.to_be_bytes());
    let mut udp = Vec::with_capacity(24);
    udp.extend_from_slice(&SPORT.to_be_bytes());
    udp.extend_from_slice(&DPORT.to_be_bytes());
    udp.extend_from_slice(&len.to_be_bytes());
    udp.extend_from_slice(&[0, 0]);
    udp.extend_from_slice(&payload(seq));
    // The pseudo-header: addresses, length, next header.
    let mut pseudo = Vec::with_capacity(40);
    pseudo.extend_from_slice(&src.to_be_bytes());
    pseudo.extend_from_slice(&dst.to_be_bytes());
    pseudo.extend_from_slice(&u32::from(len).to_be_bytes());
    pseudo.extend_from_slice(&[0, 0, 0, 17]);
    let mut sum = 0u32;
    for c in pseudo.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    let c = match csum(&udp, sum) {
        0 => 0xffff,
        c => c,
    };
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&udp);
    f
}

/// The frame for `dst`.
pub fn frame(dst: Dst, seq: u32) -> Vec<u8> {
    match dst {
        Dst::V4(a) => ipv4(a, seq),
        Dst::V6(a) => ipv6(a, seq),
    }
}

/// The sequence number of a test frame (the marker after an IPv4 or IPv6 UDP header),
/// `None` for any other frame.
pub fn sequence(frame: &[u8]) -> Option<u32> {
    let at = match frame.get(12..14)? {
        [0x08, 0x00] => 14 + 20 + 8,
        [0x86, 0xdd] => 14 + 40 + 8,
        _ => return None,
    };
    let p = frame.get(at..at + 16)?;
    (&p[..8] == MARKER).then(|| u32::from_be_bytes([p[8], p[9], p[10], p[11]]))
}

/// The classic pcap file header (microseconds, Ethernet).
const PCAP_HEADER: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
];

/// Writes `frames` to a pcap file at `path` (timestamps: one microsecond apart).
pub fn write_pcap<'a>(path: &Path, frames: impl IntoIterator<Item = &'a [u8]>) {
    let mut out = PCAP_HEADER.to_vec();
    for (i, f) in frames.into_iter().enumerate() {
        out.extend_from_slice(&1u32.to_le_bytes());
        out.extend_from_slice(&(i as u32 % 1_000_000).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(&(f.len() as u32).to_le_bytes());
        out.extend_from_slice(f);
    }
    std::fs::write(path, out).unwrap();
}

/// The frames of a pcap file as written by DPDK's `net_pcap` (microsecond, little-endian
/// headers), or as far as it is complete; an unreadable file has none.
pub fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let Ok(b) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut frames = Vec::new();
    let mut at = 24;
    while at + 16 <= b.len() {
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        let Some(f) = b.get(at + 16..at + 16 + caplen) else {
            break;
        };
        frames.push(f.to_vec());
        at += 16 + caplen;
    }
    frames
}

/// The pcap file at `path` with every record's timestamp zeroed: `net_pcap` stamps the
/// frames it writes with the time of writing, the one part of its output that differs
/// from one run to the next.
pub fn without_timestamps(path: &Path) -> Vec<u8> {
    let mut b = std::fs::read(path).unwrap_or_default();
    let mut at = 24;
    while at + 16 <= b.len() {
        let caplen = u32::from_le_bytes(b[at + 8..at + 12].try_into().unwrap()) as usize;
        b[at..at + 8].fill(0);
        at += 16 + caplen;
    }
    b
}

#[test]
fn frames_carry_their_sequence_numbers() {
    assert_eq!(sequence(&ipv4(0x0a00_0001, 77)), Some(77));
    assert_eq!(sequence(&ipv6(1, 78)), Some(78));
    assert_eq!(ipv4(1, 1).len(), 62);
    assert_eq!(ipv6(1, 1).len(), 78);
    // The IPv4 header checksum verifies.
    let f = ipv4(0xc000_0201, 5);
    assert_eq!(csum(&f[14..34], 0), 0);
}

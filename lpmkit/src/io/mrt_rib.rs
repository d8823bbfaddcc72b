//! The fast path of MRT RIB dumps: the entries of a TABLE_DUMP_V2 unicast RIB record
//! (RFC 6396 §4.3.2, §4.3.4) read straight from its bytes, with only what the FIB needs
//! (peer index, ORIGIN, AS_PATH length, NEXT_HOP / MP_REACH_NLRI next hop, LOCAL_PREF).
//!
//! It reads the common encoding only: every entry and attribute framed exactly, the
//! attributes it uses present at most once each and in their standard form, no AS4_PATH.
//! Anything else — truncation, a duplicate, an unusual next-hop length, a bad segment type
//! — makes it decline the whole record (`None`), and the caller parses that record with
//! bgpkit-parser as before, which decides what it means and reports the errors. So the
//! fast path changes the speed of a load, never its result.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// What the FIB needs of one RIB entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Entry {
    /// Index into the PEER_INDEX_TABLE.
    pub peer_index: u16,
    /// LOCAL_PREF (0 when absent).
    pub local_pref: u32,
    /// AS_PATH length: a sequence counts its ASes, a set 1, confederation segments 0.
    pub as_path_len: u32,
    /// ORIGIN (2, INCOMPLETE, when absent).
    pub origin: u8,
    /// NEXT_HOP, or the MP_REACH_NLRI next hop (its global address).
    pub next_hop: Option<IpAddr>,
    /// The MP_REACH_NLRI next hop (for IPv6 routes, preferred to NEXT_HOP).
    pub mp_next_hop: Option<IpAddr>,
}

/// A cursor over a record body; every read checks its bounds.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|b| u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// The prefix (as the record writes it: address and length, host bits as given) and the
/// entries of the body of a RIB_IPV4_UNICAST (`v6` false) or RIB_IPV6_UNICAST record,
/// with a path identifier per entry if `add_path`; the entries go to `out` (cleared
/// first). `None`: the record is not in the common encoding (see the module docs).
pub(super) fn rib_record(
    body: &[u8],
    v6: bool,
    add_path: bool,
    out: &mut Vec<Entry>,
) -> Option<(IpAddr, u8)> {
    out.clear();
    let mut b = Bytes(body);
    b.u32()?; // sequence number
    let len = b.u8()?;
    let width = if v6 { 16 } else { 4 };
    if len as usize > width * 8 {
        return None;
    }
    let mut addr = [0u8; 16];
    addr[..(len as usize).div_ceil(8)].copy_from_slice(b.take((len as usize).div_ceil(8))?);
    let addr = if v6 {
        IpAddr::V6(Ipv6Addr::from(addr))
    } else {
        IpAddr::V4(Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]))
    };
    let count = b.u16()?;
    for _ in 0..count {
        let peer_index = b.u16()?;
        b.u32()?; // originated time
        if add_path {
            b.u32()?; // path identifier
        }
        let attr_len = b.u16()? as usize;
        let mut e = attributes(b.take(attr_len)?, v6, add_path)?;
        e.peer_index = peer_index;
        out.push(e);
    }
    // Bytes after the declared entries: not the common encoding.
    b.0.is_empty().then_some((addr, len))
}

/// The attributes of one entry (4-octet AS numbers, as in every TABLE_DUMP_V2 RIB entry).
fn attributes(attrs: &[u8], v6: bool, add_path: bool) -> Option<Entry> {
    let mut e = Entry {
        peer_index: 0,
        local_pref: 0,
        as_path_len: 0,
        origin: 2,
        next_hop: None,
        mp_next_hop: None,
    };
    // Which of ORIGIN, AS_PATH, NEXT_HOP, LOCAL_PREF, MP_REACH_NLRI were seen.
    let mut seen = 0u8;
    let mut once = |bit: u8| {
        let first = seen & bit == 0;
        seen |= bit;
        first.then_some(())
    };
    let mut b = Bytes(attrs);
    while !b.0.is_empty() {
        let flags = b.u8()?;
        let code = b.u8()?;
        let len = if flags & 0x10 != 0 {
            b.u16()? as usize
        } else {
            b.u8()? as usize
        };
        let v = b.take(len)?;
        match code {
            1 => {
                once(1)?;
                match v {
                    &[o] if o <= 2 => e.origin = o,
                    _ => return None,
                }
            }
            2 => {
                once(2)?;
                e.as_path_len = as_path_len(v)?;
            }
            3 => {
                once(4)?;
                e.next_hop = Some(match (v6, v.len()) {
                    (false, 4) => IpAddr::V4(Ipv4Addr::new(v[0], v[1], v[2], v[3])),
                    (true, 16) => IpAddr::V6(v6_at(v, 0)),
                    _ => return None,
                });
            }
            5 => {
                once(8)?;
                e.local_pref = u32::from_be_bytes(v.try_into().ok()?);
            }
            14 => {
                once(16)?;
                e.mp_next_hop = Some(mp_next_hop(v, add_path)?);
            }
            // AS4_PATH: merged with AS_PATH by rules the fast path does not repeat.
            17 => return None,
            _ => {}
        }
    }
    Some(e)
}

/// The route length of an AS_PATH of 4-octet AS numbers.
fn as_path_len(v: &[u8]) -> Option<u32> {
    let mut b = Bytes(v);
    let mut n = 0u32;
    while !b.0.is_empty() {
        let kind = b.u8()?;
        let count = b.u8()?;
        b.take(count as usize * 4)?;
        n += match kind {
            1 => 1,            // AS_SET
            2 => count as u32, // AS_SEQUENCE
            3 | 4 => 0,        // AS_CONFED_SEQUENCE, AS_CONFED_SET
            _ => return None,
        };
    }
    Some(n)
}

/// The next hop of a TABLE_DUMP_V2 MP_REACH_NLRI: one IPv4 or IPv6 address, or an IPv6
/// global and link-local pair (the global one; the second if only the first is
/// link-local). The attribute comes abbreviated (RFC 6396 §4.3.4: next-hop length and
/// address only) or, from some dumpers, whole (RFC 4760 §3: AFI, SAFI, next hop, a
/// reserved byte and the NLRI, which must then parse as plain prefixes).
fn mp_next_hop(v: &[u8], add_path: bool) -> Option<IpAddr> {
    let mut b = Bytes(v);
    let whole = v.first() == Some(&0);
    let mut max_len = 0;
    if whole {
        let afi = b.u16()?;
        let safi = b.u8()?;
        max_len = match (afi, safi) {
            (1, 1 | 2) => 32,
            (2, 1 | 2) => 128,
            _ => return None,
        };
    }
    let n = b.u8()?;
    let hop = b.take(n as usize)?;
    if whole {
        // The reserved byte, then the NLRI (a path identifier first would need the
        // parser's guesswork: declined).
        b.u8()?;
        while let Some(len) = b.u8() {
            if add_path || len == 0 || len > max_len {
                return None;
            }
            b.take((len as usize).div_ceil(8))?;
        }
    } else if !b.0.is_empty() {
        return None;
    }
    match n {
        4 => Some(IpAddr::V4(Ipv4Addr::new(hop[0], hop[1], hop[2], hop[3]))),
        16 => Some(IpAddr::V6(v6_at(hop, 0))),
        32 => {
            let (a, b) = (v6_at(hop, 0), v6_at(hop, 16));
            let link_local = |x: Ipv6Addr| x.segments()[0] & 0xffc0 == 0xfe80;
            Some(IpAddr::V6(if link_local(a) && !link_local(b) {
                b
            } else {
                a
            }))
        }
        _ => None,
    }
}

fn v6_at(v: &[u8], at: usize) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a.copy_from_slice(&v[at..at + 16]);
    Ipv6Addr::from(a)
}

#[cfg(test)]
#[cfg(feature = "compression")]
mod tests {
    use super::*;
    use crate::prefix::Family;
    use crate::rng::SplitMix64;
    use bgpkit_parser::models::{MrtMessage, TableDumpV2Message};
    use bgpkit_parser::{chunk_mrt_record, RawMrtRecord};

    /// The RIB records (subtype, body) of an MRT file of the data set.
    fn rib_records(name: &str) -> Vec<(u16, Vec<u8>)> {
        let Some(dir) = crate::test_data::dir() else {
            return vec![];
        };
        let mut input = crate::io::open_input(&dir.join("mrt").join(name)).unwrap();
        let mut out = Vec::new();
        while let Ok(raw) = chunk_mrt_record(&mut input) {
            let (t, st) = (
                raw.common_header.entry_type as u16,
                raw.common_header.entry_subtype,
            );
            if t == 13 && matches!(st, 2 | 4 | 8 | 10) {
                out.push((st, raw.message_bytes.to_vec()));
            }
        }
        out
    }

    /// What bgpkit-parser makes of a RIB record, in the fast path's terms (`None` if it
    /// does not parse it as a RIB record whose every declared entry parses).
    fn via_bgpkit(st: u16, body: &[u8]) -> Option<(IpAddr, u8, Vec<Entry>)> {
        let mut raw: RawMrtRecord = {
            let mut framed = Vec::new();
            framed.extend_from_slice(&0u32.to_be_bytes());
            framed.extend_from_slice(&13u16.to_be_bytes());
            framed.extend_from_slice(&st.to_be_bytes());
            framed.extend_from_slice(&(body.len() as u32).to_be_bytes());
            framed.extend_from_slice(body);
            chunk_mrt_record(&mut framed.as_slice()).ok()?
        };
        raw.message_bytes = body.to_vec().into();
        let MrtMessage::TableDumpV2Message(TableDumpV2Message::RibAfi(e)) =
            raw.parse().ok()?.message
        else {
            return None;
        };
        let declared = u16::from_be_bytes(
            body.get(5 + (*body.get(4)? as usize).div_ceil(8)..)?
                .get(..2)?
                .try_into()
                .ok()?,
        );
        if e.rib_entries.len() != declared as usize {
            return None;
        }
        let family = if matches!(st, 4 | 10) {
            Family::V6
        } else {
            Family::V4
        };
        let peer = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
        let entries = e
            .rib_entries
            .iter()
            .map(|r| {
                let p = crate::io::mrt::path_attrs(&r.attributes, peer, family);
                Entry {
                    peer_index: r.peer_index,
                    local_pref: p.local_pref,
                    as_path_len: p.as_path_len,
                    origin: p.origin,
                    next_hop: p.next_hop,
                    mp_next_hop: None,
                }
            })
            .collect();
        Some((
            e.prefix.prefix.addr(),
            e.prefix.prefix.prefix_len(),
            entries,
        ))
    }

    /// The fast path's answer in the same terms: the next hop the FIB would take.
    fn via_fast(st: u16, body: &[u8]) -> Option<(IpAddr, u8, Vec<Entry>)> {
        let v6 = matches!(st, 4 | 10);
        let mut out = Vec::new();
        let (addr, len) = rib_record(body, v6, st >= 8, &mut out)?;
        for e in &mut out {
            e.next_hop = if v6 {
                e.mp_next_hop.or(e.next_hop)
            } else {
                e.next_hop.or(e.mp_next_hop)
            };
            e.mp_next_hop = None;
        }
        Some((addr, len, out))
    }

    /// Every RIB record of the data set's TABLE_DUMP_V2 dumps takes the fast path and
    /// reads as bgpkit-parser reads it.
    #[test]
    fn real_records_read_as_bgpkit_reads_them() {
        for name in [
            "routeviews2.rib.20140523.0600.head.mrt.gz",
            "routeviews6.rib6.20151101.0600.head.mrt.gz",
        ] {
            let records = rib_records(name);
            for (st, body) in &records {
                let fast = via_fast(*st, body);
                assert!(fast.is_some(), "{name}: a record declined");
                assert_eq!(fast, via_bgpkit(*st, body), "{name}");
            }
            eprintln!("{name}: {} records", records.len());
        }
    }

    /// Damaged records (bytes changed, cut or added) never panic the fast path, and
    /// whatever it accepts reads as bgpkit-parser reads it.
    #[test]
    fn damaged_records_are_declined_or_read_alike() {
        let records = rib_records("routeviews6.rib6.20151101.0600.head.mrt.gz");
        let mut rng = SplitMix64::new(9);
        let (mut accepted, mut declined) = (0, 0);
        for (k, (st, body)) in records.iter().enumerate().take(3000) {
            for _ in 0..8 {
                let mut b = body.clone();
                match rng.below(4) {
                    0 if !b.is_empty() => {
                        let i = rng.below(b.len() as u64) as usize;
                        b[i] = rng.next() as u8;
                    }
                    1 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
                    2 => b.push(rng.next() as u8),
                    _ => {
                        // An attribute's first byte (flags, type or length) changed.
                        let i = (12 + rng.below(40)) as usize;
                        if i < b.len() {
                            b[i] ^= 1 << rng.below(8);
                        }
                    }
                }
                let st = if k % 5 == 0 { st + 6 } else { *st };
                match via_fast(st, &b) {
                    Some(fast) => {
                        accepted += 1;
                        assert_eq!(Some(fast), via_bgpkit(st, &b), "record {k}");
                    }
                    None => declined += 1,
                }
            }
        }
        if !records.is_empty() {
            assert!(accepted > 100 && declined > 100, "{accepted} / {declined}");
        }
    }
}

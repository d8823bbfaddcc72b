//! MRT (RFC 6396) input through bgpkit-parser: RIB dumps (TABLE_DUMP, §4.2;
//! TABLE_DUMP_V2, §4.3) and update files (BGP4MP, §4.4).
//!
//! Records are framed and parsed one at a time from a byte-counting reader, so every error
//! names the byte offset (in the decompressed stream) of the record it concerns. Records
//! that carry nothing the reader needs are skipped without parsing and counted by type in
//! [`ReadStats::skipped_records`]; a record the reader needs but cannot parse is an error.

use std::collections::HashMap;
use std::io::Read;
use std::net::IpAddr;

use bgpkit_parser::error::BgpValidationWarning;
use bgpkit_parser::models::{
    AsPath, Attributes, Bgp4MpEnum, BgpMessage, MrtMessage, Peer, Safi, TableDumpMessage,
    TableDumpV2Message,
};
use bgpkit_parser::models::{AttrType, AttributeValue};
use bgpkit_parser::{chunk_mrt_record, ParserError, RawMrtRecord};

use super::format::Update;
use super::multipeer::{MultiPeer, PathAttrs};
use super::{is_decode_error, ReadError, ReadStats, TableOptions};
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::{Address, Family, Ipv4, Ipv6, Prefix};
use crate::table::AnyTable;

/// A reader that counts the bytes read through it.
struct Counting<R> {
    inner: R,
    pos: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Frames MRT records one at a time, with their offsets.
struct Records<'a, R> {
    source: &'a str,
    input: Counting<R>,
    count: usize,
}

impl<'a, R: Read> Records<'a, R> {
    fn new(source: &'a str, r: R) -> Self {
        Records {
            source,
            input: Counting { inner: r, pos: 0 },
            count: 0,
        }
    }

    /// The next record and its offset, `None` at a clean end of input.
    fn next(&mut self) -> Result<Option<(u64, RawMrtRecord)>, ReadError> {
        let start = self.input.pos;
        match chunk_mrt_record(&mut self.input) {
            Ok(raw) => {
                self.count += 1;
                Ok(Some((start, raw)))
            }
            Err(e) => match e.error {
                ParserError::EofExpected => Ok(None),
                ParserError::IoError(io) | ParserError::EofError(io) => {
                    let msg = if is_decode_error(&io) {
                        io.to_string()
                    } else if io.kind() == std::io::ErrorKind::UnexpectedEof {
                        format!(
                            "truncated MRT record: the input ends {} bytes into it ({io})",
                            self.input.pos - start
                        )
                    } else {
                        format!("read error: {io}")
                    };
                    Err(ReadError::at_offset(self.source, start, msg))
                }
                ParserError::OversizedRecord { length } => Err(ReadError::at_offset(
                    self.source,
                    start,
                    format!(
                        "MRT record declares a {length}-byte body, over the parser's 16 MiB limit (corrupt input?)"
                    ),
                )),
                other => Err(ReadError::at_offset(
                    self.source,
                    start,
                    format!("bad MRT record header: {other}"),
                )),
            },
        }
    }

    /// Parses a framed record; failure is an error at its offset.
    fn parse(&self, offset: u64, raw: RawMrtRecord) -> Result<MrtMessage, ReadError> {
        let kind = record_kind(&raw);
        raw.parse().map(|r| r.message).map_err(|e| {
            ReadError::at_offset(self.source, offset, format!("bad {kind} record: {e}"))
        })
    }
}

/// RFC 6396 type codes used here.
const TABLE_DUMP: u16 = 12;
const TABLE_DUMP_V2: u16 = 13;
const BGP4MP: u16 = 16;
const BGP4MP_ET: u16 = 17;

/// The record's type and subtype by their RFC 6396 / RFC 8050 names.
fn record_kind(raw: &RawMrtRecord) -> String {
    let t = raw.common_header.entry_type as u16;
    let st = raw.common_header.entry_subtype;
    let sub = match t {
        TABLE_DUMP => match st {
            1 => "AFI_IPv4",
            2 => "AFI_IPv6",
            _ => "",
        },
        TABLE_DUMP_V2 => match st {
            1 => "PEER_INDEX_TABLE",
            2 => "RIB_IPV4_UNICAST",
            3 => "RIB_IPV4_MULTICAST",
            4 => "RIB_IPV6_UNICAST",
            5 => "RIB_IPV6_MULTICAST",
            6 => "RIB_GENERIC",
            7 => "GEO_PEER_TABLE",
            8 => "RIB_IPV4_UNICAST_ADDPATH",
            9 => "RIB_IPV4_MULTICAST_ADDPATH",
            10 => "RIB_IPV6_UNICAST_ADDPATH",
            11 => "RIB_IPV6_MULTICAST_ADDPATH",
            12 => "RIB_GENERIC_ADDPATH",
            _ => "",
        },
        BGP4MP | BGP4MP_ET => match st {
            0 => "STATE_CHANGE",
            1 => "MESSAGE",
            2 => "ENTRY",
            3 => "SNAPSHOT",
            4 => "MESSAGE_AS4",
            5 => "STATE_CHANGE_AS4",
            6 => "MESSAGE_LOCAL",
            7 => "MESSAGE_AS4_LOCAL",
            8 => "MESSAGE_ADDPATH",
            9 => "MESSAGE_AS4_ADDPATH",
            10 => "MESSAGE_LOCAL_ADDPATH",
            11 => "MESSAGE_AS4_LOCAL_ADDPATH",
            _ => "",
        },
        _ => "",
    };
    let ty = format!("{:?}", raw.common_header.entry_type);
    if sub.is_empty() {
        format!("{ty} subtype {st}")
    } else {
        format!("{ty} {sub}")
    }
}

/// A prefix of family `A` from an `IpNet`-like (address, length), host bits cleared
/// (RFC 4271 §4.3: the trailing bits of an NLRI prefix are irrelevant).
fn prefix_of<A: Address>(addr: IpAddr, len: u8, stats: &mut ReadStats) -> Option<Prefix<A>> {
    let a = A::from_ip(addr)?;
    if len > A::BITS {
        return None;
    }
    let p = Prefix::new_truncating(a, len);
    if p.addr() != a {
        stats.normalized += 1;
    }
    Some(p)
}

fn as_path_len(attrs: &Attributes) -> u32 {
    let len = |p: &AsPath| p.route_len() as u32;
    match (attrs.as_path(), attrs.as4_path()) {
        (Some(p), None) | (None, Some(p)) => len(p),
        (None, None) => 0,
        (Some(_), Some(_)) => attrs.effective_as_path().map_or(0, |p| len(&p)),
    }
}

/// The next hop of a route of family `f`: for IPv4 the NEXT_HOP attribute, else the
/// MP_REACH_NLRI next hop; for IPv6 the other way round (the global address when a
/// link-local one is also given).
fn next_hop(attrs: &Attributes, f: Family) -> Option<IpAddr> {
    let mp = || {
        attrs
            .get_reachable_nlri()
            .and_then(|n| n.next_hop.as_ref())
            .map(|nh| nh.global_addr())
    };
    match f {
        Family::V4 => attrs.next_hop().or_else(mp),
        Family::V6 => mp().or_else(|| attrs.next_hop()),
    }
}

pub(super) fn path_attrs(attrs: &Attributes, peer: IpAddr, f: Family) -> PathAttrs {
    PathAttrs {
        peer,
        local_pref: attrs.local_preference().unwrap_or(0),
        as_path_len: as_path_len(attrs),
        origin: attrs.origin() as u8,
        next_hop: next_hop(attrs, f),
    }
}

/// Adds one RIB entry (prefix as address and length) to the accumulator.
fn add_entry(rib: &mut MultiPeer, addr: IpAddr, len: u8, attrs: &Attributes, peer: IpAddr) {
    let family = match addr {
        IpAddr::V4(_) => Family::V4,
        IpAddr::V6(_) => Family::V6,
    };
    add_path(rib, addr, len, path_attrs(attrs, peer, family));
}

/// Adds one path (prefix as address and length) to the accumulator.
fn add_path(rib: &mut MultiPeer, addr: IpAddr, len: u8, path: PathAttrs) {
    match addr {
        IpAddr::V4(_) => {
            if let Some(p) = prefix_of::<Ipv4>(addr, len, &mut rib.stats) {
                rib.add_v4(p, path);
            }
        }
        IpAddr::V6(_) => {
            if let Some(p) = prefix_of::<Ipv6>(addr, len, &mut rib.stats) {
                rib.add_v6(p, path);
            }
        }
    }
}

/// The fast path of a TABLE_DUMP_V2 unicast RIB record (subtype `st`): its entries
/// added to the accumulator, `Ok(false)` if the record is not in the common encoding
/// (see `mrt_rib`; the caller then parses it with bgpkit-parser).
fn fast_rib_record(
    rib: &mut MultiPeer,
    body: &[u8],
    st: u16,
    peers: &HashMap<u16, Peer>,
    entries: &mut Vec<super::mrt_rib::Entry>,
) -> Result<bool, String> {
    let v6 = matches!(st, 4 | 10);
    let Some((addr, len)) = super::mrt_rib::rib_record(body, v6, st >= 8, entries) else {
        return Ok(false);
    };
    for e in entries.iter() {
        let Some(peer) = peers.get(&e.peer_index) else {
            return Err(format!(
                "RIB entry for {addr}/{len} names peer index {}, which the PEER_INDEX_TABLE ({} peers) does not list",
                e.peer_index,
                peers.len()
            ));
        };
        let next_hop = if v6 {
            e.mp_next_hop.or(e.next_hop)
        } else {
            e.next_hop.or(e.mp_next_hop)
        };
        let path = PathAttrs {
            peer: peer.peer_ip,
            local_pref: e.local_pref,
            as_path_len: e.as_path_len,
            origin: e.origin,
            next_hop,
        };
        add_path(rib, addr, len, path);
    }
    Ok(true)
}

fn add_table_dump(rib: &mut MultiPeer, m: &TableDumpMessage) {
    add_entry(
        rib,
        m.prefix.prefix.addr(),
        m.prefix.prefix.prefix_len(),
        &m.attributes,
        m.peer_ip,
    );
}

/// Reads an MRT RIB dump (TABLE_DUMP or TABLE_DUMP_V2) into a FIB.
pub(crate) fn read_mrt_rib(
    source: &str,
    r: impl Read,
    opts: &TableOptions,
    want: Option<Family>,
) -> Result<(AnyTable, ReadStats), ReadError> {
    let mut rib = MultiPeer::new(opts, want);
    let mut records = Records::new(source, r);
    let mut peers: Option<HashMap<u16, Peer>> = None;
    let mut entries = Vec::new();
    while let Some((offset, raw)) = records.next()? {
        let t = raw.common_header.entry_type as u16;
        let st = raw.common_header.entry_subtype;
        let wanted = match t {
            TABLE_DUMP => true,
            // PEER_INDEX_TABLE and the unicast RIBs (with and without ADD-PATH).
            TABLE_DUMP_V2 => matches!(st, 1 | 2 | 4 | 8 | 10),
            _ => false,
        };
        if !wanted {
            rib.stats.skip(&record_kind(&raw));
            continue;
        }
        if let (TABLE_DUMP_V2, 2 | 4 | 8 | 10, Some(peers)) = (t, st, &peers) {
            match fast_rib_record(&mut rib, &raw.message_bytes, st, peers, &mut entries) {
                Ok(true) => continue,
                Ok(false) => {}
                Err(e) => return Err(ReadError::at_offset(source, offset, e)),
            }
        }
        // bgpkit-parser stops at the first bad RIB entry of a record without an error;
        // compare with the declared count so that no entry is lost silently.
        let declared = (t == TABLE_DUMP_V2)
            .then(|| declared_rib_entries(&raw.message_bytes))
            .flatten();
        let kind = record_kind(&raw);
        match records.parse(offset, raw)? {
            MrtMessage::TableDumpMessage(m) => add_table_dump(&mut rib, &m),
            MrtMessage::TableDumpMessageBatch(ms) => {
                for m in &ms {
                    add_table_dump(&mut rib, m);
                }
            }
            MrtMessage::TableDumpV2Message(TableDumpV2Message::PeerIndexTable(p)) => {
                peers = Some(p.id_peer_map);
            }
            MrtMessage::TableDumpV2Message(TableDumpV2Message::RibAfi(e)) => {
                if let Some(n) = declared.filter(|&n| n != e.rib_entries.len()) {
                    return Err(ReadError::at_offset(
                        source,
                        offset,
                        format!(
                            "bad {kind} record: it declares {n} RIB entries, but only {} parse",
                            e.rib_entries.len()
                        ),
                    ));
                }
                let Some(peers) = &peers else {
                    return Err(ReadError::at_offset(
                        source,
                        offset,
                        "RIB record before the PEER_INDEX_TABLE",
                    ));
                };
                for entry in &e.rib_entries {
                    let Some(peer) = peers.get(&entry.peer_index) else {
                        return Err(ReadError::at_offset(
                            source,
                            offset,
                            format!(
                                "RIB entry for {} names peer index {}, which the PEER_INDEX_TABLE ({} peers) does not list",
                                e.prefix.prefix,
                                entry.peer_index,
                                peers.len()
                            ),
                        ));
                    };
                    add_entry(
                        &mut rib,
                        e.prefix.prefix.addr(),
                        e.prefix.prefix.prefix_len(),
                        &entry.attributes,
                        peer.peer_ip,
                    );
                }
            }
            other => {
                // Not reachable for the subtypes selected above; count rather than panic.
                rib.stats
                    .skip(&format!("unexpected {}", message_kind(&other)));
            }
        }
    }
    rib.stats.records = records.count;
    rib.finish(source)
}

/// Checks that the parser dropped no unicast NLRI of an UPDATE: bgpkit-parser keeps going
/// past NLRI it cannot decode (RFC 7606), leaving a warning and, for MP_(UN)REACH_NLRI, the
/// raw attribute. Undecodable MP attributes of other SAFIs (VPN, labelled, …) are counted
/// as skipped; anything else is an error message.
fn check_nlri(attrs: &Attributes, stats: &mut ReadStats, kind: &str) -> Result<(), String> {
    let warnings = attrs.validation_warnings();
    for w in warnings {
        if let BgpValidationWarning::MalformedNlri {
            nlri_type, reason, ..
        } = w
        {
            return Err(format!("its {nlri_type} NLRI do not parse ({reason})"));
        }
    }
    for v in attrs.iter() {
        let (AttributeValue::Raw(r) | AttributeValue::Unknown(r)) = v else {
            continue;
        };
        let (name, ty) = match r.code {
            14 => ("MP_REACH_NLRI", AttrType::MP_REACHABLE_NLRI),
            15 => ("MP_UNREACH_NLRI", AttrType::MP_UNREACHABLE_NLRI),
            _ => continue,
        };
        // AFI (2 bytes), SAFI (1 byte), … (RFC 4760 §3, §4).
        match r.bytes.get(2).copied() {
            Some(safi) if !matches!(safi, 1 | 3) => {
                stats.skip(&format!("{kind} (undecodable {name} with SAFI {safi})"));
            }
            safi => {
                let reason = warnings
                    .iter()
                    .find_map(|w| match w {
                        BgpValidationWarning::OptionalAttributeError { attr_type, reason }
                        | BgpValidationWarning::PartialAttributeError { attr_type, reason }
                            if *attr_type == ty =>
                        {
                            Some(reason.as_str())
                        }
                        _ => None,
                    })
                    .unwrap_or("no reason given");
                let safi = safi.map_or("?".to_string(), |s| s.to_string());
                return Err(format!(
                    "its {name} attribute (SAFI {safi}) does not parse ({reason})"
                ));
            }
        }
    }
    Ok(())
}

/// The entry count a RIB_IPV4/IPV6 record body declares (RFC 6396 §4.3.2: sequence
/// number (4), prefix length (1), prefix, entry count (2)), if the body is long enough.
fn declared_rib_entries(body: &[u8]) -> Option<usize> {
    let plen = *body.get(4)? as usize;
    let at = 5 + plen.div_ceil(8);
    let b = body.get(at..at + 2)?;
    Some(u16::from_be_bytes([b[0], b[1]]) as usize)
}

fn message_kind(m: &MrtMessage) -> &'static str {
    match m {
        MrtMessage::TableDumpMessage(_) | MrtMessage::TableDumpMessageBatch(_) => "TABLE_DUMP",
        MrtMessage::TableDumpV2Message(_) => "TABLE_DUMP_V2",
        MrtMessage::Bgp4Mp(_) => "BGP4MP",
        MrtMessage::LegacyBgp(_) => "BGP",
    }
}

/// Interns next-hop addresses into a caller's table, allocating a name once per address.
struct HopCache<'h> {
    hops: &'h mut NextHopTable<String>,
    ids: HashMap<IpAddr, NextHop>,
}

impl HopCache<'_> {
    fn id(&mut self, a: IpAddr) -> NextHop {
        let hops = &mut *self.hops;
        *self
            .ids
            .entry(a)
            .or_insert_with(|| hops.intern(a.to_string()))
    }
}

/// Reads an MRT update file (BGP4MP) as announce/withdraw events of family `A`, in file
/// order; within one UPDATE message, withdrawals come before announcements (as
/// `bgpdump -m` prints them).
pub(crate) fn read_mrt_updates<A: Address>(
    source: &str,
    r: impl Read,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    let mut stats = ReadStats::default();
    let mut out = Vec::new();
    let mut cache = HopCache {
        hops,
        ids: HashMap::new(),
    };
    let mut records = Records::new(source, r);
    while let Some((offset, raw)) = records.next()? {
        let t = raw.common_header.entry_type as u16;
        let st = raw.common_header.entry_subtype;
        // MESSAGE, MESSAGE_AS4 and their ADD-PATH forms: messages received from peers.
        if !(matches!(t, BGP4MP | BGP4MP_ET) && matches!(st, 1 | 4 | 8 | 9)) {
            stats.skip(&record_kind(&raw));
            continue;
        }
        let time = raw.common_header.timestamp as u64;
        let kind = record_kind(&raw);
        let MrtMessage::Bgp4Mp(Bgp4MpEnum::Message(m)) = records.parse(offset, raw)? else {
            stats.skip(&format!("unexpected {kind}"));
            continue;
        };
        let u = match m.bgp_message {
            BgpMessage::Update(u) => u,
            BgpMessage::Open(_) => {
                stats.skip(&format!("{kind} (BGP OPEN)"));
                continue;
            }
            BgpMessage::Notification(_) => {
                stats.skip(&format!("{kind} (BGP NOTIFICATION)"));
                continue;
            }
            BgpMessage::KeepAlive => {
                stats.skip(&format!("{kind} (BGP KEEPALIVE)"));
                continue;
            }
            BgpMessage::RouteRefresh(_) => {
                stats.skip(&format!("{kind} (BGP ROUTE-REFRESH)"));
                continue;
            }
        };
        if let Err(why) = check_nlri(&u.attributes, &mut stats, &kind) {
            return Err(ReadError::at_offset(
                source,
                offset,
                format!("bad {kind} record: {why}"),
            ));
        }
        let peer = m.peer_ip;
        let peer_name = peer.to_string();
        let attrs = &u.attributes;
        let unicast = |safi: Safi| matches!(safi, Safi::Unicast | Safi::UnicastMulticast);
        let mp_unreach = attrs.get_unreachable_nlri();
        let mp_reach = attrs.get_reachable_nlri();
        for n in [mp_unreach, mp_reach].into_iter().flatten() {
            if !unicast(n.safi) {
                stats.skip(&format!("{kind} (MP NLRI with SAFI {:?})", n.safi));
            }
        }
        let withdrawn = u.withdrawn_prefixes.iter().chain(
            mp_unreach
                .filter(|n| unicast(n.safi))
                .into_iter()
                .flat_map(|n| n.prefixes.iter()),
        );
        for np in withdrawn {
            let Some(p) = prefix_of::<A>(np.prefix.addr(), np.prefix.prefix_len(), &mut stats)
            else {
                stats.other_family += 1;
                continue;
            };
            stats.withdraws += 1;
            out.push(Update {
                time,
                change: Change::Withdraw(p),
                peer: Some(peer_name.clone()),
            });
        }
        let classic_nh = attrs.next_hop();
        let mp_nh = mp_reach
            .and_then(|n| n.next_hop.as_ref())
            .map(|nh| nh.global_addr());
        let announced = u
            .announced_prefixes
            .iter()
            .map(|np| (np, classic_nh))
            .chain(
                mp_reach
                    .filter(|n| unicast(n.safi))
                    .into_iter()
                    .flat_map(|n| n.prefixes.iter())
                    .map(|np| (np, mp_nh.or(classic_nh))),
            );
        for (np, nh) in announced {
            let Some(p) = prefix_of::<A>(np.prefix.addr(), np.prefix.prefix_len(), &mut stats)
            else {
                stats.other_family += 1;
                continue;
            };
            let nh = nh.unwrap_or_else(|| {
                stats.missing_next_hop += 1;
                peer
            });
            stats.announces += 1;
            out.push(Update {
                time,
                change: Change::Announce(p, cache.id(nh)),
                peer: Some(peer_name.clone()),
            });
        }
    }
    stats.records = records.count;
    Ok((out, stats))
}

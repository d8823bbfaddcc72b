//! Tests of the readers in `lpmkit::io` for multi-peer RIB dumps (bgpdump text, MRT) and
//! update traces, and mutated inputs of every reader (never a panic): real data from the
//! shared data set (skipped with a note when absent), and malformed inputs with their
//! exact error messages. Text tables and address lists: `tests/io.rs`.

// Helpers for the MRT and compression tests are unused without those features.
#![cfg_attr(not(all(feature = "mrt", feature = "compression")), allow(unused))]

use crate::common;

use std::path::Path;

use lpmkit::io::{
    open_input, parse_text_table, read_table, read_table_as, read_table_with_stats, read_updates,
    read_updates_with_stats, TableOptions, Update,
};
use lpmkit::{Address, AnyTable, Change, Family, Ipv4, Ipv6, NextHopTable, Prefix, Table};

#[cfg(feature = "compression")]
use common::gz;
use common::{data_dir, scratch, write};

// ---------------------------------------------------------------------------------------
// Multi-peer RIBs: bgpdump text and MRT
// ---------------------------------------------------------------------------------------

/// (prefix, next-hop name) pairs of a table, sorted.
fn routes<A: Address>(t: &Table<A>) -> Vec<(Prefix<A>, String)> {
    t.rib
        .iter()
        .map(|(p, nh)| (p, t.next_hops.value(nh).unwrap().clone()))
        .collect()
}

#[test]
fn bgpdump_rib_reproduces_the_readme_fib() {
    // The data README derived fib/ipv4-ris-rrc06 from this RIB with the rule `best_path`
    // documents: the two must agree route for route.
    let Some(dir) = data_dir() else { return };
    let opts = TableOptions::default();
    let (t, s) = read_table_with_stats(
        &dir.join("rib-text/ris-rrc06-bview.20100701.0759.bgpdump-m.txt.xz"),
        &opts,
    )
    .unwrap();
    assert_eq!((s.rib_entries, s.peers, s.lines), (641_957, 5, 641_957));
    let AnyTable::V4(rib) = t else {
        panic!("family")
    };
    let fib = read_table_as::<Ipv4>(&dir.join("fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz"), &opts)
        .unwrap();
    assert_eq!(rib.rib.len(), 323_487);
    assert_eq!(rib.next_hops.len(), 24);
    assert!(
        routes(&rib) == routes(&fib),
        "derived FIB differs from the README's"
    );

    // One peer only: the README gives its entry count.
    let peer = TableOptions {
        peer: Some("202.249.2.20".parse().unwrap()),
        ..TableOptions::default()
    };
    let (t, s) = read_table_with_stats(
        &dir.join("rib-text/ris-rrc06-bview.20100701.0759.bgpdump-m.txt.xz"),
        &peer,
    )
    .unwrap();
    let AnyTable::V4(t) = t else { panic!("family") };
    assert_eq!(t.rib.len(), 323_485);
    assert_eq!(s.other_peers, 641_957 - 323_485);
}

/// MRT RIB dumps: (file, family, prefixes, entries, peers), from the data README.
const MRT_RIBS: &[(&str, Family, usize, usize, usize)] = &[
    (
        "ris-rrc05.bview.20020722.2337.gz",
        Family::V4,
        112_988,
        115_521,
        36,
    ),
    (
        "routeviews2.rib.20140523.0600.head.mrt.gz",
        Family::V4,
        9_069,
        269_914,
        35,
    ),
    (
        "routeviews6.rib6.20151101.0600.head.mrt.gz",
        Family::V6,
        6_869,
        149_561,
        27,
    ),
];

#[test]
#[cfg(feature = "mrt")]
fn mrt_rib_dumps_load_with_readme_counts() {
    let Some(dir) = data_dir() else { return };
    for &(name, family, prefixes, entries, peers) in MRT_RIBS {
        let (t, s) =
            read_table_with_stats(&dir.join("mrt").join(name), &TableOptions::default()).unwrap();
        assert_eq!(t.family(), family, "{name}");
        let (len, hops) = match &t {
            AnyTable::V4(t) => (t.rib.len(), t.next_hops.len()),
            AnyTable::V6(t) => (t.rib.len(), t.next_hops.len()),
        };
        assert_eq!(len, prefixes, "{name}");
        assert!(hops >= 1 && hops <= entries, "{name}");
        assert_eq!((s.rib_entries, s.peers), (entries, peers), "{name}");
        assert_eq!(s.skipped_total(), 0, "{name}: {:?}", s.skipped_records);
        assert_eq!(s.other_family, 0, "{name}");
    }
}

#[test]
#[cfg(feature = "mrt")]
fn mrt_rib_per_peer_and_best_path_agree() {
    // The best-path FIB's routes must each come from some peer's view, and every prefix
    // of every peer's view must be in the best-path FIB.
    let Some(dir) = data_dir() else { return };
    let path = dir.join("mrt/routeviews6.rib6.20151101.0600.head.mrt.gz");
    let best = read_table_as::<Ipv6>(&path, &TableOptions::default()).unwrap();
    let (_, s) = read_table_with_stats(&path, &TableOptions::default()).unwrap();
    let mut union = std::collections::HashMap::<Prefix<Ipv6>, Vec<String>>::new();
    let mut total = 0;
    let peers: Vec<std::net::IpAddr> = {
        // Every next hop of the best-path FIB is a peer's next hop; the peers themselves
        // come from the error message listing them.
        let e = read_table(
            &path,
            &TableOptions {
                peer: Some("192.0.2.1".parse().unwrap()),
                ..TableOptions::default()
            },
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(": no routes from peer 192.0.2.1 (the 27 peers are: "),
            "{msg}"
        );
        let list = msg
            .split("peers are: ")
            .nth(1)
            .unwrap()
            .trim_end_matches(')');
        list.split(", ").map(|p| p.parse().unwrap()).collect()
    };
    assert_eq!(peers.len(), s.peers);
    for peer in peers {
        let opts = TableOptions {
            peer: Some(peer),
            ..TableOptions::default()
        };
        let (t, s) = read_table_with_stats(&path, &opts).unwrap();
        let AnyTable::V6(t) = t else { panic!("family") };
        assert_eq!(
            s.other_peers + t.rib.len(),
            s.rib_entries,
            "one path per peer and prefix"
        );
        total += t.rib.len();
        for (p, nh) in routes(&t) {
            union.entry(p).or_default().push(nh);
        }
    }
    assert_eq!(total, 149_561);
    assert_eq!(union.len(), best.rib.len());
    for (p, nh) in routes(&best) {
        assert!(
            union[&p].contains(&nh),
            "{p}: best next hop {nh} not offered by any peer"
        );
    }
}

/// The uncompressed bytes of a data file.
#[cfg(feature = "compression")]
fn raw_bytes(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    std::io::Read::read_to_end(&mut open_input(path).unwrap(), &mut v).unwrap();
    v
}

/// Start offsets of the MRT records in `bytes` (12-byte header, length in bytes 8..12).
fn mrt_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut v = Vec::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        v.push(at);
        let len = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 12 + len;
    }
    assert_eq!(at, bytes.len(), "the fixture is a whole number of records");
    v
}

#[test]
#[cfg(all(feature = "mrt", feature = "compression"))]
fn truncated_and_corrupt_mrt_name_the_offset() {
    let Some(dir) = data_dir() else { return };
    let raw = raw_bytes(&dir.join("mrt/routeviews6.rib6.20151101.0600.head.mrt.gz"));
    let offsets = mrt_offsets(&raw);
    let tmp = scratch("mrt");
    let o = TableOptions::default();

    // Cut in the middle of record 1000's body.
    let rec = offsets[1000];
    let cut = rec + 12 + 20;
    let p = write(&tmp, "cut-body.mrt", &raw[..cut]);
    let e = read_table(&p, &o).unwrap_err();
    assert_eq!(e.offset(), Some(rec as u64));
    assert_eq!(e.line(), None);
    assert!(
        e.to_string().starts_with(&format!(
            "{}: byte offset {rec}: truncated MRT record: the input ends 32 bytes into it (",
            p.display()
        )),
        "{e}"
    );
    // Cut inside a header.
    let p = write(&tmp, "cut-header.mrt", &raw[..offsets[7] + 5]);
    let e = read_table(&p, &o).unwrap_err();
    assert_eq!(e.offset(), Some(offsets[7] as u64));
    assert!(
        e.to_string()
            .contains("truncated MRT record: the input ends 5 bytes into it"),
        "{e}"
    );
    // Truncated gzip around an MRT stream: the decompressor's error, at a record start.
    let gzipped = gz(&raw);
    let p = write(&tmp, "cut.mrt.gz", &gzipped[..gzipped.len() / 2]);
    let e = read_table(&p, &o).unwrap_err();
    assert!(offsets.contains(&(e.offset().unwrap() as usize)), "{e}");
    assert!(e.message().starts_with("truncated gzip data after "), "{e}");
    // A corrupt RIB record: its entry count says 65535 entries.
    let mut bad = raw[..offsets[11]].to_vec();
    let r = offsets[10];
    // RIB_IPV6_UNICAST body: sequence(4) prefix_len(1) prefix(ceil(len/8)) count(2).
    let plen = bad[r + 12 + 4] as usize;
    let count_at = r + 12 + 5 + plen.div_ceil(8);
    bad[count_at] = 0xff;
    bad[count_at + 1] = 0xff;
    let p = write(&tmp, "corrupt.mrt", &bad);
    let e = read_table(&p, &o).unwrap_err();
    assert_eq!(e.offset(), Some(r as u64), "{e}");
    assert!(
        e.message()
            .starts_with("bad TABLE_DUMP_V2 RIB_IPV6_UNICAST record: "),
        "{e}"
    );
    // The whole prefix (a clean cut at a record boundary) is fine.
    let p = write(&tmp, "clean-cut.mrt", &raw[..offsets[101]]);
    let t = read_table_as::<Ipv6>(&p, &o).unwrap();
    assert_eq!(t.rib.len(), 100);
    std::fs::remove_dir_all(tmp).ok();
}

/// Entries of a ustar archive: (name, contents).
#[cfg(feature = "compression")]
fn untar(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 512 <= bytes.len() && bytes[at] != 0 {
        let h = &bytes[at..at + 512];
        let name = String::from_utf8_lossy(&h[..100])
            .trim_end_matches('\0')
            .to_string();
        let size_txt = String::from_utf8_lossy(&h[124..136]);
        let size = usize::from_str_radix(size_txt.trim_matches(|c: char| c == '\0' || c == ' '), 8)
            .unwrap();
        let body = &bytes[at + 512..at + 512 + size];
        if h[156] == b'0' || h[156] == 0 {
            out.push((name, body.to_vec()));
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    out
}

#[test]
#[cfg(all(feature = "mrt", feature = "compression"))]
fn mrtparse_samples() {
    let Some(dir) = data_dir() else { return };
    let files = untar(&raw_bytes(&dir.join("mrt/mrtparse-samples.tar.gz")));
    assert_eq!(files.len(), 12);
    let tmp = scratch("mrtparse");
    let o = TableOptions::default();
    for (name, bytes) in &files {
        let base = name.rsplit('/').next().unwrap();
        let p = write(&tmp, base, bytes);
        let table = read_table(&p, &o);
        let mut hops = NextHopTable::new();
        let v4 = read_updates_with_stats::<Ipv4>(&p, &mut hops);
        let v6 = read_updates_with_stats::<Ipv6>(&p, &mut hops);
        let is_rib = base.contains("rib") && base != "openbgpd_rib_table-mp";
        if is_rib {
            let t = table.unwrap_or_else(|e| panic!("{e}"));
            assert!(!t.name().is_empty());
            let e = v4.unwrap_err().to_string();
            assert!(
                e.contains("no updates; skipped")
                    && e.ends_with("(a RIB dump? read it with read_table)"),
                "{e}"
            );
        } else if base == "openbgpd_rib_table-mp" {
            // BGP4MP_ENTRY (RFC 6396 §4.4.5 was never standardised): skipped and counted.
            assert_eq!(
                table.unwrap_err().message(),
                "no routes; skipped 31 MRT records: BGP4MP ENTRY ×31"
            );
        } else {
            let e = table.unwrap_err().to_string();
            assert!(
                e.ends_with("(an update file? read it with read_updates)"),
                "{e}"
            );
            let n4 = v4.as_ref().map_or(0, |(u, _)| u.len());
            let n6 = v6.as_ref().map_or(0, |(u, _)| u.len());
            assert!(n4 + n6 > 0, "{base}");
            let (s, n) = match (&v4, &v6) {
                (Ok((_, s)), _) => (s, n4),
                (_, Ok((_, s))) => (s, n6),
                _ => unreachable!(),
            };
            assert_eq!(s.announces + s.withdraws, n);
            assert!(
                s.skipped_total() > 0,
                "{base}: state changes and keepalives counted"
            );
        }
    }
    std::fs::remove_dir_all(tmp).ok();
}

// ---------------------------------------------------------------------------------------
// Update traces
// ---------------------------------------------------------------------------------------

#[test]
fn text_update_traces_match_readme() {
    let Some(dir) = data_dir() else { return };
    let cases: &[(&str, Family, usize, usize, usize, usize)] = &[
        (
            "ipv4-ris-rrc01-linx-2014-12-17-updates.txt.xz",
            Family::V4,
            18_141,
            5_305,
            40,
            3_551,
        ),
        (
            "ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
            Family::V4,
            93_808,
            8_161,
            92,
            2_225,
        ),
        (
            "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
            Family::V6,
            76_565,
            6_394,
            84,
            1_818,
        ),
    ];
    fn check<A: Address>(p: &Path, a: usize, w: usize, hops_n: usize, prefixes: usize) {
        let mut hops = NextHopTable::new();
        let (u, s) = read_updates_with_stats::<A>(p, &mut hops).unwrap();
        let na = u
            .iter()
            .filter(|u| matches!(u.change, Change::Announce(..)))
            .count();
        assert_eq!((na, u.len() - na), (a, w));
        assert_eq!((s.announces, s.withdraws, s.other_family), (a, w, 0));
        assert_eq!(hops.len(), hops_n);
        let distinct: std::collections::HashSet<_> = u.iter().map(|u| u.change.prefix()).collect();
        assert_eq!(distinct.len(), prefixes);
        assert!(u.windows(2).all(|w| w[0].time <= w[1].time), "time order");
    }
    for &(name, fam, a, w, h, n) in cases {
        let p = dir.join("updates").join(name);
        match fam {
            Family::V4 => check::<Ipv4>(&p, a, w, h, n),
            Family::V6 => check::<Ipv6>(&p, a, w, h, n),
        }
        // The other family: nothing, which is an error naming the skipped count.
        let mut hops = NextHopTable::new();
        let e = match fam {
            Family::V4 => read_updates::<Ipv6>(&p, &mut hops).map(|_| ()).unwrap_err(),
            Family::V6 => read_updates::<Ipv4>(&p, &mut hops).map(|_| ()).unwrap_err(),
        };
        let other = if fam == Family::V4 { "ipv6" } else { "ipv4" };
        assert_eq!(
            e.to_string(),
            format!(
                "{}: no {other} updates ({} of the other family skipped)",
                p.display(),
                a + w
            )
        );
    }
}

#[test]
#[cfg(feature = "mrt")]
fn mrt_updates_equal_their_bgpdump_conversion() {
    // The README's text traces are `bgpdump -m` of this MRT file: same events, same order.
    let Some(dir) = data_dir() else { return };
    let mrt = dir.join("mrt/ris-rrc01.updates.20241001.0055.gz");
    fn same<A: Address>(mrt: &Path, text: &Path) {
        let mut h1 = NextHopTable::new();
        let mut h2 = NextHopTable::new();
        let (a, s) = read_updates_with_stats::<A>(mrt, &mut h1).unwrap();
        let b = read_updates::<A>(text, &mut h2).unwrap();
        assert_eq!(s.records, 94_824);
        let skipped: std::collections::HashMap<_, _> = s.skipped_records.iter().cloned().collect();
        assert_eq!(
            skipped["BGP4MP STATE_CHANGE"] + skipped["BGP4MP STATE_CHANGE_AS4"],
            270
        );
        assert_eq!(a.len(), b.len());
        let name = |h: &NextHopTable<String>, u: &Update<A>| match u.change {
            Change::Announce(p, nh) => (
                u.time,
                p,
                Some(h.value(nh).unwrap().clone()),
                u.peer.clone(),
            ),
            Change::Withdraw(p) => (u.time, p, None, u.peer.clone()),
        };
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(name(&h1, x), name(&h2, y), "event {i}");
        }
    }
    same::<Ipv4>(
        &mrt,
        &dir.join("updates/ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz"),
    );
    same::<Ipv6>(
        &mrt,
        &dir.join("updates/ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz"),
    );
}

#[test]
fn update_trace_errors_and_interning() {
    let tmp = scratch("updates");
    let mut hops = NextHopTable::new();
    let pre = hops.intern("192.0.2.1".to_string());
    let p = write(
        &tmp,
        "u.txt",
        b"# t\r\n100 A 10.0.0.0/8 192.0.2.1 peer1\r\n101 W 10.0.0.0/8 - peer1\r\n102 A 10.0.0.0/8 192.0.2.2\n",
    );
    let u = read_updates::<Ipv4>(&p, &mut hops).unwrap();
    assert_eq!(u.len(), 3);
    assert_eq!(
        u[0].change,
        Change::Announce("10.0.0.0/8".parse().unwrap(), pre)
    );
    assert_eq!(u[0].peer.as_deref(), Some("peer1"));
    assert_eq!(u[2].peer, None);
    assert_eq!(hops.len(), 2);
    let p = write(
        &tmp,
        "bad.txt",
        b"100 A 10.0.0.0/8 x\n101 A 10.0.0.0/80 x\n",
    );
    let e = read_updates::<Ipv4>(&p, &mut hops).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: bad prefix \"10.0.0.0/80\": length /80 exceeds the maximum /32",
            p.display()
        )
    );
    let p = write(&tmp, "empty.txt", b"# nothing\n");
    let e = read_updates::<Ipv4>(&p, &mut hops).unwrap_err();
    assert_eq!(e.to_string(), format!("{}: no updates", p.display()));
    std::fs::remove_dir_all(tmp).ok();
}

// ---------------------------------------------------------------------------------------
// Robustness: mutated inputs give Ok or Err, never a panic (a poor man's fuzzer; the
// cargo-fuzz targets in fuzz/ do this properly)
// ---------------------------------------------------------------------------------------

/// Applies 1..=8 random byte changes (or a truncation) to `base`.
fn mutate(base: &[u8], rng: &mut lpmkit::rng::SplitMix64) -> Vec<u8> {
    let mut v = base.to_vec();
    for _ in 0..1 + rng.below(8) {
        if v.is_empty() {
            break;
        }
        let i = rng.below(v.len() as u64) as usize;
        match rng.below(4) {
            0 => v.truncate(i),
            1 => v[i] ^= 1 << rng.below(8),
            2 => v[i] = rng.next() as u8,
            _ => v.insert(i, rng.next() as u8),
        }
    }
    v
}

fn read_all_ways(bytes: &[u8]) {
    use lpmkit::io::{read_table_from_reader, read_updates_from_reader};
    let o = TableOptions::default();
    let r = || Box::new(std::io::Cursor::new(bytes.to_vec()));
    let _ = read_table_from_reader(r(), "m", &o);
    let mut hops = NextHopTable::new();
    let _ = read_updates_from_reader::<Ipv4>(r(), "m", &mut hops);
    let _ = read_updates_from_reader::<Ipv6>(r(), "m", &mut hops);
    if let Ok(text) = std::str::from_utf8(bytes) {
        let _ = parse_text_table::<Ipv4>(text, "m", &o);
        let _ = lpmkit::io::parse_addresses::<Ipv6>(text, "m");
    }
}

#[test]
fn mutated_text_never_panics() {
    let base = b"# t\n10.0.0.0/8 a\n10.1.0.0/16 b # c\r\n0.0.0.0/0 d\n\
                 100 A 10.0.0.0/8 1.2.3.4 p\n101 W 10.0.0.0/8 - p\n\
                 TABLE_DUMP2|1|B|192.0.2.2|2|10.0.0.0/8|2 {3,4}|IGP|192.0.2.2|0|0||NAG||\n\
                 BGP4MP|1|A|192.0.2.1|1|10.0.0.0/8|1 2|IGP|192.0.2.9|0|0||NAG||\n";
    let mut rng = lpmkit::rng::SplitMix64::new(7);
    for _ in 0..3000 {
        read_all_ways(&mutate(base, &mut rng));
    }
}

#[test]
#[cfg(all(feature = "mrt", feature = "compression"))]
fn mutated_mrt_never_panics() {
    let Some(dir) = data_dir() else { return };
    let mut rng = lpmkit::rng::SplitMix64::new(11);
    for (file, records) in [
        ("mrt/routeviews6.rib6.20151101.0600.head.mrt.gz", 40),
        ("mrt/ris-rrc05.bview.20020722.2337.gz", 40),
        ("mrt/ris-rrc01.updates.20241001.0055.gz", 200),
    ] {
        let raw = raw_bytes(&dir.join(file));
        let offsets = mrt_offsets_prefix(&raw, records);
        let base = &raw[..offsets];
        for _ in 0..400 {
            read_all_ways(&mutate(base, &mut rng));
        }
    }
}

/// The length of the first `n` MRT records of `bytes`.
fn mrt_offsets_prefix(bytes: &[u8], n: usize) -> usize {
    let mut at = 0;
    for _ in 0..n {
        let len = u32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 12 + len;
    }
    at
}

/// A BGP4MP MESSAGE_AS4 record (RFC 6396 §4.4.3) carrying an UPDATE whose NLRI field is
/// `nlri`, from peer 192.0.2.1 with NEXT_HOP 192.0.2.9.
fn bgp4mp_update(time: u32, nlri: &[u8]) -> Vec<u8> {
    let attrs: &[u8] = &[
        0x40, 1, 1, 0, // ORIGIN IGP
        0x40, 2, 0, // AS_PATH (empty)
        0x40, 3, 4, 192, 0, 2, 9, // NEXT_HOP
    ];
    let mut bgp = vec![0xff; 16];
    let len = 19 + 2 + 2 + attrs.len() + nlri.len();
    bgp.extend_from_slice(&(len as u16).to_be_bytes());
    bgp.push(2); // UPDATE
    bgp.extend_from_slice(&0u16.to_be_bytes()); // no withdrawn routes
    bgp.extend_from_slice(&(attrs.len() as u16).to_be_bytes());
    bgp.extend_from_slice(attrs);
    bgp.extend_from_slice(nlri);
    let mut body = Vec::new();
    body.extend_from_slice(&64500u32.to_be_bytes()); // peer AS
    body.extend_from_slice(&64501u32.to_be_bytes()); // local AS
    body.extend_from_slice(&0u16.to_be_bytes()); // interface
    body.extend_from_slice(&1u16.to_be_bytes()); // AFI IPv4
    body.extend_from_slice(&[192, 0, 2, 1, 192, 0, 2, 2]); // peer, local
    body.extend_from_slice(&bgp);
    let mut rec = Vec::new();
    rec.extend_from_slice(&time.to_be_bytes());
    rec.extend_from_slice(&16u16.to_be_bytes()); // BGP4MP
    rec.extend_from_slice(&4u16.to_be_bytes()); // MESSAGE_AS4
    rec.extend_from_slice(&(body.len() as u32).to_be_bytes());
    rec.extend_from_slice(&body);
    rec
}

#[test]
#[cfg(feature = "mrt")]
fn handmade_bgp4mp_records() {
    let tmp = scratch("bgp4mp");
    let good = bgp4mp_update(1000, &[8, 10, 16, 192, 168]);
    let bad = bgp4mp_update(1001, &[33, 10, 0, 0, 0, 0]);
    let p = write(&tmp, "good.mrt", &[good.clone(), good.clone()].concat());
    let mut hops = NextHopTable::new();
    let u = read_updates::<Ipv4>(&p, &mut hops).unwrap();
    let nh = hops.id(&"192.0.2.9".to_string()).unwrap();
    let want = |time, p: &str| Update {
        time,
        change: Change::Announce(p.parse().unwrap(), nh),
        peer: Some("192.0.2.1".to_string()),
    };
    assert_eq!(
        u,
        [
            want(1000, "10.0.0.0/8"),
            want(1000, "192.168.0.0/16"),
            want(1000, "10.0.0.0/8"),
            want(1000, "192.168.0.0/16")
        ]
    );
    // A bad prefix length in the second record: an error at its offset, not a lost route.
    let p = write(&tmp, "bad.mrt", &[good.clone(), bad].concat());
    let e = read_updates::<Ipv4>(&p, &mut hops).unwrap_err();
    assert_eq!(e.offset(), Some(good.len() as u64));
    assert!(
        e.message()
            .starts_with("bad BGP4MP MESSAGE_AS4 record: its announced NLRI do not parse ("),
        "{e}"
    );
    std::fs::remove_dir_all(tmp).ok();
}

//! Tests of the readers in `lpmkit::io` for text tables, compressed input and address
//! lists: real data from the shared data set (skipped with a note when absent), and
//! malformed inputs with their exact error messages. RIB dumps, update traces and mutated
//! inputs: `tests/io_dumps.rs`.

// Helpers for the MRT and compression tests are unused without those features.
#![cfg_attr(not(all(feature = "mrt", feature = "compression")), allow(unused))]

use crate::common;

use lpmkit::io::{
    assigned_next_hop, open_input, parse_text_table, read_addresses, read_table, read_table_as,
    read_table_with_stats, TableOptions,
};
use lpmkit::{AnyTable, Family, Ipv4, Ipv6, Prefix};

use common::{data_dir, scratch, write};
#[cfg(feature = "compression")]
use common::{gz, xz};

/// Routes and distinct next hops of the tables in `fib/`, as the data README states them
/// (`None`: prefix-only file, next hops assigned).
const FIB_FILES: &[(&str, Family, usize, Option<usize>)] = &[
    (
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        Family::V4,
        323_487,
        Some(24),
    ),
    (
        "ipv4-routeviews-2015-11-01-originas.txt.xz",
        Family::V4,
        606_138,
        Some(51_788),
    ),
    ("ipv4-bart-tier1-prefixes.txt.xz", Family::V4, 901_899, None),
    (
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        Family::V6,
        37_343,
        Some(52),
    ),
    (
        "ipv6-routeviews-2015-11-01-originas.txt.xz",
        Family::V6,
        27_693,
        Some(10_545),
    ),
    ("ipv6-bart-tier1-prefixes.txt.xz", Family::V6, 160_147, None),
];

#[test]
fn real_fib_tables_load_with_readme_counts() {
    let Some(dir) = data_dir() else { return };
    for &(name, family, routes, hops) in FIB_FILES {
        let path = dir.join("fib").join(name);
        let t = read_table(&path, &TableOptions::default()).unwrap();
        assert_eq!(t.family(), family, "{name}");
        assert_eq!(t.name(), name);
        let (len, nhs, hist) = match &t {
            AnyTable::V4(t) => (t.rib.len(), t.next_hops.len(), t.rib.length_histogram()),
            AnyTable::V6(t) => (t.rib.len(), t.next_hops.len(), t.rib.length_histogram()),
        };
        assert_eq!(len, routes, "{name}");
        assert_eq!(hist.iter().sum::<usize>(), routes, "{name}");
        match hops {
            Some(h) => assert_eq!(nhs, h, "{name}"),
            // 200 values by default; every one is used in tables this large.
            None => assert_eq!(nhs, 200, "{name}"),
        }
    }
}

#[test]
fn readme_histograms_match() {
    let Some(dir) = data_dir() else { return };
    // From the data README: the rrc06 FIB's /24 count and the LINX v6 FIB's default route.
    let t = read_table_as::<Ipv4>(
        &dir.join("fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz"),
        &TableOptions::default(),
    )
    .unwrap();
    let h = t.rib.length_histogram();
    assert_eq!((h[8], h[24], h[32]), (20, 168_394, 7));
    let t6 = read_table_as::<Ipv6>(
        &dir.join("fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz"),
        &TableOptions::default(),
    )
    .unwrap();
    assert!(t6.rib.get(&Prefix::DEFAULT).is_some());
    let top = t6
        .next_hops
        .iter()
        .map(|(id, v)| (t6.rib.iter().filter(|(_, nh)| *nh == id).count(), v.clone()))
        .max()
        .unwrap();
    assert_eq!(top, (28_305, "2001:7f8:4:1::1aae:2".to_string()));
}

#[test]
fn read_table_as_wrong_family_is_an_error() {
    let Some(dir) = data_dir() else { return };
    let p = dir.join("fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz");
    let e = read_table_as::<Ipv4>(&p, &TableOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: no ipv4 routes (the first route, on line 1, is ipv6)",
            p.display()
        )
    );
}

#[test]
fn bart_assignment_is_order_independent_and_named() {
    let Some(dir) = data_dir() else { return };
    let opts = TableOptions {
        assign_next_hops: 16,
        ..TableOptions::default()
    };
    let t = read_table_as::<Ipv6>(&dir.join("fib/ipv6-bart-tier1-prefixes.txt.xz"), &opts).unwrap();
    assert_eq!(t.next_hops.len(), 16);
    for (p, nh) in t.rib.iter().step_by(97) {
        let want = format!("nh{}", assigned_next_hop(p, 16));
        assert_eq!(t.next_hops.value(nh), Some(&want));
    }
    // Reversed file order gives the same routes.
    let text: String = {
        let mut s = String::new();
        let mut lines: Vec<String> = t.rib.iter().map(|(p, _)| p.to_string()).collect();
        lines.reverse();
        for l in lines {
            s.push_str(&l);
            s.push('\n');
        }
        s
    };
    let r = parse_text_table::<Ipv6>(&text, "rev", &opts).unwrap();
    for (p, nh) in r.rib.iter() {
        assert_eq!(
            r.next_hops.value(nh),
            t.next_hops.value(t.rib.get(&p).unwrap())
        );
    }
}

#[test]
fn text_forms_crlf_comments_blank_lines() {
    let o = TableOptions::default();
    let text = "# header\r\n\r\n10.0.0.0/8\t192.0.2.1\r\n  10.1.0.0/16   AS64500  # comment\r\n0.0.0.0/0 gw # default\n#end";
    let t = parse_text_table::<Ipv4>(text, "t", &o).unwrap();
    assert_eq!(t.rib.len(), 3);
    let names: Vec<_> = t.next_hops.iter().map(|(_, v)| v.as_str()).collect();
    assert_eq!(names, ["192.0.2.1", "AS64500", "gw"]);
    assert_eq!(
        t.next_hops
            .value(t.rib.lookup(0x0a01_0000).unwrap())
            .unwrap(),
        "AS64500"
    );
    assert_eq!(
        t.next_hops
            .value(t.rib.lookup(0x0b00_0000).unwrap())
            .unwrap(),
        "gw"
    );

    let t6 = parse_text_table::<Ipv6>("2001:db8::/32 a\n::/0 b\n2001:db8:0:0::1/128 a\n", "t", &o)
        .unwrap();
    assert_eq!(t6.rib.len(), 3);
    assert_eq!(t6.next_hops.len(), 2);

    // Prefix-only files get nh1..nhN.
    let p = parse_text_table::<Ipv4>("10.0.0.0/8\n10.0.0.0/9 # c\n", "t", &o).unwrap();
    for (pfx, nh) in p.rib.iter() {
        assert_eq!(
            p.next_hops.value(nh).unwrap(),
            &format!("nh{}", assigned_next_hop(pfx, 200))
        );
    }
}

#[test]
fn normalize_clears_host_bits() {
    let o = TableOptions {
        normalize: true,
        ..TableOptions::default()
    };
    let t = parse_text_table::<Ipv4>("10.1.2.3/8 a\n", "t", &o).unwrap();
    assert_eq!(
        t.rib.iter().next().unwrap().0,
        "10.0.0.0/8".parse().unwrap()
    );
    // Normalizing can create duplicates: the message names the normalized prefix.
    let e = parse_text_table::<Ipv4>("10.1.2.3/8 a\n10.0.0.0/8 b\n", "t", &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t:2: duplicate prefix 10.0.0.0/8 (first on line 1)"
    );
}

#[test]
fn malformed_text_tables_exact_messages() {
    let o = TableOptions::default();
    let cases: &[(&str, &str)] = &[
        ("10.0.0.0/8 a\n10.0.0/8 b\n", "t:2: bad prefix \"10.0.0/8\": not an IPv4 address"),
        ("10.0.0.0/8 a\nfoo b\n", "t:2: bad prefix \"foo\": missing '/LEN'"),
        ("10.0.0.0/8 a\n10.0.0.0/2x b\n", "t:2: bad prefix \"10.0.0.0/2x\": the length is not a number"),
        ("10.0.0.0/33 a\n", "t:1: bad prefix \"10.0.0.0/33\": length /33 exceeds the maximum /32"),
        ("#\n\n10.0.0.1/8 a\n", "t:3: prefix 10.0.0.1/8 has host bits set (did you mean 10.0.0.0/8?)"),
        ("10.0.0.0/8 a b\n", "t:1: unexpected third column \"b\" (expected PREFIX/LEN [NEXTHOP])"),
        ("# only comments\r\n\r\n", "t: no routes"),
        ("", "t: no routes"),
        (
            "10.0.0.0/8 a\n10.1.0.0/16 b\n11.0.0.0/8 c\n10.1.0.0/16 d\n",
            "t:4: duplicate prefix 10.1.0.0/16 (first on line 2)",
        ),
        ("10.0.0.0/8 a\n2001:db8::/32 b\n", "t:2: IPv6 prefix \"2001:db8::/32\" in an IPv4 table"),
        (
            "10.0.0.0/8 a\n10.1.0.0/16\n",
            "t:2: missing next hop (line 1 has one; a table must not mix PREFIX/LEN NEXTHOP and PREFIX/LEN lines)",
        ),
        (
            "10.0.0.0/8\n10.1.0.0/16 x\n",
            "t:2: unexpected next hop \"x\" (line 1 has none; a table must not mix PREFIX/LEN NEXTHOP and PREFIX/LEN lines)",
        ),
    ];
    for (text, want) in cases {
        let e = parse_text_table::<Ipv4>(text, "t", &o).unwrap_err();
        assert_eq!(&e.to_string(), want, "input {text:?}");
        assert_eq!(e.input(), "t");
    }
    let e = parse_text_table::<Ipv6>("2001:db8::/129 a\n", "t", &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t:1: bad prefix \"2001:db8::/129\": length /129 exceeds the maximum /128"
    );
    assert_eq!(e.line(), Some(1));
    assert_eq!(e.offset(), None);
    let e = parse_text_table::<Ipv6>("2001:db8::1/64 a\n", "t", &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t:1: prefix 2001:db8::1/64 has host bits set (did you mean 2001:db8::/64?)"
    );
    let e = parse_text_table::<Ipv6>("::/0 a\n10.0.0.0/8 a\n", "t", &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t:2: IPv4 prefix \"10.0.0.0/8\" in an IPv6 table"
    );
}

#[test]
fn family_detection_and_forcing() {
    let dir = scratch("family");
    let p = write(&dir, "mixed.txt", b"# c\n10.0.0.0/8 a\n2001:db8::/32 b\n");
    let e = read_table(&p, &TableOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:3: IPv6 prefix \"2001:db8::/32\" in an IPv4 table (the first route, on line 2, is IPv4)",
            p.display()
        )
    );
    let forced = TableOptions {
        family: Some(Family::V6),
        ..TableOptions::default()
    };
    let e = read_table(&p, &forced).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: IPv4 prefix \"10.0.0.0/8\" in an IPv6 table (the family was forced to ipv6)",
            p.display()
        )
    );
    let e = read_table_as::<Ipv4>(&p, &forced).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: the family is forced to ipv6, but an ipv4 table was requested",
            p.display()
        )
    );
    let p6 = write(&dir, "v6.txt", b"2001:db8::/32 b\n");
    assert_eq!(
        read_table(&p6, &TableOptions::default()).unwrap().family(),
        Family::V6
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[cfg(feature = "compression")]
fn compressed_input_by_magic_not_name() {
    let dir = scratch("compressed");
    let text = b"10.0.0.0/8 a\n10.1.0.0/16 b\n";
    for (name, bytes) in [
        ("plain.gz", text.to_vec()),
        ("xz-data.txt", xz(text)),
        ("gz-data.bin", gz(text)),
        (
            "two-members.gz",
            [gz(b"10.0.0.0/8 a\n"), gz(b"10.1.0.0/16 b\n")].concat(),
        ),
        (
            "two-streams.xz",
            [xz(b"10.0.0.0/8 a\n"), xz(b"10.1.0.0/16 b\n")].concat(),
        ),
    ] {
        let p = write(&dir, name, &bytes);
        let t = read_table_as::<Ipv4>(&p, &TableOptions::default()).unwrap();
        assert_eq!(t.rib.len(), 2, "{name}");
        let mut s = String::new();
        std::io::Read::read_to_string(&mut open_input(&p).unwrap(), &mut s).unwrap();
        assert_eq!(s.as_bytes(), text, "{name}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
#[cfg(feature = "compression")]
fn truncated_compressed_input_is_an_error() {
    let dir = scratch("truncated");
    let mut text = String::new();
    for i in 0..20_000u32 {
        text.push_str(&format!(
            "{}.{}.{}.0/24 nh{}\n",
            10 + i / 65536,
            (i / 256) % 256,
            i % 256,
            i % 7
        ));
    }
    for (name, mut bytes) in [("t.xz", xz(text.as_bytes())), ("t.gz", gz(text.as_bytes()))] {
        let keep = bytes.len() / 2;
        bytes.truncate(keep);
        let p = write(&dir, name, &bytes);
        let e = read_table(&p, &TableOptions::default()).unwrap_err();
        let what = if name.ends_with("xz") { "xz" } else { "gzip" };
        let msg = e.to_string();
        let prefix = format!("{}: truncated {what} data after ", p.display());
        assert!(msg.starts_with(&prefix), "{msg}");
        assert!(msg.contains(" decompressed bytes ("), "{msg}");
        assert!(e.io_error().is_some());
    }
    let e = read_table(&dir.join("missing.txt"), &TableOptions::default()).unwrap_err();
    assert!(e.to_string().contains("missing.txt: cannot open: "), "{e}");
    let p = write(&dir, "b.bz2", b"BZh91AY&SY");
    let e = read_table(&p, &TableOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: bzip2 input is not supported; decompress it first (bunzip2 -k FILE)",
            p.display()
        )
    );
    let p = write(&dir, "bin", b"10.0.0.0/8 \xff\xfe\n");
    let e = read_table(&p, &TableOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:1: not UTF-8 text (byte offset 11); binary input other than MRT is not supported",
            p.display()
        )
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn stats_of_a_text_table() {
    let dir = scratch("stats");
    let p = write(&dir, "s.txt", b"10.0.0.0/8 a\n\n# x\n11.0.0.0/8 a");
    let (t, s) = read_table_with_stats(&p, &TableOptions::default()).unwrap();
    assert_eq!(t.family(), Family::V4);
    assert_eq!(s.lines, 4);
    std::fs::remove_dir_all(dir).ok();
}

// ---------------------------------------------------------------------------------------
// Address lists
// ---------------------------------------------------------------------------------------

#[test]
fn address_lists() {
    let tmp = scratch("addresses");
    let p = write(
        &tmp,
        "a.txt",
        b"# keys\r\n10.0.0.1\r\n\r\n  192.0.2.255 # x\n0.0.0.0",
    );
    assert_eq!(
        read_addresses::<Ipv4>(&p).unwrap(),
        [0x0a00_0001, 0xc000_02ff, 0]
    );
    let e = read_addresses::<Ipv6>(&p).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}:2: ipv4 address \"10.0.0.1\" in a list of ipv6 addresses",
            p.display()
        )
    );
    let p = write(&tmp, "b.txt", b"2001:db8::1\n2001:db8::g\n");
    let e = read_addresses::<Ipv6>(&p).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}:2: bad ipv6 address \"2001:db8::g\"", p.display())
    );
    std::fs::remove_dir_all(tmp).ok();
}

use super::*;
use crate::prefix::{Ipv4, Ipv6};

fn p4(s: &str) -> Prefix<Ipv4> {
    s.parse().unwrap()
}

fn small() -> RouteTable<Ipv4, Value> {
    let routes = [
        ("0.0.0.0/0", Value::Str("default".into())),
        ("10.0.0.0/8", Value::Int(1)),
        ("10.1.0.0/16", Value::Int(2)),
        ("10.1.2.3/32", Value::Int(1)),
    ];
    RouteTable::from_routes(
        routes.into_iter().map(|(p, v)| (p4(p), v)),
        AUTO,
        &BuildOptions::default(),
    )
    .unwrap()
}

#[test]
fn lookups_return_values() {
    let t = small();
    assert_eq!(t.scheme(), "d16r");
    assert_eq!(t.model(), "in place, one instance");
    assert_eq!(t.len(), 4);
    assert_eq!(t.value_count(), 3, "equal values share an id");
    assert_eq!(t.lookup(0x0a01_0203), Some(&Value::Int(1)));
    assert_eq!(t.lookup(0x0a01_0204), Some(&Value::Int(2)));
    assert_eq!(t.lookup(0x0b00_0000), Some(&Value::Str("default".into())));
    let keys = [0x0a01_0203, 0x0a01_0204, 0x0a00_0000, 0xffff_ffff];
    let mut out = [None; 4];
    t.lookup_batch(&keys, &mut out);
    assert_eq!(
        out.map(|v| v.cloned()),
        [
            Some(Value::Int(1)),
            Some(Value::Int(2)),
            Some(Value::Int(1)),
            Some(Value::Str("default".into()))
        ]
    );
    let mut ids = [0u32; 4];
    t.lookup_ids(&keys, &mut ids);
    assert_eq!(ids.map(|i| t.value(i).cloned()), out.map(|v| v.cloned()));
    let (p, v) = t.lookup_prefix(0x0a01_0204).unwrap();
    assert_eq!((p, v), (p4("10.1.0.0/16"), &Value::Int(2)));
    let mut pre = [None; 2];
    t.lookup_prefix_batch(&[0x0a01_0203, 0x0b00_0000], &mut pre);
    assert_eq!(pre[0].unwrap().0, p4("10.1.2.3/32"));
    assert_eq!(pre[1].unwrap().0, p4("0.0.0.0/0"));
}

#[test]
fn updates_keep_prefixes_and_values() {
    let t = small();
    // The prefix trie exists before the updates: it must follow them.
    assert!(t.lookup_prefix(0x0a02_0000).is_some());
    assert_eq!(t.insert(p4("10.2.0.0/16"), Value::Int(7)).unwrap(), None);
    assert_eq!(
        t.insert(p4("10.1.0.0/16"), Value::Int(8)).unwrap(),
        Some(Value::Int(2))
    );
    assert_eq!(
        t.remove(&p4("0.0.0.0/0")).unwrap(),
        Some(Value::Str("default".into()))
    );
    assert_eq!(t.remove(&p4("0.0.0.0/0")).unwrap(), None);
    assert_eq!(t.lookup(0x0a02_0001), Some(&Value::Int(7)));
    assert_eq!(t.lookup(0x0a01_0001), Some(&Value::Int(8)));
    assert_eq!(t.lookup(0x0b00_0000), None);
    assert_eq!(t.lookup_prefix(0x0a02_0001).unwrap().0, p4("10.2.0.0/16"));
    assert_eq!(t.lookup_prefix(0x0b00_0000), None);
    // One batch with the same prefix twice: the second change sees the first.
    let before = t
        .apply([
            (p4("192.0.2.0/24"), Some(Value::Int(1))),
            (p4("192.0.2.0/24"), Some(Value::Int(2))),
            (p4("192.0.2.0/24"), None),
        ])
        .unwrap();
    assert_eq!(before, vec![None, Some(Value::Int(1)), Some(Value::Int(2))]);
    assert_eq!(t.lookup(0xc000_0201), None);
    assert_eq!(t.routes().len(), 4);
}

#[test]
fn every_update_model() {
    // In place (poptrie; bloom-base with validated reads), rebuild (dir24-8, trie). No
    // registry scheme goes through twins any more: every incremental one patches in place.
    for (scheme, model) in [
        ("poptrie16", "in place, one instance"),
        ("bloom-base", "in place, one instance"),
        ("bloomfwd", "in place, one instance"),
        ("dir24-8", "rebuild, published with one pointer swap"),
        ("trie", "rebuild, published with one pointer swap"),
    ] {
        let t: RouteTable<Ipv6, String> =
            RouteTable::new(scheme).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(t.model(), model, "{scheme}");
        assert!(t.is_empty());
        let mut r = t.reader();
        t.insert("2001:db8::/32".parse().unwrap(), "a".into())
            .unwrap();
        t.insert("2001:db8:1::/48".parse().unwrap(), "b".into())
            .unwrap();
        let k: Ipv6 = 0x2001_0db8_0001_0000_0000_0000_0000_0001;
        assert_eq!(r.lookup(k).map(String::as_str), Some("b"), "{scheme}");
        t.remove(&"2001:db8:1::/48".parse().unwrap()).unwrap();
        assert_eq!(r.lookup(k).map(String::as_str), Some("a"), "{scheme}");
        assert_eq!(t.lookup(k).map(String::as_str), Some("a"), "{scheme}");
    }
}

#[test]
fn schemes_by_name() {
    let e = RouteTable::<Ipv4, u32>::new("nope").unwrap_err();
    assert!(matches!(e, TableError::UnknownScheme { .. }));
    assert!(e.to_string().contains("auto, trie"), "{e}");
    // DXR is IPv4 only.
    assert!(matches!(
        RouteTable::<Ipv6, u32>::new("d18r"),
        Err(TableError::UnknownScheme { .. })
    ));
    assert_eq!(
        RouteTable::<Ipv6, u32>::new(AUTO).unwrap().scheme(),
        "poptrie16"
    );
    let opts = BuildOptions::default().with_settings("k=16").unwrap();
    let t = RouteTable::<Ipv4, u32>::from_routes([], "d18r", &opts).unwrap();
    let copy = RouteTable::<Ipv4, u32>::from_bytes(&t.to_bytes()).unwrap();
    assert_eq!(copy.options(), &opts);
    let bad = BuildOptions::default().with_settings("bogus=1").unwrap();
    assert!(matches!(
        RouteTable::<Ipv4, u32>::from_routes([], "d18r", &bad),
        Err(TableError::Build(_))
    ));
}

#[test]
fn from_table_merges_equal_values() {
    let text = "10.0.0.0/8 AS1\n10.1.0.0/16 1\n10.2.0.0/16 AS2\n";
    let t = crate::io::parse_text_table::<Ipv4>(text, "t", &Default::default()).unwrap();
    let asn = |s: &str| s.trim_start_matches("AS").parse::<u64>().unwrap();
    let rt = RouteTable::from_table_with(t, AUTO, &BuildOptions::default(), asn).unwrap();
    assert_eq!(rt.value_count(), 2);
    assert_eq!(rt.lookup(0x0a01_0000), Some(&1));
    assert_eq!(rt.lookup(0x0a02_0000), Some(&2));
    assert_eq!(rt.lookup(0x0a03_0000), Some(&1));
}

#[test]
fn blobs_round_trip_and_refuse_damage() {
    let t = small();
    t.insert(p4("198.51.100.0/24"), Value::Int(-3)).unwrap();
    let bytes = t.to_bytes();
    assert_eq!(blob_family(&bytes).unwrap(), Family::V4);
    let back = RouteTable::<Ipv4, Value>::from_bytes(&bytes).unwrap();
    assert_eq!(back.routes(), t.routes());
    assert_eq!(back.scheme(), t.scheme());
    // Every truncation, and a flip of every byte, is an error (not a panic).
    for n in 0..bytes.len() {
        assert!(
            RouteTable::<Ipv4, Value>::from_bytes(&bytes[..n]).is_err(),
            "{n}"
        );
    }
    for i in 0..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x40;
        assert!(
            RouteTable::<Ipv4, Value>::from_bytes(&b).is_err(),
            "byte {i}"
        );
    }
    let err = |b: &[u8]| {
        RouteTable::<Ipv4, Value>::from_bytes(b)
            .unwrap_err()
            .to_string()
    };
    assert!(err(b"").contains("shorter than the header"));
    assert!(err(b"PK\x03\x04 a zip file, say").contains("no LPMKITRT magic"));
    let mut v2 = bytes.clone();
    v2[8] = 2;
    assert!(err(&v2).contains("format version 2"));
    // The other family, the other value type.
    assert!(RouteTable::<Ipv6, Value>::from_bytes(&bytes)
        .unwrap_err()
        .to_string()
        .contains("the table is ipv4"));
    assert!(RouteTable::<Ipv4, String>::from_bytes(&bytes)
        .unwrap_err()
        .to_string()
        .contains("value type tag 5"));
}

#[test]
fn blob_invariants_are_checked_even_with_a_valid_checksum() {
    let t: RouteTable<Ipv4, u32> =
        RouteTable::from_routes([(p4("10.0.0.0/8"), 5)], "trie", &Default::default()).unwrap();
    let bytes = t.to_bytes();
    let reseal = |mut b: Vec<u8>| {
        let n = b.len() - 8;
        let c = super::blob::tests_fnv(&b[..n]);
        b[n..].copy_from_slice(&c.to_le_bytes());
        b
    };
    let n = bytes.len();
    // The route record: 4 address bytes, the length, the value id, then the checksum.
    let (len_at, id_at) = (n - 8 - 5, n - 8 - 4);
    let mut b = bytes.clone();
    b[len_at] = 33;
    let e = RouteTable::<Ipv4, u32>::from_bytes(&reseal(b)).unwrap_err();
    assert!(e.to_string().contains("route 0"), "{e}");
    let mut b = bytes.clone();
    b[len_at] = 4; // 10.0.0.0/4 has host bits set
    assert!(RouteTable::<Ipv4, u32>::from_bytes(&reseal(b)).is_err());
    let mut b = bytes.clone();
    b[id_at] = 2;
    let e = RouteTable::<Ipv4, u32>::from_bytes(&reseal(b)).unwrap_err();
    assert!(e.to_string().contains("value id 2 of 1"), "{e}");
}

#[test]
fn lookups_run_while_another_thread_updates() {
    let t = small();
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let keys: Vec<u32> = (0..256).map(|i| 0xc000_0000 | (i << 8)).collect();
                let mut out = vec![None; keys.len()];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    t.lookup_batch(&keys, &mut out);
                    for v in &out {
                        // Either the default route or one of the /24s announced below.
                        assert!(matches!(v, Some(Value::Str(_)) | Some(Value::Int(100..))));
                    }
                }
            });
        }
        for round in 0..200u32 {
            let p = Prefix::new(0xc000_0000 | ((round % 256) << 8), 24).unwrap();
            t.insert(p, Value::Int(100 + round as i128)).unwrap();
            if round % 3 == 0 {
                t.remove(&p).unwrap();
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}

#[test]
fn auto_picks_by_family_and_size() {
    let first = |f, n| auto_candidates(f, n)[0];
    assert_eq!(first(Family::V4, 100_000), "d16r");
    assert_eq!(first(Family::V4, 1_000_000), "d18r");
    assert_eq!(first(Family::V4, AUTO_LARGE_V4 - 1), "d18r");
    assert_eq!(first(Family::V4, AUTO_LARGE_V4), "d20r");
    assert_eq!(first(Family::V4, 8_000_000), "d20r");
    assert_eq!(first(Family::V6, 2_000_000), "poptrie16");
    for (f, n) in [
        (Family::V4, 1),
        (Family::V4, 1 << 20),
        (Family::V4, 1 << 23),
    ] {
        let c = auto_candidates(f, n);
        assert_eq!(c.last(), Some(&"trie"), "{c:?}");
        for name in c {
            assert!(registry::find(name).is_some(), "{name}");
        }
    }
}

/// On a table large enough, `auto` times its candidates and says so: the scheme taken is
/// one it timed, the rule's first unless another was clearly faster; a scheme named, or
/// a small table, is not measured. The answers are right whichever it took.
#[test]
fn auto_measures_its_candidates_on_a_large_table() {
    let n = crate::simd::CALIBRATE_FROM as u32 + 20_000;
    let routes = (0..n).map(|i| {
        let len = 16 + (i % 9) as u8;
        (
            Prefix::new_truncating(i.wrapping_mul(0x9e37_79b9), len),
            i % 50,
        )
    });
    let routes: Vec<(Prefix<Ipv4>, u32)> = routes.collect();
    let t = RouteTable::<Ipv4, u32>::from_routes(routes.clone(), AUTO, &BuildOptions::default())
        .unwrap();
    let rule = auto_candidates(Family::V4, t.len());
    match t.auto_choice() {
        Some(c) => {
            assert!(crate::simd::calibration_enabled());
            assert_eq!(c.chosen, t.scheme());
            assert!(c.rates.len() >= 2 && c.rates.len() <= AUTO_MEASURED, "{c}");
            assert_eq!(c.rates[0].0, rule[0], "{c}");
            for (name, mlps) in &c.rates {
                assert!(rule.contains(name) && *name != "trie" && *mlps > 0.0, "{c}");
            }
            assert!(c
                .to_string()
                .starts_with(&format!("auto chose {},", c.chosen)));
        }
        None => {
            assert!(!crate::simd::calibration_enabled());
            assert_eq!(t.scheme(), rule[0]);
        }
    }
    let mut rib = Rib::new();
    for (p, v) in &routes {
        rib.insert(*p, NextHop::new(v + 1).unwrap());
    }
    for k in rib.sample_keys(5000, 1) {
        let want = rib.lookup(k).map(|h| h.get() - 1);
        assert_eq!(t.lookup(k).copied(), want, "{k:#x}");
    }
    let named = RouteTable::<Ipv4, u32>::from_routes(routes, "d16r", &BuildOptions::default());
    assert_eq!(named.unwrap().auto_choice(), None);
    assert_eq!(small().auto_choice(), None);
}

//! Unit tests of DXR's layout, limits and updates on small tables.

use super::*;
use crate::fib::{Change, IncrementalFib};
use crate::prefix::Prefix;
use crate::rib::Rib;
use crate::rng::SplitMix64;
use crate::test_support::nh;

fn rib(routes: &[(&str, u32)]) -> Rib<Ipv4> {
    crate::test_support::rib(routes)
}

/// Keys at every prefix boundary (±1), the ends of the space, and chunk boundaries near
/// the prefixes.
fn boundary_keys(rib: &Rib<Ipv4>, k: u32) -> Vec<u32> {
    let mut keys = vec![0, 1, u32::MAX, u32::MAX - 1];
    let cmask = u32::MAX >> k;
    for (p, _) in rib.iter() {
        for a in [p.first(), p.last()] {
            keys.extend([a, a.wrapping_add(1), a.wrapping_sub(1)]);
            keys.extend([a & !cmask, a | cmask, (a | cmask).wrapping_add(1)]);
        }
    }
    keys
}

/// Compares every lookup path with the Rib; checks the invariants.
fn check(rib: &Rib<Ipv4>, d: &Dxr) {
    d.check_invariants().unwrap();
    let keys = boundary_keys(rib, d.k());
    let mut out = vec![u32::MAX; keys.len()];
    d.lookup_batch(&keys, &mut out);
    let mut scalar = vec![u32::MAX; keys.len()];
    d.lookup_batch_scalar(&keys, &mut scalar);
    // The AVX2 stages too, when the table runs the AVX-512 ones.
    #[cfg(target_arch = "x86_64")]
    if let Some(token) = crate::simd::Avx2::new() {
        let mut v = vec![u32::MAX; keys.len()];
        if d.table().remap {
            super::kernel::avx2::<true>(token, d.table(), &keys, &mut v);
        } else {
            super::kernel::avx2::<false>(token, d.table(), &keys, &mut v);
        }
        assert_eq!(
            v,
            out,
            "the AVX2 stages against the table's own, k={}",
            d.k()
        );
    }
    for ((&key, &o), &sc) in keys.iter().zip(&out).zip(&scalar) {
        let want = rib.lookup(key);
        assert_eq!(
            NextHop::new(sc),
            want,
            "scalar batch {key:#010x} k={}",
            d.k()
        );
        assert_eq!(d.lookup(key), want, "lookup {key:#010x} k={}", d.k());
        assert_eq!(
            NextHop::new(o),
            want,
            "lookup_batch {key:#010x} k={}",
            d.k()
        );
        assert_eq!(d.lookup_paper_loop(key), want, "paper loop {key:#010x}");
    }
}

fn build(rib: &Rib<Ipv4>, cfg: &DxrConfig) -> Dxr {
    let d = Dxr::build(rib, cfg).unwrap();
    check(rib, &d);
    d
}

/// The paper's sample database (§3.1).
const PAPER_DATABASE: [(&str, u32); 5] = [
    ("0.0.0.0/0", 1),
    ("1.0.0.0/8", 2),
    ("1.2.0.0/16", 3),
    ("1.2.3.0/24", 4),
    ("1.2.4.5/32", 3),
];

/// The paper's sample database and its 1.2.0.0/16 chunk in the short format (§3.2).
#[test]
fn paper_example() {
    let r = rib(&PAPER_DATABASE);
    let mut ranges = vec![];
    r.for_each_range(|f, _, h| ranges.push((f, NextHop::raw(h))));
    assert_eq!(
        ranges,
        vec![
            (0x0000_0000, 1),
            (0x0100_0000, 2),
            (0x0102_0000, 3),
            (0x0102_0300, 4),
            (0x0102_0400, 3),
            (0x0103_0000, 2),
            (0x0200_0000, 1),
        ]
    );
    let d = build(&r, &DxrConfig::d16r());
    let e = d.table().lt(0x0102);
    assert_eq!(e & d.table().fmt.size_mask(), 3, "three ranges");
    assert_eq!(e & d.table().fmt.long_bit(), 0, "short format");
    let t = d.table();
    let entries: Vec<u32> = (0..3).map(|i| t.chunk_entry(e, i)).collect();
    assert_eq!(entries, vec![0x0003, 0x0304, 0x0403]);
    // Every other chunk is direct.
    assert_eq!(d.table().lt(0x0101), 2 << d.table().fmt.pos_field());
    assert_eq!(d.table().lt(0x0000), 1 << d.table().fmt.pos_field());
    let s = d.dxr_stats();
    assert_eq!((s.full_chunks, s.short_ranges, s.long_ranges), (1, 3, 0));
    assert_eq!(s.direct_chunks, (1 << 16) - 1);
    assert_eq!(
        s.total_bytes(),
        (1 << 18) + 8 + 4 * PAD_WORDS as u64,
        "two words and the pad"
    );
    // The same chunk in the long format (§3.2: 0.0 C, 3.0 D, 4.0 C) once a next hop is
    // too wide for 8 bits.
    let r = rib(&[("1.2.0.0/16", 300), ("1.2.3.0/24", 4)]);
    let d = build(&r, &DxrConfig::d16r());
    let e = d.table().lt(0x0102);
    assert_ne!(e & d.table().fmt.long_bit(), 0);
    let entries: Vec<u32> = (0..3).map(|i| d.table().chunk_entry(e, i)).collect();
    assert_eq!(entries, vec![300, 0x0300_0004, (0x0400 << 16) | 300]);
}

/// One table with direct, short and long chunks (the paper's database, plus two chunks in
/// the long format), every lookup path on its boundary keys: the DXR case of CI's Miri run
/// (a build is most of its time there, so one build holds every chunk format).
#[test]
fn miri_short_long_and_direct_chunks() {
    let long = [
        ("1.3.0.0/16", 300),
        ("1.3.3.0/24", 4),
        ("255.255.255.255/32", 5),
    ];
    let r = rib(&[&PAPER_DATABASE[..], &long].concat());
    let d = build(&r, &DxrConfig::d16r());
    let s = d.dxr_stats();
    assert_eq!(
        (s.short_chunks, s.long_chunks),
        (1, 2),
        "1.2 short; 1.3, 255.255 long"
    );
    assert_eq!(s.direct_chunks + s.full_chunks, 1 << 16);
}

#[test]
fn formats_and_direct_chunks() {
    // /24-aligned ranges with small next hops: short; a /25: long; one range: direct.
    let r = rib(&[
        ("10.0.0.0/8", 1),
        ("10.1.2.0/24", 2),
        ("10.2.2.0/25", 3),
        ("10.3.0.0/16", 4),
    ]);
    for k in MIN_K..=MAX_K {
        let d = build(&r, &DxrConfig::with_k(k));
        let s = d.dxr_stats();
        let chunk = |a: u32| d.table().lt((a >> (32 - k as u32)) as usize);
        if k < 24 {
            assert_eq!(
                chunk(0x0a01_0200) & d.table().fmt.long_bit(),
                0,
                "k={k}: short"
            );
            assert_eq!(s.short_chunks, 1, "k={k}");
        } else {
            // At k = 24 a /24 is a whole chunk.
            assert_eq!(
                chunk(0x0a01_0200) & d.table().fmt.size_mask(),
                0,
                "k=24: direct"
            );
            assert_eq!(s.short_chunks, 0);
        }
        assert_ne!(
            chunk(0x0a02_0200) & d.table().fmt.long_bit(),
            0,
            "k={k}: long"
        );
        assert_eq!(
            chunk(0x0a03_0000) & d.table().fmt.size_mask(),
            0,
            "k={k}: direct"
        );
        assert_eq!(s.long_chunks, 1);
        assert_eq!(s.long_ranges, if k < 23 { 3 } else { 2 }, "k={k}");
        assert_eq!(s.direct_chunks + s.full_chunks, 1 << k);
    }
}

#[test]
fn empty_default_and_hosts() {
    for k in MIN_K..=MAX_K {
        let cfg = DxrConfig::with_k(k);
        let d = build(&Rib::new(), &cfg);
        assert_eq!(d.lookup(12345), None);
        assert_eq!(d.dxr_stats().empty_chunks, 1 << k);
        let r = rib(&[
            ("0.0.0.0/0", 7),
            ("0.0.0.0/32", 1),
            ("255.255.255.255/32", 2),
            ("128.0.0.0/1", 3),
            ("128.0.0.1/32", 7),
        ]);
        build(&r, &cfg);
    }
}

#[test]
fn invalid_configs() {
    for k in [0, 8, 15, 25, 32] {
        let err = Dxr::build(&Rib::new(), &DxrConfig::with_k(k))
            .err()
            .unwrap();
        assert!(matches!(err, BuildError::InvalidConfig { .. }), "{err}");
        assert!(err.to_string().contains(&format!("k = {k}")), "{err}");
    }
    for bad in [0.0, -1.0, 1.5, f64::NAN] {
        assert!(Dxr::build(&Rib::new(), &DxrConfig::d16r().compact_threshold(bad)).is_err());
        assert!(Dxr::build(&Rib::new(), &DxrConfig::d16r().full_rebuild_share(bad)).is_err());
    }
    let cfg = DxrConfig::d16r().widen(false).remap_next_hops(Some(true));
    assert!(Dxr::build(&Rib::new(), &cfg).is_err());
}

#[test]
fn wide_next_hops_remap_or_refuse() {
    let r = rib(&[
        ("10.0.0.0/8", 70_000),
        ("10.1.0.0/16", 3),
        ("10.1.1.0/24", 70_001),
    ]);
    let err = Dxr::build(&r, &DxrConfig::d16r().widen(false))
        .err()
        .unwrap();
    assert_eq!(
        err,
        BuildError::NextHopOverflow {
            scheme: "d16r".into(),
            max: 65535,
            requested: 70_001
        }
    );
    let err = Dxr::build(&r, &DxrConfig::d16r().remap_next_hops(Some(false)))
        .err()
        .unwrap();
    assert!(matches!(err, BuildError::NextHopOverflow { .. }));
    let d = build(&r, &DxrConfig::d16r());
    assert_eq!(d.dxr_stats().next_hop_mode, Some(NextHopMode::Remapped));
    // Remapping on request, with small ids too: the most used next hop gets id 1.
    let r = rib(&[("10.0.0.0/8", 500), ("10.1.1.0/24", 2), ("10.1.3.0/24", 2)]);
    let d = build(&r, &DxrConfig::d16r().remap_next_hops(Some(true)));
    assert_eq!(
        (0..3)
            .map(|i| unsafe { d.table().nh_map.get(i) })
            .collect::<Vec<_>>(),
        [0, 500, 2]
    );
    // 500 does not fit a short entry, its local id does.
    assert_eq!(d.dxr_stats().short_chunks, 1);
    assert_eq!(
        build(&r, &DxrConfig::d16r()).dxr_stats().long_chunks,
        1,
        "identity: long"
    );
}

#[test]
fn too_many_distinct_next_hops() {
    // 65,536 distinct ids above 65,535: the descriptor table cannot hold them.
    let r: Rib<Ipv4> = (0..65_536u32)
        .map(|i| (Prefix::new_truncating(i << 8, 24), nh(100_000 + i)))
        .collect();
    let err = Dxr::build(&r, &DxrConfig::d16r()).err().unwrap();
    assert_eq!(
        err,
        BuildError::CapacityExceeded {
            scheme: "d16r".into(),
            what: "distinct next hops",
            max: 65535,
            requested: 65536
        }
    );
}

#[test]
fn chunk_size_widens_or_refuses() {
    // One /16 chunk with 4,098 ranges: 2,049 /29s 16 addresses apart (long entries).
    let mut r = rib(&[("10.0.0.0/16", 1)]);
    for i in 0..2049u32 {
        r.insert(Prefix::new_truncating(0x0a00_0000 | (i << 4), 29), nh(2));
    }
    let err = Dxr::build(&r, &DxrConfig::d16r().widen(false))
        .err()
        .unwrap();
    assert_eq!(
        err,
        BuildError::CapacityExceeded {
            scheme: "d16r".into(),
            what: "ranges in one chunk",
            max: 4095,
            requested: 4098
        }
    );
    let d = build(&r, &DxrConfig::d16r());
    let s = d.dxr_stats();
    assert_eq!(s.size_shift, 1);
    assert_eq!(s.long_ranges, 4098, "padding is not counted");
    // k = 18 splits the chunk in four: no widening needed.
    assert_eq!(build(&r, &DxrConfig::d18r()).dxr_stats().size_shift, 0);
}

#[test]
fn updates_match_the_rib() {
    let mut rng = SplitMix64::new(7);
    for k in [16u8, 18, 20, 23, 24] {
        let mut r = Rib::<Ipv4>::new();
        let cfg = DxrConfig::with_k(k).compact_threshold(0.1);
        let mut d = Dxr::build(&r, &cfg).unwrap();
        let mut live: Vec<Prefix<Ipv4>> = vec![];
        for step in 0..600 {
            let mut changes = vec![];
            for _ in 0..1 + rng.below(4) {
                let ch = if !live.is_empty() && rng.below(3) == 0 {
                    let p = live.swap_remove(rng.below(live.len() as u64) as usize);
                    Change::Withdraw(p)
                } else {
                    // Prefixes clustered in 10.0.0.0/12 so that they nest and share chunks.
                    let len = [8, 12, 14, 16, 18, 20, 22, 24, 25, 28, 32][rng.below(11) as usize];
                    let a = 0x0a00_0000 | (rng.next() as u32 & 0x000f_ffff);
                    let p = Prefix::new_truncating(a, len);
                    live.push(p);
                    Change::Announce(p, nh(1 + rng.below(300) as u32))
                };
                ch.apply_to(&mut r);
                changes.push(ch);
            }
            let st = d.apply(&r, &changes).unwrap();
            assert!(!st.full_rebuild, "k={k} step {step}");
            if step % 20 == 0 || k == 16 {
                check(&r, &d);
            }
            let s = d.dxr_stats();
            // Compaction moves chunks down into holes one by one, while readers may still
            // be in the blocks they leave: it keeps fragmentation bounded, not at zero.
            let words = s.range_table_bytes / 4;
            assert!(
                s.free_words <= 64 || s.free_words as f64 <= 0.5 * words as f64,
                "k={k} step {step}: {} of {words} words free",
                s.free_words
            );
        }
        check(&r, &d);
        if k == 16 {
            assert!(d.dxr_stats().compactions > 0, "k={k}: churn compacts");
        }
        // Removing everything leaves only empty direct chunks and no range table.
        let all: Vec<Change<Ipv4>> = r.iter().map(|(p, _)| Change::Withdraw(p)).collect();
        for c in &all {
            c.apply_to(&mut r);
        }
        d.apply(&r, &all).unwrap();
        check(&r, &d);
        let s = d.dxr_stats();
        assert_eq!(s.empty_chunks, 1 << k);
        assert_eq!(s.range_table_bytes, 4 * PAD_WORDS as u64);
    }
}

#[test]
fn update_fallbacks() {
    // A next hop beyond 16 bits in an identity table: full rebuild into remapped mode.
    let mut r = rib(&[("10.0.0.0/8", 1), ("10.1.0.0/16", 2)]);
    let mut d = build(&r, &DxrConfig::d18r());
    let ch = Change::Announce("10.1.2.0/24".parse().unwrap(), nh(90_000));
    ch.apply_to(&mut r);
    let st = d.apply(&r, &[ch]).unwrap();
    assert!(st.full_rebuild);
    assert_eq!(d.dxr_stats().next_hop_mode, Some(NextHopMode::Remapped));
    assert_eq!(d.dxr_stats().full_rebuilds, 1);
    check(&r, &d);
    // In remapped mode a new wide next hop just gets a local id.
    let ch = Change::Announce("10.1.3.0/24".parse().unwrap(), nh(90_001));
    ch.apply_to(&mut r);
    assert!(!d.apply(&r, &[ch]).unwrap().full_rebuild);
    check(&r, &d);
    // Without widening the same change is an error.
    let mut r = rib(&[("10.0.0.0/8", 1)]);
    let mut d = build(&r, &DxrConfig::d18r().widen(false));
    let ch = Change::Announce("10.1.2.0/24".parse().unwrap(), nh(90_000));
    ch.apply_to(&mut r);
    assert!(matches!(
        d.apply(&r, &[ch]),
        Err(BuildError::NextHopOverflow { .. })
    ));
    // A chunk that outgrows the size field: rebuilt with a size shift.
    let mut r = rib(&[("10.0.0.0/16", 1)]);
    let mut d = build(&r, &DxrConfig::d16r());
    let changes: Vec<Change<Ipv4>> = (0..2100u32)
        .map(|i| Change::Announce(Prefix::new_truncating(0x0a00_0000 | (i << 5), 28), nh(2)))
        .collect();
    for c in &changes {
        c.apply_to(&mut r);
    }
    let st = d.apply(&r, &changes).unwrap();
    assert!(st.full_rebuild);
    assert_eq!(d.dxr_stats().size_shift, 1);
    check(&r, &d);
    // A change covering most chunks (the default route) rebuilds everything.
    let ch = Change::Announce(Prefix::DEFAULT, nh(3));
    ch.apply_to(&mut r);
    assert!(d.apply(&r, &[ch]).unwrap().full_rebuild);
    check(&r, &d);
}

#[test]
fn coalesced_updates_rebuild_each_chunk_once() {
    let mut r = rib(&[("10.0.0.0/8", 1)]);
    let mut d = build(&r, &DxrConfig::d16r());
    let changes: Vec<Change<Ipv4>> = (0..50u32)
        .map(|i| {
            Change::Announce(
                Prefix::new_truncating(0x0a01_0000 | (i << 8), 24),
                nh(2 + i % 2),
            )
        })
        .chain([Change::Announce("10.2.0.0/15".parse().unwrap(), nh(4))])
        .collect();
    for c in &changes {
        c.apply_to(&mut r);
    }
    let st = d.apply(&r, &changes).unwrap();
    // 10.1.0.0/16 once, 10.2.0.0/15 = two direct chunks.
    assert_eq!(st.units_rebuilt, 3);
    check(&r, &d);
    // A change that does not alter forwarding rewrites nothing.
    let ch = Change::Announce("10.1.0.0/24".parse().unwrap(), nh(2));
    ch.apply_to(&mut r);
    assert_eq!(d.apply(&r, &[ch]).unwrap().units_rebuilt, 0);
}

#[test]
fn steps_histogram() {
    // A chunk of 8 ranges: the paper's loop needs 1..=3 steps.
    let mut r = rib(&[("10.0.0.0/16", 1)]);
    for i in 0..4u32 {
        r.insert(Prefix::new_truncating(0x0a00_0000 | (i << 9), 24), nh(2));
    }
    let d = build(&r, &DxrConfig::d16r());
    let keys: Vec<u32> = (0..0x1000u32)
        .map(|i| 0x0a00_0000 | i)
        .chain([0x0b00_0000])
        .collect();
    let h = d.search_steps_histogram(&keys);
    assert_eq!(h[0], 1);
    assert_eq!(h.iter().sum::<u64>(), keys.len() as u64);
    assert!(h.len() <= 4 && h[1] > 0, "{h:?}");
}

#[test]
fn registry_rows() {
    let r = rib(&[("10.0.0.0/8", 1), ("10.1.1.0/25", 2)]);
    for k in 16..=24 {
        let info = crate::registry::find(&format!("d{k}r")).unwrap();
        assert!(info.incremental);
        let f = info.build(&r, &Default::default()).unwrap();
        assert_eq!(f.name(), format!("d{k}r"));
        assert_eq!(f.lookup(0x0a01_0101), Some(nh(2)));
        assert_eq!(f.lookup(0x0a01_0181), Some(nh(1)));
        assert!(info
            .build::<crate::Ipv6>(&Rib::new(), &Default::default())
            .is_err());
    }
}

#[test]
fn batch_lengths() {
    let mut r = rib(&[("10.0.0.0/8", 2)]);
    for i in 0..40u32 {
        r.insert(
            Prefix::new_truncating(0x0a01_0100 + i * 6, 30),
            nh(3 + i % 3),
        );
    }
    let d = build(&r, &DxrConfig::d18r());
    let keys: Vec<u32> = (0..3 * BATCH as u32 + 1)
        .map(|i| 0x0a01_0100 + i * 3)
        .collect();
    for n in 0..keys.len() {
        let mut out = vec![u32::MAX; n];
        d.lookup_batch(&keys[..n], &mut out);
        let mut scalar = vec![u32::MAX; n];
        d.lookup_batch_scalar(&keys[..n], &mut scalar);
        for ((k, o), sc) in keys[..n].iter().zip(&out).zip(&scalar) {
            assert_eq!(*o, NextHop::raw(r.lookup(*k)));
            assert_eq!(*sc, *o);
        }
    }
    let forced = Dxr::build(&r, &DxrConfig::d18r().force_scalar(true)).unwrap();
    assert_eq!(forced.implementation(), Implementation::Scalar);
}

/// Many small chunks: the paper's 12/1/19 entry cannot name their positions at any
/// position shift (each chunk rounds up to the shift's unit), so the entry gives size bits
/// to the position field instead of refusing — the 4,000,000-route `d22r`/`d23r` case.
#[test]
fn many_small_chunks_resplit_the_entry() {
    let r: Rib<Ipv4> = (0..600_000u32)
        .map(|i| (Prefix::new((i << 8) | 7, 32).unwrap(), nh(1 + i % 3)))
        .collect();
    let d = build(&r, &DxrConfig::with_k(24));
    assert_ne!(d.table().fmt, EntryFormat::PAPER, "re-split");
    assert_eq!(d.dxr_stats().position_shift, 0, "no rounding needed");
    assert!(d.dxr_stats().range_table_bytes < 8 << 20);
    check(&r, &d);
    let err = Dxr::build(&r, &DxrConfig::with_k(24).widen(false)).unwrap_err();
    assert!(matches!(
        err,
        BuildError::CapacityExceeded {
            what: "range table words",
            ..
        }
    ));
}

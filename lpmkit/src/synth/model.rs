//! The calibration data of the generator: prefix-length histograms with their top-level
//! (uncovered) counts, address regions, reserved blocks.
//!
//! The histograms are the `bart` tier-1 tables of the real data set (`docs/data.md`)
//! (901,899 IPv4 and 160,147 IPv6 prefixes, about 2023–24). Per length they give the number
//! of prefixes and how many of them no other prefix of the table covers; only these
//! aggregate counts are embedded, no routes.

use crate::prefix::{Address, Family, Prefix};

/// `(length, prefixes, top-level prefixes)` of the bart IPv4 tier-1 table.
pub(crate) const V4_LENGTHS: &[(u8, u64, u64)] = &[
    (8, 16, 16),
    (9, 13, 9),
    (10, 38, 38),
    (11, 103, 99),
    (12, 299, 268),
    (13, 581, 485),
    (14, 1203, 1025),
    (15, 2100, 1636),
    (16, 13490, 10284),
    (17, 8235, 4481),
    (18, 13798, 6923),
    (19, 24870, 15055),
    (20, 42611, 19405),
    (21, 50750, 23027),
    (22, 108623, 59396),
    (23, 96510, 41454),
    (24, 537698, 261082),
    (25, 20, 0),
    (26, 3, 0),
    (27, 11, 0),
    (28, 18, 1),
    (29, 17, 0),
    (30, 3, 0),
    (31, 3, 0),
    (32, 886, 6),
];

/// IPv4 lengths up to this keep their reference counts in tables larger than the
/// reference (see `length_plan`).
pub(crate) const V4_FIXED_UPTO: u8 = 16;

/// `(length, prefixes, top-level prefixes)` of the bart IPv6 tier-1 table.
pub(crate) const V6_LENGTHS: &[(u8, u64, u64)] = &[
    (16, 1, 1),
    (19, 1, 1),
    (20, 16, 16),
    (21, 3, 3),
    (22, 7, 7),
    (23, 8, 8),
    (24, 30, 27),
    (25, 8, 7),
    (26, 15, 15),
    (27, 20, 18),
    (28, 193, 108),
    (29, 4371, 4317),
    (30, 650, 367),
    (31, 284, 154),
    (32, 22548, 16821),
    (33, 2926, 559),
    (34, 2603, 730),
    (35, 1043, 394),
    (36, 5996, 2604),
    (37, 880, 217),
    (38, 1617, 769),
    (39, 1377, 247),
    (40, 13418, 3183),
    (41, 903, 423),
    (42, 2301, 469),
    (43, 1001, 567),
    (44, 14365, 4059),
    (45, 1553, 285),
    (46, 3039, 1421),
    (47, 3153, 676),
    (48, 75488, 30575),
    (49, 11, 0),
    (50, 3, 0),
    (52, 1, 0),
    (55, 1, 0),
    (56, 24, 1),
    (58, 20, 0),
    (60, 2, 2),
    (64, 184, 5),
    (112, 2, 0),
    (122, 1, 0),
    (124, 4, 0),
    (125, 9, 0),
    (126, 19, 0),
    (127, 42, 0),
    (128, 6, 0),
];

/// The family's reference table: `(length, prefixes, top-level prefixes)` rows.
pub(crate) fn reference_lengths(family: Family) -> &'static [(u8, u64, u64)] {
    match family {
        Family::V4 => V4_LENGTHS,
        Family::V6 => V6_LENGTHS,
    }
}

/// IPv4 space that is never announced: `0/8`, `10/8`, `127/8`, multicast and class E
/// (`224/3`) are excluded from the regions outright; these smaller blocks lie inside
/// regions and are avoided by the placement.
const V4_RESERVED: &[(u32, u8)] = &[
    (0x6440_0000, 10), // 100.64.0.0/10 shared address space (RFC 6598)
    (0xa9fe_0000, 16), // 169.254.0.0/16 link local
    (0xac10_0000, 12), // 172.16.0.0/12 private
    (0xc000_0000, 24), // 192.0.0.0/24 IETF protocol assignments
    (0xc000_0200, 24), // 192.0.2.0/24 TEST-NET-1
    (0xc058_6300, 24), // 192.88.99.0/24 6to4 relay anycast (deprecated)
    (0xc0a8_0000, 16), // 192.168.0.0/16 private
    (0xc612_0000, 15), // 198.18.0.0/15 benchmarking (the next-hop names live here)
    (0xc633_6400, 24), // 198.51.100.0/24 TEST-NET-2
    (0xcb00_7100, 24), // 203.0.113.0/24 TEST-NET-3
];

/// IPv6 blocks inside the regions that are never announced.
const V6_RESERVED: &[(u128, u8)] = &[
    (0x2001_0db8 << 96, 32), // documentation (the next-hop names live here)
];

/// The reserved blocks inside the regions of `A`'s family.
pub(crate) fn reserved<A: Address>() -> Vec<Prefix<A>> {
    match A::FAMILY {
        Family::V4 => V4_RESERVED
            .iter()
            .map(|&(a, l)| Prefix::new_truncating(A::from_u128(a as u128), l))
            .collect(),
        Family::V6 => V6_RESERVED
            .iter()
            .map(|&(a, l)| Prefix::new_truncating(A::from_u128(a), l))
            .collect(),
    }
}

/// IPv6 regions: the IANA → RIR unicast allocations, with the number of bart v6 routes
/// they hold (2001::/16's 20,151 routes spread over its RIR sub-blocks by size).
const V6_REGIONS: &[(u128, u8, u32)] = &[
    (0x2001_0200 << 96, 23, 700),   // APNIC
    (0x2001_0400 << 96, 23, 700),   // ARIN
    (0x2001_0600 << 96, 23, 700),   // RIPE NCC
    (0x2001_0800 << 96, 22, 1000),  // RIPE NCC
    (0x2001_0c00 << 96, 23, 700),   // APNIC (holds 2001:db8::/32, reserved)
    (0x2001_0e00 << 96, 23, 700),   // APNIC
    (0x2001_1200 << 96, 23, 700),   // LACNIC
    (0x2001_1400 << 96, 22, 1000),  // RIPE NCC
    (0x2001_1800 << 96, 23, 700),   // ARIN
    (0x2001_1a00 << 96, 23, 700),   // RIPE NCC
    (0x2001_1c00 << 96, 22, 1000),  // RIPE NCC
    (0x2001_2000 << 96, 19, 1900),  // RIPE NCC
    (0x2001_4000 << 96, 23, 700),   // RIPE NCC
    (0x2001_4200 << 96, 23, 700),   // AFRINIC
    (0x2001_4400 << 96, 23, 700),   // APNIC
    (0x2001_4600 << 96, 23, 700),   // RIPE NCC
    (0x2001_4800 << 96, 23, 700),   // ARIN
    (0x2001_4a00 << 96, 23, 700),   // RIPE NCC
    (0x2001_4c00 << 96, 22, 1000),  // RIPE NCC
    (0x2001_5000 << 96, 20, 1400),  // RIPE NCC
    (0x2001_8000 << 96, 19, 1900),  // APNIC
    (0x2001_a000 << 96, 20, 1400),  // APNIC
    (0x2001_b000 << 96, 20, 1400),  // APNIC
    (0x2003_0000 << 96, 18, 100),   // RIPE NCC
    (0x2400_0000 << 96, 12, 52268), // APNIC
    (0x2600_0000 << 96, 12, 19437), // ARIN
    (0x2610_0000 << 96, 23, 470),   // ARIN
    (0x2620_0000 << 96, 23, 2886),  // ARIN
    (0x2800_0000 << 96, 12, 28380), // LACNIC
    (0x2a00_0000 << 96, 12, 32244), // RIPE NCC
    (0x2a10_0000 << 96, 12, 2813),  // RIPE NCC
    (0x2c00_0000 << 96, 12, 1479),  // AFRINIC
];

/// A region of the address space where allocations are placed, with its weight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Region<A: Address> {
    pub(crate) prefix: Prefix<A>,
    pub(crate) weight: f64,
}

/// log2 of the largest IPv4 region (/8) weight.
const REGION_SPREAD: f64 = 8.0;

/// The regions of `A`'s family. IPv4: every /8 from 1 to 223 except 10 and 127, each with
/// a seeded weight `2^(4u)`, `u` uniform in `[0,1)` (so /8s differ up to 16-fold in density,
/// as the route counts per /8 do in real tables). IPv6: [`V6_REGIONS`].
pub(crate) fn regions<A: Address>(seed: u64) -> Vec<Region<A>> {
    match A::FAMILY {
        Family::V4 => (1u32..=223)
            .filter(|&o| o != 10 && o != 127)
            .map(|o| {
                let u = (crate::rng::mix64(seed ^ 0x7265_6769_6f6e ^ (o as u64) << 40) >> 11)
                    as f64
                    * (1.0 / (1u64 << 53) as f64);
                Region {
                    prefix: Prefix::new_truncating(A::from_u128((o as u128) << 24), 8),
                    weight: super::math::pow(2.0, REGION_SPREAD * u),
                }
            })
            .collect(),
        Family::V6 => V6_REGIONS
            .iter()
            .map(|&(a, l, w)| Region {
                prefix: Prefix::new_truncating(A::from_u128(a), l),
                weight: w as f64,
            })
            .collect(),
    }
}

/// Sub-blocks per region: `2^SUB_BITS` (IPv4: the /16s of each /8).
pub(crate) const SUB_BITS: u8 = 8;

/// Number of weight levels of a sub-block.
pub(crate) const LEVELS: usize = 64;

/// Seeded sub-block weight levels, uniform in `0..LEVELS`; a level `q` means weight
/// `2^(clustering·q/LEVELS)`, so a few sub-blocks of a region hold most of its small
/// allocations, as a few /16s of a dense /8 hold hundreds of /24s in real tables while
/// most hold a handful.
pub(crate) fn sub_levels(seed: u64, regions: usize) -> Vec<u8> {
    (0..regions << SUB_BITS)
        .map(|i| {
            let r = crate::rng::mix64(seed ^ 0x7375_6262_6c6f_636b ^ (i as u64) << 20);
            (((r >> 32) * LEVELS as u64) >> 32) as u8
        })
        .collect()
}

/// Per length, the exponent applied to region weights. IPv4: `(len − 16) / 6`, so /24s
/// favour the dense /8s (weight up to 16^1.33) and /8–/12s the sparse, legacy-like ones;
/// IPv6: 1 (the region weights are already route counts).
const PIVOT: f64 = 18.0;
pub(crate) fn region_exponents(family: Family) -> Vec<f64> {
    (0..=family.bits())
        .map(|l| match family {
            Family::V4 => (l as f64 - PIVOT) / 6.0,
            Family::V6 => 1.0,
        })
        .collect()
}

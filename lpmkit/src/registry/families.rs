//! The registry's rows: one declaration per scheme family — its name, the paper, its
//! presets, and the type implementing it for each address family. Everything else (settings,
//! builds, update models) comes from the scheme contract, [`crate::scheme::Scheme`].

use super::{Preset, SchemeFamily};
use crate::prefix::{Ipv4, Ipv6};
use crate::rib::Rib;
use crate::schemes::bloom::Bloom;
use crate::schemes::dir24_8::{Dir24_8, Dir24_8V6};
#[cfg(all(feature = "dpdk", target_os = "linux"))]
use crate::schemes::dpdk::DpdkFib;
use crate::schemes::dxr::Dxr;
use crate::schemes::lulea::Lulea;
use crate::schemes::miht::Miht;
use crate::schemes::obma::Obma;
use crate::schemes::planb::Planb;
use crate::schemes::poptrie::Poptrie;
use crate::schemes::sail::{SailBitmap, SailL};
use crate::schemes::spider::Spider;

/// Every scheme family, in the order `lpmkit schemes` lists them.
pub(super) static FAMILIES: &[SchemeFamily] = &[
    SchemeFamily::new(
        "trie",
        "lpmkit::Rib",
        &[Preset {
            name: "trie",
            summary: "the reference path-compressed binary trie (the Rib itself)",
            settings: "",
        }],
    )
    .v4::<Rib<Ipv4>>()
    .v6::<Rib<Ipv6>>(),
    SchemeFamily::new(
        "dir24-8",
        "Gupta, Lin, McKeown, INFOCOM 1998; DPDK rte_fib dir24_8 (IPv4), rte_lpm6 (IPv6)",
        &[Preset {
            name: "dir24-8",
            summary: "DIR-24-8: 2^24-entry first table plus 256-entry second-level groups",
            settings: "",
        }],
    )
    .v4::<Dir24_8>()
    .v6::<Dir24_8V6>(),
    SchemeFamily::new(
        "poptrie",
        "Asai, Ohara, SIGCOMM 2015",
        &[
            Preset {
                name: "poptrie16",
                summary: "Poptrie: 64-ary popcount-compressed trie, direct pointing of 16 bits",
                settings: "s=16",
            },
            Preset {
                name: "poptrie18",
                summary: "Poptrie: 64-ary popcount-compressed trie, direct pointing of 18 bits",
                settings: "s=18",
            },
        ],
    )
    .v4::<Poptrie<Ipv4>>()
    .v6::<Poptrie<Ipv6>>(),
    SchemeFamily::new(
        "dxr",
        "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        &[
            Preset {
                name: "d16r",
                summary: "DXR D16R: 2^16-entry lookup table, binary search on 16/32-bit ranges (the paper's smallest)",
                settings: "k=16",
            },
            Preset {
                name: "d17r",
                summary: "DXR D17R: 2^17-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=17",
            },
            Preset {
                name: "d18r",
                summary: "DXR D18R: 2^18-entry lookup table, binary search on 16/32-bit ranges (the paper's fastest)",
                settings: "k=18",
            },
            Preset {
                name: "d19r",
                summary: "DXR D19R: 2^19-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=19",
            },
            Preset {
                name: "d20r",
                summary: "DXR D20R: 2^20-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=20",
            },
            Preset {
                name: "d21r",
                summary: "DXR D21R: 2^21-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=21",
            },
            Preset {
                name: "d22r",
                summary: "DXR D22R: 2^22-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=22",
            },
            Preset {
                name: "d23r",
                summary: "DXR D23R: 2^23-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=23",
            },
            Preset {
                name: "d24r",
                summary: "DXR D24R: 2^24-entry lookup table, binary search on 16/32-bit ranges",
                settings: "k=24",
            },
        ],
    )
    .v4::<Dxr>(),
    SchemeFamily::new(
        "lulea",
        "Degermark, Brodnik, Carlsson, Pink, SIGCOMM 1997, §4 (the OBMA paper's Lulea baseline)",
        &[Preset {
            name: "lulea",
            summary: "Lulea: 16-8-8 trie, 16-bit masks with codewords, base indices and a maptable; sparse/dense/very dense chunks",
            settings: "",
        }],
    )
    .v4::<Lulea>(),
    SchemeFamily::new(
        "obma",
        "Zhang, Feng, Song, Wan, Xu, Liu, \"OBMA: Scalable Route Lookups with Fast and Zero-interrupt Updates\", §III-VI",
        &[
            Preset {
                name: "obma-b",
                summary: "OBMA_B: [18-6-8] DPA + chunks of overlay-bitmap groups, adaptive grouping, 24th-level updates",
                settings: "variant=b",
            },
            Preset {
                name: "obma-l",
                summary: "OBMA_L: fixed [0-3-3]/[0-5-3] groups, chunk lists point at groups (fastest lookups)",
                settings: "variant=l",
            },
            Preset {
                name: "obma-s",
                summary: "OBMA_S: OBMA_B with Bit Inversion Sequences and sparse chunks (K = 4): the smallest",
                settings: "variant=s",
            },
            Preset {
                name: "obma-s-minus",
                summary: "OBMA_S-minus: OBMA_S without sparse chunks (Fig. 16)",
                settings: "variant=s,sparse=0",
            },
            Preset {
                name: "obma-b-123",
                summary: "OBMA_B with fixed (1-2-3) groups (Table IV)",
                settings: "variant=b,grouping=1",
            },
            Preset {
                name: "obma-b-213",
                summary: "OBMA_B with fixed (2-1-3) groups (Table IV)",
                settings: "variant=b,grouping=2",
            },
            Preset {
                name: "obma-b-303",
                summary: "OBMA_B with fixed (3-0-3) groups (Table IV)",
                settings: "variant=b,grouping=3",
            },
            Preset {
                name: "obma-b-fixed",
                summary: "OBMA_B without adaptive grouping: one group per chunk (Table IV's adaptive grouping-minus)",
                settings: "variant=b,grouping=0",
            },
        ],
    )
    .v4::<Obma<Ipv4>>()
    .v6::<Obma<Ipv6>>(),
    SchemeFamily::new(
        "sail",
        "Yang et al., SIGCOMM 2014, §3-4 (SAIL_B, SAIL_U, SAIL_L); the OBMA paper's SAIL baseline",
        &[
            Preset {
                name: "sail-b",
                summary: "SAIL_B: bitmap and next-hop arrays for levels 0..24, chunks for 25..32 (pivot pushing at 24)",
                settings: "variant=b",
            },
            Preset {
                name: "sail-u",
                summary: "SAIL_U: leaf pushing to pivot levels 16/24/32, bitmaps kept; updates touch at most 2^8 entries",
                settings: "variant=u",
            },
        ],
    )
    .v4::<SailBitmap>(),
    SchemeFamily::new(
        "sail-l",
        "Yang et al., SIGCOMM 2014, §3-4 (SAIL_B, SAIL_U, SAIL_L); the OBMA paper's SAIL baseline",
        &[Preset {
                name: "sail-l",
                summary: "SAIL_L: pivot pushing to 16/24/32, next hops and chunk IDs in one array per level",
                settings: "",
            }],
    )
    .v4::<SailL<Ipv4>>(),
    SchemeFamily::new(
        "sail-m",
        "Yang et al., SIGCOMM 2014 (SAIL for IPv6: SAIL_L with pivot levels 16, 24, ..., 128)",
        &[Preset {
            name: "sail-m",
            summary: "SAIL_L for IPv6: pivot pushing to levels 16, 24, ..., 128, chunk-ID arrays of 256",
            settings: "",
        }],
    )
    .v6::<SailL<Ipv6>>(),
    SchemeFamily::new(
        "spider",
        "Ueno et al., IEEE Access 8 (2020) §III, Alg. 1-2; NetSoft 2020",
        &[
            Preset {
                name: "spider16w",
                summary: "Spider: 8-bit-stride state-jump table, AVX2 gathers, two fused 8-lane streams",
                settings: "ways=16",
            },
            Preset {
                name: "spider8w",
                summary: "Spider with one 8-lane AVX2 stream (no loop fusion)",
                settings: "ways=8",
            },
            Preset {
                name: "spider1w",
                summary: "Spider's table walked by scalar code, one address at a time",
                settings: "ways=1,scalar=true",
            },
        ],
    )
    .v4::<Spider<Ipv4>>()
    .v6::<Spider<Ipv6>>(),
    SchemeFamily::new(
        "planb",
        "Zhang, Liu, Chen, Li, Shu, Hsu, Zhang, \"PlanB: Efficient Software IPv6 Lookup with Linearized B+-Tree\", NSDI '26 (arXiv:2604.14650)",
        &[
            Preset {
                name: "planb",
                summary: "PlanB: elementary intervals in a linearized B+-tree, 8 x 64-bit keys per node (IPv4: 16 x 32-bit), batched branch-free search, AVX2",
                settings: "",
            },
            Preset {
                name: "planb-front",
                summary: "PlanB with 32-bit keys and a front: one perfect-hashed line per /32 holding its intervals (IPv6), a 16-bit direct table (IPv4)",
                settings: "key_bits=32,front=on",
            },
        ],
    )
    .v4::<Planb<Ipv4>>()
    .v6::<Planb<Ipv6>>(),
    SchemeFamily::new(
        "bloom",
        "Lucchesi, Drummond, Teodoro 2018 (Bloomfwd), §3-4; Dharmapurikar et al., ToN 14(2) 2006",
        &[
            Preset {
                name: "bloom-naive",
                summary: "Bloom-filter LPM, naive: a counting filter + hash table per length, C rand() hashing",
                settings: "variant=naive",
            },
            Preset {
                name: "bloom-base",
                summary: "Bloom-filter LPM, baseline: asymmetric counting filters, IPv4 CPE (2^20 DLA + /24 + /32)",
                settings: "variant=base",
            },
            Preset {
                name: "bloomfwd",
                summary: "Bloomfwd: H2/Murmur hashing 8 keys at a time (AVX2), double hashing, hash reuse, IPv6 DPCPE",
                settings: "variant=fwd",
            },
        ],
    )
    .v4::<Bloom<Ipv4>>()
    .v6::<Bloom<Ipv6>>(),
    SchemeFamily::new(
        "miht",
        "Lin, Hsu, Hsieh, IEEE TPDS 25(10) 2014; as evaluated in the Bloomfwd paper, §5",
        &[Preset {
            name: "miht",
            summary: "Multi-Index Hybrid Trie: B+ tree of order m on k-bit prefix keys + priority tries; (16,16) IPv4, (32,32) IPv6",
            settings: "",
        }],
    )
    .v4::<Miht<Ipv4>>()
    .v6::<Miht<Ipv6>>(),
    #[cfg(all(feature = "dpdk", target_os = "linux"))]
    SchemeFamily::new(
        "dpdk-fib",
        "DPDK 22.11 librte_fib; Gupta, Lin, McKeown, INFOCOM 1998",
        &[
            Preset {
                name: "dpdk-fib",
                summary: "DPDK rte_fib DIR24_8 (IPv4) and rte_fib6 trie (IPv6), scalar bulk lookup, linked (feature `dpdk`)",
                settings: "simd=scalar",
            },
            Preset {
                name: "dpdk-fib-avx512",
                summary: "dpdk-fib with DPDK's AVX-512 vector lookups (registered where the CPU has AVX-512)",
                settings: "simd=avx512",
            },
        ],
    )
    .v4::<DpdkFib<Ipv4>>()
    .v6::<DpdkFib<Ipv6>>(),
];

/// Whether a preset runs on this machine: one that fixes `simd=avx512` needs a CPU with
/// AVX-512 (F, BW, DQ, VL), and is not registered elsewhere.
pub(super) fn preset_runs_here(preset: &Preset) -> bool {
    let avx512 = preset
        .settings
        .split(',')
        .any(|kv| kv.trim().replace(' ', "") == "simd=avx512");
    !avx512 || crate::simd::Avx512::detect().is_some()
}

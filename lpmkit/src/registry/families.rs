//! The registry's rows: one [`SchemeFamily`] per scheme family, with its presets, the
//! settings it understands, and the adapters that turn settings into the scheme's own
//! config. A new scheme adds its row here; schemes never import the registry.

use super::bloom::{
    build_bloom, build_bloom_in_place, build_bloom_incremental, build_miht, build_miht_in_place,
    build_miht_incremental, BLOOM_SETTINGS, MIHT_SETTINGS,
};
use super::obma::{build_obma, build_obma_in_place, build_obma_incremental, OBMA_SETTINGS};
use super::{BuildFn, Builders, Preset, SchemeFamily, Settings};
use crate::fib::{BuildError, Fib, IncrementalFib};
use crate::prefix::{Address, Ipv4, Ipv6};
use crate::rib::Rib;
use crate::schemes;
use crate::sync::{InPlace, Updater};
use crate::BuildOptions;

const NO_SETTINGS: &[(&str, &str)] = &[];

fn build_trie<A: Address>(rib: &Rib<A>, o: &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError> {
    Settings::new("trie", o, NO_SETTINGS)?;
    Ok(Box::new(rib.clone()))
}

const DIR24_8_SETTINGS: &[(&str, &str)] = &[(
    "width",
    "entry width, 16 or 32 (default: the narrowest that holds the table)",
)];

fn build_dir24_8_v4(rib: &Rib<Ipv4>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv4>>, BuildError> {
    let s = Settings::new("dir24-8", o, DIR24_8_SETTINGS)?;
    let config = schemes::dir24_8::Dir24_8Config {
        entry_width: s.width("width")?,
        force_scalar: o.force_scalar,
        isa: o.isa,
    };
    Ok(Box::new(schemes::dir24_8::Dir24_8::build(rib, &config)?))
}

fn build_dir24_8_v6(rib: &Rib<Ipv6>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv6>>, BuildError> {
    let s = Settings::new("dir24-8", o, DIR24_8_SETTINGS)?;
    let config = schemes::dir24_8::Dir24_8Config {
        entry_width: s.width("width")?,
        force_scalar: o.force_scalar,
        isa: o.isa,
    };
    Ok(Box::new(schemes::dir24_8::Dir24_8V6::build(rib, &config)?))
}

const POPTRIE_SETTINGS: &[(&str, &str)] = &[
    ("s", "bits resolved by the direct-pointing table, 0..=24"),
    (
        "leaf_width",
        "leaf width, 16 or 32 (default: the narrowest that holds the table)",
    ),
];

fn poptrie_config(o: &BuildOptions) -> Result<schemes::poptrie::PoptrieConfig, BuildError> {
    let s = Settings::new("poptrie", o, POPTRIE_SETTINGS)?;
    Ok(schemes::poptrie::PoptrieConfig {
        direct_bits: s.get("s")?.unwrap_or(18),
        leaf_width: s.width("leaf_width")?,
        force_scalar: o.force_scalar,
        isa: o.isa,
    })
}

fn build_poptrie<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(schemes::poptrie::Poptrie::build(
        rib,
        &poptrie_config(o)?,
    )?))
}

fn build_poptrie_incremental<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    Ok(Box::new(schemes::poptrie::Poptrie::build(
        rib,
        &poptrie_config(o)?,
    )?))
}

fn build_poptrie_in_place<A: Address>(
    rib: Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let fib = schemes::poptrie::Poptrie::build(&rib, &poptrie_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

const DXR_SETTINGS: &[(&str, &str)] = &[
    (
        "k",
        "direct bits: the lookup table has 2^k entries, 16..=24",
    ),
    (
        "widen",
        "recover bits past the paper's limits (true) or refuse (false)",
    ),
    (
        "remap",
        "next-hop descriptor table: true, false (default: when ids exceed 65,535)",
    ),
    (
        "compact_threshold",
        "compact the range table when free space passes this share",
    ),
    (
        "full_rebuild_share",
        "rebuild everything when one update dirties this share of chunks",
    ),
];

fn dxr_config(o: &BuildOptions) -> Result<schemes::dxr::DxrConfig, BuildError> {
    let s = Settings::new("dxr", o, DXR_SETTINGS)?;
    let d = schemes::dxr::DxrConfig::with_k(s.get("k")?.unwrap_or(18));
    Ok(schemes::dxr::DxrConfig {
        widen: s.get("widen")?.unwrap_or(d.widen),
        remap_next_hops: s.get("remap")?.or(d.remap_next_hops),
        compact_threshold: s.get("compact_threshold")?.unwrap_or(d.compact_threshold),
        full_rebuild_share: s.get("full_rebuild_share")?.unwrap_or(d.full_rebuild_share),
        force_scalar: o.force_scalar,
        isa: o.isa,
        ..d
    })
}

fn build_dxr(rib: &Rib<Ipv4>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv4>>, BuildError> {
    Ok(Box::new(schemes::dxr::Dxr::build(rib, &dxr_config(o)?)?))
}

fn build_dxr_incremental(
    rib: &Rib<Ipv4>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<Ipv4>>, BuildError> {
    Ok(Box::new(schemes::dxr::Dxr::build(rib, &dxr_config(o)?)?))
}

fn build_dxr_in_place(
    rib: Rib<Ipv4>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<Ipv4>>, BuildError> {
    let fib = schemes::dxr::Dxr::build(&rib, &dxr_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

const LULEA_SETTINGS: &[(&str, &str)] = &[(
    "pointer_width",
    "pointer width, 16 or 32 (default: the narrowest that holds the table)",
)];

fn lulea_config(o: &BuildOptions) -> Result<schemes::lulea::LuleaConfig, BuildError> {
    let s = Settings::new("lulea", o, LULEA_SETTINGS)?;
    Ok(schemes::lulea::LuleaConfig {
        pointer_width: s.width("pointer_width")?,
        force_scalar: o.force_scalar,
    })
}

fn build_lulea(rib: &Rib<Ipv4>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv4>>, BuildError> {
    Ok(Box::new(schemes::lulea::Lulea::build(
        rib,
        &lulea_config(o)?,
    )?))
}

fn build_lulea_incremental(
    rib: &Rib<Ipv4>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<Ipv4>>, BuildError> {
    Ok(Box::new(schemes::lulea::Lulea::build(
        rib,
        &lulea_config(o)?,
    )?))
}

fn build_lulea_in_place(
    rib: Rib<Ipv4>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<Ipv4>>, BuildError> {
    let fib = schemes::lulea::Lulea::build(&rib, &lulea_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

const SAIL_SETTINGS: &[(&str, &str)] = &[
    (
        "variant",
        "b (SAIL_B: bitmaps of every level 0..24), u (SAIL_U: pivot levels 16/24/32 with bitmaps), l (SAIL_L: pivot pushing, chunk-ID arrays)",
    ),
    (
        "pivots",
        "SAIL_L pivot levels, ':'-separated, ending at the address width (default 16:24:32; IPv6 16:24:...:128)",
    ),
    (
        "width",
        "entry width, 16 or 32 (default: the narrowest that holds the table)",
    ),
];

/// The SAIL_L settings for family `A` (`sail-l`, `sail-m`).
fn sail_l_config<A: Address>(
    o: &BuildOptions,
    name: &str,
) -> Result<schemes::sail::SailLConfig, BuildError> {
    let s = Settings::new(name, o, SAIL_SETTINGS)?;
    let mut cfg = schemes::sail::SailLConfig::for_family::<A>();
    if let Some(p) = s.get::<String>("pivots")? {
        cfg.pivots = p
            .split(':')
            .map(|x| x.trim().parse::<u8>())
            .collect::<Result<_, _>>()
            .map_err(|_| BuildError::InvalidConfig {
                scheme: name.into(),
                reason: format!("pivots={p:?} is not a ':'-separated list of levels"),
            })?;
    }
    cfg.entry_width = s.width("width")?;
    cfg.force_scalar = o.force_scalar;
    cfg.isa = o.isa;
    Ok(cfg)
}

/// What a `sail` preset builds.
enum SailBuilt {
    Bitmap(schemes::sail::SailBitmap),
    Pivot(schemes::sail::SailL<Ipv4>),
}

fn sail_v4(rib: &Rib<Ipv4>, o: &BuildOptions) -> Result<SailBuilt, BuildError> {
    let s = Settings::new("sail", o, SAIL_SETTINGS)?;
    let width = s.width("width")?;
    let bitmap = |update_oriented| schemes::sail::SailBitmapConfig {
        update_oriented,
        entry_width: width,
    };
    Ok(
        match s.get::<String>("variant")?.as_deref().unwrap_or("l") {
            "b" => SailBuilt::Bitmap(schemes::sail::SailBitmap::build(rib, &bitmap(false))?),
            "u" => SailBuilt::Bitmap(schemes::sail::SailBitmap::build(rib, &bitmap(true))?),
            "l" => SailBuilt::Pivot(schemes::sail::SailL::build(
                rib,
                &sail_l_config::<Ipv4>(o, "sail-l")?,
            )?),
            v => {
                return Err(BuildError::InvalidConfig {
                    scheme: "sail".into(),
                    reason: format!("variant={v:?} is not b, u or l"),
                })
            }
        },
    )
}

fn build_sail(rib: &Rib<Ipv4>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv4>>, BuildError> {
    Ok(match sail_v4(rib, o)? {
        SailBuilt::Bitmap(f) => Box::new(f),
        SailBuilt::Pivot(f) => Box::new(f),
    })
}

fn build_sail_incremental(
    rib: &Rib<Ipv4>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<Ipv4>>, BuildError> {
    Ok(match sail_v4(rib, o)? {
        SailBuilt::Bitmap(f) => Box::new(f),
        SailBuilt::Pivot(f) => Box::new(f),
    })
}

fn build_sail_in_place(
    rib: Rib<Ipv4>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<Ipv4>>, BuildError> {
    Ok(match sail_v4(&rib, o)? {
        SailBuilt::Bitmap(f) => Box::new(InPlace::new(rib, f)),
        SailBuilt::Pivot(f) => Box::new(InPlace::new(rib, f)),
    })
}

fn build_sail_m(rib: &Rib<Ipv6>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv6>>, BuildError> {
    let cfg = sail_l_config::<Ipv6>(o, "sail-m")?;
    Ok(Box::new(schemes::sail::SailL::build(rib, &cfg)?))
}

fn build_sail_m_incremental(
    rib: &Rib<Ipv6>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<Ipv6>>, BuildError> {
    let cfg = sail_l_config::<Ipv6>(o, "sail-m")?;
    Ok(Box::new(schemes::sail::SailL::build(rib, &cfg)?))
}

fn build_sail_m_in_place(
    rib: Rib<Ipv6>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<Ipv6>>, BuildError> {
    let cfg = sail_l_config::<Ipv6>(o, "sail-m")?;
    let fib = schemes::sail::SailL::build(&rib, &cfg)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

const SPIDER_SETTINGS: &[(&str, &str)] = &[
    ("ways", "lanes looked up together, 1..=16"),
    (
        "scalar",
        "walk the table with scalar code, one address at a time (spider1w)",
    ),
    (
        "pipeline",
        "AVX2: keep 16 blocks of `ways` lanes in flight with prefetches (default true); false runs the paper's loop, one block at a time",
    ),
];

fn build_spider<A: Address>(rib: &Rib<A>, o: &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError>
where
    schemes::spider::Spider<A>: Fib<A>,
{
    let s = Settings::new("spider", o, SPIDER_SETTINGS)?;
    let config = schemes::spider::SpiderConfig {
        ways: o.ways.or(s.get("ways")?).unwrap_or(16),
        force_scalar: o.force_scalar || s.get("scalar")?.unwrap_or(false),
        isa: o.isa,
        pipeline: s.get("pipeline")?.unwrap_or(true),
        ..Default::default()
    };
    Ok(Box::new(schemes::spider::Spider::<A>::build(rib, &config)?))
}

#[cfg(all(feature = "dpdk", target_os = "linux"))]
const DPDK_SETTINGS: &[(&str, &str)] = &[(
    "simd",
    "DPDK's lookup: scalar (default) or avx512 (its vector lookups, with the EAL's SIMD width raised to 512 bits)",
)];

#[cfg(all(feature = "dpdk", target_os = "linux"))]
fn build_dpdk<A: schemes::dpdk::DpdkAddress>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    use schemes::dpdk::{DpdkConfig, DpdkLookup};
    let s = Settings::new("dpdk-fib", o, DPDK_SETTINGS)?;
    let lookup = match s.get::<String>("simd")?.as_deref().unwrap_or("scalar") {
        "scalar" => DpdkLookup::Scalar,
        "avx512" => DpdkLookup::Avx512,
        v => {
            return Err(BuildError::InvalidConfig {
                scheme: "dpdk-fib".into(),
                reason: format!("simd={v:?} is not scalar or avx512"),
            })
        }
    };
    let isa = if o.force_scalar {
        Some(crate::simd::Isa::Scalar)
    } else {
        o.isa
    };
    Ok(Box::new(schemes::dpdk::DpdkFib::<A>::build(
        rib,
        &DpdkConfig::new(lookup, isa),
    )?))
}

/// Whether a preset runs on this machine: one that fixes `simd=avx512` needs a CPU with
/// AVX-512 (F, BW, DQ, VL), and is not registered elsewhere.
pub(super) fn preset_runs_here(preset: &Preset) -> bool {
    let avx512 = preset
        .settings
        .split(',')
        .any(|kv| kv.trim().replace(' ', "") == "simd=avx512");
    !avx512 || crate::simd::Avx512::detect().is_some()
}

/// A family that only builds lookup structures.
const fn static_only<A: Address>(build: BuildFn<A>) -> Option<Builders<A>> {
    Some(Builders {
        build,
        incremental: None,
        in_place: None,
    })
}

/// Every scheme family, in the order `lpmkit schemes` lists them.
pub(super) static FAMILIES: &[SchemeFamily] = &[
    SchemeFamily {
        name: "trie",
        reference: "lpmkit::Rib",
        settings: NO_SETTINGS,
        presets: &[Preset {
            name: "trie",
            summary: "the reference path-compressed binary trie (the Rib itself)",
            settings: "",
        }],
        v4: static_only(build_trie::<Ipv4>),
        v6: static_only(build_trie::<Ipv6>),
    },
    SchemeFamily {
        name: "dir24-8",
        reference: "Gupta, Lin, McKeown, INFOCOM 1998; DPDK rte_fib dir24_8 (IPv4), rte_lpm6 (IPv6)",
        settings: DIR24_8_SETTINGS,
        presets: &[Preset {
            name: "dir24-8",
            summary: "DIR-24-8: 2^24-entry first table plus 256-entry second-level groups",
            settings: "",
        }],
        v4: static_only(build_dir24_8_v4),
        v6: static_only(build_dir24_8_v6),
    },
    SchemeFamily {
        name: "poptrie",
        reference: "Asai, Ohara, SIGCOMM 2015",
        settings: POPTRIE_SETTINGS,
        presets: &[
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
        v4: Some(Builders {
            build: build_poptrie::<Ipv4>,
            incremental: Some(build_poptrie_incremental::<Ipv4>),
            in_place: Some(build_poptrie_in_place::<Ipv4>),
        }),
        v6: Some(Builders {
            build: build_poptrie::<Ipv6>,
            incremental: Some(build_poptrie_incremental::<Ipv6>),
            in_place: Some(build_poptrie_in_place::<Ipv6>),
        }),
    },
    SchemeFamily {
        name: "dxr",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        settings: DXR_SETTINGS,
        presets: &[
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
        v4: Some(Builders {
            build: build_dxr,
            incremental: Some(build_dxr_incremental),
            in_place: Some(build_dxr_in_place),
        }),
        v6: None,
    },
    SchemeFamily {
        name: "lulea",
        reference: "Degermark, Brodnik, Carlsson, Pink, SIGCOMM 1997, §4 (the OBMA paper's Lulea baseline)",
        settings: LULEA_SETTINGS,
        presets: &[Preset {
            name: "lulea",
            summary: "Lulea: 16-8-8 trie, 16-bit masks with codewords, base indices and a maptable; sparse/dense/very dense chunks",
            settings: "",
        }],
        v4: Some(Builders {
            build: build_lulea,
            incremental: Some(build_lulea_incremental),
            in_place: Some(build_lulea_in_place),
        }),
        v6: None,
    },
    SchemeFamily {
        name: "obma",
        reference: "Zhang, Feng, Song, Wan, Xu, Liu, \"OBMA: Scalable Route Lookups with Fast and Zero-interrupt Updates\", §III-VI",
        settings: OBMA_SETTINGS,
        presets: &[
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
        v4: Some(Builders {
            build: build_obma::<Ipv4>,
            incremental: Some(build_obma_incremental::<Ipv4>),
            in_place: Some(build_obma_in_place::<Ipv4>),
        }),
        v6: Some(Builders {
            build: build_obma::<Ipv6>,
            incremental: Some(build_obma_incremental::<Ipv6>),
            in_place: Some(build_obma_in_place::<Ipv6>),
        }),
    },
    SchemeFamily {
        name: "sail",
        reference: "Yang et al., SIGCOMM 2014, §3-4 (SAIL_B, SAIL_U, SAIL_L); the OBMA paper's SAIL baseline",
        settings: SAIL_SETTINGS,
        presets: &[
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
            Preset {
                name: "sail-l",
                summary: "SAIL_L: pivot pushing to 16/24/32, next hops and chunk IDs in one array per level",
                settings: "variant=l",
            },
        ],
        v4: Some(Builders {
            build: build_sail,
            incremental: Some(build_sail_incremental),
            in_place: Some(build_sail_in_place),
        }),
        v6: None,
    },
    SchemeFamily {
        name: "sail-m",
        reference: "Yang et al., SIGCOMM 2014 (SAIL for IPv6: SAIL_L with pivot levels 16, 24, ..., 128)",
        settings: SAIL_SETTINGS,
        presets: &[Preset {
            name: "sail-m",
            summary: "SAIL_L for IPv6: pivot pushing to levels 16, 24, ..., 128, chunk-ID arrays of 256",
            settings: "",
        }],
        v4: None,
        v6: Some(Builders {
            build: build_sail_m,
            incremental: Some(build_sail_m_incremental),
            in_place: Some(build_sail_m_in_place),
        }),
    },
    SchemeFamily {
        name: "spider",
        reference: "Ueno et al., IEEE Access 8 (2020) §III, Alg. 1-2; NetSoft 2020",
        settings: SPIDER_SETTINGS,
        presets: &[
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
        v4: static_only(build_spider::<Ipv4>),
        v6: static_only(build_spider::<Ipv6>),
    },
    SchemeFamily {
        name: "bloom",
        reference: "Lucchesi, Drummond, Teodoro 2018 (Bloomfwd), §3-4; Dharmapurikar et al., ToN 14(2) 2006",
        settings: BLOOM_SETTINGS,
        presets: &[
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
        v4: Some(Builders {
            build: build_bloom::<Ipv4>,
            incremental: Some(build_bloom_incremental::<Ipv4>),
            // One instance with validated reads (`InPlaceWriter::VALIDATED_READS`: a
            // batch is looked up again if a patch began meanwhile; docs/bloom.md).
            in_place: Some(build_bloom_in_place::<Ipv4>),
        }),
        v6: Some(Builders {
            build: build_bloom::<Ipv6>,
            incremental: Some(build_bloom_incremental::<Ipv6>),
            // One instance with validated reads (`InPlaceWriter::VALIDATED_READS`: a
            // batch is looked up again if a patch began meanwhile; docs/bloom.md).
            in_place: Some(build_bloom_in_place::<Ipv6>),
        }),
    },
    SchemeFamily {
        name: "miht",
        reference: "Lin, Hsu, Hsieh, IEEE TPDS 25(10) 2014; as evaluated in the Bloomfwd paper, §5",
        settings: MIHT_SETTINGS,
        presets: &[Preset {
            name: "miht",
            summary: "Multi-Index Hybrid Trie: B+ tree of order m on k-bit prefix keys + priority tries; (16,16) IPv4, (32,32) IPv6",
            settings: "",
        }],
        v4: Some(Builders {
            build: build_miht::<Ipv4>,
            incremental: Some(build_miht_incremental::<Ipv4>),
            in_place: Some(build_miht_in_place::<Ipv4>),
        }),
        v6: Some(Builders {
            build: build_miht::<Ipv6>,
            incremental: Some(build_miht_incremental::<Ipv6>),
            in_place: Some(build_miht_in_place::<Ipv6>),
        }),
    },
    #[cfg(all(feature = "dpdk", target_os = "linux"))]
    SchemeFamily {
        name: "dpdk-fib",
        reference: "DPDK 22.11 librte_fib; Gupta, Lin, McKeown, INFOCOM 1998",
        settings: DPDK_SETTINGS,
        presets: &[
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
        v4: static_only(build_dpdk::<Ipv4>),
        v6: static_only(build_dpdk::<Ipv6>),
    },
];

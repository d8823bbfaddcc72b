//! The scheme registry: every scheme by name, for generic code.
//!
//! The CLI, the differential tests and the benchmarks never name a scheme type: they walk
//! [`schemes()`] (or [`find`] one by name) and build it for a family through
//! [`SchemeInfo::build`]. The registry *adapts* schemes — turns [`BuildOptions`] and scheme
//! settings into each scheme's own config — and schemes never import it.
//!
//! One row per scheme family ([`SchemeFamily`]): its builders per address family, what
//! update models it supports, the settings it understands, and its presets — the names the
//! papers use (`d16r` … `d24r` are DXR with `k=16` … `k=24`). Every preset is a
//! [`SchemeInfo`]. Adding a scheme is one module plus one row.
//!
//! ```
//! use lpmkit::{registry, Ipv4, NextHop, Rib};
//!
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
//! for info in registry::schemes_for(lpmkit::Family::V4) {
//!     let fib = info.build(&rib, &Default::default())?;
//!     assert_eq!(fib.lookup(0x0a00_0001), NextHop::new(1), "{}", info.name);
//! }
//! // A preset, with a setting it leaves open.
//! let opts = lpmkit::BuildOptions::default().with_settings("widen=false")?;
//! let d20r = registry::find("d20r").unwrap().build(&rib, &opts)?;
//! assert_eq!(d20r.name(), "d20r");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::any::Any;
use core::fmt;
use core::str::FromStr;
use std::sync::OnceLock;

pub use crate::fib::BuildOptions;
use crate::fib::{BuildError, Fib, IncrementalFib};
use crate::prefix::{Address, Family, Ipv4, Ipv6};
use crate::rib::Rib;
use crate::schemes;
use crate::schemes::Width;
use crate::sync::{InPlace, Updater};

/// Builds a scheme for family `A` from a `Rib`.
pub type BuildFn<A> = fn(&Rib<A>, &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError>;
/// Builds an incremental scheme (for [`crate::sync::TwinUpdater`]).
pub type IncrementalBuildFn<A> =
    fn(&Rib<A>, &BuildOptions) -> Result<Box<dyn IncrementalFib<A>>, BuildError>;
/// Builds a scheme and the one-instance in-place updater that owns it and the `Rib`.
pub type InPlaceBuildFn<A> = fn(Rib<A>, &BuildOptions) -> Result<Box<dyn Updater<A>>, BuildError>;

/// What a scheme family offers for one address family.
pub struct Builders<A: Address> {
    /// The lookup structure.
    pub build: BuildFn<A>,
    /// As an [`IncrementalFib`], if it patches itself.
    pub incremental: Option<IncrementalBuildFn<A>>,
    /// As a one-instance in-place updater, if readers may look up while it is patched.
    pub in_place: Option<InPlaceBuildFn<A>>,
}

/// A named configuration of a scheme family: the names the papers use.
#[derive(Debug)]
pub struct Preset {
    /// Registry name (`d18r`, `poptrie16`, `spider8w`, …).
    pub name: &'static str,
    /// One line for listings.
    pub summary: &'static str,
    /// The settings it fixes (`key=value,…`); options given at build time come after.
    pub settings: &'static str,
}

/// One row of the registry: a scheme family.
pub struct SchemeFamily {
    /// The family's name (`dxr`, `poptrie`, …).
    pub name: &'static str,
    /// Where the scheme is described.
    pub reference: &'static str,
    /// The settings it understands: `(key, what it means)`.
    pub settings: &'static [(&'static str, &'static str)],
    /// Its presets (at least one).
    pub presets: &'static [Preset],
    v4: Option<Builders<Ipv4>>,
    v6: Option<Builders<Ipv6>>,
}

impl SchemeFamily {
    fn builders<A: Address>(&self) -> Option<&Builders<A>> {
        let any: &dyn Any = match A::FAMILY {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        };
        any.downcast_ref::<Option<Builders<A>>>()
            .expect("family and address type agree")
            .as_ref()
    }
}

impl fmt::Debug for SchemeFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemeFamily")
            .field("name", &self.name)
            .field("presets", &self.presets)
            .finish()
    }
}

/// A registered scheme: one preset of a family.
pub struct SchemeInfo {
    /// Registry name, as the papers name the scheme (`dir24-8`, `d18r`, `spider16w`, …).
    pub name: &'static str,
    /// One line for `--help` and listings.
    pub summary: &'static str,
    /// Where the scheme is described.
    pub reference: &'static str,
    /// True if the scheme also implements [`IncrementalFib`].
    pub incremental: bool,
    family: &'static SchemeFamily,
    preset: &'static Preset,
}

impl SchemeInfo {
    /// True if the scheme handles `family`.
    pub fn supports(&self, family: Family) -> bool {
        match family {
            Family::V4 => self.family.v4.is_some(),
            Family::V6 => self.family.v6.is_some(),
        }
    }

    /// The families the scheme handles.
    pub fn families(&self) -> Vec<Family> {
        [Family::V4, Family::V6]
            .into_iter()
            .filter(|&f| self.supports(f))
            .collect()
    }

    /// The scheme family's row.
    pub fn family(&self) -> &'static SchemeFamily {
        self.family
    }

    /// The settings this preset fixes (`key=value,…`).
    pub fn preset_settings(&self) -> &'static str {
        self.preset.settings
    }

    /// True if the scheme can be patched in place, as one instance, while readers look up
    /// ([`build_in_place`](Self::build_in_place)).
    pub fn updates_in_place(&self) -> bool {
        self.family
            .v4
            .as_ref()
            .is_some_and(|b| b.in_place.is_some())
            || self
                .family
                .v6
                .as_ref()
                .is_some_and(|b| b.in_place.is_some())
    }

    /// `options` with this preset's settings first.
    fn options(&self, options: &BuildOptions) -> BuildOptions {
        let mut o = BuildOptions::default()
            .with_settings(self.preset.settings)
            .expect("preset settings are key=value");
        o.force_scalar = options.force_scalar;
        o.ways = options.ways;
        o.settings.extend(options.settings.iter().cloned());
        o
    }

    fn builders<A: Address>(&self) -> Result<&Builders<A>, BuildError> {
        self.family
            .builders::<A>()
            .ok_or_else(|| BuildError::UnsupportedFamily {
                scheme: self.name.to_string(),
                family: A::FAMILY,
            })
    }

    /// Builds the scheme from `rib`.
    pub fn build<A: Address>(
        &self,
        rib: &Rib<A>,
        options: &BuildOptions,
    ) -> Result<Box<dyn Fib<A>>, BuildError> {
        (self.builders::<A>()?.build)(rib, &self.options(options))
    }

    /// Builds the scheme as an [`IncrementalFib`] (to patch on one thread, or through a
    /// [`crate::sync::TwinUpdater`]).
    pub fn build_incremental<A: Address>(
        &self,
        rib: &Rib<A>,
        options: &BuildOptions,
    ) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
        let build = self
            .builders::<A>()?
            .incremental
            .ok_or_else(|| not_offered(self, "in-place updates"))?;
        build(rib, &self.options(options))
    }

    /// Builds the scheme inside a one-instance in-place updater
    /// ([`crate::sync::InPlace`]) that takes over `rib`.
    pub fn build_in_place<A: Address>(
        &self,
        rib: Rib<A>,
        options: &BuildOptions,
    ) -> Result<Box<dyn Updater<A>>, BuildError> {
        let build = self
            .builders::<A>()?
            .in_place
            .ok_or_else(|| not_offered(self, "one-instance updates under readers"))?;
        build(rib, &self.options(options))
    }
}

fn not_offered(info: &SchemeInfo, what: &str) -> BuildError {
    BuildError::InvalidConfig {
        scheme: info.name.to_string(),
        reason: format!("{} does not offer {what}", info.name),
    }
}

impl fmt::Debug for SchemeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchemeInfo")
            .field("name", &self.name)
            .field("families", &self.families())
            .finish()
    }
}

/// Reads the settings a scheme understands: unknown keys and bad values are errors.
struct Settings<'a> {
    scheme: &'a str,
    options: &'a BuildOptions,
}

impl<'a> Settings<'a> {
    /// Checks that every setting given is one of `known`.
    fn new(
        scheme: &'a str,
        options: &'a BuildOptions,
        known: &[(&str, &str)],
    ) -> Result<Self, BuildError> {
        for (k, _) in &options.settings {
            if !known.iter().any(|(n, _)| n == k) {
                let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
                return Err(BuildError::InvalidConfig {
                    scheme: scheme.to_string(),
                    reason: format!(
                        "unknown setting {k:?} (it understands: {})",
                        if names.is_empty() {
                            "none".to_string()
                        } else {
                            names.join(", ")
                        }
                    ),
                });
            }
        }
        Ok(Settings { scheme, options })
    }

    fn get<T: FromStr>(&self, key: &str) -> Result<Option<T>, BuildError> {
        match self.options.setting(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| BuildError::InvalidConfig {
                scheme: self.scheme.to_string(),
                reason: format!("setting {key}={v:?} is not a valid value"),
            }),
        }
    }

    fn width(&self, key: &str) -> Result<Option<Width>, BuildError> {
        Ok(match self.get::<u32>(key)? {
            None => None,
            Some(16) => Some(Width::U16),
            Some(32) => Some(Width::U32),
            Some(v) => {
                return Err(BuildError::InvalidConfig {
                    scheme: self.scheme.to_string(),
                    reason: format!("setting {key}={v} is not a width (16 or 32)"),
                })
            }
        })
    }
}

// --- Adapters: settings → each scheme's config. ---------------------------------------

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
    };
    Ok(Box::new(schemes::dir24_8::Dir24_8::build(rib, &config)?))
}

fn build_dir24_8_v6(rib: &Rib<Ipv6>, o: &BuildOptions) -> Result<Box<dyn Fib<Ipv6>>, BuildError> {
    let s = Settings::new("dir24-8", o, DIR24_8_SETTINGS)?;
    Ok(Box::new(schemes::dir24_8::Dir24_8V6::build_with(
        rib,
        s.width("width")?,
    )?))
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

const SPIDER_SETTINGS: &[(&str, &str)] = &[
    ("ways", "lanes looked up together, 1..=16"),
    (
        "scalar",
        "walk the table with scalar code, one address at a time (spider1w)",
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
        ..Default::default()
    };
    Ok(Box::new(schemes::spider::Spider::<A>::build(rib, &config)?))
}

const BLOOM_SETTINGS: &[(&str, &str)] = &[
    (
        "variant",
        "naive, base or fwd (the presets fix it; it supplies the defaults below)",
    ),
    (
        "fpr",
        "target false-positive rate of every filter, 0 < f < 1 (default 0.3)",
    ),
    (
        "fpr_bound",
        "rebuild when an update would push a filter's false-positive rate past this",
    ),
    (
        "hash",
        "the filters' hash: h2, murmur32, murmur64, knuth, crand (default: crand for \
         naive/base; bloomfwd h2 for IPv4, murmur64 for IPv6)",
    ),
    ("table_hash", "the tables' hash (default: the filters')"),
    ("km", "Kirsch-Mitzenmacher double hashing: true or false"),
    (
        "reuse",
        "the table index reuses the filter's first hash: true or false",
    ),
    (
        "symmetric",
        "every filter sized for the largest set (naive): true or false",
    ),
    (
        "levels",
        "every, present, cpe (IPv4: DLA + /24 + /32), a DPCPE level count N, or lengths a:b:c",
    ),
    (
        "dpcpe",
        "how DPCPE chooses N levels: greedy (the paper's) or optimal",
    ),
    ("ht_load", "hash-table keys per bucket at build (default 1)"),
    (
        "max_expanded",
        "most expanded prefixes a build may make (default 2^26)",
    ),
    (
        "threads",
        "threads for lookup_batch calls of 65,536 keys or more (default 1)",
    ),
];

fn bloom_config(o: &BuildOptions) -> Result<schemes::bloom::BloomConfig, BuildError> {
    use schemes::bloom::{BloomConfig, Levels, Variant};
    let s = Settings::new("bloom", o, BLOOM_SETTINGS)?;
    let variant = match o.setting("variant").unwrap_or("fwd") {
        "naive" => Variant::Naive,
        "base" => Variant::Baseline,
        "fwd" => Variant::Bloomfwd,
        v => {
            return Err(BuildError::InvalidConfig {
                scheme: "bloom".into(),
                reason: format!("setting variant={v:?} is not naive, base or fwd"),
            })
        }
    };
    let mut c = BloomConfig::of(variant);
    let name = c.name();
    let bad = |key: &str, e: String| BuildError::InvalidConfig {
        scheme: name.to_string(),
        reason: format!("setting {key}: {e}"),
    };
    c.fpr = s.get("fpr")?.unwrap_or(c.fpr);
    c.fpr_bound = s.get("fpr_bound")?;
    if let Some(h) = o.setting("hash") {
        c.hash = Some(h.parse().map_err(|e| bad("hash", e))?);
    }
    if let Some(h) = o.setting("table_hash") {
        c.table_hash = Some(h.parse().map_err(|e| bad("table_hash", e))?);
    }
    c.double_hashing = s.get("km")?;
    c.reuse_hash = s.get("reuse")?;
    c.symmetric = s.get("symmetric")?;
    if let Some(l) = o.setting("levels") {
        c.levels = Some(l.parse::<Levels>().map_err(|e| bad("levels", e))?);
    }
    match o.setting("dpcpe") {
        None | Some("greedy") => {}
        Some("optimal") => match &mut c.levels {
            Some(Levels::Dpcpe { optimal, .. }) => *optimal = true,
            _ => {
                return Err(bad(
                    "dpcpe",
                    "optimal needs levels=N (a DPCPE level count)".into(),
                ))
            }
        },
        Some(v) => return Err(bad("dpcpe", format!("{v:?} is not greedy or optimal"))),
    }
    c.ht_load = s.get("ht_load")?.unwrap_or(c.ht_load);
    c.max_expanded = s.get("max_expanded")?.unwrap_or(c.max_expanded);
    c.threads = s.get("threads")?.unwrap_or(c.threads);
    c.force_scalar = o.force_scalar;
    Ok(c)
}

fn build_bloom<A: Address>(rib: &Rib<A>, o: &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(schemes::bloom::Bloom::build(
        rib,
        &bloom_config(o)?,
    )?))
}

fn build_bloom_incremental<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    Ok(Box::new(schemes::bloom::Bloom::build(
        rib,
        &bloom_config(o)?,
    )?))
}

fn build_bloom_in_place<A: Address>(
    rib: Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let fib = schemes::bloom::Bloom::build(&rib, &bloom_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

const MIHT_SETTINGS: &[(&str, &str)] = &[
    (
        "k",
        "prefix-key bits, 1..=32 (default 16 for IPv4, 32 for IPv6)",
    ),
    (
        "m",
        "order of the B+ tree, 3..=64 (default 16 for IPv4, 32 for IPv6)",
    ),
];

fn miht_config(o: &BuildOptions) -> Result<schemes::miht::MihtConfig, BuildError> {
    let s = Settings::new("miht", o, MIHT_SETTINGS)?;
    Ok(schemes::miht::MihtConfig {
        k: s.get("k")?,
        m: s.get("m")?,
    })
}

fn build_miht<A: Address>(rib: &Rib<A>, o: &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(schemes::miht::Miht::build(rib, &miht_config(o)?)?))
}

fn build_miht_incremental<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    Ok(Box::new(schemes::miht::Miht::build(rib, &miht_config(o)?)?))
}

fn build_miht_in_place<A: Address>(
    rib: Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let fib = schemes::miht::Miht::build(&rib, &miht_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

#[cfg(all(feature = "dpdk", target_os = "linux"))]
fn build_dpdk<A: schemes::dpdk::DpdkAddress>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    Settings::new("dpdk-fib", o, NO_SETTINGS)?;
    Ok(Box::new(schemes::dpdk::DpdkFib::<A>::build(rib)?))
}

/// A family that only builds lookup structures.
const fn static_only<A: Address>(build: BuildFn<A>) -> Option<Builders<A>> {
    Some(Builders {
        build,
        incremental: None,
        in_place: None,
    })
}

static FAMILIES: &[SchemeFamily] = &[
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
            in_place: Some(build_bloom_in_place::<Ipv4>),
        }),
        v6: Some(Builders {
            build: build_bloom::<Ipv6>,
            incremental: Some(build_bloom_incremental::<Ipv6>),
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
        settings: NO_SETTINGS,
        presets: &[Preset {
            name: "dpdk-fib",
            summary: "DPDK rte_fib DIR24_8 (IPv4) and rte_fib6 trie (IPv6), bulk lookup, linked (feature `dpdk`)",
            settings: "",
        }],
        v4: static_only(build_dpdk::<Ipv4>),
        v6: static_only(build_dpdk::<Ipv6>),
    },
];

/// Every scheme family, in a stable order.
pub fn families() -> &'static [SchemeFamily] {
    FAMILIES
}

/// Every registered scheme (every preset of every family), in a stable order.
pub fn schemes() -> &'static [SchemeInfo] {
    static SCHEMES: OnceLock<Vec<SchemeInfo>> = OnceLock::new();
    SCHEMES.get_or_init(|| {
        FAMILIES
            .iter()
            .flat_map(|family| {
                let incremental = family.v4.as_ref().is_some_and(|b| b.incremental.is_some())
                    || family.v6.as_ref().is_some_and(|b| b.incremental.is_some());
                family.presets.iter().map(move |preset| SchemeInfo {
                    name: preset.name,
                    summary: preset.summary,
                    reference: family.reference,
                    incremental,
                    family,
                    preset,
                })
            })
            .collect()
    })
}

/// The registered schemes that handle `family`.
pub fn schemes_for(family: Family) -> impl Iterator<Item = &'static SchemeInfo> {
    schemes().iter().filter(move |s| s.supports(family))
}

/// The scheme named `name`.
pub fn find(name: &str) -> Option<&'static SchemeInfo> {
    schemes().iter().find(|s| s.name == name)
}

/// Why [`select`] refused a list of scheme names.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SelectError {
    /// No scheme has this name (or starts with it).
    Unknown {
        /// The name asked for.
        name: String,
        /// The family asked for.
        family: Family,
        /// Every registered name.
        known: Vec<&'static str>,
    },
    /// The scheme does not handle the family.
    Unsupported {
        /// The scheme.
        name: String,
        /// The family asked for.
        family: Family,
    },
    /// The list named no scheme.
    Empty,
}

impl fmt::Display for SelectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SelectError::Unknown {
                name,
                family,
                known,
            } => write!(
                f,
                "unknown scheme {name:?} for {family}; known schemes: {}",
                known.join(", ")
            ),
            SelectError::Unsupported { name, family } => {
                write!(f, "scheme {name} does not support {family}")
            }
            SelectError::Empty => f.write_str("no scheme selected"),
        }
    }
}

impl std::error::Error for SelectError {}

/// Resolves a comma-separated list of scheme names (or `all`) for `family`.
///
/// Names that do not handle the family are an error when listed explicitly and skipped
/// under `all`. A name may also be a family name or a prefix that selects every scheme
/// starting with it (`spider` selects `spider16w`, `spider8w`, …; `dxr` every `dNr`).
pub fn select(list: &str, family: Family) -> Result<Vec<&'static SchemeInfo>, SelectError> {
    let mut out: Vec<&'static SchemeInfo> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let matched: Vec<&'static SchemeInfo> = if name == "all" {
            schemes_for(family).collect()
        } else if let Some(s) = find(name) {
            if !s.supports(family) {
                return Err(SelectError::Unsupported {
                    name: name.to_string(),
                    family,
                });
            }
            vec![s]
        } else {
            let m: Vec<_> = schemes_for(family)
                .filter(|s| s.name.starts_with(name) || s.family.name == name)
                .collect();
            if m.is_empty() {
                return Err(SelectError::Unknown {
                    name: name.to_string(),
                    family,
                    known: schemes().iter().map(|s| s.name).collect(),
                });
            }
            m
        };
        for s in matched {
            if !out.iter().any(|o| o.name == s.name) {
                out.push(s);
            }
        }
    }
    if out.is_empty() {
        return Err(SelectError::Empty);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nexthop::NextHop;

    #[test]
    fn select_lists() {
        let all = select("all", Family::V4).unwrap();
        assert!(all.iter().any(|s| s.name == "dir24-8"));
        assert_eq!(select("trie,trie", Family::V6).unwrap().len(), 1);
        assert!(matches!(
            select("nope", Family::V4),
            Err(SelectError::Unknown { .. })
        ));
        assert_eq!(select("", Family::V4).unwrap_err(), SelectError::Empty);
        assert!(select("dir", Family::V4).unwrap()[0]
            .name
            .starts_with("dir"));
        assert_eq!(select("dxr", Family::V4).unwrap().len(), 9);
        assert!(matches!(
            select("d18r", Family::V6),
            Err(SelectError::Unsupported { .. })
        ));
    }

    #[test]
    fn presets_and_settings() {
        let mut rib = Rib::<Ipv4>::new();
        rib.insert("10.0.0.0/8".parse().unwrap(), NextHop::new(1).unwrap());
        let d = find("d20r").unwrap();
        assert_eq!(d.family().name, "dxr");
        assert!(d.incremental && d.updates_in_place());
        assert_eq!(d.build(&rib, &Default::default()).unwrap().name(), "d20r");
        // Options come after the preset: they win.
        let o = BuildOptions::default().with_settings("k=16").unwrap();
        assert_eq!(d.build(&rib, &o).unwrap().name(), "d16r");
        let bad = BuildOptions::default().with_settings("bogus=1").unwrap();
        let err = d.build(&rib, &bad).err().unwrap().to_string();
        assert!(err.contains("unknown setting \"bogus\""), "{err}");
        let bad = BuildOptions::default().with_settings("k=x").unwrap();
        assert!(d.build(&rib, &bad).is_err());
        assert!(d.build_incremental(&rib, &Default::default()).is_ok());
        assert!(find("spider8w")
            .unwrap()
            .build_incremental(&rib, &Default::default())
            .is_err());
        let mut u = find("poptrie16")
            .unwrap()
            .build_in_place(rib.clone(), &Default::default())
            .unwrap();
        let mut r = u.reader();
        let mut out = [0u32];
        u.apply(&[crate::Change::Withdraw("10.0.0.0/8".parse().unwrap())])
            .unwrap();
        r.lookup_batch(&[0x0a00_0001], &mut out);
        assert_eq!(out, [0]);
    }

    #[test]
    fn every_scheme_builds_for_its_families() {
        let rib = Rib::<Ipv4>::new();
        for s in schemes_for(Family::V4) {
            assert!(s.build(&rib, &Default::default()).is_ok(), "{}", s.name);
        }
        let rib = Rib::<Ipv6>::new();
        for s in schemes_for(Family::V6) {
            assert!(s.build(&rib, &Default::default()).is_ok(), "{}", s.name);
        }
    }
}

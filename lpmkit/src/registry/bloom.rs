//! The Bloom-filter LPM and MIHT settings adapters (the Bloomfwd paper's scheme and its
//! baseline): `--set` keys to [`schemes::bloom::BloomConfig`] and
//! [`schemes::miht::MihtConfig`].

use super::Settings;
use crate::fib::{BuildError, Fib, IncrementalFib};
use crate::prefix::Address;
use crate::rib::Rib;
use crate::schemes;
use crate::sync::{InPlace, Updater};
use crate::BuildOptions;

pub(super) const BLOOM_SETTINGS: &[(&str, &str)] = &[
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
    (
        "hint",
        "IPv6 level hint per /32, beyond the paper: true or false (default: bloomfwd true)",
    ),
    (
        "summary",
        "IPv6 /32 summary, beyond the paper: the hint's line also answers the routes up to \
         /32 (true or false; default: true where the hint is on)",
    ),
    (
        "summary_max",
        "most /32s the summary lists at build (default 2^18)",
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
    c.level_hint = s.get("hint")?;
    c.summary = s.get("summary")?;
    c.summary_max = s.get("summary_max")?.unwrap_or(c.summary_max);
    c.force_scalar = o.force_scalar;
    c.isa = o.isa;
    Ok(c)
}

pub(super) fn build_bloom<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(schemes::bloom::Bloom::build(
        rib,
        &bloom_config(o)?,
    )?))
}

pub(super) fn build_bloom_incremental<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    Ok(Box::new(schemes::bloom::Bloom::build(
        rib,
        &bloom_config(o)?,
    )?))
}

pub(super) fn build_bloom_in_place<A: Address>(
    rib: Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let fib = schemes::bloom::Bloom::build(&rib, &bloom_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

pub(super) const MIHT_SETTINGS: &[(&str, &str)] = &[
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

pub(super) fn build_miht<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(schemes::miht::Miht::build(rib, &miht_config(o)?)?))
}

pub(super) fn build_miht_incremental<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    Ok(Box::new(schemes::miht::Miht::build(rib, &miht_config(o)?)?))
}

pub(super) fn build_miht_in_place<A: Address>(
    rib: Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let fib = schemes::miht::Miht::build(&rib, &miht_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

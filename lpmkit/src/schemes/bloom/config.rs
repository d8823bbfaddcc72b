//! [`BloomConfig`]: the variant and every parameter the paper varies.

use core::fmt;
use core::str::FromStr;

use super::hash::{HashKind, Hashing};
use crate::fib::{BuildError, Config, Settings};
use crate::prefix::{Address, Family};

/// The most threads the `threads` setting may ask for.
pub(crate) const MAX_THREADS: usize = 1024;

/// The paper's variants (the registry's presets).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// §3.1: a filter per length, symmetric, MurmurHash3.
    Naive,
    /// §3.2: asymmetric counting filters, IPv4 CPE (DLA + G1 + G2), C `rand()`.
    Baseline,
    /// §4: Baseline with the hash optimizations, AVX2 hashing and (IPv6) DPCPE.
    Bloomfwd,
}

impl Variant {
    /// The registry name.
    #[doc(hidden)]
    pub fn name(self) -> &'static str {
        match self {
            Variant::Naive => "bloom-naive",
            Variant::Baseline => "bloom-base",
            Variant::Bloomfwd => "bloomfwd",
        }
    }
}

/// Which prefix lengths get a level.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Levels {
    /// One level per length 1…32 (IPv4) or 1…64 (IPv6), empty ones included (Naïve).
    Every,
    /// One level per length present in the table (IPv6 Baseline, "one per present length").
    Present,
    /// IPv4 CPE (§3.2): a DLA for lengths ≤ 20 and the default route, G1 = /21–/24
    /// expanded to /24, G2 = /25–/32 expanded to /32.
    Ipv4Cpe,
    /// DPCPE (§4.2): `n` levels, 32 (IPv4) or 64 (IPv6) among them, chosen greedily as the
    /// paper describes, or exactly (`optimal`).
    Dpcpe {
        /// Levels.
        n: usize,
        /// The exact minimum (dynamic programming) instead of the paper's greedy choice.
        optimal: bool,
    },
    /// These lengths, ascending, the last 32 (IPv4) or 64 (IPv6); each holds the lengths
    /// down to the previous one.
    Explicit(Vec<u8>),
}

impl fmt::Display for Levels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Levels::Every => f.write_str("every"),
            Levels::Present => f.write_str("present"),
            Levels::Ipv4Cpe => f.write_str("cpe"),
            Levels::Dpcpe { n, optimal } => {
                write!(f, "{n}{}", if *optimal { " (optimal)" } else { "" })
            }
            Levels::Explicit(v) => {
                let s: Vec<String> = v.iter().map(|l| l.to_string()).collect();
                f.write_str(&s.join(":"))
            }
        }
    }
}

impl FromStr for Levels {
    type Err = String;
    /// `every`, `present`, `cpe`, a DPCPE level count `N`, or lengths `a:b:…`.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "every" => Ok(Levels::Every),
            "present" => Ok(Levels::Present),
            "cpe" => Ok(Levels::Ipv4Cpe),
            _ if s.contains(':') => s
                .split(':')
                .map(|x| {
                    x.parse::<u8>()
                        .map_err(|_| format!("{x:?} is not a length"))
                })
                .collect::<Result<Vec<u8>, String>>()
                .map(Levels::Explicit),
            _ => s
                .parse::<usize>()
                .map(|n| Levels::Dpcpe { n, optimal: false })
                .map_err(|_| {
                    format!("{s:?} is not every, present, cpe, a level count or a:b:… lengths")
                }),
        }
    }
}

/// Build options for [`Bloom`](super::Bloom).
///
/// ```
/// use lpmkit::schemes::bloom::{BloomConfig, HashKind, Levels};
/// let cfg = BloomConfig::bloomfwd().fpr(0.1).hash(HashKind::Murmur32).levels(Levels::Dpcpe { n: 4, optimal: false });
/// assert_eq!(cfg.fpr, 0.1);
/// assert_eq!(BloomConfig::baseline().name(), "bloom-base");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct BloomConfig {
    /// The variant: names the structure and supplies the defaults of the `None` fields.
    pub variant: Variant,
    /// Target false-positive rate of every filter (0 < f < 1; the paper's best: 0.3).
    pub fpr: f64,
    /// Rebuild when an update would push a filter's false-positive rate past this
    /// (default: `min(1.2·fpr, (1 + fpr)/2)`).
    pub fpr_bound: Option<f64>,
    /// The filters' hash (default: Naïve MurmurHash3, 32- or 64-bit; Baseline C `rand()`;
    /// Bloomfwd H2 for IPv4, MurmurHash3-64 for IPv6, as §6.2 chooses).
    pub hash: Option<HashKind>,
    /// The tables' hash (default: the filters').
    pub table_hash: Option<HashKind>,
    /// Kirsch–Mitzenmacher double hashing (default: Bloomfwd only).
    pub double_hashing: Option<bool>,
    /// Reuse the filter's first hash as the table index when the kinds agree (default:
    /// Bloomfwd only).
    pub reuse_hash: Option<bool>,
    /// Give every filter the size of the largest (default: Naïve only).
    pub symmetric: Option<bool>,
    /// Which lengths get a level (default: Naïve every length; Baseline IPv4 CPE / IPv6
    /// present lengths; Bloomfwd IPv4 CPE / IPv6 DPCPE with 5 levels).
    pub levels: Option<Levels>,
    /// Table keys per bucket at build time (> 0).
    pub ht_load: f64,
    /// Most expanded keys a build may make (CPE/DPCPE); more is a `CapacityExceeded`.
    pub max_expanded: u64,
    /// Most expanded keys one update of one prefix may rewrite before it rebuilds instead.
    pub max_patch_keys: u64,
    /// Threads of large `lookup_batch` calls (1 to 1024; see [`Bloom::lookup_bulk`](super::Bloom::lookup_bulk)).
    pub threads: usize,
    /// Hash on the scalar path even if the CPU has AVX2.
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: the best the CPU has);
    /// see [`crate::simd::Isa`].
    pub isa: Option<crate::simd::Isa>,
    /// The IPv6 level hint (`hint.rs`, beyond the paper): per /32, the levels above /32
    /// that hold a key under it, so that lookups skip the others' filters and
    /// false-positive probes (default: Bloomfwd only; no effect on IPv4).
    pub level_hint: Option<bool>,
    /// The IPv6 /32 summary (`summary.rs`, beyond the paper): the level hint's per-/32
    /// line also holds the answer of the routes up to /32 and which /36s hold longer
    /// routes, so that most lookups end after that one line (default: on wherever the
    /// level hint is; off without it).
    pub summary: Option<bool>,
    /// Most /32s the summary lists at build: it lists every /32 under the routes of
    /// lengths `lo..=32` for the smallest `lo` that stays within this, and the /32s
    /// holding longer routes (default 2^18).
    pub summary_max: u64,
}

impl Default for BloomConfig {
    fn default() -> Self {
        Self::bloomfwd()
    }
}

impl BloomConfig {
    /// A variant with its defaults.
    pub fn of(variant: Variant) -> Self {
        BloomConfig {
            variant,
            fpr: 0.3,
            fpr_bound: None,
            hash: None,
            table_hash: None,
            double_hashing: None,
            reuse_hash: None,
            symmetric: None,
            levels: None,
            ht_load: 1.0,
            max_expanded: 1 << 26,
            max_patch_keys: 1 << 16,
            threads: 1,
            force_scalar: false,
            isa: None,
            level_hint: None,
            summary: None,
            summary_max: 1 << 18,
        }
    }

    /// `bloom-naive` (§3.1).
    pub fn naive() -> Self {
        Self::of(Variant::Naive)
    }

    /// `bloom-base` (§3.2).
    pub fn baseline() -> Self {
        Self::of(Variant::Baseline)
    }

    /// `bloomfwd` (§4).
    pub fn bloomfwd() -> Self {
        Self::of(Variant::Bloomfwd)
    }

    /// The registry name of the variant.
    #[doc(hidden)]
    pub fn name(&self) -> &'static str {
        self.variant.name()
    }

    /// Sets [`fpr`](Self::fpr).
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }

    /// Sets [`hash`](Self::hash).
    pub fn hash(mut self, kind: HashKind) -> Self {
        self.hash = Some(kind);
        self
    }

    /// Sets [`table_hash`](Self::table_hash).
    pub fn table_hash(mut self, kind: HashKind) -> Self {
        self.table_hash = Some(kind);
        self
    }

    /// Sets [`levels`](Self::levels).
    pub fn levels(mut self, levels: Levels) -> Self {
        self.levels = Some(levels);
        self
    }

    /// Sets [`level_hint`](Self::level_hint).
    pub fn level_hint(mut self, on: bool) -> Self {
        self.level_hint = Some(on);
        self
    }

    /// Sets [`summary`](Self::summary).
    ///
    /// ```
    /// use lpmkit::schemes::bloom::BloomConfig;
    /// let paper_hint = BloomConfig::bloomfwd().summary(false); // the level hint alone
    /// assert_eq!(paper_hint.summary, Some(false));
    /// ```
    pub fn summary(mut self, on: bool) -> Self {
        self.summary = Some(on);
        self
    }

    /// Sets [`isa`](Self::isa), the instruction-set ceiling.
    pub fn isa(mut self, isa: crate::simd::Isa) -> Self {
        self.isa = Some(isa);
        self
    }

    /// Sets [`force_scalar`](Self::force_scalar).
    pub fn force_scalar(mut self, force: bool) -> Self {
        self.force_scalar = force;
        self
    }

    fn invalid(&self, reason: String) -> BuildError {
        BuildError::InvalidConfig {
            scheme: self.name().to_string(),
            reason,
        }
    }

    /// The configuration for family `A` with every default filled in, checked.
    pub(crate) fn resolve<A: Address>(&self) -> Result<Resolved, BuildError> {
        let fwd = self.variant == Variant::Bloomfwd;
        let v6 = A::FAMILY == Family::V6;
        if !(self.fpr > 0.0 && self.fpr < 1.0) {
            return Err(self.invalid(format!("fpr = {} is outside (0, 1)", self.fpr)));
        }
        let bound = self
            .fpr_bound
            .unwrap_or((1.2 * self.fpr).min(self.fpr + (1.0 - self.fpr) / 2.0));
        if !(bound >= self.fpr && bound < 1.0) {
            return Err(self.invalid(format!(
                "fpr_bound = {bound} is outside [fpr, 1) (fpr = {})",
                self.fpr
            )));
        }
        let default_hash = match (self.variant, v6) {
            (Variant::Naive, false) => HashKind::Murmur32,
            (Variant::Baseline, _) => HashKind::CRand,
            (Variant::Bloomfwd, false) => HashKind::H2,
            (_, true) => HashKind::Murmur64,
        };
        let kind = self.hash.unwrap_or(default_hash);
        let table_kind = self.table_hash.unwrap_or(kind);
        for k in [kind, table_kind] {
            if v6 && !k.takes_64_bit_keys() {
                return Err(self.invalid(format!(
                    "{k} hashes 32-bit keys; IPv6 keys are 64-bit (murmur64, knuth or crand)"
                )));
            }
        }
        let levels = self.levels.clone().unwrap_or(match (self.variant, v6) {
            (Variant::Naive, _) => Levels::Every,
            (Variant::Baseline, true) => Levels::Present,
            (Variant::Bloomfwd, true) => Levels::Dpcpe {
                n: 5,
                optimal: false,
            },
            (_, false) => Levels::Ipv4Cpe,
        });
        let kb = super::cpe::key_bits::<A>();
        match &levels {
            Levels::Ipv4Cpe if v6 => {
                return Err(self.invalid("levels = cpe is IPv4's (DLA + /24 + /32)".into()))
            }
            Levels::Dpcpe { n, .. } if !(1..=kb as usize).contains(n) => {
                return Err(self.invalid(format!("levels = {n} is outside 1..={kb}")))
            }
            Levels::Explicit(v)
                if v.is_empty()
                    || v.last() != Some(&kb)
                    || v.windows(2).any(|w| w[0] >= w[1])
                    || v[0] == 0 =>
            {
                return Err(self.invalid(format!(
                    "levels = {} must be ascending lengths 1..={kb} ending with {kb}",
                    levels
                )))
            }
            _ => {}
        }
        if !(self.ht_load > 0.0 && self.ht_load.is_finite()) {
            return Err(self.invalid(format!("ht_load = {} is not positive", self.ht_load)));
        }
        if !(1..=MAX_THREADS).contains(&self.threads) {
            return Err(self.invalid(format!(
                "threads = {} is not in 1..={MAX_THREADS}",
                self.threads
            )));
        }
        if self.summary_max == 0 {
            return Err(self.invalid("summary_max = 0".into()));
        }
        let k = super::filter::size(1, self.fpr).1;
        let hint = v6 && self.level_hint.unwrap_or(fwd);
        Ok(Resolved {
            hashing: Hashing {
                kind,
                table_kind,
                double_hashing: self.double_hashing.unwrap_or(fwd),
                reuse: self.reuse_hash.unwrap_or(fwd),
                k,
            },
            symmetric: self.symmetric.unwrap_or(self.variant == Variant::Naive),
            levels,
            bound,
            hint,
            summary: hint && self.summary.unwrap_or(true),
        })
    }
}

/// A [`BloomConfig`] resolved for one family.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub hashing: Hashing,
    pub symmetric: bool,
    pub levels: Levels,
    pub bound: f64,
    /// Build the level hint (IPv6, the option on).
    pub hint: bool,
    /// Build the summary instead of the level hint (IPv6, both options on).
    pub summary: bool,
}

impl Config for BloomConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
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
            "threads for lookup_batch calls of 65,536 keys or more, 1..=1024 (default 1)",
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

    fn from_settings<B: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let variant = match s.text("variant").unwrap_or("fwd") {
            "naive" => Variant::Naive,
            "base" => Variant::Baseline,
            "fwd" => Variant::Bloomfwd,
            v => return Err(s.invalid("variant", v, "naive, base or fwd")),
        };
        let mut c = BloomConfig::of(variant);
        let bad = |key: &str, e: String| s.error(format!("setting {key}: {e}"));
        c.fpr = s.get("fpr")?.unwrap_or(c.fpr);
        c.fpr_bound = s.get("fpr_bound")?;
        if let Some(h) = s.text("hash") {
            c.hash = Some(h.parse().map_err(|e| bad("hash", e))?);
        }
        if let Some(h) = s.text("table_hash") {
            c.table_hash = Some(h.parse().map_err(|e| bad("table_hash", e))?);
        }
        c.double_hashing = s.get("km")?;
        c.reuse_hash = s.get("reuse")?;
        c.symmetric = s.get("symmetric")?;
        if let Some(l) = s.text("levels") {
            c.levels = Some(l.parse::<Levels>().map_err(|e| bad("levels", e))?);
        }
        match s.text("dpcpe") {
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
        c.force_scalar = s.force_scalar();
        c.isa = s.isa();
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_per_variant_and_family() {
        let r = BloomConfig::bloomfwd().resolve::<u32>().unwrap();
        assert_eq!(r.hashing.kind, HashKind::H2);
        assert!(r.hashing.double_hashing && r.hashing.reuse);
        assert_eq!((r.hashing.k, r.levels), (2, Levels::Ipv4Cpe));
        let r = BloomConfig::bloomfwd().resolve::<u128>().unwrap();
        assert_eq!(r.hashing.kind, HashKind::Murmur64);
        assert_eq!(
            r.levels,
            Levels::Dpcpe {
                n: 5,
                optimal: false
            }
        );
        let r = BloomConfig::naive().resolve::<u128>().unwrap();
        assert_eq!((r.hashing.kind, r.symmetric), (HashKind::Murmur64, true));
        let r = BloomConfig::baseline().resolve::<u32>().unwrap();
        assert_eq!((r.hashing.kind, r.symmetric), (HashKind::CRand, false));
        assert!(!r.hashing.double_hashing && !r.hashing.reuse);
        assert!(BloomConfig::bloomfwd()
            .hash(HashKind::H2)
            .resolve::<u128>()
            .is_err());
        assert!(BloomConfig::bloomfwd().fpr(1.0).resolve::<u32>().is_err());
        assert!(BloomConfig::baseline()
            .levels(Levels::Ipv4Cpe)
            .resolve::<u128>()
            .is_err());
        assert!(BloomConfig::baseline()
            .levels(Levels::Explicit(vec![24, 20, 32]))
            .resolve::<u32>()
            .is_err());
        assert_eq!("33:38:64".parse(), Ok(Levels::Explicit(vec![33, 38, 64])));
        assert_eq!(
            "5".parse(),
            Ok(Levels::Dpcpe {
                n: 5,
                optimal: false
            })
        );
        assert!("x".parse::<Levels>().is_err());
    }
}

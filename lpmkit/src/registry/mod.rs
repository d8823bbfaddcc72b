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
use crate::schemes::Width;
use crate::sync::Updater;

mod bloom;
mod families;
mod obma;
use families::FAMILIES;

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
        o.isa = options.isa;
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
                let presets = family.presets.iter();
                presets
                    .filter(|p| families::preset_runs_here(p))
                    .map(move |preset| SchemeInfo {
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

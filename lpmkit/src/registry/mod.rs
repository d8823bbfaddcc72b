//! The scheme registry: every scheme by name, for generic code.
//!
//! The CLI, the differential tests, the benchmarks and the bindings never name a scheme
//! type: they walk [`schemes()`] (or [`find`] one by name), build it for a family through
//! [`SchemeInfo::build`], and follow route changes through [`SchemeInfo::updater`], which
//! picks the update model from what the scheme declares ([`SchemeInfo::models`]).
//!
//! One row per scheme family ([`SchemeFamily`]), a declaration: its name, the paper, its
//! presets — the names the papers use (`d16r` … `d24r` are DXR with `k=16` … `k=24`) — and
//! the type that implements the family for each address family. Everything else comes from
//! the scheme contract ([`Scheme`]): the settings its [`Config`] reads, its build, the update
//! models it offers. Every preset is a [`SchemeInfo`]. Adding a scheme is its module (which
//! implements [`Scheme`]), one row in `registry/families.rs`, and its tests.
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
use std::sync::OnceLock;

#[doc(hidden)]
pub use crate::fib::BuildOptions;
use crate::fib::{BuildError, Config, Fib, IncrementalFib, Settings};
use crate::prefix::{Address, Family, Ipv4, Ipv6};
use crate::rib::Rib;
use crate::scheme::Scheme;
use crate::sync::{Publisher, PublisherConfig, TwinUpdater, UpdateModel, Updater};

mod families;
use families::FAMILIES;

type BuildFn<A> = fn(&Rib<A>, &Settings<'_>) -> Result<Box<dyn Fib<A>>, BuildError>;
type IncrementalFn<A> =
    fn(&Rib<A>, &Settings<'_>) -> Result<Box<dyn IncrementalFib<A>>, BuildError>;
type UpdaterFn<A> =
    fn(Rib<A>, &Settings<'_>, UpdateModel) -> Result<Box<dyn Updater<A>>, BuildError>;

/// How the registry builds one scheme for one address family: functions over the scheme's
/// [`Scheme`] implementation, made once by [`SchemeFamily::v4`] / [`SchemeFamily::v6`].
#[doc(hidden)]
pub struct Entry<A: Address> {
    build: BuildFn<A>,
    incremental: IncrementalFn<A>,
    updater: UpdaterFn<A>,
    in_place: bool,
}

impl<A: Address> Entry<A> {
    const fn of<S: Scheme<A>>() -> Self {
        Entry {
            build: build_boxed::<A, S>,
            incremental: build_incremental::<A, S>,
            updater: build_updater::<A, S>,
            in_place: S::IN_PLACE,
        }
    }
}

fn config<A: Address, S: Scheme<A>>(settings: &Settings<'_>) -> Result<S::Config, BuildError> {
    settings.check(<S::Config as Config>::SETTINGS)?;
    <S::Config as Config>::from_settings::<A>(settings)
}

/// Builds of `S` with `config` whose kernels are chosen by measurement
/// ([`crate::simd::calibrate`]) on the first build; later builds (an updater's rebuilds, a
/// twin) take the first one's choice without measuring again.
fn tuned<A: Address, S: Scheme<A>>(
    config: S::Config,
) -> impl FnMut(&Rib<A>) -> Result<S, BuildError> + Send + 'static {
    let mut first: Option<crate::simd::Kernels> = None;
    move |rib: &Rib<A>| {
        let mut s = S::build(rib, &config)?;
        match (&first, s.kernels_mut()) {
            (Some(chosen), Some(k)) => crate::simd::apply_choice(k, chosen),
            (None, Some(_)) => {
                crate::simd::calibrate(&mut s, rib);
                first = s.kernels_mut().map(|k| *k);
            }
            (_, None) => {}
        }
        Ok(s)
    }
}

fn build_boxed<A: Address, S: Scheme<A>>(
    rib: &Rib<A>,
    settings: &Settings<'_>,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(tuned::<A, S>(config::<A, S>(settings)?)(rib)?))
}

fn build_incremental<A: Address, S: Scheme<A>>(
    rib: &Rib<A>,
    settings: &Settings<'_>,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    let config = config::<A, S>(settings)?;
    if !S::IN_PLACE {
        return Err(not_offered(settings.scheme(), "in-place updates"));
    }
    tuned::<A, S>(config)(rib)?
        .into_incremental()
        .ok_or_else(|| not_offered(settings.scheme(), "in-place updates"))
}

fn build_updater<A: Address, S: Scheme<A>>(
    rib: Rib<A>,
    settings: &Settings<'_>,
    model: UpdateModel,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let mut build = tuned::<A, S>(config::<A, S>(settings)?);
    match model {
        UpdateModel::InPlace if S::IN_PLACE => build(&rib)?
            .into_in_place(rib)
            .ok_or_else(|| not_offered(settings.scheme(), "one-instance updates under readers")),
        UpdateModel::Twins if S::IN_PLACE => {
            let name = settings.scheme().to_string();
            let build = move |r: &Rib<A>| {
                build(r)?
                    .into_incremental()
                    .ok_or_else(|| not_offered(&name, "in-place updates"))
            };
            Ok(Box::new(TwinUpdater::new(rib, build)?))
        }
        UpdateModel::Rebuild { hold_time } => Ok(Box::new(Publisher::new(
            rib,
            build,
            PublisherConfig { hold_time },
        )?)),
        m => Err(not_offered(settings.scheme(), m.as_str())),
    }
}

fn not_offered(scheme: &str, what: &str) -> BuildError {
    BuildError::InvalidConfig {
        scheme: scheme.to_string(),
        reason: format!("{scheme} does not offer {what}"),
    }
}

/// A named configuration of a scheme family: the names the papers use.
#[derive(Debug)]
#[doc(hidden)]
pub struct Preset {
    /// Registry name (`d18r`, `poptrie16`, `spider8w`, …).
    pub name: &'static str,
    /// One line for listings.
    pub summary: &'static str,
    /// The settings it fixes (`key=value,…`); options given at build time come after.
    pub settings: &'static str,
}

/// One row of the registry: a scheme family, declared by its name, the paper it comes
/// from, its presets, and the types that implement it per address family.
#[doc(hidden)]
pub struct SchemeFamily {
    /// The family's name (`dxr`, `poptrie`, …).
    pub name: &'static str,
    /// Where the scheme is described.
    pub reference: &'static str,
    /// The settings it understands: `(key, what it means)` (its [`Config::SETTINGS`]).
    pub settings: &'static [(&'static str, &'static str)],
    /// Its presets (at least one).
    pub presets: &'static [Preset],
    v4: Option<Entry<Ipv4>>,
    v6: Option<Entry<Ipv6>>,
}

impl SchemeFamily {
    /// A family with its presets, for no address family yet.
    pub const fn new(
        name: &'static str,
        reference: &'static str,
        presets: &'static [Preset],
    ) -> Self {
        SchemeFamily {
            name,
            reference,
            settings: &[],
            presets,
            v4: None,
            v6: None,
        }
    }

    /// The family implemented for IPv4 by `S`.
    pub const fn v4<S: Scheme<Ipv4>>(mut self) -> Self {
        self.settings = <S::Config as Config>::SETTINGS;
        self.v4 = Some(Entry::of::<S>());
        self
    }

    /// The family implemented for IPv6 by `S`.
    pub const fn v6<S: Scheme<Ipv6>>(mut self) -> Self {
        self.settings = <S::Config as Config>::SETTINGS;
        self.v6 = Some(Entry::of::<S>());
        self
    }

    fn entry<A: Address>(&self) -> Option<&Entry<A>> {
        let any: &dyn Any = match A::FAMILY {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        };
        any.downcast_ref::<Option<Entry<A>>>()
            .expect("family and address type agree")
            .as_ref()
    }

    fn in_place(&self, family: Family) -> bool {
        match family {
            Family::V4 => self.v4.as_ref().is_some_and(|e| e.in_place),
            Family::V6 => self.v6.as_ref().is_some_and(|e| e.in_place),
        }
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
    /// True if the scheme is patched in place (for some address family): it also builds as
    /// an [`IncrementalFib`] and offers [`UpdateModel::InPlace`] and [`UpdateModel::Twins`].
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
    #[doc(hidden)]
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
    /// (for some address family).
    pub fn updates_in_place(&self) -> bool {
        self.family.in_place(Family::V4) || self.family.in_place(Family::V6)
    }

    /// The update models the scheme offers for `family`, best first: in place, twins and
    /// rebuild for an incremental scheme; rebuild alone for the others (none if the
    /// scheme does not handle the family). The rebuild model is listed with a zero hold
    /// time.
    pub fn models(&self, family: Family) -> &'static [UpdateModel] {
        const INCREMENTAL: &[UpdateModel] = &[
            UpdateModel::InPlace,
            UpdateModel::Twins,
            UpdateModel::REBUILD,
        ];
        const REBUILT: &[UpdateModel] = &[UpdateModel::REBUILD];
        if !self.supports(family) {
            &[]
        } else if self.family.in_place(family) {
            INCREMENTAL
        } else {
            REBUILT
        }
    }

    /// The best update model for `family` ([`models`](Self::models)' first): one instance
    /// patched in place where the scheme offers it, else a rebuild published with one
    /// pointer swap after `hold_time`.
    pub fn best_model(&self, family: Family, hold_time: std::time::Duration) -> UpdateModel {
        match self.models(family).first() {
            Some(UpdateModel::InPlace) => UpdateModel::InPlace,
            _ => UpdateModel::Rebuild { hold_time },
        }
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

    fn entry<A: Address>(&self) -> Result<&Entry<A>, BuildError> {
        self.family
            .entry::<A>()
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
        let options = self.options(options);
        (self.entry::<A>()?.build)(rib, &Settings::new(self.name, &options))
    }

    /// Builds the scheme as an [`IncrementalFib`] (patched on one thread, or through a
    /// [`crate::sync::TwinUpdater`]); an error for a scheme that is rebuilt instead.
    pub fn build_incremental<A: Address>(
        &self,
        rib: &Rib<A>,
        options: &BuildOptions,
    ) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
        let options = self.options(options);
        (self.entry::<A>()?.incremental)(rib, &Settings::new(self.name, &options))
    }

    /// Builds the scheme over `rib`, which the returned [`Updater`] takes over, in update
    /// model `model` (one of [`models`](Self::models), or a rebuild with any hold time);
    /// a model the scheme does not offer is an error.
    pub fn updater<A: Address>(
        &self,
        rib: Rib<A>,
        options: &BuildOptions,
        model: UpdateModel,
    ) -> Result<Box<dyn Updater<A>>, BuildError> {
        let options = self.options(options);
        (self.entry::<A>()?.updater)(rib, &Settings::new(self.name, &options), model)
    }

    /// [`updater`](Self::updater) in the one-instance in-place model.
    pub fn build_in_place<A: Address>(
        &self,
        rib: Rib<A>,
        options: &BuildOptions,
    ) -> Result<Box<dyn Updater<A>>, BuildError> {
        self.updater(rib, options, UpdateModel::InPlace)
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

/// Every scheme family, in a stable order.
#[doc(hidden)]
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
                let incremental = family.in_place(Family::V4) || family.in_place(Family::V6);
                family
                    .presets
                    .iter()
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

//! The scheme registry: name → builder, for generic code.
//!
//! The CLI, the differential tests and the benchmarks never name a scheme type: they walk
//! [`schemes()`] (or [`find`] one by name) and build it for a family through
//! [`SchemeInfo::build`]. Adding a scheme is one module plus one row in `SCHEMES`.
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
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::any::Any;

use crate::fib::{BuildError, Fib};
use crate::prefix::{Address, Family};
use crate::rib::Rib;
use crate::schemes;

/// Options every scheme understands at build time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildOptions {
    /// Use the scalar code path even if the CPU has SIMD support.
    pub force_scalar: bool,
    /// Degree of SIMD parallelism (lanes looked up together) for schemes that have one,
    /// such as Spider's 1…16 ways; `None` takes the scheme's own default.
    pub ways: Option<usize>,
}

impl BuildOptions {
    /// Options with scalar code forced on or off.
    pub fn scalar(force_scalar: bool) -> Self {
        BuildOptions {
            force_scalar,
            ..Default::default()
        }
    }
}

/// Builds a scheme for family `A` from a `Rib`.
pub type BuildFn<A> = fn(&Rib<A>, &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError>;

/// A registered scheme.
pub struct SchemeInfo {
    /// Registry name, as the papers name the scheme (`dir24-8`, `d18r`, `spider16w`, …).
    pub name: &'static str,
    /// One line for `--help` and listings.
    pub summary: &'static str,
    /// Where the scheme is described.
    pub reference: &'static str,
    /// True if the scheme also implements [`IncrementalFib`](crate::IncrementalFib).
    pub incremental: bool,
    v4: Option<BuildFn<u32>>,
    v6: Option<BuildFn<u128>>,
}

impl SchemeInfo {
    /// True if the scheme handles `family`.
    pub fn supports(&self, family: Family) -> bool {
        match family {
            Family::V4 => self.v4.is_some(),
            Family::V6 => self.v6.is_some(),
        }
    }

    /// The families the scheme handles.
    pub fn families(&self) -> Vec<Family> {
        [Family::V4, Family::V6]
            .into_iter()
            .filter(|&f| self.supports(f))
            .collect()
    }

    /// The builder for family `A`, if the scheme handles it.
    pub fn builder<A: Address>(&self) -> Option<BuildFn<A>> {
        let any: &dyn Any = match A::FAMILY {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        };
        *any.downcast_ref::<Option<BuildFn<A>>>()
            .expect("family and address type agree")
    }

    /// Builds the scheme from `rib`.
    pub fn build<A: Address>(
        &self,
        rib: &Rib<A>,
        options: &BuildOptions,
    ) -> Result<Box<dyn Fib<A>>, BuildError> {
        match self.builder::<A>() {
            Some(build) => build(rib, options),
            None => Err(BuildError::UnsupportedFamily {
                scheme: self.name.to_string(),
                family: A::FAMILY,
            }),
        }
    }
}

impl core::fmt::Debug for SchemeInfo {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SchemeInfo")
            .field("name", &self.name)
            .field("families", &self.families())
            .finish()
    }
}

fn build_trie<A: Address>(rib: &Rib<A>, _: &BuildOptions) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(rib.clone()))
}

static SCHEMES: &[SchemeInfo] = &[
    SchemeInfo {
        name: "trie",
        summary: "the reference path-compressed binary trie (the Rib itself)",
        reference: "lpmkit::Rib",
        incremental: false,
        v4: Some(build_trie::<u32>),
        v6: Some(build_trie::<u128>),
    },
    SchemeInfo {
        name: "dir24-8",
        summary: "DIR-24-8: 2^24-entry first table plus 256-entry second-level groups",
        reference: "Gupta, Lin, McKeown, INFOCOM 1998; DPDK rte_fib dir24_8",
        incremental: false,
        v4: Some(schemes::dir24_8::Dir24_8::build_boxed),
        v6: None,
    },
    SchemeInfo {
        name: "spider16w",
        summary: "Spider: 8-bit-stride state-jump table, AVX2 gathers, two fused 8-lane streams",
        reference: "Ueno et al., IEEE Access 8 (2020) §III, Alg. 1-2; NetSoft 2020",
        incremental: false,
        v4: Some(schemes::spider::Spider::<u32>::build_boxed_w16),
        v6: Some(schemes::spider::Spider::<u128>::build_boxed_w16),
    },
    SchemeInfo {
        name: "spider8w",
        summary: "Spider with one 8-lane AVX2 stream (no loop fusion)",
        reference: "Ueno et al., IEEE Access 8 (2020) §III-B, §V-D",
        incremental: false,
        v4: Some(schemes::spider::Spider::<u32>::build_boxed_w8),
        v6: Some(schemes::spider::Spider::<u128>::build_boxed_w8),
    },
    SchemeInfo {
        name: "spider1w",
        summary: "Spider's table walked by scalar code, one address at a time",
        reference: "Ueno et al., IEEE Access 8 (2020) §V-B, §V-D",
        incremental: false,
        v4: Some(schemes::spider::Spider::<u32>::build_boxed_w1),
        v6: Some(schemes::spider::Spider::<u128>::build_boxed_w1),
    },
];

/// Every registered scheme, in a stable order.
pub fn schemes() -> &'static [SchemeInfo] {
    SCHEMES
}

/// The registered schemes that handle `family`.
pub fn schemes_for(family: Family) -> impl Iterator<Item = &'static SchemeInfo> {
    SCHEMES.iter().filter(move |s| s.supports(family))
}

/// The scheme named `name`.
pub fn find(name: &str) -> Option<&'static SchemeInfo> {
    SCHEMES.iter().find(|s| s.name == name)
}

/// Resolves a comma-separated list of scheme names (or `all`) for `family`.
///
/// Names that do not handle the family are an error when listed explicitly and skipped
/// under `all`. A name may also be a prefix that selects every scheme starting with it
/// (`spider` selects `spider16w`, `spider8w`, …).
pub fn select(list: &str, family: Family) -> Result<Vec<&'static SchemeInfo>, String> {
    let mut out: Vec<&'static SchemeInfo> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let matched: Vec<&'static SchemeInfo> = if name == "all" {
            schemes_for(family).collect()
        } else if let Some(s) = find(name) {
            if !s.supports(family) {
                return Err(format!("scheme {name} does not support {family}"));
            }
            vec![s]
        } else {
            let m: Vec<_> = schemes_for(family)
                .filter(|s| s.name.starts_with(name))
                .collect();
            if m.is_empty() {
                let known: Vec<_> = SCHEMES.iter().map(|s| s.name).collect();
                return Err(format!(
                    "unknown scheme {name:?} for {family}; known schemes: {}",
                    known.join(", ")
                ));
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
        return Err("no scheme selected".to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_lists() {
        let all = select("all", Family::V4).unwrap();
        assert!(all.iter().any(|s| s.name == "dir24-8"));
        assert_eq!(select("trie,trie", Family::V6).unwrap().len(), 1);
        assert!(select("nope", Family::V4)
            .unwrap_err()
            .contains("unknown scheme"));
        assert!(select("", Family::V4).is_err());
        assert!(select("dir", Family::V4).unwrap()[0]
            .name
            .starts_with("dir"));
    }

    #[test]
    fn builder_by_family() {
        let t = find("trie").unwrap();
        assert!(t.builder::<u32>().is_some() && t.builder::<u128>().is_some());
    }
}

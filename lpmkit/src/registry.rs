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

use crate::fib::{BuildError, Fib, IncrementalFib};
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
    /// True if the scheme also implements [`IncrementalFib`].
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
        reference:
            "Gupta, Lin, McKeown, INFOCOM 1998; DPDK rte_fib dir24_8 (IPv4), rte_lpm6 (IPv6)",
        incremental: false,
        v4: Some(schemes::dir24_8::Dir24_8::build_boxed),
        v6: Some(schemes::dir24_8::Dir24_8V6::build_boxed),
    },
    SchemeInfo {
        name: "poptrie16",
        summary: "Poptrie: 64-ary popcount-compressed trie, direct pointing of 16 bits",
        reference: "Asai, Ohara, SIGCOMM 2015 (Poptrie16)",
        incremental: true,
        v4: Some(schemes::poptrie::build_boxed::<u32, 16>),
        v6: Some(schemes::poptrie::build_boxed::<u128, 16>),
    },
    SchemeInfo {
        name: "poptrie18",
        summary: "Poptrie: 64-ary popcount-compressed trie, direct pointing of 18 bits",
        reference: "Asai, Ohara, SIGCOMM 2015 (Poptrie18)",
        incremental: true,
        v4: Some(schemes::poptrie::build_boxed::<u32, 18>),
        v6: Some(schemes::poptrie::build_boxed::<u128, 18>),
    },
    SchemeInfo {
        name: "d16r",
        summary: "DXR D16R: 2^16-entry lookup table, binary search on 16/32-bit ranges (the paper's smallest)",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<16>),
        v6: None,
    },
    SchemeInfo {
        name: "d17r",
        summary: "DXR D17R: 2^17-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<17>),
        v6: None,
    },
    SchemeInfo {
        name: "d18r",
        summary: "DXR D18R: 2^18-entry lookup table, binary search on 16/32-bit ranges (the paper's fastest)",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<18>),
        v6: None,
    },
    SchemeInfo {
        name: "d19r",
        summary: "DXR D19R: 2^19-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<19>),
        v6: None,
    },
    SchemeInfo {
        name: "d20r",
        summary: "DXR D20R: 2^20-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<20>),
        v6: None,
    },
    SchemeInfo {
        name: "d21r",
        summary: "DXR D21R: 2^21-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<21>),
        v6: None,
    },
    SchemeInfo {
        name: "d22r",
        summary: "DXR D22R: 2^22-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<22>),
        v6: None,
    },
    SchemeInfo {
        name: "d23r",
        summary: "DXR D23R: 2^23-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<23>),
        v6: None,
    },
    SchemeInfo {
        name: "d24r",
        summary: "DXR D24R: 2^24-entry lookup table, binary search on 16/32-bit ranges",
        reference: "Zec, Rizzo, Mikuc, SIGCOMM CCR 42(5) 2012, §3",
        incremental: true,
        v4: Some(schemes::dxr::Dxr::build_boxed::<24>),
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
    #[cfg(all(feature = "dpdk", target_os = "linux"))]
    SchemeInfo {
        name: "dpdk-fib",
        summary: "DPDK rte_fib DIR24_8 (IPv4) and rte_fib6 trie (IPv6), bulk lookup, linked (feature `dpdk`)",
        reference: "DPDK 22.11 librte_fib; Gupta, Lin, McKeown, INFOCOM 1998",
        incremental: false,
        v4: Some(schemes::dpdk::DpdkFib::<u32>::build_boxed),
        v6: Some(schemes::dpdk::DpdkFib::<u128>::build_boxed),
    },
];

/// Builds an incremental scheme for family `A` from a `Rib`.
pub type IncrementalBuildFn<A> =
    fn(&Rib<A>, &BuildOptions) -> Result<Box<dyn IncrementalFib<A>>, BuildError>;

/// The in-place update builder of an incremental scheme (`SchemeInfo::incremental`).
struct IncrementalRow {
    name: &'static str,
    v4: Option<IncrementalBuildFn<u32>>,
    v6: Option<IncrementalBuildFn<u128>>,
}

static INCREMENTAL: &[IncrementalRow] = &[
    IncrementalRow {
        name: "poptrie16",
        v4: Some(schemes::poptrie::build_incremental::<u32, 16>),
        v6: Some(schemes::poptrie::build_incremental::<u128, 16>),
    },
    IncrementalRow {
        name: "poptrie18",
        v4: Some(schemes::poptrie::build_incremental::<u32, 18>),
        v6: Some(schemes::poptrie::build_incremental::<u128, 18>),
    },
    IncrementalRow {
        name: "d16r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<16>),
        v6: None,
    },
    IncrementalRow {
        name: "d17r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<17>),
        v6: None,
    },
    IncrementalRow {
        name: "d18r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<18>),
        v6: None,
    },
    IncrementalRow {
        name: "d19r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<19>),
        v6: None,
    },
    IncrementalRow {
        name: "d20r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<20>),
        v6: None,
    },
    IncrementalRow {
        name: "d21r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<21>),
        v6: None,
    },
    IncrementalRow {
        name: "d22r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<22>),
        v6: None,
    },
    IncrementalRow {
        name: "d23r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<23>),
        v6: None,
    },
    IncrementalRow {
        name: "d24r",
        v4: Some(schemes::dxr::Dxr::build_incremental::<24>),
        v6: None,
    },
];

/// The builder of scheme `name` as an [`IncrementalFib`], if it updates in place.
pub fn incremental_builder<A: Address>(name: &str) -> Option<IncrementalBuildFn<A>> {
    let row = INCREMENTAL.iter().find(|r| r.name == name)?;
    let any: &dyn Any = match A::FAMILY {
        Family::V4 => &row.v4,
        Family::V6 => &row.v6,
    };
    *any.downcast_ref::<Option<IncrementalBuildFn<A>>>()
        .expect("family and address type agree")
}

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

//! Deterministic Internet-like synthetic routing tables.
//!
//! [`generate`] builds a table of exactly [`SynthConfig::routes`] distinct prefixes from a
//! seed: the same configuration gives the same table on every platform (only integer and
//! exactly rounded IEEE arithmetic is involved, see `math.rs`). [`default_v4`] and
//! [`default_v6`] are the embedded defaults of the `lpmkit` command, so a run needs no
//! download; real tables (`shared/data`, or any `--table FILE`) remain the reference.
//!
//! ```
//! use lpmkit::synth::{self, SynthConfig};
//! use lpmkit::Ipv4;
//!
//! let cfg = SynthConfig { routes: 20_000, seed: 7, ..SynthConfig::ipv4_default() };
//! let table = synth::generate::<Ipv4>(&cfg);
//! assert_eq!(table.rib.len(), 20_000);
//! assert_eq!(table.name, "synthetic-ipv4-20000-seed7");
//! assert_eq!(table.next_hops.len(), 200);
//! ```
//!
//! # Model
//!
//! * **Prefix lengths.** The number of routes of each length follows the histogram of the
//!   bart tier-1 tables (`shared/data/README.md`), scaled to `routes` by largest remainders.
//! * **Nesting.** For each length, the share of top-level (uncovered) prefixes is the
//!   real table's; the rest are more-specifics placed inside an existing shorter prefix.
//!   A parent of length `m` is drawn with weight `count(m) · 2^(bias·(l − m))`, the bias
//!   (`0.6` for IPv4, `0.27` for IPv6) being fitted to the real tables' children per
//!   parent (an IPv4 /16 has 6.2 direct more-specifics on average, a /20 1.1, a /23 0.3).
//!   Deeper nesting emerges when a more-specific lands inside an earlier one.
//! * **Clustering.** Top-level prefixes lie in regions: IPv4 /8s 1–223 except 10 and 127,
//!   each with a seeded density weight (1 to 16), avoiding the reserved blocks (RFC 6598
//!   shared space, link local, private, TEST-NETs, benchmarking); IPv6 the IANA→RIR unicast
//!   blocks in 2000::/3 (/12 to /23), weighted by their route counts in the bart table
//!   (APNIC 2400::/12 most), avoiding 2001:db8::/32. Consecutive blocks are announced in
//!   runs (see `run_share`), giving the real tables' high share of routes whose sibling is
//!   also a route.
//! * **Coverage.** Top-level prefixes may cover at most [`SynthConfig::coverage`] of the
//!   address space (IPv4 default 71.3%, the bart table's). A larger IPv4 table therefore
//!   grows by more-specifics, as the real Internet has since the space ran out: its nested
//!   share rises above the reference 50.7%.
//! * **Next hops.** Ids `1..=next_hops`: id 1 is the dominant next hop (the transit
//!   default), drawn with probability `dominant_share`; ids 2.. follow a Zipf law with
//!   exponent `tail_exponent`. A more-specific takes its closest cover's next hop with
//!   probability `inherit_share`, else draws. Names are addresses from 198.18.0.0/15
//!   (IPv4, RFC 2544 benchmarking) or 2001:db8::/32 (IPv6): id `i` is base + `i`.
//!
//! # Calibration targets
//!
//! Checked by `tests/synth_traffic.rs` on [`default_v4`] (1,000,000 routes) and
//! [`default_v6`] (200,000 routes); reference figures are the bart tier-1 tables and,
//! for next hops, the real FIBs of `shared/data`:
//!
//! | figure | IPv4 target (bart) | IPv6 target (bart) |
//! |---|---|---|
//! | main lengths | /24 59.6%, /22 12.0%, /23 10.7%, /16 1.5% (±0.5 points) | /48 47.1%, /32 14.1%, /44 9.0%, /40 8.4% (±0.5 points) |
//! | longer than /24 resp. /48 | 0.11% (< 0.3%) | 0.21% (< 0.5%) |
//! | nested share | 50.7% at 902k routes (0.45–0.62 at 1M, see Coverage) | 56.9% (±5 points) |
//! | covered space | 71.3% (±2 points) | – |
//! | sibling share | 70.1% (0.55–0.80) | 57.5% (0.45–0.70) |
//! | dominant next hop | 56–92% in real FIBs; default 70% (±3 points) | 76% LINX 2017; default 70% |
//! | same next hop as closest cover | 87.5% (rrc06 2010); expect ≈ inherit + (1 − inherit)·Σp² ≈ 0.75 | same |
//!
//! `Shape::of(&table.rib)` measures all of these; `lpmkit info` prints them.

mod engine;
pub(crate) mod math;
mod model;
mod shape;

use core::fmt;

pub use shape::Shape;

use crate::nexthop::NextHopTable;
use crate::prefix::{format_addr, Address, Family, Ipv4, Ipv6};
use crate::table::Table;
use engine::{Engine, Params};
use math::Alias;

/// The largest exponent-like knob accepted (`tail_exponent`, `parent_bias`, …).
const MAX_KNOB: f64 = 32.0;

/// The most routes [`generate`] accepts.
pub const MAX_ROUTES: usize = 1 << 24;

/// The most next hops of an IPv4 table (their names fill 198.18.0.0/15).
pub const MAX_NEXT_HOPS_V4: u32 = (1 << 17) - 1;

/// How to generate a synthetic table. Fields that depend on the family are `Option`:
/// `None` takes the family's default (see the `get_*` accessors).
#[derive(Clone, Debug, PartialEq)]
pub struct SynthConfig {
    /// Number of routes (distinct prefixes), including the default route if any.
    pub routes: usize,
    /// Number of next hops (ids `1..=next_hops`).
    pub next_hops: u32,
    /// The seed: the same configuration and seed give the same table everywhere.
    pub seed: u64,
    /// Include a default route (`/0`, with the dominant next hop). Default `false`.
    pub default_route: bool,
    /// Share of routes drawn with next hop 1. Default `0.7`.
    pub dominant_share: f64,
    /// Zipf exponent of the other next hops' popularity. Default `1.0`.
    pub tail_exponent: f64,
    /// Probability that a more-specific takes its closest cover's next hop. Default `0.5`.
    pub inherit_share: f64,
    /// Probability that a run of consecutive same-length blocks continues. `None`: the
    /// family default ([`SynthConfig::get_run_share`]).
    pub run_share: Option<f64>,
    /// Parent-size bias of more-specifics (see the module docs). `None`: the family
    /// default ([`SynthConfig::get_parent_bias`]).
    pub parent_bias: Option<f64>,
    /// Relative weight of a nested parent against a top-level one of the same length when
    /// placing a more-specific (lower: shallower nesting). `None`: the family default
    /// ([`SynthConfig::get_nested_parent_weight`]).
    pub nested_parent_weight: Option<f64>,
    /// Probability that a more-specific goes under the parent of a random earlier one
    /// (preferential attachment). `None`: the family default
    /// ([`SynthConfig::get_attach_share`]).
    pub attach_share: Option<f64>,
    /// Clustering of small allocations: sub-blocks (the /16s of an IPv4 /8) get weights
    /// `2^(clustering·u)`, `u` uniform. 0: uniform. `None`: the family default
    /// ([`SynthConfig::get_clustering`]).
    pub clustering: Option<f64>,
    /// The most of the address space top-level prefixes may cover, as a fraction.
    /// `None`: the family default ([`SynthConfig::get_coverage`]).
    pub coverage: Option<f64>,
    /// A custom prefix-length histogram: `histogram[len]` is the relative weight of length
    /// `len` (entries past the end count as 0). `None`: the bart tier-1 table's.
    pub histogram: Option<Vec<u64>>,
}

impl SynthConfig {
    /// An IPv4 table like today's Internet: 1,000,000 routes, 200 next hops, seed 1.
    pub fn ipv4_default() -> Self {
        SynthConfig {
            routes: 1_000_000,
            next_hops: 200,
            seed: 1,
            default_route: false,
            dominant_share: 0.7,
            tail_exponent: 1.0,
            inherit_share: 0.5,
            run_share: None,
            parent_bias: None,
            nested_parent_weight: None,
            attach_share: None,
            clustering: None,
            coverage: None,
            histogram: None,
        }
    }

    /// An IPv6 table like today's Internet: 200,000 routes, 100 next hops, seed 1.
    pub fn ipv6_default() -> Self {
        SynthConfig {
            routes: 200_000,
            next_hops: 100,
            ..Self::ipv4_default()
        }
    }

    /// The default configuration of `family`.
    pub fn default_for(family: Family) -> Self {
        match family {
            Family::V4 => Self::ipv4_default(),
            Family::V6 => Self::ipv6_default(),
        }
    }

    /// [`run_share`](Self::run_share) or the family default (IPv4 0.7, IPv6 0.6).
    ///
    /// ```
    /// use lpmkit::{synth::SynthConfig, Family};
    /// let cfg = SynthConfig { run_share: Some(0.2), ..SynthConfig::ipv4_default() };
    /// assert_eq!(cfg.get_run_share(Family::V4), 0.2);
    /// ```
    pub fn get_run_share(&self, family: Family) -> f64 {
        self.run_share.unwrap_or(match family {
            Family::V4 => 0.7,
            Family::V6 => 0.6,
        })
    }

    /// [`parent_bias`](Self::parent_bias) or the family default (IPv4 0.4, IPv6 0.27).
    ///
    /// ```
    /// use lpmkit::{synth::SynthConfig, Family};
    /// assert_eq!(SynthConfig::ipv6_default().get_parent_bias(Family::V6), 0.27);
    /// ```
    pub fn get_parent_bias(&self, family: Family) -> f64 {
        self.parent_bias.unwrap_or(match family {
            Family::V4 => 0.4,
            Family::V6 => 0.27,
        })
    }

    /// [`nested_parent_weight`](Self::nested_parent_weight) or the family default (IPv4 0.55, IPv6 1.0).
    ///
    /// ```
    /// use lpmkit::{synth::SynthConfig, Family};
    /// assert_eq!(SynthConfig::ipv4_default().get_nested_parent_weight(Family::V4), 0.55);
    /// ```
    pub fn get_nested_parent_weight(&self, family: Family) -> f64 {
        self.nested_parent_weight.unwrap_or(match family {
            Family::V4 => 0.55,
            Family::V6 => 1.0,
        })
    }

    /// [`attach_share`](Self::attach_share) or the family default (IPv4 0.95, IPv6 0.9).
    ///
    /// ```
    /// use lpmkit::{synth::SynthConfig, Family};
    /// assert_eq!(SynthConfig::ipv6_default().get_attach_share(Family::V6), 0.9);
    /// ```
    pub fn get_attach_share(&self, family: Family) -> f64 {
        self.attach_share.unwrap_or(match family {
            Family::V4 => 0.95,
            Family::V6 => 0.9,
        })
    }

    /// [`clustering`](Self::clustering) or the family default (IPv4 8, IPv6 6).
    ///
    /// ```
    /// use lpmkit::{synth::SynthConfig, Family};
    /// assert_eq!(SynthConfig::ipv4_default().get_clustering(Family::V4), 8.0);
    /// ```
    pub fn get_clustering(&self, family: Family) -> f64 {
        self.clustering.unwrap_or(match family {
            Family::V4 => 8.0,
            Family::V6 => 6.0,
        })
    }

    /// [`coverage`](Self::coverage) or the family default (IPv4 0.713, the bart table's;
    /// IPv6 1.0, i.e. only the regions limit it).
    ///
    /// ```
    /// use lpmkit::{synth::SynthConfig, Family};
    /// assert_eq!(SynthConfig::ipv4_default().get_coverage(Family::V4), 0.713);
    /// ```
    pub fn get_coverage(&self, family: Family) -> f64 {
        self.coverage.unwrap_or(match family {
            Family::V4 => 0.713,
            Family::V6 => 1.0,
        })
    }

    fn validate(&self, family: Family) -> Result<(), SynthError> {
        if self.routes > MAX_ROUTES {
            return Err(SynthError::TooManyRoutes {
                max: MAX_ROUTES,
                requested: self.routes,
            });
        }
        let max_nh = match family {
            Family::V4 => MAX_NEXT_HOPS_V4,
            Family::V6 => u32::MAX - 1,
        };
        if self.next_hops == 0 || self.next_hops > max_nh {
            return Err(SynthError::Invalid {
                what: "next_hops",
                value: self.next_hops.to_string(),
                expected: match family {
                    Family::V4 => "1 to 131071 for IPv4",
                    Family::V6 => "at least 1",
                },
            });
        }
        let unit = |what: &'static str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(SynthError::Invalid {
                    what,
                    value: v.to_string(),
                    expected: "a number from 0 to 1",
                })
            }
        };
        unit("dominant_share", self.dominant_share)?;
        unit("inherit_share", self.inherit_share)?;
        unit("run_share", self.get_run_share(family))?;
        unit("coverage", self.get_coverage(family))?;
        unit("attach_share", self.get_attach_share(family))?;
        for (what, v) in [
            ("tail_exponent", self.tail_exponent),
            ("parent_bias", self.get_parent_bias(family)),
            (
                "nested_parent_weight",
                self.get_nested_parent_weight(family),
            ),
            ("clustering", self.get_clustering(family)),
        ] {
            if !(v.is_finite() && (0.0..=MAX_KNOB).contains(&v)) {
                return Err(SynthError::Invalid {
                    what,
                    value: v.to_string(),
                    expected: "a number from 0 to 32",
                });
            }
        }
        if let Some(h) = &self.histogram {
            let bits = family.bits() as usize;
            if h.len() > bits + 1 && h[bits + 1..].iter().any(|&w| w > 0) {
                return Err(SynthError::Invalid {
                    what: "histogram",
                    value: format!("weights up to length {}", h.len() - 1),
                    expected: "weights for lengths 0 to the address width only",
                });
            }
            let placed = self.routes - (self.default_route && self.routes > 0) as usize;
            if placed > 0 && h.iter().skip(1).take(bits).all(|&w| w == 0) {
                return Err(SynthError::Invalid {
                    what: "histogram",
                    value: "no weight on lengths 1 and longer".into(),
                    expected: "a positive weight on some length from 1 on",
                });
            }
        }
        Ok(())
    }
}

impl Default for SynthConfig {
    /// [`SynthConfig::ipv4_default`].
    fn default() -> Self {
        Self::ipv4_default()
    }
}

/// Why a table could not be generated.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SynthError {
    /// More routes than [`MAX_ROUTES`].
    TooManyRoutes {
        /// The limit.
        max: usize,
        /// The configured number.
        requested: usize,
    },
    /// A configuration field is out of range.
    Invalid {
        /// The field.
        what: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// The address space ran out: `missing` prefixes found no free position.
    NoRoom {
        /// Routes that could not be placed.
        missing: u64,
        /// Routes requested.
        requested: usize,
    },
}

impl fmt::Display for SynthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SynthError::TooManyRoutes { max, requested } => write!(
                f,
                "a synthetic table has at most {max} routes ({requested} requested)"
            ),
            SynthError::Invalid {
                what,
                value,
                expected,
            } => write!(f, "synthetic table: {what} = {value}, expected {expected}"),
            SynthError::NoRoom { missing, requested } => write!(
                f,
                "synthetic table: no room for {missing} of {requested} routes with this \
                 length mix (lower the route count or raise `coverage`)"
            ),
        }
    }
}

impl std::error::Error for SynthError {}

/// The routes of each length (`BITS + 1` entries, summing to `routes`) and the share of
/// top-level prefixes at each length.
fn length_plan<A: Address>(cfg: &SynthConfig, routes: u64) -> (Vec<u64>, Vec<f64>) {
    let bits = A::BITS as usize;
    let reference = model::reference_lengths(A::FAMILY);
    let mut weights = vec![0u64; bits + 1];
    let mut top_share = vec![0.5f64; bits + 1];
    for &(l, n, top) in reference {
        top_share[l as usize] = top as f64 / n as f64;
    }
    match &cfg.histogram {
        Some(h) => {
            for (l, &w) in h.iter().take(bits + 1).enumerate() {
                weights[l] = w;
            }
        }
        None => {
            for &(l, n, _) in reference {
                weights[l as usize] = n;
            }
        }
    }
    // A default route is added separately.
    weights[0] = 0;
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut counts = vec![0u64; bits + 1];
    if total == 0 {
        return (counts, top_share);
    }
    let mut rems: Vec<(u128, usize)> = Vec::new();
    let mut assigned = 0u64;
    for (l, &w) in weights.iter().enumerate() {
        let exact = routes as u128 * w as u128;
        counts[l] = (exact / total) as u64;
        assigned += counts[l];
        rems.push((exact % total, l));
    }
    // Largest remainders first; ties to the shorter length.
    rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, l) in rems.iter().take((routes - assigned) as usize) {
        counts[l] += 1;
    }
    (counts, top_share)
}

/// Generates a table, or explains why it cannot.
pub fn try_generate<A: Address>(cfg: &SynthConfig) -> Result<Table<A>, SynthError> {
    let family = A::FAMILY;
    cfg.validate(family)?;
    let default_route = cfg.default_route && cfg.routes > 0;
    let routes = (cfg.routes - default_route as usize) as u64;
    let (counts, top_share) = length_plan::<A>(cfg, routes);

    // Next-hop popularity: id 1 dominant, Zipf tail.
    let n = cfg.next_hops as usize;
    let mut weights = vec![0f64; n];
    if n == 1 {
        weights[0] = 1.0;
    } else {
        let tail: Vec<f64> = (1..n)
            .map(|k| 1.0 / math::pow(k as f64, cfg.tail_exponent))
            .collect();
        let sum: f64 = tail.iter().sum();
        weights[0] = cfg.dominant_share;
        for (w, t) in weights[1..].iter_mut().zip(&tail) {
            *w = (1.0 - cfg.dominant_share) * t / sum;
        }
        if weights.iter().all(|&w| w == 0.0) {
            weights[0] = 1.0;
        }
    }
    let next_hops = Alias::new(&weights).expect("positive next-hop weights");

    // Coverage budget: scale the top-level quotas down if they would cover too much.
    let linear: f64 = counts
        .iter()
        .enumerate()
        .map(|(l, &c)| c as f64 * top_share[l] * 2f64.powi(-(l as i32)))
        .sum();
    let cap = cfg.get_coverage(family);
    let k = if linear > cap { cap / linear } else { 1.0 };

    let regions = model::regions::<A>(cfg.seed);
    let sub_levels = model::sub_levels(cfg.seed, regions.len());
    let region_exponent = model::region_exponents(family);
    let reserved = model::reserved::<A>();
    let mut engine = Engine::new(
        Params {
            seed: cfg.seed,
            regions: &regions,
            sub_bits: model::SUB_BITS,
            sub_levels: &sub_levels,
            clustering: cfg.get_clustering(family),
            region_exponent: &region_exponent,
            reserved: &reserved,
            next_hops: &next_hops,
            inherit_share: cfg.inherit_share,
            run_share: cfg.get_run_share(family),
            parent_bias: cfg.get_parent_bias(family),
            nested_parent_weight: cfg.get_nested_parent_weight(family),
            attach_share: cfg.get_attach_share(family),
        },
        cfg.routes,
        counts.iter().skip(25).sum::<u64>() as usize,
    );
    if default_route {
        engine.add_default(1);
    }
    let mut carry = 0u64;
    for len in 1..=A::BITS {
        let want = counts[len as usize] + carry;
        if want == 0 {
            continue;
        }
        let top = ((want as f64) * top_share[len as usize] * k).round() as u64;
        let top = top.min(want);
        carry = engine.place_length(len, top, want - top);
    }
    if carry > 0 {
        return Err(SynthError::NoRoom {
            missing: carry,
            requested: cfg.routes,
        });
    }

    let mut routes = std::mem::take(&mut engine.routes);
    debug_assert_eq!(routes.len(), cfg.routes);
    routes.sort_unstable_by_key(|a| (a.0, a.1));
    let name = format!(
        "synthetic-{}-{}-seed{}",
        family.as_str(),
        cfg.routes,
        cfg.seed
    );
    let mut table = Table::new(name);
    table.next_hops = next_hop_names::<A>(cfg.next_hops);
    for (addr, len, nh) in routes {
        let prefix = crate::Prefix::new_truncating(addr, len);
        let nh = crate::NextHop::new(nh).expect("ids start at 1");
        table.rib.insert(prefix, nh);
    }
    Ok(table)
}

/// The names of next hops `1..=n`: 198.18.0.0 + id (IPv4) or 2001:db8:: + id (IPv6).
fn next_hop_names<A: Address>(n: u32) -> NextHopTable<String> {
    let base: u128 = match A::FAMILY {
        Family::V4 => 0xc612_0000,
        Family::V6 => 0x2001_0db8 << 96,
    };
    let mut t = NextHopTable::new();
    for i in 1..=n {
        t.intern(format_addr(A::from_u128(base + i as u128)));
    }
    t
}

/// Generates a table.
///
/// # Panics
/// If [`try_generate`] fails: an out-of-range configuration, or a route count the
/// address space cannot hold with the length mix.
pub fn generate<A: Address>(cfg: &SynthConfig) -> Table<A> {
    try_generate(cfg).unwrap_or_else(|e| panic!("{e}"))
}

/// The embedded default IPv4 table: [`SynthConfig::ipv4_default`] (1,000,000 routes).
pub fn default_v4() -> Table<Ipv4> {
    generate(&SynthConfig::ipv4_default())
}

/// The embedded default IPv6 table: [`SynthConfig::ipv6_default`] (200,000 routes).
pub fn default_v6() -> Table<Ipv6> {
    generate(&SynthConfig::ipv6_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_sums_exactly() {
        for routes in [0u64, 1, 7, 1000, 999_999] {
            let (c, _) = length_plan::<Ipv4>(&SynthConfig::ipv4_default(), routes);
            assert_eq!(c.iter().sum::<u64>(), routes);
            let (c, _) = length_plan::<Ipv6>(&SynthConfig::ipv6_default(), routes);
            assert_eq!(c.iter().sum::<u64>(), routes);
        }
    }

    #[test]
    fn names() {
        let t = next_hop_names::<Ipv4>(3);
        assert_eq!(
            t.value(crate::NextHop::new(1).unwrap()).unwrap(),
            "198.18.0.1"
        );
        let t = next_hop_names::<Ipv6>(2);
        assert_eq!(
            t.value(crate::NextHop::new(2).unwrap()).unwrap(),
            "2001:db8::2"
        );
    }
}

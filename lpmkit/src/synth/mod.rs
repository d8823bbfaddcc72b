//! Deterministic Internet-like synthetic routing tables.
//!
//! [`generate`] builds a table of exactly [`SynthConfig::routes`] distinct prefixes from a
//! seed: the same configuration gives the same table on every platform (only integer and
//! exactly rounded IEEE arithmetic is involved, see `math.rs`). [`default_v4`] and
//! [`default_v6`] are the embedded defaults of the `lpmkit` command, so a run needs no
//! download; real tables (`docs/data.md`, or any `--table FILE`) remain the reference.
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
//! Prefixes are placed one length at a time, shortest first (details in `engine.rs`).
//!
//! * **Prefix lengths.** The routes of each length follow the histogram of the bart
//!   tier-1 tables (`docs/data.md`), scaled to `routes` by largest remainders.
//!   Above the reference size (901,899 IPv4 routes) the IPv4 lengths /8–/16 keep the
//!   reference counts: in real tables they have barely changed while the table doubled
//!   (/16: 11,161 in 2010, 13,138 in 2015, 13,490 in 2023), and they alone cover over half
//!   the address space. IPv6 scales linearly. A length that finds no room moves on to the
//!   next longer one.
//! * **Nesting.** Per length, the share of top-level (uncovered) prefixes is the real
//!   table's; the others are more-specifics, each placed inside a parent so that the
//!   parent is its closest cover. The parent's length `m` is drawn with weight
//!   `count(m) · 2^(bias·(l − m))` (nested parents weighted by `nested_parent_weight`);
//!   within the length, with probability `attach_share`, the parent of an earlier
//!   more-specific of that length is reused (preferential attachment: most prefixes have
//!   no more-specifics, a few have hundreds, as in real tables), else one is drawn
//!   uniformly. 10% of more-specifics sit at their parent's first address (real tables:
//!   13.5% IPv4, 7.5% IPv6).
//! * **Clustering.** Top-level prefixes lie in regions: IPv4 the /8s 1–223 except 10 and
//!   127, IPv6 the IANA→RIR unicast blocks of 2000::/3 (/12 to /23, weighted by their
//!   route counts in the bart table, APNIC's 2400::/12 most). Each region is split into
//!   256 sub-blocks (the /16s of an IPv4 /8), and regions and sub-blocks have seeded
//!   weights (IPv4 /8s 1 to 256, sub-blocks 1 to `2^clustering`). A prefix picks a place
//!   with weight `w^((l − 18)/6)` (IPv4): /24s crowd into the dense places, /8–/16s avoid
//!   them, like the legacy blocks; IPv6 uses `w^1`. More-specifics in a parent spanning
//!   several sub-blocks go to the dense ones too. The reserved blocks inside the regions
//!   (RFC 6598 shared space, link local, private, TEST-NETs, benchmarking; IPv6
//!   2001:db8::/32) stay empty. Consecutive blocks are announced in runs (`run_share`),
//!   giving the real tables' share of routes whose sibling is also a route.
//! * **Coverage.** Top-level prefixes cover at most [`SynthConfig::coverage`] of the
//!   address space (IPv4 default 71.3%, the bart table's), so a larger IPv4 table grows
//!   by more-specifics, as the real Internet has since the space ran out: its nested share
//!   rises above the reference 50.7% (55.5% at 1M).
//! * **Next hops.** Ids `1..=next_hops`: id 1, the dominant next hop (the transit
//!   default), is drawn with probability `dominant_share`, ids 2.. with a Zipf law of
//!   exponent `tail_exponent`. A more-specific takes its parent's next hop with
//!   probability `inherit_share`, else draws. Names are addresses from 198.18.0.0/15
//!   (IPv4, RFC 2544 benchmarking) or 2001:db8::/32 (IPv6): id `i` is the base + `i`.
//!
//! # Calibration targets
//!
//! Checked by `tests/synth.rs` (the tolerance in brackets) on [`default_v4`]
//! (1,000,000 routes) and [`default_v6`] (200,000 routes); the targets are the bart tier-1
//! tables' figures and, for next hops, the real FIBs of the data set. "Measured" is seed
//! 1, as printed by `Shape`.
//!
//! | figure | IPv4 target | IPv4 measured | IPv6 target | IPv6 measured |
//! |---|---|---|---|---|
//! | main lengths | /24 59.6%, /22 12.0%, /23 10.7% [±0.5], /16 13,490 = 1.35% at 1M (1.50% at 902k) | 59.7%, 12.1%, 10.7%, 1.35% | /48 47.1%, /32 14.1%, /44 9.0%, /40 8.4% [±0.5] | 47.1%, 14.1%, 9.0%, 8.4% |
//! | longer than /24, /48 | 0.11% [0.05–0.3] | 0.11% | 0.21% [0.1–0.5] | 0.20% |
//! | every length at the reference size | bart's share [±0.5 points] | ✓ | bart's share [±0.5 points] | ✓ |
//! | nested share | 50.7% at 902k; more at 1M [0.48–0.62] | 55.5% | 56.9% [±5] | 56.9% |
//! | nesting depth 0/1/2/3/4+ (per mille) | 493/359/108/29/11 (bart, scaled) | 445/386/137/29/4 | 431/377/151/34/6 (bart) | 431/390/146/29/3 |
//! | covered space | 71.3% [±2] | 71.3% | – | 0.006% |
//! | routes whose sibling is a route | 70.1% [60–80] | 71.8% | 57.5% [45–70] | 61.6% |
//! | boundaries per route (≈ ranges) | 1.12 [1.0–1.35] | 1.17 | 1.39 | 1.35 |
//! | /16 (v6: /32) parents without more-specifics | 56% | 27% | 82% | 77% |
//! | dominant next hop | 56–92% in real FIBs; 70% [±3] | 70.0% | 76% (LINX 2017); 70% [±3] | 69.9% |
//! | same next hop as closest cover | ≈ inherit + (1 − inherit)·Σp² ≈ 0.75 [0.70–0.80] (rrc06 2010: 87.5%) | 74.8% | same | 74.5% |
//!
//! Known gaps: routes per /8 are more even than in real tables (densest /8: 10k routes
//! against 103/8's 38.5k), and the heaviest parents have about 100 more-specifics where
//! real ones reach 256 (IPv4 /16) or 1,621 (IPv6 /32).
//!
//! `Shape::of(&table.rib)` measures most of these.

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

/// Splits `routes` over `weights` (indexed by length) by largest remainders; ties go to
/// the shorter length.
fn apportion(routes: u64, weights: &[u64]) -> Vec<u64> {
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut counts = vec![0u64; weights.len()];
    if total == 0 {
        return counts;
    }
    let mut rems: Vec<(u128, usize)> = Vec::new();
    let mut assigned = 0u64;
    for (l, &w) in weights.iter().enumerate() {
        let exact = routes as u128 * w as u128;
        counts[l] = (exact / total) as u64;
        assigned += counts[l];
        rems.push((exact % total, l));
    }
    rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, l) in rems.iter().take((routes - assigned) as usize) {
        counts[l] += 1;
    }
    counts
}

/// The routes of each length (`BITS + 1` entries, summing to `routes`) and the share of
/// top-level prefixes at each length.
///
/// With the built-in IPv4 histogram and more routes than the reference table's 901,899,
/// lengths up to [`model::V4_FIXED_UPTO`] keep the reference counts and the rest grows:
/// the short prefixes of real tables have barely changed in number while the table
/// doubled (/16: 11,161 in 2010, 13,138 in 2015, 13,490 in 2023), and they alone cover
/// over half the address space, so scaling them would overflow it.
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
    let reference_total: u64 = weights.iter().sum();
    if cfg.histogram.is_none() && A::FAMILY == Family::V4 && routes > reference_total {
        let fixed = model::V4_FIXED_UPTO as usize + 1;
        let mut counts = weights.clone();
        let rest = routes - weights[..fixed].iter().sum::<u64>();
        let mut long = weights.clone();
        long[..fixed].fill(0);
        for (c, x) in counts[fixed..]
            .iter_mut()
            .zip(&apportion(rest, &long)[fixed..])
        {
            *c = *x;
        }
        return (counts, top_share);
    }
    (apportion(routes, &weights), top_share)
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

    // Coverage budget: scale the top-level quotas of the lengths that can nest down if
    // they would cover too much (the fixed short lengths keep theirs).
    let fixed = match (family, &cfg.histogram) {
        (Family::V4, None) => model::V4_FIXED_UPTO as usize,
        _ => 0,
    };
    let coverage = |range: core::ops::Range<usize>| -> f64 {
        range
            .map(|l| counts[l] as f64 * top_share[l] * 2f64.powi(-(l as i32)))
            .sum()
    };
    let (short, long) = (coverage(1..fixed + 1), coverage(fixed + 1..counts.len()));
    let budget = cfg.get_coverage(family) - short;
    let k = if long > budget {
        (budget / long).max(0.0)
    } else {
        1.0
    };

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
        counts.iter().skip(engine::G as usize + 1).sum::<u64>() as usize,
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
        let scale = if (len as usize) <= fixed { 1.0 } else { k };
        let top = ((want as f64) * top_share[len as usize] * scale).round() as u64;
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
        for routes in [0u64, 1, 7, 1000, 901_899, 901_900, 999_999, 2_500_000] {
            let (c, _) = length_plan::<Ipv4>(&SynthConfig::ipv4_default(), routes);
            assert_eq!(c.iter().sum::<u64>(), routes);
            if routes >= 901_899 {
                assert_eq!(
                    (c[8], c[16]),
                    (16, 13490),
                    "short lengths keep their counts"
                );
            }
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

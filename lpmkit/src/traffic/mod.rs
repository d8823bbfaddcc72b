//! Key streams for lookups: uniform random, the papers' request patterns, Zipf locality,
//! boundary keys.
//!
//! The papers measure with synthetic keys rather than traces, and each defines its own:
//!
//! * **DXR** (Zec, Rizzo, Mikuc, CCR 2012, §4 "Request patterns"): keys "uniformly
//!   distributed across the entire address space excluding multicast and other reserved
//!   ranges" ([`uniform_routable_v4`]), precomputed into a large array, looked up in three
//!   patterns: **RND** (each key once, no dependency between lookups), **REP** (each key
//!   16 times in a row: [`repeated`]) and **SEQ** (RND with an artificial data dependency
//!   between iterations: [`seq_key`]).
//! * **Spider** (Ueno et al., IEEE Access 2020, §V-A): 2^32 random IPv4 keys generated
//!   just in time by a linear congruential generator ([`Lcg`]), and, because random IPv6
//!   keys almost never match, IPv6 "matching" keys: a random entry of a pattern table
//!   holding the first 32 bits of every prefix ([`v6_patterns`]), 32 random bits, and the
//!   host part `::1` ([`v6_matching`], [`Lcg::fill_v6_matching`]).
//!
//! [`Pattern::Rnd`] draws keys with [`uniform`] over the *whole* space — the Spider and
//! Poptrie papers' distribution, precomputed — and is what `rep` and `seq` repeat;
//! [`Pattern::Routable`] is DXR's exact RND. The two differ for schemes whose cost depends
//! on where a key falls: unrouted space (0/8, 127/8, 224/3 — 13% of IPv4) resolves at the
//! first level of most schemes. Beyond the papers: [`zipf`] for skewed popularity
//! (locality, as real traffic has) and [`boundary_keys`] for correctness tests.
//! [`Pattern`] names the patterns for the command line and [`keys`] builds them.
//!
//! Every generator is deterministic in its seed. Bulk generators use SplitMix64, a few
//! nanoseconds per key (dominated by writing the keys out); Zipf keys are drawn in O(1)
//! each from alias tables, after a set-up linear in the table size.
//!
//! ```
//! use lpmkit::traffic;
//! let keys = traffic::uniform_routable_v4(1000, 7);
//! assert!(keys.iter().all(|&k| (1..224).contains(&(k >> 24)) && k >> 24 != 127));
//! let rep = traffic::repeated(&keys[..2], 16);
//! assert_eq!(rep.len(), 32);
//! assert!(rep[..16].iter().all(|&k| k == keys[0]));
//! ```

mod lcg;
mod pattern;

use core::fmt;

pub use lcg::Lcg;
pub use pattern::{ParsePatternError, Pattern};

use crate::prefix::{Address, Family, Ipv6, Prefix};
use crate::rib::Rib;
use crate::rng::{mix64, SplitMix64};
use crate::synth::math::{self, Alias};

/// DXR's REP: each key is looked up this many times in a row.
pub const REP_TIMES: usize = 16;

/// Ranks [`zipf`] keeps in its small, cache-resident sampler.
const ZIPF_HEAD: usize = 1 << 12;

/// The Zipf exponent of [`Pattern::Zipf`] in [`keys`].
pub const DEFAULT_ZIPF_EXPONENT: f64 = 1.0;

/// A generator for one stream: the seed mixed with the stream's name, so that different
/// generators given the same seed do not share their random bits.
fn stream(seed: u64, name: u64) -> SplitMix64 {
    SplitMix64::new(mix64(seed ^ name))
}

/// `n` keys uniform over the whole address space of `A`.
///
/// ```
/// let a: Vec<u128> = lpmkit::traffic::uniform(4, 1);
/// assert_eq!(a, lpmkit::traffic::uniform::<u128>(4, 1));
/// ```
pub fn uniform<A: Address>(n: usize, seed: u64) -> Vec<A> {
    let mut rng = stream(seed, 0x0075_6e69_666f_726d);
    let mut out = Vec::with_capacity(n);
    if A::BITS <= 32 {
        // Two keys per 64 random bits.
        for _ in 0..n / 2 {
            let r = rng.next();
            out.push(A::from_u128((r >> 32) as u128));
            out.push(A::from_u128(r as u32 as u128));
        }
        if n % 2 == 1 {
            out.push(A::from_u128((rng.next() >> 32) as u128));
        }
    } else {
        out.extend((0..n).map(|_| A::from_u128(rng.next_u128())));
    }
    out
}

/// `n` IPv4 keys uniform over the routable space, DXR's RND keys: every address except
/// `0.0.0.0/8`, `127.0.0.0/8`, multicast `224.0.0.0/4` and the reserved `240.0.0.0/4`,
/// i.e. the 222 /8s 1–126 and 128–223 (private ranges such as 10/8 are kept: they are
/// addresses a router may be asked about). Uniform up to a relative bias below 2^-32.
pub fn uniform_routable_v4(n: usize, seed: u64) -> Vec<u32> {
    let mut rng = stream(seed, 0x726e_645f_7634);
    (0..n).map(|_| routable_v4(&mut rng)).collect()
}

/// One key of [`uniform_routable_v4`].
fn routable_v4(rng: &mut SplitMix64) -> u32 {
    const SPAN: u64 = 222 << 24;
    let x = rng.below(SPAN) as u32;
    // /8 index 0..=221 → first octet 1..=126, 128..=223.
    let skip = (x >= 126 << 24) as u32;
    x + ((1 + skip) << 24)
}

/// `n` IPv6 keys uniform over the global unicast space `2000::/3` (the IPv6 side of
/// [`Pattern::Routable`]).
///
/// ```
/// let k = lpmkit::traffic::uniform_global_unicast_v6(100, 1);
/// assert!(k.iter().all(|&a| a >> 125 == 0b001));
/// ```
pub fn uniform_global_unicast_v6(n: usize, seed: u64) -> Vec<u128> {
    let mut rng = stream(seed, 0x676c_6f62_616c_3676);
    (0..n).map(|_| rng.next_u128() >> 3 | 1 << 125).collect()
}

/// Spider's pattern table: the first 32 bits of every prefix of `rib`, deduplicated and
/// sorted (prefixes shorter than /32 contribute their network address's first 32 bits).
pub fn v6_patterns(rib: &Rib<Ipv6>) -> Vec<u32> {
    patterns_of(rib)
}

/// [`v6_patterns`] for any family (IPv6 is the only one it makes sense for).
fn patterns_of<A: Address>(rib: &Rib<A>) -> Vec<u32> {
    let mut out: Vec<u32> = rib
        .iter()
        .map(|(p, _)| (p.addr().to_u128() >> 96) as u32)
        .collect();
    // Iteration is in address order, so equal patterns are adjacent.
    out.dedup();
    out
}

/// `n` of Spider's IPv6 matching keys (§V-A): a pattern drawn uniformly from
/// [`v6_patterns`]`(rib)`, 32 random bits, then the host part `::1` (the low 64 bits are
/// 1). With only prefixes of /32 or shorter in the table every key matches a route. An
/// empty table gives keys with pattern 0.
pub fn v6_matching(rib: &Rib<Ipv6>, n: usize, seed: u64) -> Vec<u128> {
    matching_keys(&v6_patterns(rib), n, seed)
}

fn matching_keys(patterns: &[u32], n: usize, seed: u64) -> Vec<u128> {
    let patterns: &[u32] = if patterns.is_empty() { &[0] } else { patterns };
    let len = patterns.len() as u64;
    let mut rng = stream(seed, 0x0076_366d_6174_6368);
    (0..n)
        .map(|_| {
            let r = rng.next();
            let i = (((r >> 32) * len) >> 32) as usize;
            (patterns[i] as u128) << 96 | ((r as u32) as u128) << 64 | 1
        })
        .collect()
}

/// `n` destinations inside the table's routes: a route drawn uniformly, then a uniform
/// address of it (its host bits random). Every key matches a route, though not always
/// the drawn one (a more specific route may cover it). An empty table gives no keys.
///
/// ```
/// use lpmkit::{Ipv4, NextHop, Rib};
/// let mut rib = Rib::<Ipv4>::new();
/// rib.insert("10.0.0.0/8".parse().unwrap(), NextHop::new(1).unwrap());
/// let keys = lpmkit::traffic::in_routes(&rib, 100, 7);
/// assert!(keys.iter().all(|&k| k >> 24 == 10));
/// ```
pub fn in_routes<A: Address>(rib: &Rib<A>, n: usize, seed: u64) -> Vec<A> {
    let routes: Vec<Prefix<A>> = rib.iter().map(|(p, _)| p).collect();
    if routes.is_empty() {
        return Vec::new();
    }
    let mut rng = stream(seed, 0x696e_726f_7574_6573);
    (0..n)
        .map(|_| {
            let p = routes[rng.below(routes.len() as u64) as usize];
            p.addr()
                .or(A::from_u128(rng.next_u128()).and(A::hostmask(p.len())))
        })
        .collect()
}

/// DXR's REP: every key `times` times in a row (the paper uses [`REP_TIMES`] = 16).
pub fn repeated<A: Copy>(keys: &[A], times: usize) -> Vec<A> {
    let mut out = Vec::with_capacity(keys.len() * times);
    for &k in keys {
        out.extend(core::iter::repeat_n(k, times));
    }
    out
}

/// `n` keys with Zipf-distributed popularity over the prefixes of `rib`.
///
/// The prefixes are ranked in a random order (a seeded shuffle, so popularity is not
/// tied to the address); a key picks rank `r` (from 1) with probability proportional to
/// `1 / r^exponent` and is then a uniformly random address inside that prefix. Its
/// longest match may be a more-specific inside the drawn prefix. `exponent = 0` is
/// uniform over prefixes; around 1 the most popular prefix draws `1 / H(routes)` of the
/// keys (7% of them with a million routes). An empty table gives [`uniform`] keys.
///
/// # Panics
/// If `exponent` is negative or not finite.
///
/// ```
/// use lpmkit::{NextHop, Rib};
/// let mut rib = Rib::<u32>::new();
/// for i in 0..100u32 {
///     rib.insert(lpmkit::Prefix::new(i << 24, 8)?, NextHop::new(1).unwrap());
/// }
/// let keys = lpmkit::traffic::zipf(&rib, 10_000, 1.2, 3);
/// assert!(keys.iter().all(|&k| k >> 24 < 100));
/// # Ok::<(), lpmkit::PrefixError>(())
/// ```
pub fn zipf<A: Address>(rib: &Rib<A>, n: usize, exponent: f64, seed: u64) -> Vec<A> {
    assert!(
        exponent.is_finite() && exponent >= 0.0,
        "Zipf exponent must be finite and non-negative, got {exponent}"
    );
    let mut prefixes: Vec<_> = rib.iter().map(|(p, _)| p).collect();
    if prefixes.is_empty() {
        return uniform(n, seed);
    }
    let mut rng = stream(seed, 0x7a69_7066);
    // Fisher–Yates: rank i is prefixes[i].
    for i in (1..prefixes.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        prefixes.swap(i, j);
    }
    let weights: Vec<f64> = (1..=prefixes.len())
        .map(|r| 1.0 / math::pow(r as f64, exponent))
        .collect();
    // Most draws go to the first ranks: a small sampler for them stays in cache, and a
    // large one for the rest is consulted with the rest's probability.
    let head = prefixes.len().min(ZIPF_HEAD);
    let total: f64 = weights.iter().sum();
    let head_sum: f64 = weights[..head].iter().sum();
    let head_threshold = if head == prefixes.len() {
        u64::MAX
    } else {
        (head_sum / total * 2f64.powi(64)) as u64
    };
    let head_pick = Alias::new(&weights[..head])
        .expect("positive weights")
        .with_payload(&prefixes[..head]);
    let tail_pick = Alias::new(&weights[head..]).map(|a| a.with_payload(&prefixes[head..]));
    // Keys are made in batches: first the random bits and the tail slots to read (whose
    // cache lines are prefetched, the tail table being too large for the cache), then
    // the keys.
    const BATCH: usize = 32;
    let mut out = Vec::with_capacity(n);
    let mut draws = [(0u64, 0u64, 0usize); BATCH];
    while out.len() < n {
        let b = (n - out.len()).min(BATCH);
        for d in &mut draws[..b] {
            let (which, r) = (rng.next(), rng.next());
            let slot = match &tail_pick {
                Some(tail) if which >= head_threshold => {
                    let i = tail.slot(r);
                    crate::simd::prefetch(tail.slot_ptr(i));
                    i
                }
                _ => {
                    let i = head_pick.slot(r);
                    crate::simd::prefetch(head_pick.slot_ptr(i));
                    i
                }
            };
            *d = (which, r, slot);
        }
        for &(which, r, slot) in &draws[..b] {
            let p = match &tail_pick {
                Some(tail) if which >= head_threshold => tail.resolve(slot, r),
                _ => head_pick.resolve(slot, r),
            };
            let host = if A::BITS <= 64 {
                rng.next() as u128
            } else {
                rng.next_u128()
            };
            out.push(p.addr().or(A::from_u128(host).and(A::hostmask(p.len()))));
        }
    }
    out
}

/// The addresses where lookups are most likely to go wrong: for every prefix its first
/// and last address and their neighbours on both sides (first ± 1, last ± 1, when they
/// exist), plus `0` and the largest address; deduplicated and sorted.
///
/// ```
/// use lpmkit::{NextHop, Rib};
/// let mut rib = Rib::<u32>::new();
/// rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
/// let keys = lpmkit::traffic::boundary_keys(&rib);
/// assert_eq!(
///     keys,
///     [0, 0x09ff_ffff, 0x0a00_0000, 0x0a00_0001, 0x0aff_fffe, 0x0aff_ffff, 0x0b00_0000, u32::MAX]
/// );
/// # Ok::<(), lpmkit::PrefixError>(())
/// ```
pub fn boundary_keys<A: Address>(rib: &Rib<A>) -> Vec<A> {
    let mut out = Vec::with_capacity(rib.len() * 6 + 2);
    out.push(A::ZERO);
    out.push(A::MAX);
    for (p, _) in rib.iter() {
        for a in [p.first(), p.last()] {
            out.push(a);
            out.extend(a.checked_dec());
            out.extend(a.checked_inc());
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// The key for the next lookup of DXR's SEQ pattern: `key` made to depend on the result
/// of the previous lookup, so that lookups cannot overlap (each waits for the one
/// before), without changing the key.
///
/// The key is `key | (previous_result & mask)` where `mask` is
/// [`seq_mask`]`()`, a zero the optimizer cannot see through
/// ([`std::hint::black_box`]); the compiler must therefore wait for `previous_result`
/// before it can form the key. Use it in the timing loop:
///
/// ```
/// use lpmkit::{traffic, Fib, NextHop, Rib};
/// # let mut rib = Rib::<u32>::new();
/// # rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
/// let keys = traffic::uniform_routable_v4(1000, 1);
/// let mut prev = 0u32;
/// let mut sum = 0u64;
/// for &k in &keys {
///     prev = NextHop::raw(rib.lookup(traffic::seq_key(k, prev)));
///     sum += prev as u64;
/// }
/// # let _ = sum;
/// # Ok::<(), lpmkit::PrefixError>(())
/// ```
#[inline(always)]
pub fn seq_key<A: Address>(key: A, previous_result: u32) -> A {
    key.or(A::from_u128((previous_result & seq_mask()) as u128))
}

/// Zero, hidden from the optimizer (see [`seq_key`]).
#[inline(always)]
pub fn seq_mask() -> u32 {
    std::hint::black_box(0)
}

/// Why [`keys`] cannot build a pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeysError {
    /// The pattern exists for the other family only (`v6match` on IPv4).
    WrongFamily {
        /// The pattern.
        pattern: &'static str,
        /// The family asked for.
        family: Family,
    },
    /// The pattern's keys come from a file (`trace:FILE`), which [`keys`] does not read.
    NeedsFile,
    /// `match:P` needs prefixes (other than /0) to match, and routable addresses none of
    /// them covers; the table lacks one or the other.
    NoMatchingSplit {
        /// What is missing.
        missing: &'static str,
    },
}

impl fmt::Display for KeysError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeysError::WrongFamily { pattern, family } => {
                write!(f, "key pattern `{pattern}` is not defined for {family}")
            }
            KeysError::NeedsFile => f.write_str(
                "trace keys come from a file: read it with the address-list reader (lpmkit::io)",
            ),
            KeysError::NoMatchingSplit { missing } => {
                write!(f, "key pattern `match`: the table has no {missing}")
            }
        }
    }
}

impl std::error::Error for KeysError {}

/// `n` keys of a synthetic `pattern` for a table:
///
/// * `rnd`, `seq`: [`uniform`] (SEQ differs in the timing loop only, through [`seq_key`]);
/// * `routable`: IPv4 [`uniform_routable_v4`], IPv6 [`uniform_global_unicast_v6`];
/// * `rep`: `⌈n/16⌉` such keys, each [`REP_TIMES`] times, cut to `n`;
/// * `zipf`: [`zipf`] with [`DEFAULT_ZIPF_EXPONENT`];
/// * `v6match`: [`v6_matching`] (IPv6 only).
///
/// ```
/// use lpmkit::traffic::{self, Pattern};
/// let rib = lpmkit::Rib::<u32>::new();
/// let k: Vec<u32> = traffic::keys(&Pattern::Rep, &rib, 40, 1)?;
/// assert_eq!(k.len(), 40);
/// assert!(traffic::keys::<u32>(&Pattern::V6Match, &rib, 1, 1).is_err());
/// # Ok::<(), traffic::KeysError>(())
/// ```
pub fn keys<A: Address>(
    pattern: &Pattern,
    rib: &Rib<A>,
    n: usize,
    seed: u64,
) -> Result<Vec<A>, KeysError> {
    let random = |n: usize| -> Vec<A> { uniform(n, seed) };
    Ok(match pattern {
        Pattern::Rnd | Pattern::Seq => random(n),
        Pattern::Routable => match A::FAMILY {
            Family::V4 => uniform_routable_v4(n, seed)
                .into_iter()
                .map(|k| A::from_u128(k as u128))
                .collect(),
            Family::V6 => uniform_global_unicast_v6(n, seed)
                .into_iter()
                .map(A::from_u128)
                .collect(),
        },
        Pattern::Rep => {
            let mut v = repeated(&random(n.div_ceil(REP_TIMES)), REP_TIMES);
            v.truncate(n);
            v
        }
        Pattern::Zipf => zipf(rib, n, DEFAULT_ZIPF_EXPONENT, seed),
        Pattern::V6Match => match A::FAMILY {
            Family::V6 => matching_keys(&patterns_of(rib), n, seed)
                .into_iter()
                .map(A::from_u128)
                .collect(),
            Family::V4 => {
                return Err(KeysError::WrongFamily {
                    pattern: "v6match",
                    family: Family::V4,
                })
            }
        },
        Pattern::Matching(r) => matching(rib, n, *r as f64 / 10_000.0, seed)?,
        Pattern::Trace(_) => return Err(KeysError::NeedsFile),
    })
}

/// `n` keys of which a share `ratio` (rounded to whole keys) match a prefix of `rib` and
/// the rest match none — the Bloomfwd paper's *matching ratio* (§6.4, Fig. 3), shuffled.
/// A matching key is a random address inside a prefix drawn uniformly from the table's
/// prefixes ("the same probability to match any prefix"); a key that matches none is a
/// routable address ([`uniform_routable_v4`], IPv6 `2000::/3`) that no prefix but /0
/// covers (drawn until one is found). A /0 route does not count as a match: such keys
/// "end up being forwarded to the default route".
///
/// ```
/// use lpmkit::{NextHop, Rib};
/// let mut rib = Rib::<u32>::new();
/// rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
/// let keys = lpmkit::traffic::matching(&rib, 1000, 0.8, 7)?;
/// let matched = keys.iter().filter(|&&k| rib.lookup(k).is_some()).count();
/// assert_eq!(matched, 800);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn matching<A: Address>(
    rib: &Rib<A>,
    n: usize,
    ratio: f64,
    seed: u64,
) -> Result<Vec<A>, KeysError> {
    let hits = ((n as f64) * ratio.clamp(0.0, 1.0)).round() as usize;
    let prefixes: Vec<Prefix<A>> = rib
        .iter()
        .map(|(p, _)| p)
        .filter(|p| !p.is_empty())
        .collect();
    if hits > 0 && prefixes.is_empty() {
        return Err(KeysError::NoMatchingSplit {
            missing: "prefix longer than /0",
        });
    }
    let mut rng = stream(seed, 0x6d61_7463_6869_6e67);
    let mut out: Vec<A> = Vec::with_capacity(n);
    for _ in 0..hits {
        let p = prefixes[rng.below(prefixes.len() as u64) as usize];
        let host = rng.next_u128() & A::hostmask(p.len()).to_u128();
        out.push(A::from_u128(p.addr().to_u128() | host));
    }
    let covered = |a: A| rib.lookup_prefix(a).is_some_and(|(p, _)| !p.is_empty());
    let mut misses = 0u64;
    while out.len() < n {
        let a = match A::FAMILY {
            Family::V4 => A::from_u128(routable_v4(&mut rng) as u128),
            Family::V6 => A::from_u128(rng.next_u128() >> 3 | 1 << 125),
        };
        if covered(a) {
            misses += 1;
            // The table covers (nearly) every routable address.
            if misses > 1_000 * (n as u64 + 1) {
                return Err(KeysError::NoMatchingSplit {
                    missing: "routable address outside its prefixes",
                });
            }
            continue;
        }
        out.push(a);
    }
    // Fisher–Yates: matching and non-matching keys interleaved.
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i as u64 + 1) as usize);
    }
    Ok(out)
}

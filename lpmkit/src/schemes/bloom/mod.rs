//! Bloom-filter longest-prefix matching: Naïve, Baseline and Bloomfwd, for IPv4 and IPv6.
//!
//! The scheme of A. Lucchesi, A. C. Drummond and G. Teodoro (University of Brasília;
//! "High-performance IP lookup using Intel Xeon Phi: a Bloom filters based approach",
//! Journal of Internet Services and Applications 9, 2018), built on Dharmapurikar, Krishnamurthy and Taylor's "Longest Prefix Matching
//! Using Bloom Filters" (IEEE/ACM ToN 14(2), 2006). Prefixes are grouped
//! by length into *levels*; each level is a counting Bloom filter in front of a hash table
//! of `[prefix, next hop]` pairs. A lookup probes the levels from the longest down: a
//! filter that answers "no" is skipped without touching its table, one that answers
//! "maybe" is confirmed in the table (a false positive costs one table probe, never a
//! wrong answer), and the first table hit is the longest match.
//!
//! # Variants (the registry's presets)
//!
//! | | `bloom-naive` (§3.1) | `bloom-base` (§3.2) | `bloomfwd` (§4) |
//! |---|---|---|---|
//! | IPv4 levels | every length 1…32 | CPE: 2^20-entry DLA + G1 (/24) + G2 (/32) | as Baseline |
//! | IPv6 levels | every length 1…64 | every length present (≤ 64) | DPCPE, 5 levels |
//! | filter sizes | symmetric (the largest set's) | asymmetric (Eq. 3 per set) | asymmetric |
//! | hash | MurmurHash3-32/64 | C `rand()` | H2 (IPv4), MurmurHash3-64 (IPv6) |
//! | double hashing, hash reuse | no | no | yes |
//! | 8-key AVX2 hashing | no | no | yes (scalar twin with `force_scalar`) |
//! | IPv6 level hint (beyond the paper) | no | no | yes (`level_hint`) |
//! | IPv6 /32 summary (beyond the paper) | no | no | yes (`summary`) |
//!
//! Every one of these is a [`BloomConfig`] field (and a registry setting), so any mix can
//! be measured; the target false-positive rate is `fpr` (30 % by default, the paper's
//! best).
//!
//! # What is implemented
//!
//! * **Naïve (§3.1, Algorithms 1–2)**: one counting filter and table per prefix length,
//!   probed longest first, positions computed only up to the first clear bit; the
//!   default route in a field of its own. The paper does not name its hash: MurmurHash3,
//!   "widely used in the context of Bloom filters" (§4.3.2).
//! * **Baseline (§3.2)**: asymmetric filters, `m = ⌈n·lg(1/f)/ln 2⌉`, `k = ⌈lg(1/f)⌉`
//!   (Table 5; `filter.rs`); IPv4 CPE — prefixes ≤ /20 (and the default route) in a
//!   direct lookup array (DLA) of 2^20 next hops, /21–/24 expanded to /24 (G1), /25–/32
//!   to /32 (G2), prefix capture handled (the longer original prefix keeps its keys;
//!   `cpe.rs`); a lookup probes G2, G1, then reads the DLA. Its hash is C `rand()`
//!   (§6.3: "Baseline uses the standard C rand() function"), glibc's, seeded by the key.
//! * **Bloomfwd (§4)**: H2 (Algorithm 3), MurmurHash3 specialised to 32- and 64-bit keys,
//!   Knuth's multiplicative method, each selectable for the filters (`hash`) and for the
//!   tables (`table_hash`) — the pairs of Fig. 1; Kirsch–Mitzenmacher double hashing
//!   (`g_i = h1 + i·h2`); reuse of the filter's hash as the table index; the FPR as a
//!   parameter; hashing of a vector of keys at a time (§4.3.2's ILP: 8 keys with AVX2, the
//!   paper's 16 with AVX-512; `kernel.rs`, with a scalar twin the tests compare), and —
//!   beyond the paper — the filter probes of a vector of keys at a time too (exact `mod m`
//!   by multiply-high, the filter words gathered); batches
//!   go through the match vectors of a group of keys in a four-stage software pipeline
//!   (`pipeline.rs`); multithreaded bulk lookup ([`Bloom::lookup_bulk`]:
//!   keys handed out to threads dynamically in small chunks, as the paper's OpenMP
//!   `dynamic` schedule; the `threads` setting makes large `lookup_batch` calls use it).
//! * **IPv6 (§3.2, §4.2)**: one level per present length, or **DPCPE**: `n` levels chosen
//!   to minimise the expanded prefix count (`cpe.rs`: the greedy procedure §4.2
//!   describes, which reproduces Table 4's level sets, or the exact dynamic programme),
//!   with prefix capture handled so answers stay exact. The paper stops at /64; real
//!   tables carry longer prefixes, so a **final exact stage** (the *gate*) holds them: a
//!   level keyed by the first 64 bits whose value is the sorted ranges of the longer
//!   prefixes under that /64 (binary-searched). It is probed first, with the /64 level's
//!   hash (`gate.rs`).
//! * **The level hint** (IPv6, beyond the paper; `hint.rs`, [`BloomConfig::level_hint`],
//!   on for Bloomfwd): per /32 with routes longer than /32, the levels above /32 that hold
//!   a key under it, in one cache-line bucket. A lookup probes, of the levels whose band
//!   lies above /32 (and the gate), only those its /32 names; the levels reaching /32 or
//!   below always. On bart IPv6, 10,906 of the 34,317 /32s its routes start in carry a
//!   longer route, 0.39 hinted levels per `v6match` key instead of five; the pipeline
//!   hashes and tests, per level, only the keys the hint lets match there.
//! * **The /32 summary** (IPv6, beyond the paper; `summary.rs`, [`BloomConfig::summary`],
//!   on wherever the hint is, in its place): the hint's per-/32 line also holds the
//!   answer of the routes up to /32 and which /36s hold longer routes. A lookup whose /32
//!   is listed probes only the levels above /32 its /32 names, and only if its /36 holds
//!   a longer route; otherwise that line is the answer. Every /32 under the routes of
//!   lengths `lo..=32` is listed (`lo` = 1 on bart and LINX; `summary_max` bounds it),
//!   so the levels at or below /32 serve only the /32s it does not list. On bart IPv6
//!   91 % of the `v6match` keys end after the one line. `--set summary=false` gives the
//!   level hint alone, `--set hint=false` the paper's lookup.
//! * **Updates in place under readers** (`writer.rs`, [`BloomWriter`], driven by
//!   [`crate::sync::InPlace`]): an announce or withdraw recomputes, from the `Rib`, the
//!   expanded keys (or DLA entries) its prefix covers, then sets or removes them through
//!   the counting filters and the tables — each table bucket rewritten beside the live one
//!   and switched with one atomic store, filter bits set before a key is published and
//!   cleared after it is unpublished, so every lookup returns the old or the new answer.
//!   A change the layout cannot take — a filter whose load pushes its false-positive rate
//!   past `fpr_bound`, a length no level holds, an expansion past `max_patch_keys`, a
//!   full hint or summary, full arenas — rebuilds the structure. Except for full arenas
//!   (found only while storing), the writer knows that before its first store, and
//!   builds the new table beside the live one before the generation begins
//!   ([`InPlaceWriter::prepare`](crate::fib::InPlaceWriter::prepare)): readers, validated
//!   ones included, keep reading the old table during the build.
//!
//! # Deliberate differences from the paper
//!
//! * Hash chains are stored as one contiguous block per bucket (the same probes as a
//!   linked list, fewer cache lines), so that a bucket can be replaced atomically.
//! * `x mod m` is computed exactly by multiplication (Lemire's method; Granlund–Montgomery
//!   in the AVX2 probes), not by division.
//! * C `rand()` is glibc's generator computed in closed form (the same outputs from about
//!   30 modular multiplications instead of glibc's ~350 dependent steps per `srand`; see
//!   `hash.rs`), so that the Baseline can run the test suites.
//! * The paper does not name the Naïve variant's hash: MurmurHash3 (§4.3.2 calls it
//!   "widely used in the context of Bloom filters"). Nor how Knuth's and H2's function
//!   families are seeded: H2's `i`-th function hashes `key ^ seed_i`, Knuth's multiplies
//!   by the `i`-th odd constant, so divisibility is kept as §6.2 describes; Knuth folds
//!   64-bit keys (`hi ^ lo`), and C `rand()` is seeded with the folded key.
//! * The level hint and the /32 summary (above), and batches in groups of 32 keys (the paper's lookups go one
//!   key per thread).
//! * The gate for prefixes longer than /64 (the paper drops them), DPCPE's optional
//!   exact dynamic programme, and DPCPE's stop when another level would not lower the
//!   cost. A DPCPE plan is refused (`CapacityExceeded`) when the keys it would expand to,
//!   counted exactly after prefix capture, pass `max_expanded` (the paper's "not possible
//!   because of the high memory requirements").
//! * The Xeon Phi specifics (512-bit vectors, offload, CPU+Phi co-execution, §4.4) have no
//!   counterpart on this CPU; AVX2 computes 8 hashes where the Phi computed 16.
//!
//! ```
//! use lpmkit::{Fib, IncrementalFib, Change, Ipv4, NextHop, Rib};
//! use lpmkit::schemes::bloom::{Bloom, BloomConfig};
//!
//! let nh = |v| NextHop::new(v).unwrap();
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, nh(1));
//! rib.insert("10.1.0.0/22".parse()?, nh(2));
//! rib.insert("10.1.2.128/25".parse()?, nh(3));
//! let mut fib = Bloom::build(&rib, &BloomConfig::bloomfwd())?;
//! assert_eq!(fib.lookup(0x0a01_0281), Some(nh(3))); // G2
//! assert_eq!(fib.lookup(0x0a01_0301), Some(nh(2))); // G1
//! assert_eq!(fib.lookup(0x0a05_0000), Some(nh(1))); // DLA
//!
//! let change = Change::Withdraw("10.1.2.128/25".parse()?);
//! change.apply_to(&mut rib);
//! fib.apply(&rib, &[change])?;
//! assert_eq!(fib.lookup(0x0a01_0281), Some(nh(2)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod config;
mod cpe;
mod filter;
mod gate;
mod hash;
mod hint;
mod kernel;
mod lookup;
mod pipeline;
mod stats;
mod summary;
mod table;
mod writer;

use core::marker::PhantomData;
use core::sync::atomic::AtomicUsize;

pub use config::{BloomConfig, Levels, Variant};
pub use hash::HashKind;
pub(crate) use stats::BloomStats;
#[doc(hidden)]
pub use writer::RetiredBlock;

use crate::fib::{Fib, Implementation, Stats};
use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::rib::Rib;
use crate::scheme::Patchable;
use crate::schemes::common::{Arena, FreeSpace};
use crate::simd::Kernels;

use filter::{Counters, Filter};
use hash::Hashing;
use table::{Table, TableSpace};

/// Bits of the IPv4 direct lookup array's index (§3.2: 2^20 entries).
pub(crate) const DLA_BITS: u8 = 20;

/// Whether an IPv4 table runs the AVX-512 instances of the hashing and filter kernels by
/// default; else the AVX2 ones, and the AVX-512 ones only when asked for (`isa:
/// Some(Isa::Avx512)`). The faster of the two where they were measured (`docs/simd.md`).
/// A table the registry builds where both run is measured instead ([`crate::simd::calibrate`]).
const AVX512_BY_DEFAULT_V4: bool = true;
/// IPv6: as [`AVX512_BY_DEFAULT_V4`].
const AVX512_BY_DEFAULT_V6: bool = false;

/// One level: the filter and table of the prefixes of lengths `lo..=len`, expanded to
/// `len` (or the gate).
pub(crate) struct Level {
    /// The key length.
    pub(crate) len: u8,
    /// The shortest prefix length the level holds (its band is `lo..=len`).
    pub(crate) lo: u8,
    /// Mask of the key bits ([`cpe::key_mask`]).
    pub(crate) mask: u64,
    /// The gate of the prefixes longer than 64 bits: values are range blocks.
    pub(crate) gate: bool,
    pub(crate) filter: Filter,
    pub(crate) table: Table,
}

/// What lookups read, for IPv4 (`u32`) or IPv6 (`u128`) addresses: the levels (longest
/// first, the gate before them), the DLA or the default route, and the gate's ranges.
/// Shared with reader threads while a [`BloomWriter`] patches it.
#[doc(hidden)]
pub struct BloomTable<A: Address> {
    name: &'static str,
    pub(crate) hashing: Hashing,
    /// Lookup order: the gate (if any), then the levels from the longest down.
    pub(crate) levels: Vec<Level>,
    /// The gate's range blocks: `[count, (first low 32, first high 32, next hop)…]`.
    pub(crate) ranges: Option<Arena<u32>>,
    /// The direct lookup array (IPv4 CPE): `2^DLA_BITS` switch words.
    pub(crate) dla: Option<Arena<u32>>,
    /// The default route when there is no DLA (one switch word).
    pub(crate) default: Arena<u32>,
    /// The IPv6 level hint (`hint.rs`).
    pub(crate) hint: Option<hint::Hint>,
    /// The IPv6 /32 summary (`summary.rs`; replaces the hint when on).
    pub(crate) summary: Option<summary::Summary>,
    /// The SIMD hashing and filter probes, where the CPU and the ceiling allow them.
    pub(crate) kernels: Kernels,
    /// Threads of [`Bloom::lookup_bulk`] for large `lookup_batch` calls (1: none).
    pub(crate) threads: usize,
    /// Block-arena tops per level and of the ranges (the last), for figures: set by the
    /// writer, each on a cache line of its own.
    pub(crate) tops: Vec<Top>,
    _family: PhantomData<fn() -> A>,
}

/// A writer-updated figure alone on its cache line.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Top(pub(crate) AtomicUsize);

impl<A: Address> core::fmt::Debug for BloomTable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("BloomTable")
            .field("name", &self.name)
            .field(
                "levels",
                &self.levels.iter().map(|l| l.len).collect::<Vec<_>>(),
            )
            .field("dla", &self.dla.is_some())
            .finish()
    }
}

/// The writer's side of one level: counters, table space and figures.
#[derive(Clone, Debug)]
pub(crate) struct LevelWriter {
    pub(crate) counters: Counters,
    pub(crate) space: TableSpace,
    /// DPCPE's estimate of the level's keys (prefix capture ignored).
    pub(crate) estimate: u128,
    /// The predicted false-positive rate past which an update rebuilds: the configured
    /// bound, scaled up for a filter that starts above the target (`k` is rounded up, so a
    /// large target such as 0.9 is exceeded from the start).
    pub(crate) bound: f64,
}

/// The writer side of a [`BloomTable`]: configuration, counters, free space, figures.
#[derive(Debug)]
#[doc(hidden)]
pub struct BloomWriter<A: Address> {
    pub(crate) config: BloomConfig,
    pub(crate) levels: Vec<LevelWriter>,
    /// `level_of[len]`: the level holding prefixes of length `len` (an index into the
    /// table's levels), [`DLA_LEVEL`], [`DEFAULT_LEVEL`], or [`NO_LEVEL`].
    pub(crate) level_of: Vec<u8>,
    pub(crate) ranges_space: FreeSpace,
    /// The summary's writer side (`summary.rs`), if the table has one.
    pub(crate) summary: Option<summary::SummaryWriter>,
    /// The operations [`InPlaceWriter::prepare`](crate::fib::InPlaceWriter::prepare)
    /// planned for the `patch` that follows it.
    pub(crate) prepared: Option<writer::Prepared>,
    pub(crate) build_ms: f64,
    pub(crate) updates: u64,
    pub(crate) keys_rewritten: u64,
    pub(crate) rebuilds: u64,
    pub(crate) update_seconds: f64,
    /// How much room the block arenas were reserved with (grows after they filled up).
    pub(crate) room: usize,
    _family: PhantomData<fn() -> A>,
}

/// `level_of`: the length is resolved by the DLA.
pub(crate) const DLA_LEVEL: u8 = 0xfd;
/// `level_of`: the default route's word.
pub(crate) const DEFAULT_LEVEL: u8 = 0xfe;
/// `level_of`: no level holds the length (a change of it rebuilds).
pub(crate) const NO_LEVEL: u8 = 0xff;

/// A Bloom-filter LPM structure for `u32` (IPv4) or `u128` (IPv6) addresses: its table and
/// its writer, for use on one thread ([`IncrementalFib`](crate::IncrementalFib)) or handed
/// to [`crate::sync::InPlace`] for updates under concurrent readers.
pub type Bloom<A> = Patchable<A, BloomWriter<A>>;

impl<A: Address> Bloom<A> {
    #[doc(hidden)]
    /// Structure figures: per level its band, keys, filter bits, `k`, predicted and
    /// measured false-positive rate, table load; the DLA; update counters.
    pub fn bloom_stats(&self) -> BloomStats {
        stats::collect(self.table(), self.writer())
    }

    /// Looks up `addrs` with `threads` threads (`out[i]` = next hop id or 0): the paper's
    /// thread-level parallelism (§4.3.1), chunks of keys handed out dynamically.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    #[doc(hidden)]
    pub fn lookup_bulk(&self, addrs: &[A], out: &mut [u32], threads: usize) {
        self.table().lookup_bulk(addrs, out, threads)
    }

    /// `lookup_batch` on the scalar hashing path whatever the CPU (the twin of the SIMD
    /// kernels); for tests and benchmarks.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn lookup_batch_scalar(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        self.table()
            .batch(addrs, &mut out[..addrs.len()], Kernels::default());
    }

    /// Checks that every level holds exactly the keys the `Rib` expands to, that every
    /// key's filter bits are set, and the DLA; for tests. Returns the first problem.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn check_against(&self, rib: &Rib<A>) -> Result<(), String> {
        build::check_against(self.table(), self.writer(), rib)
    }
}

/// One row of the paper's Table 4: the levels DPCPE chooses for `n`, the expanded prefix
/// count it estimates (prefix capture ignored) and the actual count (with capture).
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct DpcpePlan {
    /// The levels, ascending (64 last).
    pub levels: Vec<u8>,
    /// The paper's estimate, `Σ l_i · 2^(q − i)` (saturating).
    pub estimate: u128,
    /// The keys the levels actually hold (prefixes longer than /64 excluded).
    pub actual: u128,
}

/// DPCPE's plan for `rib` with `n` levels (the paper's greedy choice, or the optimal one):
/// Table 4, without building anything.
///
/// ```
/// use lpmkit::{NextHop, Rib};
/// let mut rib = Rib::<u128>::new();
/// rib.insert("2001:db8::/32".parse()?, NextHop::new(1).unwrap());
/// rib.insert("2001:db8::/31".parse()?, NextHop::new(2).unwrap());
/// let p = lpmkit::schemes::bloom::dpcpe_plan(&rib, 2, false);
/// assert_eq!(p.levels, vec![32, 64]);
/// assert_eq!((p.estimate, p.actual), (3, 2)); // the /32 captures one of the /31's two
/// # Ok::<(), lpmkit::PrefixError>(())
/// ```
#[doc(hidden)]
pub fn dpcpe_plan<A: Address>(rib: &Rib<A>, n: usize, optimal: bool) -> DpcpePlan {
    let plan = build::Plan::new(rib, &Levels::Dpcpe { n, optimal });
    let hist = build::histogram(rib);
    let levels: Vec<u8> = plan.specs.iter().map(|s| s.len).collect();
    DpcpePlan {
        estimate: cpe::estimate(&hist, &levels),
        actual: plan
            .specs
            .iter()
            .map(|s| cpe::actual_keys(rib, s.lo, s.len))
            .fold(0, u128::saturating_add),
        levels,
    }
}

impl<A: Address> BloomTable<A> {
    /// The SIMD kernels the lookups run.
    pub(crate) fn kernels(&self) -> Kernels {
        self.kernels
    }

    /// Bytes lookups may touch.
    fn bytes(&self) -> usize {
        use core::sync::atomic::Ordering::Relaxed;
        let levels: usize = self
            .levels
            .iter()
            .zip(&self.tops)
            .map(|(l, t)| l.filter.bytes() + l.table.bytes(t.0.load(Relaxed)))
            .sum();
        let ranges = self.tops.last().map_or(0, |t| t.0.load(Relaxed)) * 4;
        levels
            + ranges
            + self.dla.as_ref().map_or(0, |d| d.committed_bytes())
            + self.default.committed_bytes()
            + self.hint.as_ref().map_or(0, |h| h.bytes())
            + self.summary.as_ref().map_or(0, |s| s.bytes())
    }

    /// True if the levels a key probes depend on its /32 (a hint or a summary).
    #[inline(always)]
    pub(crate) fn guided(&self) -> bool {
        self.hint.is_some() || self.summary.is_some()
    }

    /// For `top` (a [`cpe::top_key`]): the levels to probe (the summary's or the hint's,
    /// or all) and the answer without a hit in them (the summary's; 0: the bottom).
    #[inline(always)]
    pub(crate) fn probe(&self, top: u64) -> (u32, u32) {
        if let Some(s) = &self.summary {
            return s.probe(top);
        }
        match &self.hint {
            Some(h) => (h.levels((top >> (64 - hint::HINT_BITS)) as u32), 0),
            None => (u32::MAX, 0),
        }
    }

    /// Prefetches what [`probe`](Self::probe) reads for `top`.
    #[inline(always)]
    pub(crate) fn prefetch_probe(&self, top: u64) {
        if let Some(s) = &self.summary {
            s.prefetch((top >> 32) as u32);
        } else if let Some(h) = &self.hint {
            h.prefetch((top >> 32) as u32);
        }
    }
}

impl<A: Address> Fib<A> for BloomTable<A> {
    /// A lookup of `key` that stalls after reading the head of the first table bucket it
    /// probes (`stall` runs in between), then reads the block it named: what a reader
    /// descheduled inside a lookup does. For the concurrency tests: the block must still
    /// be intact, however many updates ran meanwhile.
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        self.lookup_stalled(key, stall)
    }

    fn name(&self) -> &str {
        self.name
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(self.lookup_one(addr))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        if self.threads > 1 && addrs.len() >= lookup::PARALLEL_MIN {
            self.lookup_bulk(addrs, out, self.threads);
        } else {
            self.batch(addrs, out, self.kernels());
        }
    }

    fn memory_bytes(&self) -> usize {
        self.bytes()
    }

    fn stats(&self) -> Stats {
        stats::table_stats(self)
    }

    fn implementation(&self) -> Implementation {
        Implementation::of(self.kernels)
    }

    fn kernel_choice(&self) -> Option<crate::simd::KernelChoice> {
        Some(self.kernels.choice())
    }

    fn kernels_mut(&mut self) -> Option<&mut crate::simd::Kernels> {
        Some(&mut self.kernels)
    }
}

#[cfg(test)]
mod tests;

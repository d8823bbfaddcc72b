//! Spider: longest-prefix match parallelised with SIMD gathers, IPv4 and IPv6.
//!
//! The scheme of Y. Ueno, R. Nakamura, Y. Kuga and H. Esaki, "Fast Longest Prefix Matching
//! by Exploiting SIMD Instructions" (IEEE Access 8, 2020; short version "Spider:
//! Parallelizing Longest Prefix Matching with Optimization for SIMD Instructions", NetSoft
//! 2020). Instead of making one lookup short, Spider makes many lookups run at once: 8
//! addresses per AVX2 register, 16 per iteration with loop fusion.
//!
//! # The table (§III-A)
//!
//! A *state-jump table*: rows of 256 elements, one element per value of an address octet.
//! Each element says which next hop the address has so far and which row handles the next
//! octet. Rows are laid out one after another:
//!
//! * **row 0, End-of-Lookup (EoL)**: all zero, so an element of it points back to row 0 and
//!   sets no next hop. A lane whose lookup is finished idles there, reading row 0 without
//!   a branch, until every lane of the register is done;
//! * **rows 1–256, the direct pointing table**: 65,536 elements indexed by the first two
//!   octets (16 bits) at once, so the first memory access resolves every prefix up to /16;
//! * **one row per 8-bit stride node** of the multiway trie below, ordered level by level
//!   (all rows for the third octet, then all for the fourth, …), in address order within a
//!   level, so the rows random traffic reaches first are contiguous.
//!
//! # The lookup (§III-B, Algorithms 1 and 2)
//!
//! Eight addresses are loaded into one 256-bit register; `shuffle8` extracts the first two
//! octets, `add32` offsets them by 256 (row 1), one `vpgatherdd` fetches eight elements,
//! `shuffle8`/masks split them into next-hop and next-row indices. Then, while any lane has a
//! next row, the next octet is extracted, added to `row × 256`, gathered, and lanes whose
//! element carries a next hop take it (`cmpeq32` + `blend32`). Loop fusion interleaves two
//! such eight-lane streams, so an iteration looks up **16 addresses** (`spider16w`);
//! `spider8w` runs one stream. For IPv6 (Algorithm 2) four loads bring in eight addresses,
//! three `unpack` instructions gather the first 32 bits of each into one register (lanes in
//! the order 0, 2, 4, 6, 1, 3, 5, 7), the same loop walks the octets, the register is
//! refilled with the next 32 bits every four octets, and a final `permute32` restores the
//! lane order. The number of lanes looked up together, the *degree of parallelism* of the
//! paper's Fig. 6, is [`SpiderConfig::ways`] (1…16): fewer than eight lanes per stream are
//! masked loads and masked gathers. `spider1w` is the scalar code, one address at a time;
//! it is also what runs when the CPU has no AVX2 (detected at run time, see
//! [`crate::simd`]) or when scalar code is forced. The kernels are written once over the
//! vector layer of [`crate::simd`] (`kernel/`) and run on AVX2 or, for 16 ways, on
//! AVX-512, where a block's sixteen addresses are one 512-bit register.
//!
//! # Management (§III-C)
//!
//! The table is built from the [`Rib`], the route set kept for management, through the
//! 256-ary multiway trie with **route aggregation**: a node is omitted when its elements do
//! not change the result, and collapsed into its parent's element when all its elements
//! carry one next hop. Spider is updated by **batch rebuild**: changes go to the `Rib`, the
//! table is rebuilt and published with one pointer swap (see [`crate::sync`]); the build is
//! the update latency, so it is one linear pass over the table's ranges that allocates no
//! per-node memory (see `build.rs`).
//!
//! # Where lpmkit departs from the paper, and why
//!
//! * **Leaf-pushed elements.** The paper's elements keep the next hop of a covering prefix
//!   even when they also point to a row, and rows leave an element's next hop at 0 when the
//!   covering one still applies (the `blend` keeps it). lpmkit builds the aggregated trie
//!   from the table's projection onto disjoint address ranges, which gives every element
//!   its final answer (*leaf pushing*): an element either points to a row or carries a next
//!   hop (0 only where no route matches at all). The lookup is unchanged — a lane still
//!   keeps the last non-zero next hop it met — and aggregation is exact: a node exists if
//!   and only if the answer is not constant over its block, which is what the paper's two
//!   rules (omit, collapse) reach when applied until nothing changes.
//! * **Element layouts** ([`ElementLayout`]). The paper's element is two 16-bit fields,
//!   next-hop index and next-row index ([`ElementLayout::Paper32`]): at most 65,535 rows
//!   and next hops. A leaf-pushed element never needs both fields, which allows two more
//!   layouts. [`ElementLayout::Compact16`] has 16-bit elements whose value space is split
//!   per table: `1..=H` are next hops (`H` the largest id), larger values name rows; it
//!   holds any table whose next hops plus rows fit in 65,535 (all the real tables of
//!   the data set but the origin-AS IPv4 one) in half the memory, so twice as much of
//!   it stays in cache; it is gathered as 32-bit words at scale 2 and masked.
//!   [`ElementLayout::Wide32`] has 32-bit elements with a tag bit: 31-bit next hops or up
//!   to 2^23 rows (an 8 GiB table), for large IPv6 tables and tables with many next hops.
//!   It replaces the "2 × 32 bits with 64-bit gathers" the issue suggested: the same
//!   capacity for any table that fits in memory, at half the bytes and half the gathers.
//!   The build picks the smallest layout that holds the table (`Compact16`, then
//!   `Paper32`, then `Wide32`); [`SpiderConfig::layout`] forces one, and a table that does
//!   not fit the forced layout is a [`BuildError`], never truncated.
//! * **Pipelining** ([`SpiderConfig::pipeline`], on by default). The paper's loop waits for
//!   each level's gather before the next level's, so a 16-address iteration costs one
//!   memory latency per level, and a gather that misses blocks the reorder buffer. The
//!   SIMD kernels instead keep `IN_FLIGHT` blocks of `ways` addresses (`IN_FLIGHT_16W` of
//!   sixteen) at different depths and visit them in turn (asynchronous memory access
//!   chaining, Kocberber et al., VLDB 2015): a visit steps a block, and when the block's next level is *cold* — its rows
//!   take more than `CACHED_LEVEL_BYTES_V4` (IPv4) or `CACHED_LEVEL_BYTES_V6` — prefetches
//!   (into L1) the element every live lane reads next and moves on; by the block's next
//!   visit the data is there. Levels small enough to stay cached are stepped at once. A
//!   table without cold levels interleaves `INTERLEAVE` blocks instead, level by level and
//!   without prefetching, so that two blocks' gathers overlap. The lockstep blocks,
//!   End-of-Lookup idling and loop fusion are the paper's; `pipeline: false` runs the
//!   paper's loop as it is (one block at a time), and [`SpiderConfig::paper`] is the
//!   published `Spider16w`.
//! * **Cheaper steps in the SIMD kernels**: on AVX-512 each level's gather is masked by
//!   the lanes still walking (their base is not End-of-Lookup), so a finished lane takes
//!   no load slot (on AVX2 a finished lane idles in row 0, as in the paper: a mask vector
//!   per stream would cost more state than the loads it saves); where the
//!   lanes are in address order (IPv4; IPv6 on AVX-512) the pipelined kernels read the
//!   direct pointing table (128 KiB, in L2) with scalar loads instead of a gather (where
//!   a gather is microcoded it delivers about one element per cycle); prefetch addresses
//!   leave the register by `vmovq`/`vpextrq` instead of a store and reloads; `Compact16`
//!   accumulates the next hop with `or` instead of `cmpeq32` + `blend32`, which is exact
//!   because elements are leaf-pushed (a lane meets one non-zero next hop at most); and
//!   the kernels prefetch their own keys a few hundred ahead (within the caller's keys:
//!   the element misses they overlap fill the core's miss buffers, and the hardware's
//!   stream prefetcher then falls behind even a sequential key array). `pipeline: false`
//!   keeps the paper's gathers.
//! * **Lane refilling** ([`SpiderConfig::refill`]; default for IPv4, see `REFILL_V4`).
//!   In a lockstep block a lane that is finished keeps its slot while the other lanes of
//!   its block descend, and with uniform IPv4 keys on a full table most lanes finish at
//!   the direct pointing table. The refilling kernel (`kernel/refill.rs`; Polychroniou,
//!   Raghavan and Ross, "Rethinking SIMD Vectorization for In-Memory Databases", SIGMOD
//!   2015, whose *selective stores* keep vectors full of live keys) looks a chunk of 256
//!   keys up level by level instead: a first pass reads the direct pointing table by
//!   scalar loads, writes every next hop to `out` (final for most keys) and left-packs
//!   (`vpcompressd`, or a table of `vpermd` permutations on AVX2) the lookups that go on
//!   into a pending list, prefetching their next element when its level is cold; one
//!   pass per octet then gathers a vector of pending lookups at a time, writes their next
//!   hops at their keys' own indices and packs those that go on again (a level where
//!   under 1 in 16 lookups go on is passed by a scalar loop instead, see
//!   `SCALAR_PASS_INVERSE_SHARE`). Every gathered lane is a live lookup, the prefetch
//!   distance is a pass, and the octet extraction (and the IPv6 word reload) is the same
//!   for every lane of a pass. It covers 8 and 16 ways; other degrees run the lockstep
//!   kernels. Refilling pays where many lanes finish early and the deeper levels are
//!   cold (uniform IPv4 keys: lockstep blocks waste most of their lanes there); IPv6
//!   matching keys descend four to six levels together, so lockstep lanes are rarely
//!   idle and the refilling kernel's per-pass loads, packs and scattered stores cost
//!   more than they save. Hence the per-family default (`REFILL_V4`, `REFILL_V6`).
//! * **IPv6 word refill.** Algorithm 2 shifts the four loaded registers right by four bytes and
//!   unpacks again; lpmkit keeps addresses in host order (`u128`), so the first 32 bits are
//!   the *high* dword and the unpacks are `unpackhi`/`unpacklo` pairs. The refill re-reads
//!   the eight addresses from the input (which is in L1) and picks the next dword with the
//!   same three unpacks instead of shifting four live registers, which saves registers
//!   (two fused streams would need eight of the sixteen `ymm` registers for them). On
//!   AVX-512 two two-source permutes pick the word of sixteen addresses, in order.
//! * **Memory.** The table is one allocation, aligned to 2 MiB and advised for transparent
//!   huge pages (`madvise`) when it is larger than that: a lookup touches a random row, and
//!   a 10–40 MiB table in 4 KiB pages would miss the TLB on most of them. Rows are 256
//!   aligned elements (512 B or 1 KiB), so an element never straddles a cache line except
//!   the 4-byte read of the last 2-byte element of a line (1 in 32).
//!
//! [`Fib::stats`] reports the layout, rows per level against the nodes of the multiway trie
//! before aggregation (`trie_nodes_octetN`, `aggregated_away`), bytes, and build time.
//!
//! ```
//! use lpmkit::{Fib, Ipv4, NextHop, Rib};
//! use lpmkit::schemes::spider::{Spider, SpiderConfig};
//!
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.64.128.192/26".parse()?, NextHop::new(1).unwrap());
//! rib.insert("192.168.0.0/16".parse()?, NextHop::new(2).unwrap());
//! rib.insert("192.168.64.0/24".parse()?, NextHop::new(3).unwrap());
//!
//! let fib = Spider::build(&rib, &SpiderConfig::w16())?;
//! assert_eq!(fib.lookup(0xc0a8_4001), NextHop::new(3)); // 192.168.64.1 (Fig. 4)
//! let keys = [0xc0a8_4001, 0xc0a8_0101, 0x0a40_80c1, 0x0a40_8001];
//! let mut out = [0u32; 4];
//! fib.lookup_batch(&keys, &mut out);
//! assert_eq!(out, [3, 2, 1, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod codec;
mod elements;
#[cfg(target_arch = "x86_64")]
mod kernel;
mod scalar;

use core::marker::PhantomData;

use crate::fib::{BuildError, Config, Fib, Implementation, Settings, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Ipv4, Ipv6};
use crate::rib::Rib;
use crate::scheme::Scheme;
use crate::simd::Kernels;
use elements::with_table;

pub use codec::ElementLayout;
pub(crate) use elements::{Elements, Elems, Table};

/// Elements per row (one per value of an octet).
pub(crate) const ROW: usize = 256;
/// Index of the first row of the direct pointing table (row 0 is End-of-Lookup).
pub(crate) const DP_FIRST_ROW: usize = 1;
/// Rows of the direct pointing table (65,536 elements, the first 16 address bits).
pub(crate) const DP_ROWS: usize = 256;
/// Index of the first stride row, after EoL and the direct pointing table.
pub(crate) const FIRST_STRIDE_ROW: usize = DP_FIRST_ROW + DP_ROWS;
/// The most lanes looked up together (two fused 8-lane streams).
pub(crate) const MAX_WAYS: usize = 16;
/// How many keys ahead of the chunk they pass the refilling kernel (`kernel/refill.rs`)
/// prefetches the keys, and the pipelined lockstep kernels ahead of the block they start
/// (`kernel/lockstep.rs`), with
/// [`prefetch_keys_ahead`](crate::simd::prefetch_keys_ahead): the element misses they
/// overlap fill the core's miss buffers, and the hardware's stream prefetcher then falls
/// behind even a sequential key array.
pub(crate) const KEYS_AHEAD: usize = 512;

/// Blocks of `ways` addresses the pipelined kernels keep in flight (fewer than sixteen
/// ways; sixteen take [`IN_FLIGHT_16W`]).
pub(crate) const IN_FLIGHT: usize = 16;
/// Blocks of sixteen addresses the pipelined kernels keep in flight. Twelve, not sixteen,
/// by measurement: on an Intel Xeon (family 6 model 207), IPv6 matching keys in 256-key
/// calls, twelve ran 1.13x sixteen on the bart table (AVX-512; 1.07-1.09x on AVX2) and
/// 1.18x on 2 M routes (AVX-512; 1.06x on AVX2); six, eight, ten and fourteen were each
/// below twelve. The call boundary is part of it: a 256-key call is sixteen such blocks,
/// which sixteen in flight start all at once, so they reach their cold levels together
/// and no block is left to take a slot that frees; with 1,024-key calls twelve led by
/// 1.05x, with 65,536-key calls by 1.03x. Eight ways keep sixteen blocks (twelve measured
/// 0.94x there).
pub(crate) const IN_FLIGHT_16W: usize = 12;
/// Blocks of `ways` addresses the lockstep kernels interleave when every level of the
/// table stays cached (no level is prefetched): each visit steps a block by one octet and
/// moves on to the other, so two blocks' gathers are in flight at once. Three or four
/// blocks do no better than two; with cold levels, [`IN_FLIGHT`] pipelining with
/// prefetches is used instead.
pub(crate) const INTERLEAVE: usize = 2;
/// IPv4: the pipelined kernels prefetch the elements of a level only when its rows take
/// more than this many bytes (smaller levels stay in L2 while they are in use, and a
/// prefetch costs instructions).
pub(crate) const CACHED_LEVEL_BYTES_V4: usize = 256 << 10;
/// IPv6: as [`CACHED_LEVEL_BYTES_V4`]. An IPv6 lookup steps three or four levels, so a
/// visit costs more and levels that stay in L3 are cheaper to read directly: levels of a
/// few MiB are read without prefetching, larger ones (a full IPv6 table's deeper levels)
/// are prefetched.
pub(crate) const CACHED_LEVEL_BYTES_V6: usize = 3 << 20;

/// The lane-refilling kernel steps the pending lookups of a level with a scalar loop,
/// not gathers and left-packing, when fewer than 1/16 of the level's elements name a
/// row. With uniform keys that is the share of its lookups that go on, so the loop's
/// branch is predicted more than 15 times in 16. On full IPv4 tables few third-octet
/// lookups go on, and the scalar pass beats vector passes there; on a table where half of
/// them go on, the vector pass is faster, and this rule keeps it.
pub(crate) const SCALAR_PASS_INVERSE_SHARE: usize = 16;

/// IPv4: whether [`SpiderConfig::refill`] `None` refills lanes (the faster kernel for
/// uniform IPv4 keys, see the module docs).
pub(crate) const REFILL_V4: bool = true;
/// IPv6: as [`REFILL_V4`]; the lockstep kernel is faster on the paper's matching keys.
pub(crate) const REFILL_V6: bool = false;

/// IPv4: whether a 16-way table runs the AVX-512 instance of the kernels by default; else
/// the AVX2 one, and the AVX-512 one only when asked for (`isa: Some(Isa::Avx512)`). The
/// faster of the two where they were measured (`docs/simd.md`).
/// A table the registry builds where both run is measured instead ([`crate::simd::calibrate`]).
pub(crate) const AVX512_BY_DEFAULT_V4: bool = true;
/// IPv6: as [`AVX512_BY_DEFAULT_V4`].
pub(crate) const AVX512_BY_DEFAULT_V6: bool = true;

/// Build options for [`Spider`].
///
/// ```
/// use lpmkit::schemes::spider::{ElementLayout, SpiderConfig};
///
/// let fig6_point = SpiderConfig { ways: 11, ..SpiderConfig::w16() };
/// let paper_element = SpiderConfig { layout: Some(ElementLayout::Paper32), ..Default::default() };
/// assert_eq!(SpiderConfig::default(), SpiderConfig::w16());
/// # let _ = (fig6_point, paper_element);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiderConfig {
    /// Lanes looked up together, 1…16 (the degree of parallelism of Fig. 6): 16 is two
    /// fused 8-lane streams (`spider16w`), 8 one stream (`spider8w`); other values mask
    /// lanes off. The scalar code honours it too, stepping `ways` addresses in lockstep.
    pub ways: usize,
    /// Use the scalar code even if the CPU has AVX2.
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: the best the CPU has);
    /// see [`crate::simd::Isa`].
    pub isa: Option<crate::simd::Isa>,
    /// Force an element layout instead of the smallest that holds the table.
    pub layout: Option<ElementLayout>,
    /// Keep several blocks of `ways` addresses in flight and prefetch the element each
    /// lane reads next (see the module docs); `false` runs the paper's loop as it is, one
    /// block at a time. Only the AVX2 kernels pipeline.
    pub pipeline: bool,
    /// Lane refilling (see the module docs): with AVX2 and 8 or 16 ways, look keys up
    /// level by level, packing the lookups that go on into full vectors, instead of in
    /// lockstep blocks. `None` (the default) picks the faster kernel for the family:
    /// refilling for IPv4 (`REFILL_V4`), lockstep blocks for IPv6 (`REFILL_V6`). Other
    /// `ways`, and the scalar code, ignore it.
    pub refill: Option<bool>,
}

impl Default for SpiderConfig {
    fn default() -> Self {
        Self::w16()
    }
}

impl SpiderConfig {
    /// `spider16w`: two fused streams of eight lanes.
    pub fn w16() -> Self {
        SpiderConfig {
            ways: 16,
            force_scalar: false,
            isa: None,
            layout: None,
            pipeline: true,
            refill: None,
        }
    }

    /// `spider8w`: one stream of eight lanes.
    pub fn w8() -> Self {
        SpiderConfig {
            ways: 8,
            ..Self::w16()
        }
    }

    /// `spider1w`: the scalar lookup, one address at a time.
    pub fn w1() -> Self {
        SpiderConfig {
            ways: 1,
            force_scalar: true,
            ..Self::w16()
        }
    }

    /// The paper's `Spider16w` as published: two fused 8-lane streams, the 2 × 16-bit
    /// element, one block at a time (no pipelining).
    pub fn paper() -> Self {
        SpiderConfig {
            layout: Some(ElementLayout::Paper32),
            pipeline: false,
            refill: Some(false),
            ..Self::w16()
        }
    }
}

/// Structure figures gathered by the build, for [`Fib::stats`].
#[derive(Clone, Debug, Default)]
pub(crate) struct BuildInfo {
    /// Rows per trie level below the direct pointing table (index 0 = third octet).
    rows_per_level: Vec<usize>,
    /// Nodes of the multiway trie before aggregation, per level.
    trie_nodes_per_level: Vec<usize>,
    /// Disjoint address ranges of the table (after merging equal neighbours).
    ranges: usize,
    /// Largest next-hop id.
    max_next_hop: u32,
    /// Routes in the `Rib`.
    routes: usize,
    /// Milliseconds the build took.
    build_ms: f64,
}

/// How `lookup_batch` runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LookupParams {
    /// Lanes per block.
    pub(crate) ways: usize,
    /// Several blocks in flight with prefetching (AVX2 only).
    pub(crate) pipeline: bool,
    /// The lane-refilling kernel (AVX2, 8 or 16 ways).
    pub(crate) refill: bool,
    /// Bit `o`: the rows read at octet `o` exceed [`CACHED_LEVEL_BYTES_V4`] (IPv4) or
    /// [`CACHED_LEVEL_BYTES_V6`]; the pipelined kernels prefetch only for those.
    pub(crate) cold_octets: u32,
    /// Bit `o`: the lane-refilling kernel reads the rows of octet `o` with a scalar loop
    /// instead of gathers and left-packing, because fewer than
    /// 1/[`SCALAR_PASS_INVERSE_SHARE`] of their elements name a row: the loop's branch on
    /// "goes on" is then predicted, and scalar loads beat a microcoded gather.
    pub(crate) scalar_passes: u32,
}

impl LookupParams {
    /// Blocks the lockstep AVX2 kernels keep in flight: 1 without pipelining (the paper's
    /// loop), [`IN_FLIGHT`] ([`IN_FLIGHT_16W`] for sixteen ways) when some level is
    /// prefetched, else [`INTERLEAVE`].
    pub(crate) fn lockstep_blocks(&self) -> usize {
        if !self.pipeline {
            1
        } else if self.cold_octets != 0 {
            if self.ways == MAX_WAYS {
                IN_FLIGHT_16W
            } else {
                IN_FLIGHT
            }
        } else {
            INTERLEAVE
        }
    }
}

/// A Spider lookup table for IPv4 ([`Ipv4`]) or IPv6 ([`Ipv6`]).
///
/// Built by [`Spider::build`]; looks up through [`Fib`].
pub struct Spider<A: Address> {
    table: Table,
    /// The AVX-512 instance only for the ways it serves (16).
    kernels: Kernels,
    params: LookupParams,
    name: String,
    info: BuildInfo,
    _family: PhantomData<fn(A) -> A>,
}

impl<A: Address> core::fmt::Debug for Spider<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Spider")
            .field("name", &self.name)
            .field("layout", &self.layout())
            .field("ways", &self.ways())
            .field("rows", &self.rows())
            .field("implementation", &Implementation::of(self.kernels))
            .field("routes", &self.info.routes)
            .finish_non_exhaustive()
    }
}

impl Config for SpiderConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        ("ways", "lanes looked up together, 1..=16"),
        (
            "scalar",
            "walk the table with scalar code, one address at a time (spider1w)",
        ),
        (
            "pipeline",
            "AVX2: keep 16 blocks of `ways` lanes in flight with prefetches (default true); false runs the paper's loop, one block at a time",
        ),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        Ok(SpiderConfig {
            ways: s.ways().or(s.get("ways")?).unwrap_or(16),
            force_scalar: s.force_scalar() || s.get("scalar")?.unwrap_or(false),
            isa: s.isa(),
            pipeline: s.get("pipeline")?.unwrap_or(true),
            ..SpiderConfig::w16()
        })
    }
}

impl<A: Address> Scheme<A> for Spider<A>
where
    Spider<A>: Fib<A>,
{
    type Config = SpiderConfig;

    fn build(rib: &Rib<A>, config: &SpiderConfig) -> Result<Self, BuildError> {
        Spider::build(rib, config)
    }
}

impl<A: Address> Spider<A> {
    /// Builds the table from `rib`.
    ///
    /// Fails if `config.ways` is not in 1…16, or the table does not fit the forced layout
    /// (or, without one, the widest layout: more than 2^23 rows or a next hop ≥ 2^31).
    pub fn build(rib: &Rib<A>, config: &SpiderConfig) -> Result<Self, BuildError> {
        build::build(rib, config)
    }

    #[doc(hidden)]
    /// The element layout in use.
    pub fn layout(&self) -> ElementLayout {
        self.table.layout()
    }

    /// Lanes looked up together.
    pub(crate) fn ways(&self) -> usize {
        self.params.ways
    }

    /// Rows of the table: EoL, the 256 rows of the direct pointing table, and the stride
    /// rows.
    pub(crate) fn rows(&self) -> usize {
        FIRST_STRIDE_ROW + self.stride_rows()
    }

    /// Stride rows (nodes of the aggregated trie below the direct pointing table).
    pub(crate) fn stride_rows(&self) -> usize {
        self.info.rows_per_level.iter().sum()
    }

    #[doc(hidden)]
    /// Stride rows per level: index 0 holds the rows for the third octet, and so on.
    pub fn rows_per_level(&self) -> &[usize] {
        &self.info.rows_per_level
    }

    #[doc(hidden)]
    /// Nodes below the direct pointing table of the multiway trie *before* route
    /// aggregation, per level (compare with [`rows_per_level`](Self::rows_per_level)).
    pub fn trie_nodes_per_level(&self) -> &[usize] {
        &self.info.trie_nodes_per_level
    }

    #[doc(hidden)]
    /// Milliseconds the build took.
    pub fn build_ms(&self) -> f64 {
        self.info.build_ms
    }

    /// How deep lookups of `keys` go: `h[n]` counts the keys whose lookup reads `n`
    /// elements after the direct pointing element (`h[0]`: answered by the first 16 bits;
    /// `h[1]`: one more element, from a row of the third octet; …). With the level sizes
    /// ([`rows_per_level`](Self::rows_per_level)) and `prefetched_octets`
    /// it tells how many reads per lookup leave the cache, which bounds the lookup rate.
    ///
    /// ```
    /// # use lpmkit::{Ipv4, NextHop, Rib};
    /// # use lpmkit::schemes::spider::{Spider, SpiderConfig};
    /// let mut rib = Rib::<Ipv4>::new();
    /// rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
    /// rib.insert("10.0.1.0/24".parse()?, NextHop::new(2).unwrap());
    /// rib.insert("10.0.1.128/25".parse()?, NextHop::new(3).unwrap());
    /// let fib = Spider::build(&rib, &SpiderConfig::w16())?;
    /// // 11.0.0.0 ends at the direct pointing table; 10.0.2.1 reads one third-octet
    /// // element; 10.0.1.200 reads a third- and a fourth-octet element.
    /// let h = fib.depth_histogram(&[0x0b00_0000, 0x0a00_0201, 0x0a00_01c8]);
    /// assert_eq!(h, [1, 1, 1]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[doc(hidden)]
    pub fn depth_histogram(&self, keys: &[A]) -> Vec<u64> {
        let mut h = vec![0u64; 1];
        for &k in keys {
            let (_, levels) = with_table!(self.table, |t, C| scalar::lookup_counting::<A, C>(
                t,
                self.table.split,
                k
            ));
            if levels >= h.len() {
                h.resize(levels + 1, 0);
            }
            h[levels] += 1;
        }
        h
    }

    /// The octets (numbered from 1, as in the `prefetched_octets` stat) whose rows the
    /// pipelined AVX2 kernels prefetch: those of levels too large to stay in cache
    /// ([`CACHED_LEVEL_BYTES_V4`], [`CACHED_LEVEL_BYTES_V6`]).
    pub(crate) fn prefetched_octets(&self) -> Vec<usize> {
        (0..32)
            .filter(|o| self.params.cold_octets & (1 << o) != 0)
            .map(|o| o + 1)
            .collect()
    }

    /// The scalar lookup of one address (the twin every kernel is checked against).
    #[inline]
    fn lookup_scalar(&self, addr: A) -> u32 {
        with_table!(self.table, |t, C| scalar::lookup_one::<A, C>(
            t,
            self.table.split,
            addr
        ))
    }

    fn lookup_batch_scalar(&self, addrs: &[A], out: &mut [u32]) {
        with_table!(self.table, |t, C| scalar::lookup_batch::<A, C>(
            t,
            self.table.split,
            self.params.ways,
            addrs,
            out
        ))
    }

    /// How deep lookups of `keys` go ([`depth_histogram`](Self::depth_histogram): the
    /// shares `depth.N` and `depth_mean`) and `cold_reads_per_lookup`, the reads per lookup
    /// from levels too large to stay cached ([`prefetched_octets`](Self::prefetched_octets)):
    /// the figure that bounds Spider's rate against DIR-24-8's one uncached read.
    fn depth_profile(&self, keys: &[A]) -> Stats {
        let h = self.depth_histogram(keys);
        let total = h.iter().sum::<u64>().max(1) as f64;
        let cold = self.prefetched_octets();
        // A lookup of depth d reads one element at each of octets 3 ..= d + 2.
        let cold_reads = h
            .iter()
            .enumerate()
            .map(|(d, &c)| (3..d + 3).filter(|o| cold.contains(o)).count() as f64 * c as f64)
            .sum::<f64>()
            / total;
        let mut s = Stats::new()
            .with_shares("depth", &h)
            .with("cold_reads_per_lookup", StatValue::Ratio(cold_reads));
        for &o in &cold {
            let bytes = self.info.rows_per_level.get(o - 3).copied().unwrap_or(0)
                * ROW
                * self.layout().element_bytes();
            s.push(
                format!("cold_level_octet{o}"),
                StatValue::Bytes(bytes as u64),
            );
        }
        s
    }

    fn common_stats(&self) -> Stats {
        let i = &self.info;
        let layout = self.layout();
        let simd = Implementation::of(self.kernels) != Implementation::Scalar;
        let refills = self.params.refill && matches!(self.params.ways, 8 | 16) && simd;
        let mut s = Stats::new()
            .with("ways", StatValue::Count(self.params.ways as u64))
            .with(
                "in_flight_blocks",
                StatValue::Count(if !refills && simd {
                    self.params.lockstep_blocks() as u64
                } else {
                    1
                }),
            )
            .with(
                "refill",
                StatValue::Text(if refills { "yes" } else { "no" }.into()),
            )
            .with("layout", StatValue::Text(layout.as_str().into()))
            .with(
                "element_bytes",
                StatValue::Count(layout.element_bytes() as u64),
            )
            .with("rows", StatValue::Count(self.rows() as u64))
            .with("stride_rows", StatValue::Count(self.stride_rows() as u64));
        for (l, (&rows, &nodes)) in i
            .rows_per_level
            .iter()
            .zip(&i.trie_nodes_per_level)
            .enumerate()
        {
            if nodes == 0 && rows == 0 {
                continue;
            }
            let octet = l + 3;
            s.push(format!("rows_octet{octet}"), StatValue::Count(rows as u64));
            s.push(
                format!("trie_nodes_octet{octet}"),
                StatValue::Count(nodes as u64),
            );
        }
        let cold: Vec<String> = self
            .prefetched_octets()
            .iter()
            .map(|o| o.to_string())
            .collect();
        s.push("prefetched_octets", StatValue::Text(cold.join(",")));
        if refills {
            let scalar: Vec<String> = (0..32)
                .filter(|o| self.params.scalar_passes & (1 << o) != 0)
                .map(|o| (o + 1).to_string())
                .collect();
            s.push("scalar_pass_octets", StatValue::Text(scalar.join(",")));
        }
        let nodes: usize = i.trie_nodes_per_level.iter().sum();
        s.push("trie_nodes", StatValue::Count(nodes as u64));
        s.push(
            "aggregated_away",
            StatValue::Count(nodes.saturating_sub(self.stride_rows()) as u64),
        );
        s.push("ranges", StatValue::Count(i.ranges as u64));
        s.push("routes", StatValue::Count(i.routes as u64));
        s.push("max_next_hop", StatValue::Count(i.max_next_hop as u64));
        s.push("bytes", StatValue::Bytes(self.table.bytes() as u64));
        s.push(
            "allocated_bytes",
            StatValue::Bytes(self.table.allocated_bytes() as u64),
        );
        s.push("build", StatValue::Millis(i.build_ms));
        s
    }
}

/// The [`Fib`] implementation of one family; `$F` is the family of the kernels
/// (Algorithm 1 for IPv4, Algorithm 2 for IPv6).
macro_rules! impl_family {
    ($A:ty, $F:ident) => {
        impl Fib<$A> for Spider<$A> {
            fn name(&self) -> &str {
                &self.name
            }

            #[inline]
            fn lookup(&self, addr: $A) -> Option<NextHop> {
                NextHop::new(self.lookup_scalar(addr))
            }

            fn lookup_batch(&self, addrs: &[$A], out: &mut [u32]) {
                assert!(out.len() >= addrs.len(), "output shorter than input");
                let out = &mut out[..addrs.len()];
                #[cfg(target_arch = "x86_64")]
                if let Some(token) = self.kernels.avx512 {
                    with_table!(self.table, |t, C| kernel::avx512::<C, kernel::$F>(
                        token,
                        t,
                        self.table.split,
                        &self.params,
                        addrs,
                        out
                    ));
                    return;
                }
                #[cfg(target_arch = "x86_64")]
                if let Some(token) = self.kernels.avx2 {
                    with_table!(self.table, |t, C| kernel::avx2::<C, kernel::$F>(
                        token,
                        t,
                        self.table.split,
                        &self.params,
                        addrs,
                        out
                    ));
                    return;
                }
                self.lookup_batch_scalar(addrs, out)
            }

            fn memory_bytes(&self) -> usize {
                self.table.bytes()
            }

            fn stats(&self) -> Stats {
                self.common_stats()
            }

            fn profile(&self, keys: &[$A]) -> Stats {
                self.depth_profile(keys)
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
    };
}

impl_family!(Ipv4, V4);
impl_family!(Ipv6, V6);

#[cfg(test)]
mod tests;

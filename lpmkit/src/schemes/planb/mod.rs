//! PlanB: longest-prefix match as a search over elementary intervals in a linearized
//! B+-tree, IPv6 and IPv4.
//!
//! The scheme of Z. Zhang, L. Liu, C. Chen, H. Li, J. Shu, W. Hsu and Y. Zhang, "PlanB:
//! Efficient Software IPv6 Lookup with Linearized B+-Tree" (NSDI '26, arXiv:2604.14650).
//!
//! # The scheme
//!
//! * **Elementary intervals.** The prefixes of a table cut the address space into
//!   disjoint intervals, each with one longest match. Longest-prefix match becomes a
//!   one-dimensional search: find the interval holding the key.
//! * **Linearized B+-tree.** The intervals' boundaries are the keys of a static B+-tree
//!   stored without pointers, level by level in one flat array: a node is one cache line
//!   of sorted 64-bit keys (the first 64 bits of IPv6 addresses), the children of node `i`
//!   are at `i·F + 1 …` (`F` = keys per node + 1), so a lookup computes where to go
//!   instead of loading a pointer.
//! * **Branch-free node search.** A node's keys are compared with the search key all at
//!   once (one 512-bit compare of eight 64-bit keys); the population count of the compare
//!   mask is the child to descend into. No branch depends on the key.
//! * **Batching.** `M` lookups descend together, level by level, so their cache misses
//!   overlap instead of following one another.
//! * **Updates** rebuild the tree and swap it in.
//!
//! # The lookup here
//!
//! * The tree's shape and the node search are described in `tree.rs`; the batched
//!   lookup (`batch.rs`) runs the paper's lockstep groups of [`PlanbConfig::batch`] keys
//!   over the node search of `kernel.rs`, written once and instantiated per instruction
//!   set — AVX-512 (a 64-byte node is one 512-bit compare into a mask register, the
//!   paper's), AVX2 (a 64-byte node of eight 64-bit keys is two 256-bit compares, a
//!   32-byte node of four is one, selected by [`PlanbConfig::fanout`]) — and their scalar
//!   twin (`scalar.rs`), chosen at run time (see [`crate::simd`]; [`PlanbConfig::isa`] and
//!   `LPMKIT_FORCE_ISA` cap the choice). The AVX-512 instance runs by default where the
//!   CPU has AVX-512 (it measured faster than the AVX2 one: `docs/simd.md`).
//! * **Longer prefixes.** The paper (and its public reimplementations) keeps the first
//!   64 bits of every address and so serves routes up to /64. Here a key is searched in
//!   chunks (`build.rs`): the main tree holds the first chunk; an interval boundary that
//!   lies inside a /64 (a route longer than /64) makes that /64 an interval of its own,
//!   whose value names a second tree over the next 64 bits. Every route length of
//!   `0..=128` is exact, and a table without routes longer than /64 is one tree, as in
//!   the paper.
//! * **Values.** The next hops of a leaf's intervals sit in a separate array at the
//!   leaf's positions, as the paper's; a leaf value with the top bit set names a child
//!   tree (see `tree.rs`), so next hops are below 2^31.
//!
//! # Beyond the paper: 32-bit keys and the /32 lines (`planb-front`)
//!
//! What makes a lookup of the paper's tree cost is its depth: six levels of 64-byte
//! nodes on a full IPv6 table, of which the lower ones leave the first-level cache. Two
//! changes bring a typical IPv6 lookup down to one line:
//!
//! * **32-bit keys** ([`PlanbConfig::key_bits`] = 32, the only choice for IPv4): sixteen
//!   keys per inner node (a fan-out of 17), and a leaf is one line of eight keys *with
//!   their eight values*, so the leaf step does not read a second array. IPv6 keys are
//!   searched 32 bits at a time: the main tree over the first 32 bits (the /32s), then,
//!   within a /32, over the next 32.
//! * **The front** ([`PlanbConfig::front`], `front.rs`), one read before any tree. For
//!   IPv6, one 64-byte *line* per /32 where the table's routes begin, found by a perfect
//!   hash (its pilot table stays in the first-level cache): the line holds the /32's
//!   first seven interval boundaries and eight values, so a /32 of at most eight
//!   intervals (on a full table nearly every /32 in use) is answered by its line alone,
//!   with one compare; a larger /32's line splits its intervals into eight groups (the
//!   groups of one interval chosen to cover as much of the /32 as they can) and names
//!   their trees. A /32 the hash does not list (no route begins in it) is answered by a
//!   summary of the /16s when no boundary falls in its /16 (most unrouted space), else
//!   by the main tree, which a group's such keys descend together, in lockstep. For IPv4
//!   (or IPv6 with a number of bits up to 24), the front is a direct table of the first
//!   `N` bits, as DIR-24-8's or DXR's, whose entries are a next hop or the tree of their
//!   block.
//!
//! After the front, a key takes at most one more leaf step without a branch on what the
//! front gave (`batch.rs`); keys that go further wait, by the depth of their tree, until
//! enough do to descend their trees together in lockstep (`pending.rs`); the rare keys that continue
//! into a further key chunk's tree are *lanes*, stepped one node per pass over a packed
//! list, so each pass's reads are independent. The line
//! stage prefetches the caller's keys a hundred or so ahead: its line misses fill the
//! core's miss buffers, and the hardware's stream prefetcher then falls behind even a
//! sequential key array.
//!
//! # Limits
//!
//! Next hops below 2^31 (a larger one is a [`BuildError`]); at most 2^26 tree nodes
//! (4 GiB of keys); the front's direct table at most 24 bits; the /32 lines need 32-bit
//! keys.
//!
//! [`Fib::stats`] gives the intervals, the trees' shapes per key chunk, bytes and bytes
//! per prefix; [`Fib::profile`] how lookups went (answered by the front, nodes read).
//!
//! ```
//! use lpmkit::{Fib, Ipv6, NextHop, Rib};
//! use lpmkit::schemes::planb::{Planb, PlanbConfig};
//!
//! let mut rib = Rib::<Ipv6>::new();
//! rib.insert("2001:db8::/32".parse()?, NextHop::new(1).unwrap());
//! rib.insert("2001:db8:1::/48".parse()?, NextHop::new(2).unwrap());
//! rib.insert("2001:db8:1::1:0:0/96".parse()?, NextHop::new(3).unwrap());
//!
//! let fib = Planb::build(&rib, &PlanbConfig::paper())?;
//! let key = |s: &str| s.parse::<std::net::Ipv6Addr>().map(u128::from);
//! assert_eq!(fib.lookup(key("2001:db8:1::1:0:5")?), NextHop::new(3)); // /96, past /64
//! let keys = [key("2001:db8:1::9")?, key("2001:db8:2::")?, key("2002::")?];
//! let mut out = [0u32; 3];
//! fib.lookup_batch(&keys, &mut out);
//! assert_eq!(out, [2, 1, 0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod batch;
mod build;
mod front;
mod pending;
mod scalar;
mod tree;
mod walk;

#[cfg(target_arch = "x86_64")]
mod kernel;

use core::marker::PhantomData;

use crate::fib::{BuildError, Config, Fib, Implementation, Settings, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Family};
use crate::rib::Rib;
use crate::scheme::Scheme;
use crate::simd::{Isa, Kernels};
use build::BuildInfo;
use front::Front;
use tree::{Compact, Forest, Layout, Wide};
use walk::{View, MAX_BATCH};

/// The largest direct front, in bits.
pub const MAX_DIRECT_FRONT: u32 = 24;
/// The /32 lines' bits (IPv6).
pub const HASHED_FRONT: u32 = 32;
/// The direct front's bits for IPv4 when [`PlanbConfig::front`] is "on".
pub const DEFAULT_FRONT_V4: u32 = 16;
/// Keys per group when none is configured.
pub(crate) const DEFAULT_BATCH: usize = 32;
/// Keys per group when none is configured, with the /32 lines: a group's lines are all
/// prefetched before the first is searched, so a larger group overlaps more misses. The
/// most a group may hold ([`MAX_BATCH`]): on an Intel Xeon (family 6 model 207), 128
/// measured 1.04x 64 on bart IPv6 keys inside routes (`match:100`), 1.01x on `v6match`
/// and 1.07x on 2 M routes (AVX-512; 1.05-1.06x on AVX2); 96 was between the two.
pub(crate) const LINES_BATCH: usize = 128;

/// Whether a table runs the AVX-512 instance of the kernel by default; else the AVX2 one,
/// and the AVX-512 one only when asked for (`isa: Some(Isa::Avx512)`). The faster of the
/// two where they were measured (`docs/simd.md`).
/// A table the registry builds where both run is measured instead ([`crate::simd::calibrate`]).
const AVX512_BY_DEFAULT: bool = true;

/// Build options for [`Planb`].
///
/// ```
/// use lpmkit::schemes::planb::PlanbConfig;
/// assert_eq!(PlanbConfig::default(), PlanbConfig::paper());
/// let fast = PlanbConfig::front_v6();
/// assert_eq!((fast.key_bits, fast.front), (Some(32), 32));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanbConfig {
    /// Key width: 64 (the paper's: the first 64 bits of IPv6 addresses, then the next
    /// 64 where routes are longer) or 32 (IPv6 searched 32 bits at a time; the only choice
    /// for IPv4). `None`: 64 for IPv6, 32 for IPv4.
    pub key_bits: Option<u32>,
    /// Children per inner node: 9 (eight 64-bit keys, 64-byte nodes: one 512-bit or two
    /// 256-bit compares) or 5 (four keys, 32-byte nodes: one 256-bit compare) with 64-bit
    /// keys; 17 with 32-bit keys. `None`: 9 or 17.
    pub fanout: Option<u32>,
    /// The front: 0 none; 1 to [`MAX_DIRECT_FRONT`] a direct table of that many bits;
    /// [`HASHED_FRONT`] the /32 lines (IPv6, with 32-bit keys).
    pub front: u32,
    /// Keys looked up together (the paper's `M`), 1 to 128 (the constructors: 32, and 128
    /// with the /32 lines).
    pub batch: usize,
    /// Use the scalar node search even if the CPU has AVX2.
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: AVX2 where the CPU has
    /// it, within the environment's ceiling; `Some(Isa::Avx512)` also allows the AVX-512
    /// kernel); see [`crate::simd::Isa`].
    pub isa: Option<Isa>,
}

impl Default for PlanbConfig {
    fn default() -> Self {
        Self::paper()
    }
}

impl PlanbConfig {
    /// The paper's structure: 64-bit keys for IPv6 (32 for IPv4), fan-out 9, no front.
    pub fn paper() -> Self {
        PlanbConfig {
            key_bits: None,
            fanout: None,
            front: 0,
            batch: DEFAULT_BATCH,
            force_scalar: false,
            isa: None,
        }
    }

    /// `planb-front` for IPv6: 32-bit keys and the /32 lines, in groups of 128 keys.
    pub fn front_v6() -> Self {
        PlanbConfig {
            key_bits: Some(32),
            front: HASHED_FRONT,
            batch: LINES_BATCH,
            ..Self::paper()
        }
    }

    /// `planb-front` for IPv4: a direct front of [`DEFAULT_FRONT_V4`] bits.
    pub fn front_v4() -> Self {
        PlanbConfig {
            key_bits: Some(32),
            front: DEFAULT_FRONT_V4,
            ..Self::paper()
        }
    }

    fn invalid(&self, reason: String) -> BuildError {
        BuildError::InvalidConfig {
            scheme: build::NAME.to_string(),
            reason,
        }
    }

    /// The layout for family `A`, checked.
    fn layout<A: Address>(&self) -> Result<LayoutKind, BuildError> {
        let key_bits = self.key_bits.unwrap_or(match A::FAMILY {
            Family::V4 => 32,
            Family::V6 => 64,
        });
        let kind = match (key_bits, self.fanout) {
            (64, None | Some(9)) if A::BITS == 128 => LayoutKind::Wide8,
            (64, Some(5)) if A::BITS == 128 => LayoutKind::Wide4,
            (64, _) if A::BITS == 32 => {
                return Err(self.invalid("IPv4 keys are 32 bits (key_bits=32)".into()))
            }
            (32, None | Some(17)) => LayoutKind::Compact,
            (32 | 64, Some(f)) => {
                return Err(self.invalid(format!(
                    "fanout {f} is not offered with {key_bits}-bit keys ({})",
                    if key_bits == 64 { "9 or 5" } else { "17" }
                )))
            }
            (k, _) => return Err(self.invalid(format!("key_bits must be 32 or 64, not {k}"))),
        };
        if !(1..=MAX_BATCH).contains(&self.batch) {
            return Err(self.invalid(format!(
                "batch must be in 1..={MAX_BATCH}, not {}",
                self.batch
            )));
        }
        if self.front == HASHED_FRONT && kind != LayoutKind::Compact {
            return Err(self.invalid("the /32 lines need 32-bit keys (key_bits=32)".into()));
        }
        let front_ok = self.front <= MAX_DIRECT_FRONT
            || (self.front == HASHED_FRONT && A::FAMILY == Family::V6);
        if !front_ok {
            return Err(self.invalid(format!(
                "front must be 0 (none), 1..={MAX_DIRECT_FRONT} (direct){}, not {}",
                if A::FAMILY == Family::V6 {
                    " or 32 (the /32 lines)"
                } else {
                    ""
                },
                self.front
            )));
        }
        Ok(kind)
    }
}

impl Config for PlanbConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        (
            "key_bits",
            "key width: 64 (IPv6, the paper's) or 32 (IPv6 searched 32 bits at a time; IPv4)",
        ),
        (
            "fanout",
            "children per inner node: 9 or 5 with 64-bit keys (64- or 32-byte nodes), 17 with 32-bit keys",
        ),
        (
            "front",
            "one read before the trees: off, on (IPv6: the /32 lines; IPv4: a 16-bit direct table), N bits of direct table (1..=24), or 32 (the /32 lines, IPv6 with key_bits=32)",
        ),
        (
            "batch",
            "keys looked up together, 1..=128 (the paper's M; default 32, 128 with the /32 lines)",
        ),
        ("scalar", "use the scalar node search even with AVX2"),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let front = match s.text("front") {
            None | Some("off") => 0,
            Some("on") => match A::FAMILY {
                Family::V4 => DEFAULT_FRONT_V4,
                Family::V6 => HASHED_FRONT,
            },
            Some(_) => s.get::<u32>("front")?.expect("present"),
        };
        Ok(PlanbConfig {
            key_bits: s.get("key_bits")?,
            fanout: s.get("fanout")?,
            front,
            batch: s.get("batch")?.unwrap_or(if front == HASHED_FRONT {
                LINES_BATCH
            } else {
                DEFAULT_BATCH
            }),
            force_scalar: s.force_scalar() || s.get("scalar")?.unwrap_or(false),
            isa: s.isa(),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LayoutKind {
    Wide8,
    Wide4,
    Compact,
}

/// One layout's table.
struct Tables<L: Layout> {
    forest: Forest<L>,
    /// The main tree (a child value; 0 when a direct front answers every key).
    main: u32,
    front: Front,
    /// The key chunk the front's trees are searched with.
    front_stage: u32,
    /// The main tree's first level of more than [`PREFETCH_LEVEL_BYTES`].
    prefetch_from: u32,
}

impl<L: Layout> Tables<L> {
    fn view(&self) -> View<'_, L> {
        View {
            keys: self.forest.keys.as_ptr(),
            vals: self.forest.vals.as_ptr(),
            main: self.main,
            front: &self.front,
            front_stage: self.front_stage,
            prefetch_from: self.prefetch_from,
        }
    }
}

/// The lockstep descent of the main tree prefetches the nodes of the levels larger than
/// this (a level that fits the first-level cache beside the other data stays there).
pub(crate) const PREFETCH_LEVEL_BYTES: usize = 32 << 10;

/// The first level of `shape` (a main tree of layout `L`) whose nodes take more than
/// [`PREFETCH_LEVEL_BYTES`] (the depth if none does).
fn prefetch_from<L: Layout>(shape: Option<tree::TreeShape>) -> u32 {
    let Some(shape) = shape else { return 0 };
    let node_bytes = L::WORDS * core::mem::size_of::<L::K>();
    let inner = tree::level_start(L::F, shape.depth - 1);
    (1..shape.depth)
        .find(|&l| {
            let nodes = if l + 1 == shape.depth {
                shape.nodes as u64 - inner
            } else {
                (L::F as u64).pow(l)
            };
            nodes as usize * node_bytes > PREFETCH_LEVEL_BYTES
        })
        .unwrap_or(shape.depth)
}

enum Inner {
    Wide8(Tables<Wide<8>>),
    Wide4(Tables<Wide<4>>),
    Compact(Tables<Compact>),
}

/// Runs `$body` with `$t` bound to the layout's tables and `$L` to its layout type.
macro_rules! with_tables {
    ($inner:expr, |$t:ident, $L:ident| $body:expr) => {
        match &$inner {
            Inner::Wide8($t) => {
                type $L = Wide<8>;
                $body
            }
            Inner::Wide4($t) => {
                type $L = Wide<4>;
                $body
            }
            Inner::Compact($t) => {
                type $L = Compact;
                $body
            }
        }
    };
}

/// A PlanB lookup table for IPv4 ([`crate::Ipv4`]) or IPv6 ([`crate::Ipv6`]).
///
/// Built by [`Planb::build`]; looks up through [`Fib`].
pub struct Planb<A: Address> {
    inner: Inner,
    kernels: Kernels,
    batch: usize,
    name: &'static str,
    info: BuildInfo,
    _family: PhantomData<fn(A) -> A>,
}

impl<A: Address> core::fmt::Debug for Planb<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Planb")
            .field("name", &self.name)
            .field("layout", &self.layout_name())
            .field("intervals", &self.info.intervals)
            .field("implementation", &self.implementation())
            .finish_non_exhaustive()
    }
}

impl<A: Address> Scheme<A> for Planb<A> {
    type Config = PlanbConfig;

    fn build(rib: &Rib<A>, config: &PlanbConfig) -> Result<Self, BuildError> {
        Planb::build(rib, config)
    }
}

impl<A: Address> Planb<A> {
    /// Builds the table from `rib`.
    ///
    /// Fails on a configuration out of range, a next hop of 2^31 or more, or a table of
    /// more than 2^26 tree nodes.
    pub fn build(rib: &Rib<A>, config: &PlanbConfig) -> Result<Self, BuildError> {
        let t0 = std::time::Instant::now();
        let kind = config.layout::<A>()?;
        fn tables<A: Address, L: Layout>(
            rib: &Rib<A>,
            config: &PlanbConfig,
        ) -> Result<(Tables<L>, BuildInfo), BuildError> {
            let p = build::build::<A, L>(rib, config)?;
            let front_stage = p.front.bits() / <L::K as tree::Key>::BITS;
            let prefetch_from = prefetch_from::<L>(p.info.main);
            Ok((
                Tables {
                    forest: p.forest,
                    main: p.main,
                    front: p.front,
                    front_stage,
                    prefetch_from,
                },
                p.info,
            ))
        }
        let (inner, mut info) = match kind {
            LayoutKind::Wide8 => {
                let (t, i) = tables::<A, Wide<8>>(rib, config)?;
                (Inner::Wide8(t), i)
            }
            LayoutKind::Wide4 => {
                let (t, i) = tables::<A, Wide<4>>(rib, config)?;
                (Inner::Wide4(t), i)
            }
            LayoutKind::Compact => {
                let (t, i) = tables::<A, Compact>(rib, config)?;
                (Inner::Compact(t), i)
            }
        };
        info.build_ms = crate::schemes::common::ms_since(t0);
        Ok(Planb {
            inner,
            kernels: Kernels::new(config.force_scalar, config.isa, AVX512_BY_DEFAULT),
            batch: config.batch,
            name: if config.front == 0 {
                "planb"
            } else {
                "planb-front"
            },
            info,
            _family: PhantomData,
        })
    }

    fn layout_name(&self) -> &'static str {
        with_tables!(self.inner, |_t, L| L::NAME)
    }

    /// Elementary intervals of the table.
    #[doc(hidden)]
    pub fn intervals(&self) -> usize {
        self.info.intervals
    }

    /// Levels of the main tree (0 when a direct front answers every key).
    #[doc(hidden)]
    pub fn depth(&self) -> u32 {
        self.info.main.map_or(0, |m| m.depth)
    }

    fn walk(&self, a: A) -> scalar::Walk {
        with_tables!(self.inner, |t, L| scalar::walk::<A, L>(
            &t.forest,
            t.main,
            &t.front,
            t.front_stage,
            a
        ))
    }

    fn bytes(&self) -> usize {
        with_tables!(self.inner, |t, L| {
            let _: Option<L> = None;
            t.forest.bytes() + t.front.bytes()
        })
    }

    fn build_stats(&self) -> Stats {
        let i = &self.info;
        let mut s = Stats::new()
            .with("layout", StatValue::Text(self.layout_name().into()))
            .with("batch", StatValue::Count(self.batch as u64))
            .with("intervals", StatValue::Count(i.intervals as u64))
            .with("routes", StatValue::Count(i.routes as u64));
        let (key_bits, fanout, nodes) = with_tables!(self.inner, |t, L| (
            <<L as Layout>::K as tree::Key>::BITS,
            L::F,
            t.forest.nodes()
        ));
        s.push("key_bits", StatValue::Count(key_bits as u64));
        s.push("fanout", StatValue::Count(fanout as u64));
        s.push("depth", StatValue::Count(self.depth() as u64));
        for (k, st) in i.stages.iter().enumerate() {
            if st.trees == 0 {
                continue;
            }
            s.push(format!("trees_chunk{k}"), StatValue::Count(st.trees as u64));
            s.push(format!("keys_chunk{k}"), StatValue::Count(st.keys as u64));
            s.push(format!("nodes_chunk{k}"), StatValue::Count(st.nodes as u64));
            let depths: Vec<String> = st
                .depths
                .iter()
                .enumerate()
                .filter(|&(_, &n)| n > 0)
                .map(|(d, n)| format!("{d}:{n}"))
                .collect();
            s.push(
                format!("tree_depths_chunk{k}"),
                StatValue::Text(depths.join(" ")),
            );
        }
        s.push("nodes", StatValue::Count(nodes as u64));
        with_tables!(self.inner, |t, L| {
            let _: Option<L> = None;
            match &t.front {
                Front::None => s.push("front", StatValue::Text("none".into())),
                Front::Direct { bits, table } => {
                    s.push("front", StatValue::Text(format!("direct {bits} bits")));
                    let trees = table.iter().filter(|&&v| v & tree::CHILD != 0).count();
                    s.push("front_trees", StatValue::Count(trees as u64));
                }
                Front::Lines(f) => {
                    s.push("front", StatValue::Text("/32 lines".into()));
                    s.push("front_listed", StatValue::Count(f.listed as u64));
                    s.push("front_lines", StatValue::Count(f.m as u64));
                    s.push("front_pilots", StatValue::Count(f.pilots.len() as u64));
                    s.push(
                        "front_lines_whole",
                        StatValue::Count(self.info.line_groups[0] as u64),
                    );
                    s.push(
                        "front_lines_grouped",
                        StatValue::Count(self.info.line_groups[1] as u64),
                    );
                }
            }
            s.push("front_bytes", StatValue::Bytes(t.front.bytes() as u64));
            s.push("tree_bytes", StatValue::Bytes(t.forest.bytes() as u64));
        });
        let bytes = self.bytes();
        s.push("bytes", StatValue::Bytes(bytes as u64));
        s.push(
            "bytes_per_prefix",
            StatValue::Ratio(bytes as f64 / i.routes.max(1) as f64),
        );
        s.push("build", StatValue::Millis(i.build_ms));
        s
    }

    /// Shares of `keys` answered by the front (`front.answered`; with the /32 lines,
    /// `front.summary` by their /16 summary), sent to a /32's tree (`front.tree`), not
    /// listed (`front.miss`); tree nodes read per lookup (`nodes.N`, `nodes_mean`) and
    /// trees searched (`trees.N`).
    fn walk_profile(&self, keys: &[A]) -> Stats {
        let mut front = [0u64; 5];
        let mut nodes: Vec<u64> = Vec::new();
        let mut trees: Vec<u64> = Vec::new();
        for &k in keys {
            let w = self.walk(k);
            front[w.front as usize] += 1;
            let bump = |h: &mut Vec<u64>, i: usize| {
                if h.len() <= i {
                    h.resize(i + 1, 0);
                }
                h[i] += 1;
            };
            bump(&mut nodes, w.nodes as usize);
            bump(&mut trees, w.trees as usize);
        }
        let total = keys.len().max(1) as f64;
        let mut s = Stats::new();
        let lines = with_tables!(self.inner, |t, L| {
            let _: Option<L> = None;
            matches!(t.front, Front::Lines(_))
        });
        let names = ["answered", "tree", "miss", "none", "summary"];
        for (k, (name, n)) in names.iter().zip(front).enumerate() {
            if front[3] == 0 && (k < 3 || k == 4 && lines) {
                s.push(format!("front.{name}"), StatValue::Ratio(n as f64 / total));
            }
        }
        s.with_shares("nodes", &nodes).with_shares("trees", &trees)
    }
}

impl<A: Address> Fib<A> for Planb<A> {
    fn name(&self) -> &str {
        self.name
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(self.walk(addr).value)
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = self.kernels.avx512 {
            let b = self.batch;
            with_tables!(self.inner, |t, L| kernel::avx512::<A, L>(
                token,
                &t.view(),
                b,
                addrs,
                out
            ));
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = self.kernels.avx2 {
            let b = self.batch;
            with_tables!(self.inner, |t, L| kernel::avx2::<A, L>(
                token,
                &t.view(),
                b,
                addrs,
                out
            ));
            return;
        }
        with_tables!(self.inner, |t, L| scalar::lookup_batch::<A, L>(
            &t.view(),
            self.batch,
            addrs,
            out
        ))
    }

    fn memory_bytes(&self) -> usize {
        self.bytes()
    }

    fn stats(&self) -> Stats {
        self.build_stats()
    }

    fn profile(&self, keys: &[A]) -> Stats {
        self.walk_profile(keys)
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

//! Poptrie: a 64-ary trie compressed with population counts, for IPv4 and IPv6.
//!
//! The scheme of H. Asai and Y. Ohara, "Poptrie: A Compressed Trie with Population Count
//! for Fast and Scalable Software IP Routing Table Lookup" (SIGCOMM 2015), checked against
//! the authors' C code (`pixos/poptrie`: `poptrie4.c`, `poptrie6.c`, `buddy.c`). It is the
//! baseline of the Spider, DXR and OBMA papers; the registry names the two variants they
//! measure, `poptrie16` and `poptrie18` (Poptrie₁₆/Poptrie₁₈: direct pointing of the first
//! 16 or 18 bits).
//!
//! The paper's §3 describes the structure in steps: the basic multiway trie with a
//! `vector`, leaf compression (`leafvec`), direct pointing, and incremental update; the
//! bullets below name them. (The paper itself is not in the project's paper store: this
//! module follows the authors' C code where the two could differ, and section numbers
//! below the top level are not cited.)
//!
//! # What is implemented
//!
//! * **Nodes (basic structure, leaf compression).** An internal node covers a 6-bit stride (64 slots) and is 24
//!   bytes, as in the C code's `poptrie_node`: `vector` (bit *i* set: slot *i* holds an
//!   internal node), `leafvec` (bit *i* set: a run of identical leaves starts at slot
//!   *i* — leaf compression), `base0` (index of the node's first leaf) and `base1` (index
//!   of its first child). The children of a node are contiguous in the node array and its
//!   leaves contiguous in the leaf array, so the child of slot *i* is
//!   `base1 + popcnt(vector & ((2 << i) - 1)) - 1` and its leaf is
//!   `base0 + popcnt(leafvec & ((2 << i) - 1)) - 1`. Runs of leaves continue across slots
//!   that hold internal nodes (as in the C code's `_update_part_loop1`).
//! * **Direct pointing.** The first `s` bits index a table of `2^s` 32-bit entries;
//!   an entry with bit 31 set is a leaf (the next hop in the low 31 bits), otherwise the
//!   index of a node that covers bits `s..s+6`. Strides of 6 bits continue below: for
//!   IPv4 with `s = 16` nodes sit at bits 16, 22 and 28, for IPv6 down to bit 124 (`s = 16`)
//!   or 126 (`s = 18`). Where fewer than 6 bits remain, the index is zero-filled, as the C
//!   code's `INDEX` macro does.
//! * **Leaf pushing.** Leaves hold the longest match for every address under them. The
//!   structure is built from the table projected onto disjoint ranges (the shared range
//!   projection, which also finds the largest next hop): a slot is a leaf when its addresses all
//!   share one longest match, so subtrees are never deeper than the table needs (the
//!   C code reaches the same shape by its vertical compression).
//! * **Leaves** are 16 bits (next hops `1..=65535`, as the paper's `poptrie_leaf_t`, which
//!   holds the 51,788 origin ASes of the RouteViews table), widened automatically to 32
//!   bits (31-bit next hops, the limit of a direct-pointing leaf) when the table needs it
//!   (the shared width rule, [`Width`]); [`PoptrieConfig::leaf_width`] forces a width, and a
//!   table that does not fit is a [`BuildError`], never truncated.
//! * **Bulk build.** A full build walks the ranges once and packs every array back to
//!   back (no padding): linear in the number of ranges. The C code instead
//!   inserts routes one by one through its update path.
//! * **Incremental update**, in place under readers ([`PoptrieWriter`], driven by
//!   [`crate::sync::InPlace`], or [`IncrementalFib`](crate::IncrementalFib) when no other thread reads). As
//!   `_update_subtree` does: a change of length `<= s` rebuilds each direct-pointing entry
//!   it spans; a longer one walks down from its entry while the prefix lies strictly inside
//!   an internal child, rebuilds the node where it stops (its whole subtree, from the
//!   `Rib`) into newly allocated slots, then makes it visible with **one atomic 32-bit
//!   store**: the parent's `base1` (after copying the parent's children array with the new
//!   node in place) or the direct-pointing entry. If the rebuilt node collapses into a
//!   leaf, the parent's vector changes, so the parent is rebuilt instead, and so on
//!   upwards. The replaced arrays are *retired*: reused only after every reader has moved
//!   past them (the paper frees them at once, which a concurrent reader could see). Node
//!   and leaf arrays live in arenas that grow without moving (`schemes::common::Arena`)
//!   and are managed by the shared best-fit `FreeSpace` (the C code uses a buddy
//!   allocator). An update whose next hop does not fit 16-bit leaves, or that outgrows
//!   the arenas' reservation, rebuilds the whole structure, which replaces the table with
//!   one pointer store.
//! * **Lookups.** [`Fib::lookup`] is the C code's `poptrie_lookup` (with the key shifted left
//!   by 6 bits per level instead of re-extracting the stride). [`Fib::lookup_batch`]
//!   overlaps many lookups:
//!   - IPv4: blocks of 64 keys without data-dependent branches. All direct-pointing
//!     entries are read first (the next block's were prefetched), the lanes that continue
//!     into a node are listed by branch-free compaction, and each round steps every listed
//!     lane one level (child and leaf index both computed; the lane stays listed only if
//!     its vector bit is set) and prefetches what the lane reads next. The loads of a
//!     round are independent, so their cache misses overlap.
//!   - IPv6: a software pipeline over the one-key code (direct-pointing entry of key
//!     `i + 16` and first node of key `i + 8` prefetched). IPv6 keys descend many levels
//!     of mostly cached nodes, where the lane bookkeeping costs more than it buys.
//!
//!   Both are compiled once portably and once with the `popcnt` instruction, chosen at
//!   build time from CPU detection (`force_scalar` picks the portable twin;
//!   [`Fib::implementation`] reports `popcnt` for the hardware-popcount kernel).
//!
//! Differences from the C code: the bulk build (from ranges, not route by route), the
//! best-fit allocator and deferred reuse, 32-bit leaf widening, and the batched lookup
//! (the C code looks keys up one at a time); the structure and the update procedure are
//! the paper's.
//! The paper's route aggregation (merging routes that do not change the answer) is
//! subsumed by building from merged ranges.
//!
//! ```
//! use lpmkit::{Fib, IncrementalFib, Change, Ipv6, NextHop, Rib};
//! use lpmkit::schemes::poptrie::{Poptrie, PoptrieConfig};
//!
//! let mut rib = Rib::<Ipv6>::new();
//! let p = "2001:db8::/32".parse()?;
//! rib.insert(p, NextHop::new(7).unwrap());
//! let mut fib = Poptrie::build(&rib, &PoptrieConfig::poptrie18())?;
//! let a: Ipv6 = "2001:db8::1".parse::<std::net::Ipv6Addr>()?.into();
//! assert_eq!(fib.lookup(a), NextHop::new(7));
//!
//! let host = "2001:db8::1/128".parse()?;
//! let change = Change::Announce(host, NextHop::new(9).unwrap());
//! change.apply_to(&mut rib);
//! fib.apply(&rib, &[change])?;
//! assert_eq!(fib.lookup(a), NextHop::new(9));
//! assert_eq!(fib.lookup(a + 1), NextHop::new(7));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#[cfg(target_arch = "x86_64")]
mod avx512;
mod build;
mod scalar;
mod writer;

use core::marker::PhantomData;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::fib::{
    BuildError, Change, Config, Fib, Implementation, InPlaceWriter, Patched, Settings, StatValue,
    Stats, UpdateStats,
};
use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::rib::Rib;
use crate::scheme::Patchable;
use crate::schemes::common::{with_width, Arena, ByWidth, FreeSpace, Width, Word, Zeroable};
use crate::simd::Popcnt;

/// Bits per trie level.
const STRIDE: u32 = 6;
/// Marks a direct-pointing entry that holds a leaf (as the C code's bit 31).
const LEAF_FLAG: u32 = 1 << 31;
/// Largest next hop any layout holds: a direct-pointing leaf keeps 31 bits.
const MAX_NEXT_HOP: u64 = (LEAF_FLAG - 1) as u64;

/// An internal node (24 bytes, the C code's `poptrie_node`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Node {
    /// Bit `i`: slot `i` holds an internal node.
    vector: u64,
    /// Bit `i`: a run of identical leaves starts at slot `i`.
    leafvec: u64,
    /// Index of the first leaf.
    base0: u32,
    /// Index of the first child: the one field an update changes in a live node (a
    /// switch word, stored and loaded atomically).
    base1: u32,
}

/// Byte offset of [`Node::base1`].
const BASE1_OFFSET: usize = core::mem::offset_of!(Node, base1);

// SAFETY: two `u64`s and two `u32`s, `repr(C)` without padding (24 bytes, 8-aligned):
// all-zero is a valid node, and there is no drop glue.
unsafe impl Zeroable for Node {}
const _: () = assert!(core::mem::size_of::<Node>() == 24);

impl Node {
    /// Node 0: no children, one run of leaves from slot 0 that reads leaf 0 (no route).
    /// Batch lookups park lanes that ended at a direct-pointing leaf here.
    const SINK: Node = Node {
        vector: 0,
        leafvec: 1,
        base0: 0,
        base1: 0,
    };
}

// `popcnt(v & ((2 << idx) - 1))`: set bits at or below `idx`.
use crate::schemes::common::bits::ones_through as popcnt_le;

/// Stride extraction on addresses (`u32`, `u128`).
pub(crate) trait Key: Address {
    /// The first `s` bits (`s <= 24`) as a direct-pointing index.
    #[inline(always)]
    fn top(self, s: u32) -> usize {
        self.top_bits(s) as usize
    }
    /// The 6 bits from bit `pos` (`pos < BITS`), zero-filled past the end.
    #[inline(always)]
    fn chunk(self, pos: u32) -> u32 {
        self.shl(pos).head()
    }
    /// The top 6 bits (`chunk(0)`).
    #[inline(always)]
    fn head(self) -> u32 {
        self.top_bits(STRIDE)
    }
}

impl<A: Address> Key for A {}

/// The arrays of one leaf width: what lookups read.
pub(crate) struct Trie<L: Word> {
    /// Direct-pointing bits.
    s: u8,
    /// `2^s` switch words: `LEAF_FLAG | next hop`, or a node index.
    dir: Arena<u32>,
    /// Node 0 is [`Node::SINK`].
    nodes: Arena<Node>,
    /// Leaf 0 is 0 (the sink's leaf).
    leaves: Arena<L>,
    /// The tops of the arrays, for figures: set by the writer at every allocation, so on
    /// a cache line of their own (not the one of the array pointers lookups read).
    tops: Tops,
}

/// Slots below the top of the node and leaf arrays.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Tops {
    nodes: AtomicUsize,
    leaves: AtomicUsize,
}

impl<L: Word> Trie<L> {
    /// Bytes lookups may touch: the direct-pointing table and the arrays up to their top.
    fn bytes(&self) -> usize {
        self.dir.committed_bytes()
            + self.tops.nodes.load(Ordering::Relaxed) * core::mem::size_of::<Node>()
            + self.tops.leaves.load(Ordering::Relaxed) * core::mem::size_of::<L>()
    }

    /// Share of direct-pointing entries that are leaves.
    fn direct_leaf_share(&self) -> f64 {
        let n = 1usize << self.s;
        // SAFETY: `e < 2^s`, all committed.
        let leaves = (0..n)
            .filter(|&e| unsafe { self.dir.load_acquire(e) } & LEAF_FLAG != 0)
            .count();
        leaves as f64 / n as f64
    }
}

/// The free space of a trie's arrays (writer side).
#[derive(Clone, Debug)]
pub(crate) struct Space {
    nodes: FreeSpace,
    leaves: FreeSpace,
}

/// A block of a trie's arrays retired by an update (reused after its grace period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct RetiredBlock {
    /// True for the leaf array, false for the node array.
    leaves: bool,
    pos: u32,
    len: u32,
}

/// Build options for [`Poptrie`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoptrieConfig {
    /// Bits resolved by the direct-pointing table (`0..=24`; the paper uses 0, 16, 18).
    pub direct_bits: u8,
    /// Force a leaf width instead of the narrowest that fits.
    ///
    /// ```
    /// use lpmkit::schemes::{poptrie::PoptrieConfig, Width};
    /// let cfg = PoptrieConfig { leaf_width: Some(Width::U32), ..PoptrieConfig::poptrie16() };
    /// # let _ = cfg;
    /// ```
    pub leaf_width: Option<Width>,
    /// Use the portable lookup (software population count) even if the CPU has `popcnt`.
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: the best the CPU has);
    /// see [`crate::simd::Isa`].
    pub isa: Option<crate::simd::Isa>,
}

impl PoptrieConfig {
    /// Poptrie₁₆: direct pointing of the first 16 bits.
    ///
    /// ```
    /// assert_eq!(lpmkit::schemes::poptrie::PoptrieConfig::poptrie16().direct_bits, 16);
    /// ```
    pub fn poptrie16() -> Self {
        PoptrieConfig {
            direct_bits: 16,
            leaf_width: None,
            force_scalar: false,
            isa: None,
        }
    }

    /// Poptrie₁₈: direct pointing of the first 18 bits.
    ///
    /// ```
    /// assert_eq!(lpmkit::schemes::poptrie::PoptrieConfig::poptrie18().direct_bits, 18);
    /// ```
    pub fn poptrie18() -> Self {
        PoptrieConfig {
            direct_bits: 18,
            ..Self::poptrie16()
        }
    }

    /// The registry name of this configuration.
    #[doc(hidden)]
    pub fn name(&self) -> &'static str {
        match self.direct_bits {
            16 => "poptrie16",
            18 => "poptrie18",
            _ => "poptrie",
        }
    }
}

impl Default for PoptrieConfig {
    fn default() -> Self {
        Self::poptrie18()
    }
}

/// What Poptrie lookups read, for `u32` (IPv4) or `u128` (IPv6) addresses: the table
/// shared with reader threads while a [`PoptrieWriter`] patches it.
#[doc(hidden)]
pub struct PoptrieTable<A: Address> {
    layout: ByWidth<Trie<u16>, Trie<u32>>,
    /// The hardware population count, when the CPU has it and scalar code is not forced.
    popcnt: Option<Popcnt>,
    /// The AVX-512 (VPOPCNTDQ) batch lookup, IPv4 only.
    avx512: Option<crate::simd::Vpopcntdq>,
    name: &'static str,
    _family: PhantomData<fn() -> A>,
}

impl<A: Address> core::fmt::Debug for PoptrieTable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PoptrieTable")
            .field("name", &self.name)
            .field("leaf_width", &self.layout.width())
            .field("bytes", &self.memory_bytes())
            .finish()
    }
}

impl<A: Address> PoptrieTable<A> {
    #[doc(hidden)]
    /// The leaf width in use.
    pub fn leaf_width(&self) -> Width {
        self.layout.width()
    }
}

/// The writer side of a [`PoptrieTable`]: free space, limits and update counters.
#[derive(Debug)]
#[doc(hidden)]
pub struct PoptrieWriter<A: Address> {
    config: PoptrieConfig,
    space: Space,
    /// The largest next hop the `Rib` may hold: at build time, then every announced one.
    max_nh: u64,
    build_ms: f64,
    updates: u64,
    subtrees_rebuilt: u64,
    full_rebuilds: u64,
    _family: PhantomData<fn() -> A>,
}

/// The Poptrie lookup structure for `u32` (IPv4) or `u128` (IPv6) addresses: its table and
/// its writer, for use on one thread ([`IncrementalFib`](crate::IncrementalFib)) or handed to
/// [`crate::sync::InPlace`] for updates under concurrent readers.
pub type Poptrie<A> = Patchable<A, PoptrieWriter<A>>;

impl<A: Address> Poptrie<A> {
    #[doc(hidden)]
    /// The leaf width in use.
    pub fn leaf_width(&self) -> Width {
        self.table().leaf_width()
    }
}

impl Config for PoptrieConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        ("s", "bits resolved by the direct-pointing table, 0..=24"),
        (
            "leaf_width",
            "leaf width, 16 or 32 (default: the narrowest that holds the table)",
        ),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        Ok(PoptrieConfig {
            direct_bits: s.get("s")?.unwrap_or(18),
            leaf_width: s.width("leaf_width")?,
            force_scalar: s.force_scalar(),
            isa: s.isa(),
        })
    }
}

impl<A: Address> Fib<A> for PoptrieTable<A> {
    /// A lookup of `key` that stalls after reading its direct-pointing entry and first
    /// node (`stall` runs in between), then walks on from that node: what a reader
    /// descheduled inside a lookup does. For the concurrency tests: what it walks must
    /// still be intact, however many updates ran meanwhile.
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        with_width!(&self.layout, t => t.lookup_stalled(key, stall))
    }

    fn name(&self) -> &str {
        self.name
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(with_width!(&self.layout, t => {
            #[cfg(target_arch = "x86_64")]
            if let Some(token) = self.popcnt {
                return NextHop::new(scalar::one_popcnt(token, t, addr));
            }
            t.lookup_one(addr)
        }))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        with_width!(&self.layout, t => {
            #[cfg(target_arch = "x86_64")]
            if let (Some(token), Some(keys)) = (self.avx512, crate::prefix::v4_keys(addrs)) {
                avx512::batch_v4(token, t, keys, out);
                return;
            }
            #[cfg(target_arch = "x86_64")]
            if let Some(token) = self.popcnt {
                scalar::batch_popcnt(token, t, addrs, out);
                return;
            }
            scalar::batch_portable(t, addrs, out)
        })
    }

    fn memory_bytes(&self) -> usize {
        with_width!(&self.layout, t => t.bytes())
    }

    fn stats(&self) -> Stats {
        let mut st = Stats::new();
        st.push(
            "leaf_width",
            StatValue::Text(format!("{} leaves", self.leaf_width())),
        );
        let (nodes, leaves, share) = with_width!(&self.layout, t => (
            t.tops.nodes.load(Ordering::Relaxed),
            t.tops.leaves.load(Ordering::Relaxed),
            t.direct_leaf_share(),
        ));
        st.push("node_slots", StatValue::Count(nodes as u64));
        st.push("leaf_slots", StatValue::Count(leaves as u64));
        st.push("direct_leaf_share", StatValue::Ratio(share));
        st
    }

    fn implementation(&self) -> Implementation {
        if self.avx512.is_some() && A::BITS == 32 {
            Implementation::Avx512
        } else if self.popcnt.is_some() {
            Implementation::Popcnt
        } else {
            Implementation::Scalar
        }
    }
}

impl<A: Address> InPlaceWriter<A> for PoptrieWriter<A> {
    type Table = PoptrieTable<A>;
    type Retired = RetiredBlock;
    type Config = PoptrieConfig;

    fn build(
        rib: &Rib<A>,
        config: &PoptrieConfig,
    ) -> Result<(Box<PoptrieTable<A>>, Self), BuildError> {
        let (table, writer) = build::build(rib, config, 0)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &PoptrieConfig {
        &self.config
    }

    fn stats(&self, table: &PoptrieTable<A>) -> Stats {
        let w = self;
        let nodes = (w.space.nodes.used() - 1) as u64;
        let leaves = (w.space.leaves.used() - 1) as u64;
        let direct = with_width!(&table.layout, t => t.direct_leaf_share());
        Stats::new()
            .with(
                "leaf_width",
                StatValue::Text(format!("{} leaves", table.leaf_width())),
            )
            .with("internal_nodes", StatValue::Count(nodes))
            .with("leaves", StatValue::Count(leaves))
            .with(
                "free_slots",
                StatValue::Count((w.space.nodes.free_slots() + w.space.leaves.free_slots()) as u64),
            )
            .with("direct_leaf_share", StatValue::Ratio(direct))
            .with("build", StatValue::Millis(w.build_ms))
            .with("updates", StatValue::Count(w.updates))
            .with("subtrees_rebuilt", StatValue::Count(w.subtrees_rebuilt))
    }

    unsafe fn patch(
        &mut self,
        table: &PoptrieTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
        retire: &mut Vec<RetiredBlock>,
    ) -> Result<Patched<PoptrieTable<A>>, BuildError> {
        let max = changes
            .iter()
            .filter_map(|c| match c {
                Change::Announce(_, nh) => Some(nh.get() as u64),
                Change::Withdraw(_) => None,
            })
            .max()
            .unwrap_or(0)
            .max(self.max_nh);
        self.updates += changes.len() as u64;
        let limit = build::leaf_limit(table.leaf_width());
        if max > limit {
            if self.config.leaf_width.is_some() || max > MAX_NEXT_HOP {
                return Err(BuildError::NextHopOverflow {
                    scheme: self.config.name().to_string(),
                    max: limit,
                    requested: max,
                });
            }
            // Widen: a full rebuild with 32-bit leaves.
            return self.rebuild(rib, Some(Width::U32), 0);
        }
        let mut units = 0;
        let done = with_width!(&table.layout, t => {
            let mut r = Ok(());
            for c in changes {
                // SAFETY: the caller's contract: `t` is this writer's table, one writer.
                match unsafe { writer::update(t, &mut self.space, rib, &c.prefix(), retire) } {
                    Ok(n) => units += n,
                    Err(e) => {
                        r = Err(e);
                        break;
                    }
                }
            }
            r
        });
        self.subtrees_rebuilt += units as u64;
        self.max_nh = max;
        match done {
            Ok(()) => Ok(Patched::InPlace(UpdateStats {
                units_rebuilt: units,
                full_rebuild: false,
            })),
            // The arrays are full: rebuild with room (the half-built subtree is never
            // published and goes away with the old table).
            Err(build::Exhausted) => {
                let room = with_width!(&table.layout, t => 2 * t.nodes.capacity());
                self.rebuild(rib, None, room)
            }
        }
    }

    unsafe fn reuse(&mut self, _table: &PoptrieTable<A>, b: RetiredBlock) {
        let space = if b.leaves {
            &mut self.space.leaves
        } else {
            &mut self.space.nodes
        };
        space.free(b.pos as usize, b.len as usize);
    }
}

impl<A: Address> PoptrieWriter<A> {
    /// A full rebuild that replaces the table (keeping the counters), with leaves of at
    /// least `width` and node arrays of at least `min_nodes` slots of capacity.
    fn rebuild(
        &mut self,
        rib: &Rib<A>,
        width: Option<Width>,
        min_nodes: usize,
    ) -> Result<Patched<PoptrieTable<A>>, BuildError> {
        let config = PoptrieConfig {
            leaf_width: width.or(self.config.leaf_width),
            ..self.config.clone()
        };
        let (table, mut writer) = build::build(rib, &config, min_nodes)?;
        writer.config.leaf_width = self.config.leaf_width;
        writer.updates = self.updates;
        writer.subtrees_rebuilt = self.subtrees_rebuilt;
        writer.full_rebuilds = self.full_rebuilds + 1;
        writer.max_nh = writer.max_nh.max(self.max_nh);
        *self = writer;
        Ok(Patched::Replaced(
            Box::new(table),
            UpdateStats {
                units_rebuilt: 1,
                full_rebuild: true,
            },
        ))
    }
}
#[cfg(test)]
mod tests;

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
//!   structure is built from the table projected onto disjoint ranges (those of
//!   [`Rib::for_each_range`]; the bulk build derives them in its own walk over the routes,
//!   which also finds the largest next hop): a slot is a leaf when its addresses all
//!   share one longest match, so subtrees are never deeper than the table needs (the
//!   C code reaches the same shape by its vertical compression).
//! * **Leaves** are 16 bits (next hops `1..=65535`, as the paper's `poptrie_leaf_t`, which
//!   holds the 51,788 origin ASes of the RouteViews table), widened automatically to 32
//!   bits (31-bit next hops, the limit of a direct-pointing leaf) when the table needs it;
//!   [`PoptrieConfig::leaf_width`] forces a width, and a table that does not fit is a
//!   [`BuildError`], never truncated.
//! * **Bulk build.** A full build walks the ranges once and packs every array back to
//!   back (no padding); it takes tens of milliseconds on a full table. The C code instead
//!   inserts routes one by one through its update path.
//! * **Incremental update** through [`IncrementalFib`]. As `_update_subtree`
//!   does: a change of length `<= s` rebuilds each direct-pointing entry it spans; a longer
//!   one walks down from its entry while the prefix lies strictly inside an internal child,
//!   rebuilds the node where it stops (its whole subtree, from the `Rib`) into newly
//!   allocated arrays, then makes it visible with **one 32-bit store**: the parent's
//!   `base1` (after copying the parent's children array with the new node in place) or
//!   the direct-pointing entry. If the rebuilt node collapses into a leaf, the parent's
//!   vector changes, so the parent is rebuilt instead, and so on upwards. Old arrays are
//!   freed after the switch. The arrays are managed by a buddy allocator (like the C
//!   code's `buddy.c`) that hands out exact sizes; see `alloc.rs`. An update whose next
//!   hop does not fit 16-bit leaves rebuilds the whole structure with 32-bit leaves.
//!   `apply` takes `&mut self`, so no lookup runs during it; the store ordering is what
//!   lets the concurrent handle publish the same way without copying.
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
//!     of mostly cached nodes, where the lane bookkeeping cost more than it bought (on
//!     the real IPv6 tables the pipeline was about 1.5× faster).
//!
//!   Both are compiled once portably and once with the `popcnt` instruction, chosen at
//!   build time from CPU detection (`force_scalar` picks the portable twin;
//!   [`Fib::implementation`] reports `popcnt` for the hardware-popcount kernel).
//!
//! Differences from the C code: the bulk build (from ranges, not route by route), the
//! exact-size buddy allocator, 32-bit leaf widening, and the batched lookup (the C code
//! looks keys up one at a time); the structure and the update procedure are the paper's.
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

mod alloc;
mod build;
mod lookup;
mod update;

use core::marker::PhantomData;

use crate::fib::UpdateStats;
use crate::fib::{BuildError, Change, Fib, Implementation, IncrementalFib, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::registry::BuildOptions;
use crate::rib::Rib;
use crate::schemes::common::ms_since;

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
    /// Index of the first child.
    base1: u32,
}

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

/// `popcnt(v & ((2 << idx) - 1))`: set bits at or below `idx`.
#[inline(always)]
fn popcnt_le(v: u64, idx: u32) -> u32 {
    (v << (63 - idx)).count_ones()
}

/// The address types Poptrie handles (`u32`, `u128`): stride extraction.
pub trait Key: Address {
    /// The first `s` bits (`s <= 24`) as a direct-pointing index.
    fn top(self, s: u32) -> usize;
    /// The 6 bits from bit `pos` (`pos < BITS`), zero-filled past the end.
    fn chunk(self, pos: u32) -> u32;
    /// `self << n` (`n < BITS`).
    fn shl(self, n: u32) -> Self;
    /// The top 6 bits (`chunk(0)`).
    fn head(self) -> u32;
}

impl Key for u32 {
    #[inline(always)]
    fn top(self, s: u32) -> usize {
        (self >> 1 >> (31 - s)) as usize
    }
    #[inline(always)]
    fn chunk(self, pos: u32) -> u32 {
        (self << pos) >> 26
    }
    #[inline(always)]
    fn shl(self, n: u32) -> Self {
        self << n
    }
    #[inline(always)]
    fn head(self) -> u32 {
        self >> 26
    }
}

impl Key for u128 {
    #[inline(always)]
    fn top(self, s: u32) -> usize {
        ((self >> 64) as u64 >> 1 >> (63 - s)) as usize
    }
    #[inline(always)]
    fn chunk(self, pos: u32) -> u32 {
        ((self << pos) >> 122) as u32
    }
    #[inline(always)]
    fn shl(self, n: u32) -> Self {
        self << n
    }
    #[inline(always)]
    fn head(self) -> u32 {
        (self >> 122) as u32
    }
}

/// A leaf: `u16` or `u32`.
pub(crate) trait Leaf: Copy + Send + Sync + 'static {
    /// The largest next hop it holds.
    const MAX: u64;
    fn from_u32(v: u32) -> Self;
    fn get(self) -> u32;
}

impl Leaf for u16 {
    const MAX: u64 = u16::MAX as u64;
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        debug_assert!(v as u64 <= <Self as Leaf>::MAX);
        v as u16
    }
    #[inline(always)]
    fn get(self) -> u32 {
        self as u32
    }
}

impl Leaf for u32 {
    const MAX: u64 = MAX_NEXT_HOP;
    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        v
    }
    #[inline(always)]
    fn get(self) -> u32 {
        self
    }
}

/// The arrays of one leaf width.
pub(crate) struct Trie<L> {
    /// Direct-pointing bits.
    s: u8,
    /// `2^s` entries: `LEAF_FLAG | next hop`, or a node index.
    dir: Box<[u32]>,
    /// Node 0 is [`Node::SINK`].
    nodes: Vec<Node>,
    /// Leaf 0 is 0 (the sink's leaf).
    leaves: Vec<L>,
    nodes_alloc: alloc::Buddy,
    leaves_alloc: alloc::Buddy,
}

impl<L: Leaf> Trie<L> {
    fn bytes(&self) -> usize {
        self.dir.len() * 4
            + self.nodes.len() * core::mem::size_of::<Node>()
            + self.leaves.len() * core::mem::size_of::<L>()
    }

    fn stats(&self, stats: &mut Stats) {
        let nodes = self.nodes_alloc.top() as u64 - 1 - self.nodes_alloc.free_slots();
        let leaves = self.leaves_alloc.top() as u64 - 1 - self.leaves_alloc.free_slots();
        let direct = self.dir.iter().filter(|&&e| e & LEAF_FLAG != 0).count();
        stats.push("internal_nodes", StatValue::Count(nodes));
        stats.push("leaves", StatValue::Count(leaves));
        stats.push(
            "free_slots",
            StatValue::Count(self.nodes_alloc.free_slots() + self.leaves_alloc.free_slots()),
        );
        stats.push(
            "direct_leaf_share",
            StatValue::Ratio(direct as f64 / self.dir.len() as f64),
        );
    }
}

/// Leaf width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeafWidth {
    /// 16-bit leaves (the paper's): next hops up to 65,535.
    U16,
    /// 32-bit leaves: next hops up to 2^31 - 1.
    U32,
}

/// Build options for [`Poptrie`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoptrieConfig {
    /// Bits resolved by the direct-pointing table (`0..=24`; the paper uses 0, 16, 18).
    pub direct_bits: u8,
    /// Force a leaf width instead of the narrowest that fits.
    ///
    /// ```
    /// use lpmkit::schemes::poptrie::{LeafWidth, PoptrieConfig};
    /// let cfg = PoptrieConfig { leaf_width: Some(LeafWidth::U32), ..PoptrieConfig::poptrie16() };
    /// # let _ = cfg;
    /// ```
    pub leaf_width: Option<LeafWidth>,
    /// Use the portable lookup (software population count) even if the CPU has `popcnt`.
    pub force_scalar: bool,
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
}

impl Default for PoptrieConfig {
    fn default() -> Self {
        Self::poptrie18()
    }
}

enum Layout {
    Narrow(Trie<u16>),
    Wide(Trie<u32>),
}

/// Dispatches `$body` over the layout's trie as `$t`.
macro_rules! with_trie {
    ($layout:expr, $t:ident => $body:expr) => {
        match $layout {
            Layout::Narrow($t) => $body,
            Layout::Wide($t) => $body,
        }
    };
}

/// The Poptrie lookup structure for `u32` (IPv4) or `u128` (IPv6) addresses.
pub struct Poptrie<A: Key> {
    layout: Layout,
    config: PoptrieConfig,
    popcnt: bool,
    build_ms: f64,
    /// The largest next hop the `Rib` may hold: at build time, then every announced one.
    max_nh: u64,
    updates: u64,
    subtrees_rebuilt: u64,
    _family: PhantomData<fn() -> A>,
}

impl<A: Key> Poptrie<A> {
    /// Builds the structure from `rib`.
    pub fn build(rib: &Rib<A>, config: &PoptrieConfig) -> Result<Self, BuildError> {
        let t0 = std::time::Instant::now();
        if config.direct_bits > 24 {
            return Err(BuildError::InvalidConfig {
                scheme: "poptrie".into(),
                reason: format!("direct_bits = {} is outside 0..=24", config.direct_bits),
            });
        }
        let name = Self::name_for(config.direct_bits);
        // Every route counts, even one hidden by more-specifics: a withdrawal can expose it.
        let (starts, max) = build::ranges_and_max(rib);
        let max = max as u64;
        let width = match config.leaf_width {
            Some(w) => w,
            None if max <= u16::MAX as u64 => LeafWidth::U16,
            None => LeafWidth::U32,
        };
        let limit = match width {
            LeafWidth::U16 => u16::MAX as u64,
            LeafWidth::U32 => MAX_NEXT_HOP,
        };
        if max > limit {
            return Err(BuildError::NextHopOverflow {
                scheme: name.to_string(),
                max: limit,
                requested: max,
            });
        }
        let s = config.direct_bits;
        let layout = match width {
            LeafWidth::U16 => Layout::Narrow(build::build::<A, u16>(&starts, s)?),
            LeafWidth::U32 => Layout::Wide(build::build::<A, u32>(&starts, s)?),
        };
        Ok(Poptrie {
            layout,
            config: config.clone(),
            popcnt: !config.force_scalar && Self::has_popcnt(),
            build_ms: ms_since(t0),
            max_nh: max,
            updates: 0,
            subtrees_rebuilt: 0,
            _family: PhantomData,
        })
    }

    fn has_popcnt() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            crate::simd::Avx2::new().is_some() && std::arch::is_x86_feature_detected!("popcnt")
        }
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    fn name_for(s: u8) -> &'static str {
        match s {
            16 => "poptrie16",
            18 => "poptrie18",
            _ => "poptrie",
        }
    }

    /// The leaf width in use.
    pub fn leaf_width(&self) -> LeafWidth {
        match self.layout {
            Layout::Narrow(_) => LeafWidth::U16,
            Layout::Wide(_) => LeafWidth::U32,
        }
    }

    /// The configuration it was built with.
    pub fn config(&self) -> &PoptrieConfig {
        &self.config
    }
}

/// The registry's builder for Poptrie with `S` direct-pointing bits.
pub fn build_boxed<A: Key, const S: u8>(
    rib: &Rib<A>,
    options: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    let config = PoptrieConfig {
        direct_bits: S,
        leaf_width: None,
        force_scalar: options.force_scalar,
    };
    Ok(Box::new(Poptrie::build(rib, &config)?))
}

/// The registry's in-place-update builder for Poptrie with `S` direct-pointing bits.
pub fn build_incremental<A: Key, const S: u8>(
    rib: &Rib<A>,
    options: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    let config = PoptrieConfig {
        direct_bits: S,
        leaf_width: None,
        force_scalar: options.force_scalar,
    };
    Ok(Box::new(Poptrie::build(rib, &config)?))
}

impl<A: Key> Fib<A> for Poptrie<A> {
    fn name(&self) -> &str {
        Self::name_for(self.config.direct_bits)
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(with_trie!(&self.layout, t => {
            #[cfg(target_arch = "x86_64")]
            if self.popcnt {
                // SAFETY: `popcnt` is set only after the CPU reported the feature.
                return NextHop::new(unsafe { lookup::one_popcnt(t, addr) });
            }
            t.lookup_one(addr)
        }))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        with_trie!(&self.layout, t => {
            #[cfg(target_arch = "x86_64")]
            if self.popcnt {
                // SAFETY: `popcnt` is set only after the CPU reported the feature.
                unsafe { lookup::batch_popcnt(t, addrs, out) };
                return;
            }
            lookup::batch_portable(t, addrs, out)
        })
    }

    fn memory_bytes(&self) -> usize {
        with_trie!(&self.layout, t => t.bytes())
    }

    fn stats(&self) -> Stats {
        let mut st = Stats::new();
        st.push(
            "leaf_width",
            StatValue::Text(match self.leaf_width() {
                LeafWidth::U16 => "16-bit leaves".into(),
                LeafWidth::U32 => "32-bit leaves".into(),
            }),
        );
        with_trie!(&self.layout, t => t.stats(&mut st));
        st.push("build", StatValue::Millis(self.build_ms));
        st.push("updates", StatValue::Count(self.updates));
        st.push("subtrees_rebuilt", StatValue::Count(self.subtrees_rebuilt));
        st
    }

    fn implementation(&self) -> Implementation {
        if self.popcnt {
            Implementation::Popcnt
        } else {
            Implementation::Scalar
        }
    }
}

impl<A: Key> IncrementalFib<A> for Poptrie<A> {
    fn apply(&mut self, rib: &Rib<A>, changes: &[Change<A>]) -> Result<UpdateStats, BuildError> {
        let name = Self::name_for(self.config.direct_bits);
        let max = changes
            .iter()
            .filter_map(|c| match c {
                Change::Announce(_, nh) => Some(nh.get() as u64),
                Change::Withdraw(_) => None,
            })
            .max()
            .unwrap_or(0)
            .max(self.max_nh);
        let limit = match self.layout {
            Layout::Narrow(_) => u16::MAX as u64,
            Layout::Wide(_) => MAX_NEXT_HOP,
        };
        if max > limit {
            if self.config.leaf_width.is_some() || max > MAX_NEXT_HOP {
                return Err(BuildError::NextHopOverflow {
                    scheme: name.to_string(),
                    max: limit,
                    requested: max,
                });
            }
            // Widen: a full rebuild with 32-bit leaves.
            let config = PoptrieConfig {
                leaf_width: Some(LeafWidth::U32),
                ..self.config.clone()
            };
            let mut wide = Self::build(rib, &config)?;
            wide.config.leaf_width = None;
            wide.updates = self.updates + changes.len() as u64;
            wide.subtrees_rebuilt = self.subtrees_rebuilt;
            *self = wide;
            return Ok(UpdateStats {
                units_rebuilt: 1,
                full_rebuild: true,
            });
        }
        let mut units = 0;
        with_trie!(&mut self.layout, t => {
            for c in changes {
                units += t.update(rib, &c.prefix());
            }
            t.check_capacity()?;
        });
        self.updates += changes.len() as u64;
        self.subtrees_rebuilt += units as u64;
        self.max_nh = max;
        Ok(UpdateStats {
            units_rebuilt: units,
            full_rebuild: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Ipv4, Ipv6, Prefix};

    fn nh(v: u32) -> NextHop {
        NextHop::new(v).unwrap()
    }

    fn check<A: Key>(rib: &Rib<A>, fib: &Poptrie<A>, extra: &[A]) {
        let mut keys: Vec<A> = vec![A::ZERO, A::MAX];
        keys.extend_from_slice(extra);
        for (p, _) in rib.iter() {
            for a in [p.first(), p.last()] {
                keys.push(a);
                keys.extend(a.checked_inc());
                keys.extend(a.checked_dec());
            }
        }
        let mut out = vec![0; keys.len()];
        fib.lookup_batch(&keys, &mut out);
        for (&k, &o) in keys.iter().zip(&out) {
            let want = NextHop::raw(rib.lookup(k));
            assert_eq!(NextHop::raw(fib.lookup(k)), want, "lookup {k:x}");
            assert_eq!(o, want, "lookup_batch {k:x}");
        }
    }

    fn rib<A: Key>(routes: &[(&str, u32)]) -> Rib<A> {
        routes
            .iter()
            .map(|&(p, h)| (p.parse::<Prefix<A>>().unwrap(), nh(h)))
            .collect()
    }

    /// Checks `r` with every direct-pointing width of `direct_bits`, both leaf widths, on
    /// the SIMD and the scalar path.
    fn check_configs(r: &Rib<Ipv4>, direct_bits: &[u8]) {
        for &s in direct_bits {
            for force_scalar in [false, true] {
                for leaf_width in [None, Some(LeafWidth::U32)] {
                    let cfg = PoptrieConfig {
                        direct_bits: s,
                        leaf_width,
                        force_scalar,
                    };
                    check(r, &Poptrie::build(r, &cfg).unwrap(), &[]);
                }
            }
        }
    }

    #[test]
    fn small_v4() {
        let r = rib::<Ipv4>(&[
            ("0.0.0.0/0", 1),
            ("10.0.0.0/8", 2),
            ("10.1.1.0/24", 3),
            ("10.1.1.128/25", 4),
            ("10.1.1.7/32", 5),
            ("255.255.255.255/32", 6),
            ("0.0.0.0/32", 7),
            ("192.168.0.0/16", 1),
            ("192.168.3.252/30", 9),
        ]);
        check_configs(&r, &[0, 1, 6, 16, 18, 24]);
        check(
            &Rib::new(),
            &Poptrie::build(&Rib::<Ipv4>::new(), &Default::default()).unwrap(),
            &[],
        );
    }

    /// Sized for Miri (direct tables of at most 2^12 entries): with
    /// `RUSTFLAGS="-C target-feature=+avx2,+popcnt,+bmi1,+bmi2" cargo +nightly miri test
    /// -p lpmkit --lib miri_` it checks the popcount paths and the scalar twin.
    #[test]
    fn miri_small_direct_bits() {
        let r = rib::<Ipv4>(&[
            ("0.0.0.0/0", 1),
            ("10.0.0.0/8", 2),
            ("10.1.1.0/24", 3),
            ("10.1.1.128/25", 4),
            ("10.1.1.7/32", 5),
            ("255.255.255.255/32", 6),
            ("192.168.3.252/30", 9),
        ]);
        check_configs(&r, &[0, 6, 12]);
    }

    #[test]
    fn small_v6() {
        let r = rib::<Ipv6>(&[
            ("::/0", 1),
            ("2001:db8::/32", 2),
            ("2001:db8:1::/48", 3),
            ("2001:db8:1::1/128", 4),
            ("2001:db8:1::/127", 6),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 5),
            ("::/128", 7),
        ]);
        for s in [0, 16, 18] {
            let cfg = PoptrieConfig {
                direct_bits: s,
                ..Default::default()
            };
            check(&r, &Poptrie::build(&r, &cfg).unwrap(), &[]);
        }
    }

    #[test]
    fn widens_and_refuses() {
        let big = rib::<Ipv4>(&[("10.0.0.0/8", 70_000)]);
        let t = Poptrie::build(&big, &Default::default()).unwrap();
        assert_eq!(t.leaf_width(), LeafWidth::U32);
        check(&big, &t, &[]);
        let cfg = PoptrieConfig {
            leaf_width: Some(LeafWidth::U16),
            ..Default::default()
        };
        assert!(matches!(
            Poptrie::build(&big, &cfg),
            Err(BuildError::NextHopOverflow {
                max: 65535,
                requested: 70000,
                ..
            })
        ));
        let huge = rib::<Ipv4>(&[("10.0.0.0/8", 1 << 31)]);
        assert!(Poptrie::build(&huge, &Default::default()).is_err());
        // An update past 16 bits widens the leaves.
        let mut r = rib::<Ipv4>(&[("10.0.0.0/8", 1)]);
        let mut t = Poptrie::build(&r, &Default::default()).unwrap();
        let c = Change::Announce("10.1.0.0/24".parse().unwrap(), nh(100_000));
        c.apply_to(&mut r);
        assert!(t.apply(&r, &[c]).unwrap().full_rebuild);
        assert_eq!(t.leaf_width(), LeafWidth::U32);
        check(&r, &t, &[]);
        // A large next hop hidden under more-specifics still sets the width: withdrawing
        // the more-specifics exposes it.
        let mut r = rib::<Ipv4>(&[
            ("10.0.0.0/8", 70_000),
            ("10.0.0.0/9", 1),
            ("10.128.0.0/9", 1),
        ]);
        let mut t = Poptrie::build(&r, &PoptrieConfig::poptrie16()).unwrap();
        assert_eq!(t.leaf_width(), LeafWidth::U32);
        for p in ["10.0.0.0/9", "10.128.0.0/9"] {
            let c = Change::Withdraw(p.parse().unwrap());
            c.apply_to(&mut r);
            assert!(!t.apply(&r, &[c]).unwrap().full_rebuild);
        }
        assert_eq!(t.lookup(0x0a00_0001), Some(nh(70_000)));
        check(&r, &t, &[]);
    }
}

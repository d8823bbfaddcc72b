//! OBMA, the Overlay BitMap Algorithm family of C. Zhang, Y. Feng, H. Song, Y. Wan, W. Xu
//! and B. Liu, "OBMA: Scalable Route Lookups with Fast and Zero-interrupt Updates":
//! OBMA_B, OBMA_L and OBMA_S, for IPv4 and IPv6, with updates in place under concurrent readers.
//!
//! # Structure (§III)
//!
//! The prefix trie is the [`Rib`], kept unaltered (no leaf pushing). The address is
//! partitioned [18-6-8] (Fig. 4): a **Direct Pointing Array** of 2^18 entries, then
//! **layer-2 chunks** of 6 levels and **layer-3 chunks** of 8 levels. A chunk's
//! Forwarding Port Array (its elements at its last level, each the longest match of the
//! routes down to that level: *level traversal*, §III-A) is split into equal **groups**
//! of `d` levels (`d ≥ 3`), each an **overlay bitmap** of 8-bit **clusters** with one code
//! word per cluster (bitmap + cumulative counter), the **Index Table** of 1-counts, and
//! the lookup entries (`group.rs`). An entry below `lim` is a next hop; `lim + id` points
//! to chunk `id` of the next layer through that layer's **chunk list** (`layout.rs`).
//! The lookup is Algorithm 1, one key at a time ([`Fib::lookup`]) or as a wavefront
//! ([`Fib::lookup_batch`]): the DPA stage over blocks of 32 keys, and the keys that go on
//! queued per chunk layer until a full block goes through that layer's stage, whose
//! loads overlap and are prefetched one pass ahead.
//!
//! * **OBMA_B** (§III-B): a chunk structure holds the group index width and the group
//!   list; **adaptive grouping** (§VI-B1, `f0 = 32`, `β = 4`, online addition and periodic
//!   decay) picks each chunk's width from its update count, and the **24th-level
//!   optimisation** (§VI-B2, Table II) changes one element of a group without a trie
//!   traversal. Both switchable ([`Grouping`], [`ObmaConfig::level24`]) so Table IV's rows
//!   can be reproduced: fixed groupings (0-3-3), (1-2-3), (2-1-3), (3-0-3) and
//!   adaptive grouping⁻ (the chunk structure with one group).
//! * **OBMA_L** (§IV): fixed [0-3-3] layer-2 and [0-5-3] layer-3 groups, the chunk
//!   structure omitted: chunk lists hold the group offsets.
//! * **OBMA_S** (§V): each group's FPA is permuted by a **Bit Inversion Sequence**
//!   (greedy top-down Algorithm 2 by default, or the exhaustive optimum), the BISes of a
//!   chunk packed in 56 bits of its header after the type bit and the 7-bit width (so
//!   widths stay below 4) — a chunk of one group (most of them) carries its BIS in its
//!   chunk-list entry instead, with no chunk structure (lpmkit's addition: the structure
//!   held nothing else); chunks with at most `K = 4` entries are **sparse chunks**
//!   searched linearly, longest prefix first. OBMA_S⁻ is OBMA_S without sparse chunks.
//!
//! # Updates (§VI), stronger than the paper's
//!
//! [`ObmaWriter`] patches the one live table while readers look it up
//! ([`crate::sync::InPlace`]): a change repaints only the elements of its own prefix;
//! where a group's overlay bitmap stays the same (a next-hop change) the lookup entries
//! that change are stored in place, one atomic store each, and otherwise the group (or
//! an OBMA_S sparse chunk) is rebuilt beside the live one and published by one atomic
//! store of a DPA element, a group offset or a chunk-list entry; what it unlinks is
//! reclaimed only after every reader that could hold it has moved on. A change alone in
//! its batch needs no walk of the `Rib` for an announcement (the writer's presence bits
//! say which elements longer routes cover). The paper's
//! "pointer buffer" admits transient wrong answers (§VI-C); here every lookup returns, per
//! key, the answer of the table before or after each change. `lpmkit info` reports Table
//! III's figures (pointers changed, DPA elements modified and bytes of new structure per
//! update). See `writer.rs`.
//!
//! # Deliberate differences
//!
//! * **Entries.** The paper's entries are a type bit and a 15-bit port or index, which
//!   caps a layer at 32,768 chunks; the bart table needs 64,989 layer-2 chunks. Here an
//!   entry below `lim` is a next hop and `lim + id` a chunk — the same information, with
//!   the split where the table needs it: `lim` leaves the chunk ids the table needs and
//!   0.2% more for growth, and gives next hops the rest, up to 4,096 values (so next hops
//!   that updates bring rarely force a rebuild; one at or past `lim`, or a layer out of
//!   ids, rebuilds the table, widening the entries if need be). Next hops and layer-0
//!   chunk ids only ever share the DPA, and the DPA holds few next hops (those of routes
//!   up to `dpa_bits` long): a table whose next hops and layer-0 chunks do not fit one
//!   16-bit space (the origin-AS tables: 51,788 next hops, 55,015 layer-2 chunks) keeps
//!   16-bit entries with a **DPA dictionary** — a DPA value below `dpa_lim` is a slot of
//!   a small array of next hops (4,112 on origin-AS), `dpa_lim + id` a chunk; slots are
//!   appended by the writer before a DPA element names them and never change while the
//!   table lives, so readers need no more than one extra load. A table that does not fit
//!   even so gets 32-bit entries (the shared width rule; [`ObmaConfig::entry_width`]
//!   forces one, and a table that does not fit it is a [`BuildError`]).
//! * **Pointers** are 32-bit word offsets into two arenas (chunk structures, groups)
//!   that never move under a reader; a chunk list entry is one 32-bit offset.
//! * **Algorithm 2** is run with its benefit and cost counted exactly (the 1s the
//!   permutation leaves, for each candidate bit from the top down): `O(n log n)` instead
//!   of the paper's `O(n)` bookkeeping, same greedy choice rule.
//! * **Fixed groupings of Table IV** name layer-2 widths; layer-3 chunks take the same
//!   group index width (so (1-2-3) is (1-4-3) in layer 3).
//! * **The 24th-level optimisation** applies at the last level of every chunk layer (/24
//!   and /32 for IPv4; /24, /32, /40, … for IPv6).
//! * **Periodic decay** runs every [`Grouping::Adaptive::decay_updates`] updates (the
//!   paper: once a day); counters restart after each decay.
//! * **IPv6** (the paper's closing remark) uses the same chunks with a [16-8-…-8]
//!   partition: a 2^16 DPA and fourteen 8-bit layers ([`Geometry::ipv6`]).
//!
//! ```
//! use lpmkit::{Fib, IncrementalFib, Change, Ipv4, NextHop, Rib};
//! use lpmkit::schemes::obma::{Obma, ObmaConfig};
//!
//! let nh = |v| NextHop::new(v).unwrap();
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, nh(1));
//! rib.insert("10.1.2.0/24".parse()?, nh(2));
//! rib.insert("10.1.2.128/25".parse()?, nh(3));
//! let mut fib = Obma::build(&rib, &ObmaConfig::b())?;
//! assert_eq!(fib.lookup(0x0a01_0281), Some(nh(3)));
//! assert_eq!(fib.lookup(0x0a01_0201), Some(nh(2)));
//! assert_eq!(fib.lookup(0x0b00_0000), None);
//!
//! let change = Change::Withdraw("10.1.2.0/24".parse()?);
//! change.apply_to(&mut rib);
//! fib.apply(&rib, &[change])?;
//! assert_eq!(fib.lookup(0x0a01_0201), Some(nh(1)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod group;
mod layout;
mod stats;
#[cfg(test)]
mod tests;
mod writer;

use crate::fib::{BuildError, Config, Fib, InPlaceWriter, Settings};
use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::rib::Rib;
use crate::scheme::Patchable;
use crate::schemes::common::{with_width, ByWidth, Width};

pub(crate) use build::build_with;
pub use layout::{Geometry, Variant};
use layout::{Layout, VB, VL, VS};
#[doc(hidden)]
pub use writer::{ObmaWriter, Retired};

/// How chunks are cut into groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grouping {
    /// Adaptive grouping (§VI-B1): a chunk with `c` updates gets group index width `i`
    /// for `c` in `[f_{i-1}, f_i)`, `f_i = β f_{i-1}`, starting from `f_0 = f0`.
    Adaptive {
        /// The first threshold, `f0` (the paper: 32).
        f0: u32,
        /// The factor between thresholds, `β` (the paper: 4).
        beta: u32,
        /// Updates between periodic decays (0: never).
        decay_updates: u64,
    },
    /// Every chunk has this group index width (Table IV's fixed groups, capped at the
    /// layer's widest).
    Fixed(u8),
}

/// How OBMA_S picks a group's Bit Inversion Sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BisSearch {
    /// No inversion.
    Off,
    /// Algorithm 2, greedy top-down.
    Greedy,
    /// Exhaustive: the fewest 1s.
    Optimal,
}

/// Build options for [`Obma`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObmaConfig {
    /// OBMA_B, OBMA_L or OBMA_S.
    pub variant: Variant,
    /// Group widths (OBMA_L always uses one group per chunk).
    pub grouping: Grouping,
    /// The 24th-level optimisation (§VI-B2).
    pub level24: bool,
    /// OBMA_S's BIS search.
    pub bis: BisSearch,
    /// OBMA_S's sparse chunks: at most this many entries (0: none, OBMA_S⁻).
    pub sparse_k: usize,
    /// Force an entry width instead of the narrowest that holds the table.
    pub entry_width: Option<Width>,
    /// The address partition (default: [`Geometry::ipv4`] or [`Geometry::ipv6`]).
    pub geometry: Option<Geometry>,
    /// Count Fig. 13's 1s (Luleå-style heads, overlay, BIS greedy and optimal) over every
    /// chunk at build, for [`Fib::stats`]: an exhaustive BIS search per 16 elements, so
    /// off unless asked for.
    pub fig13: bool,
}

/// The paper's adaptive grouping: `f0 = 32`, `β = 4`, decay every 2^20 updates.
pub(crate) const ADAPTIVE: Grouping = Grouping::Adaptive {
    f0: 32,
    beta: 4,
    decay_updates: 1 << 20,
};

impl ObmaConfig {
    /// OBMA_B with the paper's update optimisations.
    pub fn b() -> Self {
        ObmaConfig {
            variant: Variant::B,
            grouping: ADAPTIVE,
            level24: true,
            bis: BisSearch::Off,
            sparse_k: 0,
            entry_width: None,
            geometry: None,
            fig13: false,
        }
    }

    /// OBMA_L: [0-3-3] and [0-5-3] groups.
    pub fn l() -> Self {
        ObmaConfig {
            variant: Variant::L,
            grouping: Grouping::Fixed(0),
            ..Self::b()
        }
    }

    /// OBMA_S: greedy BIS, sparse chunks of up to 4 entries, adaptive grouping.
    pub fn s() -> Self {
        ObmaConfig {
            variant: Variant::S,
            bis: BisSearch::Greedy,
            sparse_k: 4,
            ..Self::b()
        }
    }
}

impl Default for ObmaConfig {
    fn default() -> Self {
        Self::b()
    }
}

/// What OBMA lookups read: shared with reader threads while an [`ObmaWriter`] patches it.
#[doc(hidden)]
pub struct ObmaTable<A: Address> {
    layout: ByWidth<Layout<A, u16>, Layout<A, u32>>,
}

impl<A: Address> core::fmt::Debug for ObmaTable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ObmaTable")
            .field("variant", &self.variant())
            .field("entry_width", &self.layout.width())
            .field("bytes", &self.memory_bytes())
            .finish()
    }
}

impl<A: Address> ObmaTable<A> {
    /// The variant.
    pub fn variant(&self) -> Variant {
        with_width!(&self.layout, t => t.variant)
    }

    #[doc(hidden)]
    /// The entry width in use.
    pub fn entry_width(&self) -> Width {
        self.layout.width()
    }

    #[doc(hidden)]
    /// The slot capacity of the DPA's next-hop dictionary, if the table has one.
    pub fn dpa_dictionary(&self) -> Option<u32> {
        with_width!(&self.layout, t => t.dict.as_ref().map(|_| t.dpa_lim))
    }
}

impl<A: Address> Fib<A> for ObmaTable<A> {
    /// A lookup of `key` that stalls after reading the DPA (`stall` runs in between):
    /// what a reader descheduled inside a lookup does. For the concurrency tests.
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        with_width!(&self.layout, t => match t.variant {
            Variant::B => t.lookup_stalled::<VB>(key, stall),
            Variant::L => t.lookup_stalled::<VL>(key, stall),
            Variant::S => t.lookup_stalled::<VS>(key, stall),
        })
    }

    fn name(&self) -> &str {
        match self.variant() {
            Variant::B => "obma-b",
            Variant::L => "obma-l",
            Variant::S => "obma-s",
        }
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(with_width!(&self.layout, t => match t.variant {
            Variant::B => t.lookup_one::<VB>(addr),
            Variant::L => t.lookup_one::<VL>(addr),
            Variant::S => t.lookup_one::<VS>(addr),
        }))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        with_width!(&self.layout, t => match t.variant {
            Variant::B => t.lookup_batch::<VB>(addrs, out),
            Variant::L => t.lookup_batch::<VL>(addrs, out),
            Variant::S => t.lookup_batch::<VS>(addrs, out),
        })
    }

    fn memory_bytes(&self) -> usize {
        with_width!(&self.layout, t => t.bytes())
    }
}

/// The OBMA lookup structure: its table and its writer, for use on one thread
/// ([`IncrementalFib`](crate::IncrementalFib)) or handed to [`crate::sync::InPlace`] for
/// updates under readers.
pub type Obma<A> = Patchable<A, ObmaWriter<A>>;

impl<A: Address> Obma<A> {
    #[doc(hidden)]
    /// The entry width in use.
    pub fn entry_width(&self) -> Width {
        self.table().entry_width()
    }

    #[doc(hidden)]
    /// The slot capacity of the DPA's next-hop dictionary, if the table has one (16-bit
    /// tables whose next hops and layer-0 chunk ids do not fit one 16-bit space).
    pub fn dpa_dictionary(&self) -> Option<u32> {
        self.table().dpa_dictionary()
    }

    /// Runs adaptive grouping's periodic decay now (§VI-B1; also run every
    /// `decay_updates` updates): chunks whose update count fell below their width's range
    /// are regrouped, and the counters restart.
    #[doc(hidden)]
    pub fn decay(&mut self, rib: &Rib<A>) -> Result<(), BuildError> {
        let (table, writer) = self.parts_mut();
        let r = with_width!(&table.layout, t => writer.decay(t, rib));
        let mut retired = writer.take_pending();
        match r {
            Ok(()) => {
                for b in retired.drain(..) {
                    // SAFETY: `&mut self` excludes every reader.
                    unsafe { InPlaceWriter::reuse(writer, table, b) };
                }
                Ok(())
            }
            Err(writer::Full) => {
                let config = writer.config.clone();
                *self = Obma::build(rib, &config)?;
                Ok(())
            }
        }
    }
}

impl Config for ObmaConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        ("variant", "b (OBMA_B), l (OBMA_L: one group per chunk, no chunk structure), s (OBMA_S: BIS and sparse chunks)"),
        (
            "grouping",
            "adaptive (the paper's adaptive grouping) or a fixed group index width 0..=5 (Table IV's (0-3-3) … (3-0-3))",
        ),
        ("f0", "adaptive grouping: the first update-count threshold (default 32)"),
        ("beta", "adaptive grouping: the factor between thresholds (default 4)"),
        ("decay", "adaptive grouping: updates between periodic decays, 0 for never (default 1048576)"),
        ("level24", "the 24th-level optimisation: true or false (default true)"),
        ("fig13", "count Fig. 13's 1s at build (Lulea, overlay, BIS greedy and optimal) for `info`: true or false (default false)"),
        ("bis", "OBMA_S's Bit Inversion Sequence search: greedy (Algorithm 2), optimal or off"),
        ("sparse", "OBMA_S's sparse chunks: at most this many entries, 0 for none (OBMA_S-minus)"),
        ("partition", "DPA bits then layer strides, '-'-separated (default 18-6-8; IPv6 16-8-...-8)"),
        ("width", "entry width, 16 or 32 (default: the narrowest that holds the table)"),
    ];

    fn from_settings<B: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let mut c = match s.text("variant") {
            None | Some("b") => ObmaConfig::b(),
            Some("l") => ObmaConfig::l(),
            Some("s") => ObmaConfig::s(),
            Some(v) => return Err(s.invalid("variant", v, "b, l or s")),
        };
        match s.text("grouping") {
            None => {}
            Some("adaptive") => c.grouping = ADAPTIVE,
            Some(v) => match v.parse::<u8>() {
                Ok(w) if w <= 5 => c.grouping = Grouping::Fixed(w),
                _ => return Err(s.invalid("grouping", v, "adaptive or a width 0..=5")),
            },
        }
        if let Grouping::Adaptive {
            f0,
            beta,
            decay_updates,
        } = c.grouping
        {
            let f0 = s.get("f0")?.unwrap_or(f0);
            let beta = s.get("beta")?.unwrap_or(beta);
            if f0 == 0 || beta < 2 {
                return Err(s.invalid("f0/beta", &format!("{f0}/{beta}"), "f0 >= 1 and beta >= 2"));
            }
            c.grouping = Grouping::Adaptive {
                f0,
                beta,
                decay_updates: s.get("decay")?.unwrap_or(decay_updates),
            };
        }
        c.level24 = s.get("level24")?.unwrap_or(c.level24);
        c.fig13 = s.get("fig13")?.unwrap_or(c.fig13);
        match s.text("bis") {
            None => {}
            Some("greedy") => c.bis = BisSearch::Greedy,
            Some("optimal") => c.bis = BisSearch::Optimal,
            Some("off") => c.bis = BisSearch::Off,
            Some(v) => return Err(s.invalid("bis", v, "greedy, optimal or off")),
        }
        c.sparse_k = s.get("sparse")?.unwrap_or(c.sparse_k);
        if let Some(p) = s.text("partition") {
            let bad = || s.invalid("partition", p, "a '-'-separated list of bit counts");
            let parts: Vec<u8> = p
                .split('-')
                .map(|x| x.trim().parse::<u8>())
                .collect::<Result<_, _>>()
                .map_err(|_| bad())?;
            let (&dpa_bits, strides) = parts.split_first().ok_or_else(bad)?;
            c.geometry = Some(Geometry {
                dpa_bits,
                strides: strides.to_vec(),
            });
        }
        c.entry_width = s.width("width")?;
        Ok(c)
    }
}

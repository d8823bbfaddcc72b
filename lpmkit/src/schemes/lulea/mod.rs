//! Lulea (IPv4): the three-level 16-8-8 compressed trie of M. Degermark, A. Brodnik,
//! S. Carlsson and S. Pink, "Small Forwarding Tables for Fast Routing Lookups", ACM
//! SIGCOMM 1997 — the "Lulea" baseline of the OBMA paper (§II and §VII: Fig. 13, 14, 16,
//! 19).
//!
//! This module follows the paper's §4 as it is reproduced in textbook and encyclopedia descriptions (level-1 search steps, the
//! 676-entry maptable, the direct next-hop codewords for masks with at most one head, the
//! sparse/dense/very-dense chunks), the OBMA paper's account of how Lulea builds its
//! bitmaps (its Fig. 3: leaf pushing, heads at the start of every leaf, no merging), and
//! the public SAIL release's description of Lulea as the baseline that "cannot perform
//! incremental update" (`fi.ict.ac.cn` open-source page, studied through its README).
//! No code was copied.
//!
//! # Structure (§4)
//!
//! * **Heads** (`build.rs`). The table is turned into a complete (leaf-pushed) prefix tree
//!   cut at depths 16, 24 and 32. At each level a position is a head when a leaf starts
//!   there (*genuine head*) or when the node there has routes below it (*root head*: a
//!   pointer to a chunk of the next level). Equal neighbouring leaves are not merged.
//! * **Level 1**: a bit vector of 2^16 bits read as 4,096 16-bit masks; one 16-bit
//!   **codeword** per mask (10-bit maptable row, 6-bit offset); one 16-bit **base index**
//!   per four codewords; the **maptable** (676 rows of 16 four-bit offsets, shared by all
//!   levels, `maptable.rs`); and the array of 16-bit **pointers**, one per head: a next hop,
//!   or a level-2 chunk. The lookup is the paper's: `pix = base[a >> 22] + six +
//!   maptable[ten][(a >> 16) & 15]`. A mask with at most one head whose next hop is at most
//!   22,207 is a **direct codeword** (`ten` ≥ 677: the next hop is in the codeword, no
//!   pointer) — the paper's optimisation "when the bit mask is zero or has a single bit
//!   set".
//! * **Levels 2 and 3**: chunks of 256 positions, **sparse** (1–8 heads: eight 8-bit head
//!   positions searched at once with a SWAR compare, and eight pointers), **dense** (9–64
//!   heads: 16 codewords, offsets from the chunk's first pointer, no base indices) or
//!   **very dense** (65–256 heads: 16 codewords and 4 base indices, as level 1).
//!
//! # Deliberate differences
//!
//! * **Pointers.** The paper's pointers are 16 bits: a 2-bit type and a 14-bit index
//!   (next hop or chunk). Here the split is chosen per table: values below
//!   `lim` = the next power of two above the largest next hop (at least 256) are next
//!   hops, values from `lim` on are chunk ids (`lim + id`), so a 16-bit pointer names up to
//!   `65536 - lim` chunks per level (the bart table needs tens of thousands). A table that
//!   does not fit 16-bit pointers gets 32-bit ones (the shared width rule;
//!   [`LuleaConfig::pointer_width`] forces a width, and a table that does not fit it is a
//!   [`BuildError`]).
//! * **Chunk directory.** A chunk pointer names a chunk id; a per-level directory of
//!   32-bit entries (2-bit kind, 30-bit word offset) locates the chunk. The paper does not
//!   say how its variable-sized chunks are addressed; the directory also gives every chunk
//!   one switch word for updates. Its 4 bytes per chunk are counted in the memory.
//! * **Maptable rows.** One all-zero row (677 rows in all) serves the masks the paper
//!   never looks up through the maptable at level 1 (single-head and zero masks inside
//!   chunks, and at level 1 when the next hop is too large for a direct codeword); the
//!   direct codewords therefore start at row 677 and hold next hops up to 22,207 instead
//!   of the paper's 22,271.
//! * **Lookups in batches** ([`Fib::lookup_batch`]): keys are looked up 32 at a time in
//!   stages (level 1 for all, then the level-2 directory entries, chunks and level-3 of
//!   the keys that continue), prefetching what the next stage reads.
//!
//! # Updates
//!
//! Lulea has no incremental update: the OBMA paper measures it by rebuilding what a change
//! touches (its Fig. 19: "Lulea handles incremental updates poorly"). [`LuleaWriter`] does
//! that in place, under concurrent readers ([`crate::sync::InPlace`]): the chunks a change
//! touches are rebuilt beside the live ones and published by one store of their directory
//! entry; when level 1's heads change, the whole of level 1 (codewords, base indices and
//! every pointer) is re-encoded into a new block and published by one store of the root
//! word. See `writer.rs` for which part a change touches.
//!
//! ```
//! use lpmkit::{Fib, IncrementalFib, Change, Ipv4, NextHop, Rib};
//! use lpmkit::schemes::lulea::{Lulea, LuleaConfig};
//!
//! let nh = |v| NextHop::new(v).unwrap();
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, nh(1));
//! rib.insert("10.1.2.0/24".parse()?, nh(2));
//! rib.insert("10.1.2.128/25".parse()?, nh(3));
//! let mut fib = Lulea::build(&rib, &LuleaConfig::default())?;
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
mod lookup;
mod maptable;
mod writer;

use core::marker::PhantomData;
use core::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::fib::{max_next_hop, BuildError, Config, Fib, Settings, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Ipv4};
use crate::rib::Rib;
use crate::scheme::Patchable;
use crate::schemes::common::{
    check_next_hop, ms_since, narrowest_built, with_width, Arena, ByWidth, Width, Word,
};

#[doc(hidden)]
pub use writer::{LuleaWriter, RetiredPart};

/// Keys per stage block of `lookup_batch`.
const BLOCK: usize = 32;

/// Build options for [`Lulea`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LuleaConfig {
    /// Force a pointer width instead of the narrowest that holds the table.
    pub pointer_width: Option<Width>,
    /// Search sparse chunks with the scalar loop instead of the SWAR compare.
    pub force_scalar: bool,
}

/// Writer-updated figures, on a line of their own.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Fill {
    mem: AtomicUsize,
    ids: AtomicUsize,
}

impl Fill {
    fn set_mem(&self, v: usize) {
        self.mem.store(v, Ordering::Relaxed);
    }
    fn set_ids(&self, v: usize) {
        self.ids.store(v, Ordering::Relaxed);
    }
}

/// The arrays of one pointer width: what lookups read.
pub(crate) struct Levels<P: Word> {
    /// One switch word: the offset of the live level-1 block in `mem`.
    root: Arena<u32>,
    /// Every block (level 1, chunks), in 16-bit words.
    mem: Arena<u16>,
    /// Chunk directories (switch words): `kind << 30 | offset`.
    dir2: Arena<u32>,
    dir3: Arena<u32>,
    /// Pointer values below `lim` are next hops.
    lim: u32,
    rows: &'static [u64],
    fill: Fill,
    _p: PhantomData<P>,
}

impl<P: Word> Levels<P> {
    fn new(words: usize, ids: u32, lim: u32) -> Option<Self> {
        Some(Levels {
            root: Arena::zeroed(1)?,
            mem: Arena::new(words)?,
            dir2: Arena::new(ids as usize)?,
            dir3: Arena::new(ids as usize)?,
            lim,
            rows: &maptable::Maptable::get().rows,
            fill: Fill::default(),
            _p: PhantomData,
        })
    }
}

/// What Lulea lookups read: shared with reader threads while a [`LuleaWriter`] patches it.
#[doc(hidden)]
pub struct LuleaTable {
    layout: ByWidth<Levels<u16>, Levels<u32>>,
    swar: bool,
}

impl core::fmt::Debug for LuleaTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("LuleaTable")
            .field("pointer_width", &self.layout.width())
            .field("bytes", &self.memory_bytes())
            .finish()
    }
}

impl LuleaTable {
    fn fill(&self) -> &Fill {
        with_width!(&self.layout, t => &t.fill)
    }

    fn capacity_words(&self) -> usize {
        with_width!(&self.layout, t => t.mem.capacity())
    }

    #[doc(hidden)]
    /// The pointer width in use.
    pub fn pointer_width(&self) -> Width {
        self.layout.width()
    }
}

impl Fib<Ipv4> for LuleaTable {
    /// A lookup of `key` that stalls after reading the root word (`stall` runs in
    /// between): what a reader descheduled inside a lookup does. For the concurrency
    /// tests.
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: u32, stall: &mut dyn FnMut()) -> u32 {
        with_width!(&self.layout, t => t.lookup_stalled(key, stall))
    }

    fn name(&self) -> &str {
        "lulea"
    }

    #[inline]
    fn lookup(&self, addr: Ipv4) -> Option<NextHop> {
        NextHop::new(with_width!(&self.layout, t => t.lookup_one(addr, self.swar)))
    }

    fn lookup_batch(&self, addrs: &[Ipv4], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        with_width!(&self.layout, t => {
            let mut kc = addrs.chunks_exact(BLOCK);
            let mut oc = out.chunks_exact_mut(BLOCK);
            for (k, o) in (&mut kc).zip(&mut oc) {
                t.lookup_block::<BLOCK>(k, o, self.swar);
            }
            for (o, &k) in oc.into_remainder().iter_mut().zip(kc.remainder()) {
                *o = t.lookup_one(k, self.swar);
            }
        })
    }

    fn memory_bytes(&self) -> usize {
        let f = self.fill();
        f.mem.load(Ordering::Relaxed) * 2
            + f.ids.load(Ordering::Relaxed) * 4
            + maptable::Maptable::get().bytes()
            + 4
    }
}

/// The Lulea lookup structure: its table and its writer, for use on one thread
/// ([`IncrementalFib`](crate::IncrementalFib)) or handed to [`crate::sync::InPlace`] for
/// updates under readers.
pub type Lulea = Patchable<Ipv4, LuleaWriter>;

/// Builds the table and its writer; the block memory gets at least `min_words` of room.
pub(crate) fn build_with(
    rib: &Rib<Ipv4>,
    config: &LuleaConfig,
    min_words: usize,
) -> Result<(LuleaTable, LuleaWriter), BuildError> {
    let t0 = Instant::now();
    let max = max_next_hop(rib);
    check_next_hop("lulea", (1 << 30) - 1, max as u64)?;
    let lim = (max + 1).next_power_of_two().max(256);
    let words = min_words.max(rib.len() * 16 + (1 << 21));
    narrowest_built(config.pointer_width, &Width::ALL, |w| {
        let id_limit = match w {
            Width::U16 if lim >= 1 << 16 => {
                return Ok(Err(BuildError::NextHopOverflow {
                    scheme: "lulea".into(),
                    max: (1 << 15) - 1,
                    requested: max as u64,
                }));
            }
            Width::U16 => (1 << 16) - lim,
            Width::U32 => (u32::MAX - lim).min(1 << 24),
        };
        let no_room = || BuildError::CapacityExceeded {
            scheme: "lulea".into(),
            what: "bytes of address space for the chunk memory",
            max: 0,
            requested: words as u64 * 2,
        };
        let mut writer = LuleaWriter::new(config.clone(), lim, id_limit);
        let built = match w {
            Width::U16 => {
                let t = Levels::<u16>::new(words, id_limit, lim).ok_or_else(no_room)?;
                writer.fill(&t, rib).map(|()| ByWidth::U16(t))
            }
            Width::U32 => {
                let t = Levels::<u32>::new(words, id_limit, lim).ok_or_else(no_room)?;
                writer.fill(&t, rib).map(|()| ByWidth::U32(t))
            }
        };
        Ok(match built {
            Ok(layout) => {
                writer.build_ms = ms_since(t0);
                writer.routes = rib.len();
                let table = LuleaTable {
                    layout,
                    swar: !config.force_scalar,
                };
                Ok((table, writer))
            }
            Err(writer::Full) => Err(BuildError::CapacityExceeded {
                scheme: "lulea".into(),
                what: "chunk ids of one level (pointer width)",
                max: id_limit as u64,
                requested: id_limit as u64 + 1,
            }),
        })
    })
}

impl Config for LuleaConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[(
        "pointer_width",
        "pointer width, 16 or 32 (default: the narrowest that holds the table)",
    )];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        Ok(LuleaConfig {
            pointer_width: s.width("pointer_width")?,
            force_scalar: s.force_scalar(),
        })
    }
}

impl Lulea {
    #[doc(hidden)]
    /// The pointer width in use.
    pub fn pointer_width(&self) -> Width {
        self.table().pointer_width()
    }

    /// `lookup_batch` with the scalar sparse-chunk search (the SWAR twin); for tests.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn lookup_batch_scalar(&self, addrs: &[Ipv4], out: &mut [u32]) {
        with_width!(&self.table().layout, t => {
            for (o, &k) in out.iter_mut().zip(addrs) {
                *o = t.lookup_one(k, false);
            }
        })
    }
}

/// The Lulea figures `lpmkit info` prints: sizes, pointer width, chunk kinds per level, and
/// the writer's counters.
fn lulea_stats(w: &LuleaWriter, table: &LuleaTable) -> Stats {
    let mut st = Stats::new();
    let bytes = table.memory_bytes() as u64;
    st.push("bytes", StatValue::Bytes(bytes));
    st.push(
        "bytes_per_prefix",
        StatValue::Ratio(bytes as f64 / w.routes.max(1) as f64),
    );
    st.push(
        "pointer_width",
        StatValue::Text(format!("{}", table.pointer_width())),
    );
    st.push("level1_heads", StatValue::Count(w.l1.heads() as u64));
    st.push(
        "level1_direct_codewords",
        StatValue::Count(w.l1_direct as u64),
    );
    st.push(
        "level1_pointers",
        StatValue::Count(
            ((w.l1_block.1 as usize - lookup::L1_PTRS)
                / (table.pointer_width().bits() as usize / 16)) as u64,
        ),
    );
    for (level, recs, space) in [(2, &w.rec2, &w.ids2), (3, &w.rec3, &w.ids3)] {
        let live =
            |id: usize| space.blocks().all(|(p, l)| id < p || id >= p + l) && id < space.top();
        let mut kinds = [0u64; 3];
        let mut heads = 0u64;
        let mut n = 0u64;
        for (id, r) in recs.iter().enumerate() {
            if live(id) && r.len > 0 {
                kinds[r.kind as usize] += 1;
                heads += r.heads as u64;
                n += 1;
            }
        }
        st.push(format!("level{level}_chunks"), StatValue::Count(n));
        st.push(format!("level{level}_sparse"), StatValue::Count(kinds[0]));
        st.push(format!("level{level}_dense"), StatValue::Count(kinds[1]));
        st.push(
            format!("level{level}_very_dense"),
            StatValue::Count(kinds[2]),
        );
        st.push(format!("level{level}_heads"), StatValue::Count(heads));
    }
    st.push("build", StatValue::Millis(w.build_ms));
    st.push("updates", StatValue::Count(w.updates));
    st.push("level1_rebuilds", StatValue::Count(w.level1_rebuilds));
    st.push("chunks_rebuilt", StatValue::Count(w.chunks_rebuilt));
    st.push("full_rebuilds", StatValue::Count(w.full_rebuilds));
    st
}

//! DXR (IPv4): direct lookup on the top `k` address bits, then binary search on address
//! ranges — the `DkR` schemes, `k` = 16…24 (`d16r`, `d18r`, `d20r`, …).
//!
//! The scheme of M. Zec, L. Rizzo and M. Mikuc, "DXR: towards a billion routing lookups per
//! second in software", ACM SIGCOMM CCR 42(5), 2012.
//!
//! * **Ranges (§3.1).** The table is projected onto disjoint address ranges (more specific
//!   prefixes take precedence) and neighbouring ranges with the same next hop are merged
//!   ([`Rib::for_each_range`](crate::Rib::for_each_range)); a range is then just its first address and a next hop.
//! * **Chunks and the lookup table (§3.2).** The address space is split into `2^k` chunks;
//!   the lookup table has one 32-bit entry per chunk: 12 bits of chunk size (number of
//!   range-table entries), 1 format bit and 19 bits of position in the range table. A chunk
//!   covered by a single range bypasses the range table: its size field is 0 and the other
//!   bits hold the next hop itself ("direct" chunks, one memory access per lookup).
//! * **Range table entries (§3.2).** Each entry stores only the address bits below the `k`
//!   indexed ones and a next hop: **long** entries are 32 bits (`offset << 16 | next hop`,
//!   16-bit next hops); a chunk whose ranges all start on /24 boundaries and whose next hops
//!   fit 8 bits uses the **short** format, 16 bits per entry (`offset & 0xff00 | next hop`:
//!   the 8 least significant address bits are not stored). Positions count 32-bit words, so
//!   a short chunk occupies `⌈n/2⌉` words.
//! * **Lookup (§3.3).** Index the lookup table by the top `k` bits; if the chunk is not
//!   direct, binary-search its ranges for the last one starting at or below the key.
//!   [`Fib::lookup`] does exactly that, with branch-free halving steps. [`Fib::lookup_batch`]
//!   is software-pipelined over blocks of `BATCH` keys so that the out-of-order core
//!   overlaps the cache misses of different keys: the lookup-table entries of a block are
//!   prefetched a few blocks ahead; the next block's entries are read, its direct chunks
//!   answered and the chunks it must search prefetched; and this block's searches run. The
//!   scalar path runs the searches of a block in lock step with conditional moves; the
//!   SIMD kernel (AVX2 and AVX-512, run-time detected, [`DxrConfig::force_scalar`] turns it
//!   off) gathers a vector of lookup-table entries at once, left-packs the keys that need
//!   a search, and finishes each search with one 64-byte window compare (32 short or 16
//!   long entries) after halving larger chunks down to that size. [`Dxr::search_steps_histogram`] gives the
//!   Table 3 distribution of binary-search steps, counted with the paper's search loop.
//! * **Incremental updates (§3.4).** [`IncrementalFib::apply`](crate::IncrementalFib::apply)
//!   expands each changed prefix into the chunks it covers (a prefix shorter than `k`
//!   covers `2^(k - len)` of them), coalesces the changes of one call into one pass over
//!   the merged dirty chunks, and rebuilds each dirty chunk from scratch with the paper's
//!   walk: start from the best match of the chunk's first address, walk the more specific
//!   routes inside the chunk with a stack ("heap") of the open covering prefixes, skip
//!   routes whose next hop equals the top of the heap, and encode a chunk left with a single
//!   range directly in the lookup table. Range-table space is managed with a free list
//!   (best fit, neighbours coalesced, the tail returned); when free space exceeds
//!   [`DxrConfig::compact_threshold`] the range table is compacted, and a change the layout
//!   cannot hold (a chunk too large, positions or next hops out of range) falls back to a
//!   full rebuild, which may widen the layout. [`Dxr::replay`] applies a trace and reports
//!   updates per second.
//!
//! ## Limits and widening
//!
//! The paper's layout holds up to 2^19 range-table words, up to 4,095 ranges per chunk
//! (size 0 marks a direct chunk) and 16-bit next hops (8-bit in short chunks). It notes that
//! "it is trivial to recover extra bits e.g. by artificially extending chunks so that they
//! have a multiple of 2, 4, 8 entries"; with [`DxrConfig::widen`] (the default) the build
//! does exactly that when a table needs it, and reports it in [`DxrStats`]:
//!
//! * **positions**: chunks start on multiples of `2^s` words and the position field counts
//!   units of `2^s` words (`s` ≤ `MAX_POSITION_SHIFT`);
//! * **chunk sizes**: chunks are padded (with copies of their last entry, which leave the
//!   search result unchanged) to multiples of `2^t` entries and the size field counts units
//!   of `2^t` entries (`t` ≤ `MAX_SIZE_SHIFT`);
//! * **entry split**: when no position shift lets the paper's 19-bit position field name
//!   every chunk, or the shift it needs is 2 or more and pads the range table (many
//!   small chunks, each rounded up to the shift's unit — a large table), the size field shrinks to what the
//!   largest chunk needs and the position field takes the freed bits (up to 29), so the
//!   range table is packed without rounding; the build takes whichever of the two layouts
//!   needs fewer range-table words (the paper's on a tie);
//! * **next hops**: ids above 65,535 are translated through a next-hop descriptor table of
//!   the paper's kind (local ids ordered by use, so the 255 most used next hops fit the
//!   short format); more than 65,535 distinct next hops are an error.
//!
//! Without widening, or past these maxima, the build returns a [`BuildError`] naming the
//! limit and the value; nothing is ever truncated.
//!
//! ```
//! use lpmkit::{Fib, IncrementalFib, Change, Ipv4, NextHop, Rib};
//! use lpmkit::schemes::dxr::{Dxr, DxrConfig};
//!
//! let nh = |v| NextHop::new(v).unwrap();
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("0.0.0.0/0".parse()?, nh(1));
//! rib.insert("1.0.0.0/8".parse()?, nh(2));
//! rib.insert("1.2.0.0/16".parse()?, nh(3));
//! rib.insert("1.2.3.0/24".parse()?, nh(4));
//! rib.insert("1.2.4.5/32".parse()?, nh(3));
//!
//! let mut fib = Dxr::build(&rib, &DxrConfig::d16r())?;
//! assert_eq!(fib.lookup(0x0102_0304), Some(nh(4)));
//! assert_eq!(fib.lookup(0x0102_0405), Some(nh(3)));
//! assert_eq!(fib.lookup(0x0103_0000), Some(nh(2)));
//!
//! // An incremental update rebuilds only the chunk of 1.2.0.0/16.
//! let change = Change::Announce("1.2.4.0/24".parse()?, nh(5));
//! change.apply_to(&mut rib);
//! let done = fib.apply(&rib, &[change])?;
//! assert_eq!(done.units_rebuilt, 1);
//! assert_eq!(fib.lookup(0x0102_0405), Some(nh(3)));
//! assert_eq!(fib.lookup(0x0102_0406), Some(nh(5)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod build;
mod codec;
#[cfg(target_arch = "x86_64")]
mod kernel;
mod layout;
mod scalar;
mod writer;

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::fib::{BuildError, Config, Fib, Implementation, Settings, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Ipv4};
use crate::scheme::Patchable;
use crate::schemes::common::Arena;

pub use writer::ReplayReport;
#[doc(hidden)]
pub use writer::RetiredRange;

/// Keys per block in `lookup_batch`: the number of lookups whose misses overlap.
pub(crate) const BATCH: usize = 16;

/// Whether a table runs the AVX-512 instance of the SIMD stages by default; else the AVX2
/// one, and the AVX-512 one only when asked for (`isa: Some(Isa::Avx512)`). The faster of
/// the two where they were measured (`docs/simd.md`).
/// A table the registry builds where both run is measured instead ([`crate::simd::calibrate`]).
const AVX512_BY_DEFAULT: bool = true;

/// Smallest `k` (direct bits).
pub(crate) const MIN_K: u8 = 16;
/// Largest `k` (direct bits).
pub(crate) const MAX_K: u8 = 24;

/// Bits of the size field of a lookup-table entry.
pub(crate) const SIZE_BITS: u32 = 12;
/// Largest position shift `s` (chunks aligned to `2^s` words) the build widens to.
pub(crate) const MAX_POSITION_SHIFT: u32 = 8;
/// Largest size shift `t` (chunks padded to `2^t` entries) the build widens to.
pub(crate) const MAX_SIZE_SHIFT: u32 = 5;
/// Largest next hop of a long range entry (and of the descriptor table's local ids).
pub(crate) const LONG_NEXT_HOP_MAX: u32 = 0xffff;
/// Largest next hop of a short range entry.
pub(crate) const SHORT_NEXT_HOP_MAX: u32 = 0xff;

/// Most size-field bits a re-split entry keeps: a direct chunk's next hop (16 bits) must
/// fit the position field.
const MAX_SIZE_BITS: u32 = 31 - 16;

/// How the 32 bits of a lookup-table entry are split: a size field, a format bit, and a
/// position field (which holds the next hop of a direct chunk). The paper's split is 12 /
/// 1 / 19 ([`SIZE_BITS`] and 19 position bits); a table whose chunks are small but many (a
/// large `k` on a large table) takes bits from the size field for the position field
/// instead of refusing or padding its chunks (see "Limits and widening").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EntryFormat {
    pub(crate) size_bits: u32,
}

impl EntryFormat {
    /// The paper's split.
    pub(crate) const PAPER: EntryFormat = EntryFormat {
        size_bits: SIZE_BITS,
    };

    /// The mask of the size field (0 marks a direct chunk).
    #[inline(always)]
    pub(crate) fn size_mask(self) -> u32 {
        (1 << self.size_bits) - 1
    }

    /// The format bit: set for long (32-bit) range entries.
    #[inline(always)]
    pub(crate) fn long_bit(self) -> u32 {
        1 << self.size_bits
    }

    /// Where the position field starts.
    #[inline(always)]
    pub(crate) fn pos_field(self) -> u32 {
        self.size_bits + 1
    }

    /// Bits of the position field.
    #[inline(always)]
    pub(crate) fn position_bits(self) -> u32 {
        32 - self.pos_field()
    }
}
/// Words after the range table's last entry, so that a 32-bit read of its last 16-bit
/// entry, and a 64-byte window read from any entry, stay inside the allocation.
const PAD_WORDS: usize = 16;

/// How next-hop ids are stored in the range table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextHopMode {
    /// The `Rib`'s ids are stored as they are (every id ≤ 65,535).
    Identity,
    /// A descriptor table maps local ids (≤ 65,535, most used first) to the `Rib`'s ids.
    Remapped,
}

/// Build options for [`Dxr`]: `k` and the layout's widening policy.
///
/// ```
/// use lpmkit::schemes::dxr::DxrConfig;
/// let cfg = DxrConfig::d18r().widen(false).compact_threshold(0.5);
/// assert_eq!(cfg.k, 18);
/// assert_eq!(DxrConfig::with_k(21).name(), "d21r");
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DxrConfig {
    /// Direct bits: the lookup table has `2^k` entries (16…24).
    pub k: u8,
    /// Recover bits when a table exceeds the paper's limits (see the module docs); when
    /// false, exceeding them is a [`BuildError`].
    pub widen: bool,
    /// Force the next-hop descriptor table on (`Some(true)`) or off (`Some(false)`);
    /// `None` uses it only when an id exceeds 65,535 (and `widen` allows it).
    pub remap_next_hops: Option<bool>,
    /// Compact the range table when free space exceeds this share of it (0 < x ≤ 1).
    pub compact_threshold: f64,
    /// Rebuild everything instead of chunk by chunk when one `apply` dirties more than
    /// this share of the chunks.
    pub full_rebuild_share: f64,
    /// Use the scalar lookup path even if the CPU has AVX2 (the SIMD paths finish each
    /// search with one 64-byte window compare; see `kernel.rs`).
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: the best the CPU has);
    /// see [`crate::simd::Isa`].
    pub isa: Option<crate::simd::Isa>,
}

impl Default for DxrConfig {
    fn default() -> Self {
        Self::d18r()
    }
}

impl DxrConfig {
    /// `DkR` with the default policy.
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert_eq!(DxrConfig::with_k(20), DxrConfig::d20r());
    /// ```
    pub fn with_k(k: u8) -> Self {
        DxrConfig {
            k,
            widen: true,
            remap_next_hops: None,
            compact_threshold: 0.25,
            full_rebuild_share: 0.25,
            force_scalar: false,
            isa: None,
        }
    }

    /// D16R: a 256 KiB lookup table, the paper's smallest configuration.
    pub fn d16r() -> Self {
        Self::with_k(16)
    }

    /// D18R: a 1 MiB lookup table, the paper's fastest on its machines.
    pub fn d18r() -> Self {
        Self::with_k(18)
    }

    /// D20R: a 4 MiB lookup table.
    pub fn d20r() -> Self {
        Self::with_k(20)
    }

    #[doc(hidden)]
    /// Sets `k`.
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert_eq!(DxrConfig::d16r().k(24).k, 24);
    /// ```
    pub fn k(mut self, k: u8) -> Self {
        self.k = k;
        self
    }

    /// Sets [`widen`](Self::widen).
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert!(!DxrConfig::d16r().widen(false).widen);
    /// ```
    pub fn widen(mut self, widen: bool) -> Self {
        self.widen = widen;
        self
    }

    /// Sets [`remap_next_hops`](Self::remap_next_hops).
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert_eq!(DxrConfig::d16r().remap_next_hops(Some(true)).remap_next_hops, Some(true));
    /// ```
    pub fn remap_next_hops(mut self, remap: Option<bool>) -> Self {
        self.remap_next_hops = remap;
        self
    }

    /// Sets [`compact_threshold`](Self::compact_threshold).
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert_eq!(DxrConfig::d16r().compact_threshold(0.1).compact_threshold, 0.1);
    /// ```
    pub fn compact_threshold(mut self, share: f64) -> Self {
        self.compact_threshold = share;
        self
    }

    /// Sets [`full_rebuild_share`](Self::full_rebuild_share).
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert_eq!(DxrConfig::d16r().full_rebuild_share(1.0).full_rebuild_share, 1.0);
    /// ```
    pub fn full_rebuild_share(mut self, share: f64) -> Self {
        self.full_rebuild_share = share;
        self
    }

    /// Sets [`isa`](Self::isa), the instruction-set ceiling.
    pub fn isa(mut self, isa: crate::simd::Isa) -> Self {
        self.isa = Some(isa);
        self
    }

    /// Sets [`force_scalar`](Self::force_scalar).
    ///
    /// ```
    /// # use lpmkit::schemes::dxr::DxrConfig;
    /// assert!(DxrConfig::d16r().force_scalar(true).force_scalar);
    /// ```
    pub fn force_scalar(mut self, force: bool) -> Self {
        self.force_scalar = force;
        self
    }

    /// The scheme name, `d{k}r`.
    #[doc(hidden)]
    pub fn name(&self) -> String {
        format!("d{}r", self.k)
    }

    fn validate(&self) -> Result<(), BuildError> {
        let bad = |reason: String| {
            Err(BuildError::InvalidConfig {
                scheme: self.name(),
                reason,
            })
        };
        if !(MIN_K..=MAX_K).contains(&self.k) {
            return bad(format!(
                "k = {} is outside {MIN_K}..={MAX_K} (the range entries keep 32 - k ≤ 16 \
                 address bits)",
                self.k
            ));
        }
        if !(self.compact_threshold > 0.0 && self.compact_threshold <= 1.0) {
            return bad(format!(
                "compact_threshold = {} is outside (0, 1]",
                self.compact_threshold
            ));
        }
        if !(self.full_rebuild_share > 0.0 && self.full_rebuild_share <= 1.0) {
            return bad(format!(
                "full_rebuild_share = {} is outside (0, 1]",
                self.full_rebuild_share
            ));
        }
        if self.remap_next_hops == Some(true) && !self.widen {
            return bad("remap_next_hops = Some(true) needs widen = true".to_string());
        }
        Ok(())
    }
}

impl Config for DxrConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        (
            "k",
            "direct bits: the lookup table has 2^k entries, 16..=24",
        ),
        (
            "widen",
            "recover bits past the paper's limits (true) or refuse (false)",
        ),
        (
            "remap",
            "next-hop descriptor table: true, false (default: when ids exceed 65,535)",
        ),
        (
            "compact_threshold",
            "compact the range table when free space passes this share",
        ),
        (
            "full_rebuild_share",
            "rebuild everything when one update dirties this share of chunks",
        ),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let d = DxrConfig::with_k(s.get("k")?.unwrap_or(18));
        Ok(DxrConfig {
            widen: s.get("widen")?.unwrap_or(d.widen),
            remap_next_hops: s.get("remap")?.or(d.remap_next_hops),
            compact_threshold: s.get("compact_threshold")?.unwrap_or(d.compact_threshold),
            full_rebuild_share: s.get("full_rebuild_share")?.unwrap_or(d.full_rebuild_share),
            force_scalar: s.force_scalar(),
            isa: s.isa(),
            ..d
        })
    }
}

/// What DXR lookups read — the lookup table, the range table, the next-hop table — shared
/// with reader threads while a [`DxrWriter`] patches it.
#[doc(hidden)]
pub struct DxrTable {
    /// `k`.
    k: u32,
    /// `2^k` switch words (see the module docs for the format).
    lt: Arena<u32>,
    /// Range-table words: chunks live below the writer's top, and [`PAD_WORDS`] more are
    /// always committed after it.
    rt: Arena<u32>,
    /// Local → `Rib` next-hop id, append-only (a descriptor table); unused in
    /// [`NextHopMode::Identity`].
    nh_map: Arena<u32>,
    /// True in [`NextHopMode::Remapped`].
    remap: bool,
    /// Position unit = `2^pos_shift` words.
    pos_shift: u32,
    /// Size unit = `2^size_shift` entries.
    size_shift: u32,
    /// The split of a lookup-table entry.
    fmt: EntryFormat,
    /// Range-table words below the top, and descriptor-table entries: set by the writer
    /// at every allocation, so on a cache line of their own.
    fill: Fill,
    /// `d{k}r`.
    name: String,
    /// The SIMD stages of `lookup_batch` the CPU has and the ceiling allows.
    kernels: crate::simd::Kernels,
}

/// See [`DxrTable::fill`].
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Fill {
    rt_top: AtomicUsize,
    nh_len: AtomicUsize,
}

impl core::fmt::Debug for DxrTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DxrTable")
            .field("name", &self.name)
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// Structure figures of a [`Dxr`] (the paper's Table 1 and the layout chosen).
#[derive(Clone, Debug, Default, PartialEq)]
#[doc(hidden)]
pub struct DxrStats {
    /// `k`.
    pub k: u32,
    /// Bytes of the lookup table (`4 × 2^k`).
    pub lookup_table_bytes: u64,
    /// Bytes of the range table, free space included.
    pub range_table_bytes: u64,
    /// Bytes of the next-hop descriptor table (0 without one).
    pub next_hop_table_bytes: u64,
    /// Chunks that use the range table (Table 1 "full chunks").
    pub full_chunks: u64,
    /// Full chunks in the short format.
    pub short_chunks: u64,
    /// Full chunks in the long format.
    pub long_chunks: u64,
    /// Ranges stored in short entries (padding excluded).
    pub short_ranges: u64,
    /// Ranges stored in long entries (padding excluded).
    pub long_ranges: u64,
    /// Chunks resolved in the lookup table (one range).
    pub direct_chunks: u64,
    /// Direct chunks without a route.
    pub empty_chunks: u64,
    /// Free words inside the range table (fragmentation).
    pub free_words: u64,
    /// Position shift `s` (chunks aligned to `2^s` words).
    pub position_shift: u32,
    /// Size shift `t` (chunks padded to `2^t` entries).
    pub size_shift: u32,
    /// Bits of a lookup-table entry's size field ([`SIZE_BITS`] unless re-split).
    pub entry_size_bits: u32,
    /// How next hops are stored.
    pub next_hop_mode: Option<NextHopMode>,
    /// Milliseconds of the last full build.
    pub build_ms: f64,
    /// Changes passed to `apply` since the build.
    pub updates: u64,
    /// Chunks rewritten by `apply`.
    pub chunks_rebuilt: u64,
    /// Range-table compactions.
    pub compactions: u64,
    /// Full rebuilds triggered by `apply`.
    pub full_rebuilds: u64,
    /// Seconds spent in `apply`.
    pub update_seconds: f64,
}

impl DxrStats {
    /// Lookup, range and next-hop tables together (Table 1 "total bytes").
    pub fn total_bytes(&self) -> u64 {
        self.lookup_table_bytes + self.range_table_bytes + self.next_hop_table_bytes
    }

    /// The figures as `lpmkit info` rows.
    fn to_stats(&self) -> Stats {
        let mode = match self.next_hop_mode {
            Some(NextHopMode::Remapped) => "descriptor table",
            _ => "identity",
        };
        Stats::new()
            .with("k", StatValue::Count(self.k as u64))
            .with("total", StatValue::Bytes(self.total_bytes()))
            .with("lookup_table", StatValue::Bytes(self.lookup_table_bytes))
            .with("range_table", StatValue::Bytes(self.range_table_bytes))
            .with("full_chunks", StatValue::Count(self.full_chunks))
            .with("short_chunks", StatValue::Count(self.short_chunks))
            .with("long_chunks", StatValue::Count(self.long_chunks))
            .with("short_ranges", StatValue::Count(self.short_ranges))
            .with("long_ranges", StatValue::Count(self.long_ranges))
            .with("direct_chunks", StatValue::Count(self.direct_chunks))
            .with("empty_chunks", StatValue::Count(self.empty_chunks))
            .with("free_words", StatValue::Count(self.free_words))
            .with(
                "position_shift",
                StatValue::Count(self.position_shift as u64),
            )
            .with("size_shift", StatValue::Count(self.size_shift as u64))
            .with(
                "entry_size_bits",
                StatValue::Count(self.entry_size_bits as u64),
            )
            .with("next_hops", StatValue::Text(mode.into()))
            .with("build", StatValue::Millis(self.build_ms))
    }
}

/// The DXR lookup structure for IPv4 (`DkR`): its table and its writer, for use on one
/// thread ([`IncrementalFib`](crate::IncrementalFib)) or handed to [`crate::sync::InPlace`]
/// for updates under concurrent readers.
pub type Dxr = Patchable<Ipv4, DxrWriter>;

/// The writer side of a [`DxrTable`]: configuration, next-hop codec, free space, counts.
pub(crate) type DxrWriter = writer::Control;

impl Dxr {
    #[doc(hidden)]
    /// `k`.
    pub fn k(&self) -> u32 {
        self.table().k
    }

    #[doc(hidden)]
    /// Structure figures (Table 1) and update counters.
    pub fn dxr_stats(&self) -> DxrStats {
        self.writer().dxr_stats(self.table())
    }

    /// The paper's Table 3 for `keys`: `h[n]` = number of keys whose lookup needs exactly
    /// `n` binary-search steps (`n = 0`: resolved in the lookup table).
    ///
    /// Steps are counted with the paper's search loop (a three-way comparison that stops
    /// as soon as the key's range is found); the batched lookups run a branch-free search
    /// with `⌈log2 n⌉` steps instead.
    ///
    /// ```
    /// # use lpmkit::{Ipv4, NextHop, Rib};
    /// # use lpmkit::schemes::dxr::{Dxr, DxrConfig};
    /// let mut rib = Rib::<Ipv4>::new();
    /// rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
    /// rib.insert("10.0.1.0/24".parse()?, NextHop::new(2).unwrap());
    /// let fib = Dxr::build(&rib, &DxrConfig::d16r())?;
    /// let h = fib.search_steps_histogram(&[0x0b00_0000, 0x0a00_0000, 0x0a00_0100]);
    /// assert_eq!(h[0], 1); // 11.0.0.0 is in a direct chunk
    /// assert_eq!(h.iter().sum::<u64>(), 3);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[doc(hidden)]
    pub fn search_steps_histogram(&self, keys: &[u32]) -> Vec<u64> {
        self.table().search_steps_histogram(keys)
    }

    /// The next hop found by the paper's search loop (the loop whose steps
    /// [`search_steps_histogram`](Self::search_steps_histogram) counts); for tests.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn lookup_paper_loop(&self, key: u32) -> Option<NextHop> {
        NextHop::new(self.table().map(self.table().lookup_counting(key).0))
    }

    /// `lookup_batch` on the scalar path whatever the CPU (the twin of the AVX2 path);
    /// for tests and benchmarks.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn lookup_batch_scalar(&self, addrs: &[Ipv4], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        if self.table().remap {
            self.table().lookup_batch_scalar::<true>(addrs, out);
        } else {
            self.table().lookup_batch_scalar::<false>(addrs, out);
        }
    }

    /// Checks the internal invariants (lookup-table entries inside the range table, sorted
    /// chunks, counters, free space); for tests. Returns a description of the first
    /// problem.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn check_invariants(&self) -> Result<(), String> {
        writer::check_invariants(self.table(), self.writer())
    }
}

impl DxrTable {
    /// [`Dxr::search_steps_histogram`].
    #[doc(hidden)]
    pub fn search_steps_histogram(&self, keys: &[u32]) -> Vec<u64> {
        let mut h = vec![0u64; 1];
        for &k in keys {
            let (_, steps) = self.lookup_counting(k);
            if steps >= h.len() {
                h.resize(steps + 1, 0);
            }
            h[steps] += 1;
        }
        h
    }

    /// The `Rib` id of a local next-hop id.
    #[inline(always)]
    fn map(&self, local: u32) -> u32 {
        if self.remap {
            // SAFETY: local ids in the tables were appended to the descriptor table (and
            // committed) before any chunk that uses them was published.
            unsafe { self.nh_map.get(local as usize) }
        } else {
            local
        }
    }

    /// Lookup-table entry `c` (a switch word: atomic load).
    #[inline(always)]
    pub(crate) fn lt(&self, c: usize) -> u32 {
        debug_assert!(c < 1 << self.k);
        // SAFETY: `c < 2^k`, all committed.
        unsafe { self.lt.load_acquire(c) }
    }

    /// Bytes lookups may touch.
    fn bytes(&self) -> usize {
        ((1usize << self.k)
            + self.fill.rt_top.load(Ordering::Relaxed)
            + self.fill.nh_len.load(Ordering::Relaxed))
            * 4
    }
}

impl Fib<Ipv4> for DxrTable {
    /// A lookup of `key` that stalls between reading the lookup-table entry and searching
    /// the chunk it names (`stall` runs in between): what a reader descheduled inside a
    /// lookup does. For the concurrency tests: the chunk it searches must still be intact,
    /// however many updates ran meanwhile.
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: u32, stall: &mut dyn FnMut()) -> u32 {
        let e = self.entry_of(key);
        stall();
        let local = if e & self.fmt.size_mask() == 0 {
            e >> self.fmt.pos_field()
        } else {
            let mut s = self.search(e, key);
            while s.len > 1 {
                self.step(&mut s);
            }
            self.entry_at(&s, s.base) & s.nh_mask
        };
        self.map(local)
    }

    fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    fn lookup(&self, addr: Ipv4) -> Option<NextHop> {
        NextHop::new(self.map(self.lookup_local(addr)))
    }

    fn lookup_batch(&self, addrs: &[Ipv4], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = self.kernels.avx512 {
            if self.remap {
                kernel::avx512::<true>(token, self, addrs, out);
            } else {
                kernel::avx512::<false>(token, self, addrs, out);
            }
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = self.kernels.avx2 {
            if self.remap {
                kernel::avx2::<true>(token, self, addrs, out);
            } else {
                kernel::avx2::<false>(token, self, addrs, out);
            }
            return;
        }
        if self.remap {
            self.lookup_batch_scalar::<true>(addrs, out);
        } else {
            self.lookup_batch_scalar::<false>(addrs, out);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.bytes()
    }

    /// The paper's Table 3: `search_steps.N`, the share of `keys` whose lookup takes `N`
    /// binary-search steps (0: resolved in the lookup table), and their mean.
    fn profile(&self, keys: &[Ipv4]) -> Stats {
        Stats::new().with_shares("search_steps", &self.search_steps_histogram(keys))
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

//! The writer side of a [`DxrTable`]: configuration, next-hop codec, range-table free
//! space, Table 1 counts and update counters — nothing lookups read — and, in `update.rs`,
//! the incremental updates that use them.

use core::sync::atomic::Ordering;

use super::codec::Codec;
use super::layout::Counts;
use super::{DxrConfig, DxrStats, DxrTable, PAD_WORDS};
use crate::schemes::common::FreeSpace;

mod update;

#[cfg(any(test, feature = "test-hooks"))]
pub(super) use update::check_invariants;
pub use update::ReplayReport;

/// A block of the range table retired by an update (reused after its grace period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetiredRange {
    pub(super) pos: u32,
    pub(super) words: u32,
}

/// The control path of a [`DxrTable`] (its writer): nothing here is read by lookups.
#[derive(Debug)]
pub struct Control {
    pub(super) config: DxrConfig,
    pub(super) codec: Codec,
    /// Range-table space in words (blocks are multiples of the position unit, so
    /// positions stay aligned).
    pub(super) space: FreeSpace,
    pub(super) counts: Counts,
    pub(super) build_ms: f64,
    pub(super) updates: u64,
    pub(super) chunks_rebuilt: u64,
    pub(super) compactions: u64,
    pub(super) chunks_moved: u64,
    /// Free words when compaction last ran: it runs again only once fragmentation has
    /// grown well past that (moves need holes below, so some free space may stay).
    pub(super) compact_floor: usize,
    pub(super) full_rebuilds: u64,
    pub(super) update_seconds: f64,
    /// Scratch: the ranges of a block of chunks.
    pub(super) ranges: Vec<(u32, u32)>,
    /// Scratch: the encoding of one chunk.
    pub(super) words: Vec<u32>,
}

impl Control {
    pub(super) fn new(config: DxrConfig, codec: Codec, space: FreeSpace, counts: Counts) -> Self {
        Control {
            config,
            codec,
            space,
            counts,
            build_ms: 0.0,
            updates: 0,
            chunks_rebuilt: 0,
            compactions: 0,
            chunks_moved: 0,
            compact_floor: 0,
            full_rebuilds: 0,
            update_seconds: 0.0,
            ranges: Vec::new(),
            words: Vec::new(),
        }
    }

    /// Structure figures of `t` (Table 1) and update counters.
    pub(super) fn dxr_stats(&self, t: &DxrTable) -> DxrStats {
        let c = &self.counts;
        DxrStats {
            k: t.k,
            lookup_table_bytes: (4usize << t.k) as u64,
            range_table_bytes: ((self.space.top() + PAD_WORDS) * 4) as u64,
            next_hop_table_bytes: (t.fill.nh_len.load(Ordering::Relaxed) * 4) as u64,
            full_chunks: c.short_chunks + c.long_chunks,
            short_chunks: c.short_chunks,
            long_chunks: c.long_chunks,
            short_ranges: c.short_ranges,
            long_ranges: c.long_ranges,
            direct_chunks: c.direct_chunks,
            empty_chunks: c.empty_chunks,
            free_words: self.space.free_slots() as u64,
            position_shift: t.pos_shift,
            size_shift: t.size_shift,
            entry_size_bits: t.fmt.size_bits,
            next_hop_mode: Some(self.codec.mode()),
            build_ms: self.build_ms,
            updates: self.updates,
            chunks_rebuilt: self.chunks_rebuilt,
            compactions: self.compactions,
            full_rebuilds: self.full_rebuilds,
            update_seconds: self.update_seconds,
        }
    }
}

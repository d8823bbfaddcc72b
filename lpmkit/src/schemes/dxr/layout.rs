//! The chunk layout (§3.2): splitting ranges into chunks, the short and long entry
//! formats, lookup-table entries, the widening rules, and reading a chunk back; and the
//! chunk and range counts of Table 1.

use super::{DxrConfig, DxrTable, EntryFormat, MAX_SIZE_SHIFT, SHORT_NEXT_HOP_MAX};
use crate::fib::BuildError;

/// Splits ranges `(first, next hop)` into the chunks `c0..=c1` of a `2^k`-chunk space.
///
/// `ranges` must be sorted, and its first range must start at or before chunk `c0`'s first
/// address; they must cover the chunks. Calls `f(ca, cb, i, j)` for every run of chunks
/// `ca..=cb` covered by the single range `ranges[i]` (then `j = i + 1`), and for every
/// chunk `ca = cb` holding two or more ranges, `ranges[i..j]` (the first one clipped to the
/// chunk's start).
pub(super) fn for_each_chunk<E>(
    ranges: &[(u32, u32)],
    k: u32,
    c0: u32,
    c1: u32,
    mut f: impl FnMut(u32, u32, usize, usize) -> Result<(), E>,
) -> Result<(), E> {
    let sh = 32 - k;
    let n = ranges.len();
    debug_assert!(n > 0 && ranges[0].0 <= c0 << sh);
    let mut i = 0;
    let mut c = c0;
    while c <= c1 {
        let cstart = c << sh;
        let cend = cstart | (u32::MAX >> k);
        while i + 1 < n && ranges[i + 1].0 <= cstart {
            i += 1;
        }
        let mut j = i + 1;
        while j < n && ranges[j].0 <= cend {
            j += 1;
        }
        if j == i + 1 {
            // Range i covers this chunk and every chunk before the next range's chunk.
            let run_end = if j < n { (ranges[j].0 >> sh) - 1 } else { c1 };
            let run_end = run_end.min(c1);
            f(c, run_end, i, j)?;
            c = run_end + 1;
        } else {
            f(c, c, i, j)?;
            i = j - 1;
            c += 1;
        }
        if c == 0 {
            break; // wrapped past the last chunk (k = 32 never happens, but stay safe)
        }
    }
    Ok(())
}

/// True if a chunk's ranges fit the short format: every range after the first starts on a
/// /24 boundary and every next hop fits 8 bits.
#[inline]
pub(super) fn is_short(rs: &[(u32, u32)]) -> bool {
    rs.iter().all(|r| r.1 <= SHORT_NEXT_HOP_MAX) && rs[1..].iter().all(|r| r.0 & 0xff == 0)
}

/// `v` rounded up to a multiple of `2^shift`.
#[inline]
pub(super) fn round_up(v: usize, shift: u32) -> usize {
    let unit = 1usize << shift;
    (v + unit - 1) & !(unit - 1)
}

/// Words a chunk of `padded` entries occupies (before position alignment).
#[inline]
pub(super) fn chunk_words(padded: usize, short: bool) -> usize {
    if short {
        padded.div_ceil(2)
    } else {
        padded
    }
}

/// Appends the encoding of a chunk starting at `cstart` with ranges `rs` (local next hops;
/// the first may start before `cstart`), padded to `padded` entries with copies of the
/// last, to `out` as little-endian words.
pub(super) fn encode_chunk(
    rs: &[(u32, u32)],
    cstart: u32,
    short: bool,
    padded: usize,
    out: &mut Vec<u32>,
) {
    debug_assert!(rs.len() >= 2 && padded >= rs.len());
    let entry = |i: usize| -> u32 {
        let r = rs[i.min(rs.len() - 1)];
        let off = r.0.saturating_sub(cstart);
        if short {
            debug_assert!(off & 0xff == 0 && off <= 0xffff && r.1 <= 0xff);
            off | r.1
        } else {
            debug_assert!(off <= 0xffff && r.1 <= 0xffff);
            (off << 16) | r.1
        }
    };
    if short {
        for w in 0..padded.div_ceil(2) {
            let lo = entry(2 * w);
            let hi = if 2 * w + 1 < padded {
                entry(2 * w + 1)
            } else {
                0
            };
            out.push((lo | (hi << 16)).to_le());
        }
    } else {
        out.extend((0..padded).map(|i| entry(i).to_le()));
    }
}

/// The lookup-table entry (of format `fmt`) of a chunk at word `pos` (a multiple of
/// `2^pos_shift`).
#[inline]
pub(super) fn full_entry(
    fmt: EntryFormat,
    pos: usize,
    pos_shift: u32,
    short: bool,
    size_field: usize,
) -> u32 {
    debug_assert!(pos >> pos_shift < 1 << fmt.position_bits());
    debug_assert!(size_field >= 1 && size_field <= fmt.size_mask() as usize);
    (((pos >> pos_shift) as u32) << fmt.pos_field())
        | if short { 0 } else { fmt.long_bit() }
        | size_field as u32
}

/// The smallest size shift `t` with `max_ranges ≤ 4095 · 2^t`, or the error.
pub(super) fn size_shift_for(max_ranges: usize, config: &DxrConfig) -> Result<u32, BuildError> {
    let limit = if config.widen { MAX_SIZE_SHIFT } else { 0 };
    let size_mask = EntryFormat::PAPER.size_mask() as usize;
    (0..=limit)
        .find(|&t| max_ranges <= size_mask << t)
        .ok_or(BuildError::CapacityExceeded {
            scheme: config.name(),
            what: "ranges in one chunk",
            max: (size_mask as u64) << limit,
            requested: max_ranges as u64,
        })
}

/// Words the range table may hold with entry format `fmt` and position shift `s`.
#[inline]
pub(super) fn position_limit(fmt: EntryFormat, s: u32) -> usize {
    (1usize << fmt.position_bits()) << s
}

/// Chunk and range counts (Table 1), kept up to date by updates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Counts {
    pub short_chunks: u64,
    pub long_chunks: u64,
    pub short_ranges: u64,
    pub long_ranges: u64,
    pub direct_chunks: u64,
    pub empty_chunks: u64,
}

impl DxrTable {
    /// Words of the block of a full chunk's entry `e` (position alignment included).
    pub(super) fn block_words(&self, e: u32) -> usize {
        let padded = ((e & self.fmt.size_mask()) << self.size_shift) as usize;
        round_up(
            chunk_words(padded, e & self.fmt.long_bit() == 0),
            self.pos_shift,
        )
    }

    /// Word position of a full chunk's entry `e`.
    pub(super) fn block_pos(&self, e: u32) -> usize {
        ((e >> self.fmt.pos_field()) as usize) << self.pos_shift
    }

    /// Entry `i` of the full chunk `e` (16 or 32 bits).
    pub(super) fn chunk_entry(&self, e: u32, i: usize) -> u32 {
        let pos = self.block_pos(e);
        // SAFETY: the chunk of a published entry lies below the writer's top (committed),
        // and is never written while it is reachable.
        let word = |w: usize| u32::from_le(unsafe { self.rt.get(w) });
        if e & self.fmt.long_bit() != 0 {
            word(pos + i)
        } else {
            let w = word(pos + i / 2);
            if i.is_multiple_of(2) {
                w & 0xffff
            } else {
                w >> 16
            }
        }
    }

    /// Ranges of the full chunk `e` (its entries without the padding copies of the last).
    pub(super) fn chunk_ranges(&self, e: u32) -> usize {
        let padded = ((e & self.fmt.size_mask()) << self.size_shift) as usize;
        let last = self.chunk_entry(e, padded - 1);
        let mut n = padded;
        while n > 1 && self.chunk_entry(e, n - 2) == last {
            n -= 1;
        }
        n
    }
}

impl Counts {
    /// Adds (`sign` = 1) or removes (`sign` = -1) the chunk of entry `e`.
    pub(super) fn account(&mut self, t: &DxrTable, e: u32, sign: i64) {
        let add = |v: &mut u64, n: u64| *v = (*v as i64 + sign * n as i64) as u64;
        if e & t.fmt.size_mask() == 0 {
            add(&mut self.direct_chunks, 1);
            if e >> t.fmt.pos_field() == 0 {
                add(&mut self.empty_chunks, 1);
            }
        } else if e & t.fmt.long_bit() != 0 {
            add(&mut self.long_chunks, 1);
            add(&mut self.long_ranges, t.chunk_ranges(e) as u64);
        } else {
            add(&mut self.short_chunks, 1);
            add(&mut self.short_ranges, t.chunk_ranges(e) as u64);
        }
    }
}

//! Incremental updates (§3.4): dirty chunks rebuilt from the `Rib`, range-table space
//! management, coalescing, and the update replay that reports updates per second.
//!
//! * **Dirty chunks.** A change to prefix `p` dirties the chunks `p.first() >> (32 - k) ..=
//!   p.last() >> (32 - k)` (a prefix shorter than `k` expands into `2^(k - len)` chunks).
//!   One `apply` call merges the dirty intervals of all its changes, so a chunk touched by
//!   several changes is rebuilt once (the paper's coalescing of updates).
//! * **Chunk rebuild.** Each merged interval is cut into aligned blocks of chunks; each
//!   block is walked with [`Rib::for_each_range_in`], which is the paper's heap walk: it
//!   starts from the best match of the block's first address, keeps the open covering
//!   prefixes on a stack ordered by length (the "heap"), and emits a range only when the
//!   next hop differs from the one on top. The ranges are then cut at chunk boundaries
//!   exactly as in the full build, and every chunk is re-encoded from scratch. A chunk
//!   whose new encoding equals the old one is left alone.
//! * **Space.** A rebuilt chunk is written to a newly allocated block, then its lookup-table
//!   entry is replaced with one 32-bit store, then its old block is freed: the order a
//!   concurrent reader needs (it sees the old chunk or the new one). Free blocks are kept
//!   by position (neighbours coalesce, a block at the end shrinks the table) and by size
//!   (best-fit allocation). When the free share passes
//!   [`DxrConfig::compact_threshold`](super::DxrConfig::compact_threshold), the range
//!   table is compacted (chunks copied together, positions rewritten).
//! * **Fallbacks.** When the layout cannot take a change (a chunk beyond the size field, a
//!   range table beyond the position field, a next hop beyond the format, or more dirty
//!   chunks than [`DxrConfig::full_rebuild_share`](super::DxrConfig::full_rebuild_share)),
//!   the structure is rebuilt from the `Rib`, which widens the layout if allowed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::build::{
    chunk_words, encode_chunk, for_each_chunk, full_entry, is_short, position_limit, round_up,
    Codec,
};
use super::{Dxr, DxrConfig, Tables, FORMAT_LONG, PAD_WORDS, POSITION_SHIFT, SIZE_MASK};
use crate::fib::{BuildError, Change, IncrementalFib, UpdateStats};
use crate::nexthop::NextHop;
use crate::prefix::{Ipv4, Prefix};
use crate::rib::Rib;

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

/// Free space of the range table, in words; blocks are multiples of the position unit.
#[derive(Clone, Debug)]
pub(super) struct Allocator {
    /// log2 of the unit (the position shift).
    shift: u32,
    /// Words in use, holes included (the range table has `end + PAD_WORDS` words).
    end: usize,
    /// Free blocks: position → length.
    by_pos: BTreeMap<usize, usize>,
    /// Free blocks: (length, position).
    by_len: BTreeSet<(usize, usize)>,
    /// Words in free blocks.
    free: usize,
}

impl Allocator {
    pub(super) fn new(end: usize, shift: u32) -> Self {
        Allocator {
            shift,
            end,
            by_pos: BTreeMap::new(),
            by_len: BTreeSet::new(),
            free: 0,
        }
    }

    pub(super) fn free_words(&self) -> u64 {
        self.free as u64
    }

    fn insert_free(&mut self, pos: usize, len: usize) {
        self.by_pos.insert(pos, len);
        self.by_len.insert((len, pos));
    }

    fn remove_free(&mut self, pos: usize, len: usize) {
        self.by_pos.remove(&pos);
        self.by_len.remove(&(len, pos));
    }

    /// A block of `words` (a multiple of the unit): the smallest free block that fits, else
    /// the end of the table; `None` if the table would pass the position limit.
    fn alloc(&mut self, rt: &mut Vec<u32>, words: usize) -> Option<usize> {
        debug_assert_eq!(words, round_up(words, self.shift));
        if let Some(&(len, pos)) = self.by_len.range((words, 0)..).next() {
            self.remove_free(pos, len);
            if len > words {
                self.insert_free(pos + words, len - words);
            }
            self.free -= words;
            return Some(pos);
        }
        // The last start position must fit the position field.
        if self.end >= position_limit(self.shift) {
            return None;
        }
        let pos = self.end;
        self.end += words;
        rt.resize(self.end + PAD_WORDS, 0);
        Some(pos)
    }

    /// Returns the block `pos..pos + words` to the free space.
    fn release(&mut self, rt: &mut Vec<u32>, pos: usize, words: usize) {
        debug_assert!(pos + words <= self.end);
        self.free += words;
        let (mut pos, mut len) = (pos, words);
        if let Some((&p, &l)) = self.by_pos.range(..pos).next_back() {
            if p + l == pos {
                self.remove_free(p, l);
                pos = p;
                len += l;
            }
        }
        if let Some(&l) = self.by_pos.get(&(pos + len)) {
            self.remove_free(pos + len, l);
            len += l;
        }
        if pos + len == self.end {
            self.free -= len;
            self.end = pos;
            rt.truncate(self.end);
            rt.resize(self.end + PAD_WORDS, 0);
        } else {
            self.insert_free(pos, len);
        }
    }
}

/// The control-path state of a [`Dxr`]: nothing here is read by lookups.
pub(super) struct Control {
    pub config: DxrConfig,
    pub name: String,
    pub codec: Codec,
    pub alloc: Allocator,
    pub counts: Counts,
    pub build_ms: f64,
    pub updates: u64,
    pub chunks_rebuilt: u64,
    pub compactions: u64,
    pub full_rebuilds: u64,
    pub update_seconds: f64,
    /// Scratch: the ranges of a block of chunks.
    ranges: Vec<(u32, u32)>,
    /// Scratch: the encoding of one chunk.
    words: Vec<u32>,
}

impl Control {
    pub(super) fn new(config: DxrConfig, codec: Codec, alloc: Allocator, counts: Counts) -> Self {
        Control {
            name: config.name(),
            config,
            codec,
            alloc,
            counts,
            build_ms: 0.0,
            updates: 0,
            chunks_rebuilt: 0,
            compactions: 0,
            full_rebuilds: 0,
            update_seconds: 0.0,
            ranges: Vec::new(),
            words: Vec::new(),
        }
    }
}

/// The layout cannot hold a rebuilt chunk: rebuild everything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NeedRebuild {
    /// A chunk outgrew the size field, a next hop the format, or the `Rib` holds a next
    /// hop no change announced: a plain rebuild picks the layout.
    Layout,
    /// The range table outgrew the position field even after compaction: rebuild with a
    /// larger position shift.
    Positions,
}

impl Tables {
    /// Words of the block of a full chunk's entry `e` (position alignment included).
    fn block_words(&self, e: u32) -> usize {
        let padded = ((e & SIZE_MASK) << self.size_shift) as usize;
        round_up(chunk_words(padded, e & FORMAT_LONG == 0), self.pos_shift)
    }

    /// Word position of a full chunk's entry `e`.
    fn block_pos(&self, e: u32) -> usize {
        ((e >> POSITION_SHIFT) as usize) << self.pos_shift
    }

    /// Entry `i` of the full chunk `e` (16 or 32 bits).
    pub(super) fn chunk_entry(&self, e: u32, i: usize) -> u32 {
        let pos = self.block_pos(e);
        if e & FORMAT_LONG != 0 {
            u32::from_le(self.rt[pos + i])
        } else {
            let w = u32::from_le(self.rt[pos + i / 2]);
            if i % 2 == 0 {
                w & 0xffff
            } else {
                w >> 16
            }
        }
    }

    /// Ranges of the full chunk `e` (its entries without the padding copies of the last).
    fn chunk_ranges(&self, e: u32) -> usize {
        let padded = ((e & SIZE_MASK) << self.size_shift) as usize;
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
    fn account(&mut self, t: &Tables, e: u32, sign: i64) {
        let add = |v: &mut u64, n: u64| *v = (*v as i64 + sign * n as i64) as u64;
        if e & SIZE_MASK == 0 {
            add(&mut self.direct_chunks, 1);
            if e >> POSITION_SHIFT == 0 {
                add(&mut self.empty_chunks, 1);
            }
        } else if e & FORMAT_LONG != 0 {
            add(&mut self.long_chunks, 1);
            add(&mut self.long_ranges, t.chunk_ranges(e) as u64);
        } else {
            add(&mut self.short_chunks, 1);
            add(&mut self.short_ranges, t.chunk_ranges(e) as u64);
        }
    }
}

/// What [`Dxr::replay`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReplayReport {
    /// Changes replayed.
    pub changes: u64,
    /// Changes that altered the `Rib` (the others re-announce a route unchanged or withdraw
    /// an absent one; they are still passed to the structure).
    pub effective: u64,
    /// Calls to `apply` (changes coalesced per call: the `batch` argument).
    pub batches: u64,
    /// Seconds spent in `apply` (the `Rib` updates excluded, as in the paper).
    pub seconds: f64,
    /// Seconds spent updating the `Rib`.
    pub rib_seconds: f64,
    /// Chunks rewritten.
    pub chunks_rebuilt: u64,
    /// Full rebuilds the changes caused.
    pub full_rebuilds: u64,
    /// Range-table compactions.
    pub compactions: u64,
}

impl ReplayReport {
    /// Changes per second of `apply` time.
    pub fn updates_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            self.changes as f64 / self.seconds
        } else {
            f64::INFINITY
        }
    }
}

impl Dxr {
    /// Replays `changes`: each is applied to `rib` and, `batch` at a time, to the structure
    /// (`batch` = 1 rebuilds after every change; larger batches coalesce). The report's
    /// [`updates_per_second`](ReplayReport::updates_per_second) is the paper's update rate.
    ///
    /// ```
    /// use lpmkit::{Change, Fib, Ipv4, NextHop, Rib};
    /// use lpmkit::schemes::dxr::{Dxr, DxrConfig};
    ///
    /// let mut rib = Rib::<Ipv4>::new();
    /// let mut fib = Dxr::build(&rib, &DxrConfig::d16r())?;
    /// let changes = [
    ///     Change::Announce("10.0.0.0/8".parse()?, NextHop::new(1).unwrap()),
    ///     Change::Announce("10.1.2.0/24".parse()?, NextHop::new(2).unwrap()),
    ///     Change::Withdraw("10.0.0.0/8".parse()?),
    /// ];
    /// let report = fib.replay(&mut rib, &changes, 1)?;
    /// assert_eq!((report.changes, report.batches), (3, 3));
    /// assert_eq!(fib.lookup(0x0a01_0203), NextHop::new(2));
    /// assert_eq!(fib.lookup(0x0a00_0001), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn replay(
        &mut self,
        rib: &mut Rib<Ipv4>,
        changes: &[Change<Ipv4>],
        batch: usize,
    ) -> Result<ReplayReport, BuildError> {
        let before = (
            self.ctl.chunks_rebuilt,
            self.ctl.full_rebuilds,
            self.ctl.compactions,
        );
        let mut r = ReplayReport::default();
        for group in changes.chunks(batch.max(1)) {
            let t = Instant::now();
            for c in group {
                r.effective += c.apply_to(rib) as u64;
            }
            r.rib_seconds += t.elapsed().as_secs_f64();
            let t = Instant::now();
            self.apply(rib, group)?;
            r.seconds += t.elapsed().as_secs_f64();
            r.batches += 1;
            r.changes += group.len() as u64;
        }
        r.chunks_rebuilt = self.ctl.chunks_rebuilt - before.0;
        r.full_rebuilds = self.ctl.full_rebuilds - before.1;
        r.compactions = self.ctl.compactions - before.2;
        Ok(r)
    }

    /// Rebuilds everything from `rib`, keeping the update counters; with `wider`, the
    /// position shift grows by one at least.
    fn rebuild_all(&mut self, rib: &Rib<Ipv4>, wider: bool) -> Result<UpdateStats, BuildError> {
        let min_shift = self.tables.pos_shift + wider as u32;
        let mut fresh = super::build::build_with(rib, &self.ctl.config, min_shift)?;
        fresh.ctl.updates = self.ctl.updates;
        fresh.ctl.chunks_rebuilt = self.ctl.chunks_rebuilt + (1u64 << self.tables.k);
        fresh.ctl.compactions = self.ctl.compactions;
        fresh.ctl.full_rebuilds = self.ctl.full_rebuilds + 1;
        fresh.ctl.update_seconds = self.ctl.update_seconds;
        *self = fresh;
        Ok(UpdateStats {
            units_rebuilt: 1 << self.tables.k,
            full_rebuild: true,
        })
    }

    /// Rewrites chunk `c` (first address `cstart`) from its ranges `rs`; returns whether it
    /// changed.
    fn rewrite_chunk(
        &mut self,
        c: usize,
        cstart: u32,
        rs: &[(u32, u32)],
    ) -> Result<bool, NeedRebuild> {
        let t = &mut self.tables;
        let ctl = &mut self.ctl;
        let old = t.lt[c];
        let new = if rs.len() == 1 {
            let new = rs[0].1 << POSITION_SHIFT;
            if new == old {
                return Ok(false);
            }
            new
        } else {
            let padded = round_up(rs.len(), t.size_shift);
            let size_field = padded >> t.size_shift;
            if size_field > SIZE_MASK as usize {
                return Err(NeedRebuild::Layout);
            }
            let short = is_short(rs);
            ctl.words.clear();
            encode_chunk(rs, cstart, short, padded, &mut ctl.words);
            let words = ctl.words.len();
            let shape = full_entry(0, 0, short, size_field);
            if old & SIZE_MASK != 0 && old & !(u32::MAX << POSITION_SHIFT) == shape {
                let p = t.block_pos(old);
                if t.rt[p..p + words] == ctl.words[..] {
                    return Ok(false);
                }
            }
            let block = round_up(words, t.pos_shift);
            let pos = match ctl.alloc.alloc(&mut t.rt, block) {
                Some(pos) => pos,
                None if ctl.alloc.free > 0 => {
                    // Holes would fit it: compact, then allocate at the new end.
                    self.compact();
                    return self.rewrite_chunk(c, cstart, rs);
                }
                None => return Err(NeedRebuild::Positions),
            };
            t.rt[pos..pos + words].copy_from_slice(&ctl.words);
            t.rt[pos + words..pos + block].fill(0);
            full_entry(pos, t.pos_shift, short, size_field)
        };
        ctl.counts.account(t, old, -1);
        t.lt[c] = new;
        if old & SIZE_MASK != 0 {
            let (p, w) = (t.block_pos(old), t.block_words(old));
            ctl.alloc.release(&mut t.rt, p, w);
        }
        ctl.counts.account(t, new, 1);
        Ok(true)
    }

    /// Copies every full chunk to the front of a new range table, in chunk order.
    fn compact(&mut self) {
        let t = &mut self.tables;
        let mut rt = Vec::with_capacity(self.ctl.alloc.end - self.ctl.alloc.free + PAD_WORDS);
        for c in 0..t.lt.len() {
            let e = t.lt[c];
            if e & SIZE_MASK == 0 {
                continue;
            }
            let (p, w) = (t.block_pos(e), t.block_words(e));
            let pos = rt.len();
            rt.extend_from_slice(&t.rt[p..p + w]);
            t.lt[c] = (((pos >> t.pos_shift) as u32) << POSITION_SHIFT)
                | (e & !(u32::MAX << POSITION_SHIFT));
        }
        let end = rt.len();
        rt.resize(end + PAD_WORDS, 0);
        t.rt = rt;
        self.ctl.alloc = Allocator::new(end, t.pos_shift);
        self.ctl.compactions += 1;
    }

    fn apply_changes(
        &mut self,
        rib: &Rib<Ipv4>,
        changes: &[Change<Ipv4>],
    ) -> Result<UpdateStats, BuildError> {
        // Next hops the layout cannot hold need a new layout.
        for ch in changes {
            if let Change::Announce(_, nh) = ch {
                if self
                    .ctl
                    .codec
                    .add(nh.get(), &mut self.tables.nh_map)
                    .is_none()
                {
                    return self.rebuild_all(rib, false);
                }
            }
        }
        // The dirty chunk intervals, merged.
        let k = self.tables.k;
        let sh = 32 - k;
        let mut dirty: Vec<(u32, u32)> = changes
            .iter()
            .map(|c| {
                let p = c.prefix();
                (p.first() >> sh, p.last() >> sh)
            })
            .collect();
        dirty.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(dirty.len());
        for (a, b) in dirty {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let total: u64 = merged.iter().map(|&(a, b)| (b - a) as u64 + 1).sum();
        if total as f64 > self.ctl.config.full_rebuild_share * (1u64 << k) as f64 {
            return self.rebuild_all(rib, false);
        }

        let mut rebuilt = 0usize;
        let mut ranges = std::mem::take(&mut self.ctl.ranges);
        let mut outcome: Result<(), NeedRebuild> = Ok(());
        'blocks: for (c0, c1) in merged {
            // Aligned blocks of chunks, each one prefix.
            let (mut c, end) = (c0 as u64, c1 as u64 + 1);
            while c < end {
                let mut size = if c == 0 {
                    1u64 << k
                } else {
                    1u64 << c.trailing_zeros()
                };
                while c + size > end {
                    size >>= 1;
                }
                let window =
                    Prefix::new_truncating((c << sh) as u32, (k - size.trailing_zeros()) as u8);
                ranges.clear();
                let mut unknown = false;
                let codec = &self.ctl.codec;
                rib.for_each_range_in(&window, |first, _, nh| {
                    match codec.local(NextHop::raw(nh)) {
                        Some(l) => ranges.push((first, l)),
                        None => unknown = true,
                    }
                });
                if unknown {
                    // The Rib holds a next hop no change announced: start over.
                    outcome = Err(NeedRebuild::Layout);
                    break 'blocks;
                }
                let r = for_each_chunk(
                    &ranges,
                    k,
                    c as u32,
                    (c + size - 1) as u32,
                    |ca, cb, i, j| {
                        for chunk in ca..=cb {
                            if self.rewrite_chunk(chunk as usize, chunk << sh, &ranges[i..j])? {
                                rebuilt += 1;
                            }
                        }
                        Ok(())
                    },
                );
                if r.is_err() {
                    outcome = r;
                    break 'blocks;
                }
                c += size;
            }
        }
        self.ctl.ranges = ranges;
        self.ctl.chunks_rebuilt += rebuilt as u64;
        if let Err(why) = outcome {
            return self.rebuild_all(rib, why == NeedRebuild::Positions);
        }
        let a = &self.ctl.alloc;
        if a.free > 64 && a.free as f64 > self.ctl.config.compact_threshold * a.end as f64 {
            self.compact();
        }
        Ok(UpdateStats {
            units_rebuilt: rebuilt,
            full_rebuild: false,
        })
    }
}

impl IncrementalFib<Ipv4> for Dxr {
    /// Rebuilds the chunks the changes cover (coalesced: each dirty chunk once per call).
    ///
    /// On an error the structure is left as it was before the call's full rebuild was
    /// attempted and no longer matches `rib`; build it again with a wider configuration.
    fn apply(
        &mut self,
        rib: &Rib<Ipv4>,
        changes: &[Change<Ipv4>],
    ) -> Result<UpdateStats, BuildError> {
        let t0 = Instant::now();
        let r = self.apply_changes(rib, changes);
        self.ctl.update_seconds += t0.elapsed().as_secs_f64();
        self.ctl.updates += changes.len() as u64;
        r
    }
}

/// Checks the structure's invariants (see [`Dxr::check_invariants`]).
pub(super) fn check_invariants(d: &Dxr) -> Result<(), String> {
    let t = &d.tables;
    let a = &d.ctl.alloc;
    if t.rt.len() != a.end + PAD_WORDS {
        return Err(format!(
            "range table has {} words, allocator end {}",
            t.rt.len(),
            a.end
        ));
    }
    let mut blocks: Vec<(usize, usize, usize)> = Vec::new();
    let mut counts = Counts::default();
    for (c, &e) in t.lt.iter().enumerate() {
        counts.account(t, e, 1);
        if e & SIZE_MASK == 0 {
            let nh = e >> POSITION_SHIFT;
            if !t.nh_map.is_empty() && nh as usize >= t.nh_map.len() {
                return Err(format!(
                    "chunk {c}: next hop {nh} outside the descriptor table"
                ));
            }
            continue;
        }
        let (p, w) = (t.block_pos(e), t.block_words(e));
        if p + w > a.end {
            return Err(format!("chunk {c}: block {p}+{w} beyond end {}", a.end));
        }
        blocks.push((p, w, c));
        let padded = ((e & SIZE_MASK) << t.size_shift) as usize;
        let n = t.chunk_ranges(e);
        if n < 2 {
            return Err(format!("chunk {c}: a full chunk with {n} range"));
        }
        let (shift, short) = if e & FORMAT_LONG != 0 {
            (16, false)
        } else {
            (0, true)
        };
        let offset = |v: u32| if short { v & 0xff00 } else { v >> shift };
        if offset(t.chunk_entry(e, 0)) != 0 {
            return Err(format!("chunk {c}: first range does not start the chunk"));
        }
        for i in 1..n {
            if offset(t.chunk_entry(e, i)) <= offset(t.chunk_entry(e, i - 1)) {
                return Err(format!("chunk {c}: ranges {} and {i} out of order", i - 1));
            }
        }
        for i in n..padded {
            if t.chunk_entry(e, i) != t.chunk_entry(e, n - 1) {
                return Err(format!(
                    "chunk {c}: padding entry {i} differs from the last"
                ));
            }
        }
    }
    if counts != d.ctl.counts {
        return Err(format!("counts {:?} but recount {counts:?}", d.ctl.counts));
    }
    for (&p, &l) in &a.by_pos {
        blocks.push((p, l, usize::MAX));
    }
    blocks.sort_unstable();
    let mut at = 0;
    let mut free = 0;
    for &(p, w, c) in &blocks {
        if p < at {
            return Err(format!(
                "block at {p} (chunk {c}) overlaps the previous one"
            ));
        }
        if p % (1 << t.pos_shift) != 0 {
            return Err(format!("block at {p} (chunk {c}) is not aligned"));
        }
        if c == usize::MAX {
            free += w;
        }
        at = p + w;
    }
    if free != a.free || a.by_len.len() != a.by_pos.len() {
        return Err(format!("free words {} but free blocks hold {free}", a.free));
    }
    Ok(())
}

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
//!   entry is replaced with one atomic 32-bit store, then its old block is *retired*: it
//!   is reused only after every reader has moved past it (a concurrent reader sees the old
//!   chunk or the new one, and the old one stays intact while it may be searching it).
//!   Free space is the shared best-fit `FreeSpace` (neighbours coalesce, a block at the top
//!   lowers it). When the free share passes
//!   [`DxrConfig::compact_threshold`](crate::schemes::dxr::DxrConfig::compact_threshold), the chunks
//!   above the lowest holes are moved down into them, each move published by one store
//!   like a rebuild, so the top comes down as their old blocks are reused.
//! * **Fallbacks.** When the layout cannot take a change (a chunk beyond the size field, a
//!   range table beyond the position field, a next hop beyond the format, or more dirty
//!   chunks than [`DxrConfig::full_rebuild_share`](crate::schemes::dxr::DxrConfig::full_rebuild_share)),
//!   the structure is rebuilt from the `Rib`, which widens the layout if allowed.

use core::sync::atomic::Ordering;
use std::time::Instant;

use super::{Control, RetiredRange};
use crate::fib::{BuildError, Change, InPlaceWriter, IncrementalFib, Patched, Stats, UpdateStats};
use crate::prefix::{Ipv4, Prefix};
use crate::rib::Rib;
use crate::schemes::dxr::layout::{
    encode_chunk, for_each_chunk, full_entry, is_short, position_limit, round_up,
};
use crate::schemes::dxr::{Dxr, DxrConfig, DxrTable, PAD_WORDS};

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

/// What [`Dxr::replay`] measured.
#[derive(Clone, Debug, Default, PartialEq)]
#[doc(hidden)]
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
    #[doc(hidden)]
    pub fn replay(
        &mut self,
        rib: &mut Rib<Ipv4>,
        changes: &[Change<Ipv4>],
        batch: usize,
    ) -> Result<ReplayReport, BuildError> {
        let w = self.writer();
        let before = (w.chunks_rebuilt, w.full_rebuilds, w.compactions);
        let mut r = ReplayReport::default();
        for group in changes.chunks(batch.max(1)) {
            let t = Instant::now();
            r.effective += rib.apply_changes(group) as u64;
            r.rib_seconds += t.elapsed().as_secs_f64();
            let t = Instant::now();
            self.apply(rib, group)?;
            r.seconds += t.elapsed().as_secs_f64();
            r.batches += 1;
            r.changes += group.len() as u64;
        }
        let w = self.writer();
        r.chunks_rebuilt = w.chunks_rebuilt - before.0;
        r.full_rebuilds = w.full_rebuilds - before.1;
        r.compactions = w.compactions - before.2;
        Ok(r)
    }
}

impl InPlaceWriter<Ipv4> for Control {
    type Table = DxrTable;
    type Retired = RetiredRange;
    type Config = DxrConfig;

    fn build(rib: &Rib<Ipv4>, config: &DxrConfig) -> Result<(Box<DxrTable>, Self), BuildError> {
        let (table, writer) = crate::schemes::dxr::build::build(rib, config)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &DxrConfig {
        &self.config
    }

    fn stats(&self, table: &DxrTable) -> Stats {
        self.dxr_stats(table).to_stats()
    }

    fn memory_bytes(&self, table: &DxrTable) -> usize {
        self.dxr_stats(table).total_bytes() as usize
    }

    unsafe fn patch(
        &mut self,
        table: &DxrTable,
        rib: &Rib<Ipv4>,
        changes: &[Change<Ipv4>],
        retire: &mut Vec<RetiredRange>,
    ) -> Result<Patched<DxrTable>, BuildError> {
        let t0 = Instant::now();
        let r = Patch {
            t: table,
            ctl: self,
            retire,
        }
        .apply_changes(rib, changes);
        self.update_seconds += t0.elapsed().as_secs_f64();
        self.updates += changes.len() as u64;
        r
    }

    unsafe fn reuse(&mut self, table: &DxrTable, b: RetiredRange) {
        self.space.free(b.pos as usize, b.words as usize);
        table.fill.rt_top.store(self.space.top(), Ordering::Relaxed);
    }
}

impl Control {
    /// Rebuilds everything from `rib`, keeping the update counters; with `wider`, the
    /// position shift grows by one at least. The new table replaces the old one.
    fn rebuild_all(
        &mut self,
        t: &DxrTable,
        rib: &Rib<Ipv4>,
        wider: bool,
    ) -> Result<Patched<DxrTable>, BuildError> {
        let min_shift = t.pos_shift + wider as u32;
        let (table, mut fresh) =
            crate::schemes::dxr::build::build_with(rib, &self.config, min_shift)?;
        fresh.updates = self.updates;
        fresh.chunks_rebuilt = self.chunks_rebuilt + (1u64 << t.k);
        fresh.compactions = self.compactions;
        fresh.chunks_moved = self.chunks_moved;
        fresh.full_rebuilds = self.full_rebuilds + 1;
        fresh.update_seconds = self.update_seconds;
        *self = fresh;
        Ok(Patched::Replaced(
            Box::new(table),
            UpdateStats {
                units_rebuilt: 1 << t.k,
                full_rebuild: true,
            },
        ))
    }
}

/// One patch of a live table: the table, its writer state, and the blocks it retires.
struct Patch<'a> {
    t: &'a DxrTable,
    ctl: &'a mut Control,
    retire: &'a mut Vec<RetiredRange>,
}

impl Patch<'_> {
    /// A block of `words` (a multiple of the unit): best fit, else at the top; `None` if
    /// the top would pass the position limit.
    fn alloc(&mut self, words: usize) -> Option<usize> {
        let t = self.t;
        debug_assert_eq!(words, round_up(words, t.pos_shift));
        let pos = self.ctl.space.alloc(words);
        if pos >= position_limit(t.fmt, t.pos_shift)
            // SAFETY: the one writer (the caller of `patch`).
            || !unsafe { t.rt.grow(self.ctl.space.top() + PAD_WORDS) }
        {
            self.ctl.space.free(pos, words);
            return None;
        }
        t.fill.rt_top.store(self.ctl.space.top(), Ordering::Relaxed);
        Some(pos)
    }

    /// Writes `words` to the fresh block at `pos` (zero-filled to `block` words).
    fn write_block(&mut self, pos: usize, block: usize) {
        let t = self.t;
        for (i, &w) in self.ctl.words.iter().enumerate() {
            // SAFETY: `pos..pos + block` was just allocated (unreachable) and committed.
            unsafe { t.rt.write(pos + i, w) };
        }
        for i in self.ctl.words.len()..block {
            // SAFETY: as above.
            unsafe { t.rt.write(pos + i, 0) };
        }
    }

    /// Publishes `new` as chunk `c`'s entry (one atomic store) and retires the old block.
    fn switch(&mut self, c: usize, new: u32) {
        let t = self.t;
        let old = t.lt(c);
        self.ctl.counts.account(t, old, -1);
        // SAFETY: `c < 2^k`; the one writer; the new chunk (if any) is complete.
        unsafe { t.lt.store_release(c, new) };
        self.ctl.counts.account(t, new, 1);
        if old & t.fmt.size_mask() != 0 {
            self.retire.push(RetiredRange {
                pos: t.block_pos(old) as u32,
                words: t.block_words(old) as u32,
            });
        }
    }

    /// Rewrites chunk `c` (first address `cstart`) from its ranges `rs`; returns whether it
    /// changed.
    fn rewrite_chunk(
        &mut self,
        c: usize,
        cstart: u32,
        rs: &[(u32, u32)],
    ) -> Result<bool, NeedRebuild> {
        let t = self.t;
        let old = t.lt(c);
        let new = if rs.len() == 1 {
            let new = rs[0].1 << t.fmt.pos_field();
            if new == old {
                return Ok(false);
            }
            new
        } else {
            let padded = round_up(rs.len(), t.size_shift);
            let size_field = padded >> t.size_shift;
            if size_field > t.fmt.size_mask() as usize {
                return Err(NeedRebuild::Layout);
            }
            let short = is_short(rs);
            self.ctl.words.clear();
            encode_chunk(rs, cstart, short, padded, &mut self.ctl.words);
            let words = self.ctl.words.len();
            let shape = full_entry(t.fmt, 0, 0, short, size_field);
            let low = !(u32::MAX << t.fmt.pos_field());
            if old & t.fmt.size_mask() != 0 && old & low == shape {
                let p = t.block_pos(old);
                // SAFETY: the live chunk's words are committed and not being written.
                if (0..words).all(|i| unsafe { t.rt.get(p + i) } == self.ctl.words[i]) {
                    return Ok(false);
                }
            }
            let block = round_up(words, t.pos_shift);
            let pos = self.alloc(block).ok_or(NeedRebuild::Positions)?;
            self.write_block(pos, block);
            full_entry(t.fmt, pos, t.pos_shift, short, size_field)
        };
        self.switch(c, new);
        Ok(true)
    }

    /// Moves the chunks above the lowest holes down into them, one at a time (each copy
    /// published with one store, its old block retired), until what they leave free lies
    /// at the top: as the retired blocks come back, the top comes down.
    fn compact(&mut self) {
        let t = self.t;
        let holes: Vec<(usize, usize)> = self.ctl.space.blocks().collect();
        let Some(&(lowest, _)) = holes.first() else {
            return;
        };
        // Full chunks above the lowest hole, highest first.
        let mut above: Vec<(usize, usize)> = (0..1usize << t.k)
            .filter_map(|c| {
                let e = t.lt(c);
                (e & t.fmt.size_mask() != 0 && t.block_pos(e) > lowest).then(|| (t.block_pos(e), c))
            })
            .collect();
        above.sort_unstable_by(|a, b| b.cmp(a));
        for (pos, c) in above {
            let e = t.lt(c);
            let words = t.block_words(e);
            // Only into a hole below the chunk (else the move gains nothing).
            let Some(dst) = self.ctl.space.alloc_below(words, pos) else {
                continue;
            };
            // SAFETY: `dst..dst + words` was just allocated below the top (committed,
            // unreachable); the source is the live chunk, which is never written.
            unsafe { t.rt.copy(pos, dst, words) };
            let field = t.fmt.pos_field();
            let new = (((dst >> t.pos_shift) as u32) << field) | (e & !(u32::MAX << field));
            self.switch(c, new);
            self.ctl.chunks_moved += 1;
        }
        self.ctl.compactions += 1;
    }

    fn apply_changes(
        &mut self,
        rib: &Rib<Ipv4>,
        changes: &[Change<Ipv4>],
    ) -> Result<Patched<DxrTable>, BuildError> {
        let t = self.t;
        // Next hops the layout cannot hold need a new layout.
        for ch in changes {
            if let Change::Announce(_, nh) = ch {
                // SAFETY: the one writer.
                if unsafe { self.ctl.codec.add(nh.get(), t) }.is_none() {
                    return self.ctl.rebuild_all(t, rib, false);
                }
            }
        }
        // The dirty chunk intervals, merged.
        let k = t.k;
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
            return self.ctl.rebuild_all(t, rib, false);
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
                rib.project_window(&window, &mut ranges);
                let codec = &self.ctl.codec;
                let mut unknown = false;
                for r in ranges.iter_mut() {
                    match codec.local(r.1) {
                        Some(l) => r.1 = l,
                        None => unknown = true,
                    }
                }
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
            // Chunks rewritten so far stay published in the old table until the new one
            // replaces it: each is the new answer for its keys.
            return self.ctl.rebuild_all(t, rib, why == NeedRebuild::Positions);
        }
        let (free, top) = (self.ctl.space.free_slots(), self.ctl.space.top());
        let share = self.ctl.config.compact_threshold;
        if free > 64
            && free as f64 > share * top as f64
            && free as f64 >= self.ctl.compact_floor as f64 + share / 2.0 * top as f64
        {
            self.ctl.compact_floor = free;
            self.compact();
        } else if (free as f64) < share / 2.0 * top as f64 {
            self.ctl.compact_floor = 0;
        }
        Ok(Patched::InPlace(UpdateStats {
            units_rebuilt: rebuilt,
            full_rebuild: false,
        }))
    }
}

/// Checks the structure's invariants (see [`Dxr::check_invariants`]).
#[cfg(any(test, feature = "test-hooks"))]
pub(in crate::schemes::dxr) fn check_invariants(t: &DxrTable, ctl: &Control) -> Result<(), String> {
    let sp = &ctl.space;
    if t.rt.committed() < sp.top() + PAD_WORDS {
        return Err(format!(
            "range table has {} words committed, top {} + padding",
            t.rt.committed(),
            sp.top()
        ));
    }
    let mut blocks: Vec<(usize, usize, usize)> = Vec::new();
    let mut counts = crate::schemes::dxr::layout::Counts::default();
    let nh_len = t.fill.nh_len.load(Ordering::Relaxed);
    for c in 0..1usize << t.k {
        let e = t.lt(c);
        counts.account(t, e, 1);
        if e & t.fmt.size_mask() == 0 {
            let nh = e >> t.fmt.pos_field();
            if t.remap && nh as usize >= nh_len {
                return Err(format!(
                    "chunk {c}: next hop {nh} outside the descriptor table"
                ));
            }
            continue;
        }
        let (p, w) = (t.block_pos(e), t.block_words(e));
        if p + w > sp.top() {
            return Err(format!("chunk {c}: block {p}+{w} beyond top {}", sp.top()));
        }
        blocks.push((p, w, c));
        let padded = ((e & t.fmt.size_mask()) << t.size_shift) as usize;
        let n = t.chunk_ranges(e);
        if n < 2 {
            return Err(format!("chunk {c}: a full chunk with {n} range"));
        }
        let (shift, short) = if e & t.fmt.long_bit() != 0 {
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
    if counts != ctl.counts {
        return Err(format!("counts {:?} but recount {counts:?}", ctl.counts));
    }
    let mut free = 0;
    for (p, l) in sp.blocks() {
        blocks.push((p, l, usize::MAX));
        free += l;
    }
    blocks.sort_unstable();
    let mut at = 0;
    for &(p, w, c) in &blocks {
        if p < at {
            return Err(format!(
                "block at {p} (chunk {c}) overlaps the previous one"
            ));
        }
        if p % (1 << t.pos_shift) != 0 {
            return Err(format!("block at {p} (chunk {c}) is not aligned"));
        }
        at = p + w;
    }
    if free != sp.free_slots() {
        return Err(format!(
            "free words {} but free blocks hold {free}",
            sp.free_slots()
        ));
    }
    Ok(())
}

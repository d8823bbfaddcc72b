//! The writer: the full build, and the update path the OBMA paper measures Lulea by —
//! rebuild the chunks a change touches, and the whole of level 1 when its heads change
//! (Lulea has no better way: every head shifts the pointers of all heads after it).
//!
//! * **What a change touches.** A route change alters the complete prefix tree only
//!   below its deepest *internal* ancestor `A` (the longest prefix strictly above the
//!   change that still has another route below it): there, siblings along the path
//!   become or stop being leaves. If `A` is at least a /16, only the level-2 chunk of the
//!   change's /16 changes (and its level-3 chunks); otherwise level 1's heads inside `A`
//!   are recomputed (the walk of `A`'s routes) and the chunks the change covers rebuilt.
//! * **Chunks** are rebuilt in newly allocated words and published by one atomic store
//!   of their directory entry (chunk ids never change while a chunk exists, so the
//!   pointers to it stay valid); a chunk whose encoding did not change is left alone.
//! * **Level 1** is re-encoded whole (codewords, base indices, pointers) into a new block
//!   whenever one of its heads or pointers changed, and published by one atomic store of
//!   the root word.
//! * Blocks and chunk ids made unreachable are retired and reused after their grace
//!   period. When the layout cannot take a change (a next hop at or above the pointer
//!   split, more chunk ids than the pointer width holds, an arena full) the whole
//!   structure is rebuilt, widening the pointers if needed: [`Patched::Replaced`].

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use super::build::{encode_chunk, encode_level1, walk, Event, Route, Slots};
use super::lookup::L1_PTRS;
use super::{Levels, LuleaConfig, LuleaTable};
use crate::fib::{BuildError, Change, InPlaceWriter, Patched, Stats, UpdateStats};
use crate::prefix::{Ipv4, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{with_width, FreeSpace, Word};

const NONE: u32 = u32::MAX;

/// Something an update made unreachable (reused after its grace period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetiredPart {
    /// Words `off..off + len` of the block memory.
    Block {
        /// First word.
        off: u32,
        /// Words.
        len: u32,
    },
    /// A level-2 chunk id.
    Id2(u32),
    /// A level-3 chunk id.
    Id3(u32),
}

/// A layout limit: rebuild (with wider pointers or more room).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// Where a chunk lives, and its figures.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Rec {
    pub(crate) off: u32,
    pub(crate) len: u32,
    pub(crate) kind: u8,
    pub(crate) heads: u16,
}

/// The writer side of a [`LuleaTable`]: the heads and pointers of level 1, the chunk
/// records, free space and counters — nothing lookups read.
#[derive(Debug)]
pub struct LuleaWriter {
    pub(crate) config: LuleaConfig,
    pub(crate) space: FreeSpace,
    pub(crate) ids2: FreeSpace,
    pub(crate) ids3: FreeSpace,
    /// Level 1's heads and pointer values.
    pub(crate) l1: Slots,
    /// The live level-1 block: (offset, words).
    pub(crate) l1_block: (u32, u32),
    pub(crate) l1_direct: u32,
    /// /16 position → level-2 chunk id.
    pub(crate) l2_of: Vec<u32>,
    /// /24 position → level-3 chunk id.
    pub(crate) l3_of: HashMap<u32, u32>,
    pub(crate) rec2: Vec<Rec>,
    pub(crate) rec3: Vec<Rec>,
    /// Pointer values below this are next hops; `lim + id` names chunk `id`.
    pub(crate) lim: u32,
    /// Chunk ids one level holds.
    pub(crate) id_limit: u32,
    pub(crate) build_ms: f64,
    /// Routes in the `Rib` at the last build or patch (for bytes per prefix).
    pub(crate) routes: usize,
    pub(crate) updates: u64,
    pub(crate) level1_rebuilds: u64,
    pub(crate) chunks_rebuilt: u64,
    pub(crate) full_rebuilds: u64,
    pub(crate) update_seconds: f64,
    hdr: Vec<u16>,
    ptrs: Vec<u32>,
}

impl LuleaWriter {
    pub(crate) fn new(config: LuleaConfig, lim: u32, id_limit: u32) -> Self {
        LuleaWriter {
            config,
            space: FreeSpace::new(0),
            ids2: FreeSpace::new(0),
            ids3: FreeSpace::new(0),
            l1: Slots::new(1 << 16),
            l1_block: (0, 0),
            l1_direct: 0,
            l2_of: vec![NONE; 1 << 16],
            l3_of: HashMap::new(),
            rec2: Vec::new(),
            rec3: Vec::new(),
            lim,
            id_limit,
            build_ms: 0.0,
            routes: 0,
            updates: 0,
            level1_rebuilds: 0,
            chunks_rebuilt: 0,
            full_rebuilds: 0,
            update_seconds: 0.0,
            hdr: Vec::new(),
            ptrs: Vec::new(),
        }
    }

    /// Builds everything from `rib` into the empty table `t`.
    pub(crate) fn fill<P: Word>(&mut self, t: &Levels<P>, rib: &Rib<Ipv4>) -> Result<(), Full> {
        let mut retire = Vec::new();
        let mut w = Patch {
            t,
            w: self,
            rib,
            retire: &mut retire,
        };
        w.sync_l1(&Prefix::DEFAULT, (0, 0xffff))?;
        w.write_level1()?;
        debug_assert!(retire.is_empty());
        Ok(())
    }
}

/// The routes inside `window` (the window itself first, if it is a route).
fn routes_in(rib: &Rib<Ipv4>, window: &Prefix<Ipv4>) -> Vec<Route> {
    rib.covered(window)
        .map(|(p, nh)| (p.addr(), p.len(), nh.get()))
        .collect()
}

/// The longest match of `window` from routes strictly shorter than it.
fn inherited(rib: &Rib<Ipv4>, window: &Prefix<Ipv4>) -> u32 {
    rib.covering(window)
        .into_iter()
        .rev()
        .find(|(p, _)| p.len() < window.len())
        .map_or(0, |(_, nh)| nh.get())
}

/// The deepest ancestor of `q` (strictly shorter) with a route below it that the patch
/// does not change (`changed`): it is internal before and after the patch, so the
/// complete prefix tree changes only inside it when `q` comes or goes.
fn internal_ancestor(
    rib: &Rib<Ipv4>,
    q: &Prefix<Ipv4>,
    changed: &HashSet<Prefix<Ipv4>>,
) -> Prefix<Ipv4> {
    for l in (0..q.len()).rev() {
        let b = Prefix::new_truncating(q.addr(), l);
        if rib
            .covered(&b)
            .any(|(p, _)| p.len() > l && !changed.contains(&p))
        {
            return b;
        }
    }
    Prefix::DEFAULT
}

/// One patch: the table, the writer, the `Rib`, what it retires.
struct Patch<'a, P: Word> {
    t: &'a Levels<P>,
    w: &'a mut LuleaWriter,
    rib: &'a Rib<Ipv4>,
    retire: &'a mut Vec<RetiredPart>,
}

impl<P: Word> Patch<'_, P> {
    /// Words a block of `hdr` header words and `n` pointers takes (even).
    fn block_words(hdr: usize, n: usize) -> usize {
        (hdr + n * core::mem::size_of::<P>() / 2).next_multiple_of(2)
    }

    /// Writes the scratch block to newly allocated words; returns (offset, words).
    fn put(&mut self) -> Result<(u32, u32), Full> {
        let words = Self::block_words(self.w.hdr.len(), self.w.ptrs.len());
        let off = self.w.space.alloc(words);
        let top = self.w.space.top();
        // SAFETY: the one writer (the caller of `patch`).
        if top > self.t.mem.capacity() || !unsafe { self.t.mem.grow(top) } {
            self.w.space.free(off, words);
            return Err(Full);
        }
        self.t.fill.set_mem(top);
        let t = self.t;
        for (i, &h) in self.w.hdr.iter().enumerate() {
            // SAFETY: `off..off + words` was just allocated: no reader can reach it.
            unsafe { t.mem.write(off + i, h) };
        }
        let at = off + self.w.hdr.len();
        let step = core::mem::size_of::<P>() / 2;
        for (k, &p) in self.w.ptrs.iter().enumerate() {
            debug_assert!(P::WIDTH == crate::schemes::common::Width::U32 || p <= 0xffff);
            // SAFETY: as above; `at` is even, so a `u32` pointer is aligned.
            unsafe { (t.mem.as_ptr().add(at + k * step) as *mut P).write(P::from_u32(p)) };
        }
        Ok((off as u32, words as u32))
    }

    /// Whether the live block at `off` holds exactly the scratch block.
    fn same(&self, off: u32, len: u32) -> bool {
        let words = Self::block_words(self.w.hdr.len(), self.w.ptrs.len());
        if words != len as usize {
            return false;
        }
        let off = off as usize;
        // SAFETY: a live block, committed and not being written.
        let word = |i: usize| unsafe { self.t.mem.get(i) };
        if (0..self.w.hdr.len()).any(|i| word(off + i) != self.w.hdr[i]) {
            return false;
        }
        let at = off + self.w.hdr.len();
        let step = core::mem::size_of::<P>() / 2;
        self.w.ptrs.iter().enumerate().all(|(k, &p)| {
            // SAFETY: as above.
            unsafe {
                (self.t.mem.as_ptr().add(at + k * step) as *const P)
                    .read()
                    .get()
                    == p
            }
        })
    }

    fn alloc_id(&mut self, l3: bool) -> Result<u32, Full> {
        let (space, dir) = if l3 {
            (&mut self.w.ids3, &self.t.dir3)
        } else {
            (&mut self.w.ids2, &self.t.dir2)
        };
        let id = space.alloc(1);
        // SAFETY: the one writer.
        if id >= self.w.id_limit as usize || !unsafe { dir.grow(space.top()) } {
            space.free(id, 1);
            return Err(Full);
        }
        let recs = if l3 {
            &mut self.w.rec3
        } else {
            &mut self.w.rec2
        };
        if recs.len() <= id {
            recs.resize(id + 1, Rec::default());
        }
        recs[id] = Rec::default();
        self.t.fill.set_ids(self.w.ids2.used() + self.w.ids3.used());
        Ok(id as u32)
    }

    /// Publishes the scratch chunk as chunk `id` (new when `fresh`) unless it is unchanged.
    fn publish_chunk(
        &mut self,
        l3: bool,
        id: u32,
        fresh: bool,
        kind: u32,
        heads: usize,
    ) -> Result<(), Full> {
        let rec = if l3 {
            self.w.rec3[id as usize]
        } else {
            self.w.rec2[id as usize]
        };
        if !fresh && rec.kind as u32 == kind && self.same(rec.off, rec.len) {
            return Ok(());
        }
        let (off, len) = self.put()?;
        let dir = if l3 { &self.t.dir3 } else { &self.t.dir2 };
        // The switch: one atomic store, after the chunk is complete.
        // SAFETY: `id` is committed; the one writer.
        unsafe { dir.store_release(id as usize, (kind << 30) | off) };
        if !fresh {
            self.retire.push(RetiredPart::Block {
                off: rec.off,
                len: rec.len,
            });
        }
        let new = Rec {
            off,
            len,
            kind: kind as u8,
            heads: heads as u16,
        };
        if l3 {
            self.w.rec3[id as usize] = new;
        } else {
            self.w.rec2[id as usize] = new;
        }
        self.w.chunks_rebuilt += 1;
        Ok(())
    }

    /// Rebuilds the level-3 chunk of /24 `pos24`; returns its id.
    fn sync_l3(&mut self, pos24: u32, nh: u32, routes: &[Route]) -> Result<u32, Full> {
        let mut ev = Vec::new();
        walk(routes, 0, pos24 << 8, 24, nh, 32, &mut ev);
        let mut s = Slots::new(256);
        for e in ev {
            if let Event::Leaf { pos, count, nh } = e {
                s.set(pos, count, nh);
            }
        }
        let (mut hdr, mut ptrs) = (
            std::mem::take(&mut self.w.hdr),
            std::mem::take(&mut self.w.ptrs),
        );
        let kind = encode_chunk(&s, &mut hdr, &mut ptrs);
        (self.w.hdr, self.w.ptrs) = (hdr, ptrs);
        let (id, fresh) = match self.w.l3_of.get(&pos24) {
            Some(&id) => (id, false),
            None => {
                let id = self.alloc_id(true)?;
                self.w.l3_of.insert(pos24, id);
                (id, true)
            }
        };
        self.publish_chunk(true, id, fresh, kind, s.heads())?;
        Ok(id)
    }

    /// Rebuilds the level-2 chunk of /16 `pos16` (and its level-3 chunks); returns its id.
    fn sync_l2(&mut self, pos16: u32, nh: u32, routes: &[Route]) -> Result<u32, Full> {
        let mut ev = Vec::new();
        walk(routes, 0, pos16 << 16, 16, nh, 24, &mut ev);
        let mut s = Slots::new(256);
        let mut used = [false; 256];
        for e in ev {
            match e {
                Event::Leaf { pos, count, nh } => s.set(pos, count, nh),
                Event::Chunk { pos, nh, lo, hi } => {
                    let id = self.sync_l3((pos16 << 8) | pos, nh, &routes[lo..hi])?;
                    used[pos as usize] = true;
                    s.set(pos, 1, self.w.lim + id);
                }
            }
        }
        let (mut hdr, mut ptrs) = (
            std::mem::take(&mut self.w.hdr),
            std::mem::take(&mut self.w.ptrs),
        );
        let kind = encode_chunk(&s, &mut hdr, &mut ptrs);
        (self.w.hdr, self.w.ptrs) = (hdr, ptrs);
        let (id, fresh) = match self.w.l2_of[pos16 as usize] {
            NONE => {
                let id = self.alloc_id(false)?;
                self.w.l2_of[pos16 as usize] = id;
                (id, true)
            }
            id => (id, false),
        };
        self.publish_chunk(false, id, fresh, kind, s.heads())?;
        // Level-3 chunks no longer below this /16 (unlinked by the store above).
        for b in 0..256u32 {
            if !used[b as usize] {
                if let Some(id3) = self.w.l3_of.remove(&((pos16 << 8) | b)) {
                    self.release(true, id3);
                }
            }
        }
        Ok(id)
    }

    /// Retires chunk `id` and its block.
    fn release(&mut self, l3: bool, id: u32) {
        let rec = if l3 {
            self.w.rec3[id as usize]
        } else {
            self.w.rec2[id as usize]
        };
        self.retire.push(RetiredPart::Block {
            off: rec.off,
            len: rec.len,
        });
        self.retire.push(if l3 {
            RetiredPart::Id3(id)
        } else {
            RetiredPart::Id2(id)
        });
    }

    /// Recomputes level 1's heads inside `window` (shorter than /16); rebuilds the chunks
    /// of the /16 positions `dirty` (inclusive) and the new ones. Returns whether level 1
    /// changed.
    fn sync_l1(&mut self, window: &Prefix<Ipv4>, dirty: (u32, u32)) -> Result<bool, Full> {
        debug_assert!(window.len() <= 16);
        let routes = routes_in(self.rib, window);
        let inh = inherited(self.rib, window);
        let (from, to) = (window.first() >> 16, window.last() >> 16);
        let span = from as usize..=to as usize;
        let old_head: Vec<bool> = span.clone().map(|p| self.head(p)).collect();
        let old_val: Vec<u32> = self.w.l1.val[span.clone()].to_vec();
        let mut ev = Vec::new();
        walk(&routes, 0, window.addr(), window.len(), inh, 16, &mut ev);
        for e in ev {
            match e {
                Event::Leaf { pos, count, nh } => self.w.l1.set(pos, count, nh),
                Event::Chunk { pos, nh, lo, hi } => {
                    let id = match self.w.l2_of[pos as usize] {
                        NONE => self.sync_l2(pos, nh, &routes[lo..hi])?,
                        id if (dirty.0..=dirty.1).contains(&pos) => {
                            let _ = id;
                            self.sync_l2(pos, nh, &routes[lo..hi])?
                        }
                        id => id,
                    };
                    self.w.l1.set(pos, 1, self.w.lim + id);
                }
            }
        }
        let mut changed = false;
        for (k, p) in span.enumerate() {
            let v = self.w.l1.val[p];
            if v < self.w.lim && self.w.l2_of[p] != NONE {
                let id = std::mem::replace(&mut self.w.l2_of[p], NONE);
                for b in 0..256u32 {
                    if let Some(id3) = self.w.l3_of.remove(&(((p as u32) << 8) | b)) {
                        self.release(true, id3);
                    }
                }
                self.release(false, id);
            }
            changed |= old_val[k] != v || old_head[k] != self.head(p);
        }
        Ok(changed)
    }

    fn head(&self, p: usize) -> bool {
        (self.w.l1.head[p / 64] >> (p % 64)) & 1 != 0
    }

    /// Re-encodes level 1 into a new block and publishes it (one store of the root).
    fn write_level1(&mut self) -> Result<(), Full> {
        let (mut hdr, mut ptrs) = (
            std::mem::take(&mut self.w.hdr),
            std::mem::take(&mut self.w.ptrs),
        );
        encode_level1(&self.w.l1, self.w.lim, &mut hdr, &mut ptrs);
        let direct = (0..4096)
            .filter(|&m| hdr[m] as u32 >> 6 >= super::maptable::DIRECT_BASE)
            .count();
        (self.w.hdr, self.w.ptrs) = (hdr, ptrs);
        debug_assert_eq!(self.w.hdr.len(), L1_PTRS);
        let (off, len) = self.put()?;
        // SAFETY: word 0 is committed; the one writer; the block is complete.
        unsafe { self.t.root.store_release(0, off) };
        let (old, old_len) = self.w.l1_block;
        if old_len > 0 {
            self.retire.push(RetiredPart::Block {
                off: old,
                len: old_len,
            });
        }
        self.w.l1_block = (off, len);
        self.w.l1_direct = direct as u32;
        self.w.level1_rebuilds += 1;
        Ok(())
    }

    /// Applies `changes` (already in the `Rib`).
    fn apply(&mut self, changes: &[Change<Ipv4>]) -> Result<usize, Full> {
        let before = self.w.chunks_rebuilt;
        let mut l1_changed = false;
        let mut chunk_only: Vec<u32> = Vec::new();
        let changed: HashSet<Prefix<Ipv4>> = changes.iter().map(|c| c.prefix()).collect();
        for c in changes {
            let q = c.prefix();
            let a = internal_ancestor(self.rib, &q, &changed);
            if a.len() >= 16 {
                chunk_only.push(q.addr() >> 16);
            } else {
                let dirty = if q.len() <= 16 {
                    (q.first() >> 16, q.last() >> 16)
                } else {
                    (q.addr() >> 16, q.addr() >> 16)
                };
                l1_changed |= self.sync_l1(&a, dirty)?;
            }
        }
        chunk_only.sort_unstable();
        chunk_only.dedup();
        for pos in chunk_only {
            if self.w.l2_of[pos as usize] == NONE {
                continue; // a level-1 window already removed it (or never had one)
            }
            let block = Prefix::new_truncating(pos << 16, 16);
            let routes: Vec<Route> = routes_in(self.rib, &block)
                .into_iter()
                .filter(|r| r.1 > 16)
                .collect();
            let nh = self
                .rib
                .covering_route(&block)
                .map_or(0, |(_, nh)| nh.get());
            self.sync_l2(pos, nh, &routes)?;
        }
        if l1_changed {
            self.write_level1()?;
        }
        Ok((self.w.chunks_rebuilt - before) as usize + l1_changed as usize)
    }
}

impl InPlaceWriter<Ipv4> for LuleaWriter {
    type Table = LuleaTable;
    type Retired = RetiredPart;
    type Config = LuleaConfig;

    fn build(rib: &Rib<Ipv4>, config: &LuleaConfig) -> Result<(Box<LuleaTable>, Self), BuildError> {
        let (table, writer) = super::build_with(rib, config, 0)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &LuleaConfig {
        &self.config
    }

    fn stats(&self, table: &LuleaTable) -> Stats {
        super::lulea_stats(self, table)
    }

    unsafe fn patch(
        &mut self,
        table: &LuleaTable,
        rib: &Rib<Ipv4>,
        changes: &[Change<Ipv4>],
        retire: &mut Vec<RetiredPart>,
    ) -> Result<Patched<LuleaTable>, BuildError> {
        let t0 = Instant::now();
        self.updates += changes.len() as u64;
        self.routes = rib.len();
        let fits = changes.iter().all(|c| match c {
            Change::Announce(_, nh) => nh.get() < self.lim,
            Change::Withdraw(_) => true,
        });
        let done = if fits {
            with_width!(&table.layout, t => Patch { t, w: &mut *self, rib, retire }.apply(changes))
        } else {
            Err(Full)
        };
        let r = match done {
            Ok(units) => Ok(Patched::InPlace(UpdateStats {
                units_rebuilt: units,
                full_rebuild: false,
            })),
            // Rebuild with wider pointers or more room; what this patch published in the
            // old table goes away with it.
            Err(Full) => self.rebuild(table, rib),
        };
        self.update_seconds += t0.elapsed().as_secs_f64();
        r
    }

    unsafe fn reuse(&mut self, table: &LuleaTable, part: RetiredPart) {
        match part {
            RetiredPart::Block { off, len } => {
                self.space.free(off as usize, len as usize);
                table.fill().set_mem(self.space.top());
            }
            RetiredPart::Id2(id) => self.ids2.free(id as usize, 1),
            RetiredPart::Id3(id) => self.ids3.free(id as usize, 1),
        }
        table.fill().set_ids(self.ids2.used() + self.ids3.used());
    }
}

impl LuleaWriter {
    /// A full rebuild that replaces the table, keeping the counters.
    fn rebuild(
        &mut self,
        old: &LuleaTable,
        rib: &Rib<Ipv4>,
    ) -> Result<Patched<LuleaTable>, BuildError> {
        let room = old.capacity_words() * 2;
        let (table, mut fresh) = super::build_with(rib, &self.config, room)?;
        fresh.updates = self.updates;
        fresh.routes = rib.len();
        fresh.level1_rebuilds = self.level1_rebuilds;
        fresh.chunks_rebuilt = self.chunks_rebuilt;
        fresh.full_rebuilds = self.full_rebuilds + 1;
        fresh.update_seconds = self.update_seconds;
        *self = fresh;
        Ok(Patched::Replaced(
            Box::new(table),
            UpdateStats {
                units_rebuilt: 1,
                full_rebuild: true,
            },
        ))
    }
}

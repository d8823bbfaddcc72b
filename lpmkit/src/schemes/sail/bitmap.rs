//! SAIL_B and SAIL_U (§3 and §4.2 of the SAIL paper): bitmap arrays and next-hop arrays
//! per level up to the pivot level 24, and chunks for the levels beyond it.
//!
//! * **Levels and bands.** A level `l` has a bitmap `B_l` of `2^l` bits and a next-hop
//!   array `N_l` of `2^l` entries. Each level owns a band of prefix lengths: SAIL_B has
//!   every level 0…24, each owning its own length; SAIL_U has only the pivot levels 16
//!   (lengths 0–16) and 24 (lengths 17–24), the routes of a band leaf-pushed to its level.
//!   `B_l[x]` is set when a route of the band covers block `x`, and `N_l[x]` is the
//!   longest such route's next hop.
//! * **Pivot pushing at 24.** A /24 block with longer routes inside gets `B_24` set and a
//!   chunk ID in `N_24`. The chunk holds the bitmaps and next hops of the levels beyond 24
//!   (SAIL_B: 25…32, SAIL_U: 32 only, lengths 25–32 pushed to it) in heap order (level
//!   `24 + d` at indices `2^d .. 2^(d+1)`), and at index 1 the *pivot*: the longest match
//!   of the /24 from routes of length ≤ 24.
//! * **Lookup.** From the highest level down, the first level whose bit is set gives the
//!   answer (`N_l`, or the chunk: its levels from the highest down, else its pivot).
//! * **Updates in place.** A change touches the entries of its band's level inside it,
//!   and the chunks of the /24 blocks it covers (their pivot) or lies in. Changed entries
//!   of `N` are stored atomically; a new chunk is built whole in new slots before its ID
//!   is stored; then bits that rise are set, then bits that fall are cleared (each
//!   64-bit word with one atomic store), so a lookup that sees a bit sees the entry
//!   behind it. The one order no store sequence makes safe — a bit rising at a level
//!   while a lower level's answer for the same addresses changes in the same patch, for a
//!   lookup that read the old bit and then the new lower entry — falls back to a full
//!   rebuild published with one pointer store (it never happens when changes are applied
//!   one at a time).

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::entry::Entry;
use crate::prefix::{Ipv4, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{Arena, FreeSpace};
use crate::simd::prefetch;

/// Entries (and bits) per chunk: levels 25…32 in heap order, index 1 the pivot.
const CHUNK: usize = 512;
const CHUNK_WORDS: usize = CHUNK / 64;

/// Keys per block of `lookup_batch`.
const BLOCK: usize = 16;

/// The layout of a bitmap SAIL: which levels, which bands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Shape {
    /// Levels up to 24 with a bitmap and a next-hop array (ascending; the last is 24).
    pub(crate) levels: Vec<u8>,
    /// Levels inside a chunk (ascending, above 24, the last is 32).
    pub(crate) chunk_levels: Vec<u8>,
}

impl Shape {
    /// SAIL_B: every level.
    pub(crate) fn basic() -> Self {
        Shape {
            levels: (0..=24).collect(),
            chunk_levels: (25..=32).collect(),
        }
    }

    /// SAIL_U: leaf pushing to the pivot levels 16, 24 and 32.
    pub(crate) fn update_oriented() -> Self {
        Shape {
            levels: vec![16, 24],
            chunk_levels: vec![32],
        }
    }

    /// The index of the level whose band holds length `len` (≤ 24).
    fn band(&self, len: u8) -> usize {
        self.levels.partition_point(|&l| l < len)
    }

    /// The chunk level whose band holds `len` (> 24).
    fn chunk_band(&self, len: u8) -> u8 {
        self.chunk_levels[self.chunk_levels.partition_point(|&l| l < len)]
    }

    /// The lowest length of level `k`'s band.
    fn band_low(&self, k: usize) -> u8 {
        if k == 0 {
            0
        } else {
            self.levels[k - 1] + 1
        }
    }
}

/// Chunks in use, set by the writer (its own cache line).
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Fill {
    pub(crate) chunks: AtomicUsize,
}

/// What lookups read.
pub(crate) struct Bitmaps<E: Entry> {
    pub(crate) shape: Shape,
    /// Bitmaps: level `k`'s at word `boff[k]` (switch words).
    bits: Arena<u64>,
    boff: Vec<usize>,
    /// Next-hop arrays: level `k`'s at entry `noff[k]` (switch words).
    n: Arena<E>,
    noff: Vec<usize>,
    /// Chunks: [`CHUNK_WORDS`] bitmap words and [`CHUNK`] entries each (immutable once
    /// published).
    cbits: Arena<u64>,
    cn: Arena<E>,
    pub(crate) lim: u32,
    pub(crate) fill: Fill,
}

impl<E: Entry> Bitmaps<E> {
    pub(crate) fn new(shape: Shape, lim: u32, ids: u32) -> Option<Self> {
        let (mut boff, mut noff) = (Vec::new(), Vec::new());
        let (mut w, mut e) = (0usize, 0usize);
        for &l in &shape.levels {
            boff.push(w);
            noff.push(e);
            w += (1usize << l).div_ceil(64);
            e += 1 << l;
        }
        Some(Bitmaps {
            shape,
            bits: Arena::zeroed(w)?,
            boff,
            n: Arena::zeroed(e)?,
            noff,
            cbits: Arena::new(ids as usize * CHUNK_WORDS)?,
            cn: Arena::new(ids as usize * CHUNK)?,
            lim,
            fill: Fill::default(),
        })
    }

    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        // SAFETY: bitmap words are committed at creation; concurrent accesses are atomic.
        unsafe { AtomicU64::from_ptr(self.bits.as_ptr().add(i) as *mut u64) }
            .load(Ordering::Acquire)
    }

    /// The block index of `a` at level `l`.
    #[inline(always)]
    fn at(l: u8, a: u32) -> usize {
        if l == 0 {
            0
        } else {
            (a >> (32 - l)) as usize
        }
    }

    /// Level `k`'s bit and entry for `a` (`None` when the bit is clear).
    #[inline(always)]
    fn probe(&self, k: usize, a: u32) -> Option<u32> {
        let x = Self::at(self.shape.levels[k], a);
        if (self.word(self.boff[k] + x / 64) >> (x % 64)) & 1 == 0 {
            return None;
        }
        // SAFETY: `noff[k] + x` is inside level `k`'s array, committed at creation.
        Some(unsafe { E::load(&self.n, self.noff[k] + x) })
    }

    /// The answer of chunk `c` for `a`.
    #[inline(always)]
    fn chunk(&self, c: u32, a: u32) -> u32 {
        let byte = a & 255;
        let c = c as usize;
        for &cl in self.shape.chunk_levels.iter().rev() {
            let idx = (1usize << (cl - 24)) | (byte >> (32 - cl)) as usize;
            // SAFETY: chunk `c` was committed and completed before its ID was stored, and
            // is not reused before every reader has moved on.
            let w = unsafe { self.cbits.get(c * CHUNK_WORDS + idx / 64) };
            if (w >> (idx % 64)) & 1 != 0 {
                // SAFETY: as above.
                return unsafe { self.cn.get(c * CHUNK + idx) }.get();
            }
        }
        // SAFETY: as above.
        unsafe { self.cn.get(c * CHUNK + 1) }.get()
    }

    /// One lookup.
    #[inline(always)]
    pub(crate) fn lookup_one(&self, a: u32) -> u32 {
        for k in (0..self.shape.levels.len()).rev() {
            if let Some(e) = self.probe(k, a) {
                return if e < self.lim {
                    e
                } else {
                    self.chunk(e - self.lim, a)
                };
            }
        }
        0
    }

    /// [`lookup_one`](Self::lookup_one) with `stall` run after the first entry was read.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn lookup_stalled(&self, a: u32, stall: impl FnOnce()) -> u32 {
        let mut stall = Some(stall);
        for k in (0..self.shape.levels.len()).rev() {
            let p = self.probe(k, a);
            if let Some(s) = stall.take() {
                s();
            }
            if let Some(e) = p {
                return if e < self.lim {
                    e
                } else {
                    self.chunk(e - self.lim, a)
                };
            }
        }
        0
    }

    /// Blocks of [`BLOCK`] keys: the highest level's bitmap words and entries of all keys
    /// are prefetched first, the chunks of the keys that reach one prefetched before any
    /// is read.
    pub(crate) fn lookup_batch(&self, keys: &[u32], out: &mut [u32]) {
        let top = self.shape.levels.len() - 1;
        let lt = self.shape.levels[top];
        let mut kc = keys.chunks_exact(BLOCK);
        let mut oc = out.chunks_exact_mut(BLOCK);
        for (k, o) in (&mut kc).zip(&mut oc) {
            for &a in k {
                let x = Self::at(lt, a);
                prefetch(self.bits.as_ptr().wrapping_add(self.boff[top] + x / 64));
                prefetch(self.n.as_ptr().wrapping_add(self.noff[top] + x));
            }
            let mut chunks = [u32::MAX; BLOCK];
            for i in 0..BLOCK {
                let mut r = 0;
                for kk in (0..=top).rev() {
                    if let Some(e) = self.probe(kk, k[i]) {
                        r = e;
                        break;
                    }
                }
                if r >= self.lim {
                    let c = (r - self.lim) as usize;
                    prefetch(self.cbits.as_ptr().wrapping_add(c * CHUNK_WORDS));
                    prefetch(
                        self.cn
                            .as_ptr()
                            .wrapping_add(c * CHUNK + 256 + (k[i] & 255) as usize),
                    );
                    chunks[i] = r - self.lim;
                }
                o[i] = r;
            }
            for i in 0..BLOCK {
                if chunks[i] != u32::MAX {
                    o[i] = self.chunk(chunks[i], k[i]);
                }
            }
        }
        for (o, &a) in oc.into_remainder().iter_mut().zip(kc.remainder()) {
            *o = self.lookup_one(a);
        }
    }

    /// Bytes in use: every bitmap and next-hop array, and the chunks.
    pub(crate) fn bytes(&self) -> usize {
        self.bits.committed_bytes()
            + self.n.committed_bytes()
            + self.fill.chunks.load(Ordering::Relaxed)
                * (CHUNK_WORDS * 8 + CHUNK * core::mem::size_of::<E>())
    }

    /// Set bits of every level (the bitmap 1s).
    pub(crate) fn ones(&self) -> Vec<u64> {
        (0..self.shape.levels.len())
            .map(|k| {
                let words = (1usize << self.shape.levels[k]).div_ceil(64);
                (0..words)
                    .map(|i| self.word(self.boff[k] + i).count_ones() as u64)
                    .sum()
            })
            .collect()
    }
}

/// A layout limit: rebuild.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rebuild {
    /// Chunk ids or next hops out of range.
    Full,
    /// A bit rising over a changing lower level (see the module docs).
    Order,
}

/// The writer state of a bitmap SAIL.
#[derive(Debug)]
pub(crate) struct BitmapState {
    pub(crate) ids: FreeSpace,
    /// /24 position → chunk id.
    pub(crate) chunks: BTreeMap<u32, u32>,
    pub(crate) id_limit: u32,
    pub(crate) chunks_built: u64,
}

/// A chunk's content.
struct ChunkImage {
    bits: [u64; CHUNK_WORDS],
    n: Vec<u32>,
}

/// One build or patch.
pub(crate) struct BitmapPatch<'a, E: Entry> {
    pub(crate) t: &'a Bitmaps<E>,
    pub(crate) s: &'a mut BitmapState,
    pub(crate) rib: &'a Rib<Ipv4>,
    pub(crate) retire: &'a mut Vec<u32>,
}

impl<E: Entry> BitmapPatch<'_, E> {
    /// The content of the chunk of /24 `x`, or `None` when no longer route lies inside.
    fn chunk_image(&self, x: u32) -> Option<ChunkImage> {
        let block = Prefix::new_truncating(x << 8, 24);
        let mut routes: Vec<(Prefix<Ipv4>, u32)> = self
            .rib
            .covered(&block)
            .filter(|(p, _)| p.len() > 24)
            .map(|(p, nh)| (p, nh.get()))
            .collect();
        if routes.is_empty() {
            return None;
        }
        routes.sort_by_key(|r| r.0.len());
        let mut img = ChunkImage {
            bits: [0; CHUNK_WORDS],
            n: vec![0; CHUNK],
        };
        img.n[1] = self
            .rib
            .covering_route(&block)
            .map_or(0, |(_, nh)| nh.get());
        let shape = &self.t.shape;
        for (p, nh) in routes {
            let cl = shape.chunk_band(p.len());
            let first = ((p.addr() & 255) >> (32 - cl)) as usize;
            for j in first..first + (1 << (cl - p.len())) {
                let idx = (1usize << (cl - 24)) | j;
                img.bits[idx / 64] |= 1 << (idx % 64);
                img.n[idx] = nh;
            }
        }
        Some(img)
    }

    /// Whether live chunk `c` holds `img`.
    fn same_chunk(&self, c: u32, img: &ChunkImage) -> bool {
        let c = c as usize;
        // SAFETY: a live chunk, committed and never written.
        (0..CHUNK_WORDS).all(|i| unsafe { self.t.cbits.get(c * CHUNK_WORDS + i) } == img.bits[i])
            && (0..CHUNK).all(|i| unsafe { self.t.cn.get(c * CHUNK + i) }.get() == img.n[i])
    }

    /// Writes `img` to a new chunk; returns its ID.
    fn put_chunk(&mut self, img: &ChunkImage) -> Result<u32, Rebuild> {
        let id = self.s.ids.alloc(1);
        let top = self.s.ids.top();
        // SAFETY: the one writer.
        if id >= self.s.id_limit as usize
            || !unsafe { self.t.cbits.grow(top * CHUNK_WORDS) && self.t.cn.grow(top * CHUNK) }
        {
            self.s.ids.free(id, 1);
            return Err(Rebuild::Full);
        }
        for i in 0..CHUNK_WORDS {
            // SAFETY: the chunk was just allocated: unreachable.
            unsafe { self.t.cbits.write(id * CHUNK_WORDS + i, img.bits[i]) };
        }
        for i in 0..CHUNK {
            // SAFETY: as above.
            unsafe { self.t.cn.write(id * CHUNK + i, E::from_u32(img.n[i])) };
        }
        self.t
            .fill
            .chunks
            .store(self.s.ids.used(), Ordering::Relaxed);
        self.s.chunks_built += 1;
        Ok(id as u32)
    }

    /// Level `k`'s bit and next hop for block `x`, from the `Rib` (chunks aside).
    fn level_value(&self, k: usize, x: u32) -> (bool, u32) {
        let l = self.t.shape.levels[k];
        let block = Prefix::new_truncating(if l == 0 { 0 } else { x << (32 - l) }, l);
        let lo = self.t.shape.band_low(k);
        self.rib
            .covering(&block)
            .into_iter()
            .rev()
            .find(|(p, _)| p.len() >= lo)
            .map_or((false, 0), |(_, nh)| (true, nh.get()))
    }

    fn live_bit(&self, k: usize, x: u32) -> bool {
        let x = x as usize;
        (self.t.word(self.t.boff[k] + x / 64) >> (x % 64)) & 1 != 0
    }

    fn live_entry(&self, k: usize, x: u32) -> u32 {
        // SAFETY: committed at creation.
        unsafe { E::load(&self.t.n, self.t.noff[k] + x as usize) }
    }

    /// Builds the whole table (not yet published) from the `Rib`.
    pub(crate) fn fill_all(&mut self) -> Result<(), Rebuild> {
        let mut routes: Vec<(Prefix<Ipv4>, u32)> =
            self.rib.iter().map(|(p, nh)| (p, nh.get())).collect();
        routes.sort_by_key(|r| r.0.len());
        let shape = self.t.shape.clone();
        let mut long: BTreeSet<u32> = BTreeSet::new();
        for &(p, nh) in &routes {
            if p.len() > 24 {
                long.insert(p.addr() >> 8);
                continue;
            }
            let k = shape.band(p.len());
            let l = shape.levels[k];
            let first = Bitmaps::<E>::at(l, p.addr());
            for x in first..first + (1usize << (l - p.len())) {
                self.set_plain(k, x, true, nh);
            }
        }
        let k24 = shape.levels.len() - 1;
        for x in long {
            let img = self.chunk_image(x).expect("a longer route lies inside");
            let c = self.put_chunk(&img)?;
            self.s.chunks.insert(x, c);
            self.set_plain(k24, x as usize, true, self.t.lim + c);
        }
        Ok(())
    }

    /// Sets bit and entry before the table is published.
    fn set_plain(&mut self, k: usize, x: usize, bit: bool, v: u32) {
        let w = self.t.boff[k] + x / 64;
        // SAFETY: unpublished table, the one writer; committed at creation.
        unsafe {
            let old = self.t.bits.get(w);
            let new = if bit {
                old | 1 << (x % 64)
            } else {
                old & !(1 << (x % 64))
            };
            self.t.bits.write(w, new);
            self.t.n.write(self.t.noff[k] + x, E::from_u32(v));
        }
    }

    /// Applies `changes` (already in the `Rib`) in place; returns entries rewritten.
    pub(crate) fn apply(&mut self, changes: &[crate::fib::Change<Ipv4>]) -> Result<usize, Rebuild> {
        let shape = self.t.shape.clone();
        let k24 = shape.levels.len() - 1;
        let lim = self.t.lim;
        // 1. The entries and chunks the changes touch.
        let mut dirty: BTreeSet<(usize, u32)> = BTreeSet::new();
        let mut dirty24: BTreeSet<u32> = BTreeSet::new();
        for c in changes {
            let q = c.prefix();
            if let crate::fib::Change::Announce(_, nh) = c {
                if nh.get() >= lim {
                    return Err(Rebuild::Full);
                }
            }
            if q.len() > 24 {
                dirty24.insert(q.addr() >> 8);
                continue;
            }
            let k = shape.band(q.len());
            let l = shape.levels[k];
            let first = Bitmaps::<E>::at(l, q.addr()) as u32;
            for x in first..first + (1u32 << (l - q.len())) {
                dirty.insert((k, x));
            }
            let (a, b) = (q.first() >> 8, q.last() >> 8);
            dirty24.extend(self.s.chunks.range(a..=b).map(|(&x, _)| x));
        }
        // 2. Their new values; chunk images.
        let mut images: Vec<(u32, Option<ChunkImage>)> = Vec::new();
        for &x in &dirty24 {
            dirty.insert((k24, x));
            images.push((x, self.chunk_image(x)));
        }
        let mut new: Vec<((usize, u32), bool, u32)> = Vec::with_capacity(dirty.len());
        for &(k, x) in &dirty {
            let (b, v) = self.level_value(k, x);
            new.push(((k, x), b, v));
        }
        // 3. A bit rising over a changing lower level: no order of stores is safe.
        let changed: HashSet<(usize, u32)> = new
            .iter()
            .filter(|&&((k, x), b, v)| {
                let chunked = k == k24 && images.iter().any(|(y, i)| *y == x && i.is_some());
                let ob = self.live_bit(k, x);
                ob != (b || chunked) || (ob && !chunked && self.live_entry(k, x) != v)
            })
            .map(|&(kx, _, _)| kx)
            .collect();
        for &((k, x), b, _) in &new {
            let chunked = k == k24 && images.iter().any(|(y, i)| *y == x && i.is_some());
            if (b || chunked) && !self.live_bit(k, x) {
                let l = shape.levels[k];
                for kk in 0..k {
                    let y = x >> (l - shape.levels[kk]);
                    if changed.contains(&(kk, y)) {
                        return Err(Rebuild::Order);
                    }
                }
            }
        }
        // 4. Chunks, then entries, then rising bits, then falling bits.
        let mut chunk_of: BTreeMap<u32, Option<u32>> = BTreeMap::new();
        for (x, img) in images {
            let old = self.s.chunks.get(&x).copied();
            let id = match (img, old) {
                (None, _) => None,
                (Some(img), Some(c)) if self.same_chunk(c, &img) => Some(c),
                (Some(img), _) => Some(self.put_chunk(&img)?),
            };
            chunk_of.insert(x, id);
        }
        let mut rise: BTreeMap<usize, u64> = BTreeMap::new();
        let mut fall: BTreeMap<usize, u64> = BTreeMap::new();
        let mut written = 0;
        for ((k, x), b, v) in new {
            let (b, v) = match (k == k24)
                .then(|| chunk_of.get(&x).copied().flatten())
                .flatten()
            {
                Some(c) => (true, lim + c),
                None => (b, v),
            };
            let ob = self.live_bit(k, x);
            let word = self.t.boff[k] + x as usize / 64;
            let mask = 1u64 << (x % 64);
            let old = self.live_entry(k, x);
            if b {
                if !ob || old != v {
                    // SAFETY: the one writer; committed.
                    unsafe { E::store(&self.t.n, self.t.noff[k] + x as usize, v) };
                    written += 1;
                }
                if !ob {
                    *rise.entry(word).or_default() |= mask;
                }
            } else if ob {
                *fall.entry(word).or_default() |= mask;
                written += 1;
            }
            // The chunk this entry named, if it no longer does.
            if k == k24 && ob && old >= lim && (!b || old != v) {
                self.retire.push(old - lim);
            }
        }
        for (w, m) in rise {
            let cur = self.t.word(w);
            // SAFETY: committed; the one writer stores bitmap words.
            unsafe { AtomicU64::from_ptr(self.t.bits.as_ptr().add(w) as *mut u64) }
                .store(cur | m, Ordering::Release);
            crate::schemes::common::published();
        }
        for (w, m) in fall {
            let cur = self.t.word(w);
            // SAFETY: as above.
            unsafe { AtomicU64::from_ptr(self.t.bits.as_ptr().add(w) as *mut u64) }
                .store(cur & !m, Ordering::Release);
            crate::schemes::common::published();
        }
        for (x, id) in chunk_of {
            match id {
                Some(c) => {
                    self.s.chunks.insert(x, c);
                }
                None => {
                    self.s.chunks.remove(&x);
                }
            }
        }
        Ok(written)
    }
}

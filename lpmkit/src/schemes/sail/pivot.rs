//! SAIL_L (§4.3 of the SAIL paper) and its IPv6 form: pivot pushing to the pivot levels
//! and chunk-ID arrays, looked up level by level; built, and updated in place.
//!
//! * **Pivot pushing.** Every route is pushed to the first pivot level at or below its
//!   length: an entry of pivot level `p_i` holds the longest match of its block when no
//!   route longer than `p_i` lies inside it, else the ID of a chunk of level `p_{i+1}`
//!   (`2^(p_{i+1} - p_i)` entries). Level `p_0` is one array indexed by the first `p_0`
//!   bits (BCN16 for IPv4), the others are arrays of chunks (BCN24, N32).
//! * **Lookup.** Index level `p_0`; while the entry is a chunk ID, index the chunk with the
//!   next stride of the address. For IPv4 (16, 24, 32) that is at most three accesses:
//!   the two-level shortcut of the paper — most lookups end at level 16 or 24.
//! * **Updates** (§4.3, incremental updates). A change of prefix `q` touches only the
//!   entries whose blocks meet `q`; each is recomputed from the `Rib` and stored with one
//!   atomic store when it changed (an entry is the only word a lookup reads at its
//!   level). An entry that becomes a chunk gets a chunk built whole in newly allocated
//!   slots before its ID is stored; a chunk an entry stops naming is retired with its
//!   sub-chunks and its ID reused after the grace period.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::entry::Entry;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{Arena, FreeSpace};
use crate::simd::{prefetch, prefetch_keys_ahead};

/// Most pivot levels.
pub(crate) const MAX_LEVELS: usize = 16;

/// Keys per block of `lookup_batch`.
const BLOCK: usize = 16;

/// How many blocks ahead of stage A [`pipeline3`] prefetches the keys.
const KEY_BLOCKS_AHEAD: usize = 4;

/// Drives SAIL_L's three-stage IPv4 pipeline over `blocks` blocks (the scalar kernel and
/// the AVX2 one): in round `b`, stage C of block `b - 2`, stage B of block `b - 1`, stage
/// A of block `b`. A hands B each key's level-24 index and B hands C its level-32 index
/// (0 once resolved), through two slots per hand-over so that a block's indices stay
/// put while the next block's are written. The keys are prefetched [`KEY_BLOCKS_AHEAD`]
/// blocks ahead of stage A (within `keys`): the entry misses fill the core's miss
/// buffers, and the hardware's stream prefetcher then falls behind the keys.
#[inline(always)]
pub(super) fn pipeline3<T: Copy + Default, const P: usize>(
    blocks: usize,
    keys: &[u32],
    out: &mut [u32],
    mut stage_a: impl FnMut(usize, &mut [T; P], &mut [u32]),
    mut stage_b: impl FnMut(usize, &[T; P], &mut [T; P], &mut [u32]),
    mut stage_c: impl FnMut(usize, &[T; P], &mut [u32]),
) {
    let mut i24 = [[T::default(); P]; 2];
    let mut i32_ = [[T::default(); P]; 2];
    for b in 0..blocks + 2 {
        prefetch_keys_ahead(keys, b * P, P, KEY_BLOCKS_AHEAD * P);
        if b >= 2 {
            stage_c(b - 2, &i32_[b % 2], out);
        }
        if b >= 1 && b - 1 < blocks {
            let [even, odd] = &mut i32_;
            let dst = if (b - 1) % 2 == 0 { even } else { odd };
            stage_b(b - 1, &i24[(b - 1) % 2], dst, out);
        }
        if b < blocks {
            stage_a(b, &mut i24[b % 2], out);
        }
    }
}

/// Chunks in use per level, set by the writer (its own cache line).
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Fill {
    pub(crate) chunks: [AtomicUsize; MAX_LEVELS],
}

/// The arrays of one entry width: what lookups read.
pub(crate) struct Pivots<E: Entry> {
    /// Pivot levels `p_0 < … < p_k` (the last is the address width).
    pub(crate) pivots: Vec<u8>,
    /// `stride[i] = p_i - p_{i-1}` (`stride[0] = p_0`).
    pub(crate) stride: [u8; MAX_LEVELS],
    /// `arrays[0]`: `2^p_0` entries; `arrays[i]`: chunks of `2^stride[i]` entries.
    pub(crate) arrays: Vec<Arena<E>>,
    pub(crate) lim: u32,
    pub(crate) fill: Fill,
}

impl<E: Entry> Pivots<E> {
    pub(crate) fn new(pivots: &[u8], lim: u32, ids: u32) -> Option<Self> {
        let mut stride = [0u8; MAX_LEVELS];
        let mut arrays = Vec::new();
        for (i, &p) in pivots.iter().enumerate() {
            stride[i] = p - if i == 0 { 0 } else { pivots[i - 1] };
            arrays.push(if i == 0 {
                Arena::zeroed(1 << p)?
            } else {
                // At least one chunk committed: batch lookups of resolved keys read
                // entry 0 of the next level.
                let a = Arena::new((ids as usize) << stride[i])?;
                // SAFETY: not published yet.
                unsafe { a.grow(1 << stride[i]) }.then_some(a)?
            });
        }
        Some(Pivots {
            pivots: pivots.to_vec(),
            stride,
            arrays,
            lim,
            fill: Fill::default(),
        })
    }

    #[inline(always)]
    fn entry(&self, level: usize, i: usize) -> u32 {
        // SAFETY: level-0 indices are the top `p_0` bits (< 2^p_0, committed); a chunk
        // index `c << stride | bits` lies in chunk `c`, which the writer committed and
        // completed before storing its ID, and does not reuse before every reader moved on.
        unsafe { E::load(&self.arrays[level], i) }
    }

    /// The index into level `l` (≥ 1) of chunk `c` for key `a`.
    #[inline(always)]
    fn index<A: Address>(&self, l: usize, c: u32, a: A) -> usize {
        let s = self.stride[l];
        ((c as usize) << s) | a.bits_at(self.pivots[l - 1], s) as usize
    }

    /// One lookup.
    #[inline(always)]
    pub(crate) fn lookup_one<A: Address>(&self, a: A) -> u32 {
        let mut e = self.entry(0, a.bits_at(0, self.pivots[0]) as usize);
        let mut l = 1;
        while e >= self.lim {
            e = self.entry(l, self.index(l, e - self.lim, a));
            l += 1;
        }
        e
    }

    /// [`lookup_one`](Self::lookup_one) with `stall` run after the first entry was read.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn lookup_stalled<A: Address>(&self, a: A, stall: impl FnOnce()) -> u32 {
        let mut e = self.entry(0, a.bits_at(0, self.pivots[0]) as usize);
        stall();
        let mut l = 1;
        while e >= self.lim {
            e = self.entry(l, self.index(l, e - self.lim, a));
            l += 1;
        }
        e
    }

    /// Looks up blocks of [`BLOCK`] keys level by level: every key's entry of a level is
    /// read (and the next level's entry prefetched) before any key goes on, so the cache
    /// misses of a block overlap.
    pub(crate) fn lookup_batch<A: Address>(&self, keys: &[A], out: &mut [u32]) {
        let p0 = self.pivots[0];
        let lim = self.lim;
        let mut kc = keys.chunks_exact(BLOCK);
        let mut oc = out.chunks_exact_mut(BLOCK);
        let mut ahead = keys.iter().skip(BLOCK);
        for (k, o) in (&mut kc).zip(&mut oc) {
            for a in ahead.by_ref().take(BLOCK) {
                prefetch(
                    self.arrays[0]
                        .as_ptr()
                        .wrapping_add(a.bits_at(0, p0) as usize),
                );
            }
            let mut lanes = [0u8; BLOCK];
            let mut idx = [0usize; BLOCK];
            let mut n = 0;
            for i in 0..BLOCK {
                let e = self.entry(0, k[i].bits_at(0, p0) as usize);
                o[i] = e;
                if e >= lim {
                    idx[i] = self.index(1, e - lim, k[i]);
                    prefetch(self.arrays[1].as_ptr().wrapping_add(idx[i]));
                    lanes[n] = i as u8;
                    n += 1;
                }
            }
            let mut l = 1;
            while n > 0 {
                let mut m = 0;
                for j in 0..n {
                    let i = lanes[j] as usize;
                    let e = self.entry(l, idx[i]);
                    o[i] = e;
                    if e >= lim {
                        idx[i] = self.index(l + 1, e - lim, k[i]);
                        prefetch(self.arrays[l + 1].as_ptr().wrapping_add(idx[i]));
                        lanes[m] = i as u8;
                        m += 1;
                    }
                }
                n = m;
                l += 1;
            }
        }
        for (o, &a) in oc.into_remainder().iter_mut().zip(kc.remainder()) {
            *o = self.lookup_one(a);
        }
    }

    /// IPv4 with pivots 16, 24, 32 (SAIL_L proper): a software pipeline over blocks of
    /// `PIPE` keys, without data-dependent branches. While block `i`'s level-24 entries are
    /// read (prefetched one block earlier) and its level-32 entries prefetched, block
    /// `i + 1`'s level-16 entries are read and its level-24 entries prefetched; block
    /// `i - 1`'s level-32 entries are read last. Keys resolved at an earlier level read
    /// entry 0 of the next level (a cached, committed slot) and keep their answer, so
    /// every lane does the same work and no branch depends on the table.
    pub(crate) fn lookup_batch_v4(&self, keys: &[u32], out: &mut [u32]) {
        debug_assert_eq!(self.pivots, [16, 24, 32]);
        const PIPE: usize = 64;
        let lim = self.lim;
        let (t16, t24, t32) = (&self.arrays[0], &self.arrays[1], &self.arrays[2]);
        let n = keys.len() / PIPE * PIPE;
        let blocks = n / PIPE;
        let stage_a = |b: usize, i24: &mut [usize; PIPE], out: &mut [u32]| {
            for j in 0..PIPE {
                let a = keys[b * PIPE + j];
                // SAFETY: `a >> 16 < 2^16`, committed.
                let e = unsafe { E::load(t16, (a >> 16) as usize) };
                out[b * PIPE + j] = e;
                let c = (e >= lim) as usize;
                let i = ((e.wrapping_sub(lim) as usize) << 8 | ((a >> 8) & 255) as usize) * c;
                prefetch(t24.as_ptr().wrapping_add(i));
                i24[j] = i;
            }
        };
        let stage_b = |b: usize, i24: &[usize; PIPE], i32_: &mut [usize; PIPE], out: &mut [u32]| {
            for j in 0..PIPE {
                // SAFETY: a chunk index (as in `entry`), or entry 0, committed at creation.
                let e = unsafe { E::load(t24, i24[j]) };
                let o = &mut out[b * PIPE + j];
                let go = i24[j] != 0 || *o >= lim;
                *o = if go { e } else { *o };
                let c = (go && e >= lim) as usize;
                let i =
                    ((e.wrapping_sub(lim) as usize) << 8 | (keys[b * PIPE + j] & 255) as usize) * c;
                prefetch(t32.as_ptr().wrapping_add(i));
                i32_[j] = i;
            }
        };
        let stage_c = |b: usize, i32_: &[usize; PIPE], out: &mut [u32]| {
            for j in 0..PIPE {
                // SAFETY: as in `stage_b`.
                let e = unsafe { E::load(t32, i32_[j]) };
                let o = &mut out[b * PIPE + j];
                *o = if *o >= lim { e } else { *o };
            }
        };
        pipeline3(blocks, keys, out, stage_a, stage_b, stage_c);
        for j in n..keys.len() {
            out[j] = self.lookup_one(keys[j]);
        }
    }

    /// Bytes of the arrays in use.
    pub(crate) fn bytes(&self) -> usize {
        let e = core::mem::size_of::<E>();
        let mut b = (1usize << self.pivots[0]) * e;
        for l in 1..self.pivots.len() {
            b += (self.fill.chunks[l].load(Ordering::Relaxed) << self.stride[l]) * e;
        }
        b
    }
}

/// An entry of a pivot level, computed from the `Rib`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// No longer route inside: the longest match.
    Val(u32),
    /// Longer routes inside: a chunk of the next level.
    Inner,
}

/// The longest match of `w` from routes strictly shorter than it.
pub(crate) fn inherited<A: Address>(rib: &Rib<A>, w: &Prefix<A>) -> u32 {
    rib.covering(w)
        .into_iter()
        .rev()
        .find(|(p, _)| p.len() < w.len())
        .map_or(0, |(_, nh)| nh.get())
}

/// The entries of level `p` for the addresses of `w` (`w.len() <= p`), in order.
fn compute_slots<A: Address>(rib: &Rib<A>, w: &Prefix<A>, p: u8) -> Vec<Slot> {
    let n = 1usize << (p - w.len());
    let mut val = vec![inherited(rib, w); n];
    let mut inner = vec![false; n];
    let shift = A::BITS as u32 - p as u32;
    let base = w.first().to_u128();
    // In (address, length) order a route comes after every route that covers it, so
    // painting in order leaves the longest match.
    for (r, nh) in rib.covered(w) {
        let first = ((r.first().to_u128() - base) >> shift) as usize;
        if r.len() <= p {
            val[first..first + (1usize << (p - r.len()))].fill(nh.get());
        } else {
            inner[first] = true;
        }
    }
    val.into_iter()
        .zip(inner)
        .map(|(v, i)| if i { Slot::Inner } else { Slot::Val(v) })
        .collect()
}

/// A layout limit: rebuild.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// The writer's view of a [`Pivots`] table during a build or a patch.
pub(crate) struct PivotPatch<'a, A: Address, E: Entry> {
    pub(crate) t: &'a Pivots<E>,
    pub(crate) ids: &'a mut Vec<FreeSpace>,
    pub(crate) id_limit: u32,
    pub(crate) rib: &'a Rib<A>,
    /// Chunks made unreachable: (level, id).
    pub(crate) retire: &'a mut Vec<(u8, u32)>,
    pub(crate) chunks_built: u64,
}

impl<A: Address, E: Entry> PivotPatch<'_, A, E> {
    /// The block of slot `j` of level `p` inside window `w`.
    fn slot_block(w: &Prefix<A>, p: u8, j: usize) -> Prefix<A> {
        let shift = A::BITS as u32 - p as u32;
        let first = w.first().to_u128() + ((j as u128) << shift);
        Prefix::new_truncating(A::from_u128(first), p)
    }

    /// A new chunk of level `l` for block `s`, built whole; returns its ID.
    fn build_chunk(&mut self, l: usize, s: &Prefix<A>) -> Result<u32, Full> {
        let space = &mut self.ids[l];
        let id = space.alloc(1);
        let st = self.t.stride[l];
        // SAFETY: the one writer.
        if id >= self.id_limit as usize || !unsafe { self.t.arrays[l].grow(space.top() << st) } {
            space.free(id, 1);
            return Err(Full);
        }
        self.t.fill.chunks[l].store(space.used(), Ordering::Relaxed);
        self.chunks_built += 1;
        self.fill_fresh(l, id << st, s)?;
        Ok(id as u32)
    }

    /// Writes every entry of the unreachable array part at `base` for block `b` (level
    /// `l`), building sub-chunks.
    pub(crate) fn fill_fresh(&mut self, l: usize, base: usize, b: &Prefix<A>) -> Result<(), Full> {
        let p = self.t.pivots[l];
        for (j, slot) in compute_slots(self.rib, b, p).into_iter().enumerate() {
            let v = match slot {
                Slot::Val(v) => v,
                Slot::Inner => self.t.lim + self.build_chunk(l + 1, &Self::slot_block(b, p, j))?,
            };
            // SAFETY: the entries at `base` are not reachable yet (a new chunk, or the
            // top array of an unpublished table); the one writer.
            unsafe { self.t.arrays[l].write(base + j, E::from_u32(v)) };
        }
        Ok(())
    }

    /// Brings the entries of level `l` whose blocks meet `q` in line with the `Rib`; the
    /// array part at `base` covers block `b`.
    pub(crate) fn sync(
        &mut self,
        l: usize,
        base: usize,
        b: &Prefix<A>,
        q: &Prefix<A>,
    ) -> Result<(), Full> {
        let p = self.t.pivots[l];
        let w = if q.covers(b) {
            *b
        } else if q.len() <= p {
            *q
        } else {
            Prefix::new_truncating(q.addr(), p)
        };
        let off =
            ((w.first().to_u128() - b.first().to_u128()) >> (A::BITS as u32 - p as u32)) as usize;
        let lim = self.t.lim;
        for (j, slot) in compute_slots(self.rib, &w, p).into_iter().enumerate() {
            let i = base + off + j;
            // SAFETY: a live entry, committed.
            let old = unsafe { E::load(&self.t.arrays[l], i) };
            match slot {
                Slot::Val(v) => {
                    if old != v {
                        // SAFETY: the one writer; `i` committed.
                        unsafe { E::store(&self.t.arrays[l], i, v) };
                        if old >= lim {
                            self.retire_chunk(l + 1, old - lim);
                        }
                    }
                }
                Slot::Inner => {
                    let s = Self::slot_block(&w, p, j);
                    if old >= lim {
                        let st = self.t.stride[l + 1];
                        self.sync(l + 1, ((old - lim) as usize) << st, &s, q)?;
                    } else {
                        let c = self.build_chunk(l + 1, &s)?;
                        // SAFETY: as above; the chunk is complete.
                        unsafe { E::store(&self.t.arrays[l], i, lim + c) };
                    }
                }
            }
        }
        Ok(())
    }

    /// Retires chunk `c` of level `l` and every chunk below it.
    fn retire_chunk(&mut self, l: usize, c: u32) {
        let st = self.t.stride[l];
        for j in 0..1usize << st {
            // SAFETY: the chunk is committed and no longer written.
            let e = unsafe { E::load(&self.t.arrays[l], ((c as usize) << st) + j) };
            if e >= self.t.lim {
                self.retire_chunk(l + 1, e - self.t.lim);
            }
        }
        self.retire.push((l as u8, c));
    }
}

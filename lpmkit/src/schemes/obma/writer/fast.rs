//! The common paths of a change alone in its batch (one change per `apply`, as a replayed
//! trace feeds them), written to touch little: the chain of the table down to the home
//! chunk (DPA element, group entries) is read once, an element is located once, and the
//! `Rib` is not walked (presence bits, the table's own values).
//!
//! [`ObmaWriter::change_alone`] handles a change of the DPA's levels spanning at most 64
//! elements, a change homed in a chunk that exists (an announcement, or a withdrawal
//! that leaves the chunk a route, or empties a chunk below the DPA), and an announcement
//! that needs a new chunk below the DPA (OBMA_B, OBMA_L); everything else (shorter
//! prefixes, chunks built or retired deeper, sparse chunks, a batch of several changes)
//! takes the general path of `update.rs`, which it leaves untouched when it declines.
//! Repaints by the presence bits are in `runs.rs`, and in `word.rs` for groups of one
//! word.

use super::super::layout::Layout;
use super::runs::{covered_below, MAX_ELEMENTS};
use super::word::WORD_ELEMENTS;
use super::*;

/// An element of a live group, located.
#[derive(Clone, Copy, Debug)]
pub(super) struct Spot {
    /// Index of the group in its chunk.
    pub(super) gi: usize,
    /// Offset of the group.
    pub(super) g: usize,
    /// Elements of the group.
    pub(super) n: usize,
    /// The element's position in the group's (permuted) order.
    pub(super) pos: usize,
    /// Its lookup entry.
    pub(super) e: usize,
    /// Its value.
    pub(super) value: u32,
    /// The group's BIS.
    pub(super) bis: usize,
}

impl<A: Address> ObmaWriter<A> {
    /// Element `seg` of chunk `id` of layer `j` (not a sparse chunk), located.
    #[inline]
    pub(super) fn spot<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        seg: usize,
    ) -> Spot {
        let d = self.strides[j] - self.recs[j][id as usize].width;
        let n = 1usize << d;
        let gi = seg >> d;
        let (g, bis) = self.group_loc(t, j, id, gi);
        let pos = (seg & (n - 1)) ^ bis;
        // SAFETY: the writer reads its own published group.
        let cw = unsafe { t.groups.get(g + pos / 8) }.get();
        let e = group::entry_index(cw, pos);
        // SAFETY: as above.
        let value = unsafe { t.groups.get(g + code_words(n) + e) }.get();
        Spot {
            gi,
            g,
            n,
            pos,
            e,
            value,
            bis,
        }
    }

    /// Sets the element at `at` (of chunk `id`, layer `j`) to `v`, which differs from its
    /// value: one store when the element has a lookup entry of its own (a 1 at it and at
    /// the element after it, or it ends the group) — also when `v` equals a neighbour's
    /// value (runs that merge keep their 1s: see `patch_group`) — else the group derived
    /// by Table II's transform ([`group::set_range`] of one element) replaces the live one.
    pub(super) fn set_spot<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        at: &Spot,
        v: u32,
    ) -> Result<(), Full> {
        debug_assert_ne!(at.value, v);
        let ncw = code_words(at.n);
        // SAFETY: the writer reads its own published group.
        let cw = |c: usize| unsafe { t.groups.get(at.g + c) }.get();
        self.counters.splices += 1;
        let (pos, n) = (at.pos, at.n);
        if group::bit(cw(pos / 8), pos) && (pos + 1 == n || group::bit(cw((pos + 1) / 8), pos + 1))
        {
            // SAFETY: one atomic store of a lookup entry that only keys of this element
            // read; what it names (a next hop, or a chunk published in its list) is
            // complete.
            unsafe { t.groups.store_release(at.g + ncw + at.e, E::from_u32(v)) };
            self.counters.entry_stores += 1;
            self.counters.groups_in_place += 1;
            return Ok(());
        }
        if n <= WORD_ELEMENTS && at.bis == 0 {
            return self.patch_word(t, rib, j, id, at.gi, at.g, n, 1u64 << pos, v);
        }
        self.set_group_range(t, j, id, at.gi, at.g, pos, pos + 1, v)
    }

    /// Replaces group `gi` (at `g`) of chunk `id` of layer `j` by its encoding with the
    /// (permuted) positions `lo..hi` set to `v` ([`group::set_range`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn set_group_range<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
        g: usize,
        lo: usize,
        hi: usize,
        v: u32,
    ) -> Result<(), Full> {
        let n = 1usize << (self.strides[j] - self.recs[j][id as usize].width);
        let len = self.group_len(t, j, id, g);
        let mut sc = self.group_scratch.take().unwrap_or_default();
        sc.words.clear();
        // SAFETY: the writer reads its own published group.
        sc.words
            .extend((0..len).map(|k| unsafe { t.groups.get(g + k) }.get()));
        sc.old.clear();
        group::set_range(&sc.words, n, lo, hi, v, &mut sc.old);
        let r = self.replace_group(t, j, id, gi, g, len, &sc.old);
        self.group_scratch = Some(sc);
        r
    }

    /// The change of `p` (already in `rib`; `announced`: its next hop) when it is alone in
    /// its batch, on the common paths (see the module docs); `None` if it declines, having
    /// changed nothing.
    pub(super) fn change_alone<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        p: &Prefix<A>,
        announced: Option<u32>,
    ) -> Option<Result<(), Full>> {
        let (l, db) = (p.len(), self.dpa_bits);
        if db == 0 {
            return None;
        }
        if l <= db {
            return (db - l <= 6).then(|| self.dpa_alone(t, rib, p, announced));
        }
        let lim = t.lim;
        // The writer reads its own words.
        let mut v = t.dpa_get(p.addr().bits_at(0, db) as usize);
        let mut j = 0;
        loop {
            if v < lim {
                // A chunk to build below the element: here if it is a chunk below the
                // DPA that `p` is homed in, else the general path.
                let (top, s) = (self.tops[0], self.strides[0]);
                let fresh = j == 0 && l <= top + s && self.variant != Variant::S;
                return match announced {
                    Some(nh) if fresh => Some(self.new_chunk_alone(t, v, p, nh)),
                    _ => None,
                };
            }
            let id = v - lim;
            // The record, the presence bits and the chunk-list entry at once: their
            // misses overlap.
            self.prefetch_chunk(t, j, id);
            if self.recs[j][id as usize].sparse {
                return None;
            }
            let (top, s) = (self.tops[j], self.strides[j]);
            if l <= top + s {
                return self.home_alone(t, rib, j, id, p, announced);
            }
            if j + 1 == self.strides.len() {
                return None;
            }
            v = self.spot(t, j, id, p.addr().bits_at(top, s) as usize).value;
            j += 1;
        }
    }

    /// A new chunk below the DPA element of `p` (which held `default` and had no longer
    /// route below it), whose only route is the announced `p` (next hop `v`), homed in
    /// it: its groups are a run of `default` with `p`'s range set to `v` (Table II's
    /// transform of a one-run group), its presence bits `p`'s; published in its chunk
    /// list, then by one store of the DPA element. OBMA_B and OBMA_L (an OBMA_S chunk
    /// has a BIS or the sparse form: the general path).
    fn new_chunk_alone<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        default: u32,
        p: &Prefix<A>,
        v: u32,
    ) -> Result<(), Full> {
        let (top, s, db) = (self.tops[0], self.strides[0], self.dpa_bits);
        let id = self.alloc_id(t, 0)?;
        let width = self.initial_width(0);
        let rel = p.len() - top;
        let words = self.presence_words[0];
        let bits = &mut self.presence[0][id as usize * words..][..words];
        bits.fill(0);
        set_bit(
            bits,
            (1usize << rel) | p.addr().bits_at(top, rel) as usize,
            true,
        );
        let d = s - width;
        let n = 1usize << d;
        let ncw = code_words(n);
        let (lo, hi) = {
            let seg0 = p.addr().bits_at(top, s) as usize;
            (seg0, seg0 + (1usize << (s - rel)))
        };
        let mut sc = self.group_scratch.take().unwrap_or_default();
        sc.offs.clear();
        let mut r = Ok(());
        for gi in 0..1usize << width {
            // One run of `default`, or up to three with `p`'s range.
            sc.words.clear();
            let (a, b) = (lo.max(gi * n), hi.min((gi + 1) * n));
            if a < b && v != default {
                group::with_range(n, a - gi * n, b - gi * n, default, v, &mut sc.words);
            } else {
                sc.words.push(0x80);
                sc.words.extend((1..ncw).map(|_| 1 << 8));
                sc.words.push(default);
            }
            match self.put_group(t, &sc.words) {
                Ok(g) => sc.offs.push(g),
                Err(e) => {
                    r = Err(e);
                    break;
                }
            }
        }
        let placed = r.and_then(|()| {
            if width == 0 {
                Ok((sc.offs[0], 0))
            } else {
                sc.words.clear();
                sc.words.push((width as u32) << 24);
                sc.words.extend_from_slice(&sc.offs);
                self.put_chunk(t, &sc.words)
                    .map(|c| (c, sc.words.len() as u32))
            }
        });
        self.group_scratch = Some(sc);
        let (off, words) = placed?;
        self.recs[0][id as usize] = ChunkRec {
            root: Prefix::new_truncating(p.addr(), top),
            off,
            words,
            width,
            sparse: false,
            direct: self.variant != Variant::L && words == 0,
            bis: 0,
            default,
            counter: 0,
            live: true,
        };
        let entry = if words > 0 { STRUCTURE | off } else { off };
        // SAFETY: the chunk's structure is complete; one store publishes it in its list,
        // and one store of the DPA element makes it reachable.
        unsafe { t.dirs[0].store_release(id as usize, entry) };
        self.dpa_set(t, p.addr().bits_at(0, db) as usize, t.lim + id)?;
        self.counters.pointer_stores += 1;
        self.counters.dpa_stores += 1;
        self.counters.chunks_built += 1;
        Ok(())
    }

    /// [`Self::change_alone`] of a prefix of the DPA's levels spanning at most 64
    /// elements: the elements no route inside `p` covers (DPA presence bits) take `p`'s
    /// next hop or, after a withdrawal, the covering route's, one store each; a chunk
    /// below such an element inherits it; the covered ones keep theirs.
    fn dpa_alone<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        p: &Prefix<A>,
        announced: Option<u32>,
    ) -> Result<(), Full> {
        let (l, db) = (p.len(), self.dpa_bits);
        let levels = (db - l) as u32;
        let node = self.dpa_slot(p);
        let first = if l == 0 {
            0
        } else {
            (p.addr().bits_at(0, l) as usize) << levels
        };
        let mut cov = [0u64; MAX_ELEMENTS / 64];
        covered_below(&self.dpa_presence, node, levels, &mut cov);
        let v = match announced {
            Some(v) => v,
            None => self.dpa_covering(t, rib, p),
        };
        let lim = t.lim;
        for k in 0..1usize << levels {
            if cov[0] >> k & 1 == 1 {
                continue;
            }
            let x = first + k;
            // The writer reads its own words.
            let old = t.dpa_get(x);
            if old >= lim {
                self.inherit(t, rib, 0, old - lim, v)?;
            } else if old != v {
                // One atomic store of a switch word; what `v` names is a next hop.
                self.dpa_set(t, x, v)?;
                self.counters.dpa_stores += 1;
            }
        }
        set_bit(&mut self.dpa_presence, node, announced.is_some());
        Ok(())
    }

    /// [`Self::covering`] for a prefix `p` of the DPA's levels (by the DPA presence bits,
    /// an element of the closest route above `p` that no other route covers; else the
    /// `Rib`).
    fn dpa_covering<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        p: &Prefix<A>,
    ) -> u32 {
        let (l, db) = (p.len(), self.dpa_bits);
        let bits = &self.dpa_presence;
        let pb = if l == 0 {
            0
        } else {
            p.addr().bits_at(0, l) as usize
        };
        let slot = |r: u8| {
            if r == 0 {
                1
            } else {
                (1usize << r) | pb >> (l - r)
            }
        };
        let Some(r) = (0..l)
            .rev()
            .find(|&r| bits[slot(r) / 64] >> (slot(r) % 64) & 1 == 1)
        else {
            return 0;
        };
        let levels = (db - r) as u32;
        if levels <= 6 {
            let mut cov = [0u64; MAX_ELEMENTS / 64];
            covered_below(bits, slot(r), levels, &mut cov);
            // `p`'s elements, whatever its bit says now.
            let at = ((pb & ((1 << (l - r)) - 1)) as u32) << (db - l);
            cov[0] |= (u64::MAX >> (64 - (1u32 << (db - l)))) << at;
            let free = !cov[0] & (u64::MAX >> (64 - (1u32 << levels)));
            if free != 0 {
                let q = if r == 0 { 0 } else { pb >> (l - r) };
                let x = q << levels | free.trailing_zeros() as usize;
                // The writer reads its own words.
                let v = t.dpa_get(x);
                return if v >= t.lim {
                    self.recs[0][(v - t.lim) as usize].default
                } else {
                    v
                };
            }
        }
        rib.covering_next_hop(p).map_or(0, |h| h.get())
    }

    /// [`Self::change_alone`] in the home chunk `id` of layer `j`.
    fn home_alone<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: &Prefix<A>,
        announced: Option<u32>,
    ) -> Option<Result<(), Full>> {
        let (top, s) = (self.tops[j], self.strides[j]);
        let rel = p.len() - top;
        // `p`'s presence bit: `(1 << rel) | its bits below the root`.
        let node = (1usize << rel) | p.addr().bits_at(top, rel) as usize;
        let words = self.presence_words[j];
        let base = id as usize * words;
        if announced.is_none() {
            // Does the chunk hold a route besides `p`: another presence bit, or a chunk
            // below one of its elements?
            let bits = &self.presence[j][base..base + words];
            let others = bits.iter().enumerate().any(|(i, &w)| {
                (if i == node / 64 {
                    w & !(1u64 << (node % 64))
                } else {
                    w
                }) != 0
            });
            if !others && !self.points(t, j, id) {
                if j > 0 {
                    return None;
                }
                // None: the chunk goes, and the DPA element takes the value its root
                // inherits (the withdrawal of `p`, inside it, leaves that as it was).
                let x = p.addr().bits_at(0, self.dpa_bits) as usize;
                let lpm = self.recs[0][id as usize].default;
                // One atomic store of a switch word; the chunk is retired after it.
                if let Err(e) = self.dpa_set(t, x, lpm) {
                    return Some(Err(e));
                }
                self.counters.dpa_stores += 1;
                self.retire_chunk(t, 0, id);
                return Some(Ok(()));
            }
        }
        let seg0 = p.addr().bits_at(top, s) as usize;
        let r = if rel == s {
            if !self.config.level24 {
                return None;
            }
            // The 24th-level optimisation (§VI-B2): one element, no traversal.
            let at = self.spot(t, j, id, seg0);
            let v = match announced {
                Some(v) => v,
                None => self.covering(t, rib, j, id, p),
            };
            if at.value >= t.lim {
                // A pointer: the chunk below inherits.
                self.inherit(t, rib, j + 1, at.value - t.lim, v)
            } else if at.value == v {
                Ok(())
            } else {
                self.set_spot(t, rib, j, id, &at, v)
            }
        } else {
            let mut cov = [0u64; MAX_ELEMENTS / 64];
            let inside = covered_below(
                &self.presence[j][base..base + words],
                node,
                (s - rel) as u32,
                &mut cov,
            );
            if self.word_groups(j, id) && s - rel <= 6 {
                // Groups of one word, patched in one pass whatever lies inside `p`.
                self.repaint_word(t, rib, j, id, p, announced, cov[0])
            } else {
                match if inside {
                    Ok(false)
                } else {
                    self.range_alone(t, rib, j, id, p, announced)
                } {
                    Ok(false) => self.repaint_masked(t, rib, j, id, p, announced, &cov),
                    r => r.map(|_| ()),
                }
            }
        };
        let w = &mut self.presence[j][base + node / 64];
        if announced.is_some() {
            *w |= 1 << (node % 64);
        } else {
            *w &= !(1 << (node % 64));
        }
        Some(r.and_then(|()| self.count_update(t, rib, j, id)))
    }

    /// Whether an element of chunk `id` of layer `j` (not sparse) points to a chunk.
    fn points<E: Word + AtomicWord>(&self, t: &Layout<A, E>, j: usize, id: u32) -> bool {
        if j + 1 == self.strides.len() {
            return false;
        }
        let width = self.recs[j][id as usize].width;
        let ncw = code_words(1usize << (self.strides[j] - width));
        (0..1usize << width).any(|gi| {
            let (g, _) = self.group_loc(t, j, id, gi);
            let len = self.group_len(t, j, id, g);
            // SAFETY: the writer reads its own published group.
            (ncw..len).any(|e| unsafe { t.groups.get(g + e) }.get() >= t.lim)
        })
    }

    /// Adaptive grouping's online addition (§VI-B1): chunk `id` of layer `j` received an
    /// update; reaching its range's upper bound widens its group index and regroups it.
    #[inline(always)]
    pub(super) fn count_update<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
    ) -> Result<(), Full> {
        if let Grouping::Adaptive { .. } = self.config.grouping {
            let rec = &mut self.recs[j][id as usize];
            rec.counter = rec.counter.saturating_add(1);
            let (c, w) = (rec.counter, rec.width);
            if self.widens(j, c, w) {
                return self.regroup(t, rib, j, id, w + 1);
            }
        }
        Ok(())
    }

    /// Chunk `id` of layer `j` re-encoded with group index width `width` (adaptive
    /// grouping's widening in [`Self::count_update`], its narrowing at a decay): rare,
    /// out of the inlined common path.
    #[inline(never)]
    pub(super) fn regroup<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        width: u8,
    ) -> Result<(), Full> {
        self.encode_chunk(t, rib, j, id, width, true)?;
        self.counters.regroups += 1;
        Ok(())
    }
}

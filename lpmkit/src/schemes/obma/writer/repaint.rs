//! The presence bits of the routes and the repaint of a changed prefix's own elements:
//! single-change updates without a `Rib` walk (see the parent module's docs).

use super::super::layout::Layout;
use super::*;

impl<A: Address> ObmaWriter<A> {
    /// Chunk `id` of layer `j` now inherits `lpm`: if that changed its default, the
    /// elements that take the default are repainted.
    pub(crate) fn inherit<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        lpm: u32,
    ) -> Result<(), Full> {
        let rec = &mut self.recs[j][id as usize];
        if rec.default == lpm {
            return Ok(());
        }
        rec.default = lpm;
        let root = rec.root;
        self.counters.chunks_rebuilt += 1;
        self.repaint(t, rib, j, id, root, Some(lpm))
    }

    /// The presence bit of `p`, `rel = p.len() - top` levels below the root of chunk `id`
    /// of layer `j` (`1 <= rel <= stride`).
    pub(crate) fn set_presence(&mut self, j: usize, id: u32, p: &Prefix<A>, on: bool) {
        let slot = self.slot(j, p, p.len() - self.tops[j]);
        let words = self.presence_words[j];
        let bits = &mut self.presence[j][id as usize * words..(id as usize + 1) * words];
        set_bit(bits, slot, on);
    }

    /// Prefetches what an update of chunk `id` of layer `j` reads besides the chain of
    /// the table itself: its record, its presence bits and its chunk-list entry, so the
    /// misses overlap.
    #[inline(always)]
    pub(crate) fn prefetch_chunk<E: Word + AtomicWord>(&self, t: &Layout<A, E>, j: usize, id: u32) {
        let id = id as usize;
        crate::simd::prefetch(self.recs[j].as_ptr().wrapping_add(id));
        crate::simd::prefetch(
            self.presence[j]
                .as_ptr()
                .wrapping_add(id * self.presence_words[j]),
        );
        crate::simd::prefetch(t.dirs[j].as_ptr().wrapping_add(id));
    }

    /// The slot of `p`'s DPA presence bit (`p` no longer than the DPA's levels).
    pub(crate) fn dpa_slot(&self, p: &Prefix<A>) -> usize {
        let l = p.len();
        if l == 0 {
            1
        } else {
            (1usize << l) | p.addr().bits_at(0, l) as usize
        }
    }

    /// The slot of `p`'s presence bit in a chunk of layer `j` (`rel` levels below its
    /// root).
    pub(super) fn slot(&self, j: usize, p: &Prefix<A>, rel: u8) -> usize {
        (1usize << rel) | p.addr().bits_at(self.tops[j], rel) as usize
    }

    /// Whether chunk `id` of layer `j` holds a route no longer than its last level other
    /// than `p`, by its presence bits.
    pub(crate) fn holds_route_besides(&self, j: usize, id: u32, p: &Prefix<A>) -> bool {
        let (top, s) = (self.tops[j], self.strides[j]);
        let words = self.presence_words[j];
        let bits = &self.presence[j][id as usize * words..(id as usize + 1) * words];
        let root = self.recs[j][id as usize].root;
        let skip = (p.len() > top && p.len() <= top + s && root.covers(p))
            .then(|| self.slot(j, p, p.len() - top));
        bits.iter().enumerate().any(|(i, &w)| match skip {
            Some(sl) if sl / 64 == i => w & !(1u64 << (sl % 64)) != 0,
            _ => w != 0,
        })
    }

    /// The longest match of `p` (homed in chunk `id` of layer `j`) among the routes
    /// shorter than it: the chunk's default if no route between the root and `p` has a
    /// presence bit, else from the `Rib`.
    pub(crate) fn covering(&self, rib: &Rib<A>, j: usize, id: u32, p: &Prefix<A>) -> u32 {
        let rel = p.len() - self.tops[j];
        let words = self.presence_words[j];
        let bits = &self.presence[j][id as usize * words..(id as usize + 1) * words];
        let above = (1..rel).any(|r| {
            let sl = self.slot(j, p, r);
            bits[sl / 64] >> (sl % 64) & 1 == 1
        });
        if above {
            rib.covering_next_hop(p).map_or(0, |h| h.get())
        } else {
            self.recs[j][id as usize].default
        }
    }

    /// Repaints the elements of chunk `id` of layer `j` inside `p` (a prefix whose length
    /// lies within the chunk's levels, or the chunk's root): a level traversal of `p`
    /// alone (§VI: an update touches only the prefix's own traversal), the pointers
    /// among them resolved, and each group they lie in patched ([`Self::patch_group`]).
    /// `value`, if known, is the longest match of the elements no route inside `p`
    /// covers (the next hop `p` was announced with; a chunk's new default). A sparse
    /// chunk (OBMA_S) is rebuilt whole.
    pub(crate) fn repaint<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: Prefix<A>,
        value: Option<u32>,
    ) -> Result<(), Full> {
        let rec = self.recs[j][id as usize];
        if rec.sparse {
            return self.encode_chunk(t, rib, j, id, rec.width, true);
        }
        let (top, s) = (self.tops[j], self.strides[j]);
        let bot = top + s;
        debug_assert!(top <= p.len() && p.len() <= bot && rec.root.covers(&p));
        let seg0 = p.addr().bits_at(top, s) as usize;
        let count = 1usize << (bot - p.len());
        let d = s - rec.width;
        let n = 1usize << d;
        let mut sc = self.scratch[j + 1].take().unwrap_or_default();
        // The live values of the range, group by group.
        sc.old.clear();
        let mut seg = seg0;
        while seg < seg0 + count {
            let gi = seg >> d;
            let (g, _, bis) = self.group_at(t, j, id, gi);
            let ncw = code_words(n);
            let end = (seg0 + count).min((gi + 1) * n);
            for x in seg..end {
                let pos = (x & (n - 1)) ^ bis;
                // SAFETY: the writer reads its own published group.
                let v = unsafe {
                    let cw = t.groups.get(g + pos / 8).get();
                    t.groups.get(g + ncw + group::entry_index(cw, pos)).get()
                };
                sc.old.push(v);
            }
            seg = end;
        }
        if self.single {
            // Alone in its batch, the change leaves every other route as the table has
            // it, and the presence bits say which elements a route inside `p` covers:
            // those keep their values; the others take `p`'s next hop, or after a
            // withdrawal the covering route's (one descent, no walk). The pointers
            // (routes below the chunk) stay; a chunk below an element that changed
            // inherits the new value.
            let v = match value {
                Some(v) => v,
                None => self.covering(rib, j, id, &p),
            };
            sc.fpa.clear();
            sc.fpa.resize(count, v);
            let words = self.presence_words[j];
            let bits = &self.presence[j][id as usize * words..(id as usize + 1) * words];
            keep_covered(bits, top, s, &p, &sc.old, &mut sc.fpa);
            sc.deeper.clear();
            let lim = t.lim;
            for x in 0..count {
                let prev = sc.old[x];
                if prev >= lim {
                    sc.deeper.push(x as u32);
                    if sc.fpa[x] == prev {
                        // Covered: the chunk below inherits what it did.
                        sc.fpa[x] = self.recs[j + 1][(prev - lim) as usize].default;
                    }
                }
            }
        } else {
            self.counters.traversals += 1;
            paint(rib, &p, bot, &mut sc, false);
        }
        let r = self.resolve_pointers(t, rib, j, &rec.root, s, seg0, &mut sc, true);
        let r = r.and_then(|()| {
            let mut k = 0;
            while k < count {
                let gi = (seg0 + k) >> d;
                let lo = (seg0 + k) & (n - 1);
                let m = (n - lo).min(count - k);
                self.patch_group(t, j, id, gi, lo, &sc.fpa[k..k + m], &sc.old[k..k + m])?;
                k += m;
            }
            Ok(())
        });
        self.scratch[j + 1] = Some(sc);
        r
    }

    /// Sets elements `lo..lo + new.len()` of group `gi` of chunk `id` (layer `j`) to
    /// `new` (`old`: their live values). When the group's overlay bitmap stays the same,
    /// each lookup entry that changes is stored in place, one atomic store each: a key
    /// reads one entry, whose run lies wholly inside the range or wholly outside it, so
    /// it sees its old answer or its new one. Otherwise a new group replaces the live one.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn patch_group<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
        lo: usize,
        new: &[u32],
        old: &[u32],
    ) -> Result<(), Full> {
        if new == old {
            return Ok(());
        }
        let rec = self.recs[j][id as usize];
        let n = 1usize << (self.strides[j] - rec.width);
        let ncw = code_words(n);
        let (g, len, bis) = self.group_at(t, j, id, gi);
        // SAFETY (both closures): the writer reads its own published group.
        let cw = |k: usize| unsafe { t.groups.get(g + k) }.get();
        let value =
            |p: usize| unsafe { t.groups.get(g + ncw + group::entry_index(cw(p / 8), p)) }.get();
        let m = new.len();
        if bis == 0 {
            // The bitmap's bits inside the range and just after it, before and after.
            let left = lo.checked_sub(1).map(value);
            let right = (lo + m < n).then(|| value(lo + m));
            let (mut po, mut pn) = (left, left);
            let mut same = true;
            for k in 0..m {
                if (po != Some(old[k])) != (pn != Some(new[k])) {
                    same = false;
                    break;
                }
                po = Some(old[k]);
                pn = Some(new[k]);
            }
            if same && right.is_some() && (po != right) != (pn != right) {
                same = false;
            }
            if same {
                for k in 0..m {
                    let start = k.checked_sub(1).map_or(left, |q| Some(new[q])) != Some(new[k]);
                    if start && new[k] != old[k] {
                        let e = group::entry_index(cw((lo + k) / 8), lo + k);
                        // SAFETY: one atomic store of a lookup entry (see above); what
                        // it names is complete.
                        unsafe { t.groups.store_release(g + ncw + e, E::from_u32(new[k])) };
                        self.counters.entry_stores += 1;
                    }
                }
                self.counters.groups_in_place += 1;
                return Ok(());
            }
        }
        // The whole group: decoded, patched, encoded under its BIS.
        let mut sc = self.group_scratch.take().unwrap_or_default();
        sc.words.clear();
        // SAFETY: the writer reads its own published group.
        sc.words
            .extend((0..len).map(|k| unsafe { t.groups.get(g + k) }.get()));
        let words = std::mem::take(&mut sc.words);
        group::decode(&words, n, bis, &mut sc.offs);
        sc.offs[lo..lo + m].copy_from_slice(new);
        sc.words = words;
        sc.routes.clear();
        let mut out = std::mem::take(&mut sc.old);
        out.clear();
        group::encode(&sc.offs, bis, &mut out);
        let r = if out[..ncw] == sc.words[..ncw] {
            // The same bitmap after all (a BIS group): the entries in place.
            for e in 0..out.len() - ncw {
                if out[ncw + e] != sc.words[ncw + e] {
                    // SAFETY: as above.
                    unsafe {
                        t.groups
                            .store_release(g + ncw + e, E::from_u32(out[ncw + e]))
                    };
                    self.counters.entry_stores += 1;
                }
            }
            self.counters.groups_in_place += 1;
            Ok(())
        } else {
            self.counters.groups_rebuilt += 1;
            self.replace_group(t, j, id, gi, g, len, &out)
        };
        sc.old = out;
        self.group_scratch = Some(sc);
        r
    }
}

/// Copies into `fpa` (the elements of `p` at level `top + s`) the values in `old` of the
/// elements that a route strictly inside `p`, no longer than `top + s`, covers, by the
/// presence bits `bits` of the levels below `top` (bit `(1 << rel) | bits` for the
/// prefix `rel` levels below `top`).
pub(crate) fn keep_covered<A: Address>(
    bits: &[u64],
    top: u8,
    s: u8,
    p: &Prefix<A>,
    old: &[u32],
    fpa: &mut [u32],
) {
    let rel = p.len() - top;
    let node = if rel == 0 {
        1
    } else {
        (1usize << rel) | p.addr().bits_at(top, rel) as usize
    };
    // Level `rel + k` below `p`: the `2^k` slots from `node << k`, each covering
    // `2^(s - rel - k)` elements.
    for k in 1..=s - rel {
        let (lo, n) = (node << k, 1usize << k);
        let span = 1usize << (s - rel - k);
        let mut b = lo;
        while b < lo + n {
            let w = 64.min(n);
            let mask = if w == 64 {
                u64::MAX
            } else {
                ((1u64 << w) - 1) << (b % 64)
            };
            let mut m = bits[b / 64] & mask;
            while m != 0 {
                let slot = b / 64 * 64 + m.trailing_zeros() as usize;
                let x = (slot - lo) * span;
                fpa[x..x + span].copy_from_slice(&old[x..x + span]);
                m &= m - 1;
            }
            b += w;
        }
    }
}

/// Sets or clears bit `slot` of `bits`.
#[inline]
pub(crate) fn set_bit(bits: &mut [u64], slot: usize, on: bool) {
    let w = &mut bits[slot / 64];
    if on {
        *w |= 1 << (slot % 64);
    } else {
        *w &= !(1 << (slot % 64));
    }
}

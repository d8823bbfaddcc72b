//! The presence bits of the routes and the repaint of a changed prefix's own elements:
//! single-change updates without a `Rib` walk (see the parent module's docs).

use super::super::layout::Layout;
use super::runs::{covered_below, set_span, MAX_ELEMENTS};
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

    /// Alone in its batch: whether a route other than `p` lies inside the root of chunk
    /// `id` of layer `j`, if its presence bits can tell (a route of the chunk's own
    /// levels; nothing below the last layer); `None`: ask the `Rib`.
    pub(crate) fn longer_besides(&self, j: usize, id: u32, p: &Prefix<A>) -> Option<bool> {
        if self.holds_route_besides(j, id, p) {
            Some(true)
        } else if j + 1 == self.strides.len() {
            Some(false)
        } else {
            None
        }
    }

    /// The longest match of `p` (homed in chunk `id` of layer `j`, a change alone in its
    /// batch) among the routes shorter than it: the chunk's default if no route between
    /// the root and `p` has a presence bit; else the value of an element of the closest
    /// such route `q` that no other route inside `q` covers (by the presence bits; `p`'s
    /// own elements excluded), read from the table (a pointer's: the default of the chunk
    /// below it); else, if every element of `q` is covered, from the `Rib`.
    pub(crate) fn covering<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: &Prefix<A>,
    ) -> u32 {
        let (top, s) = (self.tops[j], self.strides[j]);
        let rel = p.len() - top;
        let words = self.presence_words[j];
        let bits = &self.presence[j][id as usize * words..(id as usize + 1) * words];
        let pb = p.addr().bits_at(top, rel) as usize;
        let Some(r) = (1..rel).rev().find(|&r| {
            let sl = (1usize << r) | pb >> (rel - r);
            bits[sl / 64] >> (sl % 64) & 1 == 1
        }) else {
            return self.recs[j][id as usize].default;
        };
        let levels = (s - r) as u32;
        if !self.recs[j][id as usize].sparse {
            let node = (1usize << r) | pb >> (rel - r);
            let mut cov = [0u64; MAX_ELEMENTS / 64];
            covered_below(bits, node, levels, &mut cov);
            // `p`'s elements, whatever its bit says now; then the first element of `q` no
            // route inside it covers.
            let at = (pb & ((1 << (rel - r)) - 1)) << (s - rel);
            let first_free = if levels <= 6 {
                // One word (the common case).
                let c = cov[0] | (u64::MAX >> (64 - (1u32 << (s - rel)))) << at;
                let free = !c & (u64::MAX >> (64 - (1u32 << levels)));
                (free != 0).then(|| free.trailing_zeros() as usize)
            } else {
                set_span(&mut cov, at, 1usize << (s - rel));
                let total = 1usize << levels;
                cov.iter()
                    .take(total.div_ceil(64))
                    .enumerate()
                    .find_map(|(w, &c)| {
                        let free = !c & (u64::MAX >> (64 - (total - 64 * w).min(64)));
                        (free != 0).then(|| 64 * w + free.trailing_zeros() as usize)
                    })
            };
            if let Some(k) = first_free {
                let seg = (pb >> (rel - r)) << levels | k;
                let v = self.spot(t, j, id, seg).value;
                return if v >= t.lim {
                    self.recs[j + 1][(v - t.lim) as usize].default
                } else {
                    v
                };
            }
        }
        rib.covering_next_hop(p).map_or(0, |h| h.get())
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
        if self.single {
            // Alone in its batch: by the presence bits below `p`, as one range if nothing
            // lies inside it, else element by element (no `Rib` walk either way).
            let rel = p.len() - top;
            let node = if rel == 0 {
                1
            } else {
                (1usize << rel) | p.addr().bits_at(top, rel) as usize
            };
            let words = self.presence_words[j];
            let mut cov = [0u64; 4];
            let inside = covered_below(
                &self.presence[j][id as usize * words..][..words],
                node,
                (s - rel) as u32,
                &mut cov,
            );
            if self.word_groups(j, id) && s - rel <= 6 {
                return self.repaint_word(t, rib, j, id, &p, value, cov[0]);
            }
            if !inside && rel > 0 && self.range_alone(t, rib, j, id, &p, value)? {
                return Ok(());
            }
            return self.repaint_masked(t, rib, j, id, &p, value, &cov);
        }
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
        self.counters.traversals += 1;
        paint(rib, &p, bot, &mut sc, false);
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
    /// `new` (`old`: their live values).
    ///
    /// In place when the live overlay bitmap can hold the new values: every element whose
    /// new value differs from its left neighbour's has a 1 of its own (a lookup entry
    /// starts at it). Then each entry whose run changes value is stored in place, one
    /// atomic store each: a key reads one entry, and every element sharing that entry
    /// takes the same new value, so the key sees its old answer or its new one. This
    /// covers next-hop changes (the runs keep their bounds) and withdrawals that merge
    /// runs: the merged runs keep their 1s, so the group holds a redundant 1 (two
    /// neighbouring entries of one value: lookups stay exact, the group is not the
    /// fewest-1s encoding of Theorem 1) until a change that needs a new 1 rebuilds it,
    /// canonical again. A later change that splits the run where it was merged (the
    /// prefix announced again: a flap) finds its 1 and is stored in place too.
    /// Otherwise a new group replaces the live one.
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
        // SAFETY: the writer reads its own published group.
        let cw = |k: usize| unsafe { t.groups.get(g + k) }.get();
        let m = new.len();
        if bis == 0 {
            // An element without a 1 shares its left neighbour's entry: its new value must
            // be that neighbour's (outside the range, left of it, the neighbour's value is
            // unchanged: `old[0]`; right of it, the element after the range keeps its
            // value, which equals `old[m - 1]`).
            let fits = (0..m).all(|k| {
                group::bit(cw((lo + k) / 8), lo + k)
                    || new[k] == if k == 0 { old[0] } else { new[k - 1] }
            }) && (lo + m == n
                || group::bit(cw((lo + m) / 8), lo + m)
                || new[m - 1] == old[m - 1]);
            if fits {
                for k in 0..m {
                    if new[k] != old[k] && group::bit(cw((lo + k) / 8), lo + k) {
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
        // The whole group: decoded, patched, then stored in place if the live bitmap
        // holds it (a BIS group: the test above in permuted order), else encoded anew
        // under its BIS.
        let mut sc = self.group_scratch.take().unwrap_or_default();
        sc.words.clear();
        // SAFETY: the writer reads its own published group.
        sc.words
            .extend((0..len).map(|k| unsafe { t.groups.get(g + k) }.get()));
        let words = std::mem::take(&mut sc.words);
        group::decode(&words, n, bis, &mut sc.offs);
        sc.offs[lo..lo + m].copy_from_slice(new);
        let fits = bis != 0
            && (1..n)
                .all(|q| group::bit(words[q / 8], q) || sc.offs[q ^ bis] == sc.offs[(q - 1) ^ bis]);
        let r = if fits {
            let mut e = 0;
            for q in 0..n {
                if group::bit(words[q / 8], q) {
                    let v = sc.offs[q ^ bis];
                    if words[ncw + e] != v {
                        // SAFETY: as above.
                        unsafe { t.groups.store_release(g + ncw + e, E::from_u32(v)) };
                        self.counters.entry_stores += 1;
                    }
                    e += 1;
                }
            }
            self.counters.groups_in_place += 1;
            Ok(())
        } else {
            let mut out = std::mem::take(&mut sc.old);
            out.clear();
            group::encode(&sc.offs, bis, &mut out);
            self.counters.groups_rebuilt += 1;
            let r = self.replace_group(t, j, id, gi, g, len, &out);
            sc.old = out;
            r
        };
        sc.words = words;
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
    for k in 1..s - rel + 1 {
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

//! Repaints of a change alone in its batch, by the presence bits (no `Rib` walk): a
//! prefix with nothing inside it as one range of each group it touches, else the elements
//! no route inside it covers, run by run where the runs of the live bitmap allow
//! (`ObmaWriter::patch_runs`), else element by element (`ObmaWriter::patch_group`); a
//! group of at most 64 elements without a BIS in one pass (`ObmaWriter::patch_word`,
//! `word.rs`). Also the masks of covered elements they work from.

use super::super::layout::Layout;
use super::word::WORD_ELEMENTS;
use super::*;

/// Most elements a chunk has (8-bit strides).
pub(super) const MAX_ELEMENTS: usize = 256;

impl<A: Address> ObmaWriter<A> {
    /// [`Self::repaint`] of a change alone in its batch whose prefix `p` has nothing
    /// inside it in the chunk (no presence bit below `p`; the caller checked), so that
    /// every element of `p` holds one value before the change and one after it: each
    /// group the elements lie in is patched as one range, without reading them one by
    /// one. In the group's permuted order (OBMA_S) the elements of `p`, an aligned block,
    /// are an aligned block too. Returns false (having changed nothing) if one of the
    /// elements points to a chunk (which inherits the new value:
    /// [`Self::repaint_masked`] does it).
    pub(super) fn range_alone<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: &Prefix<A>,
        value: Option<u32>,
    ) -> Result<bool, Full> {
        let (top, s) = (self.tops[j], self.strides[j]);
        let width = self.recs[j][id as usize].width;
        let d = s - width;
        let n = 1usize << d;
        let ncw = code_words(n);
        let seg0 = p.addr().bits_at(top, s) as usize;
        let count = 1usize << (top + s - p.len());
        let m = count.min(n);
        let (g0, groups) = (seg0 >> d, count.div_ceil(n));
        let lim = t.lim;
        let place = |w: &Self, gi: usize| w.range_place(t, j, id, gi, seg0 & (n - 1), m);
        // No pointer among the runs that start inside the range, in every group it
        // touches (a run that starts before it holds two elements or more: no pointer).
        // The first group's place is kept for the patch (most ranges lie in one group).
        let first = place(self, g0);
        for gi in g0..g0 + groups {
            let (g, _, k, e_lo, b_lo) = if gi == g0 { first } else { place(self, gi) };
            let e0 = e_lo + 1 - b_lo as usize;
            // SAFETY: the writer reads its own published group; the entries `e0..e0 + k`
            // are those runs'.
            if (e0..e0 + k).any(|e| unsafe { t.groups.get(g + ncw + e) }.get() >= lim) {
                return Ok(false);
            }
        }
        let v = match value {
            Some(v) => v,
            None => self.covering(t, rib, j, id, p),
        };
        for gi in g0..g0 + groups {
            // Patching a group changes no other group's place.
            let (g, lo, k, e_lo, b_lo) = if gi == g0 { first } else { place(self, gi) };
            let hi = lo + m;
            // SAFETY: the writer reads its own published group.
            let b_hi = hi == n || group::bit(unsafe { t.groups.get(g + hi / 8) }.get(), hi);
            // SAFETY: as above.
            let u = unsafe { t.groups.get(g + ncw + e_lo) }.get();
            if u == v {
                // The range already holds `v` (a withdrawal whose covering route has the
                // same next hop).
                continue;
            }
            if b_lo && b_hi {
                // A run (or runs) of its own: its entries stored in place.
                for e in e_lo..e_lo + k {
                    // SAFETY: one atomic store of a lookup entry that only keys of the
                    // range read; every element of the range takes `v`.
                    unsafe { t.groups.store_release(g + ncw + e, E::from_u32(v)) };
                    self.counters.entry_stores += 1;
                }
                self.counters.groups_in_place += 1;
                continue;
            }
            self.counters.groups_rebuilt += 1;
            self.set_group_range(t, j, id, gi, g, lo, hi, v)?;
        }
        Ok(true)
    }

    /// The place of a range of `m` elements at `at` (its first element's index in its
    /// group, `m` a power of two dividing it) in group `gi` of chunk `id` of layer `j`:
    /// the group's offset, the range's first position (permuted by the group's BIS), the
    /// 1s inside it, the entry of the run at its first position, and whether a run
    /// starts there.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn range_place<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
        at: usize,
        m: usize,
    ) -> (usize, usize, usize, usize, bool) {
        let (g, bis) = self.group_loc(t, j, id, gi);
        let lo = at ^ (bis & !(m - 1));
        // SAFETY: the writer reads its own published group.
        let cw = |c: usize| unsafe { t.groups.get(g + c) }.get();
        let k = group::ones_in(cw, lo, lo + m);
        let c = cw(lo / 8);
        (g, lo, k, group::entry_index(c, lo), group::bit(c, lo))
    }

    /// [`Self::repaint`] of a change alone in its batch (`p`: the changed prefix, or the
    /// chunk's root when its default changed; `cov`: the elements of `p` that routes
    /// inside `p` cover, by the presence bits): the covered elements keep their values,
    /// the others take `value` (`p`'s next hop, the new default) or, after a withdrawal,
    /// the covering route's; an uncovered element that points to a chunk keeps pointing
    /// and the chunk below inherits the new value. Group by group: run by run where every
    /// run of the live bitmap changes whole or not at all ([`Self::patch_runs`]), else
    /// element by element ([`Self::patch_group`]). No walk of the `Rib`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn repaint_masked<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: &Prefix<A>,
        value: Option<u32>,
        cov: &[u64; MAX_ELEMENTS / 64],
    ) -> Result<(), Full> {
        let (top, s) = (self.tops[j], self.strides[j]);
        let d = s - self.recs[j][id as usize].width;
        let n = 1usize << d;
        let ncw = code_words(n);
        let seg0 = if p.len() > top {
            p.addr().bits_at(top, s) as usize
        } else {
            0
        };
        let count = 1usize << (top + s - p.len());
        let m = count.min(n);
        let lim = t.lim;
        let covered = |k: usize| cov[k / 64] >> (k % 64) & 1 == 1;
        let v = match value {
            Some(v) => v,
            None => self.covering(t, rib, j, id, p),
        };
        for k0 in (0..count).step_by(m) {
            let gi = (seg0 + k0) >> d;
            let (g, bis) = self.group_loc(t, j, id, gi);
            let lo = (seg0 + k0) & (n - 1);
            if bis == 0 {
                // The elements that change, at their positions in the group (`k0` and
                // `lo` are multiples of `m`, a power of two).
                let mut u = [0u64; MAX_ELEMENTS / 64];
                if m >= 64 {
                    for w in 0..m / 64 {
                        u[lo / 64 + w] = !cov[k0 / 64 + w];
                    }
                } else {
                    let part = !(cov[k0 / 64] >> (k0 % 64)) & (u64::MAX >> (64 - m));
                    u[lo / 64] = part << (lo % 64);
                }
                if n <= WORD_ELEMENTS {
                    self.patch_word(t, rib, j, id, gi, g, n, u[0], v)?;
                    continue;
                }
                if self.patch_runs(t, rib, j, g, n, &u, lo, m, v)? {
                    continue;
                }
            }
            // Element by element: the live values of the group's range, then the new.
            let mut sc = self.scratch[j + 1].take().unwrap_or_default();
            sc.old.clear();
            sc.old.extend((lo..lo + m).map(|x| {
                let pos = x ^ bis;
                // SAFETY: the writer reads its own published group.
                unsafe {
                    let cw = t.groups.get(g + pos / 8).get();
                    t.groups.get(g + ncw + group::entry_index(cw, pos)).get()
                }
            }));
            sc.fpa.clear();
            let mut r = Ok(());
            for x in 0..m {
                let (old, k) = (sc.old[x], k0 + x);
                sc.fpa.push(if covered(k) || old >= lim { old } else { v });
                if old >= lim && !covered(k) && r.is_ok() {
                    // The chunk below takes the new value as its default.
                    r = self.inherit(t, rib, j + 1, old - lim, v);
                }
            }
            let r = r.and_then(|()| self.patch_group(t, j, id, gi, lo, &sc.fpa, &sc.old));
            self.scratch[j + 1] = Some(sc);
            r?;
        }
        Ok(())
    }

    /// Gives the elements `u` marks in the group at `g` (`n` elements, no BIS, of a chunk
    /// of layer `j`; `u` marks none outside `lo..lo + m`) the value `v`, run by run, if
    /// every run of the live bitmap lies wholly inside `u` or wholly outside it: the entry
    /// of each run inside takes `v` by one store (a run that points to a chunk keeps
    /// pointing, and the chunk below inherits `v`), without reading the elements. Returns
    /// false, having changed nothing, if a run mixes elements inside and outside `u`.
    /// Reads only the code words of `lo..=lo + m` (where `u`'s edges can be).
    #[allow(clippy::too_many_arguments)]
    fn patch_runs<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        g: usize,
        n: usize,
        u: &[u64; MAX_ELEMENTS / 64],
        lo: usize,
        m: usize,
        v: u32,
    ) -> Result<bool, Full> {
        let ncw = code_words(n);
        // SAFETY: the writer reads its own published group.
        let cw = |c: usize| unsafe { t.groups.get(g + c) }.get();
        // The 1s of the bitmap in element order (a code word holds its cluster's bits
        // most significant first), of the clusters from `lo` to `lo + m` (if in the group).
        let (c0, c1) = (lo / 8, ((lo + m) / 8 + 1).min(ncw));
        let mut ones = [0u64; MAX_ELEMENTS / 64];
        for c in c0..c1 {
            let b = (cw(c) & 0xff) as u8;
            ones[c / 8] |= (b.reverse_bits() as u64) << (8 * (c % 8));
        }
        // A run mixes if an element without a 1 is marked unlike its left neighbour (an
        // edge of `u`: at `lo`, at `lo + m` if in the group, or between).
        let (w0, w1) = (lo / 64, ((lo + m) / 64 + 1).min(n.div_ceil(64)));
        let top = if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        let mut carry = 0u64;
        for w in w0..w1 {
            let edges = u[w] ^ (u[w] << 1 | carry);
            carry = u[w] >> 63;
            if edges & !ones[w] & top != 0 {
                return Ok(false);
            }
        }
        let lim = t.lim;
        let mut stored = false;
        for w in w0..w1 {
            let mut starts = ones[w] & u[w];
            while starts != 0 {
                let i = 64 * w + starts.trailing_zeros() as usize;
                // A run starts at `i`: its entry is the one `i` looks up.
                let e = ncw + group::entry_index(cw(i / 8), i);
                // SAFETY: the writer reads its own published group.
                let old = unsafe { t.groups.get(g + e) }.get();
                if old >= lim {
                    self.inherit(t, rib, j + 1, old - lim, v)?;
                } else if old != v {
                    // SAFETY: one atomic store of a lookup entry whose run's elements all
                    // take `v`; what `v` names is complete.
                    unsafe { t.groups.store_release(g + e, E::from_u32(v)) };
                    self.counters.entry_stores += 1;
                    stored = true;
                }
                starts &= starts - 1;
            }
        }
        if stored {
            self.counters.groups_in_place += 1;
        }
        Ok(true)
    }
}

/// Marks in `cov` (bit `k`: element `k` of the subtree of presence slot `node`, `levels`
/// levels below it) the elements a presence bit of `bits` strictly below `node` covers;
/// returns whether there is one.
pub(super) fn covered_below(
    bits: &[u64],
    node: usize,
    levels: u32,
    cov: &mut [u64; MAX_ELEMENTS / 64],
) -> bool {
    if levels <= 6 {
        // Up to 64 elements: one word. Top down, `c` marks the slots of level `k` below
        // `node` that a bit at levels `1..=k` covers: each slot of level `k - 1` stands
        // for its two children at level `k`, plus level `k`'s own bits (a level's slots
        // lie in one word of `bits`, aligned).
        let mut c = 0u64;
        let mut k = 1;
        while k <= levels {
            let lo = node << k;
            let live = (bits[lo / 64] >> (lo % 64)) & (u64::MAX >> (64 - (1u32 << k)));
            c = if c == 0 {
                live
            } else {
                double_bits(c, 1 << (k - 1)) | live
            };
            k += 1;
        }
        cov[0] = c;
        return c != 0;
    }
    let mut any = false;
    for k in 1..levels + 1 {
        // Level `k` below `node`: the `2^k` slots from `node << k` (aligned), each
        // covering `2^(levels - k)` elements.
        let lo = node << k;
        let span = 1usize << (levels - k);
        let mut w0 = lo / 64;
        let w1 = (lo + (1usize << k)).div_ceil(64);
        while w0 < w1 {
            let shift = if w0 == lo / 64 { lo % 64 } else { 0 };
            let take = (1usize << k).min(64);
            let mask = if take == 64 {
                u64::MAX
            } else {
                (1u64 << take) - 1
            };
            let mut live = (bits[w0] >> shift) & mask;
            any |= live != 0;
            while live != 0 {
                let slot = w0 * 64 + shift + live.trailing_zeros() as usize;
                set_span(cov, (slot - lo) * span, span);
                live &= live - 1;
            }
            w0 += 1;
        }
    }
    any
}

/// Each of the low `bits` bits (at most 32) of `c` twice: bit `i` to bits `2i` and `2i + 1`.
#[inline]
fn double_bits(c: u64, bits: u32) -> u64 {
    /// Byte `b` with each of its bits doubled.
    const DOUBLED: [u16; 256] = {
        let mut t = [0u16; 256];
        let mut b = 0;
        while b < 256 {
            let mut i = 0;
            while i < 8 {
                if b >> i & 1 == 1 {
                    t[b] |= 3 << (2 * i);
                }
                i += 1;
            }
            b += 1;
        }
        t
    };
    let mut r = 0u64;
    let mut i = 0;
    while i < bits {
        r |= (DOUBLED[(c >> i) as u8 as usize] as u64) << (2 * i);
        i += 8;
    }
    r
}

/// Sets bits `x..x + span` of `cov`.
#[inline]
pub(super) fn set_span(cov: &mut [u64; MAX_ELEMENTS / 64], x: usize, span: usize) {
    let mut q = x;
    while q < x + span {
        let w = (x + span - q).min(64 - q % 64);
        let ones = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
        cov[q / 64] |= ones << (q % 64);
        q += w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Element `e` of the subtree `levels` levels below `node` is covered iff a slot on
    /// its path strictly below `node` has its bit.
    fn covered_naive(bits: &[u64], node: usize, levels: u32, e: usize) -> bool {
        (1..=levels).any(|k| {
            let slot = (node << k) | (e >> (levels - k));
            bits[slot / 64] >> (slot % 64) & 1 == 1
        })
    }

    #[test]
    fn covered_below_matches_its_definition() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for stride in [6u32, 8] {
            let words = (1usize << (stride + 1)).div_ceil(64);
            for _ in 0..2_000 {
                // Sparse and dense bit patterns.
                let dense = next() % 3;
                let bits: Vec<u64> = (0..words)
                    .map(|_| match dense {
                        0 => next() & next() & next(),
                        1 => next() & next(),
                        _ => next(),
                    })
                    .collect();
                let rel = (next() % stride as u64) as u32;
                let node = (1usize << rel) | (next() as usize & ((1usize << rel) - 1));
                let levels = stride - rel;
                let mut cov = [0u64; MAX_ELEMENTS / 64];
                let any = covered_below(&bits, node, levels, &mut cov);
                let mut expect_any = false;
                for e in 0..1usize << levels {
                    let want = covered_naive(&bits, node, levels, e);
                    expect_any |= want;
                    assert_eq!(
                        cov[e / 64] >> (e % 64) & 1 == 1,
                        want,
                        "stride {stride} node {node} element {e}"
                    );
                }
                assert_eq!(any, expect_any);
            }
        }
    }
}

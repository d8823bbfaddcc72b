//! A group of at most 64 elements patched in one pass over one word: its overlay bitmap
//! as a `u64` (bit `i`: a run starts at element `i`), the elements that change as
//! another, and the new group — run starts, lookup entries, code words — derived from
//! the two without decoding the group (§III-B's encoding; the transform of Table II
//! generalised from one element to any set of them).
//!
//! Every group of OBMA_B's layer-2 chunks (six levels: 64 elements at group index width
//! 0, fewer when adaptive grouping widens it), of OBMA_L's fixed 8-element groups, and of
//! layer-3 chunks from width 2 on fits, so the common updates — a prefix of the chunk's
//! levels announced, withdrawn or given a new next hop, alone in its batch — cost one
//! read of the group's code words, one rank per run start they touch, and either a few
//! entry stores or one new group.

use super::super::layout::Layout;
use super::*;

/// Most elements a group patched by [`ObmaWriter::patch_word`] has.
pub(super) const WORD_ELEMENTS: usize = 64;

impl<A: Address> ObmaWriter<A> {
    /// [`Self::repaint_masked`] of a prefix `p` of at most 64 elements in a chunk whose
    /// groups are patched one word at a time ([`Self::word_groups`]); `cov`: the elements
    /// of `p` that routes inside it cover. The elements it does not cover take `value` or,
    /// after a withdrawal (`None`), the covering route's: one [`Self::patch_word`] per
    /// group `p` touches.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn repaint_word<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: &Prefix<A>,
        value: Option<u32>,
        cov: u64,
    ) -> Result<(), Full> {
        let (top, s) = (self.tops[j], self.strides[j]);
        let d = s - self.recs[j][id as usize].width;
        let n = 1usize << d;
        let levels = top + s - p.len();
        debug_assert!(self.word_groups(j, id) && levels <= 6);
        let count = 1usize << levels;
        let seg0 = if p.len() > top {
            p.addr().bits_at(top, s) as usize
        } else {
            0
        };
        let v = match value {
            Some(v) => v,
            None => self.covering(t, rib, j, id, p),
        };
        let free = !cov & (u64::MAX >> (64 - count));
        if count <= n {
            // One group.
            let gi = seg0 >> d;
            let (g, _) = self.group_loc(t, j, id, gi);
            return self.patch_word(t, rib, j, id, gi, g, n, free << (seg0 & (n - 1)), v);
        }
        // Several groups, each wholly inside `p`.
        let mut k0 = 0;
        while k0 < count {
            let gi = (seg0 + k0) >> d;
            let (g, _) = self.group_loc(t, j, id, gi);
            self.patch_word(t, rib, j, id, gi, g, n, free >> k0, v)?;
            k0 += n;
        }
        Ok(())
    }

    /// Gives the elements `u` marks (bit `i`: element `i`, in the group's order) of group
    /// `gi` (at `g`, `n <= 64` elements, no BIS) of chunk `id` of layer `j` the value
    /// `v`. A marked element that points to a chunk keeps pointing, and the chunk below
    /// inherits `v` (a pointer's run is the element alone: no two elements point to one
    /// chunk).
    ///
    /// In place, one atomic store per lookup entry that changes, when every run of the
    /// live bitmap that `u`'s edges cut already holds `v` (a key reads one entry, and
    /// every element of a stored entry's run takes `v`); the live bitmap's redundant 1s
    /// (see [`Self::patch_group`]) are kept then. Otherwise the group with the fewest 1s
    /// (Theorem 1) for the new values is built beside the live one and published by one
    /// store ([`Self::replace_group`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn patch_word<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        gi: usize,
        g: usize,
        n: usize,
        mut u: u64,
        v: u32,
    ) -> Result<(), Full> {
        debug_assert!((8..=WORD_ELEMENTS).contains(&n) && n.is_power_of_two());
        let ncw = code_words(n);
        let all = u64::MAX >> (64 - n);
        u &= all;
        // SAFETY: the writer reads its own published group (code words, then entries).
        let word = |k: usize| unsafe { t.groups.get(g + k) }.get();
        let live = Live::read(ncw, word);
        let value = |i: u32| word(ncw + live.run(i));
        let lim = t.lim;
        // Pointers among the marked elements: each is a run start.
        let mut starts = live.ones & u;
        while starts != 0 {
            let i = starts.trailing_zeros();
            let x = value(i);
            if x >= lim {
                u &= !(1u64 << i);
                self.inherit(t, rib, j + 1, x - lim, v)?;
            }
            starts &= starts - 1;
        }
        if u == 0 {
            return Ok(());
        }
        let edges = edges(u, all);
        if fits_in_place(live.ones, edges, v, value) {
            let mut starts = live.ones & u;
            let mut stored = false;
            while starts != 0 {
                let e = ncw + live.run(starts.trailing_zeros());
                if word(e) != v {
                    // SAFETY: one atomic store of a lookup entry whose run lies wholly
                    // inside `u` (every element of it takes `v`); `v` is a next hop.
                    unsafe { t.groups.store_release(g + e, E::from_u32(v)) };
                    self.counters.entry_stores += 1;
                    stored = true;
                }
                starts &= starts - 1;
            }
            if stored {
                self.counters.groups_in_place += 1;
            }
            return Ok(());
        }
        // A new group, beside the live one.
        let w = Window::new(&live, n, u, edges, v, value);
        let off = self.alloc_group(t, w.len)?;
        let copy = |e: usize, k: usize, count: usize| {
            if count > 0 {
                // SAFETY: the live group's entries `e..e + count` (committed) to fresh
                // slots (allocated above, not yet published; disjoint from the live group).
                unsafe { t.groups.copy(g + ncw + e, off + k, count) }
            }
        };
        w.write(&live, u, v, value, copy, |k, x| {
            // SAFETY: the slots are fresh (allocated above, not yet published).
            unsafe { t.groups.write(off + k, E::from_u32(x)) }
        });
        self.counters.groups_rebuilt += 1;
        self.publish_group(t, j, id, gi, g, ncw + live.entries(), off)
    }
}

/// Byte `b` with its bits in reverse order (a code word holds its cluster's bits most
/// significant first; the bitmaps here hold element `i` at bit `i`). A table, as the
/// paper's index table, not `u8::reverse_bits`, which baseline x86-64 spells out in a
/// dozen instructions.
static REVERSED: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).reverse_bits();
        b += 1;
    }
    t
};

/// A live group of at most 64 elements, read once: its code words and its overlay
/// bitmap. Ranks come from the code words' counters and the index table (Algorithm 1),
/// not from population counts, which baseline x86-64 (no `popcnt`) spells out too.
struct Live {
    cw: [u32; WORD_ELEMENTS / 8],
    ncw: usize,
    /// Bit `i`: a run starts at element `i`.
    ones: u64,
}

impl Live {
    #[inline]
    fn read(ncw: usize, word: impl Fn(usize) -> u32) -> Self {
        let mut cw = [0u32; WORD_ELEMENTS / 8];
        let mut ones = 0u64;
        for (c, w) in cw.iter_mut().enumerate().take(ncw) {
            *w = word(c);
            ones |= u64::from(REVERSED[(*w & 0xff) as usize]) << (8 * c);
        }
        Live { cw, ncw, ones }
    }

    /// The entry of the run holding element `i`.
    #[inline]
    fn run(&self, i: u32) -> usize {
        group::entry_index(self.cw[(i >> 3) as usize & 7], i as usize)
    }

    /// The 1s strictly before element `i`.
    #[inline]
    fn before(&self, i: u32) -> usize {
        self.run(i) + 1 - (self.ones >> i & 1) as usize
    }

    /// Its lookup entries.
    #[inline]
    fn entries(&self) -> usize {
        let c = self.cw[(self.ncw - 1) & 7];
        ((c >> 8) & 0xff) as usize + group::INDEX_TABLE[(c & 0xff) as usize] as usize
    }
}

/// Where membership in `u` changes between an element and its left neighbour (`all`:
/// the group's elements).
#[inline]
fn edges(u: u64, all: u64) -> u64 {
    (u ^ (u << 1)) & all & !1
}

/// Whether the live bitmap `ones` holds the new values: each edge of `u` without a 1
/// lies inside a run that already holds `v` (one side of the edge is marked, the other
/// keeps the run's value). `value(i)`: the live value of element `i`.
#[inline]
fn fits_in_place(ones: u64, edges: u64, v: u32, value: impl Fn(u32) -> u32) -> bool {
    let mut inside = edges & !ones;
    while inside != 0 {
        if value(inside.trailing_zeros()) != v {
            return false;
        }
        inside &= inside - 1;
    }
    true
}

/// The new group of a group patched by [`ObmaWriter::patch_word`] that must be rebuilt:
/// the live bitmap outside the *window* (from the first marked element to the element
/// after the last, where values change and where a run can start or end anew), the
/// fewest 1s for the new values inside it (a run of the new values starts at a live run
/// start or at an edge of `u`: of those, at the ones whose value differs from the run
/// before). The live bitmap's redundant 1s outside the window are kept (as
/// [`group::set_range`] keeps them), so the entries outside it are copied.
struct Window {
    /// The new bitmap.
    fresh: u64,
    /// The window's elements.
    mask: u64,
    /// The live 1s before the window.
    before: usize,
    /// The live entries from the first after the window on.
    after: usize,
    /// The new code words.
    cw: [u32; WORD_ELEMENTS / 8],
    /// Words of the new group.
    len: usize,
}

impl Window {
    #[inline]
    fn new(live: &Live, n: usize, u: u64, edges: u64, v: u32, value: impl Fn(u32) -> u32) -> Self {
        let ones = live.ones;
        let lo = u.trailing_zeros();
        let last = (64 - u.leading_zeros()).min(n as u32 - 1);
        let mask = (u64::MAX >> (63 - last)) & (u64::MAX << lo);
        let mut prev = (lo > 0).then(|| value(lo - 1));
        let mut fresh = ones & !mask;
        let mut candidates = (ones | edges) & mask;
        while candidates != 0 {
            let i = candidates.trailing_zeros();
            let x = if u >> i & 1 == 1 { v } else { value(i) };
            if prev != Some(x) {
                fresh |= 1u64 << i;
                prev = Some(x);
            }
            candidates &= candidates - 1;
        }
        let mut cw = [0u32; WORD_ELEMENTS / 8];
        let mut count = 0u32;
        for (c, w) in cw.iter_mut().enumerate().take(live.ncw) {
            let b = REVERSED[(fresh >> (8 * c)) as u8 as usize];
            *w = count << 8 | u32::from(b);
            count += u32::from(group::INDEX_TABLE[b as usize]);
        }
        Window {
            fresh,
            mask,
            before: live.before(lo),
            after: live.run(last) + 1,
            cw,
            len: live.ncw + count as usize,
        }
    }

    /// Writes the new group, word `k` by `put(k, word)`: its code words, the live entries
    /// before the window, the new values at the window's run starts, the live entries
    /// after it (`copy(e, k, count)`: the `count` live entries from entry `e` to words
    /// `k..`).
    #[inline]
    fn write(
        &self,
        live: &Live,
        u: u64,
        v: u32,
        value: impl Fn(u32) -> u32,
        mut copy: impl FnMut(usize, usize, usize),
        mut put: impl FnMut(usize, u32),
    ) {
        let ncw = live.ncw;
        for (c, &w) in self.cw.iter().enumerate().take(ncw) {
            put(c, w);
        }
        copy(0, ncw, self.before);
        let mut k = ncw + self.before;
        let mut starts = self.fresh & self.mask;
        while starts != 0 {
            let i = starts.trailing_zeros();
            put(k, if u >> i & 1 == 1 { v } else { value(i) });
            k += 1;
            starts &= starts - 1;
        }
        let after = live.entries() - self.after;
        copy(self.after, k, after);
        debug_assert_eq!(k + after, self.len);
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::group;
    use super::*;

    #[test]
    fn derived_group_is_the_canonical_encoding_and_in_place_stores_match() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut in_place, mut rebuilt) = (0, 0);
        for n in [8usize, 16, 32, 64] {
            let ncw = group::code_words(n);
            let all = u64::MAX >> (64 - n);
            for _ in 0..3_000 {
                // Runs of a few values.
                let ports = 1 + next() % 4;
                let mut fpa = Vec::with_capacity(n);
                let mut cur = (next() % ports) as u32;
                for _ in 0..n {
                    if next() % 5 == 0 {
                        cur = (next() % ports) as u32;
                    }
                    fpa.push(cur);
                }
                let mut words = Vec::new();
                group::encode(&fpa, 0, &mut words);
                if next() % 3 == 0 {
                    // A redundant 1 (two neighbouring entries of one value), as in-place
                    // merges leave them.
                    let i = 1 + (next() as usize % (n - 1));
                    let mut decoded = Vec::new();
                    group::decode(&words, n, 0, &mut decoded);
                    let mut ones = Live::read(ncw, |c| words[c]).ones;
                    if ones >> i & 1 == 0 {
                        ones |= 1 << i;
                        let mut w = vec![0u32; ncw];
                        let mut c = ones;
                        while c != 0 {
                            w.push(decoded[c.trailing_zeros() as usize]);
                            c &= c - 1;
                        }
                        for (c, cw) in w[..ncw].iter_mut().enumerate() {
                            let before = (ones & ((1u64 << (8 * c)) - 1)).count_ones();
                            *cw = before << 8 | u32::from(((ones >> (8 * c)) as u8).reverse_bits());
                        }
                        words = w;
                    }
                }
                let u = all
                    & match next() % 3 {
                        0 => next() & next(),
                        1 => {
                            // An aligned block, as a prefix's elements are.
                            let len = 1usize << (next() % (n.trailing_zeros() as u64 + 1));
                            let at = (next() as usize % (n / len)) * len;
                            (u64::MAX >> (64 - len)) << at
                        }
                        _ => 1u64 << (next() % n as u64),
                    };
                let v = (next() % ports) as u32;
                let mut want = fpa.clone();
                for (i, w) in want.iter_mut().enumerate() {
                    if u >> i & 1 == 1 {
                        *w = v;
                    }
                }
                let live = Live::read(ncw, |c| words[c]);
                let ones = live.ones;
                let value = |i: u32| words[ncw + live.run(i)];
                let e = edges(u, all);
                if fits_in_place(ones, e, v, value) {
                    in_place += 1;
                    // The stores `patch_word` makes: `v` into each run starting in `u`.
                    let mut stored = words.clone();
                    let mut s = ones & u;
                    while s != 0 {
                        stored
                            [ncw + (ones << (63 - s.trailing_zeros())).count_ones() as usize - 1] =
                            v;
                        s &= s - 1;
                    }
                    let mut got = Vec::new();
                    group::decode(&stored, n, 0, &mut got);
                    assert_eq!(got, want, "in place: n {n} words {words:?} u {u:#x} v {v}");
                } else {
                    rebuilt += 1;
                    let w = Window::new(&live, n, u, e, v, value);
                    let mut out = vec![u32::MAX; w.len];
                    let mut copied = Vec::new();
                    let copy = |e: usize, k: usize, count: usize| {
                        copied.push((k, words[ncw + e..ncw + e + count].to_vec()))
                    };
                    w.write(&live, u, v, value, copy, |k, x| out[k] = x);
                    for (k, c) in copied {
                        out[k..k + c.len()].copy_from_slice(&c);
                    }
                    let mut got = Vec::new();
                    group::decode(&out, n, 0, &mut got);
                    assert_eq!(got, want, "n {n} words {words:?} u {u:#x} v {v}");
                    // Exact counters and entry count; the bitmap outside the window kept.
                    assert_eq!(group::group_words(n, out[ncw - 1]), out.len());
                    let fresh = Live::read(ncw, |c| out[c]).ones;
                    assert_eq!((fresh ^ ones) & !w.mask, 0, "{fresh:#x} {ones:#x}");
                    // Canonical inside the window: a 1 there starts a new value.
                    let mut q = w.mask & fresh & !1;
                    while q != 0 {
                        let i = q.trailing_zeros() as usize;
                        assert_ne!(
                            want[i],
                            want[i - 1],
                            "redundant 1 at {i}: {words:?} u {u:#x}"
                        );
                        q &= q - 1;
                    }
                }
            }
        }
        // Both ways were taken, often.
        assert!(in_place > 1_000 && rebuilt > 1_000, "{in_place} {rebuilt}");
    }
}

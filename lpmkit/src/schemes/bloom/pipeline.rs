//! The batch lookup of tables with double hashing (Bloomfwd): the paper's *match vector*
//! (§3.1), computed for a group of keys at once and resolved in a software pipeline.
//!
//! A batch is cut into groups of [`GROUP`] keys ([`GROUP_FEW`] for tables of two levels), each going through four stages; while
//! one group is in a stage, the three before it are in the next ones, so each stage's
//! cache misses have three groups' work to complete behind:
//!
//! * **A — hash and filter.** For each level (longest first) the group's level keys are
//!   hashed together (8 at a time with AVX2) and each key's `k` filter bits tested
//!   without branches (all bits loaded — gathered 8 keys at a time with AVX2 — and
//!   and-ed), setting one bit of the key's match vector. Levels of equal length (the gate
//!   and the /64 level) share their hashes. With the level hint (IPv6, `hint.rs`; its
//!   buckets prefetched one group ahead), a level is hashed and tested only for the keys
//!   whose /32 it may hold a key under (those keys listed, hashed and tested together,
//!   the bits scattered back), and not at all when none of the group's keys may match.
//!   With the /32 summary (`summary.rs`) the same, and a key whose summary line names no
//!   level is answered by the line (stage D writes it): a group whose keys all are goes
//!   no further than this. Every (key, level) whose filter matched is listed —
//!   branch-free — with its table bucket, whose head is prefetched.
//! * **B — heads.** The listed heads are read and the blocks they name prefetched.
//! * **C — blocks.** Each listed block is scanned; a key's first hit in level order (the
//!   longest matching prefix; for the gate, a range with a next hop) is its answer. The
//!   DLA entries of the keys left without one are prefetched.
//! * **D — bottom.** Those keys take their summary answer, read their DLA entry or take
//!   the default route.

use super::cpe::top_key;
use super::hash::hash;
use super::kernel::{filter_mask, hash_keys};
use super::BloomTable;
use crate::prefix::Address;
use crate::simd::Kernels;

/// Keys per group.
pub(crate) const GROUP: usize = 32;
/// Keys per group for tables of at most two levels (IPv4 CPE): less work per key, so a
/// larger group keeps the same number of cache misses in flight.
pub(crate) const GROUP_FEW: usize = 64;
/// Groups in flight (the stages).
const DEPTH: usize = 4;

/// One group's state between the stages: `G` keys; `P` = `G` × the most levels.
struct Group<const P: usize, const G: usize> {
    /// Index of the group's first key in the batch.
    base: usize,
    /// Keys in the group.
    n: usize,
    top: [u64; G],
    /// Listed probes: key, level, bucket (stage A) then block position (stage B).
    np: usize,
    pk: [u8; P],
    pl: [u8; P],
    hd: [u32; P],
    /// Per key, the answer without a hit in the levels (the summary's; 0: the bottom).
    fb: [u32; G],
    /// Keys answered by a level.
    done: u64,
}

impl<const P: usize, const G: usize> Group<P, G> {
    fn new() -> Self {
        Group {
            base: 0,
            n: 0,
            top: [0; G],
            np: 0,
            pk: [0; P],
            pl: [0; P],
            hd: [0; P],
            fb: [0; G],
            done: 0,
        }
    }
}

impl<A: Address> BloomTable<A> {
    /// [`BloomTable::batch`] for double hashing, in groups of `G` keys, with room for
    /// `P / G` levels.
    pub(crate) fn batch_km<const P: usize, const G: usize>(
        &self,
        addrs: &[A],
        out: &mut [u32],
        simd: Kernels,
    ) {
        debug_assert!(self.levels.len() * G <= P && self.levels.len() <= 16);
        let groups = addrs.len().div_ceil(G);
        let mut ring: [Group<P, G>; DEPTH] = core::array::from_fn(|_| Group::new());
        for c in 0..groups + DEPTH - 1 {
            if c + 1 < groups {
                // The next group's hint slots (and its keys, read again next round).
                let next = &addrs[(c + 1) * G..((c + 2) * G).min(addrs.len())];
                self.prefetch_hints::<G>(next);
            }
            if c < groups {
                let g = &mut ring[c % DEPTH];
                let base = c * G;
                let end = (base + G).min(addrs.len());
                if self.summary.is_some() {
                    self.stage_a_sparse(g, base, &addrs[base..end]);
                } else {
                    self.stage_a(g, base, &addrs[base..end], simd);
                }
            }
            if c >= 1 && c - 1 < groups {
                self.stage_b(&mut ring[(c - 1) % DEPTH]);
            }
            if c >= 2 && c - 2 < groups {
                self.stage_c(&mut ring[(c - 2) % DEPTH], addrs, out);
            }
            if c >= 3 && c - 3 < groups {
                self.stage_d(&ring[(c - 3) % DEPTH], out);
            }
        }
    }

    /// Before stage A: prefetches the level-hint slots of `addrs` and the keys two groups
    /// ahead.
    #[inline(always)]
    fn prefetch_hints<const G: usize>(&self, addrs: &[A]) {
        if self.guided() {
            for a in addrs {
                self.prefetch_probe(top_key(*a));
            }
            let ahead = addrs.as_ptr().wrapping_add(G);
            for i in (0..core::mem::size_of_val(addrs)).step_by(64) {
                crate::simd::prefetch(ahead.cast::<u8>().wrapping_add(i));
            }
        }
    }

    /// Stage A: match vectors, the probe list, heads prefetched.
    #[inline(always)]
    fn stage_a<const P: usize, const G: usize>(
        &self,
        g: &mut Group<P, G>,
        base: usize,
        addrs: &[A],
        simd: Kernels,
    ) {
        let n = addrs.len();
        let levels = &self.levels[..];
        let hs = &self.hashing;
        g.base = base;
        g.n = n;
        g.done = 0;
        for (t, &a) in g.top.iter_mut().zip(addrs) {
            *t = top_key(a);
        }
        let mut keys = [0u64; G];
        let (mut h1, mut h2) = ([0u32; G], [0u32; G]);
        let mut th = [[0u32; G]; 16];
        let mut src = [0usize; 16];
        let mut mask = [0u16; G];
        // The level hint: the levels each key may match at (all without a hint).
        let mut allow = [u16::MAX; G];
        let mut any = u16::MAX;
        let guided = self.guided();
        if guided {
            any = 0;
            for ((a, f), &t) in allow.iter_mut().zip(&mut g.fb).zip(&g.top[..n]) {
                let (levels, fallback) = self.probe(t);
                *a = levels as u16;
                *f = fallback;
                any |= *a;
            }
            if any == 0 {
                // Every key answered by its summary line: nothing to hash or test.
                g.np = 0;
                return;
            }
        }
        // The length and level of the hashes in h1/h2 (a level of all the group's keys).
        let mut dense: Option<(u8, usize)> = None;
        let mut idx = [0u8; G];
        for (li, level) in levels.iter().enumerate() {
            if any >> li & 1 == 0 {
                // No key of the group can match here: nothing to hash or test.
                src[li] = li;
                continue;
            }
            // The keys the hint lets match here, listed (branch-free).
            let mut m = n;
            if guided {
                m = 0;
                for (i, &a) in allow[..n].iter().enumerate() {
                    idx[m] = i as u8;
                    m += (a >> li & 1) as usize;
                }
            }
            if m < n {
                // Hash and test only those (compacted), then scatter.
                src[li] = li;
                if m == 0 {
                    continue;
                }
                let (mut c1, mut c2, mut ct) = ([0u32; G], [0u32; G], [0u32; G]);
                let mut cm = [0u16; G];
                for (k, &i) in keys[..m].iter_mut().zip(&idx[..m]) {
                    *k = g.top[i as usize] & level.mask;
                }
                hash_keys(
                    simd,
                    hs,
                    &keys[..m],
                    &mut c1[..m],
                    &mut c2[..m],
                    &mut ct[..m],
                );
                filter_mask(simd, &level.filter, &c1, &c2, m, &mut cm, 0);
                for j in 0..m {
                    let i = idx[j] as usize;
                    th[li][i] = ct[j];
                    mask[i] |= (cm[j] & 1) << li;
                }
                continue;
            }
            if let Some((_, d)) = dense.filter(|&(len, _)| len == level.len) {
                src[li] = d;
            } else {
                for (k, &t) in keys[..n].iter_mut().zip(&g.top[..n]) {
                    *k = t & level.mask;
                }
                hash_keys(
                    simd,
                    hs,
                    &keys[..n],
                    &mut h1[..n],
                    &mut h2[..n],
                    &mut th[li][..n],
                );
                src[li] = li;
                dense = Some((level.len, li));
            }
            filter_mask(simd, &level.filter, &h1, &h2, n, &mut mask, li);
        }
        let mut np = 0usize;
        if guided {
            // Few keys with few levels each: their set bits only.
            for (i, &m) in mask[..n].iter().enumerate() {
                let mut m = m & allow[i];
                while m != 0 {
                    g.pk[np] = i as u8;
                    g.pl[np] = m.trailing_zeros() as u8;
                    np += 1;
                    m &= m - 1;
                }
            }
        } else {
            // Branch-free.
            for (i, &m) in mask[..n].iter().enumerate() {
                for l in 0..levels.len() {
                    g.pk[np] = i as u8;
                    g.pl[np] = l as u8;
                    np += (m >> l & 1) as usize;
                }
            }
        }
        g.np = np;
        for p in 0..np {
            let l = g.pl[p] as usize;
            let t = &levels[l].table;
            let b = t.bucket(th[src[l]][g.pk[p] as usize]);
            t.prefetch_head(b);
            g.hd[p] = b as u32;
        }
    }

    /// Stage A with the summary: the keys that reach the levels are few and have few
    /// levels each (`lookup::batch_summary` answered the others), so each key's allowed
    /// levels are hashed and filtered one by one (scalar hashing: there are seldom eight
    /// keys of one level to hash together) instead of level by level over the group.
    #[inline(always)]
    fn stage_a_sparse<const P: usize, const G: usize>(
        &self,
        g: &mut Group<P, G>,
        base: usize,
        addrs: &[A],
    ) {
        let n = addrs.len();
        let hs = &self.hashing;
        g.base = base;
        g.n = n;
        g.done = 0;
        let all = u32::MAX >> (32 - self.levels.len().max(1) as u32);
        let mut np = 0usize;
        for (i, &a) in addrs.iter().enumerate() {
            let top = top_key(a);
            g.top[i] = top;
            let (allowed, fallback) = self.probe(top);
            g.fb[i] = fallback;
            let mut m = allowed & all;
            let mut hashed = u8::MAX;
            let (mut h1, mut h2, mut th) = (0u32, 0u32, 0u32);
            while m != 0 {
                let l = m.trailing_zeros() as usize;
                m &= m - 1;
                let level = &self.levels[l];
                let key = top & level.mask;
                if level.len != hashed {
                    h1 = hash(hs.kind, key, 0);
                    if hs.k > 1 {
                        h2 = hash(hs.kind, key, 1);
                    }
                    th = if hs.reuses() { h1 } else { hs.table_hash(key) };
                    hashed = level.len;
                }
                if level.filter.contains_km(h1, h2) {
                    let b = level.table.bucket(th);
                    level.table.prefetch_head(b);
                    g.pk[np] = i as u8;
                    g.pl[np] = l as u8;
                    g.hd[np] = b as u32;
                    np += 1;
                }
            }
        }
        g.np = np;
    }

    /// Stage B: heads read, blocks prefetched.
    #[inline(always)]
    fn stage_b<const P: usize, const G: usize>(&self, g: &mut Group<P, G>) {
        for p in 0..g.np {
            let t = &self.levels[g.pl[p] as usize].table;
            let h = t.head(g.hd[p] as usize);
            t.prefetch_block(h);
            t.prefetch_block_tail(h);
            g.hd[p] = h;
        }
    }

    /// Stage C: blocks scanned; the bottom of the keys left prefetched.
    #[inline(always)]
    fn stage_c<const P: usize, const G: usize>(
        &self,
        g: &mut Group<P, G>,
        addrs: &[A],
        out: &mut [u32],
    ) {
        for p in 0..g.np {
            let i = g.pk[p] as usize;
            let h = g.hd[p];
            if h == 0 || g.done >> i & 1 != 0 {
                continue;
            }
            let level = &self.levels[g.pl[p] as usize];
            if let Some(v) = level.table.scan(h, g.top[i] & level.mask) {
                let nh = self.resolve(level, v, addrs[g.base + i]);
                if nh != 0 {
                    out[g.base + i] = nh;
                    g.done |= 1 << i;
                }
            }
        }
        if self.dla.is_some() {
            for i in 0..g.n {
                if g.done >> i & 1 == 0 {
                    self.prefetch_bottom(g.top[i]);
                }
            }
        }
    }

    /// Stage D: the bottom.
    #[inline(always)]
    fn stage_d<const P: usize, const G: usize>(&self, g: &Group<P, G>, out: &mut [u32]) {
        for i in 0..g.n {
            if g.done >> i & 1 == 0 {
                out[g.base + i] = match g.fb[i] {
                    0 => self.bottom(g.top[i]),
                    f => f,
                };
            }
        }
    }
}

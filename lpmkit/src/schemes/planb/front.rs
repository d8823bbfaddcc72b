//! The front stage (an lpmkit extension): one read that answers most keys before any
//! tree.
//!
//! * [`Front::Direct`] (`N` ≤ 24 bits): an array of `2^N` leaf values (see `tree.rs`)
//!   indexed by the key's first `N` bits, as DIR-24-8's or DXR's direct pointing: the
//!   next hop when no interval boundary falls strictly inside that `/N` block, else the
//!   block's own tree (its boundaries, in its key chunk).
//! * [`Front::Lines`] (IPv6, 32-bit keys): one 64-byte *line* per listed /32, found by a
//!   perfect hash of the /32. The listed /32s are those where the table's routes begin
//!   (the first /32 of every route), which include every /32 with an interval boundary
//!   inside. A line is `[k1 … k7, tag, v0 … v7]`: the last addresses (bits 32–63,
//!   biased) of the /32's first seven intervals, the /32 itself, then eight leaf values;
//!   the key's bits 32–63 compared with the seven keys at once (one 256-bit compare,
//!   the tag's lane masked off) give the value. A /32 with at most eight
//!   intervals (on a full table nearly all of them) is answered by its line alone; a
//!   larger one splits its intervals into eight groups, and the line's values name the
//!   groups' trees ([`SAME_CHUNK`]: searched with the same key chunk). A /32 the hash
//!   does not list reads some other /32's line (or an empty one), whose tag differs: the
//!   answer is [`MISS`], and the key goes to the *summary* of the /16s (`2^16` words
//!   indexed by the key's first 16 bits, 256 KiB): its /16's next hop when no interval
//!   boundary falls inside the /16 (most of the unrouted and sparsely routed address
//!   space), else [`LINES`], and the main tree answers the key (such a /32 has no
//!   boundary inside). Keys of listed /32s never read the summary.
//!
//! **The perfect hash** (in the manner of PTHash: Pibiri and Trani, SIGIR 2021): two
//! 32-bit multiplicative hashes of the /32 (Fibonacci hashing, odd multipliers). The
//! first one's top bits pick one of `r` buckets (`r` a power of two, three to six /32s
//! per bucket), whose *pilot* (a 32-bit word, from a table of `r` that stays in the
//! first-level cache) is mixed into the second, reduced to the `m` lines (the listed
//! /32s are 90 % of `m`). The build places the buckets largest first, trying pilots
//! until every /32 of the bucket lands on a free line; a lookup is two 32-bit
//! multiplications, a shift, a pilot, one multiply-shift reduction and a line, without a
//! branch or a second line.

#[cfg(doc)]
use super::tree::SAME_CHUNK;
use super::tree::{Key, CHILD, MISS};
use crate::mem::TableBuf;

/// `u32` words per line.
pub(crate) const LINE_WORDS: usize = 16;
/// Keys per line (before the tag).
pub(crate) const LINE_KEYS: usize = 7;
/// Where a line's tag is.
pub(crate) const LINE_TAG: usize = 7;
/// Where a line's values start.
pub(crate) const LINE_VALS: usize = 8;

/// Bits of the key the summary indexes.
pub(crate) const SUMMARY_BITS: u32 = 16;
/// The summary entry of a /16 with a listed /32 in it (neither a next hop nor a child
/// value: a depth of 0 with root 1): its keys whose /32 is not listed search the main
/// tree.
pub(crate) const LINES: u32 = CHILD | 1;

/// The odd multiplier of the bucket hash.
pub(crate) const KB: u32 = 0x9e37_79b1;
/// The odd multiplier of the line hash.
pub(crate) const KL: u32 = 0x85eb_ca77;
/// The multiplier of the pilot mix.
const K3: u64 = 0x1656_67b1_9e37_79f9;
/// Seeds the build tries before it grows the line count.
const SEEDS: [u32; 4] = [0, 0x1ce4_e5b9, 0x1331_11eb, 0x6659_fd93];
/// Pilots tried per bucket before another seed.
const MAX_PILOT: u32 = 1 << 16;

/// The front of a PlanB table.
pub(crate) enum Front {
    /// No front: every lookup starts at the main tree.
    None,
    /// `2^bits` values indexed by the key's first `bits` bits.
    Direct {
        /// Bits indexed.
        bits: u32,
        /// The values.
        table: TableBuf<u32>,
    },
    /// One line per listed /32 (IPv6).
    Lines(LineFront),
}

impl Front {
    /// Bits of the key the front reads (0 for none).
    pub(crate) fn bits(&self) -> u32 {
        match self {
            Front::None => 0,
            Front::Direct { bits, .. } => *bits,
            Front::Lines(_) => 32,
        }
    }

    /// Bytes the lookups read.
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Front::None => 0,
            Front::Direct { table, .. } => table.len() * 4,
            Front::Lines(l) => l.bytes(),
        }
    }
}

/// The /32 lines and their perfect hash (see the module docs).
pub(crate) struct LineFront {
    /// `m` lines of [`LINE_WORDS`] words.
    pub(crate) lines: TableBuf<u32>,
    /// One mixed pilot per bucket.
    pub(crate) pilots: TableBuf<u32>,
    /// `2^SUMMARY_BITS` entries: a next hop, [`LINES`] or [`MISS`] per /16.
    pub(crate) summary: TableBuf<u32>,
    /// Lines.
    pub(crate) m: u32,
    /// `32 − log2(r)`: the bucket hash shifted right by it is the bucket (`r` buckets).
    pub(crate) shift: u32,
    /// The hash seed.
    pub(crate) seed: u32,
    /// /32s listed.
    pub(crate) listed: usize,
}

/// The bucket and line hashes of a /32 (before the pilot): two multiplicative hashes
/// of `tag ^ seed`; the bucket is the first one's top `32 − shift` bits. The line hash is
/// a permutation of the /32's bits, so distinct /32s never share it.
#[inline(always)]
fn hashes(tag: u32, seed: u32, shift: u32) -> (u32, u32) {
    let t = tag ^ seed;
    (t.wrapping_mul(KB) >> shift, t.wrapping_mul(KL))
}

/// `x` reduced to `0..n` (Lemire's multiply-shift).
#[inline(always)]
fn reduce(x: u32, n: u32) -> u32 {
    ((x as u64 * n as u64) >> 32) as u32
}

/// A pilot as mixed into the line hash.
#[inline(always)]
fn mix(pilot: u32) -> u32 {
    ((pilot as u64).wrapping_mul(K3) >> 32) as u32
}

impl LineFront {
    /// The front of `lines` (`(tag, line)`, tags distinct) behind `summary`
    /// (`2^SUMMARY_BITS` entries).
    pub(crate) fn new(lines: &[(u32, [u32; LINE_WORDS])], summary: &[u32]) -> LineFront {
        debug_assert_eq!(summary.len(), 1 << SUMMARY_BITS);
        let n = lines.len();
        let tags: Vec<u32> = lines.iter().map(|l| l.0).collect();
        // The largest power of two up to n / 3 (at least 2): three to six /32s per bucket.
        let r = ((n / 3).max(2) as u32 + 1).next_power_of_two() / 2;
        let shift = 32 - r.trailing_zeros();
        let mut m = ((n as u64 * 10).div_ceil(9) as u32).max(1);
        loop {
            for seed in SEEDS {
                if let Some((pilots, slots)) = place(&tags, shift, m, seed) {
                    let hash = (pilots, slots, shift, m, seed);
                    return Self::fill(lines, &tags, summary, hash);
                }
            }
            m += m / 8 + 1;
        }
    }

    /// The front of `lines` at the slots the hash `(pilots, slots, shift, m, seed)`
    /// placed them, behind `summary`.
    fn fill(
        lines: &[(u32, [u32; LINE_WORDS])],
        tags: &[u32],
        summary: &[u32],
        (pilots, slots, shift, m, seed): (Vec<u32>, Vec<u32>, u32, u32, u32),
    ) -> LineFront {
        // A tag no listed /32 has, for the empty lines.
        let mut sorted = tags.to_vec();
        sorted.sort_unstable();
        let mut empty_tag = 0u32;
        for t in sorted {
            if t == empty_tag {
                empty_tag += 1;
            } else if t > empty_tag {
                break;
            }
        }
        let mut empty = [MISS; LINE_WORDS];
        empty[..LINE_KEYS].fill(<u32 as Key>::PAD);
        empty[LINE_TAG] = empty_tag;
        let mut table = TableBuf::<u32>::zeroed(m as usize * LINE_WORDS);
        for chunk in table.chunks_exact_mut(LINE_WORDS) {
            chunk.copy_from_slice(&empty);
        }
        for (&(tag, line), &slot) in lines.iter().zip(&slots) {
            debug_assert_eq!(line[LINE_TAG], tag);
            let at = slot as usize * LINE_WORDS;
            table[at..at + LINE_WORDS].copy_from_slice(&line);
        }
        LineFront {
            lines: table,
            pilots: TableBuf::from_slice(&pilots),
            summary: TableBuf::from_slice(summary),
            m,
            shift,
            seed,
            listed: lines.len(),
        }
    }

    /// Bytes of the lines, the pilots and the summary.
    pub(crate) fn bytes(&self) -> usize {
        (self.lines.len() + self.pilots.len() + self.summary.len()) * 4
    }

    /// The summary entry of the /32 `tag`'s /16.
    #[inline(always)]
    pub(crate) fn summary_of(&self, tag: u32) -> u32 {
        // The index is below 2^SUMMARY_BITS, the summary's length.
        self.summary[(tag >> (32 - SUMMARY_BITS)) as usize]
    }

    /// The line a /32 is listed at if it is listed.
    #[inline(always)]
    pub(crate) fn line_of(&self, tag: u32) -> usize {
        let (b, hl) = hashes(tag, self.seed, self.shift);
        reduce(hl ^ self.pilots[b as usize], self.m) as usize
    }

    /// [`line_of`](Self::line_of) without the bounds check of the pilot.
    #[inline(always)]
    pub(crate) fn line_of_fast(&self, tag: u32) -> usize {
        let (b, hl) = hashes(tag, self.seed, self.shift);
        debug_assert!((b as usize) < self.pilots.len());
        // SAFETY: the bucket hash shifted right by `shift` is below `r = 2^(32 − shift)`,
        // the pilots' length.
        let p = unsafe { *self.pilots.get_unchecked(b as usize) };
        reduce(hl ^ p, self.m) as usize
    }

    /// The words of line `i`.
    #[inline(always)]
    pub(crate) fn line(&self, i: usize) -> &[u32] {
        &self.lines[i * LINE_WORDS..(i + 1) * LINE_WORDS]
    }
}

/// The lines of `tags` (a perfect hash onto `m` lines through `r` buckets), or `None`
/// if some bucket finds no pilot with this seed.
fn place(tags: &[u32], shift: u32, m: u32, seed: u32) -> Option<(Vec<u32>, Vec<u32>)> {
    let r = 1usize << (32 - shift);
    let mut buckets: Vec<Vec<usize>> = vec![Vec::new(); r];
    for (i, &t) in tags.iter().enumerate() {
        buckets[hashes(t, seed, shift).0 as usize].push(i);
    }
    let mut order: Vec<usize> = (0..r).collect();
    // Largest buckets first; ties in bucket order (deterministic).
    order.sort_by_key(|&b| core::cmp::Reverse(buckets[b].len()));
    let mut taken = vec![false; m as usize];
    let mut pilots = vec![0u32; r];
    let mut slots = vec![0u32; tags.len()];
    let mut trial: Vec<u32> = Vec::new();
    for b in order {
        if buckets[b].is_empty() {
            break;
        }
        let mut placed = false;
        for p in 0..MAX_PILOT {
            let pm = mix(p);
            trial.clear();
            let fits = buckets[b].iter().all(|&i| {
                let (_, hl) = hashes(tags[i], seed, shift);
                let s = reduce(hl ^ pm, m);
                let free = !taken[s as usize] && !trial.contains(&s);
                trial.push(s);
                free
            });
            if fits {
                for (&i, &s) in buckets[b].iter().zip(&trial) {
                    taken[s as usize] = true;
                    slots[i] = s;
                }
                pilots[b] = pm;
                placed = true;
                break;
            }
        }
        if !placed {
            return None;
        }
    }
    Some((pilots, slots))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(tag: u32, v: u32) -> [u32; LINE_WORDS] {
        let mut l = [0u32; LINE_WORDS];
        l[LINE_TAG] = tag;
        l[LINE_VALS] = v;
        l
    }

    #[test]
    fn every_listed_tag_finds_its_line() {
        for n in [0usize, 1, 2, 7, 100, 5000, 40_000] {
            // Clustered tags (as /32s are), including 0 and u32::MAX.
            let lines: Vec<(u32, [u32; LINE_WORDS])> = (0..n as u32)
                .map(|i| (i.wrapping_mul(65_536).wrapping_add(i % 7), i + 1))
                .chain(core::iter::once((u32::MAX, 77)))
                .map(|(t, v)| (t, line(t, v)))
                .collect();
            let f = LineFront::new(&lines, &vec![LINES; 1 << SUMMARY_BITS]);
            assert!(f.m as usize >= lines.len());
            for (t, l) in &lines {
                let got = f.line(f.line_of(*t));
                assert_eq!(got, &l[..], "n {n} tag {t}");
                assert_eq!(f.line_of_fast(*t), f.line_of(*t));
            }
            // Unlisted tags read a line whose tag is not theirs.
            for t in [1u32, 3, 65_537, 0xdead_beef] {
                if lines.iter().all(|l| l.0 != t) {
                    let l = f.line(f.line_of(t));
                    assert!(l[LINE_TAG] != t || l[LINE_VALS] == MISS, "n {n} absent {t}");
                }
            }
        }
    }
}

//! Building a PlanB table from the `Rib`: elementary intervals, blocks per key chunk, one
//! linearized tree per block, and the front.
//!
//! 1. **Elementary intervals.** The shared range projection turns the table into disjoint
//!    address ranges with one next hop each (equal neighbours merged): exactly the
//!    paper's elementary intervals, whose boundaries are the keys searched.
//! 2. **Blocks.** A key is searched in chunks of `W` bits (`W` = 64 or 32, the key width):
//!    the main block is the whole address space, searched with the first chunk. A range
//!    boundary whose bits below the chunk are not all zero lies strictly inside one
//!    *sub-block* (a `/(s+1)·W` prefix); that sub-block becomes one interval of its own,
//!    whose value names a child block, searched with the next chunk. So a table whose
//!    routes are at most `/W` long is one tree (the paper's scope: `/64` with 64-bit
//!    keys), and longer routes cost a second tree only where they are.
//! 3. **Trees.** Each block's intervals become one tree (`tree.rs`), children first.
//! 4. **Front.** The direct table (`front.rs`), whose blocks are blocks like any other (a
//!    window of `N` bits, searched with the chunk that holds bit `N`); or one line per
//!    listed /32, holding the /32's intervals (at most eight) or eight groups of them,
//!    each group with its own tree. With the lines, the main tree leaves every /32 with
//!    a boundary inside to them (such a /32 is always listed): it merges them with
//!    their neighbours and builds no tree below /32.

use std::collections::HashMap;

use super::front::{
    Front, LineFront, LINES, LINE_KEYS, LINE_TAG, LINE_VALS, LINE_WORDS, SUMMARY_BITS,
};
use super::tree::{
    child, Forest, ForestBuilder, Key, Layout, TreeShape, MAX_NEXT_HOP, MISS, SAME_CHUNK,
};
use super::PlanbConfig;
use crate::fib::BuildError;
use crate::prefix::Address;
use crate::rib::Rib;
use crate::schemes::common::check_next_hop;

pub(super) const NAME: &str = "planb";

/// Trees of one stage (blocks searched with one key chunk).
#[derive(Clone, Debug, Default)]
pub(crate) struct StageInfo {
    /// Trees.
    pub trees: usize,
    /// Keys (interval boundaries) in them.
    pub keys: usize,
    /// Nodes.
    pub nodes: usize,
    /// Trees by depth (index = levels).
    pub depths: Vec<usize>,
}

/// Structure figures gathered by the build.
#[derive(Clone, Debug, Default)]
pub(crate) struct BuildInfo {
    /// Elementary intervals of the table.
    pub intervals: usize,
    /// Routes.
    pub routes: usize,
    /// The main tree's shape (none with a direct front).
    pub main: Option<TreeShape>,
    /// Per stage (index = key chunk): the trees.
    pub stages: Vec<StageInfo>,
    /// Front lines that hold all their /32's intervals, and lines whose values name
    /// group trees.
    pub line_groups: [usize; 2],
    /// The tree built last.
    pub last_tree: Option<TreeShape>,
    /// Milliseconds the build took.
    pub build_ms: f64,
}

/// What the build hands to the table.
pub(super) struct Parts<L: Layout> {
    pub forest: Forest<L>,
    /// The main tree as a child value (0 when the front answers every key).
    pub main: u32,
    pub front: Front,
    pub info: BuildInfo,
}

/// The key chunk `s` of `a` (`w` bits from bit `s·w`), as the low bits of a `u64`.
#[inline(always)]
pub(crate) fn chunk<A: Address>(a: A, s: u32, w: u32) -> u64 {
    let v = a.to_u128() << (128 - A::BITS as u32);
    ((v << (s * w)) >> (128 - w)) as u64
}

struct Builder<'a, A: Address, L: Layout> {
    ranges: &'a [(A, u32)],
    forest: ForestBuilder<L>,
    /// Blocks built, by (first address, prefix length): the child value.
    memo: HashMap<(A, u8), u32>,
    /// The main tree leaves the /32s with boundaries inside to the front's lines (which
    /// list every one of them): their intervals merge with their neighbours.
    coarse_main: bool,
    info: BuildInfo,
}

impl<A: Address, L: Layout> Builder<'_, A, L> {
    const W: u32 = <L::K as Key>::BITS;

    /// The index of the range holding `a`.
    fn range_of(&self, a: A) -> usize {
        self.ranges.partition_point(|r| r.0 <= a) - 1
    }

    /// The block `first/len` as a leaf value: its next hop when no boundary lies inside
    /// it, else its tree (built once).
    fn value(&mut self, first: A, len: u8) -> Result<u32, BuildError> {
        let last = first.or(A::hostmask(len));
        let lo = self.range_of(first);
        let hi = self.ranges.partition_point(|r| r.0 <= last);
        if hi == lo + 1 {
            return Ok(self.ranges[lo].1);
        }
        self.block(first, len, lo, hi)
    }

    /// The tree of the block `first/len`, whose ranges are `ranges[lo..hi]`
    /// (`ranges[lo]` holds `first`, the others start inside the block), as a child value.
    fn block(&mut self, first: A, len: u8, lo: usize, hi: usize) -> Result<u32, BuildError> {
        if let Some(&v) = self.memo.get(&(first, len)) {
            return Ok(v);
        }
        let entries = self.entries(first, len, lo, hi)?;
        let v = self.tree(len as u32 / Self::W, &entries)?;
        self.memo.insert((first, len), v);
        Ok(v)
    }

    /// The intervals of the block `first/len` (ranges as for [`block`](Self::block)) in
    /// its key chunk: `(first chunk value, leaf value)`, ascending, equal neighbours
    /// merged; a sub-block with a boundary inside is one interval whose value names its
    /// tree (built here).
    fn entries(
        &mut self,
        first: A,
        len: u8,
        lo: usize,
        hi: usize,
    ) -> Result<Vec<(u64, u32)>, BuildError> {
        let w = Self::W;
        let s = len as u32 / w;
        let sub_len = ((s + 1) * w) as u8;
        let sub_host = A::hostmask(sub_len);
        let last_chunk = chunk(first.or(A::hostmask(len)), s, w);

        struct Kid<A> {
            entry: usize,
            lo: usize,
            hi: usize,
            first: A,
        }
        // (first chunk value of the interval, leaf value; a child's is set below).
        let mut entries: Vec<(u64, u32)> = vec![(chunk(first, s, w), self.ranges[lo].1)];
        let mut kids: Vec<Kid<A>> = Vec::new();
        let push = |entries: &mut Vec<(u64, u32)>, c: u64, v: u32| -> usize {
            let last = entries.last_mut().expect("the first entry stays");
            if last.0 == c {
                last.1 = v;
            } else {
                entries.push((c, v));
            }
            entries.len() - 1
        };
        // The chunk value of the split sub-block last opened.
        let mut open: Option<u64> = None;
        let mut cur = self.ranges[lo].1;
        for i in lo + 1..hi {
            let (b, nh) = self.ranges[i];
            let c = chunk(b, s, w);
            if open == Some(c) {
                cur = nh;
                continue;
            }
            if let Some(sc) = open.take() {
                kids.last_mut().expect("opened").hi = i;
                // The next sub-block (c > sc) starts with what the ranges so far give it.
                push(&mut entries, sc + 1, cur);
            }
            if b.and(sub_host) == A::ZERO {
                push(&mut entries, c, nh);
            } else {
                let entry = push(&mut entries, c, 0);
                kids.push(Kid {
                    entry,
                    lo: i - 1,
                    hi,
                    first: b.and(A::netmask(sub_len)),
                });
                open = Some(c);
            }
            cur = nh;
        }
        if let Some(sc) = open {
            if sc < last_chunk {
                push(&mut entries, sc + 1, cur);
            }
        }
        let coarse = self.coarse_main && len == 0 && sub_len == 32;
        for k in &kids {
            entries[k.entry].1 = if coarse {
                // Never read: the front answers every key of this /32. The value of the
                // interval before merges it away.
                match k.entry {
                    0 => 0,
                    e => entries[e - 1].1,
                }
            } else {
                match self.memo.get(&(k.first, sub_len)) {
                    Some(&v) => v,
                    None => self.block(k.first, sub_len, k.lo, k.hi)?,
                }
            };
        }
        // Merge equal neighbours (children are never equal: their roots differ).
        entries.dedup_by(|next, prev| next.1 == prev.1);
        Ok(entries)
    }

    /// The tree over `entries` (searched with key chunk `s`), as a child value.
    fn tree(&mut self, s: u32, entries: &[(u64, u32)]) -> Result<u32, BuildError> {
        let ends: Vec<L::K> = entries[1..]
            .iter()
            .map(|&(c, _)| L::K::bias(c - 1))
            .collect();
        let vals: Vec<u32> = entries.iter().map(|e| e.1).collect();
        let shape = self.forest.tree(&ends, &vals)?;
        let st = {
            let stages = &mut self.info.stages;
            if stages.len() <= s as usize {
                stages.resize(s as usize + 1, StageInfo::default());
            }
            &mut stages[s as usize]
        };
        st.trees += 1;
        st.keys += ends.len();
        st.nodes += shape.nodes as usize;
        if st.depths.len() <= shape.depth as usize {
            st.depths.resize(shape.depth as usize + 1, 0);
        }
        st.depths[shape.depth as usize] += 1;
        self.info.last_tree = Some(shape);
        Ok(child(shape.root, shape.depth))
    }

    /// The front line of the /32 `tag` (see `front.rs`).
    fn line(&mut self, tag: u32) -> Result<[u32; LINE_WORDS], BuildError> {
        let first = A::from_u128((tag as u128) << (A::BITS as u32 - 32));
        let last = first.or(A::hostmask(32));
        let lo = self.range_of(first);
        let hi = self.ranges.partition_point(|r| r.0 <= last);
        let entries = self.entries(first, 32, lo, hi)?;
        let mut line = [0u32; LINE_WORDS];
        line[..LINE_KEYS].fill(<u32 as Key>::PAD);
        line[LINE_TAG] = tag;
        let groups = LINE_KEYS + 1;
        if entries.len() <= groups {
            for (i, e) in entries.iter().enumerate() {
                if i > 0 {
                    line[i - 1] = <u32 as Key>::bias(e.0 - 1);
                }
                line[LINE_VALS + i] = e.1;
            }
            self.info.line_groups[0] += 1;
            return Ok(line);
        }
        // Eight groups of intervals (see `line_groups`); a group of several intervals is
        // searched in its own tree, with the same key chunk.
        self.info.line_groups[1] += 1;
        let starts = line_groups(&entries, groups);
        for (g, &a) in starts.iter().enumerate() {
            let b = starts.get(g + 1).copied().unwrap_or(entries.len());
            if g > 0 {
                line[g - 1] = <u32 as Key>::bias(entries[a].0 - 1);
            }
            line[LINE_VALS + g] = if b - a == 1 {
                entries[a].1
            } else {
                self.tree(1, &entries[a..b])? | SAME_CHUNK
            };
        }
        Ok(line)
    }
}

/// How a /32 of more than `groups` intervals is split into at most `groups` runs of
/// consecutive intervals for its line (the first interval of each run, ascending, the
/// first 0): a run of one interval is answered by the line itself, a longer one by its
/// own tree.
///
/// The runs minimise the tree levels a key uniform over the /32 reads (each run's share
/// of the /32 times its tree's depth, 0 for one interval): among runs of equal size and,
/// for each `k < groups`, the `k` largest intervals as runs of their own with the
/// intervals between them as runs (those of the longest parts split in more equal parts
/// while runs are left over).
/// So a /32 whose routes are a few clusters of small prefixes in a large remainder
/// answers keys in the remainder from its line, and one of evenly spread prefixes keeps
/// runs of equal size and shallow trees.
fn line_groups(entries: &[(u64, u32)], groups: usize) -> Vec<usize> {
    let n = entries.len();
    debug_assert!(n > groups && groups >= 2);
    let start = |i: usize| entries.get(i).map_or(1 << 32, |e| e.0);
    // Tree levels over `len` intervals: leaves of eight, inner nodes of seventeen
    // children (`Compact`); 0 for one interval, answered by the line.
    let depth = |len: usize| -> u64 {
        let (mut d, mut cap) = (0, 1);
        while cap < len {
            cap = if d == 0 { 8 } else { cap * 17 };
            d += 1;
        }
        d
    };
    let end = |k: usize, s: &[usize]| s.get(k + 1).copied().unwrap_or(n);
    let cost = |s: &[usize]| -> u128 {
        (0..s.len())
            .map(|k| (start(end(k, s)) - start(s[k])) as u128 * depth(end(k, s) - s[k]) as u128)
            .sum()
    };
    let mut best: Vec<usize> = (0..groups).map(|g| g * n / groups).collect();
    let mut best_cost = cost(&best);
    let mut by_size: Vec<usize> = (0..n).collect();
    by_size.sort_by_key(|&i| core::cmp::Reverse(start(i + 1) - start(i)));
    for k in 1..groups {
        let mut single = by_size[..k].to_vec();
        single.sort_unstable();
        // The runs: `(first, end, parts)`; the intervals between the `k` are runs too.
        let mut runs: Vec<(usize, usize, usize)> = Vec::with_capacity(groups);
        let mut next = 0;
        for &i in &single {
            if i > next {
                runs.push((next, i, 1));
            }
            runs.push((i, i + 1, 1));
            next = i + 1;
        }
        if next < n {
            runs.push((next, n, 1));
        }
        if runs.len() > groups {
            continue;
        }
        // Runs left over split the runs whose parts are longest, into equal parts.
        for _ in runs.len()..groups {
            let r = runs
                .iter_mut()
                .max_by_key(|r| (r.1 - r.0).div_ceil(r.2))
                .expect("at least one run");
            if r.1 - r.0 <= r.2 {
                break;
            }
            r.2 += 1;
        }
        let starts: Vec<usize> = runs
            .iter()
            .flat_map(|&(a, b, p)| (0..p).map(move |q| a + q * (b - a) / p))
            .collect();
        let c = cost(&starts);
        if c < best_cost {
            (best, best_cost) = (starts, c);
        }
    }
    best
}

/// The lines' summary of the /16s (see `front.rs`): a /16's next hop when no range
/// boundary lies inside it, [`LINES`] when a listed /32 (of `tops`, ascending) does, else
/// [`MISS`].
fn summary<A: Address>(ranges: &[(A, u32)], tops: &[u32]) -> Vec<u32> {
    let shift = A::BITS as u32 - SUMMARY_BITS;
    (0..1u32 << SUMMARY_BITS)
        .map(|v| {
            let first = A::from_u128((v as u128) << shift);
            let last = first.or(A::hostmask(SUMMARY_BITS as u8));
            let lo = ranges.partition_point(|r| r.0 <= first) - 1;
            if ranges.get(lo + 1).is_none_or(|r| r.0 > last) {
                return ranges[lo].1;
            }
            let sub = 32 - SUMMARY_BITS;
            let at = tops.partition_point(|&t| t >> sub < v);
            if tops.get(at).is_some_and(|&t| t >> sub == v) {
                LINES
            } else {
                MISS
            }
        })
        .collect()
}

pub(super) fn build<A: Address, L: Layout>(
    rib: &Rib<A>,
    config: &PlanbConfig,
) -> Result<Parts<L>, BuildError> {
    let proj = rib.project_ranges();
    check_next_hop(NAME, MAX_NEXT_HOP as u64, proj.max_next_hop as u64)?;
    let lines = config.front == super::HASHED_FRONT;
    if lines && <L::K as Key>::BITS != 32 {
        return Err(BuildError::InvalidConfig {
            scheme: NAME.to_string(),
            reason: "the /32 lines need 32-bit keys (key_bits=32)".into(),
        });
    }
    let mut b = Builder::<A, L> {
        ranges: &proj.ranges,
        forest: ForestBuilder::new(NAME),
        memo: HashMap::new(),
        coarse_main: lines,
        info: BuildInfo {
            intervals: proj.ranges.len(),
            routes: rib.len(),
            ..BuildInfo::default()
        },
    };
    let front = match config.front {
        0 => Front::None,
        bits if bits <= super::MAX_DIRECT_FRONT => {
            let n = 1usize << bits;
            let mut table = crate::mem::TableBuf::<u32>::zeroed(n);
            for (v, slot) in table.iter_mut().enumerate() {
                let first = A::from_u128((v as u128) << (A::BITS as u32 - bits));
                *slot = b.value(first, bits as u8)?;
            }
            Front::Direct { bits, table }
        }
        _ => {
            // The listed /32s: where routes begin. A boundary inside a /32 is where a
            // route longer than /32 begins or ends, so its /32 is listed too.
            let top = |a: A| (a.to_u128() >> (A::BITS as u32 - 32)) as u32;
            let mut tops: Vec<u32> = rib.iter().map(|(p, _)| top(p.addr())).collect();
            tops.extend(
                proj.ranges
                    .iter()
                    .filter(|r| r.0.and(A::hostmask(32)) != A::ZERO)
                    .map(|r| top(r.0)),
            );
            tops.sort_unstable();
            tops.dedup();
            let summary = summary(&proj.ranges, &tops);
            let mut lines = Vec::with_capacity(tops.len());
            for t in tops {
                lines.push((t, b.line(t)?));
            }
            Front::Lines(LineFront::new(&lines, &summary))
        }
    };
    // The main tree: searched without a front, or for a /32 the front does not list.
    let main = if matches!(front, Front::Direct { .. }) {
        0
    } else {
        let v = b.block(A::ZERO, 0, 0, proj.ranges.len())?;
        b.info.main = b.info.last_tree;
        v
    };
    Ok(Parts {
        forest: b.forest.finish(),
        main,
        front,
        info: b.info,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Entries starting at `starts` (ascending, the first 0), values all different.
    fn entries(starts: &[u64]) -> Vec<(u64, u32)> {
        starts
            .iter()
            .enumerate()
            .map(|(i, &s)| (s, i as u32))
            .collect()
    }

    /// Runs are ascending, begin at 0 and number at most `groups`.
    fn check(e: &[(u64, u32)], groups: usize) -> Vec<usize> {
        let starts = line_groups(e, groups);
        assert_eq!(starts[0], 0);
        assert!(starts.len() <= groups && starts.windows(2).all(|w| w[0] < w[1]));
        assert!(*starts.last().unwrap() < e.len());
        starts
    }

    #[test]
    fn line_groups_leave_large_intervals_to_the_line() {
        // Forty /48-sized intervals at the bottom of the /32, then the rest of it.
        let mut s: Vec<u64> = (0..40).map(|i| i << 16).collect();
        s.push(40 << 16);
        let e = entries(&s);
        let starts = check(&e, 8);
        // The large last interval is a run of its own; runs left over split the cluster
        // into trees of one level.
        assert_eq!(*starts.last().unwrap(), 40);
        assert_eq!(starts.len(), 8);
        assert!(starts.windows(2).all(|w| w[1] - w[0] <= 8), "{starts:?}");
        // Clusters at both ends and in the middle: the gaps between them are runs of one.
        let mut s: Vec<u64> = (0..10).map(|i| i << 16).collect();
        s.push(10 << 16);
        s.extend((0..10).map(|i| (1 << 31) + (i << 16)));
        s.push((1 << 31) + (10 << 16));
        s.extend((0..10).map(|i| 0xffff_0000 + (i << 8)));
        let e = entries(&s);
        let starts = check(&e, 8);
        for gap in [10, 21] {
            let k = starts.iter().position(|&a| a == gap).expect("gap is a run");
            assert_eq!(starts.get(k + 1).copied().unwrap_or(e.len()), gap + 1);
        }
    }

    #[test]
    fn line_groups_of_equal_intervals_stay_shallow() {
        // 256 intervals of 2^24 each: seven runs of one and a run of 249 would make a
        // tree of three levels; no run is longer than a tree of two holds (136).
        let e = entries(&(0..256u64).map(|i| i << 24).collect::<Vec<_>>());
        let starts = check(&e, 8);
        assert_eq!(starts.len(), 8);
        let ends = starts.iter().skip(1).copied().chain([256]);
        assert!(
            starts.iter().zip(ends).all(|(a, b)| b - a <= 136),
            "{starts:?}"
        );
    }

    #[test]
    fn line_groups_random() {
        let mut rng = SplitMix64::new(5);
        for _ in 0..200 {
            let n = 9 + rng.below(300) as usize;
            let mut s: Vec<u64> = (0..n).map(|_| rng.below(1 << 32)).collect();
            s[0] = 0;
            s.sort_unstable();
            s.dedup();
            if s.len() <= 8 {
                continue;
            }
            check(&entries(&s), 8);
        }
    }

    #[test]
    fn summary_of_the_sixteens() {
        let a = |s: &str| u128::from(s.parse::<std::net::Ipv6Addr>().unwrap());
        // 2000::/15 covers two /16s whole; 2002:8000::/17 puts a boundary inside 2002::/16.
        let ranges: Vec<(u128, u32)> = vec![
            (0, 0),
            (a("2000::"), 1),
            (a("2002::"), 0),
            (a("2002:8000::"), 2),
            (a("2003::"), 0),
        ];
        let tops = [(a("2002:8000::") >> 96) as u32];
        let s = summary::<u128>(&ranges, &tops);
        assert_eq!(s[0x2000], 1);
        assert_eq!(s[0x2001], 1);
        assert_eq!(s[0x2002], LINES);
        assert_eq!(s[0x2003], 0);
        assert_eq!(s[0], 0);
        // A boundary inside a /16 without listed /32s sends its keys to the main tree.
        let s = summary::<u128>(&ranges, &[]);
        assert_eq!(s[0x2002], MISS);
    }
}

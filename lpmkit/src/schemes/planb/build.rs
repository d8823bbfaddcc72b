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

use super::front::{Front, LineFront, LINE_KEYS, LINE_TAG, LINE_VALS, LINE_WORDS};
use super::tree::{child, Forest, ForestBuilder, Key, Layout, TreeShape, MAX_NEXT_HOP, SAME_CHUNK};
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
        // Eight groups of intervals, as equal as can be; a group of several intervals is
        // searched in its own tree, with the same key chunk.
        self.info.line_groups[1] += 1;
        let n = entries.len();
        for g in 0..groups {
            let (a, b) = (g * n / groups, (g + 1) * n / groups);
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
            let mut lines = Vec::with_capacity(tops.len());
            for t in tops {
                lines.push((t, b.line(t)?));
            }
            Front::Lines(LineFront::new(&lines))
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

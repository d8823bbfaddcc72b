//! Building the Spider table from the `Rib` (§III-C): the control path.
//!
//! The paper keeps a 256-ary multiway trie beside the table, applies route aggregation to
//! it, and converts every remaining node into a row. lpmkit derives the *aggregated* trie
//! directly, in three linear passes and without allocating per node:
//!
//! 1. **Ranges.** One walk of the routes (the shared range projection) projects the table
//!    onto disjoint address ranges with merged equal neighbours, and counts the nodes the
//!    trie has *before* aggregation, for [`Fib::stats`](crate::Fib::stats). The answer is constant over a trie node's block exactly
//!    when no range boundary falls strictly inside the block, so a node survives
//!    aggregation iff such a boundary exists: both of the paper's rules (omit a node whose
//!    elements do not change the result; collapse a node whose elements all carry one next
//!    hop into its parent's element) are this test.
//! 2. **Counting.** One pass over the boundaries counts the surviving nodes per level (a
//!    boundary at address `b` is strictly inside the level-`L` block of `b` iff the bits of
//!    `b` below that block are not all zero), which fixes the row count, hence the element
//!    layout, before anything is allocated. Rows are numbered level by level.
//! 3. **Filling.** One pass over the ranges writes every element: an element whose
//!    sub-block lies inside one range gets that range's next hop; the element at each end
//!    of a range that straddles a boundary points to a row (allocated when first reached,
//!    so rows of a level come in address order) and the range continues there.
//!
//! The ranges are stored compactly (`(A, u32)`: 8 bytes each for IPv4), because on a
//! 900K-route table touching fresh memory is a good part of the build time.

use super::codec::{Codec, Compact16, ElementLayout, Paper32, Wide32};
use super::{
    BuildInfo, Elements, Elems, LookupParams, Spider, SpiderConfig, Table, CACHED_LEVEL_BYTES_V4,
    CACHED_LEVEL_BYTES_V6, DP_FIRST_ROW, FIRST_STRIDE_ROW, MAX_WAYS, ROW,
    SCALAR_PASS_INVERSE_SHARE,
};
use crate::fib::BuildError;
use crate::prefix::Address;
use crate::rib::{split_blocks_per_level, LevelBlocks, Rib};
use crate::schemes::common::ms_since;
use crate::simd::Kernels;

const NAME: &str = "spider";

/// Most stride levels: (128 − 16) / 8 for IPv6.
const MAX_LEVELS: usize = 14;

/// Stride levels below the direct pointing table for a family: 2 (IPv4) or 14 (IPv6).
fn levels<A: Address>() -> usize {
    (A::BITS as usize - 16) / 8
}

/// Prefix length of the block one element of level `level` covers (level 0 = the direct
/// pointing table: /16; then /24, /32, …).
#[inline(always)]
fn element_len(level: usize) -> u8 {
    16 + 8 * level as u8
}

/// The index of `a`'s element in its row of level `level`.
#[inline(always)]
fn element_index<A: Address>(a: A, level: usize) -> usize {
    if level == 0 {
        a.bits_at(0, 16) as usize
    } else {
        a.bits_at(element_len(level) - 8, 8) as usize
    }
}

#[inline(never)]
pub(super) fn build<A: Address>(
    rib: &Rib<A>,
    config: &SpiderConfig,
) -> Result<Spider<A>, BuildError> {
    let t0 = std::time::Instant::now();
    if !(1..=MAX_WAYS).contains(&config.ways) {
        return Err(BuildError::InvalidConfig {
            scheme: NAME.to_string(),
            reason: format!("ways must be in 1..={MAX_WAYS}, not {}", config.ways),
        });
    }
    let lens = level_lens::<A>();
    // The levels (8 bits and longer) are longer than the projection's windows: each
    // window counts its own blocks.
    let (proj, blocks) =
        rib.project_ranges_with(|| LevelBlocks::<A>::new(&lens), |b, p, _| b.route(p));
    let (ranges, max_nh) = (proj.ranges, proj.max_next_hop);
    let mut trie_nodes_per_level = vec![0; lens.len()];
    for b in blocks {
        for (n, c) in trie_nodes_per_level.iter_mut().zip(b.into_counts()) {
            *n += c;
        }
    }
    // Surviving trie nodes (= stride rows) per level.
    let rows_per_level = split_blocks_per_level(&ranges, &lens);
    let stride_rows: usize = rows_per_level.iter().sum();
    let layout = choose_layout(config.layout, max_nh, stride_rows)?;
    let table = match layout {
        ElementLayout::Compact16 => {
            let split = max_nh + 1;
            Table {
                elems: Elems::Compact16(fill::<A, Compact16>(&ranges, &rows_per_level, split)),
                split,
            }
        }
        ElementLayout::Paper32 => Table {
            elems: Elems::Paper32(fill::<A, Paper32>(&ranges, &rows_per_level, 0)),
            split: 0,
        },
        ElementLayout::Wide32 => Table {
            elems: Elems::Wide32(fill::<A, Wide32>(&ranges, &rows_per_level, 0)),
            split: 0,
        },
    };
    let mut kernels = Kernels::new(
        config.force_scalar,
        config.isa,
        match A::FAMILY {
            crate::Family::V4 => super::AVX512_BY_DEFAULT_V4,
            crate::Family::V6 => super::AVX512_BY_DEFAULT_V6,
        },
    );
    if config.ways != MAX_WAYS {
        // The AVX-512 instance serves one register's ways.
        kernels.without_avx512();
    }
    let mut spider = Spider {
        table,
        kernels,
        params: LookupParams {
            ways: config.ways,
            pipeline: config.pipeline,
            refill: config.refill.unwrap_or(match A::FAMILY {
                crate::Family::V4 => super::REFILL_V4,
                crate::Family::V6 => super::REFILL_V6,
            }),
            cold_octets: rows_per_level
                .iter()
                .enumerate()
                .filter(|&(_, &rows)| {
                    rows * ROW * layout.element_bytes() > cached_level_bytes::<A>()
                })
                .fold(0, |m, (l, _)| m | 1 << (l + 2)),
            scalar_passes: scalar_passes(&rows_per_level),
        },
        name: format!("spider{}w", config.ways),
        info: BuildInfo {
            rows_per_level,
            trie_nodes_per_level,
            ranges: ranges.len(),
            max_next_hop: max_nh,
            routes: rib.len(),
            build_ms: 0.0,
        },
        _family: core::marker::PhantomData,
    };
    spider.info.build_ms = ms_since(t0);
    Ok(spider)
}

/// [`LookupParams::scalar_passes`]: level `l` (octet `l + 3`, bit `l + 2`) qualifies when
/// the rows of the next level — each named by exactly one element of this level — are
/// fewer than 1/[`SCALAR_PASS_INVERSE_SHARE`] of this level's elements.
fn scalar_passes(rows_per_level: &[usize]) -> u32 {
    (0..rows_per_level.len())
        .filter(|&l| {
            let next = rows_per_level.get(l + 1).copied().unwrap_or(0);
            next * SCALAR_PASS_INVERSE_SHARE < rows_per_level[l] * ROW
        })
        .fold(0, |m, l| m | 1 << (l + 2))
}

/// The size above which a level's rows are prefetched by the pipelined kernels.
fn cached_level_bytes<A: Address>() -> usize {
    match A::FAMILY {
        crate::Family::V4 => CACHED_LEVEL_BYTES_V4,
        crate::Family::V6 => CACHED_LEVEL_BYTES_V6,
    }
}

/// The forced layout if the table fits it, else the smallest that does.
fn choose_layout(
    forced: Option<ElementLayout>,
    max_nh: u32,
    stride_rows: usize,
) -> Result<ElementLayout, BuildError> {
    match forced {
        Some(l) => l.check(max_nh, stride_rows).map(|()| l),
        None => match ElementLayout::ALL
            .into_iter()
            .find(|l| l.fits(max_nh, stride_rows))
        {
            Some(l) => Ok(l),
            None => ElementLayout::Wide32
                .check(max_nh, stride_rows)
                .map(|()| ElementLayout::Wide32),
        },
    }
}

/// The prefix length of the blocks of each stride level (/16, /24, …): a node of level
/// `l` is the block of one element of level `l`.
fn level_lens<A: Address>() -> Vec<u8> {
    (0..levels::<A>()).map(element_len).collect()
}

/// Writes every element of the table.
struct Filler<'a, A: Address, C: Codec> {
    tbl: &'a mut [C::E],
    /// The codec's per-table parameter.
    split: u32,
    /// Next row index to hand out, per level.
    next_row: [u32; MAX_LEVELS],
    /// The block (network address of the parent element) of the row last opened at each
    /// level, and that row; `A::MAX` (never a block) when none is.
    open: [(A, u32); MAX_LEVELS],
}

fn fill<A: Address, C: Codec>(
    ranges: &[(A, u32)],
    rows_per_level: &[usize],
    split: u32,
) -> Elements<C::E> {
    let stride_rows: usize = rows_per_level.iter().sum();
    let mut elements = Elements::<C::E>::zeroed(FIRST_STRIDE_ROW + stride_rows);
    let mut next_row = [0u32; MAX_LEVELS];
    let mut first = FIRST_STRIDE_ROW as u32;
    for (l, &n) in rows_per_level.iter().enumerate() {
        next_row[l] = first;
        first += n as u32;
    }
    let mut f = Filler::<A, C> {
        tbl: elements.as_mut_slice(),
        split,
        next_row,
        open: [(A::MAX, 0); MAX_LEVELS],
    };
    for (i, &(first, nh)) in ranges.iter().enumerate() {
        let last = match ranges.get(i + 1) {
            Some(&(next, _)) => next.checked_dec().expect("ranges ascend from 0"),
            None => A::MAX,
        };
        f.fill(0, DP_FIRST_ROW, first, last, C::leaf(nh, split));
    }
    // Every counted row was reached, in order.
    let mut expect = FIRST_STRIDE_ROW as u32;
    for (l, &n) in rows_per_level.iter().enumerate() {
        expect += n as u32;
        debug_assert_eq!(f.next_row[l], expect, "rows of level {l}");
    }
    elements
}

impl<A: Address, C: Codec> Filler<'_, A, C> {
    /// Fills the addresses `first..=last`, all inside the block of row `row` at `level`,
    /// with `leaf`.
    fn fill(&mut self, level: usize, row: usize, first: A, last: A, leaf: C::E) {
        let elen = element_len(level);
        let low = A::hostmask(elen);
        let base = row * ROW;
        let (ef, el) = (element_index(first, level), element_index(last, level));
        let first_whole = first.and(low) == A::ZERO;
        let last_whole = last.and(low) == low;
        if ef == el && !(first_whole && last_whole) {
            let child = self.child(level, first.and(A::netmask(elen)), base + ef);
            return self.fill(level + 1, child, first, last, leaf);
        }
        let (mut lo, mut hi) = (ef, el);
        if !first_whole {
            let child = self.child(level, first.and(A::netmask(elen)), base + ef);
            self.fill(level + 1, child, first, first.or(low), leaf);
            lo += 1;
        }
        if !last_whole {
            let block = last.and(A::netmask(elen));
            let child = self.child(level, block, base + el);
            self.fill(level + 1, child, block, last, leaf);
            hi -= 1;
        }
        if lo <= hi {
            self.tbl[base + lo..=base + hi].fill(leaf);
        }
    }

    /// The row below element `parent` (of `level`), whose block is `block`: the open row
    /// of the next level if it is that block's, else a new row, linked from `parent`.
    fn child(&mut self, level: usize, block: A, parent: usize) -> usize {
        debug_assert!(level < MAX_LEVELS, "a boundary below the last octet");
        let (open_block, open_row) = self.open[level];
        if open_block == block {
            return open_row as usize;
        }
        let row = self.next_row[level];
        self.next_row[level] += 1;
        self.open[level] = (block, row);
        self.tbl[parent] = C::pointer(row, self.split);
        row as usize
    }
}

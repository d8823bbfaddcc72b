//! Building DIR-24-8 tables from the `Rib` (the control path).

use super::{Dir24_8, Dir24_8Config, Tables, PAD, TBL24_LEN};
use crate::fib::BuildError;
use crate::mem::TableBuf;
use crate::prefix::Ipv4;
use crate::rib::Rib;
use crate::schemes::common::{
    check_capacity, check_next_hop, ms_since, narrowest, ByWidth, Width, Word,
};
use crate::simd::Kernels;

const NAME: &str = "dir24-8";
/// Largest value (next hop or group index) of a 16-bit entry.
const NARROW_MAX: u64 = (1 << 15) - 1;
/// Largest next hop of a 32-bit entry.
const WIDE_MAX_NH: u64 = (1 << 31) - 1;
/// Most groups of a 32-bit layout: `groups * 256` must fit a gather's signed 32-bit index.
const WIDE_MAX_GROUPS: u64 = 1 << 23;

#[inline(never)]
pub(super) fn build(rib: &Rib<Ipv4>, config: &Dir24_8Config) -> Result<Dir24_8, BuildError> {
    let t0 = std::time::Instant::now();
    let proj = rib.project_ranges();
    let ranges = proj.ranges;
    let groups = count_groups(&ranges);
    let max_nh = proj.max_next_hop as u64;
    let width = narrowest(config.entry_width, &Width::ALL, |w| {
        let (max_value, max_groups) = match w {
            Width::U16 => (NARROW_MAX, NARROW_MAX + 1),
            Width::U32 => (WIDE_MAX_NH, WIDE_MAX_GROUPS),
        };
        check_next_hop(NAME, max_value, max_nh)?;
        check_capacity(NAME, "tbl8 groups", max_groups, groups as u64)
    })?;
    let (layout, direct_entries) = match width {
        Width::U16 => {
            let (t, d) = fill::<u16>(&ranges, groups);
            (ByWidth::U16(t), d)
        }
        Width::U32 => {
            let (t, d) = fill::<u32>(&ranges, groups);
            (ByWidth::U32(t), d)
        }
    };
    let mut fib = Dir24_8 {
        layout,
        kernels: Kernels::new(config.force_scalar, config.isa, super::AVX512_BY_DEFAULT),
        groups,
        direct_entries,
        build_ms: 0.0,
    };
    fib.build_ms = ms_since(t0);
    Ok(fib)
}

/// /24 blocks that hold a range boundary inside them (each needs a group).
pub(super) fn count_groups(ranges: &[(u32, u32)]) -> usize {
    let mut groups = 0;
    let mut last_block = u32::MAX;
    for &(first, _) in &ranges[1..] {
        let block = first >> 8;
        if first & 0xff != 0 && block != last_block {
            groups += 1;
            last_block = block;
        }
    }
    groups
}

/// Ranges from which on [`fill`] fills the tables on more than one thread.
pub(super) const PARALLEL_FROM: usize = 1 << 16;

/// Fills the tables from the ranges; returns them and the number of direct tbl24 entries.
///
/// On a large table and with more than one core to run on, the table splits where a
/// range starts on a /24 boundary near the middle of the address space: the blocks below
/// it are filled (and their groups numbered) by this thread, those from it on by another,
/// each into its own part of `tbl24` and `tbl8`.
fn fill<E: Word>(ranges: &[(u32, u32)], groups: usize) -> (Tables<E>, usize) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    fill_on::<E>(ranges, groups, threads)
}

/// [`fill`] on up to `threads` threads (one or two).
pub(super) fn fill_on<E: Word>(
    ranges: &[(u32, u32)],
    groups: usize,
    threads: usize,
) -> (Tables<E>, usize) {
    let mut tbl24 = TableBuf::<E>::zeroed(TBL24_LEN + PAD);
    let mut tbl8 = TableBuf::<E>::zeroed(groups * 256 + PAD);
    let split = (threads > 1 && ranges.len() >= PARALLEL_FROM)
        .then(|| {
            let mid = ranges.partition_point(|r| r.0 < 1 << 31);
            (mid..ranges.len()).find(|&i| ranges[i].0 & 0xff == 0)
        })
        .flatten();
    let direct = match split {
        None => fill_part(ranges, u32::MAX, &mut tbl24[..TBL24_LEN], &mut tbl8[..], 0),
        Some(s) => {
            let block = (ranges[s].0 >> 8) as usize;
            // The groups of the lower part: blocks below `block` with a boundary inside.
            let low_groups = count_groups(&ranges[..s]);
            let (t24_lo, t24_hi) = tbl24[..TBL24_LEN].split_at_mut(block);
            let (t8_lo, t8_hi) = tbl8.split_at_mut(low_groups * 256);
            let (lo, hi) = ranges.split_at(s);
            std::thread::scope(|sc| {
                let upper = sc.spawn(|| fill_part(hi, u32::MAX, t24_hi, t8_hi, low_groups));
                let lower = fill_part(lo, hi[0].0 - 1, t24_lo, t8_lo, 0);
                lower + upper.join().expect("a fill thread")
            })
        }
    };
    (Tables { tbl24, tbl8 }, direct)
}

/// Fills the blocks of `ranges` (the last ends at `end`; the first starts on a /24
/// boundary, block `b0`) into `tbl24` (its blocks from `b0` on) and `tbl8` (its groups
/// from `first_group` on); returns the direct tbl24 entries written.
fn fill_part<E: Word>(
    ranges: &[(u32, u32)],
    end: u32,
    tbl24: &mut [E],
    tbl8: &mut [E],
    first_group: usize,
) -> usize {
    let b0 = (ranges[0].0 >> 8) as usize;
    debug_assert_eq!(ranges[0].0 & 0xff, 0);
    // Group `g` of the whole table is `tbl8[(g - first_group) * 256..]`, block `b` is
    // `tbl24[b - b0]`.
    let mut next_group = first_group;
    let group = |g: usize| (g - first_group) * 256;
    // The group of the block currently being filled, if it has one.
    let mut open: Option<(u32, usize)> = None;
    for (i, &(first, nh)) in ranges.iter().enumerate() {
        let last = ranges.get(i + 1).map_or(end, |r| r.0 - 1);
        let value = E::from_u32(nh << 1);
        let (b0_, b1) = (first >> 8, last >> 8);
        // Partial first block: the range starts inside it, or ends inside it.
        let mut full_from = b0_;
        if first & 0xff != 0 || (b0_ == b1 && last & 0xff != 0xff) {
            let g = match open {
                Some((b, g)) if b == b0_ => g,
                _ => {
                    let g = next_group;
                    next_group += 1;
                    tbl24[b0_ as usize - b0] = E::from_u32(((g as u32) << 1) | 1);
                    open = Some((b0_, g));
                    g
                }
            };
            let end = if b0_ == b1 { last & 0xff } else { 0xff };
            let at = group(g);
            tbl8[at + (first & 0xff) as usize..=at + end as usize].fill(value);
            if b0_ == b1 {
                continue;
            }
            full_from = b0_ + 1;
        }
        // Partial last block: the range ends inside it (the next range starts inside it).
        let mut full_to = b1;
        if last & 0xff != 0xff {
            let g = next_group;
            next_group += 1;
            tbl24[b1 as usize - b0] = E::from_u32(((g as u32) << 1) | 1);
            open = Some((b1, g));
            let at = group(g);
            tbl8[at..=at + (last & 0xff) as usize].fill(value);
            full_to = b1 - 1;
        }
        if full_from <= full_to {
            tbl24[full_from as usize - b0..=full_to as usize - b0].fill(value);
        }
    }
    let blocks = (end >> 8) as usize + 1 - b0;
    tbl24[..blocks].iter().filter(|e| e.get() & 1 == 0).count()
}

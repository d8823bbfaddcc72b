//! Building DIR-24-8 tables from the `Rib` (the control path).

use super::{Dir24_8, Dir24_8Config, Entry, EntryWidth, Layout, Tables, PAD, TBL24_LEN};
use crate::fib::BuildError;
use crate::mem::TableBuf;
use crate::prefix::Ipv4;
use crate::rib::Rib;
use crate::schemes::common::{check_next_hops, ms_since, range_starts};
use crate::simd::Avx2;

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
    let ranges = range_starts(rib);
    let groups = count_groups(&ranges);
    let max_nh = crate::fib::max_next_hop(rib) as u64;
    let narrow_fits = max_nh <= NARROW_MAX && groups as u64 <= NARROW_MAX + 1;
    let width = match config.entry_width {
        Some(w) => w,
        None if narrow_fits => EntryWidth::Narrow,
        None => EntryWidth::Wide,
    };
    let (layout, direct_entries) = match width {
        EntryWidth::Narrow => {
            check_next_hops(rib, NAME, NARROW_MAX)?;
            check_groups(groups, NARROW_MAX + 1)?;
            let (t, d) = fill::<u16>(&ranges, groups);
            (Layout::Narrow(t), d)
        }
        EntryWidth::Wide => {
            check_next_hops(rib, NAME, WIDE_MAX_NH)?;
            check_groups(groups, WIDE_MAX_GROUPS)?;
            let (t, d) = fill::<u32>(&ranges, groups);
            (Layout::Wide(t), d)
        }
    };
    let mut fib = Dir24_8 {
        layout,
        avx2: Avx2::unless(config.force_scalar),
        groups,
        direct_entries,
        build_ms: 0.0,
    };
    fib.build_ms = ms_since(t0);
    Ok(fib)
}

fn check_groups(groups: usize, max: u64) -> Result<(), BuildError> {
    if groups as u64 > max {
        return Err(BuildError::CapacityExceeded {
            scheme: NAME.to_string(),
            what: "tbl8 groups",
            max,
            requested: groups as u64,
        });
    }
    Ok(())
}

/// /24 blocks that hold a range boundary inside them (each needs a group).
fn count_groups(ranges: &[(u32, u32)]) -> usize {
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

/// Fills the tables from the ranges; returns them and the number of direct tbl24 entries.
fn fill<E: Entry>(ranges: &[(u32, u32)], groups: usize) -> (Tables<E>, usize) {
    let mut tbl24 = TableBuf::<E>::zeroed(TBL24_LEN + PAD);
    let mut tbl8 = TableBuf::<E>::zeroed(groups * 256 + PAD);
    let mut next_group = 0usize;
    // The group of the block currently being filled, if it has one.
    let mut open: Option<(u32, usize)> = None;
    for (i, &(first, nh)) in ranges.iter().enumerate() {
        let last = ranges.get(i + 1).map_or(u32::MAX, |r| r.0 - 1);
        let value = E::from_u32(nh << 1);
        let (b0, b1) = (first >> 8, last >> 8);
        // Partial first block: the range starts inside it, or ends inside it.
        let mut full_from = b0;
        if first & 0xff != 0 || (b0 == b1 && last & 0xff != 0xff) {
            let g = match open {
                Some((b, g)) if b == b0 => g,
                _ => {
                    let g = next_group;
                    next_group += 1;
                    tbl24[b0 as usize] = E::from_u32(((g as u32) << 1) | 1);
                    open = Some((b0, g));
                    g
                }
            };
            let end = if b0 == b1 { last & 0xff } else { 0xff };
            tbl8[g * 256 + (first & 0xff) as usize..=g * 256 + end as usize].fill(value);
            if b0 == b1 {
                continue;
            }
            full_from = b0 + 1;
        }
        // Partial last block: the range ends inside it (the next range starts inside it).
        let mut full_to = b1;
        if last & 0xff != 0xff {
            let g = next_group;
            next_group += 1;
            tbl24[b1 as usize] = E::from_u32(((g as u32) << 1) | 1);
            open = Some((b1, g));
            tbl8[g * 256..=g * 256 + (last & 0xff) as usize].fill(value);
            full_to = b1 - 1;
        }
        if full_from <= full_to {
            tbl24[full_from as usize..=full_to as usize].fill(value);
        }
    }
    debug_assert_eq!(next_group, groups);
    let direct = tbl24[..TBL24_LEN]
        .iter()
        .filter(|e| e.get() & 1 == 0)
        .count();
    (Tables { tbl24, tbl8 }, direct)
}

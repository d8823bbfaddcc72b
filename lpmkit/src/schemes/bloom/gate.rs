//! The final exact stage for prefixes longer than the key bits (IPv6 prefixes longer
//! than /64, which the paper leaves out): the *gate*.
//!
//! The gate is a level like the others (a counting filter and a table, keyed by the first
//! 64 address bits, probed first, with the /64 level's hashes), whose value is not a next
//! hop but the position of a *range block*: the routes longer than /64 under that /64,
//! projected onto the disjoint ranges of the low 64 bits (the shared range projection;
//! a range no long route covers has next hop 0). A lookup whose /64 is in the gate
//! binary-searches the block: a non-zero next hop is the longest match; 0 sends the
//! lookup on to the levels. A block is `[count, (first: low word, high word, next
//! hop)…]` in an arena of its own; an update writes a new block beside the old one and
//! publishes it by setting the gate key's value (the table's one atomic store).

use super::cpe::top_key;
use super::table::Exhausted;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::{project_routes, Rib};
use crate::schemes::common::{Arena, FreeSpace};

/// The long routes' ranges under the /64 whose key is `key` (empty if none).
pub(crate) fn window_ranges<A: Address>(rib: &Rib<A>, key: u64) -> Vec<(u64, u32)> {
    let window = super::cpe::key_prefix::<A>(key, 64);
    let routes: Vec<(Prefix<A>, NextHop)> =
        rib.covered(&window).filter(|(p, _)| p.len() > 64).collect();
    if routes.is_empty() {
        return Vec::new();
    }
    ranges_of(&window, routes)
}

fn ranges_of<A: Address>(
    window: &Prefix<A>,
    routes: impl IntoIterator<Item = (Prefix<A>, NextHop)>,
) -> Vec<(u64, u32)> {
    let mut out = Vec::new();
    project_routes(
        window,
        0,
        routes,
        |_, _| {},
        |first, nh| out.push((first.to_u128() as u64, nh)),
    );
    out
}

/// Every /64 with long routes, ascending: `(key, ranges)`.
pub(crate) fn blocks<A: Address>(rib: &Rib<A>) -> Vec<(u64, Vec<(u64, u32)>)> {
    let mut out = Vec::new();
    let mut group: Vec<(Prefix<A>, NextHop)> = Vec::new();
    let mut flush = |group: &mut Vec<(Prefix<A>, NextHop)>| {
        if let Some(&(p, _)) = group.first() {
            let key = top_key(p.first());
            let window = super::cpe::key_prefix::<A>(key, 64);
            out.push((key, ranges_of(&window, group.drain(..))));
        }
    };
    // Routes in address order: the long routes of one /64 are consecutive among them.
    for (p, nh) in rib.iter().filter(|(p, _)| p.len() > 64) {
        if group
            .first()
            .is_some_and(|&(g, _)| top_key(g.first()) != top_key(p.first()))
        {
            flush(&mut group);
        }
        group.push((p, nh));
    }
    flush(&mut group);
    out
}

/// Words of a block of `n` ranges.
fn words(n: usize) -> usize {
    1 + 3 * n
}

/// The gate's range arena, its free space, and its keys `(key, block position)`.
pub(crate) type Ranges = (Arena<u32>, FreeSpace, Vec<(u64, u32)>);

/// The range arena with `blocks` written back to back, its free space, and the gate's
/// keys `(key, block position)`.
pub(crate) fn build_ranges(blocks: &[(u64, Vec<(u64, u32)>)], room: usize) -> Option<Ranges> {
    let total: usize = blocks.iter().map(|(_, r)| words(r.len())).sum();
    let capacity = (total + 1).saturating_mul(3 + 2 * room) + (1 << 14);
    let mut arena = Arena::<u32>::new(capacity)?;
    // SAFETY: no reader can see the arena yet.
    if !unsafe { arena.grow(total + 1) } {
        return None;
    }
    let mut space = FreeSpace::new(1);
    let mut keys = Vec::with_capacity(blocks.len());
    let out = arena.slice_mut(0..total + 1);
    for (key, ranges) in blocks {
        let pos = space.bump(words(ranges.len()));
        encode(ranges, &mut out[pos..pos + words(ranges.len())]);
        keys.push((*key, pos as u32));
    }
    Some((arena, space, keys))
}

fn encode(ranges: &[(u64, u32)], out: &mut [u32]) {
    out[0] = ranges.len() as u32;
    for (i, &(first, nh)) in ranges.iter().enumerate() {
        out[1 + 3 * i] = first as u32;
        out[2 + 3 * i] = (first >> 32) as u32;
        out[3 + 3 * i] = nh;
    }
}

/// Writes `ranges` as a new block (unreachable until its position is published).
///
/// # Safety
/// The caller is the arena's one writer and `space` its free space.
pub(crate) unsafe fn write_block(
    arena: &Arena<u32>,
    space: &mut FreeSpace,
    ranges: &[(u64, u32)],
) -> Result<u32, Exhausted> {
    let n = words(ranges.len());
    let pos = space.alloc(n);
    // SAFETY: the one writer (caller).
    if !unsafe { arena.grow(space.top()) } {
        space.free(pos, n);
        return Err(Exhausted);
    }
    let mut buf = vec![0u32; n];
    encode(ranges, &mut buf);
    for (i, &w) in buf.iter().enumerate() {
        // SAFETY: `pos..pos + n` was just allocated: committed, unreachable.
        unsafe { arena.write(pos + i, w) };
    }
    Ok(pos as u32)
}

/// Words of the block at `pos` (to retire it).
pub(crate) fn block_words(arena: &Arena<u32>, pos: u32) -> u32 {
    // SAFETY: a published block.
    words(unsafe { arena.get(pos as usize) } as usize) as u32
}

/// The ranges of the block at `pos`.
pub(crate) fn read_block(arena: &Arena<u32>, pos: u32) -> Vec<(u64, u32)> {
    let p = pos as usize;
    // SAFETY: a published block (committed, immutable while reachable).
    unsafe {
        let n = arena.get(p) as usize;
        (0..n)
            .map(|i| {
                let e = p + 1 + 3 * i;
                (
                    arena.get(e) as u64 | (arena.get(e + 1) as u64) << 32,
                    arena.get(e + 2),
                )
            })
            .collect()
    }
}

/// The next hop of the range holding `low` (the address's low 64 bits) in the block at
/// `pos`: the last range starting at or below it.
#[inline]
pub(crate) fn search(arena: &Arena<u32>, pos: u32, low: u64) -> u32 {
    let p = pos as usize;
    // SAFETY: a published block (committed, immutable while reachable); indices stay
    // below its count.
    unsafe {
        let base = arena.as_ptr().add(p);
        let first = |i: usize| *base.add(1 + 3 * i) as u64 | (*base.add(2 + 3 * i) as u64) << 32;
        let n = *base as usize;
        debug_assert!(n >= 1 && first(0) <= low);
        // The last i with first(i) <= low (first(0) is the window's start).
        let (mut lo, mut len) = (0usize, n);
        while len > 1 {
            let half = len / 2;
            if first(lo + half) <= low {
                lo += half;
            }
            len -= half;
        }
        *base.add(3 + 3 * lo)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_of_long_routes() {
        let nh = |v| NextHop::new(v).unwrap();
        let rib: Rib<u128> = [
            ("2001:db8::/32", 1),
            ("2001:db8::/64", 2),
            ("2001:db8::1/128", 3),
            ("2001:db8::100/120", 4),
            ("2001:db8:0:1::/80", 5),
        ]
        .iter()
        .map(|&(p, h)| (p.parse().unwrap(), nh(h)))
        .collect();
        let b = blocks(&rib);
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].0, 0x2001_0db8_0000_0000);
        assert_eq!(b[0].1, vec![(0, 0), (1, 3), (2, 0), (0x100, 4), (0x200, 0)]);
        assert_eq!(window_ranges(&rib, 0x2001_0db8_0000_0001), b[1].1);
        assert!(window_ranges(&rib, 0x2001_0db8_0000_0002).is_empty());
        let (arena, _, keys) = build_ranges(&b, 0).unwrap();
        let pos = keys[0].1;
        assert_eq!(read_block(&arena, pos), b[0].1);
        for (low, want) in [
            (0u64, 0),
            (1, 3),
            (2, 0),
            (0x1ff, 4),
            (0x100, 4),
            (u64::MAX, 0),
        ] {
            assert_eq!(search(&arena, pos, low), want, "{low:x}");
        }
    }
}

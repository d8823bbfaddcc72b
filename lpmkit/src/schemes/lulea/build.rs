//! What the table is built of (by [`build_with`](super::build_with), at the narrowest
//! pointer width that holds it): the leaf walk and the encodings of the Lulea paper's §4:
//! which positions of a level are heads, and how a level-1 block or a level-2/3 chunk is
//! laid out in 16-bit words.
//!
//! * **The walk.** The paper builds its bit vectors from the *complete* (leaf-pushed)
//!   prefix tree: a trie node is a leaf when no route lies strictly inside it, and a
//!   position of a level is a *head* when a leaf starts there (a *genuine head*) or when
//!   the node at the level's depth has routes below it (a *root head*: a pointer to a
//!   chunk of the next level). Neighbouring leaves with equal next hops are **not**
//!   merged: that is the horizontal redundancy the OBMA paper counts against Lulea (its
//!   Fig. 13), and what keeps every 16-bit mask one of the maptable's 677 patterns.
//!   [`walk`] emits the leaves and root heads of one window of one level, recursing
//!   over the routes (in address order) only where routes lie.
//! * **Level 1** ([`encode_level1`]): 4,096 codewords (10-bit maptable row, 6-bit offset),
//!   1,024 base indices (one per four codewords) and the pointers of the heads. A mask
//!   with at most one head whose leaf's next hop is at most
//!   [`DIRECT_MAX`](super::maptable::DIRECT_MAX) is the paper's direct codeword (the
//!   next hop in the codeword itself, no pointer).
//! * **Chunks** ([`encode_chunk`]): 256 positions; *sparse* (1–8 heads: eight 8-bit head
//!   positions and eight pointers, padded by repeating the last), *dense* (9–64 heads:
//!   16 codewords whose offsets count from the chunk's first pointer) and *very dense*
//!   (65–256 heads: 16 codewords and four base indices, as level 1).
//!
//! A zero mask (a position range covered by a leaf that starts in an earlier mask) uses
//! the all-zero maptable row with an offset one less than its heads-before count, so it
//! reads the pointer of the head before it; a group of four codewords whose first mask
//! is zero lowers its base index by one to keep that offset non-negative.

use super::maptable::{Maptable, DIRECT_BASE, DIRECT_MAX, SHARED_ROW};

/// A route inside a walked window: `(address, length, next hop)`, in (address, length)
/// order.
pub(crate) type Route = (u32, u8, u32);

/// What the walk finds at one level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A leaf: heads at `pos`, it covers `count` positions with next hop `nh`.
    Leaf { pos: u32, count: u32, nh: u32 },
    /// A root head at `pos`: the node has routes below the level (`routes[lo..hi]`, all
    /// longer than the level's depth); `nh` is its longest match from shorter routes.
    Chunk {
        pos: u32,
        nh: u32,
        lo: usize,
        hi: usize,
    },
}

/// Walks the complete prefix tree of the block `(addr, len)` down to depth `cut` and emits
/// its leaves and root heads, positions counted in units of `2^(32 - cut)` addresses
/// within the level (level 1 has 2^16 positions, a chunk 256). `routes` are the routes inside the
/// block (the block itself may be the first), `offset` the index of `routes[0]` in the
/// caller's list; `inherited` the longest match of the block from shorter routes.
pub(crate) fn walk(
    routes: &[Route],
    offset: usize,
    addr: u32,
    len: u8,
    inherited: u32,
    cut: u8,
    out: &mut Vec<Event>,
) {
    let level_mask = if cut == 16 { 0xffff } else { 0xff };
    let (mut rs, mut off, mut nh) = (routes, offset, inherited);
    if let Some(&(a, l, v)) = rs.first() {
        if a == addr && l == len {
            nh = v;
            rs = &rs[1..];
            off += 1;
        }
    }
    let pos = if cut == 32 { addr } else { addr >> (32 - cut) } & level_mask;
    if rs.is_empty() {
        out.push(Event::Leaf {
            pos,
            count: 1 << (cut - len),
            nh,
        });
        return;
    }
    if len == cut {
        out.push(Event::Chunk {
            pos,
            nh,
            lo: off,
            hi: off + rs.len(),
        });
        return;
    }
    let mid = addr | (1u32 << (31 - len));
    let split = rs.partition_point(|r| r.0 < mid);
    walk(&rs[..split], off, addr, len + 1, nh, cut, out);
    walk(&rs[split..], off + split, mid, len + 1, nh, cut, out);
}

/// The heads and pointer values of one level's positions (a window of level 1, or a
/// chunk's 256 positions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slots {
    /// Head bits, position `p` at bit `p % 64` of word `p / 64`.
    pub(crate) head: Vec<u64>,
    /// The pointer value of the leaf or root head covering each position.
    pub(crate) val: Vec<u32>,
}

impl Slots {
    pub(crate) fn new(positions: usize) -> Self {
        Slots {
            head: vec![0; positions.div_ceil(64)],
            val: vec![0; positions],
        }
    }

    /// Records a leaf or root head of `count` positions from `pos` with pointer `v`.
    pub(crate) fn set(&mut self, pos: u32, count: u32, v: u32) {
        let p = pos as usize;
        for i in p..p + count as usize {
            self.head[i / 64] &= !(1 << (i % 64));
        }
        self.head[p / 64] |= 1 << (p % 64);
        self.val[p..p + count as usize].fill(v);
    }

    /// The 16-bit mask `m`.
    pub(crate) fn mask(&self, m: usize) -> u16 {
        (self.head[m / 4] >> ((m % 4) * 16)) as u16
    }

    /// Heads in total.
    pub(crate) fn heads(&self) -> usize {
        self.head.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Builds the codewords of `masks` masks of `s` (and, with `bases`, the base index of
/// every four), appending them to `header`; the pointers of the heads go to `ptrs`.
/// With `direct`, masks with at most one head whose next hop fits become direct
/// codewords (level 1 only).
fn encode_masks(
    s: &Slots,
    masks: usize,
    bases: bool,
    direct: Option<u32>,
    header: &mut Vec<u16>,
    ptrs: &mut Vec<u32>,
) {
    let mt = Maptable::get();
    let cw_at = header.len();
    header.resize(cw_at + masks, 0);
    let base_at = header.len();
    if bases {
        header.resize(base_at + masks / 4, 0);
    }
    let mut group_base = 0i64;
    for m in 0..masks {
        let bits = s.mask(m);
        if bases && m % 4 == 0 {
            // A group starting with a zero mask that has no direct codeword: its zero
            // masks look one pointer back, before the group.
            let delta = (bits == 0 && !is_direct(s, m, bits, direct)) as i64;
            group_base = ptrs.len() as i64 - delta;
            debug_assert!(group_base >= 0 && group_base <= u16::MAX as i64);
            header[base_at + m / 4] = group_base as u16;
        }
        let before = ptrs.len() as i64 - if bases { group_base } else { 0 };
        let cw = if is_direct(s, m, bits, direct) {
            let v = s.val[m * 16];
            ((DIRECT_BASE + (v >> 6)) << 6) | (v & 63)
        } else {
            let row = mt.row(bits).expect("a mask of a complete prefix tree") as u32;
            let six = if bits == 0 { before - 1 } else { before };
            debug_assert!((0..64).contains(&six), "offset {six}");
            for b in 0..16 {
                if (bits >> b) & 1 != 0 {
                    ptrs.push(s.val[m * 16 + b]);
                }
            }
            (row << 6) | six as u32
        };
        header[cw_at + m] = cw as u16;
    }
}

/// Whether mask `m` (bits `bits`) becomes a direct codeword: at most one head, covered by
/// a leaf whose next hop is at most `DIRECT_MAX` (and below the pointer limit `lim`).
fn is_direct(s: &Slots, m: usize, bits: u16, direct: Option<u32>) -> bool {
    let Some(lim) = direct else { return false };
    let v = s.val[m * 16];
    bits.count_ones() <= 1 && v < lim && v <= DIRECT_MAX
}

/// The level-1 block: 4,096 codewords, 1,024 base indices; and the pointers.
pub(crate) fn encode_level1(s: &Slots, lim: u32, header: &mut Vec<u16>, ptrs: &mut Vec<u32>) {
    header.clear();
    ptrs.clear();
    encode_masks(s, 4096, true, Some(lim), header, ptrs);
}

/// Chunk kinds.
pub(crate) const SPARSE: u32 = 0;
pub(crate) const DENSE: u32 = 1;
pub(crate) const VERY_DENSE: u32 = 2;

/// Header words of a chunk of `kind` (where its pointers start).
#[inline(always)]
pub(crate) const fn header_words(kind: u32) -> usize {
    match kind {
        SPARSE => 4,
        DENSE => 16,
        _ => 20,
    }
}

/// Encodes a chunk of 256 positions; returns its kind.
pub(crate) fn encode_chunk(s: &Slots, header: &mut Vec<u16>, ptrs: &mut Vec<u32>) -> u32 {
    header.clear();
    ptrs.clear();
    let n = s.heads();
    if n <= 8 {
        let mut pos = [0u8; 8];
        let mut k = 0;
        for p in 0..256 {
            if (s.head[p / 64] >> (p % 64)) & 1 != 0 {
                pos[k] = p as u8;
                ptrs.push(s.val[p]);
                k += 1;
            }
        }
        for i in k..8 {
            pos[i] = pos[k - 1];
            ptrs.push(ptrs[k - 1]);
        }
        for i in 0..4 {
            header.push(u16::from_le_bytes([pos[2 * i], pos[2 * i + 1]]));
        }
        SPARSE
    } else if n <= 64 {
        encode_masks(s, 16, false, None, header, ptrs);
        DENSE
    } else {
        encode_masks(s, 16, true, None, header, ptrs);
        VERY_DENSE
    }
}

/// Unused: kept to document that the shared row and direct codewords never meet.
const _: () = assert!(SHARED_ROW as u32 + 1 == DIRECT_BASE);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_finds_leaf_heads_without_merging() {
        // 10.0.0.0/8 -> 1 and 10.1.0.0/16 -> 1: equal next hops, still separate leaves.
        let routes: Vec<Route> = vec![(0x0a00_0000, 8, 1), (0x0a01_0000, 16, 1)];
        let mut ev = Vec::new();
        walk(&routes, 0, 0, 0, 0, 16, &mut ev);
        let mut s = Slots::new(1 << 16);
        for e in &ev {
            match *e {
                Event::Leaf { pos, count, nh } => s.set(pos, count, nh),
                Event::Chunk { .. } => unreachable!(),
            }
        }
        // Heads: 10.0/16, 10.1/16, 10.2/15, 10.4/14, ... and the root's siblings.
        let h = |p: usize| (s.head[p / 64] >> (p % 64)) & 1 == 1;
        assert!(h(0x0a00) && h(0x0a01) && h(0x0a02) && h(0x0a04) && !h(0x0a03));
        assert!(h(0x0b00) && h(0x0c00) && h(0x0800) && h(0) && h(0x8000));
        assert_eq!(s.val[0x0a01], 1);
        assert_eq!(s.val[0x0b00], 0);
        let (mut hd, mut p) = (Vec::new(), Vec::new());
        encode_level1(&s, 256, &mut hd, &mut p);
        assert_eq!(hd.len(), 5120);
    }
}

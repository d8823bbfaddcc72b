//! The maptable (the Lulea paper's §4.1): the offsets of every bit-mask that a complete
//! prefix tree of height 4 can produce, shared by all three levels.
//!
//! A 16-bit mask of a leaf-pushed trie is the set of leaf starts of a complete binary
//! tree of height at most 4 over 16 positions, so only `a(4) = 677` non-zero masks exist
//! (`a(0) = 1`, `a(n) = a(n-1)^2 + 1`): the single-leaf mask (only position 0) and 676
//! with several heads. Row `r` holds, for each position `b`, the number of heads at
//! positions `<= b` minus one, in 4 bits (a `u64` per row, 16 nibbles): the offset of the
//! head covering `b` among the mask's heads. Rows `0..676` are the multi-head masks;
//! row [`SHARED_ROW`] is all zeros and serves the single-head mask and the zero mask (whose
//! codeword offset then names the previous head, see `build.rs`). Codewords with a row
//! index above it are the paper's direct next-hop codewords ([`DIRECT_BASE`]).

use std::sync::OnceLock;

/// Rows of multi-head masks.
pub(crate) const MULTI_ROWS: usize = 676;
/// The all-zero row: single-head masks and zero masks.
pub(crate) const SHARED_ROW: u16 = MULTI_ROWS as u16;
/// Codeword `ten` values from here on encode a next hop directly (level 1).
pub(crate) const DIRECT_BASE: u32 = SHARED_ROW as u32 + 1;
/// The largest next hop a direct codeword holds: `((1024 - DIRECT_BASE) << 6) - 1`.
pub(crate) const DIRECT_MAX: u32 = ((1024 - DIRECT_BASE) << 6) - 1;

/// The maptable and the build-time index from mask to row.
pub(crate) struct Maptable {
    /// One row per index (`MULTI_ROWS + 1` rows).
    pub(crate) rows: Vec<u64>,
    /// Mask → row (`u16::MAX` for masks no complete tree produces).
    row_of: Vec<u16>,
}

impl Maptable {
    /// The shared table.
    pub(crate) fn get() -> &'static Maptable {
        static T: OnceLock<Maptable> = OnceLock::new();
        T.get_or_init(Maptable::new)
    }

    fn new() -> Self {
        // Masks of complete trees of height h over 2^h positions (position p = bit p).
        fn trees(h: u32) -> Vec<u16> {
            if h == 0 {
                return vec![1];
            }
            let sub = trees(h - 1);
            let half = 1u32 << (h - 1);
            let mut v = vec![1u16];
            for &l in &sub {
                for &r in &sub {
                    v.push(l | ((r as u32) << half) as u16);
                }
            }
            v
        }
        let mut masks: Vec<u16> = trees(4)
            .into_iter()
            .filter(|m| m.count_ones() > 1)
            .collect();
        masks.sort_unstable();
        debug_assert_eq!(masks.len(), MULTI_ROWS);
        let mut row_of = vec![u16::MAX; 1 << 16];
        let mut rows = Vec::with_capacity(MULTI_ROWS + 1);
        for (r, &m) in masks.iter().enumerate() {
            row_of[m as usize] = r as u16;
            rows.push(row_bits(m));
        }
        rows.push(0);
        row_of[0] = SHARED_ROW;
        row_of[1] = SHARED_ROW;
        Maptable { rows, row_of }
    }

    /// The row of `mask` (`None` if no complete tree produces it).
    pub(crate) fn row(&self, mask: u16) -> Option<u16> {
        let r = self.row_of[mask as usize];
        (r != u16::MAX).then_some(r)
    }

    /// Bytes of the table (4 bits per entry, as in the paper).
    pub(crate) fn bytes(&self) -> usize {
        self.rows.len() * 8
    }
}

/// The nibbles of one row: heads at or before each position, minus one.
fn row_bits(mask: u16) -> u64 {
    let mut row = 0u64;
    let mut count = 0u64;
    for b in 0..16 {
        count += (mask >> b) as u64 & 1;
        row |= (count.saturating_sub(1) & 15) << (4 * b);
    }
    row
}

/// Entry `b` of a row.
#[inline(always)]
pub(crate) fn entry(row: u64, b: u32) -> u32 {
    ((row >> (4 * b)) & 15) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_offsets() {
        let t = Maptable::get();
        assert_eq!(t.rows.len(), 677);
        assert_eq!(DIRECT_MAX, 22_207);
        // A full mask: every position is its own head.
        let r = t.row(0xffff).unwrap();
        for b in 0..16 {
            assert_eq!(entry(t.rows[r as usize], b), b);
        }
        // Two halves: heads at 0 and 8.
        let r = t.row(0x0101).unwrap();
        assert_eq!(entry(t.rows[r as usize], 7), 0);
        assert_eq!(entry(t.rows[r as usize], 8), 1);
        assert!(t.row(0x0003 | 0x0100).is_none(), "positions 2..8 uncovered");
        assert!(t.row(0x0003 | 0x0004 | 0x0010 | 0x0100).is_some());
        assert!(t.row(0x0002).is_none(), "a head not starting a tree");
        assert_eq!(t.bytes(), 5416);
    }
}

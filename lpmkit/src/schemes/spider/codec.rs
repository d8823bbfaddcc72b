//! Element layouts and their codecs: how an element stores "next hop" and "next row".
//!
//! [`ElementLayout`] is the public name of a layout (with its capacity limits);
//! [`Compact16`], [`Paper32`] and [`Wide32`] are the same layouts as types, whose [`Codec`]
//! encodes elements for the builder and decodes them for the scalar path (the SIMD
//! decoders are in `kernel/ops.rs`).

use super::FIRST_STRIDE_ROW;
use crate::fib::BuildError;
use crate::mem::Plain;

/// How an element of the table is encoded (see the [`spider`](super) module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElementLayout {
    /// 16-bit elements whose value space is split per table: `1..=H` are next hops (`H` the
    /// largest next-hop id), larger values name rows. Holds a table whose largest next hop
    /// plus its rows below the direct pointing table are at most 65,535. An lpmkit
    /// extension.
    Compact16,
    /// The paper's element: next-hop index (low 16 bits) and next-row index (high 16 bits).
    /// At most 65,535 rows and next hops.
    Paper32,
    /// 32-bit elements: a tag bit (the sign bit) and a 31-bit payload, the next hop (tag
    /// set) or `row × 256` (tag clear). At most 2^23 rows and 2^31 − 1 next hops.
    Wide32,
}

impl ElementLayout {
    /// Every layout, smallest first (the order in which the build tries them).
    pub const ALL: [ElementLayout; 3] = [
        ElementLayout::Compact16,
        ElementLayout::Paper32,
        ElementLayout::Wide32,
    ];

    /// Bytes per element.
    #[doc(hidden)]
    pub fn element_bytes(self) -> usize {
        match self {
            ElementLayout::Compact16 => 2,
            ElementLayout::Paper32 | ElementLayout::Wide32 => 4,
        }
    }

    /// The largest next-hop id an element can hold.
    #[doc(hidden)]
    pub fn max_next_hop(self) -> u32 {
        match self {
            ElementLayout::Compact16 | ElementLayout::Paper32 => 0xffff,
            ElementLayout::Wide32 => 0x7fff_ffff,
        }
    }

    /// Whether a table with next hops up to `max_next_hop` and `stride_rows` rows below
    /// the direct pointing table fits the layout.
    #[doc(hidden)]
    pub fn fits(self, max_next_hop: u32, stride_rows: usize) -> bool {
        self.check(max_next_hop, stride_rows).is_ok()
    }

    /// [`fits`](Self::fits), or the error naming the limit.
    pub(crate) fn check(self, max_next_hop: u32, stride_rows: usize) -> Result<(), BuildError> {
        let scheme = || format!("spider ({self} elements)");
        if max_next_hop > self.max_next_hop() {
            return Err(BuildError::NextHopOverflow {
                scheme: scheme(),
                max: self.max_next_hop() as u64,
                requested: max_next_hop as u64,
            });
        }
        let (what, max, requested) = match self {
            // Values 1..=max_nh are next hops, the rest name rows.
            ElementLayout::Compact16 => (
                "next hops + rows below the direct pointing table",
                0xffff,
                max_next_hop as u64 + stride_rows as u64,
            ),
            ElementLayout::Paper32 => (
                "rows (largest row index)",
                0xffff,
                (FIRST_STRIDE_ROW + stride_rows) as u64 - 1,
            ),
            ElementLayout::Wide32 => (
                "rows (largest row index)",
                (1 << 23) - 1,
                (FIRST_STRIDE_ROW + stride_rows) as u64 - 1,
            ),
        };
        if requested > max {
            return Err(BuildError::CapacityExceeded {
                scheme: scheme(),
                what,
                max,
                requested,
            });
        }
        Ok(())
    }

    /// A short name: `compact16`, `paper32` or `wide32`.
    #[doc(hidden)]
    pub fn as_str(self) -> &'static str {
        match self {
            ElementLayout::Compact16 => "compact16",
            ElementLayout::Paper32 => "paper32",
            ElementLayout::Wide32 => "wide32",
        }
    }
}

impl core::fmt::Display for ElementLayout {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An element layout as a type: encoding for the builder, decoding for the scalar path.
///
/// `split` is a per-table parameter: for [`Compact16`] the smallest value that names a row
/// (the largest next hop + 1); the other layouts ignore it.
pub(crate) trait Codec: Copy + Send + Sync + 'static {
    /// The element type.
    type E: Plain;
    /// An element that ends the lookup with next hop `nh` (0 = no route).
    fn leaf(nh: u32, split: u32) -> Self::E;
    /// An element that continues in row `row` (`row >= FIRST_STRIDE_ROW`).
    fn pointer(row: u32, split: u32) -> Self::E;
    /// Decodes an element: the index of the next row's first element (0 = EoL) and the
    /// next hop the element sets (0 = keep the current result).
    fn decode(e: Self::E, split: u32) -> (usize, u32);
}

/// Marker for [`ElementLayout::Compact16`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Compact16;
/// Marker for [`ElementLayout::Paper32`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Paper32;
/// Marker for [`ElementLayout::Wide32`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Wide32;

impl Codec for Compact16 {
    type E = u16;
    #[inline(always)]
    fn leaf(nh: u32, split: u32) -> u16 {
        debug_assert!(nh < split);
        nh as u16
    }
    #[inline(always)]
    fn pointer(row: u32, split: u32) -> u16 {
        let v = split + (row - FIRST_STRIDE_ROW as u32);
        debug_assert!(row as usize >= FIRST_STRIDE_ROW && v <= u16::MAX as u32);
        v as u16
    }
    #[inline(always)]
    fn decode(e: u16, split: u32) -> (usize, u32) {
        let v = e as u32;
        if v >= split {
            (((v - split) as usize + FIRST_STRIDE_ROW) << 8, 0)
        } else {
            (0, v)
        }
    }
}

impl Codec for Paper32 {
    type E = u32;
    #[inline(always)]
    fn leaf(nh: u32, _: u32) -> u32 {
        debug_assert!(nh <= 0xffff);
        nh
    }
    #[inline(always)]
    fn pointer(row: u32, _: u32) -> u32 {
        debug_assert!(row <= 0xffff && row as usize >= FIRST_STRIDE_ROW);
        row << 16
    }
    #[inline(always)]
    fn decode(e: u32, _: u32) -> (usize, u32) {
        (((e >> 16) as usize) << 8, e & 0xffff)
    }
}

impl Codec for Wide32 {
    type E = u32;
    #[inline(always)]
    fn leaf(nh: u32, _: u32) -> u32 {
        debug_assert!(nh < 1 << 31);
        if nh == 0 {
            0
        } else {
            0x8000_0000 | nh
        }
    }
    #[inline(always)]
    fn pointer(row: u32, _: u32) -> u32 {
        debug_assert!(row < 1 << 23 && row as usize >= FIRST_STRIDE_ROW);
        row << 8
    }
    #[inline(always)]
    fn decode(e: u32, _: u32) -> (usize, u32) {
        if e & 0x8000_0000 != 0 {
            (0, e & 0x7fff_ffff)
        } else {
            (e as usize, 0)
        }
    }
}

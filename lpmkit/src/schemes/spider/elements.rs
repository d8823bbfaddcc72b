//! Spider's element array: one zeroed, aligned allocation of rows, in one of the
//! element layouts ([`ElementLayout`]), and the table that pairs it with its decoding
//! parameter.

use super::codec::ElementLayout;
use super::ROW;
use crate::mem::{Plain, TableBuf};

/// Elements of padding after the last row, so a 32-bit read of the last 16-bit element
/// (the `Compact16` gather reads 4 bytes at scale 2) stays inside the allocation.
pub(crate) const PAD_ELEMENTS: usize = 32;

/// The element array: `rows × 256` zeroed `u16`/`u32` elements plus [`PAD_ELEMENTS`], in a
/// [`TableBuf`] (huge-page backed when large: a lookup touches a random row, and a 10–40 MiB
/// table in 4 KiB pages would miss the TLB on most of them).
pub(crate) struct Elements<E: Plain> {
    buf: TableBuf<E>,
    /// Elements in use (`rows × 256`); the buffer holds `PAD_ELEMENTS` more.
    len: usize,
}

impl<E: Plain> Elements<E> {
    /// `rows × 256` zeroed elements (all-zero is End-of-Lookup in every layout).
    ///
    /// # Panics
    /// If the size overflows `isize` (a table that large does not fit in memory anyway;
    /// the builder checks the row limits first); aborts if the allocation fails.
    pub(crate) fn zeroed(rows: usize) -> Self {
        const {
            assert!(core::mem::size_of::<E>() == 2 || core::mem::size_of::<E>() == 4);
        }
        let len = rows * ROW;
        Elements {
            buf: TableBuf::zeroed(len + PAD_ELEMENTS),
            len,
        }
    }

    /// The elements in use.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[E] {
        &self.buf[..self.len]
    }

    /// The elements in use, for the builder.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [E] {
        &mut self.buf[..self.len]
    }

    /// The first element (gathers use it as their base).
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *const E {
        self.buf.as_ptr()
    }

    /// Bytes of the table lookups read: the rows and the padding after them.
    pub(crate) fn bytes(&self) -> usize {
        (self.len + PAD_ELEMENTS) * core::mem::size_of::<E>()
    }

    /// Bytes allocated (whole huge pages for large tables).
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.buf.allocated_bytes()
    }
}

/// The elements in one of the layouts.
pub(crate) enum Elems {
    Compact16(Elements<u16>),
    Paper32(Elements<u32>),
    Wide32(Elements<u32>),
}

/// The table: elements plus the per-table decoding parameter.
pub(crate) struct Table {
    pub(crate) elems: Elems,
    /// [`Codec`](codec::Codec)'s `split` (the first row value of `Compact16`; 0 otherwise).
    pub(crate) split: u32,
}

impl Table {
    pub(super) fn layout(&self) -> ElementLayout {
        match self.elems {
            Elems::Compact16(_) => ElementLayout::Compact16,
            Elems::Paper32(_) => ElementLayout::Paper32,
            Elems::Wide32(_) => ElementLayout::Wide32,
        }
    }

    pub(super) fn bytes(&self) -> usize {
        match &self.elems {
            Elems::Compact16(t) => t.bytes(),
            Elems::Paper32(t) | Elems::Wide32(t) => t.bytes(),
        }
    }

    pub(super) fn allocated_bytes(&self) -> usize {
        match &self.elems {
            Elems::Compact16(t) => t.allocated_bytes(),
            Elems::Paper32(t) | Elems::Wide32(t) => t.allocated_bytes(),
        }
    }
}

/// Runs `$body` with `$t` bound to the elements and `$C` to the codec type.
macro_rules! with_table {
    ($table:expr, |$t:ident, $C:ident| $body:expr) => {
        match &$table.elems {
            $crate::schemes::spider::Elems::Compact16($t) => {
                type $C = $crate::schemes::spider::codec::Compact16;
                $body
            }
            $crate::schemes::spider::Elems::Paper32($t) => {
                type $C = $crate::schemes::spider::codec::Paper32;
                $body
            }
            $crate::schemes::spider::Elems::Wide32($t) => {
                type $C = $crate::schemes::spider::codec::Wide32;
                $body
            }
        }
    };
}
pub(crate) use with_table;

//! The scalar lookup path of DIR-24-8 for IPv4, the twin the SIMD kernel (`kernel.rs`)
//! is checked against: one key, and blocks of [`BATCH`] keys in three passes (prefetch
//! every first-table entry, then every group line a key needs, then resolve), so that up
//! to a block's cache misses overlap, as DPDK's `dir24_8_lookup_bulk`.

use super::{Tables, BATCH, PAD, TBL24_LEN};
use crate::schemes::common::Word;
use crate::simd::prefetch;

impl<E: Word> Tables<E> {
    /// The next hop of `addr`.
    #[inline(always)]
    pub(super) fn resolve(&self, addr: u32) -> u32 {
        let e = self.tbl24_entry(addr);
        if e & 1 == 0 {
            e >> 1
        } else {
            self.group_entry(e, addr) >> 1
        }
    }

    /// The first-table entry for `addr`.
    #[inline(always)]
    fn tbl24_entry(&self, addr: u32) -> u32 {
        debug_assert_eq!(self.tbl24.len(), TBL24_LEN + PAD);
        // SAFETY: `addr >> 8 < 2^24 = TBL24_LEN < tbl24.len()` (the builder allocates
        // `TBL24_LEN + PAD` entries).
        unsafe { self.tbl24.get_unchecked((addr >> 8) as usize).get() }
    }

    /// The `tbl8` entry for `addr` in the group named by the extended entry `e`.
    #[inline(always)]
    fn group_entry(&self, e: u32, addr: u32) -> u32 {
        let i = (((e >> 1) as usize) << 8) | (addr & 0xff) as usize;
        debug_assert!(i + PAD < self.tbl8.len());
        // SAFETY: the builder writes extended entries only with the index of a group it
        // allocated, so `i < groups * 256 <= tbl8.len()`.
        unsafe { self.tbl8.get_unchecked(i).get() }
    }

    /// The scalar bulk lookup: blocks of `BATCH` keys, three passes each.
    pub(super) fn lookup_batch_scalar(&self, addrs: &[u32], out: &mut [u32]) {
        let mut blocks = addrs.chunks_exact(BATCH);
        let mut outs = out.chunks_exact_mut(BATCH);
        for (keys, res) in (&mut blocks).zip(&mut outs) {
            for &a in keys {
                prefetch(self.tbl24.as_ptr().wrapping_add((a >> 8) as usize));
            }
            for (r, &a) in res.iter_mut().zip(keys) {
                let e = self.tbl24_entry(a);
                if e & 1 != 0 {
                    let i = (((e >> 1) as usize) << 8) | (a & 0xff) as usize;
                    prefetch(self.tbl8.as_ptr().wrapping_add(i));
                }
                *r = e;
            }
            for (r, &a) in res.iter_mut().zip(keys) {
                let e = *r;
                *r = if e & 1 == 0 {
                    e >> 1
                } else {
                    self.group_entry(e, a) >> 1
                };
            }
        }
        let (keys, res) = (blocks.remainder(), outs.into_remainder());
        for (r, &a) in res.iter_mut().zip(keys) {
            *r = self.resolve(a);
        }
    }
}

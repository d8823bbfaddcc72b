//! The data path: the paper's lookup (§4.1 for level 1, §4.2 for the chunks), one key at
//! a time and interleaved over a batch.

use super::build::{header_words, DENSE, SPARSE};
use super::maptable::{entry, DIRECT_BASE};
use super::Levels;
use crate::schemes::common::bits::{count_le_scalar, count_le_swar};
use crate::schemes::common::Word;
use crate::simd::prefetch;

/// Offset of the pointers in a level-1 block (4,096 codewords + 1,024 base indices).
pub(crate) const L1_PTRS: usize = 5120;

impl<P: Word> Levels<P> {
    /// 16-bit word `i` of the block memory.
    #[inline(always)]
    fn w(&self, i: usize) -> u32 {
        // SAFETY: `i` lies in a published block (the root, a directory entry or a
        // codeword names it), which the writer committed before publishing and does
        // not reuse before every reader has moved past it.
        unsafe { self.mem.get(i) as u32 }
    }

    /// Pointer `k` of the pointers starting at word `at`.
    #[inline(always)]
    fn ptr(&self, at: usize, k: u32) -> u32 {
        let words = core::mem::size_of::<P>() / 2;
        let i = at + k as usize * words;
        debug_assert!(i + words <= self.mem.committed());
        // SAFETY: as in `w`; pointer arrays start at even word offsets of blocks that
        // start at even offsets, so a `u32` pointer is 4-byte aligned.
        unsafe { (self.mem.as_ptr().add(i) as *const P).read().get() }
    }

    /// The level-1 block's offset (a switch word).
    #[inline(always)]
    pub(crate) fn root(&self) -> usize {
        // SAFETY: word 0 is committed.
        unsafe { self.root.load_acquire(0) as usize }
    }

    /// Level 1: the pointer (or next hop) of `a`.
    #[inline(always)]
    pub(crate) fn level1(&self, o: usize, a: u32) -> u32 {
        let cw = self.w(o + (a >> 20) as usize);
        let ten = cw >> 6;
        if ten >= DIRECT_BASE {
            return ((ten - DIRECT_BASE) << 6) | (cw & 63);
        }
        let base = self.w(o + 4096 + (a >> 22) as usize);
        let pix = base + (cw & 63) + entry(self.rows[ten as usize], (a >> 16) & 15);
        self.ptr(o + L1_PTRS, pix)
    }

    /// Directory entry `id` of level 2 (`l3 = false`) or 3.
    #[inline(always)]
    pub(crate) fn dir(&self, l3: bool, id: u32) -> u32 {
        let d = if l3 { &self.dir3 } else { &self.dir2 };
        // SAFETY: chunk ids in published pointers are below the directory's committed
        // length (the writer grows it before it publishes a pointer to a new id).
        unsafe { d.load_acquire(id as usize) }
    }

    /// The pointer of position `byte` in the chunk of directory entry `d`.
    #[inline(always)]
    pub(crate) fn chunk(&self, d: u32, byte: u32, swar: bool) -> u32 {
        let kind = d >> 30;
        let o = (d & 0x3fff_ffff) as usize;
        match kind {
            SPARSE => {
                // SAFETY: the sparse header is 4 committed words (8 bytes) at `o`.
                let heads = unsafe { (self.mem.as_ptr().add(o) as *const u64).read_unaligned() };
                let n = if swar {
                    count_le_swar(heads, byte)
                } else {
                    count_le_scalar(heads, byte)
                };
                self.ptr(o + header_words(SPARSE), n - 1)
            }
            DENSE => {
                let cw = self.w(o + (byte >> 4) as usize);
                let pix = (cw & 63) + entry(self.rows[(cw >> 6) as usize], byte & 15);
                self.ptr(o + header_words(DENSE), pix)
            }
            _ => {
                let cw = self.w(o + (byte >> 4) as usize);
                let base = self.w(o + 16 + (byte >> 6) as usize);
                let pix = base + (cw & 63) + entry(self.rows[(cw >> 6) as usize], byte & 15);
                self.ptr(o + header_words(2), pix)
            }
        }
    }

    /// One lookup: the next hop (0 = none).
    #[inline(always)]
    pub(crate) fn lookup_one(&self, a: u32, swar: bool) -> u32 {
        let p = self.level1(self.root(), a);
        if p < self.lim {
            return p;
        }
        let p = self.chunk(self.dir(false, p - self.lim), (a >> 8) & 255, swar);
        if p < self.lim {
            return p;
        }
        self.chunk(self.dir(true, p - self.lim), a & 255, swar)
    }

    /// [`lookup_one`](Self::lookup_one) with `stall` run after the root was read.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn lookup_stalled(&self, a: u32, stall: impl FnOnce()) -> u32 {
        let o = self.root();
        stall();
        let p = self.level1(o, a);
        if p < self.lim {
            return p;
        }
        let p = self.chunk(self.dir(false, p - self.lim), (a >> 8) & 255, true);
        if p < self.lim {
            return p;
        }
        self.chunk(self.dir(true, p - self.lim), a & 255, true)
    }

    /// Looks up `B` keys in stages, so that the cache misses of different keys overlap:
    /// level 1 for all (its codewords and base indices stay cached; the pointers are
    /// prefetched first), then the level-2 directory entries and chunks of the keys that
    /// continue, then level 3.
    #[inline(always)]
    pub(crate) fn lookup_block<const B: usize>(&self, keys: &[u32], out: &mut [u32], swar: bool) {
        debug_assert!(keys.len() == B && out.len() == B);
        let o = self.root();
        let lim = self.lim;
        let mut lanes = [0u8; B];
        let mut n = 0usize;
        for i in 0..B {
            let p = self.level1(o, keys[i]);
            out[i] = p;
            prefetch(
                self.dir2
                    .as_ptr()
                    .wrapping_add(p.wrapping_sub(lim) as usize),
            );
            lanes[n] = i as u8;
            n += (p >= lim) as usize;
        }
        if n == 0 {
            return;
        }
        let mut dirs = [0u32; B];
        for &i in &lanes[..n] {
            let d = self.dir(false, out[i as usize] - lim);
            dirs[i as usize] = d;
            prefetch(self.mem.as_ptr().wrapping_add((d & 0x3fff_ffff) as usize));
        }
        let mut m = 0usize;
        for j in 0..n {
            let i = lanes[j] as usize;
            let p = self.chunk(dirs[i], (keys[i] >> 8) & 255, swar);
            out[i] = p;
            prefetch(
                self.dir3
                    .as_ptr()
                    .wrapping_add(p.wrapping_sub(lim) as usize),
            );
            lanes[m] = i as u8;
            m += (p >= lim) as usize;
        }
        for &i in &lanes[..m] {
            let i = i as usize;
            out[i] = self.chunk(self.dir(true, out[i] - lim), keys[i] & 255, swar);
        }
    }
}

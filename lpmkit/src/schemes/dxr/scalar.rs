//! The lookup path (§3.3): one key, a batch of keys with interleaved branch-free binary
//! searches, and the paper's own search loop (which counts its steps for Table 3).
//!
//! Short and long chunks are searched by the same code: an entry `i` of a chunk at byte
//! offset `off` is the 32 bits at `off + (i << es)` masked to the entry width (`es` = 1 and
//! mask `0xffff` for 16-bit entries, `es` = 2 and no mask for 32-bit ones), compared with
//! the key's low bits shaped like an entry whose next-hop bits are all ones. Then "the
//! range starts at or below the key" is a single unsigned `entry <= key'`.

use super::{Tables, BATCH, FORMAT_LONG, POSITION_SHIFT, SIZE_MASK};
use crate::simd::prefetch;

/// The state of one binary search over a chunk.
#[derive(Clone, Copy, Default)]
pub(super) struct Search {
    /// Byte offset of the chunk in the range table.
    off: usize,
    /// Entries still in play (`base .. base + len`).
    len: u32,
    /// First entry in play.
    base: u32,
    /// log2 of the entry size in bytes.
    es: u32,
    /// Mask of the entry width.
    mask: u32,
    /// Mask of the next-hop bits of an entry.
    nh_mask: u32,
    /// The key's low bits, shaped like an entry with all next-hop bits set.
    kc: u32,
}

impl Tables {
    /// The lookup-table entry of `key`.
    #[inline(always)]
    pub(super) fn entry_of(&self, key: u32) -> u32 {
        let i = (key >> (32 - self.k)) as usize;
        debug_assert!(i < self.lt.len());
        // SAFETY: `key >> (32 - k) < 2^k`, and the lookup table has `2^k` entries.
        unsafe { *self.lt.get_unchecked(i) }
    }

    /// The search of `key` in the (non-direct) chunk of entry `e`.
    #[inline(always)]
    pub(super) fn search(&self, e: u32, key: u32) -> Search {
        let off = ((e >> POSITION_SHIFT) as usize) << (self.pos_shift + 2);
        let len = (e & SIZE_MASK) << self.size_shift;
        // The address bits below the k indexed ones (at most 16 since k >= 16).
        let low = key & (u32::MAX >> self.k);
        if e & FORMAT_LONG != 0 {
            Search {
                off,
                len,
                base: 0,
                es: 2,
                mask: u32::MAX,
                nh_mask: 0xffff,
                kc: (low << 16) | 0xffff,
            }
        } else {
            Search {
                off,
                len,
                base: 0,
                es: 1,
                mask: 0xffff,
                nh_mask: 0xff,
                kc: low | 0xff,
            }
        }
    }

    /// The 32 bits at byte offset `off` of the range table.
    #[inline(always)]
    fn read(&self, off: usize) -> u32 {
        debug_assert!(
            off + 4 <= self.rt.len() * 4,
            "read at byte {off} of {}",
            self.rt.len() * 4
        );
        // SAFETY: the builder and the updater only write lookup-table entries whose chunk
        // lies inside the range table, searches only read entries `0..len` of a chunk, and
        // the `PAD_WORDS` after the last word keep a 4-byte read of the last 2-byte entry
        // inside the allocation. x86 and the `read_unaligned` contract allow any alignment.
        unsafe {
            (self.rt.as_ptr() as *const u8)
                .add(off)
                .cast::<u32>()
                .read_unaligned()
        }
    }

    /// Entry `i` of the chunk searched by `s`.
    #[inline(always)]
    fn entry_at(&self, s: &Search, i: u32) -> u32 {
        self.read(s.off + ((i as usize) << s.es)) & s.mask
    }

    /// One branch-free halving step.
    #[inline(always)]
    fn step(&self, s: &mut Search) {
        let half = s.len / 2;
        let v = self.entry_at(s, s.base + half);
        s.base = if v <= s.kc { s.base + half } else { s.base };
        s.len -= half;
    }

    /// Runs a search to the end; returns the local next hop.
    #[inline(always)]
    fn finish(&self, mut s: Search) -> u32 {
        while s.len > 1 {
            self.step(&mut s);
        }
        self.entry_at(&s, s.base) & s.nh_mask
    }

    /// The local next-hop id of `key`.
    #[inline]
    pub(super) fn lookup_local(&self, key: u32) -> u32 {
        let e = self.entry_of(key);
        if e & SIZE_MASK == 0 {
            return e >> POSITION_SHIFT;
        }
        self.finish(self.search(e, key))
    }

    /// Bulk lookup: blocks of [`BATCH`] keys, three passes each (prefetch the lookup-table
    /// entries; read them, resolve direct chunks and prefetch every first probe; run the
    /// remaining searches in lock step, prefetching each lane's next probe).
    pub(super) fn lookup_batch<const REMAP: bool>(&self, keys: &[u32], out: &mut [u32]) {
        debug_assert_eq!(keys.len(), out.len());
        let shift = 32 - self.k;
        let lt = self.lt.as_ptr();
        let rt = self.rt.as_ptr() as *const u8;
        for (kb, ob) in keys.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
            for &a in kb {
                prefetch(lt.wrapping_add((a >> shift) as usize));
            }
            let mut lanes = [Search::default(); BATCH];
            let mut slot = [0u8; BATCH];
            let mut n = 0;
            let mut rounds = 0;
            for (i, (&a, o)) in kb.iter().zip(ob.iter_mut()).enumerate() {
                let e = self.entry_of(a);
                if e & SIZE_MASK == 0 {
                    *o = e >> POSITION_SHIFT;
                    continue;
                }
                let s = self.search(e, a);
                prefetch(rt.wrapping_add(s.off + (((s.len / 2) as usize) << s.es)));
                rounds = rounds.max(32 - (s.len - 1).leading_zeros());
                lanes[n] = s;
                slot[n] = i as u8;
                n += 1;
            }
            // Lanes whose search is over (len == 1) step in place: half = 0 rereads `base`.
            for _ in 0..rounds {
                for s in &mut lanes[..n] {
                    self.step(s);
                    let next = s.off + (((s.base + s.len / 2) as usize) << s.es);
                    prefetch(rt.wrapping_add(next));
                }
            }
            for (s, &i) in lanes[..n].iter().zip(&slot[..n]) {
                ob[i as usize] = self.entry_at(s, s.base) & s.nh_mask;
            }
            if REMAP {
                for o in ob.iter_mut() {
                    *o = self.map(*o);
                }
            }
        }
    }

    /// The paper's lookup loop (`dxr_lookup` of the authors' code: a three-way comparison
    /// that stops when the key's range is found); returns the local next hop and the
    /// number of steps (0 for a direct chunk).
    pub(super) fn lookup_counting(&self, key: u32) -> (u32, usize) {
        let e = self.entry_of(key);
        if e & SIZE_MASK == 0 {
            return (e >> POSITION_SHIFT, 0);
        }
        let s = self.search(e, key);
        // `entry > kc` is "the key is below the range's start".
        let below = |i: u32| self.entry_at(&s, i) > s.kc;
        let mut lower = 0u32;
        let mut upper = s.len - 1;
        let mut middle = upper / 2;
        let mut steps = 0;
        loop {
            steps += 1;
            if below(middle) {
                upper = middle;
                middle = (middle + lower) / 2;
            } else {
                debug_assert!(middle < s.len - 1);
                if below(middle + 1) {
                    lower = middle;
                    break;
                }
                lower = middle + 1;
                middle = (upper + middle).div_ceil(2);
            }
            if upper == lower {
                break;
            }
        }
        (self.entry_at(&s, lower) & s.nh_mask, steps)
    }
}

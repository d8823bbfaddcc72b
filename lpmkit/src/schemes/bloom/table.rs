//! The hash table behind each filter (§3.1: `[prefix, next hop]` pairs), chained, with
//! each bucket's chain stored as one contiguous block instead of a linked list.
//!
//! * **Layout.** `heads[b]` is the position of bucket `b`'s block in the block arena (0:
//!   empty bucket). A block is `[count, entry, entry, …]`; an entry is the key (one 32-bit
//!   word for IPv4 keys, two for the 64-bit IPv6 keys, low word first) and its value (a
//!   next hop, or for the IPv6 gate the position of a range block). A probe reads the
//!   head and then one block — the chain the paper traverses, with its entries side by
//!   side (one or two cache lines instead of one per entry).
//! * **Buckets.** `⌈n / load⌉` of them (`load` = [`BloomConfig::ht_load`](super::BloomConfig::ht_load),
//!   1 by default), fixed at build; the bucket of a key is its table hash `mod` the count.
//! * **Updates in place.** A changed bucket gets a new block (allocated from the level's
//!   `FreeSpace`, written while unreachable), published with one atomic store of its head;
//!   the old block is retired, reused only after the grace period. Blocks never change
//!   once published, so a lookup reads a whole old chain or a whole new one.

use super::hash::FastMod;
use crate::schemes::common::{Arena, FreeSpace};

/// The block arena is full: the structure must be rebuilt with room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Exhausted;

/// A level's hash table: what lookups read.
pub(crate) struct Table {
    heads: Arena<u32>,
    buckets: FastMod,
    blocks: Arena<u32>,
    /// Words per entry: 2 (32-bit keys) or 3 (64-bit keys).
    ew: usize,
}

impl core::fmt::Debug for Table {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Table")
            .field("buckets", &self.buckets.divisor())
            .field("entry_words", &self.ew)
            .finish()
    }
}

/// The writer's side of a [`Table`]: free space of the block arena and scratch.
#[derive(Clone, Debug)]
pub(crate) struct TableSpace {
    pub(crate) space: FreeSpace,
    /// Keys stored.
    pub(crate) keys: u64,
    buf: Vec<u32>,
}

/// Words of a block of `n` entries of `ew` words.
#[inline(always)]
fn block_words(n: usize, ew: usize) -> usize {
    1 + n * ew
}

impl Table {
    /// A table of `buckets` buckets holding `entries` (`(key, value)`, sorted by bucket,
    /// as [`bucket_of`](Self::bucket) gives), with room for the block arena to grow to
    /// `capacity` words; `None` if the memory cannot be had.
    pub(crate) fn build(
        buckets: u32,
        wide: bool,
        entries: &[(u32, u64, u32)],
        capacity: usize,
    ) -> Option<(Self, TableSpace)> {
        let ew = if wide { 3 } else { 2 };
        let mut heads = Arena::<u32>::zeroed(buckets as usize)?;
        let nonempty = {
            let mut c = 0usize;
            let mut last = u32::MAX;
            for &(b, _, _) in entries {
                if b != last {
                    c += 1;
                    last = b;
                }
            }
            c
        };
        let words = 1 + nonempty + entries.len() * ew;
        let mut blocks = Arena::<u32>::new(capacity.max(words + 1024))?;
        // SAFETY: no reader can see the arena yet.
        if !unsafe { blocks.grow(words) } {
            return None;
        }
        let mut space = FreeSpace::new(1);
        {
            let heads = heads.slice_mut(0..buckets as usize);
            let top = space.bump(words - 1);
            debug_assert_eq!(top, 1);
            let out = blocks.slice_mut(0..words);
            let mut at = 1usize;
            let mut i = 0;
            while i < entries.len() {
                let b = entries[i].0;
                let j = i + entries[i..].iter().take_while(|e| e.0 == b).count();
                heads[b as usize] = at as u32;
                out[at] = (j - i) as u32;
                at += 1;
                for &(_, key, value) in &entries[i..j] {
                    out[at] = key as u32;
                    if wide {
                        out[at + 1] = (key >> 32) as u32;
                    }
                    out[at + ew - 1] = value;
                    at += ew;
                }
                i = j;
            }
            debug_assert_eq!(at, words);
        }
        Some((
            Table {
                heads,
                buckets: FastMod::new(buckets),
                blocks,
                ew,
            },
            TableSpace {
                space,
                keys: entries.len() as u64,
                buf: Vec::new(),
            },
        ))
    }

    /// Buckets.
    pub(crate) fn buckets(&self) -> u32 {
        self.buckets.divisor()
    }

    /// The bucket of table hash `h`.
    #[inline(always)]
    pub(crate) fn bucket(&self, h: u32) -> usize {
        self.buckets.reduce(h) as usize
    }

    /// Bucket `b`'s block position (0: empty), loaded atomically (a switch word).
    #[inline(always)]
    pub(crate) fn head(&self, b: usize) -> u32 {
        // SAFETY: `b < buckets`, all committed at build.
        unsafe { self.heads.load_acquire(b) }
    }

    /// Prefetches bucket `b`'s head.
    #[inline(always)]
    pub(crate) fn prefetch_head(&self, b: usize) {
        crate::simd::prefetch(self.heads.as_ptr().wrapping_add(b));
    }

    /// Prefetches the block at `pos`.
    #[inline(always)]
    pub(crate) fn prefetch_block(&self, pos: u32) {
        crate::simd::prefetch(self.blocks.as_ptr().wrapping_add(pos as usize));
    }

    /// Prefetches the second cache line a block at `pos` may run into: with 64-bit keys
    /// (12-byte entries) a chain of two or more often crosses a line; with 32-bit keys
    /// (8 bytes) that is rare enough not to pay for the extra fill.
    #[inline(always)]
    pub(crate) fn prefetch_block_tail(&self, pos: u32) {
        if self.ew == 3 {
            crate::simd::prefetch(self.blocks.as_ptr().wrapping_add(pos as usize + 15));
        }
    }

    /// The value of `key` in the block at `pos` (a published head, not 0).
    #[inline(always)]
    pub(crate) fn scan(&self, pos: u32, key: u64) -> Option<u32> {
        let p = pos as usize;
        // SAFETY: a published block lies below the committed top and is never written
        // while reachable (module docs); its count says how many entries follow.
        unsafe {
            let base = self.blocks.as_ptr().add(p);
            let n = *base as usize;
            debug_assert!(p + block_words(n, self.ew) <= self.blocks.committed());
            let e = base.add(1);
            if self.ew == 2 {
                for i in 0..n {
                    if *e.add(2 * i) as u64 == key {
                        return Some(*e.add(2 * i + 1));
                    }
                }
            } else {
                for i in 0..n {
                    let k = *e.add(3 * i) as u64 | (*e.add(3 * i + 1) as u64) << 32;
                    if k == key {
                        return Some(*e.add(3 * i + 2));
                    }
                }
            }
        }
        None
    }

    /// The value of `key` whose table hash is `h`.
    #[inline(always)]
    pub(crate) fn get(&self, key: u64, h: u32) -> Option<u32> {
        match self.head(self.bucket(h)) {
            0 => None,
            pos => self.scan(pos, key),
        }
    }

    /// Entries in bucket `b` (for figures).
    pub(crate) fn chain_len(&self, b: usize) -> usize {
        match self.head(b) {
            // SAFETY: a published block (as in `scan`).
            pos if pos != 0 => unsafe { self.blocks.get(pos as usize) as usize },
            _ => 0,
        }
    }

    /// Every `(key, value)` stored (for checks and figures).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn entries(&self) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        for b in 0..self.buckets() as usize {
            let pos = self.head(b) as usize;
            if pos == 0 {
                continue;
            }
            // SAFETY: as in `scan`.
            let n = unsafe { self.blocks.get(pos) } as usize;
            for i in 0..n {
                let e = pos + 1 + i * self.ew;
                // SAFETY: as in `scan`.
                unsafe {
                    let mut key = self.blocks.get(e) as u64;
                    if self.ew == 3 {
                        key |= (self.blocks.get(e + 1) as u64) << 32;
                    }
                    out.push((key, self.blocks.get(e + self.ew - 1)));
                }
            }
        }
        out
    }

    /// Bytes lookups may touch: heads and blocks up to `top`.
    pub(crate) fn bytes(&self, top: usize) -> usize {
        self.heads.committed_bytes() + top * 4
    }
}

impl TableSpace {
    /// Sets `key` (table hash `h`) to `value` in `t`: its bucket gets a new block (the
    /// old one is retired as `(position, words)`). Returns the previous value.
    ///
    /// # Safety
    /// The caller is `t`'s one writer and `self` its space; retired blocks are reused
    /// only after their grace period.
    pub(crate) unsafe fn set(
        &mut self,
        t: &Table,
        key: u64,
        h: u32,
        value: u32,
        retire: &mut Vec<(u32, u32)>,
    ) -> Result<Option<u32>, Exhausted> {
        let b = t.bucket(h);
        let old_pos = t.head(b);
        let mut buf = core::mem::take(&mut self.buf);
        buf.clear();
        let old = self.read_block(t, old_pos, key, &mut buf);
        // The key's entry goes last (after the ones kept).
        buf.push(key as u32);
        if t.ew == 3 {
            buf.push((key >> 32) as u32);
        }
        buf.push(value);
        // SAFETY: forwarded.
        let r = unsafe { self.publish(t, b, old_pos, &buf, retire) };
        self.buf = buf;
        r?;
        if old.is_none() {
            self.keys += 1;
        }
        Ok(old)
    }

    /// Removes `key` (table hash `h`) from `t`; returns its value if it was there.
    ///
    /// # Safety
    /// As [`set`](Self::set).
    pub(crate) unsafe fn remove(
        &mut self,
        t: &Table,
        key: u64,
        h: u32,
        retire: &mut Vec<(u32, u32)>,
    ) -> Result<Option<u32>, Exhausted> {
        let b = t.bucket(h);
        let old_pos = t.head(b);
        let mut buf = core::mem::take(&mut self.buf);
        buf.clear();
        let old = self.read_block(t, old_pos, key, &mut buf);
        let r = if old.is_some() {
            // SAFETY: forwarded.
            unsafe { self.publish(t, b, old_pos, &buf, retire) }
        } else {
            Ok(())
        };
        self.buf = buf;
        r?;
        if old.is_some() {
            self.keys -= 1;
        }
        Ok(old)
    }

    /// Appends the entries of the block at `pos` other than `key`'s to `buf`; returns
    /// `key`'s value.
    fn read_block(&self, t: &Table, pos: u32, key: u64, buf: &mut Vec<u32>) -> Option<u32> {
        if pos == 0 {
            return None;
        }
        let mut found = None;
        // SAFETY: the live block (as in `scan`); the writer reads it like a reader.
        let n = unsafe { t.blocks.get(pos as usize) } as usize;
        for i in 0..n {
            let e = pos as usize + 1 + i * t.ew;
            // SAFETY: as above.
            let words: Vec<u32> = (0..t.ew).map(|j| unsafe { t.blocks.get(e + j) }).collect();
            let mut k = words[0] as u64;
            if t.ew == 3 {
                k |= (words[1] as u64) << 32;
            }
            if k == key {
                found = Some(words[t.ew - 1]);
            } else {
                buf.extend_from_slice(&words);
            }
        }
        found
    }

    /// Writes the entries `words` as bucket `b`'s new block (none: the bucket empties),
    /// publishes it and retires the block at `old_pos`.
    ///
    /// # Safety
    /// As [`set`](Self::set).
    unsafe fn publish(
        &mut self,
        t: &Table,
        b: usize,
        old_pos: u32,
        words: &[u32],
        retire: &mut Vec<(u32, u32)>,
    ) -> Result<(), Exhausted> {
        let new_pos = if words.is_empty() {
            0
        } else {
            let n = block_words(words.len() / t.ew, t.ew);
            let pos = self.space.alloc(n);
            // SAFETY: the one writer (caller).
            if pos + n > t.blocks.capacity() || !unsafe { t.blocks.grow(self.space.top()) } {
                self.space.free(pos, n);
                return Err(Exhausted);
            }
            // SAFETY: `pos..pos + n` was just allocated: committed and unreachable.
            unsafe {
                t.blocks.write(pos, (words.len() / t.ew) as u32);
                for (i, &w) in words.iter().enumerate() {
                    t.blocks.write(pos + 1 + i, w);
                }
            }
            pos as u32
        };
        // The switch: one atomic store, after the block is complete.
        // SAFETY: `b < buckets`; the one writer.
        unsafe { t.heads.store_release(b, new_pos) };
        if old_pos != 0 {
            // SAFETY: the live block's count (it is still intact).
            let n = unsafe { t.blocks.get(old_pos as usize) } as usize;
            retire.push((old_pos, block_words(n, t.ew) as u32));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_set_remove() {
        for wide in [false, true] {
            let key = |i: u64| if wide { i << 40 | i } else { i * 256 };
            let buckets = 7u32;
            let hash = |k: u64| (k as u32) ^ (k >> 40) as u32;
            let mut entries: Vec<(u32, u64, u32)> = (1..20u64)
                .map(|i| (hash(key(i)) % buckets, key(i), i as u32))
                .collect();
            entries.sort_by_key(|e| e.0);
            let (t, mut s) = Table::build(buckets, wide, &entries, 1 << 12).unwrap();
            for i in 1..20u64 {
                assert_eq!(t.get(key(i), hash(key(i))), Some(i as u32));
            }
            assert_eq!(t.get(key(99), hash(key(99))), None);
            let mut retired = Vec::new();
            // SAFETY: no other thread.
            unsafe {
                assert_eq!(
                    s.set(&t, key(3), hash(key(3)), 33, &mut retired),
                    Ok(Some(3))
                );
                assert_eq!(
                    s.set(&t, key(99), hash(key(99)), 99, &mut retired),
                    Ok(None)
                );
                assert_eq!(
                    s.remove(&t, key(5), hash(key(5)), &mut retired),
                    Ok(Some(5))
                );
                assert_eq!(s.remove(&t, key(5), hash(key(5)), &mut retired), Ok(None));
            }
            assert_eq!(retired.len(), 3);
            assert_eq!(t.get(key(3), hash(key(3))), Some(33));
            assert_eq!(t.get(key(99), hash(key(99))), Some(99));
            assert_eq!(t.get(key(5), hash(key(5))), None);
            assert_eq!(s.keys, 19);
            let mut all = t.entries();
            all.sort();
            assert_eq!(all.len(), 19);
            for (pos, words) in retired {
                s.space.free(pos as usize, words as usize);
            }
        }
    }
}

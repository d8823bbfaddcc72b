//! The exact-match index of the [`Rib`](super::Rib): prefix → route node, in O(1).
//!
//! An open-addressing hash table with linear probing over one array of `u64` slots. A
//! slot holds the high 32 bits of the prefix's hash (its *tag*) and the node's index plus
//! one (0 is an empty slot). The table is a power of two in size and a prefix's home slot
//! is given by the top bits of its hash, which the tag holds: so growing the table and
//! deleting (backward shift, no tombstones) never rehash a prefix or read a node. A probe
//! compares tags first and asks the caller to compare the node's prefix only on a tag
//! match, so a miss touches the slots alone (eight to a cache line).

use crate::mem::TableBuf;
use crate::prefix::{Address, Prefix};
use crate::rng::mix64;

/// The tag bits of a slot (and of a hash).
const TAG: u64 = 0xffff_ffff_0000_0000;
/// Fewest slots of a table that holds anything.
const MIN_BITS: u32 = 4;

/// The hash of a prefix: address and length mixed into 64 bits.
#[inline]
pub(super) fn hash<A: Address>(p: &Prefix<A>) -> u64 {
    let x = p.addr().to_u128();
    let len = p.len() as u64;
    if A::BITS <= 32 {
        mix64(x as u64 | len << 32)
    } else {
        mix64(x as u64 ^ mix64((x >> 64) as u64 ^ len << 56))
    }
}

/// Prefix hash → node index (the prefix itself lives in the node).
#[derive(Clone, Debug)]
pub(super) struct Index {
    /// Huge-page backed once large: a probe then rarely misses the TLB.
    slots: TableBuf<u64>,
    /// log2 of the table size (0 while empty).
    bits: u32,
    /// Occupied slots.
    len: usize,
}

impl Index {
    /// An empty index.
    pub(super) fn new() -> Self {
        Index {
            slots: TableBuf::zeroed(0),
            bits: 0,
            len: 0,
        }
    }

    /// Heap bytes.
    pub(super) fn memory_bytes(&self) -> usize {
        self.slots.allocated_bytes()
    }

    /// The home slot of a hash or of a slot's tag.
    #[inline]
    fn home(&self, h: u64) -> usize {
        (h >> (64 - self.bits)) as usize
    }

    /// The node whose prefix has hash `h` and for which `is` holds, if any.
    #[inline]
    pub(super) fn find(&self, h: u64, mut is: impl FnMut(u32) -> bool) -> Option<u32> {
        if self.slots.is_empty() {
            return None;
        }
        let mask = self.slots.len() - 1;
        let tag = h & TAG;
        let mut i = self.home(h);
        loop {
            let s = self.slots[i];
            if s == 0 {
                return None;
            }
            if s & TAG == tag {
                let node = (s as u32).wrapping_sub(1);
                if is(node) {
                    return Some(node);
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Hints the CPU to fetch the home slot of hash `h` (the table must not grow before
    /// it is used).
    #[inline]
    pub(super) fn prefetch(&self, h: u64) {
        if !self.slots.is_empty() {
            crate::simd::prefetch(&self.slots[self.home(h)]);
        }
    }

    /// Adds node `node` under hash `h` (its prefix must not be in the index yet).
    #[inline]
    pub(super) fn insert(&mut self, h: u64, node: u32) {
        debug_assert!(node != u32::MAX);
        // At most three quarters full.
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow(self.bits.max(MIN_BITS - 1) + 1);
        }
        self.put(h & TAG | (node as u64 + 1));
        self.len += 1;
    }

    /// Places an occupied slot value at the first free slot from its home.
    #[inline]
    fn put(&mut self, s: u64) {
        let mask = self.slots.len() - 1;
        let mut i = self.home(s);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = s;
    }

    /// Makes room for at least `n` entries without growing again.
    pub(super) fn reserve(&mut self, n: usize) {
        let want = self.len + n;
        let mut bits = self.bits.max(MIN_BITS);
        while want * 4 > (1usize << bits) * 3 {
            bits += 1;
        }
        if bits > self.bits {
            self.grow(bits);
        }
    }

    /// Adds the entries `(hash, node)` of `extra` (none of them in the index yet) by
    /// rebuilding the table: every entry sorted by home slot (a radix sort of the slot
    /// values on the tag's top bits), then laid down in that order, so the table is
    /// written front to back rather than at random.
    pub(super) fn rebuild(&mut self, extra: impl ExactSizeIterator<Item = (u64, u32)>) {
        let n = self.len + extra.len();
        let mut bits = self.bits.max(MIN_BITS);
        while n * 4 > (1usize << bits) * 3 {
            bits += 1;
        }
        assert!(bits <= 32, "the Rib's index holds at most 2^32 slots");
        let mut values = TableBuf::<u64>::zeroed(n);
        let old = self.slots.iter().copied().filter(|&s| s != 0);
        let new = extra.map(|(h, node)| h & TAG | (node as u64 + 1));
        for (to, v) in values.iter_mut().zip(old.chain(new)) {
            *to = v;
        }
        let values = sort_by_top_bits(values, bits);
        self.slots = TableBuf::zeroed(1 << bits);
        self.bits = bits;
        self.len = n;
        // In home order each entry goes to its home or right after the one before; those
        // that run past the end wrap to the first free slots from the start.
        let cap = self.slots.len();
        let (mut next, mut wrap) = (0usize, 0usize);
        for &v in values.iter() {
            let at = self.home(v).max(next);
            if at < cap {
                self.slots[at] = v;
                next = at + 1;
            } else {
                while self.slots[wrap] != 0 {
                    wrap += 1;
                }
                self.slots[wrap] = v;
            }
        }
    }

    /// Rehashes into a table of `2^bits` slots (from the tags alone).
    #[cold]
    fn grow(&mut self, bits: u32) {
        assert!(bits <= 32, "the Rib's index holds at most 2^32 slots");
        let old = core::mem::replace(&mut self.slots, TableBuf::zeroed(1 << bits));
        self.bits = bits;
        for &s in old.iter().filter(|&&s| s != 0) {
            self.put(s);
        }
    }

    /// Removes node `node`, which is in the index under hash `h`.
    #[inline]
    pub(super) fn remove(&mut self, h: u64, node: u32) {
        let mask = self.slots.len() - 1;
        let want = h & TAG | (node as u64 + 1);
        let mut hole = self.home(h);
        while self.slots[hole] != want {
            debug_assert!(self.slots[hole] != 0, "node {node} is not in the index");
            hole = (hole + 1) & mask;
        }
        // Backward shift: pull later entries of the run into the hole where their home
        // allows, so that no probe ever stops early at it.
        let mut j = (hole + 1) & mask;
        loop {
            let s = self.slots[j];
            if s == 0 {
                break;
            }
            let home = self.home(s);
            if j.wrapping_sub(home) & mask >= j.wrapping_sub(hole) & mask {
                self.slots[hole] = s;
                hole = j;
            }
            j = (j + 1) & mask;
        }
        self.slots[hole] = 0;
        self.len -= 1;
    }

    /// Every node index in the index (for invariant checks).
    #[cfg(test)]
    pub(super) fn nodes(&self) -> impl Iterator<Item = u32> + '_ {
        self.slots
            .iter()
            .filter(|&&s| s != 0)
            .map(|&s| (s as u32).wrapping_sub(1))
    }

    /// Occupied slots.
    pub(super) fn len(&self) -> usize {
        self.len
    }
}

/// Sorts `values` by their top `bits` bits (least significant digit first, 11 bits a
/// pass; the order within equal top bits is unspecified).
fn sort_by_top_bits(mut values: TableBuf<u64>, bits: u32) -> TableBuf<u64> {
    const DIGIT: u32 = 11;
    let mut scratch = TableBuf::<u64>::zeroed(values.len());
    let mut done = 0;
    while done < bits {
        let width = DIGIT.min(bits - done);
        let shift = 64 - bits + done;
        let mask = (1usize << width) - 1;
        let digit = |v: u64| (v >> shift) as usize & mask;
        let mut start = vec![0usize; mask + 2];
        for &v in values.iter() {
            start[digit(v) + 1] += 1;
        }
        for d in 1..start.len() {
            start[d] += start[d - 1];
        }
        for &v in values.iter() {
            let d = digit(v);
            scratch[start[d]] = v;
            start[d] += 1;
        }
        core::mem::swap(&mut values, &mut scratch);
        done += width;
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::collections::HashMap;

    /// Random inserts and removes with many colliding homes (a tiny table that grows)
    /// agree with a `HashMap`.
    #[test]
    fn agrees_with_a_map() {
        let mut rng = SplitMix64::new(3);
        let mut index = Index::new();
        let mut map: HashMap<u64, u32> = HashMap::new();
        let mut next = 0u32;
        for step in 0..200_000 {
            // Few distinct keys, hashes clustered in the top bits: long runs.
            let key = rng.below(3000);
            let h = mix64(key) & 0xff0f_ffff_0000_0000 | key;
            match map.get(&key).copied() {
                Some(node) if rng.below(2) == 0 => {
                    index.remove(h, node);
                    map.remove(&key);
                }
                Some(_) => {}
                None => {
                    index.insert(h, next);
                    map.insert(key, next);
                    next += 1;
                }
            }
            if step % 997 == 0 {
                for (&k, &node) in &map {
                    let h = mix64(k) & 0xff0f_ffff_0000_0000 | k;
                    assert_eq!(index.find(h, |n| n == node), Some(node), "step {step}");
                }
                assert_eq!(index.len(), map.len());
                assert_eq!(index.nodes().count(), map.len());
            }
        }
        // Rebuilding with more entries keeps every one findable.
        let more: Vec<(u64, u32)> = (0..5000u64)
            .map(|k| {
                (
                    mix64(k + 10_000) & 0xff0f_ffff_0000_0000 | (k + 10_000),
                    next + k as u32,
                )
            })
            .collect();
        index.rebuild(more.iter().copied());
        for &(h, node) in &more {
            assert_eq!(index.find(h, |n| n == node), Some(node));
        }
        assert_eq!(index.len(), map.len() + more.len());
        for &(h, node) in more.iter().step_by(2) {
            index.remove(h, node);
        }
        for &(h, node) in &more {
            let want = (node % 2 == (next % 2) ^ 1).then_some(node);
            assert_eq!(index.find(h, |n| n == node), want);
        }
        index.reserve(100_000);
        for (&k, &node) in &map {
            let h = mix64(k) & 0xff0f_ffff_0000_0000 | k;
            assert_eq!(index.find(h, |n| n == node), Some(node));
        }
    }
}

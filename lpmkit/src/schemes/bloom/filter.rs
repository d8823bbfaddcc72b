//! Counting Bloom filters (§3.1, §6.2): the bit vector lookups read, the counters only
//! the writer keeps, and the sizing rule of Eqs. (1)–(3).
//!
//! * **Sizing.** For `n` keys and a target false-positive rate `f`, `m = ⌈n·lg(1/f)/ln 2⌉`
//!   bits (Eq. 3) and `k = ⌈lg(1/f)⌉` functions (Eq. 1 with `m/n` substituted, rounded up:
//!   Table 5 has `k` = 7, 4, 2, 1, 1 for 1 %, 10 %, 30 %, 60 %, 90 %). Asymmetric filters
//!   (Baseline, Bloomfwd) size each filter by its own `n`; the Naïve variant gives every
//!   filter the size of the largest.
//! * **Bits** are 32-bit words in an [`Arena`] of fixed size. The writer sets and clears
//!   them with atomic read-modify-writes (release) and lookups read them with acquire
//!   loads (plain `mov`s on x86-64): a bit is a hint, never the answer — the hash table
//!   behind it is — so a lookup that sees a bit a moment early or late only probes the
//!   table once more or once less (see `writer.rs` for why a key's bits are set before it
//!   is published and cleared only after it is unpublished). Acquire matters when a
//!   lookup skips a level because a bit was just cleared: what it reads next (a lower
//!   level, the DLA) is then at least as new as that update.
//! * **Counters** (one byte per bit, on the writer's side: lookups never read them) count
//!   the keys that set each bit, so a key can be removed (a counting filter, §3.1). A
//!   counter that reaches 255 sticks there and its bit is never cleared again: the filter
//!   stays correct (a bit set too many is a false positive, not a false negative).

use core::sync::atomic::Ordering;

use super::hash::{DivMagic, FastMod, Hashing, MAX_FUNCTIONS};
use crate::schemes::common::Arena;

/// Smallest filter: 64 bits.
pub(crate) const MIN_BITS: u64 = 64;
/// Largest filter: bit positions are 32-bit.
pub(crate) const MAX_BITS: u64 = u32::MAX as u64;

/// `(m, k)` for `n` keys at false-positive rate `fpr` (Eqs. 1–3, Table 5).
pub(crate) fn size(n: u64, fpr: f64) -> (u64, u32) {
    let lg = (1.0 / fpr).log2();
    let m = ((n as f64) * lg / core::f64::consts::LN_2).ceil() as u64;
    let k = (lg.ceil() as u32).clamp(1, MAX_FUNCTIONS as u32);
    (m.max(MIN_BITS), k)
}

/// The false-positive rate of a filter of `m` bits and `k` functions holding `n` keys,
/// `(1 − e^(−kn/m))^k`.
pub(crate) fn predicted_fpr(n: u64, m: u64, k: u32) -> f64 {
    (1.0 - (-(k as f64) * n as f64 / m as f64).exp()).powi(k as i32)
}

/// A Bloom filter's bit vector: what lookups read.
pub(crate) struct Filter {
    bits: Arena<u32>,
    m: FastMod,
    /// `mod m` for the AVX2 probes.
    pub(crate) magic: DivMagic,
    k: u32,
}

impl core::fmt::Debug for Filter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Filter")
            .field("m", &self.m.divisor())
            .field("k", &self.k)
            .finish()
    }
}

impl Filter {
    /// An empty filter of `m` bits probed with `k` positions; `None` if the memory cannot
    /// be had.
    pub(crate) fn new(m: u64, k: u32) -> Option<Self> {
        debug_assert!((MIN_BITS..=MAX_BITS).contains(&m));
        Some(Filter {
            bits: Arena::zeroed(m.div_ceil(32) as usize)?,
            m: FastMod::new(m as u32),
            magic: DivMagic::new(m as u32),
            k,
        })
    }

    /// Bits.
    pub(crate) fn m(&self) -> u32 {
        self.m.divisor()
    }

    /// Functions.
    pub(crate) fn k(&self) -> u32 {
        self.k
    }

    /// The bit vector's first word (for the AVX2 gathers).
    #[inline(always)]
    pub(crate) fn words_ptr(&self) -> *const u32 {
        self.bits.as_ptr()
    }

    /// Bytes of the bit vector.
    pub(crate) fn bytes(&self) -> usize {
        self.bits.committed_bytes()
    }

    /// Word `w` of the bit vector: an acquire load (a plain `mov` on x86-64), so that a
    /// lookup that sees a bit the writer changed also sees everything the writer did
    /// before (what it reads next — a DLA entry, a lower level — is no older).
    #[inline(always)]
    fn word(&self, w: usize) -> u32 {
        // SAFETY: `w < ⌈m/32⌉`, all committed at creation (callers reduce mod m).
        unsafe { self.bits.atomic_u32(w, 0) }.load(Ordering::Acquire)
    }

    /// True if the bit of (unreduced) position `h` is set.
    #[inline(always)]
    pub(crate) fn test(&self, h: u32) -> bool {
        let b = self.m.reduce(h);
        (self.word(b as usize >> 5) >> (b & 31)) & 1 != 0
    }

    /// The filter's answer for a key hashed to `h1`, `h2` with double hashing.
    #[inline(always)]
    pub(crate) fn contains_km(&self, h1: u32, h2: u32) -> bool {
        let mut g = h1;
        for _ in 0..self.k {
            if !self.test(g) {
                return false;
            }
            g = g.wrapping_add(h2);
        }
        true
    }

    /// [`contains_km`](Self::contains_km) without branches: every bit is read (for
    /// batches, where the answers are unpredictable and the loads can overlap).
    #[inline(always)]
    pub(crate) fn contains_km_all(&self, h1: u32, h2: u32) -> bool {
        let mut g = h1;
        let mut acc = 1u32;
        for _ in 0..self.k {
            let b = self.m.reduce(g);
            acc &= self.word(b as usize >> 5) >> (b & 31);
            g = g.wrapping_add(h2);
        }
        acc & 1 != 0
    }

    /// The filter's answer for a key whose `i`-th position is `pos(i)`, computed only as
    /// far as the first clear bit (Algorithm 2).
    #[inline(always)]
    pub(crate) fn contains_with(&self, mut pos: impl FnMut(usize) -> u32) -> bool {
        (0..self.k as usize).all(|i| self.test(pos(i)))
    }

    /// Set bits (for figures).
    pub(crate) fn ones(&self) -> u64 {
        (0..self.bits.committed())
            .map(|w| self.word(w).count_ones() as u64)
            .sum()
    }
}

/// A filter's counters (the writer's side of a counting Bloom filter).
#[derive(Clone, Debug)]
pub(crate) struct Counters {
    c: Vec<u8>,
}

impl Counters {
    /// Zero counters for a filter of `m` bits.
    pub(crate) fn new(m: u64) -> Self {
        Counters {
            c: vec![0; m as usize],
        }
    }

    /// Counts a key in: increments the counters of its positions and sets the bits that
    /// were clear.
    ///
    /// # Safety
    /// The caller is the filter's one writer.
    pub(crate) unsafe fn add(&mut self, f: &Filter, hashing: &Hashing, key: u64) {
        let mut pos = [0u32; MAX_FUNCTIONS];
        hashing.positions(key, &mut pos);
        for &h in &pos[..f.k as usize] {
            let b = f.m.reduce(h);
            let c = &mut self.c[b as usize];
            if *c == 0 {
                // SAFETY: `b < m`: committed; atomic like every access to the bits.
                unsafe { f.bits.atomic_u32(b as usize >> 5, 0) }
                    .fetch_or(1 << (b & 31), Ordering::Release);
                crate::schemes::common::published();
            }
            *c = c.saturating_add(1);
        }
    }

    /// Counts a key out: decrements the counters of its positions and clears the bits
    /// whose counter reaches 0 (a counter stuck at 255 is left alone).
    ///
    /// # Safety
    /// The caller is the filter's one writer; `key` was counted in.
    pub(crate) unsafe fn remove(&mut self, f: &Filter, hashing: &Hashing, key: u64) {
        let mut pos = [0u32; MAX_FUNCTIONS];
        hashing.positions(key, &mut pos);
        for &h in &pos[..f.k as usize] {
            let b = f.m.reduce(h);
            let c = &mut self.c[b as usize];
            debug_assert!(*c > 0, "removing a key that was not counted in");
            if *c == u8::MAX || *c == 0 {
                continue;
            }
            *c -= 1;
            if *c == 0 {
                // SAFETY: as in `add`.
                unsafe { f.bits.atomic_u32(b as usize >> 5, 0) }
                    .fetch_and(!(1 << (b & 31)), Ordering::Release);
                crate::schemes::common::published();
            }
        }
    }

    /// Counters stuck at their maximum.
    pub(crate) fn saturated(&self) -> u64 {
        self.c.iter().filter(|&&c| c == u8::MAX).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::super::hash::HashKind;
    use super::*;

    #[test]
    fn table5_sizes() {
        // AS65000 after CPE: G1 holds 971,555 /24s, G2 113,397 /32s (Table 3, Table 5).
        let want = [
            (0.01, 9_312_412, 7),
            (0.10, 4_656_206, 4),
            (0.30, 2_434_631, 2),
            (0.60, 1_032_974, 1),
            (0.90, 213_057, 1),
        ];
        for (f, m, k) in want {
            assert_eq!(size(971_555, f), (m, k), "G1 at {f}");
        }
        assert_eq!(size(113_397, 0.01), (1_086_917, 7));
        assert_eq!(size(113_397, 0.30), (284_163, 2));
        assert_eq!(size(0, 0.3).0, MIN_BITS);
        assert!((predicted_fpr(971_555, 2_434_631, 2) - 0.30).abs() < 0.01);
    }

    #[test]
    fn counting_add_remove() {
        let hashing = Hashing {
            kind: HashKind::Murmur32,
            table_kind: HashKind::Murmur32,
            double_hashing: true,
            reuse: true,
            k: 3,
        };
        let f = Filter::new(1000, 3).unwrap();
        let mut c = Counters::new(1000);
        let keys: Vec<u64> = (0..200u64).map(|i| i * 7919).collect();
        // SAFETY: this thread is the only writer and there are no readers.
        unsafe {
            for &k in &keys {
                c.add(&f, &hashing, k);
            }
        }
        let has = |k: u64| f.contains_km(hashing.filter_hash(k, 0), hashing.filter_hash(k, 1));
        assert!(keys.iter().all(|&k| has(k)), "no false negatives");
        // SAFETY: as above.
        unsafe {
            for &k in &keys[..100] {
                c.remove(&f, &hashing, k);
            }
        }
        assert!(
            keys[100..].iter().all(|&k| has(k)),
            "still no false negatives"
        );
        // SAFETY: as above.
        unsafe {
            for &k in &keys[100..] {
                c.remove(&f, &hashing, k);
            }
        }
        assert_eq!(f.ones(), 0, "every bit cleared again");
    }
}

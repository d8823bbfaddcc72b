//! A small deterministic pseudo-random generator.
//!
//! Synthetic tables, key streams and tests must be reproducible from a seed on every
//! platform, so lpmkit carries its own generator instead of depending on `rand`'s
//! algorithm choices: SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom
//! number generators", OOPSLA 2014), which passes BigCrush and costs a few cycles a value.
//!
//! ```
//! use lpmkit::rng::SplitMix64;
//! let mut a = SplitMix64::new(42);
//! let mut b = SplitMix64::new(42);
//! assert_eq!(a.next(), b.next());
//! assert!(a.below(10) < 10);
//! ```

/// SplitMix64: a 64-bit state, one add and a 64-bit mix per value.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    #[inline]
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }

    /// 128 random bits.
    #[inline]
    pub fn next_u128(&mut self) -> u128 {
        ((self.next() as u128) << 64) | self.next() as u128
    }

    /// A value uniform in `0..n` (`n > 0`), by Lemire's multiply-shift (bias below 2^-32
    /// for the `n` used here).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next() as u128 * n as u128) >> 64) as u64
    }

    /// A float uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The SplitMix64 finalizer: a bijective 64-bit hash, used for deterministic
/// per-key choices (for instance next-hop assignment) that must not depend on order.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Reference values of SplitMix64 seeded with 1234567.
        let mut r = SplitMix64::new(1234567);
        assert_eq!(r.next(), 6457827717110365317);
        assert_eq!(r.next(), 3203168211198807973);
    }

    #[test]
    fn ranges() {
        let mut r = SplitMix64::new(7);
        for _ in 0..1000 {
            assert!(r.below(3) < 3);
            let u = r.unit();
            assert!((0.0..1.0).contains(&u));
        }
    }
}

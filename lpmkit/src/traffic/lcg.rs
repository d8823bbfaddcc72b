//! The just-in-time key generator of the Spider paper.

/// A linear congruential generator for generating keys inside a timing loop, as the
/// Spider paper (IEEE Access 2020, §V-A) and Poptrie before it do: "a just-in-time
/// generation of the pattern … We used the linear congruential method".
///
/// The recurrence is Knuth's MMIX LCG, `x ← x · 6364136223846793005 + 1442695040888963407
/// (mod 2^64)`, and each step yields the **high** 32 bits of `x` (the low bits of a
/// power-of-two LCG have short periods: bit `k` repeats every `2^(k+1)` steps). A step is one
/// multiply and one add, so generating keys costs a few cycles each and stays out of the
/// memory system; the keys are not of cryptographic or BigCrush quality, and are not
/// meant to be.
///
/// ```
/// use lpmkit::traffic::Lcg;
/// let mut a = Lcg::new(1);
/// let mut keys = [0u32; 4];
/// a.fill_v4(&mut keys);
/// let mut b = Lcg::new(1);
/// assert_eq!(keys[0], b.next_u32());
/// ```
#[derive(Clone, Debug)]
pub struct Lcg {
    state: u64,
}

impl Lcg {
    /// The multiplier (Knuth, MMIX).
    pub const MULTIPLIER: u64 = 6_364_136_223_846_793_005;
    /// The increment (Knuth, MMIX).
    pub const INCREMENT: u64 = 1_442_695_040_888_963_407;

    /// A generator whose state starts at `seed`.
    #[inline]
    pub fn new(seed: u64) -> Self {
        Lcg { state: seed }
    }

    /// One step: the high 32 bits of the new state.
    #[inline(always)]
    pub fn next_u32(&mut self) -> u32 {
        self.state = self
            .state
            .wrapping_mul(Self::MULTIPLIER)
            .wrapping_add(Self::INCREMENT);
        (self.state >> 32) as u32
    }

    /// Fills `out` with IPv4 keys, uniform over the whole address space (the random
    /// traffic pattern of Poptrie and Spider: every address, matched or not).
    #[inline]
    pub fn fill_v4(&mut self, out: &mut [u32]) {
        for o in out {
            *o = self.next_u32();
        }
    }

    /// Fills `out` with Spider's IPv6 "matching" keys (§V-A): a 32-bit pattern picked at
    /// random from `patterns` (the first 32 bits of the table's prefixes, see
    /// [`v6_patterns`](super::v6_patterns)), then 32 random bits, then the host part
    /// `::1` (the low 64 bits are 1). Two steps per key. An empty pattern table acts as
    /// the single pattern 0.
    #[inline]
    pub fn fill_v6_matching(&mut self, patterns: &[u32], out: &mut [u128]) {
        if patterns.is_empty() {
            return self.fill_v6_matching(&[0], out);
        }
        let n = patterns.len() as u64;
        for o in out {
            let i = ((self.next_u32() as u64 * n) >> 32) as usize;
            let mid = self.next_u32();
            *o = (patterns[i] as u128) << 96 | (mid as u128) << 64 | 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recurrence() {
        let mut g = Lcg::new(0);
        // x1 = INCREMENT; x2 = INCREMENT * MULTIPLIER + INCREMENT.
        assert_eq!(g.next_u32(), (Lcg::INCREMENT >> 32) as u32);
        let x2 = Lcg::INCREMENT
            .wrapping_mul(Lcg::MULTIPLIER)
            .wrapping_add(Lcg::INCREMENT);
        assert_eq!(g.next_u32(), (x2 >> 32) as u32);
    }

    #[test]
    fn high_bits_are_not_periodic() {
        // The lowest output bit (bit 32 of the state) has period 2^33; over a short run
        // it must not alternate like the state's bit 0 does.
        let mut g = Lcg::new(5);
        let bits: Vec<u32> = (0..64).map(|_| g.next_u32() & 1).collect();
        assert!(bits.windows(2).any(|w| w[0] == w[1]));
        assert!(bits.contains(&0) && bits.contains(&1));
    }
}

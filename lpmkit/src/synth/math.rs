//! Platform-independent arithmetic for the generators.
//!
//! `f64::powf`, `ln` and `exp` call the platform's libm, whose last bit may differ between
//! operating systems; a weight that differs by one ulp could move a sampling threshold and
//! change a generated table. The functions here use only IEEE-754 `+ - * /` (each exactly
//! rounded, hence identical everywhere), so the same seed gives the same output on every
//! platform. They are accurate to a few ulps, which is all a sampling weight needs.

use crate::rng::SplitMix64;

const LN_2: f64 = core::f64::consts::LN_2;

/// Natural logarithm of a positive finite `x`, by range reduction to `[√½, √2)` and the
/// `atanh` series.
pub(crate) fn ln(x: f64) -> f64 {
    debug_assert!(x > 0.0 && x.is_finite());
    let mut x = x;
    let mut e: i32 = 0;
    // Scale subnormals into the normal range first (exact: multiplication by 2^54).
    if x < f64::MIN_POSITIVE {
        x *= (1u64 << 54) as f64;
        e -= 54;
    }
    let bits = x.to_bits();
    e += ((bits >> 52) & 0x7ff) as i32 - 1023;
    // The mantissa with exponent 0: m in [1, 2).
    let mut m = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    if m > core::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    // ln m = 2 atanh(z), z = (m - 1) / (m + 1), |z| <= 0.1716.
    let z = (m - 1.0) / (m + 1.0);
    let z2 = z * z;
    let mut term = z;
    let mut sum = 0.0;
    let mut k = 1.0;
    for _ in 0..16 {
        sum += term / k;
        term *= z2;
        k += 2.0;
    }
    e as f64 * LN_2 + 2.0 * sum
}

/// `e^y` for finite `y` (saturating to 0 or infinity outside the `f64` range).
pub(crate) fn exp(y: f64) -> f64 {
    debug_assert!(y.is_finite());
    if y > 709.0 {
        return f64::INFINITY;
    }
    if y < -745.0 {
        return 0.0;
    }
    let k = (y / LN_2).round();
    let r = y - k * LN_2; // |r| <= ~0.35
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in 1..=22 {
        term *= r / i as f64;
        sum += term;
    }
    // Multiply by 2^k in two exact steps so that k near the ends of the range works.
    let k = k as i32;
    let half = k / 2;
    sum * pow2(half) * pow2(k - half)
}

/// `2^k` for `k` in the normal exponent range (`-1022..=1023`), clamped beyond it.
fn pow2(k: i32) -> f64 {
    let k = k.clamp(-1022, 1023);
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `x^s` for `x > 0`.
pub(crate) fn pow(x: f64, s: f64) -> f64 {
    if s == 0.0 || x == 1.0 {
        return 1.0;
    }
    exp(s * ln(x))
}

/// Walker's alias method (Vose's construction): draws index `i` with probability
/// `weights[i] / Σ weights` in O(1) per draw, with 32-bit thresholds.
#[derive(Clone, Debug)]
pub(crate) struct Alias {
    /// Acceptance threshold per slot, scaled to 2^32.
    threshold: Vec<u64>,
    alias: Vec<u32>,
}

impl Alias {
    /// A sampler over `weights` (non-negative, finite, not all zero; fewer than 2^32).
    /// Returns `None` if the weights sum to zero.
    pub(crate) fn new(weights: &[f64]) -> Option<Alias> {
        let n = weights.len();
        assert!(
            n < u32::MAX as usize,
            "too many weights for the alias method"
        );
        let total: f64 = weights.iter().sum();
        if n == 0 || total <= 0.0 || !total.is_finite() {
            return None;
        }
        let scale = n as f64 / total;
        let mut p: Vec<f64> = weights.iter().map(|&w| w * scale).collect();
        let mut threshold = vec![1u64 << 32; n];
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let mut small: Vec<u32> = Vec::new();
        let mut large: Vec<u32> = Vec::new();
        for (i, &q) in p.iter().enumerate() {
            if q < 1.0 {
                small.push(i as u32);
            } else {
                large.push(i as u32);
            }
        }
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            threshold[s as usize] = (p[s as usize] * (1u64 << 32) as f64) as u64;
            alias[s as usize] = l;
            p[l as usize] = (p[l as usize] + p[s as usize]) - 1.0;
            if p[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Whatever is left is 1 up to rounding: always accept.
        Some(Alias { threshold, alias })
    }

    /// One draw from 64 random bits.
    #[inline]
    pub(crate) fn pick(&self, r: u64) -> usize {
        let i = (((r >> 32) * self.threshold.len() as u64) >> 32) as usize;
        if (r & 0xffff_ffff) < self.threshold[i] {
            i
        } else {
            self.alias[i] as usize
        }
    }

    /// One draw.
    #[inline]
    pub(crate) fn sample(&self, rng: &mut SplitMix64) -> usize {
        self.pick(rng.next())
    }

    /// The same distribution over `items[i]` instead of `i`, with each slot holding its
    /// two possible outcomes, so that a draw reads one slot (one cache line) only.
    pub(crate) fn with_payload<T: Copy>(&self, items: &[T]) -> PayloadAlias<T> {
        assert_eq!(items.len(), self.threshold.len());
        PayloadAlias {
            slots: self
                .threshold
                .iter()
                .zip(&self.alias)
                .enumerate()
                .map(|(i, (&threshold, &a))| (threshold, items[i], items[a as usize]))
                .collect(),
        }
    }
}

/// An [`Alias`] sampler whose slots carry the outcomes themselves.
#[derive(Clone, Debug)]
pub(crate) struct PayloadAlias<T> {
    /// (acceptance threshold scaled to 2^32, own outcome, alias outcome)
    slots: Vec<(u64, T, T)>,
}

impl<T: Copy> PayloadAlias<T> {
    /// The slot a draw from `r` reads (to prefetch it before [`resolve`](Self::resolve)).
    #[inline]
    pub(crate) fn slot(&self, r: u64) -> usize {
        (((r >> 32) * self.slots.len() as u64) >> 32) as usize
    }

    /// The address of slot `i`, for a prefetch.
    #[inline]
    pub(crate) fn slot_ptr(&self, i: usize) -> *const (u64, T, T) {
        &self.slots[i]
    }

    /// The outcome of a draw from `r` that reads slot `i = self.slot(r)`.
    #[inline]
    pub(crate) fn resolve(&self, i: usize, r: u64) -> T {
        let (threshold, own, alias) = self.slots[i];
        if (r & 0xffff_ffff) < threshold {
            own
        } else {
            alias
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_exp_pow_match_std() {
        for &x in &[
            1e-300, 1e-10, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 10.0, 12345.678, 1e300,
        ] {
            let got = ln(x);
            let want = f64::ln(x);
            assert!(
                (got - want).abs() <= 1e-14 * want.abs().max(1.0),
                "ln({x}) = {got}"
            );
        }
        for &y in &[-700.0, -20.0, -1.0, -0.1, 0.0, 0.3, 1.0, 2.5, 50.0, 700.0] {
            let got = exp(y);
            let want = f64::exp(y);
            assert!(
                (got - want).abs() <= 1e-13 * want,
                "exp({y}) = {got} vs {want}"
            );
        }
        for &(x, s) in &[
            (2.0, 0.5),
            (10.0, -1.2),
            (200.0, 1.0),
            (3.0, 0.0),
            (7.5, 2.25),
        ] {
            let got = pow(x, s);
            let want = f64::powf(x, s);
            assert!((got - want).abs() <= 1e-13 * want, "pow({x},{s}) = {got}");
        }
        assert_eq!(pow(2.0, 10.0).round(), 1024.0);
    }

    #[test]
    fn alias_frequencies() {
        let w = [5.0, 0.0, 1.0, 2.0, 0.5];
        let a = Alias::new(&w).unwrap();
        let mut rng = SplitMix64::new(3);
        let mut hits = [0u32; 5];
        let n = 200_000;
        for _ in 0..n {
            hits[a.sample(&mut rng)] += 1;
        }
        let total: f64 = w.iter().sum();
        for i in 0..5 {
            let want = w[i] / total;
            let got = hits[i] as f64 / n as f64;
            assert!((got - want).abs() < 0.01, "slot {i}: {got} vs {want}");
        }
        assert_eq!(hits[1], 0, "zero weight is never drawn");
        // The payload form draws the same outcomes from the same bits.
        let p = a.with_payload(&['a', 'b', 'c', 'd', 'e']);
        let mut rng = SplitMix64::new(9);
        for _ in 0..1000 {
            let r = rng.next();
            assert_eq!(
                p.resolve(p.slot(r), r),
                ['a', 'b', 'c', 'd', 'e'][a.pick(r)]
            );
        }
        assert!(Alias::new(&[0.0, 0.0]).is_none());
        assert!(Alias::new(&[]).is_none());
    }
}

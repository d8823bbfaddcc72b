//! The hash functions of §4.1 and §4.3.2, the exact modulo every filter and table index
//! is reduced with, and how a level turns one key into its filter positions and table
//! index.
//!
//! * **H2** (Algorithm 3, from the H2 database engine): two rounds of
//!   `x = ((x >> 16) ^ x) * 0x45d9f3b` and a final xor-shift, on 32-bit keys.
//! * **MurmurHash3**, specialised to integer keys as §4.3.2 does: `murmur32` is
//!   `MurmurHash3_x86_32` over the 4 bytes of an IPv4 key, `murmur64` the same function
//!   over the 8 bytes of a 64-bit key (an IPv6 key: the first 64 address bits). Both give
//!   32 bits; the seed selects the function of a family.
//! * **Knuth's multiplicative method**: `h(x) = x · c mod 2^32` with an odd `c` (Knuth's
//!   2654435761 first). It keeps the low bits of the product, so keys divisible by `2^j`
//!   hash to multiples of `2^j` — the weakness §6.2 measures. A 64-bit key is folded
//!   (`hi ^ lo`) first.
//! * **C `rand()`**, the Baseline's hash (§6.3): `srand(key)` then `rand()` once per hash
//!   function, with glibc's generator (the additive feedback generator `random_r`,
//!   `TYPE_3`: 34 seed words from `16807 · x mod (2^31 − 1)`, 310 outputs discarded),
//!   bit for bit (`srand(1)` gives 1804289383, 846930886, …). glibc runs ~350 dependent
//!   steps per `srand`; the feedback is linear modulo 2^32, so each output is computed
//!   here as one dot product of precomputed coefficients with the 34 seed words (30
//!   modular multiplications) — the same numbers in a tenth of the steps, tested against
//!   the step-by-step generator.
//!
//! A family of functions is one function under different seeds: `hash(kind, key, i)` is
//! the `i`-th (H2: the key xored with seed `i`; Murmur: seed `i`; Knuth: multiplier `i`,
//! odd, so that divisibility is kept; C `rand()`: the `i`-th output after `srand(key)`).
//! A level probes its filter with `k` positions:
//!
//! * **Kirsch–Mitzenmacher double hashing** (`double_hashing`): `g_i = h1 + i·h2`
//!   (mod 2^32) from two functions, `h1 = hash(key, 0)` and `h2 = hash(key, 1)`;
//! * otherwise `k` functions `hash(key, 0) … hash(key, k − 1)`, computed lazily: a probe
//!   stops at the first clear bit (Algorithm 2's `break`).
//!
//! The table index is `hash(table_kind, key, 0)` — with **hash reuse** (`reuse` and the same
//! kind) it is the filter's first hash, already computed (§4.1: hashes are computed
//! without regard to the structure's size and reduced when used). Every reduction is an
//! exact `x mod d` (the paper's "rest of the division"), computed with Lemire's
//! multiply-high method ([`FastMod`]) instead of a division.

use core::fmt;
use core::str::FromStr;

/// A hash function of the paper (§4.3.2, §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashKind {
    /// H2 (Algorithm 3), 32-bit keys only.
    H2,
    /// MurmurHash3 (`x86_32`) over a 4-byte key; 32-bit keys only.
    Murmur32,
    /// MurmurHash3 (`x86_32`) over an 8-byte key.
    Murmur64,
    /// Knuth's multiplicative method, `x · c mod 2^32`.
    Knuth,
    /// `srand(key); rand()`, glibc's generator (the Baseline's hash).
    CRand,
}

impl HashKind {
    /// Every kind.
    pub const ALL: [HashKind; 5] = [
        HashKind::H2,
        HashKind::Murmur32,
        HashKind::Murmur64,
        HashKind::Knuth,
        HashKind::CRand,
    ];

    /// The setting value that names it.
    #[doc(hidden)]
    pub fn name(self) -> &'static str {
        match self {
            HashKind::H2 => "h2",
            HashKind::Murmur32 => "murmur32",
            HashKind::Murmur64 => "murmur64",
            HashKind::Knuth => "knuth",
            HashKind::CRand => "crand",
        }
    }

    /// True if it hashes 64-bit keys (IPv6 levels); H2 and `murmur32` take 32 bits.
    #[doc(hidden)]
    pub fn takes_64_bit_keys(self) -> bool {
        !matches!(self, HashKind::H2 | HashKind::Murmur32)
    }

    /// True if the AVX2 kernels compute it (every kind but C `rand()`).
    #[doc(hidden)]
    pub fn vectorized(self) -> bool {
        self != HashKind::CRand
    }
}

impl fmt::Display for HashKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for HashKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        HashKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("{s:?} is not a hash (h2, murmur32, murmur64, knuth, crand)"))
    }
}

/// Most hash functions a level uses (`k`, and the table's).
pub(crate) const MAX_FUNCTIONS: usize = 16;

/// Seeds of the `i`-th H2 and Murmur functions (0 first: the plain function).
pub(crate) const SEEDS: [u32; MAX_FUNCTIONS] = [
    0,
    0x9e37_79b9,
    0x7f4a_7c15,
    0xf39c_c060,
    0x5ced_c834,
    0x2b99_2ddf,
    0xcb6d_f2d2,
    0x6a5c_ec3e,
    0x0a4f_6d31,
    0xa89b_1ee8,
    0x47d6_d9f5,
    0xe716_c1b1,
    0x8661_6f18,
    0x25c5_b1ee,
    0xc51c_f97d,
    0x6461_4b80,
];

/// Multipliers of the `i`-th Knuth function: odd, Knuth's golden-ratio constant first.
pub(crate) const KNUTH: [u32; MAX_FUNCTIONS] = [
    2_654_435_761,
    2_246_822_519,
    3_266_489_917,
    668_265_263,
    374_761_393,
    3_432_918_353,
    461_845_907,
    2_869_860_233,
    1_640_531_527,
    2_027_808_485,
    3_016_915_199,
    1_103_515_245,
    1_664_525,
    22_695_477,
    134_775_813,
    214_013,
];

/// H2 (Algorithm 3).
#[inline(always)]
pub(crate) fn h2(mut x: u32) -> u32 {
    x = ((x >> 16) ^ x).wrapping_mul(0x045d_9f3b);
    x = ((x >> 16) ^ x).wrapping_mul(0x045d_9f3b);
    (x >> 16) ^ x
}

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

#[inline(always)]
fn murmur_block(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

#[inline(always)]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// `MurmurHash3_x86_32` of the 4 little-endian bytes of `x`.
#[inline(always)]
pub(crate) fn murmur32(x: u32, seed: u32) -> u32 {
    fmix32(murmur_block(seed, x) ^ 4)
}

/// `MurmurHash3_x86_32` of the 8 little-endian bytes of `x`.
#[inline(always)]
pub(crate) fn murmur64(x: u64, seed: u32) -> u32 {
    let h = murmur_block(seed, x as u32);
    fmix32(murmur_block(h, (x >> 32) as u32) ^ 8)
}

/// Knuth's multiplicative hash with multiplier `c`.
#[inline(always)]
pub(crate) fn knuth(x: u32, c: u32) -> u32 {
    x.wrapping_mul(c)
}

/// A 64-bit key folded to 32 bits (Knuth and C `rand()` on IPv6 keys).
#[inline(always)]
pub(crate) fn fold(x: u64) -> u32 {
    (x ^ (x >> 32)) as u32
}

/// glibc's `srand(seed)` followed by `rand()`, step by step as glibc runs it: the
/// reference the fast form ([`crand`]) is tested against.
#[cfg(test)]
#[derive(Clone, Debug)]
pub(crate) struct CRand {
    /// The last 34 words of the additive feedback sequence (a ring).
    r: [u32; 34],
    /// Index of the oldest word.
    i: usize,
}

#[cfg(test)]
impl CRand {
    /// `srand(seed)`: 31 words of `16807 · x mod (2^31 − 1)` (Schrage's method, as
    /// glibc), three copies, then 310 outputs discarded.
    pub(crate) fn new(seed: u32) -> Self {
        let mut r = [0u32; 34];
        let mut word = if seed == 0 { 1 } else { seed as i32 as i64 };
        r[0] = word as u32;
        for slot in r.iter_mut().take(31).skip(1) {
            let hi = word / 127_773;
            let lo = word % 127_773;
            word = 16_807 * lo - 2_836 * hi;
            if word < 0 {
                word += 2_147_483_647;
            }
            *slot = word as u32;
        }
        for i in 31..34 {
            r[i] = r[i - 31];
        }
        let mut g = CRand { r, i: 0 };
        for _ in 0..310 {
            g.step();
        }
        g
    }

    /// The next word of `r[n] = r[n − 31] + r[n − 3]`.
    #[inline(always)]
    fn step(&mut self) -> u32 {
        // The ring holds r[n-34..n]; r[n-31] is at i+3, r[n-3] at i+31.
        let v = self.r[(self.i + 3) % 34].wrapping_add(self.r[(self.i + 31) % 34]);
        self.r[self.i] = v;
        self.i = (self.i + 1) % 34;
        v
    }

    /// `rand()`.
    #[inline(always)]
    pub(crate) fn next(&mut self) -> u32 {
        self.step() >> 1
    }
}

const M31: u64 = 0x7fff_ffff;

/// `16807^i mod (2^31 − 1)`, `i < 31`.
const POW: [u64; 31] = {
    let mut p = [1u64; 31];
    let mut i = 1;
    while i < 31 {
        p[i] = p[i - 1] * 16_807 % M31;
        i += 1;
    }
    p
};

/// `COEF[j][i]`: the coefficient of seed word `r[i]` (`i < 34`) in `r[344 + j]` — the
/// feedback `r[n] = r[n − 31] + r[n − 3]` is linear modulo 2^32.
static COEF: [[u32; 34]; MAX_FUNCTIONS] = {
    const N: usize = 344 + MAX_FUNCTIONS;
    let mut c = [[0u32; 34]; N];
    let mut i = 0;
    while i < 34 {
        c[i][if i < 31 { i } else { i - 31 }] = 1;
        i += 1;
    }
    let mut n = 34;
    while n < N {
        let mut w = 0;
        while w < 34 {
            c[n][w] = c[n - 31][w].wrapping_add(c[n - 3][w]);
            w += 1;
        }
        n += 1;
    }
    let mut out = [[0u32; 34]; MAX_FUNCTIONS];
    let mut j = 0;
    while j < MAX_FUNCTIONS {
        out[j] = c[344 + j];
        j += 1;
    }
    out
};

/// The 31 seed words of glibc's `srand(seed)`: `seed` (1 for 0), then `16807^i · seed
/// mod (2^31 − 1)` (what Schrage's steps compute, negative seeds included).
#[inline(always)]
pub(crate) fn crand_seed(seed: u32) -> [u32; 31] {
    let x = if seed == 0 { 1 } else { seed as i32 as i64 };
    let xm = x.rem_euclid(M31 as i64) as u64;
    let mut r = [0u32; 31];
    r[0] = x as u32;
    for i in 1..31 {
        let p = xm * POW[i];
        // `p mod (2^31 − 1)` by folding (p < 2^62).
        let f = (p & M31) + (p >> 31);
        let f = (f & M31) + (f >> 31);
        r[i] = if f >= M31 { f - M31 } else { f } as u32;
    }
    r
}

/// The `j`-th `rand()` after `srand` gave `words` (`j < MAX_FUNCTIONS`): one dot product
/// modulo 2^32 instead of `310 + j` feedback steps; bit for bit glibc's output.
#[inline(always)]
pub(crate) fn crand(words: &[u32; 31], j: usize) -> u32 {
    let c = &COEF[j];
    let mut acc = 0u32;
    for i in 0..31 {
        acc = acc.wrapping_add(c[i].wrapping_mul(words[i]));
    }
    // r[31..34] are copies of r[0..3].
    for i in 0..3 {
        acc = acc.wrapping_add(c[31 + i].wrapping_mul(words[i]));
    }
    acc >> 1
}

/// An exact `a mod d` by two multiplications (D. Lemire, O. Kaser, N. Kurz, "Faster
/// remainder by direct computation", 2019): `M = ⌊(2^64 − 1)/d⌋ + 1`, `a mod d =
/// ⌊((M·a mod 2^64) · d) / 2^64⌋` for every 32-bit `a` and `d ≥ 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FastMod {
    d: u32,
    m: u64,
}

impl FastMod {
    /// The reducer for `d ≥ 1`.
    pub(crate) fn new(d: u32) -> Self {
        assert!(d >= 1, "modulo by zero");
        FastMod {
            d,
            m: (u64::MAX / d as u64).wrapping_add(1),
        }
    }

    /// The divisor.
    #[inline(always)]
    pub(crate) fn divisor(self) -> u32 {
        self.d
    }

    /// `a mod d`.
    #[inline(always)]
    pub(crate) fn reduce(self, a: u32) -> u32 {
        let low = self.m.wrapping_mul(a as u64);
        ((low as u128 * self.d as u128) >> 64) as u32
    }
}

/// `a mod d` by the multiply-high division of Granlund and Montgomery ("Division by
/// invariant integers using multiplication", PLDI 1994, Fig. 4.1): with `l = ⌈log2 d⌉`,
/// `m = ⌊2^32 (2^l − d) / d⌋ + 1`, `t = ⌊m a / 2^32⌋`, `q = (t + ((a − t) >> min(l, 1)))
/// >> max(l − 1, 0)`, exact for every 32-bit `a` and `d ≥ 1`. Only 32-bit multiplies: the
/// form the AVX2 filter probes use (8 lanes); [`FastMod`] is the scalar one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DivMagic {
    pub d: u32,
    pub m: u32,
    pub sh1: u32,
    pub sh2: u32,
}

impl DivMagic {
    /// The constants for `d ≥ 1`.
    pub(crate) fn new(d: u32) -> Self {
        assert!(d >= 1, "modulo by zero");
        let l = 32 - (d - 1).leading_zeros();
        let m = ((((1u64 << l) - d as u64) << 32) / d as u64 + 1) as u32;
        DivMagic {
            d,
            m,
            sh1: l.min(1),
            sh2: l.saturating_sub(1),
        }
    }

    /// `a mod d`, as the vector code computes it.
    #[cfg(test)]
    pub(crate) fn reduce(self, a: u32) -> u32 {
        let t = ((self.m as u64 * a as u64) >> 32) as u32;
        let q = (t + ((a - t) >> self.sh1)) >> self.sh2;
        a - q.wrapping_mul(self.d)
    }
}

/// How keys are hashed: the filter's function family, the table's, and the two
/// optimizations of §4.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Hashing {
    /// The filters' function family.
    pub kind: HashKind,
    /// The tables' function.
    pub table_kind: HashKind,
    /// Kirsch–Mitzenmacher double hashing.
    pub double_hashing: bool,
    /// The table index reuses the filter's first hash (same kind only).
    pub reuse: bool,
    /// Functions per filter.
    pub k: u32,
}

impl Hashing {
    /// True if the table index is the filter's first hash.
    #[inline(always)]
    pub(crate) fn reuses(&self) -> bool {
        self.reuse && self.kind == self.table_kind
    }

    /// The `i`-th function of the filter family on `key` (C `rand()` recomputes the
    /// sequence: callers that want several use [`CRand`]).
    #[inline(always)]
    pub(crate) fn filter_hash(&self, key: u64, i: usize) -> u32 {
        hash(self.kind, key, i)
    }

    /// The table's hash of `key`.
    #[inline(always)]
    pub(crate) fn table_hash(&self, key: u64) -> u32 {
        hash(self.table_kind, key, 0)
    }

    /// The filter's `k` positions of `key` (unreduced) and its table hash: what the
    /// writer sets and counts. Lookups compute them lazily instead.
    pub(crate) fn positions(&self, key: u64, out: &mut [u32; MAX_FUNCTIONS]) -> u32 {
        let k = self.k as usize;
        if self.double_hashing {
            let (h1, h2) = (self.filter_hash(key, 0), self.filter_hash(key, 1));
            for (i, o) in out.iter_mut().enumerate().take(k) {
                *o = h1.wrapping_add((i as u32).wrapping_mul(h2));
            }
        } else if self.kind == HashKind::CRand {
            let words = crand_seed(fold(key));
            for (j, o) in out.iter_mut().enumerate().take(k) {
                *o = crand(&words, j);
            }
        } else {
            for (i, o) in out.iter_mut().enumerate().take(k) {
                *o = self.filter_hash(key, i);
            }
        }
        if self.reuses() {
            out[0]
        } else {
            self.table_hash(key)
        }
    }
}

/// The `i`-th function of family `kind` on `key` (`i < MAX_FUNCTIONS`).
#[inline(always)]
pub(crate) fn hash(kind: HashKind, key: u64, i: usize) -> u32 {
    match kind {
        HashKind::H2 => h2(key as u32 ^ SEEDS[i]),
        HashKind::Murmur32 => murmur32(key as u32, SEEDS[i]),
        HashKind::Murmur64 => murmur64(key, SEEDS[i]),
        HashKind::Knuth => knuth(fold(key), KNUTH[i]),
        HashKind::CRand => crand(&crand_seed(fold(key)), i),
    }
}

/// `h1`, `h2` (Kirsch–Mitzenmacher) and the table hash `t` of `keys`, on the scalar path.
pub(crate) fn hash_keys_scalar(
    hashing: &Hashing,
    keys: &[u64],
    h1: &mut [u32],
    h2: &mut [u32],
    t: &mut [u32],
) {
    for (i, &k) in keys.iter().enumerate() {
        h1[i] = hash(hashing.kind, k, 0);
        if hashing.k > 1 {
            h2[i] = hash(hashing.kind, k, 1);
        }
        t[i] = if hashing.reuses() {
            h1[i]
        } else {
            hash(hashing.table_kind, k, 0)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn glibc_rand_sequence() {
        // glibc: srand(1); rand() x5, and srand(42).
        let mut g = CRand::new(1);
        let v: Vec<u32> = (0..5).map(|_| g.next()).collect();
        assert_eq!(
            v,
            [
                1_804_289_383,
                846_930_886,
                1_681_692_777,
                1_714_636_915,
                1_957_747_793
            ]
        );
        let mut g = CRand::new(42);
        assert_eq!(g.next(), 71_876_166);
        assert_eq!(g.next(), 708_592_740);
        // srand(0) is srand(1).
        assert_eq!(CRand::new(0).next(), 1_804_289_383);
        // The fast form is the generator, negative and extreme seeds included.
        let mut rng = SplitMix64::new(5);
        let seeds = [0u32, 1, 42, 0x7fff_fffe, 0x7fff_ffff, 0x8000_0000, u32::MAX];
        for seed in seeds
            .into_iter()
            .chain((0..2000).map(|_| rng.next() as u32))
        {
            let mut g = CRand::new(seed);
            let words = crand_seed(seed);
            for j in 0..MAX_FUNCTIONS {
                assert_eq!(crand(&words, j), g.next(), "seed {seed:#x}, output {j}");
            }
        }
    }

    #[test]
    fn murmur_reference_values() {
        // MurmurHash3_x86_32 of the bytes of the key (smhasher's reference code).
        assert_eq!(murmur32(0, 0), 0x2362_f9de);
        assert_eq!(murmur64(0, 0), murmur_bytes(&[0; 8], 0));
        for x in [1u64, 0xdead_beef, 0x0123_4567_89ab_cdef, u64::MAX] {
            for seed in [0, 1, 0x9747_b28c] {
                assert_eq!(murmur64(x, seed), murmur_bytes(&x.to_le_bytes(), seed));
                assert_eq!(
                    murmur32(x as u32, seed),
                    murmur_bytes(&(x as u32).to_le_bytes(), seed)
                );
            }
        }
    }

    /// The general `MurmurHash3_x86_32` for whole blocks (lengths divisible by 4).
    fn murmur_bytes(data: &[u8], seed: u32) -> u32 {
        let mut h = seed;
        for b in data.chunks_exact(4) {
            h = murmur_block(h, u32::from_le_bytes(b.try_into().unwrap()));
        }
        fmix32(h ^ data.len() as u32)
    }

    #[test]
    fn h2_and_knuth() {
        assert_eq!(h2(0), 0);
        assert_ne!(h2(1), h2(2));
        // Knuth keeps divisibility: multiples of 256 hash to multiples of 256.
        for x in [256u32, 0x0a01_0200, 0xffff_ff00] {
            assert_eq!(knuth(x, KNUTH[3]) % 256, 0);
        }
        assert!(KNUTH.iter().all(|c| c % 2 == 1));
    }

    #[test]
    fn fastmod_is_exact() {
        let mut rng = SplitMix64::new(7);
        for d in [
            1u32,
            2,
            3,
            7,
            1000,
            2_434_631,
            9_312_412,
            u32::MAX - 1,
            u32::MAX,
        ] {
            let f = FastMod::new(d);
            for a in [0u32, 1, d.wrapping_sub(1), d, u32::MAX] {
                assert_eq!(f.reduce(a), a % d, "{a} mod {d}");
            }
            let g = DivMagic::new(d);
            for a in [0u32, 1, d.wrapping_sub(1), d, u32::MAX] {
                assert_eq!(g.reduce(a), a % d, "{a} mod {d} (magic)");
            }
            for _ in 0..10_000 {
                let a = rng.next() as u32;
                assert_eq!(f.reduce(a), a % d, "{a} mod {d}");
                assert_eq!(g.reduce(a), a % d, "{a} mod {d} (magic)");
            }
        }
    }

    #[test]
    fn positions_follow_the_options() {
        let mut p = [0u32; MAX_FUNCTIONS];
        let km = Hashing {
            kind: HashKind::H2,
            table_kind: HashKind::H2,
            double_hashing: true,
            reuse: true,
            k: 4,
        };
        let t = km.positions(0x0a01_0200, &mut p);
        let (h1, h2v) = (
            hash(HashKind::H2, 0x0a01_0200, 0),
            hash(HashKind::H2, 0x0a01_0200, 1),
        );
        assert_eq!(t, h1);
        assert_eq!(p[3], h1.wrapping_add(3u32.wrapping_mul(h2v)));
        let plain = Hashing {
            double_hashing: false,
            reuse: false,
            table_kind: HashKind::Murmur32,
            ..km
        };
        let t = plain.positions(5, &mut p);
        assert_eq!(t, murmur32(5, 0));
        assert_eq!(p[2], h2(5 ^ SEEDS[2]));
        let crand = Hashing {
            kind: HashKind::CRand,
            table_kind: HashKind::CRand,
            ..plain
        };
        crand.positions(1, &mut p);
        assert_eq!(p[..3], [1_804_289_383, 846_930_886, 1_681_692_777]);
        assert_eq!(hash(HashKind::CRand, 1, 2), 1_681_692_777);
    }
}

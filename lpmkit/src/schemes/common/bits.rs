//! Bitmap ranks and population counts, the one copy every compressed scheme uses.
//!
//! * [`ones_through`]: the rank of a 64-bit vector at a position (Poptrie's
//!   `popcnt(vector & ((2 << i) - 1))`, §3.2). It compiles to one `popcnt` inside a kernel
//!   built with that target feature, and to a bit-twiddling sequence elsewhere, so a scheme
//!   gets the instruction and its portable twin from one source.
//! * [`BYTE_ONES`], [`ones_through_msb8`], [`ones_in_msb8`]: ranks by table over bitmaps
//!   cut into 8-bit clusters read most significant bit first (OBMA's Index Table,
//!   Algorithm 1, lines 7–11).
//! * [`count_le_swar`], [`count_le_scalar`]: how many of eight sorted bytes are at or below
//!   a value, eight compares in one word (Luleå's sparse chunks, §4.2).

/// The number of 1s of every 8-bit value: the table a software rank reads (OBMA's *Index
/// Table*).
pub(crate) static BYTE_ONES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
};

/// Set bits of `v` at or below bit `idx` (`idx < 64`): `popcnt(v & ((2 << idx) - 1))`.
#[inline(always)]
pub(crate) fn ones_through(v: u64, idx: u32) -> u32 {
    debug_assert!(idx < 64);
    (v << (63 - idx)).count_ones()
}

/// Set bits of the 8-bit cluster `bits` (most significant bit = position 0) at positions
/// `0..=i % 8`, by [`BYTE_ONES`].
#[inline(always)]
pub(crate) fn ones_through_msb8(bits: u32, i: usize) -> u32 {
    u32::from(BYTE_ONES[((bits & 0xff) >> (7 - (i & 7))) as usize])
}

/// Set bits at positions `lo..hi` of a bitmap of 8-bit clusters, most significant bit
/// first; `cluster(c)` reads cluster `c` (its low 8 bits).
#[inline]
pub(crate) fn ones_in_msb8(cluster: impl Fn(usize) -> u32, lo: usize, hi: usize) -> usize {
    let mut n = 0;
    let mut q = lo;
    while q < hi {
        let c = q / 8;
        let end = hi.min(c * 8 + 8);
        // Bits q..end of cluster c, most significant first.
        let mask = (0xffu32 >> (q & 7)) & !(0xffu32 >> (end - c * 8)) & 0xff;
        n += (cluster(c) & mask).count_ones() as usize;
        q = end;
    }
    n
}

/// How many of the eight bytes of `bytes` are at or below `byte` (`byte < 256`): eight
/// byte compares done at once in one 64-bit word (SWAR). Each byte `h` is compared as
/// `(byte | 0x100) - h` in a 9-bit lane emulated by splitting the word into its even and
/// odd bytes, which leaves bit 8 set exactly when `h <= byte`.
#[inline(always)]
pub(crate) fn count_le_swar(bytes: u64, byte: u32) -> u32 {
    const EVEN: u64 = 0x00ff_00ff_00ff_00ff;
    const ONES9: u64 = 0x0100_0100_0100_0100;
    let k = (byte as u64) * 0x0001_0001_0001_0001;
    let even = ((k | ONES9) - (bytes & EVEN)) & ONES9;
    let odd = ((k | ONES9) - ((bytes >> 8) & EVEN)) & ONES9;
    even.count_ones() + odd.count_ones()
}

/// The scalar twin of [`count_le_swar`].
#[inline(always)]
pub(crate) fn count_le_scalar(bytes: u64, byte: u32) -> u32 {
    (0..8)
        .map(|i| (((bytes >> (8 * i)) & 0xff) as u32 <= byte) as u32)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn the_byte_table_counts_every_byte() {
        for b in 0..256u32 {
            assert_eq!(u32::from(BYTE_ONES[b as usize]), b.count_ones());
        }
        assert_eq!(BYTE_ONES[17], 2);
    }

    #[test]
    fn ranks_equal_masked_population_counts() {
        let mut rng = SplitMix64::new(7);
        for _ in 0..2_000 {
            let v = rng.next();
            for idx in 0..64 {
                let mask = if idx == 63 {
                    u64::MAX
                } else {
                    (2u64 << idx) - 1
                };
                assert_eq!(ones_through(v, idx), (v & mask).count_ones());
            }
            let b = (v & 0xff) as u32;
            for i in 0..8 {
                let bits_0_to_i = (0..=i).filter(|&p| b & (0x80 >> p) != 0).count() as u32;
                assert_eq!(ones_through_msb8(b, i), bits_0_to_i);
            }
        }
    }

    #[test]
    fn cluster_ranges_count_their_bits() {
        let mut rng = SplitMix64::new(9);
        let clusters: Vec<u32> = (0..16).map(|_| (rng.next() & 0xff) as u32).collect();
        let bit = |q: usize| clusters[q / 8] & (0x80 >> (q % 8)) != 0;
        for lo in 0..128 {
            for hi in lo..=128 {
                let want = (lo..hi).filter(|&q| bit(q)).count();
                assert_eq!(ones_in_msb8(|c| clusters[c], lo, hi), want, "{lo}..{hi}");
            }
        }
    }

    #[test]
    fn swar_byte_compares_equal_their_scalar_twin() {
        let mut rng = SplitMix64::new(11);
        for _ in 0..20_000 {
            let bytes = rng.next();
            let byte = (rng.next() & 0xff) as u32;
            assert_eq!(count_le_swar(bytes, byte), count_le_scalar(bytes, byte));
        }
        for byte in [0, 255] {
            assert_eq!(count_le_swar(0, byte), 8);
            assert_eq!(
                count_le_swar(u64::MAX, byte),
                if byte == 255 { 8 } else { 0 }
            );
        }
    }
}

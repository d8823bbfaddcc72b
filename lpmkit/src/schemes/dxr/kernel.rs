//! The SIMD stages of DXR's batched lookup, written once over [`Lanes`] and instantiated
//! for AVX2 ([`avx2`]) and AVX-512 ([`avx512`]).
//!
//! * **Stage 2**, a vector of keys at a time (two vectors of eight or one of sixteen per
//!   block of [`BATCH`] keys): one `vpgatherdd` reads their lookup-table entries, the next
//!   hops of all of them are stored (right for direct chunks, overwritten for the others
//!   in stage 3), and the keys whose chunk needs a search are left-packed into the
//!   block's list of searches (`vpcompressd`, or a permutation from a table on AVX2),
//!   whose chunk starts are prefetched. Scalar work is spent only on the keys that
//!   search (a quarter of uniformly random keys on a full table with `d18r`). A block
//!   shorter than [`BATCH`] (the end of a call) ends with a masked vector.
//! * **Stage 3**: a search is halved (branch-free scalar steps) until its entries fit one
//!   64-byte window — 32 short or 16 long entries, which is most chunks whole — and is
//!   then finished in one step ([`Window::count_le`], the one step the instruction sets
//!   do differently): the count of the window's entries at or below the key, the lanes
//!   past the search masked off. Since the entries are sorted, that count is the index
//!   of the key's range plus one.
//!
//! The scalar twin is [`Lockstep`](super::scalar::Lockstep); the differential tests run
//! it and both instances.

use core::arch::x86_64::*;
use core::marker::PhantomData;

use super::scalar::{Pipeline, Stages};
use super::{DxrTable, BATCH};
use crate::simd::lanes::{LaneMask, Lanes};
use crate::simd::{Avx2, Avx512};

/// Bulk lookup, the AVX2 instance.
pub(super) fn avx2<const REMAP: bool>(_: Avx2, t: &DxrTable, keys: &[u32], out: &mut [u32]) {
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn run<const REMAP: bool>(t: &DxrTable, keys: &[u32], out: &mut [u32]) {
        // SAFETY: this function's target features are `__m256i`'s.
        unsafe { t.lookup_pipeline::<REMAP, Simd<__m256i>>(keys, out) }
    }
    // SAFETY: the token proves AVX2 and POPCNT.
    unsafe { run::<REMAP>(t, keys, out) }
}

/// Bulk lookup, the AVX-512 instance.
pub(super) fn avx512<const REMAP: bool>(_: Avx512, t: &DxrTable, keys: &[u32], out: &mut [u32]) {
    #[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
    unsafe fn run<const REMAP: bool>(t: &DxrTable, keys: &[u32], out: &mut [u32]) {
        // SAFETY: this function's target features are `__m512i`'s.
        unsafe { t.lookup_pipeline::<REMAP, Simd<__m512i>>(keys, out) }
    }
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT.
    unsafe { run::<REMAP>(t, keys, out) }
}

/// The step the instruction sets do differently: a search's 64-byte window against the
/// key.
pub(super) trait Window: Lanes {
    /// The entries at or below `kc` (unsigned) among the first `len` entries of the 64
    /// bytes at `at`: 16-bit entries if `short` (`len` ≤ 32), else 32-bit ones (`len` ≤ 16).
    ///
    /// # Safety
    /// The instruction set of `Self`; 64 bytes are readable at `at`.
    unsafe fn count_le(at: *const u8, short: bool, kc: u32, len: u32) -> u32;
}

impl Window for __m256i {
    /// Two halves: `min(entry, key') == entry` is `entry <= key'` for unsigned lanes, and a
    /// `movemask` of each half gathers the compares.
    #[inline(always)]
    unsafe fn count_le(at: *const u8, short: bool, kc: u32, len: u32) -> u32 {
        // SAFETY: AVX2 (the contract); 64 readable bytes, two unaligned loads.
        unsafe {
            let lo = _mm256_loadu_si256(at as *const __m256i);
            let hi = _mm256_loadu_si256(at.add(32) as *const __m256i);
            if short {
                let kc = _mm256_set1_epi16(kc as u16 as i16);
                let le_lo = _mm256_cmpeq_epi16(_mm256_min_epu16(lo, kc), lo);
                let le_hi = _mm256_cmpeq_epi16(_mm256_min_epu16(hi, kc), hi);
                let m = (_mm256_movemask_epi8(le_lo) as u32 as u64)
                    | ((_mm256_movemask_epi8(le_hi) as u32 as u64) << 32);
                // Two mask bits per 16-bit entry; `len` is 1..=32.
                (m & (u64::MAX >> (64 - 2 * len))).count_ones() / 2
            } else {
                let kc = _mm256_set1_epi32(kc as i32);
                let le_lo = _mm256_cmpeq_epi32(_mm256_min_epu32(lo, kc), lo);
                let le_hi = _mm256_cmpeq_epi32(_mm256_min_epu32(hi, kc), hi);
                let m = (_mm256_movemask_ps(_mm256_castsi256_ps(le_lo)) as u32)
                    | ((_mm256_movemask_ps(_mm256_castsi256_ps(le_hi)) as u32) << 8);
                // One mask bit per 32-bit entry; `len` is 1..=16.
                (m & (u32::MAX >> (32 - len))).count_ones()
            }
        }
    }
}

impl Window for __m512i {
    /// One register: an unsigned compare writes a mask of the entries at or below the key
    /// (`vpcmpuw`/`vpcmpud`).
    #[inline(always)]
    unsafe fn count_le(at: *const u8, short: bool, kc: u32, len: u32) -> u32 {
        // SAFETY: AVX-512 F/BW (the contract); 64 readable bytes, one unaligned load.
        unsafe {
            let w = _mm512_loadu_si512(at as *const __m512i);
            // One bit per entry, the entries past the search masked off; `len` is 1..=32
            // (short) or 1..=16.
            let first = u32::MAX >> (32 - len);
            let le = if short {
                _mm512_mask_cmple_epu16_mask(first, w, _mm512_set1_epi16(kc as u16 as i16))
            } else {
                _mm512_mask_cmple_epu32_mask(first as u16, w, _mm512_set1_epi32(kc as i32)) as u32
            };
            le.count_ones()
        }
    }
}

/// Stages 2 and 3 on the vectors `V`.
pub(super) struct Simd<V>(PhantomData<V>);

/// What stage 2 needs of a table, for one vector of keys at a time.
struct Stage2<V> {
    lt: *const u8,
    rt: *const u8,
    shift: u32,
    pos_field: u32,
    pos_scale: u32,
    size_mask: V,
}

impl<V: Lanes> Stage2<V> {
    /// Stage 2 for the keys at `kp` (lane `i`: key `g + i` of the block), their next hops
    /// stored at `op`; the keys that search are packed into the block's lists at `n`.
    /// Returns how many search. `MASKED`: only the first `left` (< `V::LANES`) lanes are
    /// keys.
    ///
    /// # Safety
    /// `V`'s instruction set; `V::LANES` keys readable at `kp` and next hops writable at
    /// `op` (`left` of each if `MASKED`); `n + V::LANES` ≤ the lists' length; the table
    /// of `lt` and `rt` as in [`Stages::start`].
    #[inline(always)]
    unsafe fn vector<const MASKED: bool>(
        &self,
        p: &mut Pipeline,
        kp: *const u32,
        op: *mut u32,
        g: usize,
        left: usize,
        n: usize,
    ) -> usize {
        // SAFETY: as this function's.
        unsafe {
            let (m, k) = if MASKED {
                let m = V::Mask::first(left);
                (m, V::load_masked(kp, m))
            } else {
                (V::Mask::all(), V::load(kp))
            };
            let e = V::zero().gather_masked::<4>(self.lt, k.shr_by(self.shift), m);
            let nh = e.shr_by(self.pos_field);
            if MASKED {
                nh.store_masked(op, m);
            } else {
                nh.store(op);
            }
            let search = e.test(self.size_mask).and(m);
            let pack = V::packer(search);
            let pe = e.pack(pack);
            k.pack(pack).store(p.keys.as_mut_ptr().add(n));
            pe.store(p.entries.as_mut_ptr().add(n));
            V::iota()
                .add(V::splat(g as u32))
                .pack(pack)
                .store(p.slots.as_mut_ptr().add(n));
            // Prefetch the chunk starts of the packed lanes (the lanes past them hold
            // other entries or 0: harmless prefetches).
            let count = search.count() as usize;
            pe.shr_by(self.pos_field)
                .shl_by(self.pos_scale)
                .prefetch_lanes(self.rt, count);
            count
        }
    }
}

impl<V: Window> Stages for Simd<V> {
    #[inline(always)]
    unsafe fn start(p: &mut Pipeline, t: &DxrTable, keys: &[u32], out: &mut [u32]) {
        debug_assert!(keys.len() <= BATCH && out.len() == keys.len());
        const { assert!(BATCH.is_multiple_of(16)) };
        let mut n = 0;
        // SAFETY (whole block): `V`'s instruction set is the caller's. Loads and stores of
        // `keys` and `out` at `g` cover the vector's lanes below `keys.len()` (masked past
        // it); the gather indices are `key >> (32 - k) < 2^k`, the lookup table's length,
        // and their byte offsets (< 2^26) fit the gather's signed 32-bit index; the packed
        // stores at `n <= g` write a vector into arrays of `BATCH + 8`, and `g + V::LANES
        // <= BATCH`. Lookup-table entries are switch words the writer may store to
        // meanwhile: each gathered lane is an aligned 32-bit load, which x86 performs as
        // one access (the old or the new entry, never a mix), and a new entry's chunk was
        // complete before its store.
        unsafe {
            let c = Stage2::<V> {
                lt: t.lt.as_ptr() as *const u8,
                rt: t.rt.as_ptr() as *const u8,
                shift: 32 - t.k,
                pos_field: t.fmt.pos_field(),
                pos_scale: t.pos_shift + 2,
                size_mask: V::splat(t.fmt.size_mask()),
            };
            let (kp, op) = (keys.as_ptr(), out.as_mut_ptr());
            if keys.len() == BATCH {
                // A whole block: whole vectors at constant offsets, straight-line code.
                for g in (0..BATCH).step_by(V::LANES) {
                    n += c.vector::<false>(p, kp.add(g), op.add(g), g, V::LANES, n);
                }
            } else {
                for g in (0..keys.len()).step_by(V::LANES) {
                    let left = keys.len() - g;
                    n += if left >= V::LANES {
                        c.vector::<false>(p, kp.add(g), op.add(g), g, left, n)
                    } else {
                        c.vector::<true>(p, kp.add(g), op.add(g), g, left, n)
                    };
                }
            }
        }
        p.n = n;
    }

    #[inline(always)]
    unsafe fn finish(p: &mut Pipeline, t: &DxrTable, out: &mut [u32]) {
        let rt = t.rt.as_ptr() as *const u8;
        for j in 0..p.n {
            let mut s = t.search(p.entries[j], p.keys[j]);
            let short = s.es == 1;
            let cap = if short { 32 } else { 16 };
            while s.len > cap {
                t.step(&mut s);
            }
            let at = s.off + ((s.base as usize) << s.es);
            debug_assert!(at + 64 <= t.rt.committed() * 4);
            // SAFETY: the search's entries `base .. base + len` lie inside the range
            // table and the window starts at `base`; `PAD_WORDS` (64 bytes) are always
            // committed past the top, so the 64 bytes from `at` are readable. (Bytes past
            // the chunk may belong to a block the writer is filling: the lanes past the
            // search are masked off, so their values never reach the result.) `V`'s
            // instruction set is the caller's.
            let count = unsafe { V::count_le(rt.add(at), short, s.kc, s.len) };
            debug_assert!(count >= 1, "the first entry starts at or below the key");
            out[p.slots[j] as usize] = t.entry_at(&s, s.base + count - 1) & s.nh_mask;
        }
    }
}

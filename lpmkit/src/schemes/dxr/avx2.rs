//! The AVX2 stages of DXR's batched lookup.
//!
//! * **Stage 2**, eight keys at a time: one `vpgatherdd` reads their lookup-table entries,
//!   the next hops of all eight are stored (right for direct chunks, overwritten for the
//!   others in stage 3), and the keys whose chunk needs a search are left-packed (a
//!   permutation from a 256-entry table indexed by the lane mask) into the block's list of
//!   searches, whose chunk starts are prefetched. Scalar work is spent only on the keys
//!   that search (a quarter of uniformly random keys on a full table with `d18r`).
//! * **Stage 3**: a search is halved (branch-free scalar steps) until its entries fit one
//!   64-byte window — 32 short or 16 long entries, which is most chunks whole — and is then
//!   finished in one step: compare the window with the key (`min(entry, key') == entry` is
//!   `entry <= key'` for unsigned lanes), mask the lanes past the search, and count. Since
//!   the entries are sorted, the count of entries at or below the key is the index of the
//!   key's range plus one.
//!
//! The scalar twin is [`Lockstep`](super::scalar::Lockstep); the differential tests run
//! both.

use core::arch::x86_64::*;

use super::scalar::{Pipeline, Stages};
use super::{DxrTable, BATCH};
use crate::simd::{prefetch, Avx2, Popcnt, LEFT_PACK};

/// Proof that the CPU runs these kernels: AVX2 and POPCNT.
#[derive(Clone, Copy, Debug)]
pub(super) struct Token {
    _avx2: Avx2,
    _popcnt: Popcnt,
}

impl Token {
    /// The token if both features are given.
    pub(super) fn new(avx2: Option<Avx2>, popcnt: Option<Popcnt>) -> Option<Token> {
        Some(Token {
            _avx2: avx2?,
            _popcnt: popcnt?,
        })
    }
}

/// Bulk lookup with the AVX2 stages.
pub(super) fn lookup_batch<const REMAP: bool>(
    _token: Token,
    t: &DxrTable,
    keys: &[u32],
    out: &mut [u32],
) {
    // SAFETY: holding a `Token` proves the CPU supports AVX2 and POPCNT.
    unsafe { kernel::<REMAP>(t, keys, out) }
}

/// # Safety
/// The CPU must support AVX2 and POPCNT.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn kernel<const REMAP: bool>(t: &DxrTable, keys: &[u32], out: &mut [u32]) {
    // SAFETY: `Window` needs AVX2 and POPCNT, which the caller guarantees.
    unsafe { t.lookup_pipeline::<REMAP, Window>(keys, out) }
}

/// Stages 2 and 3 with AVX2.
pub(super) struct Window;

impl Stages for Window {
    #[inline(always)]
    unsafe fn start(p: &mut Pipeline, t: &DxrTable, keys: &[u32], out: &mut [u32]) {
        debug_assert!(keys.len() <= BATCH && out.len() == keys.len());
        let lt = t.lt.as_ptr() as *const i32;
        let rt = t.rt.as_ptr() as *const u8;
        let mut n = 0;
        let whole = keys.len() / 8 * 8;
        // SAFETY (whole block): AVX2 is guaranteed by the caller. Loads and stores of eight
        // u32 at `g` stay inside `keys` and `out` (`g + 8 <= whole <= len`); the gather
        // indices are `key >> (32 - k) < 2^k`, the lookup table's length, and their byte
        // offsets (< 2^26) fit the gather's signed 32-bit index; the packed stores at `n`
        // write 8 lanes into arrays of `BATCH + 8` with `n <= g < BATCH`. Lookup-table
        // entries are switch words the writer may store to meanwhile: each gathered lane
        // is an aligned 32-bit load, which x86 performs as one access (the old or the new
        // entry, never a mix), and a new entry's chunk was complete before its store.
        unsafe {
            let shift = _mm_cvtsi32_si128((32 - t.k) as i32);
            let pos_scale = _mm_cvtsi32_si128((t.pos_shift + 2) as i32);
            let size_mask = _mm256_set1_epi32(t.fmt.size_mask() as i32);
            let pos_field = _mm_cvtsi32_si128(t.fmt.pos_field() as i32);
            let mut offs = [0u32; 8];
            let mut g = 0;
            while g < whole {
                let k = _mm256_loadu_si256(keys.as_ptr().add(g) as *const __m256i);
                let e = _mm256_i32gather_epi32::<4>(lt, _mm256_srl_epi32(k, shift));
                let nh = _mm256_srl_epi32(e, pos_field);
                _mm256_storeu_si256(out.as_mut_ptr().add(g) as *mut __m256i, nh);
                let direct =
                    _mm256_cmpeq_epi32(_mm256_and_si256(e, size_mask), _mm256_setzero_si256());
                let m = !_mm256_movemask_ps(_mm256_castsi256_ps(direct)) as u32 & 0xff;
                let perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(LEFT_PACK[m as usize] as i64));
                let pk = _mm256_permutevar8x32_epi32(k, perm);
                let pe = _mm256_permutevar8x32_epi32(e, perm);
                let ps = _mm256_add_epi32(perm, _mm256_set1_epi32(g as i32));
                _mm256_storeu_si256(p.keys.as_mut_ptr().add(n) as *mut __m256i, pk);
                _mm256_storeu_si256(p.entries.as_mut_ptr().add(n) as *mut __m256i, pe);
                _mm256_storeu_si256(p.slots.as_mut_ptr().add(n) as *mut __m256i, ps);
                // Prefetch the chunk start of the packed lanes (the lanes past the new
                // ones hold copies of other lanes: harmless prefetches).
                let off = _mm256_sll_epi32(_mm256_srl_epi32(pe, pos_field), pos_scale);
                _mm256_storeu_si256(offs.as_mut_ptr() as *mut __m256i, off);
                let new = m.count_ones() as usize;
                for &o in &offs[..4] {
                    prefetch(rt.wrapping_add(o as usize));
                }
                if new > 4 {
                    for &o in &offs[4..] {
                        prefetch(rt.wrapping_add(o as usize));
                    }
                }
                n += new;
                g += 8;
            }
        }
        for (i, (&a, o)) in keys.iter().zip(out.iter_mut()).enumerate().skip(whole) {
            let e = t.entry_of(a);
            *o = e >> t.fmt.pos_field();
            if e & t.fmt.size_mask() != 0 {
                p.keys[n] = a;
                p.entries[n] = e;
                p.slots[n] = i as u32;
                n += 1;
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
            // search are masked off, so their values never reach the result.)
            // AVX2 is guaranteed by the caller; the loads are unaligned.
            let count = unsafe {
                let lo = _mm256_loadu_si256(rt.add(at) as *const __m256i);
                let hi = _mm256_loadu_si256(rt.add(at + 32) as *const __m256i);
                if short {
                    let kc = _mm256_set1_epi16(s.kc as u16 as i16);
                    let le_lo = _mm256_cmpeq_epi16(_mm256_min_epu16(lo, kc), lo);
                    let le_hi = _mm256_cmpeq_epi16(_mm256_min_epu16(hi, kc), hi);
                    let m = (_mm256_movemask_epi8(le_lo) as u32 as u64)
                        | ((_mm256_movemask_epi8(le_hi) as u32 as u64) << 32);
                    // Two mask bits per 16-bit entry; `len` is 1..=32.
                    (m & (u64::MAX >> (64 - 2 * s.len))).count_ones() / 2
                } else {
                    let kc = _mm256_set1_epi32(s.kc as i32);
                    let le_lo = _mm256_cmpeq_epi32(_mm256_min_epu32(lo, kc), lo);
                    let le_hi = _mm256_cmpeq_epi32(_mm256_min_epu32(hi, kc), hi);
                    let m = (_mm256_movemask_ps(_mm256_castsi256_ps(le_lo)) as u32)
                        | ((_mm256_movemask_ps(_mm256_castsi256_ps(le_hi)) as u32) << 8);
                    // One mask bit per 32-bit entry; `len` is 1..=16.
                    (m & (u32::MAX >> (32 - s.len))).count_ones()
                }
            };
            debug_assert!(count >= 1, "the first entry starts at or below the key");
            out[p.slots[j] as usize] = t.entry_at(&s, s.base + count - 1) & s.nh_mask;
        }
    }
}

//! AVX-512 node search and stage of the /32 lines. The node search is the paper's (§3:
//! one 512-bit compare per node); the line stage is an lpmkit extension.
//!
//! * **Node search**: a node's keys against the search key in one 512-bit compare into a
//!   mask register (sixteen 32-bit or eight 64-bit keys; a 32-byte node or leaf in one
//!   256-bit compare), counted by `popcnt`. Keys are stored biased (top bit flipped), so
//!   the signed compares order them as unsigned numbers.
//! * **The /32 lines** ([`Avx512Search::line_values`]), over spans of up to
//!   [`SPAN`] keys in blocks of eight: the /32s and bits 32–63 of a block are taken from
//!   the keys by one two-register permute, the perfect hash (`front.rs`) is computed in
//!   32-bit lanes (`vpmulld`, a shift; the line's multiply-shift reduction in 64-bit
//!   lanes), the pilots are gathered, and the eight lines are prefetched. The block
//!   searched runs `AHEAD` blocks behind the block hashed (software pipelining across the
//!   span, so the line misses overlap): each key's line is one 512-bit load, its seven
//!   keys compared with the key's bits 32–63 in one masked compare, and the value read
//!   from the line at the count. No branch depends on a key.
//!
//! The lookup runs this kernel only when asked for (see the scheme's docs).

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::batch::{self, NodeSearch, View, MAX_BATCH, SPAN};
use super::front::{LineFront, KB, KL, LINE_KEYS, LINE_TAG, LINE_VALS, LINE_WORDS};
use super::tree::{Key, Layout, MISS};
use crate::prefix::Address;
use crate::simd::{prefetch, prefetch_keys_ahead, Avx512};

/// Node search with AVX-512 compares.
pub(crate) struct Avx512Search;

impl NodeSearch for Avx512Search {
    #[inline(always)]
    unsafe fn count_masked<K: Key>(p: *const K, x: K, n: usize, mask: u32) -> u32 {
        // SAFETY: the caller guarantees AVX-512 F/BW/DQ/VL, 32-byte alignment and `n`
        // readable keys (a multiple of 8 for 32-bit keys, of 4 for 64-bit keys); the
        // loads cover `n` keys in whole vectors.
        unsafe {
            let mut m = 0u32;
            let mut c = 0;
            if K::BITS == 32 {
                let xv = _mm512_set1_epi32(x.raw() as i32);
                while c + 16 <= n {
                    let k = _mm512_load_si512(p.add(c) as *const __m512i);
                    m |= (_mm512_cmplt_epi32_mask(k, xv) as u32) << c;
                    c += 16;
                }
                if c < n {
                    let k = _mm256_load_si256(p.add(c) as *const __m256i);
                    let lt = _mm256_cmplt_epi32_mask(k, _mm512_castsi512_si256(xv));
                    m |= (lt as u32) << c;
                }
            } else {
                let xv = _mm512_set1_epi64(x.raw() as i64);
                while c + 8 <= n {
                    let k = _mm512_load_si512(p.add(c) as *const __m512i);
                    m |= (_mm512_cmplt_epi64_mask(k, xv) as u32) << c;
                    c += 8;
                }
                if c < n {
                    let k = _mm256_load_si256(p.add(c) as *const __m256i);
                    let lt = _mm256_cmplt_epi64_mask(k, _mm512_castsi512_si256(xv));
                    m |= (lt as u32) << c;
                }
            }
            (m & mask).count_ones()
        }
    }

    const SPANS: bool = true;

    #[inline(always)]
    unsafe fn line_values<A: Address>(
        f: &LineFront,
        keys: &[A],
        res: &mut [u32],
        child: &mut [u64],
    ) {
        match v6_keys(keys) {
            // SAFETY: as this function's.
            Some(k) => unsafe { line_values_v6(f, k, res, child) },
            // The lines are an IPv6 front: not reached; the plain stage in groups.
            None => {
                for (c, (k, r)) in keys
                    .chunks(MAX_BATCH)
                    .zip(res.chunks_mut(MAX_BATCH))
                    .enumerate()
                {
                    let w = c * MAX_BATCH / 64;
                    // SAFETY: as this function's; a group of `MAX_BATCH` keys.
                    unsafe { batch::line_values_with::<A, Self>(f, k, r, &mut child[w..]) };
                }
            }
        }
    }
}

/// `keys` as `u128`s when `A` is IPv6.
#[inline(always)]
fn v6_keys<A: Address>(keys: &[A]) -> Option<&[u128]> {
    if A::BITS != 128 || core::mem::size_of::<A>() != 16 {
        return None;
    }
    // SAFETY: `Address` is sealed and implemented for `u32` and `u128` only, so a 128-bit
    // `A` is `u128`: same size, alignment and validity.
    Some(unsafe { core::slice::from_raw_parts(keys.as_ptr() as *const u128, keys.len()) })
}

/// How many keys ahead of the block hashed the key stream is prefetched (within the span).
const KEYS_AHEAD: usize = 128;

/// Blocks of eight keys whose lines are hashed and prefetched ahead of the block searched.
const AHEAD: usize = 4;

/// Entries of the ring of staged keys (a multiple of 8, at least `8 · (AHEAD + 1)`).
const RING: usize = 64;

/// The per-key state of the line stage, a ring over the keys (key `j` at `j % RING`):
/// the address of the key's line, its /32 and its bits 32–63 (biased). Written in whole
/// blocks of eight, read for staged keys only.
struct Staged {
    at: [MaybeUninit<u64>; RING],
    tags: [MaybeUninit<u32>; RING],
    xs: [MaybeUninit<u32>; RING],
}

/// The hash constants in registers.
struct Hash {
    pick: __m512i,
    seed: __m256i,
    kb: __m256i,
    kl: __m256i,
    shift: __m128i,
    m: __m512i,
    bias: __m256i,
    base: __m512i,
    pilots: *const i32,
}

/// Stage 1 of the block of keys `g..g + 8` (those below `keys.len()`): their lines'
/// addresses, /32s and bits 32–63 into `st`, the lines prefetched.
///
/// # Safety
/// `g` is a multiple of 8 below `keys.len()`; `h` holds a built front's constants; the
/// CPU has AVX-512 F/BW/DQ/VL.
#[inline(always)]
unsafe fn stage(h: &Hash, keys: &[u128], g: usize, st: &mut Staged) {
    let live = (keys.len() - g).min(8);
    prefetch_keys_ahead(keys, g, 8, KEYS_AHEAD);
    let kp = keys.as_ptr() as *const i32;
    let slot = g % RING;
    // SAFETY: the loads read keys `g..g + live` only (masked when fewer than eight); the
    // gather reads pilots below `r` (a 32-bit hash shifted right by `32 − log2 r`); the
    // stores write ring entries `slot..slot + 8` ≤ `RING` (both multiples of 8); every
    // line index is below `m` (a reduction to `m`), so every address is a line of the
    // table.
    unsafe {
        let (a, b) = if live == 8 {
            (
                _mm512_loadu_si512(kp.add(4 * g) as *const __m512i),
                _mm512_loadu_si512(kp.add(4 * g + 16) as *const __m512i),
            )
        } else {
            // Dword masks of the two registers (four keys each).
            let dw = (1u64 << (4 * live)) - 1;
            (
                _mm512_maskz_loadu_epi32(dw as __mmask16, kp.add(4 * g)),
                _mm512_maskz_loadu_epi32((dw >> 16) as __mmask16, kp.add(4 * g + 16)),
            )
        };
        let tx = _mm512_permutex2var_epi32(a, h.pick, b);
        let tag = _mm512_castsi512_si256(tx);
        let x = _mm256_xor_si256(_mm512_extracti64x4_epi64::<1>(tx), h.bias);
        _mm256_storeu_si256(st.tags.as_mut_ptr().add(slot) as *mut __m256i, tag);
        _mm256_storeu_si256(st.xs.as_mut_ptr().add(slot) as *mut __m256i, x);
        // The hashes of `front.rs`, in 32-bit lanes: t = tag ^ seed; bucket = t·KB >>
        // shift; line = reduce(t·KL ^ pilot, m), in 64-bit lanes.
        let t = _mm256_xor_si256(tag, h.seed);
        let bucket = _mm256_srl_epi32(_mm256_mullo_epi32(t, h.kb), h.shift);
        let pilot = _mm256_i32gather_epi32::<4>(h.pilots, bucket);
        let hl = _mm256_xor_si256(_mm256_mullo_epi32(t, h.kl), pilot);
        let line = _mm512_srli_epi64::<32>(_mm512_mul_epu32(_mm512_cvtepu32_epi64(hl), h.m));
        let addr = _mm512_add_epi64(h.base, _mm512_slli_epi64::<6>(line));
        _mm512_storeu_si512(st.at.as_mut_ptr().add(slot) as *mut __m512i, addr);
        for p in &st.at[slot..slot + live] {
            prefetch(p.assume_init() as *const u32);
        }
    }
}

/// [`NodeSearch::line_values`] for IPv6 keys, eight at a time (see the module docs): the
/// lines of block `b + AHEAD` are hashed and prefetched before block `b` is searched.
///
/// # Safety
/// `f` is a built front; `keys.len()` ≤ [`SPAN`], ≤ `res.len()` and ≤ `64 ·
/// child.len()`; the CPU has AVX-512 F/BW/DQ/VL and POPCNT.
#[inline(always)]
unsafe fn line_values_v6(f: &LineFront, keys: &[u128], res: &mut [u32], child: &mut [u64]) {
    let n = keys.len();
    debug_assert!(n <= SPAN && res.len() >= n && child.len() * 64 >= n && LINE_WORDS == 16);
    const { assert!(RING.is_multiple_of(8) && RING >= 8 * (AHEAD + 1)) };
    let mut st = Staged {
        at: [MaybeUninit::uninit(); RING],
        tags: [MaybeUninit::uninit(); RING],
        xs: [MaybeUninit::uninit(); RING],
    };
    // SAFETY: the caller's features.
    let h = unsafe {
        Hash {
            // Dwords 3 (the /32) and 2 (bits 32–63) of eight keys held in two registers.
            pick: _mm512_set_epi32(30, 26, 22, 18, 14, 10, 6, 2, 31, 27, 23, 19, 15, 11, 7, 3),
            seed: _mm256_set1_epi32(f.seed as i32),
            kb: _mm256_set1_epi32(KB as i32),
            kl: _mm256_set1_epi32(KL as i32),
            shift: _mm_cvtsi32_si128(f.shift as i32),
            m: _mm512_set1_epi64(f.m as i64),
            bias: _mm256_set1_epi32(i32::MIN),
            base: _mm512_set1_epi64(f.lines.as_ptr() as i64),
            pilots: f.pilots.as_ptr() as *const i32,
        }
    };
    let blocks = n.div_ceil(8);
    for b in 0..AHEAD.min(blocks) {
        // SAFETY: block `b` starts below `n`; `h` is `f`'s; the caller's features.
        unsafe { stage(&h, keys, 8 * b, &mut st) };
    }
    for b in 0..blocks {
        if b + AHEAD < blocks {
            // SAFETY: as above.
            unsafe { stage(&h, keys, 8 * (b + AHEAD), &mut st) };
        }
        let g = 8 * b;
        let mut bits = 0u32;
        for (i, r) in res[g..n.min(g + 8)].iter_mut().enumerate() {
            let e = (g + i) % RING;
            // SAFETY: block `b` is staged (and blocks up to `b + AHEAD` only, which the
            // ring holds apart), so `at[e]` is the address of a line of the table
            // (64-byte aligned: seven keys, a tag and eight values) and `tags[e]`, `xs[e]`
            // are written; the CPU has the features.
            let out = unsafe {
                let line = st.at[e].assume_init() as *const u32;
                let lv = _mm512_load_si512(line as *const __m512i);
                let xv = _mm512_set1_epi32(st.xs[e].assume_init() as i32);
                let below = _mm512_mask_cmplt_epi32_mask((1 << LINE_KEYS) - 1, lv, xv);
                let val = *line.add(LINE_VALS + below.count_ones() as usize);
                // All ones when the line is the key's /32's.
                let tag = *line.add(LINE_TAG);
                let same = ((tag == st.tags[e].assume_init()) as u32).wrapping_neg();
                val & same | MISS & !same
            };
            *r = out;
            bits |= (out >> 31) << i;
        }
        child[b / 8] |= (bits as u64) << (8 * (b % 8));
    }
}

/// The batched lookup with AVX-512 node search and stage of the /32 lines.
pub(crate) fn lookup_batch<A: Address, L: Layout>(
    _avx512: Avx512,
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: the token proves AVX-512 F/BW/DQ/VL and POPCNT; `v` views a built table.
    unsafe {
        if v.lines() {
            kernel::<A, L, true>(v, batch, addrs, out)
        } else {
            kernel::<A, L, false>(v, batch, addrs, out)
        }
    }
}

#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
unsafe fn kernel<A: Address, L: Layout, const LINES: bool>(
    v: &View<'_, L>,
    batch: usize,
    addrs: &[A],
    out: &mut [u32],
) {
    // SAFETY: as `lookup_batch`'s; this function enables the features `Avx512Search`
    // uses.
    unsafe { batch::lookup::<A, L, Avx512Search, LINES>(v, batch, addrs, out) }
}

//! An AVX-512 batch lookup for Poptrie on IPv4 with VPOPCNTDQ: eight lookups per level
//! step, the population counts of their nodes' `vector` and `leafvec` by `vpopcntq`.
//!
//! A call is cut into chunks of [`CHUNK`] keys and a chunk is looked up level by level
//! (the lane-refilling order of Spider's kernels): a direct-pointing pass reads sixteen
//! entries per `vpgatherdd`, writes the answers of the leaf entries and packs
//! (`vpcompressd`) the lookups that go on into a pending list; each level pass then
//! steps eight pending lookups at a time: three `vpgatherdq` read their nodes' `vector`,
//! `leafvec` and bases, one variable shift and `vptestmq` tell which slots hold internal
//! nodes, `vpopcntq` of the shifted `vector` and `leafvec` gives the child and leaf
//! indices (`base1 + popcnt(vector << (63 − i)) − 1`, `base0 + …`), the lanes that end
//! gather their leaf and store it, and the others are packed again with their children
//! prefetched. Every level of a chunk's pass reads the same six key bits of every lane.
//!
//! The portable and `popcnt` lookups (`scalar.rs`) are the twins.

use core::arch::x86_64::*;
use core::mem::MaybeUninit;

use super::{Node, Trie, LEAF_FLAG, STRIDE};
use crate::schemes::common::{Width, Word};
use crate::simd::Vpopcntdq;

/// Keys per chunk.
const CHUNK: usize = 256;

/// The lookups of a chunk that go on (structure of arrays, with room for a full vector
/// store after the last entry).
struct Pending {
    /// Index of the key in the chunk.
    idx: [MaybeUninit<u32>; CHUNK + 16],
    /// The node to read next.
    node: [MaybeUninit<u32>; CHUNK + 16],
    /// The key shifted so that the next six bits are its top.
    key: [MaybeUninit<u32>; CHUNK + 16],
}

/// Looks up the IPv4 `keys` into `out` (as long).
pub(super) fn batch_v4<L: Word>(_token: Vpopcntdq, t: &Trie<L>, keys: &[u32], out: &mut [u32]) {
    debug_assert_eq!(keys.len(), out.len());
    // SAFETY: holding a `Vpopcntdq` token proves the CPU supports AVX-512F/BW/DQ/VL,
    // VPOPCNTDQ and POPCNT; `out` is as long as `keys`.
    unsafe { kernel(t, keys, out) }
}

/// # Safety
/// AVX-512F/BW/DQ/VL, VPOPCNTDQ and POPCNT; `out.len() >= keys.len()`.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx512vpopcntdq,popcnt")]
unsafe fn kernel<L: Word>(t: &Trie<L>, keys: &[u32], out: &mut [u32]) {
    let mut p = Pending {
        idx: [MaybeUninit::uninit(); CHUNK + 16],
        node: [MaybeUninit::uninit(); CHUNK + 16],
        key: [MaybeUninit::uninit(); CHUNK + 16],
    };
    for (k, o) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
        // SAFETY: the features are enabled (this function's); `o` is as long as `k`,
        // at most `CHUNK`.
        unsafe {
            let mut np = dp_pass(t, k, o, &mut p);
            while np > 0 {
                np = level_pass(t, o, &mut p, np);
            }
        }
    }
}

/// Prefetches node `i` of every lane of `nodes` (eight 32-bit lanes).
///
/// # Safety
/// AVX-512F/VL.
#[inline(always)]
unsafe fn prefetch_nodes(base: *const Node, nodes: __m256i) {
    // SAFETY: register operations; a prefetch is a hint and never faults.
    unsafe {
        for x in [
            _mm256_castsi256_si128(nodes),
            _mm256_extracti128_si256::<1>(nodes),
        ] {
            let a = _mm_cvtsi128_si64(x) as u64;
            let b = _mm_extract_epi64::<1>(x) as u64;
            for i in [a as u32, (a >> 32) as u32, b as u32, (b >> 32) as u32] {
                _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(i as usize) as *const i8);
            }
        }
    }
}

/// The direct-pointing pass over a chunk: answers of leaf entries to `out`, the lookups
/// that go into a node to the pending list; returns their count.
///
/// # Safety
/// The kernel's features; `out.len() >= keys.len()`, `keys.len() <= CHUNK`.
#[inline(always)]
unsafe fn dp_pass<L: Word>(t: &Trie<L>, keys: &[u32], out: &mut [u32], p: &mut Pending) -> usize {
    let n = keys.len();
    let s = t.s as u32;
    let dir = t.dir.as_ptr() as *const i32;
    let nodes = t.nodes.as_ptr();
    let mut np = 0;
    let mut i = 0;
    // SAFETY: vectors read keys `i..min(i + 16, n)` (masked past `n`) and write as many
    // results; direct-pointing indices are `key >> (32 − s) < 2^s`, all committed (and
    // 0 for masked lanes); entries are switch words, each gathered lane one aligned
    // 32-bit read (the old or the new entry); a node index read from an entry names a
    // committed node. `np <= i`, so the packed stores stay inside `CHUNK + 16` entries.
    unsafe {
        let lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        let flag = _mm512_set1_epi32(LEAF_FLAG as i32);
        let down = _mm_cvtsi32_si128(32 - s as i32);
        let up = _mm_cvtsi32_si128(s as i32);
        while i < n {
            let full = i + 16 <= n;
            let m: __mmask16 = if full {
                !0
            } else {
                ((1u32 << (n - i)) - 1) as __mmask16
            };
            let kp = keys.as_ptr().add(i);
            let k = if full {
                _mm512_loadu_si512(kp as *const __m512i)
            } else {
                _mm512_maskz_loadu_epi32(m, kp as *const i32)
            };
            // `key >> 32` is 0 for `s = 0`, as the scalar `top(0)`.
            let di = _mm512_srl_epi32(k, down);
            let e = if full {
                _mm512_i32gather_epi32::<4>(di, dir)
            } else {
                _mm512_mask_i32gather_epi32::<4>(_mm512_setzero_si512(), m, di, dir)
            };
            let leaf = _mm512_test_epi32_mask(e, flag);
            let v = _mm512_andnot_si512(flag, e);
            if full {
                _mm512_storeu_si512(out.as_mut_ptr().add(i) as *mut __m512i, v);
            } else {
                _mm512_mask_storeu_epi32(out.as_mut_ptr().add(i) as *mut i32, m, v);
            }
            let go = !leaf & m;
            let st = |a: &mut [MaybeUninit<u32>; CHUNK + 16], x: __m512i| {
                _mm512_storeu_si512(
                    a.as_mut_ptr().add(np) as *mut __m512i,
                    _mm512_maskz_compress_epi32(go, x),
                )
            };
            let packed = _mm512_maskz_compress_epi32(go, v);
            _mm512_storeu_si512(p.node.as_mut_ptr().add(np) as *mut __m512i, packed);
            st(
                &mut p.idx,
                _mm512_add_epi32(_mm512_set1_epi32(i as i32), lane),
            );
            // `key << s`: `s <= 24`.
            st(&mut p.key, _mm512_sll_epi32(k, up));
            let c = go.count_ones() as usize;
            prefetch_nodes(nodes, _mm512_castsi512_si256(packed));
            if c > 8 {
                prefetch_nodes(nodes, _mm512_extracti64x4_epi64::<1>(packed));
            }
            np += c;
            i += 16;
        }
    }
    np
}

/// One level step of the `np` pending lookups: eight at a time, their nodes gathered;
/// the lookups that end store their leaf, the others are packed (in place) with their
/// child; returns how many go on.
///
/// # Safety
/// The kernel's features; the pending entries come from the pass before over `out`'s
/// chunk.
#[inline(always)]
unsafe fn level_pass<L: Word>(t: &Trie<L>, out: &mut [u32], p: &mut Pending, np: usize) -> usize {
    let nodes = t.nodes.as_ptr();
    let leaves = t.leaves.as_ptr();
    let (mut rp, mut wp) = (0, 0);
    // SAFETY: entries `rp..np` were written by the pass before (the masked loads read
    // none past `np`); `wp <= rp`, so the in-place packed stores (8 entries at `wp`)
    // never overwrite an entry not yet read. Node indices are published ones (from an
    // entry without the leaf flag or `base1 + popcnt − 1` of a set vector bit), so
    // their 24 bytes are committed: the three gathered qwords at `3 · node + 0, 1, 2`
    // (byte offsets below 2^31: fewer than 2^26 nodes). `base1` is the switch word an
    // update stores to: its gathered qword is one aligned 8-byte read, which x86 performs
    // as one access, so the lane sees the old or the new child array, both complete.
    // Leaf indices `base0 + popcnt − 1` of a clear vector bit are committed leaves; a
    // 16-bit leaf is read as the aligned 32-bit word holding it, inside committed memory
    // (committed in whole pages). Key indices are below the chunk's length.
    unsafe {
        let one64 = _mm512_set1_epi64(1);
        let low32 = _mm512_set1_epi64(0xffff_ffff);
        let shift_in = _mm_cvtsi32_si128(STRIDE as i32);
        while rp < np {
            let full = rp + 8 <= np;
            let m: __mmask8 = if full {
                !0
            } else {
                ((1u32 << (np - rp)) - 1) as __mmask8
            };
            let ld = |a: &[MaybeUninit<u32>; CHUNK + 16]| {
                let q = a.as_ptr().add(rp);
                if full {
                    _mm256_loadu_si256(q as *const __m256i)
                } else {
                    _mm256_maskz_loadu_epi32(m, q as *const i32)
                }
            };
            let (idx, node, key) = (ld(&p.idx), ld(&p.node), ld(&p.key));
            // Qword index of each node: 3 · node.
            let q = _mm256_add_epi32(_mm256_add_epi32(node, node), node);
            let base = nodes as *const i64;
            let z = _mm512_setzero_si512();
            let vector = _mm512_mask_i32gather_epi64::<8>(z, m, q, base);
            let leafvec = _mm512_mask_i32gather_epi64::<8>(
                z,
                m,
                _mm256_add_epi32(q, _mm256_set1_epi32(1)),
                base,
            );
            let bases = _mm512_mask_i32gather_epi64::<8>(
                z,
                m,
                _mm256_add_epi32(q, _mm256_set1_epi32(2)),
                base,
            );
            // The six bits of the stride, and 63 minus them.
            let i6 = _mm512_cvtepu32_epi64(_mm256_srli_epi32::<26>(key));
            let up = _mm512_sub_epi64(_mm512_set1_epi64(63), i6);
            let inner = _mm512_test_epi64_mask(_mm512_srlv_epi64(vector, i6), one64) & m;
            let pv = _mm512_popcnt_epi64(_mm512_sllv_epi64(vector, up));
            let pl = _mm512_popcnt_epi64(_mm512_sllv_epi64(leafvec, up));
            // base1 + popcnt − 1, base0 + popcnt − 1 (32-bit, wrapping as the scalar).
            let child = _mm512_cvtepi64_epi32(_mm512_sub_epi64(
                _mm512_add_epi64(_mm512_srli_epi64::<32>(bases), pv),
                one64,
            ));
            let li = _mm512_cvtepi64_epi32(_mm512_sub_epi64(
                _mm512_add_epi64(_mm512_and_si512(bases, low32), pl),
                one64,
            ));
            let ends = !inner & m;
            if ends != 0 {
                let v = if L::WIDTH == Width::U16 {
                    let one = _mm256_set1_epi32(1);
                    let pair = _mm256_andnot_si256(one, li);
                    let w = _mm256_mmask_i32gather_epi32::<2>(
                        _mm256_setzero_si256(),
                        ends,
                        pair,
                        leaves as *const i32,
                    );
                    let sh = _mm256_slli_epi32::<4>(_mm256_and_si256(li, one));
                    _mm256_and_si256(_mm256_srlv_epi32(w, sh), _mm256_set1_epi32(0xffff))
                } else {
                    _mm256_mmask_i32gather_epi32::<4>(
                        _mm256_setzero_si256(),
                        ends,
                        li,
                        leaves as *const i32,
                    )
                };
                let mut vs = [0u32; 8];
                let mut is = [0u32; 8];
                _mm256_storeu_si256(vs.as_mut_ptr() as *mut __m256i, v);
                _mm256_storeu_si256(is.as_mut_ptr() as *mut __m256i, idx);
                let mut e = ends as u32;
                while e != 0 {
                    let l = e.trailing_zeros() as usize;
                    debug_assert!((is[l] as usize) < out.len());
                    *out.as_mut_ptr().add(is[l] as usize) = vs[l];
                    e &= e - 1;
                }
            }
            let packed = _mm256_maskz_compress_epi32(inner, child);
            let st = |a: &mut [MaybeUninit<u32>; CHUNK + 16], x: __m256i| {
                _mm256_storeu_si256(a.as_mut_ptr().add(wp) as *mut __m256i, x)
            };
            st(&mut p.node, packed);
            st(&mut p.idx, _mm256_maskz_compress_epi32(inner, idx));
            st(
                &mut p.key,
                _mm256_maskz_compress_epi32(inner, _mm256_sll_epi32(key, shift_in)),
            );
            if inner != 0 {
                prefetch_nodes(nodes, packed);
            }
            wp += inner.count_ones() as usize;
            rp += 8;
        }
    }
    wp
}

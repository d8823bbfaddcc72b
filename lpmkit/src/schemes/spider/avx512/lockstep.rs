//! The lockstep kernel on sixteen AVX-512 lanes: Algorithm 1 (IPv4) and Algorithm 2
//! (IPv6), one 16-lane register per block (the AVX2 kernel, `avx2/lockstep.rs`, fuses two
//! 8-lane streams for the same sixteen addresses).
//!
//! `K` blocks are in flight, as in the AVX2 kernel: `K = 1` is the paper's loop; with
//! [`IN_FLIGHT`] blocks a block yields before a cold level after prefetching the element
//! every live lane reads there, with [`INTERLEAVE`] blocks it yields at every level. What
//! AVX-512 changes:
//!
//! * the lanes still walking are a mask register (the decoding compare writes it), and
//!   each level's gather is masked by it, so a finished lane neither reads End-of-Lookup
//!   nor takes a load slot; a block is done when its mask is zero (`kortestw`);
//! * an IPv6 word refill is two two-source permutes and one 128-bit-lane shuffle, with
//!   the lanes in address order (no permute before the store);
//! * the high eight lanes are prefetched only when one of them is live.

use core::arch::x86_64::*;

use super::ops::{dp_index, octet, prefetch_lanes, Family512, Simd512};
use crate::schemes::spider::{Elements, DP_FIRST_ROW, INTERLEAVE, IN_FLIGHT, KEYS_AHEAD, ROW};
use crate::simd::prefetch_keys_ahead;

/// A block in flight: its lanes' next-row bases, results, current words and live lanes,
/// and the octet it reads next.
#[derive(Clone, Copy)]
struct Slot {
    block: usize,
    octet: usize,
    live: __mmask16,
    base: __m512i,
    res: __m512i,
    dst: __m512i,
}

/// What every visit needs.
struct Ctx<C: Simd512, F: Family512> {
    tp: *const C::E,
    dec: C::Dec,
    keys: *const F::Key,
    out: *mut u32,
    blocks: usize,
    /// Bit `o` set: a visit returns when its block is about to read octet `o` (`K > 1`).
    yield_octets: u32,
    /// Bit `o` set: the rows read at octet `o` are too many to stay cached, so a block
    /// yielding there prefetches them first.
    cold_octets: u32,
}

impl<C: Simd512, F: Family512> Ctx<C, F> {
    /// The direct-pointing elements of the block at `k` by sixteen scalar loads (the
    /// direct pointing table stays in L2; see `avx2/lockstep.rs`'s `dp_scalar`).
    ///
    /// # Safety
    /// AVX-512F; `k` holds 16 keys.
    #[inline(always)]
    unsafe fn dp_scalar(&self, k: *const F::Key) -> __m512i {
        let kw = k as *const u32;
        let mut buf = [0u32; 16];
        // SAFETY: the block holds 16 keys of `WORDS` words; the index is inside rows
        // 1–256.
        unsafe {
            for (i, b) in buf.iter_mut().enumerate() {
                let w = *kw.add(i * F::WORDS + F::FIRST_WORD);
                let ix = (w >> 16) as usize + DP_FIRST_ROW * ROW;
                *b = if core::mem::size_of::<C::E>() == 2 {
                    *(self.tp as *const u16).add(ix) as u32
                } else {
                    *(self.tp as *const u32).add(ix)
                };
            }
            _mm512_loadu_si512(buf.as_ptr() as *const __m512i)
        }
    }

    /// Prefetches (into L2) the element each live lane of `s` reads next.
    ///
    /// # Safety
    /// AVX-512F.
    #[inline(always)]
    unsafe fn prefetch(&self, s: &Slot) {
        // SAFETY: register operations; a prefetch is a hint and never faults.
        unsafe {
            let idx = _mm512_add_epi32(s.base, octet(s.dst, 3 - (s.octet % 4) as u32));
            prefetch_lanes(self.tp, idx, s.live > 0xff);
        }
    }

    /// Whether a visit returns before its block reads `octet` (with `K = 1`, the paper's
    /// loop, it never does).
    #[inline(always)]
    fn yields<const K: usize>(&self, octet: usize) -> bool {
        K > 1 && self.yield_octets & (1 << octet) != 0
    }

    /// One visit of slot `s`: if `fresh`, takes the next block (the direct pointing
    /// elements, Algorithm 1 lines 1–8), else steps its block by one octet (lines
    /// 11–17); continues while the next level is cached, and returns once it is cold,
    /// after prefetching it. Finished blocks are stored and replaced. Returns false when
    /// no blocks are left.
    ///
    /// # Safety
    /// AVX-512F; unless `fresh`, `s` holds a block from an earlier visit.
    #[inline(always)]
    unsafe fn visit<const K: usize>(
        &self,
        next: &mut usize,
        s: &mut Slot,
        mut fresh: bool,
    ) -> bool {
        // SAFETY: AVX-512 (the contract). `keys` holds `16 · blocks` keys; block `block <
        // blocks` holds 16 keys and 16 output slots; direct-pointing indices are inside
        // rows 1–256; row bases come from elements, which name allocated rows (or
        // End-of-Lookup), and only live lanes are gathered.
        unsafe {
            let zero = _mm512_setzero_si512();
            loop {
                if fresh {
                    if *next == self.blocks {
                        return false;
                    }
                    let block = *next;
                    *next += 1;
                    if K > 1 {
                        let keys = core::slice::from_raw_parts(self.keys, 16 * self.blocks);
                        prefetch_keys_ahead(keys, 16 * block, 16, KEYS_AHEAD);
                    }
                    let k = self.keys.add(block * 16);
                    let d = F::word(k, F::FIRST_WORD);
                    let e = if K > 1 {
                        self.dp_scalar(k)
                    } else {
                        C::gather(self.tp, dp_index(d))
                    };
                    let (base, res, live) = C::step(&self.dec, e, zero);
                    if live == 0 {
                        self.store(block, res);
                        continue;
                    }
                    *s = Slot {
                        block,
                        octet: 2,
                        live,
                        base,
                        res,
                        dst: d,
                    };
                    fresh = false;
                } else {
                    let idx = _mm512_add_epi32(s.base, octet(s.dst, 3 - (s.octet % 4) as u32));
                    let e = C::gather_masked(self.tp, idx, s.live);
                    let (base, res, live) = C::step(&self.dec, e, s.res);
                    (s.base, s.res, s.live) = (base, res, live);
                    s.octet += 1;
                    if live == 0 {
                        self.store(s.block, s.res);
                        fresh = true;
                        continue;
                    }
                    debug_assert!(s.octet < F::OCTETS, "a row below the last octet");
                    if s.octet.is_multiple_of(4) {
                        // Refill with the next 32 bits (Algorithm 2, lines 25–34).
                        let k = self.keys.add(s.block * 16);
                        s.dst = F::word(k, F::FIRST_WORD - s.octet / 4);
                    }
                }
                if self.yields::<K>(s.octet) {
                    if self.cold_octets & (1 << s.octet) != 0 {
                        self.prefetch(s);
                    }
                    return true;
                }
            }
        }
    }

    /// Stores a finished block.
    ///
    /// # Safety
    /// AVX-512F; `block < self.blocks`.
    #[inline(always)]
    unsafe fn store(&self, block: usize, res: __m512i) {
        // SAFETY: block `block` has 16 output slots.
        unsafe { _mm512_storeu_si512(self.out.add(block * 16) as *mut __m512i, C::finish(res)) }
    }
}

/// # Safety
/// AVX-512F/BW/DQ/VL and POPCNT; `keys.len()` is a multiple of 16 and at most
/// `out.len()`; `t` and `split` come from one build.
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,popcnt")]
unsafe fn kernel<C: Simd512, F: Family512, const K: usize>(
    t: &Elements<C::E>,
    split: u32,
    yield_octets: u32,
    cold_octets: u32,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(keys.len() % 16 == 0 && out.len() >= keys.len());
    // SAFETY: AVX-512 is enabled (this function's target features); the contract gives
    // `ctx`'s invariants: `blocks` blocks of 16 keys and output slots.
    unsafe {
        let ctx = Ctx::<C, F> {
            tp: t.as_ptr(),
            dec: C::decoder(split),
            keys: keys.as_ptr(),
            out: out.as_mut_ptr(),
            blocks: keys.len() / 16,
            yield_octets,
            cold_octets,
        };
        let zero = _mm512_setzero_si512();
        let mut slots = [Slot {
            block: 0,
            octet: 0,
            live: 0,
            base: zero,
            res: zero,
            dst: zero,
        }; K];
        let mut live = [false; K];
        let mut n_live = 0;
        let mut next = 0;
        for (s, l) in slots.iter_mut().zip(&mut live) {
            *l = ctx.visit::<K>(&mut next, s, true);
            n_live += *l as usize;
        }
        while n_live > 0 {
            for (s, l) in slots.iter_mut().zip(&mut live) {
                if *l && !ctx.visit::<K>(&mut next, s, false) {
                    *l = false;
                    n_live -= 1;
                }
            }
        }
    }
}

/// Runs the kernel with `blocks` blocks in flight: 1 (the paper's loop), [`INTERLEAVE`]
/// (yield at every level, no prefetching) or [`IN_FLIGHT`] (yield and prefetch before the
/// levels of `cold_octets`).
///
/// # Safety
/// As for [`kernel`]; `blocks` is one of the three.
#[inline(always)]
pub(super) unsafe fn shape<C: Simd512, F: Family512>(
    t: &Elements<C::E>,
    split: u32,
    blocks: usize,
    cold_octets: u32,
    keys: &[F::Key],
    out: &mut [u32],
) {
    // SAFETY: the contract.
    unsafe {
        match blocks {
            IN_FLIGHT => kernel::<C, F, IN_FLIGHT>(t, split, cold_octets, cold_octets, keys, out),
            INTERLEAVE => kernel::<C, F, INTERLEAVE>(t, split, !0, 0, keys, out),
            _ => kernel::<C, F, 1>(t, split, 0, 0, keys, out),
        }
    }
}

//! The lockstep kernels for Spider: Algorithm 1 (IPv4) and Algorithm 2 (IPv6) with loop
//! fusion, on any vector width.
//!
//! One kernel serves both families, both widths and every degree of parallelism; `const`
//! switches shape it:
//!
//! * `S`: streams of a vector each per block: two for more ways than a vector has lanes
//!   (AVX2's sixteen), the paper's loop fusion; one otherwise (AVX-512's sixteen ways are
//!   one vector). A block's state holds `S` vectors of each kind, no idle second stream;
//! * `PARTIAL`: lanes masked off (ways below a vector, or between one and two): masked
//!   loads and stores, and a masked direct-pointing gather that leaves idle lanes at 0,
//!   which is End-of-Lookup;
//! * `K`: blocks in flight. `K = 1` is the paper's loop exactly: the direct-pointing gather,
//!   then one gather per octet until every lane is at End-of-Lookup, then the next block.
//!   With `K > 1` the kernel keeps `K` blocks at different depths and visits them in turn;
//!   a visit steps its block until the block reaches a level where it *yields*, and the
//!   other `K − 1` blocks are visited before it is stepped again. A finished block is
//!   stored and its slot takes the next block at once. Two modes (see
//!   [`LookupParams::lockstep_blocks`](super::super::LookupParams::lockstep_blocks)):
//!   * *pipelined* ([`IN_FLIGHT`] blocks, [`IN_FLIGHT_16W`] of sixteen lanes), when some
//!     level is too large to stay cached: a block yields before such a level after
//!     prefetching the element every live lane of it reads there, which arrives while the
//!     other blocks are visited ("asynchronous memory access chaining", Kocberber et al.,
//!     VLDB 2015, applied to Spider's lockstep blocks: the gathers then mostly hit L1/L2
//!     instead of waiting for memory one level at a time);
//!   * *interleaved* ([`INTERLEAVE`] blocks), when every level stays cached: a block yields
//!     at every level and nothing is prefetched, so the gathers of two blocks are in
//!     flight together (the paper's loop fusion, carried across blocks) instead of each
//!     level waiting for the last.
//!
//! A lane still walks while its next-row base is not 0 (End-of-Lookup), and a block is
//! done when every base is 0 (one `vptest` of the streams' bases or-ed). Where masks are
//! registers (AVX-512, [`Lanes::MASK_REGISTERS`]) each level's gather is masked by the
//! live lanes, so a finished lane takes no load slot; on AVX2 the gather reads every lane,
//! a finished one idling in row 0 as in the paper, which keeps the block's state to its
//! bases, results and words (a mask vector per stream more would cost a store and a load
//! per visit, and a copy per gather). The entry points (`mod.rs`) hand the tail (fewer
//! than `ways` addresses) to the refilling kernel.
//!
//! [`IN_FLIGHT`]: crate::schemes::spider::IN_FLIGHT
//! [`INTERLEAVE`]: crate::schemes::spider::INTERLEAVE
//! [`IN_FLIGHT_16W`]: crate::schemes::spider::IN_FLIGHT_16W

use super::ops::{dp_element, dp_index, octet_ctl, Decode, Family};
use crate::schemes::spider::{Elements, KEYS_AHEAD};
use crate::simd::lanes::{LaneMask, Lanes};
use crate::simd::prefetch_keys_ahead;

/// A block in flight: its lanes' next-row bases (0: the lane is done), results and
/// current words per stream, and the octet it reads next.
struct Slot<V: Lanes, const S: usize> {
    block: usize,
    octet: usize,
    base: [V; S],
    res: [V; S],
    dst: [V; S],
}

impl<V: Lanes, const S: usize> Clone for Slot<V, S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<V: Lanes, const S: usize> Copy for Slot<V, S> {}

impl<V: Lanes, const S: usize> Slot<V, S> {
    /// An empty slot.
    ///
    /// # Safety
    /// `V`'s instruction set.
    #[inline(always)]
    unsafe fn empty(block: usize, octet: usize) -> Self {
        // SAFETY: `V`'s instruction set (the caller's).
        unsafe {
            let zero = V::zero();
            Slot {
                block,
                octet,
                base: [zero; S],
                res: [zero; S],
                dst: [zero; S],
            }
        }
    }

    /// Whether a lane of a stream still walks (its base is not End-of-Lookup).
    ///
    /// # Safety
    /// `V`'s instruction set.
    #[inline(always)]
    unsafe fn any_live(&self) -> bool {
        // SAFETY: `V`'s instruction set (the caller's).
        unsafe {
            self.base[1..]
                .iter()
                .fold(self.base[0], |a, &b| a.or(b))
                .any_nonzero()
        }
    }
}

/// What every visit needs.
struct Ctx<V: Lanes, C: Decode, F: Family> {
    tp: *const C::E,
    dec: C::Dec<V>,
    keys: *const F::Key,
    out: *mut u32,
    ways: usize,
    blocks: usize,
    /// Addresses per stream.
    n: [usize; 2],
    /// Per stream, the lanes that hold an address (`PARTIAL`).
    lanes: [V::Mask; 2],
    /// The octet extraction controls, by byte of the word.
    octets: [V; 4],
    /// Bit `o` set: a visit returns when its block is about to read octet `o` (`K > 1`).
    yield_octets: u32,
    /// Bit `o` set: the rows read at octet `o` are too many to stay cached, so a block
    /// yielding there prefetches them first.
    cold_octets: u32,
}

impl<V: Lanes, C: Decode, F: Family> Ctx<V, C, F> {
    /// Word `w` of stream `s` of the block at `k`.
    ///
    /// # Safety
    /// `V`'s instruction set; the block holds the stream's addresses.
    #[inline(always)]
    unsafe fn word<const PARTIAL: bool>(&self, k: *const F::Key, s: usize, w: usize) -> V {
        // SAFETY: the contract.
        unsafe { F::word::<V, PARTIAL>(k.add(s * V::LANES), w, self.n[s]) }
    }

    /// Stores a finished block.
    ///
    /// # Safety
    /// `V`'s instruction set; `block < self.blocks`.
    #[inline(always)]
    unsafe fn store<const S: usize, const PARTIAL: bool>(&self, block: usize, res: [V; S]) {
        // SAFETY: block `block` has `ways` output slots: a vector per stream, or the masked
        // lanes.
        unsafe {
            let o = self.out.add(block * self.ways);
            for (s, &r) in res.iter().enumerate() {
                let r = F::to_key_order(C::finish(r));
                let o = o.add(s * V::LANES);
                if PARTIAL {
                    r.store_masked(o, V::Mask::first(self.n[s]));
                } else {
                    r.store(o);
                }
            }
        }
    }

    /// The direct-pointing elements of stream `s` of the block at `k` by scalar loads
    /// instead of the `vpgatherdd` of Algorithm 1, line 5: the 128 KiB (`Compact16`)
    /// direct pointing table stays in L2, and where a gather is microcoded at about one
    /// load per cycle scalar loads issue up to three per cycle (where the family's lanes
    /// are in address order: IPv6 on AVX2 keeps the gather, as the permute it would need
    /// costs what it gains).
    ///
    /// # Safety
    /// `V`'s instruction set; `k` holds the block's keys (no masked lanes).
    #[inline(always)]
    unsafe fn dp_scalar(&self, k: *const F::Key, s: usize) -> V {
        let kw = k as *const u32;
        // SAFETY: the block holds a vector of keys of `WORDS` words per stream.
        unsafe {
            V::from_fn(|i| {
                let w = *kw.add((s * V::LANES + i) * F::WORDS + F::FIRST_WORD);
                dp_element(self.tp, w)
            })
        }
    }

    /// Prefetches the element each live lane of `s` reads next.
    ///
    /// # Safety
    /// `V`'s instruction set.
    #[inline(always)]
    unsafe fn prefetch<const S: usize>(&self, s: &Slot<V, S>) {
        let m = self.octets[3 - s.octet % 4];
        // SAFETY: register operations; a prefetch is a hint and never faults (the index
        // is in the table anyway). Into L1, as the refilling kernel's prefetches: the
        // element is read at the block's next visit.
        unsafe {
            for j in 0..S {
                let idx = s.base[j].add(s.dst[j].shuffle_bytes(m));
                // Every lane, live or not (a finished lane's index is in the table too): a
                // branch on how many are live mispredicts, as the count is data-dependent,
                // and costs more than the prefetches it would save (measured on both
                // widths).
                idx.prefetch_lanes(self.tp, V::LANES);
            }
        }
    }

    /// Whether a visit returns before its block reads `octet` (with `K = 1`, the paper's
    /// loop, it never does).
    #[inline(always)]
    fn yields<const K: usize>(&self, octet: usize) -> bool {
        K > 1 && self.yield_octets & (1 << octet) != 0
    }

    /// One visit of slot `s`: if `fresh`, takes the next block (the direct pointing
    /// elements, Algorithm 1 lines 1–8), else steps its block by one octet (lines 11–17);
    /// continues while the next level is cached, and returns once it is cold, after
    /// prefetching it. Finished blocks are stored and replaced. Returns false when no
    /// blocks are left.
    ///
    /// # Safety
    /// `V`'s instruction set; unless `fresh`, `s` holds a block from an earlier visit.
    #[inline(always)]
    unsafe fn visit<const S: usize, const PARTIAL: bool, const K: usize>(
        &self,
        next: &mut usize,
        s: &mut Slot<V, S>,
        mut fresh: bool,
    ) -> bool {
        // SAFETY: `V`'s instruction set (the contract). `keys` holds `ways · blocks` keys;
        // block `block < blocks` holds `ways` keys (a vector per stream unless masked);
        // direct-pointing indices are inside rows 1–256; row bases come from elements,
        // which name allocated rows (or End-of-Lookup, row 0, whose 256 elements a
        // finished lane may read).
        unsafe {
            let zero = V::zero();
            loop {
                if fresh {
                    if *next == self.blocks {
                        return false;
                    }
                    let block = *next;
                    *next += 1;
                    if K > 1 {
                        let keys = core::slice::from_raw_parts(self.keys, self.ways * self.blocks);
                        prefetch_keys_ahead(keys, self.ways * block, self.ways, KEYS_AHEAD);
                    }
                    let k = self.keys.add(block * self.ways);
                    let mut slot = Slot::<V, S>::empty(block, 2);
                    for j in 0..S {
                        let d = self.word::<PARTIAL>(k, j, F::FIRST_WORD);
                        let e = if F::in_order::<V>() && !PARTIAL && K > 1 {
                            self.dp_scalar(k, j)
                        } else if PARTIAL {
                            C::gather_masked(self.tp, dp_index(d), self.lanes[j])
                        } else {
                            C::gather(self.tp, dp_index(d))
                        };
                        (slot.base[j], slot.res[j], _) = C::step(&self.dec, e, zero);
                        slot.dst[j] = d;
                    }
                    if !slot.any_live() {
                        self.store::<S, PARTIAL>(block, slot.res);
                        continue;
                    }
                    *s = slot;
                    fresh = false;
                } else {
                    let o = self.octets[3 - s.octet % 4];
                    for j in 0..S {
                        let idx = s.base[j].add(s.dst[j].shuffle_bytes(o));
                        let e = if V::MASK_REGISTERS {
                            C::gather_masked(self.tp, idx, s.base[j].nonzero())
                        } else {
                            // A finished lane reads row 0 (its base is 0, its index an
                            // octet): all zero, End-of-Lookup again, no next hop.
                            C::gather(self.tp, idx)
                        };
                        (s.base[j], s.res[j], _) = C::step(&self.dec, e, s.res[j]);
                    }
                    s.octet += 1;
                    if !s.any_live() {
                        self.store::<S, PARTIAL>(s.block, s.res);
                        fresh = true;
                        continue;
                    }
                    debug_assert!(s.octet < F::OCTETS, "a row below the last octet");
                    if s.octet.is_multiple_of(4) {
                        // Refill with the next 32 bits (Algorithm 2, lines 25–34).
                        let k = self.keys.add(s.block * self.ways);
                        let w = F::FIRST_WORD - s.octet / 4;
                        for j in 0..S {
                            s.dst[j] = self.word::<PARTIAL>(k, j, w);
                        }
                    }
                }
                if self.yields::<K>(s.octet) {
                    if self.cold_octets & (1 << s.octet) != 0 {
                        self.prefetch::<S>(s);
                    }
                    return true;
                }
            }
        }
    }
}

/// Runs `keys` (a multiple of `ways`) in lockstep blocks of `ways` addresses with `K`
/// blocks in flight: `yield_octets` and `cold_octets` as [`Ctx`]'s (the instances of
/// `mod.rs` choose them for `K`).
///
/// # Safety
/// `V`'s instruction set; `keys.len()` is a multiple of `ways` and at most `out.len()`;
/// `S` is 1 or 2; `ways` is `S` vectors unless `PARTIAL`, else between one and two vectors
/// if `S = 2` and below one if `S = 1`; `t` and `split` come from one
/// build.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn kernel<
    V: Lanes,
    C: Decode,
    F: Family,
    const S: usize,
    const PARTIAL: bool,
    const K: usize,
>(
    t: &Elements<C::E>,
    split: u32,
    yield_octets: u32,
    cold_octets: u32,
    ways: usize,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(keys.len() % ways == 0 && out.len() >= keys.len());
    debug_assert!(S == 1 || S == 2);
    debug_assert!(ways == S * V::LANES || PARTIAL);
    debug_assert!(ways > V::LANES || S == 1);
    // SAFETY: `V`'s instruction set (the contract); the contract gives `ctx`'s invariants:
    // `blocks` blocks of `ways` keys and output slots.
    unsafe {
        let n = [ways.min(V::LANES), ways.saturating_sub(V::LANES)];
        let ctx = Ctx::<V, C, F> {
            tp: t.as_ptr(),
            dec: C::decoder(split),
            keys: keys.as_ptr(),
            out: out.as_mut_ptr(),
            ways,
            blocks: keys.len() / ways,
            n,
            lanes: [F::lanes_below::<V>(n[0]), F::lanes_below::<V>(n[1])],
            octets: [octet_ctl(0), octet_ctl(1), octet_ctl(2), octet_ctl(3)],
            yield_octets,
            cold_octets,
        };
        let mut slots = [Slot::<V, S>::empty(0, 0); K];
        let mut live = [false; K];
        let mut n_live = 0;
        let mut next = 0;
        for (s, l) in slots.iter_mut().zip(&mut live) {
            *l = ctx.visit::<S, PARTIAL, K>(&mut next, s, true);
            n_live += *l as usize;
        }
        while n_live > 0 {
            for (s, l) in slots.iter_mut().zip(&mut live) {
                if *l && !ctx.visit::<S, PARTIAL, K>(&mut next, s, false) {
                    *l = false;
                    n_live -= 1;
                }
            }
        }
    }
}

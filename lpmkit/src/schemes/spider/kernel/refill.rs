//! The lane-refilling kernel ([`SpiderConfig::refill`](super::super::SpiderConfig::refill)),
//! on any vector width.
//!
//! The lockstep kernels (`lockstep.rs`) keep a block's lanes together until the deepest
//! lane is done: a lane that finishes at the direct pointing table (about 61% of random
//! IPv4 keys on the bart tier-1 table) still holds its slot while its block descends.
//! This kernel gives every slot to a lookup that is not finished, after Polychroniou,
//! Raghavan and Ross, "Rethinking SIMD Vectorization for In-Memory Databases" (SIGMOD
//! 2015, §4–5: *selective stores* compact the lanes that go on, so that each vector is
//! full of live keys).
//!
//! A call is cut into chunks of [`CHUNK`] keys, and a chunk is looked up level by level:
//!
//! 1. **Direct pointing pass.** A vector of keys at a time: the elements are read by
//!    scalar loads (the table is in L2), decoded in a register, and the next hops written
//!    to `out` at once — for most keys this is the final answer. The lanes whose element
//!    names a row are *left-packed* (`vpcompressd`, or a table of `vpermd` permutations on
//!    AVX2) into the chunk's pending list: key index, the 32-bit word being read, and the
//!    index of the element to read next. If that level is cold (see
//!    [`CACHED_LEVEL_BYTES_V4`](super::super::CACHED_LEVEL_BYTES_V4)) the element is
//!    prefetched as it is packed.
//! 2. **One pass per octet** over the pending list: a vector of pending lookups per
//!    gather, results stored to `out` at their keys' own indices (a scatter; a lane that
//!    goes on writes a 0 that its final level overwrites), and the lanes that go on are
//!    left-packed again, in place, with their next element prefetched if its level is
//!    cold. IPv6 reloads the word every four octets with one gather from the keys. A level
//!    few of whose elements name a row (under 1 in
//!    [`SCALAR_PASS_INVERSE_SHARE`](super::super::SCALAR_PASS_INVERSE_SHARE), as the third
//!    octet of every real IPv4 table: a pass is then nearly the lookups' last) is passed by
//!    a scalar loop instead — one load per lookup, its next hop stored, and a branch,
//!    which is predicted, to push the rare lookup that goes on.
//!
//! Every lane of every gather is thus a live lookup, and the time between an element's
//! prefetch and its gather is the rest of a pass. The chunks of one call are pipelined:
//! the direct pointing pass of a chunk runs before the octet passes of the chunk before
//! it, so the elements prefetched for a chunk's first octet pass also have a whole direct
//! pointing pass to arrive (a prefetch brings the element's line into L1). Because all
//! pending lookups of a pass are at the same octet, the octet extraction and the IPv6
//! word reload are the same for every lane (a lane-by-lane refill would need per-lane
//! shifts). The last vector of a pass or a chunk is masked. A scalar pass reads the word
//! of a lookup that goes on from its key, so the pass before it packs no words.
//!
//! Elements are leaf-pushed (see the module docs), so a lookup's answer is the next hop
//! of the last element it reads and no result register is carried between levels.

use core::mem::MaybeUninit;

use super::ops::{dp_element, dp_index, octet_ctl, Decode, Family};
use crate::schemes::spider::{Elements, LookupParams, KEYS_AHEAD, MAX_WAYS};
use crate::simd::lanes::{LaneMask, Lanes};
use crate::simd::{prefetch, prefetch_keys_ahead};

/// Keys per chunk: the pending list of a chunk (12 bytes per key) stays in L1, and a pass
/// is long enough to hide the latency of the prefetches made in the pass before.
pub(super) const CHUNK: usize = 256;

/// Room past the last entry of a pending list for a whole vector store.
const ROOM: usize = CHUNK + MAX_WAYS;

/// The lookups of a chunk that go on past the current level (structure of arrays).
struct Pending {
    /// Index of the key in the chunk.
    idx: [MaybeUninit<u32>; ROOM],
    /// The 32-bit word of the key the next octet comes from.
    word: [MaybeUninit<u32>; ROOM],
    /// Index of the element to read next.
    next: [MaybeUninit<u32>; ROOM],
}

/// What every pass needs.
struct Ctx<'a, V: Lanes, C: Decode, F: Family> {
    tp: *const C::E,
    split: u32,
    dec: C::Dec<V>,
    #[cfg(debug_assertions)]
    len: usize,
    cold_octets: u32,
    scalar_passes: u32,
    p: &'a mut Pending,
    _f: core::marker::PhantomData<F>,
}

/// What every vector of an octet pass shares.
struct Pass<V> {
    /// Picks the next octet out of the word.
    om: V,
    /// Whether the lanes that go on reload their word from the key.
    reload: bool,
    /// The key's word the next octet comes from.
    wn: usize,
    /// The next octet.
    on: usize,
}

impl<V: Lanes, C: Decode, F: Family> Ctx<'_, V, C, F> {
    /// The scalar element at `i`, decoded: (next-row index, next hop).
    ///
    /// # Safety
    /// `i` is an element index of the table.
    #[inline(always)]
    unsafe fn element(&self, i: usize) -> (usize, u32) {
        #[cfg(debug_assertions)]
        debug_assert!(
            i < self.len,
            "element {i} outside the table of {}",
            self.len
        );
        // SAFETY: the contract.
        C::decode(unsafe { *self.tp.add(i) }, self.split)
    }

    /// Whether the rows read at `octet` are prefetched.
    #[inline(always)]
    fn cold(&self, octet: usize) -> bool {
        self.cold_octets & (1 << octet) != 0
    }

    /// Whether the pass reading the rows of `octet` runs scalar code (few of their
    /// elements name a row, see [`LookupParams::scalar_passes`]).
    #[inline(always)]
    fn scalar_pass(&self, octet: usize) -> bool {
        self.scalar_passes & (1 << octet) != 0
    }

    /// Left-packs the lanes of `keep` of `idx`, `word` and `next` to pending entry `at`
    /// for the pass reading the rows of octet `pass`: their elements prefetched if that
    /// level is cold, and `word` left out if that pass is scalar (it reads the word from
    /// the key); returns the next free entry.
    ///
    /// # Safety
    /// `V`'s instruction set; `at <= CHUNK`.
    #[inline(always)]
    unsafe fn pack(
        &mut self,
        at: usize,
        keep: V::Mask,
        idx: V,
        word: V,
        next: V,
        pass: usize,
    ) -> usize {
        debug_assert!(at <= CHUNK);
        let (prefetch, with_word) = (self.cold(pass), !self.scalar_pass(pass));
        // SAFETY: the arrays hold `CHUNK + MAX_WAYS` entries, so a vector at `at <= CHUNK`
        // fits; register operations; a prefetch never faults. Packed in a register and
        // stored whole.
        unsafe {
            let pk = V::packer(keep);
            let next = next.pack(pk);
            let p = &mut *self.p;
            let st = |a: &mut [MaybeUninit<u32>; ROOM], v: V| {
                v.store(a.as_mut_ptr().add(at) as *mut u32)
            };
            st(&mut p.idx, idx.pack(pk));
            if with_word {
                st(&mut p.word, word.pack(pk));
            }
            st(&mut p.next, next);
            let n = keep.count() as usize;
            if prefetch {
                // The packed lanes `0..n` (the lanes after them hold other lanes' indices
                // or 0: row 0, harmless).
                next.prefetch_lanes(self.tp, n);
            }
            at + n
        }
    }

    /// Adds a pending entry from scalar code; returns the next free entry.
    #[inline(always)]
    fn push(&mut self, at: usize, idx: u32, word: u32, next: usize, pf: bool) -> usize {
        debug_assert!(at < CHUNK);
        self.p.idx[at] = MaybeUninit::new(idx);
        self.p.word[at] = MaybeUninit::new(word);
        self.p.next[at] = MaybeUninit::new(next as u32);
        if pf {
            prefetch(self.tp.wrapping_add(next));
        }
        at + 1
    }

    /// The direct pointing pass over the chunk `keys`/`out`; returns the pending count.
    ///
    /// # Safety
    /// `V`'s instruction set; `out.len() >= keys.len()`, `keys.len() <= CHUNK`.
    #[inline(always)]
    unsafe fn dp_pass(&mut self, keys: &[F::Key], out: &mut [u32]) -> usize {
        let n = keys.len();
        debug_assert!(n <= CHUNK && out.len() >= n);
        let (mut i, mut np) = (0, 0);
        // SAFETY: `V`'s instruction set (the contract); the vectors cover `0..n`.
        unsafe {
            if V::MASK_REGISTERS {
                while i < n {
                    np = self.dp_vector(keys, out, i, np, i + V::LANES <= n);
                    i += V::LANES;
                }
            } else {
                while i + V::LANES <= n {
                    np = self.dp_vector(keys, out, i, np, true);
                    i += V::LANES;
                }
                if i < n {
                    np = self.dp_vector(keys, out, i, np, false);
                }
            }
        }
        np
    }

    /// One vector of the direct pointing pass: keys `i..i + LANES` (`full`), or the masked
    /// `i..keys.len()`; returns the pending count after the `np` before. Without mask
    /// registers the whole vectors and the tail are separate inlined instances (`full` a
    /// constant), see [`Lanes::MASK_REGISTERS`].
    ///
    /// # Safety
    /// `V`'s instruction set; as [`dp_pass`](Self::dp_pass); `i < keys.len()`, and `i +
    /// LANES <= keys.len()` if `full`; `np <= i`.
    #[inline(always)]
    unsafe fn dp_vector(
        &mut self,
        keys: &[F::Key],
        out: &mut [u32],
        i: usize,
        np: usize,
        full: bool,
    ) -> usize {
        let n = keys.len();
        let kw = keys.as_ptr() as *const u32;
        let op = out.as_mut_ptr();
        // SAFETY: `V`'s instruction set (the contract); the vector reads keys `i..i +
        // LANES <= n` (or the masked `i..n`) and writes as many results; direct-pointing
        // indices are inside rows 1–256; `np <= i`, so the packed stores stay inside the
        // arrays.
        unsafe {
            let kp = keys.as_ptr().add(i);
            let idx = V::iota().add(V::splat(i as u32));
            let (w, e, m) = if full {
                let w = F::to_key_order(F::word::<V, false>(kp, F::FIRST_WORD, 0));
                let e = V::from_fn(|j| {
                    dp_element(self.tp, *kw.add((i + j) * F::WORDS + F::FIRST_WORD))
                });
                (w, e, V::Mask::all())
            } else {
                let m = V::Mask::first(n - i);
                let w = F::to_key_order(F::word::<V, true>(kp, F::FIRST_WORD, n - i));
                (w, C::gather_masked(self.tp, dp_index(w), m), m)
            };
            let (base, res, row) = C::step(&self.dec, e, V::zero());
            if full {
                C::finish(res).store(op.add(i));
            } else {
                C::finish(res).store_masked(op.add(i), m);
            }
            let next = base.add(w.shuffle_bytes(octet_ctl::<V>(1)));
            self.pack(np, live::<V>(row, m, full), idx, w, next, 2)
        }
    }

    /// The octet passes of a chunk whose direct pointing pass left `np` pending lookups
    /// in the current pending list, until none goes on.
    ///
    /// # Safety
    /// `V`'s instruction set; the pending entries come from the direct pointing pass of
    /// the same `keys` and `out`.
    #[inline(always)]
    unsafe fn octet_passes(&mut self, mut np: usize, keys: &[F::Key], out: &mut [u32]) {
        let mut octet = 2;
        while np > 0 {
            // SAFETY: as this function's; each pass's entries come from the pass before.
            np = unsafe { self.octet_pass(octet, np, keys, out) };
            octet += 1;
        }
    }

    /// The pass that reads the elements of octet `o` for the `np` pending lookups, writes
    /// their next hops and packs those that go on; returns their count.
    ///
    /// # Safety
    /// `V`'s instruction set; the pending entries come from the pass before on the same
    /// `keys` and `out`.
    #[inline(always)]
    unsafe fn octet_pass(
        &mut self,
        o: usize,
        np: usize,
        keys: &[F::Key],
        out: &mut [u32],
    ) -> usize {
        debug_assert!(o >= 2 && o < F::OCTETS, "a row below the last octet");
        let on = o + 1;
        let reload = on.is_multiple_of(4) && on < F::OCTETS;
        let wn = F::FIRST_WORD.wrapping_sub(on / 4);
        let byte = 3 - (on % 4) as u32;
        let pf = self.cold(on);
        let kw = keys.as_ptr() as *const u32;
        let op = out.as_mut_ptr();
        let (mut rp, mut wp) = (0, 0);
        // SAFETY: `V`'s instruction set (the contract); entries `rp..np` were written by
        // the pass before, and the masked loads read no entry at or past `np`; `wp <= rp`,
        // so the in-place packed stores (a vector at `wp`) never overwrite an entry not
        // yet read; key indices are below `keys.len()`; element indices come from
        // elements, which name allocated rows (or End-of-Lookup).
        unsafe {
            if self.scalar_pass(o) {
                let shift = 8 * byte;
                while rp < np {
                    let p = &*self.p;
                    let (k, next) = (p.idx[rp].assume_init(), p.next[rp].assume_init());
                    let (base, nh) = self.element(next as usize);
                    *op.add(k as usize) = nh;
                    if base != 0 {
                        debug_assert!(on < F::OCTETS, "a row below the last octet");
                        // The word holding the next octet, from the key (a scalar pass's
                        // entries carry no word: the pass before did not pack it).
                        let w = *kw.add(k as usize * F::WORDS + wn);
                        wp = self.push(wp, k, w, base + (w >> shift & 0xff) as usize, pf);
                    }
                    rp += 1;
                }
                return wp;
            }
            let pass = Pass {
                om: octet_ctl::<V>(byte),
                reload,
                wn,
                on,
            };
            if V::MASK_REGISTERS {
                while rp < np {
                    wp = self.octet_vector(&pass, rp, np, wp, keys, out, rp + V::LANES <= np);
                    rp += V::LANES;
                }
            } else {
                while rp + V::LANES <= np {
                    wp = self.octet_vector(&pass, rp, np, wp, keys, out, true);
                    rp += V::LANES;
                }
                if rp < np {
                    wp = self.octet_vector(&pass, rp, np, wp, keys, out, false);
                }
            }
        }
        wp
    }

    /// One vector of an octet pass: pending entries `rp..rp + LANES` (`full`), or the
    /// masked `rp..np`; returns the pending count after the `wp` before. Instances as in
    /// [`dp_vector`](Self::dp_vector).
    ///
    /// # Safety
    /// `V`'s instruction set; as [`octet_pass`](Self::octet_pass); `rp < np`, and `rp +
    /// LANES <= np` if `full`; `wp <= rp`.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn octet_vector(
        &mut self,
        pass: &Pass<V>,
        rp: usize,
        np: usize,
        wp: usize,
        keys: &[F::Key],
        out: &mut [u32],
        full: bool,
    ) -> usize {
        let kw = keys.as_ptr() as *const u32;
        // SAFETY: as `octet_pass`'s: the entries read are below `np` (the masked loads
        // read no entry at or past it), and the packed store at `wp <= rp` overwrites
        // only entries already read.
        unsafe {
            let m = if full {
                V::Mask::all()
            } else {
                V::Mask::first(np - rp)
            };
            let p = &*self.p;
            let ld = |a: &[MaybeUninit<u32>; ROOM]| {
                let a = a.as_ptr().add(rp) as *const u32;
                if full {
                    V::load(a)
                } else {
                    V::load_masked(a, m)
                }
            };
            let (idx, next) = (ld(&p.idx), ld(&p.next));
            let mut word = ld(&p.word);
            let e = if full {
                C::gather(self.tp, next)
            } else {
                C::gather_masked(self.tp, next, m)
            };
            let (base, res, row) = C::step(&self.dec, e, V::zero());
            let row = live::<V>(row, m, full);
            debug_assert!(
                !row.any() || pass.on < F::OCTETS,
                "a row below the last octet"
            );
            C::finish(res).scatter(out.as_mut_ptr(), idx, m);
            if pass.reload {
                let wi = idx.shl::<2>().add(V::splat(pass.wn as u32));
                word = V::zero().gather_masked::<4>(kw as *const u8, wi, row);
            }
            let next = base.add(word.shuffle_bytes(pass.om));
            self.pack(wp, row, idx, word, next, pass.on)
        }
    }
}

/// The lanes of `row` that are lookups: those of the vector's mask `m`. A whole vector's
/// `row` as it is where the vector is an instance of its own (see
/// [`Lanes::MASK_REGISTERS`]).
///
/// # Safety
/// `V`'s instruction set.
#[inline(always)]
unsafe fn live<V: Lanes>(row: V::Mask, m: V::Mask, full: bool) -> V::Mask {
    if full && !V::MASK_REGISTERS {
        row
    } else {
        // SAFETY: the contract.
        unsafe { row.and(m) }
    }
}

/// Looks up `keys` into `out` chunk by chunk.
///
/// # Safety
/// `V`'s instruction set; `out.len() >= keys.len()`; `t` and `split` come from one build.
#[inline(always)]
pub(super) unsafe fn lookup<V: Lanes, C: Decode, F: Family>(
    t: &Elements<C::E>,
    split: u32,
    params: &LookupParams,
    keys: &[F::Key],
    out: &mut [u32],
) {
    debug_assert!(out.len() >= keys.len() && V::LANES <= MAX_WAYS);
    let new = || Pending {
        idx: [MaybeUninit::uninit(); ROOM],
        word: [MaybeUninit::uninit(); ROOM],
        next: [MaybeUninit::uninit(); ROOM],
    };
    let (mut pending, mut behind) = (new(), new());
    // SAFETY: `V`'s instruction set (the contract); `split` decodes `t`.
    unsafe {
        let mut ctx = Ctx::<V, C, F> {
            tp: t.as_ptr(),
            split,
            dec: C::decoder(split),
            #[cfg(debug_assertions)]
            len: t.as_slice().len(),
            cold_octets: params.cold_octets,
            scalar_passes: params.scalar_passes,
            p: &mut pending,
            _f: core::marker::PhantomData,
        };
        // The chunks are pipelined: the direct pointing pass of a chunk runs before the
        // octet passes of the chunk before it, so that the elements prefetched for a
        // chunk's first octet pass have a whole pass to arrive. Two pending lists take
        // turns (`ctx.p` and `other`).
        let mut other = &mut behind;
        let mut prev = None;
        for (c, (k, o)) in keys.chunks(CHUNK).zip(out.chunks_mut(CHUNK)).enumerate() {
            prefetch_keys_ahead(keys, c * CHUNK, CHUNK, KEYS_AHEAD);
            let np = ctx.dp_pass(k, o);
            core::mem::swap(&mut ctx.p, &mut other);
            if let Some((k, o, np)) = prev.take() {
                ctx.octet_passes(np, k, o);
            }
            prev = Some((k, o, np));
        }
        core::mem::swap(&mut ctx.p, &mut other);
        if let Some((k, o, np)) = prev {
            ctx.octet_passes(np, k, o);
        }
    }
}

//! What OBMA lookups read, and the lookups themselves (Algorithm 1).
//!
//! * `dpa`: the Direct Pointing Array, `2^dpa_bits` entries (switch words).
//! * `dirs[j]`: the chunk list of layer `j` (the paper's *Chunk List*): chunk id → word
//!   offset of the chunk structure in `chunks`, flagged by bit 31 — or, for a chunk of one
//!   group (every OBMA_L chunk), the offset of that group in `groups` (OBMA_S: with the
//!   group's BIS in bits 23..31, see [`DIRECT_BIS_SHIFT`]).
//! * `chunks`: chunk structures, 32-bit words. OBMA_B: `[width << 24][group offset; 2^width]`;
//!   OBMA_S: `[sparse << 31 | width << 24 | bis bits 0..24][bis bits 24..56][group offsets]`,
//!   or a sparse chunk `[1 << 31 | k << 24][k sparse entries]`.
//! * `groups`: groups — code words then lookup entries — in entry-sized words.
//!
//! An entry (DPA element, lookup entry, sparse entry value) below `lim` is a next hop
//! (0: no route); `lim + id` points to chunk `id` of the next layer.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::group::{code_words, entry_index};
use crate::prefix::Address;
use crate::schemes::common::{Arena, AtomicWord, Word};
use crate::simd::prefetch;

/// Most chunk layers of any geometry (IPv6: 16 + 14 × 8).
pub(crate) const MAX_LAYERS: usize = 14;

/// The variant, as the lookup sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// OBMA_B (§III): chunk structures with group lists.
    B,
    /// OBMA_L (§IV): one group per chunk, no chunk structure.
    L,
    /// OBMA_S (§V): BIS in the chunk structure, sparse chunks.
    S,
}

/// The address partition: the DPA's bits, then the stride of every chunk layer.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub struct Geometry {
    /// Bits resolved by the Direct Pointing Array.
    pub dpa_bits: u8,
    /// Bits resolved by each chunk layer (3..=8 each).
    pub strides: Vec<u8>,
}

impl Geometry {
    /// The paper's [18-6-8] partition of IPv4 (Fig. 4).
    pub fn ipv4() -> Self {
        Geometry {
            dpa_bits: 18,
            strides: vec![6, 8],
        }
    }

    /// lpmkit's IPv6 partition, [16-8-8-…-8]: a 2^16 DPA, then fourteen 8-bit layers
    /// (the layer-3 chunk of the IPv4 layout, repeated).
    pub fn ipv6() -> Self {
        Geometry {
            dpa_bits: 16,
            strides: vec![8; 14],
        }
    }

    /// The first bit of layer `j`.
    pub(crate) fn top(&self, j: usize) -> u8 {
        self.dpa_bits + self.strides[..j].iter().sum::<u8>()
    }
}

/// Writer-updated figures, on a cache line of their own.
#[repr(align(64))]
#[derive(Debug, Default)]
pub(crate) struct Fill {
    /// Bytes of live structure.
    pub(crate) bytes: AtomicUsize,
}

/// The arrays of one entry width.
pub(crate) struct Layout<A, E: Word + AtomicWord> {
    pub(crate) dpa: Arena<E>,
    pub(crate) dirs: Vec<Arena<u32>>,
    pub(crate) chunks: Arena<u32>,
    pub(crate) groups: Arena<E>,
    pub(crate) lim: u32,
    /// DPA values from here on name layer-0 chunks (`dpa_lim + id`); with a DPA
    /// dictionary the values below are its slots, else `dpa_lim == lim`.
    pub(crate) dpa_lim: u32,
    /// The DPA's next-hop dictionary (16-bit tables whose next hops and layer-0 chunk
    /// ids do not fit one 16-bit space, while the few next hops the DPA itself holds
    /// do): slot → next hop. Slots are appended, never changed while the table lives.
    pub(crate) dict: Option<Arena<u32>>,
    pub(crate) variant: Variant,
    pub(crate) dpa_bits: u8,
    pub(crate) tops: [u8; MAX_LAYERS],
    pub(crate) strides: [u8; MAX_LAYERS],
    pub(crate) layers: usize,
    pub(crate) fill: Fill,
    pub(crate) _a: PhantomData<A>,
}

/// Keys per block of the batched lookup.
const BLOCK: usize = 32;

/// The per-key state of a layer stage (kept between stages: written before it is read,
/// so never cleared).
struct Lanes {
    /// Chunk-list entry, then group offset.
    g: [usize; BLOCK],
    /// Bits of the group's elements.
    d: [u32; BLOCK],
    /// The key's element (in the chunk, then in the group).
    idx: [u32; BLOCK],
}

/// What the batched lookup reads, copied out of a [`Layout`] once per call: the arrays'
/// base pointers and the scalars live in registers or on the stack, where the compiler
/// need not reload them after every acquire load (through `&self` it must: the layout
/// holds atomics, so another thread might have changed them).
struct View<E> {
    dpa: *const E,
    /// The DPA dictionary's slots (null without one).
    dict: *const u32,
    dpa_lim: u32,
    dirs: [*const u32; MAX_LAYERS],
    chunks: *const u32,
    groups: *const E,
    lim: u32,
    dpa_bits: u32,
    tops: [u8; MAX_LAYERS],
    strides: [u8; MAX_LAYERS],
    layers: usize,
}

impl<E: Word + AtomicWord> View<E> {
    /// Prefetches the DPA entries of block `b`'s keys, if there is such a block.
    #[inline(always)]
    fn prefetch_dpa<A: Address>(&self, keys: &[A], b: usize) {
        if let Some(block) = keys.get(b * BLOCK..(b + 1) * BLOCK) {
            for &a in block {
                prefetch(self.dpa.wrapping_add(a.top_bits(self.dpa_bits) as usize));
            }
        }
    }

    /// Entry `idx` (already permuted by its BIS) of the group at `g` (`2^d` elements).
    ///
    /// # Safety
    /// As [`group_entry_at`].
    #[inline(always)]
    unsafe fn group_entry(&self, g: usize, d: u32, idx: u32) -> u32 {
        // SAFETY: the caller's contract.
        unsafe { group_entry_at(self.groups, g, d, idx) }
    }
}

/// Entry `i` (already permuted by its BIS) of the group at word `g` of `groups`
/// (`2^d` elements): its cluster's code word, then the entry it counts to.
///
/// # Safety
/// `g` must be a published group (read through a switch word, or the writer's own) of
/// `2^d` elements, and `i < 2^d`: its code words and entries are committed and complete.
/// Code words never change while the group is live; a lookup entry may (the writer
/// stores a new value in place when the bitmap stays: `ObmaWriter::patch_group`), so it
/// is read with one atomic load (acquire: a new entry may name a chunk published just
/// before it; on x86 an ordinary load).
#[inline(always)]
unsafe fn group_entry_at<E: Word + AtomicWord>(groups: *const E, g: usize, d: u32, i: u32) -> u32 {
    let i = i as usize;
    // SAFETY: the caller's contract.
    unsafe {
        let cw = (*groups.add(g + (i >> 3))).get();
        E::load_acquire(groups.add(g + code_words(1 << d) + entry_index(cw, i))).get()
    }
}

/// The value the DPA word `raw` of a table with a dictionary (`dict`, `dpa_lim`) stands
/// for: a slot's next hop, or `lim + id` of a layer-0 chunk.
///
/// # Safety
/// `raw` must be a published DPA value and `dict` the table's dictionary: a value below
/// `dpa_lim` is then a committed slot (the writer writes a slot before it publishes a
/// value naming it, and never changes it).
#[inline(always)]
unsafe fn dict_value(raw: u32, dict: *const u32, dpa_lim: u32, lim: u32) -> u32 {
    if raw >= dpa_lim {
        raw - dpa_lim + lim
    } else {
        // SAFETY: the caller's contract.
        unsafe { *dict.add(raw as usize) }
    }
}

/// The keys waiting for one chunk layer's stage (indices into the batch), fewer than
/// `BLOCK` between stages, so a stage's `BLOCK` new ones always fit.
#[derive(Clone, Copy)]
struct Queue {
    keys: [u32; 2 * BLOCK],
    len: usize,
}

impl Queue {
    const EMPTY: Queue = Queue {
        keys: [0; 2 * BLOCK],
        len: 0,
    };
}

/// Words of a chunk structure's header.
#[inline(always)]
pub(crate) fn header_words(v: Variant) -> usize {
    match v {
        Variant::B => 1,
        Variant::L => 0,
        Variant::S => 2,
    }
}

impl<A: Address, E: Word + AtomicWord> Layout<A, E> {
    pub(crate) fn new(
        geometry: &Geometry,
        variant: Variant,
        lim: u32,
        ids: usize,
        words: usize,
        dict: Option<u32>,
    ) -> Option<Self> {
        let mut tops = [0; MAX_LAYERS];
        let mut strides = [0; MAX_LAYERS];
        for j in 0..geometry.strides.len() {
            tops[j] = geometry.top(j);
            strides[j] = geometry.strides[j];
        }
        Some(Layout {
            dpa: Arena::zeroed(1 << geometry.dpa_bits)?,
            dirs: (0..geometry.strides.len())
                .map(|_| Arena::new(ids))
                .collect::<Option<_>>()?,
            chunks: Arena::new(words)?,
            groups: Arena::new(words)?,
            lim,
            dpa_lim: dict.unwrap_or(lim),
            dict: match dict {
                Some(slots) => Some(Arena::new(slots as usize)?),
                None => None,
            },
            variant,
            dpa_bits: geometry.dpa_bits,
            tops,
            strides,
            layers: geometry.strides.len(),
            fill: Fill::default(),
            _a: PhantomData,
        })
    }

    /// The value a DPA element `raw` stands for: a next hop (below `lim`) or `lim + id`
    /// of a layer-0 chunk, as every other entry.
    #[inline(always)]
    pub(crate) fn dpa_value(&self, raw: u32) -> u32 {
        match &self.dict {
            None => raw,
            // SAFETY: `raw` is a published DPA value.
            Some(d) => unsafe { dict_value(raw, d.as_ptr(), self.dpa_lim, self.lim) },
        }
    }

    /// DPA element `x`'s value (a next hop, or `lim + id`), as the writer reads it.
    #[inline]
    pub(crate) fn dpa_get(&self, x: usize) -> u32 {
        assert!(x < 1usize << self.dpa_bits, "DPA element {x} out of range");
        // SAFETY: the DPA is committed whole; `x` is in it.
        self.dpa_value(unsafe { self.dpa.get(x) }.get())
    }

    /// Entry `i` of the group at `g` (`2^d` elements, BIS `bis`).
    #[inline(always)]
    fn group_entry(&self, g: usize, d: u32, idx: u32, bis: u32) -> u32 {
        // SAFETY: `g` is a published group (read through a switch word, or the writer's
        // own); `idx < 2^d`.
        unsafe { group_entry_at(self.groups.as_ptr(), g, d, idx ^ bis) }
    }

    /// The sparse chunk at `c` (§V-D): the first of its entries, longest first, whose
    /// prefix matches `seg`.
    #[inline(never)]
    fn sparse_entry(&self, c: usize, hdr: u32, s: u32, seg: u32) -> u32 {
        let k = ((hdr >> 24) & 0x7f) as usize;
        for t in 0..k {
            // SAFETY: the chunk's `k` entries are committed and complete (published).
            let (key, value) = unsafe { self.sparse_at(c, t) };
            let len = key & 0xf;
            if len == 0 || seg >> (s - len) == key >> 4 {
                return value;
            }
        }
        0
    }

    /// Sparse entry `t` of the chunk at `c`: (`prefix << 4 | len`, value).
    ///
    /// # Safety
    /// The chunk at `c` must be a complete sparse chunk with more than `t` entries.
    #[inline(always)]
    pub(crate) unsafe fn sparse_at(&self, c: usize, t: usize) -> (u32, u32) {
        unsafe {
            if E::WIDTH.bits() == 16 {
                let w = self.chunks.get(c + 1 + t);
                (w >> 16, w & 0xffff)
            } else {
                (
                    self.chunks.get(c + 1 + 2 * t),
                    self.chunks.get(c + 2 + 2 * t),
                )
            }
        }
    }

    /// The element `seg` of the chunk whose structure is at `c` in layer `j`.
    #[inline(always)]
    pub(crate) fn chunk_entry<const V: u8>(&self, j: usize, c: usize, seg: u32) -> u32 {
        let s = self.strides[j] as u32;
        // SAFETY: `c` was read from a published chunk-list entry: the structure is
        // committed and complete, its group offsets are switch words.
        unsafe {
            match V {
                VL => self.group_entry(c, s, seg, 0),
                // OBMA_S, a chunk of one group: its entry is the group's offset and BIS.
                VS if c >> 31 == 0 => {
                    let bis = (c >> DIRECT_BIS_SHIFT) as u32;
                    self.group_entry(c & DIRECT_OFF_MASK as usize, s, seg, bis)
                }
                // OBMA_B, a chunk of one group: its entry is the group's offset.
                _ if c >> 31 == 0 => self.group_entry(c, s, seg, 0),
                VB => {
                    let c = c & STRUCTURE_MASK;
                    let w = (self.chunks.get(c) >> 24) & 0x7f;
                    let d = s - w;
                    let g = self.chunks.load_acquire(c + 1 + (seg >> d) as usize);
                    self.group_entry(g as usize, d, seg & ((1 << d) - 1), 0)
                }
                _ => {
                    let c = c & STRUCTURE_MASK;
                    let hdr = self.chunks.get(c);
                    if hdr >> 31 != 0 {
                        return self.sparse_entry(c, hdr, s, seg);
                    }
                    let w = (hdr >> 24) & 0x7f;
                    let d = s - w;
                    let gi = seg >> d;
                    let bis = chunk_bis(hdr, self.chunks.get(c + 1), gi, d);
                    let g = self.chunks.load_acquire(c + 2 + gi as usize);
                    self.group_entry(g as usize, d, seg & ((1 << d) - 1), bis)
                }
            }
        }
    }

    /// Algorithm 1 for one key.
    #[inline(always)]
    pub(crate) fn lookup_one<const V: u8>(&self, key: A) -> u32 {
        // SAFETY: the DPA is committed whole; chunk ids read from published entries are
        // committed in their chunk list.
        unsafe {
            let mut v = self.dpa_value(
                self.dpa
                    .load_acquire(key.top_bits(self.dpa_bits as u32) as usize)
                    .get(),
            );
            let mut j = 0;
            while v >= self.lim {
                let c = self.dirs[j].load_acquire((v - self.lim) as usize) as usize;
                let seg = key.bits_at(self.tops[j], self.strides[j]);
                v = self.chunk_entry::<V>(j, c, seg);
                j += 1;
            }
            v
        }
    }

    /// A lookup that runs `stall` after reading the DPA entry (for the stalled-reader
    /// test).
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn lookup_stalled<const V: u8>(&self, key: A, stall: impl FnOnce()) -> u32 {
        // SAFETY: as `lookup_one`.
        unsafe {
            let mut v = self.dpa_value(
                self.dpa
                    .load_acquire(key.top_bits(self.dpa_bits as u32) as usize)
                    .get(),
            );
            stall();
            let mut j = 0;
            while v >= self.lim {
                let c = self.dirs[j].load_acquire((v - self.lim) as usize) as usize;
                let seg = key.bits_at(self.tops[j], self.strides[j]);
                v = self.chunk_entry::<V>(j, c, seg);
                j += 1;
            }
            v
        }
    }

    /// The base pointers and scalars the batched lookup reads, copied out once per call
    /// (see [`View`]).
    #[inline(always)]
    fn view(&self) -> View<E> {
        let mut dirs = [core::ptr::null(); MAX_LAYERS];
        for (d, a) in dirs.iter_mut().zip(&self.dirs) {
            *d = a.as_ptr();
        }
        View {
            dpa: self.dpa.as_ptr(),
            dict: self.dict.as_ref().map_or(core::ptr::null(), |d| d.as_ptr()),
            dpa_lim: self.dpa_lim,
            dirs,
            chunks: self.chunks.as_ptr(),
            groups: self.groups.as_ptr(),
            lim: self.lim,
            dpa_bits: self.dpa_bits as u32,
            tops: self.tops,
            strides: self.strides,
            layers: self.layers,
        }
    }

    /// The first stage of Algorithm 1 over the block of `BLOCK` keys at `base`: every
    /// key's DPA entry into `out`, the keys that go on appended to `next` (the queue of
    /// layer 0), each one's chunk-list entry prefetched.
    #[inline(always)]
    fn dpa_stage<const D: bool>(
        v: &View<E>,
        keys: &[A],
        out: &mut [u32],
        base: usize,
        next: &mut Queue,
    ) {
        let keys = &keys[base..base + BLOCK];
        let out = &mut out[base..base + BLOCK];
        let (lim, dir) = (v.lim, v.dirs[0]);
        let mut n = next.len;
        for i in 0..BLOCK {
            // SAFETY: the DPA is committed whole: every `dpa_bits`-bit index is in it.
            let raw =
                unsafe { E::load_acquire(v.dpa.add(keys[i].top_bits(v.dpa_bits) as usize)) }.get();
            let e = if D {
                // SAFETY: `raw` is a published DPA value of a table with a dictionary.
                unsafe { dict_value(raw, v.dict, v.dpa_lim, lim) }
            } else {
                raw
            };
            out[i] = e;
            // `n < 2 * BLOCK` (the queue holds fewer than `BLOCK` before a stage): the
            // mask only spares the bounds check.
            next.keys[n & (2 * BLOCK - 1)] = (base + i) as u32;
            let go = e >= lim;
            // A key that stops here prefetches chunk-list entry 0: harmless, and no branch.
            prefetch(dir.wrapping_add((e.wrapping_sub(lim) & (go as u32).wrapping_neg()) as usize));
            n += go as usize;
        }
        next.len = n;
    }

    /// Chunk layer `j` of Algorithm 1 for the keys `items` (at most `BLOCK`, indices into
    /// `keys` and `out`), whose `out` holds the entry that names their chunk: their
    /// chunk-list entries (prefetching the chunk structures or groups), the group offsets
    /// of those with a structure (prefetching the code words), then the lookup entries
    /// into `out`; the keys that go on are appended to `next` (the queue of layer
    /// `j + 1`). The loads of one pass are independent, so their misses overlap.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn layer_stage<const V: u8>(
        &self,
        v: &View<E>,
        j: usize,
        keys: &[A],
        out: &mut [u32],
        items: &[u32],
        lanes: &mut Lanes,
        next: &mut Queue,
    ) {
        let n = items.len().min(BLOCK);
        let items = &items[..n];
        let Lanes { g, d, idx } = lanes;
        let lim = v.lim;
        let dir = v.dirs[j];
        let (top, stride) = (v.tops[j], v.strides[j]);
        let s = stride as u32;
        // Keys whose chunk has a structure (several groups, or a BIS) to read next.
        let mut st = [0u8; BLOCK];
        let mut ns = 0;
        for (k, &i) in items.iter().enumerate() {
            let i = i as usize;
            // SAFETY: a published chunk id is committed in its chunk list.
            let c = unsafe { u32::load_acquire(dir.add((out[i] - lim) as usize)) } as usize;
            g[k] = c;
            idx[k] = keys[i].bits_at(top, stride);
            // One group: `g` is the group, of the chunk's width (OBMA_S: with its BIS).
            d[k] = s;
            if V == VS && c >> 31 == 0 {
                g[k] = c & DIRECT_OFF_MASK as usize;
                idx[k] ^= (c >> DIRECT_BIS_SHIFT) as u32;
            }
            if V == VL || c >> 31 == 0 {
                prefetch(v.groups.wrapping_add(g[k] + (idx[k] >> 3) as usize));
            } else {
                prefetch(v.chunks.wrapping_add(c & STRUCTURE_MASK));
            }
            if V != VL {
                // `ns <= k < BLOCK`: the mask only spares the bounds check.
                st[ns & (BLOCK - 1)] = k as u8;
                ns += c >> 31;
            }
        }
        if V != VL {
            for &k in &st[..ns] {
                let k = k as usize;
                let c = g[k] & STRUCTURE_MASK;
                // SAFETY: as `chunk_entry`.
                unsafe {
                    let hdr = *v.chunks.add(c);
                    if V == VS && hdr >> 31 != 0 {
                        // A sparse chunk answers at once.
                        idx[k] = self.sparse_entry(c, hdr, s, idx[k]);
                        d[k] = u32::MAX;
                        continue;
                    }
                    let w = (hdr >> 24) & 0x7f;
                    let dd = s - w;
                    let gi = idx[k] >> dd;
                    let (bis, h) = if V == VS {
                        (chunk_bis(hdr, *v.chunks.add(c + 1), gi, dd), 2)
                    } else {
                        (0, 1)
                    };
                    g[k] = u32::load_acquire(v.chunks.add(c + h + gi as usize)) as usize;
                    idx[k] = (idx[k] & ((1 << dd) - 1)) ^ bis;
                    d[k] = dd;
                    prefetch(v.groups.wrapping_add(g[k] + (idx[k] >> 3) as usize));
                }
            }
        }
        let next_dir = if j + 1 < v.layers {
            v.dirs[j + 1]
        } else {
            core::ptr::null()
        };
        let mut m = next.len;
        for (k, &i) in items.iter().enumerate() {
            // SAFETY: `g[k]` is a published group (read through a switch word).
            let e = unsafe {
                if V == VL {
                    v.group_entry(g[k], s, idx[k])
                } else if V == VS && d[k] == u32::MAX {
                    idx[k]
                } else {
                    v.group_entry(g[k], d[k], idx[k])
                }
            };
            out[i as usize] = e;
            // `m < 2 * BLOCK`, as in `dpa_stage`.
            next.keys[m & (2 * BLOCK - 1)] = i;
            let go = e >= lim;
            if go {
                prefetch(next_dir.wrapping_add((e - lim) as usize));
            }
            m += go as usize;
        }
        next.len = m;
    }

    /// `lookup_batch` for variant `V`, as a wavefront: the DPA stage runs over blocks
    /// of `BLOCK` keys (their entries prefetched two blocks ahead), and the keys that go
    /// on wait in the queue of their next layer until it holds `BLOCK` keys, which then
    /// go through that layer's stage together. Every stage so works on a full block
    /// whose loads overlap, however few keys leave the DPA (6 % on rrc06, where a
    /// per-block stage saw two or three keys and waited out each of their misses). The
    /// queues are emptied, layer by layer, at the end; the last keys one at a time.
    ///
    /// A key's chunk ids are used later in the call than they were read: the grace
    /// period keeps whatever they name alive until the reader's next quiescent point,
    /// which is after the call.
    pub(crate) fn lookup_batch<const V: u8>(&self, keys: &[A], out: &mut [u32]) {
        if self.dict.is_some() {
            self.lookup_batch_with::<V, true>(keys, out)
        } else {
            self.lookup_batch_with::<V, false>(keys, out)
        }
    }

    /// [`lookup_batch`](Self::lookup_batch) with (`D`) or without a DPA dictionary.
    fn lookup_batch_with<const V: u8, const D: bool>(&self, keys: &[A], out: &mut [u32]) {
        // The queues hold 32-bit key indices.
        const MAX_CALL: usize = 1 << 31;
        if keys.len() > MAX_CALL {
            for (k, o) in keys.chunks(MAX_CALL).zip(out.chunks_mut(MAX_CALL)) {
                self.lookup_batch_with::<V, D>(k, o);
            }
            return;
        }
        let v = self.view();
        let blocks = keys.len() / BLOCK;
        let mut queues = [Queue::EMPTY; MAX_LAYERS + 1];
        let mut lanes = Lanes {
            g: [0; BLOCK],
            d: [0; BLOCK],
            idx: [0; BLOCK],
        };
        v.prefetch_dpa(keys, 0);
        v.prefetch_dpa(keys, 1);
        for b in 0..blocks {
            v.prefetch_dpa(keys, b + 2);
            Self::dpa_stage::<D>(&v, keys, out, b * BLOCK, &mut queues[0]);
            self.settle::<V>(&v, 0, keys, out, &mut queues, &mut lanes);
        }
        // What is left in the queues (fewer than `BLOCK` each), layer by layer.
        for j in 0..v.layers {
            let (q, rest) = queues[j..]
                .split_first_mut()
                .expect("MAX_LAYERS + 1 queues");
            if q.len > 0 {
                self.layer_stage::<V>(&v, j, keys, out, &q.keys[..q.len], &mut lanes, &mut rest[0]);
                q.len = 0;
                self.settle::<V>(&v, j + 1, keys, out, &mut queues, &mut lanes);
            }
        }
        let tail = blocks * BLOCK;
        for (o, &k) in out[tail..keys.len()].iter_mut().zip(&keys[tail..]) {
            *o = self.lookup_one::<V>(k);
        }
    }

    /// Runs the stage of every layer from `from` on whose queue holds a block, in layer
    /// order: a stage only adds to the next layer's queue, so afterwards every queue
    /// holds fewer than `BLOCK` keys.
    #[inline(always)]
    fn settle<const V: u8>(
        &self,
        v: &View<E>,
        from: usize,
        keys: &[A],
        out: &mut [u32],
        queues: &mut [Queue; MAX_LAYERS + 1],
        lanes: &mut Lanes,
    ) {
        for j in from..v.layers {
            let (q, rest) = queues[j..]
                .split_first_mut()
                .expect("MAX_LAYERS + 1 queues");
            if q.len >= BLOCK {
                self.layer_stage::<V>(v, j, keys, out, &q.keys[..BLOCK], lanes, &mut rest[0]);
                q.keys.copy_within(BLOCK..q.len, 0);
                q.len -= BLOCK;
            }
        }
    }

    /// Bytes of live structure.
    pub(crate) fn bytes(&self) -> usize {
        self.fill.bytes.load(Ordering::Relaxed)
    }
}

/// A chunk-list entry with bit 31 set holds the offset of a chunk structure in its low
/// bits; with bit 31 clear, the offset of the chunk's one group (OBMA_L always; OBMA_B
/// and OBMA_S when the chunk has one group and no BIS).
pub(crate) const STRUCTURE: u32 = 1 << 31;
const STRUCTURE_MASK: usize = (STRUCTURE - 1) as usize;

/// An OBMA_S chunk-list entry without bit 31 names the chunk's one group *and* its BIS:
/// the BIS in bits 23..31 (a one-group chunk's BIS has the chunk's stride, at most 8
/// bits), the group offset below (so such a group lies in the first 2^23 words; a chunk
/// whose group lies beyond keeps a chunk structure). This spares the three-word chunk
/// structure of every one-group chunk with a BIS (most of OBMA_S's chunks).
pub(crate) const DIRECT_BIS_SHIFT: u32 = 23;
/// The group offset of a direct OBMA_S chunk-list entry.
pub(crate) const DIRECT_OFF_MASK: u32 = (1 << DIRECT_BIS_SHIFT) - 1;

/// The chunk-list entry of a direct OBMA_S chunk (one group at `off`, BIS `bis`), if
/// `off` fits.
#[inline]
pub(crate) fn direct_entry(off: u32, bis: u8) -> Option<u32> {
    (off <= DIRECT_OFF_MASK).then_some((bis as u32) << DIRECT_BIS_SHIFT | off)
}

/// Const tags of the variants, for monomorphised lookups.
pub(crate) const VB: u8 = 0;
pub(crate) const VL: u8 = 1;
pub(crate) const VS: u8 = 2;

/// The BIS of group `gi` (of `d` bits each) packed in an OBMA_S chunk header (§V-D: 56
/// bits after the 1-bit type and the 7-bit group width).
#[inline(always)]
pub(crate) fn chunk_bis(hdr: u32, hdr2: u32, gi: u32, d: u32) -> u32 {
    let all = (hdr & 0xff_ffff) as u64 | (hdr2 as u64) << 24;
    ((all >> (gi * d)) & ((1 << d) - 1)) as u32
}

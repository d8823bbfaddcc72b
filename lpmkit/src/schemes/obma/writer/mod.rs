//! The writer: the build (level traversal, §III-A), and updates in place under readers
//! (§VI-B, §VI-C), with the paper's two optimisations.
//!
//! * **What a change touches.** A change of prefix `p` only alters elements inside `p` at
//!   the level of the layer `p` ends in (its *home*: the DPA for `p` up to /18, else the
//!   chunk whose levels hold `p`'s length), and — through the chunks below those
//!   elements — the defaults those chunks inherit. Above its home, only whether an element
//!   *points* to a chunk can change (a first route below it, or its last one gone).
//! * **DPA elements** are switch words: a change up to /18 stores each element it alters
//!   (the paper: "only the DPA needs to be updated"); a chunk below an element whose
//!   inherited value changed has the elements that take that value repainted.
//! * **Only `p`'s own elements** (§VI: "an update touches only the prefix's own level
//!   traversal"): the elements of the home chunk inside `p` are repainted
//!   ([`ObmaWriter::repaint`]) and each group they lie in is patched
//!   ([`ObmaWriter::patch_group`]). When the group's overlay bitmap stays the same (a
//!   next-hop change, most updates of a real trace) the lookup entries that change are
//!   stored in place, one atomic store each — no new group, nothing retired; otherwise a
//!   new group is built beside the live one and published by one store of its offset
//!   (OBMA_L: of its chunk-list entry). OBMA_S keeps a group's BIS until the chunk is
//!   rebuilt (a regroup or decay); a sparse chunk is rebuilt whole. A group of at most 64
//!   elements without a BIS (every OBMA_B layer-2 group, OBMA_L's) is patched in one pass
//!   over one word ([`ObmaWriter::patch_word`], `word.rs`): its bitmap and the changed
//!   elements as `u64`s, the new group derived from the two.
//! * **No `Rib` walk for a change alone in its batch** (every update of a replay, and
//!   each `apply` of one change): the writer keeps *presence bits*, one per prefix of the
//!   DPA's levels and of each chunk's levels, set from the `Rib` when a chunk is built
//!   and by each change. An announced `p`'s elements take its next hop except where a
//!   route inside `p` (a presence bit) covers them; a withdrawn `p`'s take the chunk's
//!   default unless a route between the chunk root and `p` has a bit (then one descent of
//!   the `Rib`); whether a withdrawal leaves a longer route below an element is answered by
//!   the chunk's other bits first. A batch of several changes is patched against the
//!   `Rib` after the batch by level traversals (one descent each, `Rib::walk_window`).
//! * **The 24th-level optimisation** (§VI-B2): a change whose length is the last level of
//!   its home chunk (/24 and /32 for IPv4) and whose element is no pointer changes one
//!   element: stored in place when the element is a run of its own before and after,
//!   else the new group is derived from the old one by Table II's transforms
//!   ([`group::set_element`]; for a group of one word, [`ObmaWriter::patch_word`]'s
//!   generalisation of them); with no trie traversal for an announcement.
//! * **Adaptive grouping** (§VI-B1): a counter per chunk counts the updates it receives;
//!   reaching the upper bound of its range (`[f_{i-1}, f_i)`, `f_i = β f_{i-1}`) widens
//!   the chunk's group index by one bit and rebuilds it (*online addition*); every
//!   `decay_updates` updates every chunk whose count fell below its range is rebuilt with
//!   the width its count calls for and the counters restart (*periodic decay*).
//! * **Zero interrupt, without the paper's transient errors** (§VI-C): nothing a reader can
//!   reach is written except switch words (DPA elements, chunk-list entries, group
//!   offsets, and lookup entries of a group whose bitmap stays — a key reads one entry,
//!   whose run lies wholly inside the changed elements or wholly outside them; readers
//!   load entries atomically), each by one atomic store after what it points to is
//!   complete; what a patch
//!   unlinks is retired and reused only after the grace period
//!   ([`crate::sync::InPlace`]), so a lookup sees, per key, the table before or after
//!   each change.

mod codec;
mod fast;
mod repaint;
mod runs;
mod traverse;
mod update;
mod word;

use repaint::{keep_covered, set_bit};

use super::group::{self, code_words, group_words};
use super::layout::{
    chunk_bis, direct_entry, header_words, Layout, Variant, STRUCTURE, VB, VL, VS,
};
use super::{BisSearch, Grouping, ObmaConfig};
use traverse::{paint, sparse_entries};

use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{AtomicWord, FreeSpace, Word};

/// Freed groups and chunk structures wait in bins of their exact size
/// ([`FreeSpace::quick_bins`]) up to this many words: every group (at most 2^8 elements:
/// 32 code words and 256 entries) and every chunk structure (at most 2 + 2^8 words). An
/// update replaces a group by one of nearly the same size, so the bins refill what they
/// give out, in O(1) instead of the trees' four to six updates.
const QUICK_BIN_WORDS: usize = 320;

/// A layout limit (chunk ids, arena room): rebuild, wider if need be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// Something a patch made unreachable, reused after its grace period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retired {
    /// Words of the chunk-structure memory.
    Chunk {
        /// First word.
        off: u32,
        /// Words.
        len: u32,
    },
    /// Words of the group memory.
    Group {
        /// First word.
        off: u32,
        /// Words.
        len: u32,
    },
    /// A chunk id of a layer.
    Id {
        /// The layer (0: the first below the DPA).
        layer: u8,
        /// The id.
        id: u32,
    },
}

/// The writer's record of one chunk.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkRec<A: Address> {
    /// The chunk's root (a prefix as long as its layer's first level).
    pub(crate) root: Prefix<A>,
    /// Offset of its structure in `chunks` (OBMA_L: of its group in `groups`).
    pub(crate) off: u32,
    /// Words of its structure (OBMA_L: 0).
    pub(crate) words: u32,
    /// Group index width.
    pub(crate) width: u8,
    /// A sparse chunk (OBMA_S).
    pub(crate) sparse: bool,
    /// One group, named by the chunk-list entry itself (no chunk structure; OBMA_S: the
    /// entry holds its BIS too).
    pub(crate) direct: bool,
    /// The BIS of a direct OBMA_S chunk's group (0 otherwise).
    pub(crate) bis: u8,
    /// The value its root inherits (the longest match at or above the root).
    pub(crate) default: u32,
    /// Updates received since the last decay (adaptive grouping).
    pub(crate) counter: u32,
    pub(crate) live: bool,
}

/// Counters of the update path (Table III and Table IV's explanations).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) updates: u64,
    pub(crate) dpa_stores: u64,
    pub(crate) pointer_stores: u64,
    pub(crate) new_bytes: u64,
    pub(crate) splices: u64,
    /// Lookup entries changed in place (one atomic store each) because the group's
    /// overlay bitmap stayed the same.
    pub(crate) entry_stores: u64,
    /// Groups patched in place (their bitmaps stayed): entry stores, no new group.
    pub(crate) groups_in_place: u64,
    /// Level traversals of a prefix's elements (walks of the `Rib`).
    pub(crate) traversals: u64,
    pub(crate) groups_rebuilt: u64,
    pub(crate) chunks_rebuilt: u64,
    pub(crate) chunks_built: u64,
    pub(crate) regroups: u64,
    pub(crate) decays: u64,
    pub(crate) full_rebuilds: u64,
}

/// Fig. 13's counts over 16-element windows of every chunk at build: 1s of Lulea-style
/// bitmaps, of overlay bitmaps, and of bit-inversion bitmaps (greedy and optimal BIS).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Fig13 {
    pub(crate) windows: u64,
    pub(crate) lulea: u64,
    pub(crate) overlay: u64,
    pub(crate) bis_greedy: u64,
    pub(crate) bis_optimal: u64,
}

/// Scratch of one layer (the traversal recurses into the next layer).
#[derive(Debug, Default)]
struct Scratch {
    fpa: Vec<u32>,
    old: Vec<u32>,
    deeper: Vec<u32>,
    routes: Vec<(u32, u8, u32)>,
    words: Vec<u32>,
    offs: Vec<u32>,
}

/// The writer side of an [`super::ObmaTable`]: chunk records, free space, counters.
#[derive(Debug)]
pub struct ObmaWriter<A: Address> {
    pub(crate) config: ObmaConfig,
    pub(crate) variant: Variant,
    pub(crate) dpa_bits: u8,
    pub(crate) tops: Vec<u8>,
    pub(crate) strides: Vec<u8>,
    pub(crate) chunk_space: FreeSpace,
    pub(crate) group_space: FreeSpace,
    pub(crate) ids: Vec<FreeSpace>,
    pub(crate) id_limit: u32,
    /// Chunk ids layer 0 may use (below `id_limit` too; lower with a DPA dictionary).
    pub(crate) id_limit0: u32,
    /// With a DPA dictionary: next hop → its slot (`u32::MAX`: none yet).
    dict_slots: Vec<u32>,
    /// Slots of the DPA dictionary in use.
    pub(crate) dict_len: u32,
    pub(crate) recs: Vec<Vec<ChunkRec<A>>>,
    pub(crate) counters: Counters,
    pub(crate) fig13: Fig13,
    collect_fig13: bool,
    pub(crate) routes: usize,
    pub(crate) build_ms: f64,
    pub(crate) live_group_words: usize,
    pub(crate) live_chunk_words: usize,
    pub(crate) live_ids: usize,
    pub(crate) sparse_chunks: usize,
    pub(crate) live_groups: usize,
    since_decay: u64,
    /// Scratch per layer, boxed so that taking one out and putting it back moves a
    /// pointer.
    scratch: Vec<Option<Box<Scratch>>>,
    /// Scratch of [`Self::patch_group`].
    group_scratch: Option<Box<Scratch>>,
    /// Which prefixes strictly inside each chunk and no longer than its last level have
    /// a route, per layer: `presence_words[j]` words per chunk id, bit `(1 << rel) | bits`
    /// for the prefix `rel` levels below the root. Set from the `Rib` when a chunk is
    /// (re)built, and by every change whose home the chunk is.
    pub(crate) presence: Vec<Vec<u64>>,
    pub(crate) presence_words: Vec<usize>,
    /// The same for the DPA's levels: bit `(1 << len) | bits` for a route of length
    /// `len <= dpa_bits` (`/0`: bit 1).
    pub(crate) dpa_presence: Vec<u64>,
    /// The batch being patched has one change: the `Rib` differs from the table by it
    /// alone (so `presence` is current for every other prefix).
    pub(crate) single: bool,
    /// Alone in its batch, the announced route (and its next hop): the only route of
    /// every chunk the change builds, which is then encoded without a `Rib` walk.
    pub(crate) fresh: Option<(Prefix<A>, u32)>,
    /// Scratch of [`Self::retire_chunk`]: chunks (layer, id) still to retire.
    retire_stack: Vec<(u8, u32)>,
    /// Adaptive grouping: per layer, the fewest updates that give a width above `w`, per
    /// `w` (`u64::MAX` from the layer's widest on, and for fixed grouping).
    thresholds: Vec<[u64; 8]>,
    pending: Vec<Retired>,
}

/// The address of `prefix`'s first element `idx` at `bits` below it.
fn extend<A: Address>(root: &Prefix<A>, idx: u32, bits: u8) -> Prefix<A> {
    let len = root.len() + bits;
    let shift = A::BITS - len;
    let addr = A::from_u128(root.addr().to_u128() | ((idx as u128) << shift));
    Prefix::new_truncating(addr, len)
}

impl<A: Address> ObmaWriter<A> {
    pub(crate) fn new(config: ObmaConfig, dpa_bits: u8, strides: Vec<u8>, id_limit: u32) -> Self {
        let tops = strides
            .iter()
            .scan(dpa_bits, |t, &s| {
                let top = *t;
                *t += s;
                Some(top)
            })
            .collect();
        let layers = strides.len();
        let mut thresholds = [u64::MAX; 8];
        if let Grouping::Adaptive { f0, beta, .. } = config.grouping {
            let (mut f, mut most) = (f0 as u64, 0);
            for th in &mut thresholds {
                most = f.max(most);
                *th = most;
                f = f.saturating_mul(beta as u64);
            }
        }
        let presence_words = strides
            .iter()
            .map(|&s| (1usize << (s + 1)).div_ceil(64))
            .collect();
        let mut writer = ObmaWriter {
            variant: config.variant,
            config,
            dpa_bits,
            tops,
            strides,
            chunk_space: FreeSpace::new(0).quick_bins(QUICK_BIN_WORDS),
            group_space: FreeSpace::new(0).quick_bins(QUICK_BIN_WORDS),
            // Ids come and go one at a time: a bin of single ids, O(1) both ways.
            ids: vec![FreeSpace::new(0).quick_bins(1); layers],
            id_limit,
            id_limit0: id_limit,
            dict_slots: Vec::new(),
            dict_len: 0,
            recs: vec![Vec::new(); layers],
            counters: Counters::default(),
            fig13: Fig13::default(),
            collect_fig13: false,
            routes: 0,
            build_ms: 0.0,
            live_group_words: 0,
            live_chunk_words: 0,
            live_ids: 0,
            sparse_chunks: 0,
            live_groups: 0,
            since_decay: 0,
            scratch: (0..=layers).map(|_| Some(Box::default())).collect(),
            group_scratch: Some(Box::default()),
            presence: vec![Vec::new(); layers],
            presence_words,
            dpa_presence: vec![0; (1usize << (dpa_bits + 1)).div_ceil(64)],
            thresholds: Vec::new(),
            single: false,
            fresh: None,
            retire_stack: Vec::new(),
            pending: Vec::new(),
        };
        writer.thresholds = (0..layers)
            .map(|j| {
                let mut t = thresholds;
                t[writer.max_width(j) as usize..].fill(u64::MAX);
                t
            })
            .collect();
        writer
    }

    /// The widest group index of layer `j`: clusters are 3 levels; OBMA_S packs at most
    /// eight BISes in its chunk header (§V-D: width < 4); OBMA_L has one group.
    fn max_width(&self, j: usize) -> u8 {
        match self.variant {
            Variant::L => 0,
            Variant::B => self.strides[j] - 3,
            Variant::S => (self.strides[j] - 3).min(3),
        }
    }

    /// The group width a chunk of layer `j` starts with.
    pub(super) fn initial_width(&self, j: usize) -> u8 {
        match self.config.grouping {
            Grouping::Fixed(w) => w.min(self.max_width(j)),
            Grouping::Adaptive { .. } => 0,
        }
    }

    /// The width adaptive grouping gives `count` updates: the `i` with `count` in
    /// `[f_{i-1}, f_i)`, capped at the layer's widest.
    fn width_for(&self, j: usize, count: u32) -> u8 {
        let Grouping::Adaptive { f0, beta, .. } = self.config.grouping else {
            return self.initial_width(j);
        };
        let mut w = 0;
        let mut f = f0 as u64;
        while w < self.max_width(j) && count as u64 >= f {
            w += 1;
            f = f.saturating_mul(beta as u64);
        }
        w
    }

    /// Adaptive grouping's online addition: whether the `count`-th update of a chunk of
    /// layer `j` and width `w` widens it (`width_for(j, count) > w`, without the loop).
    #[inline]
    pub(crate) fn widens(&self, j: usize, count: u32, w: u8) -> bool {
        // `thresholds` holds `u64::MAX` unless the grouping is adaptive, and from the
        // layer's widest on.
        count as u64 >= self.thresholds[j][w as usize & 7]
    }

    // ---- building -------------------------------------------------------------------

    /// Builds every structure of `rib` into the empty layout `t`.
    pub(crate) fn fill<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
    ) -> Result<(), Full> {
        self.collect_fig13 = self.config.fig13;
        let mut sc = self.scratch[0].take().unwrap_or_default();
        let window = Prefix::<A>::DEFAULT;
        paint(rib, &window, self.dpa_bits, &mut sc, false);
        for &x in &sc.deeper {
            let e = extend(&window, x, self.dpa_bits);
            let id = self.build_chunk(t, rib, 0, e, sc.fpa[x as usize])?;
            sc.fpa[x as usize] = t.lim + id;
        }
        for (x, &v) in sc.fpa.iter().enumerate() {
            let raw = match self.dpa_raw(t, v) {
                Ok(raw) => raw,
                Err(e) => {
                    self.scratch[0] = Some(sc);
                    return Err(e);
                }
            };
            // SAFETY: nothing is published yet; the DPA is committed whole.
            unsafe { t.dpa.write(x, E::from_u32(raw)) };
        }
        self.scratch[0] = Some(sc);
        for (p, _) in rib.iter() {
            if p.len() <= self.dpa_bits {
                let slot = self.dpa_slot(&p);
                set_bit(&mut self.dpa_presence, slot, true);
            }
        }
        self.collect_fig13 = false;
        self.routes = rib.len();
        self.publish_fill(t);
        Ok(())
    }

    fn publish_fill<E: Word + AtomicWord>(&self, t: &Layout<A, E>) {
        let bytes = (t.dpa.committed() + self.live_group_words) * core::mem::size_of::<E>()
            + (self.live_chunk_words + self.live_ids + self.dict_len as usize) * 4
            + group::INDEX_TABLE.len();
        t.fill
            .bytes
            .store(bytes, core::sync::atomic::Ordering::Relaxed);
    }

    /// The DPA word that stands for `v` (a next hop, or `lim + id`): `v` itself, or with a
    /// DPA dictionary `dpa_lim + id` for a chunk and a next hop's slot — appended (and
    /// written, before any DPA element can name it) the first time the DPA holds it.
    pub(crate) fn dpa_raw<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        v: u32,
    ) -> Result<u32, Full> {
        let Some(dict) = &t.dict else {
            return Ok(v);
        };
        let max = (1u64 << E::WIDTH.bits()) - 1;
        if v >= t.lim {
            let raw = (v - t.lim) as u64 + t.dpa_lim as u64;
            return if raw <= max {
                Ok(raw as u32)
            } else {
                Err(Full)
            };
        }
        let i = v as usize;
        if let Some(&s) = self.dict_slots.get(i) {
            if s != u32::MAX {
                return Ok(s);
            }
        }
        let s = self.dict_len;
        if s >= t.dpa_lim {
            return Err(Full);
        }
        // SAFETY: the writer grows its own arena; the slot is fresh (never published).
        unsafe {
            if !dict.grow(s as usize + 1) {
                return Err(Full);
            }
            dict.write(s as usize, v);
        }
        if self.dict_slots.len() <= i {
            self.dict_slots.resize(i + 1, u32::MAX);
        }
        self.dict_slots[i] = s;
        self.dict_len += 1;
        Ok(s)
    }

    /// Publishes `v` (a next hop, or `lim + id` of a complete chunk) as DPA element `x`:
    /// one atomic store.
    pub(crate) fn dpa_set<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        x: usize,
        v: u32,
    ) -> Result<(), Full> {
        let raw = self.dpa_raw(t, v)?;
        assert!(x < 1usize << t.dpa_bits, "DPA element {x} out of range");
        // SAFETY: the DPA is committed whole; one atomic store of a switch word, whose
        // dictionary slot (if any) was written before.
        unsafe { t.dpa.store_release(x, E::from_u32(raw)) };
        Ok(())
    }

    pub(super) fn alloc_id<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        j: usize,
    ) -> Result<u32, Full> {
        let id = self.ids[j].alloc(1);
        let limit = if j == 0 {
            self.id_limit0
        } else {
            self.id_limit
        };
        if id >= limit as usize {
            self.ids[j].free(id, 1);
            return Err(Full);
        }
        // SAFETY: the writer grows its own arenas.
        if !unsafe { t.dirs[j].grow(self.ids[j].top()) } {
            return Err(Full);
        }
        let words = self.presence_words[j];
        if self.presence[j].len() < (id + 1) * words {
            self.presence[j].resize((id + 1) * words, 0);
        }
        let recs = &mut self.recs[j];
        if recs.len() <= id {
            recs.resize(
                id + 1,
                ChunkRec {
                    root: Prefix::DEFAULT,
                    off: 0,
                    words: 0,
                    width: 0,
                    sparse: false,
                    direct: false,
                    bis: 0,
                    default: 0,
                    counter: 0,
                    live: false,
                },
            );
        }
        self.live_ids += 1;
        Ok(id as u32)
    }

    pub(super) fn put_group<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        words: &[u32],
    ) -> Result<u32, Full> {
        let off = self.alloc_group(t, words.len())?;
        for (k, &w) in words.iter().enumerate() {
            // SAFETY: the slots are fresh (never published, or reused after their grace
            // period).
            unsafe { t.groups.write(off + k, E::from_u32(w)) };
        }
        Ok(off as u32)
    }

    /// Room for a group of `len` words in the group memory, committed, counted as live:
    /// its offset. The caller writes the group before it publishes it.
    pub(super) fn alloc_group<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        len: usize,
    ) -> Result<usize, Full> {
        let off = self.group_space.alloc(len);
        // SAFETY: the writer grows its own arena.
        if !unsafe { t.groups.grow(self.group_space.top()) } {
            return Err(Full);
        }
        self.live_group_words += len;
        self.live_groups += 1;
        self.counters.new_bytes += (len * core::mem::size_of::<E>()) as u64;
        Ok(off)
    }

    pub(super) fn put_chunk<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        words: &[u32],
    ) -> Result<u32, Full> {
        let off = self.chunk_space.alloc(words.len());
        // SAFETY: as `put_group`.
        unsafe {
            if !t.chunks.grow(self.chunk_space.top()) {
                return Err(Full);
            }
            for (k, &w) in words.iter().enumerate() {
                t.chunks.write(off + k, w);
            }
        }
        self.live_chunk_words += words.len();
        self.counters.new_bytes += (words.len() * 4) as u64;
        Ok(off as u32)
    }

    /// Builds the chunk of layer `j` at `root` (inheriting `default`) and its children,
    /// publishes it in its chunk list, returns its id.
    fn build_chunk<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        root: Prefix<A>,
        default: u32,
    ) -> Result<u32, Full> {
        let id = self.alloc_id(t, j)?;
        let width = self.initial_width(j);
        self.recs[j][id as usize] = ChunkRec {
            root,
            off: 0,
            words: 0,
            width,
            sparse: false,
            direct: false,
            bis: 0,
            default,
            counter: 0,
            live: true,
        };
        self.encode_chunk(t, rib, j, id, width, false)?;
        self.counters.chunks_built += 1;
        Ok(id)
    }

    /// The live element `seg` of chunk `id` of layer `j`.
    fn element<E: Word + AtomicWord>(&self, t: &Layout<A, E>, j: usize, id: u32, seg: u32) -> u32 {
        // SAFETY: the writer reads its own published chunk-list entry.
        let c = unsafe { t.dirs[j].get(id as usize) } as usize;
        match self.variant {
            Variant::B => t.chunk_entry::<VB>(j, c, seg),
            Variant::L => t.chunk_entry::<VL>(j, c, seg),
            Variant::S => t.chunk_entry::<VS>(j, c, seg),
        }
    }

    /// (offset, words) of group `gi` of chunk `id`, and its BIS.
    pub(crate) fn group_at<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
    ) -> (usize, usize, usize) {
        let (g, bis) = self.group_loc(t, j, id, gi);
        (g, self.group_len(t, j, id, g), bis)
    }

    /// (offset, BIS) of group `gi` of chunk `id` of layer `j`.
    #[inline]
    pub(crate) fn group_loc<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
    ) -> (usize, usize) {
        let rec = &self.recs[j][id as usize];
        // SAFETY: the writer reads its own published structures.
        unsafe {
            match self.variant {
                _ if self.variant == Variant::L || rec.direct => {
                    (rec.off as usize, rec.bis as usize)
                }
                Variant::B | Variant::L => (t.chunks.get(rec.off as usize + 1 + gi) as usize, 0),
                Variant::S => {
                    let c = rec.off as usize;
                    let bis = chunk_bis(
                        t.chunks.get(c),
                        t.chunks.get(c + 1),
                        gi as u32,
                        self.strides[j] as u32 - rec.width as u32,
                    );
                    (t.chunks.get(c + 2 + gi) as usize, bis as usize)
                }
            }
        }
    }

    /// Whether the groups of chunk `id` of layer `j` are patched one word at a time
    /// ([`Self::patch_word`]): at most 64 elements, no BIS (OBMA_B, OBMA_L).
    #[inline]
    pub(crate) fn word_groups(&self, j: usize, id: u32) -> bool {
        self.variant != Variant::S
            && self.strides[j] - self.recs[j][id as usize].width
                <= word::WORD_ELEMENTS.trailing_zeros() as u8
    }

    /// Words of the group at `g` of chunk `id` of layer `j`.
    #[inline]
    pub(crate) fn group_len<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        g: usize,
    ) -> usize {
        let n = 1usize << (self.strides[j] - self.recs[j][id as usize].width);
        // SAFETY: the writer reads its own published group.
        let last = unsafe { t.groups.get(g + code_words(n) - 1) }.get();
        group_words(n, last)
    }

    /// Retires chunk `id` of layer `j`, everything below it, and its id.
    fn retire_chunk<E: Word + AtomicWord>(&mut self, t: &Layout<A, E>, j: usize, id: u32) {
        let mut stack = std::mem::take(&mut self.retire_stack);
        stack.push((j as u8, id));
        while let Some((j, id)) = stack.pop() {
            let j = j as usize;
            if j + 1 < self.strides.len() {
                self.push_children(t, j, id, &mut stack);
            }
            self.retire_structure(t, j, id);
            let r = &mut self.recs[j][id as usize];
            r.live = false;
            if r.sparse {
                self.sparse_chunks -= 1;
                r.sparse = false;
            }
            self.live_ids -= 1;
            self.pending.push(Retired::Id { layer: j as u8, id });
        }
        self.retire_stack = stack;
    }

    /// Pushes the chunks of layer `j + 1` that chunk `id` of layer `j` points to: the
    /// pointers among its lookup entries (an element that points has an entry of its own,
    /// no two elements point to one chunk), or among its sparse entries.
    fn push_children<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        out: &mut Vec<(u8, u32)>,
    ) {
        let rec = self.recs[j][id as usize];
        let lim = t.lim;
        if rec.sparse {
            // SAFETY: the writer reads its own published sparse chunk and its entries.
            let k = (unsafe { t.chunks.get(rec.off as usize) } >> 24 & 0x7f) as usize;
            for e in 0..k {
                // SAFETY: as above; `e < k`.
                let (_, v) = unsafe { t.sparse_at(rec.off as usize, e) };
                if v >= lim {
                    out.push((j as u8 + 1, v - lim));
                }
            }
            return;
        }
        let ncw = code_words(1usize << (self.strides[j] - rec.width));
        for gi in 0..1usize << rec.width {
            let (g, len, _) = self.group_at(t, j, id, gi);
            for e in ncw..len {
                // SAFETY: the writer reads its own published group.
                let v = unsafe { t.groups.get(g + e) }.get();
                if v >= lim {
                    out.push((j as u8 + 1, v - lim));
                }
            }
        }
    }

    /// Retires the live structure of chunk `id` (its groups and chunk words).
    fn retire_structure<E: Word + AtomicWord>(&mut self, t: &Layout<A, E>, j: usize, id: u32) {
        let rec = self.recs[j][id as usize];
        let groups = if rec.sparse { 0 } else { 1usize << rec.width };
        for gi in 0..groups {
            let (g, len, _) = self.group_at(t, j, id, gi);
            self.live_group_words -= len;
            self.live_groups -= 1;
            self.pending.push(Retired::Group {
                off: g as u32,
                len: len as u32,
            });
        }
        if rec.words > 0 {
            self.live_chunk_words -= rec.words as usize;
            self.pending.push(Retired::Chunk {
                off: rec.off,
                len: rec.words,
            });
        }
    }

    /// Sets element `seg` of chunk `id` to `v` by Table II's transform of its group, and
    /// publishes the new group.
    fn set_element<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        seg: u32,
        v: u32,
    ) -> Result<(), Full> {
        let rec = self.recs[j][id as usize];
        if rec.sparse {
            let w = rec.width;
            self.counters.chunks_rebuilt += 1;
            return self.encode_chunk(t, rib, j, id, w, true);
        }
        let at = self.spot(t, j, id, seg as usize);
        if at.value == v {
            return Ok(());
        }
        self.set_spot(t, rib, j, id, &at, v)
    }

    /// Publishes `words` as group `gi` of chunk `id`, retiring the group at `g`.
    #[allow(clippy::too_many_arguments)]
    fn replace_group<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
        g: usize,
        len: usize,
        words: &[u32],
    ) -> Result<(), Full> {
        let off = self.put_group(t, words)?;
        self.publish_group(t, j, id, gi, g, len, off as usize)
    }

    /// Publishes the complete group at `off` as group `gi` of chunk `id` (layer `j`), by
    /// one store of its offset, retiring the live group at `g` (`len` words).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn publish_group<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        gi: usize,
        g: usize,
        len: usize,
        off: usize,
    ) -> Result<(), Full> {
        let off = off as u32;
        let rec = self.recs[j][id as usize];
        // SAFETY: the new group is complete; one store of its offset publishes it.
        unsafe {
            match self.variant {
                _ if self.variant == Variant::L || rec.direct => {
                    let entry = if self.variant == Variant::S {
                        // A group beyond the direct entry's reach: rebuild (compacted).
                        direct_entry(off, rec.bis).ok_or(Full)?
                    } else {
                        off
                    };
                    t.dirs[j].store_release(id as usize, entry);
                    self.recs[j][id as usize].off = off;
                }
                _ => {
                    let h = header_words(self.variant);
                    t.chunks.store_release(rec.off as usize + h + gi, off);
                }
            }
        }
        self.counters.pointer_stores += 1;
        self.live_group_words -= len;
        self.live_groups -= 1;
        self.pending.push(Retired::Group {
            off: g as u32,
            len: len as u32,
        });
        Ok(())
    }
}

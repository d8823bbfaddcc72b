//! A chunk's groups in the arena and back: encoding a chunk from its elements (code
//! words, groups, BIS headers, sparse form), resolving its group pointers, decoding it.

use super::super::layout::Layout;
use super::traverse::paint_alone;
use super::*;

impl<A: Address> ObmaWriter<A> {
    /// (Re)builds chunk `id` of layer `j` with group width `width` from `rib` and
    /// publishes it by one store of its chunk-list entry; with `old`, the live structure
    /// is retired and the children it points to are kept, refreshed or retired.
    pub(super) fn encode_chunk<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        width: u8,
        old: bool,
    ) -> Result<(), Full> {
        let rec = self.recs[j][id as usize];
        let s = self.strides[j];
        let mut sc = self.scratch[j + 1].take().unwrap_or_default();
        // A regroup of an OBMA_B chunk (adaptive grouping's online addition or decay)
        // changes no element: the live chunk, decoded, is cut into groups of the new
        // width, without a walk of the `Rib`.
        let live = old && self.variant == Variant::B && width != rec.width;
        // A new chunk below an element that had no longer route, built by a change alone
        // in its batch: the announced route is its only one, and the chunk is painted
        // from it, without a walk of the `Rib`.
        let fresh = self
            .fresh
            .filter(|(p, _)| !old && rec.root.len() < p.len() && rec.root.covers(p));
        if live {
            self.decode_chunk(t, j, id, &mut sc.fpa);
        } else {
            match fresh {
                Some((p, v)) => paint_alone(&p, v, &rec.root, s, rec.default, &mut sc),
                None => paint(rib, &rec.root, self.tops[j] + s, &mut sc, true),
            }
            #[cfg(debug_assertions)]
            if fresh.is_some() {
                let mut check = Scratch::default();
                paint(rib, &rec.root, self.tops[j] + s, &mut check, true);
                debug_assert_eq!(
                    (&check.fpa, &check.deeper, &check.routes),
                    (&sc.fpa, &sc.deeper, &sc.routes),
                    "chunk at {:?} painted from {:?} alone",
                    rec.root,
                    fresh
                );
            }
            // The routes inside the chunk, as the Rib has them now.
            let words = self.presence_words[j];
            let bits = &mut self.presence[j][id as usize * words..(id as usize + 1) * words];
            bits.fill(0);
            for &(b, rel, _) in &sc.routes {
                let slot = (1usize << rel) | b as usize;
                bits[slot / 64] |= 1 << (slot % 64);
            }
            if old {
                self.decode_chunk(t, j, id, &mut sc.old);
            }
            self.resolve_pointers(t, rib, j, &rec.root, s, 0, &mut sc, old)?;
            if self.collect_fig13 {
                self.count_fig13(&sc, s);
            }
        }
        let n = 1usize << (s - width);
        // The new structure.
        sc.words.clear();
        sc.offs.clear();
        let mut sparse = false;
        // The BIS a direct OBMA_S chunk-list entry carries.
        let mut bis = 0u8;
        let (off, words) = match self.variant {
            Variant::L => {
                group::encode(&sc.fpa, 0, &mut sc.words);
                (self.put_group(t, &sc.words)?, 0)
            }
            Variant::B => {
                for gi in 0..1usize << width {
                    sc.words.clear();
                    group::encode(&sc.fpa[gi * n..(gi + 1) * n], 0, &mut sc.words);
                    let g = self.put_group(t, &sc.words)?;
                    sc.offs.push(g);
                }
                if width == 0 {
                    (sc.offs[0], 0)
                } else {
                    sc.words.clear();
                    sc.words.push((width as u32) << 24);
                    sc.words.extend_from_slice(&sc.offs);
                    (self.put_chunk(t, &sc.words)?, sc.words.len() as u32)
                }
            }
            Variant::S => {
                if let Some(entries) = sparse_entries(&sc, s, rec.default, self.config.sparse_k) {
                    sparse = true;
                    sc.words.clear();
                    sc.words.push(1 << 31 | (entries.len() as u32) << 24);
                    for (key, value) in entries {
                        if E::WIDTH.bits() == 16 {
                            sc.words.push(key << 16 | value);
                        } else {
                            sc.words.extend([key, value]);
                        }
                    }
                } else {
                    let mut all = 0u64;
                    for gi in 0..1usize << width {
                        let part = &sc.fpa[gi * n..(gi + 1) * n];
                        let bis = match self.config.bis {
                            BisSearch::Greedy => group::greedy_bis(part),
                            BisSearch::Optimal => group::optimal_bis(part),
                            BisSearch::Off => 0,
                        };
                        all |= (bis as u64) << (gi * (s - width) as usize);
                        sc.words.clear();
                        group::encode(part, bis, &mut sc.words);
                        let g = self.put_group(t, &sc.words)?;
                        sc.offs.push(g);
                    }
                    sc.words.clear();
                    sc.words
                        .push((width as u32) << 24 | (all & 0xff_ffff) as u32);
                    sc.words.push((all >> 24) as u32);
                    sc.words.extend_from_slice(&sc.offs);
                }
                // One group: named with its BIS by the chunk-list entry when it fits.
                if !sparse && width == 0 && direct_entry(sc.offs[0], 0).is_some() {
                    bis = (sc.words[0] & 0xff) as u8;
                    (sc.offs[0], 0)
                } else {
                    (self.put_chunk(t, &sc.words)?, sc.words.len() as u32)
                }
            }
        };
        let direct = self.variant != Variant::L && words == 0;
        // Publish, then retire what the old structure held.
        if old {
            self.retire_structure(t, j, id);
        }
        // SAFETY: the structure at `off` is complete; one store makes it visible.
        let entry = match (words > 0, self.variant) {
            (true, _) => STRUCTURE | off,
            (false, Variant::S) => direct_entry(off, bis).expect("placed only when it fits"),
            (false, _) => off,
        };
        unsafe { t.dirs[j].store_release(id as usize, entry) };
        self.counters.pointer_stores += 1;
        let r = &mut self.recs[j][id as usize];
        r.off = off;
        r.words = words;
        r.direct = direct;
        r.bis = bis;
        r.width = width;
        if sparse != r.sparse {
            if sparse {
                self.sparse_chunks += 1;
            } else {
                self.sparse_chunks -= 1;
            }
        }
        r.sparse = sparse;
        self.scratch[j + 1] = Some(sc);
        Ok(())
    }

    /// Turns the deeper elements of a painted window (`sc.deeper`, element indices from
    /// `base`) into pointers: kept (refreshing a child whose inherited value changed),
    /// or built; with `old` (the window's previous values in `sc.old`), pointers that
    /// are gone retire their chunks.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn resolve_pointers<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        window: &Prefix<A>,
        bits: u8,
        base: usize,
        sc: &mut Scratch,
        old: bool,
    ) -> Result<(), Full> {
        let lim = t.lim;
        let last = j + 1 == self.strides.len();
        debug_assert!(
            !last || sc.deeper.is_empty(),
            "no route is longer than the address"
        );
        for k in 0..sc.deeper.len() {
            let x = sc.deeper[k] as usize;
            let lpm = sc.fpa[x];
            let prev = if old { sc.old[x] } else { 0 };
            if prev >= lim {
                self.inherit(t, rib, j + 1, prev - lim, lpm)?;
                sc.fpa[x] = prev;
            } else {
                let e = extend(window, (base + x) as u32, bits);
                let cid = self.build_chunk(t, rib, j + 1, e, lpm)?;
                sc.fpa[x] = lim + cid;
            }
        }
        if old {
            for x in 0..sc.old.len() {
                let prev = sc.old[x];
                if prev >= lim && sc.fpa[x] != prev {
                    self.retire_chunk(t, j + 1, prev - lim);
                }
            }
        }
        Ok(())
    }

    /// Decodes chunk `id` of layer `j` into its FPA.
    pub(super) fn decode_chunk<E: Word + AtomicWord>(
        &self,
        t: &Layout<A, E>,
        j: usize,
        id: u32,
        out: &mut Vec<u32>,
    ) {
        let s = self.strides[j] as u32;
        out.clear();
        let rec = self.recs[j][id as usize];
        if !rec.sparse {
            // Group by group, straight from the arena.
            let n = 1usize << (s - rec.width as u32);
            let ncw = code_words(n);
            for gi in 0..1usize << rec.width {
                let (g, _, bis) = self.group_at(t, j, id, gi);
                let base = out.len();
                out.resize(base + n, 0);
                let mut e = usize::MAX;
                for q in 0..n {
                    // SAFETY: the writer reads its own published group.
                    let cw = unsafe { t.groups.get(g + q / 8) }.get();
                    if group::bit(cw, q) {
                        e = e.wrapping_add(1);
                    }
                    // SAFETY: as above; element 0 always starts an entry.
                    out[base + (q ^ bis)] = unsafe { t.groups.get(g + ncw + e) }.get();
                }
            }
            return;
        }
        // SAFETY: the writer reads its own published chunk-list entry.
        let c = unsafe { t.dirs[j].get(id as usize) } as usize;
        for seg in 0..1u32 << s {
            out.push(match self.variant {
                Variant::B => t.chunk_entry::<VB>(j, c, seg),
                Variant::L => t.chunk_entry::<VL>(j, c, seg),
                Variant::S => t.chunk_entry::<VS>(j, c, seg),
            });
        }
    }
}

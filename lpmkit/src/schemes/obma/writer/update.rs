//! The update path (§VI-B): what a change touches, the 24th-level optimisation, adaptive
//! grouping's online addition and periodic decay, and the [`InPlaceWriter`] glue.

use super::{extend, Full, ObmaWriter, Retired};
use crate::fib::{BuildError, Change, InPlaceWriter, Patched, UpdateStats};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{AtomicWord, Word};
use crate::schemes::obma::layout::{Layout, Variant};
use crate::schemes::obma::Grouping;

impl<A: Address> ObmaWriter<A> {
    /// Applies the change of `p` (already in `rib`); `announced`: `p` is in `rib`, so
    /// every element strictly above it has a longer route below (no walk needed).
    fn change<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        p: Prefix<A>,
        announced: bool,
    ) -> Result<(), Full> {
        let l = p.len();
        let db = self.dpa_bits;
        if l <= db {
            // Home: the DPA. Every element inside `p` takes its new longest match; a
            // chunk below one is rebuilt if what it inherits changed.
            let first = if db == 0 { 0 } else { p.addr().bits_at(0, db) };
            for x in first..first + (1u32 << (db - l)) {
                let e = extend(&Prefix::DEFAULT, x, db);
                let lpm = rib.covering_next_hop(&e).map_or(0, |h| h.get());
                // SAFETY: the DPA is committed whole; the writer reads its own words.
                let old = unsafe { t.dpa.get(x as usize) }.get();
                if old >= t.lim {
                    let cid = old - t.lim;
                    if self.recs[0][cid as usize].default != lpm {
                        self.recs[0][cid as usize].default = lpm;
                        let w = self.recs[0][cid as usize].width;
                        self.encode_chunk(t, rib, 0, cid, w, true)?;
                        self.counters.chunks_rebuilt += 1;
                    }
                } else if old != lpm {
                    // SAFETY: one atomic store of a switch word.
                    unsafe { t.dpa.store_release(x as usize, E::from_u32(lpm)) };
                    self.counters.dpa_stores += 1;
                }
            }
            return Ok(());
        }
        let x = p.addr().bits_at(0, db);
        let e = extend(&Prefix::DEFAULT, x, db);
        // SAFETY: as above.
        let old = unsafe { t.dpa.get(x as usize) }.get();
        let deeper = announced || rib.has_longer(&e);
        if old >= t.lim {
            if deeper {
                return self.change_in(t, rib, 0, old - t.lim, p, announced);
            }
            let lpm = rib.covering_next_hop(&e).map_or(0, |h| h.get());
            // SAFETY: one atomic store; the chunk is retired after it.
            unsafe { t.dpa.store_release(x as usize, E::from_u32(lpm)) };
            self.counters.dpa_stores += 1;
            self.retire_chunk(t, 0, old - t.lim);
        } else if deeper {
            let id = self.build_chunk(t, rib, 0, e, old)?;
            // SAFETY: the chunk is complete and published in its list.
            unsafe { t.dpa.store_release(x as usize, E::from_u32(t.lim + id)) };
            self.counters.dpa_stores += 1;
        }
        Ok(())
    }

    /// Applies the change of `p` inside chunk `id` of layer `j` (whose root covers `p`).
    fn change_in<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        j: usize,
        id: u32,
        p: Prefix<A>,
        announced: bool,
    ) -> Result<(), Full> {
        let top = self.tops[j];
        let s = self.strides[j];
        let bot = top + s;
        let l = p.len();
        if l > bot {
            // Only whether the element above `p` points to a chunk can change here.
            let seg = p.addr().bits_at(top, s);
            let e = Prefix::new_truncating(p.addr(), bot);
            let old = self.element(t, j, id, seg);
            let deeper = announced || rib.has_longer(&e);
            if self.recs[j][id as usize].sparse && !(old >= t.lim && deeper) {
                // A sparse chunk is rebuilt whole; the rebuild builds or retires the
                // chunk below the element.
                let w = self.recs[j][id as usize].width;
                self.counters.chunks_rebuilt += 1;
                return self.encode_chunk(t, rib, j, id, w, true);
            }
            if old >= t.lim {
                if deeper {
                    return self.change_in(t, rib, j + 1, old - t.lim, p, announced);
                }
                let lpm = rib.covering_next_hop(&e).map_or(0, |h| h.get());
                self.set_element(t, rib, j, id, seg, lpm)?;
                self.retire_chunk(t, j + 1, old - t.lim);
            } else if deeper {
                let cid = self.build_chunk(t, rib, j + 1, e, old)?;
                self.set_element(t, rib, j, id, seg, t.lim + cid)?;
            }
            return Ok(());
        }
        // Home chunk.
        let seg0 = p.addr().bits_at(top, s) as usize;
        let count = 1usize << (bot - l);
        let mut done = false;
        if l == bot && self.config.level24 {
            let old = self.element(t, j, id, seg0 as u32);
            let (covering, longer) = rib.probe(&p);
            let lpm = covering.map_or(0, |h| h.get());
            if old >= t.lim {
                // A pointer node: the chunk below inherits the new value.
                let cid = old - t.lim;
                if self.recs[j + 1][cid as usize].default != lpm {
                    self.recs[j + 1][cid as usize].default = lpm;
                    let w = self.recs[j + 1][cid as usize].width;
                    self.encode_chunk(t, rib, j + 1, cid, w, true)?;
                    self.counters.chunks_rebuilt += 1;
                }
                done = true;
            } else if !longer {
                self.set_element(t, rib, j, id, seg0 as u32, lpm)?;
                done = true;
            }
        }
        if !done {
            let rec = self.recs[j][id as usize];
            match self.variant {
                Variant::B => {
                    let d = s - rec.width;
                    for gi in seg0 >> d..=(seg0 + count - 1) >> d {
                        self.rebuild_group(t, rib, j, id, gi)?;
                    }
                }
                Variant::L | Variant::S => {
                    self.encode_chunk(t, rib, j, id, rec.width, true)?;
                    self.counters.chunks_rebuilt += 1;
                }
            }
        }
        // Adaptive grouping, online addition.
        if let Grouping::Adaptive { .. } = self.config.grouping {
            let rec = &mut self.recs[j][id as usize];
            rec.counter = rec.counter.saturating_add(1);
            let (c, w) = (rec.counter, rec.width);
            if self.width_for(j, c) > w {
                self.encode_chunk(t, rib, j, id, w + 1, true)?;
                self.counters.regroups += 1;
            }
        }
        Ok(())
    }

    /// What patches retired since the last call.
    pub(crate) fn take_pending(&mut self) -> Vec<Retired> {
        std::mem::take(&mut self.pending)
    }

    /// Periodic decay (§VI-B1): every chunk whose count fell below its width's range is
    /// rebuilt with the width its count calls for; the counters restart.
    pub(crate) fn decay<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
    ) -> Result<(), Full> {
        self.counters.decays += 1;
        for j in 0..self.strides.len() {
            for id in 0..self.recs[j].len() {
                let rec = self.recs[j][id];
                if !rec.live {
                    continue;
                }
                let w = self.width_for(j, rec.counter);
                if w < rec.width {
                    self.encode_chunk(t, rib, j, id as u32, w, true)?;
                    self.counters.regroups += 1;
                }
                self.recs[j][id].counter = 0;
            }
        }
        Ok(())
    }

    fn apply<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<usize, Full> {
        for c in changes {
            if let Change::Announce(_, nh) = c {
                if nh.get() >= t.lim {
                    // A next hop the entries cannot tell from a chunk pointer.
                    return Err(Full);
                }
            }
            self.change(t, rib, c.prefix(), matches!(c, Change::Announce(..)))?;
            self.counters.updates += 1;
            if let Grouping::Adaptive { decay_updates, .. } = self.config.grouping {
                self.since_decay += 1;
                if decay_updates > 0 && self.since_decay >= decay_updates {
                    self.since_decay = 0;
                    self.decay(t, rib)?;
                }
            }
        }
        self.routes = rib.len();
        self.publish_fill(t);
        Ok(changes.len())
    }
}

impl<A: Address> InPlaceWriter<A> for ObmaWriter<A> {
    type Table = crate::schemes::obma::ObmaTable<A>;
    type Retired = Retired;

    unsafe fn patch(
        &mut self,
        table: &crate::schemes::obma::ObmaTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
        retire: &mut Vec<Retired>,
    ) -> Result<Patched<crate::schemes::obma::ObmaTable<A>>, BuildError> {
        let r =
            crate::schemes::common::with_width!(&table.layout, t => self.apply(t, rib, changes));
        retire.append(&mut self.pending);
        match r {
            Ok(n) => Ok(Patched::InPlace(UpdateStats {
                units_rebuilt: n,
                full_rebuild: false,
            })),
            Err(Full) => {
                // The old table (and what it retired) goes with it.
                retire.clear();
                let counters = self.counters;
                let (t, mut w) = crate::schemes::obma::build_with(rib, &self.config)?;
                w.counters = counters;
                w.counters.full_rebuilds += 1;
                *self = w;
                Ok(Patched::Replaced(
                    Box::new(t),
                    UpdateStats {
                        units_rebuilt: 0,
                        full_rebuild: true,
                    },
                ))
            }
        }
    }

    unsafe fn reuse(&mut self, _table: &crate::schemes::obma::ObmaTable<A>, block: Retired) {
        match block {
            Retired::Chunk { off, len } => self.chunk_space.free(off as usize, len as usize),
            Retired::Group { off, len } => self.group_space.free(off as usize, len as usize),
            Retired::Id { layer, id } => self.ids[layer as usize].free(id as usize, 1),
        }
    }
}

//! The update path (§VI-B): what a change touches, the 24th-level optimisation, adaptive
//! grouping's online addition and periodic decay, and the [`InPlaceWriter`] glue.

use super::traverse::paint;
use super::{extend, keep_covered, set_bit, Full, ObmaWriter, Retired};
use crate::fib::{patch_order, BuildError, Change, InPlaceWriter, Patched, Stats, UpdateStats};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{AtomicWord, Word};
use crate::schemes::obma::layout::Layout;
use crate::schemes::obma::{Grouping, ObmaConfig};

impl<A: Address> ObmaWriter<A> {
    /// Applies the change of `p` (already in `rib`); `announced`: the next hop `p` was
    /// announced with (then `p` is in `rib`, so every element strictly above it has a
    /// longer route below, and the elements it is the longest match of take this value:
    /// no walk needed to know either).
    fn change<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        p: Prefix<A>,
        announced: Option<u32>,
    ) -> Result<(), Full> {
        let l = p.len();
        let db = self.dpa_bits;
        // Alone in its batch, an announced `p` is the only route of every chunk this
        // change builds (a chunk is built below an element that had no longer route).
        self.fresh = match (self.single, announced) {
            (true, Some(v)) => Some((p, v)),
            _ => None,
        };
        if l <= db {
            // Home: the DPA. One level traversal of `p` gives every element inside it
            // its new longest match; a chunk below one inherits it.
            let first = if db == 0 { 0 } else { p.addr().bits_at(0, db) } as usize;
            let slot = self.dpa_slot(&p);
            set_bit(&mut self.dpa_presence, slot, announced.is_some());
            let mut sc = self.scratch[0].take().unwrap_or_default();
            if self.single {
                // As `repaint`: the elements no route inside `p` covers take `p`'s next
                // hop (or the covering route's), the others keep theirs; a chunk below
                // a covered element inherits what it did.
                let count = 1usize << (db - l);
                sc.old.clear();
                // The writer reads its own words.
                sc.old.extend((first..first + count).map(|x| t.dpa_get(x)));
                let v = match announced {
                    Some(v) => v,
                    None => rib.covering_next_hop(&p).map_or(0, |h| h.get()),
                };
                sc.fpa.clear();
                sc.fpa.resize(count, v);
                keep_covered(&self.dpa_presence, 0, db, &p, &sc.old, &mut sc.fpa);
                for k in 0..count {
                    let prev = sc.old[k];
                    if prev >= t.lim && sc.fpa[k] == prev {
                        sc.fpa[k] = self.recs[0][(prev - t.lim) as usize].default;
                    }
                }
            } else {
                paint(rib, &p, db, &mut sc, false);
            }
            let mut r = Ok(());
            for (k, &lpm) in sc.fpa.iter().enumerate() {
                let x = first + k;
                // The writer reads its own words.
                let old = t.dpa_get(x);
                if old >= t.lim {
                    r = self.inherit(t, rib, 0, old - t.lim, lpm);
                    if r.is_err() {
                        break;
                    }
                } else if old != lpm {
                    // One atomic store of a switch word.
                    if let Err(e) = self.dpa_set(t, x, lpm) {
                        r = Err(e);
                        break;
                    }
                    self.counters.dpa_stores += 1;
                }
            }
            self.scratch[0] = Some(sc);
            return r;
        }
        let x = p.addr().bits_at(0, db);
        let e = extend(&Prefix::DEFAULT, x, db);
        // The writer reads its own words.
        let old = t.dpa_get(x as usize);
        if old >= t.lim {
            self.prefetch_chunk(t, 0, old - t.lim);
        }
        // Alone in its batch, a withdrawal leaves a longer route below the element if its
        // chunk holds another (presence bits); else the `Rib` says.
        let deeper = announced.is_some()
            || match (self.single && old >= t.lim).then(|| self.longer_besides(0, old - t.lim, &p))
            {
                Some(Some(known)) => known,
                _ => rib.has_longer(&e),
            };
        if old >= t.lim {
            if deeper {
                return self.change_in(t, rib, 0, old - t.lim, p, announced);
            }
            // Alone in its batch, the change leaves the element's own longest match: the
            // default its chunk inherits.
            let lpm = if self.single {
                self.recs[0][(old - t.lim) as usize].default
            } else {
                rib.covering_next_hop(&e).map_or(0, |h| h.get())
            };
            // One atomic store; the chunk is retired after it.
            self.dpa_set(t, x as usize, lpm)?;
            self.counters.dpa_stores += 1;
            self.retire_chunk(t, 0, old - t.lim);
        } else if deeper {
            let id = self.build_chunk(t, rib, 0, e, old)?;
            // The chunk is complete and published in its list: one atomic store.
            self.dpa_set(t, x as usize, t.lim + id)?;
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
        announced: Option<u32>,
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
            let deeper = announced.is_some()
                || match (self.single && old >= t.lim)
                    .then(|| self.longer_besides(j + 1, old - t.lim, &p))
                {
                    Some(Some(known)) => known,
                    _ => rib.has_longer(&e),
                };
            if self.recs[j][id as usize].sparse && !(old >= t.lim && deeper) {
                // A sparse chunk is rebuilt whole; the rebuild builds or retires the
                // chunk below the element.
                let w = self.recs[j][id as usize].width;
                self.counters.chunks_rebuilt += 1;
                return self.encode_chunk(t, rib, j, id, w, true);
            }
            if old >= t.lim {
                if deeper {
                    self.prefetch_chunk(t, j + 1, old - t.lim);
                    return self.change_in(t, rib, j + 1, old - t.lim, p, announced);
                }
                let lpm = if self.single {
                    self.recs[j + 1][(old - t.lim) as usize].default
                } else {
                    rib.covering_next_hop(&e).map_or(0, |h| h.get())
                };
                self.set_element(t, rib, j, id, seg, lpm)?;
                self.retire_chunk(t, j + 1, old - t.lim);
            } else if deeper {
                let cid = self.build_chunk(t, rib, j + 1, e, old)?;
                self.set_element(t, rib, j, id, seg, t.lim + cid)?;
            }
            return Ok(());
        }
        // Home chunk.
        self.set_presence(j, id, &p, announced.is_some());
        let seg0 = p.addr().bits_at(top, s);
        if l == bot && self.config.level24 {
            // The 24th-level optimisation: one element, no level traversal. An element
            // that is no pointer has no longer route below it (the announcement or
            // withdrawal of `p` adds or removes none), so its new value is `p`'s next hop
            // or, after a withdrawal, the covering route's.
            let old = self.element(t, j, id, seg0);
            let lpm = match announced {
                Some(v) => v,
                None if self.single => self.covering(t, rib, j, id, &p),
                None => rib.covering_next_hop(&p).map_or(0, |h| h.get()),
            };
            if old >= t.lim {
                // A pointer node: the chunk below inherits the new value.
                self.inherit(t, rib, j + 1, old - t.lim, lpm)?;
            } else {
                self.set_element(t, rib, j, id, seg0, lpm)?;
            }
        } else {
            self.repaint(t, rib, j, id, p, announced)?;
        }
        // Adaptive grouping, online addition.
        self.count_update(t, rib, j, id)
    }

    /// Gives back at once what patches retired (no reader shares the table).
    #[inline]
    pub(crate) fn reuse_pending(&mut self) {
        // The common case: the change retired nothing.
        if !self.pending.is_empty() {
            self.free_pending();
        }
    }

    #[inline(never)]
    fn free_pending(&mut self) {
        // Popped in place: the list keeps its capacity.
        while let Some(b) = self.pending.pop() {
            self.free_retired(b);
        }
    }

    /// Gives a retired block back to its free space.
    fn free_retired(&mut self, b: Retired) {
        match b {
            Retired::Chunk { off, len } => self.chunk_space.free(off as usize, len as usize),
            Retired::Group { off, len } => self.group_space.free(off as usize, len as usize),
            Retired::Id { layer, id } => self.ids[layer as usize].free(id as usize, 1),
        }
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
                    self.regroup(t, rib, j, id as u32, w)?;
                }
                self.recs[j][id].counter = 0;
            }
        }
        Ok(())
    }

    /// Applies `changes` (already in `rib`, in patch order); what they retire waits in
    /// `pending`.
    pub(crate) fn apply<E: Word + AtomicWord>(
        &mut self,
        t: &Layout<A, E>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<usize, Full> {
        self.single = changes.len() == 1;
        for c in changes {
            if let Change::Announce(_, nh) = c {
                if nh.get() >= t.lim {
                    // A next hop the entries cannot tell from a chunk pointer.
                    return Err(Full);
                }
            }
            let announced = match c {
                Change::Announce(_, nh) => Some(nh.get()),
                Change::Withdraw(_) => None,
            };
            let p = c.prefix();
            match if self.single {
                self.change_alone(t, rib, &p, announced)
            } else {
                None
            } {
                Some(r) => r?,
                None => self.change(t, rib, p, announced)?,
            }
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
    type Config = ObmaConfig;

    fn build(rib: &Rib<A>, config: &ObmaConfig) -> Result<(Box<Self::Table>, Self), BuildError> {
        let (table, writer) = crate::schemes::obma::build_with(rib, config)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &ObmaConfig {
        &self.config
    }

    fn stats(&self, table: &Self::Table) -> Stats {
        crate::schemes::obma::stats::stats(table, self)
    }

    /// Without readers what a patch retires is reused at once (no reader shares the
    /// table), and a layout limit rebuilds the table in place.
    fn patch_alone(
        &mut self,
        table: &mut Box<Self::Table>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<UpdateStats, BuildError> {
        let changes = if changes.len() <= 1 {
            std::borrow::Cow::Borrowed(changes)
        } else {
            patch_order(changes)
        };
        let r =
            crate::schemes::common::with_width!(&table.layout, t => self.apply(t, rib, &changes));
        match r {
            Ok(n) => {
                self.reuse_pending();
                Ok(UpdateStats {
                    units_rebuilt: n,
                    full_rebuild: false,
                })
            }
            Err(Full) => {
                let counters = self.counters;
                let (fresh, mut w) = crate::schemes::obma::build_with(rib, &self.config)?;
                w.counters = counters;
                w.counters.full_rebuilds += 1;
                **table = fresh;
                *self = w;
                Ok(UpdateStats {
                    units_rebuilt: 0,
                    full_rebuild: true,
                })
            }
        }
    }

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
        self.free_retired(block);
    }
}

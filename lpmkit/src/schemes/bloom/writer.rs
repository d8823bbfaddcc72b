//! Updates in place under readers: announce and withdraw through the counting filters
//! and the tables (§3.1's counting filters, §3.2's "dynamic forwarding tables").
//!
//! **What changes.** A changed prefix of length `l` belongs to one level (the one whose
//! band holds `l`), the DLA (IPv4, `l <= 20`), the default route, or the gate (IPv6,
//! `l > 64`). Its expanded keys at that level — `2^(len − l)` of them — are recomputed
//! from the `Rib` (the longest route of the band covering each, prefix capture included;
//! `cpe::paint`), the DLA entries it covers likewise, a gate /64 gets its ranges again.
//! The windows of one `apply` are merged first, so a key touched by several changes is
//! computed once, from the final `Rib`. Each key whose value differs becomes one
//! operation: *set* (a new key, or a new value) or *remove*.
//!
//! **Order, so that readers see the old or the new answer and never a third.** A lookup's
//! answer is the first level, longest first, that holds its key, else the DLA / default.
//! Sets are applied from the highest level down (the gate, then the levels longest
//! first, then the DLA and the default route), then removals from the lowest level up.
//! While sets run, an address whose old answer sits above the levels being changed keeps
//! it; the first set that can change its answer installs the new one, and later sets lie
//! below it. Removals then run upwards, so the top old entry of an address goes last,
//! exposing the already-installed new answer. (Setting low levels first, or removing top
//! down, would let a lookup fall through to an old entry of a lower level.)
//!
//! **One key.** A new key's filter bits are set (counters incremented) *before* its
//! table bucket is republished; a removed key's bucket is republished *before* its
//! counters are decremented and bits cleared. The filter therefore never hides a key the
//! table holds. A bucket is republished by writing its new block beside the old one and
//! storing the head (one atomic store); the old block is retired. A DLA entry or the
//! default route is one atomic store.
//!
//! **Rebuilds** ([`Patched::Replaced`]): when the keys the batch adds would push a
//! filter's predicted false-positive rate `(1 − e^(−kn/m))^k` past `fpr_bound` (scaled
//! by the filter's own rate at build when that is already above the target), when a
//! prefix's length has no level (per-present-length levels), when one prefix expands
//! past `max_patch_keys`, or when a block arena is full (the rebuild then reserves more).

use core::sync::atomic::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use super::build;
use super::cpe::{self, top_key};
use super::filter::predicted_fpr;
use super::gate;
use super::hint::HINT_BITS;
use super::summary::{self, subs_of, top_of, Entry, TOP_BITS};
use super::table::Exhausted;
use super::{BloomConfig, BloomTable, BloomWriter, DEFAULT_LEVEL, DLA_BITS, DLA_LEVEL, NO_LEVEL};
use crate::fib::{BuildError, Change, InPlaceWriter, Patched, Stats, UpdateStats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// A block retired by an update (reused after its grace period): of a level's block
/// arena, or of the gate's range arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetiredBlock {
    level: u16,
    pos: u32,
    words: u32,
}

/// `RetiredBlock::level` of the range arena.
const RANGES: u16 = u16::MAX;

/// One change to the table.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Op {
    /// Set a level's key (insert or new value).
    Set { level: usize, key: u64, value: u32 },
    /// Remove a level's key.
    Remove { level: usize, key: u64 },
    /// A gate /64 gets these ranges (not empty).
    GateSet { key: u64, ranges: Vec<(u64, u32)> },
    /// A gate /64 has no long route left.
    GateRemove { key: u64 },
    /// A DLA entry.
    Dla { index: usize, value: u32 },
    /// The default route.
    Default(u32),
    /// A listed /32's answer in the summary (a level below every level).
    Answer { top: u32, value: u32 },
}

/// What a patch will do, planned before it stores anything
/// ([`BloomWriter::prepare_ops`]).
#[derive(Debug, Default)]
pub(crate) struct Prepared {
    ops: Vec<Op>,
    /// Level-hint bits to add: `(/32, level bits)`.
    hint: Vec<(u32, u32)>,
    /// /32s the summary lists, with the answer they have before the patch.
    list: Vec<(u32, Entry)>,
    /// Bits to add to listed /32s: `(/32, level bits, /36 bits)`.
    bits: Vec<(u32, u32, u16)>,
}

/// Why the batch needs a rebuild instead.
enum Rebuild {
    /// Keep the arenas' size.
    Plain,
    /// The arenas filled up: reserve more.
    Room,
}

impl<A: Address> InPlaceWriter<A> for BloomWriter<A> {
    type Table = BloomTable<A>;
    type Retired = RetiredBlock;
    type Config = BloomConfig;

    fn build(rib: &Rib<A>, config: &BloomConfig) -> Result<(Box<BloomTable<A>>, Self), BuildError> {
        let (table, writer) = build::build(rib, config, 0)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &BloomConfig {
        &self.config
    }

    fn stats(&self, table: &BloomTable<A>) -> Stats {
        super::stats::collect(table, self).to_stats()
    }

    /// A lookup probes every level's filter, then the tables longest first, then the DLA
    /// (or the default route): independent structures, each read at its own moment, so a
    /// reader descheduled between two of them could combine two generations (docs/updates.md,
    /// "Validated reads"). Readers validate their batches instead. A read that is retried
    /// stays safe whatever mix it saw: filter positions are reduced `mod m`, buckets `mod`
    /// their count, DLA indices have `DLA_BITS` bits; a head names a published block,
    /// complete when its head was stored and not reused before the reader's grace period,
    /// and a block is a count and that many entries (no pointer chain that could loop);
    /// a gate value names a published range block likewise. Every word a patch changes
    /// under readers is accessed atomically: filter words (read-modify-writes, release;
    /// acquire loads), table heads, DLA entries and the default route (release stores,
    /// acquire loads); blocks are written only while unreachable.
    const VALIDATED_READS: bool = true;

    /// Plans the patch without storing anything; a batch the layout cannot take is
    /// rebuilt here, beside the live table, which readers keep reading meanwhile.
    unsafe fn prepare(
        &mut self,
        table: &BloomTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<Option<Patched<BloomTable<A>>>, BuildError> {
        let t0 = Instant::now();
        self.prepared = None;
        match self.prepare_ops(table, rib, changes) {
            Ok(p) => {
                self.prepared = Some(p);
                self.update_seconds += t0.elapsed().as_secs_f64();
                Ok(None)
            }
            Err(why) => {
                self.updates += changes.len() as u64;
                let r = self.rebuild(rib, why);
                self.update_seconds += t0.elapsed().as_secs_f64();
                r.map(Some)
            }
        }
    }

    unsafe fn patch(
        &mut self,
        table: &BloomTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
        retire: &mut Vec<RetiredBlock>,
    ) -> Result<Patched<BloomTable<A>>, BuildError> {
        let t0 = Instant::now();
        self.updates += changes.len() as u64;
        let planned = match self.prepared.take() {
            Some(p) => Ok(p),
            None => self.prepare_ops(table, rib, changes),
        };
        let outcome = match planned {
            Ok(p) => {
                let n = p.ops.len();
                // SAFETY: forwarded from the caller.
                match unsafe { self.apply_prepared(table, p, retire) } {
                    Ok(()) => {
                        self.keys_rewritten += n as u64;
                        Ok(n)
                    }
                    Err(Exhausted) => Err(Rebuild::Room),
                }
            }
            Err(why) => Err(why),
        };
        let r = match outcome {
            Ok(n) => Ok(Patched::InPlace(UpdateStats {
                units_rebuilt: n,
                full_rebuild: false,
            })),
            Err(why) => self.rebuild(rib, why),
        };
        self.update_seconds += t0.elapsed().as_secs_f64();
        r
    }

    unsafe fn reuse(&mut self, table: &BloomTable<A>, b: RetiredBlock) {
        if b.level == RANGES {
            self.ranges_space.free(b.pos as usize, b.words as usize);
            if let Some(t) = table.tops.last() {
                t.0.store(self.ranges_space.top(), Ordering::Relaxed);
            }
        } else {
            let i = b.level as usize;
            let space = &mut self.levels[i].space.space;
            space.free(b.pos as usize, b.words as usize);
            table.tops[i].0.store(space.top(), Ordering::Relaxed);
        }
    }
}

/// Windows `(first, last)` merged: those covered by another one dropped.
fn merge<A: Address>(mut w: Vec<Prefix<A>>) -> Vec<Prefix<A>> {
    w.sort_unstable();
    let mut out: Vec<Prefix<A>> = Vec::with_capacity(w.len());
    for p in w {
        if out.last().is_some_and(|q| q.covers(&p)) {
            continue;
        }
        out.push(p);
    }
    out
}

impl<A: Address> BloomWriter<A> {
    /// The operations that bring `t` in line with `rib` for `changes`.
    fn plan(
        &self,
        t: &BloomTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<Vec<Op>, Rebuild> {
        let nl = t.levels.len();
        let mut windows: Vec<Vec<Prefix<A>>> = vec![Vec::new(); nl];
        let mut dla: Vec<Prefix<A>> = Vec::new();
        let mut default = false;
        let mut gate_keys: Vec<u64> = Vec::new();
        for c in changes {
            let p = c.prefix();
            match self.level_of[p.len() as usize] {
                NO_LEVEL => return Err(Rebuild::Plain),
                DLA_LEVEL => dla.push(p),
                DEFAULT_LEVEL => default = true,
                l if t.levels[l as usize].gate => gate_keys.push(top_key(p.first())),
                l => {
                    let level = &t.levels[l as usize];
                    if 1u64 << (level.len - p.len()).min(63) > self.config.max_patch_keys {
                        return Err(Rebuild::Plain);
                    }
                    windows[l as usize].push(p);
                }
            }
        }
        let mut ops = Vec::new();
        let mut values = Vec::new();
        let hs = &t.hashing;
        for (i, w) in windows.into_iter().enumerate() {
            if w.is_empty() {
                continue;
            }
            let level = &t.levels[i];
            let (mut adds, mut removes) = (0u64, 0u64);
            let step = 1u64 << (cpe::key_bits::<A>() - level.len);
            for window in merge(w) {
                cpe::paint(rib, &window, level.lo, level.len, &mut values);
                let first = top_key(window.first());
                for (j, &v) in values.iter().enumerate() {
                    let key = first + j as u64 * step;
                    let th = if hs.reuses() {
                        hs.filter_hash(key, 0)
                    } else {
                        hs.table_hash(key)
                    };
                    let old = level.table.get(key, th).unwrap_or(0);
                    if old == v {
                        continue;
                    }
                    if v == 0 {
                        removes += 1;
                        ops.push(Op::Remove { level: i, key });
                    } else {
                        adds += (old == 0) as u64;
                        ops.push(Op::Set {
                            level: i,
                            key,
                            value: v,
                        });
                    }
                }
            }
            let n = self.levels[i].space.keys + adds - removes;
            let fpr = predicted_fpr(n, level.filter.m() as u64, level.filter.k());
            if adds > 0 && fpr > self.levels[i].bound {
                return Err(Rebuild::Plain);
            }
        }
        if !gate_keys.is_empty() {
            gate_keys.sort_unstable();
            gate_keys.dedup();
            let level = &t.levels[0];
            let ranges = t.ranges.as_ref().expect("a gate has ranges");
            let (mut adds, mut removes) = (0u64, 0u64);
            for key in gate_keys {
                let new = gate::window_ranges(rib, key);
                let th = if hs.reuses() {
                    hs.filter_hash(key, 0)
                } else {
                    hs.table_hash(key)
                };
                let old = level
                    .table
                    .get(key, th)
                    .map(|pos| gate::read_block(ranges, pos));
                match (old, new.is_empty()) {
                    (None, true) => {}
                    (Some(_), true) => {
                        removes += 1;
                        ops.push(Op::GateRemove { key });
                    }
                    (Some(o), false) if o == new => {}
                    (o, false) => {
                        adds += o.is_none() as u64;
                        ops.push(Op::GateSet { key, ranges: new });
                    }
                }
            }
            let n = self.levels[0].space.keys + adds - removes;
            let fpr = predicted_fpr(n, level.filter.m() as u64, level.filter.k());
            if adds > 0 && fpr > self.levels[0].bound {
                return Err(Rebuild::Plain);
            }
        }
        if let Some(d) = &t.dla {
            let shift = A::BITS - DLA_BITS;
            for window in merge(dla) {
                cpe::paint(rib, &window, 0, DLA_BITS, &mut values);
                let first = build::index_of(window.first(), shift);
                for (j, &v) in values.iter().enumerate() {
                    // SAFETY: below 2^DLA_BITS: committed.
                    if unsafe { d.load_acquire(first + j) } != v {
                        ops.push(Op::Dla {
                            index: first + j,
                            value: v,
                        });
                    }
                }
            }
        }
        if default {
            ops.push(Op::Default(
                rib.get(&Prefix::DEFAULT).map_or(0, NextHop::get),
            ));
        }
        Ok(ops)
    }

    /// Everything the patch of `changes` will do, planned without a store: the
    /// operations, the level-hint bits or the summary's listings, bits and answers. A
    /// batch the layout cannot take (a full hint or summary included) is a rebuild.
    fn prepare_ops(
        &self,
        t: &BloomTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<Prepared, Rebuild> {
        let mut p = Prepared {
            ops: self.plan(t, rib, changes)?,
            ..Prepared::default()
        };
        if t.summary.is_some() {
            self.plan_summary(t, rib, changes, &mut p)?;
        } else if let Some(h) = &t.hint {
            // The level-hint bits of the changed routes longer than /32 (`hint.rs`).
            let mut fresh = BTreeSet::new();
            for c in changes {
                let q = c.prefix();
                let l = self.level_of[q.len() as usize];
                if q.len() > HINT_BITS && usize::from(l) < t.levels.len() {
                    let top = build::hint_top(q.first());
                    if !h.lists(top) {
                        fresh.insert(top);
                    }
                    p.hint.push((top, 1 << l));
                }
            }
            if !h.has_room(fresh.len()) {
                return Err(Rebuild::Plain);
            }
        }
        Ok(p)
    }

    /// Stores what `p` plans: hint bits, or the summary's listings and bits (before any
    /// key is published), then the operations.
    ///
    /// # Safety
    /// The caller is `t`'s one writer (the contract of `patch`).
    unsafe fn apply_prepared(
        &mut self,
        t: &BloomTable<A>,
        p: Prepared,
        retire: &mut Vec<RetiredBlock>,
    ) -> Result<(), Exhausted> {
        if let Some(h) = &t.hint {
            for &(top, bits) in &p.hint {
                let ok = h.add(top, bits);
                debug_assert!(ok, "room checked by prepare_ops");
            }
        }
        if let (Some(s), Some(sw)) = (&t.summary, &mut self.summary) {
            for &(top, e) in &p.list {
                let ok = s.list(top, e);
                debug_assert!(ok, "room checked by plan_summary");
                sw.listed.insert(top);
            }
            for &(top, levels, subs) in &p.bits {
                let slot = s.find(top).expect("a listed /32");
                s.add_bits(slot, levels, subs);
            }
        }
        // SAFETY: forwarded.
        unsafe { self.execute(t, &p.ops, retire) }
    }

    /// The summary's part of a patch (`summary.rs`): the /32s to list (the /32s of the
    /// announced routes longer than /32, and under announced routes of lengths `lo..=32`)
    /// with the answer they have now, the bits of the announced longer routes, and the
    /// answers that change under the changed routes of lengths 1…32.
    fn plan_summary(
        &self,
        t: &BloomTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
        p: &mut Prepared,
    ) -> Result<(), Rebuild> {
        let (Some(s), Some(sw)) = (&t.summary, &self.summary) else {
            return Ok(());
        };
        let mut bits: BTreeMap<u32, (u32, u16)> = BTreeMap::new();
        let mut fresh: BTreeSet<u32> = BTreeSet::new();
        let mut windows: Vec<Prefix<A>> = Vec::new();
        for c in changes {
            let q = c.prefix();
            let len = q.len();
            let present = rib.contains(&q);
            if len > TOP_BITS {
                let l = self.level_of[len as usize];
                if present && usize::from(l) < t.levels.len() {
                    let top = top_of(q.first());
                    let b = bits.entry(top).or_default();
                    b.0 |= 1 << l;
                    b.1 |= subs_of(&q);
                    if !sw.listed.contains(&top) {
                        fresh.insert(top);
                    }
                }
            } else if len >= 1 {
                windows.push(q);
                if present && len >= sw.lo {
                    if 1u64 << (TOP_BITS - len) > self.config.max_patch_keys {
                        return Err(Rebuild::Plain);
                    }
                    let (f, l) = (top_of(q.first()), top_of(q.last()));
                    fresh.extend((f..=l).filter(|top| !sw.listed.contains(top)));
                }
            }
        }
        if !s.has_room(fresh.len()) {
            return Err(Rebuild::Plain);
        }
        // A /32 is listed with the answer it has now, which the `always` levels give.
        let mut now: BTreeMap<u32, u32> = BTreeMap::new();
        for &top in &fresh {
            let (levels, subs) = bits.remove(&top).unwrap_or_default();
            let answer = t.band_answer(top);
            now.insert(top, answer);
            p.list.push((
                top,
                Entry {
                    answer,
                    levels,
                    subs,
                },
            ));
        }
        p.bits
            .extend(bits.into_iter().map(|(top, (l, b))| (top, l, b)));
        for w in merge(windows) {
            let (f, l) = (top_of(w.first()), top_of(w.last()));
            let mut tops: Vec<u32> = sw.listed.range(f..=l).copied().collect();
            tops.extend(fresh.range(f..=l));
            if tops.is_empty() {
                continue;
            }
            tops.sort_unstable();
            let base = rib
                .covering(&w)
                .into_iter()
                .rev()
                .find(|(q, _)| !q.is_empty() && q.len() < w.len())
                .map_or(0, |(_, nh)| nh.get());
            let routes = rib.covered(&w).map(|(q, nh)| (q, nh.get()));
            for (top, value) in
                tops.iter()
                    .zip(summary::answers(base, routes, tops.iter().copied()))
            {
                let old = match now.get(top) {
                    Some(&a) => a,
                    None => s.entry(s.find(*top).expect("a listed /32")).answer,
                };
                if old != value {
                    p.ops.push(Op::Answer { top: *top, value });
                }
            }
        }
        Ok(())
    }

    /// Applies `ops` in the order the module docs give.
    ///
    /// # Safety
    /// The caller is `t`'s one writer (the contract of `patch`).
    unsafe fn execute(
        &mut self,
        t: &BloomTable<A>,
        ops: &[Op],
        retire: &mut Vec<RetiredBlock>,
    ) -> Result<(), Exhausted> {
        let mut blocks: Vec<(u32, u32)> = Vec::new();
        // The summary's answer acts as a level below every level a /32 that has one
        // probes: set after the levels, cleared before them.
        let rank = |op: &Op| -> (u8, usize) {
            match *op {
                Op::GateSet { .. } => (0, 0),
                Op::Set { level, .. } => (0, level),
                Op::Answer { value, .. } if value != 0 => (0, usize::MAX),
                Op::Dla { .. } | Op::Default(_) => (1, 0),
                Op::Answer { .. } => (2, 0),
                Op::Remove { level, .. } => (2, usize::MAX - level),
                Op::GateRemove { .. } => (3, 0),
            }
        };
        let mut order: Vec<&Op> = ops.iter().collect();
        order.sort_by_key(|op| rank(op));
        let hs = t.hashing;
        let th = |key: u64| {
            if hs.reuses() {
                hs.filter_hash(key, 0)
            } else {
                hs.table_hash(key)
            }
        };
        for op in order {
            match *op {
                Op::Set { level, key, value } => {
                    // SAFETY: forwarded.
                    unsafe { self.set(t, level, key, th(key), value, &mut blocks) }?;
                    self.retire_level(t, level, &mut blocks, retire);
                }
                Op::Remove { level, key } => {
                    // SAFETY: forwarded.
                    unsafe { self.remove(t, level, key, th(key), &mut blocks) }?;
                    self.retire_level(t, level, &mut blocks, retire);
                }
                Op::GateSet { key, ref ranges } => {
                    let arena = t.ranges.as_ref().expect("a gate has ranges");
                    // SAFETY: the one writer (caller); the block stays unreachable until
                    // `set` publishes its position.
                    let pos = unsafe { gate::write_block(arena, &mut self.ranges_space, ranges) }?;
                    self.ranges_top(t);
                    // SAFETY: forwarded.
                    let old = unsafe { self.set(t, 0, key, th(key), pos, &mut blocks) };
                    if old.is_err() {
                        self.ranges_space
                            .free(pos as usize, gate::block_words(arena, pos) as usize);
                    }
                    if let Some(old) = old? {
                        retire.push(RetiredBlock {
                            level: RANGES,
                            pos: old,
                            words: gate::block_words(arena, old),
                        });
                    }
                    self.retire_level(t, 0, &mut blocks, retire);
                }
                Op::GateRemove { key } => {
                    let arena = t.ranges.as_ref().expect("a gate has ranges");
                    // SAFETY: forwarded.
                    if let Some(old) = unsafe { self.remove(t, 0, key, th(key), &mut blocks) }? {
                        retire.push(RetiredBlock {
                            level: RANGES,
                            pos: old,
                            words: gate::block_words(arena, old),
                        });
                    }
                    self.retire_level(t, 0, &mut blocks, retire);
                }
                Op::Dla { index, value } => {
                    let d = t.dla.as_ref().expect("a DLA op needs the DLA");
                    // SAFETY: committed; the one writer; a switch word.
                    unsafe { d.store_release(index, value) };
                }
                Op::Default(v) => {
                    // SAFETY: committed; the one writer; a switch word.
                    unsafe { t.default.store_release(0, v) };
                }
                Op::Answer { top, value } => {
                    let s = t.summary.as_ref().expect("an answer op needs the summary");
                    s.set_answer(s.find(top).expect("a listed /32"), value);
                }
            }
        }
        Ok(())
    }

    /// Sets `key` at `level`: the filter first if the key is new, then the table.
    ///
    /// # Safety
    /// The caller is the one writer.
    unsafe fn set(
        &mut self,
        t: &BloomTable<A>,
        level: usize,
        key: u64,
        th: u32,
        value: u32,
        blocks: &mut Vec<(u32, u32)>,
    ) -> Result<Option<u32>, Exhausted> {
        let l = &t.levels[level];
        let w = &mut self.levels[level];
        let fresh = l.table.get(key, th).is_none();
        if fresh {
            // SAFETY: the one writer.
            unsafe { w.counters.add(&l.filter, &t.hashing, key) };
        }
        // SAFETY: the one writer; `w.space` is the table's space.
        let r = unsafe { w.space.set(&l.table, key, th, value, blocks) };
        if r.is_err() && fresh {
            // The key was not published: count it out again.
            // SAFETY: as above.
            unsafe { w.counters.remove(&l.filter, &t.hashing, key) };
        }
        t.tops[level]
            .0
            .store(w.space.space.top(), Ordering::Relaxed);
        r
    }

    /// Removes `key` from `level`: the table first, then the filter.
    ///
    /// # Safety
    /// The caller is the one writer.
    unsafe fn remove(
        &mut self,
        t: &BloomTable<A>,
        level: usize,
        key: u64,
        th: u32,
        blocks: &mut Vec<(u32, u32)>,
    ) -> Result<Option<u32>, Exhausted> {
        let l = &t.levels[level];
        let w = &mut self.levels[level];
        // SAFETY: the one writer; `w.space` is the table's space.
        let old = unsafe { w.space.remove(&l.table, key, th, blocks) }?;
        if old.is_some() {
            // SAFETY: the one writer; the key was counted in when it was set.
            unsafe { w.counters.remove(&l.filter, &t.hashing, key) };
        }
        t.tops[level]
            .0
            .store(w.space.space.top(), Ordering::Relaxed);
        Ok(old)
    }

    fn retire_level(
        &self,
        _t: &BloomTable<A>,
        level: usize,
        blocks: &mut Vec<(u32, u32)>,
        retire: &mut Vec<RetiredBlock>,
    ) {
        retire.extend(blocks.drain(..).map(|(pos, words)| RetiredBlock {
            level: level as u16,
            pos,
            words,
        }));
    }

    fn ranges_top(&self, t: &BloomTable<A>) {
        if let Some(top) = t.tops.last() {
            top.0.store(self.ranges_space.top(), Ordering::Relaxed);
        }
    }

    /// Rebuilds everything from `rib` (more room in the arenas if they filled up),
    /// keeping the counters; the new table replaces the old one.
    fn rebuild(
        &mut self,
        rib: &Rib<A>,
        why: Rebuild,
    ) -> Result<Patched<BloomTable<A>>, BuildError> {
        let room = self.room + matches!(why, Rebuild::Room) as usize;
        let (table, mut w) = build::build(rib, &self.config, room)?;
        w.room = room;
        w.updates = self.updates;
        w.keys_rewritten = self.keys_rewritten;
        w.rebuilds = self.rebuilds + 1;
        w.update_seconds = self.update_seconds;
        *self = w;
        Ok(Patched::Replaced(
            Box::new(table),
            UpdateStats {
                units_rebuilt: self.levels.len(),
                full_rebuild: true,
            },
        ))
    }
}

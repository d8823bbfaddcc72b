//! Building a [`BloomTable`] from a `Rib`: the level plan (which lengths, which bands),
//! the expanded keys of each level, the filters (Eq. 3 sizes, counted keys), the tables,
//! the DLA and the gate.

use core::marker::PhantomData;
use std::time::Instant;

use super::config::{Levels, Resolved};
use super::cpe::{self, key_bits, key_mask};
use super::filter::{self, Counters, Filter};
use super::gate;
use super::hash::FastMod;
use super::hint::{Hint, HINT_BITS};
use super::summary::SummaryWriter;
use super::summary::{self, subs_of, top_of, Entry, Summary, TOP_BITS};
use super::table::Table;
use super::{
    BloomConfig, BloomTable, BloomWriter, Level, LevelWriter, Top, DEFAULT_LEVEL, DLA_BITS,
    DLA_LEVEL, NO_LEVEL,
};
use crate::fib::BuildError;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{check_capacity, ms_since, Arena, FreeSpace};
use crate::simd::Kernels;

/// A level to build: key length `len`, band `lo..=len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub len: u8,
    pub lo: u8,
}

/// The levels of a table and what resolves the rest.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The IPv4 DLA holds lengths `0..=DLA_BITS`.
    pub dla: bool,
    /// Ascending by length.
    pub specs: Vec<Spec>,
    /// A gate for the prefixes longer than the key bits (IPv6 > /64).
    pub gate: bool,
}

impl Plan {
    /// The plan of `levels` for `rib`.
    pub(crate) fn new<A: Address>(rib: &Rib<A>, levels: &Levels) -> Plan {
        let kb = key_bits::<A>();
        let hist = histogram(rib);
        let (dla, lengths): (bool, Vec<u8>) = match levels {
            Levels::Every => (false, (1..=kb).collect()),
            Levels::Present => (false, (1..=kb).filter(|&l| hist[l as usize] > 0).collect()),
            Levels::Ipv4Cpe => (true, vec![24, 32]),
            Levels::Dpcpe { n, optimal: false } => (false, cpe::greedy(&hist, *n, kb)),
            Levels::Dpcpe { n, optimal: true } => (false, cpe::optimal(&hist, *n, kb)),
            Levels::Explicit(v) => (false, v.clone()),
        };
        let per_length = matches!(levels, Levels::Every | Levels::Present);
        let mut specs = Vec::with_capacity(lengths.len());
        let mut prev = if dla { DLA_BITS } else { 0 };
        for len in lengths {
            let lo = if per_length { len } else { prev + 1 };
            specs.push(Spec { len, lo });
            prev = len;
        }
        let gate = A::BITS > kb && rib.iter().any(|(p, _)| p.len() > kb);
        Plan { dla, specs, gate }
    }

    /// Index in lookup order (the gate first, then the longest level down) of spec `i`.
    pub(crate) fn index(&self, i: usize) -> usize {
        self.gate as usize + self.specs.len() - 1 - i
    }

    /// `level_of[len]` for every length `0..=A::BITS`.
    pub(crate) fn level_of<A: Address>(&self) -> Vec<u8> {
        let kb = key_bits::<A>();
        let mut v = vec![NO_LEVEL; A::BITS as usize + 1];
        v[0] = if self.dla { DLA_LEVEL } else { DEFAULT_LEVEL };
        if self.dla {
            v[..=DLA_BITS as usize].fill(DLA_LEVEL);
        }
        for (i, s) in self.specs.iter().enumerate() {
            v[s.lo as usize..=s.len as usize].fill(self.index(i) as u8);
        }
        if self.gate {
            v[kb as usize + 1..].fill(0);
        }
        v
    }
}

/// Routes per length, `0..=key bits` (longer ones not counted).
pub(crate) fn histogram<A: Address>(rib: &Rib<A>) -> Vec<u64> {
    let mut h = vec![0u64; key_bits::<A>() as usize + 1];
    for (p, _) in rib.iter() {
        if let Some(c) = h.get_mut(p.len() as usize) {
            *c += 1;
        }
    }
    h[0] = 0;
    h
}

/// Builds the table and its writer. `room` scales the block arenas' reservation (a
/// rebuild after they filled up asks for more).
pub(crate) fn build<A: Address>(
    rib: &Rib<A>,
    config: &BloomConfig,
    room: usize,
) -> Result<(BloomTable<A>, BloomWriter<A>), BuildError> {
    let t0 = Instant::now();
    let r = config.resolve::<A>()?;
    let plan = Plan::new(rib, &r.levels);
    let name = config.name();
    let hist = histogram(rib);
    // The expanded keys of every level, counted exactly first (prefix capture included).
    let exact: u128 = plan
        .specs
        .iter()
        .map(|s| cpe::actual_keys(rib, s.lo, s.len))
        .fold(0, u128::saturating_add);
    check_capacity(
        name,
        "expanded prefixes",
        config.max_expanded,
        exact.min(u64::MAX as u128) as u64,
    )?;
    let keys: Vec<Vec<(u64, u32)>> = plan
        .specs
        .iter()
        .map(|s| cpe::expand(cpe::band_routes(rib, s.lo, s.len), s.len))
        .collect();
    let gate_blocks = if plan.gate {
        Some(gate::blocks(rib))
    } else {
        None
    };
    let n_max = keys.iter().map(|k| k.len() as u64).max().unwrap_or(0);
    let mut levels: Vec<Option<(Level, LevelWriter)>> = Vec::new();
    levels.resize_with(plan.specs.len() + plan.gate as usize, || None);
    for (i, (s, k)) in plan.specs.iter().zip(&keys).enumerate() {
        let n = if r.symmetric { n_max } else { k.len() as u64 };
        let est = cpe::band_cost(&hist, s.lo as usize - 1, s.len as usize);
        levels[plan.index(i)] = Some(level::<A>(name, &r, *s, false, k, n, config, room, est)?);
    }
    // The gate and its range blocks.
    let mut ranges = None;
    let mut ranges_space = FreeSpace::new(1);
    if let Some(blocks) = gate_blocks {
        let (arena, space, gate_keys) = gate::build_ranges(&blocks, room)
            .ok_or_else(|| no_memory(name, "gate range words", 0))?;
        let spec = Spec {
            len: key_bits::<A>(),
            lo: key_bits::<A>() + 1,
        };
        let n = gate_keys.len() as u64;
        levels[0] = Some(level::<A>(
            name, &r, spec, true, &gate_keys, n, config, room, n as u128,
        )?);
        ranges = Some(arena);
        ranges_space = space;
    }
    let (levels, writers): (Vec<Level>, Vec<LevelWriter>) = levels
        .into_iter()
        .map(|l| l.expect("every level built"))
        .unzip();
    // The DLA, or the default route.
    let dla = if plan.dla {
        let mut a = Arena::<u32>::zeroed(1 << DLA_BITS)
            .ok_or_else(|| no_memory(name, "DLA entries", 1 << DLA_BITS))?;
        let d = a.slice_mut(0..1 << DLA_BITS);
        let shift = A::BITS - DLA_BITS;
        for (p, nh) in rib.iter().filter(|(p, _)| p.len() <= DLA_BITS) {
            let (f, l) = (index_of(p.first(), shift), index_of(p.last(), shift));
            d[f..=l].fill(nh.get());
        }
        Some(a)
    } else {
        None
    };
    let default =
        Arena::<u32>::zeroed(1).ok_or_else(|| no_memory(name, "default route word", 1))?;
    if !plan.dla {
        let nh = rib.get(&Prefix::DEFAULT).map_or(0, NextHop::get);
        // SAFETY: no reader can see the table yet.
        unsafe { default.store_release(0, nh) };
    }
    let tops: Vec<Top> = writers
        .iter()
        .map(|w| Top(w.space.space.top().into()))
        .chain(core::iter::once(Top(ranges_space.top().into())))
        .collect();
    let level_of = plan.level_of::<A>();
    let guided = r.hint && levels.len() <= 32;
    let (summary, summary_writer) = if guided && r.summary {
        let (s, w) = summary_of(rib, &levels, &level_of, config.summary_max);
        (Some(s), Some(w))
    } else {
        (None, None)
    };
    let hint = (guided && summary.is_none()).then(|| hint_of(rib, &levels, &level_of));
    let vector = r.hashing.double_hashing
        && r.hashing.kind.vectorized()
        && (r.hashing.reuses() || r.hashing.table_kind.vectorized());
    let table = BloomTable {
        name,
        hashing: r.hashing,
        levels,
        ranges,
        dla,
        default,
        hint,
        summary,
        kernels: if vector {
            let avx512 = match A::FAMILY {
                crate::Family::V4 => super::AVX512_BY_DEFAULT_V4,
                crate::Family::V6 => super::AVX512_BY_DEFAULT_V6,
            };
            Kernels::new(config.force_scalar, config.isa, avx512)
        } else {
            Kernels::default()
        },
        threads: config.threads,
        tops,
        _family: PhantomData,
    };
    let writer = BloomWriter {
        config: config.clone(),
        levels: writers,
        level_of,
        ranges_space,
        summary: summary_writer,
        prepared: None,
        build_ms: ms_since(t0),
        updates: 0,
        keys_rewritten: 0,
        rebuilds: 0,
        update_seconds: 0.0,
        room,
        _family: PhantomData,
    };
    Ok((table, writer))
}

/// The levels whose band reaches /32 or below (probed for a /32 a hint or summary does not
/// list).
fn always_levels(levels: &[Level]) -> u32 {
    levels
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.gate && l.lo <= HINT_BITS)
        .fold(0u32, |m, (i, _)| m | 1 << i)
}

/// The summary of `rib` (`summary.rs`) and its writer side: the /32s of the routes longer
/// than /32 with their levels and /36s, the /32s under the routes of lengths `lo..=32`
/// (`lo` the smallest that keeps the count within `max`), each with its answer.
fn summary_of<A: Address>(
    rib: &Rib<A>,
    levels: &[Level],
    level_of: &[u8],
    max: u64,
) -> (Summary, SummaryWriter) {
    let mut long: Vec<(u32, Entry)> = rib
        .iter()
        .filter(|(p, _)| p.len() > TOP_BITS)
        .filter_map(|(p, _)| {
            let l = level_of[p.len() as usize];
            (usize::from(l) < levels.len()).then(|| {
                let e = Entry {
                    answer: 0,
                    levels: 1 << l,
                    subs: subs_of(&p),
                };
                (top_of(p.first()), e)
            })
        })
        .collect();
    long.sort_unstable_by_key(|e| e.0);
    let mut merged: Vec<(u32, Entry)> = Vec::with_capacity(long.len());
    for (top, e) in long {
        match merged.last_mut() {
            Some(last) if last.0 == top => {
                last.1.levels |= e.levels;
                last.1.subs |= e.subs;
            }
            _ => merged.push((top, e)),
        }
    }
    let room = max.saturating_sub(merged.len() as u64) as u128;
    let lo = (1..=TOP_BITS)
        .find(|&lo| cpe::actual_keys(rib, lo, TOP_BITS) <= room)
        .unwrap_or(TOP_BITS + 1);
    // The /32s of the routes of lengths lo..=32 (those covered by another one skipped).
    let mut tops: Vec<u32> = Vec::new();
    let mut cover_last: Option<u32> = None;
    for (p, _) in cpe::band_routes(rib, lo, TOP_BITS) {
        let (f, l) = (top_of(p.first()), top_of(p.last()));
        if cover_last.is_some_and(|c| f <= c) {
            continue;
        }
        cover_last = Some(l);
        tops.extend(f..=l);
    }
    // Merge both (each ascending).
    let mut entries: Vec<(u32, Entry)> = Vec::with_capacity(merged.len() + tops.len());
    let (mut i, mut j) = (0, 0);
    while i < merged.len() || j < tops.len() {
        let take_long = j == tops.len() || (i < merged.len() && merged[i].0 <= tops[j]);
        if take_long {
            if j < tops.len() && tops[j] == merged[i].0 {
                j += 1;
            }
            entries.push(merged[i]);
            i += 1;
        } else {
            entries.push((tops[j], Entry::default()));
            j += 1;
        }
    }
    let answers = summary::answers(
        0,
        rib.iter().map(|(p, nh)| (p, nh.get())),
        entries.iter().map(|e| e.0),
    );
    for (e, a) in entries.iter_mut().zip(answers) {
        e.1.answer = a;
    }
    let writer = SummaryWriter {
        listed: entries.iter().map(|e| e.0).collect(),
        lo,
    };
    (Summary::new(&entries, always_levels(levels)), writer)
}

/// The level hint of `rib` (`hint.rs`): every route longer than /32 names its level under
/// its /32; the levels whose band reaches /32 or below are probed always.
fn hint_of<A: Address>(rib: &Rib<A>, levels: &[Level], level_of: &[u8]) -> Hint {
    let always = always_levels(levels);
    let mut entries: Vec<(u32, u32)> = rib
        .iter()
        .filter(|(p, _)| p.len() > HINT_BITS)
        .filter_map(|(p, _)| {
            let l = level_of[p.len() as usize];
            (usize::from(l) < levels.len()).then(|| (hint_top(p.first()), 1u32 << l))
        })
        .collect();
    entries.sort_unstable();
    entries.dedup();
    // One entry per /32: its bits or-ed.
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(entries.len());
    for (top, bits) in entries {
        match merged.last_mut() {
            Some(last) if last.0 == top => last.1 |= bits,
            _ => merged.push((top, bits)),
        }
    }
    Hint::new(&merged, always)
}

/// The first [`HINT_BITS`] bits of `a` (IPv6).
#[inline(always)]
pub(crate) fn hint_top<A: Address>(a: A) -> u32 {
    (a.to_u128() >> (A::BITS - HINT_BITS)) as u32
}

/// The DLA index of `a` (its first `DLA_BITS` bits).
#[inline(always)]
pub(crate) fn index_of<A: Address>(a: A, shift: u8) -> usize {
    (a.to_u128() >> shift) as usize
}

fn no_memory(scheme: &str, what: &'static str, n: u64) -> BuildError {
    BuildError::CapacityExceeded {
        scheme: scheme.to_string(),
        what,
        max: 0,
        requested: n,
    }
}

/// Builds one level holding `keys` (sorted `(key, value)`), its filter sized for `n`.
#[allow(clippy::too_many_arguments)]
fn level<A: Address>(
    name: &str,
    r: &Resolved,
    s: Spec,
    gate: bool,
    keys: &[(u64, u32)],
    n: u64,
    config: &BloomConfig,
    room: usize,
    estimate: u128,
) -> Result<(Level, LevelWriter), BuildError> {
    let (m, k) = filter::size(n, config.fpr);
    check_capacity(name, "filter bits", filter::MAX_BITS, m)?;
    debug_assert_eq!(k, r.hashing.k);
    let filter = Filter::new(m, k).ok_or_else(|| no_memory(name, "filter bits", m))?;
    let mut counters = Counters::new(m);
    for &(key, _) in keys {
        // SAFETY: no reader can see the filter yet; this is its one writer.
        unsafe { counters.add(&filter, &r.hashing, key) };
    }
    let buckets = ((keys.len() as f64 / config.ht_load).ceil() as u64).clamp(1, u32::MAX as u64);
    let fm = FastMod::new(buckets as u32);
    let reuses = r.hashing.reuses();
    let mut entries: Vec<(u32, u64, u32)> = keys
        .iter()
        .map(|&(key, v)| {
            let t = if reuses {
                r.hashing.filter_hash(key, 0)
            } else {
                r.hashing.table_hash(key)
            };
            (fm.reduce(t), key, v)
        })
        .collect();
    entries.sort_unstable_by_key(|e| e.0);
    let wide = key_bits::<A>() > 32;
    let words = entries.len() * if wide { 4 } else { 3 } + 1;
    let capacity = words.saturating_mul(3 + 2 * room) + (1 << 16);
    let (table, space) = Table::build(buckets as u32, wide, &entries, capacity)
        .ok_or_else(|| no_memory(name, "hash table words", words as u64))?;
    Ok((
        Level {
            len: s.len,
            lo: s.lo,
            mask: key_mask::<A>(s.len),
            gate,
            filter,
            table,
        },
        LevelWriter {
            counters,
            space,
            estimate,
            bound: r
                .bound
                .max(filter::predicted_fpr(keys.len() as u64, m, k) * r.bound / config.fpr),
        },
    ))
}

/// See [`Bloom::check_against`](super::Bloom::check_against).
#[cfg(any(test, feature = "test-hooks"))]
pub(crate) fn check_against<A: Address>(
    t: &BloomTable<A>,
    w: &BloomWriter<A>,
    rib: &Rib<A>,
) -> Result<(), String> {
    for (i, (l, lw)) in t.levels.iter().zip(&w.levels).enumerate() {
        let want = if l.gate {
            let ranges = t.ranges.as_ref().ok_or("a gate without ranges")?;
            let mut got: Vec<(u64, Vec<(u64, u32)>)> = l
                .table
                .entries()
                .into_iter()
                .map(|(k, pos)| (k, gate::read_block(ranges, pos)))
                .collect();
            got.sort();
            let want: Vec<(u64, Vec<(u64, u32)>)> = gate::blocks(rib);
            if got != want {
                return Err(format!("gate: {} /64s, want {}", got.len(), want.len()));
            }
            want.iter().map(|&(k, _)| (k, 0)).collect::<Vec<_>>()
        } else {
            let want = cpe::expand(cpe::band_routes(rib, l.lo, l.len), l.len);
            let mut got = l.table.entries();
            got.sort_unstable();
            if got != want {
                let diff = want
                    .iter()
                    .find(|e| got.binary_search(e).is_err())
                    .map(|e| format!("missing {e:x?}"))
                    .or_else(|| {
                        got.iter()
                            .find(|e| want.binary_search(e).is_err())
                            .map(|e| format!("extra {e:x?}"))
                    });
                return Err(format!(
                    "level {i} (/{}): {} keys, want {}: {}",
                    l.len,
                    got.len(),
                    want.len(),
                    diff.unwrap_or_default()
                ));
            }
            want
        };
        if lw.space.keys != want.len() as u64 {
            return Err(format!(
                "level {i}: the writer counts {} keys, want {}",
                lw.space.keys,
                want.len()
            ));
        }
        for &(key, _) in &want {
            let mut pos = [0u32; super::hash::MAX_FUNCTIONS];
            t.hashing.positions(key, &mut pos);
            if !pos[..l.filter.k() as usize]
                .iter()
                .all(|&h| l.filter.test(h))
            {
                return Err(format!("level {i}: key {key:x} not in its filter"));
            }
        }
    }
    if let Some(h) = &t.hint {
        for (p, _) in rib.iter().filter(|(p, _)| p.len() > HINT_BITS) {
            let l = w.level_of[p.len() as usize];
            if !h.has(hint_top(p.first()), 1 << l) {
                return Err(format!("hint: level {l} missing for {p}"));
            }
        }
    }
    if let (Some(s), Some(sw)) = (&t.summary, &w.summary) {
        check_summary(t, s, sw, &w.level_of, rib)?;
    }
    if let Some(dla) = &t.dla {
        let mut want = Vec::new();
        cpe::paint(rib, &Prefix::DEFAULT, 0, DLA_BITS, &mut want);
        for (i, &w) in want.iter().enumerate() {
            // SAFETY: committed at build.
            let got = unsafe { dla.load_acquire(i) };
            if got != w {
                return Err(format!("DLA[{i:#x}] = {got}, want {w}"));
            }
        }
    } else {
        let want = rib.get(&Prefix::DEFAULT).map_or(0, NextHop::get);
        // SAFETY: committed at build.
        let got = unsafe { t.default.load_acquire(0) };
        if got != want {
            return Err(format!("default route {got}, want {want}"));
        }
    }
    Ok(())
}

/// The summary's invariants (`summary.rs`) against `rib`.
#[cfg(any(test, feature = "test-hooks"))]
fn check_summary<A: Address>(
    t: &BloomTable<A>,
    s: &Summary,
    sw: &SummaryWriter,
    level_of: &[u8],
    rib: &Rib<A>,
) -> Result<(), String> {
    let entry = |top: u32| s.find(top).map(|slot| s.entry(slot));
    // 1: the /32 of every longer route, its level and /36s.
    for (p, _) in rib.iter().filter(|(p, _)| p.len() > TOP_BITS) {
        let l = level_of[p.len() as usize];
        if usize::from(l) >= t.levels.len() {
            continue;
        }
        let e = entry(top_of(p.first())).ok_or(format!("summary: /32 of {p} not listed"))?;
        if e.levels & 1 << l == 0 || e.subs & subs_of(&p) != subs_of(&p) {
            return Err(format!(
                "summary: {p}: level {l} or its /36s missing: {e:?}"
            ));
        }
    }
    // 3: the /32s under the routes of lengths lo..=32 (the first 4096 of each).
    for (p, _) in cpe::band_routes(rib, sw.lo, TOP_BITS) {
        let (f, l) = (top_of(p.first()), top_of(p.last()));
        if let Some(top) = (f..=l.min(f.saturating_add(4095))).find(|&x| entry(x).is_none()) {
            return Err(format!("summary: /32 {top:#x} under {p} not listed"));
        }
    }
    // 2: every listed /32's answer; the writer's list.
    let entries = s.entries();
    if entries.len() != sw.listed.len() || entries.iter().any(|e| !sw.listed.contains(&e.0)) {
        return Err(format!(
            "summary: {} listed, the writer has {}",
            entries.len(),
            sw.listed.len()
        ));
    }
    for (top, e) in entries {
        let p = Prefix::new_truncating(
            A::from_u128((top as u128) << (A::BITS - TOP_BITS)),
            TOP_BITS,
        );
        let want = rib
            .covering(&p)
            .into_iter()
            .rev()
            .find(|(q, _)| !q.is_empty())
            .map_or(0, |(_, nh)| nh.get());
        if e.answer != want {
            return Err(format!("summary: {p} answers {}, want {want}", e.answer));
        }
    }
    Ok(())
}

//! Building DXR from the `Rib` (the control path, §3.1–3.2): ranges, chunks, encoding,
//! and the layout's widening.

use std::collections::HashMap;

use super::update::{Allocator, Control, Counts};
use super::{
    Dxr, DxrConfig, NextHopMode, Tables, FORMAT_LONG, LONG_NEXT_HOP_MAX, MAX_POSITION_SHIFT,
    MAX_SIZE_SHIFT, PAD_WORDS, POSITION_BITS, POSITION_SHIFT, SHORT_NEXT_HOP_MAX, SIZE_MASK,
};
use crate::fib::BuildError;
use crate::nexthop::NextHop;
use crate::prefix::Ipv4;
use crate::rib::Rib;
use crate::schemes::common::ms_since;

/// How `Rib` next-hop ids become the ids stored in the tables.
#[derive(Clone, Debug)]
pub(super) struct Codec {
    mode: NextHopMode,
    /// `Rib` id → local id, in [`NextHopMode::Remapped`].
    to_local: HashMap<u32, u32>,
}

impl Codec {
    pub(super) fn mode(&self) -> NextHopMode {
        self.mode
    }

    /// The local id of `Rib` id `global` (0 = no route), if it has one.
    #[inline]
    pub(super) fn local(&self, global: u32) -> Option<u32> {
        match self.mode {
            NextHopMode::Identity => (global <= LONG_NEXT_HOP_MAX).then_some(global),
            NextHopMode::Remapped if global == 0 => Some(0),
            NextHopMode::Remapped => self.to_local.get(&global).copied(),
        }
    }

    /// The local id of `global`, giving it one (appended to `nh_map`) if it is new and the
    /// descriptor table has room; `None` if the layout cannot hold it.
    pub(super) fn add(&mut self, global: u32, nh_map: &mut Vec<u32>) -> Option<u32> {
        if let Some(l) = self.local(global) {
            return Some(l);
        }
        if self.mode == NextHopMode::Identity || nh_map.len() > LONG_NEXT_HOP_MAX as usize {
            return None;
        }
        let l = nh_map.len() as u32;
        nh_map.push(global);
        self.to_local.insert(global, l);
        Some(l)
    }
}

/// Chooses identity or a descriptor table for the ranges `(first, Rib id)`; returns the
/// codec and the descriptor table (local → `Rib` id; empty for identity).
fn choose_next_hops(
    ranges: &[(u32, u32)],
    config: &DxrConfig,
) -> Result<(Codec, Vec<u32>), BuildError> {
    let max = ranges.iter().map(|r| r.1).max().unwrap_or(0);
    let remap = match config.remap_next_hops {
        Some(r) => r,
        None => max > LONG_NEXT_HOP_MAX && config.widen,
    };
    if !remap {
        if max > LONG_NEXT_HOP_MAX {
            return Err(BuildError::NextHopOverflow {
                scheme: config.name(),
                max: LONG_NEXT_HOP_MAX as u64,
                requested: max as u64,
            });
        }
        let codec = Codec {
            mode: NextHopMode::Identity,
            to_local: HashMap::new(),
        };
        return Ok((codec, Vec::new()));
    }
    // Local ids by descending number of ranges, so the most used fit the short format.
    let mut uses: HashMap<u32, u64> = HashMap::new();
    for r in ranges.iter().filter(|r| r.1 != 0) {
        *uses.entry(r.1).or_default() += 1;
    }
    let mut order: Vec<(u32, u64)> = uses.into_iter().collect();
    if order.len() > LONG_NEXT_HOP_MAX as usize {
        return Err(BuildError::CapacityExceeded {
            scheme: config.name(),
            what: "distinct next hops",
            max: LONG_NEXT_HOP_MAX as u64,
            requested: order.len() as u64,
        });
    }
    order.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut nh_map = Vec::with_capacity(order.len() + 1);
    nh_map.push(0);
    let mut to_local = HashMap::with_capacity(order.len());
    for (global, _) in order {
        to_local.insert(global, nh_map.len() as u32);
        nh_map.push(global);
    }
    let codec = Codec {
        mode: NextHopMode::Remapped,
        to_local,
    };
    Ok((codec, nh_map))
}

/// Splits ranges `(first, next hop)` into the chunks `c0..=c1` of a `2^k`-chunk space.
///
/// `ranges` must be sorted, and its first range must start at or before chunk `c0`'s first
/// address; they must cover the chunks. Calls `f(ca, cb, i, j)` for every run of chunks
/// `ca..=cb` covered by the single range `ranges[i]` (then `j = i + 1`), and for every
/// chunk `ca = cb` holding two or more ranges, `ranges[i..j]` (the first one clipped to the
/// chunk's start).
pub(super) fn for_each_chunk<E>(
    ranges: &[(u32, u32)],
    k: u32,
    c0: u32,
    c1: u32,
    mut f: impl FnMut(u32, u32, usize, usize) -> Result<(), E>,
) -> Result<(), E> {
    let sh = 32 - k;
    let n = ranges.len();
    debug_assert!(n > 0 && ranges[0].0 <= c0 << sh);
    let mut i = 0;
    let mut c = c0;
    while c <= c1 {
        let cstart = c << sh;
        let cend = cstart | (u32::MAX >> k);
        while i + 1 < n && ranges[i + 1].0 <= cstart {
            i += 1;
        }
        let mut j = i + 1;
        while j < n && ranges[j].0 <= cend {
            j += 1;
        }
        if j == i + 1 {
            // Range i covers this chunk and every chunk before the next range's chunk.
            let run_end = if j < n { (ranges[j].0 >> sh) - 1 } else { c1 };
            let run_end = run_end.min(c1);
            f(c, run_end, i, j)?;
            c = run_end + 1;
        } else {
            f(c, c, i, j)?;
            i = j - 1;
            c += 1;
        }
        if c == 0 {
            break; // wrapped past the last chunk (k = 32 never happens, but stay safe)
        }
    }
    Ok(())
}

/// True if a chunk's ranges fit the short format: every range after the first starts on a
/// /24 boundary and every next hop fits 8 bits.
#[inline]
pub(super) fn is_short(rs: &[(u32, u32)]) -> bool {
    rs.iter().all(|r| r.1 <= SHORT_NEXT_HOP_MAX) && rs[1..].iter().all(|r| r.0 & 0xff == 0)
}

/// `v` rounded up to a multiple of `2^shift`.
#[inline]
pub(super) fn round_up(v: usize, shift: u32) -> usize {
    let unit = 1usize << shift;
    (v + unit - 1) & !(unit - 1)
}

/// Words a chunk of `padded` entries occupies (before position alignment).
#[inline]
pub(super) fn chunk_words(padded: usize, short: bool) -> usize {
    if short {
        padded.div_ceil(2)
    } else {
        padded
    }
}

/// Appends the encoding of a chunk starting at `cstart` with ranges `rs` (local next hops;
/// the first may start before `cstart`), padded to `padded` entries with copies of the
/// last, to `out` as little-endian words.
pub(super) fn encode_chunk(
    rs: &[(u32, u32)],
    cstart: u32,
    short: bool,
    padded: usize,
    out: &mut Vec<u32>,
) {
    debug_assert!(rs.len() >= 2 && padded >= rs.len());
    let entry = |i: usize| -> u32 {
        let r = rs[i.min(rs.len() - 1)];
        let off = r.0.saturating_sub(cstart);
        if short {
            debug_assert!(off & 0xff == 0 && off <= 0xffff && r.1 <= 0xff);
            off | r.1
        } else {
            debug_assert!(off <= 0xffff && r.1 <= 0xffff);
            (off << 16) | r.1
        }
    };
    if short {
        for w in 0..padded.div_ceil(2) {
            let lo = entry(2 * w);
            let hi = if 2 * w + 1 < padded {
                entry(2 * w + 1)
            } else {
                0
            };
            out.push((lo | (hi << 16)).to_le());
        }
    } else {
        out.extend((0..padded).map(|i| entry(i).to_le()));
    }
}

/// The lookup-table entry of a chunk at word `pos` (a multiple of `2^pos_shift`).
#[inline]
pub(super) fn full_entry(pos: usize, pos_shift: u32, short: bool, size_field: usize) -> u32 {
    debug_assert!(pos >> pos_shift < 1 << POSITION_BITS);
    debug_assert!(size_field >= 1 && size_field <= SIZE_MASK as usize);
    (((pos >> pos_shift) as u32) << POSITION_SHIFT)
        | if short { 0 } else { FORMAT_LONG }
        | size_field as u32
}

/// The smallest size shift `t` with `max_ranges ≤ 4095 · 2^t`, or the error.
pub(super) fn size_shift_for(max_ranges: usize, config: &DxrConfig) -> Result<u32, BuildError> {
    let limit = if config.widen { MAX_SIZE_SHIFT } else { 0 };
    (0..=limit)
        .find(|&t| max_ranges <= (SIZE_MASK as usize) << t)
        .ok_or(BuildError::CapacityExceeded {
            scheme: config.name(),
            what: "ranges in one chunk",
            max: (SIZE_MASK as u64) << limit,
            requested: max_ranges as u64,
        })
}

/// Words the range table may hold with position shift `s`.
#[inline]
pub(super) fn position_limit(s: u32) -> usize {
    (1usize << POSITION_BITS) << s
}

/// A chunk that uses the range table: its index, its ranges `first..first + ranges` and
/// its format.
struct FullChunk {
    chunk: u32,
    first: u32,
    ranges: u32,
    short: bool,
}

#[inline(never)]
pub(super) fn build(rib: &Rib<Ipv4>, config: &DxrConfig) -> Result<Dxr, BuildError> {
    build_with(rib, config, 0)
}

/// [`build`] with a position shift of at least `min_shift`: an incremental update that
/// overflowed the position field asks for a wider one, and later rebuilds keep it, so a
/// table that hovers at the limit is not rebuilt again and again.
#[inline(never)]
pub(super) fn build_with(
    rib: &Rib<Ipv4>,
    config: &DxrConfig,
    min_shift: u32,
) -> Result<Dxr, BuildError> {
    let t0 = std::time::Instant::now();
    config.validate()?;
    let k = config.k as u32;
    let nchunks = 1usize << k;

    // §3.1: the table as merged ranges (first address, next hop).
    let mut ranges: Vec<(u32, u32)> = Vec::with_capacity(rib.len() + rib.len() / 2 + 1);
    rib.for_each_range(|first, _, nh| ranges.push((first, NextHop::raw(nh))));
    let (codec, nh_map) = choose_next_hops(&ranges, config)?;
    if codec.mode() == NextHopMode::Remapped {
        for r in &mut ranges {
            r.1 = codec.local(r.1).expect("every next hop has a local id");
        }
    }

    // §3.2: chunks; direct ones go straight into the lookup table.
    let mut lt = crate::mem::TableBuf::<u32>::zeroed(nchunks);
    let mut full: Vec<FullChunk> = Vec::new();
    let mut counts = Counts::default();
    let _ = for_each_chunk::<()>(&ranges, k, 0, (nchunks - 1) as u32, |ca, cb, i, j| {
        if j == i + 1 {
            let nh = ranges[i].1;
            lt[ca as usize..=cb as usize].fill(nh << POSITION_SHIFT);
            let n = (cb - ca + 1) as u64;
            counts.direct_chunks += n;
            if nh == 0 {
                counts.empty_chunks += n;
            }
        } else {
            full.push(FullChunk {
                chunk: ca,
                first: i as u32,
                ranges: (j - i) as u32,
                short: is_short(&ranges[i..j]),
            });
        }
        Ok(())
    });

    // Widening: size shift t from the largest chunk, position shift s from the total.
    let max_ranges = full.iter().map(|c| c.ranges as usize).max().unwrap_or(0);
    let t = size_shift_for(max_ranges, config)?;
    let words = |c: &FullChunk| chunk_words(round_up(c.ranges as usize, t), c.short);
    let s_limit = if config.widen { MAX_POSITION_SHIFT } else { 0 };
    let total_for = |s: u32| full.iter().map(|c| round_up(words(c), s)).sum::<usize>();
    let s = (min_shift.min(s_limit)..=s_limit)
        .find(|&s| total_for(s) <= position_limit(s))
        .ok_or_else(|| BuildError::CapacityExceeded {
            scheme: config.name(),
            what: "range table words",
            max: position_limit(s_limit) as u64,
            requested: total_for(s_limit) as u64,
        })?;

    // Encode the full chunks one after the other.
    let mut rt: Vec<u32> = Vec::with_capacity(total_for(s) + PAD_WORDS);
    for c in &full {
        let rs = &ranges[c.first as usize..(c.first + c.ranges) as usize];
        let padded = round_up(rs.len(), t);
        let pos = rt.len();
        encode_chunk(rs, c.chunk << (32 - k), c.short, padded, &mut rt);
        rt.resize(round_up(rt.len(), s), 0);
        lt[c.chunk as usize] = full_entry(pos, s, c.short, padded >> t);
        if c.short {
            counts.short_chunks += 1;
            counts.short_ranges += rs.len() as u64;
        } else {
            counts.long_chunks += 1;
            counts.long_ranges += rs.len() as u64;
        }
    }
    let end = rt.len();
    rt.resize(end + PAD_WORDS, 0);

    let tables = Tables {
        k,
        lt,
        rt,
        nh_map,
        pos_shift: s,
        size_shift: t,
        #[cfg(target_arch = "x86_64")]
        avx2: super::avx2::Token::new(crate::simd::Avx2::unless(config.force_scalar)),
    };
    let ctl = Control::new(config.clone(), codec, Allocator::new(end, s), counts);
    let mut dxr = Dxr { tables, ctl };
    dxr.ctl.build_ms = ms_since(t0);
    Ok(dxr)
}

//! Building DXR from the `Rib` (the control path, §3.1–3.2): ranges, chunks, encoding,
//! and the layout's widening.

use core::sync::atomic::AtomicUsize;

use super::codec::choose_next_hops;
use super::layout::{
    chunk_words, encode_chunk, for_each_chunk, full_entry, is_short, position_limit, round_up,
    size_shift_for, Counts,
};
use super::writer::Control;
use super::{
    DxrConfig, DxrTable, EntryFormat, Fill, NextHopMode, LONG_NEXT_HOP_MAX, MAX_POSITION_SHIFT,
    MAX_SIZE_BITS, PAD_WORDS,
};
use crate::fib::BuildError;
use crate::prefix::Ipv4;
use crate::rib::Rib;
use crate::schemes::common::{ms_since, Arena, FreeSpace};

/// A chunk that uses the range table: its index, its ranges `first..first + ranges` and
/// its format.
struct FullChunk {
    chunk: u32,
    first: u32,
    ranges: u32,
    short: bool,
}

#[inline(never)]
pub(super) fn build(
    rib: &Rib<Ipv4>,
    config: &DxrConfig,
) -> Result<(DxrTable, Control), BuildError> {
    build_with(rib, config, 0)
}

/// The position shift from which the build weighs the re-split entry against the paper's
/// split: a unit of 4 or more words pads a table of many small chunks by a large share,
/// where a 2-word unit pads it by little.
const NARROW_FROM_SHIFT: u32 = 2;

/// [`build`] with a position shift of at least `min_shift`: an incremental update that
/// overflowed the position field asks for a wider one, and later rebuilds keep it, so a
/// table that hovers at the limit is not rebuilt again and again.
#[inline(never)]
pub(super) fn build_with(
    rib: &Rib<Ipv4>,
    config: &DxrConfig,
    min_shift: u32,
) -> Result<(DxrTable, Control), BuildError> {
    let t0 = std::time::Instant::now();
    config.validate()?;
    let k = config.k as u32;
    let nchunks = 1usize << k;

    // §3.1: the table as merged ranges (first address, next hop).
    let mut ranges = rib.project_ranges().ranges;
    let (codec, descriptors) = choose_next_hops(&ranges, config)?;
    if codec.mode() == NextHopMode::Remapped {
        for r in &mut ranges {
            r.1 = codec.local(r.1).expect("every next hop has a local id");
        }
    }

    // §3.2: chunks; direct ones go straight into the lookup table.
    let no_space = |what: &'static str, words: usize| BuildError::CapacityExceeded {
        scheme: config.name(),
        what,
        max: 0,
        requested: (words * 4) as u64,
    };
    let mut lt = Arena::<u32>::zeroed(nchunks)
        .ok_or_else(|| no_space("bytes of memory for the lookup table", nchunks))?;
    let mut full: Vec<FullChunk> = Vec::new();
    // Runs of direct chunks `(first, last, next hop)`, written once the format is chosen.
    let mut direct: Vec<(u32, u32, u32)> = Vec::new();
    let mut counts = Counts::default();
    let _ = for_each_chunk::<()>(&ranges, k, 0, (nchunks - 1) as u32, |ca, cb, i, j| {
        if j == i + 1 {
            let nh = ranges[i].1;
            direct.push((ca, cb, nh));
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

    // Widening (see the module docs): the paper's entry split with the smallest size
    // shift `t` for the largest chunk and the smallest position shift `s` for the total;
    // or an entry whose size field is just wide enough for the largest chunk and whose
    // position field gets the rest, where the paper's needs a position shift of
    // `NARROW_FROM_SHIFT` or more and the re-split entry fewer range-table words (a
    // position shift pads every chunk to its unit; a large table of small chunks fits the
    // re-split entry unpadded).
    let max_ranges = full.iter().map(|c| c.ranges as usize).max().unwrap_or(0);
    let s_limit = if config.widen { MAX_POSITION_SHIFT } else { 0 };
    let words = |c: &FullChunk, t: u32| chunk_words(round_up(c.ranges as usize, t), c.short);
    let total_for = |t: u32, s: u32| full.iter().map(|c| round_up(words(c, t), s)).sum::<usize>();
    let fits = |fmt: EntryFormat, t: u32| {
        (min_shift.min(s_limit)..=s_limit).find(|&s| total_for(t, s) <= position_limit(fmt, s))
    };
    let paper = EntryFormat::PAPER;
    let t = size_shift_for(max_ranges, config)?;
    let narrow = EntryFormat {
        size_bits: (usize::BITS - max_ranges.leading_zeros()).max(1),
    };
    let narrow_fit = match fits(narrow, 0) {
        Some(s) if config.widen && narrow.size_bits <= MAX_SIZE_BITS => Some((narrow, 0, s)),
        _ => None,
    };
    let (fmt, t, s) = match (fits(paper, t), narrow_fit) {
        (Some(sp), Some((nf, nt, ns)))
            if sp >= NARROW_FROM_SHIFT && total_for(nt, ns) < total_for(t, sp) =>
        {
            (nf, nt, ns)
        }
        (Some(sp), _) => (paper, t, sp),
        (None, Some(n)) => n,
        (None, None) => {
            return Err(BuildError::CapacityExceeded {
                scheme: config.name(),
                what: "range table words",
                max: position_limit(paper, s_limit) as u64,
                requested: total_for(t, s_limit) as u64,
            })
        }
    };
    {
        let lt = lt.slice_mut(0..nchunks);
        for &(ca, cb, nh) in &direct {
            lt[ca as usize..=cb as usize].fill(nh << fmt.pos_field());
        }
    }

    // Encode the full chunks one after the other, into a range table that can grow to
    // every position the layout can name.
    let capacity = position_limit(fmt, s) + PAD_WORDS;
    let mut rt_words: Vec<u32> = Vec::with_capacity(total_for(t, s) + PAD_WORDS);
    {
        let lt = lt.slice_mut(0..nchunks);
        for c in &full {
            let rs = &ranges[c.first as usize..(c.first + c.ranges) as usize];
            let padded = round_up(rs.len(), t);
            let pos = rt_words.len();
            encode_chunk(rs, c.chunk << (32 - k), c.short, padded, &mut rt_words);
            rt_words.resize(round_up(rt_words.len(), s), 0);
            lt[c.chunk as usize] = full_entry(fmt, pos, s, c.short, padded >> t);
            if c.short {
                counts.short_chunks += 1;
                counts.short_ranges += rs.len() as u64;
            } else {
                counts.long_chunks += 1;
                counts.long_ranges += rs.len() as u64;
            }
        }
    }
    let end = rt_words.len();
    let mut rt = Arena::<u32>::new(capacity)
        .filter(|rt| {
            // SAFETY: not shared yet.
            unsafe { rt.grow(end + PAD_WORDS) }
        })
        .ok_or_else(|| no_space("bytes of address space for the range table", capacity))?;
    rt.slice_mut(0..end).copy_from_slice(&rt_words);
    drop(rt_words);
    let nh_map = Arena::<u32>::new(if descriptors.is_empty() {
        1
    } else {
        LONG_NEXT_HOP_MAX as usize + 1
    })
    .filter(|m| {
        // SAFETY: not shared yet.
        unsafe { m.grow(descriptors.len()) }
    })
    .ok_or_else(|| {
        no_space(
            "bytes of memory for the next-hop table",
            LONG_NEXT_HOP_MAX as usize,
        )
    })?;
    let mut nh_map = nh_map;
    nh_map
        .slice_mut(0..descriptors.len())
        .copy_from_slice(&descriptors);

    let table = DxrTable {
        k,
        lt,
        rt,
        remap: codec.mode() == NextHopMode::Remapped,
        nh_map,
        pos_shift: s,
        size_shift: t,
        fmt,
        fill: Fill {
            rt_top: AtomicUsize::new(end),
            nh_len: AtomicUsize::new(descriptors.len()),
        },
        name: config.name(),
        kernels: crate::simd::Kernels::new(
            config.force_scalar,
            config.isa,
            super::AVX512_BY_DEFAULT,
        ),
    };
    let mut ctl = Control::new(config.clone(), codec, FreeSpace::new(end), counts);
    ctl.build_ms = ms_since(t0);
    Ok((table, ctl))
}

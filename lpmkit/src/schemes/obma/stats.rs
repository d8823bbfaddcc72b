//! The figures `lpmkit info` shows for OBMA: structure counts per layer, 1s per bitmap,
//! bytes per prefix, Fig. 13's counts at build, and Table III's per-update figures.

use super::group::code_words;
use super::layout::Layout;
use super::writer::ObmaWriter;
use super::ObmaTable;
use crate::fib::{Fib, StatValue, Stats};
use crate::prefix::Address;
use crate::schemes::common::{with_width, AtomicWord, Word};

/// Per-layer counts.
#[derive(Clone, Copy, Debug, Default)]
struct LayerFigures {
    chunks: u64,
    sparse: u64,
    groups: u64,
    clusters: u64,
    ones: u64,
    widths: [u64; 8],
}

fn layer_figures<A: Address, E: Word + AtomicWord>(
    w: &ObmaWriter<A>,
    t: &Layout<A, E>,
    j: usize,
) -> LayerFigures {
    let mut f = LayerFigures::default();
    for (id, rec) in w.recs[j].iter().enumerate() {
        if !rec.live {
            continue;
        }
        f.chunks += 1;
        if rec.sparse {
            f.sparse += 1;
            continue;
        }
        f.widths[rec.width as usize] += 1;
        let n = 1usize << (w.strides[j] - rec.width);
        for gi in 0..1usize << rec.width {
            let (_, len, _) = w.group_at(t, j, id as u32, gi);
            f.groups += 1;
            f.clusters += code_words(n) as u64;
            f.ones += (len - code_words(n)) as u64;
        }
    }
    f
}

pub(super) fn stats<A: Address>(table: &ObmaTable<A>, w: &ObmaWriter<A>) -> Stats {
    let mut st = Stats::new();
    let bytes = table.memory_bytes() as u64;
    st.push("bytes", StatValue::Bytes(bytes));
    st.push(
        "bytes_per_prefix",
        StatValue::Ratio(bytes as f64 / w.routes.max(1) as f64),
    );
    st.push(
        "entry_width",
        StatValue::Text(format!("{}", table.entry_width())),
    );
    if let Some(slots) = table.dpa_dictionary() {
        st.push("dpa_dictionary_slots", StatValue::Count(w.dict_len as u64));
        st.push("dpa_dictionary_capacity", StatValue::Count(slots as u64));
    }
    let partition: Vec<String> = std::iter::once(w.dpa_bits)
        .chain(w.strides.iter().copied())
        .map(|b| b.to_string())
        .collect();
    st.push("partition", StatValue::Text(partition.join("-")));
    st.push(
        "grouping",
        StatValue::Text(format!("{:?}", w.config.grouping)),
    );
    st.push("level24", StatValue::Text(w.config.level24.to_string()));
    if w.variant == super::Variant::S {
        st.push("bis", StatValue::Text(format!("{:?}", w.config.bis)));
        st.push("sparse_k", StatValue::Count(w.config.sparse_k as u64));
    }
    for j in 0..w.strides.len() {
        let f = with_width!(&table.layout, t => layer_figures(w, t, j));
        if f.chunks == 0 {
            continue;
        }
        let l = j + 2;
        st.push(format!("layer{l}_chunks"), StatValue::Count(f.chunks));
        if w.variant == super::Variant::S {
            st.push(
                format!("layer{l}_sparse_chunks"),
                StatValue::Count(f.sparse),
            );
        }
        st.push(format!("layer{l}_groups"), StatValue::Count(f.groups));
        let widths: Vec<String> = f
            .widths
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(w, n)| format!("{w}:{n}"))
            .collect();
        st.push(
            format!("layer{l}_group_widths"),
            StatValue::Text(widths.join(" ")),
        );
        st.push(format!("layer{l}_entries"), StatValue::Count(f.ones));
        st.push(
            format!("layer{l}_ones_per_bitmap"),
            StatValue::Ratio(f.ones as f64 / f.clusters.max(1) as f64),
        );
    }
    let g = w.fig13;
    if g.windows > 0 {
        st.push("fig13_windows_of_16", StatValue::Count(g.windows));
        st.push("fig13_ones_lulea", StatValue::Count(g.lulea));
        st.push("fig13_ones_overlay", StatValue::Count(g.overlay));
        st.push("fig13_ones_bis_greedy", StatValue::Count(g.bis_greedy));
        st.push("fig13_ones_bis_optimal", StatValue::Count(g.bis_optimal));
    }
    st.push("build", StatValue::Millis(w.build_ms));
    let c = w.counters;
    st.push("updates", StatValue::Count(c.updates));
    if c.updates > 0 {
        let per = |v: u64| StatValue::Ratio(v as f64 / c.updates as f64);
        st.push("changed_pointers_per_update", per(c.pointer_stores));
        st.push("modified_dpa_elements_per_update", per(c.dpa_stores));
        st.push("new_bytes_per_update", per(c.new_bytes));
        st.push("entry_stores_per_update", per(c.entry_stores));
        st.push("groups_in_place_per_update", per(c.groups_in_place));
        st.push("groups_rebuilt_per_update", per(c.groups_rebuilt));
        st.push("chunks_rebuilt_per_update", per(c.chunks_rebuilt));
        st.push("traversals_per_update", per(c.traversals));
        st.push("level24_transforms", StatValue::Count(c.splices));
        st.push("groups_rebuilt", StatValue::Count(c.groups_rebuilt));
        st.push("chunks_rebuilt", StatValue::Count(c.chunks_rebuilt));
        st.push("chunks_built", StatValue::Count(c.chunks_built));
        st.push("regroups", StatValue::Count(c.regroups));
        st.push("decays", StatValue::Count(c.decays));
        st.push("full_rebuilds", StatValue::Count(c.full_rebuilds));
    }
    st
}

//! Structure figures (`lpmkit info`): per level the band, keys (actual, and DPCPE's
//! estimate), filter bits, `k`, share of bits set, predicted and measured false-positive
//! rate, table buckets, load and longest chain; the DLA; update counters.

use super::cpe::key_bits;
use super::filter::predicted_fpr;
use super::hash::HashKind;
use super::{BloomTable, BloomWriter, DLA_BITS};
use crate::fib::{StatValue, Stats};
use crate::prefix::Address;
use crate::rng::SplitMix64;

/// Random non-member keys a level's false-positive rate is measured with.
pub const FPR_SAMPLE: usize = 20_000;

/// Figures of one level.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LevelStats {
    /// Key length.
    pub len: u8,
    /// Shortest prefix length of its band (`lo..=len`).
    pub lo: u8,
    /// True for the gate (prefixes longer than 64 bits).
    pub gate: bool,
    /// Keys (expanded prefixes; for the gate, /64s).
    pub keys: u64,
    /// DPCPE's estimate of the keys (prefix capture ignored) at build time.
    pub estimate: u128,
    /// Filter bits `m`.
    pub bits: u64,
    /// Hash functions `k`.
    pub k: u32,
    /// Share of filter bits set.
    pub fill: f64,
    /// `(1 − e^(−kn/m))^k` for the keys held.
    pub fpr_predicted: f64,
    /// Share of `FPR_SAMPLE` random keys not in the level that its filter lets through.
    pub fpr_measured: f64,
    /// Table buckets.
    pub buckets: u64,
    /// Keys per bucket.
    pub load: f64,
    /// The longest chain.
    pub max_chain: u64,
    /// Counters stuck at their maximum.
    pub saturated: u64,
}

/// Figures of a [`Bloom`](super::Bloom) structure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BloomStats {
    /// The filters' hash.
    pub hash: Option<HashKind>,
    /// The tables' hash.
    pub table_hash: Option<HashKind>,
    /// Kirsch–Mitzenmacher double hashing.
    pub double_hashing: bool,
    /// The table index reuses the filter's hash.
    pub reuse: bool,
    /// Target false-positive rate.
    pub fpr: f64,
    /// Levels in lookup order (the gate first).
    pub levels: Vec<LevelStats>,
    /// DLA entries (0 without one).
    pub dla_entries: u64,
    /// Expanded prefixes in the levels (the gate excluded).
    pub expanded: u64,
    /// Milliseconds of the last full build.
    pub build_ms: f64,
    /// Changes passed to `apply`.
    pub updates: u64,
    /// Keys and entries rewritten by `apply`.
    pub keys_rewritten: u64,
    /// Full rebuilds triggered by `apply`.
    pub rebuilds: u64,
    /// The /32 summary (`summary.rs`): `/32`s listed, buckets (cache lines), and the
    /// shortest route length whose /32s are all listed (`None` without a summary).
    pub summary: Option<(u64, u64, u8)>,
}

impl BloomStats {
    /// The figures as `lpmkit info` prints them.
    pub fn to_stats(&self) -> Stats {
        let mut s = Stats::new();
        if let (Some(h), Some(t)) = (self.hash, self.table_hash) {
            s.push("hash", StatValue::Text(format!("{h}/{t}")));
        }
        s.push(
            "km",
            StatValue::Text(if self.double_hashing { "yes" } else { "no" }.into()),
        );
        s.push(
            "reuse",
            StatValue::Text(if self.reuse { "yes" } else { "no" }.into()),
        );
        s.push("fpr", StatValue::Ratio(self.fpr));
        s.push("expanded", StatValue::Count(self.expanded));
        if self.dla_entries > 0 {
            s.push("dla", StatValue::Count(self.dla_entries));
        }
        for l in &self.levels {
            if l.keys == 0 && !l.gate {
                continue;
            }
            let name = if l.gate {
                "gate".to_string()
            } else if l.lo == l.len {
                format!("/{}", l.len)
            } else {
                format!("/{}-{}", l.lo, l.len)
            };
            s.push(
                name,
                StatValue::Text(format!(
                    "keys {} (est. {}) m {} k {} fill {:.3} fpr {:.3}/{:.3} load {:.2} chain {}",
                    l.keys,
                    l.estimate,
                    l.bits,
                    l.k,
                    l.fill,
                    l.fpr_predicted,
                    l.fpr_measured,
                    l.load,
                    l.max_chain
                )),
            );
        }
        if let Some((listed, buckets, lo)) = self.summary {
            s.push(
                "summary",
                StatValue::Text(format!(
                    "{listed} /32s in {buckets} lines ({:.2} per line), all under /{lo}-32 routes",
                    listed as f64 / buckets as f64
                )),
            );
        }
        s.push("build", StatValue::Millis(self.build_ms));
        s.push("updates", StatValue::Count(self.updates));
        s.push("rebuilds", StatValue::Count(self.rebuilds));
        s
    }
}

/// The share of `FPR_SAMPLE` random keys of level `i` not in it that pass its filter.
pub(crate) fn measured_fpr<A: Address>(t: &BloomTable<A>, i: usize) -> f64 {
    let l = &t.levels[i];
    let hs = &t.hashing;
    let kb = key_bits::<A>() as u32;
    let mut rng = SplitMix64::new(0x5eed ^ i as u64);
    let (mut tried, mut passed) = (0u64, 0u64);
    let mut pos = [0u32; super::hash::MAX_FUNCTIONS];
    let mut attempts = 0;
    while tried < FPR_SAMPLE as u64 && attempts < 4 * FPR_SAMPLE {
        attempts += 1;
        let key = (rng.next() >> (64 - kb)) & l.mask;
        let th = hs.positions(key, &mut pos);
        if l.table.get(key, th).is_some() {
            continue;
        }
        tried += 1;
        passed += pos[..l.filter.k() as usize]
            .iter()
            .all(|&h| l.filter.test(h)) as u64;
    }
    if tried == 0 {
        0.0
    } else {
        passed as f64 / tried as f64
    }
}

/// Every figure (measuring the false-positive rates takes a few milliseconds per level).
pub(crate) fn collect<A: Address>(t: &BloomTable<A>, w: &BloomWriter<A>) -> BloomStats {
    let levels: Vec<LevelStats> = t
        .levels
        .iter()
        .zip(&w.levels)
        .enumerate()
        .map(|(i, (l, lw))| {
            let m = l.filter.m() as u64;
            let keys = lw.space.keys;
            let buckets = l.table.buckets() as u64;
            LevelStats {
                len: l.len,
                lo: l.lo,
                gate: l.gate,
                keys,
                estimate: lw.estimate,
                bits: m,
                k: l.filter.k(),
                fill: l.filter.ones() as f64 / m as f64,
                fpr_predicted: predicted_fpr(keys, m, l.filter.k()),
                fpr_measured: measured_fpr(t, i),
                buckets,
                load: keys as f64 / buckets as f64,
                max_chain: (0..buckets as usize)
                    .map(|b| l.table.chain_len(b))
                    .max()
                    .unwrap_or(0) as u64,
                saturated: lw.counters.saturated(),
            }
        })
        .collect();
    BloomStats {
        hash: Some(t.hashing.kind),
        table_hash: Some(t.hashing.table_kind),
        double_hashing: t.hashing.double_hashing,
        reuse: t.hashing.reuses(),
        fpr: w.config.fpr,
        expanded: levels.iter().filter(|l| !l.gate).map(|l| l.keys).sum(),
        levels,
        dla_entries: if t.dla.is_some() { 1 << DLA_BITS } else { 0 },
        build_ms: w.build_ms,
        updates: w.updates,
        keys_rewritten: w.keys_rewritten,
        rebuilds: w.rebuilds,
        summary: t
            .summary
            .as_ref()
            .zip(w.summary.as_ref())
            .map(|(s, sw)| (s.len() as u64, s.buckets(), sw.lo)),
    }
}

/// The figures a table alone knows (no writer): levels, bits, fill.
pub(crate) fn table_stats<A: Address>(t: &BloomTable<A>) -> Stats {
    let mut s = Stats::new();
    s.push(
        "hash",
        StatValue::Text(format!("{}/{}", t.hashing.kind, t.hashing.table_kind)),
    );
    for l in &t.levels {
        s.push(
            if l.gate {
                "gate".to_string()
            } else {
                format!("/{}", l.len)
            },
            StatValue::Text(format!(
                "m {} k {} fill {:.3}",
                l.filter.m(),
                l.filter.k(),
                l.filter.ones() as f64 / l.filter.m() as f64
            )),
        );
    }
    s
}

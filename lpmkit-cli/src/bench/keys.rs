//! The keys a `bench` run measures every scheme on: made for a pattern (or read from a
//! trace), with the reference trie's answer sum they must give.

use anyhow::Context;
use lpmkit::traffic::{self, Pattern};
use lpmkit::{Address, Family, Table};

use super::timing::{self, JitKeys};
use super::{BenchArgs, Mode, Plan};
use crate::progress;

/// The keys every scheme is measured on, and the answer sum they must give.
pub(super) struct Keys<A> {
    pub(super) keys: Vec<A>,
    /// The table's /32 patterns, for IPv6 keys made just in time.
    patterns_v6: Vec<u32>,
    /// The reference trie's answer sum (none when keys are made in the timed loop).
    pub(super) reference: Option<u32>,
    seed: u64,
}

impl<A: Address> Keys<A> {
    pub(super) fn make(
        table: &Table<A>,
        plan: &Plan,
        args: &BenchArgs,
        trace: Option<Vec<A>>,
    ) -> anyhow::Result<Self> {
        let pattern = &plan.pattern;
        let pb = progress::spinner(format!("generating {} keys ({pattern})", args.keys));
        let keys = match trace {
            Some(addrs) => cycled(&addrs, args.keys),
            None => make_keys(table, pattern, args.keys, args.seed)?,
        };
        let patterns_v6 = if A::FAMILY == Family::V6 {
            traffic::v6_patterns(as_v6(&table.rib))
        } else {
            Vec::new()
        };
        pb.finish_and_clear();
        // The dependent mode looks up `seq_key(key, previous answer)`, which equals `key`,
        // so its answers are the reference answers too.
        let reference = (plan.mode != Mode::JustInTime).then(|| {
            let pb = progress::spinner("reference answers (trie)");
            let r = crate::verify::reference_answers(table, &keys);
            pb.finish_and_clear();
            timing::sum_answers(&r)
        });
        Ok(Keys {
            keys,
            patterns_v6,
            reference,
            seed: args.seed,
        })
    }

    /// How the timed loop makes keys just in time.
    pub(super) fn jit(&self, plan: &Plan) -> JitKeys<'_> {
        JitKeys {
            v6: A::FAMILY == Family::V6 && plan.pattern == Pattern::V6Match,
            patterns: &self.patterns_v6,
            seed: self.seed,
        }
    }
}

fn as_v6<A: Address>(rib: &lpmkit::Rib<A>) -> &lpmkit::Rib<u128> {
    (rib as &dyn std::any::Any)
        .downcast_ref::<lpmkit::Rib<u128>>()
        .expect("an IPv6 table")
}

/// Precomputed keys for a pattern.
pub(crate) fn make_keys<A: Address>(
    table: &Table<A>,
    pattern: &Pattern,
    n: usize,
    seed: u64,
) -> anyhow::Result<Vec<A>> {
    Ok(match pattern {
        Pattern::Trace(path) => cycled(&trace_addresses::<A>(path)?, n),
        synthetic => traffic::keys(synthetic, &table.rib, n, seed)?,
    })
}

/// A `trace:` pattern's addresses (at least one).
pub(super) fn trace_addresses<A: Address>(path: &std::path::Path) -> anyhow::Result<Vec<A>> {
    let addrs: Vec<A> = lpmkit::io::read_addresses(path).context("cannot read the trace")?;
    if addrs.is_empty() {
        anyhow::bail!("trace {} holds no {} addresses", path.display(), A::FAMILY);
    }
    Ok(addrs)
}

/// `n` keys replaying `addrs` cyclically.
fn cycled<A: Address>(addrs: &[A], n: usize) -> Vec<A> {
    addrs.iter().copied().cycle().take(n).collect()
}

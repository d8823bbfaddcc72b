//! Two copies of one table's routes compared prefix by prefix: what followed a table
//! against a fresh dump of it.

use core::fmt;
use std::collections::HashSet;

use super::KernelRoutes;
use crate::prefix::{Address, Prefix};

/// Differing prefixes [`Differences::examples`] describes.
const EXAMPLES: usize = 5;

/// How two copies of a table's routes differ ([`KernelRoutes::differences`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Differences<A: Address> {
    /// Prefixes compared: those either copy holds.
    pub prefixes: usize,
    /// Prefixes whose routes differ: any route of the prefix (metric, what it does, its
    /// place in the kernel's order), sorted.
    pub differ: Vec<Prefix<A>>,
    /// Of those, the prefixes whose best route differs (what a lookup answers).
    pub best_differ: usize,
    /// Nexthop objects that differ (present in one copy only, or not alike).
    pub nexthops_differ: usize,
    /// The first few prefixes that differ, each with its routes in both copies
    /// (`PREFIX: «routes» here, «routes» there`).
    pub examples: Vec<String>,
}

impl<A: Address> Differences<A> {
    /// True if the two copies hold the same routes and nexthop objects.
    pub fn is_empty(&self) -> bool {
        self.differ.is_empty() && self.nexthops_differ == 0
    }
}

impl<A: Address> fmt::Display for Differences<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} prefixes compared, {} differ ({} in their best route), {} nexthop objects differ",
            self.prefixes,
            self.differ.len(),
            self.best_differ,
            self.nexthops_differ
        )
    }
}

impl<A: Address> KernelRoutes<A> {
    /// Compares these routes with `other`'s (another copy of the same table, a fresh dump
    /// say), prefix by prefix: every route of each prefix in the kernel's order (metric and
    /// what it does, a route through a nexthop object by the object's id, multipath paths
    /// with their dead marks), the best route as resolved, and the nexthop objects.
    /// Unrepresentable routes are not compared.
    pub fn differences(&self, other: &KernelRoutes<A>) -> Differences<A> {
        let prefixes: HashSet<Prefix<A>> = self
            .routes
            .keys()
            .chain(other.routes.keys())
            .copied()
            .collect();
        let mut out = Differences {
            prefixes: prefixes.len(),
            ..Differences::default()
        };
        for p in prefixes {
            if self.describe(p) != other.describe(p) {
                out.differ.push(p);
                let best = |k: &KernelRoutes<A>| k.rib.get(&p).and_then(|nh| k.target(nh).cloned());
                if best(self) != best(other) {
                    out.best_differ += 1;
                }
            }
        }
        out.differ.sort();
        let show = |k: &KernelRoutes<A>, p| match k.describe(p) {
            d if d.is_empty() => "no route".to_string(),
            d => format!("«{d}»"),
        };
        out.examples = out
            .differ
            .iter()
            .take(EXAMPLES)
            .map(|&p| format!("{p}: {} here, {} there", show(self, p), show(other, p)))
            .collect();
        let ids: HashSet<u32> = self
            .nexthops
            .keys()
            .chain(other.nexthops.keys())
            .copied()
            .collect();
        out.nexthops_differ = ids
            .into_iter()
            .filter(|id| self.nexthops.get(id) != other.nexthops.get(id))
            .count();
        out
    }

    /// The routes of `prefix` in the kernel's order, for reports: `metric M: TARGET`,
    /// `; `-separated (empty if it has none).
    pub fn describe(&self, prefix: Prefix<A>) -> String {
        let Some(list) = self.routes.get(&prefix) else {
            return String::new();
        };
        let parts: Vec<String> = list
            .iter()
            .map(|e| {
                let mut s = format!("metric {}: {}", e.metric, e.route);
                if e.host {
                    s.push_str(" scope host");
                }
                if let Some(src) = e.src {
                    s.push_str(&format!(" src {src}"));
                }
                s
            })
            .collect();
        parts.join("; ")
    }
}

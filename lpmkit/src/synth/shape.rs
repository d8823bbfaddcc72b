//! Structural statistics of a routing table, the figures the generator is calibrated on.

use core::fmt;

use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// The structure of a table: prefix-length mix, nesting, next-hop skew, adjacency and
/// coverage. A default route (`/0`) is counted as a route but never as a cover, so that
/// "nested" means "covered by a more specific route than the default".
///
/// ```
/// use lpmkit::synth::{self, Shape, SynthConfig};
/// let table = synth::generate::<lpmkit::Ipv4>(&SynthConfig { routes: 5_000, ..SynthConfig::ipv4_default() });
/// let s = Shape::of(&table.rib);
/// assert_eq!(s.routes, 5_000);
/// assert!(s.share(24) > 0.5);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    /// Number of routes.
    pub routes: usize,
    /// Address width in bits.
    pub bits: u8,
    /// `histogram[len]` = routes of that length (`bits + 1` entries).
    pub histogram: Vec<usize>,
    /// `depth[d]` = routes covered by exactly `d` other routes (the default route aside).
    pub depth: Vec<usize>,
    /// Nested routes whose next hop equals that of their closest cover.
    pub same_as_cover: usize,
    /// Routes whose sibling (the other half of their parent prefix) is also a route.
    pub siblings: usize,
    /// Number of distinct next hops used.
    pub next_hops: usize,
    /// Routes using the most common next hop.
    pub dominant: usize,
    /// Fraction of the address space covered by some route other than a default route.
    pub covered_fraction: f64,
    /// Distinct range boundaries: addresses where some route starts or one past where
    /// some route ends (a proxy for the range count of range-based schemes).
    pub boundaries: usize,
    /// True if the table has a default route.
    pub default_route: bool,
}

impl Shape {
    /// Measures `rib`.
    pub fn of<A: Address>(rib: &Rib<A>) -> Shape {
        let bits = A::BITS;
        let mut histogram = vec![0usize; bits as usize + 1];
        let mut depth = vec![0usize; bits as usize + 1];
        let mut same_as_cover = 0;
        let mut siblings = 0;
        let mut default_route = false;
        let mut per_nh: Vec<usize> = Vec::new();
        let mut covered = 0f64;
        let mut points: Vec<u128> = Vec::with_capacity(rib.len() * 2);
        let mut ends_at_max = false;
        // Open covers: (last address, next hop).
        let mut stack: Vec<(A, u32)> = Vec::new();
        let space = 2f64.powi(bits as i32);
        for (p, nh) in rib.iter() {
            histogram[p.len() as usize] += 1;
            let id = nh.get() as usize;
            if per_nh.len() <= id {
                per_nh.resize(id + 1, 0);
            }
            per_nh[id] += 1;
            if p.is_empty() {
                default_route = true;
                continue;
            }
            while stack.last().is_some_and(|&(last, _)| last < p.first()) {
                stack.pop();
            }
            depth[stack.len()] += 1;
            match stack.last() {
                Some(&(_, cover_nh)) => same_as_cover += (cover_nh == nh.get()) as usize,
                None => covered += p.size() as f64 / space,
            }
            stack.push((p.last(), nh.get()));
            let parent = p.parent().expect("not the default route");
            let (a, b) = parent.children().expect("a parent has children");
            let sibling: Prefix<A> = if a == p { b } else { a };
            siblings += rib.contains(&sibling) as usize;
            points.push(p.first().to_u128());
            match p.last().checked_inc() {
                Some(next) => points.push(next.to_u128()),
                None => ends_at_max = true,
            }
        }
        points.sort_unstable();
        points.dedup();
        let next_hops = per_nh.iter().filter(|&&c| c > 0).count();
        let dominant = per_nh.iter().copied().max().unwrap_or(0);
        while depth.len() > 1 && *depth.last().unwrap() == 0 {
            depth.pop();
        }
        Shape {
            routes: rib.len(),
            bits,
            histogram,
            depth,
            same_as_cover,
            siblings,
            next_hops,
            dominant,
            covered_fraction: covered,
            boundaries: points.len() + ends_at_max as usize,
            default_route,
        }
    }

    /// Share of routes of length `len` (0 for an empty table).
    pub fn share(&self, len: u8) -> f64 {
        ratio(
            self.histogram.get(len as usize).copied().unwrap_or(0),
            self.routes,
        )
    }

    /// Share of routes longer than `len`.
    pub fn share_longer_than(&self, len: u8) -> f64 {
        ratio(
            self.histogram.iter().skip(len as usize + 1).sum(),
            self.routes,
        )
    }

    /// Number of routes covered by another route (the default route aside).
    pub fn nested(&self) -> usize {
        self.depth.iter().skip(1).sum()
    }

    /// Share of the non-default routes that are nested.
    pub fn nested_share(&self) -> f64 {
        ratio(self.nested(), self.routes - self.default_route as usize)
    }

    /// Share of nested routes with their closest cover's next hop.
    pub fn same_as_cover_share(&self) -> f64 {
        ratio(self.same_as_cover, self.nested())
    }

    /// Share of routes using the most common next hop.
    pub fn dominant_share(&self) -> f64 {
        ratio(self.dominant, self.routes)
    }

    /// Share of routes whose sibling is a route.
    pub fn sibling_share(&self) -> f64 {
        ratio(self.siblings, self.routes)
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

impl fmt::Display for Shape {
    /// A multi-line summary: the main shares, then the histogram as `len:count` pairs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "routes {}, nested {:.1}%, depth {:?}, same next hop as cover {:.1}%",
            self.routes,
            100.0 * self.nested_share(),
            self.depth,
            100.0 * self.same_as_cover_share()
        )?;
        writeln!(
            f,
            "next hops {}, dominant {:.1}%, siblings {:.1}%, covered {:.4}%, boundaries {} ({:.2}/route){}",
            self.next_hops,
            100.0 * self.dominant_share(),
            100.0 * self.sibling_share(),
            100.0 * self.covered_fraction,
            self.boundaries,
            ratio(self.boundaries, self.routes),
            if self.default_route { ", default route" } else { "" }
        )?;
        let hist: Vec<String> = self
            .histogram
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(l, c)| format!("{l}:{c}"))
            .collect();
        write!(f, "lengths {}", hist.join(" "))
    }
}

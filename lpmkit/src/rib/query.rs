//! The [`Rib`]'s read side: exact and longest-prefix lookups, the routes covering or
//! covered by a prefix, ordered iteration, samples and the length histogram.

use super::{Rib, NIL};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};

impl<A: Address> Rib<A> {
    /// The next hop of exactly `prefix`.
    #[inline]
    pub fn get(&self, prefix: &Prefix<A>) -> Option<NextHop> {
        self.exact(prefix)
            .and_then(|i| NextHop::new(self.node(i).nh))
    }

    /// True if `prefix` has a route.
    pub fn contains(&self, prefix: &Prefix<A>) -> bool {
        self.get(prefix).is_some()
    }

    /// Longest-prefix match: the next hop for `addr`.
    #[inline]
    pub fn lookup(&self, addr: A) -> Option<NextHop> {
        let i = self.lookup_node(addr);
        (i != NIL).then(|| NextHop::new(self.node(i).nh).expect("a route"))
    }

    /// Longest-prefix match: the matching prefix and its next hop.
    pub fn lookup_prefix(&self, addr: A) -> Option<(Prefix<A>, NextHop)> {
        let i = self.lookup_node(addr);
        (i != NIL).then(|| self.route(i))
    }

    /// The route of node `i` (which carries one).
    #[inline]
    fn route(&self, i: u32) -> (Prefix<A>, NextHop) {
        let n = self.node(i);
        (n.prefix, NextHop::new(n.nh).expect("a route"))
    }

    /// The node of the longest route containing `addr`, or `NIL`.
    #[inline]
    fn lookup_node(&self, addr: A) -> u32 {
        let (mut cur, mut best) = self.start(&Prefix::host(addr));
        while cur != NIL {
            let n = self.node(cur);
            if !n.prefix.contains(addr) {
                break;
            }
            if n.nh != 0 {
                best = cur;
            }
            if n.prefix.len() == A::BITS {
                break;
            }
            cur = n.child[addr.bit(n.prefix.len()) as usize];
        }
        best
    }

    /// The node of the longest route covering `prefix` (possibly `prefix` itself), or `NIL`.
    #[inline]
    fn covering_node(&self, prefix: &Prefix<A>) -> u32 {
        let (mut cur, mut best) = self.start(prefix);
        while cur != NIL {
            let n = self.node(cur);
            if !n.prefix.covers(prefix) {
                break;
            }
            if n.nh != 0 {
                best = cur;
            }
            if n.prefix.len() == prefix.len() {
                break;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        best
    }

    /// The routes covering `prefix` (including `prefix` itself), shortest first.
    pub fn covering(&self, prefix: &Prefix<A>) -> Vec<(Prefix<A>, NextHop)> {
        let mut out = Vec::new();
        let mut cur = self.root;
        while cur != NIL {
            let n = self.node(cur);
            if !n.prefix.covers(prefix) {
                break;
            }
            if n.nh != 0 {
                out.push(self.route(cur));
            }
            if n.prefix.len() == prefix.len() {
                break;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        out
    }

    /// The longest route covering `prefix` (possibly `prefix` itself).
    pub fn covering_route(&self, prefix: &Prefix<A>) -> Option<(Prefix<A>, NextHop)> {
        let i = self.covering_node(prefix);
        (i != NIL).then(|| self.route(i))
    }

    /// The next hop of the longest route covering `prefix` (possibly `prefix` itself):
    /// [`covering_route`](Self::covering_route) without the prefix.
    #[inline]
    pub(crate) fn covering_next_hop(&self, prefix: &Prefix<A>) -> Option<NextHop> {
        let i = self.covering_node(prefix);
        (i != NIL).then(|| NextHop::new(self.node(i).nh).expect("a route"))
    }

    /// `n` keys inside the table's routes: a route drawn uniformly (with replacement),
    /// then a uniform address of it, as [`crate::traffic::in_routes`] draws them but in
    /// O(n) (routes drawn from the node array, not by a walk of the table). Empty for an
    /// empty table.
    pub(crate) fn sample_keys(&self, n: usize, seed: u64) -> Vec<A> {
        if self.len == 0 {
            return Vec::new();
        }
        let mut rng = crate::rng::SplitMix64::new(crate::rng::mix64(seed ^ 0x6b65_7973));
        let key = |p: Prefix<A>, rng: &mut crate::rng::SplitMix64| {
            p.addr()
                .or(A::from_u128(rng.next_u128()).and(A::hostmask(p.len())))
        };
        // Route nodes are most of the array, unless many were removed: then walk.
        if self.len * 4 < self.nodes.len() {
            let routes: Vec<Prefix<A>> = self.iter().map(|(p, _)| p).collect();
            return (0..n)
                .map(|_| key(routes[rng.below(routes.len() as u64) as usize], &mut rng))
                .collect();
        }
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let node = &self.nodes[rng.below(self.nodes.len() as u64) as usize];
            if node.nh != 0 {
                out.push(key(node.prefix, &mut rng));
            }
        }
        out
    }

    /// A random `fraction` (0..=1) of the routes, `round(len × fraction)` of them, chosen
    /// with `seed` (the same seed, the same routes): smaller tables cut from a real one,
    /// as the Bloomfwd paper's Fig. 5 ("randomly removed prefixes").
    ///
    /// ```
    /// use lpmkit::{NextHop, Rib};
    /// let mut rib = Rib::<u32>::new();
    /// for i in 0..100u32 {
    ///     rib.insert(lpmkit::Prefix::new_truncating(i << 8, 24), NextHop::new(1).unwrap());
    /// }
    /// let quarter = rib.sample(0.25, 7);
    /// assert_eq!(quarter.len(), 25);
    /// assert!(quarter.iter().all(|(p, h)| rib.get(&p) == Some(h)));
    /// assert_eq!(quarter.iter().collect::<Vec<_>>(), rib.sample(0.25, 7).iter().collect::<Vec<_>>());
    /// ```
    #[doc(hidden)]
    pub fn sample(&self, fraction: f64, seed: u64) -> Rib<A> {
        let mut routes: Vec<(Prefix<A>, NextHop)> = self.iter().collect();
        let keep = ((routes.len() as f64) * fraction.clamp(0.0, 1.0)).round() as usize;
        // A partial Fisher–Yates shuffle: the first `keep` are a uniform sample.
        let mut rng = crate::rng::SplitMix64::new(crate::rng::mix64(seed ^ 0x7361_6d70_6c65));
        for i in 0..keep.min(routes.len().saturating_sub(1)) {
            let j = i + rng.below((routes.len() - i) as u64) as usize;
            routes.swap(i, j);
        }
        let mut out = Rib::new();
        out.extend(routes[..keep].iter().copied());
        out
    }

    /// The root of the subtree of nodes inside `prefix`, or `NIL`.
    #[inline]
    fn subtree(&self, prefix: &Prefix<A>) -> u32 {
        let (mut cur, _) = self.start(prefix);
        while cur != NIL {
            let n = self.node(cur);
            if prefix.covers(&n.prefix) {
                return cur;
            }
            if !n.prefix.covers(prefix) {
                return NIL;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        NIL
    }

    /// True if a route strictly longer than `prefix` lies inside it.
    #[inline]
    pub(crate) fn has_longer(&self, prefix: &Prefix<A>) -> bool {
        let r = self.subtree(prefix);
        if r == NIL {
            return false;
        }
        // Every node heads at least one route (a node without a next hop joins two
        // subtrees), so any node other than `prefix`'s own means a longer route.
        let n = self.node(r);
        n.prefix.len() > prefix.len() || n.child != [NIL, NIL]
    }

    /// Walks the routes inside `window` (itself included) down to length `depth`, in
    /// (address, length) order — covering routes first — calling `route` for each, and
    /// `deeper` once for the root prefix of every subtree of routes longer than `depth`
    /// (without walking it). Returns the next hop of the longest route covering `window`
    /// (itself included), found on the same descent: [`covering_next_hop`] and the walk in
    /// one. The level traversal of bitmap schemes (OBMA) is built on it.
    ///
    /// [`covering_next_hop`]: Self::covering_next_hop
    pub(crate) fn walk_window(
        &self,
        window: &Prefix<A>,
        depth: u8,
        mut route: impl FnMut(Prefix<A>, NextHop),
        mut deeper: impl FnMut(Prefix<A>),
    ) -> Option<NextHop> {
        // One descent: the covering routes above the window, then the subtree inside it.
        let (mut r, mut best) = self.start(window);
        while r != NIL {
            let n = self.node(r);
            if window.covers(&n.prefix) {
                if n.prefix.len() == window.len() && n.nh != 0 {
                    best = r;
                }
                break;
            }
            if !n.prefix.covers(window) {
                r = NIL;
                break;
            }
            if n.nh != 0 {
                best = r;
            }
            r = n.child[window.addr().bit(n.prefix.len()) as usize];
        }
        let best = (best != NIL).then(|| NextHop::new(self.node(best).nh).expect("a route"));
        if r == NIL {
            return best;
        }
        // Depth-first, left child last pushed: at most one pending right child per level.
        let mut stack = [NIL; 130];
        let mut top = 1;
        stack[0] = r;
        while top > 0 {
            top -= 1;
            let n = self.node(stack[top]);
            if n.prefix.len() > depth {
                deeper(n.prefix);
                continue;
            }
            if let Some(nh) = NextHop::new(n.nh) {
                route(n.prefix, nh);
            }
            for c in [n.child[1], n.child[0]] {
                if c != NIL {
                    stack[top] = c;
                    top += 1;
                }
            }
        }
        best
    }

    /// The routes inside `prefix` (including `prefix` itself), in order.
    pub fn covered(&self, prefix: &Prefix<A>) -> Iter<'_, A> {
        if *prefix == Prefix::DEFAULT {
            return self.iter();
        }
        if self.in_order {
            // The routes whose address lies in the prefix are a run of the node array;
            // those among them shorter than the prefix (at its first address) come first.
            let end = match prefix.last().checked_inc() {
                Some(next) => self.scan_start(next),
                None => self.nodes.len(),
            };
            let mut at = self.scan_start(prefix.first());
            while at < end && self.node(at as u32).prefix.len() < prefix.len() {
                at = self.next_route_node(at + 1, end);
            }
            return Iter {
                rib: self,
                stack: Vec::new(),
                scan: Some(at),
                end,
            };
        }
        let r = self.subtree(prefix);
        Iter {
            rib: self,
            stack: if r == NIL { vec![] } else { vec![r] },
            scan: None,
            end: 0,
        }
    }

    /// The first route node at or after `from` and before `end` (`end` if none).
    fn next_route_node(&self, from: usize, end: usize) -> usize {
        self.nodes[from..end]
            .iter()
            .position(|n| n.nh != 0)
            .map_or(end, |k| from + k)
    }

    /// In a table whose route nodes are in order: the index of the first route node whose
    /// address is `first` or above (the node array's length if none). Nodes that only
    /// join subtrees lie anywhere between them; the binary search looks past them.
    fn scan_start(&self, first: A) -> usize {
        debug_assert!(self.in_order);
        let (mut lo, mut hi) = (0, self.nodes.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let r = self.next_route_node(mid, hi);
            if r == hi {
                hi = mid;
            } else if self.node(r as u32).prefix.addr() < first {
                lo = r + 1;
            } else {
                hi = mid;
            }
        }
        self.next_route_node(lo, self.nodes.len())
    }

    /// All routes in order of (address, length): covering prefixes before covered ones.
    pub fn iter(&self) -> Iter<'_, A> {
        if self.in_order {
            return Iter {
                rib: self,
                stack: Vec::new(),
                scan: Some(0),
                end: self.nodes.len(),
            };
        }
        Iter {
            rib: self,
            stack: if self.root == NIL {
                vec![]
            } else {
                vec![self.root]
            },
            scan: None,
            end: 0,
        }
    }

    /// Number of routes of each length (index = length, `BITS + 1` entries).
    #[doc(hidden)]
    pub fn length_histogram(&self) -> Vec<usize> {
        if self.hist.is_empty() {
            vec![0; A::BITS as usize + 1]
        } else {
            self.hist.clone()
        }
    }
}

/// Iterator over routes in (address, length) order; see [`Rib::iter`].
pub struct Iter<'a, A: Address> {
    rib: &'a Rib<A>,
    /// Nodes still to visit, the next on top (a walk of the trie).
    stack: Vec<u32>,
    /// The next node index of a scan of the node array (a table whose route nodes are in
    /// order), instead of the walk.
    scan: Option<usize>,
    /// Where the scan ends.
    end: usize,
}

impl<A: Address> Iterator for Iter<'_, A> {
    type Item = (Prefix<A>, NextHop);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(at) = &mut self.scan {
            let rest = self.rib.nodes.get(*at..self.end).unwrap_or(&[]);
            let found = rest.iter().position(|n| n.nh != 0);
            *at += found.map_or(rest.len(), |k| k + 1);
            return found.map(|k| {
                let n = &rest[k];
                (n.prefix, NextHop::new(n.nh).expect("a route"))
            });
        }
        while let Some(i) = self.stack.pop() {
            let n = self.rib.node(i);
            for c in [n.child[1], n.child[0]] {
                if c != NIL {
                    self.stack.push(c);
                }
            }
            if let Some(nh) = NextHop::new(n.nh) {
                return Some((n.prefix, nh));
            }
        }
        None
    }
}

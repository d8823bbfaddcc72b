//! The test oracle: the `Rib` as it was before its index and jump table — a plain
//! path-compressed binary trie walked from the root for every question — checked here
//! against a linearly scanned list, and in `tests` against the `Rib`.

use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};

const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
struct Node<A: Address> {
    prefix: Prefix<A>,
    nh: Option<NextHop>,
    child: [u32; 2],
}

/// Where a node index is stored: the root pointer or a child slot of a node.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Root,
    Child(u32, usize),
}

/// The previous `Rib`: the same trie without index, parent pointers or jump table.
#[derive(Clone, Debug)]
pub(super) struct Oracle<A: Address> {
    nodes: Vec<Node<A>>,
    free: Vec<u32>,
    root: u32,
    len: usize,
}

impl<A: Address> Oracle<A> {
    /// An empty table.
    pub(super) fn new() -> Self {
        Oracle {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
        }
    }

    /// Number of routes.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// True if there are no routes.
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn get_slot(&self, slot: Slot) -> u32 {
        match slot {
            Slot::Root => self.root,
            Slot::Child(n, d) => self.nodes[n as usize].child[d],
        }
    }

    fn set_slot(&mut self, slot: Slot, v: u32) {
        match slot {
            Slot::Root => self.root = v,
            Slot::Child(n, d) => self.nodes[n as usize].child[d] = v,
        }
    }

    fn alloc(&mut self, prefix: Prefix<A>, nh: Option<NextHop>) -> u32 {
        let node = Node {
            prefix,
            nh,
            child: [NIL, NIL],
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            i
        } else {
            let i = u32::try_from(self.nodes.len()).expect("Rib holds at most 2^32 - 1 nodes");
            assert!(i != NIL, "Rib holds at most 2^32 - 1 nodes");
            self.nodes.push(node);
            i
        }
    }

    fn release(&mut self, i: u32) {
        self.nodes[i as usize].nh = None;
        self.nodes[i as usize].child = [NIL, NIL];
        self.free.push(i);
    }

    /// Inserts or replaces a route; returns the next hop it replaced.
    pub(super) fn insert(&mut self, prefix: Prefix<A>, nh: NextHop) -> Option<NextHop> {
        let mut slot = Slot::Root;
        loop {
            let cur = self.get_slot(slot);
            if cur == NIL {
                let n = self.alloc(prefix, Some(nh));
                self.set_slot(slot, n);
                self.len += 1;
                return None;
            }
            let np = self.nodes[cur as usize].prefix;
            if np == prefix {
                let old = self.nodes[cur as usize].nh.replace(nh);
                if old.is_none() {
                    self.len += 1;
                }
                return old;
            }
            if np.covers(&prefix) {
                slot = Slot::Child(cur, prefix.addr().bit(np.len()) as usize);
                continue;
            }
            let n = self.alloc(prefix, Some(nh));
            if prefix.covers(&np) {
                self.nodes[n as usize].child[np.addr().bit(prefix.len()) as usize] = cur;
                self.set_slot(slot, n);
            } else {
                // Neither covers the other: join them under a glue node at their common prefix.
                let common = np
                    .addr()
                    .common_prefix_len(prefix.addr())
                    .min(np.len())
                    .min(prefix.len());
                let glue = self.alloc(Prefix::new_truncating(prefix.addr(), common), None);
                let dir = prefix.addr().bit(common) as usize;
                self.nodes[glue as usize].child[dir] = n;
                self.nodes[glue as usize].child[1 - dir] = cur;
                self.set_slot(slot, glue);
            }
            self.len += 1;
            return None;
        }
    }

    /// Removes a route; returns its next hop, or `None` if it was absent.
    pub(super) fn remove(&mut self, prefix: &Prefix<A>) -> Option<NextHop> {
        let mut parent_slot: Option<Slot> = None;
        let mut slot = Slot::Root;
        loop {
            let cur = self.get_slot(slot);
            if cur == NIL {
                return None;
            }
            let np = self.nodes[cur as usize].prefix;
            if np == *prefix {
                let old = self.nodes[cur as usize].nh.take()?;
                self.len -= 1;
                self.compact(parent_slot, slot, cur);
                return Some(old);
            }
            if !np.covers(prefix) {
                return None;
            }
            parent_slot = Some(slot);
            slot = Slot::Child(cur, prefix.addr().bit(np.len()) as usize);
        }
    }

    /// Removes `cur` (stored in `slot`, whose owner is stored in `parent_slot`) if it no
    /// longer carries a route and has fewer than two children; then the same for its parent.
    fn compact(&mut self, parent_slot: Option<Slot>, slot: Slot, cur: u32) {
        let [c0, c1] = self.nodes[cur as usize].child;
        match (c0 != NIL, c1 != NIL) {
            (true, true) => {}
            (true, false) | (false, true) => {
                self.set_slot(slot, if c0 != NIL { c0 } else { c1 });
                self.release(cur);
            }
            (false, false) => {
                self.set_slot(slot, NIL);
                self.release(cur);
                // The parent may now be a glue node with one child: splice it out.
                if let (Some(ps), Slot::Child(parent, _)) = (parent_slot, slot) {
                    let pn = &self.nodes[parent as usize];
                    if pn.nh.is_none() {
                        let only = pn.child[0].min(pn.child[1]);
                        debug_assert!(only != NIL && pn.child[0].max(pn.child[1]) == NIL);
                        self.set_slot(ps, only);
                        self.release(parent);
                    }
                }
            }
        }
    }

    /// The next hop of exactly `prefix`.
    pub(super) fn get(&self, prefix: &Prefix<A>) -> Option<NextHop> {
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if n.prefix == *prefix {
                return n.nh;
            }
            if !n.prefix.covers(prefix) {
                return None;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        None
    }

    /// True if `prefix` has a route.
    pub(super) fn contains(&self, prefix: &Prefix<A>) -> bool {
        self.get(prefix).is_some()
    }

    /// Longest-prefix match: the next hop for `addr`.
    #[inline]
    pub(super) fn lookup(&self, addr: A) -> Option<NextHop> {
        self.lookup_prefix(addr).map(|(_, nh)| nh)
    }

    /// Longest-prefix match: the matching prefix and its next hop.
    pub(super) fn lookup_prefix(&self, addr: A) -> Option<(Prefix<A>, NextHop)> {
        let mut best = None;
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if !n.prefix.contains(addr) {
                break;
            }
            if let Some(nh) = n.nh {
                best = Some((n.prefix, nh));
            }
            if n.prefix.len() == A::BITS {
                break;
            }
            cur = n.child[addr.bit(n.prefix.len()) as usize];
        }
        best
    }

    /// The routes covering `prefix` (including `prefix` itself), shortest first.
    pub(super) fn covering(&self, prefix: &Prefix<A>) -> Vec<(Prefix<A>, NextHop)> {
        let mut out = Vec::new();
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if !n.prefix.covers(prefix) {
                break;
            }
            if let Some(nh) = n.nh {
                out.push((n.prefix, nh));
            }
            if n.prefix.len() == prefix.len() {
                break;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        out
    }

    /// The longest route covering `prefix` (possibly `prefix` itself).
    pub(super) fn covering_route(&self, prefix: &Prefix<A>) -> Option<(Prefix<A>, NextHop)> {
        self.covering(prefix).pop()
    }

    /// The next hop of the longest route covering `prefix` (possibly `prefix` itself):
    /// [`covering_route`](Self::covering_route) without the list.
    pub(super) fn covering_next_hop(&self, prefix: &Prefix<A>) -> Option<NextHop> {
        let mut best = None;
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if !n.prefix.covers(prefix) {
                break;
            }
            if n.nh.is_some() {
                best = n.nh;
            }
            if n.prefix.len() == prefix.len() {
                break;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        best
    }

    /// The root of the subtree of nodes inside `prefix`, or `NIL`.
    fn subtree(&self, prefix: &Prefix<A>) -> u32 {
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
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
    pub(super) fn has_longer(&self, prefix: &Prefix<A>) -> bool {
        let r = self.subtree(prefix);
        if r == NIL {
            return false;
        }
        // Every node heads at least one route (a node without a next hop joins two
        // subtrees), so any node other than `prefix`'s own means a longer route.
        let n = &self.nodes[r as usize];
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
    pub(super) fn walk_window(
        &self,
        window: &Prefix<A>,
        depth: u8,
        mut route: impl FnMut(Prefix<A>, NextHop),
        mut deeper: impl FnMut(Prefix<A>),
    ) -> Option<NextHop> {
        // One descent: the covering routes above the window, then the subtree inside it.
        let mut best = None;
        let mut r = self.root;
        while r != NIL {
            let n = &self.nodes[r as usize];
            if window.covers(&n.prefix) {
                if n.prefix.len() == window.len() && n.nh.is_some() {
                    best = n.nh;
                }
                break;
            }
            if !n.prefix.covers(window) {
                r = NIL;
                break;
            }
            if n.nh.is_some() {
                best = n.nh;
            }
            r = n.child[window.addr().bit(n.prefix.len()) as usize];
        }
        if r == NIL {
            return best;
        }
        // Depth-first, left child last pushed: at most one pending right child per level.
        let mut stack = [NIL; 130];
        let mut top = 1;
        stack[0] = r;
        while top > 0 {
            top -= 1;
            let n = &self.nodes[stack[top] as usize];
            if n.prefix.len() > depth {
                deeper(n.prefix);
                continue;
            }
            if let Some(nh) = n.nh {
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
    pub(super) fn covered(&self, prefix: &Prefix<A>) -> Iter<'_, A> {
        let mut cur = self.root;
        while cur != NIL {
            let n = &self.nodes[cur as usize];
            if prefix.covers(&n.prefix) {
                break;
            }
            if !n.prefix.covers(prefix) {
                cur = NIL;
                break;
            }
            cur = n.child[prefix.addr().bit(n.prefix.len()) as usize];
        }
        Iter {
            rib: self,
            stack: if cur == NIL { vec![] } else { vec![cur] },
        }
    }

    /// All routes in order of (address, length): covering prefixes before covered ones.
    pub(super) fn iter(&self) -> Iter<'_, A> {
        Iter {
            rib: self,
            stack: if self.root == NIL {
                vec![]
            } else {
                vec![self.root]
            },
        }
    }
}

/// Iterator over routes in (address, length) order.
pub(super) struct Iter<'a, A: Address> {
    rib: &'a Oracle<A>,
    stack: Vec<u32>,
}

impl<A: Address> Iterator for Iter<'_, A> {
    type Item = (Prefix<A>, NextHop);
    fn next(&mut self) -> Option<Self::Item> {
        while let Some(i) = self.stack.pop() {
            let n = &self.rib.nodes[i as usize];
            for c in [n.child[1], n.child[0]] {
                if c != NIL {
                    self.stack.push(c);
                }
            }
            if let Some(nh) = n.nh {
                return Some((n.prefix, nh));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Ipv4, Ipv6};
    use crate::rng::SplitMix64;

    fn nh(v: u32) -> NextHop {
        NextHop::new(v).unwrap()
    }

    /// The golden oracle: a linearly scanned list.
    #[derive(Default)]
    struct Golden<A: Address>(Vec<(Prefix<A>, NextHop)>);

    impl<A: Address> Golden<A> {
        fn insert(&mut self, p: Prefix<A>, h: NextHop) -> Option<NextHop> {
            for e in &mut self.0 {
                if e.0 == p {
                    return Some(core::mem::replace(&mut e.1, h));
                }
            }
            self.0.push((p, h));
            None
        }
        fn remove(&mut self, p: &Prefix<A>) -> Option<NextHop> {
            let i = self.0.iter().position(|e| e.0 == *p)?;
            Some(self.0.swap_remove(i).1)
        }
        fn lookup(&self, a: A) -> Option<(Prefix<A>, NextHop)> {
            self.0
                .iter()
                .filter(|e| e.0.contains(a))
                .max_by_key(|e| e.0.len())
                .copied()
        }
        fn sorted(&self) -> Vec<(Prefix<A>, NextHop)> {
            let mut v = self.0.clone();
            v.sort();
            v
        }
    }

    /// Random prefixes concentrated in a small region so that they nest and collide.
    fn random_prefix<A: Address>(rng: &mut SplitMix64) -> Prefix<A> {
        let len = (rng.next() % (A::BITS as u64 + 1)) as u8;
        // Only the top 6 and bottom 2 bits vary much, so prefixes overlap often.
        let hi = A::from_u128((rng.next() as u128 & 0x3f) << (A::BITS - 6));
        let lo = A::from_u128(rng.next() as u128 & 3);
        let mid = if rng.next().is_multiple_of(4) {
            A::from_u128(rng.next() as u128)
        } else {
            A::ZERO
        };
        Prefix::new_truncating(hi.or(lo).or(mid), len)
    }

    fn check_against_golden<A: Address>(seed: u64) {
        let mut rng = SplitMix64::new(seed);
        let mut rib = Oracle::<A>::new();
        let mut golden = Golden::<A>::default();
        for step in 0..3000 {
            let p = random_prefix::<A>(&mut rng);
            if rng.next().is_multiple_of(3) {
                assert_eq!(rib.remove(&p), golden.remove(&p), "remove {p} at {step}");
            } else {
                let h = nh(1 + (rng.next() % 5) as u32);
                assert_eq!(
                    rib.insert(p, h),
                    golden.insert(p, h),
                    "insert {p} at {step}"
                );
            }
            assert_eq!(rib.len(), golden.0.len());
            if step % 50 == 0 {
                assert_eq!(rib.iter().collect::<Vec<_>>(), golden.sorted());
                for _ in 0..50 {
                    let probe = random_prefix::<A>(&mut rng);
                    let a = probe.addr().or(A::from_u128(rng.next() as u128 & 7));
                    assert_eq!(rib.lookup_prefix(a), golden.lookup(a), "lookup {a:x}");
                    assert_eq!(
                        rib.get(&probe),
                        golden.0.iter().find(|e| e.0 == probe).map(|e| e.1)
                    );
                    let cov: Vec<_> = golden
                        .sorted()
                        .into_iter()
                        .filter(|e| e.0.covers(&probe))
                        .collect();
                    assert_eq!(rib.covering(&probe), cov);
                    let inside: Vec<_> = golden
                        .sorted()
                        .into_iter()
                        .filter(|e| probe.covers(&e.0))
                        .collect();
                    assert_eq!(rib.covered(&probe).collect::<Vec<_>>(), inside);
                    // The writers' one-descent questions.
                    let longer = inside.iter().any(|e| e.0.len() > probe.len());
                    let best = cov.last().map(|e| e.1);
                    assert_eq!(rib.covering_next_hop(&probe), best, "covering {probe}");
                    assert_eq!(rib.has_longer(&probe), longer, "has_longer {probe}");
                    let depth = probe.len() + (rng.next() % 5) as u8;
                    let depth = depth.min(A::BITS);
                    let (mut walked, mut below) = (Vec::new(), Vec::new());
                    let covering = rib.walk_window(
                        &probe,
                        depth,
                        |p, h| walked.push((p, h)),
                        |p| below.push(p),
                    );
                    assert_eq!(covering, best, "walk_window covering {probe}");
                    let want: Vec<_> = inside
                        .iter()
                        .copied()
                        .filter(|e| e.0.len() <= depth)
                        .collect();
                    assert_eq!(walked, want, "walk_window routes {probe}");
                    assert!(below.iter().all(|b| b.len() > depth && probe.covers(b)));
                }
            }
        }
        // Removing everything leaves no nodes behind.
        for (p, _) in golden.sorted() {
            assert!(rib.remove(&p).is_some());
        }
        assert!(rib.is_empty());
        assert_eq!(rib.root, NIL);
        assert_eq!(rib.free.len(), rib.nodes.len(), "every node was released");
    }

    #[test]
    fn golden_v4() {
        for seed in 0..8 {
            check_against_golden::<Ipv4>(seed);
        }
    }

    #[test]
    fn golden_v6() {
        for seed in 0..4 {
            check_against_golden::<Ipv6>(seed);
        }
    }
}

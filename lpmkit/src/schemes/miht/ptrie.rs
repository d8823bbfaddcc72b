//! Priority tries (Lim, Yim and Swartzlander, "Priority tries for IP address lookup",
//! IEEE ToC 59(6), 2010), the data nodes (d-nodes) of MIHT.
//!
//! A priority trie is a binary trie in which every node holds exactly one prefix. A node
//! at depth `d` (its path: `d` bits) holds either the prefix of length `d` whose bits are
//! its path (an *ordinary* node), or — where the plain binary trie would have an empty
//! internal node — a *priority prefix*: a longer prefix below the node, at least as long
//! as every prefix held in the node's subtree. A search walks down by the key's bits,
//! remembers the last ordinary node that matches, and stops at the first priority node
//! that matches: no longer match can lie below it. Nodes: `bits` (the prefix, left-aligned
//! in the trie's domain), length, next hop, the priority flag and two children.
//!
//! * **Insert** walks down carrying the new prefix `X`: at the node of `X`'s own position
//!   (depth = length) `X` takes the node as an ordinary one; at a priority node holding a
//!   shorter prefix `Y`, `X` takes the node and `Y` is carried down instead; where the
//!   walk falls off the trie, the carried prefix becomes a new node (priority unless it is
//!   at its own position). A prefix already present only gets its next hop replaced.
//! * **Delete** finds the node holding `X` and empties it; an empty node with children is
//!   refilled with the longest prefix of its subtree (found without descending below
//!   priority nodes, which hold their subtree's longest), whose old node is refilled in
//!   turn, down a single path; an empty leaf is removed.
//!
//! Both work on a [`Store`] that either mutates nodes in place (bulk build) or copies each
//! node before changing it — *path copying*: the nodes of a live trie are never written,
//! the copies form a new version whose root the caller publishes, and the replaced nodes
//! are retired.

use crate::prefix::Address;
use crate::schemes::common::Zeroable;

/// No node.
pub(crate) const NIL: u32 = u32::MAX;

/// A priority-trie node (20 bytes for IPv4, 32 for IPv6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct PtNode<A> {
    /// The prefix, left-aligned in the trie's domain, zero past its length.
    pub bits: A,
    pub nh: u32,
    pub len: u8,
    /// 1 for a priority node.
    pub prio: u8,
    pub _pad: u16,
    pub left: u32,
    pub right: u32,
}

// SAFETY: `Address` is sealed to `u32` and `u128`; for both the `repr(C)` layout has no
// padding (4+4+1+1+2+4+4 = 20 bytes, align 4; 16+4+1+1+2+4+4 = 32 bytes, align 16), every
// field is an integer (all-zero is valid) and there is no drop glue.
unsafe impl<A: Address> Zeroable for PtNode<A> {}

impl<A: Address> PtNode<A> {
    fn leaf(bits: A, len: u8, nh: u32, depth: u32) -> Self {
        PtNode {
            bits,
            nh,
            len,
            prio: (len as u32 > depth) as u8,
            _pad: 0,
            left: NIL,
            right: NIL,
        }
    }

    #[inline(always)]
    fn child(&self, right: bool) -> u32 {
        if right {
            self.right
        } else {
            self.left
        }
    }

    fn set_child(&mut self, right: bool, c: u32) {
        if right {
            self.right = c;
        } else {
            self.left = c;
        }
    }

    /// True if the node's prefix covers `x` (left-aligned in the same domain).
    #[inline(always)]
    pub(crate) fn matches(&self, x: A) -> bool {
        x.and(A::netmask(self.len)) == self.bits
    }
}

/// Where a trie's nodes live.
pub(crate) trait Store<A: Address> {
    /// The node at `i`.
    fn get(&self, i: u32) -> PtNode<A>;
    /// A new node; `None` when out of room.
    fn alloc(&mut self, n: PtNode<A>) -> Option<u32>;
    /// Writes node `i`, which this operation owns (allocated by it, or any node when the
    /// store mutates in place).
    fn set(&mut self, i: u32, n: PtNode<A>);
    /// Node `i` is no longer part of the trie being made.
    fn drop_node(&mut self, i: u32);
    /// True if nodes must be copied before they change (path copying).
    fn copies(&self) -> bool;
}

/// Out of room in the node arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Full;

/// The node to change in place of `i`: `i` itself, or (path copying) a copy, `i` dropped.
fn own<A: Address, S: Store<A>>(s: &mut S, i: u32) -> Result<u32, Full> {
    if !s.copies() {
        return Ok(i);
    }
    let n = s.get(i);
    let c = s.alloc(n).ok_or(Full)?;
    s.drop_node(i);
    Ok(c)
}

/// The longest match of `x` in the trie at `root` (0: none); `get` reads a node.
#[inline(always)]
pub(crate) fn lookup<A: Address>(root: u32, x: A, get: impl Fn(u32) -> PtNode<A>) -> u32 {
    let mut best = 0;
    let mut cur = root;
    let mut depth = 0u32;
    while cur != NIL {
        let n = get(cur);
        if n.matches(x) {
            best = n.nh;
            if n.prio != 0 {
                break;
            }
        }
        if depth >= A::BITS as u32 {
            break;
        }
        cur = n.child(x.bit(depth as u8));
        depth += 1;
    }
    best
}

/// The node holding `(bits, len)`, with the path to it: `(node, depth)` pairs from the
/// root, the node last. Empty if absent.
fn find_path<A: Address, S: Store<A>>(s: &S, root: u32, bits: A, len: u8) -> Vec<(u32, u32)> {
    let mut path = Vec::new();
    let mut cur = root;
    let mut depth = 0u32;
    while cur != NIL && depth <= len as u32 {
        let n = s.get(cur);
        path.push((cur, depth));
        if n.bits == bits && n.len == len {
            return path;
        }
        if depth == len as u32 {
            break;
        }
        cur = n.child(bits.bit(depth as u8));
        depth += 1;
    }
    Vec::new()
}

/// Copies (or takes, in place) the nodes of `path`, relinking each copy to its parent's;
/// returns the new indices and the new root.
fn own_path<A: Address, S: Store<A>>(
    s: &mut S,
    path: &[(u32, u32)],
    bits_of_path: A,
) -> Result<Vec<u32>, Full> {
    let mut out: Vec<u32> = Vec::with_capacity(path.len());
    for (j, &(i, depth)) in path.iter().enumerate() {
        let c = own(s, i)?;
        if j > 0 && c != i {
            let p = out[j - 1];
            let mut pn = s.get(p);
            pn.set_child(bits_of_path.bit((depth - 1) as u8), c);
            s.set(p, pn);
        }
        out.push(c);
    }
    Ok(out)
}

/// Inserts `(bits, len) → nh` (replacing the next hop if the prefix is present); returns
/// the new root.
pub(crate) fn insert<A: Address, S: Store<A>>(
    s: &mut S,
    root: u32,
    bits: A,
    len: u8,
    nh: u32,
) -> Result<u32, Full> {
    let path = find_path(s, root, bits, len);
    if !path.is_empty() {
        let owned = own_path(s, &path, bits)?;
        let last = *owned.last().expect("a path");
        let mut n = s.get(last);
        n.nh = nh;
        s.set(last, n);
        return Ok(owned[0]);
    }
    if root == NIL {
        return s.alloc(PtNode::leaf(bits, len, nh, 0)).ok_or(Full);
    }
    let new_root = own(s, root)?;
    let (mut cb, mut cl, mut cn) = (bits, len, nh);
    let mut cur = new_root;
    let mut depth = 0u32;
    loop {
        let mut n = s.get(cur);
        let take = if cl as u32 == depth {
            // The carried prefix's own position: it is ordinary here.
            debug_assert!(n.prio != 0, "an ordinary node at a prefix's own position");
            true
        } else {
            n.prio != 0 && cl > n.len
        };
        if take {
            let held = (n.bits, n.len, n.nh);
            n.bits = cb;
            n.len = cl;
            n.nh = cn;
            n.prio = (cl as u32 > depth) as u8;
            (cb, cl, cn) = held;
            s.set(cur, n);
        }
        debug_assert!(cl as u32 > depth);
        let dir = cb.bit(depth as u8);
        let child = n.child(dir);
        if child == NIL {
            let c = s.alloc(PtNode::leaf(cb, cl, cn, depth + 1)).ok_or(Full)?;
            n.set_child(dir, c);
            s.set(cur, n);
            return Ok(new_root);
        }
        let c = own(s, child)?;
        if c != child {
            n.set_child(dir, c);
            s.set(cur, n);
        }
        cur = c;
        depth += 1;
    }
}

/// Deletes `(bits, len)`; returns the new root (the same if absent).
pub(crate) fn delete<A: Address, S: Store<A>>(
    s: &mut S,
    root: u32,
    bits: A,
    len: u8,
) -> Result<u32, Full> {
    let path = find_path(s, root, bits, len);
    if path.is_empty() {
        return Ok(root);
    }
    let owned = own_path(s, &path, bits)?;
    let new_root = owned[0];
    // The emptied node and its parent (NIL for the root).
    let mut cur = *owned.last().expect("a path");
    let mut depth = path.last().expect("a path").1;
    let mut parent = if owned.len() > 1 {
        owned[owned.len() - 2]
    } else {
        NIL
    };
    let mut parent_dir = depth > 0 && bits.bit((depth - 1) as u8);
    loop {
        let mut n = s.get(cur);
        if n.left == NIL && n.right == NIL {
            s.drop_node(cur);
            if parent == NIL {
                return Ok(NIL);
            }
            let mut pn = s.get(parent);
            pn.set_child(parent_dir, NIL);
            s.set(parent, pn);
            return Ok(new_root);
        }
        // The longest prefix below: priority nodes hold their subtree's longest.
        let mut best: Option<(u8, u32)> = None;
        let mut stack: Vec<u32> = vec![n.left, n.right];
        while let Some(c) = stack.pop() {
            if c == NIL {
                continue;
            }
            let cn = s.get(c);
            if best.is_none_or(|(l, _)| cn.len > l) {
                best = Some((cn.len, c));
            }
            if cn.prio == 0 {
                stack.push(cn.left);
                stack.push(cn.right);
            }
        }
        let (_, r) = best.expect("a node with children holds prefixes below");
        let rn = s.get(r);
        n.bits = rn.bits;
        n.len = rn.len;
        n.nh = rn.nh;
        n.prio = 1;
        s.set(cur, n);
        // Walk down to `r` along its prefix's bits, copying the path; `r` is emptied next.
        let mut at = cur;
        let mut d = depth;
        loop {
            let an = s.get(at);
            let dir = rn.bits.bit(d as u8);
            let child = an.child(dir);
            let c = own(s, child)?;
            if c != child {
                let mut an = an;
                an.set_child(dir, c);
                s.set(at, an);
            }
            parent = at;
            parent_dir = dir;
            at = c;
            d += 1;
            if child == r {
                break;
            }
        }
        cur = at;
        depth = d;
    }
}

/// Checks the priority-trie invariants of the trie at `root` (domain prefixes of length
/// `<= max_len`): every node's prefix starts with its path, ordinary nodes sit at their
/// own position, priority nodes are at least as long as everything below. Returns the
/// prefixes held.
pub(crate) fn check<A: Address, S: Store<A>>(
    s: &S,
    root: u32,
    max_len: u8,
) -> Result<Vec<(A, u8, u32)>, String> {
    fn walk<A: Address, S: Store<A>>(
        s: &S,
        i: u32,
        path: A,
        depth: u32,
        max_len: u8,
        out: &mut Vec<(A, u8, u32)>,
    ) -> Result<u8, String> {
        let n = s.get(i);
        if n.len > max_len || (n.len as u32) < depth {
            return Err(format!("node {i}: length {} at depth {depth}", n.len));
        }
        if n.bits.and(A::netmask(n.len)) != n.bits || n.bits.and(A::netmask(depth as u8)) != path {
            return Err(format!("node {i}: prefix off its path"));
        }
        if (n.prio != 0) != (n.len as u32 > depth) {
            return Err(format!("node {i}: priority flag wrong"));
        }
        out.push((n.bits, n.len, n.nh));
        let mut longest = 0u8;
        for (dir, c) in [(false, n.left), (true, n.right)] {
            if c == NIL {
                continue;
            }
            if depth >= A::BITS as u32 {
                return Err(format!("node {i}: children past the last bit"));
            }
            let p = if dir {
                path.with_bit(depth as u8)
            } else {
                path
            };
            longest = longest.max(walk(s, c, p, depth + 1, max_len, out)?);
        }
        if n.prio != 0 && longest > n.len {
            return Err(format!("node {i}: priority /{} above /{longest}", n.len));
        }
        Ok(longest.max(n.len))
    }
    let mut out = Vec::new();
    if root != NIL {
        walk(s, root, A::ZERO, 0, max_len, &mut out)?;
    }
    Ok(out)
}

/// A store in a `Vec`, mutated in place (bulk builds and tests).
#[derive(Debug, Default)]
pub(crate) struct VecStore<A> {
    pub nodes: Vec<PtNode<A>>,
    pub free: Vec<u32>,
}

impl<A: Address> Store<A> for VecStore<A> {
    fn get(&self, i: u32) -> PtNode<A> {
        self.nodes[i as usize]
    }
    fn alloc(&mut self, n: PtNode<A>) -> Option<u32> {
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = n;
            return Some(i);
        }
        self.nodes.push(n);
        Some(self.nodes.len() as u32 - 1)
    }
    fn set(&mut self, i: u32, n: PtNode<A>) {
        self.nodes[i as usize] = n;
    }
    fn drop_node(&mut self, i: u32) {
        self.free.push(i);
    }
    fn copies(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;
    use std::collections::BTreeMap;

    /// A copying store over a `Vec` that never reuses a node: the old versions stay
    /// intact, so a test can check them after later updates.
    #[derive(Default)]
    struct Persistent {
        nodes: Vec<PtNode<u32>>,
        dropped: Vec<u32>,
    }

    impl Store<u32> for Persistent {
        fn get(&self, i: u32) -> PtNode<u32> {
            self.nodes[i as usize]
        }
        fn alloc(&mut self, n: PtNode<u32>) -> Option<u32> {
            self.nodes.push(n);
            Some(self.nodes.len() as u32 - 1)
        }
        fn set(&mut self, i: u32, n: PtNode<u32>) {
            self.nodes[i as usize] = n;
        }
        fn drop_node(&mut self, i: u32) {
            self.dropped.push(i);
        }
        fn copies(&self) -> bool {
            true
        }
    }

    fn brute(set: &BTreeMap<(u8, u32), u32>, x: u32) -> u32 {
        set.iter()
            .filter(|(&(l, b), _)| x & u32::netmask(l) == b)
            .max_by_key(|(&(l, _), _)| l)
            .map_or(0, |(_, &nh)| nh)
    }

    fn random_ops<S: Store<u32>>(s: &mut S, seed: u64, bits: u8) {
        let mut rng = SplitMix64::new(seed);
        let mut set: BTreeMap<(u8, u32), u32> = BTreeMap::new();
        let mut root = NIL;
        type Version = (u32, BTreeMap<(u8, u32), u32>);
        let mut versions: Vec<Version> = Vec::new();
        for step in 0..3000 {
            let len = rng.below(bits as u64 + 1) as u8;
            let x = (rng.below(8) as u32) << 29 | (rng.next() as u32 >> 20);
            let b = x & u32::netmask(len);
            if rng.below(3) == 0 && !set.is_empty() {
                let &(l, b) = set
                    .keys()
                    .nth(rng.below(set.len() as u64) as usize)
                    .unwrap();
                root = delete(s, root, b, l).unwrap();
                set.remove(&(l, b));
            } else {
                let nh = 1 + rng.below(9) as u32;
                root = insert(s, root, b, len, nh).unwrap();
                set.insert((len, b), nh);
            }
            let held = check(s, root, bits).unwrap_or_else(|e| panic!("step {step}: {e}"));
            assert_eq!(held.len(), set.len(), "step {step}");
            for _ in 0..20 {
                let q = (rng.below(8) as u32) << 29 | (rng.next() as u32 >> 20);
                assert_eq!(lookup(root, q, |i| s.get(i)), brute(&set, q), "step {step}");
            }
            if s.copies() && step % 100 == 0 {
                versions.push((root, set.clone()));
            }
        }
        // Path copying: every saved version still answers as it did.
        for (root, set) in versions {
            for _ in 0..200 {
                let q = (rng.below(8) as u32) << 29 | (rng.next() as u32 >> 20);
                assert_eq!(lookup(root, q, |i| s.get(i)), brute(&set, q));
            }
        }
    }

    #[test]
    fn in_place_and_persistent_tries_follow_the_set() {
        for seed in 0..4 {
            random_ops(&mut VecStore::<u32>::default(), seed, 32);
            random_ops(&mut Persistent::default(), seed + 10, 32);
        }
        // A short domain (a keyed trie of a (16, m)-MIHT holds suffixes up to 16 bits).
        random_ops(&mut VecStore::<u32>::default(), 99, 16);
    }
}

//! The reference route set: a path-compressed binary trie with an exact-match index.
//!
//! [`Rib`] is the authoritative set of routes (prefix → [`NextHop`]). Every scheme is built
//! from a `Rib` and differentially tested against it, and every route change a scheme
//! follows goes through it first, so it is written to be obviously right *and* to cost
//! little per change:
//!
//! * **The trie.** A binary trie with path compression (a Patricia trie): each node holds a
//!   prefix, a next hop or none, two children and its parent; nodes without a next hop
//!   exist only to join two subtrees (so there are fewer than `2 × routes` nodes). The
//!   trie answers longest-prefix lookups, ordered iteration and the covering/covered
//!   questions builders and writers ask.
//! * **The exact-match index** (prefix → route node, a hash table): [`get`](Rib::get), a
//!   re-announcement or a next-hop change is one probe, O(1); a withdrawal is one probe
//!   plus the O(1) splice the parent pointers allow. Only a prefix that is no route yet
//!   walks the trie to find its place. A prefix beyond every one the table has held (each
//!   route of a table loaded in order) is known to be new without a probe, and such
//!   routes join the index in batches, their cache misses overlapped.
//! * **The jump table** (once the table holds a few thousand routes): for every block of
//!   the first 16 address bits, the root of the subtree of nodes inside it and the longest
//!   shorter route covering it. Lookups, insertions and the covering/covered questions of
//!   prefixes of 16 bits or more start there instead of at the root, so a walk touches the
//!   few nodes of one block.
//!
//! * **The node array in order.** While every route joined the table beyond all before it
//!   and none left (a table loaded in order and not changed since, the usual source of a
//!   full build), the route nodes lie in the node array in (address, length) order, and
//!   iteration — hence the projection builders start from — is a scan of the array
//!   instead of a walk of the trie.
//!
//! Besides insert/remove/exact get/longest-prefix lookup it offers what builders need:
//! ordered iteration (by address, then length — covering prefixes first), the routes
//! covering or covered by a prefix, and the projection of the table onto disjoint
//! address ranges that range-based schemes build from ([`Rib::for_each_range`] and the
//! crate's `ranges` module, the one front door to it).
//!
//! ```
//! use lpmkit::{NextHop, Rib, Ipv4};
//!
//! let mut rib = Rib::<Ipv4>::new();
//! let a = NextHop::new(1).unwrap();
//! let b = NextHop::new(2).unwrap();
//! rib.insert("10.0.0.0/8".parse()?, a);
//! rib.insert("10.1.0.0/16".parse()?, b);
//! assert_eq!(rib.lookup(0x0a01_0203), Some(b));
//! assert_eq!(rib.lookup(0x0a02_0000), Some(a));
//! assert_eq!(rib.lookup(0x0b00_0000), None);
//! assert_eq!(rib.remove(&"10.1.0.0/16".parse()?), Some(b));
//! assert_eq!(rib.lookup(0x0a01_0203), Some(a));
//! # Ok::<(), lpmkit::PrefixError>(())
//! ```

use core::fmt;

use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};

mod change;
mod index;
mod query;
pub(crate) mod ranges;

#[cfg(test)]
mod oracle;
#[cfg(test)]
mod tests;

pub(crate) use ranges::{project_routes, split_blocks_per_level, LevelBlocks};

pub use change::Change;
use index::Index;
pub use query::Iter;

const NIL: u32 = u32::MAX;

/// Address bits that select a block of the jump table.
const JUMP_BITS: u8 = 16;
/// Routes from which on a table keeps a jump table (smaller ones walk from the root).
const JUMP_FROM: usize = 1 << 12;

/// [`Rib::PREFETCH_AHEAD`].
const PREFETCH_AHEAD: usize = 8;

/// A trie node: 24 bytes for IPv4.
#[derive(Clone, Copy, Debug)]
struct Node<A: Address> {
    prefix: Prefix<A>,
    /// The route's next hop, or 0 for a node that only joins two subtrees.
    nh: u32,
    child: [u32; 2],
    /// The node whose child this is (`NIL` for the root).
    parent: u32,
}

/// Where a node index is stored: the root pointer or a child slot of a node.
#[derive(Clone, Copy, Debug)]
enum Slot {
    Root,
    Child(u32, usize),
}

/// One block of the jump table: `[root of the subtree of nodes inside the block, the
/// longest route shorter than the block that covers it]` (node indices, or `NIL`).
type Jump = [u32; 2];

/// The reference routing table: prefix → next hop, with longest-prefix lookup.
///
/// Costs (`n` routes, `W` address bits): [`insert`](Self::insert) of a prefix already
/// present, [`get`](Self::get) and [`remove`](Self::remove) are O(1) expected;
/// inserting a new prefix, [`lookup`](Self::lookup) and the covering questions are
/// O(depth of the trie) ≤ O(W), walked from the prefix's block of the jump table;
/// iteration is O(n).
pub struct Rib<A: Address> {
    nodes: Vec<Node<A>>,
    free: Vec<u32>,
    root: u32,
    len: usize,
    index: Index,
    /// Route nodes not in the index yet: a prefix beyond every one the trie has held is
    /// new without asking the index, and is indexed when the index is next needed — for
    /// a table loaded in order, all at once, the table written front to back.
    pending: Vec<u32>,
    /// At least every prefix that has a node (`None`: no node was ever made).
    max_seen: Option<Prefix<A>>,
    /// The node of `max_seen` while it is one (`NIL` else): a prefix beyond it is placed
    /// by walking up from it, which for a table loaded in order is a step or two.
    last: u32,
    /// `2^JUMP_BITS` blocks, or empty while the table is small.
    jump: Vec<Jump>,
    /// Routes from which on the jump table is kept.
    jump_from: usize,
    /// Routes per length (`W + 1` entries once a route was inserted).
    hist: Vec<usize>,
    /// True while the route nodes lie in the node array in (address, length) order and
    /// no node was freed: every route was made beyond all before it, none removed.
    in_order: bool,
}

impl<A: Address> Clone for Rib<A> {
    /// A copy with its index complete.
    fn clone(&self) -> Self {
        let mut copy = Rib {
            // Room to grow by an eighth before the array is copied again. (Not advised for
            // transparent huge pages: where the kernel compacts memory to supply them on a
            // fault, a copy of a large table can stall for hundreds of milliseconds.)
            nodes: {
                let mut v = Vec::with_capacity(self.nodes.len() + self.nodes.len() / 8);
                v.extend_from_slice(&self.nodes);
                v
            },
            free: self.free.clone(),
            root: self.root,
            len: self.len,
            index: self.index.clone(),
            pending: self.pending.clone(),
            max_seen: self.max_seen,
            last: self.last,
            jump: self.jump.clone(),
            jump_from: self.jump_from,
            hist: self.hist.clone(),
            in_order: self.in_order,
        };
        copy.flush_index();
        copy
    }
}

impl<A: Address> Default for Rib<A> {
    fn default() -> Self {
        Self::new()
    }
}

impl<A: Address> fmt::Debug for Rib<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<A: Address> Rib<A> {
    /// How many changes ahead of the one it applies [`apply_each`](Self::apply_each)
    /// [prefetches](Self::prefetch).
    pub const PREFETCH_AHEAD: usize = PREFETCH_AHEAD;

    /// An empty table.
    pub fn new() -> Self {
        Rib {
            nodes: Vec::new(),
            free: Vec::new(),
            root: NIL,
            len: 0,
            index: Index::new(),
            pending: Vec::new(),
            max_seen: None,
            last: NIL,
            jump: Vec::new(),
            jump_from: JUMP_FROM,
            hist: Vec::new(),
            in_order: true,
        }
    }

    /// An empty table that keeps a jump table from `routes` routes on (tests exercise
    /// both walks on small tables).
    #[cfg(test)]
    fn with_jump_from(routes: usize) -> Self {
        Rib {
            jump_from: routes,
            ..Self::new()
        }
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True if there are no routes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Removes every route.
    pub fn clear(&mut self) {
        *self = Rib {
            jump_from: self.jump_from,
            ..Self::new()
        };
    }

    /// Heap bytes used by the trie, its index and its jump table.
    pub fn memory_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node<A>>()
            + self.free.capacity() * core::mem::size_of::<u32>()
            + self.index.memory_bytes()
            + self.pending.capacity() * core::mem::size_of::<u32>()
            + self.jump.capacity() * core::mem::size_of::<Jump>()
            + self.hist.capacity() * core::mem::size_of::<usize>()
    }

    #[inline]
    fn node(&self, i: u32) -> &Node<A> {
        &self.nodes[i as usize]
    }

    /// The jump table's block of an address.
    #[inline]
    fn block(addr: A) -> usize {
        addr.top_bits(JUMP_BITS as u32) as usize
    }

    /// The jump table's blocks a route shorter than a block covers.
    #[inline]
    fn blocks(p: &Prefix<A>) -> core::ops::Range<usize> {
        debug_assert!(p.len() < JUMP_BITS);
        let first = Self::block(p.addr());
        first..first + (1 << (JUMP_BITS - p.len()))
    }

    /// Where a walk toward `p` may start: `(node, longest route above it)`. With a jump
    /// table and `p` at least a block long, the block's subtree root and the route
    /// covering the block; else the root and none.
    #[inline]
    fn start(&self, p: &Prefix<A>) -> (u32, u32) {
        if !self.jump.is_empty() && p.len() >= JUMP_BITS {
            let [sub, above] = self.jump[Self::block(p.addr())];
            (sub, above)
        } else {
            (self.root, NIL)
        }
    }

    /// The slot that stores node `i`.
    #[inline]
    fn slot_of(&self, i: u32) -> Slot {
        let p = self.node(i).parent;
        if p == NIL {
            Slot::Root
        } else {
            let dir = self.node(i).prefix.addr().bit(self.node(p).prefix.len());
            Slot::Child(p, dir as usize)
        }
    }

    #[inline]
    fn get_slot(&self, slot: Slot) -> u32 {
        match slot {
            Slot::Root => self.root,
            Slot::Child(n, d) => self.node(n).child[d],
        }
    }

    /// Stores `v` in `slot`, sets its parent pointer, and keeps the jump table's subtree
    /// roots: a node a block long or longer hanging from a shorter node (or the root)
    /// heads its block. Callers set a slot before the slots of the node stored in it.
    #[inline]
    fn set_slot(&mut self, slot: Slot, v: u32) {
        let (owner, old) = match slot {
            Slot::Root => (NIL, core::mem::replace(&mut self.root, v)),
            Slot::Child(n, d) => (
                n,
                core::mem::replace(&mut self.nodes[n as usize].child[d], v),
            ),
        };
        if v != NIL {
            self.nodes[v as usize].parent = owner;
        }
        if !self.jump.is_empty() && (owner == NIL || self.node(owner).prefix.len() < JUMP_BITS) {
            if old != NIL && self.node(old).prefix.len() >= JUMP_BITS {
                let b = Self::block(self.node(old).prefix.addr());
                if self.jump[b][0] == old {
                    self.jump[b][0] = NIL;
                }
            }
            if v != NIL && self.node(v).prefix.len() >= JUMP_BITS {
                let b = Self::block(self.node(v).prefix.addr());
                self.jump[b][0] = v;
            }
        }
    }

    /// The route node of exactly `p` (hash `h`), from the index (which must be complete).
    #[inline]
    fn find(&self, h: u64, p: &Prefix<A>) -> Option<u32> {
        debug_assert!(self.pending.is_empty());
        self.index.find(h, |i| self.node(i).prefix == *p)
    }

    /// The node of exactly `p`: from the index (a route), or while new routes wait for it,
    /// by a walk (a route or a node joining two subtrees).
    #[inline]
    fn exact(&self, p: &Prefix<A>) -> Option<u32> {
        if self.pending.is_empty() {
            return self.find(index::hash(p), p);
        }
        let (mut cur, _) = self.start(p);
        while cur != NIL {
            let n = self.node(cur);
            if n.prefix == *p {
                return Some(cur);
            }
            if !n.prefix.covers(p) {
                return None;
            }
            cur = n.child[p.addr().bit(n.prefix.len()) as usize];
        }
        None
    }

    /// Completes the exact-match index now (routes inserted in order wait for it), so
    /// that neither the next change nor a clone pays for it: loaders call it once the
    /// whole table is in.
    pub(crate) fn complete_index(&mut self) {
        self.flush_index();
    }

    /// Adds the waiting route nodes to the index: many (against the index's size) by
    /// rebuilding it in order of home slot, a few one by one with their slots prefetched.
    #[inline]
    fn flush_index(&mut self) {
        if !self.pending.is_empty() {
            self.flush_pending();
        }
    }

    #[inline(never)]
    fn flush_pending(&mut self) {
        let nodes = &self.nodes;
        let hash = |i: u32| index::hash(&nodes[i as usize].prefix);
        if self.pending.len() * 4 >= self.index.len() {
            self.index
                .rebuild(self.pending.iter().map(|&i| (hash(i), i)));
        } else {
            const AHEAD: usize = 8;
            self.index.reserve(self.pending.len());
            for k in 0..self.pending.len() {
                if let Some(&j) = self.pending.get(k + AHEAD) {
                    self.index.prefetch(hash(j));
                }
                let i = self.pending[k];
                self.index.insert(hash(i), i);
            }
        }
        self.pending.clear();
    }

    /// A new node (the caller indexes it if it carries a route).
    fn alloc(&mut self, prefix: Prefix<A>, nh: u32) -> u32 {
        let node = Node {
            prefix,
            nh,
            child: [NIL, NIL],
            parent: NIL,
        };
        if let Some(i) = self.free.pop() {
            self.nodes[i as usize] = node;
            i
        } else {
            let i = u32::try_from(self.nodes.len()).expect("Rib holds at most 2^32 - 1 nodes");
            assert!(i != NIL, "Rib holds at most 2^32 - 1 nodes");
            if self.nodes.len() == self.nodes.capacity() {
                self.grow_nodes();
            }
            self.nodes.push(node);
            i
        }
    }

    /// Adds route node `i` to the index: now under its prefix's hash `h` if given, else
    /// when the index is next needed.
    #[inline]
    fn index_route(&mut self, i: u32, h: Option<u64>) {
        match h {
            Some(h) => self.index.insert(h, i),
            None => self.pending.push(i),
        }
    }

    /// Doubles the node array. (Not advised for transparent huge pages: where the kernel
    /// compacts memory to supply them on a fault, growing a large table can stall for
    /// hundreds of milliseconds.)
    #[cold]
    fn grow_nodes(&mut self) {
        let cap = (self.nodes.capacity() * 2).max(16);
        self.nodes.reserve_exact(cap - self.nodes.len());
    }

    fn release(&mut self, i: u32) {
        if i == self.last {
            self.last = NIL;
        }
        let n = &mut self.nodes[i as usize];
        n.nh = 0;
        n.child = [NIL, NIL];
        n.parent = NIL;
        self.free.push(i);
    }

    /// Inserts or replaces a route; returns the next hop it replaced.
    #[inline]
    pub fn insert(&mut self, prefix: Prefix<A>, nh: NextHop) -> Option<NextHop> {
        self.insert_hashed(prefix, nh, || index::hash(&prefix))
    }

    /// [`insert`](Self::insert), with the prefix's hash from `hash` (called only if the
    /// index is asked).
    #[inline]
    fn insert_hashed(
        &mut self,
        prefix: Prefix<A>,
        nh: NextHop,
        hash: impl FnOnce() -> u64,
    ) -> Option<NextHop> {
        if self.max_seen.is_none_or(|m| prefix > m) {
            // Beyond every prefix the trie has held, so new: no index probe (a table
            // loaded in (address, length) order takes this path for every route).
            self.insert_new(prefix, nh.get(), None);
            return None;
        }
        self.flush_index();
        let h = hash();
        if let Some(i) = self.find(h, &prefix) {
            let old = core::mem::replace(&mut self.nodes[i as usize].nh, nh.get());
            return NextHop::new(old);
        }
        self.insert_new(prefix, nh.get(), Some(h));
        None
    }

    /// Inserts a route whose prefix is not a route yet (it may be a node joining two
    /// subtrees); indexed now under hash `h` if given, else when the index is next needed.
    fn insert_new(&mut self, prefix: Prefix<A>, nh: u32, h: Option<u64>) {
        let beyond = self.max_seen.is_none_or(|m| prefix > m);
        self.in_order &= beyond;
        // The walk's node `cur` and the slot that stores it; `None`: not looked up yet
        // (the start of a walk from the jump table, whose slot is needed only if the new
        // node goes in its place, and costs a read of its parent).
        let (mut slot, mut cur) = if beyond && self.last != NIL {
            // Every node is at most the last one, so the deepest node covering `prefix`
            // covers the last one too: walk up to it.
            let mut up = self.last;
            while up != NIL && !self.node(up).prefix.covers(&prefix) {
                up = self.node(up).parent;
            }
            let slot = if up == NIL {
                Slot::Root
            } else {
                Slot::Child(up, prefix.addr().bit(self.node(up).prefix.len()) as usize)
            };
            (Some(slot), self.get_slot(slot))
        } else {
            match self.start(&prefix).0 {
                NIL => (Some(Slot::Root), self.root),
                start => (None, start),
            }
        };
        let n = loop {
            if cur == NIL {
                let slot = slot.expect("an empty slot is reached from its owner");
                let n = self.alloc(prefix, nh);
                self.set_slot(slot, n);
                break n;
            }
            let np = self.node(cur).prefix;
            if np == prefix {
                // A node that joined two subtrees becomes a route.
                debug_assert!(self.node(cur).nh == 0, "the index holds every route");
                self.nodes[cur as usize].nh = nh;
                break cur;
            }
            if np.covers(&prefix) {
                let dir = prefix.addr().bit(np.len()) as usize;
                slot = Some(Slot::Child(cur, dir));
                cur = self.node(cur).child[dir];
                continue;
            }
            let slot = slot.unwrap_or_else(|| self.slot_of(cur));
            let n = self.alloc(prefix, nh);
            if prefix.covers(&np) {
                self.set_slot(slot, n);
                self.set_slot(Slot::Child(n, np.addr().bit(prefix.len()) as usize), cur);
            } else {
                // Neither covers the other: join them under a glue node at their common prefix.
                let common = np
                    .addr()
                    .common_prefix_len(prefix.addr())
                    .min(np.len())
                    .min(prefix.len());
                let gp = Prefix::new_truncating(prefix.addr(), common);
                let glue = self.alloc(gp, 0);
                let dir = prefix.addr().bit(common) as usize;
                self.set_slot(slot, glue);
                self.set_slot(Slot::Child(glue, dir), n);
                self.set_slot(Slot::Child(glue, 1 - dir), cur);
            }
            break n;
        };
        if beyond {
            // A node made here is `prefix` or a prefix before it.
            self.max_seen = Some(prefix);
            self.last = n;
        }
        self.index_route(n, h);
        self.route_added(n);
    }

    /// Node `i` has just become a route: counts, and the jump table's covering routes.
    fn route_added(&mut self, i: u32) {
        let len = self.node(i).prefix.len();
        self.len += 1;
        if self.hist.is_empty() {
            self.hist = vec![0; A::BITS as usize + 1];
        }
        self.hist[len as usize] += 1;
        if self.jump.is_empty() {
            if self.len >= self.jump_from {
                self.build_jump();
            }
        } else if len < JUMP_BITS {
            for b in Self::blocks(&self.node(i).prefix) {
                let above = self.jump[b][1];
                if above == NIL || self.node(above).prefix.len() < len {
                    self.jump[b][1] = i;
                }
            }
        }
    }

    /// Node `i` is about to stop being a route (it is still linked).
    fn route_removed(&mut self, i: u32) {
        let len = self.node(i).prefix.len();
        self.len -= 1;
        self.hist[len as usize] -= 1;
        if !self.jump.is_empty() && len < JUMP_BITS {
            // Its blocks fall back to the next shorter route above it.
            let mut up = self.node(i).parent;
            while up != NIL && self.node(up).nh == 0 {
                up = self.node(up).parent;
            }
            for b in Self::blocks(&self.node(i).prefix) {
                if self.jump[b][1] == i {
                    self.jump[b][1] = up;
                }
            }
        }
    }

    /// Builds the jump table from the trie.
    #[cold]
    fn build_jump(&mut self) {
        self.jump = vec![[NIL, NIL]; 1 << JUMP_BITS];
        if self.root == NIL {
            return;
        }
        // Pre-order: a covering route fills its blocks before the routes inside it do.
        let mut stack = vec![self.root];
        while let Some(i) = stack.pop() {
            let n = *self.node(i);
            if n.prefix.len() >= JUMP_BITS {
                self.jump[Self::block(n.prefix.addr())][0] = i;
                continue;
            }
            if n.nh != 0 {
                for b in Self::blocks(&n.prefix) {
                    self.jump[b][1] = i;
                }
            }
            stack.extend([n.child[1], n.child[0]].into_iter().filter(|&c| c != NIL));
        }
    }

    /// Removes a route; returns its next hop, or `None` if it was absent.
    #[inline]
    pub fn remove(&mut self, prefix: &Prefix<A>) -> Option<NextHop> {
        self.remove_hashed(prefix, index::hash(prefix))
    }

    /// [`remove`](Self::remove) of a prefix whose hash is `h`.
    #[inline]
    fn remove_hashed(&mut self, prefix: &Prefix<A>, h: u64) -> Option<NextHop> {
        self.flush_index();
        let i = self.find(h, prefix)?;
        let old = NextHop::new(self.node(i).nh).expect("the index holds routes");
        self.route_removed(i);
        self.in_order = false;
        self.index.remove(h, i);
        self.nodes[i as usize].nh = 0;
        self.compact(i);
        Some(old)
    }

    /// Hints the CPU to fetch what a change to `prefix` reads first: the prefix's slot of
    /// the exact-match index and its block of the jump table. It changes nothing; a
    /// caller applying many changes one by one calls it for a change some steps ahead,
    /// so that the cache misses of successive changes overlap (as
    /// [`apply_each`](Self::apply_each) does). O(1): a hash and two prefetches.
    #[inline]
    pub fn prefetch(&self, prefix: &Prefix<A>) {
        self.prefetch_hashed(prefix);
    }

    /// [`prefetch`](Self::prefetch); returns the prefix's hash.
    #[inline]
    fn prefetch_hashed(&self, prefix: &Prefix<A>) -> u64 {
        let h = index::hash(prefix);
        self.index.prefetch(h);
        if !self.jump.is_empty() && prefix.len() >= JUMP_BITS {
            crate::simd::prefetch(&self.jump[Self::block(prefix.addr())]);
        }
        h
    }

    /// Applies `changes` in order, as [`Change::apply_to`] one by one would, and calls
    /// `then(rib, k, changed)` after the `k`-th with the table as it then stands and
    /// whether that change altered its content; stops at the first error `then` returns.
    /// The cache misses of successive changes overlap: the index slots and jump-table
    /// blocks of the changes a few steps ahead are prefetched. The cost per change is
    /// that of [`insert`](Self::insert) or [`remove`](Self::remove).
    pub fn apply_each<E>(
        &mut self,
        changes: &[Change<A>],
        mut then: impl FnMut(&Self, usize, bool) -> Result<(), E>,
    ) -> Result<(), E> {
        // The hashes of the changes prefetched and not applied yet, change `k`'s at
        // `k % PREFETCH_AHEAD`.
        let mut hashes = [0u64; PREFETCH_AHEAD];
        for (k, c) in changes.iter().take(Self::PREFETCH_AHEAD).enumerate() {
            hashes[k] = self.prefetch_hashed(&c.prefix());
        }
        for (k, c) in changes.iter().enumerate() {
            let at = k % Self::PREFETCH_AHEAD;
            let h = hashes[at];
            if let Some(ahead) = changes.get(k + Self::PREFETCH_AHEAD) {
                hashes[at] = self.prefetch_hashed(&ahead.prefix());
            }
            let changed = match *c {
                Change::Announce(p, nh) => self.insert_hashed(p, nh, || h) != Some(nh),
                Change::Withdraw(p) => self.remove_hashed(&p, h).is_some(),
            };
            then(self, k, changed)?;
        }
        Ok(())
    }

    /// Applies `changes` in order (a batch of route updates, a table reload), with the
    /// cache misses of successive changes overlapped as in
    /// [`apply_each`](Self::apply_each); returns how many altered the table's content.
    pub fn apply_changes(&mut self, changes: &[Change<A>]) -> usize {
        let mut altered = 0;
        let done: Result<(), core::convert::Infallible> =
            self.apply_each(changes, |_, _, changed| {
                altered += changed as usize;
                Ok(())
            });
        let Ok(()) = done;
        altered
    }

    /// Removes node `cur`, which no longer carries a route, if it has fewer than two
    /// children; then its parent, if that is left a glue node with one child.
    fn compact(&mut self, cur: u32) {
        let [c0, c1] = self.node(cur).child;
        let slot = self.slot_of(cur);
        match (c0 != NIL, c1 != NIL) {
            (true, true) => {}
            (true, false) | (false, true) => {
                self.set_slot(slot, if c0 != NIL { c0 } else { c1 });
                self.release(cur);
            }
            (false, false) => {
                self.set_slot(slot, NIL);
                self.release(cur);
                if let Slot::Child(parent, _) = slot {
                    let pn = self.node(parent);
                    if pn.nh == 0 {
                        let only = pn.child[0].min(pn.child[1]);
                        debug_assert!(only != NIL && pn.child[0].max(pn.child[1]) == NIL);
                        let ps = self.slot_of(parent);
                        self.set_slot(ps, only);
                        self.release(parent);
                    }
                }
            }
        }
    }

    /// Checks every structural invariant (tests): parent pointers, path compression,
    /// the index, the jump table, the counts.
    #[cfg(test)]
    fn check_invariants(&self) {
        let mut seen = 0usize;
        let mut routes = 0usize;
        let mut hist = vec![0usize; A::BITS as usize + 1];
        if self.root != NIL {
            assert_eq!(self.node(self.root).parent, NIL, "the root has no parent");
            let mut stack = vec![self.root];
            while let Some(i) = stack.pop() {
                seen += 1;
                let n = *self.node(i);
                let waiting = self.pending.contains(&i);
                let indexed = self.index.find(index::hash(&n.prefix), |j| j == i);
                if n.nh != 0 {
                    assert_eq!(self.exact(&n.prefix), Some(i));
                    assert!(waiting != indexed.is_some(), "{} indexed once", n.prefix);
                } else {
                    assert!(!waiting && indexed.is_none(), "{} is no route", n.prefix);
                }
                if let Some(m) = self.max_seen {
                    assert!(n.prefix <= m);
                    if n.prefix == m {
                        assert!(self.last == i || self.last == NIL, "the last node");
                    }
                }
                if n.nh != 0 {
                    routes += 1;
                    hist[n.prefix.len() as usize] += 1;
                } else {
                    assert!(
                        n.child[0] != NIL && n.child[1] != NIL,
                        "a glue node joins two subtrees"
                    );
                }
                for (d, &c) in n.child.iter().enumerate() {
                    if c == NIL {
                        continue;
                    }
                    let cn = self.node(c);
                    assert_eq!(cn.parent, i, "parent of {}", cn.prefix);
                    assert!(n.prefix.covers(&cn.prefix) && cn.prefix.len() > n.prefix.len());
                    assert_eq!(cn.prefix.addr().bit(n.prefix.len()) as usize, d);
                    stack.push(c);
                }
            }
        }
        assert_eq!(seen + self.free.len(), self.nodes.len(), "no node leaks");
        if self.last != NIL {
            assert_eq!(Some(self.node(self.last).prefix), self.max_seen);
            assert!(!self.free.contains(&self.last));
        }
        assert_eq!(
            self.index.len() + self.pending.len(),
            routes,
            "the index holds every route"
        );
        assert!(self.index.nodes().all(|i| !self.free.contains(&i)));
        assert_eq!(routes, self.len);
        if self.in_order {
            assert!(self.free.is_empty(), "no node freed");
            let scanned: Vec<_> = self
                .nodes
                .iter()
                .filter(|n| n.nh != 0)
                .map(|n| n.prefix)
                .collect();
            assert!(scanned.windows(2).all(|w| w[0] < w[1]), "routes in order");
            assert_eq!(scanned.len(), routes);
        }
        if !self.hist.is_empty() {
            assert_eq!(hist, self.hist);
        }
        if self.len >= self.jump_from.max(1) {
            assert!(!self.jump.is_empty(), "a large table keeps a jump table");
        }
        if !self.jump.is_empty() {
            let mut want = Rib {
                jump: Vec::new(),
                ..self.clone()
            };
            want.build_jump();
            assert!(want.jump == self.jump, "the jump table is the trie's");
        }
    }
}

impl<A: Address> FromIterator<(Prefix<A>, NextHop)> for Rib<A> {
    fn from_iter<I: IntoIterator<Item = (Prefix<A>, NextHop)>>(iter: I) -> Self {
        let mut rib = Rib::new();
        rib.extend(iter);
        rib
    }
}

impl<A: Address> Extend<(Prefix<A>, NextHop)> for Rib<A> {
    fn extend<I: IntoIterator<Item = (Prefix<A>, NextHop)>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        self.index.reserve(iter.size_hint().0);
        for (p, nh) in iter {
            self.insert(p, nh);
        }
        self.flush_index();
    }
}

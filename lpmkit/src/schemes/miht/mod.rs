//! The Multi-Index Hybrid Trie (MIHT), the baseline of the Bloomfwd paper (§5).
//!
//! C.-H. Lin, C.-Y. Hsu and S.-Y. Hsieh, "A multi-index hybrid trie for lookup and
//! updates", IEEE TPDS 25(10), 2014, as the Bloomfwd paper describes and evaluates it
//! (§5.1): a B+ tree of
//! order `m` over `k`-bit prefix keys whose leaves point to priority tries
//! (Lim, Yim, Swartzlander 2010). This module follows §5.1 and the priority-trie definition, checked against the public C
//! code of the Bloomfwd authors' MIHT.
//!
//! # What is implemented
//!
//! * **Keys and suffixes (§5.1).** A prefix `p` of length `l >= k` is split into its
//!   *k-prefix key* (its first `k` bits) and its *k-suffix* (the other `l − k` bits).
//!   Keys go into the B+ tree (`bptree.rs`: the i-nodes, internal and external), whose
//!   external nodes point to one priority trie per key (`ptrie.rs`: the d-nodes) holding
//!   the suffixes and next hops. Prefixes shorter than `k` are keyless and live in their
//!   own priority trie, **PT[−1]** (the default route included, as a prefix of length 0).
//!   The root holds the two pointers: to the B+ tree and to PT[−1].
//! * **Lookup (§5.1).** The destination's key is searched from the root of the B+ tree
//!   down, with a binary search in each node; if a leaf holds it, its priority trie is
//!   searched with the destination's suffix, and a match is the longest match. Otherwise
//!   (no key, or no suffix matches) PT[−1] is searched with the whole address.
//! * **(k, m).** `(16, 16)` for IPv4 and `(32, 32)` for IPv6, as the paper evaluates
//!   (settings `k` and `m`). Nodes are 64-byte aligned (§5.1: a node's sixteen 32-bit
//!   keys fetched in one memory access).
//! * **Incremental insert and delete** ([`MihtWriter`], driven by
//!   [`crate::sync::InPlace`], or [`IncrementalFib`](crate::IncrementalFib)): a route goes into (or out of) its
//!   key's priority trie or PT[−1] with the priority trie's insert or delete; a key whose
//!   trie appears (or empties) goes into (or out of) the B+ tree with its insert (splits)
//!   or delete (borrows, merges). Nodes are never written once readers can reach them:
//!   every node an update changes is written anew (path copying), all the changes of one
//!   `apply` go into one new version, and the version is published with **one atomic
//!   store** of the root (the B+ tree root and the PT[−1] root in one 64-bit word); the
//!   replaced nodes are retired and reused after the grace period. Each lookup therefore
//!   sees one whole version.
//!
//! # Differences
//!
//! The paper's MIHT on the Xeon Phi is sequential per lookup (its §5.2: SIMD did not help
//! the node search); so is this one. The C code keeps the default route in a global;
//! here it is PT[−1]'s length-0 prefix. Path copying (rather than the C code's in-place
//! pointer surgery) is what makes updates safe under concurrent readers.
//!
//! ```
//! use lpmkit::{Fib, IncrementalFib, Change, Ipv4, NextHop, Rib};
//! use lpmkit::schemes::miht::{Miht, MihtConfig};
//!
//! let nh = |v| NextHop::new(v).unwrap();
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, nh(1));       // keyless: PT[-1]
//! rib.insert("10.1.0.0/16".parse()?, nh(2));      // key 10.1, suffix of length 0
//! rib.insert("10.1.2.0/24".parse()?, nh(3));      // key 10.1, suffix 0x02/8
//! let mut fib = Miht::build(&rib, &MihtConfig::default())?;
//! assert_eq!(fib.lookup(0x0a01_0203), Some(nh(3)));
//! assert_eq!(fib.lookup(0x0a01_0303), Some(nh(2)));
//! assert_eq!(fib.lookup(0x0a02_0000), Some(nh(1)));
//!
//! let change = Change::Withdraw("10.1.0.0/16".parse()?);
//! change.apply_to(&mut rib);
//! fib.apply(&rib, &[change])?;
//! assert_eq!(fib.lookup(0x0a01_0303), Some(nh(1)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bptree;
mod ptrie;
mod writer;

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::fib::{BuildError, Config, Fib, Settings, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Family};
use crate::scheme::Patchable;
use crate::schemes::common::{Arena, FreeSpace};

use bptree::{Tree, TreeSpace};
use ptrie::PtNode;

#[doc(hidden)]
pub use writer::RetiredNode;

/// Build options for [`Miht`]: the key length `k` and the B+ tree order `m`.
///
/// ```
/// use lpmkit::schemes::miht::MihtConfig;
/// assert_eq!(MihtConfig::for_family(lpmkit::Family::V6).k, Some(32));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MihtConfig {
    /// Prefix key bits (1…32, at most the address bits); `None`: 16 for IPv4, 32 for IPv6.
    pub k: Option<u8>,
    /// Order of the B+ tree (3…64); `None`: 16 for IPv4, 32 for IPv6.
    pub m: Option<usize>,
}

impl MihtConfig {
    /// The paper's configuration for `family`: (16, 16) for IPv4, (32, 32) for IPv6.
    pub fn for_family(family: Family) -> Self {
        match family {
            Family::V4 => MihtConfig {
                k: Some(16),
                m: Some(16),
            },
            Family::V6 => MihtConfig {
                k: Some(32),
                m: Some(32),
            },
        }
    }

    fn resolve<A: Address>(&self) -> Result<(u8, usize), BuildError> {
        let d = Self::for_family(A::FAMILY);
        let (k, m) = (self.k.or(d.k).unwrap_or(16), self.m.or(d.m).unwrap_or(16));
        let bad = |reason: String| BuildError::InvalidConfig {
            scheme: "miht".into(),
            reason,
        };
        if !(1..=32.min(A::BITS)).contains(&k) {
            return Err(bad(format!("k = {k} is outside 1..={}", 32.min(A::BITS))));
        }
        if !(3..=64).contains(&m) {
            return Err(bad(format!("m = {m} is outside 3..=64")));
        }
        Ok((k, m))
    }
}

/// What MIHT lookups read: the root word, the B+ tree and the priority-trie nodes.
#[doc(hidden)]
pub struct MihtTable<A: Address> {
    /// The root: B+ tree root (high 32 bits) and PT[−1] root (low 32 bits); the one word an
    /// update stores.
    root: Root,
    k: u8,
    pub(crate) tree: Tree,
    pub(crate) nodes: Arena<PtNode<A>>,
    /// Node tops for figures (set by the writer, on a line of their own).
    tops: Tops,
    _family: PhantomData<fn() -> A>,
}

#[repr(align(64))]
#[derive(Debug)]
struct Root(AtomicU64);

#[repr(align(64))]
#[derive(Debug, Default)]
struct Tops {
    tree: AtomicUsize,
    nodes: AtomicUsize,
}

impl<A: Address> core::fmt::Debug for MihtTable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("MihtTable")
            .field("k", &self.k)
            .field("m", &self.tree.m)
            .finish()
    }
}

/// The writer side of a [`MihtTable`]: free space, update counters.
#[derive(Debug)]
#[doc(hidden)]
pub struct MihtWriter<A: Address> {
    config: MihtConfig,
    tree_space: TreeSpace,
    node_space: FreeSpace,
    /// Node arena room factor (grows when an update finds the arenas full).
    room: usize,
    build_ms: f64,
    updates: u64,
    rebuilds: u64,
    _family: PhantomData<fn() -> A>,
}

/// The MIHT for `u32` (IPv4) or `u128` (IPv6) addresses: its table and its writer, for one
/// thread ([`IncrementalFib`](crate::IncrementalFib)) or handed to [`crate::sync::InPlace`].
pub type Miht<A> = Patchable<A, MihtWriter<A>>;

impl Config for MihtConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        (
            "k",
            "prefix-key bits, 1..=32 (default 16 for IPv4, 32 for IPv6)",
        ),
        (
            "m",
            "order of the B+ tree, 3..=64 (default 16 for IPv4, 32 for IPv6)",
        ),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        Ok(MihtConfig {
            k: s.get("k")?,
            m: s.get("m")?,
        })
    }
}

/// Structure figures of a [`Miht`].
#[derive(Clone, Debug, Default, PartialEq)]
#[doc(hidden)]
pub struct MihtStats {
    /// `k`.
    pub k: u8,
    /// `m`.
    pub m: usize,
    /// Keys in the B+ tree (priority tries, PT[−1] excluded).
    pub keys: u64,
    /// B+ tree nodes and height.
    pub tree_nodes: u64,
    /// B+ tree height (levels).
    pub height: u64,
    /// Prefixes in the priority tries (PT[−1] included).
    pub trie_nodes: u64,
    /// Of them, priority nodes.
    pub priority_nodes: u64,
    /// Prefixes in PT[−1].
    pub keyless: u64,
    /// Bytes of the B+ tree and of the trie nodes.
    pub bytes: u64,
}

impl<A: Address> Miht<A> {
    #[doc(hidden)]
    /// Structure figures; also checks the B+ tree and priority-trie invariants.
    pub fn miht_stats(&self) -> Result<MihtStats, String> {
        writer::stats(self.table())
    }

    /// Checks the structure against `rib` (every route in its trie, every invariant);
    /// for tests.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn check_against(&self, rib: &crate::rib::Rib<A>) -> Result<(), String> {
        writer::check_against(self.table(), rib)
    }
}

impl<A: Address> MihtTable<A> {
    /// The trie node `i`.
    #[inline(always)]
    fn node(&self, i: u32) -> PtNode<A> {
        // SAFETY: trie nodes reachable from a published root lie below the committed top
        // and are never written while reachable (path copying).
        unsafe { self.nodes.get(i as usize) }
    }

    /// The roots `(B+ tree, PT[−1])` of the published version.
    #[inline(always)]
    fn roots(&self) -> (u32, u32) {
        let r = self.root.0.load(Ordering::Acquire);
        ((r >> 32) as u32, r as u32)
    }

    /// The suffix of `addr` below its `k`-bit key, left-aligned.
    #[inline(always)]
    fn suffix(&self, addr: A) -> A {
        if self.k as u32 >= A::BITS as u32 {
            A::ZERO
        } else {
            addr.shl(self.k as u32)
        }
    }

    #[inline(always)]
    fn lookup_in(&self, roots: (u32, u32), addr: A) -> u32 {
        let key = addr.top_bits(self.k as u32 - 1) << 1 | addr.bit(self.k - 1) as u32;
        let pt = self.tree.find(roots.0, key);
        if pt != ptrie::NIL {
            let nh = ptrie::lookup(pt, self.suffix(addr), |i| self.node(i));
            if nh != 0 {
                return nh;
            }
        }
        ptrie::lookup(roots.1, addr, |i| self.node(i))
    }

    fn bytes(&self) -> usize {
        self.tops.tree.load(Ordering::Relaxed) * self.tree.s * 4
            + self.tops.nodes.load(Ordering::Relaxed) * core::mem::size_of::<PtNode<A>>()
    }
}

impl<A: Address> Fib<A> for MihtTable<A> {
    /// A lookup that stalls after reading the root word (`stall` runs in between), then
    /// walks the version it read: what a reader descheduled inside a lookup does. For the
    /// concurrency tests: that version must still be intact, however many updates ran.
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        let roots = self.roots();
        stall();
        self.lookup_in(roots, key)
    }

    fn name(&self) -> &str {
        "miht"
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        NextHop::new(self.lookup_in(self.roots(), addr))
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let roots = self.roots();
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = self.lookup_in(roots, a);
        }
    }

    fn memory_bytes(&self) -> usize {
        self.bytes()
    }
}

/// The MIHT figures `lpmkit info` prints, with the writer's counters.
fn miht_stats<A: Address>(table: &MihtTable<A>, w: &MihtWriter<A>) -> Stats {
    let mut s = Stats::new();
    match writer::stats(table) {
        Ok(m) => {
            s.push("k", StatValue::Count(m.k as u64));
            s.push("m", StatValue::Count(m.m as u64));
            s.push("keys", StatValue::Count(m.keys));
            s.push("btree_nodes", StatValue::Count(m.tree_nodes));
            s.push("height", StatValue::Count(m.height));
            s.push("trie_nodes", StatValue::Count(m.trie_nodes));
            s.push("priority_nodes", StatValue::Count(m.priority_nodes));
            s.push("keyless", StatValue::Count(m.keyless));
        }
        Err(e) => s.push("error", StatValue::Text(e)),
    }
    s.push("build", StatValue::Millis(w.build_ms));
    s.push("updates", StatValue::Count(w.updates));
    s.push("rebuilds", StatValue::Count(w.rebuilds));
    s
}

#[cfg(test)]
mod tests;

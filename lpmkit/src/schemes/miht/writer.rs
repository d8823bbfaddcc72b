//! Building a MIHT, updating it in place under readers (one new version per `apply`,
//! published with one store of the root word), and its figures and checks.

use core::marker::PhantomData;
use core::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::bptree::{self, Tree, TreeSpace};
use super::ptrie::{self, PtNode, Store, VecStore, NIL};
use super::{Miht, MihtConfig, MihtStats, MihtTable, MihtWriter, Root, Tops};
use crate::fib::{BuildError, Change, InPlaceWriter, Patched, Stats, UpdateStats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{ms_since, Arena, FreeSpace};

/// A node an update replaced (reused after its grace period): of the B+ tree, or a trie
/// node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetiredNode {
    tree: bool,
    pos: u32,
}

/// The `k`-bit key of `a`.
fn key_of<A: Address>(a: A, k: u8) -> u32 {
    a.top_bits(k as u32 - 1) << 1 | a.bit(k - 1) as u32
}

/// The bits of `a` after its first `k`, left-aligned.
fn suffix_of<A: Address>(a: A, k: u8) -> A {
    if k as u32 >= A::BITS as u32 {
        A::ZERO
    } else {
        a.shl(k as u32)
    }
}

fn full(scheme: &str, what: &'static str) -> BuildError {
    BuildError::CapacityExceeded {
        scheme: scheme.to_string(),
        what,
        max: 0,
        requested: 0,
    }
}

/// Builds the table and its writer; `room` scales the arenas' reservations.
pub(super) fn build<A: Address>(
    rib: &Rib<A>,
    config: &MihtConfig,
    room: usize,
) -> Result<(MihtTable<A>, MihtWriter<A>), BuildError> {
    let t0 = Instant::now();
    let (k, m) = config.resolve::<A>()?;
    // Every trie built in one vector (node indices are arena positions).
    let mut store = VecStore::<A>::default();
    let mut pt1 = NIL;
    let mut entries: Vec<(u32, u32)> = Vec::new();
    // Routes come in address order: the routes of one key are consecutive.
    for (p, nh) in rib.iter() {
        let full_err = || full("miht", "trie nodes");
        if p.len() < k {
            pt1 = ptrie::insert(&mut store, pt1, p.addr(), p.len(), nh.get())
                .map_err(|_| full_err())?;
        } else {
            let key = key_of(p.addr(), k);
            let root = match entries.last() {
                Some(&(kk, r)) if kk == key => r,
                _ => {
                    entries.push((key, NIL));
                    NIL
                }
            };
            let r = ptrie::insert(
                &mut store,
                root,
                suffix_of(p.addr(), k),
                p.len() - k,
                nh.get(),
            )
            .map_err(|_| full_err())?;
            entries.last_mut().expect("pushed").1 = r;
        }
    }
    let n = store.nodes.len();
    let mut nodes = Arena::<PtNode<A>>::new((n + 1).saturating_mul(3 + 2 * room) + (1 << 16))
        .ok_or_else(|| full("miht", "trie nodes"))?;
    // SAFETY: no reader can see the arena yet.
    if !unsafe { nodes.grow(n) } {
        return Err(full("miht", "trie nodes"));
    }
    nodes.slice_mut(0..n).copy_from_slice(&store.nodes);
    let node_space = FreeSpace::new(n);
    let leaves = entries.len().div_ceil(m - 1);
    let tree = Tree::new(m, (2 * leaves + 16).saturating_mul(3 + 2 * room) + 1024)
        .ok_or_else(|| full("miht", "B+ tree nodes"))?;
    let mut tree_space = TreeSpace {
        space: FreeSpace::new(0),
        dropped: Vec::new(),
    };
    let bt = tree
        .bulk(&mut tree_space, &entries)
        .map_err(|_| full("miht", "B+ tree nodes"))?;
    let table = MihtTable {
        root: Root(AtomicU64::new((bt as u64) << 32 | pt1 as u64)),
        k,
        tops: Tops {
            tree: tree_space.space.top().into(),
            nodes: n.into(),
        },
        tree,
        nodes,
        _family: PhantomData,
    };
    let writer = MihtWriter {
        config: MihtConfig {
            k: Some(k),
            m: Some(m),
        },
        tree_space,
        node_space,
        room,
        build_ms: ms_since(t0),
        updates: 0,
        rebuilds: 0,
        _family: PhantomData,
    };
    Ok((table, writer))
}

/// The trie nodes of a live table, copied before they change (path copying).
struct ArenaStore<'a, A: Address> {
    nodes: &'a Arena<PtNode<A>>,
    space: &'a mut FreeSpace,
    dropped: &'a mut Vec<u32>,
}

impl<A: Address> Store<A> for ArenaStore<'_, A> {
    fn get(&self, i: u32) -> PtNode<A> {
        // SAFETY: a node of the version being made (published or written by this update).
        unsafe { self.nodes.get(i as usize) }
    }
    fn alloc(&mut self, n: PtNode<A>) -> Option<u32> {
        let i = self.space.alloc(1);
        // SAFETY: the one writer (the caller of `patch`).
        if !unsafe { self.nodes.grow(self.space.top()) } {
            self.space.free(i, 1);
            return None;
        }
        // SAFETY: slot `i` was just allocated: committed and unreachable.
        unsafe { self.nodes.write(i, n) };
        Some(i as u32)
    }
    fn set(&mut self, i: u32, n: PtNode<A>) {
        // SAFETY: `i` was allocated by this update (path copying never hands a live node
        // to `set`): unreachable by readers until the new version is published.
        unsafe { self.nodes.write(i as usize, n) };
    }
    fn drop_node(&mut self, i: u32) {
        self.dropped.push(i);
    }
    fn copies(&self) -> bool {
        true
    }
}

/// Read-only access for checks and figures.
struct ReadStore<'a, A: Address>(&'a Arena<PtNode<A>>);

impl<A: Address> Store<A> for ReadStore<'_, A> {
    fn get(&self, i: u32) -> PtNode<A> {
        // SAFETY: a node of the published version.
        unsafe { self.0.get(i as usize) }
    }
    fn alloc(&mut self, _: PtNode<A>) -> Option<u32> {
        unreachable!("read only")
    }
    fn set(&mut self, _: u32, _: PtNode<A>) {
        unreachable!("read only")
    }
    fn drop_node(&mut self, _: u32) {}
    fn copies(&self) -> bool {
        true
    }
}

impl<A: Address> InPlaceWriter<A> for MihtWriter<A> {
    type Table = MihtTable<A>;
    type Retired = RetiredNode;
    type Config = MihtConfig;

    fn build(rib: &Rib<A>, config: &MihtConfig) -> Result<(Box<MihtTable<A>>, Self), BuildError> {
        let (table, writer) = build(rib, config, 0)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &MihtConfig {
        &self.config
    }

    fn stats(&self, table: &MihtTable<A>) -> Stats {
        super::miht_stats(table, self)
    }

    unsafe fn patch(
        &mut self,
        table: &MihtTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
        retire: &mut Vec<RetiredNode>,
    ) -> Result<Patched<MihtTable<A>>, BuildError> {
        self.updates += changes.len() as u64;
        let k = table.k;
        let mut prefixes: Vec<Prefix<A>> = changes.iter().map(|c| c.prefix()).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let (mut bt, mut pt1) = table.roots();
        let mut dropped = Vec::new();
        let mut result = Ok(());
        for p in prefixes {
            let want = rib.get(&p).map(NextHop::get);
            let mut store = ArenaStore {
                nodes: &table.nodes,
                space: &mut self.node_space,
                dropped: &mut dropped,
            };
            let apply = |s: &mut ArenaStore<'_, A>, root: u32, bits: A, len: u8| match want {
                Some(nh) => ptrie::insert(s, root, bits, len, nh),
                None => ptrie::delete(s, root, bits, len),
            };
            if p.len() < k {
                match apply(&mut store, pt1, p.addr(), p.len()) {
                    Ok(r) => pt1 = r,
                    Err(_) => {
                        result = Err(());
                        break;
                    }
                }
                continue;
            }
            let key = key_of(p.addr(), k);
            let old = table.tree.find(bt, key);
            let new = match apply(&mut store, old, suffix_of(p.addr(), k), p.len() - k) {
                Ok(r) => r,
                Err(_) => {
                    result = Err(());
                    break;
                }
            };
            if new == old {
                continue;
            }
            let r = if new == NIL {
                table.tree.delete(&mut self.tree_space, bt, key)
            } else {
                table.tree.insert(&mut self.tree_space, bt, key, new)
            };
            match r {
                Ok(r) => bt = r,
                Err(bptree::Full) => {
                    result = Err(());
                    break;
                }
            }
        }
        table
            .tops
            .nodes
            .store(self.node_space.top(), Ordering::Relaxed);
        table
            .tops
            .tree
            .store(self.tree_space.space.top(), Ordering::Relaxed);
        if result.is_err() {
            // The arenas are full: a rebuild with more room (nothing was published).
            self.tree_space.dropped.clear();
            let (t, mut w) = build(rib, &self.config, self.room + 1)?;
            w.updates = self.updates;
            w.rebuilds = self.rebuilds + 1;
            *self = w;
            return Ok(Patched::Replaced(
                Box::new(t),
                UpdateStats {
                    units_rebuilt: 1,
                    full_rebuild: true,
                },
            ));
        }
        // The new version: one store.
        table
            .root
            .0
            .store((bt as u64) << 32 | pt1 as u64, Ordering::Release);
        crate::schemes::common::published();
        let n = dropped.len() + self.tree_space.dropped.len();
        retire.extend(
            dropped
                .into_iter()
                .map(|pos| RetiredNode { tree: false, pos }),
        );
        retire.extend(
            self.tree_space
                .dropped
                .drain(..)
                .map(|pos| RetiredNode { tree: true, pos }),
        );
        Ok(Patched::InPlace(UpdateStats {
            units_rebuilt: n,
            full_rebuild: false,
        }))
    }

    unsafe fn reuse(&mut self, _table: &MihtTable<A>, b: RetiredNode) {
        if b.tree {
            self.tree_space.space.free(b.pos as usize, 1);
        } else {
            self.node_space.free(b.pos as usize, 1);
        }
    }
}

/// Routes `(prefix, next hop)`.
type Routes<A> = Vec<(Prefix<A>, u32)>;

/// Every route of the table, checking the invariants on the way.
fn routes<A: Address>(t: &MihtTable<A>) -> Result<(Routes<A>, MihtStats), String> {
    let (bt, pt1) = t.roots();
    let k = t.k;
    let store = ReadStore(&t.nodes);
    let (entries, height) = t.tree.check(bt)?;
    let mut out = Vec::new();
    let mut st = MihtStats {
        k,
        m: t.tree.m,
        keys: entries.len() as u64,
        height: height as u64,
        ..Default::default()
    };
    let count = |held: &[(A, u8, u32)], st: &mut MihtStats| {
        st.trie_nodes += held.len() as u64;
    };
    for &(key, root) in &entries {
        if root == NIL {
            return Err(format!("key {key:#x} without a trie"));
        }
        let held = ptrie::check(&store, root, A::BITS - k)?;
        if held.is_empty() {
            return Err(format!("key {key:#x} with an empty trie"));
        }
        count(&held, &mut st);
        for (bits, len, nh) in held {
            let hi = (key as u128) << (A::BITS - k);
            let lo = bits.to_u128() >> k;
            out.push((Prefix::new_truncating(A::from_u128(hi | lo), k + len), nh));
        }
    }
    let held = ptrie::check(&store, pt1, k - 1)?;
    st.keyless = held.len() as u64;
    count(&held, &mut st);
    out.extend(
        held.into_iter()
            .map(|(bits, len, nh)| (Prefix::new_truncating(bits, len), nh)),
    );
    st.tree_nodes = t.tops.tree.load(Ordering::Relaxed) as u64;
    st.bytes = t.bytes() as u64;
    Ok((out, st))
}

/// Figures (after checking the invariants).
pub(super) fn stats<A: Address>(t: &MihtTable<A>) -> Result<MihtStats, String> {
    let (_, mut st) = routes(t)?;
    // Priority nodes, counted by a walk of every trie.
    let store = ReadStore(&t.nodes);
    let (bt, pt1) = t.roots();
    let (entries, _) = t.tree.check(bt)?;
    let mut prio = 0u64;
    let mut stack: Vec<u32> = entries.iter().map(|e| e.1).chain([pt1]).collect();
    while let Some(i) = stack.pop() {
        if i == NIL {
            continue;
        }
        let n = store.get(i);
        prio += n.prio as u64;
        stack.push(n.left);
        stack.push(n.right);
    }
    st.priority_nodes = prio;
    Ok(st)
}

/// See [`Miht::check_against`].
#[cfg(any(test, feature = "test-hooks"))]
pub(super) fn check_against<A: Address>(t: &MihtTable<A>, rib: &Rib<A>) -> Result<(), String> {
    let (mut got, _) = routes(t)?;
    got.sort_unstable();
    let want: Vec<(Prefix<A>, u32)> = rib.iter().map(|(p, nh)| (p, nh.get())).collect();
    if got != want {
        let missing = want.iter().find(|r| got.binary_search(r).is_err());
        let extra = got.iter().find(|r| want.binary_search(r).is_err());
        return Err(format!(
            "{} routes, want {}; missing {missing:?}, extra {extra:?}",
            got.len(),
            want.len()
        ));
    }
    Ok(())
}

impl<A: Address> Miht<A> {
    /// The writer (for figures in tests).
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub fn free_slots(&self) -> (usize, usize) {
        (
            self.writer().tree_space.space.free_slots(),
            self.writer().node_space.free_slots(),
        )
    }
}

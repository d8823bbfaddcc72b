//! Building Poptrie from the `Rib` (the control path): the bulk build, and the subtree
//! rebuild that incremental updates share with it.
//!
//! Both work on the table projected onto disjoint ranges (the shared range projection):
//! a child slot of a node holds a leaf when no range starts strictly inside the addresses
//! it covers (every address has the same longest match: leaf pushing), and an internal
//! node otherwise. A subtree is therefore never deeper than the table needs, and a
//! more-specific route that does not change the answer costs nothing.
//!
//! Every write here goes to slots just allocated, which no reader can reach until an
//! update publishes them (the one-writer rule of `schemes::common::Arena`).

use core::marker::PhantomData;
use core::sync::atomic::Ordering;

use super::{
    Key, Node, PoptrieConfig, PoptrieTable, PoptrieWriter, Space, Tops, Trie, LEAF_FLAG,
    MAX_NEXT_HOP, STRIDE,
};
use crate::fib::BuildError;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{
    check_capacity, check_next_hop, ms_since, narrowest, Arena, ByWidth, FreeSpace, Width, Word,
};

/// Largest node or leaf index: indices must stay below [`LEAF_FLAG`].
const MAX_INDEX: usize = LEAF_FLAG as usize - (1 << 6);

/// Smallest capacity (slots) of a node or leaf array: room for updates of small tables.
const MIN_CAPACITY: usize = if cfg!(miri) { 1 << 10 } else { 1 << 20 };

/// An array reached its capacity: the table must be rebuilt with more room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Exhausted;

/// What one slot (a direct-pointing entry or a node's child) resolves to.
pub(super) enum Built {
    /// Every address under the slot has this next hop (0 = none).
    Leaf(u32),
    /// An internal node, not yet placed in the node array.
    Node(Node),
}

/// How new arrays are placed: packed at the top (bulk build) or best fit (updates).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Placement {
    Bump,
    BestFit,
}

/// The largest next hop leaves of `width` hold.
pub(super) fn leaf_limit(width: Width) -> u64 {
    match width {
        Width::U16 => u16::MAX as u64,
        Width::U32 => MAX_NEXT_HOP,
    }
}

/// Builds the table and its writer from `rib`; the node array gets at least `min_nodes`
/// slots of capacity.
#[inline(never)]
pub(super) fn build<A: Address>(
    rib: &Rib<A>,
    config: &PoptrieConfig,
    min_nodes: usize,
) -> Result<(PoptrieTable<A>, PoptrieWriter<A>), BuildError> {
    let t0 = std::time::Instant::now();
    let name = config.name();
    if config.direct_bits > 24 {
        return Err(BuildError::InvalidConfig {
            scheme: name.into(),
            reason: format!("direct_bits = {} is outside 0..=24", config.direct_bits),
        });
    }
    // Every route counts, even one hidden by more-specifics: a withdrawal can expose it.
    let proj = rib.project_ranges();
    let max = proj.max_next_hop as u64;
    let width = narrowest(config.leaf_width, &Width::ALL, |w| {
        check_next_hop(name, leaf_limit(w), max)
    })?;
    let s = config.direct_bits;
    let capacity = capacity_for::<A>(proj.ranges.len(), s).max(min_nodes);
    let (layout, space) = match width {
        Width::U16 => {
            let (t, sp) = build_trie::<A, u16>(&proj.ranges, s, capacity, name)?;
            (ByWidth::U16(t), sp)
        }
        Width::U32 => {
            let (t, sp) = build_trie::<A, u32>(&proj.ranges, s, capacity, name)?;
            (ByWidth::U32(t), sp)
        }
    };
    let table = PoptrieTable {
        layout,
        popcnt: crate::simd::Popcnt::within(crate::simd::Isa::ceiling(
            config.force_scalar,
            config.isa,
        )),
        avx512: crate::simd::Avx512::within(crate::simd::Isa::ceiling(
            config.force_scalar,
            config.isa,
        ))
        .and_then(|t| t.vpopcntdq())
        .filter(|_| A::BITS == 32 && core::mem::size_of::<A>() == 4),
        name,
        _family: PhantomData,
    };
    let writer = PoptrieWriter {
        config: config.clone(),
        space,
        max_nh: max,
        build_ms: ms_since(t0),
        updates: 0,
        subtrees_rebuilt: 0,
        full_rebuilds: 0,
        _family: PhantomData,
    };
    Ok((table, writer))
}

/// The node-array capacity for a table of `ranges` ranges: the most nodes its bulk build
/// can need (an internal node exists because a range boundary lies strictly inside it, and
/// a boundary lies inside one node per level), and room for updates.
fn capacity_for<A: Address>(ranges: usize, s: u8) -> usize {
    let levels = (A::BITS as usize - s as usize).div_ceil(STRIDE as usize);
    (ranges * levels + 2).clamp(MIN_CAPACITY, MAX_INDEX)
}

/// Builds the arrays of one leaf width with `2^s` direct-pointing entries.
fn build_trie<A: Address, L: Word>(
    starts: &[(A, u32)],
    s: u8,
    capacity: usize,
    name: &str,
) -> Result<(Trie<L>, Space), BuildError> {
    let t = Trie::<L>::empty(s, capacity).ok_or_else(|| BuildError::CapacityExceeded {
        scheme: name.to_string(),
        what: "bytes of address space for the node arrays",
        max: 0,
        requested: (capacity * core::mem::size_of::<Node>()) as u64,
    })?;
    let mut space = Space {
        nodes: FreeSpace::new(1),
        leaves: FreeSpace::new(1),
    };
    let full = |_| BuildError::CapacityExceeded {
        scheme: name.to_string(),
        what: "trie nodes",
        max: capacity as u64,
        requested: capacity as u64 + 1,
    };
    let mut k = 0usize;
    let mut val = 0u32;
    let span_bits = A::BITS as u32 - s as u32;
    for e in 0..1usize << s {
        let first = dir_first::<A>(e, s);
        let last = A::from_u128(first.to_u128() | low_mask(span_bits));
        while k < starts.len() && starts[k].0 <= first {
            val = starts[k].1;
            k += 1;
        }
        let mut j = k;
        while j < starts.len() && starts[j].0 <= last {
            j += 1;
        }
        let entry = if j == k {
            LEAF_FLAG | val
        } else {
            // SAFETY: the table is not published yet: this thread is its only user.
            let node = unsafe {
                t.build_node(
                    &mut space,
                    val,
                    &starts[k..j],
                    first,
                    s as u32,
                    Placement::Bump,
                )
            }
            .map_err(full)?;
            let i = t
                .alloc_nodes(&mut space, 1, Placement::Bump)
                .map_err(full)?;
            // SAFETY: as above; slot `i` was just allocated.
            unsafe { t.nodes.write(i as usize, node) };
            val = starts[j - 1].1;
            k = j;
            i
        };
        // SAFETY: as above; `e < 2^s`, committed.
        unsafe { t.dir.store_release(e, entry) };
    }
    for (what, top) in [("nodes", space.nodes.top()), ("leaves", space.leaves.top())] {
        check_capacity(name, what, MAX_INDEX as u64, top as u64)?;
    }
    Ok((t, space))
}

/// The first address under direct-pointing entry `e` of `2^s`.
pub(super) fn dir_first<A: Address>(e: usize, s: u8) -> A {
    let span = A::BITS as u32 - s as u32;
    A::from_u128((e as u128).checked_shl(span).unwrap_or(0))
}

/// `bits` low one bits (`bits <= 128`).
fn low_mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

impl<L: Word> Trie<L> {
    /// An empty trie: the reserved sink node 0 and leaf 0, direct entries all 0 (the sink: no route),
    /// node and leaf arrays of `capacity` slots. `None` if the address space cannot be
    /// reserved.
    fn empty(s: u8, capacity: usize) -> Option<Self> {
        let t = Trie {
            s,
            dir: Arena::zeroed(1usize << s)?,
            nodes: Arena::new(capacity)?,
            leaves: Arena::new(2 * capacity)?,
            tops: Tops::default(),
        };
        // SAFETY: not published yet; slot 0 of each array is committed by `grow`.
        unsafe {
            if !(t.nodes.grow(1) && t.leaves.grow(1)) {
                return None;
            }
            t.nodes.write(0, Node::SINK);
        }
        t.tops.nodes.store(1, Ordering::Relaxed);
        t.tops.leaves.store(1, Ordering::Relaxed);
        Some(t)
    }

    /// Builds the node at bit `pos` covering `2^(BITS - pos)` addresses from `base`.
    ///
    /// `first_val` is the next hop at `base`; `starts` are the ranges that start strictly
    /// inside the node's addresses (at least one, or the node would be a leaf).
    ///
    /// # Safety
    /// The caller is the trie's one writer.
    pub(super) unsafe fn build_node<A: Key>(
        &self,
        space: &mut Space,
        first_val: u32,
        starts: &[(A, u32)],
        base: A,
        pos: u32,
        placement: Placement,
    ) -> Result<Node, Exhausted> {
        debug_assert!(!starts.is_empty());
        let shift = A::BITS as i32 - pos as i32 - STRIDE as i32;
        let mut vector = 0u64;
        let mut leafvec = 0u64;
        let mut leaves = [0u32; 64];
        let mut nleaves = 0usize;
        // Children as (value at first address, starts range, first address).
        let mut kids: [(u32, u32, u32, A); 64] = [(0, 0, 0, A::ZERO); 64];
        let mut nkids = 0usize;
        let mut prev: Option<u32> = None;
        let mut val = first_val;
        let mut k = 0usize;
        let base128 = base.to_u128();
        for i in 0..64u32 {
            // The addresses child `i` covers. Past the end of the address (the last
            // stride may be shorter than 6 bits) the index's low bits are zero-filled by
            // the lookup, so several slots map to one address; the others repeat its leaf.
            let (first, last) = if shift >= 0 {
                let f = base128 | ((i as u128) << shift);
                (f, f | low_mask(shift as u32))
            } else {
                let f = base128 | (i as u128 >> (-shift));
                (f, f)
            };
            let (first, last) = (A::from_u128(first), A::from_u128(last));
            while k < starts.len() && starts[k].0 <= first {
                val = starts[k].1;
                k += 1;
            }
            let mut j = k;
            while j < starts.len() && starts[j].0 <= last {
                j += 1;
            }
            if j > k {
                vector |= 1 << i;
                kids[nkids] = (val, k as u32, j as u32, first);
                nkids += 1;
                val = starts[j - 1].1;
                k = j;
            } else if prev != Some(val) {
                leafvec |= 1 << i;
                leaves[nleaves] = val;
                nleaves += 1;
                prev = Some(val);
            }
        }
        let base0 = if nleaves > 0 {
            let b = self.alloc_leaves(space, nleaves as u32, placement)?;
            for (n, &v) in leaves[..nleaves].iter().enumerate() {
                // SAFETY: freshly allocated, unreachable (one writer: the caller).
                unsafe { self.leaves.write(b as usize + n, L::from_u32(v)) };
            }
            b
        } else {
            0
        };
        let base1 = if nkids > 0 {
            let b = self.alloc_nodes(space, nkids as u32, placement)?;
            for (n, &(v, from, to, first)) in kids[..nkids].iter().enumerate() {
                // SAFETY: forwarded.
                let child = unsafe {
                    self.build_node(
                        space,
                        v,
                        &starts[from as usize..to as usize],
                        first,
                        pos + STRIDE,
                        placement,
                    )
                }?;
                // SAFETY: freshly allocated, unreachable.
                unsafe { self.nodes.write(b as usize + n, child) };
            }
            b
        } else {
            0
        };
        Ok(Node {
            vector,
            leafvec,
            base0,
            base1,
        })
    }

    /// Rebuilds the subtree for the addresses of `window` (`window.len()` = the bit
    /// position of the slot's node) from `rib` into newly allocated slots.
    ///
    /// # Safety
    /// The caller is the trie's one writer.
    pub(super) unsafe fn build_window<A: Key>(
        &self,
        space: &mut Space,
        rib: &Rib<A>,
        window: &Prefix<A>,
    ) -> Result<Built, Exhausted> {
        let mut starts: Vec<(A, u32)> = Vec::new();
        rib.project_window(window, &mut starts);
        debug_assert_eq!(starts[0].0, window.first());
        if starts.len() == 1 {
            return Ok(Built::Leaf(starts[0].1));
        }
        // SAFETY: forwarded.
        let node = unsafe {
            self.build_node(
                space,
                starts[0].1,
                &starts[1..],
                window.first(),
                window.len() as u32,
                Placement::BestFit,
            )
        }?;
        Ok(Built::Node(node))
    }

    fn alloc_leaves(
        &self,
        space: &mut Space,
        n: u32,
        placement: Placement,
    ) -> Result<u32, Exhausted> {
        let b = alloc(&mut space.leaves, n, placement, self.leaves.capacity())?;
        let top = space.leaves.top();
        // SAFETY: the caller is the one writer.
        if !unsafe { self.leaves.grow(top) } {
            return Err(Exhausted);
        }
        self.tops.leaves.store(top, Ordering::Relaxed);
        Ok(b)
    }

    pub(super) fn alloc_nodes(
        &self,
        space: &mut Space,
        n: u32,
        placement: Placement,
    ) -> Result<u32, Exhausted> {
        let b = alloc(&mut space.nodes, n, placement, self.nodes.capacity())?;
        let top = space.nodes.top();
        // SAFETY: the caller is the one writer.
        if !unsafe { self.nodes.grow(top) } {
            return Err(Exhausted);
        }
        self.tops.nodes.store(top, Ordering::Relaxed);
        Ok(b)
    }
}

/// `n` slots of `space`, below `capacity` (and below the largest index an entry holds).
fn alloc(
    space: &mut FreeSpace,
    n: u32,
    placement: Placement,
    capacity: usize,
) -> Result<u32, Exhausted> {
    let b = match placement {
        Placement::Bump => space.bump(n as usize),
        Placement::BestFit => space.alloc(n as usize),
    };
    if b + n as usize > capacity.min(MAX_INDEX) {
        space.free(b, n as usize);
        return Err(Exhausted);
    }
    Ok(b as u32)
}

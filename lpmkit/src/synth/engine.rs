//! The placement engine behind [`generate`](super::generate).
//!
//! Prefixes are placed one length at a time, shortest first, so every prefix that can
//! cover a new one already exists when it is placed:
//!
//! * a **top-level** prefix (covered by nothing) goes to a random aligned position in a
//!   region (or, if it is at least as long as a sub-block, a sub-block of a region) drawn
//!   by weight times free share, and is kept only if no existing prefix covers it and it
//!   avoids the reserved blocks. Weights are raised to a length-dependent exponent, so
//!   that long prefixes crowd into the dense places and short ones avoid them.
//! * a **nested** prefix (a more-specific) goes to a random aligned position inside a
//!   parent. The parent's length `m` and kind (top-level or nested) are drawn with
//!   weight `count · 2^(bias·(l − m))`, times `nested_parent_weight` for nested parents
//!   (shorter, larger parents receive more more-specifics); within that group, with
//!   probability `attach_share` the parent of an earlier more-specific is reused
//!   (preferential attachment: parents gain more-specifics in proportion to those they
//!   have, giving the real tables' heavy tail, where most prefixes have none and a few
//!   have hundreds), else a uniform one. In a parent spanning several sub-blocks the
//!   sub-block is drawn by weight too, and [`FIRST_SHARE`] of the positions are the
//!   parent's first block. The position must not lie inside another more-specific of
//!   the parent, so the parent is the new prefix's closest cover and the nesting depth
//!   is the parent's plus one.
//!
//! After each placement a **run** continues with probability `run_share`: the next
//! aligned block of the same length, if it stays in the region (or parent) and is free,
//! is placed too — real tables announce consecutive blocks.
//!
//! Whether a position is free takes one read of a per-`/24`-block array of the longest
//! cover for prefixes of up to 24 bits, and hash-index probes per length beyond that.
//!
//! If top-level placements keep failing (the regions are full) the rest of the length's
//! top-level quota is placed nested; if nested placements keep failing (no parent has a
//! free slot) the rest moves to the next longer length. Every prefix is placed exactly
//! once, so the table has exactly the requested number of routes.

use super::math::Alias;
use super::model::{Region, LEVELS};
use crate::prefix::{Address, Prefix};
use crate::rng::{mix64, SplitMix64};

/// Prefixes of up to `G` bits are tracked per `/G` block (the longest cover of each), so
/// that "is this free?" is one array read for them; longer ones are probed in the index.
pub(crate) const G: u8 = 24;

/// Share of more-specifics placed at the very start of their parent (real tables: 13.5%
/// of IPv4 and 7.5% of IPv6 more-specifics start where their closest cover starts, far
/// more than uniform placement gives).
const FIRST_SHARE: f64 = 0.1;

/// Positions tried in a drawn parent before giving up on it.
const POSITION_TRIES: u32 = 4;

/// Consecutive failed attempts after which a placement mode is considered exhausted.
const STREAK: u32 = 4096;

/// An open-addressing hash set of `(address, length)` keys, growing at half load.
struct PrefixSet<A: Address> {
    slots: Vec<(A, u8)>,
    len: usize,
}

/// Length 0 marks an empty slot (the set never holds a default route).
const EMPTY: u8 = 0;

impl<A: Address> PrefixSet<A> {
    fn with_capacity(n: usize) -> Self {
        PrefixSet {
            slots: vec![(A::ZERO, EMPTY); (n.max(8) * 2).next_power_of_two()],
            len: 0,
        }
    }

    #[inline]
    fn hash(addr: A, len: u8) -> usize {
        let v = addr.to_u128();
        mix64(mix64((v >> 64) as u64 ^ ((len as u64) << 56) ^ len as u64) ^ v as u64) as usize
    }

    #[inline]
    fn contains(&self, addr: A, len: u8) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(addr, len) & mask;
        loop {
            let (a, l) = self.slots[i];
            if l == EMPTY {
                return false;
            }
            if l == len && a == addr {
                return true;
            }
            i = (i + 1) & mask;
        }
    }

    /// Inserts a key known to be absent (`len > 0`).
    fn insert_new(&mut self, addr: A, len: u8) {
        debug_assert!(len != EMPTY);
        if 2 * (self.len + 1) > self.slots.len() {
            let bigger = vec![(A::ZERO, EMPTY); self.slots.len() * 2];
            let old = core::mem::replace(&mut self.slots, bigger);
            self.len = 0;
            for (a, l) in old {
                if l != EMPTY {
                    self.insert_new(a, l);
                }
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(addr, len) & mask;
        while self.slots[i].1 != EMPTY {
            debug_assert!(self.slots[i] != (addr, len));
            i = (i + 1) & mask;
        }
        self.slots[i] = (addr, len);
        self.len += 1;
    }
}

/// What the engine needs to know besides the counts.
pub(crate) struct Params<'a, A: Address> {
    pub(crate) seed: u64,
    pub(crate) regions: &'a [Region<A>],
    /// Each region is split into `2^sub_bits` sub-blocks, each with a weight level
    /// (`sub_levels[region << sub_bits | sub]`, below [`LEVELS`]): its weight is
    /// `2^(clustering · level / LEVELS)`.
    pub(crate) sub_bits: u8,
    pub(crate) sub_levels: &'a [u8],
    pub(crate) clustering: f64,
    /// Per length: the exponent applied to region and sub-block weights (negative: short
    /// prefixes prefer the sparse places, as legacy blocks do).
    pub(crate) region_exponent: &'a [f64],
    pub(crate) reserved: &'a [Prefix<A>],
    pub(crate) next_hops: &'a Alias,
    pub(crate) inherit_share: f64,
    pub(crate) run_share: f64,
    pub(crate) parent_bias: f64,
    pub(crate) nested_parent_weight: f64,
    pub(crate) attach_share: f64,
}

/// Weights that depend on the length being placed.
struct LengthWeights {
    /// Per region: `weight^e`.
    region: Vec<f64>,
    /// Per level: the sub-block weight `^e`.
    level: [f64; LEVELS],
    /// Per region, `2^sub_bits + 1` running sums of the sub-block weights (for drawing a
    /// sub-block inside a parent that spans several).
    cum: Vec<f64>,
}

/// A placed route as parent draws see it (copied into the lists, so that a draw touches
/// one entry rather than several arrays).
#[derive(Clone, Copy, Debug)]
struct Placed<A: Address> {
    addr: A,
    nh: u32,
    /// Index in `Engine::routes`.
    idx: u32,
    region: u16,
    /// 1 if nested, else 0.
    kind: u8,
    len: u8,
}

impl<A: Address> Placed<A> {
    #[inline]
    fn prefix(&self) -> Prefix<A> {
        Prefix::new_truncating(self.addr, self.len)
    }
}

pub(crate) struct Engine<'a, A: Address> {
    p: Params<'a, A>,
    rng: SplitMix64,
    /// The placed prefixes longer than `G` bits.
    long: PrefixSet<A>,
    /// Placed prefixes (except a default route) by length, for
    /// parent draws: `by_len[len][0]` top-level ones, `by_len[len][1]` nested ones.
    by_len: Vec<[Vec<Placed<A>>; 2]>,
    /// Lengths that hold at least one prefix.
    present: Vec<bool>,
    /// Lengths above `G` that hold at least one top-level prefix, ascending.
    long_top_lens: Vec<u8>,
    /// Per `/G` block: the length of the longest prefix of at most `G` bits covering it
    /// (0: none; a default route is not recorded).
    cover: Vec<u8>,
    /// Per route, for families longer than `G + 8` bits (IPv6): bit `k` set if the route
    /// has a direct more-specific `k + 1` bits longer (bit 63: 64 or more).
    child_lens: Vec<u64>,
    /// Per region: the reserved blocks that overlap it.
    reserved: Vec<Vec<Prefix<A>>>,
    /// Per region: the fraction of it that top-level prefixes occupy.
    used: Vec<f64>,
    /// Per sub-block: the fraction of it that top-level prefixes occupy.
    used_sub: Vec<f64>,
    /// The placed routes: (address, length, next-hop id).
    pub(crate) routes: Vec<(A, u8, u32)>,
    /// Per parent length and kind (as `by_len`): the parent of every more-specific placed
    /// so far (drawing from it picks a parent in proportion to its more-specifics:
    /// preferential attachment).
    attach: Vec<[Vec<Placed<A>>; 2]>,
    /// The weights of the length being placed.
    lw: LengthWeights,
}

/// The sub-block of a region of length `rlen` that holds `addr`.
#[inline]
fn sub_index<A: Address>(addr: A, rlen: u8, sub_bits: u8) -> usize {
    if sub_bits == 0 {
        0
    } else {
        addr.bits_at(rlen, sub_bits) as usize
    }
}

/// `2^-k`, exactly.
#[inline]
fn pow2_neg(k: u8) -> f64 {
    f64::from_bits((1023 - k as u64) << 52)
}

/// `Prefix` length arithmetic as `u128` bit offsets.
#[inline]
fn size_u128<A: Address>(len: u8) -> Option<u128> {
    let host = (A::BITS - len) as u32;
    (host < 128).then(|| 1u128 << host)
}

impl<'a, A: Address> Engine<'a, A> {
    /// An engine for `capacity` routes, `long` of them longer than `G` bits.
    pub(crate) fn new(p: Params<'a, A>, capacity: usize, long: usize) -> Self {
        let bits = A::BITS as usize;
        let regions = p.regions.len();
        let subs = regions << p.sub_bits;
        let reserved = p
            .regions
            .iter()
            .map(|r| {
                p.reserved
                    .iter()
                    .filter(|x| x.covers(&r.prefix) || r.prefix.covers(x))
                    .copied()
                    .collect()
            })
            .collect();
        Engine {
            rng: SplitMix64::new(mix64(p.seed ^ 0x7379_6e74_6865_7369)),
            p,
            long: PrefixSet::with_capacity(long),
            by_len: vec![[Vec::new(), Vec::new()]; bits + 1],
            present: vec![false; bits + 1],
            long_top_lens: Vec::new(),
            cover: vec![0; 1usize << G],
            child_lens: if A::BITS > G + 8 {
                Vec::with_capacity(capacity)
            } else {
                Vec::new()
            },
            used: vec![0.0; regions],
            used_sub: vec![0.0; subs],
            reserved,
            routes: Vec::with_capacity(capacity),
            attach: vec![[Vec::new(), Vec::new()]; bits + 1],
            lw: LengthWeights {
                region: Vec::new(),
                level: [1.0; LEVELS],
                cum: Vec::new(),
            },
        }
    }

    /// Adds the default route (never a parent, never blocks a top-level prefix).
    pub(crate) fn add_default(&mut self, nh: u32) {
        self.routes.push((A::ZERO, 0, nh));
        if A::BITS > G + 8 {
            self.child_lens.push(0);
        }
    }

    /// Computes the weights for placing `/len` prefixes.
    fn set_length(&mut self, len: u8) {
        let e = self.p.region_exponent[len as usize];
        self.lw.region = self
            .p
            .regions
            .iter()
            .map(|r| super::math::pow(r.weight, e))
            .collect();
        for (q, w) in self.lw.level.iter_mut().enumerate() {
            *w = super::math::pow(2.0, self.p.clustering * e * q as f64 / LEVELS as f64);
        }
        // The running sums are made on first use.
        self.lw.cum.clear();
    }

    /// Fills `lw.cum` for the current length.
    fn fill_cum(&mut self) {
        let per = (1usize << self.p.sub_bits) + 1;
        self.lw.cum.reserve(self.p.regions.len() * per);
        for levels in self.p.sub_levels.chunks(per - 1) {
            let mut acc = 0.0;
            self.lw.cum.push(0.0);
            for &q in levels {
                acc += self.lw.level[q as usize];
                self.lw.cum.push(acc);
            }
        }
    }

    /// Where to put a more-specific `/len` inside `parent` (of region `ri`): if the parent
    /// spans several sub-blocks and `len` fits in one, a sub-block drawn by weight,
    /// otherwise the parent itself.
    fn nested_target(&mut self, parent: Prefix<A>, ri: usize, len: u8) -> Prefix<A> {
        let rlen = self.p.regions[ri].prefix.len();
        let sb = self.p.sub_bits;
        let sub_len = rlen + sb;
        if parent.len() >= sub_len || len < sub_len || parent.len() < rlen {
            return parent;
        }
        if self.lw.cum.is_empty() {
            self.fill_cum();
        }
        let per = (1usize << sb) + 1;
        let s0 = sub_index(parent.addr(), rlen, sb);
        let n = 1usize << (sub_len - parent.len());
        let cum = &self.lw.cum[ri * per + s0..ri * per + s0 + n + 1];
        let x = cum[0] + self.rng.unit() * (cum[n] - cum[0]);
        // The first sub-block whose running sum passes x.
        let k = cum[1..].partition_point(|&c| c <= x).min(n - 1);
        let shift = (A::BITS - sub_len) as u32;
        let addr = parent.addr().to_u128() | ((k as u128) << shift);
        Prefix::new_truncating(A::from_u128(addr), sub_len)
    }

    /// A uniformly random aligned `/len` address inside `base` (`len >= base.len()`).
    #[inline]
    fn random_within(&mut self, base: Prefix<A>, len: u8) -> A {
        let k = (len - base.len()) as u32;
        if k == 0 {
            return base.addr();
        }
        let r = if k <= 64 {
            (self.rng.next() >> (64 - k)) as u128
        } else {
            self.rng.next_u128() >> (128 - k)
        };
        let shift = (A::BITS - len) as u32;
        A::from_u128(base.addr().to_u128() | (r << shift))
    }

    #[inline]
    fn draw_next_hop(&mut self) -> u32 {
        self.p.next_hops.sample(&mut self.rng) as u32 + 1
    }

    #[inline]
    fn block_of(addr: A) -> usize {
        addr.bits_at(0, G) as usize
    }

    /// True if a top-level `/len` at `addr` (in region `region`) is allowed: nothing covers it and it overlaps
    /// no reserved block.
    fn top_free(&self, addr: A, len: u8, region: usize) -> bool {
        let cand = Prefix::new_truncating(addr, len);
        if self.reserved[region]
            .iter()
            .any(|r| r.covers(&cand) || cand.covers(r))
        {
            return false;
        }
        if self.cover[Self::block_of(addr)] != 0 {
            return false;
        }
        // Top-level prefixes longer than G are not in `cover`: probe their lengths.
        for &m in &self.long_top_lens {
            if m > len {
                break;
            }
            if self.long.contains(addr.and(A::netmask(m)), m) {
                return false;
            }
        }
        true
    }

    /// Records `/len` (at most `G` bits) as the longest cover of its blocks.
    fn set_cover(&mut self, addr: A, len: u8) {
        debug_assert!(len <= G);
        let start = Self::block_of(addr);
        let count = 1usize << (G - len);
        self.cover[start..start + count].fill(len);
    }

    fn record(&mut self, addr: A, len: u8, nh: u32, nested: bool, region: usize) {
        if len <= G {
            self.set_cover(addr, len);
        } else {
            self.long.insert_new(addr, len);
        }
        if A::BITS > G + 8 {
            self.child_lens.push(0);
        }
        let idx = u32::try_from(self.routes.len()).expect("at most 2^32 routes");
        self.by_len[len as usize][nested as usize].push(Placed {
            addr,
            nh,
            idx,
            region: region as u16,
            kind: nested as u8,
            len,
        });
        self.present[len as usize] = true;
        self.routes.push((addr, len, nh));
    }

    fn place_top(&mut self, addr: A, len: u8, region: usize) {
        let nh = self.draw_next_hop();
        if len > G {
            if let Err(pos) = self.long_top_lens.binary_search(&len) {
                self.long_top_lens.insert(pos, len);
            }
        }
        let rlen = self.p.regions[region].prefix.len();
        self.used[region] += pow2_neg(len - rlen);
        let sb = self.p.sub_bits;
        let first = (region << sb) | sub_index(addr, rlen, sb);
        if len >= rlen + sb {
            self.used_sub[first] += pow2_neg(len - rlen - sb);
        } else {
            let n = 1usize << (rlen + sb - len);
            self.used_sub[first..first + n].fill(1.0);
        }
        self.record(addr, len, nh, false, region);
    }

    /// True if `/len` at `addr` can be a direct more-specific of route `parent` (of
    /// length `parent_len`): it is not a route yet and no route between the two covers it.
    fn nested_free(&self, addr: A, len: u8, parent: u32, parent_len: u8) -> bool {
        // Covers of at most G bits: the longest must be the parent itself.
        if parent_len <= G && self.cover[Self::block_of(addr)] != parent_len {
            return false;
        }
        if len <= G {
            return true;
        }
        if self.long.contains(addr, len) {
            return false;
        }
        // Covers longer than G are direct more-specifics of the parent (or inside one).
        let from = (parent_len + 1).max(G + 1);
        let probe =
            |m: u8| self.present[m as usize] && self.long.contains(addr.and(A::netmask(m)), m);
        if self.child_lens.is_empty() {
            return !(from..len).any(probe);
        }
        let mut bits = self.child_lens[parent as usize];
        while bits != 0 {
            let k = bits.trailing_zeros() as u8;
            bits &= bits - 1;
            if k == 63 {
                return !((parent_len + 64).max(from)..len).any(probe);
            }
            let m = parent_len + 1 + k;
            if m >= len {
                break;
            }
            if m >= from && self.long.contains(addr.and(A::netmask(m)), m) {
                return false;
            }
        }
        true
    }

    fn place_nested(&mut self, addr: A, len: u8, parent: Placed<A>) {
        let nh = if self.rng.unit() < self.p.inherit_share {
            parent.nh
        } else {
            self.draw_next_hop()
        };
        if !self.child_lens.is_empty() {
            self.child_lens[parent.idx as usize] |= 1 << (len - parent.len - 1).min(63);
        }
        self.attach[parent.len as usize][parent.kind as usize].push(parent);
        self.record(addr, len, nh, true, parent.region as usize);
    }

    /// The address of the next `/len` block after `addr`, if it stays inside `within`.
    #[inline]
    fn next_block(addr: A, len: u8, within: Prefix<A>) -> Option<A> {
        let next = addr.to_u128().checked_add(size_u128::<A>(len)?)?;
        if next > A::MAX.to_u128() {
            return None;
        }
        let next = A::from_u128(next);
        within.contains(next).then_some(next)
    }

    /// Places `want` top-level `/len` prefixes; returns how many could not be placed.
    fn place_tops(&mut self, len: u8, mut want: u64) -> u64 {
        if want == 0 {
            return 0;
        }
        // Targets: whole regions for prefixes shorter than their sub-blocks, else
        // sub-blocks; by weight and free share, so that full ones stop drawing attempts.
        let sb = self.p.sub_bits;
        let mut targets: Vec<(Prefix<A>, usize)> = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        for (ri, r) in self.p.regions.iter().enumerate() {
            let rlen = r.prefix.len();
            if rlen > len || self.used[ri] >= 1.0 {
                continue;
            }
            let w = self.lw.region[ri];
            if len < rlen + sb {
                targets.push((r.prefix, ri));
                weights.push(w * (1.0 - self.used[ri]));
                continue;
            }
            for sub in 0..1usize << sb {
                let free = 1.0 - self.used_sub[(ri << sb) | sub];
                if free > 0.0 {
                    let shift = (A::BITS - rlen - sb) as u32;
                    let addr = A::from_u128(r.prefix.addr().to_u128() | (sub as u128) << shift);
                    targets.push((Prefix::new_truncating(addr, rlen + sb), ri));
                    let level = self.p.sub_levels[(ri << sb) | sub] as usize;
                    weights.push(w * self.lw.level[level] * free);
                }
            }
        }
        let Some(pick) = Alias::new(&weights) else {
            return want;
        };
        let mut streak = 0;
        while want > 0 {
            let (target, ri) = targets[pick.sample(&mut self.rng)];
            let addr = self.random_within(target, len);
            if !self.top_free(addr, len, ri) {
                streak += 1;
                if streak >= STREAK {
                    break;
                }
                continue;
            }
            streak = 0;
            self.place_top(addr, len, ri);
            want -= 1;
            let mut cur = addr;
            while want > 0 && self.rng.unit() < self.p.run_share {
                match Self::next_block(cur, len, target) {
                    Some(n) if self.top_free(n, len, ri) => {
                        self.place_top(n, len, ri);
                        want -= 1;
                        cur = n;
                    }
                    _ => break,
                }
            }
        }
        want
    }

    /// Draws a parent of length `m` and kind `kind` (0 top-level, 1 nested) and a free
    /// position for a `/len` inside it: `(parent route, parent, address)`. The parent is
    /// drawn from the rich list with probability `attach_share`, else uniformly; a few
    /// positions are tried in it, and if a rich parent has no room, in a uniform one, so
    /// that the group keeps its share of more-specifics.
    fn draw_nested(&mut self, m: usize, kind: usize, len: u8) -> Option<(Placed<A>, A)> {
        let rich = !self.attach[m][kind].is_empty() && self.rng.unit() < self.p.attach_share;
        for uniform in [!rich, true] {
            let list = if uniform {
                &self.by_len[m][kind]
            } else {
                &self.attach[m][kind]
            };
            let pr = list[self.rng.below(list.len() as u64) as usize];
            let parent = pr.prefix();
            for _ in 0..POSITION_TRIES {
                let addr = if self.rng.unit() < FIRST_SHARE {
                    parent.addr()
                } else {
                    let target = self.nested_target(parent, pr.region as usize, len);
                    self.random_within(target, len)
                };
                if self.nested_free(addr, len, pr.idx, pr.len) {
                    return Some((pr, addr));
                }
            }
            if uniform {
                break;
            }
        }
        None
    }

    /// Places `want` nested `/len` prefixes; returns how many could not be placed.
    fn place_nesteds(&mut self, len: u8, mut want: u64) -> u64 {
        if want == 0 {
            return 0;
        }
        // Parents: slot 2m holds the top-level /m, slot 2m + 1 the nested /m, weighted by
        // count × 2^(bias·(len − m)), nested ones also by `nested_parent_weight`.
        let weights: Vec<f64> = (0..2 * len as usize)
            .map(|i| {
                let (m, nested) = (i / 2, i % 2);
                let n = if m == 0 {
                    0
                } else {
                    self.by_len[m][nested].len()
                };
                if n == 0 {
                    return 0.0;
                }
                let w = n as f64
                    * super::math::pow(2.0, self.p.parent_bias * (len as usize - m) as f64);
                if nested == 1 {
                    w * self.p.nested_parent_weight
                } else {
                    w
                }
            })
            .collect();
        let Some(pick) = Alias::new(&weights) else {
            return want;
        };
        let mut streak = 0;
        while want > 0 {
            let slot = pick.sample(&mut self.rng);
            let Some((pr, addr)) = self.draw_nested(slot / 2, slot % 2, len) else {
                streak += 1;
                if streak >= STREAK {
                    break;
                }
                continue;
            };
            let parent = pr.prefix();
            streak = 0;
            self.place_nested(addr, len, pr);
            want -= 1;
            let mut cur = addr;
            while want > 0 && self.rng.unit() < self.p.run_share {
                match Self::next_block(cur, len, parent) {
                    Some(n) if self.nested_free(n, len, pr.idx, pr.len) => {
                        self.place_nested(n, len, pr);
                        want -= 1;
                        cur = n;
                    }
                    _ => break,
                }
            }
        }
        want
    }

    /// Places `top` top-level and `nested` nested prefixes of length `len`; returns the
    /// number that found no room at this length.
    pub(crate) fn place_length(&mut self, len: u8, top: u64, nested: u64) -> u64 {
        self.set_length(len);
        let has_parents = (1..len).any(|m| self.present[m as usize]);
        let (mut top, mut nested) = if has_parents {
            (top, nested)
        } else {
            (top + nested, 0)
        };
        top = self.place_tops(len, top);
        if has_parents {
            // Regions exhausted: the rest of the top-level quota nests.
            nested += top;
            top = 0;
        }
        nested = self.place_nesteds(len, nested);
        if nested > 0 {
            // Parents saturated: a last try at top level before spilling.
            nested = self.place_tops(len, nested);
        }
        top + nested
    }
}

//! DIR-24-8 for IPv6, in the style of DPDK's `rte_lpm6`: a 2^24-entry first table indexed
//! by the top 24 address bits, then 256-entry groups indexed by one byte each, down to
//! /128 (at most 13 group levels: bits 24..32, 32..40, …, 120..128).
//!
//! `rte_lpm6` (DPDK `lib/lpm/rte_lpm6.c`) is the IPv6 baseline of the Spider paper (§V-D);
//! its lookup is `tbl24[top 24 bits]`, then, while the entry is an extension, the
//! `tbl8` group it names indexed by the next address byte.
//!
//! * **Entries** are `value << 1 | extended`: a next-hop id (0 = no route) or, with
//!   `extended` set, the index of a 256-entry group. They are 16 bits (15-bit next hops
//!   and group indices: a 32 MiB first table) when the table allows, else 32 bits (31-bit
//!   next hops, up to 2^24 groups: 64 MiB), chosen automatically as for IPv4;
//!   [`Dir24_8Config::entry_width`] forces a width. `rte_lpm6` has 32-bit entries with 21-bit
//!   next hops plus a depth per entry for its in-place updates; this table is rebuilt from
//!   the `Rib` instead (batch rebuild), so it needs no depths.
//! * **Groups** are allocated as the table needs them (no `number_tbl8s` sizing up
//!   front): a 2^(128-p) block gets a group only if a range of the table starts strictly
//!   inside it ([`Rib::for_each_range`], leaf pushing), so more-specific routes that do
//!   not change the answer cost nothing.
//! * **Lookups.** [`Fib::lookup`] is the loop above. [`Fib::lookup_batch`] takes blocks
//!   of `BATCH_V6` keys: it reads every first-table entry, lists the lanes whose entry
//!   is an extension (branch-free compaction), then in each round every listed lane reads
//!   its next group entry and stays listed only if that is an extension again. The loads
//!   of a round are independent, so the out-of-order core overlaps the lanes' cache
//!   misses (`rte_lpm6_lookup_bulk_func` runs its keys one after the other); the next
//!   block's first-table entries are prefetched.

use super::Dir24_8Config;
use crate::fib::{BuildError, Fib, StatValue, Stats};
use crate::mem::TableBuf;
use crate::nexthop::NextHop;
use crate::prefix::Ipv6;
use crate::rib::Rib;
use crate::scheme::Scheme;
use crate::schemes::common::{
    check_capacity, check_next_hop, check_next_hops, ms_since, narrowest, with_width, ByWidth,
    Width, Word,
};
use crate::simd::prefetch;

const NAME: &str = "dir24-8";
/// First-table entries.
const TBL24_LEN: usize = 1 << 24;
/// Largest next hop (31 bits).
const MAX_NH: u64 = (1 << 31) - 1;
/// Most groups: `groups << 8` must fit a 32-bit index computation.
const MAX_GROUPS: u64 = 1 << 24;
/// Largest value (next hop or group index) of a 16-bit entry.
const NARROW_MAX: u64 = (1 << 15) - 1;
/// Keys per interleaved block in `lookup_batch`.
pub(crate) const BATCH_V6: usize = 64;

/// The two tables of one entry width.
struct Tables6<E: Word> {
    /// `TBL24_LEN` entries (huge-page backed).
    tbl24: TableBuf<E>,
    /// `groups * 256` entries.
    tbl8: TableBuf<E>,
}

impl<E: Word> Tables6<E> {
    fn from_wide(b: &Builder) -> Self {
        let convert = |src: &[u32]| {
            let mut t = TableBuf::<E>::zeroed(src.len());
            for (d, &e) in t.iter_mut().zip(src) {
                *d = E::from_u32(e);
            }
            t
        };
        Tables6 {
            tbl24: convert(&b.tbl24),
            tbl8: convert(&b.tbl8),
        }
    }

    #[inline(always)]
    fn first(&self, a: u128) -> u32 {
        debug_assert_eq!(self.tbl24.len(), TBL24_LEN);
        // SAFETY: `a >> 104 < 2^24 = TBL24_LEN = tbl24.len()`.
        unsafe { self.tbl24.get_unchecked((a >> 104) as usize).get() }
    }

    #[inline(always)]
    fn group_entry(&self, e: u32, a: u128, shift: u32) -> u32 {
        let i = (((e >> 1) as usize) << 8) | ((a >> shift) as usize & 0xff);
        debug_assert!(i < self.tbl8.len());
        // SAFETY: extended entries name groups the builder allocated (`< groups`, and
        // `tbl8.len() = groups * 256`).
        unsafe { self.tbl8.get_unchecked(i).get() }
    }

    #[inline(always)]
    fn resolve(&self, a: u128) -> u32 {
        let mut e = self.first(a);
        let mut shift = 96;
        while e & 1 != 0 {
            e = self.group_entry(e, a, shift);
            shift = shift.wrapping_sub(8);
        }
        e >> 1
    }

    #[inline(always)]
    fn lookup_block(&self, keys: &[u128], out: &mut [u32]) {
        debug_assert!(keys.len() == BATCH_V6 && out.len() == BATCH_V6);
        let mut e = [0u32; BATCH_V6];
        // Lanes whose entry is still an extension, compacted without branches.
        let mut active = [0u8; BATCH_V6];
        let mut n = 0usize;
        for i in 0..BATCH_V6 {
            e[i] = self.first(keys[i]);
            active[n] = i as u8;
            n += (e[i] & 1) as usize;
        }
        // All listed lanes are at the same level: one shift per round.
        let mut shift = 96u32;
        while n > 0 {
            let mut m = 0usize;
            for j in 0..n {
                let i = active[j] as usize;
                e[i] = self.group_entry(e[i], keys[i], shift);
                active[m] = i as u8;
                m += (e[i] & 1) as usize;
            }
            n = m;
            shift = shift.wrapping_sub(8);
        }
        for i in 0..BATCH_V6 {
            out[i] = e[i] >> 1;
        }
    }

    fn lookup_batch(&self, addrs: &[Ipv6], out: &mut [u32]) {
        let mut blocks = addrs.chunks_exact(BATCH_V6);
        let mut outs = out[..addrs.len()].chunks_exact_mut(BATCH_V6);
        let mut next = addrs.chunks_exact(BATCH_V6).skip(1);
        for (k, o) in (&mut blocks).zip(&mut outs) {
            if let Some(nk) = next.next() {
                for &a in nk {
                    prefetch(self.tbl24.as_ptr().wrapping_add((a >> 104) as usize));
                }
            }
            self.lookup_block(k, o);
        }
        for (o, &a) in outs.into_remainder().iter_mut().zip(blocks.remainder()) {
            *o = self.resolve(a);
        }
    }

    fn bytes(&self) -> usize {
        (self.tbl24.len() + self.tbl8.len()) * core::mem::size_of::<E>()
    }
}

/// The DIR-24-8 lookup table for IPv6 (`rte_lpm6` style).
pub struct Dir24_8V6 {
    layout: ByWidth<Tables6<u16>, Tables6<u32>>,
    groups: usize,
    depth: u32,
    build_ms: f64,
}

/// The tables while they are built: always 32-bit entries.
struct Builder {
    tbl24: TableBuf<u32>,
    tbl8: Vec<u32>,
    groups: usize,
    depth: u32,
}

impl core::fmt::Debug for Dir24_8V6 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dir24_8V6")
            .field("entry_width", &self.entry_width())
            .field("groups", &self.groups)
            .field("bytes", &self.memory_bytes())
            .finish()
    }
}

impl Scheme<Ipv6> for Dir24_8V6 {
    type Config = Dir24_8Config;

    fn build(rib: &Rib<Ipv6>, config: &Dir24_8Config) -> Result<Self, BuildError> {
        Dir24_8V6::build(rib, config)
    }
}

impl Dir24_8V6 {
    /// Builds the table from `rib`, with the narrowest entries that fit.
    ///
    /// ```
    /// use lpmkit::{Fib, NextHop, Rib};
    /// use lpmkit::schemes::dir24_8::Dir24_8V6;
    ///
    /// let mut rib = Rib::new();
    /// rib.insert("2001:db8::/32".parse()?, NextHop::new(1).unwrap());
    /// rib.insert("2001:db8::1/128".parse()?, NextHop::new(2).unwrap());
    /// let t = Dir24_8V6::build(&rib, &Default::default())?;
    /// let a: u128 = "2001:db8::1".parse::<std::net::Ipv6Addr>()?.into();
    /// assert_eq!(t.lookup(a), NextHop::new(2));
    /// assert_eq!(t.lookup(a + 1), NextHop::new(1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// [`Dir24_8Config::entry_width`] forces a width; a table that does not fit it is an
    /// error. (The IPv6 tables have no SIMD path: `force_scalar` changes nothing.)
    ///
    /// ```
    /// use lpmkit::{NextHop, Rib};
    /// use lpmkit::schemes::{dir24_8::{Dir24_8Config, Dir24_8V6}, Width};
    ///
    /// let mut rib = Rib::new();
    /// rib.insert("2001:db8::/32".parse()?, NextHop::new(40_000).unwrap());
    /// let narrow = Dir24_8Config { entry_width: Some(Width::U16), ..Default::default() };
    /// assert!(Dir24_8V6::build(&rib, &narrow).is_err());
    /// let t = Dir24_8V6::build(&rib, &Dir24_8Config::default())?;
    /// assert_eq!(t.entry_width(), Width::U32);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline(never)]
    pub fn build(rib: &Rib<Ipv6>, config: &Dir24_8Config) -> Result<Self, BuildError> {
        let width = config.entry_width;
        let t0 = std::time::Instant::now();
        let max_nh = check_next_hops(rib, NAME, MAX_NH)? as u64;
        let starts = rib.project_ranges().ranges;
        let mut b = Builder {
            tbl24: TableBuf::zeroed(TBL24_LEN),
            tbl8: Vec::new(),
            groups: 0,
            depth: 0,
        };
        // Whole first-table blocks inside a range take its next hop.
        for (i, &(first, nh)) in starts.iter().enumerate() {
            let last = starts.get(i + 1).map_or(u128::MAX, |r| r.0 - 1);
            let b0 = (first >> 104) + (first & LOW104 != 0) as u128;
            let b1 = if last & LOW104 == LOW104 {
                last >> 104
            } else {
                match (last >> 104).checked_sub(1) {
                    Some(b) => b,
                    None => continue,
                }
            };
            if b0 <= b1 {
                b.tbl24[b0 as usize..=b1 as usize].fill(nh << 1);
            }
        }
        // Blocks with a range starting strictly inside get a group.
        let mut last_block = usize::MAX;
        for (i, &(first, _)) in starts.iter().enumerate().skip(1) {
            let blk = (first >> 104) as usize;
            if first & LOW104 == 0 || blk == last_block {
                continue;
            }
            last_block = blk;
            let base = (blk as u128) << 104;
            let from = starts[..i].partition_point(|r| r.0 <= base);
            let val = starts[from - 1].1;
            let to = i + starts[i..].partition_point(|r| r.0 <= base | LOW104);
            let g = b.build_group(val, &starts[from..to], base, 24)?;
            b.tbl24[blk] = (g << 1) | 1;
        }
        let groups = b.groups as u64;
        let width = narrowest(width, &Width::ALL, |w| match w {
            Width::U16 => {
                check_next_hop(NAME, NARROW_MAX, max_nh)?;
                check_capacity(NAME, "tbl8 groups", NARROW_MAX + 1, groups)
            }
            Width::U32 => Ok(()),
        })?;
        let layout = match width {
            Width::U16 => ByWidth::U16(Tables6::from_wide(&b)),
            Width::U32 => ByWidth::U32(Tables6 {
                tbl24: core::mem::replace(&mut b.tbl24, TableBuf::zeroed(0)),
                tbl8: TableBuf::from_slice(&b.tbl8),
            }),
        };
        Ok(Dir24_8V6 {
            layout,
            groups: b.groups,
            depth: b.depth,
            build_ms: ms_since(t0),
        })
    }

    #[doc(hidden)]
    /// Number of 256-entry groups.
    pub fn groups(&self) -> usize {
        self.groups
    }

    #[doc(hidden)]
    /// The entry width chosen.
    pub fn entry_width(&self) -> Width {
        self.layout.width()
    }
}

impl Builder {
    /// Builds the group for the block at `base` whose index byte starts at bit `pos`;
    /// `first_val` is the next hop at `base` and `starts` the ranges starting strictly
    /// inside the block.
    fn build_group(
        &mut self,
        first_val: u32,
        starts: &[(u128, u32)],
        base: u128,
        pos: u32,
    ) -> Result<u32, BuildError> {
        if self.groups as u64 >= MAX_GROUPS {
            return Err(BuildError::CapacityExceeded {
                scheme: NAME.to_string(),
                what: "tbl8 groups",
                max: MAX_GROUPS,
                requested: self.groups as u64 + 1,
            });
        }
        let g = self.groups;
        self.groups += 1;
        self.depth = self.depth.max((pos - 16) / 8);
        self.tbl8.resize(self.groups * 256, 0);
        let shift = 128 - pos - 8;
        let mut val = first_val;
        let mut k = 0usize;
        for i in 0..256u128 {
            let first = base | (i << shift);
            let last = first | ((1u128 << shift) - 1);
            while k < starts.len() && starts[k].0 <= first {
                val = starts[k].1;
                k += 1;
            }
            let mut j = k;
            while j < starts.len() && starts[j].0 <= last {
                j += 1;
            }
            let entry = if j > k {
                let sub = self.build_group(val, &starts[k..j], first, pos + 8)?;
                val = starts[j - 1].1;
                k = j;
                (sub << 1) | 1
            } else {
                val << 1
            };
            self.tbl8[g * 256 + i as usize] = entry;
        }
        Ok(g as u32)
    }
}

/// The low 104 bits: the addresses under one first-table entry.
const LOW104: u128 = (1 << 104) - 1;

impl Fib<Ipv6> for Dir24_8V6 {
    fn name(&self) -> &str {
        NAME
    }

    #[inline]
    fn lookup(&self, addr: Ipv6) -> Option<NextHop> {
        NextHop::new(with_width!(&self.layout, t => t.resolve(addr)))
    }

    fn lookup_batch(&self, addrs: &[Ipv6], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        with_width!(&self.layout, t => t.lookup_batch(addrs, out))
    }

    fn memory_bytes(&self) -> usize {
        with_width!(&self.layout, t => t.bytes())
    }

    fn stats(&self) -> Stats {
        let width = match self.entry_width() {
            Width::U16 => "16-bit entries",
            Width::U32 => "32-bit entries",
        };
        Stats::new()
            .with("layout", StatValue::Text(width.into()))
            .with("tbl8_groups", StatValue::Count(self.groups as u64))
            .with("group_levels", StatValue::Count(self.depth as u64))
            .with("build", StatValue::Millis(self.build_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::Prefix;

    fn check(routes: &[(&str, u32)]) -> Dir24_8V6 {
        let rib: Rib<Ipv6> = routes
            .iter()
            .map(|&(p, h)| (p.parse::<Prefix<Ipv6>>().unwrap(), NextHop::new(h).unwrap()))
            .collect();
        let mut keys: Vec<u128> = vec![0, 1, u128::MAX, u128::MAX - 1];
        for (p, _) in rib.iter() {
            for a in [p.first(), p.last()] {
                keys.extend([a, a.wrapping_add(1), a.wrapping_sub(1)]);
            }
        }
        for width in [Some(Width::U32), Some(Width::U16)] {
            let t = Dir24_8V6::build(
                &rib,
                &Dir24_8Config {
                    entry_width: width,
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(Some(t.entry_width()), width);
            let mut out = vec![0; keys.len()];
            t.lookup_batch(&keys, &mut out);
            for (&k, &o) in keys.iter().zip(&out) {
                let want = NextHop::raw(rib.lookup(k));
                assert_eq!(NextHop::raw(t.lookup(k)), want, "lookup {k:x}");
                assert_eq!(o, want, "lookup_batch {k:x}");
            }
        }
        Dir24_8V6::build(&rib, &Dir24_8Config::default()).unwrap()
    }

    #[test]
    fn small_tables() {
        let t = check(&[
            ("::/0", 1),
            ("2001:db8::/32", 2),
            ("2001:db8:1::/48", 3),
            ("2001:db8:1::1/128", 4),
            ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 5),
            ("::/128", 7),
            ("2001:db8:ff00::/40", 2),
        ]);
        assert_eq!(t.depth, 13);
        assert_eq!(t.entry_width(), Width::U16);
        assert_eq!(check(&[("2001:db8::/32", 2)]).groups(), 1);
        assert_eq!(check(&[]).groups(), 0);
        // A /24 changes whole first-table entries only.
        assert_eq!(check(&[("2001:d00::/24", 2), ("::/0", 1)]).groups(), 0);
    }

    #[test]
    fn refuses_large_next_hops() {
        let mut rib = Rib::<Ipv6>::new();
        rib.insert("::/0".parse().unwrap(), NextHop::new(1 << 31).unwrap());
        assert!(matches!(
            Dir24_8V6::build(&rib, &Dir24_8Config::default()),
            Err(BuildError::NextHopOverflow { .. })
        ));
        // 40,000 widens to 32-bit entries, or is refused by forced 16-bit ones.
        let mut rib = Rib::<Ipv6>::new();
        rib.insert(
            "2001:db8::/33".parse().unwrap(),
            NextHop::new(40_000).unwrap(),
        );
        let t = Dir24_8V6::build(&rib, &Dir24_8Config::default()).unwrap();
        assert_eq!(t.entry_width(), Width::U32);
        assert_eq!(t.lookup(0x2001_0db8 << 96), NextHop::new(40_000));
        assert!(matches!(
            Dir24_8V6::build(
                &rib,
                &Dir24_8Config {
                    entry_width: Some(Width::U16),
                    ..Default::default()
                }
            ),
            Err(BuildError::NextHopOverflow {
                max: 32767,
                requested: 40000,
                ..
            })
        ));
    }
}

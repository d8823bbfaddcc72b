//! Controlled prefix expansion (§3.2) and the paper's DPCPE (§4.2): which lengths get a
//! filter, and what each expanded key holds.
//!
//! * **Bands.** A level of length `hi` holds every prefix of lengths `lo..=hi` (its
//!   *band*), each expanded to the `2^(hi − len)` keys of length `hi` it covers. Where
//!   expansions overlap, the longer original prefix wins: **prefix capture** ([4]), which
//!   keeps the answers exact — a key's value is the longest prefix of the band that
//!   covers it, and the bands of the longer levels are probed first.
//! * **DPCPE.** Given the prefix-length distribution `L` (lengths 1…64) and `n`, choose
//!   `n` levels, 64 always among them, minimising the expanded prefix count with the cost
//!   function `f(L, Q) = Σ l_i · 2^(q − i)` (each length expanded to the next level up,
//!   prefix capture ignored). [`greedy`] is the procedure §4.2 describes — start from
//!   `{64}` and add, one at a time, the length whose addition costs least — and reproduces
//!   Table 4's nested level sets; [`optimal`] is the exact minimum by dynamic programming
//!   over the lengths (the controlled-prefix-expansion recurrence of Srinivasan and
//!   Varghese [4]). Both stop adding levels that would not lower the cost (an empty band).
//!   [`estimate`] is the paper's estimate; [`expand`] gives the actual keys (with capture).

use crate::nexthop::NextHop;
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;

/// Bits of a level key: the address's first 32 (IPv4) or 64 (IPv6) bits.
#[inline(always)]
pub(crate) const fn key_bits<A: Address>() -> u8 {
    if A::BITS > 64 {
        64
    } else {
        A::BITS
    }
}

/// The first [`key_bits`] bits of `addr`, as a number.
#[inline(always)]
pub(crate) fn top_key<A: Address>(addr: A) -> u64 {
    (addr.to_u128() >> (A::BITS - key_bits::<A>())) as u64
}

/// The mask of a level key of length `len` (`len <= key_bits`): its first `len` bits.
pub(crate) fn key_mask<A: Address>(len: u8) -> u64 {
    let kb = key_bits::<A>() as u32;
    let full = u64::MAX >> (64 - kb);
    full & !full.checked_shr(len as u32).unwrap_or(0)
}

/// The prefix a level key of length `len` stands for.
pub(crate) fn key_prefix<A: Address>(key: u64, len: u8) -> Prefix<A> {
    let shift = A::BITS - key_bits::<A>();
    Prefix::new_truncating(A::from_u128((key as u128) << shift), len)
}

/// The paper's estimate of the keys after expanding the lengths of `hist` (`hist[i]` =
/// prefixes of length `i`, 1…64) to `levels` (ascending, the last 64): prefix capture
/// ignored, saturating.
pub(crate) fn estimate(hist: &[u64], levels: &[u8]) -> u128 {
    let mut total = 0u128;
    let mut prev = 0usize;
    for &q in levels {
        total = total.saturating_add(band_cost(hist, prev, q as usize));
        prev = q as usize;
    }
    total
}

/// `Σ_{i in (from, to]} hist[i] · 2^(to − i)`, saturating.
pub(crate) fn band_cost(hist: &[u64], from: usize, to: usize) -> u128 {
    let mut c = 0u128;
    for (i, &n) in hist.iter().enumerate().take(to + 1).skip(from + 1) {
        if n > 0 {
            let shift = (to - i) as u32;
            let e = if shift >= 100 {
                u128::MAX
            } else {
                (n as u128).saturating_mul(1u128 << shift)
            };
            c = c.saturating_add(e);
        }
    }
    c
}

/// DPCPE as §4.2 describes it: `S = {w}` (`w` = 64 for IPv6), then while `|S| < n` add
/// the length whose addition gives the smallest cost (the shortest among equals),
/// stopping early when no length lowers it. Ascending.
pub(crate) fn greedy(hist: &[u64], n: usize, w: u8) -> Vec<u8> {
    let mut s: Vec<u8> = vec![w];
    let mut cost = estimate(hist, &s);
    while s.len() < n {
        let mut best: Option<(u128, u8)> = None;
        for l in 1..w {
            if s.contains(&l) {
                continue;
            }
            let mut q = s.clone();
            q.push(l);
            q.sort_unstable();
            let c = estimate(hist, &q);
            if best.is_none_or(|(bc, _)| c < bc) {
                best = Some((c, l));
            }
        }
        match best {
            Some((c, l)) if c < cost => {
                s.push(l);
                s.sort_unstable();
                cost = c;
            }
            _ => break,
        }
    }
    s
}

/// The `n` levels (`w` among them) of least cost, by dynamic programming: `T(j, r)` = the
/// least cost of lengths `1..=j` with `r` levels, the highest at `j`. Ascending; fewer
/// than `n` when more levels would not lower the cost.
pub(crate) fn optimal(hist: &[u64], n: usize, w: u8) -> Vec<u8> {
    let w = w as usize;
    let n = n.clamp(1, w);
    // t[r][j], choice[r][j] = the previous level.
    let mut t = vec![vec![u128::MAX; w + 1]; n + 1];
    let mut choice = vec![vec![0usize; w + 1]; n + 1];
    for (j, cost) in t[1].iter_mut().enumerate().skip(1) {
        *cost = band_cost(hist, 0, j);
    }
    for r in 2..=n {
        for j in r..=w {
            for i in (r - 1)..j {
                if t[r - 1][i] == u128::MAX {
                    continue;
                }
                let c = t[r - 1][i].saturating_add(band_cost(hist, i, j));
                if c < t[r][j] {
                    t[r][j] = c;
                    choice[r][j] = i;
                }
            }
        }
    }
    // The fewest levels that reach the least cost.
    let best = (1..=n).map(|r| t[r][w]).min().unwrap_or(u128::MAX);
    let r = (1..=n).find(|&r| t[r][w] == best).unwrap_or(1);
    let mut levels = Vec::with_capacity(r);
    let (mut r, mut j) = (r, w);
    while r >= 1 && j > 0 {
        levels.push(j as u8);
        j = choice[r][j];
        r -= 1;
    }
    levels.reverse();
    levels
}

/// The keys of length `hi` of `routes` (the routes of one band, in the `Rib`'s
/// (address, length) order, each no longer than `hi`), with prefix capture: each key
/// holds the next hop of the longest route covering it. Sorted by key; `(key, next hop)`.
pub(crate) fn expand<A: Address>(
    routes: impl IntoIterator<Item = (Prefix<A>, NextHop)>,
    hi: u8,
) -> Vec<(u64, u32)> {
    let kb = key_bits::<A>() as u32;
    let step = 1u64 << (kb - hi as u32);
    let mut out: Vec<(u64, u32)> = Vec::new();
    for (p, nh) in routes {
        debug_assert!(p.len() <= hi);
        let first = top_key(p.first());
        let count = 1u64 << (hi - p.len());
        out.extend((0..count).map(|i| (first + i * step, nh.get())));
    }
    // Covering routes come before the routes they cover: the last value of a key is the
    // longest match (a stable sort keeps that order among equal keys).
    out.sort_by_key(|e| e.0);
    let mut w = 0usize;
    for r in 0..out.len() {
        if w > 0 && out[w - 1].0 == out[r].0 {
            out[w - 1] = out[r];
        } else {
            out[w] = out[r];
            w += 1;
        }
    }
    out.truncate(w);
    out
}

/// The keys of length `hi` that the routes of lengths `lo..=hi` expand to, after prefix
/// capture (the size of their union), without expanding them: the routes not covered by
/// another route of the band, `2^(hi − len)` keys each. Saturating.
pub(crate) fn actual_keys<A: Address>(rib: &Rib<A>, lo: u8, hi: u8) -> u128 {
    let mut total = 0u128;
    let mut cover_last: Option<A> = None;
    for (p, _) in band_routes(rib, lo, hi) {
        // Routes come in (address, length) order: a covered route follows its cover.
        if cover_last.is_some_and(|l| p.first() <= l) {
            continue;
        }
        cover_last = Some(p.last());
        let shift = (hi - p.len()) as u32;
        total = total.saturating_add(if shift >= 127 {
            u128::MAX
        } else {
            1u128 << shift
        });
    }
    total
}

/// The routes of `rib` whose length is in `lo..=hi`, in order.
pub(crate) fn band_routes<A: Address>(
    rib: &Rib<A>,
    lo: u8,
    hi: u8,
) -> impl Iterator<Item = (Prefix<A>, NextHop)> + '_ {
    rib.iter()
        .filter(move |(p, _)| (lo..=hi).contains(&p.len()))
}

/// The values of the `2^(hi − len(window))` keys of length `hi` under `window` (`lo <=
/// len(window) <= hi`): `out[i]` = the next hop of the longest route of length `lo..=hi`
/// covering the `i`-th key, 0 if none.
pub(crate) fn paint<A: Address>(
    rib: &Rib<A>,
    window: &Prefix<A>,
    lo: u8,
    hi: u8,
    out: &mut Vec<u32>,
) {
    let wl = window.len();
    debug_assert!(lo <= wl && wl <= hi);
    let n = 1usize << (hi - wl);
    let base = rib
        .covering(window)
        .into_iter()
        .rev()
        .find(|(p, _)| p.len() >= lo)
        .map_or(0, |(_, nh)| nh.get());
    out.clear();
    out.resize(n, base);
    let kb = key_bits::<A>() as u32;
    let first = top_key(window.first());
    for (p, nh) in rib.covered(window) {
        if p.len() <= wl || p.len() > hi {
            continue;
        }
        let i = ((top_key(p.first()) - first) >> (kb - hi as u32)) as usize;
        let c = 1usize << (hi - p.len());
        out[i..i + c].fill(nh.get());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AS65000-V6-like distribution: the lengths of Table 4's first data set matter only
    /// through their counts.
    fn hist_of(pairs: &[(usize, u64)]) -> Vec<u64> {
        let mut h = vec![0u64; 65];
        for &(l, n) in pairs {
            h[l] = n;
        }
        h
    }

    #[test]
    fn greedy_is_nested_and_optimal_is_no_worse() {
        let h = hist_of(&[
            (16, 1),
            (20, 9),
            (24, 19),
            (28, 70),
            (29, 859),
            (32, 7262),
            (33, 313),
            (36, 1004),
            (40, 1221),
            (44, 1125),
            (48, 12142),
            (56, 180),
            (64, 772),
        ]);
        let mut prev: Vec<u8> = vec![];
        for n in 1..=8 {
            let g = greedy(&h, n, 64);
            assert_eq!(*g.last().unwrap(), 64);
            assert!(prev.iter().all(|l| g.contains(l)), "nested: {prev:?} {g:?}");
            let o = optimal(&h, n, 64);
            assert_eq!(*o.last().unwrap(), 64);
            assert!(o.len() <= n);
            assert!(estimate(&h, &o) <= estimate(&h, &g), "{o:?} vs {g:?}");
            prev = g;
        }
        assert_eq!(greedy(&h, 1, 64), vec![64]);
        // Enough levels for every length: nothing expands.
        let all = greedy(&h, 64, 64);
        assert_eq!(
            estimate(&h, &all),
            h.iter().map(|&n| n as u128).sum::<u128>()
        );
        assert_eq!(optimal(&h, 64, 64), all);
    }

    #[test]
    fn estimate_counts_expansions() {
        let h = hist_of(&[(30, 1), (32, 2), (64, 1)]);
        assert_eq!(estimate(&h, &[32, 64]), 4 + 2 + 1);
        assert_eq!(estimate(&h, &[64]), (1u128 << 34) + (2u128 << 32) + 1);
    }

    #[test]
    fn expansion_with_capture() {
        let nh = |v| NextHop::new(v).unwrap();
        let rib: Rib<u32> = [
            ("10.0.0.0/22", 1),
            ("10.0.1.0/24", 2),
            ("10.0.2.0/23", 3),
            ("10.0.3.0/24", 4),
        ]
        .iter()
        .map(|&(p, h)| (p.parse().unwrap(), nh(h)))
        .collect();
        let keys = expand(band_routes(&rib, 21, 24), 24);
        assert_eq!(actual_keys(&rib, 21, 24), keys.len() as u128);
        assert_eq!(
            keys,
            vec![
                (0x0a00_0000, 1),
                (0x0a00_0100, 2),
                (0x0a00_0200, 3),
                (0x0a00_0300, 4)
            ]
        );
        let mut out = Vec::new();
        paint(&rib, &"10.0.2.0/23".parse().unwrap(), 21, 24, &mut out);
        assert_eq!(out, vec![3, 4]);
        paint(&rib, &"10.0.0.0/21".parse().unwrap(), 21, 24, &mut out);
        assert_eq!(out, vec![1, 2, 3, 4, 0, 0, 0, 0]);
        assert_eq!(key_mask::<u32>(24), 0xffff_ff00);
        assert_eq!(key_mask::<u32>(32), 0xffff_ffff);
        assert_eq!(key_mask::<u128>(64), u64::MAX);
        assert_eq!(key_mask::<u128>(1), 1 << 63);
        assert_eq!(key_mask::<u32>(0), 0);
        assert_eq!(
            key_prefix::<u128>(0x2001_0db8_0000_0000, 32),
            "2001:db8::/32".parse().unwrap()
        );
    }
}

//! Level traversal (§III-A), sparse chunks (§V-D) and Fig. 13's counts.

use super::{ObmaWriter, Scratch};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::obma::group;

impl<A: Address> ObmaWriter<A> {
    /// Fig. 13's counts for one chunk's FPA (pointers resolved) and routes.
    pub(super) fn count_fig13(&mut self, sc: &Scratch, s: u8) {
        if s < 4 {
            return;
        }
        let s = s as usize;
        let mut internal: Vec<Vec<bool>> = (0..s).map(|u| vec![false; 1 << u]).collect();
        for &(bits, len, _) in &sc.routes {
            for (u, level) in internal.iter_mut().enumerate().take(len as usize) {
                level[(bits >> (len as usize - u)) as usize] = true;
            }
        }
        for &x in &sc.deeper {
            for (u, level) in internal.iter_mut().enumerate() {
                level[(x >> (s - u)) as usize] = true;
            }
        }
        for w in 0..(1usize << s) / 16 {
            let part = &sc.fpa[w * 16..(w + 1) * 16];
            let f = &mut self.fig13;
            f.windows += 1;
            f.lulea += group::lulea_heads(&internal, s, s - 4, w) as u64;
            f.overlay += group::ones(part, 0) as u64;
            f.bis_greedy += group::ones(part, group::greedy_bis(part)) as u64;
            f.bis_optimal += group::ones(part, group::optimal_bis(part)) as u64;
        }
    }
}

/// Level traversal of `window` down to `bot` (§III-A): `sc.fpa` gets the longest match of
/// every element (routes up to `bot`, covering routes included); `sc.deeper` the elements
/// with longer routes below them; with `routes`, `sc.routes` the routes strictly inside
/// the window as (bits below the window, length below the window, next hop).
pub(super) fn paint<A: Address>(
    rib: &Rib<A>,
    window: &Prefix<A>,
    bot: u8,
    sc: &mut Scratch,
    routes: bool,
) {
    let bits = bot - window.len();
    sc.fpa.clear();
    sc.fpa.resize(1 << bits, 0);
    sc.deeper.clear();
    sc.routes.clear();
    let wl = window.len();
    // Element index of `p` (inside the window); a window of one element has only 0.
    let index = |p: &Prefix<A>| {
        if bits == 0 {
            0
        } else {
            p.addr().bits_at(wl, bits)
        }
    };
    // The routes inside the window, painted over a zero background (0 is no next hop,
    // and no route has it): the covering route's value fills what stays zero after the
    // walk, which returns it from the same descent.
    let (fpa, deeper, list) = (&mut sc.fpa, &mut sc.deeper, &mut sc.routes);
    let mut painted = false;
    let base = rib
        .walk_window(
            window,
            bot,
            |p, nh| {
                let rel = p.len() - wl;
                if rel == 0 {
                    return;
                }
                painted = true;
                let idx = index(&p);
                let span = 1usize << (bot - p.len());
                fpa[idx as usize..idx as usize + span].fill(nh.get());
                if routes {
                    list.push((idx >> (bot - p.len()), rel, nh.get()));
                }
            },
            |p| {
                let idx = index(&p);
                if deeper.last() != Some(&idx) {
                    deeper.push(idx);
                }
            },
        )
        .map_or(0, |h| h.get());
    if base != 0 {
        if painted {
            for v in fpa.iter_mut().filter(|v| **v == 0) {
                *v = base;
            }
        } else {
            fpa.fill(base);
        }
    }
}

/// The level traversal of a chunk at `root` (`s` levels, inheriting `default`) whose only
/// route is `p` (next hop `v`, strictly inside `root`): what [`paint`] gives for it, without
/// the `Rib`.
pub(super) fn paint_alone<A: Address>(
    p: &Prefix<A>,
    v: u32,
    root: &Prefix<A>,
    s: u8,
    default: u32,
    sc: &mut Scratch,
) {
    let (top, bot) = (root.len(), root.len() + s);
    sc.fpa.clear();
    sc.fpa.resize(1 << s, default);
    sc.deeper.clear();
    sc.routes.clear();
    if p.len() <= bot {
        let rel = p.len() - top;
        let bits = p.addr().bits_at(top, rel);
        let span = bot - p.len();
        let x = (bits as usize) << span;
        sc.fpa[x..x + (1 << span)].fill(v);
        sc.routes.push((bits, rel, v));
    } else {
        sc.deeper.push(p.addr().bits_at(top, s));
    }
}

/// The sparse form of a painted chunk (§V-D), if it has at most `k` entries: its routes
/// and pointers, longest first, then the inherited value; as (`prefix << 4 | length`,
/// value).
pub(super) fn sparse_entries(
    sc: &Scratch,
    s: u8,
    default: u32,
    k: usize,
) -> Option<Vec<(u32, u32)>> {
    if k == 0 || sc.routes.len() + sc.deeper.len() + 1 > k {
        return None;
    }
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(k);
    for &x in &sc.deeper {
        out.push((x << 4 | s as u32, sc.fpa[x as usize]));
    }
    let mut routes = sc.routes.clone();
    routes.sort_by_key(|r| core::cmp::Reverse(r.1));
    for (bits, len, nh) in routes {
        // A route on a pointer's element is the default of the chunk below.
        if len == s && sc.deeper.contains(&bits) {
            continue;
        }
        out.push((bits << 4 | len as u32, nh));
    }
    out.sort_by_key(|e| core::cmp::Reverse(e.0 & 0xf));
    out.push((0, default));
    Some(out)
}

//! The encodings of the OBMA paper, as pure functions over word slices:
//!
//! * **Groups** (§III-A, §III-B, Fig. 5): a Forwarding Port Array of `n = 2^d` elements
//!   (`d ≥ 3`) as an *overlay bitmap* — a 1 at the first element of every run of equal
//!   elements, so no two neighbouring entries are equal (Theorem 1: the fewest 1s of any
//!   encoding of the same trie) — cut into 8-bit *clusters*, one 16-bit *code word* per
//!   cluster (the cluster's bitmap in the low byte, most significant bit first, and the
//!   number of 1s before the cluster in the high byte), followed by the *lookup entries*,
//!   one per 1. The element at `i` is entry `counter + IndexTable[bitmap >> (7 - i % 8)] - 1`
//!   of cluster `i / 8` (Algorithm 1, lines 7–11).
//! * **Bit Inversion Sequences** (§V-A, §V-B): the FPA permuted by `i ↦ i ^ bis` before it
//!   is encoded, chosen by the greedy top-down search (Algorithm 2) or exhaustively (the
//!   optimum, for Fig. 13).
//! * **The 24th-level transform** (§VI-B2, Table II): one element of an encoded group
//!   changed directly on the encoding — the two bits at and after it and at most two
//!   entries — without the FPA or the trie.
//! * **Lulea-style heads** (§III-A, Fig. 3), counted for Fig. 13.

use crate::schemes::common::bits::ones_through_msb8;
/// The paper's *Index Table*: the number of 1s of every 8-bit value.
pub(crate) use crate::schemes::common::bits::BYTE_ONES as INDEX_TABLE;

/// Code words of a group of `n` elements.
#[inline(always)]
pub(crate) const fn code_words(n: usize) -> usize {
    n / 8
}

/// The number of 1s of the overlay bitmap of `fpa` permuted by `bis`.
pub(crate) fn ones(fpa: &[u32], bis: usize) -> usize {
    let mut prev = fpa[bis];
    let mut n = 1;
    for i in 1..fpa.len() {
        let v = fpa[i ^ bis];
        n += (v != prev) as usize;
        prev = v;
    }
    n
}

/// Algorithm 2, the greedy top-down search: from the top bit down, a BIS bit is set when
/// swapping the subtries at its depth leaves fewer 1s than keeping them, given the bits
/// already chosen above it (the paper's benefit — adjacent pairs the swap makes equal —
/// against its cost — equal pairs it separates — counted exactly over the whole FPA).
pub(crate) fn greedy_bis(fpa: &[u32]) -> usize {
    let bits = fpa.len().trailing_zeros();
    let mut bis = 0;
    let mut best = ones(fpa, 0);
    for b in (0..bits).rev() {
        let with = ones(fpa, bis | 1 << b);
        if with < best {
            best = with;
            bis |= 1 << b;
        }
    }
    bis
}

/// The optimal BIS by exhaustive search (§V-B, `Θ(n²)`): the fewest 1s, the smallest
/// sequence among equals.
pub(crate) fn optimal_bis(fpa: &[u32]) -> usize {
    (0..fpa.len())
        .min_by_key(|&b| (ones(fpa, b), b))
        .unwrap_or(0)
}

/// Appends the group encoding of `fpa` under `bis` to `out`: `n / 8` code words, then the
/// lookup entries.
pub(crate) fn encode(fpa: &[u32], bis: usize, out: &mut Vec<u32>) {
    let n = fpa.len();
    debug_assert!(n >= 8 && n.is_power_of_two());
    let cw0 = out.len();
    out.resize(cw0 + code_words(n), 0);
    let mut count = 0u32;
    let mut prev = None;
    for c in 0..code_words(n) {
        let mut bitmap = 0u32;
        let before = count;
        if bis == 0 && prev.is_some_and(|p| fpa[c * 8..c * 8 + 8].iter().all(|&v| v == p)) {
            // A cluster inside one run (most of them): no 1, no entry.
            out[cw0 + c] = before << 8;
            continue;
        }
        for k in 0..8 {
            let v = fpa[(c * 8 + k) ^ bis];
            if prev != Some(v) {
                bitmap |= 0x80 >> k;
                out.push(v);
                count += 1;
                prev = Some(v);
            }
        }
        out[cw0 + c] = before << 8 | bitmap;
    }
}

/// The words of an encoded group of `n` elements whose code words are read by `cw`.
#[inline]
pub(crate) fn group_words(n: usize, last_code_word: u32) -> usize {
    code_words(n) + (last_code_word >> 8) as usize + (last_code_word & 0xff).count_ones() as usize
}

/// The position, among the entries, of the entry of (permuted) element `i`, given its
/// cluster's code word.
#[inline(always)]
pub(crate) fn entry_index(code_word: u32, i: usize) -> usize {
    ((code_word >> 8) & 0xff) as usize + ones_through_msb8(code_word, i) as usize - 1
}

/// Whether (permuted) element `i` has a 1 in the overlay bitmap, given its cluster's code
/// word: whether a lookup entry starts at it.
#[inline(always)]
pub(crate) fn bit(code_word: u32, i: usize) -> bool {
    (code_word & 0xff) >> (7 - (i & 7)) & 1 == 1
}

/// Decodes an encoded group (`words`, `n` elements, BIS `bis`) back to its FPA.
pub(crate) fn decode(words: &[u32], n: usize, bis: usize, fpa: &mut Vec<u32>) {
    fpa.clear();
    fpa.resize(n, 0);
    let entries = &words[code_words(n)..];
    let mut e = usize::MAX;
    for i in 0..n {
        let cw = words[i / 8];
        if (cw & 0xff) >> (7 - (i & 7)) & 1 == 1 {
            e = e.wrapping_add(1);
        }
        fpa[i ^ bis] = entries[e];
    }
}

/// Table II: the encoding of `words` (a group of `n` elements under `bis`) with element
/// `elem` set to `v`, derived from the old encoding alone. Appends the new group to `out`
/// and returns true, or returns false (and appends nothing) if the element already is `v`.
///
/// Only the bits at the element and after it change (`00 → 11`, `01 → 10`, … as the
/// table lists), at most two entries are inserted or removed where they sit, and the
/// counters of later clusters move by the difference ([`set_range`] of one element).
#[cfg(test)]
pub(crate) fn set_element(
    words: &[u32],
    n: usize,
    bis: usize,
    elem: usize,
    v: u32,
    out: &mut Vec<u32>,
) -> bool {
    let pos = elem ^ bis;
    if words[code_words(n) + entry_index(words[pos / 8], pos)] == v {
        return false;
    }
    set_range(words, n, pos, pos + 1, v, out);
    true
}

/// Table II over a range: the encoding of `words` (a group of `n` elements) with the
/// positions `lo..hi` (in the group's permuted order, `lo < hi <= n`) all set to `v`,
/// derived from the old encoding alone, appended to `out`. The bits inside the range
/// clear, the bit at `lo` is 1 if its left neighbour differs from `v` and the bit at `hi`
/// if the element there does; the entries of the runs starting inside the range (and at
/// `hi`) make way for at most two (`v`, and the value at `hi`), and the counters of
/// later clusters move by the difference. The bits elsewhere are kept as they are, so a
/// group holding redundant 1s keeps them (and stays exact).
pub(crate) fn set_range(words: &[u32], n: usize, lo: usize, hi: usize, v: u32, out: &mut Vec<u32>) {
    debug_assert!(lo < hi && hi <= n);
    let ncw = code_words(n);
    let entries = &words[ncw..];
    let value = |j: usize| entries[entry_index(words[j / 8], j)];
    let nb_lo = lo == 0 || value(lo - 1) != v;
    let right = (hi < n).then(|| value(hi));
    let nb_hi = right.is_some_and(|r| r != v);
    // Entries of the runs that start before `lo`, and of those that start after `hi`.
    let before = entry_index(words[lo / 8], lo) + 1 - bit(words[lo / 8], lo) as usize;
    let through = match right {
        Some(_) => entry_index(words[hi / 8], hi) + 1,
        None => entries.len(),
    };
    let base = out.len();
    out.extend_from_slice(&words[..ncw]);
    out.extend_from_slice(&entries[..before]);
    if nb_lo {
        out.push(v);
    }
    if let Some(r) = right.filter(|_| nb_hi) {
        out.push(r);
    }
    out.extend_from_slice(&entries[through..]);
    // The bits from `lo` to `hi`, then the counters from `lo`'s cluster on.
    for q in lo..hi.min(n - 1) + 1 {
        let on = (q == lo && nb_lo) || (q == hi && nb_hi);
        let m = 0x80 >> (q & 7);
        let w = &mut out[base + q / 8];
        *w = if on { *w | m } else { *w & !m };
    }
    let mut count = (out[base + lo / 8] >> 8) & 0xff;
    for c in lo / 8..ncw {
        let w = &mut out[base + c];
        *w = count << 8 | (*w & 0xff);
        count += (*w & 0xff).count_ones();
    }
}

/// Appends the encoding of a group of `n` elements that all hold `base` but `v` at
/// `lo..hi` (`lo < hi <= n`, `v != base`): at most three runs, built directly (a new
/// chunk's groups, whose only route is one prefix).
pub(crate) fn with_range(n: usize, lo: usize, hi: usize, base: u32, v: u32, out: &mut Vec<u32>) {
    debug_assert!(lo < hi && hi <= n && v != base);
    let cw0 = out.len();
    out.resize(cw0 + code_words(n), 0);
    // The runs: `base` before `lo` (if any), `v`, `base` from `hi` (if any).
    let runs = [(lo > 0, 0, base), (true, lo, v), (hi < n, hi, base)];
    for (_, at, x) in runs.into_iter().filter(|r| r.0) {
        let c = cw0 + at / 8;
        out[c] |= 0x80 >> (at % 8);
        out.push(x);
        // The clusters after this one count its 1.
        for w in &mut out[c + 1..cw0 + code_words(n)] {
            *w += 1 << 8;
        }
    }
}

/// The number of 1s at positions `lo..hi` of an encoded group's bitmap (`cw`: reads its
/// code word `c`).
pub(crate) use crate::schemes::common::bits::ones_in_msb8 as ones_in;

/// Lulea-style heads (§III-A, Fig. 3) of the window of `16` elements at `first` of a chunk
/// of `2^s` elements: the leaves of the leaf-pushed trie inside the window. `internal[u]`
/// marks, at each level `u < s` of the chunk, the nodes with a route strictly below them.
pub(crate) fn lulea_heads(internal: &[Vec<bool>], s: usize, level: usize, node: usize) -> usize {
    if level == s || !internal[level][node] {
        return 1;
    }
    lulea_heads(internal, s, level + 1, 2 * node)
        + lulea_heads(internal, s, level + 1, 2 * node + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(words: &[u32], n: usize, bis: usize, i: usize) -> u32 {
        let p = i ^ bis;
        words[code_words(n) + entry_index(words[p / 8], p)]
    }

    fn arrays(seed: u64, n: usize, ports: u32) -> Vec<u32> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Runs, as real FPAs have them.
                x.is_multiple_of(7) as u32 * (x >> 8) as u32 % ports
            })
            .scan(0, |last, v| {
                if v != 0 {
                    *last = v;
                }
                Some(*last)
            })
            .collect()
    }

    #[test]
    fn encode_decode_and_lookup_agree() {
        for n in [8, 16, 64, 256] {
            for seed in 1..50u64 {
                let fpa = arrays(seed, n, 5);
                for bis in [0, 1, n / 2, n - 1, greedy_bis(&fpa), optimal_bis(&fpa)] {
                    let mut w = Vec::new();
                    encode(&fpa, bis, &mut w);
                    assert_eq!(w.len(), group_words(n, w[code_words(n) - 1]));
                    assert_eq!(w.len() - code_words(n), ones(&fpa, bis));
                    let mut back = Vec::new();
                    decode(&w, n, bis, &mut back);
                    assert_eq!(back, fpa);
                    for (i, &v) in fpa.iter().enumerate() {
                        assert_eq!(lookup(&w, n, bis, i), v);
                    }
                }
            }
        }
    }

    #[test]
    fn paper_example_index_table() {
        // §III-B: bitmap 00010001 (17) has two 1s.
        assert_eq!(INDEX_TABLE[17], 2);
        // Fig. 5: cluster bitmap 10001100, bit index 4 → shifted by 3 → 17.
        assert_eq!(0b1000_1100 >> (7 - 4), 17);
    }

    #[test]
    fn set_element_equals_a_fresh_encoding() {
        // Table II exhaustively over small groups: every element, every new value.
        for n in [8, 16, 32] {
            for seed in 1..40u64 {
                let fpa = arrays(seed, n, 4);
                for bis in [0, greedy_bis(&fpa), n - 1] {
                    let mut w = Vec::new();
                    encode(&fpa, bis, &mut w);
                    for i in 0..n {
                        for v in 0..5 {
                            let mut out = vec![9, 9];
                            let changed = set_element(&w, n, bis, i, v, &mut out);
                            assert_eq!(changed, fpa[i] != v);
                            if !changed {
                                assert_eq!(out.len(), 2);
                                continue;
                            }
                            let mut f2 = fpa.clone();
                            f2[i] = v;
                            let mut want = vec![9, 9];
                            encode(&f2, bis, &mut want);
                            assert_eq!(out, want, "n {n} bis {bis} elem {i} -> {v}");
                        }
                    }
                }
            }
        }
    }

    /// `encode` with a 1 also at every position `q` with `split[q]`: the redundant 1s a
    /// merge stored in place leaves (two neighbouring entries of one value).
    fn encode_split(fpa: &[u32], bis: usize, split: &[bool]) -> Vec<u32> {
        let n = fpa.len();
        let mut out = vec![0; code_words(n)];
        let mut count = 0u32;
        let mut prev = None;
        for c in 0..code_words(n) {
            let mut bitmap = 0u32;
            let before = count;
            for k in 0..8 {
                let v = fpa[(c * 8 + k) ^ bis];
                if prev != Some(v) || split[c * 8 + k] {
                    bitmap |= 0x80 >> k;
                    out.push(v);
                    count += 1;
                    prev = Some(v);
                }
            }
            out[c] = before << 8 | bitmap;
        }
        out
    }

    #[test]
    fn set_element_on_groups_with_redundant_ones() {
        // Table II's transform is derived from the bits as they are, so a group that kept
        // redundant 1s gives a group that decodes to the right elements.
        for n in [8, 16, 32] {
            for seed in 1..30u64 {
                let fpa = arrays(seed, n, 3);
                let split: Vec<bool> = arrays(seed ^ 0x55, n, 2).iter().map(|&v| v == 1).collect();
                for bis in [0, n - 1] {
                    let w = encode_split(&fpa, bis, &split);
                    assert_eq!(w.len(), group_words(n, w[code_words(n) - 1]));
                    let mut back = Vec::new();
                    decode(&w, n, bis, &mut back);
                    assert_eq!(back, fpa);
                    for i in 0..n {
                        for v in 0..4 {
                            let mut out = Vec::new();
                            let changed = set_element(&w, n, bis, i, v, &mut out);
                            assert_eq!(changed, fpa[i] != v);
                            if !changed {
                                continue;
                            }
                            assert_eq!(out.len(), group_words(n, out[code_words(n) - 1]));
                            let mut f2 = fpa.clone();
                            f2[i] = v;
                            decode(&out, n, bis, &mut back);
                            assert_eq!(back, f2, "n {n} bis {bis} elem {i} -> {v}");
                            for (q, &want) in f2.iter().enumerate() {
                                assert_eq!(lookup(&out, n, bis, q), want);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn set_range_equals_a_fresh_encoding() {
        // Every range of small groups, canonical and with redundant 1s: the result
        // decodes to the elements with the range set; from a canonical group it is the
        // fresh encoding.
        for n in [8, 16, 32] {
            for seed in 1..12u64 {
                let fpa = arrays(seed, n, 3);
                let split: Vec<bool> = arrays(seed ^ 0x33, n, 2).iter().map(|&v| v == 1).collect();
                for (canonical, w) in [
                    (true, encode_split(&fpa, 0, &vec![false; n])),
                    (false, encode_split(&fpa, 0, &split)),
                ] {
                    for lo in 0..n {
                        for hi in lo + 1..=n {
                            let q = ones_in(|c| w[c], lo, hi);
                            let by_bits = (lo..hi)
                                .filter(|&x| (w[x / 8] & 0xff) >> (7 - x % 8) & 1 == 1)
                                .count();
                            assert_eq!(q, by_bits);
                            for v in 0..4 {
                                let mut out = Vec::new();
                                set_range(&w, n, lo, hi, v, &mut out);
                                let mut f2 = fpa.clone();
                                f2[lo..hi].fill(v);
                                let mut back = Vec::new();
                                decode(&out, n, 0, &mut back);
                                assert_eq!(back, f2, "n {n} {lo}..{hi} -> {v}");
                                assert_eq!(out.len(), group_words(n, out[code_words(n) - 1]));
                                if canonical {
                                    let mut want = Vec::new();
                                    encode(&f2, 0, &mut want);
                                    assert_eq!(out, want);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn with_range_equals_a_fresh_encoding() {
        for n in [8usize, 16, 64, 256] {
            for lo in 0..n {
                for hi in lo + 1..=n {
                    let mut fpa = vec![7u32; n];
                    fpa[lo..hi].fill(9);
                    let (mut want, mut got) = (Vec::new(), vec![1, 2]);
                    encode(&fpa, 0, &mut want);
                    with_range(n, lo, hi, 7, 9, &mut got);
                    assert_eq!(&got[2..], &want[..], "n {n} {lo}..{hi}");
                }
            }
        }
    }

    #[test]
    fn bis_searches() {
        // The paper's Fig. 8 spirit: swapping the last pair merges two runs.
        let fpa = [1, 1, 2, 2, 3, 3, 4, 1];
        assert_eq!(ones(&fpa, 0), 5);
        let g = greedy_bis(&fpa);
        let o = optimal_bis(&fpa);
        assert!(ones(&fpa, o) <= ones(&fpa, g) && ones(&fpa, g) <= ones(&fpa, 0));
        assert_eq!(ones(&fpa, o), (0..8).map(|b| ones(&fpa, b)).min().unwrap());
        // A one-port FPA needs no inversion.
        assert_eq!(greedy_bis(&[7; 16]), 0);
        assert_eq!(optimal_bis(&[7; 16]), 0);
    }

    #[test]
    fn lulea_heads_count_leaves() {
        // Chunk of 16 elements (s = 4); one route at level 2 node 1 (elements 4..8) and
        // one deeper subtree under element 9.
        let s = 4;
        let mut internal: Vec<Vec<bool>> = (0..s).map(|u| vec![false; 1 << u]).collect();
        for (u, node) in [(0, 0), (1, 0), (1, 1), (2, 2), (3, 4)] {
            internal[u][node] = true;
        }
        // Leaves: level1 node0 splits (route at level 2 below) into 2 (node 0 and 1 of
        // level 2), level1 node1 splits down to element 9: 2 + 1 + 1 + 1 + 1.
        assert_eq!(lulea_heads(&internal, s, 0, 0), 6);
    }
}

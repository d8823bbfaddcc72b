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

/// Entries of the paper's *Index Table*: the number of 1s of every 8-bit value.
pub(crate) static INDEX_TABLE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
};

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
    ((code_word >> 8) & 0xff) as usize
        + INDEX_TABLE[((code_word & 0xff) >> (7 - (i & 7))) as usize] as usize
        - 1
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
/// counters of later clusters move by the difference.
pub(crate) fn set_element(
    words: &[u32],
    n: usize,
    bis: usize,
    elem: usize,
    v: u32,
    out: &mut Vec<u32>,
) -> bool {
    let ncw = code_words(n);
    let entries = &words[ncw..];
    let pos = elem ^ bis;
    let bit = |j: usize| (words[j / 8] & 0xff) >> (7 - (j & 7)) & 1 == 1;
    let value = |j: usize| entries[entry_index(words[j / 8], j)];
    let old = value(pos);
    if old == v {
        return false;
    }
    let left = (pos > 0).then(|| value(pos - 1));
    let right = (pos + 1 < n).then(|| value(pos + 1));
    let (b0, b1) = (bit(pos), pos + 1 < n && bit(pos + 1));
    let nb0 = left != Some(v);
    let nb1 = right.is_some_and(|r| r != v);
    // Entries before the element's: the 1s strictly before `pos`.
    let r = entry_index(words[pos / 8], pos) + 1 - b0 as usize;
    let base = out.len();
    out.extend_from_slice(&words[..ncw]);
    out.extend_from_slice(&entries[..r]);
    if nb0 {
        out.push(v);
    }
    if nb1 {
        out.push(right.expect("nb1 implies a right neighbour"));
    }
    out.extend_from_slice(&entries[r + b0 as usize + b1 as usize..]);
    // The two bits, then the counters from the element's cluster on.
    let set = |out: &mut Vec<u32>, j: usize, on: bool| {
        let m = 0x80 >> (j & 7);
        let w = &mut out[base + j / 8];
        *w = if on { *w | m } else { *w & !m };
    };
    set(out, pos, nb0);
    if pos + 1 < n {
        set(out, pos + 1, nb1);
    }
    let mut count = (out[base + pos / 8] >> 8) & 0xff;
    for c in pos / 8..ncw {
        let w = &mut out[base + c];
        *w = count << 8 | (*w & 0xff);
        count += (*w & 0xff).count_ones();
    }
    true
}

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
                (x % 7 == 0) as u32 * (x >> 8) as u32 % ports
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

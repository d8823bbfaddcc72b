//! Shared helpers of the integration tests: the data directory, table loading and the
//! differential check of a scheme against the reference `Rib`.
#![allow(dead_code)]

use std::path::PathBuf;

use lpmkit::io::{self, TableOptions};
use lpmkit::{Address, AnyTable, Fib, NextHop, Rib};

/// The real-data directory: `$LPMKIT_DATA`, else `../shared/data` beside the workspace.
/// `None` (with a note on stderr) if it is absent — unless `LPMKIT_REQUIRE_DATA` is set
/// (as in CI), where its absence fails the test.
pub fn data_dir() -> Option<PathBuf> {
    if cfg!(not(feature = "compression")) {
        eprintln!(
            "note: the data files are compressed and the `compression` feature is off; skipping"
        );
        return None;
    }
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if dir.join("fib").is_dir() {
        return Some(dir);
    }
    if std::env::var_os("LPMKIT_REQUIRE_DATA").is_some() {
        panic!(
            "LPMKIT_REQUIRE_DATA is set but {} holds no fib/ directory",
            dir.display()
        );
    }
    eprintln!(
        "note: real data not found at {} (set LPMKIT_DATA); skipping",
        dir.display()
    );
    None
}

/// Every routing table in `fib/`, sorted by name.
pub fn fib_tables() -> Vec<PathBuf> {
    let Some(dir) = data_dir() else { return vec![] };
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir.join("fib"))
        .expect("readable fib dir")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// A file under the data directory, if the data is present.
pub fn data_file(rel: &str) -> Option<PathBuf> {
    data_dir().map(|d| d.join(rel))
}

/// Loads a table with default options (200 assigned next hops for prefix-only files).
pub fn load(path: &std::path::Path) -> AnyTable {
    io::read_table(path, &TableOptions::default())
        .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
}

/// Verification keys: `n` random ones (IPv6: half uniform, half built from table
/// prefixes so they match), plus every prefix boundary and its neighbours.
pub fn keys_for<A: Address>(rib: &Rib<A>, n: usize, seed: u64) -> Vec<A> {
    let mut keys: Vec<A> = lpmkit::traffic::uniform(n / 2, seed);
    match A::FAMILY {
        lpmkit::Family::V4 => keys.extend(lpmkit::traffic::uniform::<A>(n - n / 2, seed + 1)),
        lpmkit::Family::V6 => {
            let rib6 = (rib as &dyn std::any::Any)
                .downcast_ref::<Rib<u128>>()
                .unwrap();
            keys.extend(
                lpmkit::traffic::v6_matching(rib6, n - n / 2, seed + 1)
                    .into_iter()
                    .map(A::from_u128),
            );
        }
    }
    keys.extend(lpmkit::traffic::boundary_keys(rib));
    keys
}

/// The reference answers for `keys` (looked up in sorted order, which keeps the trie's
/// upper levels cached).
pub fn reference<A: Address>(rib: &Rib<A>, keys: &[A]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_unstable_by_key(|&i| keys[i as usize]);
    let mut want = vec![0u32; keys.len()];
    for i in order {
        want[i as usize] = NextHop::raw(rib.lookup(keys[i as usize]));
    }
    want
}

/// Compares `lookup_batch` (over batch lengths 1, 3, 7, … up to 4096, so every tail
/// length of a kernel occurs) and `lookup` with the reference answers; panics with the
/// first mismatches in full.
pub fn assert_agrees<A: Address>(
    fib: &dyn Fib<A>,
    rib: &Rib<A>,
    keys: &[A],
    want: &[u32],
    what: &str,
) {
    let mut bad = Vec::new();
    let mut count = 0usize;
    let mut out = vec![0u32; 4096];
    let (mut start, mut len) = (0usize, 1usize);
    while start < keys.len() {
        let end = (start + len).min(keys.len());
        let o = &mut out[..end - start];
        fib.lookup_batch(&keys[start..end], o);
        for (j, &got) in o.iter().enumerate() {
            let i = start + j;
            let single = NextHop::raw(fib.lookup(keys[i]));
            for (path, g) in [("lookup_batch", got), ("lookup", single)] {
                if g != want[i] {
                    count += 1;
                    if bad.len() < 8 {
                        let m = rib
                            .lookup_prefix(keys[i])
                            .map_or("no route".into(), |(p, _)| p.to_string());
                        bad.push(format!(
                            "  {path}({}) = {g}, want {} (matches {m})",
                            lpmkit::prefix::format_addr(keys[i]),
                            want[i]
                        ));
                    }
                }
            }
        }
        start = end;
        len = (len * 2 + 1).min(4096);
    }
    assert!(
        count == 0,
        "{what}: {count} mismatches against the Rib on {} keys; first ones:\n{}",
        keys.len(),
        bad.join("\n")
    );
}

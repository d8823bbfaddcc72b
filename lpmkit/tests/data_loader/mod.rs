//! Finding and reading the shared real data (tables and update traces) for the tests,
//! through `lpmkit::io` (the directory from `common`), plus the boundary keys every
//! differential test probes.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use lpmkit::io::{read_table_as, read_updates, TableOptions};
use lpmkit::{Address, Change, NextHopTable, Prefix, Table};

/// The data directory, by the shared rule of `common::data_dir` (absent data skips the
/// test with a note, or fails it when `LPMKIT_REQUIRE_DATA` is set, as in CI).
pub fn data_dir() -> Option<PathBuf> {
    crate::common::data_dir()
}

/// The files of `sub` (`fib`, `updates`) whose names start with `prefix`.
pub fn files(sub: &str, prefix: &str) -> Vec<PathBuf> {
    let Some(d) = data_dir() else { return vec![] };
    let mut v: Vec<PathBuf> = std::fs::read_dir(d.join(sub))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".txt.xz"))
    });
    v.sort();
    v
}

/// Reads a table with `lpmkit::io` (prefix-only files get the io module's assigned next
/// hops, 200 of them).
pub fn load_table<A: Address>(path: &Path) -> Table<A> {
    read_table_as::<A>(path, &TableOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Reads an update trace, interning its next hops into `hops` (the table's).
pub fn load_updates<A: Address>(path: &Path, hops: &mut NextHopTable<String>) -> Vec<Change<A>> {
    read_updates::<A>(path, hops)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .map(|u| u.change)
        .collect()
}

/// First and last address of every route, each ±1, plus 0 and the top address.
pub use lpmkit::traffic::boundary_keys;

/// The first and last address of `p`, each ±1.
pub fn push_boundaries<A: Address>(p: &Prefix<A>, keys: &mut Vec<A>) {
    for a in [p.first(), p.last()] {
        keys.push(a);
        keys.extend(a.checked_inc());
        keys.extend(a.checked_dec());
    }
}

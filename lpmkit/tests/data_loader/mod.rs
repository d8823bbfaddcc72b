//! A minimal private reader for the shared real data (until `lpmkit::io` lands): text
//! tables `PREFIX/LEN [NEXTHOP]` and update traces `TIME A|W PREFIX NEXTHOP|- [PEER]`,
//! xz-compressed. Next hops are interned tokens; prefix-only tables get a deterministic
//! hash of the prefix mod 200 (plus one).

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use lpmkit::rng::mix64;
use lpmkit::{Address, Change, NextHop, Prefix, Rib};

/// `<workspace>/../shared/data` or `$LPMKIT_DATA`, if it exists.
pub fn data_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("note: no real data at {}; skipping", dir.display());
        None
    }
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

fn lines(path: &PathBuf) -> impl Iterator<Item = (usize, String)> {
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    BufReader::new(liblzma::read::XzDecoder::new(f))
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.expect("readable xz text")))
}

fn intern(names: &mut HashMap<String, u32>, token: &str) -> NextHop {
    let n = names.len() as u32 + 1;
    NextHop::new(*names.entry(token.to_string()).or_insert(n)).unwrap()
}

/// Reads a table; `names` interns next-hop tokens (shared with update traces).
pub fn load_table<A: Address>(path: &PathBuf, names: &mut HashMap<String, u32>) -> Rib<A> {
    let mut rib = Rib::new();
    for (no, line) in lines(path) {
        let mut it = line.split_whitespace();
        let Some(p) = it.next() else { continue };
        let p: Prefix<A> = p
            .parse()
            .unwrap_or_else(|e| panic!("{}:{no}: {e}", path.display()));
        let nh = match it.next() {
            Some(t) => intern(names, t),
            None => {
                let a = p.addr().to_u128();
                let h = mix64(a as u64 ^ (a >> 64) as u64 ^ p.len() as u64);
                NextHop::new((h % 200) as u32 + 1).unwrap()
            }
        };
        rib.insert(p, nh);
    }
    rib
}

/// Reads an update trace.
pub fn load_updates<A: Address>(
    path: &PathBuf,
    names: &mut HashMap<String, u32>,
) -> Vec<Change<A>> {
    let mut v = Vec::new();
    for (no, line) in lines(path) {
        let t: Vec<&str> = line.split_whitespace().collect();
        if t.is_empty() {
            continue;
        }
        assert!(t.len() >= 4, "{}:{no}: short line", path.display());
        let p: Prefix<A> = t[2]
            .parse()
            .unwrap_or_else(|e| panic!("{}:{no}: {e}", path.display()));
        v.push(match t[1] {
            "A" => Change::Announce(p, intern(names, t[3])),
            "W" => Change::Withdraw(p),
            other => panic!("{}:{no}: unknown kind {other:?}", path.display()),
        });
    }
    v
}

/// First and last address of every route, each ±1, plus 0 and the top address.
pub fn boundary_keys<A: Address>(rib: &Rib<A>) -> Vec<A> {
    let mut keys = vec![A::ZERO, A::MAX];
    for (p, _) in rib.iter() {
        push_boundaries(&p, &mut keys);
    }
    keys
}

/// The first and last address of `p`, each ±1.
pub fn push_boundaries<A: Address>(p: &Prefix<A>, keys: &mut Vec<A>) {
    for a in [p.first(), p.last()] {
        keys.push(a);
        keys.extend(a.checked_inc());
        keys.extend(a.checked_dec());
    }
}

//! The shared harness of the integration tests: the real-data rule (where the shared data
//! is, and what a test does when it is not there), loading its tables and update traces
//! through `lpmkit::io`, verification keys, the reference answers of the `Rib`, and the
//! comparison of a scheme with them.
//!
//! Every test that reads `../shared/data` finds it through [`data_dir`], [`data_file`],
//! [`data_files`] or [`fib_table`]: absent data skips the test with a note, or fails it
//! when `LPMKIT_REQUIRE_DATA` is set (as in CI).
#![allow(dead_code)]

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use lpmkit::io::{self, TableOptions};
use lpmkit::rng::SplitMix64;
use lpmkit::{
    Address, AnyTable, Change, Fib, IncrementalFib, NextHop, NextHopTable, Prefix, Rib, Table,
};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

// ---------------------------------------------------------------------------------------
// The code paths.

/// The instruction-set ceilings every table is checked under: each level this CPU
/// supports, highest first (AVX-512, AVX2, scalar). The levels it lacks are named on
/// stderr: their kernels go unchecked on this machine.
pub fn isa_levels() -> Vec<lpmkit::simd::Isa> {
    use lpmkit::simd::Isa;
    for isa in Isa::ALL.into_iter().filter(|i| !i.supported()) {
        eprintln!("note: this CPU has no {isa}; the {isa} code paths are skipped");
    }
    Isa::supported_levels()
}

/// Build options with the ceiling `isa`.
pub fn isa_options(isa: lpmkit::simd::Isa) -> lpmkit::BuildOptions {
    let mut o = lpmkit::BuildOptions::default();
    o.isa = Some(isa);
    o
}

// ---------------------------------------------------------------------------------------
// The real data.

/// False if the environment variable `var` (a comma-separated list of scheme names) is
/// set and does not name `scheme`: a run limited to some schemes (CI's DPDK stage, or a
/// developer checking one scheme). Unset, every scheme is selected.
#[allow(dead_code)] // not every test binary filters schemes
pub fn selected(var: &str, scheme: &str) -> bool {
    std::env::var(var).map_or(true, |list| list.split(',').any(|s| s.trim() == scheme))
}

/// Whether the real data must be present: `LPMKIT_REQUIRE_DATA` is set (as in CI).
pub fn data_required() -> bool {
    std::env::var_os("LPMKIT_REQUIRE_DATA").is_some()
}

/// Data the test wanted is not there: a failure if the data is required, else a note on
/// stderr (the caller then skips).
#[track_caller]
fn absent(what: std::fmt::Arguments) {
    if data_required() {
        panic!("LPMKIT_REQUIRE_DATA is set but {what}");
    }
    eprintln!("note: {what}; skipping");
}

/// The real-data directory: `$LPMKIT_DATA`, else `../shared/data` beside the workspace.
/// `None` (with a note on stderr) if it is absent or cannot be read (the files are
/// compressed and the `compression` feature is off) — a failure instead when
/// `LPMKIT_REQUIRE_DATA` is set.
#[track_caller]
pub fn data_dir() -> Option<PathBuf> {
    if cfg!(not(feature = "compression")) {
        absent(format_args!(
            "the data files are compressed and the `compression` feature is off"
        ));
        return None;
    }
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if dir.join("fib").is_dir() {
        return Some(dir);
    }
    absent(format_args!(
        "no real data at {} (no fib/ directory; set LPMKIT_DATA)",
        dir.display()
    ));
    None
}

/// The file `rel` (e.g. `fib/ipv4-bart-tier1-prefixes.txt.xz`) under the data directory,
/// if it is there (the rule of [`data_dir`] for the directory and for the file).
#[track_caller]
pub fn data_file(rel: &str) -> Option<PathBuf> {
    let path = data_dir()?.join(rel);
    if path.is_file() {
        return Some(path);
    }
    absent(format_args!("{} is missing", path.display()));
    None
}

/// The files of the data subdirectory `sub` (`fib`, `updates`) whose names start with
/// `prefix`, sorted by name. Finding none is absent data (the rule of [`data_dir`]).
#[track_caller]
pub fn data_files(sub: &str, prefix: &str) -> Vec<PathBuf> {
    let Some(dir) = data_dir() else {
        return vec![];
    };
    let dir = dir.join(sub);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.is_file()
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(prefix))
    });
    v.sort();
    if v.is_empty() {
        absent(format_args!("{} holds no {prefix}* files", dir.display()));
    }
    v
}

/// Every routing table in `fib/`, sorted by name.
#[track_caller]
pub fn fib_tables() -> Vec<PathBuf> {
    data_files("fib", "")
}

/// The real tables a scheme suite's default tier checks every setting on: the smallest
/// of each family with real next hops (the long tier takes the others; the differential
/// suite checks every registered scheme on every table in both tiers).
pub const DEFAULT_TIER_TABLES: [&str; 2] = [
    "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
    "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
];

/// A test's share of the work: the default tier, or the long one (`-- --ignored`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// `cargo test --release --workspace`.
    Default,
    /// `cargo test --release --workspace -- --ignored`.
    Long,
}

/// The tables of `fib/` whose names start with `prefix`, sorted by name: in the default
/// tier those of [`DEFAULT_TIER_TABLES`], in the long tier the others (the rule of
/// [`data_dir`] for absent data).
#[track_caller]
pub fn tier_tables(prefix: &str, tier: Tier) -> Vec<PathBuf> {
    match tier {
        Tier::Default => DEFAULT_TIER_TABLES
            .iter()
            .filter(|n| n.starts_with(prefix))
            .filter_map(|n| data_file(&format!("fib/{n}")))
            .collect(),
        Tier::Long => {
            let mut v = data_files("fib", prefix);
            v.retain(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                !DEFAULT_TIER_TABLES.contains(&name)
            });
            v
        }
    }
}

/// The table `fib/{name}` read as family `A` (see [`load_table`]), if the data is there.
#[track_caller]
pub fn fib_table<A: Address>(name: &str) -> Option<Table<A>> {
    data_file(&format!("fib/{name}")).map(|p| load_table(&p))
}

/// Loads a table of either family with default options (200 assigned next hops for
/// prefix-only files). A file is read once per test process (many tests read the same
/// real tables); each caller gets its own copy.
pub fn load(path: &Path) -> AnyTable {
    static READ: OnceLock<Mutex<HashMap<PathBuf, Arc<OnceLock<AnyTable>>>>> = OnceLock::new();
    let slot = Arc::clone(
        READ.get_or_init(Mutex::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(path.to_path_buf())
            .or_default(),
    );
    slot.get_or_init(|| {
        io::read_table(path, &TableOptions::default())
            .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
    })
    .clone()
}

/// Loads a table of family `A` with default options (prefix-only files get the io module's
/// assigned next hops, 200 of them); read once per test process, as [`load`].
pub fn load_table<A: Address>(path: &Path) -> Table<A> {
    let any: Box<dyn Any> = match load(path) {
        AnyTable::V4(t) => Box::new(t),
        AnyTable::V6(t) => Box::new(t),
    };
    match any.downcast::<Table<A>>() {
        Ok(t) => *t,
        // The other family: reading it as `A` is an error, which names the file.
        Err(_) => io::read_table_as::<A>(path, &TableOptions::default())
            .unwrap_or_else(|e| panic!("loading {}: {e}", path.display())),
    }
}

/// Reads an update trace, interning its next hops into `hops` (the table's).
pub fn load_updates<A: Address>(path: &Path, hops: &mut NextHopTable<String>) -> Vec<Change<A>> {
    io::read_updates::<A>(path, hops)
        .unwrap_or_else(|e| panic!("loading {}: {e}", path.display()))
        .into_iter()
        .map(|u| u.change)
        .collect()
}

// ---------------------------------------------------------------------------------------
// Keys.

/// The first and last address of `p`, each ±1 (within the address space).
pub fn push_boundaries<A: Address>(p: &Prefix<A>, keys: &mut Vec<A>) {
    for a in [p.first(), p.last()] {
        keys.push(a);
        keys.extend(a.checked_inc());
        keys.extend(a.checked_dec());
    }
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

/// `3 × rounds` IPv6 keys around the routes of `rib`: per round a Spider-paper matching
/// key (the first 32 bits of a route, 32 random bits, `::1`), a key deep inside a random
/// route, and a uniform key.
pub fn v6_route_keys(rib: &Rib<u128>, rounds: usize, seed: u64) -> Vec<u128> {
    let mut rng = lpmkit::rng::SplitMix64::new(seed);
    let starts: Vec<u128> = rib.iter().map(|(p, _)| p.addr()).collect();
    let mut keys = Vec::with_capacity(3 * rounds);
    for _ in 0..rounds {
        let p = starts[rng.below(starts.len() as u64) as usize];
        keys.push((p >> 96 << 96) | ((rng.next() as u128 & 0xffff_ffff) << 64) | 1);
        keys.push(p | (rng.next_u128() >> (rng.below(128) as u32)));
        keys.push(rng.next_u128());
    }
    keys
}

// ---------------------------------------------------------------------------------------
// Answers and comparisons.

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

/// Compares `fib` with the expected answers: `lookup_batch` on all keys at once, `lookup`
/// on every key, and `lookup_batch` on the first 0, 1, 15, 16, 17, 63, 64, 65, 129, 130
/// and 200 keys (full blocks and every kind of tail); panics at the first mismatch.
pub fn assert_lookups<A: Address, F: Fib<A> + ?Sized>(
    fib: &F,
    keys: &[A],
    want: &[u32],
    what: &str,
) {
    let mut out = vec![u32::MAX; keys.len()];
    fib.lookup_batch(keys, &mut out);
    let bad = out.iter().zip(want).filter(|(o, w)| o != w).count();
    if let Some(i) = (0..keys.len()).find(|&i| out[i] != want[i]) {
        panic!(
            "{what}: lookup_batch: {bad} mismatches of {}, first {:x}: got {}, want {}",
            keys.len(),
            keys[i],
            out[i],
            want[i]
        );
    }
    for (&k, &w) in keys.iter().zip(want) {
        assert_eq!(NextHop::raw(fib.lookup(k)), w, "{what}: lookup {k:x}");
    }
    for n in [0, 1, 15, 16, 17, 63, 64, 65, 129, 130, 200] {
        let n = n.min(keys.len());
        let mut out = vec![u32::MAX; n];
        fib.lookup_batch(&keys[..n], &mut out);
        assert_eq!(&out[..], &want[..n], "{what}: lookup_batch of {n}");
    }
}

// ---------------------------------------------------------------------------------------
// Synthetic tables and random update sequences.

/// A `Rib` of the given routes (`("10.0.0.0/8", 1)`, …).
pub fn rib_of<A: Address>(routes: &[(&str, u32)]) -> Rib<A> {
    routes
        .iter()
        .map(|&(p, h)| (p.parse::<Prefix<A>>().unwrap(), NextHop::new(h).unwrap()))
        .collect()
}

/// One IPv4 route of every length along one path, /0 to /32 (next hops 1, then 2–4).
pub fn v4_chain() -> Vec<(String, u32)> {
    let mut chain = vec![("0.0.0.0/0".to_string(), 1)];
    for l in 1..=32u8 {
        let a = u32::netmask(l) & 0x5555_5555;
        chain.push((
            format!("{}/{l}", std::net::Ipv4Addr::from(a)),
            2 + l as u32 % 3,
        ));
    }
    chain
}

/// A random prefix concentrated so that routes nest and collide at every depth: one of
/// four high parts, and low bits that are random, 16 bits, the address's top bits
/// shifted down to `shift` bits below its top quarter, or none.
pub fn random_prefix<A: Address>(rng: &mut SplitMix64, shift: u32) -> Prefix<A> {
    let len = rng.below(A::BITS as u64 + 1) as u8;
    let hi = A::from_u128((rng.below(4) as u128) << (A::BITS - 2));
    let r = rng.next_u128();
    let noise = match rng.below(4) {
        0 => A::from_u128(r),
        1 => A::from_u128(r & 0xffff),
        2 => A::from_u128(r >> (128 - A::BITS as u32 + shift)),
        _ => A::ZERO,
    };
    Prefix::new_truncating(hi.or(noise), len)
}

/// A synthetic `Rib` of `routes` [`random_prefix`]es (`shift` as there) with next hops
/// `1..=hops`.
pub fn synthetic<A: Address>(seed: u64, routes: usize, hops: u64, shift: u32) -> Rib<A> {
    let mut rng = SplitMix64::new(seed);
    let mut rib = Rib::new();
    for _ in 0..routes {
        let p = random_prefix::<A>(&mut rng, shift);
        rib.insert(p, NextHop::new(1 + rng.below(hops) as u32).unwrap());
    }
    rib
}

/// One step of a random update sequence: a prefix (address bits, of which the low
/// `A::BITS` are used, and a length), a next hop, and whether the step announces it. A
/// step that does not announce withdraws an existing route, picked by the address bits
/// (so that withdrawals matter), or the prefix itself when the `Rib` is empty.
pub type Op = ((u128, u8), u32, bool);

/// Prefixes of `bits`-bit addresses that nest and collide: few distinct high parts and
/// low parts (24 low bits, or the top bits shifted down by two), any length.
pub fn prefix_strategy(bits: u8) -> impl Strategy<Value = (u128, u8)> {
    (0u128..4, any::<u128>(), 0u8..=bits, 0u8..3).prop_map(move |(hi, r, len, kind)| {
        let top = hi << (bits - 2);
        let noise = match kind {
            0 => r & ((1u128 << 24) - 1),
            1 => r >> (128 - bits as u32),
            _ => 0,
        };
        (top | noise, len)
    })
}

/// The change step `op` stands for, given the `Rib` before it.
pub fn op_change<A: Address>(rib: &Rib<A>, &((addr, len), nh, announce): &Op) -> Change<A> {
    let p = Prefix::new_truncating(A::from_u128(addr), len);
    if announce {
        Change::Announce(p, NextHop::new(nh).unwrap())
    } else {
        let existing = rib
            .iter()
            .nth(addr as usize % rib.len().max(1))
            .map(|r| r.0);
        Change::Withdraw(existing.unwrap_or(p))
    }
}

/// Replays `ops` on `rib` and on `fib` (built from it), `batch` changes per `apply` (the
/// last call takes what remains); after each call, `lookup_batch` and `lookup` on every
/// route boundary of the `Rib` agree with it. Returns the final `Rib`.
pub fn replay_ops<A: Address, F: IncrementalFib<A> + ?Sized>(
    fib: &mut F,
    mut rib: Rib<A>,
    ops: &[Op],
    batch: usize,
    what: &dyn std::fmt::Debug,
) -> Result<Rib<A>, TestCaseError> {
    let mut pending = Vec::new();
    for (k, op) in ops.iter().enumerate() {
        let c = op_change(&rib, op);
        c.apply_to(&mut rib);
        pending.push(c);
        if (k + 1) % batch != 0 && k + 1 < ops.len() {
            continue;
        }
        fib.apply(&rib, &pending).unwrap();
        pending.clear();
        let keys = lpmkit::traffic::boundary_keys(&rib);
        let want = reference(&rib, &keys);
        let mut out = vec![0; keys.len()];
        fib.lookup_batch(&keys, &mut out);
        prop_assert_eq!(&out, &want, "{:?}: after {:?}", what, c);
        for (&k, &w) in keys.iter().zip(&want) {
            prop_assert_eq!(
                NextHop::raw(fib.lookup(k)),
                w,
                "{:?}: lookup {:x} after {:?}",
                what,
                k,
                c
            );
        }
    }
    Ok(rib)
}

// ---------------------------------------------------------------------------------------
// Scratch files for the readers' tests.

/// A scratch directory unique to one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpmkit-io-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes `bytes` to `dir/name`.
pub fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    use std::io::Write;
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().write_all(bytes).unwrap();
    p
}

/// `bytes` xz-compressed.
#[cfg(feature = "compression")]
pub fn xz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// `bytes` gzip-compressed.
#[cfg(feature = "compression")]
pub fn gz(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// Changes that reach an OBMA table's DPA on a table of many next hops (the origin-AS
/// tables): `n` announcements of /12–/18 prefixes and of /19–/24 prefixes below random
/// /18s, each with a next hop drawn from `1..=max_hop` (most of them new to the DPA), and
/// withdrawals of earlier ones; deterministic from `seed`.
pub fn dpa_churn(n: usize, max_hop: u32, seed: u64) -> Vec<lpmkit::Change<u32>> {
    use lpmkit::{Change, NextHop, Prefix};
    let mut rng = lpmkit::rng::SplitMix64::new(seed);
    let mut announced: Vec<Prefix<u32>> = Vec::new();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        if !announced.is_empty() && rng.below(4) == 0 {
            let i = rng.below(announced.len() as u64) as usize;
            out.push(Change::Withdraw(announced.swap_remove(i)));
            continue;
        }
        let len = if rng.below(2) == 0 {
            12 + rng.below(7) as u8
        } else {
            19 + rng.below(6) as u8
        };
        let p = Prefix::new_truncating(rng.next() as u32, len);
        let hop = NextHop::new(1 + rng.below(max_hop as u64) as u32).expect("nonzero");
        announced.push(p);
        out.push(Change::Announce(p, hop));
    }
    out
}

//! One routing table for applications and bindings: [`RouteTable`] owns its routes (a
//! [`Rib`]), its values (any [`TableValue`]: strings, integers, [`Value`]) and a lookup
//! scheme chosen by name or automatically, answers lookups with the values themselves (and
//! the matched prefix on request), takes announcements and withdrawals while other threads
//! look up, and serialises to bytes and back.
//!
//! This is the layer the Python package (`python/`), the C ABI (`lpmkit-capi`) and the
//! CLI's `lpmkit annotate` wrap; Rust code that wants full control uses the schemes,
//! [`crate::registry`] and [`crate::sync`] directly.
//!
//! ```
//! use lpmkit::facade::{RouteTable, Value};
//! use lpmkit::Ipv4;
//!
//! let routes = [("10.0.0.0/8", 64500), ("10.1.0.0/16", 64501)]
//!     .map(|(p, asn)| (p.parse().unwrap(), Value::Int(asn)));
//! let table = RouteTable::<Ipv4, Value>::from_routes(routes, "auto", &Default::default())?;
//! assert_eq!(table.scheme(), "d16r");
//! assert_eq!(table.lookup(0x0a01_0203), Some(&Value::Int(64501)));
//!
//! // Many keys at once: the scheme's batch lookup.
//! let mut out = [None; 3];
//! table.lookup_batch(&[0x0a01_0203, 0x0a02_0000, 0x0b00_0000], &mut out);
//! assert_eq!(out, [Some(&Value::Int(64501)), Some(&Value::Int(64500)), None]);
//!
//! // The matched prefix, on request.
//! let (p, v) = table.lookup_prefix(0x0a02_0000).unwrap();
//! assert_eq!((p.to_string(), v), ("10.0.0.0/8".to_string(), &Value::Int(64500)));
//!
//! // Updates (from any thread, while others look up), and a serialised copy.
//! table.insert("10.2.0.0/16".parse()?, Value::Str("blackhole".into()))?;
//! let copy = RouteTable::<Ipv4, Value>::from_bytes(&table.to_bytes())?;
//! assert_eq!(copy.lookup(0x0a02_0001), Some(&Value::Str("blackhole".into())));
//! assert!(RouteTable::<Ipv4, Value>::from_bytes(b"not a table").is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Choosing the scheme: `auto`
//!
//! `auto` picks by family and size, then falls back on a capacity error (a table the
//! layout cannot hold) to the next candidate; [`auto_candidates`] lists them. On a table of
//! at least [`CALIBRATE_FROM`](crate::simd::CALIBRATE_FROM) routes it first *measures*:
//! the first three candidates (at most 2 s of builds) are built and timed on the same keys
//! (`docs/simd.md`), and the fastest is taken if it beats the rule's first by more than 3 %
//! ([`RouteTable::auto_choice`] says what was measured). `LPMKIT_CALIBRATE=0` turns the
//! measurement off: the rule alone, the same scheme on every run. A table that is looked up
//! *and updated* wants the fastest lookups among the schemes that patch one instance in
//! place: a rebuild-style scheme rebuilds the whole table at every update, so its update
//! latency is a full build.
//!
//! * **IPv4: DXR, `d16r` below 2^19 routes, `d18r` below 1,500,000, `d20r` from there
//!   on**; then `poptrie18`, then `trie`. A small table's ranges fit the 2^16-entry direct
//!   table's chunks, which keeps the whole structure in cache; a full table gains from
//!   resolving two more bits directly (fewer and shorter binary searches) for a 1 MiB
//!   lookup table instead of 256 KiB; a table larger than any of today's (more than
//!   half the address space in /24s and longer) gains from two bits more again, the
//!   direct table answering more of the lookups and the binary searches shorter, for a
//!   4 MiB lookup table.
//! * **IPv6: `poptrie16`** whatever the size: of the IPv6 schemes that update in place it
//!   looks up fastest on the real IPv6 tables, in the least memory; then `trie`. On
//!   synthetic tables of millions of routes `obma-l` can be faster at about four times the
//!   memory, not by enough to trade it.
//!
//! The lookup rates behind the rule are in `docs/results/` (`lpmkit experiment run
//! lpmkit` and, for the large tables, `lpmkit experiment run large`) and in
//! `docs/choosing.md`; `lpmkit bench -t TABLE -s d16r,d18r,poptrie16,poptrie18` measures them on a
//! table of one's own. A table that is loaded once and only looked up (no updates) is
//! faster with a rebuild-style scheme named explicitly, such as `spider16w`.
//!
//! ## Update models
//!
//! The table drives its scheme through the best model the scheme offers
//! ([`SchemeInfo::best_model`](crate::registry::SchemeInfo::best_model)): one instance
//! patched in place where it can be (DXR, Poptrie, Luleå, SAIL, MIHT, OBMA, and the
//! Bloom-filter schemes, whose readers validate each batch against the generation counters
//! and look it up again if a patch began meanwhile), a rebuild published with one pointer
//! swap at every change for the rest (DIR-24-8, Spider, the trie). Lookups never lock: each
//! thread's batch runs on a reader handle taken from a small pool (one lock of the pool per
//! call, not per key; [`RouteTable::reader`] gives a thread a handle of its own). Updates
//! take the table's writer lock, one at a time. **Values** are interned (equal values
//! share an id) in a store that only grows, which readers index without a lock.
//! **Matched prefixes** come from a copy of the routes in a reference trie made at the
//! first [`RouteTable::lookup_prefix`] call and kept up to date from then on (a read lock
//! per call; a few million lookups per second, against hundreds for values).
//!
//! ## Serialised form
//!
//! [`RouteTable::to_bytes`]: the magic `LPMKITRT`, a format version, the family, the value
//! type's tag, the scheme and its settings, the values, the routes, and an FNV-1a 64-bit
//! checksum of everything before it. [`RouteTable::from_bytes`] checks each part — magic,
//! version, family, value type, lengths, canonical prefixes, value ids, checksum — and
//! refuses a blob that fails any of them with [`TableError::Blob`] naming what is wrong; a
//! corrupt or foreign blob is an error, never undefined behaviour.

use core::fmt;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock, RwLock};
use std::time::Duration;

use crate::fib::{BuildError, Change};
use crate::io::ReadError;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Family, Prefix};
use crate::registry::{self, BuildOptions, SchemeInfo};
use crate::rib::Rib;
use crate::sync::{LookupHandle, Updater};
use crate::table::Table;

mod blob;
mod values;

pub use blob::blob_family;
use values::AppendOnly;
pub use values::{TableValue, Value};

/// The scheme name that asks the table to choose ([`auto_candidates`]).
pub const AUTO: &str = "auto";

/// Routes from which `auto` takes `d20r` for IPv4: past every real table of today, where
/// the larger direct table pays for itself (see the [module docs](self)).
const AUTO_LARGE_V4: usize = 1_500_000;

/// The schemes `auto` tries for a table of `family` with `routes` routes, in order: the
/// first that builds is used (see the [module docs](self) for why).
#[doc(hidden)]
pub fn auto_candidates(family: Family, routes: usize) -> &'static [&'static str] {
    match family {
        Family::V4 if routes < 1 << 19 => &["d16r", "d18r", "poptrie18", "trie"],
        Family::V4 if routes < AUTO_LARGE_V4 => &["d18r", "d16r", "poptrie18", "trie"],
        Family::V4 => &["d20r", "d18r", "poptrie18", "trie"],
        Family::V6 => &["poptrie16", "trie"],
    }
}

/// Why a [`RouteTable`] could not be made, updated or read back.
#[derive(Debug)]
#[non_exhaustive]
pub enum TableError {
    /// No registered scheme has this name (or it does not handle the family).
    UnknownScheme {
        /// The name asked for.
        name: String,
        /// The family of the table.
        family: Family,
        /// The schemes that handle the family, and `auto`.
        known: Vec<&'static str>,
    },
    /// The scheme refused the routes (a capacity limit, a bad setting).
    Build(BuildError),
    /// A table file could not be read.
    Read(ReadError),
    /// A serialised table is corrupt, truncated, of another version, family or value
    /// type, or not a table at all.
    Blob(String),
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TableError::UnknownScheme {
                name,
                family,
                known,
            } => write!(
                f,
                "unknown scheme {name:?} for {family}; known: {}",
                known.join(", ")
            ),
            TableError::Build(e) => write!(f, "{e}"),
            TableError::Read(e) => write!(f, "{e}"),
            TableError::Blob(why) => write!(f, "not a valid serialised table: {why}"),
        }
    }
}

impl std::error::Error for TableError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TableError::Build(e) => Some(e),
            TableError::Read(e) => Some(e),
            _ => None,
        }
    }
}

impl From<BuildError> for TableError {
    fn from(e: BuildError) -> Self {
        TableError::Build(e)
    }
}

impl From<ReadError> for TableError {
    fn from(e: ReadError) -> Self {
        TableError::Read(e)
    }
}

/// What the writer lock guards.
struct Writer<A: Address, V> {
    updater: Box<dyn Updater<A>>,
    ids: HashMap<V, NextHop>,
}

/// A routing table with user values, a lookup scheme, updates under concurrent lookups
/// and a serialised form: see the [module docs](self).
///
/// `RouteTable` is `Send + Sync`: share it (`Arc`, `&`) between lookup threads and the
/// threads that update it.
pub struct RouteTable<A: Address, V: TableValue> {
    scheme: &'static SchemeInfo,
    options: BuildOptions,
    model: &'static str,
    writer: Mutex<Writer<A, V>>,
    /// Value of id `i` at index `i - 1`.
    values: AppendOnly<V>,
    /// Idle reader handles (each is `Send`, not `Sync`: one thread at a time).
    pool: Mutex<Vec<Box<dyn LookupHandle<A>>>>,
    /// What new handles are cloned from.
    template: Mutex<Box<dyn LookupHandle<A>>>,
    /// The routes in a reference trie, for matched prefixes: made on the first request.
    prefixes: OnceLock<RwLock<Rib<A>>>,
    /// How `auto` chose the scheme, where it measured.
    auto_choice: Option<AutoChoice>,
}

impl<A: Address, V: TableValue> fmt::Debug for RouteTable<A, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RouteTable")
            .field("family", &A::FAMILY)
            .field("scheme", &self.scheme.name)
            .field("model", &self.model)
            .field("routes", &self.len())
            .field("values", &self.values.len())
            .finish()
    }
}

/// Locks, ignoring poison: every structure behind these locks is left consistent by the
/// code that holds them (a panic inside a scheme's patch is the scheme's bug, and the
/// updater restores what it can).
fn lock<T: ?Sized>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The schemes to try for `name` (`auto` or a registry name).
fn resolve<A: Address>(name: &str, routes: usize) -> Result<Vec<&'static SchemeInfo>, TableError> {
    let unknown = || TableError::UnknownScheme {
        name: name.to_string(),
        family: A::FAMILY,
        known: std::iter::once(AUTO)
            .chain(registry::schemes_for(A::FAMILY).map(|s| s.name))
            .collect(),
    };
    if name == AUTO {
        return Ok(auto_candidates(A::FAMILY, routes)
            .iter()
            .filter_map(|n| registry::find(n))
            .collect());
    }
    match registry::find(name) {
        Some(info) if info.supports(A::FAMILY) => Ok(vec![info]),
        _ => Err(unknown()),
    }
}

/// What [`build_updater`] returns: the scheme taken, its updater, and how `auto` chose it
/// where it measured.
#[doc(hidden)]
pub type BuiltUpdater<A> = (&'static SchemeInfo, Box<dyn Updater<A>>, Option<AutoChoice>);

/// Builds `rib` into the scheme `scheme` names and the update model that scheme does best
/// ([`SchemeInfo::best_model`]: in place where it can, else a rebuild once changes have
/// waited `hold_time`). `auto` tries [`auto_candidates`] for the table's size in order and
/// goes on to the next after a capacity error; a named scheme is tried alone. With
/// `measure`, `auto` first times its candidates on the table and tries the fastest first
/// (the third value says so). What [`RouteTable`] (measuring) and the DPDK-compatible
/// library (`lpmkit-dpdk`: not measuring, so that a table's first change does not wait for
/// the candidates' builds) stand on.
#[doc(hidden)]
pub fn build_updater<A: Address>(
    rib: Rib<A>,
    scheme: &str,
    options: &BuildOptions,
    hold_time: Duration,
    measure: bool,
) -> Result<BuiltUpdater<A>, TableError> {
    let mut candidates = resolve::<A>(scheme, rib.len())?;
    let choice = if scheme == AUTO && measure {
        measure_candidates(&rib, &candidates, options)
    } else {
        None
    };
    if let Some(c) = &choice {
        // The winner first; the others after it, in the rule's order, for its fallbacks.
        candidates.sort_by_key(|i| i.name != c.chosen);
    }
    let mut last = None;
    let mut rib = Some(rib);
    for (i, info) in candidates.iter().enumerate() {
        let r = if i + 1 == candidates.len() {
            rib.take()
                .expect("the Rib is kept until the last candidate")
        } else {
            rib.as_ref().expect("kept").clone()
        };
        let model = info.best_model(A::FAMILY, hold_time);
        match info.updater(r, options, model) {
            Ok(updater) => {
                let choice = choice.filter(|c| c.chosen == info.name);
                return Ok((info, updater, choice));
            }
            // `auto` goes on after a capacity error; a named scheme does not.
            Err(e @ (BuildError::NextHopOverflow { .. } | BuildError::CapacityExceeded { .. }))
                if scheme == AUTO =>
            {
                last = Some(e)
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.map(TableError::Build).unwrap_or_else(|| {
        TableError::Build(BuildError::InvalidConfig {
            scheme: scheme.to_string(),
            reason: "no scheme to try".into(),
        })
    }))
}

/// At most this many of `auto`'s candidates are built and timed on the table …
const AUTO_MEASURED: usize = 3;
/// … and no more are built once building them has taken this long.
const AUTO_BUILD_BUDGET: Duration = Duration::from_secs(2);

/// How `auto` chose among its candidates by timing them on the table
/// ([`RouteTable::auto_choice`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AutoChoice {
    /// The scheme taken.
    pub chosen: &'static str,
    /// Every candidate timed, in the rule's order ([`auto_candidates`]), with its lookup
    /// rate in millions per second on the same keys.
    pub rates: Vec<(&'static str, f32)>,
    /// Milliseconds the candidates' builds and the timing took.
    pub millis: u32,
}

impl fmt::Display for AutoChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "auto chose {}, measured on this table:", self.chosen)?;
        for (i, (name, mlps)) in self.rates.iter().enumerate() {
            write!(f, "{} {name} {mlps:.0} Mlps", if i == 0 { "" } else { "," })?;
        }
        write!(f, " ({} ms)", self.millis)
    }
}

/// Times the first [`AUTO_MEASURED`] of `auto`'s candidates (not `trie`) on the table:
/// each is built as it would be looked up, then all are raced on the same keys
/// ([`crate::simd::race`], in long runs). The rule's first stays unless another is more
/// than 3 % faster. `None` where there is nothing to choose: fewer than two candidates
/// build, a table of fewer than [`crate::simd::CALIBRATE_FROM`] routes, or
/// `LPMKIT_CALIBRATE=0` (the rule's order alone: the same scheme on every run).
fn measure_candidates<A: Address>(
    rib: &Rib<A>,
    candidates: &[&'static SchemeInfo],
    options: &BuildOptions,
) -> Option<AutoChoice> {
    if rib.len() < crate::simd::CALIBRATE_FROM || !crate::simd::calibration_enabled() {
        return None;
    }
    let t0 = std::time::Instant::now();
    let mut built = Vec::new();
    for info in candidates
        .iter()
        .filter(|i| i.name != "trie")
        .take(AUTO_MEASURED)
    {
        if !built.is_empty() && t0.elapsed() >= AUTO_BUILD_BUDGET {
            break;
        }
        if let Ok(fib) = info.build(rib, options) {
            built.push((info.name, fib));
        }
    }
    if built.len() < 2 {
        return None;
    }
    let rates = crate::simd::race(
        rib,
        built.len(),
        crate::simd::Pace::SCHEMES,
        |c, keys, out| built[c].1.lookup_batch(keys, out),
    );
    let best = (0..rates.len())
        .max_by(|&a, &b| rates[a].relative.total_cmp(&rates[b].relative))
        .filter(|&b| rates[b].relative > 1.0 + crate::simd::MARGIN)
        .unwrap_or(0);
    Some(AutoChoice {
        chosen: built[best].0,
        rates: built
            .iter()
            .zip(&rates)
            .map(|((n, _), r)| (*n, r.mlps))
            .collect(),
        millis: t0.elapsed().as_millis().min(u32::MAX as u128) as u32,
    })
}

/// Lookup ids are computed in chunks of this many keys (a buffer on the stack).
const CHUNK: usize = 1024;

impl<A: Address, V: TableValue> RouteTable<A, V> {
    /// An empty table using `scheme` (`"auto"` or a registry name).
    pub fn new(scheme: &str) -> Result<Self, TableError> {
        Self::from_routes(std::iter::empty(), scheme, &BuildOptions::default())
    }

    /// A table of `routes` (a later route for the same prefix replaces an earlier one),
    /// looked up with `scheme` (`"auto"` or a registry name) built with `options`.
    pub fn from_routes(
        routes: impl IntoIterator<Item = (Prefix<A>, V)>,
        scheme: &str,
        options: &BuildOptions,
    ) -> Result<Self, TableError> {
        let mut ids = HashMap::new();
        let mut values = Vec::new();
        let mut rib = Rib::new();
        for (p, v) in routes {
            let id = intern(&mut ids, &mut values, v);
            rib.insert(p, id);
        }
        Self::assemble(rib, ids, values, scheme, options)
    }

    /// A table from a loaded [`Table`] (routes and next-hop names, as `io::read_table`
    /// returns them), with each next-hop name turned into a value by `value` (called
    /// once per distinct name; names that give equal values share it).
    pub fn from_table_with(
        table: Table<A>,
        scheme: &str,
        options: &BuildOptions,
        mut value: impl FnMut(&str) -> V,
    ) -> Result<Self, TableError> {
        let mut ids = HashMap::new();
        let mut values = Vec::new();
        // Old id -> new id; the Rib is kept as it is when they agree (the usual case).
        let remap: Vec<NextHop> = table
            .next_hops
            .iter()
            .map(|(_, name)| intern(&mut ids, &mut values, value(name)))
            .collect();
        let identity = remap
            .iter()
            .enumerate()
            .all(|(i, id)| id.get() as usize == i + 1);
        let rib = if identity {
            table.rib
        } else {
            table
                .rib
                .iter()
                .map(|(p, nh)| (p, remap[nh.get() as usize - 1]))
                .collect()
        };
        Self::assemble(rib, ids, values, scheme, options)
    }

    fn assemble(
        rib: Rib<A>,
        ids: HashMap<V, NextHop>,
        values: Vec<V>,
        scheme: &str,
        options: &BuildOptions,
    ) -> Result<Self, TableError> {
        let (info, updater, auto_choice) =
            build_updater(rib, scheme, options, Duration::ZERO, true)?;
        let store = AppendOnly::default();
        for v in values {
            store.push(v);
        }
        let template = updater.reader();
        Ok(RouteTable {
            scheme: info,
            options: options.clone(),
            model: updater.model().as_str(),
            writer: Mutex::new(Writer { updater, ids }),
            values: store,
            pool: Mutex::new(Vec::new()),
            template: Mutex::new(template),
            prefixes: OnceLock::new(),
            auto_choice,
        })
    }

    /// The scheme the table looks up with (its registry name; `auto` resolved).
    pub fn scheme(&self) -> &'static str {
        self.scheme.name
    }

    /// How `auto` chose [`scheme`](Self::scheme) by timing its candidates on this table;
    /// `None` for a scheme named, or where `auto` took its rule's first candidate without
    /// measuring (see [`AutoChoice`] and the [module docs](self)).
    pub fn auto_choice(&self) -> Option<&AutoChoice> {
        self.auto_choice.as_ref()
    }

    /// The build options the scheme was built with.
    pub fn options(&self) -> &BuildOptions {
        &self.options
    }

    /// The update model (`"in place, one instance"` or `"rebuild, published with one
    /// pointer swap"`: [`UpdateModel::as_str`](crate::sync::UpdateModel::as_str)).
    pub fn model(&self) -> &'static str {
        self.model
    }

    /// The address family.
    pub fn family(&self) -> Family {
        A::FAMILY
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        lock(&self.writer).updater.rib().len()
    }

    /// True if the table has no route.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the lookup structure holds (the update model's figure: both twins, or the
    /// instance and what waits for reclamation), not counting the routes' trie and values.
    pub fn memory_bytes(&self) -> usize {
        lock(&self.writer).updater.memory_bytes()
    }

    /// Number of distinct values interned so far (ids `1..=value_count()`); values
    /// stay interned when their routes go.
    pub fn value_count(&self) -> usize {
        self.values.len()
    }

    /// The value of id `id` (as [`lookup_ids`](Self::lookup_ids) returns; 0 = none).
    #[inline]
    pub fn value(&self, id: u32) -> Option<&V> {
        (id as usize)
            .checked_sub(1)
            .and_then(|i| self.values.get(i))
    }

    /// Runs `f` on a pooled reader handle.
    fn with_reader<R>(&self, f: impl FnOnce(&mut dyn LookupHandle<A>) -> R) -> R {
        let popped = lock(&self.pool).pop();
        let mut h = popped.unwrap_or_else(|| lock(&self.template).boxed_clone());
        let r = f(&mut *h);
        // An idle handle must not hold back the reuse of retired memory.
        h.offline();
        lock(&self.pool).push(h);
        r
    }

    /// The value id of each address (`out[i]` for `addrs[i]`; 0 = no route): the
    /// scheme's batch lookup, with no per-key overhead. [`value`](Self::value) turns an
    /// id into its value; ids never change meaning.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub fn lookup_ids(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        self.with_reader(|h| h.lookup_batch(addrs, &mut out[..addrs.len()]));
    }

    /// The value of the longest prefix that matches `addr`.
    pub fn lookup(&self, addr: A) -> Option<&V> {
        let mut id = [0u32];
        self.lookup_ids(&[addr], &mut id);
        self.value(id[0])
    }

    /// The value of each address (`out[i]` for `addrs[i]`).
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub fn lookup_batch<'a>(&'a self, addrs: &[A], out: &mut [Option<&'a V>]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let mut ids = [0u32; CHUNK];
        self.with_reader(|h| {
            for (keys, out) in addrs.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
                let ids = &mut ids[..keys.len()];
                h.lookup_batch(keys, ids);
                for (o, &id) in out.iter_mut().zip(ids.iter()) {
                    *o = self.value(id);
                }
            }
        });
    }

    fn prefix_rib(&self) -> &RwLock<Rib<A>> {
        if let Some(r) = self.prefixes.get() {
            return r;
        }
        // Made under the writer lock, so that no update can slip between the copy and
        // the moment updates start to keep it current.
        let w = lock(&self.writer);
        self.prefixes
            .get_or_init(|| RwLock::new(w.updater.rib().clone()))
    }

    /// The longest prefix that matches `addr`, and its value.
    pub fn lookup_prefix(&self, addr: A) -> Option<(Prefix<A>, &V)> {
        let rib = self.prefix_rib().read().unwrap_or_else(|e| e.into_inner());
        let (p, nh) = rib.lookup_prefix(addr)?;
        Some((p, self.value(nh.get())?))
    }

    /// The matched prefix and value id of each address (`None`: no route).
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    pub fn lookup_prefix_batch(&self, addrs: &[A], out: &mut [Option<(Prefix<A>, u32)>]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let rib = self.prefix_rib().read().unwrap_or_else(|e| e.into_inner());
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = rib.lookup_prefix(a).map(|(p, nh)| (p, nh.get()));
        }
    }

    /// Sets the route of `prefix` to `value`; returns the value it had.
    pub fn insert(&self, prefix: Prefix<A>, value: V) -> Result<Option<V>, TableError> {
        Ok(self.apply([(prefix, Some(value))])?.pop().flatten())
    }

    /// Removes the route of `prefix`; returns the value it had.
    pub fn remove(&self, prefix: &Prefix<A>) -> Result<Option<V>, TableError> {
        Ok(self.apply([(*prefix, None)])?.pop().flatten())
    }

    /// Applies announcements (`Some(value)`) and withdrawals (`None`) in order, as one
    /// batch (one patch or rebuild for all of them); returns each prefix's value before
    /// its change. Lookups on other threads go on meanwhile and see, per key, the table
    /// before or after the batch.
    ///
    /// An error (a capacity limit of the scheme) leaves the routes as they were. What
    /// other threads' lookups see *while* the failing batch runs depends on the update
    /// model ([`model`](Self::model)):
    ///
    /// * **rebuild**: nothing of the batch — the new table is built aside and never
    ///   published, readers keep the table before it;
    /// * **in place**: the batch is patched in, fails, and is patched out again; until it
    ///   is undone, a lookup of a key the batch touched may return the batch's answer for
    ///   it (each key still gets the answer of the table before the batch, during it, or
    ///   after the undo — never one no version had). If undoing fails too, a table rebuilt
    ///   from the routes replaces it; if that fails as well, the table is poisoned:
    ///   lookups panic and every later update is an error.
    pub fn apply(
        &self,
        changes: impl IntoIterator<Item = (Prefix<A>, Option<V>)>,
    ) -> Result<Vec<Option<V>>, TableError> {
        let mut guard = lock(&self.writer);
        let w = &mut *guard;
        let mut batch = Vec::new();
        let mut before = Vec::new();
        // What the batch sees as the Rib so far (a prefix may change twice).
        let mut seen: HashMap<Prefix<A>, Option<NextHop>> = HashMap::new();
        for (p, v) in changes {
            let old = match seen.get(&p) {
                Some(&o) => o,
                None => w.updater.rib().get(&p),
            };
            before.push(old.and_then(|id| self.value(id.get()).cloned()));
            let change = match v {
                Some(v) => {
                    let id = match w.ids.get(&v) {
                        Some(&id) => id,
                        None => {
                            let id = NextHop::new(self.values.len() as u32 + 1)
                                .expect("fewer than 2^32 - 1 values");
                            w.ids.insert(v.clone(), id);
                            self.values.push(v);
                            id
                        }
                    };
                    Change::Announce(p, id)
                }
                None => Change::Withdraw(p),
            };
            seen.insert(
                p,
                match change {
                    Change::Announce(_, id) => Some(id),
                    Change::Withdraw(_) => None,
                },
            );
            batch.push(change);
        }
        w.updater.apply(&batch)?;
        if let Some(rib) = self.prefixes.get() {
            let mut rib = rib.write().unwrap_or_else(|e| e.into_inner());
            rib.apply_changes(&batch);
        }
        Ok(before)
    }

    /// Every route and its value, in prefix order.
    pub fn routes(&self) -> Vec<(Prefix<A>, V)> {
        let w = lock(&self.writer);
        w.updater
            .rib()
            .iter()
            .filter_map(|(p, nh)| Some((p, self.value(nh.get())?.clone())))
            .collect()
    }

    /// A lookup handle for one thread (no pool lock per call).
    pub fn reader(&self) -> TableReader<'_, A, V> {
        TableReader {
            table: self,
            handle: lock(&self.template).boxed_clone(),
        }
    }

    /// The table in its serialised form (see the [module docs](self)).
    pub fn to_bytes(&self) -> Vec<u8> {
        let w = lock(&self.writer);
        blob::encode(
            self.scheme.name,
            &self.options,
            self.values.iter(),
            self.values.len(),
            w.updater.rib(),
        )
    }

    /// A table read back from [`to_bytes`](Self::to_bytes), rebuilt with the same scheme
    /// and settings. Anything but an intact table of this family and value type is a
    /// [`TableError::Blob`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, TableError> {
        let d = blob::decode::<A, V>(bytes)?;
        let ids = d
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), NextHop::new(i as u32 + 1).expect("checked")))
            .collect();
        Self::assemble(d.rib, ids, d.values, &d.scheme, &d.options)
    }
}

/// One thread's lookup handle on a [`RouteTable`] ([`RouteTable::reader`]): `Send`, not
/// `Sync`; lookups take no lock at all.
pub struct TableReader<'t, A: Address, V: TableValue> {
    table: &'t RouteTable<A, V>,
    handle: Box<dyn LookupHandle<A>>,
}

impl<A: Address, V: TableValue> fmt::Debug for TableReader<'_, A, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableReader")
            .field("table", self.table)
            .finish_non_exhaustive()
    }
}

impl<'t, A: Address, V: TableValue> TableReader<'t, A, V> {
    /// As [`RouteTable::lookup_ids`].
    pub fn lookup_ids(&mut self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        self.handle.lookup_batch(addrs, &mut out[..addrs.len()]);
    }

    /// As [`RouteTable::lookup`].
    pub fn lookup(&mut self, addr: A) -> Option<&'t V> {
        let mut id = [0u32];
        self.handle.lookup_batch(&[addr], &mut id);
        self.table.value(id[0])
    }

    /// Says this thread is idle (until its next lookup it holds back no reclamation).
    pub fn offline(&mut self) {
        self.handle.offline();
    }
}

fn intern<V: TableValue>(ids: &mut HashMap<V, NextHop>, values: &mut Vec<V>, v: V) -> NextHop {
    if let Some(&id) = ids.get(&v) {
        return id;
    }
    let id = NextHop::new(values.len() as u32 + 1).expect("fewer than 2^32 - 1 values");
    values.push(v.clone());
    ids.insert(v, id);
    id
}

#[cfg(test)]
mod tests;

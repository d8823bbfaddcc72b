//! The traits every lookup scheme implements, and the types they share.
//!
//! A scheme is built from a [`Rib`] (`Scheme::build(&rib, config)`), then answers lookups
//! through [`Fib`]: one key at a time with [`Fib::lookup`], or many with
//! [`Fib::lookup_batch`], the fast path where SIMD, prefetching and interleaving live. The
//! two always agree. Schemes that can follow route changes in place also implement
//! [`IncrementalFib`]; the others are rebuilt and republished (see [`crate::sync`]).
//!
//! Generic code (the CLI, the tests, the benchmarks) works over `dyn Fib<A>` obtained from
//! the [`registry`](crate::registry), so adding a scheme adds a module and a registry row.

use core::fmt;
use core::str::FromStr;

use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::rib::Rib;

/// Which code path a scheme's lookups run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Implementation {
    /// Portable scalar code.
    Scalar,
    /// AVX2 kernels (x86-64, detected at run time).
    Avx2,
    /// AVX-512 kernels (x86-64 with AVX-512 F/BW/DQ/VL, detected at run time).
    Avx512,
    /// Scalar code compiled for the hardware `popcnt` instruction (x86-64, detected at
    /// run time).
    Popcnt,
}

impl Implementation {
    /// The path the lookups of a table with the SIMD kernels `k` run: AVX-512 if it holds
    /// that token, else AVX2 if it holds that one, else scalar code.
    pub(crate) fn of(k: crate::simd::Kernels) -> Implementation {
        match (k.avx512, k.avx2) {
            (Some(_), _) => Implementation::Avx512,
            (_, Some(_)) => Implementation::Avx2,
            _ => Implementation::Scalar,
        }
    }
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Implementation::Scalar => "scalar",
            Implementation::Avx2 => "avx2",
            Implementation::Avx512 => "avx512",
            Implementation::Popcnt => "popcnt",
        })
    }
}

/// A longest-prefix-match lookup structure.
///
/// `lookup` and `lookup_batch` must return the same answer as [`Rib::lookup`] on the
/// `Rib` the structure was built from, for every address.
pub trait Fib<A: Address>: Send + Sync {
    /// The scheme's registry name (`"dir24-8"`, `"d18r"`, …).
    fn name(&self) -> &str;

    /// The next hop for one address.
    fn lookup(&self, addr: A) -> Option<NextHop>;

    /// Looks up every address of `addrs`, writing `out[i]` = the next-hop id of `addrs[i]`,
    /// or 0 if no route matches.
    ///
    /// # Panics
    /// If `out` is shorter than `addrs`.
    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        for (o, &a) in out.iter_mut().zip(addrs) {
            *o = NextHop::raw(self.lookup(a));
        }
    }

    /// Bytes of memory the lookup structure occupies (what lookups may touch).
    fn memory_bytes(&self) -> usize;

    /// Scheme-specific structure figures (node counts, layout, …): the rows `lpmkit info`
    /// prints.
    fn stats(&self) -> Stats {
        Stats::default()
    }

    /// How lookups of `keys` go through the structure (how many levels or search steps
    /// they take, which reads leave the cache, …), as shares of the keys: the diagnostics
    /// `lpmkit info` prints beside [`stats`](Self::stats). Costs one walk per key; none by
    /// default.
    fn profile(&self, keys: &[A]) -> Stats {
        let _ = keys;
        Stats::default()
    }

    /// The code path `lookup_batch` runs on.
    fn implementation(&self) -> Implementation {
        Implementation::Scalar
    }

    /// How [`implementation`](Self::implementation) was chosen, for a scheme with both
    /// AVX-512 and AVX2 kernels (measured on the table when the registry built it, see
    /// [`crate::simd::calibrate`]); `None` for a scheme with one path per CPU.
    fn kernel_choice(&self) -> Option<crate::simd::KernelChoice> {
        None
    }

    /// The table's kernels, for [`crate::simd::calibrate`] to switch between.
    #[doc(hidden)]
    fn kernels_mut(&mut self) -> Option<&mut crate::simd::Kernels> {
        None
    }

    /// A lookup of `key` that runs `stall` in the middle — after reading a switch word
    /// and before reading what it points to — as a reader descheduled inside a lookup
    /// does: for the concurrency tests of in-place schemes, where what the lookup reads
    /// after the stall must still be intact however many updates ran meanwhile. The
    /// default stalls first, then looks up.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        stall();
        NextHop::raw(self.lookup(key))
    }
}

/// [`crate::rib::Change`], where the `Rib` applies it (also reachable here, beside the
/// traits that take it).
#[doc(hidden)]
pub use crate::rib::Change;

/// What an incremental update did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateStats {
    /// Structure units (chunks, groups, subtrees) rebuilt.
    pub units_rebuilt: usize,
    /// True if the update fell back to rebuilding everything.
    pub full_rebuild: bool,
}

/// A scheme that follows route changes in place, rebuilding only what they touch.
pub trait IncrementalFib<A: Address>: Fib<A> {
    /// Brings the structure in line with `rib`, which already contains `changes`.
    ///
    /// Several changes may be passed at once; the scheme may coalesce the work they share.
    fn apply(&mut self, rib: &Rib<A>, changes: &[Change<A>]) -> Result<UpdateStats, BuildError>;
}

/// The writer side of a scheme that patches **one** instance in place while other threads
/// look it up; [`crate::sync::InPlace`] drives it.
///
/// A scheme splits into its [`Table`](Self::Table) — everything lookups read, shared with
/// the reader threads — and this writer, which owns the control state (free space,
/// counters, scratch) and is the only code that ever writes the table. A patch follows
/// the rules of `schemes::common::Arena`: every part it changes is rebuilt beside the live
/// one and made visible by one atomic store; every part it makes unreachable is handed to
/// `retire` instead of being reused, and comes back through [`reuse`](Self::reuse) once no
/// reader can still hold it. A lookup running during a patch therefore returns, for each
/// key, the answer of the table before or after it — never a third answer, never a read of
/// freed or reused memory.
///
/// That per-key guarantee holds for lookups that follow *one path* whose every step is
/// the old or the new version (a trie walk, a chunk and its range table). A lookup that
/// probes *independent* structures one after the other (every level's filter, then the
/// tables, then a direct array: the Bloom-filter schemes) can read one of them before a
/// patch and the next after it, and combine generations into an answer neither had. Such
/// a scheme sets [`VALIDATED_READS`](Self::VALIDATED_READS): its readers then check, per
/// batch, that no patch began while they looked up, and look up again if one did.
#[doc(hidden)]
pub trait InPlaceWriter<A: Address>: Send + Sync + Sized + 'static {
    /// What lookups read.
    type Table: Fib<A> + 'static;
    /// A piece of the table a patch made unreachable (a block of an arena).
    type Retired: Send + 'static;
    /// The scheme's configuration.
    type Config: Config;

    /// Builds the table and its writer from `rib`.
    fn build(rib: &Rib<A>, config: &Self::Config) -> Result<(Box<Self::Table>, Self), BuildError>;

    /// The configuration the table was built with.
    fn config(&self) -> &Self::Config;

    /// The scheme's structure figures, with what the writer knows (free space, update
    /// counters, build time); the table's own by default.
    fn stats(&self, table: &Self::Table) -> Stats {
        table.stats()
    }

    /// Bytes the scheme occupies (the table's, unless the writer keeps lookup memory the
    /// table does not count).
    fn memory_bytes(&self, table: &Self::Table) -> usize {
        table.memory_bytes()
    }

    /// True if a lookup must be validated against the generation counters (a seqlock-style
    /// read: [`crate::sync::InPlace`]'s type docs), because it reads several structures a
    /// patch changes independently. The table's lookups must then stay memory-safe and
    /// finish whatever mix of generations they read (every index they compute in bounds,
    /// every loop bounded), since a read that will be retried still runs to its end; and
    /// every word a patch changes under readers must be read atomically (no data race),
    /// as every switch word already is.
    const VALIDATED_READS: bool = false;

    /// Brings `table` in line with `rib`, which already holds `changes` (those that changed
    /// it), while readers may be looking `table` up. Parts made unreachable go to
    /// `retire`. The changes come in patch order (`fib::patch_order`): one per prefix,
    /// shortest prefix first, so that a part rebuilt from `rib` never pairs what a changed
    /// covering route gives it with what it held before (a state no generation had). When
    /// the table cannot be patched (a layout limit), the writer builds a new table from
    /// `rib` and returns it as [`Patched::Replaced`]: `table` is then left
    /// as it was and its retired parts are dropped with it.
    ///
    /// # Safety
    /// `table` must be the table this writer was built with (or the last replacement it
    /// returned), and no other thread may write it (the one-writer rule). Blocks handed to
    /// `retire` must not be given back through [`reuse`](Self::reuse) while a reader may
    /// still be reading them.
    unsafe fn patch(
        &mut self,
        table: &Self::Table,
        rib: &Rib<A>,
        changes: &[Change<A>],
        retire: &mut Vec<Self::Retired>,
    ) -> Result<Patched<Self::Table>, BuildError>;

    /// Called by [`crate::sync::InPlace`] before [`patch`](Self::patch), with the same
    /// arguments, *before the generation begins*: a writer that can tell, without a store
    /// into `table`, that the batch needs a new table builds it here and returns it as
    /// `Some(`[`Patched::Replaced`]`)` — readers keep reading `table` meanwhile (validated
    /// readers included: no patch is running), and the replacement is published by one
    /// pointer swap; `patch` is then not called. `Ok(None)`: `patch` follows (the writer
    /// may keep what it planned for it). A replacement returned as
    /// `Some(`[`Patched::InPlace`]`)` is not allowed. The default: `Ok(None)`.
    ///
    /// # Safety
    /// As [`patch`](Self::patch); nothing may be stored into `table`.
    unsafe fn prepare(
        &mut self,
        table: &Self::Table,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<Option<Patched<Self::Table>>, BuildError> {
        let _ = (table, rib, changes);
        Ok(None)
    }

    /// [`patch`](Self::patch) when no reader shares `table` (the scheme on one thread,
    /// [`IncrementalFib::apply`]): what the patch retires may be reused at once, and a
    /// replacement table is stored into `table`. The default patches and then reuses
    /// every retired part; a writer that can reuse as it goes overrides it.
    fn patch_alone(
        &mut self,
        table: &mut Box<Self::Table>,
        rib: &Rib<A>,
        changes: &[Change<A>],
    ) -> Result<UpdateStats, BuildError> {
        let mut retired = Vec::new();
        let changes = patch_order(changes);
        // SAFETY: `table` is this writer's (the caller keeps them together) and `&mut`
        // excludes every reader, so nothing retired can still be read.
        match unsafe { self.patch(table, rib, &changes, &mut retired) }? {
            Patched::InPlace(stats) => {
                for block in retired {
                    // SAFETY: as above.
                    unsafe { self.reuse(table, block) };
                }
                Ok(stats)
            }
            Patched::Replaced(new, stats) => {
                *table = new;
                Ok(stats)
            }
        }
    }

    /// Takes back a part retired by an earlier patch of `table`.
    ///
    /// # Safety
    /// As [`patch`](Self::patch); `block` came from a patch of this same `table`, and no
    /// reader can still be reading it (its grace period has passed).
    unsafe fn reuse(&mut self, table: &Self::Table, block: Self::Retired);
}

/// What [`InPlaceWriter::patch`] did.
#[derive(Debug)]
#[doc(hidden)]
pub enum Patched<T> {
    /// The table was patched in place.
    InPlace(UpdateStats),
    /// The table could not be patched; this one, built from the `Rib`, replaces it.
    Replaced(Box<T>, UpdateStats),
}

/// A batch of changes in the order an [`InPlaceWriter`] patches them: one per prefix
/// (the last; the `Rib` already holds the batch, so only the last says what a prefix
/// became), shortest prefix first.
///
/// A writer patches against the `Rib` *after* the batch. Taken in arrival order, a
/// withdrawn /48 could be patched (its chunk rebuilt from the `Rib`, with the value it
/// inherits from its /32 as the chunk last recorded it) before the /32 that changed in
/// the same batch: for a moment a key would answer the old /32's next hop although no
/// generation ever had that answer for it. Shortest first, every inherited value is
/// already the batch's when a longer change reads it.
pub(crate) fn patch_order<A: Address>(changes: &[Change<A>]) -> std::borrow::Cow<'_, [Change<A>]> {
    let key = |c: &Change<A>| (c.prefix().len(), c.prefix().addr());
    if changes.windows(2).all(|w| key(&w[0]) < key(&w[1])) {
        // Already in order (one change, say): nothing to copy.
        return std::borrow::Cow::Borrowed(changes);
    }
    let mut order: Vec<(usize, Change<A>)> = changes.iter().copied().enumerate().collect();
    // Shortest first; one prefix's changes together, the last one first.
    order.sort_unstable_by_key(|&(i, c)| {
        let p = c.prefix();
        (p.len(), p.addr(), core::cmp::Reverse(i))
    });
    order.dedup_by_key(|&mut (_, c)| c.prefix());
    std::borrow::Cow::Owned(order.into_iter().map(|(_, c)| c).collect())
}

/// Options every scheme understands at build time, and scheme settings by name.
///
/// ```
/// use lpmkit::BuildOptions;
/// let o = BuildOptions::default().with_settings("k=20, widen=false")?;
/// assert_eq!(o.setting("k"), Some("20"));
/// # Ok::<(), lpmkit::BuildError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BuildOptions {
    /// Use the scalar code path even if the CPU has SIMD support (the same as
    /// `isa: Some(Isa::Scalar)`).
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use
    /// ([`Isa`](crate::simd::Isa)): a table takes the best path the CPU has at or below
    /// it (AVX-512 → AVX2 → scalar). `None`: no cap, each scheme's default path — which for
    /// a few schemes is AVX2 on an AVX-512 CPU, and which the registry's builds measure
    /// against the other on the table ([`crate::simd::calibrate`]); `Some(_)` is never
    /// measured, and `Some(Isa::Avx512)` asks for every scheme's AVX-512 kernels. The
    /// environment can lower it further (`LPMKIT_FORCE_ISA`, `LPMKIT_FORCE_SCALAR`; see
    /// [`crate::simd`]).
    pub isa: Option<crate::simd::Isa>,
    /// Degree of SIMD parallelism (lanes looked up together) for schemes that have one,
    /// such as Spider's 1…16 ways; `None` takes the scheme's own default.
    pub ways: Option<usize>,
    /// Scheme settings (`key=value`), for what a registry preset does not fix: each scheme
    /// documents its keys (`lpmkit schemes` lists them), and an unknown key or a bad value
    /// is a [`BuildError::InvalidConfig`].
    pub settings: Vec<(String, String)>,
}

impl BuildOptions {
    /// Options with scalar code forced on or off.
    pub fn scalar(force_scalar: bool) -> Self {
        BuildOptions {
            force_scalar,
            ..Default::default()
        }
    }

    /// Adds settings written `key=value[,key=value…]` (later ones win).
    pub fn with_settings(mut self, text: &str) -> Result<Self, BuildError> {
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| BuildError::InvalidConfig {
                    scheme: "settings".into(),
                    reason: format!("{item:?} is not key=value"),
                })?;
            self.settings
                .push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(self)
    }

    /// The value of setting `key` (the last one given).
    pub fn setting(&self, key: &str) -> Option<&str> {
        self.settings
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A scheme's configuration, readable from `key=value` settings.
///
/// The settings are what `--set KEY=VALUE` passes on the command line and what a
/// registry preset fixes (`d18r` is DXR with `k=18`). An unknown key, or a value out of
/// range, is a [`BuildError::InvalidConfig`] naming it.
pub trait Config: Clone + fmt::Debug + Send + Sync + 'static {
    /// The settings this configuration reads: `(key, what it means)`, as `lpmkit schemes`
    /// lists them.
    const SETTINGS: &'static [(&'static str, &'static str)];

    /// The configuration for family `A`: the defaults, overridden by `settings` (whose
    /// keys [`Settings::check`] has accepted).
    fn from_settings<A: Address>(settings: &Settings<'_>) -> Result<Self, BuildError>;
}

/// The configuration of a scheme that has no settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoConfig;

impl Config for NoConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[];

    fn from_settings<A: Address>(_: &Settings<'_>) -> Result<Self, BuildError> {
        Ok(NoConfig)
    }
}

/// Build options and `key=value` settings, read on behalf of one scheme: typed values,
/// and errors that name the scheme, the key and the value.
#[derive(Clone, Copy, Debug)]
pub struct Settings<'a> {
    scheme: &'a str,
    options: &'a BuildOptions,
}

impl<'a> Settings<'a> {
    /// `options` read for the scheme named `scheme` (the name errors carry).
    pub fn new(scheme: &'a str, options: &'a BuildOptions) -> Self {
        Settings { scheme, options }
    }

    /// Checks that every setting given is one of `known` (a [`Config::SETTINGS`]).
    #[doc(hidden)]
    pub fn check(&self, known: &[(&str, &str)]) -> Result<(), BuildError> {
        for (k, _) in &self.options.settings {
            if !known.iter().any(|(n, _)| n == k) {
                let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
                return Err(self.error(format!(
                    "unknown setting {k:?} (it understands: {})",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )));
            }
        }
        Ok(())
    }

    /// The scheme these settings are read for.
    #[doc(hidden)]
    pub fn scheme(&self) -> &'a str {
        self.scheme
    }

    /// The options behind the settings.
    #[doc(hidden)]
    pub fn options(&self) -> &'a BuildOptions {
        self.options
    }

    /// True if scalar code is forced ([`BuildOptions::force_scalar`]).
    #[doc(hidden)]
    pub fn force_scalar(&self) -> bool {
        self.options.force_scalar
    }

    /// The instruction-set ceiling asked for: [`Isa::Scalar`](crate::simd::Isa::Scalar) when
    /// scalar code is forced, else [`BuildOptions::isa`] (`None`: no cap beyond what the
    /// environment sets).
    #[doc(hidden)]
    pub fn isa(&self) -> Option<crate::simd::Isa> {
        if self.options.force_scalar {
            Some(crate::simd::Isa::Scalar)
        } else {
            self.options.isa
        }
    }

    /// The SIMD degree of parallelism asked for ([`BuildOptions::ways`]).
    #[doc(hidden)]
    pub fn ways(&self) -> Option<usize> {
        self.options.ways
    }

    /// The raw value of `key` (the last one given).
    pub fn text(&self, key: &str) -> Option<&'a str> {
        self.options.setting(key)
    }

    /// The value of `key`, parsed; an unparsable value is an error.
    pub fn get<T: FromStr>(&self, key: &str) -> Result<Option<T>, BuildError> {
        match self.text(key) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| self.error(format!("setting {key}={v:?} is not a valid value"))),
        }
    }

    /// The value of `key` as an entry width (`16` or `32`).
    #[doc(hidden)]
    pub fn width(&self, key: &str) -> Result<Option<Width>, BuildError> {
        Ok(match self.get::<u32>(key)? {
            None => None,
            Some(16) => Some(Width::U16),
            Some(32) => Some(Width::U32),
            Some(v) => return Err(self.invalid(key, &v.to_string(), "a width (16 or 32)")),
        })
    }

    /// The error for `key=value`, which is not `what`.
    #[doc(hidden)]
    pub fn invalid(&self, key: &str, value: &str, what: &str) -> BuildError {
        self.error(format!("setting {key}={value:?} is not {what}"))
    }

    /// A configuration error of this scheme.
    #[doc(hidden)]
    pub fn error(&self, reason: String) -> BuildError {
        BuildError::InvalidConfig {
            scheme: self.scheme.to_string(),
            reason,
        }
    }
}

/// The width of a structure's entries (DIR-24-8's table entries, Poptrie's leaves, …):
/// configurations take `Option<Width>` to force one, and otherwise get the narrowest that
/// holds the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Width {
    /// 16-bit entries.
    U16,
    /// 32-bit entries.
    U32,
}

impl Width {
    /// Every width, narrowest first.
    pub const ALL: [Width; 2] = [Width::U16, Width::U32];

    /// Bits per entry.
    pub const fn bits(self) -> u32 {
        match self {
            Width::U16 => 16,
            Width::U32 => 32,
        }
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-bit", self.bits())
    }
}

/// Why a scheme could not be built: always names the limit and the value that broke it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// A next-hop id is larger than the layout can store.
    NextHopOverflow {
        /// The scheme.
        scheme: String,
        /// The largest id the layout holds.
        max: u64,
        /// The id that was asked for.
        requested: u64,
    },
    /// A structure outgrew a capacity of the layout.
    CapacityExceeded {
        /// The scheme.
        scheme: String,
        /// What overflowed (`"tbl8 groups"`, `"range table entries"`, …).
        what: &'static str,
        /// The limit.
        max: u64,
        /// What the table needed.
        requested: u64,
    },
    /// The scheme does not handle this address family.
    UnsupportedFamily {
        /// The scheme.
        scheme: String,
        /// The family asked for.
        family: crate::Family,
    },
    /// A configuration value is out of range.
    InvalidConfig {
        /// The scheme.
        scheme: String,
        /// What is wrong.
        reason: String,
    },
    /// The build panicked (a bug): the writer caught it and kept the last table.
    Panicked {
        /// The panic's message.
        message: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::NextHopOverflow {
                scheme,
                max,
                requested,
            } => write!(
                f,
                "{scheme}: next-hop id {requested} exceeds the layout's maximum of {max}"
            ),
            BuildError::CapacityExceeded {
                scheme,
                what,
                max,
                requested,
            } => write!(
                f,
                "{scheme}: the table needs {requested} {what}, more than the maximum of {max}"
            ),
            BuildError::UnsupportedFamily { scheme, family } => {
                write!(f, "{scheme} does not support {family}")
            }
            BuildError::InvalidConfig { scheme, reason } => write!(f, "{scheme}: {reason}"),
            BuildError::Panicked { message } => write!(f, "the build panicked: {message}"),
        }
    }
}

impl std::error::Error for BuildError {}

/// The largest next-hop id in `rib` (0 if empty).
#[doc(hidden)]
pub fn max_next_hop<A: Address>(rib: &Rib<A>) -> u32 {
    rib.iter().map(|(_, nh)| nh.get()).max().unwrap_or(0)
}

/// A value in a scheme's [`Stats`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StatValue {
    /// A count of things.
    Count(u64),
    /// A size in bytes.
    Bytes(u64),
    /// A duration in milliseconds.
    Millis(f64),
    /// A fraction or average.
    Ratio(f64),
    /// Free text (a layout name, …).
    Text(String),
}

impl fmt::Display for StatValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatValue::Count(v) => write!(f, "{v}"),
            StatValue::Bytes(v) => write!(f, "{v} B"),
            StatValue::Millis(v) => write!(f, "{v:.1} ms"),
            StatValue::Ratio(v) => write!(f, "{v:.4}"),
            StatValue::Text(s) => f.write_str(s),
        }
    }
}

impl StatValue {
    /// The value as a number (bytes in bytes, durations in milliseconds); `None` for text.
    ///
    /// ```
    /// use lpmkit::StatValue;
    /// assert_eq!(StatValue::Bytes(4096).as_f64(), Some(4096.0));
    /// assert_eq!(StatValue::Text("avx2".into()).as_f64(), None);
    /// ```
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            StatValue::Count(v) | StatValue::Bytes(v) => Some(v as f64),
            StatValue::Millis(v) | StatValue::Ratio(v) => Some(v),
            StatValue::Text(_) => None,
        }
    }
}

/// Named structure figures of a scheme, in a stable order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    entries: Vec<(String, StatValue)>,
}

impl Stats {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a figure; returns `self` for chaining.
    #[doc(hidden)]
    pub fn with(mut self, key: impl Into<String>, value: StatValue) -> Self {
        self.push(key, value);
        self
    }

    /// Appends a figure.
    #[doc(hidden)]
    pub fn push(&mut self, key: impl Into<String>, value: StatValue) {
        self.entries.push((key.into(), value));
    }

    /// Appends a histogram as shares: `{key}.{i}` = `counts[i]` / the total, for every
    /// `i`, then `{key}_mean`, the mean of `i`. Returns `self` for chaining.
    ///
    /// ```
    /// use lpmkit::{StatValue, Stats};
    /// let s = Stats::new().with_shares("depth", &[1, 3]);
    /// assert_eq!(s.get("depth.1"), Some(&StatValue::Ratio(0.75)));
    /// assert_eq!(s.get("depth_mean"), Some(&StatValue::Ratio(0.75)));
    /// ```
    #[doc(hidden)]
    pub fn with_shares(mut self, key: &str, counts: &[u64]) -> Self {
        let total = counts.iter().sum::<u64>().max(1) as f64;
        let mut mean = 0.0;
        for (i, &c) in counts.iter().enumerate() {
            self.push(format!("{key}.{i}"), StatValue::Ratio(c as f64 / total));
            mean += i as f64 * c as f64 / total;
        }
        self.with(format!("{key}_mean"), StatValue::Ratio(mean))
    }

    /// The figure named `key`.
    pub fn get(&self, key: &str) -> Option<&StatValue> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// All figures in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &StatValue)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// True if there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.entries.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        Ok(())
    }
}

/// The reference trie answers lookups too: it is the `trie` scheme, the baseline every
/// other scheme is measured against.
impl<A: Address> Fib<A> for Rib<A> {
    fn name(&self) -> &str {
        "trie"
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        Rib::lookup(self, addr)
    }

    fn memory_bytes(&self) -> usize {
        Rib::memory_bytes(self)
    }

    fn stats(&self) -> Stats {
        Stats::new().with("routes", StatValue::Count(self.len() as u64))
    }
}

/// A boxed scheme is a scheme: registry-built tables (`Box<dyn Fib<A>>`) go wherever a
/// `Fib` is expected, such as a [`Publisher`](crate::sync::Publisher).
impl<A: Address, F: Fib<A> + ?Sized> Fib<A> for Box<F> {
    fn name(&self) -> &str {
        (**self).name()
    }
    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        (**self).lookup(addr)
    }
    #[inline]
    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        (**self).lookup_batch(addrs, out)
    }
    fn memory_bytes(&self) -> usize {
        (**self).memory_bytes()
    }
    fn stats(&self) -> Stats {
        (**self).stats()
    }
    fn profile(&self, keys: &[A]) -> Stats {
        (**self).profile(keys)
    }
    fn implementation(&self) -> Implementation {
        (**self).implementation()
    }
    fn kernel_choice(&self) -> Option<crate::simd::KernelChoice> {
        (**self).kernel_choice()
    }
    fn kernels_mut(&mut self) -> Option<&mut crate::simd::Kernels> {
        (**self).kernels_mut()
    }
    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        (**self).stalled_lookup(key, stall)
    }
}

/// A boxed incremental scheme is an incremental scheme (for registry-built tables).
impl<A: Address, F: IncrementalFib<A> + ?Sized> IncrementalFib<A> for Box<F> {
    fn apply(&mut self, rib: &Rib<A>, changes: &[Change<A>]) -> Result<UpdateStats, BuildError> {
        (**self).apply(rib, changes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_typed() {
        let o = BuildOptions::default()
            .with_settings("k=20, width=16, bad=x")
            .unwrap();
        let s = Settings::new("d20r", &o);
        assert_eq!(s.get::<u8>("k").unwrap(), Some(20));
        assert_eq!(s.width("width").unwrap(), Some(Width::U16));
        assert_eq!(s.get::<u8>("absent").unwrap(), None);
        let err = s.get::<u8>("bad").unwrap_err().to_string();
        assert!(err.contains("d20r") && err.contains("bad=\"x\""), "{err}");
        let err = s
            .check(&[("k", ""), ("width", "")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown setting \"bad\""), "{err}");
        assert!(err.contains("k, width"), "{err}");
        let o = BuildOptions::default().with_settings("width=8").unwrap();
        let err = Settings::new("x", &o).width("width").unwrap_err();
        assert!(err.to_string().contains("16 or 32"), "{err}");
    }
}

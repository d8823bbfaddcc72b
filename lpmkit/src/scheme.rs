//! The scheme contract: what every lookup scheme implements once.
//!
//! A scheme is a type that implements [`Scheme`]: a configuration ([`Scheme::Config`],
//! read from `key=value` settings by [`Config::from_settings`], with its defaults and
//! checks), a build from a [`Rib`], the lookups of [`Fib`] (with [`Fib::stats`] and
//! [`Fib::profile`] as the diagnostics `lpmkit info` prints), and the update models it
//! offers. Everything generic is written once over this contract: the registry's builders
//! (`registry`), the choice of update model ([`crate::registry::SchemeInfo::updater`]), the
//! in-place owner below.
//!
//! Schemes come in two kinds:
//!
//! * **Rebuilt** schemes (DIR-24-8, Spider, the trie, DPDK's FIB) implement [`Scheme`]
//!   directly. They follow route changes by a rebuild published with one pointer swap
//!   ([`crate::sync::Publisher`]).
//! * **Incremental** schemes (DXR, Poptrie, Luleå, SAIL, OBMA, the Bloom-filter schemes,
//!   MIHT) are a lookup table plus an [`InPlaceWriter`] that patches it. They implement
//!   the writer (which builds both) and are used as [`Patchable`]: the table and its writer
//!   kept together, which is a [`Scheme`], an [`IncrementalFib`] on one thread, and, moved
//!   into [`crate::sync::InPlace`], one instance patched while other threads look it up.
//!
//! ```
//! use lpmkit::schemes::dxr::{Dxr, DxrConfig};
//! use lpmkit::{BuildOptions, Config, Fib, Ipv4, NextHop, Rib, Scheme, Settings};
//!
//! let mut rib = Rib::<Ipv4>::new();
//! rib.insert("10.0.0.0/8".parse()?, NextHop::new(1).unwrap());
//! // A configuration from settings, as `--set k=20` gives them ...
//! let options = BuildOptions::default().with_settings("k=20")?;
//! let config = DxrConfig::from_settings::<Ipv4>(&Settings::new("d20r", &options))?;
//! // ... and the scheme built through the contract.
//! let fib = <Dxr as Scheme<Ipv4>>::build(&rib, &config)?;
//! assert_eq!(fib.name(), "d20r");
//! assert_eq!(fib.lookup(0x0a01_0203), NextHop::new(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use core::fmt;
use core::marker::PhantomData;

use crate::fib::{
    BuildError, Change, Config, Fib, Implementation, InPlaceWriter, IncrementalFib, NoConfig,
    Stats, UpdateStats,
};
use crate::nexthop::NextHop;
use crate::prefix::Address;
use crate::rib::Rib;
use crate::sync::{InPlace, IntoInPlace, Updater};

/// A lookup scheme: built from a [`Rib`] with its [`Config`], looked up through [`Fib`].
///
/// The registry builds every scheme through this trait; a concrete type's own `build`
/// (`Dxr::build`, `Spider::build`, …) is the same function.
pub trait Scheme<A: Address>: Fib<A> + Sized + 'static {
    /// The scheme's configuration.
    type Config: Config;

    /// True if a built table patches itself (one instance, in place, while readers look
    /// it up): [`into_in_place`](Self::into_in_place) and
    /// [`into_incremental`](Self::into_incremental) then return `Some`.
    const IN_PLACE: bool = false;

    /// Builds the structure from `rib`.
    fn build(rib: &Rib<A>, config: &Self::Config) -> Result<Self, BuildError>;

    /// This table, built from `rib`, as a one-instance in-place updater that takes over
    /// `rib`; `None` for a scheme that is rebuilt instead.
    fn into_in_place(self, rib: Rib<A>) -> Option<Box<dyn Updater<A>>> {
        let _ = rib;
        None
    }

    /// This table as an [`IncrementalFib`] (patched on one thread, or through
    /// [`crate::sync::TwinUpdater`]); `None` for a scheme that is rebuilt instead.
    fn into_incremental(self) -> Option<Box<dyn IncrementalFib<A>>> {
        None
    }
}

/// An incremental scheme as built: its lookup table and the [`InPlaceWriter`] that patches
/// it, kept together.
///
/// `Dxr`, `Poptrie`, `Lulea`, `SailL`, `SailBitmap`, `Obma`, `Bloom` and `Miht` are this
/// type with their writer. It answers lookups ([`Fib`]), follows changes on one thread
/// ([`IncrementalFib`]: patch, then reuse what was replaced at once, since no other thread
/// reads it), and moves into [`InPlace`] for updates while other threads look up.
pub struct Patchable<A: Address, W: InPlaceWriter<A>> {
    table: Box<W::Table>,
    writer: W,
    _family: PhantomData<fn(A)>,
}

impl<A: Address, W: InPlaceWriter<A>> Patchable<A, W> {
    /// Builds the table and its writer from `rib`.
    pub fn build(rib: &Rib<A>, config: &W::Config) -> Result<Self, BuildError> {
        let (table, writer) = W::build(rib, config)?;
        Ok(Self::from_parts(table, writer))
    }

    /// A table and the writer built with it.
    #[doc(hidden)]
    pub fn from_parts(table: Box<W::Table>, writer: W) -> Self {
        Patchable {
            table,
            writer,
            _family: PhantomData,
        }
    }

    /// The table and its writer, apart.
    #[doc(hidden)]
    pub fn into_parts(self) -> (Box<W::Table>, W) {
        (self.table, self.writer)
    }

    /// The lookup table (what readers read).
    #[doc(hidden)]
    pub fn table(&self) -> &W::Table {
        &self.table
    }

    /// The writer side (configuration, free space, counters).
    #[doc(hidden)]
    pub fn writer(&self) -> &W {
        &self.writer
    }

    /// The configuration the scheme was built with.
    pub fn config(&self) -> &W::Config {
        self.writer.config()
    }

    /// The table and its writer, for the scheme's own single-threaded operations.
    pub(crate) fn parts_mut(&mut self) -> (&mut Box<W::Table>, &mut W) {
        (&mut self.table, &mut self.writer)
    }
}

impl<A: Address, W: InPlaceWriter<A> + fmt::Debug> fmt::Debug for Patchable<A, W>
where
    W::Table: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Patchable")
            .field("table", &self.table)
            .field("writer", &self.writer)
            .finish()
    }
}

impl<A: Address, W: InPlaceWriter<A>> Fib<A> for Patchable<A, W> {
    fn name(&self) -> &str {
        self.table.name()
    }

    #[inline]
    fn lookup(&self, addr: A) -> Option<NextHop> {
        self.table.lookup(addr)
    }

    #[inline]
    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        self.table.lookup_batch(addrs, out)
    }

    fn memory_bytes(&self) -> usize {
        self.writer.memory_bytes(&self.table)
    }

    fn stats(&self) -> Stats {
        self.writer.stats(&self.table)
    }

    fn profile(&self, keys: &[A]) -> Stats {
        self.table.profile(keys)
    }

    fn implementation(&self) -> Implementation {
        self.table.implementation()
    }

    fn kernel_choice(&self) -> Option<crate::simd::KernelChoice> {
        self.table.kernel_choice()
    }

    fn kernels_mut(&mut self) -> Option<&mut crate::simd::Kernels> {
        self.table.kernels_mut()
    }

    #[cfg(any(test, feature = "test-hooks"))]
    fn stalled_lookup(&self, key: A, stall: &mut dyn FnMut()) -> u32 {
        self.table.stalled_lookup(key, stall)
    }
}

impl<A: Address, W: InPlaceWriter<A>> IncrementalFib<A> for Patchable<A, W> {
    /// Patches the table for `changes` (which `rib` already holds) and reuses what the
    /// patch replaced at once. On an error (a table no layout can hold) the structure no
    /// longer matches `rib`: build it again with a wider configuration.
    fn apply(&mut self, rib: &Rib<A>, changes: &[Change<A>]) -> Result<UpdateStats, BuildError> {
        self.writer.patch_alone(&mut self.table, rib, changes)
    }
}

impl<A: Address, W: InPlaceWriter<A>> IntoInPlace<A> for Patchable<A, W> {
    type Writer = W;
    fn into_parts(self) -> (Box<W::Table>, W) {
        Patchable::into_parts(self)
    }
}

impl<A: Address, W: InPlaceWriter<A>> Scheme<A> for Patchable<A, W> {
    type Config = W::Config;
    const IN_PLACE: bool = true;

    fn build(rib: &Rib<A>, config: &W::Config) -> Result<Self, BuildError> {
        Patchable::build(rib, config)
    }

    fn into_in_place(self, rib: Rib<A>) -> Option<Box<dyn Updater<A>>> {
        Some(Box::new(InPlace::new(rib, self)))
    }

    fn into_incremental(self) -> Option<Box<dyn IncrementalFib<A>>> {
        Some(Box::new(self))
    }
}

/// The reference trie is the `trie` scheme.
impl<A: Address> Scheme<A> for Rib<A> {
    type Config = NoConfig;

    fn build(rib: &Rib<A>, _: &NoConfig) -> Result<Self, BuildError> {
        Ok(rib.clone())
    }
}

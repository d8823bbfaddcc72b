//! DIR-24-8 (IPv4): a 2^24-entry first table indexed by the top 24 address bits, plus
//! 256-entry second-level groups for the /24 blocks that hold longer prefixes.
//!
//! The scheme of P. Gupta, S. Lin and N. McKeown, "Routing lookups in hardware at memory
//! access speeds" (INFOCOM 1998, §3 "DIR-24-8-BASIC"), the baseline of the Spider (§V-D)
//! and DXR (§4) papers, and the layout of DPDK's `rte_fib` `dir24_8` (and `rte_lpm`).
//!
//! * **Entries.** Every entry is `value << 1 | extended`. In the first table (`tbl24`) an
//!   entry with `extended = 0` holds the next-hop id of the whole /24 block; with
//!   `extended = 1` it holds the index of a 256-entry group in `tbl8`, which holds the next
//!   hop of each address of the block (`tbl8` entries are never extended). Id 0 is "no
//!   route". A lookup is one memory access, or two for addresses in a /24 block that holds
//!   a longer prefix.
//! * **Width.** Entries are 16 bits (15-bit next hops and group indices, as DPDK's
//!   `RTE_FIB_DIR24_8_2B`: a 32 MiB first table) when the table allows, else 32 bits
//!   (31-bit next hops, at most 2^23 groups so gather offsets fit: a 64 MiB first table).
//!   The choice is automatic; [`Dir24_8Config::entry_width`] forces one, and a table that
//!   does not fit the forced width is a [`BuildError`], never truncated.
//! * **Groups** are allocated as the table needs them: no up-front group count (unlike
//!   DPDK's `number_tbl8s`).
//! * **Build** runs over [`Rib::for_each_range`]: a range that covers whole /24 blocks
//!   fills first-table entries, a range boundary inside a block gives that block a group.
//!   Adjacent prefixes with one next hop merge, so a more-specific route that does not
//!   change the answer costs no group.
//! * **Lookups.** [`Fib::lookup_batch`] works on blocks of `BATCH` keys. The scalar path
//!   prefetches every first-table entry of the block, then every group line it needs, then
//!   resolves (three passes, so the out-of-order core overlaps up to `BATCH` cache misses,
//!   like DPDK's `dir24_8_lookup_bulk`). With AVX2 the first-table probe of eight keys is
//!   one `vpgatherdd`, with AVX-512 of sixteen (as DPDK's `dir24_8_avx512.c`), the extended
//!   lanes a mask that masks the gather into the groups; the gathers overlap the misses
//!   themselves, so these kernels have no prefetch pass (it cost them 15-18 %).
//!
//! DIR-24-8 is a batch-rebuild scheme: route changes go to the `Rib` and a new table is
//! built and published (see [`crate::sync`]).

mod build;
mod scalar;
mod v6;

#[cfg(target_arch = "x86_64")]
mod kernel;

pub use v6::Dir24_8V6;

use crate::fib::{BuildError, Config, Fib, Implementation, Settings, StatValue, Stats};
use crate::mem::TableBuf;
use crate::nexthop::NextHop;
use crate::prefix::{Address, Ipv4};
use crate::rib::Rib;
use crate::scheme::Scheme;
use crate::schemes::common::{with_width, ByWidth, Width, Word};
use crate::simd::Kernels;

/// Keys per block in `lookup_batch`: the number of first-table misses kept in flight.
pub(crate) const BATCH: usize = 32;

/// Whether a table runs the AVX-512 instance of the kernel by default; else the AVX2 one,
/// and the AVX-512 one only when asked for (`isa: Some(Isa::Avx512)`). The faster of the
/// two where they were measured (`docs/simd.md`).
/// A table the registry builds where both run is measured instead ([`crate::simd::calibrate`]).
const AVX512_BY_DEFAULT: bool = false;

/// Build options for [`Dir24_8`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dir24_8Config {
    /// Force an entry width instead of choosing the narrowest that fits.
    ///
    /// ```
    /// use lpmkit::schemes::{dir24_8::Dir24_8Config, Width};
    /// let cfg = Dir24_8Config { entry_width: Some(Width::U32), ..Default::default() };
    /// # let _ = cfg;
    /// ```
    pub entry_width: Option<Width>,
    /// Use the scalar lookup path even if the CPU has AVX2.
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: the best the CPU has);
    /// see [`crate::simd::Isa`].
    pub isa: Option<crate::simd::Isa>,
}

impl Config for Dir24_8Config {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[(
        "width",
        "entry width, 16 or 32 (default: the narrowest that holds the table)",
    )];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        Ok(Dir24_8Config {
            entry_width: s.width("width")?,
            force_scalar: s.force_scalar(),
            isa: s.isa(),
        })
    }
}

impl Scheme<Ipv4> for Dir24_8 {
    type Config = Dir24_8Config;

    fn build(rib: &Rib<Ipv4>, config: &Dir24_8Config) -> Result<Self, BuildError> {
        Dir24_8::build(rib, config)
    }
}

/// Number of first-table entries.
const TBL24_LEN: usize = 1 << 24;
/// Entries of padding after `tbl24` and `tbl8`, so a 32-bit gather of a 16-bit entry at
/// the last index stays inside the allocation.
const PAD: usize = 2;

/// The two tables of one entry width.
pub(crate) struct Tables<E: Word> {
    /// `TBL24_LEN + PAD` entries (huge-page backed, as DPDK's tables are).
    tbl24: TableBuf<E>,
    /// `groups * 256 + PAD` entries.
    tbl8: TableBuf<E>,
}

impl<E: Word> Tables<E> {
    fn bytes(&self) -> usize {
        (self.tbl24.len() + self.tbl8.len()) * core::mem::size_of::<E>()
    }
}

/// The DIR-24-8 lookup table for IPv4.
pub struct Dir24_8 {
    layout: ByWidth<Tables<u16>, Tables<u32>>,
    kernels: Kernels,
    groups: usize,
    direct_entries: usize,
    build_ms: f64,
}

impl core::fmt::Debug for Dir24_8 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Dir24_8")
            .field("entry_width", &self.entry_width())
            .field("groups", &self.groups)
            .field("bytes", &self.memory_bytes())
            .field("implementation", &self.implementation())
            .finish()
    }
}

impl Dir24_8 {
    /// Builds the table from `rib`.
    pub fn build(rib: &Rib<Ipv4>, config: &Dir24_8Config) -> Result<Self, BuildError> {
        build::build(rib, config)
    }

    #[doc(hidden)]
    /// The entry width chosen.
    pub fn entry_width(&self) -> Width {
        self.layout.width()
    }

    #[doc(hidden)]
    /// Number of 256-entry groups in the second table.
    pub fn groups(&self) -> usize {
        self.groups
    }
}

impl Fib<Ipv4> for Dir24_8 {
    fn name(&self) -> &str {
        "dir24-8"
    }

    #[inline]
    fn lookup(&self, addr: Ipv4) -> Option<NextHop> {
        NextHop::new(with_width!(&self.layout, t => t.resolve(addr)))
    }

    fn lookup_batch(&self, addrs: &[Ipv4], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = self.kernels.avx512 {
            with_width!(&self.layout, t => kernel::avx512(token, t, addrs, out));
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if let Some(token) = self.kernels.avx2 {
            with_width!(&self.layout, t => kernel::avx2(token, t, addrs, out));
            return;
        }
        with_width!(&self.layout, t => t.lookup_batch_scalar(addrs, out))
    }

    fn memory_bytes(&self) -> usize {
        with_width!(&self.layout, t => t.bytes())
    }

    fn stats(&self) -> Stats {
        Stats::new()
            .with(
                "layout",
                StatValue::Text(format!("{} entries", self.entry_width())),
            )
            .with("tbl8_groups", StatValue::Count(self.groups as u64))
            .with(
                "tbl24_direct_share",
                StatValue::Ratio(self.direct_entries as f64 / TBL24_LEN as f64),
            )
            .with("build", StatValue::Millis(self.build_ms))
    }

    fn implementation(&self) -> Implementation {
        Implementation::of(self.kernels)
    }

    fn kernel_choice(&self) -> Option<crate::simd::KernelChoice> {
        Some(self.kernels.choice())
    }

    fn kernels_mut(&mut self) -> Option<&mut crate::simd::Kernels> {
        Some(&mut self.kernels)
    }
}

#[cfg(test)]
mod tests;

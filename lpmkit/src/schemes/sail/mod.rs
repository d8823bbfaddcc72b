//! SAIL: the splitting approach to IP lookup of T. Yang, G. Xie, Y. Li, Q. Fu, A. X. Liu,
//! Q. Li and L. Mathy, "Guarantee IP Lookup Performance with FIB Explosion", ACM SIGCOMM
//! 2014 — the SAIL baseline of the OBMA paper (§VII: Fig. 14, 16–20).
//!
//! This module follows its algorithms as the OBMA paper and public implementations
//! describe them: the authors' release notes (SAIL_L "speed oriented" on CPU, Lulea and
//! Tree Bitmap as comparisons), and M. I. Islam's GPL SAIL_L/SAIL_U ports for Linux and
//! for IPv6 (`tamimcse/Linux` `mypatches/sail*.patch1`, `tamimcse/CP-Trie`
//! `sail_l_ip6.c`, `sail_u_ip6.c`: per-level `C` (chunk ID) and `N` (next hop) arrays,
//! chunks of 256, leaf pushing to the pivot levels, level 16 always present), studied, not
//! copied. Section numbers below are the SAIL paper's as those sources cite them.
//!
//! # Variants (registry: `sail-b`, `sail-u`, `sail-l`, `sail-m`)
//!
//! * **SAIL_B** (§3, [`SailBitmap`] with [`SailBitmapConfig::sail_b`]): the two splits —
//!   finding the prefix length on bitmap arrays `B_0 … B_24` (2^i bits each, "on chip")
//!   and reading the next hop from next-hop arrays `N_0 … N_24` (2^i entries, "off chip");
//!   prefixes longer than 24 pivot-pushed into chunks below their /24, which hold the
//!   levels 25…32 and the /24's pushed next hop.
//! * **SAIL_U** (§4.2, [`SailBitmapConfig::sail_u`]): update-oriented; leaf pushing only to
//!   the pivot levels 16, 24 and 32, the bitmap arrays kept (`B_16`, `B_24`, and in each
//!   chunk `B_32`): a change rewrites at most `2^8` entries of one level.
//! * **SAIL_L** (§4.3, [`SailL`] with [`SailLConfig::sail_l`]): lookup-oriented; pivot
//!   pushing of every prefix to levels 16, 24, 32 with next hops and chunk IDs in one
//!   array per level (BCN16, then chunks of 256 at 24 and 32): at most three accesses,
//!   and most lookups end at level 16 or 24 (the two-level shortcut).
//! * **IPv6** ([`SailLConfig::sail_m`], registry `sail-m`): SAIL_L with pivot levels 16,
//!   24, …, 128 (every 8 bits after the first 16), as the public SAIL IPv6 port does. The
//!   issue names this form after SAIL_M; the SAIL paper's SAIL_M proper is its
//!   multi-FIB (virtual router) variant, which lpmkit does not build. `pivots=` in the
//!   registry settings chooses other pivot levels.
//!
//! # Deliberate differences
//!
//! * Next hops and chunk IDs share one entry (16 or 32 bits by the shared width rule):
//!   values below the next power of two above the largest next hop are next hops, the
//!   rest chunk IDs (`entry.rs`).
//! * SAIL_U's chunks use SAIL_B's chunk layout (512 entries in heap order, of which 257 are
//!   used) so both variants share one implementation.
//! * Updates run in place under concurrent readers ([`crate::sync::InPlace`]): entries are
//!   switch words stored atomically, new chunks are built beside the live ones, retired
//!   chunks are reused after a grace period; SAIL_B/SAIL_U fall back to a full rebuild
//!   for the one store order that cannot be made safe (see `bitmap.rs`).
//! * Lookups in batches interleave 16 keys level by level with prefetching. SAIL_L for
//!   IPv4 runs a three-stage software pipeline over blocks of 64 keys, on AVX2 with one
//!   `vpgatherdd` per level for eight keys (detected at run time; the scalar pipeline is
//!   its twin, `force_scalar`).

mod bitmap;
mod entry;
#[cfg(target_arch = "x86_64")]
mod kernel;
mod pivot;

use core::marker::PhantomData;
use std::time::Instant;

use crate::fib::{
    max_next_hop, BuildError, Change, Config, Fib, Implementation, InPlaceWriter, Patched,
    Settings, StatValue, Stats, UpdateStats,
};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Ipv4, Prefix};
use crate::rib::Rib;
use crate::scheme::Patchable;
use crate::schemes::common::{ms_since, narrowest_built, with_width, ByWidth, FreeSpace, Width};
use crate::simd::Kernels;
use bitmap::{BitmapPatch, BitmapState, Bitmaps, Rebuild, Shape};
use entry::{id_limit, lim_for};
use pivot::{Full, PivotPatch, Pivots, MAX_LEVELS};

/// Whether SAIL_L's IPv4 tables run the AVX-512 instance of the pipelined kernel by
/// default; else the AVX2 one, and the AVX-512 one only when asked for (`isa:
/// Some(Isa::Avx512)`). The faster of the two where they were measured (`docs/simd.md`).
/// A table the registry builds where both run is measured instead ([`crate::simd::calibrate`]).
const AVX512_BY_DEFAULT: bool = true;

/// Builds one form's arrays at the narrowest entry width that holds the table (16 bits,
/// then 32; [`narrowest_built`]), or at the one `forced`: `fill(width, lim, id_limit)`
/// builds them with the chunk-ID limit of the width, `Ok(None)` when its IDs run out.
fn narrowest<T>(
    name: &'static str,
    rib_max_next_hop: u32,
    forced: Option<Width>,
    mut fill: impl FnMut(Width, u32, u32) -> Result<Option<T>, BuildError>,
) -> Result<T, BuildError> {
    let lim = lim_for(rib_max_next_hop);
    narrowest_built(forced, &Width::ALL, |w| {
        let limit = id_limit(w, lim);
        if limit == 0 {
            return Ok(Err(BuildError::NextHopOverflow {
                scheme: name.into(),
                max: 32_767,
                requested: rib_max_next_hop as u64,
            }));
        }
        Ok(
            fill(w, lim, limit)?.ok_or_else(|| BuildError::CapacityExceeded {
                scheme: name.into(),
                what: "chunk IDs of one level (entry width)",
                max: limit as u64,
                requested: limit as u64 + 1,
            }),
        )
    })
}

/// The arrays did not fit the address space.
fn no_room(scheme: &str) -> BuildError {
    BuildError::CapacityExceeded {
        scheme: scheme.into(),
        what: "bytes of address space for the arrays",
        max: 0,
        requested: 0,
    }
}

/// The figures every SAIL writer reports first: bytes, bytes per prefix, entry width.
fn size_stats(bytes: usize, routes: usize, width: Width) -> Stats {
    Stats::new()
        .with("bytes", StatValue::Bytes(bytes as u64))
        .with(
            "bytes_per_prefix",
            StatValue::Ratio(bytes as f64 / routes.max(1) as f64),
        )
        .with("entry_width", StatValue::Text(format!("{width}")))
}

/// A patch that rebuilt the table (`t`) instead of changing it in place.
fn replaced<T>(t: T) -> Patched<T> {
    Patched::Replaced(
        Box::new(t),
        UpdateStats {
            units_rebuilt: 1,
            full_rebuild: true,
        },
    )
}

/// The [`Fib`] methods every SAIL table shares, over its `layout` (the arrays at the
/// entry width chosen) and `name`; `$A` is the key type.
macro_rules! fib_common {
    ($A:ty) => {
        /// A lookup that runs `stall` after reading its first entry (for the concurrency
        /// tests).
        #[cfg(any(test, feature = "test-hooks"))]
        fn stalled_lookup(&self, key: $A, stall: &mut dyn FnMut()) -> u32 {
            with_width!(&self.layout, t => t.lookup_stalled(key, stall))
        }
        fn name(&self) -> &str {
            self.name
        }
        #[inline]
        fn lookup(&self, addr: $A) -> Option<NextHop> {
            NextHop::new(with_width!(&self.layout, t => t.lookup_one(addr)))
        }
        fn memory_bytes(&self) -> usize {
            with_width!(&self.layout, t => t.bytes())
        }
    };
}

// --- SAIL_L and its IPv6 form -------------------------------------------------------

/// Build options for [`SailL`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SailLConfig {
    /// Pivot levels, ascending, the last the address width; strides of 1…16 bits.
    pub pivots: Vec<u8>,
    /// Force an entry width instead of the narrowest that holds the table.
    pub entry_width: Option<Width>,
    /// Run the scalar batch kernel even where AVX2 is available.
    pub force_scalar: bool,
    /// The highest instruction set the lookups may use (`None`: the best the CPU has);
    /// see [`crate::simd::Isa`].
    pub isa: Option<crate::simd::Isa>,
}

impl SailLConfig {
    /// SAIL_L for IPv4: pivot levels 16, 24, 32.
    pub fn sail_l() -> Self {
        SailLConfig {
            pivots: vec![16, 24, 32],
            entry_width: None,
            force_scalar: false,
            isa: None,
        }
    }

    /// The IPv6 form: pivot levels 16, 24, …, 128.
    pub fn sail_m() -> Self {
        SailLConfig {
            pivots: (2..=16).map(|i| i * 8).collect(),
            entry_width: None,
            force_scalar: false,
            isa: None,
        }
    }

    /// The default pivots for address family `A`.
    pub fn for_family<A: Address>() -> Self {
        if A::BITS == 32 {
            Self::sail_l()
        } else {
            Self::sail_m()
        }
    }

    fn validate<A: Address>(&self, name: &str) -> Result<(), BuildError> {
        let p = &self.pivots;
        let ok = !p.is_empty()
            && p.len() <= MAX_LEVELS
            && *p.last().unwrap() == A::BITS
            && (1..=24).contains(&p[0])
            && p.windows(2).all(|w| w[0] < w[1] && w[1] - w[0] <= 16);
        if ok {
            Ok(())
        } else {
            Err(BuildError::InvalidConfig {
                scheme: name.into(),
                reason: format!(
                    "pivots {p:?}: need ascending levels ending at {}, the first 1..=24, \
                     steps of at most 16, at most {MAX_LEVELS} levels",
                    A::BITS
                ),
            })
        }
    }
}

#[doc(hidden)]
/// What SAIL_L lookups read.
pub struct SailLTable<A: Address> {
    layout: ByWidth<Pivots<u16>, Pivots<u32>>,
    name: &'static str,
    /// IPv4 with pivots 16, 24, 32: the pipelined kernel.
    v4_fast: bool,
    /// The pipelined kernel's instances (`v4_fast` only).
    kernels: Kernels,
    _a: PhantomData<fn(A)>,
}

impl<A: Address> core::fmt::Debug for SailLTable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SailLTable")
            .field("name", &self.name)
            .field("entry_width", &self.layout.width())
            .finish()
    }
}

impl<A: Address> SailLTable<A> {
    /// The entry width in use.
    pub fn entry_width(&self) -> Width {
        self.layout.width()
    }
}

impl<A: Address> Fib<A> for SailLTable<A> {
    fib_common!(A);

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        with_width!(&self.layout, t => {
            if let Some(keys) = crate::prefix::v4_keys(addrs).filter(|_| self.v4_fast) {
                #[cfg(target_arch = "x86_64")]
                if let Some(token) = self.kernels.avx512 {
                    return kernel::avx512(token, t, keys, out);
                }
                #[cfg(target_arch = "x86_64")]
                if let Some(token) = self.kernels.avx2 {
                    return kernel::avx2(token, t, keys, out);
                }
                t.lookup_batch_v4(keys, out)
            } else {
                t.lookup_batch(addrs, out)
            }
        })
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

#[doc(hidden)]
/// The writer side of a [`SailLTable`].
#[derive(Debug)]
pub struct SailLWriter<A: Address> {
    config: SailLConfig,
    ids: Vec<FreeSpace>,
    id_limit: u32,
    lim: u32,
    build_ms: f64,
    routes: usize,
    updates: u64,
    chunks_built: u64,
    full_rebuilds: u64,
    _a: PhantomData<fn(A)>,
}

/// SAIL_L (IPv4) and its IPv6 form: table and writer.
pub type SailL<A> = Patchable<A, SailLWriter<A>>;

impl Config for SailLConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        (
            "pivots",
            "pivot levels, ':'-separated, ending at the address width (default 16:24:32; IPv6 16:24:...:128)",
        ),
        (
            "width",
            "entry width, 16 or 32 (default: the narrowest that holds the table)",
        ),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let mut cfg = SailLConfig::for_family::<A>();
        if let Some(p) = s.text("pivots") {
            cfg.pivots = p
                .split(':')
                .map(|x| x.trim().parse::<u8>())
                .collect::<Result<_, _>>()
                .map_err(|_| s.invalid("pivots", p, "a ':'-separated list of levels"))?;
        }
        cfg.entry_width = s.width("width")?;
        cfg.force_scalar = s.force_scalar();
        cfg.isa = s.isa();
        Ok(cfg)
    }
}

fn sail_l_name<A: Address>() -> &'static str {
    if A::BITS == 32 {
        "sail-l"
    } else {
        "sail-m"
    }
}

fn build_l<A: Address>(
    rib: &Rib<A>,
    config: &SailLConfig,
) -> Result<(SailLTable<A>, SailLWriter<A>), BuildError> {
    let t0 = Instant::now();
    let name = sail_l_name::<A>();
    config.validate::<A>(name)?;
    let max_nh = max_next_hop(rib);
    narrowest(name, max_nh, config.entry_width, |w, lim, limit| {
        let mut ids = vec![FreeSpace::new(0); config.pivots.len()];
        let mut retire = Vec::new();
        let built;
        macro_rules! fill {
            ($e:ty, $wrap:path) => {{
                let t =
                    Pivots::<$e>::new(&config.pivots, lim, limit).ok_or_else(|| no_room(name))?;
                let mut p = PivotPatch::<A, $e> {
                    t: &t,
                    ids: &mut ids,
                    id_limit: limit,
                    rib,
                    retire: &mut retire,
                    chunks_built: 0,
                };
                let r = p.fill_fresh(0, 0, &Prefix::DEFAULT);
                built = p.chunks_built;
                r.map(|()| $wrap(t))
            }};
        }
        let r = match w {
            Width::U16 => fill!(u16, ByWidth::U16),
            Width::U32 => fill!(u32, ByWidth::U32),
        };
        let Ok(layout) = r else { return Ok(None) };
        let v4_fast =
            A::BITS == 32 && core::mem::size_of::<A>() == 4 && config.pivots == [16, 24, 32];
        let table = SailLTable {
            layout,
            name,
            v4_fast,
            kernels: if v4_fast {
                Kernels::new(config.force_scalar, config.isa, AVX512_BY_DEFAULT)
            } else {
                Kernels::default()
            },
            _a: PhantomData,
        };
        let writer = SailLWriter {
            config: config.clone(),
            ids,
            id_limit: limit,
            lim,
            build_ms: ms_since(t0),
            routes: rib.len(),
            updates: 0,
            chunks_built: built,
            full_rebuilds: 0,
            _a: PhantomData,
        };
        Ok(Some((table, writer)))
    })
}

impl<A: Address> InPlaceWriter<A> for SailLWriter<A> {
    type Table = SailLTable<A>;
    type Retired = (u8, u32);
    type Config = SailLConfig;

    fn build(rib: &Rib<A>, config: &SailLConfig) -> Result<(Box<SailLTable<A>>, Self), BuildError> {
        let (table, writer) = build_l(rib, config)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &SailLConfig {
        &self.config
    }

    fn stats(&self, table: &SailLTable<A>) -> Stats {
        let w = self;
        let mut st = size_stats(table.memory_bytes(), w.routes, table.entry_width())
            .with("pivots", StatValue::Text(format!("{:?}", w.config.pivots)));
        for (l, &p) in w.config.pivots.iter().enumerate().skip(1) {
            st.push(
                format!("chunks_level{p}"),
                StatValue::Count(w.ids[l].used() as u64),
            );
        }
        st.push("build", StatValue::Millis(w.build_ms));
        st.push("updates", StatValue::Count(w.updates));
        st.push("chunks_built", StatValue::Count(w.chunks_built));
        st.push("full_rebuilds", StatValue::Count(w.full_rebuilds));
        st
    }

    unsafe fn patch(
        &mut self,
        table: &SailLTable<A>,
        rib: &Rib<A>,
        changes: &[Change<A>],
        retire: &mut Vec<(u8, u32)>,
    ) -> Result<Patched<SailLTable<A>>, BuildError> {
        self.updates += changes.len() as u64;
        self.routes = rib.len();
        let fits = changes.iter().all(|c| match c {
            Change::Announce(_, nh) => nh.get() < self.lim,
            Change::Withdraw(_) => true,
        });
        let before = self.chunks_built;
        let r = if fits {
            with_width!(&table.layout, t => {
                let mut p = PivotPatch {
                    t,
                    ids: &mut self.ids,
                    id_limit: self.id_limit,
                    rib,
                    retire: &mut *retire,
                    chunks_built: 0,
                };
                let mut r = Ok(());
                for c in changes {
                    r = p.sync(0, 0, &Prefix::DEFAULT, &c.prefix());
                    if r.is_err() {
                        break;
                    }
                }
                self.chunks_built += p.chunks_built;
                r
            })
        } else {
            Err(Full)
        };
        match r {
            Ok(()) => Ok(Patched::InPlace(UpdateStats {
                units_rebuilt: (self.chunks_built - before) as usize + changes.len(),
                full_rebuild: false,
            })),
            Err(Full) => {
                let (t, mut w) = build_l(rib, &self.config)?;
                w.updates = self.updates;
                w.chunks_built += self.chunks_built;
                w.full_rebuilds = self.full_rebuilds + 1;
                *self = w;
                Ok(replaced(t))
            }
        }
    }

    unsafe fn reuse(&mut self, table: &SailLTable<A>, (l, id): (u8, u32)) {
        self.ids[l as usize].free(id as usize, 1);
        with_width!(&table.layout, t => t.fill.chunks[l as usize]
            .store(self.ids[l as usize].used(), core::sync::atomic::Ordering::Relaxed));
    }
}

// --- SAIL_B and SAIL_U -----------------------------------------------------------------

/// Build options for [`SailBitmap`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SailBitmapConfig {
    /// SAIL_U (leaf pushing to the pivot levels 16, 24, 32) instead of SAIL_B.
    pub update_oriented: bool,
    /// Force an entry width instead of the narrowest that holds the table.
    pub entry_width: Option<Width>,
}

impl SailBitmapConfig {
    /// SAIL_B.
    pub fn sail_b() -> Self {
        SailBitmapConfig {
            update_oriented: false,
            entry_width: None,
        }
    }

    /// SAIL_U.
    pub fn sail_u() -> Self {
        SailBitmapConfig {
            update_oriented: true,
            entry_width: None,
        }
    }

    fn name(&self) -> &'static str {
        if self.update_oriented {
            "sail-u"
        } else {
            "sail-b"
        }
    }

    fn shape(&self) -> Shape {
        if self.update_oriented {
            Shape::update_oriented()
        } else {
            Shape::basic()
        }
    }
}

#[doc(hidden)]
/// What SAIL_B / SAIL_U lookups read.
pub struct SailBitmapTable {
    layout: ByWidth<Bitmaps<u16>, Bitmaps<u32>>,
    name: &'static str,
}

impl core::fmt::Debug for SailBitmapTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SailBitmapTable")
            .field("name", &self.name)
            .field("entry_width", &self.layout.width())
            .finish()
    }
}

impl Fib<Ipv4> for SailBitmapTable {
    fib_common!(Ipv4);

    fn lookup_batch(&self, addrs: &[Ipv4], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let out = &mut out[..addrs.len()];
        with_width!(&self.layout, t => t.lookup_batch(addrs, out))
    }
}

#[doc(hidden)]
/// The writer side of a [`SailBitmapTable`].
#[derive(Debug)]
pub struct SailBitmapWriter {
    config: SailBitmapConfig,
    state: BitmapState,
    build_ms: f64,
    routes: usize,
    updates: u64,
    entries_written: u64,
    full_rebuilds: u64,
    order_rebuilds: u64,
}

/// SAIL_B or SAIL_U (IPv4): table and writer.
pub type SailBitmap = Patchable<Ipv4, SailBitmapWriter>;

impl Config for SailBitmapConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[
        (
            "variant",
            "b (SAIL_B: bitmaps of every level 0..24) or u (SAIL_U: pivot levels 16/24/32 with bitmaps)",
        ),
        (
            "width",
            "entry width, 16 or 32 (default: the narrowest that holds the table)",
        ),
    ];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let update_oriented = match s.text("variant").unwrap_or("b") {
            "b" => false,
            "u" => true,
            v => return Err(s.invalid("variant", v, "b or u")),
        };
        Ok(SailBitmapConfig {
            update_oriented,
            entry_width: s.width("width")?,
        })
    }
}

fn build_bitmap(
    rib: &Rib<Ipv4>,
    config: &SailBitmapConfig,
) -> Result<(SailBitmapTable, SailBitmapWriter), BuildError> {
    let t0 = Instant::now();
    let name = config.name();
    narrowest(
        name,
        max_next_hop(rib),
        config.entry_width,
        |w, lim, limit| {
            let mut state = BitmapState {
                ids: FreeSpace::new(0),
                chunks: Default::default(),
                id_limit: limit,
                chunks_built: 0,
            };
            let mut retire = Vec::new();
            macro_rules! fill {
                ($e:ty, $wrap:path) => {{
                    let t = Bitmaps::<$e>::new(config.shape(), lim, limit)
                        .ok_or_else(|| no_room(name))?;
                    BitmapPatch {
                        t: &t,
                        s: &mut state,
                        rib,
                        retire: &mut retire,
                    }
                    .fill_all()
                    .map(|()| $wrap(t))
                }};
            }
            let r = match w {
                Width::U16 => fill!(u16, ByWidth::U16),
                Width::U32 => fill!(u32, ByWidth::U32),
            };
            let Ok(layout) = r else { return Ok(None) };
            Ok(Some((
                SailBitmapTable { layout, name },
                SailBitmapWriter {
                    config: config.clone(),
                    state,
                    build_ms: ms_since(t0),
                    routes: rib.len(),
                    updates: 0,
                    entries_written: 0,
                    full_rebuilds: 0,
                    order_rebuilds: 0,
                },
            )))
        },
    )
}

impl InPlaceWriter<Ipv4> for SailBitmapWriter {
    type Table = SailBitmapTable;
    type Retired = u32;
    type Config = SailBitmapConfig;

    fn build(
        rib: &Rib<Ipv4>,
        config: &SailBitmapConfig,
    ) -> Result<(Box<SailBitmapTable>, Self), BuildError> {
        let (table, writer) = build_bitmap(rib, config)?;
        Ok((Box::new(table), writer))
    }

    fn config(&self) -> &SailBitmapConfig {
        &self.config
    }

    fn stats(&self, table: &SailBitmapTable) -> Stats {
        let w = self;
        let mut st = size_stats(table.memory_bytes(), w.routes, table.layout.width());
        let (levels, ones) = with_width!(&table.layout, t => (t.shape.levels.clone(), t.ones()));
        let total: u64 = ones.iter().sum();
        st.push("bitmap_ones", StatValue::Count(total));
        for (l, o) in levels.iter().zip(ones) {
            if o > 0 || levels.len() <= 2 {
                st.push(format!("ones_level{l}"), StatValue::Count(o));
            }
        }
        st.push("chunks", StatValue::Count(w.state.ids.used() as u64));
        st.push("build", StatValue::Millis(w.build_ms));
        st.push("updates", StatValue::Count(w.updates));
        st.push("entries_written", StatValue::Count(w.entries_written));
        st.push("chunks_built", StatValue::Count(w.state.chunks_built));
        st.push("full_rebuilds", StatValue::Count(w.full_rebuilds));
        st.push("order_rebuilds", StatValue::Count(w.order_rebuilds));
        st
    }

    unsafe fn patch(
        &mut self,
        table: &SailBitmapTable,
        rib: &Rib<Ipv4>,
        changes: &[Change<Ipv4>],
        retire: &mut Vec<u32>,
    ) -> Result<Patched<SailBitmapTable>, BuildError> {
        self.updates += changes.len() as u64;
        self.routes = rib.len();
        let r = with_width!(&table.layout, t => BitmapPatch {
            t,
            s: &mut self.state,
            rib,
            retire: &mut *retire,
        }
        .apply(changes));
        match r {
            Ok(n) => {
                self.entries_written += n as u64;
                Ok(Patched::InPlace(UpdateStats {
                    units_rebuilt: n,
                    full_rebuild: false,
                }))
            }
            Err(why) => {
                let (t, mut w) = build_bitmap(rib, &self.config)?;
                w.updates = self.updates;
                w.entries_written = self.entries_written;
                w.full_rebuilds = self.full_rebuilds + 1;
                w.order_rebuilds = self.order_rebuilds + (why == Rebuild::Order) as u64;
                w.state.chunks_built += self.state.chunks_built;
                *self = w;
                Ok(replaced(t))
            }
        }
    }

    unsafe fn reuse(&mut self, table: &SailBitmapTable, id: u32) {
        self.state.ids.free(id as usize, 1);
        with_width!(&table.layout, t => t.fill.chunks
            .store(self.state.ids.used(), core::sync::atomic::Ordering::Relaxed));
    }
}

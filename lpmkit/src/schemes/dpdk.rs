//! DPDK's FIB libraries as lpmkit schemes, for measuring lpmkit against them in one process.
//!
//! With the `dpdk` feature (Linux, DPDK ≥ 22.11 installed: `apt install dpdk-dev` on Debian
//! 12), the registry gains `dpdk-fib`: `rte_fib` with its `DIR24_8` table for IPv4 and
//! `rte_fib6` with its `TRIE` table (a 24-bit first level, then 8-bit strides) for IPv6,
//! looked up through their bulk functions (`rte_fib_lookup_bulk`, `rte_fib6_lookup_bulk`).
//! These are the "DPDK `rte_fib`/`rte_fib6` bulk lookup" peers the Spider issue measures
//! against; built into lpmkit they run in the same process, on the same keys and in the same
//! alternated runs as every other scheme (`lpmkit bench -s dpdk-fib,spider16w …`), so a host
//! that is slower for a while slows both alike and their ratio holds.
//!
//! What is and is not DPDK's here:
//!
//! * The table and the lookup are DPDK's own code, from the installed shared libraries. The
//!   table is built by adding every route of the [`Rib`] with `rte_fib_add`/`rte_fib6_add`
//!   (default next hop 0 = no route; the smallest entries that hold the table's next hops
//!   and `tbl8` indices; as many `tbl8` groups as DPDK needs to accept every route: one per
//!   /24 with longer prefixes for IPv4, its per-route reservations for IPv6).
//! * `lookup_batch` hands DPDK slices of at most [`CHUNK`] keys and narrows its 64-bit next
//!   hops to lpmkit's 32-bit ids; IPv6 keys are first copied into DPDK's byte-array form
//!   (network order). Both are a few instructions per key, against DPDK's tens of
//!   nanoseconds, and a DPDK user pays the second anyway.
//! * DPDK needs its environment (EAL) initialised once per process. lpmkit does it at the
//!   first build, without huge pages or devices (`--no-huge --no-pci --no-shconf`, memory
//!   from `LPMKIT_DPDK_MEM_MB`, default 12288, reserved address space that DPDK
//!   touches as it uses it), and then restores the thread's CPU affinity,
//!   which `rte_eal_init` pins to one core (benchmark threads would otherwise share it).
//!   Initialisation takes a few seconds; its failure is a [`BuildError`].
//!
//! Each table runs one of DPDK's lookups, chosen with `rte_fib_select_lookup` /
//! `rte_fib6_select_lookup` ([`DpdkConfig::lookup`]):
//!
//! * `dpdk-fib` runs DPDK's scalar bulk lookups (`RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO`, what
//!   `RTE_FIB_LOOKUP_DEFAULT` picks under DPDK's default SIMD width, and
//!   `RTE_FIB6_LOOKUP_TRIE_SCALAR`); [`Fib::implementation`] says `scalar`.
//! * `dpdk-fib-avx512` (registered where the CPU has AVX-512) runs DPDK's AVX-512 vector
//!   lookups (`RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512`, `RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512`;
//!   Debian's `librte_fib` ships them). DPDK offers them only when the EAL's maximum SIMD
//!   width is 512 bits, which it is not by default, so the first such table raises it
//!   (`rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512)`, once per process; the scalar
//!   tables name their lookup explicitly and are not affected). A library without the
//!   vector lookups, or a CPU without AVX-512 F/DQ, is a [`BuildError`]; an ISA ceiling
//!   below AVX-512 (`BuildOptions::isa`, `LPMKIT_FORCE_ISA`) gives the scalar lookup.
//!
//! So one run shows both of DPDK's lookups on the same keys, and a ratio can be taken
//! against the faster one on each machine.

use core::ffi::{c_char, c_int, c_uint, c_void};
use core::mem::MaybeUninit;
use std::collections::HashSet;
use std::ffi::CString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::fib::{BuildError, Config, Fib, Settings, StatValue, Stats};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Ipv4, Ipv6};
use crate::rib::Rib;
use crate::scheme::Scheme;

/// Keys handed to one DPDK bulk call.
pub const CHUNK: usize = 256;

/// Registry name of the scheme.
const NAME: &str = "dpdk-fib";
/// Registry name of the scheme with DPDK's AVX-512 lookups.
const NAME_AVX512: &str = "dpdk-fib-avx512";

// `enum rte_fib_lookup_type` and `enum rte_fib6_lookup_type` (DPDK 22.11).
const RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO: c_int = 1;
const RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512: c_int = 4;
const RTE_FIB6_LOOKUP_TRIE_SCALAR: c_int = 1;
const RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512: c_int = 2;
/// `RTE_VECT_SIMD_512` of `enum rte_vect_max_simd`.
const RTE_VECT_SIMD_512: u16 = 512;

// `enum rte_fib_type`, `enum rte_fib6_type`: the table kinds (DPDK 22.11 `rte_fib.h`,
// `rte_fib6.h`).
const RTE_FIB_DIR24_8: c_int = 1;
const RTE_FIB6_TRIE: c_int = 1;
/// Entry sizes in bytes, as `enum rte_fib_dir24_8_nh_sz` (1, 2, 4, 8 bytes = 0…3) and
/// `enum rte_fib_trie_nh_sz` (2, 4, 8 bytes = 1…3) number them.
const ENTRY_BYTES: [usize; 4] = [1, 2, 4, 8];
/// The trie has no 1-byte entries.
const FIRST_TRIE_ENTRY: usize = 1;
/// Entries of the 24-bit first level of both tables, and of a `tbl8` group.
const TBL24_ENTRIES: usize = 1 << 24;
const TBL8_ENTRIES: usize = 256;

/// `struct rte_fib_conf` and `struct rte_fib6_conf` (the same layout: 32 bytes).
#[repr(C)]
struct FibConf {
    kind: c_int,
    default_nh: u64,
    max_routes: c_int,
    rib_ext_sz: c_uint,
    /// `dir24_8.nh_sz` / `trie.nh_sz`.
    nh_sz: c_int,
    /// `dir24_8.num_tbl8` / `trie.num_tbl8`.
    num_tbl8: u32,
}

const _: () = assert!(core::mem::size_of::<FibConf>() == 32);

#[link(name = "rte_eal")]
unsafe extern "C" {
    fn rte_eal_init(argc: c_int, argv: *mut *mut c_char) -> c_int;
    fn rte_vect_set_max_simd_bitwidth(bitwidth: u16) -> c_int;
    fn rte_vect_get_max_simd_bitwidth() -> u16;
}

#[link(name = "rte_fib")]
unsafe extern "C" {
    fn rte_fib_create(name: *const c_char, socket_id: c_int, conf: *mut FibConf) -> *mut c_void;
    fn rte_fib_free(fib: *mut c_void);
    fn rte_fib_select_lookup(fib: *mut c_void, kind: c_int) -> c_int;
    fn rte_fib6_select_lookup(fib: *mut c_void, kind: c_int) -> c_int;
    fn rte_fib_add(fib: *mut c_void, ip: u32, depth: u8, next_hop: u64) -> c_int;
    fn rte_fib_lookup_bulk(fib: *mut c_void, ips: *mut u32, next_hops: *mut u64, n: c_int)
        -> c_int;
    fn rte_fib6_create(name: *const c_char, socket_id: c_int, conf: *mut FibConf) -> *mut c_void;
    fn rte_fib6_free(fib: *mut c_void);
    fn rte_fib6_add(fib: *mut c_void, ip: *const [u8; 16], depth: u8, next_hop: u64) -> c_int;
    fn rte_fib6_lookup_bulk(
        fib: *mut c_void,
        ips: *mut [u8; 16],
        next_hops: *mut u64,
        n: c_int,
    ) -> c_int;
}

/// The EAL's memory in MiB: `LPMKIT_DPDK_MEM_MB`, else [`DEFAULT_MEM_MB`].
fn eal_mem_mb() -> String {
    std::env::var("LPMKIT_DPDK_MEM_MB").unwrap_or_else(|_| DEFAULT_MEM_MB.to_string())
}

/// The EAL's memory when `LPMKIT_DPDK_MEM_MB` is not set, in MiB. Without huge pages it
/// is reserved address space, touched only as DPDK uses it; every table of the process
/// draws on it (most of a table's share is the RIB's node pool, which grows with the
/// routes; `bench` keeps the scalar and AVX-512 tables at once).
const DEFAULT_MEM_MB: u32 = 12288;

/// Initialises DPDK's environment once per process; the error says why it failed.
fn eal() -> Result<(), String> {
    static EAL: OnceLock<Result<(), String>> = OnceLock::new();
    EAL.get_or_init(|| {
        let mem_mb = eal_mem_mb();
        let args = [
            "lpmkit",
            "--no-huge",
            "--no-pci",
            "--no-shconf",
            "--no-telemetry",
            "--log-level=error",
            "-m",
            &mem_mb,
        ];
        let args: Vec<CString> = args
            .iter()
            .map(|a| CString::new(*a).expect("no NUL in the arguments"))
            .collect();
        // `rte_eal_init` may permute and modify argv, so it gets its own pointers (the
        // strings live until the end of this closure; EAL copies what it keeps).
        let mut argv: Vec<*mut c_char> = args.iter().map(|a| a.as_ptr() as *mut c_char).collect();
        let affinity = Affinity::current();
        // SAFETY: argv holds `argv.len()` valid NUL-terminated strings.
        let r = unsafe { rte_eal_init(argv.len() as c_int, argv.as_mut_ptr()) };
        if let Some(a) = affinity {
            a.restore();
        }
        if r < 0 {
            return Err(format!(
                "DPDK's rte_eal_init failed (arguments {:?}; is LPMKIT_DPDK_MEM_MB={mem_mb} MiB available?)",
                &args.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>()[1..]
            ));
        }
        Ok(())
    })
    .clone()
}

/// Raises the EAL's maximum SIMD width to 512 bits, once per process (DPDK selects its
/// AVX-512 lookups only under it); the error says why it could not.
fn allow_512_bit_simd() -> Result<(), String> {
    static WIDTH: OnceLock<Result<(), String>> = OnceLock::new();
    WIDTH
        .get_or_init(|| {
            // SAFETY: the EAL is initialised (the caller's `eal()`); the call only stores
            // the width in the EAL's configuration, read when a lookup is selected.
            let r = unsafe { rte_vect_set_max_simd_bitwidth(RTE_VECT_SIMD_512) };
            // SAFETY: as above; a read of the configuration.
            let now = unsafe { rte_vect_get_max_simd_bitwidth() };
            if r != 0 || now < RTE_VECT_SIMD_512 {
                return Err(format!(
                    "rte_vect_set_max_simd_bitwidth(512) failed ({r}); the EAL's maximum SIMD width is {now} bits"
                ));
            }
            Ok(())
        })
        .clone()
}

/// The calling thread's CPU affinity, to restore after `rte_eal_init` pins it.
struct Affinity(libc::cpu_set_t);

impl Affinity {
    fn current() -> Option<Affinity> {
        // SAFETY: `cpu_set_t` is plain data; the call writes at most its size.
        unsafe {
            let mut set: libc::cpu_set_t = core::mem::zeroed();
            (libc::sched_getaffinity(0, core::mem::size_of_val(&set), &mut set) == 0)
                .then_some(Affinity(set))
        }
    }

    fn restore(&self) {
        // SAFETY: the set came from `sched_getaffinity`; failure leaves the pinning, which
        // only costs speed.
        unsafe {
            libc::sched_setaffinity(0, core::mem::size_of_val(&self.0), &self.0);
        }
    }
}

/// A process-unique name for a DPDK object (DPDK keeps a global list by name).
fn unique_name(family: &str) -> CString {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    CString::new(format!("lpmkit_{family}_{n}")).expect("no NUL")
}

fn error(reason: String) -> BuildError {
    BuildError::InvalidConfig {
        scheme: NAME.to_string(),
        reason,
    }
}

/// Which of DPDK's bulk lookups a table runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DpdkLookup {
    /// The scalar lookups (`RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO`,
    /// `RTE_FIB6_LOOKUP_TRIE_SCALAR`).
    #[default]
    Scalar,
    /// The AVX-512 vector lookups (`RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512`,
    /// `RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512`).
    Avx512,
}

/// The smallest entry size (an index into [`ENTRY_BYTES`], which is also DPDK's enum
/// value) that holds `max`, the larger of the largest next hop and the `tbl8` group count:
/// both tables store either in an entry, next to a flag bit, and refuse a configuration
/// whose groups their entries cannot index. The smallest entries are what a tuned DPDK
/// deployment uses (a 2-byte first level is 32 MiB, a 4-byte one 64 MiB).
fn entry_size(max: u64, v4: bool) -> usize {
    let first = if v4 { 0 } else { FIRST_TRIE_ENTRY };
    (first..ENTRY_BYTES.len())
        .find(|&i| max < 1 << (8 * ENTRY_BYTES[i] - 1))
        .unwrap_or(ENTRY_BYTES.len() - 1)
}

/// `tbl8` groups to configure so that every route of `rib` can be added (in the `Rib`'s
/// order, covering prefixes first), plus a margin.
///
/// IPv4 (`dir24_8.c`): one group per /24 that holds a longer prefix. IPv6 (`trie.c`):
/// `rte_fib6_add` refuses a route longer than /24 unless it can *reserve* a group for
/// each 8-bit level between its covering route (at least /24) and itself, rounded up to
/// whole levels: `(ceil8(len) − ceil8(max(parent, 24))) / 8` (none when a longer route
/// already sits in its last level). The sum over all routes bounds what it reserves, and
/// also the groups it uses.
fn tbl8_groups<A: Address>(rib: &Rib<A>) -> u32 {
    let ceil8 = |l: u32| l.div_ceil(8) * 8;
    let groups = if A::BITS == 32 {
        let blocks: HashSet<u32> = rib
            .iter()
            .filter(|(p, _)| p.len() > 24)
            .map(|(p, _)| p.addr().to_u128() as u32 >> 8)
            .collect();
        blocks.len() as u64
    } else {
        // The covering routes of the current one: a stack, as the order is depth-first.
        let mut open: Vec<crate::Prefix<A>> = Vec::new();
        let mut sum = 0u64;
        for (p, _) in rib.iter() {
            while open.last().is_some_and(|q| !q.covers(&p)) {
                open.pop();
            }
            let len = p.len() as u32;
            if len > 24 {
                let parent = open.last().map_or(0, |q| q.len() as u32).max(24);
                sum += ((ceil8(len) - ceil8(parent)) / 8) as u64;
            }
            open.push(p);
        }
        sum
    };
    u32::try_from(groups + 64).unwrap_or(u32::MAX)
}

/// A DPDK table: the handle and the bytes of its lookup tables.
struct Handle {
    fib: *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    bytes: usize,
    entry_bytes: usize,
    tbl8: u32,
    routes: usize,
    lookup: DpdkLookup,
}

// SAFETY: after the build the table is only read (`*_lookup_bulk` takes no lock and writes
// only its output), so lookups from several threads are safe; `Drop` frees it once.
unsafe impl Send for Handle {}
// SAFETY: as for `Send`.
unsafe impl Sync for Handle {}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: `fib` came from the matching `*_create` and is freed only here.
        unsafe { (self.free)(self.fib) }
    }
}

impl Handle {
    fn create<A: Address>(rib: &Rib<A>) -> Result<Handle, BuildError> {
        eal().map_err(error)?;
        let tbl8 = tbl8_groups(rib);
        let v4 = A::BITS == 32;
        let max_nh = rib.iter().map(|(_, nh)| nh.get()).max().unwrap_or(0);
        let entry = entry_size((max_nh as u64).max(tbl8 as u64), v4);
        let mut conf = FibConf {
            kind: if v4 { RTE_FIB_DIR24_8 } else { RTE_FIB6_TRIE },
            default_nh: 0,
            max_routes: c_int::try_from(rib.len() + 1).map_err(|_| {
                error(format!(
                    "{} routes exceed DPDK's int route count",
                    rib.len()
                ))
            })?,
            rib_ext_sz: 0,
            nh_sz: entry as c_int,
            num_tbl8: tbl8,
        };
        let name = unique_name(if v4 { "v4" } else { "v6" });
        // SAFETY: `name` is NUL-terminated and `conf` a valid configuration; -1 = any
        // socket.
        let fib = unsafe {
            if v4 {
                rte_fib_create(name.as_ptr(), -1, &mut conf)
            } else {
                rte_fib6_create(name.as_ptr(), -1, &mut conf)
            }
        };
        if fib.is_null() {
            return Err(error(format!(
                "rte_fib{}_create failed for {} routes and {tbl8} tbl8 groups: DPDK's memory ({} MiB, shared by every dpdk-fib table of the process) is exhausted; raise LPMKIT_DPDK_MEM_MB",
                if v4 { "" } else { "6" },
                rib.len(),
                eal_mem_mb()
            )));
        }
        let handle = Handle {
            fib,
            free: if v4 { rte_fib_free } else { rte_fib6_free },
            bytes: (TBL24_ENTRIES + tbl8 as usize * TBL8_ENTRIES) * ENTRY_BYTES[entry],
            entry_bytes: ENTRY_BYTES[entry],
            tbl8,
            routes: rib.len(),
            lookup: DpdkLookup::Scalar,
        };
        for (p, nh) in rib.iter() {
            let a = p.addr().to_u128();
            let nh = nh.get() as u64;
            // SAFETY: `fib` is a live table of the family; the address array lives across
            // the call.
            let r = unsafe {
                if v4 {
                    rte_fib_add(fib, a as u32, p.len(), nh)
                } else {
                    rte_fib6_add(fib, &a.to_be_bytes(), p.len(), nh)
                }
            };
            if r != 0 {
                return Err(error(format!(
                    "rte_fib{}_add({p}) failed: {r}",
                    if v4 { "" } else { "6" }
                )));
            }
        }
        Ok(handle)
    }

    /// Selects the table's bulk lookup.
    fn select(&mut self, lookup: DpdkLookup, v4: bool) -> Result<(), BuildError> {
        let kind = match (lookup, v4) {
            (DpdkLookup::Scalar, true) => RTE_FIB_LOOKUP_DIR24_8_SCALAR_MACRO,
            (DpdkLookup::Scalar, false) => RTE_FIB6_LOOKUP_TRIE_SCALAR,
            (DpdkLookup::Avx512, true) => RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512,
            (DpdkLookup::Avx512, false) => RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512,
        };
        if lookup == DpdkLookup::Avx512 {
            allow_512_bit_simd().map_err(error_avx512)?;
        }
        // SAFETY: `fib` is a live table of the family; selecting stores a function pointer
        // in it (no lookup runs yet: the table is not shared before the build returns).
        let r = unsafe {
            if v4 {
                rte_fib_select_lookup(self.fib, kind)
            } else {
                rte_fib6_select_lookup(self.fib, kind)
            }
        };
        if r != 0 {
            let reason = format!(
                "rte_fib{}_select_lookup({lookup:?}) failed ({r}): {}",
                if v4 { "" } else { "6" },
                if lookup == DpdkLookup::Avx512 {
                    "the installed librte_fib has no AVX-512 lookup for this table, or the CPU lacks AVX-512 F/DQ"
                } else {
                    "DPDK refused its scalar lookup"
                }
            );
            return Err(if lookup == DpdkLookup::Avx512 {
                error_avx512(reason)
            } else {
                error(reason)
            });
        }
        self.lookup = lookup;
        Ok(())
    }

    fn stats(&self, table: &str) -> Stats {
        Stats::new()
            .with("table", StatValue::Text(table.to_string()))
            .with(
                "lookup",
                StatValue::Text(
                    match (self.lookup, table.starts_with("rte_fib6")) {
                        (DpdkLookup::Scalar, false) => "dir24_8 scalar macro",
                        (DpdkLookup::Avx512, false) => "dir24_8 vector avx512",
                        (DpdkLookup::Scalar, true) => "trie scalar",
                        (DpdkLookup::Avx512, true) => "trie vector avx512",
                    }
                    .to_string(),
                ),
            )
            .with("routes", StatValue::Count(self.routes as u64))
            .with("tbl8_groups", StatValue::Count(self.tbl8 as u64))
            .with("entry_bytes", StatValue::Count(self.entry_bytes as u64))
    }
}

/// DPDK `rte_fib` (IPv4, `DIR24_8`) or `rte_fib6` (IPv6, `TRIE`).
pub struct DpdkFib<A: Address> {
    handle: Handle,
    name: &'static str,
    _family: core::marker::PhantomData<fn(A) -> A>,
}

/// Build options for [`DpdkFib`]: the lookup to run; entry size and `tbl8` groups are
/// sized from the table, the EAL's memory from `LPMKIT_DPDK_MEM_MB`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DpdkConfig {
    /// DPDK's scalar or AVX-512 bulk lookup.
    pub lookup: DpdkLookup,
    /// The highest instruction set the lookups may use (`None`: no cap): below
    /// [`Isa::Avx512`](crate::simd::Isa::Avx512), [`DpdkLookup::Avx512`] runs the scalar
    /// lookup instead (as every scheme's kernels do under a ceiling).
    pub isa: Option<crate::simd::Isa>,
}

impl DpdkConfig {
    /// The config running `lookup`, under the ceiling `isa`.
    pub fn new(lookup: DpdkLookup, isa: Option<crate::simd::Isa>) -> Self {
        DpdkConfig { lookup, isa }
    }
}

/// An error of the AVX-512 preset.
fn error_avx512(reason: String) -> BuildError {
    BuildError::InvalidConfig {
        scheme: NAME_AVX512.to_string(),
        reason,
    }
}

impl<A: Address> core::fmt::Debug for DpdkFib<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DpdkFib")
            .field("family", &A::FAMILY)
            .finish()
    }
}

impl Config for DpdkConfig {
    const SETTINGS: &'static [(&'static str, &'static str)] = &[(
        "simd",
        "DPDK's lookup: scalar (default) or avx512 (its vector lookups, with the EAL's SIMD width raised to 512 bits)",
    )];

    fn from_settings<A: Address>(s: &Settings<'_>) -> Result<Self, BuildError> {
        let lookup = match s.text("simd").unwrap_or("scalar") {
            "scalar" => DpdkLookup::Scalar,
            "avx512" => DpdkLookup::Avx512,
            v => return Err(s.invalid("simd", v, "scalar or avx512")),
        };
        Ok(DpdkConfig::new(lookup, s.isa()))
    }
}

impl<A: DpdkAddress> Scheme<A> for DpdkFib<A> {
    type Config = DpdkConfig;

    fn build(rib: &Rib<A>, config: &DpdkConfig) -> Result<Self, BuildError> {
        DpdkFib::build(rib, config)
    }
}

impl<A: Address> DpdkFib<A> {
    /// Builds the DPDK table from `rib` (initialising DPDK's environment on first use) and
    /// selects its lookup: [`DpdkConfig::lookup`], or the scalar one when the ISA ceiling
    /// is below AVX-512.
    pub fn build(rib: &Rib<A>, config: &DpdkConfig) -> Result<Self, BuildError> {
        let mut handle = Handle::create(rib)?;
        let lookup = match config.lookup {
            DpdkLookup::Avx512
                if crate::simd::Isa::ceiling(false, config.isa) < crate::simd::Isa::Avx512 =>
            {
                DpdkLookup::Scalar
            }
            l => l,
        };
        handle.select(lookup, A::BITS == 32)?;
        Ok(DpdkFib {
            handle,
            name: match config.lookup {
                DpdkLookup::Scalar => NAME,
                DpdkLookup::Avx512 => NAME_AVX512,
            },
            _family: core::marker::PhantomData,
        })
    }

    /// The lookup the table runs.
    pub fn lookup_kind(&self) -> DpdkLookup {
        self.handle.lookup
    }
}

/// An address family DPDK has a table for: its bulk lookup of at most [`CHUNK`] keys.
pub trait DpdkAddress: Address {
    /// The DPDK table kind, for [`Fib::stats`].
    const TABLE: &'static str;

    /// Looks `keys` (at most [`CHUNK`]) up in the DPDK table `fib` of this family, writing
    /// `nh[i]` for `keys[i]` (DPDK writes every one of them).
    ///
    /// # Safety
    /// `fib` is a live DPDK table of this family; `nh` has room for `keys.len()` values.
    unsafe fn lookup_bulk(fib: *mut c_void, keys: &[Self], nh: *mut u64);
}

impl DpdkAddress for Ipv4 {
    const TABLE: &'static str = "rte_fib dir24_8";

    unsafe fn lookup_bulk(fib: *mut c_void, keys: &[Self], nh: *mut u64) {
        debug_assert!(keys.len() <= CHUNK);
        // SAFETY: DPDK takes `uint32_t *ips` (not const) but only reads them, so the keys
        // are passed as they are; `nh` and `fib` per the contract.
        unsafe { rte_fib_lookup_bulk(fib, keys.as_ptr().cast_mut(), nh, keys.len() as c_int) };
    }
}

impl DpdkAddress for Ipv6 {
    const TABLE: &'static str = "rte_fib6 trie";

    unsafe fn lookup_bulk(fib: *mut c_void, keys: &[Self], nh: *mut u64) {
        debug_assert!(keys.len() <= CHUNK);
        // DPDK's form: 16 bytes in network order, written only for the keys (no zeroing of
        // the whole buffer per call).
        let mut ips = [MaybeUninit::<[u8; 16]>::uninit(); CHUNK];
        for (b, &a) in ips.iter_mut().zip(keys) {
            b.write(a.to_be_bytes());
        }
        // SAFETY: DPDK reads the first `keys.len()` entries of `ips`, all written above;
        // `nh` and `fib` per the contract.
        unsafe { rte_fib6_lookup_bulk(fib, ips.as_mut_ptr().cast(), nh, keys.len() as c_int) };
    }
}

impl<A: DpdkAddress> Fib<A> for DpdkFib<A> {
    fn name(&self) -> &str {
        self.name
    }

    fn lookup(&self, addr: A) -> Option<NextHop> {
        let mut out = [0u32];
        self.lookup_batch(&[addr], &mut out);
        NextHop::new(out[0])
    }

    fn lookup_batch(&self, addrs: &[A], out: &mut [u32]) {
        assert!(out.len() >= addrs.len(), "output shorter than input");
        let mut nh = [MaybeUninit::<u64>::uninit(); CHUNK];
        for (k, o) in addrs.chunks(CHUNK).zip(out.chunks_mut(CHUNK)) {
            // SAFETY: the handle is a live table of family `A` (built by `Handle::create`);
            // `nh` holds `CHUNK >= k.len()` values.
            unsafe { A::lookup_bulk(self.handle.fib, k, nh.as_mut_ptr().cast()) };
            for (o, n) in o.iter_mut().zip(&nh[..k.len()]) {
                // SAFETY: DPDK wrote the first `k.len()` next hops. Next hop ids are 32-bit
                // (the entries were sized to hold them).
                *o = unsafe { n.assume_init() } as u32;
            }
        }
    }

    fn memory_bytes(&self) -> usize {
        self.handle.bytes
    }

    fn stats(&self) -> Stats {
        self.handle.stats(A::TABLE)
    }

    fn implementation(&self) -> crate::fib::Implementation {
        match self.handle.lookup {
            DpdkLookup::Scalar => crate::fib::Implementation::Scalar,
            DpdkLookup::Avx512 => crate::fib::Implementation::Avx512,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic;

    /// Both of DPDK's lookups against the Rib (the AVX-512 one where the CPU has it).
    fn check<A: DpdkAddress>(rib: &Rib<A>, keys: &[A]) {
        let mut lookups = vec![DpdkLookup::Scalar];
        if crate::simd::Avx512::detect().is_some() {
            lookups.push(DpdkLookup::Avx512);
        } else {
            eprintln!("note: no AVX-512 on this CPU; DPDK's AVX-512 lookups skipped");
        }
        for lookup in lookups {
            let fib = DpdkFib::build(rib, &DpdkConfig::new(lookup, None)).expect("DPDK builds");
            if crate::simd::Isa::env_ceiling() == crate::simd::Isa::Avx512 {
                assert_eq!(fib.lookup_kind(), lookup);
            }
            let mut out = vec![0u32; keys.len()];
            fib.lookup_batch(keys, &mut out);
            for (&k, &o) in keys.iter().zip(&out) {
                let want = NextHop::raw(rib.lookup(k));
                assert_eq!(o, want, "{lookup:?}: key {k:?}");
                assert_eq!(
                    NextHop::raw(fib.lookup(k)),
                    want,
                    "{lookup:?}: key {k:?} (single)"
                );
            }
        }
    }

    #[test]
    fn a_ceiling_below_avx512_selects_the_scalar_lookup() {
        let rib = small::<Ipv4>(&[("10.0.0.0/8", 1)]);
        let cfg = DpdkConfig::new(DpdkLookup::Avx512, Some(crate::simd::Isa::Avx2));
        let fib = DpdkFib::build(&rib, &cfg).expect("DPDK builds");
        assert_eq!(fib.lookup_kind(), DpdkLookup::Scalar);
        assert_eq!(fib.name(), "dpdk-fib-avx512");
        assert_eq!(fib.implementation(), crate::fib::Implementation::Scalar);
    }

    fn small<A: Address>(routes: &[(&str, u32)]) -> Rib<A>
    where
        crate::Prefix<A>: core::str::FromStr,
        <crate::Prefix<A> as core::str::FromStr>::Err: core::fmt::Debug,
    {
        let mut rib = Rib::new();
        for &(p, nh) in routes {
            rib.insert(p.parse().unwrap(), NextHop::new(nh).unwrap());
        }
        rib
    }

    #[test]
    fn entries_are_the_smallest_that_hold_next_hops_and_groups() {
        // The top bit of an entry is DPDK's flag; the trie has no 1-byte entries.
        assert_eq!(ENTRY_BYTES[entry_size(127, true)], 1);
        assert_eq!(ENTRY_BYTES[entry_size(128, true)], 2);
        assert_eq!(ENTRY_BYTES[entry_size(127, false)], 2);
        assert_eq!(ENTRY_BYTES[entry_size(32_767, false)], 2);
        assert_eq!(ENTRY_BYTES[entry_size(32_768, true)], 4);
        assert_eq!(ENTRY_BYTES[entry_size((1 << 31) - 1, false)], 4);
        assert_eq!(ENTRY_BYTES[entry_size(u32::MAX as u64, true)], 8);
    }

    #[test]
    fn dpdk_agrees_with_the_rib_v4() {
        let rib = small::<Ipv4>(&[
            ("0.0.0.0/0", 9),
            ("10.0.0.0/8", 1),
            ("10.1.2.0/24", 2),
            ("10.1.2.128/25", 3),
            ("10.1.2.255/32", 4),
            ("192.168.0.0/16", 5),
        ]);
        let mut keys = traffic::boundary_keys(&rib);
        keys.extend(traffic::uniform::<Ipv4>(100_000, 1));
        check(&rib, &keys);
        // Next hop ids past 2^31 take 8-byte entries.
        let wide = small::<Ipv4>(&[("10.0.0.0/8", 7), ("10.9.8.0/25", 0xffff_fff0)]);
        check(&wide, &traffic::boundary_keys(&wide));
        let synth = crate::synth::generate::<Ipv4>(&crate::synth::SynthConfig {
            routes: 50_000,
            seed: 3,
            ..crate::synth::SynthConfig::ipv4_default()
        })
        .rib;
        let mut keys = traffic::boundary_keys(&synth);
        keys.extend(traffic::uniform::<Ipv4>(200_000, 2));
        check(&synth, &keys);
    }

    #[test]
    fn dpdk_agrees_with_the_rib_v6() {
        let rib = small::<Ipv6>(&[
            ("::/0", 9),
            ("2001:db8::/32", 1),
            ("2001:db8:1::/48", 2),
            ("2001:db8:1:2::/64", 3),
            ("2001:db8:1:2::1/128", 4),
        ]);
        let mut keys = traffic::boundary_keys(&rib);
        keys.extend(traffic::uniform::<Ipv6>(100_000, 1));
        check(&rib, &keys);
        let synth = crate::synth::generate::<Ipv6>(&crate::synth::SynthConfig {
            routes: 20_000,
            seed: 3,
            ..crate::synth::SynthConfig::ipv6_default()
        })
        .rib;
        let mut keys = traffic::boundary_keys(&synth);
        keys.extend(traffic::v6_matching(&synth, 200_000, 2));
        check(&synth, &keys);
    }
}

//! The entry points' logic, once for both families: DPDK's argument checks in DPDK's
//! order, its return values and `rte_errno`s, a table behind each handle. `fib4.rs` and
//! `fib6.rs` are the C functions, each a line or two over these.
//!
//! Where DPDK 22.11 would crash or read out of bounds (a NULL handle, name or array; a
//! negative count), these return `-EINVAL` (or NULL with `rte_errno = EINVAL`), which is
//! what DPDK's checks built with `RTE_LIBRTE_FIB_DEBUG` return. No panic crosses into C: a
//! bug is logged and answered with `ENOTRECOVERABLE`.

use core::ffi::{c_char, c_int, c_void};
use std::ffi::{CStr, CString};
use std::ops::RangeInclusive;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use lpmkit::facade::AUTO;
use lpmkit::{registry, Prefix};

use crate::abi::{self, errno::*, rte_fib_conf};
use crate::eal;
use crate::names;
use crate::table::{Config, Failure, Key, Table};

/// What differs between `rte_fib` and `rte_fib6`.
pub trait Api: Key {
    /// `Handle::magic` of a live handle of this family.
    const MAGIC: u64;
    /// `RTE_FIB_MAXDEPTH` / `RTE_FIB6_MAXDEPTH`.
    const MAX_DEPTH: u8;
    /// The table type (`RTE_FIB_DIR24_8` / `RTE_FIB6_TRIE`); 0 is the RIB-only `DUMMY`.
    const TABLE: c_int;
    /// The entry sizes the table type takes (`enum …_nh_sz`).
    const NH_SZ: RangeInclusive<c_int>;
    /// The last value of `enum rte_fib_lookup_type` / `enum rte_fib6_lookup_type`.
    const LOOKUP_LAST: c_int;
    /// The environment variable that names the scheme.
    const SCHEME_ENV: &'static str;
}

impl Api for u32 {
    const MAGIC: u64 = u64::from_be_bytes(*b"lpmkFIB4");
    const MAX_DEPTH: u8 = abi::RTE_FIB_MAXDEPTH;
    const TABLE: c_int = abi::RTE_FIB_DIR24_8;
    const NH_SZ: RangeInclusive<c_int> = abi::RTE_FIB_DIR24_8_1B..=abi::RTE_FIB_DIR24_8_8B;
    const LOOKUP_LAST: c_int = abi::RTE_FIB_LOOKUP_LAST;
    const SCHEME_ENV: &'static str = "LPMKIT_FIB_SCHEME";
}

impl Api for u128 {
    const MAGIC: u64 = u64::from_be_bytes(*b"lpmkFIB6");
    const MAX_DEPTH: u8 = abi::RTE_FIB6_MAXDEPTH;
    const TABLE: c_int = abi::RTE_FIB6_TRIE;
    const NH_SZ: RangeInclusive<c_int> = abi::RTE_FIB6_TRIE_2B..=abi::RTE_FIB6_TRIE_8B;
    const LOOKUP_LAST: c_int = abi::RTE_FIB6_LOOKUP_LAST;
    const SCHEME_ENV: &'static str = "LPMKIT_FIB6_SCHEME";
}

/// What an `rte_fib *` / `rte_fib6 *` points to.
pub struct Handle<A: Key> {
    magic: u64,
    /// DPDK's `type` (`DUMMY` answers `select_lookup` with `-EINVAL`).
    kind: c_int,
    name: Vec<u8>,
    table: Arc<Table<A>>,
}

impl<A: Key> Handle<A> {
    /// The table.
    pub fn table(&self) -> &Arc<Table<A>> {
        &self.table
    }
}

/// Runs an entry point that returns a status: `-errno` on failure (logged when the reason
/// is worth a line), a panic caught.
pub fn status(what: Call, f: impl FnOnce() -> Result<(), Failure>) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => 0,
        Ok(Err(Failure(e, _))) => -e,
        Err(p) => -panicked(what, p),
    }
}

/// An entry point's name for messages, as its two halves (`rte_fib`, `_add`): put
/// together only when there is something to say.
pub type Call = (&'static str, &'static str);

/// Runs an entry point that returns a pointer: NULL with `rte_errno` set on failure.
pub fn pointer<T>(what: Call, f: impl FnOnce() -> Result<*mut T, Failure>) -> *mut T {
    let e = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(p)) => return p,
        Ok(Err(Failure(e, why))) => {
            if !why.is_empty() {
                eal::warn(&format!("{}{}: {why}", what.0, what.1));
            }
            e
        }
        Err(p) => panicked(what, p),
    };
    eal::set_rte_errno(e);
    core::ptr::null_mut()
}

fn panicked(what: Call, payload: Box<dyn std::any::Any + Send>) -> c_int {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    eal::warn(&format!(
        "{}{}: lpmkit panicked (a bug): {msg}",
        what.0, what.1
    ));
    libc::ENOTRECOVERABLE
}

fn invalid() -> Failure {
    Failure(EINVAL, String::new())
}

/// The live handle behind `fib`, or `EINVAL`.
///
/// # Safety
/// `fib` is NULL or a pointer this library returned and that was not freed.
pub unsafe fn handle<'a, A: Api>(fib: *const c_void) -> Result<&'a Handle<A>, Failure> {
    // SAFETY: as documented; a handle of the other family has another magic.
    let h = unsafe { fib.cast::<Handle<A>>().as_ref() }.ok_or_else(invalid)?;
    if h.magic != A::MAGIC {
        return Err(Failure(EINVAL, "not a live handle of this family".into()));
    }
    Ok(h)
}

/// The bytes of the name at `name`.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
unsafe fn name_arg<'a>(name: *const c_char) -> Result<&'a [u8], Failure> {
    if name.is_null() {
        return Err(invalid());
    }
    // SAFETY: as documented.
    Ok(unsafe { CStr::from_ptr(name) }.to_bytes())
}

/// `rte_fib_create` / `rte_fib6_create`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `conf` is NULL or points to a configuration.
pub unsafe fn create<A: Api>(
    name: *const c_char,
    _socket_id: c_int,
    conf: *const rte_fib_conf,
) -> *mut c_void {
    pointer((A::API, "_create"), || {
        // SAFETY: as documented.
        let name = unsafe { name_arg(name) }?;
        // SAFETY: as documented (NULL checked).
        let conf = unsafe { conf.as_ref() }.ok_or_else(invalid)?;
        // DPDK's order: its own checks, then the RIB's (size, name), then the table's.
        if conf.max_routes < 0 || conf.kind as u32 > A::TABLE as u32 || conf.max_routes == 0 {
            return Err(invalid());
        }
        if name.len() >= names::NAMESIZE {
            return Err(Failure(
                ENAMETOOLONG,
                format!(
                    "a name of {} bytes (at most {})",
                    name.len(),
                    names::NAMESIZE - 1
                ),
            ));
        }
        if names::taken(name) {
            return Err(Failure(EEXIST, String::new()));
        }
        let max_nh = if conf.kind == A::TABLE {
            let t = conf.table;
            if !A::NH_SZ.contains(&t.nh_sz) {
                return Err(invalid());
            }
            let max = abi::max_next_hop(t.nh_sz);
            if t.num_tbl8 == 0 || u64::from(t.num_tbl8) > max || conf.default_nh > max {
                return Err(invalid());
            }
            max
        } else {
            u64::MAX
        };
        let scheme = std::env::var(A::SCHEME_ENV).unwrap_or_else(|_| AUTO.to_string());
        if scheme != AUTO && !registry::find(&scheme).is_some_and(|s| s.supports(A::FAMILY)) {
            let known: Vec<_> = registry::schemes_for(A::FAMILY).map(|s| s.name).collect();
            return Err(Failure(
                EINVAL,
                format!(
                    "{}={scheme}: no such scheme for {}; known: auto, {}",
                    A::SCHEME_ENV,
                    A::FAMILY,
                    known.join(", ")
                ),
            ));
        }
        let table = Table::<A>::new(Config {
            name: String::from_utf8_lossy(name).into_owned(),
            default_nh: conf.default_nh,
            max_nh,
            max_routes: conf.max_routes as usize,
            scheme,
            hold_time: Config::hold_time_from_env(),
        });
        let h = Box::into_raw(Box::new(Handle {
            magic: A::MAGIC,
            kind: conf.kind,
            name: name.to_vec(),
            table,
        }));
        if !names::register(name, A::FAMILY, h as usize) {
            // SAFETY: made just above, never handed out.
            drop(unsafe { Box::from_raw(h) });
            return Err(Failure(EEXIST, String::new()));
        }
        Ok(h.cast())
    })
}

/// `rte_fib_find_existing` / `rte_fib6_find_existing`.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe fn find_existing<A: Api>(name: *const c_char) -> *mut c_void {
    pointer((A::API, "_find_existing"), || {
        // SAFETY: as documented.
        let name = unsafe { name_arg(name) }?;
        names::find(name, A::FAMILY)
            .map(|h| h as *mut c_void)
            .ok_or_else(|| Failure(ENOENT, String::new()))
    })
}

/// `rte_fib_free` / `rte_fib6_free`: NULL is ignored, and so (logged) is a pointer that is
/// not a live handle of the family.
///
/// # Safety
/// `fib` is NULL or a handle of this library, with no other call on it running.
pub unsafe fn free<A: Api>(fib: *mut c_void) {
    if fib.is_null() {
        return;
    }
    let what = (A::API, "_free");
    let _ = status(what, || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }.inspect_err(|Failure(_, why)| {
            eal::warn(&format!("{}{}: {why}; ignored", what.0, what.1));
        })?;
        names::release(&h.name, fib as usize);
        h.table.close();
        // SAFETY: a live handle from `create` (checked), freed once: its magic is cleared
        // before the memory goes.
        let mut h = unsafe { Box::from_raw(fib.cast::<Handle<A>>()) };
        h.magic = 0;
        drop(h);
        Ok(())
    });
}

/// The prefix `ip/depth` (host bits cleared, as DPDK does), or `EINVAL`.
fn prefix<A: Api>(ip: A, depth: u8) -> Result<Prefix<A>, Failure> {
    if depth > A::MAX_DEPTH {
        return Err(invalid());
    }
    Ok(Prefix::new_truncating(ip, depth))
}

/// `rte_fib_add` / `rte_fib6_add` (`ip` already read).
///
/// # Safety
/// `fib` as for [`handle`].
pub unsafe fn add<A: Api>(fib: *mut c_void, ip: Option<A>, depth: u8, next_hop: u64) -> c_int {
    status((A::API, "_add"), || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }?;
        let p = prefix(ip.ok_or_else(invalid)?, depth)?;
        if next_hop > h.table.config().max_nh {
            return Err(invalid());
        }
        h.table.add(p, next_hop)
    })
}

/// `rte_fib_delete` / `rte_fib6_delete` (`ip` already read).
///
/// # Safety
/// `fib` as for [`handle`].
pub unsafe fn delete<A: Api>(fib: *mut c_void, ip: Option<A>, depth: u8) -> c_int {
    status((A::API, "_delete"), || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }?;
        let p = prefix(ip.ok_or_else(invalid)?, depth)?;
        h.table.delete(p)
    })
}

/// True if the `a_bytes` bytes at `a` and the `b_bytes` bytes at `b` share a byte.
fn overlap(a: *const u8, a_bytes: usize, b: *const u8, b_bytes: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    a < b.saturating_add(b_bytes) && b < a.saturating_add(a_bytes)
}

/// `rte_fib_lookup_bulk` / `rte_fib6_lookup_bulk`: `n` keys of type `K` at `ips`, each
/// turned into an address by `key`, looked up into `next_hops`. The arrays may overlap
/// (the keys are then copied first).
///
/// # Safety
/// `fib` as for [`handle`]; `ips` and `next_hops` are NULL or point to `n` elements.
pub unsafe fn lookup<A: Api, K: Copy + 'static>(
    fib: *mut c_void,
    ips: *const K,
    next_hops: *mut u64,
    n: c_int,
    key: impl Fn(K) -> A,
) -> c_int {
    status((A::API, "_lookup_bulk"), || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }?;
        if n < 0 {
            return Err(invalid());
        }
        let n = n as usize;
        if n == 0 {
            return Ok(());
        }
        if ips.is_null() || next_hops.is_null() {
            return Err(invalid());
        }
        let key_bytes = n * core::mem::size_of::<K>();
        if overlap(ips.cast(), key_bytes, next_hops.cast_const().cast(), n * 8) {
            // SAFETY: `n` readable keys; the copy is made before `next_hops` is written.
            let keys: Vec<A> = unsafe { std::slice::from_raw_parts(ips, n) }
                .iter()
                .map(|&k| key(k))
                .collect();
            // SAFETY: `n` writable next hops; no other reference to them is live now.
            let out = unsafe { std::slice::from_raw_parts_mut(next_hops, n) };
            return h.table.lookup(&keys, out, |a| a);
        }
        // SAFETY: `n` elements each, disjoint (checked above).
        let (ips, out) = unsafe {
            (
                std::slice::from_raw_parts(ips, n),
                std::slice::from_raw_parts_mut(next_hops, n),
            )
        };
        h.table.lookup(ips, out, key)
    })
}

/// `rte_fib_get_dp` / `rte_fib6_get_dp`: lpmkit's table has no DPDK data-plane struct;
/// the handle itself stands for it (as DPDK's `DUMMY` tables answer), opaque.
pub fn get_dp(fib: *mut c_void) -> *mut c_void {
    fib
}

/// `rte_fib_get_rib` / `rte_fib6_get_rib`: there is no `rte_rib` to hand out — NULL, with
/// `rte_errno = ENOTSUP` for a handle (DPDK answers NULL for NULL, without `rte_errno`).
///
/// # Safety
/// `fib` as for [`handle`].
pub unsafe fn get_rib<A: Api>(fib: *mut c_void) -> *mut c_void {
    if fib.is_null() {
        return core::ptr::null_mut();
    }
    pointer((A::API, "_get_rib"), || {
        // SAFETY: as documented.
        unsafe { handle::<A>(fib) }?;
        Err(Failure(ENOTSUP, String::new()))
    })
}

/// `rte_fib_select_lookup` / `rte_fib6_select_lookup`: every lookup type of the enum is
/// accepted for the table type (lpmkit's scheme runs its own best path: AVX-512, AVX2 or
/// scalar); `-EINVAL` for a value past the enum and for `DUMMY` tables, as DPDK.
///
/// # Safety
/// `fib` as for [`handle`].
pub unsafe fn select_lookup<A: Api>(fib: *mut c_void, kind: c_int) -> c_int {
    status((A::API, "_select_lookup"), || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }?;
        if h.kind != A::TABLE || kind as u32 > A::LOOKUP_LAST as u32 {
            return Err(invalid());
        }
        Ok(())
    })
}

/// `lpmkit_rte_fib_scheme` / `lpmkit_rte_fib6_scheme`: the scheme serving the table's
/// lookups now (building the table first if it is still loading), a string that stays
/// valid.
///
/// # Safety
/// `fib` as for [`handle`].
pub unsafe fn scheme<A: Api>(fib: *mut c_void) -> *const c_char {
    pointer((A::API, " scheme query (lpmkit)"), || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }?;
        Ok(c_name(h.table.build()?).as_ptr().cast_mut())
    })
}

/// A scheme's name as a C string that lives as long as the process (one per scheme
/// name, made once).
fn c_name(name: &'static str) -> &'static CStr {
    static NAMES: Mutex<Vec<(&'static str, &'static CStr)>> = Mutex::new(Vec::new());
    let mut names = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&(_, c)) = names.iter().find(|(n, _)| *n == name) {
        return c;
    }
    let c: &'static CStr = Box::leak(CString::new(name).unwrap_or_default().into_boxed_c_str());
    names.push((name, c));
    c
}

/// `lpmkit_rte_fib_sync` / `lpmkit_rte_fib6_sync`: every change made so far is visible to
/// lookups when it returns.
///
/// # Safety
/// `fib` as for [`handle`].
pub unsafe fn sync<A: Api>(fib: *mut c_void) -> c_int {
    status((A::API, " sync (lpmkit)"), || {
        // SAFETY: as documented.
        let h = unsafe { handle::<A>(fib) }?;
        h.table.sync().map(|_| ())
    })
}

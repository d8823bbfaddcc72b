//! `rte_fib.h`: the IPv4 functions, with DPDK 22.11's prototypes (exported with its
//! version tag by `lib.rs`), and lpmkit's two additions.

use core::ffi::{c_char, c_int, c_void};

use crate::abi::rte_fib_conf;
use crate::api;

/// `struct rte_fib` (opaque).
#[repr(C)]
pub struct rte_fib {
    _opaque: [u8; 0],
}

/// `struct rte_rib` (opaque; never handed out).
#[repr(C)]
pub struct rte_rib {
    _opaque: [u8; 0],
}

fn h(fib: *const rte_fib) -> *mut c_void {
    fib.cast_mut().cast()
}

/// `rte_fib_create`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `conf` NULL or a configuration.
pub unsafe extern "C" fn create(
    name: *const c_char,
    socket_id: c_int,
    conf: *mut rte_fib_conf,
) -> *mut rte_fib {
    // SAFETY: as documented.
    unsafe { api::create::<u32>(name, socket_id, conf) }.cast()
}

/// `rte_fib_find_existing`.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe extern "C" fn find_existing(name: *const c_char) -> *mut rte_fib {
    // SAFETY: as documented.
    unsafe { api::find_existing::<u32>(name) }.cast()
}

/// `rte_fib_free`.
///
/// # Safety
/// `fib` is NULL or a live handle with no other call on it running.
pub unsafe extern "C" fn free(fib: *mut rte_fib) {
    // SAFETY: as documented.
    unsafe { api::free::<u32>(h(fib)) }
}

/// `rte_fib_add`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn add(fib: *mut rte_fib, ip: u32, depth: u8, next_hop: u64) -> c_int {
    // SAFETY: as documented.
    unsafe { api::add::<u32>(h(fib), Some(ip), depth, next_hop) }
}

/// `rte_fib_delete`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn delete(fib: *mut rte_fib, ip: u32, depth: u8) -> c_int {
    // SAFETY: as documented.
    unsafe { api::delete::<u32>(h(fib), Some(ip), depth) }
}

/// `rte_fib_lookup_bulk`.
///
/// # Safety
/// `fib` is NULL or a live handle; `ips` and `next_hops` NULL or `n` elements each.
pub unsafe extern "C" fn lookup_bulk(
    fib: *mut rte_fib,
    ips: *mut u32,
    next_hops: *mut u64,
    n: c_int,
) -> c_int {
    // SAFETY: as documented.
    unsafe { api::lookup::<u32, u32>(h(fib), ips, next_hops, n, |k| k) }
}

/// `rte_fib_get_dp`.
pub extern "C" fn get_dp(fib: *mut rte_fib) -> *mut c_void {
    api::get_dp(h(fib))
}

/// `rte_fib_get_rib`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn get_rib(fib: *mut rte_fib) -> *mut rte_rib {
    // SAFETY: as documented.
    unsafe { api::get_rib::<u32>(h(fib)) }.cast()
}

/// `rte_fib_select_lookup`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn select_lookup(fib: *mut rte_fib, kind: c_int) -> c_int {
    // SAFETY: as documented.
    unsafe { api::select_lookup::<u32>(h(fib), kind) }
}

/// `lpmkit_rte_fib_scheme`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn scheme(fib: *mut rte_fib) -> *const c_char {
    // SAFETY: as documented.
    unsafe { api::scheme::<u32>(h(fib)) }
}

/// `lpmkit_rte_fib_sync`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn sync(fib: *mut rte_fib) -> c_int {
    // SAFETY: as documented.
    unsafe { api::sync::<u32>(h(fib)) }
}

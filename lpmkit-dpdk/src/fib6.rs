//! `rte_fib6.h`: the IPv6 functions, with DPDK 22.11's prototypes (exported with its
//! version tag by `lib.rs`), and lpmkit's two additions.

use core::ffi::{c_char, c_int, c_void};

use crate::abi::rte_fib6_conf;
use crate::api;

/// `struct rte_fib6` (opaque).
#[repr(C)]
pub struct rte_fib6 {
    _opaque: [u8; 0],
}

/// `struct rte_rib6` (opaque; never handed out).
#[repr(C)]
pub struct rte_rib6 {
    _opaque: [u8; 0],
}

fn h(fib: *const rte_fib6) -> *mut c_void {
    fib.cast_mut().cast()
}

/// The address at `ip` (16 bytes, network order), or `None` for NULL.
///
/// # Safety
/// `ip` is NULL or points to 16 readable bytes.
unsafe fn addr(ip: *const u8) -> Option<u128> {
    // SAFETY: as documented.
    (!ip.is_null()).then(|| u128::from_be_bytes(unsafe { ip.cast::<[u8; 16]>().read_unaligned() }))
}

/// `rte_fib6_create`.
///
/// # Safety
/// `name` is NULL or NUL-terminated; `conf` NULL or a configuration.
pub unsafe extern "C" fn create(
    name: *const c_char,
    socket_id: c_int,
    conf: *mut rte_fib6_conf,
) -> *mut rte_fib6 {
    // SAFETY: as documented.
    unsafe { api::create::<u128>(name, socket_id, conf) }.cast()
}

/// `rte_fib6_find_existing`.
///
/// # Safety
/// `name` is NULL or NUL-terminated.
pub unsafe extern "C" fn find_existing(name: *const c_char) -> *mut rte_fib6 {
    // SAFETY: as documented.
    unsafe { api::find_existing::<u128>(name) }.cast()
}

/// `rte_fib6_free`.
///
/// # Safety
/// `fib` is NULL or a live handle with no other call on it running.
pub unsafe extern "C" fn free(fib: *mut rte_fib6) {
    // SAFETY: as documented.
    unsafe { api::free::<u128>(h(fib)) }
}

/// `rte_fib6_add`.
///
/// # Safety
/// `fib` is NULL or a live handle.
/// `ip` is NULL or 16 bytes.
pub unsafe extern "C" fn add(fib: *mut rte_fib6, ip: *const u8, depth: u8, next_hop: u64) -> c_int {
    // SAFETY: as documented.
    unsafe { api::add::<u128>(h(fib), addr(ip), depth, next_hop) }
}

/// `rte_fib6_delete`.
///
/// # Safety
/// `fib` is NULL or a live handle.
/// `ip` is NULL or 16 bytes.
pub unsafe extern "C" fn delete(fib: *mut rte_fib6, ip: *const u8, depth: u8) -> c_int {
    // SAFETY: as documented.
    unsafe { api::delete::<u128>(h(fib), addr(ip), depth) }
}

/// `rte_fib6_lookup_bulk`.
///
/// # Safety
/// `fib` is NULL or a live handle; `ips` and `next_hops` NULL or `n` elements each.
pub unsafe extern "C" fn lookup_bulk(
    fib: *mut rte_fib6,
    ips: *mut [u8; 16],
    next_hops: *mut u64,
    n: c_int,
) -> c_int {
    // SAFETY: as documented.
    unsafe { api::lookup::<u128, [u8; 16]>(h(fib), ips, next_hops, n, u128::from_be_bytes) }
}

/// `rte_fib6_get_dp`.
pub extern "C" fn get_dp(fib: *mut rte_fib6) -> *mut c_void {
    api::get_dp(h(fib))
}

/// `rte_fib6_get_rib`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn get_rib(fib: *mut rte_fib6) -> *mut rte_rib6 {
    // SAFETY: as documented.
    unsafe { api::get_rib::<u128>(h(fib)) }.cast()
}

/// `rte_fib6_select_lookup`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn select_lookup(fib: *mut rte_fib6, kind: c_int) -> c_int {
    // SAFETY: as documented.
    unsafe { api::select_lookup::<u128>(h(fib), kind) }
}

/// `lpmkit_rte_fib6_scheme`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn scheme(fib: *mut rte_fib6) -> *const c_char {
    // SAFETY: as documented.
    unsafe { api::scheme::<u128>(h(fib)) }
}

/// `lpmkit_rte_fib6_sync`.
///
/// # Safety
/// `fib` is NULL or a live handle.
pub unsafe extern "C" fn sync(fib: *mut rte_fib6) -> c_int {
    // SAFETY: as documented.
    unsafe { api::sync::<u128>(h(fib)) }
}

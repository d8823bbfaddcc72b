//! The library's C API as the tests call it: the exported functions (`rte_fib_*`,
//! `rte_fib6_*`, lpmkit's additions), declared here as a C program declares them, behind
//! one trait for both families. Handles are kept as addresses (`usize`) so that test
//! threads can share them.

use core::ffi::{c_char, c_int};
use std::ffi::{CStr, CString};
use std::sync::Mutex;

use lpmkit::{Address, Prefix};
use lpmkit_rte_fib::abi::TableConf;
use lpmkit_rte_fib::{rte_fib, rte_fib6, rte_fib6_conf, rte_fib_conf};

extern "C" {
    fn rte_fib_create(name: *const c_char, socket: c_int, conf: *mut rte_fib_conf) -> *mut rte_fib;
    fn rte_fib_free(fib: *mut rte_fib);
    fn rte_fib_add(fib: *mut rte_fib, ip: u32, depth: u8, nh: u64) -> c_int;
    fn rte_fib_delete(fib: *mut rte_fib, ip: u32, depth: u8) -> c_int;
    fn rte_fib_lookup_bulk(fib: *mut rte_fib, ips: *mut u32, nh: *mut u64, n: c_int) -> c_int;
    fn rte_fib6_create(
        name: *const c_char,
        socket: c_int,
        conf: *mut rte_fib6_conf,
    ) -> *mut rte_fib6;
    fn rte_fib6_free(fib: *mut rte_fib6);
    fn rte_fib6_add(fib: *mut rte_fib6, ip: *const u8, depth: u8, nh: u64) -> c_int;
    fn rte_fib6_delete(fib: *mut rte_fib6, ip: *const u8, depth: u8) -> c_int;
    fn rte_fib6_lookup_bulk(
        fib: *mut rte_fib6,
        ips: *mut [u8; 16],
        nh: *mut u64,
        n: c_int,
    ) -> c_int;
    fn lpmkit_rte_fib_scheme(fib: *mut rte_fib) -> *const c_char;
    fn lpmkit_rte_fib6_scheme(fib: *mut rte_fib6) -> *const c_char;
    fn lpmkit_rte_fib_sync(fib: *mut rte_fib) -> c_int;
    fn lpmkit_rte_fib6_sync(fib: *mut rte_fib6) -> c_int;
}

/// A configuration: DIR24_8 / TRIE tables with `nh_sz` entries.
pub fn conf(default_nh: u64, max_routes: c_int, nh_sz: c_int) -> rte_fib_conf {
    rte_fib_conf {
        kind: 1,
        default_nh,
        max_routes,
        rib_ext_sz: 0,
        table: TableConf {
            nh_sz,
            num_tbl8: 1 << 15,
        },
    }
}

/// The environment variables `rte_fib_create` reads: one test at a time sets them.
static ENV: Mutex<()> = Mutex::new(());

fn c_str(p: *const c_char) -> String {
    assert!(!p.is_null(), "a NULL string");
    // SAFETY: a NUL-terminated string the library keeps.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// One family's C API.
pub trait Fib: Address {
    /// The variable that names the family's scheme.
    const ENV: &'static str;
    /// `rte_fib_create` with `scheme` in the environment (`None`: `auto`) and the hold
    /// time `LPMKIT_FIB_HOLD_MS=hold_ms`; 0 if it failed.
    fn create(name: &str, conf: rte_fib_conf, scheme: Option<&str>, hold_ms: u32) -> usize {
        let name = CString::new(name).unwrap();
        let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
        match scheme {
            Some(s) => std::env::set_var(Self::ENV, s),
            None => std::env::remove_var(Self::ENV),
        }
        std::env::set_var("LPMKIT_FIB_HOLD_MS", hold_ms.to_string());
        let f = Self::create_raw(&name, conf);
        std::env::remove_var(Self::ENV);
        std::env::remove_var("LPMKIT_FIB_HOLD_MS");
        f
    }
    fn create_raw(name: &CStr, conf: rte_fib_conf) -> usize;
    fn free(fib: usize);
    fn add(fib: usize, p: Prefix<Self>, nh: u64) -> c_int;
    fn delete(fib: usize, p: Prefix<Self>) -> c_int;
    fn lookup(fib: usize, keys: &[Self], out: &mut [u64]) -> c_int;
    fn scheme(fib: usize) -> String;
    fn sync(fib: usize) -> c_int;
}

// SAFETY (every call below): the handles are tables `create` made and the tests have not
// freed; arrays hold the counts given.
impl Fib for u32 {
    const ENV: &'static str = "LPMKIT_FIB_SCHEME";
    fn create_raw(name: &CStr, mut conf: rte_fib_conf) -> usize {
        unsafe { rte_fib_create(name.as_ptr(), -1, &mut conf) as usize }
    }
    fn free(fib: usize) {
        unsafe { rte_fib_free(fib as *mut rte_fib) }
    }
    fn add(fib: usize, p: Prefix<u32>, nh: u64) -> c_int {
        unsafe { rte_fib_add(fib as *mut rte_fib, p.addr(), p.len(), nh) }
    }
    fn delete(fib: usize, p: Prefix<u32>) -> c_int {
        unsafe { rte_fib_delete(fib as *mut rte_fib, p.addr(), p.len()) }
    }
    fn lookup(fib: usize, keys: &[u32], out: &mut [u64]) -> c_int {
        let (ips, n) = (keys.as_ptr().cast_mut(), keys.len() as c_int);
        unsafe { rte_fib_lookup_bulk(fib as *mut rte_fib, ips, out.as_mut_ptr(), n) }
    }
    fn scheme(fib: usize) -> String {
        c_str(unsafe { lpmkit_rte_fib_scheme(fib as *mut rte_fib) })
    }
    fn sync(fib: usize) -> c_int {
        unsafe { lpmkit_rte_fib_sync(fib as *mut rte_fib) }
    }
}

impl Fib for u128 {
    const ENV: &'static str = "LPMKIT_FIB6_SCHEME";
    fn create_raw(name: &CStr, mut conf: rte_fib_conf) -> usize {
        unsafe { rte_fib6_create(name.as_ptr(), -1, &mut conf) as usize }
    }
    fn free(fib: usize) {
        unsafe { rte_fib6_free(fib as *mut rte_fib6) }
    }
    fn add(fib: usize, p: Prefix<u128>, nh: u64) -> c_int {
        let ip = p.addr().to_be_bytes();
        unsafe { rte_fib6_add(fib as *mut rte_fib6, ip.as_ptr(), p.len(), nh) }
    }
    fn delete(fib: usize, p: Prefix<u128>) -> c_int {
        let ip = p.addr().to_be_bytes();
        unsafe { rte_fib6_delete(fib as *mut rte_fib6, ip.as_ptr(), p.len()) }
    }
    fn lookup(fib: usize, keys: &[u128], out: &mut [u64]) -> c_int {
        let mut ips: Vec<[u8; 16]> = keys.iter().map(|k| k.to_be_bytes()).collect();
        let (p, n) = (ips.as_mut_ptr(), keys.len() as c_int);
        unsafe { rte_fib6_lookup_bulk(fib as *mut rte_fib6, p, out.as_mut_ptr(), n) }
    }
    fn scheme(fib: usize) -> String {
        c_str(unsafe { lpmkit_rte_fib6_scheme(fib as *mut rte_fib6) })
    }
    fn sync(fib: usize) -> c_int {
        unsafe { lpmkit_rte_fib6_sync(fib as *mut rte_fib6) }
    }
}

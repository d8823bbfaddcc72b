//! What the library takes from the DPDK it runs under, found at run time with `dlsym`
//! rather than linked: `rte_errno` (the calling thread's instance of `per_lcore__rte_errno`,
//! which `librte_eal` exports) and `rte_log`. Linking nothing of DPDK's keeps the library
//! loadable into any process — an application linked with DPDK, where the application's
//! `rte_errno` is the one set, as well as a program without DPDK (a test, a C program that
//! only wants the API), where errors go to a thread-local `rte_errno` of the library's own
//! ([`rte_errno`]) and messages to standard error.

use core::ffi::{c_char, c_int, c_void};
use std::cell::Cell;
use std::ffi::CString;
use std::sync::OnceLock;

thread_local! {
    /// The calling thread's `rte_errno`: DPDK's, or [`OWN`]; null until first needed.
    static ERRNO: Cell<*mut c_int> = const { Cell::new(core::ptr::null_mut()) };
    /// The thread's `rte_errno` when no DPDK is loaded.
    static OWN: Cell<c_int> = const { Cell::new(0) };
}

/// The address of `name` in the process (the calling thread's instance of a thread-local
/// variable), or null.
fn symbol(name: &core::ffi::CStr) -> *mut c_void {
    // SAFETY: `dlsym` with `RTLD_DEFAULT` and a NUL-terminated name only reads the loaded
    // objects' symbol tables; for a TLS symbol glibc returns this thread's instance.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) }
}

fn errno_ptr() -> *mut c_int {
    ERRNO.with(|p| {
        if p.get().is_null() {
            let dpdk = symbol(c"per_lcore__rte_errno").cast::<c_int>();
            p.set(if dpdk.is_null() {
                OWN.with(|o| o.as_ptr())
            } else {
                dpdk
            });
        }
        p.get()
    })
}

/// Sets the calling thread's `rte_errno`.
pub fn set_rte_errno(e: c_int) {
    // SAFETY: the calling thread's `per_lcore__rte_errno` (DPDK's thread-local `int`) or
    // this thread's `OWN`, both live as long as the thread.
    unsafe { errno_ptr().write(e) }
}

/// The calling thread's `rte_errno` as this library sees it (DPDK's when it is loaded).
pub fn rte_errno() -> c_int {
    // SAFETY: as in `set_rte_errno`.
    unsafe { errno_ptr().read() }
}

/// `RTE_LOG_INFO` and `RTE_LOG_WARNING` of `rte_log.h`.
const RTE_LOG_INFO: u32 = 7;
const RTE_LOG_WARNING: u32 = 5;

type RteLog = unsafe extern "C" fn(u32, u32, *const c_char, ...) -> c_int;
type RteLogRegister = unsafe extern "C" fn(*const c_char, u32) -> c_int;

/// DPDK's `rte_log` and the log type `lib.lpmkit` registered with it, if DPDK is loaded.
fn dpdk_log() -> Option<(RteLog, u32)> {
    static LOG: OnceLock<Option<(usize, u32)>> = OnceLock::new();
    let found = LOG.get_or_init(|| {
        let log = symbol(c"rte_log");
        let register = symbol(c"rte_log_register_type_and_pick_level");
        if log.is_null() || register.is_null() {
            return None;
        }
        // SAFETY: DPDK's `int rte_log_register_type_and_pick_level(const char *name,
        // uint32_t level_def)`, found above.
        let register: RteLogRegister = unsafe { core::mem::transmute(register) };
        // SAFETY: a NUL-terminated name.
        let kind = unsafe { register(c"lib.lpmkit".as_ptr(), RTE_LOG_INFO) };
        (kind >= 0).then_some((log as usize, kind as u32))
    });
    // SAFETY: the address of DPDK's `int rte_log(uint32_t, uint32_t, const char *, ...)`.
    found.map(|(f, kind)| (unsafe { core::mem::transmute::<usize, RteLog>(f) }, kind))
}

fn log(level: u32, msg: &str) {
    let line = CString::new(format!("lpmkit: {msg}\n").replace('\0', " ")).unwrap_or_default();
    match dpdk_log() {
        // SAFETY: `rte_log` with a "%s" format and one NUL-terminated string.
        Some((rte_log, kind)) => unsafe {
            rte_log(level, kind, c"%s".as_ptr(), line.as_ptr());
        },
        None => eprint!("{}", line.to_string_lossy()),
    }
}

/// Logs `msg` at DPDK's INFO level (type `lib.lpmkit`), or to standard error.
pub fn info(msg: &str) {
    log(RTE_LOG_INFO, msg);
}

/// Logs `msg` at DPDK's WARNING level, or to standard error.
pub fn warn(msg: &str) {
    log(RTE_LOG_WARNING, msg);
}

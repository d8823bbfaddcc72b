//! DPDK's `rte_fib` and `rte_fib6` API served by lpmkit: `liblpmkit_rte_fib.so` exports
//! every function of DPDK 22.11's `rte_fib.h` and `rte_fib6.h` with DPDK's prototypes,
//! semantics, error codes and symbol version (`DPDK_23`), so an unmodified DPDK
//! application uses lpmkit's lookups either way:
//!
//! * `LD_PRELOAD=liblpmkit_rte_fib.so ./app …`: the preloaded library's definitions come
//!   first, so the application's calls reach lpmkit while the rest of DPDK is DPDK's;
//! * linked in place of `librte_fib` (`-llpmkit_rte_fib` before DPDK's libraries, or a copy
//!   named `librte_fib.so.23` earlier in the library path).
//!
//! The page "lpmkit in a DPDK application" (`docs/dpdk.md`) is the guide; the header
//! `include/lpmkit_rte_fib.h` states the guarantees and what differs from DPDK. In short:
//!
//! * Each table is served by an lpmkit scheme, chosen when it is first looked up
//!   ([`scheme`]): by default (`auto`), the scheme with the fastest lookups at DPDK's
//!   bursts while the table is only looked up (`dir24-8`, `spider16w`), and from its first
//!   change under lookups on, the scheme [`lpmkit::facade::RouteTable`] chooses for a
//!   table that changes (DXR by size, `poptrie16`: updated in place); or the scheme
//!   `LPMKIT_FIB_SCHEME` / `LPMKIT_FIB6_SCHEME` names at `rte_fib_create`. Each choice is
//!   logged once through DPDK's log (type `lib.lpmkit`) or standard error.
//! * `rte_fib_add`/`delete` may run while other threads run `rte_fib_lookup_bulk` on the
//!   same table: lookups never lock and see the table before or after each change
//!   ([`table`]). DPDK requires the application to serialise them.
//! * No huge pages and no `num_tbl8`: memory comes from the process's heap and grows with
//!   the table; `max_routes` is the one limit.
//! * DPDK's checks and error codes, including where DPDK's are accidents of its layout
//!   (a name is unique across `rte_fib` and `rte_fib6`, `max_routes` exceeded is
//!   `-ENOMEM`); where DPDK would crash (NULL handles and arrays) the calls fail with
//!   `-EINVAL` ([`api`]).
//!
//! The Rust modules: [`abi`] (DPDK's types, checked against the installed headers by
//! `build.rs`), [`api`] (the entry points' logic, both families), [`fib4`] and [`fib6`]
//! (the C functions), [`table`] (one FIB: stages, changes, thread-local readers),
//! [`scheme`] (which scheme serves it, and when that changes), [`values`] (next-hop
//! values by id), [`names`], [`eal`] (`rte_errno` and `rte_log`).

#![allow(non_camel_case_types)]

pub mod abi;
pub mod api;
pub mod eal;
pub mod fib4;
pub mod fib6;
pub mod names;
pub mod scheme;
pub mod table;
pub mod values;

pub use abi::{rte_fib6_conf, rte_fib_conf};
pub use fib4::{rte_fib, rte_rib};
pub use fib6::{rte_fib6, rte_rib6};

/// Exports each function under its C name as a global symbol of its own: a one-instruction
/// trampoline, written in assembly, that jumps to the Rust function (an alias would not
/// do: the function may be in another object file). The names are then not among the
/// symbols rustc exports itself (which it gives no version), so the version script
/// `rte_fib.map` gives them theirs: `DPDK_23` for DPDK's, `LPMKIT_0` for lpmkit's
/// additions. Unit tests leave them out (their binaries may link DPDK's `librte_fib` too).
macro_rules! export {
    ($($name:literal => $f:path,)*) => {
        $(
            #[cfg(all(target_os = "linux", not(test)))]
            core::arch::global_asm!(
                concat!(".pushsection .text.", $name, ",\"ax\",%progbits"),
                concat!(".globl ", $name),
                concat!(".type ", $name, ", %function"),
                ".p2align 4",
                concat!($name, ":"),
                jump!(),
                concat!(".size ", $name, ", . - ", $name),
                ".popsection",
                f = sym $f,
            );
        )*
    };
}

/// The trampoline's jump to `{f}`.
#[cfg(target_arch = "x86_64")]
#[cfg_attr(test, allow(unused_macros))]
macro_rules! jump {
    () => {
        "jmp {f}"
    };
}
#[cfg(target_arch = "aarch64")]
#[cfg_attr(test, allow(unused_macros))]
macro_rules! jump {
    () => {
        "b {f}"
    };
}

export! {
    "rte_fib_create" => fib4::create,
    "rte_fib_find_existing" => fib4::find_existing,
    "rte_fib_free" => fib4::free,
    "rte_fib_add" => fib4::add,
    "rte_fib_delete" => fib4::delete,
    "rte_fib_lookup_bulk" => fib4::lookup_bulk,
    "rte_fib_get_dp" => fib4::get_dp,
    "rte_fib_get_rib" => fib4::get_rib,
    "rte_fib_select_lookup" => fib4::select_lookup,
    "rte_fib6_create" => fib6::create,
    "rte_fib6_find_existing" => fib6::find_existing,
    "rte_fib6_free" => fib6::free,
    "rte_fib6_add" => fib6::add,
    "rte_fib6_delete" => fib6::delete,
    "rte_fib6_lookup_bulk" => fib6::lookup_bulk,
    "rte_fib6_get_dp" => fib6::get_dp,
    "rte_fib6_get_rib" => fib6::get_rib,
    "rte_fib6_select_lookup" => fib6::select_lookup,
    "lpmkit_rte_fib_scheme" => fib4::scheme,
    "lpmkit_rte_fib6_scheme" => fib6::scheme,
    "lpmkit_rte_fib_sync" => fib4::sync,
    "lpmkit_rte_fib6_sync" => fib6::sync,
}

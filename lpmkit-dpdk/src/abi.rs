//! DPDK 22.11's types as this library receives them: the configuration structs of
//! `rte_fib_create` and `rte_fib6_create`, and the values of their enums. The numbers come
//! from `build.rs`, which checks each one against the installed headers; the structs below
//! are asserted against them at compile time.

#![allow(non_camel_case_types)]

use core::ffi::{c_int, c_uint};
use core::mem::{align_of, offset_of, size_of};

/// The ABI facts `build.rs` checked against `rte_fib.h` and `rte_fib6.h`.
pub mod pinned {
    include!(concat!(env!("OUT_DIR"), "/abi.rs"));
}
pub use pinned::*;

/// `struct rte_fib_conf`'s union member `dir24_8` (and `struct rte_fib6_conf`'s `trie`):
/// the entry size and the number of `tbl8` groups.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TableConf {
    /// `enum rte_fib_dir24_8_nh_sz` / `enum rte_fib_trie_nh_sz`: next hops of
    /// `8 << nh_sz` bits, one of which DPDK keeps for itself.
    pub nh_sz: c_int,
    /// `num_tbl8`: validated as DPDK does, otherwise unused (lpmkit has no `tbl8` pool).
    pub num_tbl8: u32,
}

/// `struct rte_fib_conf` (and, field for field, `struct rte_fib6_conf`). Enum fields are
/// read as `c_int`: a caller may store any value in them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct rte_fib_conf {
    /// `enum rte_fib_type` (`RTE_FIB_DUMMY`, `RTE_FIB_DIR24_8`).
    pub kind: c_int,
    /// What a lookup answers where no route matches.
    pub default_nh: u64,
    /// The most routes the table may hold.
    pub max_routes: c_int,
    /// `rib_ext_sz`: the size of DPDK's RIB node extension (unused).
    pub rib_ext_sz: c_uint,
    /// `dir24_8` (`trie` for IPv6).
    pub table: TableConf,
}

/// `struct rte_fib6_conf`: the same layout, `enum rte_fib6_type` in `kind`.
pub type rte_fib6_conf = rte_fib_conf;

const _: () = {
    assert!(size_of::<rte_fib_conf>() == FIB_CONF_SIZE);
    assert!(align_of::<rte_fib_conf>() == FIB_CONF_ALIGN);
    assert!(offset_of!(rte_fib_conf, kind) == FIB_CONF_TYPE);
    assert!(offset_of!(rte_fib_conf, default_nh) == FIB_CONF_DEFAULT_NH);
    assert!(offset_of!(rte_fib_conf, max_routes) == FIB_CONF_MAX_ROUTES);
    assert!(offset_of!(rte_fib_conf, rib_ext_sz) == FIB_CONF_RIB_EXT_SZ);
    assert!(offset_of!(rte_fib_conf, table) + offset_of!(TableConf, nh_sz) == FIB_CONF_NH_SZ);
    assert!(offset_of!(rte_fib_conf, table) + offset_of!(TableConf, num_tbl8) == FIB_CONF_NUM_TBL8);
    assert!(size_of::<rte_fib6_conf>() == FIB6_CONF_SIZE);
    assert!(align_of::<rte_fib6_conf>() == FIB6_CONF_ALIGN);
    assert!(offset_of!(rte_fib6_conf, kind) == FIB6_CONF_TYPE);
    assert!(offset_of!(rte_fib6_conf, default_nh) == FIB6_CONF_DEFAULT_NH);
    assert!(offset_of!(rte_fib6_conf, max_routes) == FIB6_CONF_MAX_ROUTES);
    assert!(offset_of!(rte_fib6_conf, rib_ext_sz) == FIB6_CONF_RIB_EXT_SZ);
    assert!(offset_of!(rte_fib6_conf, table) + offset_of!(TableConf, nh_sz) == FIB6_CONF_NH_SZ);
    assert!(
        offset_of!(rte_fib6_conf, table) + offset_of!(TableConf, num_tbl8) == FIB6_CONF_NUM_TBL8
    );
    assert!(size_of::<c_int>() == ENUM_SIZE && size_of::<c_int>() == ENUM6_SIZE);
};

/// The largest next hop an entry of `8 << nh_sz` bits holds (DPDK keeps one bit to mark
/// extended entries): DPDK's `get_max_nh`.
pub fn max_next_hop(nh_sz: c_int) -> u64 {
    let bits = 8u32 << nh_sz;
    (1u64 << (bits - 1)) - 1
}

/// The `rte_errno` values this library sets and returns (Linux's).
pub mod errno {
    pub use libc::{EEXIST, EINVAL, ENAMETOOLONG, ENOENT, ENOMEM, ENOTSUP};
}

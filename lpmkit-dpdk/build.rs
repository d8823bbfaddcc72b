//! Build script: the ABI this library implements, pinned once and checked against the
//! installed DPDK headers.
//!
//! * [`ABI`] lists every struct size and field offset, enum value, constant and function
//!   prototype of DPDK 22.11's `rte_fib.h` and `rte_fib6.h` the library relies on. It is
//!   written out twice: as Rust constants (`$OUT_DIR/abi.rs`, which `src/abi.rs` asserts its
//!   `#[repr(C)]` structs against at compile time) and as C `_Static_assert`s compiled
//!   against the installed headers (`pkg-config --cflags libdpdk`). A header that disagrees
//!   fails the build. Without DPDK's headers the C half is skipped with a warning, unless
//!   `LPMKIT_REQUIRE_DPDK` is set (as CI sets it), which makes that an error.
//! * The shared library gets `rte_fib.map` as its linker version script: DPDK's symbols
//!   carry DPDK's version tag (`DPDK_23`), lpmkit's own additions `LPMKIT_0`.

use std::path::PathBuf;
use std::process::Command;

/// One fact of the ABI: the Rust constant's name and type, the C expression, its value.
struct Fact {
    rust: &'static str,
    ty: &'static str,
    c: &'static str,
    value: i64,
}

const fn fact(rust: &'static str, ty: &'static str, c: &'static str, value: i64) -> Fact {
    Fact { rust, ty, c, value }
}

/// The layouts and values of DPDK 22.11 (`struct rte_fib_conf` and `struct rte_fib6_conf`
/// are 32 bytes: an enum, the default next hop, two ints and a union of an enum and a
/// `uint32_t`).
const ABI: &[Fact] = &[
    fact("FIB_CONF_SIZE", "usize", "sizeof(struct rte_fib_conf)", 32),
    fact(
        "FIB_CONF_ALIGN",
        "usize",
        "_Alignof(struct rte_fib_conf)",
        8,
    ),
    fact(
        "FIB_CONF_TYPE",
        "usize",
        "offsetof(struct rte_fib_conf, type)",
        0,
    ),
    fact(
        "FIB_CONF_DEFAULT_NH",
        "usize",
        "offsetof(struct rte_fib_conf, default_nh)",
        8,
    ),
    fact(
        "FIB_CONF_MAX_ROUTES",
        "usize",
        "offsetof(struct rte_fib_conf, max_routes)",
        16,
    ),
    fact(
        "FIB_CONF_RIB_EXT_SZ",
        "usize",
        "offsetof(struct rte_fib_conf, rib_ext_sz)",
        20,
    ),
    fact(
        "FIB_CONF_NH_SZ",
        "usize",
        "offsetof(struct rte_fib_conf, dir24_8.nh_sz)",
        24,
    ),
    fact(
        "FIB_CONF_NUM_TBL8",
        "usize",
        "offsetof(struct rte_fib_conf, dir24_8.num_tbl8)",
        28,
    ),
    fact(
        "FIB6_CONF_SIZE",
        "usize",
        "sizeof(struct rte_fib6_conf)",
        32,
    ),
    fact(
        "FIB6_CONF_ALIGN",
        "usize",
        "_Alignof(struct rte_fib6_conf)",
        8,
    ),
    fact(
        "FIB6_CONF_TYPE",
        "usize",
        "offsetof(struct rte_fib6_conf, type)",
        0,
    ),
    fact(
        "FIB6_CONF_DEFAULT_NH",
        "usize",
        "offsetof(struct rte_fib6_conf, default_nh)",
        8,
    ),
    fact(
        "FIB6_CONF_MAX_ROUTES",
        "usize",
        "offsetof(struct rte_fib6_conf, max_routes)",
        16,
    ),
    fact(
        "FIB6_CONF_RIB_EXT_SZ",
        "usize",
        "offsetof(struct rte_fib6_conf, rib_ext_sz)",
        20,
    ),
    fact(
        "FIB6_CONF_NH_SZ",
        "usize",
        "offsetof(struct rte_fib6_conf, trie.nh_sz)",
        24,
    ),
    fact(
        "FIB6_CONF_NUM_TBL8",
        "usize",
        "offsetof(struct rte_fib6_conf, trie.num_tbl8)",
        28,
    ),
    fact("ENUM_SIZE", "usize", "sizeof(enum rte_fib_type)", 4),
    fact("ENUM6_SIZE", "usize", "sizeof(enum rte_fib6_type)", 4),
    fact("RTE_FIB_MAXDEPTH", "u8", "RTE_FIB_MAXDEPTH", 32),
    fact("RTE_FIB6_MAXDEPTH", "u8", "RTE_FIB6_MAXDEPTH", 128),
    fact(
        "RTE_FIB6_IPV6_ADDR_SIZE",
        "usize",
        "RTE_FIB6_IPV6_ADDR_SIZE",
        16,
    ),
    fact("RTE_FIB_DUMMY", "i32", "RTE_FIB_DUMMY", 0),
    fact("RTE_FIB_DIR24_8", "i32", "RTE_FIB_DIR24_8", 1),
    fact("RTE_FIB_DIR24_8_1B", "i32", "RTE_FIB_DIR24_8_1B", 0),
    fact("RTE_FIB_DIR24_8_8B", "i32", "RTE_FIB_DIR24_8_8B", 3),
    fact("RTE_FIB6_DUMMY", "i32", "RTE_FIB6_DUMMY", 0),
    fact("RTE_FIB6_TRIE", "i32", "RTE_FIB6_TRIE", 1),
    fact("RTE_FIB6_TRIE_2B", "i32", "RTE_FIB6_TRIE_2B", 1),
    fact("RTE_FIB6_TRIE_8B", "i32", "RTE_FIB6_TRIE_8B", 3),
    fact("RTE_FIB_LOOKUP_DEFAULT", "i32", "RTE_FIB_LOOKUP_DEFAULT", 0),
    fact(
        "RTE_FIB_LOOKUP_LAST",
        "i32",
        "RTE_FIB_LOOKUP_DIR24_8_VECTOR_AVX512",
        4,
    ),
    fact(
        "RTE_FIB6_LOOKUP_DEFAULT",
        "i32",
        "RTE_FIB6_LOOKUP_DEFAULT",
        0,
    ),
    fact(
        "RTE_FIB6_LOOKUP_LAST",
        "i32",
        "RTE_FIB6_LOOKUP_TRIE_VECTOR_AVX512",
        2,
    ),
];

/// The prototypes the library's entry points implement, as C function-pointer types.
const PROTOTYPES: &[(&str, &str)] = &[
    (
        "rte_fib_create",
        "struct rte_fib *(*)(const char *, int, struct rte_fib_conf *)",
    ),
    ("rte_fib_find_existing", "struct rte_fib *(*)(const char *)"),
    ("rte_fib_free", "void (*)(struct rte_fib *)"),
    (
        "rte_fib_add",
        "int (*)(struct rte_fib *, uint32_t, uint8_t, uint64_t)",
    ),
    (
        "rte_fib_delete",
        "int (*)(struct rte_fib *, uint32_t, uint8_t)",
    ),
    (
        "rte_fib_lookup_bulk",
        "int (*)(struct rte_fib *, uint32_t *, uint64_t *, int)",
    ),
    ("rte_fib_get_dp", "void *(*)(struct rte_fib *)"),
    ("rte_fib_get_rib", "struct rte_rib *(*)(struct rte_fib *)"),
    (
        "rte_fib_select_lookup",
        "int (*)(struct rte_fib *, enum rte_fib_lookup_type)",
    ),
    (
        "rte_fib6_create",
        "struct rte_fib6 *(*)(const char *, int, struct rte_fib6_conf *)",
    ),
    (
        "rte_fib6_find_existing",
        "struct rte_fib6 *(*)(const char *)",
    ),
    ("rte_fib6_free", "void (*)(struct rte_fib6 *)"),
    (
        "rte_fib6_add",
        "int (*)(struct rte_fib6 *, const uint8_t *, uint8_t, uint64_t)",
    ),
    (
        "rte_fib6_delete",
        "int (*)(struct rte_fib6 *, const uint8_t *, uint8_t)",
    ),
    (
        "rte_fib6_lookup_bulk",
        "int (*)(struct rte_fib6 *, uint8_t (*)[16], uint64_t *, int)",
    ),
    ("rte_fib6_get_dp", "void *(*)(struct rte_fib6 *)"),
    (
        "rte_fib6_get_rib",
        "struct rte_rib6 *(*)(struct rte_fib6 *)",
    ),
    (
        "rte_fib6_select_lookup",
        "int (*)(struct rte_fib6 *, enum rte_fib6_lookup_type)",
    ),
];

fn main() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=rte_fib.map");
    println!("cargo:rerun-if-env-changed=LPMKIT_REQUIRE_DPDK");
    println!("cargo:rerun-if-env-changed=CC");

    let mut rust = String::from("// Generated by build.rs from its ABI table.\n");
    for f in ABI {
        rust += &format!("pub const {}: {} = {};\n", f.rust, f.ty, f.value);
    }
    std::fs::write(out.join("abi.rs"), rust).unwrap();

    check_headers(&out);

    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
            dir.join("rte_fib.map").display()
        );
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liblpmkit_rte_fib.so");
    }
}

/// Compiles the `_Static_assert`s of [`ABI`] and [`PROTOTYPES`] against the installed
/// headers (syntax only: nothing is linked or run).
fn check_headers(out: &std::path::Path) {
    let required = std::env::var_os("LPMKIT_REQUIRE_DPDK").is_some();
    let cflags = Command::new(std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
        .args(["--cflags", "libdpdk"])
        .output();
    let cflags = match cflags {
        Ok(o) if o.status.success() => String::from_utf8(o.stdout).unwrap(),
        _ => {
            assert!(
                !required,
                "LPMKIT_REQUIRE_DPDK is set but `pkg-config --cflags libdpdk` fails: install \
                 DPDK's headers (Debian: dpdk-dev)"
            );
            println!(
                "cargo:warning=DPDK's headers not found (pkg-config libdpdk): the rte_fib \
                 layouts are not checked against them"
            );
            return;
        }
    };
    let mut c = String::from(
        "/* Generated by lpmkit-dpdk's build.rs: the ABI it implements, checked against the \
         installed DPDK headers. */\n#include <stddef.h>\n#include <stdint.h>\n\
         #include <rte_fib.h>\n#include <rte_fib6.h>\n",
    );
    for f in ABI {
        c += &format!(
            "_Static_assert(({}) == {}, \"lpmkit-dpdk expects {} == {} (build.rs ABI)\");\n",
            f.c, f.value, f.c, f.value
        );
    }
    for (name, ty) in PROTOTYPES {
        c += &format!(
            "_Static_assert(__builtin_types_compatible_p(__typeof__(&{name}), {ty}), \
             \"{name} is not `{ty}` (build.rs PROTOTYPES)\");\n"
        );
    }
    let file = out.join("abi_check.c");
    std::fs::write(&file, c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let o = Command::new(&cc)
        .args(["-std=gnu11", "-fsyntax-only", "-Werror"])
        .args(cflags.split_whitespace())
        .arg(&file)
        .output();
    match o {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "the installed DPDK headers disagree with the ABI lpmkit-dpdk implements \
             ({}):\n{}",
            file.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            assert!(
                !required,
                "LPMKIT_REQUIRE_DPDK is set but {cc} cannot run: {e}"
            );
            println!("cargo:warning={cc} cannot run ({e}): the rte_fib layouts are not checked");
        }
    }
}

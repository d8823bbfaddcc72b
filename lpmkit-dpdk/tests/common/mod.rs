//! What the library's integration tests share: the shared library cargo built, the real
//! data, scratch directories, C compilation against the installed DPDK, and the rule
//! for tools a test needs (skip with a message, unless CI's `LPMKIT_REQUIRE_*` says the
//! tool must be there).
#![allow(dead_code)]

pub mod api;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory cargo built this test binary and the library into (`target/release`).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().to_path_buf()
}

/// `liblpmkit_rte_fib.so` as cargo built it beside this test (`cargo build` leaves it
/// in the target directory, `cargo test` in `deps/`: the newer of the two).
pub fn cdylib() -> PathBuf {
    let dir = target_dir();
    [
        dir.join("liblpmkit_rte_fib.so"),
        dir.join("deps/liblpmkit_rte_fib.so"),
    ]
    .into_iter()
    .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
    .max()
    .map(|(_, p)| p)
    .unwrap_or_else(|| panic!("liblpmkit_rte_fib.so not found in {}", dir.display()))
}

/// A fresh scratch directory of this process.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpmkit-dpdk-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Says that the test skips because of `why` — or fails, when `var` (one of CI's
/// `LPMKIT_REQUIRE_*`) is set.
pub fn skip(var: &str, why: &str) {
    assert!(std::env::var_os(var).is_none(), "{var} is set but {why}");
    eprintln!("note: {why}; skipping (with {var}=1 this is a failure)");
}

/// A file of the real data set (`$LPMKIT_DATA`, else `../shared/data` beside the
/// repository), or `None` after saying it is missing (a failure under
/// `LPMKIT_REQUIRE_DATA`).
pub fn data(rel: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let p = dir.join(rel);
    if p.is_file() {
        return Some(p);
    }
    skip(
        "LPMKIT_REQUIRE_DATA",
        &format!("{} is missing", p.display()),
    );
    None
}

/// The routes of the data set's table `rel`, of the family `A` the test asks for (the
/// files are of one family each), or `None` if it is missing (said).
pub fn rib<A: lpmkit::Address>(rel: &str) -> Option<lpmkit::Rib<A>> {
    let path = data(rel)?;
    let rib: Box<dyn std::any::Any> = match lpmkit::io::read_table(&path, &Default::default()) {
        Ok(lpmkit::AnyTable::V4(t)) => Box::new(t.rib),
        Ok(lpmkit::AnyTable::V6(t)) => Box::new(t.rib),
        Err(e) => panic!("{e}"),
    };
    Some(
        *rib.downcast::<lpmkit::Rib<A>>()
            .unwrap_or_else(|_| panic!("{rel} is not of the family asked for")),
    )
}

/// `pkg-config ARGS libdpdk`, split; `None` without DPDK's development files.
pub fn dpdk_flags(args: &[&str]) -> Option<Vec<String>> {
    let o = Command::new("pkg-config")
        .args(args)
        .arg("libdpdk")
        .output()
        .ok()?;
    o.status.success().then(|| {
        String::from_utf8_lossy(&o.stdout)
            .split_whitespace()
            .map(String::from)
            .collect()
    })
}

/// Compiles the C files `sources` into `out` with DPDK's flags, `flags` and then `libs`.
/// Panics with the compiler's message on failure.
pub fn cc(out: &Path, sources: &[PathBuf], flags: &[String], libs: &[String]) {
    let o = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
        .args(["-std=gnu11", "-O1", "-g", "-Wall", "-Wextra", "-Werror"])
        .args(dpdk_flags(&["--cflags"]).unwrap_or_default())
        .args(flags)
        .args(sources)
        .args(libs)
        .arg("-o")
        .arg(out)
        .output()
        .expect("a C compiler (cc) is installed");
    assert!(
        o.status.success(),
        "cc {}: {}",
        out.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The C sources of this crate's tests.
pub fn c_source(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(name)
}

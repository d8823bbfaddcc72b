//! Bad input through the C API (`tests/c/bad_input.c`): NULL handles, names and arrays,
//! depths past 32 and 128, zero-length and overlong names, a name used twice (in either
//! family), next hops too wide for `nh_sz`, `max_routes` exceeded, bad enum values.
//!
//! The same C file runs against DPDK's own `librte_fib` (built with `-DREF_DPDK`: it
//! initialises the EAL without huge pages), which proves that the answers it expects
//! are DPDK's, and against `liblpmkit_rte_fib.so`, directly and under valgrind's memcheck
//! (no invalid access, no definite leak). Without DPDK's development files, a C compiler
//! or valgrind the test says so and skips, unless `LPMKIT_REQUIRE_DPDK` /
//! `LPMKIT_REQUIRE_C_TOOLS` (CI) make that a failure.

mod common;

use std::process::Command;

fn run(cmd: &mut Command) -> String {
    let o = cmd.output().expect("the program runs");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{cmd:?} failed ({}):\n{out}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    out
}

#[test]
fn dpdk_answers_bad_input_as_lpmkit_does_and_lpmkit_survives_it() {
    let Some(libs) = common::dpdk_flags(&["--libs"]) else {
        return common::skip(
            "LPMKIT_REQUIRE_DPDK",
            "no DPDK development files (pkg-config libdpdk)",
        );
    };
    let dir = common::scratch("bad-input");
    let src = common::c_source("bad_input.c");

    // DPDK's answers.
    let reference = dir.join("bad_input_dpdk");
    common::cc(
        &reference,
        std::slice::from_ref(&src),
        &["-DREF_DPDK".into()],
        &libs,
    );
    let out = run(&mut Command::new(&reference));
    assert!(out.contains(", 0 failed"), "{out}");

    // lpmkit's, first in the link order; DPDK's EAL only for `rte_errno`.
    let exe = dir.join("bad_input_lpmkit");
    let lib = common::cdylib();
    common::cc(
        &exe,
        &[src],
        &[format!("-I{}/include", env!("CARGO_MANIFEST_DIR"))],
        &[lib.display().to_string(), "-lrte_eal".into()],
    );
    let out = run(&mut Command::new(&exe));
    assert!(out.contains(", 0 failed"), "{out}");

    match Command::new("valgrind").arg("--version").output() {
        Ok(_) => {
            run(Command::new("valgrind")
                .args(["--error-exitcode=23", "--leak-check=full"])
                .args(["--errors-for-leak-kinds=definite", "-q"])
                .arg(&exe));
        }
        Err(_) => common::skip("LPMKIT_REQUIRE_C_TOOLS", "no valgrind"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

//! What this binary is, for `lpmkit --version`: the version, the commit it was built from,
//! the cargo features it carries, how it was compiled, and the CPU features it detects on
//! this machine and the lookup kernels they let it run. (`-V` prints the version alone.)

use std::sync::LazyLock;

use lpmkit::simd::{Avx2, Avx512, Isa, Popcnt};

/// The text after `lpmkit ` that `--version` prints.
pub static LONG_VERSION: LazyLock<String> = LazyLock::new(long_version);

fn long_version() -> String {
    let rows = [
        ("commit", env!("LPMKIT_BUILD_COMMIT").to_string()),
        ("features", features()),
        (
            "built",
            format!(
                "{}, {}, {}",
                env!("LPMKIT_BUILD_PROFILE"),
                env!("LPMKIT_BUILD_TARGET"),
                env!("LPMKIT_BUILD_RUSTC")
            ),
        ),
        ("compiled for", compiled_for()),
        ("cpu", crate::bench::cpu_model()),
        ("cpu features", cpu_features()),
        ("kernels", kernels()),
    ];
    let mut s = String::from(env!("CARGO_PKG_VERSION"));
    for (key, value) in rows {
        s.push_str(&format!("\n{:<13} {value}", format!("{key}:")));
    }
    s
}

/// The library's cargo features and the command's own (`netlink`: `lpmkit follow`, on
/// Linux).
fn features() -> String {
    let list = |v: Vec<&str>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let mut command = Vec::new();
    if cfg!(all(feature = "netlink", target_os = "linux")) {
        command.push("netlink (follow)");
    }
    if cfg!(feature = "dpdk") {
        command.push("dpdk (dpdk-fib)");
    }
    format!(
        "library: {}; command: {}",
        list(lpmkit::cargo_features()),
        list(command)
    )
}

/// The instruction-set extensions the compiler could assume everywhere (`-C target-cpu`,
/// `-C target-feature`); the SIMD kernels are chosen at run time whatever they are.
fn compiled_for() -> String {
    let assumed: Vec<&str> = [
        ("popcnt", cfg!(target_feature = "popcnt")),
        ("avx2", cfg!(target_feature = "avx2")),
        ("avx512f", cfg!(target_feature = "avx512f")),
    ]
    .into_iter()
    .filter_map(|(name, on)| on.then_some(name))
    .collect();
    let arch = std::env::consts::ARCH;
    if assumed.is_empty() {
        format!("{arch} baseline (SIMD kernels chosen at run time)")
    } else {
        format!(
            "{arch} with {} (SIMD kernels chosen at run time)",
            assumed.join(", ")
        )
    }
}

/// The CPU features the lookup kernels use that this CPU has, whatever the environment
/// allows.
fn cpu_features() -> String {
    let mut found = Vec::new();
    if let Some(avx512) = Avx512::detect() {
        let mut parts = vec!["f", "bw", "dq", "vl"];
        if avx512.vpopcntdq().is_some() {
            parts.push("vpopcntdq");
        }
        if avx512.bitalg().is_some() {
            parts.push("bitalg");
        }
        if avx512.vbmi().is_some() {
            parts.push("vbmi");
        }
        found.push(format!("avx512 ({})", parts.join(", ")));
    }
    if Avx2::detect().is_some() {
        found.push("avx2".into());
    }
    if Popcnt::detect().is_some() {
        found.push("popcnt".into());
    }
    if found.is_empty() {
        "none the kernels use (scalar code only)".into()
    } else {
        found.join(", ")
    }
}

/// The highest kernel level the lookups run here: what the CPU has, under the
/// environment's ceiling (`LPMKIT_FORCE_ISA`, `LPMKIT_FORCE_SCALAR`).
fn kernels() -> String {
    let best = Isa::best_supported();
    let ceiling = Isa::env_ceiling();
    let used = best.min(ceiling);
    let why = if let Some(e) = lpmkit::simd::env_error() {
        format!("capped by the environment: {e}")
    } else if used < best {
        format!("capped at {ceiling} by LPMKIT_FORCE_ISA or LPMKIT_FORCE_SCALAR")
    } else {
        "the best this CPU has".to_string()
    };
    let mut s = format!("{used} ({why})");
    if used == Isa::Avx512 {
        s.push_str("; some schemes run their AVX-512 kernels only with --force-isa avx512");
    }
    s
}

//! The facts of the build that `lpmkit --version` prints and only the build knows: the git
//! commit of the sources (from the repository, or from `.cargo_vcs_info.json` in a package
//! made by `cargo package`), the target and the compiler.

use std::path::Path;
use std::process::Command;

fn main() {
    let commit = vcs_info_commit().or_else(git_commit);
    println!(
        "cargo:rustc-env=LPMKIT_BUILD_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!(
        "cargo:rustc-env=LPMKIT_BUILD_TARGET={}",
        std::env::var("TARGET").unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=LPMKIT_BUILD_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    println!(
        "cargo:rustc-env=LPMKIT_BUILD_RUSTC={}",
        rustc_version.as_deref().unwrap_or("rustc")
    );
    println!("cargo:rerun-if-changed=build.rs");
}

/// The commit a `cargo package` archive was made from (`{"git": {"sha1": "…"}}`), short,
/// `-dirty` when the package was made from uncommitted changes.
fn vcs_info_commit() -> Option<String> {
    let text = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let at = text.find("\"sha1\"")?;
    let rest = &text[at + "\"sha1\"".len()..];
    let start = rest.find('"')? + 1;
    let sha: String = rest[start..]
        .chars()
        .take_while(char::is_ascii_hexdigit)
        .collect();
    let dirty = if text.contains("\"dirty\": true") || text.contains("\"dirty\":true") {
        "-dirty"
    } else {
        ""
    };
    (sha.len() >= 12).then(|| format!("{}{dirty}", &sha[..12]))
}

/// The repository's HEAD commit, short; the build runs again when HEAD moves (the files
/// of HEAD and of the branch it names).
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    // Only files that exist: a missing one would run the build script on every build.
    for path in watched.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    Some(commit)
}

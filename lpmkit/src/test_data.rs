//! Where the unit tests find the real data set: `$LPMKIT_DATA`, else `../shared/data`
//! beside the workspace. Absent, a test says so and passes, unless `LPMKIT_REQUIRE_DATA`
//! is set (as in CI).

use std::path::PathBuf;

/// The data directory, or `None` (with a note) if it is not there.
pub(crate) fn dir() -> Option<PathBuf> {
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    if dir.join("fib").is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("LPMKIT_REQUIRE_DATA").is_none(),
        "LPMKIT_REQUIRE_DATA is set but {} has no fib/",
        dir.display()
    );
    eprintln!(
        "note: no real data at {} (set LPMKIT_DATA); skipping",
        dir.display()
    );
    None
}

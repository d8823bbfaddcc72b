//! lpmkit's integration tests, in one binary (one link, one start): a module per subject.
//!
//! Two tiers. `cargo test --release --workspace` runs the default tier: every registered
//! scheme, on each of its code paths, against the reference `Rib` on every real table (a
//! sample of random keys plus every prefix boundary), the scheme suites, the readers, and
//! one trace replay under checking readers per update model. The long tier —
//! `cargo test --release --workspace -- --ignored` — adds the tests marked
//! `#[ignore = "long tier: …"]`: millions of keys per table, every trace under readers for
//! every in-place scheme, every store of every patch, the long property runs.
//!
//! Real data is found through `common` (`$LPMKIT_DATA`, else `../shared/data` beside the
//! repository): absent, every test that needs it says so and skips; with
//! `LPMKIT_REQUIRE_DATA=1` a missing table fails.

#[path = "../common/mod.rs"]
mod common;

mod bloom;
mod concurrency;
mod differential;
mod dir24_8_v6;
mod dxr;
mod every_state;
mod facade;
mod fpm;
mod io;
mod io_dumps;
mod lulea;
mod miht;
mod obma;
mod poptrie;
mod readme;
mod sail;
mod spider;
mod synth;
mod traffic;

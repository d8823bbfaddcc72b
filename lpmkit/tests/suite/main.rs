//! lpmkit's integration tests, in one binary (one link, one start): a module per subject.
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

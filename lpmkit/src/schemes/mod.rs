//! The lookup schemes, one module each. Every module's docs name the paper section it
//! implements; shared building blocks live in one internal module (`schemes::common`: the range
//! projection, the [`Width`] rule, the arenas of in-place updates).

pub mod bloom;
pub(crate) mod common;
pub mod dir24_8;
#[cfg(all(feature = "dpdk", target_os = "linux"))]
pub mod dpdk;
pub mod dxr;
pub mod lulea;
pub mod miht;
pub mod obma;
pub mod planb;
pub mod poptrie;
pub mod sail;
#[cfg(test)]
mod small_table_tests;
pub mod spider;

#[doc(hidden)]
pub use common::Width;

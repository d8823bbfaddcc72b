//! The differential tests against the reference `Rib` (the suite's `differential` module)
//! in a binary of their own, built only with the `dpdk` feature: CI's DPDK stage runs them
//! with `LPMKIT_DIFFERENTIAL_SCHEMES=dpdk-fib`, and so compiles none of the suite's other
//! modules. The workspace's test command runs the same module in the suite, on every
//! other scheme.
#![cfg(feature = "dpdk")]

mod common;
#[path = "suite/differential.rs"]
mod differential;

//! Optional conversions to and from other crates' types (cargo features `serde`, `ipnet`).

#[cfg(feature = "ipnet")]
mod ipnet_impls;
#[cfg(feature = "serde")]
mod serde_impls;

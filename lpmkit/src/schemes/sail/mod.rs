//! SAIL: the splitting approach to IP lookup of T. Yang, G. Xie, Y. Li, Q. Fu, A. X. Liu,
//! Q. Li and L. Mathy, "Guarantee IP Lookup Performance with FIB Explosion", ACM SIGCOMM
//! 2014 — the SAIL baseline of the OBMA paper (`../shared/papers/obma-overlay-bitmap-
//! updates.txt`, §VII: Fig. 14, 16–20).
//!
//! The SAIL paper is not in the project's paper store and its text could not be retrieved
//! here; this module follows its algorithms as the OBMA paper and public implementations
//! describe them: the authors' release notes (SAIL_L "speed oriented" on CPU, Lulea and
//! Tree Bitmap as comparisons), and M. I. Islam's GPL SAIL_L/SAIL_U ports for Linux and
//! for IPv6 (`tamimcse/Linux` `mypatches/sail*.patch1`, `tamimcse/CP-Trie`
//! `sail_l_ip6.c`, `sail_u_ip6.c`: per-level `C` (chunk ID) and `N` (next hop) arrays,
//! chunks of 256, leaf pushing to the pivot levels, level 16 always present), studied, not
//! copied. Section numbers below are the SAIL paper's as those sources cite them.
//!
//! # Variants (registry: `sail-b`, `sail-u`, `sail-l`, `sail-m`)
//!
//! * **SAIL_B** (§3, [`SailBitmap`] with [`SailBitmapConfig::sail_b`]): the two splits —
//!   finding the prefix length on bitmap arrays `B_0 … B_24` (2^i bits each, "on chip")
//!   and reading the next hop from next-hop arrays `N_0 … N_24` (2^i entries, "off chip");
//!   prefixes longer than 24 pivot-pushed into chunks below their /24, which hold the
//!   levels 25…32 and the /24's pushed next hop.
//! * **SAIL_U** (§4.2, [`SailBitmapConfig::sail_u`]): update-oriented; leaf pushing only to
//!   the pivot levels 16, 24 and 32, the bitmap arrays kept (`B_16`, `B_24`, and in each
//!   chunk `B_32`): a change rewrites at most `2^8` entries of one level.
//! * **SAIL_L** (§4.3, [`SailL`] with [`SailLConfig::sail_l`]): lookup-oriented; pivot
//!   pushing of every prefix to levels 16, 24, 32 with next hops and chunk IDs in one
//!   array per level (BCN16, then chunks of 256 at 24 and 32): at most three accesses,
//!   and most lookups end at level 16 or 24 (the two-level shortcut).
//! * **IPv6** ([`SailLConfig::sail_m`], registry `sail-m`): SAIL_L with pivot levels 16,
//!   24, …, 128 (every 8 bits after the first 16), as the public SAIL IPv6 port does. The
//!   issue names this form after SAIL_M; the SAIL paper's SAIL_M proper is its
//!   multi-FIB (virtual router) variant, which lpmkit does not build. `pivots=` in the
//!   registry settings chooses other pivot levels.
//!
//! # Deliberate differences
//!
//! * Next hops and chunk IDs share one entry (16 or 32 bits by the shared width rule):
//!   values below the next power of two above the largest next hop are next hops, the
//!   rest chunk IDs (`entry.rs`).
//! * SAIL_U's chunks use SAIL_B's chunk layout (512 entries in heap order, of which 257 are
//!   used) so both variants share one implementation.
//! * Updates run in place under concurrent readers ([`crate::sync::InPlace`]): entries are
//!   switch words stored atomically, new chunks are built beside the live ones, retired
//!   chunks are reused after a grace period; SAIL_B/SAIL_U fall back to a full rebuild
//!   for the one store order that cannot be made safe (see `bitmap.rs`).
//! * Lookups in batches interleave 16 keys level by level with prefetching. SAIL_L for
//!   IPv4 runs a three-stage software pipeline over blocks of 64 keys, on AVX2 with one
//!   `vpgatherdd` per level for eight keys (detected at run time; the scalar pipeline is
//!   its twin, `force_scalar`).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod bitmap;
mod entry;
mod pivot;
mod tables;

pub use tables::{SailBitmap, SailBitmapConfig, SailL, SailLConfig};
#[doc(hidden)]
pub use tables::{SailBitmapTable, SailBitmapWriter, SailLTable, SailLWriter};

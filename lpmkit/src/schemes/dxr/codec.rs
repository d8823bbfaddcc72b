//! Next hops in the tables (§3.2): the `Rib`'s ids as they are, or local ids through a
//! next-hop descriptor table when ids exceed 65,535 (most used first, so the 255 most used
//! fit the short format).

use core::sync::atomic::Ordering;
use std::collections::HashMap;

use super::{DxrConfig, DxrTable, NextHopMode, LONG_NEXT_HOP_MAX};
use crate::fib::BuildError;

/// How `Rib` next-hop ids become the ids stored in the tables.
#[derive(Clone, Debug)]
pub(super) struct Codec {
    mode: NextHopMode,
    /// `Rib` id → local id, in [`NextHopMode::Remapped`].
    to_local: HashMap<u32, u32>,
}

impl Codec {
    pub(super) fn mode(&self) -> NextHopMode {
        self.mode
    }

    /// The local id of `Rib` id `global` (0 = no route), if it has one.
    #[inline]
    pub(super) fn local(&self, global: u32) -> Option<u32> {
        match self.mode {
            NextHopMode::Identity => (global <= LONG_NEXT_HOP_MAX).then_some(global),
            NextHopMode::Remapped if global == 0 => Some(0),
            NextHopMode::Remapped => self.to_local.get(&global).copied(),
        }
    }

    /// The local id of `global`, giving it one (appended to the descriptor table of `t`)
    /// if it is new and the table has room; `None` if the layout cannot hold it.
    ///
    /// # Safety
    /// The caller is the one writer of `t`.
    pub(super) unsafe fn add(&mut self, global: u32, t: &DxrTable) -> Option<u32> {
        if let Some(l) = self.local(global) {
            return Some(l);
        }
        let len = t.fill.nh_len.load(Ordering::Relaxed);
        // SAFETY (grow): the one writer (the caller).
        if self.mode == NextHopMode::Identity
            || len > LONG_NEXT_HOP_MAX as usize
            || !unsafe { t.nh_map.grow(len + 1) }
        {
            return None;
        }
        // SAFETY: slot `len` is past every published local id: no reader reads it until a
        // chunk using it is published, after this write.
        unsafe { t.nh_map.write(len, global) };
        t.fill.nh_len.store(len + 1, Ordering::Relaxed);
        self.to_local.insert(global, len as u32);
        Some(len as u32)
    }
}

/// Chooses identity or a descriptor table for the ranges `(first, Rib id)`; returns the
/// codec and the descriptor table (local → `Rib` id; empty for identity).
pub(super) fn choose_next_hops(
    ranges: &[(u32, u32)],
    config: &DxrConfig,
) -> Result<(Codec, Vec<u32>), BuildError> {
    let max = ranges.iter().map(|r| r.1).max().unwrap_or(0);
    let remap = match config.remap_next_hops {
        Some(r) => r,
        None => max > LONG_NEXT_HOP_MAX && config.widen,
    };
    if !remap {
        if max > LONG_NEXT_HOP_MAX {
            return Err(BuildError::NextHopOverflow {
                scheme: config.name(),
                max: LONG_NEXT_HOP_MAX as u64,
                requested: max as u64,
            });
        }
        let codec = Codec {
            mode: NextHopMode::Identity,
            to_local: HashMap::new(),
        };
        return Ok((codec, Vec::new()));
    }
    // Local ids by descending number of ranges, so the most used fit the short format.
    let mut uses: HashMap<u32, u64> = HashMap::new();
    for r in ranges.iter().filter(|r| r.1 != 0) {
        *uses.entry(r.1).or_default() += 1;
    }
    let mut order: Vec<(u32, u64)> = uses.into_iter().collect();
    if order.len() > LONG_NEXT_HOP_MAX as usize {
        return Err(BuildError::CapacityExceeded {
            scheme: config.name(),
            what: "distinct next hops",
            max: LONG_NEXT_HOP_MAX as u64,
            requested: order.len() as u64,
        });
    }
    order.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut nh_map = Vec::with_capacity(order.len() + 1);
    nh_map.push(0);
    let mut to_local = HashMap::with_capacity(order.len());
    for (global, _) in order {
        to_local.insert(global, nh_map.len() as u32);
        nh_map.push(global);
    }
    let codec = Codec {
        mode: NextHopMode::Remapped,
        to_local,
    };
    Ok((codec, nh_map))
}

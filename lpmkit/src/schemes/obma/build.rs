//! Building OBMA's table and writer from the [`Rib`]: the geometry of the variant, the
//! chunk ids each layer needs, the narrowest entry width that holds them, and the fill.

use std::time::Instant;

use super::layout::{self, Layout};
use super::writer::{self, ObmaWriter};
use super::{Geometry, ObmaConfig, ObmaTable, Variant};
use crate::fib::{max_next_hop, BuildError};
use crate::prefix::{Address, Prefix};
use crate::rib::Rib;
use crate::schemes::common::{ms_since, narrowest_built, ByWidth, Width};

/// Chunk ids each layer needs for `rib` (one per prefix at the layer's first level with
/// longer routes below it).
fn chunks_needed<A: Address>(rib: &Rib<A>, g: &Geometry) -> Vec<usize> {
    let tops: Vec<u8> = (0..g.strides.len()).map(|j| g.top(j)).collect();
    let mut last: Vec<Option<Prefix<A>>> = vec![None; tops.len()];
    let mut count = vec![0usize; tops.len()];
    for (p, _) in rib.iter() {
        for (j, &top) in tops.iter().enumerate() {
            if p.len() <= top {
                break;
            }
            let root = Prefix::new_truncating(p.addr(), top);
            if last[j] != Some(root) {
                last[j] = Some(root);
                count[j] += 1;
            }
        }
    }
    count
}

/// Distinct next hops of the routes up to `bits` long (the values a DPA of `bits` bits
/// can hold besides 0).
fn dpa_next_hops<A: Address>(rib: &Rib<A>, bits: u8) -> usize {
    let mut seen = std::collections::HashSet::new();
    for (p, nh) in rib.iter() {
        if p.len() <= bits {
            seen.insert(nh);
        }
    }
    seen.len()
}

/// Builds the table and its writer.
pub(crate) fn build_with<A: Address>(
    rib: &Rib<A>,
    config: &ObmaConfig,
) -> Result<(ObmaTable<A>, ObmaWriter<A>), BuildError> {
    let t0 = Instant::now();
    let name = match config.variant {
        Variant::B => "obma-b",
        Variant::L => "obma-l",
        Variant::S => "obma-s",
    };
    let geometry = config.geometry.clone().unwrap_or_else(|| match A::FAMILY {
        crate::Family::V4 => Geometry::ipv4(),
        crate::Family::V6 => Geometry::ipv6(),
    });
    let total: u32 =
        geometry.dpa_bits as u32 + geometry.strides.iter().map(|&s| s as u32).sum::<u32>();
    if total != A::BITS as u32
        || geometry.dpa_bits > 24
        || geometry.strides.len() > layout::MAX_LAYERS
        || geometry.strides.iter().any(|s| !(3..=8).contains(s))
    {
        return Err(BuildError::InvalidConfig {
            scheme: name.into(),
            reason: format!(
                "partition {geometry:?}: the DPA takes at most 24 bits, at most {} layers of 3..=8 bits each, {} bits in all",
                layout::MAX_LAYERS,
                A::BITS
            ),
        });
    }
    let max = max_next_hop(rib);
    let per_layer = chunks_needed(rib, &geometry);
    let needed = per_layer.iter().copied().max().unwrap_or(0);
    // Below the DPA (the most any layer but the first needs), and the first layer.
    let needed_below = per_layer.iter().skip(1).copied().max().unwrap_or(0);
    let needed0 = per_layer.first().copied().unwrap_or(0);
    let words = (rib.len() * 32).max(1 << 22);
    narrowest_built(config.entry_width, &Width::ALL, |w| {
        // With a DPA dictionary: its slots and layer 0's chunk ids.
        let mut dict: Option<(u32, u32)> = None;
        let (lim, ids) = match w {
            Width::U16 => {
                // Room for next hops later updates bring (up to 4,096 values), leaving
                // the chunk ids the table needs and 0.2% more for growth.
                let spare = (1usize << 16).saturating_sub(needed + needed / 512);
                let roomy = spare.min(4096) as u32;
                if max >= u16::MAX as u32 {
                    return Ok(Err(BuildError::NextHopOverflow {
                        scheme: name.into(),
                        max: u16::MAX as u64 - 1,
                        requested: max as u64,
                    }));
                }
                let lim = roomy.max(max + 1);
                if (1 << 16) - (lim as usize) >= needed {
                    (lim, (1usize << 16) - lim as usize)
                } else {
                    // The next hops and layer 0's chunk ids share only the DPA: the DPA
                    // holds few next hops (those of routes up to `dpa_bits` long), so it
                    // names them through a dictionary of its own, and every other entry
                    // keeps the 16-bit `lim` rule.
                    let below = needed_below + needed_below / 512;
                    let spare = (1usize << 16).saturating_sub(below + max as usize + 1);
                    let lim = max + 1 + (spare / 2).min(4096) as u32;
                    // The DPA's next hops are among those of routes up to `dpa_bits`
                    // long (and 0): that many slots, then half of what is left over
                    // beside layer 0's chunk ids, the other half room for new chunks.
                    let hops = dpa_next_hops(rib, geometry.dpa_bits) + 1;
                    let spare = (1usize << 16).saturating_sub(needed0 + hops);
                    let slots = hops + spare / 2;
                    if (1 << 16) - (lim as usize) < below || spare == 0 {
                        return Ok(Err(BuildError::CapacityExceeded {
                            scheme: name.into(),
                            what: "chunk ids of one layer (16-bit entries)",
                            max: (1 << 16) - lim as u64,
                            requested: needed as u64,
                        }));
                    }
                    dict = Some((slots as u32, ((1usize << 16) - slots) as u32));
                    (lim, (1usize << 16) - lim as usize)
                }
            }
            Width::U32 => {
                let lim = (max + 1).next_power_of_two().max(256);
                if max >= 1 << 31 {
                    return Ok(Err(BuildError::NextHopOverflow {
                        scheme: name.into(),
                        max: (1 << 31) - 1,
                        requested: max as u64,
                    }));
                }
                (lim, (1usize << 26).min((u32::MAX - lim) as usize))
            }
        };
        let no_room = || BuildError::CapacityExceeded {
            scheme: name.into(),
            what: "bytes of address space for the chunk memory",
            max: 0,
            requested: words as u64 * 4,
        };
        let mut writer = ObmaWriter::new(
            config.clone(),
            geometry.dpa_bits,
            geometry.strides.clone(),
            ids as u32,
        );
        if let Some((_, ids0)) = dict {
            writer.id_limit0 = ids0;
        }
        let ids = ids.max(dict.map_or(0, |(_, ids0)| ids0 as usize));
        let dict = dict.map(|(slots, _)| slots);
        let built = match w {
            Width::U16 => {
                let t = Layout::<A, u16>::new(&geometry, config.variant, lim, ids, words, dict)
                    .ok_or_else(no_room)?;
                writer.fill(&t, rib).map(|()| ByWidth::U16(t))
            }
            Width::U32 => {
                let t = Layout::<A, u32>::new(&geometry, config.variant, lim, ids, words, dict)
                    .ok_or_else(no_room)?;
                writer.fill(&t, rib).map(|()| ByWidth::U32(t))
            }
        };
        Ok(match built {
            Ok(layout) => {
                writer.build_ms = ms_since(t0);
                writer.counters = Default::default();
                Ok((ObmaTable { layout }, writer))
            }
            Err(writer::Full) => Err(BuildError::CapacityExceeded {
                scheme: name.into(),
                what: "chunk ids of one layer or chunk memory",
                max: ids as u64,
                requested: needed as u64,
            }),
        })
    })
}

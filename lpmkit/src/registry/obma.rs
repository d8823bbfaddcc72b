//! The OBMA family's settings adapter: `--set` keys to [`schemes::obma::ObmaConfig`].

use super::Settings;
use crate::fib::{BuildError, Fib, IncrementalFib};
use crate::prefix::Address;
use crate::rib::Rib;
use crate::schemes;
use crate::sync::{InPlace, Updater};
use crate::BuildOptions;

pub(super) const OBMA_SETTINGS: &[(&str, &str)] = &[
    ("variant", "b (OBMA_B), l (OBMA_L: one group per chunk, no chunk structure), s (OBMA_S: BIS and sparse chunks)"),
    (
        "grouping",
        "adaptive (the paper's adaptive grouping) or a fixed group index width 0..=5 (Table IV's (0-3-3) … (3-0-3))",
    ),
    ("f0", "adaptive grouping: the first update-count threshold (default 32)"),
    ("beta", "adaptive grouping: the factor between thresholds (default 4)"),
    ("decay", "adaptive grouping: updates between periodic decays, 0 for never (default 1048576)"),
    ("level24", "the 24th-level optimisation: true or false (default true)"),
    ("fig13", "count Fig. 13's 1s at build (Lulea, overlay, BIS greedy and optimal) for `info`: true or false (default false)"),
    ("bis", "OBMA_S's Bit Inversion Sequence search: greedy (Algorithm 2), optimal or off"),
    ("sparse", "OBMA_S's sparse chunks: at most this many entries, 0 for none (OBMA_S-minus)"),
    ("partition", "DPA bits then layer strides, '-'-separated (default 18-6-8; IPv6 16-8-...-8)"),
    ("width", "entry width, 16 or 32 (default: the narrowest that holds the table)"),
];

fn obma_config(o: &BuildOptions) -> Result<schemes::obma::ObmaConfig, BuildError> {
    use schemes::obma::{BisSearch, Grouping, ObmaConfig};
    let s = Settings::new("obma", o, OBMA_SETTINGS)?;
    let bad = |key: &str, v: &str, what: &str| BuildError::InvalidConfig {
        scheme: "obma".into(),
        reason: format!("setting {key}={v:?} is not {what}"),
    };
    let mut c = match s.get::<String>("variant")?.as_deref() {
        None | Some("b") => ObmaConfig::b(),
        Some("l") => ObmaConfig::l(),
        Some("s") => ObmaConfig::s(),
        Some(v) => return Err(bad("variant", v, "b, l or s")),
    };
    match s.get::<String>("grouping")?.as_deref() {
        None => {}
        Some("adaptive") => c.grouping = schemes::obma::ADAPTIVE,
        Some(v) => match v.parse::<u8>() {
            Ok(w) if w <= 5 => c.grouping = Grouping::Fixed(w),
            _ => return Err(bad("grouping", v, "adaptive or a width 0..=5")),
        },
    }
    if let Grouping::Adaptive {
        f0,
        beta,
        decay_updates,
    } = c.grouping
    {
        let f0 = s.get("f0")?.unwrap_or(f0);
        let beta = s.get("beta")?.unwrap_or(beta);
        if f0 == 0 || beta < 2 {
            return Err(bad(
                "f0/beta",
                &format!("{f0}/{beta}"),
                "f0 >= 1 and beta >= 2",
            ));
        }
        c.grouping = Grouping::Adaptive {
            f0,
            beta,
            decay_updates: s.get("decay")?.unwrap_or(decay_updates),
        };
    }
    c.level24 = s.get("level24")?.unwrap_or(c.level24);
    c.fig13 = s.get("fig13")?.unwrap_or(c.fig13);
    match s.get::<String>("bis")?.as_deref() {
        None => {}
        Some("greedy") => c.bis = BisSearch::Greedy,
        Some("optimal") => c.bis = BisSearch::Optimal,
        Some("off") => c.bis = BisSearch::Off,
        Some(v) => return Err(bad("bis", v, "greedy, optimal or off")),
    }
    c.sparse_k = s.get("sparse")?.unwrap_or(c.sparse_k);
    if let Some(p) = s.get::<String>("partition")? {
        let parts: Vec<u8> = p
            .split('-')
            .map(|x| x.trim().parse::<u8>())
            .collect::<Result<_, _>>()
            .map_err(|_| bad("partition", &p, "a '-'-separated list of bit counts"))?;
        let (&dpa_bits, strides) = parts
            .split_first()
            .ok_or_else(|| bad("partition", &p, "a '-'-separated list of bit counts"))?;
        c.geometry = Some(schemes::obma::Geometry {
            dpa_bits,
            strides: strides.to_vec(),
        });
    }
    c.entry_width = s.width("width")?;
    Ok(c)
}

pub(super) fn build_obma<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Fib<A>>, BuildError> {
    Ok(Box::new(schemes::obma::Obma::build(rib, &obma_config(o)?)?))
}

pub(super) fn build_obma_incremental<A: Address>(
    rib: &Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn IncrementalFib<A>>, BuildError> {
    Ok(Box::new(schemes::obma::Obma::build(rib, &obma_config(o)?)?))
}

pub(super) fn build_obma_in_place<A: Address>(
    rib: Rib<A>,
    o: &BuildOptions,
) -> Result<Box<dyn Updater<A>>, BuildError> {
    let fib = schemes::obma::Obma::build(&rib, &obma_config(o)?)?;
    Ok(Box::new(InPlace::new(rib, fib)))
}

//! The measured choice between a table's AVX-512 and AVX2 kernels.
//!
//! Which instance is faster depends on the CPU and on the table, not on the feature bits
//! alone: on one Zen 4, Spider's AVX2 kernels beat its AVX-512 one on every IPv4 table,
//! while on Zen 5 and the Xeons of docs/simd.md the AVX-512 one leads. So where both
//! instances can run and nothing was asked for, [`calibrate`] times them on the table just
//! built and keeps the faster. The registry's builders call it (every table the CLI, the
//! facade and the bindings build); the rebuilds of an updater reuse the first build's
//! choice. The facade's `auto` races its candidate schemes with the same [`race`].

use std::time::{Duration, Instant};

use super::{KernelChoice, Kernels};
use crate::fib::Fib;
use crate::prefix::Address;
use crate::rib::Rib;

/// Tables of fewer routes are not measured: they run the scheme's default
/// ([`KernelChoice::Default`]). Such a table stays in the caches, where the two instances
/// differ least, and a build of it takes less time than measuring would.
pub const CALIBRATE_FROM: usize = 10_000;

/// Keys a measurement samples: one per route drawn, the routes drawn uniformly.
pub(crate) const MEASURED_KEYS: usize = 1 << 15;
/// Keys per timed run: each run is one slice of the sample, so a run does not find the
/// previous one's lines in the cache.
const RUN: usize = 2048;
/// Measuring stops after this time (the keys' sampling not counted) …
const BUDGET: Duration = Duration::from_millis(12);
/// … and after at least this many cycles (a round of runs per contender) …
const MIN_CYCLES: usize = 4;
/// … or after this many, whatever the time.
const MAX_CYCLES: usize = 2048;
/// The other instance (or candidate) is taken only if it is this much faster than the
/// default one, so that the noise of a short measurement does not move a table off a
/// default measured at length.
pub(crate) const MARGIN: f64 = 0.03;

/// Chooses between `fib`'s AVX-512 and AVX2 kernels by timing both on the same keys (for
/// IPv4 uniformly random ones, for IPv6 ones inside the routes of `rib`, the table's
/// source), and records the rates
/// ([`KernelChoice::Measured`]). Does nothing for a scheme with one SIMD path, a path
/// asked for (`BuildOptions::isa`, `LPMKIT_FORCE_ISA`), a table of fewer than
/// [`CALIBRATE_FROM`] routes, or when the environment sets `LPMKIT_CALIBRATE=0` (then
/// every table runs its scheme's default: the same path on every run).
///
/// The measurement takes 12–17 ms: pairs of runs on the same keys, the order alternating,
/// until 12 ms have passed; the default instance is kept unless the other is more than 3 %
/// faster (the median of the time ratios of two pairs at a time).
///
/// ```
/// use lpmkit::{BuildOptions, Fib, Ipv4, NextHop, Rib};
/// let mut rib = Rib::<Ipv4>::new();
/// for i in 0..20_000u32 {
///     rib.insert(lpmkit::Prefix::new_truncating(i << 12, 20), NextHop::new(1 + i % 7).unwrap());
/// }
/// let mut fib = lpmkit::registry::find("spider16w").unwrap()
///     .build(&rib, &BuildOptions::default())?;
/// // The registry has already measured (where the CPU has both instances); again:
/// lpmkit::simd::calibrate(&mut fib, &rib);
/// println!("{} ({:?})", fib.implementation(), fib.kernel_choice());
/// # Ok::<(), lpmkit::BuildError>(())
/// ```
pub fn calibrate<A: Address, F: Fib<A> + ?Sized>(fib: &mut F, rib: &Rib<A>) {
    let Some(k) = fib.kernels_mut() else {
        return;
    };
    if !k.choosable() || rib.len() < CALIBRATE_FROM || !enabled() {
        return;
    }
    let t0 = Instant::now();
    // Contender 0 is the default instance, 1 the other.
    let default_avx512 = k.avx512.is_some();
    let rates = race(rib, 2, Pace::KERNELS, |c, keys, out| {
        let avx512 = (c == 0) == default_avx512;
        fib.kernels_mut().expect("checked above").run_avx512(avx512);
        fib.lookup_batch(keys, out);
    });
    let avx512 = default_avx512 != (rates[1].relative > 1.0 + MARGIN);
    let (r512, r2) = if default_avx512 {
        (rates[0], rates[1])
    } else {
        (rates[1], rates[0])
    };
    let k = fib.kernels_mut().expect("checked above");
    k.run_avx512(avx512);
    k.choice = KernelChoice::Measured {
        avx512_mlps: r512.mlps,
        avx2_mlps: r2.mlps,
        micros: t0.elapsed().as_micros().min(u32::MAX as u128) as u32,
    };
}

/// How a [`race`] runs: keys per run, the time it goes on for, the fewest cycles.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pace {
    run: usize,
    budget: Duration,
    min_cycles: usize,
}

impl Pace {
    /// Two instances of one table's kernels: short runs, many of them (the two share the
    /// table's lines, so switching often costs neither).
    pub(crate) const KERNELS: Pace = Pace {
        run: RUN,
        budget: BUDGET,
        min_cycles: MIN_CYCLES,
    };
    /// Different schemes (`auto`'s candidates): runs of 131,072 keys, long enough (about a
    /// millisecond) that each finds its own table in the caches as it would running alone,
    /// not the lines the others left.
    pub(crate) const SCHEMES: Pace = Pace {
        run: 1 << 17,
        budget: Duration::from_millis(90),
        min_cycles: 3,
    };
}

/// A contender's result in a [`race`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rate {
    /// Its speed relative to contender 0's (the median over the cycles of contender 0's
    /// time over its own on the same keys): above 1, faster.
    pub(crate) relative: f64,
    /// Its median rate over the runs, millions of lookups per second.
    pub(crate) mlps: f32,
}

/// Times `contenders` lookup paths (`lookup(c, keys, out)` looks `keys` up on path `c`)
/// on the same keys: for IPv4, uniformly random addresses drawn afresh for every round
/// (the `rnd` traffic of the papers, which on a full table mostly hits routes); for IPv6,
/// where such keys miss every route, [`MEASURED_KEYS`] addresses inside the routes of
/// `rib`, drawn once.
///
/// A round runs every contender on one run of the pace's keys, in an order rotated by one
/// each round, so that in a cycle of `contenders` rounds each takes each place once (a
/// later run finds the lines the earlier ones brought in); the ratio of two contenders'
/// times over a cycle cancels that, and the median over the cycles leaves out those a
/// burst of the machine's other work slowed. Cycles go on until the pace's budget has
/// passed (and at least its fewest cycles ran).
pub(crate) fn race<A: Address>(
    rib: &Rib<A>,
    contenders: usize,
    pace: Pace,
    mut lookup: impl FnMut(usize, &[A], &mut [u32]),
) -> Vec<Rate> {
    let Pace {
        run: run_keys,
        budget,
        min_cycles,
    } = pace;
    assert!(contenders >= 1);
    // IPv4: fresh uniform keys for every round, as a stream of traffic meets the table
    // (the same few keys again would time a table the caches hold); IPv6, where uniform
    // keys miss every route: keys inside the routes, drawn once.
    let fresh = A::BITS == 32;
    let sample = if fresh {
        Vec::new()
    } else {
        rib.sample_keys(MEASURED_KEYS.min(rib.len().max(1)), 0x6361_6c69)
    };
    let run = if fresh {
        run_keys
    } else {
        run_keys.min(sample.len()).max(1)
    };
    let mut rng = crate::rng::SplitMix64::new(0x7261_6365);
    let mut fresh_keys = vec![A::default(); if fresh { run } else { 0 }];
    let mut out = vec![0u32; run];
    // Seconds of each contender's runs, round by round.
    let mut times = vec![Vec::new(); contenders];
    let started = Instant::now();
    let mut slices = sample.chunks_exact(run).cycle();
    for round in 0.. {
        let cycles = round / contenders;
        if round % contenders == 0
            && (cycles >= MAX_CYCLES || cycles >= min_cycles && started.elapsed() >= budget)
        {
            break;
        }
        let slice = if fresh {
            for k in &mut fresh_keys {
                *k = A::from_u128(rng.next() as u32 as u128);
            }
            &fresh_keys[..]
        } else {
            match slices.next() {
                Some(s) => s,
                None => break,
            }
        };
        for i in 0..contenders {
            let c = (round + i) % contenders;
            let t = Instant::now();
            for (k, o) in slice.chunks(256).zip(out.chunks_mut(256)) {
                lookup(c, k, o);
            }
            core::hint::black_box(&out);
            times[c].push(t.elapsed().as_secs_f64().max(1e-9));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let cycle_sums =
        |t: &[f64]| -> Vec<f64> { t.chunks_exact(contenders).map(|c| c.iter().sum()).collect() };
    let first = cycle_sums(&times[0]);
    (0..contenders)
        .map(|c| Rate {
            relative: median(
                first
                    .iter()
                    .zip(cycle_sums(&times[c]))
                    .map(|(f, this)| f / this)
                    .collect(),
            ),
            mlps: (run as f64 / median(times[c].clone()) / 1e6) as f32,
        })
        .collect()
}

/// Applies a choice made on another build of the same scheme (an updater's rebuilds, a
/// twin): the same instance, the same record.
pub(crate) fn apply_choice(k: &mut Kernels, from: &Kernels) {
    if k.choosable() && matches!(from.choice, KernelChoice::Measured { .. }) {
        k.run_avx512(from.avx512.is_some());
        k.choice = from.choice;
    }
}

/// `LPMKIT_CALIBRATE` unset, empty or anything but `0`/`off`/`no`/`false`.
pub(crate) fn enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var("LPMKIT_CALIBRATE").map_or(true, |v| {
            !["0", "off", "no", "false"].contains(&v.trim().to_ascii_lowercase().as_str())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fib::BuildOptions;
    use crate::nexthop::NextHop;
    use crate::prefix::{Ipv4, Prefix};
    use crate::simd::Isa;

    /// `n` routes: /20s and, inside every fifth, a /24 (searches for DXR).
    fn table(n: u32) -> Rib<Ipv4> {
        let mut rib = Rib::new();
        for i in 0..n {
            let nh = NextHop::new(1 + i % 13).unwrap();
            let len = if i % 5 == 0 { 24 } else { 20 };
            rib.insert(Prefix::new_truncating(i.wrapping_mul(0x9e37_79b9), len), nh);
        }
        rib
    }

    /// Built by the registry, a table whose CPU runs both instances is measured (and
    /// answers right on whichever it keeps); asked for, small or with one path, it is not.
    #[test]
    fn registry_builds_are_measured_where_both_instances_run() {
        let both = Isa::env_ceiling() == Isa::Avx512 && Isa::Avx512.supported() && enabled();
        let big = table(CALIBRATE_FROM as u32 + 5000);
        let keys = big.sample_keys(20_000, 3);
        for name in ["d18r", "dir24-8", "spider16w", "spider8w"] {
            let info = crate::registry::find(name).unwrap();
            let fib = info.build(&big, &BuildOptions::default()).unwrap();
            let choice = fib.kernel_choice().unwrap();
            match choice {
                KernelChoice::Measured {
                    avx512_mlps,
                    avx2_mlps,
                    micros,
                } => {
                    assert!(both, "{name}");
                    assert!(avx512_mlps > 0.0 && avx2_mlps > 0.0, "{name}: {choice}");
                    assert!(micros < 2_000_000, "{name}: {choice}");
                }
                // spider8w has no AVX-512 instance.
                KernelChoice::Only => assert!(!both || name == "spider8w", "{name}"),
                c => panic!("{name}: {c}"),
            }
            let mut out = vec![0; keys.len()];
            fib.lookup_batch(&keys, &mut out);
            for (&k, &o) in keys.iter().zip(&out) {
                assert_eq!(o, NextHop::raw(big.lookup(k)), "{name} {k:#x}");
            }
            // Asked for: as asked, not measured.
            let asked = BuildOptions {
                isa: Some(Isa::Avx2),
                ..BuildOptions::default()
            };
            let fib = info.build(&big, &asked).unwrap();
            assert_eq!(fib.kernel_choice(), Some(KernelChoice::Asked), "{name}");
        }
        let small = table(CALIBRATE_FROM as u32 / 2);
        let fib = crate::registry::find("d18r")
            .unwrap()
            .build(&small, &BuildOptions::default())
            .unwrap();
        let expected = if both {
            KernelChoice::Default
        } else {
            KernelChoice::Only
        };
        assert_eq!(fib.kernel_choice(), Some(expected));
    }
}

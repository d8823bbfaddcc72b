//! The command line's numbers and the memory a run may take.
//!
//! Every numeric option has a range, enforced by its value parser (clap reports a value
//! outside it with the option's name, exit status 2) and stated in its `--help` text as
//! "Range: MIN to MAX." (the CLI tests read the ranges from there and check that the
//! values just outside are refused). Options whose values cost memory (keys, frames,
//! routes, threads, repeats) are also checked against the memory the run may take before
//! anything is allocated: [`check_memory`].

use clap::builder::{RangedU64ValueParser, TypedValueParser};

/// The value parser of an integer option: `min..=max`.
pub fn int<T>(min: u64, max: u64) -> RangedU64ValueParser<T>
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
    <T as TryFrom<u64>>::Error: std::fmt::Display + Send + Sync + 'static,
{
    RangedU64ValueParser::<T>::new().range(min..=max)
}

/// The value parser of a decimal option: a finite number in `min..=max` (above `min` if
/// `open_min`). Refuses `nan`, `inf` and what does not parse, saying the range.
pub fn float(min: f64, max: f64, open_min: bool) -> impl TypedValueParser<Value = f64> {
    move |s: &str| -> Result<f64, String> {
        let range = if open_min {
            format!("above {min} and at most {max}")
        } else {
            format!("between {min} and {max}")
        };
        match s.trim().parse::<f64>() {
            Ok(v) if v.is_finite() && v <= max && (v > min || (!open_min && v == min)) => Ok(v),
            Ok(_) => Err(format!("{s} is not {range}")),
            Err(_) => Err(format!("{s:?} is not a number ({range})")),
        }
    }
}

/// The most memory a run may plan to take, in bytes, and what set it: half of the
/// machine's memory (`MemTotal` in `/proc/meminfo`), or half of the address-space limit
/// (`ulimit -v`) if that is lower.
pub fn memory_limit() -> (u64, String) {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb.saturating_mul(1024))
    });
    let mut limit = match total {
        Some(t) => (
            t / 2,
            format!("half of this machine's {}", bytes(t as u128)),
        ),
        None => (u64::MAX, "no limit known".to_string()),
    };
    if let Some(v) = address_space_limit() {
        if v / 2 < limit.0 {
            limit = (
                v / 2,
                format!("half of the address-space limit of {}", bytes(v as u128)),
            );
        }
    }
    limit
}

#[cfg(unix)]
fn address_space_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } == 0;
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
    let cur = r.rlim_cur as u64;
    (ok && r.rlim_cur != libc::RLIM_INFINITY).then_some(cur)
}

#[cfg(not(unix))]
fn address_space_limit() -> Option<u64> {
    None
}

/// `n` bytes for people.
pub fn bytes(n: u128) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// One share of a run's memory: the option that sets it and what it costs.
pub struct Need {
    /// The option (`--keys`).
    pub flag: &'static str,
    /// Bytes it will take.
    pub bytes: u128,
    /// How they are counted (`4294967296 keys × 16 B`).
    pub how: String,
}

impl Need {
    /// `count` items of `each` bytes, set by `flag`.
    pub fn items(flag: &'static str, count: u128, each: u128, what: &str) -> Need {
        Need {
            flag,
            bytes: count.saturating_mul(each),
            how: format!("{count} {what} × {each} B"),
        }
    }
}

/// Refuses a run whose planned memory exceeds [`memory_limit`], naming the options that
/// take the most; call it before allocating.
pub fn check_memory(needs: &[Need]) -> anyhow::Result<()> {
    let total: u128 = needs.iter().map(|n| n.bytes).sum();
    let (limit, why) = memory_limit();
    if total <= limit as u128 {
        return Ok(());
    }
    let mut parts: Vec<&Need> = needs.iter().filter(|n| n.bytes > 0).collect();
    parts.sort_by_key(|n| std::cmp::Reverse(n.bytes));
    let list: Vec<String> = parts
        .iter()
        .map(|n| format!("{} for {} ({})", bytes(n.bytes), n.flag, n.how))
        .collect();
    anyhow::bail!(
        "this run would take about {} ({}), more than it may use: {} ({why}); lower {}",
        bytes(total),
        list.join(", "),
        bytes(limit as u128),
        parts.first().map_or("the counts", |n| n.flag)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_refuse_nan_infinities_and_out_of_range() {
        let p = |s: &str, open| {
            let f = float(0.0, 10.0, open);
            let cmd = clap::Command::new("t");
            f.parse_ref(&cmd, None, std::ffi::OsStr::new(s)).ok()
        };
        assert_eq!(p("0", false), Some(0.0));
        assert_eq!(p("0", true), None);
        assert_eq!(p("10", true), Some(10.0));
        for bad in [
            "nan",
            "NaN",
            "inf",
            "-inf",
            "1e30",
            "-1",
            "10.000001",
            "x",
            "",
        ] {
            assert_eq!(p(bad, false), None, "{bad}");
        }
    }

    #[test]
    fn memory_check_names_the_largest_option() {
        assert!(check_memory(&[Need::items("--keys", 10, 4, "keys")]).is_ok());
        let e = check_memory(&[
            Need::items("--keys", 1 << 40, 16, "keys"),
            Need::items("--threads", 2, 1 << 20, "stacks"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("lower --keys") && e.contains("16.0 TiB"), "{e}");
    }
}

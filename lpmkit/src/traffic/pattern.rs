//! Named key patterns, as the command line spells them.

use core::fmt;
use core::str::FromStr;
use std::path::PathBuf;

/// A key pattern (request pattern) for lookups.
///
/// | name | meaning |
/// |---|---|
/// | `rnd` | random keys uniform over the whole address space, each looked up once ([`uniform`](super::uniform)): the random pattern of the Spider and Poptrie papers (which generate it just in time, `lpmkit bench --jit`) and of DXR's RND |
/// | `routable` | DXR's RND keys exactly: uniform over the routable space ([`uniform_routable_v4`](super::uniform_routable_v4); IPv6: [`uniform_global_unicast_v6`](super::uniform_global_unicast_v6)) |
/// | `rep` | DXR's REP: each `rnd` key looked up 16 times in a row ([`repeated`](super::repeated)) |
/// | `seq` | DXR's SEQ: the `rnd` keys, with a data dependency between lookups ([`seq_key`](super::seq_key)) |
/// | `zipf` | skewed popularity over the table's prefixes ([`zipf`](super::zipf)) |
/// | `v6match` | Spider's IPv6 matching keys ([`v6_matching`](super::v6_matching)) |
/// | `match:P` | Bloomfwd's Fig. 3: `P` % of the keys inside a table prefix (each prefix as likely), the rest routable keys no prefix covers ([`matching`](super::matching)) |
/// | `trace:FILE` | the addresses of a file, in order (read by `lpmkit::io`) |
///
/// ```
/// use lpmkit::traffic::Pattern;
/// assert_eq!("rep".parse::<Pattern>()?, Pattern::Rep);
/// assert_eq!("trace:keys.txt".parse::<Pattern>()?, Pattern::Trace("keys.txt".into()));
/// let err = "random".parse::<Pattern>().unwrap_err();
/// assert!(err.to_string().contains("rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE"));
/// assert_eq!(Pattern::Zipf.to_string(), "zipf");
/// assert_eq!("match:80%".parse::<Pattern>()?, Pattern::Matching(8000));
/// assert_eq!(Pattern::Matching(1250).to_string(), "match:12.5");
/// # Ok::<(), lpmkit::traffic::ParsePatternError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// Random keys uniform over the whole address space, each looked up once.
    Rnd,
    /// Random keys uniform over the routable space (DXR's RND), each looked up once.
    Routable,
    /// Each key looked up 16 times consecutively.
    Rep,
    /// Random keys, looked up with a dependency on the previous result.
    Seq,
    /// Zipf popularity over the table's prefixes.
    Zipf,
    /// Spider's IPv6 matching keys.
    V6Match,
    /// Bloomfwd's matching ratio, in hundredths of a percent (`8000`: 80 % of the keys
    /// match a prefix).
    Matching(u32),
    /// The addresses of a file.
    Trace(PathBuf),
}

impl Pattern {
    /// The names [`FromStr`] accepts, as listed in errors.
    pub const CHOICES: &'static str =
        "rnd, routable, rep, seq, zipf, v6match, match:PERCENT, trace:FILE";

    /// The pattern's name without its argument (`"trace"` for a trace).
    pub fn name(&self) -> &'static str {
        match self {
            Pattern::Rnd => "rnd",
            Pattern::Routable => "routable",
            Pattern::Rep => "rep",
            Pattern::Seq => "seq",
            Pattern::Zipf => "zipf",
            Pattern::V6Match => "v6match",
            Pattern::Matching(_) => "match",
            Pattern::Trace(_) => "trace",
        }
    }
}

impl fmt::Display for Pattern {
    /// The form [`FromStr`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Trace(p) => write!(f, "trace:{}", p.display()),
            Pattern::Matching(r) => write!(f, "match:{}", *r as f64 / 100.0),
            other => f.write_str(other.name()),
        }
    }
}

/// A key pattern name that is not one of [`Pattern::CHOICES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsePatternError {
    input: String,
    reason: &'static str,
}

impl fmt::Display for ParsePatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} key pattern `{}`: expected one of {}",
            self.reason,
            self.input,
            Pattern::CHOICES
        )
    }
}

impl std::error::Error for ParsePatternError {}

impl FromStr for Pattern {
    type Err = ParsePatternError;

    /// Parses a name (case-insensitive; `REP`, `RND`, `SEQ` as in the DXR paper work too)
    /// or `trace:FILE`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let err = |reason| ParsePatternError {
            input: s.to_string(),
            reason,
        };
        if let Some(path) = t
            .get(..6)
            .filter(|head| head.eq_ignore_ascii_case("trace:"))
            .map(|_| &t[6..])
        {
            return if path.is_empty() {
                Err(err("missing file name in"))
            } else {
                Ok(Pattern::Trace(PathBuf::from(path)))
            };
        }
        if let Some(ratio) = t
            .get(..6)
            .filter(|head| head.eq_ignore_ascii_case("match:"))
            .map(|_| t[6..].trim().trim_end_matches('%'))
        {
            return match ratio.parse::<f64>() {
                Ok(p) if (0.0..=100.0).contains(&p) => {
                    Ok(Pattern::Matching((p * 100.0).round() as u32))
                }
                _ => Err(err("a percentage 0..=100 is needed in")),
            };
        }
        match t.to_ascii_lowercase().as_str() {
            "rnd" => Ok(Pattern::Rnd),
            "routable" => Ok(Pattern::Routable),
            "rep" => Ok(Pattern::Rep),
            "seq" => Ok(Pattern::Seq),
            "zipf" => Ok(Pattern::Zipf),
            "v6match" => Ok(Pattern::V6Match),
            "trace" => Err(err("missing file name in")),
            "match" => Err(err("missing percentage in")),
            _ => Err(err("unknown")),
        }
    }
}

//! Update traces: text `UNIXTIME A|W PREFIX/LEN NEXTHOP|- [PEER]`, `bgpdump -m` update
//! lines, and MRT BGP4MP files.

use crate::shown::Shown;
use std::collections::HashMap;
use std::path::Path;

use std::io::BufRead;

use super::bgpdump::starts_bgpdump;
use super::format::{sniff, Format, Update};
use super::text::{parse_prefix, prefix_message, strip_comment, FamilyOrigin, PrefixProblem};
use super::{open_input, source_name, LineReader, ReadError, ReadStats};
use crate::fib::Change;
use crate::nexthop::{NextHop, NextHopTable};
use crate::prefix::Address;

/// Reads an update trace of family `A`, detecting the format: MRT BGP4MP, `bgpdump -m`
/// update text (`BGP4MP|TIME|A|PEER_IP|PEER_AS|PREFIX|AS_PATH|ORIGIN|NEXT_HOP|…`,
/// `…|W|PEER_IP|PEER_AS|PREFIX`), or the data set's text form:
///
/// ```text
/// # comment
/// 1727744100 A 10.0.0.0/8 192.0.2.1 198.51.100.7
/// 1727744101 W 10.0.0.0/8 - 198.51.100.7
/// ```
///
/// `UNIXTIME A PREFIX/LEN NEXTHOP [PEER]` announces, `UNIXTIME W PREFIX/LEN - [PEER]`
/// withdraws (`a`/`w` are accepted too). Events come in file order; for MRT, the
/// withdrawals of one UPDATE message come before its announcements. Next hops are
/// interned into `hops` by name (MRT: the next-hop address as text; the peer address if
/// an announcement has none). Updates of the other family are skipped and counted,
/// as are MRT records that carry no updates (state changes, KEEPALIVEs, …); see
/// [`read_updates_with_stats`].
///
/// Errors name the line (text) or byte offset (MRT). A trace without any update of
/// family `A` is an error.
pub fn read_updates<A: Address>(
    path: &Path,
    hops: &mut NextHopTable<String>,
) -> Result<Vec<Update<A>>, ReadError> {
    read_updates_with_stats(path, hops).map(|(u, _)| u)
}

/// [`read_updates`], also returning the counts of what was read and skipped.
pub fn read_updates_with_stats<A: Address>(
    path: &Path,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    let source = source_name(path);
    read_updates_from_reader(open_input(path)?, &source, hops)
}

/// [`read_updates_with_stats`] for input that is not a file (memory, a socket, a
/// fuzzer). `reader` must yield the plain (decompressed) bytes; `source` names the input
/// in errors.
pub fn read_updates_from_reader<A: Address>(
    reader: Box<dyn std::io::BufRead + Send>,
    source: &str,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    let source = source.to_string();
    let (format, r) = sniff(&source, reader)?;
    let (updates, stats) = match format {
        Format::Mrt => mrt_updates::<A>(&source, r, hops)?,
        Format::Text => {
            let mut lines = LineReader::new(r, &source);
            if starts_bgpdump(&mut lines)? {
                bgpdump_updates::<A, _>(&mut lines, hops)?
            } else {
                text_updates::<A, _>(&mut lines, hops)?
            }
        }
    };
    if updates.is_empty() {
        let msg = if stats.other_family > 0 {
            format!(
                "no {} updates ({} of the other family skipped)",
                A::FAMILY,
                stats.other_family
            )
        } else {
            let hint = if stats
                .skipped_records
                .iter()
                .any(|(k, _)| k.starts_with("TABLE_DUMP"))
            {
                " (a RIB dump? read it with read_table)"
            } else {
                ""
            };
            format!("no updates{}{hint}", stats.skipped_note())
        };
        return Err(ReadError::whole(&source, msg));
    }
    Ok((updates, stats))
}

#[cfg(feature = "mrt")]
fn mrt_updates<A: Address>(
    source: &str,
    r: impl std::io::Read,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    super::mrt::read_mrt_updates(source, r, hops)
}

#[cfg(not(feature = "mrt"))]
fn mrt_updates<A: Address>(
    source: &str,
    _r: impl std::io::Read,
    _hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    Err(ReadError::whole(
        source,
        "MRT input needs lpmkit's `mrt` feature",
    ))
}

/// Interns next-hop names, allocating once per distinct name.
struct Names<'h> {
    hops: &'h mut NextHopTable<String>,
    ids: HashMap<String, NextHop>,
}

impl Names<'_> {
    fn id(&mut self, s: &str) -> NextHop {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.hops.intern(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }
}

/// Parses a text update trace (see [`read_updates`]); `source` names it in errors.
///
/// Unlike [`read_updates`], an input without updates of family `A` is not an error here.
#[doc(hidden)]
pub fn parse_text_updates<A: Address>(
    text: &str,
    source: &str,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    text_updates(&mut LineReader::new(text.as_bytes(), source), hops)
}

/// The rest of `lines`, a text update trace.
fn text_updates<A: Address, R: BufRead>(
    lines: &mut LineReader<R>,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    let source = lines.source().to_string();
    let source = source.as_str();
    let mut stats = ReadStats::default();
    let mut out = Vec::new();
    let mut names = Names {
        hops,
        ids: HashMap::new(),
    };
    while let Some((lineno, line)) = lines.next_numbered()? {
        let mut toks = strip_comment(line).split_ascii_whitespace();
        let Some(ttok) = toks.next() else { continue };
        let err = |m: String| ReadError::at_line(source, lineno, m);
        let (Some(kind), Some(ptok), Some(nhtok)) = (toks.next(), toks.next(), toks.next()) else {
            return Err(err(
                "too few columns (expected UNIXTIME A|W PREFIX/LEN NEXTHOP|- [PEER])".to_string(),
            ));
        };
        let peer = toks.next();
        if let Some(extra) = toks.next() {
            return Err(err(format!(
                "unexpected sixth column {:?} (expected UNIXTIME A|W PREFIX/LEN NEXTHOP|- [PEER])",
                Shown(extra)
            )));
        }
        let time = parse_time(ttok).ok_or_else(|| err(format!("bad time {:?}", Shown(ttok))))?;
        let announce = match kind {
            "A" | "a" => true,
            "W" | "w" => false,
            k => {
                return Err(err(format!(
                    "bad update type {:?} (expected A or W)",
                    Shown(k)
                )))
            }
        };
        let prefix = match parse_prefix::<A>(ptok, false) {
            Ok(p) => p,
            Err(PrefixProblem::WrongFamily(_)) => {
                stats.other_family += 1;
                continue;
            }
            Err(p) => {
                return Err(err(prefix_message::<A>(ptok, p, FamilyOrigin::Requested)));
            }
        };
        let change = if announce {
            stats.announces += 1;
            Change::Announce(prefix, names.id(nhtok))
        } else {
            if nhtok != "-" {
                return Err(err(format!(
                    "a withdrawal has \"-\" in the NEXTHOP column, not {:?}",
                    Shown(nhtok)
                )));
            }
            stats.withdraws += 1;
            Change::Withdraw(prefix)
        };
        out.push(Update {
            time,
            change,
            peer: peer.map(str::to_string),
        });
    }
    stats.lines = lines.line();
    Ok((out, stats))
}

/// A Unix time: digits, optionally with a fractional part (`bgpdump` prints none, other
/// tools print microseconds), which is dropped.
fn parse_time(t: &str) -> Option<u64> {
    let int = match t.split_once('.') {
        Some((i, f)) if f.bytes().all(|b| b.is_ascii_digit()) => i,
        Some(_) => return None,
        None => t,
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    int.parse().ok()
}

/// Parses the rest of `lines`, `bgpdump -m` update lines (`BGP4MP|TIME|A|…`, `…|W|…`;
/// `STATE` lines are skipped and counted).
fn bgpdump_updates<A: Address, R: BufRead>(
    lines: &mut LineReader<R>,
    hops: &mut NextHopTable<String>,
) -> Result<(Vec<Update<A>>, ReadStats), ReadError> {
    let source = lines.source().to_string();
    let source = source.as_str();
    let mut stats = ReadStats::default();
    let mut out = Vec::new();
    let mut names = Names {
        hops,
        ids: HashMap::new(),
    };
    while let Some((lineno, line)) = lines.next_numbered()? {
        if line.trim().is_empty() {
            continue;
        }
        let err = |m: String| ReadError::at_line(source, lineno, m);
        let f: Vec<&str> = line.split('|').collect();
        if f.len() < 3 {
            return Err(err(format!("{} fields; not a bgpdump -m line", f.len())));
        }
        if !f[0].starts_with("BGP4MP") {
            return Err(err(format!(
                "not an update ({}|…); RIB dumps are read by read_table",
                f[0]
            )));
        }
        let need = match f[2] {
            "A" => 9,
            "W" => 6,
            k => {
                stats.skip(&format!("bgpdump {} {k}", f[0]));
                continue;
            }
        };
        if f.len() < need {
            return Err(err(format!(
                "{} fields; a bgpdump -m {} line has at least {need}",
                f.len(),
                f[2]
            )));
        }
        let time = parse_time(f[1]).ok_or_else(|| err(format!("bad time {:?}", Shown(f[1]))))?;
        let ptok = f[5];
        let prefix = match parse_prefix::<A>(ptok, false) {
            Ok(p) => p,
            Err(PrefixProblem::WrongFamily(_)) => {
                stats.other_family += 1;
                continue;
            }
            Err(p) => return Err(err(prefix_message::<A>(ptok, p, FamilyOrigin::Requested))),
        };
        let change = if f[2] == "A" {
            stats.announces += 1;
            let nh = if f[8].is_empty() {
                stats.missing_next_hop += 1;
                f[3]
            } else {
                f[8]
            };
            Change::Announce(prefix, names.id(nh))
        } else {
            stats.withdraws += 1;
            Change::Withdraw(prefix)
        };
        out.push(Update {
            time,
            change,
            peer: Some(f[3].to_string()),
        });
    }
    stats.lines = lines.line();
    Ok((out, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Ipv4, Ipv6};

    #[test]
    fn text_trace() {
        let mut hops = NextHopTable::new();
        let text = "# c\n1 A 10.0.0.0/8 192.0.2.1 p1\r\n2 W 10.0.0.0/8 -\n3 A 2001:db8::/32 x\n4 a 11.0.0.0/8 192.0.2.1\n";
        let (u, s) = parse_text_updates::<Ipv4>(text, "t", &mut hops).unwrap();
        assert_eq!(u.len(), 3);
        assert_eq!(
            (s.announces, s.withdraws, s.other_family, s.lines),
            (2, 1, 1, 5)
        );
        assert_eq!(u[0].peer.as_deref(), Some("p1"));
        assert_eq!(u[1].change, Change::Withdraw("10.0.0.0/8".parse().unwrap()));
        assert_eq!(u[2].change.prefix(), "11.0.0.0/8".parse().unwrap());
        assert_eq!(hops.len(), 1);
        let (u6, _) = parse_text_updates::<Ipv6>(text, "t", &mut hops).unwrap();
        assert_eq!(u6.len(), 1);
        assert_eq!(hops.len(), 2);
    }

    #[test]
    fn text_trace_errors() {
        let e = |t: &str| {
            parse_text_updates::<Ipv4>(t, "t", &mut NextHopTable::new())
                .unwrap_err()
                .to_string()
        };
        assert_eq!(e("x A 10.0.0.0/8 a\n"), "t:1: bad time \"x\"");
        assert_eq!(
            e("1 X 10.0.0.0/8 a\n"),
            "t:1: bad update type \"X\" (expected A or W)"
        );
        assert_eq!(
            e("\n1 W 10.0.0.0/8 a\n"),
            "t:2: a withdrawal has \"-\" in the NEXTHOP column, not \"a\""
        );
        assert_eq!(
            e("1 A 10.0.0.0/8\n"),
            "t:1: too few columns (expected UNIXTIME A|W PREFIX/LEN NEXTHOP|- [PEER])"
        );
        assert_eq!(
            e("1 A 10.0.0.0/8 a b c\n"),
            "t:1: unexpected sixth column \"c\" (expected UNIXTIME A|W PREFIX/LEN NEXTHOP|- [PEER])"
        );
        assert_eq!(
            e("1 A 10.0.0.1/8 a\n"),
            "t:1: prefix 10.0.0.1/8 has host bits set (did you mean 10.0.0.0/8?)"
        );
        assert_eq!(
            e("1 A 10.0.0.0/40 a\n"),
            "t:1: bad prefix \"10.0.0.0/40\": length /40 exceeds the maximum /32"
        );
    }

    #[test]
    fn bgpdump_trace() {
        let mut hops = NextHopTable::new();
        let text = "BGP4MP|1|A|192.0.2.1|1|10.0.0.0/8|1 2|IGP|192.0.2.9|0|0||NAG||\n\
                    BGP4MP|2|STATE|192.0.2.1|1|3|6\n\
                    BGP4MP|3|W|192.0.2.1|1|10.0.0.0/8\n";
        let mut lines = LineReader::new(text.as_bytes(), "t");
        assert!(starts_bgpdump(&mut lines).unwrap());
        let (u, s) = bgpdump_updates::<Ipv4, _>(&mut lines, &mut hops).unwrap();
        assert_eq!(u.len(), 2);
        assert_eq!(s.skipped_total(), 1);
        assert_eq!(hops.value(NextHop::new(1).unwrap()).unwrap(), "192.0.2.9");
        assert_eq!(u[1].time, 3);
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("1727744100"), Some(1727744100));
        assert_eq!(parse_time("1727744100.123456"), Some(1727744100));
        assert_eq!(parse_time("-1"), None);
        assert_eq!(parse_time(""), None);
        assert_eq!(parse_time("1e5"), None);
    }
}

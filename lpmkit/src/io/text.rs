//! Text routing tables: `PREFIX/LEN [NEXTHOP]` per line.

use crate::shown::Shown;
use std::collections::HashMap;

use std::io::BufRead;

use super::{LineReader, ReadError, TableOptions};
use crate::nexthop::NextHop;
use crate::prefix::{Address, Family, Prefix};
use crate::rng::mix64;
use crate::table::Table;

/// The next hop (`1..=n`) given to `prefix` in a table that has none.
///
/// Real tables correlate the next hops of neighbouring prefixes (a customer's more
/// specifics usually leave by the same exit as its aggregate) while a minority differ
/// (traffic engineering, multihoming). This rule reproduces that, deterministically,
/// from the prefix alone (never from file order):
///
/// 1. **Block hash.** `B` is the covering block of the prefix's network address: its top
///    20 bits for IPv4 (`addr >> 12`, a /20), its top 32 bits for IPv6 (`addr >> 96`, a
///    /32). `H_block = mix64(B ^ S)`, where `S = 0x4000_0000_0000_0014` for IPv4 and
///    `0x6000_0000_0000_0020` for IPv6 (so the two families differ).
/// 2. **Prefix hash.** With `hi`/`lo` the upper/lower 64 bits of the address widened to
///    128 bits (`hi = 0` for IPv4) and `len` the prefix length,
///    `H_prefix = mix64(mix64(hi ^ S) ^ lo ^ (len << 56))`.
/// 3. **Choice.** If `H_prefix % 4 == 0` (about a quarter of the prefixes) the prefix gets
///    its own value `v = mix64(H_prefix)`, otherwise it shares its block's `v = H_block`.
/// 4. The next hop is `1 + v % n` (`n = 0` is treated as 1).
///
/// `mix64` is the SplitMix64 finalizer.
///
/// ```
/// use lpmkit::io::assigned_next_hop;
/// use lpmkit::{Ipv4, Prefix};
///
/// let p: Prefix<Ipv4> = "192.0.2.0/24".parse()?;
/// let nh = assigned_next_hop(p, 200);
/// assert!((1..=200).contains(&nh));
/// assert_eq!(nh, assigned_next_hop(p, 200)); // deterministic
/// assert_eq!(assigned_next_hop(p, 1), 1);
/// # Ok::<(), lpmkit::PrefixError>(())
/// ```
#[doc(hidden)]
pub fn assigned_next_hop<A: Address>(prefix: Prefix<A>, n: u32) -> u32 {
    let n = n.max(1) as u64;
    let a = prefix.addr().to_u128();
    let (salt, block) = match A::FAMILY {
        Family::V4 => (0x4000_0000_0000_0014u64, (a >> 12) as u64),
        Family::V6 => (0x6000_0000_0000_0020u64, (a >> 96) as u64),
    };
    let h_block = mix64(block ^ salt);
    let hi = (a >> 64) as u64;
    let lo = a as u64;
    let h_prefix = mix64(mix64(hi ^ salt) ^ lo ^ ((prefix.len() as u64) << 56));
    let v = if h_prefix.is_multiple_of(4) {
        mix64(h_prefix)
    } else {
        h_block
    };
    1 + (v % n) as u32
}

/// How the table's family was decided, for the wrong-family message.
#[derive(Clone, Copy, Debug)]
pub(crate) enum FamilyOrigin {
    /// The caller asked for this family (`parse_text_table::<A>`).
    Requested,
    /// [`TableOptions::family`] forced it.
    Forced,
    /// The first route, on this line, decided it.
    Detected(usize),
}

/// Why a prefix token was refused (turned into a message by [`prefix_message`]).
#[derive(Clone, Debug)]
pub(crate) enum PrefixProblem {
    Syntax(&'static str),
    TooLong(u32),
    HostBits(String),
    WrongFamily(Family),
}

/// Parses an IPv4 dotted quad the way `std` does (four decimal octets, no leading zeros),
/// without allocating.
#[inline]
pub(crate) fn parse_v4(s: &[u8]) -> Option<u32> {
    let mut val = 0u32;
    let mut i = 0;
    for octet in 0..4 {
        if octet > 0 {
            if s.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let start = i;
        let mut o = 0u32;
        while i < s.len() && s[i].is_ascii_digit() && i - start < 3 {
            o = o * 10 + (s[i] - b'0') as u32;
            i += 1;
        }
        let n = i - start;
        if n == 0 || o > 255 || (n > 1 && s[start] == b'0') {
            return None;
        }
        val = (val << 8) | o;
    }
    (i == s.len()).then_some(val)
}

/// Parses an address of family `A` (IPv4 through the fast path).
#[inline]
pub(crate) fn parse_address<A: Address>(s: &str) -> Option<A> {
    match A::FAMILY {
        Family::V4 => parse_v4(s.as_bytes()).map(|v| A::from_u128(v as u128)),
        Family::V6 => s
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(|a| A::from_u128(u128::from(a))),
    }
}

/// The family an address text belongs to, if it is a valid address of either.
pub(crate) fn address_family(s: &str) -> Option<Family> {
    if parse_v4(s.as_bytes()).is_some() {
        Some(Family::V4)
    } else if s.parse::<std::net::Ipv6Addr>().is_ok() {
        Some(Family::V6)
    } else {
        None
    }
}

/// A guess at the family of a prefix or address token: IPv6 if it contains `:`.
#[inline]
pub(crate) fn guess_family(token: &str) -> Family {
    if token.as_bytes().contains(&b':') {
        Family::V6
    } else {
        Family::V4
    }
}

/// Parses `ADDRESS/LEN` of family `A`.
#[inline]
pub(crate) fn parse_prefix<A: Address>(
    tok: &str,
    normalize: bool,
) -> Result<Prefix<A>, PrefixProblem> {
    let Some((a, l)) = tok.split_once('/') else {
        return Err(PrefixProblem::Syntax("missing '/LEN'"));
    };
    let lb = l.as_bytes();
    if lb.is_empty() || lb.len() > 3 || !lb.iter().all(u8::is_ascii_digit) {
        // Check the address first so that "2001:db8::/x" in a v4 table says "wrong family".
        if parse_address::<A>(a).is_none() {
            return Err(bad_address::<A>(a));
        }
        return Err(PrefixProblem::Syntax("the length is not a number"));
    }
    let len = lb.iter().fold(0u32, |v, &b| v * 10 + (b - b'0') as u32);
    let Some(addr) = parse_address::<A>(a) else {
        return Err(bad_address::<A>(a));
    };
    if len > A::BITS as u32 {
        return Err(PrefixProblem::TooLong(len));
    }
    let len = len as u8;
    if normalize {
        return Ok(Prefix::new_truncating(addr, len));
    }
    Prefix::new(addr, len)
        .map_err(|_| PrefixProblem::HostBits(Prefix::new_truncating(addr, len).to_string()))
}

#[cold]
fn bad_address<A: Address>(a: &str) -> PrefixProblem {
    match address_family(a) {
        Some(f) if f != A::FAMILY => PrefixProblem::WrongFamily(f),
        _ => PrefixProblem::Syntax(match A::FAMILY {
            Family::V4 => "not an IPv4 address",
            Family::V6 => "not an IPv6 address",
        }),
    }
}

fn family_name(f: Family) -> &'static str {
    match f {
        Family::V4 => "IPv4",
        Family::V6 => "IPv6",
    }
}

/// The message for a refused prefix token.
#[cold]
pub(crate) fn prefix_message<A: Address>(
    tok: &str,
    problem: PrefixProblem,
    origin: FamilyOrigin,
) -> String {
    let tok = Shown(tok);
    match problem {
        PrefixProblem::Syntax(reason) => format!("bad prefix {tok:?}: {reason}"),
        PrefixProblem::TooLong(len) => format!(
            "bad prefix {tok:?}: length /{len} exceeds the maximum /{}",
            A::BITS
        ),
        PrefixProblem::HostBits(canonical) => {
            format!("prefix {tok} has host bits set (did you mean {canonical}?)")
        }
        PrefixProblem::WrongFamily(f) => {
            let why = match origin {
                FamilyOrigin::Requested => String::new(),
                FamilyOrigin::Forced => {
                    format!(" (the family was forced to {})", A::FAMILY.as_str())
                }
                FamilyOrigin::Detected(line) => format!(
                    " (the first route, on line {line}, is {})",
                    family_name(A::FAMILY)
                ),
            };
            format!(
                "{} prefix {tok:?} in an {} table{why}",
                family_name(f),
                family_name(A::FAMILY)
            )
        }
    }
}

/// The route tokens of a text line: comment stripped, whitespace split.
#[inline]
pub(crate) fn strip_comment(line: &str) -> &str {
    match memchr_hash(line) {
        Some(i) => &line[..i],
        None => line,
    }
}

#[inline]
fn memchr_hash(line: &str) -> Option<usize> {
    line.as_bytes().iter().position(|&b| b == b'#')
}

/// The first token of a route line (comment stripped), if the line holds one.
pub(crate) fn route_token(line: &str) -> Option<&str> {
    strip_comment(line).split_ascii_whitespace().next()
}

/// The input again from its start, for an error message that names an earlier line
/// (`None`: the input cannot be read again, a stream).
pub(crate) type Again<'a> = Option<&'a dyn Fn() -> Result<Box<dyn BufRead + 'a>, ReadError>>;

/// Parses a text table of family `A`: one route per line, `PREFIX/LEN NEXTHOP` or (in the
/// whole file) `PREFIX/LEN` alone.
///
/// `source` names the input in errors and becomes the table's name. Lines hold
/// whitespace-separated tokens; `#` starts a comment; blank lines and CRLF line ends are
/// accepted; a line is at most [`MAX_LINE_BYTES`](super::MAX_LINE_BYTES) long. NEXTHOP is
/// any token and is interned as is. If the first route has no next hop, every route must
/// have none, and next hops come from [`assigned_next_hop`] with `opts.assign_next_hops`
/// values, named `nh1` … `nhN` (interned lazily, so the table's ids follow first use). A
/// file mixing the two forms is an error naming the line.
///
/// Errors (each naming `source` and the line): a bad prefix (quoted), a length beyond the
/// family's width, host bits set (with the canonical form; unless `opts.normalize`), a
/// prefix of the other family, a third column, a duplicate prefix (naming the line of the
/// first occurrence), and a file without routes (`no routes`).
/// `opts.family`, if set, must be `A`'s family. `opts.peer` is ignored.
#[doc(hidden)]
pub fn parse_text_table<A: Address>(
    text: &str,
    source: &str,
    opts: &TableOptions,
) -> Result<Table<A>, ReadError> {
    let origin = match opts.family {
        None => FamilyOrigin::Requested,
        Some(f) if f == A::FAMILY => FamilyOrigin::Forced,
        Some(f) => {
            return Err(ReadError::whole(
                source,
                format!(
                    "the family is forced to {f}, but an {} table was requested",
                    A::FAMILY
                ),
            ))
        }
    };
    let again = || Ok(Box::new(text.as_bytes()) as Box<dyn BufRead>);
    let mut lines = LineReader::new(text.as_bytes(), source);
    parse_text_lines(&mut lines, opts, origin, Some(&again))
}

/// Parses the rest of `lines` as a text table of family `A` (see [`parse_text_table`]);
/// `again` reads the input again for the line a duplicate prefix was first on.
pub(crate) fn parse_text_lines<A: Address, R: BufRead>(
    lines: &mut LineReader<R>,
    opts: &TableOptions,
    origin: FamilyOrigin,
    again: Again<'_>,
) -> Result<Table<A>, ReadError> {
    let source = lines.source().to_string();
    let source = source.as_str();
    if opts.assign_next_hops == 0 {
        return Err(ReadError::whole(
            source,
            "assign_next_hops must be at least 1",
        ));
    }
    let mut table = Table::<A>::new(source);
    // The form of the first route: Some(true) = with next hops, Some(false) = prefix only.
    let mut form: Option<(bool, usize)> = None;
    let mut names: HashMap<String, NextHop> = HashMap::new();
    // Assigned next hops by number: a map, so memory follows the routes, not N.
    let mut assigned: HashMap<u32, NextHop> = HashMap::new();
    // The last line's next hop (neighbouring routes mostly share one): no map probe then.
    let mut last: Option<NextHop> = None;
    let mut last_assigned: Option<(u32, NextHop)> = None;
    while let Some((lineno, line)) = lines.next_numbered()? {
        let mut toks = strip_comment(line).split_ascii_whitespace();
        let Some(ptok) = toks.next() else { continue };
        let nhtok = toks.next();
        if let Some(extra) = toks.next() {
            return Err(ReadError::at_line(
                source,
                lineno,
                format!(
                    "unexpected third column {:?} (expected PREFIX/LEN [NEXTHOP])",
                    Shown(extra)
                ),
            ));
        }
        let prefix = parse_prefix::<A>(ptok, opts.normalize).map_err(|p| {
            ReadError::at_line(source, lineno, prefix_message::<A>(ptok, p, origin))
        })?;
        let (with_nh, first_line) = *form.get_or_insert((nhtok.is_some(), lineno));
        let nh = match (with_nh, nhtok) {
            (true, Some(t)) => match last {
                Some(id) if table.next_hops.value(id).is_some_and(|v| v == t) => id,
                _ => {
                    let id = match names.get(t) {
                        Some(&id) => id,
                        None => {
                            let id = table.next_hops.intern(t.to_string());
                            names.insert(t.to_string(), id);
                            id
                        }
                    };
                    last = Some(id);
                    id
                }
            },
            (false, None) => {
                let k = assigned_next_hop(prefix, opts.assign_next_hops);
                match last_assigned {
                    Some((l, id)) if l == k => id,
                    _ => {
                        let id = *assigned
                            .entry(k)
                            .or_insert_with(|| table.next_hops.intern(format!("nh{k}")));
                        last_assigned = Some((k, id));
                        id
                    }
                }
            }
            (true, None) => {
                return Err(ReadError::at_line(
                    source,
                    lineno,
                    format!(
                        "missing next hop (line {first_line} has one; a table must not mix \
                         PREFIX/LEN NEXTHOP and PREFIX/LEN lines)"
                    ),
                ))
            }
            (false, Some(t)) => {
                let t = Shown(t);
                return Err(ReadError::at_line(
                    source,
                    lineno,
                    format!(
                        "unexpected next hop {t:?} (line {first_line} has none; a table must \
                         not mix PREFIX/LEN NEXTHOP and PREFIX/LEN lines)"
                    ),
                ));
            }
        };
        if table.rib.insert(prefix, nh).is_some() {
            return Err(duplicate::<A>(again, source, opts, prefix, lineno));
        }
    }
    if table.rib.is_empty() {
        return Err(ReadError::whole(source, "no routes"));
    }
    table.rib.complete_index();
    Ok(table)
}

/// The duplicate-prefix error: reads the input again (if it can be) for the first
/// occurrence (error path only).
#[cold]
#[inline(never)]
fn duplicate<A: Address>(
    again: Again<'_>,
    source: &str,
    opts: &TableOptions,
    prefix: Prefix<A>,
    lineno: usize,
) -> ReadError {
    let first = again.and_then(|again| {
        let mut lines = LineReader::new(again().ok()?, source);
        while let Ok(Some((at, line))) = lines.next_numbered() {
            if at >= lineno {
                break;
            }
            let Some(tok) = route_token(line) else {
                continue;
            };
            if parse_prefix::<A>(tok, opts.normalize).ok() == Some(prefix) {
                return Some(at);
            }
        }
        None
    });
    let msg = match first {
        Some(f) => format!("duplicate prefix {prefix} (first on line {f})"),
        None => format!("duplicate prefix {prefix} (on an earlier line too)"),
    };
    ReadError::at_line(source, lineno, msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Ipv4, Ipv6};

    #[test]
    fn v4_fast_path_matches_std() {
        let cases = [
            "0.0.0.0",
            "255.255.255.255",
            "1.2.3.4",
            "01.2.3.4",
            "1.2.3",
            "1.2.3.4.5",
            "256.1.1.1",
            "1..2.3",
            "1.2.3.4 ",
            "",
            "1.2.3.",
            ".1.2.3",
            "1000.1.1.1",
            "0.0.0.00",
            "9.09.9.9",
            "+1.2.3.4",
            "1.2.3.-4",
        ];
        for c in cases {
            let std = c.parse::<std::net::Ipv4Addr>().ok().map(u32::from);
            assert_eq!(parse_v4(c.as_bytes()), std, "{c:?}");
        }
    }

    #[test]
    fn assignment_rule() {
        // Deterministic, in range, and correlated within a /20 block.
        let n = 200;
        let mut same = 0;
        let mut total = 0;
        for blk in 0..2000u32 {
            let base = blk << 12;
            let agg: Prefix<Ipv4> = Prefix::new(base, 20).unwrap();
            let a = assigned_next_hop(agg, n);
            assert!((1..=n).contains(&a));
            for sub in 0..16u32 {
                let p: Prefix<Ipv4> = Prefix::new(base | (sub << 8), 24).unwrap();
                total += 1;
                same += (assigned_next_hop(p, n) == a) as u32;
            }
        }
        // The aggregate itself keeps the block value 3/4 of the time, and each /24 too:
        // so the shares are about (3/4)^2 + noise.
        let share = same as f64 / total as f64;
        assert!((0.45..0.7).contains(&share), "share {share}");
        let p6: Prefix<Ipv6> = "2001:db8::/48".parse().unwrap();
        assert!((1..=7).contains(&assigned_next_hop(p6, 7)));
        assert_eq!(assigned_next_hop(p6, 0), 1);
    }

    #[test]
    fn errors() {
        let o = TableOptions::default();
        let e = |t: &str| {
            parse_text_table::<Ipv4>(t, "f", &o)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            e("10.0.0.0/8 a b\n"),
            "f:1: unexpected third column \"b\" (expected PREFIX/LEN [NEXTHOP])"
        );
        assert_eq!(
            e("10.0.0/8 a\n"),
            "f:1: bad prefix \"10.0.0/8\": not an IPv4 address"
        );
        assert_eq!(
            e("10.0.0.0 a\n"),
            "f:1: bad prefix \"10.0.0.0\": missing '/LEN'"
        );
        assert_eq!(
            e("10.0.0.0/x a\n"),
            "f:1: bad prefix \"10.0.0.0/x\": the length is not a number"
        );
        assert_eq!(
            e("10.0.0.0/33 a\n"),
            "f:1: bad prefix \"10.0.0.0/33\": length /33 exceeds the maximum /32"
        );
        assert_eq!(e("\n# c\n"), "f: no routes");
        assert_eq!(
            e("2001:db8::/32 a\n"),
            "f:1: IPv6 prefix \"2001:db8::/32\" in an IPv4 table"
        );
        assert_eq!(
            e("10.0.0.0/8 a\n10.1.0.0/16\n"),
            "f:2: missing next hop (line 1 has one; a table must not mix PREFIX/LEN NEXTHOP and PREFIX/LEN lines)"
        );
        assert_eq!(
            e("10.0.0.0/8\n10.1.0.0/16 x\n"),
            "f:2: unexpected next hop \"x\" (line 1 has none; a table must not mix PREFIX/LEN NEXTHOP and PREFIX/LEN lines)"
        );
        assert_eq!(
            e("10.0.0.0/8 a\n11.0.0.0/8 b\n\n10.0.0.0/8 c\n"),
            "f:4: duplicate prefix 10.0.0.0/8 (first on line 1)"
        );
    }
}

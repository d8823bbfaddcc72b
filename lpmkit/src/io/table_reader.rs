//! `read_table`: format and family detection, then the text, `bgpdump -m` or MRT reader.

use std::io::{BufRead, Read};
use std::path::Path;

use super::bgpdump::{read_bgpdump_rib, starts_bgpdump};
use super::format::{sniff, Format};
use super::text::{guess_family, parse_text_lines, route_token, Again, FamilyOrigin};
use super::{open_input, source_name, LineReader, ReadError, ReadStats, TableOptions};
use crate::prefix::{Address, Family, Ipv4, Ipv6};
use crate::table::{AnyTable, Table};

fn file_label(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| source_name(path))
}

/// Reads a routing table of either family, detecting the format (text table,
/// `bgpdump -m` text or MRT RIB dump) and the family.
///
/// For a text table the first route decides the family (unless `opts.family` forces
/// it), and a route of the other family later is an error. For an MRT or `bgpdump -m` RIB
/// holding both families, the family of the first RIB entry wins unless forced; the other
/// family's routes are counted in [`ReadStats::other_family`]. The table is named after the
/// file name. See [`read_table_with_stats`] for what else was seen.
///
/// ```no_run
/// use lpmkit::io::{read_table, TableOptions};
/// let table = read_table("fib.txt.xz".as_ref(), &TableOptions::default())?;
/// println!("{} ({})", table.name(), table.family());
/// # Ok::<(), lpmkit::io::ReadError>(())
/// ```
pub fn read_table(path: &Path, opts: &TableOptions) -> Result<AnyTable, ReadError> {
    read_table_with_stats(path, opts).map(|(t, _)| t)
}

/// [`read_table`], also returning what the reader skipped and counted.
pub fn read_table_with_stats(
    path: &Path,
    opts: &TableOptions,
) -> Result<(AnyTable, ReadStats), ReadError> {
    let source = source_name(path);
    let again = || open_input(path).map(|r| r as Box<dyn BufRead>);
    let (mut table, stats) = read_table_any(open_input(path)?, &source, opts, Some(&again))?;
    let label = file_label(path);
    match &mut table {
        AnyTable::V4(t) => t.name = label,
        AnyTable::V6(t) => t.name = label,
    }
    Ok((table, stats))
}

/// [`read_table_with_stats`] for input that is not a file (memory, a socket, a fuzzer).
///
/// `reader` must yield the plain (decompressed) bytes; `source` names the input in errors
/// and becomes the table's name.
///
/// ```
/// use lpmkit::io::{read_table_from_reader, TableOptions};
/// let input = std::io::Cursor::new(b"2001:db8::/32 up\n".to_vec());
/// let (t, _) = read_table_from_reader(Box::new(input), "mem", &TableOptions::default())?;
/// assert_eq!(t.family(), lpmkit::Family::V6);
/// # Ok::<(), lpmkit::io::ReadError>(())
/// ```
pub fn read_table_from_reader(
    reader: Box<dyn std::io::BufRead + Send>,
    source: &str,
    opts: &TableOptions,
) -> Result<(AnyTable, ReadStats), ReadError> {
    read_table_any(reader, source, opts, None)
}

/// [`read_table_from_reader`]; `again` reads the input again (for the line a duplicate
/// prefix was first on), if it can be.
fn read_table_any(
    reader: Box<dyn std::io::BufRead + Send>,
    source: &str,
    opts: &TableOptions,
    again: Again<'_>,
) -> Result<(AnyTable, ReadStats), ReadError> {
    let (format, r) = sniff(source, reader)?;
    let mut lines = match format {
        Format::Mrt => return mrt_table(source, r, opts, None),
        Format::Text => LineReader::new(r, source),
    };
    if starts_bgpdump(&mut lines)? {
        return read_bgpdump_rib(&mut lines, opts, None);
    }
    no_peers(source, opts)?;
    let Some(token) = first_route(&mut lines)? else {
        return Err(ReadError::whole(source, "no routes"));
    };
    let (family, origin) = match opts.family {
        Some(f) => (f, FamilyOrigin::Forced),
        None => (guess_family(&token), FamilyOrigin::Detected(lines.line())),
    };
    let t = match family {
        Family::V4 => AnyTable::V4(parse_text_lines::<Ipv4, _>(
            &mut lines, opts, origin, again,
        )?),
        Family::V6 => AnyTable::V6(parse_text_lines::<Ipv6, _>(
            &mut lines, opts, origin, again,
        )?),
    };
    let stats = ReadStats {
        lines: lines.line(),
        ..ReadStats::default()
    };
    Ok((t, stats))
}

/// The first token of the first route line (read again next), if there is one.
fn first_route<R: BufRead>(lines: &mut LineReader<R>) -> Result<Option<String>, ReadError> {
    while let Some(line) = lines.next_filled_line()? {
        if let Some(tok) = route_token(line) {
            let tok = tok.to_string();
            lines.unread();
            return Ok(Some(tok));
        }
    }
    Ok(None)
}

/// Reads a routing table of family `A` (any format [`read_table`] reads).
///
/// It is an error if the file holds no routes of family `A` (for a text table: if its
/// first route is of the other family), or if `opts.family` forces the other family.
pub fn read_table_as<A: Address>(path: &Path, opts: &TableOptions) -> Result<Table<A>, ReadError> {
    let source = source_name(path);
    if let Some(f) = opts.family {
        if f != A::FAMILY {
            return Err(ReadError::whole(
                &source,
                format!(
                    "the family is forced to {f}, but an {} table was requested",
                    A::FAMILY
                ),
            ));
        }
    }
    let (format, r) = sniff(&source, open_input(path)?)?;
    let any = match format {
        Format::Mrt => mrt_table(&source, r, opts, Some(A::FAMILY))?.0,
        Format::Text => {
            let mut lines = LineReader::new(r, &source);
            if starts_bgpdump(&mut lines)? {
                read_bgpdump_rib(&mut lines, opts, Some(A::FAMILY))?.0
            } else {
                no_peers(&source, opts)?;
                let Some(token) = first_route(&mut lines)? else {
                    return Err(ReadError::whole(&source, "no routes"));
                };
                let origin = if opts.family.is_some() {
                    FamilyOrigin::Forced
                } else {
                    let f = guess_family(&token);
                    if f != A::FAMILY {
                        return Err(ReadError::whole(
                            &source,
                            format!(
                                "no {} routes (the first route, on line {}, is {f})",
                                A::FAMILY,
                                lines.line()
                            ),
                        ));
                    }
                    FamilyOrigin::Detected(lines.line())
                };
                let again = || open_input(path).map(|r| r as Box<dyn BufRead>);
                let mut t = parse_text_lines::<A, _>(&mut lines, opts, origin, Some(&again))?;
                t.name = file_label(path);
                return Ok(t);
            }
        }
    };
    let mut t = into_family::<A>(any)
        .ok_or_else(|| ReadError::whole(&source, format!("no {} routes", A::FAMILY)))?;
    t.name = file_label(path);
    Ok(t)
}

/// The table if it has family `A`.
fn into_family<A: Address>(t: AnyTable) -> Option<Table<A>> {
    let any: Box<dyn std::any::Any> = match t {
        AnyTable::V4(t) => Box::new(t),
        AnyTable::V6(t) => Box::new(t),
    };
    any.downcast::<Table<A>>().ok().map(|b| *b)
}

/// A peer was asked for, but a plain text table has no peers: an error, not a silent
/// "all of them".
fn no_peers(source: &str, opts: &TableOptions) -> Result<(), ReadError> {
    match opts.peer {
        Some(peer) => Err(ReadError::whole(
            source,
            format!(
                "peer {peer} was asked for, but a PREFIX/LEN [NEXTHOP] table has no peers \
                 (selecting a peer needs an MRT or `bgpdump -m` RIB dump)"
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(not(feature = "mrt"))]
fn mrt_table(
    source: &str,
    _r: impl Read,
    _opts: &TableOptions,
    _want: Option<Family>,
) -> Result<(AnyTable, ReadStats), ReadError> {
    Err(ReadError::whole(
        source,
        "MRT input needs lpmkit's `mrt` feature",
    ))
}

#[cfg(feature = "mrt")]
fn mrt_table(
    source: &str,
    r: impl Read,
    opts: &TableOptions,
    want: Option<Family>,
) -> Result<(AnyTable, ReadStats), ReadError> {
    super::mrt::read_mrt_rib(source, r, opts, want)
}

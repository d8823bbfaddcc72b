//! Address lists (for trace replay): one address per line.

use crate::shown::Shown;
use std::path::Path;

use super::text::{address_family, parse_address, strip_comment};
use std::io::BufRead;

use super::{open_input, source_name, LineReader, ReadError};
use crate::prefix::Address;

/// Reads a list of addresses of family `A`, one per line, in file order.
///
/// `#` starts a comment (whole line or trailing), blank lines and surrounding whitespace
/// are ignored, CRLF is accepted; `.xz`/`.gz` input is decompressed ([`super::open_input`]).
/// A bad address, an address of the other family, a second token on a line, and a file
/// without addresses are errors naming the file (and line).
///
/// ```no_run
/// let keys: Vec<u32> = lpmkit::io::read_addresses("trace.txt".as_ref())?;
/// # Ok::<(), lpmkit::io::ReadError>(())
/// ```
pub fn read_addresses<A: Address>(path: &Path) -> Result<Vec<A>, ReadError> {
    let source = source_name(path);
    addresses_of(&mut LineReader::new(open_input(path)?, &source))
}

/// Parses an address list held in memory (see [`read_addresses`]); `source` names it in
/// errors.
///
/// ```
/// let v: Vec<u32> = lpmkit::io::parse_addresses("10.0.0.1\n# c\n\n192.0.2.1 # x\r\n", "list")?;
/// assert_eq!(v, [0x0a00_0001, 0xc000_0201]);
/// # Ok::<(), lpmkit::io::ReadError>(())
/// ```
pub fn parse_addresses<A: Address>(text: &str, source: &str) -> Result<Vec<A>, ReadError> {
    addresses_of(&mut LineReader::new(text.as_bytes(), source))
}

/// The addresses of `lines`, read one line at a time (memory for the addresses only).
fn addresses_of<A: Address, R: BufRead>(lines: &mut LineReader<R>) -> Result<Vec<A>, ReadError> {
    let source = lines.source().to_string();
    let source = source.as_str();
    let mut out = Vec::new();
    while let Some((lineno, line)) = lines.next_numbered()? {
        let mut toks = strip_comment(line).split_ascii_whitespace();
        let Some(tok) = toks.next() else { continue };
        if let Some(extra) = toks.next() {
            return Err(ReadError::at_line(
                source,
                lineno,
                format!(
                    "unexpected second column {:?} (expected one address per line)",
                    Shown(extra)
                ),
            ));
        }
        match parse_address::<A>(tok) {
            Some(a) => out.push(a),
            None => {
                let msg = match address_family(tok) {
                    Some(f) if f != A::FAMILY => {
                        format!(
                            "{f} address {:?} in a list of {} addresses",
                            Shown(tok),
                            A::FAMILY
                        )
                    }
                    _ => format!("bad {} address {:?}", A::FAMILY, Shown(tok)),
                };
                return Err(ReadError::at_line(source, lineno, msg));
            }
        }
    }
    if out.is_empty() {
        return Err(ReadError::whole(source, "no addresses"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prefix::{Ipv4, Ipv6};

    #[test]
    fn lists_and_errors() {
        let v: Vec<Ipv6> = parse_addresses("2001:db8::1\n::\n", "l").unwrap();
        assert_eq!(v, [0x2001_0db8u128 << 96 | 1, 0]);
        let e = |t: &str| parse_addresses::<Ipv4>(t, "l").unwrap_err().to_string();
        assert_eq!(
            e("10.0.0.1\n10.0.0.256\n"),
            "l:2: bad ipv4 address \"10.0.0.256\""
        );
        assert_eq!(
            e("::1\n"),
            "l:1: ipv6 address \"::1\" in a list of ipv4 addresses"
        );
        assert_eq!(
            e("1.2.3.4 5\n"),
            "l:1: unexpected second column \"5\" (expected one address per line)"
        );
        assert_eq!(e("# nothing\n"), "l: no addresses");
    }
}

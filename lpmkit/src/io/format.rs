//! What the readers share: the two kinds of input (text and MRT), telling them apart,
//! and the update record every trace reader produces.

use std::io::{BufRead, Cursor, Read};

use crate::fib::Change;
use crate::prefix::Address;

use super::ReadError;

/// What kind of content an input holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Text (a table, a `bgpdump -m` dump, a trace, an address list).
    Text,
    /// Binary MRT (RFC 6396).
    Mrt,
}

/// MRT types (RFC 6396 §4 and the deprecated ones bgpkit-parser reads): BGP (5),
/// TABLE_DUMP (12), TABLE_DUMP_V2 (13), BGP4MP (16), BGP4MP_ET (17), ISIS (32, 33),
/// OSPFv3 (48, 49), OSPFv2 (11).
const MRT_TYPES: &[u8] = &[5, 11, 12, 13, 16, 17, 32, 33, 48, 49];

/// Reads the first bytes of `r` and decides between MRT and text. Returns the format and a
/// reader that yields the whole input again.
pub(crate) fn sniff(
    source: &str,
    mut r: Box<dyn std::io::BufRead + Send>,
) -> Result<(Format, impl BufRead + Send), ReadError> {
    let mut head = Vec::with_capacity(12);
    (&mut r)
        .take(12)
        .read_to_end(&mut head)
        .map_err(|e| ReadError::io(source, e))?;
    // An MRT common header is timestamp(4) type(2) subtype(2) length(4); a known type has a
    // zero high byte, which text never has.
    let format = if head.len() == 12 && head[4] == 0 && MRT_TYPES.contains(&head[5]) {
        Format::Mrt
    } else {
        Format::Text
    };
    Ok((format, Cursor::new(head).chain(r)))
}

/// One route change of an update trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update<A: Address> {
    /// Seconds since the Unix epoch.
    pub time: u64,
    /// The announcement (with its interned next hop) or withdrawal.
    pub change: Change<A>,
    /// The collector peer that sent it, if the trace says.
    pub peer: Option<String>,
}

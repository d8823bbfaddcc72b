//! Readers for routing tables, update traces and address lists.
//!
//! Every reader takes a file path, decompresses `.xz` and `.gz` input transparently (by
//! magic bytes, whatever the extension; see [`open_input`]) and reports bad input as a
//! [`ReadError`] naming the file and the line (text) or byte offset (binary) and saying
//! what is wrong. No reader panics on any input (the fuzz targets in `fuzz/` check
//! this), and none drops data silently: records and routes it does not use are counted in
//! a [`ReadStats`]. (Within an MRT record, bgpkit-parser's own leniency applies: an
//! attribute it cannot decode is dropped with a validation warning; a RIB record whose
//! entries do not all parse is an error here.)
//!
//! | input | function | formats |
//! |---|---|---|
//! | routing table | [`read_table`], [`read_table_as`], [`parse_text_table`] | text `PREFIX/LEN [NEXTHOP]`, `bgpdump -m` text, MRT `TABLE_DUMP` / `TABLE_DUMP_V2` RIB dumps (RFC 6396 §4.2, §4.3) |
//! | update trace | [`read_updates`] | text `UNIXTIME A\|W PREFIX/LEN NEXTHOP\|- [PEER]`, `bgpdump -m` update text, MRT `BGP4MP` (RFC 6396 §4.4) |
//! | address list | [`read_addresses`] | one address per line |
//!
//! The text formats are those of the real tables the tests use (the repository's
//! `docs/data.md`). A
//! text line may be at most [`MAX_LINE_BYTES`] (64 KiB) long: a longer one is an error
//! naming its line, found in bounded memory (a file of zeros fails at once, not after
//! being read whole). [`LineReader`] reads text one line at a time with that bound, for
//! streams read in constant memory.
//! A text table has one route per line, `PREFIX/LEN NEXTHOP`, where NEXTHOP is any token
//! (an address, `AS64500`, a name); `#` starts a comment (whole line or trailing); blank
//! lines and CRLF line ends are accepted. A table whose lines are only `PREFIX/LEN` gets
//! next hops from [`assigned_next_hop`], named `nh1` … `nhN`. Prefixes must be canonical
//! (host bits zero) unless [`TableOptions::normalize`] is set, and unique.
//!
//! Multi-peer RIBs (MRT dumps, `bgpdump -m` text) are reduced to a FIB either from one
//! peer ([`TableOptions::peer`]) or by the best-path rule documented in [`best_path`]; the
//! FIB's next hop is the chosen path's NEXT_HOP (the peer address if it has none).
//!
//! Input that is not a file (memory, a socket) goes through [`read_table_from_reader`] and
//! [`read_updates_from_reader`]; text already in memory through [`parse_text_table`],
//! [`parse_text_updates`] and [`parse_addresses`].
//!
//! ```
//! use lpmkit::io::{parse_text_table, TableOptions};
//! use lpmkit::Ipv4;
//!
//! let text = "# a tiny table\n10.0.0.0/8 192.0.2.1\n10.1.0.0/16 AS64500 # trailing comment\r\n";
//! let t = parse_text_table::<Ipv4>(text, "tiny.txt", &TableOptions::default())?;
//! assert_eq!(t.rib.len(), 2);
//! let nh = t.rib.lookup(0x0a01_0203).unwrap();
//! assert_eq!(t.next_hops.value(nh).map(String::as_str), Some("AS64500"));
//!
//! let err = parse_text_table::<Ipv4>("10.0.0.1/8 x\n", "bad.txt", &TableOptions::default())
//!     .unwrap_err();
//! assert_eq!(err.to_string(), "bad.txt:1: prefix 10.0.0.1/8 has host bits set (did you mean 10.0.0.0/8?)");
//! # Ok::<(), lpmkit::io::ReadError>(())
//! ```

use core::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::net::IpAddr;
use std::path::Path;

use crate::prefix::Family;

mod lines;
pub use lines::{LineReader, MAX_LINE_BYTES};
mod text;
pub use text::{assigned_next_hop, parse_text_table};

mod bgpdump;
mod multipeer;
pub use multipeer::{best_path, PathAttrs};

#[cfg(feature = "mrt")]
mod mrt;
#[cfg(feature = "mrt")]
mod mrt_rib;

mod format;
pub use format::Update;

mod updates;
pub use updates::{
    parse_text_updates, read_updates, read_updates_from_reader, read_updates_with_stats,
};

mod addresses;
pub use addresses::{parse_addresses, read_addresses};

mod table_reader;
pub use table_reader::{read_table, read_table_as, read_table_from_reader, read_table_with_stats};

/// Why a reader refused its input: the file, the line or byte offset, and what is wrong.
///
/// `Display` prints `FILE:LINE: message` for text input, `FILE: byte offset N: message`
/// for binary input and `FILE: message` for problems of the whole file (it cannot be
/// opened, it holds no routes).
#[derive(Debug)]
pub struct ReadError {
    source: String,
    line: Option<usize>,
    offset: Option<u64>,
    message: String,
    cause: Option<std::io::Error>,
}

impl ReadError {
    /// An error about line `line` (1-based) of a text input.
    pub(crate) fn at_line(source: &str, line: usize, message: impl Into<String>) -> Self {
        ReadError {
            source: source.to_string(),
            line: Some(line),
            offset: None,
            message: message.into(),
            cause: None,
        }
    }

    /// An error about the bytes at `offset` of a binary input.
    #[allow(dead_code)]
    pub(crate) fn at_offset(source: &str, offset: u64, message: impl Into<String>) -> Self {
        ReadError {
            source: source.to_string(),
            line: None,
            offset: Some(offset),
            message: message.into(),
            cause: None,
        }
    }

    /// An error about the whole input.
    pub(crate) fn whole(source: &str, message: impl Into<String>) -> Self {
        ReadError {
            source: source.to_string(),
            line: None,
            offset: None,
            message: message.into(),
            cause: None,
        }
    }

    /// An I/O error (including a decompression error) while reading `source`.
    pub(crate) fn io(source: &str, err: std::io::Error) -> Self {
        ReadError {
            source: source.to_string(),
            line: None,
            offset: None,
            message: err.to_string(),
            cause: Some(err),
        }
    }

    /// The input's name (normally the path as given).
    pub fn input(&self) -> &str {
        &self.source
    }

    /// The underlying I/O (or decompression) error, if that is what went wrong. Its text
    /// is already part of [`message`](Self::message), so `Error::source` does not repeat
    /// it.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        self.cause.as_ref()
    }

    /// The 1-based line number, for text input.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// The byte offset in the (decompressed) input, for binary input.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }

    /// What is wrong, without the file and position.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.offset) {
            (Some(l), _) => write!(f, "{}:{}: {}", self.source, l, self.message),
            (None, Some(o)) => write!(f, "{}: byte offset {}: {}", self.source, o, self.message),
            (None, None) => write!(f, "{}: {}", self.source, self.message),
        }
    }
}

impl std::error::Error for ReadError {}

/// How to read a routing table.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Clear host bits (`10.1.2.3/8` becomes `10.0.0.0/8`) instead of refusing the prefix.
    pub normalize: bool,
    /// For prefix-only files: the number of distinct next hops [`assigned_next_hop`]
    /// spreads the prefixes over (default 200; must be at least 1).
    pub assign_next_hops: u32,
    /// For multi-peer RIBs (MRT, `bgpdump -m`): take the routes of this peer only, instead
    /// of choosing a best path per prefix.
    pub peer: Option<IpAddr>,
    /// Force the family instead of detecting it from the content (the first route decides).
    pub family: Option<Family>,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            normalize: false,
            assign_next_hops: 200,
            peer: None,
            family: None,
        }
    }
}

/// What a reader saw besides the routes or updates it returned.
///
/// Fields that do not apply to a format stay zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Lines read (text input).
    pub lines: usize,
    /// MRT records read, of every type.
    pub records: usize,
    /// RIB entries (one per peer and prefix) seen in a multi-peer RIB, of both families.
    pub rib_entries: usize,
    /// Distinct peers that contributed entries to a multi-peer RIB.
    pub peers: usize,
    /// Routes (or updates) of the other family, left out.
    pub other_family: usize,
    /// Multi-peer RIB entries of peers other than [`TableOptions::peer`], left out.
    pub other_peers: usize,
    /// MRT records skipped because they carry no routes of the kind asked for (for
    /// instance BGP4MP state changes or OPEN/KEEPALIVE messages in an update file, or
    /// update messages in a RIB dump), by type name.
    pub skipped_records: Vec<(String, usize)>,
    /// Announcements or RIB entries without a next hop, for which the peer address was used.
    pub missing_next_hop: usize,
    /// MRT prefixes whose host bits were cleared (RFC 4271 §4.3: the trailing bits of an
    /// NLRI prefix are irrelevant).
    pub normalized: usize,
    /// Announcements returned (update traces).
    pub announces: usize,
    /// Withdrawals returned (update traces).
    pub withdraws: usize,
}

impl ReadStats {
    /// One line per kind of input the reader left out or changed (routes of the other
    /// family, other peers' entries, MRT records of other kinds, missing next hops,
    /// normalised prefixes), for a program to show its user; empty if nothing was.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.other_family > 0 {
            notes.push(format!(
                "left out {} routes or updates of the other address family",
                self.other_family
            ));
        }
        if self.other_peers > 0 {
            notes.push(format!(
                "left out {} RIB entries of other peers",
                self.other_peers
            ));
        }
        if !self.skipped_records.is_empty() {
            notes.push(self.skipped_note().trim_start_matches("; ").to_string());
        }
        if self.missing_next_hop > 0 {
            notes.push(format!(
                "{} announcements or entries had no next hop: their peer's address stands in",
                self.missing_next_hop
            ));
        }
        if self.normalized > 0 {
            notes.push(format!(
                "cleared the host bits of {} MRT prefixes",
                self.normalized
            ));
        }
        notes
    }

    /// Total of [`skipped_records`](Self::skipped_records).
    pub fn skipped_total(&self) -> usize {
        self.skipped_records.iter().map(|(_, n)| n).sum()
    }

    /// `"; skipped N MRT records: KIND ×n, …"` for error messages, or `""` if none were.
    pub(crate) fn skipped_note(&self) -> String {
        if self.skipped_records.is_empty() {
            return String::new();
        }
        let mut kinds = self.skipped_records.clone();
        kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let list: Vec<String> = kinds
            .iter()
            .take(4)
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        let more = if kinds.len() > 4 { ", …" } else { "" };
        format!(
            "; skipped {} MRT records: {}{more}",
            self.skipped_total(),
            list.join(", ")
        )
    }

    /// Counts one skipped record of type `kind`.
    #[allow(dead_code)]
    pub(crate) fn skip(&mut self, kind: &str) {
        match self.skipped_records.iter_mut().find(|(k, _)| k == kind) {
            Some((_, n)) => *n += 1,
            None => self.skipped_records.push((kind.to_string(), 1)),
        }
    }
}

/// The kind of compression [`open_input`] recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compression {
    None,
    #[cfg_attr(not(feature = "compression"), allow(dead_code))]
    Xz,
    #[cfg_attr(not(feature = "compression"), allow(dead_code))]
    Gzip,
}

const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0];
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const BZIP2_MAGIC: &[u8] = b"BZh";
const ZSTD_MAGIC: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// A name for `path` in error messages: the path as given.
pub(crate) fn source_name(path: &Path) -> String {
    path.display().to_string()
}

/// Opens a file for reading, decompressing xz and gzip (including multi-member gzip and
/// multi-stream xz) transparently.
///
/// The format is recognised by its magic bytes, not by the file name, so a compressed file
/// with any name works and a plain file named `.gz` is read as plain text. `-` reads
/// standard input. bzip2 and zstd input is recognised and refused with a clear error
/// (decompress it first). Without the `compression` feature, compressed input is refused
/// the same way.
///
/// Decompression errors (a truncated or corrupt stream) surface from the returned
/// reader's `read` as [`std::io::Error`]s whose message names the format and the number
/// of bytes decompressed before the error; the readers in this module turn them into
/// [`ReadError`]s naming the file.
#[doc(hidden)]
pub fn open_input(path: &Path) -> Result<Box<dyn BufRead + Send>, ReadError> {
    let name = source_name(path);
    let mut raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(
            File::open(path).map_err(|e| ReadError::whole(&name, format!("cannot open: {e}")))?,
        )
    };
    // Read the first few bytes to recognise the format, then put them back in front.
    let mut head = [0u8; 6];
    let mut got = 0;
    while got < head.len() {
        match raw.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ReadError::whole(&name, format!("cannot read: {e}"))),
        }
    }
    let head = head[..got].to_vec();
    let compression = if head.starts_with(XZ_MAGIC) {
        compressed(&name, "xz", Compression::Xz)?
    } else if head.starts_with(GZIP_MAGIC) {
        compressed(&name, "gzip", Compression::Gzip)?
    } else if head.starts_with(BZIP2_MAGIC) && head.len() > 3 && head[3].is_ascii_digit() {
        return Err(ReadError::whole(
            &name,
            "bzip2 input is not supported; decompress it first (bunzip2 -k FILE)",
        ));
    } else if head.starts_with(ZSTD_MAGIC) {
        return Err(ReadError::whole(
            &name,
            "zstd input is not supported; decompress it first (zstd -d FILE)",
        ));
    } else {
        Compression::None
    };
    let chained = Cursor::new(head).chain(raw);
    const CAP: usize = 1 << 16;
    Ok(match compression {
        Compression::None => Box::new(BufReader::with_capacity(CAP, chained)),
        #[cfg(feature = "compression")]
        Compression::Xz => Box::new(BufReader::with_capacity(
            CAP,
            Decoded::new(liblzma::read::XzDecoder::new_multi_decoder(chained), "xz"),
        )),
        #[cfg(feature = "compression")]
        Compression::Gzip => Box::new(BufReader::with_capacity(
            CAP,
            Decoded::new(flate2::read::MultiGzDecoder::new(chained), "gzip"),
        )),
        #[cfg(not(feature = "compression"))]
        _ => unreachable!("compressed() refuses compressed input without the feature"),
    })
}

#[cfg(feature = "compression")]
fn compressed(_name: &str, _what: &str, c: Compression) -> Result<Compression, ReadError> {
    Ok(c)
}

#[cfg(not(feature = "compression"))]
fn compressed(name: &str, what: &str, _c: Compression) -> Result<Compression, ReadError> {
    Err(ReadError::whole(
        name,
        format!("{what} input needs lpmkit's `compression` feature; decompress it first"),
    ))
}

/// A decompressing reader that counts its output and says what failed.
#[cfg(feature = "compression")]
struct Decoded<R> {
    inner: R,
    what: &'static str,
    out: u64,
}

#[cfg(feature = "compression")]
impl<R: Read> Decoded<R> {
    fn new(inner: R, what: &'static str) -> Self {
        Decoded {
            inner,
            what,
            out: 0,
        }
    }
}

#[cfg(feature = "compression")]
impl<R: Read> Read for Decoded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.out += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                let kind = if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    "truncated"
                } else {
                    "corrupt"
                };
                Err(std::io::Error::new(
                    e.kind(),
                    DecodeError(format!(
                        "{kind} {} data after {} decompressed bytes ({e})",
                        self.what, self.out
                    )),
                ))
            }
        }
    }
}

/// A decompression failure, as the payload of the `std::io::Error` the reader returns.
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) struct DecodeError(String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

/// True if `e` is a decompression failure from [`open_input`]'s reader.
#[allow(dead_code)]
pub(crate) fn is_decode_error(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<DecodeError>())
}

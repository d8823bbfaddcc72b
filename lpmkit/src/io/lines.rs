//! Text lines with a bound on their length: a reader never holds more than
//! [`MAX_LINE_BYTES`] of a line, whatever the input (a file of zeros, a binary file, a
//! stream without line ends).

use std::io::{BufRead, Read};

use super::ReadError;

/// The longest line a text reader accepts, in bytes (64 KiB, without the line end). A
/// longer line is an error naming its line number, found after reading at most this many
/// bytes of it.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

fn too_long(source: &str, line: usize, max: usize) -> ReadError {
    ReadError::at_line(
        source,
        line,
        format!("the line is longer than {max} bytes (the longest a text line may be)"),
    )
}

/// Reads a whole text input (lines of at most [`MAX_LINE_BYTES`]); non-UTF-8 text is an
/// error naming the line.
pub(crate) fn read_text(source: &str, mut r: impl Read) -> Result<String, ReadError> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let (mut line, mut line_len) = (1usize, 0usize);
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::io(source, e)),
        };
        let mut rest = &chunk[..n];
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            if line_len + i > MAX_LINE_BYTES {
                return Err(too_long(source, line, MAX_LINE_BYTES));
            }
            line += 1;
            line_len = 0;
            rest = &rest[i + 1..];
        }
        line_len += rest.len();
        if line_len > MAX_LINE_BYTES {
            return Err(too_long(source, line, MAX_LINE_BYTES));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    super::text_from_bytes(source, bytes)
}

/// Reads text one line at a time in constant memory: each line at most a maximum length
/// ([`MAX_LINE_BYTES`] unless set), UTF-8, its line end (`\n` or `\r\n`) removed. Errors
/// name the input and the line.
///
/// ```
/// use lpmkit::io::LineReader;
/// let mut r = LineReader::new(&b"10.0.0.1\r\n192.0.2.1\n"[..], "list");
/// assert_eq!(r.next_line()?, Some("10.0.0.1"));
/// assert_eq!(r.next_line()?, Some("192.0.2.1"));
/// assert_eq!(r.next_line()?, None);
///
/// let mut r = LineReader::new(&[b'0'; 100][..], "zeros").with_max_len(64);
/// assert_eq!(
///     r.next_line().unwrap_err().to_string(),
///     "zeros:1: the line is longer than 64 bytes (the longest a text line may be)"
/// );
/// # Ok::<(), lpmkit::io::ReadError>(())
/// ```
#[derive(Debug)]
#[doc(hidden)]
pub struct LineReader<R> {
    inner: R,
    source: String,
    line: usize,
    max: usize,
    buf: Vec<u8>,
}

impl<R: BufRead> LineReader<R> {
    /// Lines of `inner`; `source` names it in errors.
    pub fn new(inner: R, source: &str) -> Self {
        LineReader {
            inner,
            source: source.to_string(),
            line: 0,
            max: MAX_LINE_BYTES,
            buf: Vec::new(),
        }
    }

    /// Sets the longest line accepted, in bytes.
    pub fn with_max_len(mut self, max: usize) -> Self {
        self.max = max;
        self
    }

    /// The number of the line [`next_line`](Self::next_line) returned last (1-based; 0
    /// before the first).
    pub fn line(&self) -> usize {
        self.line
    }

    /// The next line, without its line end; `None` at the end of the input. A UTF-8
    /// byte-order mark before the first line is skipped.
    pub fn next_line(&mut self) -> Result<Option<&str>, ReadError> {
        self.buf.clear();
        self.line += 1;
        let mut any = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadError::io(&self.source, e)),
            };
            if avail.is_empty() {
                break;
            }
            any = true;
            let (take, done) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (i, true),
                None => (avail.len(), false),
            };
            // The line end is not part of the line, but the `\r` of a `\r\n` may be
            // in the buffer: allow one byte for it here, check exactly below.
            if self.buf.len() + take > self.max + 1 {
                return Err(too_long(&self.source, self.line, self.max));
            }
            self.buf.extend_from_slice(&avail[..take]);
            self.inner.consume(take + usize::from(done));
            if done {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        if self.buf.len() > self.max {
            return Err(too_long(&self.source, self.line, self.max));
        }
        let start = if self.line == 1 && self.buf.starts_with(b"\xef\xbb\xbf") {
            3
        } else {
            0
        };
        match std::str::from_utf8(&self.buf[start..]) {
            Ok(s) => Ok(Some(s)),
            Err(e) => Err(ReadError::at_line(
                &self.source,
                self.line,
                format!("not UTF-8 text (byte {} of the line)", e.valid_up_to() + 1),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_text_bounds_lines_and_names_them() {
        let ok = format!("a\n{}\nb", "x".repeat(MAX_LINE_BYTES));
        assert_eq!(read_text("t", ok.as_bytes()).unwrap(), ok);
        let long = format!("a\nb\n{}\n", "x".repeat(MAX_LINE_BYTES + 1));
        assert_eq!(
            read_text("t", long.as_bytes()).unwrap_err().to_string(),
            format!(
                "t:3: the line is longer than {MAX_LINE_BYTES} bytes (the longest a text line may be)"
            )
        );
        // An endless line is refused after a bounded read.
        let mut zeros = std::io::repeat(0).take(1 << 40);
        let e = read_text("zeros", &mut zeros).unwrap_err();
        assert_eq!(e.line(), Some(1));
        assert!(zeros.limit() > (1 << 40) - 4 * MAX_LINE_BYTES as u64);
    }

    #[test]
    fn line_reader_lines_bounds_and_errors() {
        let mut r = LineReader::new(&b"\xef\xbb\xbfone\r\n\ntwo"[..], "s");
        assert_eq!(r.next_line().unwrap(), Some("one"));
        assert_eq!(r.next_line().unwrap(), Some(""));
        assert_eq!(r.next_line().unwrap(), Some("two"));
        assert_eq!(r.line(), 3);
        assert_eq!(r.next_line().unwrap(), None);
        // Exactly the maximum is fine (with or without `\r`); one more is not.
        for text in ["abcd\nabcd\r\nab", "abcd"] {
            let mut r = LineReader::new(text.as_bytes(), "s").with_max_len(4);
            while r.next_line().unwrap().is_some() {}
        }
        // A `\r\n` split between two reads of the buffer.
        let split = std::io::BufReader::with_capacity(5, &b"abcd\r\nx"[..]);
        let mut r = LineReader::new(split, "s").with_max_len(4);
        assert_eq!(r.next_line().unwrap(), Some("abcd"));
        let mut r = LineReader::new(&b"abcd\nabcde\n"[..], "s").with_max_len(4);
        r.next_line().unwrap();
        assert_eq!(r.next_line().unwrap_err().line(), Some(2));
        // Not UTF-8.
        let mut r = LineReader::new(&b"ok\n\xff\n"[..], "s");
        r.next_line().unwrap();
        assert_eq!(
            r.next_line().unwrap_err().to_string(),
            "s:2: not UTF-8 text (byte 1 of the line)"
        );
        // An endless line, read through a small buffer: refused in bounded memory.
        let zeros = std::io::BufReader::with_capacity(16, std::io::repeat(0).take(1 << 40));
        let mut r = LineReader::new(zeros, "zeros").with_max_len(1000);
        assert_eq!(r.next_line().unwrap_err().line(), Some(1));
        assert!(r.buf.capacity() < 4096);
    }
}

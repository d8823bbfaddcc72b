//! Text read one line at a time, with a bound on the length of a line: a reader holds
//! one line of the input, never the input, whatever it is (a file of zeros, a binary
//! file, a stream without line ends, gigabytes of blank lines); binary input is refused at
//! its first byte that is not UTF-8 text, with its offset.

use std::io::BufRead;

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

/// Reads text one line at a time in constant memory: each line at most a maximum length
/// ([`MAX_LINE_BYTES`] unless set), UTF-8, its line end (`\n` or `\r\n`) removed. Errors
/// name the input and the line; input that is not UTF-8 text also the byte offset of the
/// first byte that is not.
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
    /// Where the current line's text starts in `buf` (after a byte-order mark).
    start: usize,
    /// Bytes of the input before the current line.
    offset: u64,
    /// Bytes the current line took, its end included.
    taken: u64,
    /// [`unread`](Self::unread): the next call returns the current line again.
    again: bool,
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
            start: 0,
            offset: 0,
            taken: 0,
            again: false,
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

    /// The input's name in errors.
    pub(crate) fn source(&self) -> &str {
        &self.source
    }

    /// Makes the next [`next_line`](Self::next_line) return the line it returned last
    /// again (a reader that looked at a line to decide how to read the input).
    pub(crate) fn unread(&mut self) {
        self.again = self.line > 0;
    }

    /// The next line, without its line end; `None` at the end of the input. A UTF-8
    /// byte-order mark before the first line is skipped.
    pub fn next_line(&mut self) -> Result<Option<&str>, ReadError> {
        if self.again {
            self.again = false;
            return Ok(Some(self.current()));
        }
        self.offset += self.taken;
        self.taken = 0;
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
            self.taken += (take + usize::from(done)) as u64;
            if done {
                break;
            }
        }
        if !any {
            self.line -= 1;
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        if self.buf.len() > self.max {
            return Err(too_long(&self.source, self.line, self.max));
        }
        self.start = if self.line == 1 && self.buf.starts_with(b"\xef\xbb\xbf") {
            3
        } else {
            0
        };
        if let Err(e) = std::str::from_utf8(&self.buf[self.start..]) {
            let at = self.offset + (self.start + e.valid_up_to()) as u64;
            return Err(ReadError::at_line(
                &self.source,
                self.line,
                format!(
                    "not UTF-8 text (byte offset {at}); binary input other than MRT is not supported"
                ),
            ));
        }
        Ok(Some(self.current()))
    }

    /// The next line that is not empty (empty lines are skipped many at a time).
    pub(crate) fn next_filled_line(&mut self) -> Result<Option<&str>, ReadError> {
        Ok(self.next_numbered()?.map(|(_, line)| line))
    }

    /// The next line that is not empty, with its number.
    pub(crate) fn next_numbered(&mut self) -> Result<Option<(usize, &str)>, ReadError> {
        if !self.again {
            self.skip_empty_lines()?;
        }
        let line = self.line + usize::from(!self.again);
        Ok(self.next_line()?.map(|l| (line, l)))
    }

    /// Consumes the empty lines (`\n` alone) that come next, counting them.
    fn skip_empty_lines(&mut self) -> Result<(), ReadError> {
        self.offset += self.taken;
        self.taken = 0;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadError::io(&self.source, e)),
            };
            let n = avail.iter().take_while(|&&b| b == b'\n').count();
            let whole = n == avail.len();
            self.inner.consume(n);
            self.line += n;
            self.offset += n as u64;
            if n == 0 || !whole {
                return Ok(());
            }
        }
    }

    /// The current line's text (checked UTF-8 when it was read).
    fn current(&self) -> &str {
        std::str::from_utf8(&self.buf[self.start..]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn line_reader_lines_bounds_and_errors() {
        let mut r = LineReader::new(&b"\xef\xbb\xbfone\r\n\ntwo"[..], "s");
        assert_eq!(r.next_line().unwrap(), Some("one"));
        r.unread();
        assert_eq!(r.next_line().unwrap(), Some("one"));
        assert_eq!(r.next_line().unwrap(), Some(""));
        assert_eq!(r.next_line().unwrap(), Some("two"));
        assert_eq!(r.line(), 3);
        assert_eq!(r.next_line().unwrap(), None);
        assert_eq!(r.line(), 3);
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
        // Not UTF-8: the line and the byte offset in the input.
        let mut r = LineReader::new(&b"ok\n\nab\xff\n"[..], "s");
        r.next_line().unwrap();
        r.next_line().unwrap();
        assert_eq!(
            r.next_line().unwrap_err().to_string(),
            "s:3: not UTF-8 text (byte offset 6); binary input other than MRT is not supported"
        );
        // An endless line, read through a small buffer: refused in bounded memory.
        let zeros = std::io::BufReader::with_capacity(16, std::io::repeat(0).take(1 << 40));
        let mut r = LineReader::new(zeros, "zeros").with_max_len(1000);
        assert_eq!(r.next_line().unwrap_err().line(), Some(1));
        assert!(r.buf.capacity() < 4096);
    }

    #[test]
    fn empty_lines_are_skipped_in_bulk_and_counted() {
        let text = format!("a\n{}b\r\n\n\nc", "\n".repeat(100_000));
        let small = std::io::BufReader::with_capacity(64, text.as_bytes());
        let mut r = LineReader::new(small, "s");
        assert_eq!(r.next_filled_line().unwrap(), Some("a"));
        assert_eq!(r.next_filled_line().unwrap(), Some("b"));
        assert_eq!(r.line(), 100_002);
        r.unread();
        assert_eq!(r.next_filled_line().unwrap(), Some("b"));
        assert_eq!(r.next_filled_line().unwrap(), Some("c"));
        assert_eq!(r.line(), 100_005);
        assert_eq!(r.next_filled_line().unwrap(), None);
        // Offsets count the skipped lines.
        let mut r = LineReader::new(&b"\n\n\n\xff"[..], "s");
        assert_eq!(
            r.next_filled_line().unwrap_err().to_string(),
            "s:4: not UTF-8 text (byte offset 3); binary input other than MRT is not supported"
        );
    }
}

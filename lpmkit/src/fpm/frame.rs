//! FPM framing: the 4-byte header zebra puts before every message (version 1, type 1 =
//! netlink, the frame's whole length in network byte order), read from a byte stream that
//! arrives in pieces of any size.

use core::fmt;

/// The length of the FPM header: version, type, and the frame's length (`u16`, network
/// order), the header included.
pub const HEADER_LEN: usize = 4;
/// The only FPM version there is (`FPM_PROTO_VERSION`).
pub const VERSION: u8 = 1;
/// The frame type of netlink messages (`FPM_MSG_TYPE_NETLINK`), what `dplane_fpm_nl` sends.
pub const TYPE_NETLINK: u8 = 1;
/// The frame type of protobuf messages (`FPM_MSG_TYPE_PROTOBUF`, zebra's older `fpm`
/// module loaded as `-M fpm:protobuf`); not read by lpmkit.
pub const TYPE_PROTOBUF: u8 = 2;
/// The longest frame the header can describe.
pub const MAX_FRAME: usize = u16::MAX as usize;

/// Why an FPM stream cannot be read on. The frames that follow cannot be found again (the
/// header is the only delimiter), so the connection is dropped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError {
    /// The offset of the bad frame's header in the connection's byte stream.
    pub offset: u64,
    /// What is wrong with it.
    pub kind: FrameErrorKind,
}

/// What is wrong with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FrameErrorKind {
    /// A version other than 1.
    Version(u8),
    /// A type other than netlink (1); 2 is zebra's protobuf encoding.
    Type(u8),
    /// A length shorter than the header itself.
    Length(u16),
    /// The stream ended inside a frame: `have` of its `length` bytes arrived.
    Truncated {
        /// The frame's length, as its header says (0 if the header itself is cut).
        length: u16,
        /// The bytes of it that arrived.
        have: usize,
    },
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: ", self.offset)?;
        match self.kind {
            FrameErrorKind::Version(v) => {
                write!(
                    f,
                    "FPM frame of version {v} (lpmkit reads version {VERSION})"
                )
            }
            FrameErrorKind::Type(TYPE_PROTOBUF) => f.write_str(
                "FPM frame of type 2 (protobuf): lpmkit reads netlink frames (type 1), \
                 which zebra sends with the dplane_fpm_nl module",
            ),
            FrameErrorKind::Type(t) => {
                write!(
                    f,
                    "FPM frame of type {t} (lpmkit reads netlink frames, type 1)"
                )
            }
            FrameErrorKind::Length(l) => write!(
                f,
                "FPM frame length {l}, shorter than its own {HEADER_LEN}-byte header"
            ),
            FrameErrorKind::Truncated { length: 0, have } => write!(
                f,
                "the stream ended inside an FPM header ({have} of {HEADER_LEN} bytes)"
            ),
            FrameErrorKind::Truncated { length, have } => write!(
                f,
                "the stream ended inside an FPM frame ({have} of {length} bytes)"
            ),
        }
    }
}

impl std::error::Error for FrameError {}

/// One FPM frame: where it starts in the stream and the netlink messages it carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The offset of its header in the stream.
    pub offset: u64,
    /// What follows the header: one or more netlink messages (zebra sends a route
    /// update as `RTM_DELROUTE` and `RTM_NEWROUTE` in one frame).
    pub payload: &'a [u8],
}

/// Splits a byte stream into FPM frames: [`push`](Self::push) what arrived, then take
/// [`next_frame`](Self::next_frame) until it returns `None`. Taken that way, it holds
/// less than one frame ([`MAX_FRAME`] bytes) beyond what was pushed last, whatever the
/// stream.
#[derive(Clone, Debug, Default)]
pub struct FrameReader {
    buf: Vec<u8>,
    /// The start of the unread bytes in `buf`.
    start: usize,
    /// The stream offset of `buf[start]`.
    offset: u64,
    /// Set once a frame was bad: the reader yields that error from then on.
    failed: Option<FrameError>,
}

impl FrameReader {
    /// A reader at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends bytes that arrived.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            // What is left is less than a frame: moving it costs at most MAX_FRAME bytes.
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The stream offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes held that do not yet make a whole frame.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next whole frame, `Ok(None)` if more bytes are needed, or the error that makes
    /// the rest of the stream unreadable (returned again on every later call).
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let rest = &self.buf[self.start..];
        if rest.len() < HEADER_LEN {
            return Ok(None);
        }
        let kind = match (rest[0], rest[1], u16::from_be_bytes([rest[2], rest[3]])) {
            (v, _, _) if v != VERSION => Some(FrameErrorKind::Version(v)),
            (_, t, _) if t != TYPE_NETLINK => Some(FrameErrorKind::Type(t)),
            (_, _, l) if (l as usize) < HEADER_LEN => Some(FrameErrorKind::Length(l)),
            _ => None,
        };
        if let Some(kind) = kind {
            let e = FrameError {
                offset: self.offset,
                kind,
            };
            self.failed = Some(e.clone());
            return Err(e);
        }
        let len = u16::from_be_bytes([rest[2], rest[3]]) as usize;
        if rest.len() < len {
            return Ok(None);
        }
        let offset = self.offset;
        let from = self.start + HEADER_LEN;
        self.start += len;
        self.offset += len as u64;
        Ok(Some(Frame {
            offset,
            payload: &self.buf[from..from + len - HEADER_LEN],
        }))
    }

    /// The stream has ended: an error if it ended inside a frame.
    pub fn finish(&self) -> Result<(), FrameError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let rest = &self.buf[self.start..];
        if rest.is_empty() {
            return Ok(());
        }
        let length = if rest.len() >= HEADER_LEN {
            u16::from_be_bytes([rest[2], rest[3]])
        } else {
            0
        };
        Err(FrameError {
            offset: self.offset,
            kind: FrameErrorKind::Truncated {
                length,
                have: rest.len(),
            },
        })
    }
}

/// Puts `payload` in an FPM frame (what zebra sends); `None` if it does not fit in one.
pub fn frame(payload: &[u8]) -> Option<Vec<u8>> {
    let len = u16::try_from(HEADER_LEN + payload.len()).ok()?;
    let mut v = Vec::with_capacity(len as usize);
    v.extend_from_slice(&[VERSION, TYPE_NETLINK]);
    v.extend_from_slice(&len.to_be_bytes());
    v.extend_from_slice(payload);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(r: &mut FrameReader) -> Result<Vec<(u64, Vec<u8>)>, FrameError> {
        let mut out = Vec::new();
        while let Some(f) = r.next_frame()? {
            out.push((f.offset, f.payload.to_vec()));
        }
        Ok(out)
    }

    #[test]
    fn frames_arrive_in_pieces_of_any_size() {
        let mut stream = Vec::new();
        let payloads: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; i as usize * 37]).collect();
        for p in &payloads {
            stream.extend(frame(p).unwrap());
        }
        for piece in [1, 3, 4, 5, 64, 1000, stream.len()] {
            let mut r = FrameReader::new();
            let mut got = Vec::new();
            for chunk in stream.chunks(piece) {
                r.push(chunk);
                got.extend(frames(&mut r).unwrap());
            }
            assert_eq!(r.finish(), Ok(()));
            assert_eq!(r.pending(), 0);
            assert_eq!(r.offset(), stream.len() as u64);
            let bodies: Vec<Vec<u8>> = got.iter().map(|(_, b)| b.clone()).collect();
            assert_eq!(bodies, payloads, "pieces of {piece}");
            let mut at = 0u64;
            for (off, body) in &got {
                assert_eq!(*off, at);
                at += (body.len() + HEADER_LEN) as u64;
            }
        }
    }

    #[test]
    fn bad_headers_stop_the_stream_with_their_offset() {
        let good = frame(&[1, 2, 3]).unwrap();
        for (bad, kind) in [
            (vec![2, 1, 0, 8, 0, 0, 0, 0], FrameErrorKind::Version(2)),
            (vec![1, 2, 0, 8, 0, 0, 0, 0], FrameErrorKind::Type(2)),
            (vec![1, 7, 0, 4], FrameErrorKind::Type(7)),
            (vec![1, 1, 0, 3], FrameErrorKind::Length(3)),
            (vec![1, 1, 0, 0], FrameErrorKind::Length(0)),
        ] {
            let mut r = FrameReader::new();
            r.push(&good);
            r.push(&bad);
            r.push(&good);
            assert_eq!(r.next_frame().unwrap().unwrap().payload, &[1, 2, 3]);
            let e = r.next_frame().unwrap_err();
            assert_eq!(e, FrameError { offset: 7, kind });
            assert!(e.to_string().starts_with("offset 7: "), "{e}");
            // The error sticks: nothing after it is read.
            assert_eq!(r.next_frame().unwrap_err(), e);
            assert_eq!(r.finish().unwrap_err(), e);
        }
    }

    #[test]
    fn a_stream_that_ends_inside_a_frame_is_truncated() {
        let f = frame(&[9; 100]).unwrap();
        for cut in [1, 3, 4, 50, 103] {
            let mut r = FrameReader::new();
            r.push(&f);
            r.push(&f[..cut]);
            assert!(r.next_frame().unwrap().is_some());
            assert_eq!(r.next_frame(), Ok(None));
            let length = if cut >= HEADER_LEN { 104 } else { 0 };
            assert_eq!(
                r.finish(),
                Err(FrameError {
                    offset: 104,
                    kind: FrameErrorKind::Truncated { length, have: cut }
                })
            );
        }
    }

    #[test]
    fn the_longest_frame_fits_and_memory_stays_bounded() {
        let big = vec![7u8; MAX_FRAME - HEADER_LEN];
        let f = frame(&big).unwrap();
        assert!(frame(&[0; MAX_FRAME - HEADER_LEN + 1]).is_none());
        let mut r = FrameReader::new();
        for _ in 0..50 {
            for chunk in f.chunks(4096) {
                r.push(chunk);
                while let Some(fr) = r.next_frame().unwrap() {
                    assert_eq!(fr.payload.len(), big.len());
                }
            }
            assert!(r.buf.capacity() <= 4 * MAX_FRAME, "{}", r.buf.capacity());
        }
        assert_eq!(r.offset(), 50 * MAX_FRAME as u64);
    }
}

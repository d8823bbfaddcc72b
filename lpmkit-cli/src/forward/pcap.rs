//! Classic pcap files (microsecond timestamps, Ethernet link type), for inspection of
//! the generated and forwarded frames with tcpdump or Wireshark.

use std::io::{self, Read, Write};

/// Writes a pcap header and frames.
pub fn write<'a>(
    mut w: impl Write,
    frames: impl IntoIterator<Item = &'a [u8]>,
) -> io::Result<usize> {
    let mut hdr = Vec::with_capacity(24);
    hdr.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    hdr.extend_from_slice(&2u16.to_le_bytes());
    hdr.extend_from_slice(&4u16.to_le_bytes());
    hdr.extend_from_slice(&0i32.to_le_bytes());
    hdr.extend_from_slice(&0u32.to_le_bytes());
    hdr.extend_from_slice(&65535u32.to_le_bytes());
    hdr.extend_from_slice(&1u32.to_le_bytes()); // LINKTYPE_ETHERNET
    w.write_all(&hdr)?;
    let mut n = 0;
    for (i, f) in frames.into_iter().enumerate() {
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((i / 1_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&((i % 1_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&(f.len() as u32).to_le_bytes());
        rec[12..16].copy_from_slice(&(f.len() as u32).to_le_bytes());
        w.write_all(&rec)?;
        w.write_all(f)?;
        n += 1;
    }
    Ok(n)
}

/// Reads the frames of a pcap file (either byte order, microsecond or nanosecond).
#[cfg(test)]
pub fn read(r: impl Read) -> io::Result<Vec<Vec<u8>>> {
    let mut frames = Vec::new();
    read_each(r, usize::MAX, |f| frames.push(f.to_vec()))?;
    Ok(frames)
}

/// Reads the frames of a pcap file one at a time into `frame` (either byte order,
/// microsecond or nanosecond); returns how many. More than `max_frames` frames, a record
/// longer than 256 KiB or a truncated record are errors (with the record's number).
pub fn read_each(
    mut r: impl Read,
    max_frames: usize,
    mut frame: impl FnMut(&[u8]),
) -> io::Result<usize> {
    let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
    let mut hdr = [0u8; 24];
    r.read_exact(&mut hdr)
        .map_err(|e| bad(format!("not a pcap file (no 24-byte header: {e})")))?;
    let magic = u32::from_le_bytes(hdr[0..4].try_into().unwrap());
    let le = match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => true,
        0xd4c3_b2a1 | 0x4d3c_b2a1 => false,
        _ => return Err(bad("not a pcap file (bad magic)".into())),
    };
    let u32_at = |b: &[u8]| {
        let a: [u8; 4] = b.try_into().unwrap();
        if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        }
    };
    if u32_at(&hdr[20..24]) != 1 {
        return Err(bad("pcap link type is not Ethernet".into()));
    }
    let mut buf = Vec::new();
    let mut n = 0usize;
    loop {
        let mut rec = [0u8; 16];
        match r.read_exact(&mut rec) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        n += 1;
        if n > max_frames {
            return Err(bad(format!("more than {max_frames} frames")));
        }
        let len = u32_at(&rec[8..12]) as usize;
        if len > 1 << 18 {
            return Err(bad(format!("record {n} is longer than 256 KiB")));
        }
        buf.resize(len, 0);
        r.read_exact(&mut buf)
            .map_err(|e| bad(format!("record {n} is truncated: {e}")))?;
        frame(&buf);
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_trip() {
        let frames = [vec![1u8; 60], vec![2u8; 78]];
        let mut buf = Vec::new();
        super::write(&mut buf, frames.iter().map(|f| f.as_slice())).unwrap();
        assert_eq!(buf.len(), 24 + 16 + 60 + 16 + 78);
        assert_eq!(super::read(&buf[..]).unwrap(), frames);
        assert!(super::read(&b"not a pcap file at all.."[..]).is_err());
    }
}

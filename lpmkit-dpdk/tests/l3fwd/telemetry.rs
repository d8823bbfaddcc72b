//! DPDK's telemetry socket (`/var/run/dpdk/<file-prefix>/dpdk_telemetry.v2`): a port's
//! packet counters from a running DPDK application, here l3fwd, without changing it.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// A connection to one application's telemetry socket.
pub struct Telemetry {
    sock: OwnedFd,
}

impl Telemetry {
    /// Connects to the telemetry socket of the DPDK process run with `--file-prefix=prefix`.
    pub fn connect(prefix: &str) -> std::io::Result<Telemetry> {
        let path = Path::new("/var/run/dpdk")
            .join(prefix)
            .join("dpdk_telemetry.v2");
        // SAFETY: plain socket creation; the descriptor is owned below.
        let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a new descriptor of ours.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: a zeroed sockaddr_un is valid; the path is copied in below.
        let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
        addr.sun_family = libc::AF_UNIX as u16;
        let bytes = path.as_os_str().as_encoded_bytes();
        if bytes.len() >= addr.sun_path.len() {
            return Err(std::io::Error::other("telemetry path too long"));
        }
        for (d, &s) in addr.sun_path.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        // SAFETY: `addr` is a sockaddr_un of the size given.
        let rc = unsafe {
            libc::connect(
                fd,
                (&addr as *const libc::sockaddr_un).cast(),
                std::mem::size_of::<libc::sockaddr_un>() as u32,
            )
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let t = Telemetry { sock };
        t.recv()?; // the greeting: version, pid, output size
        Ok(t)
    }

    fn recv(&self) -> std::io::Result<String> {
        let mut buf = vec![0u8; 65536];
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        buf.truncate(n as usize);
        Ok(String::from_utf8_lossy(&buf).into_owned())
    }

    /// The counter `field` (`ipackets`, `opackets`, …) of port `port`.
    pub fn port_counter(&self, port: u16, field: &str) -> std::io::Result<u64> {
        let q = format!("/ethdev/stats,{port}");
        // SAFETY: `q` is readable for its length.
        let n = unsafe { libc::send(self.sock.as_raw_fd(), q.as_ptr().cast(), q.len(), 0) };
        if n < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let reply = self.recv()?;
        // A flat JSON object of numbers: `"field":123`.
        let key = format!("\"{field}\":");
        let at = reply
            .find(&key)
            .ok_or_else(|| std::io::Error::other(format!("no {field} in {reply}")))?;
        let digits: String = reply[at + key.len()..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits
            .parse()
            .map_err(|_| std::io::Error::other(format!("bad {field} in {reply}")))
    }
}

//! Two network namespaces joined by veth pairs: `dut` holds one end of each pair (l3fwd's
//! `net_af_packet` ports), `host` the other, where the test sends frames with packet
//! sockets and captures what comes back. IPv6 is off on every interface, so the kernel
//! sends nothing of its own (neighbour discovery, MLD) into the capture.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Frames sent and not arrived yet, at most.
pub const IN_FLIGHT: usize = 128;

/// The two namespaces, deleted on drop.
pub struct Pair {
    pub host: String,
    pub dut: String,
    ports: u16,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let o = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if o.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ))
    }
}

impl Pair {
    /// Makes the namespaces and `ports` veth pairs, or says why it cannot (a failure
    /// under `LPMKIT_REQUIRE_NETNS`).
    pub fn new(ports: u16) -> Option<Pair> {
        let id = std::process::id();
        let pair = Pair {
            host: format!("lpmkit-h{id}"),
            dut: format!("lpmkit-d{id}"),
            ports,
        };
        match pair.setup() {
            Ok(()) => Some(pair),
            Err(why) => {
                crate::common::skip(
                    "LPMKIT_REQUIRE_NETNS",
                    &format!("no network namespaces: {why}"),
                );
                None
            }
        }
    }

    fn setup(&self) -> Result<(), String> {
        ip(&["netns", "add", &self.host])?;
        ip(&["netns", "add", &self.dut])?;
        for ns in [&self.host, &self.dut] {
            for k in ["all", "default"] {
                let key = format!("net.ipv6.conf.{k}.disable_ipv6=1");
                let _ = Command::new("ip")
                    .args(["netns", "exec", ns, "sysctl", "-qw", &key])
                    .status();
            }
        }
        for p in 0..self.ports {
            let (h, d) = (self.host_if(p), self.dut_if(p));
            ip(&[
                "-n", &self.host, "link", "add", &h, "type", "veth", "peer", "name", &d, "netns",
                &self.dut,
            ])?;
            ip(&["-n", &self.host, "link", "set", &h, "up"])?;
            ip(&["-n", &self.dut, "link", "set", &d, "up"])?;
        }
        Ok(())
    }

    /// The host-side interface of port `p`.
    pub fn host_if(&self, p: u16) -> String {
        format!("h{p}")
    }

    /// l3fwd's interface of port `p`.
    pub fn dut_if(&self, p: u16) -> String {
        format!("d{p}")
    }

    /// In the host namespace: sends `inputs[p]` out of port `p`'s interface, and captures
    /// every test frame arriving on any port's interface until `expected` have arrived or
    /// `limit` passes. Returns `(port, sequence number)` per frame arrived. At most
    /// [`IN_FLIGHT`] frames are on their way at any time, so that neither l3fwd's receive
    /// rings (512 frames per port) nor the sockets' buffers can overflow on a busy
    /// machine: every frame lost is a failure.
    pub fn send_and_capture(
        &self,
        inputs: &[Vec<Vec<u8>>],
        expected: usize,
        limit: Duration,
    ) -> Vec<(u16, u32)> {
        let host = self.host.clone();
        let ports = self.ports;
        let inputs = inputs.to_vec();
        std::thread::spawn(move || {
            enter(&host);
            let socks: Vec<(OwnedFd, i32)> = (0..ports)
                .map(|p| packet_socket(&format!("h{p}")))
                .collect();
            // Captured from a thread of its own while this one sends.
            let rx: Vec<(i32, u16)> = socks
                .iter()
                .enumerate()
                .map(|(p, (s, _))| (s.as_raw_fd(), p as u16))
                .collect();
            let arrived = Arc::new(AtomicUsize::new(0));
            let count = Arc::clone(&arrived);
            let capture = std::thread::spawn(move || capture(&rx, expected, limit, &count));
            let longest = inputs.iter().map(Vec::len).max().unwrap_or(0);
            let start = Instant::now();
            let mut sent = 0;
            for i in 0..longest {
                for (p, frames) in inputs.iter().enumerate() {
                    if let Some(f) = frames.get(i) {
                        while sent - arrived.load(Ordering::Relaxed) >= IN_FLIGHT
                            && start.elapsed() < limit
                        {
                            std::thread::sleep(Duration::from_micros(100));
                        }
                        send(&socks[p], f);
                        sent += 1;
                    }
                }
            }
            let got = capture.join().unwrap();
            drop(socks);
            got
        })
        .join()
        .unwrap()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.host]);
        let _ = ip(&["netns", "del", &self.dut]);
    }
}

/// Moves the calling thread into the namespace `name`.
fn enter(name: &str) {
    let f = std::fs::File::open(format!("/var/run/netns/{name}")).expect("the namespace exists");
    // SAFETY: `setns` on an open namespace file descriptor; it changes this thread only.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
}

/// A raw packet socket bound to `ifname` (every protocol), with a large receive buffer
/// and a receive timeout; and the interface's index.
fn packet_socket(ifname: &str) -> (OwnedFd, i32) {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket creation; the descriptor is owned below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
    assert!(
        fd >= 0,
        "packet socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: a new descriptor of ours.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let name = std::ffi::CString::new(ifname).unwrap();
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) } as i32;
    assert!(index > 0, "no interface {ifname}");
    // SAFETY: a zeroed sockaddr_ll is valid; the fields are set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = index;
    // SAFETY: `sll` is a sockaddr_ll of the size given.
    let rc = unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    assert_eq!(rc, 0, "bind {ifname}: {}", std::io::Error::last_os_error());
    let buf: libc::c_int = 32 << 20;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 100_000,
    };
    // SAFETY: options of the sizes given, on our socket.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&buf as *const libc::c_int).cast(),
            4,
        );
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        );
    }
    (sock, index)
}

fn send((sock, _): &(OwnedFd, i32), frame: &[u8]) {
    loop {
        // SAFETY: `frame` is readable for its length; the socket is bound.
        let n = unsafe { libc::send(sock.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        if n == frame.len() as isize {
            return;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.raw_os_error(), Some(libc::ENOBUFS), "send: {e}");
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Receives on every socket (`fd`, port) until `expected` test frames have arrived (and
/// a quarter of a second more, for any frame that would arrive twice) or `limit` passes;
/// frames this side sent itself (`PACKET_OUTGOING`) are not counted.
fn capture(
    socks: &[(i32, u16)],
    expected: usize,
    limit: Duration,
    arrived: &AtomicUsize,
) -> Vec<(u16, u32)> {
    let mut got = Vec::new();
    let mut buf = [0u8; 2048];
    let start = Instant::now();
    let mut others: HashMap<u16, usize> = HashMap::new();
    let mut fds: Vec<libc::pollfd> = socks
        .iter()
        .map(|&(fd, _)| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut complete: Option<Instant> = None;
    while start.elapsed() < limit
        && complete.is_none_or(|t| t.elapsed() < Duration::from_millis(250))
    {
        if complete.is_none() && got.len() >= expected {
            complete = Some(Instant::now());
        }
        // SAFETY: `fds` holds `fds.len()` pollfds.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 100) };
        if n <= 0 {
            continue;
        }
        for (i, pfd) in fds.iter().enumerate() {
            if pfd.revents & libc::POLLIN == 0 {
                continue;
            }
            loop {
                // SAFETY: a zeroed sockaddr_ll is valid.
                let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
                let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
                // SAFETY: `buf` and `from` are writable for the sizes given.
                let n = unsafe {
                    libc::recvfrom(
                        pfd.fd,
                        buf.as_mut_ptr().cast(),
                        buf.len(),
                        libc::MSG_DONTWAIT,
                        (&mut from as *mut libc::sockaddr_ll).cast(),
                        &mut len,
                    )
                };
                if n <= 0 {
                    break;
                }
                if from.sll_pkttype == libc::PACKET_OUTGOING {
                    continue;
                }
                match crate::frames::sequence(&buf[..n as usize]) {
                    Some(seq) => {
                        got.push((socks[i].1, seq));
                        arrived.store(got.len(), Ordering::Relaxed);
                    }
                    None => *others.entry(socks[i].1).or_default() += 1,
                }
            }
        }
    }
    if !others.is_empty() {
        eprintln!("  (frames that are not the test's, per port: {others:?})");
    }
    got
}

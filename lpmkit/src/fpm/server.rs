//! [`FpmServer`]: the TCP server zebra's `dplane_fpm_nl` connects to.

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

use super::frame::FrameError;
use super::session::{FpmFamily, FpmSession, SessionOptions};
use crate::netlink::{in_netns, Received};

/// The port zebra connects to by default (`FPM_DEFAULT_PORT`).
pub const DEFAULT_PORT: u16 = 2620;

/// Where to listen and what to follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FpmOptions {
    /// The address to listen on (zebra's `fpm address A port P`). FPM has no
    /// authentication: whoever connects can install routes, so listen on a loopback or
    /// otherwise private address.
    pub listen: SocketAddr,
    /// The network namespace to listen in (a name under `/run/netns` or a path); `None`:
    /// this process's.
    pub netns: Option<String>,
    /// The table, and the sweep after reconnections.
    pub session: SessionOptions,
}

impl Default for FpmOptions {
    fn default() -> Self {
        FpmOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            netns: None,
            session: SessionOptions::default(),
        }
    }
}

/// Something that happened to the connection, for reports.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FpmEvent {
    /// zebra connected; the routes held are marked stale until it sends them again.
    Connected(SocketAddr),
    /// The connection ended (zebra closed it, or a newer connection replaced it); with an
    /// error if it ended inside a frame.
    Closed(SocketAddr, Option<FrameError>),
    /// lpmkit dropped the connection: its stream could not be read on. The routes stay;
    /// zebra connects again (after 3 s) and sends its table again.
    Dropped(SocketAddr, FrameError),
    /// The connection failed (reset, …).
    Failed(SocketAddr, String),
    /// After a reconnection, the routes zebra did not send again were removed (IPv4,
    /// IPv6).
    Swept(usize, usize),
}

impl core::fmt::Display for FpmEvent {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            FpmEvent::Connected(p) => write!(
                f,
                "zebra connected from {p}: what it does not send again is swept once its stream is quiet"
            ),
            FpmEvent::Closed(p, None) => write!(
                f,
                "zebra's connection from {p} closed; the routes stay until it connects again"
            ),
            FpmEvent::Closed(p, Some(e)) => write!(
                f,
                "zebra's connection from {p} closed inside a frame ({e}); the routes stay"
            ),
            FpmEvent::Dropped(p, e) => write!(
                f,
                "dropped zebra's connection from {p}: {e}; the routes stay until it connects again"
            ),
            FpmEvent::Failed(p, e) => write!(
                f,
                "zebra's connection from {p} failed: {e}; the routes stay"
            ),
            FpmEvent::Swept(v4, v6) => write!(
                f,
                "swept {v4} IPv4 and {v6} IPv6 routes zebra did not send again after connecting"
            ),
        }
    }
}

/// The connection being read.
#[derive(Debug)]
struct Conn {
    stream: TcpStream,
    peer: SocketAddr,
}

/// Bytes read from a connection in one [`FpmServer::poll`] at most, so that the changes
/// they make reach the schemes while more arrive.
const READ_BUDGET: usize = 4 << 20;

/// An FPM server: accepts zebra's connection (one at a time: a new connection replaces
/// the current one, as zebra reconnects after a failure), reads its frames into an
/// [`FpmSession`], and hands out the changes per family.
///
/// ```no_run
/// use lpmkit::fpm::{FpmOptions, FpmServer};
/// use lpmkit::netlink::Follower;
/// use lpmkit::Ipv4;
/// use std::time::Duration;
///
/// let mut server = FpmServer::bind(&FpmOptions::default())?;     // 127.0.0.1:2620
/// let info = lpmkit::registry::find("d18r").unwrap();
/// let mut fib = Follower::new(info, lpmkit::Rib::new(), &Default::default(), Duration::ZERO)?;
/// loop {
///     server.poll(Some(Duration::from_millis(100)))?;
///     let changes: Vec<_> = server.take::<Ipv4>().iter().map(|r| r.change).collect();
///     fib.apply(&changes)?;
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FpmServer {
    listener: TcpListener,
    conn: Option<Conn>,
    session: FpmSession,
    events: Vec<FpmEvent>,
    /// The realtime clock at `Instant` `.0`, to turn the kernel's receive times into
    /// instants.
    clock: (Instant, SystemTime),
    buf: Vec<u8>,
}

impl FpmServer {
    /// Listens on `options.listen` (in `options.netns`).
    pub fn bind(options: &FpmOptions) -> io::Result<Self> {
        let addr = options.listen;
        let listener = in_netns(options.netns.as_deref(), move || TcpListener::bind(addr))
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        listener.set_nonblocking(true)?;
        Ok(FpmServer {
            listener,
            conn: None,
            session: FpmSession::new(options.session),
            events: Vec::new(),
            clock: (Instant::now(), SystemTime::now()),
            buf: vec![0; 1 << 16],
        })
    }

    /// The address listened on (the port chosen, if `listen` asked for port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// zebra's address, while connected.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.conn.as_ref().map(|c| c.peer)
    }

    /// The session: routes of both families, counters.
    pub fn session(&self) -> &FpmSession {
        &self.session
    }

    /// The changes of family `A` since the last call (see [`FpmSession::take`]); each
    /// carries the time the kernel received the frame that made it.
    pub fn take<A: FpmFamily>(&mut self) -> Vec<Received<A>> {
        self.session.take::<A>()
    }

    /// What happened to connections since the last call.
    pub fn events(&mut self) -> Vec<FpmEvent> {
        core::mem::take(&mut self.events)
    }

    /// Waits up to `timeout` (`None`: until something happens; a signal delivered to the
    /// thread ends the wait early) for a connection, frames or a due sweep, and handles
    /// what came: accepts, reads (at most a few MiB per call), sweeps. Returns true if
    /// anything was read or swept.
    pub fn poll(&mut self, timeout: Option<Duration>) -> io::Result<bool> {
        let now = Instant::now();
        let sweep = self.session.sweep_due();
        let wait = match (timeout, sweep) {
            (t, Some(d)) => Some(t.map_or(d - now.min(d), |t| t.min(d - now.min(d)))),
            (t, None) => t,
        };
        let (accept, read) = self.wait(wait)?;
        let mut busy = false;
        if accept {
            self.accept()?;
        }
        if read {
            busy |= self.read();
        }
        if let Some((v4, v6)) = self.session.sweep_if_due(Instant::now()) {
            self.events.push(FpmEvent::Swept(v4, v6));
            busy = true;
        }
        Ok(busy)
    }

    /// poll(2) on the listener and the connection: (a connection waits, data waits).
    fn wait(&self, timeout: Option<Duration>) -> io::Result<(bool, bool)> {
        let mut fds = [
            libc::pollfd {
                fd: self.listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.conn.as_ref().map_or(-1, |c| c.stream.as_raw_fd()),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
        // SAFETY: two valid pollfds (a negative fd is ignored by poll).
        let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok((false, false))
            } else {
                Err(e)
            };
        }
        Ok((fds[0].revents != 0, fds[1].revents != 0))
    }

    /// Accepts the connections waiting; the last one replaces the current.
    fn accept(&mut self) -> io::Result<()> {
        loop {
            let (stream, peer) = match self.listener.accept() {
                Ok(s) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // A connection that died before it was accepted.
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => continue,
                Err(e) => return Err(e),
            };
            stream.set_nonblocking(true)?;
            receive_timestamps(&stream);
            if let Some(old) = self.conn.take() {
                let error = self.session.disconnect().err();
                self.events.push(FpmEvent::Closed(old.peer, error));
            }
            self.session.connect(Instant::now());
            self.events.push(FpmEvent::Connected(peer));
            self.conn = Some(Conn { stream, peer });
        }
    }

    /// Reads what the connection has (up to [`READ_BUDGET`]); true if anything came.
    fn read(&mut self) -> bool {
        let Some(conn) = self.conn.as_ref() else {
            return false;
        };
        let peer = conn.peer;
        let mut total = 0;
        while total < READ_BUDGET {
            let (n, stamp) = match recv_stamped(&conn.stream, &mut self.buf) {
                Ok(r) => r,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = self.session.disconnect();
                    self.events.push(FpmEvent::Failed(peer, e.to_string()));
                    self.conn = None;
                    return total > 0;
                }
            };
            if n == 0 {
                let error = self.session.disconnect().err();
                self.events.push(FpmEvent::Closed(peer, error));
                self.conn = None;
                return total > 0;
            }
            total += n;
            let at = stamp.map_or_else(Instant::now, |t| self.instant_of(t));
            if let Err(e) = self.session.feed(&self.buf[..n], at) {
                let _ = conn.stream.shutdown(std::net::Shutdown::Both);
                let _ = self.session.disconnect();
                self.events.push(FpmEvent::Dropped(peer, e));
                self.conn = None;
                return true;
            }
        }
        total > 0
    }

    /// The instant of a realtime-clock reading (within the last minute; clamped to now).
    fn instant_of(&self, t: SystemTime) -> Instant {
        let now = Instant::now();
        let at = match t.duration_since(self.clock.1) {
            Ok(d) => self.clock.0 + d,
            Err(e) => self
                .clock
                .0
                .checked_sub(e.duration())
                .unwrap_or(self.clock.0),
        };
        at.clamp(now - Duration::from_secs(60).min(now - self.clock.0), now)
    }
}

/// Asks the kernel for the receive time of what is read (`SO_TIMESTAMPNS`): the latency
/// then counts from zebra's send, not from when the bytes were read. Best effort.
fn receive_timestamps(stream: &TcpStream) {
    let on: libc::c_int = 1;
    // SAFETY: a c_int option value of the right size on a valid socket.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&on as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Reads into `buf` (non-blocking); returns the bytes read and the kernel's receive time
/// of the last of them, if it gave one.
fn recv_stamped(stream: &TcpStream, buf: &mut [u8]) -> io::Result<(usize, Option<SystemTime>)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // Room for one control message holding a timespec.
    let mut control = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { core::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = core::mem::size_of_val(&control);
    // SAFETY: a valid socket, and a msghdr whose buffers are live and sized as declared.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut stamp = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled, within
    // `msg_controllen`; a timestamp's data is one timespec.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let ts = core::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<libc::timespec>());
                if ts.tv_sec > 0 {
                    stamp = Some(
                        SystemTime::UNIX_EPOCH
                            + Duration::new(
                                ts.tv_sec as u64,
                                ts.tv_nsec.clamp(0, 999_999_999) as u32,
                            ),
                    );
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, stamp))
}

//! One followed scheme: its [`Follower`] and the bookkeeping of its publications
//! (latencies, counts, refusals).
//!
//! Schemes updated in place (or as twins) are driven on the thread that reads the
//! kernel's notifications: a change is visible as soon as that thread has applied it.
//! Rebuilt schemes run on a thread of their own ([`Followed::detach`]), fed the same
//! changes through a channel: a rebuild takes milliseconds, and on the reading thread it
//! would hold back every other scheme's publication (and the reading of the socket)
//! for as long.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lpmkit::netlink::{Follower, Origin, Received, Visible};
use lpmkit::sync::{LookupHandle, UpdateModel};
use lpmkit::{Address, BuildError, Change};

use crate::output::outln;

/// Latency samples kept per scheme; beyond, a uniform sample of them (reservoir).
const LATENCY_SAMPLES: usize = 1 << 20;

/// Send times of the churn generator's requests (ns since [`CHURN_T0`]), by sequence
/// number.
pub(super) struct Churn {
    pub port: u32,
    pub sent_ns: Vec<AtomicU64>,
    pub done: AtomicBool,
    pub sent: AtomicU64,
}

/// The churn generator's time origin.
pub(super) static CHURN_T0: OnceLock<Instant> = OnceLock::new();

/// Latency samples: all of them up to [`LATENCY_SAMPLES`], then a uniform sample.
pub(super) struct Reservoir {
    samples: Vec<f64>,
    /// Latencies pushed.
    pub seen: u64,
    rng: u64,
}

impl Reservoir {
    fn new() -> Self {
        Reservoir {
            samples: Vec::new(),
            seen: 0,
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }

    fn push(&mut self, v: f64) {
        self.seen += 1;
        if self.samples.len() < LATENCY_SAMPLES {
            self.samples.push(v);
            return;
        }
        self.rng = self
            .rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (self.rng >> 11) % self.seen;
        if (j as usize) < LATENCY_SAMPLES {
            self.samples[j as usize] = v;
        }
    }

    /// The `q` quantile of the samples (0 if none).
    pub fn percentile(&self, q: f64) -> f64 {
        if self.samples.is_empty() {
            return 0.0;
        }
        let mut s = self.samples.clone();
        s.sort_by(|a, b| a.total_cmp(b));
        s[((s.len() - 1) as f64 * q).round() as usize]
    }

    /// Samples kept.
    pub fn kept(&self) -> usize {
        self.samples.len()
    }
}

/// What a scheme's follower has done.
pub(super) struct Book {
    /// Changes applied but not yet visible: (received, origin).
    waiting: Vec<(Instant, Origin)>,
    pub latencies: Reservoir,
    pub publications: usize,
    pub work_ms_sum: f64,
    /// Times the scheme refused changes or failed a rebuild.
    pub failures: usize,
    /// The follower's pending changes and last error after its last step.
    pending: usize,
    /// Changes the follower has taken (a detached one: of those sent to it).
    taken: usize,
    last_error: Option<BuildError>,
}

/// Messages to a detached scheme's thread.
enum Job<A: Address> {
    Apply(Arc<[Received<A>]>),
    /// Publish what is pending; answer when it is visible.
    Flush(mpsc::Sender<()>),
}

/// Where the follower runs.
enum Where<A: Address> {
    Here(Follower<A>),
    Away {
        tx: mpsc::Sender<Job<A>>,
        /// For checks against the kernel.
        reader: Box<dyn LookupHandle<A>>,
        thread: JoinHandle<Follower<A>>,
    },
    /// Only while [`Followed::join`] moves it back.
    Moving,
}

/// One followed scheme (see the module docs).
pub(super) struct Followed<A: Address> {
    name: &'static str,
    model: UpdateModel,
    book: Arc<Mutex<Book>>,
    at: Where<A>,
    /// Changes sent to a detached scheme's thread.
    sent: usize,
}

impl<A: Address> Followed<A> {
    pub fn new(f: Follower<A>) -> Self {
        Followed {
            name: f.name(),
            model: f.model(),
            book: Arc::new(Mutex::new(Book {
                waiting: Vec::new(),
                latencies: Reservoir::new(),
                publications: 0,
                work_ms_sum: 0.0,
                failures: 0,
                pending: 0,
                taken: 0,
                last_error: None,
            })),
            at: Where::Here(f),
            sent: 0,
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn model(&self) -> UpdateModel {
        self.model
    }

    /// The bookkeeping (held only for short updates by the scheme's thread).
    pub fn book(&self) -> MutexGuard<'_, Book> {
        lock(&self.book)
    }

    /// Moves a rebuilt scheme to a thread of its own (others stay).
    pub fn detach(&mut self, churn: Option<Arc<Churn>>, verbose: bool) {
        if !matches!(self.model, UpdateModel::Rebuild { .. }) {
            return;
        }
        let Where::Here(f) = std::mem::replace(&mut self.at, Where::Moving) else {
            unreachable!("detached twice")
        };
        let reader = f.reader();
        let (tx, rx) = mpsc::channel();
        let book = Arc::clone(&self.book);
        let thread = std::thread::Builder::new()
            .name(format!("follow {}", self.name))
            .spawn(move || run_away(f, &book, &rx, churn.as_deref(), verbose))
            .expect("cannot start a thread");
        self.at = Where::Away { tx, reader, thread };
    }

    /// Applies `received` (a detached scheme: hands it to its thread).
    pub fn apply(&mut self, received: &Arc<[Received<A>]>, churn: Option<&Churn>, verbose: bool) {
        match &mut self.at {
            Where::Here(f) => apply(f, &self.book, received, churn, verbose),
            Where::Away { tx, .. } => {
                // A thread that is gone is reported by `join`.
                if tx.send(Job::Apply(Arc::clone(received))).is_ok() {
                    self.sent += received.len();
                }
            }
            Where::Moving => unreachable!(),
        }
    }

    /// Publishes what is due (a detached scheme's thread does this itself).
    pub fn poll(&mut self, churn: Option<&Churn>, verbose: bool) {
        if let Where::Here(f) = &mut self.at {
            let r = f.poll();
            settle(f, &self.book, r, churn, verbose, 0);
        }
    }

    /// When [`poll`](Self::poll) is due (`None` for a detached scheme).
    pub fn deadline(&self) -> Option<Instant> {
        match &self.at {
            Where::Here(f) => f.deadline(),
            _ => None,
        }
    }

    /// Publishes everything pending now; returns once it is visible.
    pub fn flush(&mut self, churn: Option<&Churn>, verbose: bool) {
        match &mut self.at {
            Where::Here(f) => {
                let r = f.flush();
                settle(f, &self.book, r, churn, verbose, 0);
            }
            Where::Away { tx, .. } => {
                let (reply, done) = mpsc::channel();
                if tx.send(Job::Flush(reply)).is_ok() {
                    let _ = done.recv();
                }
            }
            Where::Moving => unreachable!(),
        }
    }

    /// Looks `keys` up in what readers see now.
    pub fn lookup_batch(&mut self, keys: &[A], out: &mut [u32]) {
        match &mut self.at {
            Where::Here(f) => f.reader().lookup_batch(keys, out),
            Where::Away { reader, .. } => reader.lookup_batch(keys, out),
            Where::Moving => unreachable!(),
        }
    }

    /// Changes not visible yet (a detached scheme's: those its thread holds, and those
    /// sent that it has not taken yet).
    pub fn pending(&self) -> usize {
        match &self.at {
            Where::Here(f) => f.pending(),
            _ => {
                let b = self.book();
                b.pending + self.sent.saturating_sub(b.taken)
            }
        }
    }

    /// The reason of the last refusal while changes stay refused.
    pub fn last_error(&self) -> Option<BuildError> {
        match &self.at {
            Where::Here(f) => f.last_error().cloned(),
            _ => self.book().last_error.clone(),
        }
    }

    /// Brings a detached scheme's follower back to this thread (after its last
    /// publication); `None` if its thread panicked.
    pub fn join(&mut self) -> Option<&Follower<A>> {
        if matches!(self.at, Where::Away { .. }) {
            let Where::Away { tx, reader, thread } = std::mem::replace(&mut self.at, Where::Moving)
            else {
                unreachable!()
            };
            drop((tx, reader));
            self.at = Where::Here(thread.join().ok()?);
        }
        match &self.at {
            Where::Here(f) => Some(f),
            _ => None,
        }
    }
}

fn lock(book: &Mutex<Book>) -> MutexGuard<'_, Book> {
    book.lock().unwrap_or_else(|e| e.into_inner())
}

/// A detached scheme's thread: applies what comes, publishes when due, until the
/// channel closes; returns the follower.
fn run_away<A: Address>(
    mut f: Follower<A>,
    book: &Mutex<Book>,
    rx: &mpsc::Receiver<Job<A>>,
    churn: Option<&Churn>,
    verbose: bool,
) -> Follower<A> {
    loop {
        let job = match f.deadline() {
            Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match job {
            Ok(Job::Apply(received)) => apply(&mut f, book, &received, churn, verbose),
            Ok(Job::Flush(reply)) => {
                let r = f.flush();
                settle(&f, book, r, churn, verbose, 0);
                let _ = reply.send(());
                continue;
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return f,
        }
        let r = f.poll();
        settle(&f, book, r, churn, verbose, 0);
    }
}

/// Applies `received` to `f`.
fn apply<A: Address>(
    f: &mut Follower<A>,
    book: &Mutex<Book>,
    received: &[Received<A>],
    churn: Option<&Churn>,
    verbose: bool,
) {
    if received.is_empty() {
        return;
    }
    let changes: Vec<Change<A>> = received.iter().map(|r| r.change).collect();
    lock(book)
        .waiting
        .extend(received.iter().map(|r| (r.at, r.origin)));
    let r = f.apply(&changes);
    settle(f, book, r, churn, verbose, received.len());
}

/// Books the outcome of one step of `f` that took `taken` changes: a publication, a
/// refusal, or nothing.
fn settle<A: Address>(
    f: &Follower<A>,
    book: &Mutex<Book>,
    r: Result<Option<Visible>, BuildError>,
    churn: Option<&Churn>,
    verbose: bool,
    taken: usize,
) {
    let mut b = lock(book);
    b.taken += taken;
    match r {
        Ok(Some(v)) => publish(&mut b, f.name(), v, churn, verbose),
        Ok(None) => {}
        Err(e) => {
            b.failures += 1;
            if b.failures == 1 {
                eprintln!(
                    "lpmkit: {} refused changes ({e}); they are kept and retried",
                    f.name()
                );
            }
        }
    }
    b.pending = f.pending();
    b.last_error = f.last_error().cloned();
}

/// Records a publication: every waiting change is visible now.
fn publish(b: &mut Book, name: &str, v: Visible, churn: Option<&Churn>, verbose: bool) {
    b.publications += 1;
    b.work_ms_sum += v.work_ms;
    let mut worst = 0f64;
    let Book {
        waiting, latencies, ..
    } = b;
    for (at, origin) in waiting.drain(..) {
        let sent = churn
            .filter(|c| origin.port == c.port && origin.port != 0)
            .and_then(|c| c.sent_ns.get(origin.seq as usize))
            .map(|ns| ns.load(Ordering::Acquire))
            .filter(|&ns| ns != 0)
            .and_then(|ns| Some(*CHURN_T0.get()? + Duration::from_nanos(ns)));
        let ms =
            v.at.saturating_duration_since(sent.unwrap_or(at))
                .as_secs_f64()
                * 1e3;
        worst = worst.max(ms);
        latencies.push(ms);
    }
    if verbose {
        outln!(
            "{:<10} generation {}: {} changes visible, work {:.2} ms, oldest waited {:.2} ms",
            name,
            v.generation,
            v.changes,
            v.work_ms,
            worst
        );
    }
}

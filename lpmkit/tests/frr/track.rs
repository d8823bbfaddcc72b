//! Schemes following the FPM stream, each on a thread of its own (as `lpmkit follow`
//! runs them: a rebuild must not hold back the reading of zebra's stream), with the
//! publication latency of every change (from the kernel's receive time of zebra's frame
//! to the moment the change is visible to lookups) and the size readers see.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lpmkit::netlink::{Follower, Received};
use lpmkit::sync::{LookupHandle, UpdateModel};
use lpmkit::{registry, Address, BuildOptions, Change, Rib};

/// What a scheme's thread shares with the test.
#[derive(Default)]
struct Shared {
    /// Prefixes readers see (updated when nothing is pending).
    visible: AtomicUsize,
    /// Latencies are recorded while set.
    recording: AtomicBool,
    latencies: Mutex<Vec<f64>>,
    /// When readers first saw at least `target` prefixes.
    target: AtomicUsize,
    reached: Mutex<Option<Instant>>,
}

enum Job<A: Address> {
    Apply(Arc<[Received<A>]>),
    /// Publish what waits; answer when it is visible.
    Flush(mpsc::Sender<()>),
}

/// One scheme following the stream.
pub struct Track<A: Address> {
    pub name: &'static str,
    pub model: UpdateModel,
    tx: Option<mpsc::Sender<Job<A>>>,
    reader: Box<dyn LookupHandle<A>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl<A: Address> Track<A> {
    /// `scheme` in its best update model (rebuilds after `hold`), from `rib`.
    pub fn new(scheme: &str, rib: Rib<A>, hold: Duration) -> Self {
        let info = registry::find(scheme).unwrap();
        let f = Follower::new(info, rib, &BuildOptions::default(), hold)
            .unwrap_or_else(|e| panic!("{scheme}: {e}"));
        let (name, model, reader) = (f.name(), f.model(), f.reader());
        let shared = Arc::new(Shared::default());
        shared.visible.store(f.rib().len(), Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        let s = Arc::clone(&shared);
        let thread = std::thread::spawn(move || follow(f, &rx, &s));
        Track {
            name,
            model,
            tx: Some(tx),
            reader,
            shared,
            thread: Some(thread),
        }
    }

    pub fn apply(&self, r: &Arc<[Received<A>]>) {
        if let Some(tx) = &self.tx {
            tx.send(Job::Apply(Arc::clone(r)))
                .expect("the scheme's thread runs");
        }
    }

    /// Publishes what waits; returns once it is visible.
    pub fn flush(&self) {
        let (reply, done) = mpsc::channel();
        if let Some(tx) = &self.tx {
            tx.send(Job::Flush(reply))
                .expect("the scheme's thread runs");
            done.recv().expect("the scheme's thread answers");
        }
    }

    /// Prefixes readers see.
    pub fn visible(&self) -> usize {
        self.shared.visible.load(Ordering::Relaxed)
    }

    /// From now on, notes when readers first see `n` prefixes.
    pub fn watch(&self, n: usize) {
        *self.shared.reached.lock().unwrap() = None;
        self.shared.target.store(n, Ordering::Relaxed);
    }

    /// When readers first saw the watched size.
    pub fn reached(&self) -> Option<Instant> {
        *self.shared.reached.lock().unwrap()
    }

    /// Records latencies from now on (dropping those recorded so far), or stops.
    pub fn record(&self, on: bool) {
        if on {
            self.shared.latencies.lock().unwrap().clear();
        }
        self.shared.recording.store(on, Ordering::Relaxed);
    }

    /// The latencies recorded, sorted (ms).
    pub fn latencies(&self) -> Vec<f64> {
        let mut v = self.shared.latencies.lock().unwrap().clone();
        v.sort_by(f64::total_cmp);
        v
    }

    pub fn lookup_batch(&mut self, keys: &[A], out: &mut [u32]) {
        self.reader.lookup_batch(keys, out);
    }
}

impl<A: Address> Drop for Track<A> {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A scheme's thread: applies what comes, publishes by the hold time, records.
fn follow<A: Address>(mut f: Follower<A>, rx: &mpsc::Receiver<Job<A>>, s: &Shared) {
    let mut waiting: Vec<Instant> = Vec::new();
    loop {
        let job = match f.deadline() {
            Some(d) => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
            None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        let (visible, reply) = match job {
            Ok(Job::Apply(r)) => {
                let changes: Vec<Change<A>> = r.iter().map(|r| r.change).collect();
                waiting.extend(r.iter().map(|r| r.at));
                (f.apply(&changes), None)
            }
            Ok(Job::Flush(reply)) => (f.flush(), Some(reply)),
            Err(mpsc::RecvTimeoutError::Timeout) => (f.poll(), None),
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        };
        let visible = visible.unwrap_or_else(|e| panic!("{} refused changes: {e}", f.name()));
        if let Some(v) = visible {
            if f.pending() == 0 {
                let n = f.rib().len();
                s.visible.store(n, Ordering::Relaxed);
                let target = s.target.load(Ordering::Relaxed);
                let mut reached = s.reached.lock().unwrap();
                if target > 0 && n >= target && reached.is_none() {
                    *reached = Some(v.at);
                }
            }
            if s.recording.load(Ordering::Relaxed) {
                let mut l = s.latencies.lock().unwrap();
                l.extend(
                    waiting
                        .drain(..)
                        .map(|at| v.at.saturating_duration_since(at).as_secs_f64() * 1e3),
                );
            } else {
                waiting.clear();
            }
        }
        if let Some(reply) = reply {
            let _ = reply.send(());
        }
    }
}

/// The `q` quantile of sorted values.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

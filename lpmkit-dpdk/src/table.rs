//! One FIB: its routes, the stage it is in, its changes and its lookups. Which scheme
//! serves it, and when that changes, is [`crate::scheme`]'s.
//!
//! * **Loading**, from `rte_fib_create` to the first lookup: routes go into a [`Rib`] and
//!   nothing else, so an application that adds a whole table before it forwards (as l3fwd
//!   does) pays one build, not one patch per route.
//! * **Built**, from the first lookup (or [`Table::sync`]) on: a scheme serves lookups
//!   and each add and delete goes through lpmkit's update models ([`lpmkit::sync`]):
//!   schemes updated in place patch the one instance readers use and the change is
//!   visible when the call returns; the others rebuild and publish with one pointer swap
//!   once the change has waited the hold time (`LPMKIT_FIB_HOLD_MS`, default 10), on a
//!   thread of the table's own.
//!
//! Lookups never lock: each thread looks up through a handle of its own, kept in
//! thread-local storage and made at its first lookup of the table. When another scheme
//! takes the table over, the table's era changes and each thread remakes its handle at
//! its next lookup (one atomic load per call tells).

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::LocalKey;
use std::time::Duration;

use lpmkit::sync::{LookupHandle, Updater};
use lpmkit::{Address, Change, Prefix, Rib};

use crate::values::{self, Interner, Values};

/// Why a call failed, as DPDK reports it (the positive `errno` value).
pub type Errno = core::ffi::c_int;

/// Keys looked up per call of a scheme (the size of each thread's scratch space).
pub const CHUNK: usize = 256;

/// How long a change waits to be folded into a rebuild, unless `LPMKIT_FIB_HOLD_MS` says.
const DEFAULT_HOLD: Duration = Duration::from_millis(10);

/// What a table is made with (from `struct rte_fib_conf` and the environment).
#[derive(Clone, Debug)]
pub struct Config {
    /// The name the application gave (for messages).
    pub name: String,
    /// The lookups' answer where no route matches.
    pub default_nh: u64,
    /// The largest next hop accepted (`-EINVAL` above).
    pub max_nh: u64,
    /// The most routes the table holds (`-ENOMEM` past it, as DPDK's full RIB).
    pub max_routes: usize,
    /// `auto` or a registry name.
    pub scheme: String,
    /// How long a change waits for a rebuild (rebuild schemes).
    pub hold_time: Duration,
}

impl Config {
    /// The hold time `LPMKIT_FIB_HOLD_MS` asks for, or the default.
    pub fn hold_time_from_env() -> Duration {
        std::env::var("LPMKIT_FIB_HOLD_MS")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .map_or(DEFAULT_HOLD, Duration::from_millis)
    }
}

/// The addresses a table serves: which thread-local handle list its readers live in.
pub trait Key: Address {
    /// "rte_fib" or "rte_fib6" (messages).
    const API: &'static str;
    /// This thread's lookup handles on tables of this family.
    fn readers() -> &'static LocalKey<RefCell<Vec<Reader<Self>>>>;
}

thread_local! {
    static READERS_V4: RefCell<Vec<Reader<u32>>> = const { RefCell::new(Vec::new()) };
    static READERS_V6: RefCell<Vec<Reader<u128>>> = const { RefCell::new(Vec::new()) };
}

impl Key for u32 {
    const API: &'static str = "rte_fib";
    fn readers() -> &'static LocalKey<RefCell<Vec<Reader<u32>>>> {
        &READERS_V4
    }
}

impl Key for u128 {
    const API: &'static str = "rte_fib6";
    fn readers() -> &'static LocalKey<RefCell<Vec<Reader<u128>>>> {
        &READERS_V6
    }
}

/// One thread's handle on one table.
pub struct Reader<A: Key> {
    uid: u64,
    /// The table's era the handle was made in.
    era: u64,
    table: Weak<Table<A>>,
    handle: Box<dyn LookupHandle<A>>,
    /// Scratch: keys converted to lpmkit's form, and the ids a lookup answers (kept from
    /// call to call: no buffer to fill per call).
    keys: Box<[A]>,
    ids: Box<[u32]>,
}

pub(crate) enum Stage<A: Address> {
    Loading(Rib<A>),
    Built(Box<dyn Updater<A>>),
    /// Only while a build runs (the Rib moved into it).
    Building,
}

/// What the writer lock guards.
pub(crate) struct Writer<A: Address> {
    pub(crate) stage: Stage<A>,
    interner: Interner,
    /// Set when the table is freed: the publishing thread ends.
    pub(crate) closing: bool,
    /// The scheme serves a table only looked up so far (`auto`'s first choice): the
    /// first change moves the table to a scheme updated in place.
    pub(crate) lookup_only: bool,
}

impl<A: Address> Writer<A> {
    /// The routes; an error if the table could not be built (it then refuses every call).
    pub(crate) fn rib(&self) -> Result<&Rib<A>, Failure> {
        match &self.stage {
            Stage::Loading(rib) => Ok(rib),
            Stage::Built(u) => Ok(u.rib()),
            Stage::Building => Err(unbuildable()),
        }
    }
}

/// The error of every call on a table whose build failed.
pub(crate) fn unbuildable() -> Failure {
    Failure(
        libc::ENOTRECOVERABLE,
        "the table could not be built (see the log); it takes no more calls".into(),
    )
}

/// The scheme serving lookups, and what new readers are cloned from.
pub(crate) struct Current<A: Address> {
    pub(crate) scheme: &'static str,
    pub(crate) template: Box<dyn LookupHandle<A>>,
}

/// A FIB (see the [module docs](self)).
pub struct Table<A: Key> {
    uid: u64,
    pub(crate) config: Config,
    values: Values,
    pub(crate) writer: Mutex<Writer<A>>,
    /// Wakes the publishing thread (a change held for a rebuild, or closing).
    pub(crate) wake: Condvar,
    /// `None` until built.
    pub(crate) current: Mutex<Option<Current<A>>>,
    /// True once built.
    pub(crate) built: AtomicBool,
    /// Counts the schemes installed: a reader whose handle is of an older era remakes it.
    pub(crate) era: AtomicU64,
    pub(crate) publisher: Mutex<Option<std::thread::JoinHandle<()>>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A failed call: DPDK's error number and, for the log, why.
#[derive(Debug)]
pub struct Failure(pub Errno, pub String);

impl<A: Key> Table<A> {
    /// An empty table, loading.
    pub fn new(config: Config) -> Arc<Self> {
        static UID: AtomicU64 = AtomicU64::new(1);
        let (values, interner) = values::new(config.default_nh);
        Arc::new(Table {
            uid: UID.fetch_add(1, Ordering::Relaxed),
            config,
            values,
            writer: Mutex::new(Writer {
                stage: Stage::Loading(Rib::new()),
                interner,
                closing: false,
                lookup_only: false,
            }),
            wake: Condvar::new(),
            current: Mutex::new(None),
            built: AtomicBool::new(false),
            era: AtomicU64::new(0),
            publisher: Mutex::new(None),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Adds or replaces the route of `prefix` (`next_hop` checked by the caller).
    pub fn add(self: &Arc<Self>, prefix: Prefix<A>, next_hop: u64) -> Result<(), Failure> {
        let mut w = lock(&self.writer);
        let w = &mut *w;
        let rib = w.rib()?;
        let old = rib.get(&prefix);
        if old.is_none() && rib.len() >= self.config.max_routes {
            return Err(Failure(
                libc::ENOMEM,
                format!(
                    "the table holds max_routes = {} routes",
                    self.config.max_routes
                ),
            ));
        }
        let id = w
            .interner
            .intern(&self.values, next_hop)
            .ok_or_else(|| Failure(libc::ENOMEM, "2^32 - 1 distinct next hops".into()))?;
        if old == Some(id) {
            return Ok(());
        }
        self.change(w, Change::Announce(prefix, id))
    }

    /// Deletes the route of `prefix` (`ENOENT` if there is none).
    pub fn delete(self: &Arc<Self>, prefix: Prefix<A>) -> Result<(), Failure> {
        let mut w = lock(&self.writer);
        if w.rib()?.get(&prefix).is_none() {
            return Err(Failure(libc::ENOENT, "no such route".into()));
        }
        self.change(&mut w, Change::Withdraw(prefix))
    }

    fn change(self: &Arc<Self>, w: &mut Writer<A>, change: Change<A>) -> Result<(), Failure> {
        if w.lookup_only {
            return self.take_over(w, change);
        }
        match &mut w.stage {
            Stage::Loading(rib) => {
                rib.apply_changes(&[change]);
                Ok(())
            }
            Stage::Built(updater) => {
                let info = updater
                    .apply(&[change])
                    .map_err(|e| Failure(libc::ENOSPC, e.to_string()))?;
                if info.pending > 0 {
                    self.wake.notify_all();
                }
                Ok(())
            }
            Stage::Building => Err(unbuildable()),
        }
    }

    /// A new lookup handle for the calling thread (building the table first if it is
    /// still loading), and the era it is of.
    fn handle(self: &Arc<Self>) -> Result<(u64, Box<dyn LookupHandle<A>>), Failure> {
        self.build()?;
        // The era first: the template read after it is of that era or a later one.
        let era = self.era.load(Ordering::Acquire);
        let current = lock(&self.current);
        let c = current.as_ref().ok_or_else(unbuildable)?;
        Ok((era, c.template.boxed_clone()))
    }

    /// A new reader for the calling thread.
    fn reader(self: &Arc<Self>) -> Result<Reader<A>, Failure> {
        let (era, handle) = self.handle()?;
        Ok(Reader {
            uid: self.uid,
            era,
            table: Arc::downgrade(self),
            handle,
            keys: vec![A::ZERO; CHUNK].into_boxed_slice(),
            ids: vec![0; CHUNK].into_boxed_slice(),
        })
    }

    /// Looks up the addresses `key(ips[i])` and writes each one's next hop (or the
    /// default) to `out[i]`, through the calling thread's handle on this table. Keys
    /// already in lpmkit's form (`K` is `A`: IPv4's host-order `u32`) are looked up where
    /// they are; others are converted a chunk at a time into the thread's scratch space.
    pub fn lookup<K: Copy + 'static>(
        self: &Arc<Self>,
        ips: &[K],
        out: &mut [u64],
        key: impl Fn(K) -> A,
    ) -> Result<(), Failure> {
        debug_assert_eq!(ips.len(), out.len());
        A::readers().with(|list| {
            let mut list = list.borrow_mut();
            let i = match list.iter().position(|r| r.uid == self.uid) {
                Some(i) => i,
                None => {
                    // Handles on tables freed since are dropped here.
                    list.retain(|r| r.table.strong_count() > 0);
                    list.push(self.reader()?);
                    list.len() - 1
                }
            };
            let r = &mut list[i];
            if r.era != self.era.load(Ordering::Acquire) {
                (r.era, r.handle) = self.handle()?;
            }
            let direct =
                (core::any::TypeId::of::<K>() == core::any::TypeId::of::<A>()).then(|| {
                    // SAFETY: `K` is `A` (checked just above): the same elements.
                    unsafe { std::slice::from_raw_parts(ips.as_ptr().cast::<A>(), ips.len()) }
                });
            for (c, o) in out.chunks_mut(CHUNK).enumerate() {
                let at = c * CHUNK;
                let ids = &mut r.ids[..o.len()];
                match direct {
                    Some(keys) => r.handle.lookup_batch(&keys[at..at + o.len()], ids),
                    None => {
                        let keys = &mut r.keys[..o.len()];
                        for (k, &x) in keys.iter_mut().zip(&ips[at..]) {
                            *k = key(x);
                        }
                        r.handle.lookup_batch(keys, ids);
                    }
                }
                self.values.translate(ids, o);
            }
            Ok(())
        })
    }
}

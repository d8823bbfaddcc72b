//! Tests of [`InPlace`](super::InPlace) and its readers.
//!
//! Validated reads, deterministically: a table whose lookup reads two words one after
//! the other (as Bloom's lookup reads its levels) and runs a hook in between, from
//! which the test applies a patch — a reader descheduled between two probes.

use super::*;
use crate::fib::UpdateStats;
use crate::nexthop::NextHop;
use crate::prefix::Prefix;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicU32;

thread_local! {
    /// Runs between the two probes of every `TwoProbes` lookup on this thread.
    static BETWEEN: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
}

/// Two independent words; every generation stores the same value `v` in both, so its
/// answer is `101·v`. A lookup that reads `a` of one generation and `b` of another
/// answers `100·a + b`, which no generation had.
struct TwoProbes {
    a: AtomicU32,
    b: AtomicU32,
}

impl Fib<u32> for TwoProbes {
    fn name(&self) -> &str {
        "two-probes"
    }
    fn lookup(&self, _addr: u32) -> Option<NextHop> {
        let a = self.a.load(Ordering::Acquire);
        BETWEEN.with(|h| {
            if let Some(f) = h.borrow_mut().as_mut() {
                f();
            }
        });
        let b = self.b.load(Ordering::Acquire);
        NextHop::new(100 * a + b)
    }
    fn memory_bytes(&self) -> usize {
        8
    }
}

/// Stores the announced next hop in `a`, then in `b` (release stores, as Bloom's).
struct TwoProbesWriter<const VALIDATED: bool>;

impl<const VALIDATED: bool> InPlaceWriter<u32> for TwoProbesWriter<VALIDATED> {
    type Table = TwoProbes;
    type Retired = ();
    type Config = crate::fib::NoConfig;
    const VALIDATED_READS: bool = VALIDATED;

    fn build(
        _rib: &Rib<u32>,
        _config: &crate::fib::NoConfig,
    ) -> Result<(Box<TwoProbes>, Self), BuildError> {
        let table = TwoProbes {
            a: AtomicU32::new(1),
            b: AtomicU32::new(1),
        };
        Ok((Box::new(table), TwoProbesWriter))
    }

    fn config(&self) -> &crate::fib::NoConfig {
        &crate::fib::NoConfig
    }

    unsafe fn patch(
        &mut self,
        table: &TwoProbes,
        _rib: &Rib<u32>,
        changes: &[Change<u32>],
        _retire: &mut Vec<()>,
    ) -> Result<Patched<TwoProbes>, BuildError> {
        for c in changes {
            if let Change::Announce(_, nh) = c {
                table.a.store(nh.get(), Ordering::Release);
                table.b.store(nh.get(), Ordering::Release);
            }
        }
        Ok(Patched::InPlace(UpdateStats::default()))
    }

    unsafe fn reuse(&mut self, _table: &TwoProbes, _block: ()) {}
}

type Shared<const V: bool> = Rc<RefCell<InPlace<u32, TwoProbesWriter<V>>>>;

/// An updater at generation 0 (both words 1) and a reader of it.
fn two_probes<const V: bool>() -> (Shared<V>, InPlaceReader<u32, TwoProbes>) {
    let table = TwoProbes {
        a: AtomicU32::new(1),
        b: AtomicU32::new(1),
    };
    let updater = InPlace::from_parts(Rib::new(), Box::new(table), TwoProbesWriter::<V>);
    let reader = updater.reader();
    (Rc::new(RefCell::new(updater)), reader)
}

/// Sets the hook: at the lookups numbered in `fire` (0 = the first lookup after this
/// call), one patch, generation `g` storing `g + 1`. Returns the count of lookups.
fn patch_between<const V: bool>(updater: &Shared<V>, fire: &'static [u32]) -> Rc<RefCell<u32>> {
    let calls = Rc::new(RefCell::new(0u32));
    let (u, n) = (Rc::clone(updater), Rc::clone(&calls));
    let p: Prefix<u32> = "10.0.0.0/8".parse().unwrap();
    BETWEEN.with(|h| {
        *h.borrow_mut() = Some(Box::new(move || {
            let i = *n.borrow();
            *n.borrow_mut() += 1;
            if fire.contains(&i) {
                let mut u = u.borrow_mut();
                let nh = NextHop::new(u.generation() as u32 + 2).unwrap();
                u.apply(&[Change::Announce(p, nh)]).unwrap();
            }
        }))
    });
    calls
}

fn unhook() {
    BETWEEN.with(|h| *h.borrow_mut() = None);
}

#[test]
fn an_unvalidated_read_can_mix_generations() {
    // The hazard the validation removes, shown on the same table read unvalidated:
    // `a` of generation 0 (1), `b` of generation 1 (2): 102, neither 101 nor 202.
    let (updater, mut reader) = two_probes::<false>();
    let calls = patch_between(&updater, &[0]);
    let mut out = [0u32];
    let g = reader.lookup_batch_traced(&[1], &mut out);
    unhook();
    assert_eq!(*calls.borrow(), 1, "one lookup: not retried");
    assert_eq!(out, [102], "a mix of generations 0 and 1");
    assert_eq!(g, Generations { first: 0, last: 1 });
}

#[test]
fn a_validated_read_retries_a_batch_that_met_a_patch() {
    let (updater, mut reader) = two_probes::<true>();
    let calls = patch_between(&updater, &[0]);
    let mut out = [0u32; 3];
    let g = reader.lookup_batch_traced(&[1, 2, 3], &mut out);
    unhook();
    // The first attempt met the patch (its first key read 102) and was refused; the
    // second read generation 1 whole.
    assert_eq!(*calls.borrow(), 6, "the batch was looked up twice");
    assert_eq!(out, [202; 3]);
    assert_eq!(g, Generations { first: 1, last: 1 });
    // Untraced, the same.
    let calls = patch_between(&updater, &[1]);
    reader.lookup_batch(&[1, 2, 3], &mut out);
    unhook();
    assert_eq!(*calls.borrow(), 6);
    assert_eq!(out, [303; 3], "generation 2, whole");
    // No patch: one attempt.
    let calls = patch_between(&updater, &[]);
    reader.lookup_batch(&[1, 2, 3], &mut out);
    unhook();
    assert_eq!(*calls.borrow(), 3);
    assert_eq!(out, [303; 3]);
}

#[test]
fn a_validated_read_falls_back_to_key_by_key() {
    // A patch in each whole-batch attempt, then in each key's first attempt: every
    // key still answers from one generation, each its own.
    assert_eq!(
        BATCH_ATTEMPTS, 2,
        "the lookup numbers below assume two attempts"
    );
    let (updater, mut reader) = two_probes::<true>();
    // Lookups: 0, 1 (attempt 1), 2, 3 (attempt 2), 4 + retry 5 (key 0), 6 + retry 7
    // (key 1).
    let calls = patch_between(&updater, &[0, 2, 4, 6]);
    let mut out = [0u32; 2];
    let g = reader.lookup_batch_traced(&[1, 2], &mut out);
    unhook();
    assert_eq!(*calls.borrow(), 8);
    // Key 0 from generation 3 (value 4), key 1 from generation 4 (value 5).
    assert_eq!(out, [404, 505]);
    assert_eq!(g, Generations { first: 3, last: 4 });
}

/// A table that is a copy of the routes, for the failure tests.
struct Copy(std::sync::Mutex<Rib<u32>>);

impl Fib<u32> for Copy {
    fn name(&self) -> &str {
        "copy"
    }
    fn lookup(&self, addr: u32) -> Option<NextHop> {
        self.0.lock().unwrap().lookup(addr)
    }
    fn memory_bytes(&self) -> usize {
        0
    }
}

/// Next hop 13 breaks a patch after it has copied the routes (a failure mid-patch);
/// `fail_restore` breaks the patch that undoes it, [`FAIL_BUILD`] its rebuilds.
struct FlakyWriter {
    fail_restore: bool,
}

thread_local! {
    /// Makes `FlakyWriter::build` fail (on this thread).
    static FAIL_BUILD: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
}

impl InPlaceWriter<u32> for FlakyWriter {
    type Table = Copy;
    type Retired = ();
    type Config = crate::fib::NoConfig;

    fn build(
        rib: &Rib<u32>,
        _config: &crate::fib::NoConfig,
    ) -> Result<(Box<Copy>, Self), BuildError> {
        if FAIL_BUILD.with(|f| f.get()) {
            return Err(BuildError::InvalidConfig {
                scheme: "copy".into(),
                reason: "the rebuild fails too".into(),
            });
        }
        // A rebuilt writer's restores succeed.
        let writer = FlakyWriter {
            fail_restore: false,
        };
        Ok((Box::new(Copy(rib.clone().into())), writer))
    }

    fn config(&self) -> &crate::fib::NoConfig {
        &crate::fib::NoConfig
    }

    unsafe fn patch(
        &mut self,
        table: &Copy,
        rib: &Rib<u32>,
        changes: &[Change<u32>],
        _retire: &mut Vec<()>,
    ) -> Result<Patched<Copy>, BuildError> {
        let broken = changes
            .iter()
            .any(|c| matches!(c, Change::Announce(_, nh) if nh.get() == 13));
        let restoring = changes
            .iter()
            .any(|c| matches!(c, Change::Announce(_, nh) if nh.get() != 13));
        *table.0.lock().unwrap() = rib.clone();
        let fail = |reason: &str| BuildError::InvalidConfig {
            scheme: "copy".into(),
            reason: reason.into(),
        };
        if broken {
            return Err(fail("next hop 13"));
        }
        if restoring && self.fail_restore {
            return Err(fail("the restore fails too"));
        }
        Ok(Patched::InPlace(UpdateStats::default()))
    }

    unsafe fn reuse(&mut self, _table: &Copy, _block: ()) {}
}

/// An updater over 10.0.0.0/8 → 1 whose restore fails, and whose rebuilds fail if asked.
fn flaky(fail_build: bool) -> InPlace<u32, FlakyWriter> {
    let mut rib = Rib::new();
    rib.insert("10.0.0.0/8".parse().unwrap(), NextHop::new(1).unwrap());
    FAIL_BUILD.with(|f| f.set(fail_build));
    let table = Box::new(Copy(rib.clone().into()));
    InPlace::from_parts(rib, table, FlakyWriter { fail_restore: true })
}

#[test]
fn a_failed_restore_publishes_a_table_rebuilt_from_the_routes() {
    let mut u = flaky(false);
    let mut reader = u.reader();
    let p: Prefix<u32> = "10.0.0.0/8".parse().unwrap();
    let err = u
        .apply(&[Change::Announce(p, NextHop::new(13).unwrap())])
        .unwrap_err();
    assert!(err.to_string().contains("next hop 13"), "{err}");
    assert!(!u.is_poisoned());
    // The table readers see equals the routes as they were before the batch.
    let mut out = [0u32; 2];
    reader.lookup_batch(&[0x0a00_0001, 0x0b00_0001], &mut out);
    assert_eq!(out, [1, 0], "a table rebuilt from the Rib");
    assert_eq!(u.rib().get(&p), NextHop::new(1));
    // And the updater goes on.
    u.apply(&[Change::Announce(p, NextHop::new(2).unwrap())])
        .unwrap();
    reader.lookup_batch(&[0x0a00_0001, 0x0b00_0001], &mut out);
    assert_eq!(out, [2, 0]);
}

#[test]
fn a_failed_rebuild_poisons_the_handle() {
    let mut u = flaky(true);
    let mut reader = u.reader();
    let p: Prefix<u32> = "10.0.0.0/8".parse().unwrap();
    let err = u
        .apply(&[Change::Announce(p, NextHop::new(13).unwrap())])
        .unwrap_err();
    assert!(err.to_string().contains("poisoned"), "{err}");
    assert!(u.is_poisoned());
    // Every later batch is refused, and a lookup fails loudly.
    let err = u.apply(&[Change::Withdraw(p)]).unwrap_err();
    assert!(err.to_string().contains("poisoned"), "{err}");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut out = [0u32];
        reader.lookup_batch(&[0x0a00_0001], &mut out);
    }));
    assert!(panicked.is_err(), "a lookup of a poisoned table must panic");
}

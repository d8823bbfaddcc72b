//! Lookups concurrent with updates. Reader threads check every answer against the answers
//! the table had while that lookup ran, while the writer replays a real update trace:
//!
//! * rebuild-style schemes through `sync::Publisher` (a batch sees one whole version);
//! * incremental schemes in place, ONE instance (`sync::InPlace`): each key's answer must be
//!   the Rib's at one of the generations the batch spanned — never a value no generation
//!   had — and no read of freed or reused memory (a stalled reader proves it); the
//!   Bloom-filter schemes with validated reads (`InPlaceWriter::VALIDATED_READS`: a batch
//!   that met a patch is looked up again), so their batches mostly span one generation;
//! * the same schemes through left-right twins (`sync::TwinUpdater`), the comparison.
//!
//! `LPMKIT_CONCURRENCY_SCHEMES=bloomfwd,bloom-base` runs only the named schemes (to run
//! one scheme's checks many times, e.g. under load).

use crate::common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, RwLock};
use std::time::{Duration, Instant};

use lpmkit::registry::{self, BuildOptions};
use lpmkit::schemes::bloom::{Bloom, BloomConfig};
use lpmkit::schemes::dxr::{Dxr, DxrConfig};
use lpmkit::schemes::lulea::{Lulea, LuleaConfig};
use lpmkit::schemes::miht::{Miht, MihtConfig};
use lpmkit::schemes::obma::{Obma, ObmaConfig};
use lpmkit::schemes::poptrie::{Poptrie, PoptrieConfig};
use lpmkit::schemes::sail::{SailBitmap, SailBitmapConfig, SailL, SailLConfig};
use lpmkit::sync::{
    Generations, InPlace, LookupHandle, Publisher, PublisherConfig, TwinUpdater, Updater,
};
use lpmkit::{Address, Change, NextHop, NextHopTable, Prefix, Rib, Table};

/// The answers of the probe keys over the generations: for each probe, `(generation,
/// answer)` from generation 0 on, one entry per change of its answer.
struct History<A> {
    probes: Vec<A>,
    answers: RwLock<Vec<Vec<(u64, u32)>>>,
}

impl<A: Address> History<A> {
    fn new(rib: &Rib<A>, probes: Vec<A>) -> Self {
        let answers = common::reference(rib, &probes)
            .into_iter()
            .map(|a| vec![(0, a)])
            .collect();
        History {
            probes,
            answers: RwLock::new(answers),
        }
    }

    /// Records generation `g`: the answers (in `rib`, which holds it) of the probes inside
    /// the prefixes `changes` touched.
    fn record(&self, g: u64, rib: &Rib<A>, changes: &[Change<A>]) {
        let mut updates = Vec::new();
        for c in changes {
            let p = c.prefix();
            let from = self.probes.partition_point(|&a| a < p.first());
            let to = self.probes.partition_point(|&a| a <= p.last());
            for i in from..to {
                updates.push((i, NextHop::raw(rib.lookup(self.probes[i]))));
            }
        }
        let mut answers = self.answers.write().unwrap();
        for (i, a) in updates {
            let h = &mut answers[i];
            if h.last().unwrap().1 != a {
                if h.last().unwrap().0 == g {
                    h.last_mut().unwrap().1 = a;
                } else {
                    h.push((g, a));
                }
            }
        }
    }

    /// Checks `out` (the answers of `probes[start..]`) against generations `gens`.
    fn check(&self, start: usize, out: &[u32], gens: Generations, what: &str) {
        let answers = self.answers.read().unwrap();
        for (j, &got) in out.iter().enumerate() {
            let h = &answers[start + j];
            // The answer at `first`, and every later one up to `last`.
            let at_first = h.partition_point(|&(g, _)| g <= gens.first) - 1;
            let ok = h[at_first..]
                .iter()
                .take_while(|&&(g, _)| g <= gens.last)
                .any(|&(_, a)| a == got);
            assert!(
                ok,
                "{what}: answered {got} for {} during generations {}..={}, but the table had {:?}",
                lpmkit::prefix::format_addr(self.probes[start + j]),
                gens.first,
                gens.last,
                h
            );
        }
    }
}

/// Sets the flag when dropped: the readers stop even if the writer panics (a failed
/// assertion), instead of the test hanging on them.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Probe keys: the boundaries of every prefix the trace touches, plus random keys; sorted.
fn probes<A: Address>(rib: &Rib<A>, changes: &[Change<A>]) -> Vec<A> {
    let mut p: Vec<A> = Vec::new();
    for c in changes {
        let pre = c.prefix();
        p.extend([pre.first(), pre.last()]);
        p.extend(pre.first().checked_dec());
        p.extend(pre.last().checked_inc());
    }
    p.sort_unstable();
    p.dedup();
    let step = p.len().div_ceil(30_000).max(1);
    let mut p: Vec<A> = p.into_iter().step_by(step).collect();
    p.extend(common::keys_for(rib, 2_000, 9).into_iter().take(2_000));
    p.sort_unstable();
    p.dedup();
    p
}

/// What the readers saw.
#[derive(Default)]
struct ReaderReport {
    batches: AtomicU64,
    /// Batches whose answers spanned more than one generation (a patch ran meanwhile).
    straddling: AtomicU64,
}

/// Runs two reader threads through `handle` until `done`, each checking every answer.
fn run_readers<A: Address>(
    handle: Box<dyn LookupHandle<A>>,
    history: &History<A>,
    done: &AtomicBool,
    report: &ReaderReport,
    what: &str,
) {
    let n = history.probes.len();
    let handles: Vec<_> = (0..2).map(|_| handle.boxed_clone()).collect();
    std::thread::scope(|s| {
        for (r, mut handle) in handles.into_iter().enumerate() {
            s.spawn(move || {
                let mut out = vec![0u32; 512];
                let mut start = (r * 4099) % n;
                // Every reader checks at least one batch, even if the writer finished
                // before it started (a loaded machine): the last batch runs after `done`.
                loop {
                    let last = done.load(Ordering::Acquire);
                    let end = (start + 512).min(n);
                    let gens = handle
                        .lookup_batch_traced(&history.probes[start..end], &mut out[..end - start]);
                    history.check(start, &out[..end - start], gens, what);
                    report.batches.fetch_add(1, Ordering::Relaxed);
                    if gens.first != gens.last {
                        report.straddling.fetch_add(1, Ordering::Relaxed);
                    }
                    start = if end == n { 0 } else { end };
                    if last {
                        break;
                    }
                }
            });
        }
    });
}

fn load<A: Address>(table: &str, trace: &str) -> Option<(Table<A>, Vec<Change<A>>)> {
    let fib = common::data_file(&format!("fib/{table}"))?;
    let mut t: Table<A> = common::load_table(&fib);
    let path = common::data_file(&format!("updates/{trace}"))?;
    let mut hops: NextHopTable<String> = std::mem::take(&mut t.next_hops);
    let changes = common::load_updates::<A>(&path, &mut hops);
    Some((t, changes))
}

/// Replays `changes` through `updater`, `batch` per `apply`, with two checking readers;
/// replays them again (they must be cyclic: a flapping route) until the readers have
/// checked `min_batches` batches.
fn replay_checked<A: Address>(
    mut updater: Box<dyn Updater<A>>,
    changes: &[Change<A>],
    batch: usize,
    min_batches: u64,
    what: &str,
) {
    let history = History::new(updater.rib(), probes(updater.rib(), changes));
    // The writer's view of the next generation, kept beside the updater's Rib.
    let mut shadow = updater.rib().clone();
    let mut generation = 0u64;
    let done = AtomicBool::new(false);
    let report = ReaderReport::default();
    let handle = updater.reader();
    std::thread::scope(|s| {
        let h = s.spawn(|| run_readers(handle, &history, &done, &report, what));
        let stop = StopOnDrop(&done);
        let t0 = Instant::now();
        loop {
            for chunk in changes.chunks(batch) {
                let effective: Vec<Change<A>> = chunk
                    .iter()
                    .copied()
                    .filter(|c| c.apply_to(&mut shadow))
                    .collect();
                if !effective.is_empty() {
                    // Record the next generation's answers before readers can see them.
                    history.record(generation + 1, &shadow, &effective);
                    generation += 1;
                }
                let info = updater.apply(chunk).unwrap();
                assert_eq!(info.generation, generation, "{what}: generations");
            }
            if report.batches.load(Ordering::Relaxed) >= min_batches
                || t0.elapsed() > Duration::from_secs(20)
            {
                break;
            }
        }
        drop(stop);
        h.join().unwrap()
    });
    // The table ended equal to the Rib.
    let keys = common::keys_for(updater.rib(), 100_000, 5);
    let want = common::reference(updater.rib(), &keys);
    let mut out = vec![0u32; keys.len()];
    let mut r = updater.reader();
    r.lookup_batch(&keys, &mut out);
    assert_eq!(out, want, "{what}: final table");
    let batches = report.batches.load(Ordering::Relaxed);
    eprintln!(
        "{what} ({}): {generation} generations; {batches} reader batches checked, {} of them \
         spanning a patch",
        updater.model(),
        report.straddling.load(Ordering::Relaxed)
    );
    assert!(
        batches >= min_batches.min(2),
        "{what}: {batches} reader batches"
    );
}

/// False if `LPMKIT_CONCURRENCY_SCHEMES` is set and does not name `scheme`.
fn selected(scheme: &str) -> bool {
    common::selected("LPMKIT_CONCURRENCY_SCHEMES", scheme)
}

/// Incremental: ONE instance patched in place, then the same through twins.
fn incremental_scheme<A: Address>(
    t: &Table<A>,
    changes: &[Change<A>],
    scheme: &str,
    batch: usize,
    min_batches: u64,
) {
    in_place_scheme(t, changes, scheme, batch, min_batches);
    twins_scheme(t, changes, scheme, batch, min_batches);
}

/// ONE instance patched in place (`sync::InPlace`; validated reads where the scheme's
/// writer asks for them).
fn in_place_scheme<A: Address>(
    t: &Table<A>,
    changes: &[Change<A>],
    scheme: &str,
    batch: usize,
    min_batches: u64,
) {
    if !selected(scheme) {
        return;
    }
    let info = registry::find(scheme).unwrap();
    let updater = info
        .build_in_place(t.rib.clone(), &BuildOptions::default())
        .unwrap();
    replay_checked(updater, changes, batch, min_batches, scheme);
}

/// Left-right twins of an incremental scheme (`sync::TwinUpdater`).
fn twins_scheme<A: Address>(
    t: &Table<A>,
    changes: &[Change<A>],
    scheme: &str,
    batch: usize,
    min_batches: u64,
) {
    if !selected(scheme) {
        return;
    }
    let info = registry::find(scheme).unwrap();
    let opts = BuildOptions::default();
    let build = move |rib: &Rib<A>| info.build_incremental(rib, &opts);
    let twins = TwinUpdater::new(t.rib.clone(), build).unwrap();
    replay_checked(Box::new(twins), changes, batch, min_batches, scheme);
}

/// Rebuild-style: publish after every `batch` changes.
fn rebuild_scheme<A: Address>(t: &Table<A>, changes: &[Change<A>], scheme: &str, batch: usize) {
    if !selected(scheme) {
        return;
    }
    let info = registry::find(scheme).unwrap();
    let build = |rib: &Rib<A>| info.build(rib, &BuildOptions::default());
    let config = PublisherConfig {
        hold_time: Duration::from_secs(3600),
    };
    let mut publisher = Publisher::new(t.rib.clone(), build, config).unwrap();
    let history = History::new(&t.rib, probes(&t.rib, changes));
    let done = AtomicBool::new(false);
    let reader = publisher.reader();
    let report = ReaderReport::default();
    std::thread::scope(|s| {
        let h = s.spawn(|| run_readers(Box::new(reader), &history, &done, &report, scheme));
        let stop = StopOnDrop(&done);
        for (g, chunk) in changes.chunks(batch).enumerate() {
            publisher.apply(chunk).unwrap();
            // Record the answers of the next generation before readers can see it.
            history.record(g as u64 + 1, publisher.rib(), chunk);
            publisher.publish().unwrap();
        }
        drop(stop);
        h.join().unwrap()
    });
    eprintln!(
        "{scheme}: {} reader batches checked",
        report.batches.load(Ordering::Relaxed)
    );
    assert!(report.batches.load(Ordering::Relaxed) > 0);
}

/// One real trace under checking readers per update model: the rebuild `Publisher`
/// (dir24-8), one instance patched in place (d18r, and poptrie18 on IPv6), in place with
/// validated reads (bloomfwd), and left-right twins (d18r). The long tier replays every
/// trace through every in-place scheme, in place and through twins.
#[test]
fn one_trace_per_update_model() {
    let Some((t, changes)) = load::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2014-12-17-updates.txt.xz",
    ) else {
        return;
    };
    rebuild_scheme(&t, &changes, "dir24-8", 2_000);
    in_place_scheme(&t, &changes, "d18r", 50, 0);
    in_place_scheme(&t, &changes, "bloomfwd", 50, 0);
    twins_scheme(&t, &changes, "d18r", 50, 0);
    let Some((t6, changes6)) = load::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    ) else {
        return;
    };
    in_place_scheme(&t6, &changes6[..20_000], "poptrie18", 50, 0);
}

#[test]
#[ignore = "long tier: every trace under readers for every in-place scheme"]
fn ipv4_2014_linx_trace() {
    let Some((t, changes)) = load::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2014-12-17-updates.txt.xz",
    ) else {
        return;
    };
    rebuild_scheme(&t, &changes, "dir24-8", 2_000);
    rebuild_scheme(&t, &changes, "spider16w", 1_000);
    incremental_scheme(&t, &changes, "d18r", 50, 0);
    incremental_scheme(&t, &changes, "poptrie18", 50, 0);
    incremental_scheme(&t, &changes, "lulea", 50, 0);
    incremental_scheme(&t, &changes, "sail-u", 50, 0);
    incremental_scheme(&t, &changes, "sail-l", 50, 0);
    incremental_scheme(&t, &changes[..5_000], "sail-b", 50, 0);
    incremental_scheme(&t, &changes, "bloomfwd", 50, 0);
    incremental_scheme(&t, &changes, "bloom-base", 50, 0);
    incremental_scheme(&t, &changes, "miht", 50, 0);
    incremental_scheme(&t, &changes, "obma-b", 50, 0);
    incremental_scheme(&t, &changes, "obma-l", 50, 0);
    incremental_scheme(&t, &changes, "obma-s", 50, 0);
}

#[test]
#[ignore = "long tier: every trace under readers for every in-place scheme"]
fn ipv4_2024_ris_trace() {
    let Some((t, changes)) = load::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    ) else {
        return;
    };
    incremental_scheme(&t, &changes, "d18r", 50, 0);
    incremental_scheme(&t, &changes, "poptrie18", 50, 0);
    incremental_scheme(&t, &changes[..10_000], "lulea", 50, 0);
    incremental_scheme(&t, &changes, "sail-u", 50, 0);
    incremental_scheme(&t, &changes, "sail-l", 50, 0);
    incremental_scheme(&t, &changes, "bloomfwd", 50, 0);
    incremental_scheme(&t, &changes, "bloom-base", 50, 0);
    incremental_scheme(&t, &changes, "miht", 50, 0);
    incremental_scheme(&t, &changes, "obma-b", 50, 0);
    incremental_scheme(&t, &changes, "obma-l", 50, 0);
    incremental_scheme(&t, &changes, "obma-s", 50, 0);
}

#[test]
#[ignore = "long tier: every trace under readers for every in-place scheme"]
fn ipv6_2024_ris_trace() {
    let Some((t, changes)) = load::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    ) else {
        return;
    };
    rebuild_scheme(&t, &changes[..30_000], "spider16w", 1_000);
    rebuild_scheme(&t, &changes[..30_000], "dir24-8", 3_000);
    incremental_scheme(&t, &changes, "poptrie18", 50, 0);
    incremental_scheme(&t, &changes, "sail-m", 50, 0);
    incremental_scheme(&t, &changes, "bloomfwd", 50, 0);
    incremental_scheme(&t, &changes, "bloom-base", 50, 0);
    incremental_scheme(&t, &changes, "miht", 50, 0);
    incremental_scheme(&t, &changes, "obma-b", 50, 0);
    incremental_scheme(&t, &changes, "obma-l", 50, 0);
    incremental_scheme(&t, &changes, "obma-s", 50, 0);
}

/// OBMA on the origin-AS table, whose 16-bit DPA names its next hops through a
/// dictionary: changes that add dictionary slots and chunks, under checking readers.
#[test]
#[ignore = "long tier: every trace under readers for every in-place scheme"]
fn obma_dpa_dictionary_origin_as() {
    let Some(t) = common::fib_table::<u32>("ipv4-routeviews-2015-11-01-originas.txt.xz") else {
        return;
    };
    let changes = common::dpa_churn(4_000, t.next_hops.len() as u32, 11);
    for scheme in ["obma-b", "obma-l", "obma-s"] {
        incremental_scheme(&t, &changes, scheme, 1, 0);
        incremental_scheme(&t, &changes, scheme, 50, 0);
    }
}

#[test]
fn never_a_third_answer_under_a_hot_prefix() {
    // One prefix flaps between two next hops (and away) while readers look up inside it:
    // every answer must be one of the versions' answers.
    let mut rib = Rib::<u32>::new();
    let cover = "10.0.0.0/8".parse().unwrap();
    rib.insert(cover, NextHop::new(1).unwrap());
    let hot: Prefix<u32> = "10.1.0.0/16".parse().unwrap();
    let t = Table {
        rib,
        next_hops: NextHopTable::new(),
        name: "flap".into(),
    };
    let changes: Vec<Change<u32>> = (0..300)
        .map(|i| match i % 3 {
            0 => Change::Announce(hot, NextHop::new(2).unwrap()),
            1 => Change::Announce(hot, NextHop::new(3).unwrap()),
            _ => Change::Withdraw(hot),
        })
        .collect();
    incremental_scheme(&t, &changes, "d16r", 1, 2_000);
    incremental_scheme(&t, &changes, "poptrie16", 1, 2_000);
    incremental_scheme(&t, &changes, "lulea", 1, 2_000);
    incremental_scheme(&t, &changes, "sail-u", 1, 2_000);
    incremental_scheme(&t, &changes, "sail-l", 1, 2_000);
    incremental_scheme(&t, &changes, "bloomfwd", 1, 2_000);
    incremental_scheme(&t, &changes, "bloom-base", 1, 2_000);
    incremental_scheme(&t, &changes, "miht", 1, 2_000);
    incremental_scheme(&t, &changes, "obma-b", 1, 2_000);
    incremental_scheme(&t, &changes, "obma-l", 1, 2_000);
    incremental_scheme(&t, &changes, "obma-s", 1, 2_000);
    rebuild_scheme(&t, &changes[..60], "spider8w", 1);
}

/// A reader stalled inside a lookup — it has read a switch word and not yet what it points
/// to — while the writer replays thousands of changes that rewrite that very part: the
/// writer never waits for it, what it reads afterwards is still intact (its answer is one
/// the table had), and the retired memory is reused only once it moves on.
fn stalled_reader<A, W>(
    name: &str,
    rib: Rib<A>,
    fib: lpmkit::Patchable<A, W>,
    key: A,
    changes: &[Change<A>],
) where
    A: Address,
    W: lpmkit::fib::InPlaceWriter<A>,
{
    let before = NextHop::raw(rib.lookup(key));
    let mut updater = InPlace::new(rib, fib);
    let mut reader = updater.reader();
    let (stalled_tx, stalled_rx) = mpsc::channel();
    let (resume_tx, resume_rx) = mpsc::channel::<()>();
    let answers: Arc<RwLock<Vec<u32>>> = Arc::new(RwLock::new(vec![before]));
    let seen = Arc::clone(&answers);
    let h = std::thread::spawn(move || {
        let table = reader.load();
        let got = lpmkit::Fib::stalled_lookup(table, key, &mut || {
            stalled_tx.send(()).unwrap();
            // The writer must finish without this reader moving on.
            resume_rx
                .recv_timeout(Duration::from_secs(120))
                .expect("the writer waited for a stalled reader");
        });
        let ok = seen.read().unwrap().contains(&got);
        // Move on: the next batch announces a later epoch.
        let mut out = [0u32];
        reader.lookup_batch(&[key], &mut out);
        (got, ok, reader)
    });
    stalled_rx.recv().unwrap();
    let t0 = Instant::now();
    let mut shadow = updater.rib().clone();
    for c in changes {
        c.apply_to(&mut shadow);
        answers
            .write()
            .unwrap()
            .push(NextHop::raw(shadow.lookup(key)));
        updater.apply(std::slice::from_ref(c)).unwrap();
    }
    let (held, _) = updater.waiting();
    assert!(
        held > 0,
        "{name}: retired blocks were reused under a stalled reader"
    );
    eprintln!(
        "{name}: {} changes applied in {:?} under a stalled reader; {held} retired blocks held",
        changes.len(),
        t0.elapsed()
    );
    resume_tx.send(()).unwrap();
    let (got, ok, reader) = h.join().unwrap();
    assert!(
        ok,
        "{name}: the stalled lookup answered {got}, which no generation had"
    );
    drop(reader);
    // Everything comes back once the reader has moved on.
    updater.reclaim_now();
    assert_eq!(updater.waiting().0, 0, "{name}: retired blocks not reused");
}

/// Changes that rewrite the part of the table under `hot` over and over (more-specifics
/// announced, flapped and withdrawn), then the real trace.
fn churn<A: Address>(hot: Prefix<A>, trace: &[Change<A>]) -> Vec<Change<A>> {
    let mut v = Vec::new();
    let sub = (hot.len() + 4).min(A::BITS);
    for i in 0..2000u32 {
        let off = A::from_u128(((i % 16) as u128) << (A::BITS - sub) as u32);
        let p = Prefix::new_truncating(hot.first().or(off), sub);
        v.push(Change::Announce(p, NextHop::new(1 + i % 7).unwrap()));
        if i % 3 == 0 {
            v.push(Change::Withdraw(p));
        }
    }
    v.extend_from_slice(&trace[..trace.len().min(5_000)]);
    v
}

#[test]
fn a_stalled_reader_neither_sees_freed_memory_nor_stops_the_writer() {
    let Some((t, changes)) = load::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    ) else {
        return;
    };
    // A key inside a chunk that holds several ranges.
    let hot: Prefix<u32> = "193.0.0.0/16".parse().unwrap();
    let key = hot.first() + 0x1234;
    let work = churn(hot, &changes);
    let dxr = Dxr::build(&t.rib, &DxrConfig::d18r()).unwrap();
    stalled_reader("d18r", t.rib.clone(), dxr, key, &work);
    let pop = Poptrie::build(&t.rib, &PoptrieConfig::poptrie18()).unwrap();
    stalled_reader("poptrie18", t.rib.clone(), pop, key, &work);
    let lulea = Lulea::build(&t.rib, &LuleaConfig::default()).unwrap();
    stalled_reader("lulea", t.rib.clone(), lulea, key, &work[..3_000]);
    let sail = SailL::build(&t.rib, &SailLConfig::sail_l()).unwrap();
    stalled_reader("sail-l", t.rib.clone(), sail, key, &work);
    // SAIL_U rewrites entries of levels 16 and 24 in place and retires only chunks
    // (routes longer than /24): churn under a /24.
    let hot24: Prefix<u32> = "193.0.1.0/24".parse().unwrap();
    let work24 = churn(hot24, &changes);
    let sail = SailBitmap::build(&t.rib, &SailBitmapConfig::sail_u()).unwrap();
    stalled_reader("sail-u", t.rib.clone(), sail, hot24.first() + 0x12, &work24);
    // Bloomfwd: a key whose /24 is in G1, churned by /26s (G2) and /22s (G1).
    let hot: Prefix<u32> = "193.0.4.0/22".parse().unwrap();
    let key = hot.first() + 0x123;
    let bloom = Bloom::build(&t.rib, &BloomConfig::bloomfwd()).unwrap();
    stalled_reader("bloomfwd", t.rib.clone(), bloom, key, &churn(hot, &changes));
    let miht = Miht::build(&t.rib, &MihtConfig::default()).unwrap();
    stalled_reader("miht", t.rib.clone(), miht, key, &churn(hot, &changes));
    let obma = Obma::build(&t.rib, &ObmaConfig::b()).unwrap();
    stalled_reader("obma-b", t.rib.clone(), obma, key, &churn(hot, &changes));
    let obma = Obma::build(&t.rib, &ObmaConfig::l()).unwrap();
    stalled_reader("obma-l", t.rib.clone(), obma, key, &churn(hot, &changes));
    let obma = Obma::build(&t.rib, &ObmaConfig::s()).unwrap();
    stalled_reader("obma-s", t.rib.clone(), obma, key, &churn(hot, &changes));

    let Some((t6, changes6)) = load::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    ) else {
        return;
    };
    let hot: Prefix<u128> = "2a00::/24".parse().unwrap();
    let key = hot.first() + 0x1234_5678;
    let work = churn(hot, &changes6);
    let pop = Poptrie::build(&t6.rib, &PoptrieConfig::poptrie18()).unwrap();
    stalled_reader("poptrie18 v6", t6.rib.clone(), pop, key, &work);
    let sail = SailL::build(&t6.rib, &SailLConfig::sail_m()).unwrap();
    stalled_reader("sail-m", t6.rib.clone(), sail, key, &work);
    let bloom = Bloom::build(&t6.rib, &BloomConfig::bloomfwd()).unwrap();
    stalled_reader("bloomfwd v6", t6.rib.clone(), bloom, key, &work);
    let miht = Miht::build(&t6.rib, &MihtConfig::default()).unwrap();
    stalled_reader("miht v6", t6.rib.clone(), miht, key, &work);
    let obma = Obma::build(&t6.rib, &ObmaConfig::b()).unwrap();
    stalled_reader("obma-b v6", t6.rib.clone(), obma, key, &work);
}

#[test]
fn generations_of_an_idle_table() {
    // No writer: a batch spans generation 0 only.
    let mut rib = Rib::<u32>::new();
    rib.insert("10.0.0.0/8".parse().unwrap(), NextHop::new(1).unwrap());
    let u = registry::find("d18r")
        .unwrap()
        .build_in_place(rib, &BuildOptions::default())
        .unwrap();
    let mut h = u.reader();
    let mut out = [0u32; 2];
    let g = h.lookup_batch_traced(&[0x0a00_0001, 0x0b00_0001], &mut out);
    assert_eq!((out, g), ([1, 0], Generations { first: 0, last: 0 }));
}

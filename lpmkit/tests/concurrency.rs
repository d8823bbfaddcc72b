//! Lookups concurrent with updates: reader threads check every answer against the table
//! version they were handed, while the writer replays a real update trace through
//! `sync::Publisher` (rebuild-style schemes) or `sync::TwinUpdater` (incremental ones).
//! A reader must always see one whole version — the answers of the `Rib` as it was when
//! that version was published — never a mixture and never freed memory.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use lpmkit::io::{self, TableOptions};
use lpmkit::registry::{self, BuildOptions};
use lpmkit::sync::{Publisher, PublisherConfig, Reader, TwinUpdater};
use lpmkit::{Address, Change, Fib, NextHop, NextHopTable, Rib, Table};

/// Expected answers of the probe keys, per published generation.
type Expected = Arc<RwLock<Vec<Arc<Vec<u32>>>>>;

fn answers<A: Address>(rib: &Rib<A>, probes: &[A]) -> Arc<Vec<u32>> {
    Arc::new(common::reference(rib, probes))
}

/// Probe keys: the boundaries of every prefix the trace touches, plus random keys.
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
    p.truncate(30_000);
    p.extend(common::keys_for(rib, 2_000, 9).into_iter().take(2_000));
    p
}

/// Runs `readers` threads against `reader` until `done`; returns the batches checked.
fn run_readers<A: Address, F: Fib<A> + 'static>(
    reader: &Reader<A, F>,
    probes: &[A],
    expected: &Expected,
    done: &AtomicBool,
    what: &str,
) -> u64 {
    let checked = AtomicU64::new(0);
    std::thread::scope(|s| {
        for r in 0..2 {
            let reader = reader.clone();
            let checked = &checked;
            s.spawn(move || {
                let mut out = vec![0u32; 512];
                let mut start = (r * 4099) % probes.len();
                // Every reader checks at least one batch, even if the writer finished
                // before it started (a loaded machine): the last batch runs after `done`.
                loop {
                    let last = done.load(Ordering::Acquire);
                    let end = (start + 512).min(probes.len());
                    let guard = reader.load();
                    guard
                        .fib
                        .lookup_batch(&probes[start..end], &mut out[..end - start]);
                    let want = expected.read().unwrap()[guard.generation as usize].clone();
                    for (i, &got) in out[..end - start].iter().enumerate() {
                        assert_eq!(
                            got,
                            want[start + i],
                            "{what}: generation {} answered {got} for {}",
                            guard.generation,
                            lpmkit::prefix::format_addr(probes[start + i])
                        );
                    }
                    drop(guard);
                    checked.fetch_add(1, Ordering::Relaxed);
                    start = if end == probes.len() { 0 } else { end };
                    if last {
                        break;
                    }
                }
            });
        }
    });
    checked.into_inner()
}

fn load<A: Address>(table: &str, trace: &str) -> Option<(Table<A>, Vec<Change<A>>)> {
    let fib = common::data_file(&format!("fib/{table}"))?;
    let mut t: Table<A> = io::read_table_as(&fib, &TableOptions::default()).unwrap();
    let path = common::data_file(&format!("updates/{trace}"))?;
    let mut hops: NextHopTable<String> = std::mem::take(&mut t.next_hops);
    let updates = io::read_updates::<A>(&path, &mut hops).unwrap();
    Some((t, updates.into_iter().map(|u| u.change).collect()))
}

/// Rebuild-style: publish after every `batch` changes.
fn rebuild_scheme<A: Address>(t: &Table<A>, changes: &[Change<A>], scheme: &str, batch: usize) {
    let info = registry::find(scheme).unwrap();
    let build = |rib: &Rib<A>| info.build(rib, &BuildOptions::default());
    let config = PublisherConfig {
        hold_time: Duration::from_secs(3600),
    };
    let mut publisher = Publisher::new(t.rib.clone(), build, config).unwrap();
    let probes = probes(&t.rib, changes);
    let expected: Expected = Arc::new(RwLock::new(vec![answers(&t.rib, &probes)]));
    let done = AtomicBool::new(false);
    let reader = publisher.reader();
    let checked = std::thread::scope(|s| {
        let h = s.spawn(|| run_readers(&reader, &probes, &expected, &done, scheme));
        for chunk in changes.chunks(batch) {
            for &c in chunk {
                publisher.apply(c).unwrap();
            }
            // Record the answers of the next generation before readers can see it.
            expected
                .write()
                .unwrap()
                .push(answers(publisher.rib(), &probes));
            publisher.publish().unwrap();
        }
        done.store(true, Ordering::Release);
        h.join().unwrap()
    });
    let generations = expected.read().unwrap().len();
    eprintln!("{scheme}: {generations} generations, {checked} reader batches checked");
    assert!(checked > 0);
}

/// Incremental: every `batch` changes patch the twin instances.
fn incremental_scheme<A: Address>(t: &Table<A>, changes: &[Change<A>], scheme: &str, batch: usize) {
    let build = registry::incremental_builder::<A>(scheme).unwrap();
    let build = |rib: &Rib<A>| build(rib, &BuildOptions::default());
    let mut updater = TwinUpdater::new(t.rib.clone(), build).unwrap();
    let probes = probes(&t.rib, changes);
    let expected: Expected = Arc::new(RwLock::new(vec![answers(&t.rib, &probes)]));
    let done = AtomicBool::new(false);
    let reader = updater.reader();
    let checked = std::thread::scope(|s| {
        let h = s.spawn(|| run_readers(&reader, &probes, &expected, &done, scheme));
        for chunk in changes.chunks(batch) {
            // The answers after this chunk, computed on a copy of the Rib before the
            // updater publishes them (an ineffective chunk publishes nothing).
            let mut next = updater.rib().clone();
            let effective = chunk.iter().filter(|c| c.apply_to(&mut next)).count();
            if effective > 0 {
                expected.write().unwrap().push(answers(&next, &probes));
            }
            let info = updater.apply(chunk).unwrap();
            assert_eq!(info.generation as usize + 1, expected.read().unwrap().len());
        }
        done.store(true, Ordering::Release);
        h.join().unwrap()
    });
    // Both instances ended equal to the Rib.
    let keys = common::keys_for(updater.rib(), 100_000, 5);
    let want = common::reference(updater.rib(), &keys);
    let g = reader.load();
    common::assert_agrees(&g.fib, updater.rib(), &keys, &want, scheme);
    let generations = expected.read().unwrap().len();
    eprintln!("{scheme}: {generations} generations, {checked} reader batches checked");
    assert!(checked > 0);
}

#[test]
fn ipv4_rebuild_and_incremental() {
    let Some((t, changes)) = load::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2014-12-17-updates.txt.xz",
    ) else {
        return;
    };
    rebuild_scheme(&t, &changes, "dir24-8", 2_000);
    rebuild_scheme(&t, &changes, "spider16w", 1_000);
    incremental_scheme(&t, &changes, "d18r", 50);
    incremental_scheme(&t, &changes, "poptrie18", 50);
}

#[test]
fn ipv6_rebuild_and_incremental() {
    let Some((t, mut changes)) = load::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
    ) else {
        return;
    };
    changes.truncate(30_000);
    rebuild_scheme(&t, &changes, "spider16w", 1_000);
    rebuild_scheme(&t, &changes, "dir24-8", 3_000);
    incremental_scheme(&t, &changes, "poptrie18", 50);
}

#[test]
fn never_a_third_answer_under_a_hot_prefix() {
    // One prefix flaps between two next hops (and away) while readers look up inside it:
    // every answer must be one of the versions' answers.
    let mut rib = Rib::<u32>::new();
    let cover = "10.0.0.0/8".parse().unwrap();
    rib.insert(cover, NextHop::new(1).unwrap());
    let hot: lpmkit::Prefix<u32> = "10.1.0.0/16".parse().unwrap();
    let t = Table {
        rib,
        next_hops: NextHopTable::new(),
        name: "flap".into(),
    };
    let changes: Vec<Change<u32>> = (0..600)
        .map(|i| match i % 3 {
            0 => Change::Announce(hot, NextHop::new(2).unwrap()),
            1 => Change::Announce(hot, NextHop::new(3).unwrap()),
            _ => Change::Withdraw(hot),
        })
        .collect();
    incremental_scheme(&t, &changes, "d16r", 1);
    incremental_scheme(&t, &changes, "poptrie16", 1);
    rebuild_scheme(&t, &changes[..60], "spider8w", 1);
}

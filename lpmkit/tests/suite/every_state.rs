//! Every state a reader can meet during an in-place patch, checked deterministically.
//!
//! `tests/concurrency.rs` runs reader threads beside the writer and so meets the states a
//! patch passes through only by chance. Here the `test-hooks` feature runs a check after
//! *every* switch-word store the writer makes (`lpmkit::sync::hooks`), on the writer's own
//! thread: it looks up the keys around each prefix of the batch and requires each answer
//! to be the table's before the batch or after it — never a third answer — for every
//! registered scheme that patches one instance in place, on a real update trace of each
//! family. The lookups here are unvalidated (`LookupHandle::lookup_batch_unvalidated`): the
//! Bloom-filter schemes, whose readers validate their batches, must still give each key
//! the answer before or after the batch in every state.

use crate::common;

use std::cell::RefCell;
use std::rc::Rc;

use lpmkit::registry::{self, BuildOptions};
use lpmkit::sync::hooks::with_after_publish;
use lpmkit::sync::Updater;
use lpmkit::{Address, Change, Family, Rib, Table};

/// The batch being patched: its probe keys and the answers they may give.
#[derive(Default)]
struct Batch<A> {
    keys: Vec<A>,
    before: Vec<u32>,
    after: Vec<u32>,
    /// Stores checked in this batch.
    stores: u64,
}

/// Keys around the prefixes `changes` touch: each prefix's boundaries (±1) and middle.
fn probe_keys<A: Address>(changes: &[Change<A>]) -> Vec<A> {
    let mut keys = Vec::new();
    for c in changes {
        let p = c.prefix();
        common::push_boundaries(&p, &mut keys);
        // The middle: the address with the bit below the prefix set.
        if p.len() < A::BITS {
            keys.push(A::from_u128(
                p.first().to_u128() | 1u128 << (A::BITS - 1 - p.len()),
            ));
        }
    }
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Replays `changes` (`batch` per apply) through `scheme` patched in place, checking the
/// probe keys after every store; returns the stores checked.
fn replay<A: Address>(t: &Table<A>, changes: &[Change<A>], scheme: &str, batch: usize) -> u64 {
    let info = registry::find(scheme).unwrap();
    let updater = info
        .build_in_place(t.rib.clone(), &BuildOptions::default())
        .unwrap();
    replay_through(updater, t, changes, scheme, batch)
}

fn replay_through<A: Address>(
    mut updater: Box<dyn Updater<A>>,
    t: &Table<A>,
    changes: &[Change<A>],
    scheme: &str,
    batch: usize,
) -> u64 {
    let state: Rc<RefCell<Batch<A>>> = Rc::default();
    let mut reader = updater.reader();
    let seen = Rc::clone(&state);
    let what = scheme.to_string();
    let mut out = Vec::new();
    let mut shadow: Rib<A> = t.rib.clone();
    let mut total = 0;
    with_after_publish(
        move || {
            let mut b = seen.borrow_mut();
            out.resize(b.keys.len(), 0);
            // Unvalidated: this thread is the writer, in the middle of a patch (a validated
            // read would wait for the patch to end). Each key's answer must still be one
            // of the two, validated scheme or not.
            reader.lookup_batch_unvalidated(&b.keys, &mut out);
            b.stores += 1;
            for (i, &got) in out.iter().enumerate() {
                assert!(
                    got == b.before[i] || got == b.after[i],
                    "{what}: store {} of a patch: {} answered {got}, but the table had {} \
                     before the batch and {} after it",
                    b.stores,
                    lpmkit::prefix::format_addr(b.keys[i]),
                    b.before[i],
                    b.after[i],
                );
            }
        },
        || {
            for chunk in changes.chunks(batch) {
                {
                    let mut b = state.borrow_mut();
                    b.keys = probe_keys(chunk);
                    b.before = common::reference(&shadow, &b.keys);
                    for c in chunk {
                        c.apply_to(&mut shadow);
                    }
                    b.after = common::reference(&shadow, &b.keys);
                    total += b.stores;
                    b.stores = 0;
                }
                updater.apply(chunk).unwrap();
            }
        },
    );
    total += state.borrow().stores;
    // And the table ended as the Rib.
    let keys = common::keys_for(updater.rib(), 50_000, 3);
    let mut out = vec![0; keys.len()];
    updater.reader().lookup_batch(&keys, &mut out);
    assert_eq!(
        out,
        common::reference(updater.rib(), &keys),
        "{scheme}: final"
    );
    total
}

fn every_in_place_scheme<A: Address>(table: &str, trace: &str, family: Family, n: usize) {
    let (Some(fib), Some(up)) = (
        common::data_file(&format!("fib/{table}")),
        common::data_file(&format!("updates/{trace}")),
    ) else {
        return;
    };
    let mut t = common::load_table::<A>(&fib);
    let changes = common::load_updates::<A>(&up, &mut t.next_hops);
    let changes = &changes[..n.min(changes.len())];
    let mut tested = 0;
    for info in registry::schemes_for(family).filter(|s| s.updates_in_place()) {
        let stores = replay(&t, changes, info.name, 50);
        eprintln!(
            "{}: {} changes, {stores} states checked",
            info.name,
            changes.len()
        );
        assert!(stores > 0, "{}: no store was checked", info.name);
        tested += 1;
    }
    assert!(tested >= 5, "only {tested} in-place schemes");
}

/// OBMA patched one change per `apply` (its single-change paths: no `Rib` walk), every
/// state checked.
fn obma_one_change_at_a_time<A: Address>(table: &str, trace: &str, n: usize) {
    let (Some(fib), Some(up)) = (
        common::data_file(&format!("fib/{table}")),
        common::data_file(&format!("updates/{trace}")),
    ) else {
        return;
    };
    let mut t = common::load_table::<A>(&fib);
    let changes = common::load_updates::<A>(&up, &mut t.next_hops);
    let changes = &changes[..n.min(changes.len())];
    for scheme in ["obma-b", "obma-l", "obma-s"] {
        let stores = replay(&t, changes, scheme, 1);
        eprintln!(
            "{scheme}, one change per apply: {} changes, {stores} states checked",
            changes.len()
        );
        assert!(stores > 0);
    }
}

#[test]
#[ignore = "long tier: every store of OBMA patched one change at a time, 20,000 changes per trace"]
fn obma_every_state_one_change_at_a_time() {
    obma_one_change_at_a_time::<u32>(
        "ipv4-bart-tier1-prefixes.txt.xz",
        "ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
        20_000,
    );
    obma_one_change_at_a_time::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2014-12-17-updates.txt.xz",
        20_000,
    );
    obma_one_change_at_a_time::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
        20_000,
    );
}

/// The default tier's share: the first 500 changes of the 2024 traces, every store of
/// every in-place scheme checked (the long tier: 20,000 changes of each trace).
#[test]
fn every_state_of_the_first_patches() {
    every_in_place_scheme::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
        Family::V4,
        500,
    );
    every_in_place_scheme::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
        Family::V6,
        500,
    );
}

#[test]
#[ignore = "long tier: every store of 20,000 changes per in-place scheme"]
fn ipv4_every_state_of_every_patch() {
    every_in_place_scheme::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
        Family::V4,
        20_000,
    );
}

#[test]
#[ignore = "long tier: every store of 20,000 changes per in-place scheme"]
fn ipv4_2014_every_state_of_every_patch() {
    every_in_place_scheme::<u32>(
        "ipv4-ris-rrc06-2010-07-01-fib.txt.xz",
        "ipv4-ris-rrc01-linx-2014-12-17-updates.txt.xz",
        Family::V4,
        20_000,
    );
}

#[test]
#[ignore = "long tier: every store of 20,000 changes per in-place scheme"]
fn ipv6_every_state_of_every_patch() {
    every_in_place_scheme::<u128>(
        "ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "ipv6-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz",
        Family::V6,
        20_000,
    );
}

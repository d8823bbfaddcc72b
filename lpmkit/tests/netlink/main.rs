//! Kernel route sync against a real kernel, in network namespaces of its own; it
//! manages routes only: no packet is sent.
//!
//! * `tables`: the rrc06 IPv4 table and the LINX IPv6 table loaded with `ip -batch`, the
//!   `main` table followed with every registered scheme, slices of the update traces
//!   replayed as `ip route replace/del`, and after each burst every scheme's answers
//!   compared with the kernel's own (`RTM_GETROUTE`) on 10,000 addresses.
//! * `scenario`: what the kernel changes without a route notification — interfaces
//!   deleted, down and up, carrier lost, nexthop objects and groups created, replaced
//!   and deleted — besides bulk loads, random edits, multipath, IPv6 routes of one prefix
//!   on two interfaces, another table id and a flush, on synthetic tables (no data
//!   needed); after each phase every scheme equals the kernel, the followed routes equal a
//!   fresh dump's and reconciliation repairs nothing.
//! * `addresses`: the same checks after a source address, an interface's last address and
//!   all its addresses are removed.
//! * `races`: dumps that race a flood of changes (the first dump, re-dumps after lost
//!   notifications, reconciliations) end equal to a fresh dump, every route of every
//!   prefix.
//!
//! Where a namespace cannot be made (no root, no `ip`), it says why and skips — unless
//! `LPMKIT_REQUIRE_NETNS=1` (CI), where that is a failure.
#![cfg(all(feature = "netlink", target_os = "linux"))]

#[path = "../common/mod.rs"]
mod common;

mod addresses;
mod harness;
mod ns;
mod races;
mod scenario;
mod tables;

use std::time::Duration;

use lpmkit::netlink::{compare, Follower, KernelSync, RouteQuery, Verdict};
use lpmkit::{registry, Address, BuildOptions, NextHop};

/// Every scheme of the family, following the kernel from `rib`.
pub fn followers<A: Address>(rib: &lpmkit::Rib<A>) -> Vec<Follower<A>> {
    registry::schemes_for(A::FAMILY)
        .map(|info| {
            Follower::new(info, rib.clone(), &BuildOptions::default(), Duration::ZERO)
                .unwrap_or_else(|e| panic!("{}: {e}", info.name))
        })
        .collect()
}

/// Compares every follower, and the sync's own `Rib`, with the kernel on `keys`: every
/// answer (routes through nexthop objects resolved), nine in ten at least comparable
/// (the others answered by another table).
pub fn check<A: Address>(
    what: &str,
    sync: &KernelSync<A>,
    followers: &mut [Follower<A>],
    query: &mut RouteQuery,
    keys: &[A],
) {
    let answers = query.get_many(keys).expect("RTM_GETROUTE");
    let table = sync.options().table;
    let mut compared = 0;
    let mut skipped = 0;
    let mut bad = Vec::new();
    for (i, (&k, a)) in keys.iter().zip(&answers).enumerate() {
        let ours = sync.rib().lookup(k).and_then(|nh| sync.target(nh));
        match compare(a, ours, table) {
            Verdict::Agree => compared += 1,
            Verdict::Skip => skipped += 1,
            Verdict::Differ => bad.push(format!(
                "key {i} {}: kernel {a:?}, sync {ours:?}",
                lpmkit::prefix::format_addr(k)
            )),
        }
    }
    assert!(
        bad.is_empty(),
        "{what}: the synced Rib differs from the kernel on {} of {} keys:\n{}",
        bad.len(),
        keys.len(),
        bad[..bad.len().min(8)].join("\n")
    );
    assert!(
        compared > keys.len() * 9 / 10,
        "{what}: only {compared} comparable ({skipped} skipped)"
    );
    let mut out = vec![0u32; keys.len()];
    for f in followers.iter_mut() {
        f.reader().lookup_batch(keys, &mut out);
        let mut wrong = 0;
        for ((&k, &o), a) in keys.iter().zip(&out).zip(&answers) {
            let ours = NextHop::new(o).and_then(|nh| sync.target(nh));
            if compare(a, ours, table) == Verdict::Differ {
                wrong += 1;
                if wrong <= 4 {
                    eprintln!(
                        "{what}: {} on {}: kernel {a:?}, scheme {ours:?}",
                        f.name(),
                        lpmkit::prefix::format_addr(k)
                    );
                }
            }
        }
        assert_eq!(
            wrong,
            0,
            "{what}: {} differs from the kernel on {wrong} keys",
            f.name()
        );
    }
    eprintln!(
        "{what}: {} schemes and the synced Rib equal the kernel on {compared} addresses ({skipped} answered by another table)",
        followers.len()
    );
}

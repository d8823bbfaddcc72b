//! Lookups through the C API answer as the reference trie does, on the real tables: every
//! route added with `rte_fib_add` / `rte_fib6_add` (next hop = the route's next-hop id),
//! then `rte_fib_lookup_bulk` / `rte_fib6_lookup_bulk` in bursts of 32 on every prefix
//! boundary (first and last address of each prefix, and their neighbours) and on random
//! addresses, compared with `Rib::lookup` (the default next hop where it has no route).
//!
//! With `auto`: the table only looked up is served by `auto`'s scheme for that, and the
//! first change under lookups moves it to the in-place scheme the facade chooses for its
//! size; the answers are checked before and after. With schemes named by
//! `LPMKIT_FIB_SCHEME` / `LPMKIT_FIB6_SCHEME`, rebuilt ones included; an unknown name
//! fails `rte_fib_create` with `EINVAL`. The default tier runs rrc06 and the LINX IPv6
//! table; the long tier the bart tables (about a million routes) and more schemes.

mod common;

use common::api::{conf, Fib};
use lpmkit::{NextHop, Prefix, Rib};

const DEFAULT_NH: u64 = 999;

fn unique_name() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("answers-{n}")
}

fn check<A: Fib>(fib: usize, rib: &Rib<A>, scheme: &str) {
    let mut keys = lpmkit::traffic::boundary_keys(rib);
    keys.extend(lpmkit::traffic::uniform::<A>(200_000, 11));
    let mut out = vec![0u64; keys.len()];
    for (ks, os) in keys.chunks(32).zip(out.chunks_mut(32)) {
        assert_eq!(A::lookup(fib, ks, os), 0);
    }
    for (&k, &g) in keys.iter().zip(&out) {
        let want = rib.lookup(k).map_or(DEFAULT_NH, |nh| u64::from(nh.get()));
        assert_eq!(
            g,
            want,
            "{scheme}: {} answered {g}, the trie {want}",
            lpmkit::prefix::format_addr(k)
        );
    }
}

/// Loads `file`, looks it up (served by `want`), then — with `then` — changes a route
/// and looks up again, served by `then`.
fn run<A: Fib>(file: &str, scheme: Option<&str>, want: &str, then: Option<&str>) {
    let Some(mut rib) = common::rib::<A>(file) else {
        return;
    };
    let f = A::create(&unique_name(), conf(DEFAULT_NH, 1 << 21, 2), scheme, 10);
    assert_ne!(f, 0);
    for (p, nh) in rib.iter() {
        assert_eq!(A::add(f, p, u64::from(nh.get())), 0);
    }
    check(f, &rib, want);
    assert_eq!(A::scheme(f), want, "{file}");
    if let Some(then) = then {
        // A new route and a deleted one, under no lookups but after them.
        let (first, _) = rib.iter().nth(rib.len() / 2).unwrap();
        let new = Prefix::new_truncating(first.addr(), A::BITS);
        assert_eq!(A::add(f, new, 77), 0);
        rib.insert(new, NextHop::new(77).unwrap());
        let (gone, _) = rib.iter().nth(rib.len() / 3).unwrap();
        assert_eq!(A::delete(f, gone), 0);
        rib.remove(&gone);
        assert_eq!(A::scheme(f), then, "{file} after a change");
        check(f, &rib, then);
    }
    A::free(f);
}

const RRC06: &str = "fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz";
const BART4: &str = "fib/ipv4-bart-tier1-prefixes.txt.xz";
const BART6: &str = "fib/ipv6-bart-tier1-prefixes.txt.xz";
const LINX6: &str = "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz";

#[test]
fn ipv4_auto_until_and_after_the_first_change() {
    run::<u32>(RRC06, None, "dir24-8", Some("d16r"));
}

#[test]
fn ipv6_auto_until_and_after_the_first_change() {
    run::<u128>(LINX6, None, "spider16w", Some("poptrie16"));
}

#[test]
fn named_schemes() {
    run::<u32>(RRC06, Some("d16r"), "d16r", Some("d16r"));
    run::<u128>(LINX6, Some("sail-m"), "sail-m", Some("sail-m"));
}

#[test]
#[ignore = "long tier: the bart tables, more schemes"]
fn auto_and_named_schemes_on_the_bart_tables() {
    run::<u32>(BART4, None, "dir24-8", Some("d18r"));
    run::<u128>(BART6, None, "spider16w", Some("poptrie16"));
    run::<u32>(RRC06, Some("spider16w"), "spider16w", None);
    run::<u32>(RRC06, Some("planb-front"), "planb-front", None);
    run::<u128>(BART6, Some("planb-front"), "planb-front", None);
}

#[test]
fn an_unknown_scheme_fails_create_with_einval() {
    let f = u32::create(
        "answers-unknown",
        conf(0, 16, 2),
        Some("no-such-scheme"),
        10,
    );
    assert_eq!(f, 0);
    assert_eq!(lpmkit_rte_fib::eal::rte_errno(), libc::EINVAL);
    // An IPv4-only scheme for IPv6.
    let f = u128::create("answers-v4-only", conf(0, 16, 2), Some("d18r"), 10);
    assert_eq!(f, 0);
    assert_eq!(lpmkit_rte_fib::eal::rte_errno(), libc::EINVAL);
}

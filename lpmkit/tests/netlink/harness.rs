//! Following one table in a namespace, checked phase by phase against the kernel.

use std::collections::HashMap;
use std::time::Duration;

use lpmkit::netlink::{Follower, KernelSync, RouteQuery, RouteTarget, SyncOptions};
use lpmkit::{traffic, Address, Change};

use super::ns::Netns;
use super::{check, followers};

/// Everything following one table of one family: the sync, every scheme of the family,
/// and a query socket.
pub struct Follow<A: Address> {
    pub what: String,
    pub sync: KernelSync<A>,
    followers: Vec<Follower<A>>,
    query: RouteQuery,
    /// Prefixes followed before the current phase (their addresses are checked too: a
    /// route that should be gone must be gone).
    before: lpmkit::Rib<A>,
    /// Differences reconciliation found, over all phases.
    pub reconciled: usize,
    /// Where the random addresses are drawn (`None`: anywhere): a table the policy rules
    /// consult for one space only is compared there.
    pub space: Option<lpmkit::Prefix<A>>,
}

impl<A: Address> Follow<A> {
    pub fn open(what: &str, ns: &Netns, table: u32) -> Self {
        let sync = KernelSync::<A>::open(&SyncOptions {
            netns: Some(ns.0.clone()),
            table,
            ..Default::default()
        })
        .expect("open the sync");
        Follow {
            what: what.to_string(),
            before: sync.rib().clone(),
            followers: Vec::new(),
            query: RouteQuery::open(Some(&ns.0)).unwrap(),
            sync,
            reconciled: 0,
            space: None,
        }
    }

    /// Reads notifications until none came for 300 ms, applies them to every scheme and
    /// publishes.
    pub fn settle(&mut self) {
        let mut changes: Vec<Change<A>> = Vec::new();
        // The kernel applies a carrier change up to a second after it happened (the
        // link watch's delay): after a link event, quiet means a second and more.
        let mut quiet = Duration::from_millis(300);
        loop {
            let links = self.sync.stats().link_messages;
            let r = self.sync.poll(Some(quiet)).unwrap();
            let link_seen = self.sync.stats().link_messages > links;
            if link_seen {
                quiet = Duration::from_millis(1200);
            }
            if r.is_empty() && !link_seen {
                break;
            }
            changes.extend(r.iter().map(|r| r.change));
        }
        for f in &mut self.followers {
            f.apply(&changes).unwrap();
            f.flush().unwrap();
        }
        if self.followers.is_empty() {
            // Built once the bulk load is followed (an in-place build of a whole table
            // change by change is not what this test measures).
            self.followers = followers(self.sync.rib());
        }
    }

    /// Once quiet: every scheme equals the kernel on 10,000 addresses, the followed
    /// routes equal a fresh dump's (prefix count and every route), and reconciliation
    /// finds nothing to repair.
    pub fn verify(&mut self, phase: &str, seed: u64) {
        self.settle();
        let what = format!("{} {phase}", self.what);
        let rib = self.sync.rib();
        let mut keys: Vec<A> = traffic::in_routes(rib, 4_000, seed);
        keys.extend(traffic::in_routes(&self.before, 4_000, seed + 1));
        let space = self.space;
        keys.extend(
            traffic::uniform::<A>(10_000 - keys.len(), seed + 2)
                .into_iter()
                .map(|k| match space {
                    Some(p) => A::from_u128(
                        p.first().to_u128()
                            + k.to_u128() % (p.last().to_u128() - p.first().to_u128() + 1),
                    ),
                    None => k,
                }),
        );
        check(
            &what,
            &self.sync,
            &mut self.followers,
            &mut self.query,
            &keys,
        );
        // A fresh dump holds the same routes, in the same order per prefix.
        let fresh = KernelSync::<A>::open(self.sync.options()).expect("a fresh dump");
        assert_eq!(
            fresh.rib().len(),
            self.sync.rib().len(),
            "{what}: prefixes followed vs a fresh dump"
        );
        let routes = |s: &KernelSync<A>| -> HashMap<String, Vec<(u32, RouteTarget)>> {
            let mut m: HashMap<String, Vec<(u32, RouteTarget)>> = HashMap::new();
            for (p, metric, t) in s.routes().iter() {
                m.entry(p.to_string())
                    .or_default()
                    .push((metric, t.clone()));
            }
            m
        };
        let (ours, theirs) = (routes(&self.sync), routes(&fresh));
        let mut bad: Vec<String> = ours
            .iter()
            .filter(|(p, v)| theirs.get(*p) != Some(v))
            .map(|(p, v)| format!("{p}: followed {v:?}, dump {:?}", theirs.get(p)))
            .collect();
        bad.extend(
            theirs
                .iter()
                .filter(|(p, _)| !ours.contains_key(*p))
                .map(|(p, v)| format!("{p}: not followed, dump {v:?}")),
        );
        bad.sort();
        assert!(
            bad.is_empty(),
            "{what}: {} prefixes differ from a fresh dump:\n{}",
            bad.len(),
            bad[..bad.len().min(8)].join("\n")
        );
        let targets = |s: &KernelSync<A>| -> Vec<(String, RouteTarget)> {
            let mut v: Vec<_> = s
                .rib()
                .iter()
                .map(|(p, nh)| (p.to_string(), s.target(nh).unwrap().clone()))
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        assert!(
            targets(&self.sync) == targets(&fresh),
            "{what}: best routes"
        );
        // The sync's own comparison with a dump, prefix by prefix, agrees.
        let c = self.sync.compare_with_dump().unwrap();
        assert!(c.changes.is_empty(), "{what}: the table was quiet");
        let d = c.differences.expect("no notification lost");
        assert!(d.is_empty(), "{what}: {d}: {:?}", d.examples);
        // Reconciliation: a re-dump finds nothing to repair.
        let found = self.sync.reconcile().unwrap();
        self.reconciled += found.len();
        assert!(
            found.is_empty(),
            "{what}: reconciliation found {} prefixes followed wrong: {:?}",
            found.len(),
            &found[..found.len().min(5)]
        );
        eprintln!(
            "{what}: {} prefixes, {} routes, {} nexthop objects; equal to a fresh dump; reconciliation found 0 differences",
            self.sync.rib().len(),
            self.sync.routes().route_count(),
            self.sync.routes().nexthops().count()
        );
        self.before = self.sync.rib().clone();
    }
}

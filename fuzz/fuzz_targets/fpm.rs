//! zebra's FPM stream (frames of netlink route and nexthop messages): an error or route
//! changes, never a panic, in whatever pieces the bytes arrive; the changes handed out
//! always describe the routes held, and a sweep after a reconnection that sends nothing
//! removes every route.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use lpmkit::fpm::{FpmFamily, FpmSession, SessionOptions};
use lpmkit::{Change, Ipv4, Ipv6, Rib};

/// Applies `changes` to `rib` (what a follower of the session holds).
fn follow<A: FpmFamily>(s: &mut FpmSession, rib: &mut Rib<A>) {
    let changes: Vec<Change<A>> = s.take::<A>().iter().map(|r| r.change).collect();
    rib.apply_changes(&changes);
    let held = s.routes::<A>().rib();
    assert_eq!(rib.len(), held.len());
    assert!(held.iter().all(|(p, nh)| rib.get(&p) == Some(nh)));
}

fuzz_target!(|data: &[u8]| {
    let t0 = Instant::now();
    let mut s = FpmSession::new(SessionOptions::default());
    let (mut v4, mut v6) = (Rib::<Ipv4>::new(), Rib::<Ipv6>::new());
    s.connect(t0);
    // The first byte chooses where the stream is cut in two reads.
    let cut = data.first().map_or(0, |&b| (b as usize * 257) % (data.len() + 1));
    let mut ok = s.feed(&data[..cut], t0).is_ok();
    follow(&mut s, &mut v4);
    follow(&mut s, &mut v6);
    if ok {
        ok = s.feed(&data[cut..], t0).is_ok();
    }
    let _ = (ok, s.disconnect());
    follow(&mut s, &mut v4);
    follow(&mut s, &mut v6);
    // zebra connects again and sends nothing: the sweep removes everything.
    s.connect(t0);
    let swept = s.sweep_if_due(t0 + Duration::from_secs(3600));
    assert!(swept.is_some());
    follow(&mut s, &mut v4);
    follow(&mut s, &mut v6);
    assert!(v4.is_empty() && v6.is_empty());
    assert!(s.routes::<Ipv4>().is_empty() && s.routes::<Ipv6>().is_empty());
});

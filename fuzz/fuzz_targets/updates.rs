//! Update traces (text, bgpdump -m, MRT BGP4MP): an error or events, never a panic; the
//! stats agree with the events returned.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lpmkit::io::read_updates_from_reader;
use lpmkit::{Change, Ipv4, Ipv6, NextHopTable};

fuzz_target!(|data: &[u8]| {
    let mut hops = NextHopTable::new();
    let input = || Box::new(std::io::Cursor::new(data.to_vec()));
    if let Ok((u, s)) = read_updates_from_reader::<Ipv4>(input(), "fuzz", &mut hops) {
        let a = u
            .iter()
            .filter(|u| matches!(u.change, Change::Announce(..)))
            .count();
        assert_eq!((s.announces, s.withdraws), (a, u.len() - a));
    }
    if let Ok((u, s)) = read_updates_from_reader::<Ipv6>(input(), "fuzz", &mut hops) {
        assert_eq!(s.announces + s.withdraws, u.len());
    }
});

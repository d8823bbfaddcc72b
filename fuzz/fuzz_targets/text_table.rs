//! Text tables and address lists: any input gives a table or an error, never a panic,
//! and an accepted table holds one route per route line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lpmkit::io::{parse_addresses, parse_text_table, TableOptions};
use lpmkit::{Ipv4, Ipv6};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let route_lines = text
        .split('\n')
        .filter(|l| {
            let l = l.split('#').next().unwrap_or("");
            !l.trim_ascii().is_empty()
        })
        .count();
    for normalize in [false, true] {
        let opts = TableOptions {
            normalize,
            assign_next_hops: 7,
            ..TableOptions::default()
        };
        if let Ok(t) = parse_text_table::<Ipv4>(text, "fuzz", &opts) {
            assert_eq!(t.rib.len(), route_lines);
        }
        if let Ok(t) = parse_text_table::<Ipv6>(text, "fuzz", &opts) {
            assert_eq!(t.rib.len(), route_lines);
        }
    }
    let _ = parse_addresses::<Ipv4>(text, "fuzz");
    let _ = parse_addresses::<Ipv6>(text, "fuzz");
});

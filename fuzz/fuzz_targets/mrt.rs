//! Routing tables of any format (MRT TABLE_DUMP/TABLE_DUMP_V2, bgpdump -m, text): an
//! error or a non-empty table, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lpmkit::io::{read_table_from_reader, TableOptions};
use lpmkit::AnyTable;

fuzz_target!(|data: &[u8]| {
    let input = || Box::new(std::io::Cursor::new(data.to_vec()));
    for opts in [
        TableOptions::default(),
        TableOptions {
            peer: Some("192.0.2.1".parse().unwrap()),
            family: Some(lpmkit::Family::V6),
            ..TableOptions::default()
        },
    ] {
        if let Ok((t, _)) = read_table_from_reader(input(), "fuzz", &opts) {
            let n = match &t {
                AnyTable::V4(t) => t.rib.len(),
                AnyTable::V6(t) => t.rib.len(),
            };
            assert!(n > 0);
        }
    }
});

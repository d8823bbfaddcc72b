//! `facade::RouteTable` on the real tables: values, matched prefixes and serialised
//! copies equal the reference trie's answers, and a replayed update trace keeps them so.

use crate::common;

use common::{fib_tables, keys_for, load};
use lpmkit::facade::{RouteTable, Value};
use lpmkit::{Address, AnyTable, NextHop, Table};

fn check<A: Address>(t: Table<A>, name: &str) {
    let keys = keys_for(&t.rib, 1 << 16, 11);
    let rib = t.rib.clone();
    let hops = t.next_hops.clone();
    let rt = RouteTable::<A, Value>::from_table_with(t, "auto", &Default::default(), |s| {
        Value::Str(s.to_string())
    })
    .unwrap_or_else(|e| panic!("{name}: {e}"));
    let name_of = |nh: NextHop| Value::Str(hops.value(nh).unwrap().clone());
    let mut out = vec![None; keys.len()];
    rt.lookup_batch(&keys, &mut out);
    let mut pre = vec![None; keys.len()];
    rt.lookup_prefix_batch(&keys, &mut pre);
    for (i, &k) in keys.iter().enumerate() {
        let want = rib.lookup_prefix(k);
        assert_eq!(
            out[i].cloned(),
            want.map(|(_, nh)| name_of(nh)),
            "{name} ({}): lookup_batch {k:x}",
            rt.scheme()
        );
        assert_eq!(
            pre[i].map(|(p, id)| (p, rt.value(id).cloned().unwrap())),
            want.map(|(p, nh)| (p, name_of(nh))),
            "{name}: lookup_prefix {k:x}"
        );
    }
    for &k in keys.iter().step_by(97) {
        assert_eq!(rt.lookup(k).cloned(), rib.lookup(k).map(name_of));
    }
    // The serialised copy answers the same.
    let copy = RouteTable::<A, Value>::from_bytes(&rt.to_bytes()).unwrap();
    assert_eq!(copy.scheme(), rt.scheme());
    let mut again = vec![None; keys.len()];
    copy.lookup_batch(&keys, &mut again);
    assert!(out == again, "{name}: the serialised copy differs");
}

#[test]
fn every_real_table_agrees_with_the_trie() {
    for path in fib_tables() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match load(&path) {
            AnyTable::V4(t) => check(t, &name),
            AnyTable::V6(t) => check(t, &name),
        }
    }
}

#[test]
fn a_replayed_trace_keeps_the_table_equal_to_the_trie() {
    let Some(path) = common::data_file("fib/ipv4-ris-rrc06-2010-07-01-fib.txt.xz") else {
        return;
    };
    let Some(trace) =
        common::data_file("updates/ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz")
    else {
        return;
    };
    let mut t = common::load_table::<u32>(&path);
    let changes = common::load_updates::<u32>(&trace, &mut t.next_hops);
    let mut rib = t.rib.clone();
    let rt = RouteTable::<u32, u32>::from_routes(
        t.rib.iter().map(|(p, nh)| (p, nh.get())),
        "auto",
        &Default::default(),
    )
    .unwrap();
    // Every prefix boundary of the table and 20,000 random keys after the first chunk and
    // at the end; between, the random keys and the boundaries of the chunk's prefixes.
    let all = keys_for(&rib, 20_000, 3);
    let random = &all[..20_000];
    let chunks = changes[..20_000].chunks(500).count();
    for (n, chunk) in changes[..20_000].chunks(500).enumerate() {
        let keys: Vec<u32> = if n == 0 || n + 1 == chunks {
            all.clone()
        } else {
            let mut k = random.to_vec();
            for c in chunk {
                common::push_boundaries(&c.prefix(), &mut k);
            }
            k
        };
        rt.apply(chunk.iter().map(|c| match *c {
            lpmkit::Change::Announce(p, nh) => (p, Some(nh.get())),
            lpmkit::Change::Withdraw(p) => (p, None),
        }))
        .unwrap();
        for c in chunk {
            c.apply_to(&mut rib);
        }
        let mut ids = vec![0u32; keys.len()];
        rt.lookup_ids(&keys, &mut ids);
        for (i, &k) in keys.iter().enumerate() {
            assert_eq!(
                rt.value(ids[i]).copied(),
                rib.lookup(k).map(|nh| nh.get()),
                "{k:x}"
            );
        }
    }
    assert_eq!(rt.len(), rib.len());
}

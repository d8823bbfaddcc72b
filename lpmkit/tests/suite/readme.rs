//! The README's scheme table against the registry: every registered scheme is in the table
//! with the families it handles, the table names no scheme the registry does not have, and
//! the schemes the table marks *in place* are exactly those the registry updates in place.

use std::collections::BTreeMap;

use lpmkit::{registry, Family};

/// One scheme as the README's table describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Row {
    families: Vec<Family>,
    in_place: bool,
}

/// The rows of the README's table whose header starts `| scheme | families | updates |`,
/// by scheme name (a row may name several schemes, each in backticks).
fn readme_schemes() -> BTreeMap<String, Row> {
    let readme = include_str!("../../../README.md");
    let mut lines = readme
        .lines()
        .skip_while(|l| !l.starts_with("| scheme | families | updates |"));
    assert!(
        lines.next().is_some(),
        "README.md has no table headed `| scheme | families | updates |`"
    );
    let mut out = BTreeMap::new();
    for line in lines.skip(1).take_while(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| a | b | c |` splits into ["", a, b, c, ""].
        assert!(cells.len() >= 5, "short row: {line}");
        let names: Vec<&str> = cells[1].split('`').skip(1).step_by(2).collect();
        assert!(!names.is_empty(), "no `name` in the first cell: {line}");
        let families = cells[2]
            .split(',')
            .map(|f| match f.trim() {
                "v4" => Family::V4,
                "v6" => Family::V6,
                other => panic!("family `{other}` is not v4 or v6: {line}"),
            })
            .collect();
        let in_place = match cells[3] {
            "in place" => true,
            "rebuild" => false,
            other => panic!("updates `{other}` is not `in place` or `rebuild`: {line}"),
        };
        let row = Row { families, in_place };
        for name in names {
            let old = out.insert(name.to_string(), row.clone());
            assert!(old.is_none(), "`{name}` is in the table twice");
        }
    }
    out
}

#[test]
fn readme_table_lists_every_registered_scheme_with_its_families_and_update_model() {
    let mut readme = readme_schemes();
    // `dpdk-fib` is registered only in builds with the `dpdk` feature; its row stays.
    if cfg!(not(feature = "dpdk")) {
        let row = readme.remove("dpdk-fib");
        assert!(row.is_some(), "the README's table has no `dpdk-fib` row");
    }
    // `dpdk-fib-avx512` also needs a CPU with AVX-512.
    if cfg!(not(feature = "dpdk")) || lpmkit::simd::Avx512::detect().is_none() {
        let row = readme.remove("dpdk-fib-avx512");
        assert!(
            row.is_some(),
            "the README's table has no `dpdk-fib-avx512` row"
        );
    }
    for info in registry::schemes() {
        let row = readme.remove(info.name).unwrap_or_else(|| {
            panic!(
                "`{}` is registered but not in the README's table",
                info.name
            )
        });
        assert_eq!(
            row.families,
            info.families(),
            "`{}`: the README's families differ from the registry's",
            info.name
        );
        assert_eq!(
            row.in_place,
            info.updates_in_place(),
            "`{}`: the README says {}, the registry {}",
            info.name,
            if row.in_place { "in place" } else { "rebuild" },
            if info.updates_in_place() {
                "updates it in place"
            } else {
                "does not update it in place"
            },
        );
    }
    assert!(
        readme.is_empty(),
        "the README's table names schemes the registry does not have: {:?}",
        readme.keys().collect::<Vec<_>>()
    );
}

#[test]
fn readme_in_place_list_is_the_registrys() {
    let mut readme: Vec<String> = readme_schemes()
        .into_iter()
        .filter(|(name, row)| row.in_place && registry::find(name).is_some())
        .map(|(name, _)| name)
        .collect();
    let mut registered: Vec<String> = registry::schemes()
        .iter()
        .filter(|i| i.updates_in_place())
        .map(|i| i.name.to_string())
        .collect();
    readme.sort();
    registered.sort();
    assert_eq!(readme, registered);
    assert!(!registered.is_empty());
}

//! `lpmkit experiment` end to end: one experiment run small, its records, plots and
//! report, a resumed run, and bad input.

mod common;

use std::path::PathBuf;

use common::lpmkit;

/// The real-data directory: `$LPMKIT_DATA`, else `../shared/data` beside the workspace, if
/// it holds every file of `needed`; `None` with a note when it does not (a failure instead
/// when `LPMKIT_REQUIRE_DATA` is set).
fn data_dir(needed: &[&str]) -> Option<PathBuf> {
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let missing: Vec<String> = needed
        .iter()
        .map(|f| dir.join(f))
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        return Some(dir);
    }
    let msg = format!(
        "no real data: {} missing (set LPMKIT_DATA)",
        missing.join(", ")
    );
    assert!(
        std::env::var_os("LPMKIT_REQUIRE_DATA").is_none(),
        "LPMKIT_REQUIRE_DATA is set but {msg}"
    );
    eprintln!("skipped: {msg}");
    None
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpmkit-exp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_quick_run_writes_records_plots_and_a_report_and_resumes() {
    // The tables the bloomfwd experiment reads.
    let Some(data) = data_dir(&[
        "fib/ipv4-bart-tier1-prefixes.txt.xz",
        "fib/ipv6-bart-tier1-prefixes.txt.xz",
        "fib/ipv6-ris-rrc01-linx-2017-01-12-fib.txt.xz",
        "fib/ipv6-routeviews-2015-11-01-originas.txt.xz",
    ]) else {
        return;
    };
    let data = data.to_str().unwrap();
    let dir = out_dir("bloomfwd");
    let d = dir.to_str().unwrap();
    let run = [
        "experiment",
        "run",
        "bloomfwd",
        "--quick",
        "--out",
        d,
        "--data",
        data,
    ];
    let o = lpmkit(&run);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Records: one JSON object per line, every answer checked, the machine attached.
    let jsonl = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.len() >= 6 * 2 + 5 * 2, "{} records", records.len());
    for r in &records {
        assert_eq!(r["experiment"], "bloomfwd");
        assert!(
            r["machine"]["cpu"].is_string() && r["machine"]["cores"].is_u64(),
            "{r}"
        );
        if r["command"] == "bench" {
            assert_eq!(r["checksum_ok"], true, "{r}");
            assert!(r["mlps_median"].as_f64().unwrap() > 0.0);
        }
    }
    // Table 4 (`info` cells): the expanded prefix count per DPCPE level count and table.
    let table4: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["figure"] == "table4").collect();
    assert_eq!(table4.len(), 5 * 3, "5 level counts x 3 tables");
    for r in &table4 {
        assert_eq!(r["command"], "info");
        assert!(r["stats"]["expanded"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["fib"].as_str().unwrap().starts_with("ipv6-"), "{r}");
    }
    // Fig. 1 sweeps the hash as a second placeholder: a series per hash.
    let fig1 = |hash: &str| {
        records
            .iter()
            .filter(|r| r["figure"] == "fig1" && r["hash"] == hash)
            .count()
    };
    assert_eq!(fig1("knuth"), 6, "one record per FPR");
    let fig3: Vec<&serde_json::Value> = records.iter().filter(|r| r["figure"] == "fig3").collect();
    assert_eq!(fig3.len(), 12, "6 matching ratios x 2 schemes");
    assert!(fig3
        .iter()
        .any(|r| r["pattern"] == "match:40" && r["x"] == "40"));
    // CSV: a header and one row per record.
    let csv = std::fs::read_to_string(dir.join("records.csv")).unwrap();
    assert_eq!(csv.lines().count(), records.len() + 1);
    assert!(csv.lines().next().unwrap().contains("machine_cpu"));
    // One SVG per figure, each a whole document naming every series it draws.
    for (fig, series) in [
        ("fig3", &["bloomfwd", "miht"][..]),
        ("fig5", &["bloomfwd", "miht"][..]),
        ("table5", &["bloomfwd", "lulea"][..]),
        ("vs-miht-v6", &["bloomfwd", "miht", "poptrie16"][..]),
        (
            "fig1",
            &["h2", "murmur32", "murmur64", "knuth", "crand"][..],
        ),
        ("table4", &["bart IPv6"][..]),
    ] {
        let svg = std::fs::read_to_string(dir.join(format!("bloomfwd-{fig}.svg"))).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"),
            "{fig}"
        );
        assert_eq!(
            svg.matches("<text").count(),
            svg.matches("</text>").count(),
            "{fig}"
        );
        for s in series {
            assert!(
                svg.contains(&format!("\n{s}\n</text>")),
                "{fig}: no series {s}"
            );
        }
        let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(
            report.contains(&format!("(bloomfwd-{fig}.svg)")),
            "{fig} not in the report"
        );
    }
    // Run again into the same directory: nothing is measured twice.
    let o = lpmkit(&run);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("== bloomfwd/"));
    let again = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
    assert_eq!(again.lines().count(), records.len());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn update_and_structure_figures_are_records_and_plots() {
    // `--quick` replaces every table by a synthetic one, but the update figures replay a
    // real trace.
    let Some(data) = data_dir(&["updates/ipv4-ris-rrc01-linx-2024-10-01-0055-updates.txt.xz"])
    else {
        return;
    };
    let dir = out_dir("updates");
    let d = dir.to_str().unwrap();
    let figs = ["obma/fig13", "obma/fig19-bart", "obma/table3", "dxr/table3"];
    let mut args = vec!["experiment", "run"];
    args.extend(figs);
    let data = data.to_str().unwrap();
    args.extend(["--quick", "--out", d, "--data", data]);
    let o = lpmkit(&args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // Table III reads the records of Fig. 19's replay: the same words, measured once.
    assert!(err.contains("== obma/table3/-: lpmkit updates"), "{err}");
    assert!(err.contains("(measured already)"), "{err}");
    let records: Vec<serde_json::Value> = std::fs::read_to_string(dir.join("records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |fig: &str| -> Vec<&serde_json::Value> {
        records.iter().filter(|r| r["figure"] == fig).collect()
    };
    // `updates` records: every scheme's table equals the trie after the replay, rates set.
    assert_eq!(of("fig19-bart").len(), 6);
    for r in of("fig19-bart") {
        assert_eq!(r["table_ok"], true, "{r}");
        assert_eq!(r["changes"], 5000, "--quick replays 5,000 updates: {r}");
        assert!(r["alone_updates_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["trie_updates_per_s"].as_f64().unwrap() > 0.0, "{r}");
        let replays = r["trie_replays"].as_u64().unwrap();
        assert!(
            replays >= 3 && replays % 2 == 1,
            "an odd number of replays: {r}"
        );
    }
    let obma_b = of("table3")
        .into_iter()
        .find(|r| r["scheme"] == "obma-b")
        .unwrap();
    assert!(obma_b["per_update"]["changed_pointers"].as_f64().is_some());
    // `info` records: Fig. 13's 1s and DXR's search-step shares (which sum to 1).
    let fig13 = of("fig13");
    assert_eq!(fig13.len(), 1);
    let ones = |k: &str| fig13[0]["stats"][k].as_f64().unwrap();
    assert!(ones("fig13_ones_overlay") <= ones("fig13_ones_lulea"));
    assert!(ones("fig13_ones_bis_optimal") <= ones("fig13_ones_bis_greedy"));
    for r in of("table3").iter().filter(|r| r["command"] == "info") {
        let sum: f64 = r["search_steps"]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((sum - 1.0).abs() < 1e-9, "{r}");
    }
    // Plots whose x axis is several fields of each record: every label and series drawn.
    for (svg, words) in [
        (
            "obma-fig13",
            &["Lulea", "overlay", "BIS greedy", "BIS optimal", "obma-b"][..],
        ),
        (
            "obma-fig19-bart",
            &["structure alone", "obma-b", "poptrie18", "lulea"][..],
        ),
        (
            "obma-table3",
            &["pointers changed", "new bytes", "obma-s"][..],
        ),
        ("dxr-table3", &["d16r", "d24r"][..]),
    ] {
        let text = std::fs::read_to_string(dir.join(format!("{svg}.svg"))).unwrap();
        assert!(text.trim_end().ends_with("</svg>"), "{svg}");
        for w in words {
            assert!(text.contains(&format!("\n{w}\n</text>")), "{svg}: no {w}");
        }
    }
    // A figure measured again reuses another figure's records of the same words, and
    // keeps the build that made them: Table III's records stamped with another commit,
    // Fig. 19's dropped and run again.
    let jsonl = dir.join("records.jsonl");
    let kept: Vec<String> = records
        .iter()
        .filter(|r| r["figure"] != "fig19-bart")
        .map(|r| {
            let mut r = r.clone();
            if r["figure"] == "table3" && r["command"] == "updates" {
                r["machine"]["lpmkit_commit"] = "feedfee".into();
            }
            r.to_string()
        })
        .collect();
    std::fs::write(&jsonl, kept.join("\n") + "\n").unwrap();
    let o = lpmkit(&[
        "experiment",
        "run",
        "obma/fig19-bart",
        "--quick",
        "--out",
        d,
        "--data",
        data,
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("(measured already)"),
        "{err}"
    );
    let again: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let fig19: Vec<_> = again
        .iter()
        .filter(|r| r["figure"] == "fig19-bart")
        .collect();
    assert_eq!(fig19.len(), 6);
    for r in fig19 {
        assert_eq!(r["machine"]["lpmkit_commit"], "feedfee", "{r}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_names_every_paper_and_bad_names_are_errors() {
    let o = lpmkit(&["experiment", "list"]);
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for e in ["spider", "dxr", "obma", "bloomfwd", "lpmkit"] {
        assert!(out.lines().any(|l| l.starts_with(e)), "{e}: {out}");
    }
    for bad in ["nosuch", "bloomfwd/nosuch"] {
        let o = lpmkit(&["experiment", "run", bad, "--quick", "--out", "/tmp/never"]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("no "), "{bad}");
    }
    // A user's file that does not parse is an error naming it.
    let dir = out_dir("badfile");
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("mine.toml");
    std::fs::write(&f, "name = \"mine\"\nfigure = 3\n").unwrap();
    let o = lpmkit(&["experiment", "list", "--file", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("mine.toml"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_run_into_a_results_directory_keeps_the_other_experiments_in_its_report() {
    let dir = out_dir("keep");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("results");
    let out = out.to_str().unwrap();
    // Two experiments of the user's, on synthetic tables (no data needed).
    let file = |name: &str| {
        let f = dir.join(format!("{name}.toml"));
        std::fs::write(
            &f,
            format!(
                "name = \"{name}\"\npaper = \"{name}'s paper\"\n\n[[figure]]\nid = \"rate\"\n\
                 title = \"{name} rate\"\npaper = \"-\"\n\
                 args = [\"--synthetic\", \"v4\", \"--routes\", \"{{x}}\", \"-s\", \"dir24-8\", \
                 \"--runs\", \"1\", \"--keys\", \"4096\"]\n\
                 x = {{ label = \"routes\", values = [\"1000\"] }}\n"
            ),
        )
        .unwrap();
        f
    };
    let (first, second) = (file("first"), file("second"));
    let (first, second) = (first.to_str().unwrap(), second.to_str().unwrap());
    // The first run knows one file; the second knows both and runs only its own.
    for (name, files) in [("first", vec![first]), ("second", vec![first, second])] {
        let mut args = vec!["experiment", "run", name, "--out", out];
        for f in files {
            args.extend(["--file", f]);
        }
        let o = lpmkit(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let report = std::fs::read_to_string(dir.join("results/report.md")).unwrap();
    // The second run's report still has the first run's figure, and both plots exist.
    for name in ["first", "second"] {
        assert!(
            report.contains(&format!("## {name} rate")),
            "{name}: {report}"
        );
        assert!(
            dir.join(format!("results/{name}-rate.svg")).is_file(),
            "{name}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

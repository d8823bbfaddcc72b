//! `lpmkit experiment` end to end: one experiment run small, its records, plots and
//! report, a resumed run, and bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn lpmkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lpmkit"))
        .args(args)
        .output()
        .expect("run lpmkit")
}

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lpmkit-exp-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_quick_run_writes_records_plots_and_a_report_and_resumes() {
    let dir = out_dir("bloomfwd");
    let d = dir.to_str().unwrap();
    let o = lpmkit(&["experiment", "run", "bloomfwd", "--quick", "--out", d]);
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
        assert_eq!(r["checksum_ok"], true, "{r}");
        assert!(
            r["machine"]["cpu"].is_string() && r["machine"]["cores"].is_u64(),
            "{r}"
        );
        assert!(r["mlps_median"].as_f64().unwrap() > 0.0);
    }
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
    let o = lpmkit(&["experiment", "run", "bloomfwd", "--quick", "--out", d]);
    assert!(o.status.success());
    assert!(!String::from_utf8_lossy(&o.stderr).contains("== bloomfwd/"));
    let again = std::fs::read_to_string(dir.join("records.jsonl")).unwrap();
    assert_eq!(again.lines().count(), records.len());
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

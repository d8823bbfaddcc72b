//! End-to-end tests of the `lpmkit` binary: what a user sees — answers, exit statuses,
//! error messages that name the file and line, and benchmark records whose answers were
//! checked against the reference trie.

mod common;

use std::process::{Command, Output};

use common::{lpmkit, stderr, stdout, Scratch};

const TABLE: &str = "# a small table with a default route and a host route\n\
                     0.0.0.0/0 def\n\
                     10.0.0.0/8 AS1\n\
                     10.1.0.0/16 AS2\n\
                     10.1.2.0/24 AS3\n\
                     \n\
                     192.0.2.1/32 host\n";

#[test]
fn lookup_prints_next_hop_names_and_matched_prefixes() {
    let s = Scratch::new("lookup");
    let t = s.file("t.txt", TABLE);
    let o = lpmkit(&[
        "lookup",
        "-t",
        t.to_str().unwrap(),
        "10.1.2.3",
        "10.1.3.0",
        "11.0.0.1",
        "192.0.2.1",
        "192.0.2.2",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<Vec<String>> = stdout(&o)
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    let got: Vec<(&str, &str, &str)> = lines
        .iter()
        .map(|f| (f[0].as_str(), f[1].as_str(), f[2].as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("10.1.2.3", "AS3", "10.1.2.0/24"),
            ("10.1.3.0", "AS2", "10.1.0.0/16"),
            ("11.0.0.1", "def", "0.0.0.0/0"),
            ("192.0.2.1", "host", "192.0.2.1/32"),
            ("192.0.2.2", "def", "0.0.0.0/0"),
        ]
    );
}

#[test]
fn verify_passes_every_scheme_on_a_small_table() {
    let s = Scratch::new("verify");
    let t = s.file("t.txt", TABLE);
    let o = lpmkit(&[
        "verify",
        "-t",
        t.to_str().unwrap(),
        "--schemes",
        "all",
        "--keys",
        "20000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o) + &stderr(&o);
    let last = out
        .lines()
        .find(|l| l.starts_with("verified "))
        .unwrap_or_else(|| panic!("no summary line in {out}"));
    assert!(last.ends_with(": 0 mismatches"), "{last}");
    for scheme in ["dir24-8", "d18r", "poptrie18", "spider16w", "spider1w"] {
        assert!(last.contains(scheme), "{scheme} missing from {last}");
    }
}

#[test]
fn malformed_input_exits_2_naming_file_and_line() {
    let s = Scratch::new("malformed");
    for (name, contents, message) in [
        (
            "hostbits.txt",
            "10.0.0.0/8 a\n10.1.2.3/16 b\n",
            "hostbits.txt:2: prefix 10.1.2.3/16 has host bits set (did you mean 10.1.0.0/16?)",
        ),
        (
            "badlen.txt",
            "# comment\n10.0.0.0/33 a\n",
            "badlen.txt:2: bad prefix \"10.0.0.0/33\": length /33 exceeds the maximum /32",
        ),
        (
            "dup.txt",
            "10.0.0.0/8 a\n11.0.0.0/8 b\n10.0.0.0/8 c\n",
            "dup.txt:3: duplicate prefix 10.0.0.0/8 (first on line 1)",
        ),
        ("empty.txt", "# nothing\n\n", "empty.txt: no routes"),
    ] {
        let t = s.file(name, contents);
        let o = lpmkit(&["info", "-t", t.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(message),
            "{name}: expected {message:?} in {:?}",
            stderr(&o)
        );
        assert!(!stderr(&o).contains("panicked"), "{name}");
    }
    let t = s.file("t.txt", TABLE);
    let o = lpmkit(&["lookup", "-t", t.to_str().unwrap(), "1.2.3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("argument 1: \"1.2.3\" is not an ipv4 address"),
        "{}",
        stderr(&o)
    );
    let o = lpmkit(&["bench", "--pattern", "random"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("expected one of rnd, routable"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bench_writes_checked_records_for_both_families() {
    let s = Scratch::new("bench");
    for (family, schemes) in [
        ("v4", "dir24-8,d18r,poptrie18,spider16w"),
        ("v6", "dir24-8,poptrie16,spider16w,spider8w"),
    ] {
        let json = s.0.join(format!("{family}.json"));
        let o = lpmkit(&[
            "bench",
            "--synthetic",
            family,
            "--routes",
            "20000",
            "--keys",
            "50000",
            "--runs",
            "2",
            "--threads",
            "1,2",
            "-s",
            schemes,
            "--json",
            json.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{family}: {}", stderr(&o));
        let records: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let records = records.as_array().unwrap();
        let names: Vec<&str> = schemes.split(',').collect();
        assert_eq!(
            records.len(),
            2 * names.len(),
            "every scheme at 1 and 2 threads"
        );
        for r in records {
            assert_eq!(r["checksum_ok"], true, "{r}");
            assert_eq!(r["keys"], 50000);
            assert_eq!(r["mlps_runs"].as_array().unwrap().len(), 2);
            assert!(r["mlps_median"].as_f64().unwrap() > 0.0);
            assert!(names.contains(&r["scheme"].as_str().unwrap()));
            // The roofline beside every figure; no hot-keys figure unless asked for.
            let roof = r["roof_read_mlps"].as_f64().unwrap();
            let share = r["roof_share"].as_f64().unwrap();
            assert!(
                roof > 0.0 && r["roof_stream_mlps"].as_f64().unwrap() > 0.0,
                "{r}"
            );
            let median = r["mlps_median"].as_f64().unwrap();
            assert!((share - median / roof).abs() < 1e-9, "{r}");
            assert!(r["hot_mlps_median"].is_null(), "{r}");
        }
        assert!(stdout(&o).contains("ok"), "{}", stdout(&o));
        assert!(stdout(&o).contains("% roof"), "{}", stdout(&o));
        assert!(stdout(&o).lines().any(|l| l.starts_with("stream ")));
        assert!(!stdout(&o).contains("WRONG"));
    }
}

#[test]
fn bench_hot_keys_are_checked_and_the_roofline_can_be_left_out() {
    let s = Scratch::new("bench-hot");
    let json = s.0.join("hot.json");
    let o = lpmkit(&[
        "bench",
        "--synthetic",
        "v4",
        "--routes",
        "5000",
        "--keys",
        "30000",
        "--runs",
        "2",
        "-s",
        "d18r,spider16w",
        "--hot-keys",
        "--no-roofline",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("hot Mlps") && !out.contains("% roof"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("stream ")), "{out}");
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    for r in records.as_array().unwrap() {
        assert_eq!(r["checksum_ok"], true, "{r}");
        assert_eq!(r["hot_mlps_runs"].as_array().unwrap().len(), 2, "{r}");
        assert!(r["hot_mlps_median"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["roof_read_mlps"].is_null(), "{r}");
    }
    // Keys made in the timed loop are not looked up in batches of stored keys: no
    // roofline, no hot-keys figure.
    let o = lpmkit(&[
        "bench",
        "--synthetic",
        "v4",
        "--routes",
        "5000",
        "--keys",
        "30000",
        "--runs",
        "1",
        "-s",
        "d18r",
        "--jit",
        "--hot-keys",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains("hot Mlps") && !stdout(&o).contains("% roof"));
}

#[test]
fn bench_ratio_column_follows_the_baseline() {
    let args = |baseline: &str| -> Output {
        lpmkit(&[
            "bench",
            "--synthetic",
            "v4",
            "--routes",
            "5000",
            "--keys",
            "20000",
            "--runs",
            "1",
            "-s",
            "d16r,spider16w,dir24-8",
            "--baseline",
            baseline,
        ])
    };
    // The baseline is measured first and its own ratio is 1.00x.
    let o = args("spider16w");
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("vs spider16w"), "{out}");
    let first = out
        .lines()
        .find(|l| l.starts_with("d16r") || l.starts_with("spider16w") || l.starts_with("dir24-8"))
        .unwrap();
    assert!(
        first.starts_with("spider16w") && first.contains(" 1.00x"),
        "{out}"
    );
    // The default is DIR-24-8.
    let o = args("dir24-8");
    assert!(stdout(&o).contains("vs dir24-8"), "{}", stdout(&o));
    // A name that is no scheme is an error, not a silent fallback.
    let o = args("dir-24-8");
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--baseline: unknown scheme `dir-24-8`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn info_reports_structures_and_spider_depth() {
    let s = Scratch::new("info");
    let t = s.file("t.txt", TABLE);
    let o = lpmkit(&["info", "-t", t.to_str().unwrap(), "-s", "spider16w,d16r"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for want in [
        "routes       5",
        "next hops    5",
        "spider16w",
        "layout=",
        "Lookup profiles",
        "search_steps.0=",
        "search_steps_mean=",
        "depth.0=",
        "cold_reads_per_lookup=",
    ] {
        assert!(out.contains(want), "{want:?} missing from\n{out}");
    }
}

#[test]
fn info_profiles_the_keys_of_a_pattern() {
    let s = Scratch::new("info-pattern");
    let t = s.file("t.txt", "2001:db8::/32 1\n2001:db8:1::/48 2\n2400::/12 3\n");
    let addrs = s.file("a.txt", "2001:db8:1::5\n2001:db8:2::\n3000::\n");
    let run_keys = |keys: &str, pattern: &str| {
        let o = lpmkit(&[
            "info",
            "-t",
            t.to_str().unwrap(),
            "-s",
            "planb-front",
            "--profile-keys",
            keys,
            "-p",
            pattern,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let run = |pattern: &str| run_keys("300", pattern);
    let out = run("routable");
    assert!(out.contains("300 keys of the routable pattern"), "{out}");
    // No keys, no profile section (rather than shares of no lookups).
    let out = run_keys("0", "routable");
    assert!(!out.contains("Lookup profiles"), "{out}");
    // The trace's three addresses, cycled: one of three outside every listed /32 and
    // answered by the /16 summary.
    let out = run(&format!("trace:{}", addrs.display()));
    assert!(out.contains("keys of the trace:"), "{out}");
    assert!(out.contains("front.summary=0.3333"), "{out}");
    // A pattern of the other family is an error, not a silent default.
    let o = lpmkit(&[
        "info",
        "--synthetic",
        "v4",
        "--routes",
        "100",
        "-p",
        "v6match",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("v6match"),
        "{}",
        stderr(&o)
    );
}

/// The defects of issue 10 (item 7), each as a user met it.
#[test]
fn bad_numbers_are_usage_errors_not_panics() {
    let s = Scratch::new("numbers");
    let t = s.file("t.txt", TABLE);
    let trace = s.file("u.txt", "100 A 10.9.0.0/16 nhx\n101 W 10.9.0.0/16 -\n");
    let t = t.to_str().unwrap();
    let trace = trace.to_str().unwrap();
    for extra in [&["--batch", "0"][..], &["--keys", "0"]] {
        let mut args = vec!["updates", "-t", t, "--trace", trace, "-s", "dir24-8"];
        args.extend_from_slice(extra);
        let o = lpmkit(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    }
    for speedup in ["1e-30", "0", "-1", "NaN", "inf"] {
        let flag = format!("--speedup={speedup}");
        let o = lpmkit(&["updates", "-t", t, "--trace", trace, "-s", "dir24-8", &flag]);
        assert_eq!(o.status.code(), Some(2), "{flag}: {}", stderr(&o));
        assert!(stderr(&o).contains("--speedup"), "{}", stderr(&o));
    }
    let o = lpmkit(&["info", "--synthetic", "v4", "--routes", "16777217"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("at most"), "{}", stderr(&o));
}

#[test]
fn a_trace_whose_time_goes_back_replays_paced() {
    let s = Scratch::new("backwards");
    let t = s.file("t.txt", TABLE);
    let trace = s.file(
        "u.txt",
        "100 A 10.9.0.0/16 nhx\n40 A 10.8.0.0/16 nhx\n101 W 10.9.0.0/16 -\n",
    );
    let o = lpmkit(&[
        "updates",
        "-t",
        t.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "-s",
        "dir24-8",
        "--speedup",
        "100",
        "--keys",
        "4096",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("equals the trie"), "{}", stdout(&o));
}

#[test]
fn sample_cuts_a_smaller_table_and_match_sets_the_matching_ratio() {
    // Bloomfwd's Fig. 5 (table size) and Fig. 3 (matching ratio).
    let o = lpmkit(&[
        "info",
        "--synthetic",
        "v4",
        "--routes",
        "1000",
        "--sample",
        "0.25",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .lines()
            .any(|l| l.starts_with("routes") && l.ends_with(" 250")),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("a 0.25 sample of its 1000"),
        "{}",
        stderr(&o)
    );
    for bad in ["2", "-0.5", "half"] {
        let flag = format!("--sample={bad}");
        let o = lpmkit(&["info", "--synthetic", "v4", "--routes", "1000", &flag]);
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(stderr(&o).contains("fraction"), "{}", stderr(&o));
    }
    let o = lpmkit(&[
        "bench",
        "--synthetic",
        "v4",
        "--routes",
        "5000",
        "-s",
        "trie",
        "--pattern",
        "match:80",
        "--keys",
        "4096",
        "--runs",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("pattern match:80"), "{}", stdout(&o));
    let o = lpmkit(&[
        "bench",
        "--synthetic",
        "v4",
        "-s",
        "trie",
        "--pattern",
        "match:120",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("percentage"), "{}", stderr(&o));
}

#[test]
fn updates_reports_what_one_update_did_to_obma() {
    // OBMA's Table III: pointers changed, DPA elements modified, new bytes per update.
    let s = Scratch::new("table3");
    let t = s.file("t.txt", TABLE);
    let trace = s.file(
        "u.txt",
        "1 A 10.9.0.0/16 nhx\n2 A 10.9.1.0/24 nhy\n3 W 10.9.0.0/16 -\n",
    );
    let (t, trace) = (t.to_str().unwrap(), trace.to_str().unwrap());
    let o = lpmkit(&[
        "updates", "-t", t, "--trace", trace, "-s", "obma-b", "--keys", "4096",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let line = out
        .lines()
        .find(|l| l.contains("per update:"))
        .unwrap_or_else(|| panic!("no per-update line: {out}"));
    for field in ["changed_pointers", "modified_dpa_elements", "new_bytes"] {
        assert!(line.contains(field), "{field}: {line}");
    }
    // The same figures as a record (`--json`), with the limit on the trace's updates.
    let json = s.file("u.json", "");
    let o = lpmkit(&[
        "updates",
        "-t",
        t,
        "--trace",
        trace,
        "-s",
        "obma-b,d18r",
        "--keys",
        "4096",
        "--limit",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let records = records.as_array().unwrap();
    assert_eq!(records.len(), 2);
    for r in records {
        assert_eq!(r["changes"], 2, "{r}");
        assert_eq!(r["table_ok"], true, "{r}");
        assert!(r["in_place_idle_mlps"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["twins_updates_per_s"].as_f64().unwrap() > 0.0, "{r}");
    }
    // The interleaved measurement ran (too few changes for a round here: no ratios).
    assert_eq!(records[0]["interleaved_rounds"], 0.0, "{}", records[0]);
    assert!(
        records[0]["per_update"]["new_bytes"].is_number(),
        "{}",
        records[0]
    );
}

#[test]
fn info_writes_its_figures_as_records() {
    let s = Scratch::new("info-json");
    let json = s.file("i.json", "");
    let o = lpmkit(&[
        "info",
        "--synthetic",
        "v4",
        "--routes",
        "5000",
        "-s",
        "d16r,obma-b,spider16w",
        "--set",
        "fig13=true",
        "--profile-keys",
        "10000",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let records: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let by = |name: &str| {
        records
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["scheme"] == name)
            .unwrap_or_else(|| panic!("no {name}: {records}"))
            .clone()
    };
    let d16r = by("d16r");
    assert_eq!(d16r["routes"], 5000);
    assert!(d16r["memory_bytes"].as_u64().unwrap() > 0);
    assert!(
        d16r["stats"]["range_table"].as_f64().unwrap() > 0.0,
        "{d16r}"
    );
    let steps: f64 = d16r["search_steps"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((steps - 1.0).abs() < 1e-9, "{d16r}");
    assert!(
        by("obma-b")["stats"]["fig13_ones_overlay"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(by("spider16w")["depth"]["0"].as_f64().is_some());
    assert!(by("obma-b")["stats"]["partition"].is_string());
}

#[cfg(unix)]
#[test]
fn a_closed_pipe_ends_the_program_quietly() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
        .args(["info", "--synthetic", "v4", "--routes", "20000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 1];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The pipe is closed here (`lpmkit info | head -c 1`).
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.signal(), Some(13), "{status:?}: {err}");
}

#[test]
fn a_huge_assigned_next_hop_count_costs_nothing() {
    let s = Scratch::new("assign");
    let t = s.file("t.txt", "10.0.0.0/8\n11.0.0.0/8\n");
    let o = lpmkit(&[
        "lookup",
        "-t",
        t.to_str().unwrap(),
        "--assign-nexthops",
        "4294967295",
        "-s",
        "dir24-8",
        "10.1.1.1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("10.0.0.0/8"), "{}", stdout(&o));
}

#[test]
fn a_refusing_scheme_does_not_stop_the_others() {
    let s = Scratch::new("refuse");
    let mut text = String::new();
    for i in 0..70_000u32 {
        text += &format!(
            "{}.{}.{}.0/24 nh{i}\n",
            10 + (i >> 16),
            (i >> 8) & 255,
            i & 255
        );
    }
    let t = s.file("t.txt", &text);
    let o = lpmkit(&[
        "verify",
        "-t",
        t.to_str().unwrap(),
        "-s",
        "d16r,poptrie16",
        "-k",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stderr(&o).contains("refused: d16r"), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("poptrie16"),
        "poptrie16 still verified: {}",
        stdout(&o)
    );
    // Every scheme refuses: nothing was verified, and the summary says so.
    let o = lpmkit(&[
        "verify",
        "-t",
        t.to_str().unwrap(),
        "-s",
        "d16r",
        "-k",
        "100",
    ]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("verified nothing: every selected scheme refused the table")
            && !stdout(&o).contains("0 mismatches"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn skipped_input_is_reported_and_bad_input_is_quoted_short() {
    let s = Scratch::new("skipped");
    let t = s.file("t.txt", TABLE);
    let trace = s.file("u.txt", "100 A 10.9.0.0/16 nhx\n101 A 2001:db8::/32 nhy\n");
    let o = lpmkit(&[
        "updates",
        "-t",
        t.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
        "-s",
        "dir24-8",
        "--keys",
        "4096",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("left out 1 routes or updates of the other address family"),
        "{}",
        stderr(&o)
    );
    let o = lpmkit(&["info", "-t", t.to_str().unwrap(), "--peer", "192.0.2.9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("has no peers"), "{}", stderr(&o));
    let long = s.file(
        "long.txt",
        &format!("10.0.0.0/8 a\n{} b\n", "x".repeat(100_000)),
    );
    let o = lpmkit(&["info", "-t", long.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).len() < 400,
        "{} bytes of message",
        stderr(&o).len()
    );
    assert!(stderr(&o).contains("long.txt:2:"), "{}", stderr(&o));
    let bom = s.file("bom.txt", "\u{feff}10.0.0.0/8 a\n");
    let o = lpmkit(&[
        "lookup",
        "-t",
        bom.to_str().unwrap(),
        "-s",
        "dir24-8",
        "10.1.1.1",
    ]);
    assert!(
        o.status.success(),
        "a BOM is not part of the text: {}",
        stderr(&o)
    );
}

#[test]
fn set_reaches_the_schemes_that_know_the_key() {
    let s = Scratch::new("set");
    let t = s.file("t.txt", TABLE);
    let t = t.to_str().unwrap();
    let o = lpmkit(&["info", "-t", t, "-s", "d18r,poptrie16", "--set", "k=20"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("k=20"), "{}", stdout(&o));
    let o = lpmkit(&[
        "verify", "-t", t, "-s", "d18r", "--set", "k=20", "-k", "1000",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = lpmkit(&["info", "-t", t, "-s", "d18r", "--set", "bogus=1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("d18r: k, widen"), "{}", stderr(&o));
    let o = lpmkit(&["info", "-t", t, "-s", "d18r", "--set", "k"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("KEY=VALUE"), "{}", stderr(&o));
}

#[test]
fn verify_checks_each_isa_path_and_force_isa_caps_it() {
    let s = Scratch::new("isa");
    let t = s.file("t.txt", TABLE);
    let t = t.to_str().unwrap();
    // Every path the CPU has, each named in the summary.
    let o = lpmkit(&["verify", "-t", t, "-s", "spider16w,dir24-8", "-k", "5000"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let summary = out.lines().find(|l| l.starts_with("verified ")).unwrap();
    assert!(summary.contains("spider16w[scalar]"), "{summary}");
    let have = |isa: &str| {
        std::fs::read_to_string("/proc/cpuinfo")
            .map(|c| c.contains(isa))
            .unwrap_or(false)
    };
    if cfg!(target_arch = "x86_64") && have(" avx2") {
        assert!(summary.contains("spider16w[avx2]"), "{summary}");
    }
    if cfg!(target_arch = "x86_64") && have(" avx512bw") && have(" avx512vl") {
        assert!(summary.contains("spider16w[avx512]"), "{summary}");
    } else {
        assert!(stderr(&o).contains("no avx512"), "{}", stderr(&o));
    }
    // A ceiling: nothing above it runs.
    let o = lpmkit(&[
        "verify",
        "-t",
        t,
        "-s",
        "spider16w",
        "-k",
        "5000",
        "--force-isa",
        "scalar",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = stdout(&o);
    assert!(
        summary.contains("spider16w[scalar]: 0 mismatches")
            || summary.contains("against spider16w[scalar]: 0"),
        "{summary}"
    );
    assert!(!summary.contains("[avx"), "{summary}");
    // bench prints the path it measured.
    let o = lpmkit(&[
        "bench",
        "-t",
        t,
        "-s",
        "spider16w",
        "-k",
        "4096",
        "-r",
        "1",
        "--force-isa",
        "scalar",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o)
        .lines()
        .any(|l| l.starts_with("spider16w") && l.contains("scalar")));
    // Bad values are errors that name what is accepted.
    let o = lpmkit(&["bench", "-t", t, "--force-isa", "sse9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("scalar, avx2, avx512"),
        "{}",
        stderr(&o)
    );
    let o = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
        .args(["verify", "-t", t, "-s", "d18r", "-k", "10"])
        .env("LPMKIT_FORCE_ISA", "avx3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("LPMKIT_FORCE_ISA") && stderr(&o).contains("scalar, avx2, avx512"),
        "{}",
        stderr(&o)
    );
}

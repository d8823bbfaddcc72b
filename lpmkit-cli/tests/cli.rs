//! End-to-end tests of the `lpmkit` binary: what a user sees — answers, exit statuses,
//! error messages that name the file and line, and benchmark records whose answers were
//! checked against the reference trie.

use std::path::PathBuf;
use std::process::{Command, Output};

/// A scratch directory of this test process, removed at the end of each test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("lpmkit-cli-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, contents).unwrap();
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn lpmkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lpmkit"))
        .args(args)
        .output()
        .expect("the lpmkit binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

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
        }
        assert!(stdout(&o).contains("ok"), "{}", stdout(&o));
        assert!(!stdout(&o).contains("WRONG"));
    }
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
        "DXR binary-search steps per lookup",
        "Spider lookup depth",
        "reads per lookup from prefetched (uncached) levels",
    ] {
        assert!(out.contains(want), "{want:?} missing from\n{out}");
    }
}

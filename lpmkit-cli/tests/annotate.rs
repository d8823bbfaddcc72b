//! End-to-end tests of `lpmkit annotate`: CSV out, CSV columns in, errors that name the
//! line, streaming (output before the input ends), and answers equal to the library's on a
//! real table.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::{stderr, stdout, Scratch};

/// Runs `lpmkit ARGS` with `input` on stdin.
fn run(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the lpmkit binary runs");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_string();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

const TABLE: &str = "0.0.0.0/0 def\n\
                     10.0.0.0/8 AS1\n\
                     10.1.0.0/16 AS2\n\
                     192.0.2.1/32 host\n";

#[test]
fn addresses_in_csv_out() {
    let s = Scratch::new("plain");
    let t = s.file("t.txt", TABLE);
    let o = run(
        &["annotate", "-t", t.to_str().unwrap()],
        "# a comment\n10.1.2.3\n\n10.2.0.0\r\n  192.0.2.1  \n192.0.2.2\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "address,prefix,value\n\
         10.1.2.3,10.1.0.0/16,AS2\n\
         10.2.0.0,10.0.0.0/8,AS1\n\
         192.0.2.1,192.0.2.1/32,host\n\
         192.0.2.2,0.0.0.0/0,def\n"
    );
    assert!(
        stderr(&o).contains("annotated 4 addresses: 4 matched"),
        "{}",
        stderr(&o)
    );

    // No default route: a miss has empty fields. Values with commas are quoted. A file
    // argument instead of stdin; every scheme gives the same answers.
    let t2 = s.file("t2.txt", "10.0.0.0/8 \"a,b\"\n2.0.0.0/8 x\n");
    let input = s.file("in.txt", "10.0.0.1\n11.0.0.1\n2.3.4.5\n");
    for scheme in ["auto", "dir24-8", "poptrie16", "spider16w", "trie"] {
        let o = run(
            &[
                "annotate",
                "-t",
                t2.to_str().unwrap(),
                "-s",
                scheme,
                input.to_str().unwrap(),
            ],
            "",
        );
        assert!(o.status.success(), "{scheme}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            "address,prefix,value\n10.0.0.1,10.0.0.0/8,\"\"\"a,b\"\"\"\n11.0.0.1,,\n2.3.4.5,2.0.0.0/8,x\n",
            "{scheme}"
        );
    }
}

#[test]
fn csv_columns_by_number_and_by_name() {
    let s = Scratch::new("csv");
    let t = s.file("t.txt", TABLE);
    let csv = "time,src,bytes\n1,\"10.1.0.1\",5\n2,192.0.2.1,7\n";
    let o = run(
        &[
            "annotate",
            "-t",
            t.to_str().unwrap(),
            "--column",
            "src",
            "--header",
        ],
        csv,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "address,prefix,value\n10.1.0.1,10.1.0.0/16,AS2\n192.0.2.1,192.0.2.1/32,host\n"
    );
    let o = run(
        &["annotate", "-t", t.to_str().unwrap(), "-c", "2", "-d", ";"],
        "a;10.0.0.1\nb;10.1.0.1\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "address,prefix,value\n10.0.0.1,10.0.0.0/8,AS1\n10.1.0.1,10.1.0.0/16,AS2\n"
    );
    // A name without a header, a name the header lacks, a missing column.
    let o = run(&["annotate", "-t", t.to_str().unwrap(), "-c", "src"], csv);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("needs --header"), "{}", stderr(&o));
    let o = run(
        &[
            "annotate",
            "-t",
            t.to_str().unwrap(),
            "-c",
            "dst",
            "--header",
        ],
        csv,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o)
            .contains("stdin:1: no column named \"dst\" in the header (columns: time, src, bytes)"),
        "{}",
        stderr(&o)
    );
    let o = run(&["annotate", "-t", t.to_str().unwrap(), "-c", "4"], "1,2\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("stdin:1: the line has no column 4"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_addresses_name_the_line_or_are_skipped() {
    let s = Scratch::new("bad");
    let t = s.file("t.txt", TABLE);
    let input = "10.0.0.1\n10.0.0.256\n10.0.0.2\n";
    let o = run(&["annotate", "-t", t.to_str().unwrap()], input);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("stdin:2: \"10.0.0.256\" is not an ipv4 address"),
        "{}",
        stderr(&o)
    );
    // An IPv6 address against an IPv4 table is an error too.
    let o = run(&["annotate", "-t", t.to_str().unwrap()], "2001:db8::1\n");
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("stdin:1:"), "{}", stderr(&o));
    let o = run(
        &["annotate", "-t", t.to_str().unwrap(), "--skip-invalid"],
        input,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "address,prefix,value\n10.0.0.1,10.0.0.0/8,AS1\n10.0.0.256,,\n10.0.0.2,10.0.0.0/8,AS1\n"
    );
    assert!(stderr(&o).contains("1 invalid"), "{}", stderr(&o));
    let o = run(&["annotate", "-t", t.to_str().unwrap(), "-s", "nope"], "");
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unknown scheme \"nope\""),
        "{}",
        stderr(&o)
    );
}

#[test]
fn ipv6_tables() {
    let s = Scratch::new("v6");
    let t = s.file(
        "t6.txt",
        "::/0 up\n2001:db8::/32 doc\n2001:db8:0:1::/64 lan\n",
    );
    let o = run(
        &["annotate", "-t", t.to_str().unwrap()],
        "2001:db8:0:1::5\n2001:db8:ffff::1\n::1\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "address,prefix,value\n\
         2001:db8:0:1::5,2001:db8:0:1::/64,lan\n\
         2001:db8:ffff::1,2001:db8::/32,doc\n\
         ::1,::/0,up\n"
    );
}

/// Output comes out while the input is still open: the command streams in batches.
#[test]
fn output_streams_before_the_input_ends() {
    let s = Scratch::new("stream");
    let t = s.file("t.txt", TABLE);
    let mut child = Command::new(env!("CARGO_BIN_EXE_lpmkit"))
        .args(["annotate", "-t", t.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    // Three batches' worth, and the input stays open.
    for i in 0..12_000u32 {
        writeln!(
            stdin,
            "10.{}.{}.{}",
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255
        )
        .unwrap();
    }
    stdin.flush().unwrap();
    let mut got = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while got < 2000 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(_) => got += 1,
            Err(_) => panic!("only {got} output lines while the input is open"),
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// On a real table, the CSV equals the library's answers (the reference trie's matched
/// prefix and next hop) for random keys and every prefix boundary of a sample.
#[test]
fn real_table_answers_equal_the_library() {
    let dir = std::env::var_os("LPMKIT_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let path = dir.join("fib/ipv4-routeviews-2015-11-01-originas.txt.xz");
    if !path.is_file() {
        assert!(
            std::env::var_os("LPMKIT_REQUIRE_DATA").is_none(),
            "LPMKIT_REQUIRE_DATA is set but {} is missing",
            path.display()
        );
        eprintln!("note: {} is missing; skipping", path.display());
        return;
    }
    let t = lpmkit::io::read_table_as::<u32>(&path, &Default::default()).unwrap();
    let mut keys: Vec<u32> = lpmkit::traffic::uniform(20_000, 7);
    let bounds = lpmkit::traffic::boundary_keys(&t.rib);
    keys.extend(bounds.iter().step_by(53));
    let input: String = keys
        .iter()
        .map(|&k| format!("{}\n", std::net::Ipv4Addr::from(k)))
        .collect();
    let o = run(&["annotate", "-t", path.to_str().unwrap()], &input);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("address,prefix,value"));
    let mut n = 0;
    for (line, &k) in lines.zip(&keys) {
        let want = match t.rib.lookup_prefix(k) {
            Some((p, nh)) => format!(
                "{},{p},{}",
                std::net::Ipv4Addr::from(k),
                t.next_hops.value(nh).unwrap()
            ),
            None => format!("{},,", std::net::Ipv4Addr::from(k)),
        };
        assert_eq!(line, want);
        n += 1;
    }
    assert_eq!(n, keys.len());
}

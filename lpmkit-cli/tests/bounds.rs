//! The command line's numbers, memory and output, as a careless or hostile user tries
//! them: every numeric option of every command at 0, just past its maximum and at
//! `u64::MAX` (and `nan`, `inf`, `1e30` for decimals) is refused with exit status 2 and a
//! message naming the option; in-range counts that would need more memory than the run
//! may take are refused before anything is allocated; endless input lines fail in
//! bounded memory; a full standard output and an output file that cannot be created end
//! the run with a message, never a panic. Every run has an address-space limit
//! (`setrlimit(RLIMIT_AS)`, what `ulimit -v` sets) and a time limit.

mod common;

use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::stderr;

/// The address space each run may use.
const AS_LIMIT: u64 = 1 << 30;
/// The longest a refused run may take.
const TIME_LIMIT: Duration = Duration::from_secs(20);

/// Runs `lpmkit args` with stdin from `stdin` (a path; none: empty), stdout to `stdout`
/// (a path; none: captured), under [`AS_LIMIT`] and [`TIME_LIMIT`].
fn run_with(args: &[&str], stdin: Option<&str>, stdout: Option<&str>) -> (Output, Duration) {
    let (o, took, _) = run_measured(args, stdin, stdout);
    (o, took)
}

/// [`run_with`], also returning the run's peak resident memory (bytes).
fn run_measured(
    args: &[&str],
    stdin: Option<&str>,
    stdout: Option<&str>,
) -> (Output, Duration, u64) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lpmkit"));
    cmd.args(args)
        .stdin(match stdin {
            Some(p) => Stdio::from(std::fs::File::open(p).unwrap()),
            None => Stdio::null(),
        })
        .stdout(match stdout {
            Some(p) => Stdio::from(std::fs::OpenOptions::new().write(true).open(p).unwrap()),
            None => Stdio::piped(),
        })
        .stderr(Stdio::piped());
    // SAFETY: between fork and exec only setrlimit runs (async-signal-safe); it touches
    // no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: AS_LIMIT as libc::rlim_t,
                rlim_max: AS_LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let t0 = Instant::now();
    // Reaped by wait4 below, which also gives the peak memory.
    #[allow(clippy::zombie_processes)]
    let mut child = cmd.spawn().expect("the lpmkit binary runs");
    let (mut out, mut err) = (child.stdout.take(), child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut o = Vec::new();
        if let Some(s) = out.as_mut() {
            s.read_to_end(&mut o).unwrap();
        }
        o
    });
    let err_reader = std::thread::spawn(move || {
        let mut e = Vec::new();
        err.read_to_end(&mut e).unwrap();
        e
    });
    let pid = child.id() as libc::pid_t;
    let (status, rss) = loop {
        let mut status = 0;
        // SAFETY: zeroed rusage is valid; wait4 on the child this test started, which
        // std does not wait for (the Child is dropped without waiting).
        let mut usage: libc::rusage = unsafe { core::mem::zeroed() };
        // SAFETY: valid pointers to the status and the usage.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            let rss = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
            break (std::process::ExitStatus::from_raw(status), rss);
        }
        assert_eq!(r, 0, "wait4: {}", std::io::Error::last_os_error());
        if t0.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`lpmkit {}` ran longer than {TIME_LIMIT:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let o = Output {
        status,
        stdout: reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    };
    (o, t0.elapsed(), rss)
}

fn run(args: &[&str]) -> Output {
    run_with(args, None, None).0
}

/// Exit status 2 and a message on stderr that contains `needle`.
fn refused(args: &[&str], needle: &str) {
    let o = run(args);
    let e = stderr(&o);
    assert_eq!(
        o.status.code(),
        Some(2),
        "`lpmkit {}`: expected exit status 2, got {:?}; stderr: {e}",
        args.join(" "),
        o.status
    );
    assert!(
        e.contains(needle),
        "`lpmkit {}`: the message does not name {needle:?}: {e}",
        args.join(" ")
    );
    assert!(!e.contains("panicked"), "{e}");
}

/// An option in a command's `--help`: its long name, whether it takes a value, and its
/// help text (one line).
struct HelpOption {
    name: String,
    takes_value: bool,
    text: String,
}

fn options(command: &[&str]) -> Vec<HelpOption> {
    let mut args = command.to_vec();
    args.push("--help");
    let o = run(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let help = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut out: Vec<HelpOption> = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        let opt = t.strip_prefix("--").or_else(|| {
            t.get(4..)
                .and_then(|r| r.strip_prefix("--"))
                .filter(|_| t.starts_with('-') && t.as_bytes().get(2) == Some(&b','))
        });
        match opt {
            Some(rest) if line.starts_with("  ") && !line.starts_with("          ") => {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                out.push(HelpOption {
                    takes_value: rest[name.len()..].trim_start().starts_with('<'),
                    name,
                    text: String::new(),
                });
            }
            _ => {
                if let Some(last) = out.last_mut() {
                    last.text.push(' ');
                    last.text.push_str(t);
                }
            }
        }
    }
    out
}

/// The range an option's help states: "Range: MIN to MAX." or "Range: above MIN and at
/// most MAX.", as (min, max, min excluded).
fn range(text: &str) -> Option<(String, String, bool)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "Range:")?;
    let clean = |w: &str| w.trim_end_matches('.').to_string();
    match words.get(at + 1..at + 6) {
        Some([a, min, b, c, max]) if *a == "above" && *b == "and" && *c == "at" => {
            let _ = max;
            Some((clean(min), clean(words[at + 6]), true))
        }
        _ => Some((clean(words[at + 1]), clean(words[at + 3]), false)),
    }
}

/// Options that take a value that is not a number.
const NOT_NUMERIC: &[&str] = &[
    "table",
    "synthetic",
    "peer",
    "family",
    "set",
    "schemes",
    "scheme",
    "baseline",
    "pattern",
    "ways",
    "force-isa",
    "isa-sweep",
    "json",
    "trace",
    "read-pcap",
    "pcap-in",
    "pcap-out",
    "tables",
    "sizes",
    "netns",
    "fpm",
    "vtysh",
    "churn",
    "dev",
    "column",
    "delimiter",
    "output",
    "file",
    "out",
    "data",
    "routes-out",
    "keys-out",
];

/// Options whose range is every 64-bit value (seeds): nothing to refuse but what does
/// not parse.
const ANY_U64: &[&str] = &["seed", "synth-seed"];

const COMMANDS: &[&[&str]] = &[
    &["info"],
    &["lookup"],
    &["verify"],
    &["bench"],
    &["updates"],
    &["forward"],
    &["annotate"],
    &["export"],
    &["experiment", "run"],
    &["experiment", "list"],
    &["follow"],
];

/// Values just outside `min..=max` and the extremes, for an integer or a decimal option.
fn outside(min: &str, max: &str, open_min: bool) -> Vec<String> {
    let mut v = Vec::new();
    if let (Ok(lo), Ok(hi)) = (min.parse::<u128>(), max.parse::<u128>()) {
        if lo > 0 {
            v.push("0".to_string());
            v.push((lo - 1).to_string());
        }
        v.push((hi + 1).to_string());
        if hi < u64::MAX as u128 {
            v.push(u64::MAX.to_string());
        }
        v.push("-1".into());
        v.push("1e30".into());
        return v;
    }
    let (lo, hi): (f64, f64) = (min.parse().unwrap(), max.parse().unwrap());
    if open_min {
        v.push(min.to_string());
    }
    v.push(format!("{}", lo - 1.0));
    v.push(format!("{}", hi * 2.0 + 1.0));
    for s in ["nan", "NaN", "inf", "-inf", "1e30", "18446744073709551615"] {
        v.push(s.to_string());
    }
    v
}

#[test]
fn every_numeric_option_refuses_values_outside_its_range() {
    let help = String::from_utf8_lossy(&run(&["--help"]).stdout).into_owned();
    let mut tried = 0;
    let mut options_seen = 0;
    for command in COMMANDS {
        if command[0] == "follow" && !help.contains("follow") {
            continue; // built without the `netlink` feature
        }
        for opt in options(command) {
            if !opt.takes_value || opt.name == "help" {
                continue;
            }
            options_seen += 1;
            let r = range(&opt.text);
            if NOT_NUMERIC.contains(&opt.name.as_str()) {
                assert!(
                    r.is_none(),
                    "{command:?} --{}: a range on a non-number",
                    opt.name
                );
                continue;
            }
            if ANY_U64.contains(&opt.name.as_str()) {
                assert!(
                    opt.text.contains("any 64-bit value"),
                    "--{}: {}",
                    opt.name,
                    opt.text
                );
                let flag = format!("--{}", opt.name);
                for bad in ["18446744073709551616", "-1", "x", "1e30"] {
                    let mut args = command.to_vec();
                    let arg = format!("{flag}={bad}");
                    args.push(arg.as_str());
                    refused(&args, &flag);
                    tried += 1;
                }
                continue;
            }
            let (min, max, open_min) = r.unwrap_or_else(|| {
                panic!(
                    "{command:?} --{}: a value option with no \"Range:\" in its help: {}",
                    opt.name, opt.text
                )
            });
            let flag = format!("--{}", opt.name);
            for bad in outside(&min, &max, open_min) {
                let mut args = command.to_vec();
                // A value that starts with '-' goes after '=' (else it reads as an option).
                let arg = format!("{flag}={bad}");
                args.push(arg.as_str());
                if command[0] == "updates" {
                    args.extend(["--trace", "/nonexistent"]);
                }
                refused(&args, &flag);
                tried += 1;
            }
        }
    }
    assert!(
        options_seen > 40,
        "{options_seen} value options found in the help"
    );
    // A list-valued option: each degree of parallelism is bounded too.
    for ways in [
        "0",
        "17",
        "1..17",
        "1..18446744073709551615",
        "1,18446744073709551615",
    ] {
        refused(
            &[
                "bench",
                "--ways",
                ways,
                "--synthetic",
                "v4",
                "--routes",
                "100",
            ],
            "--ways",
        );
    }
    eprintln!("{tried} out-of-range values refused over {options_seen} value options");
}

/// A small update trace.
fn trace_file(dir: &std::path::Path) -> String {
    let p = dir.join("trace.txt");
    std::fs::write(&p, "1 A 10.0.0.0/8 192.0.2.1\n2 W 10.0.0.0/8 -\n").unwrap();
    p.to_str().unwrap().to_string()
}

fn scratch(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("lpmkit-bounds-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn counts_that_need_too_much_memory_are_refused_before_allocating() {
    let dir = scratch("mem");
    let trace = trace_file(&dir);
    let small = ["--synthetic", "v4", "--routes", "1000"];
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            ["bench", "-s", "dir24-8", "--keys", "4294967296"].to_vec(),
            "--keys",
        ),
        (
            ["verify", "-s", "dir24-8", "--keys", "2147483648"].to_vec(),
            "--keys",
        ),
        (
            [
                "updates",
                "-s",
                "dir24-8",
                "--trace",
                &trace,
                "--keys",
                "4294967296",
            ]
            .to_vec(),
            "--keys",
        ),
        (
            [
                "forward",
                "-s",
                "dir24-8",
                "--frames",
                "67108864",
                "--threads",
                "1024",
            ]
            .to_vec(),
            "--frames",
        ),
        (
            ["info", "-s", "d18r", "--profile-keys", "100000000"].to_vec(),
            "--profile-keys",
        ),
        (
            ["export", "--keys-out", "/dev/null", "--keys", "4294967296"].to_vec(),
            "--keys",
        ),
    ];
    for (mut args, flag) in cases {
        args.extend(small);
        let (o, took) = run_with(&args, None, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(flag) && e.contains("would take about") && e.contains("address-space limit"),
            "{args:?}: {e}"
        );
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
    refused(
        &[
            "info",
            "--synthetic",
            "v4",
            "--routes",
            "100000000",
            "-s",
            "trie",
        ],
        "--routes",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn endless_lines_fail_in_bounded_memory() {
    let dir = scratch("zero");
    let t = dir.join("t.txt");
    std::fs::write(&t, "10.0.0.0/8 a\n").unwrap();
    let t = t.to_str().unwrap();
    for (args, stdin, needle) in [
        (
            vec!["annotate", "-t", t, "/dev/zero"],
            None,
            "/dev/zero:1: the line is longer",
        ),
        (
            vec!["annotate", "-t", t],
            Some("/dev/zero"),
            "stdin:1: the line is longer",
        ),
        (
            vec!["lookup", "-t", t],
            Some("/dev/zero"),
            "stdin:1: the line is longer",
        ),
        (
            vec!["lookup", "-t", "/dev/zero", "10.0.0.1"],
            None,
            "/dev/zero:1: the line is longer",
        ),
        (
            vec![
                "updates",
                "--trace",
                "/dev/zero",
                "--synthetic",
                "v4",
                "--routes",
                "100",
            ],
            None,
            "/dev/zero:1: the line is longer",
        ),
    ] {
        let (o, took) = run_with(&args, stdin, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The most resident memory a run that refuses its input may take.
const REFUSED_RSS: u64 = 20 << 20;

#[test]
fn binary_input_is_refused_at_once_in_bounded_memory() {
    let small = ["--synthetic", "v4", "--routes", "100"];
    let mut cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["lookup", "-t", "/dev/urandom", "10.0.0.1"],
            "/dev/urandom:",
        ),
        (
            [&["updates", "--trace", "/dev/urandom"][..], &small].concat(),
            "/dev/urandom:",
        ),
        (
            [&["bench", "--pattern", "trace:/dev/urandom"][..], &small].concat(),
            "/dev/urandom:",
        ),
        // Without a table: the trace is read before the default synthetic table (1,000,000
        // routes) is generated.
        (vec!["updates", "--trace", "/dev/urandom"], "/dev/urandom:"),
        (
            vec!["updates", "--trace", "/dev/urandom", "--synthetic", "v6"],
            "/dev/urandom:",
        ),
        (
            vec!["bench", "--pattern", "trace:/dev/urandom"],
            "/dev/urandom:",
        ),
        (
            vec!["experiment", "run", "all", "--file", "/dev/zero"],
            "experiment file /dev/zero: byte offset 0: binary data",
        ),
        (
            vec!["experiment", "run", "all", "--file", "/dev/urandom"],
            "experiment file /dev/urandom: byte offset",
        ),
    ];
    for (args, needle) in cases.drain(..) {
        let (o, took, rss) = run_measured(&args, None, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(needle) && !e.contains("panicked"),
            "{args:?}: {e}"
        );
        assert!(rss < REFUSED_RSS, "{args:?}: {} MiB resident", rss >> 20);
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
        eprintln!(
            "{args:?}: exit 2 in {:.0} ms, {:.1} MiB resident: {}",
            took.as_secs_f64() * 1e3,
            rss as f64 / 1048576.0,
            e.lines().last().unwrap_or_default()
        );
    }
}

#[test]
fn compressed_blank_lines_stream_in_bounded_memory() {
    // 64 MiB of blank lines, gzipped (under 100 KiB), read to the end line by line in a
    // fraction of what holding them would take.
    let dir = scratch("gz");
    let gz = dir.join("blank.txt.gz");
    let made = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "head -c 67108864 /dev/zero | tr '\\0' '\\n' | gzip -1 > {}",
            gz.display()
        ))
        .status();
    if !made.is_ok_and(|s| s.success()) {
        panic!("cannot make {} with head, tr and gzip", gz.display());
    }
    let gz = gz.to_str().unwrap();
    for args in [
        vec!["lookup", "-t", gz, "10.0.0.1"],
        vec![
            "bench",
            "--pattern",
            &format!("trace:{gz}"),
            "--synthetic",
            "v4",
            "--routes",
            "100",
        ],
    ] {
        let (o, took, rss) = run_measured(&args, None, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("no routes") || e.contains("no addresses"),
            "{args:?}: {e}"
        );
        assert!(rss < REFUSED_RSS, "{args:?}: {} MiB resident", rss >> 20);
        eprintln!(
            "{args:?}: 67108864 blank lines in {:.1} s, {:.1} MiB resident",
            took.as_secs_f64(),
            rss as f64 / 1048576.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_full_stdout_ends_every_command_with_a_message() {
    let dir = scratch("full");
    let trace = trace_file(&dir);
    let t = dir.join("t.txt");
    std::fs::write(&t, "10.0.0.0/8 a\n").unwrap();
    let t = t.to_str().unwrap();
    let list = dir.join("addrs.txt");
    std::fs::write(&list, "10.0.0.1\n").unwrap();
    let list = list.to_str().unwrap();
    let small = ["--synthetic", "v4", "--routes", "1000"];
    let mut cases: Vec<Vec<&str>> = vec![
        ["info", "-s", "dir24-8", "--profile-keys", "0"].to_vec(),
        ["verify", "-s", "dir24-8", "--keys", "1000"].to_vec(),
        ["bench", "-s", "dir24-8", "--keys", "1000", "--runs", "1"].to_vec(),
        [
            "updates",
            "-s",
            "dir24-8",
            "--trace",
            &trace,
            "--keys",
            "1000",
            "--readers",
            "0",
        ]
        .to_vec(),
        [
            "forward",
            "-s",
            "dir24-8",
            "--frames",
            "1000",
            "--batches",
            "8",
            "--runs",
            "1",
            "--seconds",
            "0.01",
            "--check",
            "100",
        ]
        .to_vec(),
    ];
    for c in &mut cases {
        c.extend(small);
    }
    cases.push(vec!["lookup", "-t", t, "10.0.0.1"]);
    cases.push(vec!["annotate", "-t", t, list]);
    cases.push(vec!["schemes"]);
    cases.push(vec!["experiment", "list"]);
    cases.push(vec!["--help"]);
    cases.push(vec!["--version"]);
    cases.push(vec!["bench", "--help"]);
    for args in cases {
        let (o, _) = run_with(&args, None, Some("/dev/full"));
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains("cannot write to standard output") && !e.contains("panicked"),
            "{args:?}: {e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn settings_out_of_range_are_usage_errors() {
    let small = ["--synthetic", "v4", "--routes", "1000"];
    for (args, needle) in [
        (
            vec![
                "bench",
                "-s",
                "bloomfwd",
                "--set",
                "threads=18446744073709551615",
            ],
            "threads = 18446744073709551615 is not in 1..=1024",
        ),
        (
            vec!["bench", "-s", "bloomfwd", "--set", "threads=0"],
            "threads = 0",
        ),
        (
            vec!["bench", "-s", "d18r", "--set", "k=99"],
            "k = 99 is outside",
        ),
        (
            vec!["verify", "-s", "spider16w", "--set", "ways=17"],
            "ways",
        ),
        (vec!["verify", "-s", "spider16w", "--set", "ways=x"], "ways"),
    ] {
        let mut args = args.clone();
        args.extend(small);
        args.extend(["--keys", "1000"]);
        let (o, took) = run_with(&args, None, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(needle) && !e.contains("panicked"),
            "{args:?}: {e}"
        );
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
}

#[test]
fn output_files_are_opened_before_the_work() {
    // The default bench would measure 16 M keys per scheme for a while before writing.
    for (args, flag) in [
        (
            vec!["bench", "--json", "/proc/nonexistent/x.json"],
            "--json",
        ),
        (
            vec![
                "updates",
                "--json",
                "/proc/nonexistent/x.json",
                "--trace",
                "/nonexistent",
            ],
            "--json",
        ),
        (vec!["info", "--json", "/proc/nonexistent/x.json"], "--json"),
        (
            vec!["forward", "--pcap-out", "/proc/nonexistent/x.pcap"],
            "--pcap-out",
        ),
        (
            vec!["forward", "--pcap-in", "/proc/nonexistent/x.pcap"],
            "--pcap-in",
        ),
        (
            vec!["annotate", "-o", "/proc/nonexistent/x.csv"],
            "--output",
        ),
        (
            vec!["export", "--routes-out", "/proc/nonexistent/r.txt"],
            "--routes-out",
        ),
        (
            vec!["export", "--keys-out", "/proc/nonexistent/k.txt"],
            "--keys-out",
        ),
    ] {
        let (o, took) = run_with(&args, None, None);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(
            e.contains(flag) && e.contains("/proc/nonexistent/"),
            "{args:?}: the message names neither the option nor the file: {e}"
        );
        assert!(took < Duration::from_secs(5), "{args:?} took {took:?}");
    }
    // A pcap file that is not one: named with the option.
    refused(
        &[
            "forward",
            "--read-pcap",
            "/dev/null",
            "--synthetic",
            "v4",
            "--routes",
            "100",
        ],
        "--read-pcap: cannot read /dev/null",
    );
}

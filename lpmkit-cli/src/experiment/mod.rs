//! `lpmkit experiment`: the papers' evaluations as data.
//!
//! An experiment is a TOML file under `experiments/` (one per paper, embedded in the
//! binary; `--file` runs a user's own): a list of figures, each a `bench` invocation
//! written as its words, swept over one placeholder `{x}`, with the axes and series of
//! the plot it draws. `run` measures every cell in this process, appends its records to
//! `records.jsonl` as it goes (so an interrupted run resumes where it stopped: a cell
//! whose records are there is not measured again), then writes `records.csv`, one SVG per
//! figure and `report.md`. A wrong answer in a cell is an error that stops that cell: its
//! records are not written and it is not plotted.
//!
//! ```toml
//! name = "bloomfwd"
//! paper = "Lucchesi, Drummond, Teodoro: Bloomfwd (2018)"
//!
//! [[figure]]
//! id = "fig3"
//! title = "Lookup rate against the matching ratio, bart IPv4"
//! paper = "Fig. 3: the matching ratio has little impact"
//! args = ["-t", "{data}/fib/ipv4-bart-tier1-prefixes.txt.xz", "-s", "bloomfwd,miht",
//!         "--pattern", "match:{x}", "--runs", "3", "--keys", "4194304"]
//! x = { label = "matching ratio (%)", values = ["0", "50", "100"] }
//! y = "mlps_median"
//! ```
//!
//! Without `x.values` a figure is one cell and its x axis is a field of the records
//! (`x = { label = "ways", field = "ways" }` for a `--ways 1..16` sweep), or several
//! fields of each record (`x = { label = "method", fields = [["Lulea", "stats.a"], …] }`:
//! one point per field, named by its label). `command` runs `updates` or `info` instead of
//! `bench` (their records: `lpmkit updates --json`, `lpmkit info --json`); `each = { field =
//! "hash", values = [...] }` sweeps a second placeholder `{each}` whose value becomes the
//! record field `field` (a series: `series = "hash"`). Cells whose words are the same (two
//! figures drawn from one measurement) are measured once. `--quick` runs every cell small:
//! a synthetic table of the same family instead of `-t FILE` (20,000 routes), 65,536 keys,
//! one run, the first 5,000 updates of a trace.

mod plot;
mod records;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::output::outln;
use crate::{bench, info, updates};

/// What the papers show that these experiments do not measure (the report says so).
const NOT_YET: &str = "\n## Not measured by these experiments\n\n\
* Spider Fig. 9's trace keys: a packet trace (CAIDA-like address list) is not in \
`../shared/data`; the figure has uniform, Zipf and repeated keys.\n\
* PNG copies of the plots: the SVGs are drawn without a font library; a PNG needs a \
raster and font stack the project does not carry.\n";

/// The experiments shipped with lpmkit, one per paper (file name, text).
const BUILTIN: &[(&str, &str)] = &[
    ("spider", include_str!("../../../experiments/spider.toml")),
    ("dxr", include_str!("../../../experiments/dxr.toml")),
    ("obma", include_str!("../../../experiments/obma.toml")),
    (
        "bloomfwd",
        include_str!("../../../experiments/bloomfwd.toml"),
    ),
    ("lpmkit", include_str!("../../../experiments/lpmkit.toml")),
    ("large", include_str!("../../../experiments/large.toml")),
];

#[derive(Args, Debug)]
pub struct ExperimentArgs {
    #[command(subcommand)]
    command: ExperimentCommand,
}

#[derive(Subcommand, Debug)]
enum ExperimentCommand {
    /// List the experiments and their figures.
    List(ListArgs),
    /// Measure experiments (names from `list`, or `all`): records, plots and a report.
    Run(RunArgs),
}

#[derive(Args, Debug)]
struct ListArgs {
    /// Also read this experiment file.
    #[arg(long, value_name = "FILE")]
    file: Vec<PathBuf>,
}

#[derive(Args, Debug)]
struct RunArgs {
    /// Experiments to run (`all`: every built-in one), or `EXPERIMENT/FIGURE` for one figure.
    #[arg(required = true)]
    names: Vec<String>,

    /// Also read this experiment file (its name can then be given).
    #[arg(long, value_name = "FILE")]
    file: Vec<PathBuf>,

    /// Small runs: a synthetic table of the same family instead of each `-t FILE`, 65,536
    /// keys, one run per figure (CI runs `all --quick`).
    #[arg(long)]
    quick: bool,

    /// Output directory (records.jsonl, records.csv, one SVG per figure, report.md). A
    /// directory with records in it resumes: its measured cells are not measured again.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,

    /// The shared data directory `{data}` stands for [default: $LPMKIT_DATA, else
    /// ../shared/data].
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
}

/// One experiment file.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Experiment {
    name: String,
    paper: String,
    #[serde(rename = "figure")]
    figures: Vec<Figure>,
}

/// One figure or table of a paper.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Figure {
    id: String,
    title: String,
    /// What the paper shows (quoted in the report beside this machine's figures).
    paper: String,
    /// The command measured: `bench` (default), `updates` or `info`.
    #[serde(default = "default_command")]
    command: String,
    /// The words after `lpmkit COMMAND`; `{x}` is the swept value, `{each}` the second
    /// sweep's, `{data}` the data directory.
    args: Vec<String>,
    x: Axis,
    /// A second sweep (`{each}`), recorded as the field `each.field`.
    each: Option<Each>,
    /// The record field plotted (`mlps_median`, `memory_bytes`, `bytes_per_prefix`,
    /// `build_ms`).
    #[serde(default = "default_y")]
    y: String,
    /// The y axis' title, in words with its unit (default: the words for a known field,
    /// else the field `y`).
    y_label: Option<String>,
    /// The record field naming each series.
    #[serde(default = "default_series")]
    series: String,
    /// `line` or `bar`.
    #[serde(default = "default_kind")]
    kind: String,
    /// A logarithmic y axis, for values that span orders of magnitude.
    #[serde(default)]
    y_log: bool,
    /// Ratios the report states for this machine beside the paper's.
    #[serde(default)]
    ratios: Vec<Ratio>,
}

/// A ratio of two points or series of a figure: `of ÷ to`, each a series name (per x,
/// where both have a value) or `series@x` (one point), and the paper's own figure.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Ratio {
    of: String,
    to: String,
    /// The paper's ratio (with its conditions), quoted as it is.
    paper: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Axis {
    label: String,
    /// The swept values (`{x}`); none: one cell, x from `field`.
    #[serde(default)]
    values: Vec<String>,
    /// What the plot and the report call each of `values` (a table file's short name),
    /// in the same order; the values themselves where absent.
    #[serde(default)]
    names: Vec<String>,
    /// The record field on the x axis when the sweep is inside one invocation.
    field: Option<String>,
    /// `[label, field]` pairs: each record gives one point per field, at x = its label
    /// (`y` is then not used).
    #[serde(default)]
    fields: Vec<[String; 2]>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Each {
    /// The record field that holds the value (a series, usually).
    field: String,
    values: Vec<String>,
    /// What the plot and the report call each of `values` when they name a series, in the
    /// same order; the values themselves where absent.
    #[serde(default)]
    names: Vec<String>,
}

fn default_command() -> String {
    "bench".into()
}
fn default_y() -> String {
    "mlps_median".into()
}
fn default_series() -> String {
    "scheme".into()
}
fn default_kind() -> String {
    "line".into()
}

pub fn run(args: ExperimentArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        ExperimentCommand::List(a) => {
            for e in load_all(&a.file)? {
                outln!("{:<10} {}", e.name, e.paper);
                for f in &e.figures {
                    let cells = f.x.values.len().max(1);
                    outln!("  {}/{:<12} {} ({cells} cells)", e.name, f.id, f.title);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        ExperimentCommand::Run(a) => run_experiments(&a),
    }
}

/// The built-in experiments, then those of `files`.
fn load_all(files: &[PathBuf]) -> anyhow::Result<Vec<Experiment>> {
    let mut out = Vec::new();
    for (name, text) in BUILTIN {
        out.push(parse(text).with_context(|| format!("built-in experiment {name}"))?);
    }
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("cannot read {}", f.display()))?;
        out.push(parse(&text).with_context(|| format!("experiment file {}", f.display()))?);
    }
    Ok(out)
}

fn parse(text: &str) -> anyhow::Result<Experiment> {
    let e: Experiment = toml::from_str(text)?;
    for f in &e.figures {
        let sweeps = f.args.iter().any(|a| a.contains("{x}"));
        anyhow::ensure!(
            sweeps != f.x.values.is_empty(),
            "figure {}: `{{x}}` in args needs x.values, and x.values needs `{{x}}`",
            f.id
        );
        anyhow::ensure!(
            !f.x.values.is_empty() || f.x.field.is_some() || !f.x.fields.is_empty(),
            "figure {}: x needs values, a field or fields",
            f.id
        );
        anyhow::ensure!(
            f.x.names.is_empty() || f.x.names.len() == f.x.values.len(),
            "figure {}: x.names needs one name per x.values entry ({} names, {} values)",
            f.id,
            f.x.names.len(),
            f.x.values.len()
        );
        if let Some(e) = &f.each {
            anyhow::ensure!(
                e.names.is_empty() || e.names.len() == e.values.len(),
                "figure {}: each.names needs one name per each.values entry",
                f.id
            );
        }
        let each = f.args.iter().any(|a| a.contains("{each}"));
        anyhow::ensure!(
            each == f.each.is_some(),
            "figure {}: `{{each}}` in args needs `each`, and `each` needs `{{each}}`",
            f.id
        );
        anyhow::ensure!(
            ["bench", "updates", "info"].contains(&f.command.as_str()),
            "figure {}: command is `bench`, `updates` or `info`, not `{}`",
            f.id,
            f.command
        );
        anyhow::ensure!(
            f.kind == "line" || f.kind == "bar",
            "figure {}: kind is `line` or `bar`, not `{}`",
            f.id,
            f.kind
        );
    }
    Ok(e)
}

/// What this machine is, for every record.
fn machine() -> Value {
    let cpu = crate::bench::cpu_model();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| std::env::consts::OS.to_string());
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    serde_json::json!({
        "cpu": cpu,
        "avx2": lpmkit::simd::Avx2::detect().is_some(),
        "avx512": lpmkit::simd::Avx512::detect().is_some(),
        "cores": cores,
        "kernel": kernel,
        "lpmkit_commit": commit,
        "lpmkit_version": env!("CARGO_PKG_VERSION"),
        "date": today(),
    })
}

/// Today's date (UTC), `YYYY-MM-DD`.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Routes of every table under `--quick`: each table file becomes a synthetic table of this
/// many routes, and a synthetic table is cut to it.
const QUICK_ROUTES: u64 = 20_000;

/// The words of one cell: `{x}`, `{each}` and `{data}` filled in; small with `quick`.
fn cell_args(
    f: &Figure,
    x: Option<&str>,
    each: Option<&str>,
    data: &Path,
    quick: bool,
) -> Vec<String> {
    let data = data.display().to_string();
    let mut words: Vec<String> = f
        .args
        .iter()
        .map(|a| {
            let mut a = a.replace("{data}", &data);
            if let Some(x) = x {
                a = a.replace("{x}", x);
            }
            if let Some(e) = each {
                a = a.replace("{each}", e);
            }
            a
        })
        .collect();
    if quick {
        // What "small" means per command: (flag, its quick value).
        let small: &[(&str, &str)] = match f.command.as_str() {
            "updates" => &[
                ("--keys", "65536"),
                ("--limit", "5000"),
                ("--repeat", "1"),
                // A few interleaved rounds out of 5,000 changes.
                ("--segment-ms", "1"),
            ],
            "info" => &[("--profile-keys", "65536")],
            _ => &[("--keys", "65536"), ("--runs", "1")],
        };
        let canonical = |w: &str| {
            match w {
                "-k" => "--keys",
                "-r" => "--runs",
                "--search-steps" | "--spider-depth" => "--profile-keys",
                w => w,
            }
            .to_string()
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let w = canonical(&words[i]);
            let next = words.get(i + 1).cloned();
            match (w.as_str(), next) {
                ("-t" | "--table", Some(file)) => {
                    let family = if file.contains("ipv6") { "v6" } else { "v4" };
                    out.extend(["--synthetic", family, "--routes"].map(String::from));
                    out.push(QUICK_ROUTES.to_string());
                    i += 2;
                }
                // A synthetic table of the figure's own: no larger than the quick one.
                ("--routes", Some(v)) => {
                    let v = v
                        .parse::<u64>()
                        .map_or(QUICK_ROUTES, |v| v.min(QUICK_ROUTES));
                    out.extend(["--routes".to_string(), v.to_string()]);
                    i += 2;
                }
                // Only ever smaller: a figure's `--profile-keys 0` stays 0.
                (flag, Some(v)) if small.iter().any(|(f, _)| *f == flag) => {
                    let (_, q) = small.iter().find(|(f, _)| *f == flag).expect("found above");
                    match (v.parse::<u64>(), q.parse::<u64>()) {
                        (Ok(v), Ok(q)) if v < q => out.extend([flag.to_string(), v.to_string()]),
                        _ => out.extend([flag.to_string(), q.to_string()]),
                    }
                    i += 2;
                }
                _ => {
                    out.push(words[i].clone());
                    i += 1;
                }
            }
        }
        for (flag, value) in small {
            if !out.iter().any(|w| w == flag) {
                out.extend([flag.to_string(), value.to_string()]);
            }
        }
        words = out;
    }
    drop_unavailable_schemes(&mut words);
    words
}

/// Measures one cell: the records of `lpmkit COMMAND WORDS…`, and whether any is wrong (a
/// wrong answer, or a table that differs from the trie after a replay).
fn measure(command: &str, words: &[String]) -> anyhow::Result<(Vec<Value>, bool)> {
    Ok(match command {
        "updates" => {
            let r = updates::records_from_args(words)?;
            let wrong = r.iter().any(updates::wrong);
            (r.into_iter().map(Value::Object).collect(), wrong)
        }
        "info" => {
            let r = info::records_from_args(words)?;
            (r.into_iter().map(Value::Object).collect(), false)
        }
        _ => {
            let r = bench::records_from_args(words)?;
            let wrong = r.iter().any(bench::Record::wrong);
            let values = r
                .iter()
                .map(serde_json::to_value)
                .collect::<Result<_, _>>()?;
            (values, wrong)
        }
    })
}

/// Schemes this build does not register (`dpdk-fib` without the `dpdk` feature) are left
/// out of `-s` (and a `--baseline` naming one is dropped), with a note.
fn drop_unavailable_schemes(words: &mut Vec<String>) {
    let known = |s: &str| {
        s == "all"
            || lpmkit::registry::schemes()
                .iter()
                .any(|r| r.name.starts_with(s))
    };
    let mut out = Vec::with_capacity(words.len());
    let mut i = 0;
    while i < words.len() {
        let flag = words[i].as_str();
        let value = words.get(i + 1);
        match (flag, value) {
            ("-s" | "--schemes", Some(list)) => {
                let (kept, gone): (Vec<&str>, Vec<&str>) = list.split(',').partition(|s| known(s));
                if !gone.is_empty() {
                    eprintln!(
                        "note: not in this build, left out: {} (dpdk-fib needs `--features dpdk`)",
                        gone.join(", ")
                    );
                }
                out.push(words[i].clone());
                out.push(kept.join(","));
                i += 2;
            }
            ("--baseline", Some(b)) if !known(b) => i += 2,
            _ => {
                out.push(words[i].clone());
                i += 1;
            }
        }
    }
    *words = out;
}

fn run_experiments(a: &RunArgs) -> anyhow::Result<ExitCode> {
    let all = load_all(&a.file)?;
    // The figures asked for: (experiment, figure).
    let mut chosen: Vec<(&Experiment, &Figure)> = Vec::new();
    for name in &a.names {
        let (exp, fig) = match name.split_once('/') {
            Some((e, f)) => (e, Some(f)),
            None => (name.as_str(), None),
        };
        let exps: Vec<&Experiment> = if exp == "all" {
            all.iter().collect()
        } else {
            let e = all.iter().find(|e| e.name == exp).with_context(|| {
                let names: Vec<&str> = all.iter().map(|e| e.name.as_str()).collect();
                format!("no experiment `{exp}` (there are: {})", names.join(", "))
            })?;
            vec![e]
        };
        for e in exps {
            for f in &e.figures {
                if fig.is_none_or(|id| id == f.id) {
                    chosen.push((e, f));
                }
            }
        }
        if let Some(id) = fig {
            anyhow::ensure!(
                chosen.iter().any(|(e, f)| e.name == exp && f.id == id),
                "experiment `{exp}` has no figure `{id}`"
            );
        }
    }
    let out = a.out.clone().unwrap_or_else(|| {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from(format!("target/experiments/{secs}"))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let data = a.data.clone().unwrap_or_else(|| {
        std::env::var_os("LPMKIT_DATA")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("../shared/data"))
    });
    let jsonl = out.join("records.jsonl");
    let done: BTreeSet<String> = records::read_records(&jsonl)?
        .iter()
        .filter_map(|r| r.get("cell").and_then(Value::as_str).map(String::from))
        .collect();
    check_data(&chosen, &done, &data, a.quick)?;
    let machine = machine();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&jsonl)
        .with_context(|| format!("cannot open {}", jsonl.display()))?;
    // Every record so far, to reuse a measurement another figure's cell already made.
    let mut known = records::read_records(&jsonl)?;
    let total: usize = chosen.iter().map(|(_, f)| cells(f).len()).sum();
    let pb = crate::progress::bar(total as u64, "experiment cells".to_string());
    let mut failed = Vec::new();
    for (e, f) in &chosen {
        for (x, each) in cells(f) {
            let cell = cell_id(e, f, x, each);
            pb.inc(1);
            if done.contains(&cell) {
                continue;
            }
            let words = cell_args(f, x, each, &data, a.quick);
            let invocation = format!("lpmkit {} {}", f.command, words.join(" "));
            // The same words measured for another figure in this directory: reuse them.
            let mut same: Vec<Value> = Vec::new();
            for r in &known {
                if r.get("invocation").and_then(Value::as_str) == Some(invocation.as_str())
                    && (same.is_empty() || r.get("cell") == same[0].get("cell"))
                {
                    same.push(Value::Object(r.clone()));
                }
            }
            let reused = !same.is_empty();
            let records = if reused {
                pb.suspend(|| eprintln!("== {cell}: {invocation} (measured already)"));
                same
            } else {
                pb.suspend(|| eprintln!("== {cell}: {invocation}"));
                match pb.suspend(|| measure(&f.command, &words)) {
                    Ok((_, true)) => {
                        eprintln!(
                            "lpmkit: cell {cell}: a scheme returned wrong answers; not recorded"
                        );
                        failed.push(cell);
                        continue;
                    }
                    Ok((r, false)) => r,
                    Err(err) => {
                        eprintln!("lpmkit: cell {cell} failed: {err:#}");
                        failed.push(cell);
                        continue;
                    }
                }
            };
            for mut v in records {
                let m = v.as_object_mut().context("a record is an object")?;
                m.insert("invocation".into(), invocation.clone().into());
                if let (Some(each), Some(v)) = (&f.each, each) {
                    m.insert(each.field.clone(), v.into());
                }
                // A reused measurement keeps the machine (and build) that made it.
                let made_by = m.get("machine").cloned().filter(|_| reused);
                extend_record(m, e, f, &cell, x, made_by.as_ref().unwrap_or(&machine));
                writeln!(file, "{}", Value::Object(m.clone()))?;
                known.push(m.clone());
            }
            file.flush()?;
        }
    }
    pb.finish_and_clear();
    let records = records::read_records(&jsonl)?;
    self::records::write_csv(&out.join("records.csv"), &records)?;
    let mut report = String::new();
    report.push_str(&format!(
        "# lpmkit experiments\n\nThis run's machine: {}, {} cores, AVX2 {}, kernel {}; lpmkit {} ({}); {}.\n\
         Records: `records.jsonl`, `records.csv`. Made by `lpmkit experiment run {}{} --out {}` \
         (run again to resume).{}\n",
        machine["cpu"].as_str().unwrap_or("?"),
        machine["cores"],
        machine["avx2"],
        machine["kernel"].as_str().unwrap_or("?"),
        machine["lpmkit_version"].as_str().unwrap_or("?"),
        machine["lpmkit_commit"].as_str().unwrap_or("?"),
        machine["date"].as_str().unwrap_or("?"),
        a.names.join(" "),
        if a.quick { " --quick" } else { "" },
        out.display(),
        if a.quick {
            " **Quick run** (synthetic tables, 65,536 keys, one run): shapes only."
        } else {
            ""
        }
    ));
    report.push_str(&self::records::builds_line(&records));
    // The report covers every figure with records in `out` (measured by this run or an
    // earlier one), in the experiments' order, so that running one experiment into a
    // results directory keeps the others' figures.
    let has_records = |e: &Experiment, f: &Figure| {
        records.iter().any(|r| {
            r.get("experiment").and_then(Value::as_str) == Some(e.name.as_str())
                && r.get("figure").and_then(Value::as_str) == Some(f.id.as_str())
        })
    };
    let reported: Vec<(&Experiment, &Figure)> = all
        .iter()
        .flat_map(|e| e.figures.iter().map(move |f| (e, f)))
        .filter(|&(e, f)| {
            has_records(e, f)
                || chosen
                    .iter()
                    .any(|(ce, cf)| ce.name == e.name && cf.id == f.id)
        })
        .collect();
    for (e, f) in &reported {
        let mine: Vec<&Map<String, Value>> = records
            .iter()
            .filter(|r| {
                r.get("experiment").and_then(Value::as_str) == Some(e.name.as_str())
                    && r.get("figure").and_then(Value::as_str) == Some(f.id.as_str())
            })
            .collect();
        let svg = format!("{}-{}.svg", e.name, f.id);
        let series = plot::draw(&out.join(&svg), f, &mine, a.quick)?;
        report.push_str(&format!(
            "\n## {} {}: {}\n\n*Paper ({}):* {}\n\n{}\n\n![{}]({svg})\n\n{}{}\n",
            e.name,
            f.id,
            f.title,
            e.paper,
            f.paper,
            self::records::measured_on(&mine),
            f.title,
            plot::table(f, &mine, &series),
            plot::ratios(f, &series)
        ));
    }
    report.push_str(NOT_YET);
    std::fs::write(out.join("report.md"), report)?;
    eprintln!(
        "wrote {} records, {} plots and report.md to {}",
        records.len(),
        reported.len(),
        out.display()
    );
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "lpmkit: {} cells failed: {}",
            failed.len(),
            failed.join(", ")
        );
        Ok(ExitCode::from(1))
    }
}

/// Every data file the cells still to measure read (after `--quick` replaced the tables)
/// must be there: a missing one is an error naming it and the data directory, before
/// anything is measured.
fn check_data(
    chosen: &[(&Experiment, &Figure)],
    done: &BTreeSet<String>,
    data: &Path,
    quick: bool,
) -> anyhow::Result<()> {
    let mut missing = BTreeSet::new();
    for (e, f) in chosen {
        for (x, each) in cells(f) {
            let cell = cell_id(e, f, x, each);
            if done.contains(&cell) {
                continue;
            }
            let words = cell_args(f, x, each, data, quick);
            for w in words.iter().map(Path::new) {
                if w.starts_with(data) && !w.exists() {
                    missing.insert(w.display().to_string());
                }
            }
        }
    }
    anyhow::ensure!(
        missing.is_empty(),
        "missing data: {} (the data directory is {}: give --data DIR or set LPMKIT_DATA)",
        missing.into_iter().collect::<Vec<_>>().join(", "),
        data.display()
    );
    Ok(())
}

/// A cell's name in the records: `EXPERIMENT/FIGURE/X[/EACH]`.
fn cell_id(e: &Experiment, f: &Figure, x: Option<&str>, each: Option<&str>) -> String {
    let cell = format!("{}/{}/{}", e.name, f.id, x.unwrap_or("-"));
    match each {
        Some(v) => format!("{cell}/{v}"),
        None => cell,
    }
}

/// A figure's cells: every (x, each) value pair (`None` where the figure does not sweep).
fn cells(f: &Figure) -> Vec<(Option<&str>, Option<&str>)> {
    let xs: Vec<Option<&str>> = if f.x.values.is_empty() {
        vec![None]
    } else {
        f.x.values.iter().map(|v| Some(v.as_str())).collect()
    };
    let eachs: Vec<Option<&str>> = match &f.each {
        Some(e) => e.values.iter().map(|v| Some(v.as_str())).collect(),
        None => vec![None],
    };
    eachs
        .iter()
        .flat_map(|&e| xs.iter().map(move |&x| (x, e)))
        .collect()
}

/// Adds what a record means here: its cell, its x, derived fields, the machine.
fn extend_record(
    m: &mut Map<String, Value>,
    e: &Experiment,
    f: &Figure,
    cell: &str,
    x: Option<&str>,
    machine: &Value,
) {
    m.insert("experiment".into(), e.name.clone().into());
    m.insert("figure".into(), f.id.clone().into());
    m.insert("command".into(), f.command.clone().into());
    m.insert("cell".into(), cell.into());
    let xv = match (x, &f.x.field) {
        (Some(x), _) => Value::from(x),
        (None, Some(field)) => m.get(field).cloned().unwrap_or(Value::Null),
        (None, None) => Value::Null,
    };
    m.insert("x".into(), xv);
    let routes = m.get("routes").and_then(Value::as_f64).unwrap_or(0.0);
    let bytes = m.get("memory_bytes").and_then(Value::as_f64).unwrap_or(0.0);
    if routes > 0.0 {
        m.insert("bytes_per_prefix".into(), (bytes / routes).into());
    }
    m.insert("machine".into(), machine.clone());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_experiment_parses() {
        let all = load_all(&[]).unwrap();
        assert_eq!(all.len(), BUILTIN.len());
        for e in &all {
            assert!(!e.figures.is_empty(), "{}", e.name);
        }
    }

    #[test]
    fn quick_cells_are_small_and_synthetic() {
        let e = parse(BUILTIN[3].1).unwrap();
        let f = &e.figures[0];
        let w = cell_args(
            f,
            f.x.values.first().map(String::as_str),
            None,
            Path::new("/d"),
            true,
        );
        assert!(w.windows(2).any(|p| p[0] == "--synthetic"), "{w:?}");
        assert!(w.windows(2).any(|p| p == ["--keys", "65536"]), "{w:?}");
        assert!(w.windows(2).any(|p| p == ["--runs", "1"]), "{w:?}");
        assert!(!w.iter().any(|a| a.contains("{x}") || a.contains("{data}")));
    }

    #[test]
    fn quick_cuts_synthetic_tables() {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == "large").unwrap();
        let e = parse(text).unwrap();
        for f in &e.figures {
            for x in &f.x.values {
                let full = cell_args(f, Some(x), None, Path::new("/d"), false);
                assert!(
                    full.windows(2).any(|p| p == ["--routes", x.as_str()]),
                    "{full:?}"
                );
                let w = cell_args(f, Some(x), None, Path::new("/d"), true);
                let routes: Vec<u64> = w
                    .windows(2)
                    .filter(|p| p[0] == "--routes")
                    .map(|p| p[1].parse().unwrap())
                    .collect();
                assert_eq!(routes, [QUICK_ROUTES], "{w:?}");
            }
        }
    }

    #[test]
    fn bad_files_are_errors() {
        for bad in [
            "name = \"x\"\npaper = \"p\"\n[[figure]]\nid = \"a\"\ntitle = \"t\"\npaper = \"p\"\n\
             args = [\"-s\", \"trie\", \"--pattern\", \"{x}\"]\nx = { label = \"l\" }\n",
            "name = \"x\"\npaper = \"p\"\n[[figure]]\nid = \"a\"\ntitle = \"t\"\npaper = \"p\"\n\
             args = [\"-s\", \"trie\"]\nx = { label = \"l\", field = \"threads\" }\nkind = \"pie\"\n",
            "name = \"x\"\npaper = \"p\"\nbogus = 1\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(today().len(), 10);
    }
}

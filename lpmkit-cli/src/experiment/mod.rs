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

mod cells;
mod plot;
mod records;
mod report;
mod spec;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use serde_json::Value;

use crate::output::outln;
use spec::{load_all, Experiment, Figure};

/// What the papers show that these experiments do not measure (the report says so).
const NOT_YET: &str = "\n## Not measured by these experiments\n\n\
* Spider Fig. 9's trace keys: a packet trace (CAIDA-like address list) is not in \
the data set; the figure has uniform, Zipf and repeated keys.\n\
* PNG copies of the plots: the SVGs are drawn without a font library; a PNG needs a \
raster and font stack the project does not carry.\n";

/// The experiments shipped with lpmkit, one per paper (file name, text).
const BUILTIN: &[(&str, &str)] = &[
    ("spider", include_str!("../../experiments/spider.toml")),
    ("dxr", include_str!("../../experiments/dxr.toml")),
    ("obma", include_str!("../../experiments/obma.toml")),
    ("bloomfwd", include_str!("../../experiments/bloomfwd.toml")),
    ("lpmkit", include_str!("../../experiments/lpmkit.toml")),
    ("large", include_str!("../../experiments/large.toml")),
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

/// What every cell of one `experiment run` shares.
struct Run<'a> {
    /// The data directory `{data}` stands for.
    data: &'a Path,
    quick: bool,
    /// This machine, for every record measured.
    machine: &'a Value,
}

fn run_experiments(a: &RunArgs) -> anyhow::Result<ExitCode> {
    let all = load_all(&a.file)?;
    let chosen = choose(&all, &a.names)?;
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
    // Every record so far: its cells are not measured again, and a measurement another
    // figure's cell already made is reused.
    let mut known = records::read_records(&jsonl)?;
    let done: BTreeSet<String> = known
        .iter()
        .filter_map(|r| r.get("cell").and_then(Value::as_str).map(String::from))
        .collect();
    cells::check_data(&chosen, &done, &data, a.quick)?;
    let machine = machine();
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&jsonl)
        .with_context(|| format!("cannot open {}", jsonl.display()))?;
    let run = Run {
        data: &data,
        quick: a.quick,
        machine: &machine,
    };
    let failed = cells::measure_cells(&chosen, &done, &run, &mut file, &mut known)?;
    let records = records::read_records(&jsonl)?;
    records::write_csv(&out.join("records.csv"), &records)?;
    let plots = report::write(&out, &all, &chosen, &records, a, &machine)?;
    eprintln!(
        "wrote {} records, {plots} plots and report.md to {}",
        records.len(),
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

/// The figures `names` ask for (`all`, `EXPERIMENT` or `EXPERIMENT/FIGURE`), in order.
fn choose<'a>(
    all: &'a [Experiment],
    names: &[String],
) -> anyhow::Result<Vec<(&'a Experiment, &'a Figure)>> {
    let mut chosen: Vec<(&Experiment, &Figure)> = Vec::new();
    for name in names {
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
    Ok(chosen)
}

#[cfg(test)]
mod tests {
    use super::cells::{cell_args, QUICK_ROUTES};
    use super::spec::parse;
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

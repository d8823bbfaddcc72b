//! An experiment's cells: the words of each (`{x}`, `{each}` and `{data}` filled in, small
//! with `--quick`), measured in this process, and the fields a record gains in the results.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value};

use super::spec::{Experiment, Figure};
use super::Run;
use crate::{bench, info, updates};

/// Measures every cell of `chosen` not in `done`, appending its records to `file` (and to
/// `known`) as it goes; returns the cells that failed (an error, or a wrong answer: not
/// recorded). A cell whose words another figure's cell measured already reuses its
/// records.
pub(super) fn measure_cells(
    chosen: &[(&Experiment, &Figure)],
    done: &BTreeSet<String>,
    run: &Run<'_>,
    file: &mut std::fs::File,
    known: &mut Vec<Map<String, Value>>,
) -> anyhow::Result<Vec<String>> {
    let total: usize = chosen.iter().map(|(_, f)| cells(f).len()).sum();
    let pb = crate::progress::bar(total as u64, "experiment cells".to_string());
    let mut failed = Vec::new();
    for (e, f) in chosen {
        for (x, each) in cells(f) {
            let cell = cell_id(e, f, x, each);
            pb.inc(1);
            if done.contains(&cell) {
                continue;
            }
            let words = cell_args(f, x, each, run.data, run.quick);
            let invocation = format!("lpmkit {} {}", f.command, words.join(" "));
            // The same words measured for another figure in this directory: reuse them.
            let mut same: Vec<Value> = Vec::new();
            for r in known.iter() {
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
                extend_record(m, e, f, &cell, x, made_by.as_ref().unwrap_or(run.machine));
                writeln!(file, "{}", Value::Object(m.clone()))?;
                known.push(m.clone());
            }
            file.flush()?;
        }
    }
    pb.finish_and_clear();
    Ok(failed)
}

/// Routes of every table under `--quick`: each table file becomes a synthetic table of this
/// many routes, and a synthetic table is cut to it.
pub(super) const QUICK_ROUTES: u64 = 20_000;

/// The words of one cell: `{x}`, `{each}` and `{data}` filled in; small with `quick`.
pub(super) fn cell_args(
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

/// Every data file the cells still to measure read (after `--quick` replaced the tables)
/// must be there: a missing one is an error naming it and the data directory, before
/// anything is measured.
pub(super) fn check_data(
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
pub(super) fn cell_id(e: &Experiment, f: &Figure, x: Option<&str>, each: Option<&str>) -> String {
    let cell = format!("{}/{}/{}", e.name, f.id, x.unwrap_or("-"));
    match each {
        Some(v) => format!("{cell}/{v}"),
        None => cell,
    }
}

/// A figure's cells: every (x, each) value pair (`None` where the figure does not sweep).
pub(super) fn cells(f: &Figure) -> Vec<(Option<&str>, Option<&str>)> {
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

//! `report.md`: the run's machine, then every figure with records in the output directory
//! (its plot, its table, the ratios beside the paper's), in the experiments' order.

use std::path::Path;

use serde_json::{Map, Value};

use super::spec::{Experiment, Figure};
use super::{plot, records, RunArgs, NOT_YET};

/// Writes one SVG per reported figure and `out/report.md`; returns the number of figures.
pub(super) fn write(
    out: &Path,
    all: &[Experiment],
    chosen: &[(&Experiment, &Figure)],
    records: &[Map<String, Value>],
    a: &RunArgs,
    machine: &Value,
) -> anyhow::Result<usize> {
    let mut report = header(out, a, machine);
    report.push_str(&records::builds_line(records));
    // The report covers every figure with records in `out` (measured by this run or an
    // earlier one), in the experiments' order, so that running one experiment into a
    // results directory keeps the others' figures.
    let of_figure = |r: &Map<String, Value>, e: &Experiment, f: &Figure| {
        r.get("experiment").and_then(Value::as_str) == Some(e.name.as_str())
            && r.get("figure").and_then(Value::as_str) == Some(f.id.as_str())
    };
    let reported: Vec<(&Experiment, &Figure)> = all
        .iter()
        .flat_map(|e| e.figures.iter().map(move |f| (e, f)))
        .filter(|&(e, f)| {
            records.iter().any(|r| of_figure(r, e, f))
                || chosen
                    .iter()
                    .any(|(ce, cf)| ce.name == e.name && cf.id == f.id)
        })
        .collect();
    for (e, f) in &reported {
        let mine: Vec<&Map<String, Value>> =
            records.iter().filter(|r| of_figure(r, e, f)).collect();
        let svg = format!("{}-{}.svg", e.name, f.id);
        let series = plot::draw(&out.join(&svg), f, &mine, a.quick)?;
        report.push_str(&format!(
            "\n## {} {}: {}\n\n*Paper ({}):* {}\n\n{}\n\n![{}]({svg})\n\n{}{}\n",
            e.name,
            f.id,
            f.title,
            e.paper,
            f.paper,
            records::measured_on(&mine),
            f.title,
            plot::table(f, &mine, &series),
            plot::ratios(f, &series)
        ));
    }
    report.push_str(NOT_YET);
    std::fs::write(out.join("report.md"), report)?;
    Ok(reported.len())
}

/// The report's title and its first paragraph: this run's machine and command.
fn header(out: &Path, a: &RunArgs, machine: &Value) -> String {
    format!(
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
    )
}

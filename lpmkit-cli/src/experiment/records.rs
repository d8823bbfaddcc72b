//! The runner's records on disk: `records.jsonl` read back (a resumed run), `records.csv`
//! written from them, and the report's line on the builds that measured them.

use std::path::Path;

use anyhow::Context;
use serde_json::{Map, Value};

/// The records of a `records.jsonl` (none if it does not exist); a line that is not a
/// JSON object is an error naming it.
pub(super) fn read_records(path: &Path) -> anyhow::Result<Vec<Map<String, Value>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => out.push(m),
            // An interrupted write leaves a cut last line: measured again.
            Err(_) if i + 1 == text.lines().count() => {
                eprintln!("note: {}: line {} is cut; ignored", path.display(), i + 1)
            }
            _ => anyhow::bail!("{}: line {} is not a record", path.display(), i + 1),
        }
    }
    Ok(out)
}

/// One CSV row per record: its scalar fields (machine fields prefixed `machine_`).
pub(super) fn write_csv(path: &Path, records: &[Map<String, Value>]) -> anyhow::Result<()> {
    let flat: Vec<Map<String, Value>> = records
        .iter()
        .map(|r| {
            let mut f = Map::new();
            for (k, v) in r {
                match v {
                    Value::Object(inner) => {
                        for (k2, v2) in inner {
                            f.insert(format!("{k}_{k2}"), v2.clone());
                        }
                    }
                    Value::Array(_) => {
                        f.insert(k.clone(), Value::from(v.to_string()));
                    }
                    _ => {
                        f.insert(k.clone(), v.clone());
                    }
                }
            }
            f
        })
        .collect();
    let mut cols: Vec<String> = Vec::new();
    for r in &flat {
        for k in r.keys() {
            if !cols.contains(k) {
                cols.push(k.clone());
            }
        }
    }
    let cell = |v: Option<&Value>| -> String {
        let s = match v {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        if s.contains([',', '"', '\n']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s
        }
    };
    let mut text = cols.join(",") + "\n";
    for r in &flat {
        let row: Vec<String> = cols.iter().map(|c| cell(r.get(c))).collect();
        text += &(row.join(",") + "\n");
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// The report's lines naming the builds and the CPUs of the records when more than one
/// made them (a resumed run, or figures measured again on another machine); empty when
/// one build on one CPU measured them all.
pub(super) fn builds_line(records: &[Map<String, Value>]) -> String {
    let mut out = String::new();
    if let Some(list) = several(records, commit) {
        out.push_str(&format!(
            "Records measured by more than one build (a resumed run), commit (records): {list}; \
             each record names its own in `machine.lpmkit_commit`.\n"
        ));
    }
    if let Some(list) = several(records, cpu) {
        out.push_str(&format!(
            "Records measured on more than one CPU, CPU (records): {list}; each record names \
             its own in `machine`, and each figure the CPUs of its records.\n"
        ));
    }
    out
}

/// A figure's line naming the CPUs and builds that measured its records.
pub(super) fn measured_on(records: &[&Map<String, Value>]) -> String {
    let list = |of: fn(&Map<String, Value>) -> String| {
        let seen = distinct(records.iter().copied(), of);
        let names: Vec<&str> = seen.iter().map(|(v, _)| v.as_str()).collect();
        names.join("; ")
    };
    format!("*Measured on:* {}; lpmkit {}.", list(cpu), list(commit))
}

/// The build that measured a record.
fn commit(r: &Map<String, Value>) -> String {
    let m = r.get("machine");
    let c = m
        .and_then(|m| m.get("lpmkit_commit"))
        .and_then(Value::as_str);
    c.unwrap_or("?").to_string()
}

/// The CPU that measured a record, with its widest vector extension.
fn cpu(r: &Map<String, Value>) -> String {
    let m = r.get("machine");
    let name = m.and_then(|m| m.get("cpu")).and_then(Value::as_str);
    let has = |isa: &str| m.and_then(|m| m.get(isa)).and_then(Value::as_bool) == Some(true);
    let isa = if has("avx512") {
        ", AVX-512"
    } else if has("avx2") {
        ", AVX2"
    } else {
        ""
    };
    format!("{}{isa}", name.unwrap_or("?"))
}

/// The distinct values `of` the records with their counts, in order of first appearance,
/// when there are several.
fn several(
    records: &[Map<String, Value>],
    of: fn(&Map<String, Value>) -> String,
) -> Option<String> {
    let seen = distinct(records.iter(), of);
    (seen.len() > 1).then(|| {
        let list: Vec<String> = seen.iter().map(|(v, n)| format!("{v} ({n})")).collect();
        list.join(", ")
    })
}

/// The distinct values `of` the records with their counts, in order of first appearance.
fn distinct<'a>(
    records: impl Iterator<Item = &'a Map<String, Value>>,
    of: fn(&Map<String, Value>) -> String,
) -> Vec<(String, usize)> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    for r in records {
        let v = of(r);
        match seen.iter_mut().find(|(k, _)| *k == v) {
            Some((_, n)) => *n += 1,
            None => seen.push((v, 1)),
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(cpu: &str, avx512: bool, commit: &str) -> Map<String, Value> {
        let r = serde_json::json!({
            "machine": { "cpu": cpu, "avx2": true, "avx512": avx512, "lpmkit_commit": commit }
        });
        r.as_object().cloned().unwrap()
    }

    #[test]
    fn figures_and_report_name_their_cpus_and_builds() {
        let zen5 = record("AMD EPYC", true, "f5beb39");
        let zen3 = record("AMD EPYC (family 25, model 1)", false, "4c2fb5a");
        assert_eq!(
            measured_on(&[&zen5, &zen5]),
            "*Measured on:* AMD EPYC, AVX-512; lpmkit f5beb39."
        );
        assert_eq!(builds_line(&[zen5.clone(), zen5.clone()]), "");
        let both = builds_line(&[zen5.clone(), zen3.clone(), zen3.clone()]);
        assert!(
            both.contains("commit (records): f5beb39 (1), 4c2fb5a (2);"),
            "{both}"
        );
        assert!(
            both.contains(
                "CPU (records): AMD EPYC, AVX-512 (1), AMD EPYC (family 25, model 1), AVX2 (2);"
            ),
            "{both}"
        );
        assert_eq!(
            measured_on(&[&zen5, &zen3]),
            "*Measured on:* AMD EPYC, AVX-512; AMD EPYC (family 25, model 1), AVX2; lpmkit f5beb39; 4c2fb5a."
        );
    }
}

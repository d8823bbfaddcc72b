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

/// The report's line naming the builds of a resumed run's records (empty when one build
/// measured them all).
pub(super) fn builds_line(records: &[Map<String, Value>]) -> String {
    let mut commits: Vec<(String, usize)> = Vec::new();
    for r in records {
        let c = r
            .get("machine")
            .and_then(|m| m.get("lpmkit_commit"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        match commits.iter_mut().find(|(k, _)| k == c) {
            Some((_, n)) => *n += 1,
            None => commits.push((c.to_string(), 1)),
        }
    }
    if commits.len() < 2 {
        return String::new();
    }
    let list: Vec<String> = commits.iter().map(|(c, n)| format!("{c} ({n})")).collect();
    format!(
        "Records measured by more than one build (a resumed run), commit (records): {}; \
         each record names its own in `machine.lpmkit_commit`.\n",
        list.join(", ")
    )
}

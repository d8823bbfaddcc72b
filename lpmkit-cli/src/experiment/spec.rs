//! An experiment file: its figures, each a command's words swept over `{x}` (and `{each}`),
//! with the axes and series of the plot it draws; parsed and checked.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use super::BUILTIN;

/// One experiment file.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct Experiment {
    pub(super) name: String,
    pub(super) paper: String,
    #[serde(rename = "figure")]
    pub(super) figures: Vec<Figure>,
}

/// One figure or table of a paper.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct Figure {
    pub(super) id: String,
    pub(super) title: String,
    /// What the paper shows (quoted in the report beside this machine's figures).
    pub(super) paper: String,
    /// The command measured: `bench` (default), `updates` or `info`.
    #[serde(default = "default_command")]
    pub(super) command: String,
    /// The words after `lpmkit COMMAND`; `{x}` is the swept value, `{each}` the second
    /// sweep's, `{data}` the data directory.
    pub(super) args: Vec<String>,
    pub(super) x: Axis,
    /// A second sweep (`{each}`), recorded as the field `each.field`.
    pub(super) each: Option<Each>,
    /// The record field plotted (`mlps_median`, `memory_bytes`, `bytes_per_prefix`,
    /// `build_ms`).
    #[serde(default = "default_y")]
    pub(super) y: String,
    /// The y axis' title, in words with its unit (default: the words for a known field,
    /// else the field `y`).
    pub(super) y_label: Option<String>,
    /// The record field naming each series.
    #[serde(default = "default_series")]
    pub(super) series: String,
    /// `line` or `bar`.
    #[serde(default = "default_kind")]
    pub(super) kind: String,
    /// A logarithmic y axis, for values that span orders of magnitude.
    #[serde(default)]
    pub(super) y_log: bool,
    /// Ratios the report states for this machine beside the paper's.
    #[serde(default)]
    pub(super) ratios: Vec<Ratio>,
}

/// A ratio of two points or series of a figure: `of ÷ to`, each a series name (per x,
/// where both have a value) or `series@x` (one point), and the paper's own figure.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct Ratio {
    pub(super) of: String,
    pub(super) to: String,
    /// The paper's ratio (with its conditions), quoted as it is.
    pub(super) paper: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct Axis {
    pub(super) label: String,
    /// The swept values (`{x}`); none: one cell, x from `field`.
    #[serde(default)]
    pub(super) values: Vec<String>,
    /// What the plot and the report call each of `values` (a table file's short name),
    /// in the same order; the values themselves where absent.
    #[serde(default)]
    pub(super) names: Vec<String>,
    /// The record field on the x axis when the sweep is inside one invocation.
    pub(super) field: Option<String>,
    /// `[label, field]` pairs: each record gives one point per field, at x = its label
    /// (`y` is then not used).
    #[serde(default)]
    pub(super) fields: Vec<[String; 2]>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub(super) struct Each {
    /// The record field that holds the value (a series, usually).
    pub(super) field: String,
    pub(super) values: Vec<String>,
    /// What the plot and the report call each of `values` when they name a series, in the
    /// same order; the values themselves where absent.
    #[serde(default)]
    pub(super) names: Vec<String>,
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

/// The built-in experiments, then those of `files`.
pub(super) fn load_all(files: &[PathBuf]) -> anyhow::Result<Vec<Experiment>> {
    let mut out = Vec::new();
    for (name, text) in BUILTIN {
        out.push(parse(text).with_context(|| format!("built-in experiment {name}"))?);
    }
    for f in files {
        let text = read_file(f)?;
        out.push(parse(&text).with_context(|| format!("experiment file {}", f.display()))?);
    }
    Ok(out)
}

/// The most an experiment file may hold (the built-in ones are a few kilobytes).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// An experiment file's text, read in bounded memory: a file over [`MAX_FILE_BYTES`] or
/// one that is not text (a NUL byte, bytes that are not UTF-8) is refused, naming the
/// file and the offset.
fn read_file(f: &Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(f).with_context(|| format!("cannot read {}", f.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", f.display()))?;
    let not_text = |at: usize| {
        anyhow::anyhow!(
            "experiment file {}: byte offset {at}: binary data, not TOML text",
            f.display()
        )
    };
    // The first byte that is not text: a NUL, or one that is not UTF-8 (a character cut
    // by the limit is not one: the file is too long then).
    let utf8 = match std::str::from_utf8(&bytes) {
        Err(e) if e.error_len().is_some() || bytes.len() as u64 <= MAX_FILE_BYTES => {
            e.valid_up_to()
        }
        _ => bytes.len(),
    };
    let nul = bytes[..utf8].iter().position(|&b| b == 0);
    if let Some(at) = nul.or((utf8 < bytes.len()).then_some(utf8)) {
        return Err(not_text(at));
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        anyhow::bail!(
            "experiment file {}: longer than {MAX_FILE_BYTES} bytes (an experiment is a short TOML text)",
            f.display()
        );
    }
    String::from_utf8(bytes).map_err(|e| not_text(e.utf8_error().valid_up_to()))
}

pub(super) fn parse(text: &str) -> anyhow::Result<Experiment> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_not_short_text_are_refused_with_the_offset() {
        let dir = std::env::temp_dir().join(format!("lpmkit-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("e.toml");
        let mut long = "#".repeat(MAX_FILE_BYTES as usize - 1);
        long.push('é');
        for (bytes, want) in [
            (
                &b"[[figure]]\n\xffx\0"[..],
                Err("byte offset 11: binary data"),
            ),
            (
                &b"[[figure]]\nx\0\xff"[..],
                Err("byte offset 12: binary data"),
            ),
            (&b"a = 1\n\xc3"[..], Err("byte offset 6: binary data")),
            (long.as_bytes(), Err("longer than 1048576 bytes")),
            ("# é\n".as_bytes(), Ok("# é\n")),
        ] {
            std::fs::write(&f, bytes).unwrap();
            match (read_file(&f), want) {
                (Ok(text), Ok(w)) => assert_eq!(text, w),
                (Err(e), Err(w)) => assert!(e.to_string().contains(w), "{e}"),
                (got, _) => panic!("{bytes:?}: {got:?}"),
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

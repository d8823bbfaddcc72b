//! A figure's SVG (plotters' SVG backend: no font library needed) and its Markdown table.

use plotters::style::RGBColor;
use serde_json::{Map, Value};

use super::spec::Figure;

mod svg;

pub(super) use svg::draw;

/// Series colours (colour-blind-safe Okabe–Ito, then greys).
const COLOURS: [RGBColor; 10] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
    RGBColor(120, 120, 120),
    RGBColor(180, 180, 180),
];

/// A value as the label it shows.
fn label(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".into(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// Field `path` of a record; `a.b` reads field `b` of object `a` (`cycles_per_16.p50`).
fn field<'a>(r: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    let mut parts = path.split('.');
    let mut v = r.get(parts.next()?)?;
    for p in parts {
        v = v.get(p)?;
    }
    Some(v)
}

/// The figure's points: x categories and series in order of first appearance, and
/// `(series, x, y)`; a later record for the same point wins. `lo`/`hi` hold the spread of
/// the runs behind a point (the least and the greatest), where the records carry it;
/// `roof` what the memory system allows at that point (`bench`'s `roof_read_mlps`), for
/// figures of lookup rates.
#[derive(Clone)]
pub(super) struct Points {
    pub xs: Vec<String>,
    pub series: Vec<String>,
    pub ys: Vec<Vec<Option<f64>>>,
    pub lo: Vec<Vec<Option<f64>>>,
    pub hi: Vec<Vec<Option<f64>>>,
    pub roof: Vec<Vec<Option<f64>>>,
}

/// The field a figure of this y field shows its roofline from, if any.
fn roof_field(y: &str) -> Option<&'static str> {
    (y == "mlps_median").then_some("roof_read_mlps")
}

/// The runs behind the figure at `path`, if the record carries them: `<stem>_runs` for a
/// `<stem>_median` field (`mlps_runs` for `mlps_median`), else `<path>_runs`; returns
/// their least and greatest value.
fn spread(r: &Map<String, Value>, path: &str) -> Option<(f64, f64)> {
    let runs = path
        .strip_suffix("_median")
        .and_then(|stem| field(r, &format!("{stem}_runs")))
        .or_else(|| field(r, &format!("{path}_runs")))?
        .as_array()?;
    let vals: Vec<f64> = runs.iter().filter_map(Value::as_f64).collect();
    if vals.len() < 2 {
        return None;
    }
    let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((lo, hi))
}

/// What the plot calls the record value `x` of figure `f`: its `x.names` entry if it has
/// one.
fn x_name(f: &Figure, x: String) -> String {
    match f.x.values.iter().position(|v| *v == x) {
        Some(i) if i < f.x.names.len() => f.x.names[i].clone(),
        _ => x,
    }
}

/// What the plot calls the series value `s` of figure `f`: its `each.names` entry when the
/// series is the second sweep's field and it has one.
fn series_name(f: &Figure, s: String) -> String {
    match &f.each {
        Some(e) if e.field == f.series => match e.values.iter().position(|v| *v == s) {
            Some(i) if i < e.names.len() => e.names[i].clone(),
            _ => s,
        },
        _ => s,
    }
}

pub(super) fn points(f: &Figure, recs: &[&Map<String, Value>]) -> Points {
    let mut p = Points {
        xs: Vec::new(),
        series: Vec::new(),
        ys: Vec::new(),
        lo: Vec::new(),
        hi: Vec::new(),
        roof: Vec::new(),
    };
    for r in recs {
        let roof =
            f.x.fields
                .is_empty()
                .then_some(())
                .and_then(|()| field(r, roof_field(&f.y)?)?.as_f64());
        let s = series_name(f, label(field(r, &f.series)));
        // (x, y, spread) of this record: one point, or one per field of `x.fields`.
        type Point = (String, f64, Option<(f64, f64)>);
        let xy: Vec<Point> = if f.x.fields.is_empty() {
            field(r, &f.y)
                .and_then(Value::as_f64)
                .map(|y| (x_name(f, label(r.get("x"))), y, spread(r, &f.y)))
                .into_iter()
                .collect()
        } else {
            f.x.fields
                .iter()
                .filter_map(|[l, path]| {
                    Some((l.clone(), field(r, path)?.as_f64()?, spread(r, path)))
                })
                .collect()
        };
        for (x, y, sp) in xy {
            let xi = p.xs.iter().position(|v| *v == x).unwrap_or_else(|| {
                p.xs.push(x);
                p.xs.len() - 1
            });
            let si = p.series.iter().position(|v| *v == s).unwrap_or_else(|| {
                p.series.push(s.clone());
                p.ys.push(Vec::new());
                p.lo.push(Vec::new());
                p.hi.push(Vec::new());
                p.roof.push(Vec::new());
                p.series.len() - 1
            });
            for row in [&mut p.ys[si], &mut p.lo[si], &mut p.hi[si], &mut p.roof[si]] {
                if row.len() <= xi {
                    row.resize(xi + 1, None);
                }
            }
            p.ys[si][xi] = Some(y);
            p.lo[si][xi] = sp.map(|s| s.0);
            p.hi[si][xi] = sp.map(|s| s.1);
            p.roof[si][xi] = roof;
        }
    }
    for rows in [&mut p.ys, &mut p.lo, &mut p.hi, &mut p.roof] {
        for row in rows.iter_mut() {
            row.resize(p.xs.len(), None);
        }
    }
    p
}

/// The figure's caption line under its title: where and when its records were measured
/// (every distinct CPU and date), and what the whiskers are.
fn caption(recs: &[&Map<String, Value>], p: &Points, kind: &str, quick: bool) -> String {
    let distinct = |key: &str| -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        for r in recs {
            if let Some(s) = r.get("machine").and_then(|m| m.get(key)) {
                let s = label(Some(s));
                if !v.contains(&s) {
                    v.push(s);
                }
            }
        }
        v
    };
    let cores = distinct("cores");
    let mut parts = vec![distinct("cpu").join(" / ")];
    if let [c] = &cores[..] {
        parts.push(format!("{c} {}", if c == "1" { "core" } else { "cores" }));
    }
    let mut dates = distinct("date");
    dates.sort();
    parts.push(match &dates[..] {
        [] => String::new(),
        [d] => d.clone(),
        [first, .., last] => format!("{first} to {last}"),
    });
    if p.lo.iter().flatten().any(Option::is_some) {
        parts.push("medians; whiskers: the range of the runs".into());
    }
    if p.roof.iter().flatten().any(Option::is_some) {
        parts.push(
            if kind == "bar" {
                "grey ticks"
            } else {
                "dashed"
            }
            .to_string()
                + ": one random read per key into an array of the scheme's size",
        );
    }
    if quick {
        parts.push("quick run (synthetic tables, one run): shapes only".into());
    }
    parts.retain(|s| !s.is_empty());
    parts.join("  ·  ")
}

/// `p` with x and series swapped.
fn transposed(p: &Points) -> Points {
    let flip = |rows: &[Vec<Option<f64>>]| -> Vec<Vec<Option<f64>>> {
        (0..p.xs.len())
            .map(|xi| rows.iter().map(|row| row[xi]).collect())
            .collect()
    };
    Points {
        xs: p.series.clone(),
        series: p.xs.clone(),
        ys: flip(&p.ys),
        lo: flip(&p.lo),
        hi: flip(&p.hi),
        roof: flip(&p.roof),
    }
}

/// A number as a tick label or a table cell: SI prefixes (`16 M`, `250 k`, `1.5 G`) and at
/// most three significant digits, no trailing zeros (`0.25`, `3.5`, `120`).
pub(super) fn si(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v == 0.0 { "0".into() } else { v.to_string() };
    }
    let (scaled, prefix) = match v.abs() {
        a if a >= 1e12 => (v / 1e12, " T"),
        a if a >= 1e9 => (v / 1e9, " G"),
        a if a >= 1e6 => (v / 1e6, " M"),
        a if a >= 1e4 => (v / 1e3, " k"),
        _ => (v, ""),
    };
    // Three significant digits (four for 1,000..9,999, which stay unprefixed).
    let digits = scaled.abs().log10().floor() as i32 + 1;
    let decimals = (3 - digits).clamp(0, 6) as usize;
    let mut s = format!("{scaled:.decimals$}");
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s + prefix
}

/// The points as a Markdown table: one row per series, one column per x.
pub(super) fn table(f: &Figure, _recs: &[&Map<String, Value>], p: &Points) -> String {
    if p.series.is_empty() {
        return "(no records)\n".into();
    }
    if one_series_per_x(p) {
        // One value per series.
        let mut t = format!("| {} | {} |\n|---|---:|\n", f.series, y_name(f));
        for (si, s) in p.series.iter().enumerate() {
            let y = p.ys[si]
                .iter()
                .flatten()
                .next()
                .copied()
                .unwrap_or(f64::NAN);
            let roof = p.roof[si].iter().flatten().next().copied();
            t += &format!("| {s} | {}{} |\n", fmt_y(y), share(y, roof));
        }
        return t;
    }
    let mut t = format!("| {} \\ {} |", f.series, f.x.label);
    for x in &p.xs {
        t += &format!(" {x} |");
    }
    t += "\n|---|";
    t += &"---:|".repeat(p.xs.len());
    t += "\n";
    for (si, s) in p.series.iter().enumerate() {
        t += &format!("| {s} |");
        for (y, roof) in p.ys[si].iter().zip(&p.roof[si]) {
            match y {
                Some(y) => t += &format!(" {}{} |", fmt_y(*y), share(*y, *roof)),
                None => t += " |",
            }
        }
        t += "\n";
    }
    t += &format!("\n(y: {}", y_name(f));
    if p.roof.iter().flatten().any(Option::is_some) {
        t += "; in brackets, the share of one random read per key into an array of the \
              scheme's size, measured beside it: what the memory system allows";
    }
    t += ")\n";
    t
}

/// ` (N %)`: `y` as a share of the roofline `roof`, where there is one.
fn share(y: f64, roof: Option<f64>) -> String {
    match roof {
        Some(r) if r > 0.0 => format!(" ({:.0} %)", 100.0 * y / r),
        _ => String::new(),
    }
}

/// The figure's ratios as a Markdown table: the paper's beside this machine's (per x
/// where a ratio names two series; `-` where a point is missing).
pub(super) fn ratios(f: &Figure, p: &Points) -> String {
    if f.ratios.is_empty() {
        return String::new();
    }
    let mut t = String::from("\n| ratio | paper | this machine |\n|---|---|---|\n");
    for r in &f.ratios {
        let mine = ratio_values(p, &r.of, &r.to);
        let mine = if mine.is_empty() {
            "-".to_string()
        } else {
            mine.iter()
                .map(|(x, v)| match x {
                    Some(x) => format!("{v:.2}× ({x})"),
                    None => format!("{v:.2}×"),
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        t += &format!(
            "| {} ÷ {} | {} | {} |\n",
            r.of,
            r.to,
            r.paper.as_deref().unwrap_or("-"),
            mine
        );
    }
    t
}

/// `of ÷ to` on this figure's points: one value per x where both series have one, or a
/// single value when either names a point (`series@x`) or each series has one value only.
fn ratio_values(p: &Points, of: &str, to: &str) -> Vec<(Option<String>, f64)> {
    // (series index, x index if given)
    let find = |name: &str| -> Option<(usize, Option<usize>)> {
        let (s, x) = match name.rsplit_once('@') {
            Some((s, x)) if p.series.iter().any(|v| v == s) => (s, Some(x)),
            _ => (name, None),
        };
        let si = p.series.iter().position(|v| v == s)?;
        let xi = match x {
            Some(x) => Some(p.xs.iter().position(|v| v == x)?),
            None => None,
        };
        Some((si, xi))
    };
    let (Some((a, ax)), Some((b, bx))) = (find(of), find(to)) else {
        return Vec::new();
    };
    let only = |si: usize| -> Option<f64> {
        let mut it = p.ys[si].iter().flatten();
        let v = *it.next()?;
        it.next().is_none().then_some(v)
    };
    let at = |si: usize, xi: Option<usize>| match xi {
        Some(xi) => p.ys[si][xi],
        None => only(si),
    };
    if ax.is_some() || bx.is_some() || (only(a).is_some() && only(b).is_some()) {
        return match (at(a, ax), at(b, bx)) {
            (Some(x), Some(y)) if y != 0.0 => vec![(None, x / y)],
            _ => Vec::new(),
        };
    }
    p.xs.iter()
        .enumerate()
        .filter_map(|(xi, x)| match (p.ys[a][xi], p.ys[b][xi]) {
            (Some(u), Some(v)) if v != 0.0 => Some((Some(x.clone()), u / v)),
            _ => None,
        })
        .collect()
}

/// What the y axis shows, in words with its unit: the figure's `y_label`, else the words
/// for a field the records are known to carry, else the field's name.
pub(super) fn y_name(f: &Figure) -> &str {
    f.y_label
        .as_deref()
        .or_else(|| field_words(&f.y))
        .unwrap_or(&f.y)
}

/// The words, with the unit, for a record field a figure plots.
fn field_words(field: &str) -> Option<&'static str> {
    Some(match field {
        "mlps_median" => "lookups per second (millions)",
        "in_place_reader_mlps" | "twins_reader_mlps" | "rebuild_reader_mlps" => {
            "readers' lookups per second during updates (millions)"
        }
        "bytes_per_prefix" => "memory per prefix (bytes)",
        "memory_bytes" => "memory (bytes)",
        "build_ms" => "build time (milliseconds)",
        "in_place_reader_ratio" => "readers' rate during updates ÷ on an idle table",
        "interleaved_reader_ratio" => "readers' rate with the writer busy ÷ alone",
        "interleaved_writer_ratio" => "writer's rate with readers ÷ alone",
        f if f.ends_with("updates_per_s") => "updates per second",
        _ => return None,
    })
}

/// A figure as the tables print it.
fn fmt_y(y: f64) -> String {
    si(y)
}

/// Every x has at most one series with a value and every series at most one x (the x
/// axis names the series).
fn one_series_per_x(p: &Points) -> bool {
    (0..p.xs.len()).all(|xi| p.ys.iter().filter(|row| row[xi].is_some()).count() <= 1)
        && p.ys.iter().all(|row| row.iter().flatten().count() <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts() -> Points {
        Points {
            xs: vec!["1".into(), "2".into()],
            series: vec!["a".into(), "b".into(), "c".into()],
            ys: vec![
                vec![Some(10.0), Some(30.0)],
                vec![Some(5.0), Some(10.0)],
                vec![Some(4.0), None],
            ],
            lo: vec![vec![None; 2]; 3],
            hi: vec![vec![None; 2]; 3],
            roof: vec![vec![None; 2]; 3],
        }
    }

    #[test]
    fn si_labels() {
        for (v, s) in [
            (0.0, "0"),
            (16_000_000.0, "16 M"),
            (1_500_000.0, "1.5 M"),
            (250_000.0, "250 k"),
            (12_345.0, "12.3 k"),
            (2_500.0, "2500"),
            (400.0, "400"),
            (3.24, "3.24"),
            (0.25, "0.25"),
            (1.0, "1"),
            (2.5e9, "2.5 G"),
            (-3_000_000.0, "-3 M"),
        ] {
            assert_eq!(si(v), s, "{v}");
        }
    }

    #[test]
    fn rooflines_come_with_lookup_rates_and_long_captions_wrap() {
        let rec = |x: &str, mlps: f64, roof: Option<f64>| -> Map<String, Value> {
            let mut m = Map::new();
            m.insert("scheme".into(), "s".into());
            m.insert("x".into(), x.into());
            m.insert("mlps_median".into(), mlps.into());
            m.insert("memory_bytes".into(), 1000.into());
            if let Some(r) = roof {
                m.insert("roof_read_mlps".into(), r.into());
            }
            m
        };
        let figure = |y: &str| -> crate::experiment::spec::Figure {
            toml::from_str(&format!(
                "id = \"f\"\ntitle = \"t\"\npaper = \"p\"\nargs = [\"-t\", \"{{x}}\"]\n\
                 x = {{ label = \"table\", values = [\"a\", \"b\"] }}\ny = \"{y}\"\n"
            ))
            .unwrap()
        };
        let (a, b) = (rec("a", 50.0, Some(200.0)), rec("b", 80.0, None));
        let f = figure("mlps_median");
        let p = points(&f, &[&a, &b]);
        assert_eq!(p.roof[0], [Some(200.0), None]);
        let t = table(&f, &[&a, &b], &p);
        assert!(t.contains("| 50 (25 %) | 80 |"), "{t}");
        assert!(t.contains("share of one random read"), "{t}");
        // Another y field has no roofline.
        let f = figure("memory_bytes");
        let p = points(&f, &[&a, &b]);
        assert_eq!(p.roof[0], [None, None]);
        assert!(!table(&f, &[&a, &b], &p).contains('%'));
        // Captions: one line when they fit, else two split at a separator.
        assert_eq!(svg::caption_lines("a  ·  b", 600), ["a  ·  b"]);
        let long = format!(
            "{}  ·  {}  ·  {}",
            "x".repeat(60),
            "y".repeat(60),
            "z".repeat(60)
        );
        let lines = svg::caption_lines(&long, 600);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines.concat().len() + "  ·  ".len(), long.len());
    }

    #[test]
    fn spreads_from_runs_and_points_named() {
        let rec = |scheme: &str, x: &str, runs: &[f64]| -> Map<String, Value> {
            let mut m = Map::new();
            m.insert("scheme".into(), scheme.into());
            m.insert("x".into(), x.into());
            let median = runs[runs.len() / 2];
            m.insert("mlps_median".into(), median.into());
            m.insert("mlps_runs".into(), runs.to_vec().into());
            m
        };
        let f: crate::experiment::spec::Figure = toml::from_str(
            "id = \"f\"\ntitle = \"t\"\npaper = \"p\"\nargs = [\"-t\", \"{x}\"]\n\
             x = { label = \"table\", values = [\"a.txt\", \"b.txt\"], names = [\"A\", \"B\"] }\n",
        )
        .unwrap();
        let (r1, r2) = (
            rec("s", "a.txt", &[1.0, 3.0, 2.0]),
            rec("s", "b.txt", &[5.0]),
        );
        let p = points(&f, &[&r1, &r2]);
        assert_eq!(p.xs, ["A", "B"]);
        assert_eq!(p.ys[0], [Some(3.0), Some(5.0)]);
        assert_eq!((p.lo[0][0], p.hi[0][0]), (Some(1.0), Some(3.0)));
        // One run: no spread to draw.
        assert_eq!((p.lo[0][1], p.hi[0][1]), (None, None));
        assert_eq!(y_name(&f), "lookups per second (millions)");
        assert!(caption(&[&r1], &p, "line", false).contains("whiskers"));
    }

    #[test]
    fn ratios_per_x_per_point_and_single_values() {
        let p = pts();
        assert_eq!(
            ratio_values(&p, "a", "b"),
            vec![(Some("1".into()), 2.0), (Some("2".into()), 3.0)]
        );
        assert_eq!(ratio_values(&p, "a@2", "a@1"), vec![(None, 3.0)]);
        // `c` has one value only: against a point.
        assert_eq!(ratio_values(&p, "a@1", "c"), vec![(None, 2.5)]);
        // Unknown series or x: no ratio.
        assert!(ratio_values(&p, "a", "zz").is_empty());
        assert!(ratio_values(&p, "a@9", "b@1").is_empty());
    }
}

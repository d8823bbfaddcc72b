//! A figure's SVG (plotters' SVG backend: no font library needed) and its Markdown table.

use std::path::Path;

use plotters::prelude::*;
use serde_json::{Map, Value};

use super::Figure;

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
/// `(series, x, y)`; a later record for the same point wins.
pub(super) struct Points {
    pub xs: Vec<String>,
    pub series: Vec<String>,
    pub ys: Vec<Vec<Option<f64>>>,
}

pub(super) fn points(f: &Figure, recs: &[&Map<String, Value>]) -> Points {
    let mut p = Points {
        xs: Vec::new(),
        series: Vec::new(),
        ys: Vec::new(),
    };
    for r in recs {
        let s = label(field(r, &f.series));
        // (x, y) of this record: one point, or one per field of `x.fields`.
        let xy: Vec<(String, f64)> = if f.x.fields.is_empty() {
            field(r, &f.y)
                .and_then(Value::as_f64)
                .map(|y| (label(r.get("x")), y))
                .into_iter()
                .collect()
        } else {
            f.x.fields
                .iter()
                .filter_map(|[l, path]| Some((l.clone(), field(r, path)?.as_f64()?)))
                .collect()
        };
        for (x, y) in xy {
            let xi = p.xs.iter().position(|v| *v == x).unwrap_or_else(|| {
                p.xs.push(x);
                p.xs.len() - 1
            });
            let si = p.series.iter().position(|v| *v == s).unwrap_or_else(|| {
                p.series.push(s.clone());
                p.ys.push(Vec::new());
                p.series.len() - 1
            });
            let row = &mut p.ys[si];
            if row.len() <= xi {
                row.resize(xi + 1, None);
            }
            row[xi] = Some(y);
        }
    }
    for row in &mut p.ys {
        row.resize(p.xs.len(), None);
    }
    p
}

/// Draws `f` from its records into `path`; returns its points (for the table).
pub(super) fn draw(
    path: &Path,
    f: &Figure,
    recs: &[&Map<String, Value>],
) -> anyhow::Result<Points> {
    let p = points(f, recs);
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (860, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let ymax =
        p.ys.iter()
            .flatten()
            .flatten()
            .fold(0.0f64, |m, &y| m.max(y))
            .max(f64::MIN_POSITIVE)
            * 1.15;
    let n = p.xs.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(&f.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..ymax)
        .map_err(|e| err(&e))?;
    let xs = p.xs.clone();
    chart
        .configure_mesh()
        .x_labels(n)
        .x_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                xs.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .x_desc(f.x.label.as_str())
        .y_desc(y_name(f))
        .disable_x_mesh()
        .draw()
        .map_err(|e| err(&e))?;
    let ns = p.series.len().max(1) as f64;
    for (si, name) in p.series.iter().enumerate() {
        let colour = COLOURS[si % COLOURS.len()];
        let pts: Vec<(f64, f64)> = p.ys[si]
            .iter()
            .enumerate()
            .filter_map(|(xi, y)| y.map(|y| (xi as f64, y)))
            .collect();
        // At most one series per x (x names the series): a whole slot per bar.
        let own_slot = one_series_per_x(&p);
        let drawn = if f.kind == "bar" {
            let (w, slot) = if own_slot {
                (0.8, 0.0)
            } else {
                (0.8 / ns, si as f64)
            };
            chart
                .draw_series(pts.iter().map(|&(x, y)| {
                    let left = x - 0.4 + slot * w;
                    Rectangle::new([(left, 0.0), (left + w, y)], colour.filled())
                }))
                .map_err(|e| err(&e))?
        } else {
            chart
                .draw_series(pts.iter().map(|&pt| Circle::new(pt, 3, colour.filled())))
                .map_err(|e| err(&e))?;
            chart
                .draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))
                .map_err(|e| err(&e))?
        };
        drawn
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 4), (x + 16, y + 4)], colour.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(p)
}

/// The points as a Markdown table: one row per series, one column per x.
pub(super) fn table(f: &Figure, _recs: &[&Map<String, Value>], p: &Points) -> String {
    if p.series.is_empty() {
        return "(no records)\n".into();
    }
    if one_series_per_x(p) {
        // One value per series.
        let mut t = format!("| {} | `{}` |\n|---|---:|\n", f.series, y_name(f));
        for (si, s) in p.series.iter().enumerate() {
            let y = p.ys[si]
                .iter()
                .flatten()
                .next()
                .copied()
                .unwrap_or(f64::NAN);
            t += &format!("| {s} | {} |\n", fmt_y(y));
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
        for y in &p.ys[si] {
            match y {
                Some(y) => t += &format!(" {} |", fmt_y(*y)),
                None => t += " |",
            }
        }
        t += "\n";
    }
    t += &format!("\n(y: `{}`)\n", y_name(f));
    t
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

/// What the y axis shows.
fn y_name(f: &Figure) -> &str {
    f.y_label.as_deref().unwrap_or(&f.y)
}

/// A figure as the tables print it.
fn fmt_y(y: f64) -> String {
    if y.abs() >= 1000.0 {
        format!("{y:.0}")
    } else {
        format!("{y:.2}")
    }
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
        }
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

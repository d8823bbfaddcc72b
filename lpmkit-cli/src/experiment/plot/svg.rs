//! A figure drawn as SVG: the title and caption, the chart (lines or bars, with the runs'
//! spread as whiskers, on a linear or logarithmic y axis) and the legend beside it.

use std::path::Path;

use plotters::coord::ranged1d::{Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::{Map, Value};

use super::{caption, one_series_per_x, points, si, transposed, y_name, Points, COLOURS};
use crate::experiment::spec::Figure;

/// Names per legend column; more columns stand beside it.
const LEGEND_ROWS: usize = 22;

/// Draws `f` from its records into `path`; returns its points (for the table).
///
/// A bar chart with more series than colours and few x values (every scheme on three
/// tables) is drawn the other way round: the series along the x axis, one colour per x
/// value.
pub(in crate::experiment) fn draw(
    path: &Path,
    f: &Figure,
    recs: &[&Map<String, Value>],
    quick: bool,
) -> anyhow::Result<Points> {
    let points = points(f, recs);
    let layout = Layout::new(f, &points);
    let p = &layout.points;
    let err = |e: &dyn std::fmt::Display| anyhow::anyhow!("drawing {}: {e}", path.display());
    let size = (
        layout.plot_width + layout.columns * layout.legend_column,
        540,
    );
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (head, body) = root.split_vertically(64);
    let (w, _) = head.dim_in_pixel();
    head.draw_text(&f.title, &centred(17), (w as i32 / 2, 8))
        .map_err(|e| err(&e))?;
    for (i, line) in caption_lines(&caption(recs, p, &f.kind, quick), w)
        .iter()
        .enumerate()
    {
        head.draw_text(
            line,
            &centred(11).color(&RGBColor(90, 90, 90)),
            (w as i32 / 2, 32 + 14 * i as i32),
        )
        .map_err(|e| err(&e))?;
    }
    let (plot, legend) = body.split_horizontally(layout.plot_width);
    let mut builder = ChartBuilder::on(&plot);
    builder
        .margin(12)
        .x_label_area_size(if layout.upright {
            30 + 7 * layout.longest
        } else {
            44
        })
        .y_label_area_size(64);
    let xrange = -0.5f64..(layout.n as f64 - 0.5);
    let ymax =
        p.ys.iter()
            .chain(&p.hi)
            .chain(&p.roof)
            .flatten()
            .flatten()
            .fold(0.0f64, |m, &y| m.max(y))
            .max(f64::MIN_POSITIVE)
            * 1.1;
    if f.y_log {
        let bottom = log_bottom(p);
        let top = (ymax / 1.1).max(bottom * 10.0) * 1.5;
        let chart = builder
            .build_cartesian_2d(xrange, (bottom..top).log_scale())
            .map_err(|e| err(&e))?;
        draw_chart(chart, &root, f, &layout, bottom).map_err(|e| err(&e))?;
    } else {
        let chart = builder
            .build_cartesian_2d(xrange, 0f64..ymax)
            .map_err(|e| err(&e))?;
        draw_chart(chart, &root, f, &layout, 0.0).map_err(|e| err(&e))?;
    }
    if p.series.is_empty() {
        // Say so rather than leave an empty frame (e.g. a replay too short for one round).
        let (pw, ph) = plot.dim_in_pixel();
        plot.draw_text(
            "no record has a value for this figure (see the report and the records)",
            &centred(13).color(&RGBColor(150, 0, 0)),
            (pw as i32 / 2, ph as i32 / 2),
        )
        .map_err(|e| err(&e))?;
    }
    draw_legend(&legend, &layout).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(points)
}

/// How a figure is laid out: which way round, and the sizes that follow from its points.
struct Layout<'f> {
    /// The points as drawn (transposed when flipped).
    points: Points,
    /// What the x axis and the legend's entries are.
    x_desc: &'f str,
    legend_head: &'f str,
    /// Legend columns, and the width of each.
    columns: u32,
    legend_column: u32,
    /// x categories (at least 1).
    n: usize,
    plot_width: u32,
    /// The x labels are written upwards (many or long ones), the longest so many chars.
    upright: bool,
    longest: u32,
}

impl<'f> Layout<'f> {
    fn new(f: &'f Figure, points: &Points) -> Self {
        let flip = f.kind == "bar"
            && points.series.len() > COLOURS.len()
            && points.xs.len() <= COLOURS.len()
            && !one_series_per_x(points);
        let (p, x_desc, legend_head) = if flip {
            (transposed(points), f.series.as_str(), f.x.label.as_str())
        } else {
            (points.clone(), f.x.label.as_str(), f.series.as_str())
        };
        let columns = p.series.len().div_ceil(LEGEND_ROWS).max(1) as u32;
        let widest = p
            .series
            .iter()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0) as u32;
        let n = p.xs.len().max(1);
        let bars = if f.kind == "bar" && !one_series_per_x(&p) {
            n * p.series.len().max(1)
        } else {
            n
        };
        let upright = n > 12 || (n > 6 && p.xs.iter().any(|x| x.len() > 12));
        let longest = p.xs.iter().map(|x| x.chars().count()).max().unwrap_or(0) as u32;
        Layout {
            points: p,
            x_desc,
            legend_head,
            columns,
            legend_column: (30 + 7 * widest).max(120),
            n,
            plot_width: (bars as u32 * 14).clamp(620, 1500),
            upright,
            longest,
        }
    }
}

/// The caption in one line, or in two (split at the ` · ` nearest its middle) when one
/// would be wider than `width` pixels (about 6 pixels a character at its size).
pub(super) fn caption_lines(caption: &str, width: u32) -> Vec<String> {
    let chars = caption.chars().count();
    if chars * 6 <= width as usize {
        return vec![caption.to_string()];
    }
    let middle = caption.len() / 2;
    match caption
        .match_indices("  ·  ")
        .min_by_key(|(i, _)| i.abs_diff(middle))
    {
        Some((i, sep)) => vec![
            caption[..i].to_string(),
            caption[i + sep.len()..].to_string(),
        ],
        None => vec![caption.to_string()],
    }
}

/// A text style centred on its position, hanging from it.
fn centred(size: i32) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font()).pos(Pos::new(HPos::Center, VPos::Top))
}

/// The bottom of a logarithmic y axis: a power of ten at least half a decade below the
/// least positive value, so that its bar shows.
fn log_bottom(p: &Points) -> f64 {
    let least =
        p.ys.iter()
            .chain(&p.lo)
            .flatten()
            .flatten()
            .copied()
            .filter(|&y| y > 0.0)
            .fold(f64::INFINITY, f64::min);
    if least.is_finite() {
        10f64.powf((least.log10() - 0.3).floor())
    } else {
        1.0
    }
}

type Chart<'a, Y> = ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, Y>>;
type DrawResult =
    Result<(), DrawingAreaErrorKind<<SVGBackend<'static> as DrawingBackend>::ErrorType>>;

/// The chart: its mesh and axis titles, the x labels (upright ones drawn on `root`), and
/// every series with its whiskers; bars start at `base`, the y axis' bottom.
fn draw_chart<'a, Y>(
    mut chart: Chart<'a, Y>,
    root: &DrawingArea<SVGBackend<'a>, plotters::coord::Shift>,
    f: &Figure,
    layout: &Layout<'_>,
    base: f64,
) -> DrawResult
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let p = &layout.points;
    let upright = layout.upright;
    let y_title = if f.y_log {
        format!("{} (log scale)", y_name(f))
    } else {
        y_name(f).to_string()
    };
    chart
        .configure_mesh()
        .x_labels(layout.n)
        .x_label_formatter(&|v| {
            let i = v.round();
            // Upright labels are drawn below, anchored at their end.
            if !upright && (v - i).abs() < 1e-6 && i >= 0.0 {
                p.xs.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_labels(8)
        .y_label_formatter(&|v| si(*v))
        .x_label_style(("sans-serif", 12))
        .x_desc(layout.x_desc)
        .y_desc(y_title.as_str())
        .axis_desc_style(("sans-serif", 14))
        .y_label_style(("sans-serif", 12))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225))
        .disable_x_mesh()
        .draw()?;
    if upright {
        let style = TextStyle::from(("sans-serif", 12).into_font())
            .transform(FontTransform::Rotate270)
            .pos(Pos::new(HPos::Right, VPos::Center));
        for (xi, x) in p.xs.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(xi as f64, base));
            root.draw_text(x, &style, (px, py + 8))?;
        }
    }
    for si in 0..p.series.len() {
        draw_series(&mut chart, f, p, si, base)?;
    }
    Ok(())
}

/// Series `si` of `p`: its bars, or its points joined by a line; then its whiskers, the
/// slowest and the fastest run, with short caps.
fn draw_series<Y>(
    chart: &mut Chart<'_, Y>,
    f: &Figure,
    p: &Points,
    si: usize,
    base: f64,
) -> DrawResult
where
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let colour = COLOURS[si % COLOURS.len()];
    let ns = p.series.len().max(1) as f64;
    let bar = f.kind == "bar";
    // Each point's x where it is drawn (a bar's centre), y, and its spread.
    let (w, slot) = if !bar || one_series_per_x(p) {
        (0.8, 0.0)
    } else {
        (0.8 / ns, si as f64)
    };
    let at = |xi: usize| {
        if bar {
            xi as f64 - 0.4 + slot * w + w / 2.0
        } else {
            xi as f64
        }
    };
    let pts: Vec<(f64, f64)> = p.ys[si]
        .iter()
        .enumerate()
        .filter_map(|(xi, y)| y.filter(|&y| y > base).map(|y| (at(xi), y)))
        .collect();
    if bar {
        chart.draw_series(pts.iter().map(|&(x, y)| {
            Rectangle::new([(x - w / 2.0, base), (x + w / 2.0, y)], colour.filled())
        }))?;
    } else {
        chart.draw_series(pts.iter().map(|&pt| Circle::new(pt, 3, colour.filled())))?;
        chart.draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2)))?;
    }
    // The roofline, what the memory system allows at each point: a line of the series'
    // colour, dashed, for a line chart; a grey tick across each bar for a bar chart.
    let roofs: Vec<(f64, f64)> = p.roof[si]
        .iter()
        .enumerate()
        .filter_map(|(xi, r)| r.filter(|&r| r > base).map(|r| (at(xi), r)))
        .collect();
    if bar {
        for &(x, r) in &roofs {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(x - w / 2.0, r), (x + w / 2.0, r)],
                RGBColor(110, 110, 110).stroke_width(2),
            )))?;
        }
    } else if !roofs.is_empty() {
        chart.draw_series(DashedLineSeries::new(roofs, 6, 4, colour.stroke_width(1)))?;
    }
    let cap = (w / 4.0).min(0.08);
    let whisker = if bar { BLACK } else { colour };
    for xi in 0..p.xs.len() {
        let (Some(lo), Some(hi)) = (p.lo[si][xi], p.hi[si][xi]) else {
            continue;
        };
        let lo = lo.max(base);
        // Lines' whiskers side by side, so that series at one x stay apart.
        let x = at(xi)
            + if bar {
                0.0
            } else {
                (si as f64 - (ns - 1.0) / 2.0) * 0.04
            };
        let style = whisker.stroke_width(1);
        for line in [
            vec![(x, lo), (x, hi)],
            vec![(x - cap, lo), (x + cap, lo)],
            vec![(x - cap, hi), (x + cap, hi)],
        ] {
            chart.draw_series(std::iter::once(PathElement::new(line, style)))?;
        }
    }
    Ok(())
}

/// The legend, beside the plot so that it hides nothing, under the name of what its
/// entries are.
fn draw_legend(
    legend: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    layout: &Layout<'_>,
) -> DrawResult {
    legend.draw_text(
        layout.legend_head,
        &("sans-serif", 13).into_text_style(legend),
        (4, 12),
    )?;
    for (si, name) in layout.points.series.iter().enumerate() {
        let colour = COLOURS[si % COLOURS.len()];
        let col = (si / LEGEND_ROWS) as i32;
        let row = (si % LEGEND_ROWS) as i32;
        let (x, y) = (col * layout.legend_column as i32 + 4, 36 + row * 20);
        legend.draw(&Rectangle::new([(x, y), (x + 14, y + 10)], colour.filled()))?;
        legend.draw_text(
            name,
            &("sans-serif", 12).into_text_style(legend),
            (x + 20, y - 1),
        )?;
    }
    Ok(())
}

//! The run report as one self-contained HTML file: inline SVG plots drawn by plotters, inline
//! CSS, no script, and a Content-Security-Policy that lets the page load nothing at all.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gke_rl_in_cluster::lustre_usage::{Point, Usage};
use gke_rl_in_cluster::run_report::{Report, StepRow, duration, percent};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The plots' size, in SVG pixels.
const WIDTH: u32 = 760;
const HEIGHT: u32 = 300;
/// The most steps a plot draws.
const MAX_PLOTTED: usize = 500;
/// Timers drawn by name in the step-time plot; the rest are summed as "other".
const NAMED_TIMERS: usize = 6;
/// The plots' colors, in order.
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

type Drawn = Result<(), Box<dyn std::error::Error>>;

/// The page for `report`, titled with `title` (a job id or a log's path); `lustre_missing` says
/// why it has no Lustre figures, when it was asked for them and has none.
pub fn page(report: &Report, title: &str, lustre_missing: Option<&str>) -> anyhow::Result<String> {
    let kept: Vec<&StepRow> = report.steps.iter().filter(|s| !s.redone && s.step_time_s.is_some()).collect();
    // A long run's plots show every n-th step: a bar per step of a 50,000-step run says nothing.
    let stride = kept.len().div_ceil(MAX_PLOTTED).max(1);
    let kept: Vec<&StepRow> = kept.into_iter().step_by(stride).collect();
    let mut body = String::new();
    let _ = writeln!(body, "<h1>Run {}</h1>", escape(title));
    let _ = writeln!(body, "<p class=\"summary\">{}</p>", escape(&report.progress.line()));
    let left_out = report.left_out.note();
    if !left_out.is_empty() {
        let _ = writeln!(body, "<p class=\"note\" id=\"left-out\">{}</p>", escape(left_out.trim_end()));
    }
    let checkpoints = report.checkpoints.summary();
    if !checkpoints.is_empty() {
        let _ = writeln!(body, "<p class=\"summary\">{}</p>", escape(checkpoints.trim_end()).replace('\n', "<br>"));
    }

    let _ = writeln!(body, "<section id=\"goodput\"><h2>Goodput</h2>");
    body.push_str(&svg(WIDTH, 100, |area| goodput_bar(report, area))?);
    body.push_str(&goodput_table(report));
    body.push_str("</section>\n");

    if !kept.is_empty() {
        let _ = writeln!(body, "<section id=\"reward\"><h2>Reward and loss per step</h2>");
        let reward: Vec<(f64, f64)> = kept.iter().filter_map(|s| Some((s.step as f64, s.reward?))).collect();
        let loss: Vec<(f64, f64)> = kept.iter().filter_map(|s| Some((s.step as f64, s.loss?))).collect();
        body.push_str(&svg(WIDTH / 2, HEIGHT, |area| line(area, "reward", &reward, COLORS[0]))?);
        body.push_str(&svg(WIDTH / 2, HEIGHT, |area| line(area, "loss", &loss, COLORS[1]))?);
        body.push_str("</section>\n");

        let _ = writeln!(body, "<section id=\"step-time\"><h2>Step time by timer</h2>");
        body.push_str(&svg(WIDTH, HEIGHT, |area| step_times(&kept, area))?);
        body.push_str("<p class=\"note\">The largest timers as NeMo-RL prints them, stacked up to the step's total; a group's parts are inside its <code>/total</code>.</p>\n</section>\n");
    }

    let saves: Vec<(f64, f64)> = kept.iter().filter_map(|s| Some((s.step as f64, s.checkpoint_s?))).collect();
    if !saves.is_empty() {
        let _ = writeln!(body, "<section id=\"checkpoints\"><h2>Checkpoint saves</h2>");
        body.push_str(&svg(WIDTH, HEIGHT, |area| bars(area, "seconds", &saves, COLORS[2]))?);
        body.push_str("</section>\n");
    }

    let _ = writeln!(body, "<section id=\"restarts\"><h2>Restarts</h2>");
    if report.restarts.is_empty() {
        body.push_str("<p>None.</p>\n");
    } else {
        body.push_str("<table><tr><th>#</th><th>cause</th><th>resumed from</th><th>steps redone</th><th>lost</th></tr>\n");
        for r in &report.restarts {
            let _ = writeln!(
                body,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                r.number,
                escape(&r.cause),
                r.resumed_from.map_or_else(|| "the start".to_owned(), |s| format!("step {s}")),
                r.steps_redone.map_or_else(|| "unknown".to_owned(), |n| n.to_string()),
                duration(r.lost_s)
            );
        }
        body.push_str("</table>\n");
    }
    body.push_str("</section>\n");

    match (&report.lustre, lustre_missing) {
        (Some(usage), _) => body.push_str(&lustre_section(report, usage)?),
        (None, Some(why)) => {
            let _ = writeln!(body, "<section id=\"lustre\"><h2>Lustre</h2><p class=\"note\">Not shown: {}</p></section>", escape(why));
        }
        (None, None) => {}
    }

    if let Some(why) = &report.unpriced {
        let _ = writeln!(body, "<section id=\"cost\"><h2>Cost</h2><p>not priced: {}</p></section>", escape(why));
    }
    if let Some(cost) = &report.cost {
        let _ = writeln!(body, "<section id=\"cost\"><h2>Cost</h2><p>");
        let money = gke_rl::cost::dollars;
        let _ = write!(body, "{}/hour for the config's cluster", money(cost.per_hour));
        if let Some(so_far) = cost.so_far {
            let _ = write!(body, "; {} so far", money(so_far));
        }
        if let Some(to_finish) = cost.to_finish {
            let _ = write!(body, "; {} to finish at the median step time", money(to_finish));
        }
        body.push_str(".</p></section>\n");
    }
    Ok(format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n\
         <title>gke-rl run report: {}</title>\n<style>{STYLE}</style></head>\n<body>\n{body}\
         <footer>gke-rl {} · goodput's categories follow Google's ml-goodput-measurement</footer>\n</body></html>\n",
        escape(title),
        env!("CARGO_PKG_VERSION")
    ))
}

const STYLE: &str = "body{font-family:sans-serif;max-width:800px;margin:2em auto;color:#222}\
    h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}.summary{font-size:1.05em}\
    table{border-collapse:collapse}td,th{padding:.2em .8em;border-bottom:1px solid #ddd;text-align:left}\
    svg{display:inline-block}.note,footer{color:#666;font-size:.85em}\
    .swatch{display:inline-block;width:.8em;height:.8em;margin-right:.5em}";

fn goodput_table(report: &Report) -> String {
    let g = &report.goodput;
    let mut out = String::from("<table>\n");
    for (i, (what, seconds)) in g.parts().into_iter().enumerate().filter_map(|(i, (w, s))| Some((i, (w, s?)))) {
        let share = g.wall_s.map_or_else(String::new, |w| percent(seconds, w));
        let RGBColor(r, g, b) = part_color(i);
        let swatch = format!("<span class=\"swatch\" style=\"background:#{r:02x}{g:02x}{b:02x}\"></span>");
        let _ = writeln!(out, "<tr><td>{swatch}{what}</td><td>{share}</td><td>{}</td></tr>", duration(seconds));
    }
    match (g.goodput, g.wall_s) {
        (Some(share), Some(wall)) => {
            let _ = writeln!(out, "<tr><th>goodput</th><th>{}</th><th>of {}</th></tr>", percent(share, 1.0), duration(wall));
        }
        _ => out.push_str("<tr><th>goodput</th><th colspan=\"2\">unknown without the run's wall time</th></tr>\n"),
    }
    out + "</table>\n"
}

/// One plot as an `<svg>` element.
fn svg(width: u32, height: u32, draw: impl FnOnce(&DrawingArea<SVGBackend<'_>, Shift>) -> Drawn) -> anyhow::Result<String> {
    let mut out = String::new();
    {
        let area = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        area.fill(&WHITE).map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
        draw(&area).map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
        area.present().map_err(|e| anyhow::anyhow!("cannot draw the plot: {e}"))?;
    }
    Ok(out + "\n")
}

/// `range` when plotters can tick it (finite, its span too, and not empty), else 0 to 1: an
/// infinite axis would never finish its ticks.
fn drawable(range: std::ops::Range<f64>) -> std::ops::Range<f64> {
    let span = range.end - range.start;
    if range.start.is_finite() && range.end.is_finite() && span.is_finite() && span > 0.0 { range } else { 0.0..1.0 }
}

/// The x range for steps, with room for a bar's width either side.
fn steps_range(points: impl Iterator<Item = f64> + Clone) -> std::ops::Range<f64> {
    let lowest = points.clone().fold(f64::INFINITY, f64::min);
    let highest = points.fold(f64::NEG_INFINITY, f64::max);
    drawable(lowest - 0.6..highest + 0.6)
}

/// `range` with room above it for a legend.
fn headroom(range: std::ops::Range<f64>) -> std::ops::Range<f64> {
    drawable(range.start..range.end + (range.end - range.start) * 0.45)
}

/// A step axis's label: whole steps only (plotters also ticks between them).
fn step_label(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-9 { format!("{x:.0}") } else { String::new() }
}

/// The color of the `i`th part of the wall time ([`gke_rl_in_cluster::run_report::Goodput::parts`]).
fn part_color(i: usize) -> RGBColor {
    COLORS[if i == 0 { 2 } else { (i + 2) % COLORS.len() }]
}

/// A y range over `values` with a little room, never empty: from zero for bars, from just
/// under the lowest value for lines.
fn values_range(values: impl Iterator<Item = f64> + Clone, from_zero: bool) -> std::ops::Range<f64> {
    let lowest = values.clone().fold(if from_zero { 0.0 } else { f64::INFINITY }, f64::min);
    let highest = values.fold(f64::NEG_INFINITY, f64::max);
    let (lowest, highest) = if lowest.is_finite() && highest > lowest {
        (lowest, highest)
    } else {
        let only = if lowest.is_finite() { lowest } else { 0.0 };
        (only.min(0.0), only.max(0.0) + 1.0)
    };
    let pad = (highest - lowest) * 0.05;
    drawable((if from_zero { lowest } else { lowest - pad })..highest + pad)
}

fn line(area: &DrawingArea<SVGBackend<'_>, Shift>, what: &str, points: &[(f64, f64)], color: RGBColor) -> Drawn {
    let mut chart = ChartBuilder::on(area)
        .caption(what, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(32)
        .y_label_area_size(52)
        .build_cartesian_2d(steps_range(points.iter().map(|p| p.0)), values_range(points.iter().map(|p| p.1), false))?;
    chart.configure_mesh().x_desc("step").x_label_formatter(&step_label).draw()?;
    chart.draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?;
    chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
    Ok(())
}

fn bars(area: &DrawingArea<SVGBackend<'_>, Shift>, what: &str, points: &[(f64, f64)], color: RGBColor) -> Drawn {
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .x_label_area_size(32)
        .y_label_area_size(52)
        .build_cartesian_2d(steps_range(points.iter().map(|p| p.0)), values_range(points.iter().map(|p| p.1), true))?;
    chart.configure_mesh().x_desc("step").y_desc(what).x_label_formatter(&step_label).draw()?;
    chart.draw_series(points.iter().map(|&(x, y)| Rectangle::new([(x - 0.35, 0.0), (x + 0.35, y)], color.filled())))?;
    Ok(())
}

/// The top-level timers: those without a group, and each group's `/total`. Nested ones are
/// inside their group's total, so stacking them too would count them twice.
fn top_level(name: &str) -> bool {
    !name.contains('/') || name.ends_with("/total")
}

fn step_times(steps: &[&StepRow], area: &DrawingArea<SVGBackend<'_>, Shift>) -> Drawn {
    let mut totals: BTreeMap<&str, f64> = BTreeMap::new();
    for step in steps {
        for (name, seconds) in step.timers.iter().filter(|(n, _)| top_level(n)) {
            *totals.entry(name.as_str()).or_default() += seconds;
        }
    }
    let mut named: Vec<(&str, f64)> = totals.into_iter().collect();
    named.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    named.truncate(NAMED_TIMERS);
    let times = steps.iter().filter_map(|s| s.step_time_s);
    let mut chart = ChartBuilder::on(area)
        .margin(8)
        .x_label_area_size(32)
        .y_label_area_size(52)
        .build_cartesian_2d(steps_range(steps.iter().map(|s| s.step as f64)), headroom(values_range(times, true)))?;
    chart.configure_mesh().x_desc("step").y_desc("seconds").x_label_formatter(&step_label).draw()?;
    let layers: Vec<(&str, RGBColor)> =
        named.iter().enumerate().map(|(i, (name, _))| (*name, COLORS[i % (COLORS.len() - 1)])).chain([("other", COLORS[7])]).collect();
    for (layer, &(name, color)) in layers.iter().enumerate() {
        let rectangles = steps.iter().map(|step| {
            // Some timers without a group run inside others (`recompute_kv_scales`, say): the
            // stack is cut at the step's total so that it never claims more time than there was.
            let total = step.step_time_s.unwrap_or(0.0);
            let seconds = |name: &str| step.timers.get(name).copied().unwrap_or(0.0);
            let below = layers[..layer].iter().map(|(n, _)| seconds(n)).sum::<f64>().min(total);
            let height = if name == "other" { total - below } else { seconds(name).min(total - below) };
            let x = step.step as f64;
            Rectangle::new([(x - 0.35, below), (x + 0.35, below + height)], color.filled())
        });
        chart.draw_series(rectangles)?.label(name).legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    legend(&mut chart)
}

/// One horizontal bar of the wall time: productive, then each cause of badput.
fn goodput_bar(report: &Report, area: &DrawingArea<SVGBackend<'_>, Shift>) -> Drawn {
    let parts = report.goodput.parts().map(|(what, seconds)| (what, seconds.unwrap_or(0.0)));
    let total: f64 = parts.iter().map(|p| p.1).sum();
    // Its colors are the table's swatches below, which name the parts.
    let mut chart =
        ChartBuilder::on(area).margin(8).margin_right(40).x_label_area_size(24).build_cartesian_2d(0.0..total.max(1.0), 0.0..1.0)?;
    chart.configure_mesh().disable_y_mesh().disable_x_mesh().x_label_formatter(&|s| duration(*s)).x_labels(5).draw()?;
    let mut from = 0.0;
    for (i, (_, seconds)) in parts.into_iter().enumerate().filter(|(_, p)| p.1 > 0.0) {
        chart.draw_series([Rectangle::new([(from, 0.15), (from + seconds, 0.85)], part_color(i).filled())])?;
        from += seconds;
    }
    Ok(())
}

/// The Lustre instance's throughput with the checkpoint saves marked, and its space used, on
/// one time axis: minutes since the run started.
fn lustre_section(report: &Report, usage: &Usage) -> anyhow::Result<String> {
    let start = report.started_at.unwrap_or(usage.from);
    let minutes = |at: f64| (at - start) / 60.0;
    let x_range = drawable(minutes(usage.from)..minutes(usage.to).max(minutes(usage.from) + 1.0));
    // A point is the mean over the period it ends: drawn at the period's middle.
    let middle = |p: &Point| minutes(p.at - usage.period_s as f64 / 2.0);
    // Only those inside the axis: plotters does not clip a line at its chart's edge.
    let inside = |p: &&Point| x_range.contains(&middle(p));
    let gigabytes = |points: &[Point]| -> Vec<(f64, f64)> { points.iter().filter(inside).map(|p| (middle(p), p.value / 1e9)).collect() };
    let (read, write) = (gigabytes(&usage.read_bytes_per_s), gigabytes(&usage.write_bytes_per_s));
    let saves: Vec<(f64, f64)> =
        report.steps.iter().filter_map(|s| Some((minutes(s.saved_at?), minutes(s.saved_at? + s.checkpoint_s.unwrap_or(0.0))))).collect();
    let mut out = format!("<section id=\"lustre\"><h2>Lustre {}</h2>\n", escape(&usage.instance_id));
    let _ =
        writeln!(out, "<p class=\"summary\">{}</p>", escape(&usage.summary(&gke_rl_in_cluster::run_report::save_windows(&report.steps))));
    let throughput = [("read", read.as_slice(), COLORS[0]), ("write", write.as_slice(), COLORS[1])];
    out.push_str(&svg(WIDTH, HEIGHT, |area| over_time(area, x_range.clone(), "GB/s", &throughput, &saves))?);
    let space: Vec<(&str, Vec<(f64, f64)>)> = usage
        .space
        .iter()
        .map(|s| (s.component.as_str(), s.used_bytes.iter().filter(inside).map(|p| (middle(p), p.value / TIB)).collect()))
        .filter(|(_, points): &(&str, Vec<(f64, f64)>)| !points.is_empty())
        .collect();
    if !space.is_empty() {
        let used: Vec<Line<'_>> = space
            .iter()
            .enumerate()
            .map(|(i, (component, points))| (*component, points.as_slice(), COLORS[(i + 2) % COLORS.len()]))
            .collect();
        out.push_str(&svg(WIDTH, HEIGHT / 2 + 40, |area| over_time(area, x_range.clone(), "TiB used", &used, &[]))?);
    }
    let _ = writeln!(
        out,
        "<p class=\"note\">Cloud Monitoring's Managed Lustre metrics, each point the mean over {} s; a run's last minutes may be missing for up to {} minutes after it. {}</p></section>",
        usage.period_s,
        gke_rl_in_cluster::lustre_usage::LATE_S / 60,
        if saves.is_empty() {
            "No checkpoint save is marked: the supervisor's records time them, and this log has none."
        } else {
            "Checkpoint saves are timed by the supervisor's records."
        }
    );
    Ok(out)
}

/// A line to draw: its name, its points and its color.
type Line<'a> = (&'a str, &'a [(f64, f64)], RGBColor);

/// Lines over minutes since the run started, each named in the legend, with `spans` (the
/// checkpoint saves) shaded behind them.
fn over_time(
    area: &DrawingArea<SVGBackend<'_>, Shift>,
    x_range: std::ops::Range<f64>,
    y_desc: &str,
    lines: &[Line<'_>],
    spans: &[(f64, f64)],
) -> Drawn {
    let y_range = headroom(values_range(lines.iter().flat_map(|l| l.1.iter().map(|p| p.1)), true));
    let mut chart =
        ChartBuilder::on(area).margin(8).x_label_area_size(32).y_label_area_size(52).build_cartesian_2d(x_range, y_range.clone())?;
    chart.configure_mesh().x_desc("minutes since the run started").y_desc(y_desc).draw()?;
    if !spans.is_empty() {
        let shade = COLORS[7].mix(0.25);
        let (low, high) = (y_range.start, y_range.end);
        chart
            .draw_series(spans.iter().map(|&(from, to)| Rectangle::new([(from, low), (to.max(from + 0.2), high)], shade.filled())))?
            .label("checkpoint save")
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], shade.filled()));
    }
    for &(what, points, color) in lines {
        chart
            .draw_series(LineSeries::new(points.iter().copied(), color.stroke_width(2)))?
            .label(what)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 10, y)], color.stroke_width(2)));
    }
    legend(&mut chart)
}

/// A chart's legend, top left.
fn legend<'a, X: Ranged, Y: Ranged>(chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>) -> Drawn {
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    Ok(())
}

/// A tebibyte.
const TIB: f64 = (1u64 << 40) as f64;

/// Text for HTML: `&`, `<`, `>` and quotes escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_top_level_timers_are_stacked() {
        assert!(super::top_level("generation") && super::top_level("prepare_for_generation/total"));
        assert!(!super::top_level("prepare_for_generation/transfer_and_update_weights"));
        assert_eq!(super::escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
    }
}

//! The charts of the HTML report, drawn with plotters into SVG strings.
//!
//! Every series is told apart by line style and marker shape as well as colour, so a report
//! printed in greyscale (or read with colour-blind eyes) still says which run is which: open loop
//! draws solid lines with circles, closed loop dashed lines with triangles, schedule-tracking
//! dotted lines with squares. Colours are the Okabe–Ito palette, alternating dark and light.
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::ReportError;

/// How one run is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Look {
    pub color: RGBColor,
    pub line: LineKind,
    pub marker: Marker,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    Solid,
    Dashed,
    Dotted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Circle,
    Triangle,
    Square,
}

/// Okabe–Ito colours ordered dark, light, dark, … so neighbours differ in greyscale too.
pub(crate) const PALETTE: [RGBColor; 6] = [
    RGBColor(0, 114, 178),  // blue
    RGBColor(230, 159, 0),  // orange
    RGBColor(0, 0, 0),      // black
    RGBColor(86, 180, 233), // sky blue
    RGBColor(213, 94, 0),   // vermillion
    RGBColor(0, 158, 115),  // bluish green
];

const GRID: RGBColor = RGBColor(225, 225, 225);
const AXIS_TEXT: RGBColor = RGBColor(40, 40, 40);
const SHADE: RGBColor = RGBColor(120, 120, 120);
/// Estimates and reference lines: not a run, so not a run colour.
pub(crate) const GREY: RGBColor = RGBColor(110, 110, 110);
const FONT: &str = "sans-serif";

/// A curve of one run on a chart.
pub(crate) struct Curve {
    pub label: String,
    pub look: Look,
    pub points: Vec<(f64, f64)>,
    /// Points drawn with markers: (x, y, hollow). Hollow marks a lower bound.
    pub marks: Vec<(f64, f64, bool)>,
    pub width: u32,
    /// Whether the legend shows the run's marker (it names a run) or only the line style.
    pub legend_marker: bool,
}

/// A shaded span of the x axis: a scenario stall, pause or ramp (seconds), or a sweep's cliff
/// or client-side limit (offered req/s).
pub(crate) struct Span {
    pub label: String,
    pub start: f64,
    pub end: f64,
    pub tint: Tint,
}

/// What a span marks, and so its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tint {
    /// A fault of the target's (a stall), or its cliff: grey.
    Target,
    /// The model's cliff, beside the measured one: blue.
    Model,
    /// A limit of the client side (generator or pool): orange, so it is never read as the
    /// target's.
    Client,
}

impl Tint {
    fn color(self) -> RGBColor {
        match self {
            Tint::Target => SHADE,
            Tint::Model => RGBColor(0, 114, 178),
            Tint::Client => RGBColor(230, 159, 0),
        }
    }
}

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

fn fail(chart: &'static str) -> impl Fn(String) -> ReportError {
    move |reason| ReportError::Plot { chart, reason }
}

fn text<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// Renders `draw` onto a fresh white SVG canvas of `size` and returns the SVG text with the
/// root element given `id` and an accessible label.
fn svg(
    id: &str,
    title: &str,
    size: (u32, u32),
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(text)?;
        draw(&root)?;
        root.present().map_err(text)?;
    }
    let attrs = format!(
        "<svg id=\"{id}\" role=\"img\" aria-label=\"{}\" ",
        crate::html::escape(title)
    );
    Ok(out.replacen("<svg ", &attrs, 1))
}

fn style(look: Look, width: u32) -> ShapeStyle {
    look.color.stroke_width(width)
}

/// Draws `c` on `chart` (line, then markers); the first segment of a series carries its legend
/// entry, so `labelled` is false for the rest.
fn draw_curve<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    c: &Curve,
    labelled: bool,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let s = style(c.look, c.width);
    let pts = c.points.clone();
    let anno = match c.look.line {
        LineKind::Solid => chart.draw_series(LineSeries::new(pts, s)).map_err(text)?,
        LineKind::Dashed => chart
            .draw_series(DashedLineSeries::new(pts, 9, 5, s))
            .map_err(text)?,
        LineKind::Dotted => chart
            .draw_series(DashedLineSeries::new(pts, 2, 4, s))
            .map_err(text)?,
    };
    if labelled {
        let (look, s, with_marker) = (c.look, style(c.look, c.width), c.legend_marker);
        // The legend entry: a short line in the curve's style with its marker in the middle.
        anno.label(c.label.clone()).legend(move |(x, y)| {
            let seg = |(a, b): (i32, i32)| PathElement::new(vec![(a, 0), (b, 0)], s);
            let [a, b, c, d] = legend_spans(look.line);
            // A marker far outside the legend box stands for "no marker".
            let at = if with_marker {
                (12, 0)
            } else {
                (-10_000, -10_000)
            };
            EmptyElement::at((x, y))
                + seg(a)
                + seg(b)
                + seg(c)
                + seg(d)
                + marker_fill(look, at, false)
                + marker_outline(look, at)
        });
    }
    let marks = c.marks.iter().map(|&(x, y, hollow)| {
        EmptyElement::at((x, y))
            + marker_fill(c.look, (0, 0), hollow)
            + marker_outline(c.look, (0, 0))
    });
    chart.draw_series(marks).map_err(text)?;
    Ok(())
}

/// Dash pattern of a look's legend line as pixel spans along its 24 px (unused spans empty).
fn legend_spans(line: LineKind) -> [(i32, i32); 4] {
    match line {
        LineKind::Solid => [(0, 24), (0, 0), (0, 0), (0, 0)],
        LineKind::Dashed => [(0, 8), (16, 24), (0, 0), (0, 0)],
        LineKind::Dotted => [(0, 2), (5, 7), (17, 19), (22, 24)],
    }
}

/// The outline of a marker centred on `at` (pixels from its anchor).
fn marker_points(m: Marker, at: (i32, i32)) -> Vec<(i32, i32)> {
    let shape: &[(i32, i32)] = match m {
        Marker::Circle => &[
            (5, 0),
            (4, 3),
            (2, 5),
            (-2, 5),
            (-4, 3),
            (-5, 0),
            (-4, -3),
            (-2, -5),
            (2, -5),
            (4, -3),
        ],
        Marker::Triangle => &[(0, -6), (6, 5), (-6, 5)],
        Marker::Square => &[(-5, -5), (5, -5), (5, 5), (-5, 5)],
    };
    shape
        .iter()
        .map(|(dx, dy)| (at.0 + dx, at.1 + dy))
        .collect()
}

fn marker_fill(look: Look, at: (i32, i32), hollow: bool) -> Polygon<(i32, i32)> {
    let fill = if hollow {
        WHITE.filled()
    } else {
        look.color.filled()
    };
    Polygon::new(marker_points(look.marker, at), fill)
}

fn marker_outline(look: Look, at: (i32, i32)) -> PathElement<(i32, i32)> {
    let mut pts = marker_points(look.marker, at);
    pts.push(pts[0]);
    PathElement::new(pts, look.color.stroke_width(2))
}

fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    pos: SeriesLabelPosition,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(pos)
        .background_style(WHITE.mix(0.92))
        .border_style(RGBColor(160, 160, 160))
        .label_font((FONT, 16).into_font().color(&AXIS_TEXT))
        .margin(12)
        .draw()
        .map_err(text)
}

/// Shades each span across the whole height of the plot, with its label at the top.
fn shade(chart: &mut Chart, spans: &[Span], y: (f64, f64)) -> Result<(), String> {
    chart
        .draw_series(spans.iter().map(|s| {
            let fill = s.tint.color().mix(0.18).filled();
            Rectangle::new([(s.start, y.0), (s.end.max(s.start), y.1)], fill)
        }))
        .map_err(text)?;
    let label_style = (FONT, 12).into_font().color(&RGBColor(70, 70, 70));
    chart
        .draw_series(
            spans
                .iter()
                .map(|s| Text::new(s.label.clone(), (s.start, y.1), label_style.clone())),
        )
        .map_err(text)?;
    Ok(())
}

/// Percentile labels for the 1/(1−p) axis: 2 → 50%, 10 → 90%, 1000 → 99.9%.
pub(crate) fn percentile_label(inverse: f64) -> String {
    if inverse <= 1.0 {
        return "0%".into();
    }
    let p = 100.0 * (1.0 - 1.0 / inverse);
    let decimals = (inverse.log10().round() as i32 - 2).max(0) as usize;
    format!("{p:.decimals$}%")
}

/// A latency axis label in milliseconds, without trailing zeros: 0.01, 0.5, 20, 1000.
pub(crate) fn ms_label(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else {
        let s = format!("{ms:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// [`nice_ceiling`] for values of any size (log axes may end below 1 ms).
fn nice_ceiling_any(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    decade * nice_ceiling(v / decade)
}

/// The spectrum: latency against 1/(1−p), both on log axes.
pub(crate) fn spectrum(curves: &[Curve], max_inverse: f64) -> Result<String, ReportError> {
    let ys = curves.iter().flat_map(|c| c.points.iter().map(|p| p.1));
    let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    // Round ends a little outside the data, so no curve runs along an axis.
    let (lo, hi) = if lo > hi {
        (0.1, 10.0)
    } else {
        (nice_floor(lo / 1.25), nice_ceiling_any(hi * 1.3))
    };
    let x_hi = 10f64.powf(max_inverse.max(100.0).log10().ceil()).min(1e7);
    let keys: Vec<f64> = [1.0, 2.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7]
        .into_iter()
        .filter(|k| *k <= x_hi)
        .collect();
    svg(
        "spectrum",
        "Percentile spectrum of response time, one curve per run",
        (1000, 520),
        |root| {
            let mut chart = ChartBuilder::on(root)
                .caption(
                    "Response time by percentile",
                    (FONT, 20).into_font().color(&AXIS_TEXT),
                )
                .margin(18)
                .x_label_area_size(52)
                .y_label_area_size(72)
                .build_cartesian_2d(
                    (1.0..x_hi).log_scale().with_key_points(keys),
                    (lo..hi).log_scale(),
                )
                .map_err(text)?;
            chart
                .configure_mesh()
                .x_desc("percentile (log scale of 1/(1−p): each step right is ten times rarer)")
                .y_desc("response time (ms, log scale)")
                .x_label_formatter(&|x| percentile_label(*x))
                .y_label_formatter(&|y| ms_label(*y))
                .label_style((FONT, 16).into_font().color(&AXIS_TEXT))
                .axis_desc_style((FONT, 17).into_font().color(&AXIS_TEXT))
                .bold_line_style(GRID)
                .light_line_style(WHITE)
                .draw()
                .map_err(text)?;
            for c in curves {
                draw_curve(&mut chart, c, true)?;
            }
            legend(&mut chart, SeriesLabelPosition::UpperLeft)
        },
    )
    .map_err(fail("spectrum"))
}

/// Which value of a band a line or fill edge follows.
type Pick = fn(&Band) -> f64;

/// Per-interval bands of one run: (start s, end s, p50, p99, max) in ms.
pub(crate) struct Band {
    pub start: f64,
    pub end: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// What one run's latency timeline shows.
pub(crate) struct Timeline<'a> {
    pub id: String,
    pub title: String,
    pub look: Look,
    pub bands: &'a [Band],
    /// (intended offset s, response ms) of sampled requests.
    pub dots: &'a [(f64, f64)],
    pub spans: &'a [Span],
    pub x_max: f64,
    pub y_max: f64,
}

/// Latency over time for one run: max, p99 and p50 per interval as stepped lines over filled
/// bands, sampled requests as dots, scenario events shaded.
pub(crate) fn timeline(t: &Timeline) -> Result<String, ReportError> {
    svg(&t.id, &t.title, (1000, 330), |root| {
        let mut chart = time_chart(root, &t.title, "response time (ms)", t.x_max, t.y_max)?;
        shade(&mut chart, t.spans, (0.0, t.y_max))?;
        fill_bands(&mut chart, t.bands, t.look.color)?;
        if !t.dots.is_empty() {
            let dot = darker(t.look.color).mix(0.55).filled();
            chart
                .draw_series(t.dots.iter().map(|&(x, y)| Circle::new((x, y), 3, dot)))
                .map_err(text)?
                .label("one request, placed at its intended send time")
                .legend(move |(x, y)| Circle::new((x + 12, y), 3, dot));
        }
        let band_lines: [(&str, LineKind, u32, Pick); 3] = [
            ("max per interval", LineKind::Dotted, 2, |b: &Band| b.max),
            ("p99 per interval", LineKind::Dashed, 2, |b: &Band| b.p99),
            ("p50 per interval", LineKind::Solid, 3, |b: &Band| b.p50),
        ];
        for (label, line, width, pick) in band_lines {
            for (i, segment) in segments(t.bands).into_iter().enumerate() {
                let points = steps(segment, pick);
                let look = Look {
                    color: darker(t.look.color),
                    line,
                    marker: t.look.marker,
                };
                let curve = Curve {
                    label: label.into(),
                    look,
                    points,
                    marks: vec![],
                    width,
                    legend_marker: false,
                };
                draw_curve(&mut chart, &curve, i == 0)?;
            }
        }
        legend(&mut chart, SeriesLabelPosition::UpperRight)
    })
    .map_err(fail("timeline"))
}

fn darker(c: RGBColor) -> RGBColor {
    RGBColor(
        (f64::from(c.0) * 0.8) as u8,
        (f64::from(c.1) * 0.8) as u8,
        (f64::from(c.2) * 0.8) as u8,
    )
}

/// Runs of back-to-back intervals: a missing interval (nothing finished in it) breaks a band.
fn segments(bands: &[Band]) -> Vec<&[Band]> {
    let mut out = Vec::new();
    let mut from = 0;
    for i in 1..=bands.len() {
        if i == bands.len() || (bands[i].start - bands[i - 1].end).abs() > 1e-9 {
            if from < i {
                out.push(&bands[from..i]);
            }
            from = i;
        }
    }
    out
}

/// A stepped line: each interval's value held flat across it.
fn steps(bands: &[Band], pick: impl Fn(&Band) -> f64) -> Vec<(f64, f64)> {
    bands
        .iter()
        .flat_map(|b| [(b.start, pick(b)), (b.end, pick(b))])
        .collect()
}

fn fill_bands(chart: &mut Chart, bands: &[Band], color: RGBColor) -> Result<(), String> {
    for segment in segments(bands) {
        let layers: [(Pick, Pick, f64); 2] =
            [(|b| b.p99, |b| b.max, 0.10), (|b| b.p50, |b| b.p99, 0.22)];
        for (low, high, alpha) in layers {
            let mut outline = steps(segment, high);
            outline.extend(steps(segment, low).into_iter().rev());
            chart
                .draw_series(std::iter::once(Polygon::new(
                    outline,
                    color.mix(alpha).filled(),
                )))
                .map_err(text)?;
        }
    }
    Ok(())
}

fn time_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    title: &str,
    y_desc: &str,
    x_max: f64,
    y_max: f64,
) -> Result<Chart<'a, 'b>, String> {
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FONT, 18).into_font().color(&AXIS_TEXT))
        .margin(16)
        .x_label_area_size(46)
        .y_label_area_size(72)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc("time since the start of the run (s)")
        .x_label_formatter(&|x| {
            if x_max >= 5.0 {
                format!("{x:.0}")
            } else {
                format!("{x:.1}")
            }
        })
        .y_desc(y_desc)
        .y_label_formatter(&|y| ms_label(*y))
        .label_style((FONT, 16).into_font().color(&AXIS_TEXT))
        .axis_desc_style((FONT, 17).into_font().color(&AXIS_TEXT))
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .draw()
        .map_err(text)?;
    Ok(chart)
}

/// A chart of one value per interval over time, one stepped line per run, events shaded.
pub(crate) struct OverTime<'a> {
    pub id: &'static str,
    pub title: &'static str,
    pub y_desc: &'static str,
    pub curves: &'a [Curve],
    /// Horizontal reference lines: (label, y).
    pub references: &'a [(String, f64)],
    pub spans: &'a [Span],
    pub x_max: f64,
}

pub(crate) fn over_time(c: &OverTime) -> Result<String, ReportError> {
    let data_max = c
        .curves
        .iter()
        .flat_map(|k| k.points.iter().map(|p| p.1))
        .chain(c.references.iter().map(|r| r.1))
        .fold(0.0, f64::max);
    let y_max = nice_ceiling(data_max * 1.1);
    svg(c.id, c.title, (1000, 330), |root| {
        let mut chart = time_chart(root, c.title, c.y_desc, c.x_max, y_max)?;
        shade(&mut chart, c.spans, (0.0, y_max))?;
        let grey = GREY;
        for (label, y) in c.references {
            let look = Look {
                color: grey,
                line: LineKind::Dotted,
                marker: Marker::Square,
            };
            let reference = Curve {
                label: label.clone(),
                look,
                points: vec![(0.0, *y), (c.x_max, *y)],
                marks: vec![],
                width: 1,
                legend_marker: false,
            };
            draw_curve(&mut chart, &reference, true)?;
        }
        for curve in c.curves {
            draw_curve(&mut chart, curve, true)?;
        }
        legend(&mut chart, SeriesLabelPosition::LowerRight)
    })
    .map_err(fail(c.id))
}

/// Round multiples of a power of ten that make readable axis ends.
const NICE: [f64; 11] = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0];

/// The smallest round number (see [`NICE`]) at or above `v`, and at least 1.
pub(crate) fn nice_ceiling(v: f64) -> f64 {
    if v.is_nan() || v <= 1.0 {
        return 1.0;
    }
    let decade = 10f64.powf(v.log10().floor());
    NICE.into_iter()
        .map(|m| m * decade)
        .find(|x| *x >= v * (1.0 - 1e-12))
        .unwrap_or(10.0 * decade)
}

/// The largest round number at or below `v` (for positive `v`).
fn nice_floor(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    NICE.into_iter()
        .rev()
        .map(|m| m * decade)
        .find(|x| *x <= v * (1.0 + 1e-12))
        .unwrap_or(decade)
}

/// A chart against the offered rate (the sweep's x axis), spans shaded.
pub(crate) struct RateChart<'a> {
    pub id: &'static str,
    pub title: &'static str,
    pub y_desc: &'static str,
    pub curves: &'a [Curve],
    pub spans: &'a [Span],
    pub x_max: f64,
    pub y_max: f64,
    /// The y values are log10 of milliseconds: label the axis with 10^y.
    pub log_y: bool,
}

pub(crate) fn rate_chart(c: &RateChart) -> Result<String, ReportError> {
    let y_min = if c.log_y {
        c.curves
            .iter()
            .flat_map(|k| k.points.iter().map(|p| p.1))
            .fold(c.y_max, f64::min)
            .floor()
    } else {
        0.0
    };
    svg(c.id, c.title, (1000, 330), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(c.title, (FONT, 18).into_font().color(&AXIS_TEXT))
            .margin(16)
            .x_label_area_size(46)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..c.x_max, y_min..c.y_max)
            .map_err(text)?;
        let log_y = c.log_y;
        chart
            .configure_mesh()
            .x_desc("offered rate (req/s)")
            .y_desc(c.y_desc)
            // On the log axis, one label per decade: 10, 100, 1000 ms rather than 31.623.
            .y_labels(if log_y {
                (c.y_max - y_min) as usize + 1
            } else {
                10
            })
            .y_label_formatter(&|y| {
                // On the log axis, label whole decades only: 10, 100, 1000 ms, not 31.623.
                if log_y && (y - y.round()).abs() > 1e-9 {
                    String::new()
                } else if log_y {
                    ms_label(10f64.powf(*y))
                } else {
                    format!("{y:.0}")
                }
            })
            .label_style((FONT, 16).into_font().color(&AXIS_TEXT))
            .axis_desc_style((FONT, 17).into_font().color(&AXIS_TEXT))
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()
            .map_err(text)?;
        shade(&mut chart, c.spans, (y_min, c.y_max))?;
        for curve in c.curves {
            draw_curve(&mut chart, curve, true)?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
    .map_err(fail(c.id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_axis_labels() {
        // Each row: the 1/(1−p) key point and the label a reader expects.
        let rows = [
            (1.0, "0%"),
            (2.0, "50%"),
            (10.0, "90%"),
            (100.0, "99%"),
            (1e3, "99.9%"),
            (1e4, "99.99%"),
            (1e5, "99.999%"),
        ];
        for (x, want) in rows {
            assert_eq!(percentile_label(x), want);
        }
    }

    #[test]
    fn latency_labels_and_ceilings() {
        assert_eq!(ms_label(0.01), "0.01");
        assert_eq!(ms_label(10.0), "10");
        assert_eq!(ms_label(1000.0), "1000");
        assert_eq!(nice_ceiling(1060.0), 1200.0);
        assert_eq!(nice_ceiling(0.0), 1.0);
        assert_eq!(nice_ceiling(450.0), 500.0);
        assert_eq!(
            nice_ceiling(1000.0),
            1000.0,
            "a round value is its own ceiling"
        );
        assert_eq!(nice_floor(8.0), 8.0);
        assert_eq!(nice_floor(7.9), 6.0);
        assert_eq!(nice_ceiling_any(0.013), 0.015);
    }
}

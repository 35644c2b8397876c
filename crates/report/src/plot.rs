//! The charts of the HTML report, drawn with plotters into SVG strings.
//!
//! Every run is told apart by marker shape as well as colour, so a report printed in greyscale
//! (or read with colour-blind eyes) still says which run is which: colours come from the
//! Okabe–Ito palette and markers from five shapes, both cycling with co-prime periods, so the
//! first 35 runs each get their own pair. The line style tells the loop: open loops solid,
//! closed loops dashed, paced and schedule-tracking loops dotted.
//!
//! Legends never cover data: each chart's legend is drawn below its plot area, in a group of
//! its own (`<g class="legend">`) that a browser test can measure.
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
    TriangleDown,
}

/// The marker shapes runs cycle through (five: co-prime with the palette's seven).
pub(crate) const MARKERS: [Marker; 5] = [
    Marker::Circle,
    Marker::Triangle,
    Marker::Square,
    Marker::Diamond,
    Marker::TriangleDown,
];

/// Okabe–Ito colours ordered dark, light, dark, … so neighbours differ in greyscale too. Its
/// yellow is left out: too faint on white for a line.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(230, 159, 0),   // orange
    RGBColor(0, 0, 0),       // black
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
];

/// The look of the `index`-th run. Colour and marker advance together, so neighbours differ in
/// both, and with periods 7 and 5 no pair repeats before the 36th run.
pub(crate) fn look_of(index: usize, line: LineKind) -> Look {
    Look {
        color: PALETTE[index % PALETTE.len()],
        line,
        marker: MARKERS[index % MARKERS.len()],
    }
}

/// How big a chart is drawn: full width, or one cell of a grid of small multiples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    Full,
    Small,
}

impl Size {
    fn width(self) -> u32 {
        match self {
            Size::Full => 1000,
            Size::Small => 330,
        }
    }
    fn font(self) -> u32 {
        match self {
            Size::Full => 16,
            Size::Small => 12,
        }
    }
    /// Pixels from the canvas's left edge to the plot area's (margin plus y labels).
    fn plot_left(self) -> u32 {
        match self {
            Size::Full => 16 + 72,
            Size::Small => 8 + 44,
        }
    }
}

const GRID: RGBColor = RGBColor(225, 225, 225);
const AXIS_TEXT: RGBColor = RGBColor(40, 40, 40);
const SHADE: RGBColor = RGBColor(120, 120, 120);
/// Estimates and reference lines: not a run, so not a run colour.
pub(crate) const GREY: RGBColor = RGBColor(110, 110, 110);
const FONT: &str = "sans-serif";

/// A curve of one run on a chart.
#[derive(Debug, Clone)]
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

/// One line of a legend.
pub(crate) struct Entry {
    pub label: String,
    pub look: Look,
    pub width: u32,
    pub glyph: Glyph,
}

/// What a legend line shows beside its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Glyph {
    /// A short line in the look's style, with the look's marker in its middle when `marker`.
    Line { marker: bool },
    /// One sampled request: a dot.
    Dot,
}

impl Curve {
    /// The curve's legend line.
    pub(crate) fn entry(&self) -> Entry {
        Entry {
            label: self.label.clone(),
            look: self.look,
            width: self.width,
            glyph: Glyph::Line {
                marker: self.legend_marker,
            },
        }
    }
}

/// Renders `draw` onto a fresh white SVG canvas: a plot area `plot_height` tall and, below it,
/// the legend of `entries`. Returns the SVG text with the root element given `id` and an
/// accessible label.
fn svg(
    id: &str,
    title: &str,
    size: Size,
    plot_height: u32,
    entries: &[Entry],
    draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Result<(), String>,
) -> Result<String, String> {
    let (legend, legend_height) = legend_group(size, entries, plot_height)?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (size.width(), plot_height + legend_height))
            .into_drawing_area();
        root.fill(&WHITE).map_err(text)?;
        let (plot, _) = root.split_vertically(plot_height);
        draw(&plot)?;
        root.present().map_err(text)?;
    }
    let attrs = format!(
        "<svg id=\"{id}\" role=\"img\" aria-label=\"{}\" ",
        crate::escape::escape(title)
    );
    let mut out = out.replacen("<svg ", &attrs, 1);
    let end = out.rfind("</svg>").ok_or("plotters wrote no </svg>")?;
    out.insert_str(end, &legend);
    Ok(out)
}

/// The legend of `entries` as an SVG group placed `top` pixels down, below the plot area it
/// describes, and its height. The group is drawn on a canvas of its own and spliced in, so it
/// carries a class a test (or a stylesheet) can find.
fn legend_group(size: Size, entries: &[Entry], top: u32) -> Result<(String, u32), String> {
    if entries.is_empty() {
        return Ok((String::new(), 0));
    }
    let font = size.font();
    let row = font + 8;
    let columns = if size == Size::Full && entries.len() > 3 {
        2
    } else {
        1
    };
    let rows = entries.len().div_ceil(columns) as u32;
    let (pad, gap) = (6, 6);
    let height = gap + rows * row + 2 * pad + 2;
    let (left, right) = (size.plot_left(), size.width() - 8);
    let column_width = (right - left - 2 * pad) / columns as u32;
    // A label longer than its column would run past the box: cut it, with an ellipsis.
    let max_chars = ((column_width - 40) as f64 / (f64::from(font) * 0.56)) as usize;
    let mut out = String::new();
    {
        let area = SVGBackend::with_string(&mut out, (size.width(), height)).into_drawing_area();
        let frame = [(left as i32, gap as i32), (right as i32, height as i32 - 2)];
        area.draw(&Rectangle::new(frame, WHITE.filled()))
            .map_err(text)?;
        area.draw(&Rectangle::new(
            frame,
            RGBColor(160, 160, 160).stroke_width(1),
        ))
        .map_err(text)?;
        let label_style = (FONT, font)
            .into_font()
            .color(&AXIS_TEXT)
            .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, e) in entries.iter().enumerate() {
            let (col, r) = (i as u32 / rows, i as u32 % rows);
            let x = (left + pad + col * column_width + 4) as i32;
            let y = (gap + pad + r * row + row / 2) as i32;
            draw_glyph(&area, e, (x, y))?;
            let label = shorten(&e.label, max_chars);
            area.draw(&Text::new(label, (x + 34, y), label_style.clone()))
                .map_err(text)?;
        }
        area.present().map_err(text)?;
    }
    let inner_start = out.find('>').map_or(0, |i| i + 1);
    let inner_end = out.rfind("</svg>").unwrap_or(out.len());
    Ok((
        format!(
            "<g class=\"legend\" transform=\"translate(0,{top})\">{}</g>\n",
            &out[inner_start..inner_end]
        ),
        height,
    ))
}

/// Draws the glyph of a legend line, 24 px wide from `at`.
fn draw_glyph(
    area: &DrawingArea<SVGBackend, Shift>,
    e: &Entry,
    at: (i32, i32),
) -> Result<(), String> {
    match e.glyph {
        Glyph::Dot => area
            .draw(&Circle::new((at.0 + 12, at.1), 3, e.look.color.filled()))
            .map_err(text),
        Glyph::Line { marker } => {
            let s = style(e.look, e.width.min(3));
            for (a, b) in legend_spans(e.look.line).into_iter().filter(|(a, b)| a < b) {
                area.draw(&PathElement::new(
                    vec![(at.0 + a, at.1), (at.0 + b, at.1)],
                    s,
                ))
                .map_err(text)?;
            }
            if marker {
                let mark = EmptyElement::at(at)
                    + marker_fill(e.look, (12, 0), false)
                    + marker_outline(e.look, (12, 0));
                area.draw(&mark).map_err(text)?;
            }
            Ok(())
        }
    }
}

/// `label` cut to `max` characters, an ellipsis marking the cut.
fn shorten(label: &str, max: usize) -> String {
    if label.chars().count() <= max {
        return label.to_string();
    }
    let kept: String = label.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

fn style(look: Look, width: u32) -> ShapeStyle {
    look.color.stroke_width(width)
}

/// Draws `c` on `chart`: its line, then its markers.
fn draw_curve<'a, DB, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    c: &Curve,
) -> Result<(), String>
where
    DB: DrawingBackend + 'a,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let s = style(c.look, c.width);
    let pts = c.points.clone();
    match c.look.line {
        LineKind::Solid => chart.draw_series(LineSeries::new(pts, s)).map_err(text)?,
        LineKind::Dashed => chart
            .draw_series(DashedLineSeries::new(pts, 9, 5, s))
            .map_err(text)?,
        LineKind::Dotted => chart
            .draw_series(DashedLineSeries::new(pts, 2, 4, s))
            .map_err(text)?,
    };
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
pub(crate) fn marker_points(m: Marker, at: (i32, i32)) -> Vec<(i32, i32)> {
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
        Marker::Diamond => &[(0, -7), (7, 0), (0, 7), (-7, 0)],
        Marker::TriangleDown => &[(0, 6), (6, -5), (-6, -5)],
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

/// A shaped run's stage boundaries: a thin dashed rule where each stage begins, its title at
/// the foot of the chart (the top belongs to the scenario's shaded events).
fn stage_lines(chart: &mut Chart, stages: &[(f64, String)], y_max: f64) -> Result<(), String> {
    let rule = RGBColor(90, 90, 90).mix(0.7).stroke_width(1);
    for &(x, _) in stages.iter().filter(|(x, _)| *x > 0.0) {
        chart
            .draw_series(DashedLineSeries::new([(x, 0.0), (x, y_max)], 4, 4, rule))
            .map_err(text)?;
    }
    let label_style = (FONT, 11).into_font().color(&RGBColor(70, 70, 70));
    chart
        .draw_series(stages.iter().map(|(x, title)| {
            Text::new(
                format!(" stage {title}"),
                (*x, y_max * 0.1),
                label_style.clone(),
            )
        }))
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

/// The axes of a page's spectra, shared so that small multiples compare at a glance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SpectrumAxes {
    /// Response time (ms), log scale: from one decade below the smallest recorded value to a
    /// round number above the largest.
    pub y: (f64, f64),
    /// The right end of the 1/(1−p) axis: a power of ten.
    pub x_hi: f64,
}

impl SpectrumAxes {
    /// Axes that hold every point of `curves`, and percentiles out to `max_inverse`.
    pub(crate) fn fit(curves: &[Curve], max_inverse: f64) -> SpectrumAxes {
        let ys = curves
            .iter()
            .flat_map(|c| c.points.iter().map(|p| p.1))
            .filter(|y| *y > 0.0);
        let (lo, hi) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
        let y = if lo > hi {
            (0.1, 10.0)
        } else {
            (lo / 10.0, nice_ceiling_any(hi * 1.3))
        };
        let x_hi = 10f64.powf(max_inverse.max(100.0).log10().ceil()).min(1e7);
        SpectrumAxes { y, x_hi }
    }
}

/// One spectrum chart: its curves on a page's shared axes.
pub(crate) struct Spectrum<'a> {
    pub id: String,
    pub title: String,
    pub curves: &'a [Curve],
    pub axes: SpectrumAxes,
    pub size: Size,
}

/// The spectrum: latency against 1/(1−p), both on log axes, the legend below.
pub(crate) fn spectrum(s: &Spectrum) -> Result<String, ReportError> {
    let SpectrumAxes { y: (lo, hi), x_hi } = s.axes;
    // A small chart has no room for "0%" beside "50%".
    let first_key = if s.size == Size::Full { 1.0 } else { 2.0 };
    let keys: Vec<f64> = [1.0, 2.0, 10.0, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7]
        .into_iter()
        .filter(|k| *k >= first_key && *k <= x_hi)
        .collect();
    let entries: Vec<Entry> = s.curves.iter().map(Curve::entry).collect();
    let (height, font, full) = match s.size {
        Size::Full => (480, 16, true),
        Size::Small => (240, 12, false),
    };
    svg(&s.id, &s.title, s.size, height, &entries, |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(&s.title, (FONT, font + 3).into_font().color(&AXIS_TEXT))
            .margin(if full { 18 } else { 8 })
            // Room for the last percentile label ("99.99%") centred on the right edge.
            .margin_right(if full { 30 } else { 20 })
            .x_label_area_size(if full { 52 } else { 34 })
            .y_label_area_size(if full { 72 } else { 44 })
            .build_cartesian_2d(
                (1.0..x_hi).log_scale().with_key_points(keys),
                (lo..hi).log_scale(),
            )
            .map_err(text)?;
        chart
            .configure_mesh()
            .x_desc(if full {
                "percentile (log scale of 1/(1−p): each step right is ten times rarer)"
            } else {
                "percentile"
            })
            .y_desc(if full {
                "response time (ms, log scale)"
            } else {
                "ms"
            })
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|y| ms_label(*y))
            .label_style((FONT, font).into_font().color(&AXIS_TEXT))
            .axis_desc_style((FONT, font + 1).into_font().color(&AXIS_TEXT))
            .bold_line_style(GRID)
            .light_line_style(WHITE)
            .draw()
            .map_err(text)?;
        for c in s.curves {
            draw_curve(&mut chart, c)?;
        }
        Ok(())
    })
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
    /// Where each stage of a shaped run begins (seconds) and its title.
    pub stages: &'a [(f64, String)],
    pub x_max: f64,
    pub y_max: f64,
    pub size: Size,
}

/// The band lines of a timeline: label, style, width and the value each follows.
const BAND_LINES: [(&str, LineKind, u32, Pick); 3] = [
    ("max per interval", LineKind::Dotted, 2, |b: &Band| b.max),
    ("p99 per interval", LineKind::Dashed, 2, |b: &Band| b.p99),
    ("p50 per interval", LineKind::Solid, 3, |b: &Band| b.p50),
];

/// Latency over time for one run: max, p99 and p50 per interval as stepped lines over filled
/// bands, sampled requests as dots, scenario events shaded.
pub(crate) fn timeline(t: &Timeline) -> Result<String, ReportError> {
    let line_look = |line| Look {
        color: darker(t.look.color),
        line,
        marker: t.look.marker,
    };
    let mut entries: Vec<Entry> = Vec::new();
    if !t.dots.is_empty() {
        entries.push(Entry {
            label: "one request, placed at its intended send time".into(),
            look: Look {
                color: darker(t.look.color),
                ..t.look
            },
            width: 1,
            glyph: Glyph::Dot,
        });
    }
    entries.extend(BAND_LINES.iter().map(|(label, line, width, _)| Entry {
        label: (*label).into(),
        look: line_look(*line),
        width: *width,
        glyph: Glyph::Line { marker: false },
    }));
    let height = plot_height(t.size);
    svg(&t.id, &t.title, t.size, height, &entries, |root| {
        let axes = TimeAxes {
            title: &t.title,
            y_desc: match t.size {
                Size::Full => "response time (ms)",
                Size::Small => "ms",
            },
            x_max: t.x_max,
            y_max: t.y_max,
            size: t.size,
        };
        let mut chart = time_chart(root, &axes)?;
        shade(&mut chart, t.spans, (0.0, t.y_max))?;
        stage_lines(&mut chart, t.stages, t.y_max)?;
        fill_bands(&mut chart, t.bands, t.look.color)?;
        if !t.dots.is_empty() {
            let dot = darker(t.look.color).mix(0.55).filled();
            chart
                .draw_series(t.dots.iter().map(|&(x, y)| Circle::new((x, y), 3, dot)))
                .map_err(text)?;
        }
        for (label, line, width, pick) in BAND_LINES {
            for segment in segments(t.bands) {
                let curve = Curve {
                    label: label.into(),
                    look: line_look(line),
                    points: steps(segment, pick),
                    marks: vec![],
                    width,
                    legend_marker: false,
                };
                draw_curve(&mut chart, &curve)?;
            }
        }
        Ok(())
    })
    .map_err(fail("timeline"))
}

/// The plot area's height of a chart over time or rate.
fn plot_height(size: Size) -> u32 {
    match size {
        Size::Full => 300,
        Size::Small => 200,
    }
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

/// What a chart over time is drawn on.
struct TimeAxes<'t> {
    title: &'t str,
    y_desc: &'t str,
    x_max: f64,
    y_max: f64,
    size: Size,
}

fn time_chart<'a, 'b>(
    root: &'a DrawingArea<SVGBackend<'b>, Shift>,
    a: &TimeAxes,
) -> Result<Chart<'a, 'b>, String> {
    let (font, full) = (a.size.font(), a.size == Size::Full);
    let x_max = a.x_max;
    let mut chart = ChartBuilder::on(root)
        .caption(a.title, (FONT, font + 2).into_font().color(&AXIS_TEXT))
        .margin(if full { 16 } else { 8 })
        .x_label_area_size(if full { 46 } else { 34 })
        .y_label_area_size(if full { 72 } else { 44 })
        .build_cartesian_2d(0.0..x_max, 0.0..a.y_max)
        .map_err(text)?;
    chart
        .configure_mesh()
        .x_desc(if full {
            "time since the start of the run (s)"
        } else {
            "time (s)"
        })
        .x_label_formatter(&|x| {
            if x_max >= 5.0 {
                format!("{x:.0}")
            } else {
                format!("{x:.1}")
            }
        })
        .x_labels(if full { 10 } else { 5 })
        .y_labels(if full { 10 } else { 5 })
        .y_desc(a.y_desc)
        .y_label_formatter(&|y| ms_label(*y))
        .label_style((FONT, font).into_font().color(&AXIS_TEXT))
        .axis_desc_style((FONT, font + 1).into_font().color(&AXIS_TEXT))
        .bold_line_style(GRID)
        .light_line_style(WHITE)
        .draw()
        .map_err(text)?;
    Ok(chart)
}

/// A chart of one value per interval over time, one stepped line per run, events shaded.
pub(crate) struct OverTime<'a> {
    pub id: String,
    pub title: String,
    pub y_desc: &'static str,
    pub curves: &'a [Curve],
    /// Horizontal reference lines: (label, y).
    pub references: &'a [(String, f64)],
    pub spans: &'a [Span],
    pub x_max: f64,
    /// The y axis's top; `None` fits this chart's own data.
    pub y_max: Option<f64>,
    pub size: Size,
}

pub(crate) fn over_time(c: &OverTime) -> Result<String, ReportError> {
    let y_max = c
        .y_max
        .unwrap_or_else(|| over_time_ceiling(c.curves, c.references));
    let references: Vec<Curve> = c
        .references
        .iter()
        .map(|(label, y)| Curve {
            label: label.clone(),
            look: Look {
                color: GREY,
                line: LineKind::Dotted,
                marker: Marker::Square,
            },
            points: vec![(0.0, *y), (c.x_max, *y)],
            marks: vec![],
            width: 1,
            legend_marker: false,
        })
        .collect();
    let entries: Vec<Entry> = references
        .iter()
        .chain(c.curves)
        .map(Curve::entry)
        .collect();
    svg(
        &c.id,
        &c.title,
        c.size,
        plot_height(c.size),
        &entries,
        |root| {
            let axes = TimeAxes {
                title: &c.title,
                y_desc: c.y_desc,
                x_max: c.x_max,
                y_max,
                size: c.size,
            };
            let mut chart = time_chart(root, &axes)?;
            shade(&mut chart, c.spans, (0.0, y_max))?;
            for curve in references.iter().chain(c.curves) {
                draw_curve(&mut chart, curve)?;
            }
            Ok(())
        },
    )
    .map_err(fail("over time"))
}

/// A round top for a chart over time that holds every curve and reference line.
pub(crate) fn over_time_ceiling(curves: &[Curve], references: &[(String, f64)]) -> f64 {
    let data_max = curves
        .iter()
        .flat_map(|k| k.points.iter().map(|p| p.1))
        .chain(references.iter().map(|r| r.1))
        .fold(0.0, f64::max);
    nice_ceiling(data_max * 1.1)
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
    let entries: Vec<Entry> = c.curves.iter().map(Curve::entry).collect();
    svg(c.id, c.title, Size::Full, 300, &entries, |root| {
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
            draw_curve(&mut chart, curve)?;
        }
        Ok(())
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
        assert_eq!(nice_ceiling_any(0.013), 0.015);
    }
}

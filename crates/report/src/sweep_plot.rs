//! The capacity sweep's two charts: offered rate against achieved rate, and response
//! percentiles against offered rate on a log scale, each with the cliff shaded grey, the
//! model's cliff blue, and every step the client side held back (GENERATOR-BOUND,
//! POOL-BOUND) orange, so a limit of the tool's is never read as the target's.

use sojourn_core::sweep::Status;

use crate::error::ReportError;
use crate::plot::{self, Curve, LineKind, Look, Marker, Span, Tint, PALETTE};

/// One step of a sweep as the charts need it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPoint {
    pub offered: f64,
    pub achieved: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Who held the step back.
    pub status: Status,
}

/// What to shade on the offered-rate axis: the measured cliff, and the model's beside it.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Cliffs {
    pub measured: Option<(f64, f64)>,
    pub model: Option<(f64, f64)>,
}

fn look(i: usize, line: LineKind, marker: Marker) -> Look {
    Look {
        color: PALETTE[i],
        line,
        marker,
    }
}

fn curve(label: &str, look: Look, points: Vec<(f64, f64)>) -> Curve {
    Curve {
        label: label.into(),
        look,
        marks: points.iter().map(|&(x, y)| (x, y, false)).collect(),
        points,
        width: 2,
        legend_marker: true,
    }
}

/// The cliffs, and a narrow band at each step the client side held back.
fn spans(points: &[SweepPoint], cliffs: Cliffs) -> Vec<Span> {
    let band = |(start, end): (f64, f64), label: &str, tint| Span {
        label: label.into(),
        start,
        end,
        tint,
    };
    let width = x_max(points) / 80.0;
    let mut out: Vec<Span> = cliffs
        .measured
        .map(|c| band(c, "cliff", Tint::Target))
        .into_iter()
        .chain(cliffs.model.map(|c| band(c, "model cliff", Tint::Model)))
        .collect();
    out.extend(
        points
            .iter()
            .filter(|p| !p.status.judges_the_target())
            .map(|p| {
                let label = match p.status {
                    Status::GeneratorBound => "generator-bound",
                    _ => "pool-bound",
                };
                band((p.offered - width, p.offered + width), label, Tint::Client)
            }),
    );
    out
}

fn x_max(points: &[SweepPoint]) -> f64 {
    plot::nice_ceiling(points.iter().map(|p| p.offered).fold(0.0, f64::max) * 1.05)
}

/// Achieved against offered, with the diagonal a target that keeps up would follow.
pub fn rates(points: &[SweepPoint], cliffs: Cliffs) -> Result<String, ReportError> {
    let x_max = x_max(points);
    let achieved = points.iter().map(|p| (p.offered, p.achieved)).collect();
    let curves = [
        Curve {
            legend_marker: false,
            marks: Vec::new(),
            width: 1,
            ..curve(
                "achieved = offered (keeping up)",
                look(2, LineKind::Dotted, Marker::Square),
                vec![(0.0, 0.0), (x_max, x_max)],
            )
        },
        curve(
            "achieved",
            look(0, LineKind::Solid, Marker::Circle),
            achieved,
        ),
    ];
    plot::rate_chart(&plot::RateChart {
        id: "sweep-rates",
        title: "Offered vs achieved rate",
        y_desc: "achieved (req/s)",
        curves: &curves,
        spans: &spans(points, cliffs),
        x_max,
        y_max: x_max,
        log_y: false,
    })
}

/// Response p50 and p99 (after the settle) against the offered rate, log y.
pub fn latency(points: &[SweepPoint], cliffs: Cliffs) -> Result<String, ReportError> {
    // Plotted as log10(ms) on a linear axis labelled in ms, so the cliff shading still applies.
    let log = |ms: f64| ms.max(1e-3).log10();
    let p50 = points.iter().map(|p| (p.offered, log(p.p50_ms))).collect();
    let p99 = points.iter().map(|p| (p.offered, log(p.p99_ms))).collect();
    let top = points.iter().map(|p| p.p99_ms).fold(1.0, f64::max);
    let curves = [
        curve(
            "response p50",
            look(0, LineKind::Solid, Marker::Circle),
            p50,
        ),
        curve(
            "response p99",
            look(4, LineKind::Dashed, Marker::Triangle),
            p99,
        ),
    ];
    plot::rate_chart(&plot::RateChart {
        id: "sweep-latency",
        title: "Response time against offered rate",
        y_desc: "response time (ms, log scale)",
        curves: &curves,
        spans: &spans(points, cliffs),
        x_max: x_max(points),
        y_max: (top * 1.2).log10().ceil(),
        log_y: true,
    })
}

/// These tests also draw the page the charts go on ([`crate::html::sweep_page`]): only the
/// tests reach back to the page, the charts never do.
#[cfg(test)]
mod tests {
    use super::*;

    fn points() -> Vec<SweepPoint> {
        [
            (20.0, 20.0, 20.0, 250.0),
            (30.0, 30.0, 25.0, 300.0),
            (40.0, 34.0, 400.0, 960.0),
        ]
        .iter()
        .map(|&(offered, achieved, p50_ms, p99_ms)| SweepPoint {
            offered,
            achieved,
            p50_ms,
            p99_ms,
            status: if achieved < offered {
                Status::Saturated
            } else {
                Status::Ok
            },
        })
        .collect()
    }

    fn measured(cliff: (f64, f64)) -> Cliffs {
        Cliffs {
            measured: Some(cliff),
            model: None,
        }
    }

    #[test]
    fn the_page_has_both_charts_and_marks_the_cliff_only_when_found() {
        let page =
            crate::html::sweep_page("t", "target <table>", &points(), measured((30.0, 40.0)))
                .unwrap();
        assert!(page.contains("id=\"sweep-rates\"") && page.contains("id=\"sweep-latency\""));
        assert!(page.contains("target &lt;table&gt;"));
        // One shaded band labelled in each chart.
        assert_eq!(page.matches("\ncliff\n").count(), 2, "{page}");
        let none = crate::html::sweep_page("t", "", &points(), Cliffs::default()).unwrap();
        assert_eq!(none.matches("\ncliff\n").count(), 0);
    }

    /// The model's cliff and the client's limits are shaded apart from the target's cliff, each
    /// in its own colour and with its own label.
    #[test]
    fn client_limits_and_the_model_are_shaded_apart_from_the_cliff() {
        let mut pts = points();
        pts.push(SweepPoint {
            offered: 80.0,
            achieved: 50.0,
            p50_ms: 5.0,
            p99_ms: 50.0,
            status: Status::GeneratorBound,
        });
        let cliffs = Cliffs {
            measured: Some((30.0, 40.0)),
            model: Some((32.0, 36.0)),
        };
        let svg = rates(&pts, cliffs).unwrap();
        for label in ["\ncliff\n", "\nmodel cliff\n", "\ngenerator-bound\n"] {
            assert_eq!(svg.matches(label).count(), 1, "{label:?}");
        }
        // Grey, blue and orange fills.
        for fill in ["#787878", "#0072B2", "#E69F00"] {
            assert!(svg.contains(fill), "{fill} missing");
        }
    }

    #[test]
    fn the_latency_axis_is_logarithmic_in_milliseconds() {
        let svg = latency(&points(), Cliffs::default()).unwrap();
        assert!(!svg.contains("\n31.623\n"), "labels between decades");
        // 20 ms .. 960 ms spans the decades 10, 100 and 1000 ms: labels read in ms, not log10.
        for label in ["\n10\n", "\n100\n", "\n1000\n"] {
            assert!(svg.contains(label), "{label:?} missing");
        }
    }
}

//! The seeds' side-by-side table: one column per run, one row per statistic, and the ratio of
//! two named columns, computed from the raw nanosecond values before anything is rounded.
//!
//! ```text
//! metric         closed        open   open/closed
//! sent           13,500      13,500
//! never sent          0           0
//! count          13,500      13,500
//! p50           1.00 ms     1.00 ms          1.0x
//! p90           1.00 ms   137.76 ms        137.8x
//! ...
//! Ratios computed from raw data before rounding.
//! ```
//!
//! A value that is only a lower bound (censored requests could raise it) prints as `≥`; a ratio
//! built on one says which way it can move.
use std::fmt::Write as _;

use sojourn_core::result::{HistogramSummary, RunResult};

use crate::text::cell;

/// One column: a label, the run it shows, and which of its clocks.
#[derive(Clone, Debug)]
pub struct Column<'a> {
    pub label: String,
    pub result: &'a RunResult,
    pub clock: Clock,
}

/// Which of a run's times a column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// From when each request was due (open loop, a paced loop's slot) or sent (closed loop):
    /// the run's response time.
    Response,
    /// From when each request was sent: the service time, what a paced closed loop's tools
    /// (hey -q, bombardier -r) report.
    FromSend,
}

impl<'a> Column<'a> {
    /// The run's response times.
    pub fn of(label: impl Into<String>, result: &'a RunResult) -> Column<'a> {
        Column {
            label: label.into(),
            result,
            clock: Clock::Response,
        }
    }

    /// The run's times from each send.
    pub fn from_send(label: impl Into<String>, result: &'a RunResult) -> Column<'a> {
        Column {
            clock: Clock::FromSend,
            ..Column::of(label, result)
        }
    }

    /// The histogram this column shows.
    pub fn histogram(&self) -> &'a HistogramSummary {
        match self.clock {
            Clock::Response => &self.result.histograms.response,
            Clock::FromSend => &self.result.histograms.service,
        }
    }
}

/// The ratio `numerator / denominator` between two columns, by label.
#[derive(Clone, Copy, Debug)]
pub struct Ratio<'a> {
    pub numerator: &'a str,
    pub denominator: &'a str,
}

/// The rows: label and percentile (100 is the maximum).
const ROWS: [(&str, f64); 6] = [
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99.9", 99.9),
    ("p99.99", 99.99),
    ("max", 100.0),
];

/// One count of a run, for the rows above the percentiles.
type Count = fn(&RunResult) -> u64;

/// The footnote printed under any table with a ratio column.
pub const RAW_NOTE: &str = "Ratios computed from raw data before rounding.";

/// Renders the table of response times. With `ratio`, adds the ratio column and the footnote;
/// a ratio naming a label that is not a column is left out.
pub fn table(columns: &[Column<'_>], ratio: Option<Ratio<'_>>) -> String {
    let pair = ratio.and_then(|r| {
        let find = |label: &str| columns.iter().position(|c| c.label == label);
        Some((find(r.numerator)?, find(r.denominator)?, r))
    });
    let mut grid: Vec<Vec<String>> = Vec::new();
    let mut head = vec!["metric".to_string()];
    head.extend(columns.iter().map(|c| c.label.to_string()));
    if let Some((_, _, r)) = pair {
        head.push(format!("{}/{}", r.numerator, r.denominator));
    }
    grid.push(head);
    // What each run sent and never sent, so "the same rate" is seen, not claimed.
    let counts: [(&str, Count); 3] = [
        ("sent", |r| {
            r.counts.scheduled.saturating_sub(r.counts.never_sent)
        }),
        ("never sent", |r| r.counts.never_sent),
        ("count", |r| r.histograms.response.count),
    ];
    for (name, count) in counts {
        let mut row = vec![name.to_string()];
        row.extend(columns.iter().map(|c| thousands(count(c.result))));
        grid.push(row);
    }
    for (name, p) in ROWS {
        let mut row = vec![name.to_string()];
        row.extend(columns.iter().map(|c| cell(c.histogram(), p)));
        if let Some((n, d, _)) = pair {
            row.push(ratio_cell(
                columns[n].histogram(),
                columns[d].histogram(),
                p,
            ));
        }
        grid.push(row);
    }
    let mut out = render(&grid);
    if pair.is_some() {
        let _ = writeln!(out, "{RAW_NOTE}");
    }
    out
}

/// Left-aligned first column, right-aligned others, two spaces apart (widths in characters,
/// since `≥` and `µ` are wider in bytes than on screen).
fn render(grid: &[Vec<String>]) -> String {
    let cols = grid.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..cols)
        .map(|i| {
            grid.iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in grid {
        let mut line = String::new();
        for (i, text) in row.iter().enumerate() {
            let pad = width[i] - text.chars().count();
            if i == 0 {
                let _ = write!(line, "{text}{}", " ".repeat(pad));
            } else {
                let _ = write!(line, "  {}{text}", " ".repeat(pad));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// `a / b` at percentile `p` from the exact values. A lower bound on top makes the ratio a lower
/// bound, one underneath an upper bound; with both, it is unknown.
pub fn ratio_cell(a: &HistogramSummary, b: &HistogramSummary, p: f64) -> String {
    let (Some(x), Some(y)) = (a.at(p), b.at(p)) else {
        return "-".into();
    };
    if y.value == 0 {
        return "-".into();
    }
    let r = format_ratio(x.value as f64 / y.value as f64);
    match (x.lower_bound, y.lower_bound) {
        (false, false) => format!("{r}x"),
        (true, false) => format!("≥{r}x"),
        (false, true) => format!("≤{r}x"),
        (true, true) => "?".into(),
    }
}

/// A ratio as the terminal and the page both print it (without its `x`): one decimal from 1
/// up (`78.1`, `1.0`), and two significant digits below 1, so that a ratio of 0.012 never
/// reads `0.0`.
pub fn format_ratio(r: f64) -> String {
    if !r.is_finite() {
        return "-".into();
    }
    if r >= 1.0 || r <= 0.0 {
        return format!("{r:.1}");
    }
    // 0.64 → 2 decimals, 0.012 → 3, 0.0031 → 4: the first two significant digits.
    let decimals = (-r.log10()).floor() as usize + 2;
    format!("{r:.decimals$}")
}

/// `13500` → `13,500`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::check::{assess_closed, assess_open};
    use sojourn_core::record::{Recorder, Stamps};
    use sojourn_core::{Mode, Outcome, RunConfig, RunFacts};
    use std::time::Duration;

    const MS: u64 = 1_000_000;

    /// A run whose response times are exactly `values` (ns), plus `censored` requests still in
    /// flight at 10 s.
    fn run(values: &[u64], censored: u64, mode: Mode) -> RunResult {
        let mut r = Recorder::new(Duration::from_secs(1));
        for (i, &v) in values.iter().enumerate() {
            let at = Duration::from_micros(i as u64);
            r.record(
                &Stamps::on_time(at),
                at + Duration::from_nanos(v),
                Outcome::Ok,
            );
        }
        for _ in 0..censored {
            r.record_in_flight(&Stamps::on_time(Duration::ZERO), Duration::from_secs(10));
        }
        let m = Recorder::merge_all([r]);
        let checks = match mode {
            Mode::Closed => assess_closed(),
            _ => assess_open(&m, 10),
        };
        let facts = RunFacts {
            label: "x".into(),
            mode,
            config: RunConfig::default(),
            scheduled: m.tally.accounted(),
            elapsed: Duration::from_secs(30),
            interrupted: false,
            checks,
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    /// Seed 000's shape: 13,500 requests; the closed loop sees 27 pauses, the open loop the
    /// queue each one leaves behind (here 27 × 150 requests from 200 ms down in 1.3 ms steps).
    /// The p90 ratio, 134.9x, is 135.00 ms over 1.0005 ms (the histogram's 1 ms bucket): computed
    /// from the values, not from the two rounded cells.
    fn seed_000() -> (RunResult, RunResult) {
        let mut closed = vec![MS; 13_473];
        closed.extend([200 * MS; 27]);
        let mut open = vec![MS; 13_500 - 27 * 150];
        for _ in 0..27 {
            open.extend((0..150).map(|j| 200 * MS - j * 1_300_000));
        }
        (run(&closed, 0, Mode::Closed), run(&open, 0, Mode::Open))
    }

    #[test]
    fn seed_000_table_snapshot() {
        let (closed, open) = seed_000();
        let text = table(
            &[Column::of("closed", &closed), Column::of("open", &open)],
            Some(Ratio {
                numerator: "open",
                denominator: "closed",
            }),
        );
        let want = "\
metric         closed       open  open/closed
sent           13,500     13,500
never sent          0          0
count          13,500     13,500
p50           1.00 ms    1.00 ms         1.0x
p90           1.00 ms  135.00 ms       134.9x
p99           1.00 ms  193.59 ms       193.5x
p99.9       200.02 ms  200.02 ms         1.0x
p99.99      200.02 ms  200.02 ms         1.0x
max         200.02 ms  200.02 ms         1.0x
Ratios computed from raw data before rounding.
";
        assert_eq!(text, want, "\n{text}");
    }

    #[test]
    fn three_columns_and_lower_bounds() {
        let (closed, open) = seed_000();
        let censored = run(&[MS; 98], 2, Mode::Open);
        let cols = [
            Column::of("closed", &closed),
            Column::of("open", &open),
            Column::of("model", &censored),
        ];
        let text = table(
            &cols,
            Some(Ratio {
                numerator: "model",
                denominator: "closed",
            }),
        );
        let head = text.lines().next().unwrap();
        assert!(head.ends_with("model  model/closed"), "{head}");
        let max = text.lines().find(|l| l.starts_with("max")).unwrap();
        assert!(
            max.contains("≥10.008 s"),
            "the censored max is a lower bound: {max}"
        );
        assert!(max.ends_with("≥50.0x"), "so is its ratio: {max}");
        let p50 = text.lines().find(|l| l.starts_with("p50")).unwrap();
        assert!(
            !p50.contains('≥'),
            "two censored of 100 cannot move p50: {p50}"
        );
        assert_eq!(
            ratio_cell(
                &censored.histograms.response,
                &censored.histograms.response,
                100.0
            ),
            "?"
        );
    }

    #[test]
    fn no_ratio_no_footnote_and_unknown_labels_are_ignored() {
        let (closed, open) = seed_000();
        let cols = [Column::of("closed", &closed), Column::of("open", &open)];
        for ratio in [
            None,
            Some(Ratio {
                numerator: "nope",
                denominator: "closed",
            }),
        ] {
            let text = table(&cols, ratio);
            assert!(!text.contains(RAW_NOTE), "{text}");
            assert_eq!(
                text.lines().next().unwrap(),
                "metric         closed       open"
            );
        }
    }

    #[test]
    fn thousands_separators() {
        for (n, want) in [(0, "0"), (999, "999"), (1000, "1,000"), (13_500, "13,500")] {
            assert_eq!(thousands(n), want);
        }
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}

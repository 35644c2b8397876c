//! The HdrHistogram percentile-distribution text format (`.hgrm`).
//!
//! Laid out byte for byte as the Java reference implementation's `outputPercentileDistribution`
//! writes it, so the files load in the HdrHistogram plotter and diff cleanly against files other
//! tools wrote: a header, one row per percentile tick (`ticks_per_half` ticks in each half of the
//! remaining distance to 100%), and a `#[Mean …]`, `#[Max …]`, `#[Buckets …]` footer. Sojourn
//! records nanoseconds; rows are scaled by [`HgrmOptions::unit_ratio`] (milliseconds by default),
//! and [`write_result_files`] states the unit in a leading comment line.
use std::io::Write;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use sojourn_core::result::{HistogramSummary, RunResult, PERCENTILES};

use crate::error::ReportError;
use crate::javafmt::fixed;

/// How to print a histogram.
#[derive(Debug, Clone, PartialEq)]
pub struct HgrmOptions {
    /// Recorded values are divided by this before printing: 1e6 turns nanoseconds into
    /// milliseconds.
    pub unit_ratio: f64,
    /// Percentile ticks per half distance to 100% (the reference's default is 5).
    pub ticks_per_half: u32,
    /// Comment lines written before the table (each gets a leading `#`).
    pub comments: Vec<String>,
}

impl Default for HgrmOptions {
    /// Nanoseconds printed as milliseconds, 5 ticks per half distance, no comments.
    fn default() -> Self {
        HgrmOptions {
            unit_ratio: 1e6,
            ticks_per_half: 5,
            comments: Vec::new(),
        }
    }
}

/// One row of the distribution: the highest value equivalent to the bucket reached, the
/// percentile level ticked to, and the count up to that bucket.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tick {
    pub value: u64,
    pub percentile: f64,
    pub total_count: u64,
}

/// The percentile ticks of `h`, as the reference's `PercentileIterator` produces them: levels
/// advance in percent (not quantiles) so the printed levels carry the same rounding.
pub fn ticks(h: &Histogram<u64>, ticks_per_half: u32) -> Vec<Tick> {
    let total = h.len();
    let mut out = Vec::new();
    if total == 0 {
        return out;
    }
    let mut level = 0.0_f64;
    let mut cumulative = 0u64;
    for v in h.iter_recorded() {
        cumulative += v.count_at_value();
        let reached = 100.0 * cumulative as f64 / total as f64;
        let value = h.highest_equivalent(v.value_iterated_to());
        while reached >= level {
            out.push(Tick {
                value,
                percentile: level,
                total_count: cumulative,
            });
            level = next_level(level, ticks_per_half);
            if cumulative == total {
                break;
            }
        }
    }
    // One last step to exactly 100%, at the maximum.
    let max = h.highest_equivalent(h.max());
    out.push(Tick {
        value: max,
        percentile: 100.0,
        total_count: total,
    });
    out
}

/// Equal-sized ticks within each half of the remaining distance to 100%: the tick size halves
/// each time the level crosses 50%, 75%, 87.5%, …
fn next_level(level: f64, ticks_per_half: u32) -> f64 {
    let halvings = ((100.0 / (100.0 - level)).ln() / 2f64.ln()) as i64;
    let ticks = i64::from(ticks_per_half).saturating_mul(2f64.powi((halvings + 1) as i32) as i64);
    level + 100.0 / ticks as f64
}

/// Writes `h` as a percentile distribution.
pub fn write<W: Write>(w: &mut W, h: &Histogram<u64>, opts: &HgrmOptions) -> std::io::Result<()> {
    for c in &opts.comments {
        writeln!(w, "#{c}")?;
    }
    write!(
        w,
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    )?;
    let digits = usize::from(h.sigfig());
    for t in ticks(h, opts.ticks_per_half) {
        let value = fixed(t.value as f64 / opts.unit_ratio, digits);
        let q = t.percentile / 100.0;
        if t.percentile != 100.0 {
            let inverse = fixed(1.0 / (1.0 - q), 2);
            writeln!(
                w,
                "{value:>12} {} {:>10} {inverse:>14}",
                fixed(q, 12),
                t.total_count
            )?;
        } else {
            writeln!(w, "{value:>12} {} {:>10}", fixed(q, 12), t.total_count)?;
        }
    }
    write_footer(w, h, opts.unit_ratio, digits)
}

fn write_footer<W: Write>(
    w: &mut W,
    h: &Histogram<u64>,
    ratio: f64,
    digits: usize,
) -> std::io::Result<()> {
    let (mean, stdev) = mean_and_stdev(h);
    let num = |x: f64| fixed(x / ratio, digits);
    writeln!(
        w,
        "#[Mean    = {:>12}, StdDeviation   = {:>12}]",
        num(mean),
        num(stdev)
    )?;
    writeln!(
        w,
        "#[Max     = {:>12}, Total count    = {:>12}]",
        num(h.max() as f64),
        h.len()
    )?;
    writeln!(
        w,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        sub_buckets(h)
    )
}

/// Mean and standard deviation over bucket midpoints, summed in the reference's order so the
/// printed digits agree (the crate's own `mean` divides inside its loop).
fn mean_and_stdev(h: &Histogram<u64>) -> (f64, f64) {
    let n = h.len();
    if n == 0 {
        return (0.0, 0.0);
    }
    let mid = |v: u64| h.median_equivalent(v) as f64;
    let total: f64 = h
        .iter_recorded()
        .map(|v| mid(v.value_iterated_to()) * v.count_at_value() as f64)
        .sum();
    let mean = total / n as f64;
    let squares: f64 = h
        .iter_recorded()
        .map(|v| {
            let d = mid(v.value_iterated_to()) - mean;
            d * d * v.count_since_last_iteration() as f64
        })
        .sum();
    (mean, (squares / n as f64).sqrt())
}

/// Sub-buckets per bucket: 2 × 10^sigfig rounded up to a power of two (2048 at 3 digits).
fn sub_buckets(h: &Histogram<u64>) -> u64 {
    (2 * 10u64.pow(u32::from(h.sigfig()))).next_power_of_two()
}

/// Which histogram of a result a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Response,
    Service,
    SendLag,
}

impl Which {
    pub const ALL: [Which; 3] = [Which::Response, Which::Service, Which::SendLag];

    /// The file-name part: `response`, `service`, `send_lag`.
    pub fn name(self) -> &'static str {
        match self {
            Which::Response => "response",
            Which::Service => "service",
            Which::SendLag => "send_lag",
        }
    }

    fn meaning(self) -> &'static str {
        match self {
            Which::Response => "response time (done - intended): what a user waits",
            Which::Service => "service time (done - sent): what the server and network spent",
            Which::SendLag => "send lag (sent - intended): time queued in the client",
        }
    }

    pub fn summary(self, r: &RunResult) -> &HistogramSummary {
        match self {
            Which::Response => &r.histograms.response,
            Which::Service => &r.histograms.service,
            Which::SendLag => &r.histograms.send_lag,
        }
    }
}

/// The comment lines that head a result's `.hgrm` file: what it holds, the unit, and which
/// printed percentiles are only lower bounds.
pub fn result_comments(r: &RunResult, which: Which) -> Vec<String> {
    let mut out = vec![
        format!(
            "[sojourn {}: {} of run \"{}\" ({})]",
            r.tool.version,
            which.meaning(),
            r.label,
            r.mode.label()
        ),
        "[Values in milliseconds (recorded in nanoseconds, divided by 1000000)]".to_string(),
    ];
    let summary = which.summary(r);
    let censored = match which {
        Which::Response => r.histograms.censored.as_ref(),
        Which::Service => r.histograms.censored_service.as_ref(),
        Which::SendLag => None,
    };
    if which != Which::SendLag && !summary.lower_bounds.is_empty() {
        let censored = censored.map_or(0, |c| c.count);
        let keys: Vec<String> = PERCENTILES
            .iter()
            .filter(|&&p| summary.at(p).is_some_and(|b| b.lower_bound))
            .map(|p| format!("p{p}"))
            .collect();
        out.push(format!(
            "[{censored} censored requests (unanswered at the end, or timed out) are included at their lower bounds; {} are only lower bounds]",
            keys.join(", ")
        ));
    }
    out
}

/// Writes `<prefix>.response.hgrm`, `<prefix>.service.hgrm` and `<prefix>.send_lag.hgrm`, in
/// milliseconds, and returns their paths.
pub fn write_result_files(prefix: &Path, r: &RunResult) -> Result<Vec<PathBuf>, ReportError> {
    let mut paths = Vec::new();
    for which in Which::ALL {
        let h = which
            .summary(r)
            .histogram()
            .map_err(|source| ReportError::Histogram {
                what: format!("the {} histogram of run \"{}\"", which.name(), r.label),
                source,
            })?;
        let path = with_suffix(prefix, &format!(".{}.hgrm", which.name()));
        let opts = HgrmOptions {
            comments: result_comments(r, which),
            ..HgrmOptions::default()
        };
        let mut text = Vec::new();
        write(&mut text, &h, &opts)?;
        std::fs::write(&path, text).map_err(ReportError::io(&path))?;
        paths.push(path);
    }
    Ok(paths)
}

/// `prefix` with `suffix` appended to its file name (`out/run` → `out/run.response.hgrm`).
pub(crate) fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut name = prefix
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(suffix);
    prefix.with_file_name(name)
}

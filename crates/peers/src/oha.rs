//! oha: `--output-format csv` (per request) and/or `--output-format json` (summary). One oha
//! run writes one format, so the two come from separate runs.
//!
//! The CSV has a row per answered request: `request-start` (seconds from the run's start, the
//! actual send), `Response-delay` (send to first byte) and `request-duration`. Requests that
//! ended in an error are not in it; the JSON's `errorDistribution` counts them, and its
//! "aborted due to deadline" are requests still in flight when `-z` ran out.
//!
//! With `-q` and `--latency-correction`, `request-duration` runs from when the request was due
//! on the `-q` schedule, not from its send: oha's own queueing for a busy connection is
//! included and measured, not back-filled. Neither file says whether the flag was on; it shows
//! when durations exceed send-to-first-byte by more than [`QUEUED_NS`].
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use sojourn_core::{FailureCounts, Outcome, RunResult};

use crate::build::{self, error_class, Latency, PerRequest, Sample, Summary};
use crate::input::Input;
use crate::parse::{field, percentile, run_time, time_field, to_ns, S};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Oha;
const CSV_START: &str = "request-start,";
/// A request whose duration exceeds its send-to-first-byte by more than this waited before
/// its send (reading a small body takes microseconds).
const QUEUED_NS: u64 = 1_000_000;
/// oha's message for requests cut off by the end of `-z`.
const DEADLINE: &str = "aborted due to deadline";

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let (csvs, jsons): (Vec<&Input>, Vec<&Input>) = inputs
        .iter()
        .partition(|i| i.first_line().starts_with(CSV_START));
    if csvs.len() > 1 || jsons.len() > 1 {
        return Err(ImportError::Files {
            tool: TOOL,
            message: "takes at most one CSV and one JSON output".into(),
        });
    }
    let report = jsons
        .first()
        .map(|j| j.json::<Report>().map(|r| (*j, r)))
        .transpose()?;
    let sources: Vec<PathBuf> = inputs.iter().map(|i| i.path.clone()).collect();
    match (csvs.first(), report) {
        (Some(csv), report) => {
            let mut data = per_request(csv)?;
            if let Some((_, r)) = report {
                r.add_untimed(&mut data);
            }
            build::per_request(TOOL, data, ctx, &sources)
        }
        (None, Some((input, r))) => build::summary(TOOL, r.summary(input)?, ctx, &sources),
        (None, None) => unreachable!("import() is never called without files"),
    }
}

fn per_request(input: &Input) -> Result<PerRequest, ImportError> {
    let csv = input.csv()?;
    let start = csv.column(input, TOOL, "request-start")?;
    let first_byte = csv.column(input, TOOL, "Response-delay")?;
    let duration = csv.column(input, TOOL, "request-duration")?;
    let status = csv.column(input, TOOL, "status")?;
    let mut data = PerRequest::default();
    let mut most_queued = 0;
    for (line, row) in &csv.rows {
        let line = Some(*line);
        let sent = time_field(input, line, "request-start", &row[start], S)?;
        let to_first_byte = time_field(input, line, "Response-delay", &row[first_byte], S)?;
        let latency = time_field(input, line, "request-duration", &row[duration], S)?;
        let code: u16 = field(input, line, "status", &row[status])?;
        // With latency correction the request was due before its send: by how much shows as
        // duration beyond send-to-first-byte.
        let queued = latency.saturating_sub(to_first_byte);
        let queued = if queued > QUEUED_NS {
            queued.min(sent)
        } else {
            0
        };
        most_queued = most_queued.max(queued);
        data.samples.push(Sample {
            queued_ns: queued,
            ..Sample::new(sent - queued, latency, Outcome::of_status(code))
        });
    }
    data.notes.push(if most_queued > 0 {
        format!(
            "oha ran with --latency-correction: times run from when each request was due on the \
             -q schedule, measured, not back-filled; requests waited up to {} for a connection \
             (their send lag)",
            sojourn_core::format_ns(most_queued)
        )
    } else {
        "oha's times run from each request's actual send (no --latency-correction, or it never \
         mattered)"
            .to_string()
    });
    Ok(data)
}

#[derive(Deserialize)]
struct Totals {
    total: f64,
    slowest: Option<f64>,
    fastest: Option<f64>,
    average: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    summary: Totals,
    latency_percentiles: BTreeMap<String, Option<f64>>,
    #[serde(default)]
    first_byte_percentiles: BTreeMap<String, Option<f64>>,
    status_code_distribution: BTreeMap<String, u64>,
    #[serde(default)]
    error_distribution: BTreeMap<String, u64>,
}

/// Error counts by class, and how many were cut off by the deadline (in flight).
fn errors(distribution: &BTreeMap<String, u64>) -> (FailureCounts, u64) {
    let mut failed = FailureCounts::default();
    let mut in_flight = 0;
    for (message, &n) in distribution {
        if message.contains(DEADLINE) {
            in_flight = n.saturating_add(in_flight);
        } else {
            failed.add_n(error_class(message), n);
        }
    }
    (failed, in_flight)
}

impl Report {
    fn add_untimed(&self, data: &mut PerRequest) {
        let (failed, in_flight) = errors(&self.error_distribution);
        if failed.total() + in_flight > 0 {
            data.notes.push(format!(
                "oha's CSV leaves out errors; its JSON (a separate run) adds {} failures and {} \
                 requests in flight at the end, without times",
                failed.total(),
                in_flight
            ));
        }
        data.untimed_failures = failed;
        data.untimed_censored = in_flight;
    }

    fn summary(&self, input: &Input) -> Result<Summary, ImportError> {
        let mut s = Summary::default();
        for (code, &n) in &self.status_code_distribution {
            let code: u16 = field(input, None, "statusCodeDistribution", code)?;
            match Outcome::of_status(code) {
                Outcome::Ok => s.completed = s.completed.saturating_add(n),
                Outcome::Failed(class) => s.failed.add_n(class, n),
            }
        }
        let answered = s.completed.saturating_add(s.failed.total());
        let (errors, in_flight) = errors(&self.error_distribution);
        s.failed.merge(&errors);
        s.censored = in_flight;
        s.elapsed = run_time(input, None, "summary.total", self.summary.total)?;
        s.latency = Latency {
            percentiles: percentiles(input, &self.latency_percentiles)?,
            count: answered,
            min: self.summary.fastest.and_then(|v| to_ns(v, S)),
            max: self.summary.slowest.and_then(|v| to_ns(v, S)),
            mean: self.summary.average.map(|v| v * 1e9),
            stdev: None,
        };
        self.correction_note(input, &mut s.notes)?;
        if in_flight > 0 {
            s.notes.push(format!(
                "oha stopped with {in_flight} requests in flight (\"{DEADLINE}\"): counted as \
                 censored"
            ));
        }
        Ok(s)
    }

    /// Latency beyond first byte at the same percentile means times ran from the schedule.
    fn correction_note(&self, input: &Input, notes: &mut Vec<String>) -> Result<(), ImportError> {
        let latency = percentiles(input, &self.latency_percentiles)?;
        let first_byte = percentiles(input, &self.first_byte_percentiles)?;
        let beyond = latency
            .iter()
            .zip(&first_byte)
            .map(|((_, l), (_, f))| l.saturating_sub(*f))
            .max()
            .unwrap_or(0);
        notes.push(if beyond > QUEUED_NS {
            "oha ran with --latency-correction: times run from when each request was due on the \
             -q schedule (measured, not back-filled)"
                .to_string()
        } else {
            "oha's times run from each request's actual send (no --latency-correction, or it \
             never mattered)"
                .to_string()
        });
        Ok(())
    }
}

/// `{"p10": 0.0103, …, "p99.99": …}` in seconds (null when nothing was recorded).
fn percentiles(
    input: &Input,
    map: &BTreeMap<String, Option<f64>>,
) -> Result<Vec<(f64, u64)>, ImportError> {
    let mut out = Vec::new();
    for (key, value) in map {
        let Some(value) = value else { continue };
        let p: f64 = key
            .strip_prefix('p')
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| input.err(None, format!("latencyPercentiles: key {key:?}")))?;
        let v = to_ns(*value, S)
            .ok_or_else(|| input.err(None, format!("latencyPercentiles.{key}: {value}")))?;
        out.push((
            percentile(input, None, &format!("latencyPercentiles.{key}"), p)?,
            v,
        ));
    }
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    Ok(out)
}

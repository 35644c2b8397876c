//! k6: `--out csv=FILE` (per request) or `--summary-export FILE` (summary).
//!
//! In the CSV every request is a row per metric; the `http_req_duration` rows are the
//! requests. Their timestamp marks the request's **end** (k6 stamps HTTP samples when the
//! response is complete), with the resolution of the CSV output's `timeFormat`: whole seconds
//! by default (`unix`), or `unix_milli`/`unix_micro`/`unix_nano`. `http_req_duration` runs from
//! sending to the end of receiving: it leaves out waiting for and opening a connection.
//!
//! `dropped_iterations` counts what a constant-arrival-rate executor wanted to start but had no
//! free VU for: requests the schedule wanted and k6 never sent. They are counted as never sent.
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;
use sojourn_core::result::MAX_COUNT;
use sojourn_core::{FailureClass, Outcome, RunResult};

use crate::build::{self, Latency, PerRequest, Sample, Summary};
use crate::input::{Csv, Input};
use crate::parse::{field, percentile, run_time, to_ns, MS};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::K6;

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let [input] = inputs else {
        return Err(ImportError::Files {
            tool: TOOL,
            message: format!(
                "takes one file (the CSV or the summary export), got {}",
                inputs.len()
            ),
        });
    };
    let sources = [input.path.clone()];
    if input.is_json() {
        let export: Export = input.json()?;
        build::summary(TOOL, export.summary(input)?, ctx, &sources)
    } else {
        per_request(input, ctx, &sources)
    }
}

/// Column indexes of the CSV (its columns depend on `--system-tags`).
struct Columns {
    metric: usize,
    timestamp: usize,
    value: usize,
    status: Option<usize>,
    error_code: Option<usize>,
}

impl Columns {
    fn find(csv: &Csv, input: &Input) -> Result<Columns, ImportError> {
        let optional = |name: &str| csv.header.iter().position(|h| h == name);
        Ok(Columns {
            metric: csv.column(input, TOOL, "metric_name")?,
            timestamp: csv.column(input, TOOL, "timestamp")?,
            value: csv.column(input, TOOL, "metric_value")?,
            status: optional("status"),
            error_code: optional("error_code"),
        })
    }
}

fn per_request(
    input: &Input,
    ctx: &ImportContext,
    sources: &[PathBuf],
) -> Result<RunResult, ImportError> {
    let csv = input.csv()?;
    let cols = Columns::find(&csv, input)?;
    let mut data = PerRequest::default();
    let mut resolution = None;
    let mut dropped = 0.0;
    for (line, row) in &csv.rows {
        let line = Some(*line);
        let metric = &row[cols.metric];
        if metric != "http_req_duration" && metric != "dropped_iterations" {
            continue;
        }
        let (at, unit) = timestamp(input, line, &row[cols.timestamp])?;
        resolution = resolution.max(Some(unit));
        if metric == "dropped_iterations" {
            let n: f64 = field(input, line, "metric_value", &row[cols.value])?;
            // A count: one per dropped iteration, or the rest of a shared-iterations run. They
            // go into histograms, which hold at most MAX_COUNT values.
            dropped += n.round();
            if !(n >= 0.0 && dropped <= MAX_COUNT as f64) {
                let why = format!("dropped_iterations: {n} is not a count, or one too many");
                return Err(input.err(line, why));
            }
            data.never_sent.push((at, n.round() as u64));
            continue;
        }
        let ms: f64 = field(input, line, "metric_value", &row[cols.value])?;
        let latency = to_ns(ms, MS)
            .ok_or_else(|| input.err(line, format!("metric_value: {ms} is not a duration")))?;
        // The stamp is the end. At whole seconds, moving it back by the latency would invent
        // precision, so the request is placed at the second it ended.
        let start = if unit >= 1_000_000_000 {
            at
        } else {
            at.saturating_sub(latency)
        };
        data.samples
            .push(Sample::new(start, latency, outcome(&cols, row)));
    }
    notes(&mut data, resolution.unwrap_or(1));
    build::per_request(TOOL, data, ctx, sources)
}

fn notes(data: &mut PerRequest, resolution_ns: u64) {
    if resolution_ns >= 1_000_000_000 {
        data.notes.push(
            "k6's CSV timestamps are whole seconds (timeFormat unix): each request is placed at \
             the second it ended, so the timeline is only right to the second; latencies are exact"
                .to_string(),
        );
    } else {
        data.notes.push(format!(
            "k6 stamps a request at its end ({} resolution): its start is the stamp minus \
             http_req_duration",
            sojourn_core::format_ns(resolution_ns)
        ));
    }
    data.notes
        .push("k6's http_req_duration leaves out waiting for and opening a connection".to_string());
    let dropped = data
        .never_sent
        .iter()
        .fold(0u64, |sum, &(_, n)| sum.saturating_add(n));
    if dropped > 0 {
        data.notes.push(dropped_note(dropped));
    }
}

fn dropped_note(n: u64) -> String {
    format!(
        "k6 dropped {n} iterations: requests the schedule wanted but never sent (no free VU); \
         counted as never sent"
    )
}

/// A unix timestamp in seconds, ms, µs or ns, told apart by magnitude, as ns and the unit.
fn timestamp(input: &Input, line: Option<u64>, text: &str) -> Result<(u64, u64), ImportError> {
    let v: u64 = text.trim().parse().map_err(|_| {
        input.err(
            line,
            format!(
                "timestamp {text:?} is not a unix time; run k6 with the CSV output's default \
                 timeFormat or unix_milli/unix_micro/unix_nano"
            ),
        )
    })?;
    let unit = match v {
        0..=99_999_999_999 => 1_000_000_000,
        100_000_000_000..=99_999_999_999_999 => 1_000_000,
        100_000_000_000_000..=99_999_999_999_999_999 => 1_000,
        _ => 1,
    };
    let ns = v
        .checked_mul(unit)
        .ok_or_else(|| input.err(line, format!("timestamp {text:?} is out of range")))?;
    Ok((ns, unit))
}

/// A status of 0 (or none) means no HTTP answer; k6's error code says why.
fn outcome(cols: &Columns, row: &csv::StringRecord) -> Outcome {
    let status: u16 = cols
        .status
        .and_then(|i| row[i].trim().parse().ok())
        .unwrap_or(0);
    if status != 0 {
        return Outcome::of_status(status);
    }
    let code: u32 = cols
        .error_code
        .and_then(|i| row[i].trim().parse().ok())
        .unwrap_or(0);
    Outcome::Failed(error_code_class(code))
}

/// k6's documented error code ranges: 1050 request timeout, 12xx TCP (1210–1219 dial),
/// 13xx TLS, 16xx HTTP/1 and 17xx HTTP/2 protocol errors.
fn error_code_class(code: u32) -> FailureClass {
    match code {
        1050 => FailureClass::Timeout,
        1210..=1219 | 1100..=1199 | 1300..=1399 => FailureClass::Connect,
        1600..=1799 => FailureClass::Protocol,
        _ => FailureClass::Io,
    }
}

#[derive(Deserialize)]
struct Export {
    metrics: serde_json::Map<String, Value>,
}

impl Export {
    fn metric(
        &self,
        input: &Input,
        name: &str,
    ) -> Result<&serde_json::Map<String, Value>, ImportError> {
        self.metrics
            .get(name)
            .and_then(Value::as_object)
            .ok_or_else(|| input.missing(TOOL, format!("metrics.{name}")))
    }

    fn number(&self, input: &Input, name: &str, key: &str) -> Result<f64, ImportError> {
        self.metric(input, name)?
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| input.missing(TOOL, format!("metrics.{name}.{key}")))
    }

    fn summary(&self, input: &Input) -> Result<Summary, ImportError> {
        let mut s = Summary::default();
        let count = self.number(input, "http_reqs", "count")? as u64;
        let rate = self.number(input, "http_reqs", "rate")?;
        // http_req_failed is a rate metric: its "passes" are the requests that failed.
        let failed = self.number(input, "http_req_failed", "passes")? as u64;
        build::unknown_cause(
            &mut s.failed,
            &mut s.notes,
            TOOL,
            failed,
            "'s summary export counts failed requests without their cause",
        );
        s.completed = count.saturating_sub(failed);
        s.never_sent = self
            .metric(input, "dropped_iterations")
            .ok()
            .and_then(|m| m.get("count")?.as_f64())
            .unwrap_or(0.0) as u64;
        if s.never_sent > 0 {
            s.notes.push(dropped_note(s.never_sent));
        }
        // The export has no run time; http_reqs.rate is count / run time.
        let secs = if rate > 0.0 { count as f64 / rate } else { 0.0 };
        s.elapsed = run_time(input, None, "metrics.http_reqs.count / rate", secs)?;
        s.latency = self.latency(input, count)?;
        s.notes.extend([
            "k6's summary export has no run time: it is http_reqs.count / http_reqs.rate"
                .to_string(),
            "k6's summary export has only the percentiles k6 was asked for (summaryTrendStats; \
             by default med, p(90) and p(95))"
                .to_string(),
        ]);
        Ok(s)
    }

    /// `http_req_duration`: avg, min, med, max and every `p(N)` k6 was asked for, in ms.
    fn latency(&self, input: &Input, count: u64) -> Result<Latency, ImportError> {
        let trend = self.metric(input, "http_req_duration")?;
        let ms = |key: &str| {
            trend
                .get(key)
                .and_then(Value::as_f64)
                .and_then(|v| to_ns(v, MS))
        };
        let mut percentiles = Vec::new();
        for (key, value) in trend {
            let p = match key.as_str() {
                "med" => Some(50.0),
                k => k
                    .strip_prefix("p(")
                    .and_then(|x| x.strip_suffix(')'))
                    .and_then(|x| x.parse().ok()),
            };
            if let (Some(p), Some(v)) = (p, value.as_f64().and_then(|v| to_ns(v, MS))) {
                let name = format!("metrics.http_req_duration.{key}");
                percentiles.push((percentile(input, None, &name, p)?, v));
            }
        }
        if percentiles.is_empty() {
            return Err(input.missing(TOOL, "percentiles (med, p(N)) in metrics.http_req_duration"));
        }
        Ok(Latency {
            percentiles,
            count,
            min: ms("min"),
            max: ms("max"),
            mean: ms("avg").map(|v| v as f64),
            stdev: None,
        })
    }
}

//! vegeta: `vegeta encode --to csv` (per request) or `vegeta report -type=json` (summary).
//!
//! vegeta's pacer hands each tick to a free worker and starts a new worker when all are busy
//! (no limit by default), so ticks are not dropped. But each result's timestamp is taken when
//! the worker starts the request, not at the tick: any lag between the two is not measured.
//! With `-max-workers` set, ticks wait for a worker and that wait is lost the same way.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use sojourn_core::{FailureClass, Outcome, RunResult};

use crate::build::{self, error_class, Latency, PerRequest, Sample, Summary};
use crate::input::Input;
use crate::parse::{field, time_field, NS};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Vegeta;
/// timestamp, code, latency, bytes_out, bytes_in, error, body, attack, seq, method, url, headers
const CSV_FIELDS: usize = 12;

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let [input] = inputs else {
        return Err(ImportError::Files {
            tool: TOOL,
            message: format!(
                "takes one file (the CSV or the JSON report), got {}",
                inputs.len()
            ),
        });
    };
    let sources = [input.path.clone()];
    if input.is_json() {
        let report: Report = input.json()?;
        build::summary(TOOL, report.summary(input)?, ctx, &sources)
    } else {
        per_request(input, ctx, &sources)
    }
}

fn per_request(
    input: &Input,
    ctx: &ImportContext,
    sources: &[PathBuf],
) -> Result<RunResult, ImportError> {
    let csv = input.csv_with(false)?;
    let mut data = PerRequest::default();
    for (line, row) in &csv.rows {
        let line = Some(*line);
        if row.len() != CSV_FIELDS {
            return Err(input.err(
                line,
                format!(
                    "{} fields, vegeta's CSV has {CSV_FIELDS}: not `vegeta encode --to csv` output?",
                    row.len()
                ),
            ));
        }
        let code: u16 = field(input, line, "code", &row[1])?;
        data.samples.push(Sample::new(
            field(input, line, "timestamp", &row[0])?,
            time_field(input, line, "latency", &row[2], NS)?,
            outcome(code, &row[5]),
        ));
    }
    data.notes.push(
        "vegeta stamps a request when its worker starts it, not at its scheduled tick".to_string(),
    );
    build::per_request(TOOL, data, ctx, sources)
}

/// Code 0 means no HTTP answer: the error message says why.
fn outcome(code: u16, error: &str) -> Outcome {
    match code {
        0 => Outcome::Failed(error_class(error)),
        _ => Outcome::of_status(code),
    }
}

#[derive(Deserialize)]
struct Latencies {
    mean: u64,
    #[serde(rename = "50th")]
    p50: u64,
    #[serde(rename = "90th")]
    p90: u64,
    #[serde(rename = "95th")]
    p95: u64,
    #[serde(rename = "99th")]
    p99: u64,
    max: u64,
    min: u64,
}

#[derive(Deserialize)]
struct Report {
    latencies: Latencies,
    requests: u64,
    duration: u64,
    wait: u64,
    status_codes: BTreeMap<String, u64>,
    #[serde(default)]
    errors: Vec<String>,
}

impl Report {
    fn summary(self, input: &Input) -> Result<Summary, ImportError> {
        let mut s = Summary::default();
        let l = &self.latencies;
        s.latency = Latency {
            percentiles: vec![(50.0, l.p50), (90.0, l.p90), (95.0, l.p95), (99.0, l.p99)],
            count: self.requests,
            min: Some(l.min),
            max: Some(l.max),
            mean: Some(l.mean as f64),
            stdev: None,
        };
        s.elapsed = Duration::from_nanos(self.duration.saturating_add(self.wait));
        s.notes.push(
            "vegeta's percentiles include failed requests (time to failure); it stamps a request \
             when its worker starts it, not at its scheduled tick"
                .to_string(),
        );
        let transport = self.transport_class(&mut s.notes);
        for (code, &n) in &self.status_codes {
            let code: u16 = field(input, None, "status_codes", code)?;
            match outcome(code, "") {
                Outcome::Ok => s.completed = s.completed.saturating_add(n),
                Outcome::Failed(class) => {
                    let class = if code == 0 { transport } else { class };
                    s.failed.add_n(class, n);
                }
            }
        }
        let counted = s.completed.saturating_add(s.failed.total());
        if counted != self.requests {
            return Err(input.err(
                None,
                format!(
                    "status_codes add up to {counted} but requests is {}",
                    self.requests
                ),
            ));
        }
        Ok(s)
    }

    /// The JSON report keeps each distinct error message once, without counts: code-0 requests
    /// get the class their messages share, or `io` when they differ.
    fn transport_class(&self, notes: &mut Vec<String>) -> FailureClass {
        let classes: Vec<FailureClass> = self
            .errors
            .iter()
            .filter(|e| !is_status_text(e))
            .map(|e| error_class(e))
            .collect();
        match classes.split_first() {
            Some((first, rest)) if rest.iter().all(|c| c == first) => *first,
            Some(_) => {
                notes.push(
                    "vegeta's report lists errors of several kinds without counts: its \
                     transport failures are all counted as io"
                        .to_string(),
                );
                FailureClass::Io
            }
            None => FailureClass::Io,
        }
    }
}

/// vegeta lists non-2xx statuses among its errors as "404 Not Found".
fn is_status_text(e: &str) -> bool {
    e.len() >= 3 && e.as_bytes()[..3].iter().all(u8::is_ascii_digit) && !e.contains(':')
}

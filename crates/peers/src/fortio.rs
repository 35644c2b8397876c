//! fortio: the `-access-log-file` JSON lines (per request) and/or the `-json` result (summary).
//!
//! `fortio load -qps R -c C` runs C threads, each pacing itself at R/C and sending its next
//! request only after the previous answer: a closed loop with a rate cap. A thread that falls
//! behind catches up by skipping its sleeps (unless `-nocatchup`), and every time is measured
//! from the actual send. The access log stamps each request's start (unix ns) with its latency
//! in seconds (µs resolution); the warm-up requests are in neither file. The JSON's percentiles
//! are interpolated inside its histogram buckets.
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use sojourn_core::{FailureClass, Outcome, RunResult};

use crate::build::{self, error_class, Latency, PerRequest, Sample, Summary};
use crate::input::Input;
use crate::parse::{percentile, to_ns, S};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Fortio;

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let (logs, results): (Vec<&Input>, Vec<&Input>) = inputs.iter().partition(|i| is_access_log(i));
    if logs.len() > 1 || results.len() > 1 {
        return Err(ImportError::Files {
            tool: TOOL,
            message: "takes at most one access log and one -json result".into(),
        });
    }
    let sources: Vec<PathBuf> = inputs.iter().map(|i| i.path.clone()).collect();
    // Parse the result even when the log wins, so a broken file is never silently ignored.
    let summary = results
        .first()
        .map(|r| r.json::<Results>().and_then(|j| j.summary(r)))
        .transpose()?;
    match (logs.first(), summary) {
        (Some(log), _) => build::per_request(TOOL, access_log(log)?, ctx, &sources),
        (None, Some(s)) => build::summary(TOOL, s, ctx, &sources),
        (None, None) => unreachable!("import() is never called without files"),
    }
}

fn is_access_log(input: &Input) -> bool {
    let first = input.first_line();
    first.starts_with('{') && first.ends_with('}') && first.contains("\"latency\"")
}

#[derive(Deserialize)]
struct Access {
    latency: f64,
    timestamp: u64,
    details: String,
}

fn access_log(input: &Input) -> Result<PerRequest, ImportError> {
    let mut data = PerRequest::default();
    for (i, l) in input.text.lines().enumerate() {
        let line = Some(i as u64 + 1);
        if l.trim().is_empty() {
            continue;
        }
        let a: Access = serde_json::from_str(l)
            .map_err(|e| input.err(line, format!("not a fortio access log entry: {e}")))?;
        let latency = to_ns(a.latency, S)
            .ok_or_else(|| input.err(line, format!("latency: {} is not a duration", a.latency)))?;
        let outcome = match a.details.trim().parse::<u16>() {
            Ok(code) => Outcome::of_status(code),
            Err(_) => Outcome::Failed(error_class(&a.details)),
        };
        data.samples
            .push(Sample::new(a.timestamp, latency, outcome));
    }
    data.notes.push(
        "fortio measures from each actual send; a thread that falls behind its -qps pace \
         catches up by sending back to back, so the wait before a late send is not measured"
            .to_string(),
    );
    Ok(data)
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Percentile {
    percentile: f64,
    value: f64,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Histogram {
    count: u64,
    min: f64,
    max: f64,
    avg: f64,
    std_dev: f64,
    #[serde(default)]
    percentiles: Vec<Percentile>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Results {
    actual_duration: u64,
    duration_histogram: Histogram,
    ret_codes: BTreeMap<String, u64>,
}

impl Results {
    fn summary(&self, input: &Input) -> Result<Summary, ImportError> {
        let mut s = Summary::default();
        let h = &self.duration_histogram;
        let ns = |v: f64, name: &str| {
            to_ns(v, S).ok_or_else(|| input.err(None, format!("DurationHistogram.{name}: {v}")))
        };
        let mut percentiles = Vec::new();
        for p in &h.percentiles {
            let name = "DurationHistogram.Percentiles";
            percentiles.push((
                percentile(input, None, name, p.percentile)?,
                ns(p.value, "Percentiles")?,
            ));
        }
        s.latency = Latency {
            percentiles,
            count: h.count,
            min: Some(ns(h.min, "Min")?),
            max: Some(ns(h.max, "Max")?),
            mean: Some(h.avg * 1e9),
            stdev: Some(h.std_dev * 1e9),
        };
        for (code, &n) in &self.ret_codes {
            let outcome = match code.parse::<i32>() {
                Ok(c) if (100..=599).contains(&c) => Outcome::of_status(c as u16),
                // fortio files socket errors under negative codes.
                Ok(_) => Outcome::Failed(FailureClass::Io),
                Err(_) => return Err(input.err(None, format!("RetCodes: {code:?} is not a code"))),
            };
            match outcome {
                Outcome::Ok => s.completed = s.completed.saturating_add(n),
                Outcome::Failed(class) => s.failed.add_n(class, n),
            }
        }
        s.elapsed = Duration::from_nanos(self.actual_duration);
        s.notes.push(
            "fortio's percentiles are interpolated inside its histogram buckets; it measures \
             from each actual send and catches up when behind its -qps pace"
                .to_string(),
        );
        Ok(s)
    }
}

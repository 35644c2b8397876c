//! wrk and wrk2 text output (run with `--latency`). Summary only: wrk keeps no per-request log.
//!
//! wrk measures each request from its send, in a closed loop, then "corrects" its histogram
//! after the fact by back-filling samples at the mean per-connection interval. wrk2 measures
//! from each request's intended send time on its `-R` schedule and prints the whole HdrHistogram
//! spectrum, but leaves its calibration period out of the histogram.
use std::time::Duration;

use sojourn_core::{FailureClass, RunResult};

use crate::build::{self, Latency, Summary};
use crate::input::Input;
use crate::parse::{duration_ns, field, percentile, time_field, MS};
use crate::{ImportContext, ImportError, PeerTool};

pub(crate) fn import(
    tool: PeerTool,
    inputs: &[Input],
    ctx: &ImportContext,
) -> Result<RunResult, ImportError> {
    let [input] = inputs else {
        return Err(ImportError::Files {
            tool,
            message: format!("takes one text output file, got {}", inputs.len()),
        });
    };
    let report = parse(tool, input)?;
    let summary = report.into_summary(tool);
    build::summary(tool, summary, ctx, std::slice::from_ref(&input.path))
}

/// What wrk prints, in nanoseconds.
#[derive(Debug, Default)]
struct Report {
    connections: Option<u64>,
    mean: Option<f64>,
    stdev: Option<f64>,
    max: Option<u64>,
    /// From "Latency Distribution": the short list.
    listed: Vec<(f64, u64)>,
    /// From wrk2's "Detailed Percentile spectrum".
    spectrum: Vec<(f64, u64)>,
    /// wrk2's "Total count": the requests in its histogram.
    histogram_count: Option<u64>,
    requests: Option<u64>,
    elapsed_ns: Option<u64>,
    non_2xx: u64,
    socket: [u64; 4],
    uncorrected_skipped: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Section {
    Other,
    /// A percentile list or spectrum; `false` when it is wrk2's uncorrected one (`-U`).
    Distribution(bool),
    Spectrum(bool),
}

fn parse(tool: PeerTool, input: &Input) -> Result<Report, ImportError> {
    let mut r = Report::default();
    let mut section = Section::Other;
    let mut corrected = true;
    for (i, raw) in input.text.lines().enumerate() {
        let line = Some(i as u64 + 1);
        let t = raw.trim();
        if t.starts_with("Latency Distribution") {
            corrected = !t.contains("Uncorrected");
            r.uncorrected_skipped |= !corrected;
            section = Section::Distribution(corrected);
        } else if t.starts_with("Detailed Percentile spectrum") {
            section = Section::Spectrum(corrected);
        } else if let Some(rest) = t.strip_prefix("Latency ") {
            latency_stats(tool, input, line, rest, &mut r)?;
        } else if t.contains(" requests in ") {
            section = Section::Other;
            totals(input, line, t, &mut r)?;
        } else if let Some(rest) = t.strip_prefix("Non-2xx or 3xx responses:") {
            r.non_2xx = field(input, line, "Non-2xx or 3xx responses", rest)?;
        } else if let Some(rest) = t.strip_prefix("Socket errors:") {
            r.socket = socket_errors(input, line, rest)?;
        } else if t.contains(" threads and ") {
            r.connections = t.split_whitespace().nth(3).and_then(|c| c.parse().ok());
        } else {
            body_line(input, line, t, section, &mut r)?;
        }
    }
    if r.requests.is_none() {
        return Err(input.missing(tool, "\"N requests in T\" line"));
    }
    if r.mean.is_none() {
        return Err(input.missing(tool, "\"Latency\" statistics line"));
    }
    Ok(r)
}

/// A line inside a percentile list or spectrum.
fn body_line(
    input: &Input,
    line: Option<u64>,
    t: &str,
    section: Section,
    r: &mut Report,
) -> Result<(), ImportError> {
    match section {
        Section::Distribution(keep) if t.contains('%') => {
            let (p, v) = t
                .split_once('%')
                .ok_or_else(|| input.err(line, "expected \"P%  VALUE\""))?;
            let p: f64 = field(input, line, "percentile", p)?;
            let v = duration_ns(v)
                .ok_or_else(|| input.err(line, format!("latency: cannot read {:?}", v.trim())))?;
            if keep {
                r.listed
                    .push((percentile(input, line, "percentile", p)?, v));
            }
        }
        Section::Spectrum(keep) => spectrum_line(input, line, t, keep, r)?,
        _ => {}
    }
    Ok(())
}

/// `Latency    11.04ms    2.64ms  44.05ms   95.11%`: mean, stdev, max.
fn latency_stats(
    tool: PeerTool,
    input: &Input,
    line: Option<u64>,
    rest: &str,
    r: &mut Report,
) -> Result<(), ImportError> {
    let cols: Vec<&str> = rest.split_whitespace().collect();
    let [mean, stdev, max, ..] = cols[..] else {
        return Err(input.err(line, "Latency: expected mean, stdev and max"));
    };
    // An empty histogram prints its mean as `-nanus`.
    if mean.starts_with("-nan") {
        let why = if tool == PeerTool::Wrk2 {
            "wrk2 measured nothing: it resets its histogram when its calibration ends (about \
             10 s into the run), and this run ended there; run it at least 10 s longer than \
             what you want measured"
        } else {
            "wrk measured nothing: no request completed during the run"
        };
        return Err(input.err(line, why));
    }
    let read = |name: &str, v: &str| {
        duration_ns(v).ok_or_else(|| input.err(line, format!("Latency {name}: cannot read {v:?}")))
    };
    r.mean = Some(read("mean", mean)? as f64);
    r.stdev = Some(read("stdev", stdev)? as f64);
    r.max = Some(read("max", max)?);
    Ok(())
}

/// `365 requests in 2.02s, 44.80KB read`.
fn totals(input: &Input, line: Option<u64>, t: &str, r: &mut Report) -> Result<(), ImportError> {
    let (n, rest) = t.split_once(" requests in ").expect("caller checked");
    r.requests = Some(field(input, line, "requests", n)?);
    let time = rest.split(',').next().unwrap_or("");
    r.elapsed_ns = Some(
        duration_ns(time)
            .ok_or_else(|| input.err(line, format!("run time: cannot read {time:?}")))?,
    );
    Ok(())
}

/// `connect 0, read 0, write 0, timeout 0`.
fn socket_errors(input: &Input, line: Option<u64>, rest: &str) -> Result<[u64; 4], ImportError> {
    let mut out = [0; 4];
    for (slot, name) in ["connect", "read", "write", "timeout"].iter().enumerate() {
        let value = rest
            .split(',')
            .find_map(|part| part.trim().strip_prefix(name))
            .ok_or_else(|| input.err(line, format!("Socket errors: no {name} count")))?;
        out[slot] = field(input, line, name, value)?;
    }
    Ok(out)
}

/// wrk2's spectrum: `Value Percentile TotalCount 1/(1-Percentile)` rows in milliseconds, then
/// `#[Mean = …, StdDeviation = …]` and `#[Max = …, Total count = …]`.
fn spectrum_line(
    input: &Input,
    line: Option<u64>,
    t: &str,
    keep: bool,
    r: &mut Report,
) -> Result<(), ImportError> {
    if !keep || t.is_empty() || t.starts_with("Value") || t.starts_with("---") {
        return Ok(());
    }
    if let Some(inner) = t.strip_prefix("#[").and_then(|x| x.strip_suffix(']')) {
        for pair in inner.split(',') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k.trim() {
                "Mean" => r.mean = Some(time_field(input, line, "Mean", v, MS)? as f64),
                "StdDeviation" => {
                    r.stdev = Some(time_field(input, line, "StdDeviation", v, MS)? as f64)
                }
                "Max" => r.max = Some(time_field(input, line, "Max", v, MS)?),
                "Total count" => r.histogram_count = Some(field(input, line, "Total count", v)?),
                _ => {}
            }
        }
        return Ok(());
    }
    let cols: Vec<&str> = t.split_whitespace().collect();
    let [value, fraction, ..] = cols[..] else {
        return Err(input.err(line, "spectrum: expected value and percentile"));
    };
    let v = time_field(input, line, "value", value, MS)?;
    let p: f64 = field(input, line, "percentile", fraction)?;
    r.spectrum
        .push((percentile(input, line, "percentile", p * 100.0)?, v));
    Ok(())
}

impl Report {
    fn into_summary(self, tool: PeerTool) -> Summary {
        let mut s = Summary::default();
        let requests = self.requests.unwrap_or(0);
        let elapsed = Duration::from_nanos(self.elapsed_ns.unwrap_or(0));
        self.notes(tool, requests, elapsed, &mut s.notes);
        let [connect, read, write, _timeout] = self.socket;
        s.failed.add_n(FailureClass::Connect, connect);
        s.failed.add_n(FailureClass::Io, read.saturating_add(write));
        build::unknown_cause(
            &mut s.failed,
            &mut s.notes,
            tool,
            self.non_2xx,
            "counts every status above 399 together, without telling 4xx from 5xx",
        );
        s.completed = requests.saturating_sub(self.non_2xx);
        s.elapsed = elapsed;
        let spectrum_min = self
            .spectrum
            .first()
            .filter(|(p, _)| *p == 0.0)
            .map(|x| x.1);
        let mut percentiles = self.listed;
        percentiles.extend(self.spectrum);
        s.latency = Latency {
            percentiles,
            count: self.histogram_count.unwrap_or(requests),
            min: spectrum_min,
            max: self.max,
            mean: self.mean,
            stdev: self.stdev,
        };
        s
    }

    fn notes(&self, tool: PeerTool, requests: u64, elapsed: Duration, notes: &mut Vec<String>) {
        if tool == PeerTool::Wrk {
            let per_connection = requests / self.connections.unwrap_or(1).max(1);
            let interval = elapsed.as_secs_f64() / per_connection.max(1) as f64;
            notes.push(format!(
                "wrk corrected its latency after the fact: it back-fills invented samples at its mean \
                 per-connection interval ({:.2} ms here), so these percentiles are an estimate, not \
                 measurements; and it measured from each send in a closed loop",
                interval * 1e3
            ));
        } else {
            notes.push(
                "wrk2 measures from each request's intended send time on its -R schedule (±1 ms)"
                    .to_string(),
            );
        }
        if let Some(h) = self.histogram_count.filter(|&h| h < requests) {
            notes.push(format!(
                "wrk2 left its calibration period out of the histogram: percentiles cover {h} of \
                 the {requests} requests"
            ));
        }
        if self.listed.is_empty() && self.spectrum.is_empty() {
            notes.push(format!(
                "{tool} ran without --latency: only mean, stdev and max are known"
            ));
        }
        if self.uncorrected_skipped {
            notes.push("wrk2's uncorrected (-U) distribution was left out".to_string());
        }
        let timeouts = self.socket[3];
        if timeouts > 0 {
            notes.push(format!(
                "{tool} counted {timeouts} timeouts; it keeps waiting on them, so they may also be \
                 among the completed requests and are not counted as failures"
            ));
        }
    }
}

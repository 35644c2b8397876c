//! hey: its `-o csv` per-request file and its default text summary.
//!
//! The CSV has one row per answered request: `response-time` (seconds, four decimals, so
//! 0.1 ms resolution) and `offset` (its start, seconds from the run's start). Requests that
//! ended in a transport error (refused, reset, timeout) are **not** in the CSV; only the text
//! summary's "Error distribution" counts them. hey is a closed loop of `-c` workers; `-q` caps
//! each worker's rate with a ticker that skips ticks it misses.
use std::time::Duration;

use sojourn_core::{FailureCounts, Outcome, RunResult};

use crate::build::{self, error_class, PerRequest, Sample, Summary};
use crate::input::Input;
use crate::parse::{field, percentile, time_field, S};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Hey;
const CSV_START: &str = "response-time,";

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let (csvs, texts): (Vec<&Input>, Vec<&Input>) = inputs
        .iter()
        .partition(|i| i.first_line().starts_with(CSV_START));
    if csvs.len() > 1 || texts.len() > 1 {
        return Err(ImportError::Files {
            tool: TOOL,
            message: "takes at most one -o csv file and one text summary".into(),
        });
    }
    let text = texts.first().map(|t| parse_text(t)).transpose()?;
    let sources: Vec<_> = inputs.iter().map(|i| i.path.clone()).collect();
    match (csvs.first(), text) {
        (Some(csv), text) => per_request(csv, text, ctx, &sources),
        (None, Some(text)) => build::summary(TOOL, text.summary, ctx, &sources),
        (None, None) => unreachable!("import() is never called without files"),
    }
}

fn per_request(
    input: &Input,
    text: Option<Text>,
    ctx: &ImportContext,
    sources: &[std::path::PathBuf],
) -> Result<RunResult, ImportError> {
    let csv = input.csv()?;
    let latency = csv.column(input, TOOL, "response-time")?;
    let status = csv.column(input, TOOL, "status-code")?;
    let offset = csv.column(input, TOOL, "offset")?;
    let mut data = PerRequest::default();
    for (line, row) in &csv.rows {
        let line = Some(*line);
        let code: u16 = field(input, line, "status-code", &row[status])?;
        data.samples.push(Sample::new(
            time_field(input, line, "offset", &row[offset], S)?,
            time_field(input, line, "response-time", &row[latency], S)?,
            Outcome::of_status(code),
        ));
    }
    data.notes.push(
        "hey's CSV has 0.1 ms resolution; a request's due time is its start (offset)".to_string(),
    );
    match text {
        Some(t) if t.errors.total() > 0 => {
            data.notes.push(format!(
                "hey's CSV leaves out the {} requests that ended in a transport error; its \
                 summary counts them: they are failures here, without times",
                t.errors.total()
            ));
            data.untimed_failures = t.errors;
        }
        Some(_) => {}
        None => data.notes.push(
            "hey's CSV leaves out requests that ended in a transport error; without its text \
             summary they cannot be counted"
                .to_string(),
        ),
    }
    build::per_request(TOOL, data, ctx, sources)
}

struct Text {
    summary: Summary,
    /// Transport errors by class.
    errors: FailureCounts,
}

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Top,
    Latency,
    Status,
    Errors,
    Other,
}

fn parse_text(input: &Input) -> Result<Text, ImportError> {
    let mut s = Summary::default();
    let mut errors = FailureCounts::default();
    let mut section = Section::Top;
    let mut saw_total = false;
    for (i, raw) in input.text.lines().enumerate() {
        let line = Some(i as u64 + 1);
        let l = raw.trim();
        section = match l {
            "Summary:" => Section::Top,
            "Latency distribution:" => Section::Latency,
            "Status code distribution:" => Section::Status,
            "Error distribution:" => Section::Errors,
            _ if l.ends_with(':') && !l.starts_with('[') => Section::Other,
            _ => section,
        };
        if let Some((key, value)) = l.split_once(':').filter(|_| section == Section::Top) {
            saw_total |= key == "Total";
            top_line(input, line, key, value, &mut s)?;
        } else if section == Section::Latency && l.contains(" in ") {
            // hey prints "10%% in 0.0104 secs": a doubled percent sign.
            let (p, v) = l.split_once(" in ").expect("checked");
            let p: f64 = field(input, line, "percentile", p.trim_end_matches('%'))?;
            let v = time_field(input, line, "latency", v.trim_end_matches("secs"), S)?;
            s.latency
                .percentiles
                .push((percentile(input, line, "percentile", p)?, v));
        } else if section == Section::Status && l.starts_with('[') {
            let (code, n) = bracketed(input, line, l)?;
            let code: u16 = field(input, line, "status code", code)?;
            let n: u64 = field(input, line, "responses", n.trim_end_matches("responses"))?;
            s.latency.count = s.latency.count.saturating_add(n);
            match Outcome::of_status(code) {
                Outcome::Ok => s.completed = s.completed.saturating_add(n),
                Outcome::Failed(class) => s.failed.add_n(class, n),
            }
        } else if section == Section::Errors && l.starts_with('[') {
            let (n, message) = bracketed(input, line, l)?;
            let n: u64 = field(input, line, "error count", n)?;
            errors.add_n(error_class(message), n);
        }
    }
    if !saw_total {
        return Err(input.missing(TOOL, "\"Total:\" line of the summary"));
    }
    // hey always prints this heading, even when nothing was answered.
    if !input.text.contains("Status code distribution:") {
        return Err(input.missing(TOOL, "\"Status code distribution:\" (truncated?)"));
    }
    s.failed.merge(&errors);
    s.notes.push(
        "hey's percentiles cover answered requests (any status), not transport errors".to_string(),
    );
    Ok(Text { summary: s, errors })
}

/// `Total: 2.0177 secs`, `Slowest: …`, `Fastest: …`, `Average: …` (seconds).
fn top_line(
    input: &Input,
    line: Option<u64>,
    key: &str,
    value: &str,
    s: &mut Summary,
) -> Result<(), ImportError> {
    let v = value.trim().trim_end_matches("secs");
    let secs = |name| time_field(input, line, name, v, S);
    match key {
        "Total" => s.elapsed = Duration::from_nanos(secs("Total")?),
        "Slowest" => s.latency.max = Some(secs("Slowest")?),
        "Fastest" => s.latency.min = Some(secs("Fastest")?),
        // An all-error run prints "NaN secs".
        "Average" => {
            s.latency.mean = field::<f64>(input, line, "Average", v)
                .map(|a| a * 1e9)
                .ok()
        }
        _ => {}
    }
    Ok(())
}

/// `[200]` TAB `198 responses` → ("200", "198 responses").
fn bracketed<'a>(
    input: &Input,
    line: Option<u64>,
    l: &'a str,
) -> Result<(&'a str, &'a str), ImportError> {
    let (inside, rest) = l
        .strip_prefix('[')
        .and_then(|x| x.split_once(']'))
        .ok_or_else(|| input.err(line, "expected \"[N] …\""))?;
    Ok((inside, rest.trim()))
}

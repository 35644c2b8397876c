//! locust: the headless `--csv PREFIX` files. `PREFIX_stats.csv` is required (its "Aggregated"
//! row); `PREFIX_failures.csv`, when given, says why requests failed; locust's printout, when
//! given, supplies the final counts and percentiles (the CSV can lag). Summary only; a
//! locustfile's requests log is read per request instead (`locust_requests`).
//!
//! Each locust user is a closed loop: `wait_time` paces it, but a slow answer delays its next
//! request. locust keeps response times rounded (1 ms below 100 ms, 10 ms below 1 s, 100 ms
//! above) and prints whole-millisecond percentiles. Its CSV files are written on a timer, so
//! the last second of a run can be missing from them (locust issue #1806).

use sojourn_core::{FailureClass, FailureCounts, RunResult};

use crate::build::{self, error_class, Latency, Summary};
use crate::input::{Csv, Input};
use crate::parse::{field, percentile, run_time, time_field, MS};
use crate::{locust_requests, ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Locust;

#[derive(PartialEq)]
enum Kind {
    Stats,
    Failures,
    /// locust's own printout (stdout and stderr), whose last tables are final.
    Printout,
    /// stats_history and exceptions: read by nobody here.
    Ignored,
}

fn kind(input: &Input) -> Kind {
    let first = input.first_line();
    if first.starts_with("Type,Name,Request Count") {
        Kind::Stats
    } else if first.starts_with("Method,Name,Error,Occurrences") {
        Kind::Failures
    } else if input.text.contains("Response time percentiles") {
        Kind::Printout
    } else {
        Kind::Ignored
    }
}

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    if inputs.iter().any(locust_requests::is_requests_log) {
        let [log] = inputs else {
            return Err(ImportError::Files {
                tool: TOOL,
                message: "a requests log (JSON lines from events.request) is read alone: give                           it without the CSV files"
                    .into(),
            });
        };
        return locust_requests::import(log, ctx);
    }
    let of = |k: Kind| inputs.iter().filter(|i| kind(i) == k).collect::<Vec<_>>();
    let (stats, failures, printouts) = (of(Kind::Stats), of(Kind::Failures), of(Kind::Printout));
    let [stats] = stats[..] else {
        let names: Vec<String> = inputs
            .iter()
            .map(|i| i.path.display().to_string())
            .collect();
        return Err(ImportError::Files {
            tool: TOOL,
            message: format!(
                "needs exactly one *_stats.csv (header \"Type,Name,Request Count,…\"); {} of \
                 these are: {}",
                stats.len(),
                names.join(", ")
            ),
        });
    };
    let mut s = parse_stats(stats)?;
    if let Some(printout) = printouts.first() {
        final_tables(printout, &mut s)?;
    }
    let failed = s.failed.total();
    s.failed = FailureCounts::default();
    match failures.first() {
        Some(f) => classify_failures(f, failed, &mut s)?,
        None => build::unknown_cause(
            &mut s.failed,
            &mut s.notes,
            TOOL,
            failed,
            "was given no _failures.csv",
        ),
    }
    let sources: Vec<_> = inputs.iter().map(|i| i.path.clone()).collect();
    build::summary(TOOL, s, ctx, &sources)
}

fn parse_stats(input: &Input) -> Result<Summary, ImportError> {
    let csv = input.csv()?;
    let name = csv.column(input, TOOL, "Name")?;
    let (line, row) = csv
        .rows
        .iter()
        .find(|(_, r)| &r[name] == "Aggregated")
        .ok_or_else(|| input.missing(TOOL, "\"Aggregated\" row"))?;
    let line = Some(*line);
    let get = |col: &str| -> Result<&str, ImportError> { Ok(&row[csv.column(input, TOOL, col)?]) };
    let count: u64 = field(input, line, "Request Count", get("Request Count")?)?;
    let failed: u64 = field(input, line, "Failure Count", get("Failure Count")?)?;
    let rps: f64 = field(input, line, "Requests/s", get("Requests/s")?)?;
    let ms =
        |col: &str| -> Result<u64, ImportError> { time_field(input, line, col, get(col)?, MS) };
    let secs = if rps > 0.0 { count as f64 / rps } else { 0.0 };
    let mut s = Summary {
        completed: count.saturating_sub(failed),
        elapsed: run_time(input, line, "Request Count / Requests/s", secs)?,
        ..Summary::default()
    };
    s.failed.add_n(FailureClass::HttpOther, failed);
    s.latency = Latency {
        percentiles: percentiles(input, line, &csv, row)?,
        count,
        min: Some(ms("Min Response Time")?),
        max: Some(ms("Max Response Time")?),
        mean: Some(ms("Average Response Time")? as f64),
        stdev: None,
    };
    s.notes.extend([
        "locust's percentiles are whole milliseconds of rounded response times".to_string(),
        "locust writes its CSV on a timer: the end of the run may be missing from it (give \
         locust's printout too, whose final tables are complete)"
            .to_string(),
        "locust's run time is Request Count / Requests/s".to_string(),
    ]);
    Ok(s)
}

/// The `50%` … `100%` columns; `N/A` when nothing was recorded.
fn percentiles(
    input: &Input,
    line: Option<u64>,
    csv: &Csv,
    row: &csv::StringRecord,
) -> Result<Vec<(f64, u64)>, ImportError> {
    let mut out = Vec::new();
    for (i, h) in csv.header.iter().enumerate() {
        let Some(p) = h.strip_suffix('%') else {
            continue;
        };
        if row[i].trim() == "N/A" {
            continue;
        }
        let p: f64 = field(input, line, h, p)?;
        out.push((
            percentile(input, line, h, p)?,
            time_field(input, line, h, &row[i], MS)?,
        ));
    }
    Ok(out)
}

/// `Method,Name,Error,Occurrences`: the error text says why.
fn classify_failures(input: &Input, expected: u64, s: &mut Summary) -> Result<(), ImportError> {
    let csv = input.csv()?;
    let error = csv.column(input, TOOL, "Error")?;
    let occurrences = csv.column(input, TOOL, "Occurrences")?;
    let mut counts = FailureCounts::default();
    for (line, row) in &csv.rows {
        let n: u64 = field(input, Some(*line), "Occurrences", &row[occurrences])?;
        let class = locust_error_class(&row[error]);
        counts.add_n(class, n);
    }
    if counts.total() != expected {
        s.notes.push(format!(
            "locust's failures file counts {} failures, its stats {expected}: the stats count is \
             used, as http_other",
            counts.total()
        ));
        s.failed.add_n(FailureClass::HttpOther, expected);
    } else {
        s.failed = counts;
    }
    Ok(())
}

/// requests' wording: `HTTPError('404 Client Error: …')`, `ConnectionRefusedError(…)`.
fn locust_error_class(message: &str) -> FailureClass {
    if message.contains("Client Error") {
        FailureClass::Http4xx
    } else if message.contains("Server Error") {
        FailureClass::Http5xx
    } else {
        error_class(message)
    }
}

/// The last "Aggregated" rows of locust's printout: its final, complete tables. They replace
/// the CSV's counts and percentiles, and the gap between the two is noted.
fn final_tables(input: &Input, s: &mut Summary) -> Result<(), ImportError> {
    let lines: Vec<&str> = input.text.lines().collect();
    let (stats_at, stats) = lines
        .iter()
        .enumerate()
        .rev()
        .find(|(_, l)| l.contains("Aggregated") && l.contains('|'))
        .ok_or_else(|| input.missing(TOOL, "\"Aggregated\" row of the request table"))?;
    let line = Some(stats_at as u64 + 1);
    let parts: Vec<&str> = stats.split('|').collect();
    let counts: Vec<&str> = parts[0].split_whitespace().collect();
    let [.., reqs, fails] = counts[..] else {
        return Err(input.err(line, "expected \"Aggregated  REQS  FAILS(PCT)\""));
    };
    let count: u64 = field(input, line, "# reqs", reqs)?;
    let failed: u64 = field(
        input,
        line,
        "# fails",
        fails.split('(').next().unwrap_or(""),
    )?;
    if count != s.latency.count {
        s.notes.push(format!(
            "locust's CSV counts {} requests, its final printout {count}: the printout is used",
            s.latency.count
        ));
    }
    s.latency.count = count;
    let rate = parts.get(2).and_then(|r| r.split_whitespace().next());
    if let Some(rate) = rate {
        let rps: f64 = field(input, line, "req/s", rate)?;
        if rps > 0.0 {
            s.elapsed = run_time(input, line, "# reqs / req/s", count as f64 / rps)?;
        }
    }
    if let Some(times) = parts.get(1) {
        let t: Vec<&str> = times.split_whitespace().collect();
        let [avg, min, max, _med] = t[..] else {
            return Err(input.err(line, "expected Avg, Min, Max and Med"));
        };
        s.latency.mean = Some(time_field(input, line, "Avg", avg, MS)? as f64);
        s.latency.min = Some(time_field(input, line, "Min", min, MS)?);
        s.latency.max = Some(time_field(input, line, "Max", max, MS)?);
    }
    s.completed = count.saturating_sub(failed);
    s.failed = FailureCounts::default();
    s.failed.add_n(FailureClass::HttpOther, failed);
    if let Some(p) = final_percentiles(input, &lines)? {
        s.latency.percentiles = p;
    }
    Ok(())
}

/// The header of the last "Response time percentiles" table names its columns (`50%` …
/// `100%`, `# reqs`); its "Aggregated" row holds whole milliseconds.
fn final_percentiles(
    input: &Input,
    lines: &[&str],
) -> Result<Option<Vec<(f64, u64)>>, ImportError> {
    let Some(title) = lines
        .iter()
        .rposition(|l| l.starts_with("Response time percentiles"))
    else {
        return Ok(None);
    };
    let header = lines.get(title + 1).copied().unwrap_or("");
    let names: Vec<&str> = header
        .split_whitespace()
        .filter(|h| h.ends_with('%'))
        .collect();
    let Some((at, row)) = lines
        .iter()
        .enumerate()
        .skip(title)
        .find(|(_, l)| l.contains("Aggregated"))
    else {
        return Err(input.missing(TOOL, "\"Aggregated\" row of the percentile table"));
    };
    let line = Some(at as u64 + 1);
    let values: Vec<&str> = row
        .split_whitespace()
        .skip_while(|w| *w != "Aggregated")
        .skip(1)
        .collect();
    if values.len() < names.len() {
        return Err(input.err(
            line,
            format!(
                "{} percentiles where the header has {}",
                values.len(),
                names.len()
            ),
        ));
    }
    let mut out = Vec::new();
    for (name, value) in names.iter().zip(&values) {
        if *value == "N/A" {
            continue;
        }
        let p: f64 = field(input, line, name, name.trim_end_matches('%'))?;
        out.push((
            percentile(input, line, name, p)?,
            time_field(input, line, name, value, MS)?,
        ));
    }
    Ok(Some(out))
}

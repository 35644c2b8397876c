//! ApacheBench: its text output (counts, whole-millisecond percentiles) and its `-e` CSV (every
//! percentile 0–100 in milliseconds with three decimals). Summary only.
//!
//! ab is a closed loop of `-c` connections, and without `-k` each request opens a new
//! connection, so its times include the TCP connect.
use std::time::Duration;

use sojourn_core::{FailureClass, RunResult};

use crate::build::{self, Latency, Summary};
use crate::input::Input;
use crate::parse::{field, percentile, time_field, MS, S};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Ab;
const CSV_HEADER: &str = "Percentage served,Time in ms";

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let (csvs, texts): (Vec<&Input>, Vec<&Input>) =
        inputs.iter().partition(|i| i.first_line() == CSV_HEADER);
    if csvs.len() > 1 || texts.len() > 1 {
        return Err(ImportError::Files {
            tool: TOOL,
            message: "takes at most one -e CSV and one text output".into(),
        });
    }
    let mut s = match texts.first() {
        Some(text) => parse_text(text)?,
        None => Summary {
            notes: vec![
                "ab's -e CSV has no counts or run time: give ab's text output too".to_string(),
            ],
            ..Summary::default()
        },
    };
    if let Some(csv) = csvs.first() {
        // The CSV's three decimals beat the text's whole milliseconds.
        s.latency.percentiles = parse_csv(csv)?;
        s.latency.min = s.latency.percentiles.first().map(|p| p.1);
        s.latency.max = s.latency.percentiles.last().map(|p| p.1);
    }
    let sources: Vec<_> = inputs.iter().map(|i| i.path.clone()).collect();
    // ab prints "Keep-Alive requests:" only when run with -k.
    let keep_alive = texts
        .first()
        .is_some_and(|t| t.text.contains("Keep-Alive requests:"));
    s.notes.push(if keep_alive {
        "ab is a closed loop (-k: connections kept alive)".to_string()
    } else {
        "ab is a closed loop and, without -k, opens a connection per request: its times include \
         the connect"
            .to_string()
    });
    build::summary(TOOL, s, ctx, &sources)
}

fn parse_csv(input: &Input) -> Result<Vec<(f64, u64)>, ImportError> {
    let csv = input.csv()?;
    let mut out = Vec::with_capacity(csv.rows.len());
    for (line, row) in &csv.rows {
        let line = Some(*line);
        let p: f64 = field(input, line, "Percentage served", &row[0])?;
        let v = time_field(input, line, "Time in ms", &row[1], MS)?;
        out.push((percentile(input, line, "Percentage served", p)?, v));
    }
    if out.len() != 101 {
        return Err(input.err(
            None,
            format!(
                "ab writes 101 percentiles (0–100), found {}: truncated?",
                out.len()
            ),
        ));
    }
    Ok(out)
}

/// The counts and the whole-millisecond table of ab's text output.
#[derive(Default)]
struct Text {
    complete: Option<u64>,
    failed_detail: [u64; 4],
    non_2xx: u64,
    elapsed_ns: Option<u64>,
    total_row: Option<[f64; 5]>,
    percentiles: Vec<(f64, u64)>,
}

fn parse_text(input: &Input) -> Result<Summary, ImportError> {
    let mut t = Text::default();
    let mut in_table = false;
    for (i, raw) in input.text.lines().enumerate() {
        let line = Some(i as u64 + 1);
        let l = raw.trim();
        if let Some(v) = l.strip_prefix("Complete requests:") {
            t.complete = Some(field(input, line, "Complete requests", v)?);
        } else if let Some(v) = l.strip_prefix("Non-2xx responses:") {
            t.non_2xx = field(input, line, "Non-2xx responses", v)?;
        } else if let Some(v) = l.strip_prefix("Time taken for tests:") {
            let secs = v.trim().trim_end_matches("seconds");
            t.elapsed_ns = Some(time_field(input, line, "Time taken for tests", secs, S)?);
        } else if l.starts_with("(Connect:") {
            t.failed_detail = failure_detail(input, line, l)?;
        } else if let Some(v) = l.strip_prefix("Total:") {
            t.total_row = Some(total_row(input, line, v)?);
        } else if l.starts_with("Percentage of the requests served") {
            in_table = true;
        } else if in_table && l.contains('%') {
            let (p, v) = l.split_once('%').expect("checked");
            let v = v.split_whitespace().next().unwrap_or("");
            let p: f64 = field(input, line, "percentage", p)?;
            t.percentiles.push((
                percentile(input, line, "percentage", p)?,
                time_field(input, line, "time (ms)", v, MS)?,
            ));
        }
    }
    let complete = t
        .complete
        .ok_or_else(|| input.missing(TOOL, "\"Complete requests\" line"))?;
    Ok(t.into_summary(complete))
}

/// `(Connect: 0, Receive: 0, Length: 5, Exceptions: 0)`.
fn failure_detail(input: &Input, line: Option<u64>, l: &str) -> Result<[u64; 4], ImportError> {
    let inner = l.trim_start_matches('(').trim_end_matches(')');
    let mut out = [0; 4];
    for (slot, name) in ["Connect", "Receive", "Length", "Exceptions"]
        .iter()
        .enumerate()
    {
        let v = inner
            .split(',')
            .find_map(|p| p.trim().strip_prefix(name)?.strip_prefix(':'))
            .ok_or_else(|| input.err(line, format!("failed requests: no {name} count")))?;
        out[slot] = field(input, line, name, v)?;
    }
    Ok(out)
}

/// `Total:  10   11   1.5     10      20`: min, mean, sd, median, max in ms.
fn total_row(input: &Input, line: Option<u64>, v: &str) -> Result<[f64; 5], ImportError> {
    let cols: Vec<&str> = v.split_whitespace().collect();
    if cols.len() != 5 {
        return Err(input.err(line, "Total: expected min, mean, sd, median and max"));
    }
    let mut out = [0.0; 5];
    for (slot, c) in cols.iter().enumerate() {
        out[slot] = field(input, line, "Total", c)?;
    }
    Ok(out)
}

impl Text {
    fn into_summary(self, complete: u64) -> Summary {
        let mut s = Summary::default();
        let [connect, receive, length, exceptions] = self.failed_detail;
        s.failed.add_n(FailureClass::Connect, connect);
        s.failed
            .add_n(FailureClass::Io, receive.saturating_add(exceptions));
        if length > 0 {
            s.notes.push(format!(
                "ab flagged {length} responses whose length differed from the first one's; that is \
                 not a failure of the request, so they count as completed"
            ));
        }
        build::unknown_cause(
            &mut s.failed,
            &mut s.notes,
            TOOL,
            self.non_2xx,
            "reports non-2xx responses without their status",
        );
        let answered_failures = receive
            .saturating_add(exceptions)
            .saturating_add(self.non_2xx);
        s.completed = complete.saturating_sub(answered_failures);
        s.elapsed = Duration::from_nanos(self.elapsed_ns.unwrap_or(0));
        let ms = |v: f64| (v * 1e6).round() as u64;
        s.latency = Latency {
            percentiles: self.percentiles,
            count: complete,
            min: self.total_row.map(|r| ms(r[0])),
            max: self.total_row.map(|r| ms(r[4])),
            mean: self.total_row.map(|r| r[1] * 1e6),
            stdev: self.total_row.map(|r| r[2] * 1e6),
        };
        s
    }
}

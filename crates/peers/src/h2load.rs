//! h2load (nghttp2): its `--log-file` (per request) and its text summary. Given both, the log
//! gives every answered request its time and the summary counts the requests the log leaves out;
//! the summary alone is a summary import. The per-request import is the one to use (the runners
//! write both files): h2load's summary has no percentiles, so without the log there is no tail.
//!
//! **What h2load measures** (nghttp2 v1.52 `src/h2load.cc`). `-c` connections ("clients") each
//! keep up to `-m` requests in flight (HTTP/2 streams; pipelined requests with `--h1`). A
//! request is timed from just before its HEADERS frame is written (`record_request_time`, called
//! from `before_frame_send_callback`) to the close of its stream. Time it waited for a free
//! stream, for its connection, or (with `--rps`) for its turn is not measured: coordinated
//! omission applies in every mode.
//! - By default (`-n` or `-D`) it is a closed loop of `-c` × `-m` streams.
//! - `-r` starts *connections* at a rate (up to `-r` per `--rate-period`, `-c` in all); each
//!   then runs its share of `-n` as a closed loop. It is a rate of connections, not requests.
//! - `--rps N` paces each connection at N requests a second. Ticks that find all `-m` streams
//!   busy are kept and sent back to back when a stream frees: with `-m 1` a paced closed loop
//!   (as fortio `-qps`), with more streams the requests due in a stall go out on time.
//!
//! **The log** has one row per stream closed during the measurement: its start (wall clock, µs
//! since the epoch, at the HEADERS write), its status (-1: closed without a response) and its
//! duration (µs), tab-separated. Each row is replayed through the recorder due at its start, so
//! the percentiles are real. Requests whose stream never closed are not in it.
//!
//! **The text summary** has h2load's counts and the min, max, mean and sd of its request times:
//! no percentiles at all. Its counts mean (from the source, checked on the fixtures):
//! `failed` = answered with a status other than 2xx/3xx, plus `errored`; `errored` = streams
//! closed without a response, plus requests in flight on a connection h2load gave up on, plus
//! requests it never sent because their connection failed first (`total` − `started`, in `-n`
//! runs). In `-D` runs `total` is `done`: requests still in flight at the end (`started` −
//! `done`) are in no count, and here are censored. h2load counts 3xx as succeeded; sojourn counts
//! them as `http_other`, as in its own runs.
use std::path::PathBuf;
use std::time::Duration;

use sojourn_core::{FailureClass, FailureCounts, Outcome, RunResult};

use crate::build::{self, Latency, PerRequest, Sample, Summary};
use crate::input::Input;
use crate::parse::{duration_ns, field};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::H2load;
/// h2load keeps at most this many request times for its statistics (a random sample beyond).
const MAX_SAMPLES: u64 = 1_000_000;
/// What every import says about h2load's clock.
const CLOCK: &str = "h2load times a request from when its HEADERS frame is written to when its \
stream closes: waiting for a free stream (-m), for a connection, or (with --rps) for its turn is \
not measured, so a request held back by a stall is timed from its late send";

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let (logs, texts): (Vec<&Input>, Vec<&Input>) = inputs.iter().partition(|i| is_log(i));
    if logs.len() > 1 || texts.len() > 1 {
        return Err(ImportError::Files {
            tool: TOOL,
            message: "takes at most one --log-file and one text summary".into(),
        });
    }
    let text = texts.first().map(|t| parse_text(t)).transpose()?;
    let sources: Vec<PathBuf> = inputs.iter().map(|i| i.path.clone()).collect();
    match (logs.first(), text) {
        (Some(log), text) => per_request(log, text, ctx, &sources),
        (None, Some(text)) => build::summary(TOOL, text.summary(), ctx, &sources),
        (None, None) => unreachable!("import() is never called without files"),
    }
}

/// A log row starts with its start time. An empty file is a log too: h2load writes nothing
/// when no stream closed (a refused connection).
fn is_log(input: &Input) -> bool {
    input.text.trim().is_empty() || input.first_line().starts_with(|c: char| c.is_ascii_digit())
}

fn per_request(
    log: &Input,
    text: Option<Text>,
    ctx: &ImportContext,
    sources: &[PathBuf],
) -> Result<RunResult, ImportError> {
    // Alone, an empty log says nothing; beside a summary it means nothing was answered.
    if log.text.trim().is_empty() && text.is_none() {
        return Err(ImportError::Empty {
            path: log.path.clone(),
        });
    }
    let mut data = PerRequest {
        samples: parse_log(log)?,
        ..PerRequest::default()
    };
    data.notes.push(format!("{CLOCK} (1 µs resolution)"));
    match text {
        Some(text) => {
            text.check_same_run(log, data.samples.len() as u64)?;
            let tally = text.tally();
            data.untimed_failures = tally.untimed_failures;
            data.untimed_censored = tally.censored;
            data.notes.extend(tally.notes);
        }
        None => data.notes.push(
            "h2load's log has only the requests whose stream closed; without its text summary \
             the requests it never sent, lost with a connection or left in flight at the end \
             cannot be counted"
                .to_string(),
        ),
    }
    build::per_request(TOOL, data, ctx, sources)
}

fn parse_log(input: &Input) -> Result<Vec<Sample>, ImportError> {
    // h2load ends every row with a line end: a last row without one was cut, and its duration
    // may be cut short yet still read as a number.
    if !input.text.is_empty() && !input.text.ends_with('\n') {
        let last = input.text.lines().count() as u64;
        return Err(input.err(
            Some(last),
            "the last row has no line end: the log was cut short",
        ));
    }
    let mut samples = Vec::new();
    for (i, raw) in input.text.lines().enumerate() {
        let line = Some(i as u64 + 1);
        if raw.trim().is_empty() {
            continue;
        }
        let cols: Vec<&str> = raw.split('\t').collect();
        // h2load's help says more columns may come; the first three keep their meaning.
        let [start, status, duration, ..] = cols[..] else {
            return Err(input.err(
                line,
                format!(
                    "{} field(s); h2load's log has start, status and duration, tab-separated",
                    cols.len()
                ),
            ));
        };
        samples.push(Sample::new(
            micros(input, line, "start", start)?,
            micros(input, line, "duration", duration)?,
            log_outcome(input, line, status)?,
        ));
    }
    Ok(samples)
}

/// Whole microseconds as nanoseconds; integers all the way, since a start (µs since the epoch)
/// in nanoseconds is beyond what an `f64` holds exactly.
fn micros(input: &Input, line: Option<u64>, name: &str, text: &str) -> Result<u64, ImportError> {
    let us: u64 = field(input, line, name, text)?;
    us.checked_mul(1_000).ok_or_else(|| {
        input.err(
            line,
            format!("{name}: {us} µs is more than a result can hold"),
        )
    })
}

/// -1 is a stream closed without a response (reset, or its connection closed under it).
fn log_outcome(input: &Input, line: Option<u64>, text: &str) -> Result<Outcome, ImportError> {
    let status: i32 = field(input, line, "status", text)?;
    match status {
        -1 => Ok(Outcome::Failed(FailureClass::Io)),
        0..=999 => Ok(Outcome::of_status(status as u16)),
        _ => Err(input.err(
            line,
            format!("status: {status} is neither an HTTP status nor -1"),
        )),
    }
}

/// h2load's `requests:` line.
#[derive(Debug, Default, Clone, Copy)]
struct Requests {
    total: u64,
    started: u64,
    done: u64,
    succeeded: u64,
    failed: u64,
    errored: u64,
    timeout: u64,
}

impl Requests {
    /// Answered with a status h2load does not count as a success (4xx, 5xx, others).
    fn http_failed(&self) -> u64 {
        self.failed.saturating_sub(self.errored)
    }

    /// Closed without a response: -1 in the log.
    fn stream_errors(&self) -> u64 {
        self.done
            .saturating_sub(self.succeeded)
            .saturating_sub(self.http_failed())
    }

    /// Never sent: their connection failed or closed first (`-n` runs: `-D` totals hold only
    /// what was done).
    fn never_started(&self) -> u64 {
        self.total.saturating_sub(self.started)
    }

    /// Sent, then given up on with their connection (broken, or a -T/-N timeout).
    fn lost_in_flight(&self) -> u64 {
        self.errored
            .saturating_sub(self.stream_errors())
            .saturating_sub(self.never_started())
    }

    /// Sent and never closed, yet in no count of h2load's: in flight when `-D` ended.
    fn censored(&self) -> u64 {
        self.started
            .saturating_sub(self.done)
            .saturating_sub(self.lost_in_flight())
    }
}

/// What h2load's text summary says.
#[derive(Debug, Default)]
struct Text {
    path: PathBuf,
    requests: Requests,
    /// 2xx, 3xx, 4xx, 5xx.
    statuses: [u64; 4],
    elapsed: Duration,
    /// h2load's own req/s: streams answered with any status, over the run.
    req_per_s: f64,
    /// min, max, mean, sd of the request times, ns.
    request_time: [u64; 4],
    /// `-D`: a timed run.
    timing_based: bool,
    /// `--warm-up-time`, as printed, when not zero.
    warm_up: Option<String>,
    /// `-r`: (connections, period), as printed.
    connection_rate: Option<(String, String)>,
}

/// h2load's counts in sojourn's classes.
#[derive(Debug, Default)]
struct Tally {
    completed: u64,
    /// Requests with a row in the log: answered with a failing status, or reset.
    answered_failures: FailureCounts,
    /// Failed requests that are not in the log.
    untimed_failures: FailureCounts,
    censored: u64,
    notes: Vec<String>,
}

fn parse_text(input: &Input) -> Result<Text, ImportError> {
    let mut t = Text {
        path: input.path.clone(),
        ..Text::default()
    };
    let mut seen = [false; 4];
    for (i, raw) in input.text.lines().enumerate() {
        let line = Some(i as u64 + 1);
        let l = raw.trim();
        if let Some(rest) = l.strip_prefix("finished in ") {
            seen[0] = true;
            finished(input, line, rest, &mut t)?;
        } else if let Some(rest) = l.strip_prefix("requests:") {
            seen[1] = true;
            t.requests = requests(input, line, rest)?;
        } else if let Some(rest) = l.strip_prefix("status codes:") {
            seen[2] = true;
            t.statuses = counts(
                input,
                line,
                "status codes",
                rest,
                ["2xx", "3xx", "4xx", "5xx"],
            )?;
        } else if let Some(rest) = l.strip_prefix("time for request:") {
            seen[3] = true;
            t.request_time = request_time(input, line, rest)?;
        } else if l.starts_with("spawning thread") {
            t.spawning(l);
        }
    }
    let lines = [
        "finished in",
        "requests:",
        "status codes:",
        "time for request:",
    ];
    match seen.iter().position(|s| !s) {
        Some(i) => Err(input.missing(TOOL, format!("{:?} line", lines[i]))),
        None => Ok(t),
    }
}

/// `2.00s, 184.00 req/s, 15.39KB/s`.
fn finished(input: &Input, line: Option<u64>, rest: &str, t: &mut Text) -> Result<(), ImportError> {
    let mut parts = rest.split(',');
    let time = parts.next().unwrap_or("");
    t.elapsed = Duration::from_nanos(
        duration_ns(time)
            .ok_or_else(|| input.err(line, format!("finished in: cannot read {time:?}")))?,
    );
    let rate = parts
        .next()
        .and_then(|p| p.trim().strip_suffix("req/s"))
        .ok_or_else(|| input.err(line, "finished in: no req/s"))?;
    t.req_per_s = field(input, line, "req/s", rate)?;
    Ok(())
}

/// `368 total, 370 started, 368 done, 368 succeeded, 0 failed, 0 errored, 0 timeout`.
fn requests(input: &Input, line: Option<u64>, rest: &str) -> Result<Requests, ImportError> {
    let names = [
        "total",
        "started",
        "done",
        "succeeded",
        "failed",
        "errored",
        "timeout",
    ];
    let [total, started, done, succeeded, failed, errored, timeout] =
        counts(input, line, "requests", rest, names)?;
    Ok(Requests {
        total,
        started,
        done,
        succeeded,
        failed,
        errored,
        timeout,
    })
}

/// Comma-separated `COUNT NAME` pairs, each of `names` required.
fn counts<const N: usize>(
    input: &Input,
    line: Option<u64>,
    what: &str,
    rest: &str,
    names: [&str; N],
) -> Result<[u64; N], ImportError> {
    let mut out = [0; N];
    for (slot, name) in names.iter().enumerate() {
        let value = rest
            .split(',')
            .find_map(|part| part.trim().strip_suffix(name))
            .ok_or_else(|| input.err(line, format!("{what}: no {name} count")))?;
        out[slot] = field(input, line, name, value)?;
    }
    Ok(out)
}

/// `10.23ms  14.67ms  10.75ms  560us  93.21%`: min, max, mean, sd (and the share within one sd).
fn request_time(input: &Input, line: Option<u64>, rest: &str) -> Result<[u64; 4], ImportError> {
    let cols: Vec<&str> = rest.split_whitespace().collect();
    if cols.len() < 4 {
        return Err(input.err(line, "time for request: expected min, max, mean and sd"));
    }
    let mut out = [0; 4];
    for (slot, (name, text)) in ["min", "max", "mean", "sd"].iter().zip(&cols).enumerate() {
        out[slot] = duration_ns(text).ok_or_else(|| {
            input.err(
                line,
                format!("time for request {name}: cannot read {text:?}"),
            )
        })?;
    }
    Ok(out)
}

impl Text {
    /// `spawning thread #0: 2 total client(s). Timing-based test with 0s of warm-up time …` or
    /// `… client(s). Up to 2 client(s) will be created every 1s 40 total requests` (`-r`).
    fn spawning(&mut self, l: &str) {
        if let Some((_, rest)) = l.split_once("Timing-based test with ") {
            self.timing_based = true;
            let warm_up = rest.split(" of warm-up").next().unwrap_or("");
            if warm_up != "0s" {
                self.warm_up = Some(warm_up.to_string());
            }
        }
        if let Some((_, rest)) = l.split_once("Up to ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            if let [n, _, _, _, _, _, period, ..] = words[..] {
                self.connection_rate = Some((n.to_string(), period.to_string()));
            }
        }
    }

    /// The log must be of the same run: one row per stream h2load counted as done.
    fn check_same_run(&self, log: &Input, rows: u64) -> Result<(), ImportError> {
        if rows == self.requests.done {
            return Ok(());
        }
        Err(ImportError::Files {
            tool: TOOL,
            message: format!(
                "{} has {rows} requests but {} says {} done: not from the same run?",
                log.path.display(),
                self.path.display(),
                self.requests.done
            ),
        })
    }

    fn tally(&self) -> Tally {
        let r = &self.requests;
        let [_, s3, s4, s5] = self.statuses;
        let redirects = s3.min(r.succeeded);
        let http = r.http_failed();
        let n4 = s4.min(http);
        let n5 = s5.min(http - n4);
        let mut answered = FailureCounts::default();
        answered.add_n(
            FailureClass::HttpOther,
            redirects.saturating_add(http - n4 - n5),
        );
        answered.add_n(FailureClass::Http4xx, n4);
        answered.add_n(FailureClass::Http5xx, n5);
        answered.add_n(FailureClass::Io, r.stream_errors());
        let lost = r.lost_in_flight();
        let timeouts = r.timeout.min(lost);
        let mut untimed = FailureCounts::default();
        untimed.add_n(FailureClass::Connect, r.never_started());
        untimed.add_n(FailureClass::Timeout, timeouts);
        untimed.add_n(FailureClass::Io, lost - timeouts);
        Tally {
            completed: r.succeeded - redirects,
            answered_failures: answered,
            untimed_failures: untimed,
            censored: r.censored(),
            notes: self.count_notes(redirects, timeouts),
        }
    }

    /// What h2load counts differently, and how it is counted here.
    fn count_notes(&self, redirects: u64, timeouts: u64) -> Vec<String> {
        let r = &self.requests;
        let mut notes = Vec::new();
        let mut say = |n: u64, text: String| {
            if n > 0 {
                notes.push(text);
            }
        };
        say(
            redirects,
            format!("h2load counts {redirects} 3xx responses as succeeded: http_other here"),
        );
        let errors = r.stream_errors();
        say(
            errors,
            format!(
                "{errors} streams closed without a response (reset; -1 in h2load's log): io \
                 failures"
            ),
        );
        let never = r.never_started();
        say(
            never,
            format!(
                "h2load never sent {never} requests because their connection failed or closed \
                 first (it counts them as errored): connect failures here, without times"
            ),
        );
        let lost = r.lost_in_flight();
        say(
            lost,
            format!(
                "{lost} requests were in flight when h2load gave up on their connection \
                 ({timeouts} of them at a -T/-N timeout): failures here, without times"
            ),
        );
        let censored = r.censored();
        say(
            censored,
            format!(
                "{censored} requests were in flight when h2load's -D duration ended; h2load \
                 leaves them out of its totals: censored here, without times"
            ),
        );
        notes.extend(self.run_notes());
        notes
    }

    /// What the run's own settings mean for its numbers.
    fn run_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.timing_based && self.requests.started == 0 {
            notes.push(
                "h2load -D counted no request: it counts nothing when its connections fail \
                 before the measurement starts (and exits 0). Does the target speak HTTP/2, or \
                 does h2load need --h1?"
                    .to_string(),
            );
        }
        if let Some(w) = &self.warm_up {
            notes.push(format!(
                "h2load left its {w} warm-up out of every count and time"
            ));
        }
        if let Some((n, period)) = &self.connection_rate {
            notes.push(format!(
                "h2load -r started up to {n} connections every {period} (per thread): a rate \
                 of connections, not of requests; each connection ran its requests as a closed \
                 loop"
            ));
        }
        notes
    }

    fn summary(self) -> Summary {
        let tally = self.tally();
        let mut failed = tally.answered_failures;
        failed.merge(&tally.untimed_failures);
        // h2load's times cover streams answered with any status, not resets.
        let timed = self
            .requests
            .succeeded
            .saturating_add(self.requests.http_failed());
        let [min, max, mean, sd] = self.request_time;
        let mut notes = vec![
            CLOCK.to_string(),
            "h2load prints no percentiles: only the min, max, mean and sd of its request times"
                .to_string(),
            format!(
                "h2load's own rate, {:.2} req/s, counts streams answered with any status",
                self.req_per_s
            ),
        ];
        if timed > MAX_SAMPLES {
            notes.push(format!(
                "h2load keeps at most {MAX_SAMPLES} request times (a random sample of its \
                 {timed}): its min, max, mean and sd describe that sample"
            ));
        }
        notes.extend(tally.notes);
        Summary {
            latency: Latency {
                percentiles: Vec::new(),
                count: timed,
                min: (timed > 0).then_some(min),
                max: (timed > 0).then_some(max),
                mean: (timed > 0).then_some(mean as f64),
                stdev: (timed > 0).then_some(sd as f64),
            },
            completed: tally.completed,
            failed,
            censored: tally.censored,
            never_sent: 0,
            elapsed: self.elapsed,
            notes,
        }
    }
}

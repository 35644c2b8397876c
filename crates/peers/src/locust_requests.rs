//! locust, per request: the JSON lines a locustfile writes from Locust's own `events.request`
//! hook, one per request (`crates/peers/tests/fixtures/locust/shop_journey.py` is one such
//! locustfile):
//!
//! ```json
//! {"name": "shop/login", "start": 1767000000.123456, "response_time": 10.42, "status": 200, "exception": null}
//! ```
//!
//! `name` is the request's name in Locust (`JOURNEY/STEP`, as sojourn labels a journey's
//! steps), `start` Locust's `start_time` (Unix seconds, taken just before it sends),
//! `response_time` its milliseconds from there to the answer, `status` the HTTP status (0 or
//! absent: no answer) and `exception` what Locust counted the request failed for (null or
//! absent: a success). Each name becomes a `steps` entry. Locust knows when it sent a request,
//! never when its user meant to: every time here runs from the send.
use std::collections::HashMap;

use serde::Deserialize;
use sojourn_core::{FailureClass, Outcome, RunResult};

use crate::build::{self, error_class, PerRequest, Sample};
use crate::input::Input;
use crate::parse::{to_ns, MS, S};
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Locust;

/// One line as the locustfile writes it.
#[derive(Deserialize)]
struct Line {
    name: String,
    start: f64,
    response_time: f64,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    exception: Option<String>,
}

/// Whether `input` is a requests log: its first line a JSON object with a `response_time`.
pub(crate) fn is_requests_log(input: &Input) -> bool {
    let first = input.first_line();
    first.starts_with('{') && first.contains("\"response_time\"")
}

pub(crate) fn import(input: &Input, ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let data = requests(input)?;
    build::per_request(TOOL, data, ctx, std::slice::from_ref(&input.path))
}

fn requests(input: &Input) -> Result<PerRequest, ImportError> {
    let mut data = PerRequest::default();
    let mut steps: HashMap<String, usize> = HashMap::new();
    for (i, text) in input.text.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line = Some(i as u64 + 1);
        let l: Line = serde_json::from_str(text).map_err(|e| {
            input.err(
                line,
                format!(
                    "not a locust request record ({e}); each line must be an object with name, \
                     start (Unix seconds), response_time (ms), status and exception, as the \
                     locustfile's events.request listener writes it"
                ),
            )
        })?;
        let mut sample = sample(input, line, &l)?;
        let next = steps.len();
        let step = *steps.entry(l.name).or_insert(next);
        sample.label = Some(step);
        data.samples.push(sample);
    }
    data.labels = in_order_of_first_send(steps, &mut data.samples);
    data.notes.extend(notes());
    Ok(data)
}

fn sample(input: &Input, line: Option<u64>, l: &Line) -> Result<Sample, ImportError> {
    if l.name.trim().is_empty() {
        return Err(input.err(
            line,
            "name is empty: give each request a name= in the locustfile",
        ));
    }
    let start = to_ns(l.start, S)
        .ok_or_else(|| input.err(line, format!("start: {} is not a Unix time", l.start)))?;
    let latency = to_ns(l.response_time, MS).ok_or_else(|| {
        let why = format!("response_time: {} is not a duration in ms", l.response_time);
        input.err(line, why)
    })?;
    Ok(Sample::new(start, latency, outcome(l)))
}

/// Locust's verdict decides: a request it counted failed is failed here, a success is one.
/// The class comes from the status when there was an answer, else from the exception's words.
fn outcome(l: &Line) -> Outcome {
    let Some(exception) = &l.exception else {
        return Outcome::Ok;
    };
    match l.status.unwrap_or(0) {
        0 => Outcome::Failed(error_class(exception)),
        code => match Outcome::of_status(code) {
            Outcome::Ok => Outcome::Failed(FailureClass::Check),
            failed => failed,
        },
    }
}

/// The step names ordered by their first send (a journey's steps in the journey's order), and
/// the samples' labels renumbered to match.
fn in_order_of_first_send(steps: HashMap<String, usize>, samples: &mut [Sample]) -> Vec<String> {
    let mut first = vec![u64::MAX; steps.len()];
    for s in samples.iter() {
        let l = s.label.expect("every locust sample is labelled");
        first[l] = first[l].min(s.start_ns);
    }
    let mut names: Vec<(String, usize)> = steps.into_iter().collect();
    names.sort_by_key(|(name, l)| (first[*l], name.clone()));
    let mut renumber = vec![0; names.len()];
    for (new, (_, old)) in names.iter().enumerate() {
        renumber[*old] = new;
    }
    for s in samples.iter_mut() {
        s.label = s.label.map(|l| renumber[l]);
    }
    names.into_iter().map(|(name, _)| name).collect()
}

fn notes() -> [String; 2] {
    [
        "locust times each request from its send (its start_time): a request Locust sent late, \
         because a stall held its user, is timed from that late send, so the wait is in no \
         request's time"
            .to_string(),
        "locust's requests log names steps but not journeys: each request name is a step; \
         journey times are not imported"
            .to_string(),
    ]
}

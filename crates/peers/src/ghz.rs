//! ghz: the JSON report (`-O json`), imported per call from its `details` array.
//!
//! Each detail is one call: `timestamp` (RFC 3339, when the call **ended**: ghz's gRPC stats
//! handler reports the RPC's `EndTime`), `latency` (nanoseconds, `EndTime − BeginTime`),
//! `status` (the gRPC code in Go's spelling, `OK`, `DeadlineExceeded`, …) and `error`. So a
//! call began at `timestamp − latency`, and is due then: ghz's pacer hands each tick to one of
//! its `-c` workers and waits while all are busy, so a call that waited began late, and that
//! wait is in no figure of ghz's.
//!
//! ghz keeps at most [`MAX_DETAILS`] details; calls past that are in `count` and
//! `statusCodeDistribution` only, and are counted without times. When `-z` runs out ghz closes
//! its connections, and calls cut off by that fail with CANCELLED "the client connection is
//! closing": they are counted as censored, not as failures.
use std::collections::BTreeMap;

use serde::Deserialize;
use sojourn_core::{FailureClass, FailureCounts, Outcome, RunResult};

use crate::build::{self, PerRequest, Sample};
use crate::input::Input;
use crate::parse::rfc3339_ns;
use crate::{ImportContext, ImportError, PeerTool};

const TOOL: PeerTool = PeerTool::Ghz;
/// ghz's `maxResult` (runner/requester.go): the most details a report holds.
pub(crate) const MAX_DETAILS: usize = 1_000_000;
/// grpc-go's message for a call failed by the client closing its own connection.
const CLOSING: &str = "the client connection is closing";

pub(crate) fn import(inputs: &[Input], ctx: &ImportContext) -> Result<RunResult, ImportError> {
    let [input] = inputs else {
        return Err(ImportError::Files {
            tool: TOOL,
            message: format!(
                "takes one file (the `-O json` report), got {}",
                inputs.len()
            ),
        });
    };
    if !input.is_json() {
        return Err(input.err(
            Some(1),
            "not JSON: ghz's report is read from `ghz -O json` output",
        ));
    }
    let report: Report = input.json()?;
    let data = report.per_request(input)?;
    build::per_request(TOOL, data, ctx, std::slice::from_ref(&input.path))
}

#[derive(Deserialize)]
struct Detail {
    timestamp: String,
    latency: u64,
    status: String,
    #[serde(default)]
    error: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Options {
    #[serde(default)]
    skip_first: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    count: u64,
    #[serde(default)]
    status_code_distribution: BTreeMap<String, u64>,
    details: Option<Vec<Detail>>,
    #[serde(default)]
    options: Options,
}

/// What one call counts as.
enum Call {
    Answered(Outcome),
    /// Cut off by ghz closing its connections at the end of the run.
    CutOff,
}

impl Report {
    fn per_request(self, input: &Input) -> Result<PerRequest, ImportError> {
        let details = self
            .details
            .as_ref()
            .ok_or_else(|| input.missing(TOOL, "`details` array"))?;
        let mut data = PerRequest::default();
        let mut by_code: BTreeMap<&'static str, u64> = BTreeMap::new();
        for (i, d) in details.iter().enumerate() {
            let at = |field: &str| format!("details[{i}].{field}");
            let end = rfc3339_ns(&d.timestamp).ok_or_else(|| {
                input.err(
                    None,
                    format!(
                        "{}: {:?} is not an RFC 3339 time",
                        at("timestamp"),
                        d.timestamp
                    ),
                )
            })?;
            // The timestamp is the call's end; it began `latency` before.
            let start = end.checked_sub(d.latency).ok_or_else(|| {
                input.err(
                    None,
                    format!(
                        "{}: {} ns is longer than since 1970 at its end, {}",
                        at("latency"),
                        d.latency,
                        d.timestamp
                    ),
                )
            })?;
            let code = canonical(&d.status).ok_or_else(|| {
                input.err(
                    None,
                    format!("{}: {:?} is not a gRPC status code", at("status"), d.status),
                )
            })?;
            match call(code, &d.error) {
                Call::CutOff => data.untimed_censored += 1,
                Call::Answered(outcome) => {
                    if outcome != Outcome::Ok {
                        *by_code.entry(code).or_default() += 1;
                    }
                    data.samples.push(Sample::new(start, d.latency, outcome));
                }
            }
        }
        self.untimed(input, details, &mut data)?;
        notes(&mut data, &by_code, self.options.skip_first);
        Ok(data)
    }

    /// Calls past ghz's cap on details are in its counts only; anything else missing means the
    /// file is damaged.
    fn untimed(
        &self,
        input: &Input,
        details: &[Detail],
        data: &mut PerRequest,
    ) -> Result<(), ImportError> {
        let listed = details.len() as u64;
        if self.count == listed {
            return Ok(());
        }
        if self.count < listed || details.len() < MAX_DETAILS {
            return Err(input.err(
                None,
                format!(
                    "count is {} but `details` lists {listed} calls: truncated or edited?",
                    self.count
                ),
            ));
        }
        let mut rest = self.status_code_distribution.clone();
        for d in details {
            if let Some(n) = rest.get_mut(&d.status) {
                *n = n.saturating_sub(1);
            }
        }
        let mut failed = FailureCounts::default();
        for (status, &n) in &rest {
            match canonical(status).map(|c| call(c, "")) {
                Some(Call::Answered(Outcome::Ok)) => data.untimed_completed += n,
                Some(Call::Answered(Outcome::Failed(class))) => failed.add_n(class, n),
                _ => {
                    return Err(input.err(
                        None,
                        format!("statusCodeDistribution: {status:?} is not a gRPC status code"),
                    ))
                }
            }
        }
        data.notes.push(format!(
            "ghz keeps at most {MAX_DETAILS} calls in `details`: the {} calls past that are \
             counted from its statusCodeDistribution, without times",
            self.count - listed
        ));
        data.untimed_failures = failed;
        Ok(())
    }
}

fn call(code: &str, error: &str) -> Call {
    match code {
        "OK" => Call::Answered(Outcome::Ok),
        "CANCELLED" if error.contains(CLOSING) => Call::CutOff,
        // A failed call's class is its gRPC code, `grpc:{code}`, as sojourn's own calls count.
        _ => Call::Answered(Outcome::Failed(grpc_class(code))),
    }
}

fn notes(data: &mut PerRequest, by_code: &BTreeMap<&'static str, u64>, skip_first: u64) {
    data.notes.push(
        "ghz times a call from when it began: a call its pacer held back while all of its -c \
         workers were busy is timed from its late start"
            .into(),
    );
    if !by_code.is_empty() {
        let counts: Vec<String> = by_code.iter().map(|(c, n)| format!("{c} {n}")).collect();
        data.notes.push(format!(
            "ghz's failed calls by gRPC status: {}",
            counts.join(", ")
        ));
    }
    if data.untimed_censored > 0 {
        data.notes.push(format!(
            "ghz closed its connections at the end of the run: {} calls failed with CANCELLED \
             (\"{CLOSING}\") and are counted as censored, without times",
            data.untimed_censored
        ));
    }
    if skip_first > 0 {
        data.notes.push(format!(
            "ghz ran with --skipFirst {skip_first}: its first {skip_first} calls are in none of \
             its figures, so in none of these"
        ));
    }
}

/// `grpc:CODE` for a canonical non-OK code name (every name [`canonical`] gives has one).
fn grpc_class(code: &str) -> FailureClass {
    FailureClass::ALL
        .into_iter()
        .find(|c| c.is_grpc() && c.name().strip_prefix("grpc:") == Some(code))
        .unwrap_or(FailureClass::Error)
}

/// The canonical name of a gRPC status code from Go's spelling of it (`codes.Code.String()`).
fn canonical(status: &str) -> Option<&'static str> {
    Some(match status {
        "OK" => "OK",
        "Canceled" => "CANCELLED",
        "Unknown" => "UNKNOWN",
        "InvalidArgument" => "INVALID_ARGUMENT",
        "DeadlineExceeded" => "DEADLINE_EXCEEDED",
        "NotFound" => "NOT_FOUND",
        "AlreadyExists" => "ALREADY_EXISTS",
        "PermissionDenied" => "PERMISSION_DENIED",
        "ResourceExhausted" => "RESOURCE_EXHAUSTED",
        "FailedPrecondition" => "FAILED_PRECONDITION",
        "Aborted" => "ABORTED",
        "OutOfRange" => "OUT_OF_RANGE",
        "Unimplemented" => "UNIMPLEMENTED",
        "Internal" => "INTERNAL",
        "Unavailable" => "UNAVAILABLE",
        "DataLoss" => "DATA_LOSS",
        "Unauthenticated" => "UNAUTHENTICATED",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn input(text: &str) -> Input {
        Input {
            path: PathBuf::from("ghz.json"),
            text: text.into(),
        }
    }

    #[test]
    fn calls_past_the_cap_are_counted_from_the_distribution() {
        let detail = r#"{"timestamp":"2026-11-27T00:00:00Z","latency":1000,"status":"OK"}"#;
        let details = vec![detail; MAX_DETAILS].join(",");
        let text = format!(
            r#"{{"count":{},"statusCodeDistribution":{{"OK":{},"Unavailable":2}},"details":[{details}]}}"#,
            MAX_DETAILS + 5,
            MAX_DETAILS + 3
        );
        let report: Report = input(&text).json().unwrap();
        let data = report.per_request(&input(&text)).unwrap();
        assert_eq!(data.samples.len(), MAX_DETAILS);
        assert_eq!(data.untimed_completed, 3);
        assert_eq!(data.untimed_failures.total(), 2);
    }

    #[test]
    fn a_call_is_due_when_it_began_latency_before_its_timestamp() {
        let text = r#"{"count":1,"details":[
            {"timestamp":"2026-11-27T00:00:01Z","latency":200000000,"status":"DeadlineExceeded"}
        ]}"#;
        let report: Report = input(text).json().unwrap();
        let data = report.per_request(&input(text)).unwrap();
        let end = rfc3339_ns("2026-11-27T00:00:01Z").unwrap();
        assert_eq!(data.samples[0].start_ns, end - 200_000_000);
        assert_eq!(data.samples[0].latency_ns, 200_000_000);
    }

    #[test]
    fn every_go_code_name_is_known() {
        for go in [
            "Canceled",
            "DeadlineExceeded",
            "Unauthenticated",
            "DataLoss",
        ] {
            assert!(canonical(go).is_some(), "{go}");
        }
        assert_eq!(canonical("CANCELLED"), None, "ghz writes Go's spelling");
    }
}

//! Results to report on, made the way `run` and `sim` make them: the real scenario model
//! (`hiccup`) answers, a core `Recorder` records, `RunResult::build` summarises.
#![allow(dead_code)] // each test binary uses a different part

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::time::Duration;

use sojourn_core::check::{assess_closed, assess_open};
use sojourn_core::outcome::Outcome;
use sojourn_core::record::{Measurements, Recorder, Stamps};
use sojourn_core::result::{Mode, RunConfig, RunFacts, RunResult};
use sojourn_report::samples::Sample;
use sojourn_scenario::{Override, Scenario};

pub const RUN: Duration = Duration::from_secs(12);
pub const RATE: u64 = 200;
pub const OPEN_CONNECTIONS: u32 = 64;
pub const CLOSED_CONNECTIONS: u32 = 10;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `hiccup` with its 1 s stall at 5 s instead of 30 s, so a short run shows it.
pub fn scenario() -> Scenario {
    Scenario::builtin("hiccup", &["hiccup.at=5s".parse::<Override>().unwrap()]).unwrap()
}

fn sample(s: &Stamps, done: Duration) -> Sample {
    Sample {
        intended_offset: s.intended,
        response: done - s.intended,
        service: done - s.sent,
        outcome: Outcome::Ok,
    }
}

/// The open loop of [`open_run`] against `s`: request `i` is due on the schedule, leaves when a
/// connection of the pool is free, and `each` gets its stamps and when it finished. Returns how
/// many were scheduled and when the last finished.
fn open_pool(s: &Scenario, mut each: impl FnMut(u64, &Stamps, Duration)) -> (u64, Duration) {
    let mut free: BinaryHeap<Reverse<Duration>> = (0..OPEN_CONNECTIONS)
        .map(|_| Reverse(Duration::ZERO))
        .collect();
    let n = RATE * RUN.as_secs();
    let mut end = RUN;
    for i in 0..n {
        let intended = Duration::from_nanos(i * 1_000_000_000 / RATE);
        let Reverse(ready) = free.pop().unwrap();
        let sent = intended.max(ready);
        let stamps = Stamps {
            intended,
            dispatched: intended,
            sent,
            waited_for_connection: sent > intended,
        };
        let done = s.departure(i, sent);
        each(i, &stamps, done);
        free.push(Reverse(done));
        end = end.max(done);
    }
    (n, end)
}

/// What [`open_pool`] was asked for.
fn open_config() -> RunConfig {
    RunConfig {
        target: Some("http://127.0.0.1:8080/".into()),
        rate: Some(RATE as f64),
        arrival: Some("constant".into()),
        duration_ns: Some(RUN.as_nanos() as u64),
        connections: OPEN_CONNECTIONS,
        interval_ns: 1_000_000_000,
        ..Default::default()
    }
}

/// An [`open_pool`] run's facts: `n` scheduled, the last finished at `end`.
fn open_facts(label: &str, config: RunConfig, m: &Measurements, n: u64, end: Duration) -> RunFacts {
    RunFacts {
        label: label.into(),
        mode: Mode::Open,
        config,
        scheduled: n,
        elapsed: end,
        interrupted: false,
        checks: assess_open(m, OPEN_CONNECTIONS),
        backfill_interval: None,
    }
}

/// An open loop at 200 req/s for 12 s through a pool of 64 connections: during the stall the
/// pool fills and later requests wait for a connection (send lag).
pub fn open_run() -> (RunResult, Vec<Sample>) {
    let s = scenario();
    let mut rec = Recorder::new(Duration::from_secs(1));
    let mut samples = Vec::new();
    let (n, end) = open_pool(&s, |_, stamps, done| {
        rec.record(stamps, done, Outcome::Ok);
        samples.push(sample(stamps, done));
    });
    let m = Recorder::merge_all([rec]);
    let facts = open_facts("open", open_config(), &m, n, end);
    let mut r = RunResult::build(&m, facts);
    r.scenario = Some(serde_json::to_value(&s).unwrap());
    (r, samples)
}

/// The labels of [`labelled_run`]: every fourth request adds to a cart, the rest read an item.
pub const LABELS: [&str; 2] = ["GET /item/:id", "POST /cart <new>"];

/// [`open_run`] as a run of many requests over HTTP/2 (`h2c`, 32 streams a connection): each
/// request also lands in its label and counts its status. Reads answer 200; every tenth cart
/// request 503, the rest 201.
pub fn labelled_run() -> RunResult {
    let s = scenario();
    let mut rec = Recorder::with_labels(Duration::from_secs(1), LABELS.len());
    let (n, end) = open_pool(&s, |i, stamps, done| {
        let (label, status) = match i % 4 {
            3 if i % 40 == 3 => (1, 503),
            3 => (1, 201),
            _ => (0, 200),
        };
        let outcome = Outcome::of_status(status);
        rec.record(stamps, done, outcome);
        rec.record_status(status);
        rec.label(label).unwrap().record(stamps, done, outcome);
    });
    let m = Recorder::merge_all([rec]);
    let config = RunConfig {
        target: Some("http://127.0.0.1:8080".into()),
        connections: OPEN_CONNECTIONS / 32,
        protocol: Some("h2c".into()),
        streams: Some(32),
        targets: Some(sojourn_core::TargetsConfig {
            file: "targets.txt".into(),
            count: LABELS.len() as u32,
            order: "round_robin".into(),
            seed: None,
        }),
        ..open_config()
    };
    let facts = open_facts("targets", config, &m, n, end);
    let mut r = RunResult::build(&m, facts);
    r.targets = LABELS
        .iter()
        .zip([0.75, 0.25])
        .zip(&m.labels)
        .map(|((label, share), record)| sojourn_core::TargetResult::of(label, share, record))
        .collect();
    r
}

/// A closed loop of 10 connections for 12 s: each sends, waits for the answer, sends again.
pub fn closed_run() -> (RunResult, Vec<Sample>) {
    let s = scenario();
    let mut rec = Recorder::new(Duration::from_secs(1));
    let mut ready: BinaryHeap<Reverse<Duration>> = (0..CLOSED_CONNECTIONS)
        .map(|_| Reverse(Duration::ZERO))
        .collect();
    let mut samples = Vec::new();
    let (mut i, mut end) = (0u64, RUN);
    while let Some(Reverse(at)) = ready.pop() {
        if at >= RUN {
            continue;
        }
        let stamps = Stamps::on_time(at);
        let done = s.departure(i, at);
        rec.record(&stamps, done, Outcome::Ok);
        samples.push(sample(&stamps, done));
        ready.push(Reverse(done));
        end = end.max(done);
        i += 1;
    }
    let m = Recorder::merge_all([rec]);
    let config = RunConfig {
        target: Some("http://127.0.0.1:8080/".into()),
        duration_ns: Some(RUN.as_nanos() as u64),
        connections: CLOSED_CONNECTIONS,
        interval_ns: 1_000_000_000,
        ..Default::default()
    };
    let facts = RunFacts {
        label: "closed".into(),
        mode: Mode::Closed,
        config,
        scheduled: i,
        elapsed: end,
        interrupted: false,
        checks: assess_closed(),
        backfill_interval: Some(Duration::from_millis(10)),
    };
    let mut r = RunResult::build(&m, facts);
    r.scenario = Some(serde_json::to_value(&s).unwrap());
    (r, samples)
}

/// The peers a full suite runs, each with its loop, the banner its version command prints,
/// and what its importer would note. Several share notes, as real suites' runs do.
const SUITE_TOOLS: [(&str, Mode, &str, &[&str]); 15] = [
    ("sojourn open", Mode::Open, "0.1.0", &[]),
    ("sojourn closed", Mode::Closed, "0.1.0", &[]),
    ("sojourn paced", Mode::Paced, "0.1.0", &[]),
    ("wrk", Mode::Closed, "wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer", &["summary only: service time and send lag are unknown", "wrk has no rate: it is a closed loop"]),
    ("wrk2 -R", Mode::Open, "wrk 4.0.0 [epoll] Copyright (C) 2012 Will Glozer", &["summary only: service time and send lag are unknown"]),
    ("ab", Mode::Closed, "This is ApacheBench, Version 2.3 <$Revision$>", &["summary only: service time and send lag are unknown", "ab speaks HTTP/1.0 (keep-alive with -k)"]),
    ("hey", Mode::Closed, "v0.1.5", &["each request is due when the tool stamped it: any lateness before its own stamp is invisible"]),
    ("hey -q", Mode::Paced, "v0.1.5", &["each request is due when the tool stamped it: any lateness before its own stamp is invisible"]),
    ("vegeta", Mode::Open, "v12.12.0", &["each request is due when the tool stamped it: any lateness before its own stamp is invisible"]),
    ("k6", Mode::Closed, "k6 v0.49.0 (go1.21.6, linux/amd64)", &["k6 constant-vus has no rate: each VU is a closed loop"]),
    ("k6 constant-arrival-rate", Mode::Open, "k6 v0.49.0 (go1.21.6, linux/amd64)", &["k6's http_req_duration leaves out waiting for and opening a connection"]),
    ("oha", Mode::Closed, "oha 1.4.5", &["oha's CSV leaves out requests that ended in an error"]),
    ("oha -q", Mode::Open, "oha 1.4.5", &["oha's CSV leaves out requests that ended in an error"]),
    ("oha -q --latency-correction", Mode::Open, "oha 1.4.5", &["oha's CSV leaves out requests that ended in an error"]),
    ("fortio -qps", Mode::Paced, "1.63.0 h1:abc= go1.21.6 amd64 linux", &["summary only: service time and send lag are unknown"]),
];

/// A suite of `n` runs (2 or more): the model first, then sojourn's loops and the peers, each an
/// open or closed run of the hiccup scenario relabelled as that tool would be. Past 16 the
/// tools come round again, as a second version of each would.
pub fn suite_runs(n: usize) -> Vec<RunResult> {
    assert!(n >= 2, "the model and at least one run");
    let (open, _) = open_run();
    let (closed, _) = closed_run();
    let mut model = open.clone();
    model.label = "model".into();
    let mut runs = vec![model];
    for (i, (label, mode, version, notes)) in SUITE_TOOLS.iter().cycle().take(n - 1).enumerate() {
        let mut r = if *mode == Mode::Closed {
            closed.clone()
        } else {
            open.clone()
        };
        r.label = match i / SUITE_TOOLS.len() {
            0 => (*label).to_string(),
            round => format!("{label} #{}", round + 1),
        };
        r.mode = *mode;
        r.tool.name = label.split(' ').next().unwrap().into();
        r.tool.version = (*version).into();
        if !notes.is_empty() {
            r.import = Some(sojourn_core::result::ImportInfo {
                detail: sojourn_core::result::Detail::Summary,
                source: vec![format!("{label}.txt")],
                notes: notes.iter().map(|s| s.to_string()).collect(),
            });
        }
        runs.push(r);
    }
    runs
}

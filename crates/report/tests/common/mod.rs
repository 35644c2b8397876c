//! Results to report on, made the way `run` and `sim` make them: the real scenario model
//! (`hiccup`) answers, a core `Recorder` records, `RunResult::build` summarises.
#![allow(dead_code)] // each test binary uses a different part

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::PathBuf;
use std::time::Duration;

use sojourn_core::check::{assess_closed, assess_open};
use sojourn_core::outcome::Outcome;
use sojourn_core::record::{Recorder, Stamps};
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

/// An open loop at 200 req/s for 12 s through a pool of 64 connections: during the stall the
/// pool fills and later requests wait for a connection (send lag).
pub fn open_run() -> (RunResult, Vec<Sample>) {
    let s = scenario();
    let mut rec = Recorder::new(Duration::from_secs(1));
    let mut free: BinaryHeap<Reverse<Duration>> = (0..OPEN_CONNECTIONS)
        .map(|_| Reverse(Duration::ZERO))
        .collect();
    let mut samples = Vec::new();
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
        rec.record(&stamps, done, Outcome::Ok);
        samples.push(sample(&stamps, done));
        free.push(Reverse(done));
        end = end.max(done);
    }
    let m = Recorder::merge_all([rec]);
    let config = RunConfig {
        target: Some("http://127.0.0.1:8080/".into()),
        rate: Some(RATE as f64),
        arrival: Some("constant".into()),
        duration_ns: Some(RUN.as_nanos() as u64),
        connections: OPEN_CONNECTIONS,
        interval_ns: 1_000_000_000,
        ..Default::default()
    };
    let facts = RunFacts {
        label: "open".into(),
        mode: Mode::Open,
        config,
        scheduled: n,
        elapsed: end,
        interrupted: false,
        checks: assess_open(&m, OPEN_CONNECTIONS),
        backfill_interval: None,
    };
    let mut r = RunResult::build(&m, facts);
    r.scenario = Some(serde_json::to_value(&s).unwrap());
    (r, samples)
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

//! An answer is its transport's to judge. The engine counts the outcome a transport gives and
//! the status code it reports, whatever the protocol; HTTP's statuses come out per code and
//! per class, in the measurements and in the result document.
mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{assert_nothing_lost, open_plan, run, transport, Behaviour, TestServer};
use sojourn_core::{End, FailureClass, Outcome};
use sojourn_engine::{Answer, Connection, Exchange, ExchangeError, Load, Plan, Transport};

/// A closed loop of `count` requests over `connections` connections.
fn closed(count: u64, connections: usize) -> Plan {
    Plan {
        load: Load::Closed(End::Count(count)),
        ..open_plan(1.0, Duration::from_millis(1), connections)
    }
}

/// A protocol with codes of its own, numbered as gRPC's are: 0 is its success, and every
/// third call on a connection answers 14 (unavailable), a failure it classes as `error`.
#[derive(Clone)]
struct NotHttp;

struct NotHttpConnection {
    /// Calls since its last unavailable answer.
    calls: u8,
}

impl Transport for NotHttp {
    type Conn = NotHttpConnection;

    async fn connect(&self) -> Result<NotHttpConnection, FailureClass> {
        Ok(NotHttpConnection { calls: 0 })
    }
}

impl Connection for NotHttpConnection {
    async fn exchange(&mut self, ex: &Exchange) -> Result<Outcome, ExchangeError> {
        ex.mark_sent();
        self.calls += 1;
        let answer = if self.calls == 3 {
            self.calls = 0;
            Answer {
                outcome: Outcome::Failed(FailureClass::Error),
                code: 14,
            }
        } else {
            Answer {
                outcome: Outcome::Ok,
                code: 0,
            }
        };
        Ok(ex.answered(answer))
    }

    fn reusable(&self) -> bool {
        true
    }
}

#[test]
fn the_engine_counts_the_outcome_and_code_a_transport_gives() {
    // One connection, so its every third call is exactly a third of the run.
    let report = run(&closed(300, 1), NotHttp, None);
    let m = assert_nothing_lost(&report);
    // Code 0 is no HTTP success: an engine that judged codes as HTTP statuses would fail these.
    assert_eq!(m.tally.completed, 200, "{:?}", m.tally);
    assert_eq!(m.tally.failed.get(FailureClass::Error), 100);
    assert_eq!(m.tally.failed.total(), 100, "{:?}", m.tally.failed);
    let codes: BTreeMap<u16, u64> = [(0, 200), (14, 100)].into_iter().collect();
    assert_eq!(m.statuses, codes);
}

#[test]
fn http_statuses_are_counted_per_code_and_per_class() {
    let server = TestServer::start(Behaviour::Statuses);
    let plan = closed(400, 4);
    let report = run(&plan, transport(&server.url()), None);
    let m = assert_nothing_lost(&report);
    // The server answers its statuses in turn across connections: 100 of each.
    let each: BTreeMap<u16, u64> = common::STATUS_CYCLE.iter().map(|&s| (s, 100)).collect();
    assert_eq!(m.statuses, each);
    assert_eq!(m.tally.completed, 100, "{:?}", m.tally);
    for class in [
        FailureClass::Http4xx,
        FailureClass::Http5xx,
        FailureClass::HttpOther,
    ] {
        assert_eq!(m.tally.failed.get(class), 100, "{class:?}: {:?}", m.tally);
    }
    assert_eq!(m.tally.failed.total(), 300);
    // The result document names them as it always has: statuses by code, failures by class.
    let result = sojourn_engine::result::build(
        &plan,
        &report,
        &sojourn_engine::result::About::labelled("statuses"),
    );
    let doc = serde_json::to_value(&result).unwrap();
    assert_eq!(
        doc["statuses"],
        serde_json::json!({"200": 100, "302": 100, "404": 100, "503": 100})
    );
    let failed = &doc["counts"]["failed"];
    for (name, n) in [("http_4xx", 100), ("http_5xx", 100), ("http_other", 100)] {
        assert_eq!(failed[name], n, "{name}: {failed}");
    }
    assert_eq!(doc["counts"]["completed"], 100);
}

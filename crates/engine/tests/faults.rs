//! Every scheduled request is accounted for, whatever the target does: real sockets, real
//! servers that refuse, reset, never answer or die mid-run, and a run cut short.
mod common;

use std::time::Duration;

use common::{assert_nothing_lost, open_plan, run, transport, Behaviour, TestServer};
use sojourn_core::{End, FailureClass};
use sojourn_engine::Load;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn refused_connections_fail_as_connect_open_and_closed() {
    // A port that was just free: nothing listens there.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{addr}/");
    let report = run(&open_plan(200.0, ms(500), 8), transport(&url), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 100);
    assert_eq!(m.tally.failed.get(FailureClass::Connect), 100);
    let closed = sojourn_engine::Plan {
        load: Load::Closed(End::After(ms(300))),
        ..open_plan(1.0, ms(1), 4)
    };
    let report = run(&closed, transport(&url), None);
    let m = assert_nothing_lost(&report);
    assert!(report.scheduled > 4, "each loop retries after a back-off");
    assert_eq!(m.tally.failed.get(FailureClass::Connect), report.scheduled);
}

/// An https URL on a plain HTTP port: the TCP connection opens, the handshake cannot. Each
/// request fails as `tls`, apart from `connect`, so the user looks at certificates and ports
/// rather than at the network.
#[test]
fn failed_handshakes_fail_as_tls() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            // What a plain server says to a ClientHello.
            let mut hello = [0u8; 512];
            if matches!(stream.read(&mut hello), Ok(n) if n > 0) {
                let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
            }
        }
    });
    let url = format!("https://{addr}/");
    let report = run(&open_plan(100.0, ms(500), 8), transport(&url), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 50);
    assert_eq!(m.tally.failed.get(FailureClass::Tls), 50, "{:?}", m.tally);
}

#[test]
fn resets_fail_as_io_and_every_request_gets_its_own_attempt() {
    let server = TestServer::start(Behaviour::Reset);
    let report = run(
        &open_plan(200.0, ms(500), 8),
        transport(&server.url()),
        None,
    );
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 100);
    assert_eq!(m.tally.failed.get(FailureClass::Io), 100, "{:?}", m.tally);
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        100,
        "each request reached the server once"
    );
}

#[test]
fn a_black_hole_times_out_what_it_holds_and_the_rest_waits_in_line() {
    let server = TestServer::start(Behaviour::BlackHole);
    let plan = sojourn_engine::Plan {
        timeout: ms(300),
        ..open_plan(500.0, ms(1000), 16)
    };
    let report = run(&plan, transport(&server.url()), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 500);
    assert_eq!(m.tally.completed, 0);
    // 16 connections, each holding one request for 300 ms at a time until the run ends.
    let timeouts = m.tally.failed.get(FailureClass::Timeout);
    let most = 16 * (report.elapsed.as_millis() as u64 / 300);
    assert!(
        (16..=most).contains(&timeouts),
        "timeouts {timeouts}, at most {most}"
    );
    assert!(
        m.tally.censored <= 16,
        "at most one in flight per connection"
    );
    assert!(
        m.censored.len() >= timeouts + m.tally.censored,
        "every one a lower bound"
    );
    assert!(m.tally.never_sent > 380, "{:?}", m.tally);
    assert!(
        m.tally.waited_for_connection > 0,
        "those that got a connection had waited for it"
    );
    // The self-check says the pool, not the generator, held them.
    let checks = sojourn_core::check::assess_open(m, 16);
    assert!(checks.passed() && checks.pool_bound, "{checks:?}");
}

#[test]
fn a_server_killed_mid_run_turns_into_failures_not_losses() {
    let server = TestServer::start(Behaviour::Answer);
    let (url, served) = (server.url(), server.requests.clone());
    let killer = std::thread::spawn(move || {
        std::thread::sleep(ms(300));
        server.kill();
        std::thread::sleep(ms(2000));
    });
    let report = run(&open_plan(500.0, ms(1000), 8), transport(&url), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 500);
    killer.join().unwrap();
    assert!(m.tally.completed > 0, "{:?}", m.tally);
    assert!(m.tally.failed.total() > 0, "{:?}", m.tally);
    let served = served.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        m.tally.completed <= served,
        "answers only for what the server read"
    );
}

#[test]
fn cancelling_against_a_black_hole_accounts_for_what_was_due() {
    let server = TestServer::start(Behaviour::BlackHole);
    let report = run(
        &open_plan(1000.0, ms(5000), 16),
        transport(&server.url()),
        Some(ms(500)),
    );
    let m = assert_nothing_lost(&report);
    assert!(report.interrupted);
    // Only what was due by the end is scheduled: one request per millisecond up to it.
    let due_by_end = report.elapsed.as_millis() as u64 + 1;
    assert!(
        report.scheduled.abs_diff(due_by_end) <= 1,
        "scheduled {} by {:?}",
        report.scheduled,
        report.elapsed
    );
    assert!(report.scheduled < 5000, "stopped early");
    assert_eq!(m.tally.censored, 16, "one request in flight per connection");
    assert_eq!(m.tally.never_sent, report.scheduled - 16);
}

/// While the target answers nothing, the oldest request in flight ages with the run: it is
/// the stall, seen live. Against a target that answers, it stays near zero, and once every
/// answer is in, nothing is in flight.
#[test]
fn the_oldest_in_flight_ages_through_a_black_hole_and_stays_young_otherwise() {
    // Looks at the run at 1.2 s (and stops it there if `stop`); the look, and the progress.
    let look = |behaviour: Behaviour, stop: bool| {
        let server = TestServer::start(behaviour);
        let plan = open_plan(100.0, ms(1500), 16);
        let progress = sojourn_engine::Progress::new(plan.worker_count());
        let cancel = tokio_util::sync::CancellationToken::new();
        let (watch, token) = (progress.clone(), cancel.clone());
        let watcher = std::thread::spawn(move || {
            std::thread::sleep(ms(1200));
            // The snapshot first: its age is then at most the elapsed time read after it.
            let snapshot = watch.snapshot();
            let seen = (watch.elapsed().unwrap(), snapshot);
            if stop {
                token.cancel();
            }
            seen
        });
        let t = transport(&server.url());
        let report = sojourn_engine::execute(&plan, t, cancel, progress.clone()).unwrap();
        assert_nothing_lost(&report);
        (watcher.join().unwrap(), progress)
    };
    let ((elapsed, hole), _) = look(Behaviour::BlackHole, true);
    let age = hole.oldest_in_flight.expect("in flight");
    // Request 0, due at the start, never came back: its age is the time since the start.
    assert!(
        age <= elapsed && elapsed - age < ms(50),
        "oldest {age:?} at {elapsed:?}"
    );
    assert!(age > ms(1000), "{age:?}");
    assert_eq!(hole.in_flight, 16, "every connection holds one");
    let ((_, answering), progress) = look(Behaviour::Answer, false);
    assert!(
        answering.oldest_in_flight.is_none_or(|age| age < ms(100)),
        "{:?}",
        answering.oldest_in_flight
    );
    assert_eq!(
        progress.snapshot().oldest_in_flight,
        None,
        "every answer is in"
    );
}

//! The scenario as gRPC (`Protocol::Grpc`): calls over one HTTP/2 connection, on an open-loop
//! schedule through a hiccup, each answered with an empty message and `grpc-status: 0` when
//! the scenario releases it, and logged in the truth log as `/api` requests are. Judged as
//! `tests/pathologies.rs` judges the HTTP server: the model's instants exactly, departures
//! against the machine's own hiccups measured beside the test.
mod common;

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use common::{builtin, start_with, Floor, MS};
use sojourn_scenario::truth::Outcome;
use sojourn_server::Protocol;
use tokio::net::TcpStream;
use tokio::time::{sleep_until, Instant};

sojourn_testkit::control_meter_hook!();

/// One call as the client saw it.
#[derive(Debug)]
struct Call {
    sent: Instant,
    done: Instant,
    http: u16,
    content_type: String,
    index: u64,
    body: Vec<u8>,
    grpc_status: String,
}

async fn connect(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let (client, conn) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

/// A unary call to `path` with an empty message, read to its trailers.
async fn call(client: h2::client::SendRequest<Bytes>, path: &str, content_type: &str) -> Call {
    try_call(client, path, content_type)
        .await
        .expect("the call's stream was reset")
}

/// [`call`], or `None` if the server reset the call's stream.
async fn try_call(
    client: h2::client::SendRequest<Bytes>,
    path: &str,
    content_type: &str,
) -> Option<Call> {
    let req = http::Request::post(format!("http://127.0.0.1{path}"))
        .header("content-type", content_type)
        .header("te", "trailers")
        .body(())
        .unwrap();
    let mut client = client.ready().await.unwrap();
    let sent = Instant::now();
    let (response, mut stream) = client.send_request(req, false).unwrap();
    stream
        .send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    let (parts, mut body) = match response.await {
        Ok(r) => r.into_parts(),
        Err(e) if e.is_reset() => return None,
        Err(e) => panic!("{e}"),
    };
    let mut data = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        body.flow_control().release_capacity(chunk.len()).unwrap();
        data.extend_from_slice(&chunk);
    }
    let trailers = body.trailers().await.unwrap().unwrap_or_default();
    let header = |name: &str| {
        parts
            .headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    Some(Call {
        sent,
        done: Instant::now(),
        http: parts.status.as_u16(),
        content_type: header("content-type"),
        index: header(sojourn_server::INDEX_HEADER)
            .parse()
            .unwrap_or(u64::MAX),
        body: data,
        grpc_status: trailers
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_through_a_hiccup_leave_when_the_scenario_says_and_are_all_logged() {
    let floor = Floor::start(&control_command());
    // Stall from 300 to 800 ms on the clock the first call starts; 10 ms baseline.
    let scenario = builtin("hiccup", &["hiccup.at=300ms", "hiccup.duration=500ms"]);
    let server = start_with(scenario, |o| o.protocol = Protocol::Grpc).await;
    let client = connect(server.addr).await;
    // Open loop: a call every 10 ms for 1.2 s, each on its own stream of one connection,
    // alternating two method names: any method is the system under test.
    let t0 = Instant::now();
    let mut calls = Vec::new();
    for i in 0..120u32 {
        sleep_until(t0 + i * 10 * MS).await;
        let path = ["/sojourn.test.Scenario/Call", "/other.Service/Any"][i as usize % 2];
        calls.push(tokio::spawn(call(client.clone(), path, "application/grpc")));
    }
    let mut seen = Vec::new();
    for c in calls {
        seen.push(c.await.unwrap());
    }
    let (summary, truth) = server.stop().await;
    let machine = floor.stop();

    for c in &seen {
        assert_eq!(
            (c.http, c.content_type.as_str(), c.grpc_status.as_str()),
            (200, "application/grpc", "0"),
            "{c:?}"
        );
        assert_eq!(c.body, [0, 0, 0, 0, 0], "one empty message: {c:?}");
    }
    // Every call is one line of the truth log, and its index header names that line.
    assert_eq!(summary.api.ok, 120, "{summary}");
    assert_eq!(truth.len(), 120);
    assert!(truth
        .iter()
        .all(|r| r.outcome == Outcome::Ok && r.status == 200));
    let mut indices: Vec<u64> = seen.iter().map(|c| c.index).collect();
    indices.sort_unstable();
    assert_eq!(indices, (0..120).collect::<Vec<_>>());

    // The model's instants, exactly: the gate is reached after 10 ms, and held through the
    // stall.
    let stall = (300 * MS, 800 * MS);
    let mut stalled = 0;
    for r in &truth {
        let reach = r.start + 10 * MS;
        let due = if reach >= stall.0 && reach < stall.1 {
            stalled += 1;
            stall.1
        } else {
            reach
        };
        assert_eq!(r.due, due, "{r:?}");
    }
    assert!(stalled >= 45, "calls due in the stall: {stalled}");
    // Departures on time, within what the machine did to a sleeping process (as the HTTP
    // server is judged): none early, nine in ten within `late`, none beyond `outlier`.
    let late = 5 * MS + 3 * machine.p90;
    let outlier = 20 * MS + machine.max;
    assert!(outlier < 100 * MS, "too noisy to judge: {machine:?}");
    assert!(
        truth.iter().all(|r| r.departure >= r.due),
        "nobody leaves early"
    );
    assert!(
        truth.iter().all(|r| r.departure - r.due < outlier),
        "{outlier:?}"
    );
    let over = truth.iter().filter(|r| r.departure - r.due >= late).count();
    assert!(over <= 12, "{over} of 120 left {late:?} or more late");
    // The client waited at least what the server held each call: answers are released at the
    // departure, not before.
    for c in &seen {
        let r = &truth[c.index as usize];
        assert!(
            c.done - c.sent >= r.departure - r.arrival,
            "answered before it left: {c:?} {r:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_that_are_not_grpc_get_the_http_answer_of_their_path() {
    let server = start_with(builtin("healthy", &[]), |o| o.protocol = Protocol::Grpc).await;
    let client = connect(server.addr).await;
    let plain = call(client.clone(), "/api", "application/octet-stream").await;
    assert_eq!(
        (plain.http, plain.grpc_status.as_str()),
        (200, ""),
        "{plain:?}"
    );
    assert_eq!(plain.body, b"ok\n");
    let elsewhere = call(client.clone(), "/sojourn.test.Scenario/Call", "text/plain").await;
    assert_eq!(elsewhere.http, 404, "{elsewhere:?}");
    let grpc = call(
        client,
        "/sojourn.test.Scenario/Call",
        "application/grpc+proto",
    )
    .await;
    assert_eq!(grpc.grpc_status, "0", "{grpc:?}");
    let (summary, truth) = server.stop().await;
    // The plain /api request and the call are the system under test; the 404 is not.
    assert_eq!(truth.len(), 2, "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http1_client_is_not_served_by_a_grpc_server() {
    let server = start_with(builtin("healthy", &[]), |o| o.protocol = Protocol::Grpc).await;
    let mut c = server.client().await;
    assert!(
        tokio::time::timeout(Duration::from_secs(5), c.get("/api"))
            .await
            .expect("refused at once")
            .is_err(),
        "an HTTP/1.1 request got an answer"
    );
    let (_, truth) = server.stop().await;
    assert!(truth.is_empty());
}

const FAULTY: &str = r#"
[law]
kind = "fixed"
value = "1ms"

[[faults]]
kind = "errors"
percent = 20
status = 503
seed = 3

[[faults]]
kind = "reset"
percent = 10
seed = 3
"#;

/// Errors and resets over gRPC: a 503 is UNAVAILABLE with no message, a reset resets only that
/// call's stream, and the connection carries every call after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_unavailable_and_a_reset_resets_only_its_call() {
    let scenario = sojourn_scenario::Scenario::from_toml_str(FAULTY, "faulty").unwrap();
    let server = start_with(scenario.clone(), |o| o.protocol = Protocol::Grpc).await;
    let client = connect(server.addr).await;
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen.push(
            try_call(
                client.clone(),
                "/sojourn.test.Scenario/Call",
                "application/grpc",
            )
            .await,
        );
    }
    let (summary, truth) = server.stop().await;
    assert_eq!(truth.len(), 100, "{summary}");
    for (i, got) in seen.iter().enumerate() {
        let i = i as u64;
        if scenario.resets(i) {
            assert!(got.is_none(), "call {i} should be reset: {got:?}");
            assert_eq!(truth[i as usize].outcome, Outcome::Reset);
            continue;
        }
        let c = got.as_ref().unwrap_or_else(|| panic!("call {i} was reset"));
        assert_eq!((c.http, c.index), (200, i), "{c:?}");
        match scenario.status(i) {
            200 => assert_eq!((c.grpc_status.as_str(), &c.body[..]), ("0", &[0u8; 5][..])),
            503 => assert_eq!((c.grpc_status.as_str(), &c.body[..]), ("14", &[][..])),
            other => panic!("unexpected status {other}"),
        }
    }
    let resets = seen.iter().filter(|c| c.is_none()).count();
    let errors = seen
        .iter()
        .flatten()
        .filter(|c| c.grpc_status == "14")
        .count();
    assert!(
        (3..25).contains(&resets) && (8..40).contains(&errors),
        "{resets} resets, {errors} errors"
    );
    assert_eq!(summary.connections, 1, "one connection carried every call");
}

//! HTTP/2 against a real h2 server on 127.0.0.1 that answers, stalls, refuses streams, resets
//! them, goes away and starves flow-control windows on purpose. Every request is accounted
//! for whatever it does, and each misbehaviour lands in its own failure class.
mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{assert_nothing_lost, open_plan, run};
use h2::Reason;
use sojourn_core::FailureClass;
use sojourn_engine::{Http2Transport, HttpRequest, Trust};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// What the server does with each stream.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// `200 ok` after this long.
    Answer(Duration),
    /// RST_STREAM with this reason.
    Reset(Reason),
    /// Answers, and after this many streams on a connection sends GOAWAY and lets it drain.
    GoAwayAfter(usize),
    /// Grants a 1-byte window and never reads the body: a request body never gets through.
    StarveWindow,
    /// Answers this many streams, then closes the socket without a GOAWAY.
    CloseAfter(usize),
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    connections: AtomicUsize,
    streams: AtomicU64,
    /// The most streams open at once on any one connection.
    most_concurrent: AtomicUsize,
    paths: Mutex<BTreeMap<String, u64>>,
}

struct Server {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Server {
    /// An h2c server on 127.0.0.1:0 with this SETTINGS_MAX_CONCURRENT_STREAMS.
    fn start(behaviour: Behaviour, max_streams: u32) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let s = seen.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                while let Ok((socket, _)) = listener.accept().await {
                    s.connections.fetch_add(1, Relaxed);
                    tokio::spawn(serve(socket, behaviour, max_streams, s.clone()));
                }
            });
        });
        Server { addr, seen }
    }

    fn requests(&self, paths: &[&str], body: &[u8]) -> Vec<HttpRequest> {
        paths
            .iter()
            .map(|p| HttpRequest {
                url: format!("http://{}{p}", self.addr).parse().unwrap(),
                method: if body.is_empty() { "GET" } else { "POST" }.into(),
                headers: Vec::new(),
                body: body.to_vec(),
            })
            .collect()
    }

    fn transport(&self, paths: &[&str], body: &[u8], streams: usize) -> Http2Transport {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let reqs = self.requests(paths, body);
        rt.block_on(Http2Transport::many(&reqs, &Trust::PublicRoots, streams))
            .unwrap()
    }
}

async fn serve(socket: tokio::net::TcpStream, behaviour: Behaviour, max: u32, seen: Arc<Seen>) {
    let mut builder = h2::server::Builder::new();
    builder.max_concurrent_streams(max);
    if matches!(behaviour, Behaviour::StarveWindow) {
        builder.initial_window_size(1);
    }
    let Ok(mut conn) = builder.handshake::<_, Bytes>(socket).await else {
        return;
    };
    let open = Arc::new(AtomicUsize::new(0));
    let mut accepted = 0;
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        accepted += 1;
        seen.streams.fetch_add(1, Relaxed);
        let path = request.uri().path().to_string();
        *seen.paths.lock().unwrap().entry(path).or_default() += 1;
        let now = open.fetch_add(1, Relaxed) + 1;
        seen.most_concurrent.fetch_max(now, Relaxed);
        let open = open.clone();
        tokio::spawn(async move {
            match behaviour {
                Behaviour::Answer(after) => {
                    tokio::time::sleep(after).await;
                    answer(&mut respond);
                }
                Behaviour::GoAwayAfter(_) | Behaviour::CloseAfter(_) => answer(&mut respond),
                Behaviour::Reset(reason) => respond.send_reset(reason),
                Behaviour::StarveWindow => {
                    // Hold the stream (and its body) without reading: no WINDOW_UPDATE.
                    let _body = request;
                    tokio::time::sleep(Duration::from_secs(30)).await;
                }
            }
            open.fetch_sub(1, Relaxed);
        });
        if matches!(behaviour, Behaviour::GoAwayAfter(n) if accepted == n) {
            conn.graceful_shutdown();
        }
        if matches!(behaviour, Behaviour::CloseAfter(n) if accepted == n) {
            // Let the answer leave, then drop the connection: the socket closes.
            let deadline = tokio::time::sleep(ms(20));
            tokio::pin!(deadline);
            while tokio::select! { r = conn.accept() => r.is_some(), _ = &mut deadline => false } {}
            return;
        }
    }
}

fn answer(respond: &mut h2::server::SendResponse<Bytes>) {
    let response = http::Response::builder().status(200).body(()).unwrap();
    if let Ok(mut body) = respond.send_response(response, false) {
        let _ = body.send_data(Bytes::from_static(b"ok"), true);
    }
}

#[test]
fn stream_slots_share_connections_and_waits_for_them_are_counted() {
    // 400 req/s answered after 60 ms: about 24 at once, more than 2 connections × 8 streams.
    let server = Server::start(Behaviour::Answer(ms(60)), 100);
    let mut plan = open_plan(400.0, ms(1_000), 2 * 8);
    plan.streams = Some(8);
    let report = run(&plan, server.transport(&["/"], b"", 8), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 400);
    assert_eq!(m.tally.completed, 400, "{:?}", m.tally);
    assert_eq!(m.statuses.get(&200), Some(&400), "{:?}", m.statuses);
    assert_eq!(
        server.seen.connections.load(Relaxed),
        2,
        "16 stream slots are 2 connections of 8 streams, not 16 connections"
    );
    assert_eq!(server.seen.most_concurrent.load(Relaxed), 8);
    assert!(
        m.tally.waited_for_connection > 0,
        "requests due while every stream slot was busy waited, and are counted"
    );
    let p50 = m.hist.response.value_at_quantile(0.5);
    assert!(
        p50 > ms(60).as_nanos() as u64,
        "the wait for a stream slot is in the response time (p50 {p50} ns)"
    );
    let r = sojourn_engine::result::build(
        &plan,
        &report,
        &sojourn_engine::result::About::labelled("h2"),
    );
    assert_eq!((r.config.connections, r.config.streams), (2, Some(8)));
    assert!(
        r.checks
            .notes
            .iter()
            .any(|n| n.contains("a free stream slot because all 16 (2 connections × 8 streams)")),
        "the note names stream slots: {:?}",
        r.checks.notes
    );
}

#[test]
fn a_server_limit_below_the_streams_asked_for_holds_requests_without_losing_them() {
    let server = Server::start(Behaviour::Answer(ms(20)), 2);
    let plan = open_plan(200.0, ms(500), 8);
    let report = run(&plan, server.transport(&["/"], b"", 8), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(m.tally.completed, 100, "{:?}", m.tally);
    assert!(
        server.seen.most_concurrent.load(Relaxed) <= 2,
        "the client kept to the server's SETTINGS_MAX_CONCURRENT_STREAMS"
    );
}

#[test]
fn the_probe_reads_the_servers_stream_limit() {
    let server = Server::start(Behaviour::Answer(Duration::ZERO), 5);
    let t = server.transport(&["/"], b"", 8);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let settings = rt.block_on(t.probe()).unwrap();
    assert_eq!(settings.max_concurrent_streams, Some(5));
}

#[test]
fn reset_streams_fail_as_reset() {
    for reason in [Reason::REFUSED_STREAM, Reason::INTERNAL_ERROR] {
        let server = Server::start(Behaviour::Reset(reason), 100);
        let plan = open_plan(200.0, ms(500), 4);
        let report = run(&plan, server.transport(&["/"], b"", 4), None);
        let m = assert_nothing_lost(&report);
        assert_eq!(
            m.tally.failed.get(FailureClass::Reset),
            100,
            "{reason:?}: {:?}",
            m.tally
        );
        assert!(m.statuses.is_empty(), "a reset stream has no status");
    }
}

#[test]
fn goaway_is_survived_by_sending_again_on_a_fresh_connection() {
    let server = Server::start(Behaviour::GoAwayAfter(10), 100);
    let plan = open_plan(200.0, ms(1_000), 4);
    let report = run(&plan, server.transport(&["/"], b"", 4), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 200);
    assert_eq!(
        m.tally.completed, 200,
        "every stream refused by GOAWAY went again on a new connection: {:?}",
        m.tally
    );
    // Streams already on their way when GOAWAY left are still served, so a connection may
    // carry a few more than 10; it never carries them all.
    assert!(
        server.seen.connections.load(Relaxed) >= 2,
        "the client moved to fresh connections after each GOAWAY"
    );
}

#[test]
fn a_connection_closed_between_requests_is_replaced_before_sending() {
    // 10 req/s on one slot: the server closes the idle connection 20 ms after every fifth
    // answer, and the next request, 100 ms later, finds it closed.
    let server = Server::start(Behaviour::CloseAfter(5), 100);
    let plan = open_plan(10.0, ms(2_000), 1);
    let report = run(&plan, server.transport(&["/"], b"", 1), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(
        m.tally.completed, 20,
        "nothing was sent on a closed connection: {:?}",
        m.tally
    );
    assert_eq!(server.seen.connections.load(Relaxed), 20 / 5);
}

#[test]
fn a_starved_flow_control_window_times_out_with_the_request_counted_as_sent() {
    let server = Server::start(Behaviour::StarveWindow, 100);
    // Slots for all ten at once, so each one's timeout runs from its own due time.
    let mut plan = open_plan(50.0, ms(200), 16);
    plan.timeout = ms(250);
    let body = vec![b'x'; 64 * 1024];
    let report = run(&plan, server.transport(&["/"], &body, 16), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(report.scheduled, 10);
    assert_eq!(
        m.tally.failed.get(FailureClass::Timeout),
        10,
        "{:?}",
        m.tally
    );
    assert_eq!(
        m.hist.send_lag.len(),
        10,
        "each request's HEADERS left: it was sent, and stalled in flow control"
    );
}

/// A watched run of a targets file keeps a live row per label, in the file's order, that
/// ends as the result's label does: as many completed and failed, none left in flight, and
/// every response time counted once.
#[test]
fn a_watched_targets_run_keeps_a_live_row_per_label_as_the_result_counts_it() {
    use sojourn_core::targets::{Order, Target, Targets};
    let server = Server::start(Behaviour::Answer(Duration::ZERO), 100);
    let paths = ["/a", "/b", "/c"];
    let mut list: Vec<Target> = server
        .requests(&paths, b"")
        .into_iter()
        .map(|r| Target::new("GET", r.url))
        .collect();
    list[1].weight = 2;
    list[2].label = list[0].label.clone();
    let targets = Arc::new(Targets::new(list, Order::RoundRobin).unwrap());
    let mut plan = open_plan(400.0, ms(1_000), 8);
    plan.targets = Some(targets.clone());
    let progress = sojourn_engine::Progress::with_live(plan.worker_count(), ms(100));
    progress.watch_targets(targets.labels().to_vec());
    let report = sojourn_engine::execute(
        &plan,
        server.transport(&paths, b"", 8),
        tokio_util::sync::CancellationToken::new(),
        progress.clone(),
    )
    .unwrap();
    let m = assert_nothing_lost(&report);
    let rows = progress.labels().expect("watched").snapshot();
    assert!(rows.steps.is_empty() && rows.journeys.is_empty());
    let names: Vec<&str> = rows.targets.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        targets
            .labels()
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
    );
    for (row, label) in rows.targets.iter().zip(&m.labels) {
        assert_eq!(
            (row.completed, row.failures.total(), row.in_flight),
            (label.tally.completed, label.tally.failed.total(), 0),
            "{}",
            row.name
        );
        assert_eq!(row.time.map(|t| t.count), Some(label.response.len()));
    }
    assert_eq!(
        rows.targets.iter().map(|r| r.completed).collect::<Vec<_>>(),
        vec![200, 200]
    );
}

#[test]
fn targets_are_sent_by_index_and_recorded_per_label() {
    use sojourn_core::targets::{Order, Target, Targets};
    let server = Server::start(Behaviour::Answer(Duration::ZERO), 100);
    let paths = ["/a", "/b", "/c"];
    let mut list: Vec<Target> = server
        .requests(&paths, b"")
        .into_iter()
        .map(|r| Target::new("GET", r.url))
        .collect();
    list[1].weight = 2;
    list[2].label = list[0].label.clone();
    let targets = Targets::new(list, Order::RoundRobin).unwrap();
    let mut plan = open_plan(400.0, ms(1_000), 8);
    plan.targets = Some(Arc::new(targets));
    let report = run(&plan, server.transport(&paths, b"", 8), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(m.tally.completed, 400);
    let seen = server.seen.paths.lock().unwrap().clone();
    let want: BTreeMap<String, u64> = [("/a", 100), ("/b", 200), ("/c", 100)]
        .into_iter()
        .map(|(p, n)| (p.to_string(), n))
        .collect();
    assert_eq!(seen, want, "weights 1:2:1 over a whole number of cycles");
    let per_label: Vec<u64> = m.labels.iter().map(|l| l.tally.completed).collect();
    assert_eq!(
        per_label,
        vec![200, 200],
        "/a and /c share a label; /b has its own"
    );
    assert_eq!(
        m.labels.iter().map(|l| l.response.len()).sum::<u64>(),
        m.hist.response.len(),
        "every response time is in exactly one label"
    );
}

#[test]
fn a_closed_loop_over_http2_is_n_streams_each_looping() {
    use sojourn_core::End;
    let server = Server::start(Behaviour::Answer(ms(10)), 100);
    let plan = sojourn_engine::Plan {
        load: sojourn_engine::Load::Closed(End::Count(200)),
        ..open_plan(1.0, ms(1), 8)
    };
    let report = run(&plan, server.transport(&["/"], b"", 8), None);
    let m = assert_nothing_lost(&report);
    assert_eq!(m.tally.completed, 200, "{:?}", m.tally);
    assert_eq!(
        server.seen.connections.load(Relaxed),
        1,
        "8 streams on one connection"
    );
    assert_eq!(
        server.seen.most_concurrent.load(Relaxed),
        8,
        "every stream loops at once"
    );
}

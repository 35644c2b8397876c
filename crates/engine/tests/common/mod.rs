//! Real sockets for the engine's tests: small TCP servers that answer, stall, reset or never
//! answer on purpose, and a helper that runs a plan against them.
#![allow(dead_code)]
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::{Arrival, End, Measurements, Rate, Schedule};
use sojourn_engine::{HttpRequest, HttpTransport, Load, Plan, Progress, RunReport, Trust};
use tokio_util::sync::CancellationToken;

/// How a test server treats each request it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Answers `200 ok` at once.
    Answer,
    /// Reads requests and never answers.
    BlackHole,
    /// Resets the connection as soon as a request arrives.
    Reset,
    /// Answers each request after this long: a slow target, one request at a time per
    /// connection.
    Slow(Duration),
    /// Answers at once, with the statuses of [`STATUS_CYCLE`] in turn across all connections
    /// (the server's n-th request gets the n-th).
    Statuses,
}

/// What [`Behaviour::Statuses`] answers, in turn: a success, and one final status of each
/// failing class (`http_4xx`, `http_5xx`, `http_other`).
pub const STATUS_CYCLE: [u16; 4] = [200, 404, 503, 302];

const STATUS_ANSWERS: [&[u8]; 4] = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy",
    b"HTTP/1.1 302 Found\r\nLocation: /\r\nContent-Length: 0\r\n\r\n",
];

/// A server on 127.0.0.1:0, one thread per connection, fixed buffers: it allocates nothing per
/// request, so tests can count the client's allocations.
pub struct TestServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl TestServer {
    pub fn start(behaviour: Behaviour) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (count, halt) = (requests.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (count, halt) = (count.clone(), halt.clone());
                std::thread::spawn(move || serve(stream, behaviour, &count, &halt));
            }
        });
        TestServer {
            addr,
            requests,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Stops accepting and drops every connection at its next request: the server died.
    pub fn kill(&self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag and closes the listener.
        let _ = TcpStream::connect(self.addr);
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn serve(mut stream: TcpStream, behaviour: Behaviour, count: &AtomicU64, halt: &AtomicBool) {
    let mut buf = [0u8; 4096];
    // How much of "\r\n\r\n" (the end of a request head) has been seen so far.
    let mut matched = 0;
    loop {
        let n = match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if halt.load(Ordering::Relaxed) {
            return;
        }
        for &b in &buf[..n] {
            matched = match (matched, b) {
                (0 | 2, b'\r') => matched + 1,
                (1 | 3, b'\n') => matched + 1,
                (_, b'\r') => 1,
                _ => 0,
            };
            if matched < 4 {
                continue;
            }
            matched = 0;
            let nth = count.fetch_add(1, Ordering::Relaxed);
            match behaviour {
                Behaviour::Answer => {
                    if stream.write_all(ANSWER).is_err() {
                        return;
                    }
                }
                Behaviour::Statuses => {
                    let answer = STATUS_ANSWERS[(nth % STATUS_ANSWERS.len() as u64) as usize];
                    if stream.write_all(answer).is_err() {
                        return;
                    }
                }
                Behaviour::BlackHole => {}
                Behaviour::Slow(d) => {
                    std::thread::sleep(d);
                    if stream.write_all(ANSWER).is_err() {
                        return;
                    }
                }
                Behaviour::Reset => {
                    // A zero linger makes close() send a reset instead of a FIN.
                    let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                    return;
                }
            }
        }
    }
}

/// A plan for a constant open loop at `rate` for `duration`.
pub fn open_plan(rate: f64, duration: Duration, connections: usize) -> Plan {
    let schedule = Schedule::new(
        Arrival::Constant,
        Rate::per_second(rate).unwrap(),
        End::After(duration),
    )
    .unwrap();
    Plan {
        load: Load::Open(schedule),
        connections,
        threads: 1,
        timeout: Duration::from_secs(2),
        interval: Duration::from_secs(3600),
        spin: Duration::ZERO,
        slack: sojourn_engine::Slack::Fixed(Duration::ZERO),
        hiccup: None,
        control: None,
        samples: None,
        shard: sojourn_core::Shard::WHOLE,
        start_at: None,
        targets: None,
        streams: None,
    }
}

/// The transport for `url` (resolved and encoded, not yet connected).
pub fn transport(url: &str) -> HttpTransport {
    let request = HttpRequest {
        url: url.parse().unwrap(),
        method: "GET".into(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(HttpTransport::new(&request, &Trust::PublicRoots))
        .unwrap()
}

/// Runs `plan` against `url`, cancelling it after `cancel_after` when given.
pub fn run<T: sojourn_engine::Transport>(
    plan: &Plan,
    transport: T,
    cancel_after: Option<Duration>,
) -> RunReport {
    let cancel = CancellationToken::new();
    if let Some(after) = cancel_after {
        let c = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            c.cancel();
        });
    }
    sojourn_engine::execute(plan, transport, cancel, Progress::new(plan.worker_count())).unwrap()
}

/// Asserts the identity every run must keep: each scheduled request ended one way only.
pub fn assert_nothing_lost(report: &RunReport) -> &Measurements {
    let m = &report.measurements;
    assert_eq!(
        m.tally.accounted(),
        report.scheduled,
        "scheduled = completed + failed + censored + never sent: {:?}",
        m.tally
    );
    m
}

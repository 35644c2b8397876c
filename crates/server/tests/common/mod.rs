//! A server on 127.0.0.1:0 with its truth log in memory, and a minimal HTTP/1.1 client that
//! speaks raw bytes (so tests can also misbehave: half-sent requests, hang-ups).
#![allow(dead_code)]

use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sojourn_scenario::truth::{read_csv, TruthRecord};
use sojourn_scenario::{Override, Scenario};
use sojourn_server::{serve, ServeError, ServeOptions, ServeSummary};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const MS: Duration = Duration::from_millis(1);

/// A built-in with `--set` style overrides, e.g. `builtin("hiccup", &["hiccup.at=300ms"])`.
pub fn builtin(name: &str, sets: &[&str]) -> Scenario {
    let o: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    Scenario::builtin(name, &o).unwrap()
}

/// A `Write` whose bytes the test can read after the server stops.
#[derive(Clone, Default)]
pub struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub struct Server {
    pub addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<ServeSummary, ServeError>>,
    truth: Shared,
}

pub async fn start(scenario: Scenario) -> Server {
    start_with(scenario, |_| {}).await
}

pub async fn start_with(scenario: Scenario, tweak: impl FnOnce(&mut ServeOptions)) -> Server {
    let listener = sojourn_server::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = listener.local_addr().unwrap();
    let truth = Shared::default();
    let mut options = ServeOptions {
        truth: Some(Box::new(truth.clone())),
        grace: Duration::from_millis(500),
        ..ServeOptions::default()
    };
    tweak(&mut options);
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve(listener, scenario, options, async {
        let _ = stopped.await;
    }));
    Server {
        addr,
        stop,
        task,
        truth,
    }
}

impl Server {
    /// Stops the server; returns its summary and its truth log sorted by index.
    pub async fn stop(self) -> (ServeSummary, Vec<TruthRecord>) {
        let _ = self.stop.send(());
        let summary = tokio::time::timeout(Duration::from_secs(10), self.task)
            .await
            .expect("server stops within 10 s")
            .unwrap()
            .unwrap();
        let bytes = self.truth.0.lock().unwrap().clone();
        let mut records = read_csv(&bytes[..]).unwrap();
        records.sort_by_key(|r| r.index);
        (summary, records)
    }

    pub async fn client(&self) -> Client {
        Client::connect(self.addr).await.unwrap()
    }
}

/// What came back.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    /// The `x-sojourn-index` header: this request's line in the truth log.
    pub index: Option<u64>,
    pub body: String,
}

/// One keep-alive connection.
pub struct Client {
    stream: BufReader<TcpStream>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> io::Result<Client> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream: BufReader::new(stream),
        })
    }

    pub async fn get(&mut self, path: &str) -> io::Result<Reply> {
        self.send("GET", path).await
    }

    pub async fn post(&mut self, path: &str) -> io::Result<Reply> {
        self.send("POST", path).await
    }

    /// Sends a request and reads the whole answer. An error means the connection was closed
    /// or reset before an answer came.
    pub async fn send(&mut self, method: &str, path: &str) -> io::Result<Reply> {
        let head = format!("{method} {path} HTTP/1.1\r\nhost: test\r\ncontent-length: 0\r\n\r\n");
        self.stream.get_mut().write_all(head.as_bytes()).await?;
        self.read_reply().await
    }

    /// Reads one whole answer. An error means the connection was closed or reset first.
    pub async fn read_reply(&mut self) -> io::Result<Reply> {
        let mut line = String::new();
        if self.stream.read_line(&mut line).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let status = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other(format!("bad status line {line:?}")))?;
        let (mut length, mut index) = (0usize, None);
        loop {
            line.clear();
            self.stream.read_line(&mut line).await?;
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "x-sojourn-index" => index = value.trim().parse().ok(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).await?;
        Ok(Reply {
            status,
            index,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// Writes raw bytes, for requests sent in pieces or never finished.
    pub async fn write_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.get_mut().write_all(bytes).await
    }
}

/// The most requests in service at once, from the truth log's [start, departure) intervals.
pub fn max_in_service(records: &[TruthRecord]) -> usize {
    let mut events: Vec<(Duration, i32)> = Vec::new();
    for r in records.iter().filter(|r| r.departure > r.start) {
        events.push((r.start, 1));
        events.push((r.departure, -1));
    }
    // At equal instants, departures first: a slot handed over is not two in service.
    events.sort();
    let (mut now, mut max) = (0i32, 0i32);
    for (_, delta) in events {
        now += delta;
        max = max.max(now);
    }
    max as usize
}

/// The machine's own lateness over a test: a control hiccup meter (a process of its own that
/// only sleeps to a 1 ms tick: this test binary, started again through its
/// `sojourn_testkit::control_meter_hook!()`) runs beside it, so the server's
/// lateness is judged against what any sleeping process suffered in the same run, not against
/// a fixed budget. A meter thread inside this process would share the server's threads' cores
/// and be late with them, excusing the very lateness it is meant to judge.
pub struct Floor(sojourn_timer::ControlMeter);

/// What the meter saw.
#[derive(Debug, Clone, Copy)]
pub struct Machine {
    pub p90: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Floor {
    /// Starts the control meter `command`: the binary's own, from
    /// `sojourn_testkit::control_meter_hook!()`.
    pub fn start(command: &sojourn_timer::ControlCommand) -> Floor {
        Floor(sojourn_timer::ControlMeter::start(command).expect("a control meter"))
    }

    pub fn stop(self) -> Machine {
        let h = self
            .0
            .stop()
            .expect("the control meter's figures")
            .oversleeps
            .histogram;
        let at = |q: f64| Duration::from_nanos(h.value_at_quantile(q));
        Machine {
            p90: at(0.9),
            p99: at(0.99),
            max: Duration::from_nanos(h.max()),
        }
    }
}

/// The `q`-quantile of `values` (sorted in place).
pub fn quantile(values: &mut [Duration], q: f64) -> Duration {
    values.sort();
    let i = ((values.len() as f64 - 1.0) * q).round() as usize;
    values[i]
}

//! A tiny HTTP server for tests: answers after ~1 ms, stalls on command, counts what it got.
#![allow(dead_code)]
pub mod cdp;
pub mod nginx;
pub mod tolerance;
pub mod verdict_page;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
pub use rustix::process::Signal;
use sojourn_core::RunResult;

pub struct TestServer {
    pub addr: SocketAddr,
    stall_until: Arc<Mutex<Option<Instant>>>,
    pub requests: Arc<AtomicU64>,
    /// Connections accepted.
    pub connections: Arc<AtomicU64>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl TestServer {
    /// Starts on 127.0.0.1:0 in its own thread and runtime. With `tls`, serves HTTPS with a
    /// fresh self-signed certificate.
    pub fn start(tls: bool) -> TestServer {
        let stall_until = Arc::new(Mutex::new(None));
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let accepted = connections.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stall, count) = (stall_until.clone(), requests.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let acceptor = tls.then(tls_acceptor);
                tokio::select! {
                    _ = accept_loop(listener, acceptor, stall, count, accepted) => {}
                    _ = rx => {}
                }
            });
        });
        TestServer {
            addr: addr_rx.recv().unwrap(),
            stall_until,
            requests,
            connections,
            _shutdown: tx,
        }
    }

    /// Every request that reaches the server during the next `d` waits until it ends.
    pub fn stall_for(&self, d: Duration) {
        *self.stall_until.lock().unwrap() = Some(Instant::now() + d);
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}/api", self.addr)
    }
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    stall: Arc<Mutex<Option<Instant>>>,
    count: Arc<AtomicU64>,
    accepted: Arc<AtomicU64>,
) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        accepted.fetch_add(1, Ordering::Relaxed);
        let (stall, count, tls) = (stall.clone(), count.clone(), tls.clone());
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |req| answer(req, stall.clone(), count.clone()));
            let builder = hyper::server::conn::http1::Builder::new();
            match tls {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(tcp).await {
                        let _ = builder
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    }
                }
                None => {
                    let _ = builder.serve_connection(TokioIo::new(tcp), service).await;
                }
            }
        });
    }
}

async fn answer(
    _req: Request<hyper::body::Incoming>,
    stall: Arc<Mutex<Option<Instant>>>,
    count: Arc<AtomicU64>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    count.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_micros(500)).await;
    let until = *stall.lock().unwrap();
    if let Some(until) = until {
        if Instant::now() < until {
            tokio::time::sleep_until(until.into()).await;
        }
    }
    Ok(Response::new(Full::new(Bytes::from_static(b"ok"))))
}

fn tls_acceptor() -> tokio_rustls::TlsAcceptor {
    let cert =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .unwrap();
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

pub fn sojourn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args(args)
        .output()
        .expect("running sojourn")
}

/// Starts sojourn in the background with its stdout captured (for tests that act mid-run).
pub fn spawn(args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("starting sojourn")
}

/// Reads `sojourn serve`'s first stdout line, `listening on http://ADDR`, and returns ADDR.
pub fn listening_addr(child: &mut std::process::Child) -> String {
    use std::io::{BufRead, BufReader};
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .unwrap();
    line.trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned()
}

/// A process's peak resident memory so far (`VmHWM`), in KiB; `None` once it has exited.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

pub fn temp_dir(name: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!("sojourn-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

/// A test's own directory: removed when the test ends, kept (and named on stderr) when it
/// fails, so that what a failing run wrote can be read.
#[derive(Debug)]
pub struct TestDir(PathBuf);

impl std::ops::Deref for TestDir {
    type Target = PathBuf;
    fn deref(&self) -> &PathBuf {
        &self.0
    }
}

impl AsRef<Path> for TestDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for TestDir {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept for inspection: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

pub fn read_result(path: &Path) -> RunResult {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).expect("a sojourn result")
}

/// Asserts the accounting identity every result must satisfy (`not_measured`, the share of a
/// shard missing from a merge, is 0 in any other result).
pub fn assert_nothing_lost(r: &RunResult) {
    let c = &r.counts;
    assert_eq!(
        c.scheduled,
        c.completed + c.failed.total() + c.censored + c.never_sent + c.not_measured,
        "counts must add up: {c:?}"
    );
}

/// Responses slower than `above` in the result's response histogram.
pub fn slower_than(r: &RunResult, above: Duration) -> u64 {
    let h = r.histograms.response.histogram().unwrap();
    h.count_between(
        above.as_nanos() as u64,
        h.max().max(above.as_nanos() as u64),
    )
}

/// Heavy tests (those that judge timing against a model or a tight bound) take it whole, one at
/// a time, so that they do not distort each other's timing on two cores; light tests (those that
/// count, name or parse, or see a one-second stall against a ten-fold margin) share it, so that
/// they run side by side but never beside a heavy one.
static HEAVY: RwLock<()> = RwLock::new(());

/// Runs a heavy test alone among the tests of its binary that take [`serial`] or [`shared`].
pub fn serial() -> std::sync::RwLockWriteGuard<'static, ()> {
    HEAVY.write().unwrap_or_else(|e| e.into_inner())
}

/// Runs a light test beside other light tests, never beside a heavy one ([`serial`]).
pub fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    HEAVY.read().unwrap_or_else(|e| e.into_inner())
}

/// Runs `sojourn ARGS`, which must succeed, and returns what it printed.
pub fn sojourn_ok(args: &[&str]) -> Output {
    let out = sojourn(args);
    assert!(
        out.status.success(),
        "sojourn {}: {:?}\n{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Two simulated open-loop results of one load (200 req/s for 5 s), `a.json` from the healthy
/// scenario and `b.json` from hiccup's stall: what a command that compares two runs reads.
pub fn healthy_and_hiccup_runs(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    for (scenario, path) in [("healthy", &a), ("hiccup", &b)] {
        let path = path.to_str().expect("a UTF-8 path");
        sojourn_ok(&[
            "sim",
            "--scenario",
            scenario,
            "--client",
            "open",
            "--rate",
            "200",
            "--duration",
            "5s",
            "--json",
            path,
        ]);
    }
    (a, b)
}

/// The `count` shards of one plan (`rate` req/s for 500 ms, one thread each) run against `url`,
/// written to `dir/{prefix}{k}.json`: what `merge` reads.
pub fn shard_runs(url: &str, rate: &str, count: usize, dir: &Path, prefix: &str) -> Vec<PathBuf> {
    (0..count)
        .map(|k| {
            let path = dir.join(format!("{prefix}{k}.json"));
            let shard = format!("{k}/{count}");
            sojourn_ok(&[
                "run",
                url,
                "--rate",
                rate,
                "--duration",
                "500ms",
                "--threads",
                "1",
                "--shard",
                &shard,
                "--json",
                path.to_str().expect("a UTF-8 path"),
            ]);
            path
        })
        .collect()
}

/// Reads a run's stderr up to `metrics: http://ADDR/metrics` and returns ADDR; the rest of
/// stderr is drained on a thread (a closed pipe would fail the run's later messages).
pub fn metrics_addr(run: &mut std::process::Child) -> SocketAddr {
    use std::io::BufRead;
    let mut stderr = std::io::BufReader::new(run.stderr.take().unwrap());
    let mut line = String::new();
    while stderr.read_line(&mut line).unwrap() > 0 {
        if let Some(rest) = line.trim_end().strip_prefix("metrics: http://") {
            let addr = rest.trim_end_matches("/metrics").parse().unwrap();
            std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
            return addr;
        }
        line.clear();
    }
    panic!("sojourn run ended without printing the metrics address");
}

/// What Ctrl-C does: SIGINT to the run, which stops its schedule and reports.
pub fn interrupt(run: &std::process::Child) {
    signal(run, Signal::INT);
}

/// Sends `sig` to `child` with the `kill` system call, in microseconds: a test that freezes a
/// server at an instant of the run's clock cannot afford the milliseconds (tens, on a busy
/// machine) of starting `kill(1)`.
pub fn signal(child: &std::process::Child, sig: Signal) {
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::kill_process(pid, sig)
        .unwrap_or_else(|e| panic!("signal {sig:?} to process {}: {e}", child.id()));
}

/// SIGCONT to `child`, never failing: for a `Drop` that must not leave a stopped process
/// behind, and must not panic while a failed test unwinds.
pub fn thaw(child: &std::process::Child) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_child(child), Signal::CONT);
}

/// `promtool check metrics` finds nothing to say about a scraped body (the classic text
/// format, which is what a client that does not ask for OpenMetrics gets, and all that
/// promtool reads; Prometheus itself scraped the OpenMetrics form above).
pub fn promtool_accepts(promtool: &Path, dir: &Path, body: &str) {
    let scraped = dir.join("scraped.txt");
    std::fs::write(&scraped, body).unwrap();
    let out = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&scraped).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A proto of one unary call, `sojourn.test.Scenario/Call`, taking and giving
/// `google.protobuf.Empty`: what `sojourn serve --grpc` answers (any call, an empty message),
/// written into `dir` as `scenario.proto`.
pub fn empty_call_proto(dir: &Path) -> PathBuf {
    let proto = dir.join("scenario.proto");
    std::fs::write(
        &proto,
        "syntax = \"proto3\";\npackage sojourn.test;\nimport \"google/protobuf/empty.proto\";\n\
         service Scenario { rpc Call(google.protobuf.Empty) returns (google.protobuf.Empty); }\n",
    )
    .expect("writing the test's proto");
    proto
}

//! `sojourn serve` under abuse, as an operator would meet it: slowloris clients, 10,000 idle
//! connections, 100 MB uploads and malformed requests all at once, beside a well-behaved client.
//! The server must keep that client on time — judged against a baseline phase measured in the
//! same run, on the same noisy machine — keep its memory bounded, close every abusive
//! connection, and say what it saw: one stderr line for the first of each kind, counts at exit.
mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sojourn_scenario::truth::{read_csv, Outcome, TruthRecord};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;

/// Short, so slow and idle connections are closed within the test.
const HEADER_TIMEOUT: Duration = Duration::from_secs(1);
/// The `healthy` scenario's service time: the yardstick for "on time".
const SERVICE: Duration = Duration::from_millis(10);
const IDLE: usize = 10_000;
const SLOWLORIS: usize = 20;
/// A slowloris client sends one byte this often, forever.
const TRICKLE: Duration = Duration::from_millis(100);
/// Abusive connects in flight at once: past the accept backlog a SYN is dropped and retried a
/// second later, which would only slow the test down.
const CONNECTING: usize = 256;
/// The well-behaved client sends one request this often...
const GOOD_EVERY: Duration = Duration::from_millis(10);
/// ...and every this many requests opens a fresh connection: newcomers must get in too.
const FRESH_EVERY: u64 = 5;
const BASELINE: Duration = Duration::from_secs(2);
/// How long an abusive connection may stay open before the test calls it "not closed".
const DEADLINE: Duration = Duration::from_secs(8);
const UPLOAD: u64 = 100 << 20;
const CHUNK: usize = 64 << 10;

fn sojourn() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sojourn"))
}

#[test]
fn survives_slowloris_idle_floods_huge_bodies_and_garbage_and_says_so() {
    if !raise_descriptor_limit() {
        return;
    }
    let truth_path = std::env::temp_dir().join(format!("sojourn-abuse-{}.csv", std::process::id()));
    let server = Server::start(&truth_path);
    assert_eq!(
        control_stall_status(server.addr),
        404,
        "without --control, /control/stall is not served"
    );

    let stop = Arc::new(AtomicBool::new(false));
    let good = {
        let (addr, stop) = (server.addr, stop.clone());
        std::thread::spawn(move || good_client(addr, &stop))
    };
    std::thread::sleep(BASELINE);
    let baseline_rss = common::peak_rss_kib(server.pid()).expect("the server is running");
    let abuse_start = Instant::now();
    let abuse = run_abuse(server.addr);
    let abuse_rss = common::peak_rss_kib(server.pid()).expect("the server is running");
    stop.store(true, Relaxed);
    let answers = good.join().unwrap();
    let out = server.stop();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let truth = read_csv(BufReader::new(std::fs::File::open(&truth_path).unwrap())).unwrap();
    std::fs::remove_file(&truth_path).unwrap();

    let phases = Phases::split(&answers, &truth, abuse_start);
    report(&abuse, &phases, baseline_rss, abuse_rss, &stderr);
    check_good_client(&answers, &truth);
    check_on_time(&phases);
    check_memory(baseline_rss, abuse_rss);
    check_closed(&abuse);
    check_logged(&stderr, &abuse);
}

/// The binary's own defaults: loopback only.
#[test]
fn listens_on_loopback_unless_told_otherwise() {
    let out = sojourn().args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("[default: 127.0.0.1:8080]"), "{help}");
    assert!(help.contains("[default: 60s]"), "--header-timeout: {help}");
}

/// 10,000 idle connections need 10,000 descriptors in this process. `false`: skip the test.
/// Under CI (CI=true) a limit too low is a failure, not a skip: with fewer connections the
/// test would not show what it claims, and a green run would say it had.
fn raise_descriptor_limit() -> bool {
    let need = IDLE as u64 + SLOWLORIS as u64 + 512;
    let got = rlimit::increase_nofile_limit(need).unwrap_or(0);
    if got >= need {
        return true;
    }
    let why = format!(
        "this test needs {need} file descriptors ({IDLE} idle connections, {SLOWLORIS} slowloris \
         and the rest), and the hard limit here is {got}; raise it (`ulimit -Hn {need}` as \
         root, LimitNOFILE= for a service, --ulimit nofile= for a container)"
    );
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{why}: under CI this test must run, not skip"
    );
    // Straight to stdout, which the test harness does not capture: a skip must be seen.
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout(), "SKIPPED: {why}");
    false
}

// ---------------------------------------------------------------------------------------------
// The server, as a subprocess.

/// Killed when dropped unless stopped, so a failed assertion leaves no server behind.
struct Server {
    child: Option<Child>,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Server {
    fn start(truth: &Path) -> Server {
        let mut child = sojourn()
            .args(["serve", "--scenario", "healthy", "--listen", "127.0.0.1:0"])
            .arg("--header-timeout")
            .arg(format!("{}ms", HEADER_TIMEOUT.as_millis()))
            .arg("--truth")
            .arg(truth)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let addr = common::listening_addr(&mut child).parse().unwrap();
        Server {
            child: Some(child),
            addr,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// SIGTERM, then the exit status and stderr; kills it if it does not stop in 15 s.
    fn stop(mut self) -> Output {
        let pid = self.pid();
        let killed = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let child = self.child.take().expect("running");
        std::thread::spawn(move || tx.send(child.wait_with_output()));
        match rx.recv_timeout(Duration::from_secs(15)) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
                panic!("sojourn serve did not stop within 15 s of SIGTERM");
            }
        }
    }
}

/// The process's peak resident set so far (`VmHWM`), in KiB.
fn control_stall_status(addr: SocketAddr) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /control/stall?for=5s HTTP/1.1\r\nhost: t\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    status_of(reply.as_bytes()).unwrap_or(0)
}

fn status_of(reply: &[u8]) -> Option<u16> {
    let line = reply.strip_prefix(b"HTTP/1.1 ")?;
    std::str::from_utf8(line.get(..3)?).ok()?.parse().ok()
}

// ---------------------------------------------------------------------------------------------
// The well-behaved client: /api at a modest fixed rate, on a keep-alive connection and now and
// then a fresh one, until told to stop.

struct Answer {
    sent: Instant,
    latency: Duration,
    /// 0: no answer (connection failed or timed out).
    status: u16,
    index: Option<u64>,
}

fn good_client(addr: SocketAddr, stop: &AtomicBool) -> Vec<Answer> {
    let start = Instant::now();
    let mut conn: Option<BufReader<TcpStream>> = None;
    let mut answers = Vec::new();
    for i in 0.. {
        if stop.load(Relaxed) {
            break;
        }
        // Sent on a schedule, not after the previous answer plus a pause: a slow answer must
        // not thin out the requests that would show it.
        let due = start + GOOD_EVERY * i as u32;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        if i % FRESH_EVERY == 0 {
            conn = None;
        }
        let sent = Instant::now();
        let (status, index) = get_api(addr, &mut conn).unwrap_or_else(|_| {
            conn = None;
            (0, None)
        });
        answers.push(Answer {
            sent,
            latency: sent.elapsed(),
            status,
            index,
        });
    }
    answers
}

/// One `GET /api` on `conn` (opened if `None`); the status and the truth-log index.
fn get_api(
    addr: SocketAddr,
    conn: &mut Option<BufReader<TcpStream>>,
) -> std::io::Result<(u16, Option<u64>)> {
    if conn.is_none() {
        let s = TcpStream::connect(addr)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        *conn = Some(BufReader::new(s));
    }
    let c = conn.as_mut().expect("opened above");
    c.get_mut()
        .write_all(b"GET /api HTTP/1.1\r\nhost: t\r\n\r\n")?;
    let mut head = Vec::new();
    let (mut status, mut index, mut length) = (0, None, 0usize);
    loop {
        head.clear();
        if c.read_until(b'\n', &mut head)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(s) = status_of(line.to_ascii_uppercase().as_bytes()) {
            status = s;
        } else if let Some(v) = line.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("x-sojourn-index:") {
            index = v.trim().parse().ok();
        }
    }
    let mut body = vec![0; length];
    c.read_exact(&mut body)?;
    Ok((status, index))
}

// ---------------------------------------------------------------------------------------------
// The abusers, all at once.

/// What one abusive connection saw.
#[derive(Debug, Clone, Copy)]
struct Ended {
    /// Bytes the server took (head and body) before it closed the connection.
    sent: u64,
    /// The status the server answered, if it answered and the answer could be read.
    status: Option<u16>,
    /// From connect to the server closing the connection; `None`: still open at the deadline.
    closed_after: Option<Duration>,
}

struct Abuse {
    idle: Vec<Ended>,
    slowloris: Vec<Ended>,
    /// A 100 MB body with its length declared, then one sent chunked.
    uploads: [Ended; 2],
    malformed: Vec<(Malformed, Ended)>,
}

/// What an abuser does after connecting.
#[derive(Clone)]
enum Behaviour {
    /// Nothing at all.
    Nothing,
    /// These bytes, then nothing more.
    Bytes(Vec<u8>),
    /// A request head, one byte every [`TRICKLE`], never finished.
    Trickle,
    /// `POST /api` with a 100 MB body, its length declared or chunked.
    Upload { chunked: bool },
}

fn run_abuse(addr: SocketAddr) -> Abuse {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let gate = Arc::new(Semaphore::new(CONNECTING));
        let cases = malformed_requests();
        // The few first, so they are at work while the flood of idle connections comes in.
        let slowloris = spawn_all(addr, &gate, vec![Behaviour::Trickle; SLOWLORIS]);
        let uploads = spawn_all(
            addr,
            &gate,
            [false, true].map(|chunked| Behaviour::Upload { chunked }),
        );
        let malformed = spawn_all(
            addr,
            &gate,
            cases.iter().map(|c| Behaviour::Bytes(c.bytes.clone())),
        );
        let idle = spawn_all(addr, &gate, vec![Behaviour::Nothing; IDLE]);
        let (idle, slowloris, uploads, malformed) =
            tokio::join!(idle, slowloris, uploads, malformed);
        Abuse {
            idle,
            slowloris,
            uploads: [uploads[0], uploads[1]],
            malformed: cases.into_iter().zip(malformed).collect(),
        }
    })
}

/// Starts one abusive connection per behaviour, all at once; resolves to what each saw.
fn spawn_all(
    addr: SocketAddr,
    gate: &Arc<Semaphore>,
    behaviours: impl IntoIterator<Item = Behaviour>,
) -> impl std::future::Future<Output = Vec<Ended>> {
    let tasks: Vec<_> = behaviours
        .into_iter()
        .map(|b| tokio::spawn(abuse_one(addr, gate.clone(), b)))
        .collect();
    async move {
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    }
}

/// A request the server must refuse, and how.
struct Malformed {
    name: &'static str,
    status: u16,
    bytes: Vec<u8>,
}

fn malformed_requests() -> Vec<Malformed> {
    let big_header = [
        &b"GET /api HTTP/1.1\r\nhost: t\r\nx-big: "[..],
        &vec![b'a'; 1 << 20],
        b"\r\n\r\n",
    ]
    .concat();
    let long_uri = [&b"GET /"[..], &vec![b'a'; 1 << 20], b" HTTP/1.1\r\n\r\n"].concat();
    let many_headers = [
        b"GET /api HTTP/1.1\r\n".to_vec(),
        (0..200)
            .flat_map(|i| format!("x-{i}: y\r\n").into_bytes())
            .collect(),
        b"\r\n".to_vec(),
    ]
    .concat();
    // Each row: what it is, the status the server must answer, the bytes.
    let rows: [(&str, u16, &[u8]); 6] = [
        (
            "garbage request line",
            400,
            b"\x16\x03\x01\x02\x00 garbage\r\n\r\n",
        ),
        ("no HTTP version", 400, b"GET /api\r\nhost: t\r\n\r\n"),
        (
            "bad Content-Length",
            400,
            b"POST /api HTTP/1.1\r\ncontent-length: abc\r\n\r\n",
        ),
        (
            "two Content-Lengths",
            400,
            b"POST /api HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab",
        ),
        (
            "header without a colon",
            400,
            b"GET /api HTTP/1.1\r\nno-colon\r\n\r\n",
        ),
        (
            "unknown transfer coding",
            400,
            b"POST /api HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n",
        ),
    ];
    let rows = rows.map(|(name, status, bytes)| (name, status, bytes.to_vec()));
    let oversized = [
        ("1 MB header line", 431, big_header),
        ("1 MB URI", 431, long_uri),
        ("200 headers", 431, many_headers),
    ];
    rows.into_iter()
        .chain(oversized)
        .map(|(name, status, bytes)| Malformed {
            name,
            status,
            bytes,
        })
        .collect()
}

/// Connects (at most [`CONNECTING`] at a time), sends, and waits for the server to close.
async fn abuse_one(addr: SocketAddr, gate: Arc<Semaphore>, behaviour: Behaviour) -> Ended {
    let stream = {
        let _permit = gate.acquire().await.unwrap();
        tokio::net::TcpStream::connect(addr)
            .await
            .expect("the server accepts abusive connections too")
    };
    let opened = Instant::now();
    let (mut rx, tx) = stream.into_split();
    let sent = AtomicU64::new(0);
    let writer = Writer { tx, sent: &sent }.act(behaviour);
    let reader = async {
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        // EOF or a reset both mean the server closed it.
        while let Ok(n @ 1..) = rx.read(&mut buf).await {
            if reply.len() < 64 {
                reply.extend_from_slice(&buf[..n]);
            }
        }
        reply
    };
    // The writer may be blocked on a full socket buffer; the reader alone says "closed".
    let watched = async {
        tokio::select! {
            reply = reader => reply,
            _ = writer => unreachable!("the writer never ends by itself"),
        }
    };
    let (reply, closed_after) = match tokio::time::timeout(DEADLINE, watched).await {
        Ok(reply) => (reply, Some(opened.elapsed())),
        Err(_) => (Vec::new(), None),
    };
    Ended {
        sent: sent.load(Relaxed),
        status: status_of(&reply),
        closed_after,
    }
}

/// The sending half of an abusive connection, counting what the server took.
struct Writer<'a> {
    tx: tokio::net::tcp::OwnedWriteHalf,
    sent: &'a AtomicU64,
}

impl Writer<'_> {
    /// `None` once the server has closed the connection.
    async fn put(&mut self, bytes: &[u8]) -> Option<()> {
        self.tx.write_all(bytes).await.ok()?;
        self.sent.fetch_add(bytes.len() as u64, Relaxed);
        Some(())
    }

    /// Does what `behaviour` says; stops quietly when the server closes the connection.
    async fn act(mut self, behaviour: Behaviour) {
        match behaviour {
            Behaviour::Nothing => {}
            Behaviour::Bytes(bytes) => {
                let _ = self.put(&bytes).await;
            }
            Behaviour::Trickle => self.trickle().await,
            Behaviour::Upload { chunked } => self.upload(chunked).await,
        }
        // Keep the connection open: only the server may end it.
        std::future::pending::<()>().await;
    }

    async fn trickle(&mut self) {
        let head = b"GET /api HTTP/1.1\r\nhost: t\r\nx-slow: ";
        for i in 0usize.. {
            let byte = head.get(i).copied().unwrap_or(b'z');
            if self.put(&[byte]).await.is_none() {
                return;
            }
            tokio::time::sleep(TRICKLE).await;
        }
    }

    async fn upload(&mut self, chunked: bool) {
        let framing = if chunked {
            "transfer-encoding: chunked".to_string()
        } else {
            format!("content-length: {UPLOAD}")
        };
        let head = format!("POST /api HTTP/1.1\r\nhost: t\r\n{framing}\r\n\r\n");
        if self.put(head.as_bytes()).await.is_none() {
            return;
        }
        let data = vec![b'x'; CHUNK];
        let piece = if chunked {
            [format!("{CHUNK:x}\r\n").as_bytes(), &data, b"\r\n"].concat()
        } else {
            data
        };
        for _ in 0..UPLOAD / CHUNK as u64 {
            if self.put(&piece).await.is_none() {
                return;
            }
        }
        if chunked {
            let _ = self.put(b"0\r\n\r\n").await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The phases, and the figures.

/// The well-behaved client's figures before and during the abuse.
struct Phases {
    baseline: Figures,
    abused: Figures,
}

/// Percentiles of the client's latency and of the truth log's service time.
struct Figures {
    requests: usize,
    latency: [Duration; 3],
    service: [Duration; 3],
}

/// The median, the 90th percentile and the slowest: with a few hundred requests a phase, a
/// 99th percentile would only be the second slowest.
const QUANTILES: [f64; 3] = [0.5, 0.9, 1.0];

impl Phases {
    fn split(answers: &[Answer], truth: &[TruthRecord], abuse_start: Instant) -> Phases {
        let by_index: HashMap<u64, &TruthRecord> = truth.iter().map(|r| (r.index, r)).collect();
        let figures = |during: bool| {
            let mine: Vec<&Answer> = answers
                .iter()
                .filter(|a| (a.sent >= abuse_start) == during)
                .collect();
            let mut latency: Vec<_> = mine.iter().map(|a| a.latency).collect();
            let mut service: Vec<_> = mine
                .iter()
                .filter_map(|a| by_index.get(&a.index?))
                .map(|r| r.departure - r.start)
                .collect();
            Figures {
                requests: mine.len(),
                latency: QUANTILES.map(|q| quantile(&mut latency, q)),
                service: QUANTILES.map(|q| quantile(&mut service, q)),
            }
        };
        Phases {
            baseline: figures(false),
            abused: figures(true),
        }
    }
}

fn quantile(values: &mut [Duration], q: f64) -> Duration {
    if values.is_empty() {
        return Duration::ZERO;
    }
    values.sort();
    values[((values.len() - 1) as f64 * q).round() as usize]
}

/// The figures for the docs: printed whether or not the checks pass.
fn report(abuse: &Abuse, phases: &Phases, baseline_rss: u64, abuse_rss: u64, stderr: &str) {
    let ms = |d: &[Duration; 3]| {
        d.map(|d| format!("{:.2}", d.as_secs_f64() * 1e3))
            .join(" / ")
    };
    for (name, f) in [("baseline", &phases.baseline), ("abused", &phases.abused)] {
        eprintln!(
            "{name:>8}: {} requests; latency p50/p90/max {} ms; truth service p50/p90/max {} ms",
            f.requests,
            ms(&f.latency),
            ms(&f.service)
        );
    }
    eprintln!(
        "peak RSS: {} KiB without abuse, {} KiB with ({:+} KiB)",
        baseline_rss,
        abuse_rss,
        abuse_rss as i64 - baseline_rss as i64
    );
    let mut idle: Vec<_> = abuse.idle.iter().filter_map(|e| e.closed_after).collect();
    let mut slow: Vec<_> = abuse
        .slowloris
        .iter()
        .filter_map(|e| e.closed_after)
        .collect();
    eprintln!(
        "idle closed after p50 {:?}, max {:?}; slowloris closed after p50 {:?}, max {:?}",
        quantile(&mut idle, 0.5),
        quantile(&mut idle, 1.0),
        quantile(&mut slow, 0.5),
        quantile(&mut slow, 1.0),
    );
    for (what, e) in ["declared", "chunked"].iter().zip(&abuse.uploads) {
        eprintln!("100 MB upload ({what}): {e:?}");
    }
    for (m, e) in &abuse.malformed {
        eprintln!("{}: {e:?}", m.name);
    }
    eprintln!("server stderr:\n{stderr}");
}

// ---------------------------------------------------------------------------------------------
// The checks.

fn check_good_client(answers: &[Answer], truth: &[TruthRecord]) {
    let failed: Vec<_> = answers
        .iter()
        .filter(|a| a.status != 200)
        .map(|a| a.status)
        .collect();
    assert!(failed.is_empty(), "the good client got {failed:?}");
    let ok: HashMap<u64, Outcome> = truth.iter().map(|r| (r.index, r.outcome)).collect();
    for a in answers {
        let index = a.index.expect("every /api answer carries its index");
        assert_eq!(ok.get(&index), Some(&Outcome::Ok), "truth line {index}");
    }
}

/// "On time" is judged against the baseline phase of this same run, as ratios: the machine is
/// shared and noisy, so only what changed between the phases counts. The bounds leave room for
/// the CPU burst of 10,000 connects and closes, and are still far below what waiting behind an
/// abuser would cost (the header timeout, or an upload's seconds).
fn check_on_time(p: &Phases) {
    let (b, a) = (&p.baseline, &p.abused);
    assert!(
        b.requests >= 100 && a.requests >= 50,
        "enough requests in each phase"
    );
    // The server's own account, from the truth log: a request in service takes the scenario's
    // time, abuse or not.
    assert!(
        b.service[0] >= SERVICE && a.service[0] >= SERVICE,
        "the truth log shows the scenario's service time"
    );
    // Observed under abuse (docs/reliability.md): p90 up to 1.5x the baseline's, the slowest
    // 17–50 ms, as two cores serve 10,000 connects and closes. A runtime thread blocked for
    // 20–200 µs per abuse event put the slowest at 110–1,070 ms in eight runs of nine (the
    // ninth: 39 ms, as honest runs go). The slowest is judged against the baseline's p90, not
    // against its slowest: that is one sample, and a noisy baseline's (38–63 ms, seen) would
    // stretch the bound for the same 10 ms of work.
    within("truth-log service", 0, &a.service, &b.service, 1.1);
    within("truth-log service", 1, &a.service, &b.service, 2.0);
    let slowest = b.service[1].mul_f64(8.0);
    assert!(
        a.service[2] <= slowest,
        "truth-log service: the slowest {:?} under abuse, over 8x the baseline's p90 {:?}",
        a.service[2],
        b.service[1]
    );
    // What the client saw, fresh connects included. Its slowest answer also waited for this
    // very process, busy opening 10,000 connections; it only has to be far from the wait
    // behind an abuser (a header timeout) or a dropped SYN (a second). Its tail shares two
    // cores with those connects, so it is judged loosely here and strictly below.
    let latency = [1.5, 5.0];
    for (i, factor) in latency.into_iter().enumerate() {
        within("client latency", i, &a.latency, &b.latency, factor);
    }
    assert!(
        a.latency[2] < HEADER_TIMEOUT / 4,
        "the slowest answer under abuse took {:?}: it waited behind an abuser",
        a.latency[2]
    );
}

/// Quantile `i` under abuse is at most `factor` times the baseline's.
fn within(what: &str, i: usize, abused: &[Duration; 3], baseline: &[Duration; 3], factor: f64) {
    assert!(
        abused[i] <= baseline[i].mul_f64(factor),
        "{what} q{}: {:?} under abuse, over {factor}x the {:?} without",
        QUANTILES[i],
        abused[i],
        baseline[i]
    );
}

/// The abuse may cost each connection a little, never a whole body or an unbounded buffer.
fn check_memory(baseline_kib: u64, abuse_kib: u64) {
    // Per abusive connection, hyper allocates an 8 KiB read buffer and an 8 KiB write buffer;
    // pages never written are not resident, so that also covers its state. A buffered 100 MB
    // body would not fit in the room this leaves.
    let per_connection_kib = 16;
    let bound = baseline_kib + (IDLE + SLOWLORIS) as u64 * per_connection_kib;
    assert!(
        abuse_kib <= bound,
        "peak RSS {abuse_kib} KiB under abuse, {baseline_kib} KiB without: over {bound} KiB"
    );
}

fn check_closed(abuse: &Abuse) {
    let open = |v: &[Ended]| v.iter().filter(|e| e.closed_after.is_none()).count();
    assert_eq!(
        open(&abuse.idle),
        0,
        "idle connections still open at {DEADLINE:?}"
    );
    assert_eq!(
        open(&abuse.slowloris),
        0,
        "slowloris connections still open at {DEADLINE:?}"
    );
    for (what, e) in ["declared", "chunked"].iter().zip(&abuse.uploads) {
        assert!(
            e.closed_after.is_some(),
            "the {what} 100 MB upload was never cut off: {e:?}"
        );
        // The server read at most the cap; the rest it took is socket buffers.
        assert!(e.sent < UPLOAD / 4, "the {what} upload went through: {e:?}");
    }
    assert_eq!(
        abuse.uploads[0].status.unwrap_or(413),
        413,
        "{:?}",
        abuse.uploads[0]
    );
    for (m, e) in &abuse.malformed {
        assert!(e.closed_after.is_some(), "{}: still open", m.name);
        // A client still writing a long request may see the reset before the answer; a short
        // one was all sent before the server answered, so its answer must have come.
        let seen = if m.bytes.len() < 4096 {
            e.status
        } else {
            e.status.or(Some(m.status))
        };
        assert_eq!(seen, Some(m.status), "{}: {e:?}", m.name);
    }
}

/// One stderr line for the first of each kind, and every kind counted at exit.
fn check_logged(stderr: &str, abuse: &Abuse) {
    let firsts: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("abuse: "))
        .collect();
    assert_eq!(
        firsts.len(),
        5,
        "one line per kind, not per connection:\n{stderr}"
    );
    let summary = stderr
        .lines()
        .find(|l| l.starts_with("stopped: "))
        .unwrap_or_else(|| panic!("no summary:\n{stderr}"));
    let counts = abuse_counts(summary);
    let want_status = |s| {
        abuse
            .malformed
            .iter()
            .filter(|(m, _)| m.status == s)
            .count() as u64
    };
    let expected = [
        ("slow request heads", SLOWLORIS as u64),
        ("idle connections", IDLE as u64),
        ("malformed requests", want_status(400)),
        ("oversized heads", want_status(431)),
        ("oversized bodies", 2),
    ];
    for (kind, n) in expected {
        assert_eq!(counts.get(kind), Some(&n), "{kind} in {summary}");
        assert!(
            firsts
                .iter()
                .any(|l| l.contains(&format!("further {kind} are counted"))),
            "a first-time line for {kind}:\n{stderr}"
        );
    }
}

/// `...; abuse: 20 slow request heads, 10000 idle connections, ...` as kind → count.
fn abuse_counts(summary: &str) -> HashMap<String, u64> {
    let Some((_, list)) = summary.split_once("; abuse: ") else {
        return HashMap::new();
    };
    list.split(", ")
        .filter_map(|item| {
            let (n, kind) = item.split_once(' ')?;
            Some((kind.to_string(), n.parse().ok()?))
        })
        .collect()
}

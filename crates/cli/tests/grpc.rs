//! gRPC unary calls (`grpc://`), end to end: bad input refused in one line, and runs against a
//! small gRPC server of the test's own (on the `h2` crate's server API) that answers chosen
//! status codes in a fixed pattern, delays, or dies mid-run.
mod common;
/// The gRPC project's own greeter and ghz against it, frozen for a second: a module of this
/// binary, so the gRPC tests link one test binary.
#[path = "grpc/real.rs"]
mod real;
/// Server reflection asked of the gRPC examples' servers, when no `--proto` is given.
#[path = "grpc/reflection.rs"]
mod reflection;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use common::{assert_nothing_lost, read_result, serial, shared, sojourn, temp_dir};
use sojourn_core::FailureClass;

fn proto() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/grpc/greeter.proto")
        .display()
        .to_string()
}

const CALL: &str = "helloworld.Greeter/SayHello";

/// `{"name":"x"}` as a framed helloworld.HelloRequest: flag 0, length 3, field 1 "x".
const FRAMED_X: &[u8] = b"\0\0\0\0\x03\x0a\x01x";

#[test]
fn bad_input_is_one_line_naming_the_problem_and_exits_2() {
    let dir = temp_dir("grpc-bad-input");
    let p = proto();
    let not_proto = dir.join("broken.proto");
    std::fs::write(&not_proto, "syntax = \"proto3\";\nservice {").unwrap();
    let broken = not_proto.display().to_string();
    // A port nothing listens on: every case must fail before connecting.
    let url = "grpc://127.0.0.1:1";
    let cases: &[(&str, &[&str], &str)] = &[
        (
            "a missing proto file",
            &[url, "--proto", "/nonexistent/greeter.proto", "--call", CALL],
            "--proto: cannot read /nonexistent/greeter.proto",
        ),
        (
            "a proto that does not compile",
            &[url, "--proto", &broken, "--call", CALL],
            "does not compile",
        ),
        (
            "a method not in the proto, with the ones there are",
            &[url, "--proto", &p, "--call", "helloworld.Greeter/SayBye"],
            "--call: no method \"helloworld.Greeter/SayBye\" in the proto; it has helloworld.Greeter/SayHello",
        ),
        (
            "a call without a service",
            &[url, "--proto", &p, "--call", "SayHello"],
            "--call: \"SayHello\" is not SERVICE/METHOD",
        ),
        (
            "no --call",
            &[url, "--proto", &p],
            "--call: required with a grpc:// target",
        ),
        (
            // Without --proto the server is asked by reflection; here nothing answers.
            "no --proto, and no server to ask by reflection",
            &[url, "--call", CALL],
            "URL: cannot connect to grpc://127.0.0.1:1 (127.0.0.1:1)",
        ),
        (
            "JSON with a field the message lacks",
            &[url, "--proto", &p, "--call", CALL, "-d", r#"{"nmae":"x"}"#],
            "-d: does not fit helloworld.HelloRequest: field \"nmae\"",
        ),
        (
            "JSON with a field of the wrong type",
            &[url, "--proto", &p, "--call", CALL, "-d", r#"{"name":5}"#],
            "-d: does not fit helloworld.HelloRequest: field \"name\"",
        ),
        (
            "JSON that is not JSON",
            &[url, "--proto", &p, "--call", CALL, "-d", "{name"],
            "-d: does not fit helloworld.HelloRequest",
        ),
        (
            "metadata without a colon",
            &[url, "--proto", &p, "--call", CALL, "-m", "token"],
            "--metadata: \"token\" is not `key: value`",
        ),
        (
            "metadata that sets gRPC's own key",
            &[url, "--proto", &p, "--call", CALL, "-m", "grpc-timeout: 1S"],
            "--metadata: \"grpc-timeout: 1S\" sets a key gRPC itself sends",
        ),
        (
            "metadata with a value that is not ASCII",
            &[url, "--proto", &p, "--call", CALL, "-m", "x-user: Zoë"],
            "--metadata: \"x-user: Zoë\" has a value that is not printable ASCII",
        ),
        (
            "a grpc:// URL without a port",
            &["grpc://127.0.0.1", "--proto", &p, "--call", CALL],
            "URL: \"grpc://127.0.0.1\" has no port",
        ),
        (
            "a grpc:// URL with the method in its path",
            &["grpc://127.0.0.1:1/helloworld.Greeter/SayHello", "--proto", &p],
            "has a path; give only grpc://HOST:PORT and the method as --call",
        ),
        (
            "gRPC flags beside an HTTP target",
            &["http://127.0.0.1:1/", "--proto", &p],
            "--proto: only with a grpc://HOST:PORT (or grpcs://) target",
        ),
        (
            "HTTP headers beside a gRPC target",
            &[url, "--proto", &p, "--call", CALL, "-H", "a: b"],
            "--header: a gRPC call carries metadata; use -m 'key: value'",
        ),
    ];
    for (what, args, says) in cases {
        let mut full = vec!["run"];
        full.extend_from_slice(args);
        full.extend_from_slice(&["--rate", "10", "--duration", "1s"]);
        let out = sojourn(&full);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{what}: one line, got {stderr}");
        assert!(
            lines[0].contains(says),
            "{what}: {:?} lacks {says:?}",
            lines[0]
        );
    }
    // compare and sweep check the same flags the same way, before anything is sent; `-d`
    // beside an HTTP target, where they send bodiless GETs, is refused naming it.
    let missing = "/nonexistent/greeter.proto";
    let elsewhere: [(&[&str], &str); 5] = [
        (
            &[
                "compare",
                url,
                "--rate",
                "10",
                "--duration",
                "1s",
                "--proto",
                missing,
                "--call",
                CALL,
            ],
            "--proto: cannot read /nonexistent/greeter.proto",
        ),
        (
            &[
                "sweep", url, "--rates", "5,10", "--proto", missing, "--call", CALL,
            ],
            "--proto: cannot read /nonexistent/greeter.proto",
        ),
        (
            &[
                "compare", url, "--rate", "10", "--proto", &p, "--call", CALL, "-H", "x: y",
            ],
            "--header: a gRPC call carries metadata",
        ),
        (
            &["compare", "http://127.0.0.1:1/", "--rate", "10", "-d", "{}"],
            "-d: only with a grpc://HOST:PORT",
        ),
        (
            &[
                "sweep",
                "http://127.0.0.1:1/",
                "--rates",
                "5",
                "--proto",
                &p,
            ],
            "--proto: only with a grpc://HOST:PORT",
        ),
    ];
    for (args, says) in elsewhere {
        let out = sojourn(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, got {stderr}");
        assert!(lines[0].contains(says), "{args:?}: {stderr}");
    }
}

/// How the test server answers call number n (1, 2, … in the order they arrive).
#[derive(Clone, Copy)]
enum Script {
    /// Every 4th UNAVAILABLE (trailers-only), every 7th of the rest NOT_FOUND (after the
    /// headers, in trailers), the rest OK with a reply message.
    Pattern,
    /// Every call answered OK after this delay.
    Slow(Duration),
    /// A call whose deadline (`grpc-timeout`) is shorter than this much work is answered
    /// DEADLINE_EXCEEDED at once, as servers that check the deadline up front do.
    FailFast(Duration),
    /// SayHellos: every call answered with `messages` replies, each `gap` after the one before
    /// (the first `gap` after the call), the first split over two DATA frames; every 4th
    /// ends UNAVAILABLE after its messages, the rest OK.
    Stream { messages: u32, gap: Duration },
}

/// What the server saw, for the test to check the calls were what gRPC expects.
#[derive(Default)]
struct Seen {
    calls: AtomicU64,
    /// Calls that were not a well-formed helloworld SayHello (path, headers, framed body).
    malformed: AtomicU64,
    timeouts: Mutex<Vec<String>>,
    metadata: Mutex<Vec<String>>,
    /// The server name each TLS connection asked for (SNI), `-` for none.
    sni: Mutex<Vec<String>>,
    /// Calls by path and framed request body, for a targets file's different calls.
    by_call: Mutex<std::collections::BTreeMap<(String, Vec<u8>), u64>>,
}

struct GrpcServer {
    addr: SocketAddr,
    /// Over TLS (`grpcs://`): the self-signed certificate it presents, PEM.
    cert: Option<String>,
    seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl GrpcServer {
    fn start(script: Script) -> GrpcServer {
        GrpcServer::serve(script, None)
    }

    /// Over TLS, with ALPN h2 and a fresh self-signed certificate for 127.0.0.1.
    fn start_tls(script: Script) -> GrpcServer {
        GrpcServer::start_tls_for(script, "127.0.0.1")
    }

    /// Over TLS, with a fresh self-signed certificate for `name` only.
    fn start_tls_for(script: Script, name: &str) -> GrpcServer {
        let cert = rcgen::generate_simple_self_signed(vec![name.into()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        // http/1.1 too, so an https:// run's handshake (the certificate, the server name) is
        // checked here as well; its requests then fail, since the server speaks HTTP/2 only.
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let mut server = GrpcServer::serve(script, Some(acceptor));
        server.cert = Some(cert.cert.pem());
        server
    }

    fn serve(script: Script, tls: Option<tokio_rustls::TlsAcceptor>) -> GrpcServer {
        let seen = Arc::new(Seen::default());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let counted = seen.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                tokio::select! {
                    _ = accept(listener, tls, script, counted) => {}
                    _ = stopped => {}
                }
            });
            // Dropping the runtime drops every connection: the server is gone, mid-call.
        });
        GrpcServer {
            addr: addr_rx.recv().unwrap(),
            cert: None,
            seen,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        let scheme = if self.cert.is_some() { "grpcs" } else { "grpc" };
        format!("{scheme}://{}", self.addr)
    }

    /// Kills the server: its listener and every connection close at once.
    fn kill(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn accept(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    script: Script,
    seen: Arc<Seen>,
) {
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        // As gRPC servers do: without it, a reply's frames wait on Nagle's algorithm.
        let _ = socket.set_nodelay(true);
        let (seen, tls) = (seen.clone(), tls.clone());
        tokio::spawn(async move {
            match tls {
                None => connection(socket, script, seen).await,
                Some(tls) => {
                    if let Ok(s) = tls.accept(socket).await {
                        let sni = s.get_ref().1.server_name().unwrap_or("-").to_string();
                        seen.sni.lock().unwrap().push(sni);
                        connection(s, script, seen).await
                    }
                }
            }
        });
    }
}

async fn connection<T>(io: T, script: Script, seen: Arc<Seen>)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((req, respond))) = conn.accept().await {
        tokio::spawn(answer(req, respond, script, seen.clone()));
    }
}

async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<Bytes>,
    script: Script,
    seen: Arc<Seen>,
) {
    let n = seen.calls.fetch_add(1, Relaxed) + 1;
    let (head, mut body) = req.into_parts();
    let mut got = Vec::new();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        got.extend_from_slice(&chunk);
    }
    let header = |k: &str| {
        head.headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let method = match script {
        Script::Stream { .. } => "/helloworld.Greeter/SayHellos",
        _ => "/helloworld.Greeter/SayHello",
    };
    let well_formed = head.method == http::Method::POST
        && head.uri.path() == method
        && header("content-type").as_deref() == Some("application/grpc")
        && header("te").as_deref() == Some("trailers")
        && got == FRAMED_X;
    if !well_formed {
        seen.malformed.fetch_add(1, Relaxed);
    }
    let call = (head.uri.path().to_string(), got.clone());
    *seen.by_call.lock().unwrap().entry(call).or_default() += 1;
    let deadline = header("grpc-timeout").unwrap_or_default();
    seen.timeouts.lock().unwrap().push(deadline.clone());
    if let Some(m) = header("x-tenant") {
        seen.metadata.lock().unwrap().push(m);
    }
    let code = match script {
        Script::Pattern => match (n % 4, n % 7) {
            (0, _) => return trailers_only(&mut respond, 14),
            (_, 0) => 5,
            _ => 0,
        },
        Script::Slow(d) => {
            tokio::time::sleep(d).await;
            0
        }
        Script::FailFast(work) if millis(&deadline).is_some_and(|ms| ms < work.as_millis()) => {
            return trailers_only(&mut respond, 4)
        }
        Script::FailFast(_) => 0,
        Script::Stream { messages, gap } => {
            let code = match n % 4 {
                0 => 14,
                _ => 0,
            };
            return stream(respond, messages, gap, code).await;
        }
    };
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let Ok(mut out) = respond.send_response(head, false) else {
        return;
    };
    if code == 0 {
        // helloworld.HelloReply { message: "hi" }, framed.
        let _ = out.send_data(Bytes::from_static(b"\0\0\0\0\x04\x0a\x02hi"), false);
    }
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", code.to_string().parse().unwrap());
    let _ = out.send_trailers(trailers);
}

/// A streamed answer: `messages` replies `gap` apart, then `code` in the trailers.
async fn stream(
    mut respond: h2::server::SendResponse<Bytes>,
    messages: u32,
    gap: Duration,
    code: u32,
) {
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let Ok(mut out) = respond.send_response(head, false) else {
        return;
    };
    const HI: &[u8] = b"\0\0\0\0\x04\x0a\x02hi";
    for i in 0..messages {
        tokio::time::sleep(gap).await;
        if i == 0 {
            let _ = out.send_data(Bytes::from_static(&HI[..3]), false);
            let _ = out.send_data(Bytes::from_static(&HI[3..]), false);
        } else {
            let _ = out.send_data(Bytes::from_static(HI), false);
        }
    }
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", code.to_string().parse().unwrap());
    let _ = out.send_trailers(trailers);
}

/// An error answered before any message: the status in the headers, which end the stream.
fn trailers_only(respond: &mut h2::server::SendResponse<Bytes>, code: u32) {
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("grpc-status", code.to_string())
        .body(())
        .unwrap();
    let _ = respond.send_response(head, true);
}

/// A `grpc-timeout` in milliseconds, for the units sojourn writes whole milliseconds in.
fn millis(value: &str) -> Option<u128> {
    value.strip_suffix('m')?.parse().ok()
}

fn run(server: &GrpcServer, dir: &std::path::Path, extra: &[&str]) -> sojourn_core::RunResult {
    let json = dir.join("r.json").display().to_string();
    let url = server.url();
    let p = proto();
    let mut args = vec![
        "run",
        &url,
        "--proto",
        &p,
        "--call",
        CALL,
        "-d",
        r#"{"name":"x"}"#,
        "--json",
        &json,
        "--no-hiccup-meter",
    ];
    args.extend_from_slice(extra);
    let out = sojourn(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "sojourn {}: {:?}\n{stderr}",
        args.join(" "),
        out.status
    );
    read_result(std::path::Path::new(&json))
}

#[test]
fn each_status_code_is_counted_exactly_in_its_class() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-pattern");
    let r = run(
        &server,
        &dir,
        &[
            "--rate",
            "400",
            "--requests",
            "1000",
            "-c",
            "2",
            "--streams",
            "8",
            "--timeout",
            "5s",
            "-m",
            "x-tenant: blue",
        ],
    );
    assert_nothing_lost(&r);
    let c = &r.counts;
    assert_eq!(c.scheduled, 1000);
    assert_eq!(
        server.seen.calls.load(Relaxed),
        1000,
        "every call reached the server"
    );
    assert_eq!(
        server.seen.malformed.load(Relaxed),
        0,
        "every call well-formed"
    );
    // Calls 1..=1000 in arrival order: 250 multiples of 4; 142 multiples of 7, 35 of them
    // also of 4 (multiples of 28).
    let (unavailable, not_found) = (1000 / 4, 1000 / 7 - 1000 / 28);
    assert_eq!(c.failed.get(FailureClass::GrpcUnavailable), unavailable);
    assert_eq!(c.failed.get(FailureClass::GrpcNotFound), not_found);
    assert_eq!(c.failed.total(), unavailable + not_found, "{:?}", c.failed);
    assert_eq!(c.completed, 1000 - unavailable - not_found);
    assert_eq!(r.config.protocol.as_deref(), Some("h2c"));
    let target = r.config.target.as_deref().unwrap_or_default();
    assert_eq!(target, format!("{}/{CALL}", server.url()));
    assert!(server
        .seen
        .metadata
        .lock()
        .unwrap()
        .iter()
        .all(|m| m == "blue"));
    assert_eq!(server.seen.metadata.lock().unwrap().len(), 1000);
    // The deadline the server is told is the run's --timeout.
    let timeouts = server.seen.timeouts.lock().unwrap();
    assert!(
        timeouts.iter().all(|t| t == "5000m"),
        "{:?}",
        &timeouts[..3]
    );
    let text = std::fs::read_to_string(dir.join("r.json")).unwrap();
    assert_matches_the_result_schema(&text);
    assert!(
        text.contains("\"grpc:UNAVAILABLE\": 250"),
        "written by name"
    );
    assert!(
        !text.contains("grpc:CANCELLED"),
        "uncounted classes are left out"
    );
}

/// A server-streaming call: 5 messages 20 ms apart. Each call's first message comes one gap
/// after it is due and its end five gaps after; every message is counted, and the status
/// after the messages is the call's outcome.
#[test]
fn server_streaming_calls_count_every_message_and_time_the_first_and_the_last() {
    let _one = serial();
    let gap = Duration::from_millis(20);
    let server = GrpcServer::start(Script::Stream { messages: 5, gap });
    let dir = temp_dir("grpc-stream");
    let json = dir.join("r.json").display().to_string();
    let (url, p) = (server.url(), proto());
    let out = sojourn(&[
        "run",
        &url,
        "--proto",
        &p,
        "--call",
        "helloworld.Greeter/SayHellos",
        "-d",
        r#"{"name":"x"}"#,
        "--json",
        &json,
        "--no-hiccup-meter",
        "--rate",
        "20",
        "--requests",
        "40",
        "-c",
        "2",
        "--streams",
        "8",
        "--timeout",
        "5s",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stdout}");
    let r = read_result(std::path::Path::new(&json));
    assert_nothing_lost(&r);
    assert_eq!(
        server.seen.malformed.load(Relaxed),
        0,
        "every call well-formed"
    );
    let c = &r.counts;
    assert_eq!((c.scheduled, c.completed), (40, 30));
    assert_eq!(c.failed.get(FailureClass::GrpcUnavailable), 10);
    assert_eq!(c.failed.total(), 10);
    let s = r
        .stream
        .as_ref()
        .expect("a streaming run has its stream section");
    assert_eq!(
        s.messages,
        40 * 5,
        "every message of every call, failed ones too"
    );
    assert_eq!(s.first_message.count, 40, "every call got a first message");
    // Fixed ceilings, well under the next gap: the first message is one gap after the due
    // time, not five; the end is five gaps after.
    let ms = |n: u64| n * 1_000_000;
    assert!(s.first_message.min >= ms(20), "{:?}", s.first_message);
    assert!(s.first_message.max < ms(60), "{:?}", s.first_message);
    let response = &r.histograms.response;
    assert!(response.min >= ms(100), "{response:?}");
    assert!(response.max < ms(160), "{response:?}");
    assert!(
        stdout.contains("messages  200 in streamed answers (40 calls"),
        "{stdout}"
    );
    assert!(stdout.contains("first message (due)"), "{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    assert_matches_the_result_schema(&text);
}

/// Two shards of a streaming run merge into one: their messages summed and their
/// first-message histograms added, the merge a valid document.
#[test]
fn a_merge_of_streaming_shards_sums_their_messages_and_first_messages() {
    let _one = shared();
    let gap = Duration::from_millis(20);
    let server = GrpcServer::start(Script::Stream { messages: 5, gap });
    let dir = temp_dir("grpc-stream-merge");
    let (url, p) = (server.url(), proto());
    let mut shards = Vec::new();
    for k in ["0/2", "1/2"] {
        let json = dir.join(format!("s{}.json", &k[..1])).display().to_string();
        let out = sojourn(&[
            "run",
            &url,
            "--proto",
            &p,
            "--call",
            "helloworld.Greeter/SayHellos",
            "-d",
            r#"{"name":"x"}"#,
            "--json",
            &json,
            "--no-hiccup-meter",
            "--rate",
            "40",
            "--requests",
            "40",
            "-c",
            "2",
            "--streams",
            "8",
            "--timeout",
            "5s",
            "--shard",
            k,
        ]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
        shards.push(json);
    }
    let merged = dir.join("m.json").display().to_string();
    let out = sojourn(&["merge", &shards[0], &shards[1], "-o", &merged]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let parts: Vec<_> = shards
        .iter()
        .map(|f| read_result(std::path::Path::new(f)))
        .collect();
    let m = read_result(std::path::Path::new(&merged));
    assert_nothing_lost(&m);
    let s = m
        .stream
        .as_ref()
        .expect("the merge keeps the stream section");
    let calls: u64 = parts.iter().map(|r| r.counts.scheduled).sum();
    assert_eq!(calls, 40);
    assert_eq!(s.messages, 40 * 5);
    assert_eq!(s.first_message.count, 40);
    assert!(s.first_message.min >= 20_000_000, "{:?}", s.first_message);
    assert_matches_the_result_schema(&std::fs::read_to_string(&merged).unwrap());
}

/// The document, gRPC classes and all, is a valid `sojourn.result` document.
fn assert_matches_the_result_schema(text: &str) {
    let schema = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schema/result.schema.json");
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(schema).unwrap()).unwrap();
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn a_deadline_shorter_than_the_servers_work_times_out_here_or_fails_fast_there() {
    let _one = shared();
    // A server that ignores the deadline: the local --timeout ends each call, and it is
    // counted `timeout` (censored at the deadline), never as a status the server did not send.
    let slow = GrpcServer::start(Script::Slow(Duration::from_millis(600)));
    let dir = temp_dir("grpc-deadline");
    let r = run(
        &slow,
        &dir,
        &["--rate", "20", "--requests", "10", "--timeout", "200ms"],
    );
    assert_nothing_lost(&r);
    // The last call's deadline falls at the end of the run's drain (as long as --timeout), so
    // it may be censored (in flight when the run ended) rather than timed out: both are the
    // local deadline, and no call is counted with a status the server never sent.
    let c = &r.counts;
    let timed_out = c.failed.get(FailureClass::Timeout);
    assert_eq!(timed_out + c.censored, 10, "{c:?}");
    assert!(timed_out >= 9, "{c:?}");
    assert_eq!(c.failed.total(), timed_out, "{c:?}");
    assert_eq!(c.completed, 0);
    assert!(slow
        .seen
        .timeouts
        .lock()
        .unwrap()
        .iter()
        .all(|t| t == "200m"));
    // A server that reads grpc-timeout and gives up at once: its answer is the outcome.
    let fast = GrpcServer::start(Script::FailFast(Duration::from_millis(600)));
    let r = run(
        &fast,
        &dir,
        &["--rate", "20", "--requests", "10", "--timeout", "200ms"],
    );
    assert_nothing_lost(&r);
    let exceeded = r.counts.failed.get(FailureClass::GrpcDeadlineExceeded);
    assert_eq!(exceeded, 10, "{:?}", r.counts);
}

#[test]
fn a_server_killed_mid_run_gives_transport_classes_and_every_call_is_accounted_for() {
    let _one = shared();
    let mut server = GrpcServer::start(Script::Slow(Duration::from_millis(300)));
    let dir = temp_dir("grpc-killed");
    let json = dir.join("r.json").display().to_string();
    let (url, p) = (server.url(), proto());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args([
            "run",
            &url,
            "--proto",
            &p,
            "--call",
            CALL,
            "-d",
            r#"{"name":"x"}"#,
            "--json",
            &json,
            "--no-hiccup-meter",
            "--rate",
            "50",
            "--duration",
            "3s",
            "--timeout",
            "2s",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let before = server.seen.calls.load(Relaxed);
    server.kill();
    let status = child.wait().unwrap();
    assert!(matches!(status.code(), Some(0 | 1)), "{status}");
    let r = read_result(std::path::Path::new(&json));
    assert_nothing_lost(&r);
    let c = &r.counts;
    eprintln!("killed after {before} calls: {c:?}");
    assert_eq!(c.scheduled, 150);
    assert!(
        before > 20,
        "the server took calls before it died: {before}"
    );
    assert!(c.completed > 0 && c.completed < before, "{c:?}");
    let transport = [
        FailureClass::Io,
        FailureClass::Connect,
        FailureClass::Reset,
        FailureClass::GoAway,
        FailureClass::Protocol,
    ];
    let by_transport: u64 = transport.iter().map(|&k| c.failed.get(k)).sum();
    assert!(by_transport > 0, "{c:?}");
    assert_eq!(
        by_transport,
        c.failed.total(),
        "only transport classes: no gRPC status was answered: {:?}",
        c.failed
    );
    assert!(
        c.failed.get(FailureClass::Io) > 0,
        "the calls in flight when it died broke: {:?}",
        c.failed
    );
}

#[test]
fn grpcs_calls_go_over_tls_with_the_trust_flags_of_https() {
    let _one = shared();
    let server = GrpcServer::start_tls(Script::Pattern);
    let dir = temp_dir("grpcs");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.cert.as_deref().unwrap()).unwrap();
    let ca = ca.display().to_string();
    let r = run(
        &server,
        &dir,
        &["--rate", "100", "--requests", "56", "--cacert", &ca],
    );
    assert_nothing_lost(&r);
    assert_eq!(r.config.protocol.as_deref(), Some("h2"), "h2 over TLS");
    assert_eq!(server.seen.malformed.load(Relaxed), 0);
    assert_eq!(r.counts.failed.get(FailureClass::GrpcUnavailable), 14);
    assert_eq!(r.counts.failed.get(FailureClass::GrpcNotFound), 6);
    assert_eq!(r.counts.completed, 36);
    // Without a trust flag the self-signed certificate is refused before the run, in a line.
    let (url, p) = (server.url(), proto());
    let out = sojourn(&[
        "run",
        &url,
        "--proto",
        &p,
        "--call",
        CALL,
        "--rate",
        "10",
        "--requests",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--cacert FILE") && stderr.contains("--insecure"),
        "{stderr}"
    );
    // The scheme that does not match the server is named, with the one that would.
    let plain = GrpcServer::start(Script::Pattern);
    let cases = [
        (
            server.url().replacen("grpcs://", "grpc://", 1),
            "did not speak HTTP/2, which gRPC runs on",
        ),
        (
            plain.url().replacen("grpc://", "grpcs://", 1),
            "something that is not TLS",
        ),
    ];
    for (url, says) in cases {
        let out = sojourn(&[
            "run",
            &url,
            "--proto",
            &p,
            "--call",
            CALL,
            "--rate",
            "10",
            "--requests",
            "1",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
    }
    let out = sojourn(&[
        "run",
        &plain.url().replacen("grpc://", "grpcs://", 1),
        "--proto",
        &p,
        "--call",
        CALL,
        "--rate",
        "10",
        "--requests",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("use {} (", plain.url())),
        "{stderr}"
    );
}

/// `--tls-server-name`: a server reached at 127.0.0.1 whose certificate is for another name
/// only. Checked against that name (and sent as SNI) the calls go through with the CA trusted;
/// without it the certificate is refused before the run, and the line says which flag helps.
/// With `--insecure` the name is still sent. Beside a plaintext URL, or as a name that is not
/// one, it is refused in one line naming the flag, exit 2, by `run`, `compare` and `sweep`.
#[test]
fn the_tls_server_name_is_what_the_certificate_is_checked_against_and_sent_as_sni() {
    let _one = shared();
    let name = "grpc.test.example.com";
    let server = GrpcServer::start_tls_for(Script::Pattern, name);
    let dir = temp_dir("grpcs-server-name");
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, server.cert.as_deref().unwrap()).unwrap();
    let ca = ca.display().to_string();
    let r = run(
        &server,
        &dir,
        &[
            "--rate",
            "100",
            "--requests",
            "28",
            "--cacert",
            &ca,
            "--tls-server-name",
            name,
        ],
    );
    assert_nothing_lost(&r);
    assert_eq!(r.config.protocol.as_deref(), Some("h2"));
    assert_eq!((r.counts.completed, r.counts.failed.total()), (18, 10));
    let sni = std::mem::take(&mut *server.seen.sni.lock().unwrap());
    assert!(!sni.is_empty() && sni.iter().all(|s| s == name), "{sni:?}");

    let r = run(
        &server,
        &dir,
        &[
            "--rate",
            "100",
            "--requests",
            "28",
            "--insecure",
            "--tls-server-name",
            name,
        ],
    );
    assert_nothing_lost(&r);
    assert_eq!(r.counts.scheduled, 28);
    assert_eq!(r.counts.completed + r.counts.failed.total(), 28);
    let sni = std::mem::take(&mut *server.seen.sni.lock().unwrap());
    assert!(!sni.is_empty() && sni.iter().all(|s| s == name), "{sni:?}");

    let (url, p) = (server.url(), proto());
    let plain = url.replacen("grpcs://", "grpc://", 1);
    let call = ["--proto", &p, "--call", CALL, "-d", r#"{"name":"x"}"#];
    let refused: Vec<(Vec<&str>, &str)> = vec![
        (
            // The CA trusted, but the certificate checked against the URL's host.
            vec![
                "run",
                &url,
                "--cacert",
                &ca,
                "--rate",
                "10",
                "--requests",
                "1",
            ],
            "not valid for name \"127.0.0.1\"",
        ),
        (
            vec![
                "run",
                &plain,
                "--tls-server-name",
                name,
                "--rate",
                "10",
                "--requests",
                "1",
            ],
            "--tls-server-name: only with a TLS target (https:// or grpcs://)",
        ),
        (
            vec![
                "run",
                &url,
                "--tls-server-name",
                "not a name",
                "--rate",
                "10",
                "--requests",
                "1",
            ],
            "--tls-server-name: \"not a name\" is neither a DNS name nor an IP address",
        ),
        (
            vec![
                "compare",
                &plain,
                "--tls-server-name",
                name,
                "--rate",
                "10",
                "--duration",
                "1s",
            ],
            "--tls-server-name: only with a TLS target",
        ),
        (
            vec![
                "sweep",
                &plain,
                "--tls-server-name",
                name,
                "--rates",
                "10",
                "--step",
                "1s",
                "--settle",
                "0s",
            ],
            "--tls-server-name: only with a TLS target",
        ),
        (
            vec![
                "run",
                "http://127.0.0.1:1/",
                "--tls-server-name",
                name,
                "--rate",
                "1",
                "--requests",
                "1",
            ],
            "--tls-server-name: only with a TLS target",
        ),
    ];
    for (mut args, says) in refused {
        if args[1] != "http://127.0.0.1:1/" {
            args.extend(call);
        }
        let out = sojourn(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
    let out = sojourn(
        &[
            "run",
            &url,
            "--cacert",
            &ca,
            "--rate",
            "10",
            "--requests",
            "1",
        ]
        .into_iter()
        .chain(call)
        .collect::<Vec<_>>(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--tls-server-name NAME"), "{stderr}");
    assert_eq!(server.seen.malformed.load(Relaxed), 0);

    // https:// (HTTP/1.1) checks the same name: refused without it, before the run; with it
    // the handshake passes and SNI carries it (the requests then fail: the server speaks
    // HTTP/2 only, which is not what is tested here).
    let https = url.replacen("grpcs://", "https://", 1) + "/";
    let once = [
        "--cacert",
        &ca,
        "--rate",
        "10",
        "--requests",
        "2",
        "--timeout",
        "2s",
    ];
    let out = sojourn(&[&["run", &https][..], &once].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not valid for name \"127.0.0.1\""),
        "{stderr}"
    );
    server.seen.sni.lock().unwrap().clear();
    let out = sojourn(&[&["run", &https, "--tls-server-name", name][..], &once].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let sni = std::mem::take(&mut *server.seen.sni.lock().unwrap());
    assert!(!sni.is_empty() && sni.iter().all(|s| s == name), "{sni:?}");

    // Without --proto the server is asked for the call by reflection, over the same TLS: its
    // certificate is checked against the name given, which is sent as SNI. (This server offers
    // no reflection, so the run stops there, on what reflection answered, never on the
    // certificate.) Without the name, reflection meets the certificate as the run would.
    let ask = [
        "--cacert",
        &ca,
        "--call",
        CALL,
        "--rate",
        "10",
        "--requests",
        "1",
    ];
    let out = sojourn(&[&["run", &url, "--tls-server-name", name][..], &ask].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("reflection") && !stderr.contains("not valid for name"),
        "{stderr}"
    );
    let sni = std::mem::take(&mut *server.seen.sni.lock().unwrap());
    assert!(!sni.is_empty() && sni.iter().all(|s| s == name), "{sni:?}");
    let out = sojourn(&[&["run", &url][..], &ask].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("not valid for name \"127.0.0.1\""),
        "{stderr}"
    );
}

#[test]
fn the_closed_and_paced_loops_count_the_same_statuses() {
    let _one = shared();
    for (what, extra) in [
        (
            "closed",
            &["--closed", "-c", "1", "--streams", "4", "--duration", "1s"][..],
        ),
        (
            "paced",
            &[
                "--closed",
                "-c",
                "2",
                "--streams",
                "2",
                "--rate",
                "200",
                "--requests",
                "300",
            ][..],
        ),
    ] {
        let server = GrpcServer::start(Script::Pattern);
        let dir = temp_dir(&format!("grpc-{what}"));
        let r = run(&server, &dir, extra);
        assert_nothing_lost(&r);
        let n = server.seen.calls.load(Relaxed);
        assert!(n > 20, "{what}: {n} calls");
        let c = &r.counts;
        assert_eq!(
            c.completed + c.failed.total(),
            n,
            "{what}: every call answered, counted once"
        );
        assert_eq!(c.failed.get(FailureClass::GrpcUnavailable), n / 4, "{what}");
        assert_eq!(
            c.failed.get(FailureClass::GrpcNotFound),
            n / 7 - n / 28,
            "{what}"
        );
        assert_eq!(server.seen.malformed.load(Relaxed), 0, "{what}");
    }
}

/// Shards of one gRPC plan, merged: two processes run shards 0 and 1 of 1,000 calls in turn
/// against one server of the fixed pattern, so the calls it numbers 1 to 1,000 are the
/// plan's, and the merge counts each class exactly as one process would, and is gated on it.
/// A shaped run (`--stages`) counts its calls per stage as it does over HTTP.
#[test]
fn shards_merge_and_stages_and_objectives_judge_grpc_calls() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-shards");
    let mut shards = Vec::new();
    for k in 0..2 {
        let shard = format!("{k}/2");
        let r = run(
            &server,
            &dir,
            &["--rate", "400", "--requests", "1000", "--shard", &shard],
        );
        assert_nothing_lost(&r);
        let path = dir.join(format!("shard{k}.json"));
        std::fs::rename(dir.join("r.json"), &path).unwrap();
        shards.push(path);
    }
    let merged = dir.join("merged.json");
    let out = sojourn(&[
        "merge",
        shards[0].to_str().unwrap(),
        shards[1].to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
        "--slo",
        "errors<40%",
        "--slo",
        "rate>=99%",
        "--slo",
        "errors<30%",
    ]);
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // 357 of 1,000 failed: under 40% is met, under 30% breached, so the gate exits 4.
    assert_eq!(out.status.code(), Some(4), "{printed}");
    assert!(
        printed.contains("errors<30%") && printed.contains("BREACHED"),
        "{printed}"
    );
    let m = read_result(&merged);
    assert_nothing_lost(&m);
    assert_eq!(m.counts.scheduled, 1000);
    assert_eq!(server.seen.calls.load(Relaxed), 1000);
    let (unavailable, not_found) = (1000 / 4, 1000 / 7 - 1000 / 28);
    assert_eq!(
        m.counts.failed.get(FailureClass::GrpcUnavailable),
        unavailable
    );
    assert_eq!(m.counts.failed.get(FailureClass::GrpcNotFound), not_found);
    assert_eq!(m.counts.completed, 1000 - unavailable - not_found);

    let staged = run(
        &server,
        &dir,
        &["--stages", "1s@100,warm=1s@300", "--slo", "warm:rate>=99%"],
    );
    assert_nothing_lost(&staged);
    assert_eq!(staged.counts.scheduled, 400, "{:?}", staged.counts);
    assert_eq!(staged.counts.completed + staged.counts.failed.total(), 400);
    let stages = staged.config.stages.as_ref().unwrap();
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[1].name.as_deref(), Some("warm"));
}

/// The calls both loops of `compare` (or every step of `sweep`) sent, against one server of
/// the fixed pattern: it numbers them 1 to n across the loops, so the classes summed over the
/// results are exactly its pattern's, and each result accounts for every call it scheduled.
fn assert_the_pattern_across(server: &GrpcServer, results: &[&sojourn_core::RunResult]) {
    let n = server.seen.calls.load(Relaxed);
    assert!(n > 20, "{n} calls");
    assert_eq!(
        server.seen.malformed.load(Relaxed),
        0,
        "every call well-formed"
    );
    let sum =
        |f: &dyn Fn(&sojourn_core::RunResult) -> u64| results.iter().map(|r| f(r)).sum::<u64>();
    for r in results {
        assert_nothing_lost(r);
        assert_eq!(
            r.counts.censored + r.counts.never_sent,
            0,
            "{}: {:?}",
            r.label,
            r.counts
        );
        assert_eq!(
            r.config.target.as_deref(),
            Some(format!("{}/{CALL}", server.url()).as_str()),
            "{}",
            r.label
        );
    }
    assert_eq!(
        sum(&|r| r.counts.completed + r.counts.failed.total()),
        n,
        "every call the server answered counted once"
    );
    assert_eq!(
        sum(&|r| r.counts.failed.get(FailureClass::GrpcUnavailable)),
        n / 4
    );
    assert_eq!(
        sum(&|r| r.counts.failed.get(FailureClass::GrpcNotFound)),
        n / 7 - n / 28
    );
}

fn grpc_flags(p: &str) -> Vec<&str> {
    vec![
        "--proto",
        p,
        "--call",
        CALL,
        "-d",
        r#"{"name":"x"}"#,
        "--timeout",
        "5s",
    ]
}

#[test]
fn compare_runs_both_loops_of_grpc_calls_and_counts_each_class() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-compare");
    let (url, p) = (server.url(), proto());
    let (report, doc) = (dir.join("c.html"), dir.join("c.json"));
    let (report, doc, json_dir) = (
        report.display().to_string(),
        doc.display().to_string(),
        dir.display().to_string(),
    );
    let mut args = vec![
        "compare",
        &url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "-c",
        "2",
    ];
    args.extend(grpc_flags(&p));
    args.extend(["--report", &report, "--json-dir", &json_dir, "--json", &doc]);
    let out = sojourn(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let closed = read_result(&dir.join("closed.json"));
    let open = read_result(&dir.join("open.json"));
    assert_eq!(
        (closed.label.as_str(), open.label.as_str()),
        ("paced", "open loop")
    );
    for r in [&closed, &open] {
        // Half of --rate each, for a second. The loops' calls interleave at the server, so
        // which loop meets which class varies; each meets the pattern's failures, counted in
        // gRPC classes only, and their sum is the pattern's (below).
        assert_eq!(r.counts.scheduled, 100, "{}", r.label);
        let f = &r.counts.failed;
        let grpc = f.get(FailureClass::GrpcUnavailable) + f.get(FailureClass::GrpcNotFound);
        assert!(
            grpc > 0 && r.counts.completed > 0,
            "{}: {:?}",
            r.label,
            r.counts
        );
        assert_eq!(f.total(), grpc, "{}: {f:?}", r.label);
    }
    assert_the_pattern_across(&server, &[&closed, &open]);
    let document: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&doc).unwrap()).unwrap();
    assert_eq!(document["target"], url.as_str());
}

#[test]
fn sweep_steps_through_grpc_calls_with_a_verdict_and_counts_per_step() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-sweep");
    let (url, p) = (server.url(), proto());
    let json = dir.join("s.json").display().to_string();
    let mut args = vec![
        "sweep", &url, "--rates", "50,100", "--step", "1s", "--settle", "0s",
    ];
    args.extend(grpc_flags(&p));
    args.extend(["--json", &json]);
    let out = sojourn(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{doc}");
    let mut results = Vec::new();
    for (s, rate) in steps.iter().zip([50, 100]) {
        assert_eq!(s["step"]["target"].as_f64(), Some(rate as f64));
        let status = s["step"]["status"].as_str().unwrap_or_default();
        assert!(
            ["ok", "saturated", "generator_bound", "pool_bound"].contains(&status),
            "a verdict per step: {s}"
        );
        let r: sojourn_core::RunResult = serde_json::from_value(s["result"].clone()).unwrap();
        assert_eq!(r.counts.scheduled, rate, "a second at {rate} calls/s");
        results.push(r);
    }
    assert_the_pattern_across(&server, &results.iter().collect::<Vec<_>>());
}

/// A plan file carries the call: its `proto` (beside the plan), `call`, `data` and
/// `metadata` reach the server as the flags would; a bad key is one line naming the plan and
/// the key, exit 2.
#[test]
fn a_plan_file_carries_the_grpc_call_and_names_its_bad_keys() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-plan");
    std::fs::copy(proto(), dir.join("greeter.proto")).unwrap();
    let plan = dir.join("plan.toml");
    let call = format!(
        "proto = \"greeter.proto\"\ncall = \"{CALL}\"\ndata = '{{\"name\":\"x\"}}'\nmetadata = [\"x-tenant: blue\"]\n"
    );
    // `streams` without `http2 = true`: gRPC is HTTP/2 already.
    let load = "rate = 400\nrequests = 300\ntimeout = \"5s\"\nconnections = 2\nstreams = 4\n";
    let url = server.url();
    std::fs::write(&plan, format!("url = \"{url}\"\n{call}{load}")).unwrap();
    let (plan_arg, json) = (
        plan.display().to_string(),
        dir.join("r.json").display().to_string(),
    );
    let out = sojourn(&[
        "run",
        "--plan",
        &plan_arg,
        "--json",
        &json,
        "--no-hiccup-meter",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{stderr}");
    let r = read_result(std::path::Path::new(&json));
    assert_eq!(r.counts.scheduled, 300);
    assert_the_pattern_across(&server, &[&r]);
    let metadata = server.seen.metadata.lock().unwrap().clone();
    assert_eq!(metadata.len(), 300, "the plan's metadata on every call");
    assert!(metadata.iter().all(|m| m == "blue"), "{metadata:?}");

    let bad: [(String, &str); 4] = [
        (
            format!("url = \"http://127.0.0.1:1/\"\n{call}{load}"),
            "proto: only with a grpc://HOST:PORT",
        ),
        (
            format!(
                "url = \"{url}\"\n{}{load}",
                call.replace("\"name\"", "\"nmae\"")
            ),
            "data: does not fit helloworld.HelloRequest",
        ),
        (
            format!(
                "url = \"{url}\"\n{}{load}",
                call.replace("blue", "").replace(": ", "")
            ),
            "metadata: \"x-tenant\" is not `key: value`",
        ),
        (
            format!("url = \"{url}\"\nbody = \"{{}}\"\n{call}{load}"),
            "data: give data or body, not both",
        ),
    ];
    for (text, says) in bad {
        std::fs::write(&plan, &text).unwrap();
        let out = sojourn(&["run", "--plan", &plan_arg]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{text}: one line, got {stderr}");
        let want = format!("--plan: {plan_arg}: {says}");
        assert!(
            lines[0].contains(&want),
            "{text}: {:?} lacks {want:?}",
            lines[0]
        );
    }
}

/// `compare`'s closed loop over gRPC is `-c` callers, one call at a time each (as over
/// HTTP/1.1), not `-c` times the server's stream limit: two callers against a server that
/// takes 200 ms a call make about ten calls in a second, unpaced. The open loop beside them
/// has its connections' stream slots: 200 calls a second of 200 ms each, 40 in flight, never
/// wait for a slot among its 16 connections.
#[test]
fn compare_over_grpc_gives_the_closed_loop_c_callers_and_the_open_loop_stream_slots() {
    let _one = shared();
    let server = GrpcServer::start(Script::Slow(Duration::from_millis(200)));
    let dir = temp_dir("grpc-compare-callers");
    let (url, p) = (server.url(), proto());
    let report = dir.join("c.html").display().to_string();
    let json_dir = dir.display().to_string();
    let mut args = vec![
        "compare",
        &url,
        "--rate",
        "200",
        "--duration",
        "1s",
        "-c",
        "2",
        "--closed-mode",
        "unpaced",
    ];
    args.extend(grpc_flags(&p));
    args.extend(["--report", &report, "--json-dir", &json_dir]);
    let out = sojourn(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let closed = read_result(&dir.join("closed.json"));
    assert_nothing_lost(&closed);
    let n = closed.counts.scheduled;
    // Two callers, 200 ms a call, for a second: 10, and one more each started by the end.
    assert!(
        (6..=12).contains(&n),
        "{n} calls from 2 callers: {:?}",
        closed.counts
    );
    assert_eq!(closed.counts.completed + closed.counts.censored, n);
    let open = read_result(&dir.join("open.json"));
    assert_nothing_lost(&open);
    assert_eq!(open.counts.scheduled, 200);
    assert_eq!(open.counts.completed, 200, "{:?}", open.counts);
    assert_eq!(open.counts.waited_for_connection, 0, "{:?}", open.counts);
}

/// `sojourn run` of the fixed pattern against `server`, as a child process (for tests that act
/// while it runs): `extra` after the call flags.
fn spawn_run(server: &GrpcServer, extra: &[&str]) -> std::process::Child {
    let (url, p) = (server.url(), proto());
    let mut args = vec!["run", &url];
    args.extend(grpc_flags(&p));
    args.extend(extra);
    std::process::Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args(&args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("starting sojourn")
}

/// A GET of `/metrics` on `addr`: the reply's body, classic text format.
fn scrape(addr: SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    reply.split_once("\r\n\r\n").unwrap().1.to_string()
}

/// The value of the `sojourn_requests_finished` series with `outcome`, if scraped.
fn finished(body: &str, outcome: &str) -> Option<f64> {
    let label = format!("{{outcome=\"{outcome}\"}}");
    body.lines()
        .filter(|l| l.starts_with("sojourn_requests_finished"))
        .find_map(|l| l.split_once(&label)?.1.trim().parse().ok())
}

/// `--metrics-listen` over gRPC, scraped mid-run: the run's series, with the calls' gRPC
/// statuses as `grpc:NAME` outcomes beside `ok`, and no `grpc:` class that was not counted.
/// The scrape passes `promtool check metrics`, and the classes it shows are the pattern's so
/// far; the run's result has the whole pattern.
#[test]
fn metrics_listen_scrapes_grpc_calls_with_their_grpc_classes_named_when_counted() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-metrics");
    let json = dir.join("r.json").display().to_string();
    let mut run = spawn_run(
        &server,
        &[
            "--rate",
            "200",
            "--duration",
            "3s",
            "-c",
            "2",
            "--interval",
            "250ms",
            "--metrics-listen",
            "127.0.0.1:0",
            "--no-hiccup-meter",
            "--json",
            &json,
        ],
    );
    let addr = common::metrics_addr(&mut run);
    std::thread::sleep(Duration::from_millis(1500));
    let body = scrape(addr);
    let n = server.seen.calls.load(Relaxed) as f64;
    let ok = finished(&body, "ok").unwrap_or_else(|| panic!("no ok series:\n{body}"));
    let unavailable = finished(&body, "grpc:UNAVAILABLE").expect("grpc:UNAVAILABLE scraped");
    let not_found = finished(&body, "grpc:NOT_FOUND").expect("grpc:NOT_FOUND scraped");
    assert!(ok > 0.0 && unavailable > 0.0 && not_found > 0.0, "{body}");
    // Scraped before the server counted the calls after it: at most its count, about a
    // quarter of it UNAVAILABLE.
    assert!(ok + unavailable + not_found <= n, "{n} calls; {body}");
    assert!(
        (unavailable - n / 4.0).abs() <= 0.05 * n,
        "{unavailable} of {n}"
    );
    let grpc_outcomes: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("sojourn_requests_finished") && l.contains("grpc:"))
        .collect();
    assert_eq!(
        grpc_outcomes.len(),
        2,
        "only the classes counted: {grpc_outcomes:?}"
    );
    assert!(body.contains("sojourn_requests_in_flight"), "{body}");
    if let Some(promtool) = sojourn_testkit::on_path("promtool") {
        common::promtool_accepts(&promtool, &dir, &body);
    }
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let r = read_result(std::path::Path::new(&json));
    assert_eq!(r.counts.scheduled, 600);
    assert_the_pattern_across(&server, &[&r]);
}

/// The live panel over gRPC, in a real terminal (a detached 100×24 tmux session of its own):
/// it names the grpc:// target and counts the calls' gRPC classes as they come, then gives way
/// to the summary.
#[test]
fn the_panel_shows_a_grpc_run_and_its_grpc_classes() {
    let Some(tmux) = sojourn_testkit::on_path("tmux") else {
        return sojourn_testkit::skip("live panel: `tmux` is not on PATH");
    };
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let socket = format!("sojourn-grpc-panel-{}", std::process::id());
    let tmux_run = |args: &[&str]| {
        std::process::Command::new(&tmux)
            .args(["-L", &socket])
            .args(args)
            .output()
            .expect("running tmux")
    };
    struct KillServer<F: Fn(&[&str]) -> std::process::Output>(F);
    impl<F: Fn(&[&str]) -> std::process::Output> Drop for KillServer<F> {
        fn drop(&mut self) {
            let _ = (self.0)(&["kill-server"]);
        }
    }
    let tmux_run = KillServer(tmux_run);
    let command = format!(
        "{} run {} --proto {} --call {CALL} -d '{{\"name\":\"x\"}}' --rate 100 --duration 3s \
         --interval 250ms --no-hiccup-meter; sleep 60",
        env!("CARGO_BIN_EXE_sojourn"),
        server.url(),
        proto()
    );
    let out = (tmux_run.0)(&[
        "new-session",
        "-d",
        "-s",
        "t",
        "-x",
        "100",
        "-y",
        "24",
        &command,
    ]);
    assert!(out.status.success(), "tmux: {out:?}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mut screens = Vec::new();
    while std::time::Instant::now() < deadline {
        let out = (tmux_run.0)(&["capture-pane", "-p", "-t", "t"]);
        let screen = String::from_utf8_lossy(&out.stdout).into_owned();
        let done = screen.contains("generator");
        screens.push(screen);
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let panels: Vec<&String> = screens
        .iter()
        .filter(|s| s.contains("sojourn open"))
        .collect();
    assert!(panels.len() >= 5, "the panel was drawn: {screens:#?}");
    let counting = panels
        .iter()
        .rev()
        .find(|s| s.contains("grpc:UNAVAILABLE") && s.contains("grpc:NOT_FOUND"))
        .unwrap_or_else(|| panic!("no panel counts the gRPC classes: {panels:#?}"));
    assert!(counting.contains("errors "), "{counting}");
    assert!(counting.contains("target 100/s"), "{counting}");
    let last = screens.last().unwrap();
    assert!(last.contains("generator"), "the summary follows: {last}");
    assert!(!last.contains("sojourn open"), "the panel gave way: {last}");
}

/// `--repeat 2` over gRPC: two repetitions, each counting its calls' gRPC classes, whose sums
/// are the merged document's and the server's pattern; the summary says how many ran.
#[test]
fn repeat_runs_grpc_calls_twice_and_counts_each_repetitions_classes() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-repeat");
    let json = dir.join("r.json").display().to_string();
    let (url, p) = (server.url(), proto());
    let mut args = vec!["run", &url];
    args.extend(grpc_flags(&p));
    args.extend([
        "--rate",
        "200",
        "--duration",
        "1s",
        "--repeat",
        "2",
        "--repeat-pause",
        "200ms",
        "--no-hiccup-meter",
        "--json",
        &json,
    ]);
    let out = sojourn(&args);
    let shown =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("repetitions: 2 of 2 asked"), "{shown}");
    let r = read_result(std::path::Path::new(&json));
    assert_eq!(r.counts.scheduled, 400);
    assert_the_pattern_across(&server, &[&r]);
    let reps = r.repetitions.as_ref().expect("the repetitions");
    assert_eq!(reps.runs.len(), 2);
    for class in [FailureClass::GrpcUnavailable, FailureClass::GrpcNotFound] {
        let each: Vec<u64> = reps
            .runs
            .iter()
            .map(|x| x.counts.failed.get(class))
            .collect();
        assert!(each.iter().all(|&n| n > 0), "{class:?} in each: {each:?}");
        assert_eq!(
            each.iter().sum::<u64>(),
            r.counts.failed.get(class),
            "{class:?}"
        );
    }
    for x in &reps.runs {
        assert_eq!(x.counts.scheduled, 200);
        assert_eq!(
            x.counts.completed + x.counts.failed.total(),
            200,
            "{:?}",
            x.counts
        );
    }
}

/// `--stages` and `--slo` on a gRPC run: 357 of every 1,000 calls of the pattern fail, so
/// `errors<40%` is met and `errors<30%` breached (exit 4), over the run and in a stage; each
/// stage counts its calls; the summary, the HTML report and `report --slo` name the gRPC
/// classes and judge the same.
#[test]
fn stages_and_objectives_judge_grpc_calls_and_the_report_names_their_classes() {
    let _one = shared();
    let server = GrpcServer::start(Script::Pattern);
    let dir = temp_dir("grpc-slo");
    let json = dir.join("r.json").display().to_string();
    let (url, p) = (server.url(), proto());
    let mut args = vec!["run", &url];
    args.extend(grpc_flags(&p));
    args.extend([
        "--stages",
        "1s@200,peak=1s@400",
        "--slo",
        "errors<40%",
        "--slo",
        "peak:errors<30%",
        "--slo",
        "errors<30%",
        "--no-hiccup-meter",
        "--json",
        &json,
    ]);
    let out = sojourn(&args);
    let shown =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{shown}");
    let verdict = |slo: &str| {
        shown
            .lines()
            .find(|l| l.split_whitespace().next() == Some(slo))
            .unwrap_or_else(|| panic!("no verdict for {slo}: {shown}"))
            .to_string()
    };
    assert!(verdict("errors<40%").contains(" met "), "{shown}");
    assert!(verdict("peak:errors<30%").contains("BREACHED"), "{shown}");
    assert!(verdict("errors<30%").contains("BREACHED"), "{shown}");
    assert!(
        shown.contains("grpc:UNAVAILABLE") && shown.contains("grpc:NOT_FOUND"),
        "{shown}"
    );
    let r = read_result(std::path::Path::new(&json));
    assert_eq!(r.counts.scheduled, 600);
    assert_the_pattern_across(&server, &[&r]);
    let stages = r.config.stages.as_ref().unwrap();
    assert_eq!(stages.len(), 2);
    assert_eq!(stages[1].name.as_deref(), Some("peak"));

    let html = dir.join("r.html").display().to_string();
    let out = sojourn(&["report", &json, "-o", &html, "--slo", "errors<40%"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    for class in ["grpc:UNAVAILABLE", "grpc:NOT_FOUND"] {
        assert!(page.contains(class), "the page names {class}");
    }
    assert!(
        page.contains(&r.config.target.clone().unwrap()),
        "the page names the target"
    );
    let out = sojourn(&["report", &json, "-o", &html, "--slo", "errors<30%"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A targets file of two calls, 3:1 by weight, to the test's own server: a unary SayHello with
/// a label of its own and a server-streaming SayHellos with another message, metadata and the
/// default label. Each label gets exactly its weight's share, the server gets each line's own
/// path, message and metadata, and the streaming call's replies are counted.
#[test]
fn a_targets_file_of_calls_sends_each_lines_call_by_its_weight_with_its_label() {
    let _guard = shared();
    let dir = temp_dir("grpc-targets");
    let server = GrpcServer::start(Script::Slow(Duration::ZERO));
    let file = dir.join("calls.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"call": "helloworld.Greeter/SayHello", "data": {"name": "x"}, "label": "hello", "weight": 3}"#,
            "\n\n",
            r#"{"call": "helloworld.Greeter/SayHellos", "data": {"name": "yy"}, "metadata": {"x-tenant": "blue"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let (json, url, p) = (dir.join("r.json"), server.url(), proto());
    let file_arg = file.display().to_string();
    let out = sojourn(&[
        "run",
        &url,
        "--proto",
        &p,
        "--targets",
        &file_arg,
        "--rate",
        "400",
        "--requests",
        "400",
        "-c",
        "2",
        "--no-hiccup-meter",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert_nothing_lost(&r);
    assert_eq!((r.counts.scheduled, r.counts.completed), (400, 400));
    let labels: Vec<(&str, u64, u64)> = r
        .targets
        .iter()
        .map(|t| (t.label.as_str(), t.counts.total(), t.counts.completed))
        .collect();
    assert_eq!(
        labels,
        [
            ("hello", 300, 300),
            ("helloworld.Greeter/SayHellos", 100, 100)
        ]
    );
    let by_call = server.seen.by_call.lock().unwrap().clone();
    let yy = b"\0\0\0\0\x04\x0a\x02yy".to_vec();
    let want = [
        (
            (
                "/helloworld.Greeter/SayHello".to_string(),
                FRAMED_X.to_vec(),
            ),
            300,
        ),
        (("/helloworld.Greeter/SayHellos".to_string(), yy), 100),
    ];
    assert_eq!(by_call, want.into_iter().collect());
    let tenants = server.seen.metadata.lock().unwrap().clone();
    assert_eq!(
        tenants,
        vec!["blue".to_string(); 100],
        "only SayHellos carries it"
    );
    let stream = r.stream.as_ref().expect("the streaming calls' section");
    assert_eq!(stream.messages, 100, "one reply to each SayHellos");
    assert_eq!(r.config.target.as_deref(), Some(url.as_str()));
}

/// Each bad line of a targets file of calls is one line naming FILE:LINE and what is wrong,
/// exit 2, before anything is sent (nothing listens on the port).
#[test]
fn a_bad_line_in_a_targets_file_of_calls_is_named_by_file_and_line() {
    let dir = temp_dir("grpc-targets-bad");
    let p = proto();
    let good = r#"{"call": "helloworld.Greeter/SayHello", "data": {"name": "x"}}"#;
    let cases: &[(&str, &str, &str)] = &[
        ("a method not in the proto", r#"{"call": "helloworld.Greeter/SayBye"}"#,
         ":2: call: no method \"helloworld.Greeter/SayBye\" in the proto; it has helloworld.Greeter/SayHello"),
        ("data that does not fit", r#"{"call": "helloworld.Greeter/SayHello", "data": {"nmae": "x"}}"#,
         ":2: data: does not fit helloworld.HelloRequest: field \"nmae\""),
        ("a key a call does not have", r#"{"call": "helloworld.Greeter/SayHello", "body": "eA=="}"#,
         ":2: not a call: unknown field `body`"),
        ("no call", r#"{"data": {"name": "x"}}"#, ":2: not a call: missing field `call`"),
        ("not JSON", "{call", ":2: not a call"),
        ("metadata gRPC sends itself", r#"{"call": "helloworld.Greeter/SayHello", "metadata": {"te": "x"}}"#,
         ":2: metadata: \"te: x\" sets a key gRPC itself sends"),
        ("a weight of 0", r#"{"call": "helloworld.Greeter/SayHello", "weight": 0}"#, ":2: weight 0"),
        ("an empty label", r#"{"call": "helloworld.Greeter/SayHello", "label": ""}"#, ":2: empty label"),
        ("a call without a service", r#"{"call": "SayHello"}"#, ":2: call: \"SayHello\" is not SERVICE/METHOD"),
    ];
    for (what, line, says) in cases {
        let file = dir.join("calls.jsonl");
        std::fs::write(&file, format!("{good}\n{line}\n")).unwrap();
        let f = file.display().to_string();
        let out = sojourn(&[
            "run",
            "grpc://127.0.0.1:1",
            "--proto",
            &p,
            "--targets",
            &f,
            "--requests",
            "1",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{what}: one line, got {stderr}");
        let want = format!("--targets: {f}{says}");
        assert!(
            lines[0].contains(&want),
            "{what}: {:?} lacks {want:?}",
            lines[0]
        );
    }
    // The call's own flags have no place beside a file of calls; nor has an HTTP URL.
    let file = dir.join("calls.jsonl");
    std::fs::write(&file, format!("{good}\n")).unwrap();
    let f = file.display().to_string();
    let beside: &[(&[&str], &str)] = &[
        (
            &[
                "grpc://127.0.0.1:1",
                "--proto",
                &p,
                "--targets",
                &f,
                "--call",
                CALL,
            ],
            "--call: with --targets",
        ),
        (
            &[
                "grpc://127.0.0.1:1",
                "--proto",
                &p,
                "--targets",
                &f,
                "-d",
                "{}",
            ],
            "-d: with --targets",
        ),
        (
            &[
                "grpc://127.0.0.1:1",
                "--proto",
                &p,
                "--targets",
                &f,
                "-m",
                "a: b",
            ],
            "--metadata: with --targets",
        ),
        (
            &["http://127.0.0.1:1/", "--targets", &f],
            "beside --targets: each target names its URL",
        ),
    ];
    for (args, says) in beside {
        let mut full = vec!["run"];
        full.extend_from_slice(args);
        let out = sojourn(&full);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

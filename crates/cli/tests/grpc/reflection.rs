//! Server reflection against the gRPC project's own example servers (built by
//! `scripts/grpc-servers.sh` into `$SOJOURN_GRPC_SERVERS`): with no `--proto`, the call's
//! descriptors are asked of `reflection_server` (helloworld.Greeter and grpc.examples.echo.Echo),
//! and `greeter_server`, which offers no reflection, is refused naming `--proto`. Under CI=true a
//! missing server fails the test; elsewhere it is skipped with a line saying so.
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{read_result, sojourn, temp_dir};
use crate::real::{free_port, grpc_server, wait_bounded, ExampleServer, Reaped, START_TIMEOUT};

/// The reflection example on `port`, once it accepts connections.
fn reflection_server(bin: &Path, dir: &Path, port: u16) -> Reaped {
    let log = std::fs::File::create(dir.join("reflection_server.log")).unwrap();
    let child = Command::new(bin)
        .args(["-port", &port.to_string()])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("starting the reflection server");
    let server = Reaped(child);
    let deadline = Instant::now() + START_TIMEOUT;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the reflection server did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// `sojourn run` of `calls` calls of `call` with message `data` and no `--proto`: its result.
fn run_without_proto(
    url: &str,
    dir: &Path,
    call: &str,
    data: &str,
    calls: u64,
) -> sojourn_core::RunResult {
    let json = dir.join(format!("{}.json", call.replace(['/', '.'], "-")));
    let n = calls.to_string();
    let args = [
        "run",
        url,
        "--call",
        call,
        "-d",
        data,
        "--rate",
        "100",
        "--requests",
        &n,
        "-c",
        "2",
        "--timeout",
        "5s",
        "--no-hiccup-meter",
        "--json",
        json.to_str().unwrap(),
    ];
    let child = Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args(args)
        .stdout(Stdio::null())
        .spawn()
        .expect("starting sojourn");
    wait_bounded(Reaped(child), Duration::from_secs(30), "sojourn");
    read_result(&json)
}

/// Both services of the reflection example, called with nothing but `--call` and `-d`: the
/// descriptors (and the JSON's conversion) come from the server. Every call completes, and a
/// `--call` of a service it does not have is one line listing the ones it has.
#[test]
fn with_no_proto_the_servers_reflection_gives_the_calls_descriptors() {
    let Some(bin) = grpc_server("reflection_server") else {
        return sojourn_testkit::skip(
            "the gRPC reflection example is not installed (.ci/run builds it with \
             scripts/grpc-servers.sh into SOJOURN_GRPC_SERVERS)",
        );
    };
    let _guard = crate::common::shared();
    let dir = temp_dir("grpc-reflection");
    let port = free_port();
    let _server = reflection_server(&bin, &dir, port);
    let url = format!("grpc://127.0.0.1:{port}");
    for (call, data, calls) in [
        ("helloworld.Greeter/SayHello", r#"{"name":"x"}"#, 100),
        (
            "grpc.examples.echo.Echo/UnaryEcho",
            r#"{"message":"x"}"#,
            60,
        ),
    ] {
        let r = run_without_proto(&url, &dir, call, data, calls);
        let c = &r.counts;
        assert_eq!(
            (c.scheduled, c.completed, c.failed.total(), c.censored),
            (calls, calls, 0, 0),
            "{call}: {c:?}"
        );
        assert_eq!(
            r.config.target.as_deref(),
            Some(format!("{url}/{call}").as_str())
        );
    }
    // A targets file of both services' calls, 2:1, with no --proto: each service is asked once.
    let file = dir.join("calls.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"call": "helloworld.Greeter/SayHello", "data": {"name": "x"}, "weight": 2}"#,
            "\n",
            r#"{"call": "grpc.examples.echo.Echo/UnaryEcho", "data": {"message": "x"}}"#,
            "\n",
        ),
    )
    .unwrap();
    let json = dir.join("targets.json");
    let out = sojourn(&[
        "run",
        &url,
        "--targets",
        file.to_str().unwrap(),
        "--rate",
        "100",
        "--requests",
        "60",
        "--timeout",
        "5s",
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
    let labels: Vec<(&str, u64, u64)> = r
        .targets
        .iter()
        .map(|t| (t.label.as_str(), t.counts.total(), t.counts.completed))
        .collect();
    assert_eq!(
        labels,
        [
            ("helloworld.Greeter/SayHello", 40, 40),
            ("grpc.examples.echo.Echo/UnaryEcho", 20, 20)
        ]
    );
    // A plan file's call without `proto` is asked of the server the same way.
    let plan = dir.join("plan.toml");
    let json = dir.join("plan.json");
    std::fs::write(
        &plan,
        format!(
            "url = \"{url}\"\ncall = \"helloworld.Greeter/SayHello\"\ndata = '{{\"name\":\"x\"}}'\nrate = 100\nrequests = 30\n"
        ),
    )
    .unwrap();
    let out = sojourn(&[
        "run",
        "--plan",
        plan.to_str().unwrap(),
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
    let c = read_result(&json).counts;
    assert_eq!((c.scheduled, c.completed), (30, 30), "{c:?}");
    // A field the reflected message lacks is named, as with --proto.
    let out = sojourn(&[
        "run",
        &url,
        "--call",
        "grpc.examples.echo.Echo/UnaryEcho",
        "-d",
        r#"{"mesage":"x"}"#,
        "--requests",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .trim()
            .contains("-d: does not fit grpc.examples.echo.EchoRequest: field \"mesage\""),
        "{stderr}"
    );
    let out = sojourn(&["run", &url, "--call", "shop.Orders/Get", "--requests", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    for said in [
        "--call: ",
        "has no service \"shop.Orders\"",
        "helloworld.Greeter",
        "grpc.examples.echo.Echo",
    ] {
        assert!(stderr.contains(said), "{said:?} not in {stderr}");
    }
}

/// The examples' greeter has no reflection service: without `--proto`, one line naming
/// `--proto` as the fix, exit 2, and no call made.
#[test]
fn a_server_without_reflection_is_told_to_give_a_proto() {
    let Some(bin) = grpc_server("greeter_server") else {
        return sojourn_testkit::skip(
            "the gRPC greeter is not installed (.ci/run builds it with scripts/grpc-servers.sh \
             into SOJOURN_GRPC_SERVERS)",
        );
    };
    let _guard = crate::common::shared();
    let dir = temp_dir("grpc-no-reflection");
    let greeter = ExampleServer::start(&bin, &dir);
    let url = format!("grpc://127.0.0.1:{}", greeter.port);
    let out = sojourn(&[
        "run",
        &url,
        "--call",
        "helloworld.Greeter/SayHello",
        "-d",
        r#"{"name":"x"}"#,
        "--rate",
        "10",
        "--requests",
        "5",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains("does not offer server reflection"),
        "{stderr}"
    );
    assert!(stderr.contains("--proto FILE"), "{stderr}");
    let log = std::fs::read_to_string(dir.join("greeter.log")).unwrap_or_default();
    assert!(!log.contains("Received"), "no call was made: {log}");
}

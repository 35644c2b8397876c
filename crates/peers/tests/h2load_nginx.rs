//! h2load over HTTP/2, driven by the runners' own command lines, against a real HTTP/2 server:
//! nginx with an h2c listener on a free loopback port. sojourn's servers speak HTTP/1.1 only
//! (`sojourn suite` runs h2load with `--h1`), so h2load's default protocol is tested here.
//!
//! Needs h2load (apt nghttp2-client) and nginx (apt nginx-light), which .ci/run installs: under
//! CI=true a missing one fails the test, elsewhere it prints SKIPPED and passes.
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use sojourn_core::result::Detail;
use sojourn_core::{FailureClass, RunConfig, RunResult};
use sojourn_peers::runners::{self, H2loadProtocol, RunSpec, RunnerPlan};
use sojourn_peers::{import, ImportContext};

/// nginx in the foreground, one process, everything in its own temp directory; killed (by its
/// own pid) when dropped.
struct Nginx {
    child: Child,
    url: String,
    dir: tempfile::TempDir,
}

impl Nginx {
    /// nginx cannot bind port 0, so it gets a port the kernel just handed out; another process
    /// may take it first, so a start that fails is tried again on a new port.
    fn start(program: &Path) -> Nginx {
        for _ in 0..3 {
            if let Some(nginx) = Nginx::try_start(program) {
                return nginx;
            }
        }
        panic!("nginx failed to start three times");
    }

    fn try_start(program: &Path) -> Option<Nginx> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("www")).unwrap();
        std::fs::write(dir.path().join("www/index.html"), "ok\n").unwrap();
        let port = free_port();
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config(dir.path(), port)).unwrap();
        let child = Command::new(program)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf)
            .arg("-e")
            .arg(dir.path().join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting nginx");
        let mut nginx = Nginx {
            child,
            url: format!("http://127.0.0.1:{port}"),
            dir,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(nginx);
            }
            if nginx.child.try_wait().unwrap().is_some() {
                eprintln!("nginx exited: {}", nginx.error_log());
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "nginx not listening on {port} after 10 s: {}",
            nginx.error_log()
        );
    }

    fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// h2c (HTTP/2 without TLS) on 127.0.0.1 only; `/` is a static file, anything else a 404.
fn config(dir: &Path, port: u16) -> String {
    let d = dir.display();
    format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log warn;\nevents {{ worker_connections 256; }}\nhttp {{\n  \
         access_log off;\n  log_not_found off;\n  client_body_temp_path {d}/body;\n  \
         proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n  \
         uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n  server {{\n    \
         listen 127.0.0.1:{port} http2;\n    root {d}/www;\n  }}\n}}\n"
    )
}

/// h2load and nginx, or None after the skip rule (a failure under CI).
fn tools() -> Option<(PathBuf, PathBuf)> {
    let h2load = sojourn_testkit::on_path("h2load");
    // Debian puts nginx in /usr/sbin, often not on a user's PATH.
    let nginx = sojourn_testkit::on_path("nginx")
        .or_else(|| Some(PathBuf::from("/usr/sbin/nginx")).filter(|p| p.is_file()));
    match (h2load, nginx) {
        (Some(h2load), Some(nginx)) => Some((h2load, nginx)),
        (h2load, nginx) => {
            let missing: Vec<&str> = [("h2load", h2load.is_none()), ("nginx", nginx.is_none())]
                .into_iter()
                .filter_map(|(name, gone)| gone.then_some(name))
                .collect();
            sojourn_testkit::skip(&format!(
                "h2load against nginx: {missing:?} missing (apt nghttp2-client nginx-light)"
            ));
            None
        }
    }
}

/// Runs a plan's command (killed if it outlives `limit`) and imports its files.
fn run_and_import(plan: &RunnerPlan, h2load: &Path, spec: &RunSpec) -> RunResult {
    let stdout = std::fs::File::create(plan.stdout.as_ref().unwrap()).unwrap();
    let mut child = Command::new(h2load)
        .args(&plan.argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + spec.duration + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{:?} ran past its deadline", plan.argv);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{:?}: {status}", plan.argv);
    let ctx = ImportContext {
        label: "h2load".into(),
        mode: plan.mode,
        version: "h2load (test)".into(),
        config: RunConfig {
            connections: spec.connections,
            interval_ns: 1_000_000_000,
            ..RunConfig::default()
        },
    };
    import(plan.tool, &plan.files, &ctx).unwrap_or_else(|e| panic!("{e}"))
}

fn spec(url: String, out: &Path, duration: Duration) -> RunSpec {
    RunSpec {
        url,
        rate: 200.0,
        duration,
        connections: 2,
        out_dir: out.to_path_buf(),
    }
}

fn text_output(plan: &RunnerPlan) -> String {
    std::fs::read_to_string(plan.stdout.as_ref().unwrap()).unwrap()
}

/// `--rps` at 200 req/s over 2 connections for 1 s: about 200 requests, all answered over h2c,
/// each with its own row in the log.
#[test]
fn h2load_rps_runner_over_h2c() {
    let Some((h2load, nginx)) = tools() else {
        return;
    };
    let server = Nginx::start(&nginx);
    let out = tempfile::tempdir().unwrap();
    let spec = spec(
        format!("{}/", server.url),
        out.path(),
        Duration::from_secs(1),
    );
    let plan = runners::h2load_rps(&spec, H2loadProtocol::Http2);
    assert!(!plan.argv.iter().any(|a| a == "--h1"), "{:?}", plan.argv);
    let r = run_and_import(&plan, &h2load, &spec);
    let text = text_output(&plan);
    assert!(text.contains("Application protocol: h2c"), "{text}");
    assert_eq!(r.import.as_ref().unwrap().detail, Detail::PerRequest);
    assert_eq!(r.counts.failed.total(), 0, "{text}");
    // rate × duration, and the one request each connection sends as it opens.
    let sent = r.counts.completed + r.counts.censored;
    assert!((190..=212).contains(&sent), "{sent} requests\n{text}");
    assert_eq!(r.histograms.response.count, r.counts.completed);
    assert!(
        (900_000_000..1_100_000_000).contains(&r.elapsed_ns),
        "{}",
        r.elapsed_ns
    );
    // A static file on loopback: every request well under the 1 s the run lasted.
    assert!(r.histograms.response.max < 500_000_000, "{text}");
}

/// The closed-loop runner, briefly, at a path nginx does not have: every answer is a 404 over
/// HTTP/2, and the log and the summary agree on how many.
#[test]
fn h2load_closed_runner_counts_404s_over_h2c() {
    let Some((h2load, nginx)) = tools() else {
        return;
    };
    let server = Nginx::start(&nginx);
    let out = tempfile::tempdir().unwrap();
    let url = format!("{}/missing", server.url);
    let spec = spec(url, out.path(), Duration::from_millis(300));
    let plan = runners::h2load(&spec, H2loadProtocol::Http2);
    let r = run_and_import(&plan, &h2load, &spec);
    let text = text_output(&plan);
    assert!(text.contains("Application protocol: h2c"), "{text}");
    assert_eq!(r.counts.completed, 0, "{text}");
    let not_found = r.counts.failed.get(FailureClass::Http4xx);
    assert!(not_found > 0, "{text}");
    assert_eq!(not_found, r.counts.failed.total(), "{text}");
    // The text's own count: "status codes: 0 2xx, 0 3xx, N 4xx, 0 5xx". h2load counts a status
    // when its headers arrive and a request as done when it ends, so a request cut off by the
    // end of the run can be in the first and not the second (a CI run read "1288 started, 1286
    // done" and "1287 4xx"): the text may count up to the started but unfinished ones more.
    let count = |after: &str, what: &str| -> u64 {
        let tail = &text[text
            .find(after)
            .unwrap_or_else(|| panic!("no {after:?}\n{text}"))..];
        let upto = tail
            .find(what)
            .unwrap_or_else(|| panic!("no {what:?}\n{text}"));
        tail[..upto]
            .rsplit(|c: char| !c.is_ascii_digit())
            .find(|w| !w.is_empty())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no count before {what:?}\n{text}"))
    };
    let (started, done) = (count("requests:", " started"), count("requests:", " done"));
    let counted = count("status codes:", " 4xx");
    assert!(
        (not_found..=not_found + started.saturating_sub(done)).contains(&counted),
        "{counted} 4xx against {not_found} logged, {started} started, {done} done\n{text}"
    );
}

//! What a user who typed something wrong reads: each row runs the binary with one mistake and
//! expects exit 2 and exactly one line, naming the flag or FILE:LINE, what was wrong and how
//! to fix it.
mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{sojourn, temp_dir};

/// One mistake and the line it must get.
struct Row {
    what: &'static str,
    args: Vec<String>,
    says: String,
}

fn row(what: &'static str, args: &[&str], says: impl Into<String>) -> Row {
    Row {
        what,
        args: args.iter().map(|a| a.to_string()).collect(),
        says: says.into(),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// A port that answers any bytes with a plain HTTP 400, as a plain-HTTP server answers a TLS
/// handshake. Serves until the test process ends.
fn plain_http_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n");
        }
    });
    port
}

/// A wall-clock time `secs` from now (negative: ago), as Unix seconds and as sojourn prints it.
fn instant(secs: i64) -> (String, String) {
    let now = SystemTime::now();
    let at = match secs >= 0 {
        true => now + Duration::from_secs(secs as u64),
        false => now - Duration::from_secs(secs.unsigned_abs()),
    };
    let whole = Duration::from_secs(at.duration_since(UNIX_EPOCH).unwrap().as_secs());
    let at = UNIX_EPOCH + whole;
    (
        whole.as_secs().to_string(),
        humantime::format_rfc3339_millis(at).to_string(),
    )
}

fn rows(dir: &Path) -> Vec<Row> {
    let mixed = write(
        dir,
        "mixed.txt",
        "GET http://127.0.0.1:9/a\n\nGET http://127.0.0.1:9/b\n\nGET http://127.0.0.2:9/c\n",
    );
    let no_scheme = write(dir, "no-scheme.txt", "GET localhost:8080/x\n");
    let staged_slo = write(
        dir,
        "staged-slo.toml",
        "url = \"http://127.0.0.1:9/\"\nrate = 10\nslo = [\"hold:p99<1s\"]\n",
    );
    let bad_slo = write(
        dir,
        "bad-slo.toml",
        "url = \"http://127.0.0.1:9/\"\nrate = 10\nslo = [\"p99<<1s\"]\n",
    );
    let port = plain_http_port();
    let https = format!("https://127.0.0.1:{port}/");
    let (past, past_shown) = instant(-3 * 3600);
    let (ahead, ahead_shown) = instant(3 * 86_400 + 60);
    let url = "http://127.0.0.1:9/";
    vec![
        row(
            "a second origin in a targets file: FILE:LINE like every other targets error",
            &["run", "--targets", &mixed, "--rate", "10"],
            format!(
                "error: --targets: {mixed}:5: this target is for http://127.0.0.2:9, but the \
                 first target (line 1) is for http://127.0.0.1:9: one run sends to one origin \
                 (scheme, host and port) because it drives one connection pool; put each \
                 origin's targets in a file of their own and run them separately"
            ),
        ),
        row(
            "host and port without a scheme",
            &["run", "localhost:8080", "--rate", "10"],
            "error: URL: \"localhost:8080\" has no scheme; write http://localhost:8080 \
             (or https:// for TLS)",
        ),
        row(
            "an address and path without a scheme",
            &["run", "127.0.0.1:8080/api", "--rate", "10"],
            "error: URL: \"127.0.0.1:8080/api\" has no scheme; write http://127.0.0.1:8080/api \
             (or https:// for TLS)",
        ),
        row(
            "a scheme that is not HTTP keeps its own message",
            &["run", "ftp://127.0.0.1/x", "--rate", "10"],
            "error: URL: scheme \"ftp\" is not supported; use http:// or https://",
        ),
        row(
            "a targets line without a scheme",
            &["run", "--targets", &no_scheme, "--rate", "10"],
            format!(
                "error: --targets: {no_scheme}:1: bad URL \"localhost:8080/x\": no scheme: \
                 write http://localhost:8080/x (or https:// for TLS)"
            ),
        ),
        row(
            "https:// to a port that speaks plain HTTP",
            &["run", &https, "--rate", "10"],
            format!(
                "error: URL: {https} (127.0.0.1:{port}) answered the TLS handshake with \
                 something that is not TLS: the server most likely speaks plain HTTP on this \
                 port; use http://127.0.0.1:{port}/ (--insecure would not help)"
            ),
        ),
        row(
            "a --start-at before the whole schedule",
            &["run", url, "--rate", "10", "--start-at", &past],
            format!(
                "error: --start-at: {past_shown} is 3.0 h ago, past the whole schedule \
                 (10.0 s); give a time still to come"
            ),
        ),
        row(
            "a --start-at days ahead",
            &["run", url, "--rate", "10", "--start-at", &ahead],
            format!(
                "error: --start-at: {ahead_shown} is 3 days ahead; the most a run waits is a day"
            ),
        ),
        row(
            "a plan's objective for a stage the plan does not have",
            &["run", "--plan", &staged_slo],
            format!(
                "error: --plan: {staged_slo}: slo: hold:p99<1s: the run has no stages, so \
                 there is no stage hold; drop the \"hold:\" prefix to judge the whole run"
            ),
        ),
        row(
            "a plan's objective that does not parse",
            &["run", "--plan", &bad_slo],
            format!(
                "error: --plan: {bad_slo}: slo: limit must be a positive time like 200ms, \
                 1.5s or 500us, got \"<1s\"; e.g. p99<200ms"
            ),
        ),
        row(
            "the same objective on the command line names --slo",
            &["run", url, "--rate", "10", "--slo", "hold:p99<1s"],
            "error: --slo: hold:p99<1s: the run has no stages, so there is no stage hold; \
             drop the \"hold:\" prefix to judge the whole run",
        ),
    ]
}

#[test]
fn each_mistake_exits_2_with_one_line_that_says_how_to_fix_it() {
    let dir = temp_dir("messages");
    let mut wrong = Vec::new();
    for r in rows(&dir) {
        let args: Vec<&str> = r.args.iter().map(String::as_str).collect();
        let out = sojourn(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = stderr.trim_end();
        if out.status.code() != Some(2) || said != r.says {
            wrong.push(format!(
                "{}: exit {:?}\n  said: {said}\n  want: {}",
                r.what,
                out.status.code(),
                r.says
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

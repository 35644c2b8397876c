//! Journeys from the command line. A journey run against json-server (npm), a REST application
//! nobody here wrote, whose own request log is the witness that every record a journey created
//! was read back by that id, by that journey. And every bad journey file, and every flag that
//! means nothing beside `--journey`: exit 2 and one line naming FILE:LINE or the flag.
mod common;
/// A journey run's live rows on the metrics endpoint, against its result.
#[path = "journeys/live.rs"]
mod live;
/// Locust running the same journey, closed and paced, imported per step beside the model.
#[path = "journeys/locust.rs"]
mod locust;
/// Journeys against their ground truth, `sim --journey`: a module of this binary, so the suite
/// links one test binary for journeys.
#[path = "journeys/model.rs"]
mod model;
/// Journeys against nginx frozen for a second, beside the same model.
#[path = "journeys/nginx.rs"]
mod nginx;
/// `--slo` and `diff` on steps and journeys.
#[path = "journeys/verdicts.rs"]
mod verdicts;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{assert_nothing_lost, read_result, sojourn, sojourn_ok, temp_dir, TestServer};
use sojourn_core::validity::{TestName, TestOutcome};
use sojourn_core::{LabelCounts, RunResult};

/// json-server: `$SOJOURN_JSON_SERVER` (the executable; `.ci/run` installs it there), or
/// `json-server` on PATH.
fn json_server_bin() -> Option<PathBuf> {
    std::env::var_os("SOJOURN_JSON_SERVER")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| sojourn_testkit::on_path("json-server"))
}

/// A free port on 127.0.0.1 (json-server cannot bind port 0 and report it).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// json-server on a free loopback port over `dir/db.json`, its stdout (one line per request)
/// gathered as it comes. Killed when dropped.
struct JsonServer {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl JsonServer {
    fn start(bin: &Path, dir: &Path) -> JsonServer {
        let port = free_port();
        let mut child = Command::new(bin)
            .args([
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "db.json",
            ])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
        let log = Arc::new(Mutex::new(String::new()));
        let (out, sink) = (child.stdout.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let mut log = sink.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        let server = JsonServer { child, port, log };
        server.wait_until_it_answers();
        server
    }

    fn wait_until_it_answers(&self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while get(self.port, "/users").map(|(status, _)| status) != Some(200) {
            assert!(
                Instant::now() < deadline,
                "json-server did not answer on port {} within 15 s; it printed:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// What it printed so far, without its colours.
    fn log(&self) -> String {
        strip_ansi(&self.log.lock().unwrap())
    }
}

impl Drop for JsonServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ parameters, ended by a letter.
            chars.by_ref().find(|c| c.is_ascii_alphabetic());
        } else {
            out.push(c);
        }
    }
    out
}

/// One GET over a fresh connection: the status and the body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let req = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

const USERS: usize = 50;
const JOURNEYS: u64 = 30;

fn email(row: usize) -> String {
    format!("user{row}@example.test")
}

/// Creates a user from the journey's own data row, marked with the journey's index, reads it
/// back by the id the server gave it (the journey's index rides along in the query, so the
/// server's log says which journey asked), then lists them all.
fn signup_journey(port: u16) -> String {
    format!(
        r#"base_url = "http://127.0.0.1:{port}"

[data]
file = "users.csv"
order = "unique"

[[journey]]
name = "signup"

  [[journey.step]]
  name = "create"
  method = "POST"
  url = "/users"
  headers = {{ Content-Type = "application/json" }}
  body = '{{"name": "${{row.name}}", "email": "${{row.email}}", "journey": ${{journey}}}}'
  expect = {{ status = 201, body = "@example.test" }}
  extract = {{ id = {{ json = "/id" }} }}

  [[journey.step]]
  name = "read"
  url = "/users/${{id}}?journey=${{journey}}"
  expect = {{ status = 200, body = "@example.test" }}

  [[journey.step]]
  name = "list"
  url = "/users"
  expect = {{ status = 200 }}
"#
    )
}

fn users_csv() -> String {
    let mut csv = String::from("name,email\n");
    for row in 0..USERS {
        csv.push_str(&format!("user{row},{}\n", email(row)));
    }
    csv
}

#[test]
fn a_journey_against_json_server_reads_back_every_record_it_created_by_the_same_journey() {
    // One at a time: the model test beside them judges timing.
    let _guard = common::serial();
    let Some(bin) = json_server_bin() else {
        return sojourn_testkit::skip(
            "json-server is not installed (.ci/run installs json-server@0.17.4 with npm and sets SOJOURN_JSON_SERVER)",
        );
    };
    let dir = temp_dir("journeys-json-server");
    std::fs::write(dir.join("db.json"), r#"{"users": []}"#).unwrap();
    let server = JsonServer::start(&bin, &dir);
    std::fs::write(dir.join("users.csv"), users_csv()).unwrap();
    let journey = dir.join("signup.toml");
    std::fs::write(&journey, signup_journey(server.port)).unwrap();
    let out = dir.join("out.json");
    sojourn_ok(&[
        "run",
        "--journey",
        journey.to_str().unwrap(),
        "--rate",
        "10",
        "--duration",
        "3s",
        "--json",
        out.to_str().unwrap(),
    ]);
    let result = read_result(&out);
    every_count_adds_up(&result);
    let (status, body) = get(server.port, "/users").expect("json-server lists its users");
    assert_eq!(status, 200);
    let records: Vec<serde_json::Value> = serde_json::from_str(&body).unwrap();
    each_journey_made_one_record_from_its_own_row(&records);
    the_log_reads_back_every_record_by_its_id_and_journey(&server.log(), &records);
}

/// Journeys: 30 due, all completed. Steps: the run's counts add up, the step rows sum to
/// them, and each step completed once per journey.
fn every_count_adds_up(r: &RunResult) {
    assert_nothing_lost(r);
    let journeys = r.config.journeys.as_ref().expect("config.journeys");
    assert_eq!((journeys.count, journeys.steps), (1, 3));
    assert_eq!(r.journeys.len(), 1, "one journey row");
    let j = &r.journeys[0].counts;
    assert_eq!(j.total(), JOURNEYS, "journeys accounted for: {j:?}");
    assert_eq!(j.completed, JOURNEYS, "every journey completed: {j:?}");
    let labels: Vec<&str> = r.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["signup/create", "signup/read", "signup/list"]);
    let mut sum = LabelCounts::default();
    for step in &r.steps {
        assert_eq!(
            step.counts.completed, JOURNEYS,
            "{}: {:?}",
            step.label, step.counts
        );
        sum.completed += step.counts.completed;
        sum.failed.merge(&step.counts.failed);
        sum.censored += step.counts.censored;
        sum.never_sent += step.counts.never_sent;
    }
    let c = &r.counts;
    assert_eq!(
        c.scheduled,
        sum.total(),
        "the step rows account for the run"
    );
    assert_eq!(
        (c.completed, c.failed, c.censored, c.never_sent),
        (sum.completed, sum.failed, sum.censored, sum.never_sent),
        "the step rows sum to the run's counts"
    );
    assert_eq!(c.scheduled, 3 * JOURNEYS);
    // The rate asked for is journeys per second, and so is the rate the verdict judges.
    let validity = r.statistics.validity.as_ref().expect("a validity verdict");
    let rate = validity.tests.iter().find(|t| t.name == TestName::Rate);
    let rate = rate.expect("a rate test");
    assert_eq!(
        rate.outcome,
        TestOutcome::Pass,
        "all 30 journeys started on time: {rate:?}"
    );
}

/// The record journey *i* created holds row *i* (order = "unique") and its own index.
fn each_journey_made_one_record_from_its_own_row(records: &[serde_json::Value]) {
    let mut by_journey: Vec<u64> = records
        .iter()
        .map(|r| {
            let j = r["journey"].as_u64().unwrap_or_else(|| panic!("{r}"));
            assert_eq!(r["email"], email(j as usize), "journey {j}'s row: {r}");
            assert_eq!(r["name"], format!("user{j}"), "journey {j}'s row: {r}");
            j
        })
        .collect();
    by_journey.sort_unstable();
    assert_eq!(by_journey, (0..JOURNEYS).collect::<Vec<_>>());
}

/// From json-server's own log: one `POST /users 201` per record, and for every record one
/// `GET /users/ID?journey=J 200` with its id and the journey that created it, and no other
/// read by id.
fn the_log_reads_back_every_record_by_its_id_and_journey(log: &str, records: &[serde_json::Value]) {
    let posts = log
        .lines()
        .filter(|l| l.starts_with("POST /users "))
        .count();
    let created = log
        .lines()
        .filter(|l| l.starts_with("POST /users 201 "))
        .count();
    let mut reads: BTreeMap<(String, String), usize> = BTreeMap::new();
    for line in log.lines() {
        let Some(rest) = line.strip_prefix("GET /users/") else {
            continue;
        };
        let (target, status) = rest.split_once(' ').unwrap_or((rest, ""));
        assert!(
            status.starts_with("200 "),
            "a read by id that failed: {line}"
        );
        let (id, query) = target.split_once('?').unwrap_or((target, ""));
        let journey = query.strip_prefix("journey=").unwrap_or(query);
        *reads
            .entry((id.to_owned(), journey.to_owned()))
            .or_default() += 1;
    }
    let mut want = BTreeMap::new();
    for r in records {
        want.insert((r["id"].to_string(), r["journey"].to_string()), 1);
    }
    assert_eq!(
        (posts, created, records.len()),
        (JOURNEYS as usize, JOURNEYS as usize, JOURNEYS as usize),
        "one created record per journey; the log:\n{log}"
    );
    assert_eq!(
        reads, want,
        "each record read back once, by its id, by the journey that created it; the log:\n{log}"
    );
}

/// A journey file that runs (its `create` extracts `id`, its `read` uses it); each row of the
/// table below breaks one thing in it.
const GOOD: &str = r#"base_url = "http://ORIGIN"

[data]
file = "users.csv"

[[journey]]
name = "signup"

  [[journey.step]]
  name = "create"
  method = "POST"
  url = "/users"
  body = '{"email": "${row.email}"}'
  extract = { id = { json = "/id" } }
  think = "10ms"

  [[journey.step]]
  name = "read"
  url = "/users/${id}"
"#;

/// One mistake in the good file: `from` replaced by `to`, and a text its line must hold.
struct Bad {
    what: &'static str,
    from: &'static str,
    to: &'static str,
    says: &'static str,
}

const BAD_FILES: &[Bad] = &[
    Bad {
        what: "unknown variable",
        from: "/users/${id}",
        to: "/users/${rows.email}",
        says: "unknown template variable ${rows.email}",
    },
    Bad {
        what: "a variable no step extracts",
        from: "/users/${id}",
        to: "/users/${token}",
        says: "uses ${token}, but no step of journey \"signup\" extracts \"token\"",
    },
    Bad {
        what: "a variable only its own step extracts",
        from: "${row.email}",
        to: "${id}",
        says: "uses ${id} in its own request, but extracts it only from its own answer",
    },
    Bad {
        what: "bad JSON pointer",
        from: r#"json = "/id""#,
        to: r#"json = "id""#,
        says: "JSON pointer \"id\" does not start with /",
    },
    Bad {
        what: "bad regex",
        from: r#"json = "/id""#,
        to: r#"regex = 'id=(\d+'"#,
        says: "does not compile",
    },
    Bad {
        what: "missing data file",
        from: r#"file = "users.csv""#,
        to: r#"file = "nobody.csv""#,
        says: "nobody.csv: cannot read it",
    },
    Bad {
        what: "missing column",
        from: "${row.email}",
        to: "${row.phone}",
        says: "users.csv has no column \"phone\"; its columns are name, email",
    },
    Bad {
        what: "unknown key",
        from: r#"method = "POST""#,
        to: r#"methd = "POST""#,
        says: "unknown key `methd`",
    },
    Bad {
        what: "bad think time",
        from: r#"think = "10ms""#,
        to: r#"think = "soon""#,
        says: "think \"soon\": \"soon\" is not a duration",
    },
];

/// The good file with `bad`'s mistake, written to `dir`, and the line the mistake is on.
fn broken(dir: &Path, origin: &str, bad: &Bad) -> (PathBuf, usize) {
    let good = GOOD.replace("ORIGIN", origin);
    let at = good
        .find(bad.from)
        .unwrap_or_else(|| panic!("{}: {:?} is not in the good file", bad.what, bad.from));
    let text = good.replacen(bad.from, bad.to, 1);
    let path = dir.join(format!("{}.toml", bad.what.replace(' ', "-")));
    std::fs::write(&path, text).unwrap();
    (path, 1 + good[..at].matches('\n').count())
}

/// What went wrong with one refusal, if anything: exit 2 and one line (blank lines aside) that
/// starts with `starts` and holds `says`.
fn refused(args: &[&str], starts: &str, says: &str) -> Option<String> {
    let out = sojourn(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let line = lines.first().copied().unwrap_or("");
    let said = line.strip_prefix("error: ").unwrap_or(line);
    let right = out.status.code() == Some(2)
        && lines.len() == 1
        && said.starts_with(starts)
        && said.contains(says);
    (!right).then(|| {
        format!(
            "sojourn {}: exit {:?}\n  said: {stderr}\n  want: {starts}…{says}…",
            args.join(" "),
            out.status.code()
        )
    })
}

#[test]
fn each_bad_journey_file_and_each_refused_flag_is_one_line_and_exit_2() {
    // One at a time: the model test beside them judges timing.
    let _guard = common::serial();
    let server = TestServer::start(false);
    let origin = server.addr.to_string();
    let dir = temp_dir("journeys-bad");
    std::fs::write(
        dir.join("users.csv"),
        "name,email\na,a@x.test\nb,b@x.test\n",
    )
    .unwrap();
    let good = dir.join("good.toml");
    std::fs::write(&good, GOOD.replace("ORIGIN", &origin)).unwrap();
    let good = good.to_str().unwrap();
    // The good file runs, so each row below fails for its own mistake alone.
    sojourn_ok(&[
        "run",
        "--journey",
        good,
        "--rate",
        "10",
        "--duration",
        "200ms",
    ]);
    let mut wrong = Vec::new();
    for bad in BAD_FILES {
        let (path, line) = broken(&dir, &origin, bad);
        let file = path.to_str().unwrap();
        let args = ["run", "--journey", file, "--rate", "10", "--duration", "1s"];
        let starts = format!("{file}:{line}: ");
        wrong.extend(refused(&args, &starts, bad.says).map(|w| format!("{}: {w}", bad.what)));
    }
    wrong.extend(rows_run_out(&dir, &origin));
    wrong.extend(sim_refuses_a_bad_file(&dir, &origin));
    wrong.extend(refused_flags(&dir, good));
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `sim --journey` reads the file with the same checks.
fn sim_refuses_a_bad_file(dir: &Path, origin: &str) -> Option<String> {
    let bad = BAD_FILES
        .iter()
        .find(|b| b.what == "bad think time")
        .unwrap();
    let (path, line) = broken(dir, origin, bad);
    let file = path.to_str().unwrap();
    let args = ["sim", "--journey", file, "--scenario", "healthy"];
    refused(&args, &format!("{file}:{line}: "), bad.says).map(|w| format!("sim: {w}"))
}

/// `order = "unique"` with 2 rows and 10 journeys due (10/s for 1 s): refused before the run,
/// naming the data file.
fn rows_run_out(dir: &Path, origin: &str) -> Option<String> {
    let unique = Bad {
        what: "unique rows run out",
        from: r#"file = "users.csv""#,
        to: "file = \"users.csv\"\norder = \"unique\"",
        says: "the file has 2 rows for 10 scheduled journeys",
    };
    let (path, _) = broken(dir, origin, &unique);
    let data = dir.join("users.csv");
    let args = [
        "run",
        "--journey",
        path.to_str().unwrap(),
        "--rate",
        "10",
        "--duration",
        "1s",
    ];
    refused(&args, &format!("{}: ", data.display()), unique.says)
        .map(|w| format!("{}: {w}", unique.what))
}

/// Flags that mean nothing beside `--journey`, each refused by name.
fn refused_flags(dir: &Path, good: &str) -> Vec<String> {
    let targets = dir.join("targets.txt");
    std::fs::write(&targets, "GET http://127.0.0.1:9/\n").unwrap();
    let samples = dir.join("samples.csv");
    let (targets, samples) = (targets.to_str().unwrap(), samples.to_str().unwrap());
    let rows: [(&[&str], &str); 7] = [
        (&["--connections", "5"], "--connections"),
        (&["--closed"], "--rate"),
        (&["--targets", targets], "--targets"),
        (&["http://127.0.0.1:9/"], "URL"),
        (&["--http2"], "--http2"),
        (&["--max-journeys", "0"], "--max-journeys"),
        (&["--samples", samples], "--samples"),
    ];
    rows.iter()
        .filter_map(|(flag, names)| {
            let mut args = vec!["run", "--journey", good, "--rate", "10", "--duration", "1s"];
            args.extend_from_slice(flag);
            refused(&args, "", names).map(|w| format!("{}: {w}", flag[0]))
        })
        .collect()
}

/// The rate of a journey run is journeys per second, in each shard and in their merge, and the
/// validity verdict judges it against the journeys scheduled, not the steps (two per journey).
/// 50 journeys a shard: achieved counts them over the time to the last answer, which a
/// handful of journeys would make much shorter than the schedule.
#[test]
fn sharded_journeys_merge_at_the_journey_rate_asked_for() {
    // One at a time: the model test beside them judges timing.
    let _guard = common::serial();
    let server = TestServer::start(false);
    let dir = temp_dir("journeys-shards");
    let file = dir.join("two.toml");
    let two_steps = format!(
        "base_url = \"http://{}\"\n\n[[journey]]\nname = \"two\"\n\n  [[journey.step]]\n  \
         name = \"a\"\n  url = \"/a\"\n\n  [[journey.step]]\n  name = \"b\"\n  url = \"/b\"\n",
        server.addr
    );
    std::fs::write(&file, two_steps).unwrap();
    let shards: Vec<(PathBuf, Child)> = (0..2)
        .map(|k| {
            let out = dir.join(format!("shard{k}.json"));
            let shard = format!("{k}/2");
            let child = Command::new(env!("CARGO_BIN_EXE_sojourn"))
                .args(["run", "--journey", file.to_str().unwrap(), "--rate", "100"])
                .args(["--duration", "1s", "--shard", &shard, "--json"])
                .arg(&out)
                .stdout(Stdio::null())
                .spawn()
                .unwrap();
            (out, child)
        })
        .collect();
    let mut paths = Vec::new();
    for (out, mut child) in shards {
        assert!(child.wait().unwrap().success(), "shard {}", out.display());
        rate_is_journeys_per_second(&read_result(&out), 50.0);
        paths.push(out.to_str().unwrap().to_owned());
    }
    let merged = dir.join("merged.json");
    let mut args = vec!["merge", "--json", merged.to_str().unwrap()];
    args.extend(paths.iter().map(String::as_str));
    sojourn_ok(&args);
    let merged = read_result(&merged);
    assert_nothing_lost(&merged);
    rate_is_journeys_per_second(&merged, 100.0);
}

/// Every journey completed with both its steps, and the rate, achieved and judged, is the
/// journeys' (`rate` journeys per second), not the steps'.
fn rate_is_journeys_per_second(r: &RunResult, rate: f64) {
    let journeys: u64 = r.journeys.iter().map(|j| j.counts.completed).sum();
    assert_eq!(r.counts.completed, 2 * journeys, "{:?}", r.counts);
    let off = r.rate.achieved / rate - 1.0;
    assert!(
        off.abs() < 0.1,
        "achieved {} journeys/s, asked {rate}",
        r.rate.achieved
    );
    let validity = r.statistics.validity.as_ref().expect("a validity verdict");
    let test = validity.tests.iter().find(|t| t.name == TestName::Rate);
    let test = test.expect("a rate test");
    assert_eq!(test.outcome, TestOutcome::Pass, "{test:?}");
}

//! Reality against the model: `sojourn serve` serves a scenario, `sojourn run` measures it over
//! real sockets, `sojourn sim` simulates the same run in virtual time, and the response-time
//! percentiles from p50 to p99.9 must agree.
//!
//! Tolerance, per percentile: |real − sim| ≤ 2 ms + 3% of the simulated value, plus — for
//! percentiles in the tail, above the body of the distribution where stalls and queues live —
//! what the real machine measurably added and the exact model cannot know:
//! - the server's own lateness (its truth log's `departure − due`, p99) times one plus the
//!   deepest queue the model predicts: a request that waited behind k others in a FIFO inherits
//!   their lateness too. This covers a 2-core machine releasing a thousand held answers (they
//!   cannot all leave in the same instant) and a one-worker server whose ~0.1 ms timer lateness
//!   adds up over a backlog of 90.
//! - the generator's own dispatch lag (p99), which the run reports and includes in its times.
//!
//! The fixed part covers loopback round trips (~0.1–0.5 ms) and where a percentile falls on a
//! steep wedge. A model error is far outside it: measured from the send, or with unlimited
//! workers for every-nth, the simulated p90 would be 1 ms against a real 130 ms.
//!
//! The allowance comes from what the same run measured, so each measurement must first stay
//! under a ceiling set without it: a regression then fails that check instead of widening the
//! allowance. The server's lateness p99 may be 0.5 ms, plus 60 µs for each request the scenario
//! holds and releases at once (two cores answer a thousand held requests in about 20–30 ms),
//! plus twice the machine's own hiccup p99 (the run's control meter, an idle process that only
//! sleeps; never the generator's own meter thread, which its own work makes late); the generator's dispatch lag p99 may be 2 ms, plus 10 µs for each held request (it
//! reads the released answers all at once, and requests due meanwhile wait for it), plus the
//! same machine term.
//!
//! Durations are cut down (stalls early, 4–5 s runs) so the whole file takes well under 30 s.
//! Run with `--nocapture` for the table docs/validation.md records; set `SOJOURN_BIN` to
//! validate another build (e.g. `target/release/sojourn`).
mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{assert_nothing_lost, read_result, serial, temp_dir};
use sojourn_core::by_stage;
use sojourn_core::result::HistogramSummary;
use sojourn_core::{Arrival, End, Rate, RunResult, Schedule, Stages};
use sojourn_scenario::truth::read_csv;
use sojourn_scenario::{Override, Scenario};

use common::tolerance::*;

/// The binary under test: this build's, or `SOJOURN_BIN`.
fn bin() -> String {
    std::env::var("SOJOURN_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sojourn").to_string())
}

/// A `sojourn serve` child process, killed when dropped (also when a test panics).
struct Served {
    child: Child,
    addr: String,
}

impl Served {
    fn start(case: &Case, truth: &Path) -> Served {
        let mut cmd = Command::new(bin());
        cmd.args([
            "serve",
            "--scenario",
            case.scenario,
            "--listen",
            "127.0.0.1:0",
        ]);
        cmd.args(["--truth", path(truth)]);
        for s in case.sets {
            cmd.args(["--set", s]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting sojourn serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .map(str::to_string);
        let served = Served {
            child,
            addr: addr.unwrap_or_default(),
        };
        assert!(served.addr.starts_with("127.0.0.1:"), "first line {line:?}");
        served
    }

    /// SIGTERM, so the server flushes its truth log, then wait for it.
    fn stop(mut self) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let status = self.child.wait().expect("waiting for sojourn serve");
        assert!(status.success(), "sojourn serve exited with {status}");
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn sojourn(args: &[&str]) {
    let out = Command::new(bin())
        .args(args)
        .output()
        .expect("running sojourn");
    assert!(
        out.status.success(),
        "sojourn {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temp paths are UTF-8")
}

struct Case {
    scenario: &'static str,
    sets: &'static [&'static str],
    rate: f64,
    duration: Duration,
    /// The most requests the scenario holds at its gate and releases at once.
    held: u64,
    /// Shaped load (`--stages`) instead of `rate` for `duration`.
    stages: Option<&'static str>,
}

impl Case {
    fn load_args(&self) -> Vec<String> {
        if let Some(stages) = self.stages {
            return ["--stages", stages, "--threads", "2"]
                .map(String::from)
                .to_vec();
        }
        let d = format!("{}ms", self.duration.as_millis());
        let rate = self.rate.to_string();
        ["--rate", &rate, "--duration", &d, "--threads", "2"]
            .map(String::from)
            .to_vec()
    }

    /// The deepest admission queue the model predicts for this run.
    fn model_peak_queue(&self) -> u64 {
        let o: Vec<Override> = self.sets.iter().map(|s| s.parse().unwrap()).collect();
        let scenario = Scenario::builtin(self.scenario, &o).unwrap();
        let schedule = match self.stages {
            Some(text) => {
                Schedule::staged(Arrival::Constant, Stages::parse(text).unwrap()).unwrap()
            }
            None => Schedule::new(
                Arrival::Constant,
                Rate::per_second(self.rate).unwrap(),
                End::After(self.duration),
            )
            .unwrap(),
        };
        let plan = sojourn_sim::Plan::new(sojourn_sim::Client::Open {
            schedule,
            connections: 2048,
            threads: 2,
        });
        sojourn_sim::simulate(&scenario, &plan).server.peak_queue
    }
}

/// What the real run measured, and the server's p99 lateness (ms) from its truth log.
fn reality(case: &Case, dir: &Path) -> (RunResult, f64) {
    measure(case, dir, "real", &case.load_args())
}

/// One real run with `load` (the load's flags) against a fresh server of `case`, and the
/// server's p99 lateness (ms) from its truth log.
fn measure(case: &Case, dir: &Path, name: &str, load: &[String]) -> (RunResult, f64) {
    let (json, truth) = (
        dir.join(format!("{name}.json")),
        dir.join(format!("{name}.truth.csv")),
    );
    let server = Served::start(case, &truth);
    let url = format!("http://{}/api", server.addr);
    let mut args = vec!["run".to_string(), url, "--json".into(), path(&json).into()];
    args.extend_from_slice(load);
    sojourn(&args.iter().map(String::as_str).collect::<Vec<_>>());
    server.stop();
    let file = std::fs::File::open(&truth).unwrap();
    let records = read_csv(std::io::BufReader::new(file)).unwrap();
    let mut late: Vec<u64> = records
        .iter()
        .map(|r| r.departure.saturating_sub(r.due).as_nanos() as u64)
        .collect();
    late.sort_unstable();
    let p99 = late[(late.len() * 99 / 100).min(late.len() - 1)];
    (read_result(&json), p99 as f64 / 1e6)
}

fn model(case: &Case, dir: &Path) -> RunResult {
    simulate(case, dir, "open", &case.load_args())
}

/// `sojourn sim` of `case` with `--client client` and `load`.
fn simulate(case: &Case, dir: &Path, client: &str, load: &[String]) -> RunResult {
    let json = dir.join(format!("sim-{client}.json"));
    let mut args: Vec<String> = ["sim", "--scenario", case.scenario, "--client", client]
        .map(String::from)
        .to_vec();
    for s in case.sets {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    args.extend(["--json".to_string(), path(&json).to_string()]);
    args.extend_from_slice(load);
    sojourn(&args.iter().map(String::as_str).collect::<Vec<_>>());
    read_result(&json)
}

fn ms_at(r: &RunResult, p: f64) -> f64 {
    r.histograms.response.percentiles.get(p).unwrap() as f64 / 1e6
}

/// How late the machine woke a process that only sleeps, p99, during the real run: the control
/// meter's, the only one that may excuse lateness as the machine's.
fn floor_p99_ms(r: &RunResult) -> f64 {
    let control = r
        .histograms
        .control_hiccup
        .as_ref()
        .expect("sojourn run measures the machine with a control process");
    control.percentiles.get(99.0).unwrap_or(0) as f64 / 1e6
}

fn dispatch_p99_ms(r: &RunResult) -> f64 {
    let lag = r.histograms.dispatch_lag.as_ref();
    lag.and_then(|d| d.percentiles.get(99.0)).unwrap_or(0) as f64 / 1e6
}

fn check(case: Case) {
    let _guard = serial();
    let dir = temp_dir(&format!("validation-{}", case.scenario));
    let (real, server_late) = reality(&case, &dir);
    let sim = model(&case, &dir);
    assert_nothing_lost(&real);
    assert_eq!(real.counts.scheduled, sim.counts.scheduled, "same schedule");
    assert_eq!(real.counts.completed, real.counts.scheduled, "all answered");
    let queue = case.model_peak_queue();
    let (dispatch, floor) = (dispatch_p99_ms(&real), floor_p99_ms(&real));
    eprintln!(
        "{}: server lateness p99 {server_late:.3} ms, model peak queue {queue}, dispatch lag p99 {dispatch:.3} ms, machine hiccups p99 {floor:.3} ms",
        case.scenario,
    );
    let late_ceiling = SERVER_LATE_MS + PER_HELD_MS * case.held as f64 + 2.0 * floor;
    assert!(
        server_late <= late_ceiling,
        "{}: server lateness p99 {server_late:.3} ms over its ceiling {late_ceiling:.3} ms",
        case.scenario
    );
    let dispatch_ceiling = DISPATCH_MS + DISPATCH_PER_HELD_MS * case.held as f64 + 2.0 * floor;
    assert!(
        dispatch <= dispatch_ceiling,
        "{}: dispatch lag p99 {dispatch:.3} ms over its ceiling {dispatch_ceiling:.3} ms",
        case.scenario
    );
    let machine = server_late * (1 + queue) as f64 + dispatch;
    let mut failures = agreement(
        case.scenario,
        &real.histograms.response,
        &sim.histograms.response,
        machine,
        floor,
        &|_| false,
    );
    let (real_stages, sim_stages) = (by_stage::stages(&real), by_stage::stages(&sim));
    assert_eq!(real_stages.len(), sim_stages.len(), "the same stages");
    for (r, m) in real_stages.iter().zip(&sim_stages) {
        let name = format!("{} stage {}", case.scenario, r.title());
        let (r, m) = (r.response().unwrap(), m.response().unwrap());
        // A stage is a part of the run: compare only the percentiles it has the samples for
        // (ten or more beyond), as a whole run's p99.9 rests on a hundred.
        let thin = |p: f64| (r.len() as f64) * (1.0 - p / 100.0) < 10.0;
        let (r, m) = (summary(&r), summary(&m));
        failures.extend(agreement(&name, &r, &m, machine, floor, &thin));
    }
    assert!(failures.is_empty(), "{}: {failures:#?}", case.scenario);
}

fn summary(h: &hdrhistogram::Histogram<u64>) -> HistogramSummary {
    HistogramSummary::of(h, &sojourn_core::record::new_histogram())
}

#[test]
fn hiccup_real_run_matches_the_simulation() {
    check(Case {
        scenario: "hiccup",
        sets: &["hiccup.at=2s", "hiccup.duration=1s"],
        rate: 1000.0,
        duration: Duration::from_secs(5),
        held: 1000,
        stages: None,
    });
}

/// A shaped run (ramp up, hold through a 1 s stall, ramp down) agrees with the model as a
/// whole and stage by stage: the stall's wedge falls in the hold, the ramps stay at baseline.
#[test]
fn staged_hiccup_real_run_matches_the_simulation() {
    check(Case {
        scenario: "hiccup",
        sets: &["hiccup.at=2s", "hiccup.duration=1s"],
        rate: 0.0,
        duration: Duration::ZERO,
        held: 800,
        stages: Some("up=1s@100..800,hold=3s@800,down=1s@800..100"),
    });
}

#[test]
fn gc_pauses_real_run_matches_the_simulation() {
    check(Case {
        scenario: "gc-pauses",
        sets: &[
            "gc-pauses.every=1s",
            "gc-pauses.first=500ms",
            "gc-pauses.duration=200ms",
        ],
        rate: 500.0,
        duration: Duration::from_secs(4),
        held: 100,
        stages: None,
    });
}

#[test]
fn every_nth_real_run_matches_the_simulation() {
    check(Case {
        scenario: "every-nth",
        sets: &[],
        rate: 450.0,
        duration: Duration::from_secs(5),
        held: 0,
        stages: None,
    });
}

/// The load flags of a paced closed loop: `connections` connections sharing `case`'s slots
/// (`sojourn sim --client paced` takes them without the leading `--closed`).
fn paced_args(case: &Case, connections: usize) -> Vec<String> {
    let mut args = vec!["--closed".to_string(), "-c".into(), connections.to_string()];
    args.extend(case.load_args());
    args
}

fn service_ms_at(r: &RunResult, p: f64) -> f64 {
    r.histograms.service.percentiles.get(p).unwrap() as f64 / 1e6
}

/// A 1 s stall at 1,000 req/s, 10 connections, 1 ms a request. The paced closed loop's
/// from-send clock hides the stall, as hey -q's does; its from-slot clock shows the same wedge
/// as the open loop and as the model; its slots never reached are the model's.
#[test]
fn paced_closed_loop_hides_a_stall_from_the_send_and_shows_it_from_the_slot() {
    let _guard = serial();
    let case = Case {
        scenario: "hiccup",
        sets: &["hiccup.at=2s", "hiccup.duration=1s", "hiccup.baseline=1ms"],
        rate: 1000.0,
        duration: Duration::from_secs(5),
        held: 1000,
        stages: None,
    };
    let dir = temp_dir("validation-paced");
    let paced_load = paced_args(&case, 10);
    let (paced, paced_late) = measure(&case, &dir, "paced", &paced_load);
    let (open, open_late) = measure(&case, &dir, "open", &case.load_args());
    let model = simulate(&case, &dir, "paced", &paced_load[1..]);
    assert_eq!(paced.mode, sojourn_core::Mode::Paced);
    assert_eq!(model.mode, sojourn_core::Mode::Paced);
    assert_nothing_lost(&paced);
    assert_eq!(paced.counts.scheduled, model.counts.scheduled, "same slots");
    assert_eq!(paced.counts.never_sent, model.counts.never_sent);
    // From the send, the stall is ten requests in five thousand: below p99.
    let (from_send, from_slot) = (service_ms_at(&paced, 99.0), ms_at(&paced, 99.0));
    eprintln!(
        "paced: from send p99 {from_send:.2} ms, from slot p99 {from_slot:.2} ms; open p99 {:.2} ms; model from slot p99 {:.2} ms, from send {:.2} ms",
        ms_at(&open, 99.0),
        ms_at(&model, 99.0),
        service_ms_at(&model, 99.0)
    );
    assert!(from_send < 50.0, "from send p99 {from_send:.2} ms");
    assert!(from_slot > 800.0, "from slot p99 {from_slot:.2} ms");
    // From the slot, the wedge is the open loop's and the model's, within the validation
    // tolerance (the machine's share: the server's lateness over the held requests).
    let machine = paced_late.max(open_late) * (1 + case.held) as f64;
    for (what, other) in [("open loop", &open), ("model", &model)] {
        for p in PERCENTILES {
            let (r, m) = (ms_at(&paced, p), ms_at(other, p));
            let tail = m > ms_at(other, 50.0) + ABSOLUTE_MS;
            let allowed = ABSOLUTE_MS + RELATIVE * m + if tail { machine } else { 0.0 };
            assert!(
                (r - m).abs() <= allowed,
                "p{p}: paced from slot {r:.2} ms, {what} {m:.2} ms, allowed ±{allowed:.2}"
            );
        }
    }
}

/// A stall that lasts past the end of the run: every connection is stuck on one request, and
/// the slots behind it are never reached. Paced tools simply never send them; sojourn counts
/// them, exactly as the model does.
#[test]
fn paced_closed_loop_counts_the_slots_it_never_reached() {
    let _guard = serial();
    // 100 req/s on 10 connections, 1 ms a request: answers leave 1 ms after their slot and
    // slots fall due every 10 ms, so the stall at 1.5055 s is 4.5 ms from either side. (The
    // server's clock starts when the first request arrives, late by its connect; a margin of
    // a millisecond was not enough.)
    let case = Case {
        scenario: "hiccup",
        sets: &[
            "hiccup.at=1505500us",
            "hiccup.duration=1s",
            "hiccup.baseline=1ms",
        ],
        rate: 100.0,
        duration: Duration::from_secs(2),
        held: 10,
        stages: None,
    };
    let dir = temp_dir("validation-paced-end");
    let load = paced_args(&case, 10);
    let (paced, _) = measure(&case, &dir, "paced", &load);
    let model = simulate(&case, &dir, "paced", &load[1..]);
    assert_nothing_lost(&paced);
    assert_eq!(paced.counts.scheduled, 200);
    assert_eq!(model.counts.scheduled, 200);
    // Ten stuck requests (slots 1.51 … 1.60 s, one per connection), answered when the gate
    // opens; the other 39 slots of the last half-second were never reached.
    assert_eq!(model.counts.never_sent, 39, "{:?}", model.counts);
    assert_eq!(paced.counts.never_sent, model.counts.never_sent);
    assert_eq!(paced.counts.completed, model.counts.completed);
}

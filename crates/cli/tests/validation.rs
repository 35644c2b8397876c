//! Reality against the model: `sojourn serve` serves a scenario, `sojourn run` measures it over
//! real sockets, `sojourn sim` simulates the same run in virtual time, and the response-time
//! percentiles from p50 to p99.9 must agree.
//!
//! Tolerance: fixed ceilings per scenario, in milliseconds (`common/tolerance.rs`), chosen from
//! observed runs with a margin; docs/validation.md lists them beside what was observed. One for
//! the body (p50: loopback, parsing and timer wake-ups, well under a millisecond) and one for
//! the tail (p90 and up: what two cores add when they release a burst of held answers or drain
//! a one-worker backlog). The server's lateness p99 (its truth log's `departure − due`) and the
//! generator's dispatch lag p99 must each stay under a fixed ceiling of their own. Nothing in an
//! allowance comes from the run being judged, so a late server cannot buy its own excuse.
//!
//! The machine's noise is judged apart: under CI=true a run whose control hiccup meter (an idle
//! process beside the run) reports a p99 over 1 ms is run again, up to three runs, then fails
//! as too noisy.
//!
//! Each scenario is also served late on purpose (its baseline raised while `sojourn sim` keeps
//! the true value): the agreement check must reject it.
//!
//! Durations are cut down (stalls early, 4–5 s runs). Run with `--nocapture` for the table
//! docs/validation.md records; set `SOJOURN_BIN` to validate another build (e.g.
//! `target/release/sojourn`).
mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{assert_nothing_lost, read_result, serial, temp_dir};
use sojourn_core::by_stage;
use sojourn_core::result::HistogramSummary;
use sojourn_core::RunResult;
use sojourn_scenario::truth::read_csv;

use common::tolerance::*;
use sojourn_testkit::control::{
    on_a_quiet_machine, quiet_enough, Quiet, NOISY_FLOOR_MS, NOISY_OTHER_CORES,
};

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
        for s in case.sets.iter().chain(case.served_late) {
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
    /// Overrides for `sojourn serve` alone, after `sets`: a server late on purpose, which the
    /// model (given `sets` only) does not know about.
    served_late: &'static [&'static str],
    rate: f64,
    duration: Duration,
    /// Shaped load (`--stages`) instead of `rate` for `duration`.
    stages: Option<&'static str>,
    ceilings: Ceilings,
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
}

/// What the real run measured and the server's p99 lateness (ms) from its truth log, on a
/// machine quiet enough to judge them.
fn reality(case: &Case, dir: &Path) -> (RunResult, f64) {
    on_a_quiet_machine(case.scenario, || {
        measure(case, dir, "real", &case.load_args())
    })
}

/// One real run with `load` (the load's flags) against a fresh server of `case`: the result,
/// the server's p99 lateness (ms) from its truth log, and the control meter's p99 (ms), if the
/// run reported one.
fn measure(
    case: &Case,
    dir: &Path,
    name: &str,
    load: &[String],
) -> ((RunResult, f64), Option<f64>) {
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
    let floor = control_floor_ms(&json);
    ((read_result(&json), p99 as f64 / 1e6), floor)
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

fn dispatch_p99_ms(r: &RunResult) -> f64 {
    let lag = r.histograms.dispatch_lag.as_ref();
    lag.and_then(|d| d.percentiles.get(99.0)).unwrap_or(0) as f64 / 1e6
}

/// The run's in-process hiccup meter, p99 (ms): printed beside the figures, as the machine's
/// noise as the generator saw it, never used to excuse them.
fn own_hiccups_p99_ms(r: &RunResult) -> f64 {
    let own = r.histograms.hiccup.as_ref();
    own.and_then(|h| h.percentiles.get(99.0)).unwrap_or(0) as f64 / 1e6
}

/// What a real run of `case` showed against its model, in words: the measurements over their
/// ceilings, and the percentiles that disagree (whole run and stage by stage).
struct Verdict {
    over: Vec<String>,
    disagree: Vec<String>,
}

fn judge(case: &Case) -> Verdict {
    let dir = temp_dir(&format!("validation-{}", case.scenario));
    let (real, server_late) = reality(case, &dir);
    let sim = model(case, &dir);
    assert_nothing_lost(&real);
    assert_eq!(real.counts.scheduled, sim.counts.scheduled, "same schedule");
    assert_eq!(real.counts.completed, real.counts.scheduled, "all answered");
    let dispatch = dispatch_p99_ms(&real);
    eprintln!(
        "{}{:?}: server lateness p99 {server_late:.3} ms, dispatch lag p99 {dispatch:.3} ms, in-process meter p99 {:.3} ms (the generator's own; it excuses nothing)",
        case.scenario,
        case.served_late,
        own_hiccups_p99_ms(&real)
    );
    let over = lateness(case.scenario, server_late, dispatch, &case.ceilings);
    let mut disagree = agreement(
        case.scenario,
        &real.histograms.response,
        &sim.histograms.response,
        &case.ceilings,
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
        disagree.extend(agreement(&name, &r, &m, &case.ceilings, &thin));
    }
    Verdict { over, disagree }
}

/// The real run of `case` agrees with the model, with the server and the generator on time.
fn check(case: Case) {
    let _guard = serial();
    let v = judge(&case);
    assert!(
        v.over.is_empty() && v.disagree.is_empty(),
        "{}: {:#?}",
        case.scenario,
        [v.over, v.disagree].concat()
    );
}

/// `case` served late on purpose: the agreement check must reject it. (The lateness ceilings
/// cannot see it: the server's truth log measures lateness against its own, raised, baseline.)
fn rejected(case: Case) {
    let _guard = serial();
    let v = judge(&case);
    eprintln!(
        "{}{:?}: rejected for {:#?}",
        case.scenario, case.served_late, v.disagree
    );
    assert!(
        !v.disagree.is_empty(),
        "{} served with {:?}, the model without: the agreement check let it through",
        case.scenario,
        case.served_late
    );
}

fn summary(h: &hdrhistogram::Histogram<u64>) -> HistogramSummary {
    HistogramSummary::of(h, &sojourn_core::record::new_histogram())
}

fn hiccup() -> Case {
    Case {
        scenario: "hiccup",
        sets: &["hiccup.at=2s", "hiccup.duration=1s"],
        served_late: &[],
        rate: 1000.0,
        duration: Duration::from_secs(5),
        stages: None,
        ceilings: HICCUP,
    }
}

fn gc_pauses() -> Case {
    Case {
        scenario: "gc-pauses",
        sets: &[
            "gc-pauses.every=1s",
            "gc-pauses.first=500ms",
            "gc-pauses.duration=200ms",
        ],
        served_late: &[],
        rate: 500.0,
        duration: Duration::from_secs(4),
        stages: None,
        ceilings: GC_PAUSES,
    }
}

fn every_nth() -> Case {
    Case {
        scenario: "every-nth",
        sets: &[],
        served_late: &[],
        rate: 450.0,
        duration: Duration::from_secs(5),
        stages: None,
        ceilings: EVERY_NTH,
    }
}

/// The fixed ceilings (ms) of each case: the largest difference or lateness observed on a
/// quiet machine, with a margin (docs/validation.md lists both). The body's is one for all:
/// under 0.5 ms was observed everywhere, and a server 1 ms late on every request must fail.
/// The generator's dispatch lag when a stall releases a thousand held answers at once: it reads
/// them in one go, and the requests due meanwhile wait for it (about 5 µs an answer in the debug
/// build). Observed 0.28–5.54 ms; a fixed 12 ms, the rule's old 2 ms + 10 µs per held request.
const BURST_DISPATCH_MS: f64 = 12.0;
const HICCUP: Ceilings = Ceilings {
    body_ms: 0.8,
    tail_ms: 60.0,
    server_late_ms: 60.0,
    dispatch_ms: BURST_DISPATCH_MS,
};
const STAGED_HICCUP: Ceilings = HICCUP;
const GC_PAUSES: Ceilings = Ceilings {
    body_ms: 0.8,
    tail_ms: 9.0,
    server_late_ms: 12.0,
    dispatch_ms: 4.0,
};
const EVERY_NTH: Ceilings = Ceilings {
    body_ms: 0.8,
    tail_ms: 15.0,
    server_late_ms: 2.0,
    dispatch_ms: 4.0,
};
/// Hiccup with a 1 ms baseline, paced from the slot: ten connections meet the stall, so the
/// server never releases more than ten answers at once.
const PACED_HICCUP: Ceilings = Ceilings {
    body_ms: 0.8,
    tail_ms: 40.0,
    server_late_ms: 3.0,
    dispatch_ms: 4.0,
};
/// The pause (ms) at the very end of a paced run that may leave its last slots unsent where
/// the model, which never pauses, sent them all. Observed: a 10 ms pause of the generator and
/// the server at once, 9 ms before the end of a 5 s run (the server's truth log: one answer
/// 10 ms late, the next request sent after the end), left 5 of 5,000 slots never sent; the
/// rest of that run was on time (control meter p99 0.076 ms). A paced loop that lost slots
/// anywhere else, or more than the end's few, is over it.
const END_PAUSE_MS: f64 = 10.0;
/// The same hiccup with a 1 ms baseline, open loop: a thousand held answers released at once,
/// later than at the 10 ms baseline (server lateness 20–67 ms against 16–40).
const OPEN_HICCUP_1MS: Ceilings = Ceilings {
    body_ms: 0.8,
    tail_ms: 75.0,
    server_late_ms: 90.0,
    dispatch_ms: BURST_DISPATCH_MS,
};

#[test]
fn hiccup_real_run_matches_the_simulation() {
    check(hiccup());
}

/// A shaped run (ramp up, hold through a 1 s stall, ramp down) agrees with the model as a
/// whole and stage by stage: the stall's wedge falls in the hold, the ramps stay at baseline.
#[test]
fn staged_hiccup_real_run_matches_the_simulation() {
    check(Case {
        rate: 0.0,
        duration: Duration::ZERO,
        stages: Some("up=1s@100..800,hold=3s@800,down=1s@800..100"),
        ceilings: STAGED_HICCUP,
        ..hiccup()
    });
}

#[test]
fn gc_pauses_real_run_matches_the_simulation() {
    check(gc_pauses());
}

#[test]
fn every_nth_real_run_matches_the_simulation() {
    check(every_nth());
}

/// Every request 1 ms late (the baseline 11 ms instead of 10): the body is off by a
/// millisecond, whatever the machine's floor below 1 ms.
#[test]
fn hiccup_served_1ms_late_is_rejected() {
    rejected(Case {
        served_late: &["hiccup.baseline=11ms"],
        ..hiccup()
    });
}

#[test]
fn hiccup_served_2ms_late_is_rejected() {
    rejected(Case {
        served_late: &["hiccup.baseline=12ms"],
        ..hiccup()
    });
}

#[test]
fn gc_pauses_served_1ms_late_is_rejected() {
    rejected(Case {
        served_late: &["gc-pauses.baseline=11ms"],
        ..gc_pauses()
    });
}

#[test]
fn gc_pauses_served_2ms_late_is_rejected() {
    rejected(Case {
        served_late: &["gc-pauses.baseline=12ms"],
        ..gc_pauses()
    });
}

/// One worker, each request 0.5 ms late (1.5 ms instead of 1 ms): the worker is busy 85% of
/// the time instead of 63%, the backlog behind each 200 ms pause drains more slowly (the model
/// alone puts p90 28 ms higher), and requests queue between pauses too. (1 ms late would put
/// the one worker past its capacity: a model error far larger than any lateness.)
#[test]
fn every_nth_served_half_a_millisecond_late_is_rejected() {
    rejected(Case {
        served_late: &["every-nth.baseline=1500us"],
        ..every_nth()
    });
}

/// The noisy-machine rule, with stand-in runs that report the floors given (ms; `None`: no
/// control meter) and no other work: which run is judged, and how many were made.
fn judged_run(ci: bool, floors: &[Option<f64>]) -> (usize, usize) {
    let quiets: Vec<Quiet> = floors
        .iter()
        .map(|&floor| Quiet {
            floor,
            freeze: None,
            other_cores: Some(0.0),
        })
        .collect();
    judged_quiets(ci, &quiets)
}

fn judged_quiets(ci: bool, quiets: &[Quiet]) -> (usize, usize) {
    let mut made = 0;
    let judged = quiet_enough(ci, "stand-in", || {
        made += 1;
        (made, quiets[made - 1])
    });
    (judged, made)
}

#[test]
fn a_run_on_a_quiet_machine_or_of_unknown_floor_is_judged_as_it_is() {
    assert_eq!(judged_run(true, &[Some(0.4)]), (1, 1));
    assert_eq!(judged_run(true, &[Some(NOISY_FLOOR_MS)]), (1, 1));
    // No control meter: the floor is unknown, which triggers nothing (and excuses nothing).
    assert_eq!(judged_run(true, &[None]), (1, 1));
    // Outside CI a noisy run is judged too, with a line saying so.
    assert_eq!(judged_run(false, &[Some(3.0)]), (1, 1));
}

/// The floor is the control meter's, read from the result file; the in-process meter's is
/// never taken in its place.
#[test]
fn the_floor_is_the_control_meters_p99_and_only_that() {
    let dir = temp_dir("validation-floor");
    let file = |name: &str, histograms: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("{{\"histograms\": {{{histograms}}}}}")).unwrap();
        path
    };
    let meter = |p99: u64| format!("{{\"unit\": \"ns\", \"percentiles\": {{\"99\": {p99}}}}}");
    let both = file(
        "both.json",
        &format!(
            "\"hiccup\": {}, \"control_hiccup\": {}",
            meter(9_000_000),
            meter(250_000)
        ),
    );
    assert_eq!(control_floor_ms(&both), Some(0.25));
    let own_only = file("own.json", &format!("\"hiccup\": {}", meter(9_000_000)));
    assert_eq!(control_floor_ms(&own_only), None);
}

#[test]
fn under_ci_a_noisy_run_is_run_again_and_the_first_quiet_one_judged() {
    assert_eq!(judged_run(true, &[Some(1.5), Some(0.3), Some(0.2)]), (2, 2));
    assert_eq!(judged_run(true, &[Some(1.5), Some(2.5), Some(0.1)]), (3, 3));
}

#[test]
#[should_panic(expected = "the machine was too noisy to judge this run in 3 runs")]
fn under_ci_three_noisy_runs_fail_as_too_noisy() {
    judged_run(true, &[Some(1.5), Some(2.5), Some(1.1), Some(0.1)]);
}

/// A quiet control meter beside busy neighbours (which it does not see) is a noisy machine
/// too; other work that nobody could count triggers nothing.
#[test]
fn other_work_over_half_a_core_is_a_noisy_machine_whatever_the_floor() {
    let quiet = |other_cores| Quiet {
        floor: Some(0.05),
        freeze: None,
        other_cores,
    };
    let busy = quiet(Some(NOISY_OTHER_CORES + 0.1));
    assert_eq!(judged_quiets(true, &[busy, quiet(Some(0.1))]), (2, 2));
    assert_eq!(
        judged_quiets(true, &[quiet(Some(NOISY_OTHER_CORES))]),
        (1, 1)
    );
    assert_eq!(judged_quiets(true, &[quiet(None)]), (1, 1));
}

/// A pause of the whole machine (the control meter's longest oversleep) makes a run noisy
/// where the test judges pauses: 20 ms or more, whatever the p99; below it, or not judged,
/// nothing.
#[test]
fn a_pause_of_the_machine_is_noisy_where_judged() {
    let paused = |freeze| Quiet {
        floor: Some(0.05),
        freeze,
        other_cores: Some(0.0),
    };
    assert_eq!(
        judged_quiets(true, &[paused(Some(35.0)), paused(Some(2.0))]),
        (2, 2)
    );
    assert_eq!(judged_quiets(true, &[paused(Some(19.9))]), (1, 1));
    assert_eq!(judged_quiets(true, &[paused(None)]), (1, 1));
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
/// from-send clock hides the stall, as hey -q's does; from its slots it shows the wedge, as
/// the open loop does, each as its model predicts; its slots never reached are the model's.
#[test]
fn paced_closed_loop_hides_a_stall_from_the_send_and_shows_it_from_the_slot() {
    let _guard = serial();
    let case = Case {
        sets: &["hiccup.at=2s", "hiccup.duration=1s", "hiccup.baseline=1ms"],
        ceilings: PACED_HICCUP,
        ..hiccup()
    };
    let dir = temp_dir("validation-paced");
    let paced_load = paced_args(&case, 10);
    let (paced, paced_late) =
        on_a_quiet_machine("paced", || measure(&case, &dir, "paced", &paced_load));
    let (open, open_late) =
        on_a_quiet_machine("open", || measure(&case, &dir, "open", &case.load_args()));
    let model = simulate(&case, &dir, "paced", &paced_load[1..]);
    assert_eq!(paced.mode, sojourn_core::Mode::Paced);
    assert_eq!(model.mode, sojourn_core::Mode::Paced);
    assert_nothing_lost(&paced);
    assert_eq!(paced.counts.scheduled, model.counts.scheduled, "same slots");
    let unreached = paced
        .counts
        .never_sent
        .saturating_sub(model.counts.never_sent);
    let end_pause_slots = (case.rate * END_PAUSE_MS / 1e3) as u64;
    assert!(
        paced.counts.never_sent >= model.counts.never_sent && unreached <= end_pause_slots,
        "never sent {} against the model's {}: more than the {end_pause_slots} slots a pause of \
         {END_PAUSE_MS} ms at the end leaves behind",
        paced.counts.never_sent,
        model.counts.never_sent
    );
    // From the send, the stall is ten requests in five thousand: below p99.
    let (from_send, from_slot) = (service_ms_at(&paced, 99.0), ms_at(&paced, 99.0));
    eprintln!(
        "paced: from send p99 {from_send:.2} ms, from slot p99 {from_slot:.2} ms; open p99 {:.2} ms; model from slot p99 {:.2} ms, from send {:.2} ms",
        ms_at(&open, 99.0),
        ms_at(&model, 99.0),
        service_ms_at(&model, 99.0)
    );
    eprintln!(
        "paced: server lateness p99 {paced_late:.3} ms (open loop's {open_late:.3} ms), dispatch lag p99 {:.3} ms (open loop's {:.3} ms)",
        dispatch_p99_ms(&paced),
        dispatch_p99_ms(&open)
    );
    assert!(from_send < 50.0, "from send p99 {from_send:.2} ms");
    assert!(from_slot > 800.0, "from slot p99 {from_slot:.2} ms");
    // Both servers and both generators on time. From the slot, each loop agrees with its own
    // model within its fixed ceilings. The two models differ only where ten connections catch
    // up after the stall (paced p90 551 ms, open 501 ms; p99 956 and 951; p99.9 997 both):
    // slots due during the catch-up wait for a free connection.
    let open_model = simulate(&case, &dir, "open", &case.load_args());
    let mut failures = lateness("paced", paced_late, dispatch_p99_ms(&paced), &case.ceilings);
    failures.extend(lateness(
        "open",
        open_late,
        dispatch_p99_ms(&open),
        &OPEN_HICCUP_1MS,
    ));
    let none = |_| false;
    for (what, real, sim, ceilings) in [
        ("paced from slot vs model", &paced, &model, &case.ceilings),
        ("open loop vs model", &open, &open_model, &OPEN_HICCUP_1MS),
    ] {
        let (real, sim) = (&real.histograms.response, &sim.histograms.response);
        failures.extend(agreement(what, real, sim, ceilings, &none));
    }
    assert!(failures.is_empty(), "{failures:#?}");
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
        sets: &[
            "hiccup.at=1505500us",
            "hiccup.duration=1s",
            "hiccup.baseline=1ms",
        ],
        rate: 100.0,
        duration: Duration::from_secs(2),
        ..hiccup()
    };
    let dir = temp_dir("validation-paced-end");
    let load = paced_args(&case, 10);
    let ((paced, _), _) = measure(&case, &dir, "paced", &load);
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

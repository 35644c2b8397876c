//! A peer tool runs the same journey: Locust (the shop journey as a locustfile, every request a
//! JSON line from Locust's `events.request` hook) against `sojourn serve --scenario hiccup`,
//! twice: a closed loop (users that start their next journey when the last ends) and a paced
//! one (`constant_pacing`, Locust's nearest to k6's constant-arrival-rate). Both are imported
//! per step, and `sim --journey --client both` is beside them: where each timing hides the stall.
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{listening_addr, read_result, serial, sojourn_ok, spawn, temp_dir};
use crate::model::{held_steps, journey_file, Serving, HELD_NS, HICCUP, STEP};
use sojourn_core::{Mode, RunConfig, RunResult};
use sojourn_peers::{import_locust_requests, ImportContext};
use sojourn_testkit::control::on_a_quiet_machine;

/// Locust: `$SOJOURN_LOCUST` (the executable; `.ci/run` installs locust with pip and sets it),
/// or `locust` on PATH.
fn locust_bin() -> Option<PathBuf> {
    std::env::var_os("SOJOURN_LOCUST")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| sojourn_testkit::on_path("locust"))
}

/// The shop journey of `journey_file` as a locustfile (also the peers crate's fixture's).
fn locustfile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../peers/tests/fixtures/locust/shop_journey.py")
}

/// The closed loop's users: the closed model's (model.rs's 23, which start about as many
/// journeys a second as the open model's 100).
const USERS: usize = 23;
/// The paced run: 40 users each starting a journey every 0.4 s, 100 journeys a second as the
/// open model's schedule, while no journey runs over its 0.4 s (at most 330 ms on a healthy
/// server). Every user then sends into the 1 s stall within 0.4 s of its start and is held
/// at least 600 ms, clear of the 500 ms that counts a step held.
const PACED_USERS: usize = 40;
const PACING_S: &str = "0.4";
/// The runs' and the model's length: no journey starts after it.
const SECONDS: &str = "4";

/// How one Locust run was driven.
struct LocustRun {
    name: &'static str,
    users: usize,
    /// Users started a second: the closed loop's all at once, as the model's; the paced run's
    /// spread over one pacing period, so its journeys start evenly, 100 a second.
    spawn_rate: &'static str,
    pacing: Option<&'static str>,
}

const RUNS: [LocustRun; 2] = [
    LocustRun {
        name: "closed",
        users: USERS,
        spawn_rate: "1000",
        pacing: None,
    },
    LocustRun {
        name: "paced",
        users: PACED_USERS,
        spawn_rate: "100",
        pacing: Some(PACING_S),
    },
];

/// One headless Locust run against a fresh hiccup server (the stall happens once per server),
/// its requests log imported. Bounded: `-t` ends the journeys' starts, `--stop-timeout` lets
/// running ones finish as the model's do, and a run over 30 s is killed and fails.
fn run_locust(bin: &Path, dir: &Path, run: &LocustRun) -> (RunResult, u64) {
    let mut server = Serving(spawn(
        &[
            &["serve", "--scenario", "hiccup", "--listen", "127.0.0.1:0"][..],
            &HICCUP,
        ]
        .concat(),
    ));
    let addr = listening_addr(&mut server.0);
    let log = dir.join(format!("{}.jsonl", run.name));
    let users = run.users.to_string();
    let script = locustfile();
    let mut args = vec![
        "-f",
        script.to_str().unwrap(),
        "--headless",
        "-u",
        &users,
        "-r",
        run.spawn_rate,
        "-t",
        SECONDS,
        "--stop-timeout",
        "10",
        "--exit-code-on-error",
        "0",
        "--only-summary",
        "--host",
    ];
    let host = format!("http://{addr}");
    args.extend([host.as_str(), "--requests-log", log.to_str().unwrap()]);
    if let Some(pacing) = run.pacing {
        args.extend(["--pacing", pacing]);
    }
    let printout = std::fs::File::create(dir.join(format!("{}.txt", run.name))).unwrap();
    let mut child = Command::new(bin)
        .args(&args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(printout.try_clone().unwrap())
        .stderr(printout)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.display()));
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("locust {} ran over 30 s", run.name);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    drop(server);
    assert!(status.success(), "locust {}: {status}", run.name);
    let lines = std::fs::read_to_string(&log).unwrap().lines().count() as u64;
    let ctx = ImportContext {
        label: format!("locust {}", run.name),
        mode: Mode::Closed,
        version: "2.47.0".into(),
        config: RunConfig {
            connections: run.users as u32,
            interval_ns: 1_000_000_000,
            ..RunConfig::default()
        },
    };
    let result = import_locust_requests(&log, &ctx).unwrap_or_else(|e| panic!("{e}"));
    (result, lines)
}

/// The model of the same load: the closed loop of `USERS` users and the open loop at 100
/// journeys a second (`model.closed.json`, `model.open.json`).
fn model(dir: &Path, file: &Path) -> (RunResult, RunResult) {
    let json = dir.join("model.json");
    let users = USERS.to_string();
    let duration = format!("{SECONDS}s");
    sojourn_ok(
        &[
            &[
                "sim",
                "--scenario",
                "hiccup",
                "--journey",
                file.to_str().unwrap(),
                "--client",
                "both",
                "--closed-connections",
                &users,
                "--json",
                json.to_str().unwrap(),
                "--rate",
                "100",
                "--duration",
                &duration,
            ][..],
            &HICCUP,
        ]
        .concat(),
    );
    (
        read_result(&dir.join("model.closed.json")),
        read_result(&dir.join("model.open.json")),
    )
}

fn p99_ms(h: &sojourn_core::result::HistogramSummary) -> f64 {
    h.percentiles.get(99.0).unwrap_or(0) as f64 / 1e6
}

/// Every line of the log is a request in the result, counted once in its step, failures too.
fn every_request_is_accounted_for(r: &RunResult, lines: u64) {
    let c = &r.counts;
    assert_eq!(c.scheduled, lines, "{}: one request per line", r.label);
    assert_eq!(c.completed + c.failed.total(), lines, "{}: {c:?}", r.label);
    let per_step: u64 = r.steps.iter().map(|s| s.counts.total()).sum();
    assert_eq!(per_step, lines, "{}: the steps add up", r.label);
    let failed: u64 = r.steps.iter().map(|s| s.counts.failed.total()).sum();
    assert_eq!(failed, c.failed.total(), "{}: failures per step", r.label);
    let labels: Vec<&str> = r.steps.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        ["shop/login", "shop/list", "shop/open"],
        "{}",
        r.label
    );
}

#[test]
fn locust_runs_the_journey_and_its_timing_from_the_send_hides_the_stall_as_the_model_says() {
    let _guard = serial();
    let Some(bin) = locust_bin() else {
        return sojourn_testkit::skip(
            "locust is not installed (.ci/run installs locust==2.47.0 with pip and sets SOJOURN_LOCUST)",
        );
    };
    let dir = temp_dir("journeys-locust");
    let runs = on_a_quiet_machine("locust journeys against hiccup", || {
        let runs = RUNS.map(|run| run_locust(&bin, &dir, &run));
        (runs, None)
    });
    // The model's journey file names the same steps; its base URL is never contacted.
    let file = journey_file(&dir, "127.0.0.1:9");
    let (model_closed, model_open) = model(&dir, &file);
    for (r, lines) in &runs {
        every_request_is_accounted_for(r, *lines);
    }
    let [(closed, _), (paced, _)] = &runs;
    print_figures(closed, paced, &model_closed, &model_open);
    held_steps_lie_within_one_think_of_the_stall(closed, &model_closed);
    each_user_hides_the_stall_in_all_but_one_step(&runs, &model_closed, &model_open);
}

fn print_figures(closed: &RunResult, paced: &RunResult, mc: &RunResult, mo: &RunResult) {
    eprintln!(
        "| step | locust closed p99 | locust paced p99 | model closed p99 | model open p99 |"
    );
    for i in 0..3 {
        eprintln!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} |",
            mo.steps[i].label,
            p99_ms(&closed.steps[i].response),
            p99_ms(&paced.steps[i].response),
            p99_ms(&mc.steps[i].response),
            p99_ms(&mo.steps[i].response),
        );
    }
    let held = [closed, paced, mc, mo].map(held_steps);
    eprintln!(
        "steps held over 500 ms: locust closed {}, locust paced {}, model closed {}, model open {}",
        held[0], held[1], held[2], held[3]
    );
}

/// The stall's length, and the longest think after a step (`think(0.05, 0.15)`, the journey
/// file's `50ms..150ms`), in ms.
const STALL_MS: f64 = 1000.0;
const THINK_MAX_MS: f64 = 150.0;
/// The hiccup server's answer outside the stall (its baseline), in ms.
const SERVICE_MS: f64 = 10.0;

/// Where a closed user's held step can lie, timed from its send: a user in flight when the stall
/// begins sent at most one exchange before it and waits it out (up to the stall plus an
/// exchange); a thinking user sends within one think of its start and waits the rest (at least
/// the stall less a think). The step's tail ceiling covers the release of the held answers at
/// the stall's end and a late wake-up from a think. Constants of the scenario, not of the run:
/// [790, 1070] ms.
fn held_band_ms() -> (f64, f64) {
    (
        STALL_MS - THINK_MAX_MS - STEP.tail_ms,
        STALL_MS + SERVICE_MS + STEP.tail_ms,
    )
}

/// Locust's closed loop and the model's, both from the send: every step the stall held lies
/// within one think of the stall's length ([`held_band_ms`]), in every step, in both.
///
/// The step's p99 is no figure to compare here. Each step holds 6 to 16 users' steps of
/// Locust's 23 (in eight runs), 4 of them above p99, so its p99 is the fifth-largest of a handful
/// of values spread over that band by each run's own think times; Locust draws those itself,
/// not the model's seeded ones. A CI run compared them within ±60 ms and met 911.7 ms against
/// the model's 977.3, both inside the band. Every held value inside the band is what the two
/// loops must share: a step timed from anything but its send, or a stall met twice, leaves it.
fn held_steps_lie_within_one_think_of_the_stall(closed: &RunResult, model_closed: &RunResult) {
    let (low, high) = held_band_ms();
    let mut outside = Vec::new();
    for (who, r) in [("locust closed", closed), ("model closed", model_closed)] {
        for step in &r.steps {
            let h = sojourn_core::result::decode_base64(&step.response.hdr).unwrap();
            let held: Vec<f64> = h
                .iter_recorded()
                .filter(|v| v.value_iterated_to() >= HELD_NS)
                .map(|v| v.value_iterated_to() as f64 / 1e6)
                .collect();
            let (Some(&shortest), Some(&longest)) = (held.first(), held.last()) else {
                continue;
            };
            let held = h.count_between(HELD_NS, h.max());
            eprintln!(
                "{who} {}: {held} held, {shortest:.1} to {longest:.1} ms (band {low:.0} to {high:.0})",
                step.label
            );
            if shortest < low || longest > high {
                outside.push(format!(
                    "{who} {}: held steps {shortest:.1} to {longest:.1} ms, outside \
                     {low:.0} to {high:.0} ms",
                    step.label
                ));
            }
        }
    }
    assert!(outside.is_empty(), "{outside:#?}");
}

/// Timed from the send, a user waiting out the stall sends nothing meanwhile, so the stall is
/// in one of its steps at most: the model's closed loop holds exactly one step per user. The
/// open model holds every step due in the stall. So each Locust run holds as many steps as it
/// has users, and understates the open model's held steps by at least the open
/// model's count over its users: for the closed run, the model's own closed-loop factor.
fn each_user_hides_the_stall_in_all_but_one_step(
    runs: &[(RunResult, u64); 2],
    model_closed: &RunResult,
    model_open: &RunResult,
) {
    let (model_held, open_held) = (held_steps(model_closed), held_steps(model_open));
    assert_eq!(model_held, USERS as u64, "the model: one step per user");
    let factor = open_held as f64 / model_held as f64;
    assert!(factor > 2.0, "the model's open loop holds {open_held}");
    for ((r, _), run) in runs.iter().zip(&RUNS) {
        // Every user sends into a second-long stall (a closed user within one journey, at most
        // 330 ms; a paced one within its 0.4 s pacing) and waits it out in that one step.
        let held = held_steps(r);
        assert_eq!(held, run.users as u64, "{}: one step per user", r.label);
        let understated = open_held as f64 / held as f64;
        let bound = open_held as f64 / run.users as f64;
        assert!(
            understated >= bound && bound > 1.0,
            "{}: the open model holds {open_held} steps, this run {held}: {understated:.2}x, \
             the bound {bound:.2}x",
            r.label
        );
    }
}

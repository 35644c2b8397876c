//! Shaped runs: `--stages` and `--plan FILE` against a real server on real sockets, and the
//! simulator on the same stages.
mod common;

use common::*;
use sojourn_core::by_stage;

/// Requests each stage answered, by its title.
fn answered_by_stage(r: &sojourn_core::RunResult) -> Vec<(String, u64)> {
    by_stage::stages(r)
        .iter()
        .map(|s| (s.title(), s.completed() + s.failed()))
        .collect()
}

#[test]
fn a_staged_run_sends_each_stage_at_its_rate() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("stages-run");
    let json = dir.join("staged.json");
    let out = sojourn(&[
        "run",
        &server.url("http"),
        "--stages",
        "slow=1s@50,ramp=1s@50..250,1s@250",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert_nothing_lost(&r);
    // Λ: 50 + 150 + 250 requests, each due before the 3 s end.
    assert_eq!(r.counts.scheduled, 450);
    assert_eq!(r.counts.completed, 450);
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::Relaxed),
        450
    );
    assert_eq!(r.config.duration_ns, Some(3_000_000_000));
    assert_eq!(r.config.rate, Some(150.0), "the mean rate");
    let stages = r.config.stages.as_ref().expect("the stages are recorded");
    assert_eq!(stages[1].start_ns, 1_000_000_000);
    assert_eq!((stages[1].from, stages[1].to), (50.0, 250.0));
    // Answers a millisecond or so after their due time fall in their own stage's intervals,
    // but for the few due in its last milliseconds.
    let got = answered_by_stage(&r);
    let titles: Vec<&str> = got.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(titles, ["slow", "ramp", "3"]);
    for ((_, n), want) in got.iter().zip([50u64, 150, 250]) {
        assert!(n.abs_diff(want) <= 3, "answered by stage {got:?}");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("along stages slow=1s@50,ramp=1s@50..250,1s@250"),
        "{text}"
    );
    assert!(text.contains("by stage"), "{text}");
}

#[test]
fn a_plan_file_fills_what_the_flags_do_not_give() {
    let _guard = serial();
    let server = TestServer::start(false);
    let dir = temp_dir("stages-plan");
    let plan = dir.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"url = "{}"
connections = 7
label = "from-the-plan"
arrival = "poisson"
seed = 42
slo = ["hold:errors<50%", "rate>=50%"]

[[stage]]
name = "warm"
duration = "500ms"
from = 0
to = 200

[[stage]]
name = "hold"
duration = "1s"
rate = 200
"#,
            server.url("http")
        ),
    )
    .unwrap();
    let json = dir.join("plan.json");
    let out = sojourn(&[
        "run",
        "--plan",
        plan.to_str().unwrap(),
        "--label",
        "from-the-flag",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert_nothing_lost(&r);
    assert_eq!(r.label, "from-the-flag", "a flag wins over the plan");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("hold:errors<50%") && text.contains("rate>=50%"),
        "the plan's objectives are judged: {text}"
    );
    assert_eq!(r.config.connections, 7);
    assert_eq!(r.config.arrival.as_deref(), Some("poisson"));
    assert_eq!(r.config.seed, Some(42));
    let titles: Vec<String> = answered_by_stage(&r).into_iter().map(|(t, _)| t).collect();
    assert_eq!(titles, ["warm", "hold"]);
    // Poisson along the stages: 50 + 200 expected, within ±5 sd (√250 ≈ 16).
    assert!(r.counts.scheduled.abs_diff(250) < 80, "{:?}", r.counts);

    // The same plan, with the load overridden on the command line: the flags' run. The plan's
    // objectives name its stages, so they are overridden too (a stage the run lacks is refused).
    let out = sojourn(&[
        "run",
        "--plan",
        plan.to_str().unwrap(),
        "--rate",
        "100",
        "--duration",
        "500ms",
        "--arrival",
        "constant",
        "--slo",
        "rate>=50%",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    assert_eq!(r.counts.scheduled, 50);
    assert!(r.config.stages.is_none());
    assert_eq!(r.label, "from-the-plan");
}

#[test]
fn bad_stages_and_plans_name_what_is_wrong_and_exit_2() {
    let dir = temp_dir("stages-bad");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let url = "http://127.0.0.1:9/api";
    let typo = write(
        "typo.toml",
        "url = \"http://127.0.0.1:9/\"\nconections = 5\n",
    );
    let both = write(
        "both.toml",
        "url = \"http://127.0.0.1:9/\"\n[[stage]]\nduration = \"1s\"\nrate = 5\nfrom = 1\nto = 2\n",
    );
    let mixed = write(
        "mixed.toml",
        "url = \"http://127.0.0.1:9/\"\nrate = 5\nstages = \"1s@5\"\n",
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", url, "--stages", "1s@-5"],
            "--stages: stage 1: rate \"-5\"",
        ),
        (
            vec!["run", url, "--stages", "1s"],
            "--stages: stage \"1s\" is not DURATION@RATE",
        ),
        (
            vec!["run", url, "--stages", "1s@5", "--rate", "5"],
            "--stages",
        ),
        (
            vec!["run", url, "--stages", "1s@5", "--arrival", "ramp"],
            "--arrival: ramp does not combine with --stages",
        ),
        (vec!["run", "--plan", &typo], "unknown field `conections`"),
        (
            vec!["run", "--plan", &both],
            "stage 1: give rate = R for a hold",
        ),
        (
            vec!["run", "--plan", &mixed],
            "stages set the rate and the duration",
        ),
        (
            vec!["run", "--plan", "/nonexistent/plan.toml"],
            "--plan: cannot read",
        ),
        (
            vec!["sim", "--stages", "0s@5"],
            "--stages: stage 1: the duration must be longer than zero",
        ),
        // A stage an objective names must be in the plan: refused before the run.
        (
            vec!["run", url, "--stages", "a=1s@5", "--slo", "b:p99<1s"],
            "--slo: ",
        ),
        (
            vec!["run", url, "--rate", "5", "--slo", "2:p99<1s"],
            "--slo: ",
        ),
    ];
    for (args, want) in cases {
        let out = sojourn(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
    }
}

#[test]
fn sim_runs_the_same_stages() {
    let dir = temp_dir("stages-sim");
    let json = dir.join("sim.json");
    let out = sojourn(&[
        "sim",
        "--scenario",
        "healthy",
        "--client",
        "open",
        "--stages",
        "2s@0..100,hold=3s@100,1s@100..0",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = read_result(&json);
    // Λ: 100 + 300 + 50; the ramp down's last request is due before the end.
    assert_eq!(r.counts.scheduled, 450);
    assert_eq!(r.counts.completed, 450);
    // By when they finished: the hold's last request, due at 4.99 s, is answered at 5.00 s,
    // in the last stage's first interval.
    let got = answered_by_stage(&r);
    assert_eq!(
        got,
        [("1".into(), 100), ("hold".into(), 299), ("3".into(), 51)]
    );
    // The last request, 449, is due where the ramp down's Λ = 400 + 100τ − 50τ² reaches
    // 449: τ = 1 − √0.02; the run ends with its answer 10 ms later.
    let last_due = 5.0 + 1.0 - 0.02f64.sqrt();
    let want_ns = ((last_due + 0.010) * 1e9).round() as u64;
    assert!(
        r.elapsed_ns.abs_diff(want_ns) <= 1,
        "to the last answer: {} ns, want {want_ns}",
        r.elapsed_ns
    );
}

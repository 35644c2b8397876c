//! `sojourn suite`: every scenario × every peer tool found here, then sojourn's own open,
//! closed and paced closed loops and the simulator's model, each against a fresh embedded server. One HTML report
//! per scenario, one summary table, and a verdict per tool against the model.
//!
//! The servers speak HTTP/1.1, but ghz's: it speaks gRPC, so it gets the same scenario served
//! as gRPC over h2c, called through a proto the suite writes beside its output
//! ([`SUITE_PROTO`]).
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use sojourn_core::verdict::{verdict, Verdict};
use sojourn_core::{format_ns, End, Mode, Rate, RunConfig, RunResult, Schedule};
use sojourn_engine::Load;
use sojourn_peers::runners::{self, GrpcCall, RunSpec, RunnerPlan};
use sojourn_peers::PeerTool;
use sojourn_scenario::Scenario;

use crate::bad_input;
use crate::peer_run;

/// The schema name of `suite.json`, the summary of every scenario a suite ran.
pub const SUITE_SCHEMA: &str = "sojourn.suite/1";

/// The proto ghz calls the suite's gRPC server through: any method is the system under test
/// there, and answers an empty message.
pub const SUITE_PROTO: &str = "syntax = \"proto3\";
// Written by `sojourn suite` for ghz: the suite's gRPC server answers any unary call with an
// empty message, when the scenario releases it.
package sojourn.suite;
import \"google/protobuf/empty.proto\";
service Scenario {
  rpc Call(google.protobuf.Empty) returns (google.protobuf.Empty);
}
";

/// The method of [`SUITE_PROTO`] ghz calls.
const SUITE_CALL: &str = "sojourn.suite.Scenario/Call";
/// [`SUITE_PROTO`]'s file name, in ghz's output folder.
const PROTO_FILE: &str = "suite.proto";

/// What the suite says of a row measured against its gRPC server.
pub const GRPC_NOTE: &str = "against the suite's gRPC server: the same scenario as gRPC over h2c (sojourn's own rows are over HTTP/1.1)";

/// Seed 001's five scenarios, then every-nth and bimodal.
pub const DEFAULT_SCENARIOS: &str = "healthy,hiccup,ramp,gc-pauses,saturation,every-nth,bimodal";

/// How long and how hard each run of a suite is (`--profile`).
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// 10 s at 200 req/s per run: minutes for the whole suite (CI).
    Short,
    /// Seed 001's profile: 60 s at 1,000 req/s per run.
    Full,
}

/// A suite as a person describes it (`sojourn suite`'s flags): which scenarios, which peer
/// tools, how long and how hard, and where everything goes.
#[derive(Debug, Clone)]
pub struct SuiteSettings {
    /// Scenarios to run, comma-separated (built-ins or scenario TOML files).
    pub scenarios: Vec<String>,
    /// Peer tools to run, comma-separated: wrk, wrk2, ab, hey, vegeta, k6, oha, fortio, locust,
    /// h2load, ghz (against the same scenario served as gRPC).
    /// [default: every one found on PATH, ~/go/bin or ~/.cargo/bin]
    pub tools: Vec<String>,
    /// Run length and rate: short (10 s at 200 req/s) or full (seed 001: 60 s at 1,000 req/s).
    pub profile: Profile,
    /// Override the profile's run length.
    pub duration: Option<Duration>,
    /// Override the profile's rate (one-worker scenarios keep their seeds' lower rates).
    pub rate: Option<f64>,
    /// Where the results, per-tool outputs and reports go.
    pub out: PathBuf,
    /// Also write the summary here once every scenario ran; `-` is standard output.
    pub json: Option<PathBuf>,
}

/// The load every run of one scenario gets.
#[derive(Debug, Clone, Copy)]
struct Load1 {
    rate: f64,
    duration: Duration,
    /// Closed loops' connections: enough to reach the rate at the scenario's baseline.
    connections: u32,
    /// Rate-driven tools' connection pool: a second and a half of arrivals, so a one-second
    /// stall queues at the server, not in the tool (seed 001 sizes k6's VUs the same way).
    pool: u32,
    /// Paced closed loops' connections (hey -q, fortio -qps, sojourn's control): twice the
    /// closed loops', so each is busy half the time at the baseline and can catch up after a
    /// stall, as `sojourn demo` runs its paced loop.
    paced: u32,
}

/// Runs every scenario: the model, sojourn's own loops and each installed peer tool, each
/// against a fresh server; prints each scenario's table and keeps `suite.json` up to date
/// under `out` after every scenario.
pub fn run(a: SuiteSettings, sinks: &mut dyn crate::execute::Sinks) -> anyhow::Result<()> {
    let tools = select_tools(&a.tools)?;
    let (rate, duration) = profile(&a);
    std::fs::create_dir_all(&a.out)
        .map_err(|e| bad_input!("--out: cannot create {}: {e}", a.out.display()))?;
    let mut summary = Summary {
        schema: SUITE_SCHEMA.into(),
        profile: format!("{:?}", a.profile).to_lowercase(),
        scenarios: Vec::new(),
    };
    for name in &a.scenarios {
        let scenario =
            crate::scenario_arg::resolve(name, &crate::demo::fit_events(name, &[], duration))?;
        let load = load_for(&scenario, rate, duration);
        let row = run_scenario(&scenario, load, &tools, &a.out, sinks)?;
        print!("{}", table(&row));
        summary.scenarios.push(row);
        // Written after every scenario, so an interrupted suite keeps what it finished.
        write_summary(&a.out, &summary)?;
    }
    println!("summary: {}", a.out.join("suite.json").display());
    if let Some(path) = &a.json {
        crate::outputs::write_document(path, "--json", &summary)?;
    }
    Ok(())
}

fn write_summary(out: &Path, summary: &Summary) -> anyhow::Result<()> {
    let path = out.join("suite.json");
    std::fs::write(&path, serde_json::to_string_pretty(summary)?)
        .map_err(|e| bad_input!("--out: cannot write {}: {e}", path.display()))?;
    Ok(())
}

fn profile(a: &SuiteSettings) -> (f64, Duration) {
    let (rate, secs) = match a.profile {
        Profile::Short => (200.0, 10),
        Profile::Full => (1000.0, 60),
    };
    (
        a.rate.unwrap_or(rate),
        a.duration.unwrap_or(Duration::from_secs(secs)),
    )
}

/// One-worker scenarios run at their seeds' rates (their servers cannot take more) with one
/// connection; the others at the profile's rate, with connections for a 10 ms baseline.
fn load_for(scenario: &Scenario, rate: f64, duration: Duration) -> Load1 {
    if scenario.workers() == Some(1) {
        let seed_rate = crate::demo::default_rate(scenario.name());
        let rate = seed_rate.min(rate);
        return Load1 {
            rate,
            duration,
            connections: 1,
            pool: pool_for(rate),
            paced: 2,
        };
    }
    let connections = ((rate * 0.010).round() as u32).max(1);
    Load1 {
        rate,
        duration,
        connections,
        pool: pool_for(rate),
        paced: 2 * connections,
    }
}

fn pool_for(rate: f64) -> u32 {
    ((rate * 1.5).ceil() as u32).max(100)
}

/// The tools asked for (or all), each with where its program is; missing ones are reported.
fn select_tools(asked: &[String]) -> anyhow::Result<Vec<(PeerTool, Option<PathBuf>)>> {
    let tools: Vec<PeerTool> = if asked.is_empty() {
        PeerTool::ALL.to_vec()
    } else {
        asked
            .iter()
            .map(|t| t.parse().map_err(|e| bad_input!("--tools: {e}")))
            .collect::<anyhow::Result<_>>()?
    };
    Ok(tools
        .into_iter()
        .map(|t| (t, peer_run::locate(t.name())))
        .collect())
}

/// One row of the summary table: a run and how it compares with the model.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The run's label, as its result and the page name it.
    pub label: String,
    /// The tool that measured it: sojourn, the model, or a peer tool.
    pub tool: String,
    /// Open, closed, paced or tracking: which clock its percentiles are on.
    pub mode: Mode,
    /// `exact` (the model), `per_request`, or `summary` (only the tool's printed percentiles).
    pub detail: String,
    /// Its response-time percentiles in ns (p50, p90, p99, p99.9, max), absent where the tool
    /// reported none.
    pub percentiles: Vec<(String, Option<u64>)>,
    /// This run's p99 over the model's.
    pub p99_vs_model: Option<f64>,
    /// What that ratio says about the tool: honest, hides the stall, overstates, ...
    pub verdict: Verdict,
    /// Requests the schedule wanted but the tool never sent (k6's dropped iterations).
    pub never_sent: u64,
    /// sojourn's own open loop: who held it back at the rate (OK, SATURATED, GENERATOR-BOUND,
    /// POOL-BOUND). Imports cannot tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_back: Option<sojourn_core::sweep::Status>,
    /// sojourn's own paced closed loop: its p99 timed from the send, the clock hey -q and
    /// fortio -qps report (its row's percentiles are timed from the slot).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p99_from_send: Option<u64>,
    /// What the importer noted about the tool's output (back-filled samples, a summary only).
    pub notes: Vec<String>,
    /// The run's result document, when it could be written.
    pub result: Option<String>,
}

/// One scenario's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioRows {
    /// The scenario's name.
    pub scenario: String,
    /// The rate every run of it offered, in requests per second.
    pub rate: f64,
    /// How long each run lasted.
    pub duration_ns: u64,
    /// The closed loops' connections.
    pub closed_connections: u32,
    /// One row per run: the model, sojourn's loops, then each peer tool's.
    pub rows: Vec<Row>,
    /// Tools not run, and why.
    pub skipped: Vec<(String, String)>,
    /// The scenario's page, every run's spectrum and timeline side by side.
    pub report: String,
}

/// `suite.json`: what a suite ran and found, scenario by scenario (`schema/suite.schema.json`).
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// [`SUITE_SCHEMA`].
    pub schema: String,
    /// `short` or `full`.
    pub profile: String,
    /// Every scenario run so far, in order.
    pub scenarios: Vec<ScenarioRows>,
}

fn run_scenario(
    scenario: &Scenario,
    load: Load1,
    tools: &[(PeerTool, Option<PathBuf>)],
    out: &Path,
    sinks: &mut dyn crate::execute::Sinks,
) -> anyhow::Result<ScenarioRows> {
    let dir = out.join(scenario.name());
    std::fs::create_dir_all(&dir)?;
    println!(
        "\n== {} ({scenario}): {} at {} req/s; closed loops {} connection(s)",
        scenario.name(),
        humantime::format_duration(load.duration),
        load.rate,
        load.connections
    );
    let mut runs: Vec<(RunResult, Vec<sojourn_report::samples::Sample>)> = Vec::new();
    let model = own_runs(scenario, load, &mut runs, sinks)?;
    let mut skipped = Vec::new();
    for (tool, program) in tools {
        let Some(program) = program else {
            println!(
                "  {}: not installed, skipped (scripts/install-peer-tools.sh installs it)",
                tool.name()
            );
            skipped.push((tool.name().to_string(), "not installed".to_string()));
            continue;
        };
        let probe = RunSpec {
            url: String::new(),
            rate: load.rate,
            duration: load.duration,
            connections: load.connections,
            out_dir: dir.clone(),
        };
        for (variant, plan) in runners_of(*tool, &probe).iter().enumerate() {
            let label = peer_run::label(plan);
            match peer(*tool, variant, program, scenario, load, &dir) {
                Ok(r) => runs.push((r, Vec::new())),
                Err(e) => {
                    println!("  {label}: failed, skipped: {e:#}");
                    skipped.push((label, format!("{e:#}")));
                }
            }
        }
    }
    let report = dir.with_extension("html");
    write_outputs(&report, scenario, &runs)?;
    let rows = runs.iter().map(|(r, _)| row(r, &model, &dir)).collect();
    Ok(ScenarioRows {
        scenario: scenario.name().to_string(),
        rate: load.rate,
        duration_ns: sojourn_core::nanos(load.duration),
        closed_connections: load.connections,
        rows,
        skipped,
        report: report.display().to_string(),
    })
}

/// The model, sojourn's open loop and its closed loop, pushed onto `runs`; returns the model.
fn own_runs(
    scenario: &Scenario,
    load: Load1,
    runs: &mut Vec<(RunResult, Vec<sojourn_report::samples::Sample>)>,
    sinks: &mut dyn crate::execute::Sinks,
) -> anyhow::Result<RunResult> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let rate = Rate::per_second(load.rate).map_err(|e| bad_input!("--rate: {e}"))?;
    let schedule = Schedule::new(
        sojourn_core::Arrival::Constant,
        rate,
        End::After(load.duration),
    )
    .map_err(|e| bad_input!("--duration: {e}"))?;
    // Room for every request of a stall at the suite's rates in flight at once.
    let open = crate::RunSpec {
        connections: crate::defaults::STALL_CONNECTIONS,
        ..crate::RunSpec::of(Load::Open(schedule.clone()))
    }
    .plan();
    let closed = crate::RunSpec {
        connections: load.connections as usize,
        ..crate::RunSpec::of(Load::Closed(End::After(load.duration)))
    }
    .plan();
    // The control for the paced tools: the same pool and rate, and both clocks.
    let paced = crate::RunSpec {
        connections: load.paced as usize,
        ..crate::RunSpec::of(Load::Paced(schedule))
    }
    .plan();
    let mut model = crate::model::model(scenario, &open, "model")?;
    model.scenario = serde_json::to_value(scenario).ok();
    runs.push((model.clone(), Vec::new()));
    for (plan, label) in [
        (&open, "sojourn open"),
        (&closed, "sojourn closed"),
        (&paced, "sojourn paced"),
    ] {
        let m = crate::demo::against_fresh_server(&rt, scenario, plan, label, sinks)?;
        println!("  {label}: done");
        runs.push((m.result, m.dots));
    }
    Ok(model)
}

/// The runners of `tool` for `spec` (k6 and oha have several), closed loops first. ghz calls
/// [`SUITE_PROTO`], written in its output folder.
fn runners_of(tool: PeerTool, spec: &RunSpec) -> Vec<RunnerPlan> {
    if tool == PeerTool::Ghz {
        let call = GrpcCall {
            proto: spec.out_dir.join(PROTO_FILE),
            call: SUITE_CALL.into(),
            data: "{}".into(),
        };
        return vec![runners::ghz(spec, &call)];
    }
    runners::all(spec)
        .into_iter()
        .filter(|p| p.tool == tool)
        .collect()
}

/// The `variant`-th runner of `tool`, against a fresh server of `scenario`, in its own
/// directory under `dir`.
fn peer(
    tool: PeerTool,
    variant: usize,
    program: &Path,
    scenario: &Scenario,
    load: Load1,
    dir: &Path,
) -> anyhow::Result<RunResult> {
    // A tool that measures only after a lead-in of its own (wrk2's calibration) gets a server
    // whose faults come that much later, so they fall where it measures.
    let probe_spec = RunSpec {
        url: String::new(),
        rate: load.rate,
        duration: load.duration,
        connections: load.connections,
        out_dir: dir.to_path_buf(),
    };
    let lead_in = runners_of(tool, &probe_spec)[variant].lead_in;
    let protocol = if tool.speaks_http() {
        sojourn_server::Protocol::Http1
    } else {
        sojourn_server::Protocol::Grpc
    };
    let server = crate::embedded::EmbeddedServer::start_as(scenario.delayed(lead_in), protocol)?;
    let mut spec = RunSpec {
        url: server.url(),
        rate: load.rate,
        duration: load.duration,
        connections: load.connections,
        out_dir: dir.to_path_buf(),
    };
    let probe = &runners_of(tool, &spec)[variant];
    let label = peer_run::label(probe);
    // Paced tools (fortio -qps, hey -q) pace each connection at rate ÷ c: with a closed loop's
    // few connections each could only just keep up and would fall behind at once, so they get
    // twice as many, as sojourn's own paced control does.
    let rate_driven = probe.mode != Mode::Closed;
    spec.connections = match probe.mode {
        Mode::Open => load.pool,
        Mode::Paced => load.paced,
        _ => load.connections,
    };
    spec.out_dir = dir.join(slug(&label));
    std::fs::create_dir_all(&spec.out_dir)?;
    if protocol == sojourn_server::Protocol::Grpc {
        std::fs::write(spec.out_dir.join(PROTO_FILE), SUITE_PROTO)?;
    }
    let plan = runners_of(tool, &spec).swap_remove(variant);
    let config = RunConfig {
        target: Some(spec.url.clone()),
        rate: rate_driven.then_some(load.rate),
        arrival: (plan.mode == Mode::Open).then(|| "constant".to_string()),
        duration_ns: Some(sojourn_core::nanos(load.duration)),
        connections: spec.connections,
        interval_ns: 1_000_000_000,
        ..Default::default()
    };
    let result = peer_run::run_and_import(
        &plan,
        program,
        &spec.out_dir,
        load.duration + plan.lead_in,
        &label,
        config,
    );
    server.stop()?;
    let mut result = result?;
    result.scenario = serde_json::to_value(scenario).ok();
    // What the tool could not express of the common load goes with its result, into the
    // report and the summary.
    if let Some(import) = result.import.as_mut() {
        if protocol == sojourn_server::Protocol::Grpc {
            import.notes.push(GRPC_NOTE.into());
        }
        import.notes.extend(plan.limitations.iter().cloned());
    }
    println!("  {label}: done ({})", detail(&result));
    Ok(result)
}

/// A label as a file name: `oha -q --latency-correction` → `oha_q_latency_correction`.
fn slug(label: &str) -> String {
    label
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

fn detail(r: &RunResult) -> String {
    match &r.import {
        None if r.label == "model" => "exact".into(),
        None => "per_request".into(),
        Some(i) => match i.detail {
            sojourn_core::result::Detail::PerRequest => "per_request".into(),
            sojourn_core::result::Detail::Summary => "summary".into(),
        },
    }
}

const TABLE_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 100.0];

fn row(r: &RunResult, model: &RunResult, dir: &Path) -> Row {
    let (ratio, verdict) = verdict(r, model);
    let file = dir.join(format!("{}.json", slug(&r.label)));
    let written = crate::outputs::write_json(&file, r).is_ok();
    Row {
        label: r.label.clone(),
        tool: r.tool.name.clone(),
        mode: r.mode,
        detail: detail(r),
        percentiles: TABLE_PERCENTILES
            .iter()
            .map(|&p| (key(p), r.histograms.response.percentiles.get(p)))
            .collect(),
        p99_vs_model: ratio,
        verdict,
        never_sent: r.counts.never_sent,
        held_back: r.checks.rate.as_ref().map(|v| v.status),
        p99_from_send: (r.mode == Mode::Paced && r.import.is_none())
            .then(|| r.histograms.service.percentiles.get(99.0))
            .flatten(),
        notes: r
            .import
            .as_ref()
            .map(|i| i.notes.clone())
            .unwrap_or_default(),
        result: written.then(|| file.display().to_string()),
    }
}

fn key(p: f64) -> String {
    if p >= 100.0 {
        "max".into()
    } else {
        format!("p{p}")
    }
}

fn write_outputs(
    report: &Path,
    scenario: &Scenario,
    runs: &[(RunResult, Vec<sojourn_report::samples::Sample>)],
) -> anyhow::Result<()> {
    let views = runs
        .iter()
        .map(|(r, dots)| crate::side_by_side::report_run(r, dots.clone()))
        .collect();
    let title = format!(
        "sojourn suite: {} — every tool against the model",
        scenario.name()
    );
    crate::side_by_side::write_report(report, title, views)?;
    Ok(())
}

/// The scenario's table: one row per run, the model first.
pub fn table(s: &ScenarioRows) -> String {
    let mut out = String::new();
    let _ = write!(out, "\n{:<30}{:<8}{:<13}", s.scenario, "mode", "detail");
    for p in TABLE_PERCENTILES {
        let _ = write!(out, "{:>12}", key(p));
    }
    let _ = writeln!(out, "{:>11}  verdict", "p99/model");
    for r in &s.rows {
        let _ = write!(
            out,
            "{:<30}{:<8}{:<13}",
            r.label,
            r.mode.label().split(' ').next().unwrap_or(""),
            r.detail
        );
        for (_, v) in &r.percentiles {
            let _ = write!(out, "{:>12}", v.map_or("-".into(), format_ns));
        }
        let ratio = r.p99_vs_model.map_or("-".into(), |x| format!("{x:.2}x"));
        let held = match r.held_back {
            Some(s) if s != sojourn_core::sweep::Status::Ok => format!(" ({})", s.label()),
            _ => String::new(),
        };
        let _ = writeln!(out, "{ratio:>11}  {}{held}", r.verdict.describe());
    }
    let model_p99 = s
        .rows
        .iter()
        .find(|r| r.verdict == Verdict::Model)
        .and_then(|m| m.percentiles.iter().find(|(k, _)| k == "p99"))
        .and_then(|(_, v)| *v);
    for r in &s.rows {
        let Some(p99) = r.p99_from_send else { continue };
        let ratio = model_p99
            .filter(|&m| m > 0)
            .map_or("-".into(), |m| format!("{:.2}x", p99 as f64 / m as f64));
        let _ = writeln!(
            out,
            "  {}: from the send, the paced tools' clock, p99 {} ({ratio} the model's); the row is timed from the slot",
            r.label,
            format_ns(p99)
        );
    }
    for r in s
        .rows
        .iter()
        .filter(|r| r.notes.iter().any(|n| n == GRPC_NOTE))
    {
        let _ = writeln!(out, "  {}: {GRPC_NOTE}", r.label);
    }
    for r in s.rows.iter().filter(|r| r.never_sent > 0) {
        let _ = writeln!(
            out,
            "  {}: {} requests the schedule wanted were never sent",
            r.label, r.never_sent
        );
    }
    for (tool, why) in &s.skipped {
        let _ = writeln!(out, "  {tool}: skipped: {why}");
    }
    let _ = writeln!(out, "report: {}", s.report);
    out
}

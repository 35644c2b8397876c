//! `sojourn demo`: the main job. An embedded pathology server, a closed loop and then an open
//! loop at the same rate (each against a fresh server), the simulator's prediction, the seeds'
//! side-by-side table, and an HTML report. The closed loop is paced at the open loop's rate by
//! default, as most real load tests are: the same sends, timed from the send and from the slot.
use std::path::PathBuf;

use crate::execute::Sinks;
use std::time::Duration;

use std::convert::Infallible;

use crate::RunSpec;
use sojourn_core::{Arrival, End, Rate, RequestSample, RunResult, Schedule};
use sojourn_engine::{HttpRequest, HttpTransport, Load, Plan, Trust};
use sojourn_report::html::MAX_DOTS;
use sojourn_report::samples::{downsample, Sample};
use sojourn_scenario::truth::TruthRecord;
use sojourn_scenario::{Scenario, WindowKind};

use crate::bad_input;
use crate::compare::ClosedMode;
use crate::embedded::EmbeddedServer;
use sojourn_report::compare::Column;
use sojourn_report::finding::UNDERSTATES;

/// A demo as a person describes it (`sojourn demo`'s flags): the pathology, the load of each
/// loop, and where the page and the result documents go.
#[derive(Debug, Clone)]
pub struct DemoSettings {
    /// The pathology to demonstrate: a built-in (hiccup, healthy, gc-pauses, ramp, saturation,
    /// every-nth, bimodal, spike) or a scenario TOML file.
    pub scenario: String,
    /// Override a scenario parameter, e.g. `--set hiccup.duration=2s`. Repeatable.
    pub set: Vec<String>,
    /// Requests per second for the open loop. [default: 1000; 450 for every-nth and 20 for
    /// bimodal, as in their seeds: their one-worker servers cannot take 1000]
    pub rate: Option<f64>,
    /// How long each loop runs.
    pub duration: Duration,
    /// Connections of the closed loop (each sends, waits, records, repeats). [default: paced,
    /// 20 (each carries rate/20, half busy at the default 1000 req/s × 10 ms, so it can catch
    /// up after a stall); unpaced, 10 as in seed 001; 1 for one-worker scenarios (every-nth,
    /// bimodal), as in their seeds: more would queue behind the one worker and measure the
    /// client's own contention]
    pub connections: Option<usize>,
    /// The closed loop: paced at --rate (hey -q, bombardier -r) or unpaced (ab, wrk).
    pub closed_mode: ClosedMode,
    /// Where to write the HTML report.
    pub report: PathBuf,
    /// Also write the three result documents (closed.json, open.json, model.json) here.
    pub json_dir: Option<PathBuf>,
    /// Journeys instead of single requests: a built-in three-step journey ([`JOURNEY`])
    /// against the embedded server, the closed journey loop beside the open journey loop at
    /// once, step by step.
    pub journey: bool,
}

/// The built-in journey of `demo --journey`: log in, browse, check out, with a user's pauses
/// between, every step on the scenario's endpoint. `ORIGIN` becomes the embedded server's.
pub const JOURNEY: &str = r#"base_url = "http://ORIGIN"

[[journey]]
name = "shop"

  [[journey.step]]
  name = "login"
  method = "POST"
  url = "/api?step=login"
  body = '{"user": "u${journey}"}'
  think = "200ms..800ms"

  [[journey.step]]
  name = "browse"
  url = "/api?step=browse&page=${random.int(1,20)}"
  think = "exp(500ms)"

  [[journey.step]]
  name = "checkout"
  method = "POST"
  url = "/api?step=checkout"
"#;

/// Journeys per second of `demo --journey` by default: three requests each, so a debug build
/// on a laptop keeps up, and a stall of a second meets dozens of journeys mid-way.
pub const JOURNEY_RATE: f64 = 50.0;

/// The demo's results, for printing and for tests.
pub struct DemoOutcome {
    /// The closed loop (paced or unpaced, as asked), against its own fresh server.
    pub closed: RunResult,
    /// The open loop at the same rate, measured from each request's due time.
    pub open: RunResult,
    /// The simulator's answer for the open loop's schedule against the same scenario.
    pub model: RunResult,
    /// Requests the server received inside the scenario's stalls: (closed loop, open loop).
    pub sent_during_stalls: Option<(u64, u64)>,
    /// The closed loop's requests, downsampled, drawn as dots on the report's timeline.
    pub closed_dots: Vec<Sample>,
    /// The open loop's requests, likewise.
    pub open_dots: Vec<Sample>,
}

/// One loop's measurement: its result, the server's truth log, and dots for the timeline.
pub struct Measured {
    /// What the loop measured.
    pub result: RunResult,
    /// What the server saw of each request (arrival, start of service, departure), on its
    /// own clock: how many requests a stall really met.
    pub truth: Vec<TruthRecord>,
    /// The loop's requests, downsampled for the timeline's dots.
    pub dots: Vec<Sample>,
}

/// Runs the demo with `sinks` watching each loop, prints the side-by-side table and what it
/// shows, and writes the page (and the result documents, given `json_dir`). Returns the page
/// as written.
pub fn run(a: DemoSettings, sinks: &mut dyn Sinks) -> anyhow::Result<String> {
    if a.journey {
        return journeys(a, sinks);
    }
    let scenario = crate::scenario_arg::resolve(&a.scenario, &fitted_sets(&a))?;
    let connections = match a.connections {
        Some(0) => return Err(bad_input!("--connections: must be at least 1, got 0")),
        Some(n) => n,
        None if scenario.workers() == Some(1) => 1,
        None if a.closed_mode == ClosedMode::Paced => 20,
        None => 10,
    };
    let rate = Rate::per_second(a.rate.unwrap_or_else(|| default_rate(scenario.name())))
        .map_err(|e| bad_input!("--rate: {e}"))?;
    println!(
        "sojourn demo: scenario {} ({}), {} per loop",
        scenario.name(),
        scenario,
        humantime::format_duration(a.duration)
    );
    println!(
        "{} first ({}), then open loop at {rate}; each against a fresh server on 127.0.0.1\n",
        a.closed_mode.label(),
        plural(connections, "connection")
    );
    let outcome = measure(
        &scenario,
        rate,
        a.duration,
        connections,
        a.closed_mode,
        sinks,
    )?;
    let mut columns = crate::side_by_side::closed_columns(&outcome.closed);
    columns.push(Column::of("open loop", &outcome.open));
    columns.push(Column::of("model (open)", &outcome.model));
    print!("{}", crate::side_by_side::table(&columns, "open loop"));
    println!();
    println!("{}", explain(&scenario, &outcome, connections));
    write_outputs(&a, &outcome)
}

/// `demo --journey`: the built-in journey against the embedded server, the closed journey loop
/// (virtual users sized to the same journey rate on a healthy server, timed from the sends)
/// beside the open journey loop at once, as `compare --journey` runs them.
fn journeys(a: DemoSettings, sinks: &mut dyn Sinks) -> anyhow::Result<String> {
    if a.closed_mode == ClosedMode::Unpaced || a.connections == Some(0) {
        return Err(bad_input!("--closed-mode: with --journey the closed loop is the closed journey loop (virtual users); drop --closed-mode, and give --connections at least 1"));
    }
    let scenario = crate::scenario_arg::resolve(&a.scenario, &fitted_sets(&a))?;
    let server = crate::embedded::EmbeddedServer::start(scenario.clone())?;
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("shop.toml");
    std::fs::write(&file, JOURNEY.replace("ORIGIN", &server.addr.to_string()))?;
    let rate = a.rate.unwrap_or(JOURNEY_RATE);
    let users = a
        .connections
        .unwrap_or_else(|| users_for(rate, &file, &scenario));
    println!(
        "sojourn demo --journey: scenario {} ({scenario}), the built-in journey (log in, browse, check out) at {rate} journeys/s, {}\n",
        scenario.name(),
        humantime::format_duration(a.duration)
    );
    let settings = crate::compare::CompareSettings {
        url: String::new(),
        rate,
        closed_mode: a.closed_mode,
        duration: a.duration,
        connections: users,
        threads: Some(1),
        timeout: crate::defaults::TIMEOUT,
        headers: Vec::new(),
        insecure: false,
        cacert: None,
        tls_server_name: None,
        report: a.report,
        json_dir: a.json_dir,
        json: None,
        journey: Some(file),
        grpc: Default::default(),
        body: None,
    };
    crate::compare::run(settings, sinks)
}

/// Virtual users that start `rate` journeys a second on a server answering at its baseline:
/// the rate times a journey's mean length (its think times and one baseline per step), so the
/// two loops carry the same load until the server stalls.
fn users_for(rate: f64, file: &std::path::Path, scenario: &Scenario) -> usize {
    let Ok(file) = sojourn_core::journey::JourneyFile::from_path(file) else {
        return crate::defaults::CLOSED_CONNECTIONS;
    };
    let journey = &file.journeys()[0];
    let last = journey.steps.len().saturating_sub(1);
    let thinks: Duration = journey.steps[..last].iter().map(|s| s.think.mean()).sum();
    let service = scenario.baseline(0) * journey.steps.len() as u32;
    ((rate * (thinks + service).as_secs_f64()).ceil() as usize).max(1)
}

fn fitted_sets(a: &DemoSettings) -> Vec<String> {
    fit_events(&a.scenario, &a.set, a.duration)
}

/// Built-in events placed inside a run of `duration`, unless the user placed them: the hiccup
/// at 40 % of the run, the ramp over the same share of the run as in its 60 s seed.
pub fn fit_events(scenario: &str, user_sets: &[String], duration: Duration) -> Vec<String> {
    let mut sets = user_sets.to_vec();
    let secs = duration.as_secs_f64();
    let unset = |key: &str| !user_sets.iter().any(|s| s.starts_with(&format!("{key}=")));
    let mut fit = |key: &str, at: f64| {
        if scenario == key.split('.').next().unwrap_or_default() && unset(key) {
            sets.push(format!("{key}={}ms", (at * secs * 1000.0).round() as u64));
        }
    };
    fit("hiccup.at", 0.4);
    fit("ramp.start", 20.0 / 60.0);
    fit("ramp.end", 50.0 / 60.0);
    fit("spike.at", 0.25);
    sets
}

/// The open loop's rate when none is given: 1,000 req/s, or the seed's own rate for the
/// one-worker scenarios that cannot take that (every-nth 450, bimodal 20).
pub fn default_rate(scenario: &str) -> f64 {
    match scenario {
        "every-nth" => 450.0,
        "bimodal" => 20.0,
        _ => 1000.0,
    }
}

/// Runs both loops against fresh embedded servers, and the simulator.
pub fn measure(
    scenario: &Scenario,
    rate: Rate,
    duration: Duration,
    connections: usize,
    closed_mode: ClosedMode,
    sinks: &mut dyn Sinks,
) -> anyhow::Result<DemoOutcome> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let schedule = Schedule::new(Arrival::Constant, rate, End::After(duration))
        .map_err(|e| bad_input!("--duration: {e}"))?;
    let closed_load = match closed_mode {
        ClosedMode::Paced => Load::Paced(schedule.clone()),
        ClosedMode::Unpaced => Load::Closed(End::After(duration)),
    };
    // One engine thread (the spec's default): the embedded server has the other core.
    let closed_plan = RunSpec {
        connections,
        ..RunSpec::of(closed_load)
    }
    .plan();
    // Room for every request of a stall at the demo's rates in flight at once.
    let open_plan = RunSpec {
        connections: crate::defaults::STALL_CONNECTIONS,
        ..RunSpec::of(Load::Open(schedule))
    }
    .plan();
    let label = match closed_mode {
        ClosedMode::Paced => "paced",
        ClosedMode::Unpaced => "closed",
    };
    let closed = against_fresh_server(&rt, scenario, &closed_plan, label, sinks)?;
    let open = against_fresh_server(&rt, scenario, &open_plan, "open", sinks)?;
    let model = crate::model::model(scenario, &open_plan, "model")?;
    let windows: Vec<(Duration, Duration)> = scenario
        .windows(duration)
        .into_iter()
        .filter(|w| w.kind != WindowKind::Ramp)
        .map(|w| (w.start, w.end))
        .collect();
    let sent_during_stalls = (!windows.is_empty()).then(|| {
        (
            arrivals_within(&closed.truth, &windows),
            arrivals_within(&open.truth, &windows),
        )
    });
    Ok(DemoOutcome {
        closed: closed.result,
        open: open.result,
        model,
        sent_during_stalls,
        closed_dots: closed.dots,
        open_dots: open.dots,
    })
}

/// Runs `plan` against a fresh embedded server of `scenario`.
pub fn against_fresh_server(
    rt: &tokio::runtime::Runtime,
    scenario: &Scenario,
    plan: &Plan,
    label: &str,
    sinks: &mut dyn Sinks,
) -> anyhow::Result<Measured> {
    let server = EmbeddedServer::start(scenario.clone())?;
    let url = server.url();
    let request = HttpRequest {
        url: url.parse().expect("a valid URL"),
        method: "GET".into(),
        headers: Vec::new(),
        body: Vec::new(),
    };
    let transport = rt.block_on(HttpTransport::new(&request, &Trust::PublicRoots))?;
    // Every finished request streams to a thread that keeps a bounded, tail-preserving subset.
    let (tx, rx) = std::sync::mpsc::channel::<RequestSample>();
    let dots = std::thread::spawn(move || {
        downsample(
            rx.into_iter().map(|s| Ok::<_, Infallible>(dot(s))),
            MAX_DOTS,
        )
    });
    let mut plan = plan.clone();
    plan.samples = Some(tx);
    let job = crate::execute::Job {
        plan: &plan,
        transport: transport.into(),
        progress: crate::execute::progress(&plan, sinks.live()),
        about: sojourn_engine::result::About {
            target: Some(url.clone()),
            scenario: serde_json::to_value(scenario).ok(),
            ..sojourn_engine::result::About::labelled(label)
        },
        journeys: None,
    };
    let result = crate::execute::run(rt, job, sinks);
    drop(plan);
    let dots = dots
        .join()
        .map_err(|_| anyhow::anyhow!("the samples thread panicked"))?
        .unwrap_or_else(|e| match e {});
    let result = result?;
    let truth = server.stop()?;
    Ok(Measured {
        result,
        truth,
        dots,
    })
}

fn dot(s: RequestSample) -> Sample {
    Sample {
        intended_offset: s.intended,
        response: s.response,
        service: s.service,
        outcome: s.outcome,
    }
}

fn arrivals_within(truth: &[TruthRecord], windows: &[(Duration, Duration)]) -> u64 {
    truth
        .iter()
        .filter(|r| {
            windows
                .iter()
                .any(|(s, e)| r.arrival >= *s && r.arrival < *e)
        })
        .count() as u64
}

fn p99(r: &RunResult) -> u64 {
    r.histograms.response.percentiles.get(99.0).unwrap_or(0)
}

/// What the closed loop reports at p99: a paced loop's time from the send, as its tools report.
fn reported_p99(r: &RunResult) -> u64 {
    match r.mode {
        sojourn_core::Mode::Paced => r.histograms.service.percentiles.get(99.0).unwrap_or(0),
        _ => p99(r),
    }
}

/// One paragraph in plain words, with this run's numbers. What it says follows what was
/// measured (the p99 ratio), not what the scenario was expected to do.
pub fn explain(scenario: &Scenario, o: &DemoOutcome, connections: usize) -> String {
    let (closed, open) = (
        sojourn_core::format_ns(reported_p99(&o.closed)),
        sojourn_core::format_ns(p99(&o.open)),
    );
    let ratio = p99(&o.open) as f64 / reported_p99(&o.closed).max(1) as f64;
    let paced = o.closed.mode == sojourn_core::Mode::Paced;
    let mut text = crate::side_by_side::verdict(&o.closed, &o.open);
    text.push('\n');
    let conns = plural(connections, "connection");
    if let Some(outside) = outside_the_scenario(scenario, o, ratio) {
        text.push_str(&outside);
        text.push_str(MODEL_COLUMN);
        return text;
    }
    let body = match (ratio >= UNDERSTATES, o.sent_during_stalls) {
        (true, Some((closed_in, open_in))) if paced => format!(
            "While the server stalled, the open loop kept sending on schedule: the server received {open_in} of its \
             requests inside the stall windows, each of which waited for the stall to end. The paced closed loop's \
             {conns} were each held by the stall, waiting for an answer, so the server received only {closed_in} \
             from it meanwhile; it sent the slots it owed late, once answers came back{}. Timed from the send, as \
             hey -q, bombardier -r and JMeter report them, those late requests look fast. Timed from their slots \
             (its p99 {}), they show the stall as the open loop does. That is coordinated omission at the same \
             rate. ",
            match o.closed.counts.never_sent {
                0 => String::new(),
                n => format!(", and never reached {n} of them before the end"),
            },
            sojourn_core::format_ns(p99(&o.closed))
        ),
        (true, Some((closed_in, open_in))) => format!(
            "While the server stalled, the open loop kept sending on schedule: the server received {open_in} of its \
             requests inside the stall windows, each of which waited for the stall to end. The closed loop's \
             {conns} were each held by the stall, waiting for an answer, so the server received \
             only {} from it: {} that a real user population would have sent never existed in its data. \
             An unpaced closed loop has no schedule, so no count of it shows them either: its never-sent row is \
             0 by construction, not because nothing was missed. That is coordinated omission. ",
            plural(closed_in as usize, "new request"),
            plural(open_in.saturating_sub(closed_in) as usize, "request")
        ),
        (true, None) => format!(
            "Scenario {} slows some requests down. Each time, the closed loop's {conns} waited for \
             answers and sent {}, so it measured least exactly when the server was slowest; the open loop \
             kept sending on schedule and measured the queue that built up behind every slow request. That is \
             coordinated omission. ",
            scenario.name(),
            if paced { "its slots late, timing them from the send" } else { "nothing" }
        ),
        (false, _) => format!(
            "Closed and open loops agree here (p99 {closed} vs {open}): in scenario {} there was nothing at p99 for \
             a closed loop to hide. On a healthy server that agreement is the control: it shows that a difference \
             under a stall comes from the server, not from the tool. ",
            scenario.name()
        ),
    };
    text.push_str(&body);
    if ratio >= UNDERSTATES {
        let reported = if paced { "p99 from the send" } else { "p99" };
        text.push_str(&format!(
            "The open loop measures every request from the moment it was due, so its p99 ({open}) is what users \
             lived through; the closed loop's {reported} ({closed}) is {}x lower because the waits \
             never appeared in its data. ",
            sojourn_report::compare::format_ratio(ratio)
        ));
    }
    text.push_str(MODEL_COLUMN);
    text
}

const MODEL_COLUMN: &str = "The model column is the simulator's exact answer for the same scenario: where it agrees with the open loop, the measurement is right.";

/// When the loops differ but the scenario's model says they should not (its open-loop p99 sits
/// beside the closed loop's), the difference came from outside the scenario: the loops run one
/// after the other, and only one of them met a frozen machine or a late generator. Calling that
/// coordinated omission, or blaming the scenario, would say what the data does not.
fn outside_the_scenario(scenario: &Scenario, o: &DemoOutcome, ratio: f64) -> Option<String> {
    let model_ratio = p99(&o.model) as f64 / reported_p99(&o.closed).max(1) as f64;
    if ratio < UNDERSTATES || model_ratio >= UNDERSTATES {
        return None;
    }
    let at = |h: Option<&sojourn_core::result::HistogramSummary>, p: f64| {
        h.and_then(|h| h.percentiles.get(p))
            .map(sojourn_core::format_ns)
    };
    let h = &o.open.histograms;
    let machine = match at(h.control_hiccup.as_ref(), 100.0) {
        Some(max) => format!(
            "While the open loop ran, an idle control process that only sleeps woke up as much as {max} late \
             (p99.9 {}): the machine itself stopped for that long, the server with it. ",
            at(h.control_hiccup.as_ref(), 99.9).unwrap_or_default()
        ),
        None => "No control meter ran beside it, so the machine's own stalls are unknown. ".into(),
    };
    Some(format!(
        "The loops differ here (p99 {} vs {}), but not because of scenario {}: its model puts the open loop's \
         p99 at {}, beside the closed loop's, so there was nothing at p99 for a closed loop to hide. What the \
         open loop measured beyond the model came from outside the scenario, and the loops run one after the \
         other, so only one of them met it. {machine}The open loop's send lag p99 was {}. ",
        sojourn_core::format_ns(reported_p99(&o.closed)),
        sojourn_core::format_ns(p99(&o.open)),
        scenario.name(),
        sojourn_core::format_ns(p99(&o.model)),
        at(Some(&h.send_lag), 99.0).unwrap_or_default()
    ))
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn write_outputs(a: &DemoSettings, o: &DemoOutcome) -> anyhow::Result<String> {
    if let Some(dir) = &a.json_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| bad_input!("--json-dir: cannot create {}: {e}", dir.display()))?;
        for (name, r) in [
            ("closed", &o.closed),
            ("open", &o.open),
            ("model", &o.model),
        ] {
            crate::outputs::write_json(&dir.join(format!("{name}.json")), r)?;
        }
    }
    let title = "sojourn demo: closed vs open loop".to_string();
    let runs = vec![
        crate::side_by_side::report_run(&o.closed, o.closed_dots.clone()),
        crate::side_by_side::report_run(&o.open, o.open_dots.clone()),
        crate::side_by_side::report_run(&o.model, Vec::new()),
    ];
    let html = crate::side_by_side::write_report(&a.report, title, runs)?;
    println!("\nreport: {} (open it in a browser)", a.report.display());
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::record::{Recorder, Stamps};
    use sojourn_core::{Mode, Outcome};

    /// 1,000 answers of 10 ms, the slowest `tail` of them taking `tail_ms`.
    fn run(mode: Mode, tail: u64, tail_ms: u64) -> RunResult {
        let mut rec = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let took = if i < tail { tail_ms } else { 10 };
            rec.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(took),
                Outcome::Ok,
            );
        }
        let facts = sojourn_core::RunFacts {
            label: mode.label().into(),
            mode,
            config: Default::default(),
            scheduled: 1000,
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: sojourn_core::check::assess_closed(),
            backfill_interval: None,
        };
        RunResult::build(&Recorder::merge_all([rec]), facts)
    }

    #[test]
    fn an_unpaced_loop_is_never_said_to_have_never_sent_what_its_table_counts_as_zero() {
        let scenario = crate::scenario_arg::resolve("hiccup", &[]).unwrap();
        let closed = run(Mode::Closed, 1, 900);
        assert_eq!(closed.counts.never_sent, 0);
        let outcome = DemoOutcome {
            closed,
            open: run(Mode::Open, 100, 900),
            model: run(Mode::Open, 100, 900),
            sent_during_stalls: Some((3, 1000)),
            closed_dots: Vec::new(),
            open_dots: Vec::new(),
        };
        let text = explain(&scenario, &outcome, 10);
        assert!(!text.contains("were never sent"), "{text}");
        assert!(
            text.contains("997 requests that a real user population would have sent never existed in its data")
                && text.contains("never-sent row is 0 by construction"),
            "{text}"
        );
    }

    /// A healthy scenario whose open loop met a 32 ms freeze of the machine: the loops differ
    /// by 4x at p99, and the text says where that came from (the machine, with its meter's
    /// figure), never that the scenario slowed requests or that it was coordinated omission.
    #[test]
    fn a_frozen_machine_is_not_blamed_on_the_scenario() {
        let scenario = crate::scenario_arg::resolve("healthy", &[]).unwrap();
        let mut open = run(Mode::Open, 20, 40);
        let mut freeze = sojourn_core::record::new_histogram();
        freeze.record(50_000).unwrap();
        freeze.record(32_000_000).unwrap();
        open.histograms.control_hiccup = Some(sojourn_core::result::HistogramSummary::of(
            &freeze,
            &sojourn_core::record::new_histogram(),
        ));
        let outcome = DemoOutcome {
            closed: run(Mode::Closed, 0, 10),
            open,
            model: run(Mode::Open, 0, 10),
            sent_during_stalls: None,
            closed_dots: Vec::new(),
            open_dots: Vec::new(),
        };
        let text = explain(&scenario, &outcome, 10);
        assert!(
            text.contains("not because of scenario healthy") && text.contains("as much as 32.0"),
            "{text}"
        );
        assert!(
            !text.contains("coordinated omission") && !text.contains("slows some requests"),
            "{text}"
        );
        // The same loops against a scenario whose model has the tail: coordinated omission.
        let hiccup = crate::scenario_arg::resolve("hiccup", &[]).unwrap();
        let outcome = DemoOutcome {
            model: run(Mode::Open, 20, 40),
            ..outcome
        };
        let text = explain(&hiccup, &outcome, 10);
        assert!(text.contains("coordinated omission"), "{text}");
    }
}

//! `sojourn compare URL`: a closed loop and the open loop at once, on their own connections,
//! against your own service; the seeds' table, a verdict and a report. Run together, both meet
//! whatever the server does (a one-shot stall cannot fall in one loop's run and miss the
//! other's). By default the closed loop is paced (what hey -q, bombardier -r and JMeter's
//! constant-throughput timer run) and each loop sends half of `--rate`, so both carry the same
//! load and the server receives `--rate`; `--closed-mode unpaced` runs the send → wait → record
//! loop as fast as the target answers, beside the open loop at `--rate`.
use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;

use crate::execute::Job;
use crate::RunSpec;
use sojourn_core::RunResult;
use sojourn_engine::result::About;
use sojourn_report::compare::Column;

/// A comparison as a person describes it (`sojourn compare`'s flags): the target, the load
/// the two loops share, and where the page and the result documents go.
#[derive(Debug, Clone)]
pub struct CompareSettings {
    /// The target, e.g. http://127.0.0.1:8080/api
    pub url: String,
    /// What the server receives, in requests per second: a paced closed loop and the open loop
    /// each send half, at once (an unpaced closed loop has no rate; the open loop beside it
    /// sends all of it).
    pub rate: f64,
    /// The closed loop: paced (each connection sends at its share of --rate, or when its answer
    /// arrives if later) or unpaced (each sends as soon as it has its answer).
    pub closed_mode: ClosedMode,
    /// How long the two loops run (at once).
    pub duration: Duration,
    /// Connections of the closed loop (a paced loop gives each rate/N of the slots).
    pub connections: usize,
    /// Worker threads for each loop. [default: the number of CPUs]
    pub threads: Option<usize>,
    /// Longest wait for one answer.
    pub timeout: Duration,
    /// A request header, "Name: value"; repeatable.
    pub headers: Vec<(String, String)>,
    /// Skip TLS certificate verification (self-signed test servers).
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file for https (a private CA).
    pub cacert: Option<PathBuf>,
    /// The name a TLS target's certificate must be for, instead of the URL's host.
    pub tls_server_name: Option<String>,
    /// Where to write the HTML report.
    pub report: PathBuf,
    /// Also write closed.json and open.json here.
    pub json_dir: Option<PathBuf>,
    /// Write the comparison document ([`CompareDocument`]) here; `-` is standard output.
    pub json: Option<PathBuf>,
    /// A gRPC call's proto, method and metadata (a `grpc://` target).
    pub grpc: crate::grpc::GrpcSettings,
    /// A gRPC call's message, as JSON (`-d`); only with a `grpc://` target.
    pub body: Option<String>,
    /// Journeys instead of one URL (`url` is then empty: the file names its origin): the closed
    /// journey loop (`connections` virtual users, each starting its next journey when the last
    /// ends, timed from the sends, whatever `closed_mode`) beside the open journey loop at
    /// `rate` journeys per second.
    pub journey: Option<PathBuf>,
}

/// The schema name of the comparison document `compare --json` writes.
pub const COMPARE_SCHEMA: &str = "sojourn.compare/1";

/// `compare --json`: the comparison as one document (`schema/compare.schema.json`): what was
/// asked, the verdict the terminal prints, and both loops' whole results.
#[derive(Debug, Clone, Serialize)]
pub struct CompareDocument {
    /// [`COMPARE_SCHEMA`].
    pub schema: String,
    /// The target URL.
    pub target: String,
    /// What the server received, in requests per second (`--rate`).
    pub rate: f64,
    /// `paced` or `unpaced`.
    pub closed_mode: ClosedMode,
    /// How long the two loops ran (at once).
    pub duration_ns: u64,
    /// The verdict, sentence by sentence, in the terminal's and the page's words.
    pub finding: Vec<String>,
    /// The open loop's p99 over the closed loop's (a paced loop's from the send), when both
    /// have one: above 1, the closed loop understates the tail.
    pub p99_ratio: Option<f64>,
    /// The closed (or paced) loop's result document.
    pub closed: RunResult,
    /// The open loop's result document.
    pub open: RunResult,
}

impl CompareDocument {
    /// The document of a comparison run with settings `a`.
    pub fn new(a: &CompareSettings, closed: RunResult, open: RunResult) -> CompareDocument {
        let column = &crate::side_by_side::closed_columns(&closed)[0];
        CompareDocument {
            schema: COMPARE_SCHEMA.into(),
            target: a.url.clone(),
            rate: a.rate,
            closed_mode: a.closed_mode,
            duration_ns: sojourn_core::nanos(a.duration),
            finding: sojourn_report::finding::finding(&closed, &open),
            p99_ratio: sojourn_report::finding::ratio_at(column, &open, 99.0),
            closed,
            open,
        }
    }
}

/// Which closed loop `compare` and `demo` put beside the open loop.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedMode {
    /// At the open loop's rate: the same sends, timed from the send and from the slot.
    Paced,
    /// As fast as the target answers: a different load, labelled as such.
    Unpaced,
}

impl ClosedMode {
    /// What the progress line and the verdict call this closed loop.
    pub fn label(self) -> &'static str {
        match self {
            ClosedMode::Paced => "paced closed loop",
            ClosedMode::Unpaced => "closed loop",
        }
    }
}

/// Each loop's rate: at once against one server, a paced loop and the open loop each send half
/// of `--rate`, so the server receives what was asked; an unpaced loop has no rate, and the open
/// loop beside it sends all of it.
fn loop_rate(a: &CompareSettings) -> f64 {
    match a.closed_mode {
        ClosedMode::Paced => a.rate / 2.0,
        ClosedMode::Unpaced => a.rate,
    }
}

fn run_args(a: &CompareSettings, closed: bool) -> crate::RunSettings {
    if a.journey.is_some() {
        return journey_args(a, closed);
    }
    let paced = closed && a.closed_mode == ClosedMode::Paced;
    crate::RunSettings {
        load: crate::settings::LoadSettings {
            rate: (!closed || paced).then_some(loop_rate(a)),
            duration: Some(a.duration),
            ..Default::default()
        },
        connections: closed.then_some(a.connections),
        threads: a.threads,
        timeout: a.timeout,
        closed,
        workload: crate::transport::WorkloadSettings {
            url: Some(a.url.clone()),
            headers: a.headers.clone(),
            body: a.body.clone(),
            grpc: a.grpc.clone(),
            ..Default::default()
        },
        protocol: crate::transport::ProtocolSettings {
            insecure: a.insecure,
            cacert: a.cacert.clone(),
            tls_server_name: a.tls_server_name.clone(),
            // Over gRPC, one call at a time per closed-loop connection: `-c` callers, as over
            // HTTP/1.1, not `-c` times the server's stream limit.
            streams: (closed && crate::grpc::is_grpc_url(&a.url)).then_some(1),
            ..Default::default()
        },
        json: a
            .json_dir
            .as_ref()
            .map(|d| d.join(if closed { "closed.json" } else { "open.json" })),
        label: Some(if paced {
            // The label the terminal's columns and the page's views are named from.
            "paced".into()
        } else if closed {
            "closed loop".into()
        } else {
            "open loop".into()
        }),
        ..crate::RunSettings::default()
    }
}

/// The journey pair: the closed journey loop's users (`connections`), or the open journey loop
/// at the whole `rate` (the closed loop has none to share).
fn journey_args(a: &CompareSettings, closed: bool) -> crate::RunSettings {
    crate::RunSettings {
        load: crate::settings::LoadSettings {
            rate: (!closed).then_some(a.rate),
            duration: Some(a.duration),
            ..Default::default()
        },
        max_journeys: closed.then_some(a.connections),
        threads: a.threads,
        timeout: a.timeout,
        closed,
        workload: crate::transport::WorkloadSettings {
            url: (!a.url.is_empty()).then(|| a.url.clone()),
            journey: a.journey.clone(),
            // Refused beside a journey, naming the flag.
            grpc: a.grpc.clone(),
            ..Default::default()
        },
        json: a
            .json_dir
            .as_ref()
            .map(|d| d.join(if closed { "closed.json" } else { "open.json" })),
        label: Some(if closed { "closed loop" } else { "open loop" }.into()),
        ..crate::RunSettings::default()
    }
}

/// Both loops at once against `a.url`, with `sinks` watching: the closed loop's result, then
/// the open loop's, each accounting for every request it scheduled. Writes no file and prints
/// nothing (`json_dir` and `report` are [`run`]'s).
///
/// ```
/// use std::time::Duration;
/// use sojourn::compare::{measure, ClosedMode, CompareSettings};
/// use sojourn::embedded::EmbeddedServer;
///
/// let server = EmbeddedServer::start(sojourn::scenario_arg::resolve("healthy", &[])?)?;
/// let settings = CompareSettings {
///     url: server.url(),
///     rate: 200.0, // the paced closed loop and the open loop send 100 req/s each
///     closed_mode: ClosedMode::Paced,
///     duration: Duration::from_millis(500),
///     connections: 4,
///     threads: Some(1),
///     timeout: Duration::from_secs(2),
///     headers: Vec::new(),
///     insecure: false,
///     cacert: None,
///     tls_server_name: None,
///     report: "compare.html".into(),
///     json_dir: None,
///     json: None,
///     journey: None,
///     grpc: Default::default(),
///     body: None,
/// };
/// let [closed, open] = measure(&settings, &mut sojourn::execute::NoSinks)?;
/// assert_eq!((closed.label.as_str(), open.label.as_str()), ("paced", "open loop"));
/// for r in [&closed, &open] {
///     let c = &r.counts;
///     assert_eq!(c.scheduled, 50, "{}: half a second at 100 req/s", r.label);
///     assert_eq!(c.completed + c.failed.total() + c.censored + c.never_sent, c.scheduled);
///     assert_eq!(c.completed, c.scheduled, "{}: a healthy server answers every one", r.label);
/// }
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn measure(
    a: &CompareSettings,
    sinks: &mut dyn crate::execute::Sinks,
) -> anyhow::Result<[RunResult; 2]> {
    let (mut closed, mut open) = loops(a)?;
    run_loops(&mut closed, &mut open, sinks)
}

/// Runs both loops at once, prints the seeds' table, the verdict and each loop's notes, and
/// writes the page (and `closed.json` and `open.json`, given `json_dir`; the
/// [`CompareDocument`], given `json`). Returns the page as written.
pub fn run(a: CompareSettings, sinks: &mut dyn crate::execute::Sinks) -> anyhow::Result<String> {
    let (mut closed, mut open) = loops(&a)?;
    if let Some(dir) = &a.json_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| crate::bad_input!("--json-dir: cannot create {}: {e}", dir.display()))?;
    }
    match a.journey {
        Some(_) => eprintln!(
            "running the closed journey loop ({} virtual users) and the open journey loop ({} journeys/s) at once for {} …",
            a.connections,
            a.rate,
            humantime::format_duration(a.duration)
        ),
        None => eprintln!(
            "running the {} ({}) and the open loop ({} req/s) at once for {} …",
            a.closed_mode.label(),
            match a.closed_mode {
                ClosedMode::Paced => format!("{} req/s", loop_rate(&a)),
                ClosedMode::Unpaced => "unpaced".into(),
            },
            loop_rate(&a),
            humantime::format_duration(a.duration)
        ),
    }
    let [c, o] = run_loops(&mut closed, &mut open, sinks)?;
    for (v, r) in [(&closed, &c), (&open, &o)] {
        if let Some(path) = &v.json {
            crate::outputs::write_json(path, r)?;
        }
    }
    print_outcome(&c, &o);
    let runs = vec![
        crate::side_by_side::report_run(&c, Vec::new()),
        crate::side_by_side::report_run(&o, Vec::new()),
    ];
    let target = o.config.target.clone().unwrap_or_default();
    let html =
        crate::side_by_side::write_report(&a.report, format!("sojourn compare: {target}"), runs)?;
    println!("report: {}", a.report.display());
    if let Some(path) = &a.json {
        crate::outputs::write_document(path, "--json", &CompareDocument::new(&a, c, o))?;
    }
    Ok(html)
}

/// The two loops' specs, checked before anything runs: (closed, open).
fn loops(a: &CompareSettings) -> anyhow::Result<(RunSpec, RunSpec)> {
    crate::grpc::message_only_for_grpc(&a.url, a.body.as_deref())?;
    Ok((
        crate::validate(run_args(a, true))?,
        crate::validate(run_args(a, false))?,
    ))
}

/// Both loops at once, on their own connections: one after the other, a one-shot stall (a
/// deploy, a failover, a GC) would hit one loop and not the other, and the two would be
/// compared as if they had met the same server.
fn run_loops(
    closed: &mut RunSpec,
    open: &mut RunSpec,
    sinks: &mut dyn crate::execute::Sinks,
) -> anyhow::Result<[RunResult; 2]> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let url = open.requests.shown();
    // Over HTTP/2 (gRPC) each connection carries the streams its transport was allowed.
    let transports = (
        rt.block_on(closed.connectable())?,
        rt.block_on(open.connectable())?,
    );
    closed.fit_pool(&transports.0);
    open.fit_pool(&transports.1);
    let plans = (closed.plan(), open.plan());
    let live = sinks.live();
    let job = |plan, transport, spec: &RunSpec| Job {
        plan,
        transport,
        progress: crate::execute::progress(plan, live),
        about: About {
            target: Some(url.clone()),
            journeys: spec.about().journeys,
            ..About::labelled(&spec.label)
        },
        journeys: spec.script(),
    };
    let jobs = [
        job(&plans.0, transports.0, closed),
        job(&plans.1, transports.1, open),
    ];
    crate::execute::run_together(&rt, jobs, sinks)
}

/// The seeds' table of both loops, the verdict, the open loop's rate line and each loop's notes.
fn print_outcome(c: &RunResult, o: &RunResult) {
    let mut columns = crate::side_by_side::closed_columns(c);
    columns.push(Column::of("open loop", o));
    print!("{}", crate::side_by_side::table(&columns, "open loop"));
    println!("\n{}", crate::side_by_side::verdict(c, o));
    if let Some(line) = sojourn_report::text::rate_line(o) {
        println!("open loop {line}");
    }
    let steps = sojourn_report::finding::steps_side_by_side(c, o);
    if !steps.is_empty() {
        print!("\n{steps}");
    }
    for r in [c, o] {
        for note in &r.checks.notes {
            println!("- {}: {note}", r.label);
        }
    }
}

//! `sojourn run --plan FILE`: a run described in TOML, so a soak or a CI gate lives in the
//! repository beside the service it tests. Every key is a `run` flag by another name, checked
//! by the same parser; a flag given on the command line wins over the file.
//!
//! ```toml
//! schema = "sojourn.plan/1"   # optional: the format's version
//! url = "http://127.0.0.1:8080/api"
//! arrival = "poisson"
//! seed = 7
//! connections = 512
//! timeout = "2s"
//! slo = ["p99<200ms", "hold:errors<0.1%"]
//!
//! [[stage]]
//! name = "warm"
//! duration = "30s"
//! from = 0
//! to = 1000
//!
//! [[stage]]
//! name = "hold"
//! duration = "5m"
//! rate = 1000
//! ```
//!
//! Many requests instead of one URL: `targets = "targets.txt"` (a path relative to the plan's
//! own directory), `targets_order = "random"`; HTTP/2: `http2 = true`, `streams = 64`; a gRPC
//! call beside a `grpc://` url: `proto`, `import_path`, `call`, `data`, `metadata`.
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use sojourn_core::{Stage, Stages};

use crate::bad_input;
use crate::parse::{self as args, ArrivalKind};
use crate::spec::RunSettings;
use crate::transport::TargetsOrder;

/// The version a plan file may name in its `schema` key (`schema/plan.schema.json` describes
/// the file as its TOML parses). A plan without the key is read as this version.
pub const PLAN_SCHEMA: &str = "sojourn.plan/1";

/// The file as written. Unknown keys are refused, so a typo is an error, not a default.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanFile {
    /// The format's version, [`PLAN_SCHEMA`]; optional, as plans written before it had none.
    schema: Option<String>,
    url: Option<String>,
    /// A targets file, as `--targets` takes it; relative to the plan's directory.
    targets: Option<PathBuf>,
    /// As `--targets-order`: `round-robin` or `random`.
    targets_order: Option<String>,
    http2: Option<bool>,
    streams: Option<usize>,
    method: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
    body: Option<String>,
    rate: Option<f64>,
    duration: Option<String>,
    requests: Option<u64>,
    arrival: Option<String>,
    seed: Option<u64>,
    /// The short form, as `--stages` takes it; or `[[stage]]` tables.
    stages: Option<String>,
    #[serde(default)]
    stage: Vec<StageTable>,
    connections: Option<usize>,
    threads: Option<usize>,
    timeout: Option<String>,
    interval: Option<String>,
    label: Option<String>,
    closed: Option<bool>,
    /// Objectives, as `--slo` takes them.
    #[serde(default)]
    slo: Vec<String>,
    /// A gRPC call's `.proto` (a `grpc://` url), as `--proto`; relative to the plan's directory.
    proto: Option<PathBuf>,
    /// As `--import-path`, each relative to the plan's directory.
    #[serde(default)]
    import_path: Vec<PathBuf>,
    /// As `--call`: `pkg.Service/Method`.
    call: Option<String>,
    /// A gRPC call's message as JSON, as `-d`: `body` by its gRPC name.
    data: Option<String>,
    /// As `-m`: `key: value` each.
    #[serde(default)]
    metadata: Vec<String>,
}

/// One `[[stage]]`: `rate` for a hold, or `from` and `to` for a linear move.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageTable {
    name: Option<String>,
    duration: String,
    rate: Option<f64>,
    from: Option<f64>,
    to: Option<f64>,
}

impl PlanFile {
    /// Reads and parses the file; errors name it.
    pub fn read(path: &Path) -> anyhow::Result<PlanFile> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| bad_input!("--plan: cannot read {}: {e}", path.display()))?;
        let plan: PlanFile = toml::from_str(&text).map_err(|e| {
            bad_input!(
                "--plan: {} is not a valid plan: {}",
                path.display(),
                e.to_string().trim()
            )
        })?;
        match plan.schema.as_deref() {
            None | Some(PLAN_SCHEMA) => Ok(plan),
            Some(other) => Err(bad_input!(
                "--plan: {}: schema: {other:?} is not a plan this sojourn reads ({PLAN_SCHEMA}); use the sojourn that wrote it, or drop the key",
                path.display()
            )),
        }
    }
}

/// Fills every setting of `a` that was not given on the command line (`a.explicit` names the
/// flags that were) from the plan in `path`. ([`crate::validate`] does this itself when
/// `a.plan` names the file.)
///
/// ```
/// use std::time::Duration;
/// use sojourn::spec::Load;
/// use sojourn::{plan_file, RunSettings};
///
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("soak.toml");
/// std::fs::write(
///     &path,
///     r#"
/// url = "http://127.0.0.1:8080/api"
/// rate = 250
/// duration = "2s"
/// connections = 64
/// label = "soak"
/// "#,
/// )?;
/// let mut settings = RunSettings::default();
/// plan_file::apply(&mut settings, &path)?;
/// let spec = sojourn::validate(settings)?;
/// let Load::Open(schedule) = &spec.load else { panic!("an open loop") };
/// assert_eq!(schedule.rate.get(), 250.0);
/// assert_eq!(schedule.planned_count(), Some(500)); // 2 s at 250 req/s
/// assert_eq!((spec.connections, spec.label.as_str()), (64, "soak"));
/// assert_eq!(spec.requests.shown(), "http://127.0.0.1:8080/api");
///
/// // A bad value names the file and the key, as `--plan` does on the command line.
/// std::fs::write(&path, "rate = -5")?;
/// let bad = plan_file::apply(&mut RunSettings::default(), &path).unwrap_err();
/// assert!(sojourn::is_bad_input(&bad));
/// assert!(
///     bad.to_string().starts_with(&format!("--plan: {}: rate: ", path.display())),
///     "{bad}"
/// );
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn apply(a: &mut RunSettings, path: &Path) -> anyhow::Result<PlanFile> {
    let p = PlanFile::read(path)?;
    let explicit = std::mem::take(&mut a.explicit);
    let given = |id: &str| explicit.iter().any(|e| e == id);
    let key = |k: &str, e: String| bad_input!("--plan: {}: {k}: {e}", path.display());
    requests(a, &p, path, &given).map_err(|(k, e)| key(k, e))?;
    // A targets file gives each request its own method, headers and body.
    let one_request = a.workload.targets.is_none();
    if let (false, true, Some(m)) = (given("method"), one_request, &p.method) {
        a.workload.method = Some(m.clone());
    }
    if !given("headers") && one_request {
        for h in &p.headers {
            a.workload
                .headers
                .push(args::header(h).map_err(|e| key("headers", e))?);
        }
    }
    if let (false, true, Some(b)) = (given("body") || given("body_file"), one_request, &p.body) {
        a.workload.body = Some(b.clone());
    }
    let load_given = ["rate", "duration", "requests", "stages", "ramp_to"]
        .iter()
        .any(|id| given(id));
    if !load_given {
        a.load.rate = p
            .rate
            .map(args::rate_value)
            .transpose()
            .map_err(|e| key("rate", e))?;
        a.load.duration = p
            .duration
            .as_deref()
            .map(args::positive_duration)
            .transpose()
            .map_err(|e| key("duration", e))?;
        a.load.requests = p
            .requests
            .map(args::requests_value)
            .transpose()
            .map_err(|e| key("requests", e))?;
        a.load.stages = stages(&p).map_err(|e| key("stage", e))?;
        if a.load.stages.is_some()
            && (a.load.rate.is_some() || a.load.duration.is_some() || a.load.requests.is_some())
        {
            return Err(key(
                "stage",
                "stages set the rate and the duration; drop rate, duration and requests".into(),
            ));
        }
    }
    if let (false, Some(arrival)) = (given("arrival"), &p.arrival) {
        a.load.arrival = arrival_kind(arrival).map_err(|e| key("arrival", e))?;
    }
    // The plan's seed goes with its Poisson arrivals; `--arrival constant` on the command line
    // leaves it behind rather than refusing it.
    if !given("seed") && p.seed.is_some() && a.load.arrival == ArrivalKind::Poisson {
        a.load.seed = p.seed;
    }
    if !given("connections") && p.connections.is_some() {
        a.connections = p
            .connections
            .map(args::connections_value)
            .transpose()
            .map_err(|e| key("connections", e))?;
    }
    if !given("threads") && p.threads.is_some() {
        a.threads = p
            .threads
            .map(args::threads_value)
            .transpose()
            .map_err(|e| key("threads", e))?;
    }
    if let (false, Some(t)) = (given("timeout"), &p.timeout) {
        a.timeout = args::positive_duration(t).map_err(|e| key("timeout", e))?;
    }
    if let (false, Some(t)) = (given("interval"), &p.interval) {
        a.interval = args::positive_duration(t).map_err(|e| key("interval", e))?;
    }
    if !given("label") && p.label.is_some() {
        a.label = p.label.clone();
    }
    if !given("closed") {
        a.closed = a.closed || p.closed.unwrap_or(false);
    }
    if !given("slo") && !p.slo.is_empty() {
        a.gate.slo = p.slo.clone();
        a.gate.from_plan = Some(path.to_path_buf());
    }
    let call = grpc(a, &p, path, &given).map_err(|(k, e)| key(k, e))?;
    protocol(a, &p, &given).map_err(|(k, e)| key(k, e))?;
    // After the protocol: a call without a proto is asked of the server over its TLS settings.
    if call {
        check_call(a, &p, &given).map_err(|(k, e)| key(k, e))?;
    }
    Ok(p)
}

/// `proto`, `import_path`, `call`, `data` and `metadata`: a gRPC call, only beside a grpc://
/// target. Whether the plan gave any: then the call is checked ([`check_call`]), so a problem
/// in a key the plan gave names that key.
fn grpc(
    a: &mut RunSettings,
    p: &PlanFile,
    path: &Path,
    given: &dyn Fn(&str) -> bool,
) -> Result<bool, (&'static str, String)> {
    let keys = [
        ("proto", p.proto.is_some()),
        ("import_path", !p.import_path.is_empty()),
        ("call", p.call.is_some()),
        ("data", p.data.is_some()),
        ("metadata", !p.metadata.is_empty()),
    ];
    let Some((first, _)) = keys.iter().find(|(_, set)| *set) else {
        return Ok(false);
    };
    if !a.workload.is_grpc() {
        return Err((
            first,
            "only with a grpc://HOST:PORT (or grpcs://) url".into(),
        ));
    }
    if p.data.is_some() && p.body.is_some() {
        return Err((
            "data",
            "give data or body, not both: data is body's gRPC name".into(),
        ));
    }
    let g = &mut a.workload.grpc;
    if let (false, Some(file)) = (given("proto"), &p.proto) {
        g.proto = Some(beside(path, file));
    }
    if !given("import_path") && !p.import_path.is_empty() {
        g.import_paths = p.import_path.iter().map(|d| beside(path, d)).collect();
    }
    if let (false, Some(call)) = (given("call"), &p.call) {
        g.call = Some(call.clone());
    }
    if !given("metadata") && !p.metadata.is_empty() {
        g.metadata = p.metadata.clone();
    }
    if let (false, Some(data)) = (given("body"), &p.data) {
        a.workload.body = Some(data.clone());
    }
    Ok(true)
}

/// The call as the run will check it; a problem with a flag whose value came from the plan
/// is told under the plan's key (one on the command line is left to the run to name).
fn check_call(
    a: &RunSettings,
    p: &PlanFile,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), (&'static str, String)> {
    let url = a.workload.url.as_deref().unwrap_or_default();
    let body = a.workload.body.as_deref();
    // A bad --cacert is the run's to name.
    let Ok(trust) = a.protocol.trust() else {
        return Ok(());
    };
    // A bad --tls-server-name is the run's to name too.
    let name = a
        .protocol
        .server_name(url, url.starts_with("grpcs://"))
        .ok()
        .flatten();
    let Err(e) = a
        .workload
        .grpc
        .target(url, body, a.timeout, (&trust, name.as_ref()))
    else {
        return Ok(());
    };
    let message = e.to_string();
    let message_key = if p.data.is_some() { "data" } else { "body" };
    let from_plan = [
        ("--proto: ", "proto", p.proto.is_some() && !given("proto")),
        ("--call: ", "call", p.call.is_some() && !given("call")),
        (
            "-d: ",
            message_key,
            a.workload.body.is_some() && !given("body"),
        ),
        (
            "--metadata: ",
            "metadata",
            !p.metadata.is_empty() && !given("metadata"),
        ),
    ];
    for (flag, key, planned) in from_plan {
        if let (true, Some(rest)) = (planned, message.strip_prefix(flag)) {
            return Err((key, rest.to_string()));
        }
    }
    Ok(())
}

/// What to send: the plan's `url`, or its `targets` (with `targets_order`), unless the command
/// line gave either. The file may not give both, nor a targets file with a method, headers or
/// a body, which each target carries itself (as on the command line).
fn requests(
    a: &mut RunSettings,
    p: &PlanFile,
    path: &Path,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), (&'static str, String)> {
    if p.url.is_some() && p.targets.is_some() {
        return Err(("targets", "give url or targets, not both".into()));
    }
    let shaped = [
        ("method", p.method.is_some()),
        ("headers", !p.headers.is_empty()),
        ("body", p.body.is_some()),
    ];
    if let (Some(_), Some((name, _))) = (&p.targets, shaped.iter().find(|(_, set)| *set)) {
        return Err((
            "targets",
            format!("each target gives its own method, headers and body; drop {name}"),
        ));
    }
    // Either one on the command line says what to send; the file's choice then stays out.
    if !given("url") && !given("targets") {
        if let Some(t) = &p.targets {
            a.workload.targets = Some(beside(path, t));
        } else if p.url.is_some() {
            a.workload.url = p.url.clone();
        }
    }
    if let (false, Some(order)) = (given("targets_order"), &p.targets_order) {
        let order = targets_order(order)?;
        if p.targets.is_none() && a.workload.targets.is_none() {
            return Err(("targets_order", "only with targets (or --targets)".into()));
        }
        // A URL on the command line leaves the plan's targets, and their order, behind.
        if a.workload.targets.is_some() {
            a.workload.targets_order = order;
        }
    }
    if a.workload.targets.is_some() {
        let line = ["method", "headers", "body", "body_file"];
        if let Some(flag) = line.iter().find(|f| given(f)) {
            return Err((
                "targets",
                format!(
                    "each target gives its own method, headers and body; drop --{}",
                    flag.replace('_', "-")
                ),
            ));
        }
    }
    Ok(())
}

/// `http2` and `streams`, through the flags' parsers; `streams` only over HTTP/2.
fn protocol(
    a: &mut RunSettings,
    p: &PlanFile,
    given: &dyn Fn(&str) -> bool,
) -> Result<(), (&'static str, String)> {
    if let (false, Some(on)) = (given("http2"), p.http2) {
        a.protocol.http2 = on;
    }
    if let (false, Some(n)) = (given("streams"), p.streams) {
        a.protocol.streams = Some(args::streams_value(n).map_err(|e| ("streams", e))?);
    }
    // gRPC runs on HTTP/2 whatever `http2` says.
    if a.protocol.streams.is_some() && !a.protocol.http2 && !a.workload.is_grpc() {
        return Err((
            "streams",
            "streams are HTTP/2's: set http2 = true (or give --http2)".into(),
        ));
    }
    Ok(())
}

/// A path in the plan, relative to the plan's own directory (so a plan and its targets file
/// move together); an absolute one as it is.
fn beside(plan: &Path, file: &Path) -> PathBuf {
    match plan.parent() {
        Some(dir) if file.is_relative() => dir.join(file),
        _ => file.to_path_buf(),
    }
}

/// `round-robin` or `random`, as `--targets-order` takes them.
fn targets_order(text: &str) -> Result<TargetsOrder, (&'static str, String)> {
    match text {
        "round-robin" => Ok(TargetsOrder::RoundRobin),
        "random" => Ok(TargetsOrder::Random),
        _ => Err((
            "targets_order",
            format!("expected round-robin or random, got {text:?}"),
        )),
    }
}

/// `constant`, `poisson` or `ramp`, as `--arrival` takes them.
fn arrival_kind(text: &str) -> Result<ArrivalKind, String> {
    match text {
        "constant" => Ok(ArrivalKind::Constant),
        "poisson" => Ok(ArrivalKind::Poisson),
        "ramp" => Ok(ArrivalKind::Ramp),
        other => Err(format!("expected constant, poisson or ramp, got {other:?}")),
    }
}

/// The plan's stages, from `stages = "…"` or from `[[stage]]` tables (not both).
fn stages(p: &PlanFile) -> Result<Option<Stages>, String> {
    match (&p.stages, p.stage.is_empty()) {
        (Some(_), false) => Err("give stages = \"…\" or [[stage]] tables, not both".into()),
        (Some(text), true) => args::stages(text).map(Some),
        (None, true) => Ok(None),
        (None, false) => {
            let list = p
                .stage
                .iter()
                .enumerate()
                .map(|(i, s)| stage(i + 1, s))
                .collect::<Result<Vec<_>, _>>()?;
            Stages::new(list).map(Some).map_err(|e| e.to_string())
        }
    }
}

fn stage(number: usize, s: &StageTable) -> Result<Stage, String> {
    let duration: Duration = args::positive_duration(&s.duration)
        .map_err(|e| format!("stage {number}: duration: {e}"))?;
    let (from, to) = match (s.rate, s.from, s.to) {
        (Some(r), None, None) => (r, r),
        (None, Some(from), Some(to)) => (from, to),
        _ => {
            return Err(format!(
                "stage {number}: give rate = R for a hold, or from = A and to = B for a ramp"
            ))
        }
    };
    Ok(Stage {
        name: s.name.clone(),
        duration,
        from,
        to,
    })
}

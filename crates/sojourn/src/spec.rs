//! The typed run spec: everything a run needs, with every default stated once ([`defaults`]).
//!
//! A run is described by [`RunSettings`] (what a person can say: flags, a `--plan` file, or code,
//! each field as typed or absent) and checked once into a [`RunSpec`] by [`validate`]. The spec
//! is the only maker of an engine plan ([`RunSpec::plan`]): `run`, `compare`, `sweep` steps,
//! `demo`, `suite` and the library's [`crate::OpenLoop`]/[`crate::ClosedLoop`] all go through it.
//! An error names the flag (or the plan file and key) as a [`BadInput`].
//!
//! [`defaults`]: crate::defaults
//! [`BadInput`]: crate::BadInput
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::{End, Shard};
use sojourn_engine::{Plan, Slack, Trust};

use crate::bad_input;
pub use crate::outputs::Outputs;
use crate::parse::{self, ArrivalKind};
use crate::transport::{AnyTransport, Protocol, Requests, TargetsOrder};

/// What a spec offers ([`RunSpec::load`]): an open schedule, a paced closed loop, or a closed
/// loop's end.
pub use sojourn_engine::Load;

pub use crate::defaults;
pub use crate::settings::RunSettings;

/// A run that has passed validation: what to send, how, with which load, and where to write.
/// [`RunSpec::plan`] is the engine's plan.
pub struct RunSpec {
    /// The schedule (open, paced) or the closed loop's end.
    pub load: Load,
    /// Connections asked for; with HTTP/2 the plan's pool holds this many times the streams.
    pub connections: usize,
    /// Worker threads.
    pub threads: usize,
    /// How long one request may take.
    pub timeout: Duration,
    /// The timeline's interval.
    pub interval: Duration,
    /// How the pacer waits for a due time.
    pub timer: TimerPolicy,
    /// The part of the schedule this process runs.
    pub shard: Shard,
    /// When the schedule starts, if not now.
    pub start_at: Option<std::time::SystemTime>,
    /// What is sent.
    pub requests: Requests,
    /// Over which protocol.
    pub protocol: Protocol,
    /// Stream slots per connection once connected (HTTP/2), as the transport allowed.
    pub streams: Option<usize>,
    /// `h2`/`h2c` once connected over HTTP/2.
    pub protocol_name: Option<String>,
    /// Which certificates an https target may present.
    pub trust: Trust,
    /// The name its certificate must be for, when not the URL's host (`--tls-server-name`).
    pub server_name: Option<sojourn_engine::TlsServerName>,
    /// Where the result document goes.
    pub json: Option<PathBuf>,
    /// The other files asked for.
    pub outputs: Outputs,
    /// The run's label in every output.
    pub label: String,
    /// Exit 3 when a self-check fails or the run is not valid.
    pub strict: bool,
    /// The warm-up to trim.
    pub warmup: Option<sojourn_core::result::WarmupRequest>,
    /// The objectives to gate on.
    pub gate: crate::gate::Gate,
    /// `--repeat`: how many repetitions and the pause between them; `None` for one run.
    pub repeat: Option<crate::repeat::Repeat>,
    /// Journeys (`--journey`): the file and the seed of its choices; `connections` is then the
    /// most journeys at once.
    pub journeys: Option<crate::journeys::FileScript>,
}

/// How the pacer waits, and whether the hiccup meters run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimerPolicy {
    /// How long it may spin before a due time.
    pub spin: Duration,
    /// The timer slack it asks of the kernel.
    pub slack: Slack,
    /// Whether the in-process and control hiccup meters run.
    pub meters: bool,
}

impl Default for TimerPolicy {
    fn default() -> TimerPolicy {
        TimerPolicy {
            spin: defaults::TIMER_SPIN,
            slack: Slack::Auto,
            meters: true,
        }
    }
}

impl RunSpec {
    /// A spec for `load` with every other setting at its default and nothing to send yet
    /// (in-process calls): the start of the library's loops, `demo`'s and `suite`'s runs.
    pub fn of(load: Load) -> RunSpec {
        let label = crate::live::mode(&load).to_string();
        RunSpec {
            load,
            connections: defaults::OPEN_CONNECTIONS,
            threads: 1,
            timeout: defaults::TIMEOUT,
            interval: defaults::INTERVAL,
            timer: TimerPolicy::default(),
            shard: Shard::WHOLE,
            start_at: None,
            requests: Requests::none(),
            protocol: Protocol::Http1,
            streams: None,
            protocol_name: None,
            trust: Trust::PublicRoots,
            server_name: None,
            json: None,
            outputs: Outputs::default(),
            label,
            strict: false,
            warmup: None,
            gate: Default::default(),
            repeat: None,
            journeys: None,
        }
    }

    /// The engine's plan: the only place one is made outside the engine.
    pub fn plan(&self) -> Plan {
        let meters = self.timer.meters;
        Plan {
            load: self.load.clone(),
            connections: self.connections.saturating_mul(self.streams.unwrap_or(1)),
            threads: self.threads,
            timeout: self.timeout,
            interval: self.interval,
            spin: self.timer.spin,
            slack: self.timer.slack,
            hiccup: meters.then_some(sojourn_engine::HICCUP_TICK),
            control: meters.then(crate::control::command).flatten(),
            samples: None,
            shard: self.shard,
            start_at: self.start_at,
            targets: self.requests.targets.clone(),
            streams: self
                .protocol_name
                .is_some()
                .then_some(self.streams)
                .flatten(),
        }
    }

    /// Sizes the pool in stream slots: each connection carries as many streams as the
    /// transport was allowed (one for HTTP/1.1).
    pub fn fit_pool(&mut self, transport: &AnyTransport) {
        self.protocol_name = transport.protocol_name(&self.requests.first().url);
        self.streams = Some(transport.streams());
    }

    /// What the result says of itself beyond the plan: the label, the target, the protocol
    /// spoken (once connected) and the targets file, and the warm-up to trim.
    pub fn about(&self) -> sojourn_engine::result::About {
        sojourn_engine::result::About {
            label: self.label.clone(),
            target: (!self.requests.list.is_empty()).then(|| self.requests.shown()),
            protocol: self.protocol_name.clone(),
            targets: self.requests.config.clone(),
            warmup: self.warmup,
            // A run of a URL does not know what the target serves.
            scenario: None,
            journeys: self.journeys.as_ref().map(|j| j.names(self.connections)),
        }
    }

    /// The journeys to run, for the engine (`--journey`).
    pub fn script(&self) -> Option<Arc<dyn sojourn_engine::journey::Script>> {
        let script = self.journeys.clone()?;
        Some(Arc::new(script))
    }

    /// The fingerprint of the plan this process runs a shard of, before it runs: the one its
    /// result will carry.
    pub fn fingerprint(&self) -> String {
        let plan = self.plan();
        let config = sojourn_engine::result::config(&plan, &self.about());
        sojourn_engine::result::plan_fingerprint(&plan, &config)
    }

    /// Resolves the target and opens one connection (see [`crate::transport::connectable`]).
    pub async fn connectable(&self) -> anyhow::Result<AnyTransport> {
        crate::transport::connectable(
            &self.requests,
            &self.trust,
            self.server_name.as_ref(),
            self.protocol,
            self.timeout,
        )
        .await
    }
}

/// Checks `a` once into a spec: every error names the flag (or the plan file and key).
pub fn validate(mut a: RunSettings) -> anyhow::Result<RunSpec> {
    if let Some(path) = a.plan.clone() {
        crate::plan_file::apply(&mut a, &path)?;
    }
    let gate = crate::gate::Gate::parse(a.gate.clone())?;
    partners(&a)?;
    let journeys = a
        .workload
        .journeys(a.load.seed.unwrap_or(defaults::JOURNEY_SEED))?;
    if journeys.is_some() {
        journey_partners(&a)?;
    }
    let trust = a.protocol.trust()?;
    // Reflection asks a gRPC server before the run: over TLS, its certificate is checked
    // against the name the run's own connections use.
    let reflect_as = match (&a.workload.url, a.workload.is_grpc()) {
        (Some(url), true) => a.protocol.server_name(url, url.starts_with("grpcs://"))?,
        _ => None,
    };
    let reach = (&trust, reflect_as.as_ref());
    let requests = a
        .workload
        .requests(a.load.seed, journeys.as_ref(), a.timeout, reach)?;
    let end = end(&a)?;
    let load = if a.closed {
        closed_load(&a, end)?
    } else {
        open_load(&a, end)?
    };
    if let (Some(script), Load::Open(schedule)) = (&journeys, &load) {
        rows_suffice(script, schedule)?;
    }
    let (connections, threads) = pool(&a, &load)?;
    let shard = shard(&a, &|name| std::env::var(name).ok())?;
    if !shard.is_whole() && matches!(load, Load::Closed(_)) {
        return Err(bad_input!(
            "--shard: a closed loop without --rate has no schedule to share out; give --rate (a paced closed loop) or run the open loop"
        ));
    }
    check_start(a.start_at, &load)?;
    let repeat = crate::repeat::Repeat::check(a.repeat, a.repeat_pause)?;
    if repeat.is_some() {
        repeatable(&a, shard)?;
    }
    let stages = match &load {
        Load::Open(s) | Load::Paced(s) => s.stages.as_ref().map(sojourn_core::Stages::configs),
        Load::Closed(_) => None,
    };
    gate.check_stages(stages.as_deref())?;
    let label = a.label.unwrap_or_else(|| crate::live::mode(&load).into());
    let server_name = a
        .protocol
        .server_name(&requests.shown(), requests.over_tls())?;
    Ok(RunSpec {
        load,
        connections,
        threads,
        timeout: a.timeout,
        interval: a.interval,
        timer: TimerPolicy {
            spin: a.timer_spin,
            slack: a.timer_slack,
            meters: !a.no_hiccup_meter,
        },
        shard,
        start_at: a.start_at,
        requests,
        protocol: a.protocol.protocol(a.workload.is_grpc())?,
        streams: None,
        protocol_name: None,
        trust,
        server_name,
        outputs: Outputs {
            hgrm: a.hgrm,
            hlog: a.hlog,
            samples: a.samples,
            sample_ratio: a.sample_ratio,
        },
        json: a.json,
        label,
        strict: a.strict,
        warmup: a.warmup,
        gate,
        repeat,
        journeys,
    })
}

/// Flags that mean nothing beside `--journey`, each refused with what to do instead.
fn journey_partners(a: &RunSettings) -> anyhow::Result<()> {
    let w = &a.workload;
    let refused = [
        (
            w.url.is_some(),
            "URL",
            "the journey file names its origin (base_url)",
        ),
        (
            w.targets.is_some(),
            "--targets",
            "a run follows journeys or sends targets, not both",
        ),
        (
            a.closed && a.load.rate.is_some(),
            "--rate",
            "with --closed, each of the --max-journeys virtual users starts its next journey when the last ends, so the closed journey loop has no rate; drop --rate (or --closed, for journeys arriving at --rate)",
        ),
        (a.protocol.http2, "--http2", "journeys speak HTTP/1.1 today"),
        (
            a.connections.is_some(),
            "--connections",
            "each journey has a connection of its own: use --max-journeys",
        ),
        (
            a.samples.is_some(),
            "--samples",
            "per-request samples are not written for journeys yet",
        ),
        (
            a.repeat.is_some(),
            "--repeat",
            "repetitions of journeys are not merged yet; run them one by one with different --seed",
        ),
    ];
    for (given, flag, why) in refused {
        if given {
            return Err(bad_input!("{flag}: not with --journey: {why}"));
        }
    }
    Ok(())
}

/// `order = "unique"` data must hold a row for every journey the whole plan schedules.
fn rows_suffice(
    script: &crate::journeys::FileScript,
    schedule: &sojourn_core::Schedule,
) -> anyhow::Result<()> {
    let (Some(rows), Some(journeys)) = (script.file().rows(), schedule.planned_count()) else {
        return Ok(());
    };
    sojourn_core::journey::unique_rows_suffice(rows, journeys).map_err(|e| bad_input!("{e}"))
}

/// `--repeat` beside flags that cannot repeat, each refused with the reason.
fn repeatable(a: &RunSettings, shard: Shard) -> anyhow::Result<()> {
    if !shard.is_whole() {
        return Err(bad_input!("--repeat: not with --shard or --shard-from-env: a shard is one part of a plan that other processes run at the same time, so repeating one alone repeats no whole run; repeat the whole sharded run instead (one `sojourn merge` per repetition)"));
    }
    if a.start_at.is_some() {
        return Err(bad_input!("--repeat: not with --start-at: every repetition after the first would start long after that instant; drop --start-at"));
    }
    if a.samples.is_some() {
        return Err(bad_input!("--repeat: not with --samples: the repetitions' requests would share one file, each repetition's due offsets starting again from 0; drop --samples, or run the repetitions one by one"));
    }
    if a.metrics_listen.is_some() {
        return Err(bad_input!("--repeat: not with --metrics-listen: the endpoint stops when a run ends, so it would serve the first repetition only; drop --metrics-listen"));
    }
    Ok(())
}

/// Flags that only mean something beside another, checked once the plan file (which may give
/// either) has been applied.
fn partners(a: &RunSettings) -> anyhow::Result<()> {
    a.protocol.protocol(a.workload.is_grpc())?;
    a.workload.check()?;
    Ok(())
}

/// `--shard K/N`, or `--shard-from-env` with the index from the environment (`var` reads it).
fn shard(a: &RunSettings, var: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Shard> {
    if let Some(s) = a.shard {
        if a.shard_count.is_some() {
            return Err(bad_input!(
                "--shard-count: only with --shard-from-env; --shard K/N gives N already"
            ));
        }
        return Ok(s);
    }
    if !a.shard_from_env {
        if a.shard_count.is_some() {
            return Err(bad_input!("--shard-count: only with --shard-from-env"));
        }
        return Ok(Shard::WHOLE);
    }
    shard_from_env(var, a.shard_count)
}

/// Kubernetes' Indexed Job sets JOB_COMPLETION_INDEX; Slurm sets SLURM_PROCID and SLURM_NTASKS.
fn shard_from_env(
    var: &dyn Fn(&str) -> Option<String>,
    count: Option<u32>,
) -> anyhow::Result<Shard> {
    let number = |name: &str, text: String| {
        text.trim()
            .parse::<u32>()
            .map_err(|_| bad_input!("--shard-from-env: {name} is {text:?}, not a shard number"))
    };
    let (index, slurm_count) = match (var("JOB_COMPLETION_INDEX"), var("SLURM_PROCID")) {
        (Some(k), _) => (number("JOB_COMPLETION_INDEX", k)?, None),
        (None, Some(k)) => (
            number("SLURM_PROCID", k)?,
            var("SLURM_NTASKS").map(|n| number("SLURM_NTASKS", n)).transpose()?,
        ),
        (None, None) => {
            return Err(bad_input!(
                "--shard-from-env: neither JOB_COMPLETION_INDEX (a Kubernetes Indexed Job) nor SLURM_PROCID is set; give --shard K/N instead"
            ))
        }
    };
    let count = count.or(slurm_count).ok_or_else(|| {
        bad_input!("--shard-count: required with --shard-from-env: the number of shards, e.g. the Job's completions")
    })?;
    Shard::new(index, count).map_err(|e| bad_input!("--shard-from-env: {e}"))
}

/// The longest a process waits for `--start-at`: longer is a mistyped date.
const MAX_START_AHEAD: Duration = Duration::from_secs(24 * 3600);

/// A start too far ahead is a typo; one so far behind that the whole schedule is already past
/// would send everything at once and measure only that.
fn check_start(start_at: Option<std::time::SystemTime>, load: &Load) -> anyhow::Result<()> {
    let Some(at) = start_at else { return Ok(()) };
    let shown = humantime::format_rfc3339_millis(at);
    match at.duration_since(std::time::SystemTime::now()) {
        Ok(ahead) if ahead > MAX_START_AHEAD => Err(bad_input!(
            "--start-at: {shown} is {} ahead; the most a run waits is a day",
            parse::short_duration(ahead)
        )),
        Ok(_) => Ok(()),
        Err(behind) => {
            let late = behind.duration();
            let length = match load {
                Load::Open(s) | Load::Paced(s) => sojourn_engine::run::schedule_end(s),
                Load::Closed(_) => Duration::ZERO,
            };
            if late < length {
                return Ok(());
            }
            Err(bad_input!(
                "--start-at: {shown} is {} ago, past the whole schedule ({}); give a time still to come",
                parse::short_duration(late),
                parse::short_duration(length)
            ))
        }
    }
}

/// `--duration` or `--requests`.
fn end(a: &RunSettings) -> anyhow::Result<End> {
    Ok(match (a.load.duration, a.load.requests) {
        (_, Some(0)) => return Err(bad_input!("--requests: must be at least 1, got 0")),
        (_, Some(n)) => End::Count(n),
        (Some(d), None) => End::After(d),
        (None, None) => End::After(defaults::DURATION),
    })
}

/// `--connections` and `--threads`, with their defaults: a closed loop gets a thread per CPU;
/// an open loop as many as its peak rate needs, up to one per CPU.
fn pool(a: &RunSettings, load: &Load) -> anyhow::Result<(usize, usize)> {
    let default_connections = match a.closed {
        true => defaults::CLOSED_CONNECTIONS,
        false => a.protocol.open_connections(a.workload.is_grpc()),
    };
    let connections = match (a.connections, a.max_journeys) {
        (_, Some(0)) => return Err(bad_input!("--max-journeys: must be at least 1, got 0")),
        (_, Some(_)) if a.workload.journey.is_none() => {
            return Err(bad_input!("--max-journeys: only with --journey FILE"))
        }
        (_, Some(n)) => n,
        // The closed journey loop's virtual users, as many as the closed loop's connections.
        (None, None) if a.workload.journey.is_some() && a.closed => defaults::CLOSED_CONNECTIONS,
        (None, None) if a.workload.journey.is_some() => defaults::MAX_JOURNEYS,
        (Some(0), _) => return Err(bad_input!("--connections: must be at least 1, got 0")),
        (Some(n), _) => n,
        (None, None) => default_connections,
    };
    let threads = match a.threads {
        Some(0) => return Err(bad_input!("--threads: must be at least 1, got 0")),
        Some(n) => n,
        None => {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            match load {
                Load::Open(s) | Load::Paced(s) => ((s.peak_rate() / defaults::OPEN_RATE_PER_THREAD)
                    .ceil() as usize)
                    .clamp(1, cpus),
                Load::Closed(_) => cpus,
            }
        }
    };
    Ok((connections, threads))
}

/// `--seed` as the arrival process sees it: random target order and a journey file's choices
/// take it too, so it is not a mistake there without Poisson arrivals.
fn arrival_seed(a: &RunSettings) -> Option<u64> {
    let w = &a.workload;
    let for_targets = w.targets.is_some() && w.targets_order == TargetsOrder::Random;
    let for_choices = for_targets || w.journey.is_some();
    a.load
        .seed
        .filter(|_| a.load.arrival == ArrivalKind::Poisson || !for_choices)
}

fn open_load(a: &RunSettings, end: End) -> anyhow::Result<Load> {
    let rate = || {
        a.load.rate.ok_or_else(|| bad_input!("--rate: required for the open loop, e.g. --rate 1000 (requests per second); or use --closed"))
    };
    Ok(Load::Open(a.load.schedule(arrival_seed(a), end, rate)?))
}

fn closed_load(a: &RunSettings, end: End) -> anyhow::Result<Load> {
    // Stages or a rate pace the closed loop (the rate is read only without stages, where it is
    // given); with neither it runs unpaced.
    if a.load.stages.is_some() || a.load.rate.is_some() {
        let rate = || Ok(a.load.rate.unwrap_or_default());
        return Ok(Load::Paced(a.load.schedule(arrival_seed(a), end, rate)?));
    }
    if a.load.arrival != ArrivalKind::Constant
        || a.load.ramp_to.is_some()
        || arrival_seed(a).is_some()
    {
        return Err(bad_input!(
            "--arrival: an unpaced closed loop has no schedule; give --rate or --stages for a paced closed loop, or drop --arrival/--ramp-to/--seed"
        ));
    }
    Ok(Load::Closed(end))
}

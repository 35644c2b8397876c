//! Sweeps: offer a list of rates, or search for the highest rate the target holds, one fresh
//! open-loop run per step, each judged by [`evaluate`] (OK, SATURATED, GENERATOR-BOUND,
//! POOL-BOUND, and any objectives); the table, the sweep document (`sojourn.sweep/1`) and the
//! page. The judging itself ([`evaluate`], [`Search`], [`StepRules`]) is the core's, re-exported
//! here.
//!
//! [`evaluate`]: crate::sweep::evaluate
//! [`Search`]: crate::sweep::Search
//! [`StepRules`]: crate::sweep::StepRules
use std::path::PathBuf;
use std::time::Duration;

use sojourn_core::sweep;
pub use sojourn_core::sweep::*;
use sojourn_core::{format_ns, Rate, RunResult};
use sojourn_report::sweep_plot::{Cliffs, SweepPoint};

use crate::bad_input;

/// What to offer: a list of rates, or a search.
pub enum Offer {
    /// Each rate once, in the order given.
    Rates(Vec<Rate>),
    /// Rates chosen one after another to bracket the highest rate the target holds.
    Search(sweep::Search),
}

/// A validated sweep.
pub struct Config {
    /// The rates to offer.
    pub offer: Offer,
    /// How long each step offers its rate, settle included.
    pub step: Duration,
    /// The start of each step left out of its percentiles and verdict.
    pub settle: Duration,
    /// The timeline's interval: fine enough that the kept part of a step has a dozen points
    /// for the trend test.
    pub interval: Duration,
    /// Response-time objectives every step must also meet to pass.
    pub slos: Vec<Slo>,
    /// Where to write the HTML page.
    pub report: Option<PathBuf>,
}

/// One `--slo` through the parser `run` and `report` use; a step is judged on response-time
/// percentiles only.
fn step_slo(text: &str) -> anyhow::Result<Slo> {
    let objective = text
        .parse::<sojourn_core::gate::Objective>()
        .map_err(|e| bad_input!("--slo: {e}"))?;
    objective.step_slo().ok_or_else(|| {
        bad_input!(
            "--slo: {}: a sweep judges each step on a response-time percentile like p99<200ms; error, rate and per-stage objectives are for run and report",
            objective.text
        )
    })
}

/// The kept part of a step must hold enough intervals for a trend test to mean anything.
const MIN_KEPT: Duration = Duration::from_secs(1);
const MAX_SETTLE: Duration = Duration::from_secs(5);

/// A sweep as a person describes it (`sojourn sweep`'s and `sojourn sim --sweep`'s flags).
#[derive(Debug, Clone)]
pub struct SweepSettings {
    /// Offered rates in requests per second.
    pub rates: Option<Vec<f64>>,
    /// The lowest rate (with `to` and `steps`, or with `search`).
    pub from: Option<f64>,
    /// The highest rate; a search never offers more.
    pub to: Option<f64>,
    /// How many evenly spaced rates from `from` to `to`.
    pub steps: Option<usize>,
    /// How long each step offers its rate, settle included.
    pub step: Duration,
    /// The start of each step left out of its percentiles and verdict (default: a quarter of
    /// `step`, at most 5 s).
    pub settle: Option<Duration>,
    /// Latency objectives on the response time, e.g. `p99<200ms`.
    pub slo: Vec<String>,
    /// Search for the highest rate that is not saturated and meets every objective.
    pub search: bool,
    /// A search stops once its bracket is this many requests per second wide.
    pub resolution: f64,
    /// The most steps a search may run.
    pub max_probes: usize,
    /// Where to write the HTML page.
    pub report: Option<PathBuf>,
}

/// A sweep of an HTTP target: one run per step, each on a fresh schedule.
///
/// Two one-second steps against the pathology server run in this process:
///
/// ```
/// use std::time::Duration;
/// use sojourn::embedded::EmbeddedServer;
/// use sojourn::sweep::{HttpSweep, Status, SweepSettings};
///
/// let server = EmbeddedServer::start(sojourn::scenario_arg::resolve("healthy", &[])?)?;
/// let config = SweepSettings {
///     rates: Some(vec![50.0, 100.0]),
///     from: None,
///     to: None,
///     steps: None,
///     step: Duration::from_secs(1),
///     settle: Some(Duration::ZERO), // the server has nothing to warm up
///     slo: vec!["p99<500ms".into()],
///     search: false,
///     resolution: 10.0,
///     max_probes: 8,
///     report: None,
/// }
/// .validate()?;
/// let sweep = HttpSweep {
///     url: server.url(),
///     connections: 16,
///     threads: Some(1),
///     timeout: Duration::from_secs(2),
///     headers: Vec::new(),
///     insecure: false,
///     cacert: None,
///     tls_server_name: None,
///     grpc: Default::default(),
///     body: None,
/// };
/// let (outcome, _threads) = sweep.run(&config, &mut sojourn::execute::NoSinks, |_| {})?;
/// let offered: Vec<f64> = outcome.steps.iter().map(|(step, _)| step.target).collect();
/// assert_eq!(offered, [50.0, 100.0]);
/// for (step, result) in &outcome.steps {
///     // Every request of a step answered: a second at its rate.
///     assert_eq!(result.counts.scheduled, step.target as u64);
///     assert_eq!(result.counts.completed, result.counts.scheduled);
///     // The healthy server holds both rates: a loaded machine may hold the generator back
///     // (GENERATOR-BOUND), but the target is never the one that fell behind.
///     assert_ne!(step.status, Status::Saturated, "{}", sojourn::sweep::row(step));
///     assert!(step.slos.iter().all(|c| c.met), "{}", sojourn::sweep::row(step));
/// }
/// assert_eq!(outcome.bracket.failing, None);
/// # Ok::<(), anyhow::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct HttpSweep {
    /// The target URL.
    pub url: String,
    /// The most connections to open.
    pub connections: usize,
    /// Worker threads (default: as a run picks them).
    pub threads: Option<usize>,
    /// Longest wait for one answer, and the drain after each step.
    pub timeout: Duration,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// Skip TLS certificate verification.
    pub insecure: bool,
    /// Trust only these CA certificates.
    pub cacert: Option<PathBuf>,
    /// The name a TLS target's certificate must be for, instead of the URL's host.
    pub tls_server_name: Option<String>,
    /// A gRPC call's proto, method and metadata (a `grpc://` target).
    pub grpc: crate::grpc::GrpcSettings,
    /// A gRPC call's message, as JSON (`-d`); only with a `grpc://` target.
    pub body: Option<String>,
}

impl HttpSweep {
    /// The run of one step at `rate`.
    pub fn step(&self, config: &Config, rate: Rate) -> crate::RunSettings {
        crate::RunSettings {
            load: crate::settings::LoadSettings {
                rate: Some(rate.get()),
                duration: Some(config.step),
                ..Default::default()
            },
            connections: Some(self.connections),
            threads: self.threads,
            timeout: self.timeout,
            workload: crate::transport::WorkloadSettings {
                url: Some(self.url.clone()),
                headers: self.headers.clone(),
                body: self.body.clone(),
                grpc: self.grpc.clone(),
                ..Default::default()
            },
            protocol: crate::transport::ProtocolSettings {
                insecure: self.insecure,
                cacert: self.cacert.clone(),
                tls_server_name: self.tls_server_name.clone(),
                ..Default::default()
            },
            interval: config.interval,
            label: Some(step_label(rate.get())),
            ..crate::RunSettings::default()
        }
    }

    /// The first step's run, checked: a bad URL, header or gRPC call is one line of bad input
    /// before anything is sent.
    pub fn check(&self, config: &Config) -> anyhow::Result<crate::spec::RunSpec> {
        crate::grpc::message_only_for_grpc(&self.url, self.body.as_deref())?;
        crate::validate(self.step(config, Rate::per_second(1.0)?))
    }

    /// Checks the target once (a bad URL or header fails before any step, and an unreachable
    /// target before the first), then runs every step with `sinks` watching and `on_step`
    /// told of each step's verdict. Returns the outcome and the worker threads the steps used.
    pub fn run(
        &self,
        config: &Config,
        sinks: &mut dyn crate::execute::Sinks,
        on_step: impl FnMut(&Step),
    ) -> anyhow::Result<(Outcome, usize)> {
        let first = self.check(config)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(first.connectable())?;
        let outcome = drive(
            config,
            |rate| {
                // A fresh schedule per step: each starts at its own time zero.
                let mut spec = crate::validate(self.step(config, rate))?;
                crate::execute::run_spec(&rt, &mut spec, sinks)
            },
            on_step,
        )?;
        Ok((outcome, first.plan().worker_count()))
    }
}

impl SweepSettings {
    /// Checks the settings into a sweep; errors name the flag.
    pub fn validate(&self) -> anyhow::Result<Config> {
        let settle = self.settle.unwrap_or((self.step / 4).min(MAX_SETTLE));
        let kept = self.step.saturating_sub(settle);
        if kept < MIN_KEPT {
            return Err(bad_input!(
                "--step: {} is too short to settle: it leaves {} after the {} settle; give --step at least {} more than --settle",
                humantime::format_duration(self.step),
                humantime::format_duration(kept),
                humantime::format_duration(settle),
                humantime::format_duration(MIN_KEPT)
            ));
        }
        let slos = self
            .slo
            .iter()
            .map(|s| step_slo(s))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let interval = (kept / 12).clamp(Duration::from_millis(100), Duration::from_secs(1));
        Ok(Config {
            offer: self.offer()?,
            step: self.step,
            settle,
            interval,
            slos,
            report: self.report.clone(),
        })
    }

    fn offer(&self) -> anyhow::Result<Offer> {
        let rates = self.rate_list()?;
        if !self.search {
            return Ok(Offer::Rates(rates));
        }
        let lowest = rates
            .iter()
            .copied()
            .fold(rates[0], |a, b| if b < a { b } else { a });
        let highest = rates
            .iter()
            .copied()
            .fold(rates[0], |a, b| if b > a { b } else { a });
        Ok(Offer::Search(sweep::Search {
            from: lowest,
            to: highest,
            resolution: self.resolution,
            max_probes: self.max_probes,
        }))
    }

    /// The rates given; with --search, --from and --to alone are enough.
    fn rate_list(&self) -> anyhow::Result<Vec<Rate>> {
        let flag_rate =
            |flag: &str, v: f64| Rate::per_second(v).map_err(|e| bad_input!("{flag}: {e}"));
        if let Some(list) = &self.rates {
            return list.iter().map(|&v| flag_rate("--rates", v)).collect();
        }
        let (Some(from), Some(to)) = (self.from, self.to) else {
            return Err(bad_input!(
                "--rates: give the rates to offer, e.g. --rates 5,10,20, or --from A --to B --steps N"
            ));
        };
        let (from, to) = (flag_rate("--from", from)?, flag_rate("--to", to)?);
        if to < from {
            return Err(bad_input!(
                "--to: {} is below --from {}",
                to.get(),
                from.get()
            ));
        }
        match (self.steps, self.search) {
            (Some(n), _) => Ok(sweep::linear_rates(from, to, n)),
            (None, true) => Ok(vec![from, to]),
            (None, false) => Err(bad_input!(
                "--steps: how many rates from --from to --to, e.g. --steps 10"
            )),
        }
    }
}

/// Every step run, and where the cliff lies.
pub struct Outcome {
    /// Each step's verdict and whole result, in the order run.
    pub steps: Vec<(Step, RunResult)>,
    /// The highest rate that passed and the lowest that failed.
    pub bracket: Bracket,
    /// The search's probes and why it stopped, when it was a search.
    pub search: Option<SearchOutcome>,
}

/// Runs the sweep with `run_step`, which offers one rate for `config.step` on a fresh schedule
/// and returns the step's result.
pub fn drive(
    config: &Config,
    mut run_step: impl FnMut(Rate) -> anyhow::Result<RunResult>,
    mut on_step: impl FnMut(&Step),
) -> anyhow::Result<Outcome> {
    let rules = StepRules::new(config.settle, config.step);
    let mut steps = Vec::new();
    let mut one = |rate: Rate| -> anyhow::Result<Probe> {
        let result = run_step(rate)?;
        let step = sweep::evaluate(&result, rate, &rules, &config.slos)?;
        on_step(&step);
        let probe = step.probe();
        steps.push((step, result));
        Ok(probe)
    };
    let search = match &config.offer {
        Offer::Rates(rates) => {
            for &rate in rates {
                one(rate)?;
            }
            None
        }
        Offer::Search(s) => Some(s.run(&mut one)?),
    };
    let bracket = match &search {
        Some(s) => s.bracket,
        None => {
            let probes: Vec<(f64, Probe)> =
                steps.iter().map(|(s, _)| (s.target, s.probe())).collect();
            sweep::bracket_of(&probes)
        }
    };
    Ok(Outcome {
        steps,
        bracket,
        search,
    })
}

/// The seed's table, one row per step in the order run, then the bracket.
pub fn table(config: &Config, outcome: &Outcome) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>9} {:>9} {:>12} {:>12} {:>12} {:>12}  status",
        "target", "achieved", "service p99", "resp p50*", "resp p99*", "mean lag"
    );
    let _ = writeln!(out, "{}", "-".repeat(86));
    for (step, _) in &outcome.steps {
        let _ = writeln!(out, "{}", row(step));
    }
    let _ = writeln!(
        out,
        "* response time from the due time, of requests that finished after the first {} of each step; achieved and the trend test also leave the settle out",
        humantime::format_duration(config.settle)
    );
    if let Some(s) = &outcome.search {
        let probes: Vec<String> = s
            .probes
            .iter()
            .map(|(r, p)| {
                let what = match p {
                    Probe::Pass => "pass",
                    Probe::Fail => "fail",
                    Probe::Inconclusive => "client-side limit",
                };
                format!("{} {what}", rate_text(*r))
            })
            .collect();
        let _ = writeln!(out, "probes: {}", probes.join(", "));
        if s.budget_exhausted {
            let _ = writeln!(
                out,
                "the probe budget (--max-probes) ran out before the bracket reached --resolution"
            );
        }
    }
    let _ = writeln!(out, "{}", cliff_line(config, outcome));
    out
}

/// One step as a row of [`table`].
pub fn row(step: &Step) -> String {
    let status = match step.status {
        Status::Ok => "OK".to_string(),
        other => {
            let why: Vec<String> = step.reasons.iter().map(|r| r.to_string()).collect();
            format!("{} ({})", other.label(), why.join("; "))
        }
    };
    let slos: Vec<String> = step
        .slos
        .iter()
        // The gate's words, so a sweep and `--slo` on a run say the same thing.
        .map(|c| format!("{} {}", c.slo, if c.met { "met" } else { "BREACHED" }))
        .collect();
    let slos = if slos.is_empty() {
        String::new()
    } else {
        format!(" [{}]", slos.join(", "))
    };
    // The generator's headroom beside the verdict: a busy generator that kept its schedule is
    // OK, and this says how close it came.
    let cpu = step
        .busiest_worker
        .map(|b| format!(" · worker CPU {:.0}%", 100.0 * b))
        .unwrap_or_default();
    format!(
        "{:>9} {:>9.1} {:>12} {:>12} {:>12} {:>12}  {status}{slos}{cpu}",
        rate_text(step.target),
        step.achieved,
        format_ns(step.service_p99_ns),
        format_ns(step.response_p50_ns),
        format_ns(step.response_p99_ns),
        format_ns(step.mean_send_lag_ns as u64),
    )
}

/// Where the cliff lies, or, when the client side set the limit first, that there is no cliff of
/// the target's to name and what would raise the limit.
pub fn cliff_line(config: &Config, outcome: &Outcome) -> String {
    let b = &outcome.bracket;
    // What a passing step is, and what a failing one did, in plain words: "OK and met
    // p99<200ms", "saturated the target or breached p99<200ms".
    let slos: Vec<String> = config.slos.iter().map(|s| s.to_string()).collect();
    let (held, fell) = match slos.is_empty() {
        true => ("OK".to_string(), "saturated the target".to_string()),
        false => (
            format!("OK and met {}", slos.join(", ")),
            format!("saturated the target or breached {}", slos.join(" or ")),
        ),
    };
    if let Some(limit) = client_limit(outcome) {
        return limit;
    }
    match (b.passing, b.failing) {
        (Some(p), Some(f)) => format!(
            "cliff: between {} and {} req/s (the highest step {held}: {} req/s)",
            rate_text(p),
            rate_text(f),
            rate_text(p)
        ),
        (Some(p), None) => format!(
            "no cliff up to {} req/s: every step was {held}",
            rate_text(p)
        ),
        (None, Some(f)) => format!(
            "cliff: below {} req/s: even the lowest rate {fell}",
            rate_text(f)
        ),
        (None, None) => "no steps ran".to_string(),
    }
}

/// The first step where the client side held the run back, below any cliff of the target's,
/// said plainly: GENERATOR-BOUND gives the generator's limit on this machine; POOL-BOUND, the
/// connections the rate needs.
fn client_limit(outcome: &Outcome) -> Option<String> {
    let b = &outcome.bracket;
    let (step, _) = outcome
        .steps
        .iter()
        .filter(|(s, _)| !s.status.judges_the_target())
        .filter(|(s, _)| b.failing.is_none_or(|f| s.target < f))
        .min_by(|a, b| a.0.target.total_cmp(&b.0.target))?;
    let reached = outcome
        .steps
        .iter()
        .filter(|(s, _)| s.status.judges_the_target() && s.target < step.target)
        .map(|(s, _)| s.target)
        .max_by(f64::total_cmp);
    let limit = rate_text(step.target);
    let (about, clean) = match reached {
        Some(r) => (
            format!(
                "about {} req/s ({} OK, {limit} {})",
                rate_text(((r + step.target) / 2.0).round()),
                rate_text(r),
                step.status.label()
            ),
            format!("the target was not saturated up to {} req/s", rate_text(r)),
        ),
        None => (
            format!("below {limit} req/s ({})", step.status.label()),
            "no step judged the target".to_string(),
        ),
    };
    let advice = step.advice.clone().unwrap_or_default();
    Some(match step.status {
        Status::GeneratorBound => {
            format!("no cliff: the generator's limit on this machine is {about}; {clean}. {advice}")
        }
        _ => format!("no cliff: the connections' limit is {about}; {clean}. {advice}"),
    })
}

/// The label of a step's run at `rate`, as its result names it: `sweep 400 req/s`.
pub fn step_label(rate: f64) -> String {
    format!("sweep {} req/s", rate_text(rate))
}

/// Writes the files asked for: the sweep document (`--json`) and the page (`--report`, which
/// shows the [`table`] and, given `model`, the model's cliff beside the measured one).
/// Returns the page as written, if one was.
pub fn write_files(
    config: &Config,
    outcome: &Outcome,
    target: &str,
    json: Option<&std::path::Path>,
    model: Option<(f64, f64)>,
) -> anyhow::Result<Option<String>> {
    if let Some(path) = json {
        write_json(path, target, config, outcome)?;
    }
    let Some(path) = &config.report else {
        return Ok(None);
    };
    let page = page(config, outcome, target, model)?;
    std::fs::write(path, &page)
        .map_err(|e| bad_input!("--report: cannot write {}: {e}", path.display()))?;
    Ok(Some(page))
}

/// The sweep's page (`--report`): the [`table`], offered against achieved rate, and the
/// response percentiles against the offered rate, with the cliff (and, given `model`, the
/// model's) shaded.
pub fn page(
    config: &Config,
    outcome: &Outcome,
    target: &str,
    model: Option<(f64, f64)>,
) -> anyhow::Result<String> {
    let points: Vec<SweepPoint> = outcome
        .steps
        .iter()
        .map(|(s, _)| SweepPoint {
            offered: s.target,
            achieved: s.achieved,
            p50_ms: s.response_p50_ns as f64 / 1e6,
            p99_ms: s.response_p99_ns as f64 / 1e6,
            status: s.status,
        })
        .collect();
    let cliffs = Cliffs {
        measured: outcome.bracket.passing.zip(outcome.bracket.failing),
        model,
    };
    let title = format!("sojourn sweep: {target}");
    Ok(sojourn_report::html::sweep_page(
        &title,
        &table(config, outcome),
        &points,
        cliffs,
    )?)
}

/// The sweep document: schema `sojourn.sweep/1` (`schema/sweep.schema.json`), each step's
/// figures and its whole result; `-` writes it to standard output.
pub fn write_json(
    path: &std::path::Path,
    target: &str,
    config: &Config,
    outcome: &Outcome,
) -> anyhow::Result<()> {
    let steps: Vec<serde_json::Value> = outcome
        .steps
        .iter()
        .map(|(step, result)| serde_json::json!({ "step": step, "result": result }))
        .collect();
    let doc = serde_json::json!({
        "schema": "sojourn.sweep/1",
        "target": target,
        "step_ns": sojourn_core::nanos(config.step),
        "settle_ns": sojourn_core::nanos(config.settle),
        "slos": config.slos,
        "steps": steps,
        "bracket": outcome.bracket,
        "search": outcome.search,
    });
    crate::outputs::write_document(path, "--json", &doc)
}

/// Prints a step's row as it finishes.
pub fn show_step(step: &crate::sweep::Step) {
    eprintln!("  {}", row(step));
}

/// Prints the table, writes the files asked for, and names the page. Returns the page as
/// written, if one was.
pub fn finish(
    config: &Config,
    outcome: &Outcome,
    target: &str,
    json: Option<&std::path::Path>,
    model: Option<(f64, f64)>,
) -> anyhow::Result<Option<String>> {
    print!("{}", table(config, outcome));
    let page = write_files(config, outcome, target, json, model)?;
    if let Some(path) = &config.report {
        println!("report: {}", path.display());
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::sweep::Reason;

    fn step(target: f64, achieved: f64, status: Status) -> (Step, RunResult) {
        let step = Step {
            advice: (status == Status::GeneratorBound).then(|| "add --threads".to_string()),
            target,
            achieved,
            service_p99_ns: 0,
            response_p50_ns: 0,
            response_p99_ns: 0,
            mean_send_lag_ns: 0.0,
            settled_requests: 0,
            scheduled: 0,
            censored: 0,
            status,
            reasons: vec![Reason::Censored { count: 1 }],
            slos: Vec::new(),
            busiest_worker: None,
        };
        (step, empty_result())
    }

    fn config() -> Config {
        Config {
            offer: Offer::Rates(Vec::new()),
            step: Duration::from_secs(2),
            settle: Duration::from_millis(500),
            interval: Duration::from_millis(250),
            slos: Vec::new(),
            report: None,
        }
    }

    fn outcome(steps: Vec<(Step, RunResult)>) -> Outcome {
        let probes: Vec<(f64, Probe)> = steps.iter().map(|(s, _)| (s.target, s.probe())).collect();
        Outcome {
            bracket: sweep::bracket_of(&probes),
            steps,
            search: None,
        }
    }

    #[test]
    fn sweep_objectives_share_the_gate_parser_and_take_percentiles_only() {
        assert_eq!(step_slo("p99<200ms").unwrap().percentile, 99.0);
        for (text, says) in [
            (
                "errors<1%",
                "a sweep judges each step on a response-time percentile",
            ),
            (
                "2:p99<1s",
                "a sweep judges each step on a response-time percentile",
            ),
            ("p99>1s", "e.g. p99<200ms"),
        ] {
            let e = step_slo(text).unwrap_err();
            assert!(e.is::<crate::BadInput>(), "{text}");
            assert!(
                e.to_string().starts_with("--slo: ") && e.to_string().contains(says),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn a_client_side_limit_is_never_reported_as_the_targets_cliff() {
        let o = outcome(vec![
            step(1000.0, 1000.0, Status::Ok),
            step(2000.0, 2000.0, Status::Ok),
            step(4000.0, 2600.4, Status::GeneratorBound),
        ]);
        let line = cliff_line(&config(), &o);
        assert!(
            line.starts_with("no cliff: the generator's limit on this machine is about 3000 req/s (2000 OK, 4000 GENERATOR-BOUND); the target was not saturated up to 2000 req/s."),
            "{line}"
        );
        assert!(line.contains("add --threads"), "{line}");
        // A real cliff below the limit is still the cliff.
        let o = outcome(vec![
            step(1000.0, 1000.0, Status::Ok),
            step(2000.0, 1500.0, Status::Saturated),
            step(4000.0, 2600.0, Status::GeneratorBound),
        ]);
        assert!(cliff_line(&config(), &o).starts_with("cliff: between 1000 and 2000 req/s"));
        // A full pool says so.
        let o = outcome(vec![step(40.0, 20.0, Status::PoolBound)]);
        assert!(cliff_line(&config(), &o).starts_with(
            "no cliff: the connections' limit is below 40 req/s (POOL-BOUND); no step judged the target"
        ));
    }

    /// A sweep says BREACHED where the gate does, and its cliff line reads as plain words,
    /// with and without objectives.
    #[test]
    fn the_table_and_the_cliff_line_speak_the_gates_words() {
        let slo = step_slo("p99<200ms").unwrap();
        let (mut s, _) = step(100.0, 100.0, Status::Ok);
        s.slos = vec![sojourn_core::sweep::SloCheck {
            slo,
            value_ns: 300_000_000,
            met: false,
        }];
        assert!(
            row(&s).ends_with("  OK [p99<200.00 ms BREACHED]"),
            "{}",
            row(&s)
        );
        s.busiest_worker = Some(0.934);
        assert!(
            row(&s).ends_with("  OK [p99<200.00 ms BREACHED] · worker CPU 93%"),
            "the headroom beside the verdict: {}",
            row(&s)
        );
        s.busiest_worker = None;
        let with_slo = || Config {
            slos: vec![slo],
            ..config()
        };
        let held = outcome(vec![
            step(100.0, 100.0, Status::Ok),
            step(200.0, 200.0, Status::Ok),
        ]);
        let fell = outcome(vec![step(100.0, 60.0, Status::Saturated)]);
        let between = outcome(vec![
            step(100.0, 100.0, Status::Ok),
            step(200.0, 150.0, Status::Saturated),
        ]);
        for (config, outcome, line) in [
            (
                config(),
                &held,
                "no cliff up to 200 req/s: every step was OK",
            ),
            (
                with_slo(),
                &held,
                "no cliff up to 200 req/s: every step was OK and met p99<200.00 ms",
            ),
            (
                config(),
                &fell,
                "cliff: below 100 req/s: even the lowest rate saturated the target",
            ),
            (
                with_slo(),
                &fell,
                "cliff: below 100 req/s: even the lowest rate saturated the target or breached \
                 p99<200.00 ms",
            ),
            (
                config(),
                &between,
                "cliff: between 100 and 200 req/s (the highest step OK: 100 req/s)",
            ),
        ] {
            assert_eq!(cliff_line(&config, outcome), line);
        }
    }

    /// The step's own result; the cliff line reads only the judged steps.
    fn empty_result() -> RunResult {
        let m = sojourn_core::Recorder::merge_all([sojourn_core::Recorder::new(
            Duration::from_secs(1),
        )]);
        RunResult::build(
            &m,
            sojourn_core::RunFacts {
                label: "step".into(),
                mode: sojourn_core::Mode::Open,
                config: Default::default(),
                scheduled: 0,
                elapsed: Duration::from_secs(1),
                interrupted: false,
                checks: sojourn_core::check::assess_closed(),
                backfill_interval: None,
            },
        )
    }
}

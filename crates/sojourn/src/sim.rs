//! `sojourn sim`: a scenario × client model in virtual time, with the same outputs as `run`.
//!
//! With `--client both` (the default) it simulates the closed loop and the open loop against the
//! same scenario and prints the seeds' side-by-side table, then how many requests each stall
//! delayed in each — the difference is what the closed loop omitted. `--json FILE` writes one
//! result file per client: `FILE` itself for one client, `FILE` with `.closed` / `.open` before
//! its extension for both (`out.json` → `out.closed.json`, `out.open.json`).
//!
//! With `--journey FILE` the clients are journey loops: open (journeys arriving at `--rate`, at
//! most `--max-journeys` at once), closed (virtual users, each starting its next journey when
//! the last ends, timed from its sends, as k6's and Locust's users are), or both side by side.
use std::path::{Path, PathBuf};
use std::time::Duration;

use sojourn_core::{format_ns, nanos, End, Schedule};
use sojourn_report::compare::{self, Column, Ratio};
use sojourn_scenario::Scenario;
use sojourn_sim::{Client, Impact, Plan as SimPlan};

use crate::bad_input;

/// A simulation as a person describes it (`sojourn sim`'s flags): the scenario, the client
/// model and its load, in virtual time.
#[derive(Debug, Clone)]
pub struct SimSettings {
    /// A built-in scenario (healthy, hiccup, ramp, gc-pauses, saturation, every-nth, bimodal,
    /// spike) or the path of a scenario TOML file. See `sojourn serve --list`.
    pub scenario: String,
    /// Override a built-in's parameter, e.g. `--set hiccup.at=5s`. Repeatable.
    pub set: Vec<String>,
    /// The client model: open (schedule, FIFO pool), closed (N looping connections), both
    /// (side by side), tracking (one request at a time, measured from its slot: seeds 000/004),
    /// or paced (N connections, each on its share of the slots: hey -q, bombardier -r). With
    /// `journey`: open, closed (virtual users) or both.
    pub client: ClientKind,
    /// The open loop's (or tracking client's) schedule: rate (default 1000 per second) or
    /// stages, arrivals, and how long in virtual time (default 60 s).
    pub load: crate::settings::LoadSettings,
    /// Open loop: the most connections (due requests queue FIFO for one). Closed loop: the number
    /// of looping connections. [default: 2048 open, 10 closed]
    pub connections: Option<usize>,
    /// With --client both: the closed loop's connections, when they differ from the open pool;
    /// with `journey`, the closed journey loop's virtual users. [default: 10]
    pub closed_connections: Option<usize>,
    /// With --duration: stop the closed loop at the duration, or after as many requests as the
    /// open schedule has (rate × duration, like the seeds' iteration-counted tools).
    pub closed_until: ClosedUntil,
    /// Lanes, as the engine's worker threads: each has its slice of the schedule and its share of
    /// the connections. Give a run's --threads to reproduce its Poisson arrivals exactly.
    pub threads: usize,
    /// Longest wait for one answer; also the longest drain after the schedule ends.
    pub timeout: Duration,
    /// A fixed round trip added to every exchange (network plus client overhead).
    pub rtt: Duration,
    /// Write the result document(s); with both clients, FILE.closed.json and FILE.open.json.
    /// `-` writes the one document of a single client to standard output.
    pub json: Option<PathBuf>,
    /// Write HdrHistogram percentile distributions PREFIX[.CLIENT].response.hgrm (and .service,
    /// .send_lag), in milliseconds.
    pub hgrm: Option<PathBuf>,
    /// Write an HdrHistogram interval log; with both clients, FILE.closed.hlog and FILE.open.hlog.
    pub hlog: Option<PathBuf>,
    /// Width of the timeline's intervals.
    pub interval: Duration,
    /// Sweep the offered rate like `sojourn sweep` (open loop, one step per rate): the model's
    /// capacity cliff, for comparison with a real sweep. --json writes the sweep document.
    pub sweep: bool,
    /// With `sweep`: the rates and steps, as `sojourn sweep` takes them.
    pub sweep_flags: crate::sweep::SweepSettings,
    /// Simulate N independent repetitions (the schedule's and the scenario's seeds fresh for
    /// each after the first) and report each plus a between-run interval for every
    /// percentile. `None`: one simulation.
    pub repeat: Option<u32>,
    /// Journeys in virtual time (`--journey FILE`): the file's journeys arrive on the open
    /// schedule (or are run by the closed loop's virtual users), each step's service drawn from
    /// the scenario, think times the same seeded draws a real run makes.
    pub journey: Option<PathBuf>,
    /// With `journey`: the most journeys at once; with --client closed, the virtual users.
    /// [default: 1000 open, 10 closed]
    pub max_journeys: Option<usize>,
}

/// Which client model meets the scenario (`--client`).
///
/// The flag's own help describes every value, so the values carry no help of their own
/// (`help = None`) and `sojourn sim --help` lists them once.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientKind {
    /// The open loop: requests due on a schedule, queued FIFO for a free connection.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Open,
    /// N connections, each sending as soon as it has its previous answer.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Closed,
    /// The closed loop and the open loop side by side, against the same scenario.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Both,
    /// One request at a time, measured from its slot (seeds 000 and 004).
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Tracking,
    /// N connections, each on its share of the schedule's slots (hey -q, bombardier -r).
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Paced,
}

/// When a simulated closed loop stops (`--closed-until`); its values, like [`ClientKind`]'s,
/// are described by the flag's help.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedUntil {
    /// At the run's duration, however many requests it sent.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Duration,
    /// After as many requests as the open schedule has (rate × duration), as the seeds'
    /// iteration-counted tools run.
    #[cfg_attr(feature = "clap", value(help = None::<&str>))]
    Count,
}

const DEFAULT_RATE: f64 = 1000.0;
const DEFAULT_DURATION: Duration = Duration::from_secs(60);

/// A simulation that passed validation: the scenario and one labelled plan per client.
struct Validated {
    scenario: Scenario,
    plans: Vec<(&'static str, SimPlan)>,
    json: Option<PathBuf>,
    hgrm: Option<PathBuf>,
    hlog: Option<PathBuf>,
    repeat: Option<u32>,
    /// Journeys: the file, to name the result's steps and journeys.
    journeys: Option<crate::journeys::FileScript>,
}

/// Simulates each client against the scenario and prints its summary, the side-by-side table
/// and what each stall delayed, then writes the files asked for (or runs the model's sweep,
/// given `sweep`).
pub fn run(args: SimSettings) -> anyhow::Result<()> {
    if args.sweep {
        if args.repeat.is_some() {
            return Err(bad_input!("--repeat: not with --sweep: a sweep's steps are runs of their own; repeat a single rate instead"));
        }
        return run_sweep(args);
    }
    let f = &args.sweep_flags;
    if f.rates.is_some() || f.from.is_some() || f.to.is_some() || f.steps.is_some() {
        return Err(bad_input!(
            "--rates: sweep flags (--rates, --from, --to, --steps) only apply with --sweep"
        ));
    }
    crate::repeat::Repeat::check(args.repeat, Duration::ZERO)?;
    if f.search || !f.slo.is_empty() || f.settle.is_some() || f.report.is_some() {
        return Err(bad_input!(
            "--search: --search, --slo, --settle and --report only apply with --sweep"
        ));
    }
    let v = validate(args)?;
    let mut runs = Vec::new();
    for (label, plan) in &v.plans {
        let (result, impact) = match v.repeat {
            Some(n) => (
                crate::repeat::simulate_repeated(&v.scenario, plan, label, n)?,
                None,
            ),
            None => {
                let (mut result, sim) = sojourn_sim::run(&v.scenario, plan, label);
                let places = match &plan.client {
                    Client::Journeys { max_journeys, .. } => Some(*max_journeys),
                    Client::ClosedJourneys { users, .. } => Some(*users),
                    _ => None,
                };
                if let (Some(script), Some(places)) = (&v.journeys, places) {
                    let names = script.names(places);
                    let (m, elapsed) = (&sim.measurements, sim.elapsed);
                    sojourn_engine::result::with_journeys(&mut result, &names, m, elapsed);
                }
                (result, Some(sim.impact))
            }
        };
        print!("{}", sojourn_report::text::summary(&result));
        println!();
        runs.push((*label, result, impact));
    }
    if let [(a, ra, _), (b, rb, _)] = &runs[..] {
        println!("{a} vs {b}, simulated ({})", v.scenario);
        let columns = [Column::of(*a, ra), Column::of(*b, rb)];
        let ratio = Ratio {
            numerator: b,
            denominator: a,
        };
        print!("{}", compare::table(&columns, Some(ratio)));
        println!();
    }
    // Repetitions reseed the scenario, so each has stalls of its own: no one list to give.
    let impacts: Vec<(&str, &Impact)> = runs
        .iter()
        .filter_map(|(l, _, i)| Some((*l, i.as_ref()?)))
        .collect();
    print!("{}", stall_report(&impacts));
    let several = runs.len() > 1;
    for (label, result, _) in &runs {
        if let Some(path) = &v.json {
            crate::outputs::write_json(&json_path(path, label, several), result)?;
        }
        let outputs = crate::outputs::Outputs {
            hgrm: v.hgrm.as_ref().map(|p| {
                if several {
                    p.with_file_name(format!("{}.{label}", file_name(p)))
                } else {
                    p.clone()
                }
            }),
            hlog: v.hlog.as_ref().map(|p| json_path(p, label, several)),
            ..Default::default()
        };
        crate::outputs::write_files(&outputs, result)?;
    }
    Ok(())
}

/// `sim --sweep`: the same steps as `sojourn sweep`, each a fresh open-loop schedule in
/// virtual time against the scenario.
fn run_sweep(a: SimSettings) -> anyhow::Result<()> {
    let scenario = crate::scenario_arg::resolve(&a.scenario, &a.set)?;
    if !matches!(a.client, ClientKind::Open | ClientKind::Both) {
        return Err(bad_input!(
            "--client: --sweep offers open-loop rates; use --client open"
        ));
    }
    if a.load.rate.is_some() || a.load.duration.is_some() || a.load.requests.is_some() {
        return Err(bad_input!("--rate: with --sweep, give --rates (or --from/--to/--steps) and --step instead of --rate/--duration/--requests"));
    }
    if a.threads == 0 || a.connections == Some(0) {
        return Err(bad_input!(
            "--connections: --connections and --threads must be at least 1"
        ));
    }
    let config = a.sweep_flags.validate()?;
    let pool = crate::model::ModelPool {
        connections: a.connections.unwrap_or(crate::defaults::OPEN_CONNECTIONS),
        threads: a.threads,
        timeout: a.timeout,
        rtt: a.rtt,
    };
    let outcome = crate::model::model_sweep(&scenario, &config, &pool, crate::sweep::show_step)?;
    println!("simulated sweep ({scenario})");
    let target = format!("sim:{}", a.scenario);
    crate::sweep::finish(&config, &outcome, &target, a.json.as_deref(), None)?;
    Ok(())
}

fn validate(a: SimSettings) -> anyhow::Result<Validated> {
    let scenario = crate::scenario_arg::resolve(&a.scenario, &a.set)?;
    let end = match (a.load.duration, a.load.requests) {
        (_, Some(0)) => return Err(bad_input!("--requests: must be at least 1, got 0")),
        (_, Some(n)) => End::Count(n),
        (Some(d), None) => End::After(d),
        (None, None) => End::After(DEFAULT_DURATION),
    };
    if a.threads == 0 {
        return Err(bad_input!("--threads: must be at least 1, got 0"));
    }
    for (flag, n) in [
        ("--connections", a.connections),
        ("--closed-connections", a.closed_connections),
    ] {
        if n == Some(0) {
            return Err(bad_input!("{flag}: must be at least 1, got 0"));
        }
    }
    check_client_flags(&a)?;
    let schedule = schedule(&a, end)?;
    let seed = a.load.seed.unwrap_or(crate::defaults::JOURNEY_SEED);
    let journeys = journey_file(&a, seed)?;
    if let Some(script) = &journeys {
        return Ok(Validated {
            scenario,
            plans: journey_plans(&a, schedule, script)?,
            json: a.json,
            hgrm: a.hgrm,
            hlog: a.hlog,
            repeat: a.repeat,
            journeys,
        });
    }
    // Stages set their own end; the closed loop stops with them.
    let end = schedule.end;
    let mut plans = Vec::new();
    if matches!(a.client, ClientKind::Closed | ClientKind::Both) {
        plans.push(("closed", plan(&a, closed(&a, end, &schedule)?)));
    }
    if matches!(a.client, ClientKind::Open | ClientKind::Both) {
        let client = Client::Open {
            schedule: schedule.clone(),
            connections: a.connections.unwrap_or(crate::defaults::OPEN_CONNECTIONS),
            threads: a.threads,
        };
        plans.push(("open", plan(&a, client)));
    }
    if a.client == ClientKind::Tracking {
        let schedule = schedule.clone();
        plans.push(("tracking", plan(&a, Client::Tracking { schedule })));
    }
    if a.client == ClientKind::Paced {
        let client = Client::Paced {
            schedule,
            connections: a.connections.unwrap_or(crate::defaults::CLOSED_CONNECTIONS),
        };
        plans.push(("paced", plan(&a, client)));
    }
    Ok(Validated {
        scenario,
        plans,
        json: a.json,
        hgrm: a.hgrm,
        hlog: a.hlog,
        repeat: a.repeat,
        journeys: None,
    })
}

/// The journey loops `--client` asks for: the closed one ("closed": virtual users, from
/// --max-journeys alone, or --closed-connections beside the open loop; 10 by default) and the
/// open one ("open": journeys at --rate, at most --max-journeys at once).
fn journey_plans(
    a: &SimSettings,
    schedule: Schedule,
    script: &crate::journeys::FileScript,
) -> anyhow::Result<Vec<(&'static str, SimPlan)>> {
    let model: std::sync::Arc<dyn sojourn_sim::JourneyModel> = std::sync::Arc::new(script.clone());
    let mut plans = Vec::new();
    if matches!(a.client, ClientKind::Closed | ClientKind::Both) {
        let users = match a.client {
            ClientKind::Both => a.closed_connections,
            _ => a.max_journeys,
        };
        let client = Client::ClosedJourneys {
            end: closed_end(a, schedule.end, &schedule)?,
            users: users.unwrap_or(crate::defaults::CLOSED_CONNECTIONS),
            threads: a.threads,
            model: model.clone(),
        };
        plans.push(("closed", plan(a, client)));
    }
    if matches!(a.client, ClientKind::Open | ClientKind::Both) {
        let client = Client::Journeys {
            schedule,
            max_journeys: a.max_journeys.unwrap_or(crate::defaults::MAX_JOURNEYS),
            threads: a.threads,
            model,
        };
        plans.push(("open", plan(a, client)));
    }
    Ok(plans)
}

/// `--journey FILE`, read and checked, with the flags that mean nothing beside it refused.
fn journey_file(a: &SimSettings, seed: u64) -> anyhow::Result<Option<crate::journeys::FileScript>> {
    let Some(path) = &a.journey else {
        if a.max_journeys.is_some() {
            return Err(bad_input!("--max-journeys: only with --journey FILE"));
        }
        return Ok(None);
    };
    if !matches!(
        a.client,
        ClientKind::Open | ClientKind::Closed | ClientKind::Both
    ) {
        return Err(bad_input!("--client: journeys run open (arriving at --rate), closed (virtual users, each starting its next journey when the last ends) or both; give --client open, closed or both"));
    }
    if a.repeat.is_some() {
        return Err(bad_input!(
            "--repeat: not with --journey yet; simulate the seeds one by one"
        ));
    }
    if a.connections.is_some() {
        return Err(bad_input!(
            "--connections: each journey has a connection of its own; use --max-journeys"
        ));
    }
    if a.max_journeys == Some(0) {
        return Err(bad_input!("--max-journeys: must be at least 1, got 0"));
    }
    let file =
        sojourn_core::journey::JourneyFile::from_path(path).map_err(|e| bad_input!("{e}"))?;
    Ok(Some(crate::journeys::FileScript::new(file, seed)))
}

/// Flags that only make sense for some clients are refused elsewhere, naming the flag.
fn check_client_flags(a: &SimSettings) -> anyhow::Result<()> {
    let closed_only = a.client == ClientKind::Closed;
    let no_rate = closed_only && a.load.rate.is_some() && a.closed_until == ClosedUntil::Duration;
    if no_rate && a.journey.is_some() {
        return Err(bad_input!("--rate: with --client closed, each of the --max-journeys virtual users starts its next journey when the last ends, so the closed journey loop has no rate; drop --rate, or add --closed-until count"));
    }
    if no_rate {
        return Err(bad_input!("--rate: a closed loop has no rate (each connection sends as soon as it has its answer); drop --rate, or add --closed-until count"));
    }
    if a.client == ClientKind::Both && a.json.as_deref().is_some_and(crate::outputs::is_stdio) {
        return Err(bad_input!(
            "--json: - (standard output) holds one document and --client both writes two; give --client open or closed, or a file (FILE.closed.json and FILE.open.json are written)"
        ));
    }
    if a.closed_connections.is_some() && a.client != ClientKind::Both {
        let instead = match a.journey {
            Some(_) => "--max-journeys",
            None => "--connections",
        };
        return Err(bad_input!(
            "--closed-connections: only applies to --client both; use {instead}"
        ));
    }
    if a.client == ClientKind::Tracking && a.connections.is_some_and(|c| c != 1) {
        return Err(bad_input!(
            "--connections: the tracking client has exactly one connection"
        ));
    }
    Ok(())
}

fn plan(a: &SimSettings, client: Client) -> SimPlan {
    SimPlan {
        timeout: a.timeout,
        interval: a.interval,
        rtt: a.rtt,
        ..SimPlan::new(client)
    }
}

/// The open schedule (also the tracking client's slots, and the count of a count-bound closed
/// loop), validated like `run`'s.
fn schedule(a: &SimSettings, end: End) -> anyhow::Result<Schedule> {
    // A journey file's choices take the seed too, so it is not a mistake without Poisson.
    let for_journeys = a.journey.is_some() && a.load.arrival != crate::parse::ArrivalKind::Poisson;
    let seed = a.load.seed.filter(|_| !for_journeys);
    a.load
        .schedule(seed, end, || Ok(a.load.rate.unwrap_or(DEFAULT_RATE)))
}

fn closed(a: &SimSettings, end: End, schedule: &Schedule) -> anyhow::Result<Client> {
    let end = closed_end(a, end, schedule)?;
    let connections = match a.client {
        ClientKind::Both => a.closed_connections.or(a.connections),
        _ => a.connections,
    };
    Ok(Client::Closed {
        end,
        connections: connections.unwrap_or(crate::defaults::CLOSED_CONNECTIONS),
        threads: a.threads,
    })
}

/// When a closed loop stops: the run's end, or with `--closed-until count` after as many
/// requests (or journeys) as the open schedule has.
fn closed_end(a: &SimSettings, end: End, schedule: &Schedule) -> anyhow::Result<End> {
    Ok(match (a.closed_until, end) {
        (ClosedUntil::Count, End::After(_)) => {
            let n = schedule.planned_count().ok_or_else(|| {
                bad_input!("--closed-until count: a Poisson schedule has no fixed count; give --requests or a constant --arrival")
            })?;
            End::Count(n.max(1))
        }
        (_, end) => end,
    })
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// `out.json` → `out.open.json` when several clients share one `--json`.
fn json_path(path: &Path, label: &str, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    let stem = path.file_stem().unwrap_or_default().to_string_lossy();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.{label}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{label}"),
    };
    path.with_file_name(name)
}

/// The most gate windows listed one per line; the rest are summed.
const LISTED_WINDOWS: usize = 12;

/// How many requests each stall delayed, per client; with the closed loop first and the open
/// loop second, the difference is what the closed loop omitted.
fn stall_report(runs: &[(&str, &Impact)]) -> String {
    use std::fmt::Write as _;
    let Some((_, first)) = runs.first() else {
        return String::new();
    };
    let mut out = String::new();
    let has_slow = runs.iter().any(|(_, i)| i.slow.requests > 0);
    if first.stalls.is_empty() && !has_slow {
        let _ = writeln!(out, "no stalls or slowed requests in this scenario");
    } else {
        let _ = writeln!(
            out,
            "requests delayed by each stall (held at the gate, or queued behind what it held up):"
        );
    }
    for (i, stall) in first.stalls.iter().enumerate().take(LISTED_WINDOWS) {
        let counts: Vec<u64> = runs
            .iter()
            .map(|(_, imp)| imp.stalls.get(i).map_or(0, |s| s.delayed))
            .collect();
        let _ = writeln!(
            out,
            "  {} {} – {}: {}",
            kind_name(stall.kind),
            format_ns(nanos(stall.start)),
            format_ns(nanos(stall.end)),
            counts_line(runs, &counts)
        );
    }
    let more = first.stalls.len().saturating_sub(LISTED_WINDOWS);
    if more > 0 {
        let counts: Vec<u64> = runs
            .iter()
            .map(|(_, imp)| {
                imp.stalls
                    .iter()
                    .skip(LISTED_WINDOWS)
                    .map(|s| s.delayed)
                    .sum()
            })
            .collect();
        let _ = writeln!(out, "  {more} more: {}", counts_line(runs, &counts));
    }
    if has_slow {
        let slowed: Vec<String> = runs
            .iter()
            .map(|(l, i)| format!("{} {l}", i.slow.requests))
            .collect();
        let counts: Vec<u64> = runs.iter().map(|(_, i)| i.slow.affected).collect();
        let _ = writeln!(
            out,
            "  requests slowed by every-nth or slow-fraction ({}), or queued behind one: {}",
            slowed.join(", "),
            counts_line(runs, &counts)
        );
    }
    let load: Vec<u64> = runs.iter().map(|(_, i)| i.unattributed).collect();
    if load.iter().any(|&n| n > 0) {
        let _ = writeln!(
            out,
            "  delayed with no stall before them (queueing under load): {}",
            counts_line(runs, &load)
        );
    }
    out
}

/// "closed 10, open 1,000, omitted by the closed loop 990".
fn counts_line(runs: &[(&str, &Impact)], counts: &[u64]) -> String {
    let mut parts: Vec<String> = runs
        .iter()
        .zip(counts)
        .map(|((label, _), n)| format!("{label} {}", compare::thousands(*n)))
        .collect();
    if let ([("closed", _), _], [closed, open]) = (runs, counts) {
        let omitted = compare::thousands(open.saturating_sub(*closed));
        parts.push(format!("omitted by the closed loop {omitted}"));
    }
    parts.join(", ")
}

fn kind_name(kind: sojourn_scenario::WindowKind) -> &'static str {
    match kind {
        sojourn_scenario::WindowKind::Stall => "stall",
        sojourn_scenario::WindowKind::Pause => "pause",
        sojourn_scenario::WindowKind::Ramp => "ramp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_paths_for_several_clients() {
        let p = Path::new("/tmp/out.json");
        assert_eq!(json_path(p, "open", false), PathBuf::from("/tmp/out.json"));
        assert_eq!(
            json_path(p, "closed", true),
            PathBuf::from("/tmp/out.closed.json")
        );
        assert_eq!(
            json_path(Path::new("res"), "open", true),
            PathBuf::from("res.open")
        );
    }
}

//! A run as a person describes it: every setting as typed or absent, before it is checked.
use std::path::PathBuf;
use std::time::Duration;

use sojourn_engine::Slack;

use crate::defaults;
use crate::parse::ArrivalKind;
use crate::transport::{ProtocolSettings, WorkloadSettings};

/// A run as a person describes it: flags, a `--plan` file or code. [`crate::validate`] checks it
/// into a [`crate::RunSpec`].
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// What to send: one request, or a targets file.
    pub workload: WorkloadSettings,
    /// The protocol, its settings, and which certificates to trust.
    pub protocol: ProtocolSettings,
    /// A TOML run file: the URL, the stages or rate, the arrival process, connections, timeout
    /// and objectives (see docs/plans.md). Flags given on the command line win over it.
    pub plan: Option<PathBuf>,
    /// Run shard K (from 0) of N of the plan: every N-th slice of the one global schedule, so N
    /// processes with the same flags run it exactly once between them. Give every shard the
    /// same --threads (they slice the schedule too) and the same --start-at.
    pub shard: Option<sojourn_core::Shard>,
    /// Take K from the environment: JOB_COMPLETION_INDEX (a Kubernetes Indexed Job), else
    /// SLURM_PROCID (with SLURM_NTASKS as N unless --shard-count is given).
    pub shard_from_env: bool,
    /// With --shard-from-env: the number of shards N.
    pub shard_count: Option<u32>,
    /// Start the schedule at this wall-clock instant (RFC 3339, e.g. 2026-11-23T10:00:00Z, or
    /// Unix seconds like 1763892000.5) instead of at once: every shard's requests are due from
    /// the same instant, so their timelines line up. A process that starts late sends what
    /// fell due at once, and that lateness is counted as send lag, never hidden. Shards rely
    /// on the nodes' clocks being synchronised (NTP or PTP); each result records how late its
    /// process was ready.
    pub start_at: Option<std::time::SystemTime>,
    /// Flags given on the command line (filled by the parser, for --plan).
    pub explicit: Vec<String>,
    /// The load: rate or stages, arrivals, and how long.
    pub load: LoadSettings,
    /// Open loop: the most connections to open (lazily; due requests queue FIFO for a free one).
    /// Closed loop: the number of looping connections. With --http2, connections each carry
    /// --streams requests. [default: 2048 open, 10 closed; with --http2, 16]
    pub connections: Option<usize>,
    /// Journeys: the most running at once, each on a connection of its own; a due journey with
    /// no free place waits, FIFO, timed from its due time. With `closed`: the virtual users,
    /// each starting its next journey when the last ends. [default: 1000 open, 10 closed]
    pub max_journeys: Option<usize>,
    /// Worker threads, each with its own connections and slice of the schedule.
    /// [default: closed loop, the number of CPUs; open loop, one per 50,000 req/s of peak
    /// rate, up to the number of CPUs]
    pub threads: Option<usize>,
    /// Longest wait for one answer; also the longest drain after the schedule ends.
    pub timeout: Duration,
    /// Closed loop: each connection sends, waits for the answer, records, repeats.
    /// For comparison and for truly closed workloads; every output labels it. With --rate, a
    /// paced closed loop: each connection owns rate/N of the slots and sends at its next slot
    /// or when its answer arrives, whichever is later (hey -q, bombardier -r, fortio -qps).
    pub closed: bool,
    /// Write the result document (JSON, schema sojourn.result/5) here.
    pub json: Option<PathBuf>,
    /// Width of the timeline's intervals, and of the last interval the live panel and
    /// --metrics-listen show.
    pub interval: Duration,
    /// A name for this run in reports.
    pub label: Option<String>,
    /// Exit 3 if the self-check finds that the generator itself fell behind, that the sends
    /// did not follow the arrival process (conformance), or that the run is not valid.
    pub strict: bool,
    /// Leave a warm-up out of the percentiles: `auto` finds it from the per-interval medians
    /// (MSER), a duration (e.g. `5s`) trims exactly that, rounded up to a whole interval. The
    /// trimmed requests stay in the counts and the timeline.
    pub warmup: Option<sojourn_core::result::WarmupRequest>,
    /// Write HdrHistogram percentile distributions: PREFIX.response.hgrm, PREFIX.service.hgrm
    /// and PREFIX.send_lag.hgrm (milliseconds).
    pub hgrm: Option<PathBuf>,
    /// Write an HdrHistogram interval log (one response and one send-lag histogram per
    /// interval), readable by HistogramLogProcessor.
    pub hlog: Option<PathBuf>,
    /// Stream every finished request (due offset, response, service, outcome) to this file:
    /// CSV if it ends in .csv, compact binary otherwise.
    pub samples: Option<PathBuf>,
    /// With --samples: keep this share of requests, chosen uniformly (seeded), to keep long
    /// runs small.
    pub sample_ratio: f64,
    /// The most the pacer spins before one due time. It learns how late the kernel's wake-ups
    /// come, arms its timer that much early (up to this cap) and spins the rest, so requests
    /// leave within microseconds of schedule for a few microseconds of CPU each. 0: no
    /// spinning; requests then leave late by the kernel's wake-up latency.
    pub timer_spin: Duration,
    /// The least time between two wake-ups of the pacer: requests due closer together leave
    /// together, each up to this late. Fewer wake-ups cost less CPU; the lateness is send lag,
    /// counted in response time. `auto`: as late as the pacer's own wake-ups have been coming
    /// (tens of µs), so a request never waits longer than a wake-up of its own would have
    /// taken; 0: a wake-up for every due time.
    pub timer_slack: sojourn_engine::Slack,
    /// Run without the hiccup meters: a thread beside the run that measures how late this
    /// process's own threads are woken, and an idle control process that measures how late the
    /// machine wakes a sleeping process (the floor under any send lag). Without the control,
    /// no lateness is excused as the machine's.
    pub no_hiccup_meter: bool,
    /// Serve live metrics (OpenMetrics text, for Prometheus) on http://ADDR/metrics while the
    /// run goes on: counts by outcome, in flight and the age of the oldest in flight, target
    /// and achieved rate, the last interval's response-time percentiles and send lag. A bare port (9464) or :9464 listens on
    /// 127.0.0.1 only; ADDRESS:PORT listens exactly there. Port 0 picks a free one. The address
    /// is printed on stderr; the endpoint stops with the run.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// --slo and --junit: gate the run on service-level objectives (exit 4 when one fails).
    pub gate: crate::gate::GateSettings,
    /// Run N independent repetitions, each with seeds of its own, and report each plus a
    /// between-run interval for every percentile. `None`: one run.
    pub repeat: Option<u32>,
    /// With --repeat: the pause between two repetitions.
    pub repeat_pause: Duration,
}

impl RunSettings {
    /// `sojourn run URL` with every other setting at its default: what `compare` and `sweep`
    /// start from before setting their own.
    pub fn for_target(url: &str) -> RunSettings {
        RunSettings {
            workload: WorkloadSettings {
                url: Some(url.to_string()),
                ..WorkloadSettings::default()
            },
            ..RunSettings::default()
        }
    }
}

impl Default for RunSettings {
    fn default() -> RunSettings {
        RunSettings {
            workload: WorkloadSettings::default(),
            load: LoadSettings::default(),
            protocol: ProtocolSettings::default(),
            plan: None,
            shard: None,
            shard_from_env: false,
            shard_count: None,
            start_at: None,
            explicit: Vec::new(),
            connections: None,
            max_journeys: None,
            threads: None,
            timeout: defaults::TIMEOUT,
            closed: false,
            json: None,
            interval: defaults::INTERVAL,
            label: None,
            strict: false,
            warmup: None,
            hgrm: None,
            hlog: None,
            samples: None,
            sample_ratio: 1.0,
            timer_spin: defaults::TIMER_SPIN,
            timer_slack: Slack::Auto,
            no_hiccup_meter: false,
            metrics_listen: None,
            gate: Default::default(),
            repeat: None,
            repeat_pause: defaults::REPEAT_PAUSE,
        }
    }
}

/// The load as a person describes it: one rate or stages, how arrivals are spaced, and how long.
/// `run` and `sim` share it (each with its own defaults for what is absent).
#[derive(Debug, Clone)]
pub struct LoadSettings {
    /// Open loop: requests per second, due on a schedule whatever the responses do.
    pub rate: Option<f64>,
    /// How arrivals are spaced: constant, poisson (seeded), or ramp (from --rate to --ramp-to).
    pub arrival: ArrivalKind,
    /// With --arrival ramp: the rate at the end of the run.
    pub ramp_to: Option<f64>,
    /// With --arrival poisson: the random seed.
    pub seed: Option<u64>,
    /// Shaped load instead of one rate: stages run in order, each holding a rate or moving it
    /// linearly, e.g. `30s@0..1000,5m@1000,spike=30s@1000..5000,1m@5000` (NAME= is optional).
    /// Arrivals follow them evenly spaced, or Poisson with --arrival poisson.
    pub stages: Option<sojourn_core::Stages>,
    /// How long to send for (default 10s).
    pub duration: Option<Duration>,
    /// Send this many requests in all, instead of a duration.
    pub requests: Option<u64>,
}

impl LoadSettings {
    /// The schedule these settings describe, ending at `end` unless stages set their own, with
    /// `seed` for Poisson arrivals; `rate` gives the rate when there are no stages (each command
    /// has its own answer when none was given).
    pub fn schedule(
        &self,
        seed: Option<u64>,
        end: sojourn_core::End,
        rate: impl FnOnce() -> anyhow::Result<f64>,
    ) -> anyhow::Result<sojourn_core::Schedule> {
        if let Some(stages) = &self.stages {
            return crate::parse::staged_schedule(stages, self.arrival, seed);
        }
        crate::parse::schedule(rate()?, self.arrival, self.ramp_to, seed, end)
    }
}

impl Default for LoadSettings {
    fn default() -> LoadSettings {
        LoadSettings {
            rate: None,
            arrival: ArrivalKind::Constant,
            ramp_to: None,
            seed: None,
            stages: None,
            duration: None,
            requests: None,
        }
    }
}

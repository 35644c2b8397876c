//! Spreads a run over worker threads, one current-thread runtime each, and merges what they
//! recorded.
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use hdrhistogram::Histogram;
use sojourn_core::targets::Targets;
use sojourn_core::{nanos, End, Measurements, Recorder, Schedule, Shard};
use sojourn_timer::{ControlCommand, ControlError, ControlMeter, ControlReport, HiccupMeter};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::journey::Script;
use crate::progress::Progress;
pub use crate::sleeper::Slack;
use crate::transport::Transport;
use crate::worker::{Arrivals, WorkerConfig, WorkerReport};

/// The kind of load.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// Requests due on a schedule, whatever the answers do.
    Open(Schedule),
    /// N connections each looping send → wait → record, until a duration or a count.
    Closed(End),
    /// N connections each owning a share of the schedule's slots, sending at the next one or
    /// when the previous answer arrives, whichever is later: a paced closed loop.
    Paced(Schedule),
}

/// A validated run: everything the engine needs, nothing from the command line.
#[derive(Debug, Clone)]
pub struct Plan {
    pub load: Load,
    /// Open loop: the pool's maximum size. Closed loop: the number of looping connections.
    pub connections: usize,
    pub threads: usize,
    /// How long one exchange may take; also how long the run drains after the schedule ends.
    pub timeout: Duration,
    /// Width of the timeline's intervals.
    pub interval: Duration,
    /// The most the pacer spins before one due time. It arms its timer early by as much as it
    /// has learned the kernel's wake-ups run late (capped by this), then spins to the due
    /// time, so requests leave within microseconds of it for a few microseconds of CPU. Zero:
    /// a plain timer wake-up, late by the kernel's wake-up latency.
    pub spin: Duration,
    /// The least time between two wake-ups of the pacer.
    pub slack: Slack,
    /// The tick of this process's own hiccup meter (a thread beside the workers that only
    /// sleeps); `None` runs without one. It shares the workers' cores, so it is reported, never
    /// used as an excuse.
    pub hiccup: Option<Duration>,
    /// How to start the control meter: a hiccup meter in an idle child process of its own, off
    /// the workers' cores when one is free (jHiccup's control process). Only it measures the
    /// machine's floor; `None` runs without one, and then no lateness is excused as the
    /// machine's.
    pub control: Option<ControlCommand>,
    /// Where to send every finished request's sample (`--samples`); `None` for no samples.
    pub samples: Option<std::sync::mpsc::Sender<sojourn_core::RequestSample>>,
    /// This process's shard of the schedule (`Shard::WHOLE` unless sharded): its threads run
    /// the shard's slices, so the shards together run the global schedule once.
    pub shard: Shard,
    /// The wall-clock instant the schedule's time zero falls on (`--start-at`); `None`: as soon
    /// as the workers are ready. A process that starts after it sends what fell due meanwhile
    /// at once, and that lateness is send lag.
    pub start_at: Option<SystemTime>,
    /// Many requests (`--targets`): request `i` sends target `pick(i)`, and each label gets its
    /// own histograms. `None`: the transport's one request.
    pub targets: Option<Arc<Targets>>,
    /// HTTP/2: streams per connection, and `connections` counts stream slots (connections ×
    /// streams). `None` for HTTP/1.1 and in-process calls, where a slot is a connection.
    pub streams: Option<usize>,
}

/// The hiccup meter's tick, as jHiccup's: fine enough for a millisecond-scale floor, and a
/// thousand wake-ups a second cost little beside a load generator's own.
pub const HICCUP_TICK: Duration = Duration::from_millis(1);

impl Plan {
    /// Threads actually used: never more than connections, never zero.
    pub fn worker_count(&self) -> usize {
        self.threads.clamp(1, self.connections.max(1))
    }

    /// Requests this process is due to schedule, from the plan alone; `None` for a closed loop
    /// bounded by a duration, which has no schedule.
    pub fn due(&self) -> Option<u64> {
        match &self.load {
            Load::Open(s) => Some(s.due_count(self.shard, self.worker_count())),
            Load::Paced(s) => Some(s.due_count(self.shard, self.connections.max(1))),
            Load::Closed(End::Count(n)) => Some(*n),
            Load::Closed(End::After(_)) => None,
        }
    }

    /// This process's schedule as its senders take it (one slice per worker thread for an
    /// open loop, one per connection for a paced one): whoever watches the run can count
    /// what has fallen due without asking the workers. `None` for a closed loop, which has no
    /// schedule.
    pub fn due_slices(&self) -> Option<Vec<sojourn_core::schedule::Slice>> {
        let (schedule, senders) = match &self.load {
            Load::Open(s) => (s, self.worker_count()),
            Load::Paced(s) => (s, self.connections.max(1)),
            Load::Closed(_) => return None,
        };
        let slice = |c| {
            let (slice, slices) = self.shard.slot(c, senders);
            schedule.slice(slice, slices)
        };
        Some((0..senders).map(slice).collect())
    }
}

/// When the run's clock starts: on the wall clock and on this process's monotonic clock, and
/// how late this process was ready against the plan's start (negative: early, so it waits).
pub(crate) fn clock_start(start_at: Option<SystemTime>) -> (Instant, SystemTime, Option<i64>) {
    let (ready, ready_wall) = (Instant::now() + WARMUP, SystemTime::now() + WARMUP);
    let Some(at) = start_at else {
        return (ready, ready_wall, None);
    };
    let (t0, skew) = match at.duration_since(ready_wall) {
        Ok(ahead) => (ready + ahead, -(nanos(ahead) as i64)),
        Err(behind) => {
            let late = behind.duration();
            (ready.checked_sub(late).unwrap_or(ready), nanos(late) as i64)
        }
    };
    (t0, at, Some(skew))
}

/// What a run produced.
pub struct RunReport {
    pub measurements: Measurements,
    pub scheduled: u64,
    pub elapsed: Duration,
    pub interrupted: bool,
    /// Whether the pacer had microsecond timers (timerfd) or fell back to tokio's 1 ms.
    pub precise_timer: bool,
    /// Wall-clock time of the run's start: the schedule's time zero.
    pub started: SystemTime,
    /// With a plan start (`--start-at`): how late this process was ready to send, in ns
    /// (negative: early, and it waited).
    pub start_skew: Option<i64>,
    /// The busiest worker thread's share of its time spent on CPU doing work (spinning for
    /// precise timing excluded). Near 1.0 the generator was CPU-bound. `None` if unknown.
    pub busiest_worker: Option<f64>,
    /// How late a thread of this process that only sleeps got the CPU back, tick by tick,
    /// during the run: this process's own hiccups.
    pub hiccup: Option<Histogram<u64>>,
    /// What the control meter (an idle child process) measured: the machine's floor under any
    /// send lag. `None` when the plan asked for none; an error when it gave no figures.
    pub control: Option<Result<ControlReport, ControlError>>,
}

/// Time given to worker threads to build their runtimes before the first request is due, so
/// thread start-up is not charged to the first requests as send lag.
const WARMUP: Duration = Duration::from_millis(20);

/// Runs the plan on `transport` and blocks until it is over (or cancelled).
pub fn execute<T: Transport>(
    plan: &Plan,
    transport: T,
    cancel: CancellationToken,
    progress: Arc<Progress>,
) -> std::io::Result<RunReport> {
    execute_with(plan, transport, cancel, progress, None)
}

/// Runs journeys of `script` on `transport`: the plan's open-loop schedule says when each
/// journey is due, and its `connections` how many journeys may run at once (each on a
/// connection of its own). A closed plan runs `connections` virtual users instead, each
/// starting its next journey when the last ends, timed from the sends. The report's
/// `scheduled` counts steps that fell due; its measurements' `journeys` count journeys.
pub fn execute_journeys<T: Transport>(
    plan: &Plan,
    transport: T,
    cancel: CancellationToken,
    progress: Arc<Progress>,
    script: Arc<dyn Script>,
) -> std::io::Result<RunReport> {
    assert!(
        !matches!(plan.load, Load::Paced(_)),
        "journeys run open (on a schedule) or closed (virtual users), not paced"
    );
    execute_with(plan, transport, cancel, progress, Some(script))
}

fn execute_with<T: Transport>(
    plan: &Plan,
    transport: T,
    cancel: CancellationToken,
    progress: Arc<Progress>,
    script: Option<Arc<dyn Script>>,
) -> std::io::Result<RunReport> {
    let workers = plan.worker_count();
    // The child first: it starts up while the workers do, before the clock starts.
    let control = plan.control.as_ref().map(ControlMeter::start);
    if let Some(Ok(meter)) = &control {
        progress.watch_floor(meter.floor());
    }
    let (t0, started, start_skew) = clock_start(plan.start_at);
    let meter = plan.hiccup.and_then(HiccupMeter::start);
    progress.start(t0.into_std());
    let reports: Vec<std::io::Result<(WorkerReport, WorkerHealth)>> = std::thread::scope(|scope| {
        let collector = spawn_collector(scope, &progress, t0);
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let cfg = WorkerConfig {
                    t0,
                    timeout: plan.timeout,
                    interval: plan.interval,
                    progress: progress.clone(),
                    worker: w,
                    cancel: cancel.clone(),
                    samples: plan.samples.clone(),
                    arrivals: match &plan.load {
                        // Journeys' sends follow answers and think times, not the schedule.
                        Load::Open(_) if script.is_some() => None,
                        Load::Open(schedule) => Some(Arrivals {
                            schedule: schedule.clone(),
                            senders: plan.shard.slot(0, workers).1,
                        }),
                        Load::Closed(_) | Load::Paced(_) => None,
                    },
                    connections: share(plan.connections as u64, w, workers) as usize,
                    slack: plan.slack,
                    targets: plan.targets.clone(),
                };
                let (transport, script) = (transport.clone(), script.clone());
                std::thread::Builder::new()
                    .name(format!("sojourn-worker-{w}"))
                    .spawn_scoped(scope, move || {
                        run_worker(plan, w, workers, transport, cfg, script)
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        let reports = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        drop(collector);
        reports
    });
    let hiccup = meter.map(|m| m.stop().histogram);
    let control = control.map(|c| c.and_then(ControlMeter::stop));
    let (reports, health): (Vec<WorkerReport>, Vec<WorkerHealth>) = reports
        .into_iter()
        .collect::<std::io::Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let precise_timer = health.iter().all(|h| h.precise_timer);
    let busiest_worker = health.iter().filter_map(|h| h.busy).reduce(f64::max);
    let scheduled = reports.iter().map(|r| r.scheduled).sum();
    let elapsed = reports.iter().map(|r| r.end).max().unwrap_or_default();
    let measurements = Recorder::merge_all(reports.into_iter().map(|r| r.recorder));
    Ok(RunReport {
        measurements,
        scheduled,
        elapsed,
        interrupted: cancel.is_cancelled(),
        precise_timer,
        started,
        start_skew,
        busiest_worker,
        hiccup,
        control,
    })
}

/// When the run is watched, a thread that closes each interval of the live histograms at its
/// end. It stops when the returned sender is dropped.
fn spawn_collector<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    progress: &'scope Progress,
    t0: Instant,
) -> Option<std::sync::mpsc::Sender<()>> {
    let live = progress.live()?;
    let (stop, stopped) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("sojourn-live".into())
        .spawn_scoped(scope, move || {
            crate::live::collect_until(live, t0.into_std(), stopped)
        })
        .expect("spawning the live collector");
    Some(stop)
}

/// What a worker thread says about itself besides its measurements.
struct WorkerHealth {
    precise_timer: bool,
    /// Share of the run this thread spent on CPU doing work (spinning excluded).
    busy: Option<f64>,
}

/// Runs one worker thread's share, and reports on the thread's own health.
fn run_worker<T: Transport>(
    plan: &Plan,
    w: usize,
    workers: usize,
    transport: T,
    cfg: WorkerConfig,
    script: Option<Arc<dyn Script>>,
) -> std::io::Result<(WorkerReport, WorkerHealth)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    let (cpu_before, wall_before) = (crate::cpu::thread_cpu_time(), std::time::Instant::now());
    Ok(local.block_on(&rt, async move {
        let mut timer = sojourn_timer::Timer::with_max_spin(plan.spin);
        let report = match &plan.load {
            Load::Open(schedule) if script.is_some() => {
                let (slice, slices) = plan.shard.slot(w, workers);
                let slice = schedule.slice(slice, slices);
                let places = cfg.connections;
                let spin = plan.spin;
                let script = script.expect("checked above");
                let end = schedule_end(schedule);
                let sleeper = move || sojourn_timer::Timer::with_max_spin(spin);
                crate::journey::run(transport, cfg, slice, end, script, places, sleeper).await
            }
            Load::Open(schedule) => {
                let (slice, slices) = plan.shard.slot(w, workers);
                let slice = schedule.slice(slice, slices);
                crate::open::run(transport, cfg, slice, schedule_end(schedule), &mut timer).await
            }
            Load::Closed(end) => {
                let end = match *end {
                    End::Count(n) => End::Count(share(n, w, workers)),
                    after => after,
                };
                match script {
                    Some(script) => {
                        let (users, spin) = (cfg.connections, plan.spin);
                        let sleeper = move || sojourn_timer::Timer::with_max_spin(spin);
                        let indices = (w as u64, workers as u64);
                        crate::journey::run_closed(
                            transport, cfg, script, users, end, indices, sleeper,
                        )
                        .await
                    }
                    None => crate::closed::run(transport, cfg, end).await,
                }
            }
            Load::Paced(schedule) => {
                let first = (0..w)
                    .map(|v| share(plan.connections as u64, v, workers))
                    .sum::<u64>();
                crate::paced::run(
                    transport,
                    cfg,
                    schedule,
                    plan.shard,
                    first as usize,
                    plan.connections.max(1),
                )
                .await
            }
        };
        let busy = crate::cpu::busy_share(cpu_before, wall_before.elapsed(), timer.spun());
        (
            report,
            WorkerHealth {
                precise_timer: timer.is_precise(),
                busy,
            },
        )
    }))
}

/// Worker `w`'s even share of `total`.
fn share(total: u64, w: usize, workers: usize) -> u64 {
    let (w, workers) = (w as u64, workers.max(1) as u64);
    total / workers + u64::from(w < total % workers)
}

/// When the schedule stops issuing: its duration, or its last due time for a count.
pub fn schedule_end(schedule: &Schedule) -> Duration {
    match schedule.end {
        End::After(d) => d,
        End::Count(_) => schedule.iter().last().map(|d| d.at).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for (total, workers) in [(10u64, 3usize), (1, 4), (0, 2), (1000, 7)] {
            let sum: u64 = (0..workers).map(|w| share(total, w, workers)).sum();
            assert_eq!(sum, total, "{total} over {workers}");
        }
    }
}

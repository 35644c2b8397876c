//! Runs a plan while live sinks watch it: the terminal's panel, the metrics endpoint, and any
//! sink a library user attaches. Ctrl-C and SIGTERM stop the schedule; everything gathered so
//! far is still built into the result.
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use sojourn_core::RunResult;
use sojourn_engine::result::About;
use sojourn_engine::{Plan, Progress};
use tokio_util::sync::CancellationToken;

use crate::transport::AnyTransport;
use crate::RunSpec;

/// How often watchers are called during a run.
pub const WATCH_EVERY: Duration = Duration::from_millis(200);

/// Why a run stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    /// Ctrl-C at the terminal.
    CtrlC,
    /// SIGTERM: how Kubernetes stops a pod.
    Terminated,
}

/// A live sink: called every [`WATCH_EVERY`] during a run, told when the run is interrupted,
/// and finished once when the run ends. It reads the run through a
/// [`crate::live::Watched`] it was given when it was made.
pub trait Watcher {
    /// Another look at the run.
    fn update(&mut self);
    /// The run was interrupted; it now drains what is in flight.
    fn interrupted(&mut self, _how: Interruption) {}
    /// The run is over (called once; later calls must do nothing).
    fn finish(&mut self);
}

/// What watches the runs of a command: it says whether its sinks need per-interval figures,
/// and makes them for a run when it starts.
pub trait Sinks {
    /// Whether a sink shows per-interval figures (the engine then keeps them live).
    fn live(&self) -> bool;
    /// The sinks for a run of `plan`, reading `progress`.
    fn make(
        &mut self,
        plan: &Plan,
        progress: &Arc<Progress>,
    ) -> anyhow::Result<Vec<Box<dyn Watcher>>>;
    /// The sinks for the run its result labels `label`; `first` unless it runs beside an
    /// earlier one (`compare`'s second loop). By default the first gets [`Sinks::make`]'s and
    /// the others none: one terminal shows one panel. A sink that shows several runs at once
    /// (the dashboard) overrides this to watch each.
    fn make_run(
        &mut self,
        plan: &Plan,
        progress: &Arc<Progress>,
        label: &str,
        first: bool,
    ) -> anyhow::Result<Vec<Box<dyn Watcher>>> {
        let _ = label;
        match first {
            true => self.make(plan, progress),
            false => Ok(Vec::new()),
        }
    }
}

/// No live sinks: a library run, or a test.
pub struct NoSinks;

impl Sinks for NoSinks {
    fn live(&self) -> bool {
        false
    }

    fn make(&mut self, _: &Plan, _: &Arc<Progress>) -> anyhow::Result<Vec<Box<dyn Watcher>>> {
        Ok(Vec::new())
    }
}

/// The engine's live counters for `plan`: with per-interval figures when something shows them.
pub fn progress(plan: &Plan, live: bool) -> Arc<Progress> {
    if live {
        Progress::with_live(plan.worker_count(), plan.interval)
    } else {
        Progress::new(plan.worker_count())
    }
}

/// One run to carry out: the plan, its transport, the label and target its result names.
pub struct Job<'a> {
    /// The engine's plan.
    pub plan: &'a Plan,
    /// How to reach the target.
    pub transport: AnyTransport,
    /// The live counters the watchers read (from [`progress`]).
    pub progress: Arc<Progress>,
    /// What the result says of itself beyond the plan: label, target, protocol, warm-up.
    pub about: About,
    /// Journeys (`--journey`): the plan's schedule says when each is due.
    pub journeys: Option<Arc<dyn sojourn_engine::journey::Script>>,
}

/// Runs `job` on worker threads while this thread calls `watchers` and listens for Ctrl-C and
/// SIGTERM.
pub fn run(
    rt: &tokio::runtime::Runtime,
    job: Job<'_>,
    sinks: &mut dyn Sinks,
) -> anyhow::Result<RunResult> {
    let [result] = run_together(rt, [job], sinks)?;
    Ok(result)
}

/// Connects to the spec's target, sizes its pool, and runs it with `sinks` watching.
pub fn run_spec(
    rt: &tokio::runtime::Runtime,
    spec: &mut RunSpec,
    sinks: &mut dyn Sinks,
) -> anyhow::Result<RunResult> {
    let transport = rt.block_on(spec.connectable())?;
    spec.fit_pool(&transport);
    let plan = spec.plan();
    let job = Job {
        progress: progress(&plan, sinks.live()),
        plan: &plan,
        transport,
        about: spec.about(),
        journeys: spec.script(),
    };
    run(rt, job, sinks)
}

/// Runs plans at once (`compare`: both loops against one target, so that whatever the server
/// does, both meet it); one Ctrl-C or SIGTERM stops them all.
pub fn run_together<const N: usize>(
    rt: &tokio::runtime::Runtime,
    jobs: [Job<'_>; N],
    sinks: &mut dyn Sinks,
) -> anyhow::Result<[RunResult; N]> {
    raise_fd_limit();
    jobs.iter().for_each(watch_journeys);
    let mut watchers = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        watchers.extend(sinks.make_run(job.plan, &job.progress, &job.about.label, i == 0)?);
    }
    let cancel = CancellationToken::new();
    let reports = std::thread::scope(|scope| {
        let engines: Vec<_> = jobs
            .iter()
            .map(|job| {
                let (cancel, progress, transport) =
                    (cancel.clone(), job.progress.clone(), job.transport.clone());
                let (plan, journeys) = (job.plan, job.journeys.clone());
                scope.spawn(move || match journeys {
                    Some(script) => {
                        sojourn_engine::execute_journeys(plan, transport, cancel, progress, script)
                    }
                    None => sojourn_engine::execute(plan, transport, cancel, progress),
                })
            })
            .collect();
        rt.block_on(watch(&cancel, &mut watchers, || {
            engines.iter().all(|e| e.is_finished())
        }));
        engines
            .into_iter()
            .map(|e| e.join().expect("engine thread panicked"))
            .collect::<Vec<_>>()
    });
    for w in watchers.iter_mut() {
        w.finish();
    }
    let built: Vec<RunResult> = jobs
        .iter()
        .zip(reports)
        .map(|(job, report)| -> anyhow::Result<RunResult> {
            let report = report.context("running the load")?;
            Ok(sojourn_engine::result::build(job.plan, &report, &job.about))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(built
        .try_into()
        .unwrap_or_else(|_| unreachable!("one result per job")))
}

/// A watched journey run keeps a live row per step label and per journey, named as its
/// result names them, and a watched run of a targets file a row per label, for the panel, the
/// metrics endpoint and the dashboard; an unwatched run or a plain one keeps none.
fn watch_journeys(job: &Job<'_>) {
    if job.progress.live().is_none() {
        return;
    }
    if let Some(names) = &job.about.journeys {
        let names_of = |v: &[(String, f64)]| v.iter().map(|(name, _)| name.clone()).collect();
        job.progress
            .watch_journeys(names_of(&names.steps), names_of(&names.journeys));
    } else if let Some(targets) = &job.plan.targets {
        job.progress.watch_targets(targets.labels().to_vec());
    }
}

async fn watch(
    cancel: &CancellationToken,
    watchers: &mut [Box<dyn Watcher>],
    finished: impl Fn() -> bool,
) {
    let mut tick = tokio::time::interval(WATCH_EVERY);
    // SIGTERM as Ctrl-C: it is how Kubernetes stops a pod (a failed Job stops its other
    // shards so), and a shard stopped early must still write what it measured, so that a
    // merge names it short rather than missing.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    loop {
        let terminated = async {
            match term.as_mut() {
                Some(t) => {
                    t.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        let how = tokio::select! {
            _ = tokio::signal::ctrl_c(), if !cancel.is_cancelled() => Interruption::CtrlC,
            _ = terminated, if !cancel.is_cancelled() => Interruption::Terminated,
            _ = tick.tick() => {
                if finished() {
                    return;
                }
                for w in watchers.iter_mut() {
                    w.update();
                }
                continue;
            }
        };
        for w in watchers.iter_mut() {
            w.interrupted(how);
        }
        cancel.cancel();
    }
}

/// An open loop may need thousands of sockets during a stall; lift the soft limit to the hard
/// one so the pool, not the file-descriptor limit, decides.
fn raise_fd_limit() {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
}

//! The two loops a library user runs: [`OpenLoop`] and the labelled [`ClosedLoop`]. Both build
//! the engine's [`Plan`] and return the result `sojourn run` would write.
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::{Arrival, End, Rate, RunResult, Schedule, Shard};
use sojourn_engine::{Load, Plan, Progress, Slack, Transport};
use tokio_util::sync::CancellationToken;

use crate::call::{AsyncCalls, BlockingCalls, CallResult};
use crate::Error;

/// Settings both loops share.
#[derive(Debug, Clone)]
struct Common {
    end: End,
    threads: usize,
    timeout: Duration,
    interval: Duration,
    label: String,
    slack: Slack,
}

impl Common {
    fn new(label: &str) -> Common {
        Common {
            end: End::After(crate::defaults::DURATION),
            threads: 1,
            timeout: crate::defaults::TIMEOUT,
            interval: crate::defaults::INTERVAL,
            label: label.to_string(),
            slack: Slack::Auto,
        }
    }

    /// The engine's plan for `shard` of the schedule; `what` names the count of `connections`
    /// for an error message.
    fn plan(
        &self,
        load: Load,
        shard: Shard,
        connections: usize,
        what: &'static str,
    ) -> Result<Plan, Error> {
        if connections == 0 {
            return Err(Error::Zero(what));
        }
        if self.threads == 0 {
            return Err(Error::Zero("threads"));
        }
        // The library's own defaults for what it sets (threads, timeout, interval, slack);
        // the rest is the spec's. A library has no program of its own to start as the control
        // process unless one was installed (`control::install`), so by default nothing here is
        // excused as the machine's lateness.
        let spec = crate::RunSpec {
            connections,
            threads: self.threads,
            timeout: self.timeout,
            interval: self.interval,
            timer: crate::spec::TimerPolicy {
                slack: self.slack,
                ..Default::default()
            },
            shard,
            ..crate::RunSpec::of(load)
        };
        Ok(spec.plan())
    }
}

/// Runs `plan` on `transport` and builds its result.
fn execute<T: Transport>(plan: &Plan, transport: T, label: &str) -> Result<RunResult, Error> {
    let report = sojourn_engine::execute(
        plan,
        transport,
        CancellationToken::new(),
        Progress::new(plan.worker_count()),
    )?;
    let about = sojourn_engine::result::About {
        target: Some("in-process".into()),
        ..sojourn_engine::result::About::labelled(label)
    };
    Ok(sojourn_engine::result::build(plan, &report, &about))
}

fn rate(per_second: f64) -> Result<Rate, Error> {
    Rate::per_second(per_second).map_err(|_| Error::Rate(per_second))
}

/// Calls due on a schedule, whatever the calls take, each measured from when it was due.
///
/// A call that falls due while every slot of concurrency is busy waits for one, first come
/// first served, and its wait is in its response time: nothing is dropped and nothing waits
/// uncounted.
///
/// ```
/// use std::time::Duration;
///
/// let result = sojourn::OpenLoop::at(1_000.0)
///     .poisson(7)
///     .for_duration(Duration::from_millis(300))
///     .label("cache lookup")
///     .run(|| async { Ok::<u32, String>(42) })?;
/// assert_eq!(result.mode, sojourn::Mode::Open);
/// assert_eq!(result.counts.failed.total(), 0);
/// # Ok::<(), sojourn::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct OpenLoop {
    rate: f64,
    arrival: Arrival,
    ramp_to: Option<f64>,
    concurrency: usize,
    /// (index, count) as given; checked when the run starts.
    shard: (u32, u32),
    common: Common,
}

impl OpenLoop {
    /// Calls evenly spaced at `per_second`, for 10 s unless told otherwise.
    pub fn at(per_second: f64) -> OpenLoop {
        OpenLoop {
            rate: per_second,
            arrival: Arrival::Constant,
            ramp_to: None,
            concurrency: crate::defaults::IN_PROCESS_CALLS,
            shard: (0, 1),
            common: Common::new("open loop"),
        }
    }

    /// Poisson arrivals at the same mean rate, from `seed` (the same seed, the same due times).
    pub fn poisson(mut self, seed: u64) -> OpenLoop {
        self.arrival = Arrival::Poisson { seed };
        self
    }

    /// A rate rising (or falling) linearly to `per_second` over the run's duration.
    pub fn ramp_to(mut self, per_second: f64) -> OpenLoop {
        self.ramp_to = Some(per_second);
        self
    }

    /// Stop scheduling calls after `d` (the last calls still finish, up to the timeout).
    pub fn for_duration(mut self, d: Duration) -> OpenLoop {
        self.common.end = End::After(d);
        self
    }

    /// Schedule exactly `n` calls.
    pub fn for_calls(mut self, n: u64) -> OpenLoop {
        self.common.end = End::Count(n);
        self
    }

    /// With [`OpenLoop::run`]: the most calls in flight at once (1,024 by default).
    pub fn concurrency(mut self, n: usize) -> OpenLoop {
        self.concurrency = n;
        self
    }

    /// Dispatcher threads, each with its own share of the schedule (1 by default: one thread
    /// paces tens of thousands of calls a second).
    pub fn threads(mut self, n: usize) -> OpenLoop {
        self.common.threads = n;
        self
    }

    /// The longest wait for one call; a call that takes longer is counted as timed out.
    pub fn timeout(mut self, d: Duration) -> OpenLoop {
        self.common.timeout = d;
        self
    }

    /// Width of the result's timeline intervals (1 s by default).
    pub fn interval(mut self, d: Duration) -> OpenLoop {
        self.common.interval = d;
        self
    }

    /// The least time between two wake-ups of the dispatcher (`sojourn run --timer-slack`):
    /// calls due closer together leave together, each up to this late, for fewer wake-ups and
    /// less harness CPU per call. By default, as late as its wake-ups have been coming.
    /// The lateness is measured (send lag) and counted in every call's response time.
    pub fn timer_slack(mut self, d: Duration) -> OpenLoop {
        self.common.slack = Slack::Fixed(d);
        self
    }

    /// The run's name in results and reports ("open loop" by default).
    pub fn label(mut self, label: &str) -> OpenLoop {
        self.common.label = label.to_string();
        self
    }

    /// Runs only shard `index` (from 0) of `count` of the schedule, as `sojourn run --shard
    /// index/count` does: every count-th call, so that processes (or machines) running the
    /// other shards at the same time offer the whole rate between them. Their results merge
    /// back into one with [`crate::merge_files`].
    ///
    /// ```
    /// let third = sojourn::OpenLoop::at(300.0).for_calls(30).shard(1, 3).run(|| async {})?;
    /// assert_eq!(third.counts.scheduled, 10);
    /// let none = sojourn::OpenLoop::at(300.0).shard(3, 3).run(|| async {});
    /// assert_eq!(
    ///     none.unwrap_err().to_string(),
    ///     "shard: shard 3 of 3: shards are numbered from 0 to 2"
    /// );
    /// # Ok::<(), sojourn::Error>(())
    /// ```
    pub fn shard(mut self, index: u32, count: u32) -> OpenLoop {
        self.shard = (index, count);
        self
    }

    fn load(&self) -> Result<Load, Error> {
        if self.common.end == End::Count(0) {
            return Err(Error::Zero("calls"));
        }
        let arrival = match self.ramp_to {
            Some(to) => Arrival::Ramp { to: rate(to)? },
            None => self.arrival,
        };
        Ok(Load::Open(Schedule::new(
            arrival,
            rate(self.rate)?,
            self.common.end,
        )?))
    }

    fn slice(&self) -> Result<Shard, Error> {
        Ok(Shard::new(self.shard.0, self.shard.1)?)
    }

    /// Drives the async function `f`: each due call runs `f()` to completion on the
    /// dispatcher's runtime. Blocks until the run is over.
    pub fn run<F, Fut, R>(&self, f: F) -> Result<RunResult, Error>
    where
        F: Fn() -> Fut + Clone + Send + 'static,
        Fut: Future<Output = R> + 'static,
        R: CallResult,
    {
        let plan =
            self.common
                .plan(self.load()?, self.slice()?, self.concurrency, "concurrency")?;
        execute(&plan, AsyncCalls { call: f }, &self.common.label)
    }

    /// Drives the blocking function `f` on `threads` threads of its own: each due call goes to
    /// a free thread, or waits for one, first come first served, measured from its due time.
    /// This is an executor service with a schedule in front of it. A call still running when
    /// the run ends (past its timeout) is counted as censored; its thread finishes it in the
    /// background and then exits.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let result = sojourn::OpenLoop::at(500.0)
    ///     .for_duration(Duration::from_millis(200))
    ///     .run_blocking(4, || std::thread::sleep(Duration::from_micros(100)))?;
    /// assert_eq!(result.counts.completed, 100);
    /// // No threads, no run: the error names what was zero.
    /// let none = sojourn::OpenLoop::at(500.0).run_blocking(0, || ());
    /// assert_eq!(none.unwrap_err().to_string(), "threads: must be at least 1");
    /// # Ok::<(), sojourn::Error>(())
    /// ```
    pub fn run_blocking<F, R>(&self, threads: usize, f: F) -> Result<RunResult, Error>
    where
        F: Fn() -> R + Send + Sync + 'static,
        R: CallResult,
    {
        let plan = self
            .common
            .plan(self.load()?, self.slice()?, threads, "threads")?;
        execute(
            &plan,
            BlockingCalls { call: Arc::new(f) },
            &self.common.label,
        )
    }
}

/// The labelled closed loop: `n` callers each call, wait for the call to return, record, and
/// call again. It is what Criterion and JMH measure, and what hides a stall: while a call is
/// stuck its caller makes no others. Every output labels it.
///
/// ```
/// use std::time::Duration;
///
/// let result = sojourn::ClosedLoop::with(2)
///     .for_duration(Duration::from_millis(100))
///     .run(|| async {})?;
/// assert_eq!(result.mode, sojourn::Mode::Closed);
/// assert!(result.counts.completed > 100);
/// # Ok::<(), sojourn::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct ClosedLoop {
    callers: usize,
    paced: Option<(f64, Arrival)>,
    common: Common,
}

impl ClosedLoop {
    /// `n` callers, each looping call → wait → record, for 10 s unless told otherwise.
    pub fn with(n: usize) -> ClosedLoop {
        ClosedLoop {
            callers: n,
            paced: None,
            common: Common::new("closed loop"),
        }
    }

    /// A paced closed loop: each caller owns 1/n of a schedule at `per_second` in all and
    /// calls at its next slot or when its previous call returns, whichever is later. Its
    /// result times each call from its slot (response) and from its start (service).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let result = sojourn::ClosedLoop::with(4)
    ///     .paced(400.0)
    ///     .for_duration(Duration::from_millis(250))
    ///     .run(|| async {})?;
    /// assert_eq!(result.mode, sojourn::Mode::Paced);
    /// assert_eq!(result.counts.scheduled, 100);
    /// # Ok::<(), sojourn::Error>(())
    /// ```
    pub fn paced(mut self, per_second: f64) -> ClosedLoop {
        self.paced = Some((per_second, Arrival::Constant));
        self.common.label = "paced closed loop".into();
        self
    }

    /// Stop starting calls after `d`.
    pub fn for_duration(mut self, d: Duration) -> ClosedLoop {
        self.common.end = End::After(d);
        self
    }

    /// Make exactly `n` calls in all.
    pub fn for_calls(mut self, n: u64) -> ClosedLoop {
        self.common.end = End::Count(n);
        self
    }

    /// Dispatcher threads the callers are spread over (1 by default).
    pub fn threads(mut self, n: usize) -> ClosedLoop {
        self.common.threads = n;
        self
    }

    /// The longest wait for one call.
    pub fn timeout(mut self, d: Duration) -> ClosedLoop {
        self.common.timeout = d;
        self
    }

    /// Width of the result's timeline intervals (1 s by default).
    pub fn interval(mut self, d: Duration) -> ClosedLoop {
        self.common.interval = d;
        self
    }

    /// The run's name in results and reports.
    pub fn label(mut self, label: &str) -> ClosedLoop {
        self.common.label = label.to_string();
        self
    }

    fn load(&self) -> Result<Load, Error> {
        if self.common.end == End::Count(0) {
            return Err(Error::Zero("calls"));
        }
        Ok(match self.paced {
            Some((per_second, arrival)) => {
                Load::Paced(Schedule::new(arrival, rate(per_second)?, self.common.end)?)
            }
            None => Load::Closed(self.common.end),
        })
    }

    /// Drives the async function `f` with the loop's callers.
    pub fn run<F, Fut, R>(&self, f: F) -> Result<RunResult, Error>
    where
        F: Fn() -> Fut + Clone + Send + 'static,
        Fut: Future<Output = R> + 'static,
        R: CallResult,
    {
        let plan = self
            .common
            .plan(self.load()?, Shard::WHOLE, self.callers, "callers")?;
        execute(&plan, AsyncCalls { call: f }, &self.common.label)
    }

    /// Drives the blocking function `f`: each caller is a thread of its own.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let result = sojourn::ClosedLoop::with(2)
    ///     .for_calls(50)
    ///     .run_blocking(|| true)?;
    /// assert_eq!(result.counts.completed, 50);
    /// # Ok::<(), sojourn::Error>(())
    /// ```
    pub fn run_blocking<F, R>(&self, f: F) -> Result<RunResult, Error>
    where
        F: Fn() -> R + Send + Sync + 'static,
        R: CallResult,
    {
        let plan = self
            .common
            .plan(self.load()?, Shard::WHOLE, self.callers, "callers")?;
        execute(
            &plan,
            BlockingCalls { call: Arc::new(f) },
            &self.common.label,
        )
    }
}

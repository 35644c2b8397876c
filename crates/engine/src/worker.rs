//! One worker thread's share of a run: its waiting line, its connections and its recorder.
//! Single-threaded by construction (a current-thread runtime), so shared state is `Rc`/`Cell`
//! and nothing on the recording path takes a lock.
//!
//! Nothing here is allocated per request. A request in the waiting line is an index range of
//! the schedule (`Backlog`); a request in flight is a few words in its connection's `Slot`;
//! a finished request is a handful of histogram counters.
//!
//! The worker does not know which loop it runs: each loop module (`open`, `closed`, `paced`)
//! implements [`Source`], and the worker and its connections (`pool`) drive that.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::targets::Targets;
use sojourn_core::{FailureClass, Outcome, Recorder, RequestSample, Schedule, Stamps};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::progress::{Progress, WorkerCounters};
use crate::sleeper::Slack;
use crate::transport::{Exchange, Transport};

/// Settings every worker needs.
#[derive(Clone)]
pub struct WorkerConfig {
    /// The run's time zero: intended times are offsets from it.
    pub t0: Instant,
    pub timeout: Duration,
    pub interval: Duration,
    pub progress: Arc<Progress>,
    pub worker: usize,
    pub cancel: CancellationToken,
    /// Where finished requests' samples go, when per-request samples were asked for.
    pub samples: Option<std::sync::mpsc::Sender<RequestSample>>,
    /// Open loop: the arrival process this worker's sends are tested against.
    pub arrivals: Option<Arrivals>,
    /// Open loop: the most connections this worker opens. Closed loop: how many loop.
    pub connections: usize,
    /// Open loop: the least time between two wake-ups of the pacer.
    pub slack: Slack,
    /// Many requests (`--targets`): which one each scheduled index sends and which label it is
    /// counted under. `None`: the transport's one request.
    pub targets: Option<Arc<Targets>>,
}

/// A worker's recorder: with a record per label when the run has many requests.
fn new_recorder(cfg: &WorkerConfig) -> Recorder {
    match &cfg.targets {
        Some(t) => Recorder::with_labels(cfg.interval, t.labels().len()),
        None => Recorder::new(cfg.interval),
    }
}

/// One sender's share of a schedule, as the conformance test sees it.
#[derive(Debug, Clone)]
pub struct Arrivals {
    pub schedule: Schedule,
    /// How many senders split the schedule: each expects 1/senders of its arrivals.
    pub senders: usize,
}

impl Arrivals {
    /// Λ(t) of this sender's share: how many of its requests were due by `t`.
    fn expected_by(&self, t: Duration) -> f64 {
        self.schedule.expected_by(t) / self.senders.max(1) as f64
    }
}

/// What a worker hands back when its run is over.
pub struct WorkerReport {
    pub recorder: Recorder,
    /// When the worker stopped, from the start of the run.
    pub end: Duration,
    /// Requests this worker scheduled (open) or started (closed), all accounted for in
    /// `recorder`.
    pub scheduled: u64,
}

/// One request on its way: where it stands on the schedule. Copied, never allocated.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Job {
    pub intended: Duration,
    /// When the generator took it up. Past `intended`, the gap is the generator's own lateness.
    pub dispatched: Duration,
    /// It became due while every connection was busy.
    pub waited: bool,
    /// Which of the transport's requests it sends (`--targets`; 0 with one request).
    pub target: u32,
}

/// A connection's (or HTTP/2 stream's) place in the pool: the request it carries, if any, and
/// the stamps its transport sets.
#[derive(Default)]
pub(crate) struct Slot {
    /// The connection's number in its worker.
    pub lane: usize,
    pub job: Cell<Option<Job>>,
    /// Which request to send; the send stamp and status the transport sets.
    pub ex: Exchange,
    /// Wakes the connection when the pacer hands it a request.
    pub wake: Notify,
}

/// Where a connection's next request comes from.
pub(crate) enum Next {
    Job(Job),
    /// Nothing is due: wait to be handed a request.
    Park,
    /// Paced: the connection's next slot is due at this offset; sleep until then and ask again.
    WaitUntil(Duration),
    /// The run has no more requests for this connection.
    Stop,
}

/// Where a worker's requests come from: the open loop's waiting line, the closed loop's
/// tickets, the paced loop's per-connection slots. Each loop module implements it, so the
/// worker and its connections drive a loop without naming it.
pub(crate) trait Source {
    /// Requests are measured from their send: a closed loop has no schedule.
    const CLOSED_LOOP: bool = false;
    /// Each connection sleeps to slots of its own ([`Next::WaitUntil`]) on a timer of its own.
    const OWN_SLOTS: bool = false;

    /// The next request for connection `lane` at `now` (from the start of the run), which has
    /// just become free (`woke`: or has just woken up for its next slot).
    fn next(&self, lane: usize, now: Duration, woke: bool, picks: Picks) -> Next;

    /// A connection has gone idle: not every connection is busy any more.
    fn on_idle(&self) {}

    /// The run is over at `end`: records what was due and never sent, and returns how many
    /// requests this source scheduled (open, paced) or started (closed).
    fn close(&self, recorder: &mut Recorder, end: Duration, picks: Picks) -> u64;
}

/// Which of the transport's requests a scheduled index sends, and which label it is counted
/// under (`--targets`): pure functions of the index, so shards and the simulator agree.
#[derive(Clone, Copy)]
pub(crate) struct Picks<'a>(Option<&'a Targets>);

impl Picks<'_> {
    /// The request scheduled index `index` sends (0 with one request).
    pub(crate) fn target_of(self, index: u64) -> u32 {
        self.0.map_or(0, |t| t.pick(index) as u32)
    }

    /// The label a request of `target` is counted under.
    pub(crate) fn label_of(self, target: u32) -> usize {
        self.0.map_or(0, |t| t.label_of(target as usize))
    }

    /// The label scheduled index `index` is counted under.
    pub(crate) fn label_of_index(self, index: u64) -> usize {
        self.label_of(self.target_of(index))
    }
}

pub(crate) struct Worker<T: Transport, S: Source> {
    transport: T,
    pub(crate) cfg: WorkerConfig,
    pub(crate) source: S,
    recorder: RefCell<Recorder>,
    /// Every connection's slot, so the end of the run can see what is still in flight.
    pub(crate) slots: RefCell<Vec<Rc<Slot>>>,
    /// Connections with nothing to do, most recently used last.
    pub(crate) idle: RefCell<Vec<Rc<Slot>>>,
    /// Slots that carry a request.
    busy: Cell<usize>,
    /// Connection tasks still running.
    pub(crate) live: Cell<usize>,
    /// A connection went idle or ended: the pacer may place requests, the run may be over.
    pub(crate) quiet: Notify,
    /// Set once the run has been closed: late finishes must not record twice.
    closed: Cell<bool>,
}

impl<T: Transport, S: Source> Worker<T, S> {
    pub(crate) fn new(transport: T, cfg: WorkerConfig, source: S) -> Rc<Self> {
        let connections = cfg.connections.max(1);
        cfg.progress.worker(cfg.worker).track(connections);
        Rc::new(Worker {
            transport,
            recorder: RefCell::new(new_recorder(&cfg)),
            cfg,
            source,
            slots: RefCell::new(Vec::with_capacity(connections)),
            idle: RefCell::new(Vec::with_capacity(connections)),
            busy: Cell::new(0),
            live: Cell::new(0),
            quiet: Notify::new(),
            closed: Cell::new(false),
        })
    }

    pub(crate) fn transport(&self) -> &T {
        &self.transport
    }

    pub fn t0(&self) -> Instant {
        self.cfg.t0
    }

    pub fn cancel(&self) -> &CancellationToken {
        &self.cfg.cancel
    }

    /// Time since the start of the run.
    pub fn offset(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.cfg.t0)
    }

    pub fn now(&self) -> Duration {
        self.offset(Instant::now())
    }

    pub(crate) fn counters(&self) -> &WorkerCounters {
        self.cfg.progress.worker(self.cfg.worker)
    }

    pub(crate) fn is_closed_loop(&self) -> bool {
        S::CLOSED_LOOP
    }

    pub(crate) fn is_paced(&self) -> bool {
        S::OWN_SLOTS
    }

    pub(crate) fn is_busy(&self) -> bool {
        self.busy.get() > 0
    }

    /// Gives `slot` its next request.
    pub(crate) fn assign(&self, slot: &Slot, job: Job) {
        slot.ex.begin(job.target as usize);
        slot.job.set(Some(job));
        self.busy.set(self.busy.get() + 1);
        self.counters().on_carry(slot.lane, job.intended);
        if let Some(rows) = self.cfg.progress.labels() {
            rows.step_started(self.cfg.worker, self.picks().label_of(job.target));
        }
    }

    /// The next request for connection `lane`, which has just become free (`woke`: or has just
    /// woken up for its next slot).
    pub(crate) fn next(&self, lane: usize, woke: bool) -> Next {
        self.source.next(lane, self.now(), woke, self.picks())
    }

    /// Which request each scheduled index sends, and the label it is counted under.
    pub(crate) fn picks(&self) -> Picks<'_> {
        Picks(self.cfg.targets.as_deref())
    }

    /// A connection has nothing to do: it waits in the idle list until handed a request.
    pub(crate) fn park(&self, slot: &Rc<Slot>) {
        self.idle.borrow_mut().push(slot.clone());
        self.source.on_idle();
        self.quiet.notify_one();
    }

    /// A connection task has ended.
    pub(crate) fn retire(&self) {
        self.live.set(self.live.get() - 1);
        self.quiet.notify_one();
    }

    /// A request is leaving now: one gap for the conformance test. (A retry on a fresh
    /// connection is the same request, so it is not noted again.)
    pub(crate) fn note_send(&self) {
        if let Some(a) = &self.cfg.arrivals {
            let expected = a.expected_by(self.now());
            self.recorder.borrow_mut().record_send_at(expected);
        }
    }

    /// Records a finished request and frees its slot.
    pub(crate) fn finish(&self, slot: &Slot, outcome: Outcome) {
        let Some(job) = slot.job.take() else { return };
        self.busy.set(self.busy.get() - 1);
        self.counters().on_free(slot.lane);
        if self.closed.get() {
            return;
        }
        let done = self.now();
        let mut recorder = self.recorder.borrow_mut();
        if let Some(code) = slot.ex.code() {
            recorder.record_status(code);
        }
        let label = self.picks().label_of(job.target);
        match slot.ex.sent() {
            Some(sent) => {
                let stamps = self.stamps(&job, self.offset(sent));
                recorder.record(&stamps, done, outcome);
                let (first, messages) = slot.ex.take_stream();
                if first.is_some() || messages > 0 {
                    let first = first.map(|at| self.offset(at));
                    recorder.record_stream(stamps.intended, first, messages);
                }
                if let Some(l) = recorder.label(label) {
                    l.record(&stamps, done, outcome);
                }
                let service = done.saturating_sub(stamps.sent);
                self.sample(stamps.intended, done, service, outcome);
                self.live(label, stamps.intended, done, Some(stamps.sent), outcome);
            }
            None => {
                let class = match outcome {
                    Outcome::Failed(class) => class,
                    Outcome::Ok => FailureClass::Io,
                };
                recorder.record_unsent_failure(job.intended, job.dispatched, done, class);
                if let Some(l) = recorder.label(label) {
                    l.record_unsent_failure(job.intended, done, class);
                }
                self.sample(job.intended, done, Duration::ZERO, outcome);
                self.live(label, job.intended, done, None, Outcome::Failed(class));
            }
        }
    }

    /// The live per-interval histograms and the targets file's rows (of `label`), when
    /// someone watches the run.
    fn live(
        &self,
        label: usize,
        intended: Duration,
        done: Duration,
        sent: Option<Duration>,
        outcome: Outcome,
    ) {
        let response = done.saturating_sub(intended);
        if let Some(live) = self.cfg.progress.live() {
            let sent = sent.map(|s| (done.saturating_sub(s), s.saturating_sub(intended)));
            let failed = !matches!(outcome, Outcome::Ok);
            live.record(self.cfg.worker, done, response, sent, failed);
        }
        if let Some(rows) = self.cfg.progress.labels() {
            let service = sent.map(|s| done.saturating_sub(s));
            rows.step_done(self.cfg.worker, label, response, service, outcome);
        }
    }

    fn sample(&self, intended: Duration, done: Duration, service: Duration, outcome: Outcome) {
        if let Some(tx) = &self.cfg.samples {
            let response = done.saturating_sub(intended);
            // A closed writer only means nobody is listening any more; the histograms are whole.
            let _ = tx.send(RequestSample {
                intended,
                response,
                service,
                outcome,
            });
        }
    }

    /// A closed loop has no schedule: its requests are measured from when they were sent.
    fn stamps(&self, job: &Job, sent: Duration) -> Stamps {
        if self.is_closed_loop() {
            return Stamps::on_time(sent);
        }
        Stamps {
            intended: job.intended,
            dispatched: job.dispatched,
            sent,
            waited_for_connection: job.waited,
        }
    }

    /// Ends the run at `end`: what is in flight is censored, what is due and unsent (counted
    /// from the waiting line's range) was never sent, and nothing records after this.
    pub fn close(&self, end: Duration) -> WorkerReport {
        self.closed.set(true);
        let mut recorder = self.recorder.replace(new_recorder(&self.cfg));
        for slot in self.slots.borrow().iter() {
            let Some(job) = slot.job.get() else { continue };
            let sent = slot.ex.sent().map(|at| self.offset(at));
            match sent {
                Some(sent) => recorder.record_in_flight(&self.stamps(&job, sent), end),
                None => recorder.record_never_sent(job.intended, job.dispatched, end),
            }
            if let Some(l) = recorder.label(self.picks().label_of(job.target)) {
                l.record_unfinished(job.intended, sent, end);
            }
        }
        let scheduled = self.source.close(&mut recorder, end, self.picks());
        self.idle.borrow_mut().clear();
        WorkerReport {
            recorder,
            end,
            scheduled,
        }
    }
}

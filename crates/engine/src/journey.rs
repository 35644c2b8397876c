//! The journey loop: sessions of dependent steps that arrive on the open-loop schedule.
//!
//! Journey *i* is due at the schedule's time *i*. Its first step is due then; step k+1 is due
//! when step k's answer arrived plus the think time drawn for it, which is when the user would
//! have sent it. Whatever the generator adds after a due time (waiting for a free place under
//! `--max-journeys`, a late wake-up, a connect) is send lag and stays in the step's response
//! time. Each journey has its own keep-alive connection, as a browser does, opened by its first
//! step and counted in that step's time.
//!
//! What a step sends and how its answer is judged belong to the journey file; the loop knows
//! them only through [`Script`] and [`Session`], so it is tested without one.
//!
//! Every journey and every step that fell due is accounted for: a journey completes, fails at a
//! step, is still running at the end (censored, with its lower bound), or never started (it
//! waited for a place until the end; its first step, due with it, was never sent). A step
//! completes, fails, is in flight at the end (censored) or was due and never sent. A step that
//! was not yet due at the end (its journey was thinking) is not counted: nobody would have sent
//! it yet.
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::schedule::Slice;
use sojourn_core::{End, FailureClass, Outcome, Recorder, Stamps};
use tokio::sync::Notify;

use crate::backlog::Backlog;
use crate::sleeper::Sleeper;
use crate::transport::{Connection, Exchange, ExchangeError, Kept, StepRequest, Transport};
use crate::worker::{WorkerConfig, WorkerReport};

/// What the journey loop asks of a journey file.
pub trait Script: Send + Sync + 'static {
    /// How many step labels there are (every step of every journey) and how many journeys.
    fn labels(&self) -> (usize, usize);
    /// Which journey journey `index` of the schedule runs: a pure function of the index.
    fn journey_of(&self, index: u64) -> usize;
    /// The label of `journey`'s first step.
    fn first_step(&self, journey: usize) -> usize;
    /// Journey `index` begins.
    fn begin(&self, index: u64) -> Box<dyn Session>;
}

/// One running journey: its variables, cookies and place in its steps.
pub trait Session {
    /// Renders the next step into `req` and says its label and the think time before it (zero
    /// for the first); `None` when the journey is over.
    fn next(&mut self, req: &mut StepBuf) -> Option<Step>;
    /// The step's answer (its status and what was kept of it), or why there was none. Returns
    /// the step's outcome and whether the journey goes on.
    fn answered(&mut self, answer: Result<(u16, &Kept), FailureClass>) -> (Outcome, bool);
}

/// A step about to be due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub label: usize,
    /// How long the user thinks after the previous answer before sending this step.
    pub think: Duration,
    /// Whether judging its answer reads the body (a check or an extraction from it): only then
    /// is the body kept.
    pub reads_body: bool,
}

/// A rendered step, reused from step to step.
#[derive(Debug, Default, Clone)]
pub struct StepBuf {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl StepBuf {
    fn request(&self) -> StepRequest<'_> {
        StepRequest {
            method: &self.method,
            url: &self.url,
            headers: &self.headers,
            body: &self.body,
        }
    }
}

/// Where a running journey stands, shared between its task and the end of the run.
struct Running {
    due: Duration,
    journey: usize,
    /// It fell due with every place taken and waited for one: its first step's wait is the
    /// places' (counted as waited for a connection), not the generator's lateness.
    waited: bool,
    /// When its first step left, once it has.
    first_sent: Cell<Option<Duration>>,
    /// The step due or in flight: its label and due time, and whether it has been counted as
    /// due (its task woke to it).
    step: Cell<Option<(usize, Duration, bool)>>,
    /// That step's exchange, whose send stamp says whether it is in flight.
    ex: Exchange,
}

impl Running {
    /// When the step in hand left, if it has.
    fn sent(&self, t0: tokio::time::Instant) -> Option<Duration> {
        self.ex.sent().map(|at| at.saturating_duration_since(t0))
    }
}

/// One worker's journeys.
struct Journeys<T: Transport> {
    transport: T,
    cfg: WorkerConfig,
    script: Arc<dyn Script>,
    recorder: RefCell<Recorder>,
    /// The open loop's journeys due and not yet started; `None` for the closed loop.
    backlog: RefCell<Option<Backlog>>,
    /// The closed loop: steps and journeys are timed from their sends, as k6's virtual users
    /// and Locust's users time them, not from when they were due.
    from_send: bool,
    /// A place per journey that may run at once; `None` is free.
    places: RefCell<Vec<Option<Rc<Running>>>>,
    /// A place came free.
    freed: Notify,
    /// Since when (on the schedule's clock) every place has been taken with journeys still due.
    full_since: Cell<Option<Duration>>,
    /// Steps that fell due.
    steps_due: Cell<u64>,
    /// Set once the run has been closed: late finishes must not record twice.
    closed: Cell<bool>,
}

impl<T: Transport> Journeys<T> {
    fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.cfg.t0)
    }

    /// Whether a journey due at `at` waited for a place (every one was taken) rather than for
    /// the generator: then the wait is the places', counted, and not dispatch lag.
    fn waited(&self, at: Duration) -> bool {
        self.full_since.get().is_some_and(|since| at >= since)
    }

    fn free_place(&self) -> Option<usize> {
        self.places.borrow().iter().position(Option::is_none)
    }

    fn counters(&self) -> &crate::progress::WorkerCounters {
        self.cfg.progress.worker(self.cfg.worker)
    }

    /// Records one step that ended at `done`: answered or failed, sent or not; the live
    /// histograms (panel, metrics) see it too.
    fn record_step(&self, label: usize, stamps: Option<Stamps>, due: Duration, outcome: Outcome) {
        if self.closed.get() {
            return;
        }
        let done = self.now();
        if let Some(live) = self.cfg.progress.live() {
            let sent = stamps.map(|s| {
                (
                    done.saturating_sub(s.sent),
                    s.sent.saturating_sub(s.intended),
                )
            });
            // Unsent, even an "ok" is a failure, as the result counts it.
            let failed = stamps.is_none() || !matches!(outcome, Outcome::Ok);
            live.record(
                self.cfg.worker,
                done,
                done.saturating_sub(due),
                sent,
                failed,
            );
        }
        if let Some(rows) = self.cfg.progress.labels() {
            // Timed and classed as the result records it.
            let from = stamps.map_or(due, |s| s.intended);
            let service = stamps.map(|s| done.saturating_sub(s.sent));
            let outcome = match (stamps, outcome) {
                (None, Outcome::Ok) => Outcome::Failed(FailureClass::Io),
                (_, o) => o,
            };
            let response = done.saturating_sub(from);
            rows.step_done(self.cfg.worker, label, response, service, outcome);
        }
        let mut recorder = self.recorder.borrow_mut();
        match stamps {
            Some(s) => {
                recorder.record(&s, done, outcome);
                if let Some(l) = recorder.label(label) {
                    l.record(&s, done, outcome);
                }
            }
            None => {
                let class = match outcome {
                    Outcome::Failed(class) => class,
                    Outcome::Ok => FailureClass::Io,
                };
                recorder.record_unsent_failure(due, due, done, class);
                if let Some(l) = recorder.label(label) {
                    l.record_unsent_failure(due, done, class);
                }
            }
        }
    }

    fn record_journey(&self, r: &Running, done: Duration, outcome: Outcome) {
        if self.closed.get() {
            return;
        }
        let mut recorder = self.recorder.borrow_mut();
        let Some(record) = recorder.journey(r.journey) else {
            return;
        };
        let sent = r.first_sent.get().unwrap_or(done);
        let stamps = match self.from_send {
            true => Stamps::on_time(sent),
            false => Stamps {
                intended: r.due,
                dispatched: r.due,
                sent,
                waited_for_connection: false,
            },
        };
        record.record(&stamps, done, outcome);
        if let Some(rows) = self.cfg.progress.labels() {
            let time = done.saturating_sub(stamps.intended);
            rows.journey_done(self.cfg.worker, r.journey, time, outcome);
        }
    }
}

/// Runs one worker's slice of the journey schedule to its end, drains for one timeout, and
/// accounts for what is left. At most `places` journeys run at once. Must run inside a
/// `LocalSet`.
pub async fn run<T: Transport, S: Sleeper + 'static>(
    transport: T,
    cfg: WorkerConfig,
    slice: Slice,
    schedule_end: Duration,
    script: Arc<dyn Script>,
    places: usize,
    sleeper: impl Fn() -> S + 'static,
) -> WorkerReport {
    let (steps, kinds) = script.labels();
    // The panel's oldest-in-flight reads one cell per place.
    cfg.progress.worker(cfg.worker).track(places.max(1));
    let journeys = Rc::new(Journeys {
        transport,
        recorder: RefCell::new(Recorder::with_journeys(cfg.interval, steps, kinds)),
        cfg,
        script,
        backlog: RefCell::new(Some(Backlog::new(slice))),
        from_send: false,
        places: RefCell::new(vec![None; places.max(1)]),
        freed: Notify::new(),
        full_since: Cell::new(None),
        steps_due: Cell::new(0),
        closed: Cell::new(false),
    });
    let stop = journeys.cfg.t0 + schedule_end + journeys.cfg.timeout;
    let sleeper = Rc::new(sleeper);
    tokio::select! {
        biased;
        _ = journeys.cfg.cancel.cancelled() => {}
        _ = tokio::time::sleep_until(stop) => {}
        _ = start_all(&journeys, &sleeper) => {}
    }
    close(&journeys, journeys.now())
}

/// Starts each journey as it falls due, in a free place, or the moment one frees (FIFO: the
/// oldest due journey takes it); returns when the schedule is used up and every journey ended.
async fn start_all<T: Transport, S: Sleeper + 'static>(
    journeys: &Rc<Journeys<T>>,
    sleeper: &Rc<impl Fn() -> S + 'static>,
) {
    let mut pacer = sleeper();
    loop {
        let oldest = journeys
            .backlog
            .borrow_mut()
            .as_mut()
            .and_then(Backlog::oldest);
        let Some(oldest) = oldest else {
            break;
        };
        // Nothing due yet: the journeys that waited for a place have all started.
        if oldest.at > journeys.now() {
            journeys.full_since.set(None);
        }
        pacer.sleep_until(journeys.cfg.t0 + oldest.at).await;
        let place = loop {
            match journeys.free_place() {
                Some(place) => break place,
                None => {
                    if journeys.full_since.get().is_none() {
                        journeys.full_since.set(Some(oldest.at));
                    }
                    journeys.freed.notified().await
                }
            }
        };
        let due = journeys
            .backlog
            .borrow_mut()
            .as_mut()
            .and_then(|b| b.take_due(journeys.now()))
            .expect("the oldest journey is due");
        let waited = journeys.waited(due.at);
        let running = Rc::new(Running {
            due: due.at,
            journey: journeys.script.journey_of(due.index),
            waited,
            first_sent: Cell::new(None),
            step: Cell::new(None),
            ex: Exchange::default(),
        });
        journeys.places.borrow_mut()[place] = Some(running.clone());
        tokio::task::spawn_local(run_journey(
            journeys.clone(),
            place,
            running,
            due.index,
            sleeper(),
        ));
    }
    while journeys.places.borrow().iter().any(Option::is_some) {
        journeys.freed.notified().await;
    }
}

/// One journey, step by step, on a connection of its own.
async fn run_journey<T: Transport, S: Sleeper>(
    journeys: Rc<Journeys<T>>,
    place: usize,
    running: Rc<Running>,
    index: u64,
    mut sleeper: S,
) {
    let rows = journeys.cfg.progress.labels();
    if let Some(rows) = rows {
        rows.journey_started(journeys.cfg.worker, running.journey);
    }
    let mut session = journeys.script.begin(index);
    let (t0, ex) = (journeys.cfg.t0, &running.ex);
    let mut conn: Option<T::Conn> = None;
    let mut req = StepBuf::default();
    let mut due = running.due;
    let mut outcome = Outcome::Ok;
    while let Some(step) = session.next(&mut req) {
        due += step.think;
        running.step.set(Some((step.label, due, false)));
        ex.begin_own(false, |_| Ok(())).expect("an empty request");
        sleeper.sleep_until(t0 + due).await;
        journeys.steps_due.set(journeys.steps_due.get() + 1);
        running.step.set(Some((step.label, due, true)));
        // A first step that waited for a place was in the generator's hand from its due time:
        // the wait is in its response time and send lag, counted, but not dispatch lag.
        let waited = running.waited && running.first_sent.get().is_none();
        let dispatched = if waited { due } else { journeys.now() };
        let counters = journeys.counters();
        counters.on_carry(place, due);
        counters.on_sent();
        if let Some(rows) = rows {
            rows.step_started(journeys.cfg.worker, step.label);
        }
        let answer = exchange(&journeys, &mut conn, ex, &req, step.reads_body).await;
        let sent = running.sent(t0);
        if running.first_sent.get().is_none() {
            running.first_sent.set(sent);
        }
        let kept = ex.kept();
        let (step_outcome, go_on) = session.answered(answer.map(|status| (status, &*kept)));
        drop(kept);
        let stamps = sent.map(|sent| match journeys.from_send {
            true => Stamps::on_time(sent),
            false => Stamps {
                intended: due,
                dispatched,
                sent,
                waited_for_connection: waited,
            },
        });
        journeys.record_step(step.label, stamps, due, step_outcome);
        counters.on_answer(step_outcome);
        counters.on_free(place);
        running.step.set(None);
        // The next step's think starts when this answer arrived.
        due = journeys.now();
        if let Outcome::Failed(_) = step_outcome {
            outcome = step_outcome;
        }
        if !go_on {
            break;
        }
    }
    journeys.places.borrow_mut()[place] = None;
    journeys.record_journey(&running, journeys.now(), outcome);
    journeys.freed.notify_one();
}

/// Sends the rendered step on the journey's connection, opening it first if need be (and once
/// more if a kept-alive connection was found closed before it answered). Returns the answer's
/// status, or the class of failure; the send stamp is on `ex`.
async fn exchange<T: Transport>(
    journeys: &Journeys<T>,
    conn: &mut Option<T::Conn>,
    ex: &Exchange,
    req: &StepBuf,
    reads_body: bool,
) -> Result<u16, FailureClass> {
    ex.begin_own(reads_body, |out| {
        journeys.transport.encode(&req.request(), out)
    })?;
    let timeout = journeys.cfg.timeout;
    let attempt = async {
        for retry in [false, true] {
            let c = match conn {
                Some(c) => c,
                None => conn.insert(journeys.transport.connect().await?),
            };
            let first = ex.sent();
            let result = c.exchange(ex).await;
            if retry {
                ex.restore_sent(first);
            }
            match result {
                Ok(_) => {
                    if !c.reusable() {
                        *conn = None;
                    }
                    return ex.code().ok_or(FailureClass::Protocol);
                }
                Err(ExchangeError::Unprocessed(class)) if retry => {
                    *conn = None;
                    return Err(class);
                }
                Err(ExchangeError::Unprocessed(_)) => *conn = None,
                Err(ExchangeError::Failed(class)) => {
                    *conn = None;
                    return Err(class);
                }
            }
        }
        unreachable!("the second attempt returns")
    };
    match tokio::time::timeout(timeout, attempt).await {
        Ok(answer) => answer,
        Err(_) => {
            *conn = None;
            Err(FailureClass::Timeout)
        }
    }
}

/// Ends the run at `end`: running journeys are censored (their step in flight censored, a due
/// step not yet sent never sent), due journeys that never got a place never started (their
/// first step never sent), and nothing records after this.
fn close<T: Transport>(journeys: &Journeys<T>, end: Duration) -> WorkerReport {
    journeys.closed.set(true);
    let (steps, kinds) = journeys.script.labels();
    let mut recorder =
        journeys
            .recorder
            .replace(Recorder::with_journeys(journeys.cfg.interval, steps, kinds));
    let mut steps_due = journeys.steps_due.get();
    let t0 = journeys.cfg.t0;
    for r in journeys
        .places
        .borrow_mut()
        .iter_mut()
        .filter_map(Option::take)
    {
        let sent = r.sent(t0);
        if let Some((label, due, counted)) = r.step.get().filter(|&(_, due, _)| due <= end) {
            // Due by the end, though its task may not have woken to it yet.
            steps_due += u64::from(!counted);
            // The closed loop times a step from its send, when it has one.
            let due = if journeys.from_send {
                sent.unwrap_or(due)
            } else {
                due
            };
            unfinished_step(&mut recorder, label, due, sent, due, end);
        }
        let first_sent = r.first_sent.get().or(sent).unwrap_or(r.due);
        if let Some(j) = recorder.journey(r.journey) {
            j.record_unfinished(r.due, Some(first_sent), end);
        }
    }
    let mut backlog = journeys.backlog.borrow_mut();
    let never_started = backlog.as_mut().map(|b| b.take_all_due(end));
    for due in never_started.into_iter().flatten() {
        let journey = journeys.script.journey_of(due.index);
        if let Some(j) = recorder.journey(journey) {
            j.record_unfinished(due.at, None, end);
        }
        let first = journeys.script.first_step(journey);
        // Waiting for a place, the generator had it in hand on time; otherwise it never got to
        // it before the end.
        let dispatched = if journeys.waited(due.at) { due.at } else { end };
        unfinished_step(&mut recorder, first, due.at, None, dispatched, end);
        steps_due += 1;
    }
    WorkerReport {
        recorder,
        end,
        scheduled: steps_due,
    }
}

/// A step due by the end: in flight (sent) or never sent (`dispatched`: when the generator had
/// it in hand, or the end if it never did).
fn unfinished_step(
    recorder: &mut Recorder,
    label: usize,
    due: Duration,
    sent: Option<Duration>,
    dispatched: Duration,
    end: Duration,
) {
    match sent {
        Some(sent) => {
            let stamps = Stamps {
                intended: due,
                dispatched,
                sent,
                waited_for_connection: false,
            };
            recorder.record_in_flight(&stamps, end);
        }
        None => recorder.record_never_sent(due, dispatched, end),
    }
    if let Some(l) = recorder.label(label) {
        l.record_unfinished(due, sent, end);
    }
}

/// The closed journey loop's tickets: which journey index a free user starts next, while the
/// loop's bound lasts. A worker takes every `stride`-th index from `first`, so the workers'
/// journeys are distinct and each index's choices are the file's pure ones.
struct Tickets {
    next: Cell<u64>,
    stride: u64,
    started: Cell<u64>,
    end: End,
}

impl Tickets {
    fn take(&self, now: Duration) -> Option<u64> {
        let open = match self.end {
            End::Count(n) => self.started.get() < n,
            End::After(d) => now < d,
        };
        if !open {
            return None;
        }
        let index = self.next.get();
        self.next.set(index + self.stride);
        self.started.set(self.started.get() + 1);
        Some(index)
    }
}

/// The closed journey loop, as k6's constant virtual users and Locust's users run: `users`
/// users each start a journey, run its steps with their think times, and start the next the
/// moment it ends, while `end` lasts; every step and journey is timed from its send. This
/// worker's journeys are indices `first`, `first + stride`, …. Must run inside a `LocalSet`.
#[allow(clippy::too_many_arguments)]
pub async fn run_closed<T: Transport, S: Sleeper + 'static>(
    transport: T,
    cfg: WorkerConfig,
    script: Arc<dyn Script>,
    users: usize,
    end: End,
    (first, stride): (u64, u64),
    sleeper: impl Fn() -> S + 'static,
) -> WorkerReport {
    let (steps, kinds) = script.labels();
    cfg.progress.worker(cfg.worker).track(users.max(1));
    let journeys = Rc::new(Journeys {
        transport,
        recorder: RefCell::new(Recorder::with_journeys(cfg.interval, steps, kinds)),
        cfg,
        script,
        backlog: RefCell::new(None),
        from_send: true,
        places: RefCell::new(vec![None; users.max(1)]),
        freed: Notify::new(),
        full_since: Cell::new(None),
        steps_due: Cell::new(0),
        closed: Cell::new(false),
    });
    let tickets = Rc::new(Tickets {
        next: Cell::new(first),
        stride: stride.max(1),
        started: Cell::new(0),
        end,
    });
    let sleeper = Rc::new(sleeper);
    // Like the closed request loop: a duration ends one timeout after it; a count only when done.
    let stop = match end {
        End::After(d) => journeys.cfg.t0 + d + journeys.cfg.timeout,
        End::Count(_) => journeys.cfg.t0 + Duration::from_secs(365 * 24 * 3600),
    };
    tokio::time::sleep_until(journeys.cfg.t0).await;
    let users: Vec<_> = (0..users.max(1))
        .map(|user| {
            let (journeys, tickets, sleeper) = (journeys.clone(), tickets.clone(), sleeper.clone());
            tokio::task::spawn_local(async move {
                user_loop(&journeys, user, &tickets, &*sleeper).await
            })
        })
        .collect();
    tokio::select! {
        biased;
        _ = journeys.cfg.cancel.cancelled() => {}
        _ = tokio::time::sleep_until(stop) => {}
        _ = async {
            for user in users {
                let _ = user.await;
            }
        } => {}
    }
    close(&journeys, journeys.now())
}

/// One virtual user: journey after journey, each started the moment the last ended.
async fn user_loop<T: Transport, S: Sleeper>(
    journeys: &Rc<Journeys<T>>,
    user: usize,
    tickets: &Tickets,
    sleeper: &impl Fn() -> S,
) {
    while let Some(index) = tickets.take(journeys.now()) {
        let running = Rc::new(Running {
            due: journeys.now(),
            journey: journeys.script.journey_of(index),
            waited: false,
            first_sent: Cell::new(None),
            step: Cell::new(None),
            ex: Exchange::default(),
        });
        journeys.places.borrow_mut()[user] = Some(running.clone());
        run_journey(journeys.clone(), user, running, index, sleeper()).await;
    }
}

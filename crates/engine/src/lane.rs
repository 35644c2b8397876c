//! One worker thread's share of a run: its connections, its recorder, and the requests it owns
//! that have not finished. Single-threaded by construction (a current-thread runtime), so
//! shared state is `Rc`/`RefCell` and nothing on the recording path takes a lock.
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::{FailureClass, Outcome, Recorder, RequestSample, Schedule, Stamps};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::progress::Progress;
use crate::transport::{Connection, ExchangeError, Transport};

/// A request that has been dispatched and not yet finished.
#[derive(Debug)]
pub struct Track {
    pub intended: Duration,
    pub dispatched: Duration,
    /// Set by the transport when the first byte leaves.
    pub sent: Cell<Option<Instant>>,
    pub waited_for_connection: Cell<bool>,
}

impl Track {
    pub fn new(intended: Duration, dispatched: Duration) -> Rc<Track> {
        Rc::new(Track {
            intended,
            dispatched,
            sent: Cell::new(None),
            waited_for_connection: Cell::new(false),
        })
    }
}

/// Settings every lane needs.
#[derive(Clone)]
pub struct LaneConfig {
    pub t0: Instant,
    pub timeout: Duration,
    pub interval: Duration,
    pub progress: Arc<Progress>,
    pub worker: usize,
    pub cancel: CancellationToken,
    /// Where finished requests' samples go, when per-request samples were asked for.
    pub samples: Option<std::sync::mpsc::Sender<RequestSample>>,
    /// Open loop: the arrival process this lane's sends are tested against.
    pub arrivals: Option<Arrivals>,
}

/// One sender's share of a schedule, as the conformance test sees it.
#[derive(Debug, Clone, Copy)]
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

pub struct Lane<T: Transport> {
    transport: T,
    cfg: LaneConfig,
    idle: RefCell<Vec<T::Conn>>,
    recorder: RefCell<Recorder>,
    pending: RefCell<HashMap<u64, Rc<Track>>>,
    emptied: Notify,
    /// Set once the lane has been censored: late finishes must not record twice.
    closed: Cell<bool>,
    /// Intended time = send time (closed loop).
    from_send: Cell<bool>,
}

/// What a lane hands back when its run is over.
pub struct LaneReport {
    pub recorder: Recorder,
    pub end: Duration,
}

impl<T: Transport> Lane<T> {
    pub fn new(transport: T, cfg: LaneConfig) -> Rc<Self> {
        let recorder = RefCell::new(Recorder::new(cfg.interval));
        Rc::new(Lane {
            transport,
            cfg,
            idle: RefCell::default(),
            recorder,
            pending: RefCell::default(),
            emptied: Notify::new(),
            closed: Cell::new(false),
            from_send: Cell::new(false),
        })
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

    pub fn track(&self, index: u64, track: Rc<Track>) {
        self.pending.borrow_mut().insert(index, track);
    }

    /// Sends the request on an idle connection (or a new one) and waits for its answer.
    pub async fn attempt(&self, track: &Track) -> Outcome {
        let counters = self.cfg.progress.worker(self.cfg.worker);
        counters.on_sent();
        let outcome = match tokio::time::timeout(self.cfg.timeout, self.exchange(track)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Failed(FailureClass::Timeout),
        };
        counters.on_answer(outcome != Outcome::Ok);
        outcome
    }

    async fn exchange(&self, track: &Track) -> Outcome {
        let reused = self.idle.borrow_mut().pop();
        let mut conn = match reused {
            Some(c) => c,
            None => match self.transport.connect().await {
                Ok(c) => c,
                Err(class) => return Outcome::Failed(class),
            },
        };
        self.note_send();
        match conn.exchange(&track.sent).await {
            Ok(outcome) => {
                self.park(conn);
                outcome
            }
            Err(ExchangeError::Stale) => self.retry_fresh(track).await,
            Err(ExchangeError::Failed(class)) => Outcome::Failed(class),
        }
    }

    /// A request is leaving now: one gap for the conformance test. (A retry on a fresh
    /// connection is the same request, so it is not noted again.)
    fn note_send(&self) {
        if let Some(a) = &self.cfg.arrivals {
            let expected = a.expected_by(self.now());
            self.recorder.borrow_mut().record_send_at(expected);
        }
    }

    /// The server had closed an idle keep-alive connection, so the request never reached it.
    /// Send it once more on a fresh connection; its send stamp stays the first attempt's, so
    /// the reconnect counts against the request, not in its favour.
    async fn retry_fresh(&self, track: &Track) -> Outcome {
        let first = track.sent.get();
        let mut conn = match self.transport.connect().await {
            Ok(c) => c,
            Err(class) => return Outcome::Failed(class),
        };
        let outcome = match conn.exchange(&track.sent).await {
            Ok(outcome) => {
                self.park(conn);
                outcome
            }
            Err(_) => Outcome::Failed(FailureClass::Io),
        };
        track.sent.set(first.or(track.sent.get()));
        outcome
    }

    fn park(&self, conn: T::Conn) {
        if conn.reusable() {
            self.idle.borrow_mut().push(conn);
        }
    }

    /// Records a finished request and forgets it.
    pub fn finish(&self, index: u64, track: &Track, outcome: Outcome) {
        if self.closed.get() {
            return;
        }
        let done = self.now();
        let mut recorder = self.recorder.borrow_mut();
        match track.sent.get() {
            Some(sent) => {
                let stamps = self.stamps(track, self.offset(sent));
                recorder.record(&stamps, done, outcome);
                self.sample(
                    stamps.intended,
                    done,
                    done.saturating_sub(stamps.sent),
                    outcome,
                );
            }
            None => {
                let class = match outcome {
                    Outcome::Failed(class) => class,
                    Outcome::Ok => FailureClass::Io,
                };
                recorder.record_unsent_failure(track.intended, track.dispatched, done, class);
                self.sample(track.intended, done, Duration::ZERO, outcome);
            }
        }
        drop(recorder);
        let mut pending = self.pending.borrow_mut();
        pending.remove(&index);
        if pending.is_empty() {
            self.emptied.notify_one();
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
    pub fn measure_from_send(&self) {
        self.from_send.set(true);
    }

    fn stamps(&self, track: &Track, sent: Duration) -> Stamps {
        if self.from_send.get() {
            return Stamps::on_time(sent);
        }
        Stamps {
            intended: track.intended,
            dispatched: track.dispatched,
            sent,
            waited_for_connection: track.waited_for_connection.get(),
        }
    }

    /// Records a request that was due but will never be sent (the run was stopped).
    pub fn never_sent(&self, intended: Duration, end: Duration) {
        self.recorder
            .borrow_mut()
            .record_never_sent(intended, end, end);
    }

    /// Waits until every tracked request has finished, the deadline passes, or the run is
    /// cancelled.
    pub async fn drain(&self, deadline: Instant) {
        loop {
            if self.pending.borrow().is_empty() {
                return;
            }
            tokio::select! {
                _ = self.emptied.notified() => {}
                _ = tokio::time::sleep_until(deadline) => return,
                _ = self.cfg.cancel.cancelled() => return,
            }
        }
    }

    /// Ends the lane at `end`: whatever is still tracked is censored (sent) or never sent.
    pub fn close(&self, end: Duration) -> LaneReport {
        self.closed.set(true);
        let mut recorder = self.recorder.replace(Recorder::new(self.cfg.interval));
        for (_, track) in self.pending.borrow_mut().drain() {
            match track.sent.get() {
                Some(sent) => {
                    recorder.record_in_flight(&self.stamps(&track, self.offset(sent)), end)
                }
                None => recorder.record_never_sent(track.intended, track.dispatched, end),
            }
        }
        self.idle.borrow_mut().clear();
        LaneReport { recorder, end }
    }
}

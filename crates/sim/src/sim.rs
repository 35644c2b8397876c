//! The event loop and the client side: lanes, connection pools, timeouts, the end of the run.
//!
//! A *lane* is what one engine worker thread owns: a slice of the schedule (or a share of the
//! closed loop's connections), a FIFO pool of connections, a stack of idle keep-alive
//! connections and a recorder. The rules are the engine's (`crates/engine/src/{open,closed,
//! lane}.rs`):
//! - open: each request is dispatched at its due time; it takes a free connection or waits FIFO;
//!   after the schedule the run drains until `schedule end + timeout`, then what is in flight is
//!   censored and what never got a connection is counted as never sent;
//! - closed: each connection sends the moment its previous answer arrives, while tickets last;
//!   its intended time is its send time;
//! - journeys (`journey.rs`): an open loop of journeys, each with a place of its own among the
//!   lane's `max_journeys`, and its steps sent on a connection of its own; or a closed loop of
//!   them, the lane's users each starting a journey the moment its last ended;
//! - a timeout ends the exchange `timeout` after the send and drops the connection;
//! - a connection reset before any answer, on a connection that had served before, is retried
//!   once on a fresh connection (it could have been a stale keep-alive); the send stamp stays the
//!   first attempt's.
use std::collections::VecDeque;
use std::iter::Peekable;
use std::time::Duration;

use sojourn_core::schedule::Slice;
use sojourn_core::{nanos, Due, End, FailureClass, Outcome, Recorder, Schedule, Stamps};
use sojourn_scenario::Scenario;

use crate::event::{Key, Kind, Queue, Reply};
use crate::impact::{Answered, Tracker};
use crate::server::{Server, Started};
use crate::table::{Req, Table};
use crate::{Client, JourneyModel, Plan, Simulation, MIN_EXCHANGE};

mod journey;

struct Lane {
    recorder: Recorder,
    /// The pool's size (open, tracking), the number of looping connections (closed) or of
    /// places for journeys.
    limit: usize,
    busy: usize,
    waiting: VecDeque<Key>,
    /// Journeys due and waiting for a place, oldest first.
    journeys_waiting: VecDeque<Due>,
    /// Idle keep-alive connections; every one has served at least one request.
    idle: usize,
    schedule: Option<Peekable<Slice>>,
    /// Closed loop: this lane's bound and how many requests it has started.
    tickets: Option<End>,
    /// Closed journey loop: which journey a free user starts next, while the bound lasts.
    journey_tickets: Option<journey::Tickets>,
    scheduled: u64,
    /// Tracking: past its deadline, it sends nothing more.
    stopped: bool,
}

impl Lane {
    fn finished(&mut self) -> bool {
        let exhausted = self.schedule.as_mut().is_none_or(|s| s.peek().is_none());
        exhausted
            && self.busy == 0
            && (self.waiting.is_empty() || self.stopped)
            && self.journeys_waiting.is_empty()
    }

    /// Closed loop: whether a connection free at `now` may start another request.
    fn take_ticket(&mut self, now: u64) -> bool {
        let open = match self.tickets {
            Some(End::Count(n)) => self.scheduled < n,
            Some(End::After(d)) => now < nanos(d),
            None => false,
        };
        self.scheduled += u64::from(open);
        open
    }
}

pub(crate) struct Sim<'a> {
    plan: &'a Plan,
    events: Queue,
    server: Server<'a>,
    table: Table,
    lanes: Vec<Lane>,
    /// Journeys: what their steps are, and the ones that hold a place.
    model: Option<&'a dyn JourneyModel>,
    journeys: journey::Running,
    /// Closed journeys: steps and journeys are timed from their sends.
    from_send: bool,
    tracker: Tracker<'a>,
    closed: bool,
    timeout: u64,
    out: u64,
    back: u64,
    /// Tracking: slots the client gets round to at or after this are never sent.
    stop_sending: Option<u64>,
    /// The run ends here at the latest (drain deadline, hard stop).
    deadline: Option<u64>,
    now: u64,
}

/// Worker `w`'s even share of `total`, as the engine splits connections and counts.
fn share(total: u64, w: usize, workers: usize) -> u64 {
    let (w, workers) = (w as u64, workers.max(1) as u64);
    total / workers + u64::from(w < total % workers)
}

/// When the schedule stops issuing: its duration, or its last due time for a count.
fn schedule_end(s: &Schedule) -> u64 {
    match s.end {
        End::After(d) => nanos(d),
        End::Count(_) => s.iter().last().map_or(0, |d| nanos(d.at)),
    }
}

fn lane(recorder: Recorder, limit: usize) -> Lane {
    Lane {
        recorder,
        limit: limit.max(1),
        busy: 0,
        waiting: VecDeque::new(),
        journeys_waiting: VecDeque::new(),
        idle: 0,
        schedule: None,
        tickets: None,
        journey_tickets: None,
        scheduled: 0,
        stopped: false,
    }
}

/// The engine's lanes: as many as threads (never more than connections), each with its even
/// share of the connections; `fill` gives lane `w` of `n` its share of the work.
fn split(
    connections: usize,
    threads: usize,
    interval: Duration,
    mut fill: impl FnMut(&mut Lane, usize, usize),
) -> Vec<Lane> {
    let n = threads.clamp(1, connections.max(1));
    (0..n)
        .map(|w| {
            let mut l = lane(
                Recorder::new(interval),
                share(connections as u64, w, n) as usize,
            );
            fill(&mut l, w, n);
            l
        })
        .collect()
}

impl<'a> Sim<'a> {
    pub(crate) fn new(scenario: &'a Scenario, plan: &'a Plan) -> Sim<'a> {
        let rtt = nanos(plan.rtt);
        let timeout = nanos(plan.timeout);
        let mut sim = Sim {
            plan,
            events: Queue::default(),
            server: Server::new(scenario, plan.server_lead),
            table: Table::default(),
            lanes: Vec::new(),
            model: None,
            journeys: journey::Running::default(),
            from_send: matches!(plan.client, Client::ClosedJourneys { .. }),
            tracker: Tracker::new(scenario, Duration::ZERO),
            closed: matches!(plan.client, Client::Closed { .. }),
            timeout,
            out: rtt / 2,
            back: rtt - rtt / 2,
            stop_sending: None,
            deadline: None,
            now: 0,
        };
        sim.build_lanes();
        // Read the scenario's windows for as long as the run is expected to last.
        let horizon = sim.deadline.unwrap_or(timeout);
        sim.tracker.extend_to(horizon);
        sim
    }

    fn build_lanes(&mut self) {
        let (plan, interval) = (self.plan, self.plan.interval);
        match &plan.client {
            Client::Open {
                schedule,
                connections,
                threads,
            } => {
                self.lanes = split(*connections, *threads, interval, |l, w, n| {
                    l.schedule = Some(schedule.slice(w, n).peekable());
                });
                self.deadline = Some(schedule_end(schedule) + self.timeout);
            }
            Client::Closed {
                end,
                connections,
                threads,
            } => {
                self.lanes = split(*connections, *threads, interval, |l, w, n| {
                    l.tickets = Some(match *end {
                        End::Count(total) => End::Count(share(total, w, n)),
                        after => after,
                    });
                });
                if let End::After(d) = end {
                    self.deadline = Some(nanos(*d) + self.timeout);
                }
            }
            Client::Journeys {
                schedule,
                max_journeys,
                threads,
                model,
            } => {
                let (steps, kinds) = model.labels();
                self.lanes = split(*max_journeys, *threads, interval, |l, w, n| {
                    l.recorder = Recorder::with_journeys(interval, steps, kinds);
                    l.schedule = Some(schedule.slice(w, n).peekable());
                });
                self.model = Some(&**model);
                self.deadline = Some(schedule_end(schedule) + self.timeout);
            }
            Client::ClosedJourneys {
                end,
                users,
                threads,
                model,
            } => {
                let (steps, kinds) = model.labels();
                self.lanes = split(*users, *threads, interval, |l, w, n| {
                    l.recorder = Recorder::with_journeys(interval, steps, kinds);
                    let end = match *end {
                        End::Count(total) => End::Count(share(total, w, n)),
                        after => after,
                    };
                    l.journey_tickets = Some(journey::Tickets::new(w, n, end));
                });
                self.model = Some(&**model);
                if let End::After(d) = end {
                    self.deadline = Some(nanos(*d) + self.timeout);
                }
            }
            Client::Tracking { schedule } => self.paced_lanes(schedule, 1),
            Client::Paced {
                schedule,
                connections,
            } => self.paced_lanes(schedule, *connections),
        }
    }

    /// Paced and tracking: one lane of one connection per share of the schedule's slots.
    fn paced_lanes(&mut self, schedule: &Schedule, connections: usize) {
        let n = connections.max(1);
        self.lanes = (0..n)
            .map(|k| {
                let mut l = lane(Recorder::new(self.plan.interval), 1);
                l.schedule = Some(schedule.slice(k, n).peekable());
                l
            })
            .collect();
        if let End::After(d) = schedule.end {
            self.stop_sending = Some(nanos(d));
            self.deadline = Some(nanos(d) + self.timeout);
        }
    }

    /// Runs to the end and hands back what was measured.
    pub(crate) fn run(mut self) -> Simulation {
        self.start();
        let end = self.event_loop();
        self.close(end)
    }

    fn start(&mut self) {
        for l in 0..self.lanes.len() {
            if self.lanes[l].journey_tickets.is_some() {
                self.start_users(l);
            } else if self.closed {
                for _ in 0..self.lanes[l].limit {
                    self.next(l);
                }
            } else if let Some(due) = self.lanes[l].schedule.as_mut().and_then(|s| s.peek()) {
                self.events
                    .push(nanos(due.at), Kind::Due { lane: l as u32 });
            }
        }
    }

    /// Handles events in time order until every lane is done or the deadline passes; returns
    /// the end of the run.
    fn event_loop(&mut self) -> u64 {
        if self.all_finished() {
            return 0;
        }
        while let Some((at, kind)) = self.events.pop() {
            if let Some(deadline) = self.deadline.filter(|&d| at > d) {
                return deadline;
            }
            self.now = at;
            self.handle(kind);
            if self.all_finished() {
                return self.now;
            }
        }
        self.now
    }

    fn all_finished(&mut self) -> bool {
        self.lanes.iter_mut().all(Lane::finished)
    }

    fn handle(&mut self, kind: Kind) {
        match kind {
            Kind::Due { lane } => self.due(lane as usize),
            Kind::Arrive { req, attempt } => self.arrive(req, attempt),
            Kind::Leave {
                req,
                attempt,
                index,
                slot,
                rejected,
            } => self.leave(req, attempt, index, slot, rejected),
            Kind::Answer {
                req,
                attempt,
                reply,
            } => self.answer(req, attempt, reply),
            Kind::Timeout { req } => self.time_out(req),
            Kind::Step { journey } => self.send_step(journey),
        }
    }

    /// Open and tracking: the lane's next request is due now. The following one is scheduled
    /// after this one's events, so an answer arriving at the very instant it is due frees its
    /// connection first (one request every 10 ms on one connection at 10 ms each never waits).
    fn due(&mut self, l: usize) {
        if self.model.is_some() {
            return self.journey_due(l);
        }
        let lane = &mut self.lanes[l];
        let schedule = lane
            .schedule
            .as_mut()
            .expect("only scheduled lanes get Due");
        let due = schedule
            .next()
            .expect("a Due event has a request behind it");
        lane.scheduled += 1;
        let key = self.table.insert(Req::new(l as u32, nanos(due.at)));
        if lane.busy < lane.limit {
            self.begin(key, false);
        } else {
            lane.waiting.push_back(key);
        }
        let schedule = self.lanes[l].schedule.as_mut().expect("checked above");
        if let Some(next) = schedule.peek() {
            self.events
                .push(nanos(next.at), Kind::Due { lane: l as u32 });
        }
    }

    /// A request takes a connection (an idle one if any) and is sent now.
    fn begin(&mut self, key: Key, waited: bool) {
        let req = self.table.get_mut(key).expect("begun requests are live");
        let lane = &mut self.lanes[req.lane as usize];
        lane.busy += 1;
        req.reused = lane.idle > 0;
        lane.idle -= usize::from(req.reused);
        req.waited = waited;
        self.launch(key);
    }

    /// Sends a request's first attempt now, and gives up on it `timeout` later.
    fn launch(&mut self, key: Key) {
        let now = self.now;
        let req = self.table.get_mut(key).expect("launched requests are live");
        req.sent = Some(now);
        req.attempt_sent = now;
        self.events
            .push_in_order(now.saturating_add(self.timeout), Kind::Timeout { req: key });
        self.send(key, 0);
    }

    fn send(&mut self, key: Key, attempt: u8) {
        if self.out == 0 {
            self.arrive(key, attempt);
        } else {
            let at = self.now + self.out;
            self.events.push(at, Kind::Arrive { req: key, attempt });
        }
    }

    fn arrive(&mut self, key: Key, attempt: u8) {
        if let Some(s) = self.server.arrive(key, attempt, self.now, &mut self.events) {
            self.started(s);
        }
    }

    /// An attempt started service: note a slowed one, and tell its request what will happen.
    fn started(&mut self, s: Started) {
        if s.served.slow {
            let start = self.server.scenario_time(self.now);
            self.tracker.slow_started(start);
        }
        if let Some(req) = self.table.get_mut(s.req).filter(|r| r.attempt == s.attempt) {
            req.served = Some(s.served);
        }
    }

    fn leave(&mut self, key: Key, attempt: u8, index: u64, slot: bool, rejected: bool) {
        let (reply, next) = self
            .server
            .leave(index, slot, rejected, self.now, &mut self.events);
        if let Some(s) = next {
            self.started(s);
        }
        let Some(req) = self.table.get(key).filter(|r| r.attempt == attempt) else {
            return; // its client gave up: nobody hears the answer
        };
        let at = (self.now + self.back).max(req.attempt_sent + nanos(MIN_EXCHANGE));
        if at == self.now {
            self.answer(key, attempt, reply);
        } else {
            let kind = Kind::Answer {
                req: key,
                attempt,
                reply,
            };
            self.events.push(at, kind);
        }
    }

    fn answer(&mut self, key: Key, attempt: u8, reply: Reply) {
        let now = self.now;
        let Some(req) = self.table.get_mut(key).filter(|r| r.attempt == attempt) else {
            return;
        };
        match reply {
            Reply::Reset if req.reused && attempt == 0 => {
                req.attempt = 1;
                req.reused = false;
                req.served = None;
                req.attempt_sent = now;
                self.send(key, 1);
            }
            Reply::Reset => self.finish(key, Outcome::Failed(FailureClass::Io), false),
            Reply::Status(status) => self.finish(key, Outcome::of_status(status), true),
        }
    }

    fn time_out(&mut self, key: Key) {
        if self.table.get(key).is_some() {
            self.finish(key, Outcome::Failed(FailureClass::Timeout), false);
        }
    }

    /// Records a request, frees its connection (keeping it if it can be reused) and lets the
    /// lane go on.
    fn finish(&mut self, key: Key, outcome: Outcome, keep: bool) {
        let req = self.table.remove(key).expect("finished requests are live");
        self.blame(&req);
        if let Some(j) = req.journey {
            return self.step_done(j, &req, outcome, keep);
        }
        let l = req.lane as usize;
        let lane = &mut self.lanes[l];
        lane.recorder
            .record(&stamps(&req), Duration::from_nanos(self.now), outcome);
        lane.idle += usize::from(keep);
        lane.busy -= 1;
        self.next(l);
    }

    fn blame(&mut self, req: &Req) {
        let Some(served) = req.served else { return };
        self.tracker.answered(&Answered {
            intended: self.server.scenario_time(req.intended),
            response: self.now - req.intended,
            rtt: self.out + self.back,
            served,
        });
    }

    /// A connection of lane `l` is free: a closed loop starts its next request, an open one
    /// serves the oldest waiting request.
    fn next(&mut self, l: usize) {
        let now = self.now;
        let lane = &mut self.lanes[l];
        if self.closed {
            if lane.take_ticket(now) {
                let key = self.table.insert(Req::new(l as u32, now));
                self.begin(key, false);
            }
            return;
        }
        if lane.waiting.is_empty() {
            return;
        }
        if self.stop_sending.is_some_and(|d| now >= d) {
            lane.stopped = true;
            return;
        }
        let key = lane.waiting.pop_front().expect("checked non-empty");
        self.begin(key, true);
    }

    /// Ends the run at `end`: what is in flight is censored, what was never sent is counted.
    fn close(mut self, end: u64) -> Simulation {
        self.close_journeys(end);
        for req in self.table.drain().collect::<Vec<_>>() {
            let recorder = &mut self.lanes[req.lane as usize].recorder;
            let at = Duration::from_nanos(end);
            match req.sent {
                Some(_) => recorder.record_in_flight(&stamps(&req), at),
                None => {
                    let intended = Duration::from_nanos(req.intended);
                    recorder.record_never_sent(intended, intended, at)
                }
            }
        }
        let scheduled = self.lanes.iter().map(|l| l.scheduled).sum();
        let server = self.server.stats;
        let (srv, end_scenario) = (&self.server, self.server.scenario_time(end));
        let impact = self
            .tracker
            .finish(end_scenario, server.slow, |s| srv.run_time(s));
        let measurements = Recorder::merge_all(self.lanes.into_iter().map(|l| l.recorder));
        Simulation {
            measurements,
            scheduled,
            elapsed: Duration::from_nanos(end),
            impact,
            server,
        }
    }
}

fn stamps(req: &Req) -> Stamps {
    let d = Duration::from_nanos;
    Stamps {
        intended: d(req.intended),
        dispatched: d(req.intended),
        sent: d(req.sent.unwrap_or(req.intended)),
        waited_for_connection: req.waited,
    }
}

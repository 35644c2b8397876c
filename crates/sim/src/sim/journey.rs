//! The journey client, with the engine's rules (`crates/engine/src/journey.rs`):
//! - journey *i* is due at the schedule's time *i*; it takes a free place in its lane, or waits
//!   FIFO for one, timed from its due time;
//! - step 1 is due with its journey and sent when the journey gets its place; step k+1 is due
//!   when step k's answer arrived plus its think time, and sent then (each journey has a
//!   connection of its own, so nothing else stands between a step and its send);
//! - a failed step ends its journey, failed with that step's class, unless the model says it
//!   goes on; a journey that went on after a failure still ends failed, with its last class;
//! - at the end, a running journey is censored with its step in flight (a step due by the end and
//!   not yet sent is never sent), a journey still waiting never started (its first step, due
//!   with it, never sent), and a step not yet due (its journey was thinking) is not counted.
//!
//! The closed journey loop (`run_closed` there) keeps the step rules but has no schedule: each
//! of a lane's users starts a journey at once and the next the moment its last ended, taking
//! the lane's next ticket; steps and journeys are timed from their sends.
use std::time::Duration;

use sojourn_core::{nanos, Due, End, Outcome, Recorder, Stamps};

use super::Sim;
use crate::event::{Key, Kind};
use crate::table::Req;
use crate::ModelStep;

/// One journey that holds a place.
struct Journey {
    lane: u32,
    /// Which of the model's journeys it runs.
    kind: usize,
    /// When it was due, in ns from the start of the run.
    due: u64,
    /// When its first step left.
    first_sent: Option<u64>,
    steps: Vec<ModelStep>,
    /// The step in hand: in flight (`in_flight`), or due at `step_due` (the user thinks).
    step: usize,
    step_due: u64,
    in_flight: Option<Key>,
    /// Its connection has served and was kept alive: a reset on it before any answer is
    /// retried once, as on a pooled keep-alive connection.
    conn: bool,
    /// `Ok`, or the class of its last failed step.
    outcome: Outcome,
}

/// The journeys that hold a place, by handle. Memory is bounded by the places, not the run.
#[derive(Default)]
pub(crate) struct Running {
    slots: Vec<Option<Journey>>,
    free: Vec<u32>,
    /// Step lists of journeys that ended, reused.
    spare: Vec<Vec<ModelStep>>,
}

impl Running {
    fn insert(&mut self, j: Journey) -> u32 {
        match self.free.pop() {
            Some(h) => {
                self.slots[h as usize] = Some(j);
                h
            }
            None => {
                self.slots.push(Some(j));
                (self.slots.len() - 1) as u32
            }
        }
    }

    fn get_mut(&mut self, h: u32) -> &mut Journey {
        self.slots[h as usize]
            .as_mut()
            .expect("events name live journeys")
    }

    fn remove(&mut self, h: u32) -> Journey {
        let j = self.slots[h as usize]
            .take()
            .expect("events name live journeys");
        self.free.push(h);
        j
    }
}

/// The closed journey loop's tickets in one lane, as the engine's `Tickets`: lane `w` of `W`
/// takes indices w, w + W, … while its bound lasts, so the lanes' journeys are distinct and
/// each index's steps are the model's pure ones.
pub(super) struct Tickets {
    next: u64,
    stride: u64,
    started: u64,
    end: End,
}

impl Tickets {
    pub(super) fn new(lane: usize, lanes: usize, end: End) -> Tickets {
        Tickets {
            next: lane as u64,
            stride: lanes.max(1) as u64,
            started: 0,
            end,
        }
    }

    /// The index of the journey a user free at `now` starts, if the bound allows one.
    fn take(&mut self, now: u64) -> Option<u64> {
        let open = match self.end {
            End::Count(n) => self.started < n,
            End::After(d) => now < nanos(d),
        };
        if !open {
            return None;
        }
        let index = self.next;
        self.next += self.stride;
        self.started += 1;
        Some(index)
    }
}

fn d(ns: u64) -> Duration {
    Duration::from_nanos(ns)
}

/// A step's stamps: handed over and sent at once, on a connection nobody else waits for. The
/// closed loop (`from_send`) times it from that send, whenever it was due.
fn step_stamps(req: &Req, from_send: bool) -> Stamps {
    let sent = d(req.sent.unwrap_or(req.intended));
    if from_send {
        return Stamps::on_time(sent);
    }
    Stamps {
        intended: d(req.intended),
        dispatched: sent,
        sent,
        waited_for_connection: false,
    }
}

impl Sim<'_> {
    /// The lane's next journey is due now: it starts in a free place, or waits for one. The
    /// following one is scheduled after this one's events, as for requests.
    pub(super) fn journey_due(&mut self, l: usize) {
        let schedule = self.lanes[l]
            .schedule
            .as_mut()
            .expect("only scheduled lanes get Due");
        let due = schedule
            .next()
            .expect("a Due event has a journey behind it");
        if let Some(next) = schedule.peek() {
            self.events
                .push(nanos(next.at), Kind::Due { lane: l as u32 });
        }
        let lane = &mut self.lanes[l];
        if lane.busy < lane.limit {
            self.start_journey(l, due);
        } else {
            lane.journeys_waiting.push_back(due);
        }
    }

    /// Closed journeys: each of lane `l`'s users takes a ticket in turn and starts its journey.
    pub(super) fn start_users(&mut self, l: usize) {
        for _ in 0..self.lanes[l].limit {
            if !self.next_journey(l) {
                return;
            }
        }
    }

    /// Closed journeys: a user of lane `l` is free now; it starts the lane's next journey if
    /// the bound allows one. Returns whether it did.
    fn next_journey(&mut self, l: usize) -> bool {
        let now = self.now;
        let tickets = self.lanes[l]
            .journey_tickets
            .as_mut()
            .expect("only closed journey lanes hold tickets");
        let Some(index) = tickets.take(now) else {
            return false;
        };
        let due = Due { index, at: d(now) };
        self.start_journey(l, due);
        true
    }

    /// Journey `due` takes a place in lane `l` now and sends its first step.
    fn start_journey(&mut self, l: usize, due: Due) {
        let model = self.model.expect("journey lanes have a model");
        self.lanes[l].busy += 1;
        let mut steps = self.journeys.spare.pop().unwrap_or_default();
        model.steps(due.index, &mut steps);
        let at = nanos(due.at);
        let h = self.journeys.insert(Journey {
            lane: l as u32,
            kind: model.journey_of(due.index),
            due: at,
            first_sent: None,
            steps,
            step: 0,
            step_due: at,
            in_flight: None,
            conn: false,
            outcome: Outcome::Ok,
        });
        if self.journeys.get_mut(h).steps.is_empty() {
            self.end_journey(h);
        } else {
            self.send_step(h);
        }
    }

    /// Journey `h`'s step in hand is due: it leaves now.
    pub(super) fn send_step(&mut self, h: u32) {
        let now = self.now;
        let j = self.journeys.get_mut(h);
        let mut req = Req::new(j.lane, j.step_due);
        req.journey = Some(h);
        req.reused = j.conn;
        j.first_sent.get_or_insert(now);
        let key = self.table.insert(req);
        j.in_flight = Some(key);
        self.lanes[j.lane as usize].scheduled += 1;
        self.launch(key);
    }

    /// Journey `h`'s step in flight ended now with `outcome` (`keep`: its connection lives on).
    /// The journey thinks and goes on, or ends.
    pub(super) fn step_done(&mut self, h: u32, req: &Req, outcome: Outcome, keep: bool) {
        let now = self.now;
        let j = self.journeys.get_mut(h);
        let step = j.steps[j.step];
        let recorder = &mut self.lanes[j.lane as usize].recorder;
        let stamps = step_stamps(req, self.from_send);
        recorder.record(&stamps, d(now), outcome);
        if let Some(label) = recorder.label(step.label) {
            label.record(&stamps, d(now), outcome);
        }
        j.in_flight = None;
        j.conn = keep;
        if let Outcome::Failed(_) = outcome {
            j.outcome = outcome;
        }
        j.step += 1;
        let go_on = outcome == Outcome::Ok || step.continue_on_error;
        match j.steps.get(j.step).filter(|_| go_on) {
            Some(next) => {
                // The user thinks from the moment the answer arrived.
                j.step_due = now + nanos(next.think);
                self.events.push(j.step_due, Kind::Step { journey: h });
            }
            None => self.end_journey(h),
        }
    }

    /// Journey `h` is over now: it is recorded, and its place goes to the oldest waiting one
    /// (closed journeys: its user starts the next).
    fn end_journey(&mut self, h: u32) {
        let now = self.now;
        let j = self.journeys.remove(h);
        let l = j.lane as usize;
        let lane = &mut self.lanes[l];
        if let Some(record) = lane.recorder.journey(j.kind) {
            let sent = d(j.first_sent.unwrap_or(now));
            let stamps = match self.from_send {
                true => Stamps::on_time(sent),
                false => Stamps {
                    intended: d(j.due),
                    dispatched: d(j.due),
                    sent,
                    waited_for_connection: false,
                },
            };
            record.record(&stamps, d(now), j.outcome);
        }
        lane.busy -= 1;
        self.journeys.spare.push(j.steps);
        if lane.journey_tickets.is_some() {
            self.next_journey(l);
        } else if let Some(next) = lane.journeys_waiting.pop_front() {
            self.start_journey(l, next);
        }
    }

    /// The run ends at `end`: running journeys are censored with their step in flight (or due
    /// and never sent); waiting ones never started, and their first step was never sent.
    pub(super) fn close_journeys(&mut self, end: u64) {
        let Some(model) = self.model else { return };
        let running = std::mem::take(&mut self.journeys.slots);
        for j in running.into_iter().flatten() {
            self.censor(&j, end);
        }
        let (at, mut steps) = (d(end), Vec::new());
        for lane in &mut self.lanes {
            for due in std::mem::take(&mut lane.journeys_waiting) {
                let kind = model.journey_of(due.index);
                if let Some(record) = lane.recorder.journey(kind) {
                    record.record_unfinished(due.at, None, at);
                }
                model.steps(due.index, &mut steps);
                if let Some(first) = steps.first() {
                    lane.scheduled += 1;
                    never_sent(&mut lane.recorder, first.label, nanos(due.at), end, end);
                }
            }
        }
    }

    /// A journey running at `end`, and its step in hand if that was due.
    fn censor(&mut self, j: &Journey, end: u64) {
        let (lane, at) = (&mut self.lanes[j.lane as usize], d(end));
        let label = j.steps[j.step].label;
        if let Some(req) = j.in_flight.and_then(|k| self.table.remove(k)) {
            let stamps = step_stamps(&req, self.from_send);
            lane.recorder.record_in_flight(&stamps, at);
            if let Some(l) = lane.recorder.label(label) {
                l.record_unfinished(stamps.intended, Some(stamps.sent), at);
            }
        } else if j.step_due <= end {
            // Due, and not sent yet; a step not yet due is nobody's loss.
            lane.scheduled += 1;
            never_sent(&mut lane.recorder, label, j.step_due, j.step_due, end);
        }
        let first_sent = d(j.first_sent.unwrap_or(j.due));
        if let Some(record) = lane.recorder.journey(j.kind) {
            record.record_unfinished(d(j.due), Some(first_sent), at);
        }
    }
}

/// A step due at `due` and never sent (`dispatched`: when the generator had it in hand, or the
/// end if it never did).
fn never_sent(recorder: &mut Recorder, label: usize, due: u64, dispatched: u64, end: u64) {
    recorder.record_never_sent(d(due), d(dispatched), d(end));
    if let Some(l) = recorder.label(label) {
        l.record_unfinished(d(due), None, d(end));
    }
}

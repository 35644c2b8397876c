//! `sojourn sim`: a scenario × client model in virtual time — the ground truth that `sojourn run`
//! is validated against.
//!
//! A discrete-event simulation in integer nanoseconds. The server makes the decisions
//! `sojourn serve` makes (the same [`Scenario`] functions: arrival-order index, FIFO admission
//! with worker limit and cap, service time, the gate), and the clients behave like the engine's
//! (the same [`Schedule`]s, the same FIFO connection pool, the same drain-then-censor ending, the
//! same [`Recorder`](sojourn_core::Recorder)s), so a simulation produces a [`RunResult`] that is
//! indistinguishable in shape from a real run's. Nothing is random that the scenario or the
//! schedule did not seed: the same inputs give the same result, bit for bit.
//!
//! Six client models ([`Client`]):
//! - **open**: requests due on a schedule (constant, Poisson, ramp), each dispatched at its due
//!   time into a FIFO pool of at most N connections, measured from when it was due;
//! - **closed**: N connections, each looping send → wait → record, until a duration or a count;
//! - **tracking**: the single-threaded client of seeds 000 and 004 — one request at a time, each
//!   measured from its slot on the schedule. Its response time is the seeds' "sojourn", its
//!   service time their "latency", its send lag their "queue wait";
//! - **paced**: N tracking clients, each on its share of the schedule's slots — the paced closed
//!   loop of hey `-q`, bombardier `-r` and fortio `-qps`, as `sojourn run --closed --rate` runs it;
//! - **journeys**: sessions of dependent steps due on a schedule, at most N running at once, as
//!   the engine's journey loop runs them. A due journey takes a free place or waits FIFO, timed
//!   from its due time; step 1 is due with its journey and step k+1 when step k's answer arrived
//!   plus its think time; each journey has a connection of its own, so a step is sent at its due
//!   time (step 1: when its journey got its place). A failed step ends its journey unless the
//!   model says it goes on. What each journey's steps are comes from a [`JourneyModel`], whatever
//!   file describes them. At the end, running journeys are censored (their step in flight with
//!   them), journeys still waiting never started (their first step never sent), and steps not yet
//!   due (the journey was thinking) are not counted;
//! - **closed journeys**: N virtual users, each starting its next journey the moment its last
//!   ended, as k6's constant VUs and Locust's users run them (`sojourn run --journey --closed`).
//!   Every step and journey is timed from its send, so a user that waits out a stall sends
//!   nothing meanwhile and the stall is in at most one of its steps.
//!
//! What the simulation leaves out, on purpose: the network (unless [`Plan::rtt`] adds a fixed
//! round trip), timer error, and CPU. Every difference between a real run and its simulation is
//! therefore the real system's doing; `docs/validation.md` records how large it is.
#![forbid(unsafe_code)]

mod event;
mod impact;
mod journey;
mod result;
mod server;
mod sim;
mod table;

use std::sync::Arc;
use std::time::Duration;

use sojourn_core::{End, Measurements, Mode, RunResult, Schedule};
use sojourn_scenario::Scenario;

pub use impact::{Impact, SlowImpact, StallImpact};
pub use journey::{JourneyModel, ModelStep};
pub use result::{build_result, config};
pub use server::ServerStats;

/// A simulated exchange never takes less than this, so a closed loop against an instant answer
/// (a 0 ms law, or a full queue's immediate 503) still moves forward in time. It is the order of
/// a loopback round trip and far below any built-in's service time.
pub const MIN_EXCHANGE: Duration = Duration::from_micros(10);

/// The client model that drives the simulated server.
#[derive(Debug, Clone, PartialEq)]
pub enum Client {
    /// Requests due on `schedule`, dispatched at their due time into a FIFO pool of at most
    /// `connections` connections (use a large number for "unlimited"). As in the engine, the
    /// schedule is split over `threads` lanes, each with its own slice and its own share of the
    /// pool, so a Poisson schedule gives the same arrivals as `sojourn run --threads N`.
    Open {
        schedule: Schedule,
        connections: usize,
        threads: usize,
    },
    /// `connections` connections each looping send → wait → record. `End::After(d)`: stop
    /// starting requests at `d` and wait for the last answers; `End::Count(n)`: `n` requests in
    /// all (split over the threads as the engine splits them).
    Closed {
        end: End,
        connections: usize,
        threads: usize,
    },
    /// One request at a time on one connection, each measured from its slot on `schedule`. A
    /// request is sent at its slot, or when the previous answer arrives if that is later. With
    /// `End::After(d)` it stops when it gets round to a slot at or after `d`, as the seeds'
    /// `while now < deadline` loops do; the slots it never sent are counted as never sent.
    Tracking { schedule: Schedule },
    /// A paced closed loop: `connections` connections, connection k owning share k of the
    /// schedule's slots (as the engine's `sojourn run --closed --rate` splits them). Each is the
    /// tracking client on its share: a request leaves at its slot, or when the connection's
    /// previous answer arrives if that is later; with `End::After(d)` a connection that gets
    /// round to a slot at or after `d` stops, and its slots never sent are counted.
    Paced {
        schedule: Schedule,
        connections: usize,
    },
    /// Journeys due on `schedule` (journey *i* at the schedule's time *i*), at most
    /// `max_journeys` running at once, split over `threads` lanes as the open loop is, each lane
    /// with its even share of the places. `model` says what each journey's steps are. Models
    /// compare by identity.
    Journeys {
        schedule: Schedule,
        max_journeys: usize,
        threads: usize,
        model: Arc<dyn JourneyModel>,
    },
    /// The closed journey loop: `users` virtual users, split over `threads` lanes as the engine
    /// splits the closed loop's connections. Lane w of W takes journey indices w, w + W, … in
    /// the order its users start them: each user at the start, then each the moment its last
    /// journey ended. Step 1 leaves at once, step k+1 its think time after step k's answer, and
    /// every step and journey is timed from its send. `End::After(d)`: no journey starts at or
    /// after `d`, and the run stops at `d + timeout`, censoring what runs then; `End::Count(n)`:
    /// `n` journeys in all, split over the lanes as the engine splits a count. Models compare by
    /// identity.
    ClosedJourneys {
        end: End,
        users: usize,
        threads: usize,
        model: Arc<dyn JourneyModel>,
    },
}

impl Client {
    pub fn mode(&self) -> Mode {
        match self {
            // An open loop of journeys.
            Client::Open { .. } | Client::Journeys { .. } => Mode::Open,
            Client::Closed { .. } | Client::ClosedJourneys { .. } => Mode::Closed,
            Client::Tracking { .. } => Mode::Tracking,
            Client::Paced { .. } => Mode::Paced,
        }
    }
}

/// A validated simulation: the client and the run's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub client: Client,
    /// How long the client waits for one answer; also how long an open loop drains after its
    /// schedule ends (as in the engine).
    pub timeout: Duration,
    /// Width of the timeline's intervals.
    pub interval: Duration,
    /// A fixed round trip added to every exchange (network plus client overhead): half before
    /// the server sees the request, half after it answers. Zero by default: the exact model.
    pub rtt: Duration,
    /// For a scenario whose clock starts at server start: how long the server had been up when
    /// the run began. Ignored when the clock starts at the first request (the default).
    pub server_lead: Duration,
}

impl Plan {
    /// The client with the CLI's defaults: 10 s timeout, 1 s intervals, no round trip.
    pub fn new(client: Client) -> Plan {
        Plan {
            client,
            timeout: Duration::from_secs(10),
            interval: Duration::from_secs(1),
            rtt: Duration::ZERO,
            server_lead: Duration::ZERO,
        }
    }
}

/// What a simulation produced.
#[derive(Debug, Clone)]
pub struct Simulation {
    pub measurements: Measurements,
    /// Requests the client scheduled (open, tracking) or started (closed); for journeys, the
    /// steps that fell due (for closed journeys, every step sent: nothing waits there).
    pub scheduled: u64,
    /// From the start of the run to the end of its drain.
    pub elapsed: Duration,
    /// Which stalls delayed how many of the client's requests.
    pub impact: Impact,
    pub server: ServerStats,
}

/// Runs `plan` against `scenario` in virtual time.
pub fn simulate(scenario: &Scenario, plan: &Plan) -> Simulation {
    sim::Sim::new(scenario, plan).run()
}

/// Simulates and builds the result document, labelled `label`.
pub fn run(scenario: &Scenario, plan: &Plan, label: &str) -> (RunResult, Simulation) {
    let sim = simulate(scenario, plan);
    (build_result(scenario, plan, &sim, label), sim)
}

//! The scenario language: a model of a misbehaving server, shared by `sojourn serve` (wall clock)
//! and `sojourn sim` (virtual time).
//!
//! A scenario is a service-time [`Law`], any number of [`Fault`]s on a clock, a worker limit and
//! a seed. Every decision is a pure function of the request index (0-based, in order of arrival)
//! and the time since the scenario clock started, with no clock or runtime inside, so a server
//! and a simulator that ask the same questions get the same answers:
//!
//! - [`Scenario::service_time`]: how long request `i` is in service if it starts at `t`;
//! - [`Scenario::gate_open_at`]: when a request that reaches the gate at `t` may leave;
//! - [`Scenario::status`] and [`Scenario::resets`]: what it is answered;
//! - [`Scenario::admission`]: how many may be in service at once, and how many may wait.
//!
//! A request's life: it arrives, waits FIFO for admission (if limited), is in service for
//! `service_time`, then reaches the gate; if a stall or pause holds the gate closed it waits
//! until the gate opens, with every other waiter. So
//! `departure = gate_open_at(start + service_time(index, start))` — see [`Scenario::departure`].
#![forbid(unsafe_code)]

mod builtin;
mod error;
mod fault;
mod law;
mod parse;
mod seed;
pub mod truth;

use std::fmt;
use std::path::Path;
use std::time::Duration;

pub use builtin::{builtins, BuiltinInfo, Override, ParamInfo};
pub use error::ScenarioError;
pub use fault::{Cap, Fault, Slowdown, Window, WindowKind, MAX_PAUSE_WINDOWS};
pub use law::{Law, Percent, MAX_SERVICE};
pub use parse::human;

/// The seed of every scenario that does not name one.
pub const DEFAULT_SEED: u64 = 1;

/// When the scenario clock (the zero of `at`, `first`, `start`, `end`) starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockOrigin {
    /// When the server starts listening.
    ServerStart,
    /// When the first request arrives at the system under test. The default: a load test that
    /// starts a minute after the server still sees `hiccup` 30 s into its run.
    FirstRequest,
}

impl ClockOrigin {
    /// The name in TOML and `--set`.
    pub fn name(self) -> &'static str {
        match self {
            ClockOrigin::ServerStart => "server-start",
            ClockOrigin::FirstRequest => "first-request",
        }
    }
}

/// How many requests may be in service at once, and how many may queue (FIFO) for a slot.
/// The worker limit and a `cap` fault are the same mechanism: the tighter limit wins, and the
/// cap's queue bound (if any) applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    pub limit: u32,
    /// `None`: the queue is unbounded. `Some(q)`: a request arriving to find `q` waiting is
    /// answered 503 at once.
    pub queue: Option<u32>,
}

/// A validated scenario. Build it with [`Scenario::resolve`] (a built-in name or a file),
/// [`Scenario::builtin`], [`Scenario::from_toml_str`] or [`Scenario::new`].
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    name: String,
    law: Law,
    faults: Vec<Fault>,
    workers: Option<u32>,
    clock: ClockOrigin,
    seed: u64,
}

/// Everything a scenario is made of, for building one in code. [`Scenario::new`] validates it.
#[derive(Clone, Debug, PartialEq)]
pub struct Parts {
    pub name: String,
    pub law: Law,
    pub faults: Vec<Fault>,
    /// At most this many requests in service at once (FIFO queue in front); `None`: unlimited.
    pub workers: Option<u32>,
    pub clock: ClockOrigin,
    pub seed: u64,
}

impl Parts {
    /// A scenario with this law, no faults, unlimited workers, clock from the first request.
    pub fn new(name: impl Into<String>, law: Law) -> Parts {
        Parts {
            name: name.into(),
            law,
            faults: Vec::new(),
            workers: None,
            clock: ClockOrigin::FirstRequest,
            seed: DEFAULT_SEED,
        }
    }
}

impl Scenario {
    /// Validates `parts` with the same rules as a TOML file; errors name fields as TOML would.
    pub fn new(parts: Parts) -> Result<Scenario, ScenarioError> {
        parse::from_table(&parse::to_table(&parts), &parts.name)
    }

    /// A built-in name (see [`builtins`]) with `--set` overrides, or else the path of a TOML
    /// file (which takes no overrides).
    pub fn resolve(name_or_path: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        if builtin::find(name_or_path).is_some() {
            return Scenario::builtin(name_or_path, overrides);
        }
        let path = Path::new(name_or_path);
        if !path.is_file() {
            return Err(builtin::unknown(name_or_path));
        }
        if let Some(o) = overrides.first() {
            return Err(ScenarioError::OverrideOnFile {
                given: o.to_string(),
            });
        }
        Scenario::from_file(path)
    }

    /// A built-in scenario with its parameters overridden (`hiccup.at=5s`).
    pub fn builtin(name: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
        builtin::build(name, overrides)
    }

    /// Parses a scenario file. Its name is the file's `name` field, or else the file stem.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_owned(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy())
            .unwrap_or_default();
        Scenario::from_toml_str(&text, &stem)
    }

    /// Parses the TOML form; `default_name` is used when the text has no `name` field.
    pub fn from_toml_str(text: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
        let table: toml::Table = text.parse()?;
        parse::from_table(&table, default_name)
    }

    /// The TOML form; [`Scenario::from_toml_str`] reads it back to an equal scenario.
    pub fn to_toml(&self) -> String {
        toml::to_string(&parse::to_table(&self.parts()))
            .expect("a table of plain values serialises")
    }

    /// The parts this scenario was built from.
    pub fn parts(&self) -> Parts {
        Parts {
            name: self.name.clone(),
            law: self.law.clone(),
            faults: self.faults.clone(),
            workers: self.workers,
            clock: self.clock,
            seed: self.seed,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The same scenario with every fault on its clock moved `by` later: a stall at 2 s
    /// happens at 2 s + `by`. For a tool that measures only after a lead-in of its own (wrk2's
    /// calibration), so the fault falls where it measures. Faults counted by request index are
    /// not on the clock and do not move.
    pub fn delayed(&self, by: Duration) -> Scenario {
        let mut delayed = self.clone();
        for fault in &mut delayed.faults {
            match fault {
                Fault::Stall { at, .. } => *at += by,
                Fault::Pause { first, .. } => *first += by,
                Fault::Ramp { start, end, .. } => {
                    *start += by;
                    *end += by;
                }
                Fault::EveryNth { .. }
                | Fault::SlowFraction { .. }
                | Fault::Cap(_)
                | Fault::Errors { .. }
                | Fault::Reset { .. } => {}
            }
        }
        delayed
    }

    pub fn law(&self) -> &Law {
        &self.law
    }

    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// The worker limit: requests in service at once, FIFO queue in front. `None`: unlimited.
    pub fn workers(&self) -> Option<u32> {
        self.workers
    }

    /// The `cap` fault, if any (validation allows at most one).
    pub fn cap(&self) -> Option<Cap> {
        self.faults.iter().find_map(|f| match f {
            Fault::Cap(c) => Some(*c),
            _ => None,
        })
    }

    /// The admission limit that workers and cap together impose; `None` when unlimited.
    pub fn admission(&self) -> Option<Admission> {
        let cap = self.cap();
        let limit = match (self.workers, cap) {
            (None, None) => return None,
            (Some(w), None) => w,
            (None, Some(c)) => c.limit,
            (Some(w), Some(c)) => w.min(c.limit),
        };
        Some(Admission {
            limit,
            queue: cap.and_then(|c| c.queue),
        })
    }

    pub fn clock(&self) -> ClockOrigin {
        self.clock
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The law alone, no faults: what `/healthy` answers after.
    pub fn baseline(&self, index: u64) -> Duration {
        self.law.sample(self.seed, index)
    }

    /// How long request `index` is in service when it starts at `at` on the scenario clock:
    /// the law, scaled by any ramp at `at`, then every-nth and slow-fraction in list order.
    /// The gate (stalls, pauses) is not included: see [`Scenario::gate_open_at`].
    pub fn service_time(&self, index: u64, at: Duration) -> Duration {
        let factor: f64 = self.faults.iter().map(|f| f.ramp_factor(at)).product();
        let mut d = self.baseline(index);
        if factor != 1.0 {
            d = law::scale(d, factor);
        }
        for (pos, fault) in self.faults.iter().enumerate() {
            match *fault {
                Fault::EveryNth { n, slow } if (index + 1) % n == 0 => d = slow.apply(d),
                Fault::SlowFraction {
                    percent,
                    slow,
                    seed,
                } if self.picks(percent, seed, pos, index) => d = slow.apply(d),
                _ => {}
            }
        }
        d.min(MAX_SERVICE)
    }

    /// When a request that reaches the gate at `t` may leave: `t` itself unless a stall or
    /// pause holds the gate closed at `t`, in which case the end of that closure — following
    /// on through any closures that overlap or abut it.
    pub fn gate_open_at(&self, mut t: Duration) -> Duration {
        // Validation keeps pauses from covering all time, so the chain ends; the bound is a
        // belt for the braces.
        for _ in 0..100_000 {
            let next = self.faults.iter().find_map(|f| f.gate_closed_until(t));
            match next {
                Some(end) => t = end,
                None => break,
            }
        }
        t
    }

    /// When request `index`, admitted to service at `start`, leaves:
    /// `gate_open_at(start + service_time(index, start))`.
    pub fn departure(&self, index: u64, start: Duration) -> Duration {
        self.gate_open_at(start + self.service_time(index, start))
    }

    /// The status request `index` is answered with: the first `errors` fault that picks it, else
    /// 200. (A request that [`Scenario::resets`] gets no answer at all.)
    pub fn status(&self, index: u64) -> u16 {
        self.faults
            .iter()
            .enumerate()
            .find_map(|(pos, f)| match *f {
                Fault::Errors {
                    percent,
                    status,
                    seed,
                } if self.picks(percent, seed, pos, index) => Some(status),
                _ => None,
            })
            .unwrap_or(200)
    }

    /// Whether request `index` has its connection dropped instead of an answer.
    pub fn resets(&self, index: u64) -> bool {
        self.faults.iter().enumerate().any(|(pos, f)| match *f {
            Fault::Reset { percent, seed } => self.picks(percent, seed, pos, index),
            _ => false,
        })
    }

    /// Stall, pause and ramp windows that begin before `horizon`, in time order, for reports
    /// to shade; at most [`MAX_PAUSE_WINDOWS`] of each pause's.
    pub fn windows(&self, horizon: Duration) -> Vec<Window> {
        let mut out = Vec::new();
        for f in &self.faults {
            f.windows(horizon, &mut out);
        }
        out.sort_by_key(|w| (w.start, w.end));
        out
    }

    fn picks(&self, percent: Percent, seed: Option<u64>, pos: usize, index: u64) -> bool {
        percent.picks(seed.unwrap_or(self.seed), seed::Stream(pos as u64), index)
    }
}

/// One line: name, law, faults, workers, clock, seed. What `sojourn serve` logs at start.
impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: service {}", self.name, self.law)?;
        for fault in &self.faults {
            write!(f, "; {fault}")?;
        }
        match self.workers {
            Some(1) => write!(f, "; 1 worker, FIFO")?,
            Some(w) => write!(f, "; {w} workers, FIFO")?,
            None => write!(f, "; unlimited workers")?,
        }
        let clock = match self.clock {
            ClockOrigin::ServerStart => "server start",
            ClockOrigin::FirstRequest => "first request",
        };
        write!(f, "; clock from {clock}; seed {}", self.seed)
    }
}

/// Serialises as the TOML form (durations as strings like `"10ms"`), so a result file can store
/// the exact scenario and [`Scenario::from_toml_str`] can rebuild it.
impl serde::Serialize for Scenario {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        parse::to_table(&self.parts()).serialize(s)
    }
}

/// Reads what [`Serialize`](serde::Serialize) wrote (the TOML form's tree, from JSON or any
/// self-describing format), with the same validation and field-naming errors as a file.
impl<'de> serde::Deserialize<'de> for Scenario {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let table = toml::Table::deserialize(d)?;
        parse::from_table(&table, "scenario").map_err(serde::de::Error::custom)
    }
}

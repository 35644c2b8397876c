//! The built-in scenarios: the seeds' pathologies, each with named parameters that `--set`
//! overrides (`hiccup.at=5s`).
//!
//! Parameters are kept as strings in a table and read with the same field reader as a TOML
//! file, so `--set hiccup.at=soon` fails with the same message a file would give.
use std::fmt;
use std::str::FromStr;

use toml::{Table, Value};

use crate::fault::{Cap, Fault, Slowdown};
use crate::law::Law;
use crate::parse::{self, human, Fields};
use crate::{ClockOrigin, Parts, Scenario, ScenarioError, DEFAULT_SEED};

/// One parameter of a built-in and its default, as `--set` would write it.
#[derive(Clone, Copy, Debug)]
pub struct ParamInfo {
    pub name: &'static str,
    pub default: &'static str,
    pub help: &'static str,
}

/// A built-in scenario: its name, what it models, which seed it comes from, its parameters.
#[derive(Clone, Copy, Debug)]
pub struct BuiltinInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub source: &'static str,
    pub params: &'static [ParamInfo],
    build: fn(&mut Fields) -> Result<Parts, ScenarioError>,
}

const fn p(name: &'static str, default: &'static str, help: &'static str) -> ParamInfo {
    ParamInfo {
        name,
        default,
        help,
    }
}

const SEED: ParamInfo = p("seed", "1", "seed for every random choice");
const CLOCK: ParamInfo = p(
    "clock",
    "first-request",
    "when the clock starts: first-request or server-start",
);
const UNLIMITED: ParamInfo = p(
    "workers",
    "unlimited",
    "requests in service at once (FIFO queue in front)",
);
const ONE_WORKER: ParamInfo = p(
    "workers",
    "1",
    "requests in service at once (FIFO queue in front)",
);
const BASELINE_10: ParamInfo = p("baseline", "10ms", "service time of every request");

static BUILTINS: &[BuiltinInfo] = &[
    BuiltinInfo {
        name: "healthy",
        summary: "fixed baseline, unlimited concurrency: the control",
        source: "seed 001, scenario 01",
        params: &[BASELINE_10, UNLIMITED, CLOCK, SEED],
        build: healthy,
    },
    BuiltinInfo {
        name: "hiccup",
        summary: "one stall of the gate: requests reaching it wait, all released together",
        source: "seed 001, scenario 02",
        params: &[
            BASELINE_10,
            p("at", "30s", "when the stall starts"),
            p("duration", "1s", "how long the gate stays closed"),
            UNLIMITED,
            CLOCK,
            SEED,
        ],
        build: hiccup,
    },
    BuiltinInfo {
        name: "ramp",
        summary: "the baseline rises linearly between two times, then stays",
        source: "seed 001, scenario 03",
        params: &[
            p("from", "10ms", "baseline before start"),
            p("to", "100ms", "baseline from end on"),
            p("start", "20s", "when the ramp starts"),
            p("end", "50s", "when it reaches `to`"),
            UNLIMITED,
            CLOCK,
            SEED,
        ],
        build: ramp,
    },
    BuiltinInfo {
        name: "gc-pauses",
        summary: "a short gate stall at a fixed period",
        source: "seed 001, scenario 04",
        params: &[
            BASELINE_10,
            p("every", "10s", "period of the pauses"),
            p("duration", "200ms", "length of each pause"),
            p(
                "first",
                "5s",
                "start of the first pause (six fall inside a 60 s run)",
            ),
            UNLIMITED,
            CLOCK,
            SEED,
        ],
        build: gc_pauses,
    },
    BuiltinInfo {
        name: "saturation",
        summary:
            "a concurrency cap with a FIFO queue; non-binding at 1000 req/s x 10 ms by default",
        source: "seed 001, scenario 05",
        params: &[
            BASELINE_10,
            p(
                "cap",
                "50",
                "requests in service at once; 5 makes it bind at 1000 req/s",
            ),
            p(
                "queue",
                "unbounded",
                "waiting requests allowed; one more is answered 503",
            ),
            UNLIMITED,
            CLOCK,
            SEED,
        ],
        build: saturation,
    },
    BuiltinInfo {
        name: "every-nth",
        summary: "one worker, FIFO; every n-th request (counting from 1) takes longer",
        source: "seed 000",
        params: &[
            p("baseline", "1ms", "service time of the other requests"),
            p("n", "500", "every n-th request is slow"),
            p("slow", "200ms", "service time of the slow ones"),
            ONE_WORKER,
            CLOCK,
            SEED,
        ],
        build: every_nth,
    },
    BuiltinInfo {
        name: "bimodal",
        summary: "one worker, FIFO; a seeded share of requests is slow (capacity about 34.5 req/s)",
        source: "seed 004",
        params: &[
            p("fast", "20ms", "service time of most requests"),
            p("slow", "200ms", "service time of the slow ones"),
            p("percent", "5", "share of slow requests, seeded"),
            ONE_WORKER,
            CLOCK,
            SEED,
        ],
        build: bimodal,
    },
    BuiltinInfo {
        name: "spike",
        summary: "one long stall a few seconds in",
        source: "seed 004, spike test",
        params: &[
            p("baseline", "20ms", "service time of every request"),
            p("at", "5s", "when the stall starts"),
            p("duration", "2s", "how long the gate stays closed"),
            UNLIMITED,
            CLOCK,
            SEED,
        ],
        build: spike,
    },
];

/// Every built-in, in the order DESIGN §3 lists them.
pub fn builtins() -> &'static [BuiltinInfo] {
    BUILTINS
}

pub(crate) fn find(name: &str) -> Option<&'static BuiltinInfo> {
    BUILTINS.iter().find(|b| b.name == name)
}

fn names() -> String {
    BUILTINS
        .iter()
        .map(|b| b.name)
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn unknown(name: &str) -> ScenarioError {
    ScenarioError::UnknownScenario {
        name: name.to_owned(),
        builtins: names(),
    }
}

/// A `--set NAME.PARAM=VALUE` override of a built-in's parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub scenario: String,
    pub param: String,
    pub value: String,
}

impl FromStr for Override {
    type Err = ScenarioError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ScenarioError::BadOverride {
            given: s.to_owned(),
        };
        let (key, value) = s.split_once('=').ok_or_else(bad)?;
        let (scenario, param) = key.trim().split_once('.').ok_or_else(bad)?;
        if scenario.is_empty() || param.is_empty() {
            return Err(bad());
        }
        Ok(Override {
            scenario: scenario.to_owned(),
            param: param.to_owned(),
            value: value.trim().to_owned(),
        })
    }
}

impl fmt::Display for Override {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}={}", self.scenario, self.param, self.value)
    }
}

/// Builds built-in `name` from its defaults with `overrides` applied.
pub(crate) fn build(name: &str, overrides: &[Override]) -> Result<Scenario, ScenarioError> {
    let info = find(name).ok_or_else(|| unknown(name))?;
    let mut table = Table::new();
    for param in info.params {
        table.insert(param.name.into(), Value::String(param.default.into()));
    }
    for o in overrides {
        if o.scenario != info.name || !table.contains_key(&o.param) {
            return Err(ScenarioError::UnknownField {
                path: format!("{}.{}", o.scenario, o.param),
                accepted: accepted(info),
            });
        }
        table.insert(o.param.clone(), Value::String(o.value.clone()));
    }
    let mut fields = Fields::new(info.name, &table);
    let parts = (info.build)(&mut fields)?;
    fields.finish()?;
    Scenario::new(parts)
}

fn accepted(info: &BuiltinInfo) -> String {
    let list: Vec<String> = info
        .params
        .iter()
        .map(|p| format!("{}.{}", info.name, p.name))
        .collect();
    list.join(", ")
}

/// The parameters every built-in has: workers, clock, seed.
fn common(
    f: &mut Fields,
    name: &str,
    law: Law,
    faults: Vec<Fault>,
) -> Result<Parts, ScenarioError> {
    Ok(Parts {
        name: name.to_owned(),
        law,
        faults,
        workers: f.workers()?.flatten(),
        clock: f.clock()?.unwrap_or(ClockOrigin::FirstRequest),
        seed: f.seed()?.unwrap_or(DEFAULT_SEED),
    })
}

/// A gate stall from parameters `at` and `duration`.
fn stall(f: &mut Fields) -> Result<Fault, ScenarioError> {
    Ok(Fault::Stall {
        at: f.req_duration("at")?,
        duration: f.positive("duration")?,
    })
}

fn healthy(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Fixed(f.req_duration("baseline")?);
    common(f, "healthy", law, Vec::new())
}

fn hiccup(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Fixed(f.req_duration("baseline")?);
    let faults = vec![stall(f)?];
    common(f, "hiccup", law, faults)
}

fn spike(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Fixed(f.req_duration("baseline")?);
    let faults = vec![stall(f)?];
    common(f, "spike", law, faults)
}

/// The ramp is a scale on the baseline, so `from → to` becomes `fixed(from) × (to / from)`.
fn ramp(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let from = f.positive("from")?;
    let to = f.positive("to")?;
    let start = f.req_duration("start")?;
    let end = f.req_duration("end")?;
    if end <= start {
        let expected = format!("a duration after ramp.start ({})", human(start));
        return Err(f.invalid("end", expected, format!("{:?}", human(end))));
    }
    // In nanoseconds, so 100ms / 10ms is exactly 10 rather than 10.000000000000002.
    let scale = to.as_nanos() as f64 / from.as_nanos() as f64;
    let faults = vec![Fault::Ramp { start, end, scale }];
    common(f, "ramp", Law::Fixed(from), faults)
}

fn gc_pauses(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Fixed(f.req_duration("baseline")?);
    let every = f.positive("every")?;
    let duration = f.positive("duration")?;
    if duration >= every {
        let expected = format!("a duration shorter than gc-pauses.every ({})", human(every));
        return Err(f.invalid("duration", expected, format!("{:?}", human(duration))));
    }
    let first = f.req_duration("first")?;
    let faults = vec![Fault::Pause {
        every,
        duration,
        first,
    }];
    common(f, "gc-pauses", law, faults)
}

fn saturation(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Fixed(f.req_duration("baseline")?);
    let expected = "a whole number of at least 1, like 5";
    let limit = f.whole("cap", 1..=u32::MAX as u64, expected)?;
    let limit = limit.ok_or_else(|| f.missing("cap", expected))? as u32;
    let queue = parse::queue_bound(f)?;
    let faults = vec![Fault::Cap(Cap { limit, queue })];
    common(f, "saturation", law, faults)
}

fn every_nth(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Fixed(f.req_duration("baseline")?);
    let expected = "a whole number of at least 1, like 500";
    let n = f
        .whole("n", 1..=u64::MAX, expected)?
        .ok_or_else(|| f.missing("n", expected))?;
    let slow = Slowdown::Takes(f.req_duration("slow")?);
    common(f, "every-nth", law, vec![Fault::EveryNth { n, slow }])
}

fn bimodal(f: &mut Fields) -> Result<Parts, ScenarioError> {
    let law = Law::Bimodal {
        fast: f.req_duration("fast")?,
        slow: f.req_duration("slow")?,
        slow_percent: f.percent("percent")?,
    };
    common(f, "bimodal", law, Vec::new())
}

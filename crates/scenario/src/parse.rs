//! The TOML form, both ways. Parsing walks the table by hand rather than through serde so each
//! error can name its field (`faults[1].every`) and the form that field accepts.
use std::time::Duration;

use toml::{Table, Value};

use crate::fault::{Cap, Fault, Slowdown};
use crate::law::{Law, Percent};
use crate::{ClockOrigin, Parts, Scenario, ScenarioError, DEFAULT_SEED};

pub(crate) const DURATION: &str = "a duration like \"10s\" or \"200ms\"";
/// The longest duration a scenario takes (humantime's 100 years): far beyond any run, and short
/// enough that clock arithmetic (`at + duration`, a slowdown added to the baseline) cannot
/// overflow a `Duration`.
pub(crate) const LONGEST: Duration = Duration::from_secs(100 * 31_557_600);
const POSITIVE: &str = "a duration above zero, like \"10s\" or \"200ms\"";
const PERCENT: &str = "a percentage from 0 to 100, like 5 or 0.5";
const SEED: &str = "a whole number from 0 to 9223372036854775807";
const WORKERS: &str = "a whole number of at least 1, or \"unlimited\"";
const CLOCK: &str = "\"first-request\" or \"server-start\"";
const LAWS: &[&str] = &["fixed", "uniform", "exponential", "lognormal", "bimodal"];
const FAULTS: &[&str] = &[
    "stall",
    "pause",
    "ramp",
    "every-nth",
    "slow-fraction",
    "cap",
    "errors",
    "reset",
];

/// A duration as the TOML form writes it: `10ms`, `1s 500ms`, `0s`.
pub fn human(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// One TOML table being read, with its path for error messages. Every key the parser asks
/// about is remembered, so [`Fields::finish`] can name the accepted keys when it finds a stray.
pub(crate) struct Fields<'a> {
    path: String,
    table: &'a Table,
    asked: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    /// `prefix` is the path of the table itself: empty for a file's root, the scenario name
    /// for built-in parameters.
    pub(crate) fn new(prefix: &str, table: &'a Table) -> Self {
        Fields {
            path: prefix.to_owned(),
            table,
            asked: Vec::new(),
        }
    }

    pub(crate) fn path_of(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.asked.push(key);
        self.table.get(key)
    }

    fn bad(&self, key: &str, expected: &str, got: &Value) -> ScenarioError {
        ScenarioError::field(self.path_of(key), expected, show(got))
    }

    pub(crate) fn missing(&self, key: &str, expected: &str) -> ScenarioError {
        ScenarioError::Missing {
            path: self.path_of(key),
            expected: expected.to_owned(),
        }
    }

    /// An error about a value already read, e.g. a cross-field check.
    pub(crate) fn invalid(
        &self,
        key: &str,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> ScenarioError {
        ScenarioError::field(self.path_of(key), expected, got)
    }

    pub(crate) fn duration(
        &mut self,
        key: &'static str,
    ) -> Result<Option<Duration>, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        match v.as_str().map(|s| humantime::parse_duration(s.trim())) {
            Some(Ok(d)) if d <= LONGEST => Ok(Some(d)),
            Some(Ok(_)) => {
                let expected = format!("{DURATION}, at most {}", human(LONGEST));
                Err(self.bad(key, &expected, v))
            }
            _ => Err(self.bad(key, DURATION, v)),
        }
    }

    pub(crate) fn req_duration(&mut self, key: &'static str) -> Result<Duration, ScenarioError> {
        self.duration(key)?
            .ok_or_else(|| self.missing(key, DURATION))
    }

    /// A required duration that must be above zero.
    pub(crate) fn positive(&mut self, key: &'static str) -> Result<Duration, ScenarioError> {
        let d = self
            .duration(key)?
            .ok_or_else(|| self.missing(key, POSITIVE))?;
        if d.is_zero() {
            return Err(self.invalid(key, POSITIVE, format!("{:?}", human(d))));
        }
        Ok(d)
    }

    /// A whole number in `range`. Strings of digits are accepted too, since `--set` values
    /// arrive as strings.
    pub(crate) fn whole(
        &mut self,
        key: &'static str,
        range: std::ops::RangeInclusive<u64>,
        expected: &str,
    ) -> Result<Option<u64>, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let n = match v {
            Value::Integer(i) => u64::try_from(*i).ok(),
            Value::String(s) => s.trim().parse::<u64>().ok(),
            _ => None,
        };
        match n {
            Some(n) if range.contains(&n) => Ok(Some(n)),
            _ => Err(self.bad(key, expected, v)),
        }
    }

    pub(crate) fn float(
        &mut self,
        key: &'static str,
        expected: &str,
    ) -> Result<Option<f64>, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let x = match v {
            Value::Float(x) => Some(*x),
            Value::Integer(i) => Some(*i as f64),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(x) if x.is_finite() => Ok(Some(x)),
            _ => Err(self.bad(key, expected, v)),
        }
    }

    /// A percentage, as a number or a string like `"5%"`.
    pub(crate) fn percent(&mut self, key: &'static str) -> Result<Percent, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Err(self.missing(key, PERCENT));
        };
        let x = match v {
            Value::Float(x) => Some(*x),
            Value::Integer(i) => Some(*i as f64),
            Value::String(s) => s.trim().trim_end_matches('%').trim().parse::<f64>().ok(),
            _ => None,
        };
        x.and_then(Percent::new)
            .ok_or_else(|| self.bad(key, PERCENT, v))
    }

    pub(crate) fn string(
        &mut self,
        key: &'static str,
        expected: &str,
    ) -> Result<Option<&'a str>, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        v.as_str()
            .map(Some)
            .ok_or_else(|| self.bad(key, expected, v))
    }

    /// A string field that must be one of `accepted`.
    pub(crate) fn one_of(
        &mut self,
        key: &'static str,
        accepted: &[&'static str],
    ) -> Result<&'static str, ScenarioError> {
        let expected = format!("one of {}", accepted.join(", "));
        let Some(v) = self.get(key) else {
            return Err(self.missing(key, &expected));
        };
        let s = v.as_str().unwrap_or_default();
        accepted
            .iter()
            .find(|a| **a == s)
            .copied()
            .ok_or_else(|| self.bad(key, &expected, v))
    }

    pub(crate) fn seed(&mut self) -> Result<Option<u64>, ScenarioError> {
        self.whole("seed", 0..=i64::MAX as u64, SEED)
    }

    pub(crate) fn workers(&mut self) -> Result<Option<Option<u32>>, ScenarioError> {
        let Some(v) = self.get("workers") else {
            return Ok(None);
        };
        if matches!(v.as_str().map(str::trim), Some("unlimited" | "none")) {
            return Ok(Some(None));
        }
        self.asked.pop();
        let n = self.whole("workers", 1..=u32::MAX as u64, WORKERS)?;
        Ok(n.map(|n| Some(n as u32)))
    }

    pub(crate) fn clock(&mut self) -> Result<Option<ClockOrigin>, ScenarioError> {
        let Some(v) = self.get("clock") else {
            return Ok(None);
        };
        match v.as_str().map(str::trim) {
            Some("first-request" | "first") => Ok(Some(ClockOrigin::FirstRequest)),
            Some("server-start" | "start") => Ok(Some(ClockOrigin::ServerStart)),
            _ => Err(self.bad("clock", CLOCK, v)),
        }
    }

    fn table(&mut self, key: &'static str, expected: &str) -> Result<Fields<'a>, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Err(self.missing(key, expected));
        };
        match v {
            Value::Table(t) => Ok(Fields::new(&self.path_of(key), t)),
            _ => Err(self.bad(key, expected, v)),
        }
    }

    fn tables(&mut self, key: &'static str) -> Result<Vec<Fields<'a>>, ScenarioError> {
        let Some(v) = self.get(key) else {
            return Ok(Vec::new());
        };
        let expected = "an array of tables, written [[faults]]";
        let Value::Array(items) = v else {
            return Err(self.bad(key, expected, v));
        };
        let path = self.path_of(key);
        items
            .iter()
            .enumerate()
            .map(|(i, item)| match item {
                Value::Table(t) => Ok(Fields::new(&format!("{path}[{i}]"), t)),
                other => Err(ScenarioError::field(
                    format!("{path}[{i}]"),
                    expected,
                    show(other),
                )),
            })
            .collect()
    }

    /// Fails on the first key nobody asked about, listing the keys that were.
    pub(crate) fn finish(self) -> Result<(), ScenarioError> {
        let mut keys: Vec<&String> = self.table.keys().collect();
        keys.sort();
        match keys.into_iter().find(|k| !self.asked.contains(&k.as_str())) {
            None => Ok(()),
            Some(stray) => Err(ScenarioError::UnknownField {
                path: self.path_of(stray),
                accepted: dedup(&self.asked).join(", "),
            }),
        }
    }
}

fn dedup(keys: &[&'static str]) -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for k in keys {
        if !out.contains(k) {
            out.push(k);
        }
    }
    out
}

/// A TOML value as the user wrote it: strings quoted, numbers bare.
fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Table(_) => "a table".to_owned(),
        other => other.to_string(),
    }
}

/// Reads and validates the whole TOML form.
pub(crate) fn from_table(table: &Table, default_name: &str) -> Result<Scenario, ScenarioError> {
    let mut top = Fields::new("", table);
    let name = top
        .string("name", "a string")?
        .unwrap_or(default_name)
        .to_owned();
    let seed = top.seed()?.unwrap_or(DEFAULT_SEED);
    let workers = top.workers()?.flatten();
    let clock = top.clock()?.unwrap_or(ClockOrigin::FirstRequest);
    let law_expected = "a table like [law] kind = \"fixed\", value = \"10ms\"";
    let mut law_fields = top.table("law", law_expected)?;
    let law = law_from(&mut law_fields)?;
    law_fields.finish()?;
    let mut faults = Vec::new();
    for mut f in top.tables("faults")? {
        faults.push(fault_from(&mut f)?);
        f.finish()?;
    }
    top.finish()?;
    check_faults(&faults)?;
    Ok(Scenario {
        name,
        law,
        faults,
        workers,
        clock,
        seed,
    })
}

fn law_from(f: &mut Fields) -> Result<Law, ScenarioError> {
    Ok(match f.one_of("kind", LAWS)? {
        "fixed" => Law::Fixed(f.req_duration("value")?),
        "uniform" => {
            let min = f.req_duration("min")?;
            let max = f.req_duration("max")?;
            if max < min {
                let expected = format!("a duration no less than min ({})", human(min));
                return Err(f.invalid("max", expected, format!("{:?}", human(max))));
            }
            Law::Uniform { min, max }
        }
        "exponential" => Law::Exponential {
            mean: f.positive("mean")?,
        },
        "lognormal" => {
            let median = f.positive("median")?;
            let expected = "a number from 0 to 10, like 0.5";
            let sigma = f
                .float("sigma", expected)?
                .ok_or_else(|| f.missing("sigma", expected))?;
            if !(0.0..=10.0).contains(&sigma) {
                return Err(f.invalid("sigma", expected, sigma.to_string()));
            }
            Law::Lognormal { median, sigma }
        }
        _ => Law::Bimodal {
            fast: f.req_duration("fast")?,
            slow: f.req_duration("slow")?,
            slow_percent: f.percent("slow_percent")?,
        },
    })
}

fn fault_from(f: &mut Fields) -> Result<Fault, ScenarioError> {
    Ok(match f.one_of("kind", FAULTS)? {
        "stall" => Fault::Stall {
            at: f.req_duration("at")?,
            duration: f.positive("duration")?,
        },
        "pause" => pause_from(f)?,
        "ramp" => ramp_from(f)?,
        "every-nth" => {
            let n = f.whole("n", 1..=u64::MAX, "a whole number of at least 1, like 500")?;
            let n = n.ok_or_else(|| f.missing("n", "a whole number of at least 1, like 500"))?;
            Fault::EveryNth {
                n,
                slow: slowdown_from(f)?,
            }
        }
        "slow-fraction" => Fault::SlowFraction {
            percent: f.percent("percent")?,
            slow: slowdown_from(f)?,
            seed: f.seed()?,
        },
        "cap" => Fault::Cap(cap_from(f)?),
        "errors" => {
            let expected = "an HTTP status from 200 to 599, like 500";
            let status = f.whole("status", 200..=599, expected)?;
            Fault::Errors {
                percent: f.percent("percent")?,
                status: status.ok_or_else(|| f.missing("status", expected))? as u16,
                seed: f.seed()?,
            }
        }
        _ => Fault::Reset {
            percent: f.percent("percent")?,
            seed: f.seed()?,
        },
    })
}

fn pause_from(f: &mut Fields) -> Result<Fault, ScenarioError> {
    let every = f.positive("every")?;
    let duration = f.positive("duration")?;
    if duration >= every {
        let expected = format!("a duration shorter than every ({})", human(every));
        return Err(f.invalid("duration", expected, format!("{:?}", human(duration))));
    }
    let first = f.duration("first")?.unwrap_or(every);
    Ok(Fault::Pause {
        every,
        duration,
        first,
    })
}

fn ramp_from(f: &mut Fields) -> Result<Fault, ScenarioError> {
    let start = f.req_duration("start")?;
    let end = f.req_duration("end")?;
    if end <= start {
        let expected = format!("a duration after start ({})", human(start));
        return Err(f.invalid("end", expected, format!("{:?}", human(end))));
    }
    let expected = "a factor above 0, like 10 (baseline x10 at end) or 0.5";
    let scale = f
        .float("scale", expected)?
        .ok_or_else(|| f.missing("scale", expected))?;
    if scale <= 0.0 {
        return Err(f.invalid("scale", expected, scale.to_string()));
    }
    Ok(Fault::Ramp { start, end, scale })
}

fn slowdown_from(f: &mut Fields) -> Result<Slowdown, ScenarioError> {
    match (f.duration("takes")?, f.duration("adds")?) {
        (Some(d), None) => Ok(Slowdown::Takes(d)),
        (None, Some(d)) => Ok(Slowdown::Adds(d)),
        (None, None) => Err(f.missing(
            "takes",
            "a duration like \"200ms\" (or adds = \"190ms\" for extra time)",
        )),
        (Some(_), Some(d)) => Err(f.invalid(
            "adds",
            "only one of takes and adds",
            format!("{:?}", human(d)),
        )),
    }
}

fn cap_from(f: &mut Fields) -> Result<Cap, ScenarioError> {
    let expected = "a whole number of at least 1, like 5";
    let limit = f.whole("limit", 1..=u32::MAX as u64, expected)?;
    let limit = limit.ok_or_else(|| f.missing("limit", expected))? as u32;
    Ok(Cap {
        limit,
        queue: queue_bound(f)?,
    })
}

/// A queue bound: a whole number, or `"unbounded"` (the default).
pub(crate) fn queue_bound(f: &mut Fields) -> Result<Option<u32>, ScenarioError> {
    let expected = "a whole number of waiting requests (0 or more), or \"unbounded\"";
    if let Some(Value::String(s)) = f.table.get("queue") {
        if s.trim() == "unbounded" {
            f.asked.push("queue");
            return Ok(None);
        }
    }
    Ok(f.whole("queue", 0..=u32::MAX as u64, expected)?
        .map(|q| q as u32))
}

/// Rules across faults: one cap at most, and pauses that leave the gate open some of the time
/// (otherwise `gate_open_at` would never find an opening).
fn check_faults(faults: &[Fault]) -> Result<(), ScenarioError> {
    let caps: Vec<usize> = (0..faults.len())
        .filter(|&i| matches!(faults[i], Fault::Cap(_)))
        .collect();
    if let Some(&second) = caps.get(1) {
        return Err(ScenarioError::field(
            format!("faults[{second}].kind"),
            "at most one cap fault (combine them into one limit)",
            "a second \"cap\"",
        ));
    }
    let mut duty = 0.0;
    for (i, f) in faults.iter().enumerate() {
        if let Fault::Pause {
            every, duration, ..
        } = f
        {
            duty += duration.as_secs_f64() / every.as_secs_f64();
            if duty >= 1.0 {
                return Err(ScenarioError::field(
                    format!("faults[{i}].duration"),
                    "pauses that together close the gate less than 100% of the time",
                    format!(
                        "{:?}, bringing the total to {:.0}%",
                        human(*duration),
                        duty * 100.0
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The TOML form of `parts`, in the shape [`from_table`] reads.
pub(crate) fn to_table(parts: &Parts) -> Table {
    let mut t = Table::new();
    t.insert("name".into(), parts.name.clone().into());
    t.insert("seed".into(), seed_value(parts.seed));
    if let Some(w) = parts.workers {
        t.insert("workers".into(), i64::from(w).into());
    }
    t.insert("clock".into(), parts.clock.name().into());
    t.insert("law".into(), Value::Table(law_table(&parts.law)));
    let faults: Vec<Value> = parts
        .faults
        .iter()
        .map(|f| Value::Table(fault_table(f)))
        .collect();
    if !faults.is_empty() {
        t.insert("faults".into(), Value::Array(faults));
    }
    t
}

/// TOML integers are i64; a larger seed is written as a string so validation can reject it by
/// name instead of the serialiser failing.
fn seed_value(seed: u64) -> Value {
    i64::try_from(seed).map_or_else(|_| Value::String(seed.to_string()), Value::Integer)
}

fn dur(d: Duration) -> Value {
    Value::String(human(d))
}

fn law_table(law: &Law) -> Table {
    let mut t = Table::new();
    let mut put = |k: &str, v: Value| {
        t.insert(k.into(), v);
    };
    match *law {
        Law::Fixed(d) => {
            put("kind", "fixed".into());
            put("value", dur(d));
        }
        Law::Uniform { min, max } => {
            put("kind", "uniform".into());
            put("min", dur(min));
            put("max", dur(max));
        }
        Law::Exponential { mean } => {
            put("kind", "exponential".into());
            put("mean", dur(mean));
        }
        Law::Lognormal { median, sigma } => {
            put("kind", "lognormal".into());
            put("median", dur(median));
            put("sigma", sigma.into());
        }
        Law::Bimodal {
            fast,
            slow,
            slow_percent,
        } => {
            put("kind", "bimodal".into());
            put("fast", dur(fast));
            put("slow", dur(slow));
            put("slow_percent", slow_percent.get().into());
        }
    }
    t
}

fn fault_table(fault: &Fault) -> Table {
    let mut t = Table::new();
    t.insert("kind".into(), fault.kind().into());
    let mut put = |k: &str, v: Value| {
        t.insert(k.into(), v);
    };
    match *fault {
        Fault::Stall { at, duration } => {
            put("at", dur(at));
            put("duration", dur(duration));
        }
        Fault::Pause {
            every,
            duration,
            first,
        } => {
            put("every", dur(every));
            put("duration", dur(duration));
            put("first", dur(first));
        }
        Fault::Ramp { start, end, scale } => {
            put("start", dur(start));
            put("end", dur(end));
            put("scale", scale.into());
        }
        Fault::EveryNth { n, slow } => {
            put("n", seed_value(n));
            put_slowdown(&mut put, slow);
        }
        Fault::SlowFraction {
            percent,
            slow,
            seed,
        } => {
            put("percent", percent.get().into());
            put_slowdown(&mut put, slow);
            put_seed(&mut put, seed);
        }
        Fault::Cap(Cap { limit, queue }) => {
            put("limit", i64::from(limit).into());
            if let Some(q) = queue {
                put("queue", i64::from(q).into());
            }
        }
        Fault::Errors {
            percent,
            status,
            seed,
        } => {
            put("percent", percent.get().into());
            put("status", i64::from(status).into());
            put_seed(&mut put, seed);
        }
        Fault::Reset { percent, seed } => {
            put("percent", percent.get().into());
            put_seed(&mut put, seed);
        }
    }
    t
}

fn put_slowdown(put: &mut impl FnMut(&str, Value), slow: Slowdown) {
    match slow {
        Slowdown::Takes(d) => put("takes", dur(d)),
        Slowdown::Adds(d) => put("adds", dur(d)),
    }
}

fn put_seed(put: &mut impl FnMut(&str, Value), seed: Option<u64>) {
    if let Some(s) = seed {
        put("seed", seed_value(s));
    }
}

//! A result that knows its place: which plan it belongs to (a fingerprint of everything shards
//! must share), which shard of it this process ran, how many requests that shard was due to
//! schedule, and how late it started. Merging needs all four: shards of different plans must
//! not be added, and a shard that is missing or cut short must be named, never a silently
//! smaller total.
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::result::{Mode, RunConfig, RunResult};
use crate::schedule::{Arrival, End, Schedule};
use crate::shard::Shard;
use crate::stages::Stages;
use crate::units::Rate;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// SHA-256 of the plan's shared fields (see [`plan_key`]), hex.
    pub fingerprint: String,
    /// This process's shard; `0/1` when the run is not sharded.
    pub shard: Shard,
    /// Requests this shard was due to schedule, from the plan alone.
    pub due: u64,
    /// The wall-clock instant the plan started at (`--start-at`), Unix ns.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub start_at_unix_ns: Option<u64>,
    /// How much later than `start_at` this process was ready to send (negative: it was ready
    /// early and waited). Requests due before it was ready left late: that is send lag.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub start_skew_ns: Option<i64>,
}

/// What a merge was made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeInfo {
    /// One entry per shard of the plan, in shard order.
    pub shards: Vec<ShardStatus>,
    /// Some shard was missing or cut short: the totals are not the plan's.
    pub partial: bool,
    /// Results of different plans were merged anyway (`--force`).
    #[serde(default)]
    pub forced: bool,
}

/// One shard in a merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardStatus {
    pub index: u32,
    pub status: ShardState,
    /// Requests the plan gave it.
    pub due: u64,
    /// Requests its result accounts for (completed, failed, censored or never sent).
    pub accounted: u64,
    /// The file it came from; absent for a missing shard.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub start_skew_ns: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardState {
    /// Its counts add up to its share of the plan.
    Complete,
    /// It accounts for fewer requests than its share: stopped early.
    Short,
    /// No result for it was given.
    Missing,
}

/// The fields every shard of one plan must share, by name, for the fingerprint and for naming
/// the field that differs. Connections are left out (a shard may have its own pool); threads
/// stay in, since they slice the schedule (and so a seeded Poisson stream).
pub fn plan_key(
    mode: Mode,
    config: &RunConfig,
    shards: u32,
    start_at_unix_ns: Option<u64>,
) -> Map<String, Value> {
    let mut key = Map::new();
    let mut put = |name: &str, v: Value| {
        key.insert(name.to_string(), v);
    };
    put(
        "mode",
        serde_json::to_value(mode).expect("a mode serialises"),
    );
    put("target", config.target.clone().into());
    put("rate", config.rate.into());
    put("arrival", config.arrival.clone().into());
    put("seed", config.seed.into());
    put("ramp_to", config.ramp_to.into());
    put("duration_ns", config.duration_ns.into());
    put("requests", config.requests.into());
    put(
        "stages",
        serde_json::to_value(&config.stages).expect("stages serialise"),
    );
    put("threads", config.threads.into());
    // A paced loop's slots are cut per connection (per stream slot over HTTP/2).
    if mode == Mode::Paced {
        put("connections", config.connections.into());
        if let Some(streams) = config.streams {
            put("streams", streams.into());
        }
    }
    // Which request each index sends: shards of one plan send the same targets in the same
    // order. Not the file's path, which may differ from node to node.
    if let Some(t) = &config.targets {
        put(
            "targets",
            serde_json::json!({ "count": t.count, "order": t.order, "seed": t.seed }),
        );
    }
    put("timeout_ns", config.timeout_ns.into());
    put("interval_ns", config.interval_ns.into());
    put("shards", shards.into());
    put("start_at_unix_ns", start_at_unix_ns.into());
    key
}

/// SHA-256 of the key's compact JSON (keys in the fixed order [`plan_key`] writes), hex.
pub fn fingerprint(key: &Map<String, Value>) -> String {
    let text = serde_json::to_string(key).expect("a JSON map serialises");
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The plan key of a result: from its config, mode and placement.
pub fn key_of(r: &RunResult) -> Map<String, Value> {
    let start = r.placement.as_ref().and_then(|p| p.start_at_unix_ns);
    plan_key(r.mode, &r.config, plan_shards(r), start)
}

/// How many shards a result's plan has: a merge lists them all, a shard knows its N.
pub fn plan_shards(r: &RunResult) -> u32 {
    match (&r.merged, &r.placement) {
        (Some(m), _) => m.shards.len() as u32,
        (None, Some(p)) => p.shard.count,
        (None, None) => 1,
    }
}

/// The first field in which two plan keys differ, with both values.
pub fn first_difference(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
) -> Option<(String, Value, Value)> {
    a.iter().find_map(|(name, va)| {
        let vb = b.get(name).cloned().unwrap_or(Value::Null);
        (*va != vb).then(|| (name.clone(), va.clone(), vb))
    })
}

/// How two plans differ, in the terms `sojourn run` was given: the flag (or the mode) and its
/// value in each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDifference {
    /// `mode`, `--rate`, `--threads`, `the shard count`, …
    pub field: String,
    pub theirs: String,
    pub ours: String,
}

/// The first way `theirs` is not of `ours`'s plan, in the user's terms. The mode comes first: it
/// decides the rest (a closed loop has no arrival and no rate), so it is what to name.
pub fn plan_difference(theirs: &RunResult, ours: &RunResult) -> Option<PlanDifference> {
    let (a, b) = (key_of(theirs), key_of(ours));
    let (name, va, vb) = match (a.get("mode"), b.get("mode")) {
        (Some(ma), Some(mb)) if ma != mb => ("mode".to_string(), ma.clone(), mb.clone()),
        _ => first_difference(&a, &b)?,
    };
    Some(PlanDifference {
        field: field_words(&name),
        theirs: value_words(&name, &va),
        ours: value_words(&name, &vb),
    })
}

/// A plan key's field as the user set it: the flag of `sojourn run`.
fn field_words(name: &str) -> String {
    let words = match name {
        "mode" => "mode",
        "target" => "target URL",
        "rate" => "--rate",
        "arrival" => "--arrival",
        "seed" => "--seed",
        "ramp_to" => "--ramp-to",
        "duration_ns" => "--duration",
        "requests" => "--requests",
        "stages" => "--stages",
        "threads" => "--threads",
        "connections" => "--connections",
        "streams" => "--streams",
        "targets" => "--targets",
        "timeout_ns" => "--timeout",
        "interval_ns" => "--interval",
        "shards" => "the shard count (N of --shard K/N)",
        "start_at_unix_ns" => "--start-at",
        other => other,
    };
    words.to_string()
}

/// A plan key's value as the user would write it: `open loop`, `1000 req/s`, `10.000 s`.
fn value_words(name: &str, v: &Value) -> String {
    if v.is_null() {
        return match name {
            "rate" | "arrival" => "none (a closed loop)".into(),
            _ => "not set".into(),
        };
    }
    let ns = || v.as_u64().map(crate::units::format_ns);
    let text = match name {
        "mode" => serde_json::from_value::<Mode>(v.clone())
            .ok()
            .map(|m| m.label().to_string()),
        "rate" | "ramp_to" => v.as_f64().map(|r| format!("{r} req/s")),
        "duration_ns" | "timeout_ns" | "interval_ns" => ns(),
        "start_at_unix_ns" => v.as_u64().map(unix_seconds),
        "stages" => serde_json::from_value::<Vec<crate::result::StageConfig>>(v.clone())
            .ok()
            .and_then(|c| Stages::from_configs(&c).ok())
            .map(|s| s.to_string()),
        "targets" => Some(format!(
            "{} targets in {} order{}",
            v["count"],
            v["order"].as_str().unwrap_or("?").replace('_', "-"),
            v["seed"]
                .as_u64()
                .map(|s| format!(", seed {s}"))
                .unwrap_or_default()
        )),
        _ => None,
    };
    text.unwrap_or_else(|| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Unix nanoseconds as `--start-at` reads them: Unix seconds, with a fraction when there is one.
fn unix_seconds(ns: u64) -> String {
    let (s, frac) = (ns / 1_000_000_000, ns % 1_000_000_000);
    if frac == 0 {
        return format!("{s} (Unix seconds)");
    }
    let frac = format!("{frac:09}");
    format!("{s}.{} (Unix seconds)", frac.trim_end_matches('0'))
}

/// The schedule a result's config describes, rebuilt: what a merge asks how many requests a
/// missing shard was due to send.
pub fn schedule_of(config: &RunConfig) -> Result<Schedule, String> {
    let arrival = match config.arrival.as_deref() {
        Some("constant") => Arrival::Constant,
        Some("poisson") => Arrival::Poisson {
            seed: config.seed.unwrap_or(1),
        },
        Some("ramp") => Arrival::Ramp {
            to: rate(config.ramp_to.ok_or("a ramp without ramp_to")?)?,
        },
        Some(other) => return Err(format!("arrival {other:?} is not one sojourn runs")),
        None => return Err("a closed loop has no schedule".into()),
    };
    if let Some(stages) = &config.stages {
        let stages = Stages::from_configs(stages).map_err(|e| e.to_string())?;
        return Schedule::staged(arrival, stages).map_err(|e| e.to_string());
    }
    let end = match (config.duration_ns, config.requests) {
        (_, Some(n)) => End::Count(n),
        (Some(ns), None) => End::After(Duration::from_nanos(ns)),
        (None, None) => return Err("neither a duration nor a request count".into()),
    };
    let rate = rate(config.rate.ok_or("no rate")?)?;
    Schedule::new(arrival, rate, end).map_err(|e| e.to_string())
}

fn rate(r: f64) -> Result<Rate, String> {
    Rate::per_second(r).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RunConfig {
        RunConfig {
            target: Some("http://10.0.0.1/api".into()),
            rate: Some(900.0),
            arrival: Some("poisson".into()),
            seed: Some(3),
            duration_ns: Some(2_000_000_000),
            connections: 64,
            threads: Some(2),
            timeout_ns: Some(1_000_000_000),
            interval_ns: 1_000_000_000,
            ..Default::default()
        }
    }

    #[test]
    fn the_fingerprint_sees_every_shared_field_and_not_the_pool() {
        let base = plan_key(Mode::Open, &config(), 4, Some(7));
        let same_pool = RunConfig {
            connections: 8,
            ..config()
        };
        assert_eq!(
            fingerprint(&base),
            fingerprint(&plan_key(Mode::Open, &same_pool, 4, Some(7)))
        );
        let changes: Vec<(&str, Map<String, Value>)> = vec![
            (
                "seed",
                plan_key(
                    Mode::Open,
                    &RunConfig {
                        seed: Some(4),
                        ..config()
                    },
                    4,
                    Some(7),
                ),
            ),
            (
                "threads",
                plan_key(
                    Mode::Open,
                    &RunConfig {
                        threads: Some(1),
                        ..config()
                    },
                    4,
                    Some(7),
                ),
            ),
            ("shards", plan_key(Mode::Open, &config(), 3, Some(7))),
            (
                "start_at_unix_ns",
                plan_key(Mode::Open, &config(), 4, Some(8)),
            ),
            ("mode", plan_key(Mode::Paced, &config(), 4, Some(7))),
        ];
        for (field, other) in changes {
            assert_ne!(fingerprint(&base), fingerprint(&other), "{field}");
            let (name, _, _) = first_difference(&base, &other).unwrap();
            assert_eq!(name, field);
        }
        assert_eq!(first_difference(&base, &base), None);
        assert_eq!(fingerprint(&base).len(), 64);
    }

    #[test]
    fn the_schedule_is_rebuilt_from_the_config() {
        let s = schedule_of(&config()).unwrap();
        assert_eq!(s.arrival, Arrival::Poisson { seed: 3 });
        assert_eq!(s.end, End::After(Duration::from_secs(2)));
        let staged = RunConfig {
            stages: Some(Stages::parse("1s@0..10,hold=1s@10").unwrap().configs()),
            arrival: Some("constant".into()),
            ..config()
        };
        assert_eq!(schedule_of(&staged).unwrap().planned_count(), Some(15));
        let closed = RunConfig {
            arrival: None,
            ..config()
        };
        assert!(schedule_of(&closed).is_err());
    }
}

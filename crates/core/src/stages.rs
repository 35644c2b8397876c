//! Shaped load: a run made of stages, each holding a rate or moving it linearly to another
//! (warm up, ramp, hold, spike, recover), as k6's ramping-arrival-rate stages and Gatling's
//! injection profiles describe them.
//!
//! The profile is a pure function of time. Λ(t), the number of requests due by `t`, is a sum of
//! whole stages plus a quadratic within the current one, so its inverse is closed-form too:
//! evenly spaced arrivals fall at Λ⁻¹(0), Λ⁻¹(1), …, and Poisson arrivals at Λ⁻¹ of a unit-rate
//! Poisson stream (time rescaling), which is exactly the inhomogeneous Poisson process of this
//! rate.
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::result::StageConfig;
use crate::units::nanos;

/// One stage: the rate moves linearly from `from` to `to` requests per second over `duration`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub name: Option<String>,
    pub duration: Duration,
    pub from: f64,
    pub to: f64,
}

/// Stages in order, with each one's start and the requests due before it precomputed.
/// Cloning shares them.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(Arc<Profile>);

#[derive(Debug, PartialEq)]
struct Profile {
    stages: Vec<Stage>,
    /// Where each stage starts, seconds; one more entry for the end of the last.
    starts: Vec<f64>,
    /// Λ at each stage's start; one more entry for Λ at the end.
    before: Vec<f64>,
}

/// The most stages one run may have: far beyond any real plan, so only a runaway generator
/// of plans reaches it.
pub const MAX_STAGES: usize = 10_000;

/// Why stages are unusable. Each message says how to write them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StagesError {
    #[error("no stages given; write them like 30s@0..1000,5m@1000")]
    Empty,
    #[error("more than {MAX_STAGES} stages")]
    TooMany,
    #[error("stage {0:?} is not DURATION@RATE or DURATION@FROM..TO, e.g. 30s@0..1000 or 5m@1000")]
    Shape(String),
    #[error("stage {stage}: duration {text:?} is not a duration like 30s, 5m or 1h30m")]
    Duration { stage: usize, text: String },
    #[error("stage {stage}: the duration must be longer than zero")]
    ZeroDuration { stage: usize },
    #[error("stage {stage}: rate {text:?} is not a number of requests per second (0 or more, at most {max})")]
    Rate {
        stage: usize,
        text: String,
        max: f64,
    },
    #[error("every stage has rate 0: nothing would be sent")]
    NothingToSend,
    #[error("two stages are named {0:?}; names must be unique, as objectives refer to them")]
    DuplicateName(String),
    #[error(
        "stage name {0:?} must start with a letter and hold only letters, digits, '-' and '_'"
    )]
    BadName(String),
    #[error("the stages last {0:?} in all, more than the longest run ({1:?})")]
    TooLong(Duration, Duration),
}

/// The highest rate a stage may ask for, requests per second.
pub const MAX_STAGE_RATE: f64 = 1e8;
/// The longest a plan may last in all.
pub const MAX_TOTAL: Duration = Duration::from_secs(30 * 24 * 3600);

impl Stages {
    pub fn new(stages: Vec<Stage>) -> Result<Stages, StagesError> {
        validate(&stages)?;
        let mut starts = Vec::with_capacity(stages.len() + 1);
        let mut before = Vec::with_capacity(stages.len() + 1);
        let (mut t, mut lambda) = (0.0, 0.0);
        for s in &stages {
            starts.push(t);
            before.push(lambda);
            let secs = s.duration.as_secs_f64();
            t += secs;
            lambda += (s.from + s.to) / 2.0 * secs;
        }
        starts.push(t);
        before.push(lambda);
        Ok(Stages(Arc::new(Profile {
            stages,
            starts,
            before,
        })))
    }

    /// The short text form: comma-separated `DURATION@RATE` (a hold) or `DURATION@FROM..TO`
    /// (a linear move), each optionally named `NAME=…`:
    /// `warm=30s@0..1000,5m@1000,spike=30s@1000..5000,1m@5000`.
    pub fn parse(text: &str) -> Result<Stages, StagesError> {
        let parts: Vec<&str> = text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .collect();
        if parts.len() > MAX_STAGES {
            return Err(StagesError::TooMany);
        }
        let stages = parts
            .iter()
            .enumerate()
            .map(|(i, p)| parse_stage(i + 1, p))
            .collect::<Result<Vec<_>, _>>()?;
        Stages::new(stages)
    }

    /// Rebuilds the stages a result recorded.
    pub fn from_configs(configs: &[StageConfig]) -> Result<Stages, StagesError> {
        Stages::new(
            configs
                .iter()
                .map(|c| Stage {
                    name: c.name.clone(),
                    duration: Duration::from_nanos(c.duration_ns),
                    from: c.from,
                    to: c.to,
                })
                .collect(),
        )
    }

    /// The stages as a result records them.
    pub fn configs(&self) -> Vec<StageConfig> {
        self.0
            .stages
            .iter()
            .zip(&self.0.starts)
            .map(|(s, &start)| StageConfig {
                name: s.name.clone(),
                start_ns: nanos(Duration::from_secs_f64(start)),
                duration_ns: nanos(s.duration),
                from: s.from,
                to: s.to,
            })
            .collect()
    }

    pub fn stages(&self) -> &[Stage] {
        &self.0.stages
    }

    /// How long the stages last in all.
    pub fn total(&self) -> Duration {
        self.0.stages.iter().map(|s| s.duration).sum()
    }

    /// The highest rate any stage reaches.
    pub fn peak(&self) -> f64 {
        self.0
            .stages
            .iter()
            .map(|s| s.from.max(s.to))
            .fold(0.0, f64::max)
    }

    /// Requests due over the whole plan on average: Λ(end) / duration.
    pub fn mean_rate(&self) -> f64 {
        self.expected_total() / self.total().as_secs_f64()
    }

    /// Λ at the end of the last stage.
    pub fn expected_total(&self) -> f64 {
        *self.0.before.last().expect("a stage at least")
    }

    /// The stage `t` falls in (the last one from its end on) and the time since it began.
    fn locate(&self, secs: f64) -> (usize, f64) {
        let p = &self.0;
        let i = p.starts[1..]
            .partition_point(|&end| end <= secs)
            .min(p.stages.len() - 1);
        (i, secs - p.starts[i])
    }

    /// The rate at `t`; past the end, the last stage's final rate.
    pub fn rate_at(&self, t: Duration) -> f64 {
        let (i, into) = self.locate(t.as_secs_f64());
        let s = &self.0.stages[i];
        let secs = s.duration.as_secs_f64();
        if into >= secs {
            return s.to;
        }
        s.from + (s.to - s.from) * into / secs
    }

    /// Λ(t): requests due by `t`. Past the end it goes on at the last stage's final rate, so
    /// it stays increasing wherever the rate is positive.
    pub fn expected_by(&self, t: Duration) -> f64 {
        let (i, into) = self.locate(t.as_secs_f64());
        let s = &self.0.stages[i];
        let secs = s.duration.as_secs_f64();
        let within = into.min(secs);
        let slope = (s.to - s.from) / secs;
        self.0.before[i]
            + s.from * within
            + slope * within * within / 2.0
            + s.to * (into - within).max(0.0)
    }

    /// Λ⁻¹(u): the first time by which `u` requests are due. `None` if that never comes (the
    /// plan ends at rate zero with fewer due).
    pub fn time_at(&self, u: f64) -> Option<Duration> {
        let p = &self.0;
        if u <= 0.0 {
            return Some(Duration::ZERO);
        }
        let i = p.before[1..].partition_point(|&end| end < u);
        if i == p.stages.len() {
            let last = p.stages.last().expect("a stage at least");
            if last.to <= 0.0 {
                return None;
            }
            let past = (u - self.expected_total()) / last.to;
            return Some(Duration::from_secs_f64(p.starts[i] + past));
        }
        let s = &p.stages[i];
        let secs = s.duration.as_secs_f64();
        let into = within_stage(s.from, (s.to - s.from) / secs, u - p.before[i]).min(secs);
        Some(Duration::from_secs_f64(p.starts[i] + into))
    }
}

/// The time τ into a stage at which from·τ + slope·τ²/2 reaches `v` (> 0), in the
/// cancellation-free form 2v / (from + √(from² + 2·slope·v)).
fn within_stage(from: f64, slope: f64, v: f64) -> f64 {
    let disc = (from * from + 2.0 * slope * v).max(0.0);
    let denominator = from + disc.sqrt();
    if denominator <= 0.0 {
        return 0.0;
    }
    2.0 * v / denominator
}

fn validate(stages: &[Stage]) -> Result<(), StagesError> {
    if stages.is_empty() {
        return Err(StagesError::Empty);
    }
    if stages.len() > MAX_STAGES {
        return Err(StagesError::TooMany);
    }
    let mut names = std::collections::HashSet::new();
    for (i, s) in stages.iter().enumerate() {
        let number = i + 1;
        if s.duration.is_zero() {
            return Err(StagesError::ZeroDuration { stage: number });
        }
        for r in [s.from, s.to] {
            if !(r.is_finite() && (0.0..=MAX_STAGE_RATE).contains(&r)) {
                return Err(StagesError::Rate {
                    stage: number,
                    text: r.to_string(),
                    max: MAX_STAGE_RATE,
                });
            }
        }
        if let Some(name) = &s.name {
            check_name(name)?;
            if !names.insert(name.as_str()) {
                return Err(StagesError::DuplicateName(name.clone()));
            }
        }
    }
    let total: Duration = stages.iter().map(|s| s.duration).sum();
    if total > MAX_TOTAL {
        return Err(StagesError::TooLong(total, MAX_TOTAL));
    }
    if stages.iter().all(|s| s.from == 0.0 && s.to == 0.0) {
        return Err(StagesError::NothingToSend);
    }
    Ok(())
}

/// A name must not read as a stage number, so `3:p99<1s` is never ambiguous.
fn check_name(name: &str) -> Result<(), StagesError> {
    let mut chars = name.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StagesError::BadName(name.into()))
    }
}

fn parse_stage(number: usize, text: &str) -> Result<Stage, StagesError> {
    let shape = || StagesError::Shape(text.into());
    let (name, body) = match text.split_once('=') {
        Some((n, b)) => (Some(n.trim().to_string()), b.trim()),
        None => (None, text),
    };
    let (duration, rates) = body.split_once('@').ok_or_else(shape)?;
    let duration_text = duration.trim();
    let duration = humantime::parse_duration(duration_text).map_err(|_| StagesError::Duration {
        stage: number,
        text: duration_text.into(),
    })?;
    let (from, to) = match rates.split_once("..") {
        Some((a, b)) => (parse_rate(number, a)?, parse_rate(number, b)?),
        None => {
            let r = parse_rate(number, rates)?;
            (r, r)
        }
    };
    Ok(Stage {
        name,
        duration,
        from,
        to,
    })
}

fn parse_rate(stage: usize, text: &str) -> Result<f64, StagesError> {
    let text = text.trim();
    match text.parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=MAX_STAGE_RATE).contains(&r) => Ok(r),
        _ => Err(StagesError::Rate {
            stage,
            text: text.into(),
            max: MAX_STAGE_RATE,
        }),
    }
}

impl fmt::Display for Stages {
    /// The short text form, which [`Stages::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, s) in self.0.stages.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if let Some(name) = &s.name {
                write!(f, "{name}=")?;
            }
            write!(f, "{}@", humantime::format_duration(s.duration))?;
            if s.from == s.to {
                write!(f, "{}", s.from)?;
            } else {
                write!(f, "{}..{}", s.from, s.to)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// 10 s ramp 0 → 100, 10 s hold at 100, 5 s pause, 10 s ramp 100 → 300.
    fn shaped() -> Stages {
        Stages::parse("10s@0..100, hold=10s@100, 5s@0, 10s@100..300").unwrap()
    }

    /// A stage as the table writes it: name, seconds, from, to.
    type Row<'a> = (Option<&'a str>, f64, f64, f64);

    #[test]
    fn parse_table() {
        let table: &[(&str, Result<Vec<Row>, &str>)] = &[
            ("30s@0..1000", Ok(vec![(None, 30.0, 0.0, 1000.0)])),
            (
                "30s@0..1000,5m@1000",
                Ok(vec![
                    (None, 30.0, 0.0, 1000.0),
                    (None, 300.0, 1000.0, 1000.0),
                ]),
            ),
            (
                " warm = 1m30s @ 10 .. 20 ,",
                Ok(vec![(Some("warm"), 90.0, 10.0, 20.0)]),
            ),
            ("1s@2.5", Ok(vec![(None, 1.0, 2.5, 2.5)])),
            ("", Err("no stages")),
            ("30s", Err("not DURATION@RATE")),
            ("thirty@5", Err("duration \"thirty\"")),
            ("0s@5", Err("longer than zero")),
            ("1s@-5", Err("rate \"-5\"")),
            ("1s@5..x", Err("rate \"x\"")),
            ("1s@1e9", Err("at most")),
            ("1s@0,2s@0", Err("every stage has rate 0")),
            ("a=1s@1,a=1s@2", Err("two stages are named \"a\"")),
            ("3=1s@1", Err("must start with a letter")),
            ("31days@1", Err("more than the longest run")),
        ];
        for (text, want) in table {
            let got = Stages::parse(text);
            match (want, got) {
                (Ok(want), Ok(got)) => {
                    let got: Vec<_> = got
                        .stages()
                        .iter()
                        .map(|s| (s.name.as_deref(), s.duration.as_secs_f64(), s.from, s.to))
                        .collect();
                    assert_eq!(&got, want, "{text:?}");
                }
                (Err(want), Err(e)) => {
                    assert!(e.to_string().contains(want), "{text:?}: {e}")
                }
                (want, got) => panic!("{text:?}: wanted {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn display_reads_back() {
        let s = shaped();
        assert_eq!(s.to_string(), "10s@0..100,hold=10s@100,5s@0,10s@100..300");
        assert_eq!(Stages::parse(&s.to_string()).unwrap(), s);
        assert_eq!(Stages::from_configs(&s.configs()).unwrap(), s);
    }

    #[test]
    fn expected_by_table() {
        let s = shaped();
        // Λ: ramp 0→100 over 10 s holds 500; hold adds 1000; pause adds 0; 100→300 adds 2000.
        let table: &[(f64, f64, &str)] = &[
            (0.0, 0.0, "nothing due at the start"),
            (
                5.0,
                125.0,
                "half-way up a ramp from 0: a quarter of its volume",
            ),
            (10.0, 500.0, "the end of the first ramp"),
            (15.0, 1000.0, "half-way through the hold"),
            (20.0, 1500.0, "the end of the hold"),
            (23.0, 1500.0, "nothing is due in the pause"),
            (
                30.0,
                1500.0 + 100.0 * 5.0 + 20.0 * 25.0 / 2.0,
                "half-way up 100→300",
            ),
            (35.0, 3500.0, "the end of the plan"),
            (36.0, 3800.0, "past the end it goes on at the final rate"),
        ];
        for &(t, want, why) in table {
            let got = s.expected_by(secs(t));
            assert!(
                (got - want).abs() < 1e-9,
                "{why}: Λ({t}) = {got}, want {want}"
            );
        }
        assert_eq!(s.expected_total(), 3500.0);
        assert_eq!(s.total(), secs(35.0));
        assert_eq!(s.mean_rate(), 100.0);
        assert_eq!(s.peak(), 300.0);
    }

    #[test]
    fn rate_at_table() {
        let s = shaped();
        for (t, want) in [
            (0.0, 0.0),
            (2.5, 25.0),
            (10.0, 100.0),
            (19.9, 100.0),
            (21.0, 0.0),
            (30.0, 200.0),
            (99.0, 300.0),
        ] {
            assert!((s.rate_at(secs(t)) - want).abs() < 1e-9, "rate at {t}");
        }
    }

    #[test]
    fn time_at_inverts_expected_by() {
        let s = shaped();
        for u in [
            0.0, 1.0, 124.0, 125.0, 499.5, 500.0, 1499.0, 1500.0, 1500.5, 3499.9, 3600.0,
        ] {
            let t = s.time_at(u).unwrap();
            let back = s.expected_by(t);
            assert!((back - u).abs() < 1e-6, "Λ(Λ⁻¹({u})) = {back}");
        }
        // A request due exactly as the pause begins is due at its start, not at its end: the
        // first time by which that many are due.
        assert!((s.time_at(1500.0).unwrap().as_secs_f64() - 20.0).abs() < 1e-9);
        assert!((s.time_at(1500.5).unwrap().as_secs_f64() - 25.005).abs() < 1e-5);
        let ends_idle = Stages::parse("1s@10,1s@0").unwrap();
        assert_eq!(
            ends_idle.time_at(11.0),
            None,
            "never due: the plan ends idle"
        );
    }
}

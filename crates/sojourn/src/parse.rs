//! Value parsers shared by subcommands: one line naming what is accepted.
use std::time::Duration;

use sojourn_core::{Arrival, End, Rate, Schedule, Stages};

use crate::bad_input;

#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// How arrivals are spaced: `--arrival`.
pub enum ArrivalKind {
    /// Evenly.
    Constant,
    /// As a Poisson process (seeded by `--seed`).
    Poisson,
    /// A linear ramp from `--rate` to `--ramp-to`.
    Ramp,
}

/// `--rate`, `--arrival`, `--ramp-to` and `--seed` as one validated schedule.
pub fn schedule(
    rate: f64,
    arrival: ArrivalKind,
    ramp_to: Option<f64>,
    seed: Option<u64>,
    end: End,
) -> anyhow::Result<Schedule> {
    let rate = Rate::per_second(rate).map_err(|e| bad_input!("--rate: {e}"))?;
    if ramp_to.is_some() && arrival != ArrivalKind::Ramp {
        return Err(bad_input!("--ramp-to: only applies to --arrival ramp"));
    }
    let arrival = match spacing(arrival, seed)? {
        Some(arrival) => arrival,
        None => {
            let to = ramp_to.ok_or_else(|| {
                bad_input!(
                    "--ramp-to: required with --arrival ramp, e.g. --rate 100 --ramp-to 1000"
                )
            })?;
            Arrival::Ramp {
                to: Rate::per_second(to).map_err(|e| bad_input!("--ramp-to: {e}"))?,
            }
        }
    };
    Schedule::new(arrival, rate, end)
        .map_err(|e| bad_input!("--arrival ramp: {e}; give --duration"))
}

/// `--stages` with `--arrival` and `--seed`: arrivals evenly spaced or Poisson along the stages.
pub fn staged_schedule(
    stages: &Stages,
    arrival: ArrivalKind,
    seed: Option<u64>,
) -> anyhow::Result<Schedule> {
    let arrival = spacing(arrival, seed)?.ok_or_else(|| {
        bad_input!(
            "--arrival: ramp does not combine with --stages; write the ramp as a stage, e.g. 30s@100..1000"
        )
    })?;
    Schedule::staged(arrival, stages.clone()).map_err(|e| bad_input!("--stages: {e}"))
}

/// `--arrival constant|poisson` with its `--seed`; `None` for a ramp, which each caller builds
/// (or refuses) its own way.
fn spacing(arrival: ArrivalKind, seed: Option<u64>) -> anyhow::Result<Option<Arrival>> {
    if seed.is_some() && arrival != ArrivalKind::Poisson {
        return Err(bad_input!(
            "--seed: only applies to --arrival poisson, --targets-order random or --journey"
        ));
    }
    Ok(match arrival {
        ArrivalKind::Constant => Some(Arrival::Constant),
        ArrivalKind::Poisson => Some(Arrival::Poisson {
            seed: seed.unwrap_or(1),
        }),
        ArrivalKind::Ramp => None,
    })
}

/// Parses `--stages`: `30s@0..1000,5m@1000,…`.
pub fn stages(text: &str) -> Result<Stages, String> {
    Stages::parse(text).map_err(|e| e.to_string())
}

/// The longest duration any flag takes: a month-long soak is a serious run; a longer figure
/// is a typo, and would overflow the clock arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(30 * 24 * 3600);
/// The highest rate any flag takes, requests per second: far beyond one machine, so only a
/// typo reaches it.
pub const MAX_RATE: f64 = 1e8;
/// The most requests a run may be asked for.
pub const MAX_REQUESTS: u64 = 1_000_000_000_000;
/// The most connections: beyond what one process can hold open.
pub const MAX_CONNECTIONS: u64 = 1_000_000;
/// The most worker threads.
pub const MAX_THREADS: u64 = 1024;

/// Parses a duration such as `10s`, `500ms`, `2m` or `1m30s`; zero allowed.
pub fn duration(text: &str) -> Result<Duration, String> {
    let accepted = "expected a duration like 10s, 500ms or 2m, at most 30 days";
    match humantime::parse_duration(text.trim()) {
        Ok(d) if d <= MAX_DURATION => Ok(d),
        _ => Err(accepted.into()),
    }
}

/// Parses a duration longer than zero.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    match duration(text) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => Err(
            "expected a duration longer than zero like 10s, 500ms or 2m, at most 30 days".into(),
        ),
    }
}

/// A rate in requests per second: above zero, at most [`MAX_RATE`].
pub fn rate(text: &str) -> Result<f64, String> {
    rate_value(text.trim().parse::<f64>().unwrap_or(f64::NAN))
}

/// [`rate`] for a number already typed (a plan file's `rate = 1000`).
pub fn rate_value(r: f64) -> Result<f64, String> {
    if r > 0.0 && r <= MAX_RATE {
        return Ok(r);
    }
    Err(format!(
        "expected requests per second above 0 and at most {MAX_RATE:e}, e.g. 1000 or 0.5"
    ))
}

/// A whole number in `min..=max`, from text.
fn whole<T: TryFrom<u64>>(text: &str, min: u64, max: u64) -> Result<T, String> {
    match text.trim().parse::<u64>() {
        Ok(n) => whole_value(n, min, max),
        Err(_) => Err(format!("expected a whole number from {min} to {max}")),
    }
}

/// A whole number already typed, in `min..=max`.
fn whole_value<T: TryFrom<u64>>(n: u64, min: u64, max: u64) -> Result<T, String> {
    let accepted = || format!("expected a whole number from {min} to {max}");
    match (min..=max).contains(&n) {
        true => T::try_from(n).map_err(|_| accepted()),
        false => Err(accepted()),
    }
}

/// The most repetitions `--repeat` takes: far beyond any useful count (the interval narrows as
/// 1/√N), so only a typo reaches it.
pub const MAX_REPEAT: u64 = 10_000;

/// A number of repetitions (`--repeat`), at least 1.
pub fn repetitions(text: &str) -> Result<u32, String> {
    whole(text, 1, MAX_REPEAT)
}

/// A number of requests, at least 1.
pub fn requests(text: &str) -> Result<u64, String> {
    whole(text, 1, MAX_REQUESTS)
}

/// [`requests`] for a number already typed.
pub fn requests_value(n: u64) -> Result<u64, String> {
    whole_value(n, 1, MAX_REQUESTS)
}

/// A number of connections, at least 1.
pub fn connections(text: &str) -> Result<usize, String> {
    whole(text, 1, MAX_CONNECTIONS)
}

/// [`connections`] for a number already typed.
pub fn connections_value(n: usize) -> Result<usize, String> {
    whole_value(n as u64, 1, MAX_CONNECTIONS)
}

/// HTTP/2 streams per connection: 1 to [`sojourn_engine::http2::MAX_STREAMS`].
pub fn streams(text: &str) -> Result<usize, String> {
    whole(text, 1, sojourn_engine::http2::MAX_STREAMS as u64)
}

/// [`streams`] for a number already typed.
pub fn streams_value(n: usize) -> Result<usize, String> {
    whole_value(n as u64, 1, sojourn_engine::http2::MAX_STREAMS as u64)
}

/// A number of worker threads, at least 1.
pub fn threads(text: &str) -> Result<usize, String> {
    whole(text, 1, MAX_THREADS)
}

/// [`threads`] for a number already typed.
pub fn threads_value(n: usize) -> Result<usize, String> {
    whole_value(n as u64, 1, MAX_THREADS)
}

/// A number of shards: 1 to [`sojourn_core::shard::MAX_SHARDS`].
pub fn shard_count(text: &str) -> Result<u32, String> {
    whole(text, 1, u64::from(sojourn_core::shard::MAX_SHARDS))
}

/// `K/N`: shard K (from 0) of N.
pub fn shard(text: &str) -> Result<sojourn_core::Shard, String> {
    text.parse()
        .map_err(|e: sojourn_core::shard::ShardError| e.to_string())
}

/// A wall-clock instant: RFC 3339 (`2026-11-23T10:00:00Z`, fractions allowed) or Unix seconds
/// with an optional fraction (`1763892000.5`).
pub fn instant(text: &str) -> Result<std::time::SystemTime, String> {
    let text = text.trim();
    let accepted =
        "expected an RFC 3339 time like 2026-11-23T10:00:00Z, or Unix seconds like 1763892000.5";
    if let Ok(t) = humantime::parse_rfc3339_weak(text) {
        return Ok(t);
    }
    match text.parse::<f64>() {
        Ok(secs) if (0.0..1e11).contains(&secs) => {
            Ok(std::time::UNIX_EPOCH + Duration::from_secs_f64(secs))
        }
        _ => Err(accepted.into()),
    }
}

/// A random seed: any whole number that fits in 64 bits.
pub fn seed(text: &str) -> Result<u64, String> {
    whole(text, 0, u64::MAX)
}

/// A small count (steps, probes): 1 to 1,000.
pub fn steps(text: &str) -> Result<usize, String> {
    whole(text, 1, 1000)
}

/// A confidence level: 0.5 to 0.999.
pub fn level(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(l) if (0.5..=0.999).contains(&l) => Ok(l),
        _ => Err("expected a confidence level from 0.5 to 0.999, e.g. 0.95".into()),
    }
}

/// Bootstrap replicates: 100 to 1,000,000.
pub fn draws(text: &str) -> Result<usize, String> {
    whole(text, 100, 1_000_000)
}

/// A share of requests: above 0, at most 1.
pub fn fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err("expected a share above 0 and at most 1, e.g. 0.1".into()),
    }
}

/// `--timer-slack`: `auto` or a duration (0 for none).
pub fn slack(text: &str) -> Result<sojourn_engine::Slack, String> {
    if text.eq_ignore_ascii_case("auto") {
        return Ok(sojourn_engine::Slack::Auto);
    }
    duration(text)
        .map(sojourn_engine::Slack::Fixed)
        .map_err(|e| format!("{e}; or `auto`"))
}

/// `--warmup`: `auto` (found from the timeline by MSER) or a duration to trim.
pub fn warmup(text: &str) -> Result<sojourn_core::result::WarmupRequest, String> {
    use sojourn_core::result::WarmupRequest;
    if text.eq_ignore_ascii_case("auto") {
        return Ok(WarmupRequest::Auto);
    }
    positive_duration(text)
        .map(WarmupRequest::Fixed)
        .map_err(|e| format!("{e}; or `auto` to find the warm-up from the timeline"))
}

/// Parses a `Name: value` header.
pub fn header(text: &str) -> Result<(String, String), String> {
    match text.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_string(), value.trim().to_string()))
        }
        _ => Err(format!(
            "expected a header like \"Accept: application/json\", got {text:?}"
        )),
    }
}

/// A duration as a person reads it at a glance, in one unit with at most one decimal:
/// `3.2 s`, `12.5 min`, `2.0 h`, `25 days`, `6.9 years`. Never `6years 10months 25days …`.
pub fn short_duration(d: Duration) -> String {
    const MINUTE: f64 = 60.0;
    const HOUR: f64 = 60.0 * MINUTE;
    const DAY: f64 = 24.0 * HOUR;
    const YEAR: f64 = 365.25 * DAY;
    let secs = d.as_secs_f64();
    match secs {
        s if s < MINUTE => format!("{s:.1} s"),
        s if s < HOUR => format!("{:.1} min", s / MINUTE),
        s if s < 2.0 * DAY => format!("{:.1} h", s / HOUR),
        s if s < YEAR => format!("{:.0} days", s / DAY),
        s => format!("{:.1} years", s / YEAR),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(duration("ten").unwrap_err().contains("like 10s"));
        assert!(positive_duration("0s")
            .unwrap_err()
            .contains("longer than zero"));
        assert_eq!(duration("30days"), Ok(MAX_DURATION));
        assert!(duration("31days").is_err(), "past the ceiling");
        assert!(duration("-1s").is_err());
    }

    #[test]
    fn numbers_keep_to_their_ranges() {
        assert_eq!(rate("0.5"), Ok(0.5));
        for bad in ["0", "-5", "NaN", "inf", "1e400", "2e8", "ten"] {
            assert!(rate(bad).is_err(), "--rate {bad}");
        }
        assert_eq!(connections("1"), Ok(1));
        assert_eq!(connections("1000000"), Ok(1_000_000));
        for bad in ["0", "-1", "1000001", "1.5", "99999999999999999999999"] {
            assert!(connections(bad).is_err(), "--connections {bad}");
        }
        assert_eq!(seed("0"), Ok(0));
        assert_eq!(seed("18446744073709551615"), Ok(u64::MAX));
        assert!(seed("18446744073709551616").is_err());
        assert_eq!(fraction("1"), Ok(1.0));
        assert!(fraction("0").is_err() && fraction("1.01").is_err());
    }

    #[test]
    fn headers() {
        assert_eq!(header("Accept: */*"), Ok(("Accept".into(), "*/*".into())));
        assert!(header("no colon").is_err());
        assert!(header(": empty").is_err());
    }
}

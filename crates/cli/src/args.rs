//! Value parsers shared by subcommands: one line naming what is accepted.
use std::time::Duration;

use sojourn_core::{Arrival, End, Rate, Schedule};

use crate::bad_input;

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalKind {
    Constant,
    Poisson,
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
    if seed.is_some() && arrival != ArrivalKind::Poisson {
        return Err(bad_input!("--seed: only applies to --arrival poisson"));
    }
    let arrival = match arrival {
        ArrivalKind::Constant => Arrival::Constant,
        ArrivalKind::Poisson => Arrival::Poisson {
            seed: seed.unwrap_or(1),
        },
        ArrivalKind::Ramp => {
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

/// Parses a duration such as `10s`, `500ms`, `2m` or `1m30s`.
pub fn duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text.trim())
        .map_err(|_| format!("expected a duration like 10s, 500ms or 2m, got {text:?}"))
}

/// Parses a positive duration.
pub fn positive_duration(text: &str) -> Result<Duration, String> {
    match duration(text)? {
        d if d.is_zero() => Err(format!("must be longer than zero, got {text:?}")),
        d => Ok(d),
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
    }

    #[test]
    fn headers() {
        assert_eq!(header("Accept: */*"), Ok(("Accept".into(), "*/*".into())));
        assert!(header("no colon").is_err());
        assert!(header(": empty").is_err());
    }
}

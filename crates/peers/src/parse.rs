//! Numbers and durations as tools print them, converted to nanoseconds.
use crate::input::Input;
use crate::ImportError;

/// A finite, non-negative number of `unit`s as nanoseconds, rounded.
pub(crate) fn to_ns(value: f64, unit_ns: f64) -> Option<u64> {
    let ns = value * unit_ns;
    (ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64).then(|| ns.round() as u64)
}

pub(crate) const NS: f64 = 1.0;
pub(crate) const US: f64 = 1e3;
pub(crate) const MS: f64 = 1e6;
pub(crate) const S: f64 = 1e9;

/// A duration with a unit suffix as wrk, hey and oha print them: `187.72us`, `10.25ms`,
/// `1.00s`, `2.00m`, `1.50h`, `500ns`, `3µs`.
pub(crate) fn duration_ns(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok()?;
    let unit_ns = match unit.trim() {
        "ns" => NS,
        "us" | "µs" | "μs" => US,
        "ms" => MS,
        "s" => S,
        "m" => 60.0 * S,
        "h" => 3600.0 * S,
        _ => return None,
    };
    to_ns(value, unit_ns)
}

/// A run time of `secs` seconds (what a tool printed, or worked out from its rate), or an
/// error naming `what` when it is negative, not a number, or longer than a result can hold
/// (`u64` nanoseconds, 584 years).
pub(crate) fn run_time(
    input: &Input,
    line: Option<u64>,
    what: &str,
    secs: f64,
) -> Result<std::time::Duration, ImportError> {
    to_ns(secs, S)
        .map(std::time::Duration::from_nanos)
        .ok_or_else(|| input.err(line, format!("{what}: {secs} s is not a run time")))
}

/// Parses a field, or says which field of which line holds what.
pub(crate) fn field<T: std::str::FromStr>(
    input: &Input,
    line: Option<u64>,
    name: &str,
    text: &str,
) -> Result<T, ImportError> {
    text.trim()
        .parse()
        .map_err(|_| input.err(line, format!("{name}: expected a number, got {text:?}")))
}

/// A field holding a time in `unit_ns` units, as nanoseconds.
pub(crate) fn time_field(
    input: &Input,
    line: Option<u64>,
    name: &str,
    text: &str,
    unit_ns: f64,
) -> Result<u64, ImportError> {
    let value: f64 = field(input, line, name, text)?;
    to_ns(value, unit_ns)
        .ok_or_else(|| input.err(line, format!("{name}: {text:?} is not a usable time")))
}

/// A percentile as a percent, rounded so that keys like `99.6094` stay readable (the tools
/// print fractions such as 0.996094).
pub(crate) fn percent(p: f64) -> f64 {
    (p * 1e6).round() / 1e6
}

/// A percentile `p` the tool printed, rounded by [`percent`], or an error naming the field and
/// line when it is not one from 0 to 100 (a damaged file; no tool prints p150).
pub(crate) fn percentile(
    input: &Input,
    line: Option<u64>,
    name: &str,
    p: f64,
) -> Result<f64, ImportError> {
    if (0.0..=100.0).contains(&p) {
        // abs: "-0%" passes the range check, and -0 would be a key "-0".
        Ok(percent(p.abs()))
    } else {
        Err(input.err(
            line,
            format!("{name}: {p:?} is not a percentile from 0 to 100"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_with_units() {
        assert_eq!(duration_ns("10.25ms"), Some(10_250_000));
        assert_eq!(duration_ns("187.72us"), Some(187_720));
        assert_eq!(duration_ns(" 1.00s"), Some(1_000_000_000));
        assert_eq!(duration_ns("2.00m"), Some(120_000_000_000));
        assert_eq!(duration_ns("3µs"), Some(3_000));
        assert_eq!(duration_ns("12"), None, "a bare number has no unit");
        assert_eq!(duration_ns("abc"), None);
        assert_eq!(duration_ns("-1ms"), None);
    }

    #[test]
    fn percent_keys_stay_short() {
        assert_eq!(format!("{}", percent(0.996094 * 100.0)), "99.6094");
        assert_eq!(format!("{}", percent(99.9)), "99.9");
    }
}

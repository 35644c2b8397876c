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

/// An RFC 3339 time as Go writes it (`2026-11-27T00:26:33.74682449Z`, or with a `+01:00`
/// offset; up to nine fraction digits) as nanoseconds since the Unix epoch, or `None` when it
/// is not one or falls outside 1970 to 2554 (what `u64` nanoseconds hold).
pub(crate) fn rfc3339_ns(text: &str) -> Option<u64> {
    let t = text.trim();
    let (date, rest) = t.split_once(['T', 't'])?;
    let mut ymd = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, mo, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let zone_at = rest.rfind(['Z', 'z', '+', '-'])?;
    let (clock, zone) = rest.split_at(zone_at);
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, ""));
    let mut parts = hms.splitn(3, ':').map(|p| p.parse::<i64>().ok());
    let (h, mi, s) = (parts.next()??, parts.next()??, parts.next()??);
    // RFC 3339 years have four digits; anything else is no time (and would overflow).
    let valid = (0..=9999).contains(&y)
        && (1..=12).contains(&mo)
        && (1..=31).contains(&d)
        && (0..24).contains(&h)
        && (0..60).contains(&mi)
        && (0..61).contains(&s);
    if !valid || fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let nanos: i64 = format!("{fraction:0<9}").parse().ok()?;
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - zone_offset(zone)?;
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos as u64)
}

/// `Z` or `±hh:mm`, in seconds east of UTC.
fn zone_offset(zone: &str) -> Option<i64> {
    if zone.eq_ignore_ascii_case("z") {
        return Some(0);
    }
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let (h, m) = zone.get(1..)?.split_once(':')?;
    let (h, m): (i64, i64) = (h.parse().ok()?, m.parse().ok()?);
    ((0..24).contains(&h) && (0..60).contains(&m)).then_some(sign * (h * 3600 + m * 60))
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times() {
        assert_eq!(rfc3339_ns("1970-01-01T00:00:00Z"), Some(0));
        // `date -u -d 2026-11-27T00:26:33Z +%s` = 1795739193
        assert_eq!(
            rfc3339_ns("2026-11-27T00:26:33.74682449Z"),
            Some(1_795_739_193_746_824_490)
        );
        assert_eq!(
            rfc3339_ns("2026-11-27T01:26:33.5+01:00"),
            Some(1_795_739_193_500_000_000)
        );
        assert_eq!(
            rfc3339_ns("2024-02-29T23:59:59-00:30"),
            rfc3339_ns("2024-03-01T00:29:59Z")
        );
        for bad in [
            "",
            "2026-11-27",
            "2026-13-01T00:00:00Z",
            "2026-11-27T00:00:00",
            "1969-12-31T23:59:59Z",
            "2026-11-27T00:00:00.1234567890Z",
            "x026-11-27T00:00:00Z",
            "99999999999999-01-01T00:00:00Z",
            "2026-11-27T-9000000000000000:00:00Z",
            "2026-11-27T00:00:00+-999999999999:00",
        ] {
            assert_eq!(rfc3339_ns(bad), None, "{bad}");
        }
    }

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

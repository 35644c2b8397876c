//! Value parsers shared by subcommands: one line naming what is accepted.
use std::time::Duration;

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

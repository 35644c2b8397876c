//! The HdrHistogram interval log (`.hlog`): one compressed V2 histogram per interval and tag.
//!
//! Written line for line as the reference implementation's `HistogramLogWriter` writes it (format
//! version 1.3): optional comments, the format version, `StartTime` and `BaseTime` headers, the
//! legend, then `Tag=…,start,length,max,base64` lines. Interval timestamps are seconds since
//! `BaseTime`, which is the run's start, so the reference's `HistogramLogReader` and
//! `HistogramLogProcessor` place every interval at its offset into the run.
use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hdrhistogram::serialization::interval_log::Tag;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use sojourn_core::result::{decode_base64, RunResult};

use crate::error::ReportError;
use crate::javafmt::fixed;

/// The interval-log format version the reference writes.
pub const FORMAT_VERSION: &str = "1.3";

/// Tag of the response-time histograms in a result's log.
pub const TAG_RESPONSE: &str = "response";
/// Tag of the send-lag histograms in a result's log.
pub const TAG_SEND_LAG: &str = "send_lag";

/// What heads a log.
#[derive(Debug, Clone)]
pub struct HlogHeader {
    /// Comment lines (each gets a leading `#`).
    pub comments: Vec<String>,
    /// Wall-clock start of the run: both `StartTime` and `BaseTime`.
    pub start: SystemTime,
    /// The `Interval_Max` column is the histogram's max divided by this (1e6: ns → ms, as the
    /// reference does by default). The histograms themselves stay in recorded units.
    pub max_value_ratio: f64,
}

/// Writes an interval log to `W`, one histogram at a time.
pub struct HlogWriter<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    bytes: Vec<u8>,
    max_value_ratio: f64,
}

impl<W: Write> HlogWriter<W> {
    /// Writes the header and returns a writer for the intervals.
    pub fn begin(mut out: W, header: &HlogHeader) -> std::io::Result<Self> {
        for c in &header.comments {
            writeln!(out, "#{c}")?;
        }
        writeln!(out, "#[Histogram log format version {FORMAT_VERSION}]")?;
        let start = header.start.duration_since(UNIX_EPOCH).unwrap_or_default();
        let millis = start.as_millis() as u64;
        let secs = fixed(millis as f64 / 1000.0, 3);
        writeln!(
            out,
            "#[StartTime: {secs} (seconds since epoch), {}]",
            java_date(millis / 1000)
        )?;
        writeln!(out, "#[BaseTime: {secs} (seconds since epoch)]")?;
        writeln!(out, "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"")?;
        Ok(HlogWriter {
            out,
            serializer: V2DeflateSerializer::new(),
            bytes: Vec::new(),
            max_value_ratio: header.max_value_ratio,
        })
    }

    /// One interval: `start` is its offset from the run's start, `length` its duration.
    pub fn interval(
        &mut self,
        tag: &str,
        start: Duration,
        length: Duration,
        h: &Histogram<u64>,
    ) -> Result<(), ReportError> {
        let tag = Tag::new(tag).ok_or_else(|| {
            ReportError::Serialize(format!("tag {tag:?} has a comma, space or line break"))
        })?;
        self.bytes.clear();
        self.serializer
            .serialize(h, &mut self.bytes)
            .map_err(|e| ReportError::Serialize(format!("{e:?}")))?;
        let payload = base64::engine::general_purpose::STANDARD.encode(&self.bytes);
        writeln!(
            self.out,
            "Tag={},{},{},{},{payload}",
            tag.as_str(),
            fixed(start.as_secs_f64(), 3),
            fixed(length.as_secs_f64(), 3),
            fixed(h.max() as f64 / self.max_value_ratio, 3),
        )?;
        Ok(())
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// The header comments of a result's log.
fn result_comments(r: &RunResult, start_known: bool) -> Vec<String> {
    let mut out = vec![
        format!("[Logged with sojourn {}: run \"{}\" ({})]", r.tool.version, r.label, r.mode.label()),
        "[Histograms in nanoseconds; Interval_Max in milliseconds. Tags: response = done - intended, send_lag = sent - intended]".into(),
        "[Each request is in the interval in which it finished]".into(),
    ];
    let unfinished = r.counts.censored.saturating_add(r.counts.never_sent);
    if unfinished > 0 {
        out.push(format!(
            "[{unfinished} censored requests never finished, so they are in no interval (the result file has them)]"
        ));
    }
    if !start_known {
        out.push("[The wall-clock start of this run is not known; StartTime is the epoch]".into());
    }
    out
}

/// Writes the interval log of a result: per interval, a `response` and a `send_lag` histogram.
/// `start` is the wall-clock start of the run, if known.
pub fn write<W: Write>(out: W, r: &RunResult, start: Option<SystemTime>) -> Result<W, ReportError> {
    let header = HlogHeader {
        comments: result_comments(r, start.is_some()),
        start: start.unwrap_or(UNIX_EPOCH),
        max_value_ratio: 1e6,
    };
    let mut log = HlogWriter::begin(out, &header)?;
    for i in &r.intervals {
        let (at, length) = (
            Duration::from_nanos(i.start_ns),
            Duration::from_nanos(i.duration_ns),
        );
        for (tag, hdr) in [
            (TAG_RESPONSE, &i.response_hdr),
            (TAG_SEND_LAG, &i.send_lag_hdr),
        ] {
            let h = decode_base64(hdr).map_err(|source| ReportError::Histogram {
                what: format!(
                    "the {tag} histogram of the interval at {} s",
                    fixed(at.as_secs_f64(), 3)
                ),
                source,
            })?;
            log.interval(tag, at, length, &h)?;
        }
    }
    Ok(log.into_inner())
}

/// [`write()`] to a file.
pub fn write_file(
    path: &Path,
    r: &RunResult,
    start: Option<SystemTime>,
) -> Result<(), ReportError> {
    let file = std::fs::File::create(path).map_err(ReportError::io(path))?;
    let mut out = write(std::io::BufWriter::new(file), r, start)?;
    out.flush().map_err(ReportError::io(path))
}

/// Seconds since the epoch as Java's `Date.toString()` prints them in UTC:
/// `Tue Nov 14 22:13:20 UTC 2023`. Readers ignore it; people read it.
pub fn java_date(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let (year, month, day) = civil_from_days(days);
    let rem = secs % 86_400;
    format!(
        "{} {} {day:02} {:02}:{:02}:{:02} UTC {year}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Year, month (1–12) and day (1–31) of day `days` since 1970-01-01, in the proleptic
/// Gregorian calendar. Counts in 400-year eras that start on 1 March, so leap days fall last.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468; // days since 0000-03-01
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153; // month counted from March
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_print_like_java() {
        // Each row: what `new Date(secs * 1000).toString()` prints with user.timezone=UTC.
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(java_date(1_700_000_000), "Tue Nov 14 22:13:20 UTC 2023");
        assert_eq!(
            java_date(951_782_400),
            "Tue Feb 29 00:00:00 UTC 2000",
            "a leap day of a 400-year leap year"
        );
        assert_eq!(
            java_date(4_107_542_399),
            "Sun Feb 28 23:59:59 UTC 2100",
            "2100 is not a leap year"
        );
    }
}

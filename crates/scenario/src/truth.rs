//! The ground-truth log: what the server (or simulator) did with each request, on its own
//! clock, for client measurements to be checked against.
//!
//! CSV, one line per request to the system under test, in order of departure:
//!
//! ```text
//! index,arrival_ns,start_ns,departure_ns,due_ns,status,outcome
//! 0,0,0,10052301,10000000,200,ok
//! ```
//!
//! Times are nanoseconds since the scenario clock started (so they line up with the scenario's
//! `at`/`first`/`start`): `arrival` when the request head was read, `start` when it was admitted
//! to service, `departure` when the answer was handed to the connection, `due` when the scenario
//! says it should have left given its actual start (`departure - due` is the server's own
//! timing error). A request that was never in service (rejected, or given up while queued at
//! shutdown) has `start = departure`. Writers stream lines so memory stays bounded on long runs.
use std::fmt;
use std::io::{self, BufRead, Write};
use std::str::FromStr;
use std::time::Duration;

/// The CSV header line, without its newline.
pub const CSV_HEADER: &str = "index,arrival_ns,start_ns,departure_ns,due_ns,status,outcome";

/// What became of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Answered with the scenario's status (200 unless an `errors` fault picked it).
    Ok,
    /// Answered with an `errors` fault's status.
    Error,
    /// Answered 503 at once because the cap's queue was full.
    Rejected,
    /// Its connection was dropped by a `reset` fault; status is 0.
    Reset,
    /// The client went away before the answer was ready; the server finished the work anyway
    /// (a real server does not know either), so departure is when it would have answered.
    Abandoned,
    /// The server shut down while the request was still in its hands; departure is then.
    Shutdown,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Error => "error",
            Outcome::Rejected => "rejected",
            Outcome::Reset => "reset",
            Outcome::Abandoned => "abandoned",
            Outcome::Shutdown => "shutdown",
        }
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Outcome {
    type Err = TruthError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let all = [
            Outcome::Ok,
            Outcome::Error,
            Outcome::Rejected,
            Outcome::Reset,
            Outcome::Abandoned,
            Outcome::Shutdown,
        ];
        all.into_iter()
            .find(|o| o.name() == s)
            .ok_or_else(|| TruthError::Field {
                column: "outcome",
                got: s.to_owned(),
            })
    }
}

/// One request's life on the server's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TruthRecord {
    /// Order of arrival at the system under test, from 0.
    pub index: u64,
    pub arrival: Duration,
    pub start: Duration,
    pub departure: Duration,
    pub due: Duration,
    /// The HTTP status sent, or 0 when none was (reset, shutdown).
    pub status: u16,
    pub outcome: Outcome,
}

impl TruthRecord {
    /// Time in service, gate included: `departure - start`.
    pub fn service(&self) -> Duration {
        self.departure.saturating_sub(self.start)
    }

    /// Time in the admission queue: `start - arrival`.
    pub fn queued(&self) -> Duration {
        self.start.saturating_sub(self.arrival)
    }

    /// One CSV line, with its newline.
    pub fn write_csv(&self, w: &mut impl Write) -> io::Result<()> {
        writeln!(
            w,
            "{},{},{},{},{},{},{}",
            self.index,
            self.arrival.as_nanos(),
            self.start.as_nanos(),
            self.departure.as_nanos(),
            self.due.as_nanos(),
            self.status,
            self.outcome
        )
    }

    /// Parses one CSV line (without the header).
    pub fn parse_csv(line: &str) -> Result<TruthRecord, TruthError> {
        let cols: Vec<&str> = line.trim_end().split(',').collect();
        if cols.len() != 7 {
            return Err(TruthError::Columns { got: cols.len() });
        }
        let num = |i: usize, column: &'static str| {
            cols[i].parse::<u64>().map_err(|_| TruthError::Field {
                column,
                got: cols[i].to_owned(),
            })
        };
        let status = num(5, "status")?;
        Ok(TruthRecord {
            index: num(0, "index")?,
            arrival: Duration::from_nanos(num(1, "arrival_ns")?),
            start: Duration::from_nanos(num(2, "start_ns")?),
            departure: Duration::from_nanos(num(3, "departure_ns")?),
            due: Duration::from_nanos(num(4, "due_ns")?),
            status: u16::try_from(status).map_err(|_| TruthError::Field {
                column: "status",
                got: status.to_string(),
            })?,
            outcome: cols[6].parse()?,
        })
    }
}

/// A truth log that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TruthError {
    /// The first line is not [`CSV_HEADER`]: not a truth log, or another version of it.
    #[error("not a sojourn truth log: the header is {got:?}, expected {CSV_HEADER:?}")]
    Header { got: String },
    /// A line with the wrong number of columns: the file is truncated or not a truth log.
    #[error("expected 7 columns, got {got}")]
    Columns { got: usize },
    /// A column that does not parse.
    #[error("column {column}: cannot read {got:?}")]
    Field { column: &'static str, got: String },
    #[error("line {line}: {source}")]
    Line {
        line: usize,
        source: Box<TruthError>,
    },
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Reads a whole CSV truth log, header first.
pub fn read_csv(r: impl BufRead) -> Result<Vec<TruthRecord>, TruthError> {
    let mut lines = r.lines();
    let header = lines.next().transpose()?.unwrap_or_default();
    if header.trim_end() != CSV_HEADER {
        return Err(TruthError::Header { got: header });
    }
    let mut out = Vec::new();
    for (i, line) in lines.enumerate() {
        let line = line?;
        if line.is_empty() {
            continue;
        }
        let record = TruthRecord::parse_csv(&line).map_err(|e| TruthError::Line {
            line: i + 2,
            source: Box::new(e),
        })?;
        out.push(record);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_round_trips() {
        let r = TruthRecord {
            index: 7,
            arrival: Duration::from_nanos(1),
            start: Duration::from_nanos(2),
            departure: Duration::from_nanos(30_000_003),
            due: Duration::from_nanos(30_000_000),
            status: 503,
            outcome: Outcome::Rejected,
        };
        let mut buf = format!("{CSV_HEADER}\n").into_bytes();
        r.write_csv(&mut buf).unwrap();
        assert_eq!(read_csv(&buf[..]).unwrap(), vec![r]);
    }

    #[test]
    fn bad_lines_are_named() {
        let text = format!("{CSV_HEADER}\n1,2,3,4,5,200,ok\n1,2,x,4,5,200,ok\n");
        let err = read_csv(text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("start_ns"), "{err}");
        assert!(read_csv("a,b\n".as_bytes()).is_err());
    }
}

//! Other load tools, seen through sojourn's measurement model.
//!
//! [`import`] turns a peer tool's output files into a [`RunResult`], so `sojourn report` and
//! `sojourn compare` can put wrk, k6 or vegeta next to sojourn's own runs. Two depths:
//!
//! - **per request** (vegeta, hey, k6 and oha CSV, fortio's access log, h2load's log, a
//!   locustfile's requests log, ghz's JSON details): every request is
//!   replayed through [`sojourn_core::Recorder`] with the tool's own start time as its due time,
//!   so histograms and timelines are real measurements of what the tool did;
//! - **summary** (wrk and wrk2 text, ab, the JSON reports, locust, h2load's text): only the
//!   percentiles the tool printed (none, for h2load: only its min, max, mean and sd), converted
//!   to nanoseconds, and its totals. `hdr` fields stay empty.
//!
//! Whatever a tool cannot express or silently leaves out (k6's dropped iterations, wrk's
//! after-the-fact correction, hey's CSV omitting transport errors) goes into `import.notes`, and
//! dropped requests are counted as never sent, never lost.
//!
//! [`runners`] builds each tool's command line for a given rate, duration and pool.
#![forbid(unsafe_code)]

mod ab;
mod build;
mod error;
mod fortio;
mod ghz;
mod h2load;
mod hey;
mod input;
mod k6;
mod locust;
mod locust_requests;
mod oha;
mod parse;
pub mod runners;
mod vegeta;
mod wrk;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use error::ImportError;
use sojourn_core::{Mode, RunConfig, RunResult};

/// The peer tools sojourn can import and run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerTool {
    Wrk,
    Wrk2,
    Ab,
    Hey,
    Vegeta,
    K6,
    Oha,
    Fortio,
    Locust,
    H2load,
    /// The gRPC load tool: it speaks only gRPC, so `sojourn suite` (HTTP servers) does not run
    /// it.
    Ghz,
}

impl PeerTool {
    pub const ALL: [PeerTool; 11] = [
        PeerTool::Wrk,
        PeerTool::Wrk2,
        PeerTool::Ab,
        PeerTool::Hey,
        PeerTool::Vegeta,
        PeerTool::K6,
        PeerTool::Oha,
        PeerTool::Fortio,
        PeerTool::Locust,
        PeerTool::H2load,
        PeerTool::Ghz,
    ];

    /// The lowercase name, as on the command line and in result files.
    pub fn name(self) -> &'static str {
        match self {
            PeerTool::Wrk => "wrk",
            PeerTool::Wrk2 => "wrk2",
            PeerTool::Ab => "ab",
            PeerTool::Hey => "hey",
            PeerTool::Vegeta => "vegeta",
            PeerTool::K6 => "k6",
            PeerTool::Oha => "oha",
            PeerTool::Fortio => "fortio",
            PeerTool::Locust => "locust",
            PeerTool::H2load => "h2load",
            PeerTool::Ghz => "ghz",
        }
    }

    /// Whether the tool speaks HTTP (all but ghz, which speaks gRPC).
    pub fn speaks_http(self) -> bool {
        self != PeerTool::Ghz
    }
}

impl fmt::Display for PeerTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is not one of [`PeerTool::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown peer tool {0:?}; known: wrk, wrk2, ab, hey, vegeta, k6, oha, fortio, locust, h2load, \
     ghz"
)]
pub struct UnknownTool(pub String);

impl FromStr for PeerTool {
    type Err = UnknownTool;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        PeerTool::ALL
            .into_iter()
            .find(|t| t.name() == lower)
            .ok_or_else(|| UnknownTool(s.to_string()))
    }
}

/// What the caller knows about the run that the tool's files may not say.
#[derive(Debug, Clone)]
pub struct ImportContext {
    /// The label the run gets in reports.
    pub label: String,
    /// How the tool was driven: `Open` for rate-based executors, `Closed` for connection loops.
    pub mode: Mode,
    /// The tool's version, as it reported it (`wrk -v`, `k6 version`, …).
    pub version: String,
    /// What was asked for (rate, duration, connections). `interval_ns` sets the width of the
    /// rebuilt timeline; 0 means one second.
    pub config: RunConfig,
}

/// Reads a peer tool's output files into a result document.
///
/// Which files each tool takes (content decides, not the file name, unless said):
///
/// | tool | files |
/// |---|---|
/// | wrk, wrk2 | the text output (with `--latency`) |
/// | ab | the `-e` percentile CSV and/or the text output (both: counts from the text) |
/// | hey | the `-o csv` file (per request), and/or the text summary |
/// | vegeta | `vegeta encode --to csv` (per request) or `vegeta report -type=json` |
/// | k6 | `--out csv=` (per request) or `--summary-export` JSON |
/// | oha | `--output-format csv` (per request) and/or `--output-format json` (summary) |
/// | fortio | the `-access-log-file` JSON lines (per request) and/or the `-json` result |
/// | locust | the `--csv` `*_stats.csv`, optionally `*_failures.csv`; or one requests log (per request, per step: [`import_locust_requests`]) |
/// | h2load | the `--log-file` (per request) and/or the text summary (an empty log is one) |
/// | ghz | the `-O json` report (per call, from its `details`) |
pub fn import(
    tool: PeerTool,
    files: &[PathBuf],
    ctx: &ImportContext,
) -> Result<RunResult, ImportError> {
    if files.is_empty() {
        return Err(ImportError::Files {
            tool,
            message: "no files given".into(),
        });
    }
    // h2load writes an empty log when no stream closed; its summary then has the counts.
    let read = match tool {
        PeerTool::H2load => input::Input::read_maybe_empty,
        _ => input::Input::read,
    };
    let inputs = files
        .iter()
        .map(|p| read(p))
        .collect::<Result<Vec<_>, _>>()?;
    match tool {
        PeerTool::Wrk | PeerTool::Wrk2 => wrk::import(tool, &inputs, ctx),
        PeerTool::Ab => ab::import(&inputs, ctx),
        PeerTool::Hey => hey::import(&inputs, ctx),
        PeerTool::Vegeta => vegeta::import(&inputs, ctx),
        PeerTool::K6 => k6::import(&inputs, ctx),
        PeerTool::Oha => oha::import(&inputs, ctx),
        PeerTool::Fortio => fortio::import(&inputs, ctx),
        PeerTool::Locust => locust::import(&inputs, ctx),
        PeerTool::H2load => h2load::import(&inputs, ctx),
        PeerTool::Ghz => ghz::import(&inputs, ctx),
    }
}

/// Reads the JSON lines a locustfile wrote from Locust's `events.request` hook (one per request:
/// `name`, `start` in Unix seconds, `response_time` in ms, `status`, `exception`) into a result
/// with one `steps` entry per request name (`JOURNEY/STEP`, as sojourn labels a journey's steps),
/// in the order of each name's first send.
///
/// Every request is replayed through [`sojourn_core::Recorder`], due at its send: that is all
/// Locust knows, so its response time is Locust's own, from the send, and `import.notes` says so.
/// A request Locust counted failed is failed (class from its status, else from its exception's
/// words). Every line is a request: nothing is dropped, and a line that is not one is an
/// [`ImportError::Format`] naming the file and line. `import(PeerTool::Locust, …)` given such a
/// log reads it the same way.
pub fn import_locust_requests(path: &Path, ctx: &ImportContext) -> Result<RunResult, ImportError> {
    locust_requests::import(&input::Input::read(path)?, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for tool in PeerTool::ALL {
            assert_eq!(tool.to_string().parse::<PeerTool>().unwrap(), tool);
        }
        assert_eq!("K6".parse::<PeerTool>().unwrap(), PeerTool::K6);
        let err = "jmeter".parse::<PeerTool>().unwrap_err();
        assert!(err.to_string().contains("jmeter"), "{err}");
    }
}

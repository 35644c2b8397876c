//! Errors of the report crate. Each variant's doc says how to fix it.
use std::path::PathBuf;

use sojourn_core::result::HdrDecodeError;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read or written: check the path exists and is writable.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Writing to an already-open output failed (disk full, closed pipe).
    #[error("writing failed: {0}")]
    Write(#[from] std::io::Error),
    /// A histogram carried in a result file is damaged: regenerate the result file.
    #[error("{what}: {source}")]
    Histogram {
        what: String,
        #[source]
        source: HdrDecodeError,
    },
    /// A histogram could not be serialized; this is a bug in sojourn.
    #[error("serializing a histogram failed: {0}")]
    Serialize(String),
    /// The file is not a sojourn result: pass the JSON file that `sojourn run` or `sim` wrote.
    #[error("{path}: not a sojourn result file ({reason})")]
    NotAResult { path: PathBuf, reason: String },
    /// The file is not a samples file sojourn wrote: pass the file given to `run --samples`.
    #[error("{path}: not a sojourn samples file ({reason})")]
    NotSamples { path: PathBuf, reason: String },
    /// The result was written by another version of sojourn: regenerate it, or use that version.
    #[error("{path}: schema {found:?} is not supported (this sojourn reads {expected})")]
    Schema {
        path: PathBuf,
        found: String,
        expected: String,
    },
    /// `-` (standard input) was given for more than one document: standard input holds one.
    /// Save the others to files and pass their paths.
    #[error("- (standard input) is given {given} times: it holds one document; save the others to files and pass their paths")]
    StdinTwice { given: usize },
    /// The gate's verdicts could not be written as JUnit XML; this is a bug in sojourn.
    #[error("serializing the verdicts as JUnit XML failed: {0}")]
    Junit(#[from] quick_junit::SerializeError),
    /// A chart could not be drawn; this is a bug in sojourn.
    #[error("drawing the {chart} chart failed: {reason}")]
    Plot { chart: &'static str, reason: String },
}

impl ReportError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ReportError {
        let path = path.into();
        move |source| ReportError::Io { path, source }
    }
}

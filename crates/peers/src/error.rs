//! Why an import failed. Every message names the file, and the line or field when known, so a
//! user can open the file and see what is wrong.
use std::path::{Path, PathBuf};

use crate::PeerTool;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read at all.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is empty: the tool was probably killed before it wrote anything.
    #[error("{}: the file is empty", path.display())]
    Empty { path: PathBuf },
    /// A line or field does not have the tool's format.
    #[error("{}{}: {message}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
    Format {
        path: PathBuf,
        line: Option<u64>,
        message: String,
    },
    /// Something the tool always writes is not there: the output is truncated or not this tool's.
    #[error("{}: no {what} found; is this complete {tool} output?", path.display())]
    Missing {
        path: PathBuf,
        tool: PeerTool,
        what: String,
    },
    /// The files given do not fit what the importer needs.
    #[error("{tool}: {message}")]
    Files { tool: PeerTool, message: String },
}

impl ImportError {
    pub(crate) fn format(path: &Path, line: Option<u64>, message: impl Into<String>) -> Self {
        ImportError::Format {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    pub(crate) fn missing(path: &Path, tool: PeerTool, what: impl Into<String>) -> Self {
        ImportError::Missing {
            path: path.to_path_buf(),
            tool,
            what: what.into(),
        }
    }
}

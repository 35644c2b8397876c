//! One input file, read whole (tool outputs are small), and the CSV reading they share.
use std::path::{Path, PathBuf};

use crate::{ImportError, PeerTool};

pub(crate) struct Input {
    pub path: PathBuf,
    pub text: String,
}

impl Input {
    pub fn read(path: &Path) -> Result<Input, ImportError> {
        let input = Input::read_maybe_empty(path)?;
        if input.text.trim().is_empty() {
            return Err(ImportError::Empty { path: input.path });
        }
        Ok(input)
    }

    /// As [`Input::read`], but an empty file is an input too: the importer decides what it
    /// means.
    pub fn read_maybe_empty(path: &Path) -> Result<Input, ImportError> {
        let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            ImportError::format(
                path,
                None,
                format!(
                    "not text (invalid UTF-8 at byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        Ok(Input {
            path: path.to_path_buf(),
            text,
        })
    }

    /// The first line that is not blank.
    pub fn first_line(&self) -> &str {
        self.text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
    }

    /// Looks like a JSON document (object or array).
    pub fn is_json(&self) -> bool {
        self.text.trim_start().starts_with(['{', '['])
    }

    pub fn err(&self, line: Option<u64>, message: impl Into<String>) -> ImportError {
        ImportError::format(&self.path, line, message)
    }

    pub fn missing(&self, tool: PeerTool, what: impl Into<String>) -> ImportError {
        ImportError::missing(&self.path, tool, what)
    }

    /// Parses a JSON document, naming the line and column of any error.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, ImportError> {
        serde_json::from_str(&self.text).map_err(|e| {
            self.err(
                Some(e.line() as u64),
                format!("invalid JSON (column {}): {e}", e.column()),
            )
        })
    }

    /// The CSV records with their line numbers, and the header. Every row must have the
    /// header's number of fields: a short row means a truncated or foreign file.
    pub fn csv(&self) -> Result<Csv, ImportError> {
        self.csv_with(true)
    }

    /// As [`Input::csv`]; without a header row (vegeta's CSV has none) the header is empty and
    /// every row must have as many fields as the first.
    pub fn csv_with(&self, has_header: bool) -> Result<Csv, ImportError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(has_header)
            .from_reader(self.text.as_bytes());
        let header = if has_header {
            let h = reader.headers().map_err(|e| self.csv_err(&e))?;
            h.iter().map(|h| h.trim().to_string()).collect()
        } else {
            Vec::new()
        };
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| self.csv_err(&e))?;
            let line = record.position().map_or(0, |p| p.line());
            rows.push((line, record));
        }
        Ok(Csv { header, rows })
    }

    fn csv_err(&self, e: &csv::Error) -> ImportError {
        let line = e.position().map(|p| p.line());
        let message = match e.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => {
                format!(
                    "{len} fields where earlier rows have {expected_len}: truncated or not this \
                 tool's CSV"
                )
            }
            _ => format!("unreadable CSV: {e}"),
        };
        self.err(line, message)
    }
}

pub(crate) struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<(u64, csv::StringRecord)>,
}

impl Csv {
    /// The index of a named column, or an error naming the file, the column and what is there.
    pub fn column(&self, input: &Input, tool: PeerTool, name: &str) -> Result<usize, ImportError> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            input.missing(
                tool,
                format!("column {name:?} (header is {:?})", self.header.join(",")),
            )
        })
    }
}

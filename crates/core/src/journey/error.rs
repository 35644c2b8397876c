//! A problem with a journey file, as one line: `FILE:LINE: problem; how to fix it`.
use std::fmt;
use std::path::{Path, PathBuf};

/// What kind of problem a [`JourneyError`] is; each says how to fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JourneyErrorKind {
    /// The file cannot be read or is not UTF-8: check the path and save it as UTF-8.
    Unreadable,
    /// Not valid TOML, or a value of the wrong type (a string where a number goes): fix the
    /// line as the message says.
    Syntax,
    /// A key the format does not have: fix its spelling (docs/journeys.md lists the keys).
    UnknownKey,
    /// No journeys, or a journey without steps: write at least one `[[journey]]` with one
    /// `[[journey.step]]`.
    Empty,
    /// A journey or step name that is empty, holds `/`, or is given twice.
    Name,
    /// A weight below 1 or above the largest sum of weights.
    Weight,
    /// A method HTTP does not have: write one in capitals (GET, POST, …).
    Method,
    /// A URL that does not start with `http://host:port` written out, a relative URL without
    /// `base_url`, or steps for more than one origin.
    Url,
    /// A header name that is not an HTTP token, or a value with a line break.
    Header,
    /// A body `@file` that cannot be read.
    Body,
    /// A think time that is not a duration, a range or `exp(mean)`.
    Think,
    /// An `expect.status` that is not a status (100 to 599) or a class (`2xx`).
    Status,
    /// A `repeat` below 1 or above the limit, or an `on_error` other than `fail`/`continue`.
    Value,
    /// A template that does not parse: an unclosed `${`, an unknown hole.
    Template,
    /// A template names a variable no step of its journey extracts.
    UnknownVariable,
    /// A template names a variable that only the same step or a later one extracts.
    NotYetExtracted,
    /// An `extract` with no source or several, or a variable name that is not an identifier.
    Extract,
    /// A JSON pointer that is neither empty nor starts with `/` (RFC 6901).
    Pointer,
    /// A regex that does not compile, or has no such capture group.
    Regex,
    /// The data file is missing, unreadable, empty or malformed, or a template uses
    /// `${row.…}` without a data file.
    Data,
    /// A template names a column the data file does not have.
    Column,
    /// `unique` rows would run out before the journeys do.
    RowsRunOut,
    /// More steps in the file than a run reports on.
    TooManySteps,
}

/// A problem with a journey file (or its data file): `FILE:LINE: problem`, or `FILE: problem`
/// when it is about the whole file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct JourneyError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub kind: JourneyErrorKind,
    /// What is wrong, in plain words, with how to fix it.
    pub problem: String,
}

impl fmt::Display for JourneyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match self.line {
            Some(line) => write!(f, "{file}:{line}: {}", self.problem),
            None => write!(f, "{file}: {}", self.problem),
        }
    }
}

impl JourneyError {
    pub(super) fn new(
        file: &Path,
        line: Option<usize>,
        kind: JourneyErrorKind,
        problem: impl Into<String>,
    ) -> JourneyError {
        JourneyError {
            file: file.to_path_buf(),
            line,
            kind,
            problem: problem.into(),
        }
    }
}

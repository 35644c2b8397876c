//! Why a scenario could not be built. Every message names the field (`faults[1].every`,
//! `hiccup.at`) so the user can find it, and says what would have been accepted.
use std::path::PathBuf;

/// A scenario that could not be parsed, validated or found.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// A field holds a value of the wrong form or out of range. Fix: give a value of the form
    /// the message shows.
    #[error("{path}: expected {expected}, got {got}")]
    Field {
        path: String,
        expected: String,
        got: String,
    },
    /// A required field is absent. Fix: add it, in the form the message shows.
    #[error("{path}: missing; expected {expected}")]
    Missing { path: String, expected: String },
    /// A field that this table does not know (often a typo). Fix: use one of the accepted names.
    #[error("{path}: unknown field; accepted: {accepted}")]
    UnknownField { path: String, accepted: String },
    /// Neither a built-in name nor a readable file. Fix: pick a built-in or check the path.
    #[error(
        "unknown scenario {name:?}; built-ins are {builtins}, or give the path of a TOML file"
    )]
    UnknownScenario { name: String, builtins: String },
    /// A `--set` override that is not `NAME.PARAM=VALUE`. Fix: write it like `hiccup.at=5s`.
    #[error("{given:?}: expected NAME.PARAM=VALUE, like hiccup.at=5s")]
    BadOverride { given: String },
    /// Overrides were given for a scenario read from a file. Fix: edit the file instead.
    #[error("{given:?}: overrides apply to built-in scenarios; edit the scenario file instead")]
    OverrideOnFile { given: String },
    /// The file is not valid TOML. Fix: the message points at the line.
    #[error("not valid TOML: {0}")]
    Syntax(#[from] toml::de::Error),
    /// The scenario file could not be read.
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ScenarioError {
    pub(crate) fn field(
        path: impl Into<String>,
        expected: impl Into<String>,
        got: impl Into<String>,
    ) -> Self {
        ScenarioError::Field {
            path: path.into(),
            expected: expected.into(),
            got: got.into(),
        }
    }
}

//! User journeys: short sequences of dependent steps (log in, take the token, list, open one,
//! think), read from a TOML file (`docs/journeys.md`) and checked whole before any run.
//!
//! This module is the file and its pure parts: the format and its checks ([`JourneyFile`]),
//! templates ([`Template`]), data rows ([`Rows`]), the checks and extractions on an answer
//! ([`Expect`], [`Extract`], [`CookieJar`]) and the choices of who does what when. Every choice
//! is a function of the journey's index and the run's seed alone — which journey journey *i*
//! runs ([`JourneyFile::journey_of`]), which data row it takes ([`JourneyFile::row_of`]), what
//! `${random.int(A,B)}` gives it and how long each step thinks ([`Think::draw`]) — so the shards
//! of a distributed run and the simulator agree on every journey without talking.
//!
//! Every problem with a file is one line, `FILE:LINE: problem; how to fix it` ([`JourneyError`]).
mod choice;
mod data;
mod error;
mod extract;
mod file;
mod model;
mod template;
mod value;

pub use choice::Think;
pub use data::{unique_rows_suffice, DataOrder, Row, Rows};
pub use error::{JourneyError, JourneyErrorKind};
pub use extract::{
    CheckFailure, CookieJar, Expect, Extract, ExtractFailure, ExtractWhy, Source, StatusSet,
};
pub use model::{Journey, JourneyFile, OnError, Step, MAX_REPEAT, MAX_STEPS};
pub use template::{Context, Template, TemplateError, Vars};

#[cfg(test)]
mod tests;

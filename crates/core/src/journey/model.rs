//! The checked journey file and the choices read from it.
use std::path::{Path, PathBuf};

use url::Url;

use super::choice;
use super::choice::Think;
use super::data::Rows;
use super::extract::{Expect, Extract};
use super::template::Template;

/// The most steps one file may hold, over all its journeys: each step is a label with its own
/// histograms, as each label of a targets file is.
pub const MAX_STEPS: usize = crate::targets::MAX_LABELS;

/// The largest `repeat` of one step.
pub const MAX_REPEAT: u32 = 10_000;

/// What a journey does when a step fails its check, its extraction or its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// The journey ends, failed at this step (`on_error = "fail"`, the default).
    #[default]
    Fail,
    /// The failure is counted and the journey goes on to the next step (`on_error =
    /// "continue"`); a variable the step failed to extract keeps its earlier value, or none.
    Continue,
}

/// One request of a journey.
#[derive(Debug, Clone)]
pub struct Step {
    /// Unique within its journey; its label is `JOURNEY/STEP`.
    pub name: String,
    /// One of [`crate::targets::METHODS`].
    pub method: String,
    /// Begins with `http://host:port` or `https://host:port` written out (the origin every
    /// step shares, [`JourneyFile::origin`]); holes may follow in the path and query.
    pub url: Template,
    /// In file order; names are HTTP tokens.
    pub headers: Vec<(String, Template)>,
    pub body: Option<Template>,
    /// The pause after each of the step's answers (repeats included), before the next send.
    pub think: Think,
    pub expect: Expect,
    /// Applied in file order, after the answer passes `expect`.
    pub extract: Vec<Extract>,
    /// How many times the step is sent in a row; at least 1.
    pub repeat: u32,
    pub on_error: OnError,
}

/// A named sequence of steps with a weight.
#[derive(Debug, Clone)]
pub struct Journey {
    pub name: String,
    /// Journey *i* runs this journey with probability weight / sum of the weights.
    pub weight: u32,
    pub steps: Vec<Step>,
    pub(super) first_label: usize,
}

impl Journey {
    /// The index of this journey's first step in [`JourneyFile::step_labels`]; its step `k`
    /// is label `first_label() + k`.
    pub fn first_label(&self) -> usize {
        self.first_label
    }
}

/// A journey file, read and checked: every template parses, names only what exists, and every
/// variable is extracted by an earlier step of its journey.
#[derive(Debug, Clone)]
pub struct JourneyFile {
    path: PathBuf,
    journeys: Vec<Journey>,
    rows: Option<Rows>,
    /// `cumulative[k]`: the weights of journeys `0..=k`.
    cumulative: Vec<u64>,
    origin: Url,
}

impl JourneyFile {
    pub(super) fn assemble(
        path: &Path,
        mut journeys: Vec<Journey>,
        rows: Option<Rows>,
        origin: Url,
    ) -> JourneyFile {
        let mut next_label = 0;
        for journey in &mut journeys {
            journey.first_label = next_label;
            next_label += journey.steps.len();
        }
        let cumulative = journeys
            .iter()
            .scan(0u64, |sum, j| {
                *sum += u64::from(j.weight);
                Some(*sum)
            })
            .collect();
        JourneyFile {
            path: path.to_path_buf(),
            journeys,
            rows,
            cumulative,
            origin,
        }
    }

    pub fn journeys(&self) -> &[Journey] {
        &self.journeys
    }

    /// Which journey journey `index` runs: a seeded draw by weight.
    pub fn journey_of(&self, index: u64, seed: u64) -> usize {
        choice::pick_weighted(&self.cumulative, index, seed)
    }

    /// Which data row journey `index` takes; `None` without a data file (or, for `unique`
    /// order, past the last row: see [`unique_rows_suffice`]).
    pub fn row_of(&self, index: u64, seed: u64) -> Option<usize> {
        self.rows.as_ref()?.row_of(index, seed)
    }

    pub fn rows(&self) -> Option<&Rows> {
        self.rows.as_ref()
    }

    /// One label per step of every journey, in file order: `JOURNEY/STEP`.
    pub fn step_labels(&self) -> Vec<String> {
        self.journeys
            .iter()
            .flat_map(|j| {
                j.steps
                    .iter()
                    .map(move |s| format!("{}/{}", j.name, s.name))
            })
            .collect()
    }

    /// Scheme, host and port that every step's URL begins with.
    pub fn origin(&self) -> &Url {
        &self.origin
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The proportion of journeys journey `k` is expected to take: its weight over the sum.
    pub fn share(&self, k: usize) -> f64 {
        let total = *self.cumulative.last().expect("at least one journey");
        f64::from(self.journeys[k].weight) / total as f64
    }
}

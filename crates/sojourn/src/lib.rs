//! Open-loop benchmarks of in-process code.
//!
//! Criterion and JMH run a closed loop: call, wait, record, call again. When the code under
//! test stalls (a lock held long, a pause, a full queue), the loop stalls with it, the calls a
//! real workload would have made meanwhile are never made, and the tail looks clean. sojourn
//! calls your function on a schedule that ignores how long calls take, and measures every call
//! from the moment it was **due**:
//!
//! ```
//! use std::time::Duration;
//!
//! let result = sojourn::OpenLoop::at(2_000.0)
//!     .for_duration(Duration::from_millis(200))
//!     .run(|| async { std::hint::black_box(21 * 2); })?;
//! assert_eq!(result.counts.scheduled, 400);
//! assert_eq!(result.counts.completed, 400);
//! println!("p99 from due: {:?} ns", result.histograms.response.percentiles.get(99.0));
//! # Ok::<(), sojourn::Error>(())
//! ```
//!
//! Every run returns the same [`RunResult`] that `sojourn run` writes: three histograms
//! (**response** from the due time, **service** from the call, **send lag** between them), the
//! counts (completed, failed, censored, never called), the generator's self-check, the
//! schedule's conformance and confidence intervals. [`write_json`], [`write_html`],
//! [`report::hgrm`] and [`report::hlog`] write it as `sojourn report`, HdrHistogram tools
//! and a browser read it; [`report::output`] has every format behind one trait.
//!
//! - [`OpenLoop`]: calls due on a schedule (`.run` for async code, `.run_blocking` for
//!   synchronous code on a pool of threads; `.shard` for one share of it).
//! - [`ClosedLoop`]: the labelled closed loop, for comparison, unpaced or paced.
//! - [`sweep`]: judge a run at its rate, search for the rate where the code falls behind, and
//!   sweep an HTTP target step by step ([`sweep::HttpSweep`]).
//! - [`report::output`]: every format a result is written in, behind one trait.
//! - [`merge_files`]: the shards of one plan, run apart, as one result.
//!
//! What `sojourn` does to an HTTP service is here too, as functions of typed settings:
//!
//! - [`compare`]: the closed and the open loop at once against one target
//!   ([`compare::measure`] returns both results).
//! - [`spec`] and [`plan_file`]: a run described as [`RunSettings`] (or a TOML plan file),
//!   checked by [`validate`] into a [`RunSpec`]; [`execute::run_spec`] runs it with
//!   [`execute::Sinks`] watching.
//! - [`embedded`]: a pathology server inside this process on a free loopback port (its
//!   scenario by name from [`scenario_arg`]), a target for tests and examples.
//! - [`demo`], [`suite`], [`sim`], [`serve`], [`diff`]: the other commands, each a `run`
//!   function of its settings.
//!
//! `docs/library.md` says when to use the library rather than `sojourn run`.
//!
//! # Writing the result
//!
//! Each format is an [`Output`](report::output::Output): choose them before a run, write each
//! after it. `sojourn report`, `diff` and `merge` read the JSON document; HdrHistogram's tools
//! read the `.hgrm` files.
//!
//! ```
//! use std::path::PathBuf;
//! use std::time::Duration;
//! use sojourn::report::output::{Hgrm, Json, Output};
//!
//! let dir = tempfile::tempdir()?;
//! let outputs: Vec<(Box<dyn Output>, PathBuf)> = vec![
//!     (Box::new(Json), dir.path().join("run.json")),
//!     (Box::new(Hgrm), dir.path().join("run")), // a prefix: one file per histogram
//! ];
//! let result = sojourn::OpenLoop::at(500.0)
//!     .for_duration(Duration::from_millis(200))
//!     .run(|| async {})?;
//! let mut written = Vec::new();
//! for (output, path) in &outputs {
//!     written.extend(output.write(&result, path)?);
//! }
//! let names: Vec<_> = written.iter().map(|p| p.file_name().unwrap().to_owned()).collect();
//! assert_eq!(names, ["run.json", "run.response.hgrm", "run.service.hgrm", "run.send_lag.hgrm"]);
//! // The document reads back as the run itself, every call accounted for.
//! let back = sojourn::report::load::load_result(&written[0])?;
//! assert_eq!((back.counts.scheduled, back.counts.completed), (100, 100));
//! // The response histogram holds every call.
//! let hgrm = std::fs::read_to_string(&written[1])?;
//! let max = hgrm.lines().find(|l| l.starts_with("#[Max")).expect("the footer");
//! assert_eq!(max.trim_end_matches(']').rsplit('=').next().map(str::trim), Some("100"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Searching for the rate
//!
//! [`sweep::evaluate`] judges a run at its rate as `sojourn sweep` judges a step (OK,
//! SATURATED, GENERATOR-BOUND or POOL-BOUND), and [`sweep::Search`] brackets the rate where the
//! code falls behind. Here one thread that takes 5 ms a call carries 200 calls a second:
//!
//! ```
//! use std::time::Duration;
//! use sojourn::sweep::{evaluate, Probe, Search, Status, StepRules};
//! use sojourn::Rate;
//!
//! let step = Duration::from_millis(600);
//! let rules = StepRules::new(Duration::from_millis(150), step);
//! let search = Search {
//!     from: Rate::per_second(50.0).unwrap(),
//!     to: Rate::per_second(400.0).unwrap(),
//!     resolution: 100.0,
//!     max_probes: 4,
//! };
//! let mut statuses = Vec::new();
//! let outcome = search
//!     .run(|rate| {
//!         let result = sojourn::OpenLoop::at(rate.get())
//!             .for_duration(step)
//!             .interval(Duration::from_millis(50)) // a step is judged interval by interval
//!             .run_blocking(1, || std::thread::sleep(Duration::from_millis(5)))?;
//!         let judged = evaluate(&result, rate, &rules, &[]).expect("its own histograms");
//!         statuses.push((rate.get(), judged.status));
//!         Ok::<Probe, sojourn::Error>(judged.probe())
//!     })?;
//! // The code never slows down; one thread is the limit: past 200 calls a second every call
//! // waits for it (POOL-BOUND), so the search stops there and names no cliff of the code's.
//! println!("{statuses:?}");
//! assert_eq!(outcome.bracket.failing, None);
//! assert!(outcome.stopped_at.is_some());
//! assert!(statuses.iter().all(|&(_, s)| s != Status::Saturated));
//! # Ok::<(), sojourn::Error>(())
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

// Each module's line is its summary in the crate's index; the empty `///` after it keeps the
// module's own documentation a paragraph of its own rather than part of that summary.
mod bad_input;
mod call;
/// Both loops at once against one HTTP target ([`compare::measure`]): `sojourn compare`.
///
pub mod compare;
/// The program a run starts as its control hiccup meter, to measure the machine's lateness.
///
pub mod control;
/// `--dashboard`: a live web page of the run that becomes its report.
///
pub mod dashboard;
/// Every default of a run, stated once.
///
pub mod defaults;
/// A closed loop, an open loop and the model against a pathology server: `sojourn demo`.
///
pub mod demo;
/// Whether the tail changed between two result documents, beyond chance: `sojourn diff`.
///
pub mod diff;
/// A pathology server inside this process on a free loopback port, to run against.
///
pub mod embedded;
/// Runs a spec while live sinks watch it; Ctrl-C and SIGTERM stop it, losing nothing.
///
pub mod execute;
/// Results judged against objectives (`--slo`): the verdict table and JUnit XML.
///
pub mod gate;
/// gRPC targets (`grpc://`): the call's flags checked into the call the run sends.
///
pub mod grpc;
/// A targets file of gRPC calls (`--targets` beside a `grpc://` server), read and checked.
///
pub mod grpc_targets;
/// A journey file, run: the engine's journey script over a checked file (`--journey`).
///
pub mod journeys;
/// A running run as its watchers see it: live counters and the last interval.
///
pub mod live;
/// The `--slo` objectives judged while the run goes, for the dashboard.
///
pub mod live_slo;
mod load;
mod merge;
/// A run's live figures as OpenMetrics text for Prometheus (`--metrics-listen`).
///
pub mod metrics;
/// The simulator's answer for an engine plan against a scenario, and the model's sweep.
///
pub mod model;
/// The CLI's extra files of a run; a library writes through [`report::output`].
///
pub mod outputs;
/// The value parsers every front door shares: one line naming what is accepted.
///
pub mod parse;
/// Another load tool run against an embedded server, and its output imported.
///
pub mod peer_run;
/// A run described in a TOML plan file, applied onto [`RunSettings`].
///
pub mod plan_file;
mod reach;
/// `--repeat N`: independent repetitions of one run (or simulation) as one document, with a
/// between-run interval for every percentile: [`repeat::simulate_repeated`],
/// [`repeat::run_repeated`].
///
pub mod repeat;
/// A built-in scenario by name, or a scenario file, with `NAME.PARAM=VALUE` overrides.
///
pub mod scenario_arg;
/// A scenario served over HTTP for any tool to measure: `sojourn serve`.
///
pub mod serve;
/// A run as a person describes it, before it is checked ([`validate`]).
///
pub mod settings;
/// The seeds' side-by-side table of a closed and an open loop, and its verdict.
///
pub mod side_by_side;
/// Clients against a scenario in virtual time, with the same outputs as a run: `sojourn sim`.
///
pub mod sim;
/// The typed run spec: [`RunSettings`] checked by [`validate`] into a [`RunSpec`].
///
pub mod spec;
/// Every scenario against sojourn, the model and each installed peer tool: `sojourn suite`.
///
pub mod suite;
/// Judge a run at its rate, search for where the code falls behind, sweep HTTP targets.
///
pub mod sweep;
/// What a run sends (one URL or a targets file) and over which protocol.
///
pub mod transport;

use std::path::Path;

use report::output::Output as _;

pub use bad_input::{is_bad_input, BadInput};
pub use call::CallResult;
pub use load::{ClosedLoop, OpenLoop};
pub use merge::merge_files;
pub use sojourn_core::{FailureClass, Mode, Rate, RunResult};
pub use sojourn_report as report;
pub use spec::{validate, RunSettings, RunSpec};

/// The README's Rust examples (gathered by `build.rs`), compiled by `cargo test --doc` so that
/// they stay true to the API.
#[cfg(doctest)]
#[doc = include_str!(concat!(env!("OUT_DIR"), "/readme_examples.md"))]
mod readme_examples {}

/// `docs/library.md`'s examples, compiled by `cargo test --doc` likewise.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
mod library_md {}

/// Why a run could not start or its results could not be written.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The rate is not a positive, finite number of calls per second.
    #[error("rate: {0} is not a positive number of calls per second")]
    Rate(f64),
    /// A count that must be at least one was zero.
    #[error("{0}: must be at least 1")]
    Zero(&'static str),
    /// The schedule cannot be built (a ramp needs a duration, not a count).
    #[error("schedule: {0}")]
    Schedule(#[from] sojourn_core::schedule::ScheduleError),
    /// The shard is not one of the schedule's: give an index from 0 to count − 1.
    #[error("shard: {0}")]
    Shard(#[from] sojourn_core::shard::ShardError),
    /// The operating system refused threads, timers or files.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A report could not be rendered or written.
    #[error("{0}")]
    Report(#[from] sojourn_report::ReportError),
}

/// Writes `result` as the JSON document `sojourn run --json` writes (`sojourn report`,
/// `sojourn diff` and `sojourn merge` read it).
///
/// ```
/// # let result = sojourn::OpenLoop::at(100.0)
/// #     .for_duration(std::time::Duration::from_millis(50))
/// #     .run(|| async {})?;
/// let dir = tempfile::tempdir()?;
/// sojourn::write_json(&dir.path().join("run.json"), &result)?;
/// # Ok::<(), sojourn::Error>(())
/// ```
pub fn write_json(path: &Path, result: &RunResult) -> Result<(), Error> {
    report::output::Json.write(result, path)?;
    Ok(())
}

/// Writes one self-contained HTML report of `results`, titled `title`: the same page
/// `sojourn report` renders, with every run's percentile spectrum and timeline.
///
/// ```
/// # let result = sojourn::OpenLoop::at(100.0)
/// #     .for_duration(std::time::Duration::from_millis(50))
/// #     .run(|| async {})?;
/// let dir = tempfile::tempdir()?;
/// sojourn::write_html(&dir.path().join("report.html"), &[&result], "in-process")?;
/// # Ok::<(), sojourn::Error>(())
/// ```
pub fn write_html(path: &Path, results: &[&RunResult], title: &str) -> Result<(), Error> {
    let runs: Vec<report::html::ReportRun> = results
        .iter()
        .map(|r| report::html::ReportRun {
            source: r.label.clone(),
            result: (*r).clone(),
            samples: Vec::new(),
        })
        .collect();
    let page = report::output::Html {
        title: Some(title),
        ..Default::default()
    };
    page.write(&runs[..], path)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    /// Every Rust example of the README reaches the doc tests whole: as many blocks, and each
    /// one's lines as written.
    #[test]
    fn every_rust_example_of_the_readme_is_compiled() {
        let readme = include_str!("../../../README.md");
        let gathered = include_str!(concat!(env!("OUT_DIR"), "/readme_examples.md"));
        let opening = |text: &str| {
            text.lines()
                .filter(|l| l.trim_start().starts_with("```rust"))
                .count()
        };
        assert!(opening(readme) >= 1, "the README shows the library");
        assert_eq!(opening(gathered), opening(readme));
        for line in gathered.lines().filter(|l| !l.is_empty()) {
            assert!(readme.contains(line), "{line:?} is not the README's");
        }
        assert!(gathered.contains("fn main() -> Result<(), sojourn::Error>"));
    }
}

//! Every file format a finished run is written in, behind one trait, [`Output`]: the result
//! document ([`Json`]), HdrHistogram's percentile distribution ([`Hgrm`]) and interval log
//! ([`Hlog`]), the HTML report ([`Html`]), the SLO gate's JUnit XML ([`Junit`]) and the final
//! figures as OpenMetrics text ([`OpenMetrics`]). A new format is a module of its own and an
//! implementation here.
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use sojourn_core::RunResult;

use crate::error::ReportError;
use crate::gate::Gated;
use crate::html::{HtmlOptions, ReportRun};

/// One way to write runs down. `Runs` is what it writes: one finished run ([`RunResult`], the
/// default), or several for the outputs that show runs together (`[ReportRun]` for [`Html`],
/// `[Gated]` for [`Junit`]).
///
/// An output is a format and its settings; the runs and the path come at `write`, so a list of
/// outputs can be chosen before a run and written after it:
///
/// ```
/// use std::path::Path;
/// use sojourn_report::output::{Hgrm, Hlog, Html, Json, OpenMetrics, Output};
///
/// let result = sojourn_report::load::load_result(Path::new("tests/fixtures/hiccup-open.json"))?;
/// let dir = tempfile::tempdir()?;
/// let outputs: Vec<(Box<dyn Output>, &str)> = vec![
///     (Box::new(Json), "run.json"),
///     (Box::new(Hgrm), "run"), // a prefix: run.response.hgrm, run.service.hgrm, run.send_lag.hgrm
///     (Box::new(Hlog), "run.hlog"),
///     (Box::new(Html::default()), "run.html"),
///     (Box::new(OpenMetrics::default()), "run.prom"),
/// ];
/// let mut written = Vec::new();
/// for (output, name) in &outputs {
///     written.extend(output.write(&result, &dir.path().join(name))?);
/// }
/// assert_eq!(written.len(), 7);
/// assert!(written.iter().all(|f| f.is_file()));
///
/// // Outputs of several runs take them all: one page, or one JUnit file of judged runs.
/// let gated = sojourn_report::gate::Gated { label: &result.label, judgements: &[] };
/// sojourn_report::output::Junit.write(&[gated][..], &dir.path().join("gate.xml"))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Output<Runs: ?Sized = RunResult> {
    /// The format's name, as the flag that asks for it says it: `json`, `hgrm`, `hlog`,
    /// `html`, `junit`, `openmetrics`.
    fn name(&self) -> &'static str;

    /// Writes `runs` at `to` and returns every file written: one, except [`Hgrm`], for which
    /// `to` is the prefix of a file per histogram.
    fn write(&self, runs: &Runs, to: &Path) -> Result<Vec<PathBuf>, ReportError>;
}

/// The result document, as `sojourn run --json` writes it and [`crate::load`] reads it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json;

impl Output for Json {
    fn name(&self) -> &'static str {
        "json"
    }

    /// A file that cannot be created is [`ReportError::Io`]; one that fails while being
    /// written is [`ReportError::Write`].
    fn write(&self, result: &RunResult, to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let file = std::fs::File::create(to).map_err(ReportError::io(to))?;
        let mut out = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(&mut out, result).map_err(std::io::Error::from)?;
        out.flush()?;
        Ok(vec![to.to_path_buf()])
    }
}

/// The percentile distribution of each of the three histograms, in milliseconds
/// ([`crate::hgrm::write_result_files`]): `to` is the prefix of `.response.hgrm`,
/// `.service.hgrm` and `.send_lag.hgrm`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hgrm;

impl Output for Hgrm {
    fn name(&self) -> &'static str {
        "hgrm"
    }

    fn write(&self, result: &RunResult, to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        crate::hgrm::write_result_files(to, result)
    }
}

/// The interval log ([`crate::hlog::write_file`]), its `StartTime` the run's wall-clock start
/// when the result has one.
#[derive(Debug, Clone, Copy, Default)]
pub struct Hlog;

impl Output for Hlog {
    fn name(&self) -> &'static str {
        "hlog"
    }

    fn write(&self, result: &RunResult, to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let start = result
            .started_unix_ns
            .map(|ns| UNIX_EPOCH + Duration::from_nanos(ns));
        crate::hlog::write_file(to, result, start)?;
        Ok(vec![to.to_path_buf()])
    }
}

/// The self-contained HTML report ([`crate::html`]): of one run, or of several side by side.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html<'a> {
    /// The page title; by default the page names its runs.
    pub title: Option<&'a str>,
    /// SLO verdicts, shown in a section after the header (`report --slo`).
    pub gates: &'a [Gated<'a>],
}

impl Output<[ReportRun]> for Html<'_> {
    fn name(&self) -> &'static str {
        "html"
    }

    fn write(&self, runs: &[ReportRun], to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let options = HtmlOptions {
            title: self.title.map(str::to_string),
        };
        let page = crate::html::render_gated(runs, &options, self.gates)?;
        std::fs::write(to, page).map_err(ReportError::io(to))?;
        Ok(vec![to.to_path_buf()])
    }
}

/// One run's page names it by its label and has no per-request dots.
impl Output for Html<'_> {
    fn name(&self) -> &'static str {
        "html"
    }

    fn write(&self, result: &RunResult, to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let run = ReportRun {
            source: result.label.clone(),
            result: result.clone(),
            samples: Vec::new(),
        };
        Output::<[ReportRun]>::write(self, std::slice::from_ref(&run), to)
    }
}

/// The SLO gate's verdicts as JUnit XML ([`crate::gate::junit`]): a test suite per judged run,
/// a test case per objective. It takes runs already judged (by
/// [`sojourn_core::gate::evaluate`]), since whoever gates a run needs the verdicts too.
#[derive(Debug, Clone, Copy, Default)]
pub struct Junit;

impl Output<[Gated<'_>]> for Junit {
    fn name(&self) -> &'static str {
        "junit"
    }

    fn write(&self, runs: &[Gated<'_>], to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let xml = crate::gate::junit(runs)?;
        std::fs::write(to, xml).map_err(ReportError::io(to))?;
        Ok(vec![to.to_path_buf()])
    }
}

/// A finished run's final figures as OpenMetrics text ([`crate::openmetrics::finished`]), or,
/// with `classic`, as the classic Prometheus text format, which node_exporter's textfile
/// collector reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenMetrics {
    pub classic: bool,
}

impl Output for OpenMetrics {
    fn name(&self) -> &'static str {
        "openmetrics"
    }

    fn write(&self, result: &RunResult, to: &Path) -> Result<Vec<PathBuf>, ReportError> {
        let text = crate::openmetrics::finished(result);
        let text = if self.classic {
            crate::openmetrics::classic(&text)
        } else {
            text
        };
        std::fs::write(to, text).map_err(ReportError::io(to))?;
        Ok(vec![to.to_path_buf()])
    }
}

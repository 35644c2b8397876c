//! The optional files of a run: HdrHistogram formats and per-request samples.
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;

use anyhow::Context;
use sojourn_core::{RequestSample, RunResult};
use sojourn_report::output::{Hgrm, Hlog, Output as _};
use sojourn_report::samples::{SampleCounts, SampleWriter, Sampling};

/// The HdrHistogram and per-request files asked for.
#[derive(Debug, Clone, Default)]
pub struct Outputs {
    /// `--hgrm PREFIX`.
    pub hgrm: Option<PathBuf>,
    /// `--hlog FILE`.
    pub hlog: Option<PathBuf>,
    /// `--samples FILE`.
    pub samples: Option<PathBuf>,
    /// The share of requests written to the samples file.
    pub sample_ratio: f64,
}

/// Writes the result document (`--json`): what `report`, `diff` and `merge` read.
pub fn write_json(path: &std::path::Path, result: &RunResult) -> anyhow::Result<()> {
    use sojourn_report::output::{Json, Output as _};
    use sojourn_report::ReportError;
    let (what, cause): (&str, anyhow::Error) = match Json.write(result, path) {
        Ok(_) => return Ok(()),
        Err(ReportError::Io { source, .. }) => ("create", source.into()),
        Err(ReportError::Write(source)) => ("write", source.into()),
        Err(other) => ("write", other.into()),
    };
    Err(cause.context(format!("--json: cannot {what} {}", path.display())))
}

/// Writes `--hgrm` and `--hlog` files from a finished result.
pub fn write_files(o: &Outputs, result: &RunResult) -> anyhow::Result<()> {
    if let Some(prefix) = &o.hgrm {
        for path in Hgrm.write(result, prefix).context("--hgrm")? {
            println!("hgrm: {}", path.display());
        }
    }
    if let Some(path) = &o.hlog {
        Hlog.write(result, path)
            .with_context(|| format!("--hlog {}", path.display()))?;
        println!("hlog: {}", path.display());
    }
    Ok(())
}

/// One thread owns the samples file; workers send it finished requests over a channel, so the
/// send path never touches the disk. The channel is unbounded: a slow disk costs memory, never
/// timing.
pub struct SampleThread {
    tx: Sender<RequestSample>,
    thread: JoinHandle<anyhow::Result<SampleCounts>>,
}

impl SampleThread {
    /// Starts the writer when a samples file was asked for.
    pub fn start(o: &Outputs) -> anyhow::Result<Option<SampleThread>> {
        let Some(path) = &o.samples else {
            return Ok(None);
        };
        let sampling = Sampling::ratio(o.sample_ratio, 1).ok_or_else(|| {
            crate::bad_input!("--sample-ratio: must be in (0, 1], got {}", o.sample_ratio)
        })?;
        let writer = SampleWriter::create(path, sampling)
            .map_err(|e| crate::bad_input!("--samples: {e}"))?;
        let (tx, rx) = channel();
        let thread = std::thread::Builder::new()
            .name("sojourn-samples".into())
            .spawn(move || drain(writer, rx))?;
        Ok(Some(SampleThread { tx, thread }))
    }

    /// Where the engine sends finished requests.
    pub fn sender(&self) -> Sender<RequestSample> {
        self.tx.clone()
    }

    /// Waits for every sample sent so far to be written; the engine's senders must be gone.
    pub fn finish(self) -> anyhow::Result<SampleCounts> {
        drop(self.tx);
        self.thread
            .join()
            .map_err(|_| anyhow::anyhow!("the samples writer panicked"))?
    }
}

fn drain<W: std::io::Write>(
    mut writer: SampleWriter<W>,
    rx: Receiver<RequestSample>,
) -> anyhow::Result<SampleCounts> {
    for s in rx {
        writer
            .record(s.intended, s.response, s.service, s.outcome)
            .context("--samples: writing")?;
    }
    writer.finish().context("--samples: closing")
}

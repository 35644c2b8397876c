//! The optional files of a run: HdrHistogram formats and per-request samples.
use std::fs::File;
use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::OnceLock;
use std::thread::JoinHandle;

use anyhow::Context;
use serde::Serialize;
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

/// The path that names standard output where a document is written (`--json -`, `merge -o -`)
/// and standard input where one is read (`report -`, `diff - B.json`, `merge -`).
pub const STDIO: &str = "-";

/// Whether `path` is `-`: standard output for a document written, standard input for one read.
pub fn is_stdio(path: &Path) -> bool {
    path.as_os_str() == STDIO
}

/// Standard output as the process was started with it, once [`reserve_stdout`] has given it
/// to the document.
static DOCUMENT_OUT: OnceLock<File> = OnceLock::new();

/// Gives standard output to the document (`--json -`): from here on, everything this process
/// prints (the summary, tables, progress, warnings) and everything a child process it starts
/// prints goes to standard error, and only a document written to `-` ([`write_document`],
/// [`write_json`]) reaches standard output, so a pipe carries the document and nothing else.
/// Call it before anything is printed; calling it again changes nothing.
pub fn reserve_stdout() -> std::io::Result<()> {
    if DOCUMENT_OUT.get().is_some() {
        return Ok(());
    }
    std::io::stdout().flush()?;
    // Descriptor 1 itself is moved, not just Rust's handle: a `println!` anywhere, and a child
    // process's own output, then land on standard error too.
    let original = std::io::stdout().as_fd().try_clone_to_owned()?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd())?;
    let _ = DOCUMENT_OUT.set(File::from(original));
    Ok(())
}

/// Writes `doc` as pretty JSON to `path`, or to standard output when `path` is `-`; `flag`
/// names the option in an error (`--json: cannot write out.json: …`).
pub fn write_document<T: Serialize + ?Sized>(
    path: &Path,
    flag: &str,
    doc: &T,
) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(doc)?;
    if is_stdio(path) {
        return to_stdout(&text).map_err(|e| {
            anyhow::Error::new(e).context(format!("{flag}: cannot write to standard output"))
        });
    }
    std::fs::write(path, text)
        .map_err(|e| crate::bad_input!("{flag}: cannot write {}: {e}", path.display()))
}

/// The document and a newline, on the standard output [`reserve_stdout`] kept (or on this
/// process's standard output when nothing reserved it), flushed.
fn to_stdout(text: &str) -> std::io::Result<()> {
    let mut out: Box<dyn Write> = match DOCUMENT_OUT.get() {
        Some(file) => Box::new(file),
        None => Box::new(std::io::stdout().lock()),
    };
    out.write_all(text.as_bytes())?;
    out.write_all(b"\n")?;
    out.flush()
}

/// Writes the result document (`--json`): what `report`, `diff` and `merge` read. `-` writes
/// it to standard output.
pub fn write_json(path: &std::path::Path, result: &RunResult) -> anyhow::Result<()> {
    use sojourn_report::output::{Json, Output as _};
    if is_stdio(path) {
        return write_document(path, "--json", result);
    }
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

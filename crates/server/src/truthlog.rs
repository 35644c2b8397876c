//! Streams ground-truth records to a writer on its own thread, so neither file I/O nor a slow
//! disk ever sits on a request's path, and memory stays bounded to what is in flight.
use std::io::{self, BufWriter, Write};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use sojourn_scenario::truth::{TruthRecord, CSV_HEADER};

/// How often buffered lines reach the writer when traffic is light, so `tail -f` keeps up.
const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// `None` on the channel closes the log even if some sender is still alive (a task that
/// outlived shutdown must not keep the file open forever).
type Line = Option<TruthRecord>;

/// What the writer thread reports: lines written, and the first write error.
type Written = (u64, Option<io::Error>);

pub(crate) struct TruthLog {
    tx: Option<mpsc::Sender<Line>>,
    thread: Mutex<Option<JoinHandle<Written>>>,
}

impl TruthLog {
    /// A log that drops everything (no `--truth`).
    pub(crate) fn none() -> TruthLog {
        TruthLog {
            tx: None,
            thread: Mutex::new(None),
        }
    }

    pub(crate) fn csv(writer: Box<dyn Write + Send>) -> TruthLog {
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("sojourn-truth".into())
            .spawn(move || write_all(writer, rx))
            .expect("spawning the truth-log thread");
        TruthLog {
            tx: Some(tx),
            thread: Mutex::new(Some(thread)),
        }
    }

    /// Queues one record; never blocks.
    pub(crate) fn record(&self, record: TruthRecord) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(Some(record));
        }
    }

    /// Closes the log and returns how many records were written, or the first write error.
    /// Records queued after this are dropped.
    pub(crate) fn finish(&self) -> io::Result<u64> {
        if let Some(tx) = &self.tx {
            let _ = tx.send(None);
        }
        let thread = self.thread.lock().expect("truth lock").take();
        let Some(thread) = thread else { return Ok(0) };
        match thread.join() {
            Ok((n, None)) => Ok(n),
            Ok((_, Some(e))) => Err(e),
            Err(_) => Err(io::Error::other("the truth-log thread panicked")),
        }
    }
}

fn write_all(writer: Box<dyn Write + Send>, rx: mpsc::Receiver<Line>) -> Written {
    let mut w = BufWriter::new(writer);
    let mut written = 0;
    let mut failed = writeln!(w, "{CSV_HEADER}").err();
    loop {
        match rx.recv_timeout(FLUSH_EVERY) {
            Ok(Some(record)) if failed.is_none() => match record.write_csv(&mut w) {
                Ok(()) => written += 1,
                Err(e) => failed = Some(e),
            },
            // After a failure keep draining, so senders never back up in memory.
            Ok(Some(_)) => {}
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if failed.is_none() {
                    failed = w.flush().err();
                }
            }
        }
    }
    if failed.is_none() {
        failed = w.flush().err();
    }
    (written, failed)
}

//! Streams ground-truth records to a writer on its own thread, so neither file I/O nor a slow
//! disk ever sits on a request's path, and memory stays bounded to what is in flight.
use std::io::{self, BufWriter, Write};
use std::sync::{mpsc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sojourn_scenario::truth::{TruthRecord, CSV_HEADER};

/// The longest a buffered line waits before it reaches the writer, under steady traffic or
/// none, so that `tail -f` keeps up and a killed server loses no more than this.
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
    let mut line = Vec::new();
    let mut flushed = Instant::now();
    loop {
        let due = FLUSH_EVERY.saturating_sub(flushed.elapsed());
        match rx.recv_timeout(due) {
            Ok(Some(record)) if failed.is_none() => {
                // One record, one write: the buffer then only ever empties between lines, and
                // a reader of the file (or what a killed server left) never sees half of one.
                line.clear();
                let _ = record.write_csv(&mut line);
                match w.write_all(&line) {
                    Ok(()) => written += 1,
                    Err(e) => failed = Some(e),
                }
            }
            // After a failure keep draining, so senders never back up in memory.
            Ok(Some(_)) => {}
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if flushed.elapsed() >= FLUSH_EVERY {
            if failed.is_none() {
                failed = w.flush().err();
            }
            flushed = Instant::now();
        }
    }
    if failed.is_none() {
        failed = w.flush().err();
    }
    (written, failed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_scenario::truth::Outcome;
    use std::sync::{Arc, Mutex};

    /// A writer that keeps each chunk it is handed, as a file would receive them.
    #[derive(Clone, Default)]
    struct Chunks(Arc<Mutex<Vec<Vec<u8>>>>);

    impl Write for Chunks {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A record of about 27 bytes as a line.
    fn record(index: u64) -> TruthRecord {
        let at = Duration::from_nanos(index);
        TruthRecord {
            index,
            arrival: at,
            start: at,
            departure: at + Duration::from_nanos(1),
            due: at,
            status: 200,
            outcome: Outcome::Ok,
        }
    }

    #[test]
    fn the_file_only_ever_receives_whole_lines() {
        let chunks = Chunks::default();
        let log = TruthLog::csv(Box::new(chunks.clone()));
        // Far more than one buffer's worth, so the buffer fills and empties many times.
        for i in 0..5_000 {
            log.record(record(i));
        }
        assert_eq!(log.finish().unwrap(), 5_000);
        let chunks = chunks.0.lock().unwrap();
        assert!(chunks.len() > 2, "{} chunks", chunks.len());
        for (i, chunk) in chunks.iter().enumerate() {
            assert_eq!(chunk.last(), Some(&b'\n'), "chunk {i} ends mid-line");
        }
        let text: String = chunks.iter().map(|c| String::from_utf8_lossy(c)).collect();
        assert_eq!(text.lines().count(), 5_001, "the header and every record");
    }

    #[test]
    fn steady_traffic_reaches_the_file_within_a_second_or_so() {
        let chunks = Chunks::default();
        let log = TruthLog::csv(Box::new(chunks.clone()));
        // 50 records a second for 2.5 s: never a second without one, and about 3.3 KB in all,
        // well under the 8 KiB the buffer holds, so only the periodic flush hands any over.
        for i in 0..125 {
            log.record(record(i));
            std::thread::sleep(Duration::from_millis(20));
        }
        let before_the_end = chunks.0.lock().unwrap().len();
        log.finish().unwrap();
        assert!(
            before_the_end > 0,
            "2.5 s of steady records and nothing reached the file before the log closed"
        );
    }
}

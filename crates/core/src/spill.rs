//! Finished intervals of a timeline, kept out of memory once there are many.
//!
//! A run keeps one sealed interval per `--interval` for its timeline (a few kilobytes each,
//! deflated), so a soak of hours would grow the generator by tens of megabytes. Past
//! [`SPILL_AFTER`] bytes they move to an unnamed temporary file, which the kernel removes when
//! it is closed, and they are read back once, when the run's recorders merge. Where no
//! temporary file can be made they stay in memory: nothing is ever dropped.
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use crate::record::IntervalRecord;

/// Sealed intervals held in memory before they go to the temporary file.
pub const SPILL_AFTER: usize = 128 * 1024;

#[derive(Debug, Default)]
pub(crate) struct Sealed {
    memory: Vec<IntervalRecord>,
    bytes: usize,
    file: Option<File>,
    /// How many bytes of `file` hold whole records.
    spilled: u64,
    /// A temporary file could not be made or written: keep everything in memory.
    stuck: bool,
}

impl Sealed {
    pub(crate) fn push(&mut self, record: IntervalRecord) {
        self.bytes += record.encoded_len();
        self.memory.push(record);
        if self.bytes > SPILL_AFTER && !self.stuck && self.spill().is_err() {
            self.stuck = true;
        }
    }

    /// Moves the records in memory to the file; on failure they stay in memory, whole.
    fn spill(&mut self) -> io::Result<()> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self.file.insert(tempfile::tempfile()?),
        };
        let mut out = BufWriter::new(&mut *file);
        let mut written = 0;
        let result = self.memory.iter().try_for_each(|r| {
            written += write_record(&mut out, r)?;
            Ok::<_, io::Error>(())
        });
        let result = result.and_then(|()| out.flush());
        drop(out);
        if let Err(e) = result {
            // Whatever part was written is cut off again; the records are still in memory.
            let _ = file.set_len(self.spilled);
            let _ = file.seek(SeekFrom::Start(self.spilled));
            return Err(e);
        }
        self.spilled += written;
        self.memory.clear();
        self.bytes = 0;
        Ok(())
    }

    /// Bytes of sealed records held in memory (the rest are in the file).
    #[cfg(test)]
    pub(crate) fn in_memory(&self) -> usize {
        self.bytes
    }

    /// Every record, in the order they were sealed, leaving them where they are. The file is
    /// read through a second handle; reading it whole leaves the shared offset at its end,
    /// where the next spill appends.
    pub(crate) fn records(&self) -> Vec<IntervalRecord> {
        let mut out = Vec::new();
        if let Some(file) = &self.file {
            let mut file = file
                .try_clone()
                .expect("a second handle on this run's own temporary file");
            read_records(&mut file, self.spilled, &mut out)
                .expect("reading back this run's own spilled intervals");
        }
        out.extend(self.memory.iter().cloned());
        out
    }

    /// Every record, in the order they were sealed.
    pub(crate) fn into_records(self) -> Vec<IntervalRecord> {
        let mut out = Vec::new();
        if let Some(mut file) = self.file {
            read_records(&mut file, self.spilled, &mut out)
                .expect("reading back this run's own spilled intervals");
        }
        out.extend(self.memory);
        out
    }
}

/// Writes one record; returns how many bytes it took.
fn write_record(out: &mut impl Write, r: &IntervalRecord) -> io::Result<u64> {
    let mut n = 0;
    for v in [r.index, r.completed, r.failed] {
        out.write_all(&v.to_le_bytes())?;
        n += 8;
    }
    for blob in [
        &r.response,
        &r.send_lag,
        &r.service,
        &r.timeouts,
        &r.service_timeouts,
    ] {
        out.write_all(&(blob.len() as u64).to_le_bytes())?;
        out.write_all(blob)?;
        n += 8 + blob.len() as u64;
    }
    Ok(n)
}

fn read_records(file: &mut File, len: u64, out: &mut Vec<IntervalRecord>) -> io::Result<()> {
    file.seek(SeekFrom::Start(0))?;
    let mut r = BufReader::new(file.take(len));
    let mut word = [0u8; 8];
    let mut next = |r: &mut BufReader<_>| -> io::Result<u64> {
        r.read_exact(&mut word)?;
        Ok(u64::from_le_bytes(word))
    };
    let mut read = 0;
    while read < len {
        let (index, completed, failed) = (next(&mut r)?, next(&mut r)?, next(&mut r)?);
        let mut blobs: [Vec<u8>; 5] = Default::default();
        for blob in &mut blobs {
            let n = next(&mut r)? as usize;
            blob.resize(n, 0);
            r.read_exact(blob)?;
            read += 8 + n as u64;
        }
        read += 24;
        let [response, send_lag, service, timeouts, service_timeouts] = blobs;
        out.push(IntervalRecord {
            index,
            completed,
            failed,
            response,
            send_lag,
            service,
            timeouts,
            service_timeouts,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(index: u64, size: usize) -> IntervalRecord {
        let blob = |k: u8| (0..size).map(|i| (i as u8).wrapping_mul(k)).collect();
        IntervalRecord {
            index,
            completed: index * 10,
            failed: index % 3,
            response: blob(1),
            send_lag: blob(3),
            service: blob(5),
            timeouts: Vec::new(),
            service_timeouts: blob(7),
        }
    }

    #[test]
    fn past_the_threshold_records_leave_memory_and_come_back_whole_and_in_order() {
        let mut s = Sealed::default();
        let per = SPILL_AFTER / 10;
        let all: Vec<IntervalRecord> = (0..35).map(|i| record(i, per / 4)).collect();
        for (i, r) in all.iter().enumerate() {
            s.push(r.clone());
            assert!(
                s.bytes <= SPILL_AFTER + per,
                "memory stays bounded at record {i}"
            );
        }
        assert!(s.spilled > 0, "the file took the bulk");
        assert!(s.memory.len() < 11);
        assert_eq!(s.into_records(), all);
    }

    /// Read without being consumed (a label's timeline is read when its record is cloned or
    /// merged), the records come back whole, and sealing goes on after them.
    #[test]
    fn records_can_be_read_and_sealing_goes_on() {
        let mut s = Sealed::default();
        let per = SPILL_AFTER / 10;
        let all: Vec<IntervalRecord> = (0..35).map(|i| record(i, per / 4)).collect();
        for r in &all[..30] {
            s.push(r.clone());
        }
        assert!(s.spilled > 0);
        assert_eq!(s.records(), all[..30]);
        for r in &all[30..] {
            s.push(r.clone());
        }
        assert_eq!(s.records(), all);
        assert_eq!(s.into_records(), all);
    }

    #[test]
    fn a_short_run_never_touches_a_file() {
        let mut s = Sealed::default();
        s.push(record(0, 100));
        assert!(s.file.is_none());
        assert_eq!(s.into_records(), vec![record(0, 100)]);
    }
}

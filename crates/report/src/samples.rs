//! Per-request samples (`--samples FILE`): one record per finished request with its intended
//! offset, response time, service time and outcome.
//!
//! A [`SampleWriter`] streams records through a fixed-size buffer, so memory stays bounded however
//! long the run; each worker thread owns one (no locks, no async runtime). With a sampling ratio
//! below 1 it keeps a uniform random subset: every request is kept independently with that
//! probability, decided by a seeded hash of its sequence number, so reruns keep the same ones.
//!
//! Two formats, chosen by file extension ([`SampleFormat::for_path`]):
//! - CSV (`.csv`): a `#` comment line with the sampling ratio, a header row, then
//!   `intended_offset_ns,response_ns,service_ns,outcome` rows (`outcome` is `ok` or a failure
//!   class name such as `timeout` or `http_5xx`).
//! - binary (anything else): the 8-byte magic `SJSMPL1\0`, the sampling ratio as a little-endian
//!   f64, then 25-byte records: three little-endian u64 nanosecond values and an outcome byte
//!   (0 = ok, 1 + the class's position in [`FailureClass::ALL`] otherwise).
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::Duration;

use sojourn_core::outcome::{FailureClass, Outcome};
use sojourn_core::units::nanos;

use crate::error::ReportError;

/// The first bytes of a binary samples file.
pub const MAGIC: &[u8; 8] = b"SJSMPL1\0";
const RECORD_BYTES: usize = 25;
const CSV_HEADER: &str = "intended_offset_ns,response_ns,service_ns,outcome";
/// Bytes buffered before a write reaches the file.
const BUFFER_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleFormat {
    Csv,
    Binary,
}

impl SampleFormat {
    /// CSV for a `.csv` path, the compact binary format otherwise.
    pub fn for_path(path: &Path) -> SampleFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some(ext) if ext.eq_ignore_ascii_case("csv") => SampleFormat::Csv,
            _ => SampleFormat::Binary,
        }
    }
}

/// Which requests to keep: each independently with probability `ratio`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sampling {
    ratio: f64,
    seed: u64,
}

impl Sampling {
    /// Keep every request.
    pub fn all() -> Sampling {
        Sampling {
            ratio: 1.0,
            seed: 0,
        }
    }

    /// Keep a uniform random `ratio` (0 < ratio ≤ 1) of requests. Give each worker's writer its
    /// own `seed` so they keep different requests.
    pub fn ratio(ratio: f64, seed: u64) -> Option<Sampling> {
        (ratio > 0.0 && ratio <= 1.0).then_some(Sampling { ratio, seed })
    }

    pub fn get(&self) -> f64 {
        self.ratio
    }

    fn keeps(&self, sequence: u64) -> bool {
        if self.ratio >= 1.0 {
            return true;
        }
        let bits = splitmix64(self.seed ^ splitmix64(sequence)) >> 11;
        (bits as f64 / (1u64 << 53) as f64) < self.ratio
    }
}

/// A fast, well-mixed 64-bit hash (SplitMix64's finaliser).
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One finished request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When it was due, from the start of the run.
    pub intended_offset: Duration,
    /// done − intended.
    pub response: Duration,
    /// done − sent.
    pub service: Duration,
    pub outcome: Outcome,
}

/// How many requests a writer saw and how many it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleCounts {
    pub seen: u64,
    pub written: u64,
}

/// Streams samples to a file (or any writer). Owned by one worker thread.
pub struct SampleWriter<W: Write> {
    out: BufWriter<W>,
    format: SampleFormat,
    sampling: Sampling,
    counts: SampleCounts,
}

impl SampleWriter<File> {
    /// Creates `path`, in the format its extension names.
    pub fn create(path: &Path, sampling: Sampling) -> Result<Self, ReportError> {
        let file = File::create(path).map_err(ReportError::io(path))?;
        SampleWriter::new(file, SampleFormat::for_path(path), sampling)
            .map_err(ReportError::io(path))
    }
}

impl<W: Write> SampleWriter<W> {
    /// Writes the format's header and returns the writer.
    pub fn new(out: W, format: SampleFormat, sampling: Sampling) -> std::io::Result<Self> {
        let mut out = BufWriter::with_capacity(BUFFER_BYTES, out);
        match format {
            SampleFormat::Csv => {
                writeln!(
                    out,
                    "# sojourn samples v1, sampling ratio {}",
                    sampling.ratio
                )?;
                writeln!(out, "{CSV_HEADER}")?;
            }
            SampleFormat::Binary => {
                out.write_all(MAGIC)?;
                out.write_all(&sampling.ratio.to_le_bytes())?;
            }
        }
        Ok(SampleWriter {
            out,
            format,
            sampling,
            counts: SampleCounts {
                seen: 0,
                written: 0,
            },
        })
    }

    /// One finished request; written if the sampling keeps it.
    pub fn record(
        &mut self,
        intended_offset: Duration,
        response: Duration,
        service: Duration,
        outcome: Outcome,
    ) -> std::io::Result<()> {
        let sequence = self.counts.seen;
        self.counts.seen += 1;
        if !self.sampling.keeps(sequence) {
            return Ok(());
        }
        self.counts.written += 1;
        let (at, resp, serv) = (nanos(intended_offset), nanos(response), nanos(service));
        match self.format {
            SampleFormat::Csv => writeln!(self.out, "{at},{resp},{serv},{}", outcome_name(outcome)),
            SampleFormat::Binary => {
                let mut record = [0u8; RECORD_BYTES];
                record[0..8].copy_from_slice(&at.to_le_bytes());
                record[8..16].copy_from_slice(&resp.to_le_bytes());
                record[16..24].copy_from_slice(&serv.to_le_bytes());
                record[24] = outcome_code(outcome);
                self.out.write_all(&record)
            }
        }
    }

    pub fn counts(&self) -> SampleCounts {
        self.counts
    }

    /// Flushes everything to the underlying writer.
    pub fn finish(mut self) -> std::io::Result<SampleCounts> {
        self.out.flush()?;
        Ok(self.counts)
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Ok => "ok",
        Outcome::Failed(class) => class.name(),
    }
}

fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Ok => 0,
        Outcome::Failed(class) => {
            1 + FailureClass::ALL
                .iter()
                .position(|c| *c == class)
                .expect("ALL lists every class") as u8
        }
    }
}

fn outcome_from_code(code: u8) -> Option<Outcome> {
    match code {
        0 => Some(Outcome::Ok),
        c => FailureClass::ALL
            .get(usize::from(c) - 1)
            .map(|class| Outcome::Failed(*class)),
    }
}

fn outcome_from_name(name: &str) -> Option<Outcome> {
    if name == "ok" {
        return Some(Outcome::Ok);
    }
    FailureClass::ALL
        .iter()
        .find(|c| c.name() == name)
        .map(|c| Outcome::Failed(*c))
}

/// Reads a samples file of either format, one record at a time.
pub struct SampleReader {
    input: BufReader<File>,
    format: SampleFormat,
    ratio: f64,
    path: std::path::PathBuf,
    line: String,
}

impl SampleReader {
    pub fn open(path: &Path) -> Result<SampleReader, ReportError> {
        let file = File::open(path).map_err(ReportError::io(path))?;
        let mut input = BufReader::new(file);
        let bad = |reason: &str| ReportError::NotSamples {
            path: path.to_owned(),
            reason: reason.to_string(),
        };
        let head = input.fill_buf().map_err(ReportError::io(path))?;
        let (format, ratio) = if head.starts_with(MAGIC) {
            let mut header = [0u8; 16];
            input
                .read_exact(&mut header)
                .map_err(|_| bad("truncated header"))?;
            (
                SampleFormat::Binary,
                f64::from_le_bytes(header[8..16].try_into().expect("8 bytes")),
            )
        } else {
            let mut first = String::new();
            input.read_line(&mut first).map_err(ReportError::io(path))?;
            let ratio = first
                .trim()
                .strip_prefix("# sojourn samples v1, sampling ratio ")
                .and_then(|r| r.parse().ok())
                .ok_or_else(|| bad("no sojourn header line"))?;
            let mut header = String::new();
            input
                .read_line(&mut header)
                .map_err(ReportError::io(path))?;
            if header.trim() != CSV_HEADER {
                return Err(bad("unexpected CSV header"));
            }
            (SampleFormat::Csv, ratio)
        };
        Ok(SampleReader {
            input,
            format,
            ratio,
            path: path.to_owned(),
            line: String::new(),
        })
    }

    /// The fraction of requests the writer kept.
    pub fn ratio(&self) -> f64 {
        self.ratio
    }

    fn bad(&self, reason: String) -> ReportError {
        ReportError::NotSamples {
            path: self.path.clone(),
            reason,
        }
    }

    fn next_binary(&mut self) -> Option<Result<Sample, ReportError>> {
        let mut r = [0u8; RECORD_BYTES];
        match self.input.read_exact(&mut r) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            Err(e) => {
                return Some(Err(ReportError::Io {
                    path: self.path.clone(),
                    source: e,
                }))
            }
        }
        let num = |i: usize| {
            Duration::from_nanos(u64::from_le_bytes(r[i..i + 8].try_into().expect("8 bytes")))
        };
        let Some(outcome) = outcome_from_code(r[24]) else {
            return Some(Err(self.bad(format!("unknown outcome code {}", r[24]))));
        };
        Some(Ok(Sample {
            intended_offset: num(0),
            response: num(8),
            service: num(16),
            outcome,
        }))
    }

    fn next_csv(&mut self) -> Option<Result<Sample, ReportError>> {
        self.line.clear();
        match self.input.read_line(&mut self.line) {
            Ok(0) => return None,
            Ok(_) => {}
            Err(e) => {
                return Some(Err(ReportError::Io {
                    path: self.path.clone(),
                    source: e,
                }))
            }
        }
        Some(
            parse_csv_row(self.line.trim_end())
                .ok_or_else(|| self.bad(format!("bad samples row {:?}", self.line.trim_end()))),
        )
    }
}

fn parse_csv_row(row: &str) -> Option<Sample> {
    let mut fields = row.split(',');
    let mut num = || fields.next()?.parse::<u64>().ok().map(Duration::from_nanos);
    let (intended_offset, response, service) = (num()?, num()?, num()?);
    let outcome = outcome_from_name(fields.next()?)?;
    fields.next().is_none().then_some(Sample {
        intended_offset,
        response,
        service,
        outcome,
    })
}

impl Iterator for SampleReader {
    type Item = Result<Sample, ReportError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.format {
            SampleFormat::Binary => self.next_binary(),
            SampleFormat::Csv => self.next_csv(),
        }
    }
}

/// At most `max` samples of the file, in time order, for a scatter plot (see [`downsample`]).
pub fn read_downsampled(path: &Path, max: usize) -> Result<Vec<Sample>, ReportError> {
    downsample(SampleReader::open(path)?, max)
}

/// At most `max` of a stream of samples, in time order, for a scatter plot: the slowest quarter
/// of `max` always (the tail is what the plot is for), the rest a uniform random subset of the
/// others (reservoir sampling with a fixed seed, so the same input always gives the same
/// points). Memory is bounded by `max` whatever the length of the stream.
pub fn downsample<E>(
    samples: impl IntoIterator<Item = Result<Sample, E>>,
    max: usize,
) -> Result<Vec<Sample>, E> {
    let slow_max = max / 4;
    let mut slowest: BinaryHeap<Reverse<Keyed>> = BinaryHeap::new();
    let mut uniform = Reservoir {
        kept: Vec::new(),
        cap: max - slow_max,
        offered: 0,
    };
    for (i, sample) in samples.into_iter().enumerate() {
        let sample = sample?;
        slowest.push(Reverse(Keyed {
            key: (sample.response, i),
            sample,
        }));
        if slowest.len() > slow_max {
            let Reverse(faster) = slowest.pop().expect("just pushed");
            uniform.offer(faster.sample);
        }
    }
    let mut kept: Vec<Sample> = slowest
        .into_iter()
        .map(|Reverse(k)| k.sample)
        .chain(uniform.kept)
        .collect();
    kept.sort_by_key(|s| s.intended_offset);
    Ok(kept)
}

/// A sample ordered by (response time, position in the file).
struct Keyed {
    key: (Duration, usize),
    sample: Sample,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// A uniform random subset of at most `cap` of the samples offered (Algorithm R).
struct Reservoir {
    kept: Vec<Sample>,
    cap: usize,
    offered: u64,
}

impl Reservoir {
    fn offer(&mut self, s: Sample) {
        let k = self.offered;
        self.offered += 1;
        if self.kept.len() < self.cap {
            self.kept.push(s);
            return;
        }
        let j = (splitmix64(k) % (k + 1)) as usize;
        if j < self.cap {
            self.kept[j] = s;
        }
    }
}

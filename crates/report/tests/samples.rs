//! Per-request samples: formats, sampling, streaming, and the report's downsampling.
use std::io::Write;
use std::time::Duration;

use sojourn_core::outcome::{FailureClass, Outcome};
use sojourn_report::samples::{
    read_downsampled, SampleFormat, SampleReader, SampleWriter, Sampling, MAGIC,
};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("sojourn-samples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Request i: due at i ms, answered after 1 + i % 7 ms, every 10th a 5xx, every 13th a timeout.
fn outcome(i: u64) -> Outcome {
    match i {
        _ if i % 13 == 0 => Outcome::Failed(FailureClass::Timeout),
        _ if i % 10 == 0 => Outcome::Failed(FailureClass::Http5xx),
        _ => Outcome::Ok,
    }
}

fn write_file(name: &str, n: u64, sampling: Sampling) -> std::path::PathBuf {
    let path = temp(name);
    let mut w = SampleWriter::create(&path, sampling).unwrap();
    for i in 0..n {
        w.record(ms(i), ms(1 + i % 7), ms(i % 7), outcome(i))
            .unwrap();
    }
    let counts = w.finish().unwrap();
    assert_eq!(counts.seen, n);
    path
}

#[test]
fn csv_snapshot() {
    let mut out = Vec::new();
    let mut w = SampleWriter::new(&mut out, SampleFormat::Csv, Sampling::all()).unwrap();
    w.record(ms(0), ms(12), ms(10), Outcome::Ok).unwrap();
    w.record(
        Duration::from_nanos(1_000_001),
        ms(1500),
        ms(1),
        Outcome::Failed(FailureClass::Timeout),
    )
    .unwrap();
    w.record(ms(2), ms(3), ms(3), Outcome::Failed(FailureClass::Http5xx))
        .unwrap();
    w.finish().unwrap();
    let want = "# sojourn samples v1, sampling ratio 1\n\
                intended_offset_ns,response_ns,service_ns,outcome\n\
                0,12000000,10000000,ok\n\
                1000001,1500000000,1000000,timeout\n\
                2000000,3000000,3000000,http_5xx\n";
    assert_eq!(String::from_utf8(out).unwrap(), want);
}

#[test]
fn binary_layout() {
    let mut out = Vec::new();
    let mut w = SampleWriter::new(
        &mut out,
        SampleFormat::Binary,
        Sampling::ratio(0.5, 7).unwrap(),
    )
    .unwrap();
    w.record(ms(1), ms(2), ms(3), Outcome::Failed(FailureClass::Http5xx))
        .unwrap();
    let counts = w.finish().unwrap();
    assert_eq!(&out[..8], MAGIC);
    assert_eq!(f64::from_le_bytes(out[8..16].try_into().unwrap()), 0.5);
    assert_eq!(
        out.len(),
        16 + 25 * counts.written as usize,
        "25 bytes a record"
    );
    if counts.written == 1 {
        assert_eq!(
            u64::from_le_bytes(out[16..24].try_into().unwrap()),
            1_000_000
        );
        assert_eq!(
            out[40],
            1 + FailureClass::ALL
                .iter()
                .position(|c| *c == FailureClass::Http5xx)
                .unwrap() as u8
        );
    }
}

#[test]
fn both_formats_read_back_what_was_written() {
    for name in ["all.csv", "all.bin"] {
        let path = write_file(name, 500, Sampling::all());
        let back: Vec<_> = SampleReader::open(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(back.len(), 500, "{name}");
        for (i, s) in back.iter().enumerate() {
            let i = i as u64;
            assert_eq!(
                (s.intended_offset, s.response, s.service, s.outcome),
                (ms(i), ms(1 + i % 7), ms(i % 7), outcome(i)),
                "{name} record {i}"
            );
        }
    }
    assert_eq!(
        SampleFormat::for_path(std::path::Path::new("x.CSV")),
        SampleFormat::Csv
    );
    assert_eq!(
        SampleFormat::for_path(std::path::Path::new("x.samples")),
        SampleFormat::Binary
    );
}

#[test]
fn uniform_sampling_keeps_the_ratio_and_is_repeatable() {
    let n = 100_000u64;
    let path = write_file("tenth.bin", n, Sampling::ratio(0.1, 42).unwrap());
    let kept: Vec<_> = SampleReader::open(&path)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let expected = n as f64 * 0.1;
    let sigma = (n as f64 * 0.1 * 0.9).sqrt();
    assert!(
        (kept.len() as f64 - expected).abs() < 4.0 * sigma,
        "kept {} of {n}",
        kept.len()
    );
    assert_eq!(SampleReader::open(&path).unwrap().ratio(), 0.1);
    // Uniform over time: each half of the run keeps about half of the sample.
    let first_half = kept
        .iter()
        .filter(|s| s.intended_offset < ms(n / 2))
        .count() as f64;
    assert!((first_half / kept.len() as f64 - 0.5).abs() < 0.03);
    let again: Vec<_> = SampleReader::open(&write_file(
        "tenth-again.bin",
        n,
        Sampling::ratio(0.1, 42).unwrap(),
    ))
    .unwrap()
    .map(Result::unwrap)
    .collect();
    assert_eq!(kept, again, "the same seed keeps the same requests");
    let other: Vec<_> = SampleReader::open(&write_file(
        "tenth-other.bin",
        n,
        Sampling::ratio(0.1, 43).unwrap(),
    ))
    .unwrap()
    .map(Result::unwrap)
    .collect();
    assert_ne!(kept, other, "another worker's seed keeps others");
    assert!(Sampling::ratio(0.0, 1).is_none() && Sampling::ratio(1.5, 1).is_none());
}

/// Counts bytes that reach it.
struct Counting<'a>(&'a std::cell::Cell<usize>);
impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_writer_streams_instead_of_holding_records() {
    let reached = std::cell::Cell::new(0);
    let mut w =
        SampleWriter::new(Counting(&reached), SampleFormat::Binary, Sampling::all()).unwrap();
    for i in 0..100_000u64 {
        w.record(ms(i), ms(1), ms(1), Outcome::Ok).unwrap();
    }
    let total = 16 + 25 * 100_000;
    assert!(
        total - reached.get() <= 64 * 1024,
        "all but one buffer's worth reached the file before finish: {} of {total}",
        reached.get()
    );
    w.finish().unwrap();
    assert_eq!(reached.get(), total);
}

#[test]
fn downsampling_keeps_every_slow_request() {
    let path = temp("wedge.bin");
    let mut w = SampleWriter::create(&path, Sampling::all()).unwrap();
    // 20,000 fast requests and 50 slow ones scattered among them.
    for i in 0..20_050u64 {
        let response = if i % 401 == 7 { ms(900) } else { ms(10) };
        w.record(ms(i), response, response, Outcome::Ok).unwrap();
    }
    w.finish().unwrap();
    let kept = read_downsampled(&path, 1000).unwrap();
    assert_eq!(kept.len(), 1000);
    assert_eq!(
        kept.iter().filter(|s| s.response == ms(900)).count(),
        50,
        "the tail survives downsampling"
    );
    assert!(
        kept.windows(2)
            .all(|w| w[0].intended_offset <= w[1].intended_offset),
        "in time order"
    );
    assert_eq!(read_downsampled(&path, 1000).unwrap(), kept, "repeatable");
}

#[test]
fn a_file_that_is_not_samples_is_refused_by_name() {
    let path = temp("notes.csv");
    std::fs::write(&path, "hello\n").unwrap();
    let err = SampleReader::open(&path).err().unwrap();
    assert!(
        err.to_string().contains("notes.csv")
            && err.to_string().contains("not a sojourn samples file"),
        "{err}"
    );
}

//! Hostile histograms: the `hdr` fields of a result file (HdrHistogram V2, deflated, base64, the
//! payload of every `.hlog` line) are read by `decode_base64`. Fed damaged encodings at each of
//! its layers, it never panics nor allocates what a damaged header declares; what it accepts
//! is a histogram whose quantiles are in order; and it reads back whatever sojourn writes.
//!
//! Short under `cargo test`; `PROPTEST_CASES=1000000 cargo test --release -p sojourn-core
//! --test fuzz` is the long campaign.
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use proptest::prelude::*;
use sojourn_core::record::new_histogram;
use sojourn_core::result::{decode_base64, encode_base64, HdrDecodeError};
use sojourn_testkit::fuzz::{bytes, config, damaged};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// A histogram as sojourn records them: nanosecond values from a microsecond to hours, and now
/// and then an extreme.
fn histogram() -> impl Strategy<Value = Histogram<u64>> {
    let value = prop_oneof![
        8 => 1_000u64..10_000_000_000,
        1 => Just(0u64),
        1 => Just(u64::MAX / 2),
    ];
    proptest::collection::vec((value, 1u64..1000), 0..64).prop_map(|values| {
        let mut h = new_histogram();
        for (v, n) in values {
            h.record_n(v, n)
                .expect("auto-resizing histograms take any value");
        }
        h
    })
}

fn uncompressed(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("into a Vec");
    out
}

/// What is accepted must be a histogram a reader can use: quantiles in order, min to max.
fn check_decoded(h: &Histogram<u64>) -> Result<(), TestCaseError> {
    if h.is_empty() {
        return Ok(());
    }
    prop_assert!(h.min() <= h.max());
    let mut last = 0;
    for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
        let v = h.value_at_quantile(q);
        prop_assert!(
            v >= last,
            "quantile {q} is {v}, below the one before ({last})"
        );
        last = v;
    }
    let counted: u64 = h.iter_recorded().map(|v| v.count_at_value()).sum();
    prop_assert_eq!(counted, h.len());
    Ok(())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match decode_base64(text) {
        Ok(h) => check_decoded(&h).map_err(|e| TestCaseError::fail(format!("{e}; hdr {text:?}"))),
        Err(e) => {
            prop_assert!(e.to_string().starts_with("hdr field "), "{e}");
            Ok(())
        }
    }
}

proptest! {
    // Cheap cases (a histogram of a few dozen values): many, so that damage lands on each
    // field of the 40-byte header under plain `cargo test`.
    #![proptest_config(config(1024))]

    #[test]
    fn what_sojourn_writes_reads_back(h in histogram()) {
        let back = decode_base64(&encode_base64(&h))
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(back, h);
    }

    #[test]
    fn any_text_is_refused_or_sound(text in "[A-Za-z0-9+/=]{0,200}|\\PC{0,100}") {
        check(&text)?;
    }

    #[test]
    fn any_bytes_are_refused_or_sound(b in bytes(512)) {
        check(&B64.encode(b))?;
    }

    /// The base64 text itself damaged (truncated, a character changed).
    #[test]
    fn damaged_text_is_refused_or_sound(
        text in histogram().prop_flat_map(|h| damaged(encode_base64(&h).into_bytes())),
    ) {
        check(&String::from_utf8_lossy(&text))?;
    }

    /// The deflated bytes damaged: what gets past base64 reaches the zlib stream.
    #[test]
    fn damaged_deflated_bytes_are_refused_or_sound(
        b in histogram().prop_flat_map(|h| damaged(B64.decode(encode_base64(&h)).unwrap())),
    ) {
        check(&B64.encode(b))?;
    }

    /// The uncompressed V2 bytes damaged: what reaches the header and counts, where a declared
    /// length once made the reader allocate gigabytes.
    #[test]
    fn damaged_v2_bytes_are_refused_or_sound(
        b in histogram().prop_flat_map(|h| damaged(uncompressed(&h))),
    ) {
        check(&B64.encode(b))?;
    }
}

// ---- inputs that once crashed ------------------------------------------------------------------

/// A V2 header declaring a 4 GiB payload, with none after it: hdrhistogram zero-filled a 4 GiB
/// buffer before finding out.
#[test]
fn a_header_declaring_gigabytes_is_refused_without_allocating_them() {
    let mut v2 = uncompressed(&new_histogram());
    v2[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
    let e = decode_base64(&B64.encode(&v2)).unwrap_err();
    assert!(matches!(e, HdrDecodeError::Damaged(_)), "{e:?}");
    assert!(e.to_string().contains("4294967295-byte payload"), "{e}");
}

/// A damaged count of 1.8 × 10^16: hdrhistogram ranks quantiles in f64, and its p100 came out
/// as 0, below its p99.9.
#[test]
fn a_count_beyond_exact_ranking_is_refused() {
    let hdr = concat!(
        "HISTEwAAACEAAAAAAAAAAwAAAAAAAAABf/////////8/8AAAAAAAAJQJgdkCPsERhv///////z/wAAAJrQWSC+",
        "MC5AThAW6pDZ4KXbYJrd0D1Ak="
    );
    let e = decode_base64(hdr).unwrap_err().to_string();
    assert!(e.contains("counts 18014398509483670 values"), "{e}");
}

/// A count of -2^63 in the payload: hdrhistogram negates it to skip that many empty buckets,
/// which overflows (a panic in a debug build of sojourn).
#[test]
fn a_run_of_2_to_the_63_empty_buckets_is_refused() {
    let mut v2 = uncompressed(&new_histogram());
    // Payload: one varint, zig-zag u64::MAX = i64::MIN: eight 0xff bytes then 0xff.
    v2.truncate(40);
    v2[4..8].copy_from_slice(&9u32.to_be_bytes());
    v2.extend([0xff; 9]);
    let e = decode_base64(&B64.encode(&v2)).unwrap_err().to_string();
    assert!(e.contains("2^63 empty buckets"), "{e}");
}

//! The result document: one JSON file per run, shared by `run`, `sim` and imported peer tools.
//! Its schema is checked in at `schema/result.schema.json`; bump [`SCHEMA`] on any breaking
//! change.
use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::check::Checks;
use crate::evidence::{
    conformance_of, interval_medians, intervals_of, steady_state_of, Ci, CiSet, Conformance,
    Statistics, Thin, WarmupMethod, WarmupTrim,
};
use crate::record::{bound_at, Bound, IntervalRecord, Measurements};
use crate::units::nanos;

/// The version written. Version 2 added `placement` (plan fingerprint, shard, due count, start
/// skew), `merged`, `counts.not_measured` and `statistics.conformance.record`; a version 1
/// document reads as one without them. Version 3 added `statuses`, `targets` (per label),
/// `config.protocol`, `config.streams`, `config.targets` and the failure classes `reset` and
/// `goaway`; a version 2 document reads as one without them. Version 4 added
/// `statistics.validity` (the rate, arrival-law, independence and stationarity tests); a
/// version 3 document reads as one without a verdict. Version 5 added `steps`, `journeys`,
/// `config.journeys` and the failure classes `check` and `extract` (journeys); a version 4
/// document reads as one without journeys.
pub const SCHEMA: &str = "sojourn.result/5";

/// Every version this build reads.
pub const READABLE_SCHEMAS: [&str; 5] = [
    "sojourn.result/1",
    "sojourn.result/2",
    "sojourn.result/3",
    "sojourn.result/4",
    SCHEMA,
];

/// The percentiles every summary carries.
pub const PERCENTILES: [f64; 6] = [50.0, 90.0, 99.0, 99.9, 99.99, 100.0];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Requests due on a schedule, measured from when they were due.
    Open,
    /// N connections each looping send → wait → record.
    Closed,
    /// One request at a time, but measured from its slot on a schedule (seeds 000 and 004).
    Tracking,
    /// N connections, each owning a share of a schedule's slots: it sends at its next slot or
    /// when its previous answer arrives, whichever is later (hey -q, bombardier -r, fortio
    /// -qps, JMeter's constant-throughput timer). Measured from its slot (response, wrk2's
    /// view) and from its send (service, what those tools report).
    Paced,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Open => "open loop",
            Mode::Closed => "closed loop",
            Mode::Tracking => "schedule-tracking",
            Mode::Paced => "paced closed loop",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

impl Tool {
    pub fn sojourn() -> Tool {
        Tool {
            name: "sojourn".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

/// What was asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target: Option<String>,
    /// Requests per second; `None` for a closed loop without a rate.
    pub rate: Option<f64>,
    /// `constant`, `poisson` or `ramp`; `None` for a closed loop.
    pub arrival: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ramp_to: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seed: Option<u64>,
    pub duration_ns: Option<u64>,
    pub requests: Option<u64>,
    pub connections: u32,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub threads: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub timeout_ns: Option<u64>,
    pub interval_ns: u64,
    /// A shaped run's stages, in order; absent for a single-rate run.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stages: Option<Vec<StageConfig>>,
    /// `h2` (HTTP/2 over TLS) or `h2c` (prior knowledge over TCP); absent for HTTP/1.1.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub protocol: Option<String>,
    /// HTTP/2: the most concurrent streams per connection (`connections` counts connections).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub streams: Option<u32>,
    /// Many requests (`--targets`): where they came from and in what order they are sent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub targets: Option<TargetsConfig>,
    /// Journeys (`--journey`): the file, and how many may run at once. The run's `rate` is
    /// then journeys per second, and `connections` is `max_journeys` (one connection each).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub journeys: Option<JourneysConfig>,
}

/// The journey file a run followed, as the result records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JourneysConfig {
    pub file: String,
    /// Journeys in the file.
    pub count: u32,
    /// Steps over all its journeys (each a label in `steps`).
    pub steps: u32,
    /// The most journeys that ran at once (`--max-journeys`).
    pub max_journeys: u32,
    /// The seed of the file's choices (journey, data row, think times, random values).
    pub seed: u64,
}

/// The targets file a run sent, as the result records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetsConfig {
    pub file: String,
    /// Targets in the file.
    pub count: u32,
    /// `round_robin` or `random`.
    pub order: String,
    /// Random order: its seed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub seed: Option<u64>,
}

/// One label's part of a run (`--targets`): its own counts and histograms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetResult {
    pub label: String,
    /// The share of the schedule the targets file gives this label (its weights over all).
    pub share: f64,
    pub counts: LabelCounts,
    pub response: HistogramSummary,
    pub service: HistogramSummary,
    pub send_lag: HistogramSummary,
    /// The lower bounds of the label's censored requests and timeouts (also inside
    /// `response`): what a merge needs to tell which summed percentiles are lower bounds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub censored: Option<HistogramSummary>,
    /// The same for `service`: the service times of requests sent and unanswered at the end
    /// (at least end − sent) and of timeouts.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub censored_service: Option<HistogramSummary>,
    /// The label's timeline (journeys' steps and journeys): its response times per interval
    /// in which something finished, in time order, on the run's clock. Its percentiles'
    /// intervals, its `--slo` verdicts and its `diff` read them. Empty for targets.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub intervals: Vec<LabelInterval>,
}

/// One interval of a label's timeline: the response times of its requests (or journeys) that
/// finished in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelInterval {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub response_hdr: String,
}

impl LabelInterval {
    /// `record`'s timeline as the result carries it; empty when it keeps none.
    pub fn all_of(record: &crate::record::LabelRecord) -> Vec<LabelInterval> {
        let Some(t) = &record.timeline else {
            return Vec::new();
        };
        let width = nanos(t.width());
        t.intervals()
            .iter()
            .map(|(index, h)| LabelInterval {
                start_ns: index.saturating_mul(width),
                duration_ns: width,
                response_hdr: encode_base64(h),
            })
            .collect()
    }
}

/// Every request of a label ends in exactly one of these, as the run's own counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelCounts {
    pub completed: u64,
    pub failed: crate::outcome::FailureCounts,
    pub censored: u64,
    pub never_sent: u64,
}

impl LabelCounts {
    /// Requests of this label accounted for, whatever their end.
    pub fn total(&self) -> u64 {
        self.completed
            .saturating_add(self.failed.total())
            .saturating_add(self.censored)
            .saturating_add(self.never_sent)
    }
}

impl TargetResult {
    /// Label `label`'s record as the result carries it.
    pub fn of(label: &str, share: f64, r: &crate::record::LabelRecord) -> TargetResult {
        let none = crate::record::new_histogram();
        TargetResult {
            label: label.to_string(),
            share,
            counts: LabelCounts {
                completed: r.tally.completed,
                failed: r.tally.failed,
                censored: r.tally.censored,
                never_sent: r.tally.never_sent,
            },
            response: HistogramSummary::of(&r.response, &r.censored),
            service: HistogramSummary::of(&r.service, &r.censored_service),
            send_lag: HistogramSummary::of(&r.send_lag, &none),
            censored: (!r.censored.is_empty()).then(|| HistogramSummary::of(&r.censored, &none)),
            censored_service: (!r.censored_service.is_empty())
                .then(|| HistogramSummary::of(&r.censored_service, &none)),
            intervals: LabelInterval::all_of(r),
        }
    }

    /// This label's share of the requests the labels account for (`counts` over the sum of
    /// every label's): what the run actually sent, beside the expected [`TargetResult::share`].
    pub fn actual_share(&self, all: &[TargetResult]) -> Option<f64> {
        let total = all
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(t.counts.total()));
        (total > 0).then(|| self.counts.total() as f64 / total as f64)
    }
}

/// One stage of a shaped run as the result records it: where it sits on the run's clock and
/// the rate at its two ends (equal for a hold). The rate moves linearly in between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageConfig {
    /// The name given in a plan file, if any; stages are otherwise known by number (from 1).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    pub start_ns: u64,
    pub duration_ns: u64,
    /// Requests per second at the start of the stage.
    pub from: f64,
    /// Requests per second at its end.
    pub to: f64,
}

impl StageConfig {
    /// Where the stage ends on the run's clock. Saturating: a loaded file may hold any numbers.
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }

    /// How the stage is named in tables and objectives: its name, or its number from 1.
    pub fn title(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| (index + 1).to_string())
    }
}

impl RunConfig {
    /// Records a schedule's rate and arrival law (with its seed or ramp target) and its end.
    pub fn describe_schedule(&mut self, s: &crate::schedule::Schedule) {
        self.rate = Some(s.rate.get());
        self.arrival = Some(s.arrival.name().to_string());
        match s.arrival {
            crate::schedule::Arrival::Poisson { seed } => self.seed = Some(seed),
            crate::schedule::Arrival::Ramp { to } => self.ramp_to = Some(to.get()),
            crate::schedule::Arrival::Constant => {}
        }
        self.stages = s.stages.as_ref().map(crate::stages::Stages::configs);
        self.describe_end(s.end);
    }

    /// Records where a run ends: after a duration, or after a count of requests.
    pub fn describe_end(&mut self, end: crate::schedule::End) {
        match end {
            crate::schedule::End::After(d) => self.duration_ns = Some(nanos(d)),
            crate::schedule::End::Count(n) => self.requests = Some(n),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub scheduled: u64,
    pub completed: u64,
    pub failed: crate::outcome::FailureCounts,
    pub censored: u64,
    pub never_sent: u64,
    pub waited_for_connection: u64,
    /// A merge only: requests of shards that are missing or cut short, which nobody measured.
    #[serde(skip_serializing_if = "is_zero", default)]
    pub not_measured: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Counts {
    /// Scheduled requests not accounted for by any outcome. Zero in every honest result.
    /// Summed wide: a loaded file's counts may be anything.
    pub fn unaccounted(&self) -> i128 {
        let accounted = u128::from(self.completed)
            + self.failed.total_wide()
            + u128::from(self.censored)
            + u128::from(self.never_sent)
            + u128::from(self.not_measured);
        i128::from(self.scheduled) - accounted as i128
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateSummary {
    pub target: Option<f64>,
    /// Answers (completed or failed) per second of elapsed run time.
    pub achieved: f64,
    /// Requests sent per second of elapsed run time.
    pub sent: f64,
}

impl RateSummary {
    /// A journey run's rate, in journeys per second, as a single run and a merge of shards
    /// both give it (its counts count steps, several per journey): the journeys that started (a
    /// place was free before the end) over the schedule's length, or the run's if shorter.
    pub fn of_journeys(config: &RunConfig, elapsed_ns: u64, journeys: &[TargetResult]) -> Self {
        let length = config.duration_ns.map_or(elapsed_ns, |d| d.min(elapsed_ns));
        let secs = (length as f64 / 1e9).max(1e-9);
        let started = journeys.iter().fold(0u64, |sum, j| {
            sum.saturating_add(j.counts.total().saturating_sub(j.counts.never_sent))
        });
        RateSummary {
            target: config.rate,
            achieved: started as f64 / secs,
            sent: started as f64 / secs,
        }
    }
}

/// Percentile → value, kept in ascending percentile order in JSON.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Percentiles(pub Vec<(f64, u64)>);

impl Percentiles {
    pub fn get(&self, p: f64) -> Option<u64> {
        self.0
            .iter()
            .find(|(q, _)| (*q - p).abs() < 1e-9)
            .map(|(_, v)| *v)
    }
}

pub fn percentile_key(p: f64) -> String {
    let s = format!("{p}");
    s.trim_end_matches(".0").to_string()
}

impl Serialize for Percentiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (p, v) in &self.0 {
            map.serialize_entry(&percentile_key(*p), v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Percentiles {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let map = BTreeMap::<String, u64>::deserialize(d)?;
        let mut out = Vec::with_capacity(map.len());
        for (k, v) in map {
            // NaN would not even equal itself; beyond 0–100 is no percentile.
            let p = k.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p));
            let p = p.ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "percentile key {k:?} is not a percentile from 0 to 100"
                ))
            })?;
            out.push((p.abs(), v));
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        // "99" and "99.0" are one percentile: which value would be meant?
        if let Some(w) = out.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(serde::de::Error::custom(format!(
                "percentile {} is given twice",
                percentile_key(w[0].0)
            )));
        }
        Ok(Percentiles(out))
    }
}

/// One histogram, summarised and carried whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramSummary {
    pub unit: String,
    pub count: u64,
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub stdev: f64,
    pub percentiles: Percentiles,
    /// The percentiles (keys of `percentiles`) that are only lower bounds because censored
    /// requests or timeouts could move them.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub lower_bounds: Vec<String>,
    /// A distribution-free confidence interval for each percentile (absent for imported
    /// summaries, which carry no histogram to compute one from).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub ci: Option<CiSet>,
    /// An interval for each percentile that allows for dependence between requests (batch
    /// means over the run's intervals, see [`crate::batches`]), or why the run cannot support
    /// one. Only on a run's response times, where its timeline is known.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub batch_ci: Option<crate::batches::BatchSet>,
    /// Percentiles with fewer than ten samples beyond them: not meaningful at this run size.
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub thin: BTreeMap<String, Thin>,
    /// The whole histogram: HdrHistogram V2 compressed, base64 (as in .hlog files).
    pub hdr: String,
}

impl HistogramSummary {
    pub fn of(h: &Histogram<u64>, censored: &Histogram<u64>) -> HistogramSummary {
        let empty = h.is_empty();
        let bounds: Vec<(f64, Bound)> = PERCENTILES
            .iter()
            .map(|&p| (p, bound_at(h, censored, p)))
            .collect();
        let (ci, thin) = intervals_of(h, censored, &PERCENTILES, percentile_key);
        HistogramSummary {
            unit: "ns".into(),
            count: h.len(),
            min: if empty { 0 } else { h.min() },
            max: h.max(),
            mean: if empty { 0.0 } else { h.mean() },
            stdev: if empty { 0.0 } else { h.stdev() },
            percentiles: Percentiles(bounds.iter().map(|(p, b)| (*p, b.value)).collect()),
            lower_bounds: bounds
                .iter()
                .filter(|(_, b)| b.lower_bound)
                .map(|(p, _)| percentile_key(*p))
                .collect(),
            ci,
            batch_ci: None,
            thin,
            hdr: encode_base64(h),
        }
    }

    /// The confidence interval at `p`, when there is one.
    pub fn ci_at(&self, p: f64) -> Option<Ci> {
        self.ci
            .as_ref()?
            .percentiles
            .get(&percentile_key(p))
            .copied()
    }

    /// The sample-size warning at `p`, when it rests on too few samples.
    pub fn thin_at(&self, p: f64) -> Option<Thin> {
        self.thin.get(&percentile_key(p)).copied()
    }

    /// The value at `p` and whether it is only a lower bound.
    pub fn at(&self, p: f64) -> Option<Bound> {
        let value = self.percentiles.get(p)?;
        Some(Bound {
            value,
            lower_bound: self.lower_bounds.contains(&percentile_key(p)),
        })
    }

    /// Decodes the carried histogram.
    pub fn histogram(&self) -> Result<Histogram<u64>, HdrDecodeError> {
        decode_base64(&self.hdr)
    }
}

/// A carried histogram could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum HdrDecodeError {
    /// The `hdr` field is not base64: the file was edited or truncated.
    #[error("hdr field is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not an HdrHistogram V2 histogram: the file was edited or truncated.
    #[error("hdr field is not an HdrHistogram V2 histogram: {0}")]
    Histogram(#[from] hdrhistogram::serialization::DeserializeError),
    /// The histogram declares more data than it carries, or inflates beyond any histogram
    /// sojourn writes: the file was edited or damaged. Regenerate it.
    #[error("hdr field is not an HdrHistogram V2 histogram: {0}")]
    Damaged(String),
}

pub fn encode_base64(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .expect("serializing into a Vec cannot fail");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn decode_base64(text: &str) -> Result<Histogram<u64>, HdrDecodeError> {
    let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
    let v2 = checked_v2(&bytes)?;
    let h: Histogram<u64> = Deserializer::new().deserialize(&mut std::io::Cursor::new(v2))?;
    if h.len() > MAX_COUNT {
        return Err(HdrDecodeError::Damaged(format!(
            "it counts {} values, more than any run records",
            h.len()
        )));
    }
    Ok(h)
}

/// The most values a histogram holds: 2^53 (285 years of a million requests a second).
/// hdrhistogram ranks a quantile in `f64`, exact only up to 2^53: beyond it the top quantiles
/// come out as 0 (and beyond 2^63 a histogram cannot be written at all).
pub const MAX_COUNT: u64 = 1 << 53;

/// The cookies hdrhistogram writes and reads: the reference's V2 cookies (0x1c849303 and
/// 0x1c849304) with its word-size flag 0x10 set.
const V2_COOKIE: u32 = 0x1c84_9313;
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// A V2 histogram's header: cookie, payload length, normalizing offset, significant digits
/// (u32 each), lowest and highest trackable value (u64 each), integer-to-double ratio (f64).
const V2_HEADER: usize = 40;
/// More than any histogram sojourn writes inflates to (a 3-digit histogram of every value up to
/// u64::MAX is well under a megabyte of counts, at most 9 bytes each).
const MAX_INFLATED: u64 = 16 << 20;

/// The uncompressed V2 form of `bytes`, once its declared payload length is checked against
/// what is there. hdrhistogram allocates whatever a header declares before reading it, so a
/// damaged header of a few bytes would otherwise ask for gigabytes.
fn checked_v2(bytes: &[u8]) -> Result<Vec<u8>, HdrDecodeError> {
    let cookie = |b: &[u8]| {
        b.get(..4)
            .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")))
    };
    let v2 = match cookie(bytes) {
        Some(V2_COMPRESSED_COOKIE) => inflate(bytes)?,
        // Anything else is the deserializer's to refuse.
        _ => bytes.to_vec(),
    };
    if cookie(&v2) == Some(V2_COOKIE) {
        let declared = v2
            .get(4..8)
            .map_or(0, |b| u32::from_be_bytes(b.try_into().expect("4 bytes")));
        let carried = v2.len().saturating_sub(V2_HEADER);
        if declared as usize > carried {
            return Err(HdrDecodeError::Damaged(format!(
                "it declares a {declared}-byte payload but carries {carried} bytes"
            )));
        }
        // A V2 shorter than its header is the deserializer's to refuse.
        let payload = v2.get(V2_HEADER..V2_HEADER + declared as usize);
        if payload.is_some_and(holds_min_count) {
            return Err(HdrDecodeError::Damaged(
                "it holds a run of 2^63 empty buckets".into(),
            ));
        }
    }
    Ok(v2)
}

/// Whether a V2 payload holds the one number hdrhistogram cannot take: -2^63 (a run of empty
/// buckets), whose negation overflows in its decoder (a panic where overflow is checked, as in
/// debug builds). The numbers are zig-zag encoded varints as hdrhistogram writes them: seven
/// bits a byte with a continuation bit, and a ninth byte of eight bits.
fn holds_min_count(payload: &[u8]) -> bool {
    let mut bytes = payload.iter();
    loop {
        let mut value = 0u64;
        for shift in (0..=56).step_by(7) {
            // A varint cut short is the deserializer's to refuse.
            let Some(&b) = bytes.next() else {
                return false;
            };
            if shift == 56 {
                value |= u64::from(b) << 56;
                break;
            }
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                break;
            }
        }
        // The zig-zag encoding of i64::MIN.
        if value == u64::MAX {
            return true;
        }
    }
}

/// The V2 histogram inside a compressed one: cookie, deflated length, zlib stream.
fn inflate(bytes: &[u8]) -> Result<Vec<u8>, HdrDecodeError> {
    use std::io::Read as _;
    let damaged = |what: String| HdrDecodeError::Damaged(what);
    let len = bytes
        .get(4..8)
        .map(|b| u32::from_be_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or_else(|| damaged("it ends inside its header".into()))?;
    let stream = bytes.get(8..8 + len).ok_or_else(|| {
        damaged(format!(
            "it declares {len} compressed bytes but carries {}",
            bytes.len() - 8
        ))
    })?;
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(stream)
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut out)
        .map_err(|e| damaged(format!("its compressed bytes do not inflate: {e}")))?;
    if out.len() as u64 > MAX_INFLATED {
        return Err(damaged(format!(
            "it inflates beyond {MAX_INFLATED} bytes, more than any histogram sojourn writes"
        )));
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistogramSet {
    pub response: HistogramSummary,
    pub service: HistogramSummary,
    pub send_lag: HistogramSummary,
    /// The generator's own lateness (open loop).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dispatch_lag: Option<HistogramSummary>,
    /// The lower bounds of censored requests and timeouts (also inside `response`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub censored: Option<HistogramSummary>,
    /// The lower bounds inside `service`: requests sent and unanswered at the end (at least
    /// end − sent) and timeouts. Absent when there were none, and in results written before it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub censored_service: Option<HistogramSummary>,
    /// Closed loop only: the expected-interval back-filled estimate. Not a measurement.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub backfilled: Option<HistogramSummary>,
    /// This process's own hiccups during the run: how late a thread of the generator that only
    /// sleeps to a fixed tick got the CPU back. It shares the generator's cores, so the
    /// generator's own work makes it late too: it excuses nothing.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub hiccup: Option<HistogramSummary>,
    /// The machine's hiccups during the run, from the control meter: the same measurement in an
    /// idle child process of its own, off the generator's cores when one is free (jHiccup's
    /// control process). The floor under any send lag on this machine, and the only meter that
    /// may excuse lateness as the machine's.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub control_hiccup: Option<HistogramSummary>,
}

impl HistogramSet {
    /// The mean service time of the requests whose service time was measured: the lower
    /// bounds of those in flight at the end or timed out are left out, since a mean of bounds
    /// and answers is neither. The stored mean when the histograms cannot be read (an import).
    pub fn measured_service_mean(&self) -> f64 {
        let Some(bounds) = &self.censored_service else {
            return self.service.mean;
        };
        let (Ok(mut measured), Ok(bounds)) = (self.service.histogram(), bounds.histogram()) else {
            return self.service.mean;
        };
        match measured.subtract(&bounds) {
            Ok(()) if !measured.is_empty() => measured.mean(),
            _ => self.service.mean,
        }
    }
}

/// One interval of the timeline (requests keyed by when they finished).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSummary {
    pub start_ns: u64,
    pub duration_ns: u64,
    pub completed: u64,
    pub failed: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
    pub send_lag_p99: u64,
    pub response_hdr: String,
    pub send_lag_hdr: String,
}

impl IntervalSummary {
    /// Where the interval ends. Saturating: a loaded file may hold any numbers.
    pub fn end_ns(&self) -> u64 {
        self.start_ns.saturating_add(self.duration_ns)
    }

    /// The requests that finished in it, completed or failed.
    pub fn answered(&self) -> u64 {
        self.completed.saturating_add(self.failed)
    }

    /// The response times of every request that finished in these intervals, in one histogram.
    pub fn merged_response(
        intervals: &[&IntervalSummary],
    ) -> Result<Histogram<u64>, HdrDecodeError> {
        let mut out = crate::record::new_histogram();
        for i in intervals {
            out.add(decode_base64(&i.response_hdr)?)
                .expect("auto-resizing histograms accept any values");
        }
        Ok(out)
    }

    fn of(record: &IntervalRecord, width: Duration) -> IntervalSummary {
        IntervalSummary::summarise(
            record.index * nanos(width),
            nanos(width),
            (record.completed, record.failed),
            &record.response_histogram(),
            &record.send_lag_histogram(),
        )
    }

    /// An interval from its histograms: its percentiles read off them, both carried whole.
    pub fn summarise(
        start_ns: u64,
        duration_ns: u64,
        (completed, failed): (u64, u64),
        response: &Histogram<u64>,
        send_lag: &Histogram<u64>,
    ) -> IntervalSummary {
        IntervalSummary {
            start_ns,
            duration_ns,
            completed,
            failed,
            p50: response.value_at_quantile(0.5),
            p99: response.value_at_quantile(0.99),
            max: response.max(),
            send_lag_p99: send_lag.value_at_quantile(0.99),
            response_hdr: encode_base64(response),
            send_lag_hdr: encode_base64(send_lag),
        }
    }
}

/// The whole result document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema: String,
    pub tool: Tool,
    pub label: String,
    pub mode: Mode,
    pub config: RunConfig,
    /// The scenario served or simulated, when known.
    pub scenario: Option<serde_json::Value>,
    pub counts: Counts,
    pub rate: RateSummary,
    pub histograms: HistogramSet,
    pub intervals: Vec<IntervalSummary>,
    pub checks: Checks,
    /// From the start of the run to the end of its drain.
    pub elapsed_ns: u64,
    /// The run was stopped early (Ctrl-C); everything gathered so far is here.
    #[serde(default)]
    pub interrupted: bool,
    /// Wall-clock time of the run's start (Unix epoch, ns), when it ran in real time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub started_unix_ns: Option<u64>,
    /// Arrival conformance, steady state and any warm-up trim.
    #[serde(default)]
    pub statistics: Statistics,
    /// Where an imported peer tool's result came from; `None` for sojourn's own runs.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub import: Option<ImportInfo>,
    /// Which plan this run belongs to and its place in it (shard, due count, start skew).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub placement: Option<crate::placement::Placement>,
    /// A merge of shard results: where they came from and which shards were missing or short.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub merged: Option<crate::placement::MergeInfo>,
    /// Final answers by HTTP status code (requests that failed before an answer have none).
    #[serde(skip_serializing_if = "BTreeMap::is_empty", default)]
    pub statuses: BTreeMap<u16, u64>,
    /// Many requests (`--targets`): one entry per label, in the targets file's order.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub targets: Vec<TargetResult>,
    /// Journeys (`--journey`): one entry per step of every journey (`JOURNEY/STEP`), in the
    /// file's order, each timed from its own due time. Their counts add up to the run's.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub steps: Vec<TargetResult>,
    /// Journeys (`--journey`): one entry per journey, its time from its due time to the end of
    /// its last step. Its counts count journeys: `never_sent` is never started, `censored`
    /// still running at the end, and a failure is counted under the class of the step that
    /// ended the journey. `share` is the journey's weight over all.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub journeys: Vec<TargetResult>,
    /// `--repeat N`: each repetition's own summary and the between-run interval of every
    /// percentile. The histograms, counts and timeline above are the repetitions merged.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub repetitions: Option<crate::repeat::Repetitions>,
    /// Server-streaming gRPC calls: their first messages and how many messages came. Absent
    /// for every other run (and when no call got a message).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub stream: Option<StreamSummary>,
}

/// What a run of server-streaming calls adds: each call's response time runs from its due
/// time to its last message and status, as for any call; this is the first message's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamSummary {
    /// Messages the answers carried, in all calls.
    pub messages: u64,
    /// first message − intended, for the calls that got at least one message.
    pub first_message: HistogramSummary,
}

/// How much an imported result knows: every request, or only the tool's own summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Detail {
    /// One record per request: histograms and timelines are rebuilt from them.
    PerRequest,
    /// Only the tool's percentile summary: `hdr` fields are empty and only the percentiles the
    /// tool printed are present.
    Summary,
}

/// The provenance of an imported result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportInfo {
    pub detail: Detail,
    /// The file (or files) read.
    pub source: Vec<String>,
    /// What the tool could not express or report (e.g. "no per-request data", "dropped
    /// iterations: 412").
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub notes: Vec<String>,
}

/// What a sender knows about its run besides the measurements.
#[derive(Debug, Clone)]
pub struct RunFacts {
    pub label: String,
    pub mode: Mode,
    pub config: RunConfig,
    pub scheduled: u64,
    pub elapsed: Duration,
    pub interrupted: bool,
    pub checks: Checks,
    /// Closed loop: the per-connection interval used for the back-filled estimate.
    pub backfill_interval: Option<Duration>,
}

impl RunResult {
    pub fn build(m: &Measurements, facts: RunFacts) -> RunResult {
        let secs = facts.elapsed.as_secs_f64().max(1e-9);
        let answered = m.tally.completed + m.tally.failed.total();
        let has_dispatch = facts.mode == Mode::Open;
        let none = crate::record::new_histogram();
        let conformance = has_dispatch
            .then(|| run_conformance(m, &facts.config))
            .flatten();
        let mut result = RunResult {
            schema: SCHEMA.into(),
            tool: Tool::sojourn(),
            label: facts.label,
            mode: facts.mode,
            counts: Counts {
                scheduled: facts.scheduled,
                completed: m.tally.completed,
                failed: m.tally.failed,
                censored: m.tally.censored,
                never_sent: m.tally.never_sent,
                waited_for_connection: m.tally.waited_for_connection,
                not_measured: 0,
            },
            rate: RateSummary {
                target: facts.config.rate,
                achieved: answered as f64 / secs,
                sent: m.hist.send_lag.len() as f64 / secs,
            },
            histograms: HistogramSet {
                response: HistogramSummary::of(&m.hist.response, &m.censored),
                service: HistogramSummary::of(&m.hist.service, &m.censored_service),
                send_lag: HistogramSummary::of(&m.hist.send_lag, &none),
                dispatch_lag: has_dispatch
                    .then(|| HistogramSummary::of(&m.hist.dispatch_lag, &none)),
                censored: (!m.censored.is_empty())
                    .then(|| HistogramSummary::of(&m.censored, &none)),
                censored_service: (!m.censored_service.is_empty())
                    .then(|| HistogramSummary::of(&m.censored_service, &none)),
                backfilled: facts
                    .backfill_interval
                    .map(|i| HistogramSummary::of(&m.backfilled(i), &none)),
                hiccup: None,
                control_hiccup: None,
            },
            intervals: m
                .intervals
                .iter()
                .map(|r| IntervalSummary::of(r, m.interval))
                .collect(),
            config: facts.config,
            scenario: None,
            checks: facts.checks,
            elapsed_ns: nanos(facts.elapsed),
            interrupted: facts.interrupted,
            started_unix_ns: None,
            statistics: Statistics {
                steady_state: steady_state_of(&interval_medians(&m.intervals, m.interval)),
                conformance,
                warmup: None,
                validity: None,
            },
            import: None,
            placement: None,
            merged: None,
            statuses: m.statuses.clone(),
            targets: Vec::new(),
            steps: Vec::new(),
            journeys: Vec::new(),
            repetitions: None,
            stream: (m.tally.messages > 0).then(|| StreamSummary {
                messages: m.tally.messages,
                first_message: HistogramSummary::of(&m.hist.first_message, &none),
            }),
        }
        .with_batch_intervals();
        result.statistics.validity = Some(crate::validity::validity_of(&result));
        result
    }

    /// The response percentiles' batch-means intervals, from the document's own timeline (the
    /// intervals after any warm-up trim), replacing any it had.
    pub fn with_batch_intervals(mut self) -> RunResult {
        self.histograms.response.batch_ci = batch_set_of(&self);
        self
    }
}

/// See [`RunResult::with_batch_intervals`]; `None` when the document carries no histograms
/// (an imported summary) or an interval's cannot be read.
fn batch_set_of(r: &RunResult) -> Option<crate::batches::BatchSet> {
    let whole = decode_base64(&r.histograms.response.hdr).ok()?;
    let censored = match &r.histograms.censored {
        Some(c) => decode_base64(&c.hdr).ok()?,
        None => crate::record::new_histogram(),
    };
    let from = r.statistics.warmup.map_or(0, |w| w.until_ns);
    let intervals = r
        .intervals
        .iter()
        .filter(|i| i.start_ns >= from)
        .map(|i| decode_base64(&i.response_hdr))
        .collect::<Result<Vec<_>, _>>()
        .ok()?;
    crate::batches::batch_set(&whole, &censored, &intervals, &PERCENTILES, percentile_key)
}

/// A warm-up to leave out of the summary histograms (`--warmup auto|D`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WarmupRequest {
    /// As long as MSER finds on the per-interval medians (possibly nothing).
    Auto,
    /// Exactly this long from the start, rounded up to a whole interval.
    Fixed(Duration),
}

impl RunResult {
    /// [`RunResult::build`], with the warm-up left out of the percentiles when one is asked
    /// for. The counts, rates and timeline still cover the whole run, and the steady-state
    /// verdict is the whole run's.
    pub fn build_with_warmup(
        m: &Measurements,
        facts: RunFacts,
        warmup: Option<WarmupRequest>,
    ) -> RunResult {
        let Some(request) = warmup else {
            return RunResult::build(m, facts);
        };
        let (until, method) = match request {
            WarmupRequest::Fixed(d) => (d, WarmupMethod::Fixed),
            WarmupRequest::Auto => {
                let found = steady_state_of(&interval_medians(&m.intervals, m.interval))
                    .map_or(0, |s| s.warmup_ns);
                (Duration::from_nanos(found), WarmupMethod::Auto)
            }
        };
        let (kept, trimmed) = m.without_warmup(until);
        let mut result = RunResult::build(&kept, facts);
        result.statistics.warmup = Some(WarmupTrim {
            method,
            until_ns: nanos(trimmed.until),
            requests: trimmed.requests,
        });
        // The serial tests start after the trim too.
        result.statistics.validity = Some(crate::validity::validity_of(&result));
        result.with_batch_intervals()
    }
}

/// The conformance of an open-loop run's sends to its configured arrival process.
fn run_conformance(m: &Measurements, config: &RunConfig) -> Option<Conformance> {
    sends_conformance(m, config, config.threads.unwrap_or(1))
}

/// The conformance of the sends of `senders` senders that split the configured schedule
/// between them (a shard's threads split the whole plan's schedule N·T ways).
pub fn sends_conformance(
    m: &Measurements,
    config: &RunConfig,
    senders: u32,
) -> Option<Conformance> {
    let arrival = config.arrival.as_deref()?;
    // A ramp's slot shrinks as it climbs: judge it at its mean rate.
    let rate = match config.ramp_to {
        Some(to) => (config.rate? + to) / 2.0,
        None => config.rate?,
    };
    let senders = f64::from(senders.max(1));
    let lane_interval = Duration::from_secs_f64(senders / rate.max(1e-9));
    let lag_p99 = m.hist.send_lag.value_at_quantile(0.99);
    conformance_of(arrival, &m.gaps, lane_interval, lag_p99)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::check::assess_open;
    use crate::outcome::{FailureClass, Outcome};
    use crate::record::{Recorder, Stamps};

    pub(crate) fn sample_result() -> RunResult {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..3000u64 {
            let at = Duration::from_millis(i);
            r.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(1 + i % 13),
                Outcome::Ok,
            );
        }
        r.record_in_flight(
            &Stamps::on_time(Duration::from_millis(2999)),
            Duration::from_secs(3),
        );
        let m = Recorder::merge_all([r]);
        let facts = RunFacts {
            label: "open".into(),
            mode: Mode::Open,
            config: RunConfig {
                rate: Some(1000.0),
                arrival: Some("constant".into()),
                duration_ns: Some(3_000_000_000),
                connections: 10,
                interval_ns: 1_000_000_000,
                ..Default::default()
            },
            scheduled: 3001,
            elapsed: Duration::from_secs(3),
            interrupted: false,
            checks: assess_open(&m, 10),
            backfill_interval: None,
        };
        RunResult::build(&m, facts)
    }

    #[test]
    fn result_round_trips_and_keeps_percentile_order() {
        let result = sample_result();
        let text = serde_json::to_string_pretty(&result).unwrap();
        let keys: Vec<&str> = text
            .lines()
            .filter_map(|l| l.trim().strip_prefix('"'))
            .filter_map(|l| l.split('"').next())
            .filter(|k| k.starts_with(|c: char| c.is_ascii_digit()))
            .take(6)
            .collect();
        assert_eq!(keys, ["50", "90", "99", "99.9", "99.99", "100"]);
        let back: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, result);
        assert_eq!(back.counts.unaccounted(), 0);
        assert_eq!(back.histograms.response.histogram().unwrap().len(), 3001);
        assert!(
            back.histograms.response.at(100.0).unwrap().lower_bound,
            "the censored one could be the max"
        );
        assert!(
            !back.histograms.response.at(50.0).unwrap().lower_bound,
            "one censored of 3001 cannot move p50"
        );
        assert_eq!(back.histograms.censored.as_ref().unwrap().count, 1);
        assert_eq!(back.intervals.len(), 4, "0,1,2 and the censored one at 3 s");
    }

    /// An interrupted run mid-stall: 500 answered in 10 ms, then 30 sent at 1 ms intervals
    /// into a stall and still out when the run stopped a second later. Their response times
    /// and their service times are lower bounds alike, and a result written before
    /// `censored_service` existed still reads.
    #[test]
    fn requests_in_flight_make_service_percentiles_lower_bounds_too() {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..500u64 {
            let at = Duration::from_millis(i);
            r.record(
                &Stamps::on_time(at),
                at + Duration::from_millis(10),
                Outcome::Ok,
            );
        }
        for i in 500..530u64 {
            let s = Stamps::on_time(Duration::from_millis(i));
            r.record_in_flight(&s, Duration::from_millis(1_500));
        }
        let m = Recorder::merge_all([r]);
        let facts = RunFacts {
            label: "stalled".into(),
            mode: Mode::Open,
            config: RunConfig {
                interval_ns: 1_000_000_000,
                ..Default::default()
            },
            scheduled: 530,
            elapsed: Duration::from_millis(1_500),
            interrupted: true,
            checks: assess_open(&m, 64),
            backfill_interval: None,
        };
        let result = RunResult::build(&m, facts);
        let h = &result.histograms;
        for p in [99.0, 100.0] {
            let (response, service) = (h.response.at(p).unwrap(), h.service.at(p).unwrap());
            assert!(response.lower_bound, "response p{p}");
            assert!(service.lower_bound, "service p{p}: {service:?}");
            assert!(service.value >= 970_000_000, "at least 1.5 s − 530 ms");
        }
        assert!(!h.service.at(50.0).unwrap().lower_bound);
        assert_eq!(h.service.count, 530, "the 30 in flight are in service too");
        assert_eq!(h.censored_service.as_ref().unwrap().count, 30);
        let doc = serde_json::to_value(&result).unwrap();
        let errors: Vec<String> = schema_validator()
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let mut older = doc.clone();
        older["histograms"]
            .as_object_mut()
            .unwrap()
            .remove("censored_service");
        let back: RunResult = serde_json::from_value(older).unwrap();
        assert_eq!(back.histograms.censored_service, None);
    }

    #[test]
    fn result_matches_the_checked_in_schema() {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
        let validator = jsonschema::validator_for(&schema).unwrap();
        let doc = serde_json::to_value(sample_result()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        let mut broken = doc.clone();
        broken["counts"]["scheduled"] = serde_json::json!("many");
        assert!(
            !validator.is_valid(&broken),
            "the schema must reject a malformed count"
        );
    }

    fn schema_validator() -> jsonschema::Validator {
        let schema: serde_json::Value =
            serde_json::from_str(include_str!("../../../schema/result.schema.json")).unwrap();
        jsonschema::validator_for(&schema).unwrap()
    }

    /// An HTTP/2 run of two labels: `GET /ok` answered 200, `GET /nf` 404 and reset once,
    /// one request of `GET /ok` still in flight at the end.
    fn labelled_result() -> RunResult {
        let labels = ["GET /ok", "GET /nf"];
        let mut r = Recorder::with_labels(Duration::from_secs(1), labels.len());
        for i in 0..300u64 {
            let at = Duration::from_millis(i);
            let s = Stamps::on_time(at);
            let label = (i % 3 == 2) as usize;
            let done = at + Duration::from_millis(2);
            let (outcome, status) = match (label, i) {
                (1, 5) => (Outcome::Failed(FailureClass::Reset), None),
                (1, _) => (Outcome::of_status(404), Some(404)),
                _ => (Outcome::Ok, Some(200)),
            };
            r.record(&s, done, outcome);
            r.label(label).unwrap().record(&s, done, outcome);
            if let Some(code) = status {
                r.record_status(code);
            }
        }
        let late = Stamps::on_time(Duration::from_millis(300));
        r.record_in_flight(&late, Duration::from_secs(1));
        r.label(0).unwrap().record_unfinished(
            late.intended,
            Some(late.sent),
            Duration::from_secs(1),
        );
        let m = Recorder::merge_all([r]);
        let facts = RunFacts {
            label: "h2".into(),
            mode: Mode::Open,
            config: RunConfig {
                rate: Some(1000.0),
                arrival: Some("constant".into()),
                duration_ns: Some(300_000_000),
                connections: 2,
                interval_ns: 1_000_000_000,
                protocol: Some("h2c".into()),
                streams: Some(128),
                targets: Some(TargetsConfig {
                    file: "targets.txt".into(),
                    count: 2,
                    order: "random".into(),
                    seed: Some(7),
                }),
                ..Default::default()
            },
            scheduled: m.tally.accounted(),
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: assess_open(&m, 256),
            backfill_interval: None,
        };
        let mut result = RunResult::build(&m, facts);
        let shares = [2.0 / 3.0, 1.0 / 3.0];
        result.targets = labels
            .iter()
            .zip(shares)
            .zip(&m.labels)
            .map(|((label, share), record)| TargetResult::of(label, share, record))
            .collect();
        result
    }

    #[test]
    fn a_result_with_targets_and_statuses_round_trips_and_matches_the_schema() {
        let result = labelled_result();
        assert_eq!(
            result.statuses.values().sum::<u64>(),
            299,
            "all but the reset"
        );
        let text = serde_json::to_string(&result).unwrap();
        let back: RunResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, result);
        let ok = &back.targets[0];
        assert!(ok.censored.is_some() && ok.response.at(100.0).unwrap().lower_bound);
        assert!(back.targets[1].censored.is_none(), "nothing censored there");
        assert_eq!(back.targets[1].counts.failed.get(FailureClass::Reset), 1);

        let validator = schema_validator();
        let doc = serde_json::to_value(&result).unwrap();
        for field in ["statuses", "targets"] {
            assert!(doc.get(field).is_some(), "the document has {field}");
        }
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{} at {}", e, e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        type Break = fn(&mut serde_json::Value);
        let broken: [(&str, Break); 6] = [
            ("a status that is no code", |d| {
                d["statuses"]["ok"] = 1.into();
            }),
            ("a label's unknown failure class", |d| {
                d["targets"][1]["counts"]["failed"]["refused"] = 1.into();
            }),
            ("a share above 1", |d| d["targets"][0]["share"] = 1.5.into()),
            ("a target without its response", |d| {
                d["targets"][0].as_object_mut().unwrap().remove("response");
            }),
            ("an order sojourn has not", |d| {
                d["config"]["targets"]["order"] = "shuffled".into();
            }),
            ("a protocol that is not HTTP/2", |d| {
                d["config"]["protocol"] = "h3".into();
            }),
        ];
        for (what, breaks) in broken {
            let mut d = doc.clone();
            breaks(&mut d);
            assert!(!validator.is_valid(&d), "the schema must reject {what}");
        }
    }

    /// A journey run: one journey of two steps, the second failing its check once, and its
    /// journey counted failed there; a journey that never started.
    #[test]
    fn a_result_with_journeys_round_trips_and_matches_the_schema() {
        let mut r = Recorder::with_journeys(Duration::from_secs(1), 2, 1);
        for i in 0..10u64 {
            let due = Duration::from_millis(100 * i);
            let second = due + Duration::from_millis(50);
            let failed = i == 3;
            let (first_done, done) = (
                due + Duration::from_millis(5),
                second + Duration::from_millis(5),
            );
            let s1 = Stamps::on_time(due);
            let s2 = Stamps::on_time(second);
            let outcome = if failed {
                Outcome::Failed(FailureClass::Check)
            } else {
                Outcome::Ok
            };
            r.record(&s1, first_done, Outcome::Ok);
            r.label(0).unwrap().record(&s1, first_done, Outcome::Ok);
            r.record(&s2, done, outcome);
            r.label(1).unwrap().record(&s2, done, outcome);
            r.journey(0).unwrap().record(&s1, done, outcome);
        }
        let never = Duration::from_millis(990);
        r.record_never_sent(never, never, Duration::from_secs(1));
        r.label(0)
            .unwrap()
            .record_unfinished(never, None, Duration::from_secs(1));
        r.journey(0)
            .unwrap()
            .record_unfinished(never, None, Duration::from_secs(1));
        let m = Recorder::merge_all([r]);
        let facts = RunFacts {
            label: "journeys".into(),
            mode: Mode::Open,
            config: RunConfig {
                rate: Some(10.0),
                arrival: Some("constant".into()),
                duration_ns: Some(1_000_000_000),
                connections: 8,
                interval_ns: 1_000_000_000,
                journeys: Some(JourneysConfig {
                    file: "shop.toml".into(),
                    count: 1,
                    steps: 2,
                    max_journeys: 8,
                    seed: 1,
                }),
                ..Default::default()
            },
            scheduled: m.tally.accounted(),
            elapsed: Duration::from_secs(1),
            interrupted: false,
            checks: assess_open(&m, 8),
            backfill_interval: None,
        };
        let mut result = RunResult::build(&m, facts);
        let of = |names: &[&str], records: &[crate::record::LabelRecord]| -> Vec<TargetResult> {
            names
                .iter()
                .zip(records)
                .map(|(n, r)| TargetResult::of(n, 1.0, r))
                .collect()
        };
        result.steps = of(&["shop/login", "shop/buy"], &m.labels);
        result.journeys = of(&["shop"], &m.journeys);
        let doc = serde_json::to_value(&result).unwrap();
        assert_eq!(doc["counts"]["failed"]["check"], 1);
        assert_eq!(doc["journeys"][0]["counts"]["failed"]["check"], 1);
        assert_eq!(doc["journeys"][0]["counts"]["never_sent"], 1);
        assert_eq!(doc["steps"][0]["counts"]["never_sent"], 1);
        let back: RunResult = serde_json::from_value(doc.clone()).unwrap();
        assert_eq!(back, result);
        let validator = schema_validator();
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        type Break = fn(&mut serde_json::Value);
        let broken: [(&str, Break); 3] = [
            ("a journey without its response", |d| {
                d["journeys"][0].as_object_mut().unwrap().remove("response");
            }),
            ("a step's unknown failure class", |d| {
                d["steps"][1]["counts"]["failed"]["oops"] = 1.into();
            }),
            ("journeys with no file", |d| {
                d["config"]["journeys"]
                    .as_object_mut()
                    .unwrap()
                    .remove("file");
            }),
        ];
        for (what, breaks) in broken {
            let mut d = doc.clone();
            breaks(&mut d);
            assert!(!validator.is_valid(&d), "the schema must reject {what}");
        }
        // Written as version 4 knew it, a run without journeys validates against that version.
        let mut v4 = serde_json::to_value(sample_result()).unwrap();
        v4["schema"] = "sojourn.result/4".into();
        assert!(v4["counts"]["failed"].get("check").is_none());
        assert!(validator.is_valid(&v4));
    }

    /// A version 2 document (no statuses, no targets, no protocol) is still valid and reads
    /// as one without them.
    #[test]
    fn a_version_2_document_still_validates_and_reads() {
        let mut doc = serde_json::to_value(sample_result()).unwrap();
        doc["schema"] = "sojourn.result/2".into();
        let failed = doc["counts"]["failed"].as_object_mut().unwrap();
        failed.remove("reset");
        failed.remove("goaway");
        for field in ["statuses", "targets"] {
            assert!(doc.get(field).is_none(), "a run without them writes none");
        }
        assert!(schema_validator().is_valid(&doc));
        let back: RunResult = serde_json::from_value(doc).unwrap();
        assert!(back.statuses.is_empty() && back.targets.is_empty());
        assert_eq!(back.config.protocol, None);
    }

    #[test]
    fn a_version_3_document_without_a_verdict_still_validates_and_reads() {
        let mut doc = serde_json::to_value(sample_result()).unwrap();
        assert_eq!(doc["schema"], SCHEMA);
        assert!(doc["statistics"]["validity"]["valid"].is_boolean());
        doc["schema"] = "sojourn.result/3".into();
        doc["statistics"]
            .as_object_mut()
            .unwrap()
            .remove("validity");
        assert!(schema_validator().is_valid(&doc));
        let back: RunResult = serde_json::from_value(doc).unwrap();
        assert_eq!(back.statistics.validity, None);
        assert!(READABLE_SCHEMAS.contains(&"sojourn.result/3"));
    }

    #[test]
    fn the_schema_knows_the_verdicts_words() {
        let mut doc = serde_json::to_value(sample_result()).unwrap();
        assert!(schema_validator().is_valid(&doc));
        doc["statistics"]["validity"]["tests"][0]["outcome"] = "maybe".into();
        assert!(!schema_validator().is_valid(&doc), "an unknown outcome");
    }
}

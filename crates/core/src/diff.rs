//! A/B comparison of two runs' tails: per-percentile differences with bootstrap intervals.
//!
//! Two runs are only comparable when they asked for the same load: a p99 at 500 req/s says
//! nothing about a change at 1,000 req/s. [`conditions_differ`] names every difference so the
//! caller can refuse, or compare anyway when told to.
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use serde::{Deserialize, Serialize};

use crate::confidence::quantile_difference;
use crate::repeat::Repetitions;
use crate::result::{decode_base64, percentile_key, HistogramSummary, RunResult, TargetResult};

mod repeated;

pub const DIFF_SCHEMA: &str = "sojourn.diff/1";

/// The percentiles compared: the maximum has no interval (it is one sample).
pub const DIFF_PERCENTILES: [f64; 5] = [50.0, 90.0, 99.0, 99.9, 99.99];

/// Rates within this share of each other count as the same.
const RATE_TOLERANCE: f64 = 0.01;

/// Every way the two runs' conditions differ, in words ("rate 1000 vs 500 req/s").
pub fn conditions_differ(a: &RunResult, b: &RunResult) -> Vec<String> {
    let (ca, cb) = (&a.config, &b.config);
    let mut out = Vec::new();
    if a.mode != b.mode {
        out.push(format!("mode {} vs {}", a.mode.label(), b.mode.label()));
    }
    let same_rate = match (ca.rate, cb.rate) {
        (Some(x), Some(y)) => (x - y).abs() <= RATE_TOLERANCE * x.max(y),
        (x, y) => x == y,
    };
    if !same_rate {
        out.push(format!(
            "rate {} vs {} req/s",
            show(ca.rate.map(|r| format!("{r}"))),
            show(cb.rate.map(|r| format!("{r}")))
        ));
    }
    if ca.arrival != cb.arrival || ca.ramp_to != cb.ramp_to {
        out.push(format!(
            "arrival process {} vs {}",
            show(ca.arrival.clone()),
            show(cb.arrival.clone())
        ));
    }
    if ca.duration_ns != cb.duration_ns || ca.requests != cb.requests {
        out.push(format!("length {} vs {}", length(a), length(b)));
    }
    let labels = |ts: &[TargetResult]| ts.iter().map(|t| t.label.clone()).collect::<Vec<_>>();
    for (kind, x, y) in [
        ("steps", labels(&a.steps), labels(&b.steps)),
        ("journeys", labels(&a.journeys), labels(&b.journeys)),
    ] {
        if x != y {
            let list = |l: Vec<String>| match l.is_empty() {
                true => "none".to_string(),
                false => l.join(", "),
            };
            out.push(format!("{kind} {} vs {}", list(x), list(y)));
        }
    }
    let trim = |r: &RunResult| r.statistics.warmup.map_or(0, |w| w.until_ns);
    if trim(a) != trim(b) {
        out.push(format!(
            "warm-up trimmed {} vs {}",
            crate::units::format_ns(trim(a)),
            crate::units::format_ns(trim(b))
        ));
    }
    out
}

fn show(v: Option<String>) -> String {
    v.unwrap_or_else(|| "none".into())
}

fn length(r: &RunResult) -> String {
    match (r.config.duration_ns, r.config.requests) {
        (Some(ns), _) => crate::units::format_ns(ns),
        (_, Some(n)) => format!("{n} requests"),
        _ => "unbounded".into(),
    }
}

/// What the comparison at one percentile can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiffVerdict {
    /// B is slower, and the interval of B − A excludes zero.
    Slower,
    /// B is faster, and the interval excludes zero.
    Faster,
    /// The interval includes zero: no difference this data can show.
    NoDifference,
    /// A value is only a lower bound (censored requests could raise it).
    Censored,
    /// Fewer than ten samples beyond the percentile on one side.
    TooFewSamples,
    /// One side carries only a summary (an imported peer): no interval can be computed.
    NoInterval,
}

impl DiffVerdict {
    pub fn describe(self) -> &'static str {
        match self {
            DiffVerdict::Slower => "B slower (significant)",
            DiffVerdict::Faster => "B faster (significant)",
            DiffVerdict::NoDifference => "no significant difference",
            DiffVerdict::Censored => "cannot tell: a value is only a lower bound",
            DiffVerdict::TooFewSamples => "cannot tell: too few samples beyond it",
            DiffVerdict::NoInterval => "no interval: a summary-only import",
        }
    }
}

/// One percentile compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PercentileDiff {
    pub percentile: String,
    pub a: u64,
    pub b: u64,
    /// b − a, ns.
    pub delta: i64,
    /// The bootstrap interval of b − a, when one could be computed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub interval: Option<(i64, i64)>,
    pub verdict: DiffVerdict,
}

/// How the intervals were bootstrapped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Whole stretches of the timeline resampled together: response times under load are
    /// correlated (a queue slows its neighbours), so single requests are not independent.
    BlockBootstrap,
    /// Requests resampled one by one: only when a run has too few intervals for blocks.
    /// It assumes independent samples and so understates the uncertainty of a queueing run.
    IidBootstrap,
    /// Summary-only imports: no interval at all.
    None,
    /// Both runs were repeated (`--repeat N`): Welch's t on the repetitions' own estimates,
    /// which are independent whatever the dependence inside a run. A and B are then each
    /// side's mean estimate.
    Repetitions,
}

/// The whole comparison, as `sojourn diff --json` writes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub schema: String,
    pub a: String,
    pub b: String,
    pub level: f64,
    pub draws: usize,
    pub seed: u64,
    pub method: Method,
    /// Intervals per block of the block bootstrap.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub block: Option<usize>,
    /// Conditions that differ (compared anyway because forced).
    pub conditions_differ: Vec<String>,
    pub percentiles: Vec<PercentileDiff>,
    /// A journey run's steps and journeys that both runs have, each compared on its own.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub labels: Vec<LabelDiff>,
}

/// One step or journey compared: its response times (a journey's: from its due time to the
/// end of its last step), with intervals from a block bootstrap over its own timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelDiff {
    /// `step` or `journey`.
    pub kind: String,
    pub label: String,
    pub method: Method,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub block: Option<usize>,
    pub percentiles: Vec<PercentileDiff>,
}

/// How the bootstrap runs.
#[derive(Debug, Clone, Copy)]
pub struct DiffOptions {
    pub level: f64,
    pub draws: usize,
    pub seed: u64,
}

/// Compares the response times of `a` and `b` at [`DIFF_PERCENTILES`]. Point values come
/// from the summary histograms; intervals from a block bootstrap over the runs' timelines when
/// both have enough intervals, else from an i.i.d. bootstrap of the summary histograms. A
/// journey run's steps and journeys are compared the same way, each on its own timeline.
pub fn diff(a: &RunResult, b: &RunResult, o: DiffOptions) -> Diff {
    let repeated = a
        .repetitions
        .as_ref()
        .zip(b.repetitions.as_ref())
        .filter(|(x, y)| x.between.is_some() && y.between.is_some());
    let blocks = BlockBootstrap::of(a).zip(BlockBootstrap::of(b));
    let whole = compare(
        &a.histograms.response,
        &b.histograms.response,
        blocks,
        repeated,
        o,
    );
    let labels = label_pairs(a, b)
        .map(|(kind, x, y)| {
            let blocks = BlockBootstrap::of_label(x).zip(BlockBootstrap::of_label(y));
            let c = compare(&x.response, &y.response, blocks, None, o);
            LabelDiff {
                kind: kind.into(),
                label: x.label.clone(),
                method: c.method,
                block: c.block,
                percentiles: c.percentiles,
            }
        })
        .collect();
    Diff {
        schema: DIFF_SCHEMA.into(),
        a: a.label.clone(),
        b: b.label.clone(),
        level: o.level,
        draws: o.draws,
        seed: o.seed,
        method: whole.method,
        block: whole.block,
        conditions_differ: conditions_differ(a, b),
        percentiles: whole.percentiles,
        labels,
    }
}

/// The steps, then the journeys, that both runs have, paired by label, in A's order.
fn label_pairs<'a>(
    a: &'a RunResult,
    b: &'a RunResult,
) -> impl Iterator<Item = (&'static str, &'a TargetResult, &'a TargetResult)> {
    let pairs = |kind: &'static str, xs: &'a [TargetResult], ys: &'a [TargetResult]| {
        xs.iter().filter_map(move |x| {
            let y = ys.iter().find(|y| y.label == x.label)?;
            Some((kind, x, y))
        })
    };
    pairs("step", &a.steps, &b.steps).chain(pairs("journey", &a.journeys, &b.journeys))
}

/// One pair of histograms compared: the method that gave the intervals and every percentile.
struct Compared {
    method: Method,
    block: Option<usize>,
    percentiles: Vec<PercentileDiff>,
}

/// `ha` against `hb` at [`DIFF_PERCENTILES`]: the repetitions' Welch interval when both were
/// repeated, else the block bootstrap over `blocks`, else an i.i.d. bootstrap of the
/// histograms, else (summaries only) no interval.
fn compare(
    ha: &HistogramSummary,
    hb: &HistogramSummary,
    blocks: Option<(BlockBootstrap, BlockBootstrap)>,
    repeated: Option<(&Repetitions, &Repetitions)>,
    o: DiffOptions,
) -> Compared {
    let decoded = ha.histogram().ok().zip(hb.histogram().ok());
    let method = match (&blocks, &decoded) {
        _ if repeated.is_some() => Method::Repetitions,
        (Some(_), _) => Method::BlockBootstrap,
        (None, Some(_)) => Method::IidBootstrap,
        (None, None) => Method::None,
    };
    let block = blocks.as_ref().map(|(x, y)| x.block.max(y.block));
    let quantiles: Vec<f64> = DIFF_PERCENTILES.iter().map(|p| p / 100.0).collect();
    let replicates = blocks.map(|(x, y)| {
        let mut rng = Pcg64Mcg::seed_from_u64(o.seed);
        (
            x.replicates(&quantiles, o.draws, &mut rng),
            y.replicates(&quantiles, o.draws, &mut rng),
        )
    });
    let percentiles = DIFF_PERCENTILES
        .iter()
        .enumerate()
        .filter_map(|(i, &p)| {
            let (va, vb) = (ha.at(p)?, hb.at(p)?);
            let mut d = PercentileDiff {
                percentile: percentile_key(p),
                a: va.value,
                b: vb.value,
                delta: signed_difference(va.value, vb.value),
                interval: None,
                verdict: DiffVerdict::NoInterval,
            };
            let welch = repeated.and_then(|(x, y)| repeated::welch(x, y, p, o.level));
            if let Some(w) = &welch {
                d.a = w.a.round() as u64;
                d.b = w.b.round() as u64;
                d.delta = signed_difference(d.a, d.b);
            }
            let interval = match (&replicates, &decoded) {
                _ if welch.is_some() => welch.map(|w| (w.lo.round() as i64, w.hi.round() as i64)),
                (Some((ra, rb)), _) => Some(percentile_interval(&ra[i], &rb[i], o.level)),
                (None, Some((x, y))) => {
                    quantile_difference(x, y, p, o.level, o.draws, o.seed).map(|q| (q.lo, q.hi))
                }
                (None, None) => None,
            };
            if let Some((lo, hi)) = interval {
                d.interval = Some((lo, hi));
                d.verdict = match (lo > 0, hi < 0) {
                    (true, _) => DiffVerdict::Slower,
                    (_, true) => DiffVerdict::Faster,
                    _ => DiffVerdict::NoDifference,
                };
            }
            d.verdict = caveat(ha, hb, p, d.verdict).unwrap_or(d.verdict);
            Some(d)
        })
        .collect();
    Compared {
        method,
        block,
        percentiles,
    }
}

/// `b − a`, clamped to what an `i64` holds (values from a file may be anything up to u64::MAX).
fn signed_difference(a: u64, b: u64) -> i64 {
    let d = i128::from(b) - i128::from(a);
    d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The central `level` share of the replicate differences b − a (paired by draw; the two
/// sides were drawn independently).
fn percentile_interval(a: &[u64], b: &[u64], level: f64) -> (i64, i64) {
    let mut d: Vec<i64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| signed_difference(*x, *y))
        .collect();
    d.sort_unstable();
    let tail = (1.0 - level) / 2.0;
    let at = |q: f64| d[((q * (d.len() - 1) as f64).round() as usize).min(d.len() - 1)];
    (at(tail), at(1.0 - tail))
}

/// Fewer intervals than this and a block bootstrap has too little to resample.
pub const MIN_BLOCK_INTERVALS: usize = 10;

/// A timeline longer than this (55 hours at 1 s) is compared by the i.i.d. bootstrap instead:
/// each block-bootstrap replicate walks the whole timeline, so the cost is slots × draws.
pub const MAX_BLOCK_SLOTS: usize = 200_000;

/// A moving-block bootstrap over a run's timeline (Künsch 1989). Each replicate strings
/// together randomly chosen runs of `block` consecutive intervals until it is as long as the
/// run, and reads its percentiles. Correlation within a block is kept, so a queue's slow
/// stretch counts as one piece of evidence, not as hundreds of independent slow requests.
#[derive(Debug, Clone)]
pub struct BlockBootstrap {
    /// Every distinct value in the run, ascending.
    grid: Vec<u64>,
    /// Each interval's histogram as (index into `grid`, count).
    intervals: Vec<Vec<(usize, u64)>>,
    /// Intervals per block: the cube root of their number, the textbook rate.
    pub block: usize,
}

impl BlockBootstrap {
    /// From a result's timeline, after any trimmed warm-up (the summary the point values
    /// come from left it out too). Intervals in which nothing finished are kept as empty ones,
    /// so blocks are stretches of time. `None` with fewer than [`MIN_BLOCK_INTERVALS`], or
    /// more than [`MAX_BLOCK_SLOTS`], or a timeline out of order (a damaged file).
    pub fn of(r: &RunResult) -> Option<BlockBootstrap> {
        let from = r.statistics.warmup.map_or(0, |w| w.until_ns);
        let kept = r.intervals.iter().filter(|i| i.start_ns >= from);
        BlockBootstrap::of_timeline(
            kept.map(|i| (i.start_ns, i.duration_ns, i.response_hdr.as_str()))
                .collect(),
        )
    }

    /// From a step's or journey's own timeline (whole-run, as its histograms are). `None` as
    /// for [`BlockBootstrap::of`], and for a label that carries no timeline.
    pub fn of_label(t: &TargetResult) -> Option<BlockBootstrap> {
        let timeline = t.intervals.iter();
        BlockBootstrap::of_timeline(
            timeline
                .map(|i| (i.start_ns, i.duration_ns, i.response_hdr.as_str()))
                .collect(),
        )
    }

    /// From (start, width, carried histogram) of each interval in time order.
    fn of_timeline(kept: Vec<(u64, u64, &str)>) -> Option<BlockBootstrap> {
        let first = *kept.first()?;
        let width = first.1.max(1);
        let slot = |start: u64| Some((start.checked_sub(first.0)? / width) as usize);
        let slots = slot(kept.last()?.0)? + 1;
        if slots > MAX_BLOCK_SLOTS {
            return None;
        }
        let decoded = kept
            .iter()
            .map(|(start, _, hdr)| {
                let at = slot(*start).filter(|&s| s < slots)?;
                Some((at, decode_base64(hdr).ok()?))
            })
            .collect::<Option<Vec<_>>>()?;
        let mut hists = vec![None; slots];
        for (at, h) in &decoded {
            hists[*at] = Some(h);
        }
        BlockBootstrap::from_slots(&hists)
    }

    pub fn new(hists: &[Histogram<u64>]) -> Option<BlockBootstrap> {
        let slots: Vec<Option<&Histogram<u64>>> = hists.iter().map(Some).collect();
        BlockBootstrap::from_slots(&slots)
    }

    /// As [`BlockBootstrap::new`], with `None` for an interval in which nothing finished: no
    /// histogram is held for it, so a long gap in a timeline costs a few bytes a slot.
    fn from_slots(slots: &[Option<&Histogram<u64>>]) -> Option<BlockBootstrap> {
        if slots.len() < MIN_BLOCK_INTERVALS {
            return None;
        }
        let hists = || slots.iter().flatten();
        let mut grid: Vec<u64> = hists()
            .flat_map(|h| {
                h.iter_recorded()
                    .map(|v| h.highest_equivalent(v.value_iterated_to()))
            })
            .collect();
        grid.sort_unstable();
        grid.dedup();
        let on_grid = |h: &Histogram<u64>| -> Vec<(usize, u64)> {
            h.iter_recorded()
                .map(|v| {
                    let value = h.highest_equivalent(v.value_iterated_to());
                    let index = grid.binary_search(&value).expect("value is on the grid");
                    (index, v.count_at_value())
                })
                .collect()
        };
        let intervals = slots
            .iter()
            .map(|h| h.map(on_grid).unwrap_or_default())
            .collect();
        let block = (slots.len() as f64).cbrt().round().max(1.0) as usize;
        Some(BlockBootstrap {
            grid,
            intervals,
            block,
        })
    }

    /// `draws` replicates of the quantiles `qs` (each in (0, 1]): one Vec per quantile.
    pub fn replicates(&self, qs: &[f64], draws: usize, rng: &mut impl Rng) -> Vec<Vec<u64>> {
        let mut out = vec![Vec::with_capacity(draws); qs.len()];
        let mut counts = vec![0u64; self.grid.len()];
        for _ in 0..draws {
            counts.iter_mut().for_each(|c| *c = 0);
            self.resample(&mut counts, rng);
            let values = quantiles_of(&counts, &self.grid, qs);
            for (column, v) in out.iter_mut().zip(values) {
                column.push(v);
            }
        }
        out
    }

    /// One replicate's counts on the grid.
    fn resample(&self, counts: &mut [u64], rng: &mut impl Rng) {
        let k = self.intervals.len();
        let starts = k - self.block + 1;
        let mut taken = 0;
        while taken < k {
            let start = rng.random_range(0..starts);
            for interval in &self.intervals[start..start + self.block] {
                for &(i, c) in interval {
                    // Saturating: a damaged file's counts may be anything.
                    counts[i] = counts[i].saturating_add(c);
                }
            }
            taken += self.block;
        }
    }
}

/// The values at quantiles `qs` of counts on `grid` (the smallest value whose cumulative count
/// reaches ⌈q·n⌉, as HdrHistogram reads a quantile).
fn quantiles_of(counts: &[u64], grid: &[u64], qs: &[f64]) -> Vec<u64> {
    let n: u64 = counts.iter().sum();
    let ranks: Vec<u64> = qs
        .iter()
        .map(|q| ((q * n as f64).ceil() as u64).clamp(1, n.max(1)))
        .collect();
    let mut out = vec![grid.last().copied().unwrap_or(0); qs.len()];
    let mut cumulative = 0;
    let mut next = 0;
    let mut order: Vec<usize> = (0..qs.len()).collect();
    order.sort_by_key(|&i| ranks[i]);
    for (value, c) in grid.iter().zip(counts) {
        cumulative += c;
        while next < order.len() && cumulative >= ranks[order[next]] {
            out[order[next]] = *value;
            next += 1;
        }
        if next == order.len() {
            break;
        }
    }
    out
}

/// A reason the interval cannot be trusted at `p`, which overrides the bootstrap's verdict.
fn caveat(
    a: &HistogramSummary,
    b: &HistogramSummary,
    p: f64,
    found: DiffVerdict,
) -> Option<DiffVerdict> {
    let lower_bound = |h: &HistogramSummary| h.at(p).is_some_and(|v| v.lower_bound);
    // Censoring can only raise a value: "B slower" survives it in B, "B faster" in A.
    let survives = match found {
        DiffVerdict::Slower => !lower_bound(a),
        DiffVerdict::Faster => !lower_bound(b),
        _ => false,
    };
    if (lower_bound(a) || lower_bound(b)) && !survives {
        return Some(DiffVerdict::Censored);
    }
    let thin = |h: &HistogramSummary| h.thin_at(p).is_some();
    (thin(a) || thin(b)).then_some(DiffVerdict::TooFewSamples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::new_histogram;

    fn histogram(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = new_histogram();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn quantiles_on_the_grid_match_hdrhistogram() {
        let h = histogram((1..=1000).map(|v| v * 1_000));
        let b = BlockBootstrap::new(&vec![h.clone(); 10]).unwrap();
        let mut counts = vec![0; b.grid.len()];
        for interval in &b.intervals {
            for &(i, c) in interval {
                counts[i] += c;
            }
        }
        let qs = [0.5, 0.9, 0.99, 1.0];
        let got = quantiles_of(&counts, &b.grid, &qs);
        for (q, v) in qs.iter().zip(got) {
            assert!(h.equivalent(v, h.value_at_quantile(*q)), "q {q}: {v}");
        }
    }

    /// A timeline of `k` one-second intervals where whole stretches are slow together, as under
    /// a queue: each interval's level is an AR(1) process (φ = 0.7) around 20 ms, shared by
    /// its hundred requests.
    fn correlated(k: usize, seed: u64, shift: u64) -> Vec<Histogram<u64>> {
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let mut level: f64 = 20.0;
        (0..k)
            .map(|_| {
                level = 20.0 + 0.7 * (level - 20.0) + rng.random_range(-5.0..5.0);
                let base = (level * 1e6) as u64 + shift;
                histogram((0..100).map(|_| base + rng.random_range(0..2_000_000)))
            })
            .collect()
    }

    fn interval_of(a: &[Histogram<u64>], b: &[Histogram<u64>], q: f64, seed: u64) -> (i64, i64) {
        let (x, y) = (
            BlockBootstrap::new(a).unwrap(),
            BlockBootstrap::new(b).unwrap(),
        );
        let mut rng = Pcg64Mcg::seed_from_u64(seed);
        let rx = x.replicates(&[q], 1000, &mut rng);
        let ry = y.replicates(&[q], 1000, &mut rng);
        percentile_interval(&rx[0], &ry[0], 0.95)
    }

    #[test]
    fn blocks_keep_correlated_runs_from_false_alarms_that_single_requests_raise() {
        // Twenty pairs of runs of the same correlated process: the i.i.d. bootstrap calls
        // most of them different, the block bootstrap few.
        let (mut iid_alarms, mut block_alarms) = (0, 0);
        for pair in 0..20 {
            let a = correlated(120, 2 * pair, 0);
            let b = correlated(120, 2 * pair + 1, 0);
            let (lo, hi) = interval_of(&a, &b, 0.5, pair);
            block_alarms += usize::from(lo > 0 || hi < 0);
            let merge = |hs: &[Histogram<u64>]| {
                let mut all = new_histogram();
                hs.iter().for_each(|h| all.add(h).unwrap());
                all
            };
            let q = quantile_difference(&merge(&a), &merge(&b), 50.0, 0.95, 1000, pair).unwrap();
            iid_alarms += usize::from(q.significant);
        }
        eprintln!("false alarms of 20: i.i.d. {iid_alarms}, blocks {block_alarms}");
        assert!(
            iid_alarms >= 10,
            "independence is wrong here: {iid_alarms} of 20"
        );
        assert!(
            block_alarms <= 3,
            "blocks: {block_alarms} of 20 false alarms"
        );
    }

    #[test]
    fn blocks_still_find_a_real_shift_and_bracket_it() {
        // Ten pairs of independent runs of the correlated process, B 8 ms slower throughout
        // (its own noise, not A's shifted): the interval must exclude zero, hold the true
        // shift about as often as 95% promises, and be narrower than the shift it finds.
        let shift: i64 = 8_000_000;
        let (mut found, mut held, mut width) = (0, 0, 0);
        for pair in 0..10 {
            let a = correlated(120, 100 + 2 * pair, 0);
            let b = correlated(120, 101 + 2 * pair, shift as u64);
            let (lo, hi) = interval_of(&a, &b, 0.5, pair);
            found += usize::from(lo > 0);
            held += usize::from(lo <= shift && shift <= hi);
            width += hi - lo;
        }
        // The width a 95% interval should have: ±1.96 standard deviations of the difference
        // of medians, measured over forty more fresh pairs of runs of the same process.
        let merged_median = |hs: Vec<Histogram<u64>>| {
            let mut all = new_histogram();
            hs.iter().for_each(|h| all.add(h).unwrap());
            all.value_at_quantile(0.5) as f64
        };
        let diffs: Vec<f64> = (0..40)
            .map(|k| {
                merged_median(correlated(120, 1_001 + 2 * k, shift as u64))
                    - merged_median(correlated(120, 1_000 + 2 * k, 0))
            })
            .collect();
        let mean = diffs.iter().sum::<f64>() / diffs.len() as f64;
        let sd = (diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / 39.0).sqrt();
        let (expected, got) = (2.0 * 1.96 * sd, (width / 10) as f64);
        eprintln!(
            "found {found}/10, held {held}/10, mean width {got} ns, expected {expected:.0} ns"
        );
        assert!(found >= 9, "found the shift in {found} of 10");
        assert!(held >= 8, "held the true shift in {held} of 10");
        assert!(
            (0.6 * expected..1.5 * expected).contains(&got),
            "mean width {got} ns against {expected:.0} ns from the runs' own spread"
        );
    }

    /// A step or journey whose timeline is `hists`, one per second.
    fn label(name: &str, hists: &[Histogram<u64>]) -> TargetResult {
        use crate::record::{LabelRecord, Stamps};
        use std::time::Duration;
        let mut l = LabelRecord::with_timeline(Duration::from_secs(1));
        for (second, h) in hists.iter().enumerate() {
            let done = Duration::from_millis(second as u64 * 1000 + 500);
            for v in h.iter_recorded() {
                for _ in 0..v.count_at_value() {
                    let took = Duration::from_nanos(v.value_iterated_to());
                    l.record(&Stamps::on_time(done - took), done, crate::Outcome::Ok);
                }
            }
        }
        TargetResult::of(name, 0.5, &l)
    }

    /// Each step and journey both runs have is compared on its own timeline: a step that
    /// slowed by 30 ms is slower, one of the same correlated process is not, and a journey
    /// file that differs is a condition that differs.
    #[test]
    fn steps_and_journeys_are_compared_each_on_its_own_timeline() {
        const SHIFT: u64 = 30_000_000;
        let mut a = crate::result::tests::sample_result();
        let mut b = a.clone();
        a.steps = vec![
            label("shop/login", &correlated(120, 11, 0)),
            label("shop/list", &correlated(120, 13, 0)),
        ];
        a.journeys = vec![label("shop", &correlated(120, 15, 0))];
        b.steps = vec![
            label("shop/login", &correlated(120, 12, 0)),
            label("shop/list", &correlated(120, 14, SHIFT)),
        ];
        b.journeys = vec![label("shop", &correlated(120, 16, SHIFT))];
        let o = DiffOptions {
            level: 0.95,
            draws: 1000,
            seed: 1,
        };
        let d = diff(&a, &b, o);
        assert!(d.conditions_differ.is_empty(), "{:?}", d.conditions_differ);
        let seen: Vec<(&str, &str)> = d
            .labels
            .iter()
            .map(|l| (l.kind.as_str(), l.label.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("step", "shop/login"),
                ("step", "shop/list"),
                ("journey", "shop")
            ]
        );
        let p50 = |l: &LabelDiff| l.percentiles.iter().find(|p| p.percentile == "50").cloned();
        for l in &d.labels {
            assert_eq!(l.method, Method::BlockBootstrap, "{}", l.label);
            assert!(l.block.is_some_and(|b| b > 1), "{}: {:?}", l.label, l.block);
        }
        assert_eq!(
            p50(&d.labels[0]).unwrap().verdict,
            DiffVerdict::NoDifference
        );
        for l in &d.labels[1..] {
            let p = p50(l).unwrap();
            assert_eq!(p.verdict, DiffVerdict::Slower, "{}: {p:?}", l.label);
        }
        b.steps.pop();
        let d = diff(&a, &b, o);
        assert_eq!(
            d.conditions_differ,
            ["steps shop/login, shop/list vs shop/login"]
        );
        assert_eq!(d.labels.len(), 2, "only what both have");
        b.steps[0].intervals.clear();
        assert_eq!(diff(&a, &b, o).labels[0].method, Method::IidBootstrap);
    }

    #[test]
    fn a_trimmed_run_is_not_like_an_untrimmed_one() {
        let a = crate::result::tests::sample_result();
        let mut b = a.clone();
        assert!(conditions_differ(&a, &b).is_empty());
        b.statistics.warmup = Some(crate::evidence::WarmupTrim {
            method: crate::evidence::WarmupMethod::Auto,
            until_ns: 2_000_000_000,
            requests: 100,
        });
        assert_eq!(
            conditions_differ(&a, &b),
            ["warm-up trimmed 0 ns vs 2.000 s"]
        );
        b.config.rate = Some(b.config.rate.unwrap() * 2.0);
        assert_eq!(conditions_differ(&a, &b).len(), 2);
    }

    #[test]
    fn too_short_a_timeline_has_no_blocks() {
        assert!(BlockBootstrap::new(&vec![histogram([1_000]); 9]).is_none());
    }
}

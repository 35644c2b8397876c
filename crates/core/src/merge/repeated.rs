//! Repetitions of one run (`--repeat N`) as one document: the histograms, counts and status
//! codes added as a merge of shards adds them, the timelines laid end to end, and each
//! repetition's own summary kept beside them with the between-run intervals.
use std::collections::BTreeMap;

use super::{add_counts, interval as window, MergeError};
use super::{checks, histograms, labelled, rate, statistics, status_codes, summed, targets, Input};
use crate::record::new_histogram;
use crate::repeat::{Repetition, Repetitions};
use crate::result::{Counts, HistogramSummary, IntervalSummary, RunResult, SCHEMA};

/// One repetition's result and the seeds it ran with.
pub struct Repeated {
    pub result: RunResult,
    /// The arrival seed (Poisson arrivals, random target order), when it had one.
    pub seed: Option<u64>,
    /// The simulated scenario's seed, for `sim`.
    pub scenario_seed: Option<u64>,
}

/// The repetitions `runs` (in the order they ran) as one document; `asked` is how many were
/// asked for (more than `runs` holds when interrupted), `pause_ns` the pause between two.
pub fn repeated(runs: Vec<Repeated>, asked: u32, pause_ns: u64) -> Result<RunResult, MergeError> {
    if runs.is_empty() {
        return Err(MergeError::Empty);
    }
    let inputs: Vec<Input> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| Input {
            source: format!("repetition {}", k + 1),
            result: r.result.clone(),
        })
        .collect();
    let first = &inputs[0].result;
    // First by definition: every repetition runs the same flags; the seed is the first's (the
    // one given), each repetition's own is in `repetitions`.
    let config = first.config.clone();
    let mut histograms = histograms(&inputs)?;
    // Summed: a repeated unpaced closed loop estimates it in every repetition.
    histograms.backfilled = summed(&inputs, |h| h.backfilled.as_ref())?
        .map(|h| HistogramSummary::of(&h, &new_histogram()));
    let intervals = end_to_end(&inputs)?;
    let counts = inputs.iter().fold(Counts::default(), |total, i| {
        add_counts(total, &i.result.counts)
    });
    // The time measured: the repetitions' own, without the pauses between them.
    let elapsed_ns = inputs.iter().map(|i| i.result.elapsed_ns).sum();
    let rate = rate(&config, elapsed_ns, &counts, &histograms);
    let statistics = statistics(&inputs, &config, &intervals, &histograms, 1);
    let summaries = runs.iter().enumerate().map(summary).collect();
    Ok(RunResult {
        // Recomputed: written in this build's schema.
        schema: SCHEMA.into(),
        // First by definition: repetitions are runs of one tool.
        tool: first.tool.clone(),
        // Equal: one run's label.
        label: first.label.clone(),
        // Equal: one run's flags.
        mode: first.mode,
        config,
        // First by definition: one scenario (its seed per repetition is in `repetitions`).
        scenario: first.scenario.clone(),
        // Summed.
        counts,
        // Recomputed from the sums over the time measured.
        rate,
        // Summed, bucket by bucket.
        histograms,
        // Laid end to end: see `end_to_end`.
        intervals,
        // The worst generator verdict; a note every repetition made once, the rest marked
        // with their repetition.
        checks: notes_once(checks(&inputs), &inputs),
        elapsed_ns,
        // Any: a repetition stopped early stopped the rest.
        interrupted: inputs.iter().any(|i| i.result.interrupted),
        // The first's: when the repeated run began.
        started_unix_ns: first.started_unix_ns,
        // Recomputed: the pooled senders' gaps, the steady state of the laid-out timeline.
        statistics,
        // None: a repeated run is sojourn's own.
        import: None,
        // The first's, with every repetition's due count: a whole run, never a shard.
        placement: first.placement.clone().map(|mut p| {
            p.due = inputs
                .iter()
                .filter_map(|i| i.result.placement.as_ref().map(|p| p.due))
                .sum();
            p
        }),
        // None: not a merge of shards.
        merged: None,
        // Summed, code by code.
        statuses: status_codes(&inputs),
        // Summed label by label, in the first repetition's order.
        targets: targets(&inputs, &BTreeMap::new())?,
        steps: labelled(&inputs, &BTreeMap::new(), |r| &r.steps)?,
        journeys: labelled(&inputs, &BTreeMap::new(), |r| &r.journeys)?,
        repetitions: Some(Repetitions::of(summaries, asked, pause_ns)),
        stream: super::stream(&inputs)?,
    })
}

/// Notes that every repetition made alike (the same model, the same machine) listed once,
/// unmarked, before the rest.
fn notes_once(mut c: crate::check::Checks, inputs: &[Input]) -> crate::check::Checks {
    let everyone = |note: &String| inputs.iter().all(|i| i.result.checks.notes.contains(note));
    let shared: Vec<String> = inputs[0]
        .result
        .checks
        .notes
        .iter()
        .filter(|n| everyone(n))
        .cloned()
        .collect();
    let marked_shared = |n: &String| shared.iter().any(|s| n.ends_with(&format!(": {s}")));
    c.notes.retain(|n| !marked_shared(n));
    c.notes.splice(0..0, shared);
    c
}

/// A repetition's own summary: all of it but the timeline and statistics.
fn summary((k, r): (usize, &Repeated)) -> Repetition {
    let res = &r.result;
    Repetition {
        index: k as u32 + 1,
        seed: r.seed,
        scenario_seed: r.scenario_seed,
        counts: res.counts,
        rate: res.rate,
        elapsed_ns: res.elapsed_ns,
        interrupted: res.interrupted,
        started_unix_ns: res.started_unix_ns,
        response: res.histograms.response.clone(),
        service: res.histograms.service.clone(),
        send_lag: res.histograms.send_lag.clone(),
        censored: res.histograms.censored.clone(),
    }
}

/// The repetitions' timelines one after another, each starting on the first whole interval
/// after the one before ended (its last interval or its elapsed time, whichever is later). The
/// pauses between them are left out: nothing was measured then. Intervals stay on one grid, so
/// a reader that cuts the timeline into batches cuts each repetition the same way.
fn end_to_end(inputs: &[Input]) -> Result<Vec<IntervalSummary>, MergeError> {
    let mut out = Vec::new();
    let mut offset = 0u64;
    for i in inputs {
        let r = &i.result;
        let width = r.config.interval_ns.max(1);
        for iv in &r.intervals {
            out.push(window(
                offset.saturating_add(iv.start_ns),
                &[(&i.source, iv)],
            )?);
        }
        let end = r
            .intervals
            .iter()
            .map(IntervalSummary::end_ns)
            .max()
            .unwrap_or(0)
            .max(r.elapsed_ns);
        offset = offset.saturating_add(end.div_ceil(width).saturating_mul(width));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::check::assess_open;
    use crate::record::{Recorder, Stamps};
    use crate::result::{RunConfig, RunFacts};
    use crate::{Mode, Outcome};

    /// 2 s at 1,000 req/s, each request answered in `base` + (i mod 13) ms; the last still
    /// in flight at the end.
    fn run(base: u64, interrupted: bool) -> Repeated {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..2000u64 {
            let at = Duration::from_millis(i);
            let done = at + Duration::from_millis(base + i % 13);
            r.record(&Stamps::on_time(at), done, Outcome::Ok);
        }
        let last = Stamps::on_time(Duration::from_millis(1999));
        r.record_in_flight(&last, Duration::from_secs(2));
        let m = Recorder::merge_all([r]);
        let facts = RunFacts {
            label: "open".into(),
            mode: Mode::Open,
            config: RunConfig {
                rate: Some(1000.0),
                arrival: Some("constant".into()),
                duration_ns: Some(2_000_000_000),
                connections: 10,
                interval_ns: 1_000_000_000,
                ..Default::default()
            },
            scheduled: 2001,
            elapsed: Duration::from_millis(2500),
            interrupted,
            checks: assess_open(&m, 10),
            backfill_interval: None,
        };
        Repeated {
            result: RunResult::build(&m, facts),
            seed: Some(base),
            scenario_seed: None,
        }
    }

    #[test]
    fn repetitions_add_up_and_carry_an_interval_from_their_spread() {
        let doc = repeated(vec![run(1, false), run(3, false), run(5, false)], 3, 0).unwrap();
        assert_eq!(doc.counts.scheduled, 3 * 2001);
        assert_eq!(doc.counts.completed, 3 * 2000);
        assert_eq!(doc.counts.censored, 3);
        assert_eq!(doc.counts.unaccounted(), 0);
        assert_eq!(doc.histograms.response.count, 3 * 2001);
        assert_eq!(doc.elapsed_ns, 3 * 2_500_000_000);
        // Each run ends at 2.5 s, so the next starts on the next whole second: 0, 3 s, 6 s.
        let starts: Vec<u64> = doc
            .intervals
            .iter()
            .map(|i| i.start_ns / 1_000_000_000)
            .collect();
        assert_eq!(starts, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let reps = doc.repetitions.as_ref().unwrap();
        let seeds: Vec<_> = reps.runs.iter().map(|r| r.seed).collect();
        assert_eq!(seeds, [Some(1), Some(3), Some(5)]);
        let between = reps.between.as_ref().unwrap();
        assert_eq!(between.runs, 3);
        let p50 = between.response["50"];
        // Pooled, the runs (1-13, 3-15 and 5-17 ms) have their median at 9 ms; the runs hold
        // 9, 7 and 5 of their 13 values at or below it: fractions with mean 7/13 and standard
        // deviation 2/13, so ranks 0.5 ± t(0.975, 2)·(2/13)/√3 = 0.5 ± 0.382 of the pooled runs.
        assert!((p50.estimate - 9e6).abs() < 1e4, "{p50:?}");
        let pooled = doc.histograms.response.histogram().unwrap();
        let n = pooled.len() as f64;
        let at = |q: f64| crate::confidence::value_at_rank(&pooled, (q * n) as u64) as f64;
        let half = crate::repeat::t_quantile(0.975, 2.0) * (2.0 / 13.0) / 3f64.sqrt();
        assert!((half - 0.382).abs() < 1e-3, "{half}");
        assert!(
            p50.lo <= at(0.5 - half) && p50.hi >= at(0.5 + half) - 1e4,
            "{p50:?}"
        );
        assert!(
            p50.lo < 5e6 && p50.hi > 13e6,
            "as wide as the runs' spread: {p50:?}"
        );
        // No sample bounds the maximum from above: no between-run interval for it.
        assert!(!between.response.contains_key("100"));
        assert_eq!(reps.response_at(50.0).unwrap(), p50);
    }

    #[test]
    fn one_complete_repetition_gives_no_between_run_interval() {
        let doc = repeated(vec![run(1, false)], 1, 0).unwrap();
        assert_eq!(doc.repetitions.as_ref().unwrap().between, None);
        // An interrupted repetition is kept and counted, but not an estimate of the same thing.
        let doc = repeated(vec![run(1, false), run(3, true)], 4, 0).unwrap();
        let reps = doc.repetitions.as_ref().unwrap();
        assert_eq!((reps.asked, reps.runs.len()), (4, 2));
        assert_eq!(reps.between, None);
        assert!(doc.interrupted);
        assert_eq!(doc.counts.scheduled, 2 * 2001);
    }

    /// The repetitions answer in 1-13, 3-15 and 5-17 ms: pooled, the median is 9 ms with a
    /// narrow order-statistics interval (thousands of requests), while the runs themselves
    /// hold 9, 7 and 5 of their 13 values at or below it, an interval of about 4-14 ms.
    #[test]
    fn a_gate_on_a_repeated_run_judges_the_between_run_interval() {
        use crate::gate::{evaluate, Objective, Verdict};
        let doc = repeated(vec![run(1, false), run(3, false), run(5, false)], 3, 0).unwrap();
        let single = RunResult {
            repetitions: None,
            ..doc.clone()
        };
        let judge = |r: &RunResult, text: &str| {
            let o: Objective = text.parse().unwrap();
            evaluate(r, &[o]).unwrap().remove(0)
        };
        // Above the median: the merged run's interval calls it significantly met; the runs
        // spread too far to say so.
        let one = judge(&single, "p50<10ms");
        assert_eq!(one.verdict, Verdict::Met { significant: true }, "{one:?}");
        let between = judge(&doc, "p50<10ms");
        assert_eq!(
            between.verdict,
            Verdict::Met { significant: false },
            "{between:?}"
        );
        assert_eq!(between.between_runs, Some(3));
        let e = between.estimate.unwrap();
        assert!((e.value - 9_000_000.0).abs() < 10_000.0, "{e:?}");
        assert!(e.lo < 5e6 && e.hi.unwrap() > 13e6, "{e:?}");
        // Below it: a significant breach for one run's interval, not between runs.
        let one = judge(&single, "p50<8ms");
        assert_eq!(
            one.verdict,
            Verdict::Breached { significant: true },
            "{one:?}"
        );
        let between = judge(&doc, "p50<8ms");
        assert_eq!(
            between.verdict,
            Verdict::Breached { significant: false },
            "{between:?}"
        );
        // A stage, an error budget: judged as for any run.
        assert_eq!(judge(&doc, "errors<50%").between_runs, None);
    }

    /// A's runs answer in 1, 3, 5 ms (+ i mod 13); B's in 2, 4, 6. Merged, B is 1 ms slower
    /// over 6,000 requests, which a bootstrap of the merged runs calls significant; but the
    /// runs themselves differ by ±2 ms, so Welch's t on the runs' estimates cannot tell.
    #[test]
    fn diff_of_repeated_runs_compares_the_runs_estimates() {
        use crate::diff::{diff, DiffOptions, DiffVerdict, Method};
        let doc = |bases: [u64; 3]| {
            let runs = bases.iter().map(|&b| run(b, false)).collect();
            repeated(runs, 3, 0).unwrap()
        };
        let (a, b) = (doc([1, 3, 5]), doc([2, 4, 6]));
        let o = DiffOptions {
            level: 0.95,
            draws: 200,
            seed: 1,
        };
        let p50 = |d: &crate::diff::Diff| d.percentiles[0].clone();
        let strip = |r: &RunResult| RunResult {
            repetitions: None,
            ..r.clone()
        };
        let merged = diff(&strip(&a), &strip(&b), o);
        assert_ne!(merged.method, Method::Repetitions);
        assert_eq!(p50(&merged).verdict, DiffVerdict::Slower, "{merged:?}");
        let d = diff(&a, &b, o);
        assert_eq!(d.method, Method::Repetitions);
        let at = p50(&d);
        assert_eq!(at.verdict, DiffVerdict::NoDifference, "{at:?}");
        assert!((at.delta - 1_000_000).abs() < 50_000, "{at:?}");
        // Welch: se = √(4/3 + 4/3) ms, df = 4, t(0.975, 4) = 2.776: ±4.53 ms.
        let (lo, hi) = at.interval.unwrap();
        assert!(((hi - lo) as f64 / 2.0 - 4.53e6).abs() < 0.05e6, "{at:?}");
        // Runs 10 ms apart are told apart.
        let far = diff(&a, &doc([11, 13, 15]), o);
        assert_eq!(p50(&far).verdict, DiffVerdict::Slower, "{far:?}");
    }
}

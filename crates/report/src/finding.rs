//! What a closed loop beside an open loop shows, in one place: the columns a paced closed loop
//! splits into (its times from the send, what hey -q and bombardier -r report, and from the
//! slot, wrk2's view), whether the two loops carried the same load, and the verdict sentence.
//! `demo` and `compare` print it, and the HTML report puts the same words in its lede, so the
//! terminal and the page never disagree.
use sojourn_core::result::{Mode, RunResult};

use crate::compare::{format_ratio, Column};

/// Two loops carry "the same load" when their schedules differ by at most this share.
pub const SAME_LOAD: f64 = 0.05;

/// The open loop's p99 over the closed view's at least this: the closed view hides the tail.
pub const UNDERSTATES: f64 = 1.5;

/// How a paced closed loop's view from the send is labelled: `paced` → `paced, from send`.
pub fn from_send_label(run_label: &str) -> String {
    format!("{run_label}, from send")
}

/// How a paced closed loop's view from its slots is labelled: `paced, from slot`.
pub fn from_slot_label(run_label: &str) -> String {
    format!("{run_label}, from slot")
}

/// The closed loop's columns: an unpaced loop's response times under its own label; a paced
/// loop's two views of one run, from the send first (what its tools report).
pub fn closed_columns(closed: &RunResult) -> Vec<Column<'_>> {
    match closed.mode {
        Mode::Paced => vec![
            Column::from_send(from_send_label(&closed.label), closed),
            Column::of(from_slot_label(&closed.label), closed),
        ],
        _ => vec![Column::of(closed.label.clone(), closed)],
    }
}

/// The load a run was given, in requests per second: what its schedule held (an unpaced closed
/// loop's schedule is the requests it made) over the duration asked for. Never the achieved
/// rate: a stall in one loop's drain lengthens its run without changing what it sent.
fn offered(r: &RunResult) -> f64 {
    let secs = r.config.duration_ns.unwrap_or(r.elapsed_ns) as f64 / 1e9;
    r.counts.scheduled as f64 / secs.max(f64::MIN_POSITIVE)
}

/// When the two loops were not given the same load, a sentence saying so: a closed loop that
/// sent ten times as much (or half as much) is another experiment, not another view of one.
pub fn load_mismatch(closed: &RunResult, open: &RunResult) -> Option<String> {
    let (c, o) = (closed.counts.scheduled, open.counts.scheduled);
    let apart = c.abs_diff(o) as f64 / c.max(o).max(1) as f64;
    (apart > SAME_LOAD).then(|| {
        format!(
            "NOT THE SAME RATE: the {} sent {} requests ({:.1} req/s) where the open loop's schedule held {} \
             ({:.1} req/s), {:.0}% apart, so the ratios in the table compare different loads, not two views of one",
            closed.mode.label(),
            crate::compare::thousands(c),
            offered(closed),
            crate::compare::thousands(o),
            offered(open),
            100.0 * apart
        )
    })
}

/// The open loop's response time at `p` over what the closed column shows.
pub fn ratio_at(closed: &Column, open: &RunResult, p: f64) -> Option<f64> {
    let x = closed.histogram().percentiles.get(p)? as f64;
    let y = open.histograms.response.percentiles.get(p)? as f64;
    (x > 0.0).then(|| y / x)
}

/// The finding, sentence by sentence: first, if the loops did not carry the same load, that
/// they did not; then how the closed loop's p99 (a paced loop's from the send) stands against
/// the open loop's.
pub fn finding(closed: &RunResult, open: &RunResult) -> Vec<String> {
    let column = &closed_columns(closed)[0];
    let who = match closed.mode {
        Mode::Paced => "the paced closed loop's p99 from the send",
        _ => "closed-loop p99",
    };
    let line = match ratio_at(column, open, 99.0) {
        Some(r) if r >= UNDERSTATES => {
            format!("{who} understates open-loop p99 by {}x", format_ratio(r))
        }
        Some(r) if r <= 1.0 / UNDERSTATES => format!(
            "{who} is {}x above open-loop p99 (unusual: check the connection counts and the run lengths)",
            format_ratio(1.0 / r)
        ),
        Some(r) => format!("{who} and open-loop p99 agree (ratio {}x)", format_ratio(r)),
        None => "not enough answers to compare p99".into(),
    };
    load_mismatch(closed, open)
        .into_iter()
        .chain(std::iter::once(line))
        .collect()
}

/// [`finding`] as the terminal prints it: a line per sentence, each after `verdict: `.
pub fn verdict(closed: &RunResult, open: &RunResult) -> String {
    finding(closed, open)
        .iter()
        .map(|s| format!("verdict: {s}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Journeys (`compare --journey`): step by step and for each journey, the closed loop's p50
/// and p99 from the send beside the open loop's from the due time, and how many times the
/// closed view understates the open one at p99: what the closed loop hid, where. Empty when the
/// runs have no journeys.
pub fn steps_side_by_side(closed: &RunResult, open: &RunResult) -> String {
    use std::fmt::Write as _;
    let rows: Vec<(&sojourn_core::TargetResult, &sojourn_core::TargetResult)> = open
        .journeys
        .iter()
        .chain(&open.steps)
        .filter_map(|o| {
            let c = closed
                .journeys
                .iter()
                .chain(&closed.steps)
                .find(|c| c.label == o.label)?;
            Some((c, o))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let w = rows
        .iter()
        .map(|(_, o)| o.label.chars().count())
        .max()
        .unwrap_or(5)
        .max(5)
        + 2;
    let mut out = format!(
        "journey and step by step (closed loop from the send, open loop from the due time):\n\
         {:<w$}{:>14}{:>14}{:>14}{:>14}{:>12}\n",
        "label", "closed p50", "open p50", "closed p99", "open p99", "open/closed"
    );
    let at = |h: &sojourn_core::result::HistogramSummary, p: f64| h.percentiles.get(p);
    let shown = |v: Option<u64>| v.map_or("—".into(), sojourn_core::units::format_ns);
    for (c, o) in rows {
        let ratio = match (at(&c.response, 99.0), at(&o.response, 99.0)) {
            (Some(c), Some(o)) if c > 0 => format!("{}x", format_ratio(o as f64 / c as f64)),
            _ => "—".into(),
        };
        let _ = writeln!(
            out,
            "{:<w$}{:>14}{:>14}{:>14}{:>14}{:>12}",
            o.label,
            shown(at(&c.response, 50.0)),
            shown(at(&o.response, 50.0)),
            shown(at(&c.response, 99.0)),
            shown(at(&o.response, 99.0)),
            ratio
        );
    }
    out
}

/// The closed loop and the open loop, when `runs` are exactly the pair `demo` and `compare`
/// measure (and perhaps the model): two measured runs, one closed or paced, one open. A suite's
/// many tools are judged on its board instead, each against the model.
pub fn pair(runs: &[&RunResult]) -> Option<(usize, usize)> {
    let measured: Vec<usize> = (0..runs.len())
        .filter(|&i| !sojourn_core::verdict::is_model(runs[i]))
        .collect();
    let [a, b] = measured[..] else {
        return None;
    };
    let closed = |i: usize| matches!(runs[i].mode, Mode::Closed | Mode::Paced);
    let open = |i: usize| runs[i].mode == Mode::Open;
    match (closed(a), open(b), closed(b), open(a)) {
        (true, true, ..) => Some((a, b)),
        (.., true, true) => Some((b, a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sojourn_core::result::HistogramSummary;

    fn run(
        mode: Mode,
        scheduled: u64,
        elapsed_s: u64,
        response_p99_ms: u64,
        service_p99_ms: u64,
    ) -> RunResult {
        let m = sojourn_core::Recorder::merge_all([sojourn_core::Recorder::new(
            std::time::Duration::from_secs(1),
        )]);
        let facts = sojourn_core::RunFacts {
            label: "paced".into(),
            mode,
            config: sojourn_core::RunConfig {
                duration_ns: Some(5_000_000_000),
                ..Default::default()
            },
            scheduled,
            elapsed: std::time::Duration::from_secs(elapsed_s),
            interrupted: false,
            checks: sojourn_core::check::assess_closed(),
            backfill_interval: None,
        };
        let mut r = RunResult::build(&m, facts);
        r.counts.scheduled = scheduled;
        r.histograms.response = summary(response_p99_ms);
        r.histograms.service = summary(service_p99_ms);
        r
    }

    fn summary(p99_ms: u64) -> HistogramSummary {
        let mut h = sojourn_core::record::new_histogram();
        h.record_n(1_000_000, 980).unwrap();
        h.record_n(p99_ms * 1_000_000, 20).unwrap();
        HistogramSummary::of(&h, &sojourn_core::record::new_histogram())
    }

    #[test]
    fn a_paced_loop_is_judged_by_what_it_reports_from_the_send() {
        let open = run(Mode::Open, 2500, 5, 900, 2);
        // From the slot it saw the stall as the open loop did; from the send it hid it.
        let paced = run(Mode::Paced, 2500, 5, 900, 2);
        assert_eq!(
            verdict(&paced, &open),
            "verdict: the paced closed loop's p99 from the send understates open-loop p99 by 449.9x"
        );
        let cols = closed_columns(&paced);
        assert_eq!(cols.len(), 2);
        assert_eq!(cols[0].clock, crate::compare::Clock::FromSend);
        assert_eq!(cols[0].label, "paced, from send");
        assert_eq!(cols[1].label, "paced, from slot");
    }

    #[test]
    fn the_same_schedule_is_the_same_rate_however_long_the_drain() {
        // Both sent 2,500 with none left unsent; one pause fell in the paced loop's drain and
        // lengthened its run by 6%: the same load, two views of it.
        let mut open = run(Mode::Open, 2500, 5, 12, 12);
        let mut paced = run(Mode::Paced, 2500, 5, 12, 12);
        paced.elapsed_ns = 5_300_000_000;
        paced.rate.achieved = 2500.0 / 5.3;
        open.rate.achieved = 2500.0 / 5.0;
        assert_eq!(load_mismatch(&paced, &open), None);
        let v = verdict(&paced, &open);
        assert!(!v.contains("NOT THE SAME RATE"), "{v}");
        assert!(v.contains("agree (ratio 1.0x)"), "{v}");
    }

    #[test]
    fn loops_given_different_loads_say_so_before_any_ratio() {
        let open = run(Mode::Open, 2000, 5, 2, 1);
        let closed = run(Mode::Closed, 112_000, 5, 2, 2);
        let v = verdict(&closed, &open);
        assert!(
            v.starts_with(
                "verdict: NOT THE SAME RATE: the closed loop sent 112,000 requests (22400.0 req/s) where the open \
                 loop's schedule held 2,000 (400.0 req/s), 98% apart, so the ratios in the table compare"
            ),
            "{v}"
        );
        assert!(v.ends_with("agree (ratio 1.0x)"), "{v}");
        // Within 5% is the same load.
        assert!(load_mismatch(&run(Mode::Closed, 1960, 5, 2, 2), &open).is_none());
        assert!(load_mismatch(&run(Mode::Closed, 1880, 5, 2, 2), &open).is_some());
    }

    #[test]
    fn the_pair_is_one_closed_and_one_open_measured_run() {
        let (open, paced) = (run(Mode::Open, 10, 1, 1, 1), run(Mode::Paced, 10, 1, 1, 1));
        let mut model = open.clone();
        model.label = sojourn_core::verdict::MODEL_LABEL.into();
        assert_eq!(pair(&[&paced, &open, &model]), Some((0, 1)));
        assert_eq!(pair(&[&model, &open, &paced]), Some((2, 1)));
        // A suite: more than two measured runs is not a pair.
        assert_eq!(pair(&[&model, &open, &paced, &paced]), None);
        assert_eq!(pair(&[&open, &open]), None);
    }

    #[test]
    fn small_ratios_keep_two_significant_digits() {
        for (r, want) in [
            (78.12, "78.1"),
            (1.0, "1.0"),
            (0.64, "0.64"),
            (0.047, "0.047"),
            (0.0123, "0.012"),
            (0.00031, "0.00031"),
            (0.0, "0.0"),
            (f64::INFINITY, "-"),
        ] {
            assert_eq!(format_ratio(r), want, "{r}");
        }
    }
}

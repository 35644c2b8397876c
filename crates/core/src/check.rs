//! The generator's self-check: did sojourn itself send on time?
//!
//! Send lag has two causes with opposite meanings. A request that waits because every
//! connection is busy is queueing a real client would also suffer (the pool is part of the
//! offered system). A request that the generator noticed late because its thread was busy or its
//! timer slept too long is the tool's fault. The recorder separates the two (`dispatch_lag` vs
//! `waited_for_connection`); this module turns them into a verdict and plain-words notes.
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::record::Measurements;
use crate::units::format_ns;

/// Dispatch lag p99 above this means the generator, not the target, added visible delay…
pub const BEHIND_P99_NS: u64 = 1_000_000;
/// …and it distorts the results when it is also more than this share of response-time p99.
pub const BEHIND_SHARE_OF_P99: f64 = 0.1;
/// Dispatch lag p99 above this is worth a note even when the verdict is "ok".
pub const NOTE_P99_NS: u64 = 100_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GeneratorVerdict {
    /// Requests were dispatched within [`BEHIND_P99_NS`] of their due time at p99.
    Ok,
    /// The generator itself fell behind the schedule.
    Behind,
    /// Not applicable: a closed loop has no schedule to keep.
    NotApplicable,
}

/// The self-check's findings, stored in every result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checks {
    pub generator: GeneratorVerdict,
    /// Requests waited for a free connection: the generator kept its schedule, but the pool
    /// (busy with a slow target, or too small) held them back.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pool_bound: bool,
    /// The busiest worker thread's share of the run on CPU (idle spinning excluded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busiest_worker: Option<f64>,
    /// Who held an open loop back at its offered rate, judged as a sweep judges a step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateVerdict>,
    pub notes: Vec<String>,
}

/// The classification of one run at its rate (see [`crate::sweep::Status`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateVerdict {
    pub status: crate::sweep::Status,
    /// The evidence, in words.
    pub why: Vec<String>,
    /// What raises a client-side limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
}

impl Checks {
    /// A check that does not apply (imports, models), with what to say instead.
    pub fn not_applicable(notes: Vec<String>) -> Checks {
        Checks {
            generator: GeneratorVerdict::NotApplicable,
            pool_bound: false,
            busiest_worker: None,
            rate: None,
            notes,
        }
    }
}

impl Checks {
    pub fn passed(&self) -> bool {
        self.generator != GeneratorVerdict::Behind
    }
}

/// An open loop's pool, as its notes name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// HTTP/1.1 (or in-process calls): one request at a time per connection.
    Connections(u32),
    /// HTTP/2: this many connections of this many stream slots each.
    Streams { connections: u32, streams: u32 },
}

impl Pool {
    /// What a waiting request waited for, and how many there were: "a free connection because
    /// all 64", or "a free stream slot because all 256 (2 connections × 128 streams)".
    fn waited_for(self) -> String {
        match self {
            Pool::Connections(n) => format!("a free connection because all {n}"),
            Pool::Streams {
                connections,
                streams,
            } => format!(
                "a free stream slot because all {} ({connections} connections × {streams} streams)",
                u64::from(connections) * u64::from(streams)
            ),
        }
    }

    fn raise(self) -> &'static str {
        match self {
            Pool::Connections(_) => "Raise --connections",
            Pool::Streams { .. } => "Raise --connections (or --streams, up to the server's limit)",
        }
    }
}

/// Whether the generator's own lateness (dispatch lag p99) distorts the results: visible on its
/// own ([`BEHIND_P99_NS`]) and a real share of the response time ([`BEHIND_SHARE_OF_P99`]).
/// Requests the generator never got to before the end carry their wait to the end in dispatch
/// lag too, so a generator that stopped keeping up shows here as well.
pub fn sends_fell_behind(dispatch_p99: u64, response_p99: u64) -> bool {
    dispatch_p99 > BEHIND_P99_NS && dispatch_p99 as f64 > BEHIND_SHARE_OF_P99 * response_p99 as f64
}

/// Assesses an open-loop run. `connections` is the pool's maximum size.
pub fn assess_open(m: &Measurements, connections: u32) -> Checks {
    assess_open_pool(m, Pool::Connections(connections))
}

/// Assesses an open-loop run on `pool`.
pub fn assess_open_pool(m: &Measurements, pool: Pool) -> Checks {
    let lag = &m.hist.dispatch_lag;
    let (p99, p999, max) = (
        lag.value_at_quantile(0.99),
        lag.value_at_quantile(0.999),
        lag.max(),
    );
    let mut notes = Vec::new();
    let response_p99 = m.hist.response.value_at_quantile(0.99) as f64;
    let generator = if !lag.is_empty() && sends_fell_behind(p99, response_p99 as u64) {
        notes.push(format!(
            "GENERATOR BEHIND: sojourn itself dispatched requests late (dispatch lag p99 {}, max {}). \
             That delay is the tool's, not the target's, and it is included in response times. \
             Use more --threads, a lower --rate, or a less loaded machine.",
            format_ns(p99),
            format_ns(max)
        ));
        GeneratorVerdict::Behind
    } else {
        GeneratorVerdict::Ok
    };
    if generator == GeneratorVerdict::Ok && p99 > NOTE_P99_NS {
        notes.push(format!(
            "generator dispatch lag p99 {} (p99.9 {}, max {}): small against response p99 {}, but not zero",
            format_ns(p99),
            format_ns(p999),
            format_ns(max),
            format_ns(response_p99 as u64)
        ));
    }
    let waited = m.tally.waited_for_connection;
    let waiting = waited + m.tally.never_sent;
    let pool_bound = waiting as f64 > POOL_WAIT_SHARE * m.tally.accounted().max(1) as f64;
    if waited > 0 {
        let sent = m.hist.send_lag.len().max(1);
        notes.push(format!(
            "{waited} of {sent} sent requests ({:.1}%) waited for {} were busy (send lag p50 {}, max {}); \
             the wait is counted in their response time. {} to offer the load as scheduled.",
            100.0 * waited as f64 / sent as f64,
            pool.waited_for(),
            format_ns(m.hist.send_lag.value_at_quantile(0.5)),
            format_ns(m.hist.send_lag.max()),
            pool.raise(),
        ));
    }
    Checks {
        generator,
        pool_bound,
        busiest_worker: None,
        rate: None,
        notes,
    }
}

/// A generator's lateness within this factor of the machine's own hiccups (plus
/// [`FLOOR_SLACK_NS`]) is the machine's: an idle process that only sleeps saw as much.
pub const FLOOR_FACTOR: f64 = 1.5;
/// The few microseconds a woken generator needs to notice what is due and start sending.
pub const FLOOR_SLACK_NS: u64 = 10_000;

/// Whether lateness `lag` (ns, at some percentile) lies within the machine's floor `floor` (the
/// control meter's lateness at the same percentile): no sleeping generator could have done
/// better on this machine.
pub fn within_floor(lag: u64, floor: u64) -> bool {
    lag as f64 <= FLOOR_FACTOR * floor as f64 + FLOOR_SLACK_NS as f64
}

/// Says whose the generator's lateness was: the machine's (an idle control process that only
/// sleeps, measured beside the run, was as late) or the generator's own work.
///
/// Only `control` may excuse: a meter thread inside the generator (`own`) shares its cores, so a
/// generator that burns its CPU makes that meter late too, and would excuse itself. `own` is
/// reported beside the control, as this process's own hiccups. Without `control` nothing is
/// excused.
pub fn machine_floor(
    checks: &mut Checks,
    m: &Measurements,
    own: Option<&Histogram<u64>>,
    control: Option<&Histogram<u64>>,
) {
    let lag = &m.hist.dispatch_lag;
    if lag.is_empty() {
        return;
    }
    let (lag99, lag999) = (at(lag, 0.99), at(lag, 0.999));
    let lateness = format!(
        "generator lateness (dispatch lag) p99 {}, p99.9 {}",
        format_ns(lag99),
        format_ns(lag999)
    );
    let control = control.filter(|h| !h.is_empty());
    match control {
        Some(c) => checks.notes.push(format!(
            "{lateness}; the machine's own hiccups (an idle control process that only sleeps) p99 {}, p99.9 {}, max {}: {}",
            format_ns(at(c, 0.99)),
            format_ns(at(c, 0.999)),
            format_ns(c.max()),
            whose(lag99, lag999, c)
        )),
        None => checks.notes.push(format!(
            "{lateness}; no control meter ran beside the run, so none of it is excused as the machine's"
        )),
    }
    if let Some(own) = own.filter(|h| !h.is_empty()) {
        checks.notes.push(own_hiccups(own, control));
    }
    let floor99 = control.map_or(0, |c| at(c, 0.99));
    if checks.generator == GeneratorVerdict::Behind
        && lag99 > BEHIND_P99_NS
        && floor99 > BEHIND_P99_NS
    {
        checks.notes.push(format!(
            "the machine itself stalled: an idle process that only sleeps was {} late at p99 (VM steal, neighbours, a \
             loaded host). Part of the generator's lateness is the machine's, but it is in the results all the same",
            format_ns(floor99)
        ));
    }
}

fn at(h: &Histogram<u64>, q: f64) -> u64 {
    h.value_at_quantile(q)
}

/// Whose lateness p99 / p99.9 was, against the control meter.
fn whose(lag99: u64, lag999: u64, control: &Histogram<u64>) -> &'static str {
    whose_by(
        within_floor(lag99, at(control, 0.99)),
        within_floor(lag999, at(control, 0.999)),
    )
}

/// The words for lateness within the floor (or not) at p99 and at p99.9.
fn whose_by(p99_within: bool, p999_within: bool) -> &'static str {
    match (p99_within, p999_within) {
        (true, true) => {
            "within the machine's own floor: no sleeping generator could have done better here"
        }
        (true, false) => {
            "at the machine's floor up to p99; beyond it, the generator's own work delayed sends"
        }
        (false, _) => "above the machine's floor: the generator's own work delayed sends",
    }
}

/// The generator's self-check as it forms, for a live view: its verdict so far and one line
/// of words with the figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LiveCheck {
    pub verdict: GeneratorVerdict,
    pub line: String,
}

/// The self-check on what a live view knows: the last interval's send lag and response p99
/// (ns), and the control meter's floor p99 (ns) over about the same time, if one runs. It is
/// the final check's rule ([`sends_fell_behind`], [`within_floor`]) on send lag, since a live
/// view has no dispatch lag: send lag also counts waits for a connection, which the final
/// check tells apart. `open` is false for a closed or paced loop, which has no schedule of its
/// own to keep.
pub fn live_check(
    open: bool,
    send_lag_p99: u64,
    response_p99: u64,
    floor_p99: Option<u64>,
) -> LiveCheck {
    if !open {
        return LiveCheck {
            verdict: GeneratorVerdict::NotApplicable,
            line: "no verdict: a closed or paced loop has no schedule of its own to keep".into(),
        };
    }
    let behind = sends_fell_behind(send_lag_p99, response_p99);
    let (verdict, head) = if behind {
        (GeneratorVerdict::Behind, "GENERATOR BEHIND so far")
    } else {
        (GeneratorVerdict::Ok, "ok so far")
    };
    let mut line = format!(
        "{head}: send lag p99 {} against response p99 {} in the last interval",
        format_ns(send_lag_p99),
        format_ns(response_p99)
    );
    match floor_p99 {
        Some(floor) => {
            let within = within_floor(send_lag_p99, floor);
            line.push_str(&format!(
                "; the machine's own hiccups p99 {}: {}",
                format_ns(floor),
                whose_by(within, within)
            ));
        }
        None => {
            line.push_str("; no control meter reports, so none of it is excused as the machine's")
        }
    }
    LiveCheck { verdict, line }
}

/// This process's own meter, in words: and, when it was later than the machine's, that the
/// difference was sojourn's own doing.
fn own_hiccups(own: &Histogram<u64>, control: Option<&Histogram<u64>>) -> String {
    let mut note = format!(
        "this process's own hiccups (a thread of sojourn that only sleeps) p99 {}, p99.9 {}",
        format_ns(at(own, 0.99)),
        format_ns(at(own, 0.999))
    );
    if control.is_some_and(|c| !within_floor(at(own, 0.99), at(c, 0.99))) {
        note.push_str(
            ": later than the machine's; what sojourn's own threads added (a busy generator, or \
             one confined to too few cores) is not excused",
        );
    }
    note
}

/// A worker thread on CPU more than this share of the run has little headroom left: worth
/// saying, though it is no verdict (a busy generator that keeps its schedule is on time).
pub const CPU_BOUND_SHARE: f64 = 0.9;
/// Above this share, requests that waited for a connection probably waited for the generator:
/// a thread this busy reads answers late, so its connections stay busy longer than the
/// target's service time.
pub const CPU_BUSY_WITH_POOL_WAITS: f64 = 0.75;
/// Pool waits above this share of sent requests count as "requests waited".
const POOL_WAIT_SHARE: f64 = 0.01;

/// Whether requests that waited for a connection waited for the generator: more than a few of
/// the `sent` requests waited (`waited`) while a worker thread was this busy, reading answers
/// and so freeing connections late.
pub fn waits_were_the_generators(busiest_worker: f64, waited: u64, sent: u64) -> bool {
    busiest_worker >= CPU_BUSY_WITH_POOL_WAITS
        && waited as f64 / sent.max(1) as f64 > POOL_WAIT_SHARE
}

/// Whether a generator that freed connections late sent late because of it: its waits were
/// its own ([`waits_were_the_generators`]) and its send lag p99 distorts the results by the
/// same rule as dispatch lag ([`sends_fell_behind`]). A few short waits beside a busy thread
/// that kept the schedule are not falling behind.
pub fn slow_to_free(
    busiest_worker: f64,
    waited: u64,
    sent: u64,
    send_lag_p99: u64,
    response_p99: u64,
) -> bool {
    waits_were_the_generators(busiest_worker, waited, sent)
        && sends_fell_behind(send_lag_p99, response_p99)
}

/// Adds the CPU finding to an open loop's checks. A busy worker thread is not by itself a
/// generator that fell behind: whether it kept the schedule is what its lag says. Its headroom
/// is reported, and one case is called out: a busy thread reads answers and frees connections
/// late, so when requests waited for connections long enough to distort the results, those
/// waits are likely the generator's own.
pub fn cpu_bound(checks: &mut Checks, m: &Measurements, busiest_worker: f64) {
    checks.busiest_worker = Some(busiest_worker);
    let busy = format!(
        "a worker thread was on CPU {:.0}% of the run (idle timer spinning excluded)",
        100.0 * busiest_worker
    );
    let (waited, sent) = (m.tally.waited_for_connection, m.hist.send_lag.len());
    let (lag99, response99) = (
        m.hist.send_lag.value_at_quantile(0.99),
        m.hist.response.value_at_quantile(0.99),
    );
    if slow_to_free(busiest_worker, waited, sent, lag99, response99) {
        checks.generator = GeneratorVerdict::Behind;
        checks.notes.insert(
            0,
            format!(
                "GENERATOR BEHIND: {busy} while requests waited for connections: the waits are likely sojourn's own. \
                 A busy generator reads answers and frees connections late, so service times, send lag and pool \
                 waits include client-side delay. Use more --threads, or a lower --rate."
            ),
        );
        return;
    }
    // A low share is headroom only if the thread had the CPU to take: one kept off it by its
    // neighbours is also seldom on it, so only the busy end is put in words.
    let mut note = format!(
        "busiest worker thread on CPU {:.0}% of the run (idle timer spinning excluded)",
        100.0 * busiest_worker
    );
    if busiest_worker >= CPU_BOUND_SHARE {
        note.push_str(
            ": little headroom left. Whether it kept the schedule is what dispatch lag says; a thread this busy \
             reads answers late, so service times may include client-side delay. More --threads would add headroom",
        );
    }
    checks.notes.push(note);
}

/// A paced closed loop sends late by design whenever an answer is slow, so there is no
/// generator verdict to give; the notes say what each clock means and what it omitted.
pub fn assess_paced(m: &Measurements) -> Checks {
    let sent = m.hist.send_lag.len();
    let late = m.tally.waited_for_connection;
    let mut notes = vec![format!(
        "PACED CLOSED LOOP: each connection owns a share of the schedule's slots and sends at its next slot or \
         when its previous answer arrives, whichever is later, as hey -q, bombardier -r, fortio -qps and JMeter's \
         constant-throughput timer do. 'service' is timed from the send (what those tools report); 'response' \
         from the slot (wrk2's view, the open loop's clock). {late} of {sent} requests left after their slot \
         because their connection was still waiting for an earlier answer"
    )];
    if m.tally.never_sent > 0 {
        notes.push(format!(
            "{} slots were due before the end but their connection never got round to them: never sent. These \
             are the requests a paced closed loop omits, and they are missing from both clocks",
            m.tally.never_sent
        ));
    }
    Checks::not_applicable(notes)
}

/// A closed loop has no schedule, so there is nothing to fall behind.
pub fn assess_closed() -> Checks {
    Checks::not_applicable(vec![
        "closed loop: each connection waits for its answer before sending again, so requests the \
         target delayed by stalling were never sent and are missing from these numbers"
            .to_string(),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Outcome;
    use crate::record::{Recorder, Stamps};
    use std::time::Duration;

    fn run_with_dispatch_lag(lag: Duration, waited_every: u64) -> Measurements {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let s = Stamps {
                intended: at,
                dispatched: at + lag,
                sent: at + lag,
                waited_for_connection: i % waited_every == 0,
            };
            r.record(&s, at + lag + Duration::from_millis(1), Outcome::Ok);
        }
        Recorder::merge_all([r])
    }

    /// A busy thread that kept the schedule is on time, with its headroom said; only pool
    /// waits beside a busy thread are laid at the generator's door.
    #[test]
    fn a_busy_generator_on_schedule_passes_with_its_headroom_said() {
        let quiet = run_with_dispatch_lag(Duration::from_micros(5), u64::MAX);
        let mut checks = assess_open(&quiet, 8);
        cpu_bound(&mut checks, &quiet, 0.8);
        assert!(checks.passed(), "80% busy without pool waits is fine");
        assert!(checks.notes.iter().any(|n| n.contains("on CPU 80%")));
        let mut checks = assess_open(&quiet, 8);
        cpu_bound(&mut checks, &quiet, 0.97);
        assert!(checks.passed(), "on schedule, however busy: {checks:?}");
        assert_eq!(checks.busiest_worker, Some(0.97));
        assert!(
            checks
                .notes
                .iter()
                .any(|n| n.contains("on CPU 97%") && n.contains("little headroom")),
            "{:?}",
            checks.notes
        );
        // Long pool waits while the thread is busy are the generator's, not the target's.
        let waiting = run_with_waits(Duration::from_millis(3), 2);
        let mut checks = assess_open(&waiting, 8);
        cpu_bound(&mut checks, &waiting, 0.5);
        assert!(
            checks.passed(),
            "pool waits with an idle generator are the pool's"
        );
        cpu_bound(&mut checks, &waiting, 0.8);
        assert!(!checks.passed());
        assert!(checks.notes[0].contains("likely sojourn's own"));
        // A few microseconds of waiting beside a busy thread: on schedule all the same.
        let brief = run_with_waits(Duration::from_micros(50), 2);
        let mut checks = assess_open(&brief, 8);
        cpu_bound(&mut checks, &brief, 0.8);
        assert!(checks.passed(), "{:?}", checks.notes);
    }

    /// Every `waited_every`th request dispatched on time but sent `wait` late, having waited
    /// for a connection; each answered 1 ms after its send.
    fn run_with_waits(wait: Duration, waited_every: u64) -> Measurements {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let waited = i % waited_every == 0;
            let sent = if waited { at + wait } else { at };
            let s = Stamps {
                intended: at,
                dispatched: at,
                sent,
                waited_for_connection: waited,
            };
            r.record(&s, sent + Duration::from_millis(1), Outcome::Ok);
        }
        Recorder::merge_all([r])
    }

    fn meter(p99: Duration) -> Histogram<u64> {
        let mut h = crate::record::new_histogram();
        h.record_n(20_000, 980).unwrap();
        h.record_n(p99.as_nanos() as u64, 20).unwrap();
        h
    }

    /// A generator late by 3 ms whose own meter thread was as late (it shares the generator's
    /// cores) and whose control process was not: the lateness is the generator's. The own meter
    /// is reported, never used as the excuse; with no control meter nothing is excused.
    #[test]
    fn only_the_control_meter_excuses_lateness() {
        let late = run_with_dispatch_lag(Duration::from_millis(3), u64::MAX);
        let (own, calm) = (
            meter(Duration::from_millis(3)),
            meter(Duration::from_micros(50)),
        );
        let mut checks = assess_open(&late, 10);
        machine_floor(&mut checks, &late, Some(&own), Some(&calm));
        let notes = checks.notes.join("\n");
        assert!(
            notes.contains("above the machine's floor") && !notes.contains("within the machine's"),
            "{notes}"
        );
        assert!(
            notes.contains("this process's own hiccups") && notes.contains("not excused"),
            "{notes}"
        );
        // The control process as late as the generator: the machine's.
        let mut checks = assess_open(&late, 10);
        machine_floor(&mut checks, &late, Some(&own), Some(&own));
        let notes = checks.notes.join("\n");
        assert!(notes.contains("within the machine's own floor"), "{notes}");
        assert!(!notes.contains("not excused"), "{notes}");
        // No control meter: no excuse, whatever this process's own meter saw.
        let mut checks = assess_open(&late, 10);
        machine_floor(&mut checks, &late, Some(&own), None);
        let notes = checks.notes.join("\n");
        assert!(
            notes.contains("no control meter") && !notes.contains("within the machine's"),
            "{notes}"
        );
    }

    #[test]
    fn lateness_small_against_the_tail_is_a_note_not_a_verdict() {
        // 3 ms late against a 1 s tail: real, reported, but not distorting.
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..1000u64 {
            let at = Duration::from_millis(i);
            let lag = Duration::from_millis(3);
            let s = Stamps {
                intended: at,
                dispatched: at + lag,
                sent: at + lag,
                waited_for_connection: false,
            };
            r.record(&s, at + Duration::from_secs(1), Outcome::Ok);
        }
        let checks = assess_open(&Recorder::merge_all([r]), 10);
        assert_eq!(checks.generator, GeneratorVerdict::Ok);
        assert!(
            checks.notes[0].contains("small against response p99"),
            "{:?}",
            checks.notes
        );
    }

    /// The live check says what the final check would on the same figures: the same
    /// threshold for falling behind, the same floor, the same words for whose lateness it was.
    #[test]
    fn the_live_check_uses_the_final_checks_rule_and_words() {
        let (ms, us) = (1_000_000, 1_000);
        let late = live_check(true, 3 * ms, 10 * ms, Some(50 * us));
        assert_eq!(late.verdict, GeneratorVerdict::Behind);
        assert!(
            late.line.starts_with("GENERATOR BEHIND so far"),
            "{}",
            late.line
        );
        assert!(
            late.line.contains("above the machine's floor") && late.line.contains("3.00 ms"),
            "{}",
            late.line
        );
        // 3 ms against a 1 s tail: small, as the final check judges it; and the machine's.
        let small = live_check(true, 3 * ms, 1_000 * ms, Some(2_500 * us));
        assert_eq!(small.verdict, GeneratorVerdict::Ok);
        assert!(
            small.line.contains("within the machine's own floor"),
            "{}",
            small.line
        );
        assert_eq!(
            sends_fell_behind(3 * ms, 10 * ms),
            late.verdict == GeneratorVerdict::Behind
        );
        let alone = live_check(true, 20 * us, 10 * ms, None);
        assert_eq!(alone.verdict, GeneratorVerdict::Ok);
        assert!(alone.line.contains("no control meter"), "{}", alone.line);
        let closed = live_check(false, 3 * ms, 10 * ms, Some(50 * us));
        assert_eq!(closed.verdict, GeneratorVerdict::NotApplicable);
    }

    #[test]
    fn a_late_generator_is_called_out() {
        let checks = assess_open(
            &run_with_dispatch_lag(Duration::from_millis(3), u64::MAX),
            10,
        );
        assert_eq!(checks.generator, GeneratorVerdict::Behind);
        assert!(!checks.passed());
        assert!(checks.notes[0].contains("GENERATOR BEHIND"));
    }

    #[test]
    fn an_on_time_generator_passes_and_pool_waits_are_explained() {
        let checks = assess_open(&run_with_dispatch_lag(Duration::from_micros(5), 10), 8);
        assert_eq!(checks.generator, GeneratorVerdict::Ok);
        assert!(checks.passed());
        assert!(checks
            .notes
            .iter()
            .any(|n| n.contains("100 of 1000") && n.contains("all 8 were busy")));
    }
}

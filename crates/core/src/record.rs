//! Recording what happened to every request.
//!
//! Each sender (a worker thread, a simulated client) owns a [`Recorder`]; nothing on the
//! recording path is shared or locked. At the end the recorders are merged into one
//! [`Measurements`]. Memory is bounded: histograms are HdrHistograms (3 significant digits,
//! nanoseconds), and each finished interval of the timeline is kept as a compact serialized
//! histogram rather than a live one.
use std::collections::BTreeMap;
use std::io::Cursor;
use std::time::Duration;

use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;

use crate::conformance::GapRecord;
use crate::outcome::{FailureClass, FailureCounts, Outcome};
use crate::spill::Sealed;
use crate::units::nanos;

/// Significant decimal digits kept by every histogram.
pub const SIGFIG: u8 = 3;

/// The stamps of one request on the run's clock (offsets from the start of the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamps {
    /// When the schedule says it is due. Closed loop: equal to `sent`.
    pub intended: Duration,
    /// When the generator noticed it was due and queued it for a connection. The gap from
    /// `intended` is the generator's own lateness (timer or CPU), never the target's fault.
    pub dispatched: Duration,
    /// When its first byte was handed to the socket.
    pub sent: Duration,
    /// Whether it had to wait because every connection of the pool was busy.
    pub waited_for_connection: bool,
}

impl Stamps {
    /// Stamps of a request sent the moment it was due (closed loop, simulator).
    pub fn on_time(at: Duration) -> Stamps {
        Stamps {
            intended: at,
            dispatched: at,
            sent: at,
            waited_for_connection: false,
        }
    }
}

/// One finished request's times, for per-request sample files. Workers hand these to a single
/// writer; the histograms do not need them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestSample {
    /// When it was due, from the start of the run.
    pub intended: Duration,
    /// done − intended.
    pub response: Duration,
    /// done − sent (zero when it failed before anything was sent).
    pub service: Duration,
    pub outcome: Outcome,
}

/// A new empty histogram with the project's precision. It grows as larger values arrive.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGFIG).expect("3 significant digits is a valid precision")
}

/// The four histograms of the measurement model.
#[derive(Debug, Clone)]
pub struct Histograms {
    /// done − intended: what a user waits. Includes failures (time to failure) and, at their
    /// lower bound, every censored request.
    pub response: Histogram<u64>,
    /// done − sent: what the server and network spent.
    pub service: Histogram<u64>,
    /// sent − intended: time queued in the client.
    pub send_lag: Histogram<u64>,
    /// dispatched − intended: the part of the send lag that the generator itself caused.
    pub dispatch_lag: Histogram<u64>,
    /// Server-streaming calls: first message − intended, for the calls that got a message.
    /// Empty otherwise; like the send lag, a warm-up trim leaves it whole.
    pub first_message: Histogram<u64>,
}

impl Histograms {
    fn new() -> Self {
        Histograms {
            response: new_histogram(),
            service: new_histogram(),
            send_lag: new_histogram(),
            dispatch_lag: new_histogram(),
            first_message: new_histogram(),
        }
    }

    fn merge(&mut self, other: &Histograms) {
        add(&mut self.response, &other.response);
        add(&mut self.service, &other.service);
        add(&mut self.send_lag, &other.send_lag);
        add(&mut self.dispatch_lag, &other.dispatch_lag);
        add(&mut self.first_message, &other.first_message);
    }
}

fn add(into: &mut Histogram<u64>, from: &Histogram<u64>) {
    into.add(from)
        .expect("auto-resizing histograms of equal precision always add");
}

fn record_ns(h: &mut Histogram<u64>, d: Duration) {
    record_ns_n(h, d, 1);
}

fn record_ns_n(h: &mut Histogram<u64>, d: Duration, n: u64) {
    let v = nanos(d);
    // `record_n` grows an auto-resizing histogram; `saturating_record_n` would clamp to its
    // current (small) ceiling instead. Saturate only if growing is impossible.
    if h.record_n(v, n).is_err() {
        h.saturating_record_n(v, n);
    }
}

/// Every scheduled request ends in exactly one of these.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub completed: u64,
    pub failed: FailureCounts,
    /// Sent, but no response when the run ended.
    pub censored: u64,
    /// Due, but never sent before the run ended.
    pub never_sent: u64,
    /// Of the sent requests, how many waited for a free connection.
    pub waited_for_connection: u64,
    /// Server-streaming calls: the messages their answers carried, in all.
    pub messages: u64,
}

impl Tally {
    pub fn accounted(&self) -> u64 {
        self.completed
            .saturating_add(self.failed.total())
            .saturating_add(self.censored)
            .saturating_add(self.never_sent)
    }

    pub fn merge(&mut self, other: &Tally) {
        self.completed += other.completed;
        self.failed.merge(&other.failed);
        self.censored += other.censored;
        self.never_sent += other.never_sent;
        self.waited_for_connection += other.waited_for_connection;
        self.messages += other.messages;
    }
}

/// One label's share of a run (`--targets`): its own response, service and send-lag
/// histograms and its own counts, beside the whole run's. Every request of the run lands in
/// exactly one label, so the labels' tallies add up to the run's.
#[derive(Debug, Clone)]
pub struct LabelRecord {
    /// done − intended, censored requests at their lower bounds, as the run's.
    pub response: Histogram<u64>,
    /// done − sent.
    pub service: Histogram<u64>,
    /// sent − intended.
    pub send_lag: Histogram<u64>,
    /// The lower bounds inside `response`.
    pub censored: Histogram<u64>,
    /// The lower bounds inside `service`: sent and unanswered at the end, or timed out.
    pub censored_service: Histogram<u64>,
    pub tally: Tally,
    /// The label's response times interval by interval, when kept (journeys' steps and
    /// journeys): what its percentiles' batch-means intervals, its gate and its diff read.
    pub timeline: Option<LabelTimeline>,
}

impl LabelRecord {
    pub fn new() -> Self {
        LabelRecord {
            response: new_histogram(),
            service: new_histogram(),
            send_lag: new_histogram(),
            censored: new_histogram(),
            censored_service: new_histogram(),
            tally: Tally::default(),
            timeline: None,
        }
    }

    /// A record that also keeps its response times per interval of `width`.
    pub fn with_timeline(width: Duration) -> Self {
        LabelRecord {
            timeline: Some(LabelTimeline::new(width)),
            ..LabelRecord::new()
        }
    }

    pub fn merge(&mut self, other: &LabelRecord) {
        add(&mut self.response, &other.response);
        add(&mut self.service, &other.service);
        add(&mut self.send_lag, &other.send_lag);
        add(&mut self.censored, &other.censored);
        add(&mut self.censored_service, &other.censored_service);
        self.tally.merge(&other.tally);
        match (&mut self.timeline, &other.timeline) {
            (Some(into), Some(from)) => into.merge(from),
            (into @ None, Some(from)) => *into = Some(from.clone()),
            (_, None) => {}
        }
    }

    /// The response time at percentile `p` (0–100) and whether it is only a lower bound.
    pub fn response_at(&self, p: f64) -> Bound {
        bound_at(&self.response, &self.censored, p)
    }

    /// A request that got an answer (or failed) at `done`, as [`Recorder::record`].
    pub fn record(&mut self, s: &Stamps, done: Duration, outcome: Outcome) {
        let response = done.saturating_sub(s.intended);
        let service = done.saturating_sub(s.sent);
        record_ns(&mut self.response, response);
        record_ns(&mut self.service, service);
        record_ns(&mut self.send_lag, s.sent.saturating_sub(s.intended));
        if outcome == Outcome::Failed(FailureClass::Timeout) {
            record_ns(&mut self.censored_service, service);
        }
        self.count(outcome, response);
        self.in_interval(done, response);
    }

    /// A request that failed before anything was sent, as [`Recorder::record_unsent_failure`].
    pub fn record_unsent_failure(
        &mut self,
        intended: Duration,
        done: Duration,
        class: FailureClass,
    ) {
        let response = done.saturating_sub(intended);
        record_ns(&mut self.response, response);
        self.count(Outcome::Failed(class), response);
        self.in_interval(done, response);
    }

    /// An answer (or failure) at `done` joins the interval it finished in, as the run's
    /// timeline keys its own. Unfinished requests join none, as in the run's.
    fn in_interval(&mut self, done: Duration, response: Duration) {
        if let Some(t) = &mut self.timeline {
            record_ns(t.slot(done), response);
        }
    }

    /// Sent and unanswered at `end` (`sent` is `Some`), or due and never sent: its response
    /// time is at least `end − intended`, and once sent its service time at least `end − sent`.
    pub fn record_unfinished(&mut self, intended: Duration, sent: Option<Duration>, end: Duration) {
        let bound = end.saturating_sub(intended);
        record_ns(&mut self.response, bound);
        record_ns(&mut self.censored, bound);
        match sent {
            Some(sent) => {
                let service = end.saturating_sub(sent);
                record_ns(&mut self.service, service);
                record_ns(&mut self.censored_service, service);
                record_ns(&mut self.send_lag, sent.saturating_sub(intended));
                self.tally.censored += 1;
            }
            None => self.tally.never_sent += 1,
        }
    }

    fn count(&mut self, outcome: Outcome, response: Duration) {
        match outcome {
            Outcome::Ok => self.tally.completed += 1,
            Outcome::Failed(class) => {
                self.tally.failed.add(class);
                if class == FailureClass::Timeout {
                    record_ns(&mut self.censored, response);
                }
            }
        }
    }
}

impl Default for LabelRecord {
    fn default() -> Self {
        LabelRecord::new()
    }
}

/// One label's response times per interval of the run's timeline (finish time decides the
/// interval, as for the run's). Only the two newest intervals stay live histograms; older ones
/// are sealed into compact bytes, which past [`crate::spill::SPILL_AFTER`] go to a temporary
/// file as the run's own do: a soak's memory does not grow with its length. A live histogram is
/// reused rather than allocated per interval.
#[derive(Debug)]
pub struct LabelTimeline {
    width: Duration,
    live: BTreeMap<u64, Histogram<u64>>,
    spare: Vec<Histogram<u64>>,
    /// Sealed intervals, their response times only; several of one index after a merge.
    sealed: Sealed,
}

impl Clone for LabelTimeline {
    fn clone(&self) -> Self {
        let mut sealed = Sealed::default();
        for r in self.sealed.records() {
            sealed.push(r);
        }
        LabelTimeline {
            width: self.width,
            live: self.live.clone(),
            spare: Vec::new(),
            sealed,
        }
    }
}

impl LabelTimeline {
    pub fn new(width: Duration) -> Self {
        LabelTimeline {
            width: width.max(Duration::from_millis(1)),
            live: BTreeMap::new(),
            spare: Vec::new(),
            sealed: Sealed::default(),
        }
    }

    pub fn width(&self) -> Duration {
        self.width
    }

    fn slot(&mut self, done: Duration) -> &mut Histogram<u64> {
        let index = (done.as_nanos() / self.width.as_nanos()) as u64;
        while let Some((&oldest, _)) = self.live.first_key_value() {
            if oldest + LIVE_INTERVALS > index {
                break;
            }
            let mut h = self.live.remove(&oldest).expect("key just seen");
            self.sealed.push(IntervalRecord::of_responses(oldest, &h));
            h.reset();
            self.spare.push(h);
        }
        let spare = &mut self.spare;
        self.live
            .entry(index)
            .or_insert_with(|| spare.pop().unwrap_or_else(new_histogram))
    }

    fn merge(&mut self, other: &LabelTimeline) {
        for r in other.sealed.records() {
            self.sealed.push(r);
        }
        for (&index, h) in &other.live {
            self.sealed.push(IntervalRecord::of_responses(index, h));
        }
    }

    /// Every interval in which something finished, in time order: (index, response times).
    pub fn intervals(&self) -> Vec<(u64, Histogram<u64>)> {
        let mut by_index: BTreeMap<u64, Histogram<u64>> = BTreeMap::new();
        let sealed = self.sealed.records().into_iter();
        let sealed = sealed.map(|r| (r.index, r.response_histogram()));
        let live = self.live.iter().map(|(&i, h)| (i, h.clone()));
        for (index, h) in sealed.chain(live) {
            add(by_index.entry(index).or_insert_with(new_histogram), &h);
        }
        by_index
            .into_iter()
            .filter(|(_, h)| !h.is_empty())
            .collect()
    }
}

/// Final answers counted by HTTP status code. A map, not an array: a hostile server may send
/// any three digits, and a new code costs one entry once, never one per request.
pub type StatusCounts = BTreeMap<u16, u64>;

/// One finished interval of the timeline, keyed by when requests finished.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRecord {
    pub index: u64,
    pub completed: u64,
    pub failed: u64,
    /// V2-serialized response-time histogram of the requests that finished in the interval.
    pub response: Vec<u8>,
    /// V2-serialized send-lag histogram of the same requests.
    pub send_lag: Vec<u8>,
    /// V2-serialized service-time histogram of the same requests (those that were sent).
    pub service: Vec<u8>,
    /// V2-serialized lower bounds of the requests that timed out in the interval.
    pub timeouts: Vec<u8>,
    /// V2-serialized service times of the same timeouts: lower bounds too.
    pub service_timeouts: Vec<u8>,
}

impl IntervalRecord {
    /// The bytes its histograms take.
    /// A label's interval: only its response times, the other histograms left empty.
    fn of_responses(index: u64, response: &Histogram<u64>) -> IntervalRecord {
        IntervalRecord {
            index,
            completed: 0,
            failed: 0,
            response: encode(response),
            send_lag: Vec::new(),
            service: Vec::new(),
            timeouts: Vec::new(),
            service_timeouts: Vec::new(),
        }
    }

    pub fn encoded_len(&self) -> usize {
        self.response.len()
            + self.send_lag.len()
            + self.service.len()
            + self.timeouts.len()
            + self.service_timeouts.len()
    }

    pub fn response_histogram(&self) -> Histogram<u64> {
        decode(&self.response)
    }

    pub fn send_lag_histogram(&self) -> Histogram<u64> {
        decode(&self.send_lag)
    }

    pub fn service_histogram(&self) -> Histogram<u64> {
        decode(&self.service)
    }

    pub fn timeouts_histogram(&self) -> Histogram<u64> {
        decode(&self.timeouts)
    }

    pub fn service_timeouts_histogram(&self) -> Histogram<u64> {
        decode(&self.service_timeouts)
    }
}

/// A sealed interval's histogram as compact bytes. Not deflated: a compressor allocates a few
/// hundred kilobytes of state per call, which a run sealing intervals every second turns into
/// a slowly growing heap; a long run's sealed intervals go to a temporary file instead
/// ([`crate::spill`]). Live sinks pass an interval's histogram so too.
pub fn encode(h: &Histogram<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut out)
        .expect("serializing into a Vec cannot fail");
    out
}

/// A histogram from [`encode`]'s bytes (and only those: anything else panics).
pub fn decode(bytes: &[u8]) -> Histogram<u64> {
    Deserializer::new()
        .deserialize(&mut Cursor::new(bytes))
        .expect("bytes were written by encode")
}

#[derive(Debug, Clone)]
struct LiveInterval {
    completed: u64,
    failed: u64,
    response: Histogram<u64>,
    send_lag: Histogram<u64>,
    service: Histogram<u64>,
    timeouts: Histogram<u64>,
    service_timeouts: Histogram<u64>,
}

impl LiveInterval {
    fn new() -> Self {
        LiveInterval {
            completed: 0,
            failed: 0,
            response: new_histogram(),
            send_lag: new_histogram(),
            service: new_histogram(),
            timeouts: new_histogram(),
            service_timeouts: new_histogram(),
        }
    }

    fn seal(&self, index: u64) -> IntervalRecord {
        IntervalRecord {
            index,
            completed: self.completed,
            failed: self.failed,
            response: encode(&self.response),
            send_lag: encode(&self.send_lag),
            service: encode(&self.service),
            timeouts: encode(&self.timeouts),
            service_timeouts: encode(&self.service_timeouts),
        }
    }

    /// Empty again, keeping the histograms' memory for the next interval.
    fn reset(&mut self) {
        self.completed = 0;
        self.failed = 0;
        for h in [
            &mut self.response,
            &mut self.send_lag,
            &mut self.service,
            &mut self.timeouts,
            &mut self.service_timeouts,
        ] {
            h.reset();
        }
    }
}

/// Per-interval histograms. Requests of one sender finish in nearly increasing time order, so
/// only the newest couple of intervals stay live; older ones are sealed into compact bytes,
/// and a long run's many sealed intervals wait in a temporary file ([`crate::spill`]). A sealed
/// interval's histograms are emptied and reused for the next one: a run that seals an
/// interval every second allocates nothing for it, so its heap does not creep.
#[derive(Debug)]
struct Timeline {
    width: Duration,
    live: BTreeMap<u64, LiveInterval>,
    spare: Vec<LiveInterval>,
    sealed: Sealed,
}

/// How many of the newest intervals stay live, to absorb slightly out-of-order finishes.
const LIVE_INTERVALS: u64 = 2;

impl Timeline {
    fn new(width: Duration) -> Self {
        Timeline {
            width: width.max(Duration::from_millis(1)),
            live: BTreeMap::new(),
            spare: Vec::new(),
            sealed: Sealed::default(),
        }
    }

    fn slot(&mut self, done: Duration) -> &mut LiveInterval {
        let index = (done.as_nanos() / self.width.as_nanos()) as u64;
        while let Some((&oldest, _)) = self.live.first_key_value() {
            if oldest + LIVE_INTERVALS > index {
                break;
            }
            let mut interval = self.live.remove(&oldest).expect("key just seen");
            self.sealed.push(interval.seal(oldest));
            interval.reset();
            self.spare.push(interval);
        }
        let spare = &mut self.spare;
        self.live
            .entry(index)
            .or_insert_with(|| spare.pop().unwrap_or_else(LiveInterval::new))
    }

    fn into_records(mut self) -> Vec<IntervalRecord> {
        for (index, interval) in std::mem::take(&mut self.live) {
            self.sealed.push(interval.seal(index));
        }
        self.sealed.into_records()
    }
}

/// One sender's recorder. Not shared: each worker or simulated client owns one.
#[derive(Debug)]
pub struct Recorder {
    hist: Histograms,
    tally: Tally,
    /// Response times that are only lower bounds (in flight or unsent at the end, timed out).
    /// They are in `hist.response` too; kept apart so percentiles know what they rest on.
    censored: Histogram<u64>,
    /// The lower bounds of requests still in flight or never sent at the end. They belong to
    /// no interval of the timeline, so a warm-up trim keeps them apart.
    unfinished: Histogram<u64>,
    /// Service times that are only lower bounds (in flight at the end, timed out); they are in
    /// `hist.service` too. A request never sent has no service time at all.
    censored_service: Histogram<u64>,
    /// The part of `censored_service` still in flight at the end (in no interval).
    unfinished_service: Histogram<u64>,
    timeline: Timeline,
    /// The gaps between this sender's consecutive sends, on the schedule's own clock.
    gaps: GapRecord,
    last_send: Option<f64>,
    /// Per label (`--targets`), indexed by label number; empty without labels.
    labels: Vec<LabelRecord>,
    /// Per journey of a journey file, indexed by journey: each journey's time from its due time
    /// to the end of its last step, and its counts. Empty without journeys.
    journeys: Vec<LabelRecord>,
    statuses: StatusCounts,
}

impl Recorder {
    /// A recorder whose timeline has intervals of `interval` (1 s by default in the CLI).
    pub fn new(interval: Duration) -> Self {
        Recorder {
            hist: Histograms::new(),
            tally: Tally::default(),
            censored: new_histogram(),
            unfinished: new_histogram(),
            censored_service: new_histogram(),
            unfinished_service: new_histogram(),
            timeline: Timeline::new(interval),
            gaps: GapRecord::new(),
            last_send: None,
            labels: Vec::new(),
            journeys: Vec::new(),
            statuses: StatusCounts::new(),
        }
    }

    /// A recorder that also keeps `labels` per-label records (`--targets`).
    pub fn with_labels(interval: Duration, labels: usize) -> Self {
        let mut r = Recorder::new(interval);
        r.labels = vec![LabelRecord::new(); labels];
        r
    }

    /// A recorder for journeys: a record per step (its labels) and per journey, each with its
    /// own timeline (a file names few of them, and `--slo` and `diff` judge each).
    pub fn with_journeys(interval: Duration, steps: usize, journeys: usize) -> Self {
        let mut r = Recorder::new(interval);
        r.labels = vec![LabelRecord::with_timeline(interval); steps];
        r.journeys = vec![LabelRecord::with_timeline(interval); journeys];
        r
    }

    /// Journey `journey`'s record, or `None` when the recorder keeps no journeys.
    pub fn journey(&mut self, journey: usize) -> Option<&mut LabelRecord> {
        self.journeys.get_mut(journey)
    }

    /// A final answer with this HTTP status code.
    /// A server-streaming call's answer carried `messages` messages, the first at `first`
    /// (none when it carried none). Only streaming calls come here.
    pub fn record_stream(&mut self, intended: Duration, first: Option<Duration>, messages: u64) {
        self.tally.messages += messages;
        if let Some(first) = first {
            record_ns(&mut self.hist.first_message, first.saturating_sub(intended));
        }
    }

    pub fn record_status(&mut self, status: u16) {
        *self.statuses.entry(status).or_default() += 1;
    }

    /// Label `label`'s own record, to record a request there as well as in the whole run. `None`
    /// when the recorder keeps no labels.
    pub fn label(&mut self, label: usize) -> Option<&mut LabelRecord> {
        self.labels.get_mut(label)
    }

    /// A request left for the server when the schedule expected `expected` arrivals of this
    /// sender so far (Λ(t) of its share of the schedule). The difference from the previous
    /// send is one rescaled gap: Exp(1) for Poisson, exactly 1 for a constant rate.
    pub fn record_send_at(&mut self, expected: f64) {
        if let Some(last) = self.last_send.replace(expected) {
            self.gaps.record(expected - last);
        }
    }

    /// A request that got an answer (or failed) at `done`.
    pub fn record(&mut self, s: &Stamps, done: Duration, outcome: Outcome) {
        let response = done.saturating_sub(s.intended);
        let service = done.saturating_sub(s.sent);
        record_ns(&mut self.hist.response, response);
        record_ns(&mut self.hist.service, service);
        self.record_send(s);
        match outcome {
            Outcome::Ok => self.tally.completed += 1,
            Outcome::Failed(class) => {
                self.tally.failed.add(class);
                // A timeout says only that the answer would have taken at least this long,
                // from its due time and from its send.
                if class == FailureClass::Timeout {
                    self.lower_bound(response);
                    record_ns(&mut self.censored_service, service);
                }
            }
        }
        let interval = self.timeline.slot(done);
        match outcome {
            Outcome::Ok => interval.completed += 1,
            Outcome::Failed(_) => interval.failed += 1,
        }
        record_ns(&mut interval.response, response);
        record_ns(&mut interval.service, service);
        record_ns(&mut interval.send_lag, s.sent.saturating_sub(s.intended));
        if outcome == Outcome::Failed(FailureClass::Timeout) {
            record_ns(&mut interval.timeouts, response);
            record_ns(&mut interval.service_timeouts, service);
        }
    }

    /// A request that failed before anything was sent (e.g. its connection could not be
    /// opened). It has a time to failure but no send lag and no service time.
    pub fn record_unsent_failure(
        &mut self,
        intended: Duration,
        dispatched: Duration,
        done: Duration,
        class: FailureClass,
    ) {
        let response = done.saturating_sub(intended);
        record_ns(&mut self.hist.response, response);
        record_ns(
            &mut self.hist.dispatch_lag,
            dispatched.saturating_sub(intended),
        );
        self.tally.failed.add(class);
        if class == FailureClass::Timeout {
            self.lower_bound(response);
        }
        let interval = self.timeline.slot(done);
        interval.failed += 1;
        record_ns(&mut interval.response, response);
        if class == FailureClass::Timeout {
            record_ns(&mut interval.timeouts, response);
        }
    }

    /// A request sent but unanswered when the run ended at `end`: its response time is at
    /// least `end − intended`, and its service time at least `end − sent`.
    pub fn record_in_flight(&mut self, s: &Stamps, end: Duration) {
        self.record_send(s);
        self.tally.censored += 1;
        self.censor(s.intended, end);
        let service = end.saturating_sub(s.sent);
        for h in [
            &mut self.hist.service,
            &mut self.censored_service,
            &mut self.unfinished_service,
        ] {
            record_ns(h, service);
        }
    }

    /// A request due at `intended` but never sent before the run ended at `end`.
    pub fn record_never_sent(&mut self, intended: Duration, dispatched: Duration, end: Duration) {
        self.record_never_sent_n(intended, dispatched, end, 1);
    }

    /// `n` requests due at `intended` and never sent (a peer tool's count of dropped ones).
    /// The histograms hold at most [`crate::result::MAX_COUNT`] values in all.
    pub fn record_never_sent_n(
        &mut self,
        intended: Duration,
        dispatched: Duration,
        end: Duration,
        n: u64,
    ) {
        if n == 0 {
            return;
        }
        record_ns_n(
            &mut self.hist.dispatch_lag,
            dispatched.saturating_sub(intended),
            n,
        );
        self.tally.never_sent = self.tally.never_sent.saturating_add(n);
        let bound = end.saturating_sub(intended);
        for h in [
            &mut self.hist.response,
            &mut self.unfinished,
            &mut self.censored,
        ] {
            record_ns_n(h, bound, n);
        }
    }

    fn record_send(&mut self, s: &Stamps) {
        record_ns(&mut self.hist.send_lag, s.sent.saturating_sub(s.intended));
        record_ns(
            &mut self.hist.dispatch_lag,
            s.dispatched.saturating_sub(s.intended),
        );
        if s.waited_for_connection {
            self.tally.waited_for_connection += 1;
        }
    }

    fn censor(&mut self, intended: Duration, end: Duration) {
        let bound = end.saturating_sub(intended);
        record_ns(&mut self.hist.response, bound);
        record_ns(&mut self.unfinished, bound);
        self.lower_bound(bound);
    }

    fn lower_bound(&mut self, value: Duration) {
        record_ns(&mut self.censored, value);
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Combines recorders into the measurements of the whole run.
    pub fn merge_all(recorders: impl IntoIterator<Item = Recorder>) -> Measurements {
        let mut hist = Histograms::new();
        let mut tally = Tally::default();
        let mut censored = new_histogram();
        let mut unfinished = new_histogram();
        let mut censored_service = new_histogram();
        let mut unfinished_service = new_histogram();
        let mut gaps = GapRecord::new();
        let mut width = Duration::from_secs(1);
        let mut records = Vec::new();
        let mut labels: Vec<LabelRecord> = Vec::new();
        let mut journeys: Vec<LabelRecord> = Vec::new();
        let mut statuses = StatusCounts::new();
        for r in recorders {
            merge_records(&mut labels, &r.labels);
            merge_records(&mut journeys, &r.journeys);
            for (code, n) in &r.statuses {
                *statuses.entry(*code).or_default() += n;
            }
            hist.merge(&r.hist);
            tally.merge(&r.tally);
            add(&mut censored, &r.censored);
            add(&mut unfinished, &r.unfinished);
            add(&mut censored_service, &r.censored_service);
            add(&mut unfinished_service, &r.unfinished_service);
            gaps.merge(&r.gaps);
            width = r.timeline.width;
            records.extend(r.timeline.into_records());
        }
        Measurements {
            hist,
            tally,
            censored,
            unfinished,
            censored_service,
            unfinished_service,
            gaps,
            interval: width,
            intervals: merge_intervals(records),
            labels,
            journeys,
            statuses,
        }
    }
}

/// Adds one sender's per-label (or per-journey) records into the run's, index by index.
fn merge_records(into: &mut Vec<LabelRecord>, from: &[LabelRecord]) {
    if into.len() < from.len() {
        into.resize_with(from.len(), LabelRecord::new);
    }
    for (into, from) in into.iter_mut().zip(from) {
        into.merge(from);
    }
}

/// Folds interval records of the same index (from different senders) into one, in time order.
fn merge_intervals(mut records: Vec<IntervalRecord>) -> Vec<IntervalRecord> {
    records.sort_by_key(|r| r.index);
    let mut out: Vec<IntervalRecord> = Vec::new();
    let mut group: Vec<IntervalRecord> = Vec::new();
    for r in records {
        if group.first().is_some_and(|g| g.index != r.index) {
            out.push(fold(std::mem::take(&mut group)));
        }
        group.push(r);
    }
    if !group.is_empty() {
        out.push(fold(group));
    }
    out
}

fn fold(group: Vec<IntervalRecord>) -> IntervalRecord {
    if group.len() == 1 {
        return group.into_iter().next().expect("one element");
    }
    let mut live = LiveInterval::new();
    let index = group[0].index;
    for r in &group {
        live.completed += r.completed;
        live.failed += r.failed;
        add(&mut live.response, &r.response_histogram());
        add(&mut live.send_lag, &r.send_lag_histogram());
        add(&mut live.service, &r.service_histogram());
        add(&mut live.timeouts, &r.timeouts_histogram());
        add(&mut live.service_timeouts, &r.service_timeouts_histogram());
    }
    live.seal(index)
}

/// The merged measurements of a whole run.
#[derive(Debug, Clone)]
pub struct Measurements {
    pub hist: Histograms,
    pub tally: Tally,
    /// The lower bounds of censored requests and timeouts (also inside `hist.response`).
    pub censored: Histogram<u64>,
    /// The part of `censored` still in flight or never sent at the end (in no interval).
    pub unfinished: Histogram<u64>,
    /// The lower bounds inside `hist.service`: in flight at the end (at least end − sent) and
    /// timed out.
    pub censored_service: Histogram<u64>,
    /// The part of `censored_service` still in flight at the end (in no interval).
    pub unfinished_service: Histogram<u64>,
    /// Rescaled gaps between consecutive sends of each sender (open loop only).
    pub gaps: GapRecord,
    pub interval: Duration,
    pub intervals: Vec<IntervalRecord>,
    /// Per label (`--targets`), indexed by label number; empty without labels. Whole-run
    /// histograms: a warm-up trim leaves them as they are.
    pub labels: Vec<LabelRecord>,
    /// Per journey (`--journey`), indexed by journey; empty without journeys. Their tallies
    /// count journeys: completed, failed at a step, censored (running at the end) and never
    /// started (`never_sent`). Whole-run histograms, like the labels'.
    pub journeys: Vec<LabelRecord>,
    /// Final answers by HTTP status code.
    pub statuses: StatusCounts,
}

/// What a warm-up trim took out of the summary histograms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trimmed {
    /// Requests answered or failed before the cut (they stay in the counts and the timeline).
    pub requests: u64,
    /// Where the cut fell: a whole number of intervals from the start.
    pub until: Duration,
}

impl Measurements {
    /// The measurements with the requests that finished before `until` (rounded up to a whole
    /// interval) left out of the response, service and censored histograms. Counts and the
    /// timeline keep everything: nothing is lost, the summary only stops describing the warm-up.
    /// Send and dispatch lag describe the generator over the whole run and stay whole.
    pub fn without_warmup(&self, until: Duration) -> (Measurements, Trimmed) {
        let width = self.interval.as_nanos().max(1);
        let first_kept = until.as_nanos().div_ceil(width) as u64;
        let mut kept = self.clone();
        kept.hist.response = self.unfinished.clone();
        kept.hist.service = self.unfinished_service.clone();
        kept.censored = self.unfinished.clone();
        kept.censored_service = self.unfinished_service.clone();
        let mut requests = 0;
        for r in &self.intervals {
            if r.index < first_kept {
                requests += r.completed + r.failed;
                continue;
            }
            add(&mut kept.hist.response, &r.response_histogram());
            add(&mut kept.hist.service, &r.service_histogram());
            add(&mut kept.censored, &r.timeouts_histogram());
            add(&mut kept.censored_service, &r.service_timeouts_histogram());
        }
        let until = Duration::from_nanos((first_kept as u128 * width) as u64);
        (kept, Trimmed { requests, until })
    }

    /// The response time at percentile `p` (0–100) and whether it is only a lower bound.
    pub fn response_at(&self, p: f64) -> Bound {
        bound_at(&self.hist.response, &self.censored, p)
    }

    /// The service time at percentile `p` (0–100) and whether it is only a lower bound.
    pub fn service_at(&self, p: f64) -> Bound {
        bound_at(&self.hist.service, &self.censored_service, p)
    }

    /// The mean time between one connection's requests in a closed loop of `connections` that
    /// ran for `elapsed`: what it "expected" between samples, for the back-fill (as wrk does).
    pub fn per_connection_interval(&self, elapsed: Duration, connections: usize) -> Duration {
        let answered = self.tally.completed + self.tally.failed.total();
        let per_connection = (answered as f64 / connections.max(1) as f64).max(1.0);
        Duration::from_secs_f64(elapsed.as_secs_f64() / per_connection)
    }

    /// The closed-loop "corrected" view: HdrHistogram's expected-interval back-fill, which
    /// invents the samples a closed loop would have taken had it not waited. An estimate, not a
    /// measurement: it is reported separately and labelled as such.
    pub fn backfilled(&self, expected_interval: Duration) -> Histogram<u64> {
        let mut out = new_histogram();
        out.add_correct(&self.hist.response, nanos(expected_interval).max(1))
            .expect("auto-resizing histograms of equal precision always add");
        out
    }
}

/// A percentile value that may be only a lower bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound {
    pub value: u64,
    pub lower_bound: bool,
}

/// The value at percentile `p` of `h`, marked as a lower bound when the censored values in it
/// could move it.
///
/// Censored requests sit in `h` at their lower bounds, which is the most optimistic case. The
/// most pessimistic case moves all of them to +∞: the percentile's rank then falls on the
/// uncensored values only, or beyond them. If both cases give the same value (to histogram
/// precision), censoring cannot change it and it is exact; otherwise the optimistic value is a
/// lower bound.
pub fn bound_at(h: &Histogram<u64>, censored: &Histogram<u64>, p: f64) -> Bound {
    let value = if p >= 100.0 {
        h.max()
    } else {
        h.value_at_quantile(p / 100.0)
    };
    let (n, k) = (h.len(), censored.len().min(h.len()));
    if k == 0 {
        return Bound {
            value,
            lower_bound: false,
        };
    }
    let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as u64;
    let uncensored_n = n - k;
    if rank > uncensored_n {
        return Bound {
            value,
            lower_bound: true,
        };
    }
    let mut uncensored = h.clone();
    let _ = uncensored.subtract(censored);
    let pessimistic = uncensored.value_at_quantile(rank as f64 / uncensored_n as f64);
    Bound {
        value,
        lower_bound: !h.equivalent(value, pessimistic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn sent_late(intended: u64, sent: u64, waited: bool) -> Stamps {
        Stamps {
            intended: ms(intended),
            dispatched: ms(intended),
            sent: ms(sent),
            waited_for_connection: waited,
        }
    }

    /// A label's timeline over a long run: sealed intervals leave memory for the file as the
    /// run's own do, and come back whole, each in its interval, with a clone and a merge.
    #[test]
    fn a_label_timeline_spills_and_comes_back_whole() {
        let mut l = LabelRecord::with_timeline(Duration::from_secs(1));
        let hours = 3600u64;
        for second in 0..hours {
            for k in 0..20u64 {
                let took = Duration::from_micros(1_000 + (second * 37 + k * 911) % 50_000);
                let done = Duration::from_secs(second) + Duration::from_millis(500);
                l.record(&Stamps::on_time(done - took), done, Outcome::Ok);
            }
            let t = l.timeline.as_ref().unwrap();
            assert!(
                t.live.len() <= LIVE_INTERVALS as usize + 1,
                "second {second}"
            );
            assert!(
                t.sealed.in_memory() <= crate::spill::SPILL_AFTER + 4096,
                "second {second}: {} bytes in memory",
                t.sealed.in_memory()
            );
        }
        let mut merged = LabelRecord::with_timeline(Duration::from_secs(1));
        merged.merge(&l.clone());
        for record in [&l, &merged] {
            let intervals = record.timeline.as_ref().unwrap().intervals();
            assert_eq!(intervals.len() as u64, hours);
            assert!(intervals
                .iter()
                .enumerate()
                .all(|(i, (index, h))| *index == i as u64 && h.len() == 20));
        }
    }

    #[test]
    fn the_three_derived_times() {
        let mut r = Recorder::new(Duration::from_secs(1));
        // Due at 100 ms, sent at 130 ms (pool full), answered at 140 ms.
        r.record(&sent_late(100, 130, true), ms(140), Outcome::Ok);
        let m = Recorder::merge_all([r]);
        let near = |h: &Histogram<u64>, want_ms: u64| h.equivalent(h.max(), want_ms * 1_000_000);
        assert!(near(&m.hist.response, 40), "response = done − intended");
        assert!(near(&m.hist.service, 10), "service = done − sent");
        assert!(near(&m.hist.send_lag, 30), "send lag = sent − intended");
        assert_eq!(
            m.hist.dispatch_lag.max(),
            0,
            "the generator itself was on time"
        );
        assert_eq!(m.tally.waited_for_connection, 1);
        assert_eq!(m.tally.completed, 1);
    }

    #[test]
    fn censoring_arithmetic() {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..98 {
            r.record(&Stamps::on_time(ms(i * 10)), ms(i * 10 + 5), Outcome::Ok);
        }
        // The run ends at 1,000 ms. One request sent at 980 ms is still out: ≥ 20 ms.
        r.record_in_flight(&Stamps::on_time(ms(980)), ms(1000));
        // One due at 990 ms was never sent: ≥ 10 ms.
        r.record_never_sent(ms(990), ms(990), ms(1000));
        let m = Recorder::merge_all([r]);
        assert_eq!(m.tally.accounted(), 100);
        assert_eq!((m.tally.censored, m.tally.never_sent), (1, 1));
        assert_eq!(m.censored.len(), 2);
        assert!(
            m.hist.response.equivalent(m.censored.min(), 10_000_000),
            "the smaller bound"
        );
        let p50 = m.response_at(50.0);
        assert!(
            !p50.lower_bound,
            "p50 = 5 ms: moving two censored values to +∞ cannot change it"
        );
        let p99 = m.response_at(99.0);
        assert!(
            p99.lower_bound,
            "p99 of 100 is the 99th value, one of the censored pair in the worst case"
        );
        let max = m.response_at(100.0);
        assert!(
            max.lower_bound,
            "the maximum is a censored value: at least 20 ms"
        );
        assert!(m.hist.response.equivalent(max.value, 20_000_000));
        assert_eq!(
            m.hist.send_lag.len(),
            99,
            "never-sent requests have no send lag"
        );
    }

    /// A request sent and unanswered at the end waited at least end − sent for the server:
    /// its service time is a lower bound, as its response time is. A timeout's is too. A
    /// request never sent has no service time at all.
    #[test]
    fn unanswered_requests_bound_their_service_time_too() {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..97 {
            r.record(&Stamps::on_time(ms(i * 10)), ms(i * 10 + 5), Outcome::Ok);
        }
        // The run ends at 1,000 ms. Due at 900 ms, sent at 950 ms, still out: ≥ 50 ms of
        // service (and ≥ 100 ms of response).
        r.record_in_flight(&sent_late(900, 950, true), ms(1000));
        // Sent at 970 ms, given up at 990 ms: ≥ 20 ms.
        let timeout = Outcome::Failed(FailureClass::Timeout);
        r.record(&Stamps::on_time(ms(970)), ms(990), timeout);
        r.record_never_sent(ms(995), ms(995), ms(1000));
        let m = Recorder::merge_all([r]);
        assert_eq!(
            m.hist.service.len(),
            99,
            "every request sent, and only those"
        );
        assert_eq!(
            m.censored_service.len(),
            2,
            "the one in flight and the timeout"
        );
        assert_eq!(m.unfinished_service.len(), 1, "only the one in flight");
        let max = m.service_at(100.0);
        assert!(max.lower_bound, "the maximum is the one in flight");
        assert!(m.hist.service.equivalent(max.value, 50_000_000), "{max:?}");
        assert!(
            m.service_at(99.0).lower_bound,
            "p99 of 99 is the 99th value: a censored one in the worst case"
        );
        let p50 = m.service_at(50.0);
        assert!(!p50.lower_bound, "two censored of 99 cannot move p50");
        assert!(m.hist.service.equivalent(p50.value, 5_000_000));
    }

    #[test]
    fn a_timeout_is_a_lower_bound_at_the_timeout() {
        let mut r = Recorder::new(Duration::from_secs(1));
        r.record(&Stamps::on_time(ms(0)), ms(1), Outcome::Ok);
        r.record(
            &Stamps::on_time(ms(0)),
            ms(500),
            Outcome::Failed(FailureClass::Timeout),
        );
        let m = Recorder::merge_all([r]);
        assert_eq!(m.tally.failed.get(FailureClass::Timeout), 1);
        assert!(m.response_at(100.0).lower_bound);
        assert!(!m.response_at(10.0).lower_bound);
    }

    #[test]
    fn merging_per_thread_recorders_equals_recording_in_one() {
        let mut whole = Recorder::new(Duration::from_secs(1));
        let mut parts = [
            Recorder::new(Duration::from_secs(1)),
            Recorder::new(Duration::from_secs(1)),
        ];
        for i in 0..2_000u64 {
            let s = sent_late(i, i + i % 7, i % 7 == 3);
            let done = ms(i + 3 + (i * 37) % 101);
            let outcome = if i % 50 == 0 {
                Outcome::Failed(FailureClass::Http5xx)
            } else {
                Outcome::Ok
            };
            whole.record(&s, done, outcome);
            parts[(i % 2) as usize].record(&s, done, outcome);
        }
        let a = Recorder::merge_all([whole]);
        let b = Recorder::merge_all(parts);
        assert_eq!(a.hist.response, b.hist.response);
        assert_eq!(a.hist.service, b.hist.service);
        assert_eq!(a.hist.send_lag, b.hist.send_lag);
        assert_eq!(a.tally, b.tally);
        assert_eq!(a.intervals.len(), b.intervals.len());
        for (x, y) in a.intervals.iter().zip(&b.intervals) {
            assert_eq!(
                (x.index, x.completed, x.failed),
                (y.index, y.completed, y.failed)
            );
            assert_eq!(x.response_histogram(), y.response_histogram());
        }
        assert_eq!(b.tally.failed.get(FailureClass::Http5xx), 40);
    }

    #[test]
    fn intervals_key_requests_by_when_they_finished() {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..30u64 {
            // Ten finish in each of seconds 0, 1 and 2.
            r.record(&Stamps::on_time(ms(i * 100)), ms(i * 100 + 10), Outcome::Ok);
        }
        let m = Recorder::merge_all([r]);
        let per: Vec<(u64, u64)> = m.intervals.iter().map(|i| (i.index, i.completed)).collect();
        assert_eq!(per, vec![(0, 10), (1, 10), (2, 10)]);
        assert_eq!(m.intervals[1].response_histogram().len(), 10);
    }

    #[test]
    fn backfill_invents_the_samples_a_closed_loop_skipped() {
        let mut r = Recorder::new(Duration::from_secs(1));
        // A closed loop at 1 ms per request meets one 1 s stall.
        for i in 0..999 {
            r.record(&Stamps::on_time(ms(i)), ms(i + 1), Outcome::Ok);
        }
        r.record(&Stamps::on_time(ms(999)), ms(1999), Outcome::Ok);
        let m = Recorder::merge_all([r]);
        let raw_p99 = m.response_at(99.0).value;
        let corrected = m.backfilled(ms(1));
        assert!(
            corrected.len() > 1900,
            "≈999 invented samples, got {}",
            corrected.len() - 1000
        );
        assert!(
            corrected.value_at_quantile(0.99) > 100 * raw_p99,
            "the back-filled tail is far worse"
        );
    }

    /// Two seconds of warm-up at 50 ms, then steady at 5 ms, one timeout in each part, and one
    /// request in flight at the end.
    fn warm_then_steady() -> Measurements {
        let mut r = Recorder::new(Duration::from_secs(1));
        for i in 0..400u64 {
            let at = ms(i * 10);
            let took = if i < 200 { 50 } else { 5 };
            r.record(&Stamps::on_time(at), at + ms(took), Outcome::Ok);
        }
        let timeout = Outcome::Failed(FailureClass::Timeout);
        r.record(&Stamps::on_time(ms(100)), ms(900), timeout);
        r.record(&Stamps::on_time(ms(3_000)), ms(3_800), timeout);
        r.record_in_flight(&Stamps::on_time(ms(3_990)), ms(4_000));
        Recorder::merge_all([r])
    }

    #[test]
    fn a_zero_trim_reproduces_the_summary_exactly() {
        let m = warm_then_steady();
        let (kept, trimmed) = m.without_warmup(Duration::ZERO);
        assert_eq!(trimmed.requests, 0);
        assert_eq!(kept.hist.response, m.hist.response);
        assert_eq!(kept.hist.service, m.hist.service);
        assert_eq!(kept.censored, m.censored);
        assert_eq!(kept.censored_service, m.censored_service);
    }

    #[test]
    fn a_trim_drops_exactly_the_warm_up_intervals() {
        let m = warm_then_steady();
        // 1.5 s rounds up to the 2 s boundary: the first two intervals go.
        let (kept, trimmed) = m.without_warmup(ms(1_500));
        assert_eq!(trimmed.until, ms(2_000));
        // Finished before 2 s: the slow requests due before 1,950 ms, and the first timeout.
        let before: u64 = (0..200u64).filter(|i| i * 10 + 50 < 2_000).count() as u64 + 1;
        assert_eq!(trimmed.requests, before);
        assert_eq!(kept.tally, m.tally, "the counts keep everything");
        assert_eq!(kept.hist.response.len(), m.hist.response.len() - before);
        assert_eq!(
            kept.censored.len(),
            2,
            "the later timeout and the one in flight"
        );
        assert_eq!(
            kept.censored_service.len(),
            2,
            "their service times are lower bounds still"
        );
        assert_eq!(kept.hist.service.len(), m.hist.service.len() - before);
        assert!(kept.hist.response.value_at_quantile(0.5) < 6_000_000);
        assert!(m.hist.response.value_at_quantile(0.5) > 40_000_000);
        assert_eq!(
            kept.hist.send_lag, m.hist.send_lag,
            "the generator's lag stays whole"
        );
    }
}

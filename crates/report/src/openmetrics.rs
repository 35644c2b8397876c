//! OpenMetrics text: the pieces the live endpoint (`--metrics-listen`) builds each scrape from,
//! and a finished run's final figures ([`finished`]), for a Prometheus textfile collector or a
//! push gateway to pick up once the run is over.
//!
//! Families are written in the order they are registered, and the members of a labelled
//! family in the order they were added ([`Ordered`]), so the same figures give the same bytes.
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use sojourn_core::result::{percentile_key, HistogramSummary, RunResult};

/// A gauge of a float (seconds, requests per second).
pub type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// A family member's labels, in the order they are written.
pub type Labels = Vec<(&'static str, String)>;

/// A labelled family whose members are written in the order they were added, so that two
/// scrapes of the same state are byte for byte the same (the library's own family keeps them
/// in a hash map, in a different order on every scrape).
#[derive(Debug)]
pub struct Ordered<M>(Vec<(Labels, M)>);

impl<M> Ordered<M> {
    pub fn new() -> Self {
        Ordered(Vec::new())
    }

    pub fn with(mut self, labels: Labels, metric: M) -> Self {
        self.0.push((labels, metric));
        self
    }
}

impl<M> Default for Ordered<M> {
    fn default() -> Self {
        Ordered::new()
    }
}

impl<M: EncodeMetric + TypedMetric> EncodeMetric for Ordered<M> {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, metric) in &self.0 {
            metric.encode(encoder.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }
}

/// A gauge set to `value`.
pub fn gauge(value: f64) -> FloatGauge {
    let g = Gauge::default();
    g.set(value);
    g
}

/// A counter at `value`.
pub fn counter(value: u64) -> Counter {
    let c = Counter::default();
    c.inc_by(value);
    c
}

/// The registry as OpenMetrics text, ending in `# EOF`.
pub fn text(r: &Registry) -> String {
    let mut out = String::new();
    encode(&mut out, r).expect("writing to a String cannot fail");
    out
}

/// OpenMetrics text as the classic text format (0.0.4): a counter's family is named with its
/// `_total`, and there are no `# UNIT` or `# EOF` lines. Nothing else we write differs.
pub fn classic(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line.starts_with("# UNIT ") || line == "# EOF" {
            continue;
        }
        out.push_str(&total_suffixed(line, &counters));
        out.push('\n');
    }
    out
}

/// `# HELP name …` and `# TYPE name counter` of a counter family, with `name_total`.
fn total_suffixed(line: &str, counters: &[&str]) -> String {
    for prefix in ["# HELP ", "# TYPE "] {
        if let Some(rest) = line.strip_prefix(prefix) {
            let name = rest.split(' ').next().unwrap_or_default();
            if counters.contains(&name) {
                return format!("{prefix}{name}_total{}", &rest[name.len()..]);
            }
        }
    }
    line.to_string()
}

/// A finished run's final figures as OpenMetrics text: its counts by outcome (nothing left
/// out: scheduled = finished + censored + never sent + not measured), the percentiles of its
/// three clocks in seconds, its rates and its length. A percentile that censored requests
/// could still move is labelled `bound="lower"`: the run only knows it is at least that.
pub fn finished(r: &RunResult) -> String {
    let mut reg = Registry::default();
    requests(&mut reg, r);
    let clocks = [
        (
            "sojourn_response",
            "Response time, from when each request was due",
            &r.histograms.response,
        ),
        (
            "sojourn_service",
            "Service time, from when each request was sent",
            &r.histograms.service,
        ),
        (
            "sojourn_send_lag",
            "Send lag, from due to sent: time queued in the client",
            &r.histograms.send_lag,
        ),
    ];
    for (name, help, h) in clocks {
        reg.register_with_unit(name, help, Unit::Seconds, percentiles(h));
    }
    let per_second = || Unit::Other("requests_per_second".into());
    if let Some(target) = r.rate.target {
        reg.register_with_unit(
            "sojourn_target_rate",
            "Requests per second the schedule asked for",
            per_second(),
            gauge(target),
        );
    }
    reg.register_with_unit(
        "sojourn_achieved_rate",
        "Answers per second over the whole run",
        per_second(),
        gauge(r.rate.achieved),
    );
    reg.register_with_unit(
        "sojourn_elapsed",
        "From the start of the run to the end of its drain",
        Unit::Seconds,
        gauge(r.elapsed_ns as f64 / 1e9),
    );
    let info = vec![("label", r.label.clone()), ("mode", mode_name(r))];
    reg.register(
        "sojourn_run_info",
        "The run and its kind of load",
        Ordered::new().with(info, gauge(1.0)),
    );
    text(&reg)
}

/// Every request's end, counted: what the live endpoint counts, and what it cannot know until
/// the end.
fn requests(reg: &mut Registry, r: &RunResult) {
    let c = &r.counts;
    reg.register(
        "sojourn_requests_scheduled",
        "Requests the schedule made due",
        counter(c.scheduled),
    );
    reg.register(
        "sojourn_requests_sent",
        "Requests whose first byte left for the target",
        counter(r.histograms.send_lag.count),
    );
    let outcome = |name: &str| vec![("outcome", name.to_string())];
    let finished = c.failed.listed().fold(
        Ordered::new().with(outcome("ok"), counter(c.completed)),
        |family, (class, n)| family.with(outcome(class.name()), counter(n)),
    );
    reg.register(
        "sojourn_requests_finished",
        "Requests finished, by outcome: ok or the failure's class",
        finished,
    );
    reg.register(
        "sojourn_requests_censored",
        "Requests still unanswered when the run ended",
        counter(c.censored),
    );
    reg.register(
        "sojourn_requests_never_sent",
        "Requests due that never left: the run ended first",
        counter(c.never_sent),
    );
    if r.merged.is_some() {
        reg.register(
            "sojourn_requests_not_measured",
            "Requests of shards missing from the merge or cut short",
            counter(c.not_measured),
        );
    }
}

/// One gauge per percentile the summary carries, in seconds. The label is `percentile`, not
/// `quantile`: a gauge with a `quantile` label would pass for a summary's, which it is not.
fn percentiles(h: &HistogramSummary) -> Ordered<FloatGauge> {
    h.percentiles
        .0
        .iter()
        .fold(Ordered::new(), |family, &(p, ns)| {
            let bound = if h.lower_bounds.contains(&percentile_key(p)) {
                "lower"
            } else {
                "exact"
            };
            let labels = vec![
                ("percentile", percentile_key(p)),
                ("bound", bound.to_string()),
            ];
            family.with(labels, gauge(ns as f64 / 1e9))
        })
}

/// The mode as the result file names it (`open`, `closed`, `tracking`, `paced`).
fn mode_name(r: &RunResult) -> String {
    serde_json::to_value(r.mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_classic_format_names_counters_with_their_total_and_drops_openmetrics_lines() {
        let om = "# HELP a_sent Sent.\n# TYPE a_sent counter\na_sent_total 3\n\
                  # HELP b_seconds B.\n# TYPE b_seconds gauge\n# UNIT b_seconds seconds\n\
                  b_seconds 0.5\n# EOF\n";
        let want = "# HELP a_sent_total Sent.\n# TYPE a_sent_total counter\na_sent_total 3\n\
                    # HELP b_seconds B.\n# TYPE b_seconds gauge\nb_seconds 0.5\n";
        assert_eq!(classic(om), want);
    }
}

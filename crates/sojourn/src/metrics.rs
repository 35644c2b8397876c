//! `--metrics-listen`: the run's live numbers as OpenMetrics text on `http://ADDR/metrics`,
//! for Prometheus to scrape while a long run goes on. Served from its own thread, so a slow
//! scraper never delays the progress display or Ctrl-C, and stopped with the run.
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::{Registry, Unit};
use sojourn_engine::live_labels::{LabelSnapshot, Percentiles};
use sojourn_report::openmetrics::{classic, counter, gauge, text, FloatGauge, Ordered};
use tokio_util::sync::CancellationToken;

use crate::live::{View, Watched};

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
const CLASSIC: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Parses `--metrics-listen`: a bare port (`9464`) or `:PORT` listens on 127.0.0.1, so the
/// numbers stay on this machine unless an address is given; `ADDRESS:PORT` listens exactly
/// there (`localhost` is 127.0.0.1). Port 0 picks a free port.
pub fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    let accepted = "expected a port (9464, on 127.0.0.1) or ADDRESS:PORT like 127.0.0.1:9464";
    let text = text.trim();
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let port = |p: &str| p.parse::<u16>().map_err(|_| accepted.to_string());
    if let Some(p) = text
        .strip_prefix(':')
        .or(Some(text).filter(|t| !t.contains(':')))
    {
        return Ok(SocketAddr::new(loopback, port(p)?));
    }
    if let Some(p) = text.strip_prefix("localhost:") {
        return Ok(SocketAddr::new(loopback, port(p)?));
    }
    text.parse().map_err(|_| accepted.to_string())
}

/// Binds the address now, before the run, so a taken port is an error up front.
pub fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| crate::bad_input!("--metrics-listen: cannot listen on {addr}: {e}"))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// The endpoint while it serves; [`MetricsServer::stop`] ends it.
pub struct MetricsServer {
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MetricsServer {
    /// Serves `watched` on `listener` until stopped, and says where on stderr.
    pub fn start(listener: TcpListener, watched: Watched) -> anyhow::Result<MetricsServer> {
        let addr = listener.local_addr()?;
        let stop = CancellationToken::new();
        let token = stop.clone();
        let thread = std::thread::Builder::new()
            .name("sojourn-metrics".into())
            .spawn(move || serve(listener, watched, token))?;
        eprintln!("metrics: http://{addr}/metrics");
        Ok(MetricsServer {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops serving: the listener closes and open scrapes are dropped.
    pub fn stop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A live sink: it serves on its own thread, and stops when the run ends.
impl crate::execute::Watcher for MetricsServer {
    fn update(&mut self) {}

    fn finish(&mut self) {
        self.stop();
    }
}

fn serve(listener: TcpListener, watched: Watched, stop: CancellationToken) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("metrics: cannot start the endpoint's runtime");
        return;
    };
    rt.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        // Owns every connection: dropping it when the run ends closes them all.
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        connections.spawn(connection(stream, watched.clone()));
                    }
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    });
}

/// One scraper's connection, kept alive between scrapes as Prometheus does.
async fn connection(stream: tokio::net::TcpStream, watched: Watched) {
    let io = hyper_util::rt::TokioIo::new(stream);
    let service = hyper::service::service_fn(move |req| {
        let reply = answer(&req, &watched);
        async move { Ok::<_, std::convert::Infallible>(reply) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(Duration::from_secs(10))
        .timer(hyper_util::rt::TokioTimer::new())
        .serve_connection(io, service);
    let _ = served.await;
}

fn answer<B>(req: &Request<B>, watched: &Watched) -> Response<Full<Bytes>> {
    let reply = |status, kind, body: String| {
        Response::builder()
            .status(status)
            .header("content-type", kind)
            .body(Full::new(Bytes::from(body)))
            .expect("static headers are valid")
    };
    let text = "text/plain; charset=utf-8";
    match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/metrics") => {
            let text = render(&watched.view());
            if accepts_openmetrics(req) {
                reply(StatusCode::OK, OPENMETRICS, text)
            } else {
                reply(StatusCode::OK, CLASSIC, classic(&text))
            }
        }
        (_, "/metrics") => reply(StatusCode::METHOD_NOT_ALLOWED, text, "GET only\n".into()),
        _ => reply(StatusCode::NOT_FOUND, text, "see /metrics\n".into()),
    }
}

/// Prometheus asks for OpenMetrics in its Accept header; other clients (curl, promtool, older
/// agents) get the classic text format, as from Prometheus's own client libraries.
fn accepts_openmetrics<B>(req: &Request<B>) -> bool {
    req.headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .any(|v| {
            v.to_str()
                .is_ok_and(|v| v.contains("application/openmetrics-text"))
        })
}

/// The view as OpenMetrics text. A fresh registry per scrape: values are read from the run,
/// not accumulated here, and a scrape is rare beside a request.
pub fn render(v: &View) -> String {
    let mut r = Registry::default();
    counters(&mut r, v);
    rates(&mut r, v);
    interval(&mut r, v);
    if let Some(labels) = &v.labels {
        if !labels.targets.is_empty() {
            label_rows(&mut r, &labels.targets, &TARGETS);
        } else {
            label_rows(&mut r, &labels.steps, &STEPS);
            journey_rows(&mut r, &labels.journeys);
        }
    }
    let seconds = |d: Duration| gauge(d.as_secs_f64());
    r.register_with_unit(
        "sojourn_elapsed",
        "Time since the run started",
        Unit::Seconds,
        seconds(v.elapsed),
    );
    if let Some(planned) = v.planned {
        r.register_with_unit(
            "sojourn_planned",
            "How long the schedule runs",
            Unit::Seconds,
            seconds(planned),
        );
    }
    // An info-style gauge (always 1) rather than OpenMetrics' info type, which the classic
    // text format, and so promtool, does not know.
    let info = Ordered::new().with(vec![("mode", v.mode.into())], gauge(1.0));
    r.register("sojourn_run_info", "The kind of load", info);
    text(&r)
}

/// One gauge per percentile, in seconds. The label is `percentile`, not `quantile`: a gauge
/// with a `quantile` label would pass for a summary's, which it is not (no count, no sum).
fn percentiles(values: &[(&'static str, Duration)]) -> Ordered<FloatGauge> {
    values.iter().fold(Ordered::new(), |family, (q, d)| {
        family.with(vec![("percentile", (*q).into())], gauge(d.as_secs_f64()))
    })
}

fn counters(r: &mut Registry, v: &View) {
    let c = &v.counters;
    r.register(
        "sojourn_requests_sent",
        "Requests whose first byte left for the target",
        counter(c.sent),
    );
    let ok = c.answered.saturating_sub(c.failed);
    let outcome = |name: &str| vec![("outcome", name.to_string())];
    let finished = c.failures.listed().fold(
        Ordered::new().with(outcome("ok"), counter(ok)),
        |family, (class, n)| family.with(outcome(class.name()), counter(n)),
    );
    r.register(
        "sojourn_requests_finished",
        "Requests finished, by outcome: ok or the failure's class",
        finished,
    );
    r.register(
        "sojourn_requests_in_flight",
        "Requests sent and not yet answered",
        gauge(c.in_flight as f64),
    );
    r.register_with_unit(
        "sojourn_oldest_in_flight",
        "How long the oldest request in flight has been due (0 with none in flight): a stall, \
         seen while it lasts",
        Unit::Seconds,
        gauge(c.oldest_in_flight.unwrap_or_default().as_secs_f64()),
    );
}

fn rates(r: &mut Registry, v: &View) {
    if let Some(target) = v.target_rate {
        r.register_with_unit(
            "sojourn_target_rate",
            "Requests per second the schedule asks for now",
            Unit::Other("requests_per_second".into()),
            gauge(target),
        );
    }
    if let Some(last) = v.last {
        r.register_with_unit(
            "sojourn_achieved_rate",
            "Requests finished per second in the last completed interval",
            Unit::Other("requests_per_second".into()),
            gauge(last.rate()),
        );
    }
}

fn interval(r: &mut Registry, v: &View) {
    let Some(last) = v.last else { return };
    r.register(
        "sojourn_interval_requests_finished",
        "Requests finished in the last completed interval",
        gauge(last.answers as f64),
    );
    let end = last.width * (last.index as u32 + 1);
    r.register_with_unit(
        "sojourn_interval_end",
        "When the last completed interval ended, from the start of the run",
        Unit::Seconds,
        gauge(end.as_secs_f64()),
    );
    // An interval in which nothing finished (a stall longer than it) has no percentiles: the
    // gauges are left out rather than read as zero, which would pass for a fast interval.
    if last.answers > 0 {
        interval_percentiles(r, &last);
    }
}

fn interval_percentiles(r: &mut Registry, last: &sojourn_engine::IntervalSnapshot) {
    let response = percentiles(&[
        ("50", last.response_p50),
        ("90", last.response_p90),
        ("99", last.response_p99),
        ("99.9", last.response_p999),
    ]);
    r.register_with_unit(
        "sojourn_interval_response",
        "Response time (from when each request was due) in the last completed interval",
        Unit::Seconds,
        response,
    );
    r.register_with_unit(
        "sojourn_interval_send_lag",
        "Send lag (from due to sent) in the last completed interval",
        Unit::Seconds,
        percentiles(&[("99", last.send_lag_p99)]),
    );
}

/// A label value as the exposition format wants it: backslash, double quote and line feed
/// escaped (the encoder writes values as given, and a journey file may name a step anything).
fn label_value(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Finished rows by outcome (ok, then the failure classes as the result lists them), each
/// labelled `key="NAME"` first.
fn finished_by_outcome(key: &'static str, rows: &[LabelSnapshot]) -> Ordered<Counter> {
    rows.iter().fold(Ordered::new(), |family, row| {
        let labels =
            |outcome: &str| vec![(key, label_value(&row.name)), ("outcome", outcome.into())];
        row.failures.listed().fold(
            family.with(labels("ok"), counter(row.completed)),
            |family, (class, n)| family.with(labels(class.name()), counter(n)),
        )
    })
}

/// Percentile gauges of each row that has any (a row nothing finished in is left out rather
/// than read as zero), labelled `key="NAME"` then `percentile`.
fn row_percentiles(
    key: &'static str,
    rows: &[LabelSnapshot],
    of: impl Fn(&LabelSnapshot) -> Option<Percentiles>,
) -> Ordered<FloatGauge> {
    rows.iter().fold(Ordered::new(), |family, row| {
        let Some(p) = of(row) else { return family };
        let quantiles = [
            ("50", p.p50),
            ("90", p.p90),
            ("99", p.p99),
            ("99.9", p.p999),
        ];
        quantiles.iter().fold(family, |family, (q, d)| {
            let labels = vec![(key, label_value(&row.name)), ("percentile", (*q).into())];
            family.with(labels, gauge(d.as_secs_f64()))
        })
    })
}

/// What one kind of row is called in the series: its label key and the words of each help.
struct RowNames {
    key: &'static str,
    finished: (&'static str, &'static str),
    in_flight: (&'static str, &'static str),
    response: (&'static str, &'static str),
    service: (&'static str, &'static str),
}

const STEPS: RowNames = RowNames {
    key: "step",
    finished: (
        "sojourn_steps_finished",
        "Journey steps finished so far, by step and outcome: ok or the failure's class",
    ),
    in_flight: (
        "sojourn_steps_in_flight",
        "Journey steps due, taken up and not yet finished, by step",
    ),
    response: (
        "sojourn_step_response",
        "Each step's response time so far, from when it was due",
    ),
    service: (
        "sojourn_step_service",
        "Each step's service time so far, from when it was sent",
    ),
};

const TARGETS: RowNames = RowNames {
    key: "target",
    finished: (
        "sojourn_targets_finished",
        "Requests of each targets-file label finished so far, by label and outcome: ok or the failure's class",
    ),
    in_flight: (
        "sojourn_targets_in_flight",
        "Requests of each targets-file label taken up and not yet finished",
    ),
    response: (
        "sojourn_target_response",
        "Each targets-file label's response time so far, from when its requests were due",
    ),
    service: (
        "sojourn_target_service",
        "Each targets-file label's service time so far, from when its requests were sent",
    ),
};

/// A journey run's step rows, or a targets file's label rows: finished by outcome, in flight,
/// response and service time so far, each labelled with the row's name.
fn label_rows(r: &mut Registry, rows: &[LabelSnapshot], names: &RowNames) {
    let key = names.key;
    r.register(
        names.finished.0,
        names.finished.1,
        finished_by_outcome(key, rows),
    );
    let in_flight = rows.iter().fold(Ordered::new(), |family, row| {
        family.with(
            vec![(key, label_value(&row.name))],
            gauge(row.in_flight as f64),
        )
    });
    r.register(names.in_flight.0, names.in_flight.1, in_flight);
    r.register_with_unit(
        names.response.0,
        names.response.1,
        Unit::Seconds,
        row_percentiles(key, rows, |row| row.time),
    );
    r.register_with_unit(
        names.service.0,
        names.service.1,
        Unit::Seconds,
        row_percentiles(key, rows, |row| row.service),
    );
}

/// A journey run's journey rows: finished by outcome, running, journey time so far, each
/// labelled `journey="NAME"`.
fn journey_rows(r: &mut Registry, rows: &[LabelSnapshot]) {
    r.register(
        "sojourn_journeys_finished",
        "Journeys finished so far, by journey and outcome: ok or the class of the failure that \
         ended it",
        finished_by_outcome("journey", rows),
    );
    let running = rows.iter().fold(Ordered::new(), |family, row| {
        family.with(
            vec![("journey", label_value(&row.name))],
            gauge(row.in_flight as f64),
        )
    });
    r.register(
        "sojourn_journeys_running",
        "Journeys started and not yet ended",
        running,
    );
    r.register_with_unit(
        "sojourn_journey_time",
        "Each journey's time so far, from when it was due to the end of its last step",
        Unit::Seconds,
        row_percentiles("journey", rows, |row| row.time),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_bare_port_stays_on_loopback_and_an_address_is_taken_as_given() {
        let ok = |t: &str| listen_addr(t).unwrap().to_string();
        assert_eq!(ok("9464"), "127.0.0.1:9464");
        assert_eq!(ok(":9464"), "127.0.0.1:9464");
        assert_eq!(ok("localhost:0"), "127.0.0.1:0");
        assert_eq!(ok("0.0.0.0:9464"), "0.0.0.0:9464");
        assert_eq!(ok("[::1]:9464"), "[::1]:9464");
        for bad in [
            "",
            "abc",
            "70000",
            ":",
            "host.example:9464",
            "-1",
            "1.2.3.4",
        ] {
            assert!(listen_addr(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_oldest_in_flight_is_a_gauge_in_seconds() {
        let v = crate::live::fixtures::stalled_view();
        let text = render(&v);
        assert!(
            text.contains("# TYPE sojourn_oldest_in_flight_seconds gauge\n")
                && text.contains("# UNIT sojourn_oldest_in_flight_seconds seconds\n")
                && text.contains("\nsojourn_oldest_in_flight_seconds 4.4\n"),
            "{text}"
        );
        let idle = View {
            counters: sojourn_engine::ProgressSnapshot::default(),
            ..v.clone()
        };
        assert!(
            render(&idle).contains("\nsojourn_oldest_in_flight_seconds 0.0\n"),
            "{}",
            render(&idle)
        );
    }

    /// Two scrapes of the same state are the same bytes, labels in a fixed order: ok first,
    /// then the failure classes as the result lists them; percentiles from p50 up.
    #[test]
    fn labels_come_in_the_same_order_on_every_scrape() {
        let v = crate::live::fixtures::stalled_view();
        let first = render(&v);
        for _ in 0..20 {
            assert_eq!(render(&v), first);
        }
        let outcomes: Vec<&str> = first
            .lines()
            .filter_map(|l| l.strip_prefix("sojourn_requests_finished_total{outcome=\""))
            .map(|l| l.split('"').next().unwrap())
            .collect();
        let mut want = vec!["ok"];
        want.extend(
            sojourn_core::FailureCounts::default()
                .listed()
                .map(|(c, _)| c.name()),
        );
        assert_eq!(outcomes, want);
        let percentiles: Vec<&str> = first
            .lines()
            .filter_map(|l| l.strip_prefix("sojourn_interval_response_seconds{percentile=\""))
            .map(|l| l.split('"').next().unwrap())
            .collect();
        assert_eq!(percentiles, ["50", "90", "99", "99.9"]);
        assert!(first.contains("sojourn_requests_finished_total{outcome=\"timeout\"} 1\n"));
    }

    /// The values of label `key` on the lines of family `name`, in the order written.
    fn label_values<'a>(text: &'a str, name: &str, key: &str) -> Vec<&'a str> {
        let prefix = format!("{name}{{{key}=\"");
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix.as_str()))
            .map(|l| l.split("\",").next().unwrap().split("\"}").next().unwrap())
            .collect()
    }

    /// A journey run's rows: a series per step and per journey, label values escaped as the
    /// format asks, the row's name first and then its outcome or percentile, rows in the
    /// file's order, the same bytes on every scrape; a row nothing finished in has counts but
    /// no percentiles.
    #[test]
    fn steps_and_journeys_have_series_of_their_own_escaped_and_in_order() {
        let v = crate::live::fixtures::journey_view();
        let text = render(&v);
        for _ in 0..20 {
            assert_eq!(render(&v), text);
        }
        let login = r#"shop/log \"in\" \\ now"#;
        for line in [
            format!("sojourn_steps_finished_total{{step=\"{login}\",outcome=\"ok\"}} 45\n"),
            "sojourn_steps_finished_total{step=\"shop/pay\",outcome=\"check\"} 2\n".into(),
            "sojourn_steps_finished_total{step=\"shop/leave\",outcome=\"ok\"} 0\n".into(),
            "sojourn_steps_in_flight{step=\"shop/pay\"} 3.0\n".into(),
            format!("sojourn_step_response_seconds{{step=\"{login}\",percentile=\"99\"}} 4.4\n"),
            "sojourn_step_service_seconds{step=\"shop/pay\",percentile=\"50\"} 0.012\n".into(),
            "sojourn_journeys_finished_total{journey=\"shop\",outcome=\"ok\"} 38\n".into(),
            "sojourn_journeys_finished_total{journey=\"shop\",outcome=\"check\"} 2\n".into(),
            "sojourn_journeys_running{journey=\"shop\"} 5.0\n".into(),
            "sojourn_journey_time_seconds{journey=\"shop\",percentile=\"50\"} 1.25\n".into(),
            "# UNIT sojourn_journey_time_seconds seconds\n".into(),
            "# TYPE sojourn_steps_finished counter\n".into(),
        ] {
            assert!(text.contains(&line), "no {line:?} in\n{text}");
        }
        assert!(!text.contains("step=\"shop/leave\",percentile"), "{text}");
        assert!(!text.contains("sojourn_journey_service"), "{text}");
        let steps = ["shop/log \\\"in\\\" \\\\ now", "shop/pay", "shop/leave"];
        let in_flight = label_values(&text, "sojourn_steps_in_flight", "step");
        assert_eq!(in_flight, steps);
        let finished = label_values(&text, "sojourn_steps_finished_total", "step");
        let per_step = sojourn_core::FailureCounts::default().listed().count() + 1;
        assert_eq!(finished.len(), 3 * per_step);
        for (i, name) in steps.iter().enumerate() {
            assert!(finished[i * per_step..(i + 1) * per_step]
                .iter()
                .all(|n| n == name));
        }
        let response = label_values(&text, "sojourn_step_response_seconds", "step");
        assert_eq!(response, [[steps[0]; 4], [steps[1]; 4]].concat(), "{text}");
        // The classic text format (promtool's) keeps the escapes.
        assert!(classic(&text)
            .contains(r#"sojourn_steps_in_flight{step="shop/log \"in\" \\ now"} 2.0"#));
        let plain = render(&crate::live::fixtures::stalled_view());
        assert!(
            !plain.contains("step=") && !plain.contains("journey="),
            "{plain}"
        );
    }

    /// A targets file's labels have series of their own, named for targets, never as steps.
    #[test]
    fn a_targets_files_labels_have_series_of_their_own() {
        let mut v = crate::live::fixtures::journey_view();
        let labels = v.labels.as_mut().unwrap();
        labels.targets = std::mem::take(&mut labels.steps);
        labels.journeys.clear();
        let text = render(&v);
        for line in [
            "sojourn_targets_finished_total{target=\"shop/pay\",outcome=\"check\"} 2\n",
            "sojourn_targets_in_flight{target=\"shop/pay\"} 3.0\n",
            "sojourn_target_service_seconds{target=\"shop/pay\",percentile=\"50\"} 0.012\n",
            "# UNIT sojourn_target_response_seconds seconds\n",
        ] {
            assert!(text.contains(line), "no {line:?} in\n{text}");
        }
        assert!(
            !text.contains("step=") && !text.contains("journey="),
            "{text}"
        );
    }

    #[test]
    fn label_values_escape_backslash_quote_and_line_feed() {
        assert_eq!(label_value("a\\b\"c\nd/é"), r#"a\\b\"c\nd/é"#);
        assert_eq!(label_value("shop/login"), "shop/login");
    }

    /// One GET on its own connection; the whole reply.
    fn get(addr: SocketAddr, path: &str, accept: &str) -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nhost: t\r\naccept: {accept}\r\nconnection: close\r\n\r\n"
        )?;
        let mut reply = String::new();
        s.read_to_string(&mut reply)?;
        Ok(reply)
    }

    /// A real run against an embedded stalling server, scraped with a plain GET mid-run.
    #[test]
    fn a_run_serves_its_numbers_while_it_goes_and_stops_with_it() {
        let sets = [
            "hiccup.at=300ms".to_string(),
            "hiccup.duration=400ms".into(),
        ];
        let sets: Vec<sojourn_scenario::Override> =
            sets.iter().map(|s| s.parse().unwrap()).collect();
        let scenario = sojourn_scenario::Scenario::builtin("hiccup", &sets).unwrap();
        let server = crate::embedded::EmbeddedServer::start(scenario).unwrap();
        let listener = bind(listen_addr("0").unwrap()).unwrap();
        let addr = listener.local_addr().unwrap();
        let scrape = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(900));
            let accept = "application/openmetrics-text;version=1.0.0,text/plain;q=0.5";
            let openmetrics = get(addr, "/metrics", accept).unwrap();
            (openmetrics, get(addr, "/metrics", "*/*").unwrap())
        });
        run(&server.url(), listener);
        let (reply, plain) = scrape.join().unwrap();
        assert!(plain.contains(CLASSIC), "{plain}");
        assert!(
            plain.contains("# TYPE sojourn_requests_sent_total counter"),
            "{plain}"
        );
        assert!(!plain.contains("# EOF"), "{plain}");
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.contains(OPENMETRICS), "{reply}");
        for line in [
            "# TYPE sojourn_requests_sent counter",
            "sojourn_requests_finished_total{outcome=\"ok\"}",
            "sojourn_requests_finished_total{outcome=\"timeout\"} 0",
            "sojourn_requests_in_flight ",
            "sojourn_oldest_in_flight_seconds ",
            "sojourn_target_rate_requests_per_second 200.0",
            "sojourn_achieved_rate_requests_per_second ",
            "sojourn_interval_response_seconds{percentile=\"99\"} ",
            "sojourn_interval_send_lag_seconds{percentile=\"99\"} ",
            "sojourn_planned_seconds 1.5",
            "sojourn_run_info{mode=\"open\"} 1.0",
        ] {
            assert!(reply.contains(line), "no {line:?} in {reply}");
        }
        assert!(reply.trim_end().ends_with("# EOF"), "{reply}");
        assert!(
            get(addr, "/metrics", "*/*").is_err(),
            "the endpoint stopped with the run"
        );
        let _ = server.stop();
    }

    fn run(url: &str, listener: TcpListener) {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let schedule = sojourn_core::Schedule::new(
            sojourn_core::Arrival::Constant,
            sojourn_core::Rate::per_second(200.0).unwrap(),
            sojourn_core::End::After(Duration::from_millis(1500)),
        )
        .unwrap();
        let mut plan = crate::live::tests::plan(sojourn_engine::Load::Open(schedule));
        (plan.connections, plan.timeout) = (256, Duration::from_secs(5));
        plan.interval = Duration::from_millis(200);
        let request = sojourn_engine::HttpRequest {
            url: url.parse().unwrap(),
            method: "GET".into(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let trust = sojourn_engine::Trust::PublicRoots;
        let transport = rt
            .block_on(sojourn_engine::HttpTransport::new(&request, &trust))
            .unwrap();
        /// The endpoint alone, as `--metrics-listen` adds it.
        struct Endpoint(Option<TcpListener>);
        impl crate::execute::Sinks for Endpoint {
            fn live(&self) -> bool {
                true
            }
            fn make(
                &mut self,
                plan: &sojourn_engine::Plan,
                progress: &std::sync::Arc<sojourn_engine::Progress>,
            ) -> anyhow::Result<Vec<Box<dyn crate::execute::Watcher>>> {
                let watched = Watched::new(plan, progress.clone());
                let listener = self.0.take().expect("one run");
                Ok(vec![Box::new(MetricsServer::start(listener, watched)?)])
            }
        }
        let job = crate::execute::Job {
            plan: &plan,
            transport: transport.into(),
            progress: crate::execute::progress(&plan, true),
            about: sojourn_engine::result::About {
                target: Some(url.to_string()),
                ..sojourn_engine::result::About::labelled("t")
            },
            journeys: None,
        };
        let result = crate::execute::run(&rt, job, &mut Endpoint(Some(listener))).unwrap();
        assert_eq!(result.counts.scheduled, 300);
    }
}

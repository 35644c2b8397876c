//! `--dashboard`: a live page of the run on `http://ADDR/`, fed by Server-Sent Events, that
//! becomes the run's HTML report when it ends. Served from its own thread, like the metrics
//! endpoint, so a viewer never delays the run: each viewer has a small bounded queue, and one
//! that falls behind is dropped rather than buffered for.
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use http_body_util::{combinators::BoxBody, BodyExt as _, Full};
use hyper::body::{Body, Bytes, Frame};
use hyper::{Method, Request, Response, StatusCode};
use sojourn_core::RunResult;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::live::{View, Watched};
use crate::live_slo::LiveObjectives;

/// Where `--dashboard` listens when given no value: k6's dashboard port, on loopback.
pub const DEFAULT_ADDR: &str = "127.0.0.1:5665";

/// Events one viewer may have queued; a viewer this far behind is dropped.
const VIEWER_QUEUE: usize = 16;

/// Intervals the history keeps (a reload mid-run replays them). At 1 s intervals a 24-hour
/// run has 86,400; past this cap the history is thinned two to one, keeping of each pair the
/// interval with the higher p99, so that a stall is never the one thinned away.
pub const HISTORY_CAP: usize = 4096;

const PAGE: &str = include_str!("dashboard/page.html");

/// Parses `--dashboard`: a port alone (or `:PORT`) listens on 127.0.0.1; `ADDRESS:PORT`
/// exactly there. Port 0 picks a free port.
pub fn listen_addr(text: &str) -> Result<SocketAddr, String> {
    crate::metrics::listen_addr(text).map_err(|_| {
        "expected a port (5665, on 127.0.0.1) or ADDRESS:PORT like 127.0.0.1:5665".to_string()
    })
}

/// Binds the address now, before the run, so a taken port is an error up front.
pub fn bind(addr: SocketAddr) -> anyhow::Result<TcpListener> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| crate::bad_input!("--dashboard: cannot listen on {addr}: {e}"))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// The dashboard while it serves. [`Dashboard::feed`] gives the live sink's handle;
/// [`Dashboard::end`] turns the page into the report; dropping it stops the server.
pub struct Dashboard {
    shared: Arc<Shared>,
    stop: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the server and the sink share: the history so far, the viewers, and the report.
#[derive(Default)]
struct Shared(Mutex<State>);

#[derive(Default)]
struct State {
    history: History,
    viewers: Vec<Viewer>,
    /// The last event, `end`, once the run is over (replayed to later viewers).
    end: Option<Bytes>,
    report: Option<Bytes>,
    /// The `--slo` objectives, judged live on the page.
    objectives: Vec<sojourn_core::gate::Objective>,
}

struct Viewer {
    queue: mpsc::Sender<Bytes>,
    /// Cancelled when the viewer is dropped: its connection closes even if a write hangs.
    gone: CancellationToken,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    /// Queues `event` for every viewer; one whose queue is full is dropped, never waited for.
    fn broadcast(&mut self, event: &Bytes) {
        self.viewers.retain(|v| {
            let kept = v.queue.try_send(event.clone()).is_ok();
            if !kept {
                v.gone.cancel();
            }
            kept
        });
    }
}

/// The events so far: intervals, with their p99 for thinning, and pinned events (a run's
/// start, with its stage markers) that thinning never takes.
#[derive(Default)]
struct History {
    /// In the order they were sent; `None` marks a pinned event.
    events: Vec<(Option<u64>, Bytes)>,
    intervals: usize,
}

impl History {
    fn push(&mut self, p99: u64, event: Bytes) {
        if self.intervals >= HISTORY_CAP {
            self.thin();
        }
        self.events.push((Some(p99), event));
        self.intervals += 1;
    }

    /// An event every viewer must see, whatever is thinned later.
    fn pin(&mut self, event: Bytes) {
        self.events.push((None, event));
    }

    /// Halves the intervals: of each pair of neighbours, the one with the higher p99 stays.
    /// Pinned events stay where they were, and no pair reaches across one.
    fn thin(&mut self) {
        let events = std::mem::take(&mut self.events);
        let mut first: Option<(u64, Bytes)> = None;
        for (p99, event) in events {
            match (p99, first.take()) {
                (None, held) => {
                    self.events.extend(held.map(|(p, e)| (Some(p), e)));
                    self.events.push((None, event));
                }
                (Some(p), None) => first = Some((p, event)),
                (Some(p), Some((q, held))) => self.events.push(match p >= q {
                    true => (Some(p), event),
                    false => (Some(q), held),
                }),
            }
        }
        self.events.extend(first.map(|(p, e)| (Some(p), e)));
        self.intervals = self.events.iter().filter(|(p, _)| p.is_some()).count();
    }

    fn len(&self) -> usize {
        self.intervals
    }
}

impl Dashboard {
    /// Serves on `listener` until dropped, and says where on stderr first.
    pub fn start(listener: TcpListener) -> anyhow::Result<Dashboard> {
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let stop = CancellationToken::new();
        let (s, token) = (shared.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("sojourn-dashboard".into())
            .spawn(move || serve(listener, s, token))?;
        eprintln!("dashboard: http://{addr}/");
        Ok(Dashboard {
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// The objectives the page shows as they stand (met so far, breached so far, too few
    /// samples yet), judged by the gate's rules on the intervals so far.
    pub fn judge(&self, objectives: Vec<sojourn_core::gate::Objective>) {
        self.shared.state().objectives = objectives;
    }

    /// What makes the live sink when the run starts (a command's [`crate::execute::Sinks`]
    /// holds it).
    pub fn feeder(&self) -> Feeder {
        Feeder(self.shared.clone())
    }

    /// The run is over: `/report.html` now serves its report, and every page is told to show
    /// it.
    pub fn end(&self, result: &RunResult) -> anyhow::Result<()> {
        let run = sojourn_report::html::ReportRun {
            source: "dashboard".into(),
            result: result.clone(),
            samples: Vec::new(),
        };
        let html = sojourn_report::html::render(&[run], &Default::default())?;
        self.end_with_html(html);
        Ok(())
    }

    /// The command is over: `/report.html` now serves `html`, the page the command wrote
    /// (`compare`'s, a sweep's, the demo's), and every page is told to show it.
    pub fn end_with_html(&self, html: impl Into<Bytes>) {
        let event = sse(&serde_json::json!({"type": "end", "report": "/report.html"}));
        let mut state = self.shared.state();
        state.report = Some(html.into());
        state.broadcast(&event);
        state.end = Some(event);
    }

    /// A sweep's step is over: its row joins the page's table of finished steps. Pinned, so a
    /// reload replays every step whatever thinning takes.
    pub fn step(&self, run: &str, step: &sojourn_core::sweep::Step) {
        let event = sse(&step_event(run, step));
        let mut state = self.shared.state();
        state.broadcast(&event);
        state.history.pin(event);
    }

    /// Keeps serving for `linger` (the report stays up for a person to look; Ctrl-C ends it
    /// sooner), then stops.
    pub fn linger(mut self, rt: &tokio::runtime::Runtime, linger: Duration) {
        if !linger.is_zero() {
            eprintln!(
                "dashboard: serving the report for {} (Ctrl-C to stop)",
                humantime::format_duration(linger)
            );
            rt.block_on(async {
                tokio::select! {
                    _ = tokio::time::sleep(linger) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            });
        }
        self.stop();
    }

    fn stop(&mut self) {
        self.stop.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// How many intervals the history holds (for tests of its bound).
    #[doc(hidden)]
    pub fn history_len(&self) -> usize {
        self.shared.state().history.len()
    }
}

/// The dashboard of a command of several runs (`compare`, `sweep`, `demo`): bound and serving
/// before any run, fed by every run, and ended on the page the command itself writes; it stays
/// up `linger` after.
pub struct Page {
    dashboard: Dashboard,
    linger: Duration,
}

impl Page {
    /// Binds `addr` (a taken port is bad input naming `--dashboard`) and serves there, printing
    /// the URL on stderr before anything else.
    pub fn open(addr: SocketAddr, linger: Duration) -> anyhow::Result<Page> {
        Ok(Page {
            dashboard: Dashboard::start(bind(addr)?)?,
            linger,
        })
    }

    /// [`Page::open`] when `--dashboard` was given, else no page.
    pub fn open_if(addr: Option<SocketAddr>, linger: Duration) -> anyhow::Result<Option<Page>> {
        addr.map(|addr| Page::open(addr, linger)).transpose()
    }

    /// What makes each run's live sink.
    pub fn feeder(&self) -> Feeder {
        self.dashboard.feeder()
    }

    /// A sweep's step finished: the page's table of steps grows by its row.
    pub fn step(&self, step: &sojourn_core::sweep::Step) {
        let run = crate::sweep::step_label(step.target);
        self.dashboard.step(&run, step);
    }

    /// The command is over: the page shows `html`, the report the command wrote, and stays up
    /// for the linger.
    pub fn end(self, html: String) -> anyhow::Result<()> {
        self.dashboard.end_with_html(html);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        self.dashboard.linger(&rt, self.linger);
        Ok(())
    }
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Makes the dashboard's live sink for a run.
#[derive(Clone)]
pub struct Feeder(Arc<Shared>);

impl Feeder {
    /// The live sink for a run: one event per completed interval.
    pub fn feed(&self, watched: Watched) -> Feed {
        let objectives = self.0.state().objectives.clone();
        let law = watched.clone();
        let expected: crate::live_slo::Expected = Box::new(move |t| law.expected_by(t));
        let objectives =
            LiveObjectives::new(objectives, watched.stages(), expected, watched.timeout());
        Feed {
            shared: self.0.clone(),
            objectives,
            watched,
            last: None,
            started: false,
            judged: Judged::default(),
            run: None,
        }
    }

    /// The live sink for the run its result labels `run`: each of its events carries
    /// `"run": run`, so one page keeps several runs apart (`compare`'s loops, a sweep's steps).
    pub fn feed_run(&self, watched: Watched, run: &str) -> Feed {
        Feed {
            run: Some(run.to_string()),
            ..self.feed(watched)
        }
    }
}

/// The dashboard's live sink: each look at the run that finds a new completed interval sends
/// it to every viewer and keeps it in the history.
pub struct Feed {
    shared: Arc<Shared>,
    watched: Watched,
    objectives: LiveObjectives,
    last: Option<u64>,
    started: bool,
    judged: Judged,
    /// The run's label, on each of its events, when the page shows several runs.
    run: Option<String>,
}

/// How many intervals the live self-check has judged, and found the generator behind in.
#[derive(Debug, Default, Clone, Copy)]
struct Judged {
    intervals: u64,
    behind: u64,
}

impl crate::execute::Watcher for Feed {
    fn update(&mut self) {
        if !self.started {
            self.started = true;
            let mut event = start_event(&self.watched);
            self.name(&mut event);
            let event = sse(&event);
            let mut state = self.shared.state();
            state.broadcast(&event);
            state.history.pin(event);
        }
        // The response times first: the collector publishes them before the figures, so an
        // interval's figures seen here come with its histogram (or a look later, never apart).
        let response = self.watched.last_response();
        let view = self.watched.view();
        let Some(last) = view.last else { return };
        if self.last == Some(last.index) {
            return;
        }
        let mut event = interval_event(&view);
        if !self.objectives.is_empty() {
            let Some((_, response)) = response.filter(|(i, _)| *i == last.index) else {
                return;
            };
            event["slo"] = self.judged(&view, &last, response);
        }
        event["floor"] = floor_event(&view);
        event["check"] = check_event(&view, &mut self.judged);
        self.last = Some(last.index);
        self.name(&mut event);
        let event = sse(&event);
        let p99 = last.response_p99.as_nanos() as u64;
        let mut state = self.shared.state();
        state.broadcast(&event);
        state.history.push(p99, event);
    }

    fn finish(&mut self) {}
}

impl Feed {
    /// Adds the run's label, when it has one, to an event of it.
    fn name(&self, event: &mut serde_json::Value) {
        if let Some(run) = &self.run {
            event["run"] = run.as_str().into();
        }
    }

    /// The interval joins the objectives' windows; each objective as it stands now.
    fn judged(
        &mut self,
        view: &crate::live::View,
        last: &sojourn_engine::IntervalSnapshot,
        response: Arc<[u8]>,
    ) -> serde_json::Value {
        let start = last.width * last.index as u32;
        let interval = crate::live_slo::Interval {
            start,
            end: start + last.width,
            answers: last.answers,
            failed: last.failed,
            response,
        };
        // A step's or journey's objective takes its row apart interval by interval.
        let times = match self.objectives.judges_labels() {
            true => self.watched.label_times(),
            false => None,
        };
        let rows = times
            .as_ref()
            .map(|(l, steps, journeys)| (l, &steps[..], &journeys[..]));
        self.objectives.push(&interval, rows);
        let in_flight = self.watched.in_flight_ages();
        let pace = view.due.map(|due| crate::live_slo::Pace {
            due,
            kept: view.kept(),
        });
        let statuses = self.objectives.statuses(view.elapsed, &in_flight, pace);
        serde_json::to_value(statuses).unwrap_or_default()
    }
}

/// One Server-Sent Event carrying `value` as JSON (serialized JSON has no raw line breaks).
fn sse(value: &serde_json::Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// The run's first event: its loop, interval, planned length and stages (title, start and end
/// from the run's start, in nanoseconds), for the page's axis and markers.
pub fn start_event(w: &Watched) -> serde_json::Value {
    let view = w.view();
    let stages: Vec<serde_json::Value> = w
        .stages()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            serde_json::json!({
                "title": s.title(i),
                "start_ns": s.start_ns,
                "end_ns": s.end_ns(),
            })
        })
        .collect();
    serde_json::json!({
        "type": "start",
        "mode": view.mode,
        "interval_ns": w.interval().as_nanos() as u64,
        "planned_ns": view.planned.map(|d| d.as_nanos() as u64),
        "stages": stages,
    })
}

/// A finished sweep step: the run it was, the rate asked and achieved, the response p50 and p99
/// after the settle (nanoseconds), the verdict and each objective as the sweep's table words
/// them.
pub fn step_event(run: &str, step: &sojourn_core::sweep::Step) -> serde_json::Value {
    serde_json::json!({
        "type": "step",
        "run": run,
        "target": step.target,
        "achieved": step.achieved,
        "p50_ns": step.response_p50_ns,
        "p99_ns": step.response_p99_ns,
        "verdict": step.status.label(),
        // The sweep table's words, so the page and the terminal say the same thing.
        "slos": step
            .slos
            .iter()
            .map(|c| format!("{} {}", c.slo, if c.met { "met" } else { "BREACHED" }))
            .collect::<Vec<_>>(),
    })
}

/// The event for the view's last completed interval: its figures (nanoseconds, as the result's
/// timeline has them) and the run's counters at the moment it was seen.
pub fn interval_event(v: &View) -> serde_json::Value {
    let ns = |d: Duration| d.as_nanos() as u64;
    let last = v.last.as_ref();
    let c = &v.counters;
    let failures: serde_json::Map<String, serde_json::Value> = c
        .failures
        .listed()
        .filter(|(_, n)| *n > 0)
        .map(|(class, n)| (class.name().to_string(), n.into()))
        .collect();
    serde_json::json!({
        "type": "interval",
        "mode": v.mode,
        "index": last.map(|l| l.index),
        "start_ns": last.map(|l| ns(l.width) * l.index),
        "width_ns": last.map(|l| ns(l.width)),
        "answers": last.map(|l| l.answers),
        "answers_failed": last.map(|l| l.failed),
        "rate": last.map(|l| l.rate()),
        "target_rate": v.target_rate,
        "p50": last.map(|l| ns(l.response_p50)),
        "p90": last.map(|l| ns(l.response_p90)),
        "p99": last.map(|l| ns(l.response_p99)),
        "p999": last.map(|l| ns(l.response_p999)),
        "send_lag_p99": last.map(|l| ns(l.send_lag_p99)),
        "max": last.map(|l| ns(l.response.max)),
        "service": last.map(|l| figures(&l.service)),
        "send_lag": last.map(|l| figures(&l.send_lag)),
        "missed": last.map(|l| l.missed),
        "due": v.due,
        "waiting": v.waiting(),
        "elapsed_ns": ns(v.elapsed),
        "planned_ns": v.planned.map(ns),
        "sent": c.sent,
        "finished": c.answered,
        "failed": c.failed,
        "failures": failures,
        "in_flight": c.in_flight,
        "oldest_in_flight_ns": c.oldest_in_flight.map(ns),
        "labels": labels(v),
    })
}

/// The control meter's floor (nanoseconds): its last period and the run so far; null when no
/// control meter reports.
pub fn floor_event(v: &View) -> serde_json::Value {
    let Some(f) = &v.floor else {
        return serde_json::Value::Null;
    };
    let figures = |f: &sojourn_engine::FloorFigures| {
        serde_json::json!({
            "ticks": f.ticks,
            "p99": f.p99.as_nanos() as u64,
            "max": f.max.as_nanos() as u64,
        })
    };
    serde_json::json!({
        "period": figures(&f.period),
        "so_far": figures(&f.so_far),
        "periods": f.periods,
    })
}

/// The self-check as it forms: the final check's rule on the last interval's send lag against
/// its response p99 and the floor's last period, and how many intervals so far it found the
/// generator behind in. An interval with nothing sent and answered has nothing to judge.
fn check_event(v: &View, judged: &mut Judged) -> serde_json::Value {
    let lag = v.last.as_ref().map(|l| (l.send_lag, l.response.p99));
    let Some((lag, response_p99)) = lag.filter(|(lag, _)| lag.count > 0) else {
        return serde_json::json!({
            "verdict": null,
            "line": "nothing sent and answered in the last interval to judge",
            "intervals": judged.intervals,
            "behind": judged.behind,
        });
    };
    let ns = |d: Duration| d.as_nanos() as u64;
    let check = sojourn_core::check::live_check(
        v.mode == "open",
        ns(lag.p99),
        ns(response_p99),
        v.floor.map(|f| ns(f.period.p99)),
    );
    judged.intervals += 1;
    if check.verdict == sojourn_core::check::GeneratorVerdict::Behind {
        judged.behind += 1;
    }
    serde_json::json!({
        "verdict": check.verdict,
        "line": check.line,
        "intervals": judged.intervals,
        "behind": judged.behind,
    })
}

/// An interval's percentiles of one clock (nanoseconds) and the count they rest on.
fn figures(f: &sojourn_engine::Figures) -> serde_json::Value {
    let ns = |d: Duration| d.as_nanos() as u64;
    serde_json::json!({
        "count": f.count,
        "p50": ns(f.p50),
        "p90": ns(f.p90),
        "p99": ns(f.p99),
        "p999": ns(f.p999),
        "max": ns(f.max),
    })
}

/// A journey run's rows: name, finished, failed, in flight, and p50/p99 so far.
fn labels(v: &View) -> serde_json::Value {
    let Some(l) = &v.labels else {
        return serde_json::Value::Null;
    };
    let ns = |d: Duration| d.as_nanos() as u64;
    l.steps
        .iter()
        .chain(&l.journeys)
        .chain(&l.targets)
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "finished": r.completed,
                "failed": r.failures.listed().map(|(_, n)| n).sum::<u64>(),
                "in_flight": r.in_flight,
                "p50": r.time.map(|t| ns(t.p50)),
                "p99": r.time.map(|t| ns(t.p99)),
            })
        })
        .collect()
}

fn serve(listener: TcpListener, shared: Arc<Shared>, stop: CancellationToken) {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("dashboard: cannot start the server's runtime");
        return;
    };
    rt.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        // Owns every connection: dropping it when the server stops closes them all.
        let mut connections = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        connections.spawn(connection(stream, shared.clone(), stop.clone()));
                    }
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        // Each stream ends once its queue, the end event last, is written: a viewer that
        // reads is told the run is over. One that does not read is not waited for long.
        shared.state().viewers.clear();
        let drained = async { while connections.join_next().await.is_some() {} };
        let _ = tokio::time::timeout(FLUSH, drained).await;
    });
}

/// How long stopping waits for open streams to write what they were sent.
const FLUSH: Duration = Duration::from_secs(1);

type Reply = Response<BoxBody<Bytes, Infallible>>;

/// One browser's connection. An event stream on it that its viewer stops reading closes when
/// the viewer is dropped.
async fn connection(stream: tokio::net::TcpStream, shared: Arc<Shared>, stop: CancellationToken) {
    let gone = CancellationToken::new();
    let io = hyper_util::rt::TokioIo::new(stream);
    let token = gone.clone();
    let service = hyper::service::service_fn(move |req| {
        let reply = answer(&req, &shared, &token);
        async move { Ok::<_, Infallible>(reply) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .header_read_timeout(Duration::from_secs(10))
        .timer(hyper_util::rt::TokioTimer::new())
        .serve_connection(io, service);
    tokio::pin!(served);
    tokio::select! {
        _ = served.as_mut() => return,
        _ = gone.cancelled() => return,
        // The server stops: finish the response under way (an event stream: its last
        // events), then close rather than wait for another request.
        _ = stop.cancelled() => served.as_mut().graceful_shutdown(),
    }
    tokio::select! {
        _ = served => {}
        _ = gone.cancelled() => {}
    }
}

fn answer<B>(req: &Request<B>, shared: &Shared, gone: &CancellationToken) -> Reply {
    let text = "text/plain; charset=utf-8";
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        let mut refused = full(
            StatusCode::METHOD_NOT_ALLOWED,
            text,
            Bytes::from_static(b"GET only\n"),
        );
        let allow = hyper::header::HeaderValue::from_static("GET, HEAD");
        refused.headers_mut().insert(hyper::header::ALLOW, allow);
        return refused;
    }
    let html = "text/html; charset=utf-8";
    let reply_ok = |kind, body: Bytes| full(StatusCode::OK, kind, body);
    match req.uri().path() {
        "/" => reply_ok(html, Bytes::from_static(PAGE.as_bytes())),
        "/events" => events(shared, gone),
        "/history" => reply_ok("application/json", history(shared)),
        "/report.html" => match shared.state().report.clone() {
            Some(report) => reply_ok(html, report),
            None => full(
                StatusCode::NOT_FOUND,
                text,
                Bytes::from_static(b"the report is served once the run is over\n"),
            ),
        },
        _ => full(StatusCode::NOT_FOUND, text, Bytes::from_static(b"see /\n")),
    }
}

fn full(status: StatusCode, kind: &'static str, body: Bytes) -> Reply {
    Response::builder()
        .status(status)
        .header("content-type", kind)
        .header("cache-control", "no-store")
        .header("x-content-type-options", "nosniff")
        .body(Full::new(body).boxed())
        .expect("static headers are valid")
}

/// The intervals so far as a JSON array of the events' objects.
fn history(shared: &Shared) -> Bytes {
    let state = shared.state();
    let mut out = Vec::from(&b"["[..]);
    for (i, (_, event)) in state.history.events.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let json = event.strip_prefix(b"data: ").unwrap_or(event);
        out.extend_from_slice(json.trim_ascii_end());
    }
    out.push(b']');
    Bytes::from(out)
}

/// The event stream: the history so far (and the end, if the run is over), then each new
/// event as it comes. Registered under the same lock the sink broadcasts under, so no interval
/// is missed or sent twice.
fn events(shared: &Shared, gone: &CancellationToken) -> Reply {
    let (queue, rx) = mpsc::channel(VIEWER_QUEUE);
    let mut state = shared.state();
    let mut replay: Vec<u8> = b"retry: 1000\n\n".to_vec();
    for (_, event) in &state.history.events {
        replay.extend_from_slice(event);
    }
    if let Some(end) = &state.end {
        replay.extend_from_slice(end);
    } else {
        state.viewers.push(Viewer {
            queue,
            gone: gone.clone(),
        });
    }
    drop(state);
    let body = EventBody {
        first: Some(Bytes::from(replay)),
        rx,
    };
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-store")
        .body(body.boxed())
        .expect("static headers are valid")
}

/// A Server-Sent Events body: the replay, then whatever the viewer's queue brings, until the
/// queue closes (the viewer dropped, or the run over and the server stopping).
struct EventBody {
    first: Option<Bytes>,
    rx: mpsc::Receiver<Bytes>,
}

impl Body for EventBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(first) = self.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        self.rx
            .poll_recv(cx)
            .map(|event| event.map(|e| Ok(Frame::data(e))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u64) -> Bytes {
        Bytes::from(format!("data: {{\"index\":{n}}}\n\n"))
    }

    #[test]
    fn the_history_is_bounded_and_thinning_keeps_the_stall() {
        let mut h = History::default();
        let stall = 3001;
        for i in 0..86_400u64 {
            let p99 = if i == stall {
                5_000_000_000
            } else {
                10_000_000 + i % 7
            };
            h.push(p99, event(i));
        }
        assert!(h.len() <= HISTORY_CAP, "{} kept", h.len());
        assert!(h.len() >= HISTORY_CAP / 2, "{} kept", h.len());
        assert!(
            h.events.iter().any(|(p99, _)| *p99 == Some(5_000_000_000)),
            "the stall's interval was thinned away"
        );
        let order: Vec<u64> = h
            .events
            .iter()
            .map(|(_, e)| {
                let s = std::str::from_utf8(e).unwrap();
                s.trim_start_matches("data: {\"index\":")
                    .trim_end_matches("}\n\n")
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "kept in time order");
    }

    /// A run's start (its stage markers) is never thinned away, nor does a pair of intervals
    /// reach across it: what came before it stays before it.
    #[test]
    fn thinning_keeps_pinned_events_in_place() {
        let mut h = History::default();
        h.pin(Bytes::from_static(b"start"));
        for i in 0..(HISTORY_CAP as u64 + 3) {
            if i == 5 {
                h.pin(Bytes::from_static(b"step"));
            }
            h.push(i, event(i));
        }
        assert!(h.len() <= HISTORY_CAP, "{} intervals kept", h.len());
        let pinned: Vec<usize> = h
            .events
            .iter()
            .enumerate()
            .filter(|(_, (p, _))| p.is_none())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(pinned.len(), 2, "both pinned events kept");
        assert_eq!(pinned[0], 0, "the start stays first");
        let before_step: Vec<&Option<u64>> = h.events[..pinned[1]].iter().map(|(p, _)| p).collect();
        assert!(
            before_step.iter().all(|p| p.is_none_or(|p| p < 5)),
            "no interval after the step moved before it: {before_step:?}"
        );
        assert_eq!(
            h.events[pinned[1] + 1].0,
            Some(6),
            "pairs start afresh after the pin: (5, 6) keeps 6"
        );
    }

    #[test]
    fn a_viewer_that_falls_behind_is_dropped_and_the_others_kept() {
        let mut state = State::default();
        let (slow, _slow_rx) = mpsc::channel(VIEWER_QUEUE);
        let (fast, mut fast_rx) = mpsc::channel(VIEWER_QUEUE);
        let slow_gone = CancellationToken::new();
        state.viewers.push(Viewer {
            queue: slow,
            gone: slow_gone.clone(),
        });
        state.viewers.push(Viewer {
            queue: fast,
            gone: CancellationToken::new(),
        });
        for i in 0..(VIEWER_QUEUE as u64 + 1) {
            state.broadcast(&event(i));
            while fast_rx.try_recv().is_ok() {}
        }
        assert_eq!(state.viewers.len(), 1, "the slow viewer is dropped");
        assert!(slow_gone.is_cancelled(), "and its connection told to close");
    }

    #[test]
    fn an_interval_event_carries_the_views_figures_in_nanoseconds() {
        let v = crate::live::fixtures::stalled_view();
        let e = interval_event(&v);
        assert_eq!(e["index"], 13);
        assert_eq!(e["start_ns"], 13_000_000_000u64);
        assert_eq!(e["p99"], 10_200_000);
        assert_eq!(e["send_lag_p99"], 52_000);
        assert_eq!(e["in_flight"], 391);
        assert_eq!(e["failures"]["timeout"], 1);
        assert_eq!(e["target_rate"], 1000.0);
        let j = interval_event(&crate::live::fixtures::journey_view());
        assert_eq!(j["labels"][0]["name"], "shop/log \"in\" \\ now");
        assert_eq!(j["labels"][1]["failed"], 2);
    }

    /// The floor in nanoseconds, null without a control meter; the check judged on the last
    /// interval (52 µs of send lag against a calm 61 µs floor) and counted, and an interval with
    /// nothing answered left unjudged and uncounted.
    #[test]
    fn the_floor_and_the_check_come_from_the_view() {
        let v = crate::live::fixtures::stalled_view();
        let f = floor_event(&v);
        assert_eq!(f["period"]["p99"], 61_000);
        assert_eq!(f["so_far"]["max"], 2_100_000);
        assert_eq!(f["so_far"]["ticks"], 14_000);
        assert!(floor_event(&View {
            floor: None,
            ..v.clone()
        })
        .is_null());
        let mut judged = Judged::default();
        let c = check_event(&v, &mut judged);
        assert_eq!(c["verdict"], "ok");
        assert!(
            c["line"]
                .as_str()
                .unwrap()
                .contains("within the machine's own floor"),
            "{c}"
        );
        assert_eq!(
            (c["intervals"].as_u64(), c["behind"].as_u64()),
            (Some(1), Some(0))
        );
        let mut quiet = v.clone();
        if let Some(l) = &mut quiet.last {
            l.send_lag.count = 0;
        }
        let c = check_event(&quiet, &mut judged);
        assert!(c["verdict"].is_null(), "{c}");
        assert_eq!(c["intervals"], 1, "not counted");
    }

    #[test]
    fn a_bad_address_names_what_is_accepted() {
        assert_eq!(listen_addr("0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(listen_addr(DEFAULT_ADDR).unwrap().port(), 5665);
        assert!(listen_addr("abc").unwrap_err().contains("5665"));
    }
}

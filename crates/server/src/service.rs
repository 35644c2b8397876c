//! What each path does. `/api` is the system under test; the rest are for people and tests.
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full};
use hyper::body::{Body, Incoming};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use sojourn_scenario::truth::{Outcome, TruthRecord};
use sojourn_scenario::Scenario;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::abuse::{AbuseKind, AbuseLog};
use crate::admission::{Admit, Arrival, Front, Permit};
use crate::gate::Gate;
use crate::grpc::{self, GrpcBody};
use crate::truthlog::TruthLog;
use crate::{OutcomeCounts, Protocol, INDEX_HEADER, MAX_BODY};

/// The longest stall the control endpoint accepts.
const MAX_CONTROL_STALL: Duration = Duration::from_secs(3600);

/// An answer: plain HTTP, or a gRPC call's (a message and trailers).
pub(crate) type Answer = Either<Full<Bytes>, GrpcBody>;
pub(crate) type Reply = Result<Response<Answer>, Dropped>;

/// Returned to hyper to make it drop the connection without answering (the `reset` fault).
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped on purpose")
    }
}

impl std::error::Error for Dropped {}

/// Everything the request handlers share.
pub(crate) struct State {
    pub scenario: Arc<Scenario>,
    /// The zero of the scenario clock: set at start, or by the first `/api` arrival.
    pub origin: OnceLock<Instant>,
    pub front: Arc<Front>,
    pub gate: Arc<Gate>,
    pub truth: TruthLog,
    pub control: bool,
    pub header_timeout: Duration,
    pub protocol: Protocol,
    pub abuse: AbuseLog,
    /// Connections and in-flight work, so shutdown can wait for both.
    pub tracker: TaskTracker,
    /// Stop taking new requests; finish what is in hand.
    pub draining: CancellationToken,
    /// The grace period is over: answer what is in hand with 503 now.
    pub abort: CancellationToken,
    /// Those answers had their moment: close connections that are still open.
    pub kill: CancellationToken,
    pub counts: Counts,
    healthy_index: AtomicU64,
}

#[derive(Default)]
pub(crate) struct Counts {
    pub outcomes: [AtomicU64; 6],
    pub healthy: AtomicU64,
    pub connections: AtomicU64,
    pub live: AtomicU64,
    pub peak: AtomicU64,
    pub control_stalls: AtomicU64,
    pub idle_keep_alive_closed: AtomicU64,
}

fn slot(o: Outcome) -> usize {
    match o {
        Outcome::Ok => 0,
        Outcome::Error => 1,
        Outcome::Rejected => 2,
        Outcome::Reset => 3,
        Outcome::Abandoned => 4,
        Outcome::Shutdown => 5,
    }
}

impl Counts {
    pub(crate) fn outcomes(&self) -> OutcomeCounts {
        let get = |o| self.outcomes[slot(o)].load(Relaxed);
        OutcomeCounts {
            ok: get(Outcome::Ok),
            error: get(Outcome::Error),
            rejected: get(Outcome::Rejected),
            reset: get(Outcome::Reset),
            abandoned: get(Outcome::Abandoned),
            shutdown: get(Outcome::Shutdown),
        }
    }
}

impl State {
    pub(crate) fn new(
        scenario: Scenario,
        truth: TruthLog,
        control: bool,
        header_timeout: Duration,
        protocol: Protocol,
        abuse: AbuseLog,
    ) -> State {
        let scenario = Arc::new(scenario);
        let origin = OnceLock::new();
        if scenario.clock() == sojourn_scenario::ClockOrigin::ServerStart {
            origin.get_or_init(Instant::now);
        }
        State {
            front: Front::new(scenario.admission()),
            gate: Gate::new(scenario.clone()),
            scenario,
            origin,
            truth,
            control,
            header_timeout,
            protocol,
            abuse,
            tracker: TaskTracker::new(),
            draining: CancellationToken::new(),
            abort: CancellationToken::new(),
            kill: CancellationToken::new(),
            counts: Counts::default(),
            healthy_index: AtomicU64::new(0),
        }
    }
}

/// What one connection's handler and its socket wrapper share.
pub(crate) struct ConnState {
    pub peer: SocketAddr,
    /// Set when a `reset` fault picked a request: close with RST instead of FIN.
    pub reset: AtomicBool,
    /// Request heads handed over on this connection.
    pub requests: AtomicU64,
    /// Bytes arrived since the server last wrote: a request (head) is under way. Cleared by
    /// writing, as an answer follows a whole request; a pipelined request that arrived before
    /// the previous answer is not seen, which only matters if it then stalls.
    pub unanswered_bytes: AtomicBool,
}

impl ConnState {
    pub(crate) fn new(peer: SocketAddr) -> ConnState {
        ConnState {
            peer,
            reset: AtomicBool::new(false),
            requests: AtomicU64::new(0),
            unanswered_bytes: AtomicBool::new(false),
        }
    }
}

/// Routes a request. For `/api` (and, on a gRPC server, any gRPC call) the request is numbered
/// and its work started right here, as hyper hands over the head, not when the returned future
/// is first polled: hyper may drop that future unpolled if the client hangs up at once, and
/// such a request still arrived.
pub(crate) fn route(
    state: Arc<State>,
    conn: Arc<ConnState>,
    req: Request<Incoming>,
) -> impl Future<Output = Reply> {
    conn.requests.fetch_add(1, Relaxed);
    // A body declared too long is refused at the door, unread and unnumbered: it is not a
    // request to the system under test.
    let too_long = req.body().size_hint().lower() > MAX_BODY;
    let call = state.protocol == Protocol::Grpc && grpc::is_call(&req);
    let api = call || req.uri().path() == "/api";
    let started = (!too_long && api).then(|| start_api(&state));
    async move {
        if too_long {
            state.abuse.note(AbuseKind::OversizedBody, conn.peer);
            return Ok(plain(closing(text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large: at most 1 MiB\n",
            ))));
        }
        if let Some(started) = started {
            return finish_api(&state, started, conn, req, call).await;
        }
        Ok(plain(other(&state, req).await))
    }
}

/// The paths for people and tests.
async fn other(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    match (req.method(), req.uri().path()) {
        (&Method::GET | &Method::HEAD, "/healthy") => healthy(state).await,
        (&Method::GET, "/scenario") => scenario_json(&state.scenario),
        (&Method::POST, "/control/stall") if state.control => {
            control_stall(state, req.uri().query())
        }
        _ => text(
            StatusCode::NOT_FOUND,
            "not found: try /api, /healthy or /scenario\n",
        ),
    }
}

fn plain(r: Response<Full<Bytes>>) -> Response<Answer> {
    r.map(Either::Left)
}

/// Sets a flag when dropped: if hyper drops the handler before the work is done, the client
/// has gone away.
struct GoneOnDrop(Arc<AtomicBool>);

impl Drop for GoneOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// An `/api` request whose work is under way.
struct Started {
    index: u64,
    work: JoinHandle<Option<u16>>,
    _gone: GoneOnDrop,
}

fn start_api(state: &Arc<State>) -> Started {
    let arrival = state.front.arrive(&state.origin);
    let index = arrival.index;
    let gone = Arc::new(AtomicBool::new(false));
    // The work runs as its own task: a real server does not stop working on a request because
    // the client hung up, and the truth log must see every request to its end.
    let work = state
        .tracker
        .spawn(serve_one(state.clone(), arrival, gone.clone()));
    Started {
        index,
        work,
        _gone: GoneOnDrop(gone),
    }
}

async fn finish_api(
    state: &State,
    started: Started,
    conn: Arc<ConnState>,
    req: Request<Incoming>,
    call: bool,
) -> Reply {
    let within_cap = discard_body(req.into_body()).await;
    if !within_cap {
        state.abuse.note(AbuseKind::OversizedBody, conn.peer);
    }
    let Started { index, work, _gone } = started;
    match work.await {
        Ok(Some(status)) if call => Ok(grpc::answer(status, index).map(Either::Right)),
        Ok(Some(status)) if within_cap => Ok(plain(answer(status, index))),
        // The rest of the body is still on its way: the connection cannot carry another request.
        Ok(Some(status)) => Ok(plain(closing(answer(status, index)))),
        Ok(None) | Err(_) => {
            // HTTP/1.1 resets the connection; HTTP/2 resets only this request's stream (hyper
            // does, on the error), and the connection's other calls go on.
            if state.protocol == Protocol::Http1 {
                conn.reset.store(true, Relaxed);
            }
            Err(Dropped)
        }
    }
}

/// Reads a body and drops it frame by frame, so the connection can be reused after a POST
/// while holding no more than one frame. Returns `false` if it went past [`MAX_BODY`]: the rest
/// is left unread (hyper then closes the connection after the answer). A client that hangs up
/// mid-body is not abuse: `true`.
async fn discard_body(mut body: Incoming) -> bool {
    let mut read = 0u64;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return true };
        read += frame.data_ref().map_or(0, |d| d.len() as u64);
        if read > MAX_BODY {
            return false;
        }
    }
    true
}

/// One request's life from the door to departure. Returns the status to answer, or `None` to
/// drop the connection.
async fn serve_one(state: Arc<State>, arrival: Arrival, gone: Arc<AtomicBool>) -> Option<u16> {
    let origin = *state
        .origin
        .get()
        .expect("the clock starts at or before the first arrival");
    let mut stamp = Stamp {
        origin,
        index: arrival.index,
        arrival: arrival.at,
        start: arrival.at,
        due: arrival.at,
    };
    let permit = match arrival.admit {
        Admit::Now(permit) => permit,
        Admit::Rejected => return state.finish(&stamp, Outcome::Rejected, 503),
        Admit::Queued(turn, front) => match wait_turn(turn, front, &state.abort).await {
            Some((start, permit)) => {
                stamp.start = start;
                permit
            }
            None => {
                // Never in service: start and departure are the moment it was given up.
                stamp.start = Instant::now();
                return state.finish(&stamp, Outcome::Shutdown, 503);
            }
        },
    };
    let served = tokio::select! {
        due = in_service(&state, &stamp) => Some(due),
        _ = state.abort.cancelled() => None,
    };
    // Stamp the departure before freeing the slot, so the next start never precedes it.
    let departure = Instant::now();
    drop(permit);
    let Some(due) = served else {
        return state.finish_at(&stamp, departure, Outcome::Shutdown, 503);
    };
    stamp.due = due;
    let (outcome, status) = verdict(&state.scenario, stamp.index, gone.load(Relaxed));
    state.finish_at(&stamp, departure, outcome, status)
}

/// What a served request gets. A client that has gone cannot be answered or reset.
fn verdict(scenario: &Scenario, index: u64, client_gone: bool) -> (Outcome, u16) {
    let status = scenario.status(index);
    let outcome = if client_gone {
        Outcome::Abandoned
    } else if scenario.resets(index) {
        Outcome::Reset
    } else if status == 200 {
        Outcome::Ok
    } else {
        Outcome::Error
    };
    (outcome, status)
}

/// Service time, then the gate. Returns when the scenario says the request should leave.
async fn in_service(state: &State, stamp: &Stamp) -> Instant {
    let at = stamp.start - stamp.origin;
    let reach = stamp.start + state.scenario.service_time(stamp.index, at);
    sojourn_timer::sleep_until(reach).await;
    let open = state.gate.open_at(stamp.origin, reach);
    if open > reach {
        state.gate.wait_until_open(open).await;
    }
    open
}

/// Waits in the queue for a slot; returns when service started, and the slot.
async fn wait_turn(
    mut turn: tokio::sync::oneshot::Receiver<Instant>,
    front: Arc<Front>,
    abort: &CancellationToken,
) -> Option<(Instant, Permit)> {
    tokio::select! {
        handed = &mut turn => handed.ok().map(|start| (start, Permit::handed_over(front))),
        _ = abort.cancelled() => {
            // A slot handed over in the same instant must still be given back.
            if turn.try_recv().is_ok() {
                drop(Permit::handed_over(front));
            }
            None
        }
    }
}

/// The instants a truth record is made of.
struct Stamp {
    origin: Instant,
    index: u64,
    arrival: Instant,
    start: Instant,
    due: Instant,
}

impl State {
    fn finish(&self, stamp: &Stamp, outcome: Outcome, status: u16) -> Option<u16> {
        self.finish_at(stamp, stamp.start, outcome, status)
    }

    /// Counts and logs the request; says what to send back.
    fn finish_at(
        &self,
        stamp: &Stamp,
        departure: Instant,
        outcome: Outcome,
        status: u16,
    ) -> Option<u16> {
        self.counts.outcomes[slot(outcome)].fetch_add(1, Relaxed);
        let rel = |t: Instant| t.saturating_duration_since(stamp.origin);
        let sent = match outcome {
            Outcome::Reset => None,
            _ => Some(status),
        };
        self.truth.record(TruthRecord {
            index: stamp.index,
            arrival: rel(stamp.arrival),
            start: rel(stamp.start),
            departure: rel(departure),
            due: rel(stamp.due),
            status: sent.unwrap_or(0),
            outcome,
        });
        sent
    }
}

/// Answers after the law's baseline alone: no faults, no queue, not counted as `/api`.
async fn healthy(state: &State) -> Response<Full<Bytes>> {
    let i = state.healthy_index.fetch_add(1, Relaxed);
    state.counts.healthy.fetch_add(1, Relaxed);
    sojourn_timer::sleep(state.scenario.baseline(i)).await;
    text(StatusCode::OK, "healthy\n")
}

fn scenario_json(scenario: &Scenario) -> Response<Full<Bytes>> {
    let body = serde_json::to_vec(scenario).expect("a scenario serialises");
    let mut r = Response::new(Full::new(Bytes::from(body)));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// `POST /control/stall?for=1s`: closes the gate now, for that long.
fn control_stall(state: &State, query: Option<&str>) -> Response<Full<Bytes>> {
    let value = query
        .unwrap_or_default()
        .split('&')
        .find_map(|kv| kv.strip_prefix("for="));
    let parsed = value.map(|v| humantime::parse_duration(v.trim()));
    match parsed {
        Some(Ok(d)) if !d.is_zero() && d <= MAX_CONTROL_STALL => {
            state.gate.stall_now(d);
            state.counts.control_stalls.fetch_add(1, Relaxed);
            let body = format!("gate closed for {}\n", humantime::format_duration(d));
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
            r
        }
        _ => text(
            StatusCode::BAD_REQUEST,
            "for: expected a duration above zero and at most 1h, like ?for=1s or ?for=250ms\n",
        ),
    }
}

fn answer(status: u16, index: u64) -> Response<Full<Bytes>> {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = match status {
        200 => "ok\n",
        503 => "unavailable\n",
        _ => "injected error\n",
    };
    let mut r = text(code, body);
    r.headers_mut()
        .insert(INDEX_HEADER, HeaderValue::from(index));
    r
}

/// Tells the client this connection ends with this answer.
fn closing(mut r: Response<Full<Bytes>>) -> Response<Full<Bytes>> {
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    r
}

fn text(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

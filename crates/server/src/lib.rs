//! The pathology server: a [`Scenario`] served over HTTP/1.1, or as gRPC over cleartext HTTP/2
//! ([`Protocol::Grpc`]), with a ground-truth log of what it did to every request.
//!
//! Paths:
//!
//! - `/api` (any method) — the system under test. Requests are numbered from 0 in order of
//!   arrival; each waits for admission (worker limit / cap, FIFO), is in service for the
//!   scenario's service time, passes the gate (stalls, pauses), and is answered with the
//!   scenario's status — or has its connection reset. The `x-sojourn-index` header gives its
//!   number, i.e. its line in the truth log.
//! - `/healthy` (GET) — answers after the law's baseline alone; ignores every fault and does
//!   not start the scenario clock, so it is safe for readiness probes.
//! - `/scenario` (GET) — the scenario being served, as JSON.
//! - `/control/stall?for=1s` (POST) — closes the gate now for that long; only with
//!   [`ServeOptions::control`].
//!
//! # gRPC
//!
//! With [`Protocol::Grpc`] the server speaks HTTP/2 with prior knowledge (h2c, as gRPC does
//! without TLS) and nothing else. Every request whose content type is `application/grpc` is a
//! call to the system under test, whatever its method path: numbered, logged and delayed as an
//! `/api` request is, its message read and ignored, and answered with an empty message and
//! `grpc-status: 0` when the scenario releases it. A scenario's other statuses become gRPC
//! codes ([`grpc_code`]: 503 is UNAVAILABLE) with HTTP 200, and its `reset` fault resets the
//! call's stream. Requests of any other content type get the HTTP answer of their path, so
//! `/scenario` and `/healthy` work over HTTP/2 too.
//!
//! Delays are slept with `sojourn_timer` (timerfd, tens of microseconds) rather than tokio's
//! 1 ms timer wheel, and a stall releases all its waiters from one precise timer.
//!
//! # Limits
//!
//! Whoever can reach the server can misbehave, so what one connection can hold is bounded:
//!
//! - **Header timeout** ([`ServeOptions::header_timeout`], 60 s by default): a request head must
//!   arrive whole within it, counted from the first moment the server waits for one — so it
//!   also closes a connection that sends nothing, at first or between keep-alive requests.
//! - **Request head** at most [`MAX_HEAD`] bytes (request line and headers, answered 431), and
//!   hyper's 100 headers; the connection's read buffer is capped at the same size.
//! - **Request body** read and discarded a frame at a time, at most [`MAX_BODY`] bytes. A body
//!   declared longer is answered 413 without being read; a chunked one that grows past the cap
//!   is read no further and its connection is closed after the answer.
//!
//! Over HTTP/2 (gRPC) hyper bounds the header list to [`MAX_HEAD`] bytes and a connection to
//! [`MAX_STREAMS`] calls at once; the header timeout does not apply there.
//!
//! Each breach is counted by kind ([`AbuseKind`], [`ServeSummary::abuse`]), and the first of
//! each kind is handed to [`ServeOptions::on_first_abuse`] with the peer's address.
#![forbid(unsafe_code)]

mod abuse;
mod admission;
mod conn;
mod gate;
mod grpc;
mod service;
mod truthlog;

use std::fmt;
use std::future::Future;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

pub use abuse::{AbuseKind, AbuseNote, AbuseSink};
pub use grpc::grpc_code;
pub use sojourn_scenario::Scenario;
use tokio::net::TcpListener;

use crate::abuse::AbuseLog;
use crate::service::State;
use crate::truthlog::TruthLog;

/// The longest request head (request line and headers) accepted, in bytes: the 32 KiB that
/// nginx's default `large_client_header_buffers` allows, room for big cookies and tokens.
pub const MAX_HEAD: usize = 32 << 10;
/// Request bodies are read (so keep-alive survives a POST) but not kept, up to this much.
pub const MAX_BODY: u64 = 1 << 20;
/// The default [`ServeOptions::header_timeout`]: common servers give a client about a minute
/// to send its request head (nginx's `client_header_timeout`, Apache's `RequestReadTimeout`).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(60);

/// The response header that tells a client which truth-log line is its request (or call).
pub const INDEX_HEADER: &str = "x-sojourn-index";

/// The most calls one HTTP/2 connection may have open at once: a second's worth at 1,000 calls
/// per second, so a one-second stall queues at the server, not in the client.
pub const MAX_STREAMS: u32 = 1024;

/// What the server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 with keep-alive.
    #[default]
    Http1,
    /// gRPC: HTTP/2 over cleartext with prior knowledge (h2c).
    Grpc,
}

/// How the server runs, beyond the scenario.
pub struct ServeOptions {
    /// HTTP/1.1 (the default) or gRPC over h2c.
    pub protocol: Protocol,
    /// Where to stream the truth log (CSV, see `sojourn_scenario::truth`). `None`: no log.
    pub truth: Option<Box<dyn Write + Send>>,
    /// Serve `POST /control/stall?for=DURATION`. Off by default: a server under test should
    /// not be stallable by whoever can reach it.
    pub control: bool,
    /// After shutdown is asked for, how long requests in hand may take to finish before they
    /// are answered 503 and logged as `shutdown`.
    pub grace: Duration,
    /// How long a client may take to send a whole request head, counted from when the server
    /// starts waiting for it: on a new connection, and after each answer on a keep-alive one.
    /// Past it the connection is closed, so slowloris clients and idle connections cannot
    /// hold the server's descriptors and memory forever.
    pub header_timeout: Duration,
    /// Called with the first abuse of each kind (the rest are only counted). `None`: counted
    /// only.
    pub on_first_abuse: Option<AbuseSink>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            protocol: Protocol::Http1,
            truth: None,
            control: false,
            grace: Duration::from_secs(2),
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            on_first_abuse: None,
        }
    }
}

/// How `/api` requests ended, by outcome.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    pub ok: u64,
    pub error: u64,
    pub rejected: u64,
    pub reset: u64,
    pub abandoned: u64,
    pub shutdown: u64,
}

impl OutcomeCounts {
    pub fn total(&self) -> u64 {
        self.ok + self.error + self.rejected + self.reset + self.abandoned + self.shutdown
    }
}

/// Misbehaving clients, by [`AbuseKind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AbuseCounts {
    pub slow_headers: u64,
    pub idle: u64,
    pub malformed: u64,
    pub oversized_head: u64,
    pub oversized_body: u64,
}

impl AbuseCounts {
    pub fn get(&self, kind: AbuseKind) -> u64 {
        match kind {
            AbuseKind::SlowHeaders => self.slow_headers,
            AbuseKind::Idle => self.idle,
            AbuseKind::Malformed => self.malformed,
            AbuseKind::OversizedHead => self.oversized_head,
            AbuseKind::OversizedBody => self.oversized_body,
        }
    }

    pub fn total(&self) -> u64 {
        AbuseKind::ALL.iter().map(|&k| self.get(k)).sum()
    }
}

impl fmt::Display for AbuseCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        for kind in AbuseKind::ALL {
            write!(f, "{sep}{} {}", self.get(kind), kind.plural())?;
            sep = ", ";
        }
        Ok(())
    }
}

/// What the server did, reported when it stops.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServeSummary {
    /// `/api` requests by outcome.
    pub api: OutcomeCounts,
    pub healthy: u64,
    pub connections: u64,
    pub peak_connections: u64,
    pub control_stalls: u64,
    /// Lines written to the truth log (header excluded).
    pub truth_records: u64,
    /// Connections and requests still running when the grace period ended (then cut off).
    pub cut_off: u64,
    /// Misbehaving clients, by kind.
    pub abuse: AbuseCounts,
    /// Keep-alive connections closed by the header timeout after serving requests: not abuse
    /// (clients keep pools), but each costs its client a reconnect.
    pub idle_keep_alive_closed: u64,
}

impl fmt::Display for ServeSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.api;
        write!(
            f,
            "{} /api requests ({} ok, {} error, {} rejected, {} reset, {} abandoned, {} cut off by shutdown), \
             {} /healthy, {} connections (peak {})",
            a.total(),
            a.ok,
            a.error,
            a.rejected,
            a.reset,
            a.abandoned,
            a.shutdown,
            self.healthy,
            self.connections,
            self.peak_connections
        )?;
        if self.idle_keep_alive_closed > 0 {
            write!(
                f,
                ", {} idle keep-alive connections closed",
                self.idle_keep_alive_closed
            )?;
        }
        if self.abuse.total() > 0 {
            write!(f, "; abuse: {}", self.abuse)?;
        }
        Ok(())
    }
}

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The truth log could not be written (disk full, closed pipe). Serving went on; the log
    /// is incomplete from the first failure.
    #[error("writing the truth log: {0}")]
    Truth(#[source] std::io::Error),
}

/// The accept backlog [`bind`] asks for. tokio's own `TcpListener::bind` asks for 128, so a
/// burst of a few hundred connects overflows it and each dropped SYN costs the client a
/// one-second retransmit. The kernel caps this at `net.core.somaxconn`.
pub const BACKLOG: u32 = 4096;

/// Binds a listener with a deep accept backlog ([`BACKLOG`]). Call it inside a tokio runtime.
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)
}

/// Serves `scenario` on an already-bound `listener` until `shutdown` resolves, then stops
/// accepting, lets requests in hand finish within [`ServeOptions::grace`], closes the truth log
/// and reports.
pub async fn serve(
    listener: TcpListener,
    scenario: Scenario,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<ServeSummary, ServeError> {
    let truth = options.truth.map_or_else(TruthLog::none, TruthLog::csv);
    let abuse = AbuseLog::new(options.on_first_abuse, options.header_timeout);
    let state = Arc::new(State::new(
        scenario,
        truth,
        options.control,
        options.header_timeout,
        options.protocol,
        abuse,
    ));
    let stop_gate = tokio_util::sync::CancellationToken::new();
    let releases = tokio::spawn(state.gate.clone().run_releases(stop_gate.clone()));

    conn::accept_until(&listener, &state, shutdown).await;
    drop(listener);
    let cut_off = drain(&state, options.grace).await;
    stop_gate.cancel();
    let _ = releases.await;

    let log = state.clone();
    let written = tokio::task::spawn_blocking(move || log.truth.finish())
        .await
        .unwrap_or_else(|_| Err(std::io::Error::other("the truth-log closer panicked")));
    let c = &state.counts;
    Ok(ServeSummary {
        api: c.outcomes(),
        healthy: c.healthy.load(Relaxed),
        connections: c.connections.load(Relaxed),
        peak_connections: c.peak.load(Relaxed),
        control_stalls: c.control_stalls.load(Relaxed),
        truth_records: written.map_err(ServeError::Truth)?,
        cut_off,
        abuse: state.abuse.counts(),
        idle_keep_alive_closed: c.idle_keep_alive_closed.load(Relaxed),
    })
}

/// Graceful first, then firm: returns how many tasks had to be cut off.
async fn drain(state: &State, grace: Duration) -> u64 {
    state.draining.cancel();
    state.tracker.close();
    if tokio::time::timeout(grace, state.tracker.wait())
        .await
        .is_ok()
    {
        return 0;
    }
    let stuck = state.tracker.len() as u64;
    state.abort.cancel();
    // Work cut off answers 503 at once; give those answers a moment to be written.
    if tokio::time::timeout(Duration::from_millis(250), state.tracker.wait())
        .await
        .is_ok()
    {
        return stuck;
    }
    // What remains is a connection that will not finish (a client that stopped reading).
    state.kill.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(1), state.tracker.wait()).await;
    stuck
}

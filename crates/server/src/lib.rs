//! The pathology server: a [`Scenario`] served over HTTP/1.1, with a ground-truth log of what
//! it did to every request.
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
//! Delays are slept with `sojourn_timer` (timerfd, tens of microseconds) rather than tokio's
//! 1 ms timer wheel, and a stall releases all its waiters from one precise timer.
#![forbid(unsafe_code)]

mod admission;
mod conn;
mod gate;
mod service;
mod truthlog;

use std::fmt;
use std::future::Future;
use std::io::Write;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

pub use service::INDEX_HEADER;
pub use sojourn_scenario::Scenario;
use tokio::net::TcpListener;

use crate::service::State;
use crate::truthlog::TruthLog;

/// How the server runs, beyond the scenario.
pub struct ServeOptions {
    /// Where to stream the truth log (CSV, see `sojourn_scenario::truth`). `None`: no log.
    pub truth: Option<Box<dyn Write + Send>>,
    /// Serve `POST /control/stall?for=DURATION`. Off by default: a server under test should
    /// not be stallable by whoever can reach it.
    pub control: bool,
    /// After shutdown is asked for, how long requests in hand may take to finish before they
    /// are answered 503 and logged as `shutdown`.
    pub grace: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            truth: None,
            control: false,
            grace: Duration::from_secs(2),
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
        )
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
    let state = Arc::new(State::new(scenario, truth, options.control));
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

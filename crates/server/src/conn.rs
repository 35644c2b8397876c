//! Accepting connections and serving HTTP/1.1 on each, with keep-alive, or HTTP/2 (gRPC).
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::abuse::AbuseKind;
use crate::service::{route, ConnState, State};
use crate::{Protocol, MAX_HEAD, MAX_STREAMS};

/// How long to back off when the process is out of file descriptors: the accept would fail
/// again at once, and spinning on it would starve the connections that could free some.
const FD_BACKOFF: Duration = Duration::from_millis(20);

/// Accepts until `shutdown` resolves. Accept errors are never fatal: a client that resets
/// during the handshake, or a full descriptor table, must not take the server down.
pub(crate) async fn accept_until(
    listener: &TcpListener,
    state: &Arc<State>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    state.tracker.spawn(connection(state.clone(), stream, peer));
                }
                Err(e) if is_out_of_descriptors(&e) => tokio::time::sleep(FD_BACKOFF).await,
                Err(_) => {}
            },
        }
    }
}

fn is_out_of_descriptors(e: &io::Error) -> bool {
    // EMFILE (24): this process; ENFILE (23): the whole system; ENOBUFS/ENOMEM: kernel memory.
    matches!(e.raw_os_error(), Some(23 | 24 | 105 | 12))
}

async fn connection(state: Arc<State>, stream: TcpStream, peer: SocketAddr) {
    let counts = &state.counts;
    counts.connections.fetch_add(1, Relaxed);
    let live = counts.live.fetch_add(1, Relaxed) + 1;
    counts.peak.fetch_max(live, Relaxed);
    // Latency is the product: never let Nagle hold a response back.
    let _ = stream.set_nodelay(true);
    let shared = Arc::new(ConnState::new(peer));
    let io = TokioIo::new(Socket {
        inner: stream,
        conn: shared.clone(),
    });
    let handler_state = state.clone();
    let handler_conn = shared.clone();
    let service = service_fn(move |req| route(handler_state.clone(), handler_conn.clone(), req));
    let ended = match state.protocol {
        Protocol::Http1 => {
            let conn = builder(state.header_timeout).serve_connection(io, service);
            drive(conn, &state, |c| c.graceful_shutdown()).await
        }
        Protocol::Grpc => {
            let conn = h2_builder().serve_connection(io, service);
            drive(conn, &state, |c| c.graceful_shutdown()).await
        }
    };
    // A connection that ended badly: abuse is counted by kind; a client that hung up or reset
    // needs nothing but the close.
    if let Err(e) = ended {
        match classify(&e, &shared) {
            Ended::Abuse(kind) => state.abuse.note(kind, peer),
            Ended::IdleKeepAlive => {
                counts.idle_keep_alive_closed.fetch_add(1, Relaxed);
            }
            Ended::HungUp => {}
        }
    }
    counts.live.fetch_sub(1, Relaxed);
}

/// Serves a connection to its end; once the server drains, asks it to finish gracefully, and
/// drops it when the grace period is over.
async fn drive<C: Future<Output = hyper::Result<()>>>(
    conn: C,
    state: &State,
    shut: impl FnOnce(Pin<&mut C>),
) -> hyper::Result<()> {
    tokio::pin!(conn);
    tokio::select! {
        ended = conn.as_mut() => ended,
        _ = state.draining.cancelled() => {
            shut(conn.as_mut());
            tokio::select! {
                ended = conn.as_mut() => ended,
                _ = state.kill.cancelled() => Ok(()),
            }
        }
    }
}

/// HTTP/2 with prior knowledge, as gRPC speaks it without TLS, with the head bounded as
/// HTTP/1.1's is and a bound on the calls open at once.
fn h2_builder() -> http2::Builder<TokioExecutor> {
    let mut b = http2::Builder::new(TokioExecutor::new());
    b.timer(TokioTimer::new())
        .max_header_list_size(MAX_HEAD as u32)
        .max_concurrent_streams(MAX_STREAMS);
    b
}

/// HTTP/1.1 with keep-alive, and bounds on what one connection may hold: its request head
/// (size, and time to arrive) and its buffers. Bodies are bounded by the handler.
fn builder(header_timeout: Duration) -> http1::Builder {
    let mut b = http1::Builder::new();
    b.keep_alive(true)
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_header_size(MAX_HEAD)
        // The read buffer only ever needs to hold one head; body frames are cut to fit it.
        .max_buf_size(MAX_HEAD);
    b
}

/// Why a connection ended with an error.
enum Ended {
    Abuse(AbuseKind),
    /// The header timeout closed a keep-alive connection that had been answered and then
    /// sent nothing: ordinary housekeeping.
    IdleKeepAlive,
    /// Reset, hung up mid-request, or any other failure of the client's side.
    HungUp,
}

fn classify(e: &hyper::Error, conn: &ConnState) -> Ended {
    if e.is_timeout() {
        if conn.unanswered_bytes.load(Relaxed) {
            Ended::Abuse(AbuseKind::SlowHeaders)
        } else if conn.requests.load(Relaxed) == 0 {
            Ended::Abuse(AbuseKind::Idle)
        } else {
            Ended::IdleKeepAlive
        }
    } else if e.is_parse_too_large() {
        Ended::Abuse(AbuseKind::OversizedHead)
    } else if e.is_parse() {
        Ended::Abuse(AbuseKind::Malformed)
    } else {
        Ended::HungUp
    }
}

/// The TCP stream, plus what its connection shares with the handler: whether a `reset` fault
/// asked for a RST, and whether bytes of a request are waiting for an answer.
struct Socket {
    inner: TcpStream,
    conn: Arc<ConnState>,
}

impl Drop for Socket {
    fn drop(&mut self) {
        if self.conn.reset.load(Relaxed) {
            // Linger zero turns the close into a RST: the client sees "connection reset".
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl Socket {
    /// An answer (or part of one) went out: the request it answers is no longer pending.
    fn note_written(&self, written: &Poll<io::Result<usize>>) {
        if matches!(written, Poll::Ready(Ok(n)) if *n > 0) {
            self.conn.unanswered_bytes.store(false, Relaxed);
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let read = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.conn.unanswered_bytes.store(true, Relaxed);
        }
        read
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note_written(&written);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.note_written(&written);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.conn.reset.load(Relaxed) {
            // No FIN before the RST: the client should see a reset, not an orderly close.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

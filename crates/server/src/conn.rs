//! Accepting connections and serving HTTP/1.1 on each, with keep-alive.
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::service::{route, ConnFlags, State};

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
                Ok((stream, _)) => {
                    state.tracker.spawn(connection(state.clone(), stream));
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

async fn connection(state: Arc<State>, stream: TcpStream) {
    let counts = &state.counts;
    counts.connections.fetch_add(1, Relaxed);
    let live = counts.live.fetch_add(1, Relaxed) + 1;
    counts.peak.fetch_max(live, Relaxed);
    // Latency is the product: never let Nagle hold a response back.
    let _ = stream.set_nodelay(true);
    let flags = Arc::new(ConnFlags::default());
    let io = TokioIo::new(Socket {
        inner: stream,
        flags: flags.clone(),
    });
    let handler_state = state.clone();
    let service = service_fn(move |req| route(handler_state.clone(), flags.clone(), req));
    let conn = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, service);
    tokio::pin!(conn);
    // Errors here are the client's (reset, garbage, hung up): nothing to do but close.
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = state.draining.cancelled() => {
            conn.as_mut().graceful_shutdown();
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = state.kill.cancelled() => {}
            }
        }
    }
    counts.live.fetch_sub(1, Relaxed);
}

/// The TCP stream, plus the ability to close it with a RST when a `reset` fault asks.
struct Socket {
    inner: TcpStream,
    flags: Arc<ConnFlags>,
}

impl Drop for Socket {
    fn drop(&mut self) {
        if self.flags.reset.load(Relaxed) {
            // Linger zero turns the close into a RST: the client sees "connection reset".
            let _ = self.inner.set_zero_linger();
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.flags.reset.load(Relaxed) {
            // No FIN before the RST: the client should see a reset, not an orderly close.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

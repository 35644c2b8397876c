//! HTTP/2 over TCP (prior-knowledge h2c) or TLS (ALPN `h2`), on the `h2` crate.
//!
//! The engine's pool is a pool of *stream slots*: each connection carries up to `streams` of
//! them, and a due request takes any free slot on any connection, FIFO, exactly as an HTTP/1.1
//! request takes a free connection. A slot's `Conn` is a handle on a shared connection; the
//! first slot that finds no connection with room opens one, and the others join it.
//!
//! Stamps keep their meaning. `h2` queues a request's HEADERS frame in memory and the
//! connection task (on the same thread) writes it to the socket on its next turn, so the send
//! stamp is first taken when the frame is queued and then moved to the first socket write
//! after it ([`WriteClock`]).
//!
//! Unlike HTTP/1.1, a request allocates: its header map, which `h2` takes by value, `h2`'s
//! copies of its `:path` and `:authority`, and the answer's header map as `h2` decodes it, all
//! freed with the request (`tests/allocations.rs` holds them to their measured figure). What
//! the engine itself keeps per waiting request is unchanged.
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};

use ::h2::client::{self, SendRequest};
use ::h2::Reason;
use bytes::Bytes;
use sojourn_core::{FailureClass, Outcome};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::http::{resolve, HttpRequest, TargetError, Tls, TlsServerName, Trust};
use crate::transport::{Answer, Connection, Exchange, ExchangeError, Transport};

/// The most streams one connection carries when the server advertises more (or no limit):
/// nginx and most servers advertise 100 or 128.
pub const MAX_STREAMS: usize = 256;

/// Flow-control windows the client grants: large enough that a response body never waits on
/// the client (the engine releases what it reads at once), so a flow-control stall is always
/// the server's side.
const STREAM_WINDOW: u32 = 4 * 1024 * 1024;
const CONNECTION_WINDOW: u32 = 64 * 1024 * 1024;

/// What the server said when the connection was opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2Settings {
    /// SETTINGS_MAX_CONCURRENT_STREAMS; `None` when the server sets no limit.
    pub max_concurrent_streams: Option<usize>,
}

/// One request, prepared once for the whole run.
#[derive(Clone)]
struct Prepared {
    method: http::Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Bytes,
    /// A gRPC call: its answer is read by [`crate::grpc::answer`] (the `grpc-status`), not by
    /// its HTTP status alone.
    grpc: bool,
    /// A server-streaming gRPC call: its answer's messages are counted and the first one
    /// timed ([`crate::grpc::MessageCounter`]).
    streaming: bool,
}

/// Opens HTTP/2 connections to one origin and exchanges its requests on their streams.
///
/// A clone shares the requests and the settings but **not** the connections: the engine clones
/// the transport once per worker thread, and each thread drives its own connections.
pub struct Http2Transport {
    addr: SocketAddr,
    tls: Option<Tls>,
    requests: Arc<[Prepared]>,
    streams: usize,
    pool: Arc<tokio::sync::Mutex<Vec<Shared>>>,
}

impl Clone for Http2Transport {
    fn clone(&self) -> Self {
        Http2Transport {
            addr: self.addr,
            tls: self.tls.clone(),
            requests: self.requests.clone(),
            streams: self.streams,
            pool: Default::default(),
        }
    }
}

impl Http2Transport {
    /// Resolves the origin and prepares the requests (as [`crate::HttpTransport::many`]).
    /// Each connection carries up to `streams` concurrent requests.
    pub async fn many(
        reqs: &[HttpRequest],
        trust: &Trust,
        streams: usize,
    ) -> Result<Http2Transport, TargetError> {
        Http2Transport::answering(reqs, trust, streams, false, &[]).await
    }

    /// gRPC calls: resolves the origin and prepares the calls as [`Http2Transport::many`]
    /// does, each answered by its `grpc-status`; call `i` is a server-streaming method when
    /// `streaming[i]` is true (its answer's messages are counted and the first one timed).
    pub async fn grpc(
        calls: &[crate::grpc::GrpcCall],
        streaming: &[bool],
        trust: &Trust,
        streams: usize,
    ) -> Result<Http2Transport, TargetError> {
        let reqs: Vec<HttpRequest> = calls.iter().map(crate::grpc::GrpcCall::request).collect();
        Http2Transport::answering(&reqs, trust, streams, true, streaming).await
    }

    /// As [`Http2Transport::many`]; with `grpc`, every answer is a gRPC call's, and request
    /// `i` is a server-streaming call when `streaming[i]` is true.
    async fn answering(
        reqs: &[HttpRequest],
        trust: &Trust,
        streams: usize,
        grpc: bool,
        streaming: &[bool],
    ) -> Result<Http2Transport, TargetError> {
        let req = reqs.first().ok_or(TargetError::NoHost)?;
        let (addr, tls) = resolve(req, trust, b"h2").await?;
        let prepared = |(i, r)| {
            let streaming = streaming.get(i).copied().unwrap_or(false);
            prepare(r).map(|p| Prepared {
                grpc,
                streaming,
                ..p
            })
        };
        let requests = reqs
            .iter()
            .enumerate()
            .map(prepared)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Http2Transport {
            addr,
            tls,
            requests: requests.into(),
            streams: streams.max(1),
            pool: Default::default(),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Over TLS, checks the certificate against `name` (and sends it as SNI) instead of the
    /// URL's host; a plaintext transport is unchanged.
    pub fn with_server_name(mut self, name: &TlsServerName) -> Http2Transport {
        if let Some(tls) = &mut self.tls {
            tls.rename(name);
        }
        self
    }

    pub fn streams(&self) -> usize {
        self.streams
    }

    /// The same transport with `streams` per connection (after learning the server's limit).
    pub fn with_streams(mut self, streams: usize) -> Self {
        self.streams = streams.max(1);
        self
    }

    /// Opens one connection, waits for the server's SETTINGS, and closes it: for the check
    /// before a run, which needs the reason a connection fails and the server's stream limit.
    pub async fn probe(&self) -> Result<Http2Settings, crate::ConnectError> {
        let failed = |class| move |source| crate::ConnectError { class, source };
        let io = self.stream().await?;
        let (send, mut conn) = client::Builder::new()
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|e| failed(FailureClass::Protocol)(io::Error::other(e)))?;
        let mut pings = conn
            .ping_pong()
            .expect("a new connection has its ping-pong");
        // A server sends its SETTINGS first, before it answers a PING.
        let pong = tokio::select! {
            r = pings.ping(::h2::Ping::opaque()) => r,
            r = &mut conn => r.and(Err(::h2::Error::from(Reason::NO_ERROR))),
        };
        pong.map_err(|e| failed(FailureClass::Protocol)(io::Error::other(e)))?;
        let advertised = conn.max_concurrent_send_streams();
        drop(send);
        Ok(Http2Settings {
            max_concurrent_streams: (advertised < usize::MAX).then_some(advertised),
        })
    }

    /// Opens one plain connection (no stream slots, no send stamps) whose task runs on the
    /// runtime: for the calls made before a run, such as asking a gRPC server for its
    /// descriptors ([`crate::grpc_reflect`]), over the same TLS settings as the run.
    pub async fn connection(&self) -> Result<SendRequest<Bytes>, crate::ConnectError> {
        let io = self.stream().await?;
        let (send, conn) = client::Builder::new()
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|e| crate::ConnectError {
                class: FailureClass::Protocol,
                source: io::Error::other(e),
            })?;
        tokio::spawn(conn);
        Ok(send)
    }

    async fn stream(&self) -> Result<Io, crate::ConnectError> {
        let failed = |class| move |source| crate::ConnectError { class, source };
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(failed(FailureClass::Connect))?;
        let _ = tcp.set_nodelay(true);
        let Some(tls) = &self.tls else {
            return Ok(Io::Plain(tcp));
        };
        let s = tls
            .connector
            .connect(tls.name.clone(), tcp)
            .await
            .map_err(failed(FailureClass::Tls))?;
        if s.get_ref().1.alpn_protocol() != Some(b"h2") {
            return Err(failed(FailureClass::Tls)(io::Error::other(
                "the server did not agree to HTTP/2 (no ALPN h2); drop --http2 to use HTTP/1.1",
            )));
        }
        Ok(Io::Tls(Box::new(s)))
    }

    /// Opens a connection and starts its task on this thread.
    async fn open(&self) -> Result<Shared, FailureClass> {
        let clock = Arc::new(WriteClock::new());
        let io = Stamped {
            inner: self.stream().await.map_err(|e| e.class)?,
            clock: clock.clone(),
        };
        let (send, conn) = client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(io)
            .await
            .map_err(|_| FailureClass::Protocol)?;
        let alive = Arc::new(AtomicBool::new(true));
        let ended = alive.clone();
        tokio::task::spawn_local(async move {
            let _ = conn.await;
            ended.store(false, Relaxed);
        });
        Ok(Shared {
            send,
            clock,
            alive,
            slots: Arc::new(AtomicUsize::new(0)),
        })
    }
}

fn prepare(req: &HttpRequest) -> Result<Prepared, TargetError> {
    let bad = |what: &str| TargetError::Header(what.to_string());
    let method = http::Method::from_bytes(req.method.as_bytes()).map_err(|_| bad(&req.method))?;
    let uri: http::Uri = req.url.as_str().parse().map_err(|_| TargetError::NoHost)?;
    let mut headers = http::HeaderMap::new();
    for (name, value) in &req.headers {
        // Connection-specific fields are forbidden in HTTP/2, and Host is :authority.
        if is_connection_specific(name) {
            continue;
        }
        let shown = || bad(&format!("{name}: {value}"));
        let n = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| shown())?;
        let v = http::HeaderValue::from_str(value).map_err(|_| shown())?;
        headers.append(n, v);
    }
    if !headers.contains_key(http::header::USER_AGENT) {
        let agent = concat!("sojourn/", env!("CARGO_PKG_VERSION"));
        headers.insert(
            http::header::USER_AGENT,
            http::HeaderValue::from_static(agent),
        );
    }
    Ok(Prepared {
        method,
        uri,
        headers,
        body: Bytes::copy_from_slice(&req.body),
        grpc: false,
        streaming: false,
    })
}

fn is_connection_specific(name: &str) -> bool {
    [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// One connection, shared by the stream slots that joined it.
#[derive(Clone)]
struct Shared {
    send: SendRequest<Bytes>,
    clock: Arc<WriteClock>,
    /// Cleared when the connection's task ends, or a stream on it met GOAWAY or a broken
    /// socket.
    alive: Arc<AtomicBool>,
    /// Stream slots on this connection.
    slots: Arc<AtomicUsize>,
}

impl Transport for Http2Transport {
    type Conn = Http2Stream;

    /// A stream slot: on a connection with room, or on a new one.
    async fn connect(&self) -> Result<Http2Stream, FailureClass> {
        let mut pool = self.pool.lock().await;
        pool.retain(|c| c.alive.load(Relaxed));
        let roomy = pool
            .iter()
            .find(|c| c.slots.load(Relaxed) < self.streams)
            .cloned();
        let shared = match roomy {
            Some(c) => c,
            None => {
                let c = self.open().await?;
                pool.push(c.clone());
                c
            }
        };
        shared.slots.fetch_add(1, Relaxed);
        Ok(Http2Stream {
            send: shared.send.clone(),
            shared,
            requests: self.requests.clone(),
        })
    }
}

/// One stream slot: one request at a time on a shared connection.
pub struct Http2Stream {
    send: SendRequest<Bytes>,
    shared: Shared,
    requests: Arc<[Prepared]>,
}

impl Drop for Http2Stream {
    fn drop(&mut self) {
        self.shared.slots.fetch_sub(1, Relaxed);
    }
}

impl Connection for Http2Stream {
    async fn exchange(&mut self, ex: &Exchange) -> Result<Outcome, ExchangeError> {
        if !self.shared.alive.load(Relaxed) {
            // The connection ended since this slot's last request: nothing goes out on it.
            return Err(ExchangeError::Unprocessed(FailureClass::Io));
        }
        let result = match self.send(ex).await {
            Ok(answer) => self.receive(ex, answer).await.map_err(|e| (e, true)),
            Err(e) => Err((e, false)),
        };
        match result {
            Ok(answer) => Ok(ex.answered(answer)),
            Err((e, queued)) => {
                // The connection is going away or broken: no new slot may join it, and a
                // request retried on a fresh connection must not land on it again.
                if e.is_go_away() || e.is_io() {
                    self.shared.alive.store(false, Relaxed);
                }
                Err(classify(&e, queued))
            }
        }
    }

    fn reusable(&self) -> bool {
        self.shared.alive.load(Relaxed)
    }
}

/// A request on its way: its answer to come, and the connection's write count when its
/// HEADERS frame was queued.
struct Queued {
    answer: ::h2::client::ResponseFuture,
    writes: u64,
}

impl Http2Stream {
    /// Waits for a stream (the server's limit may be below ours) and queues the request.
    async fn send(&mut self, ex: &Exchange) -> Result<Queued, ::h2::Error> {
        let p = &self.requests[ex.target()];
        // The slot's own handle, polled in place: no clone (and no lock) per request.
        std::future::poll_fn(|cx| self.send.poll_ready(cx)).await?;
        let mut req = http::Request::new(());
        *req.method_mut() = p.method.clone();
        *req.uri_mut() = p.uri.clone();
        *req.headers_mut() = p.headers.clone();
        let writes = self.shared.clock.writes();
        let (answer, mut body_out) = self.send.send_request(req, p.body.is_empty())?;
        ex.mark_sent();
        if !p.body.is_empty() {
            body_out.send_data(p.body.clone(), true)?;
        }
        Ok(Queued { answer, writes })
    }

    /// Reads the whole answer, releasing flow-control capacity as it goes, and moves the send
    /// stamp to the socket write that took the request.
    async fn receive(&mut self, ex: &Exchange, q: Queued) -> Result<Answer, ::h2::Error> {
        let answer = q.answer.await;
        if let Some(at) = self.shared.clock.first_write_after(q.writes) {
            ex.sent_at(at);
        }
        let (head, mut body) = answer?.into_parts();
        let status = head.status.as_u16();
        if self.requests[ex.target()].streaming {
            read_messages(ex, &mut body).await?;
        } else {
            while let Some(chunk) = body.data().await {
                let n = chunk?.len();
                let _ = body.flow_control().release_capacity(n);
            }
        }
        let trailers = body.trailers().await?;
        Ok(match self.requests[ex.target()].grpc {
            true => crate::grpc::answer(status, &head.headers, trailers.as_ref()),
            false => crate::http::answer(status),
        })
    }
}

/// Reads a server-streaming answer's body as its DATA frames come, counting its messages and
/// stamping the first one when its last byte arrives.
async fn read_messages(ex: &Exchange, body: &mut ::h2::RecvStream) -> Result<(), ::h2::Error> {
    let mut counter = crate::grpc::MessageCounter::default();
    while let Some(chunk) = body.data().await {
        let chunk = chunk?;
        let _ = body.flow_control().release_capacity(chunk.len());
        let before = counter.messages;
        if counter.feed(&chunk) > 0 && before == 0 {
            ex.first_message();
        }
        // Kept as they come, so a stream cut short still counts what it carried.
        ex.messages(counter.messages);
    }
    Ok(())
}

/// Which failure an `h2` error is. A request never `queued` (the connection was already going
/// away or broken), and a stream the server refused (REFUSED_STREAM, or past the last stream a
/// GOAWAY said it would process), were not processed, and may be sent again on a fresh
/// connection.
fn classify(e: &::h2::Error, queued: bool) -> ExchangeError {
    use ExchangeError::{Failed, Unprocessed};
    let remote = e.is_remote();
    match e.reason() {
        _ if !queued && e.is_io() => Unprocessed(FailureClass::Io),
        _ if !queued && e.is_go_away() => Unprocessed(FailureClass::GoAway),
        _ if e.is_io() => Failed(FailureClass::Io),
        Some(Reason::REFUSED_STREAM) if remote && e.is_reset() => Unprocessed(FailureClass::Reset),
        Some(_) if remote && e.is_reset() => Failed(FailureClass::Reset),
        Some(Reason::NO_ERROR) if e.is_go_away() => Unprocessed(FailureClass::GoAway),
        Some(_) if remote && e.is_go_away() => Unprocessed(FailureClass::GoAway),
        // h2 itself found the server broke the protocol (or its flow control).
        _ => Failed(FailureClass::Protocol),
    }
}

/// When the connection's last socket writes happened, so a request's send stamp can be moved
/// from when its frame was queued to when the socket took it. Written and read on one thread;
/// atomic only so the transport can be sent to it.
struct WriteClock {
    base: Instant,
    writes: AtomicU64,
    /// Nanoseconds from `base` of write `n`, at `n % RING`.
    at: [AtomicU64; RING],
}

const RING: usize = 64;

impl WriteClock {
    fn new() -> Self {
        WriteClock {
            base: Instant::now(),
            writes: AtomicU64::new(0),
            at: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    fn writes(&self) -> u64 {
        self.writes.load(Relaxed)
    }

    fn wrote(&self) {
        let n = self.writes.load(Relaxed);
        let ns = Instant::now()
            .saturating_duration_since(self.base)
            .as_nanos() as u64;
        self.at[n as usize % RING].store(ns, Relaxed);
        self.writes.store(n + 1, Relaxed);
    }

    /// The first write after `before` writes had happened, while it is still remembered.
    fn first_write_after(&self, before: u64) -> Option<Instant> {
        let n = self.writes.load(Relaxed);
        if n <= before || n - before > RING as u64 {
            return None;
        }
        let ns = self.at[before as usize % RING].load(Relaxed);
        Some(self.base + std::time::Duration::from_nanos(ns))
    }
}

enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// The socket, noting when each write is taken.
struct Stamped {
    inner: Io,
    clock: Arc<WriteClock>,
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(s) => s.is_write_vectored(),
            Io::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

impl AsyncRead for Stamped {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Stamped {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.clock.wrote();
        }
        r
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            this.clock.wrote();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_send_stamp_moves_to_the_first_write_after_the_frame_was_queued() {
        let clock = WriteClock::new();
        clock.wrote();
        let before = clock.writes();
        assert_eq!(clock.first_write_after(before), None, "nothing written yet");
        std::thread::sleep(std::time::Duration::from_millis(2));
        let queued = Instant::now();
        clock.wrote();
        std::thread::sleep(std::time::Duration::from_millis(2));
        clock.wrote();
        let at = clock.first_write_after(before).expect("a write followed");
        assert!(at >= queued, "the write after queueing, not the one before");
        assert!(
            at < queued + std::time::Duration::from_millis(2),
            "the first write after, not the last"
        );
        for _ in 0..RING {
            clock.wrote();
        }
        assert_eq!(
            clock.first_write_after(before),
            None,
            "forgotten, not guessed"
        );
    }

    #[test]
    fn connection_specific_headers_are_left_out_and_host_becomes_the_authority() {
        let req = HttpRequest {
            url: "http://example.test:8080/a?b=1".parse().unwrap(),
            method: "POST".into(),
            headers: vec![
                ("Host".into(), "other".into()),
                ("Connection".into(), "keep-alive".into()),
                ("X-Id".into(), "7".into()),
            ],
            body: b"hi".to_vec(),
        };
        let p = prepare(&req).unwrap();
        assert_eq!(p.uri.authority().unwrap().as_str(), "example.test:8080");
        assert_eq!(p.uri.path_and_query().unwrap().as_str(), "/a?b=1");
        assert_eq!(p.method, http::Method::POST);
        assert!(p.headers.get("host").is_none() && p.headers.get("connection").is_none());
        assert_eq!(p.headers.get("x-id").unwrap(), "7");
        assert_eq!(&p.body[..], b"hi");
    }
}

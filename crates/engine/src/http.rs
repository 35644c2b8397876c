//! HTTP/1.1 over TCP or TLS (rustls), with keep-alive.
//!
//! The request is encoded once; each exchange writes the same bytes and reads one response,
//! framed by Content-Length, chunked encoding, or connection close. Headers are parsed by
//! `httparse`; bodies are skipped, never buffered whole, so memory per connection is one read
//! buffer. That buffer is bounded whatever the server sends: a response head longer than
//! [`MAX_HEAD_BYTES`] (or with more than [`MAX_HEADERS`] fields), a chunk-size line longer than
//! [`MAX_CHUNK_LINE`] or trailers longer than [`MAX_HEAD_BYTES`] fail as `protocol`.
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Buf, BytesMut};
use rustls::pki_types::{CertificateDer, ServerName};
use sojourn_core::{FailureClass, Outcome};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;
use url::Url;

use crate::transport::{Answer, Connection, Exchange, ExchangeError, Kept, StepRequest, Transport};

/// The longest response head (status line and header fields) read before the answer is
/// called malformed. Real servers send a few hundred bytes; 64 KiB is hyper's and nginx's
/// order of magnitude for requests, and keeps a hostile server from growing the buffer.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;
/// The most header fields in one response head.
pub const MAX_HEADERS: usize = 128;
/// The longest chunk-size line, extensions included.
pub const MAX_CHUNK_LINE: usize = 4 * 1024;

/// An HTTP answer in the engine's terms, over HTTP/1.1 and HTTP/2 alike: a 2xx status is a
/// success, any other final status a failure of its class (`http_4xx`, `http_5xx`,
/// `http_other`), and the status is counted per code in the result.
pub fn answer(status: u16) -> Answer {
    Answer {
        outcome: Outcome::of_status(status),
        code: status,
    }
}

/// Which server certificates to trust over https.
#[derive(Debug, Clone, Default)]
pub enum Trust {
    /// The Mozilla root store (webpki-roots): what a browser would accept.
    #[default]
    PublicRoots,
    /// Only certificates that chain to these (`--cacert`): a private CA.
    Roots(Vec<CertificateDer<'static>>),
    /// Any certificate (`--insecure`), for self-signed test servers. The handshake's
    /// signature is still checked.
    AnyCertificate,
}

impl Trust {
    /// The certificates in a PEM file as the only roots (`--cacert`).
    pub fn from_pem_file(path: &std::path::Path) -> Result<Trust, TargetError> {
        use rustls::pki_types::pem::PemObject;
        let shown = path.display();
        let certs = CertificateDer::pem_file_iter(path)
            .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
            .map_err(|e| TargetError::TrustAnchor(format!("reading {shown}: {e}")))?;
        if certs.is_empty() {
            return Err(TargetError::TrustAnchor(format!(
                "{shown} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"
            )));
        }
        Ok(Trust::Roots(certs))
    }
}

/// The name a TLS server's certificate is checked against, and sent as SNI, instead of the
/// URL's host (`--tls-server-name`): for a server reached by an address its certificate does
/// not name. The request's `Host` (`:authority`) stays the URL's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsServerName(ServerName<'static>);

impl TlsServerName {
    /// A DNS name or an IP address, as rustls checks it.
    pub fn parse(name: &str) -> Result<TlsServerName, TargetError> {
        ServerName::try_from(name.to_string())
            .map(TlsServerName)
            .map_err(|_| TargetError::ServerName(name.to_string()))
    }
}

/// What to send, validated.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub url: Url,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A line of a targets file is a request to send, as it stands (its label and weight are the
/// schedule's business, not the request's).
impl From<&sojourn_core::targets::Target> for HttpRequest {
    fn from(t: &sojourn_core::targets::Target) -> HttpRequest {
        HttpRequest {
            url: t.url.clone(),
            method: t.method.clone(),
            headers: t.headers.clone(),
            body: t.body.clone(),
        }
    }
}

/// Why a target cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// Only http:// and https:// URLs can be load-tested.
    #[error("scheme {0:?} is not supported; use http:// or https://")]
    Scheme(String),
    /// The URL has no host, e.g. `http:///path`.
    #[error("the URL has no host")]
    NoHost,
    /// The host name did not resolve: check its spelling, or use an IP address.
    #[error("cannot resolve {host}: {source}")]
    Resolve { host: String, source: io::Error },
    /// A header name or value contains characters HTTP forbids (line breaks, colons in names).
    #[error("header {0:?} is not a valid HTTP header")]
    Header(String),
    /// The `--cacert` file cannot be read, holds no PEM certificate, or holds one that cannot
    /// be a trust anchor.
    #[error("CA certificates: {0}")]
    TrustAnchor(String),
    /// The TLS server name asked for is neither a DNS name nor an IP address.
    #[error("{0:?} is neither a DNS name nor an IP address")]
    ServerName(String),
}

impl Tls {
    /// Checks the certificate against `name`, and sends it as SNI, instead of the URL's host.
    pub(crate) fn rename(&mut self, name: &TlsServerName) {
        self.name = name.0.clone();
    }
}

#[derive(Clone)]
pub(crate) struct Tls {
    pub connector: TlsConnector,
    pub name: ServerName<'static>,
}

/// Opens connections to one origin and exchanges its requests on them: one fixed request, or
/// (`--targets`) the one each exchange names.
#[derive(Clone)]
pub struct HttpTransport {
    addr: SocketAddr,
    tls: Option<Tls>,
    requests: Arc<[Encoded]>,
    /// The origin every request goes to, for requests built at run time (journeys).
    origin: Arc<Url>,
}

/// One request, encoded once for the whole run.
struct Encoded {
    bytes: Box<[u8]>,
    head_only: bool,
}

impl HttpTransport {
    /// Resolves the target and encodes the request. `trust` says which certificates an https
    /// target may present.
    pub async fn new(req: &HttpRequest, trust: &Trust) -> Result<HttpTransport, TargetError> {
        HttpTransport::many(std::slice::from_ref(req), trust).await
    }

    /// Many requests to one origin (the first request's scheme, host and port; the caller has
    /// checked that they share it): exchange `i` sends `reqs[i]`.
    pub async fn many(reqs: &[HttpRequest], trust: &Trust) -> Result<HttpTransport, TargetError> {
        let req = reqs.first().ok_or(TargetError::NoHost)?;
        let (addr, tls) = resolve(req, trust, b"http/1.1").await?;
        let requests = reqs
            .iter()
            .map(|r| {
                Ok(Encoded {
                    bytes: encode(r)?.into(),
                    head_only: r.method.eq_ignore_ascii_case("HEAD"),
                })
            })
            .collect::<Result<Vec<_>, TargetError>>()?;
        Ok(HttpTransport {
            addr,
            tls,
            requests: requests.into(),
            origin: Arc::new(req.url.clone()),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Over TLS, checks the certificate against `name` (and sends it as SNI) instead of the
    /// URL's host; a plaintext transport is unchanged.
    pub fn with_server_name(mut self, name: &TlsServerName) -> HttpTransport {
        if let Some(tls) = &mut self.tls {
            tls.rename(name);
        }
        self
    }
}

/// Resolves a request's origin, and prepares TLS (offering `alpn`) for https.
pub(crate) async fn resolve(
    req: &HttpRequest,
    trust: &Trust,
    alpn: &[u8],
) -> Result<(SocketAddr, Option<Tls>), TargetError> {
    let scheme = req.url.scheme();
    if scheme != "http" && scheme != "https" {
        return Err(TargetError::Scheme(scheme.to_string()));
    }
    let host = req.url.host_str().ok_or(TargetError::NoHost)?.to_string();
    let port = req.url.port_or_known_default().ok_or(TargetError::NoHost)?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addr = tokio::net::lookup_host((bare, port))
        .await
        .and_then(|mut a| {
            a.next()
                .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))
        })
        .map_err(|source| TargetError::Resolve {
            host: host.clone(),
            source,
        })?;
    let tls = if scheme == "https" {
        Some(tls_config(bare, trust, alpn)?)
    } else {
        None
    };
    Ok((addr, tls))
}

fn tls_config(host: &str, trust: &Trust, alpn: &[u8]) -> Result<Tls, TargetError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions");
    let roots = |store: rustls::RootCertStore| builder.clone().with_root_certificates(store);
    let mut config = match trust {
        Trust::AnyCertificate => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(crate::insecure::AcceptAnyCert::new(
                provider,
            )))
            .with_no_client_auth(),
        Trust::PublicRoots => roots(rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        })
        .with_no_client_auth(),
        Trust::Roots(certs) => {
            let mut store = rustls::RootCertStore::empty();
            for cert in certs {
                store
                    .add(cert.clone())
                    .map_err(|e| TargetError::TrustAnchor(e.to_string()))?;
            }
            roots(store).with_no_client_auth()
        }
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    let name = ServerName::try_from(host.to_string()).map_err(|_| TargetError::NoHost)?;
    Ok(Tls {
        connector: TlsConnector::from(Arc::new(config)),
        name,
    })
}

fn encode(req: &HttpRequest) -> Result<Vec<u8>, TargetError> {
    let mut out = Vec::new();
    let request = StepRequest {
        method: &req.method,
        url: "",
        headers: &req.headers,
        body: &req.body,
    };
    encode_into(&request, &req.url, &mut out)?;
    Ok(out)
}

/// Encodes `req` for `url` (its path, query and host) into `out`.
fn encode_into(req: &StepRequest, url: &Url, out: &mut Vec<u8>) -> Result<(), TargetError> {
    use std::io::Write as _;
    let host = url.host_str().unwrap_or_default();
    let _ = write!(out, "{} {}", req.method, url.path());
    if let Some(q) = url.query() {
        let _ = write!(out, "?{q}");
    }
    let _ = match url.port() {
        Some(p) => write!(out, " HTTP/1.1\r\nHost: {host}:{p}\r\n"),
        None => write!(out, " HTTP/1.1\r\nHost: {host}\r\n"),
    };
    let has = |name: &str| {
        req.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    };
    if !has("user-agent") {
        out.extend_from_slice(
            concat!("User-Agent: sojourn/", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
        );
    }
    for (name, value) in req.headers {
        let bad = |s: &str| s.contains(['\r', '\n']);
        if name.is_empty() || name.contains(':') || bad(name) || bad(value) {
            return Err(TargetError::Header(format!("{name}: {value}")));
        }
        let _ = write!(out, "{name}: {value}\r\n");
    }
    if !req.body.is_empty() && !has("content-length") {
        let _ = write!(out, "Content-Length: {}\r\n", req.body.len());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(req.body);
    Ok(())
}

impl HttpTransport {
    /// Where a journey's step goes: a path on the run's origin, or an absolute URL of it.
    /// Another origin is refused: the journey's connection is to this one.
    fn step_url(&self, url: &str) -> Option<Url> {
        let joined = self.origin.join(url).ok()?;
        let same = joined.scheme() == self.origin.scheme()
            && joined.host_str() == self.origin.host_str()
            && joined.port_or_known_default() == self.origin.port_or_known_default();
        same.then_some(joined)
    }
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Why a connection could not be opened, with the system's or rustls's own words.
#[derive(Debug, thiserror::Error)]
#[error("{source}")]
pub struct ConnectError {
    pub class: FailureClass,
    #[source]
    pub source: io::Error,
}

impl ConnectError {
    /// The server answered the TLS handshake with something that is not TLS at all: most
    /// likely it speaks plain HTTP on that port (its reply to the handshake is an HTTP error),
    /// and the URL should say `http://`. Skipping certificate checks would not help.
    pub fn not_tls(&self) -> bool {
        use rustls::{Error, InvalidMessage};
        self.class == FailureClass::Tls
            && self
                .source
                .get_ref()
                .and_then(|e| e.downcast_ref::<Error>())
                .is_some_and(|e| {
                    matches!(e, Error::InvalidMessage(InvalidMessage::InvalidContentType))
                })
    }
}

impl HttpTransport {
    /// Opens one connection and says why not: for the check before a run, where the reason
    /// (refused, certificate expired) is what the user needs. The hot path uses only the class.
    pub async fn open(&self) -> Result<(), ConnectError> {
        self.stream().await.map(drop)
    }

    async fn stream(&self) -> Result<Stream, ConnectError> {
        let failed = |class| move |source| ConnectError { class, source };
        let tcp = TcpStream::connect(self.addr)
            .await
            .map_err(failed(FailureClass::Connect))?;
        let _ = tcp.set_nodelay(true);
        Ok(match &self.tls {
            None => Stream::Plain(tcp),
            Some(tls) => {
                let s = tls
                    .connector
                    .connect(tls.name.clone(), tcp)
                    .await
                    .map_err(failed(FailureClass::Tls))?;
                Stream::Tls(Box::new(s))
            }
        })
    }
}

impl Transport for HttpTransport {
    type Conn = HttpConnection;

    /// A step to another origin, or with a header HTTP forbids, fails as `error` before anything
    /// is sent: the journey file names it, not the server.
    fn encode(&self, req: &StepRequest, out: &mut Vec<u8>) -> Result<(), FailureClass> {
        let url = self.step_url(req.url).ok_or(FailureClass::Error)?;
        encode_into(req, &url, out).map_err(|_| FailureClass::Error)
    }

    async fn connect(&self) -> Result<HttpConnection, FailureClass> {
        let stream = self.stream().await.map_err(|e| e.class)?;
        Ok(HttpConnection {
            stream,
            buf: BytesMut::with_capacity(8 * 1024),
            requests: self.requests.clone(),
            served: 0,
            keep_alive: true,
        })
    }
}

/// One keep-alive HTTP/1.1 connection.
pub struct HttpConnection {
    stream: Stream,
    buf: BytesMut,
    requests: Arc<[Encoded]>,
    served: u64,
    keep_alive: bool,
}

impl Connection for HttpConnection {
    async fn exchange(&mut self, ex: &Exchange) -> Result<Outcome, ExchangeError> {
        let own = ex.own_request();
        let (bytes, head_only) = match &own {
            Some(own) => (&**own, own.starts_with(b"HEAD ")),
            None => {
                let req = &self.requests[ex.target()];
                (&*req.bytes, req.head_only)
            }
        };
        let mut keep = ex.keep();
        let keep = keep.as_deref_mut();
        ex.mark_sent();
        let result = match &mut self.stream {
            Stream::Plain(s) => round_trip(s, bytes, &mut self.buf, head_only, keep).await,
            Stream::Tls(s) => round_trip(s.as_mut(), bytes, &mut self.buf, head_only, keep).await,
        };
        match result {
            Ok(head) => {
                self.served += 1;
                self.keep_alive = head.keep_alive;
                Ok(ex.answered(answer(head.status)))
            }
            Err(e) => {
                self.keep_alive = false;
                Err(match e {
                    Broken::BeforeAnswer if self.served > 0 => {
                        ExchangeError::Unprocessed(FailureClass::Io)
                    }
                    Broken::BeforeAnswer | Broken::Io => ExchangeError::Failed(FailureClass::Io),
                    Broken::Protocol => ExchangeError::Failed(FailureClass::Protocol),
                })
            }
        }
    }

    fn reusable(&self) -> bool {
        self.keep_alive
    }
}

enum Broken {
    /// The peer closed or reset before any byte of the answer.
    BeforeAnswer,
    Io,
    Protocol,
}

struct Head {
    status: u16,
    keep_alive: bool,
}

/// Sends `request` and reads its answer. With `keep`, the final answer's header fields and
/// body are kept there (journeys); without, the body is skipped.
async fn round_trip<S>(
    s: &mut S,
    request: &[u8],
    buf: &mut BytesMut,
    head_only: bool,
    mut keep: Option<&mut Kept>,
) -> Result<Head, Broken>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    buf.clear();
    if s.write_all(request).await.is_err() || s.flush().await.is_err() {
        return Err(Broken::BeforeAnswer);
    }
    loop {
        let head = read_head(s, buf, keep.as_deref_mut()).await?;
        // 1xx answers are interim: the final answer follows on the same connection.
        if (100..200).contains(&head.status) && head.status != 101 {
            continue;
        }
        let framing = if head_only || head.status == 204 || head.status == 304 {
            Framing::Length(0)
        } else {
            head.framing
        };
        skip_body(s, buf, framing, keep).await?;
        // Bytes past the end of the answer mean its framing lied (a Content-Length shorter
        // than the body): the next answer on this connection would be read from the middle of
        // this one.
        if !buf.is_empty() {
            return Err(Broken::Protocol);
        }
        return Ok(Head {
            status: head.status,
            keep_alive: head.keep_alive && framing != Framing::UntilClose,
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(u64),
    Chunked,
    UntilClose,
}

struct ParsedHead {
    status: u16,
    keep_alive: bool,
    framing: Framing,
}

/// Reads until a full response head is in `buf`, parses it and consumes it from `buf`.
async fn read_head<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut BytesMut,
    mut keep: Option<&mut Kept>,
) -> Result<ParsedHead, Broken> {
    loop {
        if let Some((len, head)) = parse_head(buf, keep.as_deref_mut())? {
            buf.advance(len);
            return Ok(head);
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err(Broken::Protocol);
        }
        fill(s, buf, buf.is_empty()).await?;
    }
}

/// Parses a response head if `buf` holds a whole one: `(bytes used, head)`.
/// With `keep`, its header fields are kept there (replacing an interim answer's).
fn parse_head(buf: &[u8], keep: Option<&mut Kept>) -> Result<Option<(usize, ParsedHead)>, Broken> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut res = httparse::Response::new(&mut headers);
    let len = match res.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Broken::Protocol),
    };
    let status = res.code.ok_or(Broken::Protocol)?;
    if let Some(keep) = keep {
        keep.headers.clear();
        keep.headers.extend(
            res.headers
                .iter()
                .map(|h| (h.name.to_string(), h.value.to_vec())),
        );
    }
    let mut keep_alive = res.version == Some(1);
    let mut framing = Framing::UntilClose;
    for h in res.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let n = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse().ok())
                .ok_or(Broken::Protocol)?;
            if framing != Framing::Chunked {
                framing = Framing::Length(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if h.value
                .to_ascii_lowercase()
                .windows(7)
                .any(|w| w == b"chunked")
            {
                framing = Framing::Chunked;
            }
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = h.value.to_ascii_lowercase();
            if v.windows(5).any(|w| w == b"close") {
                keep_alive = false;
            } else if v.windows(10).any(|w| w == b"keep-alive") {
                keep_alive = true;
            }
        }
    }
    Ok(Some((
        len,
        ParsedHead {
            status,
            keep_alive,
            framing,
        },
    )))
}

/// Reads more bytes into `buf`. `fresh` says no byte of the answer has arrived yet, so an EOF
/// or reset means the peer dropped the request rather than broke an answer.
async fn fill<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut BytesMut,
    fresh: bool,
) -> Result<(), Broken> {
    if buf.capacity() - buf.len() < 1024 {
        buf.reserve(8 * 1024);
    }
    match s.read_buf(buf).await {
        Ok(0) | Err(_) if fresh => Err(Broken::BeforeAnswer),
        Ok(0) | Err(_) => Err(Broken::Io),
        Ok(_) => Ok(()),
    }
}

/// Reads the body past, keeping it in `keep` when given.
async fn skip_body<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut BytesMut,
    framing: Framing,
    mut keep: Option<&mut Kept>,
) -> Result<(), Broken> {
    match framing {
        Framing::Length(n) => skip_exact(s, buf, n, keep).await,
        Framing::Chunked => skip_chunked(s, buf, keep).await,
        Framing::UntilClose => loop {
            if let Some(k) = keep.as_deref_mut() {
                k.extend_body(buf);
            }
            buf.clear();
            match s.read_buf(buf).await {
                Ok(0) => return Ok(()),
                Ok(_) => {}
                Err(_) => return Err(Broken::Io),
            }
        },
    }
}

async fn skip_exact<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut BytesMut,
    mut n: u64,
    mut keep: Option<&mut Kept>,
) -> Result<(), Broken> {
    loop {
        let take = n.min(buf.len() as u64);
        if let Some(k) = keep.as_deref_mut() {
            k.extend_body(&buf[..take as usize]);
        }
        buf.advance(take as usize);
        n -= take;
        if n == 0 {
            return Ok(());
        }
        fill(s, buf, false).await?;
    }
}

async fn skip_chunked<S: AsyncRead + Unpin>(
    s: &mut S,
    buf: &mut BytesMut,
    mut keep: Option<&mut Kept>,
) -> Result<(), Broken> {
    loop {
        let (used, size) = loop {
            match httparse::parse_chunk_size(buf) {
                Ok(httparse::Status::Complete(found)) => break found,
                Ok(httparse::Status::Partial) if buf.len() < MAX_CHUNK_LINE => {
                    fill(s, buf, false).await?
                }
                Ok(httparse::Status::Partial) | Err(_) => return Err(Broken::Protocol),
            }
        };
        buf.advance(used);
        if size == 0 {
            return skip_trailers(s, buf).await;
        }
        skip_exact(s, buf, size, keep.as_deref_mut()).await?;
        skip_exact(s, buf, 2, None).await?;
    }
}

/// After the last chunk: optional trailer lines, then an empty line. At most
/// [`MAX_HEAD_BYTES`] of them, like a head.
async fn skip_trailers<S: AsyncRead + Unpin>(s: &mut S, buf: &mut BytesMut) -> Result<(), Broken> {
    let mut skipped = 0;
    loop {
        if skipped + buf.len() > MAX_HEAD_BYTES {
            return Err(Broken::Protocol);
        }
        match buf.windows(2).position(|w| w == b"\r\n") {
            Some(0) => {
                buf.advance(2);
                return Ok(());
            }
            Some(end) => {
                skipped += end + 2;
                buf.advance(end + 2);
            }
            None => fill(s, buf, false).await?,
        }
    }
}

#[cfg(test)]
#[path = "http_props.rs"]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::duplex;

    fn req(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> HttpRequest {
        HttpRequest {
            url: Url::parse(url).unwrap(),
            method: method.into(),
            headers: headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn request_encoding() {
        let bytes = encode(&req(
            "http://127.0.0.1:8080/api?x=1",
            "POST",
            &[("X-Test", "1")],
            "hello",
        ))
        .unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.starts_with("POST /api?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"),
            "{text}"
        );
        assert!(text.contains("X-Test: 1\r\n"));
        assert!(text.ends_with("Content-Length: 5\r\n\r\nhello"), "{text}");
        let get = String::from_utf8(encode(&req("http://example.test/", "GET", &[], "")).unwrap())
            .unwrap();
        assert!(get.contains("Host: example.test\r\n") && !get.contains("Content-Length"));
        assert!(matches!(
            encode(&req("http://a/", "GET", &[("Bad\r\nName", "v")], "")),
            Err(TargetError::Header(_))
        ));
    }

    /// Plays a canned server script over an in-memory pipe and checks each exchange.
    async fn exchange_with(script: &'static [u8], n: usize) -> Vec<Result<(u16, bool), String>> {
        exchange_with_buffer(script.to_vec(), n, &mut BytesMut::new()).await
    }

    async fn exchange_with_buffer(
        script: Vec<u8>,
        n: usize,
        buf: &mut BytesMut,
    ) -> Vec<Result<(u16, bool), String>> {
        let (mut client, mut server) = duplex(64 * 1024);
        tokio::spawn(async move {
            let mut sink = [0u8; 1024];
            let _ = server.read(&mut sink).await;
            // Dribble the answer a few bytes at a time to exercise partial parses.
            for chunk in script.chunks(7 + script.len() / 1000) {
                if server.write_all(chunk).await.is_err() {
                    return;
                }
            }
            // End of script: the server closes, as a real one would after its last answer.
            let _ = server.shutdown().await;
        });
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(
                match round_trip(&mut client, b"GET / HTTP/1.1\r\n\r\n", buf, false, None).await {
                    Ok(h) => Ok((h.status, h.keep_alive)),
                    Err(Broken::BeforeAnswer) => Err("before".into()),
                    Err(Broken::Io) => Err("io".into()),
                    Err(Broken::Protocol) => Err("protocol".into()),
                },
            );
        }
        out
    }

    /// One answer read with its headers and body kept, as a journey's step reads it.
    async fn kept_answer(script: &'static [u8]) -> (u16, Kept) {
        let (mut client, mut server) = duplex(64 * 1024);
        tokio::spawn(async move {
            let mut sink = [0u8; 1024];
            let _ = server.read(&mut sink).await;
            for chunk in script.chunks(5) {
                let _ = server.write_all(chunk).await;
            }
            let _ = server.shutdown().await;
        });
        let mut kept = Kept::default();
        let head = round_trip(
            &mut client,
            b"GET / HTTP/1.1\r\n\r\n",
            &mut BytesMut::new(),
            false,
            Some(&mut kept),
        )
        .await;
        (head.ok().expect("an answer").status, kept)
    }

    #[tokio::test]
    async fn a_journeys_answer_keeps_its_final_headers_and_whole_body_in_every_framing() {
        let framings: [&'static [u8]; 3] = [
            b"HTTP/1.1 100 Continue\r\nX-Interim: 1\r\n\r\nHTTP/1.1 201 Created\r\nLocation: /items/7\r\nContent-Length: 11\r\n\r\n{\"id\": 7}\r\n",
            b"HTTP/1.1 201 Created\r\nLocation: /items/7\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"id\r\n7\r\n\": 7}\r\n\r\n0\r\n\r\n",
            b"HTTP/1.1 201 Created\r\nLocation: /items/7\r\nConnection: close\r\n\r\n{\"id\": 7}\r\n",
        ];
        for script in framings {
            let (status, kept) = kept_answer(script).await;
            assert_eq!(status, 201);
            assert_eq!(
                kept.headers
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()[0],
                "Location",
                "the final answer's fields, not the interim one's"
            );
            assert_eq!(kept.headers[0].1, b"/items/7");
            assert_eq!(
                std::str::from_utf8(&kept.body).unwrap().trim_end(),
                "{\"id\": 7}"
            );
            assert!(!kept.truncated);
        }
    }

    #[test]
    fn a_kept_body_stops_at_its_cap_and_says_so() {
        let mut kept = Kept::default();
        kept.extend_body(&vec![b'a'; crate::transport::MAX_KEPT_BODY - 1]);
        assert!(!kept.truncated);
        kept.extend_body(b"bc");
        assert_eq!(kept.body.len(), crate::transport::MAX_KEPT_BODY);
        assert!(kept.truncated && kept.body.ends_with(b"ab"));
        // A step that reads no body keeps none.
        let mut headless = Kept {
            limit: 0,
            ..Kept::default()
        };
        headless.extend_body(b"{\"id\": 7}");
        assert!(headless.body.is_empty());
    }

    #[test]
    fn a_step_is_encoded_for_the_runs_origin_and_no_other() {
        let t = HttpTransport {
            addr: "127.0.0.1:8080".parse().unwrap(),
            tls: None,
            requests: Arc::from(Vec::new()),
            origin: Arc::new(Url::parse("http://127.0.0.1:8080/api").unwrap()),
        };
        let headers = [("Authorization".to_string(), "Bearer t1".to_string())];
        let step = |url| StepRequest {
            method: "POST",
            url,
            headers: &headers,
            body: b"{}",
        };
        let mut out = Vec::new();
        t.encode(&step("/items?page=2"), &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            format!(
                "POST /items?page=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: sojourn/{}\r\n\
                 Authorization: Bearer t1\r\nContent-Length: 2\r\n\r\n{{}}",
                env!("CARGO_PKG_VERSION")
            )
        );
        let mut out = Vec::new();
        t.encode(&step("http://127.0.0.1:8080/x"), &mut out)
            .unwrap();
        assert!(out.starts_with(b"POST /x HTTP/1.1\r\n"));
        for other in [
            "http://127.0.0.1:9090/x",
            "https://127.0.0.1:8080/x",
            "http://localhost:8080/",
        ] {
            assert_eq!(
                t.encode(&step(other), &mut Vec::new()),
                Err(FailureClass::Error),
                "{other}"
            );
        }
    }

    #[test]
    fn a_status_answers_with_its_class_and_keeps_its_code() {
        let table = [
            (200, Outcome::Ok),
            (204, Outcome::Ok),
            (299, Outcome::Ok),
            (404, Outcome::Failed(FailureClass::Http4xx)),
            (429, Outcome::Failed(FailureClass::Http4xx)),
            (500, Outcome::Failed(FailureClass::Http5xx)),
            (503, Outcome::Failed(FailureClass::Http5xx)),
            // A redirect is not followed: it is a final answer, and not a success.
            (302, Outcome::Failed(FailureClass::HttpOther)),
            (101, Outcome::Failed(FailureClass::HttpOther)),
        ];
        for (status, outcome) in table {
            assert_eq!(
                answer(status),
                Answer {
                    outcome,
                    code: status
                },
                "{status}"
            );
        }
    }

    #[tokio::test]
    async fn content_length_framing() {
        let r = exchange_with(
            b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
            1,
        )
        .await;
        assert_eq!(r, vec![Ok((200, true))]);
    }

    #[tokio::test]
    async fn chunked_framing_with_trailers() {
        let r = exchange_with(b"HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nX-T: 1\r\n\r\n", 1).await;
        assert_eq!(r, vec![Ok((503, true))]);
    }

    #[tokio::test]
    async fn connection_close_and_interim_answers() {
        let r = exchange_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 1).await;
        assert_eq!(
            r,
            vec![Ok((200, false))],
            "100 is skipped; close is honoured"
        );
        let r = exchange_with(b"HTTP/1.0 200 OK\r\n\r\nuntil close", 1).await;
        assert_eq!(
            r,
            vec![Ok((200, false))],
            "HTTP/1.0 without length reads to EOF"
        );
    }

    #[tokio::test]
    async fn truncated_and_garbage_answers_are_classified() {
        let r = exchange_with(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", 1).await;
        assert_eq!(
            r,
            vec![Err("io".into())],
            "EOF mid-body is a broken exchange"
        );
        let r = exchange_with(b"NOT HTTP AT ALL\r\n\r\n", 1).await;
        assert_eq!(r, vec![Err("protocol".into())]);
    }

    #[tokio::test]
    async fn interim_answers_of_any_kind_are_skipped() {
        let r = exchange_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 1).await;
        assert_eq!(r, vec![Ok((204, true))]);
    }

    #[tokio::test]
    async fn a_body_longer_than_its_content_length_is_a_protocol_failure() {
        let r = exchange_with(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello world",
            1,
        )
        .await;
        assert_eq!(r, vec![Err("protocol".into())]);
    }

    /// A hostile server cannot grow the connection's buffer past the limits: the answer fails
    /// as `protocol` once a limit is crossed, with the buffer a few reads above it.
    #[tokio::test]
    async fn endless_heads_chunk_lines_and_trailers_stop_at_their_limits() {
        let endless = |prefix: &str, filler: u8| {
            let mut v = prefix.as_bytes().to_vec();
            v.resize(prefix.len() + (1 << 20), filler);
            v
        };
        let cases = [
            (
                "1 MB header line",
                endless("HTTP/1.1 200 OK\r\nX-Big: ", b'a'),
            ),
            (
                "1 MB chunk extension",
                endless(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=",
                    b'a',
                ),
            ),
            (
                "1 MB trailer",
                endless(
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-T: ",
                    b'a',
                ),
            ),
        ];
        for (name, script) in cases {
            let mut buf = BytesMut::new();
            let r = exchange_with_buffer(script, 1, &mut buf).await;
            assert_eq!(r, vec![Err("protocol".into())], "{name}");
            assert!(
                buf.capacity() <= 2 * MAX_HEAD_BYTES,
                "{name}: the buffer grew to {} bytes",
                buf.capacity()
            );
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("X-{i}: v\r\n")).collect();
        let script = format!("HTTP/1.1 200 OK\r\n{many}Content-Length: 0\r\n\r\n");
        let r = exchange_with_buffer(script.into_bytes(), 1, &mut BytesMut::new()).await;
        assert_eq!(
            r,
            vec![Err("protocol".into())],
            "more than MAX_HEADERS fields"
        );
    }
}

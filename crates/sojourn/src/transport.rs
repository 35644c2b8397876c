//! What a run sends and over which protocol: one request from the URL and flags, or many from a
//! targets file (`--targets`), over HTTP/1.1 or HTTP/2 (`--http2`), or one gRPC call
//! (`grpc://`, over HTTP/2).
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use sojourn_core::targets::{self, Order, Targets};
use sojourn_core::TargetsConfig;
use sojourn_engine::{
    Connection, Exchange, ExchangeError, Http2Transport, HttpRequest, HttpTransport, TlsServerName,
    Transport, Trust,
};

use url::Url;

use crate::bad_input;
use crate::reach::explain;

/// How `--targets` are taken in turn.
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TargetsOrder {
    /// In file order (weights interleave a target's turns), the same cycle over and over.
    #[default]
    RoundRobin,
    /// Drawn at random by weight, from --seed: the same seed sends the same sequence.
    Random,
}

/// The seed random target order uses without `--seed`.
pub const DEFAULT_TARGETS_SEED: u64 = 0x5EED;

/// The requests of a run.
pub struct Requests {
    /// What each target index sends; one entry without `--targets`.
    pub list: Vec<HttpRequest>,
    /// With `--targets`: which index each scheduled request sends, and the labels.
    pub targets: Option<Arc<Targets>>,
    /// With `--targets`: how the result describes them.
    pub config: Option<TargetsConfig>,
    /// gRPC calls (`grpc://`): what `list` holds, as the calls they are (one per target).
    pub grpc: Vec<crate::grpc::GrpcTarget>,
}

impl Requests {
    /// One request, from the URL and flags.
    pub fn one(req: HttpRequest) -> Requests {
        Requests {
            list: vec![req],
            targets: None,
            config: None,
            grpc: Vec::new(),
        }
    }

    /// Nothing to send over a network: in-process calls.
    pub fn none() -> Requests {
        Requests {
            list: Vec::new(),
            targets: None,
            config: None,
            grpc: Vec::new(),
        }
    }

    /// The first request: its origin is every request's origin (every run has one, except
    /// in-process calls).
    pub fn first(&self) -> &HttpRequest {
        &self.list[0]
    }

    /// Whether the requests go over TLS (https://, which grpcs:// is carried as).
    pub fn over_tls(&self) -> bool {
        self.list.first().is_some_and(|r| r.url.scheme() == "https")
    }

    /// Reads a targets file: every problem is one line naming the file, the line and what is
    /// wrong.
    pub fn from_file(
        path: &std::path::Path,
        order: TargetsOrder,
        seed: Option<u64>,
    ) -> anyhow::Result<Requests> {
        let list = targets::read_file(path).map_err(|e| bad_input!("--targets: {e}"))?;
        let requests = list.iter().map(HttpRequest::from).collect();
        Requests::of_targets(list, requests, path, order, seed)
    }

    /// A targets file of gRPC calls to `url` ([`crate::grpc_targets`]).
    pub fn from_grpc_file(
        path: &std::path::Path,
        url: &str,
        settings: &crate::grpc::GrpcSettings,
        (timeout, reach): (Duration, (&Trust, Option<&TlsServerName>)),
        order: TargetsOrder,
        seed: Option<u64>,
    ) -> anyhow::Result<Requests> {
        let calls = crate::grpc_targets::read(path, url, settings, timeout, reach)?;
        let (grpc, list): (Vec<_>, Vec<_>) = calls.into_iter().unzip();
        let requests = grpc.iter().map(|g| g.call.request()).collect();
        Ok(Requests {
            grpc,
            ..Requests::of_targets(list, requests, path, order, seed)?
        })
    }

    /// `list`, read from `path`, as the run's targets, request i of `requests` sending target i.
    fn of_targets(
        list: Vec<targets::Target>,
        requests: Vec<HttpRequest>,
        path: &std::path::Path,
        order: TargetsOrder,
        seed: Option<u64>,
    ) -> anyhow::Result<Requests> {
        let bad = |e: targets::TargetsError| bad_input!("--targets: {e}");
        let seed = seed.unwrap_or(DEFAULT_TARGETS_SEED);
        let order = match order {
            TargetsOrder::RoundRobin => Order::RoundRobin,
            TargetsOrder::Random => Order::Random { seed },
        };
        let count = list.len() as u32;
        // Targets::new names the line of a target that breaks a rule across targets (a second
        // origin), but not the file: it is this one.
        let in_file = |mut e: targets::TargetsError| {
            e.file = path.to_path_buf();
            bad(e)
        };
        let targets = Targets::new(list, order).map_err(in_file)?;
        Ok(Requests {
            list: requests,
            targets: Some(Arc::new(targets)),
            config: Some(TargetsConfig {
                file: path.display().to_string(),
                count,
                order: match order {
                    Order::RoundRobin => "round_robin".into(),
                    Order::Random { .. } => "random".into(),
                },
                seed: matches!(order, Order::Random { .. }).then_some(seed),
            }),
            grpc: Vec::new(),
        })
    }

    /// What the result names as the run's target: the URL, or the targets' origin.
    pub fn shown(&self) -> String {
        if let (Some(g), None) = (self.grpc.first(), &self.config) {
            return g.shown.clone();
        }
        if let Some(g) = self.grpc.first() {
            // A targets file of calls: the server, without any one call's method.
            let server = g.shown.strip_suffix(g.call.path.as_str());
            return server.unwrap_or(&g.shown).to_string();
        }
        match &self.config {
            None => self.first().url.to_string(),
            Some(_) => self.first().url.origin().ascii_serialization(),
        }
    }
}

/// What a run sends, as a person describes it: one request (a URL with its method, headers and
/// body) or a targets file. A new kind of workload (what request i sends) adds its settings and
/// its reader here.
#[derive(Debug, Clone, Default)]
pub struct WorkloadSettings {
    /// The target, e.g. http://127.0.0.1:8080/api (or `url` in the --plan file).
    pub url: Option<String>,
    /// Many different requests instead of one URL: a file in vegeta's HTTP format or JSON
    /// Lines (see docs/targets.md). Request i sends a target chosen from i alone, and each
    /// label gets its own histograms.
    pub targets: Option<PathBuf>,
    /// With targets: take them in turn (weights interleaved), or at random by weight.
    pub targets_order: TargetsOrder,
    /// HTTP method (default: GET).
    pub method: Option<String>,
    /// Request headers, `("Name", "value")`.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Option<String>,
    /// Request body read from a file.
    pub body_file: Option<PathBuf>,
    /// Journeys instead of requests: a TOML journey file (docs/journeys.md). Journey i is due
    /// at the schedule's time i, and every step is timed from when it was due.
    pub journey: Option<PathBuf>,
    /// A gRPC call's proto, method and metadata (`grpc://` targets; `body` is its JSON).
    pub grpc: crate::grpc::GrpcSettings,
}

impl WorkloadSettings {
    /// Settings that only mean something beside another.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.targets_order != TargetsOrder::RoundRobin && self.targets.is_none() {
            return Err(bad_input!(
                "--targets-order: only with --targets FILE (one URL has nothing to order)"
            ));
        }
        if !self.is_grpc() {
            self.targets_alone()?;
            return self.grpc.check_unused();
        }
        let http_only = [
            (
                self.method.is_some(),
                "--method: a gRPC call is always a POST; drop it",
            ),
            (
                !self.headers.is_empty(),
                "--header: a gRPC call carries metadata; use -m 'key: value'",
            ),
            (
                self.body_file.is_some(),
                "--body-file: give a gRPC call's message as -d JSON",
            ),
            (
                self.targets.is_some() && self.grpc.call.is_some(),
                "--call: with --targets, each line of the file names its call; drop --call",
            ),
            (
                self.targets.is_some() && self.body.is_some(),
                "-d: with --targets, each line of the file gives its call's message as \"data\"; drop -d",
            ),
            (
                self.targets.is_some() && !self.grpc.metadata.is_empty(),
                "--metadata: with --targets, each line of the file gives its call's \"metadata\"; drop -m",
            ),
        ];
        match http_only.into_iter().find(|(given, _)| *given) {
            Some((_, why)) => Err(bad_input!("{why}")),
            None => Ok(()),
        }
    }

    /// An HTTP targets file carries each request's URL and body: beside it, a URL or `-d` has
    /// no place (a gRPC server's URL does: its file holds calls).
    fn targets_alone(&self) -> anyhow::Result<()> {
        match (&self.targets, &self.url, &self.body) {
            (Some(_), Some(url), _) => Err(bad_input!(
                "URL: {url:?} beside --targets: each target names its URL; give one or the other (a grpc:// server takes a --targets file of calls)"
            )),
            (Some(_), None, Some(_)) => Err(bad_input!(
                "--body: each target carries its own body; drop it"
            )),
            _ => Ok(()),
        }
    }

    /// Whether the target is a gRPC server (`grpc://` or `grpcs://`).
    pub fn is_grpc(&self) -> bool {
        self.url.as_deref().is_some_and(crate::grpc::is_grpc_url)
    }

    /// What is sent, read and checked; `seed` orders random targets. With journeys, the one
    /// request is to the journey file's origin: what the check before the run connects to. A
    /// gRPC call tells the server `timeout` as its deadline; without a `.proto`, the server is
    /// asked for its descriptors over TLS as `reach` allows (its trust, and the name its
    /// certificate is checked against).
    pub fn requests(
        &self,
        seed: Option<u64>,
        journeys: Option<&crate::journeys::FileScript>,
        timeout: Duration,
        reach: (&Trust, Option<&TlsServerName>),
    ) -> anyhow::Result<Requests> {
        if let (Some(url), true, Some(path)) = (&self.url, self.is_grpc(), &self.targets) {
            let (order, settings) = (self.targets_order, &self.grpc);
            return Requests::from_grpc_file(path, url, settings, (timeout, reach), order, seed);
        }
        if let (Some(url), true) = (&self.url, self.is_grpc()) {
            let target = self
                .grpc
                .target(url, self.body.as_deref(), timeout, reach)?;
            return Ok(Requests {
                grpc: vec![target.clone()],
                ..Requests::one(target.call.request())
            });
        }
        if let Some(script) = journeys {
            return Ok(Requests::one(HttpRequest {
                url: script.file().origin().clone(),
                method: "GET".into(),
                headers: Vec::new(),
                body: Vec::new(),
            }));
        }
        match &self.targets {
            Some(path) => Requests::from_file(path, self.targets_order, seed),
            None => Ok(Requests::one(self.request()?)),
        }
    }

    /// The journey file, read and checked (`--journey`); its choices are seeded by `seed`.
    /// A bad file is one line, `FILE:LINE: problem`.
    pub fn journeys(&self, seed: u64) -> anyhow::Result<Option<crate::journeys::FileScript>> {
        let Some(path) = &self.journey else {
            return Ok(None);
        };
        let file =
            sojourn_core::journey::JourneyFile::from_path(path).map_err(|e| bad_input!("{e}"))?;
        Ok(Some(crate::journeys::FileScript::new(file, seed)))
    }

    /// The URL, method, headers and body, checked.
    fn request(&self) -> anyhow::Result<HttpRequest> {
        let a = self;
        let text = a.url.as_deref().ok_or_else(|| {
            bad_input!(
                "URL: required; give it on the command line or as url = \"…\" in the --plan file"
            )
        })?;
        if let Some(guess) = sojourn_core::targets::with_http_scheme(text) {
            return Err(bad_input!(
                "URL: {text:?} has no scheme; write {guess} (or https:// for TLS)"
            ));
        }
        let url = Url::parse(text).map_err(|e| {
            bad_input!(
                "URL: {text:?} is not a valid URL ({e}); expected e.g. http://127.0.0.1:8080/api"
            )
        })?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(bad_input!(
                "URL: scheme {:?} is not supported; use http:// or https://",
                url.scheme()
            ));
        }
        let given = a.method.as_deref().unwrap_or("GET");
        let method = given.to_ascii_uppercase();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(bad_input!(
                "--method: {given:?} is not an HTTP method; expected e.g. GET or POST"
            ));
        }
        let body = match (&a.body, &a.body_file) {
            (Some(b), _) => b.clone().into_bytes(),
            (None, Some(path)) => std::fs::read(path)
                .map_err(|e| bad_input!("--body-file: cannot read {}: {e}", path.display()))?,
            (None, None) => Vec::new(),
        };
        Ok(HttpRequest {
            url,
            method,
            headers: a.headers.clone(),
            body,
        })
    }
}

/// How to reach the target, as a person describes it: the protocol, its settings, and which
/// certificates an https target may present. A new protocol's settings and checks go here,
/// beside its registry line.
#[derive(Debug, Clone, Default)]
pub struct ProtocolSettings {
    /// Speak HTTP/2: ALPN h2 over TLS for https://, prior-knowledge h2c for http://.
    pub http2: bool,
    /// With HTTP/2: the most concurrent streams per connection (default: what the server
    /// advertises, up to [`sojourn_engine::http2::MAX_STREAMS`]).
    pub streams: Option<usize>,
    /// Skip TLS certificate verification (self-signed test servers).
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file, instead of the public roots.
    pub cacert: Option<PathBuf>,
    /// Check a TLS target's certificate against this name, and send it as SNI, instead of the
    /// URL's host (`--tls-server-name`).
    pub tls_server_name: Option<String>,
}

impl ProtocolSettings {
    /// The protocol, checked: settings that belong to another protocol are named. gRPC
    /// (`grpc`: the target is a gRPC server) is always HTTP/2.
    pub fn protocol(&self, grpc: bool) -> anyhow::Result<Protocol> {
        if grpc {
            return Ok(Protocol::Grpc {
                streams: self.streams,
            });
        }
        if self.streams.is_some() && !self.http2 {
            return Err(bad_input!(
                "--streams: only with --http2 (HTTP/1.1 carries one request per connection)"
            ));
        }
        Ok(match self.http2 {
            true => Protocol::Http2 {
                streams: self.streams,
            },
            false => Protocol::Http1,
        })
    }

    /// Which certificates an https target may present.
    pub fn trust(&self) -> anyhow::Result<Trust> {
        Ok(match &self.cacert {
            Some(path) => Trust::from_pem_file(path).map_err(|e| bad_input!("--cacert: {e}"))?,
            None if self.insecure => Trust::AnyCertificate,
            None => Trust::PublicRoots,
        })
    }

    /// The name a TLS target's certificate is checked against (`--tls-server-name`), checked:
    /// a DNS name or an IP address, and only beside a TLS target (`tls`: an https:// or
    /// grpcs:// `url`), since a plaintext one has no certificate to check it against.
    pub fn server_name(&self, url: &str, tls: bool) -> anyhow::Result<Option<TlsServerName>> {
        let Some(name) = &self.tls_server_name else {
            return Ok(None);
        };
        if !tls {
            return Err(bad_input!(
                "--tls-server-name: only with a TLS target (https:// or grpcs://); {url} is \
                 plaintext and has no certificate to check the name against"
            ));
        }
        TlsServerName::parse(name).map(Some).map_err(|e| {
            bad_input!(
                "--tls-server-name: {e}; give the name the server's certificate is for, \
                 e.g. --tls-server-name api.example.com"
            )
        })
    }

    /// The open loop's default pool over this protocol (gRPC's is HTTP/2's).
    pub fn open_connections(&self, grpc: bool) -> usize {
        match self.http2 || grpc {
            true => crate::defaults::HTTP2_CONNECTIONS,
            false => crate::defaults::OPEN_CONNECTIONS,
        }
    }
}

/// The protocol asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1.
    Http1,
    /// HTTP/2, with at most this many streams per connection (`None`: what the server
    /// advertises, up to [`sojourn_engine::http2::MAX_STREAMS`]).
    Http2 {
        /// Streams per connection asked for.
        streams: Option<usize>,
    },
    /// gRPC calls, over HTTP/2 as [`Protocol::Http2`].
    Grpc {
        /// Streams per connection asked for.
        streams: Option<usize>,
    },
}

/// The transport registry: one line per protocol's engine transport. It makes
/// [`AnyTransport`] and [`AnyConnection`], which one run path drives whatever the protocol.
/// Adding a protocol adds a line here, a [`Protocol`] variant, its arm in [`connectable`] and in
/// [`AnyTransport::streams`], and its flag.
macro_rules! transports {
    ($($(#[$doc:meta])* $name:ident($transport:ty),)+) => {
        /// A transport of any registered protocol.
        #[derive(Clone)]
        pub enum AnyTransport {
            $($(#[$doc])* $name($transport),)+
        }

        /// A connection of any registered protocol.
        pub enum AnyConnection {
            $($(#[$doc])* $name(<$transport as Transport>::Conn),)+
        }

        $(impl From<$transport> for AnyTransport {
            fn from(t: $transport) -> Self {
                AnyTransport::$name(t)
            }
        })+

        impl Transport for AnyTransport {
            type Conn = AnyConnection;

            async fn connect(&self) -> Result<AnyConnection, sojourn_core::FailureClass> {
                Ok(match self {
                    $(AnyTransport::$name(t) => AnyConnection::$name(t.connect().await?),)+
                })
            }

            fn encode(
                &self,
                req: &sojourn_engine::StepRequest,
                out: &mut Vec<u8>,
            ) -> Result<(), sojourn_core::FailureClass> {
                match self {
                    $(AnyTransport::$name(t) => t.encode(req, out),)+
                }
            }
        }

        impl Connection for AnyConnection {
            async fn exchange(
                &mut self,
                ex: &Exchange,
            ) -> Result<sojourn_core::Outcome, ExchangeError> {
                match self {
                    $(AnyConnection::$name(c) => c.exchange(ex).await,)+
                }
            }

            fn reusable(&self) -> bool {
                match self {
                    $(AnyConnection::$name(c) => c.reusable(),)+
                }
            }
        }
    };
}

transports! {
    /// HTTP/1.1, one request per connection at a time.
    Http1(HttpTransport),
    /// HTTP/2 (h2 over TLS, h2c in the clear), many streams per connection.
    Http2(Http2Transport),
}

impl AnyTransport {
    /// Stream slots per connection: 1 for HTTP/1.1.
    pub fn streams(&self) -> usize {
        match self {
            AnyTransport::Http1(_) => 1,
            AnyTransport::Http2(t) => t.streams(),
        }
    }

    /// `h2`, `h2c`, or `None` for HTTP/1.1: as the result records it.
    pub fn protocol_name(&self, url: &url::Url) -> Option<String> {
        match self {
            AnyTransport::Http1(_) => None,
            AnyTransport::Http2(_) if url.scheme() == "https" => Some("h2".into()),
            AnyTransport::Http2(_) => Some("h2c".into()),
        }
    }
}

/// Resolves the target and opens one connection, so an unreachable host is a clear error
/// before the run rather than a run full of connect failures. Over HTTP/2 it also learns the
/// server's stream limit, and lowers `--streams` to it (saying so).
pub async fn connectable(
    requests: &Requests,
    trust: &Trust,
    server_name: Option<&TlsServerName>,
    protocol: Protocol,
    timeout: Duration,
) -> anyhow::Result<AnyTransport> {
    let url = requests.shown();
    let wait = timeout.min(Duration::from_secs(5));
    let target_error = |e: sojourn_engine::TargetError| match e {
        sojourn_engine::TargetError::TrustAnchor(_) => bad_input!("--cacert: {e}"),
        _ => bad_input!("URL: {url}: {e}"),
    };
    match protocol {
        Protocol::Http1 => {
            let t = HttpTransport::many(&requests.list, trust)
                .await
                .map_err(target_error)?;
            let t = match server_name {
                Some(name) => t.with_server_name(name),
                None => t,
            };
            let probe = tokio::time::timeout(wait, t.open()).await;
            explain(probe.map(|r| r.map(drop)), &url, t.addr())?;
            Ok(AnyTransport::Http1(t))
        }
        Protocol::Http2 { streams } => {
            let asked = streams.unwrap_or(sojourn_engine::http2::MAX_STREAMS);
            let t = Http2Transport::many(&requests.list, trust, asked)
                .await
                .map_err(target_error)?;
            fit_streams(renamed(t, server_name), streams, &url, wait).await
        }
        Protocol::Grpc { streams } => {
            let asked = streams.unwrap_or(sojourn_engine::http2::MAX_STREAMS);
            let calls: Vec<_> = requests.grpc.iter().map(|g| g.call.clone()).collect();
            let streaming: Vec<_> = requests.grpc.iter().map(|g| g.streaming).collect();
            let t = sojourn_engine::Http2Transport::grpc(&calls, &streaming, trust, asked)
                .await
                .map_err(target_error)?;
            fit_streams(renamed(t, server_name), streams, &url, wait).await
        }
    }
}

/// `t` checking certificates against `name`, when one was given.
fn renamed(t: Http2Transport, name: Option<&TlsServerName>) -> Http2Transport {
    match name {
        Some(name) => t.with_server_name(name),
        None => t,
    }
}

/// Opens one HTTP/2 connection to learn the server's stream limit, and lowers the streams
/// asked for to it (saying so when they were asked for explicitly).
async fn fit_streams(
    t: Http2Transport,
    streams: Option<usize>,
    url: &str,
    wait: Duration,
) -> anyhow::Result<AnyTransport> {
    let asked = t.streams();
    let probe = tokio::time::timeout(wait, t.probe()).await;
    let settings = explain(probe, url, t.addr())?;
    let allowed = settings.max_concurrent_streams.unwrap_or(usize::MAX);
    if let (Some(asked), true) = (streams, allowed < asked) {
        eprintln!(
            "note: {url} allows {allowed} concurrent streams per connection \
             (SETTINGS_MAX_CONCURRENT_STREAMS); --streams {asked} is lowered to {allowed}"
        );
    }
    Ok(AnyTransport::Http2(t.with_streams(asked.min(allowed))))
}

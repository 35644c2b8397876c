//! `grpc://HOST:PORT` targets: the call's flags (`--proto`, `--import-path`, `--call`,
//! `-d`, `-m`) checked into the one call the run sends, every problem one line naming the
//! flag. The engine's [`sojourn_engine::grpc`] carries it over the HTTP/2 transport.
use std::path::{Path, PathBuf};
use std::time::Duration;

use sojourn_engine::grpc::GrpcCall;
use sojourn_engine::grpc_proto::MethodDescriptor;
use sojourn_engine::grpc_proto::{self, Proto, ProtoError};
use sojourn_engine::grpc_reflect::{self, ReflectError};
use sojourn_engine::{Http2Transport, HttpRequest, TargetError, TlsServerName, Trust};
use url::Url;

use crate::bad_input;

/// What a gRPC call is made of, as a person gives it.
#[derive(Debug, Clone, Default)]
pub struct GrpcSettings {
    /// The `.proto` file that declares the service (`--proto`).
    pub proto: Option<PathBuf>,
    /// Where its imports are looked up (`--import-path`), before the file's own directory.
    pub import_paths: Vec<PathBuf>,
    /// The method, `pkg.Service/Method` (`--call`).
    pub call: Option<String>,
    /// Metadata, each `key: value` as typed (`-m`).
    pub metadata: Vec<String>,
}

pub use crate::reach::is_grpc_url;

/// `-d` on `compare` and `sweep`, whose HTTP requests are bodiless GETs: there it is only a
/// gRPC call's message.
pub fn message_only_for_grpc(url: &str, body: Option<&str>) -> anyhow::Result<()> {
    match body.is_some() && !is_grpc_url(url) {
        true => Err(bad_input!(
            "-d: only with a grpc://HOST:PORT (or grpcs://) target, as the call's message; this command sends HTTP GETs without a body"
        )),
        false => Ok(()),
    }
}

/// A gRPC target, checked: the call, and the target as the result names it
/// (`grpc://HOST:PORT/pkg.Service/Method`).
#[derive(Debug, Clone)]
pub struct GrpcTarget {
    /// What the run sends.
    pub call: GrpcCall,
    /// The target as the result names it.
    pub shown: String,
    /// A server-streaming method: its answer's messages are counted, the first one timed.
    pub streaming: bool,
}

impl GrpcTarget {
    /// A call of `method` on the server at `url` (whose HTTP/2 origin is `origin`).
    pub(crate) fn new(
        url: &str,
        origin: Url,
        method: &MethodDescriptor,
        message: Vec<u8>,
        metadata: Vec<(String, String)>,
        timeout: Duration,
    ) -> GrpcTarget {
        let path = grpc_proto::path(method);
        GrpcTarget {
            shown: format!("{}{}", url.trim_end_matches('/'), path),
            call: GrpcCall {
                origin,
                path,
                metadata,
                message,
                timeout,
            },
            streaming: method.is_server_streaming(),
        }
    }
}

impl GrpcSettings {
    /// Whether any gRPC flag was given.
    pub fn given(&self) -> bool {
        self.proto.is_some()
            || self.call.is_some()
            || !self.import_paths.is_empty()
            || !self.metadata.is_empty()
    }

    /// gRPC flags are refused beside an HTTP target.
    pub fn check_unused(&self) -> anyhow::Result<()> {
        let flag = [
            (self.proto.is_some(), "--proto"),
            (self.call.is_some(), "--call"),
            (!self.import_paths.is_empty(), "--import-path"),
            (!self.metadata.is_empty(), "--metadata"),
        ]
        .into_iter()
        .find_map(|(given, flag)| given.then_some(flag));
        match flag {
            Some(flag) => Err(bad_input!(
                "{flag}: only with a grpc://HOST:PORT (or grpcs://) target"
            )),
            None => Ok(()),
        }
    }

    /// The call to `url` with the JSON message `data` (`-d`), told `timeout` as its deadline.
    /// Without `--proto`, the server is asked for the call's descriptors by server reflection,
    /// over TLS as `reach` allows (its trust, and the name its certificate is checked against).
    pub fn target(
        &self,
        url: &str,
        data: Option<&str>,
        timeout: Duration,
        reach: (&Trust, Option<&TlsServerName>),
    ) -> anyhow::Result<GrpcTarget> {
        let origin = origin(url)?;
        let proto = match &self.proto {
            Some(file) => self.compiled(file)?,
            None => reflected(url, &origin, self.call.as_deref(), reach)?,
        };
        let call = self.call.as_deref().ok_or_else(|| {
            bad_input!(
                "--call: required with a grpc:// target, e.g. --call helloworld.Greeter/SayHello; the proto has {}",
                proto.methods().join(", ")
            )
        })?;
        let method = proto.method(call).map_err(|e| bad_input!("--call: {e}"))?;
        let message = grpc_proto::encode_json(&method, data.unwrap_or("{}"))
            .map_err(|e| bad_input!("-d: {e}"))?;
        let metadata = self.metadata()?;
        Ok(GrpcTarget::new(
            url, origin, &method, message, metadata, timeout,
        ))
    }

    /// The `--proto` file, compiled.
    pub(crate) fn compiled(&self, file: &Path) -> anyhow::Result<Proto> {
        Proto::compile(file, &self.import_paths).map_err(|e| match e {
            ProtoError::Read { .. } => bad_input!("--proto: {e}"),
            _ => bad_input!(
                "--proto: {} does not compile: {}",
                file.display(),
                one_line(&e)
            ),
        })
    }

    /// `-m key: value`, checked: gRPC metadata keys are lower-case header names, and the
    /// protocol's own (`grpc-*`, `content-type`, `te`) are not the user's to set.
    fn metadata(&self) -> anyhow::Result<Vec<(String, String)>> {
        self.metadata
            .iter()
            .map(|m| metadatum(m).map_err(|why| bad_input!("--metadata: {why}")))
            .collect()
    }
}

/// How long asking a server for its descriptors may take, connecting included.
const REFLECTION_WAIT: Duration = Duration::from_secs(5);

/// The call's descriptors, asked of the server by reflection (no `--proto`). It runs before
/// the run's runtime exists, and perhaps inside another's (a sweep's steps), so on a thread
/// and a runtime of its own.
pub(crate) fn reflected(
    url: &str,
    origin: &Url,
    call: Option<&str>,
    (trust, server_name): (&Trust, Option<&TlsServerName>),
) -> anyhow::Result<Proto> {
    let call = call.ok_or_else(|| {
        bad_input!(
            "--call: required with a grpc:// target, e.g. --call helloworld.Greeter/SayHello (or give --proto FILE to have its methods listed)"
        )
    })?;
    let (service, _) = grpc_proto::split_call(call).map_err(|e| bad_input!("--call: {e}"))?;
    let ask = async {
        let request = HttpRequest {
            url: origin.clone(),
            method: "POST".into(),
            headers: Vec::new(),
            body: Vec::new(),
        };
        let transport = Http2Transport::many(&[request], trust, 1)
            .await
            .map_err(|e| match e {
                TargetError::TrustAnchor(_) => bad_input!("--cacert: {e}"),
                _ => bad_input!("URL: {url}: {e}"),
            })?;
        // Reflection checks the certificate against the name the run will use.
        let transport = match server_name {
            Some(name) => transport.with_server_name(name),
            None => transport,
        };
        let asked = grpc_reflect::proto(&transport, origin.as_str(), service);
        let asked = tokio::time::timeout(REFLECTION_WAIT, asked).await;
        reflection_failure(asked, url, service, transport.addr())
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| anyhow::anyhow!("cannot start a runtime to ask {url}: {e}"))?
                .block_on(ask)
        })
        .join()
        .expect("asking a server for its descriptors does not panic")
    })
}

/// Reflection's failure in words a user can act on: a server that cannot be reached is told
/// as the run's check before it tells it.
fn reflection_failure(
    asked: Result<Result<Proto, ReflectError>, tokio::time::error::Elapsed>,
    url: &str,
    service: &str,
    addr: std::net::SocketAddr,
) -> anyhow::Result<Proto> {
    let e = match asked {
        Ok(Ok(proto)) => return Ok(proto),
        Ok(Err(ReflectError::Connect(e))) => return crate::reach::explain(Ok(Err(e)), url, addr),
        Ok(Err(e)) => e,
        Err(elapsed) => return crate::reach::explain(Err(elapsed), url, addr),
    };
    Err(match e {
        ReflectError::Unsupported => bad_input!(
            "--proto: required: {url} does not offer server reflection (grpc.reflection.v1 and v1alpha answered UNIMPLEMENTED), so the call's descriptors cannot be asked of it; give the service's .proto file with --proto FILE"
        ),
        ReflectError::UnknownService { .. } => bad_input!("--call: {url}: {e}"),
        _ => bad_input!(
            "--proto: asking {url} for the descriptors of {service} by server reflection failed: {e}; give the service's .proto file with --proto FILE"
        ),
    })
}

/// One `key: value`, checked; the problem names the text, not the flag (a targets file has
/// its own place to name).
pub(crate) fn metadatum(text: &str) -> Result<(String, String), String> {
    let bad = |why: &str| format!("{text:?} {why}");
    let (key, value) = text
        .split_once(':')
        .ok_or_else(|| bad("is not `key: value`; write e.g. -m 'authorization: Bearer TOKEN'"))?;
    let key = key.trim().to_ascii_lowercase();
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b);
    if key.is_empty() || !key.bytes().all(allowed) {
        return Err(bad(
            "has a key that is not a metadata key (letters, digits, - _ . only)",
        ));
    }
    if key.starts_with("grpc-") || key == "content-type" || key == "te" {
        return Err(bad("sets a key gRPC itself sends; choose another key"));
    }
    let value = value.trim();
    if !value.bytes().all(|b| (b' '..=b'~').contains(&b)) {
        return Err(bad(
            "has a value that is not printable ASCII; binary metadata goes under a key ending in -bin, base64-encoded",
        ));
    }
    Ok((key, value.to_string()))
}

/// `grpc://HOST:PORT` as the HTTP/2 origin that carries it (`grpcs://` over TLS).
pub(crate) fn origin(text: &str) -> anyhow::Result<Url> {
    let url = Url::parse(text).map_err(|e| {
        bad_input!("URL: {text:?} is not a valid URL ({e}); expected e.g. grpc://127.0.0.1:50051")
    })?;
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| {
        bad_input!("URL: {text:?} has no host; expected e.g. grpc://127.0.0.1:50051")
    })?;
    let port = url.port().ok_or_else(|| {
        bad_input!(
            "URL: {text:?} has no port; gRPC has no default port, write e.g. grpc://{host}:50051"
        )
    })?;
    if !matches!(url.path(), "" | "/") || url.query().is_some() {
        return Err(bad_input!(
            "URL: {text:?} has a path; give only grpc://HOST:PORT and the method as --call pkg.Service/Method"
        ));
    }
    let scheme = match url.scheme() {
        "grpcs" => "https",
        _ => "http",
    };
    let origin = format!("{scheme}://{host}:{port}");
    Url::parse(&origin).map_err(|e| bad_input!("URL: {text:?}: {e}"))
}

/// A compiler's message on one line: the exit-2 contract is one line per problem.
fn one_line(e: &ProtoError) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_origin_keeps_host_and_port_and_tls_follows_the_scheme() {
        assert_eq!(
            origin("grpc://127.0.0.1:50051").unwrap().as_str(),
            "http://127.0.0.1:50051/"
        );
        assert_eq!(
            origin("grpcs://localhost:443/").unwrap().as_str(),
            "https://localhost/"
        );
        let e = origin("grpc://127.0.0.1").unwrap_err().to_string();
        assert!(e.contains("no port"), "{e}");
        let e = origin("grpc://127.0.0.1:1/helloworld.Greeter/SayHello").unwrap_err();
        assert!(e.to_string().contains("--call"), "{e}");
    }

    #[test]
    fn metadata_is_key_colon_value_with_a_key_of_our_own() {
        assert_eq!(
            metadatum("Authorization: Bearer x").unwrap(),
            ("authorization".into(), "Bearer x".into())
        );
        for bad in [
            "no colon",
            ": v",
            "a b: v",
            "grpc-timeout: 1S",
            "te: trailers",
        ] {
            assert!(metadatum(bad).is_err(), "{bad}");
        }
    }
}

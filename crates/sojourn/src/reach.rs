//! Why a target could not be reached, in words a user can act on: the check before a run
//! (`crate::transport::connectable`) and the server reflection asked before it
//! (`crate::grpc`) tell an unreachable server the same way.
use sojourn_engine::ConnectError;

use crate::bad_input;

/// Whether a target URL names a gRPC server.
pub fn is_grpc_url(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower.starts_with("grpc://") || lower.starts_with("grpcs://")
}

/// The probe's failure in words a user can act on.
pub(crate) fn explain<T>(
    probe: Result<Result<T, ConnectError>, tokio::time::error::Elapsed>,
    url: &str,
    addr: std::net::SocketAddr,
) -> anyhow::Result<T> {
    match probe {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) if e.not_tls() => Err(bad_input!(
            "URL: {url} ({addr}) answered the TLS handshake with something that is not TLS: \
             the server most likely speaks plain HTTP on this port; use {} (--insecure would \
             not help)",
            as_plain_http(url)
        )),
        Ok(Err(e)) if e.class == sojourn_core::FailureClass::Tls => Err(bad_input!(
            "URL: TLS handshake with {url} ({addr}): {e}; for a private CA give \
             --cacert FILE, for a self-signed test server --insecure, for a certificate \
             issued to another name --tls-server-name NAME"
        )),
        Ok(Err(e)) if e.class == sojourn_core::FailureClass::Protocol && is_grpc_url(url) => {
            Err(bad_input!(
                "URL: {url} ({addr}) did not speak HTTP/2, which gRPC runs on: {e}; is it a gRPC \
                 server, and does it want grpc:// (plaintext) rather than grpcs:// (TLS) or the \
                 other way round?"
            ))
        }
        Ok(Err(e)) if e.class == sojourn_core::FailureClass::Protocol => Err(bad_input!(
            "--http2: {url} ({addr}) did not speak HTTP/2: {e}; for http:// URLs the server \
             must accept HTTP/2 with prior knowledge (h2c); drop --http2 for HTTP/1.1"
        )),
        Ok(Err(e)) => Err(bad_input!(
            "URL: cannot connect to {url} ({addr}): {e}; is the server running and the port right?"
        )),
        Err(_) => Err(bad_input!(
            "URL: connecting to {url} ({addr}) timed out: is the host reachable?"
        )),
    }
}

/// `https://host:port/…` as `http://host:port/…`, keeping the port: the one that answered in
/// plain HTTP.
fn as_plain_http(url: &str) -> String {
    // A gRPC target's method is its --call, not part of the URL to give.
    if let (true, Ok(u)) = (is_grpc_url(url), url::Url::parse(url)) {
        let (host, port) = (
            u.host_str().unwrap_or_default(),
            u.port().unwrap_or_default(),
        );
        return format!("grpc://{host}:{port}");
    }
    match url::Url::parse(url) {
        Ok(u) => {
            let port = u
                .port_or_known_default()
                .map_or(String::new(), |p| format!(":{p}"));
            let host = u.host_str().unwrap_or_default();
            let rest = &u[url::Position::BeforePath..];
            format!("http://{host}{port}{rest}")
        }
        Err(_) => url.replacen("https://", "http://", 1),
    }
}

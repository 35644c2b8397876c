//! A call's descriptors asked of the server by gRPC server reflection, when no `.proto` file is
//! given: `file_containing_symbol` for the service, then `file_by_filename` for each import not
//! yet given, all built into one [`Proto`]. The reflection messages are the gRPC project's own
//! (`tonic-reflection`'s generated types); they are carried over one HTTP/2 connection opened
//! with the run's TLS settings ([`Http2Transport::connection`]), one call per request, each
//! a request message and the end of the stream.
//!
//! `grpc.reflection.v1` is asked first, and `v1alpha` (the same messages under an older name)
//! when the server answers `UNIMPLEMENTED`.
use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use h2::client::SendRequest;
use prost::Message;
use prost_types::FileDescriptorProto;
use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
use tonic_reflection::pb::v1::{ServerReflectionRequest, ServerReflectionResponse};

use crate::grpc_proto::{Proto, ProtoError};
use crate::http::ConnectError;
use crate::Http2Transport;

const V1: &str = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
const V1ALPHA: &str = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
/// gRPC's UNIMPLEMENTED: the server has no such service (here, no reflection).
const UNIMPLEMENTED: u32 = 12;
/// gRPC's NOT_FOUND, as a reflection error response: no such symbol.
const NOT_FOUND: i32 = 5;

/// Why the server's descriptors could not be had.
#[derive(Debug, thiserror::Error)]
pub enum ReflectError {
    /// The connection could not be opened (its class says how).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// Neither reflection service is there.
    #[error("the server does not offer server reflection (grpc.reflection.v1 and v1alpha both answered UNIMPLEMENTED)")]
    Unsupported,
    /// The server does not know the service.
    #[error("the server has no service {service:?}; it lists {}", list(known))]
    UnknownService { service: String, known: Vec<String> },
    /// The reflection call failed, or answered something unreadable.
    #[error("{0}")]
    Failed(String),
    /// The descriptors did not make a pool.
    #[error("its descriptors do not fit together: {0}")]
    Proto(#[from] ProtoError),
}

fn list(known: &[String]) -> String {
    match known.is_empty() {
        true => "no services".into(),
        false => known.join(", "),
    }
}

/// The descriptors of `service` (and what its file imports), asked of the server that
/// `transport` reaches at `origin` (`http://HOST:PORT`, or `https://` over TLS).
pub async fn proto(
    transport: &Http2Transport,
    origin: &str,
    service: &str,
) -> Result<Proto, ReflectError> {
    let mut client = Client {
        send: transport.connection().await?,
        origin: origin.trim_end_matches('/').to_string(),
        path: V1,
    };
    let first = match client.ask(symbol(service)).await {
        Err(Asked::Status(UNIMPLEMENTED, _)) => {
            client.path = V1ALPHA;
            client.ask(symbol(service)).await
        }
        other => other,
    };
    let first = match first {
        Err(Asked::Status(UNIMPLEMENTED, _)) => return Err(ReflectError::Unsupported),
        other => other.map_err(Asked::failed)?,
    };
    let mut files = BTreeMap::new();
    match first {
        MessageResponse::ErrorResponse(e) if e.error_code == NOT_FOUND => {
            let known = client.services().await?;
            return Err(ReflectError::UnknownService {
                service: service.into(),
                known,
            });
        }
        other => add(&mut files, other)?,
    }
    while let Some(name) = missing(&files) {
        let answer = client
            .ask(MessageRequest::FileByFilename(name.clone()))
            .await;
        add(&mut files, answer.map_err(Asked::failed)?)?;
        if !files.contains_key(&name) {
            return Err(ReflectError::Failed(format!(
                "the server did not give {name:?}, which its files import"
            )));
        }
    }
    Ok(Proto::from_files(files.into_values().collect())?)
}

fn symbol(service: &str) -> MessageRequest {
    MessageRequest::FileContainingSymbol(service.to_string())
}

/// The first import named by a file that is not among `files`.
fn missing(files: &BTreeMap<String, FileDescriptorProto>) -> Option<String> {
    files
        .values()
        .flat_map(|f| f.dependency.iter())
        .find(|d| !files.contains_key(*d))
        .cloned()
}

/// Adds the files of a file descriptor answer; any other answer is a failure.
fn add(
    files: &mut BTreeMap<String, FileDescriptorProto>,
    answer: MessageResponse,
) -> Result<(), ReflectError> {
    let given = match answer {
        MessageResponse::FileDescriptorResponse(r) => r.file_descriptor_proto,
        MessageResponse::ErrorResponse(e) => {
            return Err(ReflectError::Failed(format!(
                "reflection answered error {}: {}",
                e.error_code, e.error_message
            )))
        }
        _ => {
            return Err(ReflectError::Failed(
                "reflection answered another question".into(),
            ))
        }
    };
    for bytes in given {
        let file = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| ReflectError::Failed(format!("a file descriptor does not decode: {e}")))?;
        files.insert(file.name().to_string(), file);
    }
    Ok(())
}

/// How one reflection call ended other than with an answer.
enum Asked {
    /// A gRPC status other than OK, with its message.
    Status(u32, String),
    /// Anything else that went wrong, in words.
    Broken(String),
}

impl Asked {
    fn failed(self) -> ReflectError {
        ReflectError::Failed(match self {
            Asked::Status(code, message) => {
                format!("reflection answered grpc-status {code}: {message}")
            }
            Asked::Broken(why) => why,
        })
    }
}

impl From<h2::Error> for Asked {
    fn from(e: h2::Error) -> Self {
        Asked::Broken(format!("the reflection call broke: {e}"))
    }
}

struct Client {
    send: SendRequest<Bytes>,
    origin: String,
    path: &'static str,
}

impl Client {
    /// The services the server lists.
    async fn services(&mut self) -> Result<Vec<String>, ReflectError> {
        let asked = self.ask(MessageRequest::ListServices(String::new())).await;
        match asked.map_err(Asked::failed)? {
            MessageResponse::ListServicesResponse(l) => {
                Ok(l.service.into_iter().map(|s| s.name).collect())
            }
            _ => Err(ReflectError::Failed(
                "reflection did not list the services".into(),
            )),
        }
    }

    /// One reflection request, in a call of its own, and its one answer.
    async fn ask(&mut self, request: MessageRequest) -> Result<MessageResponse, Asked> {
        let message = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(request),
        };
        let head = http::Request::post(format!("{}{}", self.origin, self.path))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .map_err(|e| Asked::Broken(e.to_string()))?;
        let mut send = self.send.clone().ready().await?;
        let (response, mut body) = send.send_request(head, false)?;
        body.send_data(crate::grpc::frame(&message.encode_to_vec()).into(), true)?;
        let (head, mut recv) = response.await?.into_parts();
        let mut data = BytesMut::new();
        while let Some(chunk) = recv.data().await {
            let chunk = chunk?;
            let _ = recv.flow_control().release_capacity(chunk.len());
            data.extend_from_slice(&chunk);
        }
        let trailers = recv.trailers().await?;
        if head.status != http::StatusCode::OK {
            return Err(Asked::Broken(format!(
                "reflection answered HTTP status {}",
                head.status
            )));
        }
        let field = |name: &str| {
            let value = trailers.as_ref().and_then(|t| t.get(name));
            let value = value.or_else(|| head.headers.get(name));
            value
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string()
        };
        match field("grpc-status").trim().parse::<u32>() {
            Ok(0) => {}
            Ok(code) => return Err(Asked::Status(code, field("grpc-message"))),
            Err(_) => {
                return Err(Asked::Broken(
                    "reflection answered without a grpc-status".into(),
                ))
            }
        }
        first_message(&data)
            .and_then(|m| ServerReflectionResponse::decode(m).ok())
            .and_then(|r| r.message_response)
            .ok_or_else(|| Asked::Broken("reflection answered no readable message".into()))
    }
}

/// The first length-prefixed message of a gRPC body, if it is whole and not compressed (none
/// was asked for).
fn first_message(body: &[u8]) -> Option<&[u8]> {
    let (&flag, rest) = body.split_first()?;
    let len = u32::from_be_bytes(rest.get(..4)?.try_into().ok()?) as usize;
    (flag == 0).then(|| rest.get(4..4 + len)).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_message_is_read_from_its_length_prefix() {
        let mut body = crate::grpc::frame(b"abc");
        body.extend_from_slice(&crate::grpc::frame(b"de"));
        assert_eq!(first_message(&body), Some(&b"abc"[..]));
        assert_eq!(first_message(&body[..6]), None, "cut short");
        let mut compressed = crate::grpc::frame(b"abc");
        compressed[0] = 1;
        assert_eq!(first_message(&compressed), None);
        assert_eq!(first_message(&[]), None);
    }

    #[test]
    fn an_import_not_yet_given_is_asked_for() {
        let file = |name: &str, deps: &[&str]| FileDescriptorProto {
            name: Some(name.into()),
            dependency: deps.iter().map(|d| d.to_string()).collect(),
            ..Default::default()
        };
        let mut files = BTreeMap::new();
        files.insert(
            "a.proto".to_string(),
            file("a.proto", &["b.proto", "c.proto"]),
        );
        files.insert("b.proto".to_string(), file("b.proto", &["c.proto"]));
        assert_eq!(missing(&files).as_deref(), Some("c.proto"));
        files.insert("c.proto".to_string(), file("c.proto", &[]));
        assert_eq!(missing(&files), None);
    }
}

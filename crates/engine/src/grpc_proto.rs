//! A gRPC call's message: the `.proto` file compiled in-process (`protox`, no `protoc`), the
//! method looked up by its name, and a JSON payload turned into the method's input message by
//! its descriptor (`prost-reflect`), encoded once for the run.
use std::path::{Path, PathBuf};

use prost::Message;
/// A method's descriptor, as [`Proto::method`] gives it.
pub use prost_reflect::MethodDescriptor;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor};

/// Why a call's message could not be made. Each names what was wrong in the user's terms.
#[derive(Debug, thiserror::Error)]
pub enum ProtoError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Compile(String),
    #[error("{call:?} is not SERVICE/METHOD; write it as pkg.Service/Method, e.g. helloworld.Greeter/SayHello")]
    CallSyntax { call: String },
    #[error("no method {call:?} in the proto; it has {}", list(known))]
    NoMethod { call: String, known: Vec<String> },
    #[error("{call} is {kind}; only unary and server-streaming methods are supported so far")]
    Streaming { call: String, kind: &'static str },
    #[error("does not fit {message}: {reason}")]
    Json { message: String, reason: String },
}

fn list(known: &[String]) -> String {
    match known.is_empty() {
        true => "no services".into(),
        false => known.join(", "),
    }
}

/// The services of a compiled `.proto` file (and what it imports).
#[derive(Debug, Clone)]
pub struct Proto {
    pool: DescriptorPool,
}

impl Proto {
    /// Compiles `file`, resolving its imports in `imports` and then in the file's own
    /// directory (where a lone file's imports usually live).
    pub fn compile(file: &Path, imports: &[PathBuf]) -> Result<Proto, ProtoError> {
        // protox reports a missing file as "not included"; say what really happened.
        std::fs::metadata(file).map_err(|source| ProtoError::Read {
            path: file.to_path_buf(),
            source,
        })?;
        let dir = file
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut includes = imports.to_vec();
        includes.push(dir.to_path_buf());
        let compile = |e: protox::Error| ProtoError::Compile(e.to_string());
        let mut compiler = protox::Compiler::new(&includes).map_err(compile)?;
        compiler.include_imports(true);
        compiler.open_file(file).map_err(compile)?;
        Ok(Proto {
            pool: compiler.descriptor_pool(),
        })
    }

    /// The descriptors a server gave by reflection, in any order: each file's imports must be
    /// among them.
    pub fn from_files(files: Vec<prost_types::FileDescriptorProto>) -> Result<Proto, ProtoError> {
        let mut pool = DescriptorPool::new();
        pool.add_file_descriptor_protos(files)
            .map_err(|e| ProtoError::Compile(e.to_string()))?;
        Ok(Proto { pool })
    }

    /// The method `pkg.Service/Method` (or `pkg.Service.Method`): unary or server streaming
    /// (the request is one message either way); client and bidirectional streaming are refused.
    pub fn method(&self, call: &str) -> Result<MethodDescriptor, ProtoError> {
        let (service, method) = split_call(call)?;
        let found = self
            .pool
            .get_service_by_name(service)
            .and_then(|s| s.methods().find(|m| m.name() == method));
        let m = found.ok_or_else(|| ProtoError::NoMethod {
            call: call.into(),
            known: self.methods(),
        })?;
        let kind = match (m.is_client_streaming(), m.is_server_streaming()) {
            (false, _) => return Ok(m),
            (true, true) => "bidirectional streaming",
            (true, false) => "client streaming",
        };
        Err(ProtoError::Streaming {
            call: call.into(),
            kind,
        })
    }

    /// Every method of every service, as `pkg.Service/Method`.
    pub fn methods(&self) -> Vec<String> {
        self.pool
            .services()
            .flat_map(|s| {
                let service = s.full_name().to_string();
                s.methods()
                    .map(move |m| format!("{service}/{}", m.name()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// `pkg.Service/Method` (or `pkg.Service.Method`) as the service's full name and the method's.
pub fn split_call(call: &str) -> Result<(&str, &str), ProtoError> {
    let (service, method) = call
        .rsplit_once('/')
        .or_else(|| call.rsplit_once('.'))
        .filter(|(s, m)| !s.trim_start_matches('/').is_empty() && !m.is_empty())
        .ok_or_else(|| ProtoError::CallSyntax { call: call.into() })?;
    Ok((service.trim_start_matches('/'), method))
}

/// The path a call is sent to: `/pkg.Service/Method`.
pub fn path(method: &MethodDescriptor) -> String {
    format!("/{}/{}", method.parent_service().full_name(), method.name())
}

/// `json` as the method's input message, encoded. Unknown fields are refused (a misspelt field
/// would otherwise be sent as nothing); the error names the field.
pub fn encode_json(method: &MethodDescriptor, json: &str) -> Result<Vec<u8>, ProtoError> {
    let desc = method.input();
    let bad = |e: serde_json::Error| {
        let field = serde_json::from_str(json)
            .ok()
            .and_then(|v| culprit(&desc, &v));
        ProtoError::Json {
            message: desc.full_name().to_string(),
            reason: match field {
                Some(f) => format!("field {f:?}: {e}"),
                None => e.to_string(),
            },
        }
    };
    let mut de = serde_json::Deserializer::from_str(json);
    let message = DynamicMessage::deserialize(desc.clone(), &mut de).map_err(bad)?;
    de.end().map_err(bad)?;
    Ok(message.encode_to_vec())
}

/// The field (dotted, into nested messages) whose value does not fit, found by trying each
/// field alone: a type error from the whole message does not say which field it was in.
fn culprit(desc: &MessageDescriptor, value: &serde_json::Value) -> Option<String> {
    let fields = value.as_object()?;
    let (key, v) = fields.iter().find(|(key, v)| {
        let alone = serde_json::json!({ key.as_str(): v });
        DynamicMessage::deserialize(desc.clone(), alone).is_err()
    })?;
    let nested = desc
        .get_field_by_json_name(key)
        .or_else(|| desc.get_field_by_name(key))
        .and_then(|f| f.kind().as_message().cloned())
        .and_then(|m| culprit(&m, v));
    Some(match nested {
        Some(inner) => format!("{key}.{inner}"),
        None => key.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GREETER: &str = r#"
syntax = "proto3";
package helloworld;
service Greeter {
  rpc SayHello (HelloRequest) returns (HelloReply) {}
  rpc Chat (stream HelloRequest) returns (stream HelloReply) {}
  rpc Gather (stream HelloRequest) returns (HelloReply) {}
  rpc Replies (HelloRequest) returns (stream HelloReply) {}
}
message HelloRequest { string name = 1; int32 times = 2; HelloRequest inner = 3; }
message HelloReply { string message = 1; }
"#;

    fn greeter() -> (tempfile::TempDir, Proto) {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("greeter.proto");
        std::fs::write(&file, GREETER).unwrap();
        let proto = Proto::compile(&file, &[]).unwrap();
        (dir, proto)
    }

    #[test]
    fn json_is_encoded_by_the_methods_input_descriptor() {
        let (_dir, proto) = greeter();
        let m = proto.method("helloworld.Greeter/SayHello").unwrap();
        assert_eq!(path(&m), "/helloworld.Greeter/SayHello");
        // Field 1 (string, wire type 2) "x", field 2 (varint) 3.
        let bytes = encode_json(&m, r#"{"name":"x","times":3}"#).unwrap();
        assert_eq!(bytes, b"\x0a\x01x\x10\x03");
    }

    #[test]
    fn json_that_does_not_fit_names_the_field() {
        let (_dir, proto) = greeter();
        let m = proto.method("helloworld.Greeter/SayHello").unwrap();
        let e = encode_json(&m, r#"{"nmae":"x"}"#).unwrap_err().to_string();
        assert!(e.contains("nmae"), "{e}");
        let e = encode_json(&m, r#"{"times":"many"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("helloworld.HelloRequest"), "{e}");
        assert!(e.contains("field \"times\""), "{e}");
        let e = encode_json(&m, r#"{"name":"x","inner":{"times":"many"}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("field \"inner.times\""), "{e}");
    }

    #[test]
    fn a_missing_method_lists_the_ones_there_are() {
        let (_dir, proto) = greeter();
        let e = proto.method("helloworld.Greeter/SayBye").unwrap_err();
        let text = e.to_string();
        assert!(text.contains("helloworld.Greeter/SayHello"), "{text}");
        for refused in ["Chat", "Gather"] {
            let e = proto.method(&format!("helloworld.Greeter/{refused}"));
            let e = e.unwrap_err();
            assert!(matches!(e, ProtoError::Streaming { .. }), "{e}");
        }
        let m = proto.method("helloworld.Greeter/Replies").unwrap();
        assert!(m.is_server_streaming(), "server streaming is accepted");
        let e = proto.method("SayHello").unwrap_err();
        assert!(matches!(e, ProtoError::CallSyntax { .. }), "{e}");
    }

    #[test]
    fn a_missing_file_is_named() {
        let e = Proto::compile(Path::new("/nonexistent/x.proto"), &[]).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/x.proto"), "{e}");
    }
}

//! A targets file of gRPC calls (`--targets FILE` beside a `grpc://HOST:PORT` target): JSON
//! Lines, one call per line,
//!
//! ```text
//! {"call": "helloworld.Greeter/SayHello", "data": {"name": "x"}, "metadata": {"tenant": "blue"}, "label": "hello", "weight": 2}
//! ```
//!
//! `call` is required; `data` (the request message in the protobuf JSON mapping, `{}` when
//! absent), `metadata`, `label` (by default the call, `pkg.Service/Method`) and `weight` (1)
//! are optional. Each line is converted with its method's descriptor when the file is read,
//! so every problem is one line naming `FILE:LINE`. The calls then become targets as HTTP's do
//! (the same weights, order and per-label results), each sending its own call.
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use sojourn_core::targets::Target;
use sojourn_engine::grpc_proto::{self, Proto};
use sojourn_engine::{TlsServerName, Trust};

use crate::bad_input;
use crate::grpc::{metadatum, origin, reflected, GrpcSettings, GrpcTarget};

/// One line, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    call: String,
    #[serde(default)]
    data: Option<serde_json::Value>,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    weight: Option<u64>,
}

/// The file's calls to `url`, each with the core target that schedules it (its label, weight
/// and line). Without `--proto`, each service's descriptors are asked of the server once, over
/// TLS as `reach` allows (its trust, and the name its certificate is checked against).
pub fn read(
    path: &Path,
    url: &str,
    settings: &GrpcSettings,
    timeout: Duration,
    reach: (&Trust, Option<&TlsServerName>),
) -> anyhow::Result<Vec<(GrpcTarget, Target)>> {
    let origin = origin(url)?;
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad_input!(
            "--targets: {}: cannot read the targets file: {e}",
            path.display()
        )
    })?;
    let given = settings
        .proto
        .as_deref()
        .map(|f| settings.compiled(f))
        .transpose()?;
    let mut asked: BTreeMap<String, Proto> = BTreeMap::new();
    let mut calls = Vec::new();
    for (n, text) in text.lines().enumerate() {
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let at = |why: String| bad_input!("--targets: {}:{}: {why}", path.display(), n + 1);
        let line: Line = serde_json::from_str(text).map_err(|e| {
            // The file's line is named already; serde's "line 1" would contradict it.
            let e = e.to_string().replace(" at line 1 column ", " at column ");
            at(format!(
                "not a call: {e}; write one object per line, as {{\"call\": \"pkg.Service/Method\", \"data\": {{…}}}}"
            ))
        })?;
        let proto = match &given {
            Some(p) => p,
            None => {
                let (service, _) =
                    grpc_proto::split_call(&line.call).map_err(|e| at(format!("call: {e}")))?;
                if !asked.contains_key(service) {
                    let p = reflected(url, &origin, Some(&line.call), reach)
                        .map_err(|e| at(e.to_string()))?;
                    asked.insert(service.to_string(), p);
                }
                &asked[service]
            }
        };
        let method = proto
            .method(&line.call)
            .map_err(|e| at(format!("call: {e}")))?;
        let data = line.data.as_ref().map_or("{}".into(), |d| d.to_string());
        let message =
            grpc_proto::encode_json(&method, &data).map_err(|e| at(format!("data: {e}")))?;
        let metadata = line
            .metadata
            .iter()
            .map(|(k, v)| metadatum(&format!("{k}: {v}")))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|why| at(format!("metadata: {why}")))?;
        let call = GrpcTarget::new(url, origin.clone(), &method, message, metadata, timeout);
        let target = Target {
            label: line
                .label
                .unwrap_or_else(|| call.call.path.trim_start_matches('/').to_string()),
            // A weight above u32 is refused by the targets' own check, as too long a cycle.
            weight: line
                .weight
                .map_or(1, |w| u32::try_from(w).unwrap_or(u32::MAX)),
            line: n + 1,
            ..Target::new("POST", call.call.request().url)
        };
        calls.push((call, target));
    }
    if calls.is_empty() {
        return Err(bad_input!(
            "--targets: {}: holds no calls: write one JSON object per line, as {{\"call\": \"pkg.Service/Method\", \"data\": {{…}}}}",
            path.display()
        ));
    }
    Ok(calls)
}

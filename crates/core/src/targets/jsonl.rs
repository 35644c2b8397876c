//! JSON Lines as vegeta's JSON targets, one object per line, plus `label` and `weight`:
//!
//! ```text
//! {"method": "POST", "url": "http://api:8080/items", "header": {"Content-Type": ["application/json"]}, "body": "eyJuYW1lIjoieCJ9", "label": "create item", "weight": 3}
//! ```
//!
//! `method` and `url` are required; `header` (each name to a list of values), `body` (base64)
//! `label` and `weight` are optional, and `null` counts as absent. Any other key is refused, so
//! a misspelt key cannot pass silently. Blank lines are skipped.
use std::path::Path;

use base64::Engine;
use serde_json::{Map, Value};

use super::{
    check_header, check_label, check_method, check_weight, parse_url, Fault, Kind, Target,
    TargetsError,
};

const KEYS: [&str; 6] = ["method", "url", "header", "body", "label", "weight"];

/// Parses JSON Lines targets; `file` names the file in errors and nothing is read from it.
pub fn parse_jsonl(text: &str, file: &Path) -> Result<Vec<Target>, TargetsError> {
    let mut targets = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let target = parse_object(line).map_err(|f| f.in_file(file, Some(n + 1)))?;
        targets.push(Target {
            line: n + 1,
            ..target
        });
    }
    if targets.is_empty() {
        let problem = "holds no targets: write one JSON object per line, as \
                       {\"method\": \"GET\", \"url\": \"http://host:port/path\"}";
        return Err(Fault::new(Kind::Empty, problem).in_file(file, None));
    }
    Ok(targets)
}

fn parse_object(line: &str) -> Result<Target, Fault> {
    let object = match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(object)) => object,
        Ok(_) => {
            return Err(malformed(
                "not a JSON object: write one {…} object per line",
            ))
        }
        Err(e) => return Err(malformed(format!("not valid JSON: {}", json_problem(&e)))),
    };
    if let Some(key) = object.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(Fault::new(
            Kind::UnknownKey,
            format!("unknown key {key:?}: the keys are {}", KEYS.join(", ")),
        ));
    }
    let method = required_string(&object, "method")?;
    check_method(method)?;
    let url = parse_url(required_string(&object, "url")?)?;
    let mut target = Target::new(method, url);
    target.headers = headers(&object)?;
    target.body = body(&object)?;
    if let Some(label) = optional_string(&object, "label")? {
        check_label(label)?;
        target.label = label.to_string();
    }
    target.weight = weight(&object)?;
    Ok(target)
}

fn malformed(problem: impl Into<String>) -> Fault {
    Fault::new(Kind::Malformed, problem)
}

/// serde_json's message without its "at line 1 column N", which would contradict the file's
/// line; the column stays.
fn json_problem(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let message = text.split(" at line ").next().unwrap_or(&text);
    format!(
        "{message} at column {}; each line holds one whole object",
        e.column()
    )
}

/// Present and not null.
fn field<'a>(object: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    object.get(key).filter(|v| !v.is_null())
}

fn required_string<'a>(object: &'a Map<String, Value>, key: &str) -> Result<&'a str, Fault> {
    optional_string(object, key)?.ok_or_else(|| {
        malformed(format!(
            "no {key:?}: every target has \"method\" and \"url\", as \
             {{\"method\": \"GET\", \"url\": \"http://host:port/path\"}}"
        ))
    })
}

fn optional_string<'a>(
    object: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, Fault> {
    match field(object, key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(malformed(format!(
            "{key:?} is {other}, not a string: quote it"
        ))),
    }
}

/// `{"Name": ["v1", "v2"]}`, as vegeta writes an http.Header: one pair per value.
fn headers(object: &Map<String, Value>) -> Result<Vec<(String, String)>, Fault> {
    let Some(header) = field(object, "header") else {
        return Ok(Vec::new());
    };
    let Value::Object(names) = header else {
        return Err(malformed(
            "\"header\" is not an object: write it as {\"Name\": [\"value\"]}",
        ));
    };
    let mut pairs = Vec::new();
    for (name, values) in names {
        let list_of_strings = || {
            malformed(format!(
                "header {name:?} is not a list of strings: write it as {{{name:?}: [\"value\"]}}"
            ))
        };
        let Value::Array(values) = values else {
            return Err(list_of_strings());
        };
        for value in values {
            let Value::String(value) = value else {
                return Err(list_of_strings());
            };
            check_header(name, value)?;
            pairs.push((name.clone(), value.clone()));
        }
    }
    // A JSON object's keys come back in name order, or in file order if some crate in the
    // build turns on serde_json's `preserve_order`: sort, so the order never depends on that.
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(pairs)
}

fn body(object: &Map<String, Value>) -> Result<Vec<u8>, Fault> {
    let Some(text) = optional_string(object, "body")? else {
        return Ok(Vec::new());
    };
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| {
            Fault::new(
                Kind::Body,
                format!(
                    "\"body\" is not valid base64 ({e}): encode the body's bytes in standard \
                 base64 with padding, as `base64 -w0 FILE` prints"
                ),
            )
        })
}

fn weight(object: &Map<String, Value>) -> Result<u32, Fault> {
    match field(object, "weight") {
        None => Ok(1),
        Some(Value::Number(n)) if n.as_u64().is_some() => {
            check_weight(n.as_u64().expect("checked"))
        }
        Some(other) => Err(Fault::new(
            Kind::Weight,
            format!("weight {other} is not a whole number from 1 up: write e.g. \"weight\": 3"),
        )),
    }
}

#[cfg(test)]
mod tests;

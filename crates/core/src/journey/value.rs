//! The checks of single values of a journey file: names, weights, methods, headers, the URL's
//! origin, statuses and extract sources. Each returns what is wrong and how to fix it; the
//! reader places it on the value's line.
use serde::Deserialize;
use url::Url;

use super::error::JourneyErrorKind as Kind;
use super::extract::{Extract, Source, StatusSet};
use super::template::{is_identifier, Template, RESERVED};
use crate::targets::{MAX_CYCLE, METHODS};

/// A problem found in a value, before the reader places it on its line.
pub(super) type Fault = (Kind, String);

/// One `extract` entry as written: exactly one of its sources is given.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawExtract {
    json: Option<String>,
    regex: Option<String>,
    group: Option<i64>,
    header: Option<String>,
    cookie: Option<String>,
}

pub(super) fn check_name(name: &str, what: &str) -> Result<(), Fault> {
    if name.trim().is_empty() {
        return Err((
            Kind::Name,
            format!("empty {what} name: give it a name, which labels its results"),
        ));
    }
    if name.contains('/') {
        return Err((
            Kind::Name,
            format!(
                "{what} name {name:?} holds '/', which separates \
            journey and step in a label: use another character"
            ),
        ));
    }
    Ok(())
}

pub(super) fn check_weight(weight: i64) -> Result<u32, Fault> {
    if weight < 1 || weight as u64 > MAX_CYCLE {
        return Err((
            Kind::Weight,
            format!(
                "weight = {weight}: a weight is a whole number \
            from 1 to {MAX_CYCLE}; to run none of a journey, leave it out"
            ),
        ));
    }
    Ok(weight as u32)
}

pub(super) fn check_method(method: &str) -> Result<String, Fault> {
    if METHODS.contains(&method) {
        return Ok(method.to_string());
    }
    let hint = if METHODS.contains(&method.to_ascii_uppercase().as_str()) {
        " (methods are case-sensitive: write them in capitals)"
    } else {
        ""
    };
    Err((
        Kind::Method,
        format!(
            "unknown method {method:?}{hint}: the methods are {}",
            METHODS.join(", ")
        ),
    ))
}

/// RFC 9110's `tchar`: the characters of a header name.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

pub(super) fn check_header(name: &str, value: &str) -> Result<(), Fault> {
    if name.is_empty() || !name.chars().all(is_token_char) {
        return Err((
            Kind::Header,
            format!("header name {name:?}: a name is letters, digits and !#$%&'*+-.^_`|~ only"),
        ));
    }
    if value.contains(['\r', '\n', '\0']) {
        return Err((
            Kind::Header,
            format!("the value of header {name:?} holds a line break or NUL: remove it"),
        ));
    }
    Ok(())
}

/// The origin a URL template begins with: `scheme://host:port` must be written out before
/// any hole, so that every journey connects to the same place.
pub(super) fn origin_of(template: &Template) -> Result<Url, String> {
    let prefix = template.literal_prefix();
    let fix =
        "begin it with http://host:port (or https://) written out; holes may follow in the path";
    let authority_start = prefix
        .find("://")
        .map(|at| at + 3)
        .ok_or_else(|| format!("no scheme: {fix}"))?;
    let authority_end = match prefix[authority_start..].find(['/', '?', '#']) {
        Some(at) => authority_start + at,
        None if template.is_literal() => prefix.len(),
        None => return Err(format!("a hole in the host or port: {fix}")),
    };
    let url = Url::parse(&prefix[..authority_end]).map_err(|e| format!("{e}: {fix}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("not an http or https URL with a host: {fix}"));
    }
    Ok(url)
}

pub(super) fn status_set(value: &toml::Value) -> Result<StatusSet, String> {
    let how = "write a status (200), a class (\"2xx\") or a list of them ([200, 201])";
    let item = |v: &toml::Value| match v {
        toml::Value::Integer(code) => StatusSet::item(&code.to_string()),
        toml::Value::String(text) => StatusSet::item(text),
        other => Err(format!("expect.status {other}: {how}")),
    };
    let ranges = match value {
        toml::Value::Array(items) if items.is_empty() => {
            return Err(format!("expect.status is an empty list: {how}"))
        }
        toml::Value::Array(items) => items.iter().map(item).collect::<Result<_, _>>()?,
        one => vec![item(one)?],
    };
    Ok(StatusSet::new(ranges))
}

/// One `extract` entry: a variable name and exactly one source.
pub(super) fn extract(var: &str, raw: &RawExtract) -> Result<Extract, Fault> {
    if !is_identifier(var) || RESERVED.contains(&var) {
        return Err((
            Kind::Extract,
            format!(
                "extract {var:?}: a variable's name is a letter or _ then letters, digits and \
                _, and not {}",
                RESERVED.join(", ")
            ),
        ));
    }
    let given = [
        raw.json.is_some(),
        raw.regex.is_some(),
        raw.header.is_some(),
        raw.cookie.is_some(),
    ];
    if given.iter().filter(|&&g| g).count() != 1 {
        return Err((
            Kind::Extract,
            format!(
                "extract {var:?} needs exactly one source: json = \"/pointer\", regex = \
                \"…(group)…\", header = \"Name\" or cookie = \"name\""
            ),
        ));
    }
    if raw.group.is_some() && raw.regex.is_none() {
        return Err((
            Kind::Extract,
            format!("extract {var:?}: group goes with regex; drop it"),
        ));
    }
    let source = if let Some(pointer) = &raw.json {
        check_pointer(var, pointer)?;
        Source::Json(pointer.clone())
    } else if let Some(pattern) = &raw.regex {
        regex_source(var, pattern, raw.group)?
    } else if let Some(header) = &raw.header {
        check_header(header, "")?;
        Source::Header(header.clone())
    } else {
        Source::Cookie(raw.cookie.clone().unwrap_or_default())
    };
    Ok(Extract::new(var, source))
}

/// RFC 6901: a pointer is empty (the whole document) or starts with `/`; `~` only as `~0`
/// or `~1`.
fn check_pointer(var: &str, pointer: &str) -> Result<(), Fault> {
    let bad = |why: &str| {
        (
            Kind::Pointer,
            format!(
                "extract {var:?}: JSON pointer {pointer:?} {why}; write it \
            as /field/0/name (RFC 6901)"
            ),
        )
    };
    if !pointer.is_empty() && !pointer.starts_with('/') {
        return Err(bad("does not start with /"));
    }
    let mut tildes = pointer.match_indices('~');
    if tildes.any(|(at, _)| !matches!(pointer.as_bytes().get(at + 1), Some(b'0' | b'1'))) {
        return Err(bad("has a ~ not followed by 0 or 1"));
    }
    Ok(())
}

fn regex_source(var: &str, pattern: &str, group: Option<i64>) -> Result<Source, Fault> {
    let regex = regex::bytes::Regex::new(pattern).map_err(|e| {
        let why = e.to_string();
        let why = why
            .lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or("invalid")
            .to_string();
        (
            Kind::Regex,
            format!(
                "extract {var:?}: regex {pattern:?} does not compile ({why}); \
            fix it (the syntax is Rust's regex crate)"
            ),
        )
    })?;
    let groups = regex.captures_len() - 1;
    let group = group.unwrap_or(if groups >= 1 { 1 } else { 0 });
    if group < 0 || group as usize > groups {
        return Err((
            Kind::Regex,
            format!(
                "extract {var:?}: regex {pattern:?} has {groups} capture groups, so no group \
                {group}: add ( ) around the part to take, or give group = 0 for the whole match"
            ),
        ));
    }
    Ok(Source::Regex {
        regex,
        group: group as usize,
    })
}

//! What a step does with its answer: check it (`expect`), take values from it (`extract`), and
//! keep its cookies (the journey's [`CookieJar`]). Pure functions of the status, the headers
//! and the body; headers are `(name, value)` pairs as the transport read them.
use std::fmt;

use super::data::text_of;

/// A set of statuses: single codes and classes (`2xx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSet {
    /// Inclusive ranges.
    ranges: Vec<(u16, u16)>,
}

impl StatusSet {
    /// 200 to 299: what a step expects when it says nothing.
    pub fn success() -> StatusSet {
        StatusSet {
            ranges: vec![(200, 299)],
        }
    }

    /// One status as written: a code (`201`) or a class (`"2xx"`).
    pub fn item(text: &str) -> Result<(u16, u16), String> {
        let how = "write a status from 100 to 599 (201) or a class (\"2xx\")";
        let t = text.trim();
        if let Some(class) = t.strip_suffix("xx").or_else(|| t.strip_suffix("XX")) {
            return match class.parse::<u16>() {
                Ok(c @ 1..=5) => Ok((c * 100, c * 100 + 99)),
                _ => Err(format!("status {text:?} is not a class: {how}")),
            };
        }
        match t.parse::<u16>() {
            Ok(code @ 100..=599) => Ok((code, code)),
            _ => Err(format!("status {text:?}: {how}")),
        }
    }

    pub fn new(ranges: Vec<(u16, u16)>) -> StatusSet {
        StatusSet { ranges }
    }

    pub fn contains(&self, status: u16) -> bool {
        self.ranges
            .iter()
            .any(|&(low, high)| (low..=high).contains(&status))
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, &(low, high)) in self.ranges.iter().enumerate() {
            let sep = if k == 0 { "" } else { ", " };
            if low == high {
                write!(f, "{sep}{low}")?;
            } else {
                write!(f, "{sep}{}xx", low / 100)?;
            }
        }
        Ok(())
    }
}

/// What a step's answer must be: a status in a set (2xx unless the step says otherwise) and,
/// if given, a body that contains a text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Expect {
    /// `None`: the step gave no `expect.status`, so any 2xx passes. The engine may class a
    /// non-2xx answer of such a step by its HTTP class (`http_4xx`, …) rather than `check`.
    pub status: Option<StatusSet>,
    pub body: Option<String>,
}

/// Why an answer failed its step's `expect` (the `check` failure class).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckFailure {
    #[error("status {got}, expected {expected}")]
    Status { got: u16, expected: String },
    #[error("the body does not contain {wanted:?}")]
    Body { wanted: String },
}

impl Expect {
    pub fn check(&self, status: u16, body: &[u8]) -> Result<(), CheckFailure> {
        let success = StatusSet::success();
        let set = self.status.as_ref().unwrap_or(&success);
        if !set.contains(status) {
            return Err(CheckFailure::Status {
                got: status,
                expected: set.to_string(),
            });
        }
        match &self.body {
            Some(wanted) if !contains(body, wanted.as_bytes()) => Err(CheckFailure::Body {
                wanted: wanted.clone(),
            }),
            _ => Ok(()),
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || haystack.windows(needle.len()).any(|w| w == needle)
}

/// Where an extracted value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A JSON pointer (RFC 6901) into the body: a string without its quotes, another value as
    /// its JSON text.
    Json(String),
    /// A capture group of the first match of a regex on the body (group 0: the whole match).
    Regex {
        regex: regex::bytes::Regex,
        group: usize,
    },
    /// A response header, by name, in any case.
    Header(String),
    /// A cookie the response sets (Set-Cookie), by name.
    Cookie(String),
}

/// One `extract` entry: a variable and where its value comes from.
#[derive(Debug, Clone)]
pub struct Extract {
    pub(super) var: String,
    pub(super) source: Source,
}

/// Why a step could not extract a variable (the `extract` failure class).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot extract {var}: {why}")]
pub struct ExtractFailure {
    pub var: String,
    pub why: ExtractWhy,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtractWhy {
    #[error("the body is not JSON")]
    NotJson,
    #[error("the body's JSON has no value at {0}")]
    NoValue(String),
    #[error("the regex does not match the body")]
    NoMatch,
    #[error("the regex matched, but its group {0} took part in no match")]
    NoGroup(usize),
    #[error("no {0} header")]
    NoHeader(String),
    #[error("no cookie {0} is set")]
    NoCookie(String),
}

impl Extract {
    pub fn new(var: &str, source: Source) -> Extract {
        Extract {
            var: var.to_string(),
            source,
        }
    }

    /// The variable this entry sets.
    pub fn var(&self) -> &str {
        &self.var
    }

    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The value, from the answer. `status` is not read today; it is here so that a source
    /// may come to depend on it without changing the callers.
    pub fn apply(
        &self,
        _status: u16,
        headers: &[(&str, &[u8])],
        body: &[u8],
    ) -> Result<String, ExtractFailure> {
        self.value(headers, body).map_err(|why| ExtractFailure {
            var: self.var.clone(),
            why,
        })
    }

    fn value(&self, headers: &[(&str, &[u8])], body: &[u8]) -> Result<String, ExtractWhy> {
        match &self.source {
            Source::Json(pointer) => {
                let json: serde_json::Value =
                    serde_json::from_slice(body).map_err(|_| ExtractWhy::NotJson)?;
                json.pointer(pointer)
                    .map(text_of)
                    .ok_or_else(|| ExtractWhy::NoValue(pointer.clone()))
            }
            Source::Regex { regex, group } => {
                let captures = regex.captures(body).ok_or(ExtractWhy::NoMatch)?;
                let found = captures.get(*group).ok_or(ExtractWhy::NoGroup(*group))?;
                Ok(String::from_utf8_lossy(found.as_bytes()).into_owned())
            }
            Source::Header(name) => headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| String::from_utf8_lossy(v).trim().to_string())
                .ok_or_else(|| ExtractWhy::NoHeader(name.clone())),
            Source::Cookie(name) => set_cookies(headers)
                .filter(|(n, _)| n == name)
                .last()
                .map(|(_, v)| v.to_string())
                .ok_or_else(|| ExtractWhy::NoCookie(name.clone())),
        }
    }
}

/// The cookies one running journey holds, as a browser session would: set by the answers'
/// `Set-Cookie` headers, sent back on every later step. Paths, domains and expiry dates are
/// not kept apart (a journey talks to one origin); `Max-Age=0` or a negative one deletes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CookieJar {
    cookies: Vec<(String, String)>,
}

impl CookieJar {
    pub fn new() -> CookieJar {
        CookieJar::default()
    }

    /// Keeps the cookies an answer's headers set.
    pub fn store(&mut self, headers: &[(&str, &[u8])]) {
        for (name, value, expired) in set_cookie_lines(headers) {
            self.cookies.retain(|(n, _)| *n != name);
            if !expired {
                self.cookies.push((name.to_string(), value.to_string()));
            }
        }
    }

    /// The `Cookie:` header value to send: `a=1; b=2`, or `None` when the jar is empty.
    pub fn header(&self) -> Option<String> {
        if self.cookies.is_empty() {
            return None;
        }
        let pairs: Vec<String> = self
            .cookies
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        Some(pairs.join("; "))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.cookies
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Empties the jar for the next journey, keeping its allocation.
    pub fn clear(&mut self) {
        self.cookies.clear();
    }
}

/// Each `Set-Cookie` header's name and value.
fn set_cookies<'a>(headers: &'a [(&str, &[u8])]) -> impl Iterator<Item = (&'a str, &'a str)> {
    set_cookie_lines(headers).map(|(n, v, _)| (n, v))
}

/// Each `Set-Cookie` header's name, value, and whether it deletes the cookie (`Max-Age` of 0
/// or less). A header that is not UTF-8 or has no `=` is skipped, as browsers do.
fn set_cookie_lines<'a>(
    headers: &'a [(&str, &[u8])],
) -> impl Iterator<Item = (&'a str, &'a str, bool)> {
    headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("set-cookie"))
        .filter_map(|(_, v)| std::str::from_utf8(v).ok())
        .filter_map(|line| {
            let mut attributes = line.split(';');
            let (name, value) = attributes.next()?.split_once('=')?;
            let name = name.trim();
            let expired = attributes.any(|a| {
                a.split_once('=').is_some_and(|(k, v)| {
                    k.trim().eq_ignore_ascii_case("max-age")
                        && v.trim().parse::<i64>().is_ok_and(|s| s <= 0)
                })
            });
            (!name.is_empty()).then(|| (name, value.trim().trim_matches('"'), expired))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regex(pattern: &str, group: usize) -> Source {
        Source::Regex {
            regex: regex::bytes::Regex::new(pattern).unwrap(),
            group,
        }
    }

    const BODY: &[u8] =
        br#"{"token": "t-1", "user": {"id": 42, "tags": ["a", "b"]}, "none": null}"#;

    fn headers() -> Vec<(&'static str, &'static [u8])> {
        vec![
            ("Content-Type", b"application/json".as_slice()),
            ("location", b" /items/9 ".as_slice()),
            ("Set-Cookie", b"session=s1; Path=/; HttpOnly".as_slice()),
            ("set-cookie", b"theme=\"dark\"".as_slice()),
            ("Set-Cookie", b"session=s2".as_slice()),
        ]
    }

    #[test]
    fn each_source_extracts() {
        let h = headers();
        for (source, want) in [
            (Source::Json("/token".into()), "t-1"),
            (Source::Json("/user/id".into()), "42"),
            (Source::Json("/user/tags/1".into()), "b"),
            (Source::Json("/user/tags".into()), "[\"a\",\"b\"]"),
            (Source::Json("/none".into()), ""),
            (regex(r#""id": (\d+)"#, 1), "42"),
            (regex(r#""id": \d+"#, 0), "\"id\": 42"),
            (Source::Header("LOCATION".into()), "/items/9"),
            (Source::Cookie("session".into()), "s2"),
            (Source::Cookie("theme".into()), "dark"),
        ] {
            let got = Extract::new("v", source.clone()).apply(200, &h, BODY);
            assert_eq!(got.as_deref(), Ok(want), "{source:?}");
        }
    }

    #[test]
    fn each_source_fails_with_its_reason() {
        let h = headers();
        for (source, body, why) in [
            (
                Source::Json("/token".into()),
                b"<html>".as_slice(),
                ExtractWhy::NotJson,
            ),
            (
                Source::Json("/missing".into()),
                BODY,
                ExtractWhy::NoValue("/missing".into()),
            ),
            (regex(r"id=(\d+)", 1), BODY, ExtractWhy::NoMatch),
            (regex(r"(x)?token", 1), BODY, ExtractWhy::NoGroup(1)),
            (
                Source::Header("etag".into()),
                BODY,
                ExtractWhy::NoHeader("etag".into()),
            ),
            (
                Source::Cookie("cart".into()),
                BODY,
                ExtractWhy::NoCookie("cart".into()),
            ),
        ] {
            let e = Extract::new("item", source.clone())
                .apply(200, &h, body)
                .unwrap_err();
            assert_eq!(
                e,
                ExtractFailure {
                    var: "item".into(),
                    why
                },
                "{source:?}"
            );
        }
    }

    #[test]
    fn expect_checks_status_and_body() {
        let plain = Expect::default();
        assert_eq!(plain.check(204, b""), Ok(()));
        assert_eq!(
            plain.check(404, b""),
            Err(CheckFailure::Status {
                got: 404,
                expected: "2xx".into()
            })
        );
        let set = StatusSet::new(vec![(201, 201), (300, 399)]);
        let strict = Expect {
            status: Some(set),
            body: Some("\"id\"".into()),
        };
        assert_eq!(strict.check(201, b"{\"id\": 1}"), Ok(()));
        assert_eq!(strict.check(302, b"x \"id\" y"), Ok(()));
        assert_eq!(
            strict.check(200, b"{\"id\": 1}"),
            Err(CheckFailure::Status {
                got: 200,
                expected: "201, 3xx".into()
            })
        );
        assert_eq!(
            strict.check(201, b"{\"name\": 1}"),
            Err(CheckFailure::Body {
                wanted: "\"id\"".into()
            })
        );
    }

    #[test]
    fn status_items_read_codes_and_classes() {
        assert_eq!(StatusSet::item("201"), Ok((201, 201)));
        assert_eq!(StatusSet::item("4xx"), Ok((400, 499)));
        for bad in ["6xx", "0xx", "99", "600", "ok", "2x"] {
            assert!(StatusSet::item(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cookie_jar_keeps_replaces_and_deletes() {
        let mut jar = CookieJar::new();
        assert_eq!(jar.header(), None);
        jar.store(&headers());
        assert_eq!(jar.header().as_deref(), Some("theme=dark; session=s2"));
        jar.store(&[("Set-Cookie", b"theme=light; Max-Age=3600".as_slice())]);
        assert_eq!(jar.get("theme"), Some("light"));
        jar.store(&[
            ("Set-Cookie", b"session=; Max-Age=0".as_slice()),
            ("X-Other", b"a=b".as_slice()),
        ]);
        assert_eq!(jar.header().as_deref(), Some("theme=light"));
        jar.store(&[
            ("Set-Cookie", b"no-equals-sign".as_slice()),
            ("Set-Cookie", b"\xff=1".as_slice()),
        ]);
        assert_eq!(
            jar.header().as_deref(),
            Some("theme=light"),
            "malformed lines are skipped"
        );
        jar.clear();
        assert_eq!(jar.header(), None);
    }
}

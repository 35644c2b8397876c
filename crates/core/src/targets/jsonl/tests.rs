use super::*;
use crate::targets::TargetsErrorKind;

fn parse(text: &str) -> Vec<Target> {
    parse_jsonl(text, Path::new("t.jsonl")).unwrap_or_else(|e| panic!("{e}"))
}

/// The error's line, its kind and that its message holds `phrase`.
fn fails(text: &str, line: Option<usize>, kind: TargetsErrorKind, phrase: &str) -> TargetsError {
    let e = parse_jsonl(text, Path::new("t.jsonl")).expect_err("should fail");
    assert_eq!((e.line, e.kind), (line, kind), "{e}");
    assert!(e.problem.contains(phrase), "{phrase:?} not in: {e}");
    assert!(!e.to_string().contains('\n'), "one line: {e}");
    e
}

#[test]
fn every_key_with_multi_value_headers_and_a_base64_body() {
    // As vegeta's own example builds one: jq -ncM '{method: "GET", url: "http://goku",
    // body: "Punch!" | @base64, header: {"Content-Type": ["text/plain"]}}'
    let t = parse(
        "{\"method\":\"GET\",\"url\":\"http://goku\",\"body\":\"UHVuY2gh\",\"header\":{\"Content-Type\":[\"text/plain\"]}}\n\
         \n\
         {\"method\": \"POST\", \"url\": \"http://goku/items?x=1\", \"header\": {\"X-Id\": [\"7\"], \"Accept\": [\"a/b\", \"c/d\"]}, \"label\": \"create\", \"weight\": 3}\n",
    );
    assert_eq!(t.len(), 2);
    assert_eq!(
        (t[0].method.as_str(), t[0].url.as_str()),
        ("GET", "http://goku/")
    );
    assert_eq!(t[0].body, b"Punch!");
    assert_eq!(
        t[0].headers,
        [("Content-Type".to_string(), "text/plain".to_string())]
    );
    assert_eq!(
        (t[0].label.as_str(), t[0].weight, t[0].line),
        ("GET /", 1, 1)
    );
    let pairs: Vec<(&str, &str)> = t[1]
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(pairs, [("Accept", "a/b"), ("Accept", "c/d"), ("X-Id", "7")]);
    assert_eq!(
        (t[1].label.as_str(), t[1].weight, t[1].line),
        ("create", 3, 3)
    );
    assert!(t[1].body.is_empty());
}

#[test]
fn null_is_absent_and_the_default_label_drops_the_query() {
    let t = parse(
        "{\"method\":\"DELETE\",\"url\":\"http://goku:9090/a/b?c=d\",\"header\":null,\"body\":null,\"label\":null,\"weight\":null}",
    );
    assert_eq!((t[0].label.as_str(), t[0].weight), ("DELETE /a/b", 1));
    assert!(t[0].headers.is_empty() && t[0].body.is_empty());
}

#[test]
fn empty_files_hold_no_targets() {
    fails("", None, TargetsErrorKind::Empty, "holds no targets");
    fails("\n \n", None, TargetsErrorKind::Empty, "holds no targets");
}

#[test]
fn unknown_keys_are_named() {
    let ok = "{\"method\":\"GET\",\"url\":\"http://a/\"}\n";
    let e = fails(
        &format!("{ok}{{\"method\":\"GET\",\"url\":\"http://a/\",\"headers\":{{}}}}\n"),
        Some(2),
        TargetsErrorKind::UnknownKey,
        "unknown key \"headers\"",
    );
    assert!(
        e.problem
            .contains("method, url, header, body, label, weight"),
        "{e}"
    );
}

#[test]
fn malformed_lines() {
    use TargetsErrorKind::Malformed;
    let ok = "{\"method\":\"GET\",\"url\":\"http://a/\"}\n";
    fails(
        &format!("{ok}{{\"url\":\"http://a/\"}}\n"),
        Some(2),
        Malformed,
        "no \"method\"",
    );
    fails(
        &format!("{ok}\n{{\"method\":\"GET\"}}\n"),
        Some(3),
        Malformed,
        "no \"url\"",
    );
    fails(
        &format!("{ok}{{\"method\":\"GET\",\n"),
        Some(2),
        Malformed,
        "not valid JSON",
    );
    fails(
        &format!("{ok}[1, 2]\n"),
        Some(2),
        Malformed,
        "not a JSON object",
    );
    fails(
        "{\"method\":7,\"url\":\"http://a/\"}",
        Some(1),
        Malformed,
        "\"method\" is 7, not a string",
    );
    let header = "{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":{\"X\":\"v\"}}";
    fails(
        header,
        Some(1),
        Malformed,
        "header \"X\" is not a list of strings",
    );
    let header = "{\"method\":\"GET\",\"url\":\"http://a/\",\"header\":[\"X: v\"]}";
    fails(header, Some(1), Malformed, "\"header\" is not an object");
}

#[test]
fn the_json_column_is_kept_and_its_line_dropped() {
    let e = fails(
        "{\"method\": GET}",
        Some(1),
        TargetsErrorKind::Malformed,
        "at column 12",
    );
    assert!(!e.problem.contains("line 1"), "{e}");
}

#[test]
fn values_are_validated_as_in_the_http_format() {
    use TargetsErrorKind::{Body, Header, Label, Method, Url, Weight};
    let with = |extra: &str| format!("{{\"method\":\"GET\",\"url\":\"http://a/\"{extra}}}");
    fails(
        "{\"method\":\"get\",\"url\":\"http://a/\"}",
        Some(1),
        Method,
        "case-sensitive",
    );
    fails(
        "{\"method\":\"GET\",\"url\":\"/rel\"}",
        Some(1),
        Url,
        "not absolute",
    );
    fails(
        "{\"method\":\"GET\",\"url\":\"ws://a/\"}",
        Some(1),
        Url,
        "unsupported scheme \"ws\"",
    );
    fails(
        &with(",\"body\":\"not base64!\""),
        Some(1),
        Body,
        "not valid base64",
    );
    fails(
        &with(",\"header\":{\"X Y\":[\"1\"]}"),
        Some(1),
        Header,
        "holds ' '",
    );
    fails(
        &with(",\"header\":{\"X\":[\"a\\nb\"]}"),
        Some(1),
        Header,
        "line break",
    );
    fails(&with(",\"weight\":0"), Some(1), Weight, "weight 0");
    fails(
        &with(",\"weight\":\"3\""),
        Some(1),
        Weight,
        "not a whole number",
    );
    fails(
        &with(",\"weight\":1.5"),
        Some(1),
        Weight,
        "not a whole number",
    );
    fails(
        &with(",\"weight\":-1"),
        Some(1),
        Weight,
        "not a whole number",
    );
    fails(&with(",\"label\":\"\""), Some(1), Label, "empty label");
}

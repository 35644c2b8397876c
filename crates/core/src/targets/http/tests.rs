use std::io::Write;

use super::*;
use crate::targets::TargetsErrorKind;

fn parse(text: &str) -> Vec<Target> {
    parse_http(text, Path::new("t.http")).unwrap_or_else(|e| panic!("{e}"))
}

/// The error's line, its kind and that its message holds `phrase`.
fn fails(text: &str, line: Option<usize>, kind: TargetsErrorKind, phrase: &str) -> TargetsError {
    let e = parse_http(text, Path::new("t.http")).expect_err("should fail");
    assert_eq!((e.line, e.kind), (line, kind), "{e}");
    assert!(e.problem.contains(phrase), "{phrase:?} not in: {e}");
    let place = line.map_or(String::new(), |l| format!("{l}:"));
    assert!(e.to_string().starts_with(&format!("t.http:{place}")), "{e}");
    assert!(!e.to_string().contains('\n'), "one line: {e}");
    e
}

fn body_file(bytes: &[u8]) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(bytes).expect("write body");
    file
}

#[test]
fn request_lines_alone_or_back_to_back() {
    // vegeta's simplest file: request lines with no blank lines between them.
    let t = parse("GET http://goku:9090/path/to/dragon?item=ball\nHEAD http://goku:9090/ok\n");
    assert_eq!(t.len(), 2);
    assert_eq!(
        (t[0].method.as_str(), t[0].url.as_str()),
        ("GET", "http://goku:9090/path/to/dragon?item=ball")
    );
    assert_eq!((t[1].method.as_str(), t[1].line), ("HEAD", 2));
    // The default label is method and path, without the query.
    assert_eq!(t[0].label, "GET /path/to/dragon");
    assert_eq!(
        (t[0].weight, t[0].headers.len(), t[0].body.len()),
        (1, 0, 0)
    );
}

#[test]
fn headers_in_order_with_repeats_and_colons_in_values() {
    let t = parse(
        "DELETE http://goku:9090/path/to/remove\n\
         Confirmation-Token: 90215\n\
         Authorization:Token DEADBEEF:42\n\
         Accept: text/plain\n\
         Accept:  application/json  \n\
         \n\
         GET http://goku:9090/two\n\
         X-Account-ID: 8675309\n",
    );
    assert_eq!(t.len(), 2);
    let pairs: Vec<(&str, &str)> = t[0]
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [
            ("Confirmation-Token", "90215"),
            ("Authorization", "Token DEADBEEF:42"),
            ("Accept", "text/plain"),
            ("Accept", "application/json"),
        ]
    );
    assert_eq!(
        t[1].headers,
        [("X-Account-ID".to_string(), "8675309".to_string())]
    );
    assert_eq!(t[1].line, 7);
}

#[test]
fn body_files_after_the_headers() {
    let thing = body_file(b"{\"name\":\"x\"}\n");
    let binary = body_file(&[0, 159, 146, 150, 255]);
    let text = format!(
        "POST http://goku:9090/things\nX-Account-ID: 99\n@{}\n\
         PATCH http://goku:9090/thing/7\n@ {}\n",
        thing.path().display(),
        binary.path().display()
    );
    let t = parse(&text);
    assert_eq!(
        t.len(),
        2,
        "the body line ends a target, so no blank line is needed"
    );
    assert_eq!(t[0].body, b"{\"name\":\"x\"}\n");
    assert_eq!(t[0].headers.len(), 1);
    assert_eq!((t[1].method.as_str(), t[1].line), ("PATCH", 4));
    assert_eq!(t[1].body, [0, 159, 146, 150, 255]);
}

#[test]
fn comments_anywhere_are_ignored() {
    let t = parse(
        "# get a dragon ball\n\
         GET http://goku:9090/path/to/dragon?item=ball\n\
         # specify a test account\n\
         X-Account-ID: 99\n\
         #X-Not-A-Header: 1\n\
         \n\
         # note: not a directive\n\
         \n\
         GET http://goku:9090/b\n",
    );
    assert_eq!(t.len(), 2);
    assert_eq!(
        t[0].headers,
        [("X-Account-ID".to_string(), "99".to_string())]
    );
    assert_eq!((t[0].line, t[1].line), (2, 9));
    assert_eq!((t[1].label.as_str(), t[1].weight), ("GET /b", 1));
}

#[test]
fn labels_and_weights_above_the_request_line() {
    let t = parse(
        "# label: dragon\n\
         # weight: 3\n\
         GET http://goku:9090/dragon?item=ball\n\
         \n\
         # WEIGHT : 2\n\
         GET http://goku:9090/other\n\
         GET http://goku:9090/third\n",
    );
    assert_eq!(
        (t[0].label.as_str(), t[0].weight, t[0].line),
        ("dragon", 3, 3)
    );
    assert_eq!((t[1].label.as_str(), t[1].weight), ("GET /other", 2));
    assert_eq!((t[2].label.as_str(), t[2].weight), ("GET /third", 1));
}

#[test]
fn a_directive_among_a_targets_lines_is_that_targets() {
    let t = parse(
        "GET http://goku:9090/a\n\
         X-A: 1\n\
         # label: among headers\n\
         X-B: 2\n\
         # weight: 4\n\
         \n\
         GET http://goku:9090/b\n\
         X-C: 3\n\
         # label: above the next request line\n\
         GET http://goku:9090/c\n",
    );
    // Followed by a header of /a, and by the blank line that ends /a: both /a's.
    assert_eq!((t[0].label.as_str(), t[0].weight), ("among headers", 4));
    assert_eq!(t[0].headers.len(), 2);
    // Followed by a request line: the next target's, not /b's.
    assert_eq!(
        (t[1].label.as_str(), t[2].label.as_str()),
        ("GET /b", "above the next request line")
    );
}

#[test]
fn a_directive_after_a_body_line_is_the_next_targets() {
    let body = body_file(b"x");
    let text = format!(
        "POST http://goku:9090/a\n@{}\n# weight: 5\n\n# label: c\nGET http://goku:9090/c\n",
        body.path().display()
    );
    let t = parse(&text);
    assert_eq!((t[0].weight, t[0].label.as_str()), (1, "POST /a"));
    assert_eq!((t[1].weight, t[1].label.as_str()), (5, "c"));
}

#[test]
fn crlf_lines_and_indentation() {
    let t = parse("  GET http://goku:9090/a  \r\n\tX-A: 1\r\n\r\nGET http://goku:9090/b\r\n");
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].headers, [("X-A".to_string(), "1".to_string())]);
    assert_eq!(t[1].line, 4);
}

#[test]
fn empty_files_hold_no_targets() {
    fails("", None, TargetsErrorKind::Empty, "holds no targets");
    fails(
        "\n  \n# only a comment\n",
        None,
        TargetsErrorKind::Empty,
        "holds no targets",
    );
}

#[test]
fn malformed_lines_name_their_line() {
    use TargetsErrorKind::Malformed;
    fails(
        "GET http://a/x\nX-Good: 1\nX-Bad 2\n",
        Some(3),
        Malformed,
        "has no ':'",
    );
    // An uppercase word and a URL, under a target's headers: a request line, not a header.
    fails(
        "GET http://a/x\nX-Good: 1\nFETCH http://a/y\n",
        Some(3),
        TargetsErrorKind::Method,
        "FETCH",
    );
    fails("GET http://a/x\n\nGET\n", Some(3), Malformed, "has no URL");
    // A method alone right under a target starts a new one, still missing its URL.
    fails("GET http://a/x\nPOST\n", Some(2), Malformed, "has no URL");
    fails(
        "GET http://a/x extra\n",
        Some(1),
        Malformed,
        "after the URL",
    );
    fails(
        "GET http://a/x\n\nhttp://a/y\n",
        Some(3),
        Malformed,
        "has no method",
    );
    fails(
        "GET http://a/x\nhttp://a/y\n",
        Some(2),
        Malformed,
        "URL with no method",
    );
    fails(
        "\nX-Orphan: 1\nGET http://a/x\n",
        Some(2),
        Malformed,
        "no request line above it",
    );
    fails("GET http://a/x\n@\n", Some(2), Malformed, "names no file");
    fails(
        "# label: x\n",
        Some(1),
        Malformed,
        "with no target after it",
    );
    fails(
        "GET http://a/x\n\n# weight: 2\n\n",
        Some(3),
        Malformed,
        "with no target after it",
    );
}

#[test]
fn body_lines_out_of_place() {
    use TargetsErrorKind::Malformed;
    let body = body_file(b"x");
    let path = body.path().display();
    fails(
        &format!("@{path}\nGET http://a/x\n"),
        Some(1),
        Malformed,
        "no request line above it",
    );
    let second = format!("POST http://a/x\n@{path}\n@{path}\n");
    fails(&second, Some(3), Malformed, "a second body line");
    let header = format!("POST http://a/x\n@{path}\nX-Late: 1\n");
    fails(&header, Some(3), Malformed, "after the body line (line 2)");
}

#[test]
fn a_missing_body_file_names_the_path_and_the_os_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("nope.json");
    let text = format!(
        "GET http://a/x\n\nPOST http://a/y\nX-A: 1\n@{}\n",
        missing.display()
    );
    let e = fails(
        &text,
        Some(5),
        TargetsErrorKind::Body,
        "cannot read body file",
    );
    assert!(
        e.problem
            .contains(&format!("{:?}", missing.display().to_string())),
        "{e}"
    );
    let os = std::io::Error::from(std::io::ErrorKind::NotFound).to_string();
    assert!(
        e.problem.contains("No such file") || e.problem.contains(&os),
        "{e}"
    );
}

#[test]
fn unknown_methods_list_the_accepted_ones() {
    let e = fails(
        "FETCH http://a/x\n",
        Some(1),
        TargetsErrorKind::Method,
        "unknown method \"FETCH\"",
    );
    assert!(e
        .problem
        .contains("GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, TRACE, CONNECT"));
    fails(
        "GET http://a/\n\nget http://a/x\n",
        Some(3),
        TargetsErrorKind::Method,
        "case-sensitive",
    );
}

#[test]
fn bad_urls_say_why() {
    use TargetsErrorKind::Url;
    fails("GET /just/a/path\n", Some(1), Url, "not absolute");
    // A host without its scheme gets the URL it most likely meant.
    fails(
        "GET a.example/x\n",
        Some(1),
        Url,
        "bad URL \"a.example/x\": no scheme: write http://a.example/x (or https:// for TLS)",
    );
    fails(
        "GET localhost:8080/x\n",
        Some(1),
        Url,
        "no scheme: write http://localhost:8080/x",
    );
    fails(
        "GET ftp://a.example/x\n",
        Some(1),
        Url,
        "unsupported scheme \"ftp\"",
    );
    fails("GET http://:8080/x\n\n", Some(1), Url, "no host");
    fails("GET http://a/\n\nGET http://\n", Some(3), Url, "no host");
}

#[test]
fn bad_header_names_and_values() {
    use TargetsErrorKind::Header;
    fails(
        "GET http://a/x\nX Bad: 1\n",
        Some(2),
        Header,
        "header name \"X Bad\" holds ' '",
    );
    fails(
        "GET http://a/x\nX-A: 1\nX(B): 1\n",
        Some(3),
        Header,
        "holds '('",
    );
    fails(
        "GET http://a/x\n: value\n",
        Some(2),
        Header,
        "empty header name",
    );
    fails(
        "GET http://a/x\nX-A: a\rb\n",
        Some(2),
        Header,
        "line break or NUL",
    );
}

#[test]
fn bad_weights_and_labels() {
    use TargetsErrorKind::{Label, Weight};
    fails("# weight: 0\nGET http://a/x\n", Some(1), Weight, "weight 0");
    fails(
        "GET http://a/x\n# weight: heavy\n",
        Some(2),
        Weight,
        "not a whole number",
    );
    fails(
        "# weight: -2\nGET http://a/x\n",
        Some(1),
        Weight,
        "not a whole number",
    );
    fails(
        "# weight: 1000001\nGET http://a/x\n",
        Some(1),
        Weight,
        "above 1000000",
    );
    fails(
        "# label:   \nGET http://a/x\n",
        Some(1),
        Label,
        "empty label",
    );
    let twice = "GET http://a/x\n# weight: 2\nX-A: 1\n# weight: 3\nX-B: 1\n";
    fails(
        twice,
        Some(4),
        Weight,
        "a second `# weight:` for the target at line 1",
    );
    let twice = "# label: a\n# label: b\nGET http://a/x\n";
    fails(
        twice,
        Some(2),
        Label,
        "a second `# label:` for the target at line 3",
    );
}

//! vegeta's HTTP targets format, with labels and weights in comments vegeta ignores.
//!
//! ```text
//! # label: create item
//! # weight: 3
//! POST http://api:8080/items
//! Content-Type: application/json
//! @bodies/item.json
//!
//! GET http://api:8080/items/1
//! ```
//!
//! A target is a request line `METHOD URL`, then its header lines `Name: value`, then at most
//! one body line `@path` (absolute, or relative to the working directory), which is its last.
//! A target ends at a blank line, after its body line, or where the next request line starts.
//! Lines are trimmed; lines starting with `#` are comments.
//!
//! `# label: NAME` and `# weight: N` (the key in any case) belong to the target whose request
//! line comes next, unless they sit among a target's lines, followed by one of its header or
//! body lines or by the blank line that ends it: then they belong to that target.
use std::path::Path;

use super::{
    check_header, check_label, check_method, parse_url, parse_weight, Fault, Kind, Target,
    TargetsError, METHODS,
};

/// Parses vegeta's HTTP format; `file` names the file in errors and nothing is read from it,
/// but body files (`@path`) are read.
pub fn parse_http(text: &str, file: &Path) -> Result<Vec<Target>, TargetsError> {
    let mut parser = Parser::default();
    for (n, line) in text.lines().enumerate() {
        parser
            .line(n + 1, line.trim())
            .map_err(|(at, f)| f.in_file(file, Some(at)))?;
    }
    parser.finish().map_err(|(at, f)| f.in_file(file, at))
}

/// A problem and the line it is on.
type Located<L = usize> = (L, Fault);

/// `# label:` or `# weight:`, waiting for the target it belongs to.
#[derive(Debug)]
enum Directive {
    Label(String),
    Weight(u32),
}

/// A target whose lines are still being read, and which directives it was given.
#[derive(Debug)]
struct Draft {
    target: Target,
    label_given: bool,
    weight_given: bool,
}

#[derive(Debug, Default)]
struct Parser {
    done: Vec<Target>,
    open: Option<Draft>,
    /// Directives with their lines, not yet placed.
    pending: Vec<(usize, Directive)>,
    /// The line of the body line that closed the last target, while no other line followed.
    after_body: Option<usize>,
}

impl Parser {
    fn line(&mut self, n: usize, line: &str) -> Result<(), Located> {
        if line.is_empty() {
            self.place_pending()?;
            self.close();
            self.after_body = None;
            return Ok(());
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(directive) = directive(comment).map_err(|f| (n, f))? {
                self.pending.push((n, directive));
            }
            return Ok(());
        }
        match &self.open {
            Some(_) if line.starts_with('@') => self.body(n, line),
            Some(_) if !looks_like_request_line(line) => self.header(n, line),
            _ => self.request(n, line),
        }
    }

    fn request(&mut self, n: usize, line: &str) -> Result<(), Located> {
        self.close();
        let target = parse_request_line(line, self.after_body.take()).map_err(|f| (n, f))?;
        let target = Target { line: n, ..target };
        self.open = Some(Draft {
            target,
            label_given: false,
            weight_given: false,
        });
        self.place_pending()
    }

    fn header(&mut self, n: usize, line: &str) -> Result<(), Located> {
        self.place_pending()?;
        let (name, value) = parse_header_line(line).map_err(|f| (n, f))?;
        let draft = self
            .open
            .as_mut()
            .expect("a header line follows a request line");
        draft.target.headers.push((name, value));
        Ok(())
    }

    fn body(&mut self, n: usize, line: &str) -> Result<(), Located> {
        self.place_pending()?;
        let body = read_body(line[1..].trim()).map_err(|f| (n, f))?;
        let draft = self
            .open
            .as_mut()
            .expect("a body line follows a request line");
        draft.target.body = body;
        self.close();
        self.after_body = Some(n);
        Ok(())
    }

    /// Gives the open target, if any, the directives read since its last line.
    fn place_pending(&mut self) -> Result<(), Located> {
        let Some(draft) = self.open.as_mut() else {
            return Ok(());
        };
        for (n, directive) in self.pending.drain(..) {
            draft.take(directive).map_err(|f| (n, f))?;
        }
        Ok(())
    }

    fn close(&mut self) {
        if let Some(draft) = self.open.take() {
            self.done.push(draft.target);
        }
    }

    fn finish(mut self) -> Result<Vec<Target>, Located<Option<usize>>> {
        self.place_pending().map_err(|(n, f)| (Some(n), f))?;
        if let Some((n, directive)) = self.pending.first() {
            let problem = format!(
                "`# {}:` with no target after it: put it right above the request line of the \
                 target it is for",
                directive.key()
            );
            return Err((Some(*n), Fault::new(Kind::Malformed, problem)));
        }
        self.close();
        if self.done.is_empty() {
            return Err((None, no_targets()));
        }
        Ok(self.done)
    }
}

impl Directive {
    fn key(&self) -> &'static str {
        match self {
            Directive::Label(_) => "label",
            Directive::Weight(_) => "weight",
        }
    }
}

impl Draft {
    fn take(&mut self, directive: Directive) -> Result<(), Fault> {
        let given = match directive {
            Directive::Label(_) => &mut self.label_given,
            Directive::Weight(_) => &mut self.weight_given,
        };
        if std::mem::replace(given, true) {
            let kind = match directive {
                Directive::Label(_) => Kind::Label,
                Directive::Weight(_) => Kind::Weight,
            };
            let problem = format!(
                "a second `# {}:` for the target at line {}: give each target one",
                directive.key(),
                self.target.line
            );
            return Err(Fault::new(kind, problem));
        }
        match directive {
            Directive::Label(label) => self.target.label = label,
            Directive::Weight(weight) => self.target.weight = weight,
        }
        Ok(())
    }
}

fn read_body(path: &str) -> Result<Vec<u8>, Fault> {
    if path.is_empty() {
        return Err(Fault::new(
            Kind::Malformed,
            "body line '@' names no file: write @path/to/body",
        ));
    }
    std::fs::read(path).map_err(|e| {
        Fault::new(
            Kind::Body,
            format!(
                "cannot read body file {path:?}: {e}; the path after '@' is absolute or \
                 relative to the directory sojourn runs in"
            ),
        )
    })
}

fn no_targets() -> Fault {
    Fault::new(
        Kind::Empty,
        "holds no targets: write one request line per target, as GET http://host:port/path",
    )
}

/// `label: NAME` or `weight: N` after the `#`; any other comment is just a comment.
fn directive(comment: &str) -> Result<Option<Directive>, Fault> {
    let Some((key, value)) = comment.split_once(':') else {
        return Ok(None);
    };
    let value = value.trim();
    match key.trim().to_ascii_lowercase().as_str() {
        "label" => {
            check_label(value)?;
            Ok(Some(Directive::Label(value.to_string())))
        }
        "weight" => Ok(Some(Directive::Weight(parse_weight(value)?))),
        _ => Ok(None),
    }
}

/// A method (an uppercase word) followed by a URL, or a method alone (a request line missing
/// its URL). vegeta's test is looser, an uppercase word and a space, which takes a header name
/// holding a space (`X Y: 1`) for a method; a header line never passes this one, as a header
/// name is followed by ':' with no space.
fn looks_like_request_line(line: &str) -> bool {
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let uppercase = !word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase());
    uppercase && (METHODS.contains(&word) || rest.contains("://"))
}

/// `METHOD URL`. `after_body` is the line of a body line right above, for a better hint when
/// this line was meant as a header.
fn parse_request_line(line: &str, after_body: Option<usize>) -> Result<Target, Fault> {
    let (method, url) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let url = url.trim();
    if let Some(why) = not_a_request_line(method, after_body) {
        return Err(Fault::new(Kind::Malformed, why));
    }
    check_method(method)?;
    if url.is_empty() {
        return Err(Fault::new(
            Kind::Malformed,
            format!("request line {line:?} has no URL: write it as {method} http://host:port/path"),
        ));
    }
    if let Some((url, extra)) = url.split_once(char::is_whitespace) {
        return Err(Fault::new(
            Kind::Malformed,
            format!(
                "request line has {:?} after the URL {url:?}: a request line is METHOD URL \
                 (write a space inside a URL as %20)",
                extra.trim()
            ),
        ));
    }
    Ok(Target::new(method, parse_url(url)?))
}

/// Why a line where a request line belongs is something else, if it plainly is.
fn not_a_request_line(first_word: &str, after_body: Option<usize>) -> Option<String> {
    if first_word.starts_with("http://") || first_word.starts_with("https://") {
        return Some(format!(
            "{first_word:?} has no method: write the request line as GET {first_word}"
        ));
    }
    if first_word.starts_with('{') {
        return Some(
            "a JSON object in a file read as the HTTP format, as its first line does not start \
             with '{': a targets file is all JSON Lines or all HTTP format"
                .into(),
        );
    }
    if first_word.starts_with('@') {
        return Some(match after_body {
            Some(body) => format!(
                "a second body line for one target (the first is at line {body}): a target \
                 has one body"
            ),
            None => "a body line with no request line above it: the body line comes last in \
                     a target, after its request line and headers, with no blank line between"
                .into(),
        });
    }
    if !first_word.contains(':') {
        return None;
    }
    Some(match after_body {
        Some(body) => format!(
            "a header line after the body line (line {body}): the body line is the target's \
             last line, so put headers above it"
        ),
        None => "a header line with no request line above it: headers follow their target's \
                 request line, with no blank line between"
            .into(),
    })
}

fn parse_header_line(line: &str) -> Result<(String, String), Fault> {
    let Some((name, value)) = line.split_once(':') else {
        return Err(Fault::new(
            Kind::Malformed,
            format!("header line {line:?} has no ':': write headers as Name: value"),
        ));
    };
    let (name, value) = (name.trim(), value.trim());
    if matches!(name, "http" | "https") && value.starts_with("//") {
        return Err(Fault::new(
            Kind::Malformed,
            format!(
                "{line:?} is a URL with no method, read as a header of the target above: \
                 write GET {line}, after a blank line"
            ),
        ));
    }
    check_header(name, value)?;
    Ok((name.to_string(), value.to_string()))
}

#[cfg(test)]
mod tests;

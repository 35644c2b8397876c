//! Many different requests in one run: request `i` sends target `pick(i)`.
//!
//! `pick` is a pure function of the request's index (and, for random order, a seed): no
//! counter, no clock, no state. The shards of a distributed run each hold a different subset of
//! the indices and the simulator replays them all, and every one of them agrees on which target
//! request `i` was, so per-label results merge and compare index for index.
//!
//! Two file formats are read (see `docs/targets.md`): vegeta's HTTP format ([`parse_http`]) and
//! JSON Lines as vegeta's JSON targets ([`parse_jsonl`]); [`read_file`] tells them apart by
//! content. Both report a problem as one line, `FILE:LINE: what is wrong and how to fix it`.
use std::fmt;
use std::path::{Path, PathBuf};

use url::Url;

mod cycle;
mod http;
mod jsonl;

pub use http::parse_http;
pub use jsonl::parse_jsonl;

/// The most distinct labels one run reports on: each label keeps its own histograms.
pub const MAX_LABELS: usize = 64;

/// The largest sum of weights: the round-robin cycle is tabulated, one entry per unit of weight.
pub const MAX_CYCLE: u64 = 1_000_000;

/// The request methods a target may use, as HTTP spells them (case-sensitive).
pub const METHODS: [&str; 9] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
];

/// One request blueprint, validated: a known method, an absolute http(s) URL with a host,
/// well-formed headers and a weight of at least 1.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// One of [`METHODS`].
    pub method: String,
    /// Absolute, `http` or `https`, with a host.
    pub url: Url,
    /// In file order; a name given twice is sent twice. Names are RFC 9110 tokens, values hold
    /// no CR, LF or NUL.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// What results are grouped by: given in the file, or by default `METHOD /path` (the path
    /// without the query).
    pub label: String,
    /// How many requests of one round-robin cycle this target sends; at least 1.
    pub weight: u32,
    /// The 1-based line where the target starts in its file (its request line, or its JSON
    /// line); 0 for a target that comes from no file.
    pub line: usize,
}

impl Target {
    /// A target with no headers, no body, weight 1 and the default label.
    pub fn new(method: &str, url: Url) -> Target {
        Target {
            label: default_label(method, &url),
            method: method.to_string(),
            url,
            headers: Vec::new(),
            body: Vec::new(),
            weight: 1,
            line: 0,
        }
    }
}

/// The order in which requests walk through the targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Smooth weighted round robin: every cycle of W requests (W the sum of the weights) sends
    /// exactly `weight` requests of each target, spread through the cycle. With all weights 1
    /// it is plain round robin in file order.
    RoundRobin,
    /// Each request draws its target independently, with probability `weight / W`, from a hash
    /// of the seed and its index.
    Random { seed: u64 },
}

/// A run's targets, ready to answer which one request `i` sends.
#[derive(Debug, Clone)]
pub struct Targets {
    targets: Vec<Target>,
    labels: Vec<String>,
    label_of: Vec<usize>,
    order: Order,
    /// Sum of the weights: the cycle length W.
    total: u64,
    /// `cumulative[k]` = weights of targets 0..=k; random order searches it.
    cumulative: Vec<u64>,
    /// Round robin: the target of each position of the shortest cycle, W divided by the
    /// weights' greatest common divisor long (empty for random order).
    table: Vec<u32>,
    /// Random order: the seed, mixed once so each index needs only one more mix.
    stream: u64,
}

impl Targets {
    /// Checks the targets as a run needs them (at least one, each valid, one origin, at most
    /// [`MAX_LABELS`] labels, weights summing to at most [`MAX_CYCLE`]) and tabulates the
    /// round-robin cycle. Errors name the target's line but no file: [`Targets::load`] adds it.
    pub fn new(targets: Vec<Target>, order: Order) -> Result<Targets, TargetsError> {
        if targets.is_empty() {
            return Err(Fault::new(Kind::Empty, "no targets: give at least one").at(None));
        }
        for target in &targets {
            check_target(target).map_err(|fault| fault.at(line_of(target)))?;
        }
        check_origin(&targets)?;
        let (labels, label_of) = group_labels(&targets)?;
        let weights: Vec<u32> = targets.iter().map(|t| t.weight).collect();
        let total = check_total(&weights)?;
        let cumulative = weights
            .iter()
            .scan(0u64, |sum, &w| {
                *sum += u64::from(w);
                Some(*sum)
            })
            .collect();
        let (table, stream) = match order {
            Order::RoundRobin => (cycle::smooth(&weights), 0),
            Order::Random { seed } => (Vec::new(), cycle::stream(seed)),
        };
        Ok(Targets {
            targets,
            labels,
            label_of,
            order,
            total,
            cumulative,
            table,
            stream,
        })
    }

    /// [`read_file`], then [`Targets::new`], with the file named in every error.
    pub fn load(path: &Path, order: Order) -> Result<Targets, TargetsError> {
        Targets::new(read_file(path)?, order).map_err(|mut e| {
            e.file = path.to_path_buf();
            e
        })
    }

    /// Which target request `index` sends. Pure: the same index always gives the same target.
    pub fn pick(&self, index: u64) -> usize {
        match self.order {
            Order::RoundRobin => self.table[(index % self.table.len() as u64) as usize] as usize,
            Order::Random { .. } => {
                let unit = cycle::draw(self.stream, index, self.total);
                self.cumulative.partition_point(|&c| c <= unit)
            }
        }
    }

    /// The index into [`Targets::labels`] of target `target`'s label.
    pub fn label_of(&self, target: usize) -> usize {
        self.label_of[target]
    }

    /// The distinct labels, in the order they first appear.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// The proportion of requests target `target` is expected to send: weight / sum of weights.
    /// Exact over every whole round-robin cycle; the expectation for random order.
    pub fn share(&self, target: usize) -> f64 {
        f64::from(self.targets[target].weight) / self.total as f64
    }

    /// The sum of the weights: the length of one round-robin cycle.
    pub fn cycle(&self) -> u64 {
        self.total
    }

    pub fn order(&self) -> Order {
        self.order
    }
}

/// Reads a targets file, telling the format by content: JSON Lines if the first non-blank line
/// starts with `{`, vegeta's HTTP format otherwise.
pub fn read_file(path: &Path) -> Result<Vec<Target>, TargetsError> {
    let unreadable = |line, problem: String| TargetsError {
        file: path.to_path_buf(),
        line,
        kind: Kind::Unreadable,
        problem,
    };
    let bytes = std::fs::read(path)
        .map_err(|e| unreadable(None, format!("cannot read the targets file: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        unreadable(
            Some(line),
            "not UTF-8 text: save the targets file as UTF-8".into(),
        )
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    if first.is_some_and(|l| l.starts_with('{')) {
        parse_jsonl(text, path)
    } else {
        parse_http(text, path)
    }
}

/// What kind of problem a [`TargetsError`] is; each says how to fix it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetsErrorKind {
    /// The file cannot be read, or is not UTF-8 text: check the path and save it as UTF-8.
    Unreadable,
    /// The file holds no targets: write at least one request line or JSON object.
    Empty,
    /// A line is not what its place calls for (a request line without a URL, a header without
    /// `:`, a body line out of place, a line that is not one JSON object): fix the line as
    /// the message says.
    Malformed,
    /// A method other than [`METHODS`]: use one of them, in capitals.
    Method,
    /// A URL that is not absolute, not http or https, or has no host: write it whole, as
    /// `http://host:port/path`.
    Url,
    /// A header name with characters outside RFC 9110's token, or a value with CR, LF or NUL.
    Header,
    /// A body file that cannot be read, or a JSON body that is not base64.
    Body,
    /// A weight of 0, not a whole number, above [`MAX_CYCLE`], or given twice.
    Weight,
    /// An empty label, or one given twice for a target.
    Label,
    /// A JSON key that is not one of the keys a target has: fix its spelling.
    UnknownKey,
    /// More than [`MAX_LABELS`] distinct labels: give targets that belong together one label.
    TooManyLabels,
    /// Weights summing to more than [`MAX_CYCLE`]: scale them down, only their ratios count.
    CycleTooLong,
    /// Targets for more than one origin: run each origin's targets separately.
    MixedOrigins,
}

type Kind = TargetsErrorKind;

/// A problem with a targets file: `FILE:LINE: problem`, or `FILE: problem` when it is about
/// the whole file. The file is empty for [`Targets::new`] on targets from no file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TargetsError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub kind: TargetsErrorKind,
    /// What is wrong, in plain words, with how to fix it.
    pub problem: String,
}

impl fmt::Display for TargetsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self.file.display();
        match (self.file.as_os_str().is_empty(), self.line) {
            (false, Some(line)) => write!(f, "{file}:{line}: {}", self.problem),
            (false, None) => write!(f, "{file}: {}", self.problem),
            (true, Some(line)) => write!(f, "line {line}: {}", self.problem),
            (true, None) => write!(f, "{}", self.problem),
        }
    }
}

/// A problem before it is placed in a file and on a line.
#[derive(Debug)]
struct Fault {
    kind: Kind,
    problem: String,
}

impl Fault {
    fn new(kind: Kind, problem: impl Into<String>) -> Fault {
        Fault {
            kind,
            problem: problem.into(),
        }
    }

    /// Placed on a line, in no file yet.
    fn at(self, line: Option<usize>) -> TargetsError {
        self.in_file(Path::new(""), line)
    }

    fn in_file(self, file: &Path, line: Option<usize>) -> TargetsError {
        TargetsError {
            file: file.to_path_buf(),
            line,
            kind: self.kind,
            problem: self.problem,
        }
    }
}

fn line_of(target: &Target) -> Option<usize> {
    (target.line > 0).then_some(target.line)
}

fn default_label(method: &str, url: &Url) -> String {
    format!("{method} {}", url.path())
}

fn check_method(method: &str) -> Result<(), Fault> {
    if METHODS.contains(&method) {
        return Ok(());
    }
    let hint = if METHODS.contains(&method.to_ascii_uppercase().as_str()) {
        " (methods are case-sensitive: write them in capitals)"
    } else {
        ""
    };
    Err(Fault::new(
        Kind::Method,
        format!(
            "unknown method {method:?}{hint}: the methods are {}",
            METHODS.join(", ")
        ),
    ))
}

/// What `text` most likely meant when it has no scheme but reads as a host and port
/// (`localhost:8080`, `127.0.0.1:8080/api`): the same with `http://` in front. `None` when it
/// has a scheme, or is not a URL even then.
pub fn with_http_scheme(text: &str) -> Option<String> {
    let starts_as_host = text.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '[');
    if text.contains("://") || !starts_as_host {
        return None;
    }
    let guess = format!("http://{text}");
    let url = Url::parse(&guess).ok()?;
    url.host().is_some().then_some(guess)
}

fn parse_url(text: &str) -> Result<Url, Fault> {
    let bad = |why: String| Fault::new(Kind::Url, format!("bad URL {text:?}: {why}"));
    if let Some(guess) = with_http_scheme(text) {
        return Err(bad(format!(
            "no scheme: write {guess} (or https:// for TLS)"
        )));
    }
    let url = Url::parse(text).map_err(|e| {
        bad(match e {
            url::ParseError::RelativeUrlWithoutBase => {
                "not absolute: write the whole URL, as http://host:port/path".into()
            }
            url::ParseError::EmptyHost => "no host: write it as http://host:port/path".into(),
            other => format!("{other}: write it as http://host:port/path"),
        })
    })?;
    check_url(&url).map_err(bad)?;
    Ok(url)
}

fn check_url(url: &Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "unsupported scheme {:?}: use http or https",
            url.scheme()
        ));
    }
    if url.host().is_none() {
        return Err("no host: write it as http://host:port/path".into());
    }
    Ok(())
}

/// RFC 9110's `tchar`: the characters of a header name.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

fn check_header(name: &str, value: &str) -> Result<(), Fault> {
    if name.is_empty() {
        return Err(Fault::new(
            Kind::Header,
            "empty header name: write headers as Name: value",
        ));
    }
    if let Some(c) = name.chars().find(|&c| !is_token_char(c)) {
        return Err(Fault::new(
            Kind::Header,
            format!(
                "header name {name:?} holds {c:?}: a name is letters, digits and \
                 !#$%&'*+-.^_`|~ only"
            ),
        ));
    }
    if value.contains(['\r', '\n', '\0']) {
        return Err(Fault::new(
            Kind::Header,
            format!("the value of header {name:?} holds a line break or NUL: remove it"),
        ));
    }
    Ok(())
}

/// A weight as written: a whole number from 1 to [`MAX_CYCLE`].
fn parse_weight(text: &str) -> Result<u32, Fault> {
    let number: u64 = text.parse().map_err(|_| {
        Fault::new(
            Kind::Weight,
            format!("weight {text:?} is not a whole number: write e.g. 3"),
        )
    })?;
    check_weight(number)
}

fn check_weight(weight: u64) -> Result<u32, Fault> {
    if weight == 0 {
        return Err(Fault::new(
            Kind::Weight,
            "weight 0: a weight is at least 1; to send none of a target, leave it out",
        ));
    }
    if weight > MAX_CYCLE {
        return Err(Fault::new(
            Kind::Weight,
            format!("weight {weight} is above {MAX_CYCLE}: scale the weights down, only their ratios count"),
        ));
    }
    Ok(weight as u32)
}

fn check_label(label: &str) -> Result<(), Fault> {
    if label.trim().is_empty() {
        return Err(Fault::new(
            Kind::Label,
            "empty label: give a name, or leave the label out",
        ));
    }
    Ok(())
}

/// What every target must be, whatever it came from.
fn check_target(target: &Target) -> Result<(), Fault> {
    check_method(&target.method)?;
    check_url(&target.url).map_err(|why| {
        Fault::new(
            Kind::Url,
            format!("bad URL {:?}: {why}", target.url.as_str()),
        )
    })?;
    for (name, value) in &target.headers {
        check_header(name, value)?;
    }
    check_weight(u64::from(target.weight))?;
    check_label(&target.label)
}

/// Scheme, host and port, the port written even when it is the scheme's default.
fn origin_text(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port_or_known_default() {
        Some(port) => format!("{}://{host}:{port}", url.scheme()),
        None => format!("{}://{host}", url.scheme()),
    }
}

fn check_origin(targets: &[Target]) -> Result<(), TargetsError> {
    let first = &targets[0];
    let origin = first.url.origin();
    let Some(other) = targets.iter().find(|t| t.url.origin() != origin) else {
        return Ok(());
    };
    let first_at = line_of(first).map_or(String::new(), |l| format!(" (line {l})"));
    let problem = format!(
        "this target is for {}, but the first target{first_at} is for {}: one run sends to one \
         origin (scheme, host and port) because it drives one connection pool; put each \
         origin's targets in a file of their own and run them separately",
        origin_text(&other.url),
        origin_text(&first.url),
    );
    Err(Fault::new(Kind::MixedOrigins, problem).at(line_of(other)))
}

/// The distinct labels in first-seen order, and each target's index into them.
fn group_labels(targets: &[Target]) -> Result<(Vec<String>, Vec<usize>), TargetsError> {
    let mut labels: Vec<String> = Vec::new();
    let mut index = std::collections::HashMap::new();
    let mut first_over = None;
    let label_of = targets
        .iter()
        .map(|t| {
            *index.entry(t.label.as_str()).or_insert_with(|| {
                labels.push(t.label.clone());
                if labels.len() == MAX_LABELS + 1 {
                    first_over = Some(t);
                }
                labels.len() - 1
            })
        })
        .collect();
    if let Some(target) = first_over {
        let problem = format!(
            "{} distinct labels, at most {MAX_LABELS}: this target's label {:?} is number {}. \
             A target's label is its `label`, or by default its method and path (without the \
             query), so every distinct path counts; give targets that belong together one \
             label, e.g. `# label: GET /item/:id` above them (HTTP format) or \
             \"label\": \"GET /item/:id\" (JSON Lines)",
            labels.len(),
            target.label,
            MAX_LABELS + 1,
        );
        return Err(Fault::new(Kind::TooManyLabels, problem).at(line_of(target)));
    }
    Ok((labels, label_of))
}

fn check_total(weights: &[u32]) -> Result<u64, TargetsError> {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    if total > MAX_CYCLE {
        let problem = format!(
            "the weights sum to {total}, at most {MAX_CYCLE}: scale them down, only their \
             ratios count (e.g. weights 1000 and 3000 send as 1 and 3 do)"
        );
        return Err(Fault::new(Kind::CycleTooLong, problem).at(None));
    }
    Ok(total)
}

#[cfg(test)]
mod tests;

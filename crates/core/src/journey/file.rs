//! Reading a journey file: the TOML as written (every value with its place in the text), then
//! each check, each error on the line of the value it is about.
use std::fmt;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;
use url::Url;

use super::choice::Think;
use super::data::{DataOrder, Rows};
use super::error::{JourneyError, JourneyErrorKind as Kind};
use super::extract::{Expect, Extract};
use super::model::{Journey, JourneyFile, OnError, Step, MAX_REPEAT, MAX_STEPS};
use super::template::Template;
use super::value::{
    check_header, check_method, check_name, check_weight, extract, origin_of, status_set,
    RawExtract,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    base_url: Option<Spanned<String>>,
    data: Option<RawData>,
    #[serde(default)]
    journey: Vec<RawJourney>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawData {
    file: Spanned<String>,
    order: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJourney {
    name: Spanned<String>,
    weight: Option<Spanned<i64>>,
    #[serde(default)]
    step: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Spanned<String>,
    method: Option<Spanned<String>>,
    url: Spanned<String>,
    #[serde(default)]
    headers: Entries<Spanned<String>>,
    body: Option<Spanned<String>>,
    think: Option<Spanned<String>>,
    expect: Option<RawExpect>,
    #[serde(default)]
    extract: Entries<Spanned<RawExtract>>,
    repeat: Option<Spanned<i64>>,
    on_error: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    status: Option<Spanned<toml::Value>>,
    body: Option<Spanned<String>>,
}

/// A TOML table read as a list, keeping the file's order (headers are sent in it).
struct Entries<V>(Vec<(String, V)>);

impl<V> Default for Entries<V> {
    fn default() -> Self {
        Entries(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for Entries<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Ordered<V>(PhantomData<V>);
        impl<'de, V: Deserialize<'de>> Visitor<'de> for Ordered<V> {
            type Value = Entries<V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Entries<V>, M::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(Ordered(PhantomData))
    }
}

/// Where each template of a step is, for the checks that need the whole journey.
struct Places {
    name: usize,
    url: usize,
    headers: Vec<usize>,
    body: usize,
}

/// The file being read: its text (for line numbers), its path (for messages) and its folder
/// (for the files it names).
struct Reader<'a> {
    text: &'a str,
    path: &'a Path,
    dir: PathBuf,
    /// Numbers the `${random.int…}` holes of the file in order.
    slot: u64,
    base_url: Option<String>,
}

impl JourneyFile {
    /// Reads and checks the file at `path`; a data file and `@file` bodies are read relative to
    /// its folder.
    pub fn from_path(path: &Path) -> Result<JourneyFile, JourneyError> {
        let unreadable = |problem: String| JourneyError::new(path, None, Kind::Unreadable, problem);
        let bytes = std::fs::read(path)
            .map_err(|e| unreadable(format!("cannot read the journey file: {e}")))?;
        let text = String::from_utf8(bytes)
            .map_err(|_| unreadable("not UTF-8 text: save the journey file as UTF-8".into()))?;
        JourneyFile::from_str(&text, path)
    }

    /// Reads and checks `text`, naming `path` in every error; a data file and `@file` bodies
    /// are read relative to `path`'s folder.
    pub fn from_str(text: &str, path: &Path) -> Result<JourneyFile, JourneyError> {
        read(text, path)
    }
}

fn read(text: &str, path: &Path) -> Result<JourneyFile, JourneyError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = Reader {
        text,
        path,
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        slot: 0,
        base_url: None,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| reader.toml_error(&e))?;
    if let Some(base) = &raw.base_url {
        reader.base_url = Some(reader.base_url(base)?);
    }
    let rows = raw.data.as_ref().map(|d| reader.data(d)).transpose()?;
    if raw.journey.is_empty() {
        return Err(reader.whole(
            Kind::Empty,
            "no journeys: write at least one [[journey]] with a name and a [[journey.step]]",
        ));
    }
    let mut journeys = Vec::new();
    let mut origin: Option<(Url, usize)> = None;
    for raw_journey in &raw.journey {
        let journey = reader.journey(raw_journey, &journeys, rows.as_ref(), &mut origin)?;
        journeys.push(journey);
    }
    let steps: usize = journeys.iter().map(|j| j.steps.len()).sum();
    if steps > MAX_STEPS {
        return Err(reader.whole(
            Kind::TooManySteps,
            format!(
                "{steps} steps, at most {MAX_STEPS}: each step is reported on its own; \
                split the file"
            ),
        ));
    }
    let (origin, _) = origin.expect("every journey has a step");
    Ok(JourneyFile::assemble(path, journeys, rows, origin))
}

impl Reader<'_> {
    /// The 1-based line of byte `offset` of the text.
    fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.text.len());
        self.text.as_bytes()[..offset]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    fn at(&self, line: usize, kind: Kind, problem: impl Into<String>) -> JourneyError {
        JourneyError::new(self.path, Some(line), kind, problem)
    }

    fn whole(&self, kind: Kind, problem: impl Into<String>) -> JourneyError {
        JourneyError::new(self.path, None, kind, problem)
    }

    fn spot<T>(&self, value: &Spanned<T>) -> usize {
        self.line(value.span().start)
    }

    /// TOML's own error (syntax, a type, an unknown or missing key), on its line, in our words.
    fn toml_error(&self, e: &toml::de::Error) -> JourneyError {
        let message = e.message().lines().collect::<Vec<_>>().join("; ");
        let message = message.trim_end_matches('.');
        let (kind, problem) = if let Some(rest) = message.strip_prefix("unknown field") {
            (
                Kind::UnknownKey,
                format!("unknown key{rest}; fix its spelling (docs/journeys.md lists every key)"),
            )
        } else if let Some(rest) = message.strip_prefix("missing field") {
            (
                Kind::Syntax,
                format!("missing key{rest}: add it (docs/journeys.md lists every key)"),
            )
        } else {
            (
                Kind::Syntax,
                format!("{message}; fix the TOML (docs/journeys.md shows the format)"),
            )
        };
        match e.span() {
            Some(span) => self.at(self.line(span.start), kind, problem),
            None => self.whole(kind, problem),
        }
    }

    fn base_url(&self, base: &Spanned<String>) -> Result<String, JourneyError> {
        let text = base.get_ref().trim_end_matches('/');
        let bad = |why: &str| {
            self.at(
                self.spot(base),
                Kind::Url,
                format!(
                    "base_url {:?}: {why}; write it as http://host:port",
                    base.get_ref()
                ),
            )
        };
        if text.contains("${") {
            return Err(bad("holds a template"));
        }
        let url = Url::parse(text).map_err(|e| bad(&e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
            return Err(bad("not an http or https URL with a host"));
        }
        Ok(text.to_string())
    }

    fn data(&self, raw: &RawData) -> Result<Rows, JourneyError> {
        let order = match &raw.order {
            Some(order) => DataOrder::parse(order.get_ref())
                .map_err(|e| self.at(self.spot(order), Kind::Value, e))?,
            None => DataOrder::default(),
        };
        let file = self.dir.join(raw.file.get_ref());
        Rows::read(&file, order, self.path, self.spot(&raw.file))
    }

    fn journey(
        &mut self,
        raw: &RawJourney,
        before: &[Journey],
        rows: Option<&Rows>,
        origin: &mut Option<(Url, usize)>,
    ) -> Result<Journey, JourneyError> {
        let line = self.spot(&raw.name);
        let name = raw.name.get_ref();
        check_name(name, "journey").map_err(|(k, p)| self.at(line, k, p))?;
        if before.iter().any(|j| j.name == *name) {
            return Err(self.at(
                line,
                Kind::Name,
                format!("journey {name:?} is named twice: give each journey its own name"),
            ));
        }
        let weight = match &raw.weight {
            Some(w) => check_weight(*w.get_ref()).map_err(|(k, p)| self.at(self.spot(w), k, p))?,
            None => 1,
        };
        if raw.step.is_empty() {
            return Err(self.at(
                line,
                Kind::Empty,
                format!(
                    "journey {name:?} has no steps: add a [[journey.step]] with a name and a url"
                ),
            ));
        }
        let mut steps: Vec<Step> = Vec::new();
        let mut places = Vec::new();
        for raw_step in &raw.step {
            let (step, place) = self.step(raw_step, origin)?;
            if steps.iter().any(|s| s.name == step.name) {
                return Err(self.at(
                    place.name,
                    Kind::Name,
                    format!(
                        "step {:?} is named twice in journey {name:?}: give each step its own name",
                        step.name
                    ),
                ));
            }
            steps.push(step);
            places.push(place);
        }
        self.check_variables(name, &steps, &places)?;
        self.bind_columns(&mut steps, &places, rows)?;
        Ok(Journey {
            name: name.clone(),
            weight,
            steps,
            first_label: 0,
        })
    }

    fn step(
        &mut self,
        raw: &RawStep,
        origin: &mut Option<(Url, usize)>,
    ) -> Result<(Step, Places), JourneyError> {
        let name_line = self.spot(&raw.name);
        let name = raw.name.get_ref().clone();
        check_name(&name, "step").map_err(|(k, p)| self.at(name_line, k, p))?;
        let method = match &raw.method {
            Some(m) => check_method(m.get_ref()).map_err(|(k, p)| self.at(self.spot(m), k, p))?,
            None => "GET".to_string(),
        };
        let url_line = self.spot(&raw.url);
        let url = self.url(raw.url.get_ref(), origin, url_line)?;
        let mut headers = Vec::new();
        let mut header_lines = Vec::new();
        for (header, value) in &raw.headers.0 {
            let line = self.spot(value);
            check_header(header, value.get_ref()).map_err(|(k, p)| self.at(line, k, p))?;
            let template = self.template(value.get_ref(), "headers", line)?;
            headers.push((header.clone(), template));
            header_lines.push(line);
        }
        let (body, body_line) = match &raw.body {
            Some(body) => (Some(self.body(body)?), self.spot(body)),
            None => (None, name_line),
        };
        let step = Step {
            name,
            method,
            url,
            headers,
            body,
            think: self.think(raw.think.as_ref())?,
            expect: self.expect(raw.expect.as_ref())?,
            extract: self.extracts(&raw.extract)?,
            repeat: self.repeat(raw.repeat.as_ref())?,
            on_error: self.on_error(raw.on_error.as_ref())?,
        };
        let places = Places {
            name: name_line,
            url: url_line,
            headers: header_lines,
            body: body_line,
        };
        Ok((step, places))
    }

    fn template(&mut self, text: &str, key: &str, line: usize) -> Result<Template, JourneyError> {
        Template::parse_numbered(text, &mut self.slot)
            .map_err(|e| self.at(line, Kind::Template, format!("{key}: {e}")))
    }

    /// The step's URL, with `base_url` in front of a path; it must begin with the origin
    /// written out, the same for every step.
    fn url(
        &mut self,
        text: &str,
        origin: &mut Option<(Url, usize)>,
        line: usize,
    ) -> Result<Template, JourneyError> {
        let whole = match (text.starts_with('/'), &self.base_url) {
            (true, Some(base)) => format!("{base}{text}"),
            (true, None) => {
                return Err(self.at(
                    line,
                    Kind::Url,
                    format!(
                        "url {text:?} is a \
                path: give base_url = \"http://host:port\" at the top of the file, or write \
                    the whole URL"
                    ),
                ))
            }
            (false, _) => text.to_string(),
        };
        let template = self.template(&whole, "url", line)?;
        let mine = origin_of(&template)
            .map_err(|why| self.at(line, Kind::Url, format!("url {text:?}: {why}")))?;
        match origin {
            Some((first, first_line)) if first.origin() != mine.origin() => Err(self.at(
                line,
                Kind::Url,
                format!(
                    "url {text:?} is for {}, but the step on line {first_line} is for {}: one \
                    file sends to one origin (scheme, host and port)",
                    mine.origin().ascii_serialization(),
                    first.origin().ascii_serialization()
                ),
            )),
            Some(_) => Ok(template),
            None => {
                *origin = Some((mine, line));
                Ok(template)
            }
        }
    }

    /// An inline body, or `@file` read from the journey file's folder (`@@` for a body that
    /// begins with `@`).
    fn body(&mut self, raw: &Spanned<String>) -> Result<Template, JourneyError> {
        let line = self.spot(raw);
        let text = raw.get_ref();
        if let Some(literal) = text.strip_prefix("@@") {
            return self.template(&format!("@{literal}"), "body", line);
        }
        let Some(name) = text.strip_prefix('@') else {
            return self.template(text, "body", line);
        };
        let file = self.dir.join(name);
        let contents = std::fs::read_to_string(&file).map_err(|e| {
            self.at(
                line,
                Kind::Body,
                format!(
                    "body file {}: cannot read it ({e}); the path is relative to the journey \
                    file's folder (write @@ for a body that begins with @)",
                    file.display()
                ),
            )
        })?;
        self.template(&contents, &format!("body file {}", file.display()), line)
    }

    fn think(&self, raw: Option<&Spanned<String>>) -> Result<Think, JourneyError> {
        raw.map_or(Ok(Think::None), |t| {
            Think::parse(t.get_ref()).map_err(|e| self.at(self.spot(t), Kind::Think, e))
        })
    }

    fn expect(&self, raw: Option<&RawExpect>) -> Result<Expect, JourneyError> {
        let Some(raw) = raw else {
            return Ok(Expect::default());
        };
        let status = raw
            .status
            .as_ref()
            .map(|s| status_set(s.get_ref()).map_err(|e| self.at(self.spot(s), Kind::Status, e)))
            .transpose()?;
        if let Some(body) = raw.body.as_ref().filter(|b| b.get_ref().is_empty()) {
            return Err(self.at(
                self.spot(body),
                Kind::Value,
                "expect.body is empty: give the text the body must contain, or leave the key out",
            ));
        }
        Ok(Expect {
            status,
            body: raw.body.as_ref().map(|b| b.get_ref().clone()),
        })
    }

    fn extracts(&self, raw: &Entries<Spanned<RawExtract>>) -> Result<Vec<Extract>, JourneyError> {
        raw.0
            .iter()
            .map(|(var, spec)| {
                extract(var, spec.get_ref()).map_err(|(k, p)| self.at(self.spot(spec), k, p))
            })
            .collect()
    }

    fn repeat(&self, raw: Option<&Spanned<i64>>) -> Result<u32, JourneyError> {
        let Some(raw) = raw else { return Ok(1) };
        let n = *raw.get_ref();
        if n < 1 || n > i64::from(MAX_REPEAT) {
            return Err(self.at(
                self.spot(raw),
                Kind::Value,
                format!("repeat = {n}: a step is sent from 1 to {MAX_REPEAT} times in a row"),
            ));
        }
        Ok(n as u32)
    }

    fn on_error(&self, raw: Option<&Spanned<String>>) -> Result<OnError, JourneyError> {
        match raw.map(|r| (r, r.get_ref().as_str())) {
            None | Some((_, "fail")) => Ok(OnError::Fail),
            Some((_, "continue")) => Ok(OnError::Continue),
            Some((r, other)) => Err(self.at(
                self.spot(r),
                Kind::Value,
                format!(
                    "on_error = {other:?}: write \"fail\" (the journey ends, failed at this \
                    step; the default) or \"continue\""
                ),
            )),
        }
    }

    /// Every `${NAME}` must be extracted by an earlier step of the same journey.
    fn check_variables(
        &self,
        journey: &str,
        steps: &[Step],
        places: &[Places],
    ) -> Result<(), JourneyError> {
        for (k, (step, place)) in steps.iter().zip(places).enumerate() {
            for (template, line) in templates(step, place) {
                for var in template.vars() {
                    let extracted_before = steps[..k].iter().any(|s| extracts(s, var));
                    if !extracted_before {
                        return Err(self.never_extracted(journey, steps, k, var, line));
                    }
                }
            }
        }
        Ok(())
    }

    fn never_extracted(
        &self,
        journey: &str,
        steps: &[Step],
        k: usize,
        var: &str,
        line: usize,
    ) -> JourneyError {
        let user = &steps[k].name;
        let Some(later) = steps[k..].iter().find(|s| extracts(s, var)) else {
            let known: Vec<&str> = steps
                .iter()
                .flat_map(|s| s.extract.iter().map(Extract::var))
                .collect();
            let known = if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            };
            let problem = format!(
                "step {user:?} uses ${{{var}}}, but no step of journey {journey:?} extracts \
                 {var:?} (it extracts: {known}): add an extract for it to a step before \
                 {user:?}, or use ${{row.COLUMN}}, ${{journey}} or ${{random.int(A,B)}}"
            );
            return self.at(line, Kind::UnknownVariable, problem);
        };
        let problem = if later.name == *user {
            format!(
                "step {user:?} uses ${{{var}}} in its own request, but extracts it only \
                from its own answer: extract {var:?} in a step before {user:?}"
            )
        } else {
            format!(
                "step {user:?} uses ${{{var}}}, but only step {:?}, which comes later, \
                extracts it: extract {var:?} in a step before {user:?}",
                later.name
            )
        };
        self.at(line, Kind::NotYetExtracted, problem)
    }

    /// Every `${row.COLUMN}` needs a data file with that column.
    fn bind_columns(
        &self,
        steps: &mut [Step],
        places: &[Places],
        rows: Option<&Rows>,
    ) -> Result<(), JourneyError> {
        for (step, place) in steps.iter_mut().zip(places) {
            let lines = [place.url]
                .into_iter()
                .chain(place.headers.iter().copied())
                .chain([place.body]);
            let templates = std::iter::once(&mut step.url)
                .chain(step.headers.iter_mut().map(|(_, t)| t))
                .chain(step.body.as_mut());
            for (template, line) in templates.zip(lines) {
                let Some(column) = template.columns().next().map(str::to_string) else {
                    continue;
                };
                let Some(rows) = rows else {
                    return Err(self.at(
                        line,
                        Kind::Data,
                        format!(
                            "${{row.{column}}} needs a \
                        data file: add [data] with file = \"users.csv\" (or .jsonl) at the top"
                        ),
                    ));
                };
                template.bind(rows).map_err(|missing| {
                    self.at(
                        line,
                        Kind::Column,
                        format!(
                            "${{row.{missing}}}: data file {} has no column {missing:?}; its \
                        columns are {}",
                            rows.path().display(),
                            rows.columns().join(", ")
                        ),
                    )
                })?;
            }
        }
        Ok(())
    }
}

fn templates<'s>(step: &'s Step, place: &Places) -> Vec<(&'s Template, usize)> {
    let mut all = vec![(&step.url, place.url)];
    all.extend(
        step.headers
            .iter()
            .map(|(_, t)| t)
            .zip(place.headers.iter().copied()),
    );
    all.extend(step.body.iter().map(|b| (b, place.body)));
    all
}

fn extracts(step: &Step, var: &str) -> bool {
    step.extract.iter().any(|e| e.var() == var)
}

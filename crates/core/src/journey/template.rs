//! Templates: the URL, header values and body of a step, with `${…}` holes filled per journey.
//!
//! A template is parsed once, when the file is read, into literal text and holes; sending a
//! step only copies the parts into a reused buffer. The holes:
//!
//! | hole | value |
//! |---|---|
//! | `${row.COLUMN}` | the column of the journey's data row |
//! | `${NAME}` | the variable `NAME`, extracted by an earlier step of the same journey |
//! | `${journey}` | the journey's index in the run (0, 1, 2, …) |
//! | `${random.int(A,B)}` | a whole number from A to B, both included, drawn from the journey's index and the run's seed |
//!
//! `$${` writes a literal `${`; any other `$` is itself (`$5`, `$$` and a lone `$` stay).
use std::fmt::Write as _;

use super::choice;
use super::data::{Row, Rows};

/// The names a template may not use for a variable: they name the other holes.
pub const RESERVED: [&str; 3] = ["row", "journey", "random"];

/// A parsed template: render it as many times as needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    /// `${row.name}`; `index` is the column's place in the data file, set when the file is
    /// read (`None` until then, or when the template is parsed on its own).
    Column {
        name: String,
        index: Option<usize>,
    },
    Var(String),
    Journey,
    /// `slot` tells the `${random.int…}` of one file apart, so that each draws its own value.
    RandomInt {
        low: i64,
        high: i64,
        slot: u64,
    },
}

/// What a template is rendered from: the running journey's row, its variables, its index and
/// the run's seed.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub row: Option<&'a Row>,
    pub vars: &'a Vars,
    pub journey: u64,
    pub seed: u64,
}

/// The variables of one running journey, name → value, in the order they were first set.
/// A journey holds a handful, so a list searched in order is quicker than a hash map; `clear`
/// keeps the allocations for the next journey.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    vars: Vec<(String, String)>,
}

impl Vars {
    pub fn new() -> Vars {
        Vars::default()
    }

    /// Sets `name`, replacing its value if it has one.
    pub fn set(&mut self, name: &str, value: &str) {
        match self.vars.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => {
                v.clear();
                v.push_str(value);
            }
            None => self.vars.push((name.to_string(), value.to_string())),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Forgets every variable (for the next journey).
    pub fn clear(&mut self) {
        self.vars.clear();
    }

    pub fn len(&self) -> usize {
        self.vars.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }
}

/// Why a template could not be parsed: the problem and how to fix it, in one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

const HOLES: &str = "the holes are ${row.COLUMN}, ${NAME} (a variable an earlier step \
                     extracts), ${journey} and ${random.int(A,B)}; write $${ for a literal ${";

impl Template {
    /// Parses `text`. Its `${random.int…}` holes are numbered from 0.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        Template::parse_numbered(text, &mut 0)
    }

    /// Parses `text`, numbering its `${random.int…}` holes on from `*slot` (the file reader
    /// numbers every hole of the file once, in file order).
    pub(super) fn parse_numbered(text: &str, slot: &mut u64) -> Result<Template, TemplateError> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('$') {
            literal.push_str(&rest[..at]);
            let after = &rest[at..];
            if let Some(tail) = after.strip_prefix("$${") {
                literal.push_str("${");
                rest = tail;
            } else if let Some(tail) = after.strip_prefix("${") {
                let end = tail.find('}').ok_or_else(|| {
                    TemplateError(format!(
                        "{:?} opens ${{ but never closes it: add the }}, or write $${{ for a \
                         literal ${{",
                        clip(after)
                    ))
                })?;
                if !literal.is_empty() {
                    parts.push(Part::Literal(std::mem::take(&mut literal)));
                }
                parts.push(hole(&tail[..end], slot)?);
                rest = &tail[end + 1..];
            } else {
                literal.push('$');
                rest = &after[1..];
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        Ok(Template { parts })
    }

    /// Writes the template, filled from `ctx`, into `out` (cleared first, so one buffer serves
    /// every request). A variable not set and a column without a row write nothing; the file
    /// reader refuses templates where that could happen except after a step with
    /// `on_error = "continue"` that failed.
    pub fn render(&self, ctx: &Context, out: &mut String) {
        out.clear();
        for part in &self.parts {
            match part {
                Part::Literal(text) => out.push_str(text),
                Part::Column { index, .. } => {
                    if let (Some(row), Some(i)) = (ctx.row, *index) {
                        out.push_str(row.get(i));
                    }
                }
                Part::Var(name) => out.push_str(ctx.vars.get(name).unwrap_or("")),
                Part::Journey => {
                    let _ = write!(out, "{}", ctx.journey);
                }
                Part::RandomInt { low, high, slot } => {
                    let value = choice::random_int(*low, *high, *slot, ctx.journey, ctx.seed);
                    let _ = write!(out, "{value}");
                }
            }
        }
    }

    /// The variables (`${NAME}`) the template names, in order.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(name) => Some(name.as_str()),
            _ => None,
        })
    }

    /// The data columns (`${row.COLUMN}`) the template names, in order.
    pub fn columns(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Column { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }

    /// The text before the first hole (all of it for a template without holes).
    pub fn literal_prefix(&self) -> &str {
        match self.parts.first() {
            Some(Part::Literal(text)) => text,
            _ => "",
        }
    }

    /// Whether the template has no holes at all: it renders the same for every journey.
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Literal(_)))
    }

    /// Places each `${row.COLUMN}` in the data file's columns; the error is the first column the
    /// rows do not have.
    pub(super) fn bind(&mut self, rows: &Rows) -> Result<(), String> {
        for part in &mut self.parts {
            if let Part::Column { name, index } = part {
                *index = Some(rows.column(name).ok_or_else(|| name.clone())?);
            }
        }
        Ok(())
    }
}

/// The start of a long text, for a message.
fn clip(text: &str) -> String {
    text.chars().take(40).collect()
}

/// One hole, from the text between `${` and `}`.
fn hole(inner: &str, slot: &mut u64) -> Result<Part, TemplateError> {
    let name = inner.trim();
    if name == "journey" {
        return Ok(Part::Journey);
    }
    if let Some(column) = name.strip_prefix("row.") {
        if column.is_empty() {
            return Err(TemplateError(format!(
                "${{{inner}}} names no column: write ${{row.COLUMN}}"
            )));
        }
        return Ok(Part::Column {
            name: column.to_string(),
            index: None,
        });
    }
    if let Some(args) = name
        .strip_prefix("random.int(")
        .and_then(|a| a.strip_suffix(')'))
    {
        let (low, high) = random_bounds(inner, args)?;
        *slot += 1;
        return Ok(Part::RandomInt {
            low,
            high,
            slot: *slot - 1,
        });
    }
    if is_identifier(name) && !RESERVED.contains(&name) {
        return Ok(Part::Var(name.to_string()));
    }
    Err(TemplateError(format!(
        "unknown template variable ${{{inner}}}: {HOLES}"
    )))
}

fn random_bounds(inner: &str, args: &str) -> Result<(i64, i64), TemplateError> {
    let bad = |why: &str| {
        TemplateError(format!(
            "${{{inner}}}: {why}; write ${{random.int(A,B)}} with whole numbers A ≤ B, e.g. \
             ${{random.int(1,100)}}"
        ))
    };
    let (low, high) = args
        .split_once(',')
        .ok_or_else(|| bad("two bounds are needed"))?;
    let number = |t: &str| {
        t.trim()
            .parse::<i64>()
            .map_err(|_| bad("a bound is not a whole number"))
    };
    let (low, high) = (number(low)?, number(high)?);
    if low > high {
        return Err(bad("the bounds run backwards"));
    }
    Ok((low, high))
}

/// A variable's name: a letter or `_`, then letters, digits and `_`.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(text: &str, ctx: &Context) -> String {
        let mut out = String::from("left over from the last request");
        Template::parse(text).expect(text).render(ctx, &mut out);
        out
    }

    fn empty() -> Vars {
        Vars::new()
    }

    #[test]
    fn holes_are_filled_from_the_context() {
        let mut vars = Vars::new();
        vars.set("token", "abc");
        vars.set("id", "7");
        let rows = Rows::for_tests(&["email", "name"], &[&["a@x.org", "Ann"]]);
        let mut t = Template::parse("/u/${row.email}/${ token }?j=${journey}&id=${id}").unwrap();
        t.bind(&rows).unwrap();
        let ctx = Context {
            row: Some(rows.row(0)),
            vars: &vars,
            journey: 12,
            seed: 1,
        };
        let mut out = String::new();
        t.render(&ctx, &mut out);
        assert_eq!(out, "/u/a@x.org/abc?j=12&id=7");
        // The same buffer again: cleared, not appended to.
        t.render(&ctx, &mut out);
        assert_eq!(out, "/u/a@x.org/abc?j=12&id=7");
    }

    #[test]
    fn dollars_that_open_no_hole_stay() {
        let vars = empty();
        let ctx = Context {
            row: None,
            vars: &vars,
            journey: 0,
            seed: 0,
        };
        for (text, want) in [
            ("$5 and $$ and $", "$5 and $$ and $"),
            ("price: $${amount}", "price: ${amount}"),
            // Read from the left: `$`, then `$${` (a literal `${`), then text.
            ("$$${journey}", "$${journey}"),
            ("$ ${journey}", "$ 0"),
            ("$${", "${"),
            ("{}", "{}"),
            ("", ""),
        ] {
            assert_eq!(rendered(text, &ctx), want, "{text}");
        }
    }

    #[test]
    fn bad_holes_say_what_is_accepted() {
        for (text, says) in [
            ("/x/${token", "never closes"),
            ("${}", "unknown template variable ${}"),
            ("${random.float(1,2)}", "unknown template variable"),
            ("${rows.email}", "unknown template variable ${rows.email}"),
            ("${row.}", "names no column"),
            ("${row}", "unknown template variable ${row}"),
            ("${journey-1}", "unknown template variable"),
            ("${random.int(5,1)}", "run backwards"),
            ("${random.int(1)}", "two bounds"),
            ("${random.int(a,2)}", "not a whole number"),
        ] {
            let e = Template::parse(text).expect_err(text).0;
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn random_int_depends_on_the_journey_and_the_seed() {
        let t = Template::parse("${random.int(1,1000000)}").unwrap();
        let vars = empty();
        let draw = |journey, seed| {
            let mut out = String::new();
            let ctx = Context {
                row: None,
                vars: &vars,
                journey,
                seed,
            };
            t.render(&ctx, &mut out);
            out.parse::<i64>().unwrap()
        };
        assert_eq!(draw(3, 9), draw(3, 9), "same journey and seed, same value");
        let values: std::collections::HashSet<i64> = (0..20).map(|j| draw(j, 9)).collect();
        assert!(
            values.len() > 15,
            "journeys draw their own values: {values:?}"
        );
        assert_ne!(draw(3, 9), draw(3, 10), "another seed, another value");
        assert!((0..20).all(|j| (1..=1_000_000).contains(&draw(j, 9))));
    }

    #[test]
    fn two_random_holes_in_one_file_draw_apart() {
        let mut slot = 0;
        let a = Template::parse_numbered("${random.int(0,1000000)}", &mut slot).unwrap();
        let b = Template::parse_numbered("${random.int(0,1000000)}", &mut slot).unwrap();
        assert_eq!(slot, 2);
        let vars = empty();
        let ctx = Context {
            row: None,
            vars: &vars,
            journey: 5,
            seed: 1,
        };
        let (mut x, mut y) = (String::new(), String::new());
        a.render(&ctx, &mut x);
        b.render(&ctx, &mut y);
        assert_ne!(x, y);
    }

    #[test]
    fn names_and_prefix_are_reported() {
        let t = Template::parse("http://h:1/a/${id}/${row.k}/${id2}").unwrap();
        assert_eq!(t.vars().collect::<Vec<_>>(), ["id", "id2"]);
        assert_eq!(t.columns().collect::<Vec<_>>(), ["k"]);
        assert_eq!(t.literal_prefix(), "http://h:1/a/");
        assert!(!t.is_literal());
        assert!(Template::parse("plain $ text").unwrap().is_literal());
    }

    #[test]
    fn unset_variables_and_missing_rows_write_nothing() {
        let vars = empty();
        let ctx = Context {
            row: None,
            vars: &vars,
            journey: 0,
            seed: 0,
        };
        assert_eq!(rendered("[${token}][${row.a}]", &ctx), "[][]");
    }

    #[test]
    fn vars_replace_and_clear() {
        let mut vars = Vars::new();
        vars.set("a", "1");
        vars.set("b", "2");
        vars.set("a", "3");
        assert_eq!(
            (vars.get("a"), vars.get("b"), vars.len()),
            (Some("3"), Some("2"), 2)
        );
        vars.clear();
        assert!(vars.is_empty() && vars.get("a").is_none());
    }
}

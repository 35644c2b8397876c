//! Hostile input for the property tests of every reader of user files.
//!
//! Random bytes rarely get past a parser's first line, so most strategies here start from a
//! real, valid file and damage it the way files get damaged: cut short, a bit flipped, a line
//! lost or doubled, a number replaced by one too large, negative or not a number at all, a JSON
//! field deleted or given a value of the wrong kind.
//!
//! Each property runs [`config`]'s few cases under `cargo test`; `PROPTEST_CASES=1000000` makes
//! the same property a long campaign.
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::Config;
use serde_json::Value;

/// Numbers that break careless arithmetic and parsing: overflow at every width, negatives,
/// non-finite floats, and things that only look like numbers.
pub const HOSTILE_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "-1",
    "0.0",
    "1e-320",
    "0.5",
    "255",
    "256",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e18",
    "1e19",
    "1e308",
    "1e309",
    "-1e309",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "-",
    ".",
    "1.2.3",
    "0x1F",
    "1_000",
    "",
    " ",
    "x",
];

/// `default` cases per property, unless `PROPTEST_CASES` is set: a long campaign then runs the
/// same properties with as many cases as it asks for. (`Config::with_cases` would ignore the
/// variable; `Config::default` reads it.)
pub fn config(default: u32) -> Config {
    let mut config = Config::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default;
    }
    config
}

/// Any bytes, up to `max` of them.
pub fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..=max)
}

/// Lines built from `words` (a format's own keywords), hostile numbers and punctuation: random
/// text that at least speaks the format's vocabulary, so it gets past the first keyword check.
pub fn wordy_text(words: &'static [&'static str]) -> impl Strategy<Value = String> {
    let word = prop_oneof![
        4 => proptest::sample::select(words),
        2 => proptest::sample::select(HOSTILE_NUMBERS),
        1 => proptest::sample::select(&[",", ":", "|", "%", "=", "[", "]", "{", "}", "\"", " ", "\t"][..]),
    ];
    let line = proptest::collection::vec(word, 0..8).prop_map(|w| w.join(" "));
    proptest::collection::vec(line, 0..24).prop_map(|lines| lines.join("\n"))
}

/// One way a file gets damaged. Positions are [`Index`]es, scaled to the file when applied.
#[derive(Debug, Clone)]
pub enum Damage {
    /// Cut the file short.
    Truncate(Index),
    /// Flip one bit of one byte.
    FlipBit(Index, u8),
    /// Put a byte in (often a delimiter or a non-ASCII byte).
    Insert(Index, u8),
    /// Take up to `n` bytes out.
    Delete(Index, usize),
    /// Copy a stretch of bytes to another place.
    Splice { from: Index, len: usize, to: Index },
    /// Replace one number in the text by a hostile one.
    Number(Index, &'static str),
    /// Lose a line.
    DeleteLine(Index),
    /// Cut one line short (a field or column lost), keeping the lines after it.
    TruncateLine(Index, Index),
    /// Lose one word (a run between spaces, tabs or commas) of one line.
    DeleteWord(Index, Index),
    /// Write a line twice.
    DuplicateLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
}

fn damage() -> impl Strategy<Value = Damage> {
    let interesting = prop_oneof![
        Just(b'\n'),
        Just(b','),
        Just(b'"'),
        Just(b'{'),
        Just(b'}'),
        Just(b'['),
        Just(b':'),
        Just(b'%'),
        Just(b'-'),
        Just(b'.'),
        Just(b'0'),
        Just(b'9'),
        Just(0u8),
        Just(0xff_u8),
        any::<u8>(),
    ];
    prop_oneof![
        1 => any::<Index>().prop_map(Damage::Truncate),
        1 => (any::<Index>(), 0..8u8).prop_map(|(i, b)| Damage::FlipBit(i, b)),
        1 => (any::<Index>(), interesting).prop_map(|(i, b)| Damage::Insert(i, b)),
        1 => (any::<Index>(), 1..16usize).prop_map(|(i, n)| Damage::Delete(i, n)),
        1 => (any::<Index>(), 1..64usize, any::<Index>())
            .prop_map(|(from, len, to)| Damage::Splice { from, len, to }),
        4 => (any::<Index>(), proptest::sample::select(HOSTILE_NUMBERS))
            .prop_map(|(i, n)| Damage::Number(i, n)),
        1 => any::<Index>().prop_map(Damage::DeleteLine),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(l, at)| Damage::TruncateLine(l, at)),
        2 => (any::<Index>(), any::<Index>()).prop_map(|(l, w)| Damage::DeleteWord(l, w)),
        1 => any::<Index>().prop_map(Damage::DuplicateLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Damage::SwapLines(a, b)),
    ]
}

impl Damage {
    /// Applies this damage to `bytes`; damage that needs something the file lacks (a number, a
    /// second line) leaves it as it is.
    pub fn apply(&self, bytes: &mut Vec<u8>) {
        let len = bytes.len();
        match *self {
            Damage::Truncate(at) => bytes.truncate(at.index(len + 1)),
            Damage::FlipBit(at, bit) if len > 0 => bytes[at.index(len)] ^= 1 << bit,
            Damage::Insert(at, b) => bytes.insert(at.index(len + 1), b),
            Damage::Delete(at, n) if len > 0 => {
                let start = at.index(len);
                bytes.drain(start..(start + n).min(len));
            }
            Damage::Splice { from, len: n, to } if len > 0 => {
                let start = from.index(len);
                let piece = bytes[start..(start + n).min(len)].to_vec();
                let at = to.index(len + 1);
                bytes.splice(at..at, piece);
            }
            Damage::Number(which, with) => {
                let numbers = number_spans(bytes);
                if !numbers.is_empty() {
                    let (start, end) = numbers[which.index(numbers.len())];
                    bytes.splice(start..end, with.bytes());
                }
            }
            Damage::DeleteLine(which) => edit_lines(bytes, |lines| {
                lines.remove(which.index(lines.len()));
            }),
            Damage::TruncateLine(which, at) => edit_lines(bytes, |lines| {
                let n = lines.len();
                let line = &mut lines[which.index(n)];
                line.truncate(at.index(line.len() + 1));
            }),
            Damage::DeleteWord(which, word) => edit_lines(bytes, |lines| {
                let n = lines.len();
                let line = &mut lines[which.index(n)];
                let words = word_spans(line);
                if !words.is_empty() {
                    let (start, end) = words[word.index(words.len())];
                    line.drain(start..end);
                }
            }),
            Damage::DuplicateLine(which) => edit_lines(bytes, |lines| {
                let i = which.index(lines.len());
                lines.insert(i, lines[i].clone());
            }),
            Damage::SwapLines(a, b) => edit_lines(bytes, |lines| {
                let n = lines.len();
                lines.swap(a.index(n), b.index(n));
            }),
            _ => {}
        }
    }
}

/// Byte ranges of the numbers in `bytes`: a digit (or a sign or dot before one) not preceded by
/// a letter or digit, through the digits, dots, signs and exponents that follow.
pub fn number_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit()
            || (matches!(bytes[i], b'-' | b'.')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_digit));
        let after_word = i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if starts && !after_word {
            let start = i;
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_digit()
                    || matches!(bytes[i], b'.' | b'e' | b'E' | b'+' | b'-'))
            {
                i += 1;
            }
            out.push((start, i));
        } else {
            i += 1;
        }
    }
    out
}

/// Byte ranges of the words of a line: runs of anything but spaces, tabs and commas.
fn word_spans(line: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, b) in line.iter().chain(std::iter::once(&b' ')).enumerate() {
        match (start, matches!(b, b' ' | b'\t' | b',')) {
            (None, false) => start = Some(i),
            (Some(s), true) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    out
}

fn edit_lines(bytes: &mut Vec<u8>, edit: impl FnOnce(&mut Vec<Vec<u8>>)) {
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.len() < 2 {
        return;
    }
    edit(&mut lines);
    *bytes = lines.join(&b'\n');
}

/// `original` with one to four kinds of [`Damage`] done to it.
pub fn damaged(original: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(damage(), 1..=4).prop_map(move |damage| {
        let mut bytes = original.clone();
        for d in &damage {
            d.apply(&mut bytes);
        }
        bytes
    })
}

/// [`damaged`], as text (invalid UTF-8 replaced), for readers that take a `&str`.
pub fn damaged_text(original: &str) -> impl Strategy<Value = String> {
    damaged(original.as_bytes().to_vec())
        .prop_map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// Stands for a raw token that `serde_json::Value` cannot hold (`NaN`, `1e999`); swapped for
/// the token after serialising.
const RAW: &str = "@@sojourn-fuzz-raw@@";

/// Values of the wrong kind or range for any JSON field.
fn hostile_json() -> impl Strategy<Value = Value> {
    use serde_json::json;
    prop_oneof![
        Just(Value::Null),
        Just(json!(true)),
        Just(json!(-1)),
        Just(json!(0)),
        Just(json!(u64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(1e308)),
        Just(json!(-0.5)),
        Just(json!(0.5)),
        Just(json!("")),
        Just(json!("x")),
        Just(json!("-1")),
        Just(json!([])),
        Just(json!({})),
        Just(json!([[[[[[[[[[]]]]]]]]]])),
        Just(json!({ "": null })),
        proptest::sample::select(HOSTILE_NUMBERS)
            .prop_map(|n| Value::String(format!("{RAW}{n}{RAW}"))),
    ]
}

/// One structural edit of a JSON document, at the node `at` (in document order).
#[derive(Debug, Clone)]
pub enum JsonDamage {
    /// Take the node out of its object or array.
    Remove(Index),
    /// Give the node another value.
    Replace(Index, Value),
    /// Copy the node next to itself (arrays) or under a new key (objects).
    Duplicate(Index),
    /// Give one of the document's numbers another value: where arithmetic is.
    Number(Index, Value),
}

/// Numbers of the wrong size or sign, and numbers JSON cannot even hold.
fn hostile_json_number() -> impl Strategy<Value = Value> {
    use serde_json::json;
    prop_oneof![
        Just(json!(0)),
        Just(json!(1)),
        Just(json!(-1)),
        Just(json!(u64::MAX)),
        Just(json!(u64::MAX - 1)),
        Just(json!(i64::MAX)),
        Just(json!(i64::MIN)),
        Just(json!(u32::MAX)),
        Just(json!(1e308)),
        Just(json!(-1e308)),
        Just(json!(0.5)),
        Just(json!(1e-300)),
        proptest::sample::select(&["1e999", "-1e999", "NaN", "18446744073709551616"][..])
            .prop_map(|n| Value::String(format!("{RAW}{n}{RAW}"))),
    ]
}

fn json_damage() -> impl Strategy<Value = JsonDamage> {
    prop_oneof![
        2 => any::<Index>().prop_map(JsonDamage::Remove),
        3 => (any::<Index>(), hostile_json()).prop_map(|(i, v)| JsonDamage::Replace(i, v)),
        1 => any::<Index>().prop_map(JsonDamage::Duplicate),
        3 => (any::<Index>(), hostile_json_number()).prop_map(|(i, v)| JsonDamage::Number(i, v)),
    ]
}

fn count_numbers(v: &Value) -> usize {
    match v {
        Value::Number(_) => 1,
        Value::Array(items) => items.iter().map(count_numbers).sum(),
        Value::Object(map) => map.values().map(count_numbers).sum(),
        _ => 0,
    }
}

/// Replaces the number `n` (counting from 1, depth first) with `with`.
fn replace_number(v: &mut Value, n: &mut usize, with: &Value) -> bool {
    match v {
        Value::Number(_) => {
            *n -= 1;
            if *n == 0 {
                *v = with.clone();
            }
            *n == 0
        }
        Value::Array(items) => items.iter_mut().any(|x| replace_number(x, n, with)),
        Value::Object(map) => map.values_mut().any(|x| replace_number(x, n, with)),
        _ => false,
    }
}

fn count_nodes(v: &Value) -> usize {
    1 + match v {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// The node number `n` in document order (0 is the root), and what is to be done to it.
fn edit_node(v: &mut Value, n: &mut usize, edit: &JsonDamage) -> bool {
    // Edits happen from the parent, which can remove or add a child.
    match v {
        Value::Array(items) => {
            for i in 0..items.len() {
                *n -= 1;
                if *n == 0 {
                    match edit {
                        JsonDamage::Remove(_) => {
                            items.remove(i);
                        }
                        JsonDamage::Replace(_, with) => items[i] = with.clone(),
                        JsonDamage::Duplicate(_) => items.insert(i, items[i].clone()),
                        JsonDamage::Number(..) => unreachable!("not a node edit"),
                    }
                    return true;
                }
                if edit_node(&mut items[i], n, edit) {
                    return true;
                }
            }
        }
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                *n -= 1;
                if *n == 0 {
                    match edit {
                        JsonDamage::Remove(_) => {
                            map.remove(&k);
                        }
                        JsonDamage::Replace(_, with) => {
                            map.insert(k, with.clone());
                        }
                        JsonDamage::Duplicate(_) => {
                            let copy = map[&k].clone();
                            map.insert(format!("{k}_"), copy);
                        }
                        JsonDamage::Number(..) => unreachable!("not a node edit"),
                    }
                    return true;
                }
                if edit_node(map.get_mut(&k).expect("key just listed"), n, edit) {
                    return true;
                }
            }
        }
        _ => {}
    }
    false
}

impl JsonDamage {
    pub fn apply(&self, doc: &mut Value) {
        if let JsonDamage::Number(at, with) = self {
            let numbers = count_numbers(doc);
            if numbers > 0 {
                replace_number(doc, &mut (1 + at.index(numbers)), with);
            }
            return;
        }
        let (JsonDamage::Remove(at) | JsonDamage::Replace(at, _) | JsonDamage::Duplicate(at)) =
            self
        else {
            unreachable!("numbers are damaged above")
        };
        let nodes = count_nodes(doc);
        if nodes < 2 {
            return;
        }
        // Never the root: a document that is only a hostile value is random input's job.
        let mut n = 1 + at.index(nodes - 1);
        edit_node(doc, &mut n, self);
    }
}

/// Serialises `doc`, putting raw tokens where [`hostile_json`] asked for them.
fn to_text(doc: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(doc)
    } else {
        serde_json::to_string(doc)
    }
    .expect("a Value serialises");
    text.replace(&format!("\"{RAW}"), "")
        .replace(&format!("{RAW}\""), "")
}

/// `doc` with one to three [`JsonDamage`]s done to it, as text (pretty or compact), and now and
/// then a [`Damage`] to the text as well.
pub fn damaged_json(doc: Value) -> impl Strategy<Value = String> {
    (
        proptest::collection::vec(json_damage(), 1..=3),
        any::<bool>(),
        proptest::option::weighted(0.2, damage()),
    )
        .prop_map(move |(edits, pretty, text_damage)| {
            let mut doc = doc.clone();
            for e in &edits {
                e.apply(&mut doc);
            }
            let text = to_text(&doc, pretty);
            match text_damage {
                Some(d) => {
                    let mut bytes = text.into_bytes();
                    d.apply(&mut bytes);
                    String::from_utf8_lossy(&bytes).into_owned()
                }
                None => text,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_found_where_a_reader_would_see_them() {
        let text = b"p99 = 12.5ms, count 300, -4, x1, 1e9";
        let found: Vec<&[u8]> = number_spans(text)
            .into_iter()
            .map(|(s, e)| &text[s..e])
            .collect();
        // "99" is part of the word p99, "1" of x1.
        let want: Vec<&[u8]> = vec![b"12.5", b"300", b"-4", b"1e9"];
        assert_eq!(found, want);
    }

    #[test]
    fn words_are_split_at_spaces_tabs_and_commas() {
        let line = b"  Latency\t11.04ms,2.64ms  x";
        let words: Vec<&[u8]> = word_spans(line)
            .into_iter()
            .map(|(s, e)| &line[s..e])
            .collect();
        let want: Vec<&[u8]> = vec![b"Latency", b"11.04ms", b"2.64ms", b"x"];
        assert_eq!(words, want);
    }

    #[test]
    fn raw_tokens_replace_their_placeholder() {
        let doc = serde_json::json!({ "a": format!("{RAW}NaN{RAW}"), "b": 1 });
        assert_eq!(to_text(&doc, false), r#"{"a":NaN,"b":1}"#);
    }

    #[test]
    fn json_damage_reaches_every_node() {
        let doc = serde_json::json!({ "a": [1, { "b": 2 }], "c": 3 });
        // Nodes after the root, in document order: a, 1, {b}, b, c.
        let removed: Vec<String> = (1..=5)
            .map(|mut n| {
                let mut d = doc.clone();
                assert!(edit_node(&mut d, &mut n, &JsonDamage::Remove(any_index())));
                d.to_string()
            })
            .collect();
        assert_eq!(
            removed,
            [
                r#"{"c":3}"#,
                r#"{"a":[{"b":2}],"c":3}"#,
                r#"{"a":[1],"c":3}"#,
                r#"{"a":[1,{}],"c":3}"#,
                r#"{"a":[1,{"b":2}]}"#,
            ]
        );
    }

    /// `edit_node` ignores the edit's own index; any will do.
    fn any_index() -> Index {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        any::<Index>().new_tree(&mut runner).unwrap().current()
    }

    proptest! {
        #![proptest_config(config(64))]

        #[test]
        fn damage_never_panics(original in bytes(64), d in damage()) {
            let mut b = original;
            d.apply(&mut b);
        }
    }
}

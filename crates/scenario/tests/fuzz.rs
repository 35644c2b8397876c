//! Hostile scenario files: the TOML reader never panics, names the field or line of what it
//! refuses, and whatever it accepts is a scenario every caller can use without panicking.
//!
//! Short under `cargo test`; `PROPTEST_CASES=1000000 cargo test --release -p sojourn-scenario
//! --test fuzz` is the long campaign.
use std::time::Duration;

use proptest::prelude::*;
use sojourn_scenario::{builtins, Scenario, ScenarioError};
use sojourn_testkit::fuzz::{config, damaged_json, damaged_text, wordy_text, HOSTILE_NUMBERS};

/// The example from docs/scenarios.md, with a fault of every kind added.
const EVERYTHING: &str = r#"
name = "checkout"
seed = 7
workers = 4
clock = "first-request"

[law]
kind = "lognormal"
median = "8ms"
sigma = 0.5

[[faults]]
kind = "pause"
every = "10s"
duration = "200ms"
first = "5s"

[[faults]]
kind = "stall"
at = "30s"
duration = "1s"

[[faults]]
kind = "ramp"
start = "20s"
end = "50s"
scale = 10

[[faults]]
kind = "every-nth"
n = 500
takes = "200ms"

[[faults]]
kind = "slow-fraction"
percent = 1
adds = "50ms"
seed = 3

[[faults]]
kind = "cap"
limit = 5
queue = 100

[[faults]]
kind = "errors"
percent = "2%"
status = 503

[[faults]]
kind = "reset"
percent = 0.5
"#;

/// Valid files to damage: every built-in in its TOML form, and [`EVERYTHING`].
fn originals() -> Vec<String> {
    let mut out: Vec<String> = builtins()
        .iter()
        .map(|b| Scenario::builtin(b.name, &[]).unwrap().to_toml())
        .collect();
    out.push(EVERYTHING.to_string());
    out
}

/// What any caller may ask of an accepted scenario: none of it may panic, and its TOML form
/// reads back to the same scenario.
fn check_usable(s: &Scenario) -> Result<(), TestCaseError> {
    let _ = s.to_string();
    let times = [
        Duration::ZERO,
        Duration::from_millis(1),
        Duration::from_secs(30),
        Duration::from_secs(86_400),
    ];
    for index in [0, 1, 499, 500, u64::MAX / 2, u64::MAX - 1] {
        for &t in &times {
            let service = s.service_time(index, t);
            prop_assert!(service <= sojourn_scenario::MAX_SERVICE);
            let left = s.departure(index, t);
            prop_assert!(
                left >= t + service,
                "left at {left:?}, before {t:?} + {service:?}"
            );
            let _ = (s.status(index), s.resets(index));
        }
    }
    let _ = (
        s.admission(),
        s.baseline(7),
        s.delayed(Duration::from_secs(10)),
    );
    let windows = s.windows(Duration::from_secs(3600));
    prop_assert!(windows.iter().all(|w| w.start <= w.end));
    let back = Scenario::from_toml_str(&s.to_toml(), "other")
        .map_err(|e| TestCaseError::fail(format!("its own TOML form is refused: {e}")))?;
    prop_assert_eq!(&back, s);
    Ok(())
}

/// A refusal must say where: a field's path, or the line of a syntax error.
fn check_error(e: &ScenarioError) -> Result<(), TestCaseError> {
    let message = e.to_string();
    prop_assert!(!message.trim().is_empty());
    match e {
        ScenarioError::Field { path, .. }
        | ScenarioError::Missing { path, .. }
        | ScenarioError::UnknownField { path, .. } => {
            prop_assert!(!path.is_empty(), "no field named: {message}");
            prop_assert!(message.starts_with(path.as_str()), "{message}");
        }
        ScenarioError::Syntax(_) => prop_assert!(message.contains("line"), "{message}"),
        other => prop_assert!(false, "a file's text cannot cause {other:?}"),
    }
    Ok(())
}

fn check(text: &str) -> Result<(), TestCaseError> {
    match Scenario::from_toml_str(text, "fuzz") {
        Ok(s) => check_usable(&s),
        Err(e) => check_error(&e),
    }
}

/// The TOML vocabulary of a scenario file, for random text that gets past the first key.
const WORDS: &[&str] = &[
    "name",
    "seed",
    "workers",
    "clock",
    "[law]",
    "[[faults]]",
    "kind",
    "=",
    "\"fixed\"",
    "\"uniform\"",
    "\"lognormal\"",
    "\"bimodal\"",
    "\"exponential\"",
    "\"stall\"",
    "\"pause\"",
    "\"ramp\"",
    "\"cap\"",
    "value",
    "at",
    "duration",
    "every",
    "first",
    "start",
    "end",
    "scale",
    "\"10ms\"",
    "\"1s\"",
    "\"0s\"",
    "\"1ns\"",
    "\n",
];

/// What a field holds, for [`assembled`] to give it a value of the right form (mostly).
#[derive(Clone, Copy, Debug)]
enum Form {
    Time,
    Number,
    Whole,
    Status,
    Percent,
}

/// Every kind of law and fault with its fields, and a kind that does not exist.
const LAWS: &[(&str, &[(&str, Form)])] = &[
    ("fixed", &[("value", Form::Time)]),
    ("uniform", &[("min", Form::Time), ("max", Form::Time)]),
    ("exponential", &[("mean", Form::Time)]),
    (
        "lognormal",
        &[("median", Form::Time), ("sigma", Form::Number)],
    ),
    (
        "bimodal",
        &[
            ("fast", Form::Time),
            ("slow", Form::Time),
            ("slow_percent", Form::Percent),
        ],
    ),
    ("weibull", &[("shape", Form::Number)]),
];
const FAULTS: &[(&str, &[(&str, Form)])] = &[
    ("stall", &[("at", Form::Time), ("duration", Form::Time)]),
    (
        "pause",
        &[
            ("every", Form::Time),
            ("duration", Form::Time),
            ("first", Form::Time),
        ],
    ),
    (
        "ramp",
        &[
            ("start", Form::Time),
            ("end", Form::Time),
            ("scale", Form::Number),
        ],
    ),
    ("every-nth", &[("n", Form::Whole), ("takes", Form::Time)]),
    ("every-nth", &[("n", Form::Whole), ("adds", Form::Time)]),
    (
        "slow-fraction",
        &[
            ("percent", Form::Percent),
            ("adds", Form::Time),
            ("seed", Form::Whole),
        ],
    ),
    ("cap", &[("limit", Form::Whole), ("queue", Form::Whole)]),
    (
        "errors",
        &[
            ("percent", Form::Percent),
            ("status", Form::Status),
            ("seed", Form::Whole),
        ],
    ),
    (
        "reset",
        &[("percent", Form::Percent), ("seed", Form::Whole)],
    ),
    ("chaos", &[("level", Form::Number)]),
];

/// Durations a scenario may hold, from a nanosecond to the longest it takes.
const DURATIONS: &[&str] = &[
    "1ns", "2ns", "3ns", "1us", "10ms", "200ms", "1s", "1.5s", "1m 30s", "30s", "1h", "100y",
];
/// Durations it may not: zero (where a positive one is needed), too long to add, malformed.
const BAD_DURATIONS: &[&str] = &[
    "0s",
    "100y 1s",
    "500000y",
    "584942417355y",
    "18446744073709551615s",
    "-1s",
    "",
    "10",
    "ms",
];

fn plausible(form: Form) -> BoxedStrategy<String> {
    let quoted = |list: &'static [&'static str]| {
        proptest::sample::select(list).prop_map(|d| format!("{d:?}"))
    };
    let bad_number = prop_oneof![
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-1.0".to_string()),
        Just("0".to_string()),
        Just("\"2.5\"".to_string()),
        Just("9223372036854775807".to_string()),
        Just("\"18446744073709551615\"".to_string()),
        Just("\"unbounded\"".to_string()),
        Just("100.0001".to_string()),
        Just("\"5%\"".to_string()),
    ];
    let good = match form {
        Form::Time => quoted(DURATIONS).boxed(),
        Form::Number => (0.01..20.0f64).prop_map(|x| x.to_string()).boxed(),
        Form::Whole => (1..1000i64).prop_map(|n| n.to_string()).boxed(),
        Form::Status => (200..600i64).prop_map(|n| n.to_string()).boxed(),
        Form::Percent => (0.0..=100.0f64).prop_map(|x| x.to_string()).boxed(),
    };
    let bad = match form {
        Form::Time => quoted(BAD_DURATIONS).boxed(),
        _ => bad_number.boxed(),
    };
    prop_oneof![4 => good, 1 => bad].boxed()
}

/// A value of no particular form: hostile numbers bare and quoted, and other TOML types.
fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => proptest::sample::select(&[
            "0", "-1", "255", "65536", "4294967296", "9223372036854775807",
            "-9223372036854775808", "1e308", "-1e309", "nan", "-inf", "1.5",
        ][..])
        .prop_map(String::from),
        2 => proptest::sample::select(HOSTILE_NUMBERS).prop_map(|n| format!("{n:?}")),
        1 => Just("[]".to_string()),
        1 => Just("true".to_string()),
        1 => Just("{ a = 1 }".to_string()),
    ]
}

/// One field: usually a value of its form, sometimes a hostile one, sometimes left out.
fn field(key: &'static str, form: Form) -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        8 => plausible(form).prop_map(move |v| Some(format!("{key} = {v}"))),
        1 => hostile().prop_map(move |v| Some(format!("{key} = {v}"))),
        1 => Just(None),
    ]
}

/// A `[law]` or `[[faults]]` table: a kind, its fields, and now and then a stray field.
fn table(
    header: &'static str,
    kinds: &'static [(&'static str, &'static [(&'static str, Form)])],
) -> impl Strategy<Value = String> {
    proptest::sample::select(kinds).prop_flat_map(move |(kind, fields)| {
        let fields: Vec<_> = fields.iter().map(|&(k, form)| field(k, form)).collect();
        (fields, proptest::option::weighted(0.05, Just("stray = 1"))).prop_map(
            move |(fields, stray)| {
                let mut out = format!("{header}\nkind = {kind:?}\n");
                for f in fields.into_iter().flatten().chain(stray.map(String::from)) {
                    out.push_str(&f);
                    out.push('\n');
                }
                out
            },
        )
    })
}

/// A scenario file put together from the language's own kinds and fields, with values mostly
/// of the right form and range: it reaches the validation of each field and the checks across
/// fields, where damaged text rarely gets.
fn assembled() -> impl Strategy<Value = String> {
    let top = (
        field("seed", Form::Whole),
        field("workers", Form::Whole),
        proptest::option::of(proptest::sample::select(
            &[
                "clock = \"server-start\"",
                "clock = \"first\"",
                "clock = \"noon\"",
            ][..],
        )),
    );
    (
        top,
        table("[law]", LAWS),
        proptest::collection::vec(table("[[faults]]", FAULTS), 0..4),
    )
        .prop_map(|((seed, workers, clock), law, faults)| {
            let mut out = String::new();
            for line in [seed, workers, clock.map(String::from)]
                .into_iter()
                .flatten()
            {
                out.push_str(&line);
                out.push('\n');
            }
            out.push_str(&law);
            for f in faults {
                out.push_str(&f);
            }
            out
        })
}

fn original() -> impl Strategy<Value = String> {
    proptest::sample::select(originals())
}

proptest! {
    // A case takes tens of microseconds: enough of them to reach rare combinations (one field
    // of one kind of law given one kind of bad value) under plain `cargo test`.
    #![proptest_config(config(2048))]

    #[test]
    fn any_text_is_refused_by_name_or_usable(text in any::<String>()) {
        check(&text)?;
    }

    #[test]
    fn wordy_text_is_refused_by_name_or_usable(text in wordy_text(WORDS)) {
        check(&text)?;
    }

    #[test]
    fn damaged_files_are_refused_by_name_or_usable(
        text in original().prop_flat_map(|t| damaged_text(&t)),
    ) {
        check(&text)?;
    }

    /// Result files carry the scenario as JSON; the report rebuilds it from there.
    #[test]
    fn damaged_json_is_refused_or_usable(text in original().prop_flat_map(|t| {
        let s = Scenario::from_toml_str(&t, "fuzz").unwrap();
        damaged_json(serde_json::to_value(&s).unwrap())
    })) {
        match serde_json::from_str::<Scenario>(&text) {
            Ok(s) => check_usable(&s)?,
            Err(e) => prop_assert!(!e.to_string().trim().is_empty()),
        }
    }

    #[test]
    fn assembled_files_are_refused_by_name_or_usable(text in assembled()) {
        check(&text)?;
    }

    /// Blank lines, comments, trailing spaces and CRLF line ends change nothing.
    #[test]
    fn layout_changes_nothing(
        text in original(),
        crlf in any::<bool>(),
        comment in any::<bool>(),
        pad in "[ \t]{0,3}",
    ) {
        let want = Scenario::from_toml_str(&text, "fuzz").unwrap();
        let end = if crlf { "\r\n" } else { "\n" };
        let note = if comment { " # note" } else { "" };
        let relaid: String = text
            .lines()
            .map(|l| if l.trim().is_empty() { format!("{pad}{end}") } else { format!("{l}{pad}{note}{end}") })
            .collect::<String>() + end;
        let got = Scenario::from_toml_str(&relaid, "fuzz")
            .map_err(|e| TestCaseError::fail(format!("{e}\n{relaid}")))?;
        prop_assert_eq!(got, want);
    }
}

// ---- inputs that once crashed ------------------------------------------------------------------

/// A stall at the end of time: `at + duration` overflowed a `Duration`.
#[test]
fn a_stall_beyond_a_century_is_refused_by_name() {
    let text = "[law]\nkind = \"fixed\"\nvalue = \"10ms\"\n[[faults]]\nkind = \"stall\"\n\
                at = \"18446744073709551615s\"\nduration = \"1s\"\n";
    let e = Scenario::from_toml_str(text, "x").unwrap_err().to_string();
    assert!(
        e.starts_with("faults[0].at: ") && e.contains("at most 100years"),
        "{e}"
    );
}

/// `every-nth` with n = u64::MAX: its description computed 2n.
#[test]
fn every_nth_at_the_largest_n_describes_itself() {
    let text = "[law]\nkind = \"fixed\"\nvalue = \"1ns\"\n[[faults]]\nkind = \"every-nth\"\n\
                n = \"18446744073709551615\"\ntakes = \"1ns\"\n";
    let s = Scenario::from_toml_str(text, "x").unwrap();
    assert!(
        s.to_string()
            .contains("every request number 18446744073709551615 takes 1ns"),
        "{s}"
    );
}

/// A pause every 2 ns gave one window per 2 ns of the horizon: a report of an hour-long run
/// asked for 1.8 × 10^12 of them.
#[test]
fn a_pause_every_two_nanoseconds_gives_a_bounded_list_of_windows() {
    let text = "[law]\nkind = \"fixed\"\nvalue = \"1ms\"\n[[faults]]\nkind = \"pause\"\n\
                every = \"2ns\"\nduration = \"1ns\"\n";
    let s = Scenario::from_toml_str(text, "x").unwrap();
    let windows = s.windows(Duration::from_secs(3600));
    assert_eq!(windows.len(), sojourn_scenario::MAX_PAUSE_WINDOWS);
}

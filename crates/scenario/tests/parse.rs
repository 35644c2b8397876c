//! Parsing: built-ins, `--set` overrides, the TOML form, and the error for every bad field.
use std::time::Duration;

use sojourn_scenario::{builtins, Fault, Law, Override, Scenario, ScenarioError};

const MS: Duration = Duration::from_millis(1);
const S: Duration = Duration::from_secs(1);

fn set(list: &[&str]) -> Vec<Override> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn every_builtin_round_trips_through_toml_and_json() {
    assert_eq!(builtins().len(), 8);
    for b in builtins() {
        let s = Scenario::builtin(b.name, &[]).unwrap();
        assert_eq!(s.name(), b.name);
        let text = s.to_toml();
        let back = Scenario::from_toml_str(&text, "other").unwrap();
        assert_eq!(back, s, "{}:\n{text}", b.name);
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json["name"], b.name, "{json}");
        assert!(json["law"]["kind"].is_string(), "{json}");
        assert_eq!(serde_json::from_value::<Scenario>(json).unwrap(), s);
    }
}

#[test]
fn builtins_have_the_seeds_semantics() {
    let hiccup = Scenario::builtin("hiccup", &[]).unwrap();
    assert_eq!(hiccup.law(), &Law::Fixed(10 * MS));
    assert_eq!(
        hiccup.faults(),
        &[Fault::Stall {
            at: 30 * S,
            duration: S
        }]
    );
    assert_eq!(hiccup.workers(), None);

    let nth = Scenario::builtin("every-nth", &[]).unwrap();
    assert_eq!(nth.workers(), Some(1));
    assert_eq!(nth.service_time(499, S), 200 * MS);
    assert_eq!(nth.service_time(500, S), MS);

    let bimodal = Scenario::builtin("bimodal", &[]).unwrap();
    assert_eq!(bimodal.workers(), Some(1));
    let capacity = 1.0 / bimodal.law().mean().as_secs_f64();
    assert!((capacity - 34.48).abs() < 0.05, "{capacity}");

    let saturation = Scenario::builtin("saturation", &[]).unwrap();
    assert_eq!(saturation.admission().unwrap().limit, 50);
    assert_eq!(saturation.admission().unwrap().queue, None);

    let spike = Scenario::builtin("spike", &[]).unwrap();
    assert_eq!(
        spike.faults(),
        &[Fault::Stall {
            at: 5 * S,
            duration: 2 * S
        }]
    );
}

#[test]
fn overrides_change_only_what_they_name() {
    let s = Scenario::builtin("hiccup", &set(&["hiccup.at=5s", "hiccup.duration=250ms"])).unwrap();
    assert_eq!(
        s.faults(),
        &[Fault::Stall {
            at: 5 * S,
            duration: 250 * MS
        }]
    );
    assert_eq!(s.law(), &Law::Fixed(10 * MS));

    let s = Scenario::builtin(
        "saturation",
        &set(&["saturation.cap=5", "saturation.queue=100"]),
    )
    .unwrap();
    let a = s.admission().unwrap();
    assert_eq!((a.limit, a.queue), (5, Some(100)));

    let s = Scenario::builtin(
        "healthy",
        &set(&["healthy.workers=3", "healthy.clock=server-start"]),
    )
    .unwrap();
    assert_eq!(s.workers(), Some(3));
    assert_eq!(s.clock(), sojourn_scenario::ClockOrigin::ServerStart);

    let s = Scenario::builtin("every-nth", &set(&["every-nth.workers=unlimited"])).unwrap();
    assert_eq!(s.workers(), None);
}

/// Each row: scenario, overrides, a piece of the message that must appear.
#[test]
fn every_bad_override_names_the_parameter_and_the_accepted_form() {
    let rows: &[(&str, &str, &str)] = &[
        (
            "hiccup",
            "hiccup.at=soon",
            r#"hiccup.at: expected a duration like "10s" or "200ms", got "soon""#,
        ),
        (
            "hiccup",
            "hiccup.duration=0s",
            r#"hiccup.duration: expected a duration above zero"#,
        ),
        (
            "hiccup",
            "hiccup.when=5s",
            "hiccup.when: unknown field; accepted: hiccup.baseline, hiccup.at",
        ),
        // A parameter of another scenario than the one being served.
        (
            "hiccup",
            "ramp.start=5s",
            "ramp.start: unknown field; accepted: hiccup.baseline",
        ),
        (
            "hiccup",
            "hiccup.workers=0",
            r#"hiccup.workers: expected a whole number of at least 1, or "unlimited", got "0""#,
        ),
        (
            "hiccup",
            "hiccup.clock=noon",
            r#"hiccup.clock: expected "first-request" or "server-start", got "noon""#,
        ),
        (
            "hiccup",
            "hiccup.seed=-4",
            "hiccup.seed: expected a whole number from 0 to",
        ),
        (
            "gc-pauses",
            "gc-pauses.duration=20s",
            "gc-pauses.duration: expected a duration shorter than gc-pauses.every (10s)",
        ),
        (
            "ramp",
            "ramp.end=10s",
            "ramp.end: expected a duration after ramp.start (20s)",
        ),
        (
            "ramp",
            "ramp.from=0ms",
            "ramp.from: expected a duration above zero",
        ),
        (
            "saturation",
            "saturation.cap=0",
            r#"saturation.cap: expected a whole number of at least 1, like 5, got "0""#,
        ),
        (
            "saturation",
            "saturation.queue=lots",
            r#"saturation.queue: expected a whole number of waiting requests (0 or more), or "unbounded", got "lots""#,
        ),
        (
            "every-nth",
            "every-nth.n=0",
            r#"every-nth.n: expected a whole number of at least 1, like 500, got "0""#,
        ),
        (
            "bimodal",
            "bimodal.percent=150",
            r#"bimodal.percent: expected a percentage from 0 to 100, like 5 or 0.5, got "150""#,
        ),
    ];
    for (name, o, want) in rows {
        let err = Scenario::builtin(name, &set(&[o])).unwrap_err().to_string();
        assert!(err.contains(want), "{o}:\n got  {err}\n want {want}");
    }
}

#[test]
fn malformed_overrides_are_rejected_with_the_form() {
    for given in ["hiccupat5s", "hiccup.at", ".at=5s", "hiccup.=5s"] {
        let err = given.parse::<Override>().unwrap_err();
        assert!(matches!(err, ScenarioError::BadOverride { .. }), "{given}");
        assert!(err
            .to_string()
            .contains("NAME.PARAM=VALUE, like hiccup.at=5s"));
    }
}

const GOOD: &str = r#"
name = "kitchen-sink"
seed = 42
workers = 4
clock = "server-start"

[law]
kind = "lognormal"
median = "8ms"
sigma = 0.5

[[faults]]
kind = "stall"
at = "3s"
duration = "1.5s"

[[faults]]
kind = "pause"
every = "10s"
duration = "200ms"

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
percent = 1.5
adds = "50ms"
seed = 9

[[faults]]
kind = "cap"
limit = 2
queue = 10

[[faults]]
kind = "errors"
percent = 2
status = 500

[[faults]]
kind = "reset"
percent = "0.5%"
"#;

#[test]
fn a_file_with_every_fault_parses_and_round_trips() {
    let s = Scenario::from_toml_str(GOOD, "unused").unwrap();
    assert_eq!(s.name(), "kitchen-sink");
    assert_eq!((s.seed(), s.workers()), (42, Some(4)));
    assert_eq!(s.faults().len(), 8);
    assert_eq!(
        s.faults()[0],
        Fault::Stall {
            at: 3 * S,
            duration: 1500 * MS
        }
    );
    // `first` defaults to `every`.
    assert!(matches!(s.faults()[1], Fault::Pause { first, .. } if first == 10 * S));
    assert_eq!(s.admission().unwrap().limit, 2);
    assert_eq!(Scenario::from_toml_str(&s.to_toml(), "x").unwrap(), s);
}

#[test]
fn json_is_validated_like_a_file() {
    let err = serde_json::from_str::<Scenario>(r#"{"law": {"kind": "fixed", "value": "soon"}}"#)
        .unwrap_err();
    assert!(
        err.to_string()
            .contains(r#"law.value: expected a duration like "10s" or "200ms", got "soon""#),
        "{err}"
    );
}

#[test]
fn the_name_defaults_to_the_one_given() {
    let s = Scenario::from_toml_str("[law]\nkind = \"fixed\"\nvalue = \"1ms\"", "my-file").unwrap();
    assert_eq!(s.name(), "my-file");
}

/// Each row: a change to a valid file, and a piece of the error it must give.
#[test]
fn every_bad_field_in_a_file_is_named() {
    let law = "[law]\nkind = \"fixed\"\nvalue = \"10ms\"\n";
    let rows: Vec<(String, &str)> = vec![
        (format!("{law}[[faults]]\nkind = \"stall\"\nat = \"1s\"\nduration = \"1s\"\n[[faults]]\nkind = \"pause\"\nevery = \"ten\"\nduration = \"1s\""),
            r#"faults[1].every: expected a duration like "10s" or "200ms", got "ten""#),
        (format!("wrokers = 1\n{law}"), "wrokers: unknown field; accepted: name, seed, workers, clock, law, faults"),
        ("seed = 1".to_string(), "law: missing; expected a table like [law]"),
        ("[law]\nkind = \"gaussian\"".to_string(), r#"law.kind: expected one of fixed, uniform, exponential, lognormal, bimodal, got "gaussian""#),
        ("[law]\nkind = \"fixed\"\nvalue = 10".to_string(), "law.value: expected a duration like \"10s\" or \"200ms\", got 10"),
        ("[law]\nkind = \"fixed\"\nvalue = \"1ms\"\nmean = \"1ms\"".to_string(), "law.mean: unknown field; accepted: kind, value"),
        ("[law]\nkind = \"uniform\"\nmin = \"5ms\"\nmax = \"1ms\"".to_string(), "law.max: expected a duration no less than min (5ms)"),
        ("[law]\nkind = \"exponential\"\nmean = \"0s\"".to_string(), "law.mean: expected a duration above zero"),
        ("[law]\nkind = \"lognormal\"\nmedian = \"5ms\"\nsigma = -1".to_string(), "law.sigma: expected a number from 0 to 10"),
        ("[law]\nkind = \"bimodal\"\nfast = \"5ms\"\nslow = \"50ms\"".to_string(), "law.slow_percent: missing; expected a percentage"),
        (format!("{law}[[faults]]\nkind = \"stal\""), r#"faults[0].kind: expected one of stall, pause, ramp, every-nth, slow-fraction, cap, errors, reset, got "stal""#),
        (format!("{law}[[faults]]\nkind = \"stall\"\nat = \"1s\""), "faults[0].duration: missing; expected a duration above zero"),
        (format!("{law}[[faults]]\nkind = \"stall\"\nat = \"1s\"\nduraton = \"1s\"\nduration = \"1s\""), "faults[0].duraton: unknown field; accepted: kind, at, duration"),
        (format!("{law}[[faults]]\nkind = \"pause\"\nevery = \"1s\"\nduration = \"1s\""), "faults[0].duration: expected a duration shorter than every (1s)"),
        (format!("{law}[[faults]]\nkind = \"ramp\"\nstart = \"5s\"\nend = \"5s\"\nscale = 2"), "faults[0].end: expected a duration after start (5s)"),
        (format!("{law}[[faults]]\nkind = \"ramp\"\nstart = \"5s\"\nend = \"6s\"\nscale = 0"), "faults[0].scale: expected a factor above 0"),
        (format!("{law}[[faults]]\nkind = \"every-nth\"\nn = 0\ntakes = \"1s\""), "faults[0].n: expected a whole number of at least 1, like 500, got 0"),
        (format!("{law}[[faults]]\nkind = \"every-nth\"\nn = 5"), "faults[0].takes: missing; expected a duration like \"200ms\" (or adds"),
        (format!("{law}[[faults]]\nkind = \"every-nth\"\nn = 5\ntakes = \"1s\"\nadds = \"1s\""), "faults[0].adds: expected only one of takes and adds"),
        (format!("{law}[[faults]]\nkind = \"slow-fraction\"\npercent = 101\ntakes = \"1s\""), "faults[0].percent: expected a percentage from 0 to 100, like 5 or 0.5, got 101"),
        (format!("{law}[[faults]]\nkind = \"errors\"\npercent = 1\nstatus = 42"), "faults[0].status: expected an HTTP status from 200 to 599, like 500, got 42"),
        (format!("{law}[[faults]]\nkind = \"reset\"\npercent = 1\nseed = -1"), "faults[0].seed: expected a whole number from 0 to"),
        (format!("{law}[[faults]]\nkind = \"cap\"\nlimit = 0"), "faults[0].limit: expected a whole number of at least 1, like 5, got 0"),
        (format!("{law}[[faults]]\nkind = \"cap\"\nlimit = 1\n[[faults]]\nkind = \"cap\"\nlimit = 2"), "faults[1].kind: expected at most one cap fault"),
        (format!("{law}[[faults]]\nkind = \"pause\"\nevery = \"1s\"\nduration = \"600ms\"\n[[faults]]\nkind = \"pause\"\nevery = \"2s\"\nduration = \"1s\""), "faults[1].duration: expected pauses that together close the gate less than 100%"),
        (format!("workers = 0\n{law}"), "workers: expected a whole number of at least 1, or \"unlimited\", got 0"),
        (format!("clock = \"noon\"\n{law}"), "clock: expected \"first-request\" or \"server-start\", got \"noon\""),
        (format!("faults = 3\n{law}"), "faults: expected an array of tables, written [[faults]], got 3"),
        ("[law\nkind = ".to_string(), "not valid TOML"),
    ];
    for (text, want) in rows {
        let err = Scenario::from_toml_str(&text, "t").unwrap_err().to_string();
        assert!(
            err.contains(want),
            "for:\n{text}\n got  {err}\n want {want}"
        );
    }
}

#[test]
fn resolve_takes_a_builtin_or_a_file() {
    let err = Scenario::resolve("hiccups", &[]).unwrap_err().to_string();
    assert!(
        err.contains("unknown scenario \"hiccups\"; built-ins are healthy, hiccup, ramp"),
        "{err}"
    );

    let dir = std::env::temp_dir().join(format!("sojourn-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("slow.toml");
    std::fs::write(&path, "[law]\nkind = \"fixed\"\nvalue = \"3ms\"\n").unwrap();
    let s = Scenario::resolve(path.to_str().unwrap(), &[]).unwrap();
    assert_eq!((s.name(), s.law()), ("slow", &Law::Fixed(3 * MS)));
    let err = Scenario::resolve(path.to_str().unwrap(), &set(&["slow.x=1"])).unwrap_err();
    assert!(matches!(err, ScenarioError::OverrideOnFile { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn display_says_what_is_served() {
    let s = Scenario::builtin("hiccup", &[]).unwrap();
    assert_eq!(
        s.to_string(),
        "hiccup: service fixed 10ms; stall at 30s for 1s; unlimited workers; clock from first request; seed 1"
    );
}

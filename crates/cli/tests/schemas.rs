//! Every document sojourn writes or reads, against its schema in `schema/`, with a real
//! validator (the `jsonschema` crate): each test runs the command that writes the document,
//! through its command line, against a server on 127.0.0.1:0 or in virtual time, and validates
//! what it wrote. Each then breaks the document (drops a required field, gives a field the wrong
//! type, down inside an embedded result too) and checks that the validator refuses it: a
//! validator that accepted everything would pass the first half alone.
//!
//! `merge` writes an ordinary run result (`sojourn.result/5`), so its output is validated
//! against `result.schema.json`. The plan file is TOML: its parsed form (the JSON its TOML
//! parses into) is validated against `plan.schema.json`, for every plan the docs ship.
mod common;

use std::path::Path;

use serde_json::{json, Value};

use common::{sojourn_ok, temp_dir, TestServer};

/// The result schema's `$id`: the sweep and compare schemas refer to it for the results they
/// embed.
const RESULT_ID: &str = "https://sojourn.dev/schema/result/5";

fn schema_file(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../schema")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The validator of `schema/NAME.schema.json`, with the result schema known by its `$id`.
fn validator(name: &str) -> jsonschema::Validator {
    let result = jsonschema::Resource::from_contents(schema_file("result")).unwrap();
    jsonschema::options()
        .with_resource(RESULT_ID, result)
        .build(&schema_file(name))
        .unwrap_or_else(|e| panic!("{name}.schema.json: {e}"))
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "{what} does not match: {errors:#?}");
}

/// Each edit of `doc` (a JSON pointer to the field, and a change: `None` removes it, `Some`
/// replaces it) must make the document invalid.
fn assert_refused(v: &jsonschema::Validator, doc: &Value, edits: &[(&str, Option<Value>)]) {
    assert_valid(v, doc, "the document before the edits");
    for (pointer, change) in edits {
        let mut broken = doc.clone();
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        let holder = broken
            .pointer_mut(parent)
            .unwrap_or_else(|| panic!("{parent}: not in the document"));
        match (holder, change) {
            (Value::Object(map), None) => {
                assert!(map.remove(key).is_some(), "{pointer}: not in the document");
            }
            (Value::Object(map), Some(value)) => {
                assert!(map.contains_key(key), "{pointer}: not in the document");
                map.insert(key.to_string(), value.clone());
            }
            (Value::Array(items), Some(value)) => {
                items[key.parse::<usize>().unwrap()] = value.clone()
            }
            _ => panic!("{pointer}: cannot edit"),
        }
        assert!(
            !v.is_valid(&broken),
            "{pointer} {}: still valid",
            change
                .as_ref()
                .map_or("removed".to_string(), |c| format!("set to {c}"))
        );
    }
}

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `sojourn sweep` (one real step) and `sojourn sim --sweep --search` (virtual time) both write
/// `sojourn.sweep/1`; the documents stored from earlier builds (tests/data/before) still match.
#[test]
fn sweep_documents_match_their_schema() {
    let v = validator("sweep");
    let server = TestServer::start(false);
    let dir = temp_dir("schema-sweep");
    let real = dir.join("real.json");
    sojourn_ok(&[
        "sweep",
        &server.url("http"),
        "--rates",
        "50",
        "--step",
        "1s",
        "--settle",
        "0s",
        "--slo",
        "p99<1s",
        "--threads",
        "1",
        "--json",
        arg(&real),
    ]);
    let simulated = dir.join("sim.json");
    sojourn_ok(&[
        "sim",
        "--scenario",
        "bimodal",
        "--sweep",
        "--search",
        "--from",
        "10",
        "--to",
        "80",
        "--resolution",
        "10",
        "--step",
        "2s",
        "--json",
        arg(&simulated),
    ]);
    let real = read_json(&real);
    let simulated = read_json(&simulated);
    assert_valid(&v, &real, "sojourn sweep's document");
    assert_valid(&v, &simulated, "sojourn sim --sweep's document");
    assert!(simulated["search"].is_object() && real["search"].is_null());
    assert_eq!(real["steps"][0]["step"]["slos"][0]["met"], true);
    let before = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/before");
    for stored in ["sweep/sweep.json", "sim-sweep/sweep.json"] {
        assert_valid(&v, &read_json(&before.join(stored)), stored);
    }
    assert_refused(
        &v,
        &real,
        &[
            ("/bracket", None),
            ("/schema", Some(json!("sojourn.sweep/2"))),
            ("/steps/0/step/status", Some(json!("fine"))),
            ("/steps/0/step/scheduled", Some(json!("50"))),
            ("/steps/0/step/slos/0/met", None),
            // The embedded result is checked against the result schema.
            ("/steps/0/result/counts", None),
            ("/steps/0/result/counts/scheduled", Some(json!(-1))),
        ],
    );
    assert_refused(
        &v,
        &simulated,
        &[
            ("/search/probes/0", Some(json!([10.0, "maybe"]))),
            ("/search/budget_exhausted", None),
        ],
    );
}

/// `sojourn suite` (no peer tool installed: the model and sojourn's own loops) writes
/// `sojourn.suite/1` to OUT/suite.json and to --json; the stored one still matches.
#[test]
fn the_suite_summary_matches_its_schema() {
    let v = validator("suite");
    let dir = temp_dir("schema-suite");
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out_dir = dir.join("out");
    let json = dir.join("summary.json");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args(["suite", "--scenarios", "healthy", "--tools", "wrk"])
        .args(["--duration", "500ms", "--rate", "100", "--out"])
        .arg(&out_dir)
        .arg("--json")
        .arg(&json)
        .env("PATH", "/nonexistent")
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = read_json(&json);
    assert_eq!(summary, read_json(&out_dir.join("suite.json")));
    assert_valid(&v, &summary, "sojourn suite's summary");
    assert_eq!(summary["scenarios"][0]["skipped"][0][0], "wrk");
    let before = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/before/suite/suite.json");
    assert_valid(&v, &read_json(&before), "the stored suite.json");
    assert_refused(
        &v,
        &summary,
        &[
            ("/profile", Some(json!("medium"))),
            ("/scenarios/0/rows/0/verdict", None),
            ("/scenarios/0/rows/1/never_sent", Some(json!(1.5))),
            ("/scenarios/0/rows/0/mode", Some(json!("looping"))),
            ("/scenarios/0/skipped/0", Some(json!(["wrk"]))),
            ("/scenarios/0/duration_ns", Some(json!("500ms"))),
        ],
    );
}

/// Two simulated runs of the same load, one against a stall: `sojourn diff --json` writes
/// `sojourn.diff/1`.
#[test]
fn the_diff_document_matches_its_schema() {
    let v = validator("diff");
    let dir = temp_dir("schema-diff");
    let (a, b) = common::healthy_and_hiccup_runs(&dir);
    let d = dir.join("diff.json");
    sojourn_ok(&[
        "diff",
        arg(&a),
        arg(&b),
        "--draws",
        "200",
        "--json",
        arg(&d),
    ]);
    let d = read_json(&d);
    assert_valid(&v, &d, "sojourn diff's document");
    assert_eq!(d["percentiles"].as_array().map(Vec::len), Some(5));
    assert_refused(
        &v,
        &d,
        &[
            ("/method", None),
            ("/level", Some(json!("95%"))),
            ("/percentiles/0/a", Some(json!("12"))),
            ("/percentiles/0/verdict", Some(json!("worse"))),
            ("/percentiles/0/interval", Some(json!([1]))),
        ],
    );
}

/// `sojourn compare --json` writes `sojourn.compare/1`, both loops' results inside.
#[test]
fn the_compare_document_matches_its_schema() {
    let v = validator("compare");
    let server = TestServer::start(false);
    let dir = temp_dir("schema-compare");
    let json = dir.join("compare.json");
    let report = dir.join("compare.html");
    sojourn_ok(&[
        "compare",
        &server.url("http"),
        "--rate",
        "100",
        "--duration",
        "1s",
        "--threads",
        "1",
        "--report",
        arg(&report),
        "--json",
        arg(&json),
    ]);
    let doc = read_json(&json);
    assert_valid(&v, &doc, "sojourn compare's document");
    assert_eq!(
        (doc["closed"]["mode"].as_str(), doc["open"]["mode"].as_str()),
        (Some("paced"), Some("open"))
    );
    assert_refused(
        &v,
        &doc,
        &[
            ("/finding", None),
            ("/closed_mode", Some(json!("sometimes"))),
            ("/p99_ratio", Some(json!("2x"))),
            ("/closed/counts", None),
            ("/open/mode", Some(json!("sideways"))),
        ],
    );
}

/// `sojourn run` on two shards, then `sojourn merge`: the merged document is an ordinary run
/// result, `sojourn.result/5`, with its shard table.
#[test]
fn the_merged_document_is_a_run_result() {
    let v = validator("result");
    let server = TestServer::start(false);
    let url = server.url("http");
    let dir = temp_dir("schema-merge");
    let shards = common::shard_runs(&url, "200", 2, &dir, "shard-");
    let merged = dir.join("merged.json");
    sojourn_ok(&[
        "merge",
        arg(&shards[0]),
        arg(&shards[1]),
        "-o",
        arg(&merged),
    ]);
    let doc = read_json(&merged);
    assert_valid(&v, &doc, "sojourn merge's document");
    assert_eq!(doc["schema"], "sojourn.result/5");
    assert_eq!(doc["merged"]["shards"].as_array().map(Vec::len), Some(2));
    assert_refused(
        &v,
        &doc,
        &[
            ("/counts", None),
            ("/counts/scheduled", Some(json!("100"))),
            ("/mode", Some(json!("merged"))),
            ("/schema", Some(json!("sojourn.result/9"))),
        ],
    );
}

/// The plans the repository ships (every TOML block of docs/plans.md and the plan module's
/// example) parse with the plan reader and match `plan.schema.json` as parsed; broken plans
/// are refused by both.
#[test]
fn shipped_plans_match_the_plan_schema_and_broken_ones_do_not() {
    let v = validator("plan");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let docs = std::fs::read_to_string(root.join("docs/plans.md")).unwrap();
    let module = std::fs::read_to_string(root.join("crates/sojourn/src/plan_file.rs")).unwrap();
    let module_doc: String = module
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
        .collect();
    let mut plans = toml_blocks(&docs);
    plans.extend(toml_blocks(&module_doc));
    assert!(plans.len() >= 3, "{} plans found", plans.len());
    let dir = temp_dir("schema-plan");
    // The gRPC plan's call is checked as it is read: its proto and import path beside it.
    std::fs::copy(
        root.join("crates/cli/tests/data/grpc/greeter.proto"),
        dir.join("greeter.proto"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("protos")).unwrap();
    for (i, text) in plans.iter().enumerate() {
        let parsed: Value = toml::from_str(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        assert_valid(&v, &parsed, &format!("plan {i}:\n{text}"));
        assert!(reads(&dir, text).is_ok(), "plan {i} is refused:\n{text}");
    }
    let full = toml_blocks(&docs).remove(0);
    assert!(full.contains("[[stage]]") && full.contains("schema = "));
    for broken in [
        "conections = 5",      // a typo of a key
        "rate = \"fast\"",     // a number as text
        "slo = \"p99<200ms\"", // one objective, not a list
        "http2 = 1",           // a number for a switch
        "schema = \"sojourn.plan/2\"",
        "[[stage]]\nduration = \"5s\"\nrate = 10\nfrom = 0\nto = 10", // a hold and a ramp at once
    ] {
        let text = format!("url = \"http://127.0.0.1:9/\"\n{broken}\n");
        let parsed: Value = toml::from_str(&text).unwrap();
        assert!(!v.is_valid(&parsed), "the schema accepts {broken:?}");
        assert!(reads(&dir, &text).is_err(), "the reader accepts {broken:?}");
    }
}

/// The ```toml blocks of a Markdown text.
fn toml_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```toml") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// The plan reader's verdict on `text`: parsed, and every value through its flag's parser.
fn reads(dir: &Path, text: &str) -> anyhow::Result<()> {
    let path = dir.join("plan.toml");
    std::fs::write(&path, text).unwrap();
    let mut settings = sojourn::RunSettings::default();
    sojourn::plan_file::apply(&mut settings, &path).map(|_| ())
}

/// The journey files the repository ships (the TOML blocks of docs/journeys.md and `demo
/// --journey`'s built-in one) read with the journey reader and match `journey.schema.json` as
/// parsed; broken files are refused by both.
#[test]
fn shipped_journey_files_match_the_journey_schema_and_broken_ones_do_not() {
    let v = validator("journey");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let docs = std::fs::read_to_string(root.join("docs/journeys.md")).unwrap();
    let mut files = toml_blocks(&docs);
    files.push(sojourn::demo::JOURNEY.replace("ORIGIN", "127.0.0.1:9"));
    assert!(files.len() >= 2, "{} journey files found", files.len());
    let dir = temp_dir("schema-journey");
    std::fs::write(dir.join("users.csv"), "email,password\na@example.test,x\n").unwrap();
    let path = dir.join("shop.toml");
    let reads = |text: &str| sojourn_core::journey::JourneyFile::from_str(text, &path);
    for (i, text) in files.iter().enumerate() {
        let parsed: Value = toml::from_str(text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        assert_valid(&v, &parsed, &format!("journey file {i}:\n{text}"));
        if let Err(e) = reads(text) {
            panic!("journey file {i} is refused: {e}\n{text}");
        }
    }
    let good = "base_url = \"http://127.0.0.1:9\"\n[[journey]]\nname = \"j\"\n[[journey.step]]\nname = \"s\"\nurl = \"/\"\n";
    assert!(v.is_valid(&toml::from_str::<Value>(good).unwrap()) && reads(good).is_ok());
    for broken in [
        ("name = \"s\"", "name = \"s\"\nthnk = \"1s\""), // a typo of a key
        ("name = \"s\"", "name = \"s\"\nmethod = \"get\""), // a method in lower case
        ("name = \"s\"", "name = \"s\"\nrepeat = 0"),    // no sends at all
        ("name = \"s\"", "name = \"s\"\non_error = \"skip\""), // no such policy
        ("name = \"s\"", "name = \"s\"\nexpect = { status = 99 }"),
        (
            "name = \"s\"",
            "name = \"s\"\nextract = { t = { json = \"/a\", header = \"X\" } }",
        ),
        ("name = \"j\"", "name = \"a/b\""), // a / in a journey's name
        (
            "[[journey]]\nname = \"j\"\n[[journey.step]]\nname = \"s\"\nurl = \"/\"\n",
            "",
        ),
    ] {
        let text = good.replacen(broken.0, broken.1, 1);
        let parsed: Value = toml::from_str(&text).unwrap();
        assert!(!v.is_valid(&parsed), "the schema accepts {broken:?}");
        assert!(reads(&text).is_err(), "the reader accepts {broken:?}");
    }
}

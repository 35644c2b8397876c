use std::path::Path;
use std::time::Duration;

use super::*;

/// A folder with a journey file's neighbours: a data file with columns email and password, a
/// JSON Lines one, and a body file.
struct Folder {
    dir: tempfile::TempDir,
}

impl Folder {
    fn new() -> Folder {
        let dir = tempfile::tempdir().expect("temp dir");
        let write =
            |name: &str, text: &str| std::fs::write(dir.path().join(name), text).expect("write");
        write(
            "users.csv",
            "email,password\na@x.org,pa\nb@x.org,pb\nc@x.org,pc\n",
        );
        write("users.jsonl", "{\"email\": \"a@x.org\", \"id\": 1}\n");
        write("empty.csv", "email,password\n");
        std::fs::write(
            dir.path().join("latin1.csv"),
            b"email\nj\xe9r\xf4me@x.org\n",
        )
        .expect("write");
        write(
            "login.json",
            "{\"email\": \"${row.email}\", \"password\": \"${row.password}\"}",
        );
        write("bad-body.json", "{\"token\": \"${tokn}\"}");
        Folder { dir }
    }

    fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("shop.toml")
    }

    fn read(&self, text: &str) -> Result<JourneyFile, JourneyError> {
        JourneyFile::from_str(text, &self.path())
    }
}

/// The example of docs/journeys.md: log in, take the token, list, open one, think.
const SHOP: &str = r#"
base_url = "http://127.0.0.1:8080"

[data]
file = "users.csv"
order = "sequential"

[[journey]]
name = "browse"
weight = 3

  [[journey.step]]
  name = "login"
  method = "POST"
  url = "/login"
  headers = { Content-Type = "application/json" }
  body = "@login.json"
  expect = { status = 200, body = "token" }
  extract = { token = { json = "/token" } }
  think = "1s..3s"

  [[journey.step]]
  name = "list"
  url = "/items?page=${random.int(1,5)}"
  headers = { Authorization = "Bearer ${token}" }
  expect = { status = ["2xx", 304] }
  extract = { item = { regex = '"id":\s*(\d+)' } }
  think = "exp(2s)"

  [[journey.step]]
  name = "open"
  url = "/items/${item}"
  headers = { Authorization = "Bearer ${token}", X-Journey = "${journey}" }
  repeat = 2
  on_error = "continue"

[[journey]]
name = "look"

  [[journey.step]]
  name = "home"
  url = "http://127.0.0.1:8080/"
"#;

#[test]
fn the_example_reads_whole() {
    let folder = Folder::new();
    let file = folder.read(SHOP).expect("the example reads");
    assert_eq!(
        file.step_labels(),
        ["browse/login", "browse/list", "browse/open", "look/home"]
    );
    let [browse, look] = file.journeys() else {
        panic!("two journeys")
    };
    assert_eq!((browse.weight, look.weight), (3, 1));
    assert_eq!((browse.first_label(), look.first_label()), (0, 3));
    let [login, list, open] = &browse.steps[..] else {
        panic!("three steps")
    };
    assert_eq!(
        (login.method.as_str(), list.method.as_str()),
        ("POST", "GET")
    );
    assert_eq!(
        login.think,
        Think::Uniform(Duration::from_secs(1), Duration::from_secs(3))
    );
    assert_eq!(list.think, Think::Exponential(Duration::from_secs(2)));
    assert_eq!(
        (open.repeat, open.on_error, login.on_error),
        (2, OnError::Continue, OnError::Fail)
    );
    assert_eq!(login.expect.body.as_deref(), Some("token"));
    assert!(list.expect.check(304, b"").is_ok() && list.expect.check(200, b"").is_ok());
    assert!(list.expect.check(302, b"").is_err());
    assert_eq!(login.extract[0].var(), "token");
    assert_eq!(file.origin().as_str(), "http://127.0.0.1:8080/");
    assert_eq!(file.rows().map(Rows::len), Some(3));
    let names: Vec<&str> = open.headers.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["Authorization", "X-Journey"],
        "headers keep the file's order"
    );
}

#[test]
fn the_example_renders_a_journey() {
    let folder = Folder::new();
    let file = folder.read(SHOP).expect("the example reads");
    let steps = &file.journeys()[0].steps;
    let rows = file.rows().expect("rows");
    let mut vars = Vars::new();
    let row = file.row_of(4, 7).map(|r| rows.row(r));
    let mut out = String::new();
    fn ctx<'a>(row: Option<&'a Row>, vars: &'a Vars) -> Context<'a> {
        Context {
            row,
            vars,
            journey: 4,
            seed: 7,
        }
    }
    steps[0]
        .body
        .as_ref()
        .unwrap()
        .render(&ctx(row, &vars), &mut out);
    assert_eq!(
        out, r#"{"email": "b@x.org", "password": "pb"}"#,
        "journey 4 takes row 4 mod 3"
    );
    steps[0].url.render(&ctx(row, &vars), &mut out);
    assert_eq!(out, "http://127.0.0.1:8080/login");
    let token = steps[0].extract[0]
        .apply(200, &[], br#"{"token": "T"}"#)
        .unwrap();
    vars.set(steps[0].extract[0].var(), &token);
    let item = steps[1].extract[0]
        .apply(200, &[], br#"[{"id": 17}]"#)
        .unwrap();
    vars.set(steps[1].extract[0].var(), &item);
    steps[2].url.render(&ctx(row, &vars), &mut out);
    assert_eq!(out, "http://127.0.0.1:8080/items/17");
    let headers: Vec<String> = steps[2]
        .headers
        .iter()
        .map(|(_, t)| {
            let mut value = String::new();
            t.render(&ctx(row, &vars), &mut value);
            value
        })
        .collect();
    assert_eq!(headers, ["Bearer T", "4"]);
    steps[1].url.render(&ctx(row, &vars), &mut out);
    let page: i64 = out.rsplit('=').next().unwrap().parse().unwrap();
    assert!((1..=5).contains(&page), "{out}");
}

#[test]
fn journeys_are_chosen_by_weight_purely() {
    let folder = Folder::new();
    let file = folder.read(SHOP).expect("the example reads");
    let picks: Vec<usize> = (0..8000).map(|i| file.journey_of(i, 3)).collect();
    assert_eq!(
        picks,
        (0..8000).map(|i| file.journey_of(i, 3)).collect::<Vec<_>>()
    );
    let browse = picks.iter().filter(|&&k| k == 0).count();
    // Weights 3 and 1: 6,000 of 8,000 expected, binomial standard error 39.
    assert!((5800..6200).contains(&browse), "{browse} of 8000 browse");
    assert_eq!(file.share(0), 0.75);
}

#[test]
fn a_file_without_data_has_no_rows() {
    let folder = Folder::new();
    let text = "[[journey]]\nname = \"j\"\n[[journey.step]]\nname = \"s\"\nurl = \"http://h:1/\"\n";
    let file = folder.read(text).expect("reads");
    assert_eq!((file.rows().is_none(), file.row_of(3, 1)), (true, None));
    assert_eq!(file.journey_of(99, 1), 0);
}

#[test]
fn from_path_reads_the_file_and_names_it() {
    let folder = Folder::new();
    std::fs::write(folder.path(), SHOP).unwrap();
    let file = JourneyFile::from_path(&folder.path()).expect("reads");
    assert_eq!(file.path(), folder.path());
    let missing = folder.dir.path().join("nope.toml");
    let e = JourneyFile::from_path(&missing).unwrap_err();
    assert_eq!(e.kind, JourneyErrorKind::Unreadable);
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", missing.display())),
        "{e}"
    );
}

#[test]
fn unique_rows_run_out_with_both_numbers() {
    let folder = Folder::new();
    let text = SHOP.replace("order = \"sequential\"", "order = \"unique\"");
    let file = folder.read(&text).expect("reads");
    let rows = file.rows().unwrap();
    assert_eq!((file.row_of(2, 0), file.row_of(3, 0)), (Some(2), None));
    assert!(unique_rows_suffice(rows, 3).is_ok());
    let e = unique_rows_suffice(rows, 10).unwrap_err().to_string();
    assert!(
        e.starts_with(&folder.dir.path().join("users.csv").display().to_string()),
        "{e}"
    );
    assert!(e.contains("3 rows for 10 scheduled journeys"), "{e}");
}

/// A one-journey file: the header lines, then `steps` (which begin on line 4).
fn one_journey(steps: &str) -> String {
    format!("[[journey]]\nname = \"j\"\nweight = 1\n{steps}")
}

const STEP_A: &str = "[[journey.step]]\nname = \"a\"\nurl = \"http://h:1/a\"\n";

/// Every bad file a run must refuse before it starts: the text, the line the message must
/// name, its kind, and a fixed part of the message.
#[test]
fn every_bad_file_is_one_line_on_its_line() {
    use JourneyErrorKind as K;
    let step_a_with = |extra: &str| one_journey(&format!("{STEP_A}{extra}\n"));
    let table: Vec<(&str, String, Option<usize>, K, &str)> = vec![
        ("bad TOML", "[[journey]\nname = 1".into(), Some(1), K::Syntax, "fix the TOML"),
        ("unknown top key", "timeout = \"1s\"\n".into(), Some(1), K::UnknownKey, "unknown key `timeout`"),
        ("unknown step key", step_a_with("thnk = \"1s\""), Some(7), K::UnknownKey, "unknown key `thnk`"),
        ("unknown journey key", "[[journey]]\nname = \"j\"\nwieght = 2\n".into(), Some(3), K::UnknownKey, "unknown key `wieght`"),
        ("unknown expect key", step_a_with("expect = { code = 200 }"), Some(7), K::UnknownKey, "unknown key `code`"),
        ("unknown extract key", step_a_with("extract = { t = { xpath = \"/a\" } }"), Some(7), K::UnknownKey, "unknown key `xpath`"),
        ("a step without url", one_journey("[[journey.step]]\nname = \"a\"\n"), Some(4), K::Syntax, "missing key `url`"),
        ("no journeys", "base_url = \"http://h:1\"\n".into(), None, K::Empty, "no journeys"),
        ("no steps", one_journey(""), Some(2), K::Empty, "has no steps"),
        ("weight 0", "[[journey]]\nname = \"j\"\nweight = 0\n".into(), Some(3), K::Weight, "weight = 0"),
        ("weight -2", "[[journey]]\nname = \"j\"\nweight = -2\n".into(), Some(3), K::Weight, "weight = -2"),
        ("weight 1.5", "[[journey]]\nname = \"j\"\nweight = 1.5\n".into(), Some(3), K::Syntax, "invalid type"),
        ("bad fixed think", step_a_with("think = \"soon\""), Some(7), K::Think, "think \"soon\""),
        ("backwards think", step_a_with("think = \"3s..1s\""), Some(7), K::Think, "runs backwards"),
        ("bad exp think", step_a_with("think = \"exp(2)\""), Some(7), K::Think, "think \"exp(2)\""),
        ("status 700", step_a_with("expect = { status = 700 }"), Some(7), K::Status, "status \"700\""),
        ("status class 9xx", step_a_with("expect = { status = [\"2xx\", \"9xx\"] }"), Some(7), K::Status, "not a class"),
        ("status list empty", step_a_with("expect = { status = [] }"), Some(7), K::Status, "empty list"),
        ("repeat 0", step_a_with("repeat = 0"), Some(7), K::Value, "repeat = 0"),
        ("bad on_error", step_a_with("on_error = \"retry\""), Some(7), K::Value, "on_error = \"retry\""),
        ("lower-case method", step_a_with("method = \"post\""), Some(7), K::Method, "write them in capitals"),
        ("bad header name", step_a_with("headers = { \"Bad Name\" = \"x\" }"), Some(7), K::Header, "header name \"Bad Name\""),
        ("relative URL without base", one_journey("[[journey.step]]\nname = \"a\"\nurl = \"/a\"\n"), Some(6), K::Url, "give base_url"),
        ("hole in the host", one_journey("[[journey.step]]\nname = \"a\"\nurl = \"http://${host}/a\"\n"), Some(6), K::Url, "a hole in the host"),
        ("two origins", step_a_with("[[journey.step]]\nname = \"b\"\nurl = \"http://other:2/b\""), Some(9), K::Url, "the step on line 6 is for http://h:1"),
        ("step named twice", step_a_with(STEP_A), Some(8), K::Name, "step \"a\" is named twice"),
        ("journey named twice", format!("{}[[journey]]\nname = \"j\"\n", step_a_with("")), Some(9), K::Name, "journey \"j\" is named twice"),
        ("slash in a name", "[[journey]]\nname = \"a/b\"\n".into(), Some(2), K::Name, "holds '/'"),
        ("unclosed hole", one_journey("[[journey.step]]\nname = \"a\"\nurl = \"http://h:1/${id\"\n"), Some(6), K::Template, "never closes"),
        ("unknown hole", step_a_with("body = \"${random.float(1,2)}\""), Some(7), K::Template, "unknown template variable ${random.float(1,2)}"),
        (
            "a variable no step extracts",
            step_a_with("headers = { Authorization = \"Bearer ${tokn}\" }"),
            Some(7),
            K::UnknownVariable,
            "step \"a\" uses ${tokn}, but no step of journey \"j\" extracts \"tokn\"",
        ),
        (
            "a variable only a later step extracts",
            step_a_with("body = \"${token}\"\n[[journey.step]]\nname = \"b\"\nurl = \"http://h:1/b\"\nextract = { token = { header = \"X-Token\" } }"),
            Some(7),
            K::NotYetExtracted,
            "only step \"b\", which comes later, extracts it",
        ),
        (
            "a variable the step extracts from its own answer",
            one_journey("[[journey.step]]\nname = \"a\"\nurl = \"http://h:1/${id}\"\nextract = { id = { json = \"/id\" } }\n"),
            Some(6),
            K::NotYetExtracted,
            "extracts it only from its own answer",
        ),
        ("a reserved variable name", step_a_with("extract = { journey = { json = \"/j\" } }"), Some(7), K::Extract, "extract \"journey\""),
        ("two sources", step_a_with("extract = { t = { json = \"/t\", header = \"T\" } }"), Some(7), K::Extract, "exactly one source"),
        ("bad JSON pointer", step_a_with("extract = { t = { json = \"token\" } }"), Some(7), K::Pointer, "does not start with /"),
        ("bad ~ in a pointer", step_a_with("extract = { t = { json = \"/a~2\" } }"), Some(7), K::Pointer, "~ not followed by 0 or 1"),
        ("bad regex", step_a_with("extract = { t = { regex = \"id=(\\\\d+\" } }"), Some(7), K::Regex, "does not compile"),
        ("no such group", step_a_with("extract = { t = { regex = \"id=(\\\\d+)\", group = 2 } }"), Some(7), K::Regex, "has 1 capture groups, so no group 2"),
        ("missing data file", "[data]\nfile = \"nobody.csv\"\n".into(), Some(2), K::Data, "nobody.csv: cannot read it"),
        ("unreadable data file", "[data]\nfile = \"latin1.csv\"\n".into(), Some(2), K::Data, "latin1.csv is not UTF-8 text"),
        ("empty data file", "[data]\nfile = \"empty.csv\"\n".into(), Some(2), K::Data, "holds no rows"),
        ("bad order", "[data]\nfile = \"users.csv\"\norder = \"shuffled\"\n".into(), Some(3), K::Value, "order \"shuffled\""),
        (
            "a column the data does not have",
            format!("[data]\nfile = \"users.csv\"\n{}", step_a_with("body = \"${row.emial}\"")),
            Some(9),
            K::Column,
            "has no column \"emial\"; its columns are email, password",
        ),
        (
            "a JSON Lines column the data does not have",
            format!("[data]\nfile = \"users.jsonl\"\n{}", step_a_with("body = \"${row.password}\"")),
            Some(9),
            K::Column,
            "has no column \"password\"",
        ),
        ("a column without data", step_a_with("body = \"${row.email}\""), Some(7), K::Data, "needs a data file"),
        ("missing body file", step_a_with("body = \"@nobody.json\""), Some(7), K::Body, "nobody.json: cannot read it"),
        ("a body file with a bad hole", step_a_with("body = \"@bad-body.json\""), Some(7), K::UnknownVariable, "uses ${tokn}"),
    ];
    let folder = Folder::new();
    let file = folder.path().display().to_string();
    for (case, text, line, kind, says) in &table {
        let e = folder.read(text).map(|_| ()).expect_err(case);
        let message = e.to_string();
        let place = match line {
            Some(line) => format!("{file}:{line}: "),
            None => format!("{file}: "),
        };
        assert!(
            message.starts_with(&place),
            "{case}: wanted {place:?}, got {message}"
        );
        assert!(
            message.contains(says),
            "{case}: wanted {says:?} in {message}"
        );
        assert_eq!(e.kind, *kind, "{case}: {message}");
        assert!(
            !message.contains('\n'),
            "{case}: more than one line: {message}"
        );
    }
}

#[test]
fn too_many_steps_are_refused() {
    let steps: String = (0..=MAX_STEPS)
        .map(|k| format!("[[journey.step]]\nname = \"s{k}\"\nurl = \"http://h:1/\"\n"))
        .collect();
    let e = Folder::new().read(&one_journey(&steps)).unwrap_err();
    assert_eq!(e.kind, JourneyErrorKind::TooManySteps, "{e}");
}

#[test]
fn paths_in_the_file_are_relative_to_its_folder() {
    let folder = Folder::new();
    let sub = folder.dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("rows.csv"), "k\n1\n").unwrap();
    let text = "[data]\nfile = \"rows.csv\"\n[[journey]]\nname = \"j\"\n[[journey.step]]\nname = \"s\"\nurl = \"http://h:1/${row.k}\"\n";
    assert!(JourneyFile::from_str(text, &sub.join("j.toml")).is_ok());
    let e = JourneyFile::from_str(text, &folder.path()).unwrap_err();
    assert_eq!(e.kind, JourneyErrorKind::Data, "{e}");
    assert!(Path::new(&e.file).ends_with("shop.toml"));
}

/// The first TOML block of docs/journeys.md, and the example messages under "Checked before
/// any run": the page shows what the code reads and says.
#[test]
fn the_docs_example_reads_and_its_messages_are_real() {
    let page = include_str!("../../../../docs/journeys.md");
    let example = page
        .split("```toml\n")
        .nth(1)
        .and_then(|block| block.split("```").next())
        .expect("a toml block");
    let folder = Folder::new();
    let file = folder.read(example).expect("the docs' example reads");
    assert_eq!(
        file.step_labels(),
        ["browse/login", "browse/list", "browse/open", "look/home"]
    );
    let shown = |e: JourneyError| {
        let dir = format!("{}/", folder.dir.path().display());
        e.to_string().replace(&dir, "")
    };
    let typo = example.replacen("Bearer ${token}", "Bearer ${tokn}", 1);
    let no_data = example.replace("users.csv", "nobody.csv");
    for text in [typo, no_data] {
        let message = shown(folder.read(&text).unwrap_err());
        let message = message.replace("nobody.csv", "users.csv");
        assert!(
            page.contains(&format!("\n{message}\n")),
            "not on the page: {message}"
        );
    }
}

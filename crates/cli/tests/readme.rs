//! Every `sojourn …` command in README.md's code blocks runs, in order, in one folder, against a
//! local `sojourn serve`, with its durations shortened, and exits as the README says it may.
//! A command that needs a cluster is listed in [`SKIPPED`] with the reason. The code blocks are
//! independent of each other, so they run side by side (each block's commands in order): most
//! of their time is a schedule's waiting.
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

const README: &str = include_str!("../../../README.md");

/// Commands left out, by a piece of their text, and why. Each must match a README command, so
/// a line removed from the README is removed here too.
const SKIPPED: &[(&str, &str)] = &[
    (
        "http://target/api",
        "a shard of a plan run on N machines at one wall-clock instant: crates/cli/tests/distributed.rs runs shards in network namespaces",
    ),
    (
        "merge shard-*.json",
        "merges the N machines' shards of the command above",
    ),
    (
        "report run.json -o run.html",
        "reports the merge of the N machines' shards above",
    ),
    (
        "--profile full",
        "the full profile is 7 scenarios × every peer tool for 60 s each; the short profile above runs the same code",
    ),
];

/// One README command: its code block (counted from 0), the line it starts on, and its text
/// with continuations joined.
#[derive(Debug)]
struct ReadmeCommand {
    block: usize,
    line: usize,
    text: String,
}

/// Every `sojourn …` command in the README's fenced code blocks, in order: continuation lines
/// (`\`) joined, comments cut, `a && b` split, and a YAML step's `- run:` prefix taken off.
fn readme_commands() -> Vec<ReadmeCommand> {
    let mut commands = Vec::new();
    let mut in_block = false;
    let mut block = 0;
    let mut lines = README.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line.trim_start().starts_with("```") {
            block += usize::from(in_block);
            in_block = !in_block;
            continue;
        }
        let body = line.trim_start().trim_start_matches("- run: ");
        if !in_block || !body.starts_with("sojourn ") {
            continue;
        }
        let mut text = body.to_string();
        while text.trim_end().ends_with('\\') {
            let (_, next) = lines.next().expect("a continuation line");
            text = format!(
                "{} {}",
                text.trim_end().trim_end_matches('\\').trim_end(),
                next.trim()
            );
        }
        for part in without_comment(&text).split(" && ") {
            commands.push(ReadmeCommand {
                block,
                line: i + 1,
                text: part.trim().to_string(),
            });
        }
    }
    commands
}

/// The command without a trailing `# comment` (a `#` outside quotes, after a space).
fn without_comment(text: &str) -> &str {
    let mut quote = None;
    let bytes = text.as_bytes();
    for (i, &c) in bytes.iter().enumerate() {
        match (quote, c) {
            (None, b'\'' | b'"') => quote = Some(c),
            (Some(q), _) if q == c => quote = None,
            (None, b'#') if i > 0 && bytes[i - 1] == b' ' => return text[..i].trim_end(),
            _ => {}
        }
    }
    text
}

/// The command as the test runs it: the README's service is the local one, and every length of
/// time is short. Flags are rewritten word by word (the README's quoted words hold no spaces).
fn shortened(text: &str, url: &str) -> String {
    let mut words: Vec<String> = text
        .replace("http://127.0.0.1:8080", url.trim_end_matches("/api"))
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for i in 1..words.len() {
        let value = match words[i - 1].as_str() {
            "--duration" => "2s",
            "--step" => "1500ms",
            "--metrics-listen" | "--listen" => "127.0.0.1:0",
            _ => continue,
        };
        words[i] = value.to_string();
    }
    // What a command leaves to its defaults is shortened too: a sweep's 20 s steps, and the
    // suite's 10 s runs of every peer tool installed (crates/cli/tests/suite.rs runs each tool).
    let mut add = |flag: &str, value: &str| {
        if !words.iter().any(|w| w == flag) {
            words.extend([flag.to_string(), value.to_string()]);
        }
    };
    match text.split_whitespace().nth(1) {
        Some("sweep") => add("--step", "1500ms"),
        Some("suite") => {
            add("--duration", "1s");
            add("--tools", "wrk");
        }
        _ => {}
    }
    words.join(" ")
}

/// The exits the README documents for a command: 0, and 4 when an `--slo` objective is
/// breached or has too few samples to judge (which a shortened run may well have).
fn allowed_exits(text: &str) -> &'static [i32] {
    if text.contains("--slo") {
        &[0, 4]
    } else {
        &[0]
    }
}

/// `sojourn serve` with `args`, once it says where it listens: the child and its URL.
fn serve(bin: &Path, dir: &Path, args: &str) -> (Child, String) {
    let mut child = Command::new(bin)
        .args(args.split_whitespace().skip(1))
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("sojourn serve starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("serve said {first:?}"))
        .to_string();
    (child, url)
}

/// Stops a serve as Ctrl-C does, and returns its exit code.
fn interrupt(mut child: Child) -> Option<i32> {
    let pid = child.id().to_string();
    let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
    assert!(sent.success());
    child.wait().unwrap().code()
}

/// Where the README's commands run: the binary, the folder, a PATH that finds `sojourn`, and the
/// local service's URL.
#[derive(Clone, Copy)]
struct Place<'a> {
    bin: &'a Path,
    dir: &'a Path,
    path: &'a str,
    url: &'a str,
}

impl Place<'_> {
    /// Runs one README command (or says why it is skipped: false), asserting its exit.
    fn run(&self, c: &ReadmeCommand) -> bool {
        if let Some((_, why)) = SKIPPED.iter().find(|(piece, _)| c.text.contains(piece)) {
            println!("README.md:{}: SKIPPED `{}`: {why}", c.line, c.text);
            return false;
        }
        let command = shortened(&c.text, self.url);
        let started = Instant::now();
        if command.starts_with("sojourn serve ") {
            // A server runs until it is stopped: it must come up, then stop cleanly.
            let (child, _) = serve(self.bin, self.dir, &command);
            assert_eq!(interrupt(child), Some(0), "README.md:{}: {command}", c.line);
        } else {
            let out = Command::new("bash")
                .args(["--norc", "--noprofile", "-c", &command])
                .current_dir(self.dir)
                .env("PATH", self.path)
                .env("URL", self.url)
                .output()
                .unwrap();
            let code = out.status.code().unwrap_or(-1);
            assert!(
                allowed_exits(&c.text).contains(&code),
                "README.md:{}: `{command}` exited {code}\n{}",
                c.line,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        println!(
            "README.md:{}: ran `{command}` in {:.1} s",
            c.line,
            started.elapsed().as_secs_f64()
        );
        true
    }
}

#[test]
fn every_readme_command_runs_and_exits_as_documented() {
    let commands = readme_commands();
    assert!(commands.len() >= 20, "found only {commands:?}");
    for (piece, _) in SKIPPED {
        assert!(
            commands.iter().any(|c| c.text.contains(piece)),
            "SKIPPED lists `{piece}`, which no README command holds"
        );
    }
    let bin = Path::new(env!("CARGO_BIN_EXE_sojourn"));
    let dir = tempfile::tempdir().unwrap();
    // The README's commands call `sojourn` by name.
    let bin_dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(bin, bin_dir.path().join("sojourn")).unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (service, url) = serve(bin, dir.path(), "sojourn serve --listen 127.0.0.1:0");
    let url = format!("{url}/api");
    let blocks: Vec<Vec<&ReadmeCommand>> = (0..=commands.last().unwrap().block)
        .map(|b| commands.iter().filter(|c| c.block == b).collect())
        .filter(|b: &Vec<_>| !b.is_empty())
        .collect();
    let place = Place {
        bin,
        dir: dir.path(),
        path: &path,
        url: &url,
    };
    let ran: usize = std::thread::scope(|scope| {
        let runs: Vec<_> = blocks
            .iter()
            .map(|block| scope.spawn(|| block.iter().filter(|c| place.run(c)).count()))
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("a block ran"))
            .sum()
    });
    assert_eq!(interrupt(service), Some(0));
    assert_eq!(ran + SKIPPED.len(), commands.len());
    // What the README says the commands leave behind is there.
    for file in [
        "open.json",
        "closed.json",
        "report.html",
        "run.json",
        "slo.xml",
        "sweep.json",
        "sweep.html",
        "before.json",
        "after.json",
        "truth.csv",
    ] {
        assert!(dir.path().join(file).is_file(), "{file} was not written");
    }
}

#[test]
fn commands_are_read_whole_from_the_readme() {
    let commands = readme_commands();
    // A continued line is one command.
    let ci = commands
        .iter()
        .find(|c| c.text.contains("--json run.json"))
        .expect("the CI example");
    assert!(ci.text.ends_with("--junit slo.xml"), "{ci:?}");
    // `a && b` is two commands; a comment is cut.
    assert!(commands
        .iter()
        .any(|c| c.text == "sojourn merge shard-*.json -o run.json"));
    assert!(commands
        .iter()
        .any(|c| c.text == "sojourn report run.json -o run.html"));
    assert!(
        commands.iter().all(|c| !c.text.contains(" # ")),
        "{commands:?}"
    );
    assert_eq!(
        without_comment("sojourn sweep x --slo \"p99<200ms\" # a # b"),
        "sojourn sweep x --slo \"p99<200ms\""
    );
    assert_eq!(
        shortened(
            "sojourn run http://127.0.0.1:8080/api --duration 2h --metrics-listen 9464",
            "http://127.0.0.1:5/api"
        ),
        "sojourn run http://127.0.0.1:5/api --duration 2s --metrics-listen 127.0.0.1:0"
    );
}

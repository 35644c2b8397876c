//! `sojourn completions` and `sojourn man`: the generated files work in the real tools that
//! read them (bash's completion machinery, groff's man macros).
use std::path::Path;
use std::process::{Command, Output};

use sojourn_testkit::on_path;

fn sojourn(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sojourn"))
        .args(args)
        .output()
        .expect("sojourn runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = sojourn(args);
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// What bash's programmable completion offers for `line` (the words typed so far, the last one
/// being completed), with sojourn's completion script loaded, as a person pressing TAB gets it.
fn complete_in_bash(script: &Path, line: &[&str]) -> Vec<String> {
    let words: Vec<String> = line.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; \
         _sojourn sojourn '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words.join(" "),
        line.len() - 1,
        line[line.len() - 1],
        line[line.len().saturating_sub(2)],
    );
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", &program])
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn the_bash_completion_loads_and_completes_commands_and_flags() {
    if on_path("bash").is_none() {
        return sojourn_testkit::skip("bash completion: `bash` is not on PATH");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("sojourn.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(syntax.status.success(), "bash -n: {syntax:?}");

    assert_eq!(complete_in_bash(&script, &["sojourn", "ru"]), ["run"]);
    assert_eq!(complete_in_bash(&script, &["sojourn", "me"]), ["merge"]);
    let flags = complete_in_bash(&script, &["sojourn", "run", "--ra"]);
    assert_eq!(flags, ["--rate", "--ramp-to"], "run's own flags");
    // The commands a run starts for itself are not offered.
    let commands = complete_in_bash(&script, &["sojourn", ""]);
    assert!(commands.iter().any(|c| c == "report"), "{commands:?}");
    assert!(
        !commands.iter().any(|c| c.starts_with("__")),
        "{commands:?}"
    );
}

#[test]
fn every_shell_gets_a_script_naming_the_commands() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let script = stdout_of(&["completions", shell]);
        for command in ["run", "report", "merge", "completions"] {
            assert!(script.contains(command), "{shell}: no `{command}`");
        }
        assert!(!script.contains("__hiccup-control"), "{shell}");
    }
    let out = sojourn(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

/// Renders a page with groff's man macros, warnings on, and returns what groff said about it.
/// `-k` runs preconv first, as `man` does, since the pages hold UTF-8 (the help's dashes).
fn groff_warnings(page: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("page.1");
    std::fs::write(&file, page).unwrap();
    let out = Command::new("groff")
        .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
        .arg(&file)
        .output()
        .expect("groff runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_man_pages_render_without_warnings_and_each_command_has_its_own() {
    if on_path("groff").is_none() {
        return sojourn_testkit::skip("man pages: `groff` is not on PATH");
    }
    let top = stdout_of(&["man"]);
    assert!(top.contains(".TH sojourn 1"), "{top}");
    assert!(top.contains("sojourn\\-run(1)"), "the commands are listed");
    assert_eq!(groff_warnings(&top), "");
    for command in [
        "demo", "compare", "run", "serve", "sim", "sweep", "report", "suite", "diff", "merge",
    ] {
        let page = stdout_of(&["man", command]);
        assert!(
            page.contains(&format!(
                ".TH sojourn-{command} 1  \"sojourn-{command} {}\"",
                env!("CARGO_PKG_VERSION")
            )),
            "{command}: {}",
            &page[..200.min(page.len())]
        );
        assert_eq!(groff_warnings(&page), "", "{command}");
    }
    assert!(stdout_of(&["man", "run"]).contains("\\-\\-rate"));
}

#[test]
fn a_man_page_for_no_such_command_names_the_commands_there_are() {
    let out = sojourn(&["man", "rnu"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no command `rnu`") && stderr.contains("run, serve"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

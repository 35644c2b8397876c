//! What the test suites share: finding the tools a test needs (a browser, a peer program), the
//! rule for when one is missing, hostile input for property tests ([`fuzz`]), and a control
//! hiccup meter a test binary serves itself ([`control`]), with the CPUs held in shallow idle
//! while a test measures ([`idle`]). A dev-dependency only; nothing ships with it.
#![forbid(unsafe_code)]

pub mod browser;
pub mod control;
pub mod fuzz;
pub mod idle;
pub mod load;

use std::path::PathBuf;

/// A program on PATH, found the way a shell (and `.ci/run`'s `command -v`) finds it.
pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Headless Chromium: `$SOJOURN_CHROMIUM`, or `chromium` on PATH.
pub fn chromium() -> Option<PathBuf> {
    std::env::var_os("SOJOURN_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| on_path("chromium"))
}

/// The JUnit XML schema (`junit-10.xsd`, as Jenkins' xUnit plugin has it) that `.ci/run`
/// fetches: `$SOJOURN_JUNIT_XSD`, or where `.ci/run` keeps it, if the file is there.
pub fn junit_schema() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    std::env::var_os("SOJOURN_JUNIT_XSD")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".cache/sojourn/junit-10.xsd")))
        .filter(|p| p.is_file())
}

/// A check that cannot run here: under CI (`.ci/run` sets CI=true and installs everything) that
/// is a failure; elsewhere the test passes with a line on the terminal. The line goes straight
/// to stdout, which the test harness does not capture, so the skip is seen.
pub fn skip(what: &str) {
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{what}: .ci/run must install what this test needs"
    );
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout(), "SKIPPED: {what}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_the_shell_finds_and_nothing_else() {
        assert!(
            on_path("sh").is_some_and(|p| p.is_file()),
            "sh is on every PATH"
        );
        assert_eq!(on_path("no-such-program-sojourn-xyz"), None);
    }
}

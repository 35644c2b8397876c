//! The one loader of result documents: every command and page that reads a result file reads
//! it here, so each refuses what is not a result, or a schema this build cannot read, in the
//! same words.
use std::io::Read as _;
use std::path::{Path, PathBuf};

use sojourn_core::result::{RunResult, READABLE_SCHEMAS};

use crate::error::ReportError;
use crate::html::{ReportRun, MAX_DOTS};
use crate::samples::read_downsampled;

impl ReportRun {
    /// Loads a result file, and its samples if a sibling samples file exists
    /// (see [`samples_path_for`]); `-` reads the result from standard input (no samples).
    pub fn load(path: &Path) -> Result<ReportRun, ReportError> {
        let result = load_result(path)?;
        if is_stdin(path) {
            return Ok(ReportRun {
                source: STDIN_NAME.into(),
                result,
                samples: Vec::new(),
            });
        }
        let samples = match samples_path_for(path) {
            Some(p) => read_downsampled(&p, MAX_DOTS)?,
            None => Vec::new(),
        };
        let source = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(ReportRun {
            source,
            result,
            samples,
        })
    }
}

/// The path that names standard input: `report -`, `diff - B.json`, `merge -`.
pub const STDIN: &str = "-";

/// What errors call standard input: the argument given, and what it means.
pub const STDIN_NAME: &str = "- (standard input)";

/// Whether `path` is `-`, standard input.
pub fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == STDIN
}

/// Standard input can be read once: a command given `-` for more than one of its documents is
/// refused before anything is read.
pub fn stdin_at_most_once<P: AsRef<Path>>(paths: &[P]) -> Result<(), ReportError> {
    let given = paths.iter().filter(|p| is_stdin(p.as_ref())).count();
    if given > 1 {
        return Err(ReportError::StdinTwice { given });
    }
    Ok(())
}

/// Reads and checks a result file: JSON, a sojourn result, and a schema version this build
/// reads. `-` reads the document from standard input.
pub fn load_result(path: &Path) -> Result<RunResult, ReportError> {
    if is_stdin(path) {
        let name = Path::new(STDIN_NAME);
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(ReportError::io(name))?;
        return parse_result(name, &text);
    }
    let text = std::fs::read_to_string(path).map_err(ReportError::io(path))?;
    parse_result(path, &text)
}

/// [`load_result`] of a file already read; `path` is the name its errors give.
pub fn parse_result(path: &Path, text: &str) -> Result<RunResult, ReportError> {
    let not_result = |reason: String| ReportError::NotAResult {
        path: path.to_owned(),
        reason,
    };
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| not_result(format!("not JSON: {e}")))?;
    let schema = value
        .get("schema")
        .and_then(|s| s.as_str())
        .ok_or_else(|| not_result("no \"schema\" field".into()))?;
    if !schema.starts_with("sojourn.result/") {
        return Err(not_result(format!(
            "schema {schema:?} is not a sojourn result"
        )));
    }
    if !READABLE_SCHEMAS.contains(&schema) {
        return Err(ReportError::Schema {
            path: path.to_owned(),
            found: schema.to_owned(),
            expected: in_words(&READABLE_SCHEMAS),
        });
    }
    // From the text, not the value: serde_json then names the line and column of a bad field.
    serde_json::from_str(text).map_err(|e| not_result(e.to_string()))
}

/// `a`, `a and b`, `a, b and c`.
fn in_words(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The samples file that goes with a result file, by convention: `X.json` → `X.samples.csv`
/// or `X.samples.bin`, whichever exists.
pub fn samples_path_for(result: &Path) -> Option<PathBuf> {
    let stem = result.with_extension("");
    ["samples.csv", "samples.bin"]
        .iter()
        .map(|ext| crate::hgrm::with_suffix(&stem, &format!(".{ext}")))
        .find(|p| p.is_file())
}

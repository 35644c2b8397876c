//! The shards of one plan as one result: what `sojourn merge` writes.
use std::path::Path;

use sojourn_core::merge::{merge, Input};
use sojourn_core::RunResult;

use crate::bad_input;

/// Loads the result documents at `paths` (shards that `sojourn run --shard` or
/// [`crate::OpenLoop::shard`] wrote, or earlier merges of some of them; `-`, at most once,
/// reads one from standard input) and merges them into
/// one result, histograms added, never percentiles. A shard that is missing or cut short is
/// named in the result's `merged` shard list and its requests counted as not measured. Results
/// of different plans are refused unless `force` (the merge then says it was forced). Every
/// error is a [`crate::BadInput`] that begins `RESULT: ` and names the file.
///
/// Two processes each run half of the schedule; merged, they are the whole run:
///
/// ```
/// use std::time::Duration;
///
/// let dir = tempfile::tempdir()?;
/// let mut shards = Vec::new();
/// for index in 0..2 {
///     let half = sojourn::OpenLoop::at(400.0)
///         .for_duration(Duration::from_millis(250))
///         .shard(index, 2)
///         .run(|| async {})?;
///     assert_eq!(half.counts.scheduled, 50);
///     let path = dir.path().join(format!("shard-{index}.json"));
///     sojourn::write_json(&path, &half)?;
///     shards.push(path);
/// }
/// let whole = sojourn::merge_files(&shards, false)?;
/// assert_eq!(whole.counts.scheduled, 100);
/// assert_eq!(whole.counts.completed, 100);
/// assert_eq!(whole.counts.not_measured, 0);
/// assert_eq!(whole.histograms.response.count, 100);
///
/// // A shard given twice is refused, in the words `sojourn merge` prints.
/// let twice = sojourn::merge_files(&[&shards[0], &shards[0]], false).unwrap_err();
/// assert!(sojourn::is_bad_input(&twice));
/// let first = shards[0].display();
/// assert_eq!(twice.to_string(), format!("RESULT: shard 0 is given twice: {first} and {first}"));
/// # Ok::<(), anyhow::Error>(())
/// ```
pub fn merge_files<P: AsRef<Path>>(paths: &[P], force: bool) -> anyhow::Result<RunResult> {
    sojourn_report::load::stdin_at_most_once(paths).map_err(|e| bad_input!("RESULT: {e}"))?;
    let inputs = paths
        .iter()
        .map(|path| {
            let path = path.as_ref();
            let result =
                sojourn_report::load::load_result(path).map_err(|e| bad_input!("RESULT: {e}"))?;
            let source = match sojourn_report::load::is_stdin(path) {
                true => sojourn_report::load::STDIN_NAME.to_string(),
                false => path.display().to_string(),
            };
            Ok(Input { source, result })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    merge(inputs, force).map_err(|e| bad_input!("RESULT: {e}"))
}

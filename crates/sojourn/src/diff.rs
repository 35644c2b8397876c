//! `sojourn diff A.json B.json`: did the tail change, beyond what chance explains?
use std::fmt::Write as _;
use std::path::PathBuf;

use sojourn_core::diff::{diff, Diff, DiffOptions, Method, PercentileDiff};
use sojourn_core::format_ns;

use crate::bad_input;

/// A comparison of two result documents as a person describes it (`sojourn diff`'s flags).
#[derive(Debug, Clone)]
pub struct DiffSettings {
    /// The baseline: a result file from `run`, `sim`, `suite` or an imported peer tool.
    pub a: PathBuf,
    /// The result to compare with it.
    pub b: PathBuf,
    /// Compare even when the runs asked for different loads (rate, arrival process, length,
    /// mode). The differences are still printed.
    pub force: bool,
    /// Confidence level of the intervals, between 0.5 and 0.999.
    pub level: f64,
    /// Bootstrap replicates per percentile.
    pub draws: usize,
    /// Seed of the bootstrap, so that a comparison can be repeated exactly.
    pub seed: u64,
    /// Also write the comparison as JSON (schema sojourn.diff/1).
    pub json: Option<PathBuf>,
}

/// Loads both results (`-` reads one from standard input), refuses runs of different loads unless forced, prints each
/// percentile's change with its bootstrap interval, and writes the comparison given `json`.
pub fn run(a: DiffSettings) -> anyhow::Result<()> {
    sojourn_report::load::stdin_at_most_once(&[&a.a, &a.b]).map_err(|e| bad_input!("A, B: {e}"))?;
    let ra = load(&a.a, "A")?;
    let rb = load(&a.b, "B")?;
    let options = DiffOptions {
        level: a.level,
        draws: a.draws,
        seed: a.seed,
    };
    let d = diff(&ra, &rb, options);
    if !d.conditions_differ.is_empty() && !a.force {
        return Err(bad_input!(
            "the runs asked for different loads ({}); their tails are not comparable. Compare runs \
             of the same rate, arrival process and length, or pass --force to compare anyway",
            d.conditions_differ.join("; ")
        ));
    }
    print!("{}", render(&a, &d));
    if let Some(path) = &a.json {
        crate::outputs::write_document(path, "--json", &d)?;
    }
    Ok(())
}

fn load(path: &std::path::Path, which: &str) -> anyhow::Result<sojourn_core::RunResult> {
    sojourn_report::load::load_result(path).map_err(|e| bad_input!("{which}: {e}"))
}

/// The comparison as a table, one percentile per line.
pub fn render(a: &DiffSettings, d: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A = {} ({})", shown(&a.a), d.a);
    let _ = writeln!(out, "B = {} ({})", shown(&a.b), d.b);
    for c in &d.conditions_differ {
        let _ = writeln!(out, "WARNING: conditions differ (--force): {c}");
    }
    if !d.labels.is_empty() {
        let _ = writeln!(out, "\nevery request of the run");
    }
    percentile_table(&mut out, d.level, &d.percentiles);
    for l in &d.labels {
        let how = match (l.method, l.block) {
            (Method::BlockBootstrap, Some(b)) => format!("blocks of {b} intervals"),
            (Method::IidBootstrap, _) => "single requests: too few intervals for blocks".into(),
            _ => "no interval".into(),
        };
        let _ = writeln!(out, "\n{} {} ({how})", l.kind, l.label);
        percentile_table(&mut out, d.level, &l.percentiles);
    }
    let how = match (d.method, d.block) {
        (Method::BlockBootstrap, Some(b)) => format!(
            "moving-block bootstrap over the timelines, blocks of {b} intervals, so that \
             correlated requests (a queue slows its neighbours) count as one piece of evidence"
        ),
        (Method::IidBootstrap, _) => {
            "bootstrap of single requests (too few intervals for blocks): \
             it assumes independent requests, so under queueing it understates the uncertainty"
                .into()
        }
        (Method::Repetitions, _) => {
            "Welch's t on the repetitions' own estimates (both runs were repeated; A and B are \
             each side's mean estimate), which are independent whatever the dependence inside a run"
                .into()
        }
        _ => "none: a summary-only import carries no histogram".into(),
    };
    let draws = match d.method {
        Method::Repetitions => String::new(),
        _ => format!("; {} draws, seed {}", d.draws, d.seed),
    };
    let _ = writeln!(
        out,
        "\nIntervals: {how}{draws}. Significant when the interval of B − A excludes zero."
    );
    out
}

/// One line per percentile: A, B, B − A, its interval and the verdict.
fn percentile_table(out: &mut String, level: f64, percentiles: &[PercentileDiff]) {
    let level = format!("{:.0}% interval", level * 100.0);
    let _ = writeln!(
        out,
        "\n{:<8}{:>12}{:>12}{:>12}  {:<26}verdict",
        "", "A", "B", "B − A", level
    );
    for p in percentiles {
        let interval = p.interval.map_or("-".to_string(), |(lo, hi)| {
            format!("[{}, {}]", signed(lo), signed(hi))
        });
        let _ = writeln!(
            out,
            "{:<8}{:>12}{:>12}{:>12}  {:<26}{}",
            format!("p{}", p.percentile),
            format_ns(p.a),
            format_ns(p.b),
            signed(p.delta),
            interval,
            p.verdict.describe()
        );
    }
}

/// A path as the table names it: `-` is standard input.
fn shown(path: &std::path::Path) -> String {
    match sojourn_report::load::is_stdin(path) {
        true => sojourn_report::load::STDIN_NAME.into(),
        false => path.display().to_string(),
    }
}

fn signed(ns: i64) -> String {
    let sign = if ns < 0 { "−" } else { "+" };
    format!("{sign}{}", format_ns(ns.unsigned_abs()))
}

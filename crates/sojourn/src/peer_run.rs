//! Running one peer tool as a child process against an embedded server, then importing what it
//! wrote. Bounded: a tool that outlives its run by [`GRACE`] is killed.
//!
//! [`GRACE`]: crate::peer_run::GRACE
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use sojourn_core::{RunConfig, RunResult};
use sojourn_peers::runners::RunnerPlan;
use sojourn_peers::{ImportContext, PeerTool};

/// How long a tool may run past its nominal duration (start-up, k6's VU allocation, ab's end).
pub const GRACE: Duration = Duration::from_secs(60);

/// Where `program` lives: on PATH, or where scripts/install-peer-tools.sh puts Go and cargo
/// binaries (often not on PATH in a fresh shell).
pub fn locate(program: &str) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let extra = home
        .iter()
        .flat_map(|h| [h.join("go/bin"), h.join(".cargo/bin")]);
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(extra)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// A short label for a runner: the tool, and the mode or flag that tells its runs apart.
pub fn label(plan: &RunnerPlan) -> String {
    let corrected = plan.argv.iter().any(|a| a == "--latency-correction");
    match (plan.tool, plan.mode) {
        (PeerTool::K6, sojourn_core::Mode::Closed) => "k6 constant-vus".into(),
        (PeerTool::K6, _) => "k6 constant-arrival-rate".into(),
        (PeerTool::Oha, sojourn_core::Mode::Closed) => "oha".into(),
        (PeerTool::Oha, _) if corrected => "oha -q --latency-correction".into(),
        (PeerTool::Oha, _) => "oha -q".into(),
        (PeerTool::Wrk2, _) => "wrk2 -R".into(),
        (PeerTool::Fortio, _) => "fortio -qps".into(),
        (PeerTool::Hey, sojourn_core::Mode::Paced) => "hey -q".into(),
        (PeerTool::H2load, sojourn_core::Mode::Paced) => "h2load --rps".into(),
        (tool, _) => tool.name().into(),
    }
}

/// The tool's own version line, as best it reports one.
pub fn version(tool: PeerTool, path: &Path) -> String {
    let args: &[&str] = match tool {
        PeerTool::Wrk | PeerTool::Wrk2 => &["-v"],
        PeerTool::Ab => &["-V"],
        PeerTool::K6 | PeerTool::Fortio => &["version"],
        PeerTool::Oha | PeerTool::Locust | PeerTool::H2load => &["--version"],
        // Built from module source, they print none (ghz: "dev"); the Go toolchain reads it from the binary.
        PeerTool::Hey | PeerTool::Vegeta | PeerTool::Ghz => return go_module_version(path),
    };
    Command::new(path)
        .args(args)
        .output()
        .ok()
        .and_then(|o| {
            let text = [o.stdout, o.stderr].concat();
            String::from_utf8_lossy(&text)
                .lines()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn go_module_version(path: &Path) -> String {
    let out = Command::new("go")
        .arg("version")
        .arg("-m")
        .arg(path)
        .output();
    out.ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .find(|w| w.first() == Some(&"mod"))
                .and_then(|w| w.get(2).map(|v| v.to_string()))
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Runs `plan` (its script, its command, its follow-ups) and imports its files.
pub fn run_and_import(
    plan: &RunnerPlan,
    program: &Path,
    dir: &Path,
    duration: Duration,
    label: &str,
    config: RunConfig,
) -> anyhow::Result<RunResult> {
    if let Some((path, text)) = &plan.script {
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut argv = plan.argv.clone();
    argv[0] = program.display().to_string();
    let log = dir.join("stderr.log");
    let stderr = plan.stderr.as_deref().unwrap_or(&log);
    run_bounded(&argv, plan.stdout.as_deref(), stderr, duration + GRACE)?;
    for (i, follow) in plan.then.iter().enumerate() {
        let mut follow = follow.clone();
        if follow[0] == plan.argv[0] {
            follow[0] = program.display().to_string();
        }
        let log = dir.join(format!("then-{i}.stderr.log"));
        run_bounded(&follow, None, &log, GRACE)?;
    }
    let ctx = ImportContext {
        label: label.to_string(),
        mode: plan.mode,
        version: version(plan.tool, program),
        config,
    };
    Ok(sojourn_peers::import(plan.tool, &plan.files, &ctx)?)
}

/// Runs one command to completion, killing it at `limit`. Output goes to files, never to pipes
/// nobody reads (a chatty tool would block on a full pipe). A non-zero exit is an error that
/// carries the tail of its stderr.
fn run_bounded(
    argv: &[String],
    stdout: Option<&Path>,
    stderr: &Path,
    limit: Duration,
) -> anyhow::Result<()> {
    let file = |p: &Path| -> anyhow::Result<Stdio> {
        Ok(std::fs::File::create(p)
            .with_context(|| format!("creating {}", p.display()))?
            .into())
    };
    let stdout = match stdout {
        Some(p) => file(p)?,
        None => Stdio::null(),
    };
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(file(stderr)?)
        .spawn()
        .with_context(|| format!("starting {}", argv[0]))?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait()? {
            if status.success() {
                return Ok(());
            }
            let text = std::fs::read_to_string(stderr).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(3).collect();
            bail!(
                "{} exited with {status}: {}",
                argv[0],
                tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{} ran past {:?} and was stopped", argv[0], limit);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

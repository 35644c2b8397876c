//! `sojourn compare URL`: a closed loop and the open loop at once, on their own connections,
//! against your own service; the seeds' table, a verdict and a report. Run together, both meet
//! whatever the server does (a one-shot stall cannot fall in one loop's run and miss the
//! other's). By default the closed loop is paced (what hey -q, bombardier -r and JMeter's
//! constant-throughput timer run) and each loop sends half of `--rate`, so both carry the same
//! load and the server receives `--rate`; `--closed-mode unpaced` runs the send → wait → record
//! loop as fast as the target answers, beside the open loop at `--rate`.
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use sojourn::execute::Job;
use sojourn::parse as args;
use sojourn_report::compare::Column;

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// The target, e.g. http://127.0.0.1:8080/api
    pub url: String,
    /// What the server receives, in requests per second: a paced closed loop and the open loop
    /// each send half, at once (an unpaced closed loop has no rate; the open loop beside it
    /// sends all of it).
    #[arg(long, value_parser = args::rate)]
    pub rate: f64,
    /// The closed loop: paced (each connection sends at its share of --rate, or when its answer
    /// arrives if later) or unpaced (each sends as soon as it has its answer).
    #[arg(long, value_enum, default_value_t = ClosedMode::Paced)]
    pub closed_mode: ClosedMode,
    /// How long the two loops run (at once).
    #[arg(long, value_parser = args::positive_duration, default_value = "20s")]
    pub duration: Duration,
    /// Connections of the closed loop (a paced loop gives each rate/N of the slots).
    #[arg(long, short = 'c', value_parser = args::connections, default_value_t = 10)]
    pub connections: usize,
    /// Worker threads for each loop. [default: the number of CPUs]
    #[arg(long, value_parser = args::threads)]
    pub threads: Option<usize>,
    /// Longest wait for one answer.
    #[arg(long, value_parser = args::positive_duration, default_value = "10s")]
    pub timeout: Duration,
    /// A request header, "Name: value"; repeatable.
    #[arg(long = "header", short = 'H', value_parser = args::header)]
    pub headers: Vec<(String, String)>,
    /// Skip TLS certificate verification (self-signed test servers).
    #[arg(long, conflicts_with = "cacert")]
    pub insecure: bool,
    /// Trust only the CA certificates in this PEM file for https (a private CA).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Where to write the HTML report.
    #[arg(long, default_value = "compare.html")]
    pub report: PathBuf,
    /// Also write closed.json and open.json here.
    #[arg(long)]
    pub json_dir: Option<PathBuf>,
}

/// Which closed loop `compare` and `demo` put beside the open loop.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClosedMode {
    /// At the open loop's rate: the same sends, timed from the send and from the slot.
    Paced,
    /// As fast as the target answers: a different load, labelled as such.
    Unpaced,
}

impl ClosedMode {
    pub fn label(self) -> &'static str {
        match self {
            ClosedMode::Paced => "paced closed loop",
            ClosedMode::Unpaced => "closed loop",
        }
    }
}

/// Each loop's rate: at once against one server, a paced loop and the open loop each send half
/// of `--rate`, so the server receives what was asked; an unpaced loop has no rate, and the open
/// loop beside it sends all of it.
fn loop_rate(a: &CompareArgs) -> f64 {
    match a.closed_mode {
        ClosedMode::Paced => a.rate / 2.0,
        ClosedMode::Unpaced => a.rate,
    }
}

fn run_args(a: &CompareArgs, closed: bool) -> sojourn::RunSettings {
    let paced = closed && a.closed_mode == ClosedMode::Paced;
    sojourn::RunSettings {
        rate: (!closed || paced).then_some(loop_rate(a)),
        duration: Some(a.duration),
        connections: closed.then_some(a.connections),
        threads: a.threads,
        timeout: a.timeout,
        closed,
        headers: a.headers.clone(),
        insecure: a.insecure,
        cacert: a.cacert.clone(),
        json: a
            .json_dir
            .as_ref()
            .map(|d| d.join(if closed { "closed.json" } else { "open.json" })),
        label: Some(if paced {
            // The label the terminal's columns and the page's views are named from.
            "paced".into()
        } else if closed {
            "closed loop".into()
        } else {
            "open loop".into()
        }),
        ..sojourn::RunSettings::for_target(&a.url)
    }
}

pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let closed = sojourn::validate(run_args(&a, true))?;
    let open = sojourn::validate(run_args(&a, false))?;
    if let Some(dir) = &a.json_dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| sojourn::bad_input!("--json-dir: cannot create {}: {e}", dir.display()))?;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Both loops run at once, on their own connections: one after the other, a one-shot stall
    // (a deploy, a failover, a GC) would hit one loop and not the other, and the two would be
    // compared as if they had met the same server.
    eprintln!(
        "running the {} ({}) and the open loop ({} req/s) at once for {} …",
        a.closed_mode.label(),
        match a.closed_mode {
            ClosedMode::Paced => format!("{} req/s", loop_rate(&a)),
            ClosedMode::Unpaced => "unpaced".into(),
        },
        loop_rate(&a),
        humantime::format_duration(a.duration)
    );
    let url = open.requests.shown();
    let plans = (closed.plan(), open.plan());
    let job = |plan, transport, label| Job {
        plan,
        transport,
        progress: sojourn::execute::progress(plan, false),
        label,
        url: &url,
        warmup: None,
    };
    let jobs = [
        job(&plans.0, rt.block_on(closed.connectable())?, &closed.label),
        job(&plans.1, rt.block_on(open.connectable())?, &open.label),
    ];
    let sinks = &mut crate::panel::TerminalSinks::default();
    let [c, o] = sojourn::execute::run_together(&rt, jobs, sinks)?;
    for (v, r) in [(&closed, &c), (&open, &o)] {
        if let Some(path) = &v.json {
            sojourn::outputs::write_json(path, r)?;
        }
    }
    let mut columns = sojourn::side_by_side::closed_columns(&c);
    columns.push(Column::of("open loop", &o));
    print!("{}", sojourn::side_by_side::table(&columns, "open loop"));
    println!("\n{}", sojourn::side_by_side::verdict(&c, &o));
    if let Some(line) = sojourn_report::text::rate_line(&o) {
        println!("open loop {line}");
    }
    for r in [&c, &o] {
        for note in &r.checks.notes {
            println!("- {}: {note}", r.label);
        }
    }
    let runs = vec![
        sojourn::side_by_side::report_run(&c, Vec::new()),
        sojourn::side_by_side::report_run(&o, Vec::new()),
    ];
    sojourn::side_by_side::write_report(&a.report, format!("sojourn compare: {}", a.url), runs)?;
    println!("report: {}", a.report.display());
    Ok(ExitCode::SUCCESS)
}

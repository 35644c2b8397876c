//! What the harness itself costs: an empty function driven open-loop at 100k and 1M calls a
//! second, async and blocking, for `SECS` (5) seconds each. Prints, per run, the process's CPU
//! per call (user + system, from /proc/self/stat, every thread included: the function is empty,
//! so it is all harness), the achieved rate, the send lag and the generator's self-check.
//!
//! ```sh
//! bench/library-harness.sh        # release build, pinned to one CPU, load average recorded
//! ```
use std::time::{Duration, Instant};

use sojourn::{OpenLoop, RunResult};

/// User + system CPU time of this process so far.
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Linux reports these in USER_HZ, which is 100 on every supported architecture.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn us(ns: Option<u64>) -> String {
    ns.map_or("-".into(), |v| format!("{:.1}", v as f64 / 1e3))
}

fn row(name: &str, rate: f64, run: impl FnOnce() -> Result<RunResult, sojourn::Error>) {
    let (cpu0, wall0) = (process_cpu(), Instant::now());
    let r = match run() {
        Ok(r) => r,
        Err(e) => {
            println!("{name:<12}{rate:>10.0}  failed: {e}");
            return;
        }
    };
    let (cpu, wall) = (process_cpu() - cpu0, wall0.elapsed());
    let calls = r.counts.completed.max(1);
    let lag = &r.histograms.send_lag.percentiles;
    println!(
        "{name:<12}{rate:>10.0}{:>12.0}{:>10.2}{:>8.0}%{:>10}{:>10}{:>10}  {}",
        r.rate.achieved,
        cpu.as_secs_f64() * 1e6 / calls as f64,
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64(),
        us(lag.get(50.0)),
        us(lag.get(99.0)),
        us(lag.get(99.9)),
        if r.checks.passed() { "ok" } else { "BEHIND" }
    );
}

fn main() {
    let secs: u64 = std::env::var("SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let length = Duration::from_secs(secs);
    println!(
        "{:<12}{:>10}{:>12}{:>10}{:>9}{:>10}{:>10}{:>10}  generator",
        "mode", "rate/s", "achieved/s", "CPU µs", "CPU", "lag p50", "p99", "p99.9"
    );
    for rate in [100_000.0, 1_000_000.0] {
        row("async 200µs", rate, || {
            OpenLoop::at(rate)
                .for_duration(length)
                .timer_slack(Duration::from_micros(200))
                .run(|| async { std::hint::black_box(()) })
        });
        row("async", rate, || {
            OpenLoop::at(rate)
                .for_duration(length)
                .run(|| async { std::hint::black_box(()) })
        });
        row("blocking", rate, || {
            OpenLoop::at(rate)
                .for_duration(length)
                .run_blocking(1, || std::hint::black_box(()))
        });
    }
    println!("CPU µs: the whole process's user + system CPU per completed call; CPU: of one core");
    println!("lag: send lag in µs (due → the call started); async 200µs: .timer_slack(200µs)");
}

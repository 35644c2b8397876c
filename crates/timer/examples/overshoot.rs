//! Prints the overshoot distribution of the precise timer against tokio's, for the benchmarks
//! page: `cargo run --release -p sojourn-timer --example overshoot`.
use std::time::Duration;

use tokio::time::Instant;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for (name, precise, spin) in [("tokio", false, 0), ("timerfd", true, 0), ("spin 50µs", true, 50), ("spin 100µs", true, 100), ("spin 200µs", true, 200)] {
            let mut timer = sojourn_timer::Timer::with_spin(Duration::from_micros(spin));
            let cpu0 = cpu_time();
            let mut late = Vec::new();
            let start = Instant::now();
            for i in 1..=2000u64 {
                let deadline = start + Duration::from_micros(1000 * i);
                if precise {
                    timer.sleep_until(deadline).await;
                } else {
                    tokio::time::sleep_until(deadline).await;
                }
                late.push((Instant::now() - deadline).as_micros() as u64);
            }
            late.sort();
            let q = |p: f64| late[((late.len() as f64 * p) as usize).min(late.len() - 1)];
            let cpu = cpu_time() - cpu0;
            println!("{name:10} overshoot µs: p50 {:>4} p90 {:>4} p99 {:>4} p99.9 {:>4} max {:>4}   cpu {:.0}% of one core", q(0.5), q(0.9), q(0.99), q(0.999), late[late.len() - 1], 100.0 * cpu / 2.0);
        }
    });
}

/// This process's user + system CPU seconds, from /proc.
fn cpu_time() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = fields
        .get(11)
        .and_then(|u| u.parse::<f64>().ok())
        .unwrap_or(0.0)
        + fields
            .get(12)
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0);
    ticks / 100.0
}

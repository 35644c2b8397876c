//! Prints the overshoot distribution of the precise timer against tokio's, and what each costs,
//! for the benchmarks page: `cargo run --release -p sojourn-timer --example overshoot [GAP_US]`
//! (default: deadlines 1,000 µs apart; as many as fill 4 s per sleeper, at least 2,000, so the
//! CPU figure is not lost in the kernel's 10 ms accounting tick).
use std::time::Duration;

use tokio::time::Instant;

fn main() {
    let gap: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let sleepers: [(&str, Option<u64>); 5] = [
        ("tokio", None),
        ("timerfd", Some(0)),
        ("spin ≤20µs", Some(20)),
        ("spin ≤50µs", Some(50)),
        ("spin ≤100µs", Some(100)),
    ];
    rt.block_on(async {
        for (name, spin) in sleepers {
            let mut timer =
                sojourn_timer::Timer::with_max_spin(Duration::from_micros(spin.unwrap_or(0)));
            let cpu0 = cpu_time();
            let mut late = Vec::new();
            let start = Instant::now();
            let waits = (4_000_000 / gap.max(1)).max(2_000);
            for i in 1..=waits {
                let deadline = start + Duration::from_micros(gap * i);
                match spin {
                    Some(_) => timer.sleep_until(deadline).await,
                    None => tokio::time::sleep_until(deadline).await,
                }
                late.push((Instant::now() - deadline).as_micros() as u64);
            }
            late.sort();
            let q = |p: f64| late[((late.len() as f64 * p) as usize).min(late.len() - 1)];
            let cpu_us = (cpu_time() - cpu0) * 1e6 / late.len() as f64;
            println!(
                "{name:12} overshoot µs: p50 {:>4} p90 {:>4} p99 {:>4} p99.9 {:>5} max {:>5}   CPU {cpu_us:>5.1} µs/wait (spun {:>4.1})",
                q(0.5),
                q(0.9),
                q(0.99),
                q(0.999),
                late[late.len() - 1],
                timer.spun().as_secs_f64() * 1e6 / late.len() as f64,
            );
        }
    });
}

/// This thread's user + system CPU seconds (from /proc; 10 ms ticks, so runs are seconds long).
fn cpu_time() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    ticks / 100.0
}

//! How busy a worker thread was. A generator thread that is on CPU all the time is late to read
//! answers and to send, and that delay lands in the measurements as service time and pool
//! waits; the self-check must be able to say so.
use std::time::Duration;

/// The calling thread's user + system CPU time, from `/proc/thread-self/stat` (Linux).
pub fn thread_cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    parse_stat(&stat)
}

/// utime and stime are fields 14 and 15, counted in USER_HZ ticks (100 per second on Linux);
/// the command name in field 2 may contain spaces, so count from its closing parenthesis.
fn parse_stat(stat: &str) -> Option<Duration> {
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

/// The share of `wall` spent on CPU since `before`, not counting `spun` (deliberate spinning).
pub fn busy_share(before: Option<Duration>, wall: Duration, spun: Duration) -> Option<f64> {
    let used = thread_cpu_time()?.checked_sub(before?)?;
    // Below a second, 10 ms ticks make the share too coarse to act on.
    if wall < Duration::from_secs(1) {
        return None;
    }
    Some((used.saturating_sub(spun).as_secs_f64() / wall.as_secs_f64()).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_utime_and_stime_past_a_name_with_spaces() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
        let stat = "4242 (sojourn worker) R 1 1 1 0 -1 4194560 10 0 0 0 250 50 0 0 20 0 1 0";
        assert_eq!(parse_stat(stat), Some(Duration::from_millis(3000)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_busy_thread_reads_as_busy() {
        let before = thread_cpu_time();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(1200) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let busy = busy_share(before, start.elapsed(), Duration::ZERO).unwrap();
        // On a shared machine the thread may be preempted, but a pure spin is mostly on CPU;
        // and deliberate spinning is subtracted.
        assert!(busy > 0.3, "busy {busy}");
        let excused = busy_share(before, start.elapsed(), start.elapsed()).unwrap();
        assert!(excused < 0.05, "spinning is excluded: {excused}");
    }
}

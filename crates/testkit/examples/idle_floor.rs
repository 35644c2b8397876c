//! The floor of an idle machine with the CPUs free to halt and held in shallow idle, in turns:
//! a hiccup meter (1 ms ticks) for `SECONDS` each way, `PAIRS` times, on an otherwise idle
//! machine. Holding needs root; without it both columns are the machine as it is.
//!
//! `cargo run --release -p sojourn-testkit --example idle_floor [PAIRS] [SECONDS]` (default 5, 4)
use std::time::Duration;

use sojourn_testkit::idle::ShallowIdle;
use sojourn_timer::HiccupMeter;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>());
    let pairs = args.next().unwrap_or(Ok(5)).expect("PAIRS: a whole number");
    let seconds = args
        .next()
        .unwrap_or(Ok(4))
        .expect("SECONDS: a whole number");
    println!("| pair | free to halt: p99 / p99.9 / max | held shallow: p99 / p99.9 / max |");
    println!("|---|---|---|");
    for pair in 1..=pairs {
        let free = floor(seconds);
        let held = {
            let _idle = ShallowIdle::hold();
            floor(seconds)
        };
        println!("| {pair} | {free} | {held} |");
    }
}

/// A meter's oversleeps over `seconds`, in ms.
fn floor(seconds: u64) -> String {
    let meter = HiccupMeter::start(Duration::from_millis(1)).expect("a hiccup meter");
    std::thread::sleep(Duration::from_secs(seconds));
    let h = meter.stop().histogram;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1e6;
    format!(
        "{:.3} / {:.3} / {:.3} ms",
        ms(0.99),
        ms(0.999),
        h.max() as f64 / 1e6
    )
}

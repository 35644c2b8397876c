//! What the run-level statistics of a long run cost: the batch-means intervals and the validity
//! verdict, computed on a simulated 10-minute run at 20k req/s (1 s intervals, as a real run
//! keeps them). Prints the requests, the intervals and the median of five timings of each, in
//! CPU seconds of this thread; `bench/interval-cost.sh` sets them beside a real run's CPU.
//!
//! Usage: interval_cost [RATE] [SECONDS]   (20000 and 600 by default)
use std::time::Duration;

use sojourn_core::{Arrival, End, Rate, Schedule};
use sojourn_scenario::{Law, Parts, Scenario};
use sojourn_sim::{Client, Plan};

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The median CPU time of five calls of `f`.
fn median_of_five(mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..5)
        .map(|_| {
            let start = thread_cpu();
            f();
            thread_cpu() - start
        })
        .collect();
    times.sort();
    times[2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let rate: f64 = args.next().map_or(20_000.0, |a| a.parse().expect("a rate"));
    let seconds: u64 = args.next().map_or(600, |a| a.parse().expect("seconds"));
    // A server with some spread, so that every percentile has stretches to count.
    let scenario = Scenario::new(Parts::new(
        "spread",
        Law::Exponential {
            mean: Duration::from_millis(2),
        },
    ))
    .expect("a valid scenario");
    let schedule = Schedule::new(
        Arrival::Poisson { seed: 1 },
        Rate::per_second(rate).expect("a rate"),
        End::After(Duration::from_secs(seconds)),
    )
    .expect("a schedule");
    let plan = Plan::new(Client::Open {
        schedule,
        connections: 1_000_000,
        threads: 1,
    });
    let (result, _) = sojourn_sim::run(&scenario, &plan, "cost");
    let batches = median_of_five(|| {
        std::hint::black_box(result.clone().with_batch_intervals());
    });
    let clone = median_of_five(|| {
        std::hint::black_box(result.clone());
    });
    let validity = median_of_five(|| {
        std::hint::black_box(sojourn_core::validity::validity_of(&result));
    });
    println!(
        "requests {} intervals {} batch_intervals_s {:.6} validity_s {:.6}",
        result.counts.scheduled,
        result.intervals.len(),
        batches.saturating_sub(clone).as_secs_f64(),
        validity.as_secs_f64()
    );
}

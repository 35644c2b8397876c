//! Delay accuracy at over 1,000 req/s: the server's departures against the scenario's, from its
//! own truth log. Alone in its own test binary so the other tests' load does not blur it.
mod common;

use std::time::Duration;

use common::{builtin, quantile, start, Client, MS};
use tokio::time::Instant;

const RUN: Duration = Duration::from_secs(2);
const CONNECTIONS: usize = 16;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delays_are_accurate_to_under_a_millisecond_at_1000_per_second() {
    // Uniform 2–20 ms, so deadlines do not line up on tokio's 1 ms ticks; sixteen closed loops
    // give about 16 / 11 ms ≈ 1,450 req/s.
    let mut scenario = builtin("healthy", &[]).parts();
    scenario.law = sojourn_scenario::Law::Uniform {
        min: 2 * MS,
        max: 20 * MS,
    };
    let server = start(sojourn_scenario::Scenario::new(scenario).unwrap()).await;
    let until = Instant::now() + RUN;
    let loops: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let addr = server.addr;
            tokio::spawn(async move {
                let mut c = Client::connect(addr).await.unwrap();
                while Instant::now() < until {
                    c.get("/api").await.unwrap();
                }
            })
        })
        .collect();
    for l in loops {
        l.await.unwrap();
    }
    let (_, truth) = server.stop().await;

    let rate = truth.len() as f64 / RUN.as_secs_f64();
    let mut late: Vec<Duration> = truth.iter().map(|r| r.departure - r.due).collect();
    assert!(
        truth.iter().all(|r| r.departure >= r.due),
        "nobody leaves early"
    );
    let p50 = quantile(&mut late, 0.5);
    let p95 = quantile(&mut late, 0.95);
    let p99 = quantile(&mut late, 0.99);
    let max = *late.last().unwrap();
    eprintln!(
        "{} requests, {rate:.0} req/s; lateness p50 {p50:?}, p95 {p95:?}, p99 {p99:?}, max {max:?}",
        truth.len()
    );
    assert!(rate > 1_000.0, "the load reached {rate:.0} req/s");
    // tokio's own timer rounds deadlines up to the next millisecond: its median lateness is
    // about a millisecond here, so this bound fails if delays fall back to it.
    assert!(p50 < Duration::from_micros(300), "median lateness {p50:?}");
    // On a quiet machine p99 is 0.3–0.5 ms; the bound is on p95 because two compilers sharing
    // the two cores push p99 past a millisecond while p95 stays near 0.2 ms.
    assert!(p95 < MS, "p95 lateness {p95:?}");
}

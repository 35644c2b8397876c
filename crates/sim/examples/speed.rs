//! How fast the simulator runs: every built-in, 60 s × 1,000 req/s, each client model.
//!
//!     cargo run --release -p sojourn-sim --example speed
//!
//! Prints a Markdown table (the median of five runs each) for docs/benchmarks.md.
use std::time::{Duration, Instant};

use sojourn_core::{Arrival, End, Rate, Schedule};
use sojourn_scenario::{builtins, Scenario};
use sojourn_sim::{simulate, Client, Plan};

const RUNS: usize = 5;

fn main() {
    let schedule = Schedule::new(
        Arrival::Constant,
        Rate::per_second(1000.0).expect("a positive rate"),
        End::After(Duration::from_secs(60)),
    )
    .expect("a constant schedule");
    let clients = [
        (
            "open, 2048 connections",
            Client::Open {
                schedule: schedule.clone(),
                connections: 2048,
                threads: 1,
            },
        ),
        (
            "closed, 10 connections, 60 s",
            Client::Closed {
                end: End::After(Duration::from_secs(60)),
                connections: 10,
                threads: 1,
            },
        ),
        ("tracking", Client::Tracking { schedule }),
    ];
    println!("| scenario | client | requests | server arrivals | wall time (median of {RUNS}) | requests per wall second |");
    println!("|---|---|---:|---:|---:|---:|");
    for b in builtins() {
        let scenario = Scenario::builtin(b.name, &[]).expect("built-ins are valid");
        for (name, client) in &clients {
            let plan = Plan::new(client.clone());
            let (wall, requests, arrivals) = time(&scenario, &plan);
            println!(
                "| {} | {name} | {requests} | {arrivals} | {:.1} ms | {:.1} M |",
                b.name,
                wall.as_secs_f64() * 1e3,
                requests as f64 / wall.as_secs_f64() / 1e6
            );
        }
    }
}

/// Median wall time of `RUNS` simulations, with the requests scheduled and the server arrivals.
fn time(scenario: &Scenario, plan: &Plan) -> (Duration, u64, u64) {
    let mut walls = Vec::with_capacity(RUNS);
    let mut counts = (0, 0);
    for _ in 0..RUNS {
        let start = Instant::now();
        let sim = simulate(scenario, plan);
        walls.push(start.elapsed());
        counts = (sim.scheduled, sim.server.arrivals);
    }
    walls.sort();
    (walls[RUNS / 2], counts.0, counts.1)
}

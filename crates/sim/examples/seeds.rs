//! The seeds' figures next to the simulator's, as Markdown for docs/validation.md.
//!
//!     cargo run --release -p sojourn-sim --example seeds
//!
//! tests/seeds.rs asserts these numbers; this prints them.
use std::time::Duration;

use sojourn_core::{Arrival, End, Rate, RunResult, Schedule};
use sojourn_scenario::{Override, Scenario};
use sojourn_sim::{run, Client, Plan, Simulation};

fn builtin(name: &str, sets: &[&str]) -> Scenario {
    let o: Vec<Override> = sets.iter().map(|s| s.parse().expect("override")).collect();
    Scenario::builtin(name, &o).expect("built-in")
}

fn constant(rate: f64, secs: u64) -> Schedule {
    let rate = Rate::per_second(rate).expect("positive rate");
    let end = End::After(Duration::from_secs(secs));
    Schedule::new(Arrival::Constant, rate, end).expect("constant schedule")
}

fn open(rate: f64, secs: u64) -> Plan {
    Plan::new(Client::Open {
        schedule: constant(rate, secs),
        connections: 2048,
        threads: 1,
    })
}

fn closed(end: End, connections: usize) -> Plan {
    Plan::new(Client::Closed {
        end,
        connections,
        threads: 1,
    })
}

fn tracking(rate: f64, secs: u64) -> Plan {
    Plan::new(Client::Tracking {
        schedule: constant(rate, secs),
    })
}

fn with_rtt(plan: Plan, ms: u64) -> Plan {
    Plan {
        rtt: Duration::from_millis(ms),
        ..plan
    }
}

fn ms(r: &RunResult, p: f64) -> String {
    let h = r
        .histograms
        .response
        .histogram()
        .expect("carried histogram");
    let ns = if p >= 100.0 {
        h.max()
    } else {
        h.value_at_quantile(p / 100.0)
    };
    format!("{:.2}", ns as f64 / 1e6)
}

fn service_ms(r: &RunResult, p: f64) -> String {
    let ns = r.histograms.service.percentiles.get(p).unwrap_or(0);
    format!("{:.2}", ns as f64 / 1e6)
}

fn sim(s: &Scenario, plan: &Plan) -> (RunResult, Simulation) {
    run(s, plan, "x")
}

fn row(what: &str, seed: &str, ours: String) {
    println!("| {what} | {seed} | {ours} |");
}

fn header(title: &str) {
    println!("\n### {title}\n\n| figure | seed | sojourn sim |\n|---|---:|---:|");
}

fn seed_000() {
    header("Seed 000: every-nth, 450 req/s × 30 s");
    let s = builtin("every-nth", &[]);
    let (c, cs) = sim(&s, &closed(End::Count(13_500), 1));
    let (t, ts) = sim(&s, &tracking(450.0, 30));
    let (o, _) = sim(&s, &open(450.0, 30));
    row(
        "count (each)",
        "13,500",
        format!(
            "{} / {}",
            c.histograms.response.count, t.histograms.response.count
        ),
    );
    row("pauses", "27", cs.server.slow.to_string());
    for (p, closed_seed, open_seed) in [
        (50.0, "1.00", "1.00"),
        (90.0, "1.00", "137.89"),
        (99.0, "1.07", "194.64"),
        (99.9, "200.15", "200.15"),
        (100.0, "200.28", "200.41"),
    ] {
        row(&format!("closed p{p} (ms)"), closed_seed, ms(&c, p));
        row(&format!("open (tracking) p{p} (ms)"), open_seed, ms(&t, p));
    }
    row(
        "open loop, unlimited connections, p90 / p99 (ms)",
        "—",
        format!("{} / {}", ms(&o, 90.0), ms(&o, 99.0)),
    );
    row(
        "requests measured late",
        "~4,400",
        ts.impact.slow.affected.to_string(),
    );
    row(
        "tracking client's latency view p99 (ms)",
        "—",
        service_ms(&t, 99.0),
    );
}

fn seed_001() {
    header("Seed 001: 60 s × 1,000 req/s, 10 ms, 10 closed connections");
    let s = builtin("hiccup", &[]);
    let (o, os) = sim(&s, &open(1000.0, 60));
    let (c, cs) = sim(&s, &closed(End::After(Duration::from_secs(60)), 10));
    row("hiccup closed p99 (ms)", "12–19", ms(&c, 99.0));
    row("hiccup closed p99.9 (ms)", "~1,000", ms(&c, 99.9));
    for (p, seed) in [
        (99.0, "≈410"),
        (99.5, "≈710"),
        (99.9, "≈950"),
        (100.0, "≈1,007"),
    ] {
        row(&format!("hiccup open p{p} (ms)"), seed, ms(&o, p));
    }
    row(
        "hiccup requests held: closed / open",
        "~10 / ~1,000",
        format!(
            "{} / {}",
            cs.impact.stalls[0].delayed, os.impact.stalls[0].delayed
        ),
    );
    let s = builtin("gc-pauses", &[]);
    let (o, _) = sim(&s, &open(1000.0, 60));
    let (c, _) = sim(&s, &closed(End::After(Duration::from_secs(60)), 10));
    row("gc-pauses closed p99 (ms)", "12–19", ms(&c, 99.0));
    row("gc-pauses closed p99.9 (ms)", "≈200", ms(&c, 99.9));
    for (p, seed) in [(99.0, "110–119"), (99.5, "160–166"), (99.9, "≈200")] {
        row(&format!("gc-pauses open p{p} (ms)"), seed, ms(&o, p));
    }
    let s = builtin("ramp", &[]);
    let (o, _) = sim(&s, &open(1000.0, 60));
    let (d, _) = sim(&s, &closed(End::After(Duration::from_secs(60)), 10));
    let (n, _) = sim(&s, &closed(End::Count(60_000), 10));
    row("ramp open p50 (ms)", "≈42", ms(&o, 50.0));
    row("ramp duration-bounded closed p50 (ms)", "≈12", ms(&d, 50.0));
    row("ramp count-bounded closed p50 (ms)", "≈100", ms(&n, 50.0));
    let s = builtin("saturation", &[]);
    let (o, _) = sim(&s, &open(1000.0, 60));
    let (c, _) = sim(&s, &closed(End::After(Duration::from_secs(60)), 10));
    row(
        "saturation (cap 50) p99.99 closed / open (ms)",
        "all agree",
        format!("{} / {}", ms(&c, 99.99), ms(&o, 99.99)),
    );
}

fn seed_004() {
    header("Seed 004: one worker, 20 ms, 5% at 200 ms; single-threaded clients");
    let s = builtin("bimodal", &[]);
    let (c, _) = sim(&s, &closed(End::After(Duration::from_secs(60)), 1));
    row(
        "closed req/s, exact law",
        "—",
        format!("{:.1}", c.rate.achieved),
    );
    let (c, _) = sim(
        &s,
        &with_rtt(closed(End::After(Duration::from_secs(60)), 1), 26),
    );
    row(
        "closed req/s, +26 ms overhead",
        "~18",
        format!("{:.1}", c.rate.achieved),
    );
    row(
        "closed p50 / p99 (ms), +26 ms",
        "44 / 245",
        format!("{} / {}", ms(&c, 50.0), ms(&c, 99.0)),
    );
    let (t, _) = sim(&s, &with_rtt(tracking(20.0, 12), 26));
    row(
        "open 20 qps (12 s, +26 ms): achieved",
        "19",
        format!("{:.1}", t.rate.achieved),
    );
    row(
        "… client latency p50 / p99 (ms)",
        "43 / 227",
        format!("{} / {}", service_ms(&t, 50.0), service_ms(&t, 99.0)),
    );
    row(
        "… sojourn p50 / p99 (ms)",
        "1,068 / 1,717",
        format!("{} / {}", ms(&t, 50.0), ms(&t, 99.0)),
    );
    row(
        "… queue wait mean (ms)",
        "906",
        format!("{:.0}", t.histograms.send_lag.mean / 1e6),
    );
    let sp = builtin("spike", &[]);
    let (c, _) = sim(&sp, &closed(End::After(Duration::from_secs(12)), 1));
    let (t, ts) = sim(&sp, &tracking(20.0, 12));
    row(
        "spike closed p99 / max (ms)",
        "48 / 2,030",
        format!("{} / {}", ms(&c, 99.0), ms(&c, 100.0)),
    );
    row(
        "spike open count",
        "241",
        t.histograms.response.count.to_string(),
    );
    row(
        "spike open sojourn p50 / p99 / max (ms)",
        "43 / 1,950 / 2,004",
        format!("{} / {} / {}", ms(&t, 50.0), ms(&t, 99.0), ms(&t, 100.0)),
    );
    row(
        "spike missed deadlines",
        "81",
        ts.impact.stalls[0].delayed.to_string(),
    );
    cliff(&s);
}

fn cliff(s: &Scenario) {
    println!("\n#### Seed 004's capacity cliff (30 s per step)\n");
    println!("| offered | seed achieved | seed sojourn p50 | tracking, exact: achieved / sojourn p50 | tracking, +11 ms: achieved / sojourn p50 | open loop, +11 ms: sojourn p50 |");
    println!("|---:|---:|---:|---:|---:|---:|");
    let seed = [
        ("5.2", "42"),
        ("10.2", "33"),
        ("19.4", "108"),
        ("25.2", "70"),
        ("26.0", "1,543"),
        ("23.1", "2,679"),
    ];
    for (rate, (ach, p50)) in [5.0, 10.0, 20.0, 30.0, 40.0, 50.0].into_iter().zip(seed) {
        let (exact, _) = sim(s, &tracking(rate, 30));
        let (slow, _) = sim(s, &with_rtt(tracking(rate, 30), 11));
        let (open, _) = sim(s, &with_rtt(open(rate, 30), 11));
        println!(
            "| {rate} | {ach} | {p50} | {:.1} / {} | {:.1} / {} | {} |",
            exact.rate.achieved,
            ms(&exact, 50.0),
            slow.rate.achieved,
            ms(&slow, 50.0),
            ms(&open, 50.0)
        );
    }
}

fn main() {
    seed_000();
    seed_001();
    seed_004();
}

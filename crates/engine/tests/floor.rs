//! Whose lateness is it? A generator that burns its own CPU makes its own hiccup meter late, and
//! must not be excused by it: only the control meter, an idle process of its own, speaks for the
//! machine.
mod common;

use std::time::{Duration, Instant};

use common::{open_plan, transport, Behaviour, TestServer};
use sojourn_core::check::within_floor;
use sojourn_core::result::HistogramSummary;
use sojourn_core::sweep::{self, Status, StepRules};
use sojourn_core::{Rate, RunResult};
use sojourn_timer::affinity;

// This binary starts control meters: it serves as one, too.
sojourn_testkit::control_meter_hook!();

/// Threads that only burn CPU, beside the generator's on its one core: enough of them that the
/// generator's threads wait tens of milliseconds for the CPU, far above anything the machine
/// does to an idle process.
const BURNERS: usize = 32;

fn burn(until: Instant) {
    let mut x = 1u64;
    while Instant::now() < until {
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
    }
    std::hint::black_box(x);
}

fn p99(h: Option<&HistogramSummary>) -> u64 {
    h.and_then(|h| h.percentiles.get(99.0)).unwrap_or(0)
}

/// A library run at 200 req/s for 2 s from a thread confined to `cpu`, with [`BURNERS`]
/// threads of the same process burning that core throughout. Its hiccup meter and workers
/// inherit the core; the control meter's process moves off it.
fn burning_run(cpu: usize) -> RunResult {
    // The server's threads are kept off the burned core (they inherit the mask of the thread
    // that starts them): the experiment starves the generator, not the target. Left to the
    // scheduler they can land beside the burners, and answers that late bury the generator's
    // own lateness: in CI (2026-11-26) dispatch lag p99 was 30 ms and no late generator was
    // found, which needs a response p99 over 300 ms (the verdict wants a tenth of it).
    let others: Vec<usize> = affinity::online()
        .into_iter()
        .filter(|&c| c != cpu)
        .collect();
    let server = std::thread::spawn(move || {
        affinity::pin_this_thread(&others).unwrap();
        TestServer::start(Behaviour::Answer)
    })
    .join()
    .unwrap();
    let url = server.url();
    std::thread::spawn(move || {
        affinity::pin_this_thread(&[cpu]).unwrap();
        let until = Instant::now() + Duration::from_millis(2600);
        let burners: Vec<_> = (0..BURNERS)
            .map(|_| std::thread::spawn(move || burn(until)))
            .collect();
        let plan = sojourn_engine::Plan {
            hiccup: Some(sojourn_engine::HICCUP_TICK),
            control: Some(control_command()),
            interval: Duration::from_millis(250),
            ..open_plan(200.0, Duration::from_secs(2), 64)
        };
        let report = sojourn_engine::execute(
            &plan,
            transport(&url),
            tokio_util::sync::CancellationToken::new(),
            sojourn_engine::Progress::new(plan.worker_count()),
        )
        .unwrap();
        for b in burners {
            b.join().unwrap();
        }
        sojourn_engine::result::build(
            &plan,
            &report,
            &sojourn_engine::result::About::labelled("burning"),
        )
    })
    .join()
    .unwrap()
}

/// Whether run `r` can tell the meters apart: the burners made this process's own meter late
/// (as late as the sends, so it would have excused them) and not the control's. A machine busy
/// enough to make an idle process nearly as late cannot tell; `Err` says how.
fn tells_the_meters_apart(r: &RunResult) -> Result<(), String> {
    let h = &r.histograms;
    let (own, control, lag) = (
        p99(h.hiccup.as_ref()),
        p99(h.control_hiccup.as_ref()),
        p99(h.dispatch_lag.as_ref()),
    );
    let response = h.response.percentiles.get(99.0).unwrap_or(0);
    let figures = format!(
        "own p99 {own} ns, control p99 {control} ns, dispatch lag p99 {lag} ns, response p99 \
         {response} ns"
    );
    eprintln!("{figures}");
    if control * 4 < own && within_floor(lag, own) {
        Ok(())
    } else {
        Err(figures)
    }
}

/// A run that tells the meters apart; on a machine too noisy to, one more try, and then the
/// test fails saying so (it never widens what it accepts).
fn run_with_a_quiet_control(cpu: usize) -> RunResult {
    let first = burning_run(cpu);
    if tells_the_meters_apart(&first).is_ok() {
        return first;
    }
    let second = burning_run(cpu);
    if let Err(figures) = tells_the_meters_apart(&second) {
        panic!(
            "the control meter was as late as this process's own, twice (a machine too noisy to tell \
             them apart, or a control meter sharing the generator's core): {figures}"
        );
    }
    second
}

#[test]
fn a_generator_burning_its_own_cpu_is_refused_the_machines_excuse() {
    let online = affinity::online();
    if online.len() < 2 {
        sojourn_testkit::skip("one CPU: nowhere to keep the control meter apart");
        return;
    }
    let r = run_with_a_quiet_control(*online.last().unwrap());
    let h = &r.histograms;
    let (control, lag) = (p99(h.control_hiccup.as_ref()), p99(h.dispatch_lag.as_ref()));
    let figures = format!("control p99 {control} ns, dispatch lag p99 {lag} ns");
    // This process's own meter would have excused the late sends (checked above); the control
    // meter does not.
    assert!(!within_floor(lag, control), "{figures}");
    // The self-check's words refuse the excuse…
    let notes = r.checks.notes.join("\n");
    assert!(
        notes.contains("above the machine's floor") && !notes.contains("within the machine's"),
        "{notes}"
    );
    assert!(
        notes.contains("this process's own hiccups") && notes.contains("not excused"),
        "{notes}"
    );
    // …and so does the verdict, the run's own and a sweep's alike.
    let rules = StepRules::new(Duration::from_millis(500), Duration::from_secs(2));
    let step = sweep::evaluate(&r, Rate::per_second(200.0).unwrap(), &rules, &[]).unwrap();
    assert_eq!(
        step.status,
        Status::GeneratorBound,
        "{figures}: {:?}",
        step.reasons
    );
    assert_eq!(
        r.checks.rate.as_ref().map(|v| v.status),
        Some(Status::GeneratorBound)
    );
}

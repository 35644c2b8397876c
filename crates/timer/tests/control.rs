//! The control meter in a real child process: this test binary starts itself as the child.
use std::time::{Duration, Instant};

use sojourn_timer::{affinity, ControlCommand, ControlMeter};

/// Set (to the tick in ns) in the child: the test named [`HOOK`] then serves as the control
/// meter instead of checking it.
const CHILD: &str = "SOJOURN_TIMER_TEST_CONTROL_TICK_NS";
const HOOK: &str = "a_control_meter_runs_in_a_process_of_its_own";

fn this_binary() -> ControlCommand {
    ControlCommand {
        program: std::env::current_exe().unwrap(),
        args: [HOOK, "--exact", "--nocapture", "--test-threads=1"]
            .map(Into::into)
            .to_vec(),
        env: vec![(CHILD.into(), "1000000".into())],
    }
}

/// In the parent: a control meter started from this binary ticks once a millisecond while it
/// runs and answers promptly when asked. In the child (with [`CHILD`] set): the control meter.
#[test]
fn a_control_meter_runs_in_a_process_of_its_own() {
    if let Ok(tick) = std::env::var(CHILD) {
        let tick = Duration::from_nanos(tick.parse().unwrap());
        let every = Duration::from_millis(100);
        sojourn_timer::serve_control_reporting(tick, every, &mut std::io::stdout()).unwrap();
        return;
    }
    let started = Instant::now();
    let meter = ControlMeter::start(&this_binary()).unwrap();
    let floor = meter.floor();
    std::thread::sleep(Duration::from_millis(400));
    // Reporting every 100 ms, a child that has started up has reported on its way.
    let seen = floor.snapshot().expect("periods reported while it ran");
    assert!(
        seen.period.ticks > 0 && seen.period.p99 <= seen.period.max,
        "{seen:?}"
    );
    assert!(seen.so_far.ticks >= seen.period.ticks && seen.so_far.max >= seen.period.max);
    let asked = Instant::now();
    let report = meter.stop().unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(report.oversleeps.period, Duration::from_millis(1));
    let (until_asked, until_answer) = (
        asked.duration_since(started).as_millis() as u64,
        started.elapsed().as_millis() as u64,
    );
    // No more ticks than milliseconds it lived; start-up (a test binary) takes some of them.
    let n = report.oversleeps.histogram.len();
    assert!(
        (until_asked / 3..=until_answer).contains(&n),
        "{n} ticks in {until_asked}–{until_answer} ms"
    );
    assert!(seen.so_far.ticks <= n, "the periods are part of the whole");
}

/// A generator confined to one core starts its control meter there; the meter moves to the
/// machine's other cores, and says where it ran.
#[test]
fn the_control_meter_leaves_the_generators_core() {
    let online = affinity::online();
    if online.len() < 2 {
        println!("SKIPPED: one CPU, nowhere to move to");
        return;
    }
    let core = *online.last().unwrap();
    let report = std::thread::spawn(move || {
        affinity::pin_this_thread(&[core]).unwrap();
        let meter = ControlMeter::start(&this_binary()).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        meter.stop().unwrap()
    })
    .join()
    .unwrap();
    let others: Vec<usize> = online.iter().copied().filter(|&c| c != core).collect();
    assert_eq!(report.cpus, affinity::format_list(&others));
}

//! A control hiccup meter for test binaries, which have no `sojourn __hiccup-control` of their
//! own: the test binary starts itself as the child, running one named test (the hook) that
//! serves the meter when [`CHILD`] is set in its environment. Each test binary that starts a
//! control meter holds that hook, e.g. in its `common` module:
//!
//! ```ignore
//! #[test]
//! fn control_meter_hook() {
//!     if sojourn_testkit::control::serve_if_child() {
//!         return;
//!     }
//!     sojourn_testkit::control::check_answers(&control_command());
//! }
//! ```
use std::time::Duration;

use sojourn_timer::{ControlCommand, ControlMeter};

/// Set in the child to the tick, in nanoseconds.
pub const CHILD: &str = "SOJOURN_TEST_CONTROL_TICK_NS";

/// The command that starts this test binary as a control meter with a 1 ms tick, through the
/// test `hook` (its full path in the binary, e.g. `common::control_meter_hook`).
pub fn command(hook: &str) -> ControlCommand {
    ControlCommand {
        program: std::env::current_exe().expect("a test binary knows its path"),
        args: [hook, "--exact", "--nocapture", "--test-threads=1"]
            .map(Into::into)
            .to_vec(),
        env: vec![(CHILD.into(), "1000000".into())],
    }
}

/// In the child: serves the control meter on stdout and returns true. In a test run: false.
pub fn serve_if_child() -> bool {
    let Ok(tick) = std::env::var(CHILD) else {
        return false;
    };
    let tick = Duration::from_nanos(tick.parse().expect("a tick in ns"));
    sojourn_timer::serve_control(tick, &mut std::io::stdout()).expect("serving the control meter");
    true
}

/// Starts the control meter `command` and checks that it answers, within a second of being
/// asked, with one tick per millisecond it ran: no more than the milliseconds from start to
/// answer, and at least a third of those until it was asked (start-up takes some, and a loaded
/// machine more).
pub fn check_answers(command: &ControlCommand) {
    let started = std::time::Instant::now();
    let meter = ControlMeter::start(command).expect("starting the control meter");
    std::thread::sleep(Duration::from_millis(300));
    let asked = std::time::Instant::now();
    let report = meter.stop().expect("the control meter's figures");
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    let (until_asked, until_answer) = (
        asked.duration_since(started).as_millis() as u64,
        started.elapsed().as_millis() as u64,
    );
    let ticks = report.oversleeps.histogram.len();
    assert!(
        (until_asked / 3..=until_answer).contains(&ticks),
        "{ticks} ticks in {until_asked}–{until_answer} ms"
    );
}

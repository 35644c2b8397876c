//! The live progress line: elapsed, rate, in flight, errors. Drawn on stderr only when it is a
//! terminal, so pipes and CI logs stay clean.
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sojourn_engine::{Load, Plan, Progress};

pub struct Bar {
    bar: ProgressBar,
    progress: Arc<Progress>,
    started: Instant,
}

impl Bar {
    pub fn new(plan: &Plan, progress: Arc<Progress>) -> Bar {
        let bar = if interactive() {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(5))
        } else {
            ProgressBar::hidden()
        };
        let mode = match plan.load {
            Load::Open(_) => "open",
            Load::Closed(_) => "closed",
            Load::Paced(_) => "paced",
        };
        bar.set_style(
            ProgressStyle::with_template("{prefix} {elapsed:>4} {msg}").expect("static template"),
        );
        bar.set_prefix(mode);
        Bar {
            bar,
            progress,
            started: Instant::now(),
        }
    }

    pub fn update(&self) {
        let s = self.progress.snapshot();
        let secs = self
            .started
            .elapsed()
            .max(Duration::from_millis(1))
            .as_secs_f64();
        self.bar.set_message(format!(
            "sent {}  answered {} ({:.0}/s)  in flight {}  errors {}",
            s.sent,
            s.answered,
            s.answered as f64 / secs,
            s.in_flight,
            s.failed
        ));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Whether the terminal shows the live panel (or progress line).
pub fn interactive() -> bool {
    std::io::stderr().is_terminal()
}

//! The live panel: a few lines on stderr while a run goes on, when stderr is a terminal.
//! Elapsed against planned, target against achieved rate, in flight and how long the oldest of
//! them has been due, errors, the last interval's p50 and p99 with the number of answers each
//! rests on, and a sparkline of p99 over the run; for a journey run, a row per step label and
//! per journey below it (counts and percentiles so far). Drawn in an inline viewport
//! (no alternate screen, no raw mode), so the terminal needs no restoring beyond the cursor,
//! and the panel is cleared before the summary is printed. With stdout redirected it falls
//! back to the one-line progress; off a terminal it draws nothing.
use std::collections::VecDeque;
use std::io::{IsTerminal, Stderr};
use std::sync::Arc;

use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Sparkline};
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};
use sojourn_core::{format_ns, FailureClass};

use crate::progress::Bar;
use sojourn::execute::{Interruption, Sinks, Watcher};
use sojourn::live::{View, Watched};
use sojourn_engine::{IntervalSnapshot, LabelSnapshot, LabelsSnapshot};
use sojourn_engine::{Plan, Progress};

/// Borders, four lines of figures, and two rows of sparkline.
const HEIGHT: u16 = 8;
/// Lines of figures.
const FIGURES: u16 = 4;
/// Rows of sparkline.
const SPARK: u16 = 2;
/// The most rows a journey run's table shows; a longer file's rest is counted, not shown.
const MAX_ROWS: usize = 10;
/// The width of the table's name column.
const NAME: usize = 34;
/// The most p99 values kept for the sparkline: wider than any terminal.
const HISTORY: usize = 512;

/// How the run is shown while it goes.
enum Screen {
    Panel(Terminal<CrosstermBackend<Stderr>>),
    /// The one-line progress bar (drawn only if stderr is a terminal): used when stdout is not
    /// a terminal, because placing the panel asks the terminal where the cursor is, and that
    /// question goes out on stdout, into whatever file or pipe the summary goes to.
    Line(Bar),
}

pub struct Panel {
    screen: Option<Screen>,
    watched: Watched,
    /// p99 of each completed interval, in microseconds, oldest first.
    p99s: VecDeque<u64>,
    last_index: Option<u64>,
}

impl Panel {
    /// The panel if stdout and stderr are terminals and the terminal answers; otherwise the
    /// progress line, which draws nothing off a terminal.
    pub fn new(watched: Watched, bar: impl FnOnce() -> Bar) -> Panel {
        // A journey run's rows are known before it starts: the panel is as tall as they need.
        let rows = watched.view().labels.map_or(0, |l| table(&l).len() as u16);
        let screen = match inline_terminal(HEIGHT + rows) {
            Some(terminal) => Screen::Panel(terminal),
            None => Screen::Line(bar()),
        };
        Panel {
            screen: Some(screen),
            watched,
            p99s: VecDeque::new(),
            last_index: None,
        }
    }

    pub fn update(&mut self) {
        let view = self.watched.view();
        self.remember(&view);
        match self.screen.as_mut() {
            Some(Screen::Panel(terminal)) => {
                let p99s = self.p99s.make_contiguous();
                // A terminal that stops answering only loses the panel, never the run.
                let _ = terminal.draw(|f| draw(f, &view, p99s));
            }
            Some(Screen::Line(bar)) => bar.update(),
            None => {}
        }
    }

    fn remember(&mut self, view: &View) {
        let Some(last) = view.last else { return };
        if self.last_index == Some(last.index) {
            return;
        }
        self.last_index = Some(last.index);
        if self.p99s.len() == HISTORY {
            self.p99s.pop_front();
        }
        self.p99s.push_back(last.response_p99.as_micros() as u64);
    }

    /// Clears the panel and gives the cursor back, so the summary prints where it stood.
    pub fn finish(&mut self) {
        match self.screen.take() {
            Some(Screen::Panel(mut terminal)) => {
                let _ = terminal.clear();
                let top = terminal.get_frame().area().as_position();
                let _ = terminal.set_cursor_position(top);
                let _ = terminal.show_cursor();
            }
            Some(Screen::Line(bar)) => bar.finish(),
            None => {}
        }
    }
}

/// A few lines of stderr below the cursor, cleared, when both stdout and stderr are terminals.
fn inline_terminal(height: u16) -> Option<Terminal<CrosstermBackend<Stderr>>> {
    if !(crate::progress::interactive() && std::io::stdout().is_terminal()) {
        return None;
    }
    let options = TerminalOptions {
        viewport: Viewport::Inline(height),
    };
    let mut terminal =
        Terminal::with_options(CrosstermBackend::new(std::io::stderr()), options).ok()?;
    terminal.clear().ok()?;
    Some(terminal)
}

impl Drop for Panel {
    fn drop(&mut self) {
        self.finish();
    }
}

fn draw(f: &mut Frame, v: &View, p99s: &[u64]) {
    let title = format!(" sojourn {} · {} ", v.mode, progress(v));
    let block = Block::bordered().title(title);
    let inner = block.inner(f.area());
    f.render_widget(block, f.area());
    let [figures, spark, rows] = Layout::vertical([
        Constraint::Length(FIGURES),
        Constraint::Length(SPARK),
        Constraint::Min(0),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(lines(v)), figures);
    sparkline(f, spark, p99s);
    if let Some(labels) = &v.labels {
        let lines: Vec<Line> = table(labels).into_iter().map(Line::from).collect();
        f.render_widget(Paragraph::new(lines), rows);
    }
}

/// A journey run's table: a header, a row per step label then a row per journey (file order),
/// each with its counts and its response (a journey: journey time) p50 and p99 so far. With
/// more than [`MAX_ROWS`], the first steps and journeys that fit, and a line saying how many
/// are not shown.
fn table(l: &LabelsSnapshot) -> Vec<String> {
    // A targets file's labels take the steps' place: a run has one or the other.
    let (rows, title, noun) = match l.targets.is_empty() {
        true => (&l.steps, "step / journey", "step"),
        false => (&l.targets, "target label", "label"),
    };
    let (steps, journeys) = shown(rows.len(), l.journeys.len());
    let mut lines = vec![format!(
        "{:<NAME$}{:>9}{:>8}{:>11}{:>11}{:>11}",
        title, "completed", "failed", "in flight", "p50", "p99"
    )];
    lines.extend(rows[..steps].iter().map(|r| row(&r.name, r)));
    lines.extend(
        l.journeys[..journeys]
            .iter()
            .map(|r| row(&format!("journey {}", r.name), r)),
    );
    let hidden = (rows.len() - steps, l.journeys.len() - journeys);
    if hidden != (0, 0) {
        lines.push(hidden_line(hidden, noun));
    }
    lines
}

/// How many steps and journeys fit: all, or, beyond [`MAX_ROWS`], up to half the rows for
/// journeys and the rest (less the line that counts what is hidden) for steps.
fn shown(steps: usize, journeys: usize) -> (usize, usize) {
    if steps + journeys <= MAX_ROWS {
        return (steps, journeys);
    }
    let journeys = journeys.min((MAX_ROWS - 1) / 2);
    (steps.min(MAX_ROWS - 1 - journeys), journeys)
}

fn hidden_line((steps, journeys): (usize, usize), noun: &str) -> String {
    let count = |n: usize, what: &str| match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    };
    let what = match (steps, journeys) {
        (s, 0) => count(s, noun),
        (0, j) => count(j, "journey"),
        (s, j) => format!("{} and {}", count(s, noun), count(j, "journey")),
    };
    format!("… {what} more, not shown")
}

/// One row: its name (cut to the column with `…`), completed, failed, in flight or running,
/// and p50 and p99 so far (`-` while nothing has finished).
fn row(name: &str, r: &LabelSnapshot) -> String {
    let name = if name.chars().count() > NAME - 1 {
        let cut: String = name.chars().take(NAME - 2).collect();
        format!("{cut}…")
    } else {
        name.to_string()
    };
    let ns = |d: std::time::Duration| format_ns(d.as_nanos() as u64);
    let (p50, p99) = r
        .time
        .map_or(("-".into(), "-".into()), |p| (ns(p.p50), ns(p.p99)));
    format!(
        "{name:<NAME$}{:>9}{:>8}{:>11}{p50:>11}{p99:>11}",
        r.completed,
        r.failures.total(),
        r.in_flight
    )
}

/// `12.3 s of 60 s`, or just the elapsed time when the plan has no known length.
fn progress(v: &View) -> String {
    let secs = |d: std::time::Duration| format!("{:.1} s", d.as_secs_f64());
    match v.planned {
        Some(p) => format!("{} of {}", secs(v.elapsed), secs(p)),
        None => secs(v.elapsed),
    }
}

fn lines(v: &View) -> Vec<Line<'static>> {
    figures(v).into_iter().map(Line::from).collect()
}

/// The panel's lines of figures. Each figure from the last interval says how many answers it
/// rests on: in a stall the few that come back say least, and a p99 of one answer must not
/// pass for a healthy one.
fn figures(v: &View) -> [String; FIGURES as usize] {
    let c = &v.counters;
    let target = v
        .target_rate
        .map_or("none (closed loop)".into(), |r| format!("{r:.0}/s"));
    let achieved = v.last.map_or("-".into(), |l| {
        format!("{:.0}/s (n={})", l.rate(), l.answers)
    });
    let interval = v
        .last
        .map_or("last interval: not yet complete".into(), interval_line);
    [
        format!(
            "rate target {target}  achieved {achieved}  in flight {}",
            c.in_flight
        ),
        oldest_line(v),
        format!(
            "sent {}  answered {}  errors {}",
            c.sent,
            c.answered,
            errors(v)
        ),
        interval,
    ]
}

/// How long the oldest request in flight has been due: a stall, seen while it lasts, before
/// any answer from it comes back to move a percentile.
fn oldest_line(v: &View) -> String {
    match v.counters.oldest_in_flight {
        Some(age) => format!("oldest in flight: {}", format_ns(age.as_nanos() as u64)),
        None => "oldest in flight: none".into(),
    }
}

/// `last 1 s: p50 … (n=…)  p99 … (n=…)  send lag p99 … (n=…)`; nothing finished (a stall)
/// says so.
fn interval_line(l: IntervalSnapshot) -> String {
    let width = format_ns(l.width.as_nanos() as u64);
    if l.answers == 0 {
        return format!("last {width}: nothing finished");
    }
    let ns = |d: std::time::Duration| format_ns(d.as_nanos() as u64);
    let n = l.answers;
    let lag = match l.sent_answers {
        0 => "send lag: none sent".to_string(),
        sent => format!("send lag p99 {} (n={sent})", ns(l.send_lag_p99)),
    };
    format!(
        "last {width}: p50 {} (n={n})  p99 {} (n={n})  {lag}",
        ns(l.response_p50),
        ns(l.response_p99),
    )
}

/// The error total and its classes, largest first: `12 (timeout 10, io 2)`.
fn errors(v: &View) -> String {
    let f = &v.counters.failures;
    let mut classes: Vec<(u64, FailureClass)> = FailureClass::ALL
        .iter()
        .map(|&c| (f.get(c), c))
        .filter(|(n, _)| *n > 0)
        .collect();
    if classes.is_empty() {
        return "0".into();
    }
    classes.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
    let each: Vec<String> = classes
        .iter()
        .map(|(n, c)| format!("{} {n}", c.name()))
        .collect();
    format!("{} ({})", f.total(), each.join(", "))
}

/// The newest p99s that fit, scaled to the highest of them, which the label names.
fn sparkline(f: &mut Frame, area: Rect, p99s: &[u64]) {
    const LABEL: u16 = 14;
    let [label, bars] =
        Layout::horizontal([Constraint::Length(LABEL), Constraint::Min(1)]).areas(area);
    let shown = &p99s[p99s.len().saturating_sub(bars.width as usize)..];
    let top = shown.iter().copied().max().unwrap_or(0);
    let scale = format!("top {}", format_ns(top.saturating_mul(1_000)));
    f.render_widget(
        Paragraph::new(vec![Line::from("p99"), Line::from(scale)]),
        label,
    );
    f.render_widget(Sparkline::default().data(shown), bars);
}

/// The terminal's live sinks: the panel (or progress line), the metrics endpoint when
/// `--metrics-listen` asked for one, and the dashboard's feed when `--dashboard` did. The panel
/// and the endpoint watch the first run of several at once; the dashboard watches every run,
/// each under its result's label.
#[derive(Default)]
pub struct TerminalSinks {
    pub metrics: Option<std::net::TcpListener>,
    pub dashboard: Option<sojourn::dashboard::Feeder>,
}

impl TerminalSinks {
    /// The terminal's sinks, with the page's feed when there is a page (every run of the
    /// command feeds it).
    pub fn feeding(page: Option<&sojourn::dashboard::Page>) -> TerminalSinks {
        TerminalSinks {
            metrics: None,
            dashboard: page.map(|p| p.feeder()),
        }
    }
}

impl Sinks for TerminalSinks {
    fn live(&self) -> bool {
        self.metrics.is_some() || self.dashboard.is_some() || crate::progress::interactive()
    }

    fn make(
        &mut self,
        plan: &Plan,
        progress: &Arc<Progress>,
    ) -> anyhow::Result<Vec<Box<dyn Watcher>>> {
        self.make_run(plan, progress, "", true)
    }

    fn make_run(
        &mut self,
        plan: &Plan,
        progress: &Arc<Progress>,
        label: &str,
        first: bool,
    ) -> anyhow::Result<Vec<Box<dyn Watcher>>> {
        let watched = Watched::new(plan, progress.clone());
        let mut sinks: Vec<Box<dyn Watcher>> = Vec::new();
        // Cloned, not taken: a sweep's every step, and each loop of a compare, feeds the page.
        if let Some(feeder) = &self.dashboard {
            sinks.push(Box::new(feeder.feed_run(watched.clone(), label)));
        }
        if !first {
            return Ok(sinks);
        }
        if let Some(listener) = self.metrics.take() {
            let server = sojourn::metrics::MetricsServer::start(listener, watched.clone())?;
            sinks.push(Box::new(server));
        }
        let panel = Panel::new(watched, || {
            crate::progress::Bar::new(plan, progress.clone())
        });
        sinks.insert(0, Box::new(panel));
        Ok(sinks)
    }
}

impl Watcher for Panel {
    fn update(&mut self) {
        Panel::update(self);
    }

    fn interrupted(&mut self, how: Interruption) {
        match how {
            Interruption::CtrlC => {
                // The panel goes first, so the terminal is itself again for the message and
                // the summary while the last answers drain.
                Panel::finish(self);
                eprintln!("\ninterrupted: stopping the schedule and reporting what was gathered");
            }
            Interruption::Terminated => eprintln!(
                "\nterminated (SIGTERM): stopping the schedule and reporting what was gathered"
            ),
        }
    }

    fn finish(&mut self) {
        Panel::finish(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stall_shows_its_age_and_how_few_answers_the_figures_rest_on() {
        assert_eq!(
            figures(&sojourn::live::fixtures::stalled_view()),
            [
                "rate target 1000/s  achieved 1/s (n=1)  in flight 391",
                "oldest in flight: 4.400 s",
                "sent 10391  answered 10000  errors 2 (timeout 1, io 1)",
                "last 1.000 s: p50 10.20 ms (n=1)  p99 10.20 ms (n=1)  send lag p99 52.0 µs (n=1)",
            ]
        );
    }

    #[test]
    fn nothing_in_flight_nothing_finished_and_nothing_sent_each_say_so() {
        let mut v = sojourn::live::fixtures::stalled_view();
        v.counters.oldest_in_flight = None;
        assert_eq!(figures(&v)[1], "oldest in flight: none");
        let last = v.last.as_mut().unwrap();
        last.sent_answers = 0;
        assert!(
            figures(&v)[3].ends_with("(n=1)  send lag: none sent"),
            "{}",
            figures(&v)[3]
        );
        v.last.as_mut().unwrap().answers = 0;
        assert_eq!(figures(&v)[3], "last 1.000 s: nothing finished");
        v.last = None;
        let f = figures(&v);
        assert!(f[0].contains("achieved -  "), "{}", f[0]);
        assert_eq!(f[3], "last interval: not yet complete");
    }

    #[test]
    fn a_journey_run_has_a_row_per_step_and_per_journey() {
        let v = sojourn::live::fixtures::journey_view();
        let rows = table(v.labels.as_ref().unwrap());
        assert_eq!(
            rows,
            [
                "step / journey                    completed  failed  in flight        p50        p99",
                "shop/log \"in\" \\ now                      45       0          2   10.00 ms    4.400 s",
                "shop/pay                                 40       2          3   12.00 ms  900.00 ms",
                "shop/leave                                0       0          0          -          -",
                "journey shop                             38       2          5    1.250 s    4.400 s",
            ]
        );
    }

    /// A file of many steps: the first that fit, its journeys, and how many are not shown;
    /// a long name is cut to its column.
    #[test]
    fn many_steps_are_cut_to_the_panel_and_say_how_many_are_hidden() {
        let one = sojourn::live::fixtures::journey_view().labels.unwrap();
        let step = |i: usize| LabelSnapshot {
            name: format!("checkout/step-{i}"),
            ..one.steps[1].clone()
        };
        let journey = |i: usize| LabelSnapshot {
            name: format!("journey-{i}"),
            ..one.journeys[0].clone()
        };
        let mut many = LabelsSnapshot {
            steps: (0..30).map(step).collect(),
            journeys: (0..3).map(journey).collect(),
            targets: Vec::new(),
        };
        // A targets file's labels take the steps' place, under their own title.
        let labels = LabelsSnapshot {
            targets: (0..12).map(step).collect(),
            steps: Vec::new(),
            journeys: Vec::new(),
        };
        let rows = table(&labels);
        assert!(rows[0].starts_with("target label "), "{rows:#?}");
        assert_eq!(rows[10], "… 3 labels more, not shown", "{rows:#?}");
        let rows = table(&many);
        assert_eq!(rows.len(), 1 + MAX_ROWS, "{rows:#?}");
        assert!(rows[6].starts_with("checkout/step-5 "), "{rows:#?}");
        assert!(rows[7].starts_with("journey journey-0 "), "{rows:#?}");
        assert_eq!(rows[10], "… 24 steps more, not shown");
        many.journeys = (0..8).map(journey).collect();
        let rows = table(&many);
        assert_eq!(rows.len(), 1 + MAX_ROWS);
        assert_eq!(rows[10], "… 25 steps and 4 journeys more, not shown");
        many.steps.truncate(6);
        many.journeys.truncate(4);
        assert_eq!(table(&many).len(), 11, "ten rows fit whole");
        many.steps[0].name = "a".repeat(60);
        let cut = &table(&many)[1];
        assert!(
            cut.starts_with(&format!("{}… ", "a".repeat(NAME - 2))),
            "{cut}"
        );
        for line in table(&many) {
            assert!(line.chars().count() <= 98, "{line}");
        }
    }

    /// The whole panel fits a 100-column terminal: no figure is cut off.
    #[test]
    fn every_line_fits_the_panel_in_a_hundred_columns() {
        for line in figures(&sojourn::live::fixtures::stalled_view()) {
            assert!(line.chars().count() <= 98, "{line}");
        }
    }
}

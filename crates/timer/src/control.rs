//! The control meter: a hiccup meter in a process of its own that does nothing else (jHiccup's
//! `-c` control process).
//!
//! A meter thread inside a generator shares the generator's cores, its scheduler group and its
//! CPU limits: a generator that burns its CPU makes its own meter late, and that inflated floor
//! would then excuse the generator's lateness as "the machine's". An idle child process, kept
//! off the generator's cores when there is a free one, measures the platform instead: only it
//! may speak for the machine.
//!
//! The parent starts the child with a [`ControlCommand`] (for the `sojourn` binary, itself with
//! a hidden subcommand that calls [`serve`]); the child ticks until its stdin closes (or it gets
//! SIGTERM) and then writes one line, [`LINE_PREFIX`] followed by its tick, the CPUs it ran on
//! and its histogram (HdrHistogram V2, deflated, base64). Closing stdin also ends a child whose
//! parent died, so a control meter never outlives its run.
//!
//! While it runs, the child also writes a [`PERIOD_PREFIX`] line every [`REPORT_EVERY`]: that
//! period's ticks, their p99 and max (ns), and its histogram. The parent reads them on its own
//! reader thread (never a worker's) into a [`FloorWatch`], so that a live view can show the
//! machine's floor as it forms; the final line alone still makes the run's figures.
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::hiccup::{HiccupMeter, Oversleeps};

/// The mark that starts the control meter's figures; anything else it (or a test harness around
/// it) prints, before them on the same line or on other lines, is ignored.
pub const LINE_PREFIX: &str = "sojourn-control-hiccups/1";

/// The mark that starts one period's figures, written while the meter runs. A parent that
/// knows only [`LINE_PREFIX`] skips these lines, and a child that writes none leaves this
/// parent's [`FloorWatch`] empty: either side may be the older.
pub const PERIOD_PREFIX: &str = "sojourn-control-period/1";

/// How often a control meter reports while it runs.
pub const REPORT_EVERY: Duration = Duration::from_secs(1);

/// How long a stopped control meter has to hand over its histogram: it needs one tick to notice
/// and a few milliseconds to write. A child that takes longer is killed and its figures lost.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);

/// How to start a control meter: a program, its arguments and environment, whose process calls
/// [`serve`] with its stdin and stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// Variables set for the child on top of the parent's environment.
    pub env: Vec<(OsString, OsString)>,
}

/// Why a control meter has no figures.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// The child process could not be started: check that the program exists and is
    /// executable.
    #[error("could not start the control meter {program}: {source}")]
    Spawn { program: String, source: io::Error },
    /// The child ended (or was killed after waiting) without its line of figures; its stderr
    /// usually says why.
    #[error("the control meter gave no figures ({0})")]
    NoAnswer(String),
    /// The line was there but its histogram did not decode: a different build of the program
    /// answered.
    #[error("the control meter's histogram did not decode: {0}")]
    Damaged(String),
}

/// What the control meter measured.
#[derive(Debug, Clone)]
pub struct ControlReport {
    pub oversleeps: Oversleeps,
    /// The CPUs the control process was allowed to run on (after moving off the generator's),
    /// as a list like `0,2-3`; empty if unknown.
    pub cpus: String,
}

/// A running control meter. [`ControlMeter::stop`] ends it and hands back what it measured.
pub struct ControlMeter {
    child: Child,
    stdin: Option<ChildStdin>,
    answer: mpsc::Receiver<io::Result<String>>,
    reader: JoinHandle<()>,
    floor: FloorWatch,
}

/// A control meter's figures over some span: its ticks, and how late they were (the floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorFigures {
    pub ticks: u64,
    pub p99: Duration,
    pub max: Duration,
}

impl FloorFigures {
    fn of(h: &Histogram<u64>) -> FloorFigures {
        FloorFigures {
            ticks: h.len(),
            p99: Duration::from_nanos(h.value_at_quantile(0.99)),
            max: Duration::from_nanos(h.max()),
        }
    }
}

/// The floor as it stands while the run goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloorSnapshot {
    /// The last period the meter reported.
    pub period: FloorFigures,
    /// Every period reported so far, together.
    pub so_far: FloorFigures,
    /// How many periods that is.
    pub periods: u64,
}

/// What a running control meter has reported so far, for whoever watches the run. Cheap to
/// clone; empty until the first period's line (and always, for a child that writes none).
#[derive(Debug, Clone, Default)]
pub struct FloorWatch(Arc<Mutex<Option<Reported>>>);

#[derive(Debug)]
struct Reported {
    last: Histogram<u64>,
    so_far: Histogram<u64>,
    periods: u64,
}

impl FloorWatch {
    /// The floor so far; `None` before the meter's first period.
    pub fn snapshot(&self) -> Option<FloorSnapshot> {
        let r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        r.as_ref().map(|r| FloorSnapshot {
            period: FloorFigures::of(&r.last),
            so_far: FloorFigures::of(&r.so_far),
            periods: r.periods,
        })
    }

    fn add(&self, period: Histogram<u64>) {
        let mut r = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let r = r.get_or_insert_with(|| Reported {
            // Grows to fit: a decoded histogram keeps the range it was sent with, and a later
            // period may be later than any before it.
            so_far: Histogram::new(3).expect("3 significant digits is a valid precision"),
            last: period.clone(),
            periods: 0,
        });
        // Cannot fail: the sum has the same precision, and it resizes.
        let _ = r.so_far.add(&period);
        r.last = period;
        r.periods += 1;
    }
}

impl ControlMeter {
    /// Starts the child. It begins ticking once it has started up, a few milliseconds later.
    pub fn start(command: &ControlCommand) -> Result<ControlMeter, ControlError> {
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // Its own process group: a Ctrl-C at the terminal interrupts the run, which then
            // stops the meter in order, rather than killing the meter before it has answered.
            .process_group(0)
            .spawn()
            .map_err(|source| ControlError::Spawn {
                program: command.program.display().to_string(),
                source,
            })?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout was piped");
        let (tx, answer) = mpsc::channel();
        let floor = FloorWatch::default();
        let watch = floor.clone();
        let reader = std::thread::Builder::new()
            .name("sojourn-control-reader".into())
            .spawn(move || {
                let _ = tx.send(answer_line(stdout, &watch));
            })
            .map_err(|source| ControlError::Spawn {
                program: command.program.display().to_string(),
                source,
            })?;
        Ok(ControlMeter {
            child,
            stdin,
            answer,
            reader,
            floor,
        })
    }

    /// The floor as the meter reports it while it runs.
    pub fn floor(&self) -> FloorWatch {
        self.floor.clone()
    }

    /// Asks the child for its figures (by closing its stdin) and waits for them.
    pub fn stop(mut self) -> Result<ControlReport, ControlError> {
        drop(self.stdin.take());
        let line = self.answer.recv_timeout(ANSWER_WITHIN);
        if line.is_err() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
        let _ = self.reader.join();
        match line {
            Ok(Ok(line)) => parse_line(&line),
            Ok(Err(e)) => Err(ControlError::NoAnswer(e.to_string())),
            Err(_) => Err(ControlError::NoAnswer(format!(
                "no answer within {ANSWER_WITHIN:?}; killed"
            ))),
        }
    }
}

/// The figures line from the child's stdout, read to its end (so that whatever the child writes
/// after it finds a reader, not a broken pipe). Period lines on the way go to `floor`.
fn answer_line(stdout: impl Read, floor: &FloorWatch) -> io::Result<String> {
    let mut found = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        if let Some(at) = line.find(PERIOD_PREFIX) {
            // A damaged period costs the watchers one update; the final line still counts.
            if let Ok(h) = parse_period(&line[at + PERIOD_PREFIX.len()..]) {
                floor.add(h);
            }
        }
        if let (None, Some(at)) = (&found, line.find(LINE_PREFIX)) {
            found = Some(line[at + LINE_PREFIX.len()..].trim().to_string());
        }
    }
    found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "it exited without writing them",
        )
    })
}

/// `TICK_NS CPUS HISTOGRAM`, as [`serve`] writes it.
fn parse_line(line: &str) -> Result<ControlReport, ControlError> {
    let damaged = |what: &str| ControlError::Damaged(format!("{what} in {line:?}"));
    let mut words = line.split_whitespace();
    let tick: u64 = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| damaged("no tick"))?;
    let cpus = words.next().ok_or_else(|| damaged("no CPU list"))?;
    let hdr = words.next().ok_or_else(|| damaged("no histogram"))?;
    let histogram = decode(hdr).map_err(|e| damaged(&e))?;
    Ok(ControlReport {
        oversleeps: Oversleeps {
            histogram,
            period: Duration::from_nanos(tick),
        },
        cpus: if cpus == "-" {
            String::new()
        } else {
            cpus.into()
        },
    })
}

/// The control process's whole life: move off the parent's CPUs if another is free, tick every
/// `period` until stdin closes or SIGTERM comes, writing a [`PERIOD_PREFIX`] line every
/// [`REPORT_EVERY`], then write the figures line to `out`.
pub fn serve(period: Duration, out: &mut impl Write) -> io::Result<()> {
    serve_reporting(period, REPORT_EVERY, out)
}

/// [`serve`], with a period line every `every`.
pub fn serve_reporting(period: Duration, every: Duration, out: &mut impl Write) -> io::Result<()> {
    let cpus = crate::affinity::leave_parents_cpus();
    let (tx, news) = mpsc::channel::<Option<Histogram<u64>>>();
    let (periods, recent) = mpsc::channel();
    let meter = HiccupMeter::start_reporting(period, Some((every, periods)))
        .ok_or_else(|| io::Error::other("the kernel refused a timerfd or a thread"))?;
    // The meter's periods join the stop signals on one channel, so this thread sleeps until
    // either comes.
    let forward = tx.clone();
    std::thread::Builder::new()
        .name("sojourn-control-periods".into())
        .spawn(move || {
            while let Ok(h) = recent.recv() {
                if forward.send(Some(h)).is_err() {
                    break;
                }
            }
        })?;
    watch_for_stop(tx)?;
    while let Ok(Some(h)) = news.recv() {
        writeln!(out, "{}", period_line(period, &h))?;
        out.flush()?;
    }
    let found = meter.stop();
    let cpus = if cpus.is_empty() { "-".into() } else { cpus };
    writeln!(
        out,
        "{LINE_PREFIX} {} {cpus} {}",
        found.period.as_nanos(),
        encode(&found.histogram)?
    )?;
    out.flush()
}

fn encode(h: &Histogram<u64>) -> io::Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

fn decode(text: &str) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| e.to_string())?;
    Deserializer::new()
        .deserialize(&mut io::Cursor::new(bytes))
        .map_err(|e| format!("{e:?}"))
}

/// `PERIOD_PREFIX TICK_NS COUNT P99_NS MAX_NS HISTOGRAM`: the figures in plain numbers for a
/// person reading the pipe, the histogram for a parent that adds the periods up.
fn period_line(tick: Duration, h: &Histogram<u64>) -> String {
    // Encoding into memory fails only on a histogram the meter could not have made.
    let hdr = encode(h).unwrap_or_else(|_| "-".into());
    format!(
        "{PERIOD_PREFIX} {} {} {} {} {hdr}",
        tick.as_nanos(),
        h.len(),
        h.value_at_quantile(0.99),
        h.max()
    )
}

/// One period's ticks, from a [`period_line`] (without its prefix).
fn parse_period(line: &str) -> Result<Histogram<u64>, ControlError> {
    let damaged = |what: &str| ControlError::Damaged(format!("{what} in {line:?}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let [tick, count, p99, max, hdr] = words[..] else {
        return Err(damaged("not five words"));
    };
    let number = |name: &str, word: &str| {
        word.parse::<u64>()
            .map_err(|_| damaged(&format!("no {name}")))
    };
    let (_, count, _, max) = (
        number("tick", tick)?,
        number("count", count)?,
        number("p99", p99)?,
        number("max", max)?,
    );
    let h = decode(hdr).map_err(|e| damaged(&e))?;
    // The plain figures must say what the histogram holds, or one of them is not this meter's.
    if count != h.len() || max != h.max() {
        return Err(damaged("figures that disagree with the histogram"));
    }
    Ok(h)
}

/// Sends `None` on `tx` when stdin reaches its end (the parent closed it, or died) or SIGTERM
/// arrives.
fn watch_for_stop(tx: mpsc::Sender<Option<Histogram<u64>>>) -> io::Result<()> {
    let eof = tx.clone();
    std::thread::Builder::new()
        .name("sojourn-control-stdin".into())
        .spawn(move || {
            let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            let _ = eof.send(None);
        })?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let mut term = {
        let _inside = runtime.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?
    };
    std::thread::Builder::new()
        .name("sojourn-control-signal".into())
        .spawn(move || {
            runtime.block_on(term.recv());
            let _ = tx.send(None);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figures_line_round_trips_and_damage_is_named() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(20_000, 990).unwrap();
        h.record_n(2_000_000, 10).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new()
            .serialize(&h, &mut bytes)
            .unwrap();
        let hdr = base64::engine::general_purpose::STANDARD.encode(bytes);
        let chatter =
            format!("\nrunning 1 test\ntest child ... {LINE_PREFIX} 1000000 0,2-3 {hdr}\nok\n");
        let line = answer_line(chatter.as_bytes(), &FloorWatch::default()).unwrap();
        let r = parse_line(&line).unwrap();
        assert_eq!(r.oversleeps.period, Duration::from_millis(1));
        assert_eq!(r.cpus, "0,2-3");
        assert_eq!(r.oversleeps.histogram.len(), 1000);
        assert!(r
            .oversleeps
            .histogram
            .equivalent(r.oversleeps.histogram.max(), 2_000_000));
        assert!(answer_line(&b"no figures here\n"[..], &FloorWatch::default()).is_err());
        for bad in [
            "",
            "1000000",
            "x - AAAA",
            "1000000 - not-base64!",
            "1000000 - AAAA",
        ] {
            assert!(
                matches!(parse_line(bad), Err(ControlError::Damaged(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_program_that_is_not_there_is_named() {
        let cmd = ControlCommand {
            program: "/no/such/sojourn-control".into(),
            args: vec![],
            env: vec![],
        };
        let e = ControlMeter::start(&cmd).err().expect("no such program");
        assert!(e.to_string().contains("/no/such/sojourn-control"), "{e}");
    }

    /// A child that exits without a word is an answer of "no figures", promptly.
    #[test]
    fn a_silent_child_gives_no_figures() {
        let cmd = ControlCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "read _; echo bye".into()],
            env: vec![],
        };
        let meter = ControlMeter::start(&cmd).unwrap();
        let started = std::time::Instant::now();
        let e = meter.stop().expect_err("no figures");
        assert!(matches!(e, ControlError::NoAnswer(_)), "{e}");
        assert!(started.elapsed() < ANSWER_WITHIN, "{:?}", started.elapsed());
    }

    fn ticks(fast: u64, slow: u64, slow_ns: u64) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        h.record_n(20_000, fast).unwrap();
        h.record_n(slow_ns, slow).unwrap();
        h
    }

    /// A period line says its figures in plain numbers and carries the histogram they come
    /// from; a line whose numbers and histogram disagree, or that lacks a word, is damaged.
    #[test]
    fn a_period_line_round_trips_and_damage_is_named() {
        let h = ticks(980, 20, 3_000_000);
        let line = period_line(Duration::from_millis(1), &h);
        let rest = line.strip_prefix(PERIOD_PREFIX).expect("the prefix first");
        let words: Vec<&str> = rest.split_whitespace().collect();
        let (p99, max) = (h.value_at_quantile(0.99), h.max());
        assert_eq!(
            words[..4],
            ["1000000", "1000", &p99.to_string(), &max.to_string()]
        );
        assert!(h.equivalent(p99, 3_000_000), "{p99}");
        assert_eq!(parse_period(rest).unwrap(), h);
        let hdr = words[4];
        for bad in [
            String::new(),
            format!("1000000 1000 {p99} {max}"),
            format!("1000000 999 {p99} {max} {hdr}"),
            format!("1000000 1000 {p99} 5 {hdr}"),
            format!("1000000 x {p99} {max} {hdr}"),
            "1000000 1000 20000 3000000 not-base64!".to_string(),
        ] {
            assert!(
                matches!(parse_period(&bad), Err(ControlError::Damaged(_))),
                "{bad:?}"
            );
        }
        // The two prefixes never mistake one line for the other.
        assert!(!PERIOD_PREFIX.contains(LINE_PREFIX) && !LINE_PREFIX.contains(PERIOD_PREFIX));
    }

    /// A child (a shell script) that reports two periods, then waits for its stdin to close
    /// and answers: the parent's reader keeps the last period and the two together, and
    /// `stop` still returns the final line's figures, not the periods'.
    #[test]
    fn the_parent_keeps_the_floor_a_child_reports_while_it_runs() {
        let (first, second) = (ticks(999, 1, 500_000), ticks(980, 20, 7_000_000));
        let tick = Duration::from_millis(1);
        let whole = ticks(5_000, 2, 9_000_000);
        let last = format!("{LINE_PREFIX} 1000000 - {}", encode(&whole).unwrap());
        let cmd = ControlCommand {
            program: "/bin/sh".into(),
            args: vec![
                "-c".into(),
                r#"echo "noise"; echo "$P1"; echo "$P2"; read _; echo "$LAST""#.into(),
            ],
            env: vec![
                ("P1".into(), period_line(tick, &first).into()),
                ("P2".into(), period_line(tick, &second).into()),
                ("LAST".into(), last.into()),
            ],
        };
        let meter = ControlMeter::start(&cmd).unwrap();
        let floor = meter.floor();
        let started = std::time::Instant::now();
        let seen = loop {
            match floor.snapshot() {
                Some(s) if s.periods == 2 => break s,
                _ if started.elapsed() > ANSWER_WITHIN => panic!("{:?}", floor.snapshot()),
                _ => std::thread::sleep(Duration::from_millis(5)),
            }
        };
        assert_eq!(seen.period, FloorFigures::of(&second), "the last period");
        assert_eq!(seen.so_far.ticks, 2_000);
        assert!(seen.period.max >= Duration::from_millis(7));
        // Half the ticks were calmer: 21 slow ticks of 2,000 put p99 among the fast ones.
        assert!(seen.so_far.p99 < seen.period.p99, "{seen:?}");
        assert_eq!(seen.so_far.max, seen.period.max);
        let report = meter.stop().unwrap();
        assert_eq!(
            report.oversleeps.histogram, whole,
            "the final line, as before"
        );
    }

    /// A child that writes only the final line (an older build) is answered as before, and
    /// its watchers see no floor rather than a made-up one.
    #[test]
    fn a_child_without_period_lines_still_answers() {
        let whole = ticks(100, 1, 2_000_000);
        let cmd = ControlCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), r#"read _; echo "$LAST""#.into()],
            env: vec![(
                "LAST".into(),
                format!("{LINE_PREFIX} 1000000 0 {}", encode(&whole).unwrap()).into(),
            )],
        };
        let meter = ControlMeter::start(&cmd).unwrap();
        let floor = meter.floor();
        let report = meter.stop().unwrap();
        assert_eq!(report.oversleeps.histogram.len(), 101);
        assert_eq!(floor.snapshot(), None);
    }
}

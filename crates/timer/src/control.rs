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
use std::ffi::OsString;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::hiccup::{HiccupMeter, Oversleeps};

/// The mark that starts the control meter's figures; anything else it (or a test harness around
/// it) prints, before them on the same line or on other lines, is ignored.
pub const LINE_PREFIX: &str = "sojourn-control-hiccups/1";

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
        let reader = std::thread::Builder::new()
            .name("sojourn-control-reader".into())
            .spawn(move || {
                let _ = tx.send(answer_line(stdout));
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
        })
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
/// after it finds a reader, not a broken pipe).
fn answer_line(stdout: impl Read) -> io::Result<String> {
    let mut found = None;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
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
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(hdr)
        .map_err(|e| damaged(&e.to_string()))?;
    let histogram: Histogram<u64> = Deserializer::new()
        .deserialize(&mut io::Cursor::new(bytes))
        .map_err(|e| damaged(&format!("{e:?}")))?;
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
/// `period` until stdin closes or SIGTERM comes, then write the figures line to `out`.
pub fn serve(period: Duration, out: &mut impl Write) -> io::Result<()> {
    let cpus = crate::affinity::leave_parents_cpus();
    let meter = HiccupMeter::start(period)
        .ok_or_else(|| io::Error::other("the kernel refused a timerfd or a thread"))?;
    wait_for_stop()?;
    let found = meter.stop();
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&found.histogram, &mut bytes)
        .map_err(|e| io::Error::other(format!("{e:?}")))?;
    let hdr = base64::engine::general_purpose::STANDARD.encode(bytes);
    let cpus = if cpus.is_empty() { "-".into() } else { cpus };
    writeln!(
        out,
        "{LINE_PREFIX} {} {cpus} {hdr}",
        found.period.as_nanos()
    )?;
    out.flush()
}

/// Blocks until stdin reaches its end (the parent closed it, or died) or SIGTERM arrives.
fn wait_for_stop() -> io::Result<()> {
    let (tx, stopped) = mpsc::channel::<()>();
    let eof = tx.clone();
    std::thread::Builder::new()
        .name("sojourn-control-stdin".into())
        .spawn(move || {
            let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            let _ = eof.send(());
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
            let _ = tx.send(());
        })?;
    let _ = stopped.recv();
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
        let line = answer_line(chatter.as_bytes()).unwrap();
        let r = parse_line(&line).unwrap();
        assert_eq!(r.oversleeps.period, Duration::from_millis(1));
        assert_eq!(r.cpus, "0,2-3");
        assert_eq!(r.oversleeps.histogram.len(), 1000);
        assert!(r
            .oversleeps
            .histogram
            .equivalent(r.oversleeps.histogram.max(), 2_000_000));
        assert!(answer_line(&b"no figures here\n"[..]).is_err());
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
}

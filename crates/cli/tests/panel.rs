//! The live panel as a person sees it: `sojourn run` in a real terminal (a detached tmux
//! session of fixed size, on a tmux server of this test's own), its screen read with
//! `capture-pane` while the target stalls, and Ctrl-C typed into it.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{listening_addr, serial, temp_dir};

/// This test's own tmux server (`tmux -L`), killed when the test lets go of it.
struct Tmux {
    tmux: PathBuf,
    socket: String,
}

impl Tmux {
    fn new(tmux: PathBuf, name: &str) -> Tmux {
        let socket = format!("sojourn-{name}-{}", std::process::id());
        Tmux { tmux, socket }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.tmux)
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .expect("running tmux")
    }

    /// A detached 100×24 session running `command` (then holding the pane open).
    fn start(&self, command: &str) {
        let hold = format!("{command}; sleep 60");
        let out = self.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "100",
            "-y",
            "24",
            &hold,
        ]);
        assert!(out.status.success(), "tmux: {:?}", out);
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "t"]).stdout).into()
    }

    /// The screen and what scrolled off it.
    fn history(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-S", "-", "-t", "t"]);
        String::from_utf8_lossy(&out.stdout).into()
    }

    fn cursor_visible(&self) -> bool {
        let out = self.run(&["display-message", "-p", "-t", "t", "#{cursor_flag}"]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tmux() -> Option<PathBuf> {
    let found = sojourn_testkit::on_path("tmux");
    if found.is_none() {
        sojourn_testkit::skip("live panel: `tmux` is not on PATH");
    }
    found
}

/// `sojourn serve --scenario spike` with its stall `at` after the first request, for `stall`.
fn spike(at: &str, stall: &str) -> (Killed, String) {
    let mut server = Killed(
        Command::new(env!("CARGO_BIN_EXE_sojourn"))
            .args(["serve", "--scenario", "spike", "--listen", "127.0.0.1:0"])
            .args(["--set", &format!("spike.at={at}")])
            .args(["--set", &format!("spike.duration={stall}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let addr = listening_addr(&mut server.0);
    (server, format!("http://{addr}/api"))
}

fn run_command(url: &str, duration: &str) -> String {
    format!(
        "{} run {url} --rate 100 --duration {duration} --interval 250ms",
        Path::new(env!("CARGO_BIN_EXE_sojourn")).display()
    )
}

/// Screens captured every 100 ms until `done` is on one of them or `within` has passed.
fn watch(t: &Tmux, within: Duration, done: &str) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut screens = Vec::new();
    while Instant::now() < deadline {
        let screen = t.screen();
        let finished = screen.contains(done);
        screens.push(screen);
        if finished {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    screens
}

/// The number after `label` on the first line that has it.
fn number_after(screen: &str, label: &str) -> Option<f64> {
    let rest = &screen[screen.find(label)? + label.len()..];
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits.parse().ok()
}

#[test]
fn the_panel_shows_the_run_and_its_stall_then_gives_way_to_the_summary() {
    let Some(tmux) = tmux() else { return };
    let _guard = serial();
    // A 1 s stall 1.5 s into a 4 s run at 100 req/s, in 250 ms intervals.
    let (_server, url) = spike("1500ms", "1s");
    let t = Tmux::new(tmux, "panel");
    t.start(&run_command(&url, "4s"));
    let screens = watch(&t, Duration::from_secs(30), "generator");
    let last = screens.last().unwrap();
    let panels: Vec<&String> = screens
        .iter()
        .filter(|s| s.contains("sojourn open"))
        .collect();
    assert!(panels.len() >= 10, "the panel was drawn: {screens:#?}");

    let first = panels
        .iter()
        .find(|s| s.contains("p50"))
        .expect("a complete interval");
    for field in [
        "of 4.0 s",
        "target 100/s",
        "achieved ",
        "in flight ",
        "errors 0",
        "p50 ",
        "p99 ",
        "send lag p99",
        "(n=",
        "oldest in flight: ",
    ] {
        assert!(first.contains(field), "no {field:?} on\n{first}");
    }
    let peak_in_flight = panels
        .iter()
        .filter_map(|s| number_after(s, "in flight"))
        .fold(0.0, f64::max);
    assert!(
        peak_in_flight >= 50.0,
        "in flight rose in the stall: {peak_in_flight}"
    );
    // The stall seen live: the oldest request in flight ages with it, to most of its second.
    let oldest = panels
        .iter()
        .filter_map(|s| oldest_in_flight(s))
        .fold(0.0, f64::max);
    assert!(
        (0.6..1.5).contains(&oldest),
        "the oldest in flight aged through the 1 s stall: {oldest} s"
    );

    // After the stall the sparkline's tallest bar is the stall's p99, about a second, with
    // the intervals before it far below (blank at this scale).
    let after = panels
        .iter()
        .rev()
        .find(|s| s.contains("top 1."))
        .unwrap_or_else(|| panic!("no second-long p99 on the sparkline: {panels:#?}"));
    let bars = sparkline_row(after);
    let tallest = bars.find('█').expect("a full bar for the stall");
    assert!(
        tallest >= 4,
        "intervals before the stall come first: {bars:?}"
    );
    assert!(
        bars[..tallest].chars().all(|c| c == ' '),
        "the intervals before the stall are low: {bars:?}"
    );

    assert!(
        !last.contains("sojourn open"),
        "the panel is cleared:\n{last}"
    );
    assert!(last.contains("generator"), "the summary follows:\n{last}");
    assert!(t.cursor_visible(), "the cursor is shown again");
}

/// The age on the panel's `oldest in flight: 812.34 ms` line, in seconds.
fn oldest_in_flight(screen: &str) -> Option<f64> {
    let label = "oldest in flight:";
    let value = number_after(screen, label)?;
    let rest = &screen[screen.find(label)? + label.len()..];
    let unit = rest.split_whitespace().nth(1)?;
    let scale = match unit.trim_end_matches('│') {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" => 1e-6,
        "ns" => 1e-9,
        _ => return None,
    };
    Some(value * scale)
}

/// The sparkline's lower row: what follows the `top …` label inside the border.
fn sparkline_row(screen: &str) -> String {
    let line = screen
        .lines()
        .find(|l| l.contains("top "))
        .expect("the sparkline's label");
    let inside = line
        .trim_start_matches('│')
        .trim_end()
        .trim_end_matches('│');
    // The label column is 14 wide.
    inside.chars().skip(14).collect()
}

#[test]
fn ctrl_c_clears_the_panel_restores_the_cursor_and_still_reports() {
    let Some(tmux) = tmux() else { return };
    let _guard = serial();
    let (_server, url) = spike("60s", "1s");
    let t = Tmux::new(tmux, "ctrl-c");
    t.start(&run_command(&url, "60s"));
    let drawn = watch(&t, Duration::from_secs(20), "p50");
    assert!(
        drawn.last().unwrap().contains("sojourn open"),
        "the panel is up: {drawn:#?}"
    );
    assert!(t.run(&["send-keys", "-t", "t", "C-c"]).status.success());
    let screens = watch(&t, Duration::from_secs(20), "generator");
    let last = screens.last().unwrap();
    let history = t.history();
    assert!(history.contains("interrupted: stopping"), "{history}");
    assert!(
        last.contains("generator"),
        "the summary is printed:\n{last}"
    );
    assert!(
        !last.contains("sojourn open"),
        "the panel is cleared:\n{last}"
    );
    assert!(t.cursor_visible(), "the cursor is shown again");
}

/// A journey run's panel: under the figures, a header and one row per step label and per
/// journey, their completed counts rising as the run goes; cleared for the summary.
#[test]
fn a_journey_run_shows_a_row_per_step_and_per_journey() {
    let Some(tmux) = tmux() else { return };
    let _guard = serial();
    let (_server, url) = spike("60s", "1s");
    let origin = url.trim_end_matches("/api");
    let dir = temp_dir("panel-journeys");
    let file = dir.join("shop.toml");
    let step = |name: &str| {
        format!("  [[journey.step]]\n  name = \"{name}\"\n  url = \"/api?{name}\"\n  think = \"50ms\"\n")
    };
    std::fs::write(
        &file,
        format!(
            "base_url = \"{origin}\"\n\n[[journey]]\nname = \"shop\"\n{}{}{}\n[[journey]]\nname = \"peek\"\n{}",
            step("login"),
            step("list"),
            step("open"),
            step("look"),
        ),
    )
    .unwrap();
    let t = Tmux::new(tmux, "journeys");
    t.start(&format!(
        "{} run --journey {} --rate 20 --duration 3s --interval 250ms",
        Path::new(env!("CARGO_BIN_EXE_sojourn")).display(),
        file.display()
    ));
    let screens = watch(&t, Duration::from_secs(30), "generator");
    let panels: Vec<&String> = screens
        .iter()
        .filter(|s| s.contains("step / journey"))
        .collect();
    assert!(panels.len() >= 5, "the table was drawn: {screens:#?}");
    let rows = [
        "shop/login",
        "shop/list",
        "shop/open",
        "peek/look",
        "journey shop",
        "journey peek",
    ];
    let latest = panels.last().unwrap();
    for header in ["completed", "failed", "in flight", "p50", "p99"] {
        assert!(latest.contains(header), "no {header:?} on\n{latest}");
    }
    for row in rows {
        let lines: Vec<&str> = latest
            .lines()
            .filter(|l| l.contains(&format!("{row} ")))
            .collect();
        assert_eq!(lines.len(), 1, "one row for {row:?} on\n{latest}");
        assert!(
            lines[0].contains(" ms"),
            "{row:?} has its p50 and p99 so far: {}",
            lines[0]
        );
    }
    // The rows count as the run goes: the login row's completed count rises.
    let logins: Vec<f64> = panels
        .iter()
        .filter_map(|s| number_after(s, "shop/login"))
        .collect();
    assert!(
        logins.first() < logins.last() && *logins.last().unwrap() >= 20.0,
        "login rows: {logins:?}"
    );
    let last = screens.last().unwrap();
    assert!(
        !last.contains("step / journey"),
        "the panel is cleared:\n{last}"
    );
    assert!(last.contains("generator"), "the summary follows:\n{last}");
}

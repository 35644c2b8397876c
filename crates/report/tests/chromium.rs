//! The HTML report in a real browser: headless Chromium renders the checked-in hiccup results
//! (open and closed loop), and the page must have its charts, no console errors, and a
//! screenshot that is not blank.
//!
//! Chromium is `$SOJOURN_CHROMIUM`, or `chromium` on PATH. Without it the test fails under
//! CI=true (.ci/run installs it) and is skipped with a line on stdout elsewhere. Set
//! $SOJOURN_SCREENSHOT_DIR to keep the report and its screenshot.
mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sojourn_report::html::{render, HtmlOptions, ReportRun};

/// Writes the checked-in fixtures again. Run after a change to the result format:
/// `cargo test -p sojourn-report --test chromium -- --ignored regenerate`.
#[test]
#[ignore]
fn regenerate_fixtures() {
    use sojourn_report::samples::{SampleFormat, SampleWriter, Sampling};
    for (name, (result, samples)) in [
        ("hiccup-open", common::open_run()),
        ("hiccup-closed", common::closed_run()),
    ] {
        let dir = common::fixtures();
        std::fs::write(
            dir.join(format!("{name}.json")),
            serde_json::to_string_pretty(&result).unwrap(),
        )
        .unwrap();
        let file = std::fs::File::create(dir.join(format!("{name}.samples.bin"))).unwrap();
        let mut w = SampleWriter::new(file, SampleFormat::Binary, Sampling::all()).unwrap();
        for s in samples {
            w.record(s.intended_offset, s.response, s.service, s.outcome)
                .unwrap();
        }
        w.finish().unwrap();
    }
}

fn chromium() -> Option<PathBuf> {
    let found = sojourn_testkit::chromium();
    if found.is_none() {
        sojourn_testkit::skip(
            "the report in headless Chromium: no chromium on PATH (apt-get install chromium)",
        );
    }
    found
}

/// Runs Chromium headless on `page` with `extra` flags, killing it after 90 s.
fn run_chromium(chromium: &Path, profile: &Path, page: &Path, extra: &[String]) -> Output {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
    ])
    .args([
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
    ])
    .args(["--enable-logging=stderr", "--v=0", "--hide-scrollbars"])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(extra)
    .arg(format!("file://{}", page.display()))
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("start chromium");
    // Drain both pipes while waiting: a full pipe would block Chromium forever.
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("chromium did not finish within 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn report_in(dir: &Path) -> PathBuf {
    let fixtures = common::fixtures();
    let runs: Vec<ReportRun> = ["hiccup-closed.json", "hiccup-open.json"]
        .iter()
        .map(|f| ReportRun::load(&fixtures.join(f)).unwrap())
        .collect();
    assert!(
        runs.iter().all(|r| !r.samples.is_empty()),
        "the sibling samples files are found"
    );
    let html = render(
        &runs,
        &HtmlOptions {
            title: Some("hiccup: closed vs open loop".into()),
        },
    )
    .unwrap();
    let page = dir.join("report.html");
    std::fs::write(&page, html).unwrap();
    page
}

/// Console messages Chromium logged for the page (errors, warnings, anything the page said).
fn console_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_report_renders_in_headless_chromium() {
    let Some(chromium) = chromium() else { return };
    let dir = std::env::temp_dir().join(format!("sojourn-report-chromium-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = report_in(&dir);

    let dom = run_chromium(
        &chromium,
        &dir.join("profile-dom"),
        &page,
        &["--dump-dom".into()],
    );
    assert!(
        dom.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom_text = String::from_utf8_lossy(&dom.stdout);
    for id in [
        "spectrum",
        "timeline-1",
        "timeline-2",
        "throughput",
        "send-lag",
    ] {
        assert!(
            dom_text.contains(&format!("<svg id=\"{id}\"")),
            "the rendered page has the {id} chart"
        );
    }
    assert!(dom_text.contains("<table"), "the summary table is there");
    assert!(
        !dom_text.contains("src=\"http") && !dom_text.contains("href=\"http"),
        "nothing is loaded from the network"
    );
    assert_eq!(
        console_lines(&dom.stderr),
        Vec::<String>::new(),
        "no console messages"
    );

    let shot = dir.join("report.png");
    let out = run_chromium(
        &chromium,
        &dir.join("profile-shot"),
        &page,
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2400".into(),
        ],
    );
    assert!(
        out.status.success(),
        "chromium --screenshot failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        console_lines(&out.stderr),
        Vec::<String>::new(),
        "no console messages"
    );
    assert_screenshot_has_content(&shot);

    if let Some(keep) = std::env::var_os("SOJOURN_SCREENSHOT_DIR") {
        std::fs::copy(&shot, Path::new(&keep).join("report.png")).unwrap();
        std::fs::copy(&page, Path::new(&keep).join("report.html")).unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The screenshot is the requested size, mostly white page but with real drawing on it: many
/// distinct colours (lines, fills, text) and a good share of non-white pixels.
fn assert_screenshot_has_content(path: &Path) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!((info.width, info.height), (1280, 2400));
    let channels = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let non_white = pixels
        .iter()
        .filter(|p| p[..3].iter().any(|&c| c < 235))
        .count();
    let colours: std::collections::HashSet<[u8; 3]> =
        pixels.iter().map(|p| [p[0], p[1], p[2]]).collect();
    let share = non_white as f64 / pixels.len() as f64;
    assert!(
        share > 0.03,
        "only {:.1}% of the screenshot is drawn on",
        share * 100.0
    );
    assert!(
        colours.len() > 200,
        "only {} distinct colours: the charts are missing",
        colours.len()
    );
}

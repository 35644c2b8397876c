//! Headless Chromium for the report's tests: run it on a page, and measure a page's layout the
//! way a reader meets it (viewport width, legends against the data they might cover, the look
//! of every run).
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs Chromium headless on `page` with `extra` flags, with the flags that work on a machine
/// with no network, killing it after 90 s.
pub fn run_chromium(chromium: &Path, profile: &Path, page: &Path, extra: &[String]) -> Output {
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

/// A page as a reader's browser laid it out.
#[derive(Debug, Clone)]
pub struct Layout {
    pub inner_width: f64,
    /// `document.documentElement.scrollWidth`: wider than `inner_width` means a horizontal
    /// scroll.
    pub scroll_width: f64,
    /// The verdict board's bottom edge from the top of the page, and its rows, if it has one.
    pub board_bottom: Option<f64>,
    pub board_rows: usize,
    pub charts: Vec<Chart>,
    /// Each run's swatch in the summary table, as (fill colour, marker outline).
    pub looks: Vec<(String, String)>,
}

/// One chart (an `<svg id=…>`) and its legends.
#[derive(Debug, Clone)]
pub struct Chart {
    pub id: String,
    /// Each legend box's width and height on the page (px).
    pub legends: Vec<(f64, f64)>,
    /// Curve points and markers of this chart that fall inside one of its legend boxes.
    pub covered: usize,
    /// Curve points and markers checked.
    pub points: usize,
}

/// Runs in the page after it loads, and writes what it measured into `#sojourn-probe`.
const PROBE: &str = r#"<script>
(function () {
  const out = { innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth };
  const board = document.getElementById('board');
  out.boardBottom = board ? board.querySelector('table').getBoundingClientRect().bottom + window.scrollY : null;
  out.boardRows = board ? board.querySelectorAll('tbody tr').length : 0;
  out.charts = [];
  for (const svg of document.querySelectorAll('svg[id]')) {
    const chart = { id: svg.id, legends: [], covered: 0, points: 0 };
    const boxes = [];
    for (const g of svg.querySelectorAll('g.legend')) {
      const frame = g.querySelector('rect').getBoundingClientRect();
      chart.legends.push([frame.width, frame.height]);
      boxes.push(frame);
    }
    const inside = (x, y) => boxes.some(r => x > r.left && x < r.right && y > r.top && y < r.bottom);
    for (const el of svg.querySelectorAll('polyline, polygon, circle')) {
      if (el.closest('g.legend')) continue;
      const m = el.getScreenCTM();
      const pts = el.tagName === 'circle'
        ? [{ x: el.cx.baseVal.value, y: el.cy.baseVal.value }]
        : Array.from(el.points);
      for (const p of pts) {
        const q = new DOMPoint(p.x, p.y).matrixTransform(m);
        chart.points += 1;
        if (inside(q.x, q.y)) chart.covered += 1;
      }
    }
    out.charts.push(chart);
  }
  out.looks = Array.from(document.querySelectorAll('#summary svg.swatch polygon'))
    .map(p => [p.getAttribute('fill'), p.getAttribute('points')]);
  const pre = document.createElement('pre');
  pre.id = 'sojourn-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"#;

/// Lays `page` out in a `width`×`height` window and measures it. The report itself carries no
/// script: the probe goes into a copy of it, in `dir`.
pub fn layout(chromium: &Path, page: &Path, (width, height): (u32, u32), dir: &Path) -> Layout {
    let html = std::fs::read_to_string(page).expect("read the page");
    let at = html.rfind("</body>").expect("the page has a </body>");
    let probed: PathBuf = dir.join(format!("probed-{width}x{height}.html"));
    std::fs::write(&probed, format!("{}{PROBE}{}", &html[..at], &html[at..])).unwrap();
    let out = run_chromium(
        chromium,
        &dir.join(format!("profile-probe-{width}x{height}")),
        &probed,
        &[
            "--dump-dom".into(),
            format!("--window-size={width},{height}"),
        ],
    );
    assert!(
        out.status.success(),
        "chromium --dump-dom failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout);
    let json = dom
        .split("<pre id=\"sojourn-probe\">")
        .nth(1)
        .and_then(|s| s.split("</pre>").next())
        .unwrap_or_else(|| {
            panic!(
                "the probe did not run: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let json = json
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    parse(&serde_json::from_str(&json).expect("the probe wrote JSON"))
}

fn parse(v: &serde_json::Value) -> Layout {
    let num = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    Layout {
        inner_width: num(&v["innerWidth"]),
        scroll_width: num(&v["scrollWidth"]),
        board_bottom: v["boardBottom"].as_f64(),
        board_rows: v["boardRows"].as_u64().unwrap_or(0) as usize,
        charts: v["charts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| Chart {
                id: text(&c["id"]),
                legends: c["legends"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|l| (num(&l[0]), num(&l[1])))
                    .collect(),
                covered: c["covered"].as_u64().unwrap_or(0) as usize,
                points: c["points"].as_u64().unwrap_or(0) as usize,
            })
            .collect(),
        looks: v["looks"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| (text(&l[0]), text(&l[1])))
            .collect(),
    }
}

impl Layout {
    /// Everything a reader at this width must be able to trust, as one list of failures:
    /// no horizontal scroll; every chart with exactly one legend, drawn, and covering none of
    /// the chart's points or markers; `runs` distinct looks.
    pub fn faults(&self, runs: usize) -> Vec<String> {
        let mut out = Vec::new();
        if self.scroll_width > self.inner_width {
            out.push(format!(
                "the page scrolls sideways: {} px wide in a {} px window",
                self.scroll_width, self.inner_width
            ));
        }
        for c in &self.charts {
            if c.legends.len() != 1 {
                out.push(format!("chart {} has {} legends", c.id, c.legends.len()));
            }
            if c.legends.iter().any(|(w, h)| *w < 20.0 || *h < 10.0) {
                out.push(format!(
                    "chart {}: a legend box is not drawn: {:?}",
                    c.id, c.legends
                ));
            }
            if c.points == 0 {
                out.push(format!("chart {} has no points to check", c.id));
            }
            if c.covered > 0 {
                out.push(format!(
                    "chart {}: its legend covers {} of {} points",
                    c.id, c.covered, c.points
                ));
            }
        }
        let distinct: std::collections::HashSet<&(String, String)> = self.looks.iter().collect();
        if self.looks.len() != runs || distinct.len() != runs {
            out.push(format!(
                "{} runs, {} swatches, {} distinct colour–marker pairs",
                runs,
                self.looks.len(),
                distinct.len()
            ));
        }
        out
    }
}

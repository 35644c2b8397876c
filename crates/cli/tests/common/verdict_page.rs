//! What a person reads on a `demo` or `compare` page, as headless Chromium renders it, held
//! against what the terminal printed in the same run: the board's view from the send, its p99,
//! the ratio to the open loop, the spectrum's curve and the lede's verdict.
use std::path::Path;

/// What the page must say of the paced closed loop's view from the send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A stall: from the send it hides it, and the lede says by how much.
    HidesTheStall,
    /// A healthy server: every view is honest, and the lede says the loops agree.
    AllHonest,
}

/// The cell of the terminal table's row `row` (e.g. `p99`) under the column `column`. Columns
/// are two or more spaces apart, and their headers may contain single spaces.
pub fn terminal_cell(stdout: &str, row: &str, column: &str) -> String {
    let split = |line: &str| -> Vec<String> {
        line.split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(str::to_string)
            .collect()
    };
    let head = stdout
        .lines()
        .find(|l| l.starts_with("metric "))
        .unwrap_or_else(|| panic!("no table in {stdout}"));
    let at = split(head)
        .iter()
        .position(|c| c == column)
        .unwrap_or_else(|| panic!("no column {column:?} in {head:?}"));
    let line = stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(row))
        .unwrap_or_else(|| panic!("no row {row} in {stdout}"));
    split(line)[at].clone()
}

/// A ratio as printed, `78.1x` or `78.1×`, as a number.
fn ratio_value(text: &str) -> f64 {
    text.trim()
        .trim_start_matches(['≥', '≤'])
        .trim_end_matches(['x', '×'])
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a ratio: {text:?}"))
}

fn between<'a>(text: &'a str, from: &str, to: &str) -> &'a str {
    text.split(from)
        .nth(1)
        .unwrap_or_else(|| panic!("no {from:?} in the page"))
        .split(to)
        .next()
        .unwrap()
}

/// Renders `page` in headless Chromium and checks it against the terminal's `stdout`: the board
/// has the paced loop's view from the send with the expected verdict and the terminal's p99;
/// the percentile table's ratio of `open_label` over it is within 1% of the terminal's; the
/// spectrum draws its curve with no legend over data; the lede carries the terminal's verdict.
/// `runs` is the number of result documents on the page. SKIPPED without Chromium (outside CI).
pub fn assert_page_agrees(
    page: &Path,
    dir: &Path,
    stdout: &str,
    open_label: &str,
    runs: usize,
    expect: Expect,
) {
    let Some(chromium) = sojourn_testkit::chromium() else {
        sojourn_testkit::skip(
            "the page in headless Chromium: no chromium on PATH (apt-get install chromium)",
        );
        return;
    };
    let out = sojourn_testkit::browser::run_chromium(
        &chromium,
        &dir.join("profile-verdict"),
        page,
        &["--dump-dom".into()],
    );
    let dom = String::from_utf8_lossy(&out.stdout).to_string();

    // The lede: the terminal's verdict, word for word and number for number.
    for line in stdout.lines().filter_map(|l| l.strip_prefix("verdict: ")) {
        assert!(
            dom.contains(&format!("Verdict:</b> {line}.")),
            "the page's lede lacks the terminal's verdict {line:?}: {}",
            between(&dom, "<header>", "</header>")
        );
    }

    // The board (when the page has a model): the view from the send, judged from its data.
    if dom.contains("id=\"board\"") {
        let board = between(&dom, "id=\"board\"", "</table>");
        let rows: Vec<&str> = board.split("<tr data-verdict=\"").skip(1).collect();
        let from_send = rows
            .iter()
            .find(|r| r.contains("data-clock=\"from-send\""))
            .unwrap_or_else(|| panic!("no view from the send on the board: {board}"));
        let p99 = terminal_cell(stdout, "p99", "paced, from send");
        assert!(
            from_send.contains(&format!("<td>{p99}</td>")),
            "the board shows the from-send p99 the terminal printed ({p99}): {from_send}"
        );
        match expect {
            Expect::HidesTheStall => assert!(
                from_send.starts_with("v-hides\"") && from_send.contains("HIDES THE STALL"),
                "{from_send}"
            ),
            Expect::AllHonest => {
                for r in &rows {
                    assert!(
                        r.starts_with("v-honest\"") || r.starts_with("v-model\""),
                        "healthy: every view is honest: {r}"
                    );
                }
            }
        }
    }

    // The percentile table: the ratio of the open loop over the view from the send, as the
    // terminal printed it, within 1%.
    let table = between(&dom, "id=\"percentiles\"", "</table>");
    let headers: Vec<&str> = table
        .split("<th>ratio ")
        .skip(1)
        .map(|h| h.split("</th>").next().unwrap())
        .collect();
    let want_header = format!("{open_label} / paced, from send");
    let at = headers
        .iter()
        .position(|h| *h == want_header)
        .unwrap_or_else(|| panic!("no ratio column {want_header:?} in {headers:?}"));
    let p99_row = between(table, "<tr><th>p99</th>", "</tr>");
    let cells: Vec<&str> = p99_row
        .split("<td class=\"ratio\">")
        .skip(1)
        .map(|c| c.split("</td>").next().unwrap())
        .collect();
    let page_ratio = ratio_value(cells[at]);
    let terminal_ratio = ratio_value(
        stdout
            .lines()
            .find(|l| l.starts_with("p99 "))
            .unwrap()
            .split_whitespace()
            .last()
            .unwrap(),
    );
    assert!(
        (page_ratio / terminal_ratio - 1.0).abs() <= 0.01,
        "page ratio {page_ratio} vs terminal {terminal_ratio}"
    );
    match expect {
        Expect::HidesTheStall => assert!(page_ratio >= 3.0, "{page_ratio}"),
        Expect::AllHonest => assert!((1.0 / 3.0..=3.0).contains(&page_ratio), "{page_ratio}"),
    }

    // The spectrum draws the view from the send, and no legend covers data.
    let spectrum = between(&dom, "id=\"spectrum\"", "</svg>");
    assert!(
        spectrum.contains("paced, from send"),
        "the spectrum has no curve from the send"
    );
    let seen = sojourn_testkit::browser::layout(&chromium, page, (1280, 800), dir);
    assert_eq!(seen.faults(runs), Vec::<String>::new());
}

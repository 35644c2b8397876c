//! Many requests across shards: request *i* sends a target chosen from *i* alone, so two
//! shards of a targets run send, label by label, exactly what one process sends, and their
//! merge says so. Against `sojourn serve` on 127.0.0.1.
mod common;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{assert_nothing_lost, read_result, serial, sojourn, temp_dir, TestServer};
use sojourn_core::RunResult;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Label → completed, in the result's order.
fn per_label(r: &RunResult) -> Vec<(String, u64)> {
    r.targets
        .iter()
        .map(|t| (t.label.clone(), t.counts.completed))
        .collect()
}

#[test]
fn shards_of_a_targets_run_send_what_one_process_sends_label_by_label() {
    let _serial = serial();
    let server = TestServer::start(false);
    let addr = server.addr;
    let dir = temp_dir("targets-shards");
    // Weights 1:3:2 in random order: the mix per shard depends on which indices it owns.
    let jsonl = format!(
        "{{\"method\":\"GET\",\"url\":\"http://{addr}/a\",\"label\":\"a\"}}\n\
         {{\"method\":\"GET\",\"url\":\"http://{addr}/b\",\"label\":\"b\",\"weight\":3}}\n\
         {{\"method\":\"GET\",\"url\":\"http://{addr}/c\",\"label\":\"c\",\"weight\":2}}\n"
    );
    let targets = dir.join("t.jsonl");
    std::fs::write(&targets, jsonl).unwrap();
    let common = [
        "--targets",
        s(&targets),
        "--targets-order",
        "random",
        "--seed",
        "11",
        "--rate",
        "600",
        "--requests",
        "600",
        "--no-hiccup-meter",
    ];
    let single = dir.join("single.json");
    let out = sojourn(
        &[
            &["run", "--threads", "2", "--json", s(&single)][..],
            &common,
        ]
        .concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let start = (SystemTime::now() + Duration::from_millis(1500))
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let start = format!("{start:.3}");
    let shards: Vec<_> = (0..2)
        .map(|k| {
            let json = dir.join(format!("shard{k}.json"));
            let shard = format!("{k}/2");
            let args = [
                &[
                    "run",
                    "--threads",
                    "1",
                    "--shard",
                    &shard,
                    "--start-at",
                    &start,
                ][..],
                &["--json", s(&json)],
                &common,
            ]
            .concat();
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_sojourn"))
                .args(args)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (child, json)
        })
        .collect();
    let mut files = Vec::new();
    for (mut child, json) in shards {
        assert!(child.wait().unwrap().success());
        files.push(json);
    }
    let merged = dir.join("merged.json");
    let out = sojourn(&["merge", s(&files[0]), s(&files[1]), "-o", s(&merged)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (one, both) = (read_result(&single), read_result(&merged));
    assert_nothing_lost(&both);
    assert_eq!(one.counts.completed, 600);
    assert_eq!(
        per_label(&both),
        per_label(&one),
        "the shards sent exactly the one process's mix"
    );
    let parts: Vec<Vec<(String, u64)>> = files.iter().map(|f| per_label(&read_result(f))).collect();
    assert_ne!(parts[0], parts[1], "each shard sent its own indices' mix");
    assert_eq!(both.statuses, one.statuses);
}

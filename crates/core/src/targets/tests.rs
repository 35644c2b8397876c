use std::io::Write;

use super::*;

/// `GET http://api:8080{path}` with weight `weight`, on line `line`.
fn target(path: &str, weight: u32, line: usize) -> Target {
    let url = Url::parse(&format!("http://api:8080{path}")).expect("valid URL");
    Target {
        weight,
        line,
        ..Target::new("GET", url)
    }
}

fn weighted(weights: &[u32], order: Order) -> Targets {
    let targets = weights
        .iter()
        .enumerate()
        .map(|(k, &w)| target(&format!("/{k}"), w, k + 1));
    Targets::new(targets.collect(), order).expect("valid targets")
}

fn fails(targets: Vec<Target>, line: Option<usize>, kind: TargetsErrorKind) -> TargetsError {
    let e = Targets::new(targets, Order::RoundRobin).expect_err("should fail");
    assert_eq!((e.line, e.kind), (line, kind), "{e}");
    e
}

fn write_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    file
}

#[test]
fn equal_weights_are_plain_round_robin() {
    let t = weighted(&[1; 7], Order::RoundRobin);
    for i in (0..1000).chain(u64::MAX - 1000..=u64::MAX) {
        assert_eq!(t.pick(i), (i % 7) as usize, "index {i}");
    }
    assert_eq!(t.cycle(), 7);
}

#[test]
fn each_cycle_sends_exactly_the_weights() {
    // The second set has a common factor: its table is a shorter cycle, repeated.
    for weights in [vec![5, 3, 1, 1], vec![6, 4, 2]] {
        let t = weighted(&weights, Order::RoundRobin);
        let cycle = t.cycle();
        assert_eq!(cycle, weights.iter().map(|&w| u64::from(w)).sum::<u64>());
        // Any W consecutive indices, wherever they start, hold weight_k of target k.
        for start in (0..cycle).chain([12_345, u64::MAX / 2]) {
            let mut sent = vec![0u32; weights.len()];
            for i in start..start + cycle {
                sent[t.pick(i)] += 1;
            }
            assert_eq!(sent, weights, "window from {start}");
        }
    }
}

#[test]
fn weights_two_and_one_interleave() {
    let t = weighted(&[2, 1], Order::RoundRobin);
    let picks: Vec<usize> = (0..300).map(|i| t.pick(i)).collect();
    assert_eq!(picks[..3], [0, 1, 0]);
    // Two of 0 to one of 1 can do no better than runs of two 0s, and 1 never repeats.
    let longest = |k: usize| {
        picks
            .chunk_by(|a, b| a == b)
            .filter(|run| run[0] == k)
            .map(<[usize]>::len)
            .max()
    };
    assert_eq!((longest(0), longest(1)), (Some(2), Some(1)));
}

#[test]
fn random_order_is_pure_per_seed_and_differs_between_seeds() {
    let a = weighted(&[3, 2, 1], Order::Random { seed: 42 });
    let b = weighted(&[3, 2, 1], Order::Random { seed: 42 });
    let c = weighted(&[3, 2, 1], Order::Random { seed: 43 });
    let seq = |t: &Targets| (0..1000).map(|i| t.pick(i)).collect::<Vec<_>>();
    assert_eq!(seq(&a), seq(&b));
    // The same index asked again, out of order, gives the same target: there is no state.
    assert_eq!(
        (a.pick(999), a.pick(0), a.pick(999)),
        (b.pick(999), b.pick(0), b.pick(999))
    );
    let same = seq(&a)
        .iter()
        .zip(seq(&c))
        .filter(|(x, y)| **x == *y)
        .count();
    // Independent draws agree with probability Σ share² = 14/36: about 389 of 1000.
    assert!(
        (300..480).contains(&same),
        "{same} of 1000 equal across seeds"
    );
    assert_eq!(a.order(), Order::Random { seed: 42 });
}

#[test]
fn random_order_matches_the_shares() {
    let weights = [5, 3, 1, 1];
    let t = weighted(&weights, Order::Random { seed: 7 });
    let n = 100_000u64;
    let mut sent = [0u64; 4];
    for i in 0..n {
        sent[t.pick(i)] += 1;
    }
    for (k, &count) in sent.iter().enumerate() {
        let p = t.share(k);
        assert_eq!(p, f64::from(weights[k]) / 10.0);
        let (mean, sigma) = (n as f64 * p, (n as f64 * p * (1.0 - p)).sqrt());
        // Binomial: 5 sigma is about 470 requests for the 0.5 share, 300 for 0.1.
        assert!(
            (count as f64 - mean).abs() < 5.0 * sigma,
            "target {k}: {count} vs {mean}"
        );
    }
}

#[test]
fn random_order_is_not_the_round_robin_sequence() {
    let t = weighted(&[1, 1], Order::Random { seed: 1 });
    let alternations = (0..1000).filter(|&i| t.pick(i) != t.pick(i + 1)).count();
    // Round robin alternates every time; independent draws about half the time.
    assert!((400..600).contains(&alternations), "{alternations}");
}

#[test]
fn labels_in_first_seen_order() {
    let mut targets = vec![
        target("/b?x=1", 1, 1),
        target("/a", 1, 2),
        target("/b?x=2", 1, 3),
    ];
    targets[1].label = "alpha".into();
    let t = Targets::new(targets, Order::RoundRobin).expect("valid");
    assert_eq!(t.labels(), ["GET /b", "alpha"]);
    assert_eq!((t.label_of(0), t.label_of(1), t.label_of(2)), (0, 1, 0));
    assert_eq!(t.targets().len(), 3);
}

#[test]
fn at_most_64_labels() {
    let paths = |n: usize| {
        (0..n)
            .map(|k| target(&format!("/p{k}"), 1, k + 1))
            .collect()
    };
    assert_eq!(
        Targets::new(paths(64), Order::RoundRobin)
            .expect("64 fit")
            .labels()
            .len(),
        64
    );
    let mut many: Vec<Target> = paths(70);
    let e = fails(many.clone(), Some(65), TargetsErrorKind::TooManyLabels);
    for phrase in [
        "70 distinct labels, at most 64",
        "method and path",
        "# label:",
        "\"label\"",
    ] {
        assert!(e.problem.contains(phrase), "{phrase:?} not in: {e}");
    }
    // Grouped under a few labels, the same targets are fine.
    for (k, t) in many.iter_mut().enumerate() {
        t.label = format!("group {}", k % 3);
    }
    assert_eq!(
        Targets::new(many, Order::RoundRobin)
            .expect("grouped")
            .labels()
            .len(),
        3
    );
}

#[test]
fn one_origin_per_run() {
    let other = Target::new("GET", Url::parse("https://api:8080/x").expect("url"));
    let e = fails(
        vec![
            target("/a", 1, 1),
            target("/b", 1, 2),
            Target { line: 3, ..other },
        ],
        Some(3),
        TargetsErrorKind::MixedOrigins,
    );
    for phrase in [
        "https://api:8080",
        "http://api:8080",
        "first target (line 1)",
        "connection pool",
    ] {
        assert!(e.problem.contains(phrase), "{phrase:?} not in: {e}");
    }
    // The default port written out is the same origin.
    let explicit = Target::new("GET", Url::parse("http://h:80/a").expect("url"));
    let implicit = Target::new("GET", Url::parse("http://h/b").expect("url"));
    assert!(Targets::new(vec![explicit, implicit], Order::RoundRobin).is_ok());
}

#[test]
fn run_level_limits() {
    fails(Vec::new(), None, TargetsErrorKind::Empty);
    let e = fails(
        vec![target("/a", 600_000, 1), target("/b", 400_001, 2)],
        None,
        TargetsErrorKind::CycleTooLong,
    );
    assert!(e.problem.contains("sum to 1000001, at most 1000000"), "{e}");
    assert!(Targets::new(
        vec![target("/a", 600_000, 1), target("/b", 400_000, 2)],
        Order::RoundRobin
    )
    .is_ok());
}

#[test]
fn targets_from_no_file_are_validated_too() {
    let lower = Target {
        method: "get".into(),
        ..target("/a", 1, 4)
    };
    fails(
        vec![target("/ok", 1, 1), lower],
        Some(4),
        TargetsErrorKind::Method,
    );
    fails(
        vec![Target {
            weight: 0,
            ..target("/a", 1, 0)
        }],
        None,
        TargetsErrorKind::Weight,
    );
    let header = Target {
        headers: vec![("Bad Name".into(), "v".into())],
        ..target("/a", 1, 2)
    };
    fails(vec![header], Some(2), TargetsErrorKind::Header);
    let ftp = Target {
        url: Url::parse("ftp://api/x").expect("url"),
        ..target("/a", 1, 9)
    };
    fails(vec![ftp], Some(9), TargetsErrorKind::Url);
}

#[test]
fn error_lines_read_file_line_problem() {
    let at = |file: &str, line| TargetsError {
        file: file.into(),
        line,
        kind: TargetsErrorKind::Malformed,
        problem: "what is wrong".into(),
    };
    assert_eq!(at("t.txt", Some(3)).to_string(), "t.txt:3: what is wrong");
    assert_eq!(at("t.txt", None).to_string(), "t.txt: what is wrong");
    assert_eq!(at("", Some(3)).to_string(), "line 3: what is wrong");
    assert_eq!(at("", None).to_string(), "what is wrong");
}

#[test]
fn read_file_tells_the_format_by_content() {
    let http = write_file("\n# comment\nGET http://api:8080/a\n");
    assert_eq!(read_file(http.path()).expect("http")[0].line, 3);
    let jsonl = write_file("\n  {\"method\":\"GET\",\"url\":\"http://api:8080/a\"}\n");
    assert_eq!(read_file(jsonl.path()).expect("jsonl")[0].line, 2);
    let bom = write_file("\u{feff}{\"method\":\"GET\",\"url\":\"http://api:8080/a\"}\n");
    assert_eq!(read_file(bom.path()).expect("jsonl after a BOM").len(), 1);
    // A JSON line in an HTTP-format file is read as a request line, and says so.
    let mixed = write_file("GET http://api:8080/a\n\n{\"method\":\"GET\"}\n");
    let e = read_file(mixed.path()).expect_err("JSON in the HTTP format");
    assert_eq!(
        (e.line, e.kind),
        (Some(3), TargetsErrorKind::Malformed),
        "{e}"
    );
}

#[test]
fn unreadable_files_name_the_path() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = dir.path().join("targets.txt");
    let e = read_file(&missing).expect_err("missing");
    assert_eq!((e.line, e.kind), (None, TargetsErrorKind::Unreadable));
    assert!(
        e.to_string()
            .starts_with(&format!("{}: cannot read", missing.display())),
        "{e}"
    );
    let mut latin1 = tempfile::NamedTempFile::new().expect("temp file");
    latin1
        .write_all(b"GET http://api:8080/a\nX-Name: caf\xe9\n")
        .expect("write");
    let e = read_file(latin1.path()).expect_err("not UTF-8");
    assert_eq!(
        (e.line, e.kind),
        (Some(2), TargetsErrorKind::Unreadable),
        "{e}"
    );
}

#[test]
fn load_names_the_file_in_run_level_errors() {
    let file = write_file("GET http://api:8080/a\n\nGET http://other:8080/b\n");
    let e = Targets::load(file.path(), Order::RoundRobin).expect_err("two origins");
    let prefix = format!(
        "{}:3: this target is for http://other:8080",
        file.path().display()
    );
    assert!(e.to_string().starts_with(&prefix), "{e}");
}

#[test]
fn the_same_file_gives_the_same_picks() {
    let file = write_file(
        "# weight: 3\nGET http://api:8080/a\n\n# weight: 2\nPOST http://api:8080/b\n\nGET http://api:8080/c\n",
    );
    for order in [Order::RoundRobin, Order::Random { seed: 9 }] {
        let one = Targets::load(file.path(), order).expect("valid");
        let two = Targets::load(file.path(), order).expect("valid");
        assert_eq!(one.targets(), two.targets());
        let indices = (0..500).chain([1 << 40, u64::MAX]);
        assert!(
            indices.into_iter().all(|i| one.pick(i) == two.pick(i)),
            "{order:?}"
        );
        assert_eq!(one.labels(), ["GET /a", "POST /b", "GET /c"]);
    }
    let rr = Targets::load(file.path(), Order::RoundRobin).expect("valid");
    assert_eq!(
        (0..6).map(|i| rr.pick(i)).collect::<Vec<_>>(),
        [0, 1, 0, 2, 1, 0]
    );
}

//! Sharded runs, with this test playing the Kubernetes Job controller.
//!
//! There is no cluster here, so the test does what the controller and the kubelet would: it
//! reads the container's args from `deploy/kubernetes/job.yaml`, expands each `$(NAME)` from
//! the container's environment as the kubelet does (the manifest's values, the few the test
//! overrides, and `JOB_COMPLETION_INDEX`, which the Job controller adds), and runs the image's
//! entrypoint (`sojourn`, read from the Containerfile) once per completion index.
//!
//! Each shard runs in its own network namespace, as a pod does: one namespace holds a bridge on
//! a private test subnet and the target (`sojourn serve`), and every shard's namespace has a
//! veth pair into that bridge. Where namespaces cannot be made (not root), the test says so and
//! runs every process on 127.0.0.1 instead; under CI (`.ci/run` runs as root) that is a failure.
//!
//! What it checks:
//! - exactness: the union of every shard's intended times (`--samples`) is the single process's
//!   schedule with N·T threads, index for index, for evenly spaced and seeded Poisson arrivals,
//!   and the merged count is that schedule's;
//! - a stall seen by all: a hiccup measured by four shards agrees with `sojourn sim` of the same
//!   global schedule, within docs/validation.md's tolerance;
//! - a killed shard (SIGKILL) is named missing and one stopped early (SIGTERM, as Kubernetes
//!   stops pods) short, their requests counted not measured, and merge exits 5 unless
//!   `--allow-partial`;
//! - associativity: merging in any grouping or order gives byte-identical histograms.
//!
//! Every process is killed and every namespace deleted on drop, also when a test panics.
mod common;
#[path = "common/job.rs"]
mod job;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::tolerance::*;
use common::{assert_nothing_lost, listening_addr, read_result, serial, temp_dir, Signal, TestDir};
use job::{entrypoint, expand, job_manifest, repo, text_at, yaml_documents, JobManifest};
use sojourn_core::placement::ShardState;
use sojourn_core::{Arrival, End, Rate, RunResult, Schedule, Shard};
use sojourn_testkit::control::on_a_quiet_machine;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_sojourn")
}

/// Unix seconds with a fraction, as `--start-at` reads them.
fn unix_secs(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap();
    format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
}

/// How far ahead the plan's start is set: enough for every shard to start and be ready.
const LEAD: Duration = Duration::from_millis(1500);

// --- the manifest (job.rs reads it) ---------------------------------------------------------

#[test]
fn manifests_parse_and_agree_with_each_other() {
    assert_eq!(entrypoint(), ["sojourn"]);
    let job = job_manifest();
    assert_eq!(job.completions, job.parallelism, "every shard runs at once");
    assert_eq!(
        job.value("SHARDS"),
        job.completions.to_string(),
        "--shard-count is the number of completions"
    );
    let args = job.command_line(&[("START_AT", "1700000000".into())], 3);
    let at = |flag: &str| args.iter().position(|a| a == flag);
    assert_eq!(args[0], "run");
    for flag in [
        "--shard-from-env",
        "--start-at",
        "--threads",
        "--json",
        "--samples",
    ] {
        assert!(at(flag).is_some(), "job.yaml's args lack {flag}: {args:?}");
    }
    assert_eq!(args[at("--json").unwrap() + 1], "/results/shard-3.json");
    assert!(
        job.value("START_AT").contains("__START_AT__"),
        "a placeholder the docs' sed replaces"
    );
    assert_eq!(
        expand(
            "$(A)-$$(A)-$(B)-$",
            &[("A".to_string(), "x".to_string())].into()
        ),
        "x-$(A)-$(B)-$"
    );
    // The merge Job globs the shard files in a shell, and reads the same volume.
    let merge = &yaml_documents(&repo().join("deploy/kubernetes/merge-job.yaml"))[0];
    assert_eq!(text_at(merge, &["kind"]), Some("Job"));
    let c = &merge["spec"]["template"]["spec"]["containers"][0];
    let script = c["args"][0].as_str().expect("a shell script");
    assert!(c["command"][0].as_str().unwrap().ends_with("sh"));
    assert!(script.contains("sojourn merge /results/shard-*.json -o /results/run.json"));
    assert_eq!(
        text_at(
            &merge["spec"]["template"]["spec"]["volumes"][0],
            &["persistentVolumeClaim", "claimName"]
        ),
        Some("sojourn-results")
    );
}

// --- processes ------------------------------------------------------------------------------

/// A child process, killed (SIGKILL) and reaped when dropped.
struct Proc {
    child: Child,
    what: String,
}

impl Proc {
    fn spawn(mut cmd: Command, what: &str) -> Proc {
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}"));
        Proc {
            child,
            what: what.to_string(),
        }
    }

    fn signal(&self, sig: Signal) {
        common::signal(&self.child, sig);
    }

    /// Waits until it exits, at most until `deadline`; past it, kills it and fails.
    fn wait(mut self, deadline: Instant) -> Output {
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting") {
                let read = |r: Option<&mut dyn std::io::Read>| {
                    let mut buf = Vec::new();
                    if let Some(r) = r {
                        let _ = r.read_to_end(&mut buf);
                    }
                    buf
                };
                let stdout = read(self.child.stdout.as_mut().map(|s| s as _));
                let stderr = read(self.child.stderr.as_mut().map(|s| s as _));
                return Output {
                    status,
                    stdout,
                    stderr,
                };
            }
            assert!(
                Instant::now() < deadline,
                "{} still running at its deadline",
                self.what
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// --- the network ----------------------------------------------------------------------------

/// Where the processes run: a namespace per shard on a bridge, or all on loopback.
enum Net {
    Namespaces(Namespaces),
    Loopback,
}

/// A hub namespace with a bridge on 10.200.X.0/24 (the target at .1), and one namespace per
/// shard with a veth pair into the bridge (shard K at .10+K). Deleted on drop.
struct Namespaces {
    hub: String,
    shards: Vec<String>,
    subnet: u8,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The prefix of this test process's namespaces; a crashed run's are recognised by their pid.
const PREFIX: &str = "sojourn-t";

impl Namespaces {
    fn create(shards: u32) -> Result<Namespaces, String> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        remove_stale();
        let pid = std::process::id();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = |what: &str| format!("{PREFIX}{pid}-{n}-{what}");
        let mut ns = Namespaces {
            hub: name("hub"),
            shards: Vec::new(),
            subnet: ((pid + n * 7) % 200 + 20) as u8,
        };
        // Dropping `ns` on any error below deletes what was made.
        ip(&["netns", "add", &ns.hub])?;
        let hub = ns.hub.clone();
        let gateway = format!("{}/24", ns.gateway());
        for args in [
            vec!["link", "set", "lo", "up"],
            vec!["link", "add", "br0", "type", "bridge"],
            vec!["addr", "add", &gateway, "dev", "br0"],
            vec!["link", "set", "br0", "up"],
        ] {
            ip(&[&["-n", hub.as_str()][..], &args].concat())?;
        }
        for k in 0..shards {
            let shard = name(&format!("s{k}"));
            ip(&["netns", "add", &shard])?;
            ns.shards.push(shard.clone());
            let (port, addr) = (
                format!("v{k}"),
                format!("10.200.{}.{}/24", ns.subnet, 10 + k),
            );
            let via = ns.gateway();
            let hub_side: [&[&str]; 3] = [
                &[
                    "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", &shard,
                ],
                &["link", "set", &port, "master", "br0"],
                &["link", "set", &port, "up"],
            ];
            for args in hub_side {
                ip(&[&["-n", hub.as_str()][..], args].concat())?;
            }
            let shard_side: [&[&str]; 4] = [
                &["link", "set", "lo", "up"],
                &["addr", "add", &addr, "dev", "eth0"],
                &["link", "set", "eth0", "up"],
                &["route", "add", "default", "via", &via],
            ];
            for args in shard_side {
                ip(&[&["-n", shard.as_str()][..], args].concat())?;
            }
        }
        Ok(ns)
    }

    fn gateway(&self) -> String {
        format!("10.200.{}.1", self.subnet)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of each veth pair, and with it the other end.
        for ns in self.shards.iter().chain([&self.hub]) {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

/// Namespaces left by a test process that no longer runs (killed before its drops ran).
fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        let Some(pid) = name
            .strip_prefix(PREFIX)
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", name]);
        }
    }
}

impl Net {
    /// Namespaces if this machine allows them; loopback (said plainly) if not, except under CI.
    fn new(shards: u32) -> Net {
        match Namespaces::create(shards) {
            Ok(ns) => {
                println!(
                    "network: {} shard namespaces on bridge 10.200.{}.0/24 (target {})",
                    shards,
                    ns.subnet,
                    ns.gateway()
                );
                Net::Namespaces(ns)
            }
            Err(why) => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "network namespaces are not available ({why}): .ci/run runs as root and \
                     must take the namespace path (iproute2 installed)"
                );
                println!(
                    "network namespaces are not available here ({why}); running every process on 127.0.0.1 instead"
                );
                Net::Loopback
            }
        }
    }

    /// `sojourn ARGS` in the target's namespace.
    fn target_command(&self) -> Command {
        match self {
            Net::Namespaces(ns) => in_namespace(&ns.hub),
            Net::Loopback => Command::new(bin()),
        }
    }

    /// `sojourn ARGS` in shard `k`'s namespace.
    fn shard_command(&self, k: u32) -> Command {
        match self {
            Net::Namespaces(ns) => in_namespace(&ns.shards[k as usize]),
            Net::Loopback => Command::new(bin()),
        }
    }

    fn listen(&self) -> String {
        match self {
            Net::Namespaces(ns) => format!("{}:0", ns.gateway()),
            Net::Loopback => "127.0.0.1:0".into(),
        }
    }
}

/// `ip netns exec NS sojourn`: ip enters the namespace and execs the program in its own
/// process, so the child's pid is sojourn's and a signal reaches it.
fn in_namespace(ns: &str) -> Command {
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, bin()]);
    cmd
}

// --- a sharded run --------------------------------------------------------------------------

/// The target: `sojourn serve` of a scenario on the bridge, stopped with SIGTERM so that its
/// truth log is written.
struct Target {
    proc: Proc,
    url: String,
}

impl Target {
    fn start(net: &Net, scenario: &str, sets: &[&str], truth: Option<&Path>) -> Target {
        let mut cmd = net.target_command();
        cmd.args(["serve", "--scenario", scenario, "--listen", &net.listen()]);
        for s in sets {
            cmd.args(["--set", s]);
        }
        if let Some(t) = truth {
            cmd.args(["--truth", t.to_str().unwrap()]);
        }
        cmd.stdout(Stdio::piped()).stderr(Stdio::null());
        let mut proc = Proc::spawn(cmd, "sojourn serve");
        let addr = listening_addr(&mut proc.child);
        Target {
            proc,
            url: format!("http://{addr}/api"),
        }
    }

    fn stop(self) {
        self.proc.signal(Signal::TERM);
        let out = self.proc.wait(Instant::now() + Duration::from_secs(10));
        assert!(out.status.success(), "sojourn serve: {}", out.status);
    }
}

/// One sharded run's plan: what the test puts in the manifest's environment.
struct Load {
    rate: f64,
    duration: Duration,
    arrival: &'static str,
    threads: usize,
}

impl Load {
    fn schedule(&self) -> Schedule {
        let arrival = match self.arrival {
            "constant" => Arrival::Constant,
            // The manifest gives no --seed: Poisson arrivals with sojourn's default seed, 1.
            "poisson" => Arrival::Poisson { seed: 1 },
            other => panic!("arrival {other}"),
        };
        Schedule::new(
            arrival,
            Rate::per_second(self.rate).unwrap(),
            End::After(self.duration),
        )
        .unwrap()
    }
}

/// A running shard.
struct ShardProc {
    index: u32,
    proc: Proc,
}

/// Starts every shard of `job` with `load` against `url`, writing into `dir`, from a start
/// LEAD ahead. Returns the processes and the start.
fn start_shards(
    job: &JobManifest,
    net: &Net,
    url: &str,
    load: &Load,
    dir: &Path,
) -> (Vec<ShardProc>, SystemTime) {
    let start = SystemTime::now() + LEAD;
    let overrides = [
        ("TARGET", url.to_string()),
        ("START_AT", unix_secs(start)),
        ("RATE", load.rate.to_string()),
        ("DURATION", format!("{}ms", load.duration.as_millis())),
        ("ARRIVAL", load.arrival.to_string()),
        ("THREADS", load.threads.to_string()),
        ("RESULTS", dir.to_str().unwrap().to_string()),
        ("SAMPLE_RATIO", "1".to_string()),
    ];
    let procs = (0..job.completions)
        .map(|k| {
            let mut cmd = net.shard_command(k);
            let (args, env) = job.container(&overrides, k);
            cmd.args(args)
                .envs(env)
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            ShardProc {
                index: k,
                proc: Proc::spawn(cmd, &format!("shard {k}")),
            }
        })
        .collect();
    (procs, start)
}

/// Waits for every shard (bounded), each to exit 0.
fn finish(shards: Vec<ShardProc>, load: &Load, start: SystemTime) {
    let deadline = Instant::now()
        + start.duration_since(SystemTime::now()).unwrap_or_default()
        + load.duration
        + Duration::from_secs(30);
    for s in shards {
        let out = s.proc.wait(deadline);
        assert!(
            out.status.success(),
            "shard {}: {}: {}",
            s.index,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn shard_json(dir: &Path, k: u32) -> PathBuf {
    dir.join(format!("shard-{k}.json"))
}

/// `sojourn merge FILES -o OUT EXTRA…`, bounded.
fn merge(files: &[PathBuf], out: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.arg("merge")
        .args(files)
        .arg("-o")
        .arg(out)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    Proc::spawn(cmd, "sojourn merge").wait(Instant::now() + Duration::from_secs(30))
}

fn merge_ok(files: &[PathBuf], out: &Path, extra: &[&str]) -> RunResult {
    let o = merge(files, out, extra);
    assert!(
        o.status.success(),
        "merge {files:?}: {}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    read_result(out)
}

/// The intended offsets (ns) a samples CSV holds, sorted.
fn intended_offsets(path: &Path) -> Vec<u64> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("# sojourn samples v1, sampling ratio 1"),
        "{}: every request kept",
        path.display()
    );
    assert_eq!(
        lines.next(),
        Some("intended_offset_ns,response_ns,service_ns,outcome")
    );
    let mut due: Vec<u64> = lines
        .map(|l| {
            l.split(',')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{}: bad row {l:?}", path.display()))
        })
        .collect();
    due.sort_unstable();
    due
}

/// The due times (ns) of senders `senders` of `of` in `schedule`, sorted.
fn due_times(schedule: &Schedule, senders: impl Iterator<Item = (usize, usize)>) -> Vec<u64> {
    let mut due: Vec<u64> = senders
        .flat_map(|(w, ws)| schedule.slice(w, ws))
        .map(|d| d.at.as_nanos() as u64)
        .collect();
    due.sort_unstable();
    due
}

/// A healthy target answering in 1 ms, N shards of `load` against it, all finished: the shard
/// files in `dir`.
fn healthy_run(name: &str, load: &Load) -> (JobManifest, TestDir) {
    let _guard = serial();
    let job = job_manifest();
    let dir = temp_dir(name);
    let net = Net::new(job.completions);
    let target = Target::start(&net, "healthy", &["healthy.baseline=1ms"], None);
    let (shards, start) = start_shards(&job, &net, &target.url, load, &dir);
    finish(shards, load, start);
    target.stop();
    (job, dir)
}

fn check_exact(arrival: &'static str) {
    let load = Load {
        rate: 800.0,
        duration: Duration::from_secs(2),
        arrival,
        threads: 2,
    };
    let (job, dir) = healthy_run(&format!("distributed-exact-{arrival}"), &load);
    check_exact_files(&job, &dir, &load);
}

/// Each shard ran exactly its slices; together, the single process's schedule with N·T
/// threads; the merge counts that schedule, all measured.
fn check_exact_files(job: &JobManifest, dir: &Path, load: &Load) {
    let (n, t) = (job.completions, load.threads);
    let schedule = load.schedule();
    let single = due_times(&schedule, (0..n as usize * t).map(|w| (w, n as usize * t)));
    let mut union = Vec::new();
    for k in 0..n {
        let shard = Shard::new(k, n).unwrap();
        let r = read_result(&shard_json(dir, k));
        assert_nothing_lost(&r);
        let p = r
            .placement
            .as_ref()
            .expect("a shard's result knows its place");
        assert_eq!(p.shard, shard);
        assert_eq!(p.due, schedule.due_count(shard, t), "shard {k}: its due");
        assert_eq!(r.counts.scheduled, p.due, "shard {k} scheduled its share");
        assert_eq!(r.counts.completed, p.due, "shard {k}: all answered");
        assert!(p.start_skew_ns.is_some(), "shard {k} reports its skew");
        let got = intended_offsets(&dir.join(format!("shard-{k}.samples.csv")));
        // Thread `local` of shard k runs slice k + N·local of N·T (DESIGN §8), written out
        // here rather than asked of Shard::slot.
        let nt = n as usize * t;
        let want = due_times(
            &schedule,
            (0..t).map(|local| (k as usize + n as usize * local, nt)),
        );
        assert_eq!(got.len(), want.len(), "shard {k}: requests sampled");
        assert!(got == want, "shard {k}: its intended times are its slices'");
        union.extend(got);
    }
    union.sort_unstable();
    assert_eq!(union.len(), single.len(), "every index once");
    assert!(
        union == single,
        "the shards' intended times are the single process's with {} threads",
        n as usize * t
    );
    let files: Vec<PathBuf> = (0..n).map(|k| shard_json(dir, k)).collect();
    let merged = merge_ok(&files, &dir.join("run.json"), &[]);
    assert_nothing_lost(&merged);
    assert_eq!(merged.counts.scheduled, single.len() as u64);
    if let Some(planned) = schedule.planned_count() {
        assert_eq!(merged.counts.scheduled, planned);
    }
    assert_eq!(merged.counts.completed, merged.counts.scheduled);
    assert_eq!(merged.counts.not_measured, 0);
    assert_eq!(merged.histograms.response.count, merged.counts.completed);
    let info = merged.merged.as_ref().expect("a merge says what it holds");
    assert!(!info.partial);
    assert!(info.shards.iter().all(|s| s.status == ShardState::Complete));
    // One plan start for every shard: their intervals cover the same wall-clock windows, so
    // the merge adds them window by window rather than interleaving them.
    let longest = files
        .iter()
        .map(|f| read_result(f).intervals.len())
        .max()
        .unwrap();
    assert_eq!(merged.intervals.len(), longest, "intervals aligned");
    for (i, iv) in merged.intervals.iter().enumerate() {
        assert_eq!(
            iv.start_ns,
            i as u64 * merged.config.interval_ns,
            "interval {i}"
        );
    }
}

#[test]
fn exactness_evenly_spaced_shards_union_to_the_single_process_schedule() {
    check_exact("constant");
}

#[test]
fn exactness_seeded_poisson_shards_union_to_the_single_process_schedule() {
    check_exact("poisson");
}

/// Merging in any grouping and any order: the same histograms and intervals, byte for byte.
#[test]
fn associativity_merge_of_merges_is_byte_identical() {
    let load = Load {
        rate: 600.0,
        duration: Duration::from_millis(2500),
        arrival: "constant",
        threads: 1,
    };
    let (job, dir) = healthy_run("distributed-assoc", &load);
    assert!(job.completions >= 3, "three shards to group");
    let f: Vec<PathBuf> = (0..job.completions).map(|k| shard_json(&dir, k)).collect();
    let out = |name: &str| dir.join(format!("{name}.json"));
    let partial = ["--allow-partial"];
    // merge(merge(a, b), c) and merge(a, b, c), the rest missing from both.
    merge_ok(&f[..2], &out("ab"), &partial);
    merge_ok(&[out("ab"), f[2].clone()], &out("ab_c"), &partial);
    merge_ok(&f[..3], &out("abc"), &partial);
    merge_ok(
        &[f[2].clone(), f[0].clone(), f[1].clone()],
        &out("cab"),
        &partial,
    );
    // All of them: at once, in reverse, and as merges of merges.
    merge_ok(&f, &out("all"), &[]);
    let reversed: Vec<PathBuf> = f.iter().rev().cloned().collect();
    merge_ok(&reversed, &out("reversed"), &[]);
    merge_ok(
        &[vec![out("ab_c")], f[3..].to_vec()].concat(),
        &out("abc_rest"),
        &[],
    );
    if f.len() >= 4 {
        merge_ok(&f[2..], &out("cd"), &["--allow-partial"]);
        merge_ok(&[out("ab"), out("cd")], &out("ab_cd"), &[]);
    }
    let parts = |name: &str| -> (String, String, String) {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out(name)).unwrap()).unwrap();
        let text = |key: &str| serde_json::to_string(&v[key]).unwrap();
        (text("histograms"), text("intervals"), text("counts"))
    };
    let abc = parts("abc");
    assert!(
        abc.0.len() > 100 && abc.1.len() > 100,
        "something to compare"
    );
    assert!(
        parts("ab_c") == abc,
        "merge(merge(a, b), c) ≠ merge(a, b, c)"
    );
    assert!(parts("cab") == abc, "merge(c, a, b) ≠ merge(a, b, c)");
    let all = parts("all");
    for name in ["reversed", "abc_rest", "ab_cd"] {
        if out(name).exists() {
            assert!(parts(name) == all, "{name} ≠ merge of every shard at once");
        }
    }
    assert!(all != abc, "a missing shard changes the sums");

    // The merged document is an ordinary result: report, diff and --hgrm read it.
    for args in [
        vec![
            "report".into(),
            out("all").display().to_string(),
            "-o".into(),
            out("all").with_extension("html").display().to_string(),
        ],
        vec![
            "diff".into(),
            out("all").display().to_string(),
            out("reversed").display().to_string(),
        ],
    ] {
        let o = Command::new(bin()).args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    merge_ok(
        &f,
        &out("hgrm"),
        &["--hgrm", &dir.join("merged").display().to_string()],
    );
    let hgrm = std::fs::read_to_string(dir.join("merged.response.hgrm")).unwrap();
    assert!(hgrm.contains("#[Mean"), "{hgrm}");

    // A shard of another plan is refused, naming the field that differs.
    let mut other: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f[1]).unwrap()).unwrap();
    other["config"]["duration_ns"] = serde_json::json!(9_000_000_000u64);
    let odd = dir.join("other-plan.json");
    std::fs::write(&odd, other.to_string()).unwrap();
    let o = merge(&[f[0].clone(), odd], &out("refused"), &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--duration"), "{err}");
}

// --- a stall seen by all --------------------------------------------------------------------

fn p99_ms_of(late: &mut [u64]) -> f64 {
    late.sort_unstable();
    late[(late.len() * 99 / 100).min(late.len() - 1)] as f64 / 1e6
}

/// The fixed ceilings (ms) of four shards against one hiccup: the largest observed on a quiet
/// machine, with a margin (docs/validation.md lists both). The held answers leave to four
/// client processes, not one, on the same two cores as the server, so the release spreads
/// wider than in validation.rs's single run (server lateness 34–81 ms against 16–40 ms) and
/// the wedge moves with it.
const FOUR_SHARDS_HICCUP: Ceilings = Ceilings {
    body_ms: 0.8,
    tail_ms: 90.0,
    server_late_ms: 100.0,
    dispatch_ms: 4.0,
};

/// Four shards measure one 1 s stall at 1,000 req/s: the merged open-loop percentiles agree
/// with the model of the same global schedule (threads = N·T), within fixed ceilings like
/// docs/validation.md's (crates/cli/tests/validation.rs), and the server's lateness and the
/// generators' dispatch lag stay under theirs. Under CI=true a run during which any shard's
/// control meter reported a p99 over 1 ms is run again, up to three runs, then fails as too noisy.
#[test]
fn a_stall_seen_by_all_shards_matches_the_simulation() {
    let _guard = serial();
    let job = job_manifest();
    let dir = temp_dir("distributed-stall");
    let sets = ["hiccup.at=2s", "hiccup.duration=1s"];
    let load = Load {
        rate: 1000.0,
        duration: Duration::from_secs(5),
        arrival: "constant",
        threads: 1,
    };
    let truth = dir.join("truth.csv");
    let n = job.completions;
    let files: Vec<PathBuf> = (0..n).map(|k| shard_json(&dir, k)).collect();
    let real = on_a_quiet_machine("4 shards, hiccup", || {
        {
            let net = Net::new(job.completions);
            let target = Target::start(&net, "hiccup", &sets, Some(&truth));
            let (shards, start) = start_shards(&job, &net, &target.url, &load, &dir);
            finish(shards, &load, start);
            target.stop();
        }
        let floors: Vec<f64> = files.iter().filter_map(|f| control_floor_ms(f)).collect();
        let floor = floors.into_iter().reduce(f64::max);
        (merge_ok(&files, &dir.join("run.json"), &[]), floor)
    });
    assert_nothing_lost(&real);
    assert_eq!(real.counts.completed, real.counts.scheduled, "all answered");
    // The merge gates like a run: one stall is too few independent stretches to judge
    // p99 < 100 ms (exit 4), and errors < 1% holds.
    let gated = merge(
        &files,
        &dir.join("gated.json"),
        &["--slo", "p99<100ms", "--slo", "errors<1%"],
    );
    let table = String::from_utf8_lossy(&gated.stdout);
    assert_eq!(gated.status.code(), Some(4), "{table}");
    let row = |o: &str| table.lines().find(|l| l.starts_with(o)).unwrap_or_default();
    assert!(row("p99<100ms").contains("TOO FEW SAMPLES"), "{table}");
    assert!(row("errors<1%").contains(" met "), "{table}");

    let senders = (n as usize * load.threads).to_string();
    let sim_json = dir.join("sim.json");
    let mut sim = Command::new(bin());
    sim.args(["sim", "--scenario", "hiccup", "--client", "open"]);
    for s in sets {
        sim.args(["--set", s]);
    }
    sim.args(["--rate", "1000", "--duration", "5s", "--threads", &senders])
        .arg("--json")
        .arg(&sim_json)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let out = Proc::spawn(sim, "sojourn sim").wait(Instant::now() + Duration::from_secs(30));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let model = read_result(&sim_json);
    assert_eq!(
        real.counts.scheduled, model.counts.scheduled,
        "same schedule"
    );

    // What the machine added, each under its ceiling.
    let records = sojourn_scenario::truth::read_csv(std::io::BufReader::new(
        std::fs::File::open(&truth).unwrap(),
    ))
    .unwrap();
    let mut late: Vec<u64> = records
        .iter()
        .map(|r| r.departure.saturating_sub(r.due).as_nanos() as u64)
        .collect();
    let server_late = p99_ms_of(&mut late);
    let p99 = |h: Option<&sojourn_core::result::HistogramSummary>| {
        h.and_then(|h| h.percentiles.get(99.0)).unwrap_or(0) as f64 / 1e6
    };
    let dispatch = p99(real.histograms.dispatch_lag.as_ref());
    let skews: Vec<Option<i64>> = real
        .merged
        .as_ref()
        .unwrap()
        .shards
        .iter()
        .map(|s| s.start_skew_ns)
        .collect();
    println!(
        "stall: server lateness p99 {server_late:.3} ms, dispatch lag p99 {dispatch:.3} ms, start skews (ns) {skews:?}"
    );
    let ceilings = FOUR_SHARDS_HICCUP;
    let mut failures = lateness("4 shards, hiccup", server_late, dispatch, &ceilings);
    failures.extend(agreement(
        "4 shards, hiccup",
        &real.histograms.response,
        &model.histograms.response,
        &ceilings,
        &|_| false,
    ));
    assert!(failures.is_empty(), "{failures:#?}");
    // Every shard saw the stall, and at the same instant: each one's own p99 is in the stall's
    // wedge, not at baseline, and its worst interval is the merged timeline's worst.
    let at = |r: &RunResult, p: f64| r.histograms.response.percentiles.get(p).unwrap() as f64 / 1e6;
    let worst = |r: &RunResult| {
        r.intervals
            .iter()
            .max_by_key(|i| i.max)
            .expect("intervals")
            .start_ns
    };
    for f in &files {
        let r = read_result(f);
        assert!(
            at(&r, 99.0) > 100.0,
            "{}: p99 {:.2} ms: the stall is missing from this shard",
            f.display(),
            at(&r, 99.0)
        );
        assert_eq!(
            worst(&r),
            worst(&real),
            "{}: the stall's interval",
            f.display()
        );
    }
}

// --- a killed shard -------------------------------------------------------------------------

/// Shard 2 is killed mid-run (SIGKILL: no result at all) and shard 1 stopped (SIGTERM, as
/// Kubernetes stops a pod: it writes what it measured). The merge names both, counts their
/// missing share as not measured, and exits 5; with --allow-partial, 0 and the same result.
#[test]
fn a_killed_shard_is_named_and_its_share_counted_not_measured() {
    let _guard = serial();
    let job = job_manifest();
    assert!(
        job.completions >= 3,
        "a shard to kill, one to stop, one to keep"
    );
    let dir = temp_dir("distributed-killed");
    let load = Load {
        rate: 400.0,
        duration: Duration::from_secs(3),
        arrival: "constant",
        threads: 1,
    };
    let (killed, stopped) = (2u32, 1u32);
    {
        let net = Net::new(job.completions);
        let target = Target::start(&net, "healthy", &["healthy.baseline=1ms"], None);
        let (mut shards, start) = start_shards(&job, &net, &target.url, &load, &dir);
        // A second into the schedule.
        let mid = start + Duration::from_secs(1);
        std::thread::sleep(mid.duration_since(SystemTime::now()).unwrap_or_default());
        let k = shards.iter().position(|s| s.index == killed).unwrap();
        let victim = shards.remove(k);
        victim.proc.signal(Signal::KILL);
        let out = victim.proc.wait(Instant::now() + Duration::from_secs(10));
        assert!(!out.status.success(), "killed: {}", out.status);
        let s = shards.iter().position(|s| s.index == stopped).unwrap();
        let stopped_proc = shards.remove(s);
        stopped_proc.proc.signal(Signal::TERM);
        let out = stopped_proc
            .proc
            .wait(Instant::now() + Duration::from_secs(20));
        assert_eq!(
            out.status.code(),
            Some(6),
            "a shard stopped with SIGTERM reports what it measured and exits 6: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        finish(shards, &load, start);
        target.stop();
    }
    assert!(!shard_json(&dir, killed).exists(), "SIGKILL leaves nothing");
    // What the merge Job does: every shard file there is.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("shard-") && name.ends_with(".json")
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), job.completions as usize - 1);

    let schedule = load.schedule();
    let n = job.completions;
    let due = |k: u32| schedule.due_count(Shard::new(k, n).unwrap(), load.threads);
    let short = read_result(&shard_json(&dir, stopped));
    assert!(short.interrupted, "the stopped shard says it was stopped");
    let short_accounted = short.counts.scheduled;
    assert!(
        short_accounted > 0 && short_accounted < due(stopped),
        "stopped a third of the way: {short_accounted} of {}",
        due(stopped)
    );

    let run = dir.join("run.json");
    let out = merge(&files, &run, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(5),
        "a partial merge exits 5: {stderr}"
    );
    assert!(
        stderr.contains(&format!("shard {killed} missing")),
        "names the missing shard: {stderr}"
    );
    assert!(
        stderr.contains(&format!("shard {stopped} short")),
        "names the short shard: {stderr}"
    );
    let merged = read_result(&run);
    assert_nothing_lost(&merged);
    let info = merged.merged.as_ref().unwrap();
    assert!(info.partial);
    let status = |k: u32| info.shards.iter().find(|s| s.index == k).unwrap();
    assert_eq!(status(killed).status, ShardState::Missing);
    assert_eq!(status(killed).accounted, 0);
    assert_eq!(status(killed).due, due(killed), "its share, from the plan");
    assert_eq!(status(stopped).status, ShardState::Short);
    assert_eq!(status(stopped).accounted, short_accounted);
    let others: BTreeSet<u32> = (0..n).filter(|k| ![killed, stopped].contains(k)).collect();
    for k in &others {
        assert_eq!(status(*k).status, ShardState::Complete, "shard {k}");
    }
    assert_eq!(
        merged.counts.not_measured,
        due(killed) + due(stopped) - short_accounted
    );
    assert_eq!(
        merged.counts.scheduled,
        schedule.planned_count().unwrap(),
        "the whole plan, measured or not"
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("missing"),
        "the shard table names it too: {text}"
    );

    let allowed = dir.join("run-allowed.json");
    let out = merge(&files, &allowed, &["--allow-partial"]);
    assert!(
        out.status.success(),
        "--allow-partial exits 0: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("shard {killed} missing")));
    let again = read_result(&allowed);
    assert_eq!(again.counts.not_measured, merged.counts.not_measured);
    assert_eq!(again.merged, merged.merged, "the same accounting");
}

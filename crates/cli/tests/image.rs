//! The image, built on this machine with no container registry, and run as the Kubernetes Job
//! runs it.
//!
//! `scripts/image.sh build` makes the image from the binary this test build made (the script
//! strips its copy; docs/distributed.md gives the size of the release image the same script
//! makes), and `scripts/image.sh run` runs containers with the podman flags this machine needs.
//! The test then plays the Job controller and the kubelet, as distributed.rs does, but with the
//! real image: each completion index runs the container's args from
//! `deploy/kubernetes/job.yaml` in the image, with the container's environment (the manifest's
//! values, the few the test overrides, and `JOB_COMPLETION_INDEX`), the results directory
//! mounted where the manifest mounts its volume, and the target, `sojourn serve` on the host's
//! 127.0.0.1, reached over the host's network. Then `merge-job.yaml`'s command merges the
//! shards in the image, and the test checks the merged counts and who wrote the files.
//!
//! The test passes no `--user`: the image itself must run as the non-root user, wherever it is
//! run. Under `CI=true` it fails if podman cannot run; elsewhere it says SKIPPED.
mod common;
#[path = "common/job.rs"]
mod job;

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{assert_nothing_lost, listening_addr, read_result, temp_dir};
use job::{containerfile, entrypoint, job_manifest, merge_container, repo, JobManifest};
use sojourn_core::placement::ShardState;
use sojourn_core::{Arrival, End, Rate, Schedule};

/// The plan the test puts in the manifest's environment: short, and light for two cores.
const RATE: &str = "400";
const DURATION: Duration = Duration::from_secs(2);
/// From starting the containers to the plan's start: every shard's container is up by then.
const LEAD: Duration = Duration::from_secs(2);
/// The longest any one podman command may take (an import, a container's whole run).
const BOUND: Duration = Duration::from_secs(60);

fn script() -> PathBuf {
    repo().join("scripts/image.sh")
}

/// Why podman cannot run here, if it cannot.
fn podman_unusable() -> Option<String> {
    // The results are checked by the uid that wrote them: as root, podman maps the image's uid
    // to the same number on the host; rootless, it maps it elsewhere.
    let euid = std::fs::metadata("/proc/self").map_or(u32::MAX, |m| m.uid());
    if euid != 0 {
        return Some(format!(
            "not root (uid {euid}): rootless podman maps the image's uids elsewhere"
        ));
    }
    match Command::new("podman").arg("info").output() {
        Err(e) => Some(format!("podman: {e} (apt-get install podman runc)")),
        Ok(o) if !o.status.success() => Some(format!(
            "podman info: {}: {}",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Ok(_) => None,
    }
}

/// A process whose output goes to files; killed and reaped if dropped while running.
struct Bounded {
    child: Child,
    what: String,
    log: PathBuf,
}

impl Bounded {
    fn spawn(mut cmd: Command, what: &str, log: PathBuf) -> Bounded {
        let out = File::create(&log).expect("a log file");
        cmd.stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out);
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}"));
        Bounded {
            child,
            what: what.to_string(),
            log,
        }
    }

    /// Waits for it, at most `BOUND`; its exit status and everything it printed.
    fn wait(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + BOUND;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("waiting") {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "{}: still running after {BOUND:?}",
                self.what
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        (
            status,
            std::fs::read_to_string(&self.log).unwrap_or_default(),
        )
    }

    /// Waits for it and fails unless it exits 0; what it printed.
    fn succeed(self) -> String {
        let what = self.what.clone();
        let (status, log) = self.wait();
        assert!(status.success(), "{what}: {status}\n{log}");
        log
    }
}

impl Drop for Bounded {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The image the test built; removed when the test ends, with any container left of it.
struct Image {
    tag: String,
}

impl Image {
    fn build(binary: &Path, logs: &Path) -> Image {
        let tag = format!("localhost/sojourn-test:{}", std::process::id());
        let mut cmd = Command::new(script());
        cmd.args(["build", "--tag", &tag]).arg(binary);
        let image = Image { tag };
        Bounded::spawn(cmd, "scripts/image.sh build", logs.join("build.log")).succeed();
        image
    }

    /// `scripts/image.sh run --name NAME OPTIONS… IMAGE ARGS…`, started.
    fn run(&self, name: &str, options: &[String], args: &[String], logs: &Path) -> Bounded {
        let mut cmd = Command::new(script());
        cmd.args(["run", "--name", &self.container(name)])
            .args(options)
            .arg(&self.tag)
            .args(args);
        Bounded::spawn(cmd, name, logs.join(format!("{name}.log")))
    }

    fn container(&self, name: &str) -> String {
        format!("sojourn-test-{}-{name}", std::process::id())
    }

    /// `podman image inspect`: the image's config and size.
    fn inspect(&self) -> serde_json::Value {
        let out = Command::new("podman")
            .args(["image", "inspect", "--format", "json", &self.tag])
            .output()
            .expect("podman image inspect");
        assert!(out.status.success(), "podman image inspect {}", self.tag);
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        list[0].clone()
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let prefix = self.container("");
        let _ = Command::new("sh")
            .args([
                "-c",
                "podman ps -aq --filter name=\"^$1\" | xargs -r podman rm -f -t 0",
            ])
            .args(["sh", &prefix])
            .output();
        let _ = Command::new("podman")
            .args(["rmi", "--force", &self.tag])
            .output();
    }
}

/// `sojourn serve` on the host, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The budget docs/distributed.md gives the image.
const SIZE_BUDGET: u64 = 40_000_000;

/// The image's config is what the Containerfile says, its user is the manifest's, it fits the
/// budget, and its own /results is its user's (a named volume mounted there starts as a copy of
/// it, owner included).
fn check_image(image: &Image, job: &JobManifest, logs: &Path) {
    let inspected = image.inspect();
    let config = &inspected["Config"];
    assert_eq!(config["Entrypoint"], serde_json::json!(entrypoint()));
    let cmd: serde_json::Value = serde_json::from_str(&containerfile("CMD")).expect("exec form");
    assert_eq!(config["Cmd"], cmd);
    assert_eq!(config["WorkingDir"], containerfile("WORKDIR").as_str());
    let user = containerfile("USER");
    assert_eq!(config["User"], user.as_str(), "the Containerfile's USER");
    assert_eq!(
        user.split(':').next(),
        Some(job.run_as_user.to_string().as_str()),
        "the Containerfile's user is job.yaml's runAsUser"
    );
    let size = inspected["Size"].as_u64().expect("a size");
    println!(
        "image {}: {size} bytes (the debug binary, stripped)",
        image.tag
    );
    assert!(size < SIZE_BUDGET, "the image is {size} bytes");
    let probe = ["--entrypoint".to_string(), "/bin/sh".to_string()];
    let probe_file = format!("{}/probe", job.value("RESULTS"));
    let script = [
        "-c".to_string(),
        format!(": > {probe_file} && rm {probe_file}"),
    ];
    image.run("probe", &probe, &script, logs).succeed();
}

/// The results volume as Kubernetes prepares it for `fsGroup`: the group's, writable by it,
/// set-group-ID so that what is written in it stays the group's.
fn results_volume(dir: &Path, job: &JobManifest) -> PathBuf {
    let volume = dir.join("results");
    std::fs::create_dir(&volume).unwrap();
    std::os::unix::fs::chown(&volume, None, Some(job.run_as_user)).unwrap();
    std::fs::set_permissions(&volume, std::fs::Permissions::from_mode(0o2775)).unwrap();
    volume
}

/// The plan the shards share: the manifest's arrival, the test's rate and duration.
fn planned(job: &JobManifest) -> u64 {
    let arrival = match job.value("ARRIVAL").as_str() {
        "constant" => Arrival::Constant,
        // The manifest gives no --seed: sojourn's default, 1.
        "poisson" => Arrival::Poisson { seed: 1 },
        other => panic!("job.yaml's ARRIVAL {other}: not known to this test"),
    };
    let rate = Rate::per_second(RATE.parse().unwrap()).unwrap();
    Schedule::new(arrival, rate, End::After(DURATION))
        .unwrap()
        .planned_count()
        .expect("a plan of fixed length")
}

/// Every completion index of the Job, in the image, at once: each exits 0.
fn run_shards(image: &Image, job: &JobManifest, url: &str, volume: &Path, logs: &Path) {
    let start = (SystemTime::now() + LEAD)
        .duration_since(UNIX_EPOCH)
        .unwrap();
    let overrides = [
        ("TARGET", url.to_string()),
        (
            "START_AT",
            format!("{}.{:09}", start.as_secs(), start.subsec_nanos()),
        ),
        ("RATE", RATE.to_string()),
        ("DURATION", format!("{}ms", DURATION.as_millis())),
    ];
    let mount = format!("{}:{}", volume.display(), job.value("RESULTS"));
    let shards: Vec<Bounded> = (0..job.completions)
        .map(|k| {
            let (args, env) = job.container(&overrides, k);
            let mut options = vec!["--volume".to_string(), mount.clone()];
            for (name, value) in env {
                options.extend(["--env".to_string(), format!("{name}={value}")]);
            }
            image.run(&format!("shard-{k}"), &options, &args, logs)
        })
        .collect();
    for shard in shards {
        shard.succeed();
    }
}

/// The merge Job's command, in the image, on the same volume; it must exit 0.
fn run_merge(image: &Image, job: &JobManifest, volume: &Path, logs: &Path) {
    let (command, args) = merge_container();
    let options = [
        "--entrypoint".to_string(),
        serde_json::to_string(&command).unwrap(),
        "--volume".to_string(),
        format!("{}:{}", volume.display(), job.value("RESULTS")),
    ];
    let log = image.run("merge", &options, &args, logs).succeed();
    println!("merge job:\n{log}");
}

/// Written by the image's user, not root: the uid of the process that made the file.
fn assert_written_by(path: &Path, uid: u32) {
    let owner = std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .uid();
    assert_ne!(owner, 0, "{} was written by root", path.display());
    assert_eq!(owner, uid, "{} was written by uid {owner}", path.display());
}

#[test]
fn the_job_runs_in_the_image_built_without_a_registry() {
    if let Some(why) = podman_unusable() {
        // Under CI=true a failure: .ci/run installs podman and runs as root.
        sojourn_testkit::skip(&why);
        return;
    }
    let began = Instant::now();
    let job = job_manifest();
    let dir = temp_dir("image");
    let image = Image::build(Path::new(env!("CARGO_BIN_EXE_sojourn")), &dir);
    let built = began.elapsed();
    check_image(&image, &job, &dir);

    let mut serve = common::spawn(&["serve", "--listen", "127.0.0.1:0"]);
    let addr = listening_addr(&mut serve);
    let _serve = Serve(serve);
    let volume = results_volume(&dir, &job);
    run_shards(&image, &job, &format!("http://{addr}/api"), &volume, &dir);
    run_merge(&image, &job, &volume, &dir);

    let uid = job.run_as_user;
    let mut shards_scheduled = 0;
    for k in 0..job.completions {
        let file = volume.join(format!("shard-{k}.json"));
        assert_written_by(&file, uid);
        let shard = read_result(&file);
        assert_nothing_lost(&shard);
        shards_scheduled += shard.counts.scheduled;
    }
    let merged_file = volume.join("run.json");
    assert_written_by(&merged_file, uid);
    assert_written_by(&volume.join("run.html"), uid);
    let merged = read_result(&merged_file);
    assert_nothing_lost(&merged);
    let c = &merged.counts;
    assert_eq!(c.scheduled, planned(&job), "the merged total is the plan's");
    assert_eq!(
        c.scheduled, shards_scheduled,
        "the shards add up to the merge"
    );
    assert_eq!(c.completed, c.scheduled, "every request answered: {c:?}");
    let info = merged.merged.as_ref().expect("a merge says what it holds");
    assert_eq!(info.shards.len(), job.completions as usize);
    assert!(info.shards.iter().all(|s| s.status == ShardState::Complete));
    println!(
        "image built in {:.1} s; {} shards run and merged in the image in {:.1} s more",
        built.as_secs_f64(),
        job.completions,
        (began.elapsed() - built).as_secs_f64()
    );
}

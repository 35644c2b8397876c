//! The Kubernetes manifests (`deploy/kubernetes/`) and the Containerfile, read as the Job
//! controller, the kubelet and the image builder read them, for the tests that play their part
//! (distributed.rs, image.rs). Included with `#[path]` by those two alone, so that the other
//! test binaries do not compile the YAML reader.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// What the Job controller reads from `job.yaml`.
pub struct JobManifest {
    pub completions: u32,
    pub parallelism: u32,
    /// The container's environment, in order: (name, value).
    pub env: Vec<(String, String)>,
    /// The container's args (the image's entrypoint is `sojourn`).
    pub args: Vec<String>,
    /// The pod's `securityContext.runAsUser`: the image's non-root user.
    pub run_as_user: u32,
}

pub fn yaml_documents(path: &Path) -> Vec<serde_yaml_ng::Value> {
    use serde::Deserialize;
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|doc| {
            serde_yaml_ng::Value::deserialize(doc)
                .unwrap_or_else(|e| panic!("{}: not YAML: {e}", path.display()))
        })
        .collect()
}

pub fn text_at<'a>(v: &'a serde_yaml_ng::Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, key| v.get(*key))?.as_str()
}

pub fn job_manifest() -> JobManifest {
    let path = repo().join("deploy/kubernetes/job.yaml");
    let docs = yaml_documents(&path);
    assert_eq!(docs.len(), 1, "job.yaml holds one Job");
    let job = &docs[0];
    assert_eq!(text_at(job, &["apiVersion"]), Some("batch/v1"));
    assert_eq!(text_at(job, &["kind"]), Some("Job"));
    let spec = &job["spec"];
    assert_eq!(
        text_at(spec, &["completionMode"]),
        Some("Indexed"),
        "an Indexed Job: JOB_COMPLETION_INDEX is the shard"
    );
    assert_eq!(
        spec["backoffLimit"].as_u64(),
        Some(0),
        "a shard is never retried (it would run its slice twice)"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(text_at(pod, &["restartPolicy"]), Some("Never"));
    let containers = pod["containers"].as_sequence().expect("containers");
    assert_eq!(containers.len(), 1, "one container per shard");
    let c = &containers[0];
    assert!(
        c.get("command").is_none(),
        "the image's entrypoint (sojourn) runs the args"
    );
    let strings = |v: &serde_yaml_ng::Value| -> Vec<String> {
        v.as_sequence()
            .expect("a list")
            .iter()
            .map(|a| match a {
                serde_yaml_ng::Value::String(s) => s.clone(),
                other => panic!("args must be strings for Kubernetes, got {other:?}"),
            })
            .collect()
    };
    let env = c["env"]
        .as_sequence()
        .expect("env")
        .iter()
        .map(|e| {
            let name = text_at(e, &["name"]).expect("env name").to_string();
            let value = text_at(e, &["value"])
                .unwrap_or_else(|| panic!("env {name}: a plain value"))
                .to_string();
            (name, value)
        })
        .collect();
    // The results volume is mounted where RESULTS says.
    let mounts = c["volumeMounts"].as_sequence().expect("volumeMounts");
    let volumes = pod["volumes"].as_sequence().expect("volumes");
    let claim = volumes
        .iter()
        .find_map(|v| text_at(v, &["persistentVolumeClaim", "claimName"]))
        .expect("a PVC for the results");
    let pvc = &yaml_documents(&repo().join("deploy/kubernetes/pvc.yaml"))[0];
    assert_eq!(text_at(pvc, &["kind"]), Some("PersistentVolumeClaim"));
    assert_eq!(text_at(pvc, &["metadata", "name"]), Some(claim));
    assert_eq!(
        pvc["spec"]["accessModes"][0].as_str(),
        Some("ReadWriteMany")
    );
    let manifest = JobManifest {
        completions: spec["completions"].as_u64().expect("completions") as u32,
        parallelism: spec["parallelism"].as_u64().expect("parallelism") as u32,
        env,
        args: strings(&c["args"]),
        run_as_user: pod["securityContext"]["runAsUser"]
            .as_u64()
            .expect("securityContext.runAsUser") as u32,
    };
    let results = manifest.value("RESULTS");
    assert!(
        mounts
            .iter()
            .any(|m| text_at(m, &["mountPath"]) == Some(results.as_str())),
        "the results volume is mounted at RESULTS ({results})"
    );
    manifest
}

impl JobManifest {
    pub fn value(&self, name: &str) -> String {
        self.env
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("job.yaml sets no {name}"))
    }

    /// The command line of shard `index`, as the kubelet would run it: the environment is the
    /// manifest's with `overrides` in place of its values (each must be one the manifest sets),
    /// and JOB_COMPLETION_INDEX; every `$(NAME)` in the args must expand.
    pub fn command_line(&self, overrides: &[(&str, String)], index: u32) -> Vec<String> {
        self.container(overrides, index).0
    }

    /// Shard `index`'s args and the environment its process gets (the container's).
    pub fn container(
        &self,
        overrides: &[(&str, String)],
        index: u32,
    ) -> (Vec<String>, BTreeMap<String, String>) {
        let mut env: BTreeMap<String, String> = BTreeMap::new();
        env.insert("JOB_COMPLETION_INDEX".into(), index.to_string());
        for (name, value) in &self.env {
            let value = overrides
                .iter()
                .find(|(n, _)| n == name)
                .map_or_else(|| value.clone(), |(_, v)| v.clone());
            let expanded = expand(&value, &env);
            env.insert(name.clone(), expanded);
        }
        for (name, _) in overrides {
            assert!(
                self.env.iter().any(|(n, _)| n == name),
                "job.yaml sets no {name}"
            );
        }
        let args = self
            .args
            .iter()
            .map(|a| {
                let arg = expand(a, &env);
                assert!(!arg.contains("$("), "{a:?} does not expand: {arg:?}");
                arg
            })
            .collect();
        (args, env)
    }
}

/// Kubernetes' expansion of a container's command, args and env values: `$(NAME)` becomes the
/// variable's value when it is defined and stays as written when not; `$$` is a literal `$`.
pub fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some((name, tail)) = after
            .strip_prefix('(')
            .and_then(|inner| inner.split_once(')'))
        {
            match env.get(name) {
                Some(value) => out.push_str(value),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = tail;
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The image's entrypoint, from the Containerfile: what the args are given to.
pub fn entrypoint() -> Vec<String> {
    serde_json::from_str(&containerfile("ENTRYPOINT"))
        .expect("ENTRYPOINT in exec form, a JSON list")
}

/// What the Containerfile's last `INSTRUCTION` line (of the runtime stage) says.
pub fn containerfile(instruction: &str) -> String {
    let text = std::fs::read_to_string(repo().join("Containerfile")).expect("a Containerfile");
    let line = text
        .lines()
        .rfind(|l| l.split_whitespace().next() == Some(instruction))
        .unwrap_or_else(|| panic!("the Containerfile has no {instruction}"));
    line[instruction.len()..].trim().to_string()
}

/// The merge Job's container (`merge-job.yaml`): its command and its args.
pub fn merge_container() -> (Vec<String>, Vec<String>) {
    let merge = &yaml_documents(&repo().join("deploy/kubernetes/merge-job.yaml"))[0];
    assert_eq!(text_at(merge, &["kind"]), Some("Job"));
    let c = &merge["spec"]["template"]["spec"]["containers"][0];
    let list = |key: &str| -> Vec<String> {
        c[key]
            .as_sequence()
            .unwrap_or_else(|| panic!("merge-job.yaml: {key} is a list"))
            .iter()
            .map(|v| v.as_str().expect("strings").to_string())
            .collect()
    };
    (list("command"), list("args"))
}

//! A registry as the cache of swtbench's images, against a real Distribution registry
//! (`docker-registry`) and the real engine: a fixture instance built and pushed in one output
//! directory, its local images removed, and the same run in a fresh output directory pulls every
//! image, builds none, and writes byte-identical `report.json` files. Then `images check`
//! (present / pull / build), basic auth (right, wrong and missing credentials), and 429 answers
//! that are retried.
//!
//! The images are built on a copy of the fixture base image under a name of this test's own, so
//! their keys are not those the other engine tests share, and they are removed at the end.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use crate::engine_fixture::{
    self, base_image, events, of_kind, reports_under, unique_run_id, workspace,
};
use crate::support::registry::{docker_config, registry_missing, Registry, Throttle};
use serde_json::Value;

const INSTANCE: &str = "swtfix__calc-1";
/// The `--build-files` directory of its repository (`swtfix/calc`).
const REPO_DIR_NAME: &str = "swtfix__calc";

/// Removes the images and the base tag this test made, whatever happens.
struct Cleanup {
    tags: BTreeSet<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        // Children first: instance images, then env images, then the base tag.
        let mut tags: Vec<&String> = self.tags.iter().collect();
        tags.sort_by_key(|t| {
            if t.starts_with("exec.eval.") {
                0
            } else if t.starts_with("exec.env.") {
                1
            } else {
                2
            }
        });
        for t in tags {
            let _ = Command::new("docker").args(["rmi", "-f", t]).output();
        }
    }
}

fn swtbench(args: &[String], envs: &[(&str, &Path)]) -> Output {
    let mut cmd = crate::engine_fixture::swtbench_command();
    cmd.args(args);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    eprintln!(
        "swtbench {}\n--- stderr ---\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn engine_registry_cache_round_trip() {
    require_engine!();
    if let Some(why) = registry_missing() {
        engine_fixture::skip(&why);
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let fx = root.join("fx");
    let made = Command::new("python3")
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(&fx)
        .output()
        .unwrap();
    assert!(made.status.success());

    // Our own base name: our own image keys.
    let base = format!("swtbench-registry-test-{}:bookworm", std::process::id());
    let mut cleanup = Cleanup {
        tags: BTreeSet::from([base.clone()]),
    };
    let tagged = Command::new("docker")
        .args(["tag", &base_image(), &base])
        .status()
        .unwrap();
    assert!(tagged.success());
    let table = root.join("spec-table.toml");
    let text = std::fs::read_to_string(workspace().join("fixtures/benchmark/spec-table.toml"))
        .unwrap()
        .replace(engine_fixture::DEFAULT_BASE_IMAGE, &base);
    std::fs::write(&table, text).unwrap();

    let reg = Registry::start(None);
    let prefix = format!("{}/swt", reg.host());
    let selection = |extra: &[&str]| -> Vec<String> {
        let mut v = strings(&["--dataset"]);
        v.push(fx.join("dataset.jsonl").display().to_string());
        v.extend(strings(&["--instance-ids", INSTANCE, "--repo-mirror"]));
        v.push(fx.join("mirrors").display().to_string());
        v.push("--spec-table".into());
        v.push(table.display().to_string());
        v.extend(strings(extra));
        v
    };
    let run_id = unique_run_id("registry");
    let run_args = |out: &Path, extra: &[&str]| -> Vec<String> {
        let mut v = strings(&["run", "--predictions", "gold", "--run-id", &run_id]);
        v.extend(selection(&[
            "--timeout",
            "60",
            "--cache-level",
            "instance",
            "--registry",
            &prefix,
        ]));
        v.push("--output-dir".into());
        v.push(out.display().to_string());
        v.push("--events".into());
        v.push(out.join("events.jsonl").display().to_string());
        v.extend(strings(extra));
        v
    };

    // 1. Build and push.
    let out1 = root.join("out1");
    let started = std::time::Instant::now();
    let first = swtbench(&run_args(&out1, &["--push"]), &[]);
    assert!(first.status.success(), "first run failed");
    eprintln!("build + push run: {:.1} s", started.elapsed().as_secs_f64());
    let ev1 = events(&out1);
    let built: BTreeSet<String> = ev1
        .iter()
        .filter(|e| e["event"] == "image_ready" && e["outcome"]["kind"] == "built")
        .map(|e| e["tag"].as_str().unwrap().to_string())
        .collect();
    cleanup.tags.extend(built.iter().cloned());
    assert_eq!(built.len(), 2, "an env and an instance image are built");
    let pushed: BTreeSet<String> = of_kind(&ev1, "image_pushed")
        .iter()
        .map(|e| e["tag"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pushed, built, "every built image is pushed");
    eprintln!("registry holds {} bytes", reg.stored_bytes());

    // 2. Without the local images, `images check` sees them in the registry only.
    for t in ["exec.eval.", "exec.env."] {
        for tag in built.iter().filter(|b| b.starts_with(t)) {
            let rm = Command::new("docker").args(["rmi", tag]).output().unwrap();
            assert!(
                rm.status.success(),
                "{}",
                String::from_utf8_lossy(&rm.stderr)
            );
        }
    }
    let mut check = strings(&["images", "check", "--registry", &prefix, "--json"]);
    check.extend(selection(&[]));
    let checked = swtbench(&check, &[]);
    assert!(checked.status.success());
    let rows: Vec<Value> = String::from_utf8_lossy(&checked.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for r in &rows {
        assert_eq!(r["action"], "pull", "{r}");
        assert_eq!(r["local"], false);
        assert!(r["digest"].as_str().unwrap().starts_with("sha256:"), "{r}");
    }
    // The environment flags of `run` address the images `run` would make with them: build files
    // give the instance image another key (the env image is the same), and another provider
    // gives both other keys.
    let checked_with = |flags: &[&str]| -> Vec<Value> {
        let mut check = strings(&["images", "check", "--registry", &prefix, "--json"]);
        check.extend(selection(flags));
        let out = swtbench(&check, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let files = root.join("build-files");
    std::fs::create_dir_all(files.join(REPO_DIR_NAME)).unwrap();
    std::fs::write(files.join(REPO_DIR_NAME).join("extra.txt"), "x\n").unwrap();
    let with_files = checked_with(&["--build-files", files.to_str().unwrap()]);
    let action = |rows: &[Value], kind: &str| -> (String, String) {
        let r = rows.iter().find(|r| r["kind"] == kind).expect(kind);
        (
            r["tag"].as_str().unwrap().to_string(),
            r["action"].as_str().unwrap().to_string(),
        )
    };
    let (env_tag, env_action) = action(&with_files, "env");
    assert!(
        built.contains(&env_tag) && env_action == "pull",
        "{with_files:?}"
    );
    let (inst_tag, inst_action) = action(&with_files, "instance");
    assert!(
        !built.contains(&inst_tag) && inst_action == "build",
        "{with_files:?}"
    );
    let uv = checked_with(&["--env-provider", "uv"]);
    assert!(!uv.is_empty(), "no image selected with --env-provider uv");
    for r in &uv {
        assert!(!built.contains(r["tag"].as_str().unwrap()), "{r}");
        assert_eq!(r["action"], "build", "{r}");
    }

    // 3. The dry run says pull; the run pulls everything and builds nothing.
    let out2 = root.join("out2");
    let dry = swtbench(&run_args(&out2, &["--dry-run"]), &[]);
    assert!(dry.status.success());
    let plan =
        String::from_utf8_lossy(&dry.stderr).to_string() + &String::from_utf8_lossy(&dry.stdout);
    assert_eq!(plan.matches(": pull from ").count(), 2, "{plan}");
    assert!(plan.contains("2 to pull"), "{plan}");
    let started = std::time::Instant::now();
    let cache = root.join("cache");
    let second = swtbench(&run_args(&out2, &[]), &[("SWTBENCH_CACHE_DIR", &cache)]);
    assert!(second.status.success(), "second run failed");
    eprintln!("pull run: {:.1} s", started.elapsed().as_secs_f64());
    let ev2 = events(&out2);
    assert!(
        of_kind(&ev2, "image_build_started").is_empty(),
        "nothing is built"
    );
    let pulled: BTreeSet<String> = ev2
        .iter()
        .filter(|e| e["event"] == "image_ready" && e["outcome"]["kind"] == "pulled")
        .map(|e| e["tag"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(pulled, built, "every image is pulled");
    let finished = of_kind(&ev2, "evaluation_finished");
    assert_eq!(finished[0]["stats"]["images_built"], 0);
    assert_eq!(finished[0]["stats"]["images_pulled"], 2);
    let (r1, r2) = (reports_under(&out1), reports_under(&out2));
    assert!(!r1.is_empty());
    assert_eq!(r1, r2, "report.json files are byte-identical");
    // The local names are the built ones again.
    for tag in &built {
        let ok = Command::new("docker")
            .args(["image", "inspect", tag])
            .output()
            .unwrap();
        assert!(ok.status.success(), "{tag} is there under its own name");
    }

    // `images list` says where they came from.
    let listed = swtbench(
        &strings(&["images", "list", "--json"]),
        &[("SWTBENCH_CACHE_DIR", &cache)],
    );
    assert!(listed.status.success());
    let sources: BTreeSet<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| {
            v["tags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| built.contains(t.as_str().unwrap()))
        })
        .map(|v| v["source"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        sources,
        built
            .iter()
            .map(|t| format!("pulled from {prefix}/{t}"))
            .collect::<BTreeSet<_>>()
    );

    // 4. 429 answers are retried (Retry-After: 1) and the look-ups still succeed.
    let throttle = Throttle::start(reg.port, 3);
    let mut check = strings(&["images", "check", "--json", "--registry"]);
    check.push(format!("127.0.0.1:{}/swt", throttle.port));
    check.push("--events".into());
    check.push(root.join("check-events.jsonl").display().to_string());
    check.extend(selection(&[]));
    let checked = swtbench(&check, &[]);
    assert!(checked.status.success());
    let retries: u64 = String::from_utf8_lossy(&checked.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["retries"]
                .as_u64()
                .unwrap()
        })
        .sum();
    assert_eq!(retries, 3, "each 429 is retried once");
    assert!(String::from_utf8_lossy(&checked.stderr).contains("HTTP 429"));
    let retried: Vec<Value> = std::fs::read_to_string(root.join("check-events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "registry_retry")
        .collect();
    assert_eq!(retried.len(), 3, "{retried:?}");
    assert!(retried
        .iter()
        .all(|e| e["status"] == 429 && e["pause_ms"] == 1000));

    // 5. Basic auth: the right password pushes, a wrong one is a clear error without the secret.
    let secured = Registry::start(Some(("swt", "right-pass")));
    let sprefix = format!("{}/swt", secured.host());
    let good = docker_config(&root.join("dc-good"), &secured.host(), "swt", "right-pass");
    let bad = docker_config(&root.join("dc-bad"), &secured.host(), "swt", "wrong-pass");
    let none = root.join("dc-none");
    std::fs::create_dir_all(&none).unwrap();
    let mut push = strings(&["images", "push", "--registry", &sprefix]);
    push.extend(selection(&[]));
    let pushed = swtbench(&push, &[("DOCKER_CONFIG", &good)]);
    assert!(pushed.status.success(), "push with the right password");
    let mut check = strings(&["images", "check", "--registry", &sprefix, "--json"]);
    check.extend(selection(&[]));
    let ok = swtbench(&check, &[("DOCKER_CONFIG", &good)]);
    assert!(ok.status.success());
    assert_eq!(
        String::from_utf8_lossy(&ok.stdout)
            .matches("\"registry\":true")
            .count(),
        2
    );
    let wrong = swtbench(&check, &[("DOCKER_CONFIG", &bad)]);
    assert!(!wrong.status.success());
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains("rejected the credentials of user \"swt\""),
        "{err}"
    );
    assert!(
        !err.contains("wrong-pass"),
        "the secret is never printed: {err}"
    );
    let missing = swtbench(&check, &[("DOCKER_CONFIG", &none)]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("asks for credentials"),
        "no credentials is a clear error"
    );

    let left = Command::new("docker")
        .args(["ps", "-a", "-q", "--filter"])
        .arg(format!("label=swtbench.run_id={run_id}"))
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "no container is left behind");
}

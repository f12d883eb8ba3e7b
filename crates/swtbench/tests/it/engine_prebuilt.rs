//! Prebuilt instance images in SWE-bench's layout (`run --instance-image TEMPLATE`), against a real
//! Distribution registry (`docker-registry`) and the real engine.
//!
//! A fixture instance is first evaluated on images swtbench builds. Then two images in
//! SWE-bench's layout are made from its instance image (conda cannot be reached here, so
//! `/opt/miniconda3/bin/activate` is a small shim whose `conda activate testbed` activates the
//! image's virtual environment): a good one, and one whose `/testbed` is at another commit. Both
//! are pushed under SWE-bench's Docker Hub spelling (`sweb.eval.x86_64.<id with __ as _1776_>`)
//! and removed locally, as are the built images. A run with the template pulls the good image,
//! builds nothing and writes byte-identical `report.json` files; a dry run after it reuses every
//! run (the key's digest is the same before and after the pull); a run on the other image fails
//! the instance with the commit it found and grades nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use crate::engine_fixture::{
    self, base_image, containers_of, docker_build, events, of_kind, reports_under, unique_run_id,
    workspace,
};
use crate::support::registry::{registry_missing, Registry};
use serde_json::Value;

const INSTANCE: &str = "swtfix__calc-1";
const SWEB_NAME: &str = "sweb.eval.x86_64.swtfix_1776_calc-1:latest";

/// `conda activate testbed` as SWE-bench's images have it, over the image's virtual environment.
const ACTIVATE_SHIM: &str = r#"# conda shim for tests: `conda activate testbed` activates /opt/swtbench-venv
conda() {
  if [ "$1" = activate ] && [ "$2" = testbed ]; then
    source /opt/swtbench-venv/bin/activate
  else
    echo "conda shim: only conda activate testbed is known" >&2
    return 1
  fi
}
"#;

/// Removes the images this test made, whatever happens (children first: the order given).
struct Cleanup {
    tags: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for t in self.tags.iter().rev() {
            let _ = Command::new("docker").args(["rmi", "-f", t]).output();
        }
    }
}

fn swtbench(args: &[String]) -> Output {
    let out = crate::engine_fixture::swtbench_command()
        .args(args)
        .output()
        .unwrap();
    eprintln!(
        "swtbench {}\n--- stderr ---\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn docker(args: &[&str]) -> Output {
    let out = Command::new("docker").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "docker {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn image_size(tag: &str) -> u64 {
    let out = docker(&["image", "inspect", "--format", "{{.Size}}", tag]);
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

#[test]
fn engine_prebuilt_instance_images() {
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
    let base = format!("swtbench-prebuilt-test-{}:bookworm", std::process::id());
    let mut cleanup = Cleanup {
        tags: vec![base.clone()],
    };
    docker(&["tag", &base_image(), &base]);
    let table = root.join("spec-table.toml");
    let text = std::fs::read_to_string(workspace().join("fixtures/benchmark/spec-table.toml"))
        .unwrap()
        .replace(engine_fixture::DEFAULT_BASE_IMAGE, &base);
    std::fs::write(&table, text).unwrap();

    let run_id = unique_run_id("prebuilt");
    let run_args = |out: &Path, extra: &[&str]| -> Vec<String> {
        let mut v = strings(&["run", "--predictions", "gold", "--run-id", &run_id]);
        v.push("--dataset".into());
        v.push(fx.join("dataset.jsonl").display().to_string());
        v.extend(strings(&["--instance-ids", INSTANCE, "--timeout", "60"]));
        v.push("--spec-table".into());
        v.push(table.display().to_string());
        v.push("--output-dir".into());
        v.push(out.display().to_string());
        v.push("--events".into());
        v.push(out.join("events.jsonl").display().to_string());
        v.extend(strings(extra));
        v
    };

    // 1. On built images (kept: the prebuilt ones are made from the instance image).
    let out1 = root.join("out1");
    let mirrors = fx.join("mirrors").display().to_string();
    let first = swtbench(&run_args(
        &out1,
        &["--repo-mirror", &mirrors, "--cache-level", "instance"],
    ));
    assert!(first.status.success(), "the run on built images failed");
    let ev1 = events(&out1);
    let built: Vec<(String, String)> = ev1
        .iter()
        .filter(|e| e["event"] == "image_ready" && e["outcome"]["kind"] == "built")
        .map(|e| {
            (
                e["kind"].as_str().unwrap().to_string(),
                e["tag"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let env_tag = built.iter().find(|(k, _)| k == "env").unwrap().1.clone();
    let instance_tag = built
        .iter()
        .find(|(k, _)| k == "instance")
        .unwrap()
        .1
        .clone();
    cleanup.tags.push(env_tag.clone());
    cleanup.tags.push(instance_tag.clone());

    // 2. Two images in SWE-bench's layout, pushed under SWE-bench's names, removed locally.
    let reg = Registry::start(None);
    let good = format!("{}/swebench/{SWEB_NAME}", reg.host());
    let other = format!("{}/othercommit/{SWEB_NAME}", reg.host());
    cleanup.tags.push(good.clone());
    cleanup.tags.push(other.clone());
    let shim = ACTIVATE_SHIM.replace('\n', "\\n");
    assert!(docker_build(
        &good,
        &format!(
            "FROM {instance_tag}\nRUN mkdir -p /opt/miniconda3/bin && printf '{shim}' > /opt/miniconda3/bin/activate\n"
        ),
    ));
    assert!(docker_build(
        &other,
        &format!(
            "FROM {good}\nRUN git -C /testbed -c user.name=t -c user.email=t@t commit -q --allow-empty -m 'another commit'\n"
        ),
    ));
    eprintln!(
        "image sizes: instance {} B, prebuilt {} B",
        image_size(&instance_tag),
        image_size(&good)
    );
    // The layout check as the product runs it, timed on the engine directly.
    let started = Instant::now();
    let check = docker(&[
        "run",
        "--rm",
        "--network",
        "none",
        &good,
        "/bin/bash",
        "-c",
        swtbench_plan::prebuilt::LAYOUT_SCRIPT,
    ]);
    eprintln!(
        "layout check (docker run --rm): {:.2} s: {}",
        started.elapsed().as_secs_f64(),
        String::from_utf8_lossy(&check.stdout).trim()
    );
    for t in [&good, &other] {
        docker(&["push", "-q", t]);
    }
    for t in [&other, &good, &instance_tag, &env_tag] {
        docker(&["rmi", t]);
    }

    // 3. The dry run says where the image comes from; the run pulls it and builds nothing.
    let template = format!(
        "{}/swebench/sweb.eval.x86_64.{{id_1776}}:latest",
        reg.host()
    );
    let out2 = root.join("out2");
    let dry = swtbench(&run_args(
        &out2,
        &["--instance-image", &template, "--dry-run"],
    ));
    assert!(dry.status.success());
    let plan =
        String::from_utf8_lossy(&dry.stdout).to_string() + &String::from_utf8_lossy(&dry.stderr);
    assert!(
        plan.contains(&format!(
            "on prebuilt image {good} (to pull; keys hold prebuilt@sha256:"
        )),
        "{plan}"
    );
    assert!(plan.contains("1 prebuilt (1 to pull)"), "{plan}");
    let started = Instant::now();
    let second = swtbench(&run_args(&out2, &["--instance-image", &template]));
    eprintln!(
        "run on the prebuilt image (pull, layout check, six runs): {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        second.status.success(),
        "the run on the prebuilt image failed"
    );
    let ev2 = events(&out2);
    assert!(
        of_kind(&ev2, "image_build_started").is_empty(),
        "nothing is built"
    );
    let pulled: Vec<&Value> = ev2
        .iter()
        .filter(|e| e["event"] == "image_ready" && e["outcome"]["kind"] == "pulled")
        .collect();
    assert_eq!(pulled.len(), 1, "the prebuilt image is pulled once");
    assert_eq!(pulled[0]["tag"], good.as_str());
    eprintln!(
        "pull of the prebuilt image: {} ms, {} bytes",
        pulled[0]["outcome"]["duration_ms"], pulled[0]["outcome"]["bytes"]
    );
    let (r1, r2) = (reports_under(&out1), reports_under(&out2));
    assert!(!r1.is_empty());
    assert_eq!(r1, r2, "report.json files are byte-identical");
    assert!(
        containers_of(&run_id).is_empty(),
        "the layout check's container is gone"
    );
    // The eval scripts activated the environment as on SWE-bench's images.
    let eval =
        std::fs::read_to_string(walk_find(&out2, "eval.sh").expect("an eval.sh in the run's logs"))
            .unwrap();
    assert!(eval.contains("conda activate testbed"), "{eval}");

    // 4. Pulled now: the digest in the keys is the same, every run is reused.
    let again = swtbench(&run_args(
        &out2,
        &["--instance-image", &template, "--dry-run"],
    ));
    assert!(again.status.success());
    let plan = String::from_utf8_lossy(&again.stdout).to_string()
        + &String::from_utf8_lossy(&again.stderr);
    assert!(
        plan.contains("(present; keys hold prebuilt@sha256:"),
        "{plan}"
    );
    assert!(plan.contains("0 to execute, 6 reused"), "{plan}");

    // 4b. The image named by the dataset row's `image_name` column: the same image, the same keys.
    let rows = std::fs::read_to_string(fx.join("dataset.jsonl")).unwrap();
    let named: Vec<String> = rows
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["instance_id"] == INSTANCE {
                v["image_name"] = Value::String(good.clone());
            }
            v.to_string()
        })
        .collect();
    let named_dataset = root.join("named.jsonl");
    std::fs::write(&named_dataset, named.join("\n") + "\n").unwrap();
    let mut from_row = run_args(&out2, &["--instance-image", "dataset", "--dry-run"]);
    let at = from_row.iter().position(|a| a == "--dataset").unwrap();
    from_row[at + 1] = named_dataset.display().to_string();
    let by_row = swtbench(&from_row);
    assert!(by_row.status.success());
    let plan = String::from_utf8_lossy(&by_row.stdout).to_string()
        + &String::from_utf8_lossy(&by_row.stderr);
    assert!(
        plan.contains(&format!("on prebuilt image {good} (present;")),
        "{plan}"
    );
    assert!(plan.contains("0 to execute, 6 reused"), "{plan}");

    // 5. /testbed at another commit: the instance fails with what was found, nothing is graded.
    let bad_template = format!(
        "{}/othercommit/sweb.eval.x86_64.{{id_1776}}:latest",
        reg.host()
    );
    let out3 = root.join("out3");
    let third = swtbench(&run_args(&out3, &["--instance-image", &bad_template]));
    assert!(
        !third.status.success(),
        "an instance that failed fails the run"
    );
    let stderr = String::from_utf8_lossy(&third.stderr);
    assert!(
        stderr.contains(&format!(
            "prebuilt image {other} is not in SWE-bench's layout"
        )) && stderr.contains("/testbed is at commit")
            && stderr.contains("the instance's base_commit is"),
        "{stderr}"
    );
    assert!(reports_under(&out3).is_empty(), "nothing is graded");
    let ev3 = events(&out3);
    assert!(
        of_kind(&ev3, "run_finished").is_empty(),
        "no run on the other image"
    );
    assert!(containers_of(&run_id).is_empty());
    drop(cleanup);
}

fn walk_find(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(f) = walk_find(&p, name) {
                return Some(f);
            }
        } else if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
    }
    None
}

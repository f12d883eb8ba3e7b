//! A missing Python image of `--env-provider uv` is pulled, with the registry credentials of
//! Docker's config file, instead of the instance being skipped: a stand-in Python image is pushed
//! to a real Distribution registry on loopback behind basic auth and removed locally; `run
//! --dry-run` says it would pull it, and the run pulls it, builds on it and resolves the fixture
//! instance. `images build` pulls it the same way. A Python image that is neither local nor in its
//! registry skips the instance with a reason naming `swtbench images python` (`run`), or fails its
//! images with one (`images build`).
//!
//! Needs Docker, the fixture base image and `docker-registry`; without them it says why it is
//! skipped. Everything it makes (images, the registry) is removed at its end.

use std::process::Command;

use crate::engine_fixture::{self, *};
use crate::support::registry::{docker_config, registry_missing, Registry};

struct Untag(Vec<String>);

impl Drop for Untag {
    fn drop(&mut self) {
        for t in &self.0 {
            let _ = Command::new("docker").args(["rmi", "-f", t]).output();
        }
    }
}

fn docker_with_config(config: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new("docker")
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn engine_a_missing_python_image_is_pulled_with_the_configs_credentials() {
    require_engine!();
    if let Some(why) = registry_missing() {
        engine_fixture::skip(&why);
        return;
    }
    let fx = Fixture::new();
    let reg = Registry::start(Some(("swt", "py-pass")));
    let config = docker_config(
        &fx.root.join("docker-config"),
        &reg.host(),
        "swt",
        "py-pass",
    );
    let repo = format!("{}/py/python", reg.host());
    let image = format!("{repo}:3.11-slim-bookworm");
    let template = format!("{repo}:{{version}}-slim-bookworm");
    let mut cleanup = Untag(vec![image.clone()]);
    let dockerfile = format!(
        "FROM {}\nRUN rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -sf /usr/bin/python3 /usr/local/bin/python\nLABEL swtbench.test=python-pull\n",
        base_image()
    );
    assert!(docker_build(&image, &dockerfile), "building the stand-in");
    let push = docker_with_config(&config, &["push", &image]);
    assert!(
        push.status.success(),
        "{}",
        String::from_utf8_lossy(&push.stderr)
    );
    let rmi = Command::new("docker")
        .args(["rmi", &image])
        .output()
        .unwrap();
    assert!(rmi.status.success());

    let run_id = unique_run_id("pypull");
    let out_dir = fx.root.join("out");
    let flags = [
        "--env-provider",
        "uv",
        "--python-image",
        template.as_str(),
        "--instance-ids",
        "swtfix__calc-1",
    ];
    let mut args = fx.run_args(&run_id, &out_dir, "predictions.jsonl", &flags);
    let run_with = |extra: &[&str]| {
        let mut cmd = crate::engine_fixture::swtbench_command();
        cmd.args(&args).args(extra).env("DOCKER_CONFIG", &config);
        cmd.output().unwrap()
    };
    let dry = run_with(&["--dry-run"]);
    let dry_err = String::from_utf8_lossy(&dry.stderr).to_string();
    let still_missing = !Command::new("docker")
        .args(["image", "inspect", &image])
        .output()
        .unwrap()
        .status
        .success();

    let real = run_with(&[]);
    let real_err = String::from_utf8_lossy(&real.stderr).to_string();
    let pulled = Command::new("docker")
        .args(["image", "inspect", "-f", "{{.Id}}", &image])
        .output()
        .unwrap();
    // The env and instance images this run built go too.
    for e in events(&out_dir) {
        if let Some(tag) = e["tag"].as_str() {
            if tag.starts_with("exec.") {
                cleanup.0.insert(0, tag.to_string());
            }
        }
    }
    let report = read_report(&out_dir, &run_id, "swtfix__calc-1");

    // `images build` pulls it too (its base level is the Python image).
    let images_build = |config: &std::path::Path, out: &str| {
        let _ = Command::new("docker").args(["rmi", "-f", &image]).output();
        crate::engine_fixture::swtbench_command()
            .args([
                "images",
                "build",
                "--dataset",
                &fx.dataset(),
                "--repo-mirror",
            ])
            .arg(fx.mirrors())
            .arg("--spec-table")
            .arg(spec_table())
            .args(["--level", "base", "--output-dir"])
            .arg(fx.root.join(out))
            .args(flags)
            .env("DOCKER_CONFIG", config)
            .output()
            .unwrap()
    };
    let built = images_build(&config, "images-build");
    let built_err = String::from_utf8_lossy(&built.stderr).to_string();
    let built_pulled = Command::new("docker")
        .args(["image", "inspect", &image])
        .output()
        .unwrap()
        .status
        .success();

    // Wrong credentials: not pulled, the instance is skipped with the reason.
    let _ = Command::new("docker").args(["rmi", "-f", &image]).output();
    let bad = docker_config(&fx.root.join("bad-config"), &reg.host(), "swt", "wrong");
    args = fx.run_args(
        &unique_run_id("pypull-bad"),
        &fx.root.join("out-bad"),
        "predictions.jsonl",
        &flags,
    );
    let refused = crate::engine_fixture::swtbench_command()
        .args(&args)
        .env("DOCKER_CONFIG", &bad)
        .output()
        .unwrap();
    let refused_err = String::from_utf8_lossy(&refused.stderr).to_string();
    let build_refused = images_build(&bad, "images-build-bad");
    let build_refused_err = String::from_utf8_lossy(&build_refused.stderr).to_string();
    drop(cleanup);

    assert!(dry.status.success(), "{dry_err}");
    assert!(
        dry_err.contains(&format!(
            "the Python image {image} is not local; a run pulls it"
        )),
        "{dry_err}"
    );
    assert!(still_missing, "a dry run pulled the image");
    assert_eq!(real.status.code(), Some(0), "{real_err}");
    assert!(
        real_err.contains(&format!("pulled the Python image {image}")),
        "{real_err}"
    );
    assert!(
        pulled.status.success(),
        "the image is not local after the run"
    );
    let report = report.expect("report.json of swtfix__calc-1");
    assert!(report.resolved, "{real_err}");
    assert_eq!(built.status.code(), Some(0), "{built_err}");
    assert!(
        built_err.contains(&format!("pulled the Python image {image}")),
        "{built_err}"
    );
    assert!(built_pulled, "the image is not local after images build");
    assert_ne!(build_refused.status.code(), Some(0), "{build_refused_err}");
    assert!(
        build_refused_err.contains(&format!(
            "the Python image {image} is not local and could not be pulled"
        )) && build_refused_err.contains("`swtbench images python VERSION` for a Python image"),
        "{build_refused_err}"
    );
    assert!(
        refused_err.contains(&format!(
            "the Python image {image} is not local and could not be pulled"
        )) && refused_err.contains("`swtbench images python"),
        "{refused_err}"
    );
    assert!(
        refused_err.contains("skipped") || refused_err.contains("does not exist"),
        "{refused_err}"
    );
}

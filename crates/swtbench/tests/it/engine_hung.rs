//! `swtbench run` against a container engine that stops answering in the middle of a run.
//!
//! A Unix-socket proxy (`swtbench-backend/tests/support/socket_proxy.rs`) sits between swtbench (`DOCKER_HOST=unix://<proxy>`) and
//! `/var/run/docker.sock`. Switched to holding, it keeps every connection open and forwards
//! nothing, in either direction, as a hung daemon does. The tests switch it while the fixture's
//! never-ending test (`swtfix__calc-7`) runs, which prints nothing, so only the liveness probe can
//! tell the hang from a quiet test:
//!
//! - the run ends by itself with exit code 3, the finished instance graded, the run report
//!   written, within the documented bound (here with small deadlines,
//!   `SWTBENCH_ENGINE_DEADLINE_SECS`/`SWTBENCH_ENGINE_QUIET_SECS`; `SWTBENCH_HUNG_TEST_DEFAULTS=1`
//!   runs it with the default ones to measure the bound that users get);
//! - one Ctrl-C ends the run within seconds (default deadlines), naming the container it could not
//!   remove.
//!
//! Afterwards the proxy resumes and every container of the run id is removed through the real
//! socket. The times are printed. Needs Docker and the fixture base image (`scripts/base-image`);
//! without them each test says why it is skipped. Test names start with `engine_` so nextest's
//! docker group limits how many run at once.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::engine_fixture::{self, *};
use crate::support::socket_proxy::{Proxy, ENGINE_SOCKET};
use serde_json::Value;

fn docker(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The proxy needs the engine's socket on this machine.
fn socket_missing() -> Option<String> {
    (!Path::new(ENGINE_SOCKET).exists())
        .then(|| format!("the proxy needs the engine at {ENGINE_SOCKET}"))
}

macro_rules! require_engine_socket {
    () => {
        require_engine!();
        if let Some(why) = socket_missing() {
            engine_fixture::skip(&why);
            return;
        }
    };
}

// ---------------------------------------------------------------------------------------------
// The proxy

// ---------------------------------------------------------------------------------------------
// The run

/// `swtbench run` on `ids`, one worker, a 600 s timeout (only the engine or a signal ends the
/// hanging test), through `proxy`; stderr goes to `out/stderr.txt`.
fn spawn_through(
    fx: &Fixture,
    run_id: &str,
    out: &Path,
    ids: &str,
    proxy: &Proxy,
    env: &[(&str, &str)],
) -> Child {
    std::fs::create_dir_all(out).unwrap();
    let stderr = std::fs::File::create(out.join("stderr.txt")).unwrap();
    let mut cmd = crate::engine_fixture::swtbench_command();
    cmd.args(["run", "--dataset", &fx.dataset()])
        .arg("--predictions")
        .arg(fx.data.join("predictions.jsonl"))
        .args(["--repo-mirror", &fx.mirrors()])
        .arg("--spec-table")
        .arg(spec_table())
        .args(["--run-id", run_id])
        .arg("--output-dir")
        .arg(out)
        .args(["--instance-ids", ids])
        .args(["--timeout", "600", "--max-workers", "1"])
        .args(["--cache-level", "instance", "--no-coverage", "--no-html"])
        .arg("--events")
        .arg(out.join("events.jsonl"))
        .env("DOCKER_HOST", proxy.host())
        .env_remove("SWTBENCH_ENGINE_DEADLINE_SECS")
        .env_remove("SWTBENCH_ENGINE_QUIET_SECS")
        .stdout(Stdio::null())
        .stderr(stderr);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Resumes the proxy and removes every container of the run id, whatever the test's result.
struct Cleanup<'a> {
    proxy: &'a Proxy,
    run_id: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        self.proxy.resume();
        for id in containers_of(&self.run_id) {
            docker(&["rm", "-f", &id]);
        }
    }
}

/// Waits until the fixture's never-ending test runs in a container of the run; its id.
fn wait_for_the_hanging_test(child: &mut Child, run_id: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "the hanging test did not start");
        assert!(child.try_wait().unwrap().is_none(), "swtbench ended early");
        let hanging = containers_of(run_id).into_iter().find(|id| {
            docker(&["top", id, "-eo", "pid,args"]).is_some_and(|ps| ps.contains("test_model_hang"))
        });
        if let Some(id) = hanging {
            return id;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn run_report(out: &Path, run_id: &str) -> Value {
    let path = out
        .join("evaluation_results")
        .join(format!("{MODEL_DIR}.{run_id}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("no run report at {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn stderr_of(out: &Path) -> String {
    std::fs::read_to_string(out.join("stderr.txt")).unwrap_or_default()
}

#[test]
fn engine_hung_mid_run_ends_with_exit_code_3_and_a_run_report() {
    require_engine_socket!();
    let fx = Fixture::new();
    let run_id = unique_run_id("hung");
    let proxy = Proxy::start(fx.root.join("engine.sock"));
    let _cleanup = Cleanup {
        proxy: &proxy,
        run_id: run_id.clone(),
    };
    let out = fx.root.join("out");
    // Small deadlines keep the test short; the bound they give is the documented one:
    // quiet + probe (the exec) + probe (the removal of its container) + probe (the runner's
    // check) + the clean-up's probe, + slack.
    let defaults = std::env::var("SWTBENCH_HUNG_TEST_DEFAULTS").is_ok_and(|v| v == "1");
    let (env, bound): (Vec<(&str, &str)>, Duration) = if defaults {
        (Vec::new(), Duration::from_secs(90))
    } else {
        (
            vec![
                ("SWTBENCH_ENGINE_DEADLINE_SECS", "10"),
                ("SWTBENCH_ENGINE_QUIET_SECS", "5"),
            ],
            Duration::from_secs(45),
        )
    };
    // calc-1 finishes first (one worker, plan order); calc-7's model test never ends.
    let mut child = spawn_through(
        &fx,
        &run_id,
        &out,
        "swtfix__calc-1,swtfix__calc-7",
        &proxy,
        &env,
    );
    wait_for_the_hanging_test(&mut child, &run_id);
    proxy.hang();
    let hung = Instant::now();
    let status = wait_exit(&mut child, bound + Duration::from_secs(30));
    let took = hung.elapsed();
    let stderr = stderr_of(&out);
    eprintln!("{stderr}");
    eprintln!(
        "engine hung → swtbench exited with {:?} after {took:.1?} ({} deadlines)",
        status.code(),
        if defaults { "default" } else { "small" }
    );
    assert_eq!(status.code(), Some(3), "exit code 3: environment fault");
    assert!(
        took < bound,
        "exited {took:?} after the hang (bound {bound:?})"
    );
    assert!(stderr.contains("stopped answering"), "{stderr}");
    // What happened in which order (shown when an assertion below fails).
    for line in std::fs::read_to_string(out.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.contains("\"instance_phase\"")
                || l.contains("\"run_finished\"")
                || l.contains("\"instance_finished\"")
        })
    {
        eprintln!("{line}");
    }
    let report = run_report(&out, &run_id);
    let graded = report["resolved_instances"].as_u64().unwrap()
        + report["unresolved_instances"].as_u64().unwrap();
    assert_eq!(graded, 1, "calc-1 is graded: {report}");
    assert!(
        report["resolved_ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == "swtfix__calc-1"),
        "{report}"
    );
    assert!(
        report["error_reasons"]["swtfix__calc-7"].is_string(),
        "calc-7 is listed as not evaluated: {report}"
    );
    assert!(out
        .join("run_instance_swt_logs")
        .join(&run_id)
        .join(MODEL_DIR)
        .join("swtfix__calc-1/report.json")
        .is_file());
}

#[test]
fn engine_hung_then_one_ctrl_c_exits_within_seconds() {
    require_engine_socket!();
    let fx = Fixture::new();
    let run_id = unique_run_id("hung-sigint");
    let proxy = Proxy::start(fx.root.join("engine.sock"));
    let _cleanup = Cleanup {
        proxy: &proxy,
        run_id: run_id.clone(),
    };
    let out = fx.root.join("out");
    // Default deadlines: the probe would notice the hang only after 30 s of silence.
    let mut child = spawn_through(&fx, &run_id, &out, "swtfix__calc-7", &proxy, &[]);
    let container = wait_for_the_hanging_test(&mut child, &run_id);
    proxy.hang();
    std::thread::sleep(Duration::from_secs(1));
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let interrupted = Instant::now();
    let status = wait_exit(&mut child, Duration::from_secs(60));
    let took = interrupted.elapsed();
    let stderr = stderr_of(&out);
    eprintln!("{stderr}");
    eprintln!(
        "engine hung, one Ctrl-C → swtbench exited with {:?} after {took:.1?}",
        status.code()
    );
    assert_eq!(status.code(), Some(130));
    assert!(
        took < Duration::from_secs(15),
        "exited {took:?} after one Ctrl-C"
    );
    // The container could not be removed: the warning names it, its labels and the command.
    assert!(stderr.contains(&container[..12]), "{stderr}");
    assert!(
        stderr.contains(&format!("swtbench clean --run-id {run_id}")),
        "{stderr}"
    );
    let report = run_report(&out, &run_id);
    assert!(
        report["unstopped_containers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c
                .as_str()
                .is_some_and(|c| container.starts_with(c) || c.starts_with(&container[..12]))),
        "{report}"
    );
    // With the engine back, `swtbench clean` removes what the run left.
    proxy.resume();
    let clean = crate::engine_fixture::swtbench_command()
        .args(["clean", "--run-id", &run_id])
        .env("DOCKER_HOST", proxy.host())
        .output()
        .unwrap();
    eprintln!(
        "swtbench clean:\n{}{}",
        String::from_utf8_lossy(&clean.stdout),
        String::from_utf8_lossy(&clean.stderr)
    );
    assert_eq!(
        clean.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&clean.stderr)
    );
    // The removal the proxy held is forwarded on resume, so the engine may still be at it.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !containers_of(&run_id).is_empty() {
        assert!(Instant::now() < deadline, "clean removed them");
        std::thread::sleep(Duration::from_millis(200));
    }
}

//! What swtbench processes that end without cleaning up leave on the engine and on disk, and who
//! removes it, on the real engine with the fixture benchmark:
//!
//! - two runs killed with SIGKILL, one while a commit build's container builds its env image, one
//!   while a test runs (its `test_output.txt` half written): the next run, and separately
//!   `swtbench clean`, remove exactly their containers and the half-written file, and say what
//!   they were and who left them;
//! - Ctrl-C (SIGINT) during a commit build and during a test run: nothing of the process remains;
//! - a live run's containers are left alone by another process's sweep (`clean`, another run).
//!
//! Each test starts swtbench under a host name of its own (a UTS namespace, `unshare --uts`):
//! every container names its owner as `<host>/<pid>/<start>`, so the sweeps of the other
//! processes on the engine (other tests, an evaluation campaign) see another machine's
//! containers and leave them alone, while the processes a test starts under the same name judge
//! them by this machine's `/proc`, as processes of one machine do.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::engine_fixture::*;
use crate::engine_serve::temporary_files;
use crate::support::binary;

fn docker(args: &[&str]) -> Option<String> {
    let out = Command::new("docker").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Why a test cannot start processes under a host name of their own here, if it cannot.
pub(crate) fn no_uts_namespace() -> Option<String> {
    let ok = Command::new("unshare")
        .args(["--uts", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then(|| "`unshare --uts` is not permitted here (needs root or CAP_SYS_ADMIN)".into())
}

macro_rules! require_engine_and_uts {
    () => {
        require_engine!();
        if let Some(why) = no_uts_namespace() {
            skip(&why);
            return;
        }
    };
}

/// A host name no other test uses.
pub(crate) fn test_host(name: &str) -> String {
    format!("swt-{name}-{}", std::process::id())
}

/// `swtbench <args>` under `host` (hermetic, with what image builds need). `unshare` and `sh`
/// exec swtbench, so the child's pid is swtbench's.
fn under(host: &str, args: &[String]) -> Command {
    let mut cmd = Command::new("unshare");
    binary::with_build_network(binary::hermetic(&mut cmd));
    cmd.args([
        "--uts",
        "sh",
        "-c",
        "hostname \"$0\" && exec \"$@\"",
        host,
        bin(),
    ])
    .args(args);
    cmd
}

pub(crate) fn spawn_under(host: &str, args: &[String]) -> Child {
    under(host, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

pub(crate) fn run_under(host: &str, args: &[String]) -> Output {
    let out = under(host, args).output().unwrap();
    eprintln!(
        "[{host}] swtbench {}\n--- stdout ---\n{}--- stderr ---\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A container as the engine lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Listed {
    id: String,
    name: String,
    owner: String,
    image_label: String,
    run: String,
}

/// Every container whose owner is on `host` (`pid`: of that process only).
fn owned(host: &str, pid: Option<u32>) -> Vec<Listed> {
    let format = "{{.ID}}\t{{.Names}}\t{{.Label \"swtbench.session\"}}\t{{.Label \"swtbench.image\"}}\t{{.Label \"swtbench.run\"}}";
    // An owner is `<host>@pidns<inode>/<pid>/<start>` (`<host>/<pid>/<start>` where the pid
    // namespace cannot be read).
    let owned_by = |owner: &str| {
        let mut parts = owner.split('/');
        let machine = parts.next().unwrap_or_default();
        let on_host = machine == host || machine.starts_with(&format!("{host}@pidns"));
        on_host && pid.is_none_or(|p| parts.next() == Some(p.to_string().as_str()))
    };
    docker(&[
        "ps",
        "-a",
        "--no-trunc",
        "--filter",
        "label=swtbench.session",
        "--format",
        format,
    ])
    .unwrap_or_default()
    .lines()
    .filter_map(|l| {
        let f: Vec<&str> = l.split('\t').collect();
        (f.len() == 5 && owned_by(f[2])).then(|| Listed {
            id: f[0].into(),
            name: f[1].into(),
            owner: f[2].into(),
            image_label: f[3].into(),
            run: f[4].into(),
        })
    })
    .collect()
}

/// Removes, whatever the test's result, every container of the test's host, and the base image
/// of its own with what a cancelled build of it left.
struct Cleanup {
    host: String,
    base: Option<(String, String)>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in owned(&self.host, None) {
            docker(&["rm", "-f", &c.id]);
        }
        if let Some((base, label)) = &self.base {
            let filter = format!("label={label}");
            docker(&["image", "prune", "-f", "--filter", &filter]);
            docker(&["rmi", "-f", base]);
        }
    }
}

/// A base image of the test's own (the fixture's with a label), so that the env image on it really
/// builds, by commit, in a container of its own; and a spec table that uses it. Returns the
/// table's path and (base tag, label) for [`Cleanup`].
fn own_base(fx: &Fixture, name: &str) -> (PathBuf, (String, String)) {
    let label = format!("swtbench.test={name}");
    let base = format!("swtbench-test-{name}:1");
    assert!(
        docker_build(&base, &format!("FROM {}\nLABEL {label}\n", base_image())),
        "building {base}"
    );
    let table = std::fs::read_to_string(spec_table())
        .unwrap()
        .replace(&base_image(), &base);
    let path = fx.root.join(format!("spec-{name}.toml"));
    std::fs::write(&path, table).unwrap();
    (path, (base, label))
}

/// The fixture's run arguments for `ids` with `--spec-table` set to `table` (when given) and
/// `--timeout` to `timeout`.
fn args_for(
    fx: &Fixture,
    run_id: &str,
    out: &Path,
    ids: &str,
    table: Option<&Path>,
    timeout: &str,
) -> Vec<String> {
    let mut args = fx.run_args(
        run_id,
        out,
        "predictions.jsonl",
        &["--no-coverage", "--instance-ids", ids],
    );
    let at = args.iter().position(|a| a == "--max-workers").unwrap();
    args[at + 1] = "1".into();
    if let Some(table) = table {
        let at = args.iter().position(|a| a == "--spec-table").unwrap();
        args[at + 1] = table.display().to_string();
    }
    let at = args.iter().position(|a| a == "--timeout").unwrap();
    args[at + 1] = timeout.into();
    // The events of each run in a file of its own (runs share the output directory).
    let at = args.iter().position(|a| a == "--events").unwrap();
    args[at + 1] = out
        .join(format!("{run_id}.events.jsonl"))
        .display()
        .to_string();
    args
}

/// Waits until `child` has a container that `pred` accepts; that container.
fn wait_for(host: &str, child: &mut Child, what: &str, pred: impl Fn(&Listed) -> bool) -> Listed {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        assert!(Instant::now() < deadline, "{what} did not appear");
        assert!(child.try_wait().unwrap().is_none(), "swtbench ended early");
        if let Some(c) = owned(host, Some(child.id())).into_iter().find(&pred) {
            return c;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the fixture's never-ending test runs in a container of `child`.
fn wait_for_the_hanging_test(host: &str, child: &mut Child) -> Listed {
    wait_for(host, child, "the hanging test", |c| {
        !c.run.is_empty()
            && docker(&["top", &c.id, "-eo", "pid,args"])
                .is_some_and(|ps| ps.contains("test_model_hang"))
    })
}

fn is_build(c: &Listed) -> bool {
    c.name.starts_with("swtbench-build-")
}

/// What two killed runs left: one killed while its env image was built by commit, one while its
/// test ran.
struct Killed {
    build_pid: u32,
    build: Listed,
    test_pid: u32,
    test_run_id: String,
    test: Listed,
    partial: PathBuf,
}

/// Starts the two runs under `host` into `out`, kills each with SIGKILL at its moment (both
/// alive until then: a run's start would sweep what the other left), and checks what they left:
/// exactly one container each, and the test's half-written output.
fn kill_two(fx: &Fixture, host: &str, table: &Path, out: &Path, tag: &str) -> Killed {
    let test_run_id = unique_run_id(&format!("{tag}-test"));
    let mut tester = spawn_under(host, &args_for(fx, &test_run_id, out, HANGING, None, "600"));
    let test_pid = tester.id();
    wait_for_the_hanging_test(host, &mut tester);
    let logs = out.join("run_instance_swt_logs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while temporary_files(&logs.join(&test_run_id)).is_empty() {
        assert!(Instant::now() < deadline, "no output being written");
        std::thread::sleep(Duration::from_millis(100));
    }

    let build_run = unique_run_id(&format!("{tag}-build"));
    let mut builder = spawn_under(
        host,
        &args_for(fx, &build_run, out, "swtfix__calc-1", Some(table), "60"),
    );
    let build_pid = builder.id();
    wait_for(host, &mut builder, "a build container", is_build);
    for child in [&mut builder, &mut tester] {
        child.kill().unwrap(); // SIGKILL: no clean-up at all
        child.wait().unwrap();
    }

    let builds = owned(host, Some(build_pid));
    assert_eq!(
        builds.len(),
        1,
        "kill -9 leaves its build container: {builds:?}"
    );
    assert!(is_build(&builds[0]), "{builds:?}");
    let tests = owned(host, Some(test_pid));
    assert_eq!(
        tests.len(),
        1,
        "kill -9 leaves its test container: {tests:?}"
    );
    let partial = temporary_files(&logs.join(&test_run_id));
    assert_eq!(partial.len(), 1, "the half-written output: {partial:?}");
    assert!(
        std::fs::read_dir(logs.join(".swtbench-writing"))
            .unwrap()
            .count()
            >= 1,
        "the killed writer's journal"
    );
    Killed {
        build_pid,
        build: builds[0].clone(),
        test_pid,
        test_run_id,
        test: tests[0].clone(),
        partial: partial[0].clone(),
    }
}

/// The parts of the line that says what was removed, one per killed process.
fn said_of(k: &Killed) -> [String; 2] {
    [
        format!(
            "pid {}: 1 image build ({})",
            k.build_pid, k.build.image_label
        ),
        format!("pid {} (run id {}): 1 test run", k.test_pid, k.test_run_id),
    ]
}

#[test]
fn engine_leftovers_of_runs_killed_in_a_build_and_in_a_test_are_removed_by_the_next_run() {
    require_engine_and_uts!();
    let fx = Fixture::new();
    let host = test_host("next-run");
    let (table, base) = own_base(&fx, &unique_run_id("next-run-base"));
    let _cleanup = Cleanup {
        host: host.clone(),
        base: Some(base),
    };
    let out = fx.root.join("out");
    let killed = kill_two(&fx, &host, &table, &out, "next");

    // The next run in the same output directory: another run id, images that exist.
    let next_id = unique_run_id("next");
    let o = run_under(
        &host,
        &args_for(&fx, &next_id, &out, "swtfix__calc-1", None, "60"),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("removed 2 container(s) left by swtbench processes"))
        .unwrap_or_else(|| panic!("no line about the leftovers: {stderr}"));
    for part in said_of(&killed) {
        assert!(line.contains(&part), "{part:?} in {line}");
    }
    assert!(
        line.ends_with(
            "; removed 1 unfinished output file(s) of swtbench processes that have ended"
        ),
        "{line}"
    );
    // Said once (the sweep at the end finds nothing more).
    assert_eq!(
        stderr.matches("left by swtbench processes").count(),
        1,
        "{stderr}"
    );
    assert!(owned(&host, Some(killed.build_pid)).is_empty());
    assert!(owned(&host, Some(killed.test_pid)).is_empty());
    assert!(
        owned(&host, None).is_empty(),
        "the next run removed its own"
    );
    assert!(!killed.partial.exists(), "{}", killed.partial.display());
    assert!(temporary_files(&out.join("run_instance_swt_logs")).is_empty());

    // The event says what each was.
    let ev: Vec<serde_json::Value> =
        std::fs::read_to_string(out.join(format!("{next_id}.events.jsonl")))
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
    let removed = of_kind(&ev, "leftovers_removed");
    assert_eq!(removed.len(), 1, "{removed:?}");
    assert_eq!(removed[0]["containers"], 2);
    assert_eq!(removed[0]["partial_files"], 1);
    let kinds: Vec<(String, String)> = removed[0]["left"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["kind"].as_str().unwrap().to_string(),
                l["container"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("image_build".into(), killed.build.id[..12].to_string())),
        "{kinds:?}"
    );
    assert!(
        kinds.contains(&("test_run".into(), killed.test.id[..12].to_string())),
        "{kinds:?}"
    );
}

#[test]
fn engine_leftovers_of_runs_killed_in_a_build_and_in_a_test_are_removed_by_clean() {
    require_engine_and_uts!();
    let fx = Fixture::new();
    let host = test_host("clean");
    let (table, base) = own_base(&fx, &unique_run_id("clean-base"));
    let _cleanup = Cleanup {
        host: host.clone(),
        base: Some(base),
    };
    let out = fx.root.join("out");
    let killed = kill_two(&fx, &host, &table, &out, "clean");
    let clean = |extra: &[&str]| {
        let mut args = vec![
            "clean".to_string(),
            "--output-dir".to_string(),
            out.display().to_string(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let o = run_under(&host, &args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        (
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
        )
    };

    // A dry run lists both containers and the file, and removes nothing.
    let (stdout, stderr) = clean(&["--dry-run"]);
    assert!(stdout.contains(&killed.build.name), "{stdout}");
    assert!(stdout.contains(&killed.test.name), "{stdout}");
    assert!(
        stdout.contains(&format!("file {}", killed.partial.display())),
        "{stdout}"
    );
    assert!(
        stderr
            .contains("2 container(s) left by swtbench processes that have ended would be removed"),
        "{stderr}"
    );
    assert_eq!(owned(&host, None).len(), 2);
    assert!(killed.partial.exists());

    let (stdout, stderr) = clean(&[]);
    assert!(
        stdout.contains(&format!(
            "removed container {} (image build of {}, left by pid {})",
            killed.build.name, killed.build.image_label, killed.build_pid
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "removed container {} ({} of {HANGING} (run id {}), left by pid {})",
            killed.test.name, killed.test.run, killed.test_run_id, killed.test_pid
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("removed file {}", killed.partial.display())),
        "{stdout}"
    );
    let line = stderr
        .lines()
        .find(|l| l.starts_with("removed 2 container(s) left by swtbench processes"))
        .unwrap_or_else(|| panic!("no closing line: {stderr}"));
    for part in said_of(&killed) {
        assert!(line.contains(&part), "{part:?} in {line}");
    }
    assert!(
        line.contains("removed 1 unfinished output file(s)"),
        "{line}"
    );
    assert!(owned(&host, None).is_empty());
    assert!(!killed.partial.exists());
    assert_eq!(
        std::fs::read_dir(out.join("run_instance_swt_logs/.swtbench-writing"))
            .unwrap()
            .count(),
        0,
        "the dead writer's journal went"
    );
    // Nothing more the second time.
    let (_, stderr) = clean(&[]);
    assert!(
        stderr.contains("nothing left by swtbench processes that have ended"),
        "{stderr}"
    );
}

/// Sends SIGINT to `child` and waits for it to end with exit code 130.
fn interrupt(child: &mut Child) {
    assert!(Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap()
        .success());
    assert_eq!(wait_exit(child, Duration::from_secs(90)).code(), Some(130));
}

#[test]
fn engine_leftovers_ctrl_c_in_a_build_or_a_test_leaves_no_container_of_the_process() {
    require_engine_and_uts!();
    let fx = Fixture::new();
    let host = test_host("ctrl-c");
    let (table, base) = own_base(&fx, &unique_run_id("ctrl-c-base"));
    let _cleanup = Cleanup {
        host: host.clone(),
        base: Some(base),
    };
    let out = fx.root.join("out");
    let check_nothing_left = |pid: u32, when: &str| {
        assert!(
            owned(&host, Some(pid)).is_empty(),
            "{when}: {:?}",
            owned(&host, Some(pid))
        );
        // A creation the engine was still working on at the interrupt would show up only now.
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            owned(&host, Some(pid)).is_empty(),
            "{when}, late: {:?}",
            owned(&host, Some(pid))
        );
        assert!(
            temporary_files(&out.join("run_instance_swt_logs")).is_empty(),
            "{when}"
        );
    };

    // During the commit build of the env image.
    let run_id = unique_run_id("ctrl-c-build");
    let mut child = spawn_under(
        &host,
        &args_for(&fx, &run_id, &out, "swtfix__calc-1", Some(&table), "60"),
    );
    let pid = child.id();
    wait_for(&host, &mut child, "a build container", is_build);
    interrupt(&mut child);
    check_nothing_left(pid, "interrupted in a build");

    // During a test.
    let run_id = unique_run_id("ctrl-c-test");
    let mut child = spawn_under(&host, &args_for(&fx, &run_id, &out, HANGING, None, "600"));
    let pid = child.id();
    wait_for_the_hanging_test(&host, &mut child);
    interrupt(&mut child);
    check_nothing_left(pid, "interrupted in a test");
}

#[test]
fn engine_leftovers_a_live_runs_containers_are_left_alone_by_other_processes_sweeps() {
    require_engine_and_uts!();
    let fx = Fixture::new();
    let host = test_host("live");
    let _cleanup = Cleanup {
        host: host.clone(),
        base: None,
    };
    let out = fx.root.join("out");
    let live_id = unique_run_id("live");
    let mut live = spawn_under(&host, &args_for(&fx, &live_id, &out, HANGING, None, "600"));
    let running = wait_for_the_hanging_test(&host, &mut live);
    let still_running = |when: &str| {
        let state = docker(&["inspect", "-f", "{{.State.Running}}", &running.id]);
        assert_eq!(
            state.as_deref(),
            Some("true"),
            "{when}: the live run's container"
        );
    };

    // `clean` on the same host and output directory: the live run's container and its output
    // being written are not leftovers.
    let o = run_under(
        &host,
        &[
            "clean".into(),
            "--output-dir".into(),
            out.display().to_string(),
        ],
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("nothing left by swtbench processes that have ended"),
        "{stderr}"
    );
    still_running("after clean");
    assert_eq!(temporary_files(&out.join("run_instance_swt_logs")).len(), 1);

    // Another run at the same time, in the same output directory.
    let other_id = unique_run_id("other");
    let o = run_under(
        &host,
        &args_for(&fx, &other_id, &out, "swtfix__calc-1", None, "60"),
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("left by swtbench processes"), "{stderr}");
    still_running("after another run");
    assert!(live.try_wait().unwrap().is_none(), "the live run goes on");
    assert_eq!(owned(&host, None), vec![running.clone()]);

    interrupt(&mut live);
    assert!(owned(&host, None).is_empty());
}

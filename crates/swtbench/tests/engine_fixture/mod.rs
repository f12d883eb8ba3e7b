//! The fixture benchmark on the real engine, shared by the engine test files: the binary, the
//! fixture's spec table on its base image, its images built once under a lock, runs of the binary
//! and what they leave (events, reports, containers).
#![allow(dead_code, clippy::unwrap_used, clippy::print_stderr)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use swtbench_grade::InstanceReport;

#[path = "../support/binary.rs"]
pub mod binary;
#[path = "../support/layer.rs"]
pub mod layer;
#[allow(unused_imports)] // each test file uses part of it
pub use layer::{engine_required, skip};

pub const DEFAULT_BASE_IMAGE: &str = "swtbench-fixture-base:bookworm";
pub const MODEL_DIR: &str = "swtbench-fixture-model";
pub const IMAGES_LOCK: &str = "/tmp/swtbench-engine-tests.images.lock";
/// The fixture instance whose model test never ends (`fixtures/benchmark/README.md`): a run that
/// includes it waits out `--timeout` for each of its two prediction runs. The tests about
/// timeouts and the full `expected.json` checks (`engine_run.rs`) keep it; the others leave it out
/// with [`Fixture::run_args_no_hang`].
pub const HANGING: &str = "swtfix__calc-7";

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn base_image() -> String {
    std::env::var("SWTBENCH_FIXTURE_BASE_IMAGE")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| DEFAULT_BASE_IMAGE.to_string())
}

/// The fixture's spec table, on [`base_image`].
pub fn spec_table() -> PathBuf {
    let table = workspace().join("fixtures/benchmark/spec-table.toml");
    let base = base_image();
    if base == DEFAULT_BASE_IMAGE {
        return table;
    }
    let text = std::fs::read_to_string(&table)
        .unwrap()
        .replace(DEFAULT_BASE_IMAGE, &base);
    let path = std::env::temp_dir().join(format!(
        "swtbench-engine-spec-{}.toml",
        base.replace(['/', ':'], "_")
    ));
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&tmp, text).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
    }
    path
}

pub fn bin() -> &'static str {
    binary::bin_path()
}

/// `swtbench`, hermetic, with what image builds need (`support/binary.rs`): how the engine tests
/// start the binary.
pub fn swtbench_command() -> Command {
    binary::engine_command()
}

/// Why the engine tests cannot run here, if they cannot.
pub fn engine_missing() -> Option<String> {
    let docker = Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output();
    match docker {
        Ok(o) if o.status.success() => {}
        _ => return Some("no reachable Docker engine (`docker info` failed)".into()),
    }
    let base_image = base_image();
    let base = Command::new("docker")
        .args(["image", "inspect", &base_image])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !base.is_ok_and(|s| s.success()) {
        return Some(format!(
            "the base image {base_image} is missing (build it with scripts/base-image)"
        ));
    }
    None
}

#[allow(unused_macros)]
macro_rules! require_engine {
    () => {
        if let Some(why) = $crate::engine_fixture::engine_missing() {
            $crate::engine_fixture::skip(&why);
            return;
        }
    };
}

/// A fixture benchmark in a temporary directory, with its images built.
pub struct Fixture {
    pub _tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
}

impl Fixture {
    pub fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        let data = root.join("fx");
        let out = Command::new("python3")
            .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "make_benchmark.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let fx = Fixture {
            _tmp: tmp,
            root,
            data,
        };
        fx.ensure_images();
        fx
    }

    pub fn dataset(&self) -> String {
        self.data.join("dataset.jsonl").display().to_string()
    }

    pub fn mirrors(&self) -> String {
        self.data.join("mirrors").display().to_string()
    }

    /// Builds the fixture images once for all tests (other test processes wait on the lock).
    pub fn ensure_images(&self) {
        let mut flock = Command::new("flock");
        binary::with_build_network(binary::hermetic(&mut flock));
        let out = flock
            .arg(IMAGES_LOCK)
            .arg(bin())
            .args(["images", "build", "--dataset", &self.dataset()])
            .args(["--repo-mirror", &self.mirrors()])
            .arg("--spec-table")
            .arg(spec_table())
            .arg("--output-dir")
            .arg(self.root.join("prebuild"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "building the fixture images failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `bin run` of the fixture's model predictions into `out_dir` under `run_id` (instance
    /// cache level, the events into `out_dir/events.jsonl`), quiet, for the benches to add their
    /// own flags to.
    pub fn bench_run(&self, bin: &Path, run_id: &str, out_dir: &Path) -> Command {
        let mut cmd = Command::new(bin);
        cmd.arg("run")
            .arg("--dataset")
            .arg(self.dataset())
            .arg("--predictions")
            .arg(self.data.join("predictions.jsonl"))
            .args(["--repo-mirror", &self.mirrors()])
            .arg("--spec-table")
            .arg(spec_table())
            .args(["--run-id", run_id, "--cache-level", "instance"])
            .arg("--output-dir")
            .arg(out_dir)
            .arg("--events")
            .arg(out_dir.join("events.jsonl"))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    }

    /// The arguments of a fixture run into `out_dir`.
    pub fn run_args(
        &self,
        run_id: &str,
        out_dir: &Path,
        predictions: &str,
        extra: &[&str],
    ) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "run".into(),
            "--dataset".into(),
            self.dataset(),
            "--predictions".into(),
            self.data.join(predictions).display().to_string(),
            "--repo-mirror".into(),
            self.mirrors(),
            "--spec-table".into(),
            spec_table().display().to_string(),
            "--run-id".into(),
            run_id.into(),
            "--output-dir".into(),
            out_dir.display().to_string(),
            "--timeout".into(),
            "20".into(),
            "--max-workers".into(),
            "2".into(),
            "--cache-level".into(),
            "instance".into(),
            "--events".into(),
            out_dir.join("events.jsonl").display().to_string(),
        ];
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    }

    /// Every instance of the fixture but [`HANGING`], comma-separated (an `--instance-ids` value).
    pub fn ids_without_hanging(&self) -> String {
        let expected = self.expected();
        let ids: Vec<&str> = expected["unit_test"]["instances"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .filter(|id| *id != HANGING)
            .collect();
        assert!(ids.len() >= 8, "the fixture's instances: {ids:?}");
        ids.join(",")
    }

    /// [`Fixture::run_args`] over every instance but [`HANGING`]: for the tests that are not about
    /// timeouts, which need not wait for it.
    pub fn run_args_no_hang(
        &self,
        run_id: &str,
        out_dir: &Path,
        predictions: &str,
        extra: &[&str],
    ) -> Vec<String> {
        let ids = self.ids_without_hanging();
        let mut extra = extra.to_vec();
        extra.extend(["--instance-ids", ids.as_str()]);
        self.run_args(run_id, out_dir, predictions, &extra)
    }

    pub fn expected(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.data.join("expected.json")).unwrap())
            .unwrap()
    }
}

/// The fixture benchmark evaluated once per test run by one plain process: every instance but
/// [`HANGING`], the fixture's default flags (coverage on). The tests that check another way of
/// evaluating it (Slurm shards, the uv provider) compare their reports with this one instead of
/// each evaluating the fixture again. It lives in the build directory under nextest's run id (a
/// test run outside nextest gets its own), and the first test that asks makes it, under a lock
/// the others wait on, with `fx`'s arguments and images. Returns the output directory and run id.
pub fn reference_run(fx: &Fixture) -> (PathBuf, String) {
    let key = std::env::var("NEXTEST_RUN_ID")
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| unique_run_id("solo"));
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fixture-reference")
        .join(&key);
    std::fs::create_dir_all(&dir).unwrap();
    let run_id = format!("reference-{}", &key[..key.len().min(8)]);
    let out = dir.join("out");
    // `fx`'s run arguments, on the reference's own copy of the fixture's data.
    let (theirs, ours) = (
        fx.data.display().to_string(),
        dir.join("fx").display().to_string(),
    );
    let args: Vec<String> = fx
        .run_args_no_hang(&run_id, &out, "predictions.jsonl", &[])
        .into_iter()
        .map(|a| a.replace(&theirs, &ours))
        .collect();
    // Made under the lock unless it is there: the fixture's data, then the run.
    let script = r#"set -e
dir=$1; make=$2; shift 2
[ -f "$dir/done" ] && exit 0
rm -rf "$dir/fx" "$dir/out"
python3 "$make" "$dir/fx" >/dev/null
"$@"
touch "$dir/done""#;
    let mut flock = Command::new("flock");
    binary::with_build_network(binary::hermetic(&mut flock));
    let made = flock
        .arg(dir.join("lock"))
        .args(["sh", "-c", script, "sh"])
        .arg(&dir)
        .arg(workspace().join("fixtures/benchmark/make_benchmark.py"))
        .arg(bin())
        .args(&args)
        .output()
        .unwrap();
    assert!(
        made.status.success() && dir.join("done").is_file(),
        "the reference run failed ({}):\n{}",
        made.status,
        String::from_utf8_lossy(&made.stderr)
    );
    (out, run_id)
}

pub fn run(args: &[String]) -> Output {
    let out = swtbench_command().args(args).output().unwrap();
    eprintln!(
        "swtbench {}\n--- stderr ---\n{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn spawn(args: &[String]) -> Child {
    swtbench_command()
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Containers (running or not) labelled with the run id.
pub fn containers_of(run_id: &str) -> Vec<String> {
    containers_matching(&[format!("label=swtbench.run_id={run_id}")])
}

/// The containers (any state) that match every `docker ps --filter` of `filters`.
pub fn containers_matching(filters: &[String]) -> Vec<String> {
    let mut cmd = Command::new("docker");
    cmd.args(["ps", "-a", "-q"]);
    for f in filters {
        cmd.args(["--filter", f]);
    }
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A run id no other test (or earlier invocation) uses.
pub fn unique_run_id(name: &str) -> String {
    format!(
        "{name}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    )
}

pub fn events(out_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(out_dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Waits until `pred` holds for the events written so far.
pub fn wait_for_events(out_dir: &Path, what: &str, pred: impl Fn(&[Value]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(600);
    while Instant::now() < deadline {
        if pred(&events(out_dir)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("timed out waiting for {what}");
}

pub fn executed_runs(ev: &[Value]) -> usize {
    ev.iter()
        .filter(|e| e["event"] == "run_finished" && e["result"]["kind"] == "executed")
        .count()
}

pub fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("swtbench did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn report_dir(out_dir: &Path, run_id: &str) -> PathBuf {
    out_dir
        .join("run_instance_swt_logs")
        .join(run_id)
        .join(MODEL_DIR)
}

pub fn read_report(out_dir: &Path, run_id: &str, id: &str) -> Option<InstanceReport> {
    let text =
        std::fs::read_to_string(report_dir(out_dir, run_id).join(id).join("report.json")).ok()?;
    Some(InstanceReport::from_report_json(&text, Some(id)).unwrap())
}

/// A new test file `tests/<file>` with `lines`, as a patch.
pub fn new_file_patch(file: &str, lines: &[String]) -> String {
    let mut p = format!(
        "diff --git a/tests/{file} b/tests/{file}\nnew file mode 100644\n--- /dev/null\n+++ b/tests/{file}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for l in lines {
        p.push('+');
        p.push_str(l);
        p.push('\n');
    }
    p
}

/// Builds `tag` from a Dockerfile given as text (no context), returning whether it worked (the
/// engine's message on stderr when not).
pub fn docker_build(tag: &str, dockerfile: &str) -> bool {
    use std::io::Write;
    let mut child = Command::new("docker")
        .args(["build", "-q", "-t", tag, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(dockerfile.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        eprintln!(
            "docker build {tag}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.status.success()
}

/// The `report.json` of every instance of the fixture model in a run: instance id → text.
pub fn reports_of(out_dir: &Path, run_id: &str) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(report_dir(out_dir, run_id)).unwrap() {
        let dir = entry.unwrap().path();
        if let Ok(text) = std::fs::read_to_string(dir.join("report.json")) {
            out.insert(
                dir.file_name().unwrap().to_string_lossy().into_owned(),
                text,
            );
        }
    }
    out
}

/// Every `report.json` under `root` (none when it does not exist), by path relative to it.
pub fn reports_under(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.file_name().is_some_and(|n| n == "report.json") {
                out.push((
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// The events of one kind.
pub fn of_kind<'a>(ev: &'a [Value], kind: &str) -> Vec<&'a Value> {
    ev.iter().filter(|e| e["event"] == kind).collect()
}

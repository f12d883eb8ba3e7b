//! `grade` + `report` over a generated run tree of 2,294 instances × 6 runs in the original's
//! layout on disk (logs of a few KB with coverage dumps, like traced runs): re-grade every
//! instance, write its report.json and the run report, then collect the reports and compute and
//! render the table, as `swtbench grade --rewrite` followed by `swtbench report` do.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::io;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use swtbench_core::layout::{
    base_directives_hash, gold_directives_hash, InstanceRunKeys, LogsRoot, MODEL_PATCH_FILE,
    TEST_OUTPUT_FILE,
};
use swtbench_core::{Instance, PatchLayout};
use swtbench_grade::leaderboard::{self, Format};
use swtbench_grade::run_report::{RunReport, RunReportInput};
use swtbench_grade::tree::{collect_reports, regrade, RegradeRequest, TreeReader};
use swtbench_grade::GradeOptions;

const INSTANCES: usize = 2294;
const RUN: &str = "bench-run";
const MODEL: &str = "bench-model";

/// The file system as a tree (what `swtbench_data::tree::FsTree` does).
struct Fs;

impl TreeReader for Fs {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        match std::fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        let Ok(rd) = std::fs::read_dir(path) else {
            return Ok(None);
        };
        let mut v = Vec::new();
        for e in rd {
            let e = e?;
            if e.path().is_dir() {
                v.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        v.sort();
        Ok(Some(v))
    }
    fn files(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        let Ok(rd) = std::fs::read_dir(path) else {
            return Ok(None);
        };
        let mut v = Vec::new();
        for e in rd {
            let e = e?;
            if e.path().is_file() {
                v.push(e.file_name().to_string_lossy().into_owned());
            }
        }
        v.sort();
        Ok(Some(v))
    }
    fn is_dir(&self, path: &Path) -> io::Result<bool> {
        Ok(path.is_dir())
    }
}

const CODE_PATCH: &str = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -10,5 +10,6 @@ def f(x):\n     a = 1\n-    y = x\n-    return y\n+    y = x + 1\n+    z = y * 2\n+    return z\n \n     b = 2\n";

fn patch(path: &str) -> String {
    format!("diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+x = 1\n")
}

/// One run's output: install noise, the traced command, `tests` result lines, a coverage dump.
fn output(i: usize, kind: usize, applied: bool) -> String {
    let mut s = String::with_capacity(8192);
    s.push_str("+ source /opt/miniconda3/bin/activate\n+ conda activate testbed\n+ cd /testbed\n");
    for k in 0..30 {
        s.push_str(&format!("Requirement already satisfied: package{k} in /opt/miniconda3/envs/testbed/lib/python3.9/site-packages (1.{k})\n"));
    }
    s.push_str("+ git apply -v -\n");
    if applied {
        s.push_str(
            "Checking patch tests/test_new.py...\nApplied patch tests/test_new.py cleanly.\n",
        );
    } else {
        s.push_str("error: patch failed: tests/test_new.py:1\n");
    }
    s.push_str("+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(src/m\\.py)' -m pytest --no-header -rA -p no:cacheprovider tests/test_new.py\n");
    s.push_str("============================= test session starts ==============================\ncollected 24 items\n\n");
    s.push_str(
        "tests/test_new.py ....F...................                                    [100%]\n\n",
    );
    s.push_str(
        "=========================== short test summary info ============================\n",
    );
    for t in 0..20 {
        s.push_str(&format!("PASSED tests/test_new.py::test_existing_{t}\n"));
    }
    // The model's test fails before the fix in pred_pre for most instances.
    let fails = kind == 0 && i % 3 != 2;
    s.push_str(if fails {
        "FAILED tests/test_new.py::test_issue - AssertionError: assert 1 == 2\n"
    } else {
        "PASSED tests/test_new.py::test_issue\n"
    });
    s.push_str(
        "========================= 1 failed, 23 passed in 0.52s =========================\n",
    );
    s.push_str("+ cat coverage.cover\n");
    let post = kind % 2 == 1;
    let mut hits = serde_json::Map::new();
    for line in 1..60 {
        let h = if (11..=13).contains(&line) && (kind < 4 || (post && i.is_multiple_of(2))) {
            1 + (i % 3)
        } else {
            line % 2
        };
        hits.insert(line.to_string(), json!(h));
    }
    s.push_str(&json!({"/testbed/src/m.py": hits}).to_string());
    s.push('\n');
    s.push_str("+ git checkout 0123abcd tests/test_new.py\nUpdated 0 paths from 0123abcd\n");
    s
}

fn build(dir: &Path) -> (Vec<Instance>, LogsRoot) {
    let root = LogsRoot::new(dir.join("run_instance_swt_logs"));
    let mut instances = Vec::with_capacity(INSTANCES);
    for i in 0..INSTANCES {
        let id = format!("bench__repo-{i:05}");
        let row = json!({
            "instance_id": id, "repo": "pytest-dev/pytest", "version": "8.0",
            "base_commit": "0123abcd", "patch": CODE_PATCH, "test_patch": patch("tests/test_gold.py"),
        });
        let inst = Instance::from_row(&row, PatchLayout::Swebench).unwrap();
        let model_patch = patch("tests/test_new.py");
        let gold_hash = gold_directives_hash(&inst.repo, &inst.golden_test_patch);
        let base_hash = base_directives_hash(&inst.repo, &model_patch);
        let keys = InstanceRunKeys {
            run_id: RUN,
            model_dir: MODEL,
            instance_id: &id,
            gold_hash: &gold_hash,
            base_hash: &base_hash,
        };
        for (kind, d) in root.instance_run_dirs(&keys).iter().enumerate() {
            std::fs::create_dir_all(d).unwrap();
            let applied = kind < 4 && i % 17 != 0;
            std::fs::write(d.join(TEST_OUTPUT_FILE), output(i, kind, applied)).unwrap();
            if kind == 0 {
                std::fs::write(d.join(MODEL_PATCH_FILE), &model_patch).unwrap();
            }
        }
        instances.push(inst);
    }
    (instances, root)
}

fn grade_and_report(instances: &[Instance], root: &LogsRoot, out: &Path) -> String {
    let req = RegradeRequest {
        logs_root: root,
        run_id: RUN,
        model_dir: MODEL,
        instances,
        rewrite: true,
        options: GradeOptions::default(),
        threads: 0,
        rules: &Default::default(),
        empty_patches: None,
        flaky: None,
    };
    let graded = regrade(&Fs, &req);
    for (path, text) in &graded.writes {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let report = RunReport::new(&RunReportInput {
        entries: graded.entries,
        ..Default::default()
    });
    std::fs::write(out.join("run_report.json"), report.to_json()).unwrap();
    let collected = collect_reports(&Fs, &root.model_reports_dir(RUN, MODEL), &|_| false)
        .unwrap()
        .unwrap();
    let m = leaderboard::compute(&collected.reports, None, 1983);
    leaderboard::render(&m, RUN, Format::Json, None)
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    let (instances, root) = build(tmp.path());
    let bytes: u64 = walk(root.path());
    eprintln!(
        "generated {} instances × 6 runs, {:.1} MB of logs",
        instances.len(),
        bytes as f64 / 1e6
    );
    // A sanity check that the tree grades to something non-trivial.
    let table = grade_and_report(&instances, &root, tmp.path());
    assert!(table.contains("\"instances\": 2294"), "{table}");
    let mut g = c.benchmark_group("grade_report");
    g.sample_size(10);
    g.bench_function("2294 instances x 6 runs", |b| {
        b.iter(|| grade_and_report(&instances, &root, tmp.path()))
    });
    g.finish();
}

fn walk(p: &Path) -> u64 {
    let mut n = 0;
    let mut stack: Vec<PathBuf> = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let m = e.metadata().unwrap();
            if m.is_dir() {
                stack.push(e.path());
            } else {
                n += m.len();
            }
        }
    }
    n
}

criterion_group!(benches, bench);
criterion_main!(benches);

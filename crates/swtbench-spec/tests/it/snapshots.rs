//! Snapshot tests: the rendered files of real SWE-bench instances, byte for byte.
//!
//! # How the expected files were made
//!
//! `tests/snapshots/` was generated once, outside this repository, by running the original
//! harness's rendering code under Python 3.11: `ExecSpec` of `src/exec_spec.py` (commit 8c26db0,
//! the version with reproduction-script mode), the templates of `src/dockerfiles.py`, the
//! requirement helpers and `get_test_directives` of `src/utils.py` (6bd0405), `remove_binary_diffs`
//! of `src/auxillary_src/extract_patches.py` and the per-run loop of `run_instance` in
//! `src/run_evaluation.py`, with the spec table taken from `swtbench_spec_table.json`.
//! `requests.get` was replaced by a lookup in `tests/fixtures/repo-files/<owner>__<name>/<commit>/`
//! (status 200 or 404, dot segments removed as urllib3 does), because GitHub is not reachable here;
//! those fixture files imitate the real ones and exercise `-r` includes (present and missing),
//! comments, `-e .`, `.[test…]`, CRLF line ends, a path list whose first entry is missing, and
//! `name:` rewriting. Two documented deviations were applied to the Python code before generating:
//! the coverage include pattern lists files sorted (the original's order is random), and, except in
//! the `*-compat` variants, the sympy command is built without the `str.strip` bug.
//!
//! - `<instance_id>/`: exactly what `swtbench spec` writes for the instance with gold
//!   predictions, unit-test mode and coverage (x86_64 host). 17 instances: one per repository of
//!   SWE-bench Lite/Verified plus one per `packages` style (requirements.txt, environment.yml with
//!   and without `no_use_env`, a conda package list, no packages), `pre_install`, `eval_commands`.
//! - `arm64/<instance_id>/`: Dockerfiles and keys on an arm64 host (one x86-only instance).
//! - `variants/<name>/`: eval scripts and `exec_spec.json` of other options (`case.json`): model
//!   predictions (SWE-agent), no coverage, reproduction-script mode, the sympy compat mode.
//!
//! The keys in every `keys.json` are also recomputed here from the snapshot texts with the SHA-256
//! rule, independently of the renderer.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use swtbench_core::diff::{remove_binary_diffs, LineSplit};
use swtbench_core::hash::sha256_hex;
use swtbench_core::{Instance, PatchLayout};
use swtbench_spec::reqs::normalize_repo_path;
use swtbench_spec::{
    Arch, EvalOptions, ExecMode, ExecSpec, ExecSpecJsonContext, ReadError, RunInputs, SpecTable,
};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn snapshots() -> PathBuf {
    crate_dir().join("tests/snapshots")
}

fn instances() -> BTreeMap<String, Instance> {
    let text = fs::read_to_string(crate_dir().join("tests/fixtures/instances.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let row: Value = serde_json::from_str(l).unwrap();
            let i = Instance::from_row(&row, PatchLayout::Swebench).unwrap();
            (i.instance_id.to_string(), i)
        })
        .collect()
}

fn sweagent_predictions() -> BTreeMap<String, (String, String)> {
    let text =
        fs::read_to_string(crate_dir().join("tests/fixtures/predictions_sweagent.jsonl")).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["instance_id"].as_str().unwrap().to_string(),
                (
                    v["model_name_or_path"].as_str().unwrap().to_string(),
                    v["model_patch"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect()
}

/// Repository files from `tests/fixtures/repo-files`, as the snapshot generator served them.
fn fixture_file(repo: &str, commit: &str, path: &str) -> Result<Option<String>, ReadError> {
    let Some(path) = normalize_repo_path(path) else {
        return Ok(None);
    };
    let p = crate_dir()
        .join("tests/fixtures/repo-files")
        .join(repo.replace('/', "__"))
        .join(commit)
        .join(path);
    match fs::read(&p) {
        Ok(bytes) => Ok(Some(String::from_utf8(bytes)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Compares `actual` with the snapshot file, showing the first differing line on failure.
fn check(file: &Path, actual: &str, seen: &mut Vec<PathBuf>) {
    let expected = fs::read_to_string(file)
        .unwrap_or_else(|e| panic!("cannot read snapshot {}: {e}", file.display()));
    if expected != actual {
        let line = expected
            .split('\n')
            .zip(actual.split('\n'))
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| expected.split('\n').count().min(actual.split('\n').count()));
        panic!(
            "{} differs at line {}:\nexpected: {:?}\nactual:   {:?}",
            file.display(),
            line + 1,
            expected.split('\n').nth(line),
            actual.split('\n').nth(line)
        );
    }
    seen.push(file.to_path_buf());
}

/// The env Dockerfile without the lines swtbench adds at its end (the build of the coverage
/// tracer's native line counter, outside the original's key rule); what precedes them is the
/// original's text.
fn original_env(spec: &ExecSpec) -> &str {
    spec.env_dockerfile
        .strip_suffix(&swtbench_tracer::native_dockerfile_lines())
        .unwrap_or_else(|| {
            panic!(
                "{}: the env Dockerfile does not end with the native counter's build:\n{}",
                spec.instance_id, spec.env_dockerfile
            )
        })
}

/// `exec_spec.json` is compared byte for byte, except for the key order inside `install`: the
/// original writes its table dict in `constants.py` order, which the table data does not keep.
fn check_exec_spec(file: &Path, actual: &str, seen: &mut Vec<PathBuf>) {
    let raw = fs::read_to_string(file).unwrap();
    let mut expected: Value = serde_json::from_str(&raw).unwrap();
    // Our writer reproduces Python's json.dumps formatting of the original's own output.
    assert_eq!(swtbench_spec::py::json_dumps(&expected), raw);
    let ours: Value = serde_json::from_str(actual).unwrap();
    let as_map = |v: &Value| -> BTreeMap<String, Value> {
        v.as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(
        as_map(&expected["install"]),
        as_map(&ours["install"]),
        "{}: install differs",
        file.display()
    );
    expected["install"] = ours["install"].clone();
    let expected_text = swtbench_spec::py::json_dumps(&expected);
    assert_eq!(expected_text, actual, "{}", file.display());
    seen.push(file.to_path_buf());
}

fn all_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            all_files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn model_inputs<'a>(instance: &'a Instance, model_patch: &'a str) -> RunInputs<'a> {
    RunInputs {
        model_patch,
        gold_test_patch: &instance.golden_test_patch,
        gold_code_patch: &instance.golden_code_patch,
    }
}

#[test]
fn rendered_files_match_the_original() {
    let table = SpecTable::embedded();
    let instances = instances();
    assert_eq!(instances.len(), 17);
    let mut seen = Vec::new();
    for (id, instance) in &instances {
        let dir = snapshots().join(id);
        let spec = ExecSpec::new(instance, table, Arch::X86_64, &fixture_file)
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        check(
            &dir.join("base.Dockerfile"),
            spec.base_dockerfile.as_deref().unwrap(),
            &mut seen,
        );
        check(&dir.join("env.Dockerfile"), original_env(&spec), &mut seen);
        check(&dir.join("setup_env.sh"), &spec.setup_env_sh, &mut seen);
        check(
            &dir.join("instance.Dockerfile"),
            &spec.instance_dockerfile,
            &mut seen,
        );
        check(&dir.join("setup_repo.sh"), &spec.setup_repo_sh, &mut seen);
        check(&dir.join("keys.json"), &spec.keys_json(), &mut seen);
        let gold_directives = spec.directives(&instance.golden_test_patch);
        check(
            &dir.join("directives.json"),
            &format!(
                "{}\n",
                serde_json::to_string_pretty(&gold_directives).unwrap()
            ),
            &mut seen,
        );
        // Gold predictions: the model patch is the gold test patch after binary-diff removal.
        let model_patch = remove_binary_diffs(&instance.golden_test_patch, LineSplit::Python);
        let runs = spec
            .render_runs(
                &model_inputs(instance, &model_patch),
                &EvalOptions::default(),
            )
            .unwrap();
        for run in runs {
            check(
                &dir.join(format!("eval/{}.sh", run.kind)),
                &run.eval_script,
                &mut seen,
            );
        }
    }
    // Every snapshot of the main set was compared.
    let mut expected_files = Vec::new();
    for id in instances.keys() {
        all_files(&snapshots().join(id), &mut expected_files);
    }
    expected_files.sort();
    seen.sort();
    assert_eq!(expected_files, seen);
}

#[test]
fn keys_follow_the_sha256_rule_of_the_snapshot_texts() {
    let mut checked = 0;
    for id in instances().keys() {
        let dir = snapshots().join(id);
        let read = |f: &str| fs::read_to_string(dir.join(f)).unwrap();
        let keys: Value = serde_json::from_str(&read("keys.json")).unwrap();
        let env_hash = &sha256_hex(read("setup_env.sh"))[..22];
        let repo_hash = &sha256_hex(read("setup_repo.sh"))[..22];
        assert_eq!(keys["base"], "exec.base.x86_64:latest");
        assert_eq!(keys["env"], format!("exec.env.x86_64.{env_hash}:latest"));
        assert_eq!(
            keys["instance"],
            format!("exec.eval.x86_64.{env_hash}.{repo_hash}:latest")
        );
        // The Dockerfiles chain the keys.
        assert!(read("env.Dockerfile")
            .starts_with("FROM --platform=linux/x86_64 exec.base.x86_64:latest\n"));
        assert!(read("instance.Dockerfile").starts_with(&format!(
            "FROM --platform=linux/x86_64 {}\n",
            keys["env"].as_str().unwrap()
        )));
        checked += 1;
    }
    assert_eq!(checked, 17);
}

#[test]
fn arm64_hosts_render_arm64_images_unless_the_instance_is_x86_only() {
    let table = SpecTable::embedded();
    let instances = instances();
    let mut seen = Vec::new();
    for id in ["django__django-10097", "sympy__sympy-11400"] {
        let dir = snapshots().join("arm64").join(id);
        let spec = ExecSpec::new(&instances[id], table, Arch::Arm64, &fixture_file).unwrap();
        check(
            &dir.join("base.Dockerfile"),
            spec.base_dockerfile.as_deref().unwrap(),
            &mut seen,
        );
        check(&dir.join("env.Dockerfile"), original_env(&spec), &mut seen);
        check(
            &dir.join("instance.Dockerfile"),
            &spec.instance_dockerfile,
            &mut seen,
        );
        check(&dir.join("keys.json"), &spec.keys_json(), &mut seen);
    }
    assert!(table.uses_x86("django__django-10097"));
    assert!(
        fs::read_to_string(snapshots().join("arm64/sympy__sympy-11400/base.Dockerfile"))
            .unwrap()
            .contains("Linux-aarch64.sh")
    );
    let mut all = Vec::new();
    all_files(&snapshots().join("arm64"), &mut all);
    assert_eq!(all.len(), seen.len());
}

#[test]
fn variants_match_the_original() {
    let table = SpecTable::embedded();
    let instances = instances();
    let preds = sweagent_predictions();
    let mut seen = Vec::new();
    let mut cases = 0;
    for entry in fs::read_dir(snapshots().join("variants")).unwrap() {
        let dir = entry.unwrap().path();
        let case: Value =
            serde_json::from_str(&fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
        seen.push(dir.join("case.json"));
        let id = case["instance_id"].as_str().unwrap();
        let instance = &instances[id];
        let (model_name, raw_patch) = match case["model"].as_str().unwrap() {
            "sweagent" => preds[id].clone(),
            "empty" => ("empty-model".to_string(), String::new()),
            "gold" => ("gold".to_string(), instance.golden_test_patch.clone()),
            other => panic!("unknown model source {other}"),
        };
        let opts = EvalOptions {
            exec_mode: match case["exec_mode"].as_str().unwrap() {
                "unit_test" => ExecMode::UnitTest,
                _ => ExecMode::ReproductionScript(
                    case["reproduction_script_name"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                ),
            },
            coverage: case["coverage"].as_bool().unwrap(),
            sympy_strip_compat: case["sympy_strip_compat"].as_bool().unwrap(),
            skip_install: false,
            tracer_fixed: false,
        };
        let ctx = ExecSpecJsonContext {
            run_id: Some(case["run_id"].as_str().unwrap().to_string()),
            model_dir: model_name.replace('/', "__"),
            timeout: case["timeout"].as_u64(),
            rm_image: false,
            force_rebuild: false,
        };
        let spec = ExecSpec::new(instance, table, Arch::X86_64, &fixture_file).unwrap();
        let model_patch = remove_binary_diffs(&raw_patch, LineSplit::Python);
        for run in spec
            .render_runs(&model_inputs(instance, &model_patch), &opts)
            .unwrap()
        {
            check(
                &dir.join(format!("eval/{}.sh", run.kind)),
                &run.eval_script,
                &mut seen,
            );
            check_exec_spec(
                &dir.join(format!("exec_spec/{}.json", run.kind)),
                &spec.exec_spec_json(&run, &opts, &ctx),
                &mut seen,
            );
        }
        cases += 1;
    }
    assert_eq!(cases, 8);
    let mut all = Vec::new();
    all_files(&snapshots().join("variants"), &mut all);
    all.sort();
    seen.sort();
    assert_eq!(all, seen);
}

#[test]
fn sympy_variants_show_the_strip_bug_only_in_compat_mode() {
    let read = |v: &str| {
        fs::read_to_string(
            snapshots()
                .join("variants")
                .join(v)
                .join("eval/pred_pre.sh"),
        )
        .unwrap()
    };
    let compat = read("sympy-sweagent-compat");
    let fixed = read("sympy-sweagent-fixed");
    assert!(compat.contains("sympy/printing/ccode.p\n"), "{compat}");
    assert!(fixed.contains("sympy/printing/ccode.py\n"), "{fixed}");
    assert!(read("sympy-empty-compat").contains(" bin/test -C --verb\n"));
}

//! The embedded table (`assets/spec-table/swtbench.toml`) holds exactly the facts of the
//! original's constants as recorded in the shared data file `swtbench_spec_table.json`, and every
//! SWE-bench Lite and Verified instance finds its entry.

use std::path::PathBuf;

use serde_json::Value;
use swtbench_spec::SpecTable;

fn shared_data() -> Option<PathBuf> {
    let dir = std::env::var_os("SWTBENCH_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"));
    dir.join("swtbench_spec_table.json")
        .is_file()
        .then_some(dir)
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
}

#[test]
fn embedded_table_equals_the_original_constants() {
    let Some(dir) = shared_data() else {
        println!("SKIPPED: shared data (swtbench_spec_table.json) not found");
        return;
    };
    let src: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("swtbench_spec_table.json")).unwrap(),
    )
    .unwrap();
    let t = SpecTable::embedded();
    let mut n = 0;
    for (repo, versions) in src["version_to_install"].as_object().unwrap() {
        let known = &t.repos[repo];
        assert_eq!(
            known.versions.len(),
            versions.as_object().unwrap().len(),
            "{repo}"
        );
        for (version, spec) in versions.as_object().unwrap() {
            let e = t.lookup(repo, version).unwrap();
            let s = e.spec;
            let field = |k: &str| spec.get(k).cloned();
            assert_eq!(
                s.python,
                field("python").map(|v| v.as_str().unwrap().to_string()),
                "{repo} {version}"
            );
            assert_eq!(
                s.packages,
                field("packages").map(|v| v.as_str().unwrap().to_string()),
                "{repo} {version}"
            );
            assert_eq!(
                s.install,
                field("install").map(|v| v.as_str().unwrap().to_string()),
                "{repo} {version}"
            );
            assert_eq!(
                s.pip_packages,
                field("pip_packages").and_then(|v| strings(&v)),
                "{repo} {version}"
            );
            assert_eq!(
                s.pre_install,
                field("pre_install").and_then(|v| strings(&v)),
                "{repo} {version}"
            );
            assert_eq!(
                s.eval_commands,
                field("eval_commands").and_then(|v| strings(&v)),
                "{repo} {version}"
            );
            assert_eq!(
                s.no_use_env,
                field("no_use_env").map(|v| v.as_bool().unwrap()),
                "{repo} {version}"
            );
            assert_eq!(
                s.execute_test_as_nonroot,
                field("execute_test_as_nonroot").map(|v| v.as_bool().unwrap()),
                "{repo} {version}"
            );
            assert_eq!(
                s.test_cmd,
                field("test_cmd").map(|v| v.as_str().unwrap().to_string()),
                "{repo} {version}"
            );
            assert!(s.is_reference());
            let cmd = src["repo_to_test_command"][repo][version].as_str();
            assert_eq!(e.test_command(), cmd, "{repo} {version}");
            n += 1;
        }
    }
    assert_eq!(n, 275);
    for (repo, paths) in src["repo_to_requirements_paths"].as_object().unwrap() {
        assert_eq!(t.repos[repo].requirements_paths, strings(paths), "{repo}");
    }
    for (repo, paths) in src["repo_to_environment_yml_paths"].as_object().unwrap() {
        assert_eq!(
            t.repos[repo].environment_yml_paths,
            strings(paths),
            "{repo}"
        );
    }
    let with_reqs = t
        .repos
        .values()
        .filter(|r| r.requirements_paths.is_some())
        .count();
    assert_eq!(
        with_reqs,
        src["repo_to_requirements_paths"].as_object().unwrap().len()
    );
    let exts = strings(&src["non_test_extensions"]).unwrap();
    assert_eq!(
        t.non_test_extensions("any/repo"),
        exts.iter().map(String::as_str).collect::<Vec<_>>()
    );
    let x86: Vec<String> = strings(&src["use_x86_instance_ids"]).unwrap();
    assert_eq!(t.use_x86.len(), x86.len());
    assert!(x86.iter().all(|id| t.uses_x86(id)));
}

#[test]
fn every_lite_and_verified_instance_has_an_entry() {
    let Some(dir) = shared_data() else {
        println!("SKIPPED: shared data (datasets) not found");
        return;
    };
    let t = SpecTable::embedded();
    let mut n = 0;
    for f in ["swebench_lite_test.jsonl", "swebench_verified_test.jsonl"] {
        let text = std::fs::read_to_string(dir.join("datasets").join(f)).unwrap();
        for line in text.lines() {
            let row: Value = serde_json::from_str(line).unwrap();
            let (repo, version) = (
                row["repo"].as_str().unwrap(),
                row["version"].as_str().unwrap(),
            );
            let e = t.lookup(repo, version).unwrap();
            assert!(e.test_command().is_some(), "{repo} {version}");
            n += 1;
        }
    }
    assert_eq!(n, 800);
}

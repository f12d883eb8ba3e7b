//! The extraction against what the original `extract_patches.py` did with the same answers on
//! the same repository (`tests/fixtures/parity*/…/original.json`, recorded by running the original
//! code on hand-written and on randomly generated answers). With the original's settings every patch type must succeed or fail as it did, change
//! the same files to the same bytes, and produce a diff that real `git apply` accepts.

use crate::common;

use std::collections::BTreeMap;

use serde::Deserialize;
use swtbench_extract::{
    extract, CustomStyle, ExtractOptions, FuzzyStyle, PatchType, PythonRunner, VanillaStyle,
};

#[derive(Debug, Deserialize)]
struct Recorded {
    applied: bool,
    files: BTreeMap<String, Option<String>>,
}

fn original_options() -> ExtractOptions {
    ExtractOptions {
        vanilla_style: VanillaStyle::Parity,
        custom_style: CustomStyle::Parity,
        fuzzy_style: FuzzyStyle::Parity,
    }
}

struct Case {
    name: String,
    model_output: String,
    recorded: BTreeMap<String, Recorded>,
}

/// `parity/`: one directory per hand-written case (`model_output.txt`, `original.json`).
fn hand_written() -> Vec<Case> {
    let root = common::fixtures().join("parity");
    let mut names: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| root.join(n).join("original.json").is_file())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let dir = root.join(&name);
            Case {
                model_output: std::fs::read_to_string(dir.join("model_output.txt")).unwrap(),
                recorded: serde_json::from_slice(
                    &std::fs::read(dir.join("original.json")).unwrap(),
                )
                .unwrap(),
                name,
            }
        })
        .collect()
}

/// A set of randomly generated answers (`<set>/cases/*.txt`) and one `<set>/original.json`.
fn generated(set: &str) -> Vec<Case> {
    let root = common::fixtures().join(set);
    let recorded: BTreeMap<String, BTreeMap<String, Recorded>> =
        serde_json::from_slice(&std::fs::read(root.join("original.json")).unwrap()).unwrap();
    recorded
        .into_iter()
        .map(|(name, recorded)| Case {
            model_output: std::fs::read_to_string(root.join("cases").join(&name)).unwrap(),
            recorded,
            name,
        })
        .collect()
}

fn check(
    label: &str,
    patch_type: PatchType,
    options: &ExtractOptions,
    python: Option<&dyn PythonRunner>,
) -> usize {
    let mut checked = 0;
    let sets = [
        ("parity", hand_written()),
        ("parity_generated", generated("parity_generated")),
        (
            "parity_custom_generated",
            generated("parity_custom_generated"),
        ),
    ];
    for (set, cases) in sets {
        assert!(cases.len() >= 20, "fixtures missing: {set}");
        let base = common::read_tree(&common::fixtures().join(set).join("base"));
        let source = common::memory_source(&base);
        for case in cases {
            let Some(recorded) = case.recorded.get(label) else {
                continue;
            };
            let ex = extract(&case.model_output, &[patch_type], &source, python, options);
            let what = format!("{set}/{} / {label}", case.name);
            assert_eq!(
                ex.succeeded(),
                recorded.applied,
                "{what}: success differs; attempts: {:?}",
                ex.attempts
            );
            if recorded.applied {
                let ours: BTreeMap<String, Option<String>> = ex
                    .files
                    .iter()
                    .map(|c| (c.path.clone(), Some(c.new.clone())))
                    .collect();
                if label == "vanilla_flushed" {
                    // The fixed style also creates the files of `--- /dev/null` sections,
                    // which the original never sees; everything else is the same.
                    for (path, content) in &recorded.files {
                        assert_eq!(ours.get(path), Some(content), "{what}: {path} differs");
                    }
                    for change in ex
                        .files
                        .iter()
                        .filter(|c| !recorded.files.contains_key(&c.path))
                    {
                        assert!(change.old.is_none(), "{what}: {} changed", change.path);
                    }
                } else {
                    assert_eq!(ours, recorded.files, "{what}: changed files differ");
                }
                let paths: Vec<String> = ours.keys().cloned().collect();
                let applied = common::git_apply(&base, &ex.patch, &paths).unwrap_or_else(|e| {
                    panic!("{what}: git apply refused our diff: {e}\n{}", ex.patch)
                });
                assert_eq!(
                    applied, ours,
                    "{what}: git apply of our diff gives other contents"
                );
            }
            checked += 1;
        }
    }
    checked
}

#[test]
fn vanilla_matches_the_original_including_its_unflushed_temp_file() {
    let n = check("vanilla", PatchType::Vanilla, &original_options(), None);
    println!("{n} cases");
}

#[test]
fn vanilla_fixed_matches_git_apply_of_the_minimal_patch() {
    let options = ExtractOptions {
        vanilla_style: VanillaStyle::Fixed,
        ..original_options()
    };
    check("vanilla_flushed", PatchType::Vanilla, &options, None);
}

#[test]
fn fuzzy_matches_the_original() {
    check("fuzzy", PatchType::Fuzzy, &original_options(), None);
}

#[test]
fn custom_parity_matches_the_original_under_python_3_11() {
    let Some(python) = common::python("3.11") else {
        println!("SKIPPED: no pyenv Python 3.11 (the original ran under 3.11)");
        return;
    };
    check(
        "custom",
        PatchType::Custom,
        &original_options(),
        Some(&python),
    );
}

/// Our diffs against the ones real `git diff <base>` writes after `git add --all` of the same
/// contents (what the original does): every recorded answer, every type and style that yields
/// a patch. The file headers (`diff --git`, `new file mode`, `index … 100644`) must be git's, and
/// so must the whole diffs, byte for byte.
#[test]
fn extracted_diffs_are_the_bytes_git_diff_writes() {
    let python = common::python("3.11");
    let runs: Vec<(&str, PatchType, ExtractOptions)> = vec![
        ("fuzzy", PatchType::Fuzzy, original_options()),
        (
            "fuzzy fixed",
            PatchType::Fuzzy,
            ExtractOptions {
                fuzzy_style: FuzzyStyle::Fixed,
                ..original_options()
            },
        ),
        (
            "vanilla fixed",
            PatchType::Vanilla,
            ExtractOptions {
                vanilla_style: VanillaStyle::Fixed,
                ..original_options()
            },
        ),
        ("custom", PatchType::Custom, original_options()),
        (
            "custom preserve",
            PatchType::Custom,
            ExtractOptions {
                custom_style: CustomStyle::Preserve,
                ..original_options()
            },
        ),
    ];
    let sets = [
        ("parity", hand_written()),
        ("parity_generated", generated("parity_generated")),
        (
            "parity_custom_generated",
            generated("parity_custom_generated"),
        ),
    ];
    let (mut compared, mut identical) = (0usize, 0usize);
    let mut different = Vec::new();
    for (set, cases) in sets {
        let base = common::read_tree(&common::fixtures().join(set).join("base"));
        let source = common::memory_source(&base);
        let (repo, commit) = common::git_repo(&base);
        let dir = repo.path();
        for case in &cases {
            for (label, patch_type, options) in &runs {
                let runner = python.as_ref().map(|p| p as &dyn PythonRunner);
                if *patch_type == PatchType::Custom && runner.is_none() {
                    continue;
                }
                let ex = extract(&case.model_output, &[*patch_type], &source, runner, options);
                if !ex.has_patch() {
                    continue;
                }
                for change in &ex.files {
                    let p = dir.join(&change.path);
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, &change.new).unwrap();
                }
                assert!(common::git(dir, &["add", "--all"]).status.success());
                let out = common::git(dir, &["diff", "--no-color", "--no-ext-diff", &commit]);
                assert!(out.status.success());
                let git_diff = String::from_utf8(out.stdout).unwrap();
                let what = format!("{set}/{} / {label}", case.name);
                let headers = |d: &str| -> Vec<String> {
                    d.lines()
                        .filter(|l| {
                            l.starts_with("diff --git ")
                                || l.starts_with("index ")
                                || l.starts_with("new file mode")
                        })
                        .map(str::to_string)
                        .collect()
                };
                assert_eq!(headers(&ex.patch), headers(&git_diff), "{what}");
                compared += 1;
                if ex.patch == git_diff {
                    identical += 1;
                } else {
                    if std::env::var_os("SWTBENCH_DUMP_DIFFS").is_some() {
                        let d = std::path::Path::new("/tmp/swtbench-diffs");
                        std::fs::create_dir_all(d).unwrap();
                        let n = different.len();
                        std::fs::write(d.join(format!("{n}.ours")), &ex.patch).unwrap();
                        std::fs::write(d.join(format!("{n}.git")), &git_diff).unwrap();
                    }
                    different.push(what);
                }
                assert!(common::git(dir, &["reset", "-q", "--hard", &commit])
                    .status
                    .success());
                assert!(common::git(dir, &["clean", "-fdq"]).status.success());
            }
        }
    }
    println!("{identical} of {compared} diffs byte-identical to git's; different: {different:?}");
    assert!(compared >= 100, "{compared}");
    // 160 of 160 when this was written (git 2.47).
    assert_eq!(identical, compared, "different: {different:?}");
}

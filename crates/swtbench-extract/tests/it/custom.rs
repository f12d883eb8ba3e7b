//! The custom (ZeroShotPlus) format through our Python script, on the host's pyenv interpreters.
//! Inputs are our own hand-written answers; the script only parses them.

use crate::common;

use std::collections::BTreeMap;

use swtbench_core::diff::{parse, LineKind};
use swtbench_extract::custom::{run_script, ScriptBlock, ScriptFile, ScriptRequest, PROTOCOL};
use swtbench_extract::{
    extract, AttemptError, AttemptOutcome, CustomStyle, ExtractOptions, HostPython, MemorySource,
    PatchType,
};

const PATH: &str = "tests/test_ops.py";

fn base() -> BTreeMap<String, String> {
    common::read_tree(&common::fixtures().join("parity/base"))
}

/// A raw ZeroShotPlus answer: prose, a fenced custom diff that rewrites an existing test and
/// inserts a new one at EOF.
fn answer() -> String {
    std::fs::read_to_string(
        common::fixtures().join("parity/custom_rewrite_and_insert/model_output.txt"),
    )
    .unwrap()
}

fn options(custom_style: CustomStyle) -> ExtractOptions {
    ExtractOptions {
        custom_style,
        ..ExtractOptions::default()
    }
}

fn pythons(from_minor: u32) -> Vec<(String, HostPython)> {
    (from_minor..=13)
        .filter_map(|m| {
            let v = format!("3.{m}.");
            common::python(&v).map(|p| (v, p))
        })
        .collect()
}

#[test]
fn must_show_preserve_rewrites_and_inserts_exactly_and_git_applies_it() {
    let Some(python) = common::python("3.11").or_else(|| common::python("3.")) else {
        println!("SKIPPED: no pyenv Python 3");
        return;
    };
    let base = base();
    let source = common::memory_source(&base);
    let ex = extract(
        &answer(),
        &[PatchType::Custom],
        &source,
        Some(&python),
        &options(CustomStyle::Preserve),
    );
    assert_eq!(
        ex.patch_type_used,
        Some(PatchType::Custom),
        "{}",
        ex.failure_summary()
    );

    let old = &base[PATH];
    let expected = old.replace(
        "    assert divide(6, 3) == 2\n",
        "    assert divide(6, 3) == 2\n    assert divide(1, 2) == 0.5\n",
    ) + "\n\ndef test_divide_by_zero():\n    with pytest.raises(ZeroDivisionError):\n        divide(1, 0)\n";
    assert_eq!(ex.files.len(), 1);
    assert_eq!(ex.files[0].new, expected);

    // The diff holds exactly those changes: nothing removed, only the new lines added.
    let patch = parse(&ex.patch).unwrap();
    assert!(patch.removed_lines().is_empty(), "{}", ex.patch);
    let added: Vec<String> = patch.files[0]
        .hunks
        .iter()
        .flat_map(|h| h.lines.iter())
        .filter(|l| l.kind == LineKind::Added)
        .map(|l| l.text.clone())
        .collect();
    assert_eq!(
        added,
        [
            "    assert divide(1, 2) == 0.5",
            "",
            "",
            "def test_divide_by_zero():",
            "    with pytest.raises(ZeroDivisionError):",
            "        divide(1, 0)"
        ]
    );
    // Comments elsewhere survive.
    assert!(ex.files[0].new.contains("    # exact division only\n"));

    let applied = common::git_apply(&base, &ex.patch, &[PATH.to_string()]).unwrap();
    assert_eq!(applied[PATH].as_deref(), Some(expected.as_str()));
}

#[test]
fn must_show_parity_gives_the_original_reformatted_file_and_git_applies_it() {
    let Some(python) = common::python("3.11") else {
        println!("SKIPPED: no pyenv Python 3.11 (the original runs ast.unparse under 3.11)");
        return;
    };
    let base = base();
    let source = common::memory_source(&base);
    let ex = extract(
        &answer(),
        &[PatchType::Custom],
        &source,
        Some(&python),
        &options(CustomStyle::Parity),
    );
    assert_eq!(
        ex.patch_type_used,
        Some(PatchType::Custom),
        "{}",
        ex.failure_summary()
    );
    let recorded: serde_json::Value = serde_json::from_slice(
        &std::fs::read(common::fixtures().join("parity/custom_rewrite_and_insert/original.json"))
            .unwrap(),
    )
    .unwrap();
    let original = recorded["custom"]["files"][PATH].as_str().unwrap();
    assert_eq!(ex.files[0].new, original);
    // Reformatted everywhere: the comment is gone and there is no final newline.
    assert!(!original.contains("# exact division only"));
    assert!(original.ends_with("divide(1, 0)"));
    assert!(original.contains("assert divide(1, 2) == 0.5"));
    let applied = common::git_apply(&base, &ex.patch, &[PATH.to_string()]).unwrap();
    assert_eq!(applied[PATH].as_deref(), Some(original));
}

#[test]
fn preserve_gives_the_same_bytes_on_every_python_from_3_6() {
    let all = pythons(6);
    if all.is_empty() {
        println!("SKIPPED: no pyenv Pythons");
        return;
    }
    let base = base();
    let source = common::memory_source(&base);
    let mut results = Vec::new();
    for (version, python) in &all {
        let ex = extract(
            &answer(),
            &[PatchType::Custom],
            &source,
            Some(python),
            &options(CustomStyle::Preserve),
        );
        assert!(ex.succeeded(), "{version}: {}", ex.failure_summary());
        results.push((version.clone(), ex.patch));
    }
    for (v, patch) in &results[1..] {
        assert_eq!(patch, &results[0].1, "{v} differs from {}", results[0].0);
    }
    println!("{} interpreters agree", results.len());
}

#[test]
fn parity_needs_python_3_9() {
    let Some(python) = common::python("3.8") else {
        println!("SKIPPED: no pyenv Python 3.8");
        return;
    };
    let source = common::memory_source(&base());
    let ex = extract(
        &answer(),
        &[PatchType::Custom],
        &source,
        Some(&python),
        &options(CustomStyle::Parity),
    );
    match &ex.attempts[0].outcome {
        AttemptOutcome::Failed {
            error: AttemptError::Custom { path, reason },
        } => {
            assert_eq!(path, PATH);
            assert!(reason.contains("needs Python 3.9"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // The preserve style works there.
    let ex = extract(
        &answer(),
        &[PatchType::Custom],
        &source,
        Some(&python),
        &options(CustomStyle::Preserve),
    );
    assert!(ex.succeeded(), "{}", ex.failure_summary());
}

const TRICKY: &str = r#"import os


@decorator
@other(
    arg=1,
)
def target(a,
           b):
    """Doc
    string"""
    if a:
        return b  # comment
    # trailing comment inside


class Outer:
    def target(self): return 1  # one-liner

    class Inner:
        def target(self):
            pass
        x = 1

async def target_async():
    def target():
        pass

def after():
    pass
"#;

const BLOCK: &str = "def target(x):\n    s = \"\"\"\nkeep\n  this\n\"\"\"\n    return s";

fn request(force_tokenize: bool) -> ScriptRequest {
    ScriptRequest {
        protocol: PROTOCOL,
        style: CustomStyle::Preserve,
        force_tokenize,
        files: vec![ScriptFile {
            path: "t.py".into(),
            source: Some(TRICKY.into()),
            blocks: vec![ScriptBlock {
                kind: "rewrite".into(),
                code: BLOCK.into(),
            }],
        }],
    }
}

#[test]
fn preserve_replaces_every_same_named_function_and_keeps_the_rest() {
    let Some(python) = common::python("3.11").or_else(|| common::python("3.")) else {
        println!("SKIPPED: no pyenv Python 3");
        return;
    };
    let response = run_script(&python, &request(false)).unwrap();
    let out = response.files[0].content.clone().unwrap();
    let expected = r#"import os


def target(x):
    s = """
keep
  this
"""
    return s
    # trailing comment inside


class Outer:
    def target(x):
        s = """
keep
  this
"""
        return s

    class Inner:
        def target(x):
            s = """
keep
  this
"""
            return s
        x = 1

async def target_async():
    def target(x):
        s = """
keep
  this
"""
        return s

def after():
    pass
"#;
    assert_eq!(out, expected);
}

#[test]
fn tokenizer_fallback_finds_the_same_spans_as_end_lineno() {
    let modern = pythons(8);
    let old = pythons(6)
        .into_iter()
        .filter(|(v, _)| v == "3.6." || v == "3.7.");
    let mut outputs = Vec::new();
    for (v, python) in &modern {
        let with_end = run_script(python, &request(false)).unwrap();
        let with_tokens = run_script(python, &request(true)).unwrap();
        assert_eq!(with_end.files, with_tokens.files, "{v}");
        outputs.push((v.clone(), with_end.files));
    }
    for (v, python) in old {
        outputs.push((
            v.clone(),
            run_script(&python, &request(false)).unwrap().files,
        ));
    }
    if outputs.is_empty() {
        println!("SKIPPED: no pyenv Pythons");
        return;
    }
    for (v, files) in &outputs[1..] {
        assert_eq!(files, &outputs[0].1, "{v} differs from {}", outputs[0].0);
    }
}

#[test]
fn failures_are_reported_per_reason() {
    let Some(python) = common::python("3.11").or_else(|| common::python("3.")) else {
        println!("SKIPPED: no pyenv Python 3");
        return;
    };
    let source = MemorySource::new().with("t.py", "def test_a():\n    pass\n");
    let opts = options(CustomStyle::Preserve);
    let reason = |out: &str| -> String {
        let ex = extract(out, &[PatchType::Custom], &source, Some(&python), &opts);
        match &ex.attempts[0].outcome {
            AttemptOutcome::Failed { error } => error.to_string(),
            AttemptOutcome::Applied { .. } => panic!("applied: {out}"),
        }
    };
    assert!(
        reason("diff\nt.py\nrewrite\n1\ndef test_b():\n    pass\nend diff\n")
            .contains("no function named 'test_b'")
    );
    assert!(
        reason("diff\nt.py\nrewrite\n1\nasync def test_a():\n    pass\nend diff\n")
            .contains("must start with a def or class, not AsyncFunctionDef")
    );
    assert!(reason("diff\nt.py\ninsert\nEOF\ndef broken(:\nend diff\n")
        .contains("block 1 does not parse"));
    assert!(reason("no blocks here").contains("no custom-diff block"));
    assert!(reason("diff\n../x.py\ninsert\nEOF\nx = 1\nend diff\n").contains("refusing path"));

    // Blocks of unknown kinds are ignored; BOF inserts go to the end, as in the original.
    let ok = extract(
        "diff\nt.py\nreplace\n1\nx = 1\nend diff\ndiff\nt.py\ninsert\nBOF\nimport os\nend diff\n",
        &[PatchType::Custom],
        &source,
        Some(&python),
        &opts,
    );
    assert_eq!(ok.files[0].new, "def test_a():\n    pass\n\n\nimport os\n");

    // Without an interpreter the attempt fails, and the result must not be cached.
    let none = extract(
        "diff\nt.py\ninsert\nEOF\nx = 1\nend diff\n",
        &[PatchType::Custom],
        &source,
        None,
        &opts,
    );
    assert!(!none.is_cacheable());
    let missing = HostPython::new("/nonexistent/python3");
    let broken = extract(
        "diff\nt.py\ninsert\nEOF\nx = 1\nend diff\n",
        &[PatchType::Custom],
        &source,
        Some(&missing),
        &opts,
    );
    assert!(matches!(
        &broken.attempts[0].outcome,
        AttemptOutcome::Failed { error: AttemptError::Python { detail } } if detail.contains("/nonexistent/python3")
    ));
}

#[test]
fn inserting_into_a_missing_file_creates_it() {
    let Some(python) = common::python("3.11").or_else(|| common::python("3.")) else {
        println!("SKIPPED: no pyenv Python 3");
        return;
    };
    let base = base();
    let source = common::memory_source(&base);
    let out =
        std::fs::read_to_string(common::fixtures().join("parity/custom_new_file/model_output.txt"))
            .unwrap();
    let ex = extract(
        &out,
        &[PatchType::Custom],
        &source,
        Some(&python),
        &options(CustomStyle::Preserve),
    );
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(ex.files[0].path, "tests/test_division.py");
    assert_eq!(ex.files[0].old, None);
    assert!(ex.files[0]
        .new
        .starts_with("import pytest\nfrom calc import divide\n\n@pytest.mark"));
    assert!(ex.patch.contains("new file mode 100644"));
    let applied =
        common::git_apply(&base, &ex.patch, &["tests/test_division.py".to_string()]).unwrap();
    assert_eq!(
        applied["tests/test_division.py"].as_deref(),
        Some(ex.files[0].new.as_str())
    );
}

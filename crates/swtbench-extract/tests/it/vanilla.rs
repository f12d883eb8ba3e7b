//! The vanilla format: the original's pinned minimal-patch example, its documented edge cases
//! and the `git apply` rules that decide whether the minimal patch applies.

use crate::common;

use std::collections::BTreeMap;

use swtbench_extract::vanilla::{minimal_patch, UNFLUSHED_THRESHOLD};
use swtbench_extract::{
    extract, AttemptError, AttemptOutcome, ExtractOptions, MemorySource, PatchType, VanillaStyle,
};

fn fixed() -> ExtractOptions {
    ExtractOptions {
        vanilla_style: VanillaStyle::Fixed,
        ..ExtractOptions::default()
    }
}

fn pinned() -> (String, String) {
    let dir = common::fixtures().join("pinned");
    (
        std::fs::read_to_string(dir.join("model_output.txt")).unwrap(),
        std::fs::read_to_string(dir.join("minimal_patch.diff")).unwrap(),
    )
}

#[test]
fn pinned_example_gives_the_pinned_minimal_patch() {
    let (input, expected) = pinned();
    assert_eq!(minimal_patch(&input, false).unwrap(), expected);
    assert_eq!(minimal_patch(&input, true).unwrap(), expected);
    // The header was recomputed and the blank context lines lost their space.
    assert!(expected.contains("@@ -16,3 +16,21 @@\n"));
    assert!(expected.contains("         pass\n\n+    class MaxLength"));
}

/// The file the pinned example was written against, up to its line 18, and optionally more.
fn pinned_base(more_after: bool) -> String {
    let mut lines: Vec<String> = (1..=12).map(|i| format!("# line {i}")).collect();
    lines.extend(
        [
            "",
            "",
            "class Nested:",
            "    class Field(models.Field):",
            "        pass",
            "",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    if more_after {
        lines.extend(
            ["", "class BasicFieldTests(SimpleTestCase):", "    pass"]
                .iter()
                .map(|s| s.to_string()),
        );
    }
    lines.join("\n") + "\n"
}

#[test]
fn hunk_without_trailing_context_must_match_at_the_end_of_the_file() {
    let (input, _) = pinned();
    let path = "tests/model_fields/tests.py";
    // Lines 16-18 are the file's last lines: git accepts the minimal patch.
    let at_end = MemorySource::new().with(path, &pinned_base(false));
    let ex = extract(&input, &[PatchType::Vanilla], &at_end, None, &fixed());
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    let new = &ex.files[0].new;
    assert!(new.contains("    from django.test import TestCase\n\n    class Field(models.Field):"));
    assert!(new.ends_with("            self.assertIn('Ensure this value has at most 5 characters (it has 12).', cm.exception.message_dict['name'])\n\n"));
    let base: BTreeMap<String, String> = [(path.to_string(), pinned_base(false))].into();
    let applied = common::git_apply(&base, &ex.patch, &[path.to_string()]).unwrap();
    assert_eq!(applied[path].as_deref(), Some(new.as_str()));

    // The same lines followed by more code: the blank line after the last change is not counted,
    // the hunk has no trailing context, and git refuses it.
    let in_middle = MemorySource::new().with(path, &pinned_base(true));
    let ex = extract(&input, &[PatchType::Vanilla], &in_middle, None, &fixed());
    assert!(!ex.succeeded());
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::GitApply {
                message: format!("patch failed: {path}:16")
            }
        }
    );
}

#[test]
fn parity_style_reproduces_the_unflushed_temporary_file() {
    let (input, _) = pinned();
    let source = MemorySource::new().with("tests/model_fields/tests.py", &pinned_base(false));
    let ex = extract(
        &input,
        &[PatchType::Vanilla],
        &source,
        None,
        &ExtractOptions::default(),
    );
    match &ex.attempts[0].outcome {
        AttemptOutcome::Failed {
            error: AttemptError::UnflushedPatch { bytes, threshold },
        } => {
            assert_eq!(*bytes, minimal_patch(&input, true).unwrap().len());
            assert_eq!(*threshold, UNFLUSHED_THRESHOLD);
        }
        other => panic!("expected the unflushed-file failure, got {other:?}"),
    }
}

const BASE: &str = "a\nb\nc\nd\ne\nf\n";

#[test]
fn blank_context_lines_and_line_numbers() {
    // Blank context without its space, wrong line numbers: git searches around the stated line.
    let source = MemorySource::new().with("x.txt", "a\nb\n\nc\nd\n");
    let out = "--- a/x.txt\n+++ b/x.txt\n@@ -40,4 +40,5 @@\n a\n b\n\n+new\n c\n";
    let ex = extract(out, &[PatchType::Vanilla], &source, None, &fixed());
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(ex.files[0].new, "a\nb\n\nnew\nc\nd\n");
}

#[test]
fn single_number_headers_are_not_recognised() {
    let source = MemorySource::new().with("x.txt", BASE);
    let out = "--- a/x.txt\n+++ b/x.txt\n@@ -2 +2 @@\n-b\n+B\n c\n";
    let ex = extract(out, &[PatchType::Vanilla], &source, None, &fixed());
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::GitApply {
                message: "no valid patches in input".into()
            }
        }
    );
    let two = "--- a/x.txt\n+++ b/x.txt\n@@ -2,1 +2,1 @@\n-b\n+B\n c\n";
    let ex = extract(two, &[PatchType::Vanilla], &source, None, &fixed());
    assert_eq!(ex.files[0].new, "a\nB\nc\nd\ne\nf\n");
}

#[test]
fn blank_line_before_the_next_hunk_is_a_fragment_without_header() {
    let source = MemorySource::new().with("x.txt", "a\nb\n\nc\nd\ne\nf\n");
    let out = "--- a/x.txt\n+++ b/x.txt\n@@ -1,3 +1,4 @@\n a\n b\n+B\n \n@@ -4,3 +5,4 @@\n c\n d\n+D\n e\n";
    let ex = extract(out, &[PatchType::Vanilla], &source, None, &fixed());
    match &ex.attempts[0].outcome {
        AttemptOutcome::Failed {
            error: AttemptError::GitApply { message },
        } => assert!(
            message.starts_with("patch fragment without header at line 6"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn only_the_fixed_style_creates_files() {
    let out = "diff --git a/t/test_new.py b/t/test_new.py\nnew file mode 100644\n--- /dev/null\n+++ b/t/test_new.py\n@@ -0,0 +1,2 @@\n+def test_x():\n+    assert True\n";
    let source = MemorySource::new().with("x.txt", BASE);
    let ex = extract(out, &[PatchType::Vanilla], &source, None, &fixed());
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(ex.files[0].old, None);
    assert_eq!(ex.files[0].new, "def test_x():\n    assert True\n");
    assert!(ex.patch.contains("new file mode 100644\n"));
    let base: BTreeMap<String, String> = [("x.txt".to_string(), BASE.to_string())].into();
    let applied = common::git_apply(&base, &ex.patch, &["t/test_new.py".to_string()]).unwrap();
    assert_eq!(
        applied["t/test_new.py"].as_deref(),
        Some(ex.files[0].new.as_str())
    );

    // Parity, as the original: the section is not seen at all, however long it is.
    let long = format!("{out}{}", "+    assert True\n".repeat(600));
    let ex = extract(
        &long,
        &[PatchType::Vanilla],
        &source,
        None,
        &ExtractOptions::default(),
    );
    assert!(!ex.succeeded());
    assert!(ex.patch.is_empty());
    let ex = extract(&long, &[PatchType::Vanilla], &source, None, &fixed());
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    // Creating a file that exists fails, as git does.
    let exists = MemorySource::new().with("t/test_new.py", "x\n");
    let ex = extract(out, &[PatchType::Vanilla], &exists, None, &fixed());
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::GitApply {
                message: "t/test_new.py: already exists in working directory".into()
            }
        }
    );
}

#[test]
fn paths_that_leave_the_repository_are_refused() {
    let out = "--- a/../outside.txt\n+++ b/../outside.txt\n@@ -1,1 +1,1 @@\n-a\n+b\n";
    let source = MemorySource::new().with("x.txt", BASE);
    let ex = extract(
        out,
        &[PatchType::Vanilla, PatchType::Fuzzy],
        &source,
        None,
        &fixed(),
    );
    assert!(!ex.succeeded());
    // Vanilla is refused as `git apply` refuses it; fuzzy by our own path check.
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::GitApply {
                message: "invalid path '../outside.txt'".into()
            }
        }
    );
    assert!(
        matches!(
            &ex.attempts[1].outcome,
            AttemptOutcome::Failed {
                error: AttemptError::UnsafePath { .. }
            }
        ),
        "{:?}",
        ex.attempts[1]
    );
}

/// `git apply` refuses paths with a `.` component or an absolute path ("invalid path"), so the
/// vanilla format does too; fuzzy, which opens the file relative to `/testbed`, resolves them.
#[test]
fn paths_git_apply_calls_invalid_fail_vanilla_only() {
    let source = MemorySource::new().with("tests/test_x.py", "a\nb\n");
    for name in ["./tests/test_x.py", "/testbed/tests/test_x.py"] {
        let answer = format!("--- a/{name}\n+++ b/{name}\n@@ -1,2 +1,3 @@\n a\n b\n+c\n");
        let ex = extract(
            &answer,
            &[PatchType::Vanilla, PatchType::Fuzzy],
            &source,
            None,
            &fixed(),
        );
        match &ex.attempts[0].outcome {
            AttemptOutcome::Failed {
                error: AttemptError::GitApply { message },
            } => assert_eq!(message, &format!("invalid path '{name}'")),
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(ex.patch_type_used, Some(PatchType::Fuzzy), "{name}");
        assert_eq!(ex.files[0].path, "tests/test_x.py");
    }
}

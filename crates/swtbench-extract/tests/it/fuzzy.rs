//! The fuzzy format's documented edge cases, in both styles, and the order of attempts.

use crate::common;

use std::collections::BTreeMap;

use swtbench_extract::{
    extract, AttemptError, AttemptOutcome, ExtractOptions, FuzzyStyle, MemorySource, PatchType,
    VanillaStyle,
};

const TESTS: &str =
    "import pytest\n\n\ndef test_a():\n    assert 1 == 1\n\n\ndef test_b():\n    assert 2 == 2\n";

fn source() -> MemorySource {
    MemorySource::new().with("tests/test_x.py", TESTS)
}

fn style(fuzzy_style: FuzzyStyle) -> ExtractOptions {
    ExtractOptions {
        fuzzy_style,
        ..ExtractOptions::default()
    }
}

fn new_content(out: &str, options: &ExtractOptions) -> String {
    let ex = extract(out, &[PatchType::Fuzzy], &source(), None, options);
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    ex.files[0].new.clone()
}

#[test]
fn no_following_context_replaces_to_the_end_of_the_file() {
    let out = "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -4,2 +4,3 @@\n def test_a():\n     assert 1 == 1\n+    assert 1 != 2\n";
    // Parity: everything after the insertion point is gone, and so is the final newline.
    assert_eq!(
        new_content(out, &style(FuzzyStyle::Parity)),
        "import pytest\n\n\ndef test_a():\n    assert 1 == 1\n    assert 1 != 2"
    );
    assert_eq!(
        new_content(out, &style(FuzzyStyle::Fixed)),
        "import pytest\n\n\ndef test_a():\n    assert 1 == 1\n    assert 1 != 2\n\n\ndef test_b():\n    assert 2 == 2\n"
    );
}

#[test]
fn blank_lines_without_prefix_are_ignored_and_terminators_end_the_hunk() {
    let out = "```diff\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -8,2 +8,3 @@\n def test_b():\n\n-    assert 2 == 2\n+    assert 2 == 3\n\n \n```\nExplanation: - this line is prose\n";
    let parity = new_content(out, &style(FuzzyStyle::Parity));
    // The following context is one empty line (` `): empty lines score nothing, so it is never
    // found and the change runs to the end of the file (checked against the original). The
    // prose after the fence is not part of the hunk.
    assert_eq!(
        parity,
        "import pytest\n\n\ndef test_a():\n    assert 1 == 1\n\n\ndef test_b():\n    assert 2 == 3"
    );
    let tag = "<patch>\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -4,2 +4,2 @@\n def test_a():\n-    assert 1 == 1\n+    assert 1 == 0\n \n</patch>\n+    junk after the tag\n";
    let fixed = new_content(tag, &style(FuzzyStyle::Fixed));
    assert_eq!(fixed, TESTS.replace("1 == 1", "1 == 0"));
}

#[test]
fn a_missing_file_fails_and_only_the_fixed_style_creates_files() {
    let missing = "--- a/tests/test_missing.py\n+++ b/tests/test_missing.py\n@@ -1,1 +1,2 @@\n import os\n+import sys\n";
    let ex = extract(
        missing,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &ExtractOptions::default(),
    );
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::FileNotFound {
                path: "tests/test_missing.py".into()
            }
        }
    );
    let created =
        "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1,2 @@\n+def test_new():\n+    pass\n";
    let ex = extract(
        created,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &ExtractOptions::default(),
    );
    // Parity, as the original: a `--- /dev/null` section is no section at all.
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::NoFileSections
        }
    );
    let ex = extract(
        created,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &style(FuzzyStyle::Fixed),
    );
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(ex.files[0].path, "tests/test_new.py");
    assert_eq!(ex.files[0].new, "def test_new():\n    pass\n");
}

#[test]
fn a_failed_parity_attempt_keeps_its_edits_and_a_fixed_one_does_not() {
    // Fuzzy edits test_x.py, then fails on the missing second file. The original keeps that edit
    // in its work tree: the next type builds on it and, when every type fails, its diff is the
    // patch. The fixed style drops it: vanilla starts from the untouched base.
    let out = "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -8,2 +8,2 @@\n def test_b():\n-    assert 2 == 2\n+    assert 2 == 4\n\
--- a/tests/gone.py\n+++ b/tests/gone.py\n@@ -1,1 +1,1 @@\n-x\n+y\n\
--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -4,2 +4,2 @@\n def test_a():\n-    assert 1 == 1\n+    assert 1 == 5\n \n";
    let options = ExtractOptions {
        vanilla_style: VanillaStyle::Fixed,
        ..ExtractOptions::default()
    };
    let types = [PatchType::Fuzzy, PatchType::Vanilla];
    let ex = extract(out, &types, &source(), None, &options);
    assert_eq!(ex.attempts.len(), 2);
    assert!(matches!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::FileNotFound { .. }
        }
    ));
    assert_eq!(ex.attempts[0].kept_edits, ["tests/test_x.py"]);
    // Vanilla fails too (missing file); the kept edit is the patch.
    assert!(!ex.succeeded());
    assert!(ex.is_partial());
    // No following context: parity truncates after the change and drops the final newline.
    let kept =
        "import pytest\n\n\ndef test_a():\n    assert 1 == 1\n\n\ndef test_b():\n    assert 2 == 4";
    assert_eq!(ex.files.len(), 1);
    assert_eq!(ex.files[0].new, kept);
    assert!(ex
        .failure_summary()
        .contains("edits to tests/test_x.py are kept"));
    let base: BTreeMap<String, String> =
        [("tests/test_x.py".to_string(), TESTS.to_string())].into();
    let applied = common::git_apply(&base, &ex.patch, &["tests/test_x.py".to_string()]).unwrap();
    assert_eq!(applied["tests/test_x.py"].as_deref(), Some(kept));

    // Fixed: nothing is kept, nothing is emitted.
    let fixed = ExtractOptions {
        fuzzy_style: FuzzyStyle::Fixed,
        ..options
    };
    let ex = extract(out, &types, &source(), None, &fixed);
    assert!(ex.attempts[0].kept_edits.is_empty());
    assert!(!ex.succeeded());
    assert!(!ex.is_partial());
    assert!(ex.patch.is_empty());

    let good = "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -4,2 +4,2 @@\n def test_a():\n-    assert 1 == 1\n+    assert 1 == 5\n \n \n";
    let ex = extract(
        &format!("{good}--- a/tests/gone.py\n+++ b/tests/gone.py\n@@ -1,1 +1,1 @@\n-x\n+y\n"),
        &[PatchType::Fuzzy, PatchType::Vanilla],
        &source(),
        None,
        &fixed,
    );
    // Vanilla applies the first file only after its own check of the whole patch: it also fails.
    assert!(!ex.succeeded());
    let ex = extract(
        good,
        &[PatchType::Custom, PatchType::Fuzzy],
        &source(),
        None,
        &fixed,
    );
    assert_eq!(ex.patch_type_used, Some(PatchType::Fuzzy));
    assert!(matches!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::NoCustomBlocks
        }
    ));
    let base: BTreeMap<String, String> =
        [("tests/test_x.py".to_string(), TESTS.to_string())].into();
    let applied = common::git_apply(&base, &ex.patch, &["tests/test_x.py".to_string()]).unwrap();
    assert_eq!(
        applied["tests/test_x.py"].as_deref(),
        Some(ex.files[0].new.as_str())
    );
}

#[test]
fn the_most_similar_place_wins_even_when_line_numbers_are_wrong() {
    let out = "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -90,3 +90,3 @@\n def test_b() :\n-    assert 2==2\n+    assert 2 == 20\n \n";
    let fixed = new_content(out, &style(FuzzyStyle::Fixed));
    assert_eq!(fixed, TESTS.replace("assert 2 == 2", "assert 2 == 20"));
}

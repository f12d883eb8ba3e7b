//! What the styles' parity defaults reproduce of the original's `extract_patches.py` beyond single
//! attempts, and what the other styles do instead: answers repeated in the output (with and
//! without new files), `--- /dev/null` sections of every shape, a failing type after partial
//! edits, and custom inserts at the same line whose line fields sort differently as strings.

use crate::common;

use std::collections::BTreeMap;

use swtbench_extract::{
    extract, AttemptError, AttemptOutcome, CustomStyle, ExtractOptions, FuzzyStyle, MemorySource,
    PatchType, VanillaStyle,
};

const TESTS: &str =
    "import pytest\n\n\ndef test_a():\n    assert 1 == 1\n\n\ndef test_b():\n    assert 2 == 2\n";

fn base() -> BTreeMap<String, String> {
    [("tests/test_x.py".to_string(), TESTS.to_string())].into()
}

fn source() -> MemorySource {
    common::memory_source(&base())
}

fn fuzzy(style: FuzzyStyle) -> ExtractOptions {
    ExtractOptions {
        fuzzy_style: style,
        ..ExtractOptions::default()
    }
}

fn contents(ex: &swtbench_extract::Extraction) -> BTreeMap<String, String> {
    ex.files
        .iter()
        .map(|c| (c.path.clone(), c.new.clone()))
        .collect()
}

/// Our diff, applied by real git to the base, gives the contents we report.
fn git_applies(ex: &swtbench_extract::Extraction) {
    let paths: Vec<String> = ex.files.iter().map(|c| c.path.clone()).collect();
    let applied = common::git_apply(&base(), &ex.patch, &paths).unwrap();
    let ours: BTreeMap<String, Option<String>> = ex
        .files
        .iter()
        .map(|c| (c.path.clone(), Some(c.new.clone())))
        .collect();
    assert_eq!(applied, ours);
}

const EDIT: &str = "--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -8,2 +8,3 @@\n def test_b():\n     assert 2 == 2\n+    assert 3 == 3\n";
const NEW: &str =
    "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1,2 @@\n+def test_new():\n+    pass\n";

#[test]
fn a_repeated_answer_with_a_new_file_in_parity_folds_it_into_the_previous_file() {
    // The original's section pattern needs `--- a/`: the new file's header and hunk belong to
    // the test_x.py section, its hunk has neither context nor removed lines, so it replaces all
    // of test_x.py. The repeat does the same again. test_new.py is never created.
    let out = format!("Answer:\n{EDIT}{NEW}\nAgain:\n{EDIT}{NEW}");
    let ex = extract(
        &out,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &fuzzy(FuzzyStyle::Parity),
    );
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(
        contents(&ex),
        BTreeMap::from([(
            "tests/test_x.py".to_string(),
            "def test_new():\n    pass".to_string()
        )])
    );
    git_applies(&ex);

    // Without the new file, the second copy finds the same preceding context: in parity it
    // replaces everything after it (no following context) with the same line again, so the
    // insertion is there once; the fixed style inserts it twice.
    let twice = format!("{EDIT}\n{EDIT}");
    for (style, count) in [(FuzzyStyle::Parity, 1), (FuzzyStyle::Fixed, 2)] {
        let ex = extract(&twice, &[PatchType::Fuzzy], &source(), None, &fuzzy(style));
        assert!(ex.succeeded(), "{}", ex.failure_summary());
        let new = &ex.files[0].new;
        assert_eq!(
            new.matches("assert 3 == 3").count(),
            count,
            "{style:?}: {new}"
        );
        git_applies(&ex);
    }
}

#[test]
fn a_repeated_answer_with_a_new_file_in_fixed_creates_it_once() {
    let out = format!("Answer:\n{EDIT}{NEW}\nAgain:\n{EDIT}{NEW}");
    let ex = extract(
        &out,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &fuzzy(FuzzyStyle::Fixed),
    );
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    let files = contents(&ex);
    assert_eq!(files["tests/test_new.py"], "def test_new():\n    pass\n");
    assert!(files["tests/test_x.py"].contains("assert 3 == 3"));
    git_applies(&ex);
    // A later creation of the same file replaces the earlier one.
    let revised = format!("{NEW}{}", NEW.replace("pass", "assert True"));
    let ex = extract(
        &revised,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &fuzzy(FuzzyStyle::Fixed),
    );
    assert_eq!(
        contents(&ex)["tests/test_new.py"],
        "def test_new():\n    assert True\n"
    );
    // Creating a file that is at the base commit still fails.
    let exists = NEW.replace("test_new.py", "test_x.py");
    let ex = extract(
        &exists,
        &[PatchType::Fuzzy],
        &source(),
        None,
        &fuzzy(FuzzyStyle::Fixed),
    );
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::FileExists {
                path: "tests/test_x.py".into()
            }
        }
    );
}

#[test]
fn dev_null_sections_of_every_shape() {
    let fixed_vanilla = ExtractOptions {
        vanilla_style: VanillaStyle::Fixed,
        ..fuzzy(FuzzyStyle::Fixed)
    };
    let run = |out: &str, t: PatchType, o: &ExtractOptions| extract(out, &[t], &source(), None, o);
    // Alone: the original sees no section (no patch); fixed creates the file.
    let ex = run(NEW, PatchType::Fuzzy, &ExtractOptions::default());
    assert!(!ex.has_patch());
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::NoFileSections
        }
    );
    for t in [PatchType::Fuzzy, PatchType::Vanilla] {
        let ex = run(NEW, t, &fixed_vanilla);
        assert_eq!(
            contents(&ex)["tests/test_new.py"],
            "def test_new():\n    pass\n",
            "{t}"
        );
        git_applies(&ex);
    }
    // With a `diff --git` line: that line ends the previous section, so the original skips the
    // new file and applies the rest.
    let git_new = format!(
        "{EDIT}diff --git a/tests/test_new.py b/tests/test_new.py\nnew file mode 100644\n{NEW}"
    );
    let ex = run(&git_new, PatchType::Fuzzy, &ExtractOptions::default());
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(ex.files.len(), 1);
    assert_eq!(ex.files[0].path, "tests/test_x.py");
    let ex = run(&git_new, PatchType::Fuzzy, &fixed_vanilla);
    assert_eq!(ex.files.len(), 2);
    git_applies(&ex);
    // An empty `@@ @@` header: no hunk the pattern reads. Fixed creates no empty file and says
    // why; git apply refuses such a patch too ("No valid patches in input").
    let empty_header =
        "--- /dev/null\n+++ b/tests/test_new.py\n@@ @@\n+def test_new():\n+    pass\n";
    let ex = run(empty_header, PatchType::Fuzzy, &fixed_vanilla);
    assert!(!ex.has_patch());
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::NewFileWithoutHunks {
                path: "tests/test_new.py".into()
            }
        }
    );
    let ex = run(empty_header, PatchType::Vanilla, &fixed_vanilla);
    assert!(!ex.has_patch(), "{:?}", ex.files);
    // The single-number form (`@@ -0,0 +1 @@`) is no hunk header for the original's pattern
    // either: the same in both types.
    let single = "--- /dev/null\n+++ b/tests/test_new.py\n@@ -0,0 +1 @@\n+x = 1\n";
    let ex = run(single, PatchType::Fuzzy, &fixed_vanilla);
    assert!(matches!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::NewFileWithoutHunks { .. }
        }
    ));
    assert!(!run(single, PatchType::Vanilla, &fixed_vanilla).has_patch());
    let ex = run(empty_header, PatchType::Fuzzy, &ExtractOptions::default());
    assert!(!ex.has_patch());
    // After another section, in parity, its lines join that section's last hunk: `--- /dev/null`
    // counts as a removed line, the others as added ones (the `@@ @@` line is ignored).
    let folded = format!("{EDIT}{empty_header}");
    let ex = run(&folded, PatchType::Fuzzy, &ExtractOptions::default());
    assert!(ex.succeeded(), "{}", ex.failure_summary());
    assert_eq!(ex.files.len(), 1);
    assert!(
        ex.files[0]
            .new
            .contains("++ b/tests/test_new.py\ndef test_new():\n    pass"),
        "{}",
        ex.files[0].new
    );
}

#[test]
fn custom_inserts_at_the_same_place_follow_the_string_order_in_parity() {
    let python = common::python("3.11")
        .or_else(|| common::python("3.1"))
        .or_else(|| common::python("3.9"));
    let Some(python) = python else {
        println!("SKIPPED: no pyenv Python 3.9+");
        return;
    };
    // Line fields 9 and 10: numerically 9 first, as strings "10" < "9".
    let out = "diff\ntests/test_x.py\ninsert\n9\ndef test_nine():\n    pass\nend diff\n\
diff\ntests/test_x.py\ninsert\n10\ndef test_ten():\n    pass\nend diff\n";
    let order = |style: CustomStyle| {
        let options = ExtractOptions {
            custom_style: style,
            ..ExtractOptions::default()
        };
        let ex = extract(
            out,
            &[PatchType::Custom],
            &source(),
            Some(&python),
            &options,
        );
        assert!(ex.succeeded(), "{}", ex.failure_summary());
        let new = ex.files[0].new.clone();
        let nine = new.find("test_nine").unwrap();
        let ten = new.find("test_ten").unwrap();
        if ten < nine {
            "10 first"
        } else {
            "9 first"
        }
    };
    assert_eq!(order(CustomStyle::Parity), "10 first");
    assert_eq!(order(CustomStyle::Preserve), "9 first");
}

#[test]
fn a_failing_custom_file_keeps_the_files_before_it_in_parity() {
    let Some(python) = common::python("3.11") else {
        println!("SKIPPED: no pyenv Python 3.11");
        return;
    };
    // Two files: test_x.py gets an insert, then a rewrite in a second file finds nothing (the
    // equal line fields keep the blocks in order). The original writes test_x.py before it
    // fails on the second file, and emits its diff.
    let out = "diff\ntests/test_x.py\ninsert\nEOF\ndef test_c():\n    pass\nend diff\n\
diff\ntests/test_y.py\nrewrite\nEOF\ndef test_missing():\n    pass\nend diff\n";
    let mut base = base();
    base.insert("tests/test_y.py".into(), "def test_y():\n    pass\n".into());
    let source = common::memory_source(&base);
    let ex = extract(
        out,
        &[PatchType::Custom],
        &source,
        Some(&python),
        &ExtractOptions::default(),
    );
    assert!(!ex.succeeded());
    assert!(ex.is_partial(), "{:?}", ex.attempts);
    assert_eq!(ex.attempts[0].kept_edits, ["tests/test_x.py"]);
    assert_eq!(ex.files.len(), 1);
    assert!(ex.files[0].new.ends_with("def test_c():\n    pass"));
    let preserve = ExtractOptions {
        custom_style: CustomStyle::Preserve,
        ..ExtractOptions::default()
    };
    let ex = extract(out, &[PatchType::Custom], &source, Some(&python), &preserve);
    assert!(!ex.has_patch());
    // A custom attempt that keeps edits, then fuzzy: fuzzy reads the file as custom left it.
    let then_fuzzy = format!(
        "{out}--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1,1 +1,1 @@\n-def test_c():\n+def test_d():\n     pass\n"
    );
    let ex = extract(
        &then_fuzzy,
        &[PatchType::Custom, PatchType::Fuzzy],
        &source,
        Some(&python),
        &ExtractOptions::default(),
    );
    assert_eq!(
        ex.patch_type_used,
        Some(PatchType::Fuzzy),
        "{:?}",
        ex.attempts
    );
    assert!(
        ex.files[0].new.contains("def test_d():"),
        "{}",
        ex.files[0].new
    );
}

#[test]
fn a_type_that_changes_nothing_ends_the_search_in_parity() {
    // Fuzzy replaces a line by itself in a file without a final newline: no change. The
    // original counts that as a success and stops with an empty diff; the fixed style lets the
    // next type try.
    let src = MemorySource::new().with("a.py", "x = 1");
    let out = "--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-x = 1\n+x = 1\n";
    let ex = extract(
        out,
        &[PatchType::Fuzzy, PatchType::Vanilla],
        &src,
        None,
        &ExtractOptions::default(),
    );
    assert_eq!(ex.attempts.len(), 1, "{:?}", ex.attempts);
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::NoChanges
        }
    );
    let ex = extract(
        out,
        &[PatchType::Fuzzy, PatchType::Vanilla],
        &src,
        None,
        &fuzzy(FuzzyStyle::Fixed),
    );
    assert_eq!(ex.attempts.len(), 2);
}

#[test]
fn a_section_the_original_crashes_on_ends_the_extraction_in_parity() {
    // `--- a/` and `+++ b/` not on adjacent lines: the original's section pattern matches, its
    // header pattern does not, and the script dies with an IndexError: no patch, even from the
    // edits an earlier type kept, and no later type. The fixed style fails that type only.
    let out = format!(
        "{EDIT}--- a/tests/test_x.py\nwhatever\n+++ b/tests/test_x.py\n@@ -1,1 +1,1 @@\n-import pytest\n+import os\n"
    );
    let ex = extract(
        &out,
        &[PatchType::Fuzzy, PatchType::Vanilla],
        &source(),
        None,
        &ExtractOptions::default(),
    );
    assert_eq!(ex.attempts.len(), 1, "{:?}", ex.attempts);
    assert_eq!(
        ex.attempts[0].outcome,
        AttemptOutcome::Failed {
            error: AttemptError::MalformedHeader { index: 2 }
        }
    );
    assert!(!ex.has_patch());
    let ex = extract(
        &out,
        &[PatchType::Fuzzy, PatchType::Vanilla],
        &source(),
        None,
        &fuzzy(FuzzyStyle::Fixed),
    );
    assert_eq!(ex.attempts.len(), 2, "{:?}", ex.attempts);
}

#[test]
fn a_custom_block_the_original_crashes_on_ends_the_extraction_in_parity() {
    let Some(python) = common::python("3.11") else {
        println!("SKIPPED: no pyenv Python 3.11");
        return;
    };
    // An empty rewrite block: the original indexes its empty body (IndexError) and writes no
    // patch, so the fuzzy diff after it is never tried. Preserve fails the custom type only.
    let out = format!("diff\ntests/test_x.py\nrewrite\nEOF\nend diff\n{EDIT}");
    let types = [PatchType::Custom, PatchType::Fuzzy];
    let ex = extract(
        &out,
        &types,
        &source(),
        Some(&python),
        &ExtractOptions::default(),
    );
    assert_eq!(ex.attempts.len(), 1, "{:?}", ex.attempts);
    assert!(matches!(
        &ex.attempts[0].outcome,
        AttemptOutcome::Failed { error: AttemptError::CustomCrash { path, .. } } if path == "tests/test_x.py"
    ));
    assert!(!ex.has_patch());
    let preserve = ExtractOptions {
        custom_style: CustomStyle::Preserve,
        ..ExtractOptions::default()
    };
    let ex = extract(&out, &types, &source(), Some(&python), &preserve);
    assert_eq!(
        ex.patch_type_used,
        Some(PatchType::Fuzzy),
        "{:?}",
        ex.attempts
    );
    // A null byte in the file: the original (Python 3.11) raises ValueError, uncaught.
    let src = MemorySource::new().with("tests/test_x.py", "x = 1\x00\n");
    let insert = "diff\ntests/test_x.py\ninsert\nEOF\ny = 2\nend diff\n";
    let ex = extract(
        insert,
        &[PatchType::Custom],
        &src,
        Some(&python),
        &ExtractOptions::default(),
    );
    assert!(
        matches!(
            &ex.attempts[0].outcome,
            AttemptOutcome::Failed {
                error: AttemptError::CustomCrash { .. }
            }
        ),
        "{:?}",
        ex.attempts
    );
}

#[test]
fn custom_blocks_for_a_missing_file_in_both_styles() {
    let Some(python) = common::python("3.11") else {
        println!("SKIPPED: no pyenv Python 3.11");
        return;
    };
    for style in [CustomStyle::Parity, CustomStyle::Preserve] {
        let options = ExtractOptions {
            custom_style: style,
            ..ExtractOptions::default()
        };
        let run = |out: &str| {
            extract(
                out,
                &[PatchType::Custom],
                &source(),
                Some(&python),
                &options,
            )
        };
        // insert: the missing file is an empty module and is created.
        let ex = run("diff\ntests/test_new.py\ninsert\nEOF\ndef test_n():\n    pass\nend diff\n");
        assert!(ex.succeeded(), "{style:?}: {}", ex.failure_summary());
        assert_eq!(ex.files[0].old, None);
        git_applies(&ex);
        // rewrite: nothing to replace, the type fails.
        let ex = run("diff\ntests/test_new.py\nrewrite\n1\ndef test_n():\n    pass\nend diff\n");
        assert!(!ex.has_patch(), "{style:?}");
        // another kind: nothing is created (the original writes an empty file, see the docs).
        let ex = run("diff\ntests/test_new.py\nreplace\n1\ndef test_n():\n    pass\nend diff\n");
        assert!(!ex.has_patch(), "{style:?}");
    }
}

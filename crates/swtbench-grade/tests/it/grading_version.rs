//! `--grading-version 1.2` on a sympy 1.1-style prediction (`tests/fixtures/logs/sympy__sympy/
//! sympy-1.1-style-long-header.{pre,post}.synthetic.log`, trimmed from a reproduction of a
//! published prediction): its test fails before the fix and passes after it, and its failure
//! header is 81 characters long, so sympy 1.1 prints it without underscores and the traceback's
//! `  File` line follows it directly. The original's release 1.2.0 read a phantom FAILED test out
//! of that header, absent after the fix (F→X), and counted F→X as FAIL_TO_FAIL: unresolved. The
//! current release (the default) resolves it.

use std::path::PathBuf;

use swtbench_core::TestStatus;
use swtbench_grade::logs::parse_log;
use swtbench_grade::transitions::Transitions;
use swtbench_grade::{grade_instance, GradeOptions, GradingVersion, InstanceRunOutputs, Parser};

const TEST: &str = "test_evalf_composition_bug";
/// `test_(\S*)` from the header's `test_coverup_…` up to its trailing space, then the `F` of `File`.
const PHANTOM: &str = "test_coverup_sympy__sympy-12096.py:test_evalf_composition_bug";

/// The gold fix: one changed line of the traced file.
const GOLD_CODE_PATCH: &str = "diff --git a/sympy/core/function.py b/sympy/core/function.py\n\
--- a/sympy/core/function.py\n+++ b/sympy/core/function.py\n@@ -1391,1 +1391,1 @@\n-        x = 1\n+        x = 2\n";

/// A base run: no model test patch, so the directive names a file that does not exist.
const BASE: &str = "+ cd /testbed\n\
+ PYTHONWARNINGS=ignore::UserWarning,ignore::SyntaxWarning\n\
+ python3 /root/trace.py --count -C coverage.cover --include-pattern '/testbed/(sympy/core/function\\.py)' bin/test -C --verbose sympy/polys/tests/test_coverup_sympy__sympy-12096.py\n\
============================= test process starts ==============================\n\
\n\
================== tests finished: 0 passed, in 0.00 seconds ===================\n\
+ cat coverage.cover\n\
{\"/testbed/sympy/core/function.py\": {\"1391\": 0}}\n";

fn fixture(phase: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!(
        "tests/fixtures/logs/sympy__sympy/sympy-1.1-style-long-header.{phase}.synthetic.log"
    ));
    std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn status(parser: Parser, bytes: &[u8], test: &str) -> Option<TestStatus> {
    parse_log(Some(bytes), parser).tests.get(test).cloned()
}

#[test]
fn release_1_2_parser_reads_a_phantom_failed_test_from_the_long_header() {
    let (pre, post) = (fixture("pre"), fixture("post"));
    // Today's parser: only the real test.
    let now = parse_log(Some(&pre), Parser::Sympy);
    assert!(now.applied);
    assert_eq!(now.tests.len(), 1, "{:?}", now.tests);
    assert_eq!(now.tests.get(TEST), Some(&TestStatus::Failed));
    // Release 1.2.0's: the real test and the phantom one.
    let old = parse_log(Some(&pre), Parser::Sympy12);
    assert_eq!(old.tests.len(), 2, "{:?}", old.tests);
    assert_eq!(old.tests.get(TEST), Some(&TestStatus::Failed));
    assert_eq!(old.tests.get(PHANTOM), Some(&TestStatus::Failed));
    // After the fix nothing fails, so no header and no phantom, in either release.
    for parser in [Parser::Sympy, Parser::Sympy12] {
        assert_eq!(status(parser, &post, TEST), Some(TestStatus::Passed));
        assert_eq!(parse_log(Some(&post), parser).tests.len(), 1);
    }
    // The phantom goes F→X: UNMATCHED today, FAIL_TO_FAIL in release 1.2.0.
    let post_map = parse_log(Some(&post), Parser::Sympy12).tests;
    let now = Transitions::between_for(&old.tests, &post_map, GradingVersion::V1_3);
    assert_eq!(now.unmatched, vec![PHANTOM.to_string()]);
    assert!(now.fail_to_fail.is_empty());
    let then = Transitions::between_for(&old.tests, &post_map, GradingVersion::V1_2);
    assert_eq!(then.fail_to_fail, vec![PHANTOM.to_string()]);
    assert!(then.unmatched.is_empty());
    assert_eq!(then.fail_to_pass, vec![TEST.to_string()]);
}

#[test]
fn release_1_2_grading_leaves_the_instance_unresolved() {
    let (pre, post) = (fixture("pre"), fixture("post"));
    let inputs = InstanceRunOutputs {
        instance_id: "sympy__sympy-12096",
        repo: "sympy/sympy",
        gold_code_patch: GOLD_CODE_PATCH,
        outputs: [
            Some(&pre),
            Some(&post),
            None,
            None,
            Some(BASE.as_bytes()),
            Some(BASE.as_bytes()),
        ],
    };
    let grade = |version| {
        let options = GradeOptions {
            grading_version: version,
            ..Default::default()
        };
        grade_instance(&inputs, &options).unwrap().report
    };

    let now = grade(GradingVersion::default());
    assert!(now.resolved, "{now:?}");
    assert_eq!(now.added_f2p, Some(1));
    let pred = now.tests_pred.as_ref().unwrap();
    assert_eq!(pred.fail_to_pass, vec![TEST.to_string()]);
    assert!(pred.fail_to_fail.is_empty() && pred.unmatched.is_empty());

    let then = grade(GradingVersion::V1_2);
    assert!(!then.resolved, "{then:?}");
    assert_eq!(then.added_f2p, Some(1));
    let pred = then.tests_pred.as_ref().unwrap();
    assert_eq!(pred.fail_to_pass, vec![TEST.to_string()]);
    assert_eq!(pred.fail_to_fail, vec![PHANTOM.to_string()]);
    assert!(pred.unmatched.is_empty());
    // Coverage does not depend on the release.
    assert_eq!(then.coverage, now.coverage);
    // report.json in release 1.2.0's shape: the phantom under FAIL_TO_FAIL, UNMATCHED empty.
    let json: serde_json::Value = serde_json::from_str(&then.to_report_json()).unwrap();
    let tests_pred = &json["sympy__sympy-12096"]["tests_pred"];
    assert_eq!(tests_pred["FAIL_TO_FAIL"], serde_json::json!([PHANTOM]));
    assert_eq!(tests_pred["UNMATCHED"], serde_json::json!([]));
}

//! Grading one instance from its six run outputs, and its `report.json` (§7.3).
//!
//! [`grade_instance`] is the whole per-instance pipeline: parse the six logs and coverage dumps,
//! compare pred/gold/base pre → post, decide resolved, compute coverage. [`InstanceReport`] is
//! the `report.json` record, written with the original's keys, key order and `indent=4`
//! formatting (bucket lists sorted), and read back leniently from reports written by either tool.
//!
//! Pure: bytes in, data and text out.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use swtbench_core::RunKind;

use crate::coverage::{
    self, ChangedLines, CoverageFormula, CoverageInputs, CoverageMap, CoverageResult,
};
use crate::logs::{self, ExecMode, ParsedLog};
use crate::parsers::Parser;
use crate::py;
use crate::transitions::{added_fail_to_pass, resolution, Transitions};
use crate::version::GradingVersion;

/// Options that change how an instance is graded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GradeOptions {
    pub exec_mode: ExecMode,
    pub coverage_formula: CoverageFormula,
    /// `--strict-results`: a test an integrity reason names counts as failed, and a suspicious
    /// instance as unresolved ([`crate::integrity::apply_strict`]). Off: the original's grade.
    #[serde(default)]
    pub strict_results: bool,
    /// `--grading-version`: the release of the original whose grading is reproduced (its sympy
    /// parser and its buckets, [`crate::version`]). Default: the current one.
    #[serde(default)]
    pub grading_version: GradingVersion,
}

/// What grading one instance needs: its identity, the gold code fix, and each run's
/// `test_output.txt` in [`RunKind::ALL`] order (`None` = the file does not exist).
#[derive(Debug, Clone, Copy)]
pub struct InstanceRunOutputs<'a> {
    pub instance_id: &'a str,
    pub repo: &'a str,
    pub gold_code_patch: &'a str,
    pub outputs: [Option<&'a [u8]>; 6],
}

impl<'a> InstanceRunOutputs<'a> {
    /// The output of one run.
    pub fn output(&self, kind: RunKind) -> Option<&'a [u8]> {
        self.outputs[kind_index(kind)]
    }
}

pub(crate) fn kind_index(kind: RunKind) -> usize {
    RunKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_default()
}

/// Why an instance could not be graded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GradeError {
    #[error("instance {instance_id}: no log parser for repository `{repo}` (known: {known})")]
    UnknownRepo {
        instance_id: String,
        repo: String,
        known: String,
    },
    #[error("instance {instance_id}: the gold code patch is not a valid diff: {detail}")]
    GoldPatch { instance_id: String, detail: String },
}

/// The `report.json` record of one instance.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InstanceReport {
    pub instance_id: String,
    pub patch_is_none: bool,
    pub patch_exists: bool,
    /// The model patch applied in pred_pre (`git apply -v` said so).
    pub patch_successfully_applied: bool,
    pub resolved: bool,
    pub coverage: CoverageResult,
    /// Present when the patch applied.
    pub added_f2p: Option<u64>,
    pub tests_base: Option<Transitions>,
    pub tests_pred: Option<Transitions>,
    pub tests_gold: Option<Transitions>,
}

/// Everything grading found out about one instance.
#[derive(Debug, Clone, PartialEq)]
pub struct GradedInstance {
    pub report: InstanceReport,
    /// The six parsed logs, in [`RunKind::ALL`] order.
    pub runs: [ParsedLog; 6],
    /// The six coverage dumps, in [`RunKind::ALL`] order.
    pub coverage_maps: [CoverageMap; 6],
    /// The gold fix's changed lines that count for coverage.
    pub changed_lines: ChangedLines,
}

/// Grades one instance (the original's `report_results` + `get_pred_report`).
pub fn grade_instance(
    inputs: &InstanceRunOutputs<'_>,
    options: &GradeOptions,
) -> Result<GradedInstance, GradeError> {
    grade_instance_with_parser(inputs, options, unit_test_parser(inputs, options)?)
}

/// The original's parser of `inputs.repo`, or the error that names the repositories it knows.
fn unit_test_parser(
    inputs: &InstanceRunOutputs<'_>,
    options: &GradeOptions,
) -> Result<Parser, GradeError> {
    logs::parser_for(inputs.repo, options.exec_mode).ok_or_else(|| GradeError::UnknownRepo {
        instance_id: inputs.instance_id.to_string(),
        repo: inputs.repo.to_string(),
        known: crate::parsers::REPO_PARSERS
            .iter()
            .map(|(r, _)| *r)
            .collect::<Vec<_>>()
            .join(", "),
    })
}

/// [`grade_instance`] with the unit-test log parser chosen by the caller (a spec table's
/// `log_parser` for repositories the original's map does not know). In reproduction-script mode
/// the reproduction parser is used whatever `unit_test_parser` says.
pub fn grade_instance_with_parser(
    inputs: &InstanceRunOutputs<'_>,
    options: &GradeOptions,
    unit_test_parser: Parser,
) -> Result<GradedInstance, GradeError> {
    let parser = grading_parser(options, unit_test_parser);
    let parsed = inputs.outputs.map(|o| logs::parse_run(o, parser));
    grade_parsed(inputs.instance_id, inputs.gold_code_patch, parsed, options)
}

/// The parser [`grade_instance_with_parser`] reads the logs with: `unit_test_parser` as the
/// grading version has it.
pub fn grading_parser(options: &GradeOptions, unit_test_parser: Parser) -> Parser {
    match options.exec_mode {
        ExecMode::ReproductionScript => Parser::ReproductionScript,
        ExecMode::UnitTest => options.grading_version.parser(unit_test_parser),
    }
}

/// [`grade_instance_with_parser`] from the six outputs already parsed ([`logs::parse_run`] with
/// [`grading_parser`], in [`RunKind::ALL`] order), so that a caller can read and parse one
/// output at a time instead of holding all six.
pub fn grade_parsed(
    instance_id: &str,
    gold_code_patch: &str,
    parsed: [logs::ParsedRun; 6],
    options: &GradeOptions,
) -> Result<GradedInstance, GradeError> {
    let mut runs: [ParsedLog; 6] = Default::default();
    let mut coverage_maps: [CoverageMap; 6] = Default::default();
    for (i, p) in parsed.into_iter().enumerate() {
        runs[i] = p.log;
        coverage_maps[i] = p.coverage;
    }
    let mut report = InstanceReport {
        instance_id: instance_id.to_string(),
        patch_exists: true,
        ..Default::default()
    };
    let pred_pre = &runs[kind_index(RunKind::PredPre)];
    if !pred_pre.applied {
        return Ok(GradedInstance {
            report,
            runs,
            coverage_maps,
            changed_lines: ChangedLines::default(),
        });
    }
    report.patch_successfully_applied = true;
    let tests = |pre: RunKind, post: RunKind| {
        Transitions::between_for(
            &runs[kind_index(pre)].tests,
            &runs[kind_index(post)].tests,
            options.grading_version,
        )
    };
    let pred = tests(RunKind::PredPre, RunKind::PredPost);
    let base = tests(RunKind::BasePre, RunKind::BasePost);
    let gold = tests(RunKind::GoldPre, RunKind::GoldPost);

    let (removed, added) =
        coverage::patch_changed_lines(gold_code_patch).map_err(|e| GradeError::GoldPatch {
            instance_id: instance_id.to_string(),
            detail: e.to_string(),
        })?;
    let c = |k: RunKind| &coverage_maps[kind_index(k)];
    let maps = CoverageInputs {
        pred_pre: c(RunKind::PredPre),
        pred_post: c(RunKind::PredPost),
        gold_pre: c(RunKind::GoldPre),
        gold_post: c(RunKind::GoldPost),
        base_pre: c(RunKind::BasePre),
        base_post: c(RunKind::BasePost),
    };
    let (cov, changed_lines) = coverage::compute(&removed, &added, maps, options.coverage_formula);
    report.coverage = cov;

    let (resolved, added_f2p) = resolution(&pred, &base);
    report.resolved = resolved;
    report.added_f2p = Some(added_f2p as u64);
    report.tests_base = Some(base);
    report.tests_pred = Some(pred);
    report.tests_gold = Some(gold);
    Ok(GradedInstance {
        report,
        runs,
        coverage_maps,
        changed_lines,
    })
}

/// Why a `report.json` could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportReadError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("expected an object keyed by instance id")]
    NotAnObject,
    #[error("no entry for instance `{0}`")]
    MissingInstance(String),
    #[error("field `{field}` has the wrong type")]
    WrongType { field: &'static str },
}

impl InstanceReport {
    /// The report of an instance whose prediction has no usable patch: not applied, no tests,
    /// no coverage (the original reaches the same grade after running the empty patch, whose
    /// `git apply` fails).
    pub fn empty_patch(instance_id: &str) -> InstanceReport {
        InstanceReport {
            instance_id: instance_id.to_string(),
            patch_exists: true,
            ..Default::default()
        }
    }

    /// Whether this is the early-return report of a patch that did not apply: not resolved, no
    /// tests, no coverage.
    pub fn is_not_applied(&self) -> bool {
        !self.patch_successfully_applied
            && !self.resolved
            && self.added_f2p.is_none()
            && self.tests_pred.is_none()
            && self.tests_base.is_none()
            && self.tests_gold.is_none()
            && self.coverage == CoverageResult::default()
    }

    /// Whether the instance counts as resolved (S).
    pub fn is_resolved(&self) -> bool {
        self.resolved
    }

    /// The tests the model's patch turned from fail to pass beyond the base runs (F→P).
    pub fn added_fail_to_pass(&self) -> Vec<&str> {
        match (&self.tests_pred, &self.tests_base) {
            (Some(p), Some(b)) => added_fail_to_pass(p, b).into_iter().collect(),
            (Some(p), None) => p.fail_to_pass.iter().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }

    /// The inner object of `report.json`, keys in the original's order.
    pub fn to_value(&self) -> Value {
        let f = |x: Option<f64>| x.map_or(Value::Null, |v| json!(v));
        let mut m = Map::new();
        m.insert("patch_is_None".into(), json!(self.patch_is_none));
        m.insert("patch_exists".into(), json!(self.patch_exists));
        m.insert(
            "patch_successfully_applied".into(),
            json!(self.patch_successfully_applied),
        );
        m.insert("resolved".into(), json!(self.resolved));
        m.insert("coverage_pred".into(), f(self.coverage.coverage_pred));
        m.insert("coverage_gold".into(), f(self.coverage.coverage_gold));
        m.insert("coverage_base".into(), f(self.coverage.coverage_base));
        m.insert(
            "coverage_delta_pred".into(),
            f(self.coverage.coverage_delta_pred),
        );
        m.insert(
            "coverage_delta_gold".into(),
            f(self.coverage.coverage_delta_gold),
        );
        if let Some(n) = self.added_f2p {
            m.insert("added_f2p".into(), json!(n));
        }
        for (key, t) in [
            ("tests_base", &self.tests_base),
            ("tests_pred", &self.tests_pred),
            ("tests_gold", &self.tests_gold),
        ] {
            if let Some(t) = t {
                let mut t = t.clone();
                t.sort();
                m.insert(key.into(), transitions_value(&t));
            }
        }
        Value::Object(m)
    }

    /// `report.json` exactly as the original writes it: `{"<id>": {...}}` with `indent=4`, no
    /// trailing newline.
    pub fn to_report_json(&self) -> String {
        let mut outer = Map::new();
        outer.insert(self.instance_id.clone(), self.to_value());
        py::dumps_indent4(&Value::Object(outer))
    }

    /// Reads a `report.json` (from this tool or the original). `instance_id` selects the entry;
    /// `None` takes the only one. Missing fields take their "nothing happened" value.
    pub fn from_report_json(
        text: &str,
        instance_id: Option<&str>,
    ) -> Result<InstanceReport, ReportReadError> {
        let v: Value =
            serde_json::from_str(text).map_err(|e| ReportReadError::Json(e.to_string()))?;
        let Value::Object(outer) = v else {
            return Err(ReportReadError::NotAnObject);
        };
        let (id, inner) = match instance_id {
            Some(id) => (
                id.to_string(),
                outer
                    .get(id)
                    .ok_or_else(|| ReportReadError::MissingInstance(id.to_string()))?,
            ),
            None => match outer.iter().next() {
                Some((k, v)) if outer.len() == 1 => (k.clone(), v),
                _ => return Err(ReportReadError::NotAnObject),
            },
        };
        Self::from_value(id, inner)
    }

    /// Reads the inner object of a `report.json`.
    pub fn from_value(instance_id: String, v: &Value) -> Result<InstanceReport, ReportReadError> {
        let Value::Object(m) = v else {
            return Err(ReportReadError::NotAnObject);
        };
        let flag = |field: &'static str| -> Result<bool, ReportReadError> {
            match m.get(field) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(Value::Number(n)) => Ok(n.as_f64().is_some_and(|x| x != 0.0)),
                Some(_) => Err(ReportReadError::WrongType { field }),
            }
        };
        let num = |field: &'static str| -> Result<Option<f64>, ReportReadError> {
            match m.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => Ok(n.as_f64()),
                Some(_) => Err(ReportReadError::WrongType { field }),
            }
        };
        let tests = |field: &'static str| -> Result<Option<Transitions>, ReportReadError> {
            match m.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(t) => serde_json::from_value(t.clone())
                    .map(Some)
                    .map_err(|_| ReportReadError::WrongType { field }),
            }
        };
        Ok(InstanceReport {
            instance_id,
            patch_is_none: flag("patch_is_None")?,
            patch_exists: flag("patch_exists")?,
            patch_successfully_applied: flag("patch_successfully_applied")?,
            resolved: flag("resolved")?,
            coverage: CoverageResult {
                coverage_pred: num("coverage_pred")?,
                coverage_gold: num("coverage_gold")?,
                coverage_base: num("coverage_base")?,
                coverage_delta_pred: num("coverage_delta_pred")?,
                coverage_delta_gold: num("coverage_delta_gold")?,
            },
            added_f2p: num("added_f2p")?.map(|x| x as u64),
            tests_base: tests("tests_base")?,
            tests_pred: tests("tests_pred")?,
            tests_gold: tests("tests_gold")?,
        })
    }
}

fn transitions_value(t: &Transitions) -> Value {
    let mut m = Map::new();
    for (k, v) in [
        ("FAIL_TO_PASS", &t.fail_to_pass),
        ("PASS_TO_PASS", &t.pass_to_pass),
        ("FAIL_TO_FAIL", &t.fail_to_fail),
        ("PASS_TO_FAIL", &t.pass_to_fail),
        ("UNMATCHED", &t.unmatched),
    ] {
        m.insert(k.into(), json!(v));
    }
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOLD: &str = "diff --git a/src/m.py b/src/m.py\n--- a/src/m.py\n+++ b/src/m.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n";

    fn out(s: &str) -> Option<&[u8]> {
        Some(s.as_bytes())
    }

    #[test]
    fn not_applied_returns_early() {
        let inputs = InstanceRunOutputs {
            instance_id: "o__r-1",
            repo: "pytest-dev/pytest",
            gold_code_patch: GOLD,
            outputs: [
                out("error: patch failed\nPASSED t::a\n"),
                out("Applied patch t cleanly.\nPASSED t::a\n"),
                None,
                None,
                None,
                None,
            ],
        };
        let g = grade_instance(&inputs, &GradeOptions::default()).unwrap();
        assert_eq!(
            g.report.to_report_json(),
            "{\n    \"o__r-1\": {\n        \"patch_is_None\": false,\n        \"patch_exists\": true,\n        \"patch_successfully_applied\": false,\n        \"resolved\": false,\n        \"coverage_pred\": null,\n        \"coverage_gold\": null,\n        \"coverage_base\": null,\n        \"coverage_delta_pred\": null,\n        \"coverage_delta_gold\": null\n    }\n}"
        );
    }

    #[test]
    fn resolved_instance_round_trips() {
        let pre = "Applied patch tests/t.py cleanly.\nFAILED tests/t.py::test_new - assert\nPASSED tests/t.py::test_old\n";
        let post = "Applied patch tests/t.py cleanly.\nPASSED tests/t.py::test_new\nPASSED tests/t.py::test_old\n";
        let base = "PASSED tests/t.py::test_old\n";
        let inputs = InstanceRunOutputs {
            instance_id: "o__r-2",
            repo: "pytest-dev/pytest",
            gold_code_patch: GOLD,
            outputs: [
                out(pre),
                out(post),
                out(pre),
                out(post),
                out(base),
                out(base),
            ],
        };
        let g = grade_instance(&inputs, &GradeOptions::default()).unwrap();
        let r = &g.report;
        assert!(r.resolved && r.patch_successfully_applied);
        assert_eq!(r.added_f2p, Some(1));
        assert_eq!(r.added_fail_to_pass(), vec!["tests/t.py::test_new"]);
        let text = r.to_report_json();
        assert!(text.contains("\"added_f2p\": 1,\n        \"tests_base\": {"));
        let back = InstanceReport::from_report_json(&text, Some("o__r-2")).unwrap();
        assert_eq!(&back, r);
        assert!(matches!(
            InstanceReport::from_report_json(&text, Some("other")),
            Err(ReportReadError::MissingInstance(_))
        ));
    }

    #[test]
    fn unknown_repo_is_an_error_naming_it() {
        let inputs = InstanceRunOutputs {
            instance_id: "x__y-1",
            repo: "swe-bench/humaneval",
            gold_code_patch: "",
            outputs: [None, None, None, None, None, None],
        };
        let e = grade_instance(&inputs, &GradeOptions::default()).unwrap_err();
        assert!(e.to_string().contains("swe-bench/humaneval"), "{e}");
        // Reproduction mode does not need a repo parser.
        let opts = GradeOptions {
            exec_mode: ExecMode::ReproductionScript,
            ..Default::default()
        };
        assert!(grade_instance(&inputs, &opts).is_ok());
    }

    #[test]
    fn an_explicit_parser_grades_a_repository_the_map_does_not_know() {
        let pre = "Applied patch tests/t.py cleanly.\nFAILED tests/t.py::test_new - assert\n";
        let post = "Applied patch tests/t.py cleanly.\nPASSED tests/t.py::test_new\n";
        let inputs = InstanceRunOutputs {
            instance_id: "acme__widget-1",
            repo: "acme/widget",
            gold_code_patch: GOLD,
            outputs: [out(pre), out(post), out(pre), out(post), out(""), out("")],
        };
        assert!(grade_instance(&inputs, &GradeOptions::default()).is_err());
        let g =
            grade_instance_with_parser(&inputs, &GradeOptions::default(), Parser::Pytest).unwrap();
        assert!(g.report.resolved);
        assert_eq!(g.report.added_f2p, Some(1));
        // Reproduction mode ignores the unit-test parser.
        let opts = GradeOptions {
            exec_mode: ExecMode::ReproductionScript,
            ..Default::default()
        };
        let g = grade_instance_with_parser(&inputs, &opts, Parser::Pytest).unwrap();
        assert!(!g.report.resolved);
    }
}

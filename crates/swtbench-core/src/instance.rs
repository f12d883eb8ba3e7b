//! Benchmark instances: one GitHub issue with its repository state and gold patches.
//!
//! An instance is built from one dataset row (a JSON object, whatever file format it came from).
//! SWT-Bench needs only a handful of fields (§2.2); every other field is carried along untouched in
//! [`Instance::extra`] so reports and dataset tools can use them.

use std::borrow::Borrow;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::diff;

/// A SWE-bench instance id such as `django__django-11099`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct InstanceId(pub String);

impl InstanceId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Borrow<str> for InstanceId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for InstanceId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for InstanceId {
    fn from(s: &str) -> Self {
        InstanceId(s.to_string())
    }
}

impl From<String> for InstanceId {
    fn from(s: String) -> Self {
        InstanceId(s)
    }
}

/// How a row's `patch` / `test_patch` fields map to the gold code fix and the gold tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PatchLayout {
    /// SWE-bench: `patch` is the gold code fix, `test_patch` the gold tests.
    Swebench,
    /// SWE-bench text/RAG datasets (`--is-swt`): `patch` is the code fix wrapped in `<patch>` tags.
    SweText,
    /// Published SWT-Bench datasets: `patch` holds the gold *tests* wrapped in `<patch>` tags and
    /// `test_patch` holds the gold *code fix* (the fields are swapped, §10).
    SwtSwapped,
}

/// One benchmark instance, validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Instance {
    pub instance_id: InstanceId,
    /// `owner/name` on GitHub.
    pub repo: String,
    /// Key into the (repo, version) spec table.
    pub version: String,
    pub base_commit: String,
    /// Falls back to `base_commit` when absent or null (§2.2).
    pub environment_setup_commit: String,
    /// The gold code fix (SWE-bench's `patch`).
    pub golden_code_patch: String,
    /// The gold tests (SWE-bench's `test_patch`): also the `gold` prediction.
    pub golden_test_patch: String,
    /// SWE-bench's own FAIL_TO_PASS list (carried along; SWT grading does not use it).
    #[serde(default)]
    pub fail_to_pass: Vec<String>,
    /// SWE-bench's own PASS_TO_PASS list (carried along; SWT grading does not use it).
    #[serde(default)]
    pub pass_to_pass: Vec<String>,
    /// Every other field of the row, untouched.
    #[serde(default)]
    pub extra: Map<String, Value>,
}

/// Why a dataset row is not a usable instance.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceError {
    #[error("row is not a JSON object")]
    NotAnObject,
    #[error("missing required field `{field}`")]
    MissingField { field: &'static str },
    #[error("field `{field}` must be {expected}, found {found}")]
    WrongType {
        field: &'static str,
        expected: &'static str,
        found: String,
    },
    #[error(
        "field `{field}` is not a list of strings nor a JSON-encoded list of strings: {detail}"
    )]
    BadTestList { field: &'static str, detail: String },
    #[error("field `{field}` is not wrapped in <patch>…</patch> tags, as --is-swt expects")]
    NotWrapped { field: &'static str },
    #[error("field `instance_id` {id:?} cannot name a directory ({reason})")]
    BadId { id: String, reason: &'static str },
}

/// Why an instance id cannot be used as a directory name (ids name log and report directories).
fn id_problem(id: &str) -> Option<&'static str> {
    if id.trim().is_empty() {
        Some("it is empty")
    } else if id == "." || id == ".." {
        Some("it is `.` or `..`")
    } else if id.contains(['/', '\\']) {
        Some("it contains a path separator")
    } else if id.chars().any(char::is_control) {
        Some("it contains a control character")
    } else {
        None
    }
}

impl Instance {
    /// Builds an instance from one dataset row.
    pub fn from_row(row: &Value, layout: PatchLayout) -> Result<Instance, InstanceError> {
        let obj = row.as_object().ok_or(InstanceError::NotAnObject)?;
        let id = req_str(obj, "instance_id")?;
        if let Some(reason) = id_problem(&id) {
            return Err(InstanceError::BadId { id, reason });
        }
        let instance_id = InstanceId(id);
        let repo = req_str(obj, "repo")?;
        let version = req_str(obj, "version")?;
        let base_commit = req_str(obj, "base_commit")?;
        let environment_setup_commit =
            opt_str(obj, "environment_setup_commit")?.unwrap_or_else(|| base_commit.clone());
        let patch = req_str(obj, "patch")?;
        let test_patch = req_str(obj, "test_patch")?;
        let (golden_code_patch, golden_test_patch) = match layout {
            PatchLayout::Swebench => (patch, test_patch),
            PatchLayout::SweText => (
                unwrap_patch_tags(&patch).ok_or(InstanceError::NotWrapped { field: "patch" })?,
                test_patch,
            ),
            PatchLayout::SwtSwapped => (
                test_patch,
                unwrap_patch_tags(&patch).ok_or(InstanceError::NotWrapped { field: "patch" })?,
            ),
        };
        let fail_to_pass = test_list(obj, "FAIL_TO_PASS")?;
        let pass_to_pass = test_list(obj, "PASS_TO_PASS")?;
        let mut extra = Map::new();
        for (k, v) in obj {
            if !matches!(
                k.as_str(),
                "instance_id"
                    | "repo"
                    | "version"
                    | "base_commit"
                    | "environment_setup_commit"
                    | "patch"
                    | "test_patch"
                    | "FAIL_TO_PASS"
                    | "PASS_TO_PASS"
            ) {
                extra.insert(k.clone(), v.clone());
            }
        }
        Ok(Instance {
            instance_id,
            repo,
            version,
            base_commit,
            environment_setup_commit,
            golden_code_patch,
            golden_test_patch,
            fail_to_pass,
            pass_to_pass,
            extra,
        })
    }

    /// The issue text, when the dataset has one.
    pub fn problem_statement(&self) -> Option<&str> {
        self.extra.get("problem_statement").and_then(Value::as_str)
    }

    /// `owner__name`, the form used for mirror directory names.
    pub fn repo_dir_name(&self) -> String {
        self.repo.replace('/', "__")
    }
}

fn type_name(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "a boolean".into(),
        Value::Number(n) => format!("the number {n}"),
        Value::String(_) => "a string".into(),
        Value::Array(_) => "a list".into(),
        Value::Object(_) => "an object".into(),
    }
}

fn req_str(obj: &Map<String, Value>, field: &'static str) -> Result<String, InstanceError> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(InstanceError::MissingField { field }),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(InstanceError::WrongType {
            field,
            expected: "a string",
            found: type_name(other),
        }),
    }
}

fn opt_str(obj: &Map<String, Value>, field: &'static str) -> Result<Option<String>, InstanceError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(InstanceError::WrongType {
            field,
            expected: "a string or null",
            found: type_name(other),
        }),
    }
}

fn test_list(obj: &Map<String, Value>, field: &'static str) -> Result<Vec<String>, InstanceError> {
    fn from_array(field: &'static str, items: &[Value]) -> Result<Vec<String>, InstanceError> {
        items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| InstanceError::BadTestList {
                        field,
                        detail: format!("an item is {}", type_name(v)),
                    })
            })
            .collect()
    }
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => from_array(field, items),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(Vec::new()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(items)) => from_array(field, &items),
            Ok(other) => Err(InstanceError::BadTestList {
                field,
                detail: format!("the string decodes to {}", type_name(&other)),
            }),
            Err(e) => Err(InstanceError::BadTestList {
                field,
                detail: e.to_string(),
            }),
        },
        Some(other) => Err(InstanceError::BadTestList {
            field,
            detail: format!("found {}", type_name(other)),
        }),
    }
}

/// Removes `<patch>` / `</patch>` tags around a patch, with or without the newlines that usually
/// follow/precede them and tolerating surrounding whitespace. `None` when the text is not wrapped.
///
/// The original cuts exactly 8 and 9 characters (`"<patch>\n"`, `"\n</patch>"`), which damages
/// patches wrapped without newlines; for correctly wrapped text both give the same result.
pub fn unwrap_patch_tags(text: &str) -> Option<String> {
    let t = text.trim_start_matches([' ', '\t', '\r', '\n']);
    let inner = t.strip_prefix("<patch>")?;
    let t_end = inner.trim_end_matches([' ', '\t', '\r', '\n']);
    let inner = t_end.strip_suffix("</patch>")?;
    let inner = inner
        .strip_prefix("\r\n")
        .or_else(|| inner.strip_prefix('\n'))
        .unwrap_or(inner);
    let inner = inner
        .strip_suffix("\r\n")
        .or_else(|| inner.strip_suffix('\n'))
        .unwrap_or(inner);
    Some(inner.to_string())
}

/// Heuristic used to recognise the published SWT-Bench datasets, whose patch fields are swapped:
/// returns true when `patch` (unwrapped) touches only test files while `test_patch` touches at
/// least one non-test source file.
pub fn looks_swapped(patch_unwrapped: &str, test_patch: &str) -> bool {
    let p = diff::changed_paths(patch_unwrapped);
    let t = diff::changed_paths(test_patch);
    !p.is_empty()
        && !t.is_empty()
        && p.iter().all(|f| is_test_path(f))
        && t.iter().any(|f| !is_test_path(f))
}

/// Whether a repository path looks like a test file or lives in a test directory.
pub fn is_test_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let file = lower.rsplit('/').next().unwrap_or(&lower);
    lower.split('/').any(|seg| {
        matches!(
            seg,
            "test" | "tests" | "testing" | "testcases" | "unittests" | "regrtest_data"
        )
    }) || file.starts_with("test_")
        || file.starts_with("tests_")
        || file.ends_with("_test.py")
        || file.ends_with("_tests.py")
        || file == "conftest.py"
        || file == "tests.py"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row() -> Value {
        json!({
            "instance_id": "o__r-1", "repo": "o/r", "version": "1.0", "base_commit": "abc",
            "patch": "diff --git a/src/x.py b/src/x.py\n", "test_patch": "diff --git a/tests/test_x.py b/tests/test_x.py\n",
            "FAIL_TO_PASS": "[\"t1\"]", "PASS_TO_PASS": ["t2"], "problem_statement": "bug",
            "environment_setup_commit": null
        })
    }

    #[test]
    fn swebench_row_maps_fields_and_falls_back_to_base_commit() {
        let i = Instance::from_row(&row(), PatchLayout::Swebench).unwrap();
        assert_eq!(i.environment_setup_commit, "abc");
        assert_eq!(i.golden_code_patch, "diff --git a/src/x.py b/src/x.py\n");
        assert_eq!(i.fail_to_pass, vec!["t1"]);
        assert_eq!(i.pass_to_pass, vec!["t2"]);
        assert_eq!(i.problem_statement(), Some("bug"));
        assert!(!i.extra.contains_key("patch"));
    }

    #[test]
    fn missing_and_wrong_fields_are_named() {
        let mut r = row();
        r.as_object_mut().unwrap().remove("repo");
        assert_eq!(
            Instance::from_row(&r, PatchLayout::Swebench).unwrap_err(),
            InstanceError::MissingField { field: "repo" }
        );
        let mut r = row();
        r["version"] = json!(3.0);
        let e = Instance::from_row(&r, PatchLayout::Swebench).unwrap_err();
        assert!(e.to_string().contains("`version`"), "{e}");
        let mut r = row();
        r["FAIL_TO_PASS"] = json!("not json");
        assert!(matches!(
            Instance::from_row(&r, PatchLayout::Swebench),
            Err(InstanceError::BadTestList {
                field: "FAIL_TO_PASS",
                ..
            })
        ));
    }

    #[test]
    fn ids_that_cannot_name_a_directory_are_rejected() {
        for id in ["", " ", "..", "a/b", "..\\x", "a\nb"] {
            let mut r = row();
            r["instance_id"] = json!(id);
            let e = Instance::from_row(&r, PatchLayout::Swebench).unwrap_err();
            assert!(matches!(e, InstanceError::BadId { .. }), "{id:?}: {e}");
            assert!(e.to_string().contains("`instance_id`"), "{e}");
        }
        let mut r = row();
        r["instance_id"] = json!("my-org__repo.v2-17");
        assert!(Instance::from_row(&r, PatchLayout::Swebench).is_ok());
    }

    #[test]
    fn unwraps_tags_with_and_without_newlines() {
        assert_eq!(
            unwrap_patch_tags("<patch>\nA\nB\n</patch>").as_deref(),
            Some("A\nB")
        );
        assert_eq!(
            unwrap_patch_tags("<patch>A\nB</patch>").as_deref(),
            Some("A\nB")
        );
        assert_eq!(
            unwrap_patch_tags("  <patch>\r\nA\r\n</patch>\n").as_deref(),
            Some("A")
        );
        assert_eq!(unwrap_patch_tags("A"), None);
        // Exactly the original's 8/9-character cut on well-formed input.
        let s = "<patch>\ndiff --git a/x b/x\n+1\n\n</patch>";
        assert_eq!(unwrap_patch_tags(s).unwrap(), &s[8..s.len() - 9]);
    }

    #[test]
    fn swapped_layout_detection_and_mapping() {
        let mut r = row();
        r["patch"] = json!("<patch>\ndiff --git a/tests/test_x.py b/tests/test_x.py\n</patch>");
        r["test_patch"] = json!("diff --git a/src/x.py b/src/x.py\n");
        let p = unwrap_patch_tags(r["patch"].as_str().unwrap()).unwrap();
        assert!(looks_swapped(&p, r["test_patch"].as_str().unwrap()));
        let i = Instance::from_row(&r, PatchLayout::SwtSwapped).unwrap();
        assert_eq!(i.golden_code_patch, "diff --git a/src/x.py b/src/x.py\n");
        assert!(i.golden_test_patch.contains("tests/test_x.py"));
        // The SWE text layout is not swapped.
        let code = "diff --git a/src/x.py b/src/x.py\n";
        let tests = "diff --git a/tests/test_x.py b/tests/test_x.py\n";
        assert!(!looks_swapped(code, tests));
    }

    #[test]
    fn test_path_heuristic() {
        for p in [
            "tests/foo.py",
            "pkg/tests/x.py",
            "sympy/core/tests/test_a.py",
            "a/test_b.py",
            "conftest.py",
            "x/y_test.py",
            "django/tests.py",
        ] {
            assert!(is_test_path(p), "{p}");
        }
        for p in [
            "src/x.py",
            "django/db/models.py",
            "testament.py",
            "latest/x.py",
        ] {
            assert!(!is_test_path(p), "{p}");
        }
    }
}

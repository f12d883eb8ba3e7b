//! The run summary `evaluation_results/<model>.<run_id>.json` (§7.4, the original's
//! `make_run_report`), and the per-instance outcome every report view shares.
//!
//! The file has the original's keys, in its order, with its `indent=4` formatting and trailing
//! newline, followed by keys the original lacks:
//!
//! | key | meaning |
//! |---|---|
//! | `submitted_instances` | number of predictions submitted for the run |
//! | `submitted_ids` | their instance ids, sorted |
//! | `f2p_ids` | instances whose tests add a fail-to-pass test beyond the base runs (the F→P metric) |
//! | `skipped_ids` | instances deliberately not run (also in `error_ids`, as the original counts them) |
//! | `error_reasons` | instance id → why it is in `error_ids` |
//! | `error_causes` | instance id → the stable name of its error's cause (`image_build_network`, `image_build_step`, `image_build_engine`, `image_build_timeout`, `engine_lost`, `engine`, `container_vanished`, `limit_memory`, `limit_pids`, `limit_disk`, `storage`, …), when any instance is an error of the runner |
//! | `limit_hits` | instance id → its runs that reached a resource limit (`pred_post: memory`), when any did |
//! | `suspicious_ids` | instances whose logs the integrity checks found suspicious (see `docs/integrity.md`), when any are |
//! | `suspicious_reasons` | instance id → the checks' reasons, with `suspicious_ids` |
//! | `network_ids` | instances whose test runner connected to the network (from the evidence), when any did |
//! | `network_use` | instance id → the runs and the addresses they connected to, with `network_ids` |
//!
//! Counting follows the original: an instance is *completed* only when its `report.json` came
//! from an earlier invocation; graded instances are resolved or unresolved (not-applied patches
//! are unresolved); errors and skips are errors. "Mean coverage" and "Mean coverage delta"
//! average `coverage_pred` and `coverage_delta_pred` over instances with a non-null
//! `coverage_pred`, in the given order, and are the integer `0` when there are none.
//!
//! Pure: entries in, text out.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::py;
use crate::report::InstanceReport;

/// Why an instance has no grade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum ErrorReason {
    /// `pred_pre__<model>/<id>/model_patch.diff` does not exist: the instance never started.
    MissingModelPatch,
    /// `pred_pre__<model>/<id>/test_output.txt` does not exist: the first run failed or timed out.
    MissingPredPreOutput,
    /// The instance's repository has no log parser.
    UnknownRepo(String),
    /// The gold code patch could not be parsed.
    GoldPatch(String),
    /// An existing `report.json` could not be read.
    UnreadableReport(String),
    /// The runner recorded a failure (image build, container, timeout, …).
    Run(String),
}

impl fmt::Display for ErrorReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorReason::MissingModelPatch => {
                f.write_str("not run: pred_pre model_patch.diff is missing")
            }
            ErrorReason::MissingPredPreOutput => f.write_str(
                "no output: pred_pre test_output.txt is missing (run failed or timed out)",
            ),
            ErrorReason::UnknownRepo(r) => write!(
                f,
                "no log parser for repository `{r}` (give it a log_parser in a spec table, --spec-table)"
            ),
            ErrorReason::GoldPatch(d) => write!(f, "gold code patch unreadable: {d}"),
            ErrorReason::UnreadableReport(d) => write!(f, "report.json unreadable: {d}"),
            ErrorReason::Run(d) => f.write_str(d),
        }
    }
}

/// Why an instance was deliberately not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "snake_case")]
pub enum SkipReason {
    /// The prediction has no usable patch (empty, or nothing could be extracted).
    EmptyPatch,
    /// Patch extraction from the raw model output failed.
    ExtractionFailed(String),
    /// The run was interrupted before this instance ran.
    Interrupted,
    /// Anything else the runner decided.
    Other(String),
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::EmptyPatch => f.write_str("skipped: empty patch"),
            SkipReason::ExtractionFailed(d) => write!(f, "skipped: patch extraction failed: {d}"),
            SkipReason::Interrupted => f.write_str("skipped: run interrupted"),
            SkipReason::Other(d) => write!(f, "skipped: {d}"),
        }
    }
}

/// Where one instance of a run stands.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryState {
    /// Graded. `reused` when the report came from an earlier invocation (the original's
    /// "completed"); `empty_patch` when the executed model patch had no content.
    Graded {
        report: Box<InstanceReport>,
        reused: bool,
        empty_patch: bool,
    },
    Error(ErrorReason),
    Skipped(SkipReason),
}

/// One instance of the run report, in dataset order.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReportEntry {
    pub instance_id: String,
    pub state: EntryState,
}

/// The outcome of one instance, as every view (run report, table, HTML) names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", content = "reason", rename_all = "snake_case")]
pub enum Outcome {
    Resolved,
    Unresolved,
    /// The model patch did not apply in pred_pre.
    NotApplied,
    /// The model patch was empty (graded as not applied, or not run at all).
    EmptyPatch,
    /// No grade; the reason says why (errors and skips alike).
    Error(String),
}

impl Outcome {
    pub fn label(&self) -> &'static str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::Unresolved => "unresolved",
            Outcome::NotApplied => "not applied",
            Outcome::EmptyPatch => "empty patch",
            Outcome::Error(_) => "error",
        }
    }
}

impl EntryState {
    /// Why the entry has no grade (its error or skip), or its outcome's label.
    pub fn outcome_reason(&self) -> String {
        match self {
            EntryState::Error(r) => r.to_string(),
            EntryState::Skipped(r) => r.to_string(),
            EntryState::Graded { .. } => self.outcome().label().to_string(),
        }
    }

    pub fn outcome(&self) -> Outcome {
        match self {
            EntryState::Graded {
                report,
                empty_patch,
                ..
            } => {
                if report.resolved {
                    Outcome::Resolved
                } else if !report.patch_successfully_applied {
                    if *empty_patch {
                        Outcome::EmptyPatch
                    } else {
                        Outcome::NotApplied
                    }
                } else {
                    Outcome::Unresolved
                }
            }
            EntryState::Skipped(SkipReason::EmptyPatch) => Outcome::EmptyPatch,
            EntryState::Skipped(r) => Outcome::Error(r.to_string()),
            EntryState::Error(r) => Outcome::Error(r.to_string()),
        }
    }
}

/// Inputs of the run report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunReportInput {
    /// Every instance that had a prediction (the original's `full_dataset`), in dataset order.
    pub entries: Vec<RunReportEntry>,
    /// Ids of all submitted predictions; empty means "the entries' ids".
    pub submitted_ids: Vec<String>,
    /// Containers of this run still present (the original always finds none).
    pub unstopped_containers: Vec<String>,
    /// Instance images of this run still present.
    pub unremoved_images: Vec<String>,
    /// How the run was made (`exec mode`, `coverage`, `patch types`, `time taken`, …), written
    /// as the `run_parameters` object (left out when empty) so that reports made later show them.
    pub parameters: Vec<(String, String)>,
    /// Instance id → its runs that reached a resource limit (`pred_post: memory`), written as
    /// `limit_hits` when there are any.
    pub limit_hits: BTreeMap<String, Vec<String>>,
    /// Instance id → the stable name of its error's cause (`image_build_network`,
    /// `limit_memory`, `engine_lost`, …), written as `error_causes` when there are any.
    pub error_causes: BTreeMap<String, String>,
    /// Instance id → why the integrity checks found its logs suspicious, written as
    /// `suspicious_ids` and `suspicious_reasons` when there are any.
    pub suspicious: BTreeMap<String, Vec<String>>,
    /// Instance id → the runs whose test runner connected to the network, with the addresses
    /// (`network_ids` and `network_use` when any did).
    pub network: BTreeMap<String, Vec<String>>,
}

/// Either the integer `0` (no instance with coverage) or a mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mean {
    None,
    Value(f64),
}

impl Mean {
    fn to_value(self) -> Value {
        match self {
            Mean::None => json!(0),
            Mean::Value(v) => json!(v),
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            Mean::None => 0.0,
            Mean::Value(v) => v,
        }
    }
}

/// The run summary.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    pub total_instances: usize,
    pub completed_ids: Vec<String>,
    pub resolved_ids: Vec<String>,
    pub unresolved_ids: Vec<String>,
    pub error_ids: Vec<String>,
    pub mean_coverage: Mean,
    pub mean_coverage_delta: Mean,
    pub unstopped_containers: Vec<String>,
    pub unremoved_images: Vec<String>,
    pub submitted_ids: Vec<String>,
    pub f2p_ids: Vec<String>,
    pub skipped_ids: Vec<String>,
    pub error_reasons: BTreeMap<String, String>,
    /// Outcome of every entry, by instance id.
    pub outcomes: BTreeMap<String, Outcome>,
    /// See [`RunReportInput::parameters`].
    pub parameters: Vec<(String, String)>,
    /// Instances with a `report.json` under the same run id and model that this report does not
    /// cover (an earlier invocation on other instances): written as `not_in_this_report_ids`
    /// when there are any, so that a partial report says so.
    pub not_in_this_report_ids: Vec<String>,
    /// See [`RunReportInput::limit_hits`].
    pub limit_hits: BTreeMap<String, Vec<String>>,
    /// See [`RunReportInput::error_causes`].
    pub error_causes: BTreeMap<String, String>,
    /// See [`RunReportInput::suspicious`].
    pub suspicious: BTreeMap<String, Vec<String>>,
    /// Instance id → the runs whose test runner connected to the network, with the addresses
    /// (`network_ids` and `network_use` when any did).
    pub network: BTreeMap<String, Vec<String>>,
}

impl RunReport {
    pub fn new(input: &RunReportInput) -> RunReport {
        let mut r = RunReport {
            total_instances: input.entries.len(),
            completed_ids: Vec::new(),
            resolved_ids: Vec::new(),
            unresolved_ids: Vec::new(),
            error_ids: Vec::new(),
            mean_coverage: Mean::None,
            mean_coverage_delta: Mean::None,
            unstopped_containers: sorted(&input.unstopped_containers),
            unremoved_images: sorted(&input.unremoved_images),
            parameters: input.parameters.clone(),
            submitted_ids: if input.submitted_ids.is_empty() {
                sorted_dedup(input.entries.iter().map(|e| e.instance_id.clone()))
            } else {
                sorted_dedup(input.submitted_ids.iter().cloned())
            },
            f2p_ids: Vec::new(),
            skipped_ids: Vec::new(),
            error_reasons: BTreeMap::new(),
            outcomes: BTreeMap::new(),
            not_in_this_report_ids: Vec::new(),
            limit_hits: input.limit_hits.clone(),
            error_causes: input.error_causes.clone(),
            suspicious: input.suspicious.clone(),
            network: input.network.clone(),
        };
        // Plain left-to-right sums in entry order, as Python's `sum` of a list (up to 3.11).
        let (mut cov_sum, mut delta_sum, mut n) = (0.0f64, 0.0f64, 0usize);
        for e in &input.entries {
            let id = e.instance_id.clone();
            r.outcomes.insert(id.clone(), e.state.outcome());
            match &e.state {
                EntryState::Graded { report, reused, .. } => {
                    if *reused {
                        r.completed_ids.push(id.clone());
                    }
                    if report.resolved {
                        r.resolved_ids.push(id.clone());
                    } else {
                        r.unresolved_ids.push(id.clone());
                    }
                    if !report.added_fail_to_pass().is_empty() {
                        r.f2p_ids.push(id.clone());
                    }
                    if let Some(c) = report.coverage.coverage_pred {
                        cov_sum += c;
                        delta_sum += report.coverage.coverage_delta_pred.unwrap_or(0.0);
                        n += 1;
                    }
                }
                EntryState::Error(reason) => {
                    r.error_reasons.insert(id.clone(), reason.to_string());
                    r.error_ids.push(id);
                }
                EntryState::Skipped(reason) => {
                    r.error_reasons.insert(id.clone(), reason.to_string());
                    r.skipped_ids.push(id.clone());
                    r.error_ids.push(id);
                }
            }
        }
        if n > 0 {
            r.mean_coverage = Mean::Value(cov_sum / n as f64);
            r.mean_coverage_delta = Mean::Value(delta_sum / n as f64);
        }
        for v in [
            &mut r.completed_ids,
            &mut r.resolved_ids,
            &mut r.unresolved_ids,
            &mut r.error_ids,
            &mut r.f2p_ids,
            &mut r.skipped_ids,
        ] {
            v.sort();
            v.dedup();
        }
        r
    }

    /// The file's JSON object, keys in order.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("total_instances".into(), json!(self.total_instances));
        m.insert(
            "completed_instances".into(),
            json!(self.completed_ids.len()),
        );
        m.insert("resolved_instances".into(), json!(self.resolved_ids.len()));
        m.insert(
            "unresolved_instances".into(),
            json!(self.unresolved_ids.len()),
        );
        m.insert("error_instances".into(), json!(self.error_ids.len()));
        m.insert("Mean coverage".into(), self.mean_coverage.to_value());
        m.insert(
            "Mean coverage delta".into(),
            self.mean_coverage_delta.to_value(),
        );
        m.insert(
            "unstopped_instances".into(),
            json!(self.unstopped_containers.len()),
        );
        m.insert("completed_ids".into(), json!(self.completed_ids));
        m.insert("resolved_ids".into(), json!(self.resolved_ids));
        m.insert("unresolved_ids".into(), json!(self.unresolved_ids));
        m.insert("error_ids".into(), json!(self.error_ids));
        m.insert(
            "unstopped_containers".into(),
            json!(self.unstopped_containers),
        );
        m.insert("unremoved_images".into(), json!(self.unremoved_images));
        m.insert(
            "submitted_instances".into(),
            json!(self.submitted_ids.len()),
        );
        m.insert("submitted_ids".into(), json!(self.submitted_ids));
        m.insert("f2p_ids".into(), json!(self.f2p_ids));
        m.insert("skipped_ids".into(), json!(self.skipped_ids));
        m.insert("error_reasons".into(), json!(self.error_reasons));
        if !self.error_causes.is_empty() {
            m.insert("error_causes".into(), json!(self.error_causes));
        }
        if !self.limit_hits.is_empty() {
            m.insert("limit_hits".into(), json!(self.limit_hits));
        }
        if !self.suspicious.is_empty() {
            let ids: Vec<&String> = self.suspicious.keys().collect();
            m.insert("suspicious_ids".into(), json!(ids));
            m.insert("suspicious_reasons".into(), json!(self.suspicious));
        }
        if !self.network.is_empty() {
            let ids: Vec<&String> = self.network.keys().collect();
            m.insert("network_ids".into(), json!(ids));
            m.insert("network_use".into(), json!(self.network));
        }
        if !self.not_in_this_report_ids.is_empty() {
            m.insert(
                "not_in_this_report_ids".into(),
                json!(self.not_in_this_report_ids),
            );
        }
        if !self.parameters.is_empty() {
            let params: Map<String, Value> = self
                .parameters
                .iter()
                .map(|(k, v)| (k.clone(), json!(v)))
                .collect();
            m.insert("run_parameters".into(), Value::Object(params));
        }
        Value::Object(m)
    }

    /// The file's text: `json.dumps(report, indent=4)` plus the newline `print` adds.
    pub fn to_json(&self) -> String {
        let mut s = py::dumps_indent4(&self.to_value());
        s.push('\n');
        s
    }
}

/// The instances a run report says its run had, read back from its text: what `report` divides
/// by when no benchmark is named.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecordedInstances {
    /// Every id the report lists by outcome (`resolved_ids`, `unresolved_ids`, `error_ids`) and
    /// the ids of earlier invocations of the run it names (`not_in_this_report_ids`).
    pub ids: std::collections::BTreeSet<String>,
    /// Instances counted by `total_instances` but listed under no outcome (a report of the
    /// original that leaves some out of its id lists).
    pub unlisted: usize,
}

/// What is wrong with a run report's text, as [`RecordedInstances::from_json`] reads it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordedInstancesError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("it has no total_instances number")]
    NoTotal,
    #[error("its {0} is not a list")]
    NotAList(&'static str),
    #[error("its {key} holds a value that is not an id: {value}")]
    NotAnId { key: &'static str, value: String },
}

impl RecordedInstances {
    /// Reads a run report's text (this harness's or the original's). An error says what is
    /// wrong with it.
    pub fn from_json(text: &str) -> Result<RecordedInstances, RecordedInstancesError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| RecordedInstancesError::NotJson(e.to_string()))?;
        let total = v
            .get("total_instances")
            .and_then(Value::as_u64)
            .ok_or(RecordedInstancesError::NoTotal)?;
        let mut ids = std::collections::BTreeSet::new();
        let mut listed = 0usize;
        for key in [
            "resolved_ids",
            "unresolved_ids",
            "error_ids",
            "not_in_this_report_ids",
        ] {
            let Some(list) = v.get(key) else { continue };
            let list = list
                .as_array()
                .ok_or(RecordedInstancesError::NotAList(key))?;
            for id in list {
                let id = id.as_str().ok_or_else(|| RecordedInstancesError::NotAnId {
                    key,
                    value: id.to_string(),
                })?;
                if ids.insert(id.to_string()) && key != "not_in_this_report_ids" {
                    listed += 1;
                }
            }
        }
        Ok(RecordedInstances {
            ids,
            unlisted: usize::try_from(total)
                .unwrap_or(usize::MAX)
                .saturating_sub(listed),
        })
    }

    /// How many instances the run had, leaving out the ids `skip` names (the SWT filter lists,
    /// whose reports `report` does not count either).
    pub fn count(&self, skip: &dyn Fn(&str) -> bool) -> usize {
        self.ids.iter().filter(|id| !skip(id)).count() + self.unlisted
    }
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

fn sorted_dedup(it: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = it.collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage::CoverageResult;
    use crate::transitions::Transitions;

    #[test]
    fn the_instances_of_a_run_are_read_back_from_its_report() {
        let input = RunReportInput {
            entries: vec![
                graded("a__a-1", true, true, None),
                graded("a__a-2", false, true, None),
                RunReportEntry {
                    instance_id: "a__a-3".into(),
                    state: EntryState::Skipped(SkipReason::EmptyPatch),
                },
                RunReportEntry {
                    instance_id: "a__a-4".into(),
                    state: EntryState::Error(ErrorReason::MissingModelPatch),
                },
            ],
            ..RunReportInput::default()
        };
        let mut report = RunReport::new(&input);
        report.not_in_this_report_ids = vec!["a__a-0".into()];
        let got = RecordedInstances::from_json(&report.to_json()).unwrap();
        assert_eq!(got.ids.len(), 5);
        assert_eq!(got.unlisted, 0);
        assert_eq!(got.count(&|_| false), 5);
        assert_eq!(got.count(&|id| id == "a__a-2"), 4);
        // The original's report may count instances it lists under no outcome.
        let original = r#"{"total_instances": 3, "resolved_ids": ["x"], "error_ids": []}"#;
        let got = RecordedInstances::from_json(original).unwrap();
        assert_eq!(
            (got.ids.len(), got.unlisted, got.count(&|_| false)),
            (1, 2, 3)
        );
        for (bad, why) in [
            ("[", "not JSON"),
            ("{}", "no total_instances"),
            (r#"{"total_instances": 1, "resolved_ids": 3}"#, "not a list"),
            (r#"{"total_instances": 1, "error_ids": [1]}"#, "not an id"),
        ] {
            let e = RecordedInstances::from_json(bad).unwrap_err();
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
    }

    fn graded(id: &str, resolved: bool, applied: bool, cov: Option<(f64, f64)>) -> RunReportEntry {
        let tests = applied.then(|| Transitions {
            fail_to_pass: if resolved { vec!["t".into()] } else { vec![] },
            ..Default::default()
        });
        RunReportEntry {
            instance_id: id.into(),
            state: EntryState::Graded {
                report: Box::new(InstanceReport {
                    instance_id: id.into(),
                    patch_exists: true,
                    patch_successfully_applied: applied,
                    resolved,
                    coverage: CoverageResult {
                        coverage_pred: cov.map(|c| c.0),
                        coverage_delta_pred: cov.map(|c| c.1),
                        ..Default::default()
                    },
                    added_f2p: applied.then_some(u64::from(resolved)),
                    tests_base: applied.then(Transitions::default),
                    tests_pred: tests,
                    tests_gold: applied.then(Transitions::default),
                    ..Default::default()
                }),
                reused: id == "a__a-1",
                empty_patch: id == "e__e-1",
            },
        }
    }

    #[test]
    fn counts_means_and_extra_keys() {
        let input = RunReportInput {
            entries: vec![
                graded("b__b-2", true, true, Some((0.5, 0.25))),
                graded("a__a-1", false, true, Some((1.0, 0.0))),
                graded("e__e-1", false, false, None),
                RunReportEntry {
                    instance_id: "c__c-3".into(),
                    state: EntryState::Error(ErrorReason::MissingPredPreOutput),
                },
                RunReportEntry {
                    instance_id: "d__d-4".into(),
                    state: EntryState::Skipped(SkipReason::EmptyPatch),
                },
            ],
            ..Default::default()
        };
        let r = RunReport::new(&input);
        assert_eq!(r.completed_ids, vec!["a__a-1"]);
        assert_eq!(r.resolved_ids, vec!["b__b-2"]);
        assert_eq!(r.unresolved_ids, vec!["a__a-1", "e__e-1"]);
        assert_eq!(r.error_ids, vec!["c__c-3", "d__d-4"]);
        assert_eq!(r.mean_coverage, Mean::Value(0.75));
        assert_eq!(r.mean_coverage_delta, Mean::Value(0.125));
        assert_eq!(r.f2p_ids, vec!["b__b-2"]);
        assert_eq!(r.outcomes["e__e-1"], Outcome::EmptyPatch);
        assert_eq!(r.outcomes["d__d-4"], Outcome::EmptyPatch);
        assert!(matches!(r.outcomes["c__c-3"], Outcome::Error(_)));
        let text = r.to_json();
        assert!(text.starts_with("{\n    \"total_instances\": 5,\n    \"completed_instances\": 1,\n    \"resolved_instances\": 1,\n    \"unresolved_instances\": 2,\n    \"error_instances\": 2,\n    \"Mean coverage\": 0.75,\n    \"Mean coverage delta\": 0.125,\n    \"unstopped_instances\": 0,\n"));
        assert!(text.ends_with("}\n"));
        assert!(text.contains("\"c__c-3\": \"no output: pred_pre test_output.txt is missing (run failed or timed out)\""));
        assert!(text.contains("\"skipped_ids\": [\n        \"d__d-4\"\n    ]"));
    }

    #[test]
    fn no_coverage_gives_integer_zero() {
        let r = RunReport::new(&RunReportInput::default());
        let text = r.to_json();
        assert!(text.contains("\"Mean coverage\": 0,\n    \"Mean coverage delta\": 0,"));
        assert!(text.contains("\"error_reasons\": {}"));
        assert!(!text.contains("run_parameters"));
    }

    #[test]
    fn network_use_is_listed_only_when_a_runner_connected() {
        let entries = vec![graded("b__b-2", true, true, None)];
        let plain = RunReport::new(&RunReportInput {
            entries: entries.clone(),
            ..Default::default()
        })
        .to_json();
        assert!(!plain.contains("network"), "{plain}");
        let text = RunReport::new(&RunReportInput {
            entries,
            network: [(
                "b__b-2".to_string(),
                vec!["pred_post: 1.1.1.1:80".to_string()],
            )]
            .into(),
            ..Default::default()
        })
        .to_json();
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let o = v.as_object_mut().unwrap();
        assert_eq!(o.remove("network_ids").unwrap(), json!(["b__b-2"]));
        assert_eq!(
            o.remove("network_use").unwrap(),
            json!({"b__b-2": ["pred_post: 1.1.1.1:80"]})
        );
        assert_eq!(v, serde_json::from_str::<Value>(&plain).unwrap());
    }

    #[test]
    fn suspicious_instances_are_listed_only_when_there_are_any() {
        let entries = vec![graded("b__b-2", true, true, None)];
        let plain = RunReport::new(&RunReportInput {
            entries: entries.clone(),
            ..Default::default()
        })
        .to_json();
        assert!(!plain.contains("suspicious"), "{plain}");
        let r = RunReport::new(&RunReportInput {
            entries,
            suspicious: [(
                "b__b-2".to_string(),
                vec![
                    "pred_post line 9: a result for `t` after the test runner's final summary line"
                        .to_string(),
                ],
            )]
            .into(),
            ..Default::default()
        });
        let text = r.to_json();
        // The original's keys are untouched: only the two new keys are added.
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let o = v.as_object_mut().unwrap();
        assert!(o.remove("suspicious_ids").is_some() && o.remove("suspicious_reasons").is_some());
        assert_eq!(v, serde_json::from_str::<Value>(&plain).unwrap());
        assert!(text.contains("\"suspicious_ids\": [\n        \"b__b-2\"\n    ],\n    \"suspicious_reasons\": {\n        \"b__b-2\": [\n            \"pred_post line 9: a result for `t` after"), "{text}");
        assert_eq!(r.resolved_ids, vec!["b__b-2"]);
    }

    #[test]
    fn run_parameters_close_the_report() {
        let r = RunReport::new(&RunReportInput {
            parameters: vec![
                ("exec mode".into(), "unit_test".into()),
                ("time taken".into(), "0:01:02".into()),
            ],
            ..Default::default()
        });
        let text = r.to_json();
        assert!(
            text.ends_with(
                "\"run_parameters\": {\n        \"exec mode\": \"unit_test\",\n        \"time taken\": \"0:01:02\"\n    }\n}\n"
            ),
            "{text}"
        );
    }
}

//! Grading an instance from its six keyed outputs and writing its `report.json` (§7.3), the
//! instance summary `swtbench_instance.json` next to it, and the run report
//! `evaluation_results/<model>.<run_id>.json` (§7.4).
//!
//! Reports are always recomputed from the outputs on disk: a `report.json` is never taken as proof
//! that an instance is done (the original's §12.5), and a stale one is removed when the instance
//! cannot be graded now.

use std::path::{Path, PathBuf};

use serde::Serialize;
use swtbench_core::layout::{evaluation_results_path, REPORT_FILE};
use swtbench_core::RunKind;
use swtbench_grade::instance::{
    grade_instance_outputs, EvidenceFiles, InstanceGradeError, InstanceInputs, RunOutputs,
};
use swtbench_grade::integrity::Integrity;
use swtbench_grade::report::GradeOptions;
use swtbench_grade::{InstanceReport, Parser};

use crate::events::{InstanceOutcome, RunOutcome};
use crate::fsutil::{remove_if_exists, write_atomic};
use crate::keys::scan_output;
use crate::outcome::GradingError;
use crate::outcome::OutputError;
use swtbench_plan::limits::LimitHit;
use swtbench_plan::plan::{RunAction, RunPlan};

/// File with the runner's account of one instance, next to its `report.json`.
pub const INSTANCE_SUMMARY_FILE: &str = "swtbench_instance.json";

/// What the integrity checks of an instance need besides its outputs.
#[derive(Debug, Clone, Copy)]
pub struct CheckInputs<'a> {
    pub instance: &'a swtbench_core::Instance,
    /// The model patch as executed.
    pub model_patch: &'a str,
    pub non_test_exts: &'a [String],
    /// `--flaky-list`: the instance's tests left out of the transitions.
    pub flaky: Option<&'a std::collections::BTreeSet<String>>,
}

/// Grades an instance from the `test_output.txt` of its six runs, and checks their integrity
/// (reading each output once more, one at a time): [`swtbench_grade::instance`], the path
/// `swtbench grade` takes too. Each output must still be the one written with its run's key. With
/// `options.strict_results` the report is the strict grade.
pub fn grade_from_outputs(
    checks: &CheckInputs<'_>,
    runs: &[RunPlan],
    options: &GradeOptions,
    parser: Option<Parser>,
) -> Result<(InstanceReport, Integrity), GradingError> {
    let exts: Vec<&str> = checks.non_test_exts.iter().map(String::as_str).collect();
    let inputs = InstanceInputs {
        instance: checks.instance,
        model_patch: checks.model_patch,
        non_test_exts: &exts,
        flaky: checks.flaky,
        parser,
    };
    grade_instance_outputs(&inputs, options, &mut KeyedOutputs { runs }).map_err(|e| match e {
        InstanceGradeError::Output(e) => e,
        InstanceGradeError::Grade(e) => GradingError::Grade(e),
    })
}

/// The planned runs' outputs on disk, each read only while it is still the one written with its
/// run's key (a concurrent process may have replaced it meanwhile); an output reused without a
/// key is read as it is.
struct KeyedOutputs<'a> {
    runs: &'a [RunPlan],
}

impl KeyedOutputs<'_> {
    fn run(&self, kind: RunKind) -> Result<&RunPlan, GradingError> {
        self.runs
            .iter()
            .find(|r| r.kind == kind)
            .ok_or(GradingError::NotPlanned(kind))
    }
}

impl RunOutputs for KeyedOutputs<'_> {
    type Error = GradingError;

    fn scan<T>(
        &mut self,
        kind: RunKind,
        start: &mut dyn FnMut() -> T,
        feed: &mut dyn FnMut(&mut T, &[u8]),
    ) -> Result<Option<T>, GradingError> {
        let run = self.run(kind)?;
        let expected = (run.action != RunAction::ReuseUnkeyed).then_some(run.key.as_str());
        Ok(Some(scan_output(&run.dir, expected, start, feed)?))
    }

    fn evidence(&mut self, kind: RunKind) -> Result<EvidenceFiles, GradingError> {
        let run = self.run(kind)?;
        let (meta, raw) = crate::evidence::read_files(&run.dir).map_err(|e| {
            GradingError::Output(OutputError::Io {
                path: run.dir.display().to_string(),
                message: format!("reading the run's evidence: {e}"),
            })
        })?;
        Ok((meta.map(String::into_bytes), raw))
    }
}

/// How a run was made, for the run report's `run_parameters` (the HTML report of the run, made
/// then or later, lists them).
pub fn run_parameters(
    settings: &swtbench_plan::settings::RunSettings,
    elapsed: std::time::Duration,
) -> Vec<(String, String)> {
    let eval = &settings.eval;
    let coverage = if !eval.coverage {
        "off".to_string()
    } else if eval.tracer_fixed {
        "on (fixed tracer mode)".to_string()
    } else {
        "on".to_string()
    };
    let secs = elapsed.as_secs();
    let mut params = vec![
        ("exec mode".into(), eval.exec_mode.as_str().into()),
        ("coverage".into(), coverage),
        (
            "coverage formula".into(),
            swtbench_grade::CoverageFormula::default().as_str().into(),
        ),
        (
            "patch types".into(),
            settings
                .patch_types
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        ),
        (
            "timeout".into(),
            format!("{} s", settings.exec.timeout.as_secs()),
        ),
        (
            "container limits".into(),
            swtbench_plan::limits::describe(&settings.exec.limits),
        ),
        (
            "time taken".into(),
            format!("{}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60),
        ),
        (
            "harness".into(),
            format!("swtbench {}", swtbench_plan::keys::HARNESS_VERSION),
        ),
    ];
    if !settings.flaky.is_empty() {
        let tests: usize = settings.flaky.values().map(|t| t.len()).sum();
        params.push((
            "flaky list".into(),
            format!(
                "{tests} test(s) of {} instance(s) left out of the transitions",
                settings.flaky.len()
            ),
        ));
    }
    // Only when isolated: a run with the original's network keeps the original's parameters.
    if !settings.exec.allow_network {
        params.push((
            "test network".into(),
            "isolated (--no-network): an internal network that drops every packet; tests that reach the internet fail or time out"
                .into(),
        ));
    }
    if let Some(ca) = &settings.exec.test_ca {
        params.push((
            "test CA bundle".into(),
            format!(
                "trusted in test containers (--ca-in-tests; SHA-256 {}): tests reach hosts behind a TLS-intercepting proxy",
                &ca.sha256[..12]
            ),
        ));
    }
    // Only when on: a run graded as the original grades keeps the original's parameters.
    if settings.strict_results {
        params.push(("strict results".into(), "on (docs/integrity.md)".into()));
    }
    params.extend(settings.grading_version.run_parameter());
    params
}

/// The instances under a model's report directory (`<logs>/<run_id>/<model>`) that have a
/// [`REPORT_FILE`], sorted.
pub fn reported_ids(model_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(model_dir) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().join(REPORT_FILE).is_file())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    ids.sort();
    ids
}

/// Writes `report.json` into the instance's report directory.
pub fn write_report(report_dir: &Path, report: &InstanceReport) -> std::io::Result<PathBuf> {
    let path = report_dir.join(REPORT_FILE);
    // What a process killed mid-write left here.
    swtbench_data::fsutil::remove_stale_temp_files(report_dir);
    write_atomic(&path, report.to_report_json().as_bytes()).map_err(|e| e.source)?;
    Ok(path)
}

/// Removes a `report.json` left by an earlier invocation when the instance has no grade now.
pub fn remove_stale_report(report_dir: &Path) -> std::io::Result<()> {
    remove_if_exists(&report_dir.join(REPORT_FILE))
}

/// One run in the instance summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunSummary {
    pub run: RunKind,
    pub dir: String,
    pub key: String,
    pub result: RunOutcome,
}

/// The content of [`INSTANCE_SUMMARY_FILE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstanceSummary {
    pub instance_id: String,
    pub outcome: InstanceOutcome,
    /// Notes that qualify the grade, e.g. `pred_pre timed out after 1800 s`.
    pub reasons: Vec<String>,
    pub runs: Vec<RunSummary>,
    /// The runs that reached a resource limit (left out when none did).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limit_hits: Vec<RunLimit>,
    /// The error's cause as a stable name ([`crate::outcome::InstanceError::cause`]), for an
    /// instance that ended with an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_cause: Option<&'static str>,
    /// The integrity checks of a graded instance: `{"verdict": "ok"|"suspicious", "reasons":
    /// [...]}` (docs/integrity.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrity: Option<Integrity>,
}

/// A run that reached a resource limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RunLimit {
    pub run: RunKind,
    pub limit: LimitHit,
}

impl std::fmt::Display for RunLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.run, self.limit.as_str())
    }
}

/// The runs of an instance that reached a limit: executed ones say so, reused and copied ones
/// through their key file, failed gold and base runs through their cause.
pub fn limit_hits(runs: &[RunSummary]) -> Vec<RunLimit> {
    runs.iter()
        .filter_map(|r| {
            let limit = match &r.result {
                RunOutcome::Executed { limit, .. } => *limit,
                RunOutcome::Reused | RunOutcome::Copied { .. } => {
                    crate::keys::read_key_file(Path::new(&r.dir)).and_then(|k| k.result.limit)
                }
                RunOutcome::Failed {
                    reason: crate::outcome::ExecError::Limit { hit, .. },
                } => Some(*hit),
                RunOutcome::Failed { .. } => None,
            }?;
            Some(RunLimit { run: r.run, limit })
        })
        .collect()
}

pub fn write_summary(report_dir: &Path, summary: &InstanceSummary) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(summary).unwrap_or_default();
    text.push('\n');
    write_atomic(&report_dir.join(INSTANCE_SUMMARY_FILE), text.as_bytes()).map_err(|e| e.source)
}

/// Where the run report of `run_id` (or of one of its shards) is.
pub fn run_report_path(
    results_dir: &Path,
    model_dir: &str,
    run_id: &str,
    shard: Option<swtbench_plan::settings::Shard>,
) -> PathBuf {
    let whole = evaluation_results_path(results_dir, model_dir, run_id);
    match shard {
        // A shard's report covers its part: `<model>.<run_id>.shard-K-of-N.json`, beside the
        // report over the whole run that a run without --shard writes.
        Some(shard) => whole.with_extension(format!("{}.json", shard.file_tag())),
        None => whole,
    }
}

/// Writes the run report and returns its path.
pub fn write_run_report(
    results_dir: &Path,
    model_dir: &str,
    run_id: &str,
    shard: Option<swtbench_plan::settings::Shard>,
    report: &swtbench_grade::RunReport,
) -> std::io::Result<PathBuf> {
    let path = run_report_path(results_dir, model_dir, run_id, shard);
    if let Some(dir) = path.parent() {
        swtbench_data::fsutil::remove_stale_temp_files(dir);
    }
    write_atomic(&path, report.to_json().as_bytes()).map_err(|e| e.source)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `swtbench_instance.json` keeps its form: reasons are text.
    #[test]
    fn instance_summaries_keep_their_json() {
        let failure = crate::outcome::ExecError::Io {
            path: "logs/x".into(),
            message: "disk full".into(),
            kind: std::io::ErrorKind::StorageFull,
        };
        let summary = InstanceSummary {
            instance_id: "a__b-1".into(),
            outcome: InstanceOutcome::Error {
                reason: crate::outcome::InstanceError::Run {
                    run: RunKind::PredPost,
                    error: failure.clone(),
                },
            },
            reasons: vec!["pred_post: writing logs/x: disk full".into()],
            runs: vec![RunSummary {
                run: RunKind::PredPost,
                dir: "logs/r/m/a__b-1/pred_post".into(),
                key: "k".into(),
                result: RunOutcome::Failed { reason: failure },
            }],
            limit_hits: Vec::new(),
            error_cause: Some("storage"),
            integrity: None,
        };
        assert_eq!(
            serde_json::to_string(&summary).expect("json"),
            r#"{"instance_id":"a__b-1","outcome":{"kind":"error","reason":"pred_post: writing logs/x: disk full"},"reasons":["pred_post: writing logs/x: disk full"],"runs":[{"run":"pred_post","dir":"logs/r/m/a__b-1/pred_post","key":"k","result":{"kind":"failed","reason":"writing logs/x: disk full"}}],"error_cause":"storage"}"#
        );
        let limited = InstanceSummary {
            instance_id: "a__b-1".into(),
            outcome: InstanceOutcome::Unresolved { applied: true },
            reasons: Vec::new(),
            runs: Vec::new(),
            limit_hits: vec![RunLimit {
                run: RunKind::PredPost,
                limit: LimitHit::Memory,
            }],
            error_cause: None,
            integrity: None,
        };
        assert_eq!(
            serde_json::to_string(&limited).expect("json"),
            r#"{"instance_id":"a__b-1","outcome":{"kind":"unresolved","applied":true},"reasons":[],"runs":[],"limit_hits":[{"run":"pred_post","limit":"memory"}]}"#
        );
        let skipped = InstanceOutcome::Skipped {
            reason: swtbench_plan::plan::SkipCause::NoPrediction,
        };
        assert_eq!(
            serde_json::to_string(&skipped).expect("json"),
            r#"{"kind":"skipped","reason":"no prediction"}"#
        );
    }
}

//! `verify --reexecute K`: a sample of a finished run's graded instances evaluated again in fresh
//! containers, and their fresh `report.json` compared with the submitted ones. [`prepare`] picks
//! the sample and writes the predictions the fresh run evaluates (the model patch each instance
//! executed) into a throwaway directory; the caller evaluates them there with
//! [`crate::evaluate::evaluate`], `run`'s arguments made from `verify`'s (the command-line crate's
//! `VerifyArgs::fresh_run_args`); [`Reexecution::compare`] reads both reports.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use swtbench_core::layout::{LogsRoot, EVAL_SCRIPT_FILE, MODEL_PATCH_FILE, REPORT_FILE};
use swtbench_core::prediction::model_dir_name;
use swtbench_core::runs::RunKind;

use crate::lines::Line;
use crate::{Error, Result};

/// A sample of a run being evaluated again, in a temporary directory removed when this is dropped
/// (unless [`Reexecution::keep`] keeps it).
#[derive(Debug)]
pub struct Reexecution {
    tmp: tempfile::TempDir,
    /// The sampled instances, in sample order.
    pub ids: Vec<String>,
    /// The predictions file the fresh run evaluates.
    pub predictions: PathBuf,
    /// The fresh run's output directory.
    pub output_dir: PathBuf,
    /// The fresh run's id (`<run id>-reexecute`).
    pub run_id: String,
    /// Whether the submitted runs were traced (their eval script runs the tracer): the fresh run
    /// then computes coverage too.
    pub coverage: bool,
    submitted: PathBuf,
    model: String,
}

/// How a fresh report compares with the submitted one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compared {
    Same,
    /// What differs, key by key ([`report_differences`]).
    Differs(String),
    /// The fresh run wrote no report for the instance.
    NoFreshReport,
    /// The submitted report is gone or unreadable (the fresh one is there).
    NoSubmittedReport,
}

impl Compared {
    pub fn is_same(&self) -> bool {
        *self == Compared::Same
    }
}

/// The graded instances of `model` in `run_dir` (a report.json in the model's directory) among
/// `dataset_ids`, in a fixed order that does not favour the dataset's first ones (by SHA-256 of
/// run id and instance id), the first `k`.
pub fn sample(
    run_dir: &Path,
    run_id: &str,
    model: &str,
    dataset_ids: &[String],
    k: usize,
) -> Vec<String> {
    let dir = logs_of(run_dir).model_reports_dir(run_id, &model_dir_name(model));
    let mut ids: Vec<(String, String)> = dataset_ids
        .iter()
        .filter(|id| dir.join(id.as_str()).join(REPORT_FILE).is_file())
        .map(|id| {
            let h = swtbench_core::hash::sha256_hex(format!("{run_id}\n{id}"));
            (h, id.clone())
        })
        .collect();
    ids.sort();
    ids.into_iter().take(k).map(|(_, id)| id).collect()
}

/// The sample of `k` of the dataset's `instances` ([`sample`]) and its predictions in a new
/// temporary directory; `None` when the run has no graded instance.
pub fn prepare(
    run_dir: &Path,
    run_id: &str,
    model: &str,
    instances: &[swtbench_core::Instance],
    k: usize,
) -> Result<Option<Reexecution>> {
    let dataset_ids: Vec<String> = instances
        .iter()
        .map(|i| i.instance_id.to_string())
        .collect();
    let ids = sample(run_dir, run_id, model, &dataset_ids, k);
    if ids.is_empty() {
        return Ok(None);
    }
    let tmp = tempfile::Builder::new()
        .prefix("swtbench-reexecute-")
        .tempdir()
        .map_err(|e| Error::input(anyhow!("a temporary directory: {e}")))?;
    let logs = logs_of(run_dir);
    let model_dir = model_dir_name(model);
    let pred_pre = logs.pred_runs_dir(run_id, &model_dir, RunKind::PredPre);
    let predictions = tmp.path().join("predictions.jsonl");
    write_predictions(&pred_pre, model, &ids, &predictions)?;
    let coverage = std::fs::read_to_string(pred_pre.join(&ids[0]).join(EVAL_SCRIPT_FILE))
        .is_ok_and(|t| t.contains("/root/trace.py"));
    Ok(Some(Reexecution {
        output_dir: tmp.path().join("out"),
        tmp,
        ids,
        predictions,
        run_id: format!("{run_id}-reexecute"),
        coverage,
        submitted: logs.model_reports_dir(run_id, &model_dir),
        model: model.to_string(),
    }))
}

/// The logs root of `run_dir` (`<logs root>/<run id>`), whose path rules ([`LogsRoot`]) name the
/// run's directories.
fn logs_of(run_dir: &Path) -> LogsRoot {
    match run_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => LogsRoot::new(p),
        _ => LogsRoot::new("."),
    }
}

/// The model patch each instance executed (`model_patch.diff` of its pred_pre run), as a
/// predictions file.
fn write_predictions(pred_pre: &Path, model: &str, ids: &[String], file: &Path) -> Result<()> {
    let mut text = String::new();
    for id in ids {
        let p = pred_pre.join(id).join(MODEL_PATCH_FILE);
        // An instance graded without running anything (an empty patch) has no prediction run:
        // it is re-executed with an empty patch, which the fresh run grades the same way (a
        // submitted report that claims more differs from the fresh one).
        let ran = pred_pre.join(id).exists();
        let patch = match ran {
            false => String::new(),
            true => std::fs::read_to_string(&p).map_err(|e| {
                Error::input(anyhow!("{}: {e}", p.display())).with_hint(
                    "--reexecute runs the patch each instance executed; the run tree must hold it",
                )
            })?,
        };
        let row = serde_json::json!({
            "instance_id": id,
            "model_name_or_path": model,
            "model_patch": patch,
        });
        text.push_str(&row.to_string());
        text.push('\n');
    }
    std::fs::write(file, text).map_err(|e| Error::input(anyhow!("writing {}: {e}", file.display())))
}

/// A run directory `<logs root>/<run id>` as its parts: the directory (normalized), the run id and
/// the logs root (`.` when the directory has no parent).
pub fn run_dir_parts(run_dir: &Path) -> Result<(PathBuf, String, PathBuf)> {
    let run_dir = run_dir.components().collect::<PathBuf>();
    let run_id = run_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::input(anyhow!("{}: not a run directory", run_dir.display())))?
        .to_string();
    let logs_root = match run_dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((run_dir, run_id, logs_root))
}

/// What a comparison says, as `verify` prints it (nothing for a submitted report that is gone).
fn compared_line(id: &str, compared: &Compared) -> Option<String> {
    match compared {
        Compared::Same => Some(format!("reexecuted {id}: the same report")),
        Compared::Differs(what) => Some(format!("reexecuted {id}: differs: {what}")),
        Compared::NoFreshReport => Some(format!(
            "reexecuted {id}: no report from the fresh run (see its output above)"
        )),
        Compared::NoSubmittedReport => None,
    }
}

impl Reexecution {
    /// Each sampled instance's fresh report compared with the submitted one, in sample order.
    pub fn compare(&self) -> Vec<(String, Compared)> {
        let fresh = LogsRoot::new(self.output_dir.join(swtbench_core::layout::LOGS_ROOT_DIR))
            .model_reports_dir(&self.run_id, &model_dir_name(&self.model));
        self.ids
            .iter()
            .map(|id| {
                let read = |dir: &Path| -> Option<serde_json::Value> {
                    let text = std::fs::read_to_string(dir.join(id).join(REPORT_FILE)).ok()?;
                    serde_json::from_str(&text).ok()
                };
                let compared = match (read(&self.submitted), read(&fresh)) {
                    (Some(a), Some(b)) if a == b => Compared::Same,
                    (Some(a), Some(b)) => {
                        Compared::Differs(report_differences(&a[id.as_str()], &b[id.as_str()]))
                    }
                    (_, None) => Compared::NoFreshReport,
                    (None, Some(_)) => Compared::NoSubmittedReport,
                };
                (id.clone(), compared)
            })
            .collect()
    }

    /// The line said before the fresh run.
    pub fn starting(&self) -> String {
        format!(
            "re-executing {} instance(s) in {}: {}",
            self.ids.len(),
            self.output_dir.display(),
            self.ids.join(", ")
        )
    }

    /// After the fresh run (`clean_end`: it ended with exit code 0): each instance's comparison
    /// (data), the counts, and where the fresh run is kept when some report differs (else it is
    /// removed); and whether every report was the same.
    pub fn finish(self, clean_end: bool) -> (Vec<Line>, bool) {
        let compared = self.compare();
        let mut out: Vec<Line> = compared
            .iter()
            .filter_map(|(id, c)| compared_line(id, c))
            .map(Line::Data)
            .collect();
        let same = compared.iter().filter(|(_, c)| c.is_same()).count();
        let differ = compared.len() - same;
        out.push(Line::Info(format!(
            "{} instance(s) re-executed: {same} with the submitted report, {differ} without{}",
            self.ids.len(),
            if clean_end {
                ""
            } else {
                " (the fresh run did not end cleanly)"
            }
        )));
        if differ > 0 {
            // The fresh tree stays for a look.
            let kept = self.keep();
            out.push(Line::Info(format!(
                "the fresh run is kept in {}",
                kept.display()
            )));
        }
        (out, differ == 0)
    }

    /// Keeps the temporary directory (the fresh run, for a look) and returns its path.
    pub fn keep(self) -> PathBuf {
        self.tmp.keep()
    }
}

/// What differs between two instance reports (`report.json`'s inner object), key by key.
pub fn report_differences(submitted: &serde_json::Value, fresh: &serde_json::Value) -> String {
    let (Some(a), Some(b)) = (submitted.as_object(), fresh.as_object()) else {
        return "not an instance report".into();
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| match (a.get(k), b.get(k)) {
            (Some(x), Some(y)) if x.is_boolean() || x.is_number() => {
                format!("{k} submitted {x}, now {y}")
            }
            _ => k.to_string(),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod write_tests {
    use super::*;

    #[test]
    fn an_instance_graded_without_runs_is_reexecuted_with_an_empty_patch() {
        let dir = tempfile::tempdir().expect("test set-up");
        let pred_pre = dir.path().join("pred_pre__m");
        std::fs::create_dir_all(pred_pre.join("a__a-1")).expect("test set-up");
        std::fs::write(pred_pre.join("a__a-1").join(MODEL_PATCH_FILE), "diff\n")
            .expect("test set-up");
        std::fs::create_dir_all(pred_pre.join("a__a-3")).expect("test set-up");
        let file = dir.path().join("p.jsonl");
        let ids = ["a__a-1".to_string(), "a__a-2".to_string()];
        write_predictions(&pred_pre, "m", &ids, &file).expect("test set-up");
        let rows: Vec<serde_json::Value> = std::fs::read_to_string(&file)
            .expect("test set-up")
            .lines()
            .map(|l| serde_json::from_str(l).expect("test set-up"))
            .collect();
        assert_eq!(rows[0]["model_patch"], "diff\n");
        assert_eq!(rows[1]["model_patch"], "");
        // A prediction run whose patch file is gone is a damaged tree.
        let err = write_predictions(&pred_pre, "m", &["a__a-3".to_string()], &file)
            .expect_err("an error");
        assert!(err.to_string().contains("model_patch.diff"), "{err}");
    }
}

//! Re-grading a run, and collecting its reports, from a log tree in the original's layout (§4.8).
//!
//! File access goes through [`TreeReader`], a read-only view the caller implements (the binary
//! over `std::fs`, tests over an in-memory map). Nothing here writes: [`regrade`] returns the
//! `report.json` texts to write and the run report's entries; the caller writes them.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use swtbench_core::layout::{
    base_directives_hash, gold_directives_hash, InstanceRunKeys, LogsRoot, MODEL_PATCH_FILE,
    REPORT_FILE, TEST_OUTPUT_FILE,
};
use swtbench_core::{Instance, RunKind};

use crate::report::{grade_instance, GradeError, GradeOptions, InstanceReport, InstanceRunOutputs};
use crate::run_report::{EntryState, ErrorReason, RunReportEntry};

/// Read-only access to a log tree.
pub trait TreeReader: Sync {
    /// The file's bytes; `Ok(None)` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Names of the directories directly under `path`; `Ok(None)` when `path` does not exist.
    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>>;
}

/// An in-memory tree: path → bytes. Directories are implied by the paths.
#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    files: BTreeMap<PathBuf, Vec<u8>>,
}

impl MemoryTree {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) {
        self.files.insert(path.into(), contents.into());
    }

    pub fn get(&self, path: &Path) -> Option<&[u8]> {
        self.files.get(path).map(Vec::as_slice)
    }

    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every file, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&Path, &[u8])> {
        self.files.iter().map(|(p, b)| (p.as_path(), b.as_slice()))
    }
}

impl TreeReader for MemoryTree {
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        Ok(self.files.get(path).cloned())
    }

    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>> {
        let mut found = false;
        let mut dirs: Vec<String> = Vec::new();
        for p in self.files.keys() {
            let Ok(rest) = p.strip_prefix(path) else {
                continue;
            };
            found = true;
            let mut comps = rest.components();
            if let (Some(first), Some(_)) = (comps.next(), comps.next()) {
                let name = first.as_os_str().to_string_lossy().into_owned();
                if dirs.last() != Some(&name) && !dirs.contains(&name) {
                    dirs.push(name);
                }
            }
        }
        Ok(found.then_some(dirs))
    }
}

/// What to re-grade.
#[derive(Debug, Clone, Copy)]
pub struct RegradeRequest<'a> {
    pub logs_root: &'a LogsRoot,
    pub run_id: &'a str,
    /// The model's directory name (`model_name_or_path` with `/` → `__`).
    pub model_dir: &'a str,
    /// The submitted instances, in dataset order.
    pub instances: &'a [Instance],
    /// Re-grade instances that already have a `report.json`.
    pub rewrite: bool,
    pub options: GradeOptions,
    /// Worker threads reading and grading (0: one per available core). Reading the six outputs
    /// of thousands of instances is dominated by file-system calls, which threads overlap.
    pub threads: usize,
}

/// The result of re-grading: the run report's entries (in the given order) and the reports to write.
#[derive(Debug, Clone, Default)]
pub struct Regraded {
    pub entries: Vec<RunReportEntry>,
    /// `(path of report.json, contents)` for every instance graded now.
    pub writes: Vec<(PathBuf, String)>,
    /// Things worth telling the user (unreadable existing reports that were re-graded, …).
    pub warnings: Vec<String>,
}

/// Re-grades a run (the original's `make_run_report` loop): per instance, an existing
/// `report.json` is reused unless `rewrite`; otherwise the six outputs are read from the pred
/// dirs and the shared gold/base dirs keyed by directive hashes, and graded. An instance whose
/// pred_pre `model_patch.diff` or `test_output.txt` is missing is an error, as in the original.
pub fn regrade(tree: &dyn TreeReader, req: &RegradeRequest<'_>) -> Regraded {
    let threads = match req.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
    .clamp(1, req.instances.len().max(1));
    let chunk = req.instances.len().div_ceil(threads).max(1);
    let results: Vec<Vec<OneRegraded>> = if threads == 1 {
        vec![req
            .instances
            .iter()
            .map(|i| regrade_one(tree, req, i))
            .collect()]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = req
                .instances
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|i| regrade_one(tree, req, i))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut out = Regraded::default();
    for (entry, write, warning) in results.into_iter().flatten() {
        out.entries.push(entry);
        out.writes.extend(write);
        out.warnings.extend(warning);
    }
    out
}

fn read_or_error(tree: &dyn TreeReader, path: &Path) -> Result<Option<Vec<u8>>, ErrorReason> {
    tree.read(path)
        .map_err(|e| ErrorReason::Run(format!("cannot read {}: {e}", path.display())))
}

/// One instance's entry, the report to write (if graded now) and a warning.
type OneRegraded = (RunReportEntry, Option<(PathBuf, String)>, Option<String>);

fn regrade_one(tree: &dyn TreeReader, req: &RegradeRequest<'_>, inst: &Instance) -> OneRegraded {
    let id = inst.instance_id.as_str();
    let entry = |state| RunReportEntry {
        instance_id: id.to_string(),
        state,
    };
    let root = req.logs_root;
    let pred_pre = root.pred_run_dir(req.run_id, req.model_dir, RunKind::PredPre, id);
    let model_patch = match read_or_error(tree, &pred_pre.join(MODEL_PATCH_FILE)) {
        Ok(Some(p)) => p,
        Ok(None) => {
            return (
                entry(EntryState::Error(ErrorReason::MissingModelPatch)),
                None,
                None,
            )
        }
        Err(e) => return (entry(EntryState::Error(e)), None, None),
    };
    let pred_pre_output = match read_or_error(tree, &pred_pre.join(TEST_OUTPUT_FILE)) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return (
                entry(EntryState::Error(ErrorReason::MissingPredPreOutput)),
                None,
                None,
            )
        }
        Err(e) => return (entry(EntryState::Error(e)), None, None),
    };
    let model_patch = crate::py::universal_newlines(&String::from_utf8_lossy(&model_patch));
    let empty_patch = model_patch.trim().is_empty();
    let report_path = root.report_path(req.run_id, req.model_dir, id);
    let mut warning = None;
    if !req.rewrite {
        match read_or_error(tree, &report_path) {
            Ok(Some(bytes)) => {
                match InstanceReport::from_report_json(&String::from_utf8_lossy(&bytes), Some(id)) {
                    Ok(report) => {
                        return (
                            entry(EntryState::Graded {
                                report: Box::new(report),
                                reused: true,
                                empty_patch,
                            }),
                            None,
                            None,
                        )
                    }
                    Err(e) => {
                        warning = Some(format!(
                            "{}: unreadable ({e}); graded again",
                            report_path.display()
                        ));
                    }
                }
            }
            Ok(None) => {}
            Err(e) => return (entry(EntryState::Error(e)), None, None),
        }
    }
    let gold_hash = gold_directives_hash(&inst.repo, &inst.golden_test_patch);
    let base_hash = base_directives_hash(&inst.repo, &model_patch);
    let keys = InstanceRunKeys {
        run_id: req.run_id,
        model_dir: req.model_dir,
        instance_id: id,
        gold_hash: &gold_hash,
        base_hash: &base_hash,
    };
    let mut outputs: [Option<Vec<u8>>; 6] = Default::default();
    outputs[0] = Some(pred_pre_output);
    for (i, path) in root.instance_test_outputs(&keys).iter().enumerate().skip(1) {
        match read_or_error(tree, path) {
            Ok(o) => outputs[i] = o,
            Err(e) => return (entry(EntryState::Error(e)), None, warning),
        }
    }
    let inputs = InstanceRunOutputs {
        instance_id: id,
        repo: &inst.repo,
        gold_code_patch: &inst.golden_code_patch,
        outputs: [0, 1, 2, 3, 4, 5].map(|i| outputs[i].as_deref()),
    };
    match grade_instance(&inputs, &req.options) {
        Ok(graded) => {
            let text = graded.report.to_report_json();
            (
                entry(EntryState::Graded {
                    report: Box::new(graded.report),
                    reused: false,
                    empty_patch,
                }),
                Some((report_path, text)),
                warning,
            )
        }
        Err(GradeError::UnknownRepo { repo, .. }) => (
            entry(EntryState::Error(ErrorReason::UnknownRepo(repo))),
            None,
            warning,
        ),
        Err(GradeError::GoldPatch { detail, .. }) => (
            entry(EntryState::Error(ErrorReason::GoldPatch(detail))),
            None,
            warning,
        ),
    }
}

/// Reports found under `<logs root>/<run_id>/<model>`.
#[derive(Debug, Clone, Default)]
pub struct CollectedReports {
    /// Sorted by instance id.
    pub reports: Vec<InstanceReport>,
    /// Instance dirs whose `report.json` could not be read (the original would crash), with why.
    pub unreadable: Vec<(String, String)>,
    /// Instance dirs skipped because their id is in a filter list.
    pub filtered: usize,
}

/// What one instance directory holds.
enum Found {
    Nothing,
    Filtered,
    Unreadable(String),
    Report(Box<InstanceReport>),
}

/// The original's `_collect_reports`: every `<dir>/<instance>/report.json`, skipping instances
/// for which `skip` is true. `Ok(None)` when `dir` does not exist.
pub fn collect_reports(
    tree: &dyn TreeReader,
    dir: &Path,
    skip: &(dyn Fn(&str) -> bool + Sync),
) -> io::Result<Option<CollectedReports>> {
    let Some(mut names) = tree.subdirs(dir)? else {
        return Ok(None);
    };
    names.sort();
    let read_one = |name: &String| -> io::Result<Found> {
        let Some(bytes) = tree.read(&dir.join(name).join(REPORT_FILE))? else {
            return Ok(Found::Nothing);
        };
        if skip(name) {
            return Ok(Found::Filtered);
        }
        Ok(
            match InstanceReport::from_report_json(&String::from_utf8_lossy(&bytes), Some(name)) {
                Ok(r) => Found::Report(Box::new(r)),
                Err(e) => Found::Unreadable(e.to_string()),
            },
        )
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, names.len().max(1));
    let chunk = names.len().div_ceil(threads).max(1);
    let results: Vec<io::Result<Found>> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(read_one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out = CollectedReports::default();
    for (name, r) in names.into_iter().zip(results) {
        match r? {
            Found::Nothing => {}
            Found::Filtered => out.filtered += 1,
            Found::Unreadable(e) => out.unreadable.push((name, e)),
            Found::Report(r) => out.reports.push(*r),
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_tree_lists_subdirs() {
        let mut t = MemoryTree::new();
        t.insert("r/run/m/a/report.json", "{}");
        t.insert("r/run/m/b/report.json", "{}");
        t.insert("r/run/m/file.txt", "x");
        assert_eq!(
            t.subdirs(Path::new("r/run/m")).unwrap(),
            Some(vec!["a".to_string(), "b".to_string()])
        );
        assert_eq!(t.subdirs(Path::new("r/nope")).unwrap(), None);
        assert_eq!(
            t.read(Path::new("r/run/m/file.txt")).unwrap(),
            Some(b"x".to_vec())
        );
    }
}

//! Re-grading a run, and collecting its reports, from a log tree in the original's layout (§4.8).
//!
//! File access goes through [`TreeReader`], a read-only view the caller implements (the binary
//! over `std::fs`, tests over an in-memory map). Nothing here writes: [`regrade`] returns the
//! `report.json` texts to write and the run report's entries; the caller writes them.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use swtbench_core::directives::{directives_hash, test_directives, DEFAULT_NON_TEST_EXTS};
use swtbench_core::layout::{
    InstanceRunKeys, LogsRoot, SharedDirProbe, SharedVariant, EVAL_SCRIPT_FILE, MODEL_PATCH_FILE,
    REPORT_FILE, TEST_OUTPUT_FILE,
};
use swtbench_core::{Instance, RunKind};

use crate::logs::ExecMode;
use crate::parsers::Parser;
use crate::report::{
    grade_instance, grade_instance_with_parser, GradeError, GradeOptions, InstanceReport,
    InstanceRunOutputs,
};
use crate::run_report::{EntryState, ErrorReason, RunReportEntry};

/// Read-only access to a log tree.
pub trait TreeReader: Sync {
    /// The file's bytes; `Ok(None)` when it does not exist.
    fn read(&self, path: &Path) -> io::Result<Option<Vec<u8>>>;
    /// Names of the directories directly under `path`; `Ok(None)` when `path` does not exist.
    fn subdirs(&self, path: &Path) -> io::Result<Option<Vec<String>>>;
    /// Whether the file exists (without reading it, where the tree can).
    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.read(path).map(|o| o.is_some())
    }
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

    fn exists(&self, path: &Path) -> io::Result<bool> {
        Ok(self.files.contains_key(path))
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

/// How the runs of one repository are read, when a spec table says more than the original's
/// defaults: its unit-test log parser, and the file extensions that are never test directives
/// (they decide the directive hashes that name the shared gold/base directories).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoRules {
    /// `None`: the original's repository → parser map decides (no entry: an error).
    pub parser: Option<Parser>,
    pub non_test_exts: Vec<String>,
}

impl Default for RepoRules {
    fn default() -> Self {
        RepoRules {
            parser: None,
            non_test_exts: DEFAULT_NON_TEST_EXTS
                .iter()
                .map(|e| e.to_string())
                .collect(),
        }
    }
}

impl RepoRules {
    /// `sha256("__".join(directives))` of `patch` under these rules.
    pub fn directives_hash(&self, repo: &str, patch: &str) -> String {
        let exts: Vec<&str> = self.non_test_exts.iter().map(String::as_str).collect();
        directives_hash(&test_directives(patch, repo, &exts))
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
    /// Rules of repositories a spec table describes (by `owner/name`); any other repository uses
    /// the original's parser map and non-test extensions.
    pub repo_rules: &'a BTreeMap<String, RepoRules>,
    /// `Some`: the predictions are known, and these instances have no usable patch (null, blank
    /// or only binary diffs). `swtbench run` grades such an instance as not applied without
    /// running anything, so it has no run directories: it is graded the same way here instead of
    /// being an error. `None`: predictions unknown; an instance without runs whose existing
    /// `report.json` says "not applied" (what `run` writes for an empty patch) keeps that report.
    pub empty_patches: Option<&'a BTreeSet<String>>,
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
        Ok(None) => return not_run(tree, req, id),
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
    let default_rules = RepoRules::default();
    let rules = req.repo_rules.get(&inst.repo).unwrap_or(&default_rules);
    let gold_hash = rules.directives_hash(&inst.repo, &inst.golden_test_patch);
    let base_hash = rules.directives_hash(&inst.repo, &model_patch);
    // The shared runs of this run's eval variant (reproduction mode, coverage, tracer mode: read
    // from the pred_pre eval script) live in their own directories unless the variant is the
    // default; a tree written by the original (or before variants existed) has only the plain
    // directories, read when the variant's are absent.
    let pred_variant = match tree.read(&pred_pre.join(EVAL_SCRIPT_FILE)) {
        Ok(Some(script)) => Some(SharedVariant::of_eval_script(&String::from_utf8_lossy(
            &script,
        ))),
        _ => None,
    };
    let variant = pred_variant.unwrap_or(SharedVariant {
        reproduction: req.options.exec_mode == ExecMode::ReproductionScript,
        ..SharedVariant::DEFAULT
    });
    let plain = InstanceRunKeys {
        run_id: req.run_id,
        model_dir: req.model_dir,
        instance_id: id,
        gold_hash: &gold_hash,
        base_hash: &base_hash,
    };
    // Each pair (gold, base) comes from one directory: the variant's own, or the plain one of an
    // older tree when its outputs are of the same variant.
    let gold_key = variant.resolve_pair_key(&gold_hash, false, |key| {
        probe_pair(tree, root, id, [RunKind::GoldPre, RunKind::GoldPost], key)
    });
    let base_key = variant.resolve_pair_key(&base_hash, false, |key| {
        probe_pair(tree, root, id, [RunKind::BasePre, RunKind::BasePost], key)
    });
    let keys = InstanceRunKeys {
        gold_hash: &gold_key,
        base_hash: &base_key,
        ..plain
    };
    let mut outputs: [Option<Vec<u8>>; 6] = Default::default();
    outputs[0] = Some(pred_pre_output);
    let mut other_mode: Vec<&str> = Vec::new();
    let mut other_coverage: Vec<&str> = Vec::new();
    for (i, dir) in root.instance_run_dirs(&keys).iter().enumerate().skip(1) {
        match read_or_error(tree, &dir.join(TEST_OUTPUT_FILE)) {
            Ok(o) => outputs[i] = o,
            Err(e) => return (entry(EntryState::Error(e)), None, warning),
        }
        if RunKind::ALL[i].is_shared() && outputs[i].is_some() {
            if let Ok(Some(script)) = tree.read(&dir.join(EVAL_SCRIPT_FILE)) {
                let shared = SharedVariant::of_eval_script(&String::from_utf8_lossy(&script));
                if shared.reproduction != (req.options.exec_mode == ExecMode::ReproductionScript) {
                    other_mode.push(RunKind::ALL[i].as_str());
                }
                if pred_variant.is_some_and(|p| {
                    (p.coverage, p.tracer_fixed) != (shared.coverage, shared.tracer_fixed)
                }) {
                    other_coverage.push(RunKind::ALL[i].as_str());
                }
            }
        }
    }
    if !other_coverage.is_empty() {
        let note = format!(
            "{id}: {} ran with other coverage settings (tracer on/off or its mode) than \
             pred_pre; graded anyway",
            other_coverage.join(", ")
        );
        warning = Some(match warning {
            Some(w) => format!("{w}; {note}"),
            None => note,
        });
    }
    if !other_mode.is_empty() {
        let note = format!(
            "{id}: {} ran in {} mode (a tree whose shared directories are keyed by test directives \
             only, as the original's are, where a run in the other mode replaced them); graded \
             anyway",
            other_mode.join(", "),
            match req.options.exec_mode {
                ExecMode::UnitTest => ExecMode::ReproductionScript,
                ExecMode::ReproductionScript => ExecMode::UnitTest,
            }
            .as_str()
        );
        warning = Some(match warning {
            Some(w) => format!("{w}; {note}"),
            None => note,
        });
    }
    let missing: Vec<&str> = RunKind::ALL
        .iter()
        .zip(&outputs)
        .filter(|(_, o)| o.is_none())
        .map(|(k, _)| k.as_str())
        .collect();
    if !missing.is_empty() {
        let note = format!(
            "{id}: no test_output.txt for {}; graded as runs without tests, as the original does",
            missing.join(", ")
        );
        warning = Some(match warning {
            Some(w) => format!("{w}; {note}"),
            None => note,
        });
    }
    let inputs = InstanceRunOutputs {
        instance_id: id,
        repo: &inst.repo,
        gold_code_patch: &inst.golden_code_patch,
        outputs: [0, 1, 2, 3, 4, 5].map(|i| outputs[i].as_deref()),
    };
    let graded = match rules.parser {
        Some(parser) => grade_instance_with_parser(&inputs, &req.options, parser),
        None => grade_instance(&inputs, &req.options),
    };
    match graded {
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

/// The mode an eval script ran the tests in: reproduction-script scripts echo the exit code on a
/// line of their own (§8), unit-test scripts never do.
/// What the directories of one pair of shared runs under `key` hold.
fn probe_pair(
    tree: &dyn TreeReader,
    root: &LogsRoot,
    id: &str,
    pair: [RunKind; 2],
    key: &str,
) -> SharedDirProbe {
    SharedDirProbe::of_pair(
        &pair.map(|kind| root.shared_run_dir(kind, id, key)),
        |p| tree.exists(p).unwrap_or(false),
        |p| match tree.read(p) {
            Ok(Some(s)) => Some(String::from_utf8_lossy(&s).into_owned()),
            _ => None,
        },
    )
}

/// An instance without a pred_pre `model_patch.diff`: nothing of it ran. An empty patch (known
/// from the predictions, or from the not-applied `report.json` `swtbench run` left) is graded as
/// not applied, as `run` does; anything else is an error, as in the original.
fn not_run(tree: &dyn TreeReader, req: &RegradeRequest<'_>, id: &str) -> OneRegraded {
    let entry = |state| RunReportEntry {
        instance_id: id.to_string(),
        state,
    };
    let missing = || {
        (
            entry(EntryState::Error(ErrorReason::MissingModelPatch)),
            None,
            None,
        )
    };
    if req.empty_patches.is_some_and(|empty| !empty.contains(id)) {
        return missing();
    }
    let report_path = req.logs_root.report_path(req.run_id, req.model_dir, id);
    let existing = match read_or_error(tree, &report_path) {
        Ok(e) => e,
        Err(e) => return (entry(EntryState::Error(e)), None, None),
    };
    let existing = existing.and_then(|bytes| {
        InstanceReport::from_report_json(&String::from_utf8_lossy(&bytes), Some(id)).ok()
    });
    let graded = |report: InstanceReport, reused: bool| {
        entry(EntryState::Graded {
            report: Box::new(report),
            reused,
            empty_patch: true,
        })
    };
    let known_empty = req.empty_patches.is_some();
    match existing {
        // The report `run` wrote for the empty patch (or an earlier grade's) is kept, as any
        // existing report is.
        Some(report) if !req.rewrite && (known_empty || report.is_not_applied()) => {
            (graded(report, true), None, None)
        }
        Some(report) if !known_empty && !report.is_not_applied() => missing(),
        None if !known_empty => missing(),
        _ => {
            let report = InstanceReport::empty_patch(id);
            let text = report.to_report_json();
            (graded(report, false), Some((report_path, text)), None)
        }
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
    use swtbench_core::InstanceId;

    const GOLD_FIX: &str =
        "diff --git a/w/m.py b/w/m.py\n--- a/w/m.py\n+++ b/w/m.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n";
    const GOLD_TESTS: &str = "diff --git a/tests/test_m.py b/tests/test_m.py\n--- a/tests/test_m.py\n+++ b/tests/test_m.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n";
    /// Touches a test file and a data file (`.json` is a non-test extension by default).
    const MODEL_PATCH: &str = "diff --git a/tests/test_n.py b/tests/test_n.py\n--- a/tests/test_n.py\n+++ b/tests/test_n.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\ndiff --git a/tests/data.json b/tests/data.json\n--- a/tests/data.json\n+++ b/tests/data.json\n@@ -1 +1 @@\n-{}\n+[]\n";

    fn instance(id: &str, repo: &str) -> Instance {
        Instance {
            instance_id: InstanceId(id.to_string()),
            repo: repo.to_string(),
            version: "0.1".into(),
            base_commit: "abc".into(),
            environment_setup_commit: "abc".into(),
            golden_code_patch: GOLD_FIX.into(),
            golden_test_patch: GOLD_TESTS.into(),
            fail_to_pass: vec![],
            pass_to_pass: vec![],
            extra: Default::default(),
        }
    }

    fn out(applied: bool, tests: &str) -> String {
        let apply = if applied {
            "Applied patch tests/test_n.py cleanly.\n"
        } else {
            ""
        };
        format!("+ git apply -v -\n{apply}+ pytest -rA\n{tests}\n")
    }

    /// A run tree of one instance whose model's new test goes from fail to pass, with the
    /// shared base runs stored under `base_hash`.
    fn tree_with_runs(root: &LogsRoot, inst: &Instance, base_hash: &str) -> MemoryTree {
        let id = inst.instance_id.as_str();
        let gold_hash = RepoRules::default().directives_hash(&inst.repo, GOLD_TESTS);
        let keys = InstanceRunKeys {
            run_id: "r",
            model_dir: "m",
            instance_id: id,
            gold_hash: &gold_hash,
            base_hash,
        };
        let outputs = [
            out(true, "FAILED tests/test_n.py::test_new - x"),
            out(true, "PASSED tests/test_n.py::test_new"),
            out(true, "FAILED tests/test_m.py::test_gold"),
            out(true, "PASSED tests/test_m.py::test_gold"),
            out(false, "PASSED tests/test_n.py::test_other"),
            out(false, "PASSED tests/test_n.py::test_other"),
        ];
        let mut t = MemoryTree::new();
        for (dir, o) in root.instance_run_dirs(&keys).iter().zip(outputs) {
            t.insert(dir.join(TEST_OUTPUT_FILE), o);
        }
        t.insert(
            root.pred_run_dir("r", "m", RunKind::PredPre, id)
                .join(MODEL_PATCH_FILE),
            MODEL_PATCH,
        );
        t
    }

    fn request<'a>(
        root: &'a LogsRoot,
        instances: &'a [Instance],
        rules: &'a BTreeMap<String, RepoRules>,
        empty: Option<&'a BTreeSet<String>>,
        rewrite: bool,
    ) -> RegradeRequest<'a> {
        RegradeRequest {
            logs_root: root,
            run_id: "r",
            model_dir: "m",
            instances,
            rewrite,
            options: GradeOptions::default(),
            threads: 1,
            repo_rules: rules,
            empty_patches: empty,
        }
    }

    fn state(r: &Regraded) -> &EntryState {
        &r.entries[0].state
    }

    #[test]
    fn spec_table_rules_choose_the_parser_and_the_shared_directories() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("acme__widget-1", "acme/widget")];
        // With `.json` no longer a non-test extension, the data file is a directive too.
        let rules = RepoRules {
            parser: Some(Parser::Pytest),
            non_test_exts: vec![".txt".into()],
        };
        let base_hash = rules.directives_hash("acme/widget", MODEL_PATCH);
        assert_ne!(
            base_hash,
            RepoRules::default().directives_hash("acme/widget", MODEL_PATCH)
        );
        let tree = tree_with_runs(&root, &inst[0], &base_hash);

        // No rules: the original's map has no parser for the repository.
        let none = BTreeMap::new();
        let r = regrade(&tree, &request(&root, &inst, &none, None, false));
        assert_eq!(
            state(&r),
            &EntryState::Error(ErrorReason::UnknownRepo("acme/widget".into()))
        );
        // A parser but the default extensions: the base runs are looked up under another
        // directive hash, where there is nothing.
        let parser_only: BTreeMap<String, RepoRules> = [(
            "acme/widget".to_string(),
            RepoRules {
                parser: Some(Parser::Pytest),
                ..Default::default()
            },
        )]
        .into();
        let r = regrade(&tree, &request(&root, &inst, &parser_only, None, false));
        let EntryState::Graded { report, .. } = state(&r) else {
            panic!("{:?}", state(&r));
        };
        assert_eq!(report.tests_base.as_ref().unwrap().total(), 0);
        // The table's rules: parser and extensions both apply, base runs are found.
        let table: BTreeMap<String, RepoRules> = [("acme/widget".to_string(), rules)].into();
        let r = regrade(&tree, &request(&root, &inst, &table, None, false));
        let EntryState::Graded { report, reused, .. } = state(&r) else {
            panic!("{:?}", state(&r));
        };
        assert!(report.resolved && !reused);
        assert_eq!(
            report.tests_base.as_ref().unwrap().pass_to_pass,
            vec!["tests/test_n.py::test_other".to_string()]
        );
        assert_eq!(r.writes.len(), 1);
    }

    #[test]
    fn missing_shared_outputs_are_graded_with_a_warning() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("o__r-1", "pytest-dev/pytest")];
        let hash = RepoRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let full = tree_with_runs(&root, &inst[0], &hash);
        let mut partial = MemoryTree::new();
        for (p, b) in full.iter() {
            if !p.starts_with("logs/base_post") && !p.starts_with("logs/gold_pre") {
                partial.insert(p, b);
            }
        }
        assert_eq!(partial.len(), full.len() - 2);
        let rules = BTreeMap::new();
        let r = regrade(&full, &request(&root, &inst, &rules, None, false));
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        let r = regrade(&partial, &request(&root, &inst, &rules, None, false));
        assert_eq!(
            r.warnings,
            vec!["o__r-1: no test_output.txt for gold_pre, base_post; graded as runs without tests, as the original does".to_string()]
        );
        // Graded all the same: base_pre's passing test now counts as P→X, so base has a P→F.
        let EntryState::Graded { report, .. } = state(&r) else {
            panic!("{:?}", state(&r));
        };
        assert_eq!(
            report.tests_base.as_ref().unwrap().pass_to_fail,
            vec!["tests/test_n.py::test_other".to_string()]
        );
    }

    #[test]
    fn shared_runs_of_the_other_mode_are_named() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("o__r-1", "pytest-dev/pytest")];
        let hash = RepoRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let mut tree = tree_with_runs(&root, &inst[0], &hash);
        let gold_hash = RepoRules::default().directives_hash("pytest-dev/pytest", GOLD_TESTS);
        let unit = "#!/bin/bash\nset -uxo pipefail\npytest -rA tests/test_m.py\ngit checkout abc\n";
        let repro = "#!/bin/bash\nset -uxo pipefail\npython3 /testbed/repro.py\necho $?\ngit checkout abc\n";
        let gold_pre = root.shared_run_dir(RunKind::GoldPre, "o__r-1", &gold_hash);
        let base_post = root.shared_run_dir(RunKind::BasePost, "o__r-1", &hash);
        tree.insert(gold_pre.join(EVAL_SCRIPT_FILE), repro);
        tree.insert(base_post.join(EVAL_SCRIPT_FILE), unit);
        let rules = BTreeMap::new();
        let r = regrade(&tree, &request(&root, &inst, &rules, None, false));
        assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
        assert!(r.warnings[0].starts_with("o__r-1: gold_pre ran in reproduction_script mode"));
        let mut req = request(&root, &inst, &rules, None, false);
        req.options.exec_mode = ExecMode::ReproductionScript;
        let r = regrade(&tree, &req);
        assert!(r.warnings[0].starts_with("o__r-1: base_post ran in unit_test mode"));
    }

    #[test]
    fn shared_runs_of_the_runs_variant_are_read_before_the_plain_ones() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("o__r-1", "pytest-dev/pytest")];
        let hash = RepoRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let gold_hash = RepoRules::default().directives_hash("pytest-dev/pytest", GOLD_TESTS);
        let mut tree = tree_with_runs(&root, &inst[0], &hash);
        // This run had no coverage (no `cat coverage.cover` in its script): its gold runs are in
        // `<hash>.nocov`, where gold_pre's test already passes.
        let nocov =
            "#!/bin/bash\nset -uxo pipefail\npytest -rA tests/test_n.py\ngit checkout abc\n";
        tree.insert(
            root.pred_run_dir("r", "m", RunKind::PredPre, "o__r-1")
                .join(EVAL_SCRIPT_FILE),
            nocov,
        );
        let rules = BTreeMap::new();
        let gold = |tree: &MemoryTree| {
            let r = regrade(tree, &request(&root, &inst, &rules, None, true));
            let EntryState::Graded { report, .. } = state(&r) else {
                panic!("{:?}", state(&r));
            };
            report.tests_gold.clone().unwrap().fail_to_pass
        };
        // Only the plain directories (a tree of the original): they are read.
        assert_eq!(gold(&tree), vec!["tests/test_m.py::test_gold".to_string()]);
        // … and said to be of another kind when their script ran the tracer.
        tree.insert(
            root.shared_run_dir(RunKind::GoldPre, "o__r-1", &gold_hash)
                .join(EVAL_SCRIPT_FILE),
            "#!/bin/bash\npytest -rA tests/test_m.py\ncat coverage.cover\n",
        );
        let r = regrade(&tree, &request(&root, &inst, &rules, None, true));
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("gold_pre ran with other coverage settings")),
            "{:?}",
            r.warnings
        );
        let variant_dir =
            root.shared_run_dir(RunKind::GoldPre, "o__r-1", &format!("{gold_hash}.nocov"));
        tree.insert(
            variant_dir.join(TEST_OUTPUT_FILE),
            out(true, "PASSED tests/test_m.py::test_gold"),
        );
        assert!(gold(&tree).is_empty());
    }

    #[test]
    fn empty_patches_are_graded_as_not_applied_like_run_does() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("o__r-1", "pytest-dev/pytest")];
        let rules = BTreeMap::new();
        let report_path = root.report_path("r", "m", "o__r-1");
        let empty_text = InstanceReport::empty_patch("o__r-1").to_report_json();
        let empty: BTreeSet<String> = ["o__r-1".to_string()].into();
        let not_empty = BTreeSet::new();
        let bare = MemoryTree::new();

        // Known empty, no report yet: graded and written.
        let r = regrade(&bare, &request(&root, &inst, &rules, Some(&empty), false));
        assert!(matches!(
            state(&r),
            EntryState::Graded { reused: false, empty_patch: true, report } if report.is_not_applied()
        ));
        assert_eq!(r.writes, vec![(report_path.clone(), empty_text.clone())]);
        // A non-empty prediction without runs is an error, as in the original.
        let r = regrade(
            &bare,
            &request(&root, &inst, &rules, Some(&not_empty), false),
        );
        assert_eq!(
            state(&r),
            &EntryState::Error(ErrorReason::MissingModelPatch)
        );
        // Predictions unknown and no report: an error too.
        let r = regrade(&bare, &request(&root, &inst, &rules, None, false));
        assert_eq!(
            state(&r),
            &EntryState::Error(ErrorReason::MissingModelPatch)
        );

        // The report `run` wrote is kept, with or without the predictions.
        let mut with_report = MemoryTree::new();
        with_report.insert(&report_path, empty_text.clone());
        for empty in [Some(&empty), None] {
            let r = regrade(&with_report, &request(&root, &inst, &rules, empty, false));
            assert!(matches!(
                state(&r),
                EntryState::Graded {
                    reused: true,
                    empty_patch: true,
                    ..
                }
            ));
            assert!(r.writes.is_empty());
            // --rewrite writes the same report again.
            let r = regrade(&with_report, &request(&root, &inst, &rules, empty, true));
            assert!(matches!(
                state(&r),
                EntryState::Graded {
                    reused: false,
                    empty_patch: true,
                    ..
                }
            ));
            assert_eq!(r.writes, vec![(report_path.clone(), empty_text.clone())]);
        }
        // Without predictions, a report that says the patch applied cannot come from an empty
        // patch: no runs means an error.
        let mut applied = MemoryTree::new();
        let mut rep = InstanceReport::empty_patch("o__r-1");
        rep.patch_successfully_applied = true;
        rep.added_f2p = Some(0);
        applied.insert(&report_path, rep.to_report_json());
        let r = regrade(&applied, &request(&root, &inst, &rules, None, false));
        assert_eq!(
            state(&r),
            &EntryState::Error(ErrorReason::MissingModelPatch)
        );
    }

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

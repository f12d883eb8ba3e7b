//! Re-grading a run from its log tree (the original's `make_run_report` loop), as `swtbench
//! grade` does: per instance, reuse its `report.json` or read its six outputs (found by
//! [`RunTree`]) and grade them.

use std::collections::BTreeSet;
use std::path::PathBuf;

use swtbench_core::layout::{LogsRoot, KEY_FILE, TEST_OUTPUT_FILE};
use swtbench_core::{Instance, RunKind};

use super::run::{InstanceRuns, RunTree, RunTreeError, SharedHashes};
use super::{ReadRules, TreeReader};
use crate::evidence::{EVIDENCE_FILE, EVIDENCE_META_FILE};
use crate::instance::{
    grade_instance_outputs, InstanceGradeError, InstanceInputs, OutputsInMemory,
};
use crate::integrity::Integrity;
use crate::logs::ExecMode;
use crate::report::{GradeError, GradeOptions, InstanceReport};
use crate::run_report::{EntryState, ErrorReason, RunReportEntry};

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
    /// The parsers and non-test extensions a spec table sets; any other repository uses the
    /// original's parser map and non-test extensions.
    pub rules: &'a ReadRules,
    /// `Some`: the predictions are known, and these instances have no usable patch (null, blank
    /// or only binary diffs). `swtbench run` grades such an instance as not applied without
    /// running anything, so it has no run directories: it is graded the same way here instead of
    /// being an error. `None`: predictions unknown; an instance without runs whose existing
    /// `report.json` says "not applied" (what `run` writes for an empty patch) keeps that report.
    pub empty_patches: Option<&'a BTreeSet<String>>,
    /// `--flaky-list`: tests left out of the transitions, by instance.
    pub flaky: Option<&'a crate::stability::FlakyList>,
}

/// The result of re-grading: the run report's entries (in the given order) and the reports to write.
#[derive(Debug, Clone, Default)]
pub struct Regraded {
    pub entries: Vec<RunReportEntry>,
    /// `(path of report.json, contents)` for every instance graded now.
    pub writes: Vec<(PathBuf, String)>,
    /// Things worth telling the user (unreadable existing reports that were re-graded, …).
    pub warnings: Vec<String>,
    /// The integrity checks of every instance whose outputs were read now (not of reports
    /// reused from earlier invocations).
    pub integrity: std::collections::BTreeMap<String, Integrity>,
}

/// Re-grades a run (the original's `make_run_report` loop): per instance, an existing
/// `report.json` is reused unless `rewrite`; otherwise the six outputs are read from the pred
/// dirs and the shared gold/base dirs keyed by directive hashes, and graded. An instance whose
/// pred_pre `model_patch.diff` or `test_output.txt` is missing is an error, as in the original.
pub fn regrade(tree: &dyn TreeReader, req: &RegradeRequest<'_>) -> Regraded {
    let run = RunTree::new(tree, req.logs_root, req.run_id, req.model_dir);
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
            .map(|i| regrade_one(&run, req, i))
            .collect()]
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = req
                .instances
                .chunks(chunk)
                .map(|part| {
                    let run = &run;
                    s.spawn(move || {
                        part.iter()
                            .map(|i| regrade_one(run, req, i))
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
    for (entry, write, warning, integrity) in results.into_iter().flatten() {
        if let Some(integrity) = integrity {
            out.integrity.insert(entry.instance_id.clone(), integrity);
        }
        out.entries.push(entry);
        out.writes.extend(write);
        out.warnings.extend(warning);
    }
    out
}

/// A failed read, as the run report words it.
fn read_error(e: RunTreeError) -> ErrorReason {
    match e {
        RunTreeError::Read { path, source } => {
            ErrorReason::Run(format!("cannot read {}: {source}", path.display()))
        }
    }
}

/// One instance's entry, the report to write (if graded now) and a warning.
/// The integrity checks' result travels with it when the outputs were read and checked.
type OneRegraded = (
    RunReportEntry,
    Option<(PathBuf, String)>,
    Option<String>,
    Option<Integrity>,
);

fn entry(id: &str, state: EntryState) -> RunReportEntry {
    RunReportEntry {
        instance_id: id.to_string(),
        state,
    }
}

fn failed(id: &str, reason: ErrorReason, warning: Option<String>) -> OneRegraded {
    (entry(id, EntryState::Error(reason)), None, warning, None)
}

/// Joins the notes about one instance into its one warning.
fn add_note(warning: &mut Option<String>, note: String) {
    *warning = Some(match warning.take() {
        Some(w) => format!("{w}; {note}"),
        None => note,
    });
}

fn regrade_one(run: &RunTree<'_>, req: &RegradeRequest<'_>, inst: &Instance) -> OneRegraded {
    let id = inst.instance_id.as_str();
    let pred_pre = run.pred_dir(RunKind::PredPre, id);
    let model_patch = match run.model_patch(id) {
        Ok(Some(p)) => p,
        Ok(None) => return not_run(run, req, id),
        Err(e) => return failed(id, read_error(e), None),
    };
    let pred_pre_output = match run.read(&pred_pre.join(TEST_OUTPUT_FILE)) {
        Ok(Some(o)) => o,
        Ok(None) => return failed(id, ErrorReason::MissingPredPreOutput, None),
        Err(e) => return failed(id, read_error(e), None),
    };
    let empty_patch = model_patch.trim().is_empty();
    let report_path = run.report_path(id);
    let mut warning = None;
    // Strict grading and another release's grading need the outputs: earlier reports are graded
    // again.
    if !req.rewrite && !req.options.strict_results && req.options.grading_version.is_default() {
        match run.read(&report_path) {
            Ok(Some(bytes)) => {
                match InstanceReport::from_report_json(&String::from_utf8_lossy(&bytes), Some(id)) {
                    Ok(report) => {
                        let state = EntryState::Graded {
                            report: Box::new(report),
                            reused: true,
                            empty_patch,
                        };
                        return (entry(id, state), None, None, None);
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
            Err(e) => return failed(id, read_error(e), None),
        }
    }
    let gold_hash = req
        .rules
        .directives_hash(&inst.repo, &inst.golden_test_patch);
    let base_hash = req.rules.directives_hash(&inst.repo, &model_patch);
    let runs = run.locate(
        id,
        &SharedHashes {
            gold: Some(&gold_hash),
            base: Some(&base_hash),
            default_mode: req.options.exec_mode,
        },
    );
    let mut outputs: [Option<Vec<u8>>; 6] = Default::default();
    outputs[0] = Some(pred_pre_output);
    for (i, dir) in runs.dirs.iter().enumerate().skip(1) {
        let Some(dir) = dir else { continue };
        match run.read(&dir.join(TEST_OUTPUT_FILE)) {
            Ok(o) => outputs[i] = o,
            Err(e) => return failed(id, read_error(e), warning),
        }
    }
    // Outputs `swtbench run` wrote are graded only as written: `run` checks them the same way.
    for (i, output) in outputs.iter().enumerate() {
        let dir = if i == 0 {
            Some(&pred_pre)
        } else {
            runs.dirs[i].as_ref()
        };
        if let (Some(dir), Some(output)) = (dir, output) {
            if let Some(why) = output_mismatch(run, dir, output) {
                let reason = format!(
                    "{}: {why}; it is not graded (`swtbench run` runs it again)",
                    RunKind::ALL[i].as_str()
                );
                return failed(id, ErrorReason::Run(reason), warning);
            }
        }
    }
    // The runners' evidence beside each output, where it was collected.
    let mut evidence: [EvidenceFiles; 6] = Default::default();
    for (i, slot) in evidence.iter_mut().enumerate() {
        let dir = if i == 0 {
            Some(&pred_pre)
        } else {
            runs.dirs[i].as_ref()
        };
        let Some(dir) = dir else { continue };
        for (file, name) in [
            (&mut slot.0, EVIDENCE_META_FILE),
            (&mut slot.1, EVIDENCE_FILE),
        ] {
            match run.read(&dir.join(name)) {
                Ok(o) => *file = o,
                Err(e) => return failed(id, read_error(e), warning),
            }
        }
    }
    for note in shared_variant_notes(run, req, id, &runs, &outputs) {
        add_note(&mut warning, note);
    }
    let missing: Vec<&str> = RunKind::ALL
        .iter()
        .zip(&outputs)
        .filter(|(_, o)| o.is_none())
        .map(|(k, _)| k.as_str())
        .collect();
    if !missing.is_empty() {
        add_note(
            &mut warning,
            format!(
                "{id}: no test_output.txt for {}; graded as runs without tests, as the original \
                 does",
                missing.join(", ")
            ),
        );
    }
    grade_outputs(
        req,
        inst,
        &model_patch,
        (outputs, evidence),
        empty_patch,
        report_path,
        warning,
    )
}

pub use crate::instance::EvidenceFiles;

/// Why the output in `dir` is not the one its key file was written with, if it is not: the
/// key file's `output_sha256` against the output's. No key file (the original's trees): nothing
/// to check.
fn output_mismatch(run: &RunTree<'_>, dir: &std::path::Path, output: &[u8]) -> Option<String> {
    let key = dir.join(KEY_FILE);
    let bytes = match run.read(&key) {
        Ok(Some(b)) => b,
        Ok(None) => return None,
        Err(_) => return Some(format!("{} cannot be read", key.display())),
    };
    let recorded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v["output_sha256"].as_str().map(str::to_string));
    match recorded {
        Some(sha) if sha == swtbench_core::hash::sha256_hex(output) => None,
        Some(_) => Some(format!(
            "{} does not match its key file {} (edited, or written by two processes at once)",
            dir.join(TEST_OUTPUT_FILE).display(),
            key.display()
        )),
        None => Some(format!("{} has no output_sha256", key.display())),
    }
}

/// What is worth saying about shared runs made by another kind of eval script than this run's:
/// another mode (a tree keyed by directives only, as the original's, where a run in the other
/// mode replaced them) or other coverage settings. Both are graded anyway.
fn shared_variant_notes(
    run: &RunTree<'_>,
    req: &RegradeRequest<'_>,
    id: &str,
    runs: &InstanceRuns,
    outputs: &[Option<Vec<u8>>; 6],
) -> Vec<String> {
    let reproduction = req.options.exec_mode == ExecMode::ReproductionScript;
    let mut other_mode: Vec<&str> = Vec::new();
    let mut other_coverage: Vec<&str> = Vec::new();
    for (i, kind) in RunKind::ALL.iter().enumerate() {
        let Some(dir) = &runs.dirs[i] else { continue };
        if !kind.is_shared() || outputs[i].is_none() {
            continue;
        }
        let Some(shared) = run.script_variant(dir) else {
            continue;
        };
        if shared.reproduction != reproduction {
            other_mode.push(kind.as_str());
        }
        if runs
            .script_variant
            .is_some_and(|p| (p.coverage, p.tracer_fixed) != (shared.coverage, shared.tracer_fixed))
        {
            other_coverage.push(kind.as_str());
        }
    }
    let mut notes = Vec::new();
    if !other_coverage.is_empty() {
        notes.push(format!(
            "{id}: {} ran with other coverage settings (tracer on/off or its mode) than \
             pred_pre; graded anyway",
            other_coverage.join(", ")
        ));
    }
    if !other_mode.is_empty() {
        let other = if reproduction {
            ExecMode::UnitTest
        } else {
            ExecMode::ReproductionScript
        };
        notes.push(format!(
            "{id}: {} ran in {} mode (a tree whose shared directories are keyed by test directives \
             only, as the original's are, where a run in the other mode replaced them); graded \
             anyway",
            other_mode.join(", "),
            other.as_str()
        ));
    }
    notes
}

/// Grades the six outputs read for `inst`.
fn grade_outputs(
    req: &RegradeRequest<'_>,
    inst: &Instance,
    model_patch: &str,
    (outputs, evidence): ([Option<Vec<u8>>; 6], [EvidenceFiles; 6]),
    empty_patch: bool,
    report_path: PathBuf,
    warning: Option<String>,
) -> OneRegraded {
    let id = inst.instance_id.as_str();
    let exts = req.rules.non_test_exts.of(&inst.repo);
    let inputs = InstanceInputs {
        instance: inst,
        model_patch,
        non_test_exts: &exts,
        flaky: req.flaky.and_then(|f| f.get(id)),
        parser: req.rules.parser(&inst.repo),
    };
    let mut source = OutputsInMemory { outputs, evidence };
    match grade_instance_outputs(&inputs, &req.options, &mut source) {
        Ok((report, integrity)) => {
            let text = report.to_report_json();
            let state = EntryState::Graded {
                report: Box::new(report),
                reused: false,
                empty_patch,
            };
            (
                entry(id, state),
                Some((report_path, text)),
                warning,
                Some(integrity),
            )
        }
        Err(InstanceGradeError::Output(never)) => match never {},
        Err(InstanceGradeError::Grade(GradeError::UnknownRepo { repo, .. })) => {
            failed(id, ErrorReason::UnknownRepo(repo), warning)
        }
        Err(InstanceGradeError::Grade(GradeError::GoldPatch { detail, .. })) => {
            failed(id, ErrorReason::GoldPatch(detail), warning)
        }
    }
}

/// An instance without a pred_pre `model_patch.diff`: nothing of it ran. An empty patch (known
/// from the predictions, or from the not-applied `report.json` `swtbench run` left) is graded as
/// not applied, as `run` does; anything else is an error, as in the original.
fn not_run(run: &RunTree<'_>, req: &RegradeRequest<'_>, id: &str) -> OneRegraded {
    let missing = || failed(id, ErrorReason::MissingModelPatch, None);
    if req.empty_patches.is_some_and(|empty| !empty.contains(id)) {
        return missing();
    }
    let report_path = run.report_path(id);
    let existing = match run.read(&report_path) {
        Ok(e) => e,
        Err(e) => return failed(id, read_error(e), None),
    };
    let existing = existing.and_then(|bytes| {
        InstanceReport::from_report_json(&String::from_utf8_lossy(&bytes), Some(id)).ok()
    });
    let graded = |report: InstanceReport, reused: bool| {
        entry(
            id,
            EntryState::Graded {
                report: Box::new(report),
                reused,
                empty_patch: true,
            },
        )
    };
    let known_empty = req.empty_patches.is_some();
    match existing {
        // The report `run` wrote for the empty patch (or an earlier grade's) is kept, as any
        // existing report is.
        Some(report) if !req.rewrite && (known_empty || report.is_not_applied()) => {
            (graded(report, true), None, None, None)
        }
        Some(report) if !known_empty && !report.is_not_applied() => missing(),
        None if !known_empty => missing(),
        _ => {
            let report = InstanceReport::empty_patch(id);
            let text = report.to_report_json();
            (graded(report, false), Some((report_path, text)), None, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parsers::Parser;
    use crate::tree::{MemoryTree, NonTestExts};
    use swtbench_core::layout::{InstanceRunKeys, EVAL_SCRIPT_FILE, MODEL_PATCH_FILE};
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
        let gold_hash = ReadRules::default().directives_hash(&inst.repo, GOLD_TESTS);
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
        rules: &'a ReadRules,
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
            flaky: None,
            threads: 1,
            rules,
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
        let rules = ReadRules {
            parsers: [("acme/widget".to_string(), Parser::Pytest)].into(),
            non_test_exts: NonTestExts {
                by_repo: [("acme/widget".to_string(), vec![".txt".to_string()])].into(),
                default: None,
            },
        };
        let base_hash = rules.directives_hash("acme/widget", MODEL_PATCH);
        assert_ne!(
            base_hash,
            ReadRules::default().directives_hash("acme/widget", MODEL_PATCH)
        );
        let tree = tree_with_runs(&root, &inst[0], &base_hash);

        // No rules: the original's map has no parser for the repository.
        let none = ReadRules::default();
        let r = regrade(&tree, &request(&root, &inst, &none, None, false));
        assert_eq!(
            state(&r),
            &EntryState::Error(ErrorReason::UnknownRepo("acme/widget".into()))
        );
        // A parser but the default extensions: the base runs are looked up under another
        // directive hash, where there is nothing.
        let parser_only = ReadRules {
            parsers: [("acme/widget".to_string(), Parser::Pytest)].into(),
            ..Default::default()
        };
        let r = regrade(&tree, &request(&root, &inst, &parser_only, None, false));
        let EntryState::Graded { report, .. } = state(&r) else {
            panic!("{:?}", state(&r));
        };
        assert_eq!(report.tests_base.as_ref().unwrap().total(), 0);
        // The table's rules: parser and extensions both apply, base runs are found.
        let table = rules;
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
        let hash = ReadRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let full = tree_with_runs(&root, &inst[0], &hash);
        let mut partial = MemoryTree::new();
        for (p, b) in full.iter() {
            if !p.starts_with("logs/base_post") && !p.starts_with("logs/gold_pre") {
                partial.insert(p, b);
            }
        }
        assert_eq!(partial.len(), full.len() - 2);
        let rules = ReadRules::default();
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
    fn an_output_that_does_not_match_its_key_file_is_not_graded() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("o__r-1", "pytest-dev/pytest")];
        let hash = ReadRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let mut t = tree_with_runs(&root, &inst[0], &hash);
        let rules = ReadRules::default();
        // Key files as `swtbench run` writes them, with the outputs' hashes: graded as before.
        let outputs: Vec<(std::path::PathBuf, Vec<u8>)> = t
            .iter()
            .filter(|(p, _)| p.ends_with(TEST_OUTPUT_FILE))
            .map(|(p, b)| (p.to_path_buf(), b.to_vec()))
            .collect();
        for (p, b) in &outputs {
            let sha = swtbench_core::hash::sha256_hex(b);
            t.insert(
                p.with_file_name(KEY_FILE),
                format!("{{\"output_sha256\": \"{sha}\"}}"),
            );
        }
        let r = regrade(&t, &request(&root, &inst, &rules, None, true));
        assert!(
            matches!(state(&r), EntryState::Graded { .. }),
            "{:?}",
            state(&r)
        );
        // gold_post overwritten with garbage: an error naming the run and the file.
        let gold_post = outputs
            .iter()
            .find(|(p, _)| p.starts_with("logs/gold_post"))
            .unwrap();
        t.insert(&gold_post.0, "PASSED tests/test_n.py::test_forged\n");
        let r = regrade(&t, &request(&root, &inst, &rules, None, true));
        let EntryState::Error(reason) = state(&r) else {
            panic!("{:?}", state(&r));
        };
        let text = reason.to_string();
        assert!(
            text.starts_with("gold_post: ") && text.contains("does not match its key file"),
            "{text}"
        );
    }

    #[test]
    fn shared_runs_of_the_other_mode_are_named() {
        let root = LogsRoot::new("logs");
        let inst = vec![instance("o__r-1", "pytest-dev/pytest")];
        let hash = ReadRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let mut tree = tree_with_runs(&root, &inst[0], &hash);
        let gold_hash = ReadRules::default().directives_hash("pytest-dev/pytest", GOLD_TESTS);
        let unit = "#!/bin/bash\nset -uxo pipefail\npytest -rA tests/test_m.py\ngit checkout abc\n";
        let repro = "#!/bin/bash\nset -uxo pipefail\npython3 /testbed/repro.py\necho $?\ngit checkout abc\n";
        let gold_pre = root.shared_run_dir(RunKind::GoldPre, "o__r-1", &gold_hash);
        let base_post = root.shared_run_dir(RunKind::BasePost, "o__r-1", &hash);
        tree.insert(gold_pre.join(EVAL_SCRIPT_FILE), repro);
        tree.insert(base_post.join(EVAL_SCRIPT_FILE), unit);
        let rules = ReadRules::default();
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
        let hash = ReadRules::default().directives_hash("pytest-dev/pytest", MODEL_PATCH);
        let gold_hash = ReadRules::default().directives_hash("pytest-dev/pytest", GOLD_TESTS);
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
        let rules = ReadRules::default();
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
        let rules = ReadRules::default();
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
}

//! Where the original harness puts every output (§4.8), as pure path computations.
//!
//! The runner writes into this layout, grading and the reports read from it, so existing trees
//! produced by the original (including published gold runs) stay readable and vice versa. This
//! module only joins paths: it never touches the file system.
//!
//! ```text
//! <logs root = run_instance_swt_logs>/
//!   <run_id>/pred_pre__<model>/<instance>/      test_output.txt, model_patch.diff, eval.sh, …
//!   <run_id>/pred_post__<model>/<instance>/
//!   <run_id>/<model>/<instance>/report.json
//!   gold_pre/<instance>/<sha256("__".join(gold test directives))>/
//!   gold_post/…   base_pre/<instance>/<sha256("__".join(model directives))>/   base_post/…
//! <output dir = evaluation_results>/<model>.<run_id>.json
//! ```
//!
//! `<model>` is the prediction's `model_name_or_path` with every `/` replaced by `__`
//! ([`model_dir_name`]). Run ids are used as given, like the original does (a run id named
//! `gold_pre` would collide with the shared directories).

use std::path::{Path, PathBuf};

use crate::directives::{directives_hash, test_directives, DEFAULT_NON_TEST_EXTS};
use crate::runs::RunKind;

/// Default name of the logs root, relative to the working directory (the original's).
pub const LOGS_ROOT_DIR: &str = "run_instance_swt_logs";
/// Default directory of run reports, relative to the working directory (the original's).
pub const EVALUATION_RESULTS_DIR: &str = "evaluation_results";
/// Default directory of image build logs (the original's).
pub const IMAGE_BUILD_LOGS_DIR: &str = "image_build_logs";

/// The combined stdout+stderr of one eval-script execution.
pub const TEST_OUTPUT_FILE: &str = "test_output.txt";

/// A run's content key and result next to its output (written by `swtbench run`; the original's
/// trees have none). It holds the SHA-256 of the `test_output.txt` written with it.
pub const KEY_FILE: &str = "swtbench_key.json";
/// The model patch as executed (also written, misleadingly, into the shared gold/base dirs).
pub const MODEL_PATCH_FILE: &str = "model_patch.diff";
/// Per-instance grading result.
pub const REPORT_FILE: &str = "report.json";
/// The eval script of one run.
pub const EVAL_SCRIPT_FILE: &str = "eval.sh";
/// The execution spec of one run.
pub const EXEC_SPEC_FILE: &str = "exec_spec.json";
/// Per-instance log of the harness itself.
pub const RUN_INSTANCE_LOG_FILE: &str = "run_instance.log";
/// Raw model output kept when a non-vanilla patch type is used.
pub const RAW_MODEL_PATCH_FILE: &str = "raw_model_patch.txt";
/// The patch extracted from the raw model output (non-vanilla patch types).
pub const EXTRACTED_PATCH_FILE: &str = "extracted_patch.diff";

/// Directory name of a model: `model_name_or_path` with `/` replaced by `__`.
pub use crate::prediction::model_dir_name;

/// File name of the run report: `<model>.<run_id>.json`.
pub fn evaluation_results_file_name(model_dir: &str, run_id: &str) -> String {
    format!("{model_dir}.{run_id}.json")
}

/// The run report's path under `output_dir` (the original's `evaluation_results`).
pub fn evaluation_results_path(output_dir: &Path, model_dir: &str, run_id: &str) -> PathBuf {
    output_dir.join(evaluation_results_file_name(model_dir, run_id))
}

/// Cache key of the shared gold runs: hash of the gold test patch's directives.
pub fn gold_directives_hash(repo: &str, golden_test_patch: &str) -> String {
    directives_hash(&test_directives(
        golden_test_patch,
        repo,
        DEFAULT_NON_TEST_EXTS,
    ))
}

/// Cache key of the shared base runs: hash of the (executed) model patch's directives.
pub fn base_directives_hash(repo: &str, model_patch: &str) -> String {
    directives_hash(&test_directives(model_patch, repo, DEFAULT_NON_TEST_EXTS))
}

/// Which kind of eval script produced a shared (gold/base) run, as far as it changes what the
/// output means.
///
/// The original keys the shared directories by test directives only, so a run in reproduction
/// mode, without coverage or with the fixed tracer replaces (or, in the original, reuses) the
/// default runs of the same instance. Here the default variant (unit tests under the tracer in its
/// original behaviour) keeps the original's directory name; every other variant gets a suffix:
/// `<directives hash>.<suffix>`, e.g. `….repro`, `….nocov`, `….repro-nocov`, `….tracefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SharedVariant {
    /// Reproduction-script mode instead of the repository's test runner.
    pub reproduction: bool,
    /// The tests run under the coverage tracer.
    pub coverage: bool,
    /// The tracer runs in its fixed mode (`SWTBENCH_TRACE_COMPAT=0`); only meaningful with coverage.
    pub tracer_fixed: bool,
}

impl Default for SharedVariant {
    fn default() -> Self {
        SharedVariant::DEFAULT
    }
}

/// The line an eval script holds when it runs the tracer in its fixed mode.
pub const TRACER_FIXED_LINE: &str = "export SWTBENCH_TRACE_COMPAT=0";

impl SharedVariant {
    /// Unit tests under the tracer in its original behaviour: the original's directory names.
    pub const DEFAULT: SharedVariant = SharedVariant {
        reproduction: false,
        coverage: true,
        tracer_fixed: false,
    };

    /// The directory-name suffix, `None` for [`SharedVariant::DEFAULT`].
    pub fn suffix(&self) -> Option<String> {
        let mut parts: Vec<&str> = Vec::new();
        if self.reproduction {
            parts.push("repro");
        }
        if !self.coverage {
            parts.push("nocov");
        } else if self.tracer_fixed {
            parts.push("tracefix");
        }
        (!parts.is_empty()).then(|| parts.join("-"))
    }

    /// The last component of a shared run directory: the directives hash, with the suffix.
    pub fn dir_key(&self, directives_hash: &str) -> String {
        match self.suffix() {
            None => directives_hash.to_string(),
            Some(s) => format!("{directives_hash}.{s}"),
        }
    }

    /// The variant an eval script (`eval.sh`) belongs to, read from the lines only that kind of
    /// script has: `echo $?` after the test command (reproduction mode), `cat coverage.cover`
    /// (coverage) and [`TRACER_FIXED_LINE`].
    pub fn of_eval_script(script: &str) -> SharedVariant {
        let mut v = SharedVariant {
            reproduction: false,
            coverage: false,
            tracer_fixed: false,
        };
        // Lines of here-documents (the patches) are data, whatever they say.
        let mut heredoc_end: Option<&str> = None;
        for line in script.lines() {
            let line = line.trim_end_matches('\r');
            if let Some(end) = heredoc_end {
                if line == end {
                    heredoc_end = None;
                }
                continue;
            }
            match line {
                "echo $?" => v.reproduction = true,
                "cat coverage.cover" => v.coverage = true,
                TRACER_FIXED_LINE => v.tracer_fixed = true,
                _ => heredoc_end = heredoc_delimiter(line),
            }
        }
        v
    }
}

/// What a reader finds under one directory key of a pair of shared runs (gold_pre and gold_post,
/// or base_pre and base_post).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedDirProbe {
    /// Either run of the pair has a `test_output.txt` there.
    pub has_output: bool,
    /// The variant of the `eval.sh` found there (`None`: no readable eval script).
    pub variant: Option<SharedVariant>,
}

impl SharedDirProbe {
    /// What the two run directories of a pair hold: whether either has a `test_output.txt`
    /// (`exists`), and the variant of the first `eval.sh` found (`read`: a file's text, `None`
    /// when it cannot be read).
    pub fn of_pair(
        dirs: &[PathBuf; 2],
        exists: impl Fn(&Path) -> bool,
        read: impl Fn(&Path) -> Option<String>,
    ) -> SharedDirProbe {
        SharedDirProbe {
            has_output: dirs.iter().any(|d| exists(&d.join(TEST_OUTPUT_FILE))),
            variant: dirs.iter().find_map(|d| {
                read(&d.join(EVAL_SCRIPT_FILE)).map(|s| SharedVariant::of_eval_script(&s))
            }),
        }
    }
}

impl SharedVariant {
    /// The directory key (last path component) for a pair of shared runs of this variant: its own
    /// [`SharedVariant::dir_key`] when any output is there; otherwise the plain directives hash
    /// (trees written by the original, or before variants had directories of their own) when that
    /// has outputs — with `same_variant_only`, only when their eval script is of this variant or
    /// unknown; otherwise its own key (the outputs are missing). Both runs of a pair always come
    /// from one directory. Readers that grade what is there (as the original does) pass `false`
    /// and say when the variant differs; the runner, which decides what to reuse, passes `true`.
    pub fn resolve_pair_key(
        &self,
        directives_hash: &str,
        same_variant_only: bool,
        probe: impl Fn(&str) -> SharedDirProbe,
    ) -> String {
        let own = self.dir_key(directives_hash);
        if own == directives_hash || probe(&own).has_output {
            return own;
        }
        let plain = probe(directives_hash);
        let variant_ok = !same_variant_only || plain.variant.is_none_or(|v| v == *self);
        if plain.has_output && variant_ok {
            directives_hash.to_string()
        } else {
            own
        }
    }
}

/// The delimiter of a here-document a line opens (`… <<'EOF'`, `<<EOF`, `<<-"EOF"` at its end).
fn heredoc_delimiter(line: &str) -> Option<&str> {
    let at = line.rfind("<<")?;
    let word = line[at + 2..].trim_start_matches('-').trim();
    let word = word
        .strip_prefix('\'')
        .and_then(|w| w.strip_suffix('\''))
        .or_else(|| word.strip_prefix('"').and_then(|w| w.strip_suffix('"')))
        .unwrap_or(word);
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.');
    plain.then_some(word)
}

/// A logs root (the original's `run_instance_swt_logs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogsRoot {
    root: PathBuf,
}

impl LogsRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        LogsRoot { root: root.into() }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `<root>/<run_id>/<model>`: the per-instance report dirs of one model in one run (the
    /// `PATH` argument of `report`).
    pub fn model_reports_dir(&self, run_id: &str, model_dir: &str) -> PathBuf {
        self.root.join(run_id).join(model_dir)
    }

    /// `<root>/<run_id>/<model>/<instance>`: holds `report.json` (and extraction files).
    pub fn instance_report_dir(&self, run_id: &str, model_dir: &str, instance_id: &str) -> PathBuf {
        self.model_reports_dir(run_id, model_dir).join(instance_id)
    }

    /// `<root>/<run_id>/<model>/<instance>/report.json`.
    pub fn report_path(&self, run_id: &str, model_dir: &str, instance_id: &str) -> PathBuf {
        self.instance_report_dir(run_id, model_dir, instance_id)
            .join(REPORT_FILE)
    }

    /// `<root>/<run_id>/<kind>__<model>/<instance>` for the two prediction runs.
    ///
    /// # Panics
    /// If `kind` is a shared run (use [`LogsRoot::shared_run_dir`]).
    pub fn pred_run_dir(
        &self,
        run_id: &str,
        model_dir: &str,
        kind: RunKind,
        instance_id: &str,
    ) -> PathBuf {
        self.pred_runs_dir(run_id, model_dir, kind)
            .join(instance_id)
    }

    /// `<root>/<run_id>/<kind>__<model>`: one prediction run of every instance of the model.
    ///
    /// # Panics
    /// If `kind` is a shared run (use [`LogsRoot::shared_run_dir`]).
    pub fn pred_runs_dir(&self, run_id: &str, model_dir: &str, kind: RunKind) -> PathBuf {
        assert!(!kind.is_shared(), "{kind} is a shared run");
        self.root.join(run_id).join(kind.patch_id(model_dir))
    }

    /// `<root>/<kind>/<instance>/<directives hash>` for the four shared (cached) runs.
    ///
    /// # Panics
    /// If `kind` is a prediction run (use [`LogsRoot::pred_run_dir`]).
    pub fn shared_run_dir(
        &self,
        kind: RunKind,
        instance_id: &str,
        directives_hash: &str,
    ) -> PathBuf {
        assert!(kind.is_shared(), "{kind} is not a shared run");
        self.root
            .join(kind.as_str())
            .join(instance_id)
            .join(directives_hash)
    }

    /// The six run directories of one instance, in [`RunKind::ALL`] order.
    pub fn instance_run_dirs(&self, keys: &InstanceRunKeys<'_>) -> [PathBuf; 6] {
        RunKind::ALL.map(|kind| self.run_dir(keys, kind))
    }

    /// One run directory of one instance.
    pub fn run_dir(&self, keys: &InstanceRunKeys<'_>, kind: RunKind) -> PathBuf {
        match kind {
            RunKind::PredPre | RunKind::PredPost => {
                self.pred_run_dir(keys.run_id, keys.model_dir, kind, keys.instance_id)
            }
            RunKind::GoldPre | RunKind::GoldPost => {
                self.shared_run_dir(kind, keys.instance_id, keys.gold_hash)
            }
            RunKind::BasePre | RunKind::BasePost => {
                self.shared_run_dir(kind, keys.instance_id, keys.base_hash)
            }
        }
    }

    /// The six `test_output.txt` paths of one instance, in [`RunKind::ALL`] order.
    pub fn instance_test_outputs(&self, keys: &InstanceRunKeys<'_>) -> [PathBuf; 6] {
        self.instance_run_dirs(keys)
            .map(|d| d.join(TEST_OUTPUT_FILE))
    }
}

/// Everything that names the six run directories of one instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstanceRunKeys<'a> {
    pub run_id: &'a str,
    /// [`model_dir_name`] of the prediction's model.
    pub model_dir: &'a str,
    pub instance_id: &'a str,
    /// [`gold_directives_hash`] of the instance.
    pub gold_hash: &'a str,
    /// [`base_directives_hash`] of the executed model patch.
    pub base_hash: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256_hex;

    #[test]
    fn paths_follow_the_original_layout() {
        let root = LogsRoot::new("run_instance_swt_logs");
        let model = model_dir_name("org/model-1");
        assert_eq!(model, "org__model-1");
        let keys = InstanceRunKeys {
            run_id: "r1",
            model_dir: &model,
            instance_id: "a__b-1",
            gold_hash: "g",
            base_hash: "b",
        };
        let dirs = root.instance_run_dirs(&keys);
        let s: Vec<String> = dirs.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(
            s,
            vec![
                "run_instance_swt_logs/r1/pred_pre__org__model-1/a__b-1",
                "run_instance_swt_logs/r1/pred_post__org__model-1/a__b-1",
                "run_instance_swt_logs/gold_pre/a__b-1/g",
                "run_instance_swt_logs/gold_post/a__b-1/g",
                "run_instance_swt_logs/base_pre/a__b-1/b",
                "run_instance_swt_logs/base_post/a__b-1/b",
            ]
        );
        assert_eq!(
            root.report_path("r1", &model, "a__b-1"),
            Path::new("run_instance_swt_logs/r1/org__model-1/a__b-1/report.json")
        );
        assert_eq!(
            root.instance_test_outputs(&keys)[3],
            Path::new("run_instance_swt_logs/gold_post/a__b-1/g/test_output.txt")
        );
        assert_eq!(
            evaluation_results_path(Path::new("evaluation_results"), &model, "r1"),
            Path::new("evaluation_results/org__model-1.r1.json")
        );
    }

    #[test]
    fn cache_keys_hash_the_joined_directives() {
        let gold = "diff --git a/tests/test_x.py b/tests/test_x.py\ndiff --git a/tests/test_y.py b/tests/test_y.py\n";
        assert_eq!(
            gold_directives_hash("pytest-dev/pytest", gold),
            sha256_hex("tests/test_x.py__tests/test_y.py")
        );
        // Django directives are dotted labels.
        assert_eq!(
            base_directives_hash(
                "django/django",
                "diff --git a/tests/a/tests.py b/tests/a/tests.py\n"
            ),
            sha256_hex("a.tests")
        );
        // No directives: hash of the empty string.
        assert_eq!(
            base_directives_hash("pytest-dev/pytest", "\n"),
            sha256_hex("")
        );
    }

    #[test]
    #[should_panic(expected = "is a shared run")]
    fn pred_dir_rejects_shared_kinds() {
        LogsRoot::new("x").pred_run_dir("r", "m", RunKind::GoldPre, "i");
    }
    #[test]
    fn shared_variants_keep_the_original_name_only_for_the_default() {
        assert_eq!(SharedVariant::DEFAULT.dir_key("abc"), "abc");
        let v = |reproduction, coverage, tracer_fixed| SharedVariant {
            reproduction,
            coverage,
            tracer_fixed,
        };
        assert_eq!(v(true, true, false).dir_key("abc"), "abc.repro");
        assert_eq!(v(false, false, false).dir_key("abc"), "abc.nocov");
        assert_eq!(v(true, false, true).dir_key("abc"), "abc.repro-nocov");
        assert_eq!(v(false, true, true).dir_key("abc"), "abc.tracefix");
        assert_eq!(v(true, true, true).dir_key("abc"), "abc.repro-tracefix");
    }

    #[test]
    fn variant_is_read_back_from_the_script_lines() {
        let unit = "#!/bin/bash\nset -uxo pipefail\npython3 /root/trace.py -m pytest a.py\ncat coverage.cover\n";
        assert_eq!(SharedVariant::of_eval_script(unit), SharedVariant::DEFAULT);
        let repro = "#!/bin/bash\nexport SWTBENCH_TRACE_COMPAT=0\npython3 /testbed/r.py\necho $?\ncat coverage.cover\n";
        let v = SharedVariant::of_eval_script(repro);
        assert!(v.reproduction && v.coverage && v.tracer_fixed);
        // The lines must be whole lines outside here-documents: a patch that holds them does not
        // count, the script's own lines after it do.
        let patch = "git apply -v - <<'EOF_1'\n+echo $? # not this\necho $?\ncat coverage.cover\nEOF_1\npytest\n";
        let v = SharedVariant::of_eval_script(patch);
        assert!(!v.reproduction && !v.coverage, "{v:?}");
        let after = format!("{patch}echo $?\n");
        assert!(SharedVariant::of_eval_script(&after).reproduction);
        assert_eq!(heredoc_delimiter("cat <<-\"END\""), Some("END"));
        assert_eq!(heredoc_delimiter("x <<EOF"), Some("EOF"));
        assert_eq!(heredoc_delimiter("echo a << b c"), None);
    }
    #[test]
    fn plain_directories_are_a_fallback_of_the_same_variant_or_for_lenient_readers() {
        let repro = SharedVariant {
            reproduction: true,
            ..SharedVariant::DEFAULT
        };
        let probe = |own_output: bool, plain_output: bool, plain_variant: Option<SharedVariant>| {
            move |key: &str| SharedDirProbe {
                has_output: if key == "h" { plain_output } else { own_output },
                variant: if key == "h" {
                    plain_variant
                } else {
                    Some(repro)
                },
            }
        };
        // The default variant is always the plain directory.
        assert_eq!(
            SharedVariant::DEFAULT.resolve_pair_key("h", true, probe(false, false, None)),
            "h"
        );
        assert_eq!(
            repro.resolve_pair_key("h", true, probe(true, true, Some(repro))),
            "h.repro"
        );
        assert_eq!(
            repro.resolve_pair_key("h", true, probe(false, true, Some(repro))),
            "h"
        );
        assert_eq!(
            repro.resolve_pair_key("h", true, probe(false, true, None)),
            "h"
        );
        // Plain outputs of another variant are not this run's, unless the reader takes what is there.
        let other = probe(false, true, Some(SharedVariant::DEFAULT));
        assert_eq!(repro.resolve_pair_key("h", true, other), "h.repro");
        assert_eq!(repro.resolve_pair_key("h", false, other), "h");
        assert_eq!(
            repro.resolve_pair_key("h", false, probe(false, false, None)),
            "h.repro"
        );
    }
}

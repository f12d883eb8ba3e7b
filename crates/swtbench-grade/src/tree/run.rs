//! The one reader of a model's run in a log tree: where each output of an instance lives.
//!
//! An instance's outputs are spread over the tree (§4.8): its report directory
//! `<run_id>/<model>/<id>/`, its two prediction runs `<run_id>/pred_{pre,post}__<model>/<id>/` and
//! four shared runs `{gold,base}_{pre,post}/<id>/<key>/`, whose key is the directive hash of the
//! gold tests or of the executed model patch, suffixed by the eval variant (mode, coverage, tracer
//! mode) the pred_pre `eval.sh` was written for, unless the variant's directory is missing and a
//! plain one (a tree of the original) is there. `grade` and the HTML page both find the outputs
//! here, so they always read the same directories. Reading only, through [`TreeReader`].

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use swtbench_core::layout::{
    LogsRoot, SharedDirProbe, SharedVariant, EVAL_SCRIPT_FILE, MODEL_PATCH_FILE, REPORT_FILE,
};
use swtbench_core::RunKind;

use super::TreeReader;
use crate::logs::ExecMode;

/// A read of the tree failed (other than the file being absent).
#[derive(Debug, thiserror::Error)]
pub enum RunTreeError {
    #[error("reading {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// One model's run in a log tree.
#[derive(Clone, Copy)]
pub struct RunTree<'a> {
    tree: &'a dyn TreeReader,
    root: &'a LogsRoot,
    run_id: &'a str,
    model_dir: &'a str,
}

impl std::fmt::Debug for RunTree<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTree")
            .field("root", &self.root)
            .field("run_id", &self.run_id)
            .field("model_dir", &self.model_dir)
            .finish_non_exhaustive()
    }
}

/// What names an instance's shared run directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedHashes<'a> {
    /// Directive hash of the gold test patch. `None` (the dataset is unknown): the one cached
    /// gold run of the instance's variant, if there is exactly one.
    pub gold: Option<&'a str>,
    /// Directive hash of the executed model patch; `None` (no model patch): no base runs.
    pub base: Option<&'a str>,
    /// The mode the runs are taken to be in when pred_pre has no readable `eval.sh`.
    pub default_mode: ExecMode,
}

/// Where an instance's six runs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceRuns {
    /// The variant of pred_pre's `eval.sh`, when it has a readable one.
    pub script_variant: Option<SharedVariant>,
    /// The runs' variant: the script's, else the default mode's with the default coverage.
    pub variant: SharedVariant,
    /// The mode the runs were made in: the script's, else the default.
    pub exec_mode: ExecMode,
    /// The last component of the gold pair's directory; `None` when it could not be decided.
    pub gold_key: Option<String>,
    /// The last component of the base pair's directory; `None` without a model patch.
    pub base_key: Option<String>,
    /// The six run directories in [`RunKind::ALL`] order (`None`: the pair's key is unknown).
    /// They need not exist.
    pub dirs: [Option<PathBuf>; 6],
    /// What the reader could not decide (several cached gold runs, …).
    pub notes: Vec<String>,
}

impl InstanceRuns {
    /// The directory of one run.
    pub fn dir(&self, kind: RunKind) -> Option<&Path> {
        let i = RunKind::ALL.iter().position(|k| *k == kind)?;
        self.dirs[i].as_deref()
    }
}

impl<'a> RunTree<'a> {
    pub fn new(
        tree: &'a dyn TreeReader,
        root: &'a LogsRoot,
        run_id: &'a str,
        model_dir: &'a str,
    ) -> Self {
        RunTree {
            tree,
            root,
            run_id,
            model_dir,
        }
    }

    pub fn tree(&self) -> &'a dyn TreeReader {
        self.tree
    }

    pub fn root(&self) -> &'a LogsRoot {
        self.root
    }

    pub fn run_id(&self) -> &'a str {
        self.run_id
    }

    pub fn model_dir(&self) -> &'a str {
        self.model_dir
    }

    /// `<root>/<run_id>/<model>`: the instances' report directories.
    pub fn reports_dir(&self) -> PathBuf {
        self.root.model_reports_dir(self.run_id, self.model_dir)
    }

    /// `<root>/<run_id>/<model>/<id>`: `report.json`, the runner's summary, extraction files.
    pub fn instance_dir(&self, id: &str) -> PathBuf {
        self.root
            .instance_report_dir(self.run_id, self.model_dir, id)
    }

    /// `<root>/<run_id>/<model>/<id>/report.json`.
    pub fn report_path(&self, id: &str) -> PathBuf {
        self.instance_dir(id).join(REPORT_FILE)
    }

    /// The directory of a prediction run (pred_pre or pred_post).
    ///
    /// # Panics
    /// If `kind` is a shared run.
    pub fn pred_dir(&self, kind: RunKind, id: &str) -> PathBuf {
        self.root
            .pred_run_dir(self.run_id, self.model_dir, kind, id)
    }

    /// The directory of a shared run under `key` (a directive hash, maybe with a variant suffix).
    ///
    /// # Panics
    /// If `kind` is a prediction run.
    pub fn shared_dir(&self, kind: RunKind, id: &str, key: &str) -> PathBuf {
        self.root.shared_run_dir(kind, id, key)
    }

    /// Ids with a pred_pre directory or a report directory in the run, sorted.
    pub fn instance_ids(&self) -> Result<BTreeSet<String>, RunTreeError> {
        let mut ids = BTreeSet::new();
        let pred_pre = self
            .root
            .pred_runs_dir(self.run_id, self.model_dir, RunKind::PredPre);
        for dir in [pred_pre, self.reports_dir()] {
            let names = self
                .tree
                .subdirs(&dir)
                .map_err(|source| RunTreeError::Read {
                    path: dir.clone(),
                    source,
                })?;
            ids.extend(names.into_iter().flatten());
        }
        Ok(ids)
    }

    /// A file's bytes; `Ok(None)` when it does not exist.
    pub fn read(&self, path: &Path) -> Result<Option<Vec<u8>>, RunTreeError> {
        self.tree.read(path).map_err(|source| RunTreeError::Read {
            path: path.to_path_buf(),
            source,
        })
    }

    /// A file's text (invalid UTF-8 replaced); `None` when it is absent or cannot be read.
    pub fn read_text(&self, path: &Path) -> Option<String> {
        match self.tree.read(path) {
            Ok(Some(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
            _ => None,
        }
    }

    /// The model patch as executed: pred_pre's `model_patch.diff`, with universal newlines.
    pub fn model_patch(&self, id: &str) -> Result<Option<String>, RunTreeError> {
        let path = self.pred_dir(RunKind::PredPre, id).join(MODEL_PATCH_FILE);
        Ok(self
            .read(&path)?
            .map(|b| crate::py::universal_newlines(&String::from_utf8_lossy(&b))))
    }

    /// The variant of the `eval.sh` in a run directory; `None` when it has none it can read.
    pub fn script_variant(&self, run_dir: &Path) -> Option<SharedVariant> {
        self.read_text(&run_dir.join(EVAL_SCRIPT_FILE))
            .map(|s| SharedVariant::of_eval_script(&s))
    }

    /// Where the six runs of `id` are. The shared runs of the run's eval variant (read from the
    /// pred_pre eval script) live in their own directories unless the variant is the default; a
    /// tree written by the original (or before variants existed) has only the plain directories,
    /// read when the variant's are absent. Both runs of a pair come from one directory.
    pub fn locate(&self, id: &str, hashes: &SharedHashes<'_>) -> InstanceRuns {
        let pred_pre = self.pred_dir(RunKind::PredPre, id);
        let script_variant = self.script_variant(&pred_pre);
        let exec_mode = match script_variant {
            Some(v) if v.reproduction => ExecMode::ReproductionScript,
            Some(_) => ExecMode::UnitTest,
            None => hashes.default_mode,
        };
        let variant = script_variant.unwrap_or(SharedVariant {
            reproduction: exec_mode == ExecMode::ReproductionScript,
            ..SharedVariant::DEFAULT
        });
        let mut notes = Vec::new();
        let gold_key = match hashes.gold {
            Some(hash) => {
                Some(self.pair_key(id, [RunKind::GoldPre, RunKind::GoldPost], hash, variant))
            }
            None => self.cached_gold_key(id, variant, &mut notes),
        };
        let base_key = hashes
            .base
            .map(|hash| self.pair_key(id, [RunKind::BasePre, RunKind::BasePost], hash, variant));
        let dirs = RunKind::ALL.map(|kind| match kind {
            RunKind::PredPre | RunKind::PredPost => Some(self.pred_dir(kind, id)),
            RunKind::GoldPre | RunKind::GoldPost => {
                gold_key.as_deref().map(|k| self.shared_dir(kind, id, k))
            }
            RunKind::BasePre | RunKind::BasePost => {
                base_key.as_deref().map(|k| self.shared_dir(kind, id, k))
            }
        });
        InstanceRuns {
            script_variant,
            variant,
            exec_mode,
            gold_key,
            base_key,
            dirs,
            notes,
        }
    }

    /// The directory key of a pair of shared runs, chosen among what is there as a lenient reader
    /// does (it grades what it finds and says when the variant differs).
    fn pair_key(&self, id: &str, pair: [RunKind; 2], hash: &str, variant: SharedVariant) -> String {
        variant.resolve_pair_key(hash, false, |key| {
            SharedDirProbe::of_pair(
                &pair.map(|kind| self.shared_dir(kind, id, key)),
                |p| self.tree.exists(p).unwrap_or(false),
                |p| self.read_text(p),
            )
        })
    }

    /// Without the gold test patch: the one gold run cached for `id` in the variant's directories
    /// (else in the plain ones); none, with a note, when there are several.
    fn cached_gold_key(
        &self,
        id: &str,
        variant: SharedVariant,
        notes: &mut Vec<String>,
    ) -> Option<String> {
        let dir = self.root.path().join(RunKind::GoldPre.as_str()).join(id);
        let all = self.tree.subdirs(&dir).ok().flatten().unwrap_or_default();
        let suffix = variant.suffix();
        let of_variant = |name: &String| match &suffix {
            None => !name.contains('.'),
            Some(s) => name.ends_with(&format!(".{s}")),
        };
        let mut cands: Vec<String> = all.iter().filter(|n| of_variant(n)).cloned().collect();
        if cands.is_empty() {
            cands = all.into_iter().filter(|n| !n.contains('.')).collect();
        }
        match cands.len() {
            0 => None,
            1 => cands.into_iter().next(),
            n => {
                notes.push(format!(
                    "{n} cached gold runs for this instance; pass the dataset to pick the right one"
                ));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::MemoryTree;
    use swtbench_core::layout::TEST_OUTPUT_FILE;

    const REPRO: &str = "#!/bin/bash\npython3 /testbed/repro.py\necho $?\ncat coverage.cover\n";

    #[test]
    fn prediction_and_shared_directories_of_the_runs_variant() {
        let root = LogsRoot::new("logs");
        let mut t = MemoryTree::new();
        let tree = RunTree::new(&t, &root, "r", "m");
        let hashes = SharedHashes {
            gold: Some("g"),
            base: Some("b"),
            default_mode: ExecMode::UnitTest,
        };
        // No eval script: the default mode's variant, whose directories are the plain ones.
        let runs = tree.locate("o__r-1", &hashes);
        assert_eq!(runs.script_variant, None);
        assert_eq!(runs.gold_key.as_deref(), Some("g"));
        assert_eq!(
            runs.dir(RunKind::PredPost),
            Some(Path::new("logs/r/pred_post__m/o__r-1"))
        );
        assert_eq!(
            runs.dir(RunKind::BasePre),
            Some(Path::new("logs/base_pre/o__r-1/b"))
        );
        // A reproduction-mode script: its variant's directories (absent here: still its own).
        t.insert("logs/r/pred_pre__m/o__r-1/eval.sh", REPRO);
        let tree = RunTree::new(&t, &root, "r", "m");
        let runs = tree.locate("o__r-1", &hashes);
        assert_eq!(runs.exec_mode, ExecMode::ReproductionScript);
        assert_eq!(runs.gold_key.as_deref(), Some("g.repro"));
        // … unless only a plain directory has outputs (a tree of the original).
        t.insert(
            Path::new("logs/gold_post/o__r-1/g").join(TEST_OUTPUT_FILE),
            "x",
        );
        let tree = RunTree::new(&t, &root, "r", "m");
        let runs = tree.locate("o__r-1", &hashes);
        assert_eq!(runs.gold_key.as_deref(), Some("g"));
        assert_eq!(runs.base_key.as_deref(), Some("b.repro"));
    }

    #[test]
    fn without_the_gold_hash_the_one_cached_gold_run_is_taken() {
        let root = LogsRoot::new("logs");
        let mut t = MemoryTree::new();
        t.insert("logs/gold_pre/o__r-1/h1/test_output.txt", "x");
        t.insert("logs/gold_pre/o__r-1/h2.repro/test_output.txt", "x");
        let hashes = SharedHashes {
            gold: None,
            base: None,
            default_mode: ExecMode::UnitTest,
        };
        let tree = RunTree::new(&t, &root, "r", "m");
        let runs = tree.locate("o__r-1", &hashes);
        assert_eq!(runs.gold_key.as_deref(), Some("h1"));
        assert_eq!(runs.dir(RunKind::BasePost), None);
        let repro = SharedHashes {
            default_mode: ExecMode::ReproductionScript,
            ..hashes
        };
        assert_eq!(
            tree.locate("o__r-1", &repro).gold_key.as_deref(),
            Some("h2.repro")
        );
        t.insert("logs/gold_pre/o__r-1/h3/test_output.txt", "x");
        let tree = RunTree::new(&t, &root, "r", "m");
        let runs = tree.locate("o__r-1", &hashes);
        assert_eq!(runs.gold_key, None);
        assert_eq!(
            runs.notes,
            vec!["2 cached gold runs for this instance; pass the dataset to pick the right one"]
        );
    }

    #[test]
    fn instance_ids_come_from_prediction_and_report_directories() {
        let root = LogsRoot::new("logs");
        let mut t = MemoryTree::new();
        t.insert("logs/r/pred_pre__m/a__a-1/test_output.txt", "x");
        t.insert("logs/r/m/b__b-2/report.json", "{}");
        t.insert("logs/r/pred_pre__other/c__c-3/test_output.txt", "x");
        let tree = RunTree::new(&t, &root, "r", "m");
        let ids: Vec<String> = tree.instance_ids().unwrap().into_iter().collect();
        assert_eq!(ids, vec!["a__a-1", "b__b-2"]);
    }
}

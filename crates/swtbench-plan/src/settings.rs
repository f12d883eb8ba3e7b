//! Resolved settings of one run: every choice the command line (or a caller) made, in plain data.
//! The binary turns its clap arguments into [`RunSettings`]; the planner and the executor read
//! only this. No I/O here.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use swtbench_core::engine::ResourceLimits;
use swtbench_core::layout::{EVALUATION_RESULTS_DIR, IMAGE_BUILD_LOGS_DIR, LOGS_ROOT_DIR};
use swtbench_patch::{ExtractOptions, PatchType};
use swtbench_spec::EvalOptions;

/// Which image layers survive the run (§3.6, with the semantics the original intended).
///
/// Layers *above* the level are removed once no instance of the run needs them any more: without
/// `--clean` only images this run built, with `--clean` also images that existed before. Layers at
/// or below the level are kept for later runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum CacheLevel {
    /// Keep nothing.
    None,
    /// Keep base images.
    Base,
    /// Keep base and env images (the original's default).
    #[default]
    Env,
    /// Keep every image.
    Instance,
}

impl CacheLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheLevel::None => "none",
            CacheLevel::Base => "base",
            CacheLevel::Env => "env",
            CacheLevel::Instance => "instance",
        }
    }

    /// Whether an image of `kind` is kept at this level.
    pub fn keeps(self, kind: ImageKind) -> bool {
        let rank = match kind {
            ImageKind::Base => CacheLevel::Base,
            ImageKind::Env => CacheLevel::Env,
            ImageKind::Instance => CacheLevel::Instance,
        };
        rank <= self
    }
}

impl FromStr for CacheLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(CacheLevel::None),
            "base" => Ok(CacheLevel::Base),
            "env" => Ok(CacheLevel::Env),
            "instance" => Ok(CacheLevel::Instance),
            other => Err(format!(
                "unknown cache level {other:?} (none, base, env or instance)"
            )),
        }
    }
}

/// The three image layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageKind {
    Base,
    Env,
    Instance,
}

impl ImageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ImageKind::Base => "base",
            ImageKind::Env => "env",
            ImageKind::Instance => "instance",
        }
    }
}

/// Where the three output trees go. The defaults are the original's names relative to the working
/// directory, so existing scripts find them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutputRoots {
    /// `run_instance_swt_logs`.
    pub logs: PathBuf,
    /// `image_build_logs`.
    pub build_logs: PathBuf,
    /// `evaluation_results`.
    pub results: PathBuf,
}

impl OutputRoots {
    /// The three trees under `base` with the original's names.
    pub fn under(base: &Path) -> OutputRoots {
        // `.` gives the original's bare relative names, not `./run_instance_swt_logs`.
        let base = if base == Path::new(".") || base.as_os_str().is_empty() {
            Path::new("")
        } else {
            base
        };
        OutputRoots {
            logs: base.join(LOGS_ROOT_DIR),
            build_logs: base.join(IMAGE_BUILD_LOGS_DIR),
            results: base.join(EVALUATION_RESULTS_DIR),
        }
    }
}

/// How each run's container is limited and its output kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecSettings {
    /// Wall-clock limit of one eval-script execution (the original's `--timeout`, 1800 s).
    pub timeout: Duration,
    /// Keep at most this many bytes of a run's output (head and tail); `None`: everything.
    pub max_output: Option<usize>,
    pub limits: ResourceLimits,
    /// How the limits were chosen (shown in the plan).
    pub limits_note: Option<String>,
    /// Give test containers the engine's default network, as the original always did (the
    /// default: some repositories' tests reach public services, and the dataset's verdicts were
    /// made with the network). Off (`--no-network`): an isolated network that drops every packet
    /// (the backend's `NetworkAccess::Isolated`).
    pub allow_network: bool,
    /// Collect the test runner's structured evidence next to each log (docs/integrity.md).
    pub evidence: bool,
    /// `--ca-in-tests`: the CA bundle test containers trust; part of every run's key.
    pub test_ca: Option<TestCa>,
}

/// A CA bundle put into every test container, with the variables that point tools at it.
#[derive(Clone, PartialEq, Eq)]
pub struct TestCa {
    /// SHA-256 (hex) of the bundle.
    pub sha256: String,
    pub bytes: std::sync::Arc<Vec<u8>>,
}

impl TestCa {
    pub fn new(bytes: Vec<u8>) -> TestCa {
        TestCa {
            sha256: swtbench_core::hash::sha256_hex(&bytes),
            bytes: std::sync::Arc::new(bytes),
        }
    }
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TestCa(sha256 {}, {} bytes)",
            self.sha256,
            self.bytes.len()
        )
    }
}

impl Default for ExecSettings {
    fn default() -> Self {
        ExecSettings {
            timeout: Duration::from_secs(1800),
            max_output: Some(DEFAULT_MAX_OUTPUT),
            limits: ResourceLimits::default(),
            limits_note: None,
            allow_network: true,
            evidence: true,
            test_ca: None,
        }
    }
}

/// Default cap of one run's captured output: 64 MiB.
pub const DEFAULT_MAX_OUTPUT: usize = 64 << 20;

/// How images are made.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ImageSettings {
    pub cache_level: CacheLevel,
    /// Also remove images above the cache level that existed before the run.
    pub clean: bool,
    /// Rebuild every image the run needs, once per run, without the layer cache.
    pub force_rebuild: bool,
    /// Builds at the same time (at least 1).
    pub build_workers: usize,
    /// Directory of bare mirrors `<owner>__<name>.git`: instance images clone from there.
    pub repo_mirror: Option<PathBuf>,
    /// Abandon an image build after this long.
    pub build_timeout: Option<Duration>,
    /// A registry used as a cache of swtbench's images (`--registry`).
    pub registry: Option<RegistrySettings>,
    /// Prebuilt instance images in SWE-bench's layout used instead of building
    /// (`--instance-image`, [`crate::prebuilt`]).
    pub prebuilt: Option<crate::prebuilt::PrebuiltSettings>,
    /// `--step-builds`: build env and instance images with the engine's Dockerfile builder, a
    /// layer per instruction, instead of committing one container
    /// (the backend's `commit_build`; the images hold the same files and settings).
    pub step_builds: bool,
}

/// `--registry REF [--push] [--pull-workers N]`: images missing locally are pulled from
/// `<prefix>/<key>` before they would be built; with `push`, the images the run ensures are
/// pushed there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistrySettings {
    /// `host[:port][/namespace]`.
    pub prefix: String,
    pub push: bool,
    /// Pulls at the same time (at least 1).
    pub pull_workers: usize,
    /// Credentials for the engine to present (from Docker's config); never printed.
    pub auth: Option<swtbench_core::engine::RegistryAuth>,
}

impl RegistrySettings {
    /// The registry reference of an image key.
    pub fn reference(&self, tag: &str) -> String {
        let tag = tag.strip_prefix("localhost/").unwrap_or(tag);
        format!("{}/{tag}", self.prefix.trim_end_matches('/'))
    }
}

/// Everything that decides what a run does.
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub run_id: String,
    pub outputs: OutputRoots,
    /// Eval-script options: mode, coverage, sympy compatibility, and whether the per-run install
    /// step is left out (`skip_install`, our default; see docs/deviations.md).
    pub eval: EvalOptions,
    pub exec: ExecSettings,
    pub images: ImageSettings,
    /// Test containers running at the same time (at least 1).
    pub max_workers: usize,
    /// The host memory the test containers' memory limits share: no more containers run at once
    /// than it holds at their limit (`None`: not known; only `max_workers` counts).
    pub memory_budget: Option<u64>,
    /// The original's `--patch_types`; `[vanilla]` means no extraction.
    pub patch_types: Vec<PatchType>,
    pub extract: ExtractOptions,
    /// Reuse run outputs that have no content key (written by the original harness) instead of
    /// running them again. Off by default: such outputs may come from another mode or spec.
    pub reuse_unkeyed: bool,
    /// Do not run anything: grade the outputs that are already there (the original's
    /// `--skip_eval`).
    pub skip_eval: bool,
    /// Look for what ended processes left (their containers, unfinished output files) at the
    /// start and at the end of the run. A long-running service turns it off for its jobs: it
    /// sweeps when it starts and after each job's verdict, off the verdict's path.
    pub sweep_leftovers: bool,
    /// `--shard K/N`: this process evaluates the K-th of N parts of the selected instances.
    pub shard: Option<Shard>,
    /// `--strict-results`: grade strictly where the integrity checks find forged results
    /// (`swtbench_grade::integrity::apply_strict`); off, the original's grade.
    pub strict_results: bool,
    /// `--grading-version`: the release of the original whose grading is reproduced (default:
    /// the current one).
    pub grading_version: swtbench_grade::GradingVersion,
    /// `--flaky-list`: tests left out of the transitions, by instance (empty: none).
    pub flaky: swtbench_grade::stability::FlakyList,
}

/// One of `count` parts of an evaluation (`--shard K/N`; `index` is K, from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A `--shard` value that is not `K/N` with 1 ≤ K ≤ N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--shard takes K/N with 1 <= K <= N (like 2/8), not {text:?}")]
pub struct ShardError {
    pub text: String,
}

impl Shard {
    /// Reads `K/N` with 1 ≤ K ≤ N.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError {
            text: text.to_string(),
        };
        let (k, n) = text.trim().split_once('/').ok_or_else(bad)?;
        let (index, count): (usize, usize) = (
            k.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// `shard-2-of-8`: how its files are told apart.
    pub fn file_tag(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl RunSettings {
    /// Settings with the defaults of `swtbench run` for `run_id`, outputs under `base`.
    pub fn new(run_id: impl Into<String>, base: &Path) -> RunSettings {
        RunSettings {
            run_id: run_id.into(),
            outputs: OutputRoots::under(base),
            eval: EvalOptions {
                skip_install: true,
                ..EvalOptions::default()
            },
            exec: ExecSettings::default(),
            images: ImageSettings {
                build_workers: 1,
                ..ImageSettings::default()
            },
            max_workers: 4,
            memory_budget: None,
            patch_types: vec![PatchType::Vanilla],
            extract: ExtractOptions::default(),
            reuse_unkeyed: false,
            skip_eval: false,
            sweep_leftovers: true,
            shard: None,
            strict_results: false,
            grading_version: Default::default(),
            flaky: Default::default(),
        }
    }

    /// The grading crate's exec mode for this run.
    pub fn grade_mode(&self) -> swtbench_grade::ExecMode {
        match self.eval.exec_mode {
            swtbench_spec::ExecMode::UnitTest => swtbench_grade::ExecMode::UnitTest,
            swtbench_spec::ExecMode::ReproductionScript(_) => {
                swtbench_grade::ExecMode::ReproductionScript
            }
        }
    }
}

/// The directory name of an image key in `image_build_logs` (`:` → `__`).
pub fn key_dir_name(key: &str) -> String {
    key.replace(':', "__")
}

/// Where an image's build files and log go.
pub fn build_log_dir(build_logs: &Path, kind: ImageKind, key: &str) -> PathBuf {
    let sub = match kind {
        // The original keeps env builds under `base/` too.
        ImageKind::Base | ImageKind::Env => "base",
        ImageKind::Instance => "instances",
    };
    build_logs.join(sub).join(key_dir_name(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_log_dirs_follow_the_original() {
        let root = Path::new("image_build_logs");
        assert_eq!(
            build_log_dir(root, ImageKind::Env, "exec.env.x86_64.abc:latest"),
            Path::new("image_build_logs/base/exec.env.x86_64.abc__latest")
        );
        assert_eq!(
            build_log_dir(root, ImageKind::Instance, "exec.eval.x86_64.a.b:latest"),
            Path::new("image_build_logs/instances/exec.eval.x86_64.a.b__latest")
        );
    }

    #[test]
    fn cache_levels_keep_layers_at_or_below() {
        assert!(!CacheLevel::None.keeps(ImageKind::Base));
        assert!(CacheLevel::Base.keeps(ImageKind::Base));
        assert!(!CacheLevel::Base.keeps(ImageKind::Env));
        assert!(CacheLevel::Env.keeps(ImageKind::Env));
        assert!(!CacheLevel::Env.keeps(ImageKind::Instance));
        assert!(CacheLevel::Instance.keeps(ImageKind::Instance));
        assert_eq!("env".parse::<CacheLevel>(), Ok(CacheLevel::Env));
        assert!("all".parse::<CacheLevel>().is_err());
    }

    #[test]
    fn defaults_follow_the_original_layout() {
        let s = RunSettings::new("r", Path::new("/tmp/x"));
        assert_eq!(s.outputs.logs, Path::new("/tmp/x/run_instance_swt_logs"));
        assert_eq!(s.exec.timeout, Duration::from_secs(1800));
        assert!(s.eval.skip_install && s.eval.coverage);
        assert_eq!(s.images.cache_level, CacheLevel::Env);
        assert_eq!(
            OutputRoots::under(Path::new(".")).logs,
            Path::new("run_instance_swt_logs")
        );
    }
}

//! The flag groups several commands flatten (the dataset, eval, spec-table, mirror, registry and
//! environment groups) and `run`'s `RunArgs`, with their conversions into the libraries' options.

use std::path::PathBuf;

use swtbench_app::env_vars;
use swtbench_app::envlock::EnvChoice;
use swtbench_app::settings::{parse_count, parse_cpus, parse_positive, parse_seconds, parse_size};
use swtbench_data::dataset::LoadOptions;
use swtbench_data::repo_files::RepoFiles;
use swtbench_data::SwtFilter;
use swtbench_extract::PatchType;
use swtbench_plan::CacheLevel;

pub use swtbench_app::settings::parse_bool;

/// The headings `run`'s help groups its flags under, in the order it prints them (after clap's
/// Options, which keeps the global --quiet and --help). The groups flattened by other commands set
/// these headings on their flags only where the heading is right for every command that has them.
pub mod heading {
    /// What is evaluated and where the results go.
    pub const INPUTS: &str = "Inputs";
    /// How the tests run: workers, timeouts, network, environments, sources.
    pub const EXECUTION: &str = "Execution";
    /// What the run prints and writes besides the results.
    pub const REPORTS: &str = "Reports and output";
    /// Shards, registries, prebuilt images.
    pub const CLUSTERS: &str = "Clusters and registries";
    /// Image builds and caching, container limits.
    pub const TUNING: &str = "Tuning";
    /// The original harness's switches, and the ones that trade its results for others.
    pub const PARITY: &str = "Parity with the original harness";
}

/// The flags every command takes.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// Print only warnings, errors and data.
    #[arg(long, short, global = true)]
    pub quiet: bool,

    /// Read flag values from this TOML file (default: ./swtbench.toml, else the [tool.swtbench]
    /// table of ./pyproject.toml; also SWTBENCH_CONFIG). The command line and environment
    /// variables win over the file; see docs/configuration.md.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Read no configuration file.
    #[arg(long, global = true, conflicts_with = "config")]
    pub no_config: bool,
}

/// Which dataset to evaluate, and which of its instances.
#[derive(Debug, Clone, clap::Args)]
pub struct DatasetArgs {
    /// Dataset: an alias (lite, verified, full, princeton-nlp/SWE-bench_Lite, …; see `swtbench
    /// datasets`), a local .json/.jsonl/.parquet file or a directory of them, or any Hugging Face
    /// dataset name.
    #[arg(
        long,
        alias = "dataset_name",
        value_name = "DATASET",
        default_value = "princeton-nlp/SWE-bench_Lite",
        help_heading = heading::INPUTS
    )]
    pub dataset: String,

    /// Dataset split.
    #[arg(long, value_name = "SPLIT", default_value = "test", help_heading = heading::INPUTS)]
    pub split: String,

    /// Drop the instances SWT-Bench excludes from SWE-bench (Lite keeps 276, Verified 433,
    /// Full 1983).
    #[arg(long, alias = "filter_swt", help_heading = heading::INPUTS)]
    pub filter_swt: bool,

    /// The SWT filter list for --filter-swt when the dataset is not an alias (default: inferred
    /// from its name, else from its instance ids).
    #[arg(long, alias = "swt_filter_list", value_name = "lite|verified|full",
          help_heading = heading::INPUTS)]
    pub swt_filter_list: Option<SwtFilter>,

    /// The dataset's `patch` is wrapped in <patch> tags (SWE-bench text/RAG datasets and the
    /// published SWT-Bench datasets, whose patch fields are swapped; both are detected).
    #[arg(
        long,
        alias = "is_swt",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value = "false",
        default_missing_value = "true",
        value_parser = parse_bool,
        help_heading = heading::PARITY,
    )]
    pub is_swt: bool,

    /// Never use the network: embedded dataset copies and the download cache only (also set by
    /// SWTBENCH_OFFLINE=1 or HF_HUB_OFFLINE=1).
    #[arg(long, help_heading = heading::INPUTS)]
    pub offline: bool,

    /// Only these instances (several values, or one comma-separated list). Each must be in the
    /// dataset.
    #[arg(long, alias = "instance_ids", value_name = "ID", num_args = 1.., help_heading = heading::INPUTS)]
    pub instance_ids: Vec<String>,
}

impl DatasetArgs {
    /// Whether the network is off limits (flag or environment).
    pub fn is_offline(&self) -> bool {
        self.offline || swtbench_app::inputs::offline_from_env()
    }

    pub fn options(&self) -> LoadOptions {
        LoadOptions {
            dataset: self.dataset.clone(),
            split: self.split.clone(),
            filter_swt: self.filter_swt,
            filter_list: self.swt_filter_list,
            is_swt: self.is_swt,
            offline: self.is_offline(),
            instance_ids: self.instance_ids.clone(),
        }
    }
}

/// How the extraction formats behave (`--patch-types` other than vanilla alone), shared by `run`
/// and `extract` (docs/extraction.md). In every parity style (the defaults) a failed attempt keeps
/// the edits it made, as the original does, and new-file diffs are read as the original reads
/// them.
#[derive(Debug, Clone, clap::Args)]
pub struct ExtractStyleArgs {
    /// Custom patch type: parity orders blocks by their line field as strings and re-emits each
    /// file with ast.unparse, as the original (comments and formatting are lost; a failed file
    /// keeps the files before it); preserve orders them as numbers, changes only the replaced
    /// definitions and the appended code, and a failure keeps nothing.
    #[arg(
        long,
        alias = "custom_patch_style",
        value_name = "STYLE",
        default_value = "parity",
        help_heading = heading::PARITY
    )]
    pub custom_patch_style: swtbench_extract::CustomStyle,

    /// Fuzzy patch type: parity keeps the original's placement (a change without following
    /// context truncates the file, the final newline is dropped, `--- /dev/null` sections are not
    /// sections, a failure keeps the files already edited); fixed does none of that and creates
    /// new files.
    #[arg(long, value_name = "STYLE", default_value = "parity", help_heading = heading::PARITY)]
    pub fuzzy_style: swtbench_extract::FuzzyStyle,

    /// Vanilla patch type among others: parity never applies minimal patches under 8192 bytes,
    /// as the original (its temporary file is not flushed), and ignores new-file diffs; fixed
    /// applies them and creates new files.
    #[arg(long, value_name = "STYLE", default_value = "parity", help_heading = heading::PARITY)]
    pub vanilla_style: swtbench_extract::VanillaStyle,
}

impl ExtractStyleArgs {
    pub fn options(&self) -> swtbench_extract::ExtractOptions {
        swtbench_extract::ExtractOptions {
            custom_style: self.custom_patch_style,
            fuzzy_style: self.fuzzy_style,
            vanilla_style: self.vanilla_style,
        }
    }
}

/// How the tests are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecModeArg {
    /// The repository's test runner on the test files the patch touches.
    #[value(name = "unit_test", alias = "unit-test")]
    UnitTest,
    /// `python3 /testbed/<script>`; its exit code is the result.
    #[value(name = "reproduction_script", alias = "reproduction-script")]
    ReproductionScript,
}

/// How the coverage tracer treats the programs it traces (`--tracer-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TracerMode {
    /// As the original tracer: score parity.
    Original,
    /// Traced programs behave as they would untraced (`SWTBENCH_TRACE_COMPAT=0`).
    Fixed,
}

/// How the eval scripts run the tests (shared by `spec` and `run`).
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Run the repository's tests on the patch's test files, or a reproduction script.
    #[arg(long, alias = "exec_mode", value_enum, default_value = "unit_test",
          help_heading = heading::PARITY)]
    pub exec_mode: ExecModeArg,

    /// The reproduction script the model patch creates, relative to the repository root
    /// (reproduction_script mode).
    #[arg(long, alias = "reproduction_script_name", value_name = "PATH",
          help_heading = heading::PARITY)]
    pub reproduction_script_name: Option<String>,

    /// Run the tests under the coverage tracer (the original's flag; default true).
    #[arg(long, alias = "compute_coverage", value_name = "BOOL", value_parser = parse_bool,
          num_args = 0..=1, default_missing_value = "true", help_heading = heading::PARITY)]
    pub compute_coverage: Option<bool>,

    /// Run the tests without the coverage tracer (same as --compute-coverage false).
    #[arg(long, conflicts_with = "compute_coverage")]
    pub no_coverage: bool,

    /// How the coverage tracer treats the programs it traces: `original` (the original tracer's
    /// behaviour, the default: score parity) or `fixed` (traced programs behave as they would
    /// untraced; exports SWTBENCH_TRACE_COMPAT=0 before the test command; see docs/tracer.md).
    /// Fixed-mode runs keep their own shared gold/base runs.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = TracerMode::Original,
          help_heading = heading::PARITY)]
    pub tracer_mode: TracerMode,

    /// Reproduce the original's sympy test command exactly, including its `str.strip` bug that
    /// cuts the last character of the last test file.
    #[arg(long, help_heading = heading::PARITY)]
    pub sympy_strip_bug: bool,
}

impl EvalArgs {
    /// The eval options these flags ask for (`skip_install` comes from the command's own flag).
    pub fn options(&self, skip_install: bool) -> swtbench_app::Result<swtbench_spec::EvalOptions> {
        let choice = swtbench_app::settings::EvalChoice {
            reproduction_script: (self.exec_mode == ExecModeArg::ReproductionScript)
                .then(|| self.reproduction_script_name.clone()),
            compute_coverage: self.compute_coverage,
            no_coverage: self.no_coverage,
            tracer_fixed: self.tracer_mode == TracerMode::Fixed,
            sympy_strip_bug: self.sympy_strip_bug,
        };
        choice.options(skip_install)
    }
}

/// `--spec-table` (with its snake_case alias) of `run`, `spec` and the `images` commands.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SpecTableArgs {
    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,
}

/// `--spec-table` of the `envs` commands (no snake_case alias).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EnvsSpecTableArgs {
    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table.
    #[arg(long, value_name = "FILE")]
    pub spec_table: Option<PathBuf>,
}

macro_rules! spec_table_load {
    ($($group:ty),*) => {$(
        impl $group {
            /// The embedded table with the file applied.
            pub fn load(&self) -> swtbench_app::Result<swtbench_spec::SpecTable> {
                swtbench_app::tables::load_spec_table(self.spec_table.as_deref())
            }
        }
    )*};
}
spec_table_load!(SpecTableArgs, EnvsSpecTableArgs);

/// `--repo-mirror` of `run`, `images build|check|push|pull`, `spec` and `extract`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct RepoMirrorArgs {
    /// Directory of bare git mirrors `<owner>__<name>.git`, read instead of GitHub: images clone
    /// from them; requirement files and base commits are read from them.
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: Option<PathBuf>,
}

impl RepoMirrorArgs {
    /// The source of requirement files (`swtbench_app::tables::repo_files_from_env`).
    pub fn files(&self, offline: bool) -> swtbench_app::Result<RepoFiles> {
        swtbench_app::tables::repo_files_from_env(self.repo_mirror.as_deref(), offline)
    }
}

/// `--registry REF [--push] [--pull-workers N]`: a registry as a cache of swtbench's images
/// (`run`, `images build`).
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    // `[/NAMESPACE]` is help text (clap prints it verbatim), not an intra-doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Registry (HOST[:PORT][/NAMESPACE]) holding swtbench's images: an image missing locally is
    /// pulled from REF/<image key> before it would be built. Credentials come from
    /// ~/.docker/config.json ($DOCKER_CONFIG).
    #[arg(long, value_name = "REF")]
    pub registry: Option<String>,

    /// Push the images to --registry after they are built (or found locally).
    #[arg(long, requires = "registry")]
    pub push: bool,

    /// Pulls at the same time.
    #[arg(long, value_name = "N", default_value_t = 4, allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<usize>)]
    pub pull_workers: usize,
}

impl RegistryArgs {
    /// The resolved registry settings, or `None` without `--registry`.
    pub fn settings(
        &self,
    ) -> swtbench_app::Result<Option<swtbench_plan::settings::RegistrySettings>> {
        match &self.registry {
            None => Ok(None),
            Some(r) => {
                swtbench_app::registry::registry_settings(r, self.push, self.pull_workers).map(Some)
            }
        }
    }
}

/// `--env-provider`, `--python-image`, `--env-lock`, `--no-env-lock` and `--build-files`, shared by `run`, `images build|check|push|pull`, `spec` and `envs show`:
/// every (repo, version) entry of the spec table moved to one environment provider.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EnvProviderArgs {
    /// Build every (repo, version) environment with this provider instead of the table's:
    /// conda, venv or uv (uv from PyPI on a Python image, with the instance's frozen SWE-bench
    /// pins; see docs/environments.md).
    #[arg(long, value_name = "conda|venv|uv", value_parser = swtbench_app::settings::parse_provider)]
    pub env_provider: Option<swtbench_spec::Provider>,

    /// The Python image uv environments build on, `{version}` standing for the entry's Python
    /// version (default python:{version}-slim-bookworm). `run` and `images build` pull a missing
    /// one (with the credentials of Docker's config file); without a registry, make them with
    /// `swtbench images python`.
    #[arg(long, value_name = "TEMPLATE")]
    pub python_image: Option<String>,

    /// Install the environments a lock file written by `swtbench envs lock` has entries for
    /// exactly as it says (its pins, --no-deps); they are part of those environments' image keys
    /// and so of every affected run's content key. Other environments are unchanged. Without it,
    /// uv environments use the lock compiled in (the environments of SWT-Bench Lite ∪ Verified
    /// that have no frozen pins, as the gold validation resolved them).
    #[arg(long, value_name = "FILE", conflicts_with = "no_env_lock")]
    pub env_lock: Option<std::path::PathBuf>,

    /// Leave out the lock compiled in: uv environments without frozen pins resolve their
    /// packages from the index as it is today.
    #[arg(long)]
    pub no_env_lock: bool,

    /// Directory of trees copied onto the checkouts of a repository before its install:
    /// DIR/<owner>__<name>/ goes onto /testbed (for builds that download sources this machine
    /// cannot reach, e.g. matplotlib's build/freetype-2.6.1; scripts/build-files makes them).
    /// Their digest is part of the instance keys.
    #[arg(long, value_name = "DIR")]
    pub build_files: Option<std::path::PathBuf>,

    /// Give the instance builds of each env image one shared compiler cache: env images get
    /// ccache from Debian (their keys change), and instance builds by commit compile through it,
    /// with the cache in a Docker volume per env image (at most 2 GB, mounted in build containers
    /// only, removed with its env image). The instance images hold the same files. See
    /// docs/scheduling.md for what it saves.
    #[arg(long)]
    pub compiler_cache: bool,
}

impl EnvProviderArgs {
    /// These flags as given.
    pub fn choice(&self) -> EnvChoice {
        EnvChoice {
            provider: self.env_provider,
            python_image: self.python_image.clone(),
            env_lock: self.env_lock.clone(),
            no_env_lock: self.no_env_lock,
            build_files: self.build_files.clone(),
            compiler_cache: self.compiler_cache,
        }
    }
}

/// `swtbench run`'s flags: what `run` evaluates and how. The cluster commands (`slurm submit`,
/// `k8s manifest`) flatten them too, and `verify --reexecute` parses them for its fresh run.
///
/// The help groups them under the [`heading`]s, which clap prints in the order their first flags
/// are declared: so the fields are declared heading by heading, and a flag lists in its heading's
/// place in declaration order. [`DatasetArgs`] comes last, because its `--is-swt` is a parity
/// switch; its other flags are listed first under Inputs all the same (display order 0 on, where
/// this struct's own flags start at 100).
#[derive(Debug, clap::Args)]
#[command(next_display_order = 100)]
pub struct RunArgs {
    /// Predictions to evaluate: `gold` (the gold tests of every instance), a .json or a .jsonl file
    /// of {instance_id, model_name_or_path, model_patch} records.
    #[arg(long, alias = "predictions_path", value_name = "gold|FILE",
          help_heading = heading::INPUTS)]
    pub predictions: String,

    /// Names the run: outputs go to run_instance_swt_logs/<run_id>/… and
    /// evaluation_results/<model>.<run_id>.json. Rerunning the same id resumes.
    #[arg(long, alias = "run_id", value_name = "RUN_ID", help_heading = heading::INPUTS)]
    pub run_id: String,

    /// Base directory of run_instance_swt_logs/, image_build_logs/ and evaluation_results/.
    #[arg(long, value_name = "DIR", default_value = ".", help_heading = heading::INPUTS)]
    pub output_dir: PathBuf,

    /// Test containers running at the same time. The runs of every instance share them, the
    /// longest expected first; no more run at once than the host's memory holds at the
    /// containers' memory limit.
    #[arg(long, alias = "max_workers", value_name = "N", default_value_t = 4, allow_negative_numbers = true,
          value_parser = parse_positive::<usize>, help_heading = heading::EXECUTION)]
    pub max_workers: usize,

    /// Seconds each eval script may run (six per instance); on timeout the output so far is
    /// kept and graded.
    #[arg(long, value_name = "SECONDS", default_value_t = 1800, allow_negative_numbers = true,
          value_parser = parse_seconds, help_heading = heading::EXECUTION)]
    pub timeout: u64,

    /// Isolate test containers: an internal network that drops every packet, so a connection
    /// times out instead of failing at once (no traffic leaves the machine or reaches another
    /// container). The run report and the HTML page say so; tests that need the internet fail.
    /// Also SWTBENCH_NO_NETWORK=1 (the test suite sets it, so that no fixture test reaches the
    /// internet).
    #[arg(
        long,
        alias = "no_network",
        env = env_vars::SWTBENCH_NO_NETWORK,
        value_parser = clap::builder::FalseyValueParser::new(),
        help_heading = heading::EXECUTION
    )]
    pub no_network: bool,

    /// Test containers get the engine's default network, as the original's always had: this is
    /// the default; given, it wins over --no-network and SWTBENCH_NO_NETWORK.
    #[arg(long, alias = "allow_network", help_heading = heading::EXECUTION)]
    pub allow_network: bool,

    #[command(flatten, next_help_heading = heading::EXECUTION)]
    pub mirror: RepoMirrorArgs,

    #[command(flatten, next_help_heading = heading::EXECUTION)]
    pub table: SpecTableArgs,

    #[command(flatten, next_help_heading = heading::EXECUTION)]
    pub env_provider: EnvProviderArgs,

    /// CA bundle passed into image builds (default: $SSL_CERT_FILE when it names a file).
    #[arg(long, value_name = "FILE", help_heading = heading::EXECUTION)]
    pub ca_bundle: Option<PathBuf>,

    /// Test containers trust that CA bundle too: it is copied into each one and SSL_CERT_FILE,
    /// PIP_CERT, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, GIT_SSL_CAINFO, NODE_EXTRA_CA_CERTS and
    /// CONDA_SSL_VERIFY point at it. For machines whose internet goes through a TLS-intercepting
    /// proxy, where tests that download (tox environments, installs in eval scripts) would
    /// otherwise fail where the original's succeed. Part of every run's key; the run report says so.
    #[arg(long, help_heading = heading::EXECUTION)]
    pub ca_in_tests: bool,

    /// Evaluate everything N times, each in fresh containers (nothing reused between repeats):
    /// the scores are the first repeat's; tests whose transition changes between repeats are
    /// flaky, listed per instance with how often each instance was resolved, in
    /// `<model>.<run id>.stability.json`, and as a flaky list (`--flaky-list` input) in
    /// `<model>.<run id>.flaky.json`. Repeats 2..N go to `<output dir>/repeats/<run id>/<k>/`.
    #[arg(long, value_name = "N", default_value_t = 1, allow_negative_numbers = true,
          value_parser = parse_positive::<usize>, conflicts_with_all = ["shard", "merge"],
          help_heading = heading::EXECUTION)]
    pub repeat: usize,

    /// Write events as JSON Lines to this file (format: docs/events.md).
    #[arg(long, value_name = "FILE", help_heading = heading::REPORTS)]
    pub events: Option<PathBuf>,

    /// Print the plan (what would be built, run, reused, skipped) and exit.
    #[arg(long, help_heading = heading::REPORTS)]
    pub dry_run: bool,

    /// With --dry-run: print the plan as JSON on stdout.
    #[arg(long, requires = "dry_run", help_heading = heading::REPORTS)]
    pub json: bool,

    /// Skip the HTML report.
    #[arg(long, help_heading = heading::REPORTS)]
    pub no_html: bool,

    /// The gold run (a run id of the gold predictions under the same output directory) whose
    /// coverage the Δ coverage rows of the table and HTML page are relative to. Default: the
    /// benchmark's published gold run when it is there, else the gold run with reports for the
    /// most of this run's instances (named on stderr).
    #[arg(long, alias = "gold_run_id", value_name = "RUN_ID", help_heading = heading::REPORTS)]
    pub gold_run_id: Option<String>,

    /// Run nothing; grade the outputs already on disk and write the reports. An instance whose
    /// outputs are not all there is an error (exit code 1).
    #[arg(long, alias = "skip_eval", value_name = "BOOL", value_parser = parse_bool,
          num_args = 0..=1, default_value = "false", default_missing_value = "true",
          help_heading = heading::REPORTS)]
    pub skip_eval: bool,

    /// Do not collect the test runner's own results and the tracer's coverage beside each log
    /// (the evidence the integrity checks compare the log with; docs/integrity.md).
    #[arg(long, help_heading = heading::REPORTS)]
    pub no_evidence: bool,

    /// Evaluate the K-th of N parts of the selected instances (like 2/8): parts of about equal
    /// expected work, the same on every machine (the first shard to start records the split in
    /// the output directory; the others follow it). Shards share the output directory and run
    /// side by side; each writes `<model>.<run id>.shard-K-of-N.json`. An env image's instances
    /// stay in one part when it has to be built. Once all are done, --merge writes the reports
    /// over the whole run.
    #[arg(long, value_name = "K/N", value_parser = swtbench_plan::settings::Shard::parse,
          help_heading = heading::CLUSTERS)]
    pub shard: Option<swtbench_plan::settings::Shard>,

    /// Once every shard of the run finished: write the run report, the HTML page and the table
    /// over all of them from their outputs, running nothing (the same flags as the shards,
    /// without --shard). The reports are the ones a single process evaluating everything writes;
    /// shards or instances that are missing are named and nothing is written.
    #[arg(long, conflicts_with_all = ["shard", "skip_eval"], help_heading = heading::CLUSTERS)]
    pub merge: bool,

    #[command(flatten, next_help_heading = heading::CLUSTERS)]
    pub registry: RegistryArgs,

    /// Run on prebuilt instance images in SWE-bench's layout instead of building: a name with
    /// {id} (the instance id) or {id_1776} (with __ spelled _1776_, as SWE-bench's Docker Hub
    /// images are named), lower-cased; or `dataset` for the image each dataset row names
    /// (image_name, docker_image or instance_image). Missing images are pulled (credentials
    /// from ~/.docker/config.json); each image's layout is checked before its first run. See
    /// docs/registry.md.
    #[arg(long, value_name = "TEMPLATE|dataset", help_heading = heading::CLUSTERS)]
    pub instance_image: Option<String>,

    /// Image builds at the same time.
    #[arg(long, alias = "build_workers", value_name = "N", default_value_t = 2, allow_negative_numbers = true,
          value_parser = parse_positive::<usize>, help_heading = heading::TUNING)]
    pub build_workers: usize,

    /// Abandon an image build after this many seconds (default: no limit).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true, value_parser = parse_seconds,
          help_heading = heading::TUNING)]
    pub build_timeout: Option<u64>,

    /// Image layers kept after the run: none, base, env (default) or instance.
    #[arg(
        long,
        alias = "cache_level",
        value_name = "LEVEL",
        default_value = "env",
        help_heading = heading::TUNING
    )]
    pub cache_level: CacheLevel,

    /// Also remove images above the cache level that existed before the run.
    #[arg(long, value_name = "BOOL", value_parser = parse_bool, num_args = 0..=1,
          default_value = "false", default_missing_value = "true", help_heading = heading::TUNING)]
    pub clean: bool,

    /// Rebuild every image the run needs (once per run, without the layer cache).
    #[arg(long, alias = "force_rebuild", value_name = "BOOL", value_parser = parse_bool,
          num_args = 0..=1, default_value = "false", default_missing_value = "true",
          help_heading = heading::TUNING)]
    pub force_rebuild: bool,

    /// Raise the soft limit of open files to this (never the hard limit).
    #[arg(long, alias = "open_file_limit", value_name = "N", default_value_t = 4096,
          allow_negative_numbers = true, value_parser = parse_count::<u64>,
          help_heading = heading::TUNING)]
    pub open_file_limit: u64,

    /// Memory limit of each test container, swap included (e.g. 4g, 512m). Default: 3/4 of the
    /// engine host's memory over --max-workers, 2g to 16g.
    #[arg(long, value_name = "SIZE", value_parser = swtbench_app::settings::parse_memory,
          help_heading = heading::TUNING)]
    pub memory: Option<u64>,

    /// CPUs of each test container (e.g. 1.5).
    #[arg(long, value_name = "CPUS", allow_negative_numbers = true, value_parser = parse_cpus,
          help_heading = heading::TUNING)]
    pub cpus: Option<f64>,

    /// Process limit of each test container. Default: 256 per host CPU, 1024 to 16384.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = parse_count::<u32>,
          help_heading = heading::TUNING)]
    pub pids_limit: Option<u32>,

    /// What each test container may write in all (e.g. 2g). Default: a quarter of the size of
    /// the engine's disk over --max-workers, 1g to 10g.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = heading::TUNING)]
    pub disk_limit: Option<u64>,

    /// Largest file a test may write (e.g. 512m). Default: 1g.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = heading::TUNING)]
    pub file_limit: Option<u64>,

    /// Keep at most this much of a run's output, head and tail (e.g. 64m; 0 keeps everything).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, help_heading = heading::TUNING)]
    pub max_output: Option<u64>,

    /// No resource limits but those given explicitly (the original's containers).
    #[arg(long, help_heading = heading::TUNING)]
    pub no_limits: bool,

    // Its flags are parity switches but --no-coverage (no heading of its own), the quick way to
    // run without the tracer, e.g. while iterating: an Execution flag.
    #[command(flatten, next_help_heading = heading::EXECUTION)]
    pub eval: EvalArgs,

    /// How raw model output becomes a diff, tried in order: vanilla (the default: the prediction
    /// is a diff), fuzzy, custom.
    #[arg(long, alias = "patch_types", value_name = "TYPE", num_args = 1.., default_value = "vanilla",
          help_heading = heading::PARITY)]
    pub patch_types: Vec<PatchType>,

    #[command(flatten)]
    pub styles: ExtractStyleArgs,

    /// Grade as this release of the original harness does: `1.3` (the default: its current
    /// grading) or `1.2` (release 1.2.0, which graded the results published before September
    /// 2025). 1.2 differs in two places: sympy's result lines need no whitespace after the status
    /// word, so on sympy 1.0/1.1 a failure header of 80 characters or more followed by the
    /// traceback's `  File` line is read as a failed test of its own; and a test that goes from
    /// failed to absent or neither passed nor failed (F→X, X→X) counts as FAIL_TO_FAIL instead of
    /// UNMATCHED, which can leave the instance unresolved. See docs/deviations.md.
    /// report.json and the run report then differ from the original's current ones (the run
    /// report says so).
    #[arg(long, value_name = "VERSION", default_value = "1.3", help_heading = heading::PARITY)]
    pub grading_version: swtbench_grade::GradingVersion,

    /// Grade strictly where the logs look forged (docs/integrity.md): a test an integrity check
    /// names (a result printed after the runner's summary, for a test the run did not select, …)
    /// counts as failed, and a suspicious instance as unresolved. report.json and the run report
    /// then differ from the original's; without it the grade is the original's, and the checks
    /// only report (`integrity` in swtbench_instance.json, `suspicious_ids` in the run report).
    #[arg(long, help_heading = heading::PARITY)]
    pub strict_results: bool,

    /// Leave the tests of this flaky list (`{"<instance>": ["<test>", …]}`: what a gold run with
    /// --repeat writes in `<model>.<run id>.flaky.json`) out of the transitions. report.json and
    /// the run report then differ from the original's (the run report says so).
    #[arg(long, value_name = "FILE", help_heading = heading::PARITY)]
    pub flaky_list: Option<PathBuf>,

    /// Run the spec's install command again in every eval script, as the original does (by
    /// default the install done in the instance image is used; see docs/deviations.md).
    #[arg(long, help_heading = heading::PARITY)]
    pub eval_install: bool,

    /// Build env and instance images with the engine's Dockerfile builder, a layer per
    /// instruction, as the original does. By default each is one container of its parent image,
    /// committed once: the same files and settings, in less time and less disk (a repository
    /// mirror copied in stays in no layer).
    #[arg(long, help_heading = heading::PARITY)]
    pub step_builds: bool,

    /// Accepted for compatibility and ignored: images are always built through the engine's API.
    #[arg(long, alias = "build_mode", value_name = "cli|api", help_heading = heading::PARITY)]
    pub build_mode: Option<String>,

    /// Reuse run outputs that have no content key (written by the original harness) instead of
    /// running them again.
    #[arg(long, help_heading = heading::PARITY)]
    pub reuse_unkeyed_outputs: bool,

    // Its flags have their headings; `None` ends the heading the groups above set, so that the own
    // flags of the commands flattening RunArgs (`slurm submit`, `k8s manifest`) stay under Options.
    #[command(flatten, next_display_order = 0, next_help_heading = None::<&str>)]
    pub dataset: DatasetArgs,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct T {
        #[command(flatten)]
        d: DatasetArgs,
    }

    #[test]
    fn snake_case_aliases_and_str2bool() {
        let t = T::try_parse_from([
            "t",
            "--dataset_name",
            "lite",
            "--filter_swt",
            "--is_swt",
            "False",
            "--instance_ids",
            "a",
            "b,c",
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.d.dataset, "lite");
        assert!(t.d.filter_swt);
        assert!(!t.d.is_swt);
        assert_eq!(
            swtbench_data::dataset::split_instance_ids(&t.d.instance_ids),
            vec!["a", "b", "c"]
        );
        let t = T::try_parse_from(["t", "--is-swt", "--offline"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(t.d.is_swt && t.d.offline);
        assert_eq!(t.d.dataset, "princeton-nlp/SWE-bench_Lite");
        assert_eq!(t.d.split, "test");
        let t = T::try_parse_from(["t", "--swt-filter-list", "Verified"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.d.swt_filter_list, Some(SwtFilter::Verified));
        assert!(T::try_parse_from(["t", "--is_swt", "maybe"]).is_err());
    }
}

//! `swtbench dataset retrieve|build|swt`'s flags, and the settings of [`swtbench_app::dataset`]
//! they give.

use std::path::PathBuf;

use swtbench_app::dataset::FilterChoice;
use swtbench_app::dataset::{self as app, BuildSettings, RetrieveSettings, SwtSettings};
use swtbench_app::env_vars;
use swtbench_app::settings::{parse_count, parse_positive};
use swtbench_textgen::swt::SwtMode;

use crate::args::DatasetArgs;

#[derive(Debug, clap::Args)]
pub struct DatasetCmdArgs {
    #[command(subcommand)]
    pub command: DatasetCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum DatasetCommand {
    /// Rank each instance's Python files against its issue with BM25 (Lucene's parameters and
    /// English analyzer) and write SWE-bench retrieval JSON Lines.
    Retrieve(RetrieveArgs),
    /// Render SWE-bench style-3 text rows: issue, READMEs and the best-ranked files that fit under
    /// a cl100k token cap, with line numbers.
    Build(BuildArgs),
    /// Turn SWE-bench text rows into SWT-Bench ZeroShotBase (unified diff) or ZeroShotPlus
    /// (custom diff) rows, with the gold patches swapped as in the published SWT datasets.
    Swt(SwtArgs),
}

/// Where the repositories are.
#[derive(Debug, Clone, clap::Args)]
pub struct MirrorArgs {
    /// Directory of bare git mirrors named `<owner>__<name>.git` (make one with
    /// `git clone --mirror https://github.com/<owner>/<name> DIR/<owner>__<name>.git`).
    #[arg(long, alias = "repo_mirror", value_name = "DIR", env = env_vars::SWTBENCH_REPO_MIRROR)]
    pub repo_mirror: PathBuf,
}

/// Parallelism.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkerArgs {
    /// Instances processed at the same time (default: the number of CPUs).
    #[arg(long, alias = "max_workers", value_name = "N", allow_negative_numbers = true,
          value_parser = parse_positive::<usize>)]
    pub max_workers: Option<usize>,
}

#[derive(Debug, clap::Args)]
pub struct RetrieveArgs {
    #[command(flatten)]
    pub data: DatasetArgs,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Index test files too (SWT-Bench's datasets were built this way; SWE-bench's default leaves
    /// out paths with the word test, tests or testing).
    #[arg(long, alias = "include_tests")]
    pub include_tests: bool,
    /// Hits kept per instance.
    #[arg(long, alias = "top_k", default_value_t = swtbench_textgen::retrieve::DEFAULT_TOP_K,
          allow_negative_numbers = true, value_parser = parse_count::<usize>)]
    pub top_k: usize,
    /// Skip Python files that are not valid UTF-8 instead of failing the instance (the original
    /// gives such an instance no hits at all).
    #[arg(long)]
    pub skip_undecodable: bool,
    /// Output file (JSON Lines), appended to and resumed.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub workers: WorkerArgs,
}

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub data: DatasetArgs,
    /// The retrieval file written by `swtbench dataset retrieve` (or SWE-bench's
    /// `bm25_retrieval.py`).
    #[arg(long, alias = "retrieval_file", value_name = "FILE")]
    pub hits: PathBuf,
    #[command(flatten)]
    pub mirror: MirrorArgs,
    /// Prompt style; only style 3 (what the SWT datasets were built from) is supported.
    #[arg(long, alias = "prompt_style", default_value = "3", value_parser = app::parse_style)]
    pub style: u8,
    /// Token cap for the prompt (cl100k_base); 0 includes every retrieved file.
    #[arg(long, alias = "max_context_len", default_value_t = 27_000, allow_negative_numbers = true,
          value_parser = parse_count::<usize>)]
    pub max_tokens: usize,
    /// Keep only the first K hits as candidates (default: all of them).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_count::<usize>)]
    pub k: Option<usize>,
    /// A style-3 template replacing ours: text with the placeholders {{problem_statement}},
    /// {{readmes}} and {{code}}, each once.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Output file: JSON Lines, or parquet when it ends in `.parquet`.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    #[command(flatten)]
    pub workers: WorkerArgs,
}

#[derive(Debug, clap::Args)]
pub struct SwtArgs {
    /// SWE-bench text rows (.jsonl, .json or .parquet), e.g. from `swtbench dataset build`.
    #[arg(long, alias = "dataset_path", value_name = "FILE")]
    pub input: PathBuf,
    /// zsb (ZeroShotBase: answer as a unified diff) or zsp (ZeroShotPlus: the custom diff format
    /// of `--patch-types custom`); `base` and `plus` are accepted too.
    #[arg(long, value_parser = app::parse_mode, default_value = "zsp")]
    pub mode: SwtMode,
    /// Remove the instances SWT-Bench excludes: `auto` uses the list of the benchmark the rows
    /// belong to (Lite, Verified, else Full), or name it; `none` keeps every row.
    #[arg(
        long,
        alias = "filter_cases",
        alias = "swt-filter-list",
        value_name = "auto|lite|verified|full|none",
        default_value = "auto",
        value_parser = app::parse_filter_choice
    )]
    pub filter_swt: FilterChoice,
    /// A template replacing our prompt for the mode: text with one {{body}} placeholder, which
    /// receives the issue and code section (`<issue>` … `</code>`); the text before it replaces
    /// the first line, the text after it is the instructions.
    #[arg(long, value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Only these instances (several values, or one comma-separated list).
    #[arg(long, alias = "instance_ids", value_name = "ID", num_args = 1..)]
    pub instance_ids: Vec<String>,
    /// Output file: JSON Lines, or parquet when it ends in `.parquet`.
    #[arg(long, alias = "output_path", value_name = "FILE")]
    pub out: PathBuf,
}

impl RetrieveArgs {
    pub fn settings(&self) -> RetrieveSettings {
        RetrieveSettings {
            mirror_dir: self.mirror.repo_mirror.clone(),
            include_tests: self.include_tests,
            top_k: self.top_k,
            skip_undecodable: self.skip_undecodable,
            out: self.out.clone(),
            max_workers: self.workers.max_workers,
        }
    }
}

impl BuildArgs {
    pub fn settings(&self) -> BuildSettings {
        BuildSettings {
            hits: self.hits.clone(),
            mirror_dir: self.mirror.repo_mirror.clone(),
            max_tokens: self.max_tokens,
            k: self.k,
            template: self.template.clone(),
            out: self.out.clone(),
            max_workers: self.workers.max_workers,
        }
    }
}

impl SwtArgs {
    pub fn settings(&self) -> SwtSettings {
        SwtSettings {
            input: self.input.clone(),
            mode: self.mode,
            template: self.template.clone(),
            instance_ids: self.instance_ids.clone(),
            out: self.out.clone(),
        }
    }
}

//! `swtbench report`'s flags, and the [`ReportRequest`] they give.

use std::path::PathBuf;

use swtbench_app::report::{ReportFormat, ReportRequest};

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The model's report directory: `<logs root>/<run_id>/<model>` (e.g.
    /// `run_instance_swt_logs/my-run/gpt-4o`).
    #[arg(value_name = "PATH", required_unless_present = "compare")]
    pub path: Option<PathBuf>,

    /// Which benchmark the run is on. lite, verified or full (or any alias of them) select the
    /// denominator (276 / 433 / 1983) and the default gold run. Any other dataset (a local
    /// .json/.jsonl/.parquet file or a directory of them, or a Hugging Face dataset name) is
    /// read: its number of instances is the denominator (instances in the SWT filter lists are
    /// not counted), the page names it and takes its instances' gold fixes and gold runs from it,
    /// and its gold run is found under the logs root (see --gold-run-id). Default: the denominator
    /// is the run's own number of instances, from its run report
    /// (evaluation_results/<model>.<run_id>.json beside the logs root; lite's 276, with a warning,
    /// when there is none), and the gold run is lite's.
    #[arg(long, alias = "dataset_name", value_name = "DATASET")]
    pub dataset: Option<String>,

    /// The split of a dataset that is read (see --dataset).
    #[arg(long, value_name = "SPLIT", default_value = "test")]
    pub split: String,

    /// Divide by this many instances instead of the dataset's count (subsets of a dataset).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_positive::<u64>)]
    pub denominator: Option<u64>,

    /// Output format: github (Markdown table, the default), latex, json, csv, or html (a
    /// self-contained page with the summary, every instance and its logs; see --out). --compare
    /// writes html only.
    #[arg(long, value_name = "FORMAT")]
    pub format: Option<ReportFormat>,

    /// Run id of the gold run whose coverage is the Δᵃˡˡ denominator (under the same logs root,
    /// model `gold`). Default: the original's per dataset (validate-lite-gold-1,
    /// validate-verified-gold-1, validate-full-gold) when it is there, else the gold run under the
    /// logs root with coverage reports for the most of the run's instances (named on stderr).
    #[arg(long, alias = "gold_run_id", value_name = "RUN_ID")]
    pub gold_run_id: Option<String>,

    /// `single` (default), or `p@k` over several samples of one model: PATH holds `{seed}`,
    /// replaced by each of --seeds, and per instance one seed's report counts (the first seed that
    /// is resolved, else has the most added F→P tests, else the largest coverage delta, else
    /// applied), as the original's `--mode p@k`. Table formats only. (The original's `libro`
    /// is refused.)
    #[arg(long, value_name = "MODE", default_value = "single", value_parser = swtbench_app::report::parse_mode)]
    pub mode: String,

    /// The seeds that replace `{seed}` in PATH with --mode p@k, in the order they are tried:
    /// several values, or one list as the original took it (`1,2,3`, `[1,2,3]` or `(1,2,3)`).
    #[arg(long, value_name = "SEED", num_args = 1..)]
    pub seeds: Vec<String>,

    /// The original's decisions file of its libro mode, which swtbench does not have: refused.
    #[arg(long, alias = "libro_decision_file", value_name = "FILE", hide = true)]
    pub libro_decision_file: Option<PathBuf>,

    /// Column header of the table (default: the run id).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,

    /// Round numbers in github/latex/csv output to this many decimals (default: unrounded, as
    /// the original prints them).
    #[arg(long, value_name = "N", allow_negative_numbers = true,
          value_parser = swtbench_app::settings::parse_count::<usize>)]
    pub decimals: Option<usize>,

    /// Extra spec table entries (TOML, or JSON for *.json), applied over the embedded table, as
    /// given to `swtbench run`: the HTML page (and --compare) reads the logs of repositories the
    /// original has no parser for with their `log_parser`, and finds their shared gold/base runs
    /// under their `non_test_extensions`. The tables read report.json files only; the file is
    /// checked all the same.
    #[arg(long, alias = "spec_table", value_name = "FILE")]
    pub spec_table: Option<PathBuf>,

    /// With `--format html`: write the page to FILE instead of stdout. Log links in the page are
    /// relative to FILE's directory, so keep the page next to the run tree it describes (or move
    /// both together).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Compare two runs side by side (HTML): which instances each resolves that the other does
    /// not, and the metric deltas. Each run is `<logs root>/<run_id>/<model>`; implies
    /// `--format html`.
    #[arg(long, num_args = 2, value_names = ["RUN_A", "RUN_B"], conflicts_with = "path")]
    pub compare: Option<Vec<PathBuf>>,
}

impl ReportArgs {
    /// What `swtbench_app::report::report` is asked for.
    pub fn request(self) -> ReportRequest {
        ReportRequest {
            path: self.path,
            dataset: self.dataset,
            split: self.split,
            denominator: self.denominator,
            format: self.format,
            gold_run_id: self.gold_run_id,
            pak: self.mode == "p@k",
            seeds: self.seeds,
            libro_decision_file: self.libro_decision_file.is_some(),
            name: self.name,
            decimals: self.decimals,
            spec_table: self.spec_table,
            out: self.out,
            compare: self.compare.and_then(|v| v.try_into().ok()),
        }
    }
}

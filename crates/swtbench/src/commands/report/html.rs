//! `swtbench report --format html` and `swtbench report --compare RUN_A RUN_B`: the run's page (or
//! the comparison page) as one self-contained HTML file, with the same numbers as
//! `--format json` (the metrics are computed once, by `report`, and handed in here).
//!
//! The pages are made by [`swtbench_app::report::html_page`] and
//! [`swtbench_app::report::compare_page`]; this file is their options and where the page goes
//! (`--out`, or stdout).

use std::path::{Path, PathBuf};

use swtbench_app::lines::Line;
use swtbench_app::report::{compare_page, html_page, PageContext};
use swtbench_grade::leaderboard;

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

pub use swtbench_app::report::ReportFormat;

/// The HTML-only options of `report`.
#[derive(Debug, Clone, clap::Args)]
pub struct HtmlArgs {
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

/// `swtbench <version>`, as the pages name their generator.
pub fn generator() -> String {
    format!("swtbench {}", env!("CARGO_PKG_VERSION"))
}

fn emit(html: String, out: Option<&Path>, printer: &Printer) -> CliResult {
    printer.lines(&[swtbench_app::report::page_output(html, out)?]);
    Ok(ExitCode::Success)
}

/// Writes the page of the run at `path` with the given metrics.
pub fn write_run(
    path: &Path,
    metrics: &leaderboard::Metrics,
    ctx: &PageContext,
    out: Option<&Path>,
    printer: &Printer,
) -> CliResult {
    let page = html_page(path, metrics, ctx, out)?;
    printer.lines(
        &page
            .warnings
            .iter()
            .cloned()
            .map(Line::Warn)
            .collect::<Vec<_>>(),
    );
    emit(page.html, out, printer)
}

/// Writes the comparison page of two runs, each with its metrics.
pub fn write_compare(
    runs: [(&Path, &leaderboard::Metrics); 2],
    ctx: &PageContext,
    out: Option<&Path>,
    printer: &Printer,
) -> CliResult {
    let html = compare_page(runs, ctx, out)?;
    emit(html, out, printer)
}

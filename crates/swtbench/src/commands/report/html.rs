//! `swtbench report --format html` and `swtbench report --compare RUN_A RUN_B`: the run's page (or
//! the comparison page) as one self-contained HTML file, with the same numbers as
//! `--format json` (the metrics are computed once, by `report`, and handed in here).
//!
//! The pages are made by [`swtbench_app::report::html_page`] and
//! [`swtbench_app::report::compare_page`]; this file is their options and where the page goes
//! (`--out`, or stdout).

use std::path::{Path, PathBuf};

use swtbench_app::report::{compare_page, html_page, write_page, PageContext};
use swtbench_grade::leaderboard::{self, Format};

use crate::error::{CliResult, ExitCode};
use crate::printer::Printer;

/// What `report` prints: one of the leaderboard table formats, or the HTML page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Table(Format),
    Html,
}

impl Default for ReportFormat {
    fn default() -> Self {
        ReportFormat::Table(Format::default())
    }
}

impl std::str::FromStr for ReportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.eq_ignore_ascii_case("html") {
            return Ok(ReportFormat::Html);
        }
        s.parse::<Format>().map(ReportFormat::Table).map_err(|_| {
            format!("unknown format `{s}` (expected github, latex, json, csv or html)")
        })
    }
}

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

fn emit(html: &str, out: Option<&Path>, printer: &Printer) -> CliResult {
    match out {
        Some(file) => {
            write_page(file, html)?;
            printer.info(&format!(
                "HTML report: {} ({} kB)",
                file.display(),
                html.len().div_ceil(1000)
            ));
        }
        None => printer.data(html),
    }
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
    for w in &page.warnings {
        printer.warn(w);
    }
    emit(&page.html, out, printer)
}

/// Writes the comparison page of two runs, each with its metrics.
pub fn write_compare(
    runs: [(&Path, &leaderboard::Metrics); 2],
    ctx: &PageContext,
    out: Option<&Path>,
    printer: &Printer,
) -> CliResult {
    let html = compare_page(runs, ctx, out)?;
    emit(&html, out, printer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse() {
        assert_eq!("html".parse::<ReportFormat>(), Ok(ReportFormat::Html));
        assert_eq!(
            "json".parse::<ReportFormat>(),
            Ok(ReportFormat::Table(Format::Json))
        );
        assert!("xml".parse::<ReportFormat>().is_err());
    }
}

//! The seam between the page and the grading logic (`swtbench-grade`): log statuses, coverage
//! dumps and the leaderboard metrics all come from there, so the page shows exactly what grading
//! computed and what `swtbench report --format json` prints.
//!
//! Pure: bytes in, data out.

use swtbench_grade::coverage::{self, CoverageMap};
use swtbench_grade::leaderboard;
use swtbench_grade::logs::{self, ExecMode, ParsedLog};
use swtbench_grade::parsers::Parser;
use swtbench_grade::InstanceReport;

use crate::model::Metrics;

/// The statuses of one run's `test_output.txt`, read with the log parser of `repo` in `mode`
/// (unit tests: `parser` when given, else the original's parser of `repo`); `None` when there is
/// no parser for `repo`.
pub fn parsed_log(
    repo: &str,
    mode: ExecMode,
    parser: Option<Parser>,
    output: &[u8],
) -> Option<ParsedLog> {
    let parser = match (mode, parser) {
        (ExecMode::UnitTest, Some(p)) => p,
        _ => logs::parser_for(repo, mode)?,
    };
    Some(logs::parse_log(Some(output), parser))
}

/// The coverage dump of one run's `test_output.txt` (§5.2); empty when it has none.
pub fn coverage(output: &[u8]) -> CoverageMap {
    coverage::parse_dump(Some(output))
}

/// The page's copy of the leaderboard numbers.
pub fn metrics_of(m: &leaderboard::Metrics) -> Metrics {
    let cov = m.coverage.as_ref().ok();
    Metrics {
        applicability: m.applicability,
        success_rate: m.success_rate,
        f_to_x: m.f_to_x,
        f_to_p: m.f_to_p,
        p_to_p: m.p_to_p,
        coverage_delta_all: cov.map(|c| c.all),
        coverage_delta_resolved: cov.map(|c| c.resolved),
        coverage_delta_unresolved: cov.map(|c| c.unresolved),
        instances: m.instances,
        denominator: m.denominator,
        coverage_missing: m.coverage.as_ref().err().map(|why| match why {
            leaderboard::NoCoverage::NoGoldRun => "n/a: the Δ coverage rows compare each \
                prediction's coverage gain with the gold tests' and need a gold run of the same \
                instances under the same logs root (swtbench run --predictions gold); none was \
                found. The run report's \"Mean coverage delta\" below is another figure: this \
                run's own mean gain, as a fraction."
                .to_string(),
            leaderboard::NoCoverage::NoGoldCoverage => "n/a: the gold run has no coverage of \
                the gold tests (coverage_delta_gold) for these instances, so there is nothing to \
                divide by (the original harness fails here)."
                .to_string(),
        }),
    }
}

impl From<&leaderboard::Metrics> for Metrics {
    fn from(m: &leaderboard::Metrics) -> Self {
        metrics_of(m)
    }
}

/// Leaderboard metrics of `reports` (and of a gold run's reports, for the coverage rows).
pub fn compute_metrics(
    reports: &[InstanceReport],
    gold: Option<&[InstanceReport]>,
    denominator: usize,
) -> Metrics {
    metrics_of(&leaderboard::compute(reports, gold, denominator))
}

/// A number exactly as the JSON report prints it (Python `repr` of a float).
pub fn json_number(x: f64) -> String {
    swtbench_grade::py::float_repr(x)
}

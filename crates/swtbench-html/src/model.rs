//! The view model: everything one HTML page shows, as plain data.
//!
//! The renderer turns these values into a page and nothing else; the loader (`load`) and the pure
//! builder (`build`) fill them from a run tree. Types that the page's script reads are serialised
//! with short field names into the embedded JSON (documented on each field), so their names are
//! part of the contract between `render` and `assets/report.js`.

use serde::Serialize;

/// One run: summary, parameters and every instance.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RunView {
    /// Page heading, e.g. `my-run / gpt-4o`.
    pub title: String,
    pub run_id: String,
    pub model: String,
    /// Run parameters in display order (dataset, filter, mode, coverage formula, harness version,
    /// time taken, …). Values are shown verbatim.
    pub params: Vec<(String, String)>,
    /// Counts and other scalar fields of the run report (`evaluation_results/…json`), verbatim.
    pub report_fields: Vec<(String, String)>,
    /// The leaderboard numbers, identical to `swtbench report --format json`.
    pub metrics: Metrics,
    /// Sorted by instance id.
    pub instances: Vec<InstanceView>,
    /// Relative links shown under the summary (run report, event log, …): (label, href).
    pub links: Vec<(String, String)>,
    /// Problems met while reading the run tree that affect the whole page.
    pub warnings: Vec<String>,
    /// `swtbench <version>`: what produced the page.
    pub generator: String,
}

/// The leaderboard table (§7.5): rates in percent of `denominator`, unrounded.
///
/// Mirrors the object `swtbench report --format json` prints, field for field.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Metrics {
    pub applicability: f64,
    pub success_rate: f64,
    pub f_to_x: f64,
    pub f_to_p: f64,
    pub p_to_p: f64,
    /// `None` when no gold run was found.
    pub coverage_delta_all: Option<f64>,
    pub coverage_delta_resolved: Option<f64>,
    pub coverage_delta_unresolved: Option<f64>,
    /// Reports counted (after the SWT filter).
    pub instances: usize,
    pub denominator: usize,
    /// Why the Δ coverage rows are n/a, shown under the table (`None` when they have values).
    #[serde(skip)]
    pub coverage_missing: Option<String>,
}

/// What happened to one instance, most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The instance could not be evaluated (no output, infrastructure failure); see the reason.
    Error,
    /// The model produced no patch (empty or whitespace only).
    EmptyPatch,
    /// The model patch did not apply in the `pred_pre` run.
    NotApplied,
    /// Applied, but not resolved (§7.2).
    Unresolved,
    /// Resolved (§7.2).
    Resolved,
}

impl Outcome {
    pub const ALL: [Outcome; 5] = [
        Outcome::Resolved,
        Outcome::Unresolved,
        Outcome::NotApplied,
        Outcome::EmptyPatch,
        Outcome::Error,
    ];

    /// Machine name, used in `data-outcome` attributes and URL filters.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::Unresolved => "unresolved",
            Outcome::NotApplied => "not_applied",
            Outcome::EmptyPatch => "empty_patch",
            Outcome::Error => "error",
        }
    }

    /// Words for people.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Resolved => "resolved",
            Outcome::Unresolved => "unresolved",
            Outcome::NotApplied => "not applied",
            Outcome::EmptyPatch => "empty patch",
            Outcome::Error => "error",
        }
    }
}

/// One row of the instance table plus its lazily rendered detail.
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceView {
    pub id: String,
    /// `owner/name`.
    pub repo: String,
    pub outcome: Outcome,
    /// Why the instance errored (or any other reason worth a line), shown in the table and detail.
    pub reason: Option<String>,
    /// The integrity checks' reasons when they found the instance's logs suspicious (a badge in
    /// the table, the reasons in the detail's notes).
    pub suspicious: Vec<String>,
    pub added_f2p: Option<u64>,
    pub coverage_pred: Option<f64>,
    pub coverage_delta_pred: Option<f64>,
    pub coverage_gold: Option<f64>,
    pub coverage_base: Option<f64>,
    pub coverage_delta_gold: Option<f64>,
    pub detail: InstanceDetail,
}

/// The instance page, embedded as JSON and rendered by the page's script on demand.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct InstanceDetail {
    /// The model's test patch as a diff (`mp`).
    #[serde(rename = "mp", skip_serializing_if = "Option::is_none")]
    pub model_patch: Option<DiffView>,
    /// The gold code fix, each changed line marked with who executed it (`gf`).
    #[serde(rename = "gf", skip_serializing_if = "Option::is_none")]
    pub gold_fix: Option<DiffView>,
    /// The six runs in the order of [`swtbench_core::RunKind::ALL`] (`r`).
    #[serde(rename = "r")]
    pub runs: Vec<RunCell>,
    /// Test status transitions (`t`).
    #[serde(rename = "t")]
    pub tests: TestGrid,
    /// Relative links: (label, href) (`l`).
    #[serde(rename = "l", skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<(String, String)>,
    /// Notes about missing or partial data (`n`).
    #[serde(rename = "n", skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One of the six runs of an instance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunCell {
    /// `pred_pre` … `base_post` (`k`).
    #[serde(rename = "k")]
    pub kind: String,
    /// Relative link to the run's log directory, with a trailing `/` (`d`).
    #[serde(rename = "d", skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// Names of the files present in that directory, in a fixed order (`f`).
    #[serde(rename = "f")]
    pub files: Vec<String>,
    /// Whether the run produced `test_output.txt` (`o`).
    #[serde(rename = "o")]
    pub has_output: bool,
    /// Whether its patches applied, when known (`a`).
    #[serde(rename = "a", skip_serializing_if = "Option::is_none")]
    pub applied: Option<bool>,
    /// Number of tests with each status in this run: [passed, failed, other] (`c`).
    #[serde(rename = "c", skip_serializing_if = "Option::is_none")]
    pub counts: Option<[u32; 3]>,
}

/// Tests × six runs. `codes[i]` has one character per run (order of [`RunCell`]s):
/// `P` passed, `F` failed, `E` error, `S` skipped, `O` another status string, `-` not reported,
/// `x` "not passed" where only the grading buckets are known (failed, errored or absent).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct TestGrid {
    #[serde(rename = "n")]
    pub names: Vec<String>,
    #[serde(rename = "c")]
    pub codes: Vec<String>,
    /// Tests left out because they passed (or were absent) in every run (`op`).
    #[serde(rename = "op")]
    pub omitted_passing: usize,
    /// Other tests left out to bound the page size (`oo`).
    #[serde(rename = "oo")]
    pub omitted_other: usize,
    /// Whether the codes come from the parsed logs (`true`) or from `report.json` buckets (`e`).
    #[serde(rename = "e")]
    pub exact: bool,
}

/// A patch prepared for display.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct DiffView {
    /// Parsed files (`f`); empty when the text is not a diff.
    #[serde(rename = "f")]
    pub files: Vec<DiffFile>,
    /// The text itself when it could not be parsed as a diff (`raw`).
    #[serde(rename = "raw", skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// Why parsing failed (`err`).
    #[serde(rename = "err", skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Lines were left out to bound the page size (`tr`): the number of lines dropped.
    #[serde(rename = "tr", skip_serializing_if = "is_zero")]
    pub truncated_lines: usize,
    /// Whether the hunks carry coverage marks (`cov`).
    #[serde(rename = "cov", skip_serializing_if = "std::ops::Not::not")]
    pub has_marks: bool,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffFile {
    #[serde(rename = "o", skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    #[serde(rename = "n", skip_serializing_if = "Option::is_none")]
    pub new_path: Option<String>,
    /// `modified`, `added`, `deleted`, `renamed`, `copied` (`c`).
    #[serde(rename = "c")]
    pub change: &'static str,
    #[serde(rename = "b", skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    #[serde(rename = "h")]
    pub hunks: Vec<DiffHunk>,
}

/// One hunk. Line numbers are not stored: the script counts them from the starts and the kinds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiffHunk {
    /// The `@@ … @@ section` header line (`h`).
    #[serde(rename = "h")]
    pub header: String,
    #[serde(rename = "os")]
    pub old_start: u32,
    #[serde(rename = "ns")]
    pub new_start: u32,
    /// One character per line: ` ` context, `+` added, `-` removed (`k`).
    #[serde(rename = "k")]
    pub kinds: String,
    /// Line texts without the prefix (`l`).
    #[serde(rename = "l")]
    pub lines: Vec<String>,
    /// Coverage marks, one character per line (`m`): ` ` for context lines; for changed lines a
    /// hex digit of flags 1 = the model's tests executed it, 2 = the gold tests did, 4 = the base
    /// runs did, 8 = the line is executable (it appears in the gold or base coverage data).
    #[serde(rename = "m", skip_serializing_if = "Option::is_none")]
    pub marks: Option<String>,
    /// The hunk's text ends before its header's line counts are reached (`t`): the patch is cut
    /// or malformed there, and `git apply` rejects it.
    #[serde(rename = "t", skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

/// Coverage flags of one changed line (see [`DiffHunk::marks`]).
pub mod mark {
    pub const PRED: u8 = 1;
    pub const GOLD: u8 = 2;
    pub const BASE: u8 = 4;
    pub const EXECUTABLE: u8 = 8;
}

/// Two runs side by side on the same instances.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompareView {
    pub title: String,
    /// Short names of the two runs (e.g. `run_a / model`).
    pub name_a: String,
    pub name_b: String,
    pub metrics_a: Metrics,
    pub metrics_b: Metrics,
    pub params_a: Vec<(String, String)>,
    pub params_b: Vec<(String, String)>,
    /// Union of both runs' instances, sorted by id.
    pub rows: Vec<CompareRow>,
    pub generator: String,
}

/// One instance in a comparison. `None` means the run has no such instance.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRow {
    pub id: String,
    pub repo: String,
    pub outcome_a: Option<Outcome>,
    pub outcome_b: Option<Outcome>,
    pub added_f2p_a: Option<u64>,
    pub added_f2p_b: Option<u64>,
    pub coverage_delta_a: Option<f64>,
    pub coverage_delta_b: Option<f64>,
}

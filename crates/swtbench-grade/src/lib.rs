//! Everything between a test log and a leaderboard number, score-identical to the original
//! SWT-Bench harness by default.
//!
//! - [`logs`]: one run's `test_output.txt` → test statuses and the `applied` flag (§6.1);
//! - [`parsers`]: the per-repository log parsers (§6.3, §6.4);
//! - [`coverage`]: the coverage dump (§5.2) and the coverage formulas (§5.3);
//! - [`transitions`]: pre → post buckets and the resolved rule (§7.1, §7.2);
//! - [`version`]: which release of the original grading follows ([`GradingVersion`]: the current
//!   one by default, or 1.2.0 for results published before September 2025);
//! - [`report`]: grading one instance and its `report.json` (§7.3);
//! - [`run_report`]: the run summary `evaluation_results/<model>.<run_id>.json` (§7.4);
//! - [`leaderboard`]: the W / S / F→X / F→P / P→P / Δ coverage table (§7.5) in four formats;
//! - [`tree`]: the one reader of a log tree in the original's layout ([`tree::RunTree`]: where an
//!   instance's runs, reports and shared gold/base directories are), re-grading a run and
//!   collecting its reports, through a small read-only file-access trait
//!   ([`tree::TreeReader`]) so the logic stays testable without a file system;
//! - [`py`]: the Python built-ins the original relies on (re-exported from `swtbench-core`);
//! - [`names`]: the error of an unknown option name.
//!
//! The crate is pure: it never touches files, processes or terminals itself. Callers hand in
//! bytes (or a [`tree::TreeReader`]) and write the returned text where they want.

#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod coverage;
pub mod evidence;
pub mod instance;
pub mod integrity;
pub mod leaderboard;
pub mod logs;
pub mod names;
pub mod parsers;
pub mod report;
pub mod run_report;
pub mod scan;
pub mod stability;
pub mod transitions;
pub mod tree;
pub mod version;

pub use swtbench_core::py;

pub use coverage::{CoverageFormula, CoverageMap, CoverageResult};
pub use logs::{parse_log, ExecMode, LogNote, ParsedLog};
pub use names::UnknownName;
pub use parsers::Parser;
pub use report::{
    grade_instance, grade_instance_with_parser, GradeError, GradeOptions, GradedInstance,
    InstanceReport, InstanceRunOutputs, ReportReadError,
};
pub use run_report::{
    EntryState, ErrorReason, Outcome, RunReport, RunReportEntry, RunReportInput, SkipReason,
};
pub use transitions::Transitions;
pub use version::GradingVersion;

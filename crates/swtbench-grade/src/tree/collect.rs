//! Collecting the `report.json` files of a model's run (the original's `_collect_reports`), for
//! the leaderboard and the gold run's coverage rows.

use std::io;
use std::path::Path;

use swtbench_core::layout::REPORT_FILE;

use super::TreeReader;
use crate::report::{InstanceReport, ReportReadError};

/// Reports found under `<logs root>/<run_id>/<model>`.
#[derive(Debug, Clone, Default)]
pub struct CollectedReports {
    /// Sorted by instance id.
    pub reports: Vec<InstanceReport>,
    /// Instance dirs whose `report.json` could not be read (the original would crash), with why.
    pub unreadable: Vec<(String, ReportReadError)>,
    /// Instance dirs skipped because their id is in a filter list.
    pub filtered: usize,
}

/// What one instance directory holds.
enum Found {
    Nothing,
    Filtered,
    Unreadable(ReportReadError),
    Report(Box<InstanceReport>),
}

/// The original's `_collect_reports`: every `<dir>/<instance>/report.json`, skipping instances
/// for which `skip` is true. `Ok(None)` when `dir` does not exist.
pub fn collect_reports(
    tree: &dyn TreeReader,
    dir: &Path,
    skip: &(dyn Fn(&str) -> bool + Sync),
) -> io::Result<Option<CollectedReports>> {
    let Some(mut names) = tree.subdirs(dir)? else {
        return Ok(None);
    };
    names.sort();
    let read_one = |name: &String| -> io::Result<Found> {
        let Some(bytes) = tree.read(&dir.join(name).join(REPORT_FILE))? else {
            return Ok(Found::Nothing);
        };
        if skip(name) {
            return Ok(Found::Filtered);
        }
        Ok(
            match InstanceReport::from_report_json(&String::from_utf8_lossy(&bytes), Some(name)) {
                Ok(r) => Found::Report(Box::new(r)),
                Err(e) => Found::Unreadable(e),
            },
        )
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, names.len().max(1));
    let chunk = names.len().div_ceil(threads).max(1);
    let results: Vec<io::Result<Found>> = std::thread::scope(|s| {
        let handles: Vec<_> = names
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(read_one).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut out = CollectedReports::default();
    for (name, r) in names.into_iter().zip(results) {
        match r? {
            Found::Nothing => {}
            Found::Filtered => out.filtered += 1,
            Found::Unreadable(e) => out.unreadable.push((name, e)),
            Found::Report(r) => out.reports.push(*r),
        }
    }
    Ok(Some(out))
}

//! The seam between the page and the grading logic: log statuses, coverage dumps and the
//! leaderboard metrics all come from here, so the page shows exactly what grading computed.
//!
//! Pure: text in, data out.

use std::collections::{BTreeMap, BTreeSet};

use swtbench_core::StatusMap;

use crate::build::{InstanceReport, Transitions};
use crate::model::Metrics;

/// Per file (path relative to the repository root), per line number: hit count (§5.2).
pub type LineHits = BTreeMap<String, BTreeMap<u32, u64>>;

/// One parsed test log.
#[derive(Debug, Clone, PartialEq)]
pub struct Statuses {
    pub applied: bool,
    pub tests: StatusMap,
}

/// Test statuses of one run's `test_output.txt`, with the log parser of `repo`; `None` when no
/// parser is available for it.
pub fn statuses(_repo: &str, _test_output: &str) -> Option<Statuses> {
    None
}

/// The coverage dump of one run's `test_output.txt` (§5.2): the JSON lines between
/// `+ cat coverage.cover` and the next `+ git checkout`, `/testbed/` stripped from paths, hits
/// summed over repeated files. Empty when the output has no dump.
pub fn coverage(test_output: &str) -> LineHits {
    let mut out = LineHits::new();
    let mut lines = test_output.lines();
    if !lines.by_ref().any(|l| l == "+ cat coverage.cover") {
        return out;
    }
    for line in lines {
        if line.starts_with("+ git checkout") {
            break;
        }
        if !line.starts_with("{\"/testbed/") {
            continue;
        }
        let Ok(obj) = serde_json::from_str::<BTreeMap<String, BTreeMap<String, u64>>>(line) else {
            continue;
        };
        for (path, hits) in obj {
            let file = out.entry(path.replace("/testbed/", "")).or_default();
            for (ln, h) in hits {
                if let Ok(n) = ln.parse::<u32>() {
                    *file.entry(n).or_insert(0) += h;
                }
            }
        }
    }
    out
}

/// Leaderboard metrics (§7.5) over per-instance reports, without the gold-run coverage rows.
pub fn metrics(reports: &[&InstanceReport], denominator: usize) -> Metrics {
    let set = |v: &[String]| v.iter().cloned().collect::<BTreeSet<String>>();
    let (mut w, mut s, mut fx, mut fp, mut pp) = (0usize, 0usize, 0usize, 0usize, 0usize);
    for r in reports {
        if r.resolved {
            s += 1;
        }
        let Some(pred) = &r.tests_pred else { continue };
        let empty = Transitions::default();
        let base = r.tests_base.as_ref().unwrap_or(&empty);
        let size = |t: &Transitions| {
            t.fail_to_pass.len()
                + t.pass_to_pass.len()
                + t.fail_to_fail.len()
                + t.pass_to_fail.len()
                + t.unmatched.len()
        };
        if size(pred) as f64 >= 0.1 * size(base) as f64 {
            w += 1;
        }
        let new_f2p = set(&pred.fail_to_pass)
            .difference(&set(&base.fail_to_pass))
            .count();
        let new_f2f = set(&pred.fail_to_fail)
            .difference(&set(&base.fail_to_fail))
            .count();
        let new_p2p = set(&pred.pass_to_pass)
            .difference(&set(&base.pass_to_pass))
            .count();
        if new_f2p + new_f2f > 0 {
            fx += 1;
        }
        if new_f2p > 0 {
            fp += 1;
        }
        if new_p2p > 0 {
            pp += 1;
        }
    }
    let pct = |n: usize| {
        if denominator == 0 {
            0.0
        } else {
            100.0 * n as f64 / denominator as f64
        }
    };
    Metrics {
        applicability: pct(w),
        success_rate: pct(s),
        f_to_x: pct(fx),
        f_to_p: pct(fp),
        p_to_p: pct(pp),
        coverage_delta_all: None,
        coverage_delta_resolved: None,
        coverage_delta_unresolved: None,
        instances: reports.len(),
        denominator,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coverage_sums_repeated_files_and_stops_at_checkout() {
        let text = "noise\n+ cat coverage.cover\n{\"/testbed/a.py\": {\"1\": 2, \"3\": 0}}\n\
                    junk\n{\"/testbed/a.py\": {\"1\": 1}}\n+ git checkout x\n{\"/testbed/b.py\": {\"1\": 1}}\n";
        let c = coverage(text);
        assert_eq!(c.len(), 1);
        assert_eq!(c["a.py"][&1], 3);
        assert_eq!(c["a.py"][&3], 0);
        assert!(coverage("no dump").is_empty());
    }
}
